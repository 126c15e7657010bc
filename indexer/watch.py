"""Keep the index live from file-system events (``sessiondex watch``).

Shape (watchdog's own examples): the observer's handler only *enqueues* paths; one worker
thread owns the only writing SQLite connection and applies :func:`sessiondex.indexer.refresh.ingest_path`
to each changed path, the same per-file incremental ingest ``refresh()`` uses, so a live
index and a rebuilt one cannot drift apart by construction.

Why not watchdog's ``EventDebouncer``: it restarts its timer on every event, so a session
that streams a line every 50 ms would never be indexed. Here each path is applied when it
has been quiet for ``debounce`` seconds **or** ``max_latency`` seconds after its first
event, whichever comes first: each by its own events, so a session streaming beside it
does not hold back another session's append (one timer for all made every append wait
``max_latency`` while any session was being written).

Events are hints, not truth: every path is re-stat'ed and classified by the ingest (a
half-written last line is never consumed, a rewritten file is re-read from scratch), a
directory event re-scans that directory, and a periodic full ``refresh()`` (and an
immediate one when inotify reports a queue overflow) catches whatever the stream dropped.

The watcher outlives what goes wrong around it: a file whose ingest fails (unreadable,
a record the derivation chokes on, the database busy or full for a while) is logged and
tried again with a growing delay (capped at ``RETRY_MAX``, ``RETRY_LIMIT`` times) while
every other file goes on, and a failure of the database itself (full, read-only, busy)
also brings full passes until one succeeds, however long that takes; an index file
that is deleted or replaced under it (checked on every wake-up: one ``stat``) or found
damaged is reopened — moved aside first when damaged — and rebuilt from the
transcripts, so readers never meet an empty index that a watcher claims to keep
current. Native events found unreliable while watching (a directory left unwatched at
the watch limit, an overflow storm), or unavailable at start for a limit, give way to
polling, and are tried again after a wait that doubles each time they fail again.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import BaseObserver, ObservedWatch

from sessiondex.indexer.db import IndexFromNewer, open_db, recover_damaged
from sessiondex.indexer.faults import CORRUPT, classify, file_identity
from sessiondex.indexer.ingest import include_tools_setting, ingest_file
from sessiondex.indexer.meta import refuse_newer
from sessiondex.indexer.refresh import ingest_path, refresh
from sessiondex.indexer.shape import RACY_WINDOW_NS, settled_at
from sessiondex.indexer.stats import NEW, REWRITTEN, RefreshStats
from sessiondex.transcripts.discover import (
    MAIN,
    PICKER_ARCHIVE_NAME,
    SESSION_ALIASES_NAME,
    describe_path,
    iter_subagent_files,
    storable,
    why_unseen,
)
from sessiondex.transcripts.keys import is_session_id
from sessiondex.transcripts.tree import walk

logger = logging.getLogger(__name__)

# watchdog walks a watched tree with os.walk, which recurses once per level before
# Python 3.12: a session folder ~1,000 deep was a RecursionError in the observer (a
# traceback at start, or an emitter thread that died while `watch` went on as if alive).
# No path nests deeper than PATH_MAX (4,096 bytes) allows, about 2,000 levels.
WATCH_RECURSION_LIMIT = 10_000


def room_for_deep_trees() -> None:
    """Let watchdog's walks reach the deepest tree a path can name (both observers:
    ``watch``'s and the MCP server's dirty bit)."""
    import sys

    if sys.getrecursionlimit() < WATCH_RECURSION_LIMIT:
        sys.setrecursionlimit(WATCH_RECURSION_LIMIT)


DEFAULT_DEBOUNCE = 0.1
# A transcript written without pause (a live session streaming records) is applied
# this long after its first change at the latest: within the 300 ms goal for a new line
# to reach search. Each pass over a grown transcript checks its whole prefix (a CRC:
# ~15 ms per 50 MB), so a huge live session costs that four times a second.
DEFAULT_MAX_LATENCY = 0.25
DEFAULT_RESCAN = 300.0
DEFAULT_POLL_INTERVAL = 1.0
# How often the worker wakes when idle: to notice a projects/ dir that appeared (or was
# replaced) and to run the periodic rescan. Cheap: one stat per root.
TICK = 1.0
SUFFIX = ".jsonl"
# A failed file is tried again after RETRY_FIRST seconds, doubling up to RETRY_MAX, at
# most RETRY_LIMIT times (~2 minutes); after that only its next change (an event) or the
# periodic rescan tries it: a file that stays unreadable must not log forever.
RETRY_FIRST = 0.5
RETRY_MAX = 30.0
RETRY_LIMIT = 8
# A stop commits what was queued when it came (the last batch), for this long at most:
# then a batch still being applied (thousands of sessions moved in at once, ~2 ms a file)
# ends after the file it is on, and the next start reads the rest. The CLI waits 30 s for
# the worker; past that it released the lock while the worker went on writing.
STOP_GRACE = 2.0
# A file whose last line had no newline yet is looked at again this long after the
# racy window (shape.RACY_WINDOW_NS) has passed, so that it counts as quiet then.
QUIET_MARGIN = 0.25

# Native events given up for a reason that may pass (the inotify watch or instance limit
# reached, an overflow storm) are tried again after NATIVE_RETRY_FIRST seconds, then
# after twice as long each time they fail again, at most NATIVE_RETRY_MAX apart: a few
# switches a day at worst, never a flapping.
NATIVE_RETRY_FIRST = 600.0
NATIVE_RETRY_MAX = 4 * 3600.0
_LIMITS = frozenset({errno.ENOSPC, errno.EMFILE})
INOTIFY_WATCH_LIMIT = "/proc/sys/fs/inotify/max_user_watches"

# Event kinds that can change what a transcript holds. "opened"/"closed_no_write" never
# do; "closed" always follows a "modified" that is already queued.
_FILE_EVENTS = frozenset({"created", "modified", "moved", "deleted", "attrib"})
# A directory's "attrib" is a chmod (or chown): a project dir restored with bad modes
# and then mended must be walked again, not left to the periodic rescan.
_DIR_EVENTS = frozenset({"created", "moved", "deleted", "attrib"})
# The same kinds as watchdog event classes, for ``schedule(event_filter=...)``: the kernel
# is then not even asked for open/close events (a reader of the transcripts, such as the
# refresh itself, would otherwise wake the observer once per file it reads).
EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileAttribEvent,
    FileMovedEvent,
    FileDeletedEvent,
    DirCreatedEvent,
    DirMovedEvent,
    DirDeletedEvent,
    DirAttribEvent,
]


class NativeRetry:
    """When to try native events again after they were given up for a reason that may
    pass (:func:`may_pass`: the inotify watch or instance limit, an overflow storm),
    and whether the tree fits the watch limit for a try: the one rule for ``watch``
    (back from polling) and the MCP server's dirty bit (back from checking every
    transcript before each answer). The wait doubles each time they fail again (left
    again, or still unavailable), from ``NATIVE_RETRY_FIRST`` to ``NATIVE_RETRY_MAX``:
    a storm that keeps coming back keeps its user off them longer, never flapping."""

    def __init__(self) -> None:
        self.failures = 0
        self.again_at: float | None = None  # monotonic; None: no try planned

    def later(self) -> str:
        """Plan the next try after one more failure; returns the end of the log line
        that says when."""
        self.failures += 1
        delay = _backoff(self.failures, NATIVE_RETRY_FIRST, NATIVE_RETRY_MAX)
        self.again_at = time.monotonic() + delay
        return f"; trying native events again in {delay:g}s"

    def due(self) -> bool:
        """A planned try is due now: it is taken (a failed try plans the next one with
        :meth:`later`)."""
        if self.again_at is None or time.monotonic() < self.again_at:
            return False
        self.again_at = None
        return True

    def too_big(self, roots: list[Path]) -> str | None:
        """Why a try is not made now (the start of a log line), or None. A try would
        take every watch left to the user for a moment while the directories to watch
        outnumber the kernel's per-user limit, and another program asking for one then
        would be refused; it cannot succeed anyway."""
        needed, limit = _watches_needed(roots), _inotify_watch_limit()
        if limit is not None and needed > limit:
            return (
                f"native file events need {needed} watches, more than "
                f"fs.inotify.max_user_watches ({limit})"
            )
        return None


def may_pass(exc: BaseException) -> bool:
    """Whether native events that failed to start with ``exc`` may work later: the
    watch or instance limit (another program gone, the limit raised), not a file system
    without them."""
    return isinstance(exc, OSError) and exc.errno in _LIMITS


class WatchError(RuntimeError):
    """The watcher could not start or its worker stopped on an unexpected error."""


class _Stopping(Exception):
    """A full pass, or a batch past ``STOP_GRACE``, given up between two files because the
    watcher is stopping: the files it committed stay (each with its offset), and the next
    start catches up on the rest. A cold catch-up of a multi-GB history takes minutes;
    Ctrl-C must not wait for it."""


@dataclass
class BatchReport:
    """One applied batch (or catch-up / rescan), for ``-v`` logging and tests."""

    reason: str  # "catch-up", "events", "rescan" or "rebuild"
    paths: list[str]
    stats: RefreshStats
    seconds: float


@dataclass
class _Work:
    files: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # created, moved, deleted: walk them
    rescan: bool = False
    # Walked too, but never a projects/ dir "replaced": a chmod (attrib), and the scan
    # that follows a new watch. Counted as replaced, a watched projects/ dir was watched
    # again, which queued its scan, which watched it again: a loop.
    scans: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.files or self.dirs or self.scans or self.rescan)


class _Pending:
    """The coalescing queue between the observer thread and the worker.

    A dict keeps each path once (in first-seen order) however many events name it: a
    burst of 200 appends to one transcript is one ingest of that file. Each path keeps
    the time of its first and last event since it was queued: it is due on its own
    (:meth:`take`).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        # path -> [first event, last event] (monotonic seconds)
        self._files: dict[str, list[float]] = {}
        self._dirs: dict[str, list[float]] = {}
        self._scans: dict[str, list[float]] = {}
        self._rescan = False
        self._stopping = False
        self._stopped_at = 0.0  # monotonic

    def _add(self, queue: dict[str, list[float]], path: str) -> None:
        with self._cond:
            now = time.monotonic()
            times = queue.get(path)
            if times is None:
                queue[path] = [now, now]
            else:
                times[1] = now
            self._cond.notify()

    def add_file(self, path: str) -> None:
        self._add(self._files, path)

    def add_dir(self, path: str) -> None:
        self._add(self._dirs, path)

    def add_scan(self, path: str) -> None:
        self._add(self._scans, path)

    def request_rescan(self) -> None:
        with self._cond:
            self._rescan = True
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            if not self._stopping:
                self._stopped_at = time.monotonic()
            self._stopping = True
            self._cond.notify()

    @property
    def stopping(self) -> bool:
        return self._stopping

    def stopped_for(self) -> float:
        """Seconds since :meth:`stop` (0 before it)."""
        return time.monotonic() - self._stopped_at if self._stopping else 0.0

    def __len__(self) -> int:
        with self._cond:
            return len(self._files) + len(self._dirs) + len(self._scans)

    def _drain(
        self, due_by: float | None = None, debounce: float = 0.0, limit: float = 0.0
    ) -> _Work:
        """The queued paths due by ``due_by`` (None: all of them), taken off the queue."""
        taken = []
        for queue in (self._files, self._dirs, self._scans):
            if due_by is None:
                ready = list(queue)
            else:
                ready = [
                    p
                    for p, (first, last) in queue.items()
                    if _due(first, last, debounce, limit) <= due_by
                ]
            for path in ready:
                del queue[path]
            taken.append(ready)
        work = _Work(taken[0], taken[1], self._rescan, taken[2])
        self._rescan = False
        return work

    def _next_due(self, debounce: float, limit: float) -> float | None:
        return min(
            (
                _due(first, last, debounce, limit)
                for queue in (self._files, self._dirs, self._scans)
                for first, last in queue.values()
            ),
            default=None,
        )

    def take(self, debounce: float, max_latency: float, tick: float) -> _Work | None:
        """Block until a path is due (quiet for ``debounce``, or ``max_latency`` after
        its first event) and return the paths that are, or until a rescan is asked for
        (everything queued goes with it), or ``tick`` passes (an empty work item); None
        once stopped and drained: a stop flushes what is pending instead of dropping it."""
        with self._cond:
            wake = time.monotonic() + tick
            while True:
                now = time.monotonic()
                due = self._next_due(debounce, max_latency)
                if due is not None:
                    if self._stopping or self._rescan:
                        return self._drain()
                    if now >= due:
                        return self._drain(now, debounce, max_latency)
                    self._cond.wait(due - now)
                elif self._rescan:
                    return self._drain()
                elif self._stopping:
                    return None
                elif now >= wake:
                    return _Work()
                else:
                    self._cond.wait(wake - now)


