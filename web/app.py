"""A Datasette instance over the index, with the sessiondex plugin.

The index is attached read-only: Datasette's connections open it ``mode=ro``, which
SQLite enforces (a write fails), and which — unlike ``immutable=1`` — reads the WAL, so
a refresh by the Index (or by ``sessiondex watch``) shows on the next request (in a
folder that cannot be written, where no ``-shm`` can be made and ``mode=ro`` cannot open
the file, it is attached ``immutable=1``, as the Index reads it there). Datasette
only writes to a database when a plugin or a canned query with ``write: true`` asks;
there is neither here, and our own pages answer GET only.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from sessiondex.web.plugin import DATABASE_NAME, TEMPLATE_DIR
from sessiondex.web.state import WebIndex

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
            # The saved queries are the query layer's (query/saved.py).
        }
    },
}


#: Datasette's bounds on SQL run through it (``?sql=``, its table pages, the canned
#: queries): anything it runs is cut off after this long with its "SQL query took too
#: long" error (``?_timelimit=`` may ask for less, never more). Three times Datasette's
#: default: a full-text query over a large index can take over a second, and serve is
#: one person's, on loopback by default. One statement step no time limit sees (one
#: huge value built at once) is bounded by the length limit on Datasette's connections
#: (``web/plugin.py`` ``prepare_connection``).
SQL_TIME_LIMIT_MS = 3000
#: At most this many rows from one query (Datasette's default, said here).
MAX_RETURNED_ROWS = 1000
SETTINGS: dict[str, Any] = {
    "default_page_size": 50,
    "sql_time_limit_ms": SQL_TIME_LIMIT_MS,
    "max_returned_rows": MAX_RETURNED_ROWS,
}


def metadata_for(roots: Sequence[str | PathLike[str]]) -> dict[str, Any]:
    """:data:`METADATA` with the saved queries (``query.saved``) answering for these
    config dirs only. (Datasette's raw tables still show every row of the file.)"""
    from sessiondex.query.saved import saved_queries

    out = copy.deepcopy(METADATA)
    out["databases"][DATABASE_NAME]["queries"] = saved_queries(roots)
    return out


def register_plugin() -> None:
    """Register the plugin module with Datasette's plugin manager (once per process)."""
    from datasette.plugins import pm

    from sessiondex.web import plugin

    if not pm.is_registered(plugin):
        pm.register(plugin, name="sessiondex")


def _no_rich_tracebacks() -> None:
    """Datasette's default error handler prints every exception with ``rich`` (when it
    is installed: Textual, the picker's, brings it), also the not-found exception it
    makes for a path no route takes (``/a/b/c/d/e/f``, ``//x``) and never raised:
    outside an ``except`` block, rich raises, and the request ended in uvicorn's bare
    500 without the security headers. Without rich, Datasette answers its 404 page and
    still prints a real failure's traceback (``traceback.print_exc``); no locals of a
    request reach the server's log either."""
    import datasette.handle_exception as default_handler

    default_handler.rich = None


def _index_database() -> Any:
    """Datasette's ``Database`` whose query threads drop a connection another
    ``Database`` of the same name opened: the one attached before (``build``'s
    ``attach``: the file was replaced, or its folder became writable and it is read
    ``mode=ro`` now instead of ``immutable=1``).

    Datasette keeps one connection per query thread and database *name*
    (``datasette.database.connections``), so after the re-attach its tables, SQL and
    canned queries went on reading the old file, or the file as it was at the start
    through an immutable handle, until serve was restarted. The stale connection is
    closed on its own thread, where no query can be running on it then."""
    from datasette.database import Database, connections

    class IndexDatabase(Database):  # type: ignore[misc]  # untyped base
        async def execute_fn(self, fn: Any) -> Any:
            if self.ds.executor is None:  # not threaded: one connection, ours
                return await super().execute_fn(fn)

            def in_thread() -> Any:
                conn = getattr(connections, self.name, None)
                if conn is not None and not any(c is conn for c in self._all_file_connections):
                    conn.close()
                    conn = None
                if conn is None:
                    conn = self.connect()
                    self.ds._prepare_connection(conn, self.name)
                    setattr(connections, self.name, conn)
                return fn(conn)

            return await asyncio.get_running_loop().run_in_executor(self.ds.executor, in_thread)

    return IndexDatabase


def build(state: WebIndex, db_path: Path) -> Any:
    """A Datasette over ``db_path`` with the sessiondex pages (answered by ``state``)."""
    from datasette.app import Datasette

    index_database = _index_database()

    class SessiondexDatasette(Datasette):  # type: ignore[misc]  # untyped base
        """A Datasette whose plugin hooks find the WebIndex (``web_index``): it is set
        before Datasette's constructor builds its routes (for ``datasette.client``)."""

        def __init__(self, **kwargs: Any) -> None:
            self.sessiondex = state
            super().__init__(**kwargs)

    register_plugin()
    _no_rich_tracebacks()
    datasette = SessiondexDatasette(
        metadata=metadata_for(state.index.roots),
        template_dir=str(TEMPLATE_DIR),
        settings=SETTINGS,
        memory=False,
    )

    def attach() -> None:
        if DATABASE_NAME in datasette.databases:
            datasette.remove_database(DATABASE_NAME)
        # mode=ro, so each refresh shows; where the Index reads the file as immutable
        # (a read-only folder: mode=ro cannot open it there), immutable=1 as well.
        datasette.add_database(
            index_database(datasette, path=str(db_path), is_mutable=not state.read_immutable),
            DATABASE_NAME,
        )

    attach()
    state.on_replaced = attach  # the file was replaced: new connections to the new one
    if "_memory" in datasette.databases:  # added because no file was passed above
        datasette.remove_database("_memory")
    return datasette
