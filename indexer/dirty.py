"""A dirty bit over the transcripts: may anything under the config dirs' ``projects/``
have changed since the last look?

Why: a long-lived front end (the MCP server) must answer each question from the
transcripts as they are *now*, as each CLI command does, and the cheapest proof that
nothing changed (``indexer/freshness.py``) is one ``lstat`` per transcript: ~20 ms at
2,000 sessions, before every answer, for an answer that takes ~10 ms. Between two
questions nothing usually changed. A watchdog observer here sets one bit on every event
``sessiondex watch`` would act on (:func:`sessiondex.indexer.watch.relevant_paths`: a
``.jsonl`` created, written, moved, deleted or touched, a directory created, moved or
deleted); the front end asks :meth:`DirtyBit.clean` (a few attribute reads and one
``stat`` per config dir) and runs the real check only when it says no.

Unlike ``watch`` it applies nothing: the observer's thread only sets the bit (and
notes which transcripts were written to), so it never touches a SQLite handle (those
belong to the front end's thread). What the front end does next is what it did before,
so the answers cannot differ: the whole check and refresh, or, when the only events
were writes to existing transcripts, the ingest of just those files with the per-file
ingest ``watch`` and the refresh use (``indexer.refresh.ingest_path``). That second case
is the common one: the Claude Code session that calls the MCP server appends to its own
transcript between two calls, so "nothing changed" alone would rarely hold in use.

The rules that keep "clean" true only when it is:

* The bit starts set. :meth:`DirtyBit.take` clears it *before* the caller checks: an
  event that arrives during the check or the refresh sets it again, so it is never lost
  (at worst a change is checked twice). Only a "modified" or "attrib" event of a
  ``.jsonl`` names a file to ingest alone; a creation, move or deletion, a directory
  event, more than ``MAX_WRITTEN`` files, an overflow or a re-watched dir ask for the
  whole check (a main transcript that reappears brings its subagents, a new dir new
  files: the walk finds them).
* "Clean" needs the observer alive with a live emitter on every ``projects/`` dir, and
  each ``projects/`` dir still the one watched (same device and inode, links followed;
  missing counts as a state too). A watch follows an inode, not a path: a ``projects/``
  created after the start (a new config dir), moved away or replaced is seen by that
  ``stat`` and watched anew by the next ``take``, *before* the check that follows it.
* Events are hints, not truth (as in ``watch``): the bit also sets itself every
  ``rescan`` seconds and when watchdog reports an inotify queue overflow.
* An observer that cannot start (inotify instance or watch limits, an unsupported file
  system, no native events on this platform), whose thread dies, or whose events prove
  unreliable (a directory left unwatched at the watch limit, an overflow storm) is given
  up with one log line; :meth:`clean` then says no, and the caller checks before every
  answer as it did before. No polling observer: it would ``stat`` every transcript every
  second on a thread of its own, more than the per-answer check costs.
* Given up for a reason that may pass (a limit, a storm), events are tried again by a
  :meth:`take` after the wait ``watch`` uses to leave polling
  (:class:`sessiondex.indexer.watch.NativeRetry`: 10 minutes, doubling to 4 hours, no try
  while the tree outgrows ``fs.inotify.max_user_watches``): a server lives as long as
  its Claude Code session, and checking every transcript before each answer for all of
  it costs more than the answers. A try is all or nothing, and the take that makes it
  asks for the whole check, which runs after the new observer started: a change made
  while nothing watched is found by that check, one made after it is an event.

The window: an event reaches the bit through watchdog's threads (the inotify reader,
the emitter, the dispatcher) after the writing system call has returned. A question
that arrives in between is answered without that change, and the next one sees it.
Those hops take well under a millisecond on an idle process, milliseconds when the
front end's thread holds the GIL (Python switches threads every 5 ms) or the CPU is
shared (measured on 2 busy cores, load ~3, 200 appends, a thread spinning on
:meth:`DirtyBit.clean`: p50 0, p95 2.5 ms, max 11 ms; over stdio, a call sent the moment
the append returned had it 97 times in 100), and up to half a second for a file moved
*out of* ``projects/`` (watchdog holds an unpaired "moved from" that long, waiting for
its "moved to"), and for any change made under the same ``projects/`` meanwhile: that
dir's events queue behind the held one (a transcript trashed, then another moved into a
new project dir: ~450 ms; alone, each is seen within milliseconds). Letting later
events pass a held one is a change to watchdog's queue, not to this module. Appends,
which is how Claude Code writes a transcript, are not delayed but in that case.
Closing the window would need a look at the kernel's queue on every call (watchdog's
private inotify descriptor) and still miss events its threads have read but not handed
on. In use, the lines a question looks for (earlier turns, other sessions) were
written long before the model produced the call.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.api import BaseObserver, EventEmitter, ObservedWatch

from sessiondex.indexer.watch import (
    DEFAULT_RESCAN,
    EVENT_FILTER,
    NativeRetry,
    OverflowTrap,
    may_pass,
    names_session_aliases,
    observer_name,
    relevant_paths,
    room_for_deep_trees,
)

logger = logging.getLogger(__name__)

Identity = tuple[int, int]  # (st_dev, st_ino) of a projects/ dir
# Events that only say an existing transcript's bytes or times changed: the file can be
# ingested on its own (``indexer.refresh.ingest_path``, as ``watch`` does). A creation,
# a move, a deletion or a directory event asks for the whole check instead: a main
# transcript that reappears brings subagents with it, a new project dir new files.
_WRITES = frozenset({"modified", "attrib"})
# More written files than this since the last look: the whole check costs less.
MAX_WRITTEN = 64


class _Handler(FileSystemEventHandler):
    """Runs on the observer's thread: set the bit (noting the transcript when the event
    only says it was written to), nothing else.

    One per ``projects/`` dir: the watch is on the resolved directory (a config dir is
    often a link, and so may ``projects/`` be), so the paths events name are put back
    under the configured one, where the index has them."""

    def __init__(self, bit: DirtyBit, watched: str, configured: str) -> None:
        self._bit = bit
        self._watched = watched.rstrip(os.sep) + os.sep
        self._configured = configured.rstrip(os.sep) + os.sep

    def on_any_event(self, event: FileSystemEvent) -> None:
        files, dirs = relevant_paths(event)
        if files and not dirs and event.event_type in _WRITES:
            self._bit.written([self._configured_path(f) for f in files])
        elif files or dirs or names_session_aliases(event):  # (the whole check reads it)
            self._bit.mark()

    def _configured_path(self, path: str) -> str:
        if self._watched == self._configured or not path.startswith(self._watched):
            return path
        return self._configured + path[len(self._watched) :]


class DirtyBit:
    """Set when a transcript under ``roots`` may have changed (see the module docstring).

    Use: :meth:`start` once; before each answer, if :meth:`clean` the index still says
    what the transcripts say; otherwise :meth:`take`, then ingest what it returns (or, on
    None, check and refresh everything); :meth:`stop` at the end. Every method is called
    from one thread (the front end's) except :meth:`mark` and :meth:`written`, which the
    observer's threads call too: they only record, under a lock :meth:`take` shares.
    """

    def __init__(
        self,
        roots: list[Path],
        *,
        rescan: float = DEFAULT_RESCAN,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.roots = list(roots)
        self.rescan_interval = rescan
        self.log = log or logger.warning
        self._projects = [os.path.join(str(root), "projects") for root in self.roots]
        self._dirty = True
        # Guarded by _lock (the observer's thread adds, the front end's takes): the
        # transcripts only written to since the last take, and whether anything else
        # happened (then the caller checks everything).
        self._lock = threading.Lock()
        self._written: set[str] = set()
        self._whole = True
        self._observer: BaseObserver | None = None
        # projects dir → (its watch, the emitter thread serving it, its identity then)
        self._watches: dict[str, tuple[ObservedWatch, EventEmitter | None, Identity]] = {}
        self._seen: list[Identity | None] = []  # each projects dir's identity at take()
        self._due = 0.0  # monotonic time when the bit sets itself (the periodic rescan)
        self._trap = OverflowTrap(self.mark)
        # Events given up for a reason that may pass: when take() tries them again.
        self._native = NativeRetry()

    # ------------------------------------------------------------------ lifecycle
    @property
    def watching(self) -> bool:
        """True while the observer runs (False before start, after stop or giving up)."""
        return self._observer is not None

    @property
    def retrying(self) -> bool:
        """True while events are given up but a :meth:`take` will try them again."""
        return self._observer is None and self._native.again_at is not None

    def start(self) -> bool:
        """Start observing; False (said once through ``log``) when that is not possible,
        and the caller checks before every answer (trying events again later when the
        reason may pass: :attr:`retrying`). The bit is set either way."""
        room_for_deep_trees()
        try:
            self._observe()
        except Exception as exc:  # OSError for limits; a broken FS may raise anything
            again = self._native.later() if may_pass(exc) else ""
            self._give_up(f"cannot watch the transcripts for changes ({exc})", again)
            return False
        return True

    def _observe(self) -> None:
        """A new observer on every ``projects/`` dir, started, or an exception (the
        caller gives it up: :meth:`stop` stops what was started). Every watch is new, so
        the next :meth:`take` asks for the whole check."""
        from watchdog.observers import Observer

        observer: BaseObserver = Observer()
        self._observer = observer
        self._watches.clear()
        self._seen = []
        self._trap.unreliable = None  # a new observer's events are judged anew
        if observer_name(observer) == "polling":
            raise OSError("no native file-system events on this platform")
        # Before the first watch: a directory it cannot watch is then heard of too.
        logging.getLogger("watchdog.observers").addHandler(self._trap)
        self._watch_all()
        observer.start()

    def stop(self) -> None:
        """Stop the observer and join its threads; the bit stays set for good (no try
        at events again either)."""
        self._native.again_at = None
        self._halt()

    def _halt(self) -> None:
        """Stop the observer and join its threads: the bit stays set until a try at
        events again succeeds, if one is planned."""
        observer, self._observer = self._observer, None
        self._dirty = True
        self._watches.clear()
        logging.getLogger("watchdog.observers").removeHandler(self._trap)
        if observer is not None:
            try:
                observer.stop()
                if observer.is_alive():
                    observer.join(10)
            except Exception as exc:  # stopping: say it, never raise
                logger.warning("stopping the file-system observer failed: %r", exc)

    def _events_unreliable(self) -> bool:
        """Whether the trap found events untrustworthy (a dir left unwatched at the
        watch limit, an overflow storm): then the bit gives up on them for now."""
        if self._trap.unreliable is None:
            return False
        why = f"file events are no longer reliable ({self._trap.unreliable})"
        self._give_up(why, self._native.later())
        return True

    def _give_up(self, why: str, again: str = "") -> None:
        self._halt()
        self.log(f"note: {why}; checking the transcripts before each answer instead{again}")

    def _try_events_again(self) -> None:
        """Given up for a reason that may pass and the wait is over: watch again, all or
        nothing (watchdog raises on the first directory it cannot watch, and the
        observer is then stopped), unless the tree outgrows the watch limit. The caller
        (:meth:`take`) asks for the whole check either way."""
        if not self._native.due():
            return
        too_big = self._native.too_big(self.roots)
        if too_big is not None:
            self.log(f"note: {too_big}; checking on{self._native.later()}")
            return
        try:
            self._observe()
        except Exception as exc:
            self._halt()
            again = self._native.later() if may_pass(exc) else ""
            self.log(f"note: file events still unavailable ({exc}); checking on{again}")
            return
        self.log("note: file events work again; checking the transcripts only after a change")

    # ------------------------------------------------------------------ the bit
    def mark(self) -> None:
        """Anything may have changed (an event other than a write, an overflow, or a
        check that could not finish): the next :meth:`clean` says no and the next
        :meth:`take` asks for the whole check."""
        with self._lock:
            self._whole = True
            self._dirty = True

    def written(self, paths: list[str]) -> None:
        """These transcripts were written to (appended, rewritten, touched): the next
        :meth:`clean` says no; :meth:`take` may hand them over to be ingested alone."""
        with self._lock:
            self._written.update(paths)
            self._dirty = True

    def clean(self) -> bool:
        """True when no transcript can have changed since the last :meth:`take`: the
        observer is alive, no event came, no ``projects/`` dir appeared, moved or lost its
        watch, and the periodic rescan is not due. The per-answer cost: a few attribute
        reads, one clock read and one ``stat`` per config dir."""
        observer = self._observer
        if self._dirty or observer is None or time.monotonic() >= self._due:
            return False
        if not observer.is_alive():
            self._give_up("the file-system observer stopped")
            return False
        if self._events_unreliable():
            return False
        for _watch, emitter, _known in self._watches.values():
            if emitter is None or not emitter.is_alive():
                return False  # its dir was deleted (its emitter stops): re-watched by take()
        return [_identity(p) for p in self._projects] == self._seen

    def take(self) -> list[str] | None:
        """Clear the bit before the caller looks at the transcripts (so an event during
        the look sets it again), watch any ``projects/`` dir that appeared, moved or
        lost its watch (before the look, so a change after it is an event), and start
        the next rescan period.

        Returns the transcripts that were only written to since the last take, when
        that is all that can have happened: the caller may ingest just those (an empty
        list: nothing to do). None: check everything (the first take, any other event,
        an overflow, a dir watched anew, the periodic rescan, no observer)."""
        with self._lock:
            self._dirty = False
            written, self._written = self._written, set()
            whole, self._whole = self._whole, False
        now = time.monotonic()
        whole = whole or now >= self._due or len(written) > MAX_WRITTEN
        self._due = now + self.rescan_interval
        if self._observer is None:
            # Before the caller's check: what changed while nothing watched is in it.
            self._try_events_again()
            return None
        if not self._observer.is_alive():
            self._give_up("the file-system observer stopped")
            return None
        if self._events_unreliable():
            return None
        try:
            if self._watch_all():
                return None
        except Exception as exc:
            self._give_up(f"cannot watch the transcripts for changes ({exc})")
            return None
        return None if whole else sorted(written)

    # ------------------------------------------------------------------ watches
    def _watch_all(self) -> bool:
        """Bring the watches in line with the ``projects/`` dirs on disk now; True when
        any changed (what happened under a new watch before it existed is unknown). The
        identity is read *before* scheduling: a dir replaced in between then differs
        from it, and :meth:`clean` says no until it is watched again."""
        observer = self._observer
        assert observer is not None
        seen: list[Identity | None] = []
        changed = False
        for projects in self._projects:
            identity = _identity(projects)
            seen.append(identity)
            current = self._watches.get(projects)
            if (
                current is not None
                and current[2] == identity
                and current[1] is not None
                and current[1].is_alive()
            ):
                continue
            if current is None and identity is None:
                continue  # still nothing to watch
            changed = True
            if current is not None:
                del self._watches[projects]
                try:
                    observer.unschedule(current[0])
                except KeyError:  # watchdog already dropped a deleted dir's emitter
                    pass
            if identity is None:
                continue  # nothing to watch, no transcripts: clean() stats it each time
            # The resolved path: the config dir is often a link (dotfiles), and inotify
            # must watch the directory the transcripts are written in.
            real = os.path.realpath(projects)
            watch = observer.schedule(
                _Handler(self, real, projects),
                real,
                recursive=True,
                event_filter=EVENT_FILTER,
            )
            emitter = next((e for e in list(observer.emitters) if e.watch == watch), None)
            self._watches[projects] = (watch, emitter, identity)
        changed = changed or seen != self._seen
        self._seen = seen
        return changed


def _identity(path: str) -> Identity | None:
    """(device, inode) of the directory at ``path`` (links followed, as discovery does);
    None when there is none."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None
