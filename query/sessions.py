"""Session rows → the session objects (docs/session-fields.md#the-session-object), and the listing filters.

The objects themselves are built by :mod:`indexer.objects` (stored with each row when
it changes); this module selects rows and decodes their objects.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import orjson

# Re-exported for query/ and cli/ (the ``X as X`` form marks them public for mypy).
from sessiondex.indexer.objects import SESSION_FIELDS as SESSION_FIELDS
from sessiondex.indexer.objects import absolute_cwd as absolute_cwd
from sessiondex.indexer.objects import activity_ms as activity_ms
from sessiondex.indexer.objects import build_object as build_object
from sessiondex.indexer.objects import build_objects as build_objects
from sessiondex.indexer.objects import display_title as display_title
from sessiondex.indexer.objects import iso_ms as iso_ms
from sessiondex.indexer.objects import resume_command as resume_command
from sessiondex.indexer.objects import with_config_dir
from sessiondex.query.dialect import dialect_of
from sessiondex.transcripts import ARCHIVE_SUFFIX
from sessiondex.transcripts.config import claude_spelling, plain_claude_dir
from sessiondex.transcripts.records import LOOP_COMMAND, PRINT_MODE_ENTRYPOINTS

if TYPE_CHECKING:
    from sqlite_utils import Database

# SQL for rows Claude Code's picker and --continue always hide: sidechains, files with
# no user/assistant record, a team member's session, a background daemon's, and one
# superseded by the session it continued in, when that one is there for Claude Code:
# in the same config dir, and not an archived copy (the sweep deleted the real one).
ALWAYS_HIDDEN_SQL = (
    "(coalesce(s.is_sidechain, 0) = 0 AND s.raw_message_count > 0"
    " AND s.team_name IS NULL"
    " AND coalesce(s.session_kind, '') NOT IN ('daemon', 'daemon-worker')"
    " AND (s.continued_in IS NULL OR NOT EXISTS (SELECT 1 FROM sessions t"
    " WHERE t.session_id = s.continued_in AND t.root = s.root AND t.archived = 0)))"
)
# ... and, but for a -p or SDK process: -p/SDK sessions and /loop sessions. And the
# sessions archived in Claude Code's picker (ctrl+e), which its picker hides (``continue``
# reads that sidecar itself: query.resolve.continue_session).
_PRINT_MODE_SQL = ", ".join(f"'{e}'" for e in sorted(PRINT_MODE_ENTRYPOINTS))
INTERACTIVE_SQL = (
    f"({ALWAYS_HIDDEN_SQL} AND coalesce(s.entrypoint, '') NOT IN ({_PRINT_MODE_SQL})"
    f" AND coalesce(s.first_command, '') != '{LOOP_COMMAND}')"
)
VISIBLE_SQL = f"({INTERACTIVE_SQL} AND s.picker_archived = 0)"


#: The tag that hides a session from listings, a soft delete (``tag ID __hidden``):
#: ``list``, ``search``, ``from-pr`` and the picker leave it out unless asked
#: (``--include-hidden``, or ``--all-kinds``). Resolving it by ID or name still works,
#: and ``untag`` brings it back. Claude Code knows nothing of it: its picker still shows
#: the session with the tag.
HIDDEN_TAG = "__hidden"
NOT_HIDDEN_TAG_SQL = f"coalesce(s.tag, '') != '{HIDDEN_TAG}'"


def _stored_objects(raws: Sequence[Any]) -> list[dict[str, Any] | None]:
    """Each row's stored object, or None where it is missing or cannot be the contract's
    object (undecodable, not an object, keys missing): the index is derived, so a
    damaged value is rebuilt from the row rather than failing the command.

    ``list --scope all`` decodes every object in scope: one comprehension, with the
    cyclic collector off (:func:`collector_paused`), row by row only when one fails."""
    with collector_paused():
        try:
            values = [orjson.loads(raw) for raw in raws]
        except (orjson.JSONDecodeError, TypeError):
            values = [_decoded(raw) for raw in raws]
    # Every stored object holds exactly the contract's keys (build_object makes them so
    # and orjson writes no duplicates), so a count and the first and last key tell a
    # whole object from a damaged or older one, without a set test per row.
    return [
        value
        if type(value) is dict
        and len(value) == _FIELD_COUNT
        and _FIRST_FIELD in value
        and _LAST_FIELD in value
        else None
        for value in values
    ]


def _decoded(raw: Any) -> Any:
    """One stored value decoded, or None."""
    try:
        return orjson.loads(raw)
    except (orjson.JSONDecodeError, TypeError):
        return None


_FIELD_COUNT = len(SESSION_FIELDS)
_FIRST_FIELD, _LAST_FIELD = SESSION_FIELDS[0], SESSION_FIELDS[-1]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a listing's objects are decoded.

    ``list --scope all`` makes ~7,000 containers that all survive (each object holds
    three lists), so the collector runs over and over, each time walking every young
    object, and now and then every object in the process: a third of the decode time in
    a long-lived front end (measured on the bench's 1,800 objects: 32 -> 18 ms). Decoded
    JSON holds no reference cycle, so nothing the collector could free is left behind;
    it is switched back on only if it was on (a caller may run with it off)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def to_objects(db: Database, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Session objects for rows: the stored JSON, built afresh where missing or damaged,
    with the resume command finished for this reader (:func:`finish_resume_commands`).
    A row without ``file_size`` is a lean listing row: a row to build is loaded whole."""
    return _objects(
        db,
        [r["id"] for r in rows],
        [r.get("object_json") for r in rows],
        [r.get("archived") for r in rows],
        rows if rows and "file_size" in rows[0] else None,
    )


