"""Which messages of a session matched a search, best first.

``search`` answers one row per session; front ends that open a conversation at the
right turn need the messages behind a row, read the same way
(:func:`~sessiondex.query.search.quote_query`, or FTS5 syntax with ``raw``) and ranked
the same way (bm25): the web view links a result to its best message and marks every
hit on the page (:func:`message_hits`, uuids only); the MCP server shows a model the
few best hits with their text (:func:`message_snippets`). Both read one ranked query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sessiondex.query.search import DEFAULT_MARKERS, SNIPPET_TOKENS, quote_query
from sessiondex.query.snippets import CLOSE, OPEN, display_snippet
from sessiondex.transcripts.pr_urls import parse_pr_ref

if TYPE_CHECKING:
    from sqlite_utils import Database

#: A page marks at most this many hits per session; the best come first.
MAX_HITS_PER_SESSION = 200
#: A snippet answer names at most this many sessions and hits per session.
MAX_SNIPPET_SESSIONS = 200
MAX_SNIPPETS_PER_SESSION = 10

# (messages_fts rowid, transcript path of the session, message uuid, user/assistant)
RankedHit = tuple[int, str, str, str]


def _ranked_hits(
    db: Database, query: str, paths: list[str], *, raw: bool, per_session: int
) -> list[RankedHit]:
    """The best ``per_session`` message hits of each session, best first per session."""
    text = query.strip()
    if not paths or not text or (not raw and parse_pr_ref(text) is not None):
        return []
    match = text if raw else quote_query(text)
    if not match:
        return []
    marks = ", ".join("?" for _ in paths)
    try:
        rows = db.execute(
            "SELECT id, file_path, uuid, type FROM ("
            " SELECT f.rowid AS id, s.file_path AS file_path, m.uuid AS uuid, m.type AS type,"
            "  row_number() OVER (PARTITION BY m.session_rowid ORDER BY f.rank, m.id) AS n"
            " FROM messages_fts f JOIN messages m ON m.id = f.rowid"
            " JOIN sessions s ON s.id = m.session_rowid"
            f" WHERE messages_fts MATCH ? AND s.file_path IN ({marks}) AND m.uuid IS NOT NULL"
            ") WHERE n <= ? ORDER BY file_path, n",
            [match, *paths, per_session],
        ).fetchall()
    except sqlite3.OperationalError:
        if raw:  # search() already told the user what is wrong with the query
            return []
        raise
    return [(rowid, path, uuid, kind) for rowid, path, uuid, kind in rows]


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
    out: dict[str, list[str]] = {}
    for _, path, uuid, _ in _ranked_hits(
        db, query, sorted(set(file_paths)), raw=raw, per_session=per_session
    ):
        out.setdefault(path, []).append(uuid)
    return out


def message_snippets(
    db: Database,
    query: str,
    file_paths: Iterable[str],
    *,
    per_session: int = 3,
    markers: tuple[str, str] = DEFAULT_MARKERS,
) -> dict[str, list[dict[str, Any]]]:
    """``file_path`` → up to ``per_session`` hits, best first (bm25), each
    ``{"message_uuid", "role", "snippet"}``; sessions without a message hit are absent.

    Sessions are named by transcript path because a session ID can exist in two config
    dirs; the path names one indexed session. Snippets (the costly part) are made for
    the chosen rows alone, with the original spacing, as ``search`` shows them."""
    paths = list(dict.fromkeys(file_paths))[:MAX_SNIPPET_SESSIONS]
    per_session = max(1, min(per_session, MAX_SNIPPETS_PER_SESSION))
    hits = _ranked_hits(db, query, paths, raw=False, per_session=per_session)
    if not hits:
        return {}
    rowids = ", ".join(str(hit[0]) for hit in hits)
    texts = dict(
        db.execute(
            f"SELECT rowid, snippet(messages_fts, 0, ?, ?, '…', {SNIPPET_TOKENS})"
            f" FROM messages_fts WHERE messages_fts MATCH ? AND rowid IN ({rowids})",
            [OPEN, CLOSE, quote_query(query.strip())],
        ).fetchall()
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for rowid, path, uuid, kind in hits:
        snippet = display_snippet(texts.get(rowid) or "", markers)
        out.setdefault(path, []).append({"message_uuid": uuid, "role": kind, "snippet": snippet})
    return out