def _due(first: float, last: float, debounce: float, limit: float) -> float:
    """When a path queued at ``first`` and named again at ``last`` is applied."""
    return min(last + debounce, first + limit)


def relevant_paths(event: FileSystemEvent) -> tuple[list[str], list[str]]:
    """(transcript files, directories) an event names that can change what the index
    holds; both empty for an event that cannot (an open, a read, a non-``.jsonl`` file,
    a directory's own mtime). The one rule for ``watch`` and the MCP server's dirty bit
    (:mod:`sessiondex.indexer.dirty`)."""
    kinds = _DIR_EVENTS if event.is_directory else _FILE_EVENTS
    if event.event_type not in kinds:
        return [], []
    paths = [os.fsdecode(event.src_path)]
    if event.event_type == "moved":  # forget the source, index the destination
        paths.append(os.fsdecode(event.dest_path))
    # A name that is not UTF-8 (a Latin-1 folder unzipped here) is never indexed:
    # ``index`` skips it, and queued it stopped the watcher (``storable``).
    paths = [p for p in paths if storable(p)]
    if event.is_directory:
        # a session's <id>/ folder moved or deleted (to the trash, say) takes its
        # archived.json along: its main transcript is what changes in the index
        mains = [p + SUFFIX for p in paths if is_session_id(os.path.basename(p))]
        return mains, paths
    files = [p for p in paths if p.endswith(SUFFIX)]
    # Claude Code's picker archive (ctrl+e) writes <id>/archived.json and no transcript:
    # its session's main transcript is what changes in the index.
    files += [
        folder + SUFFIX
        for p in paths
        if os.path.basename(p) == PICKER_ARCHIVE_NAME
        and is_session_id(os.path.basename(folder := os.path.dirname(p)))
    ]
    return files, []


