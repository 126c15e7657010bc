"""``search``: full text over session metadata and message text, or a PR lookup.

**What matches.** Every word of the query must appear in the session: in its title,
names, tags, branches, PR links, summary, prompts or messages, not necessarily all in one
message ("websocket login" finds a session titled "Websocket reconnect" whose messages
talk about the login page). The last word also matches as a prefix once it has three
characters. When no session has every word, the sessions with the most of them are
offered as *partial* matches; when none has any word, rapidfuzz offers the closest titles,
names and branches (a typo still finds the session). Neither is a match: the caller is
told which of the three it got (:class:`SearchOutcome`), and ``search`` exits 1 for them.
A query with no letter or digit (an emoji) has no word to match: it is looked for as
typed in the names, tag, summary and prompts instead (:func:`symbol_search`).
A query still being typed (the picker, ``typing``) of one or two letters filters titles
and names by prefix instead (:func:`title_prefix_search`); from three letters it is the
full search, except that words found in more than :data:`TYPING_RANK_LIMIT` messages
list the sessions of the newest such messages, newest first, after the ranked title and
metadata hits (:func:`_newest_message_hits`): ranking that many matches takes longer
than a keystroke, and a word that common says little about which session is wanted.
When the metadata of more than that many sessions holds the word and its hits fill the
page, the messages are not read at all: their sessions would come after the page. For
the same reason a typed query with such a word only finds sessions where one message or
metadata row holds every word (not words spread over several rows).

**Ranking** is FTS5 bm25 (lower is better). Metadata columns are weighted so that what a
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
conversation. A session whose words are spread over several rows (no one message or
metadata row holds them all) scores the *mean* of each word's best score: the words are
there, but apart, which says less than finding them together. Within each of the two,
the sessions that wrote the query's words joined by punctuation as typed
(``user_profile``, which FTS5 reads as the phrase "user profile") come first
(:func:`_literal_tier`). Ties go to recency. A fork stands where its score puts it
(docs/resolution.md#order-of-a-listing).

Each hit carries ``matched_by``: ``title`` when the session's titles and names hold the
words it matched, ``text`` otherwise, ``pr-link``/``pr-mention`` for a PR lookup and
``fuzzy`` for the typo fallback.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.shape import SESSION_FTS_COLUMNS, TITLE_FTS_COLUMNS
from sessiondex.indexer.text import (
    LONG_TOKEN_PREFIX,
    fts_text,
    may_hold_cjk,
    without_invisible,
    word_text,
)
from sessiondex.indexer.unicode61 import fold, token_spans
from sessiondex.query.dialect import SQLITE, SqliteDialect, dialect_of
from sessiondex.query.filters import Filters
from sessiondex.query.sessions import (
    ACTIVITY_SQL,
    LISTING_COLUMNS,
    activity_ms,
    display_title,
    select_rows,
    to_objects,
)
from sessiondex.query.snippets import (
    ELLIPSIS,
    display_snippet,
    holds_spelling,
    joined_by_punctuation,
    one_line,
)
from sessiondex.query.typos import typo_scores
from sessiondex.transcripts.pr_urls import parse_pr_ref
from sessiondex.transcripts.reader import without_lone_surrogates

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
}
#: The columns that make a hit a ``title`` hit: the names the picker shows.
TITLE_COLUMNS = ("custom_title", "ai_title", "agent_name")
#: What one or two typed letters filter (:func:`title_prefix_search`): the names, the
#: title shown of a session without one, the tag and the branches.
TYPED_PREFIX_COLUMNS = TITLE_FTS_COLUMNS  # indexed alone, by session_title_fts
METADATA_BOOST = 2.0
FUZZY_CANDIDATES = 5000
# What the typo fallback reads of its candidates (texts, recency, forks, the stored
# object): not whole rows, thousands of which would cost more than the matching.
FUZZY_COLUMNS = (
    "s.id, s.session_id, s.forked_from_session, s.object_json, s.custom_title, s.ai_title,"
    " s.agent_name, s.summary, s.last_prompt, s.first_prompt, s.prompt_fallback, s.branches_text,"
    " s.tag, s.last_activity_ms, s.mtime_ns"
)
SNIPPET_TOKENS = 12
#: For a query in CJK, Thai and the like, where each character is a token of its own,
#: twelve tokens were a few words.
SNIPPET_TOKENS_CJK = 32


#: FTS5's snippet() takes at most this many tokens.
SNIPPET_TOKENS_MAX = 64


def snippet_tokens(match: str) -> int:
    """How many tokens a snippet for the FTS query ``match`` holds: room for its
    longest phrase beyond the usual. FTS5 keeps the window at the text's start while a
    phrase's first token is inside it and marks only the tokens within, so a pasted
    path, identifier or flag (``src/config/loader.rs:14:5``: six tokens) near the
    twelfth token was shown as ``[src]…``."""
    base = SNIPPET_TOKENS_CJK if may_hold_cjk(match) else SNIPPET_TOKENS
    # FTS5's "phrase" and the team store's to_tsquery 'phrase' alike.
    phrases = [a or b for a, b in re.findall(r'"((?:[^"]|"")*)"|\'((?:[^\']|\'\')*)\'', match)]
    longest = max((_token_count(phrase) for phrase in phrases), default=1)
    return min(SNIPPET_TOKENS_MAX, base + max(0, longest - 1))


def _token_count(phrase: str) -> int:
    """About how many tokens FTS5 makes of ``phrase`` (each CJK character one): enough
    to size a snippet's window."""
    return len(_alnum_runs(fts_text(phrase)))


def _alnum_runs(spaced: str) -> list[str]:
    """The runs of letters and digits of a text already through ``fts_text``: its
    tokens, as near as the window sizing and a query's prefix rule need."""
    return "".join(ch if ch.isalnum() else " " for ch in spaced).split()


#: While a query is typed in the picker (``typing``), words found in more messages than
#: this list the sessions of the newest such messages first, instead of ranking every
#: match by relevance (see :func:`_newest_message_hits`).
TYPING_RANK_LIMIT = 5000
DEFAULT_MARKERS = ("[", "]")
MIN_PREFIX_CHARS = 3
# Sessions whose names match a one- or two-letter prefix (``typing``), above which the
# newest are found by walking the listing order instead of sorting the matches.
WALK_ABOVE = 2000

#: :attr:`SearchOutcome.kind`: every word found in a session; some words only; the
#: typo fallback; nothing at all.
MATCH, PARTIAL, FUZZY, NONE = "match", "partial", "fuzzy", "none"


class SearchSyntaxError(ValueError):
    """A ``--raw`` query FTS5 cannot parse."""


@dataclass
class SearchOutcome:
    """Rows to show and what they are. ``words`` are the query's words as typed (the
    ones FTS could use); ``elsewhere`` maps a wider scope to the number of sessions that
    match there, filled when nothing matched in this scope and the caller asked."""

    rows: list[dict[str, Any]]
    kind: str
    words: list[str] = field(default_factory=list)
    elsewhere: dict[str, int] = field(default_factory=dict)
    #: Some rows are sessions of the newest matching messages, newest first, not ranked
    #: (a word too common to rank while it is typed, :data:`TYPING_RANK_LIMIT`).
    newest_first: bool = False

    @property
    def matched(self) -> bool:
        """True when at least one session matched every word (or the PR)."""
        return self.kind == MATCH and bool(self.rows)


@dataclass
class Ranking:
    """A search's sessions in order and what they are, before their objects are read
    (:func:`rank_search`); :func:`ranked_rows` reads the objects of a slice of them.

    Why two steps: most of a search of a common word is the ranking (FTS5 scores every
    match before the first row), while a session's object and snippet cost per session
    read. A front end that pages through one query's results (the picker) ranks once and
    reads a page at a time; asking :func:`run_search` again with a larger limit paid
    for the whole search per page (0.15 s a page-down at 1,500 results). ``run_search``
    is the two steps in one call, so every front end answers in one order."""

    kind: str
    words: list[str] = field(default_factory=list)
    markers: tuple[str, str] = DEFAULT_MARKERS
    hits: list[Hit] = field(default_factory=list)  # the sessions, objects not yet read
    terms: list[str] = field(default_factory=list)  # the FTS terms (matched_by, snippets)
    newest_first: bool = False  # as SearchOutcome.newest_first
    elsewhere: dict[str, int] = field(default_factory=dict)
    #: What :func:`title_prefix_search` filtered by: its rows say ``matched_by`` by it.
    prefix: str | None = None
    #: An answer read whole, objects and all (a PR lookup, a query of symbols, the typo
    #: fallback): none of them ranks full text, so there is nothing to read later.
    rows: list[dict[str, Any]] | None = None
    limit: int | None = None  # the sessions asked for (None: every one)
    #: (file_path, session_id) of each session, in order (``rank_search(sessions=True)``)
    sessions: list[tuple[str, str]] | None = None
    #: The filters' SQL over ``sessions s`` and its parameters (``Filters.where``) the
    #: hits were ranked under, applied again to each page's rows (:func:`ranked_rows`).
    where: tuple[str, list[Any]] = field(default_factory=lambda: ("1 = 1", []))

    def __len__(self) -> int:
        return len(self.rows) if self.rows is not None else len(self.hits)

    @property
    def complete(self) -> bool:
        """Every session the query finds is here: fewer than the limit were found."""
        return self.limit is None or len(self) < self.limit


@dataclass(frozen=True)
class QueryWord:
    """One word of a query as the search reads it (:func:`query_words`)."""

    typed: str  # as typed (a quote inside it a space: it separates, as in the text)
    spaced: str  # as the index stores text (indexer/text.py fts_text), trimmed
    prefix: bool  # also matched as a prefix: the last word, from three letters
    #: Its tokens from the first to the last as stored, when punctuation alone joins
    #: them (``user_profile``, ``auth/middleware``, ``no-verify``): the spelling a text
    #: that wrote it holds (:func:`_literal_tier`); None for any other word.
    literal: str | None
    #: The spelling is matched as a prefix (:func:`holds_spelling`): the last word's,
    #: also when its last token is too short to be a prefix to FTS5 (``user_p``).
    literal_prefix: bool = False


def query_words(query: str, short_tail: bool = False) -> list[QueryWord]:
    """User text → its words, each once: those with nothing FTS indexes (punctuation
    alone) are dropped, and so is a word the query already holds as the index compares
    words (``Error error``): FTS5 walks a phrase's matches once for each time it is
    written, and a pasted log repeating a few words 3,000 times took 8 s on a handful
    of sessions."""
    # NUL ends a string inside SQLite's FTS5 parser. A quote inside a word separates as
    # the tokenizer takes it (f"hello is the phrase f hello; deleted, it glued the two
    # into fhello, which no text holds); the quotes FTS5 needs are added by the dialect.
    # An invisible character inside a word is no part of it (indexer/text.py
    # without_invisible): the last word typed so is still a prefix.
    words = [without_invisible(w.replace('"', " ").replace("\x00", "")) for w in query.split()]
    words = [w for w in words if w]
    out: list[QueryWord] = []
    seen: set[tuple[str, bool]] = set()
    for index, word in enumerate(words):
        spaced = fts_text(word).strip()
        if not any(ch.isalnum() for ch in spaced):
            continue
        # The prefix applies to the word's last token as FTS5 splits it: "C++" is the
        # token "c", "foo.ba" ends in "ba"; a one- or two-letter prefix matches too much.
        tokens = _alnum_runs(spaced)
        last = index == len(words) - 1 and spaced == word and bool(tokens)
        prefix = last and len(tokens[-1]) >= MIN_PREFIX_CHARS
        literal = _spelling(word)
        literal_prefix = prefix
        if short_tail and last and _short_tail(tokens, literal):
            # An identifier being typed (user_p, src/config/lo), whose phrase found
            # nothing (_rank): its last token is too short to be a prefix, so the tokens
            # before it are searched, and the sessions that wrote the spelling so far
            # rank first (_literal_tier).
            spaced = spaced[: spaced.rindex(tokens[-1])]
            literal_prefix = True
        if (key := (" ".join(fold(spaced).split()), prefix)) in seen:
            continue
        seen.add(key)
        out.append(QueryWord(word, spaced, prefix, literal, literal_prefix))
    return out


def _short_tail(tokens: list[str], literal: str | None) -> bool:
    """Whether the last word, joined by punctuation (``literal``), ends in a token too
    short to be a prefix, after tokens that still say something without it (one of them
    at least :data:`MIN_PREFIX_CHARS` long: ``a_b`` would search ``a``)."""
    return (
        literal is not None
        and len(tokens[-1]) < MIN_PREFIX_CHARS
        and any(len(token) >= MIN_PREFIX_CHARS for token in tokens[:-1])
    )


def has_short_tail(query: str) -> bool:
    """Whether ``query``'s last word is an identifier typed so far whose last token is
    too short to be a prefix (``user_p``): when its phrase finds nothing, the search and
    its message hits are tried again with that token left to the spelling."""
    words = query_words(query)
    return bool(words) and words[-1] != query_words(query, short_tail=True)[-1]


def _spelling(word: str) -> str | None:
    """:attr:`QueryWord.literal` of ``word``: its tokens as the tokenizer cuts the word
    as typed (a CJK run is one), when there are several and punctuation alone joins each
    to the next, from the first to the last (a pasted word's quotes and commas, a flag's
    dashes, are no part of it), as stored (CJK spaced one token per character)."""
    if word.isalnum():  # one token (or a CJK run, one): the plain word's path, no scan
        return None
    spans = [found.span() for found in token_spans(word)]
    if len(spans) < 2:
        return None
    if not all(joined_by_punctuation(word[a[1] : b[0]]) for a, b in zip(spans, spans[1:])):
        return None
    return fts_text(word[spans[0][0] : spans[-1][1]]).strip()


def query_terms(
    query: str, dialect: SqliteDialect = SQLITE, short_tail: bool = False
) -> tuple[list[str], list[str]]:
    """User text → full-text terms, one per word of :func:`query_words`, and the words
    they came from. Every word becomes a quoted string (so ``-``, ``*``, ``:``,
    ``NEAR``, parentheses and stray quotes are plain text); the last word is also
    matched as a prefix once it has three characters (``short_tail``: see
    :func:`has_short_tail`)."""
    words = query_words(query, short_tail)
    terms: list[str] = []
    for word in words:
        term = dialect.term(word.spaced, word.prefix)
        last = _alnum_runs(word.spaced)[-1]
        if word.prefix and len(last) > LONG_TOKEN_PREFIX:
            # The index keeps a token longer than LONG_TOKEN_MAX as its first
            # LONG_TOKEN_PREFIX characters (indexer/text.py): typed further than that
            # (40 characters of a SHA-512, of a base64 blob), the prefix is a prefix of
            # no stored token. Such a word also matches the cut form, whole.
            cut = word.spaced[: word.spaced.rindex(last) + LONG_TOKEN_PREFIX]
            term = "(" + dialect.any_of([term, dialect.term(cut, False)]) + ")"
        terms.append(term)
    # Named to a person ("No session has all of: …"): a phrase's quotes, spaces in
    # ``typed``, are not shown at a word's ends.
    return terms, [" ".join(word.typed.split()) for word in words]


def quote_query(query: str) -> str:
    """User text → one safe FTS5 query requiring every word in the same row."""
    return " ".join(query_terms(query)[0])


@dataclass
class Hit:
    session_rowid: int
    score: float
    source: str  # "meta" or "message"; "title": the letters typed (title_prefix_search)
    fts_rowid: int
    activity: int  # last activity (ms), the tie-break
    match: str = ""  # the FTS query the snippet highlights
    terms: tuple[int, ...] = ()  # indexes of the query terms this session holds
    recent: bool = False  # from the newest matching messages, not ranked
    apart: bool = False  # the terms are in different rows: ranked after every "together"
    literal: int = 0  # how many of the query's spellings its rows write (_literal_tier)
    #: For a "meta" hit, the metadata column (its index in SESSION_FTS_COLUMNS) the
    #: snippet comes from; -1: the best-scoring one, FTS5's snippet() choice.
    column: int = -1


def _weights_sql() -> str:
    # shown_title, last: a copy of a summary or prompt already weighed, for the filter
    # as letters are typed; it adds nothing to a rank.
    return ", ".join(str(COLUMN_WEIGHTS[c]) for c in SESSION_FTS_COLUMNS) + ", 0.0"


def _metadata_hits(
    db: Database,
    match: str,
    where: str,
    params: list[Any],
    limit: int,
    tally: Tally | None = None,
    scope: str | None = None,
) -> list[Hit]:
    """Sessions whose metadata matches, best first (``limit`` < 0: every one). With a
    page limit, FTS5 ranks alone and the page is read as :func:`_message_hits` reads
    it: joined to ``sessions`` in SQL, SQLite may probe the FTS table once per session
    row (a prefix term's doclists merged each time), 4-6x the cost of the ranking.
    ``tally``: see :class:`Tally` (filled only on that path). ``scope``: see
    :func:`_message_hits`."""
    dialect = dialect_of(db)
    if scope is not None and limit >= 0:
        # The typed ``error`` in a 70-session worktree at 20,000 sessions: 13,000 ranked
        # rows of other projects mapped to their sessions, 35 ms; ~1 ms so.
        hits = _metadata_hits(db, match, f"{where} AND +f.rowid IN ({scope})", params, -1)
        return _in_order(db, hits, lambda h: (h.score, -h.activity))[:limit] if scope else []
    if limit >= 0 and dialect.name == "sqlite":
        ranked = (
            f"SELECT rowid, bm25(session_search_fts, {_weights_sql()}) * {METADATA_BOOST}"
            " AS score FROM session_search_fts WHERE session_search_fts MATCH ? ORDER BY score"
        )
        owners = (
            f"SELECT s.id, s.id, {ACTIVITY_SQL} FROM sessions s WHERE s.id IN ({{ids}}) AND {where}"
        )
        return _ranked_page(db, ranked, match, owners, params, limit, "meta", tally=tally)
    rows = db.execute(
        dialect.metadata_hits_sql(where, _weights_sql(), METADATA_BOOST, ACTIVITY_SQL),
        [match, *params, dialect.limit(limit)],
    ).fetchall()
    return [Hit(r[0], r[1], "meta", r[0], r[2], match) for r in rows]


# Messages taken from the ranked cursor before the first look at their sessions (see
# _message_hits): each one costs a row lookup in ``messages`` and ``sessions``, so the
# first batch stays near the page.
FIRST_CUT = 100
MAX_BATCH = 20000  # rowids in one lookup's IN list


def _message_hits(
    db: Database,
    match: str,
    where: str,
    params: list[Any],
    limit: int,
    newest_first_above: int | None = None,
    kept: KeptRanks | None = None,
    rows: str = "1",
    scope: str | None = None,
) -> list[Hit]:
    """Each session's best message, best sessions first (``limit`` < 0: every session).

    With a page limit the cost follows the page, not the number of matching messages:
    FTS5 ranks the matches itself (``ORDER BY rank``, no join per match) and
    :func:`_ranked_page` maps only the messages it reads to their sessions. With
    ``newest_first_above``, a match of more messages than that is not ranked at all
    (:func:`_newest_message_hits`). ``kept``: see :func:`_keep_ranks`. ``rows``: a
    filter on the matching messages, every session's only (:func:`_within_sql`).
    ``scope``: the sessions ``where`` keeps (a worktree, a branch, a date), as an SQL
    list, when they are few enough to rank in alone (:func:`_narrow_scope`)."""
    if limit < 0 or dialect_of(db).name != "sqlite":
        # Every session, or PostgreSQL (its GIN lookup and ts_rank already run per page).
        return _all_message_hits(db, match, where, params, limit, rows)
    assert rows == "1", "a page's ranking is not narrowed by message rows"
    owners = (
        f"SELECT m.id, m.session_rowid, {ACTIVITY_SQL} FROM messages m"
        f" JOIN sessions s ON s.id = m.session_rowid WHERE m.id IN ({{ids}}) AND {where}"
    )
    ranked = "SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank"

    def in_scope() -> list[Hit] | None:
        return _scope_page(db, match, where, params, limit)

    if scope is not None:
        # Before the whole ranking, not after NARROW_AFTER of its rows: FTS5 ranks every
        # match before the first row, so a common word cost a scope of a few sessions
        # what it costs every session, and more (``the`` in a 7-session project, 2,000
        # text-heavy sessions: 155 ms, 36 ms so; a rare word 1.4 -> 0.7 ms). Typed too:
        # the newest matches of every project, mapped to their sessions until the scope's
        # page filled, were most of them another project's (``error`` in a 70-session
        # worktree at 20,000 sessions: 199,000 rows read, 2.6 s a keystroke).
        if kept is None:
            return _page_within(db, match, where, params, limit, scope)
        if not scope:
            return []
        # A word whose ranking is kept for the literal tier (a spelled word alone,
        # ``user_profile``): the ranking of the scope's messages alone, read as the
        # whole ranking is read, and kept so. It ranked every project's matches (and,
        # typed, read their newest) while the other query shapes ranked the scope's.
        scoped = (
            "SELECT f.rowid, f.rank FROM messages_fts f WHERE messages_fts MATCH ?"
            f" AND {_within_parts(scope)[1]} ORDER BY f.rank"
        )
        return _ranked_page(db, scoped, match, owners, params, limit, "message", kept)
    if newest_first_above is not None:
        newest = _newest_message_hits(db, match, owners, params, limit, newest_first_above)
        if newest is not None:
            return newest
    if kept is not None:  # the ranking is read on anyway (_keep_ranks)
        return _ranked_page(db, ranked, match, owners, params, limit, "message", kept)
    return _ranked_page(db, ranked, match, owners, params, limit, "message", narrow=in_scope)


#: Ranked rows read for a page before a narrow scope is ranked in alone (_ranked_page).
NARROW_AFTER = 5000


