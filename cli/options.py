"""Options shared by the commands: scope and filters (list, search, from-pr), --cwd, and
the check of output paths the user names (export -o, cleanup --archive)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from sessiondex.cli.app import CliError, app


def cwd_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--cwd",
        type=click.Path(file_okay=False),
        default=None,
        help="Act as if run in DIR (default: the current directory).",
    )(func)


def scope_options(
    default_scope: str = "worktree", default_limit: int | None = None
) -> Callable[..., Any]:
    """Scope, branch, since, kinds and limit options; the defaults differ per command."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        return _apply_scope_options(func, default_scope, default_limit)

    return decorate


def _apply_scope_options(
    func: Callable[..., Any], default_scope: str, default_limit: int | None
) -> Callable[..., Any]:
    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.option(
            "--scope",
            type=click.Choice(["worktree", "repo", "all"]),
            default=default_scope,
            show_default=True,
            help="worktree: this directory's project; repo: every git worktree "
            "of its repository; all: every project. The default can be set in "
            "config.toml (sessiondex config).",
        ),
        click.option(
            "--branch",
            default=None,
            metavar="B",
            help="Only sessions that were on git branch B at any point.",
        ),
        click.option(
            "--current-branch",
            is_flag=True,
            help="Only sessions that were on the current git branch.",
        ),
        click.option(
            "--since",
            default=None,
            metavar="WHEN",
            help="Only sessions active since WHEN (7d, 12h, 2w, 2026-11-01).",
        ),
        click.option(
            "--all-kinds",
            is_flag=True,
            help="Include sidechain, metadata-only, -p/SDK, /loop, team, daemon and "
            "superseded sessions (and those tagged __hidden).",
        ),
        click.option(
            "--include-hidden",
            is_flag=True,
            help="Include sessions tagged __hidden (`sessiondex tag ID __hidden` hides one).",
        ),
        click.option(
            "--include-archived",
            is_flag=True,
            help="Include sessions archived by sessiondex archive or cleanup --archive.",
        ),
        click.option(
            "--limit",
            # = query.filters.MAX_LIMIT, which Filters enforces (not imported here:
            # this module loads with every command, and start-up time is a benchmark)
            type=click.IntRange(min=1, max=2**31 - 1),
            default=default_limit,
            show_default=default_limit is not None,
            help="At most N rows.",
        ),
        click.option(
            "--user",
            default=None,
            metavar="U",
            help="Team store (--db postgresql://…) only: sessions pushed by user U.",
        ),
        click.option(
            "--host",
            default=None,
            metavar="H",
            help="Team store (--db postgresql://…) only: sessions pushed from machine H.",
        ),
        cwd_option,
    ]
    for option in reversed(options):
        func = option(func)
    return func


def build_filters(
    cwd: str | None,
    scope: str,
    branch: str | None,
    current_branch: bool,
    since: str | None,
    all_kinds: bool,
    include_archived: bool,
    limit: int | None,
    include_hidden: bool = False,
    user: str | None = None,
    host: str | None = None,
) -> Any:
    from sessiondex.query.filters import Filters, parse_since

    if (user is not None or host is not None) and _team_dsn() is None:
        raise click.UsageError("--user and --host filter the team store: add --db postgresql://…")
    scope = configured_scope(scope)
    if branch and current_branch:
        raise click.UsageError("--branch and --current-branch cannot be combined")
    if since:
        try:
            parse_since(since)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--since") from None
    return Filters(
        cwd=cwd,
        scope=scope,
        branch=branch,
        current_branch=current_branch,
        since=since,
        all_kinds=all_kinds,
        include_archived=include_archived,
        limit=limit,
        include_hidden=include_hidden,
        user=user,
        host=host,
        roots=tuple(str(root) for root in app().roots),
    )


def _team_dsn() -> str | None:
    """The team store's DSN when ``--db`` names one (the local index otherwise)."""
    return app().index.team_dsn


def configured_scope(scope: str) -> str:
    """``--scope`` as given, else the config file's scope, else ``scope`` (the
    command's default). The file is consulted here, not as the option's default, so
    ``--help`` keeps showing the true default."""
    from click.core import ParameterSource

    from sessiondex.cli.settings import DEFAULT, current

    ctx = click.get_current_context(silent=True)
    settings = current()
    given = ctx is not None and ctx.get_parameter_source("scope") not in (
        None,
        ParameterSource.DEFAULT,
    )
    if given or settings is None or settings.source("scope") == DEFAULT:
        return scope
    return str(settings["scope"])


def run_filters(func: Callable[[], Any]) -> Any:
    """Call a library function that reads ``Filters``; its ValueErrors are user errors."""
    try:
        return func()
    except ValueError as exc:
        raise CliError(str(exc)) from None


class UnsafeOutputPath(click.ClickException):
    """A path the user named that we must not write (usage error: exit 2, one line,
    cleaned for the terminal as :class:`~sessiondex.cli.app.CliError` is)."""

    exit_code = 2

    def format_message(self) -> str:
        from sessiondex.cli.output import clean_line

        return clean_line(self.message)


def check_output_path(path: str, label: str, also: Iterable[Path] = ()) -> None:
    """Refuse ``path`` if writing it could clobber a transcript or the index
    (:func:`sessiondex.actions.paths.write_target_problem`): exit 2, one line. ``also``:
    config dirs to protect besides the configured ones (the one a transcript read by
    path came from)."""
    from sessiondex.actions.paths import write_target_problem
    from sessiondex.cli.app import app

    index = app().index
    roots = [*index.roots, *also]
    problem = write_target_problem(path, roots, index.db_path, label=label)
    if problem:
        raise UnsafeOutputPath(problem)
