"""``sessiondex mcp``: serve the index to Claude Code over the Model Context Protocol."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

from sessiondex.cli.app import CliError, app

if TYPE_CHECKING:
    from sessiondex.index import Index


class AddressError(click.ClickException):
    """A refused --http address: one ``Error:`` line, exit 2 (a usage error)."""

    exit_code = 2


@click.command()
@click.option(
    "--cwd",
    type=click.Path(file_okay=False),
    default=None,
    help="Answer as if asked from DIR (default: the directory the server starts in, "
    "which is the project Claude Code runs in).",
)
@click.option(
    "--allow-writes",
    is_flag=True,
    help="Also offer rename_session and tag_session (they append the records Claude "
    "Code reads). Without it the server only reads.",
)
@click.option(
    "--http",
    "http",
    default=None,
    metavar="HOST:PORT",
    help="Serve streamable HTTP on HOST:PORT (a loopback address only, e.g. "
    "127.0.0.1:8765) instead of stdio.",
)
@click.option(
    "--max-chars",
    type=click.IntRange(min=2_000, max=1_000_000),
    default=20_000,
    show_default=True,
    help="Cap on every answer's size; longer answers are paged or cut with a marker.",
)
def mcp(cwd: str | None, allow_writes: bool, http: str | None, max_chars: int) -> None:
    """Serve the session history to Claude Code (or any MCP client) over the Model
    Context Protocol: tools to search, list, resolve and read past sessions and find the
    sessions behind a PR, and a session://{id} resource with a session's Markdown.

    Speaks MCP on stdin/stdout (logs go to stderr) unless --http. Answers come from the
    index, refreshed before an answer as the reading commands refresh whenever the
    server's own file-system watcher saw a transcript change (every time if it cannot
    watch; never while `sessiondex watch` keeps the index live); only transcripts under
    the config dirs are read. With --db postgresql://… the tools answer from the team
    store, read-only.

    \b
    Example:
        claude mcp add sessiondex -- sessiondex mcp
        claude mcp add sessiondex -- sessiondex mcp --allow-writes
        claude mcp add team -- sessiondex --db postgresql://db.internal/team mcp
        sessiondex mcp --http 127.0.0.1:8765
    """
    try:
        from sessiondex.mcp_server.server import parse_loopback, serve
        from sessiondex.mcp_server.service import Settings
        from sessiondex.transcripts.fspath import process_cwd
    except ImportError as exc:
        raise CliError(
            f"the MCP server needs the mcp extra ({exc.name or exc}): pip install 'sessiondex[mcp]'"
        ) from None
    address = None
    if http is not None:
        try:
            address = parse_loopback(http)
        except ValueError as exc:
            raise AddressError(str(exc)) from None
    if address is not None:
        # uvicorn binds inside the server's run and exits 3 with a log line on a taken
        # port; bound and released here first, that is serve's one-line error, exit 1.
        from sessiondex.cli.serve_cmd import _bind

        _bind(*address).close()
    state = app()
    if allow_writes and state.index.team_dsn is not None:
        raise click.UsageError(
            "--allow-writes renames and tags local transcripts; the team store"
            " (--db postgresql://…) is served read-only"
        )
    state.warn_missing_roots()
    settings = Settings(
        cwd=os.path.abspath(cwd) if cwd else process_cwd(),
        allow_writes=allow_writes,
        max_chars=max_chars,
    )

    def open_index() -> Index:
        from sessiondex.index import Index

        return Index(state.db_path, state.config_dirs or None, refresh=not state.no_refresh)

    group_type = _exception_group()
    try:
        serve(open_index, settings, address)
    except group_type as group:  # the MCP SDK's task group: stdio's writer failed
        raise _transport_failure(group, group_type) from None


def _exception_group() -> Any:
    """``BaseExceptionGroup``: built in from Python 3.11, else the backport anyio uses."""
    import builtins

    found = getattr(builtins, "BaseExceptionGroup", None)
    if found is None:  # pragma: no cover - Python 3.10
        import importlib

        found = importlib.import_module("exceptiongroup").BaseExceptionGroup
    return found


def _transport_failure(group: BaseException, group_type: Any) -> BaseException:
    """What a failure of the stdio transport is for the command group: a closed pipe
    (the client went away) click's quiet exit, any other write error one ``Error:``
    line (:class:`~sessiondex.cli.streams.StdoutFailed`), anything else itself."""
    from sessiondex.cli.streams import StdoutFailed

    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        exc = pending.pop()
        if isinstance(exc, group_type):
            pending.extend(exc.exceptions)
        else:
            leaves.append(exc)
    if not leaves or not all(isinstance(exc, OSError) for exc in leaves):
        return group
    for exc in leaves:
        if isinstance(exc, BrokenPipeError):
            return exc
    first = leaves[0]
    assert isinstance(first, OSError)
    return StdoutFailed(first.strerror or str(first))
