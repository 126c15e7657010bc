"""The session object (docs/session-fields.md#the-session-object), built once per change and stored with the row.

Listing thousands of sessions must not rebuild thousands of dicts (the picker-speed
goal is 2% of the SDK's scan), so the indexer stores each session's object as JSON
whenever its rows change, and queries only decode it. The display-title precedence is
defined here (:func:`display_title`) and nowhere else.
"""

from __future__ import annotations

import functools
import re
import shlex
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from sessiondex.transcripts.keys import is_session_id
from sessiondex.transcripts.pr_urls import pr_identity
from sessiondex.transcripts.records import display_prompt

if TYPE_CHECKING:
    from sqlite_utils import Database

SESSION_FIELDS = (
    "session_id",
    "project_key",
    "config_dir",
    "file_path",
    "cwd",
    "title",
    "custom_title",
    "ai_title",
    "summary",
    "last_prompt",
    "first_prompt",
    "tag",
    "git_branch",
    "branches",
    "pr_links",
    "pr_mentions",
    "created_at",
    "last_activity",
    "mtime",
    "file_size",
    "message_count",
    "entrypoint",
    "is_sidechain",
    "forked_from",
    "resume_command",
)


def display_title(row: dict[str, Any]) -> str:
    """The picker's order: custom title, AI title, summary, last prompt, first prompt
    (or its command fallback), else the first 8 characters of the ID."""
    for value in (
        row.get("custom_title"),
        row.get("ai_title"),
        row.get("summary"),
        row.get("last_prompt"),
        row.get("first_prompt"),
        row.get("prompt_fallback"),
    ):
        if value:
            text = " ".join(str(value).split())
            if text:
                return display_prompt(text) or text
    return str(row["session_id"])[:8]


def untitled_title(
    custom_title: Any,
    ai_title: Any,
    summary: Any,
    last_prompt: Any,
    first_prompt: Any,
    prompt_fallback: Any,
) -> str | None:
    """The :func:`display_title` of a session with neither a custom nor an AI title
    (made from its summary or a prompt), else None: what the index's ``shown_title``
    column holds (indexer/shape.py), for the picker's filter as letters are typed."""
    if (isinstance(custom_title, str) and custom_title.strip()) or (
        isinstance(ai_title, str) and ai_title.strip()
    ):
        return None
    row = {
        "summary": summary,
        "last_prompt": last_prompt,
        "first_prompt": first_prompt,
        "prompt_fallback": prompt_fallback,
        "session_id": "",
    }
    return display_title(row) or None


def iso_ms(ms: int | None) -> str | None:
    """Epoch milliseconds → ``2026-11-02T10:00:30.000Z``."""
    if ms is None:
        return None
    seconds, millis = divmod(int(ms), 1000)
    t = time.gmtime(seconds)
    # Fields, not strftime: glibc's %Y gives "999" for the year 999, which is no ISO-8601.
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"
        f"T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{millis:03d}Z"
    )


def resume_command(target: str, cwd: str | None, config_dir: str | None = None) -> str | None:
    """``cd <cwd> && claude --resume <target>``, each part shell-quoted; with
    ``config_dir``, ``CLAUDE_CONFIG_DIR=<dir>`` goes right before ``claude`` (in ``VAR=x
    cd d && claude`` it would reach only ``cd``). The stored object holds the line
    without it: whether a config dir is the default depends on the reader's ``HOME``, so
    the query layer adds it when it answers (query/sessions.py).

    ``target`` is a session ID or a transcript's absolute path (``claude --resume``
    takes both). Anything else has no resume line (None): a team store's session ID is
    whatever its writer stored, and ``claude`` would take ``--dangerously-…`` for an
    option however it is quoted."""
    if not (is_session_id(target) or target.startswith("/")):
        return None
    line = f"claude --resume {shell_quote(target)}"
    if config_dir:
        line = _assignment(config_dir) + line
    where = absolute_cwd(cwd)
    return f"cd {shell_quote(where)} && {line}" if where else line


def absolute_cwd(cwd: object) -> str | None:
    """``cwd`` when it is an absolute directory, the only kind Claude Code records
    (``process.cwd()``; a Windows one too: ``C:\\…``, ``\\\\server\\…``); else None,
    as for an unknown cwd. It is transcript data, and quoting cannot stop ``cd`` from
    reading ``-`` as "back to $OLDPWD", ``-P`` or ``--`` as options, or a relative path
    from wherever the line is pasted: a damaged or hostile record must not choose where
    ``claude`` starts."""
    if isinstance(cwd, str) and (cwd.startswith("/") or _WINDOWS_ABSOLUTE.match(cwd)):
        return cwd
    return None


