"""Locks next to the database: ``watch`` (exactly one watcher), ``bulk`` (a cold build
with FTS triggers off) and the write turn every writing transaction takes.

A lock is an ``flock`` on ``<db>.<kind>.lock``, held for the holder's lifetime. The
kernel drops it when the process dies, however it dies, so a stale lock file never
blocks anyone: "is a watcher live?" is "is the lock held?", not "does the file exist?".
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from sessiondex.indexer.faults import IndexBusy


def lock_path(db_path: str | os.PathLike[str], kind: str = "watch") -> Path:
    """The lock file of ``kind`` beside the index, named after the file itself (links
    resolved): the index reached through a symlink is the same index, and its one
    watcher and its write turn must be the same locks."""
    return Path(f"{os.path.realpath(db_path)}.{kind}.lock")


class WatcherLock:
    """Hold a lock: ``with WatcherLock(db): ...``; raises ``AlreadyWatching`` when another
    process holds it.

    The file holds the holder's pid, then, for ``watch``, the config dirs it keeps
    current (``roots``, one JSON string a line, links resolved): a reader of other
    config dirs must refresh them itself (:func:`watcher_covers`). A lock taken without
    ``roots`` (an older watcher) counts as covering every config dir, as before."""

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        kind: str = "watch",
        roots: Iterable[str | os.PathLike[str]] | None = None,
    ) -> None:
        self.path = lock_path(db_path, kind)
        self._roots = None if roots is None else [os.path.realpath(r) for r in roots]
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise AlreadyWatching(watcher_pid(self.path)) from None
        os.ftruncate(fd, 0)
        text = f"{os.getpid()}\n" + "".join(json.dumps(r) + "\n" for r in self._roots or ())
        os.write(fd, text.encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> WatcherLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class AlreadyWatching(RuntimeError):
    def __init__(self, pid: int | None) -> None:
        who = f" (pid {pid})" if pid else ""
        super().__init__(f"another sessiondex watch is already running for this index{who}")
        self.pid = pid


def watcher_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split("\n", 1)[0].strip() or 0) or None
    except (OSError, ValueError):
        return None


def _watched_roots(path: Path) -> set[str] | None:
    """The config dirs the holder of the ``watch`` lock at ``path`` keeps current; None
    when it did not say (a lock taken without them, or a file being written)."""
    try:
        lines = path.read_text().split("\n")[1:]
        roots = {json.loads(line) for line in lines if line}
    except (OSError, ValueError):
        return None
    return {r for r in roots if isinstance(r, str)} or None


def watcher_alive(db_path: str | os.PathLike[str], kind: str = "watch") -> bool:
    """True while a live process holds this database's ``kind`` lock."""
    return _held(db_path, kind)


def watcher_covers(
    db_path: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]]
) -> bool:
    """True while a live ``watch`` keeps this database current for every one of
    ``roots``: a watcher of ``~/.claude`` does not index ``~/old-laptop/.claude``, so a
    reader of that one refreshes it itself (it answered "No matches." for its sessions)."""
    if not _held(db_path, "watch"):
        return False
    watched = _watched_roots(lock_path(db_path, "watch"))
    return watched is None or all(os.path.realpath(r) in watched for r in roots)


def wait_for_release(
    db_path: str | os.PathLike[str], kind: str, on_wait: Callable[[int | None], None]
) -> bool:
    """Block until no process holds this database's ``kind`` lock; whether it had to
    wait. ``on_wait`` is told the holder's pid (when known) once, before the wait."""
    return _held(db_path, kind, on_wait)


def _held(
    db_path: str | os.PathLike[str],
    kind: str,
    on_wait: Callable[[int | None], None] | None = None,
) -> bool:
    """Whether a live process held the lock when looked at; with ``on_wait``, also wait
    until it lets go (the kernel wakes a blocked shared ``flock`` then)."""
    path = lock_path(db_path, kind)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            if on_wait is not None:
                on_wait(watcher_pid(path))
                fcntl.flock(fd, fcntl.LOCK_SH)
            return True
        return False
    finally:
        os.close(fd)  # and with it any shared lock of ours


class WriteTurn:
    """The right to write to one index, taken in turn by every sessiondex process.

    SQLite's own busy handler polls with growing sleeps, so a process that commits and
    at once begins again (a refresh committing every half second, a cold build) can
    starve a waiter for as long as it runs, and the waiter then fails with "database is
    locked". Two ``flock`` files make the wait fair, as a turnstile: a writer first
    takes the *gate*, then the *turn*, then lets go of the gate. A waiter holds the
    gate while it waits, so the holder, wanting the turn again after its commit, must
    wait at the gate until the waiter got its turn.

    flock belongs to the open file description, so two connections of one process
    (two threads) exclude each other too. Re-entrant per object: a nested transaction
    of the same connection does not wait for itself. Where the lock files cannot be
    created (a read-only directory) there is no turn to take and SQLite's own locking
    decides (the write then fails as read-only anyway).
    """

    POLL_START = 0.001
    POLL_MAX = 0.02

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        self._gate_path = lock_path(db_path, "gate")
        self._turn_path = lock_path(db_path, "write")
        self._gate: int | None = None
        self._turn: int | None = None
        self._depth = 0
        self._usable = True

    def _fds(self) -> tuple[int, int] | None:
        if self._gate is None or self._turn is None:
            try:
                flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
                self._gate = os.open(self._gate_path, flags, 0o644)
                self._turn = os.open(self._turn_path, flags, 0o644)
            except OSError:
                self.close()
                self._usable = False
                return None
        return self._gate, self._turn

    def acquire(
        self,
        wait: float,
        notice: Callable[[], None] | None = None,
        notice_after: float = 2.0,
    ) -> None:
        """Wait up to ``wait`` seconds for the turn; ``notice`` is called once when the
        wait passes ``notice_after``. Raises :class:`IndexBusy` on time-out."""
        if self._depth:
            self._depth += 1
            return
        fds = self._fds() if self._usable else None
        if fds is None:
            self._depth = 1
            return
        gate, turn = fds
        started = time.monotonic()
        state = {"noticed": False}

        def take(fd: int, what: str) -> None:
            delay = self.POLL_START
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    pass
                waited = time.monotonic() - started
                if waited >= wait:
                    raise IndexBusy(
                        f"database is locked: another sessiondex process kept the write "
                        f"{what} for more than {wait:g}s"
                    )
                if notice is not None and not state["noticed"] and waited >= notice_after:
                    state["noticed"] = True
                    notice()
                time.sleep(min(delay, max(0.0, wait - waited)))
                delay = min(delay * 2, self.POLL_MAX)

        take(gate, "gate")
        try:
            take(turn, "turn")
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        self._depth = 1

    def release(self) -> None:
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth == 0 and self._turn is not None:
            fcntl.flock(self._turn, fcntl.LOCK_UN)

    @property
    def held(self) -> bool:
        return self._depth > 0

    def close(self) -> None:
        for fd in (self._gate, self._turn):
            if fd is not None:
                os.close(fd)  # closing the last descriptor drops any lock it held
        self._gate = self._turn = None
        self._depth = 0

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass
