"""``search``: full text over session metadata and message text, or a PR URL lookup.

Ranking is FTS5 bm25 (lower is better). Metadata columns are weighted so that what a
person named a session outranks what was merely said in it:

=====================  ======  ===============================================
column                 weight  why
=====================  ======  ===============================================
custom_title           10      the user's own name for the session
ai_title, agent_name   8, 5    names shown in the picker
tag                    6       a label the user chose
branches, PR links     4, 4    what the work was about, precisely
summary, prompts       3       a description of the whole session
cwd                    1       matches every session of a project: weak
=====================  ======  ===============================================

A metadata hit's score is then doubled (``METADATA_BOOST``) before it competes with the
session's best message hit, since a title hit means more than one line of a long
conversation; ties are broken by recency.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.shape import SESSION_FTS_COLUMNS
from sessiondex.indexer.text import fts_text, unspace_cjk
from sessiondex.query.filters import Filters
from sessiondex.query.prs import sessions_for_url
from sessiondex.query.sessions import (
    ACTIVITY_SQL,
    activity_ms,
    display_title,
    select_rows,
    to_objects,
)
from sessiondex.transcripts.pr_urls import parse_pr_url

if TYPE_CHECKING:
    from sqlite_utils import Database

COLUMN_WEIGHTS = {
    "custom_title": 10.0,
    "ai_title": 8.0,
    "agent_name": 5.0,
    "tag": 6.0,
    "branches_text": 4.0,
    "pr_text": 4.0,
    "summary": 3.0,
    "first_prompt": 3.0,
    "last_prompt": 3.0,
    "cwd": 1.0,
}
METADATA_BOOST = 2.0
FUZZY_CANDIDATES = 5000
FUZZY_CUTOFF = 70
SNIPPET_TOKENS = 12
DEFAULT_MARKERS = ("[", "]")
MIN_PREFIX_CHARS = 3


class SearchSyntaxError(ValueError):
    """A ``--raw`` query FTS5 cannot parse."""


def quote_query(query: str) -> str:
    """User text → a safe FTS5 query: every word a quoted string (so ``-``, ``*``, ``:``,
    ``NEAR``, parentheses and stray quotes are plain text), all words required, and the
    last word also matched as a prefix once it has three characters."""
    # NUL ends a string inside SQLite's FTS5 parser; quotes are re-added below.
    words = [w.replace('"', "").replace("\x00", "") for w in query.split()]
    words = [w for w in words if w]
    if not words:
        return ""
    parts = []
    for index, word in enumerate(words):
        spaced = fts_text(word).strip()
        if not any(ch.isalnum() for ch in spaced):
            continue
        quoted = '"' + spaced.replace('"', '""') + '"'
        if index == len(words) - 1 and len(word) >= MIN_PREFIX_CHARS and spaced == word:
            quoted += "*"
        parts.append(quoted)
    return " ".join(parts)


@dataclass
class Hit:
    session_rowid: int
    score: float
    source: str  # "meta" or "message"
    fts_rowid: int
    activity: int  # last activity (ms), the tie-break


def _weights_sql() -> str:
    return ", ".join(str(COLUMN_WEIGHTS[c]) for c in SESSION_FTS_COLUMNS)


def _metadata_hits(
    db: Database, match: str, where: str, params: list[Any], limit: int
) -> list[Hit]:
    rows = db.execute(
        f"SELECT f.rowid, bm25(session_search_fts, {_weights_sql()}) * {METADATA_BOOST}"
        f" AS score, {ACTIVITY_SQL} AS activity"
        " FROM session_search_fts f JOIN sessions s ON s.id = f.rowid"
        f" WHERE session_search_fts MATCH ? AND {where}"
        " ORDER BY score, activity DESC LIMIT ?",
        [match, *params, limit],
    ).fetchall()
    return [Hit(r[0], r[1], "meta", r[0], r[2]) for r in rows]


def _message_hits(db: Database, match: str, where: str, params: list[Any], limit: int) -> list[Hit]:
    """Each session's best message (SQLite gives a bare column the values of the row
    that holds the ``min()``), best sessions first: grouping in SQL keeps the Python
    side proportional to the page, not to the number of matching messages."""
    rows = db.execute(
        f"SELECT m.session_rowid, min(f.rank) AS score, f.rowid, {ACTIVITY_SQL} AS activity"
        " FROM messages_fts f JOIN messages m ON m.id = f.rowid"
        " JOIN sessions s ON s.id = m.session_rowid"
        f" WHERE messages_fts MATCH ? AND {where} GROUP BY m.session_rowid"
        " ORDER BY score, activity DESC LIMIT ?",
        [match, *params, limit],
    ).fetchall()
    return [Hit(r[0], r[1], "message", r[2], r[3]) for r in rows]


def _snippet(db: Database, hit: Hit, match: str, markers: tuple[str, str]) -> str:
    table = "session_search_fts" if hit.source == "meta" else "messages_fts"
    row = db.execute(
        f"SELECT snippet({table}, -1, ?, ?, '…', {SNIPPET_TOKENS}) FROM {table}"
        f" WHERE {table} MATCH ? AND rowid = ?",
        [markers[0], markers[1], match, hit.fts_rowid],
    ).fetchone()
    text = row[0] if row and row[0] else ""
    return unspace_cjk(" ".join(text.split()))


def search(
    db: Database,
    query: str,
    filters: Filters,
    *,
    raw: bool = False,
    markers: tuple[str, str] = DEFAULT_MARKERS,
) -> list[dict[str, Any]]:
    """Session objects matching ``query`` with ``score`` and ``snippet``, best first."""
    text = query.strip()
    if not text:
        return []
    if not raw and parse_pr_url(text) is not None:
        found = sessions_for_url(db, text, include_archived=filters.include_archived)
        pr = parse_pr_url(text)
        assert pr is not None
        for obj in found:
            linked = any(link["url"] == pr.url for link in obj["pr_links"])
            obj["score"] = None
            obj["snippet"] = f"{'linked' if linked else 'mentioned'}: {pr.url}"
        return found[: filters.limit] if filters.limit else found
    match = text if raw else quote_query(text)
    where, params = filters.where()
    # The best N sessions overall are among the best N of each source (a session's score
    # is the better of its two), so each query stops at N. -1: no limit.
    limit = filters.limit or -1
    hits: list[Hit] = []
    if match:
        try:
            hits = _metadata_hits(db, match, where, params, limit) + _message_hits(
                db, match, where, params, limit
            )
        except sqlite3.OperationalError as exc:
            if not raw:
                raise
            raise SearchSyntaxError(
                f"FTS5 cannot parse {text!r} ({exc}); drop --raw to search the words"
                " as typed, or see https://sqlite.org/fts5.html#full_text_query_syntax"
            ) from None
    if not hits:
        return [] if raw else fuzzy_search(db, text, filters)
    best: dict[int, Hit] = {}
    for hit in hits:
        if hit.session_rowid not in best or hit.score < best[hit.session_rowid].score:
            best[hit.session_rowid] = hit
    ranked = sorted(best.values(), key=lambda h: (h.score, -h.activity))
    if filters.limit:
        ranked = ranked[: filters.limit]
    rows = {
        r["id"]: r
        for r in select_rows(db, f"s.id IN ({', '.join(str(h.session_rowid) for h in ranked)})")
    }
    # The hits and the rows are two queries: a watcher may remove or rewrite a session
    # in between, and a hit whose row is gone is dropped (it was a KeyError).
    ranked = [h for h in ranked if h.session_rowid in rows]
    out = to_objects(db, [rows[hit.session_rowid] for hit in ranked])
    for obj, hit in zip(out, ranked):
        obj["score"] = round(hit.score, 6)
        obj["snippet"] = _snippet(db, hit, match, markers)
    return out


def fuzzy_search(db: Database, query: str, filters: Filters) -> list[dict[str, Any]]:
    """Typo tolerance when FTS finds nothing: rapidfuzz ranks titles, names, branches and
    first prompts of the most recent ``FUZZY_CANDIDATES`` sessions in scope (never the
    whole corpus in Python)."""
    where, params = filters.where()
    rows = select_rows(db, where, params, order=f"{ACTIVITY_SQL} DESC", limit=FUZZY_CANDIDATES)
    choices: dict[int, list[str]] = {}
    for row in rows:
        texts = [
            display_title(row),
            row.get("custom_title"),
            row.get("ai_title"),
            row.get("branches_text"),
            (row.get("first_prompt") or "")[:200],
        ]
        choices[row["id"]] = [t for t in texts if t]
    flat = [(rowid, t) for rowid, texts in choices.items() for t in texts]
    from rapidfuzz import fuzz, process  # only the typo fallback needs it (start-up time)

    scored = process.extract(
        query, [t for _, t in flat], scorer=fuzz.WRatio, score_cutoff=FUZZY_CUTOFF, limit=None
    )
    best: dict[int, tuple[float, str]] = {}
    for choice, score, index in scored:
        rowid = flat[index][0]
        if rowid not in best or score > best[rowid][0]:
            best[rowid] = (score, choice)
    by_id = {r["id"]: r for r in rows}
    ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], -activity_ms(by_id[kv[0]])))
    if filters.limit:
        ranked = ranked[: filters.limit]
    out = to_objects(db, [by_id[rowid] for rowid, _ in ranked])
    for obj, (_, (score, choice)) in zip(out, ranked):
        # Negative like bm25, so "lower is better" holds for fuzzy rows too.
        obj["score"] = round(-score / 100.0, 6)
        obj["snippet"] = choice
    return out
