"""``sessiondex.Index``: the one way into the index for every front end.

The CLI, the SDK-style functions (:mod:`sessiondex.sdk`) and every later front end
(picker, MCP server, web view) need the same three things: which config dirs to answer
for, which database to open (and whether read-only), and the one rule for refreshing
before a read — bring the index up to date with a cheap incremental pass, unless the
caller said not to or a live ``watch`` already keeps it current. That rule lives here
and nowhere else; the query, action and render layers take an open database and answer.

The rest of what every front end needs also lives here, so each one gets it:

* **Read your own writes.** A read of *one* session (by ID, path or name: ``resolve``,
  ``show``, the SDK's ``get_session_info``/``get_session_messages``) first checks that
  session's transcript itself — one ``stat`` against its files row, one per project dir
  for an ID the index does not know yet — and ingests it if it changed, so a rename,
  tag or fork made a moment ago (by us, the SDK or Claude Code) is seen even while a
  watcher that has not caught up yet is trusted for everything else.
* **Wait, then answer.** Writers wait their turn (:mod:`sessiondex.indexer.meta`); a
  read's refresh waits at most ``READ_WAIT`` and otherwise answers from the index as it
  is, with one note. A read-only or full index is read as it is, with one note.
* **Disposable index.** A damaged database is moved aside and rebuilt from the
  transcripts (one note), on open or when a query trips over a bad page; so is whatever
  ``refresh(rebuild=True)`` cannot open or clear. An index that was never filled (new,
  or deleted under a running watcher) is refreshed by the reader itself instead of
  trusting the watcher.

* **Long-lived front ends.** :meth:`Index.renew` applies the refresh rule again before
  each answer; with :meth:`Index.watch_transcripts` a file-system watcher's dirty bit
  (:mod:`sessiondex.indexer.dirty`) says when that can be skipped, or narrowed to the
  transcripts that were written to.

Notes go to ``notice`` (the CLI prints them on stderr), else to the ``sessiondex``
logger, and are kept in :attr:`Index.notes`.

Example::

    from sessiondex import Index

    with Index() as index:                      # ~/.claude, the default database
        for session in index.list(scope="all", limit=5):
            print(session["title"])
        hits = index.search("auth refactor", scope="all")
        found = index.resolve("Auth refactor")  # ID, name, path or ID prefix
        print(index.show(found.session["session_id"], format="md"))
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import tempfile

    from sqlite_utils import Database

    from sessiondex.actions.archive import ArchiveRun, RestoreResult
    from sessiondex.actions.mutations import MutationResult
    from sessiondex.indexer.dirty import DirtyBit
    from sessiondex.indexer.stats import ProgressCallback, RefreshStats
    from sessiondex.query.filters import Filters
    from sessiondex.query.resolve import NotFound, Resolution
    from sessiondex.query.search import Ranking, SearchOutcome
    from sessiondex.query.sessions import ListingMemo
    from sessiondex.query.teamdb import TeamDatabase
    from sessiondex.render.conversation import Conversation

    DbArg = str | os.PathLike[str] | sqlite3.Connection | Database | None


Sessions = list[dict[str, Any]]  # session objects, as the JSON output prints them
T = TypeVar("T")
MessageHits = dict[str, list[str]]  # session file_path → uuids of matching messages

# Seconds a read waits for its turn to refresh before it answers from the index as it is.
READ_WAIT = 3.0
# What "not found" leaves open when the read's refresh could not be written (disk full,
# read-only, busy): a name, prefix or session new since is not in the index yet.
STALE_NOT_FOUND = (
    "The index is not up to date, so a session or name new since its last update is"
    " not in it; a full session ID is read from its transcript."
)


def prepare_connection(conn: sqlite3.Connection) -> None:
    """Make a connection of your own to the index file able to read message text: the
    index stores it compressed, and the view ``message_text``, FTS5's ``snippet()`` on
    ``messages_fts`` and writes to ``messages`` call the SQL function this registers
    (``sessiondex_text``). ``Index`` does this for every connection it opens or is given;
    a plain ``sqlite3`` shell has no such function (docs/index.md#message-text)."""
    from sessiondex.indexer.textstore import register

    register(conn)


class TeamStoreReadOnly(ValueError):
    """A write asked of an :class:`Index` over the team store, which ``push`` and the
    Agent SDK's ``PostgresSessionStore`` write, not this machine's commands."""


class Index:
    """The index of one or more Claude config dirs, and every question asked of it.

    ``db`` is a path, an open ``sqlite3.Connection`` or sqlite-utils ``Database``, or
    None for the default (``$SESSIONDEX_DB``, else ``$XDG_CACHE_HOME/sessiondex/index.db``).
    A ``postgresql://`` DSN answers from the team store instead (read-only; ``refresh``
    does nothing there: ``push`` and SDK writes fill it), with the same questions.
    ``config_dirs`` (a list of dirs, or one) defaults as the CLI's ``--config-dir``
    does. The refresh runs once, before the first answer (as for one CLI command); a
    long-lived caller calls :meth:`renew` before a question to see later changes
    (:meth:`watch_transcripts` makes that cheap). ``refresh=False``
    answers from the index as it is (the CLI's ``--no-refresh``). ``read_progress`` is
    told ``(files done, files total)`` while the refresh before an answer runs (a first
    build, or one after an upgrade, can take a while on a large history).

    Handles are opened on first use and closed by :meth:`close` (or ``with``); a
    connection passed in is the caller's and is never closed here.
    """

    def __init__(
        self,
        db: DbArg = None,
        config_dirs: Iterable[str | os.PathLike[str]] | str | os.PathLike[str] | None = None,
        *,
        refresh: bool = True,
        notice: Callable[[str], None] | None = None,
        wait_notice: Callable[[], None] | None = None,
        read_progress: ProgressCallback | None = None,
    ) -> None:
        from sessiondex.transcripts.config import config_dirs as resolve_config_dirs

        if isinstance(config_dirs, (str, bytes, os.PathLike)):
            # one dir, as the SDK-style functions' config_dir= takes it (iterating a str
            # would make a config dir of every character)
            config_dirs = [config_dirs]
        elif config_dirs is not None:
            config_dirs = list(config_dirs)
            if not config_dirs:  # a filter that kept none: not the user's ~/.claude
                raise ValueError("config_dirs is empty: give a config dir, or None for the default")
        self.roots: list[Path] = resolve_config_dirs(
            [_config_dir_text(d) for d in config_dirs] if config_dirs is not None else None
        )
        self.auto_refresh = refresh
        self._given: Database | None = None
        self._path: Path | None = None
        self._team_dsn: str | None = None
        self._team: TeamDatabase | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        from sessiondex.store.dsn import is_postgres_dsn

        if db is None and is_postgres_dsn(os.environ.get("SESSIONDEX_DB")):
            db = os.environ["SESSIONDEX_DB"]
        if is_postgres_dsn(db):
            assert isinstance(db, str)
            self._team_dsn = db
        elif db is None or isinstance(db, (str, os.PathLike)):
            from sessiondex.indexer.db import check_index_path, default_db_path

            self._path = Path(db) if db is not None else default_db_path()
            # the text as given too: a URL-looking value is read before Path folds "//"
            given = os.fspath(db) if db is not None else os.environ.get("SESSIONDEX_DB")
            check_index_path(self._path, self.roots, given=str(given) if given else None)
        else:
            from sessiondex.indexer.meta import database_path

            self._given = _as_database(db)
            self._path = database_path(self._given)
        self._writer: Database | None = None
        self._reader: Database | None = None
        self._refreshed = False
        self._notice = notice
        self._wait_notice = wait_notice
        self._read_progress = read_progress
        self.notes: list[str] = []
        # A damaged index was replaced by an empty one: it must be refilled before
        # anything is answered from it, whatever the refresh rule says.
        self._recovered = False
        self._identity: tuple[int, int] | None = None
        # A refresh for a read failed (busy, read-only, full): answer as the index is.
        self._unwritable = False
        #: Why the last refresh before an answer could not be made (the kind of failure,
        #: ``indexer.faults``: busy, full, read-only…), else None: the answer is the index
        #: as it was. The SDK-style functions answer from the transcripts instead.
        self.stale_because: str | None = None
        self._checked = False  # check_writable passed on the current writer
        # interrupt() must never stop a write: once a transcript is written, the index
        # has to follow it (see _no_interrupts).
        self._interrupt_lock = threading.Lock()
        self._writing = False
        # The dirty bit over the transcripts a long-lived front end asks for
        # (:meth:`watch_transcripts`); None: renew() checks every time.
        self._changes: DirtyBit | None = None
        # The last listing, to answer the next one from when nothing changed.
        self._listing_memo: ListingMemo | None = None

    # ------------------------------------------------------------------ handles
    @property
    def db_path(self) -> Path | None:
        """The database file; None for an in-memory database passed in or the team store."""
        return self._path

    @property
    def read_immutable(self) -> bool:
        """Whether answers come from the file read as an immutable one (``immutable=1``):
        it sits where no ``-shm`` can be made (a read-only folder), so a ``mode=ro``
        open fails there. Another reader of the same file (``serve``'s Datasette) must
        then open it so too. False before the first answer, and for the team store."""
        return bool(getattr(self._reader, "immutable", False))

    @property
    def team_dsn(self) -> str | None:
        """The team store's DSN when this index answers from PostgreSQL."""
        return self._team_dsn

    def watcher_alive(self) -> bool:
        """True while a ``sessiondex watch`` keeps this database current for every
        config dir of this index (one watching other dirs leaves ours to our refresh)."""
        from sessiondex.indexer.lock import watcher_covers

        return self._path is not None and watcher_covers(self._path, self.roots)

    def say(self, text: str) -> None:
        """One line for the person using this (a note, never an error): kept in
        :attr:`notes` and passed to ``notice`` (else logged)."""
        if text in self.notes:
            return
        self.notes.append(text)
        if self._notice is not None:
            self._notice(text)
        else:
            import logging  # only here: every command's start-up pays each import

            logging.getLogger("sessiondex").warning(text)

    def _on_recover(self, text: str) -> None:
        self._recovered = True
        self._refreshed = False
        self.say(text)

    def _open(self, *, readonly: bool) -> Database:
        from sessiondex.indexer.db import open_db
        from sessiondex.indexer.faults import file_identity

        assert self._path is not None
        db = open_db(self._path, readonly=readonly, on_recover=self._on_recover)
        self._identity = file_identity(self._path)
        return db

    def writer(self) -> Database:
        """The database opened for writing (created and migrated if needed)."""
        if self._team_dsn is not None:
            raise TeamStoreReadOnly(
                "the team store is read-only here: `sessiondex push` and the Agent SDK's"
                " PostgresSessionStore write it; index, rename, tag, fork, delete and"
                " archive work on a local index"
            )
        if self._given is not None:
            # Checked again at each write: a transaction the caller opened since would
            # take our refresh in, and its rollback undo it while we believe it done.
            _no_transaction(self._given.conn)
            return self._given
        if self._writer is None:
            from sessiondex.indexer.meta import set_write_policy

            self._writer = self._open(readonly=False)
            set_write_policy(self._writer, notice=self._wait_notice)
        return self._writer

    def writable(self) -> Database:
        """The writer, checked to accept writes now: a mutation calls this before it
        touches a transcript, so a read-only index fails first, not after."""
        from sessiondex.indexer.meta import check_writable

        db = self.writer()
        if not self._checked:  # once per handle: the CLI asks before and after resolving
            check_writable(db)
            self._checked = True
        return db

    def reader(self) -> Database:
        """The database for answering, first brought up to date unless ``refresh=False``
        or a live watcher keeps it so. Without a refresh to do it is a read-only handle
        (no sqlite-utils import: start-up time is a benchmark figure)."""
        if self._team_dsn is not None:
            if self._team is None:
                from sessiondex.query.teamdb import TeamDatabase

                self._team = TeamDatabase(self._team_dsn)
            return self._team  # type: ignore[return-value]  # the subset queries use
        if self._reader is None:
            if self._given is not None:
                self.ensure_fresh()
                self._reader = self._given
            elif self.auto_refresh and not self.watcher_alive():
                handle = self._unchanged_read_only()
                if handle is not None:
                    self._reader = handle
                elif self._refresh_for_read():
                    self._wait_for_another_build()
                    self._reader = self.writer()
                else:
                    self._reader = self._read_only()
            else:
                handle = self._read_only()
                if self._recovered or (self.auto_refresh and not _ever_filled(handle)):
                    # A watcher is trusted only with an index it has filled: this one was
                    # just replaced (damaged), or deleted under the watcher, or is new.
                    if self._refresh_for_read():
                        self._wait_for_another_build()
                        if handle is not self._writer:
                            handle.close()
                        handle = self.writer()
                elif not self.auto_refresh:
                    self._say_if_unbuilt(handle)
                self._reader = handle
        return self._reader

    def _say_if_unbuilt(self, handle: Database) -> None:
        """A read told not to refresh answers from the index as it is: say when that is
        another process's build still under way (its full text is filled only at its
        end, so a search finds nothing yet) or no build at all."""
        from sessiondex.indexer.bulk import BULK_LOCK
        from sessiondex.indexer.lock import lock_path, watcher_alive, watcher_pid
        from sessiondex.indexer.meta import EMPTIED_FOR_RULES, get_meta
        from sessiondex.render.counts import counted

        ever_filled = _ever_filled(handle)
        if self._path is not None and watcher_alive(self._path, BULK_LOCK):
            pid = watcher_pid(lock_path(self._path, BULK_LOCK))
            who = f" (pid {pid})" if pid else ""
            self.say(
                f"note: another sessiondex process{who} is building the index at "
                f"{self._path}; until it ends, answers come from what it has filled so "
                "far and text search finds nothing (drop --no-refresh to wait for it)"
            )
        elif not ever_filled and self._path is not None and watcher_alive(self._path, "write"):
            # A small first build takes no bulk lock, only the write turn, a commit
            # group at a time (held most of the time it runs).
            self.say(
                f"note: another sessiondex process is building the index at {self._path};"
                " until it ends, answers come from what it has filled so far (drop"
                " --no-refresh to wait for it)"
            )
        elif not ever_filled and (rules := get_meta(handle, EMPTIED_FOR_RULES)) is not None:
            # Built, but by an older sessiondex: its rows were cleared for these rules.
            self.say(
                f"note: the index at {self._path} was emptied to be rebuilt by this"
                f" sessiondex's rules (an older sessiondex built it, by rules {rules});"
                " run `sessiondex index` (or drop --no-refresh)"
            )
        elif not ever_filled and (held := _sessions_held(handle)):
            # A first build stopped part way (killed, Ctrl-C): rows, no refresh ended.
            self.say(
                f"note: a build of the index at {self._path} did not finish"
                f" ({counted(held, 'session')} in it so far, text search may miss some);"
                " run `sessiondex index` to complete it (or drop --no-refresh)"
            )
        elif not ever_filled:
            self.say(
                f"note: the index at {self._path} has never been built; "
                "run `sessiondex index` (or drop --no-refresh)"
            )

    def _wait_for_another_build(self) -> None:
        """A cold build in another process keeps its full-text work for its end
        (indexer/bulk.py): the rows this refresh found, or wrote beside it, are not
        searchable until then, and a search answered "no match". So a read that
        refreshed waits for that build, saying so once; one whose builder died is
        finished here (as the next open would)."""
        from sessiondex.indexer.bulk import BULK_LOCK, BULK_TRIGGER_KEY, repair_interrupted_bulk
        from sessiondex.indexer.lock import wait_for_release
        from sessiondex.indexer.meta import get_meta

        db = self.writer()
        if self._path is None or get_meta(db, BULK_TRIGGER_KEY) is None:
            return

        def announce(pid: int | None) -> None:
            who = f" (pid {pid})" if pid else ""
            self.say(
                f"note: waiting for another sessiondex process{who} to finish building "
                f"the index at {self._path}"
            )

        wait_for_release(self._path, BULK_LOCK, announce)
        repair_interrupted_bulk(db)

    def _unchanged_read_only(self) -> Database | None:
        """A read-only handle when the index is current and no transcript changed since
        the last refresh (``indexer/freshness.py``): the refresh would do nothing, so
        neither it nor the writer (sqlite-utils, migrations, the write turn) is needed.
        None: refresh the usual way."""
        if self._path is None or self._writer is not None or self._recovered:
            return None
        from sessiondex.indexer.db import open_current_readonly
        from sessiondex.indexer.faults import file_identity
        from sessiondex.indexer.freshness import nothing_changed

        handle = open_current_readonly(self._path)
        if handle is None:
            return None
        if not nothing_changed(handle, self.roots):
            handle.close()
            return None
        self._identity = file_identity(self._path)
        self._refreshed = True
        return handle  # type: ignore[return-value]  # the subset queries use

    def _read_only(self) -> Database:
        """A handle for answering without writing (``mode=ro`` when the index is current;
        a writable one when it must be created, migrated or was just replaced)."""
        return self._open(readonly=True)

    def ensure_fresh(self) -> None:
        """Refresh once in this object's life, by the rule in the module docstring (never
        for the team store: it is not built from this machine's transcripts)."""
        if self._team_dsn is not None:
            return
        if self._refreshed or not self.auto_refresh or self.watcher_alive():
            return
        self._refresh_for_read()

    def _refresh_for_read(self) -> bool:
        """Refresh before answering, waiting at most ``READ_WAIT`` for the write turn;
        when that cannot be done (busy, read-only, disk full) say so once and return
        False: the caller answers from the index as it is."""
        from sessiondex.indexer.faults import BUSY, FULL, classify, plain_reason
        from sessiondex.indexer.meta import write_policy

        self._unwritable = False
        self.stale_because = None
        try:
            db = self.writer()
            policy = write_policy(db)
            wait, policy.wait = policy.wait, min(policy.wait, READ_WAIT)
            try:
                stats = self._refresh_now(progress=self._read_progress)
            finally:
                policy.wait = wait
            if stats.errors:
                self._say_unread(stats.errors)
            return True
        except Exception as exc:
            kind = classify(exc)
            if kind is None:
                raise
            self._unwritable = True  # said once: later writes of this read stay quiet
            self.stale_because = str(kind)
            if kind == BUSY:
                why = "another sessiondex process is writing to it"
            elif kind == FULL:
                why = "the disk is full"
            else:  # read-only (the file, its folder, a side file), cannot open, I/O
                why = plain_reason(exc)
            self.say(
                f"note: the index at {self._path} was not brought up to date ({why}); "
                "answering from it as it is"
            )
            return False

    def _say_unread(self, errors: list[tuple[str, str]]) -> None:
        """One note for what a read's refresh could not read (a folder that cannot be
        listed, a transcript that cannot be opened): the answer may lack it, and only
        ``index`` printed why."""
        path, why = errors[0]
        more = f"; and {len(errors) - 1} more" if len(errors) > 1 else ""
        self.say(f"note: {path}: {why}{more} (`sessiondex index` lists what it skipped)")

    def refresh(
        self,
        *,
        rebuild: bool = False,
        progress: ProgressCallback | None = None,
        include_tools: bool | None = None,
    ) -> RefreshStats:
        """Bring the index up to date with every transcript now (``index``); nothing to
        do for the team store (``push`` fills it from each machine).

        ``rebuild=True`` starts over; it works whatever the file holds: a database it
        cannot open or clear is moved aside (as a damaged one is) and built anew."""
        if self._team_dsn is not None:
            from sessiondex.indexer.stats import RefreshStats

            return RefreshStats()
        return self._refresh_now(rebuild=rebuild, progress=progress, include_tools=include_tools)

    def _refresh_now(
        self,
        *,
        rebuild: bool = False,
        progress: ProgressCallback | None = None,
        include_tools: bool | None = None,
    ) -> RefreshStats:
        from sessiondex.indexer.faults import (
            CANTOPEN,
            CORRUPT,
            READONLY,
            classify,
            failed_in_a_callback,
        )
        from sessiondex.indexer.refresh import refresh

        for attempt in (1, 2):
            try:
                stats = refresh(
                    self.writer(),
                    self.roots,
                    rebuild=rebuild and not self._recovered,
                    progress=progress,
                    include_tools=include_tools,
                )
                break
            except sqlite3.DatabaseError as exc:
                kind = classify(exc)
                if kind in (READONLY, CANTOPEN):
                    self._drop_writer()
                unusable = kind == CORRUPT or (
                    rebuild
                    and kind is None
                    and not isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError))
                    and not failed_in_a_callback(exc)  # Ctrl-C in a SQL function: stop
                )
                if attempt == 2 or not unusable or not self.recover(exc):
                    raise
        self._refreshed = True
        self._recovered = False
        return stats

    def recover(self, error: BaseException) -> bool:
        """The index turned out damaged (``error`` says how): close it, move it aside
        (unless another process already did) and start a new one, which the next read
        or refresh fills from the transcripts. False for a connection passed in (it is
        the caller's) or an in-memory database."""
        from sessiondex.indexer.db import recover_damaged

        if self._given is not None or self._path is None:
            return False
        identity = self._identity
        self._close_handles()  # not the dirty bit: the transcripts are still watched
        recover_damaged(self._path, error, identity, self._on_recover)
        self._recovered = True  # even when someone else moved it: ours is gone too
        self._refreshed = False
        return True

    def _answer(self, question: Callable[[Database], T]) -> T:
        """Ask ``question`` of the reader; a query that trips over damage (a bad page)
        recovers the index and asks once more."""
        from sessiondex.indexer.faults import is_corrupt

        try:
            return question(self.reader())
        except sqlite3.DatabaseError as exc:
            if not is_corrupt(exc) or not self.recover(exc):
                raise
        return question(self.reader())

    # ------------------------------------------------------------ one session, fresh
    def sync_session(self, session_id: str) -> bool:
        """Before a read of one session by ID: make the index agree with that session's
        transcripts — one ``stat`` per copy the index knows, one per project dir for a
        copy it does not know yet (a fork made a moment ago). True when something was
        ingested. Also with ``refresh=False``, which skips the pass over every file, not
        this check (semantics: a read of one session reads your writes, and the SDK's),
        but then only for the copies the index knows."""
        from sessiondex.indexer.freshness import is_stale, main_file_rows
        from sessiondex.transcripts.keys import is_session_id

        if self._team_dsn is not None or not is_session_id(session_id):
            return False
        roots = [str(r) for r in self.roots]  # not archives: those are not transcripts
        rows = self._answer(lambda db: main_file_rows(db, session_id, roots))
        known = {row[0]: row for row in rows}
        paths = set(known)
        # A copy not indexed yet is looked for in every project dir, a stat each, before
        # every read by ID. --no-refresh, which promises no pass over the files, checks
        # only the copies the index knows: a new copy of a session it has waits for the
        # next refresh. A session it has no row for at all is still read from disk: on
        # that miss alone resolve walks the project dirs itself (query/resolve.py _by_id).
        for root in self.roots if self.auto_refresh else ():
            try:
                entries = list(os.scandir(root / "projects"))
            except OSError:
                continue
            for entry in entries:
                if not _utf8(entry.path):
                    continue  # never indexed (refresh counts it as skipped), so not here
                candidate = os.path.join(entry.path, f"{session_id}.jsonl")
                if candidate not in paths and os.path.isfile(candidate):
                    paths.add(candidate)
        stale = [p for p in sorted(paths) if is_stale(known.get(p), p)]
        return self._ingest_paths(stale)

    def fresh_session(self, row: dict[str, Any]) -> bool:
        """Before answering about the session ``row`` (a ``sessions`` row): check its
        transcript (one ``stat``) and ingest it if it changed. True when it did."""
        from sessiondex.indexer.freshness import file_row, is_stale

        path = row.get("file_path")
        if self._team_dsn is not None or row.get("archived") or not isinstance(path, str):
            return False
        if row.get("id") is None or int(row["id"]) < 0:
            return False  # a file outside the index, read straight from disk
        stored = self._answer(lambda db: file_row(db, path))
        return self._ingest_paths([path] if is_stale(stored, path) else [])

    def _ingest_paths(self, paths: list[str]) -> bool:
        if not paths or self._unwritable:
            return False
        from sessiondex.indexer.faults import classify
        from sessiondex.indexer.refresh import ingest_path
        from sessiondex.indexer.stats import RefreshStats

        try:
            db = self.writer()
            for path in paths:
                ingest_path(db, path, self.roots, RefreshStats())
        except Exception as exc:
            if classify(exc) is None:
                raise
            self.say(
                f"note: the index at {self._path} could not take in the latest change to "
                f"the session ({str(exc).strip()}); answering from it as it is"
            )
            return False
        return True

    def close(self) -> None:
        """Close every handle and stop the dirty bit's observer, if one was started."""
        self._close_handles()
        changes, self._changes = self._changes, None
        if changes is not None:
            changes.stop()

    def _drop_writer(self) -> None:
        """Close the write handle, so the next write opens the file again. SQLite opens
        a file it may not write read-only, and the handle stays so: a long-lived Index
        (``serve``, ``mcp``, the picker) failed every refresh after the file or its
        folder was writable again, until restarted."""
        writer, self._writer = self._writer, None
        if writer is None or writer is self._given:
            self._writer = writer
            return
        self._checked = False
        if self._reader is writer:
            self._reader = None  # opened again on the next read
        writer.close()

    def _close_handles(self) -> None:
        self._checked = False
        if self._team is not None:
            self._team.close()
            self._team = None
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
        handles = {id(h): h for h in (self._reader, self._writer) if h is not None}
        for handle in handles.values():
            if handle is not self._given:
                handle.close()
        self._reader = self._writer = None
        if self._listing_memo is not None:
            self._listing_memo.clear()

    def __enter__(self) -> Index:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ answers
    def _filters(self, options: dict[str, Any]) -> Filters:
        """The answers' keyword arguments as :class:`Filters` (:func:`_filters`), for
        this index's config dirs: the index may hold rows of others (the default index
        is shared), and those never answer."""
        from dataclasses import replace

        filters = _filters(options)
        if filters.roots is not None:
            return filters
        return replace(filters, roots=tuple(str(r) for r in self.roots))

    def list(self, **filters: Any) -> Sessions:
        """Picker rows, newest activity first. Keyword arguments are
        :class:`~sessiondex.query.filters.Filters` fields (``cwd``, ``scope``,
        ``branch``, ``current_branch``, ``since``, ``all_kinds``,
        ``include_archived``, ``include_hidden``, ``limit``)."""
        from sessiondex.query.listing import list_sessions
        from sessiondex.query.sessions import ListingMemo

        # Only over connections it opened itself: one handed in is the caller's to
        # change in ways SQLite counts nowhere (a backup loaded into it, say).
        memo = None
        if self._given is None:
            if self._listing_memo is None:
                self._listing_memo = ListingMemo()
            memo = self._listing_memo
        return self._answer(lambda db: list_sessions(db, self._filters(filters), memo))

    def search(
        self,
        query: str,
        *,
        raw: bool = False,
        markers: tuple[str, str] | None = None,
        typing: bool = False,
        **filters: Any,
    ) -> Sessions:
        """Ranked sessions for a full-text query, a PR/MR URL or ``owner/repo#N`` (each
        with ``score``, ``snippet``, ``matched_by``): every word's matches, else the best
        partial matches, else the typo fallback. ``markers`` surround the matched words
        in snippets (default ``[`` ``]``; the web view uses control characters, so it can
        escape a snippet first and then mark it). ``typing``: the query is being typed
        (a picker), so one or two letters filter titles and names by prefix instead
        (:func:`~sessiondex.query.search.title_prefix_search`)."""
        return self.search_outcome(query, raw=raw, markers=markers, typing=typing, **filters).rows

    def search_outcome(
        self,
        query: str,
        *,
        raw: bool = False,
        markers: tuple[str, str] | None = None,
        elsewhere: bool = False,
        typing: bool = False,
        **filters: Any,
    ) -> SearchOutcome:
        """:meth:`search` with what the rows are (``kind``: match, partial, fuzzy, none),
        the words used and, with ``elsewhere``, how many sessions wider scopes match
        when this one has none: what a front end needs to label the rows."""
        from sessiondex.query.search import DEFAULT_MARKERS, run_search

        return self._answer(
            lambda db: run_search(
                db,
                query,
                self._filters(filters),
                raw=raw,
                markers=markers or DEFAULT_MARKERS,
                elsewhere=elsewhere,
                typing=typing,
            )
        )

    def search_ranking(
        self,
        query: str,
        *,
        raw: bool = False,
        markers: tuple[str, str] | None = None,
        elsewhere: bool = False,
        typing: bool = False,
        **filters: Any,
    ) -> Ranking:
        """:meth:`search_outcome` in two steps, for a front end that pages through one
        query's results (the picker): the sessions in order (``ranking.sessions``:
        ``(file_path, session_id)`` each) and what they are, without their objects;
        :meth:`search_page` reads the objects of a slice. The ranking is most of a
        search's cost and is paid once; each page then costs what its rows cost. The
        order is :meth:`search`'s: one function ranks for both."""
        from sessiondex.query.search import DEFAULT_MARKERS, rank_search

        return self._answer(
            lambda db: rank_search(
                db,
                query,
                self._filters(filters),
                raw=raw,
                markers=markers or DEFAULT_MARKERS,
                elsewhere=elsewhere,
                typing=typing,
                sessions=True,
            )
        )

    def search_page(self, ranking: Ranking, start: int = 0, stop: int | None = None) -> Sessions:
        """The session objects of ``ranking.sessions[start:stop]`` (:meth:`search_ranking`),
        as :meth:`search` gives them (``score``, ``snippet``, ``matched_by``); a session
        removed since the ranking is left out."""
        from sessiondex.query.search import ranked_rows

        return self._answer(lambda db: ranked_rows(db, ranking, start, stop))

    def from_pr(self, pr: str | None, **filters: Any) -> Sessions:
        """Sessions linked to a PR number or URL (every linked one with None). The
        scope defaults to ``repo``: a PR number belongs to the repository, so every
        worktree's sessions count, as for Claude Code's ``--from-pr``."""
        from sessiondex.query.prs import from_pr

        if "filters" not in filters:
            filters.setdefault("scope", "repo")
        return self._answer(lambda db: from_pr(db, pr, self._filters(filters)))

    def resolve(
        self,
        arg: str,
        *,
        cwd: str | None = None,
        include_archived: bool = False,
        for_write: bool = False,
    ) -> Resolution:
        """One session from an ID, name, transcript path or ID prefix; raises
        :class:`~sessiondex.query.resolve.NotFound` or ``Ambiguous``.

        The session's own transcript is checked first (an ID: every copy on disk) or
        after (a name, path or prefix), so what is answered is what the file holds now
        (read your own writes, and the SDK's). ``for_write``: only a transcript inside
        a configured ``projects/`` dir counts for a path (mutations). Without
        ``include_archived``, a ``NotFound`` for what only an archived session matches
        names that session in its ``archived``."""
        from sessiondex.query.resolve import NotFound, resolve

        def asker(archives: bool) -> Callable[[Database], Resolution]:
            return lambda db: resolve(
                db, arg, cwd=cwd, roots=self.roots, for_write=for_write, include_archived=archives
            )

        ask = asker(include_archived)
        try:
            if isinstance(arg, str) and self.sync_session(arg.strip()):
                return self._answer(ask)
            try:
                found = self._answer(ask)
            except NotFound:
                if not self._catch_up_behind_watcher():
                    raise
                found = self._answer(ask)
            if self.fresh_session(found.row):
                # It changed: answer from its new rows. Gone (Claude Code's sweep), it
                # is not found, and an archived copy is named as it is below.
                found = self._answer(ask)
        except NotFound as exc:
            if not include_archived:
                self._name_archived(exc, arg, cwd, for_write)
            if self.stale_because is not None and not _full_session_id(arg):
                # The index missed this read's refresh: say what that leaves out, next
                # to the note that said so (a full ID was looked for on disk already).
                exc.args = (f"{exc} {STALE_NOT_FOUND}",)
            raise
        return found

    def _name_archived(self, exc: NotFound, arg: str, cwd: str | None, for_write: bool) -> None:
        """Name in ``exc.archived`` the archived session ``arg`` matches, if only an
        archive holds it (Claude Code's sweep deleted the transcript): a read or a write
        then says where it is and how to get it back, not "not found". Asked for a write
        (``for_write``), it reads ``arg`` as the write did: a transcript path outside the
        configured ``projects/`` dirs is not opened to see whether it is archived."""
        from sessiondex.query.resolve import Ambiguous, NotFound, resolve

        def ask(db: Database) -> Resolution:
            return resolve(
                db, arg, cwd=cwd, roots=self.roots, for_write=for_write, include_archived=True
            )

        try:
            archived = self._answer(ask)
        except (NotFound, Ambiguous):
            return
        if archived.row.get("archived"):
            exc.archived = archived.session

    def continue_session(
        self, *, cwd: str | None = None, print_mode: bool = False
    ) -> dict[str, Any]:
        """The session ``claude --continue`` would open in ``cwd``; raises ``NotFound``
        when there is none."""
        from sessiondex.query.resolve import continue_session

        # The newest transcript decides, and one Claude Code began a moment ago may be
        # inside a watcher's debounce: look at the files first, as without a watcher.
        self._catch_up_behind_watcher()
        return self._answer(
            lambda db: continue_session(db, cwd=cwd, print_mode=print_mode, roots=self.roots)
        )

    def _catch_up_behind_watcher(self) -> bool:
        """Refresh now although a live ``watch`` keeps the index current (whether it
        did): a name just given by ``rename`` or the SDK, or a session just begun, may
        still be inside the watcher's debounce (~100 ms), and a lookup that answers "not
        found", or the previous session, is worse than the refresh's stat pass. Without
        a watcher the read has refreshed already; ``refresh=False`` means as it is."""
        if self._team_dsn is not None or not self.auto_refresh or not self.watcher_alive():
            return False
        return self._refresh_for_read()

    def listing_stamp(self) -> tuple[Any, ...]:
        """What moves whenever a listing could read differently, whoever wrote the
        index: the sessions' count, highest row, summed mtimes and picker-archive flags
        (:func:`~sessiondex.query.sessions.listing_stamp`). A front end that does not
        watch compares it round to round."""
        from sessiondex.query.sessions import listing_stamp

        return self._answer(listing_stamp)

    def id_width(self, session_ids: Iterable[str]) -> int:
        """How many characters of these session IDs a list shows so that each, typed
        back (``resolve``, ``show``, ``tag`` …), names its session alone: 8, or more
        where another session of these config dirs, shown or not (a hidden kind, an
        archived copy), begins alike (:func:`~sessiondex.query.idprefix.prefix_width`)."""
        from sessiondex.query.idprefix import prefix_width

        ids = list(session_ids)
        return self._answer(lambda db: prefix_width(db, ids, self.roots))

    def stats(self) -> dict[str, Any]:
        """Counts, sizes, freshness, watcher status and the retention outlook."""
        from sessiondex.query.cleanup import cleanup_summary
        from sessiondex.query.stats import index_stats

        def ask(db: Database) -> dict[str, Any]:
            result = index_stats(db, self._path or Path(":memory:"), [str(r) for r in self.roots])
            result["cleanup"] = cleanup_summary(db, self.roots)
            return result

        return self._answer(ask)

    def conversation(
        self, arg: str, *, cwd: str | None = None, include_archived: bool = False
    ) -> Conversation:
        """The live branch of a session's conversation, read from its transcript."""
        found = self.resolve(arg, cwd=cwd, include_archived=include_archived)
        return self.conversation_of(found)

    def conversation_of(self, found: Resolution) -> Conversation:
        """The conversation of a resolved session: read from its transcript, or on the
        team store from its stored entries (written as a transcript tree in a scratch
        dir this object removes on :meth:`close`, then read by the same chain and
        render code, so ``show`` is the same from either backend)."""
        from sessiondex.query.sessions import is_archived
        from sessiondex.render.conversation import build_conversation

        if is_archived(found.session):
            return self._archived_conversation(found.session)
        if self._team is None or found.row.get("id", -1) < 0:
            conversation = build_conversation(found.session)
        else:
            conversation = build_conversation(_materialize(self._team, found, self._scratch_dir()))
        if found.subagent_path is not None:  # ARG named one of its subagent files
            return conversation.narrowed_to(found.subagent_path)
        return conversation

    def _scratch_dir(self) -> Path:
        """This object's scratch dir, removed on :meth:`close`."""
        if self._scratch is None:
            import tempfile

            self._scratch = tempfile.TemporaryDirectory(prefix="sessiondex-show-")
        return Path(self._scratch.name)

    def _archived_conversation(self, session: dict[str, Any]) -> Conversation:
        """An archived session's conversation (its ``file_path`` is the archive): its
        transcripts unpacked into a dir of their own in the scratch dir, then read by
        the same code as a live one (``show`` does the same for the length of a
        command: ``render.conversation.archived_conversation``)."""
        import tempfile

        from sessiondex.render.conversation import conversation_from_archive

        where = Path(tempfile.mkdtemp(prefix="archived-", dir=self._scratch_dir()))
        return conversation_from_archive(session, where)

    def show(
        self,
        arg: str,
        *,
        format: str = "md",
        tools: bool = False,
        subagents: bool = False,
        cwd: str | None = None,
    ) -> str:
        """A session's conversation rendered as ``md``, ``text``, ``html`` or ``json``."""
        from sessiondex.render.conversation import render

        return render(self.conversation(arg, cwd=cwd), format, tools=tools, subagents=subagents)

    # ------------------------------------------------------------------ writes
    # rename, tag and untag take what a person typed (the CLI, the picker, the MCP server):
    # invisible and bidi characters removed, nothing visible left refused, and a change
    # that changes nothing writes nothing (the file's mtime is Claude Code's retention
    # clock). The SDK-style functions (sessiondex.sdk) keep the SDK's own rules.
    # A change written that the index could not follow (a full disk) raises
    # actions.mutations.IndexNotUpdated (a MutationError): its message says what was
    # done, its ``result`` is the mutation's; the next refresh reads the change in.
    def rename(self, arg: str, name: str, *, cwd: str | None = None) -> MutationResult:
        """Append the ``custom-title`` record Claude Code reads (nothing when the session
        already has that name; raises ``MutationError`` for a name with nothing visible)."""
        from sessiondex.actions.mutations import rename, user_name

        title = user_name(name)
        return self._mutate(
            lambda db: rename(db, arg, title, cwd=cwd, roots=self.roots, if_changed=True),
            arg,
            cwd,
        )

    def tag(self, arg: str, tag: str, *, cwd: str | None = None) -> MutationResult:
        """Append a ``tag`` record, cleaned as the SDK cleans tags (nothing when the
        session already has that tag; raises ``MutationError`` when nothing is left)."""
        from sessiondex.actions.mutations import tag as tag_session
        from sessiondex.actions.mutations import user_tag

        clean = user_tag(tag)
        return self._mutate(
            lambda db: tag_session(db, arg, clean, cwd=cwd, roots=self.roots, if_changed=True),
            arg,
            cwd,
        )

    def untag(self, arg: str, *, cwd: str | None = None) -> MutationResult:
        """Append the ``tag`` record that clears the tag (nothing when there is none)."""
        from sessiondex.actions.mutations import untag

        return self._mutate(
            lambda db: untag(db, arg, cwd=cwd, roots=self.roots, if_changed=True), arg, cwd
        )

    def fork(
        self,
        arg: str,
        *,
        up_to: str | None = None,
        title: str | None = None,
        cwd: str | None = None,
    ) -> MutationResult:
        """Copy a session into a new one (fresh IDs, ``forkedFrom`` on every entry),
        titled ``title`` as :meth:`rename` would name it."""
        from sessiondex.actions.mutations import fork, user_name

        if title is not None:
            title = user_name(title, "the fork's title")
        return self._mutate(
            lambda db: fork(db, arg, cwd=cwd, roots=self.roots, up_to=up_to, title=title),
            arg,
            cwd,
        )

    def delete(self, arg: str, *, cwd: str | None = None) -> MutationResult:
        """Remove a session's transcript and its ``<id>/`` folder."""
        from sessiondex.actions.mutations import delete

        return self._mutate(lambda db: delete(db, arg, cwd=cwd, roots=self.roots), arg, cwd)

    @contextmanager
    def _no_interrupts(self) -> Iterator[None]:
        """While a write runs, :meth:`interrupt` does nothing: an interrupt landing
        after the transcript was written would fail the call with the record appended
        and the index not following it."""
        with self._interrupt_lock:
            self._writing = True
        try:
            yield
        finally:
            with self._interrupt_lock:
                self._writing = False

    def _mutate(
        self, action: Callable[[Database], MutationResult], arg: str, cwd: str | None
    ) -> MutationResult:
        """Run the write ``action`` on session ``arg``; a ``NotFound`` names the archived
        session ``arg`` matches, as :meth:`resolve`'s does."""
        from sessiondex.query.resolve import NotFound

        with self._no_interrupts():
            try:
                return self._mutate_now(action)
            except NotFound as exc:
                self._name_archived(exc, arg, cwd, for_write=True)
                raise

    def _mutate_now(self, action: Callable[[Database], MutationResult]) -> MutationResult:
        # Writes resolve against the writable handle: the session must be found as the
        # index holds it now, and the index follows the write before this returns. The
        # index is checked writable and whole first, so a read-only one fails and a
        # damaged one is rebuilt before the transcript is touched. Damage met after the
        # write (rare: it passed quick_check) is rebuilt too, then raised.
        from sessiondex.indexer.faults import is_corrupt

        try:
            db = self.writable()
        except sqlite3.DatabaseError as exc:  # found before the write: rebuild, go on
            if not is_corrupt(exc) or not self.recover(exc):
                raise
            self._refresh_now()
            db = self.writable()
        # The target is resolved against the index: bring it up to date first, as a
        # read would (a new Index has never looked at the transcripts).
        self.ensure_fresh()
        try:
            return action(db)
        except sqlite3.DatabaseError as exc:
            if is_corrupt(exc) and self.recover(exc):
                self._refresh_now()
            raise

    # ------------------------------------------------------------------ web view
    def message_hits(
        self, query: str, file_paths: Iterable[str], *, raw: bool = False, every: bool = False
    ) -> MessageHits:
        """For each session (by ``file_path``), the uuids of its messages matching
        ``query`` as :meth:`search` reads it, best first: the web view links a result to
        its best message. At most :data:`~sessiondex.query.hits.MAX_HITS_PER_SESSION` a
        session; with ``every``, all of them (the session page counts and places each)."""
        from sessiondex.query.hits import message_hits

        paths = list(file_paths)
        limit: dict[str, Any] = {"per_session": None} if every else {}
        return self._answer(lambda db: message_hits(db, query, paths, raw=raw, **limit))

    # ------------------------------------------------------------------ long-lived front ends
    def watch_transcripts(self) -> bool:
        """Let :meth:`renew` skip its check while no transcript changed: start a
        file-system observer whose events only set a dirty bit
        (:class:`sessiondex.indexer.dirty.DirtyBit`), until :meth:`close`.

        False when there is nothing to watch for (``refresh=False``, the team store) or
        the observer cannot start (said once): :meth:`renew` then checks every time,
        until a later try at events succeeds when the reason may pass (the inotify
        watch or instance limit: :attr:`DirtyBit.retrying`)."""
        if self._changes is not None:
            return self._changes.watching
        if self._team_dsn is not None or not self.auto_refresh:
            return False
        from sessiondex.indexer.dirty import DirtyBit

        changes = DirtyBit(self.roots, log=self.say)
        started = changes.start()
        if started or changes.retrying:
            self._changes = changes  # renew() takes it, and so tries events again
        return started

    def close_if_replaced(self) -> bool:
        """Whether the index file was deleted or replaced (another inode: a watcher or
        another process rebuilt it, a repair moved it aside) since this object opened it;
        if so its handles are closed, and the next answer opens the file there now and
        refreshes it itself rather than trusting a watcher with it.

        An open handle keeps reading the old inode however long it lives, so a
        long-lived front end (the MCP server, ``serve``) would otherwise answer from a
        deleted file forever, seeing nothing new and reporting nothing."""
        from sessiondex.indexer.faults import file_identity

        if self._path is None or self._given is not None or self._identity is None:
            return False
        if self._reader is None and self._writer is None:
            return False
        if file_identity(self._path) == self._identity:
            return False
        self._close_handles()
        self._identity = None
        self._recovered = True
        self._refreshed = False
        return True

    def check_rules(self) -> None:
        """Raise :class:`~sessiondex.indexer.db.IndexFromNewer` when a newer sessiondex
        made the index, or has re-derived or migrated it since this object opened it
        (an upgrade while a front end kept running): its answers would be this code's
        reading of rows and tables it does not know, and its writes are refused anyway.
        One small SELECT on the open handle; with none open, the read-only open's own
        look (``open_current_readonly``). Nothing for the team store. A database error
        while looking (damage, a file truncated under the handle) is not raised here:
        the answer that follows meets it and recovers (:meth:`_answer`)."""
        from sessiondex.indexer.db import open_current_readonly
        from sessiondex.indexer.meta import refuse_newer

        if self._team_dsn is not None:
            return
        handle = self._reader or self._writer or self._given
        if handle is not None:
            refuse_newer(handle, between_passes=True)
        elif self._path is not None and self._path.is_file():
            probe = open_current_readonly(self._path)  # raises it; None: prepare() will
            if probe is not None:
                probe.close()

    def reopen_if_writable(self) -> bool:
        """Close the handles when answers come from the file read as an immutable one
        (its folder could not be written when it was opened) and the folder can be
        written now (one ``access``, only while immutable): True when closed, and the
        next answer opens the file as it is. An immutable handle sees no change to the
        file however long it is kept, so a long-lived front end (``mcp``, ``serve``)
        answered from the index as it was at its start, refreshes written or not,
        until it was restarted."""
        path = self._path
        if not self.read_immutable or path is None or not os.access(path.parent, os.W_OK):
            return False
        self._close_handles()
        return True

    def renew(self) -> None:
        """Apply the refresh rule again now, keeping the open handles.

        A long-lived front end (the MCP server) answers many questions over hours; each
        must see the transcripts as they are when it is asked, as each CLI command does,
        while :meth:`ensure_fresh` refreshes once in this object's life. Called before
        a write too: the writes resolve their argument against the index as it is.

        With :meth:`watch_transcripts` running, the check is skipped while the dirty bit
        is clean and the last renew completed its check or refresh: no transcript changed
        since, so the index still says what they say. When the only events since were
        writes to known transcripts (the session calling a front end appends to its own
        transcript between two calls), just those files are ingested, as ``watch``
        ingests them. Otherwise the whole check and refresh run. The bit is cleared
        *before* any of it, so a change made meanwhile sets it again. A newer sessiondex
        that took the index meanwhile is :meth:`check_rules`' error, every time."""
        if self.close_if_replaced():
            self.say(f"note: the index at {self._path} was deleted or replaced; reading it anew")
        self.reopen_if_writable()
        self.check_rules()
        changes = self._changes
        if changes is not None:
            # A running watch keeps the index current but for its last debounce (up to
            # --max-latency): the writes the dirty bit saw are ingested here all the
            # same, so an answer sees what was appended a moment before it was asked.
            current = self._reader is not None and (self._refreshed or self.watcher_alive())
            if current and changes.clean():
                return
            written = changes.take()
            if current and written is not None:
                if not written or self._ingest_paths(written):
                    return
                # not ingested (busy, read-only, damaged): the whole path below decides
            if current and self.watcher_alive():
                # More than appends (a new session, a new project dir): the refresh,
                # here and now, rather than after watch's debounce.
                self._refresh_for_read()
                self._refreshed = True
                return
        self._refreshed = False
        self._unwritable = False
        if self._reader is not None and self.auto_refresh and not self.watcher_alive():
            from sessiondex.indexer.freshness import nothing_changed

            # The read path's own check (one lstat per transcript, no write turn): most
            # questions of a long-lived front end find nothing changed since the last.
            if nothing_changed(self._reader, self.roots):
                self._refreshed = True
                return
        self.ensure_fresh()

    def message_snippets(
        self, query: str, file_paths: Iterable[str], *, per_session: int = 3
    ) -> dict[str, Sessions]:
        """The best message hits of each session (by ``file_path``) for a full-text query:
        ``{"message_uuid", "role", "snippet"}``, best first, so a search answer can point
        at the exact turn to open."""
        from sessiondex.query.hits import message_snippets

        paths = list(file_paths)
        return self._answer(lambda db: message_snippets(db, query, paths, per_session=per_session))

    # ------------------------------------------------------------------ archive
    def archive(self, **options: Any) -> ArchiveRun:
        """Archive every session Claude Code's sweep deletes within ``window`` seconds
        (default 3 days) that is not archived as it is now; keyword arguments are
        :func:`sessiondex.actions.archive.archive_expiring`'s (``archive_dir``, ``window``,
        ``cwd``, ``now``, ``dry_run``, ``on_result``). Transcripts are not touched."""
        from sessiondex.actions.archive import archive_expiring

        with self._no_interrupts():
            # watch's daily run holds this object for days: a file rebuilt meanwhile
            # (deleted, moved aside) is the index now, not the handle still open.
            self.close_if_replaced()
            db = self.writer()
            self.ensure_fresh()
            return archive_expiring(db, self.roots, db_path=self._path, **options)

    def restore(self, session_id: str) -> RestoreResult:
        """Put an archived session's transcript (and ``<id>/`` folder) back, byte for
        byte; never over an existing transcript."""
        from sessiondex.actions.archive import restore

        with self._no_interrupts():
            db = self.writer()
            self.ensure_fresh()  # a transcript the sweep just deleted must not count as live
            return restore(db, session_id, self.roots)

    # ------------------------------------------------------------------ paging (picker)
    def list_order(self, **filters: Any) -> Sessions:
        """Every session in scope as ``{file_path, session_id, forked_from_session}``, in
        :meth:`list` order, without decoding the objects: an interactive picker lays out
        thousands of rows with it and fetches only the visible ones (:meth:`sessions_at`)."""
        from sessiondex.query.listing import listing_order

        return listing_order(self.reader(), self._filters(filters))

    def agent_names(self, sessions: Sequence[dict[str, Any]]) -> dict[str, str]:
        """``file_path`` → agent name for those of ``sessions`` with an ``agent-name``
        record: shown as ``@name`` beside the title (not a key of the session object)."""
        from sessiondex.query.sessions import agent_names

        return self._answer(lambda db: agent_names(db, sessions))

    def picker_archived(self, sessions: Sequence[dict[str, Any]]) -> set[str]:
        """The ``file_path`` of those of ``sessions`` that Claude Code's picker archived
        (hidden from listings but with ``--all-kinds``): what a table marks."""
        from sessiondex.query.sessions import picker_archived_paths

        return self._answer(lambda db: picker_archived_paths(db, sessions))

    def copies(self, session_id: str) -> Sessions:
        """Every session object this index holds with ID ``session_id`` (in any case,
        an exact match first), newest first, with ``matched_by`` ``id``: a copy with no
        message, and copies in several projects, too, where :meth:`resolve` answers one
        session to open or none. ``store delete`` chooses among them."""
        from sessiondex.query.resolve import id_copies

        return self._answer(lambda db: id_copies(db, session_id, self.roots))

    def sessions_at(self, file_paths: Sequence[str]) -> Sessions:
        """The session objects of these transcripts, in the order given (gone ones left out)."""
        from sessiondex.query.listing import sessions_by_path

        return sessions_by_path(self.reader(), file_paths)

    def interrupt(self) -> None:
        """Abort the query running on the reading handle, from another thread (SQLite's
        ``interrupt``: the query raises ``sqlite3.OperationalError``). An interactive
        front end stops the search that the next keystroke made stale, instead of
        queueing the new one behind it. Never a write (``rename``, ``tag``, ``fork``,
        ``delete``, ``archive``, ``restore``): while one runs this does nothing."""
        with self._interrupt_lock:
            if self._writing:
                return
            handle = self._reader
            conn = getattr(handle, "conn", None)
            if isinstance(conn, sqlite3.Connection):
                conn.interrupt()