# A Windows absolute path: a drive and a separator, or a UNC share.
_WINDOWS_ABSOLUTE = re.compile(r"[A-Za-z]:[\\/]|\\\\")


def with_config_dir(command: str, target: str, cwd: str | None, config_dir: str) -> str | None:
    """A stored :func:`resume_command` line for ``target``, with ``CLAUDE_CONFIG_DIR``
    put right before ``claude``. The line ends with ``claude --resume <target quoted>``
    (how :func:`resume_command` builds it): the assignment goes before that known tail,
    never before some "claude --resume" inside a quoted word. A line of another shape is
    built anew. A listing of a config dir that is not the default finishes every row
    this way: no row's cwd is quoted again."""
    tail = "claude --resume " + target  # a session ID is one shell word as it is
    if not command.endswith(tail):
        tail = "claude --resume " + shell_quote(target)
    if command.endswith(tail):
        return command[: -len(tail)] + _assignment(config_dir) + tail
    return resume_command(target, cwd, config_dir)


@functools.lru_cache(maxsize=64)
def _assignment(config_dir: str) -> str:
    """``CLAUDE_CONFIG_DIR=<dir quoted> `` (with its space): a listing finishes every
    row's line with the same few config dirs."""
    return f"CLAUDE_CONFIG_DIR={shell_quote(config_dir)} "


def shell_quote(text: str) -> str:
    """``text`` as one shell word: ``shlex.quote``, except that a text holding a control
    or format character (a newline, an escape, a C1 control, a bidi override, U+2028 in a
    directory name, which transcripts record as they are) is written in bash's and zsh's
    ``$'…'`` form with each such character escaped as its UTF-8 bytes (``\\xHH``, exact
    whatever the locale). The line then stays one line, shows nothing a terminal obeys
    wherever it is printed, and still names the same directory when pasted."""
    if (text.isascii() and text.isprintable()) or not any(_needs_escape(ch) for ch in text):
        return shlex.quote(text)  # the first test, in C, spares most texts the second
    return "$'" + "".join(_ansi_c(ch) for ch in text) + "'"


def _needs_escape(ch: str) -> bool:
    return ch < " " or ch == "\x7f" or (ch >= "\x80" and _category(ch) in _ESCAPED)


def _ansi_c(ch: str) -> str:
    if ch in _ANSI_C:
        return _ANSI_C[ch]
    if _needs_escape(ch):
        return "".join(f"\\x{b:02x}" for b in ch.encode("utf-8"))
    return ch


# Controls (C1), format characters (bidi overrides, zero-width), line and paragraph
# separators: what render.terminal makes visible, here escaped instead.
_ESCAPED = frozenset({"Cc", "Cf", "Zl", "Zp"})
_ANSI_C = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}


def _category(ch: str) -> str:
    import unicodedata  # only for a directory that holds such characters

    return unicodedata.category(ch)


def activity_ms(row: dict[str, Any]) -> int:
    """Last activity: the last record timestamp, else the file's mtime."""
    value = row.get("last_activity_ms")
    return int(value) if value is not None else int(row["mtime_ns"]) // 1_000_000


def pr_row(pr: Any) -> tuple[Any, ...]:
    """A :class:`~sessiondex.transcripts.pr_urls.PullRequest` as the PR tables hold it
    and :func:`build_object` reads it: ``(url, number, repository, host, provider)``."""
    return (pr.url, pr.number, pr.repository, pr.host, pr.provider)


