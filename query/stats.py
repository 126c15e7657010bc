"""``stats``: what the index holds, how big it is, how fresh, and whether a watcher runs."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.lock import watcher_alive, watcher_covers
from sessiondex.indexer.meta import get_meta
from sessiondex.query.archives import archived_sql
from sessiondex.query.filters import roots_sql
from sessiondex.query.sessions import VISIBLE_SQL

if TYPE_CHECKING:
    from sqlite_utils import Database


def index_stats(
    db: Database, db_path: Path, roots: Sequence[str | PathLike[str]] | None = None
) -> dict[str, Any]:
    """What the index holds for the config dirs ``roots`` (None: all of them), and
    archived sessions. ``index_bytes`` is the whole file: one index may be shared by
    several config dirs, and it is the file's size that a user sees on disk."""
    rooted, params = roots_sql(db, roots)
    # A session counts once: its live row, or while no live transcript is left its
    # archived version (what list --include-archived shows). An archive of a live
    # session is a copy of it, not one more session, project, file or message.
    rooted = f"{archived_sql(True, roots)} AND {rooted}"
    # A file counts with its session (main or subagent file), or by its config dir
    # while no session row holds it.
    files, file_params = "1 = 1", []
    if roots is not None:
        asked = [str(r) for r in roots]
        files = (
            f"(f.session_rowid IN (SELECT s.id FROM sessions s WHERE {rooted})"
            f" OR (f.session_rowid IS NULL AND f.root IN ({', '.join('?' for _ in asked)})))"
        )
        file_params = [*params, *asked]

    def one(sql: str, args: Sequence[Any] = ()) -> Any:
        return db.execute(sql, list(args)).fetchone()[0]

    def of_sessions(what: str, extra: str = "1 = 1") -> Any:
        return one(f"SELECT {what} FROM sessions s WHERE {rooted} AND {extra}", params)

    def of_files(what: str, extra: str = "1 = 1") -> Any:
        return one(f"SELECT {what} FROM files f WHERE {files} AND {extra}", file_params)

    index_bytes = sum(
        os.path.getsize(p)
        for p in (str(db_path), f"{db_path}-wal", f"{db_path}-shm")
        if os.path.exists(p)
    )
    last = get_meta(db, "last_refresh")
    held = [r[0] for r in db.execute("SELECT DISTINCT root FROM files ORDER BY root")]
    return {
        "database": str(db_path),
        "config_dirs": held if roots is None else [str(r) for r in roots],
        # copies of one session (a live config dir and its backup, two project dirs)
        # are one session, as list shows it and Claude Code's picker counts an ID once
        "sessions": of_sessions("count(DISTINCT s.session_id)"),
        "visible_sessions": of_sessions("count(DISTINCT s.session_id)", VISIBLE_SQL),
        # a project is a directory: its key, whichever config dir or archive holds it
        "projects": of_sessions("count(DISTINCT s.project_key)"),
        "files": of_files("count(*)"),
        "subagent_files": of_files("count(*)", "f.kind = 'subagent'"),
        "messages_indexed": one(
            "SELECT count(*) FROM messages m WHERE m.session_rowid IN"
            f" (SELECT s.id FROM sessions s WHERE {rooted})",
            params,
        ),
        "pr_links": one(
            "SELECT count(DISTINCT p.url) FROM pr_links p WHERE p.session_rowid IN"
            f" (SELECT s.id FROM sessions s WHERE {rooted})",
            params,
        ),
        "bad_lines": of_files("coalesce(sum(f.bad_lines), 0)"),
        "corpus_bytes": of_files("coalesce(sum(f.size), 0)"),
        "index_bytes": index_bytes,
        "last_refresh": (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(last))) if last else None
        ),
        "watcher": _watcher_state(db_path, roots),
    }


def _watcher_state(db_path: Path, roots: Sequence[str | PathLike[str]] | None) -> str:
    """``running`` only when the live ``watch`` keeps these config dirs current: one of
    other dirs leaves them to each command's own refresh, and says so."""
    if not watcher_alive(db_path):
        return "not running"
    if roots is None or watcher_covers(db_path, roots):
        return "running"
    return "running for other config dirs (commands here refresh themselves)"
