"""``config`` (the effective settings and where each came from) and ``completion`` (the
shell completion script)."""

from __future__ import annotations

import shlex
from typing import Any

import click

from sessiondex.cli.output import clean_line, table_or_json


@click.command()
@table_or_json
def config(fmt: str, as_json: bool) -> None:
    """Show the effective settings and where each came from.

    Options beat environment variables, which beat the config file
    ($XDG_CONFIG_HOME/sessiondex/config.toml, or $SESSIONDEX_CONFIG), which beats the
    defaults. The file may set: scope (worktree, repo or all), config_dirs (a list),
    db, pager and color (auto, always or never).

    \b
    Example:
        sessiondex config
        sessiondex --config-dir ~/old/.claude config --json
        mkdir -p ~/.config/sessiondex
        printf 'scope = "repo"\\ncolor = "never"\\n' > ~/.config/sessiondex/config.toml
    """
    from sessiondex.cli.output import dumps, render_table
    from sessiondex.cli.settings import KEYS, current

    settings = current()
    assert settings is not None  # set by the command group

    def shown(key: str) -> Any:
        """A setting as printed: a team store DSN without its password."""
        value = settings[key]
        if key == "db" and isinstance(value, str):
            from sessiondex.store.dsn import hide_password

            return hide_password(value)
        return value

    if settings.problem is not None:  # shown, not fatal here: this is where one looks
        click.echo(clean_line(f"Error: {settings.problem} (left out below)"), err=True)
    if as_json or fmt == "json":
        value = {
            "file": str(settings.file),
            "file_exists": settings.file_exists,
            "settings": {
                key: {"value": shown(key), "source": settings.source(key)} for key in KEYS
            },
        }
        click.echo(dumps(value, indent=True))
        return
    rows = []
    for key in KEYS:
        value = shown(key)
        # Several dirs as a shell takes them back: a comma or a space is part of a path.
        text = " ".join(map(shlex.quote, value)) if isinstance(value, list) else str(value)
        rows.append([key, text, settings.source(key)])
    click.echo(render_table(rows, ("setting", "value", "from"), flexible=1))
    state = "" if settings.file_exists else " (none)"
    click.echo(f"config file: {settings.file}{state}")


SHELLS = ("bash", "zsh", "fish")


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish.

    Completes commands, options, and session IDs and names for ARG (from the index,
    read-only: no refresh). Load it from your shell's start-up file.

    \b
    Example:
        sessiondex completion bash >> ~/.bashrc
        sessiondex completion zsh > "${fpath[1]}/_sessiondex"
        sessiondex completion fish > ~/.config/fish/completions/sessiondex.fish
        eval "$(_SESSIONDEX_COMPLETE=bash_source sessiondex)"
    """
    from click.shell_completion import get_completion_class

    from sessiondex.cli.main import cli

    completer = get_completion_class(shell)
    assert completer is not None
    click.echo(completer(cli, {}, "sessiondex", "_SESSIONDEX_COMPLETE").source())
