"""The web view's one :class:`sessiondex.Index`, used from one thread.

Datasette answers requests on an asyncio loop and runs its own SQL in a thread pool;
an Index is not thread-safe (its SQLite handles belong to the thread that opened them),
so every Index call of the web view runs on one dedicated worker thread. That thread is
also where the refresh happens: before a request is answered the index is brought up to
date — at most once a second, and not at all while a ``sessiondex watch`` keeps it live
or when ``--no-refresh`` was given. Datasette's own read-only connections then see the
new rows (WAL), so its table views follow too.

A refresh that fails (a read-only index, a full disk, a busy one) is answered from the
index as it is, and said on stderr once: again only when the cause changes, or after
a refresh worked (which is said too). It was said on every request a second apart.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from sessiondex.indexer.db import IndexFromNewer

if TYPE_CHECKING:
    from sessiondex.index import Index

T = TypeVar("T")

#: A refresh on a request happens at most this often (seconds).
REFRESH_INTERVAL = 1.0


class WebIndex:
    """An Index owned by one worker thread, with a throttled refresh."""

    def __init__(
        self,
        index: Index,
        *,
        interval: float = REFRESH_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        loopback_only: bool = True,
    ) -> None:
        self.index = index
        # Answer only requests whose Host names a loopback host (web/hosts.py).
        self.loopback_only = loopback_only
        # Called on the event loop after such a reopening (Datasette's own connections).
        self.on_replaced: Callable[[], None] | None = None
        self.interval = interval
        self._clock = clock
        self._last: float | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessiondex-index")
        self.refreshes = 0  # how many refreshes ran (tests check the throttle)
        # Why the last refresh failed (see _cause), once it was said; None after one worked.
        self._failing: str | None = None
        # The Index reads the file as immutable (a read-only folder): Datasette must too.
        self.read_immutable = False

    # ------------------------------------------------------------------ calling it
    def call(self, fn: Callable[[Index], T]) -> T:
        """Run ``fn(index)`` on the worker thread and wait for it (from sync code)."""
        return self._executor.submit(fn, self.index).result()

    async def run(self, fn: Callable[[Index], T]) -> T:
        """Run ``fn(index)`` on the worker thread without blocking the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, self.index)

    # ------------------------------------------------------------------ freshness
    def start(self) -> None:
        """The refresh before serving (by the Index's rule), and the database opened,
        so that the file Datasette opens exists and is current. Errors propagate: a
        server that cannot read its index should not start."""

        def first(index: Index) -> None:
            index.ensure_fresh()
            index.reader()
            self.read_immutable = index.read_immutable
            # The Index said why it answers as it is (its note): not said again.
            self._failing = index.stale_because

        self.call(first)
        self._last = self._clock()

    def _maybe_refresh(self, index: Index) -> bool:
        """Refresh (throttled); True when the index file had been deleted or replaced
        and was opened again (rebuilt from the transcripts), as ``watch`` does: the
        pages answered from the deleted file, and Datasette's tables failed."""
        replaced = index.close_if_replaced()
        # Every request, not throttled (one small SELECT): a newer sessiondex that took
        # the index is the request's error page (IndexFromNewer, web/plugin.py).
        index.check_rules()
        if replaced:
            print(
                f"sessiondex serve: the index at {index.db_path} was deleted or replaced; "
                "opening it again",
                file=sys.stderr,
            )
            self._last = None  # refresh now, whatever the throttle says
        now = self._clock()
        if self._last is not None and now - self._last < self.interval:
            return replaced
        self._last = now
        if index.auto_refresh:
            try:
                if replaced or not index.watcher_alive():
                    index.refresh()
                    self.refreshes += 1
                    self._recovered(index)
            except IndexFromNewer:
                raise  # not answered from: the error page
            except Exception as exc:  # a busy or damaged index: answer from what is there
                self._failed(index, exc)
            if replaced:
                index.reader()
                self.read_immutable = index.read_immutable
                return replaced
        if not replaced and index.reopen_if_writable():
            # Read as it is now (mode=ro, the WAL too); Datasette attaches it so again.
            index.reader()
            self.read_immutable = index.read_immutable
            return True
        return replaced

    def _failed(self, index: Index, exc: Exception) -> None:
        """Say why the refresh failed, unless that was said last."""
        from sessiondex.indexer.faults import classify, describe

        kind = classify(exc)
        cause = kind or f"{type(exc).__name__}: {exc}"
        if cause == self._failing:
            return
        self._failing = cause
        why = f"refresh failed: {exc}" if kind is None else describe(exc, index.db_path)
        print(
            f"sessiondex serve: {why}; answering from the index as it is (said again when"
            " that changes)",
            file=sys.stderr,
        )

    def _recovered(self, index: Index) -> None:
        """After failures were said, say that a refresh worked again."""
        if self._failing is None:
            return
        self._failing = None
        print(
            f"sessiondex serve: the index at {index.db_path} is brought up to date again",
            file=sys.stderr,
        )

    async def fresh(self) -> None:
        """Bring the index up to date for a request (throttled; see the module)."""
        if await self.run(self._maybe_refresh) and self.on_replaced is not None:
            self.on_replaced()

    def close(self) -> None:
        """Close the Index's handles on the thread that opened them, then stop it."""
        try:
            self.call(lambda index: index.close())
        finally:
            self._executor.shutdown(wait=True)
