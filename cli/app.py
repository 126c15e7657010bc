"""What every command shares: the roots, the database, the refresh-before-read rule,
and the mapping of library errors to exit codes (1 not found, 3 ambiguous)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from sqlite_utils import Database

    from sessiondex.index import Index

EXIT_NOT_FOUND = 1
EXIT_AMBIGUOUS = 3


class CliError(click.ClickException):
    """An expected failure: ``Error: <message>`` on stderr, exit 1."""

    exit_code = EXIT_NOT_FOUND


class BareError(click.ClickException):
    """An expected failure printed exactly as given (Claude Code's own wording)."""

    exit_code = EXIT_NOT_FOUND

    def show(self, file: Any = None) -> None:
        click.echo(self.format_message(), err=True)


class App:
    """The command group's state: options turned into one :class:`sessiondex.Index`,
    opened on first use, with library failures turned into one-line errors."""

    def __init__(self, config_dirs: list[str], db_path: str | None, no_refresh: bool) -> None:
        self.config_dirs = config_dirs
        self.db_path = db_path
        self.no_refresh = no_refresh
        self._index: Index | None = None
        self._warned = False

    @property
    def index(self) -> Index:
        if self._index is None:
            from sessiondex.cli.config_dirs import check_config_dirs
            from sessiondex.index import Index

            check_config_dirs(self.config_dirs)  # exit 2 for a named dir that is missing
            self._index = Index(self.db_path, self.config_dirs or None, refresh=not self.no_refresh)
        return self._index

    @property
    def roots(self) -> list[Path]:
        return self.index.roots

    @property
    def database_path(self) -> Path:
        if self.index.team_dsn is not None:
            raise CliError(
                "this command works on a local index; with --db postgresql://… only list,"
                " search, resolve, from-pr and show answer (from the team store)"
            )
        path = self.index.db_path
        assert path is not None
        return path

    def _open(self, opener: Callable[[], Database]) -> Database:
        try:
            return opener()
        except Exception as exc:  # sqlite3 errors, permissions: one clear line
            if self.index.team_dsn is not None:  # the DSN may hold a password: not echoed
                raise CliError(f"cannot open the team store: {exc}") from None
            raise CliError(f"cannot open the index at {self.database_path}: {exc}") from None

    def db(self) -> Database:
        """The database for writing."""
        return self._open(self.index.writer)

    def warn_missing_roots(self) -> None:
        """Check the config dirs (a named one that is missing: exit 2; the default one
        missing, or a dir without ``projects/``: one stderr line); see cli/config_dirs.py.
        Done once, when the index is first opened."""
        _ = self.index

    def fresh_db(self) -> Database:
        """The writable database, first brought up to date (unless --no-refresh or a
        live watcher)."""
        self.warn_missing_roots()
        db = self.db()
        self._open(self._refreshed_writer)
        return db

    def _refreshed_writer(self) -> Database:
        self.index.ensure_fresh()
        return self.index.writer()

    def reading_db(self) -> Database:
        """For commands that only read: :meth:`sessiondex.Index.reader`."""
        self.warn_missing_roots()
        return self._open(self.index.reader)

    def reading_index(self) -> Index:
        """The index, opened for answering (:meth:`reading_db`'s checks and errors)."""
        self.reading_db()
        return self.index

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


def app(ctx: click.Context | None = None) -> App:
    context = ctx or click.get_current_context()
    obj = context.find_object(App)
    assert obj is not None
    return obj
