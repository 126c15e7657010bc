"""What the archive holds and protects, read from the index (read-only).

Archives are indexed by :mod:`sessiondex.indexer.archive_ingest` as ``sessions`` rows
with ``archived != 0``: ``1`` for the newest archived version of a session (the one
``--include-archived`` shows), ``2`` for the older versions it supersedes. This module
holds the rules every reader shares:

* which rows ``--include-archived`` shows (:func:`archived_sql`): live sessions, plus a
  session's newest archived version **only while it has no live transcript** — a session
  archived before the sweep and still on disk appears once, live, and its archive takes
  over when the sweep deletes the transcript;
* when a live transcript counts as archived (:func:`same_version_sql`): an archived row
  of the same session and project with the same size and mtime (PAX stores the mtime as
  a decimal, so it is compared to the microsecond);
* the last ``archive`` run (a ``meta`` key the writer sets).

No import of sqlite-utils: ``stats`` and ``list`` read these on their fast path.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.meta import get_meta

if TYPE_CHECKING:
    from sqlite_utils import Database

# ISO-8601 UTC time of the last `sessiondex archive` run (or watch's daily run).
LAST_RUN_KEY = "archive_last_run"
# An archive keeps the transcript's mtime as a PAX decimal: exact to the microsecond.
MTIME_TOLERANCE_NS = 1000


def archived_sql(include_archived: bool, roots: Sequence[str | PathLike[str]] | None = None) -> str:
    """The clause on ``sessions s`` that every listing, search and resolve applies: live
    rows, and with ``include_archived`` the newest archived version of a session that
    has no live transcript left, in ``roots`` (the command's config dirs) when given:
    another config dir's live copy of the same ID neither hides it nor answers for it
    (``query.filters.roots_sql``)."""
    if not include_archived:
        return "s.archived = 0"
    within = "" if roots is None else f" AND lv.root IN ({sql_literals(roots)})"
    return (
        "(s.archived = 0 OR (s.archived = 1 AND NOT EXISTS (SELECT 1 FROM sessions lv"
        f" WHERE lv.session_id = s.session_id AND lv.archived = 0{within})))"
    )


def sql_literals(values: Sequence[str | PathLike[str]]) -> str:
    """SQL string literals, comma-separated (``NULL`` for none): for SQL that cannot take
    parameters (the web view's saved queries). A config dir path may hold a quote."""
    return ", ".join("'" + str(v).replace("'", "''") + "'" for v in values) or "NULL"


def same_version_sql(live: str) -> str:
    """An archived row ``a`` holds the version of the transcript described by the row (or
    subquery) aliased ``live``: same session, project, size and mtime."""
    return (
        f"a.archived != 0 AND a.session_id = {live}.session_id"
        f" AND a.project_key = {live}.project_key AND a.file_size = {live}.file_size"
        f" AND abs(a.mtime_ns - {live}.mtime_ns) < {MTIME_TOLERANCE_NS}"
    )


_ARCHIVED_COPY_SQL = f"EXISTS (SELECT 1 FROM sessions a WHERE {same_version_sql('s')})"
# Of several archives holding one version, the one shown (``archived = 1``), else the
# latest ingested.
_PREFERRED_COPY = " ORDER BY a.archived, a.id DESC LIMIT 1"


def archived_copy_sql(live: str) -> str:
    """A scalar subquery: the archive (in any archive dir) holding the version of the
    transcript described by the row aliased ``live``, else NULL; what
    :func:`archived_version` answers for one transcript, for many rows in one statement
    (``cleanup``'s plan)."""
    return f"(SELECT a.file_path FROM sessions a WHERE {same_version_sql(live)}{_PREFERRED_COPY})"


def archived_paths(db: Database, file_paths: list[str]) -> set[str]:
    """Which of these live transcripts are archived as they are now. Asked only about
    the few sessions the sweep is about to delete: one lookup per row costs as much as
    the whole listing on a large index."""
    found: set[str] = set()
    for start in range(0, len(file_paths), 500):
        chunk = file_paths[start : start + 500]
        found.update(
            str(r[0])
            for r in db.execute(
                "SELECT s.file_path FROM sessions s WHERE s.archived = 0"
                f" AND s.file_path IN ({', '.join('?' for _ in chunk)}) AND {_ARCHIVED_COPY_SQL}",
                chunk,
            )
        )
    return found


def archived_version(
    db: Database,
    session_id: str,
    project_key: str,
    size: int,
    mtime_ns: int,
    *,
    archive_dir: str | None = None,
) -> str | None:
    """The archive (in ``archive_dir``, else in any archive dir) that holds exactly this
    version of a transcript, else None."""
    sql = (
        "SELECT a.file_path FROM sessions a,"
        " (SELECT ? AS session_id, ? AS project_key, ? AS file_size, ? AS mtime_ns) v"
        f" WHERE {same_version_sql('v')}"
    )
    params: list[Any] = [session_id, project_key, size, mtime_ns]
    if archive_dir is not None:
        sql += " AND a.root = ?"
        params.append(archive_dir)
    row = db.execute(sql + _PREFERRED_COPY, params).fetchone()
    return None if row is None else str(row[0])


def newest_archive(db: Database, session_id: str) -> dict[str, Any] | None:
    """The newest archived version of a session (an exact ID, any case), else None."""
    cursor = db.execute(
        "SELECT file_path, root, project_key, session_id, cwd, mtime_ns, file_size"
        " FROM sessions WHERE archived = 1 AND lower(session_id) = lower(?)"
        " ORDER BY mtime_ns DESC, id DESC LIMIT 1",
        [session_id],
    )
    row = cursor.fetchone()
    return None if row is None else dict(zip([d[0] for d in cursor.description], row))


def archived_ids_with_prefix(db: Database, prefix: str) -> list[str]:
    """The IDs of archived sessions starting with ``prefix`` (any case), sorted."""
    cursor = db.execute(
        "SELECT DISTINCT session_id FROM sessions WHERE archived = 1"
        " AND substr(lower(session_id), 1, ?) = lower(?) ORDER BY session_id",
        [len(prefix), prefix],
    )
    return [str(row[0]) for row in cursor.fetchall()]


def live_transcripts(
    db: Database, session_id: str, roots: Sequence[str | PathLike[str]] | None = None
) -> list[str]:
    """Where the index knows a live transcript of this session (in ``roots``, the
    command's config dirs, when given)."""
    within = "" if roots is None else f" AND root IN ({sql_literals(roots)})"
    return [
        str(r[0])
        for r in db.execute(
            f"SELECT file_path FROM sessions WHERE archived = 0 AND session_id = ?{within}",
            [session_id],
        )
    ]


def archived_only(db: Database) -> int:
    """Sessions kept only by the archive: their newest archived version is shown with
    ``--include-archived`` because no live transcript is left."""
    row = db.execute(
        "SELECT count(*) FROM sessions s WHERE s.archived = 1 AND NOT EXISTS"
        " (SELECT 1 FROM sessions lv WHERE lv.session_id = s.session_id AND lv.archived = 0)"
    ).fetchone()
    return int(row[0])


def last_run(db: Database) -> str | None:
    """When ``archive`` last ran against this index (ISO-8601 UTC), else None."""
    return get_meta(db, LAST_RUN_KEY)
