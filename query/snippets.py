"""The best-matching messages of given sessions for a full-text query, with their UUIDs.

``search`` answers one row per session with one snippet; a front end that lets a reader
(or a model) jump to the exact turn needs more: the few best message hits of each
session, each with the ``uuid`` of the transcript entry it comes from, so the
conversation can be opened at that message (``mcp`` ``read_session(around_message=…)``).

The words are matched as ``search`` matches them (:func:`query.search.quote_query`). A
PR/MR URL query has no message hits here (``search`` answers it from the PR tables).
:mod:`query.hits` answers a neighbouring question for the web view (every matching
UUID, to mark a whole page); this one keeps a few per session with their text, which
is what a reader deciding where to look needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sessiondex.indexer.text import unspace_cjk
from sessiondex.query.search import DEFAULT_MARKERS, SNIPPET_TOKENS, quote_query
from sessiondex.transcripts.pr_urls import parse_pr_url

if TYPE_CHECKING:
    from sqlite_utils import Database

MAX_SESSIONS = 200  # one query with a bounded IN list
MAX_PER_SESSION = 10


def message_snippets(
    db: Database,
    query: str,
    file_paths: list[str],
    *,
    per_session: int = 3,
    markers: tuple[str, str] = DEFAULT_MARKERS,
) -> dict[str, list[dict[str, Any]]]:
    """``file_path`` → up to ``per_session`` hits, best first (bm25), each
    ``{"message_uuid", "role", "snippet"}``. Sessions without a message hit are absent.

    Sessions are named by transcript path because a session ID can exist in two config
    dirs; the path names one indexed session."""
    text = query.strip()
    paths = list(dict.fromkeys(file_paths))[:MAX_SESSIONS]
    per_session = max(1, min(per_session, MAX_PER_SESSION))
    if not text or not paths or parse_pr_url(text) is not None:
        return {}
    match = quote_query(text)
    if not match:
        return {}
    # Ranked in SQL over the matches of these sessions only; the snippets (the costly
    # part) are then made for the chosen rows alone.
    rows = db.execute(
        "SELECT f.rowid, s.file_path, m.uuid, m.type FROM messages_fts f"
        " JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_rowid"
        f" WHERE messages_fts MATCH ? AND s.file_path IN ({', '.join('?' for _ in paths)})"
        " ORDER BY f.rank",
        [match, *paths],
    ).fetchall()
    chosen: dict[str, list[tuple[int, str | None, str]]] = {}
    for rowid, path, uuid, kind in rows:
        hits = chosen.setdefault(path, [])
        if len(hits) < per_session:
            hits.append((rowid, uuid, kind))
    rowids = [hit[0] for hits in chosen.values() for hit in hits]
    if not rowids:
        return {}
    texts = dict(
        db.execute(
            f"SELECT rowid, snippet(messages_fts, 0, ?, ?, '…', {SNIPPET_TOKENS})"
            f" FROM messages_fts WHERE messages_fts MATCH ?"
            f" AND rowid IN ({', '.join(str(r) for r in rowids)})",
            [markers[0], markers[1], match],
        ).fetchall()
    )
    return {
        path: [
            {
                "message_uuid": uuid,
                "role": kind,
                "snippet": unspace_cjk(" ".join((texts.get(rowid) or "").split())),
            }
            for rowid, uuid, kind in hits
        ]
        for path, hits in chosen.items()
    }
