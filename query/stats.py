"""``stats``: what the index holds, how big it is, how fresh, and whether a watcher runs."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.lock import watcher_alive
from sessiondex.indexer.meta import get_meta
from sessiondex.query.sessions import VISIBLE_SQL

if TYPE_CHECKING:
    from sqlite_utils import Database


def index_stats(db: Database, db_path: Path) -> dict[str, Any]:
    def one(sql: str) -> Any:
        return db.execute(sql).fetchone()[0]

    index_bytes = sum(
        os.path.getsize(p)
        for p in (str(db_path), f"{db_path}-wal", f"{db_path}-shm")
        if os.path.exists(p)
    )
    last = get_meta(db, "last_refresh")
    return {
        "database": str(db_path),
        "config_dirs": [r[0] for r in db.execute("SELECT DISTINCT root FROM files ORDER BY root")],
        "sessions": one("SELECT count(*) FROM sessions"),
        "visible_sessions": one(f"SELECT count(*) FROM sessions s WHERE {VISIBLE_SQL}"),
        "projects": one("SELECT count(DISTINCT root || '/' || project_key) FROM sessions"),
        "files": one("SELECT count(*) FROM files"),
        "subagent_files": one("SELECT count(*) FROM files WHERE kind = 'subagent'"),
        "messages_indexed": one("SELECT count(*) FROM messages"),
        "pr_links": one("SELECT count(DISTINCT url) FROM pr_links"),
        "bad_lines": one("SELECT coalesce(sum(bad_lines), 0) FROM files"),
        "corpus_bytes": one("SELECT coalesce(sum(size), 0) FROM files"),
        "index_bytes": index_bytes,
        "last_refresh": (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(last))) if last else None
        ),
        "watcher": "running" if watcher_alive(db_path) else "not running",
    }
