"""The one way to open the index.

WAL so readers never wait on the writer (``watch``), ``synchronous=NORMAL`` because the
index can always be rebuilt, a busy timeout so a reader that meets a checkpoint waits
instead of failing, and migrations applied on every open.

``open_db(path, readonly=True)`` is for a command that will only read (``--no-refresh``,
or a live ``watch`` keeps the index current): when the index on disk is current it
returns a :class:`ReadOnlyIndex` over a ``mode=ro`` connection without importing
sqlite-utils, whose import is half of a query process's start-up. Otherwise it opens
(and migrates) as usual.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.bulk import repair_interrupted_bulk
from sessiondex.indexer.meta import get_meta, immediate, set_meta
from sessiondex.indexer.shape import DERIVATION_VERSION, MIGRATION_NAMES, MIGRATION_SET

if TYPE_CHECKING:
    from sqlite_utils import Database

BUSY_TIMEOUT_MS = 30_000
DATA_TABLES = (
    "messages",
    "session_search",
    "pr_mentions",
    "pr_links",
    "branches",
    "sessions",
    "files",
)


def default_db_path(environ: dict[str, str] | None = None) -> Path:
    """``$SESSIONDEX_DB``, else ``$XDG_CACHE_HOME/sessiondex/index.db`` (``~/.cache``)."""
    env = os.environ if environ is None else environ
    if env.get("SESSIONDEX_DB"):
        return Path(env["SESSIONDEX_DB"]).expanduser()
    cache = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "sessiondex" / "index.db"


class ReadOnlyIndex:
    """The part of sqlite-utils' ``Database`` the query layer uses, over a read-only
    connection: ``execute``, ``conn`` and ``close``."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Any = None) -> sqlite3.Cursor:
        return self.conn.execute(sql, parameters if parameters is not None else ())

    def close(self) -> None:
        self.conn.close()


def _open_current_readonly(target: Path) -> ReadOnlyIndex | None:
    """A read-only handle when the index exists and needs no migration, derivation
    rebuild or repair; else None (the caller opens it the normal way)."""
    if not target.is_file():
        return None
    try:
        # URI-escape the three characters a file name may hold that a URI path may not
        # (urllib.parse would cost its import on every reading command).
        uri_path = str(target).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
        conn = sqlite3.connect(f"file:{uri_path}?mode=ro", uri=True)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        applied = {
            r[0]
            for r in conn.execute(
                "SELECT name FROM _sqlite_migrations WHERE migration_set = ?", [MIGRATION_SET]
            )
        }
        meta = dict(
            conn.execute(
                "SELECT key, value FROM meta WHERE key IN"
                " ('derivation_version', 'bulk_insert_trigger')"
            )
        )
    except sqlite3.Error:
        return None
    if (
        applied != set(MIGRATION_NAMES)
        or meta.get("derivation_version") != str(DERIVATION_VERSION)
        or "bulk_insert_trigger" in meta
    ):
        conn.close()
        return None
    return ReadOnlyIndex(conn)


def open_db(path: str | os.PathLike[str] | None = None, *, readonly: bool = False) -> Database:
    """Open (creating if needed) and migrate the index at ``path``."""
    target = Path(path) if path is not None else default_db_path()
    if readonly:
        handle = _open_current_readonly(target)
        if handle is not None:
            return handle  # type: ignore[return-value]  # the subset queries use
    from sqlite_utils import Database

    target.parent.mkdir(parents=True, exist_ok=True)
    return prepare(Database(target))


def prepare(db: Database) -> Database:
    """Settings, migrations and repair for a database opened by anyone (``open_db``, or a
    connection a library caller passed to ``sessiondex.Index``)."""
    from sessiondex.indexer.schema import migrations

    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if db.execute("PRAGMA journal_mode").fetchone()[0] not in ("wal", "memory"):
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
    repair_interrupted_bulk(db)
    return db


def clear_index(db: Database) -> None:
    """Drop every derived row (the schema stays); the next refresh rebuilds all."""
    with db.atomic():
        for table in DATA_TABLES:
            db.execute(f"DELETE FROM {table}")
        # archive_dirs is configuration (where cleanup --archive put sessions), not derived.
        db.execute(
            "DELETE FROM meta WHERE key NOT IN ('derivation_version', 'archive_dirs', 'archive_last_run')"
        )


def _check_derivation_version(db: Database) -> None:
    stored = get_meta(db, "derivation_version")
    if stored == str(DERIVATION_VERSION):
        return
    if stored is not None:
        clear_index(db)
    with db.atomic():
        set_meta(db, "derivation_version", str(DERIVATION_VERSION))
