"""Reading commands: list, search, from-pr, resolve, continue, resume."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from sessiondex.cli.app import EXIT_AMBIGUOUS, BareError, CliError, app
from sessiondex.cli.options import build_filters, cwd_option, run_filters, scope_options
from sessiondex.cli.output import (
    HIGHLIGHT,
    chosen_format,
    clean,
    clean_line,
    emit,
    format_options,
)


def echo_notes(notes: list[str]) -> None:
    """Resolution notes (they quote directories and titles) on stderr, cleaned."""
    for note in notes:
        click.echo(clean_line(note), err=True)


def resolve_or_exit(
    arg: str,
    cwd: str | None,
    fmt: str = "table",
    *,
    for_write: bool = False,
    include_archived: bool = False,
) -> Any:
    """Resolve ARG for any command; not found → exit 1, ambiguous → candidates, exit 3."""
    from sessiondex.query.resolve import Ambiguous, NotFound, resolve

    state = app()
    db = state.reading_db()
    try:
        return resolve(
            db,
            arg,
            cwd=cwd,
            roots=state.roots,
            for_write=for_write,
            include_archived=include_archived,
        )
    except NotFound as exc:
        # The message quotes ARG and the closest titles: transcript text, cleaned.
        if str(exc).startswith("No conversation found with session ID"):
            raise BareError(clean(str(exc))) from None
        raise CliError(clean(str(exc))) from None
    except Ambiguous as exc:
        click.echo(
            f"Error: {clean(str(exc))}; say which one (candidates below, newest first)", err=True
        )
        emit(exc.candidates, fmt if fmt != "table" else "table")
        sys.exit(EXIT_AMBIGUOUS)


@click.command("list")
@scope_options()
@format_options
def list_cmd(fmt: str, as_json: bool, **options: Any) -> None:
    """List sessions like the /resume picker, newest activity first.

    Sidechain, metadata-only, -p/SDK and /loop sessions are hidden unless
    --all-kinds. Forks are shown right after the session they came from.

    \b
    Example:
        sessiondex list
        sessiondex list --scope repo --current-branch --since 7d
        sessiondex list --scope all --json | jq '.[].title'
    """
    from sessiondex.query.listing import list_sessions

    filters = build_filters(**options)
    db = app().reading_db()
    rows = run_filters(lambda: list_sessions(db, filters))
    emit(
        rows,
        chosen_format(fmt, as_json),
        empty_message="No sessions in this scope (try --scope repo or --scope all).",
    )
    _warn_expiring(db, rows)


def _warn_expiring(db: Any, rows: list[dict[str, Any]]) -> None:
    """A stderr line when Claude Code's retention sweep will soon delete listed sessions."""
    try:
        from sessiondex.query.cleanup import expiring_soon
    except ImportError:
        return
    count = expiring_soon(db, [r["file_path"] for r in rows], cwd=None, roots=app().roots)
    if count:
        click.echo(
            f"warning: {count} listed session(s) will be deleted by Claude Code's "
            "cleanup within 3 days; see `sessiondex cleanup`",
            err=True,
        )


@click.command()
@click.argument("query")
@scope_options(default_limit=50)
@click.option("--raw", is_flag=True, help="Pass QUERY to FTS5 as is (AND, OR, NEAR, prefix*).")
@format_options
def search(query: str, raw: bool, fmt: str, as_json: bool, **options: Any) -> None:
    """Full-text search over titles, names, tags, branches, PR links, prompts and
    message text; or, given a PR/MR URL, the sessions linked to that PR.

    Words are matched as typed (quotes, -, *, : are plain text) unless --raw. When
    nothing matches, close titles and branches are offered (typo tolerance).

    \b
    Example:
        sessiondex search "auth refactor" --scope all
        sessiondex search https://github.com/acme/shop/pull/42
        sessiondex search --raw 'auth NEAR/5 token' --json
    """
    from sessiondex.query.search import SearchSyntaxError
    from sessiondex.query.search import search as run_search

    filters = build_filters(**options)
    db = app().reading_db()
    fmt = chosen_format(fmt, as_json)
    highlight = fmt == "table" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    # Placeholders, not colour codes: the snippet is transcript text and is cleaned
    # before the placeholders become colour (cli/output.py).
    markers = HIGHLIGHT if highlight else ("[", "]")
    try:
        rows = run_filters(lambda: run_search(db, query, filters, raw=raw, markers=markers))
    except SearchSyntaxError as exc:
        raise CliError(clean(str(exc))) from None
    emit(rows, fmt, extra_columns=("snippet",), empty_message="No matches.", highlight=highlight)


