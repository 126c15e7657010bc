"""``store``: the PostgreSQL team store's schema, and what was deleted from it.

These commands name the store by their DSN argument, not by ``--db``: they manage the
store, they do not answer from it as the reading commands do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from sessiondex.cli.app import CliError
from sessiondex.cli.options import cwd_option
from sessiondex.cli.output import clean_line, report_formats

T = TypeVar("T")


@click.group()
def store() -> None:
    """Manage the PostgreSQL team store.

    The schema is created and migrated on first connect by push and by the SDK's
    PostgresSessionStore; "store init" runs the same migrations by hand, for DBAs who
    apply schema changes themselves. "store delete" removes a session from the store
    for good (push does not send it again); "store deleted" lists what was removed.

    \b
    Example:
        sessiondex store init postgresql://db.internal/team
        sessiondex store delete postgresql://db.internal/team 3f2a9c1e
        sessiondex store deleted postgresql://db.internal/team
    """


def _checked_dsn(dsn: str) -> None:
    """Exit 2 for a DSN that is no ``postgresql://`` URL, 1 (the install line) without
    psycopg: before anything connects."""
    from sessiondex.store import MissingDriver, require_driver
    from sessiondex.store.dsn import is_postgres_dsn

    if not is_postgres_dsn(dsn):
        raise click.BadParameter("expected a postgresql:// URL", param_hint="DSN")
    try:
        require_driver()
    except MissingDriver as exc:
        raise CliError(str(exc)) from None


@contextmanager
def _store_errors(dsn: str) -> Iterator[None]:
    """The store's failures as one ``Error:`` line without the DSN's password: a server
    down or refusing, a malformed DSN (``ValueError``), a schema too old or too new, a
    database that holds no team store."""
    import psycopg

    from sessiondex.query.teamdb import NotATeamStore
    from sessiondex.store.dsn import error_line, hide_password
    from sessiondex.store.schema import SchemaTooNew, SchemaTooOld

    try:
        yield
    except (psycopg.Error, SchemaTooNew, SchemaTooOld, NotATeamStore, ValueError) as exc:
        raise CliError(f"team store {hide_password(dsn)}: {error_line(exc, dsn)}") from None


def _on_connection(dsn: str, work: Any) -> Any:
    """``await work(conn)`` on one autocommit connection to ``dsn``."""

    async def run() -> Any:
        import psycopg

        from sessiondex.store.dsn import connection_string

        target = connection_string(dsn)
        async with await psycopg.AsyncConnection.connect(target, autocommit=True) as conn:
            return await work(conn)

    return _run(run())


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


@store.command()
@click.argument("dsn")
def init(dsn: str) -> None:
    """Create or migrate the team store's schema in DSN.

    Safe to run again and from several places at once (an advisory lock serializes
    it); prints the schema version and the migrations applied.

    \b
    Example:
        sessiondex store init postgresql://db.internal/team
    """
    _checked_dsn(dsn)
    from sessiondex.store.schema import SCHEMA_VERSION, migrate

    async def applied_names(conn: Any) -> list[str]:
        return [f"{m.version:03d} {m.name}" for m in await migrate(conn)]

    with _store_errors(dsn):
        applied = _on_connection(dsn, applied_names)
    for name in applied:
        click.echo(f"applied {name}")
    click.echo(f"schema at version {SCHEMA_VERSION} ({'migrated' if applied else 'up to date'})")


@store.command("delete")
@click.argument("dsn")
@click.argument("arg")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@cwd_option
def delete_cmd(dsn: str, arg: str, yes: bool, cwd: str | None) -> None:
    """Delete session ARG from the team store in DSN, for good.

    ARG is read as `sessiondex --db DSN show ARG` reads it: a session ID in any case,
    8 or more of its first hex digits, or its name (prefixes and names among the
    sessions of the current repository, or --cwd's). The session goes with its
    subagents and everything derived from it, and leaves a tombstone: no push sends it
    again (`push --resend-deleted ID` does, on purpose). The same delete as the Agent
    SDK's PostgresSessionStore.delete. Asks first unless --yes; without a terminal to
    ask on, --yes is required. Transcripts on anyone's machine are not touched.

    \b
    Example:
        sessiondex store delete postgresql://db.internal/team 3f2a9c1e
        sessiondex store delete postgresql://db.internal/team 3F2A9C1E-0B7D-4C55-9E11-2A4B6C8D0E1F --yes
    """
    _checked_dsn(dsn)
    from sessiondex.cli.mutate_cmds import confirm_delete
    from sessiondex.cli.query_cmds import resolved_or_exit
    from sessiondex.index import Index
    from sessiondex.store.dsn import hide_password

    with _store_errors(dsn), Index(dsn, refresh=False) as index:
        # The reading commands' resolution over the store (read-only: a store too old
        # to read is said so, not migrated, before anything is asked or deleted).
        found = resolved_or_exit(index, lambda i: i.resolve(arg, cwd=cwd))
    if found.row.get("id") is None or int(found.row["id"]) < 0:  # read from a local file
        raise CliError(
            clean_line(
                f"{arg} is a transcript on this machine, not a session of the team"
                " store: give the session's ID"
            )
        )
    session = found.session
    session_id, project_key = str(session["session_id"]), str(session["project_key"])
    where = hide_password(dsn)
    confirm_delete(
        f"Delete session {session['title']!r} ({session_id}, project {project_key})"
        f" and its subagents from the team store {where}?",
        yes,
    )

    async def delete() -> None:
        from sessiondex.store.sdk_store import PostgresSessionStore

        async with PostgresSessionStore(dsn, max_size=1) as team:
            await team.delete({"project_key": project_key, "session_id": session_id})

    with _store_errors(dsn):
        _run(delete())
    click.echo(
        clean_line(
            f"Deleted session {session_id} (project {project_key}) from the team store;"
            f" push will not send it again (push --resend-deleted {session_id} would)"
        )
    )


@store.command("deleted")
@click.argument("dsn")
@report_formats
def deleted_cmd(dsn: str, fmt: str, as_json: bool) -> None:
    """List the sessions deleted from the team store in DSN, newest first.

    Each is a tombstone that keeps push from sending the session again: its ID, its
    project, when it was deleted, and by whom (user and host, when the deleting
    process knew them). A subpath names a single subagent transcript deleted through
    the SDK; empty, the whole session. Reads only: a store too old to hold tombstones
    is reported, not migrated.

    \b
    Example:
        sessiondex store deleted postgresql://db.internal/team
        sessiondex store deleted postgresql://db.internal/team --format csv > deleted.csv
    """
    _checked_dsn(dsn)
    from sessiondex.cli.output import emit, render_table
    from sessiondex.store.tombstones import TOMBSTONE_FIELDS, list_tombstones

    with _store_errors(dsn):
        rows = _on_connection(dsn, list_tombstones)
    if fmt != "table":
        emit(rows, fmt, fields=TOMBSTONE_FIELDS)
        return
    if not rows:
        click.echo("No session has been deleted from the team store.", err=True)
        return
    click.echo(
        render_table(
            [_tombstone_cells(row) for row in rows],
            ("deleted", "session", "project", "by"),
            flexible=2,
        )
    )


def _tombstone_cells(row: dict[str, Any]) -> list[str]:
    """A tombstone as table cells: the time to the minute (UTC), the session ID with the
    subagent transcript it stands for if only that, ``user@host``."""
    at = str(row["deleted_at"] or "")
    when = f"{at[:10]} {at[11:16]}Z" if at else ""
    session = str(row["session_id"]) + (f" {row['subpath']}" if row["subpath"] else "")
    user, host = row["deleted_by_user"], row["deleted_by_host"]
    by = "@".join(part for part in (user, host) if part)
    return [when, session, str(row["project_key"]), by]
