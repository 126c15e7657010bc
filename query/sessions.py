"""Session rows → the session objects (docs/session-fields.md#the-session-object), and the listing filters.

The objects themselves are built by :mod:`indexer.objects` (stored with each row when
it changes); this module selects rows and decodes their objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

# Re-exported for query/ and cli/ (the ``X as X`` form marks them public for mypy).
from sessiondex.indexer.objects import SESSION_FIELDS as SESSION_FIELDS
from sessiondex.indexer.objects import activity_ms as activity_ms
from sessiondex.indexer.objects import build_object as build_object
from sessiondex.indexer.objects import build_objects as build_objects
from sessiondex.indexer.objects import display_title as display_title
from sessiondex.indexer.objects import iso_ms as iso_ms
from sessiondex.indexer.objects import resume_command as resume_command
from sessiondex.transcripts.records import PRINT_MODE_ENTRYPOINTS, is_loop_command

if TYPE_CHECKING:
    from sqlite_utils import Database

# SQL for rows the picker hides: sidechains, files with no user/assistant record,
# -p/SDK sessions and /loop sessions.
_PRINT_MODE_SQL = ", ".join(f"'{e}'" for e in sorted(PRINT_MODE_ENTRYPOINTS))
VISIBLE_SQL = (
    "(coalesce(s.is_sidechain, 0) = 0 AND s.raw_message_count > 0"
    f" AND coalesce(s.entrypoint, '') NOT IN ({_PRINT_MODE_SQL})"
    " AND coalesce(s.first_command, '') != '/loop')"
)


def is_hidden(row: dict[str, Any]) -> bool:
    """Python twin of :data:`VISIBLE_SQL` for rows already loaded."""
    return (
        bool(row.get("is_sidechain"))
        or not row.get("raw_message_count")
        or (row.get("entrypoint") in PRINT_MODE_ENTRYPOINTS)
        or is_loop_command(row.get("first_command"))
    )


def to_objects(db: Database, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Session objects for rows: the stored JSON, built afresh only where missing."""
    missing = [r for r in rows if not r.get("object_json")]
    if missing and "file_size" not in missing[0]:  # lean listing rows: load them whole
        ids = ", ".join(str(int(r["id"])) for r in missing)
        missing = select_rows(db, f"s.id IN ({ids})")
    built = {r["id"]: o for r, o in zip(missing, build_objects(db, missing))}
    return [built[r["id"]] if r["id"] in built else orjson.loads(r["object_json"]) for r in rows]


def to_object(db: Database, row: dict[str, Any]) -> dict[str, Any]:
    """One ``sessions`` row as the contract's session object."""
    return to_objects(db, [row])[0]


# ORDER BY for "newest activity first", with the same fallback as activity_ms().
ACTIVITY_SQL = "coalesce(s.last_activity_ms, s.mtime_ns / 1000000)"


# What a listing needs of a row besides its stored object (place_forks reads the origin).
LISTING_COLUMNS = "s.id, s.session_id, s.forked_from_session, s.object_json"


def select_rows(
    db: Database,
    where: str = "1",
    params: Sequence[Any] = (),
    order: str = f"{ACTIVITY_SQL} DESC, s.mtime_ns DESC, s.session_id",
    limit: int | None = None,
    columns: str = "s.*",
) -> list[dict[str, Any]]:
    """Raw ``sessions`` rows (as dicts) matching ``where``."""
    sql = f"SELECT {columns} FROM sessions s WHERE {where} ORDER BY {order}"
    args = list(params)
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    cursor = db.execute(sql, args)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor.fetchall()]
