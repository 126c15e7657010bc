"""Which sessions Claude Code's retention sweep deletes soon, predicted from the index:
the warning under ``list``, and the counts of ``stats`` and ``cleanup``
(:mod:`query.cleanup`, whose dry run uses these rules).

Apart from :mod:`query.cleanup` so that every ``list`` checks its rows without
importing the cleanup plan's classes and transcript discovery (~1 ms of its start-up).
The rules themselves are :mod:`sessiondex.transcripts.retention`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiondex.query.archives import archived_paths
from sessiondex.transcripts.retention import (
    DAY,
    UNSET,
    Retention,
    desktop_exemption,
    read_retention,
    window_desktop,
)

if TYPE_CHECKING:
    from sqlite_utils import Database

SOON_DAYS = 3


# What the retention counts read of a live session.
# The window test's columns (``window_desktop``) answer the desktop exemption: no
# transcript is opened (only a desktop session's release marker is looked at).
COUNT_COLUMNS = (
    "s.root, s.file_path, s.mtime_ns, s.file_size, s.head_entrypoint,"
    " s.last_entrypoint, s.last_entrypoint_offset"
)


def _rows_for_paths(db: Database, paths: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        cursor = db.execute(
            f"SELECT {COUNT_COLUMNS} FROM sessions s"
            f" WHERE s.archived = 0 AND s.file_path IN ({', '.join('?' for _ in chunk)})",
            chunk,
        )
        names = [d[0] for d in cursor.description]
        rows.extend(dict(zip(names, r)) for r in cursor.fetchall())
    return rows


def deleted_by(
    rows: list[dict[str, Any]],
    cwd: str | None,
    now: float,
    horizon: float,
    managed: Path | None,
    retentions: dict[str, Retention],
) -> list[dict[str, Any]]:
    """The ``rows`` Claude Code's sweep deletes by ``now + horizon`` (each config dir's
    retention read once into ``retentions``)."""
    doomed: list[dict[str, Any]] = []
    for row in rows:
        root = row["root"]
        if root not in retentions:
            retentions[root] = read_retention(Path(root), cwd, managed)
        retention = retentions[root]
        if retention.days is None:
            continue
        mtime = row["mtime_ns"] / 1e9
        if mtime >= now + horizon - retention.days * DAY:
            continue
        desktop = window_desktop(
            row["head_entrypoint"],
            row["last_entrypoint"],
            row["last_entrypoint_offset"],
            row["file_size"] or 0,
        )
        if desktop and desktop_exemption(
            Path(row["file_path"]),
            retention,
            mtime,
            now + horizon,
            desktop=desktop,
        ):
            continue
        doomed.append(row)
    return doomed


def expiring_soon(
    db: Database,
    file_paths: list[str],
    cwd: str | None,
    roots: list[Path],
    *,
    now: float | None = None,
    managed: Path | None = UNSET,
) -> int:
    """How many of these sessions Claude Code's sweep deletes within 3 days (already
    expired ones included) with no archived copy of their current version, for the
    warning under ``list``: an archived session loses nothing to the sweep."""
    del roots  # each row records its own config dir
    current = time.time() if now is None else now
    rows = _rows_for_paths(db, list(file_paths))
    doomed = [r["file_path"] for r in deleted_by(rows, cwd, current, SOON_DAYS * DAY, managed, {})]
    return len(doomed) - len(archived_paths(db, doomed))