def _objects(
    db: Database,
    ids: Sequence[Any],
    raws: Sequence[Any],
    archived: Sequence[Any],
    whole_rows: Sequence[dict[str, Any]] | None,
    finish: bool = True,
) -> list[dict[str, Any]]:
    """:func:`to_objects` on columns: row IDs, stored objects and archived flags, and the
    whole rows when the caller has them; without ``finish``, as stored (the caller
    finishes them: :func:`finish_resume_commands`)."""
    stored = _stored_objects(raws)
    if None in stored:
        if whole_rows is not None:
            missing = [r for r, obj in zip(whole_rows, stored) if obj is None]
        else:
            wanted = ", ".join(str(int(i)) for i, obj in zip(ids, stored) if obj is None)
            missing = select_rows(db, f"s.id IN ({wanted})")
        built = {r["id"]: o for r, o in zip(missing, build_objects(db, missing))}
        # a copy per row: a row listed twice gets objects of its own, as decoded ones are
        stored = [dict(built[i]) if obj is None else obj for i, obj in zip(ids, stored)]
    objects: list[dict[str, Any]] = stored  # type: ignore[assignment]
    if finish:
        finish_resume_commands(objects, archived)
    return objects


class ListingMemo:
    """The objects of the last listing a long-lived reader answered: :class:`sessiondex.Index`
    keeps one, so a program that lists again and again (the MCP server, a script polling)
    decodes only when something changed, and copies otherwise (``list --scope all`` of
    1,800 sessions: ~12 -> ~3 ms).

    What could have changed, each checked at every listing: the index (SQLite's own
    answer, :meth:`SqliteDialect.change_stamp`: a commit by any other connection, or any
    row this connection changed), and what :func:`finish_resume_commands` read besides it
    (``HOME``, and the spelling of each config dir). The copies are the caller's to
    change, as decoded ones are."""

    __slots__ = ("db", "key", "objects", "spellings")

    def __init__(self) -> None:
        self.db: Any = None
        self.key: tuple[Any, ...] | None = None
        self.objects: list[dict[str, Any]] = []
        self.spellings: dict[str, str | None] = {}

    def clear(self) -> None:
        """Forget the listing (the reader is closed or replaced)."""
        self.db, self.key, self.objects, self.spellings = None, None, [], {}

    def answers(self, db: Any, key: tuple[Any, ...]) -> bool:
        """Whether the kept listing is the answer to ``key`` on ``db`` now."""
        return (
            self.db is db
            and self.key == key
            and all(claude_spelling(root) == spelled for root, spelled in self.spellings.items())
        )


