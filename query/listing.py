"""``list``: the picker's rows, newest activity first; the picker's fork groups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sessiondex.query.filters import Filters
from sessiondex.query.sessions import (
    LISTING_COLUMNS,
    ListingMemo,
    listing_objects,
    select_rows,
    to_objects,
)

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
    if not forks:  # most listings: nothing to move
        return top
    out: list[dict[str, Any]] = []

    def emit(row: dict[str, Any], depth: int) -> None:
        out.append(row)
        if depth < _MAX_DEPTH:
            for child in forks.pop(row["session_id"], ()):
                emit(child, depth + 1)

    for row in top:
        if row["session_id"] in forks:
            emit(row, 0)
        else:
            out.append(row)
    placed = {id(r) for r in out}
    for rest in forks.values():  # fork cycles and deeper chains: keep every row
        out.extend(r for r in rest if id(r) not in placed)
    return out


def list_sessions(
    db: Database, filters: Filters, memo: ListingMemo | None = None
) -> list[dict[str, Any]]:
    """Session objects in scope, newest activity first: a fork is listed at its own
    place, not moved under its origin, so ``--limit N`` is the N sessions used last.
    Only the picker folds forks under their origin (:func:`listing_order`;
    docs/resolution.md#order-of-a-listing). A long-lived reader passes its ``memo``
    (:class:`~sessiondex.query.sessions.ListingMemo`)."""
    where, params = filters.where(db)
    return listing_objects(db, where, params, limit=filters.limit, memo=memo)


# Fork depth place_forks follows (deeper forks go to the end of the list, as cycles do).
_MAX_DEPTH = 8


def first_rows(
    db: Database,
    where: str,
    params: list[Any],
    limit: int,
    columns: str = LISTING_COLUMNS,
) -> list[dict[str, Any]]:
    """The first ``limit`` rows of ``place_forks(<every row in scope>)``, reading about
    ``limit`` rows instead of all of them (a page costs the same at 20,000 sessions).

    Cutting the ordered rows first and placing the forks after is wrong both ways: a
    fork older than the cut vanishes from under its origin, and a recent fork of an
    origin below the cut shows at its own place instead of under its origin. So the
    rows are walked in activity order; a row whose origin is in scope is left to its
    origin, any other row is a top of the list and brings its forks with it (looked up
    by origin, a level at a time: index ``sessions_fork_origin``). Fork cycles and
    chains deeper than place_forks follows end the full list; when the walk runs out of
    rows before ``limit``, the whole list is ordered the plain way and cut. ``columns``
    must hold ``s.session_id`` and ``s.forked_from_session``.
    """
    out: list[dict[str, Any]] = []
    expanded: set[str] = set()  # origins whose forks are out (place_forks pops them once)
    offset = 0
    while len(out) < limit:
        page = select_rows(db, where, params, columns=columns, limit=limit, offset=offset)
        if not page:
            return place_forks(select_rows(db, where, params, columns=columns))[:limit]
        offset += len(page)
        listed = _in_scope(db, where, params, {o for r in page if (o := _origin(r))})
        tops = [r for r in page if _origin(r) not in listed]
        forks = _fork_levels(db, where, params, tops, columns)
        for top in tops:
            _emit(top, 0, forks, out, expanded)
            if len(out) >= limit:
                break
    return out[:limit]


def _emit(
    row: dict[str, Any],
    depth: int,
    forks: dict[str, list[dict[str, Any]]],
    out: list[dict[str, Any]],
    expanded: set[str],
) -> None:
    """``row``, then its forks depth first (place_forks' order)."""
    out.append(row)
    sid = row["session_id"]
    if depth < _MAX_DEPTH and sid not in expanded:
        expanded.add(sid)
        for fork in forks.get(sid, []):
            _emit(fork, depth + 1, forks, out, expanded)


def _origin(row: dict[str, Any]) -> str | None:
    """The session a row was forked from, unless it names itself."""
    origin = row["forked_from_session"]
    return origin if origin and origin != row["session_id"] else None


def _in_scope(db: Database, where: str, params: list[Any], ids: set[str]) -> set[str]:
    """Which of ``ids`` are session IDs of rows in scope."""
    if not ids:
        return set()
    marks = ", ".join("?" for _ in ids)
    rows = select_rows(
        db, f"{where} AND s.session_id IN ({marks})", [*params, *ids], columns="s.session_id"
    )
    return {r["session_id"] for r in rows}


def _fork_levels(
    db: Database, where: str, params: list[Any], tops: list[dict[str, Any]], columns: str
) -> dict[str, list[dict[str, Any]]]:
    """origin session ID → its forks in scope (newest activity first), for the tops and,
    level by level, for their forks, down to place_forks' depth."""
    forks: dict[str, list[dict[str, Any]]] = {}
    level = {r["session_id"] for r in tops}
    for _ in range(_MAX_DEPTH):
        level -= forks.keys()
        if not level:
            break
        marks = ", ".join("?" for _ in level)
        found = select_rows(
            db,
            f"{where} AND s.forked_from_session IN ({marks})"
            " AND s.forked_from_session != s.session_id",
            [*params, *level],
            columns=columns,
        )
        for sid in level:
            forks.setdefault(sid, [])
        for row in found:
            forks[row["forked_from_session"]].append(row)
        level = {r["session_id"] for r in found}
    return forks


# What a picker needs to lay out every row of a scope: no session object is decoded.
ORDER_COLUMNS = "s.file_path, s.session_id, s.forked_from_session"


def listing_order(db: Database, filters: Filters) -> list[dict[str, Any]]:
    """Every session in scope as ``{file_path, session_id, forked_from_session}``, in
    ``list`` order, each fork moved right after its origin: the fork groups the picker
    folds (docs/resolution.md#order-of-a-listing).

    An interactive picker pages through tens of thousands of sessions: it needs the
    order and the fork groups of all of them, but the objects only of the rows on screen
    (:func:`sessions_by_path`), so a scope costs one indexed query, not one JSON decode
    per session."""
    where, params = filters.where()
    if filters.limit is not None:
        return first_rows(db, where, params, filters.limit, ORDER_COLUMNS)
    return place_forks(select_rows(db, where, params, columns=ORDER_COLUMNS))


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