def _scope_page(
    db: Database, match: str, where: str, params: list[Any], limit: int
) -> list[Hit] | None:
    """The page of ``match``'s sessions, ranked within the scope's own sessions, when
    those are at most :data:`RANK_WITHIN` (else None).

    Why: a page read from the ranking of every match (:func:`_ranked_page`) maps the
    rows it reads to their sessions, and for a narrow scope most are another project's:
    ``the`` in a 64-session worktree at 20,000 text-heavy sessions read ~344,000 rows
    in batches of lookups, 4.7 s, where ranking only that scope's messages (each
    session's best, the narrowed ranking's statement) took 0.44 s. Ranked in those
    sessions, each one's best message is the one the whole ranking gives it (a row's
    bm25 does not depend on which rows are asked for), and the page is cut as
    :func:`_ranked_page` cuts it."""
    ids = _scope_ids(db, where, params)
    return None if ids is None else _page_within(db, match, where, params, limit, ids)


def _page_within(
    db: Database, match: str, where: str, params: list[Any], limit: int, ids: str
) -> list[Hit]:
    """The page of ``match``'s sessions among ``ids`` (an SQL list), ranked in them."""
    if not ids:
        return []
    hits = _within(db, match, where, params, ids)
    return _in_order(db, hits, lambda h: (h.score, -h.activity))[:limit]


def _narrow_scope(db: Database, filters: Filters, where: str, params: list[Any]) -> str | None:
    """The sessions a search ranks in alone, before any ranking of every match: those of
    a filter that may keep a small share of them (:meth:`Filters.narrows`), when they
    are at most :data:`RANK_WITHIN` (:func:`_scope_ids`); None otherwise."""
    if not filters.narrows() or dialect_of(db).name != "sqlite":
        return None
    return _scope_ids(db, where, params)


def _scope_ids(db: Database, where: str, params: list[Any]) -> str | None:
    """The sessions ``where`` keeps, as an SQL list for :func:`_within` (``""``: none),
    when they are at most :data:`RANK_WITHIN`; None when more."""
    listed = f"SELECT s.id FROM sessions s WHERE {where} LIMIT {RANK_WITHIN + 1}"
    ids = [r[0] for r in db.execute(listed, params)]
    if len(ids) > RANK_WITHIN:
        return None
    return ", ".join(str(i) for i in sorted(ids))


@dataclass
class Tally:
    """Whether a ranked statement (:func:`_ranked_page`) matched more than ``above``
    rows, found by reading its cursor on past the page: None until known.

    Why: FTS5 ranks every match before the first row, so the rows past the page cost
    only their reading (~0.2 µs each), where :func:`_matches_more_than`, a statement of
    its own, makes FTS5 merge a prefix's doclists again: the typed ``str``'s metadata
    at 20,000 text-heavy sessions, 17,500 matches, cost 8 ms counted apart and ~1 ms
    read on."""

    above: int
    more: bool | None = None


def _matches_more_than(db: Database, match: str, count: int, table: str = "messages_fts") -> bool:
    """Whether more than ``count`` rows of ``table`` (messages, or the sessions'
    metadata) match: FTS5 walks the doclists by rowid without ranking (~1-10 ms for
    5,000 at 20,000 sessions, against ~2 µs per match to rank them all)."""
    row = db.execute(
        f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
        [match, count],
    ).fetchone()
    return row is not None


def _newest_message_hits(
    db: Database, match: str, owners_sql: str, params: list[Any], limit: int, above: int
) -> list[Hit] | None:
    """The sessions of the newest matching messages, newest first, up to ``limit``
    sessions, without ranking: the answer to a word still being typed that is too common
    to rank in a keystroke's time, found in more than ``above`` messages
    (``TYPING_RANK_LIMIT``); None for a rarer one, which is worth ranking.

    One statement both counts and answers: FTS5 merges the doclists of every word a
    prefix stands for before its first row (190 ms for ``str*`` in 308,000 of 392,000
    messages at 20,000 text-heavy sessions), so counting first with a statement of its
    own, as this did, paid that merge twice.

    Message rowids grow as messages are indexed, and a cold build indexes transcripts
    oldest first (``indexer/refresh.py``), so the newest rowids are the recent
    conversations. Each session's hit is its newest matching message (the snippet) and
    scores 0, below any ranked metadata hit: sessions named by the word come first, then
    the others by last activity (the caller's tie-break)."""
    cursor = db.execute(
        "SELECT rowid, 0.0 FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid DESC",
        [match],
    )
    try:
        read = cursor.fetchmany(above + 1)
        if len(read) <= above:
            return None
        best: dict[int, Hit] = {}
        batch = min(max(2 * limit, FIRST_CUT), MAX_BATCH)  # MAX_BATCH: one IN list
        while len(best) < limit:
            rows, read = read[:batch], read[batch:]
            if len(rows) < batch:
                rows += cursor.fetchmany(batch - len(rows))
            if not rows:
                break
            _add_sessions(db, rows, owners_sql, params, best, "message", match)
            batch = min(2 * batch, MAX_BATCH)
        for hit in best.values():
            hit.recent = True
        return sorted(best.values(), key=lambda h: -h.activity)[:limit]
    finally:
        cursor.close()


def _add_sessions(
    db: Database,
    rows: list[tuple[int, float]],
    owners_sql: str,
    params: list[Any],
    best: dict[int, Hit],
    source: str,
    match: str,
) -> None:
    """Map FTS rows (rowid, score), in the order read, to their sessions in scope
    (``owners_sql``, see :func:`_ranked_page`); a session not yet in ``best`` gets its
    first row as its hit."""
    ids = ", ".join(str(rowid) for rowid, _ in rows)
    owners = {r[0]: (r[1], r[2]) for r in db.execute(owners_sql.replace("{ids}", ids), params)}
    for rowid, score in rows:
        owner = owners.get(rowid)
        if owner is not None and owner[0] not in best:
            best[owner[0]] = Hit(owner[0], score, source, rowid, owner[1], match)


