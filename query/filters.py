"""The filters every listing shares (list, search, from-pr): scope, branch, since, kinds."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sessiondex.query.archives import archived_sql
from sessiondex.query.scopes import git_current_branch, resolve_cwd, scope_keys
from sessiondex.query.sessions import ACTIVITY_SQL, NOT_HIDDEN_TAG_SQL, VISIBLE_SQL
from sessiondex.transcripts.keys import MAX_SANITIZED_LENGTH

_RELATIVE_RE = re.compile(r"\s*(\d+)\s*([smhdw])\s*\Z", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str) -> int | None:
    """``7d``, ``12h``, ``2w``, ``30m``, ``45s`` → seconds; None for anything else."""
    match = _RELATIVE_RE.match(text)
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()] if match else None


def parse_since(text: str, now: float | None = None) -> int:
    """``7d``, ``12h``, ``2w``, ``30m``, ``2026-11-01`` or an ISO time → epoch ms."""
    seconds = parse_duration(text)
    current = time.time() if now is None else now
    if seconds is not None:
        return int((current - seconds) * 1000)
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"cannot read --since {text!r}: use e.g. 7d, 12h, 2w or 2026-11-01"
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return int(stamp.timestamp() * 1000)


def keys_sql(keys: list[str], column: str = "s.project_key") -> tuple[str, list[Any]]:
    """``column`` in ``keys``; a hashed long key also matches by its 200-character
    prefix, as Claude Code does when an older build hashed the path differently."""
    if not keys:
        return "0", []
    clauses = [f"{column} IN ({', '.join('?' for _ in keys)})"]
    params: list[Any] = list(keys)
    for key in keys:
        if len(key) > MAX_SANITIZED_LENGTH:
            clauses.append(f"substr({column}, 1, ?) = ?")
            params.extend([MAX_SANITIZED_LENGTH + 1, key[: MAX_SANITIZED_LENGTH + 1]])
    return "(" + " OR ".join(clauses) + ")", params


@dataclass
class Filters:
    """What narrows a listing. ``cwd`` None means the process cwd."""

    cwd: str | None = None
    scope: str = "worktree"
    branch: str | None = None
    current_branch: bool = False
    since: str | None = None
    all_kinds: bool = False
    include_archived: bool = False
    limit: int | None = None
    include_hidden: bool = False  # sessions tagged __hidden (--all-kinds includes them too)

    def where(self) -> tuple[str, list[Any]]:
        cwd = resolve_cwd(self.cwd)
        clauses: list[str] = []
        params: list[Any] = []
        keys = scope_keys(cwd, self.scope)
        if keys is not None:
            sql, args = keys_sql(keys)
            clauses.append(sql)
            params.extend(args)
        branch = self.branch
        if self.current_branch:
            branch = git_current_branch(cwd)
            if branch is None:
                raise ValueError(f"--current-branch: {cwd} is not on a git branch")
        if branch:
            clauses.append(
                "EXISTS (SELECT 1 FROM branches b WHERE b.session_rowid = s.id AND b.branch = ?)"
            )
            params.append(branch)
        if self.since:
            clauses.append(f"{ACTIVITY_SQL} >= ?")
            params.append(parse_since(self.since))
        if not self.all_kinds:
            clauses.append(VISIBLE_SQL)
            if not self.include_hidden:
                clauses.append(NOT_HIDDEN_TAG_SQL)
        clauses.append(archived_sql(self.include_archived))
        return (" AND ".join(clauses) or "1"), params
