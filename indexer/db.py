"""The one way to open the index.

WAL so readers never wait on the writer (``watch``), ``synchronous=NORMAL`` because the
index can always be rebuilt, a busy timeout so a reader that meets a checkpoint waits
instead of failing, and migrations applied on every open.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from sqlite_utils import Database

from indexer.schema import DERIVATION_VERSION, migrations

BUSY_TIMEOUT_MS = 30_000
DATA_TABLES = ("messages", "session_search", "pr_mentions", "pr_links", "branches", "sessions", "files")


def default_db_path(environ: dict[str, str] | None = None) -> Path:
    """``$SESSIONDEX_DB``, else ``$XDG_CACHE_HOME/sessiondex/index.db`` (``~/.cache``)."""
    env = os.environ if environ is None else environ
    if env.get("SESSIONDEX_DB"):
        return Path(env["SESSIONDEX_DB"]).expanduser()
    cache = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "sessiondex" / "index.db"


def open_db(path: str | os.PathLike[str] | None = None) -> Database:
    """Open (creating if needed) and migrate the index at ``path``."""
    target = Path(path) if path is not None else default_db_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    db = Database(target)
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        db.enable_wal()
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = OFF")
    if migrations.pending(db) or get_meta(db, "derivation_version") != str(DERIVATION_VERSION):
        # Several processes may open a new index at once (a watcher and a reader):
        # take the write lock first, then look again, so one of them migrates.
        with immediate(db):
            if migrations.pending(db):
                migrations.apply(db)
            _check_derivation_version(db)
    from indexer.bulk import repair_interrupted_bulk  # it imports this module's neighbours

    repair_interrupted_bulk(db)
    return db


@contextlib.contextmanager
def immediate(db: Database) -> Iterator[Database]:
    """A transaction that holds the write lock from its start (``BEGIN IMMEDIATE``), for
    check-then-write steps that two processes may race on. Nested ``db.atomic()``
    blocks inside it become savepoints."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.conn.rollback()
        raise
    else:
        db.execute("COMMIT")


def get_meta(db: Database, key: str) -> str | None:
    """A ``meta`` value; None when unset (or before the first migration made the table)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else row[0]


def set_meta(db: Database, key: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [key, value])


def clear_index(db: Database) -> None:
    """Drop every derived row (the schema stays); the next refresh rebuilds all."""
    with db.atomic():
        for table in DATA_TABLES:
            db.execute(f"DELETE FROM {table}")
        # archive_dirs is configuration (where cleanup --archive put sessions), not derived.
        db.execute("DELETE FROM meta WHERE key NOT IN ('derivation_version', 'archive_dirs')")


def _check_derivation_version(db: Database) -> None:
    stored = get_meta(db, "derivation_version")
    if stored == str(DERIVATION_VERSION):
        return
    if stored is not None:
        clear_index(db)
    with db.atomic():
        set_meta(db, "derivation_version", str(DERIVATION_VERSION))
