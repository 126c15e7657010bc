"""The ``sessiondex`` command group.

Commands live in their own modules and are imported only when invoked (``LazyGroup``):
start-up time is a benchmark figure, and ``sessiondex search`` should not pay for
watchdog or the exporters.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from sessiondex import __version__
from sessiondex.cli.app import App
from sessiondex.cli.errors import refuse_empty_values

# command name → "module:function"; the help listing keeps this order.
COMMANDS = {
    "index": "sessiondex.cli.index_cmds:index",
    "stats": "sessiondex.cli.index_cmds:stats",
    "watch": "sessiondex.cli.watch_cmd:watch",
    "list": "sessiondex.cli.query_cmds:list_cmd",
    "search": "sessiondex.cli.query_cmds:search",
    "from-pr": "sessiondex.cli.query_cmds:from_pr",
    "resolve": "sessiondex.cli.query_cmds:resolve",
    "continue": "sessiondex.cli.query_cmds:continue_cmd",
    "resume": "sessiondex.cli.query_cmds:resume",
    "pick": "sessiondex.cli.pick_cmd:pick",
    "show": "sessiondex.cli.show_cmds:show",
    "export": "sessiondex.cli.show_cmds:export",
    "rename": "sessiondex.cli.mutate_cmds:rename",
    "tag": "sessiondex.cli.mutate_cmds:tag",
    "untag": "sessiondex.cli.mutate_cmds:untag",
    "fork": "sessiondex.cli.mutate_cmds:fork",
    "delete": "sessiondex.cli.mutate_cmds:delete",
    "cleanup": "sessiondex.cli.cleanup_cmd:cleanup",
    "archive": "sessiondex.cli.archive_cmd:archive",
    "restore": "sessiondex.cli.archive_cmd:restore",
    "config": "sessiondex.cli.config_cmd:config",
    "completion": "sessiondex.cli.config_cmd:completion",
    "serve": "sessiondex.cli.serve_cmd:serve",
    "mcp": "sessiondex.cli.mcp_cmd:mcp",
    "push": "sessiondex.cli.push_cmd:push",
    "store": "sessiondex.cli.store_cmd:store",
}


HELP_ASKED = "sessiondex.help_asked"


class LazyGroup(click.Group):
    """A group whose commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # The group's callback reads the settings before the subcommand parses its own
        # options; it must know that the command line only asks for help (settings.py).
        ctx.meta[HELP_ASKED] = any(arg in ("--help", "-h") for arg in args)
        for arg in args:
            _check_text(arg)
        with _cleaned_errors():
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from sessiondex.cli.app import guarded_invoke
        from sessiondex.cli.streams import fit_streams_to_encoding

        fit_streams_to_encoding()
        with _cleaned_errors():
            return guarded_invoke(ctx, super().invoke)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """click's ``main``, with standard output watched for the whole run: help and
        ``--version`` are printed while the arguments are parsed, before any command,
        and what is still buffered is flushed here, so that a full disk or a closed
        descriptor is one ``Error:`` line and exit 1, never a traceback."""

        from sessiondex.cli.streams import StdoutFailed, WatchedStdout, discard_stdout

        stdout = sys.stdout
        watched = WatchedStdout(stdout)
        sys.stdout = watched
        try:
            try:
                return super().main(*args, **kwargs)
            finally:
                watched.flush()
        except StdoutFailed as exc:
            discard_stdout(watched)
            error = click.ClickException(f"cannot write to standard output: {exc.reason}")
            if not kwargs.get("standalone_mode", True):
                raise error from None
            error.show()
            sys.exit(error.exit_code)
        except BrokenPipeError:  # the reader went away (``| head``): as click's own exit
            discard_stdout(watched)
            sys.exit(1)
        finally:
            sys.stdout = stdout

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, with the closest command named when none has the name given
        (``sessiondex lsit``): click looks for it among the commands already loaded
        (none here, they load lazily), and before 8.4 not at all."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            name = args[0] if args else ""
            named = getattr(exc, "possibilities", None)
            if exc.message == f"No such command {name!r}." and not named:
                import difflib

                close = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.6)
                if close:
                    exc.message += f" Did you mean {close[0]!r}?"  # type: ignore[misc]  # Final only in the stubs
            raise

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        refuse_empty_values(command)
        return command


# click 8.2+ raises this for a group given no command (8.1 printed the help and exited).
_NO_ARGS_HELP: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


