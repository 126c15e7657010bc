"""What a refresh found and did, shared by every path that ingests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NEW, GROWN, REWRITTEN, UNCHANGED = "new", "grown", "rewritten", "unchanged"


@dataclass
class RefreshStats:
    """What a refresh did; printed by ``index`` and returned to library callers."""

    files_seen: int = 0
    new: int = 0
    grown: int = 0
    rewritten: int = 0
    removed: int = 0
    unchanged: int = 0
    # Claude Code's picker archive (<id>/archived.json) read again: it changes what a
    # listing shows though no transcript changed
    picker_archives: int = 0
    sessions: int = 0
    messages: int = 0
    bytes_read: int = 0
    bad_lines: int = 0
    problems: Counter[str] = field(default_factory=Counter)
    errors: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "files_seen": self.files_seen,
            "new": self.new,
            "grown": self.grown,
            "rewritten": self.rewritten,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "picker_archives": self.picker_archives,
            "sessions": self.sessions,
            "messages": self.messages,
            "bytes_read": self.bytes_read,
            "bad_lines": self.bad_lines,
            "problems": dict(sorted(self.problems.items())),
            "errors": [{"path": p, "error": e} for p, e in self.errors],
            "seconds": round(self.seconds, 3),
        }


ProgressCallback = Callable[[int, int], None]  # (files done, files total)
