"""Comparing two indexes by meaning, not by integer ids.

``index_snapshot`` returns every derived row keyed by file path / session ID, so an
index built incrementally (appends, rewrites, a watcher) can be compared with one built
from scratch: the incremental == rebuild invariant.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.indexer.schema import SESSION_FTS_COLUMNS
from sessiondex.indexer.shape import FTS_TABLES


def _rows(db: Database, sql: str) -> list[tuple[Any, ...]]:
    # key=repr: a total order even when a column mixes NULL and text (hostile corpora)
    return sorted((tuple(r) for r in db.execute(sql).fetchall()), key=repr)


def index_snapshot(db: Database) -> dict[str, list[tuple[Any, ...]]]:
    """Every table's rows, ids replaced by paths (sorted, comparable with ``==``)."""
    session_columns = [c for c in db["sessions"].columns_dict if c not in ("id",)]
    file_columns = [
        "path",
        "root",
        "project_key",
        "session_id",
        "kind",
        "agent_id",
        "size",
        "consumed",
        "bad_lines",
        "problems",
    ]
    return {
        "files": _rows(db, f"SELECT {', '.join(file_columns)} FROM files"),
        "sessions": _rows(db, f"SELECT {', '.join(session_columns)} FROM sessions"),
        "branches": _rows(
            db,
            "SELECT s.file_path, b.branch FROM branches b"
            " JOIN sessions s ON s.id = b.session_rowid",
        ),
        "branch_order": [
            tuple(r)
            for r in db.execute(
                "SELECT s.file_path, group_concat(b.branch, ' ') FROM"
                " (SELECT * FROM branches ORDER BY id) b JOIN sessions s ON s.id = b.session_rowid"
                " GROUP BY s.file_path ORDER BY s.file_path"
            )
        ],
        "pr_links": _rows(
            db,
            "SELECT s.file_path, f.path, p.url, p.number, p.repository,"
            " p.host, p.provider FROM pr_links p JOIN sessions s"
            " ON s.id = p.session_rowid JOIN files f ON f.id = p.file_id",
        ),
        "pr_mentions": _rows(
            db,
            "SELECT s.file_path, f.path, p.url FROM pr_mentions p"
            " JOIN sessions s ON s.id = p.session_rowid"
            " JOIN files f ON f.id = p.file_id",
        ),
        "messages": _rows(
            db,
            "SELECT s.file_path, f.path, m.uuid, m.type, m.ts_ms, m.text"
            " FROM message_text m JOIN sessions s ON s.id = m.session_rowid"
            " JOIN files f ON f.id = m.file_id",
        ),
        "session_search": _rows(
            db,
            f"SELECT s.file_path, {', '.join('x.' + c for c in SESSION_FTS_COLUMNS)}"
            " FROM session_search x JOIN sessions s ON s.id = x.id",
        ),
        "fts_integrity": [
            tuple(r)
            for r in db.execute(
                "SELECT (SELECT count(*) FROM messages_fts), (SELECT count(*) FROM messages),"
                " (SELECT count(*) FROM session_search_fts), (SELECT count(*) FROM session_search)"
            )
        ],
    }


def check_fts_integrity(db: Database) -> None:
    """FTS5's own consistency check of every FTS table against its content (raises if
    out of sync)."""
    for fts in FTS_TABLES:
        db.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")


def rebuilt_snapshot(roots: list[Path], db_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Snapshot of a fresh index built from ``roots`` into a new database."""
    db = open_db(db_path)
    try:
        refresh(db, roots)
        return index_snapshot(db)
    finally:
        db.close()


_OPENED: list[list[str]] = []
_HOOKED: list[bool] = []


def _record_open(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _OPENED and args and isinstance(args[0], (str, bytes, os.PathLike)):
        for opened in _OPENED:
            opened.append(os.fsdecode(args[0]))


@contextlib.contextmanager
def files_opened() -> Iterator[list[str]]:
    """The paths this process opens meanwhile, by ``open`` or ``os.open`` alike (both
    raise the "open" audit event; transcripts are opened with ``os.open``). One audit
    hook serves every use: hooks cannot be removed, and it is idle outside these."""
    if not _HOOKED:
        sys.addaudithook(_record_open)
        _HOOKED.append(True)
    opened: list[str] = []
    _OPENED.append(opened)
    try:
        yield opened
    finally:
        _OPENED.remove(opened)


@contextlib.contextmanager
def statements(conn: Any) -> Iterator[list[str]]:
    """The SQL ``conn`` (a ``sqlite3`` connection) runs meanwhile, as it runs it: what
    tests that count statements or read their plans look at."""
    asked: list[str] = []
    conn.set_trace_callback(asked.append)
    try:
        yield asked
    finally:
        conn.set_trace_callback(None)