def _ranked_page(
    db: Database,
    ranked_sql: str,
    match: str,
    owners_sql: str,
    params: list[Any],
    limit: int,
    source: str,
    kept: KeptRanks | None = None,
    tally: Tally | None = None,
    narrow: Callable[[], list[Hit] | None] | None = None,
) -> list[Hit]:
    """The best ``limit`` sessions from FTS rows in rank order (``ranked_sql``: rowid,
    score), each session scored by its best row; ``owners_sql`` maps rowids (``{ids}``)
    to (rowid, session, activity) for the sessions in scope (its ``where`` takes
    ``params``).

    The ranked rows are read in batches; only those read are mapped and filtered. A
    session's score is its best row's, so the sessions in rank order of the rows read so
    far are the best sessions; reading stops once the page is certain (its last
    session's score is better than the last row read, so no tie is left unread). FTS5
    ranks every match once, before the first row, so reading further costs only the
    lookups (asking again with a larger ``LIMIT`` ranked them all again: two or three
    times for a common prefix). ``kept``: see :func:`_keep_ranks`; ``tally``: see
    :class:`Tally` (one or the other). ``narrow``: the page found another way once
    :data:`NARROW_AFTER` rows have not filled it (None: not that way), see
    :func:`_scope_page`."""
    assert kept is None or tally is None  # each reads the cursor on
    cursor = db.execute(ranked_sql, [match])
    try:
        best: dict[int, Hit] = {}
        read: list[tuple[int, float]] = []
        seen = 0
        batch = min(max(2 * limit, FIRST_CUT), MAX_BATCH)  # MAX_BATCH: one IN list
        while True:
            ranked = cursor.fetchmany(batch)
            seen += len(ranked)
            if ranked:
                _add_sessions(db, ranked, owners_sql, params, best, source, match)
            if kept is not None:
                read += ranked
            # Ties broken as the whole ranking breaks them (_in_order: by session ID), so
            # a page is the top of the ranking a larger page gives.
            page = _in_order(db, best.values(), lambda h: (h.score, -h.activity))[:limit]
            ended = len(ranked) < batch
            if ended or (len(page) == limit and page[-1].score < ranked[-1][1]):
                if kept is not None:
                    _keep_ranks(cursor, match, read, ended, kept)
                if tally is not None:
                    if not ended and seen <= tally.above:
                        seen += len(cursor.fetchmany(tally.above + 1 - seen))
                    tally.more = seen > tally.above
                return page  # every match read, or the page is certain
            if narrow is not None and seen >= NARROW_AFTER:
                other = narrow()
                if other is not None:
                    return other
                narrow = None
            # Enough rows for the page at the sessions-per-row rate seen, twice over.
            batch = min(max(2 * batch, batch * 2 * limit // max(len(best), 1)), MAX_BATCH)
    finally:
        cursor.close()


#: The matching messages of a one-word query with a spelling read on from its ranking
#: for the literal tier (:func:`_keep_ranks`); a word in more is matched again there.
LITERAL_KEPT = 5000
#: A match's every message ``(rowid, rank)``, in rank order, read from its ranking.
KeptRanks = dict[str, list[tuple[int, float]]]


def _keep_ranks(
    cursor: sqlite3.Cursor,
    match: str,
    read: list[tuple[int, float]],
    ended: bool,
    kept: KeptRanks,
) -> None:
    """Read ``cursor`` (ranked, past ``read``) to its end into ``kept[match]``, when the
    match has at most :data:`LITERAL_KEPT` messages.

    Why: the literal tier reads each candidate session's :data:`LITERAL_ROWS` best
    messages for a word (:func:`spelled_messages`), and for a query of that one word
    this ranking has already ranked every one of them: FTS5 scores every match before
    its first row, and reading the rest costs ~2 µs a row. Matched and ranked a second
    time, as the literal tier's own statement does, ``user_pro`` (``pro*`` merges the
    doclists of every word it starts) paid 0.2 s of its 0.55 s at 20,000 text-heavy
    sessions. Past the cap what was read on is given up and the word matched again, a
    loss bounded at ~10 ms for a word whose search takes 0.35 s and more (``the.user``,
    in 15,834 messages there)."""
    if len(read) > LITERAL_KEPT:
        return
    if not ended:
        more = cursor.fetchmany(LITERAL_KEPT + 1 - len(read))  # one past the cap: too many
        if len(read) + len(more) > LITERAL_KEPT:
            return
        read = read + more
    kept[match] = read


def _all_message_hits(
    db: Database, match: str, where: str, params: list[Any], limit: int, rows: str = "1"
) -> list[Hit]:
    """Every matching session's best message, best sessions first, grouped in SQL (the
    dialect's query: FTS5 or tsvector), up to ``limit`` sessions (< 0: all). ``where``
    filters the sessions, ``rows`` the matching messages (:func:`_within_sql`)."""
    dialect = dialect_of(db)
    sql = dialect.message_hits_sql(where, ACTIVITY_SQL, rows)
    found = db.execute(sql, [match, *params, dialect.limit(limit)]).fetchall()
    return [Hit(r[0], r[1], "message", r[2], r[3], match) for r in found]


def _best(hits: list[Hit]) -> dict[int, Hit]:
    """A session's best hit of several (its score is the better of its sources)."""
    best: dict[int, Hit] = {}
    for hit in hits:
        if hit.session_rowid not in best or hit.score < best[hit.session_rowid].score:
            best[hit.session_rowid] = hit
    return best


def _fts(db: Database, run: Any, raw: bool, text: str) -> Any:
    """Run an FTS query; a ``--raw`` query FTS5 cannot parse is the user's error."""
    dialect = dialect_of(db)
    try:
        return run()
    except dialect.syntax_errors as exc:
        if not raw:
            raise
        engine, syntax = dialect.raw_syntax
        why = " ".join(str(exc).split())  # PostgreSQL's errors run over several lines
        raise SearchSyntaxError(
            f"{engine} cannot parse {text!r} ({why}); drop --raw to search the words"
            f" as typed, or see {syntax}"
        ) from None


def _find(
    db: Database,
    terms: list[str],
    where: str,
    params: list[Any],
    limit: int,
    typing: bool = False,
    page: int | None = None,
    kept: KeptRanks | None = None,
    scope: str | None = None,
) -> tuple[dict[int, Hit], dict[int, Hit]]:
    """Sessions holding every term (best hit each) and, when there are none, the
    sessions holding some of them (best first, most terms first).

    Rows holding every term are found with the limit (each source's best N contain
    the best N overall). With several terms a session may hold them in different rows;
    that needs each term's full session set, so those queries run without a limit, when
    the sessions holding every term in one row do not fill the page: ``page``, the
    sessions shown (None: ``limit``), which a query with a spelling asks fewer of than
    the candidates it ranks (:data:`LITERAL_CANDIDATES`). ``kept``: see
    :func:`_keep_ranks`; ``scope``: see :func:`_message_hits`."""
    dialect = dialect_of(db)
    together = dialect.all_of(terms)
    named: list[Hit] = []
    # How many sessions' metadata matched, counted as the ranking is read (Tally).
    tally = Tally(TYPING_RANK_LIMIT) if typing else None

    def metadata() -> list[Hit]:
        named.extend(_metadata_hits(db, together, where, params, limit, tally, scope))
        return named

    def named_by_many() -> bool:
        if tally is not None and tally.more is not None:
            return tally.more
        return _matches_more_than(db, together, TYPING_RANK_LIMIT, "session_search_fts")

    def messages() -> list[Hit]:
        if typing and 0 <= limit <= len(named) and dialect.name == "sqlite" and named_by_many():
            # Typed, a word the metadata of that many sessions holds is in more messages
            # still (a prompt is a message): their sessions would come after every
            # metadata hit, and those fill the page. Finding them cost FTS5 the merge of
            # the word's every doclist: 190 ms for "str" at 20,000 text-heavy sessions.
            return []
        newest_above = TYPING_RANK_LIMIT if typing else None
        return _message_hits(db, together, where, params, limit, newest_above, kept, scope=scope)

    full = _best(_either(metadata, messages))
    for hit in full.values():
        hit.terms = tuple(range(len(terms)))
    if len(terms) < 2 or 0 <= (limit if page is None else page) <= len(full):
        # A session holding the words only apart ranks after every one of ``full``
        # (run_search), spelling or not: with the page filled by those, none can be on
        # it, and ranking each word's every match for them was most of a plain
        # question's time.
        return full, {}
    if typing and limit >= 0 and dialect.name == "sqlite":
        # Words spread over several rows need each word's every session, ranked: for a
        # word in more than TYPING_RANK_LIMIT messages that is 0.2-1 s at 20,000
        # sessions, too slow for a keystroke. Typed, such a query keeps to the rows that
        # hold every word.
        if any(_matches_more_than(db, term, TYPING_RANK_LIMIT) for term in terms):
            return full, {}
    per_term = _each_term_best(db, terms, where, params, limit if page is None else page, scope)
    spread: dict[int, Hit] = {}
    for rowid in set().union(*per_term):
        held = tuple(i for i, hits in enumerate(per_term) if rowid in hits)
        # The row shown is the best message, before the metadata: the best-scored row was
        # often a title or prompt holding a common word, boosted, and its snippet hid the
        # word the search was for (a rarer word scores better within messages).
        best = min(
            (per_term[i][rowid] for i in held), key=lambda h: (h.source != "message", h.score)
        )
        # Missing words count as 0: the mean over *all* words, so more words is better.
        score = sum(per_term[i][rowid].score for i in held) / len(terms)
        match = dialect.any_of([terms[i] for i in held])
        spread[rowid] = Hit(
            rowid, score, best.source, best.fts_rowid, best.activity, match, held, apart=True
        )
    # A session that holds every word in one row (a message, its metadata) keeps that
    # hit, whose snippet shows them all; one that holds them only apart comes after
    # every such session (run_search), as the README says.
    for rowid, hit in spread.items():
        if len(hit.terms) == len(terms) and rowid not in full:
            full[rowid] = hit
    if full:
        return full, {}
    return {}, spread


# Sessions holding the rarest word under which the other words' matches are ranked in
# those sessions only (see _each_term_best); above it every match is ranked, as ranking
# within most sessions costs what ranking all of them does. 0 turns the narrowing off.
RANK_WITHIN = 1000
# Matches counted per word to find the rarest (a doclist walk, ~0.3 µs a match); a
# rarest word with this many is too common to narrow by.
RARITY_CAP = 5000


def _each_term_best(
    db: Database,
    terms: list[str],
    where: str,
    params: list[Any],
    page: int = -1,
    scope: str | None = None,
) -> list[dict[int, Hit]]:
    """Each term's best hit in each session that holds it, for the words spread over
    several rows (:func:`_find`): in every such session when no session holds every
    term, else in those that hold every term (no other can be on the page).

    Ranking every match of a common word is most of a many-word search (``the`` in
    34,000 of the bench's 40,000 messages: ~50 ms a word, a question in plain words
    0.4 s). So when the rarest word is held by at most :data:`RANK_WITHIN` sessions,
    the other words' matches are ranked in those sessions only, each word narrowing them
    further (a row's bm25 does not depend on which other rows are asked for); FTS5
    still walks a common word's doclist, a quarter of ranking it. Their metadata too
    is ranked in those sessions only; each term's whole is asked when it is needed.
    With every word common, a narrow filter's sessions (``scope``, :func:`_message_hits`)
    are what each word is ranked in (``the test`` in a 6-session project: 130 ms ranked
    everywhere)."""
    metas: dict[int, dict[int, Hit]] = {}
    # In a narrow scope, a term's metadata is ranked in its sessions alone, as its
    # messages are: each match of another project was looked up and filtered.
    named_where = where if scope is None else f"{where} AND +f.rowid IN ({scope or 'NULL'})"

    def meta(i: int) -> dict[int, Hit]:
        if i not in metas:
            metas[i] = _best(_metadata_hits(db, terms[i], named_where, params, -1))
        return metas[i]

    narrowed = (
        _held_by_every_one(db, terms, meta, where, params)
        if dialect_of(db).name == "sqlite" and RANK_WITHIN > 0
        else None
    )
    if narrowed:
        return narrowed
    if narrowed is None and scope is not None:
        return [_ranked_within(db, term, where, params, scope) for term in terms]
    if narrowed == [] and page >= 0:
        # No session holds every word: the answer is partial, and its page is all that
        # needs ranking.
        partial = _partial_page(db, terms, where, params, page)
        if partial is not None:
            return partial
    return [
        _best(list(meta(i).values()) + _message_hits(db, term, where, params, -1))
        for i, term in enumerate(terms)
    ]


def _partial_page(
    db: Database, terms: list[str], where: str, params: list[Any], page: int
) -> list[dict[int, Hit]] | None:
    """:func:`_each_term_best` for a partial answer (no session holds every term), over
    only the sessions that can be on its first ``page``; None when some session holds
    every term, or those sessions are too many to rank within (:data:`RANK_WITHIN`).

    Partial matches are ordered by how many of the terms they hold first (``_rank``), so
    with each term's holders found unranked (a doclist walk each, no bm25), the page is
    among the sessions holding the most terms: the fewest top counts whose sessions fill
    it, every session of the last such count included (their scores order them). Each
    term is then ranked in those sessions only, as :func:`_held_by_every_one` ranks: a
    row's bm25 does not depend on which other rows are asked for, so their hits and
    scores are the ones the whole ranking gives. Ranking every match of every word was
    most of the cost: ``what is the best way to handle errors`` took 4.5 s at 20,000
    text-heavy sessions."""
    rare = "SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)"
    if not any(
        0 < db.execute(rare, [term, RARITY_CAP]).fetchone()[0] < RARITY_CAP
        for term in dict.fromkeys(terms)
    ):
        # Every word held is common: the sessions holding most of them are most sessions
        # (``retry upload handler``: 15,000 of 20,000), and finding them only added to
        # ranking them all.
        return None
    # The scope is asked once, not of each match: per match, it was most of the walk
    # (``the``, in 344,646 messages: 0.4 s a word unfiltered, seconds filtered).
    in_scope = {r[0] for r in db.execute(f"SELECT s.id FROM sessions s WHERE {where}", params)}
    holders_sql = (
        "SELECT DISTINCT m.session_rowid FROM messages_fts f CROSS JOIN messages m"
        " ON m.id = f.rowid WHERE messages_fts MATCH ?"
    )
    held: dict[str, set[int]] = {}
    for term in dict.fromkeys(terms):
        rows = {r[0] for r in db.execute(holders_sql, [term])}
        titled = db.execute(
            "SELECT rowid FROM session_search_fts WHERE session_search_fts MATCH ?", [term]
        )
        rows.update(r[0] for r in titled)
        held[term] = rows & in_scope
    # A repeated term counts each time it is asked, as the ranked answer counts it.
    counts = {
        rowid: sum(1 for term in terms if rowid in held[term])
        for rowid in set().union(*held.values())
    }
    if any(n == len(terms) for n in counts.values()):
        return None  # some session holds every word: not a partial answer
    by_count = Counter(counts.values())
    least, filled = 0, 0
    for least in sorted(by_count, reverse=True):
        filled += by_count[least]
        if filled >= page:
            break
    chosen = {rowid for rowid, n in counts.items() if n >= least}
    if len(chosen) > RANK_WITHIN:
        return None
    ids = ", ".join(str(rowid) for rowid in sorted(chosen))
    ranked: dict[str, dict[int, Hit]] = {}
    for term in dict.fromkeys(terms):
        if not chosen & held[term]:
            ranked[term] = {}
            continue
        ranked[term] = _ranked_within(db, term, where, params, ids)
    return [ranked[term] for term in terms]


def _held_by_every_one(
    db: Database,
    terms: list[str],
    meta: Callable[[int], dict[int, Hit]],
    where: str,
    params: list[Any],
) -> list[dict[int, Hit]] | None:
    """:func:`_each_term_best` over the sessions holding every term; ``[]`` when no
    session does, None when the rarest term is too common to narrow by. ``meta``: a term's
    best metadata hit in every session (by its index), asked of the rarest alone."""
    counted = {
        term: db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)",
            [term, RARITY_CAP],
        ).fetchone()[0]
        for term in dict.fromkeys(terms)
    }
    order = sorted(range(len(terms)), key=lambda i: (counted[terms[i]], i))
    rarest = order[0]
    if counted[terms[rarest]] == 0 and not meta(rarest):
        return []  # held by none: the answer is the sessions holding some of the words
    if counted[terms[rarest]] >= RARITY_CAP:
        return None  # every word common: their holders would be most sessions
    holders_sql = SQLITE.message_holders_sql(where)
    everyone = {r[0] for r in db.execute(holders_sql, [terms[rarest], *params])}
    everyone |= set(meta(rarest))
    for i in order[1:]:
        # The rarest word alone may be held by too many sessions to narrow by ("do" in
        # 1,334 of the text-heavy bench's 20,000) while the rare words together are held
        # by a few: each next rare word's holders, found unranked within those sessions
        # (a doclist walk, no bm25), narrow them before the cap is asked. A word in
        # RARITY_CAP messages or more stops it: its walk costs a quarter of ranking it.
        if len(everyone) <= RANK_WITHIN or counted[terms[i]] >= RARITY_CAP:
            break
        everyone &= _holders_within(db, terms[i], everyone, where, params)
    if not everyone:
        return []
    if len(everyone) > RANK_WITHIN:
        return None
    ranked: dict[int, dict[int, Hit]] = {}
    for i in [*order[1:], rarest]:
        ids = ", ".join(str(rowid) for rowid in sorted(everyone))
        if i == rarest:  # its metadata is already read whole (meta)
            hits = _within(db, terms[i], where, params, ids)
            named = [hit for hit in meta(i).values() if hit.session_rowid in everyone]
            ranked[i] = _best(named + hits)
        else:
            # Another word's metadata is ranked in the sessions narrowed to: every
            # session's for "the" was 76 ms of "fix the api_client" at 20,000 sessions,
            # 2 ms so.
            ranked[i] = _ranked_within(db, terms[i], where, params, ids)
        everyone &= set(ranked[i])
        if not everyone:
            return []
    return [
        {rowid: hit for rowid, hit in ranked[i].items() if rowid in everyone}
        for i in range(len(terms))
    ]


