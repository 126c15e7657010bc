"""The two things every writer shares: the write transaction that starts as a write, and
the ``meta`` table (settings and markers the index keeps about itself)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlite_utils import Database


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