def _pr_objects(rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    return [
        {"url": u, "number": n, "repository": r, "host": h, "provider": p} for u, n, r, h, p in rows
    ]


def _one_per_pr(rows: Sequence[Sequence[Any]]) -> list[Sequence[Any]]:
    """The first row of each PR: two links to ``Org/Repo/pull/3`` and ``org/repo/pull/3``
    name one GitHub PR (:func:`~sessiondex.transcripts.pr_urls.pr_identity`)."""
    seen: set[str] = set()
    out = []
    for row in rows:
        identity = pr_identity(row[0], row[4])
        if identity not in seen:
            seen.add(identity)
            out.append(row)
    return out


def build_object(
    row: dict[str, Any],
    branches: list[str],
    links: Sequence[Sequence[Any]],
    mentions: Sequence[Sequence[Any]],
) -> dict[str, Any]:
    """The contract's session object from a session row and its related rows (PR rows
    are ``(url, number, repository, host, provider)``; one PR is listed once, by its first
    spelling, and mentions that are also links are dropped here, so a mention never
    duplicates a link). Mentions are in number, then
    URL order, however they were found: a new session's come in the order its text
    names them, a changed one's from the table, and a rebuild must answer as the live
    index does."""
    links = _one_per_pr(links)
    linked = {pr_identity(link[0], link[4]) for link in links}
    mentions = _one_per_pr(sorted(mentions, key=lambda m: (m[1], m[0])))
    forked = None
    if row.get("forked_from_session"):
        forked = {
            "session_id": row["forked_from_session"],
            "message_uuid": row.get("forked_from_message"),
        }
    first_prompt = row.get("first_prompt") or row.get("prompt_fallback")
    return {
        "session_id": row["session_id"],
        "project_key": row["project_key"],
        "config_dir": row["root"],
        "file_path": row["file_path"],
        "cwd": row.get("cwd"),
        "title": display_title(row),
        "custom_title": row.get("custom_title"),
        "ai_title": row.get("ai_title"),
        "summary": row.get("summary"),
        "last_prompt": row.get("last_prompt"),
        "first_prompt": display_prompt(first_prompt) if first_prompt else None,
        "tag": row.get("tag"),
        "git_branch": row.get("git_branch"),
        "branches": branches,
        "pr_links": _pr_objects(links),
        "pr_mentions": _pr_objects(m for m in mentions if pr_identity(m[0], m[4]) not in linked),
        "created_at": iso_ms(row.get("created_ms")),
        "last_activity": iso_ms(activity_ms(row)),
        "mtime": iso_ms(row["mtime_ns"] // 1_000_000),
        "file_size": row["file_size"],
        "message_count": row["message_count"],
        "entrypoint": row.get("entrypoint"),
        "is_sidechain": bool(row.get("is_sidechain")),
        "forked_from": forked,
        "resume_command": resume_command(row["session_id"], row.get("cwd")),
    }


# SQLite's default limit on bound parameters is 32766; stay well below it.
_ID_CHUNK = 5000


def _build_many(db: Database, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Three queries per chunk of rows, not three per row."""
    branches: dict[int, list[str]] = {}
    links: dict[int, list[Sequence[Any]]] = {}
    mentions: dict[int, list[Sequence[Any]]] = {}
    ids = [r["id"] for r in rows]
    for start in range(0, len(ids), _ID_CHUNK):
        chunk = ids[start : start + _ID_CHUNK]
        marks = ", ".join("?" for _ in chunk)
        for rowid, branch in db.execute(
            f"SELECT session_rowid, branch FROM branches WHERE session_rowid IN ({marks})"
            " ORDER BY id",
            chunk,
        ):
            branches.setdefault(rowid, []).append(branch)
        for rowid, *pr in db.execute(
            "SELECT session_rowid, url, number, repository, host, provider FROM pr_links"
            f" WHERE session_rowid IN ({marks}) ORDER BY id",
            chunk,
        ):
            links.setdefault(rowid, []).append(pr)
        # One mention per URL; done here rather than with GROUP BY (SQLite's bare
        # columns), so the same SQL runs on the team store. Ordered by number and URL,
        # not as inserted: a session's files (main, subagents) are read in whatever
        # order their changes came, and a rebuild must answer as incremental updates.
        seen: set[tuple[int, str]] = set()
        for rowid, *pr in db.execute(
            "SELECT session_rowid, url, number, repository, host, provider FROM pr_mentions"
            f" WHERE session_rowid IN ({marks}) ORDER BY number, url",
            chunk,
        ):
            if (rowid, pr[0]) not in seen:
                seen.add((rowid, pr[0]))
                mentions.setdefault(rowid, []).append(pr)
    return [
        build_object(
            r, branches.get(r["id"], []), links.get(r["id"], []), mentions.get(r["id"], [])
        )
        for r in rows
    ]


def build_objects(db: Database, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Session objects for ``sessions`` rows, reading their branch and PR rows."""
    return _build_many(db, rows)


def store_objects(db: Database, session_rowids: Iterable[int]) -> None:
    """Recompute and store the object of each session (call after its rows change)."""
    ids = list(dict.fromkeys(session_rowids))
    if not ids:
        return
    marks = ", ".join("?" for _ in ids)
    cursor = db.execute(f"SELECT * FROM sessions WHERE id IN ({marks})", ids)
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, r)) for r in cursor.fetchall()]
    for row, obj in zip(rows, _build_many(db, rows)):
        db.execute(
            "UPDATE sessions SET object_json = ? WHERE id = ?",
            [orjson.dumps(obj).decode(), row["id"]],
        )