def _ranked_within(
    db: Database, term: str, where: str, params: list[Any], ids: str
) -> dict[int, Hit]:
    """``term``'s best hit (message or metadata) in each of the sessions ``ids`` that
    holds it: a row's bm25 does not depend on which other rows are asked for, so these
    are the hits the whole ranking gives them. ``+f.rowid``: the sessions' FTS table's
    rowid is the session's (the dialect's metadata_hits_sql)."""
    if not ids:
        return {}
    named = _metadata_hits(db, term, f"{where} AND +f.rowid IN ({ids})", params, -1)
    return _best(named + _within(db, term, where, params, ids))


def _holders_within(
    db: Database, term: str, sessions: set[int], where: str, params: list[Any]
) -> set[int]:
    """The sessions of ``sessions`` whose messages or metadata hold ``term``, unranked
    (:func:`_held_by_every_one`): which rows hold a word does not depend on ranking, so
    the sessions narrowed to are those the ranked narrowing would keep."""
    ids = ", ".join(str(rowid) for rowid in sorted(sessions))
    holders_sql = SQLITE.message_holders_sql(f"{where} AND {_within_sql(ids)}")
    held = {r[0] for r in db.execute(holders_sql, [term, *params])}
    named = db.execute(
        "SELECT rowid FROM session_search_fts WHERE session_search_fts MATCH ?", [term]
    )
    held.update(r[0] for r in named if r[0] in sessions)
    return held


def _within(db: Database, term: str, where: str, params: list[Any], ids: str) -> list[Hit]:
    """``term``'s best message in each of the sessions ``ids`` (an SQL list): the
    narrowed ranking (:func:`_within_sql`), its message filter applied to each match
    and its session filter once per session (the dialect's ``message_hits_sql``)."""
    sessions, rows = _within_parts(ids)
    return _message_hits(db, term, f"{where} AND {sessions}", params, -1, rows=rows)


def _within_parts(ids: str) -> tuple[str, str]:
    """:func:`_within_sql` as its filter on the sessions (``s``) and on the matches
    (``f``)."""
    return (
        f"s.id IN ({ids})",
        f"+f.rowid IN (SELECT id FROM messages WHERE session_rowid IN ({ids}))",
    )


def _within_sql(ids: str) -> str:
    """The narrowed ranking's filter (:func:`_held_by_every_one`): the sessions ``ids``
    (an SQL list), and first the matches that are messages of theirs, by rowid (``f``:
    the FTS table of the dialect's ``message_hits_sql``). FTS5 walks a common word's
    every match; tested on the sessions alone, each one paid a row lookup in
    ``messages`` and one in ``sessions`` before most were dropped. Against the list of
    their messages (``+``: a filter SQLite builds once, not a constraint handed to FTS5
    one rowid at a time, which reads the word's doclist for each: 7.8 s for ``the``),
    ``the`` ranked in 101 sessions of the text-heavy bench's 2,000 took 23 ms, not 33,
    ``fix`` 9, not 22."""
    return " AND ".join(_within_parts(ids))


def _either(*sources: Callable[[], list[Hit]]) -> list[Hit]:
    """The hits of every source. A ``--raw`` column filter names the columns of one FTS
    table (``text:`` the messages', ``custom_title:`` the sessions'): the table without
    that column has no hits rather than failing the search; only when every one fails is
    it the query's error."""
    hits: list[Hit] = []
    failed: list[Exception] = []
    for source in sources:
        try:
            hits.extend(source())
        except sqlite3.OperationalError as exc:
            if "no such column" not in str(exc):
                raise
            failed.append(exc)
    if failed and len(failed) == len(sources):
        raise failed[0]
    return hits


#: The best sessions (in the order of bm25, together before apart) whose matched rows
#: are read for the query's spellings (:func:`_literal_tier`); a session ranked below
#: them stays where bm25 puts it.
LITERAL_CANDIDATES = 200
#: Of each of those sessions, its best messages read per spelling (and its metadata).
LITERAL_ROWS = 5
#: Spellings of a query looked for: its first three words joined by punctuation.
LITERAL_WORDS = 3


def spelled_terms(
    text: str, terms: list[str], short_tail: bool = False
) -> list[tuple[str, QueryWord]]:
    """The terms of ``text`` (:func:`query_terms`) whose word has a spelling
    (:attr:`QueryWord.literal`), with the word: what :func:`_literal_tier` looks for,
    and the message hits of a result (query/hits.py) too. None without punctuation."""
    if all(ch.isalnum() or ch.isspace() for ch in text):
        return []
    words = query_words(text, short_tail)
    return [(term, word) for term, word in zip(terms, words) if word.literal]


def spelled_messages(
    db: Database,
    ids: str,
    term: str,
    word: QueryWord,
    ranked: list[tuple[int, float]] | None = None,
) -> list[tuple[int, int]]:
    """``(session rowid, message id)`` of the messages that write ``word``'s spelling
    among each session's :data:`LITERAL_ROWS` best for ``term`` (sessions: ``ids``, an
    SQL list), best first: the only message texts the literal tier reads. ``ranked``:
    every message matching ``term`` with its rank, from the query's ranking
    (:func:`_keep_ranks`), when it has them: the best are picked from those."""
    assert word.literal is not None
    if ranked is None:
        rows = db.execute(dialect_of(db).spelled_rows_sql(ids), [term, LITERAL_ROWS]).fetchall()
    else:
        rows = _best_ranked_rows(db, ids, ranked)
    return [
        (session, message)
        for session, message, text in rows
        if isinstance(text, str) and holds_spelling(text, word.literal, word.literal_prefix)
    ]


def _best_ranked_rows(
    db: Database, ids: str, ranked: list[tuple[int, float]]
) -> list[tuple[int, int, Any]]:
    """What the dialect's ``spelled_rows_sql`` answers, ``(session, message, text)`` of
    each session's :data:`LITERAL_ROWS` best messages among ``ids``, best first (by
    rank, then message id, as it orders them), from a match's every ``(rowid, rank)``
    instead of matching again. ``+session_rowid``: by the sessions' index, SQLite
    walked every message of the candidates (35 ms at 20,000 sessions, against 1)."""
    rank = dict(ranked)
    owned: dict[int, list[int]] = {}
    for message, session in db.execute(
        f"SELECT id, session_rowid FROM messages WHERE id IN ({', '.join(map(str, rank))})"
        f" AND +session_rowid IN ({ids})"
    ):
        owned.setdefault(session, []).append(message)
    best = {
        session: sorted(messages, key=lambda m: (rank[m], m))[:LITERAL_ROWS]
        for session, messages in owned.items()
    }
    if not best:
        return []
    chosen = ", ".join(str(m) for messages in best.values() for m in messages)
    texts = dict(db.execute(f"SELECT id, text FROM message_text WHERE id IN ({chosen})").fetchall())
    return [
        (session, message, texts.get(message))
        for session in sorted(best)
        for message in best[session]
    ]


def _literal_tier(
    db: Database,
    hits: list[Hit],
    spelled: list[tuple[str, QueryWord]],
    terms: list[str],
    kept: KeptRanks | None = None,
) -> None:
    """Set each hit's :attr:`Hit.literal`: how many of the query's words joined by
    punctuation (``spelled``: term and word) its session writes as typed
    (:func:`~sessiondex.query.snippets.holds_spelling`) in its metadata or in one of its
    :data:`LITERAL_ROWS` best messages for that word. unicode61 drops punctuation, so
    ``user_profile`` is the phrase "user profile" and prose saying so ranked alike or
    better; a developer searching an identifier, a path or a flag means it as written.

    Only rows FTS already matched are read, of the :data:`LITERAL_CANDIDATES` best
    sessions (``hits``, in rank order): at most their metadata and 5 messages each per
    word, decompressed in the statement that picks them. A hit whose own row does not
    write a spelling takes a row that does, so its snippet shows why it ranks first.
    ``kept``: a match's every message and rank from the ranking (:func:`_keep_ranks`),
    read instead of matching a word again."""
    if not hits:
        return
    dialect = dialect_of(db)
    ids = ", ".join(str(hit.session_rowid) for hit in hits)
    columns = ", ".join(f"s.{column}" for column in SESSION_FTS_COLUMNS)
    metadata = select_rows(db, f"s.id IN ({ids})", columns=f"s.id, {columns}")
    # session -> texts writing a spelling: (source, row id, metadata column or -1)
    found: dict[int, list[tuple[str, int, int]]] = {}
    counts: Counter[int] = Counter()
    for term, word in spelled[:LITERAL_WORDS]:
        assert word.literal is not None
        holding: set[int] = set()
        for row in metadata:
            written = next(
                (
                    index
                    for index, column in enumerate(SESSION_FTS_COLUMNS)
                    if isinstance(text := row[column], str)
                    and holds_spelling(fts_text(text), word.literal, word.literal_prefix)
                ),
                None,
            )
            if written is not None:
                holding.add(row["id"])
                found.setdefault(row["id"], []).append(("meta", row["id"], written))
        ranked = (kept or {}).get(term)
        for session, message in spelled_messages(db, ids, term, word, ranked):
            holding.add(session)
            found.setdefault(session, []).append(("message", message, -1))
        counts.update(holding)
    every = dialect.any_of(terms)
    for hit in hits:
        hit.literal = counts[hit.session_rowid]
        rows = found.get(hit.session_rowid, [])
        if not rows:
            continue
        # The snippet from a text that writes it: the hit's own row when it is one, in
        # the column that writes it (snippet() with no column takes the best-scoring
        # one: a prompt's prose "user profile" over the branch fix/user_profile), with
        # any word of the query marked there.
        own = [row for row in rows if row[:2] == (hit.source, hit.fts_rowid)]
        hit.source, hit.fts_rowid, hit.column = (own or rows)[0]
        if not own or hit.column >= 0:
            hit.match = every


