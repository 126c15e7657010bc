"""Shell completion of a session argument: IDs and names, straight from the index.

Completion runs on every Tab: it must answer in milliseconds, so it reads the index as
it is (no refresh, no transcript opened), one indexed query for IDs and one for names.
What it offers is what ``resolve`` accepts: full session IDs, and the names (custom
title, else AI title) of the repository's sessions.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import TYPE_CHECKING

from sessiondex.query.filters import keys_sql, roots_sql, scope_sql
from sessiondex.query.scopes import resolve_cwd, scope_dirs
from sessiondex.query.sessions import (
    ACTIVITY_SQL,
    NOT_HIDDEN_TAG_SQL,
    VISIBLE_SQL,
    select_rows,
)

if TYPE_CHECKING:
    from sqlite_utils import Database

#: At most this many candidates of each kind (a shell shows a screenful anyway).
MAX_CANDIDATES = 100


def _like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def complete_sessions(
    db: Database,
    incomplete: str,
    cwd: str | None = None,
    roots: Sequence[str | PathLike[str]] | None = None,
) -> list[tuple[str, str]]:
    """``(value, description)`` pairs for a session argument that starts with
    ``incomplete``: session IDs (the repository's first, then every project's, newest
    first) and names of the repository's sessions, each described by its title; only
    sessions of the config dirs ``roots`` (what ``resolve`` would accept)."""
    here = resolve_cwd(cwd)
    where, params = keys_sql(scope_dirs(db, here, "repo") or [])
    # The names resolve takes: its scope, less a session of another directory with
    # the same project key (scope_sql).
    scoped = scope_sql(db, here, "repo")
    assert scoped is not None
    named, named_params = scoped
    rooted, root_params = roots_sql(db, roots)
    listed = f"{VISIBLE_SQL} AND {NOT_HIDDEN_TAG_SQL} AND s.archived = 0 AND {rooted}"
    title = "coalesce(json_extract(s.object_json, '$.title'), '') AS title"
    local = f"CASE WHEN {where} THEN 0 ELSE 1 END"
    ids = select_rows(
        db,
        f"{listed} AND lower(s.session_id) LIKE ? ESCAPE '\\'",
        [*root_params, _like(incomplete.lower()), *params],  # WHERE's, then ORDER BY's
        order=f"{local}, {ACTIVITY_SQL} DESC, s.mtime_ns DESC, s.session_id",
        limit=MAX_CANDIDATES,
        columns=f"s.session_id, {title}",
    )
    names = select_rows(
        db,
        f"{named} AND {listed} AND lower(coalesce(s.custom_title, s.ai_title)) LIKE ? ESCAPE '\\'",
        [*named_params, *root_params, _like(incomplete.lower())],
        limit=MAX_CANDIDATES,
        columns="coalesce(s.custom_title, s.ai_title) AS name, s.session_id",
    )
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for row in names:
        if row["name"] not in seen:
            seen.add(row["name"])
            out.append((row["name"], row["session_id"][:8]))
    out.extend((row["session_id"], row["title"]) for row in ids)
    return out
