"""``list``: the picker's rows, newest activity first, forks beside their origin."""

from __future__ import annotations

from collections.abc import Sequence
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
    where, params = filters.where()
    rows = place_forks(select_rows(db, where, params, limit=filters.limit, columns=LISTING_COLUMNS))
    return to_objects(db, rows)


# What a picker needs to lay out every row of a scope: no session object is decoded.
ORDER_COLUMNS = "s.file_path, s.session_id, s.forked_from_session"


def listing_order(db: Database, filters: Filters) -> list[dict[str, Any]]:
    """Every session in scope as ``{file_path, session_id, forked_from_session}``, in
    ``list`` order (forks right after their origin).

    An interactive picker pages through tens of thousands of sessions: it needs the
    order and the fork groups of all of them, but the objects only of the rows on screen
    (:func:`sessions_by_path`), so a scope costs one indexed query, not one JSON decode
    per session."""
    where, params = filters.where()
    return place_forks(select_rows(db, where, params, limit=filters.limit, columns=ORDER_COLUMNS))


def sessions_by_path(db: Database, paths: Sequence[str]) -> list[dict[str, Any]]:
    """The session objects of these transcripts, in the order given; a path no longer
    in the index (deleted meanwhile) is left out."""
    if not paths:
        return []
    marks = ", ".join("?" for _ in paths)
    rows = select_rows(
        db, f"s.file_path IN ({marks})", list(paths), columns=f"s.file_path, {LISTING_COLUMNS}"
    )
    found = dict(zip((r["file_path"] for r in rows), to_objects(db, rows)))
    return [found[p] for p in paths if p in found]