def names_session_aliases(event: FileSystemEvent) -> bool:
    """Whether an event says a ``.session-aliases`` was created, written, moved or
    deleted. What the index keeps of it (the alias dirs a scope takes) is brought up to
    date by a whole refresh only (``indexer.refresh.sync_session_aliases``), and while a
    ``watch`` runs a reading command does not refresh itself: the watcher (and the MCP
    server's dirty bit) ask for that refresh, or a session started in a symlinked
    spelling of a directory stayed out of its list until the periodic rescan. Claude Code
    writes one a line per such session: rare."""
    if event.is_directory or event.event_type not in _FILE_EVENTS:
        return False
    paths = [event.src_path] + ([event.dest_path] if event.event_type == "moved" else [])
    return any(os.path.basename(os.fsdecode(p)) == SESSION_ALIASES_NAME for p in paths)


class _Handler(FileSystemEventHandler):
    """Runs on the observer's thread: classify the event, enqueue, return.

    A ``projects/`` that is a link (to a bigger disk, say) is watched where it points
    (``watched``); its events name paths there, which are queued under the configured
    one (``configured``), where the index has them."""

    def __init__(self, pending: _Pending, watched: str = "", configured: str = "") -> None:
        self._pending = pending
        self._watched = watched.rstrip(os.sep) + os.sep if watched else ""
        self._configured = configured.rstrip(os.sep) + os.sep if configured else ""

    def _configured_path(self, path: str) -> str:
        if self._watched == self._configured or not path.startswith(self._watched):
            return path
        return self._configured + path[len(self._watched) :]

    def on_any_event(self, event: FileSystemEvent) -> None:
        if names_session_aliases(event):
            self._pending.request_rescan()
            return
        files, dirs = relevant_paths(event)
        walk = self._pending.add_scan if event.event_type == "attrib" else self._pending.add_dir
        for path in dirs:
            walk(self._configured_path(path))
        for path in files:
            self._pending.add_file(self._configured_path(path))