def _title_terms(db: Database, hits: list[Hit], terms: list[str]) -> dict[int, set[int]]:
    """Session rowid → indexes of the terms its titles and names hold."""
    if not hits:
        return {}
    dialect = dialect_of(db)
    ids = ", ".join(str(h.session_rowid) for h in hits)
    out: dict[int, set[int]] = {}
    for index, term in enumerate(terms):
        try:
            rows = db.execute(
                dialect.title_sql(ids), [dialect.title_match(term, TITLE_COLUMNS)]
            ).fetchall()
        except dialect.syntax_errors:  # a --raw query that cannot take a column filter
            continue
        for (rowid,) in rows:
            out.setdefault(rowid, set()).add(index)
    return out


def _snippets(db: Database, hits: list[Hit], markers: tuple[str, str]) -> dict[int, str]:
    """Session rowid → its hit's snippet: one query per source, match and metadata
    column (a page has one or two; several only when the words are spread over rows)."""
    groups: dict[tuple[str, str, int], list[Hit]] = {}
    for hit in hits:
        groups.setdefault((hit.source, hit.match, hit.column), []).append(hit)
    dialect = dialect_of(db)
    out: dict[int, str] = {}
    for (source, match, column), group in groups.items():
        rowids = [h.fts_rowid for h in group]
        stored = dialect.snippets(db, source, match, rowids, snippet_tokens(match), column)
        for hit in group:
            out[hit.session_rowid] = display_snippet(stored.get(hit.fts_rowid, ""), markers)
    return out


def _rows_for(
    db: Database,
    ranked: list[Hit],
    terms: list[str],
    markers: tuple[str, str],
    where: tuple[str, list[Any]],
) -> list[dict[str, Any]]:
    """Session objects for ranked hits, in rank order, with ``score``,
    ``snippet`` and ``matched_by``; those ``where`` (the ranking's filters) still keeps."""
    if not ranked:
        return []
    by_rowid = {h.session_rowid: h for h in ranked}
    rows = {
        r["id"]: r
        for r in select_rows(
            db,
            f"s.id IN ({', '.join(str(rowid) for rowid in by_rowid)}) AND {where[0]}",
            where[1],
            columns=LISTING_COLUMNS,
        )
    }
    # The hits and the rows are two queries: a watcher may remove or rewrite a session
    # in between, and a hit whose row is gone is dropped (it was a KeyError).
    ordered = [rows[h.session_rowid] for h in ranked if h.session_rowid in rows]
    titled = _title_terms(db, ranked, terms)
    snippets = _snippets(db, [by_rowid[row["id"]] for row in ordered], markers)
    out = to_objects(db, ordered)
    for obj, row in zip(out, ordered):
        hit = by_rowid[row["id"]]
        obj["score"] = round(hit.score, 6)
        obj["snippet"] = snippets[hit.session_rowid]
        held = set(hit.terms)
        obj["matched_by"] = (
            "title" if held and held <= titled.get(hit.session_rowid, set()) else "text"
        )
    return out


def run_search(
    db: Database,
    query: str,
    filters: Filters,
    *,
    raw: bool = False,
    markers: tuple[str, str] = DEFAULT_MARKERS,
    elsewhere: bool = False,
    typing: bool = False,
) -> SearchOutcome:
    """Search, saying what was found (:class:`SearchOutcome`): :func:`rank_search`, then
    every ranked session's object (:func:`ranked_rows`)."""
    ranking = rank_search(
        db, query, filters, raw=raw, markers=markers, elsewhere=elsewhere, typing=typing
    )
    return SearchOutcome(
        ranked_rows(db, ranking),
        ranking.kind,
        ranking.words,
        ranking.elsewhere,
        ranking.newest_first,
    )


def rank_search(
    db: Database,
    query: str,
    filters: Filters,
    *,
    raw: bool = False,
    markers: tuple[str, str] = DEFAULT_MARKERS,
    elsewhere: bool = False,
    typing: bool = False,
    sessions: bool = False,
) -> Ranking:
    """The sessions ``query`` finds, in order, up to ``filters.limit``, and what they are
    (:class:`Ranking`), without their objects. With ``elsewhere``, a search that matches
    nothing in its scope also counts the matches of wider scopes. ``typing``: the query
    is being typed (the picker), see :func:`title_prefix_search`. ``sessions``: each
    session's ``(file_path, session_id)`` too, for a front end that shows rows before
    their objects. Copies of one session are one row, its newest copy in scope
    (:func:`~sessiondex.query.filters.newest_copy_sql`)."""
    ranking = _rank(db, query, filters, raw, markers, elsewhere, typing)
    if sessions:
        _add_paths(db, ranking)
    return ranking


def ranked_rows(
    db: Database, ranking: Ranking, start: int = 0, stop: int | None = None
) -> list[dict[str, Any]]:
    """The session objects of ``ranking``'s sessions ``[start:stop]``, in its order, with
    ``score``, ``snippet`` and ``matched_by``. A session removed since it was ranked is
    left out, and so is one the ranking's filters no longer keep (hidden, emptied,
    archived, in Claude Code's picker or by sessiondex): the picker reads pages of one
    ranking for as long as the query stands, and the rows are read by row id, so the
    filters are applied to those ids again (a few lookups per row of the page)."""
    if ranking.rows is not None:
        return [dict(row) for row in ranking.rows[start:stop]]  # each page the caller's own
    hits = ranking.hits[start:stop]
    if ranking.prefix is not None:
        return _prefix_rows(db, hits, ranking.prefix, ranking.markers, ranking.where)
    return _rows_for(db, hits, ranking.terms, ranking.markers, ranking.where)


def _rank(
    db: Database,
    query: str,
    filters: Filters,
    raw: bool,
    markers: tuple[str, str],
    elsewhere: bool,
    typing: bool,
) -> Ranking:
    """:func:`rank_search`'s ranking, before the sessions' paths are added."""
    text = without_lone_surrogates(query).strip()  # from JSON (MCP, a program): no crash
    limit = filters.limit
    if not text:
        return Ranking(NONE, markers=markers, limit=limit)
    if not raw:
        pr = parse_pr_ref(text)
        if pr is not None:
            return _pr_search(db, pr, filters)
    dialect = dialect_of(db)
    if typing and not raw and dialect.name == "sqlite" and _too_short(text):
        return title_prefix_search(db, text, filters, markers)
    spelled: list[tuple[str, QueryWord]] = []
    if raw:
        check_raw_size(text)
        terms, words = [dialect.raw_query(db, text)], [text]
    else:
        terms, words = query_terms(text, dialect)
        spelled = spelled_terms(text, terms)
    where, params = filters.where(db)
    scope = _narrow_scope(db, filters, where, params)

    kept: KeptRanks = {}

    def find() -> tuple[dict[int, Hit], dict[int, Hit]]:
        # With spellings to prefer, the candidates are more than the page: a session
        # that writes one may be ranked below it by bm25. -1: no limit.
        pool = max(limit, LITERAL_CANDIDATES) if spelled and limit else limit or -1
        # A query of one word with a spelling: its ranking keeps every match for the
        # literal tier, which reads the best of them (_keep_ranks).
        kept.clear()
        keep = kept if spelled and len(terms) == 1 else None
        return _find(db, terms, where, params, pool, typing, limit or -1, keep, scope)

    full: dict[int, Hit] = {}
    some: dict[int, Hit] = {}
    if terms:
        full, some = _fts(db, find, raw, text)
    if not full and not some and not raw and has_short_tail(text):
        terms, words = query_terms(text, dialect, short_tail=True)
        spelled = spelled_terms(text, terms, short_tail=True)
        full, some = find()
    if full:
        ranked = _in_order(db, full.values(), lambda h: (h.apart, h.score, -h.activity))
        if spelled:
            # Within together and within apart: the sessions that write the spellings
            # first (docs/search.md#written-as-typed).
            _literal_tier(db, ranked[:LITERAL_CANDIDATES], spelled, terms, kept)
            ranked = _in_order(db, ranked, lambda h: (h.apart, -h.literal, h.score, -h.activity))
        page = ranked[:limit]
        newest_first = any(hit.recent for hit in page)
        return Ranking(
            MATCH, words, markers, page, terms, newest_first, limit=limit, where=(where, params)
        )
    if some:
        ranked = _in_order(db, some.values(), lambda h: (-len(h.terms), h.score, -h.activity))
        ranking = Ranking(
            PARTIAL, words, markers, ranked[:limit], terms, limit=limit, where=(where, params)
        )
    elif raw:
        ranking = Ranking(NONE, words, markers, limit=limit)
    else:
        rows = [] if terms else symbol_search(db, text, filters, markers)
        if rows:
            return Ranking(MATCH, [text], markers, rows=rows, limit=limit)
        rows = fuzzy_search(db, text, filters)
        ranking = Ranking(FUZZY if rows else NONE, words, markers, rows=rows, limit=limit)
    if elsewhere and terms:
        # Through the syntax-error rule: a scope with no session answered before FTS5
        # read a --raw query, so this may be the first statement that parses it.
        ranking.elsewhere = _fts(db, lambda: _elsewhere(db, terms, filters), raw, text)
    elif elsewhere and not raw:  # a query of symbols: where they are as typed
        ranking.elsewhere = _symbol_elsewhere(db, text, filters)
    return ranking


def _add_paths(db: Database, ranking: Ranking) -> None:
    """Fill ``ranking.sessions``; a hit whose session was removed since it was ranked is
    dropped, so the two stay in step (a slice of one is the same slice of the other)."""
    if ranking.rows is not None:
        ranking.sessions = [(row["file_path"], row["session_id"]) for row in ranking.rows]
        return
    rowids = [hit.session_rowid for hit in ranking.hits]
    found: dict[int, tuple[str, str]] = {}
    for at in range(0, len(rowids), MAX_BATCH):  # MAX_BATCH: one IN list
        ids = ", ".join(str(int(rowid)) for rowid in rowids[at : at + MAX_BATCH])
        sql = f"SELECT id, file_path, session_id FROM sessions WHERE id IN ({ids})"
        found.update((row[0], (row[1], row[2])) for row in db.execute(sql))
    ranking.hits = [hit for hit in ranking.hits if hit.session_rowid in found]
    ranking.sessions = [found[hit.session_rowid] for hit in ranking.hits]


