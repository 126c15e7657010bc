"""Cold builds with the FTS triggers off, and the repair of an interrupted one.

FTS5 tokenizes row by row through the insert triggers; for a cold build that was most
of the time (1.2–1.9 s of 5.6 s on the bench corpus), while one ``'rebuild'`` over the
same text takes ~0.35 s. So a refresh whose new bytes outweigh the indexed ones drops
the FTS triggers, inserts, then rebuilds the FTS tables and restores the triggers in
one transaction. The triggers' SQL is kept in ``meta`` while they are off, and a bulk
lock is held: if the process dies, the next ``open_db`` that finds the SQL there and no
live holder of the lock rebuilds and restores, so the index is never left unsearchable.

The delete and update triggers go too, not only the insert ones: another process may
delete or rewrite rows while the build runs (a refresh between two of its commits), and
a ``'delete'`` of a row written during the build, which FTS5 never had, is not harmless:
FTS5 calls its index malformed and that refresh fails. With no trigger, FTS5 is left as
it was and the closing ``'rebuild'`` makes it match the rows, whoever wrote them.
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING

import orjson

from sessiondex.indexer.lock import AlreadyWatching, WatcherLock, watcher_alive
from sessiondex.indexer.meta import database_path, get_meta, immediate, write_turn

if TYPE_CHECKING:
    from sqlite_utils import Database

BULK_TRIGGER_KEY = "bulk_insert_trigger"
# Trigger → the FTS table it keeps in step. All are dropped for a bulk build (see the
# module's docstring); a build of an older version dropped only the insert ones.
TRIGGERS = {
    **{f"messages_{kind}": "messages_fts" for kind in ("ai", "ad", "au")},
    **{f"session_search_{kind}": "session_search_fts" for kind in ("ai", "ad", "au")},
    **{f"session_title_{kind}": "session_title_fts" for kind in ("ai", "ad", "au")},
}
BULK_LOCK = "bulk"
# FTS5's pending-terms budget: its default, kept for the small transactions of a
# refresh or the watcher, and the larger one a rebuild uses (see restore_fts).
FTS5_HASHSIZE = 1 << 20
REBUILD_HASHSIZE = 16 << 20


class BulkFts:
    """``with BulkFts(db): ...`` inserts messages and sessions without per-row FTS work."""

    def __init__(self, db: Database) -> None:
        self._db = db
        path = database_path(db)
        self._lock = WatcherLock(path, BULK_LOCK) if path else None
        self.active = False

    def __enter__(self) -> BulkFts:
        db = self._db
        if self._lock is not None:
            try:
                self._lock.acquire()
            except (AlreadyWatching, OSError):
                return self  # someone else's bulk build: stay with the trigger
        with immediate(db):  # read the triggers under the lock that drops them
            saved = {
                name: sql
                for name, sql in db.execute(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN"
                    f" ({', '.join('?' for _ in TRIGGERS)})",
                    list(TRIGGERS),
                )
            }
            if set(saved) != set(TRIGGERS) or get_meta(db, BULK_TRIGGER_KEY) is not None:
                return self
            db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                [BULK_TRIGGER_KEY, orjson.dumps(saved).decode()],
            )
            for name in saved:
                db.execute(f"DROP TRIGGER {name}")
        self.active = True
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.active:
                restore_fts(self._db)
                self.active = False
                give_back_free_pages(self._db)
        finally:
            if self._lock is not None:
                self._lock.release()


def restore_fts(db: Database) -> None:
    """Rebuild the FTS tables from their rows and put the triggers back."""
    if get_meta(db, BULK_TRIGGER_KEY) is None:
        return
    with immediate(db):  # two readers may find the same interrupted build
        saved = get_meta(db, BULK_TRIGGER_KEY)
        if saved is None:
            return
        triggers: dict[str, str] = orjson.loads(saved)
        for fts in dict.fromkeys(TRIGGERS[name] for name in triggers):
            # FTS5 writes its pending terms out as a new segment whenever they pass
            # ``hashsize`` (1 MB by default), and merges those segments as it goes: for
            # a rebuild of ~100 MB of prose that is a hundred segments and their merges.
            # 16 MB of pending terms made the text-heavy rebuild ~1.5-2x faster for
            # ~25 MB more memory while it runs; larger gained nothing more.
            db.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('hashsize', {REBUILD_HASHSIZE})")
            db.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")
            # The rebuild leaves a few big segments on the low levels. Left as they are,
            # the ~12th small segment a watcher's appends add makes FTS5's automerge
            # rewrite them inside that one append's transaction: a 1.2-1.6 s stall of a
            # live update on the 400 MB text-heavy corpus. Merging them into one segment
            # now costs ~1.2 s of that cold build once; afterwards appends only merge
            # their own small segments (max 17 ms over 40 appends, measured).
            db.execute(f"INSERT INTO {fts}({fts}) VALUES ('optimize')")
            db.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('hashsize', {FTS5_HASHSIZE})")
        for name, sql in triggers.items():
            db.execute(f"DROP TRIGGER IF EXISTS {name}")  # never two of a name: no dead end
            db.execute(sql)
        db.execute("DELETE FROM meta WHERE key = ?", [BULK_TRIGGER_KEY])


def give_back_free_pages(db: Database) -> None:
    """Truncate the file by its free pages (``PRAGMA incremental_vacuum``), after a cold
    build: its FTS5 ``'optimize'`` (:func:`restore_fts`) merges the rebuild's segments into
    one and frees theirs, 5 MB of the 128 MB text-heavy bench index, which would
    otherwise stay in the file until later writes reuse them. Later deletes leave their
    pages free for the next appends, as SQLite does by default (no ``auto_vacuum =
    FULL``, which moves pages at every commit). A no-op on an index made before
    ``auto_vacuum`` was set (``index --rebuild`` converts it) and best effort: busy,
    the file keeps its free pages."""
    if db.conn.in_transaction:
        return
    try:
        with write_turn(db):
            # executescript steps the pragma to its end: a plain execute() frees one page.
            db.conn.executescript("PRAGMA incremental_vacuum;")
    except sqlite3.Error:
        pass


def repair_interrupted_bulk(db: Database) -> None:
    """Finish what a killed bulk build left: called by every ``open_db``.

    An index whose FTS triggers are gone while no build holds them (no saved SQL, no
    live bulk lock) cannot be finished: nothing says what to put back, and every search
    would find nothing from then on (two ``index --rebuild`` at once did that before
    ``clear_index`` kept the saved SQL). It is raised as malformed, so that ``open_db``
    moves it aside and rebuilds it, as any damaged index."""
    path = database_path(db)
    if get_meta(db, BULK_TRIGGER_KEY) is None:
        if triggers_missing(db) and not (path and watcher_alive(os.fspath(path), BULK_LOCK)):
            # looked at again: a build that began and ended around the lock's look
            if triggers_missing(db) and get_meta(db, BULK_TRIGGER_KEY) is None:
                raise sqlite3.DatabaseError(
                    "database disk image is malformed (its full-text triggers are gone)"
                )
        return
    if path is not None and watcher_alive(os.fspath(path), BULK_LOCK):
        return  # the build is still running
    restore_fts(db)


def triggers_missing(db: Database | sqlite3.Connection) -> bool:
    """Whether any FTS trigger of :data:`TRIGGERS` is absent (a build's, or lost)."""
    marks = ", ".join("?" for _ in TRIGGERS)
    found = db.execute(
        f"SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ({marks})",
        list(TRIGGERS),
    ).fetchone()[0]
    return bool(found != len(TRIGGERS))
