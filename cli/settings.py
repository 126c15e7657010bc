"""The command line's settings: options, then environment variables, then the config
file, then defaults — and where each value came from (``sessiondex config``).

The file is ``$XDG_CONFIG_HOME/sessiondex/config.toml`` (``~/.config/…`` when
``XDG_CONFIG_HOME`` is unset), ``SESSIONDEX_CONFIG`` names another one. It is read only
when it exists (``tomllib`` is imported then, not on every start-up), and a file that
does not parse, or holds an unknown key or a value of the wrong kind, is a usage error
naming the file (exit 2, one line): a typo in a config file must not be silently
ignored. Keys::

    scope = "repo"                      # default --scope of list, search, from-pr, pick
    config_dirs = ["~/.claude", "~/old-laptop/.claude"]
    db = "~/.cache/sessiondex/index.db"
    pager = "less -R"                   # for show
    color = "auto"                      # auto, always or never

``~`` is expanded in paths. The library (``sessiondex.Index``) reads none of this: a
program says what it wants.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import click

from sessiondex.indexer.db import default_db_path
from sessiondex.transcripts.config import find_config_dirs
from sessiondex.transcripts.fspath import xdg_dir

SCOPES = ("worktree", "repo", "all")
COLORS = ("auto", "always", "never")
DEFAULT_PAGER = "less"
KEYS = ("scope", "config_dirs", "db", "pager", "color")

# Where a value came from, besides an option name, a variable name or the file's path.
DEFAULT = "default"


class ConfigFileError(click.UsageError):
    """The config file cannot be used: one line naming it, exit 2."""

    def show(self, file: Any = None) -> None:
        from sessiondex.cli.output import clean_line

        click.echo(f"Error: {clean_line(self.format_message())}", err=True)


class Setting(NamedTuple):
    value: Any
    source: str


class Settings:
    """The effective settings of one command line. (Plain classes, not dataclasses:
    this module is imported by every command, and start-up time is a benchmark.)"""

    def __init__(self, file: Path, file_exists: bool) -> None:
        self.file = file
        self.file_exists = file_exists
        self.values: dict[str, Setting] = {}
        # What is wrong with the file, when it was read leniently (and left out).
        self.problem: str | None = None

    def __getitem__(self, key: str) -> Any:
        return self.values[key].value

    def source(self, key: str) -> str:
        return self.values[key].source


def config_file_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$SESSIONDEX_CONFIG``, else ``$XDG_CONFIG_HOME/sessiondex/config.toml``, else
    ``~/.config/sessiondex/config.toml``."""
    env = os.environ if environ is None else environ
    if env.get("SESSIONDEX_CONFIG"):
        return Path(os.path.expanduser(env["SESSIONDEX_CONFIG"]))
    return xdg_dir("XDG_CONFIG_HOME", ".config", env) / "sessiondex" / "config.toml"


