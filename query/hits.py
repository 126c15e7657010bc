"""Which messages of a session matched a search, best first.

``search`` answers one row per session; front ends that open a conversation at the
right turn need the messages behind a row, read the same way
(:func:`~sessiondex.query.search.query_terms`, or the backend's own syntax with
``raw``) and ranked the same way (bm25 locally, ``ts_rank`` on the team store: the SQL
that differs is in :mod:`~sessiondex.query.dialect`): the web view links a result to
its best message and marks every hit on the page (:func:`message_hits`, uuids only);
the MCP server shows a model the few best hits with their text
(:func:`message_snippets`). Both read one ranked query.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sessiondex.query.dialect import dialect_of
from sessiondex.query.filters import MAX_LIMIT
from sessiondex.query.search import (
    DEFAULT_MARKERS,
    SearchSyntaxError,
    check_raw_size,
    query_terms,
    snippet_tokens,
)
from sessiondex.query.snippets import display_snippet
from sessiondex.transcripts.pr_urls import parse_pr_ref
from sessiondex.transcripts.reader import without_lone_surrogates

if TYPE_CHECKING:
    from sqlite_utils import Database

#: The hits of each session :func:`message_hits` answers by default, the best first:
#: the search page links each result to its best one. The session page asks for every
#: hit (``per_session=None``): it counts them, marks those on its page and links to the
#: others, and a common word's best 200 in a long session were all on its first pages.
MAX_HITS_PER_SESSION = 200
#: A snippet answer names at most this many sessions and hits per session.
MAX_SNIPPET_SESSIONS = 200
MAX_SNIPPETS_PER_SESSION = 10

# (messages_fts rowid, transcript path of the session, message uuid, user/assistant)
RankedHit = tuple[int, str, str, str]


def _match(db: Database, query: str, raw: bool) -> str:
    """The full-text match of ``query``'s words, any of them, in the backend's syntax
    (FTS5 locally, ``to_tsquery`` on the team store); empty for a PR URL or no words."""
    text = without_lone_surrogates(query).strip()  # a library caller's text: no crash
    if not text or (not raw and parse_pr_ref(text) is not None):
        return ""
    dialect = dialect_of(db)
    if raw:
        try:
            check_raw_size(text)  # what search() refuses would be ranked here for minutes
        except SearchSyntaxError:
            return ""
        return dialect.raw_query(db, text)
    # Any of the words: a session may hold them in different messages (search finds it
    # so), and each such message is a hit; one that holds more of them ranks higher.
    return dialect.any_of(query_terms(text, dialect)[0])


def _ranked_hits(
    db: Database, match: str, paths: list[str], *, raw: bool, per_session: int
) -> list[RankedHit]:
    """The best ``per_session`` message hits of each session, best first per session."""
    if not paths or not match:
        return []
    dialect = dialect_of(db)
    try:
        rows = db.execute(
            dialect.ranked_hits_sql(", ".join("?" for _ in paths)), [match, *paths, per_session]
        ).fetchall()
    except dialect.syntax_errors:
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
    per_session: int | None = MAX_HITS_PER_SESSION,
) -> dict[str, list[str]]:
    """For each session transcript path in ``file_paths``, the uuids of its messages
    (subagents' included) that match ``query``, best first: at most ``per_session`` of
    them, or every one with None. A PR URL, an empty query or a ``raw`` query FTS5
    cannot parse or ``search`` refuses has no message hits."""
    out: dict[str, list[str]] = {}
    match = _match(db, query, raw)
    count = MAX_LIMIT if per_session is None else per_session
    for _, path, uuid, _ in _ranked_hits(
        db, match, sorted(set(file_paths)), raw=raw, per_session=count
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
    match = _match(db, query, False)
    hits = _ranked_hits(db, match, paths, raw=False, per_session=per_session)
    if not hits:
        return {}
    rowids = [hit[0] for hit in hits]
    texts = dialect_of(db).snippets(db, "message", match, rowids, snippet_tokens(match))
    out: dict[str, list[dict[str, Any]]] = {}
    for rowid, path, uuid, kind in hits:
        snippet = display_snippet(texts.get(rowid) or "", markers)
        out.setdefault(path, []).append({"message_uuid": uuid, "role": kind, "snippet": snippet})
    return out
