"""Whether the index already says what the transcripts say: the check before a reading
command, done on the read-only handle so that a command with nothing to refresh never
opens the index for writing nor imports sqlite-utils (its import, with its plugin
loading, is most of a query process's start-up).

"Nothing changed" uses the rule the refresh itself uses to skip a file
(``indexer/ingest.py`` ``_stat_unchanged``): every transcript under the config dirs has a
``files`` row with the same size, mtime, inode and device, stat'ed long enough after
its last write (not "racily" clean), and no row names a file that is gone. Anything
else (a new, grown, vanished or racy file, archive dirs to sweep) answers False and the
caller runs the real refresh. No transcript is opened: one ``lstat`` per file, no
``Path`` per file (``transcripts.discover.iter_found``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sessiondex.indexer.shape import stat_settled
from sessiondex.transcripts.discover import iter_found


def nothing_changed(db: Any, roots: list[Path]) -> bool:
    """True when a refresh of ``roots`` would find nothing to do (see the module doc)."""
    try:
        archives = db.execute("SELECT value FROM meta WHERE key = 'archive_dirs'").fetchone()
        if archives is not None and archives[0] not in (None, "", "[]"):
            return False  # archive dirs are swept by the refresh: leave them to it
        texts = [str(r) for r in roots]
        rows = db.execute(
            "SELECT path, size, mtime_ns, inode, device, checked_ns FROM files"
            f" WHERE root IN ({', '.join('?' for _ in texts) or 'NULL'})",
            texts,
        ).fetchall()
    except sqlite3.Error:
        return False
    known = {row[0]: row for row in rows}
    seen = 0
    for root in roots:
        for found in iter_found(root):
            row = known.get(found.path)
            if row is None or not stat_settled(
                row[1:], found.size, found.mtime_ns, found.inode, found.device
            ):
                return False
            seen += 1
    return seen == len(known)