def read_config_file(path: Path) -> dict[str, Any]:
    """The file's settings, checked; ``{}`` when there is no file. Raises
    :class:`ConfigFileError` for anything wrong with it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        # utf-8-sig: a byte-order mark, which some Windows editors write, is no TOML
        # statement, but the text after it is the user's settings
        table = tomllib.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ConfigFileError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: {exc}") from None
    return _checked(table, path)


def _checked(table: dict[str, Any], path: Path) -> dict[str, Any]:
    for key, value in table.items():
        if key not in KEYS:
            raise ConfigFileError(f"{path}: unknown key {key!r} (known: {', '.join(KEYS)})")
        if key == "scope" and value not in SCOPES:
            raise ConfigFileError(f"{path}: scope must be one of {', '.join(SCOPES)}")
        if key == "color" and value not in COLORS:
            raise ConfigFileError(f"{path}: color must be one of {', '.join(COLORS)}")
        if key in ("db", "pager") and not isinstance(value, str):
            raise ConfigFileError(f"{path}: {key} must be a string")
        if key == "config_dirs" and (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise ConfigFileError(f"{path}: config_dirs must be a list of directories")
    out = dict(table)
    if "db" in out and not _is_dsn(out["db"]):  # a postgresql:// DSN works as --db does
        out["db"] = _absolute(out["db"], "db", path)
    if "config_dirs" in out:
        out["config_dirs"] = [_absolute(d, "config_dirs", path) for d in out["config_dirs"]]
    return out


def _is_dsn(value: str) -> bool:
    from sessiondex.store.dsn import is_postgres_dsn

    return is_postgres_dsn(value)


def _absolute(value: str, key: str, path: Path) -> str:
    """``~`` expanded; a relative path is refused (relative to what: the file, or
    wherever the command runs?)."""
    expanded = os.path.expanduser(value)
    if not os.path.isabs(expanded):
        from sessiondex.store.dsn import hide_password

        shown = hide_password(value)  # a connection string may hold one
        raise ConfigFileError(f"{path}: {key}: {shown!r} is not an absolute path (or ~/…)")
    return expanded


def resolve_settings(
    *,
    config_dirs: tuple[str, ...] | list[str] = (),
    db: str | None = None,
    db_source: str | None = None,
    environ: Mapping[str, str] | None = None,
    lenient: bool = False,
) -> Settings:
    """Every setting with its source: ``config_dirs`` and ``db`` as the options gave
    them (``db_source`` says whether ``db`` came from ``--db`` or ``SESSIONDEX_DB``).
    ``lenient``: a broken config file is left out (``Settings.problem`` says why)
    instead of raising :class:`ConfigFileError`."""
    env = os.environ if environ is None else environ
    path = config_file_path(env)
    problem = None
    try:
        file = read_config_file(path)
    except ConfigFileError as exc:
        if not lenient:
            raise
        file, problem = {}, exc.format_message()
    here = str(path)
    settings = Settings(path, bool(file) or path.is_file())
    settings.problem = problem

    def pick(key: str, *candidates: tuple[Any, str]) -> None:
        if key in settings.values:
            return
        for value, source in candidates:
            if value is not None:
                settings.values[key] = Setting(value, source)
                return

    pick("scope", (file.get("scope"), here), ("worktree", DEFAULT))
    found = find_config_dirs(list(config_dirs), env)
    dirs = [str(d) for d in found.dirs]
    if found.is_default:
        pick("config_dirs", (file.get("config_dirs"), here), (dirs, DEFAULT))
    else:
        pick("config_dirs", (dirs, found.source))
    pick("db", (db, db_source or "--db"), (file.get("db"), here))
    pick("db", (str(default_db_path(dict(env))), DEFAULT))  # unless set above
    pick("pager", (env.get("PAGER"), "PAGER"), (file.get("pager"), here), (DEFAULT_PAGER, DEFAULT))
    pick(
        "color",
        ("never" if env.get("NO_COLOR") else None, "NO_COLOR"),
        (file.get("color"), here),
        ("auto", DEFAULT),
    )
    return settings


# ------------------------------------------------------------------ during a command
_META_KEY = "sessiondex.settings"


def apply_settings(
    ctx: click.Context, config_dirs: tuple[str, ...], db: str | None
) -> tuple[list[str], str | None]:
    """Resolve the settings for this command line and keep them on the context; returns
    the config dirs and database the ``App`` is to use. Config dirs named by the file
    must exist, as those named by ``--config-dir`` (exit 2, naming the file); not
    checked for ``sessiondex config``, which is where one looks at a broken setup."""
    from click.core import ParameterSource

    from_env = ctx.get_parameter_source("db_path") == ParameterSource.ENVIRONMENT
    # Where one looks at or repairs a broken setup, a broken file must not stop the
    # command: `config` shows what it can and says what is wrong, `completion` prints its
    # script (an `eval` of it in a shell's rc file must not fail), --help helps.
    lenient = ctx.invoked_subcommand in ("config", "completion") or bool(
        ctx.meta.get("sessiondex.help_asked")  # cli/main.py LazyGroup.parse_args
    )
    settings = resolve_settings(
        config_dirs=config_dirs,
        db=db,
        db_source="SESSIONDEX_DB" if from_env else "--db",
        lenient=lenient,
    )
    ctx.meta[_META_KEY] = settings
    if os.environ.get("SESSIONDEX_CONFIG") and not settings.file_exists and not lenient:
        # Named, as a config dir is: a typo must not quietly mean the defaults.
        from sessiondex.cli.errors import InvalidValue

        raise InvalidValue("SESSIONDEX_CONFIG", f"file {str(settings.file)!r} does not exist")
    _check_db(str(settings["db"]), settings.source("db"))
    dirs: list[str] = list(config_dirs)
    if settings.source("config_dirs") == str(settings.file):
        dirs = list(settings["config_dirs"])
        if not lenient:
            for directory in dirs:
                if not os.path.isdir(directory):
                    raise ConfigFileError(
                        f"{settings.file}: config_dirs: directory {directory!r} does not exist"
                    )
    return dirs, str(settings["db"])


class DefaultIndexPathError(click.ClickException):
    """The default index path cannot be used: ``Error: <message>`` naming the path and
    what to do, exit 1. Not "Invalid value for '--db'": no option was given, and the
    user's own input is not what is wrong."""

    def show(self, file: Any = None) -> None:
        from sessiondex.cli.output import clean_line

        click.echo(f"Error: {clean_line(self.format_message())}", err=True)


