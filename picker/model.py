"""The picker's rows: list order, fork groups, and which rows an expand state shows.

Pure data, no Textual: the list order of a whole scope comes from
``Index.list_order`` (paths and fork links only), and this module decides which rows are
visible — a fork sits under its origin, hidden until the origin is expanded, as in
Claude Code's /resume picker. Search results are flat (ranked, not grouped).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 8  # fork chains deeper than this are shown flat (and cycles end here)


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


def flat_rows(objects: Sequence[dict[str, Any]]) -> list[Row]:
    """Search results as rows: ranked, one level."""
    return [Row(o["file_path"], o["session_id"]) for o in objects]
