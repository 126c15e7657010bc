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
def _store_errors(dsn: str, after: str = "") -> Iterator[None]:
    """The store's failures as one ``Error:`` line without the DSN's password: a server
    down or refusing, a malformed DSN (``ValueError``), a schema too old or too new, a
    database that holds no team store. ``after`` ends the line (what the failure left
    undone)."""
    import psycopg

    from sessiondex.query.teamdb import NotATeamStore
    from sessiondex.store.dsn import error_line, hide_password
    from sessiondex.store.schema import SchemaTooNew, SchemaTooOld

    try:
        yield
    except (psycopg.Error, SchemaTooNew, SchemaTooOld, NotATeamStore, ValueError) as exc:
        raise CliError(f"team store {hide_password(dsn)}: {error_line(exc, dsn)}{after}") from None


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
@click.option(
    "--project",
    "projects",
    multiple=True,
    metavar="KEY",
    help="With a whole session ID that several projects hold: delete the copy of project"
    " KEY (its folder name, as the error names it, or the directory it was started in,"
    " as the candidates show it). Repeatable.",
)
@click.option(
    "--all-copies",
    is_flag=True,
    help="With a whole session ID that several projects hold: delete every copy, in one"
    " transaction (all or none).",
)
@cwd_option
def delete_cmd(
    dsn: str, arg: str, yes: bool, projects: tuple[str, ...], all_copies: bool, cwd: str | None
) -> None:
    """Delete session ARG from the team store in DSN, for good.

    A whole session ID names every copy the store holds: one without a message too,
    and copies in several projects (a transcript copied to another directory), which
    are listed: say which with --project, or --all-copies. A name or 8 or more of the
    ID's first hex digits are read as `sessiondex --db DSN show ARG` reads them, among
    the sessions of the current repository (or --cwd's). The session goes with its
    subagents and everything derived from it, and leaves a tombstone: no push sends it
    again (`push --resend-deleted ID` does, on purpose). A session deleted already is
    said so, with when. The same delete as the Agent SDK's
    PostgresSessionStore.delete. Asks first unless --yes; without a terminal to ask on,
    --yes is required. Transcripts on anyone's machine are not touched.

    \b
    Example:
        sessiondex store delete postgresql://db.internal/team 3f2a9c1e
        sessiondex store delete postgresql://db.internal/team 3F2A9C1E-0B7D-4C55-9E11-2A4B6C8D0E1F --yes
        sessiondex store delete postgresql://db.internal/team 3f2a9c1e-0b7d-4c55-9e11-2a4b6c8d0e1f --project ~/src/shop
    """
    _checked_dsn(dsn)
    if projects and all_copies:
        raise click.UsageError("--all-copies and --project: give one of them")
    from sessiondex.cli.mutate_cmds import confirm_delete
    from sessiondex.cli.query_cmds import resolved_or_exit
    from sessiondex.index import Index
    from sessiondex.store.dsn import hide_password

    with _store_errors(dsn), Index(dsn, refresh=False) as index:
        # Read-only: a store too old to read is said so, not migrated, before anything
        # is asked or deleted.
        whole_id, sessions = resolved_or_exit(index, lambda i: _named(i, dsn, arg, cwd))
    if not whole_id and (projects or all_copies):
        raise click.UsageError(
            f"--project and --all-copies choose among the copies of a whole session ID;"
            f" {arg!r} names one session"
        )
    if whole_id:
        sessions = _chosen_copies(sessions, projects, all_copies)
    first = sessions[0]
    session_id = str(first["session_id"])
    keys = [str(s["project_key"]) for s in sessions]
    where = hide_password(dsn)
    which = (
        f"{first['title']!r} ({session_id}, project {keys[0]})"
        if len(keys) == 1
        else f"{session_id} from {len(keys)} projects ({', '.join(keys)})"
    )
    confirm_delete(f"Delete session {which} and its subagents from the team store {where}?", yes)

    async def delete() -> None:
        from sessiondex.store.sdk_store import PostgresSessionStore

        async with PostgresSessionStore(dsn, max_size=1) as team:
            await team.delete_all(
                {"project_key": str(s["project_key"]), "session_id": str(s["session_id"])}
                for s in sessions
            )

    # One transaction for every chosen copy: a failure half way deletes none of them.
    with _store_errors(dsn, after="; no copy was deleted" if len(sessions) > 1 else ""):
        _run(delete())
    for session in sessions:
        session_id, project_key = str(session["session_id"]), str(session["project_key"])
        click.echo(
            clean_line(
                f"Deleted session {session_id} (project {project_key}) from the team store;"
                f" push will not send it again (push --resend-deleted {session_id} would)"
            )
        )