#: Overflows this close together (within OVERFLOW_WINDOW seconds) are a storm: with more
#: directories watched than the kernel's queue holds, watchdog's own recovery (every
#: watch removed and added again, each removal an event) overflows the queue again, for
#: ever, a core busy and a rescan a second.
OVERFLOW_STORM = 5
OVERFLOW_WINDOW = 10.0


class OverflowTrap(logging.Handler):
    """watchdog reports an inotify queue overflow, and a directory it could not watch
    (the watch limit reached), only as log warnings: turn an overflow into an immediate
    rescan, and either of the two that says events can no longer be trusted (a
    directory left unwatched, overflows in a storm) into :attr:`unreliable`, the reason
    the watcher stops using native events (:meth:`Watcher._leave_native_events`)."""

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self._on_overflow = on_overflow
        self._overflows: deque[float] = deque(maxlen=OVERFLOW_STORM)
        self.unreliable: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.lower().startswith("unable to watch"):  # ENOSPC/EMFILE: a dir unseen
            self.unreliable = message
            self._on_overflow()
        elif "overflow" in message.lower():
            # One overflow is logged once as events lost, then once per watched root as
            # a reconciling: only the first counts towards a storm.
            if "events were lost" in message:
                now = time.monotonic()
                self._overflows.append(now)
                if (
                    len(self._overflows) == OVERFLOW_STORM
                    and now - self._overflows[0] < OVERFLOW_WINDOW
                ):
                    self.unreliable = "the inotify event queue overflows again and again"
            self._on_overflow()


def observer_name(observer: BaseObserver) -> str:
    """``inotify``, ``fsevents``, ``polling``…: for the start-up log line."""
    return type(observer).__name__.removesuffix("Observer").lower() or "native"