#: Phrases a ``--raw`` query may hold. FTS5 ranks a row by walking the instances of
#: every phrase once per phrase (``xInstCount``: phrases x instances), and a raw query
#: is not de-duplicated as a typed one is (:func:`query_terms`): ``a a a ...`` (5,000
#: times) took 383 s on one message of 3,000 ``a``s, ``error`` 1,000 times 3.9 s.
RAW_MAX_PHRASES = 64


def check_raw_size(text: str) -> None:
    """Refuse a ``--raw`` query of more than :data:`RAW_MAX_PHRASES` phrases (quoted
    strings and bare words, its operators aside) as a query FTS5 cannot take."""
    quoted = re.compile(r'"(?:[^"]|"")*"')
    phrases = len(quoted.findall(text))
    words = re.findall(r'[^\s()"*:^+{}-]+', quoted.sub(" ", text))
    bare = [w for w in words if w not in ("AND", "OR", "NOT", "NEAR")]
    count = phrases + len(bare)
    if count > RAW_MAX_PHRASES:
        raise SearchSyntaxError(
            f"a --raw query of {count} terms is more than FTS5 can rank in time (at most"
            f" {RAW_MAX_PHRASES}); drop --raw to search the words as typed"
        )


def _in_order(
    db: Database, hits: Iterable[Hit], key: Callable[[Hit], tuple[Any, ...]]
) -> list[Hit]:
    """``hits`` sorted by ``key``, equal keys by session ID: sessions that score the same
    (a fork and its origin hold the same words) come in the order every build of the
    index gives, not in the order their rows were written, so a rebuilt index answers
    as the live one does. Only tied sessions' IDs are looked up."""
    hits = list(hits)
    counts = Counter(key(h) for h in hits)
    tied = [h.session_rowid for h in hits if counts[key(h)] > 1]
    names: dict[int, str] = {}
    if tied:
        ids = ", ".join(str(int(rowid)) for rowid in tied)
        names = dict(db.execute(f"SELECT id, session_id FROM sessions WHERE id IN ({ids})"))
    return sorted(hits, key=lambda h: (*key(h), names.get(h.session_rowid, "")))


def _too_short(text: str) -> bool:
    """One word, shorter than a prefix may be (:data:`MIN_PREFIX_CHARS`), that FTS
    indexes as typed (not CJK, which is split per character, nor punctuation)."""
    return (
        len(text) < MIN_PREFIX_CHARS
        and fts_text(text).strip() == text
        and all(ch.isalnum() for ch in text)
    )


def title_prefix_search(
    db: Database, word: str, filters: Filters, markers: tuple[str, str] = DEFAULT_MARKERS
) -> Ranking:
    """While a query is typed, one or two letters filter the sessions whose title as
    shown, names, tag or branches (:data:`TYPED_PREFIX_COLUMNS`) hold a word starting
    with them, newest first: what Claude Code's own filter reads. The title shown of a
    session without a custom or AI title (its summary or a prompt) is an FTS5 column of
    its own, ``shown_title`` (indexer/shape.py), so this is one prefix query, over
    ``session_title_fts``: those columns alone, with a prefix index of one and two
    characters (indexer/shape.py ``TITLE_FTS_COLUMNS``).

    Why not the full search: one or two letters are no word yet (``search`` matches a
    last word as a prefix only from :data:`MIN_PREFIX_CHARS` characters), so the full
    search would look for a word "t", find next to nothing, and fall back to the typo
    matcher over thousands of titles (~250 ms at 20,000 sessions) to offer noise.
    Claude Code's own /resume picker filters titles as you type; this is that filter,
    by word prefix. Their objects
    (:func:`_prefix_rows`): ``matched_by`` is ``title`` when the title shown or a name
    holds the word, else ``text`` (a tag or a branch); ``score`` None (the order is
    recency)."""
    dialect = dialect_of(db)
    match = dialect.title_match(dialect.term(word, True), TYPED_PREFIX_COLUMNS)
    # session_title_fts, not session_search_fts: the same columns' words, with a prefix
    # index (indexer/shape.py TITLE_FTS_COLUMNS), so neither this statement nor the
    # snippets' merges the doclist of every word starting with the letters.
    named = {
        r[0]
        for r in db.execute(
            "SELECT rowid FROM session_title_fts WHERE session_title_fts MATCH ?", [match]
        )
    }
    if not named:
        return Ranking(NONE, [word], markers, limit=filters.limit)
    where, params = filters.where(db)
    limit = filters.limit or -1
    if len(named) <= WALK_ABOVE:
        ids = ", ".join(str(rowid) for rowid in named)
        order = select_rows(db, f"{where} AND s.id IN ({ids})", params, columns="s.id")
        newest = [r["id"] for r in order]
    else:  # most sessions match: the newest are among the first few of the listing order
        cursor = db.execute(
            f"SELECT s.id FROM sessions s WHERE {where}"
            f" ORDER BY {ACTIVITY_SQL} DESC, s.mtime_ns DESC, s.session_id",
            params,
        )
        newest = []
        try:
            for (rowid,) in cursor:
                if rowid in named:
                    newest.append(rowid)
                    if len(newest) == limit:
                        break
        finally:
            cursor.close()
    if limit >= 0:
        newest = newest[:limit]
    hits = [Hit(rowid, 0.0, "title", rowid, 0, match) for rowid in newest]
    kind = MATCH if hits else NONE
    return Ranking(
        kind, [word], markers, hits, prefix=word, limit=filters.limit, where=(where, params)
    )


def _prefix_rows(
    db: Database,
    hits: list[Hit],
    word: str,
    markers: tuple[str, str],
    where: tuple[str, list[Any]],
) -> list[dict[str, Any]]:
    """The session objects of :func:`title_prefix_search`'s ``hits``, in order; those
    ``where`` (the ranking's filters) still keeps."""
    if not hits:
        return []
    rows = {
        r["id"]: r
        for r in select_rows(
            db,
            f"s.id IN ({', '.join(str(h.session_rowid) for h in hits)}) AND {where[0]}",
            where[1],
            columns=f"{LISTING_COLUMNS}, s.custom_title, s.ai_title, s.agent_name",
        )
    }
    ordered = [rows[h.session_rowid] for h in hits if h.session_rowid in rows]
    snippets = _snippets(db, [h for h in hits if h.session_rowid in rows], markers)
    out = to_objects(db, ordered)
    typed = word_text(word).strip()
    for obj, row in zip(out, ordered):
        obj["score"] = None
        obj["snippet"] = snippets[row["id"]]
        shown = (obj["title"], obj["custom_title"], obj["ai_title"], row["agent_name"])
        names = " ".join(str(v or "") for v in shown)
        held = any(w.startswith(typed) for w in word_text(names).split())
        obj["matched_by"] = "title" if held else "text"  # else a tag or a branch
    return out


def search(
    db: Database,
    query: str,
    filters: Filters,
    *,
    raw: bool = False,
    markers: tuple[str, str] = DEFAULT_MARKERS,
) -> list[dict[str, Any]]:
    """Session objects for ``query`` with ``score``, ``snippet`` and ``matched_by``, best
    first: the matches, else the partial matches, else the typo fallback's."""
    return run_search(db, query, filters, raw=raw, markers=markers).rows


def _elsewhere(db: Database, terms: list[str], filters: Filters) -> dict[str, int]:
    """Wider scope → how many sessions match every term there (this scope has none)."""
    wider = {"worktree": ("repo", "all"), "repo": ("all",)}.get(filters.scope, ())
    wheres = [replace(filters, scope=scope, limit=None).where(db) for scope in wider]
    if dialect_of(db).name == "sqlite":
        return dict(zip(wider, _count_holders(db, terms, wheres)))
    return {
        scope: len(_find(db, terms, where, params, -1)[0])
        for scope, (where, params) in zip(wider, wheres)
    }


def _count_holders(
    db: Database, terms: list[str], wheres: list[tuple[str, list[Any]]]
) -> list[int]:
    """How many sessions each ``where`` keeps hold every term, in one row or apart: what
    :func:`_find` without a limit finds there, counted without ranking a match.

    Why: a search that found nothing in its scope says how many sessions match in the
    wider ones, and ranking every match for a number cost as much as the search in every
    project, once per scope (``the test`` from a directory with no session, 2,000
    text-heavy sessions: 1.09 s). A session :func:`_find` keeps holds each term in a
    message or in its metadata, and one that does is kept (all in one row, or apart):
    so each term's holders are found by a doclist walk, intersected, and each scope
    asked once per session, every scope in one statement (one walk)."""
    if not wheres:
        return []
    held = (
        "s.id IN (SELECT m.session_rowid FROM messages_fts f CROSS JOIN messages m"
        " ON m.id = f.rowid WHERE messages_fts MATCH ?"
        " UNION SELECT rowid FROM session_search_fts WHERE session_search_fts MATCH ?)"
    )
    unique = list(dict.fromkeys(terms))
    counted = ", ".join(f"count(CASE WHEN {where} THEN 1 END)" for where, _ in wheres)
    sql = f"SELECT {counted} FROM sessions s WHERE {' AND '.join(held for _ in unique)}"
    params = [*(p for _, ps in wheres for p in ps), *(t for term in unique for t in (term, term))]
    return [int(n) for n in db.execute(sql, params).fetchone()]


def _pr_search(db: Database, pr: Any, filters: Filters) -> Ranking:
    """``search <URL or owner/repo#N>``: linked sessions, then mentioning ones."""
    # Imported here: a search for words (nearly all of them) never needs the PR
    # module and the git remote parsing it brings (start-up time).
    from sessiondex.query.prs import sessions_for_pr

    linked, mentioned = sessions_for_pr(db, pr, filters)
    rows = linked + mentioned
    for obj in rows:
        obj["score"] = None
        how = "linked" if obj["matched_by"] == "pr-link" else "mentioned"
        obj["snippet"] = f"{how}: {pr.url}"
    rows = rows[: filters.limit] if filters.limit else rows
    return Ranking(MATCH if rows else NONE, [pr.url], rows=rows, limit=filters.limit)


#: Where a query of symbols alone is looked for as typed (:func:`symbol_search`), in the
#: order a hit's snippet is taken from; the first three make it a ``title`` hit.
SYMBOL_COLUMNS = (*TITLE_COLUMNS, "tag", "summary", "first_prompt", "last_prompt")


#: A query of symbols is looked for by its first this many distinct words (each one is
#: a LIKE per column in SQL; hundreds of them were "Expression tree is too large").
SYMBOL_WORDS = 16
# What continues the character before it into one grapheme: a joiner (U+200D), which
# makes a new emoji of the two around it, and what only dresses the one before it (a
# skin tone, a variation selector, a keycap, a tag, a combining mark).
_JOINER = "\u200d"
_DRESSING = frozenset(
    {"\u20e3", *map(chr, range(0xFE00, 0xFE10)), *map(chr, range(0x1F3FB, 0x1F400))}
    | set(map(chr, range(0xE0020, 0xE0080)))
)
_REGIONAL = range(0x1F1E6, 0x1F200)  # flags are pairs of regional indicators