def listing_objects(
    db: Database,
    where: str,
    params: Sequence[Any],
    limit: int | None = None,
    memo: ListingMemo | None = None,
) -> list[dict[str, Any]]:
    """The session objects of the rows matching ``where``, newest activity first: what
    :func:`select_rows` then :func:`to_objects` give, reading only the three columns an
    object needs, as tuples, and the stored JSON as bytes (``orjson`` reads them as they
    are; a text would be decoded from UTF-8 only to be encoded back). ``list --scope
    all`` spends most of its time here. With a ``memo``, a repeated listing with nothing
    changed is answered from it (:class:`ListingMemo`)."""
    dialect = dialect_of(db)
    sql = (
        f"SELECT s.id, s.archived, {dialect.as_bytes('s.object_json')}"
        f" FROM sessions s WHERE {where} ORDER BY {LISTING_ORDER}"
    )
    args = list(params)
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    stamp = dialect.change_stamp(db) if memo is not None else None
    key = (stamp, _plain_root(), sql, *args)
    if memo is not None and stamp is not None and memo.answers(db, key):
        return fresh_copies(memo.objects)
    rows = db.execute(sql, args).fetchall()
    ids, archived = [r[0] for r in rows], [r[1] for r in rows]
    objects = _objects(db, ids, [r[2] for r in rows], archived, None, finish=False)
    spellings = finish_resume_commands(objects, archived)
    if memo is not None and stamp is not None:
        memo.db, memo.key, memo.objects, memo.spellings = db, key, objects, spellings
        return fresh_copies(objects)
    return objects


# The fields of a session object that hold containers: a copy copies them too.
_CONTAINER_FIELDS = ("branches", "pr_links", "pr_mentions", "forked_from")


def fresh_copies(objects: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of session objects that share nothing a caller could change: each object,
    its lists and dicts, and the dicts in those lists (a decoded object holds nothing
    deeper)."""
    out = []
    with collector_paused():
        for obj in objects:
            new = obj.copy()
            for key in _CONTAINER_FIELDS:
                value = new.get(key)
                if type(value) is list:
                    new[key] = [v.copy() if type(v) is dict else v for v in value]
                elif type(value) is dict:
                    new[key] = value.copy()
            out.append(new)
    return out


def is_archived(obj: dict[str, Any]) -> bool:
    """A session object read from an archive (``archive``, ``cleanup --archive``): its
    ``file_path`` is the archive. It has no ``resume_command`` (Claude Code cannot open
    a transcript inside an archive), but neither has a team store's session whose ID
    is no session ID: the null alone does not say archived."""
    return str(obj.get("file_path") or "").endswith(ARCHIVE_SUFFIX)


def claude_config_dir(obj: dict[str, Any]) -> str | None:
    """The ``CLAUDE_CONFIG_DIR`` that ``claude --resume`` needs to find this session:
    its config dir, unless that is the default ``~/.claude`` (for this user's ``HOME``,
    read now: the index may be shared by several users or outlive a change of HOME)."""
    root = obj.get("config_dir")
    if not root or root == _plain_root():
        return None
    return claude_spelling(root) or root


def _plain_root() -> str | None:
    """The config dir whose sessions' resume lines need no ``CLAUDE_CONFIG_DIR``, for
    this reader's ``HOME`` and environment, read now (:func:`plain_claude_dir`)."""
    plain = plain_claude_dir()
    return None if plain is None else str(plain)


def finish_resume_commands(
    objects: list[dict[str, Any]], archived: Sequence[Any]
) -> dict[str, str | None]:
    """Fill in, in place, what the stored ``resume_command`` cannot know: an archived
    session has none (its transcript is not where Claude Code looks; ``sessiondex
    restore`` puts it back), and a session outside ``~/.claude`` (or in it, with
    ``CLAUDE_CONFIG_DIR`` exported elsewhere) needs ``CLAUDE_CONFIG_DIR``. ``archived``
    is truthy per object. Returns the spelling of each config dir it used
    (:func:`claude_spelling`): what, besides ``HOME`` and that variable, the lines
    depend on."""
    default = _plain_root()
    # claude_spelling resolves links (a realpath): once per config dir, not per session
    # (1,800 sessions of one dir made it two thirds of a listing's time). Each object is
    # finished once: :func:`to_objects` gives every row an object of its own.
    spellings: dict[str, str | None] = {}
    for obj, gone in zip(objects, archived):
        if gone:
            obj["resume_command"] = None
            continue
        root = obj.get("config_dir")
        if not root or root == default:
            continue
        try:
            spelled = spellings[root]
        except KeyError:
            spelled = spellings[root] = claude_spelling(root)
        command = obj.get("resume_command")
        if spelled is None:
            obj["resume_command"] = None  # no CLAUDE_CONFIG_DIR reaches it
        elif command:
            obj["resume_command"] = with_config_dir(
                command, str(obj["session_id"]), obj.get("cwd"), spelled
            )
    return spellings


def to_object(db: Database, row: dict[str, Any]) -> dict[str, Any]:
    """One ``sessions`` row as the contract's session object."""
    return to_objects(db, [row])[0]


# ORDER BY for "newest activity first", with the same fallback as activity_ms().
ACTIVITY_SQL = "coalesce(s.last_activity_ms, s.mtime_ns / 1000000)"
# ... and the whole order of a listing (index ``sessions_activity_order`` serves it).
LISTING_ORDER = f"{ACTIVITY_SQL} DESC, s.mtime_ns DESC, s.session_id"


# What a listing needs of a row besides its stored object (place_forks reads the origin).
LISTING_COLUMNS = "s.id, s.session_id, s.forked_from_session, s.archived, s.object_json"


def select_rows(
    db: Database,
    where: str = "1",
    params: Sequence[Any] = (),
    order: str = LISTING_ORDER,
    limit: int | None = None,
    columns: str = "s.*",
    offset: int = 0,
) -> list[dict[str, Any]]:
    """Raw ``sessions`` rows (as dicts) matching ``where``."""
    sql = f"SELECT {columns} FROM sessions s WHERE {where} ORDER BY {order}"
    args = list(params)
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        args.extend([limit, offset])
    cursor = db.execute(sql, args)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor.fetchall()]


