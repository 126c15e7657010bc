"""The filters every listing shares (list, search, from-pr): scope, branch, since, kinds."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from os import PathLike
from typing import Any

from sessiondex.query.archives import archived_sql
from sessiondex.query.dialect import dialect_of
from sessiondex.query.scopes import (
    git_current_branch,
    no_branch_reason,
    resolve_cwd,
    strangers_sql,
)
from sessiondex.query.scopes import keys_sql as keys_sql  # re-exported
from sessiondex.query.sessions import ACTIVITY_SQL, NOT_HIDDEN_TAG_SQL, VISIBLE_SQL

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@cache
def _relative_re() -> re.Pattern[str]:
    # Compiled on first use (--since, --until): not in every command's start-up.
    return re.compile(r"\s*(\d+)\s*([smhdw])\s*\Z", re.IGNORECASE)


def parse_duration(text: str) -> int | None:
    """``7d``, ``12h``, ``2w``, ``30m``, ``45s`` → seconds; None for anything else."""
    match = _relative_re().match(text)
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()] if match else None


# Longer ago than any session (~31,700 years): "since" further back means everything,
# and the result stays a number SQLite can hold.
MAX_SINCE_SECONDS = 10**12
# The largest page a listing takes (SQLite binds LIMIT as a 64-bit integer, the FTS
# layer as a C int); more is a usage error rather than an OverflowError.
MAX_LIMIT = 2**31 - 1


def parse_since(text: str, now: float | None = None) -> int:
    """``7d``, ``12h``, ``2w``, ``30m``, ``2026-11-01`` or an ISO time → epoch ms."""
    seconds = parse_duration(text)
    current = time.time() if now is None else now
    if seconds is not None:
        return int((current - min(seconds, MAX_SINCE_SECONDS)) * 1000)
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


def roots_sql(db: Any, roots: Sequence[str | PathLike[str]] | None) -> tuple[str, list[Any]]:
    """Only sessions of these config dirs (None: every config dir in the index).

    One index holds the rows of every config dir it was ever asked about (the default
    index is shared); a command answers for the config dirs it was given, so another's
    sessions never show and their IDs never resolve. Archived rows (their root is the
    archive dir) and the team store (config dirs of other machines) are not narrowed."""
    if roots is None or dialect_of(db).team:
        return "1 = 1", []  # portable: PostgreSQL wants a boolean
    values = [str(r) for r in roots]
    if not values:
        return "s.archived != 0", []
    return f"(s.archived != 0 OR s.root IN ({', '.join('?' for _ in values)}))", values


def kept_sql(
    db: Any, include_archived: bool, roots: Sequence[str | PathLike[str]] | None
) -> tuple[str, list[Any]]:
    """What every answer keeps of ``sessions s``: live rows (and archived ones shown with
    ``include_archived``, :func:`archived_sql`) of the config dirs ``roots``
    (:func:`roots_sql`)."""
    rooted, params = roots_sql(db, roots)
    return f"{archived_sql(include_archived, roots)} AND {rooted}", params


def scope_sql(db: Any, cwd: str, scope: str) -> tuple[str, list[Any]] | None:
    """The sessions of ``scope`` for ``cwd`` (None: every session): its project dirs (on
    the team store, its origin remote: ``scope_clause``), less the sessions recorded in
    another directory of the same project key (``/a/b-c`` beside ``/a/b/c``,
    :func:`~sessiondex.query.scopes.strangers_sql`), which are that directory's, not
    this one's. Listings, search and from-pr list these; a name and an ID prefix
    resolve among them, and completion offers their names (docs/resolution.md)."""
    dialect = dialect_of(db)
    scoped = dialect.scope_clause(db, cwd, scope)
    strangers = None if dialect.team or db is None else strangers_sql(db, cwd, scope)
    parts = [p for p in (scoped, strangers) if p is not None]
    if not parts:
        return None
    return " AND ".join(sql for sql, _ in parts), [v for _, params in parts for v in params]


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
    user: str | None = None  # team store only: who pushed it
    host: str | None = None  # team store only: from which machine
    include_hidden: bool = False  # sessions tagged __hidden (--all-kinds includes them too)
    #: The config dirs whose sessions answer (None: every one in the index); front ends
    #: set it to the config dirs they were given (``sessiondex.Index`` does).
    roots: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        limit = self.limit
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT
        ):
            raise ValueError(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {limit!r}")

    def narrows(self) -> bool:
        """Whether these filters may keep a small share of the sessions (a scope narrower
        than ``all``, a branch, a date), so that a search ranks in them alone first."""
        return self.scope != "all" or bool(self.branch or self.current_branch or self.since)

    def where(self, db: Any = None) -> tuple[str, list[Any]]:
        """SQL over ``sessions s`` for these filters, in ``db``'s dialect (the scopes
        differ: paths locally, the origin remote on the team store)."""
        dialect = dialect_of(db)
        cwd = resolve_cwd(self.cwd)
        # Where a session's copies are compared (newest_copy_sql): the scope, the config
        # dirs and archives; not what narrows the answer (a branch, a date, the kinds, a
        # hiding tag), or hiding the newest copy would let a stale one answer.
        places: list[str] = []
        place_params: list[Any] = []
        scoped = scope_sql(db, cwd, self.scope)
        if scoped is not None:
            places.append(scoped[0])
            place_params.extend(scoped[1])
        kept, kept_params = kept_sql(db, self.include_archived, self.roots)
        places.append(kept)
        place_params.extend(kept_params)
        clauses: list[str] = list(places)
        params: list[Any] = list(place_params)
        for column, value in (("pushed_by_user", self.user), ("pushed_by_host", self.host)):
            if value is None:
                continue
            if not dialect.team:
                raise ValueError("--user and --host filter the team store: use --db postgresql://…")
            clauses.append(f"s.{column} = ?")
            params.append(value)
        branch = self.branch
        if self.current_branch:
            branch = git_current_branch(cwd)
            if branch is None:
                raise ValueError(f"--current-branch: {no_branch_reason(cwd)}")
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
        where = " AND ".join(clauses)
        # (the team store's ``sessions`` view has the same columns: one rule for both)
        newest = newest_copy_sql(" AND ".join(places), None if dialect.team else self.roots)
        return f"{where} AND {newest}", params + place_params


def root_rank(root: str | None, roots: Sequence[str | PathLike[str]] | None) -> int:
    """Where a copy's config dir stands among ``roots``, as the user gave them: a tie
    between copies with one mtime (a backup made with ``cp -a`` beside the live config
    dir, given after it) goes to the first config dir's. Anything else (an archive, the
    team store, no roots) comes after every one of them."""
    values = [str(r) for r in roots or ()]
    return values.index(root) if root in values else len(values)


def _root_rank_sql(column: str, roots: Sequence[str | PathLike[str]] | None) -> str:
    """:func:`root_rank` in SQL over ``column``, the config dirs written as literals
    (``newest_copy_sql`` rewrites its ``where`` around them, outside quotes only)."""
    values = [str(r) for r in roots or ()]
    if not values:
        return "0"
    cases = " ".join(
        f"WHEN '{value.replace(chr(39), chr(39) * 2)}' THEN {rank}"
        for rank, value in enumerate(values)
    )
    return f"(CASE {column} {cases} ELSE {len(values)} END)"


def newest_copy_sql(where: str, roots: Sequence[str | PathLike[str]] | None = None) -> str:
    """The row answers only if no other row of its session in ``where`` (the scope, the
    config dirs, archives) is newer (transcript mtime, then the config dir given first
    of ``roots``, :func:`root_rank`, then row id): copies of one
    session (two config dirs indexed together, a live one and its backup; two project
    dirs) are one session, its newest copy in scope, as Claude Code's picker counts a
    session ID once. In SQL, before any ranking or paging, so a page holds its
    ``limit`` sessions and a stale copy's text never answers a search; and the newest
    copy decides even when a filter leaves it out (then the session does not answer).
    A file with no message (a title or tag alone) is no copy, as for Claude Code's
    lookup of an ID: it never hides one that has messages. ``where`` is read for the other row (its ``s.`` columns as ``newer.``; quoted
    literals left as they are): its parameters follow the answer's. One
    ``sessions_sid`` lookup per row: the other row's ``where`` stands behind a ``CASE``
    the planner cannot look up by, or SQLite (no statistics) looked the other copies up
    by the scope's project key, every session of the project for each row (1.9 s to
    resolve a name among 2,387 sessions, 2.5 s to list them; 31 and 46 ms so)."""
    parts = where.split("'")
    for i in range(0, len(parts), 2):  # outside '…' literals only
        parts[i] = re.sub(r"\bs\.", "newer.", parts[i])
    other = "'".join(parts)
    rank, newer_rank = _root_rank_sql("s.root", roots), _root_rank_sql("newer.root", roots)
    tie = (
        "newer.id > s.id"
        if rank == "0"
        else f"({newer_rank} < {rank} OR ({newer_rank} = {rank} AND newer.id > s.id))"
    )
    return (
        "NOT EXISTS (SELECT 1 FROM sessions newer WHERE newer.session_id = s.session_id"
        " AND newer.id != s.id AND newer.raw_message_count > 0 AND (newer.mtime_ns >"
        f" s.mtime_ns OR (newer.mtime_ns = s.mtime_ns AND {tie}))"
        f" AND CASE WHEN {other} THEN 1 ELSE 0 END = 1)"
    )