def db_path_error(path: str, source: str, message: str) -> click.ClickException:
    """The one error for an index path that cannot be the index (``message`` says why):
    a usage error naming where the value came from (``--db``, ``SESSIONDEX_DB``, the
    config file), or, for the default path (from ``XDG_CACHE_HOME`` or ``~/.cache``),
    an error that says so and how to get past it: what is in the way may be moved
    (a file that was never the index is left alone, as it may be someone's), and
    ``--db``/``SESSIONDEX_DB`` choose another path."""
    from sessiondex.cli.errors import InvalidValue

    if source != DEFAULT:
        return InvalidValue(f"'{source}'" if source.startswith("--") else source, message)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    origin = "$XDG_CACHE_HOME" if os.path.isabs(xdg) else "~/.cache"
    move = "move it away for a new index to be built there, or " if os.path.lexists(path) else ""
    return DefaultIndexPathError(
        f"{message.rstrip('.')}. It is the default index path (under {origin}):"
        f" {move}choose another with --db PATH or SESSIONDEX_DB"
    )


def _check_db(path: str, source: str) -> None:
    """The index must be a file path: an empty one or a directory is a usage error
    (exit 2) before anything tries to open it (which said two contradictory lines)."""
    from sessiondex.cli.errors import text_problem

    if not path.strip():
        raise db_path_error(path, source, "the index path is empty")
    problem = None if _is_dsn(path) else text_problem(path)
    if problem is not None:  # from the config file or the environment
        raise db_path_error(path, source, problem)
    if os.path.isdir(path):
        raise db_path_error(
            path,
            source,
            f"{path!r} is a directory: give the index file's path (e.g. {path}/index.db)",
        )


def current() -> Settings | None:
    """This command line's settings (None outside a command, e.g. in a library call)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    value = ctx.find_root().meta.get(_META_KEY)
    return value if isinstance(value, Settings) else None


def use_color(stream_is_tty: bool) -> bool:
    """Colour for output to a stream: ``never`` (or ``NO_COLOR``), ``always``, or on a
    terminal (``auto``)."""
    settings = current()
    choice = settings["color"] if settings is not None else "auto"
    if os.environ.get("NO_COLOR"):
        choice = "never"
    return choice == "always" or (choice == "auto" and stream_is_tty)
