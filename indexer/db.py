"""The one way to open the index.

WAL so readers never wait on the writer (``watch``), ``synchronous=NORMAL`` because the
index can always be rebuilt, a busy timeout so a reader that meets a checkpoint waits
instead of failing, and migrations applied on every open.
"""

from __future__ import annotations

import os
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
    if migrations.pending(db):
        migrations.apply(db)
    _check_derivation_version(db)
    return db


def get_meta(db: Database, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
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
