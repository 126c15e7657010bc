"""``store``: the PostgreSQL team store's schema."""

from __future__ import annotations

import click

from sessiondex.cli.app import CliError


@click.group()
def store() -> None:
    """Manage the PostgreSQL team store.

    The schema is created and migrated on first connect by push and by the SDK's
    PostgresSessionStore; "store init" runs the same migrations by hand, for DBAs who
    apply schema changes themselves.

    \b
    Example:
        sessiondex store init postgresql://db.internal/team
    """


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
    import asyncio

    from sessiondex.store import MissingDriver, require_driver
    from sessiondex.store.dsn import (
        connection_string,
        error_line,
        hide_password,
        is_postgres_dsn,
    )

    if not is_postgres_dsn(dsn):
        raise click.BadParameter("expected a postgresql:// URL", param_hint="DSN")
    try:
        require_driver()
    except MissingDriver as exc:
        raise CliError(str(exc)) from None
    import psycopg

    from sessiondex.store.schema import SCHEMA_VERSION, SchemaTooNew, migrate

    async def run() -> list[str]:
        target = connection_string(dsn)
        async with await psycopg.AsyncConnection.connect(target, autocommit=True) as conn:
            return [f"{m.version:03d} {m.name}" for m in await migrate(conn)]

    try:
        applied = asyncio.run(run())
    except (psycopg.Error, SchemaTooNew, ValueError) as exc:  # ValueError: a malformed DSN
        raise CliError(f"team store {hide_password(dsn)}: {error_line(exc, dsn)}") from None
    for name in applied:
        click.echo(f"applied {name}")
    click.echo(f"schema at version {SCHEMA_VERSION} ({'migrated' if applied else 'up to date'})")
