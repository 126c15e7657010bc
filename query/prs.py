"""Sessions linked to (or mentioning) a pull request: ``search <URL>`` and ``from-pr``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessiondex.query.archives import archived_sql
from sessiondex.query.filters import Filters
from sessiondex.query.scopes import git_remote_repository, resolve_cwd
from sessiondex.query.sessions import select_rows, to_objects
from sessiondex.transcripts.pr_urls import parse_pr_url

if TYPE_CHECKING:
    from sqlite_utils import Database


def sessions_for_url(
    db: Database, url: str, *, include_mentions: bool = True, include_archived: bool = False
) -> list[dict[str, Any]]:
    """Sessions with a ``pr-link`` to the PR at ``url`` (any project), newest first, then
    those that only mention it. ``url`` is normalized first."""
    pr = parse_pr_url(url)
    if pr is None:
        raise ValueError(f"not a pull/merge request URL: {url}")
    archived = " AND " + archived_sql(include_archived)
    linked = select_rows(
        db, f"s.id IN (SELECT session_rowid FROM pr_links WHERE url = ?){archived}", [pr.url]
    )
    out = to_objects(db, linked)
    if include_mentions:
        seen = {r["id"] for r in linked}
        mentioned = select_rows(
            db, f"s.id IN (SELECT session_rowid FROM pr_mentions WHERE url = ?){archived}", [pr.url]
        )
        out.extend(to_objects(db, [r for r in mentioned if r["id"] not in seen]))
    return out


def parse_pr_number(text: str) -> int | None:
    """``12`` or ``#12`` → 12 (a PR number given on the command line)."""
    value = text.strip().lstrip("#")
    return int(value) if value.isdigit() and int(value) > 0 else None


def from_pr(db: Database, pr: str | None, filters: Filters) -> list[dict[str, Any]]:
    """Sessions linked to a PR number (in scope, and in the cwd's remote repository when
    known) or URL (anywhere); with no PR, every session in scope that has a link."""
    if pr is not None and parse_pr_url(pr) is not None:
        return sessions_for_url(
            db, pr, include_mentions=False, include_archived=filters.include_archived
        )
    where, params = filters.where()
    if pr is None:
        where += " AND EXISTS (SELECT 1 FROM pr_links p WHERE p.session_rowid = s.id)"
        return to_objects(db, select_rows(db, where, params, limit=filters.limit))
    number = parse_pr_number(pr)
    if number is None:
        raise ValueError(f"not a PR number or URL: {pr!r}")
    link = "SELECT 1 FROM pr_links p WHERE p.session_rowid = s.id AND p.number = ?"
    link_params: list[Any] = [number]
    # Claude Code compares the number alone, so PR #12 of another repository matches
    # too; when the cwd's origin names a repository we keep only that repository's PRs.
    remote = git_remote_repository(resolve_cwd(filters.cwd))
    if remote is not None:
        link += " AND lower(p.host) = ? AND lower(p.repository) = ?"
        link_params.extend([remote[0], remote[1].lower()])
    where += f" AND EXISTS ({link})"
    rows = select_rows(db, where, params + link_params, limit=filters.limit)
    return to_objects(db, rows)
