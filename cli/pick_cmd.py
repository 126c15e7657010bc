"""``sessiondex pick``: choose a session interactively, print (or run) how to resume it."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from sessiondex.cli.app import CliError, app
from sessiondex.cli.options import cwd_option

EXIT_LEFT = 1  # left without choosing: like a search with no match
EXIT_USAGE = 2


def has_terminal() -> bool:
    """The picker reads keys from stdin and draws on stderr (stdout stays free for the
    chosen command, so ``eval "$(sessiondex pick)"`` works): both must be a terminal."""
    streams = (sys.stdin, sys.__stderr__)
    return all(s is not None and s.isatty() for s in streams)


def choose_session(
    cwd: str | None,
    *,
    scope: str = "worktree",
    query: str = "",
    all_kinds: bool = False,
    include_archived: bool = False,
) -> dict[str, Any]:
    """Open the picker; the chosen session object. Exits 2 without a terminal (one
    line, with what to use instead) and 1 when left without choosing."""
    if not has_terminal():
        # ``resume`` with no ARG opens the picker too: name the command the user ran.
        ctx = click.get_current_context(silent=True)
        if ctx is not None and ctx.info_name == "resume":
            line = "resume needs ARG without a terminal (an ID, a name or a path)"
        else:
            line = "pick needs a terminal"
        click.echo(
            f"Error: {line}; use `sessiondex list` or `sessiondex search QUERY` to find it",
            err=True,
        )
        sys.exit(EXIT_USAGE)
    from sessiondex.picker import textual_available

    if not textual_available():
        raise CliError("the picker needs Textual: pip install 'sessiondex[picker]'")
    from sessiondex.picker import run_picker
    from sessiondex.picker.model import PickerOptions
    from sessiondex.picker.rows import glyphs_for
    from sessiondex.transcripts.fspath import process_cwd

    state = app()
    state.warn_missing_roots()
    index = state.index
    db_path = state.database_path
    if not db_path.exists() and not state.no_refresh:
        click.echo("indexing your sessions for the first time ...", err=True)
        state.fresh_db()  # the picker opens the index read-only; it must exist
    elif not db_path.exists():
        raise CliError(f"no index at {db_path}; run `sessiondex index` first")
    else:
        # A newer sessiondex's index: the one line (IndexFromNewer, exit 1) here, not a
        # status line inside a picker that can show nothing from it.
        index.check_rules()
    encoding = getattr(sys.__stderr__, "encoding", None)
    glyphs = glyphs_for(encoding)
    if sys.__stderr__ is not None and hasattr(sys.__stderr__, "reconfigure"):
        # A Latin-1 terminal cannot show every title: '?' for what it lacks, never a
        # crash or an escape sequence spelled out.
        sys.__stderr__.reconfigure(errors="replace")
    options = PickerOptions(
        cwd=os.path.abspath(cwd) if cwd else process_cwd(),
        scope=scope,
        query=query,
        all_kinds=all_kinds,
        include_archived=include_archived,
    )
    index.close()  # the picker opens its own handles, one per thread
    chosen = run_picker(db_path, index.roots, options, refresh=not state.no_refresh, glyphs=glyphs)
    if chosen is None:
        sys.exit(EXIT_LEFT)
    return chosen


@click.command()
@cwd_option
@click.option(
    "--scope",
    type=click.Choice(["worktree", "repo", "all"]),
    default="worktree",
    show_default=True,
    help="Where to start (Ctrl+W and Ctrl+A switch while open). The default can be"
    " set in config.toml (sessiondex config).",
)
@click.option("--query", "-q", default="", metavar="TEXT", help="Start with this search.")
@click.option(
    "--all-kinds",
    is_flag=True,
    help="Also show -p/SDK, /loop, sidechain, team, daemon, superseded, picker-archived"
    " and __hidden-tagged sessions.",
)
@click.option(
    "--include-archived",
    is_flag=True,
    help="Also show sessions archived by sessiondex archive or cleanup --archive.",
)
@click.option("--exec", "run", is_flag=True, help="Run the resume command instead of printing it.")
@click.option("--print-id", is_flag=True, help="Print only the chosen session's ID.")
@click.pass_context
def pick(
    ctx: click.Context,
    cwd: str | None,
    scope: str,
    query: str,
    all_kinds: bool,
    include_archived: bool,
    run: bool,
    print_id: bool,
) -> None:
    """Pick a session interactively, with live full-text search.

    Type to search titles, message text, branches and PR URLs; Enter chooses, Esc
    clears the query and then leaves. Prints the chosen session's resume command
    (`cd DIR && claude --resume ID`), runs it with --exec, or prints its ID with
    --print-id. Leaving without choosing exits 1. ? shows every key.

    \b
    Example:
        sessiondex pick
        sessiondex pick --scope all --query "auth refactor"
        eval "$(sessiondex pick)"
        sessiondex pick --exec
    """
    from sessiondex.cli.options import configured_scope

    if run and print_id:
        raise click.UsageError("--exec and --print-id cannot be combined")
    chosen = choose_session(
        cwd,
        scope=configured_scope(scope),
        query=query,
        all_kinds=all_kinds,
        include_archived=include_archived,
    )
    if print_id:
        click.echo(chosen["session_id"])
    elif run:
        # `resume` runs it exactly as `sessiondex resume` would (directory, config dir);
        # looked up through the group, as the command table does, not imported.
        group = ctx.parent.command if ctx.parent is not None else None
        resume = group.get_command(ctx, "resume") if isinstance(group, click.Group) else None
        assert resume is not None
        ctx.invoke(resume, arg=chosen["file_path"], cwd=cwd, dry_run=False)
    else:
        click.echo(chosen["resume_command"])
