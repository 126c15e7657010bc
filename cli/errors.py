"""Usage errors worth one line.

click's own usage errors print the command's usage and a ``--help`` hint before the
message; for a value that is wrong outside the command line's grammar (a config dir that
does not exist, an output file whose extension names no format) that is three lines of
noise around the one that matters. Same exit code (2), same ``Error: Invalid value for
…`` wording, one line.
"""

from __future__ import annotations

from typing import IO, Any

import click

EXIT_USAGE = 2


def text_problem(value: str) -> str | None:
    """What keeps ``value`` (an argument, an environment variable, a path from the config
    file) from being text that names files here, or None. Bytes that are not UTF-8
    (Python holds them as lone surrogates) are no text SQLite, a transcript or the
    terminal can hold. UTF-8 that this process's encoding for file names cannot hold
    (``LC_ALL=C`` with Python's UTF-8 mode off: ASCII only) names no file either way."""
    import os
    import sys

    try:
        raw = os.fsencode(value)
    except UnicodeEncodeError:  # real text (from the config file) the locale cannot hold
        text = value
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return f"'{repr(raw)[2:-1]}' is not valid UTF-8"
        if text == value:
            return None
    return (
        f"{text!r} is not ASCII, and this locale's encoding ({sys.getfilesystemencoding()})"
        " holds only ASCII: run with a UTF-8 locale (LC_ALL=C.UTF-8) or PYTHONUTF8=1"
    )


class InvalidValue(click.ClickException):
    """``Error: Invalid value for <where>: <message>`` on stderr, exit 2."""

    exit_code = EXIT_USAGE

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"Invalid value for {where}: {message}")

    def show(self, file: IO[Any] | None = None) -> None:
        from sessiondex.cli.output import clean_line

        click.echo(f"Error: {clean_line(self.format_message())}", err=True)


def not_empty(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback: an option given an empty (or blank) value on the command line is
    a usage error. An empty value is nearly always a variable that is not set
    (``--config-dir "$BACKUP"``, ``cleanup --archive "$DIR"``), and taking it as "not
    given" acts on the default instead: ~/.claude when another config dir was meant, a
    plain delete when an archive was. Defaults and environment variables are left to
    the option (an empty variable means unset, as Claude Code reads them)."""
    from click.core import ParameterSource

    if param.name and ctx.get_parameter_source(param.name) is not ParameterSource.COMMANDLINE:
        return value
    values = value if isinstance(value, tuple) else (value,)
    if isinstance(param, click.Argument) and param.nargs == -1:
        # The words of one query: blank only as a whole (``search capybara ""`` searches).
        values = (" ".join(v for v in values if isinstance(v, str)),)
    if any(isinstance(v, str) and not v.strip() for v in values):
        if isinstance(param, click.Argument):
            name = param.human_readable_name  # as click names it: 'ARG', 'QUERY'
        else:
            name = max(param.opts, key=len) if param.opts else str(param.name)
        raise InvalidValue(f"'{name}'", "it is empty (is a variable unset?)")
    return value


#: (command, option) pairs that say themselves why an empty value will not do: --db
#: names what it is ("the index path is empty"). (A fork's --title blank is the usage
#: error of every option; one of invisible characters only is refused by the command as
#: rename's and tag's names are: exit 1, "the fork's title is empty".)
CHECKED_BY_THEIR_COMMAND = frozenset({("cli", "db_path")})


#: The name every command gives its session argument (an ID, a name or a path).
SESSION_ARGUMENT = "arg"

#: The arguments that name what to look for, refused empty like a session argument:
#: ``search``'s words, ``restore``'s archived ID. (A tag may be ``""``: it clears; an
#: empty name is ``rename``'s own error.)
LOOKUP_ARGUMENTS = frozenset({SESSION_ARGUMENT, "query", "session_id"})


def refuse_empty_values(command: click.Command) -> click.Command:
    """Give every option of ``command`` (and of its subcommands) that takes free text,
    and every session or lookup argument, the :func:`not_empty` check, before its own callback:
    one rule for every option, present and future (a choice or a number is checked by
    click itself). ``show ""`` (an unset variable) was 'not found', exit 1."""
    if getattr(command, "_empty_values_refused", False):
        return command
    command._empty_values_refused = True  # type: ignore[attr-defined]
    for param in command.params:
        if (command.name, param.name) in CHECKED_BY_THEIR_COMMAND:
            continue
        if (
            isinstance(param, click.Option)
            and not param.is_flag
            and not param.count
            and isinstance(param.type, (click.types.StringParamType, click.Path))
        ) or (isinstance(param, click.Argument) and param.name in LOOKUP_ARGUMENTS):
            param.callback = _then(not_empty, param.callback)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            refuse_empty_values(sub)
    return command


def _then(first: Any, second: Any) -> Any:
    if second is None:
        return first

    def both(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        return second(ctx, param, first(ctx, param, value))

    return both


def warn(text: str) -> None:
    """``warning: <text>`` on stderr, one line, cleaned for the terminal: it quotes
    paths and values that may hold escape sequences."""
    from sessiondex.cli.output import clean_line

    click.echo(f"warning: {clean_line(text)}", err=True)