def _materialize(team: TeamDatabase, found: Resolution, scratch: Path) -> dict[str, Any]:
    """Write a stored session's entries as ``<scratch>/<n>/projects/<key>/<id>.jsonl``
    (subagents beside it, their ``agent_metadata`` entry as the ``.meta.json``); return
    its session object pointing there."""
    import orjson

    from sessiondex.transcripts.keys import is_session_id

    session = found.session
    root = scratch / str(int(found.row["id"]))
    # The key and the ID are whatever the store's writer said (a teammate, any SDK app):
    # an absolute or ``..`` key, or an ID that is no ID, must not name a file outside
    # the scratch dir (it replaced a local transcript, or wrote anywhere). A key as
    # Claude Code makes it is letters, digits and ``-``; anything else is renamed here.
    key = str(session.get("project_key") or "")
    if not key.replace("-", "").isascii() or not key.replace("-", "").isalnum():
        key = "-stored-session"
    session_id = str(session.get("session_id") or "")
    stem = session_id if is_session_id(session_id) else f"stored-{int(found.row['id'])}"
    project = root / "projects" / key
    files: dict[str, list[str]] = {}
    metas: dict[str, str] = {}
    for subpath, text in team.entries(int(found.row["id"])):
        if subpath and '"agent_metadata"' in text:
            entry = orjson.loads(text)
            if isinstance(entry, dict) and entry.pop("type", None) == "agent_metadata":
                metas[subpath] = orjson.dumps(entry).decode()
                continue
        files.setdefault(subpath, []).append(text)
    for subpath, lines in files.items():
        parts = [p for p in subpath.split("/") if p not in ("", ".", "..") and "\x00" not in p]
        if subpath and not parts:
            continue  # "." or "/": no subagent, and never in place of the main transcript
        name = "/".join([stem, *parts]) if parts else stem
        path = project / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        if subpath in metas:
            path.with_name(path.name[: -len(".jsonl")] + ".meta.json").write_text(metas[subpath])
    return {
        **session,
        "config_dir": str(root),
        "file_path": str(project / f"{stem}.jsonl"),
    }