@contextmanager
def _cleaned_errors() -> Iterator[None]:
    """Every usage error and expected failure, click's own included ("directory … does
    not exist"), printed without the escape sequences a path or a value may carry:
    click strips them only when the output is no terminal."""
    try:
        yield
    except _NO_ARGS_HELP:
        raise  # the help of a group given no command (``sessiondex store``): its own lines
    except click.ClickException as exc:
        from sessiondex.cli.output import clean_line

        if isinstance(exc, click.NoSuchOption):
            placed = _global_option_hint(exc)
            if placed:  # not "Did you mean '--cwd'?" for ``list --db x.db``
                exc.possibilities = None  # type: ignore[misc]  # Final only in the stubs
            exc.message += placed or _dash_hint(exc)  # type: ignore[misc]  # Final only in the stubs
        elif isinstance(exc, click.UsageError):
            exc.message += _quote_hint(exc)  # type: ignore[misc]  # Final only in the stubs
        exc.message = clean_line(exc.message)  # type: ignore[misc]  # Final only in the stubs
        raise


def _global_option_hint(exc: click.NoSuchOption) -> str:
    """For an option of the ``sessiondex`` group given after a command (``list --db
    x.db``, ``search cookie --no-refresh``: the order most CLIs accept): where it goes.
    Click's own line guessed a command option ("Did you mean '--cwd'?") and the dash hint
    a search for the option's text, both wrong for what was meant. Empty for any other
    option."""
    ctx = exc.ctx
    if ctx is None or ctx.parent is None:
        return ""
    name = exc.option_name.split("=", 1)[0]
    root = ctx.find_root()
    option = next(
        (
            p
            for p in root.command.params
            if isinstance(p, click.Option) and name in (*p.opts, *p.secondary_opts)
        ),
        None,
    )
    if option is None:
        return ""
    names = []
    here: click.Context | None = ctx
    while here is not None and here.parent is not None:
        names.append(here.info_name or "")
        here = here.parent
    if option.is_eager:  # --version answers alone, before any command
        return f" '{name}' is a global option: sessiondex {name}"
    value = "" if option.is_flag else " …"
    command = " ".join(reversed(names))
    hint = (
        f" '{name}' is a global option: give it before the command:"
        f" sessiondex {name}{value} {command} …"
    )
    # ``push --db DSN``, ``store init --db DSN``: meant the team store, which these name
    # otherwise (the global --db is the local index there).
    dsn = next((p for p in ctx.command.params if p.name == "dsn"), None)
    if name == "--db" and isinstance(dsn, click.Option):
        flag = dsn.opts[0]
        hint += f"; the team store to copy into is {flag} DSN: sessiondex {command} {flag} DSN"
    elif name == "--db" and dsn is not None:
        hint += f"; the team store is the DSN argument: sessiondex {command} DSN …"
    return hint


def _dash_hint(exc: click.NoSuchOption) -> str:
    """For a command that takes text (a query, a name, a tag): how to give text that
    starts with a dash, which click reads as an option (``search --no-verify``)."""
    ctx = exc.ctx
    if ctx is None or exc.possibilities:  # a mistyped option: click's "Did you mean"
        return ""
    arguments = [p for p in ctx.command.params if isinstance(p, click.Argument)]
    if not arguments:
        return ""
    # click names one letter of a cluster (-rf is "-r"): then the example is generic.
    example = exc.option_name if exc.option_name.startswith("--") else "'-text'"
    before = "".join(f" {p.human_readable_name}" for p in arguments[:-1])  # rename ARG
    return (
        f" To give text that starts with '-', put -- before it:"
        f" sessiondex {ctx.info_name}{before} -- {example}"
    )


# Arguments that take a session's name or other text with spaces (not a PR, an ID, a
# DSN or a shell's name, which never hold one).
_TEXT_ARGUMENTS = ("arg", "name", "tag")
# click's line for arguments left over once a command's own are filled.
_EXTRA_ARGUMENTS = re.compile(r"Got unexpected extra arguments? \((.*)\)\Z", re.DOTALL)


def _quote_hint(exc: click.UsageError) -> str:
    """For words given apart where a command takes one text (``resume Auth refactor``,
    ``rename ID New name``; ``search`` alone joins its words): the last argument with
    the words after it, quoted as one, as the shell would take it back. Empty for any
    other usage error, or a command whose last argument takes no such text."""
    extra = _EXTRA_ARGUMENTS.match(exc.message)
    ctx = exc.ctx
    if extra is None or ctx is None:
        return ""
    arguments = [p for p in ctx.command.params if isinstance(p, click.Argument)]
    if not arguments or arguments[-1].name not in _TEXT_ARGUMENTS:
        return ""
    first = ctx.params.get(arguments[-1].name or "")
    if not isinstance(first, str):
        return ""
    import shlex

    return (
        "; to give text with spaces as one argument, quote it:"
        f" {shlex.quote(f'{first} {extra.group(1)}')}"
    )


