"""The team store (PostgreSQL) as the query layer's database handle.

The query functions take a handle with ``execute(sql, params)`` and write ``?``
placeholders against the index's relations (``sessions s``, ``branches``, ``pr_links``,
``pr_mentions``, ``messages`` keyed by ``session_rowid``). The store holds the same
derived fields under its own names (``session_ref``, ``mtime_ms``, ``config_dir``), so
this handle creates session-local views with the index's names over them: temporary
relations come first in PostgreSQL's search path, the planner inlines the views (the
store's indexes still serve), and nothing is written to the store. The connection is
then set read-only: answering never changes the store.

Full-text SQL, which no view can make portable, is :class:`query.dialect.PostgresDialect`.
Row-level access is not a feature: everyone with the DSN sees everything pushed.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sessiondex.query.dialect import PostgresDialect

# The index's relations over the store's tables (store/schema.py), under SQLite's names:
# name -> its SELECT, ``{t}`` standing for the store's schema. Put in front of every query
# as ``WITH name AS NOT MATERIALIZED (...)``, which PostgreSQL inlines as it would a
# view, and which a read-only connection (a replica, a role with
# default_transaction_read_only) can use: it refused even temporary views.
_RELATIONS = (
    # The weighted search vector apart, as FTS5's table is: ``s.*`` (every listing's
    # and the typo fallback's rows) must not carry it to the client.
    ("session_search", "SELECT id, search FROM {t}.sessions"),
    (
        "sessions",
        """SELECT
        id, config_dir AS root, project_key, session_id, file_path, cwd,
        custom_title, ai_title, agent_name, summary, last_prompt, first_prompt,
        prompt_fallback, first_command, seen_real_prompt, tag, git_branch,
        branches_text, pr_text, created_ms, last_activity_ms,
        coalesce(
            mtime_ms,
            (SELECT max(t.mtime_ms) FROM {t}.transcripts t WHERE t.session_ref = base.id),
            0
        ) * 1000000 AS mtime_ns,
        coalesce(file_size, 0) AS file_size, message_count, raw_message_count,
        entrypoint, is_sidechain, forked_from_session, forked_from_message,
        team_name, session_kind, continued_in,
        0 AS archived, 0 AS picker_archived, NULL::text AS object_json,
        source, origin_url, pushed_by_user, pushed_by_host, pushed_at
    FROM {t}.sessions base""",
    ),
    ("branches", "SELECT id, session_ref AS session_rowid, branch FROM {t}.branches"),
    *(
        (
            table,
            "SELECT id, session_ref AS session_rowid, transcript_ref, url, number,"
            f" repository, host, provider FROM {{t}}.{table}",
        )
        for table in ("pr_links", "pr_mentions")
    ),
    (
        "messages",
        "SELECT id, session_ref AS session_rowid, transcript_ref, uuid, type, ts_ms, text,"
        " tsv FROM {t}.messages",
    ),
)


def _relations_clause(schema: str) -> str:
    """The ``WITH`` list of :data:`_RELATIONS` over the tables in ``schema`` (quoted)."""
    return ", ".join(
        f"{name} AS NOT MATERIALIZED ({select.format(t=schema)})" for name, select in _RELATIONS
    )


@lru_cache(maxsize=256)
def _with_relations(sql: str, clause: str) -> str:
    """``sql`` with the relations in front (merged into a ``WITH`` it starts with)."""
    head = sql.lstrip()
    if head[:4].upper() == "WITH" and not head[4:5].isalnum():
        rest = head[4:].lstrip()
        if rest[:9].upper() == "RECURSIVE":
            return f"WITH RECURSIVE {clause}, {rest[9:].lstrip()}"
        return f"WITH {clause}, {rest}"
    return f"WITH {clause} {head}"


class NotATeamStore(RuntimeError):
    """The DSN's database holds no sessiondex team store, or one too old or too new to
    read."""


#: The store schema the queries read (store/schema.py SCHEMA_VERSION; query/ and store/
#: may not import each other, and tests/test_team_query.py checks they agree). A store
#: below it lacks columns the queries name: it is upgraded by a push or `store init`.
READ_SCHEMA_VERSION = 9


@lru_cache(maxsize=256)
def _to_pg(sql: str) -> str:
    """``?`` placeholders → psycopg's ``%s`` (a literal ``%`` doubled first)."""
    return sql.replace("%", "%%").replace("?", "%s")


class TeamDatabase:
    """A read-only connection to the team store, shaped like the index for the query
    layer (``dialect`` tells it which SQL fragments to use)."""

    def __init__(self, dsn: str) -> None:
        import psycopg

        # Made here, not at import: psycopg is the optional `team` extra, and every
        # command imports this module to tell a DSN from a path.
        self.dialect = PostgresDialect()
        from sessiondex.store.dsn import connection_string
        from sessiondex.store.messages import no_team_store, schema_too_new, schema_too_old

        self.dsn = dsn  # as given (the error messages never print it)
        self.conn = psycopg.connect(connection_string(dsn), autocommit=True)
        try:
            row = self.conn.execute(
                "SELECT to_regclass('sessiondex_migrations') IS NOT NULL"
                " AND to_regclass('sessions') IS NOT NULL"
            ).fetchone()
            if not row or not row[0]:
                raise NotATeamStore(no_team_store())
            row = self.conn.execute("SELECT max(version) FROM sessiondex_migrations").fetchone()
            if row is None or row[0] is None or row[0] < READ_SCHEMA_VERSION:
                version = row[0] if row else None
                raise NotATeamStore(schema_too_old(version, READ_SCHEMA_VERSION))
            if row[0] > READ_SCHEMA_VERSION:  # its tables may differ from what is read here
                raise NotATeamStore(schema_too_new(row[0], READ_SCHEMA_VERSION))
            row = self.conn.execute(
                "SELECT quote_ident(n.nspname) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = 'sessions'::regclass"
            ).fetchone()
            assert row is not None
            self._relations = _relations_clause(str(row[0]))
            self.conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        except BaseException:
            self.conn.close()
            raise

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run ``sql`` (``?`` placeholders); the cursor has ``description``,
        ``fetchone``, ``fetchall`` and iterates, as sqlite3's does."""
        return self.conn.execute(_to_pg(_with_relations(sql, self._relations)), list(params))

    def entries(self, session_ref: int) -> list[tuple[str, str]]:
        """``(subpath, entry JSON text)`` of a session's stored transcripts in append
        order, main transcript first: what ``show`` renders instead of a file."""
        rows = self.conn.execute(
            "SELECT t.subpath, e.entry::text FROM transcripts t"
            " JOIN entries e ON e.transcript_ref = t.id"
            " WHERE t.session_ref = %s ORDER BY t.subpath, e.id",
            [session_ref],
        ).fetchall()
        return [(str(subpath), str(text)) for subpath, text in rows]

    def close(self) -> None:
        self.conn.close()
