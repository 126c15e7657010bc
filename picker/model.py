"""The picker's rows: list order, fork groups, and which rows an expand state shows.

Pure data, no Textual: the list order of a whole scope comes from
``Index.list_order`` (paths and fork links only), and this module decides which rows are
visible — a fork sits under its origin, hidden until the origin is expanded, as in
Claude Code's /resume picker. Search results are flat (ranked, not grouped).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sessiondex.query.filters import MAX_LIMIT
from sessiondex.render.terminal import typed_line

if TYPE_CHECKING:
    from sessiondex.index import Index
    from sessiondex.query.search import Ranking

# Snippet marks asked of Index.search_ranking (rows.marked_snippet splits on them): control
# characters, so a snippet is cleaned piece by piece and then marked.
MARKERS = ("\x02", "\x03")

MAX_DEPTH = 8  # fork chains deeper than this are shown flat (and cycles end here)
PAGE = 50  # session objects fetched below the screen; search results per page
#: The search limit once the first page of results is scrolled past: the rest of the
#: ranking, read once (:class:`SearchRows`), not one more page per page-down.
EVERY = MAX_LIMIT


@dataclass
class PickerOptions:
    """What the picker starts with (the ``pick`` command's options)."""

    cwd: str
    scope: str = "worktree"
    query: str = ""
    all_kinds: bool = False
    include_archived: bool = False
    current_branch: bool = False

    def __post_init__(self) -> None:
        # The query as the query box holds it (widgets.PlainInput): the first search
        # runs before the box exists, and must look for what the box then shows.
        self.query = typed_line(self.query)


@dataclass(frozen=True)
class Row:
    """One visible row: the transcript it shows and its place in a fork group."""

    path: str
    session_id: str
    depth: int = 0
    forks: int = 0  # direct forks listed under it
    expanded: bool = False


class Listing:
    """Rows in ``list`` order with forks grouped under their origin."""

    def __init__(self, order: Sequence[dict[str, Any]]) -> None:
        self.order = list(order)
        present = {r["session_id"] for r in self.order}
        self.parent: dict[str, str] = {}  # path → origin session_id
        self.forks: dict[str, int] = {}  # session_id → number of listed forks
        for entry in self.order:
            origin = entry.get("forked_from_session")
            if origin and origin in present and origin != entry["session_id"]:
                self.parent[entry["file_path"]] = origin
                self.forks[origin] = self.forks.get(origin, 0) + 1

    def rows(self, expanded: set[str]) -> list[Row]:
        """The visible rows: a fork only when every origin above it is expanded."""
        out: list[Row] = []
        depth_of: dict[str, int] = {}  # session_id → depth of its shown row
        hidden: set[str] = set()  # session_ids not shown
        for entry in self.order:
            sid = entry["session_id"]
            origin = self.parent.get(entry["file_path"])
            depth = 0
            if origin is not None:
                if origin in hidden or (origin in depth_of and origin not in expanded):
                    hidden.add(sid)
                    continue
                # An origin not seen yet only happens in a fork cycle: show the row.
                depth = min(depth_of[origin] + 1, MAX_DEPTH) if origin in depth_of else 0
            depth_of.setdefault(sid, depth)
            forks = self.forks.get(sid, 0)
            out.append(Row(entry["file_path"], sid, depth, forks, forks > 0 and sid in expanded))
        return out

    def origin_of(self, path: str) -> str | None:
        return self.parent.get(path)


@dataclass
class Loaded:
    """One load's answer, computed on the index thread."""

    generation: int
    rows: list[Row]
    objects: dict[str, dict[str, Any]]
    listing: Listing | None
    complete: bool  # False: a search page was full, more may follow
    cursor: int = 0
    newest_first: bool = False  # a search answered newest first (query/search.py)
    search: SearchRows | None = None  # a search's ranking, for the objects of its rows


@dataclass(frozen=True)
class SearchRows:
    """A search's ranking as the picker pages through it: every row is a ranked session,
    and the objects of the rows that come into view are read from the ranking
    (``Index.search_page``), never by searching again. A page-down used to run the
    whole search with a larger limit (0.15 s a page at 1,500 results)."""

    ranking: Ranking
    places: dict[str, int]  # file_path → its place in the ranking

    @classmethod
    def of(cls, ranking: Ranking) -> SearchRows:
        sessions = ranking.sessions or []
        return cls(ranking, {path: at for at, (path, _) in enumerate(sessions)})

    def objects(self, index: Index, paths: Sequence[str]) -> list[dict[str, Any]]:
        """The search objects of the rows ``paths`` (and of those between them: rows come
        into view a screen at a time)."""
        places = sorted(self.places[path] for path in paths if path in self.places)
        if not places:
            return []
        return with_agent_names(index, index.search_page(self.ranking, places[0], places[-1] + 1))


def position(rows: Sequence[Row], path: str | None, fallback: int = 0) -> int:
    """The row showing ``path``; else ``fallback`` (kept within the list)."""
    if path is not None:
        for index, row in enumerate(rows):
            if row.path == path:
                return index
    return max(0, min(fallback, len(rows) - 1))


def load(
    index: Index,
    generation: int,
    query: str,
    filters: dict[str, Any],
    *,
    expanded: set[str] | frozenset[str] = frozenset(),
    limit: int = PAGE,
    height: int = 40,
    keep: str | None = None,
    fallback: int = 0,
) -> Loaded:
    """The rows for ``query`` (``Index.search_ranking``, up to ``limit`` sessions) or,
    without one, for the scope (``Index.list_order``); with the objects of a screen
    around the kept row."""
    if query:
        ranking = index.search_ranking(query, limit=limit, markers=MARKERS, typing=True, **filters)
        search = SearchRows.of(ranking)
        rows = [Row(path, session_id) for path, session_id in ranking.sessions or []]
        at = position(rows, keep, fallback)
        window = rows[max(0, at - height) : at + height + PAGE]
        found = search.objects(index, [r.path for r in window])
        return Loaded(
            generation,
            rows,
            {o["file_path"]: o for o in found},
            None,
            complete=ranking.complete,
            cursor=at,
            newest_first=ranking.newest_first,
            search=search,
        )
    listing = Listing(index.list_order(**filters))
    rows = listing.rows(set(expanded))
    at = position(rows, keep, fallback)
    window = rows[max(0, at - height) : at + height + PAGE]
    objects = with_agent_names(index, index.sessions_at([r.path for r in window]))
    return Loaded(
        generation, rows, {o["file_path"]: o for o in objects}, listing, complete=True, cursor=at
    )


def with_agent_names(index: Index, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The picker's copies of ``objects``, each with ``agent_name`` (None without an
    ``agent-name`` record) for its row's ``@name`` marker."""
    names = index.agent_names(objects) if objects else {}
    return [{**o, "agent_name": names.get(str(o.get("file_path")))} for o in objects]


def filters_for(
    options: PickerOptions, scope: str | None = None, current_branch: bool | None = None
) -> dict[str, Any]:
    """``Index`` filter arguments for the picker's options (``PickerOptions``), with the
    scope and branch toggles applied."""
    return {
        "cwd": options.cwd,
        "scope": scope if scope is not None else options.scope,
        "current_branch": (
            current_branch if current_branch is not None else options.current_branch
        ),
        "all_kinds": options.all_kinds,
        "include_archived": options.include_archived,
    }
