"""What can go wrong with the index file itself, named once for every front end.

The index is derived and disposable, and sessiondex runs beside other copies of itself,
so a failing database is sorted into a few kinds, each with one way out:

* ``busy``: another process held the write turn longer than we were willing to wait
  (:class:`IndexBusy`); a reading command answers from the index as it is, a writing
  one says so and exits 1.
* ``corrupt``: "malformed", "not a database", a bad page: the file is moved aside
  (:func:`quarantine`) and the index is rebuilt from the transcripts.
* ``readonly`` / ``full`` / ``cantopen`` / ``io``: nothing to repair; reads still work
  where they can (a read-only open), writes say what is wrong in one line. SQLite
  rolls the transaction back, so the index stays consistent and catches up later.

Error codes are used where Python exposes them (3.11+), the message text otherwise;
"malformed MATCH expression" (an FTS5 query syntax error) is not corruption.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from pathlib import Path

BUSY, CORRUPT, READONLY, FULL, CANTOPEN, IO = (
    "busy",
    "corrupt",
    "readonly",
    "full",
    "cantopen",
    "io",
)

# Primary result codes (sqlite3.h).
_CODES = {
    5: BUSY,  # SQLITE_BUSY
    6: BUSY,  # SQLITE_LOCKED
    8: READONLY,  # SQLITE_READONLY
    10: IO,  # SQLITE_IOERR
    11: CORRUPT,  # SQLITE_CORRUPT
    13: FULL,  # SQLITE_FULL
    14: CANTOPEN,  # SQLITE_CANTOPEN
    23: READONLY,  # SQLITE_AUTH: not expected, but no write is possible either
    26: CORRUPT,  # SQLITE_NOTADB
}
_MESSAGES = (
    ("database disk image is malformed", CORRUPT),
    ("file is not a database", CORRUPT),
    ("malformed database schema", CORRUPT),
    ("database corruption", CORRUPT),
    ("database or disk is full", FULL),
    ("readonly database", READONLY),
    ("read-only", READONLY),
    ("unable to open database file", CANTOPEN),
    ("database is locked", BUSY),
    ("database table is locked", BUSY),
    ("disk i/o error", IO),
)


class IndexBusy(sqlite3.OperationalError):
    """Another process kept the index's write turn past our wait (``database is
    locked`` in SQLite's words, with who and how long in ours)."""


def classify(exc: BaseException) -> str | None:
    """The kind of an index failure (a module constant), or None for anything else
    (a bug, a query syntax error, a constraint)."""
    if isinstance(exc, IndexBusy):
        return BUSY
    if not isinstance(exc, sqlite3.Error) or isinstance(exc, sqlite3.IntegrityError):
        return None
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _CODES:
        return _CODES[code & 0xFF]
    text = str(exc).lower()
    for needle, kind in _MESSAGES:
        if needle in text:
            return kind
    return None


def is_corrupt(exc: BaseException) -> bool:
    return classify(exc) == CORRUPT


# How sqlite3 reports an exception raised in one of our SQL functions (the text decoder,
# the snippet counters), a KeyboardInterrupt from Ctrl-C among them, and SQLite's own
# "interrupted": the statement failed, the file did not.
_CALLBACK_FAILURES = ("user-defined function raised exception", "user-defined aggregate's")
_SQLITE_INTERRUPT = 9


def failed_in_a_callback(exc: BaseException) -> bool:
    """Whether ``exc`` is a SQL function of ours failing (or the statement interrupted),
    not the index: nothing to repair, and no reason to move the file aside (a rebuild
    took it for a database it cannot clear, so Ctrl-C there discarded the index)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) == _SQLITE_INTERRUPT:
        return True
    text = str(exc).lower()
    return any(needle in text for needle in _CALLBACK_FAILURES)


_PLAIN = {
    BUSY: "another sessiondex process is writing to it; try again",
    READONLY: "it is read-only",
    FULL: "the disk is full",
    CANTOPEN: "it cannot be opened for writing (a read-only directory?)",
    IO: "a disk I/O error",
    CORRUPT: "it is damaged",
}


def describe(exc: BaseException, path: str | os.PathLike[str] | None) -> str:
    """One line for a person: what failed, where, and in SQLite's words."""
    kind = classify(exc)
    where = f" at {os.fspath(path)}" if path is not None else ""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if kind == BUSY:
        return f"the index{where} is busy: {detail}"
    if kind is None:
        return f"the index{where} failed: {detail}"
    if kind == READONLY and path is not None and os.access(path, os.W_OK):
        where = f" at {os.fspath(path)}{_what_is_read_only(os.fspath(path))}"
    return f"cannot write the index{where}: {_PLAIN[kind]} ({detail})"


def plain_reason(exc: BaseException) -> str:
    """Why the index cannot be written, in the words of :func:`describe` without the
    path ("it is read-only (attempt to write a readonly database)"), for a note that
    names the index itself; SQLite's words alone for a failure of no known kind."""
    kind = classify(exc)
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return detail if kind is None else f"{_PLAIN[kind]} ({detail})"


def _what_is_read_only(path: str) -> str:
    """When the index file itself is writable, what is not: its -wal or -shm (made read
    only with it and left so), or its folder (SQLite makes those files there)."""
    side = [
        f"{path}{suffix}"
        for suffix in SIDE_SUFFIXES
        if os.path.exists(f"{path}{suffix}") and not os.access(f"{path}{suffix}", os.W_OK)
    ]
    if side:
        return f" ({' and '.join(side)} read-only)"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.access(folder, os.W_OK | os.X_OK):
        return f" (its folder {folder} is read-only)"
    return ""


SIDE_SUFFIXES = ("-wal", "-shm")


def quarantine(path: Path, expected: tuple[int, int] | None = None) -> Path | None:
    """Move a damaged index and its ``-wal``/``-shm`` aside as
    ``<name>.corrupt-<timestamp>[-wal|-shm]``; returns the new path of the main file.

    Several processes may find the same damage at once: under an exclusive lock, the
    file is moved only if it is still the one found damaged (``expected``: its
    ``(st_dev, st_ino)``); None when someone else already moved it (or it is gone).
    The side files move too: a new index must never pair with the old one's WAL.
    """
    lock = Path(f"{path}.recover.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        if expected is not None and (st.st_dev, st.st_ino) != expected:
            return None
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        target = Path(f"{path}.corrupt-{stamp}")
        n = 1
        while target.exists():
            n += 1
            target = Path(f"{path}.corrupt-{stamp}.{n}")
        os.replace(path, target)
        for suffix in SIDE_SUFFIXES:
            try:
                os.replace(f"{path}{suffix}", f"{target}{suffix}")
            except FileNotFoundError:
                pass
        return target
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def file_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file at ``path`` now; None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