def _dresses(ch: str) -> bool:
    import unicodedata

    return ch in _DRESSING or unicodedata.category(ch).startswith("M")


def _whole_end(text: str, start: int, word: str) -> int:
    """Where the graphemes that ``word`` found at ``start`` of ``text`` end (what dresses
    its last character included: ``👋`` finds ``👋🏽`` whole), or -1 when the match is
    part of another emoji: ``👨`` inside a family (joined), ``🏽`` alone against
    ``👋🏽``, ``🇵🇺`` across the flags of ``🇯🇵🇺🇸``."""
    if start > 0:
        before = text[start - 1]
        if before == _JOINER or (_dresses(word[0]) and not before.isspace()):
            return -1
        if ord(word[0]) in _REGIONAL:  # a flag starts after an even run of indicators
            run = 0
            while start - run > 0 and ord(text[start - run - 1]) in _REGIONAL:
                run += 1
            if run % 2:
                return -1
    end = start + len(word)
    if end < len(text) and ord(text[end]) in _REGIONAL:  # a flag must not end mid-pair
        run = 0
        while end - run > 0 and ord(text[end - run - 1]) in _REGIONAL:
            run += 1
        if run % 2:
            return -1
    while end < len(text) and _dresses(text[end]):
        end += 1
    return -1 if end < len(text) and text[end] == _JOINER else end


def _grapheme_boundary(text: str, at: int) -> bool:
    """Whether cutting ``text`` at ``at`` leaves every emoji whole: not before a joiner
    or what dresses the character before it, not after a joiner, not between the two
    regional indicators of a flag."""
    if at <= 0 or at >= len(text):
        return True
    here, before = text[at], text[at - 1]
    if here == _JOINER or before == _JOINER or _dresses(here):
        return False
    if ord(here) in _REGIONAL and ord(before) in _REGIONAL:
        run = 0
        while at - run > 0 and ord(text[at - run - 1]) in _REGIONAL:
            run += 1
        return run % 2 == 0
    return True


#: A symbol query's snippet (:func:`_symbol_window`): at most this many characters of
#: the text before the match and after it. Its words are counted as FTS5 counts a
#: snippet's tokens (:data:`SNIPPET_TOKENS`, a quarter of them before the match); the
#: characters bound a "word" with no space in it (a run of emoji, a pasted blob).
SYMBOL_SNIPPET_BEFORE = 30
SYMBOL_SNIPPET_AFTER = 60


def _symbol_window(text: str, at: int, end: int) -> str:
    """The part of ``text`` a symbol query's snippet shows for the match at
    ``at``..``end``: a few words before it and more after, within
    :data:`SYMBOL_SNIPPET_BEFORE`/:data:`SYMBOL_SNIPPET_AFTER` characters, cut where a
    word or at least an emoji ends, with :data:`ELLIPSIS` where the text goes on. Why:
    the whole column was the snippet, so a first prompt pasting a log after its emoji
    printed every line of it under the row."""
    lead = SNIPPET_TOKENS // 4
    start = max(0, at - SYMBOL_SNIPPET_BEFORE)
    starts = [m.start() for m in re.finditer(r"\S+", text[start:at])]
    if start > 0 and starts[:1] == [0] and not text[start - 1].isspace() and len(starts) > 1:
        starts = starts[1:]  # the window's first word is the end of a longer one
    if starts:
        start += starts[-lead] if len(starts) >= lead else starts[0]
    while start < at and not _grapheme_boundary(text, start):
        start += 1
    stop = min(len(text), end + SYMBOL_SNIPPET_AFTER)
    ends = [m.end() for m in re.finditer(r"\S+", text[end:stop])]
    if stop < len(text) and ends[-1:] == [stop - end] and not text[stop].isspace():
        ends = ends[:-1] or ends  # the window's last word goes on past it
    wanted = SNIPPET_TOKENS - lead - 1
    stop = end + (ends[:wanted][-1] if ends else 0)
    while stop > end and not _grapheme_boundary(text, stop):
        stop -= 1
    head = ELLIPSIS if text[:start].strip() else ""
    tail = ELLIPSIS if text[stop:].strip() else ""
    body = text[start:stop]
    body = body.lstrip() if head else body  # no run of blanks after an ellipsis
    return f"{head}{body.rstrip() if tail else body}{tail}"


def _whole_in(text: str, word: str) -> tuple[int, int] | None:
    """The first whole-grapheme occurrence of ``word`` in ``text`` (start, end)."""
    at = text.find(word)
    while at >= 0:
        end = _whole_end(text, at, word)
        if end >= 0:
            return at, end
        at = text.find(word, at + 1)
    return None


def symbol_search(
    db: Database, query: str, filters: Filters, markers: tuple[str, str] = DEFAULT_MARKERS
) -> list[dict[str, Any]]:
    """Sessions whose names, tag, summary or first or last prompt hold every word of
    ``query`` as typed (whole graphemes), newest first: for a query with no letter or
    digit (``🚀``, ``✂️``), of which the tokenizer keeps nothing, so no word could match
    it. People name sessions with emoji; without this they got no match, or a typo
    suggestion. Message text is not searched so (it would be a scan of every message):
    only these columns, with ``LIKE`` first, then the grapheme check on what it finds,
    newest first until the page is full."""
    words = list(dict.fromkeys(query.split()))[:SYMBOL_WORDS]
    found = _symbol_rows(db, words, filters, filters.limit or -1)
    rows = [row for row, _ in found]
    columns = {row["id"]: column for row, column in found}
    out = to_objects(db, rows)
    for obj, row in zip(out, rows):
        column = columns[row["id"]]
        shown = str(row[column])
        first = _whole_in(shown, words[0])  # the column was chosen for holding it
        if first is not None:
            shown = _symbol_window(shown, *first)
        for word in words:
            span = _whole_in(shown, word)
            if span is not None:
                at, end = span
                shown = f"{shown[:at]}{markers[0]}{shown[at:end]}{markers[1]}{shown[end:]}"
        obj["score"] = None
        obj["snippet"] = one_line(shown)
        obj["matched_by"] = "title" if column in TITLE_COLUMNS else "text"
    return out


def _symbol_rows(
    db: Database, words: list[str], filters: Filters, limit: int
) -> list[tuple[dict[str, Any], str]]:
    """(row, the column its snippet comes from) of :func:`symbol_search`'s sessions,
    newest first, at most ``limit`` (-1: all)."""
    where, params = filters.where(db)
    for word in words:
        escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        holds = " OR ".join(f"s.{column} LIKE ? ESCAPE '\\'" for column in SYMBOL_COLUMNS)
        where += f" AND ({holds})"
        params = [*params, *[f"%{escaped}%"] * len(SYMBOL_COLUMNS)]
    texts = ", ".join(f"s.{column}" for column in SYMBOL_COLUMNS)
    cursor = db.execute(
        f"SELECT {LISTING_COLUMNS}, {texts} FROM sessions s WHERE {where}"
        f" ORDER BY {ACTIVITY_SQL} DESC, s.mtime_ns DESC, s.session_id",
        params,
    )
    names = [d[0] for d in cursor.description]
    out: list[tuple[dict[str, Any], str]] = []
    try:
        for values in cursor:
            row = dict(zip(names, values))
            texts_of = [(c, str(row[c] or "")) for c in SYMBOL_COLUMNS]
            holding = [c for c, t in texts_of if _whole_in(t, words[0])]
            if holding and all(any(_whole_in(t, w) for _, t in texts_of) for w in words[1:]):
                out.append((row, holding[0]))  # the snippet's column: the first word's
                if len(out) == limit:
                    break
    finally:
        cursor.close()
    return out


def _symbol_elsewhere(db: Database, query: str, filters: Filters) -> dict[str, int]:
    """:func:`_elsewhere` for a query of symbols (:func:`symbol_search`)."""
    words = list(dict.fromkeys(query.split()))[:SYMBOL_WORDS]
    wider = {"worktree": ("repo", "all"), "repo": ("all",)}.get(filters.scope, ())
    return {
        scope: len(_symbol_rows(db, words, replace(filters, scope=scope, limit=None), -1))
        for scope in wider
    }


#: What a name (title, tag, branch…) adds to its typo score over a first prompt's: a
#: tie-break, not a reason to prefer a worse match.
FUZZY_NAME_BONUS = 1.0


def fuzzy_search(db: Database, query: str, filters: Filters) -> list[dict[str, Any]]:
    """Typo tolerance when FTS finds nothing: the titles, names (agent names too),
    branches and first prompts of the most recent ``FUZZY_CANDIDATES`` sessions in scope
    (never the whole corpus in Python) and, on the team store, of those whose names or
    branches ``pg_trgm`` finds close to the query (its GIN indexes), however old, in
    which every word of the query is a word or a typo of one
    (:func:`~sessiondex.query.typos.typo_scores`), the closest first."""
    where, params = filters.where(db)
    rows = select_rows(
        db,
        where,
        params,
        order=f"{ACTIVITY_SQL} DESC",
        limit=FUZZY_CANDIDATES,
        columns=FUZZY_COLUMNS,
    )
    similar = dialect_of(db).similar_names(query)
    if similar is not None:  # the team store: older sessions whose names are close too
        seen = {r["id"] for r in rows}
        more = select_rows(
            db,
            f"{where} AND {similar[0]}",
            [*params, *similar[1]],
            order=f"{ACTIVITY_SQL} DESC",
            limit=FUZZY_CANDIDATES,
            columns=FUZZY_COLUMNS,
        )
        rows += [r for r in more if r["id"] not in seen]
    # (text, is a name): a name the user gave or saw (title, custom and AI titles, agent
    # name, tag, branches) wins a tie against the first prompt.
    flat: list[tuple[int, str, bool]] = []
    for row in rows:
        names = [
            row.get("custom_title"),
            row.get("ai_title"),
            row.get("agent_name"),
            row.get("tag"),
            row.get("branches_text"),
        ]
        flat.extend((row["id"], t, True) for t in names if t)
        # The title shown, when it is none of those names (a summary, a prompt), and the
        # first prompt: texts, not names.
        for text in (display_title(row), (row.get("first_prompt") or "")[:200]):
            if text and text not in names:
                flat.append((row["id"], text, False))
    best: dict[int, tuple[float, str]] = {}
    for index, score in typo_scores(query, [t for _, t, _ in flat]).items():
        rowid, text, is_name = flat[index]
        score += FUZZY_NAME_BONUS if is_name else 0.0
        if rowid not in best or score > best[rowid][0]:
            best[rowid] = (score, text)
    by_id = {r["id"]: r for r in rows}
    ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], -activity_ms(by_id[kv[0]])))
    if filters.limit:
        ranked = ranked[: filters.limit]
    ordered = [by_id[rowid] for rowid, _ in ranked]
    out = to_objects(db, ordered)
    for obj, row in zip(out, ordered):
        score, choice = best[row["id"]]
        # Negative like bm25, so "lower is better" holds for fuzzy rows too.
        obj["score"] = round(-score / 100.0, 6)
        obj["snippet"] = one_line(choice)
        obj["matched_by"] = "fuzzy"
    return out
