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


class InvalidValue(click.ClickException):
    """``Error: Invalid value for <where>: <message>`` on stderr, exit 2."""

    exit_code = EXIT_USAGE

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"Invalid value for {where}: {message}")

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"Error: {self.format_message()}", err=True)


def not_empty(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback: an option given an empty (or blank) value is a usage error. An
    empty value is nearly always a variable that is not set (``--config-dir "$BACKUP"``),
    and taking it as "not given" would act on the default instead: list, or delete from,
    ~/.claude when another config dir was meant."""
    values = value if isinstance(value, tuple) else (value,)
    if any(isinstance(v, str) and not v.strip() for v in values):
        name = param.opts[0] if param.opts else str(param.name)
        raise InvalidValue(f"'{name}'", "it is empty (is a variable unset?)")
    return value
