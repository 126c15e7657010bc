"""The picker's connection to the index: every query on one thread, off the UI thread.

A SQLite handle belongs to the thread that opened it, and the UI must never wait on a
query while a key is pressed. So the picker talks to :class:`sessiondex.Index` only
through :meth:`Source.submit`, which runs a function on one worker thread that holds an
``Index(refresh=False)``: queries are serialized, a pending one can be cancelled before
it starts (the search worker does so for every superseded keystroke), and the UI awaits
the result.

Keeping the index live while the picker is open is :class:`Freshness`'s job, on a thread
of its own with its own ``Index``: with a ``watch`` running it only notices that the
database changed; without one it runs the cheap incremental refresh every few seconds.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from sessiondex.index import Index

T = TypeVar("T")
WATCH_POLL = 0.5  # seconds between looks at the database while a watcher keeps it live


class Interrupted(Exception):
    """A search stopped by :meth:`Source.interrupt` (a newer keystroke superseded it)."""


@dataclass(frozen=True)
class FirstLook:
    """The index as it stood when the picker's first rows were read from it, taken
    after the refresh before them and before their query (:meth:`Source.first_rows`):
    where :class:`Freshness` starts comparing. Its own first look comes later, once
    the UI has started, and a change committed in between was shown only with the
    next one."""

    stamp: tuple[Any, ...] | None  # Index.listing_stamp, None when it could not be read
    signature: tuple[tuple[int, int] | None, ...]  # database_signature


class Source:
    """One ``Index`` on one thread; ``submit`` a function of it, get a future."""

    def __init__(
        self, db_path: Path, config_dirs: Sequence[Path], *, refresh_first: bool = False
    ) -> None:
        """``refresh_first``: the first job's ``Index`` brings the index up to date once
        before it answers, as every reading command does (a stat per transcript when
        nothing changed, nothing while a ``watch`` keeps it live). The picker's first
        rows then show the session just used on top; from an index that was behind, it
        moved there a moment later, under a highlight kept on another session."""
        self.db_path = Path(db_path)
        self.config_dirs = list(config_dirs)
        self._refresh_first = refresh_first
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessiondex-pick")
        self._index: Index | None = None
        self._interruptible = False
        self._interrupted = False  # interrupt() was called during the running job
        self.first_look: FirstLook | None = None
        self._behind: set[str] = set()  # note_behind
        self._behind_lock = threading.Lock()

    def first_rows(self, job: Callable[[Index], T]) -> Future[T]:
        """Run the first rows' ``job`` on the index thread, noting the index as it stands
        just before their query (:class:`FirstLook`)."""

        def look_then_load(index: Index) -> T:
            index.reader()  # the refresh before the rows: the job's query then reads
            stamp: tuple[Any, ...] | None = None
            with contextlib.suppress(Exception):  # the live thread takes its own then
                stamp = index.listing_stamp()
            self.first_look = FirstLook(stamp, database_signature(self.db_path))
            return job(index)

        return self.submit(look_then_load)

    def open_index(self, *, refresh: bool = False) -> Index:
        """A new ``Index`` on the same database and config dirs (for another thread)."""
        from sessiondex.index import Index

        return Index(self.db_path, self.config_dirs, refresh=refresh)

    def submit(self, job: Callable[[Index], T], *, interruptible: bool = False) -> Future[T]:
        """Run ``job(index)`` on the index thread. An ``interruptible`` job (a search)
        may be stopped mid-query by :meth:`interrupt`; it then raises
        :class:`Interrupted`."""
        return self._executor.submit(self._run, job, interruptible)

    def _run(self, job: Callable[[Index], T], interruptible: bool) -> T:
        if self._index is None:
            self._index = self.open_index(refresh=self._refresh_first)
        else:
            # Opened immutable (its folder could not be written), the handle sees no
            # change however long the picker stays open: once the folder can be written
            # again, the next query opens the file as it is (one access(), only then).
            self._index.reopen_if_writable()
        self._interrupted = False
        self._interruptible = interruptible
        try:
            return job(self._index)
        except sqlite3.OperationalError as exc:
            # An interrupt that lands while SQLite builds a virtual table says "vtable
            # constructor failed", not "interrupted": any error of a job we stopped is
            # the stop
            if interruptible and (self._interrupted or "interrupt" in str(exc)):
                raise Interrupted() from None
            raise
        finally:
            self._interruptible = False

    def note_behind(self, session_id: str) -> None:
        """The index could not take a change of this session the picker wrote
        (``IndexNotUpdated``): :class:`Freshness` syncs it until it can."""
        with self._behind_lock:
            self._behind.add(session_id)

    def behind(self) -> list[str]:
        with self._behind_lock:
            return sorted(self._behind)

    def caught_up(self, session_id: str) -> None:
        with self._behind_lock:
            self._behind.discard(session_id)

    def interrupt(self) -> None:
        """Stop the running job if it is interruptible (called from the UI thread)."""
        if self._interruptible and self._index is not None:
            self._interrupted = True
            self._index.interrupt()

    def close(self) -> None:
        """Finish the running query, drop the pending ones, close the handle."""

        def close_index(index: Index) -> None:
            index.close()

        if self._index is not None:
            try:
                self.submit(close_index).result(timeout=10)
            except Exception:  # noqa: BLE001 - closing must not fail the exit
                pass
        self._executor.shutdown(wait=True, cancel_futures=True)


def database_signature(db_path: Path) -> tuple[tuple[int, int] | None, ...]:
    """(mtime, size) of the database and its WAL: any commit by another process (a
    ``watch``) changes one of them, and a ``stat`` is all it costs to look."""
    out: list[tuple[int, int] | None] = []
    for path in (db_path, Path(f"{db_path}-wal")):
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
        else:
            out.append((st.st_mtime_ns, st.st_size))
    return tuple(out)


class _Newer(Exception):
    """This round met a newer sessiondex's index (already said): nothing more to do."""


