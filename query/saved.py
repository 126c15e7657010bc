"""The web view's saved queries (Datasette's canned queries): plain SQL a user can read,
edit and run in Datasette, over the documented tables, and kept here with every other
query so they follow the rules the CLI follows: the title is the stored session
object's (the one title rule), a PR is read by the one PR rule (the SQL functions
``sessiondex_pr_url`` and ``sessiondex_pr_number``), and hidden sessions stay hidden as
in ``list`` and ``from-pr``.
Every query answers for the served config dirs only (:func:`saved_queries`)."""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from typing import Any

from sessiondex.indexer.textstore import PR_NUMBER_FUNCTION, PR_URL_FUNCTION
from sessiondex.query.archives import sql_literals
from sessiondex.query.prs import NotAPullRequest, pr_argument
from sessiondex.query.sessions import (
    ACTIVITY_SQL,
    LISTING_ORDER,
    NOT_HIDDEN_TAG_SQL,
    VISIBLE_SQL,
)

# Stands for the clause :func:`saved_queries` fills in: live, visible sessions of the
# served config dirs.
_KEPT = "__kept_sessions__"
_TITLE = "json_extract(s.object_json, '$.title')"
_STAMP = f"strftime('%Y-%m-%d %H:%M', {ACTIVITY_SQL} / 1000, 'unixepoch')"


# A Datasette magic parameter (``:_<prefix>_<suffix>``, registered by web/plugin.py):
# NULL when ``:pr`` is empty or a PR ``from-pr`` reads, else the query fails with
# ``from-pr``'s message (:func:`pr_problem`). SQL cannot fail with a message of its own
# (an SQL function's exception reaches Datasette as "user-defined function raised
# exception"), and an unreadable PR matched nothing: an empty table, as if no session
# linked it. Datasette offers no "Edit SQL" for a query holding one (it cannot be run
# without the plugin's request).
PR_CHECK_PREFIX, PR_CHECK_SUFFIX = "sessiondex", "unreadable_pr"
_PR_CHECK = f":_{PR_CHECK_PREFIX}_{PR_CHECK_SUFFIX} is null"


def pr_problem(pr: str) -> str | None:
    """Why ``sessions_for_pr`` cannot read ``pr`` (``from-pr``'s usage error, the same
    parse), else None; an empty one is the form before anything is typed."""
    if not pr.strip():
        return None
    try:
        pr_argument(pr)
    except NotAPullRequest as exc:
        return str(exc)
    return None


def _pr_match(alias: str) -> str:
    """A row of ``pr_links``/``pr_mentions`` (as ``alias``) for the PR ``:pr`` names: its
    URL in any form (GitHub's owner and repository in any case, as ``query.prs``), or
    its number given alone (in any repository)."""
    return (
        f"({alias}.url = {PR_URL_FUNCTION}(:pr)"
        f" or ({alias}.provider = 'github'"
        f" and {alias}.url = {PR_URL_FUNCTION}(:pr) collate nocase)"
        f" or {alias}.number = {PR_NUMBER_FUNCTION}(:pr))"
    )


# One row per session (a number may match PRs of two repositories a session links):
# its matching URLs together. ``n`` is its place in ``list``'s order (ties of the same
# minute and millisecond too), which a union can sort by only as a column.
_PR_SQL = (
    f"select s.session_id, {_TITLE} as title, s.cwd, s.git_branch,"
    " group_concat(distinct p.url) as url, '{how}' as how, " + _STAMP + " as last_activity,"
    f" row_number() over (order by {LISTING_ORDER}) as n"
    " from {table} p join sessions s on s.id = p.session_rowid"
    f" where {_KEPT} and {_PR_CHECK} and {_pr_match('p')}"
    "{not_linked} group by s.id"
)
# A session that links the PR is listed once, as linked (from-pr lists those that only
# mention it apart).
_NOT_LINKED = (
    f" and not exists (select 1 from pr_links l where l.session_rowid = s.id and {_pr_match('l')})"
)

SAVED_QUERIES: dict[str, dict[str, str]] = {
    "sessions_for_pr": {
        "title": "Sessions for a PR",
        "description": "Sessions linked to, then mentioning, a PR: any form of its URL,"
        " owner/repo#N, or a number (in any repository).",
        "sql": (
            _PR_SQL.format(how="linked", table="pr_links", not_linked="")
            + " union all "
            + _PR_SQL.format(how="mentioned", table="pr_mentions", not_linked=_NOT_LINKED)
            + " order by how, n"
        ),
    },
    "sessions_on_branch": {
        "title": "Sessions on a branch",
        "description": "Every session that was on a git branch, newest first.",
        "sql": (
            f"select s.session_id, {_TITLE} as title, s.cwd,"
            f" {_STAMP} as last_activity, s.message_count"
            " from branches b join sessions s on s.id = b.session_rowid"
            f" where b.branch = :branch and {_KEPT}"
            f" order by {LISTING_ORDER}"
        ),
    },
    "busiest_projects": {
        "title": "Busiest projects",
        "description": "Projects by number of sessions, with messages and bytes.",
        "sql": (
            "select s.project_key, max(s.cwd) as cwd, count(*) as sessions,"
            " sum(s.message_count) as messages, sum(s.file_size) as bytes,"
            f" strftime('%Y-%m-%d %H:%M', max({ACTIVITY_SQL}) / 1000, 'unixepoch')"
            f" as last_activity from sessions s where {_KEPT}"
            " group by s.project_key order by sessions desc, messages desc"
        ),
    },
}


def saved_queries(roots: Sequence[str | PathLike[str]]) -> dict[str, dict[str, Any]]:
    """:data:`SAVED_QUERIES` answering for the config dirs ``roots`` only, as every other
    answer does (``query.filters.roots_sql``): the index file may hold others' rows.
    Live sessions that ``list`` shows: not archived, not of a hidden kind, not tagged
    hidden."""
    kept = (
        f"s.archived = 0 and s.root in ({sql_literals(roots)})"
        f" and {VISIBLE_SQL} and {NOT_HIDDEN_TAG_SQL}"
    )
    return {
        name: {**query, "sql": query["sql"].replace(_KEPT, kept)}
        for name, query in SAVED_QUERIES.items()
    }
