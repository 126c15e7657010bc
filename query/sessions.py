"""Session rows → the session objects of spec/cli.md, and the listing filters.

The display-title precedence is defined here (:func:`display_title`) and nowhere else.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from sqlite_utils import Database

from transcripts.records import PRINT_MODE_ENTRYPOINTS, display_prompt, is_loop_command

SESSION_FIELDS = (
    "session_id", "project_key", "config_dir", "file_path", "cwd", "title", "custom_title",
    "ai_title", "summary", "last_prompt", "first_prompt", "tag", "git_branch", "branches",
    "pr_links", "pr_mentions", "created_at", "last_activity", "mtime", "file_size",
    "message_count", "entrypoint", "is_sidechain", "forked_from", "resume_command",
)

# SQL for rows the picker hides: sidechains, files with no user/assistant record,
# -p/SDK sessions and /loop sessions.
_PRINT_MODE_SQL = ", ".join(f"'{e}'" for e in sorted(PRINT_MODE_ENTRYPOINTS))
VISIBLE_SQL = (
    "(coalesce(s.is_sidechain, 0) = 0 AND s.raw_message_count > 0"
    f" AND coalesce(s.entrypoint, '') NOT IN ({_PRINT_MODE_SQL})"
    " AND coalesce(s.first_command, '') != '/loop')"
)


def display_title(row: dict[str, Any]) -> str:
    """The picker's order: custom title, AI title, summary, last prompt, first prompt
    (or its command fallback), else the first 8 characters of the ID."""
    for value in (row.get("custom_title"), row.get("ai_title"), row.get("summary"),
                  row.get("last_prompt"), row.get("first_prompt"), row.get("prompt_fallback")):
        if value:
            text = " ".join(str(value).split())
            if text:
                return display_prompt(text) or text
    return str(row["session_id"])[:8]


def iso_ms(ms: int | None) -> str | None:
    if ms is None:
        return None
    stamp = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def resume_command(session_id: str, cwd: str | None) -> str:
    if not cwd:
        return f"claude --resume {session_id}"
    return f"cd {shlex.quote(cwd)} && claude --resume {session_id}"


def is_hidden(row: dict[str, Any]) -> bool:
    """Python twin of :data:`VISIBLE_SQL` for rows already loaded."""
    return bool(row.get("is_sidechain")) or not row.get("raw_message_count") or (
        row.get("entrypoint") in PRINT_MODE_ENTRYPOINTS) or is_loop_command(
        row.get("first_command"))


def _pr_objects(rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
    return [{"url": u, "number": n, "repository": r, "host": h, "provider": p}
            for u, n, r, h, p in rows]


def to_object(db: Database, row: dict[str, Any]) -> dict[str, Any]:
    """One ``sessions`` row as the contract's session object."""
    rowid = row["id"]
    branches = [r[0] for r in db.execute(
        "SELECT branch FROM branches WHERE session_rowid = ? ORDER BY id", [rowid])]
    links = db.execute(
        "SELECT url, number, repository, host, provider FROM pr_links"
        " WHERE session_rowid = ? ORDER BY id", [rowid]).fetchall()
    linked = {r[0] for r in links}
    mentions = [m for m in db.execute(
        "SELECT url, number, repository, host, provider FROM pr_mentions"
        " WHERE session_rowid = ? GROUP BY url ORDER BY min(id)", [rowid]).fetchall()
        if m[0] not in linked]
    forked = None
    if row.get("forked_from_session"):
        forked = {"session_id": row["forked_from_session"],
                  "message_uuid": row.get("forked_from_message")}
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
        "pr_mentions": _pr_objects(mentions),
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


def activity_ms(row: dict[str, Any]) -> int:
    """Last activity: the last record timestamp, else the file's mtime."""
    value = row.get("last_activity_ms")
    return int(value) if value is not None else int(row["mtime_ns"]) // 1_000_000


# ORDER BY for "newest activity first", with the same fallback as activity_ms().
ACTIVITY_SQL = "coalesce(s.last_activity_ms, s.mtime_ns / 1000000)"


def select_rows(db: Database, where: str = "1", params: Sequence[Any] = (),
                order: str = f"{ACTIVITY_SQL} DESC, s.mtime_ns DESC, s.session_id",
                limit: int | None = None) -> list[dict[str, Any]]:
    """Raw ``sessions`` rows (as dicts) matching ``where``."""
    sql = f"SELECT s.* FROM sessions s WHERE {where} ORDER BY {order}"
    args = list(params)
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    cursor = db.execute(sql, args)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor.fetchall()]