class Freshness:
    """Calls ``on_change`` (from its own thread) whenever the index changed.

    When a ``watch`` keeps the index live, compare the database's
    :func:`database_signature` every ``WATCH_POLL`` seconds; otherwise, every
    ``interval`` seconds, run ``Index.refresh()`` (the same
    stat-first incremental pass every command runs) and report it when it read anything.
    The first round runs at once, so a picker opened on a stale index paints first and
    catches up right after. ``on_error`` gets the first failure of a kind (a busy or
    read-only database); the loop goes on.
    """

    def __init__(
        self,
        source: Source,
        interval: float,
        on_change: Callable[[], None],
        on_error: Callable[[str], None],
        *,
        refresh: bool = True,
    ) -> None:
        self.source = source
        self.interval = interval
        self.on_change = on_change
        self.on_error = on_error
        self.refresh = refresh
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="sessiondex-pick-live", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)  # a daemon: a long refresh may finish alone

    def _loop(self) -> None:
        from sessiondex.indexer.db import IndexFromNewer

        index = self.source.open_index(refresh=self.refresh)
        # What the rows on screen were read from (Source.first_rows), else a look now.
        first = self.source.first_look
        seen = first.signature if first else database_signature(self.source.db_path)
        # Index.listing_stamp as last seen: taken before the first refresh, so that a
        # change another process commits while that refresh runs is seen too
        stamp: tuple[Any, ...] | None = first.stamp if first else None
        if self.refresh and stamp is None:
            with contextlib.suppress(Exception):  # reported by the first round instead
                stamp = index.listing_stamp()
        errors: set[str] = set()
        newer = False  # the last look found a newer sessiondex's index
        try:
            while not self._stop.is_set():
                changed = watching = False
                try:
                    # An upgrade while the picker stays open, with a watch running too:
                    # the CLI's line, once, and a reload, which then shows that line in
                    # place of rows; an index rebuilt by this version later is a reload.
                    try:
                        index.check_rules()
                    except IndexFromNewer as exc:
                        if not newer:
                            newer = changed = True
                            self.on_error(str(exc))
                        raise _Newer() from None
                    reload = newer  # the newer copy's index is gone: rows again
                    newer = False
                    watching = index.watcher_alive()
                    if not watching:  # (a watch catches the transcripts up itself)
                        # A change of the picker's own the index could not take (a full
                        # disk): that session's row, as soon as the index takes it.
                        for session_id in self.source.behind():
                            reload = index.sync_session(session_id) or reload
                            self.source.caught_up(session_id)
                    if self.refresh and not watching:
                        # A refresh writes its bookkeeping even when no file changed:
                        # what it read says whether sessions did. What another process
                        # wrote since the last look (a rename, an MCP server's or a
                        # command's refresh), even while this refresh ran, shows in the
                        # sessions' stamp (not every commit: the picker's own other
                        # Index refreshes too, and a reload for nothing is a repaint).
                        stats = index.refresh()
                        now_stamp = index.listing_stamp()
                        elsewhere = stamp is not None and now_stamp != stamp
                        stamp = now_stamp
                        changed = elsewhere or bool(
                            stats.new
                            + stats.grown
                            + stats.rewritten
                            + stats.removed
                            + stats.picker_archives
                        )
                        seen = database_signature(self.source.db_path)
                    else:
                        now = database_signature(self.source.db_path)
                        changed, seen = now != seen, now
                    changed = changed or reload
                    # A round passed: the same failure later is news, said again.
                    errors.clear()
                except _Newer:
                    pass
                except Exception as exc:  # noqa: BLE001 - reported, then retried
                    kind = type(exc).__name__
                    if kind not in errors:
                        errors.add(kind)
                        self.on_error(f"could not refresh the index: {exc}")
                if changed and not self._stop.is_set():
                    try:
                        self.on_change()
                    except RuntimeError:  # the UI's loop has closed: we are done
                        return
                # A stat is cheap: with a watcher, look more often than we would refresh.
                self._stop.wait(self.interval if self.refresh and not watching else WATCH_POLL)
        finally:
            index.close()
