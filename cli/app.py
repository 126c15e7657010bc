"""What every command shares: the roots, the database, the refresh-before-read rule,
and the mapping of library errors to exit codes (1 not found, 3 ambiguous).

Failures of the index itself never reach the user as a traceback: a damaged index is
moved aside and rebuilt (a reading command then runs again, once), and busy, read-only
or full databases become one ``Error:`` line naming the index and what is wrong
(:func:`guarded_invoke`, wrapped around every command by the group in ``main.py``).
Notes (a refresh skipped, an index rebuilt) go to stderr, one line each; a wait for
another process's write turn says so after ~2 s when stderr is a terminal.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sessiondex.cli import progress
from sessiondex.cli.progress import ProgressBar
from sessiondex.cli.streams import StdoutFailed, WatchedStdout, discard_stdout

# Seconds a reading command's refresh runs before it shows a progress bar.
READ_PROGRESS_DELAY = 1.0

if TYPE_CHECKING:
    from sqlite_utils import Database

    from sessiondex.index import Index

EXIT_NOT_FOUND = 1
EXIT_AMBIGUOUS = 3


class CliError(click.ClickException):
    """An expected failure: ``Error: <message>`` on stderr, exit 1. The message is
    cleaned for the terminal here, once for every error: it may quote what a user typed
    (a path with an escape in it) or what a transcript holds."""

    exit_code = EXIT_NOT_FOUND

    def format_message(self) -> str:
        from sessiondex.cli.output import clean_line

        return clean_line(self.message)


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
        # Set once a writing command holds the writer: from then on a transcript may
        # have been changed, so the command is never run a second time.
        self.writes_started = False

    @property
    def index(self) -> Index:
        if self._index is None:
            from sessiondex.cli.config_dirs import check_config_dirs
            from sessiondex.indexer.db import NotAnIndex
            from sessiondex.store.dsn import is_postgres_dsn

            # exit 2 for a named dir that is missing; no note about this machine's history
            # when the team store answers
            check_config_dirs(self.config_dirs, notes=not is_postgres_dsn(self.db_path))
            try:
                self._index = self._new_index()
            except NotAnIndex as exc:  # the --db path names a transcript, a note…
                from sessiondex.cli.settings import current, db_path_error

                settings = current()
                source = settings.source("db") if settings is not None else "--db"
                raise db_path_error(str(self.db_path), source, str(exc)) from None
        return self._index

    def _new_index(self) -> Index:
        from sessiondex.index import Index

        return Index(
            self.db_path,
            self.config_dirs or None,
            refresh=not self.no_refresh,
            notice=_note,
            wait_notice=_waiting,
            # A reading command's refresh is quick, except the first build of a
            # large history or one after an upgrade: say so after a second.
            read_progress=(
                ProgressBar("Indexing", delay=READ_PROGRESS_DELAY)
                if progress.stderr_is_terminal()
                else None
            ),
        )

    @property
    def roots(self) -> list[Path]:
        return self.index.roots

    def require_local(self) -> None:
        """Refuse a command that needs this machine's transcripts when ``--db`` names the
        team store (``continue`` and ``resume`` would pick or run a teammate's session)."""
        if self.index.team_dsn is not None:
            raise CliError(
                "this command works on a local index; with --db postgresql://… only list,"
                " search, resolve, from-pr, show and mcp answer (from the team store)"
            )

    @property
    def database_path(self) -> Path:
        self.require_local()
        path = self.index.db_path
        assert path is not None
        return path

    def failure(self, exc: BaseException) -> CliError:
        """One ``Error:`` line for a failure of the index (busy, read-only, full, …).
        Ctrl-C inside a SQL function comes out of sqlite3 as its own error ("user-defined
        function raised exception"): that is click's "Aborted!", raised here."""
        from sessiondex.indexer.faults import describe

        if _INTERRUPTED:
            raise click.Abort()

        path = self.index.db_path
        if isinstance(exc, sqlite3.Error):
            return CliError(describe(exc, path))
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return CliError(f"cannot open the index at {path}: {detail}")

    def _open(self, opener: Callable[[], Database]) -> Database:
        from sessiondex.indexer.db import IndexFromNewer
        from sessiondex.indexer.faults import is_corrupt

        try:
            return opener()
        except IndexFromNewer:
            raise  # opened, and left alone: its own line names the file (_guarded)
        except Exception as exc:  # sqlite3 errors, permissions: one clear line
            if self.index.team_dsn is not None:  # the DSN may hold a password: not echoed
                from sessiondex.index import TeamStoreReadOnly
                from sessiondex.store.dsn import error_line

                if isinstance(exc, TeamStoreReadOnly):  # it opened: this is what was asked
                    raise CliError(str(exc)) from None
                if isinstance(exc, ImportError):  # no `team` extra: push's line, and how
                    from sessiondex.store import INSTALL_HINT, MissingDriver

                    line = str(exc) if isinstance(exc, MissingDriver) else f"{INSTALL_HINT} ({exc})"
                    raise CliError(line) from None

                why = error_line(exc, self.index.team_dsn)
                raise CliError(f"cannot open the team store: {why}") from None
            if is_corrupt(exc):
                raise  # guarded_invoke rebuilds the index and runs the command again
            raise self.failure(exc) from None

    def db(self) -> Database:
        """The database for a writing command, checked writable (and whole) before
        anything, a transcript, is touched."""
        db = self._open(self.index.writable)
        self.writes_started = True
        return db

    def check_writable(self) -> None:
        """Fail now (one line) if the index cannot take a write: a writing command asks
        before it resolves its target, so a read-only index is reported first."""
        self._open(self.index.writable)

    def refresh(self, **options: Any) -> Any:
        """``Index.refresh`` (the ``index`` command), its failures as one line."""
        _ = self.database_path  # the team store is not indexed: say so
        self.warn_missing_roots()
        try:
            return self.index.refresh(**options)
        except sqlite3.Error as exc:
            raise self.failure(exc) from None

    def warn_missing_roots(self) -> None:
        """Check the config dirs (a named one that is missing: exit 2; the default one
        missing, or a dir without ``projects/``: one stderr line); see cli/config_dirs.py.
        Done once, when the index is first opened."""
        _ = self.index

    def fresh_db(self, *, checked: bool = True) -> Database:
        """The writable database, first brought up to date (unless --no-refresh or a
        live watcher). ``checked``: also proven to take writes and whole
        (``PRAGMA quick_check``, ~0.6 s on a 1 GB index) before a transcript is touched;
        a command that changes no transcript (``cleanup``'s dry run) writes index rows
        only, as every reading command's refresh does, and is spared it."""
        self.warn_missing_roots()
        db = self._open(self._refreshed_writer if checked else self._refreshed_unchecked)
        self.writes_started = True
        return db

    def _refreshed_writer(self) -> Database:
        self.index.ensure_fresh()
        return self.index.writable()

    def _refreshed_unchecked(self) -> Database:
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


def _note(text: str) -> None:
    """A note of the library (a damaged index moved aside, one not brought up to date)
    on stderr: it names paths, cleaned for the terminal."""
    from sessiondex.cli.output import clean_line

    click.echo(clean_line(text), err=True)


def _waiting() -> None:
    if progress.stderr_is_terminal():
        click.echo("waiting for another sessiondex process\u2026", err=True)


# Commands that may run a second time after a damaged index was rebuilt under them: they
# only read (or, like ``index``, only write the index). A writing command runs again only
# if it failed before taking the writer (App.writes_started).
RERUNNABLE = frozenset(
    {"list", "search", "from-pr", "resolve", "continue", "show", "export", "stats", "index"}
)


def guarded_invoke(ctx: click.Context, invoke: Callable[[click.Context], Any]) -> Any:
    """Run the command group's ``invoke``; turn any failure of the index into one
    ``Error:`` line, after rebuilding a damaged index (and running the command again,
    once, when that cannot repeat a change to a transcript)."""
    # click consumes the arguments as it dispatches; keep them for a second run.
    saved = (list(getattr(ctx, "_protected_args", [])), list(ctx.args))
    stdout = sys.stdout
    watched = stdout if isinstance(stdout, WatchedStdout) else WatchedStdout(stdout)
    sys.stdout = watched
    with _noting_interrupts():
        try:
            result = _guarded(ctx, invoke, saved, watched)
            watched.flush()
            return result
        except StdoutFailed as exc:
            discard_stdout(watched)
            done = " (what the command changed is done)" if _wrote(ctx) else ""
            raise CliError(f"cannot write to standard output: {exc.reason}{done}") from None
        finally:
            sys.stdout = stdout


def _team_store_failure(ctx: click.Context, exc: BaseException) -> CliError | None:
    """One line for a team store that opened and then failed to answer (a DBA's
    statement_timeout, a dropped connection), without the DSN's password; None for
    anything else. psycopg is looked up, not imported: only a store command loaded it."""
    psycopg = sys.modules.get("psycopg")
    state = ctx.find_object(App)
    if psycopg is None or state is None or not isinstance(exc, psycopg.Error):
        return None
    dsn = state.index.team_dsn
    if dsn is None:
        return None
    from sessiondex.store.dsn import error_line

    return CliError(f"the team store failed to answer: {error_line(exc, dsn)}")


def _wrote(ctx: click.Context) -> bool:
    state = ctx.find_object(App)
    return state is not None and state.writes_started and ctx.invoked_subcommand != "index"


_INTERRUPTED = False


@contextmanager
def _noting_interrupts() -> Iterator[None]:
    """Ctrl-C as Python's default handler takes it, noted first: a KeyboardInterrupt
    raised inside a SQL function (the text decoder during an index build) reaches us
    as sqlite3's "user-defined function raised exception", and the note tells it from a
    real failure of the index. Only in the main thread, where signals are handled.

    ``_signal`` is the C module the standard ``signal`` wraps: the same functions and
    handler objects, without the wrapper's import (its enums of every signal number,
    ~0.4 ms of each command's start-up). The wrapper only turns ``SIG_DFL``/``SIG_IGN``
    into enums, and those are left alone here as any handler but the default is."""
    if TYPE_CHECKING:  # typeshed describes the wrapper only
        import signal
    else:
        import _signal as signal

    global _INTERRUPTED
    _INTERRUPTED = False
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield  # someone else's handler (a test, an embedding program): left alone
        return

    def note_then_interrupt(signum: int, frame: Any) -> None:
        global _INTERRUPTED
        _INTERRUPTED = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, note_then_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _guarded(
    ctx: click.Context,
    invoke: Callable[[click.Context], Any],
    saved: tuple[list[str], list[str]],
    watched: WatchedStdout,
) -> Any:
    from sessiondex.indexer.db import IndexFromNewer, NotAnIndex
    from sessiondex.transcripts.fspath import CwdGone, real_cwd

    try:
        return invoke(ctx)
    except NotAnIndex as exc:  # a file appeared at the path after the first look
        raise CliError(str(exc)) from None
    except IndexFromNewer as exc:  # left alone: another, newer sessiondex owns it
        raise CliError(str(exc)) from None
    except CwdGone as exc:
        raise CliError(str(exc)) from None
    except FileNotFoundError:
        # A relative path (--db, --config-dir…) made absolute from a working directory
        # that was deleted meanwhile: nothing can be found from there.
        if real_cwd() is None:
            raise CliError(
                "the current directory no longer exists: give absolute paths, or cd to another"
            ) from None
        raise
    except sqlite3.Error as exc:
        from sessiondex.indexer.faults import is_corrupt

        state = ctx.find_object(App)
        if state is None:
            raise
        if not is_corrupt(exc):
            raise state.failure(exc) from None
        command = ctx.invoked_subcommand or ""
        rerun = hasattr(ctx, "_protected_args") and (
            command in RERUNNABLE or not state.writes_started
        )
        answered = watched.written
        try:  # rebuilt now, so the second run (even --no-refresh) answers from it
            state.index.recover(exc)
            state.index.refresh()
        except sqlite3.Error as again:
            raise state.failure(again) from None
        finally:
            state.close()
        if not rerun:
            raise CliError(
                "the index was damaged and has been rebuilt from the transcripts; "
                "check whether the change was made before running the command again"
            ) from None
        if answered:  # a second answer would follow the first (two JSON documents)
            raise CliError(
                "the index was damaged and has been rebuilt from the transcripts; the"
                " output above was read before the damage was found: run the command again"
            ) from None
    except Exception as exc:
        failure = _team_store_failure(ctx, exc)
        if failure is None:
            raise
        raise failure from None
    ctx._protected_args, ctx.args = saved
    ctx.invoked_subcommand = None
    try:
        return invoke(ctx)
    except sqlite3.Error as exc:
        state = ctx.find_object(App)
        raise (state.failure(exc) if state else exc) from None
