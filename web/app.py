"""A Datasette instance over the index, with the sessiondex plugin.

The index is attached read-only: Datasette's connections open it ``mode=ro``, which
SQLite enforces (a write fails), and which — unlike ``immutable=1`` — reads the WAL, so
a refresh by the Index (or by ``sessiondex watch``) shows on the next request. Datasette
only writes to a database when a plugin or a canned query with ``write: true`` asks;
there is neither here, and our own pages answer GET only.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from sessiondex.web.plugin import DATABASE_NAME, TEMPLATE_DIR
from sessiondex.web.state import WebIndex

# Canned queries: SQL by nature (Datasette's own feature), over the documented tables.
_TITLE_SQL = "coalesce(s.custom_title, s.ai_title, s.summary, s.last_prompt, s.first_prompt)"
_ACTIVITY_SQL = (
    "strftime('%Y-%m-%d %H:%M', coalesce(s.last_activity_ms, s.mtime_ns / 1000000) / 1000,"
    " 'unixepoch')"
)
_PR_SQL = f"""
select s.session_id, {_TITLE_SQL} as title, s.cwd, s.git_branch, p.url,
  '{{how}}' as how, {_ACTIVITY_SQL} as last_activity
from {{table}} p join sessions s on s.id = p.session_rowid
where s.archived = 0 and (p.url = rtrim(:pr, '/') or p.repository || '#' || p.number = :pr
  or cast(p.number as text) = ltrim(:pr, '#'))
"""

METADATA: dict[str, Any] = {
    "title": "sessiondex",
    "description": "Claude Code session history, from the sessiondex index (read-only).",
    "databases": {
        DATABASE_NAME: {
            "description": "The derived index of the transcripts: sessions, messages,"
            " branches, PR links and mentions, and the files they came from.",
            "tables": {
                "sessions": {"facets": ["project_key", "git_branch", "tag", "entrypoint"]},
                "pr_links": {"facets": ["repository", "provider"]},
            },
            "queries": {
                "sessions_for_pr": {
                    "title": "Sessions for a PR",
                    "description": "Sessions linked to, then mentioning, a PR: its"
                    " normalized URL, owner/repo#N, or a number. (The search page also"
                    " takes any form of PR URL.)",
                    "sql": (
                        _PR_SQL.format(how="linked", table="pr_links")
                        + " union all "
                        + _PR_SQL.format(how="mentioned", table="pr_mentions")
                        + " order by how, last_activity desc"
                    ),
                },
                "sessions_on_branch": {
                    "title": "Sessions on a branch",
                    "description": "Every session that was on a git branch, newest first.",
                    "sql": (
                        f"select s.session_id, {_TITLE_SQL} as title, s.cwd,"
                        f" {_ACTIVITY_SQL} as last_activity, s.message_count"
                        " from branches b join sessions s on s.id = b.session_rowid"
                        " where b.branch = :branch and s.archived = 0"
                        " order by coalesce(s.last_activity_ms, s.mtime_ns / 1000000) desc"
                    ),
                },
                "busiest_projects": {
                    "title": "Busiest projects",
                    "description": "Projects by number of sessions, with messages and bytes.",
                    "sql": (
                        "select s.project_key, max(s.cwd) as cwd, count(*) as sessions,"
                        " sum(s.message_count) as messages, sum(s.file_size) as bytes,"
                        " strftime('%Y-%m-%d %H:%M', max(coalesce(s.last_activity_ms,"
                        " s.mtime_ns / 1000000)) / 1000, 'unixepoch') as last_activity"
                        " from sessions s where s.archived = 0 and coalesce(s.is_sidechain, 0) = 0"
                        " group by s.project_key order by sessions desc, messages desc"
                    ),
                },
            },
        }
    },
}


def metadata_for(roots: Sequence[str | PathLike[str]]) -> dict[str, Any]:
    """:data:`METADATA` with the saved queries answering for these config dirs only, as
    every other answer does (``query.filters.roots_sql``): the index file may hold the
    rows of others. (Datasette's raw tables still show every row of the file.)"""
    from sessiondex.query.archives import sql_literals

    narrowed = f"s.archived = 0 and s.root in ({sql_literals(roots)})"
    out = copy.deepcopy(METADATA)
    for query in out["databases"][DATABASE_NAME]["queries"].values():
        assert "s.archived = 0" in query["sql"]
        query["sql"] = query["sql"].replace("s.archived = 0", narrowed)
    return out


def register_plugin() -> None:
    """Register the plugin module with Datasette's plugin manager (once per process)."""
    from datasette.plugins import pm

    from sessiondex.web import plugin

    if not pm.is_registered(plugin):
        pm.register(plugin, name="sessiondex")


def build(state: WebIndex, db_path: Path) -> Any:
    """A Datasette over ``db_path`` with the sessiondex pages (answered by ``state``)."""
    from datasette.app import Datasette
    from datasette.database import Database

    class SessiondexDatasette(Datasette):  # type: ignore[misc]  # untyped base
        """A Datasette whose plugin hooks find the WebIndex (``web_index``): it is set
        before Datasette's constructor builds its routes (for ``datasette.client``)."""

        def __init__(self, **kwargs: Any) -> None:
            self.sessiondex = state
            super().__init__(**kwargs)

    register_plugin()
    datasette = SessiondexDatasette(
        metadata=metadata_for(state.index.roots),
        template_dir=str(TEMPLATE_DIR),
        settings={"default_page_size": 50, "sql_time_limit_ms": 3000},
        memory=False,
    )

    def attach() -> None:
        if DATABASE_NAME in datasette.databases:
            datasette.remove_database(DATABASE_NAME)
        datasette.add_database(
            Database(datasette, path=str(db_path), is_mutable=True), DATABASE_NAME
        )

    attach()
    state.on_replaced = attach  # the file was replaced: new connections to the new one
    if "_memory" in datasette.databases:  # added because no file was passed above
        datasette.remove_database("_memory")
    return datasette
