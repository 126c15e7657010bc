"""Whether the index already says what the transcripts say: the check before a reading
command, done on the read-only handle so that a command with nothing to refresh never
opens the index for writing nor imports sqlite-utils (its import, with its plugin
loading, is most of a query process's start-up).

"Nothing changed" uses the rule the refresh itself uses to skip a file
(``indexer/shape.py`` ``stat_unchanged``): every transcript under the config dirs has a
``files`` row with the same size, mtime, inode and device, stat'ed long enough after
its last write (not "racily" clean), each main one's ``archived.json`` (Claude Code's
picker archive) is as last read, each ``.session-aliases`` is as the refresh last read
it (none added or gone), no row names a file that is gone, and no other
config dir the index holds has been deleted (its rows would still weigh in every
search's bm25 statistics). Anything
else (a new, grown, vanished or racy file, archive dirs to sweep) answers False and the
caller runs the real refresh. No transcript is opened: one ``lstat`` per file, no
``Path`` nor other object per file, nothing sorted (``transcripts.discover.iter_stats``).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from sessiondex.indexer.shape import alias_stamp, stat_settled
from sessiondex.transcripts.discover import (
    MAIN_WITH_FOLDER,
    SUBAGENT,
    AliasFiles,
    iter_stats,
    picker_archive_stamp,
)

# A files row as the freshness checks compare it: the path, then stat_settled's fields.
_STAT_ROW = "path, size, mtime_ns, inode, device, checked_ns, ctime_ns"
# ... and, for the check of every file, the picker archive last read (main rows).
_FRESH_ROW = f"{_STAT_ROW}, picker_archive"


def main_file_rows(db: Any, session_id: str, roots: list[str]) -> list[tuple[Any, ...]]:
    """The ``files`` rows (:data:`_STAT_ROW`) of a session's main transcripts in the
    config dirs ``roots``: every copy the index knows of that ID."""
    marks = ", ".join("?" for _ in roots) or "NULL"
    return list(
        db.execute(
            f"SELECT {_STAT_ROW} FROM files"
            f" WHERE session_id = ? AND kind = 'main' AND root IN ({marks})",
            [session_id, *roots],
        ).fetchall()
    )


def file_row(db: Any, path: str) -> tuple[Any, ...] | None:
    """The ``files`` row (:data:`_STAT_ROW`) of the transcript at ``path``, else None."""
    row = db.execute(f"SELECT {_STAT_ROW} FROM files WHERE path = ?", [path]).fetchone()
    return None if row is None else tuple(row)


def is_stale(stored: tuple[Any, ...] | None, path: str) -> bool:
    """Whether the transcript at ``path`` may differ from its files row ``stored``
    (:data:`_STAT_ROW`; None when not indexed): its stat differs, or its mtime is too
    close to when the row was taken to prove it (the ingest then decides with a
    fingerprint)."""
    try:
        st = os.stat(path)
    except OSError:
        return stored is not None  # gone: the ingest forgets it
    if stored is None:
        return True
    return not stat_settled(
        stored[1:], st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev, st.st_ctime_ns
    )


def nothing_changed(db: Any, roots: list[Path]) -> bool:
    """True when a refresh of ``roots`` would find nothing to do (see the module doc)."""
    try:
        archives = db.execute("SELECT value FROM meta WHERE key = 'archive_dirs'").fetchone()
        if archives is not None and archives[0] not in (None, "", "[]"):
            return False  # archive dirs are swept by the refresh: leave them to it
        texts = [str(r) for r in roots]
        rows = db.execute(
            f"SELECT {_FRESH_ROW} FROM files"
            f" WHERE root IN ({', '.join('?' for _ in texts) or 'NULL'})",
            texts,
        ).fetchall()
        others = db.execute(
            f"SELECT DISTINCT root FROM files"
            f" WHERE root NOT IN ({', '.join('?' for _ in texts) or 'NULL'})",
            texts,
        ).fetchall()
        alias_rows = db.execute(
            "SELECT path, size, mtime_ns, inode, ctime_ns FROM session_aliases"
            f" WHERE root IN ({', '.join('?' for _ in texts) or 'NULL'})",
            texts,
        ).fetchall()
    except sqlite3.Error:
        return False
    if any(not os.path.isdir(root) for (root,) in others):
        return False  # a config dir of a shared index is gone: the refresh forgets it
    known = {row[0]: row for row in rows}
    seen = 0
    aliases: AliasFiles = {}
    for root in roots:
        for path, _, kind, _, st in iter_stats(root, aliases):
            row = known.get(path)
            if row is None or not stat_settled(
                row[1:7], st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev, st.st_ctime_ns
            ):
                return False
            if kind != SUBAGENT and row[7] != (
                picker_archive_stamp(path) if kind == MAIN_WITH_FOLDER else None
            ):
                return False  # archived or brought back in Claude Code's picker
            seen += 1
    # each .session-aliases as the refresh last read it (indexer/refresh.py), none more
    read = {row[0]: tuple(row[1:]) for row in alias_rows}
    return seen == len(known) and read == {path: alias_stamp(st) for path, st in aliases.items()}
