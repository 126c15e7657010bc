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
    LITERAL_WORDS,
    SearchSyntaxError,
    check_raw_size,
    has_short_tail,
    query_terms,
    snippet_tokens,
    spelled_messages,
    spelled_terms,
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


def _match(db: Database, query: str, raw: bool, short_tail: bool = False) -> str:
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
    return dialect.any_of(query_terms(text, dialect, short_tail)[0])


def _hits(
    db: Database, query: str, paths: list[str], *, raw: bool, per_session: int
) -> tuple[str, list[RankedHit]]:
    """The match and :func:`_ranked_hits` of ``query``: with an identifier typed so far
    whose phrase no message holds (``user_p``), those of the words the search took
    instead (query/search.py ``has_short_tail``), so the sessions it found have hits."""
    match = _match(db, query, raw)
    hits = _ranked_hits(db, query, match, paths, raw=raw, per_session=per_session)
    if hits or raw or not has_short_tail(without_lone_surrogates(query).strip()):
        return match, hits
    match = _match(db, query, raw, short_tail=True)
    short = _ranked_hits(db, query, match, paths, raw=raw, per_session=per_session, short_tail=True)
    return match, short


def _ranked_hits(
    db: Database,
    query: str,
    match: str,
    paths: list[str],
    *,
    raw: bool,
    per_session: int,
    short_tail: bool = False,
) -> list[RankedHit]:
    """The best ``per_session`` message hits of each session, best first per session:
    those that write a spelling of ``query`` first (:func:`_spelled_first`)."""
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
    hits = [(rowid, path, uuid, kind) for rowid, path, uuid, kind in rows]
    return hits if raw else _spelled_first(db, query, hits, per_session, short_tail)


def _spelled_first(
    db: Database, query: str, hits: list[RankedHit], per_session: int, short_tail: bool = False
) -> list[RankedHit]:
    """``hits`` with each session's messages that write a spelling of the query
    (``user_profile`` as typed: query/search.py ``spelled_messages``, the texts the
    search's literal tier reads) first, in the order that tier finds them, then the
    others as ranked, at most ``per_session``.

    A session ranked first because a message wrote ``user_profile`` shows that text as
    its snippet; by bm25 alone its best message was the short prose "the user profile
    page is slow", which the web's result link opened and MCP quoted first. Only a
    query with a spelling pays: the literal tier's reading of these sessions."""
    text = without_lone_surrogates(query).strip()
    terms = query_terms(text, dialect_of(db), short_tail)[0]
    spelled = spelled_terms(text, terms, short_tail)
    if not spelled or not hits:
        return hits
    paths = list(dict.fromkeys(path for _, path, _, _ in hits))
    marks = ", ".join("?" for _ in paths)
    sessions: dict[int, str] = dict(
        db.execute(f"SELECT id, file_path FROM sessions WHERE file_path IN ({marks})", paths)
    )
    if not sessions:  # removed since the hits were read (PostgreSQL takes no "IN ()")
        return hits
    ids = ", ".join(str(int(rowid)) for rowid in sessions)
    written: dict[str, list[int]] = {}  # path -> message ids writing a spelling, in order
    for term, word in spelled[:LITERAL_WORDS]:
        for session, message in spelled_messages(db, ids, term, word):
            found = written.setdefault(sessions[session], [])
            if message not in found:
                found.append(message)
    known = {hit[0]: hit for hit in hits}
    # A message that writes it may be ranked past per_session: read its uuid and type.
    absent = {m: path for path, ms in written.items() for m in ms if m not in known}
    if absent:
        listed = ", ".join(str(int(m)) for m in absent)
        sql = f"SELECT id, uuid, type FROM messages WHERE id IN ({listed}) AND uuid IS NOT NULL"
        for rowid, uuid, kind in db.execute(sql):
            known[rowid] = (rowid, absent[rowid], uuid, kind)
    out: list[RankedHit] = []
    for path in paths:
        first = [known[m] for m in written.get(path, []) if m in known]
        shown = {hit[0] for hit in first}
        rest = [hit for hit in hits if hit[1] == path and hit[0] not in shown]
        out.extend((first + rest)[:per_session])
    return out


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
    count = MAX_LIMIT if per_session is None else per_session
    _, hits = _hits(db, query, sorted(set(file_paths)), raw=raw, per_session=count)
    for _, path, uuid, _ in hits:
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
    """``file_path`` → up to ``per_session`` hits, best first (bm25; those that write
    a spelling of the query before the others, as :func:`_spelled_first` says), each
    ``{"message_uuid", "role", "snippet"}``; sessions without a message hit are absent.

    Sessions are named by transcript path because a session ID can exist in two config
    dirs; the path names one indexed session. Snippets (the costly part) are made for
    the chosen rows alone, with the original spacing, as ``search`` shows them."""
    paths = list(dict.fromkeys(file_paths))[:MAX_SNIPPET_SESSIONS]
    per_session = max(1, min(per_session, MAX_SNIPPETS_PER_SESSION))
    match, hits = _hits(db, query, paths, raw=False, per_session=per_session)
    if not hits:
        return {}
    rowids = [hit[0] for hit in hits]
    texts = dialect_of(db).snippets(db, "message", match, rowids, snippet_tokens(match))
    out: dict[str, list[dict[str, Any]]] = {}
    for rowid, path, uuid, kind in hits:
        snippet = display_snippet(texts.get(rowid) or "", markers)
        out.setdefault(path, []).append({"message_uuid": uuid, "role": kind, "snippet": snippet})
    return out
