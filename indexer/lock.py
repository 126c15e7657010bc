"""Locks next to the database: ``watch`` (exactly one writer) and ``bulk`` (a cold build
with FTS triggers off).

A lock is an ``flock`` on ``<db>.<kind>.lock``, held for the holder's lifetime. The
kernel drops it when the process dies, however it dies, so a stale lock file never
blocks anyone: "is a watcher live?" is "is the lock held?", not "does the file exist?".
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


def lock_path(db_path: str | os.PathLike[str], kind: str = "watch") -> Path:
    return Path(f"{os.fspath(db_path)}.{kind}.lock")


class WatcherLock:
    """Hold a lock: ``with WatcherLock(db): ...``; raises ``AlreadyWatching`` when another
    process holds it."""

    def __init__(self, db_path: str | os.PathLike[str], kind: str = "watch") -> None:
        self.path = lock_path(db_path, kind)
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
        os.write(fd, f"{os.getpid()}\n".encode())
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
        return int(path.read_text().strip() or 0) or None
    except (OSError, ValueError):
        return None


def watcher_alive(db_path: str | os.PathLike[str], kind: str = "watch") -> bool:
    """True while a live process holds this database's ``kind`` lock."""
    path = lock_path(db_path, kind)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
