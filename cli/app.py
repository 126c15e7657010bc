"""What every command shares: the roots, the database, the refresh-before-read rule,
and the mapping of library errors to exit codes (1 not found, 3 ambiguous)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from sqlite_utils import Database

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


@dataclass
class App:
    config_dirs: list[str]
    db_path: str | None
    no_refresh: bool
    _db: Database | None = field(default=None, repr=False)
    _reader: Database | None = field(default=None, repr=False)

    @property
    def roots(self) -> list[Path]:
        from sessiondex.transcripts.config import config_dirs

        return config_dirs(self.config_dirs)

    @property
    def database_path(self) -> Path:
        from sessiondex.indexer.db import default_db_path

        return Path(self.db_path) if self.db_path else default_db_path()

    def db(self) -> Database:
        if self._db is None:
            from sessiondex.indexer.db import open_db

            try:
                self._db = open_db(self.database_path)
            except Exception as exc:  # sqlite3 errors, permissions: one clear line
                raise CliError(f"cannot open the index at {self.database_path}: {exc}") from None
        return self._db

    def warn_missing_roots(self) -> None:
        """One stderr line per config dir without a ``projects/`` folder (a typo in
        --config-dir should not look like an empty history)."""
        for root in self.roots:
            if not (root / "projects").is_dir():
                click.echo(
                    f"warning: {root} has no projects/ folder; nothing to index there", err=True
                )

    def fresh_db(self) -> Database:
        """The database, first brought up to date unless --no-refresh or a live watcher."""
        db = self.db()
        self.warn_missing_roots()
        if not self.no_refresh:
            from sessiondex.indexer.lock import watcher_alive
            from sessiondex.indexer.refresh import refresh

            if not watcher_alive(self.database_path):
                refresh(db, self.roots)
        return db

    def reading_db(self) -> Database:
        """For commands that only read: a read-only handle (no sqlite-utils import) when
        nothing needs refreshing (``--no-refresh``, or a live ``watch``), else
        :meth:`fresh_db`."""
        if self._reader is None:
            from sessiondex.indexer.lock import watcher_alive

            if self.no_refresh or watcher_alive(self.database_path):
                from sessiondex.indexer.db import open_db

                self.warn_missing_roots()
                try:
                    self._reader = open_db(self.database_path, readonly=True)
                except Exception as exc:  # sqlite3 errors, permissions: one clear line
                    raise CliError(
                        f"cannot open the index at {self.database_path}: {exc}"
                    ) from None
            else:
                self._reader = self.fresh_db()
        return self._reader

    def close(self) -> None:
        handles = {id(h): h for h in (self._reader, self._db) if h is not None}
        for handle in handles.values():  # the reader may be the writer itself
            handle.close()
        self._db = self._reader = None


def app(ctx: click.Context | None = None) -> App:
    context = ctx or click.get_current_context()
    obj = context.find_object(App)
    assert obj is not None
    return obj