def _filters(options: dict[str, Any]) -> Filters:
    """The answers' keyword arguments as :class:`Filters`: its fields, or ``filters=`` a
    ready-made one (the CLI builds it from its options)."""
    from sessiondex.query.filters import Filters

    given = options.get("filters")
    if isinstance(given, Filters):
        if len(options) > 1:
            raise TypeError("pass either filters= or the filter fields, not both")
        return given
    return Filters(**options)


def _as_database(db: Any) -> Database:
    """An open connection (sqlite3 or sqlite-utils), as the sqlite-utils ``Database``
    the layers below take, migrated if it is new."""
    from sqlite_utils import Database

    from sessiondex.indexer.db import ReadOnlyIndex, prepare

    if isinstance(db, sqlite3.Connection):
        _check_factories(db)
        return prepare(Database(db))
    if isinstance(db, Database):
        _check_factories(db.conn)
        return prepare(db)
    if isinstance(db, ReadOnlyIndex):
        return db  # type: ignore[return-value]  # the subset the query layer uses
    raise TypeError(
        "db must be a path, a sqlite3.Connection or a sqlite_utils.Database, "
        f"not {type(db).__name__}"
    )


def _check_factories(conn: sqlite3.Connection) -> None:
    """A caller's connection must give rows and text as sqlite3 does by default (or
    ``sqlite3.Row``, which indexes as a tuple): the layers below read ``row[0]`` and
    compare strings. Said plainly, rather than as a KeyError or a migration that
    'already exists' half-way through."""
    if conn.text_factory is not str:
        raise ValueError(
            "the connection's text_factory must be str (the default), "
            f"not {conn.text_factory!r}: sessiondex reads its text as text"
        )
    if conn.row_factory not in (None, sqlite3.Row):
        raise ValueError(
            "the connection's row_factory must be None or sqlite3.Row, "
            f"not {conn.row_factory!r}: sessiondex reads rows by position"
        )
    _no_transaction(conn)