def _named(index: Any, dsn: str, arg: str, cwd: str | None) -> tuple[bool, list[dict[str, Any]]]:
    """What ARG names in the store: ``(True, copies)`` for a whole session ID (every
    stored copy: ``Index.copies``), ``(False, [session])`` for a name or prefix, read as
    the reading commands read it. ``NotFound`` for none: for a session deleted already,
    one that says so (:func:`_deleted_already`)."""
    from sessiondex.query.resolve import NotFound, not_found_id
    from sessiondex.transcripts.keys import is_session_id

    if is_session_id(arg):
        copies = index.copies(arg)
        if copies:
            return True, copies
        raise _deleted_already(dsn, arg) or not_found_id(arg)
    try:
        found = index.resolve(arg, cwd=cwd)
    except NotFound as exc:
        # An ID an SDK app gave (not a UUID) that no single copy with messages holds.
        copies = index.copies(arg)
        if copies:
            return True, copies
        raise _deleted_already(dsn, arg) or exc from None
    if found.row.get("id") is None or int(found.row["id"]) < 0:  # read from a local file
        raise NotFound(
            f"{arg} is a transcript on this machine, not a session of the team"
            " store: give the session's ID"
        )
    return False, [found.session]


def _deleted_already(dsn: str, arg: str) -> Exception | None:
    """A ``NotFound`` that says the session ARG names was deleted from the store: when,
    from which project, by whom (as far as its tombstones know), and where the
    tombstones are listed; None if ARG names no deleted session."""
    from sessiondex.query.resolve import NotFound
    from sessiondex.store.tombstones import deleted_session

    tombstones = _on_connection(dsn, lambda conn: deleted_session(conn, arg))
    if not tombstones:
        return None
    each = "; ".join(
        f"project {t['project_key']}"
        + (f", on {_minute(t['deleted_at'])}" if len(tombstones) > 1 else "")
        + (f", by {by}" if (by := _by(t)) else "")
        for t in tombstones
    )
    when = "" if len(tombstones) > 1 else f" on {_minute(tombstones[0]['deleted_at'])}"
    return NotFound(
        f"session {tombstones[0]['session_id']} was deleted from the team store{when}"
        f" ({each}); `sessiondex store deleted DSN` lists what was deleted"
    )


def _chosen_copies(
    copies: list[dict[str, Any]], projects: tuple[str, ...], all_copies: bool
) -> list[dict[str, Any]]:
    """The copies of a whole ID to delete: the only one, every one with --all-copies, or
    those of the --project values (each must name one). Several and no choice: the
    candidates, exit 3."""
    from sessiondex.transcripts.keys import project_keys_named

    session_id = copies[0]["session_id"]
    held = sorted({str(c["project_key"]) for c in copies})
    if projects:
        chosen: list[dict[str, Any]] = []
        for value in projects:
            keys = project_keys_named(value)
            these = [c for c in copies if c["project_key"] in keys]
            if not these:
                raise CliError(
                    f"--project {value}: session {session_id} is in the team store in"
                    f" project{'s' if len(held) > 1 else ''} {', '.join(held)} only"
                )
            chosen += [c for c in these if c not in chosen]
        return chosen
    if len(copies) == 1 or all_copies:
        return copies
    from sessiondex.cli.app import EXIT_AMBIGUOUS
    from sessiondex.cli.output import emit

    click.echo(
        clean_line(
            f"Error: session {session_id} is in {len(held)} projects of the team store"
            f" ({', '.join(held)}): say which with --project KEY (or DIR), or --all-copies"
            " (candidates below, newest first)"
        ),
        err=True,
    )
    emit(copies, "table", project=True)
    raise SystemExit(EXIT_AMBIGUOUS)


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
    session = str(row["session_id"]) + (f" {row['subpath']}" if row["subpath"] else "")
    return [_minute(row["deleted_at"]), session, str(row["project_key"]), _by(row)]


def _minute(at: str | None) -> str:
    """An ISO-8601 UTC time to the minute, as people read it: ``2026-11-30 09:15Z``."""
    return f"{at[:10]} {at[11:16]}Z" if at else ""


def _by(row: dict[str, Any]) -> str:
    """Who deleted, ``user@host``, as far as the tombstone knows (may be empty)."""
    return "@".join(part for part in (row["deleted_by_user"], row["deleted_by_host"]) if part)
