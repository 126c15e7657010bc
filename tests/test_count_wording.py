"""Counts in human-facing lines are grammatical: ``1 file seen``, ``2 files seen``, never
``1 files`` nor ``1 session(s)``. Each case renders one line with every count at 1, then
at 2, and looks for the phrases; json/jsonl/csv keep bare numbers (not checked here:
they never pass through the wording)."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from sessiondex.indexer.stats import RefreshStats


def _index_line(n: int) -> str:
    from sessiondex.cli.index_cmds import _summary_line

    stats = RefreshStats(
        files_seen=n, new=n, sessions=n, messages=n, bad_lines=n, bytes_read=10, seconds=0.5
    )
    stats.problems["malformed-json"] = n
    return _summary_line(stats.as_dict())


def _push_line(n: int) -> str:
    from sessiondex.cli.push_cmd import _summary_line

    stats = {
        "redactions": {"aws-key": n},
        "files_seen": n,
        "new": n,
        "grown": 0,
        "rewritten": 0,
        "unchanged": 0,
        "sessions": n,
        "entries": n,
        "duplicates": 0,
        "bytes_read": 10,
        "tool_outputs_omitted": n,
        "bad_lines": n,
        "deleted_in_store": n,
        "resent_deleted": n,
        "seconds": 0.5,
    }
    return _summary_line(stats, dry_run=False)


def _watch_line(n: int, reason: str) -> str:
    from sessiondex.cli.watch_cmd import _batch_line

    stats = RefreshStats(files_seen=n, messages=n)
    return _batch_line(
        SimpleNamespace(reason=reason, paths=["p"] * n, stats=stats, seconds=0.01)  # type: ignore[arg-type]
    )


def _stats_cleanup_line(n: int) -> str:
    from sessiondex.cli.cleanup_cmd import describe_summary

    return describe_summary(
        {
            "config_dirs": [{"days": n, "sweep_enabled": True}],
            "expired_sessions": n,
            "expired_bytes": 10,
            "expiring_within_3_days": n,
            "archive": {
                "protected": n,
                "at_risk": n,
                "window_days": n,
                "archived_only": n,
                "last_run": None,
            },
        }
    )


def _cleanup_apply_line(n: int) -> str:
    from sessiondex.actions.cleanup import ARCHIVED, DELETED
    from sessiondex.cli.cleanup_cmd import _summary
    from sessiondex.query.cleanup import SESSION

    def outcome(status: str, kind: str = SESSION) -> Any:
        return SimpleNamespace(status=status, archive=None, kind=kind)

    outcomes = [outcome(DELETED) for _ in range(n)] + [outcome(DELETED, "legacy") for _ in range(n)]
    return _summary(outcomes + [outcome(ARCHIVED) for _ in range(n)], 10)  # type: ignore[arg-type]


def _retention_line(n: int) -> str:
    from sessiondex.cli.archive_cmd import _retention_line as line

    return line({"sweep_enabled": True, "source": "default", "config_dir": "/c", "days": n})


def _files_line(n: int) -> str:
    from sessiondex.cli.cleanup_cmd import _files_line as line

    return line(
        {
            "totals": {"files": n, "file_bytes": 10},
            "days_source": "--days",
            "days": n,
            "claude_code": {"sweep_enabled": True},
        }
    )


def _sessions_and_files(n: int) -> str:
    from sessiondex.cli.output import sessions_and_files

    return sessions_and_files(n, n, of="desktop ")


def _show_notes(n: int) -> str:
    """``show``'s notes: the lines skipped or repaired, and a fold of one long line
    (more characters than a fold keeps, on ``n`` lines)."""
    from collections import Counter

    from sessiondex.render.conversation import FOLD_CHARS, fold, problem_note

    note = problem_note(Counter({"invalid-utf8": n, "malformed-json": n}))
    folded = fold("\n".join(["x" * (FOLD_CHARS + 1)] * n))[1]
    return f"{note} / {folded}"


def _web_cut(n: int) -> str:
    from sessiondex.web.conversation import CLIP_MAX_CHARS, clip

    return str(clip("\n".join(["y" * (CLIP_MAX_CHARS + 1)] * n))[1])


CASES: list[tuple[str, Callable[[int], str], tuple[str, ...], tuple[str, ...]]] = [
    (
        "index",
        _index_line,
        ("1 file seen:", "1 session,", "1 message indexed", "1 bad line (malformed-json 1)"),
        ("2 files seen:", "2 sessions,", "2 messages indexed", "2 bad lines (malformed-json 2)"),
    ),
    (
        "push",
        _push_line,
        (
            "1 file seen:",
            "1 session, 1 entry sent",
            "1 secret redacted (aws-key 1)",
            "1 tool output left out",
            "1 bad line,",
            "1 file left out as deleted from the store",
            "1 file of deleted sessions sent again",
        ),
        (
            "2 files seen:",
            "2 sessions, 2 entries sent",
            "2 secrets redacted (aws-key 2)",
            "2 tool outputs left out",
            "2 bad lines,",
            "2 files left out as deleted from the store",
            "2 files of deleted sessions sent again",
        ),
    ),
    (
        "watch events",
        lambda n: _watch_line(n, "events"),
        ("1 path;", "1 message,"),
        ("2 paths;", "2 messages,"),
    ),
    ("watch catch-up", lambda n: _watch_line(n, "catch-up"), ("1 file;",), ("2 files;",)),
    (
        "stats cleanup",
        _stats_cleanup_line,
        (
            "1 session (",
            "cleanupPeriodDays (1)",
            "1 session protected, 1 at risk (deleted within 1 day,",
            "1 kept only in the archive",
        ),
        ("2 sessions (", "2 sessions protected, 2 at risk (deleted within 2 days,"),
    ),
    (
        "cleanup --apply",
        _cleanup_apply_line,
        ("1 session and 1 other file (not sessions) deleted", "1 protected session archived"),
        ("2 sessions and 2 other files (not sessions) deleted", "2 protected sessions archived"),
    ),
    ("archive retention", _retention_line, ("for 1 day (",), ("for 2 days (",)),
    ("cleanup files", _files_line, ("1 file, ", "--days 1 covers them"), ("2 files, ",)),
    (
        "show notes",
        _show_notes,
        ("1 line with invalid UTF-8", "1 unreadable line skipped", "folded: 1 line,"),
        ("2 lines with invalid UTF-8", "2 unreadable lines skipped", "folded: 2 lines,"),
    ),
    ("web cut", _web_cut, ("cut: 1 line,",), ("cut: 2 lines,",)),
    (
        "sessions and files",
        _sessions_and_files,
        ("1 desktop session and 1 other desktop file (not sessions)",),
        ("2 desktop sessions and 2 other desktop files (not sessions)",),
    ),
]


@pytest.mark.parametrize(("case", "line", "one", "two"), CASES, ids=[c[0] for c in CASES])
def test_counts_are_grammatical(
    case: str, line: Callable[[int], str], one: tuple[str, ...], two: tuple[str, ...]
) -> None:
    for n, phrases in ((1, one), (2, two)):
        text = line(n)
        assert "(s)" not in text, text
        for phrase in phrases:
            assert phrase in text, (phrase, text)


@pytest.mark.parametrize(
    ("count", "noun", "plural", "said"),
    [
        (0, "session", None, "0 sessions"),
        (1, "session", None, "1 session"),
        (2, "session", None, "2 sessions"),
        (1, "bad line", None, "1 bad line"),
        (3, "bad line", None, "3 bad lines"),
        (1, "entry", "entries", "1 entry"),
        (2, "entry", "entries", "2 entries"),
        (-1, "day", None, "-1 days"),
    ],
)
def test_counted(count: int, noun: str, plural: str | None, said: str) -> None:
    from sessiondex.render.counts import counted

    assert counted(count, noun, plural) == said