def _check_text(arg: str) -> None:
    """An argument must be text that names files here
    (:func:`~sessiondex.cli.errors.text_problem`): else a usage error in one line. A
    name, tag or query must be text that Claude Code, SQLite and the terminal can hold,
    and a path with bytes that are not UTF-8 is never a transcript (discovery skips
    such names)."""
    try:
        arg.encode("utf-8")
        return  # nearly always: valid text, and the locale decoded it
    except UnicodeEncodeError:
        pass
    from sessiondex.cli.errors import InvalidValue, text_problem

    raise InvalidValue("an argument", text_problem(arg) or f"{arg!r} is not text")


# Every environment variable sessiondex reads, in `sessiondex --help`.
ENVIRONMENT_EPILOG = f"""\b
Environment:
  CLAUDE_CONFIG_DIR       the config dir, one path as Claude Code reads it
                          (a comma is part of the path); default ~/.claude
  SESSIONDEX_CONFIG_DIRS  several config dirs, separated by "{os.pathsep}" (when
                          neither --config-dir nor CLAUDE_CONFIG_DIR is set)
  CLAUDE_CODE_PROJECT_DIR_NAME
                          a fixed project dir name, honoured as Claude Code
                          does (only together with CLAUDE_CONFIG_DIR)
  SESSIONDEX_DB           the index database (as --db)
  XDG_CACHE_HOME          the default index is in $XDG_CACHE_HOME/sessiondex/
                          (else ~/.cache/sessiondex/)
  HOME                    where ~/.claude and ~/.cache are
  SESSIONDEX_MANAGED_SETTINGS
                          Claude Code's managed settings file, read by
                          cleanup (default: the OS's policy path)
  SESSIONDEX_CONFIG       the config file (default: $XDG_CONFIG_HOME/
                          sessiondex/config.toml, else ~/.config/...)
  XDG_CONFIG_HOME         where the config file is (see above)
  XDG_DATA_HOME           archive's default dir is $XDG_DATA_HOME/sessiondex/
                          archive (else ~/.local/share/...)
  NO_COLOR                no colour (search highlights, show)
  COLUMNS                 the width tables are cut to (default: the
                          terminal's)
  PAGER                   the pager for long show output (default less;
                          "cat" or empty: none)
  LESS                    less's options; FRX when unset, as git sets it
  LV                      lv's options, when the pager is lv; -c when unset
  PATH                    where the pager's program is looked for (one that
                          is not there: the output is printed directly)
  PWD                     the working directory when it was deleted under
                          the process (a removed checkout)
  _SESSIONDEX_COMPLETE    shell completion (see `sessiondex completion`)

\b
Settings: options beat environment variables, which beat the config file
(scope, config_dirs, db, pager, color), which beats the defaults; `sessiondex
config` shows each setting and where it came from.
"""


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=ENVIRONMENT_EPILOG,
)
@click.option(
    "--config-dir",
    "config_dirs",
    multiple=True,
    metavar="DIR",
    help="Claude config dir to index (repeatable; it must exist). Default: "
    "$CLAUDE_CONFIG_DIR (one path), else $SESSIONDEX_CONFIG_DIRS, else ~/.claude.",
)
@click.option(
    "--db",
    "db_path",
    envvar="SESSIONDEX_DB",
    metavar="PATH",
    help="Index database, or a postgresql:// DSN to answer list, search, resolve, from-pr"
    " and show from the team store. Default: $SESSIONDEX_DB, else"
    " $XDG_CACHE_HOME/sessiondex/index.db.",
)
@click.option(
    "--no-refresh",
    is_flag=True,
    help="Answer from the index as it is, without the quick incremental refresh.",
)
# The package's constant, which the build takes too: no metadata lookup (start-up time).
@click.version_option(version=__version__, prog_name="sessiondex")
@click.pass_context
def cli(
    ctx: click.Context, config_dirs: tuple[str, ...], db_path: str | None, no_refresh: bool
) -> None:
    """Search and manage Claude Code session history.

    sessiondex keeps a SQLite FTS5 index of the transcripts under
    <config>/projects/ (never changing them) and answers from it: list sessions like
    the /resume picker, search their text and PR links, resolve an ID or a name, and
    rename, tag, fork, delete or clean up sessions with records Claude Code reads.

    \b
    Example:
        sessiondex index
        sessiondex list --scope all
        sessiondex search "auth refactor"
        sessiondex resume "Auth refactor"
    """
    from sessiondex.cli.settings import apply_settings

    dirs, db_path = apply_settings(ctx, config_dirs, db_path)
    ctx.obj = App(config_dirs=dirs, db_path=db_path, no_refresh=no_refresh)
    ctx.call_on_close(ctx.obj.close)


refuse_empty_values(cli)  # its own options; each command's when it is first looked up


def main(argv: list[str] | None = None) -> Any:
    return cli.main(args=argv, prog_name="sessiondex")


if __name__ == "__main__":  # `python -m sessiondex.cli.main`: the job's fallback command
    main()