class Watcher:
    """Catch up, then keep the index at ``db_path`` live for ``roots`` until :meth:`stop`.

    ``with Watcher(db_path, roots) as w: ...`` starts (blocking until the catch-up refresh
    is committed) and stops. The caller holds :class:`indexer.lock.WatcherLock`; the
    watcher itself only promises to be the one writer *inside* this process.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        roots: list[Path],
        *,
        debounce: float = DEFAULT_DEBOUNCE,
        max_latency: float = DEFAULT_MAX_LATENCY,
        rescan: float = DEFAULT_RESCAN,
        poll: bool = False,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        on_batch: Callable[[BatchReport], None] | None = None,
        log: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        self.db_path = Path(db_path)
        self.roots = list(roots)
        self.debounce = debounce
        self.max_latency = max_latency
        self.rescan_interval = rescan
        self.poll = poll
        self.poll_interval = poll_interval
        self.on_batch = on_batch
        self.log = log or logger.warning
        # Asked between two files of a full pass, with stop(): the CLI's signal handler
        # sets it while start() still waits for the catch-up (stop() comes after that).
        self.should_stop = should_stop
        self.failure: BaseException | None = None
        self.catch_up: RefreshStats | None = None
        self._pending = _Pending()
        self._handler = _Handler(self._pending)
        self._observer: BaseObserver | None = None
        # projects dir → (watch, inode of the dir when scheduled)
        self._watches: dict[str, tuple[ObservedWatch, int]] = {}
        self._observer_lock = threading.Lock()
        self._ready = threading.Event()
        self._worker: threading.Thread | None = None
        self._trap = OverflowTrap(self._pending.request_rescan)
        self._dirty = False
        self._rescan_failures = 0
        self._rescan_retry_at = 0.0
        # path → (failed attempts, monotonic time of the next try)
        self._retry: dict[str, tuple[int, float]] = {}
        # Files whose last bytes had no newline yet, while they were still fresh: looked
        # at again once the quiet period has passed (see _check_when_quiet).
        self._quiet_checks: dict[str, float] = {}
        self._db_identity: tuple[int, int] | None = None
        # Native events left (or unavailable at start) for a reason that may pass: when
        # to try them again.
        self._native = NativeRetry()

    # ------------------------------------------------------------------ lifecycle
    @property
    def observer_kind(self) -> str:
        return observer_name(self._observer) if self._observer is not None else "none"

    @property
    def running(self) -> bool:
        return self._worker is not None and self._worker.is_alive()

    def pending(self) -> int:
        """Paths and directories queued but not yet applied."""
        return len(self._pending)

    def start(self, timeout: float | None = None) -> RefreshStats:
        """Start observing, then catch up; returns the catch-up stats once committed
        (empty stats, the worker ended, when ``should_stop`` cut the catch-up short).

        The observer starts *before* the catch-up refresh so that a change made while it
        runs is queued rather than missed (applying it twice is harmless).
        """
        room_for_deep_trees()
        try:
            self._observer = self._new_observer(poll=self.poll)
        except OSError as exc:  # even polling failed: e.g. projects/ unreadable
            raise WatchError(f"cannot observe the transcripts: {exc}") from exc
        logging.getLogger("watchdog.observers").addHandler(self._trap)
        self._worker = threading.Thread(
            target=self._run, name="sessiondex-watch-worker", daemon=True
        )
        self._worker.start()
        if not self._ready.wait(timeout):
            self.stop()
            raise WatchError("the catch-up refresh did not finish in time")
        if self.failure is not None:
            failure = self.failure
            self.stop()
            raise WatchError(str(failure)) from failure
        assert self.catch_up is not None
        return self.catch_up

    def stop(self, timeout: float = 30.0) -> None:
        """Stop events, commit what is queued, and join every thread this started."""
        with self._observer_lock:
            observer, self._observer = self._observer, None
            self._watches.clear()
        if observer is not None:
            observer.stop()
            if observer.is_alive():
                observer.join(timeout)
        self._pending.stop()
        if self._worker is not None:
            self._worker.join(timeout)
        logging.getLogger("watchdog.observers").removeHandler(self._trap)

    def __enter__(self) -> Watcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ observers
    def _new_observer(self, *, poll: bool) -> BaseObserver:
        """The native observer (inotify, FSEvents…), or polling when asked or when the
        native one cannot start (inotify instance or watch limits, unsupported FS)."""
        if not poll:
            try:
                return self._observe(_native_observer())
            except OSError as exc:
                # At the watch or instance limit they may fit later (another program
                # gone, the limit raised); an unsupported file system stays one.
                again = self._native.later() if may_pass(exc) else ""
                self.log(
                    f"native file events unavailable ({exc}); polling every "
                    f"{self.poll_interval:g}s instead{again}"
                )
        from watchdog.observers.polling import PollingObserver

        return self._observe(PollingObserver(timeout=self.poll_interval))

    def _observe(self, observer: BaseObserver) -> BaseObserver:
        """``observer`` started, watching every ``projects/`` dir (:attr:`_watches`
        then names its watches). On OSError it is stopped and :attr:`_watches` left as
        it was: a failed try at native events leaves the polling one watching."""
        watches: dict[str, tuple[ObservedWatch, int]] = {}
        try:
            for root in self.roots:
                projects = os.path.join(str(root), "projects")
                inode = _dir_inode(projects)
                if inode is not None:
                    watches[projects] = (self._schedule(observer, projects), inode)
            observer.start()
        except OSError:
            observer.stop()  # joins the inotify reader it may have started
            raise
        self._watches = watches
        return observer

    def _leave_native_events(self, reason: str) -> None:
        """Native events turned out unreliable while watching (:class:`OverflowTrap`):
        poll for now, saying why once, and rescan for what was missed. Polling is
        what ``watch`` does when they are unavailable at start; staying on them, a
        project dir made after the watch limit was reached was never indexed (readers
        skip their refresh while a watcher runs), and an overflow storm kept a core
        busy for good. They are tried again later (:meth:`_return_to_native_events`)."""
        self._trap.unreliable = None
        with self._observer_lock:
            observer = self._observer
            if observer is None or observer_name(observer) == "polling":
                return
            self.log(
                f"native file events are no longer reliable ({reason}); polling every "
                f"{self.poll_interval:g}s instead{self._native.later()}"
            )
            self._watches.clear()
            observer.stop()
            self._observer = self._new_observer(poll=True)
        if observer.is_alive():
            observer.join(5.0)
        self._pending.request_rescan()

    def _return_to_native_events(self) -> None:
        """Polling since native events failed (the watch limit reached, an overflow
        storm): try them again, as polling stats every transcript once a poll interval
        (a second) and holds each change back by up to that long.

        All or nothing: watching every directory again either succeeds (a directory
        that cannot be watched fails the start: watchdog raises before its first
        event) or leaves the polling observer as it was. Never tried while the
        directories to watch outnumber the kernel's per-user limit: a try would take
        every watch left for a moment, and another program asking for one then would
        be refused (:meth:`NativeRetry.too_big`). The native observer starts before the
        polling one stops, and a rescan follows, so no change falls between the two."""
        too_big = self._native.too_big(self.roots)
        if too_big is not None:
            self.log(f"{too_big}; polling on{self._native.later()}")
            return
        with self._observer_lock:
            polling = self._observer
            if polling is None or observer_name(polling) != "polling":
                return
            try:
                self._observer = self._observe(_native_observer())
            except OSError as exc:
                self.log(
                    f"native file events still unavailable ({exc}); polling on"
                    f"{self._native.later()}"
                )
                return
            polling.stop()
        if polling.is_alive():
            polling.join(5.0)
        self.log(f"native file events work again ({self.observer_kind}); polling stopped")
        self._pending.request_rescan()

    def _schedule(self, observer: BaseObserver, projects: str) -> ObservedWatch:
        """Watch ``projects`` where it is: a linked one at its target, its events' paths
        mapped back (:class:`_Handler`), as the MCP server's dirty bit does. A linked
        ``projects/`` used not to be watched at all (its inode was read without
        following the link), so nothing was indexed until the periodic rescan."""
        real = os.path.realpath(projects)
        handler = self._handler if real == projects else _Handler(self._pending, real, projects)
        return observer.schedule(handler, real, recursive=True, event_filter=EVENT_FILTER)

    def _ensure_watches(self, replaced: Collection[str] = ()) -> None:
        """Watch a projects/ dir that appeared since start, and re-watch one that was
        deleted or replaced (its old watch points at a dead inode); queue a scan of it.

        ``replaced``: projects dirs an event said were deleted. The inode check alone
        misses a dir deleted and re-created within one tick: file systems reuse inodes.
        """
        with self._observer_lock:
            observer = self._observer
            if observer is None:
                return
            serving = {e.watch for e in observer.emitters.copy() if e.is_alive()}
            for root in self.roots:
                projects = os.path.join(str(root), "projects")
                inode = _dir_inode(projects)
                current = self._watches.get(projects)
                if current is not None and current[1] == inode and current[0] not in serving:
                    # Its emitter thread died (an error inside watchdog): the watcher
                    # must not go on as if events still came.
                    self.log(f"file events for {projects} stopped; watching it again")
                    replaced = {*replaced, projects}
                if current is not None and current[1] == inode and projects not in replaced:
                    continue
                if current is not None:
                    self._watches.pop(projects)
                    try:
                        observer.unschedule(current[0])
                    except KeyError:  # watchdog already dropped a deleted dir's emitter
                        pass
                    self._pending.add_scan(projects)  # forget what was there
                if inode is None:
                    continue
                try:
                    watch = self._schedule(observer, projects)
                except (OSError, RecursionError) as exc:
                    self.log(
                        f"cannot watch {projects} ({exc}); relying on the periodic rescan for it"
                    )
                    continue
                self._watches[projects] = (watch, inode)
                self._pending.add_scan(projects)

    # ------------------------------------------------------------------ worker
    def _run(self) -> None:
        db = None
        try:
            db = self._open()
            self.catch_up = self._refresh(db, "catch-up")
            self._ready.set()
            last_rescan = last_tick = time.monotonic()
            while True:
                work = self._pending.take(self.debounce, self.max_latency, self._next_wake())
                if work is None:
                    break
                # A newer sessiondex may have re-derived or migrated the index since the
                # last pass (an upgrade while this kept running): stop before writing by
                # these rules into it (IndexFromNewer, the CLI's one line). One small
                # SELECT a wake-up; every write transaction asks again (meta.immediate).
                refuse_newer(db, between_passes=True)
                now = time.monotonic()
                if self._db_identity != file_identity(self.db_path):
                    self.log(
                        f"the index at {self.db_path} was deleted or replaced; "
                        "rebuilding it from the transcripts"
                    )
                    db = self._reopen(db)
                    last_rescan = now
                    work.rescan = False
                if (
                    work.rescan
                    or (self._dirty and now >= self._rescan_retry_at)
                    or (self.rescan_interval > 0 and now - last_rescan >= self.rescan_interval)
                ):
                    db = self._rescan(db)
                    last_rescan = now
                    work.rescan = False
                work.files.extend(self._due_retries(now))
                if work:
                    db = self._apply(db, work)
                if now - last_tick >= TICK:
                    if self._trap.unreliable is not None:
                        self._leave_native_events(self._trap.unreliable)
                    elif self._native.due():
                        self._return_to_native_events()
                    self._ensure_watches()
                    last_tick = now
        except _Stopping:  # stopped during a full pass: the next start does the rest
            if self.catch_up is None:
                self.catch_up = RefreshStats()
        except BaseException as exc:  # surfaced by start()/the CLI, never swallowed
            self.failure = exc
        finally:
            if db is not None:
                db.close()
            self._ready.set()

    # ------------------------------------------------------------------ the index file
    def _open(self) -> Any:
        db = open_db(self.db_path, on_recover=self.log)
        self._db_identity = file_identity(self.db_path)
        return db

    def _reopen(self, db: Any) -> Any:
        """A new handle on whatever is at the path now (created if it is gone), brought
        up to date with every transcript."""
        db.close()
        db = self._open()
        self._retry.clear()
        self._refresh(db, "rebuild")
        return db

    def _recover(self, db: Any, error: BaseException) -> Any:
        """The index turned out damaged: move it aside (unless another process already
        did) and rebuild."""
        try:
            recover_damaged(self.db_path, error, self._db_identity, self.log)
        finally:
            db.close()
        db = self._open()
        self._retry.clear()
        self._refresh(db, "rebuild")
        return db

    def _next_wake(self) -> float:
        """Sleep at most a tick, less when a retry falls due sooner."""
        now = time.monotonic()
        wake = TICK
        for _attempts, due in self._retry.values():
            wake = min(wake, max(0.05, due - now))
        for due in self._quiet_checks.values():
            wake = min(wake, max(0.05, due - now))
        if self._dirty:
            wake = min(wake, max(0.05, self._rescan_retry_at - now))
        return wake

    def _schedule_retry(self, path: str) -> str:
        """Try ``path`` again later (doubling the delay per failure, capped); returns
        what will happen, for the log line."""
        attempts = self._retry.get(path, (0, 0.0))[0] + 1
        if attempts > RETRY_LIMIT:
            self._retry.pop(path, None)
            return "left for its next change or the next rescan"
        delay = _backoff(attempts, RETRY_FIRST, RETRY_MAX)
        self._retry[path] = (attempts, time.monotonic() + delay)
        return f"trying again in {delay:g}s"

    def _due_retries(self, now: float) -> list[str]:
        due = [p for p, (_n, at) in self._retry.items() if at <= now]
        quiet = [p for p, at in self._quiet_checks.items() if at <= now]
        for path in quiet:
            del self._quiet_checks[path]
        return due + quiet  # dropped from _retry only once they succeed

    def _check_when_quiet(self, db: Any, path: str) -> None:
        """A file whose last bytes lack their newline, stat'ed while fresh, is looked at
        again once it has been quiet for the racy window: a whole record there is then a
        write that died before its newline, read as ``index`` reads it. No event would
        come to say so (the writer is gone), and readers skip their own refresh while a
        watcher runs, so without this the record waited for the periodic rescan."""
        row = db.execute(
            "SELECT size, consumed, mtime_ns, checked_ns FROM files WHERE path = ?", [path]
        ).fetchone()
        if row is None or row[1] >= row[0] or settled_at(row[2], row[3]):
            self._quiet_checks.pop(path, None)
            return
        self._quiet_checks[path] = time.monotonic() + RACY_WINDOW_NS / 1e9 + QUIET_MARGIN

    # ------------------------------------------------------------------ passes
    def _refresh(self, db: Any, reason: str) -> RefreshStats:
        """A full incremental pass. Only the catch-up lets a failure through (the
        watcher cannot start without a usable index); later ones are logged and
        retried with a growing delay."""
        started = time.perf_counter()
        try:
            stats = refresh(db, self.roots, progress=self._stop_between_files)
            self._dirty = False
            self._rescan_failures = 0
        except (IndexFromNewer, _Stopping):
            raise  # not to retry: the watcher stops (see _run)
        except Exception as exc:
            if reason == "catch-up" or classify(exc) == CORRUPT:
                raise
            delay = self._full_pass_later()
            stats = RefreshStats(
                errors=[(str(self.db_path), f"{exc}; full pass again in {delay:g}s")]
            )
        self._report(reason, [], stats, started)
        return stats

    def _stop_between_files(self, _done: int, _total: int) -> None:
        """``refresh``'s progress callback: give a full pass up once the watcher is
        stopping (the pass rolls back only its open group; every file before it stays)."""
        if self._pending.stopping or (self.should_stop is not None and self.should_stop()):
            raise _Stopping

    def _full_pass_later(self) -> float:
        """Mark the index behind: a full pass follows, again and again with a growing
        delay (capped) until one succeeds. For what fails whatever the file (the
        database full, read-only, busy): no retry limit, the index must catch up once
        it can be written. Returns the delay."""
        self._dirty = True
        self._rescan_failures += 1
        delay = _backoff(self._rescan_failures, RETRY_FIRST, RETRY_MAX)
        self._rescan_retry_at = time.monotonic() + delay
        return delay

    def _rescan(self, db: Any) -> Any:
        try:
            self._refresh(db, "rescan")
        except Exception as exc:
            if classify(exc) != CORRUPT:
                raise
            db = self._recover(db, exc)
        return db

    def _apply(self, db: Any, work: _Work) -> Any:
        started = time.perf_counter()
        stats = RefreshStats()
        paths = dict.fromkeys(work.files)
        watched = set(self._watches)
        if watched.intersection(work.dirs):  # a projects/ dir itself was deleted or moved
            self._ensure_watches(replaced=watched.intersection(work.dirs))
        for directory in _outermost([*work.dirs, *work.scans]):
            paths.update(dict.fromkeys(_paths_under(db, directory, stats.errors)))
        for path in sorted(paths):
            if self._pending.stopped_for() > STOP_GRACE:  # the next start does the rest
                self._report("events", sorted(paths), stats, started)
                raise _Stopping
            errors_before = len(stats.errors)
            try:
                result = ingest_path(db, path, self.roots, stats)
                if result in (NEW, REWRITTEN):
                    self._ingest_subagents(db, path, stats)
            except IndexFromNewer:
                self._report("events", sorted(paths), stats, started)
                raise  # no file's fault: the watcher stops (see _run)
            except Exception as exc:
                if classify(exc) == CORRUPT:
                    self._report("events", sorted(paths), stats, started)
                    return self._recover(db, exc)
                # One file's failure (or the database's, for a while) never stops the
                # watcher: the file is tried again later, the others go on.
                stats.errors.append((path, f"{type(exc).__name__}: {exc}"))
                if classify(exc) is not None and not self._dirty:
                    # The database's failure, not the file's (full, read-only, busy):
                    # the file's retries may run out before it passes, so a full pass
                    # follows until one succeeds, as after a failed rescan.
                    self._full_pass_later()
            if len(stats.errors) > errors_before:  # failed, or unreadable: not indexed yet
                then = self._schedule_retry(path)
                stats.errors[errors_before:] = [
                    (p, f"{e}; {then}") for p, e in stats.errors[errors_before:]
                ]
            else:
                self._retry.pop(path, None)
                self._check_when_quiet(db, path)
        self._report("events", sorted(paths), stats, started)
        return db

    def _ingest_subagents(self, db: Any, path: str, stats: RefreshStats) -> None:
        """A main transcript that (re)appeared takes its subagents with it, as ``refresh``
        does: deleting a main drops its subagents' rows, and their files raise no event
        when only the main comes back."""
        tf = describe_path(Path(path), self.roots)
        if tf is None or tf.kind != MAIN:
            return
        tools = include_tools_setting(db)
        for sub in iter_subagent_files(tf.root, tf.project_key, tf.session_id):
            ingest_file(db, sub, stats, include_tools=tools)

    def _report(self, reason: str, paths: list[str], stats: RefreshStats, started: float) -> None:
        stats.seconds = time.perf_counter() - started
        for path, error in stats.errors:
            self.log(f"skipped {path}: {error}")
        if self.on_batch is not None:
            self.on_batch(BatchReport(reason, paths, stats, stats.seconds))


def _backoff(attempts: int, first: float, most: float) -> float:
    """Seconds before try number ``attempts + 1``: ``first``, doubling, at most ``most``."""
    return min(first * 2.0 ** min(attempts - 1, 16), most)


def _native_observer() -> BaseObserver:
    from watchdog.observers import Observer

    return Observer()


def _watches_needed(roots: list[Path]) -> int:
    """How many inotify watches native events take: one per directory under each
    ``projects/`` (watchdog watches every one of them)."""
    count = 0
    for root in roots:
        projects = os.path.join(str(root), "projects")
        if _dir_inode(projects) is not None:
            count += sum(1 for _ in walk(projects, onerror=lambda _exc: None))
    return count


def _inotify_watch_limit() -> int | None:
    """The kernel's limit on one user's inotify watches; None where there is none to
    read (not Linux)."""
    try:
        return int(Path(INOTIFY_WATCH_LIMIT).read_text())
    except (OSError, ValueError):
        return None


def _dir_inode(path: str) -> int | None:
    """The inode of the directory a ``projects/`` is, or points to (every reader follows
    a linked ``projects/``; nothing below it is followed)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino if stat.S_ISDIR(st.st_mode) else None


