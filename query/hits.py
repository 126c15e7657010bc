"""Which messages of a session matched a search: the web view links a search result to
its best message (``/session/<id>#msg-<uuid>``) and marks every hit on the page.

``search`` answers one row per session; this answers the messages behind a row, read
the same way (:func:`~sessiondex.query.search.quote_query`, or FTS5 syntax with
``raw``), ranked the same way (bm25, best first).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sessiondex.query.search import quote_query
from sessiondex.transcripts.pr_urls import parse_pr_url

if TYPE_CHECKING:
    from sqlite_utils import Database

#: A page marks at most this many hits per session; the best come first.
MAX_HITS_PER_SESSION = 200


def message_hits(
    db: Database,
    query: str,
    file_paths: Iterable[str],
    *,
    raw: bool = False,
    per_session: int = MAX_HITS_PER_SESSION,
) -> dict[str, list[str]]:
    """For each session transcript path in ``file_paths``, the uuids of its messages
    (subagents' included) that match ``query``, best first. A PR URL, an empty query or
    a ``raw`` query FTS5 cannot parse has no message hits."""
    paths = sorted(set(file_paths))
    text = query.strip()
    if not paths or not text or (not raw and parse_pr_url(text) is not None):
        return {}
    match = text if raw else quote_query(text)
    if not match:
        return {}
    marks = ", ".join("?" for _ in paths)
    try:
        rows = db.execute(
            "SELECT file_path, uuid FROM ("
            " SELECT s.file_path AS file_path, m.uuid AS uuid, row_number() OVER"
            "  (PARTITION BY m.session_rowid ORDER BY f.rank, m.id) AS n"
            " FROM messages_fts f JOIN messages m ON m.id = f.rowid"
            " JOIN sessions s ON s.id = m.session_rowid"
            f" WHERE messages_fts MATCH ? AND s.file_path IN ({marks}) AND m.uuid IS NOT NULL"
            ") WHERE n <= ? ORDER BY file_path, n",
            [match, *paths, per_session],
        ).fetchall()
    except sqlite3.OperationalError:
        if raw:  # search() already told the user what is wrong with the query
            return {}
        raise
    out: dict[str, list[str]] = {}
    for path, uuid in rows:
        out.setdefault(path, []).append(uuid)
    return out