def listing_stamp(db: Database) -> tuple[Any, ...]:
    """One aggregate over ``sessions`` that moves with every change a listing shows:
    a session added or removed (count, highest row), a transcript grown or rewritten
    (its row's mtime is stored with it: a rename, a tag, a new message), an archive
    made or restored, Claude Code's picker archive toggled. A commit that changes none
    of these (a refresh's bookkeeping) leaves it as it was."""
    # Flags summed with their rows' ids (and squares): one session archived and another
    # brought back in the same round cancel out in a plain sum.
    row = db.execute(
        "SELECT count(*), max(id), total(mtime_ns),"
        " total(archived * id), total(archived * id * id),"
        " total(picker_archived * id), total(picker_archived * id * id)"
        " FROM sessions"
    ).fetchone()
    return tuple(row)


def agent_names(db: Database, objects: Sequence[dict[str, Any]]) -> dict[str, str]:
    """``file_path`` → the agent name of those sessions that have one (an
    ``agent-name`` record): the picker shows it as ``@name`` beside the title. Not a key
    of the session object (the contract's keys are fixed), so tables ask for it."""
    rows = _rows_at(db, objects, "coalesce(s.agent_name, '') != ''", "s.file_path, s.agent_name")
    return {str(r["file_path"]): str(r["agent_name"]) for r in rows}


def picker_archived_paths(db: Database, objects: Sequence[dict[str, Any]]) -> set[str]:
    """The ``file_path`` of those sessions Claude Code's picker archived (ctrl+e): a
    table marks them, as the picker's own description line says ``archived``. Not a
    key of the session object either."""
    return {
        str(r["file_path"]) for r in _rows_at(db, objects, "s.picker_archived = 1", "s.file_path")
    }


# Paths per query when rows are looked up by path: a whole listing of a big team store
# (70,000 sessions) passed PostgreSQL's 65,535 parameters in one.
_PATH_BATCH = 1000


def _rows_at(
    db: Database, objects: Sequence[dict[str, Any]], where: str, columns: str
) -> list[dict[str, Any]]:
    """Rows of these objects' transcripts (by ``file_path``) that match ``where``."""
    paths = [str(o["file_path"]) for o in objects if o.get("file_path")]
    rows: list[dict[str, Any]] = []
    for start in range(0, len(paths), _PATH_BATCH):
        part = paths[start : start + _PATH_BATCH]
        marks = ", ".join("?" for _ in part)
        rows += select_rows(db, f"s.file_path IN ({marks}) AND {where}", part, columns=columns)
    return rows