def _outermost(directories: list[str]) -> list[str]:
    """The directories no other one of them holds: walking those covers the rest. A
    folder moved in raises an event for every folder inside it, and walking each one
    was quadratic (28 s for one 1,100 deep)."""
    kept: list[str] = []
    # With the separator sorting first, a directory's subfolders follow it directly.
    for directory in sorted(set(directories), key=lambda d: d.replace(os.sep, "\x00")):
        if kept and directory.startswith(kept[-1].rstrip(os.sep) + os.sep):
            continue
        kept.append(directory)
    return kept


def _paths_under(db: Any, directory: str, errors: list[tuple[str, str]]) -> list[str]:
    """Transcripts on disk below ``directory`` plus indexed ones that were: a created or
    moved-in directory is read, a deleted or moved-away one is forgotten. A directory
    below it that cannot be listed is said in ``errors`` (its indexed transcripts are
    kept: :func:`~sessiondex.indexer.refresh.ingest_path` forgets only what is gone)."""

    def unlisted(exc: OSError) -> None:
        reason = why_unseen(exc)
        if reason is not None:
            errors.append((str(exc.filename or directory), f"cannot list it ({reason})"))

    if not storable(directory):
        return []  # nothing below it can be in the index, or be indexed
    prefix = directory.rstrip(os.sep) + os.sep
    found = [
        row[0]
        for row in db.execute(
            "SELECT path FROM files WHERE substr(path, 1, ?) = ?", [len(prefix), prefix]
        )
    ]
    for current, dirs, files in walk(directory, onerror=unlisted):
        dirs.sort()
        found.extend(
            path
            for f in sorted(files)
            if f.endswith(SUFFIX) and storable(path := os.path.join(current, f))
        )
    return found
