"""``list``: the picker's rows, newest activity first, forks beside their origin."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessiondex.query.filters import Filters
from sessiondex.query.sessions import LISTING_COLUMNS, select_rows, to_objects

if TYPE_CHECKING:
    from sqlite_utils import Database


def place_forks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Move each fork right after its origin when both are listed (origin keeps its place;
    forks of one origin stay newest first)."""
    present = {r["session_id"] for r in rows}
    forks: dict[str, list[dict[str, Any]]] = {}
    top: list[dict[str, Any]] = []
    for row in rows:
        origin = row.get("forked_from_session")
        if origin and origin in present and origin != row["session_id"]:
            forks.setdefault(origin, []).append(row)
        else:
            top.append(row)
    out: list[dict[str, Any]] = []

    def emit(row: dict[str, Any], depth: int) -> None:
        out.append(row)
        if depth < 8:
            for child in forks.pop(row["session_id"], []):
                emit(child, depth + 1)

    for row in top:
        emit(row, 0)
    for rest in forks.values():  # fork cycles: keep every row
        out.extend(r for r in rest if r not in out)
    return out


def list_sessions(db: Database, filters: Filters) -> list[dict[str, Any]]:
    """Session objects in scope, newest activity first."""
    where, params = filters.where(db)
    rows = place_forks(select_rows(db, where, params, limit=filters.limit, columns=LISTING_COLUMNS))
    return to_objects(db, rows)