@click.command("from-pr")
@click.argument("pr", required=False)
@scope_options(default_scope="repo")
@format_options
def from_pr(pr: str | None, fmt: str, as_json: bool, **options: Any) -> None:
    """Sessions linked to a pull/merge request, by number or URL.

    A number matches PR links in this repository's worktrees (only this repository's
    PRs when its origin remote is known); a URL matches its normalized form in every
    project. Without PR: every session in scope that has a PR link.

    \b
    Example:
        sessiondex from-pr 42
        sessiondex from-pr https://gitlab.com/acme/api/-/merge_requests/7
    """
    from sessiondex.query.prs import from_pr as run_from_pr

    filters = build_filters(**options)
    db = app().reading_db()
    rows = run_filters(lambda: run_from_pr(db, pr, filters))
    emit(rows, chosen_format(fmt, as_json), empty_message="No session is linked to that PR.")


@click.command()
@click.argument("arg")
@cwd_option
@click.option("--include-archived", is_flag=True, help="Also resolve archived sessions.")
@format_options
def resolve(arg: str, cwd: str | None, include_archived: bool, fmt: str, as_json: bool) -> None:
    """Find one session from an ID, a name, a transcript path or an ID prefix.

    Order: transcript path, full session ID (this repository first, then another
    project only if exactly one holds it), exact name (custom or AI title, any
    case), then an ID prefix of 8+ characters. Exit 1 if nothing matches, 3 with the
    candidates if several do.

    \b
    Example:
        sessiondex resolve 3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b
        sessiondex resolve "auth refactor" --json
        sessiondex resolve 3f2a9c1e
    """
    fmt = chosen_format(fmt, as_json)
    found = resolve_or_exit(arg, cwd, fmt, include_archived=include_archived)
    echo_notes(found.notes)
    obj = found.as_object()
    if fmt == "table":
        emit([obj], fmt)
        click.echo(clean(f"matched by {found.matched_by}: {obj['resume_command']}"))
    elif fmt == "json":
        from sessiondex.cli.output import dumps

        click.echo(dumps(obj, indent=True))
    else:
        emit([obj], fmt)


@click.command("continue")
@cwd_option
@click.option(
    "--print-mode",
    is_flag=True,
    help="Also consider -p/SDK and /loop sessions, as `claude -p --continue` does.",
)
@format_options
def continue_cmd(cwd: str | None, print_mode: bool, fmt: str, as_json: bool) -> None:
    """The session `claude --continue` would open in this directory.

    \b
    Example:
        sessiondex continue
        sessiondex continue --cwd ~/src/shop --json
    """
    from sessiondex.query.resolve import NotFound, continue_session

    db = app().reading_db()
    try:
        obj = continue_session(db, cwd=cwd, print_mode=print_mode)
    except NotFound as exc:
        raise CliError(clean(str(exc))) from None
    fmt = chosen_format(fmt, as_json)
    if fmt == "json":
        from sessiondex.cli.output import dumps

        click.echo(dumps(obj, indent=True))
    else:
        emit([obj], fmt)


@click.command()
@click.argument("arg", required=False)
@cwd_option
@click.option("--dry-run", is_flag=True, help="Print the command instead of running it.")
def resume(arg: str | None, cwd: str | None, dry_run: bool) -> None:
    """Resolve ARG, then run `claude --resume <id>` in the session's directory.

    If the recorded directory no longer exists, the current one is used (and said).
    Without ARG, on a terminal, the picker (`sessiondex pick`) chooses the session.

    \b
    Example:
        sessiondex resume "auth refactor"
        sessiondex resume 3f2a9c1e --dry-run
        sessiondex resume
    """
    import shlex

    if arg is None:
        from sessiondex.cli.pick_cmd import choose_session

        arg = choose_session(cwd)["file_path"]

    found = resolve_or_exit(arg, cwd)
    session = found.session
    workdir = session.get("cwd")
    if not workdir or not os.path.isdir(workdir):
        fallback = os.path.abspath(cwd) if cwd else os.getcwd()
        if workdir:
            click.echo(
                clean_line(f"note: {workdir} no longer exists; resuming from {fallback}"),
                err=True,
            )
        workdir = fallback
    command = ["claude", "--resume", session["session_id"]]
    if dry_run:
        # Shell-quoted, then cleaned: a directory holding control characters is shown
        # with them made visible (to paste, use resolve --json's resume_command).
        click.echo(clean(f"cd {shlex.quote(workdir)} && {shlex.join(command)}"))
        return
    import shutil
    import subprocess

    executable = shutil.which("claude")
    if executable is None:
        raise CliError(
            clean(
                "the `claude` executable is not on PATH; install Claude Code or run: "
                f"cd {shlex.quote(workdir)} && {shlex.join(command)}"
            )
        )
    sys.stdout.flush()
    completed = subprocess.run([executable, *command[1:]], cwd=workdir, check=False)
    sys.exit(completed.returncode)