def _no_transaction(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        raise ValueError(
            "the connection has a transaction open: commit or roll back before handing"
            " it to Index or asking it to write (its settings change only outside one,"
            " and a rollback of yours would undo a refresh it believes done)"
        )


def _full_session_id(arg: Any) -> bool:
    from sessiondex.transcripts.keys import is_session_id

    return isinstance(arg, str) and is_session_id(arg.strip())


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _config_dir_text(value: str | bytes | os.PathLike[str]) -> str:
    """A config dir given to :class:`Index`, as text; ``ValueError`` for an empty one (it
    would have meant ``~/.claude``, the user's real history, as an unset variable does
    on the command line) or one that is not valid UTF-8 (no transcript path holds it)."""
    raw = os.fspath(value)
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"config dir {value!r} is not valid UTF-8") from None
    if not raw.strip():
        raise ValueError("a config dir is empty (is a variable unset?)")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"config dir {raw!r} is not valid UTF-8") from None
    return raw


def _sessions_held(db: Database) -> int:
    """How many sessions the index holds (0 when its tables are not there yet)."""
    try:
        return int(db.execute("SELECT count(*) FROM sessions").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _ever_filled(db: Database) -> bool:
    """Whether a refresh ever completed on this index (a watcher that is alive is trusted
    only then: an index deleted under it, or new, has not been filled by anyone)."""
    from sessiondex.indexer.meta import get_meta

    return get_meta(db, "last_refresh") is not None
