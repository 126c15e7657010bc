"""Search snippets as the user wrote the text: the match marked, spacing untouched.

The index stores text through ``indexer.text.fts_text``, which puts a space around every
CJK character so each one is a token. FTS5's ``snippet()`` cuts from that stored form,
so its output must be turned back into the original before anyone sees it. Collapsing
and re-joining whitespace afterwards (what we used to do) loses the user's own spaces:
``日本語 テキスト の 説明`` came out as ``日本語テキストの説明``.

``fts_text``'s CJK spacing is exactly invertible (a token over 64 characters is kept as
its first 32 then ``…``, and a snippet shows it so: indexer/text.py). It replaces each
maximal CJK run ``c1…ck`` with
``" c1 c2 … ck "``, so in the stored text two CJK characters separated by exactly one
space belong to one original run (characters of two runs are at least three spaces, or a
non-space, apart). Undoing it: for each stored group ``c1 c2 … ck`` (single spaces
between), drop those inner spaces and the one space right before and right after the
group, if present (a snippet may start or end inside the padding). The highlight
markers sit between tokens and are carried through by position.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from sessiondex.indexer.text import SNIPPET_CLOSE, SNIPPET_OPEN, is_cjk, may_hold_cjk
from sessiondex.indexer.unicode61 import (
    ORIGINAL_TOKEN_CHAR,
    fold,
    folded_token_class,
    separators_as_spaces,
    token_spans,
)

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable

# What snippet() is asked to put around a match: noncharacters, which the stored text
# never holds (fts_text replaces them), so the inversion can tell them from the text and
# then swap in the real markers (``[``/``]``, or terminal colours).
OPEN = SNIPPET_OPEN
CLOSE = SNIPPET_CLOSE
ELLIPSIS = "…"


@cache
def _break_pattern() -> re.Pattern[str]:
    """Line breaks and tabs with the spaces around them: one snippet is one line."""
    return re.compile(r"[ \u3000]*[\t\n\v\f\r\x85\u2028\u2029]+[ \u3000]*")


def original_text(stored: str) -> str:
    """Undo ``fts_text`` exactly (on whole texts or on cuts of them, markers included).

    A walk over the characters rather than a pattern over the CJK class: a snippet is a
    few hundred characters at most, and compiling that class costs a search process more
    (~8 ms) than walking every snippet of a page."""
    if not may_hold_cjk(stored):
        # No CJK character, so nothing was spaced (the markers stay where they are): the
        # usual case.
        return _whole_last_characters(stored)
    text, marks = _take_marks(stored)
    cjk = [is_cjk(ch) for ch in text]
    if not any(cjk):
        return _whole_last_characters(stored)
    keep = [True] * len(text)
    size = len(text)
    i = 0
    while i < size:  # each group as a leftmost, longest "C( C)*" match
        if not cjk[i]:
            i += 1
            continue
        start = i
        while i + 2 < size and text[i + 1] == " " and cjk[i + 2]:
            keep[i + 1] = False  # a single space inside the group
            i += 2
        end = i + 1
        if start > 0 and text[start - 1] == " ":
            keep[start - 1] = False
        if end < size and text[end] == " ":
            keep[end] = False
        i = end
    out: list[str] = []
    for i, ch in enumerate(text):
        out.extend(marks.get(i, ()))
        if keep[i]:
            out.append(ch)
    out.extend(marks.get(size, ()))
    return _close_after_marks(out)


def _whole_last_characters(stored: str) -> str:
    """:func:`_close_after_marks` where a mark follows a :data:`CLOSE` (a keycap's
    U+FE0F U+20E3 after its digit, an accent typed as a second code point), else
    ``stored`` as it is, without a walk over it."""
    import unicodedata

    at = stored.find(CLOSE)
    while at != -1:
        if at + 1 < len(stored) and unicodedata.category(stored[at + 1]) in ("Mn", "Mc", "Me"):
            return _close_after_marks(list(stored))
        at = stored.find(CLOSE, at + 1)
    return stored


def _close_after_marks(out: list[str]) -> str:
    """The text with each :data:`CLOSE` moved past the marks that follow it: unicode61
    drops a mark standing alone as a token, so a match ended before the marks of its
    last character (``[สวัสด]ี``, ``[1]️⃣``), cutting them off it."""
    import unicodedata

    i = 0
    while i < len(out):
        if out[i] == CLOSE:
            while i + 1 < len(out) and unicodedata.category(out[i + 1]) in ("Mn", "Mc", "Me"):
                out[i], out[i + 1] = out[i + 1], out[i]
                i += 1
        i += 1
    return "".join(out)


def _take_marks(stored: str) -> tuple[str, dict[int, list[str]]]:
    """The text without markers, and the markers by the text position they precede
    (FTS5 puts them right at a token's edges, never inside the padding)."""
    if OPEN not in stored and CLOSE not in stored:
        return stored, {}
    chars: list[str] = []
    marks: dict[int, list[str]] = {}
    for ch in stored:
        if ch == OPEN or ch == CLOSE:
            marks.setdefault(len(chars), []).append(ch)
        else:
            chars.append(ch)
    return "".join(chars), marks


def one_line(text: str) -> str:
    """Line breaks and tabs (with the spaces around them) as one space; the spaces
    between words are the user's and stay as they are."""
    return _break_pattern().sub(" ", text).strip()


def display_snippet(stored: str, markers: tuple[str, str]) -> str:
    """An FTS5 snippet (made with :data:`OPEN`/:data:`CLOSE`) for display: the original
    spacing back, on one line, with the caller's markers."""
    text = one_line(original_text(stored))
    return text.replace(OPEN, markers[0]).replace(CLOSE, markers[1])


# FTS5's snippet() scores a window at every instance of a matched phrase by counting the
# instances in it: its work grows with the square of the instances in one row (8,000 in
# one row: ~0.3 s). A pasted log of 20,000 lines repeating the word searched for took
# 31 s, and the MCP server, the picker and the web view waited for it. A row longer than
# this many characters is looked at first: a shorter one holds at most ~1,000 instances
# (a one-letter word and a space each), ~5 ms for FTS5.
SCAN_CHARS = 2_000
# Matches counted in such a row above which its snippet is cut here instead: ~300
# instances cost FTS5 under half a millisecond, and each doubling four times that.
MAX_INSTANCES = 300


#: The SQL function :meth:`~sessiondex.query.dialect.SqliteDialect.snippets` asks
#: which text of a row is too heavy for FTS5's snippet(): (FTS5 match, texts as
#: indexed...) → the position (from 1) of the first such text, or 0.
HEAVY_FUNCTION = "sessiondex_too_many_matches"


def register_heavy(conn: sqlite3.Connection) -> None:
    """Give ``conn`` :data:`HEAVY_FUNCTION`. Registered by the query layer when first
    asked for, not on every connection the index opens: only a search needs it."""
    # The statement asks twice per row (its CASE): the second time is the same
    # question, found equal by a compare rather than a hash of the texts.
    last_question: tuple[object, ...] = ()
    last_answer = 0

    def heavy(*question: object) -> int:
        nonlocal last_question, last_answer
        if question != last_question:
            last_answer = _first_heavy(question[0] if question else None, question[1:])
            last_question = question
        return last_answer

    conn.create_function(HEAVY_FUNCTION, -1, heavy, deterministic=True)


def _first_heavy(match: object, texts: tuple[object, ...]) -> int:
    if not isinstance(match, str):
        return 0
    above = may_be_heavy_above(match)
    for position, text in enumerate(texts, 1):
        if isinstance(text, str) and len(text) > above and too_many_matches(text, _terms_of(match)):
            return position
    return 0


@lru_cache(maxsize=64)
def _terms_of(match: str) -> list[tuple[str, bool]]:
    return match_terms(match)


def match_terms(match: str) -> list[tuple[str, bool]]:
    """The terms of an FTS5 match expression as ``(folded term, is a prefix)``: the
    quoted strings ours are made of, else the bare words of a ``--raw`` query (its
    operators aside). Phrases count word by word: this only finds where matches are."""
    quoted = re.findall(r'"((?:[^"]|"")*)"(\*?)', match)
    rest = re.sub(r'"(?:[^"]|"")*"\*?', " ", match)
    # A column filter (``{custom_title tag} :``, ``summary:``) names columns, not words:
    # taken for words, they were marked in snippets (``title`` in a prompt) and counted.
    rest = re.sub(r"(?:\{[^}]*\}|[^\s()\"*:^+{}-]+)\s*:", " ", rest)
    words = [(text.replace('""', '"'), star == "*") for text, star in quoted]
    for word in re.findall(r"[^\s()\"*:^+-]+\*?", rest):
        if word.rstrip("*") in ("AND", "OR", "NOT", "NEAR"):
            continue
        words.append((word.rstrip("*"), word.endswith("*")))
    return _phrase_terms(words)


Phrase = tuple[tuple[str, ...], bool]


def tsquery_phrases(match: str) -> list[Phrase]:
    """The phrases of the team store's ``to_tsquery`` text, each as ``(its folded
    tokens, whether its last is a prefix)``, as FTS5 reads the quoted strings of the
    local query: what :func:`fts5_snippet` looks for (``'auth/middleware'`` is one
    phrase of two tokens, found where they follow each other). Quoted strings joined by
    ``<->`` are one phrase too: the dialect writes a phrase whose last word is a prefix
    so (``'user' <-> 'profile':*``, query/dialect.py ``term``), which FTS5 marks as one
    run, ``[user_profile]``, not ``[user]_[profile]``."""
    phrases: list[Phrase] = []
    joined: list[str] = []
    last_end, last_star = -1, False
    for found in re.finditer(r"(!?)\s*'((?:[^']|'')*)'(:\*)?", match):
        negated, text, star = found.groups()
        written = text.replace("''", "'").replace("\\\\", "\\")
        tokens = [token for span in token_spans(written) if (token := fold(span.group()))]
        follows = bool(joined) and re.fullmatch(r"\s*<->\s*", match[last_end : found.start()])
        if joined and not follows:
            phrases.append((tuple(joined), last_star))
            joined = []
        if negated:
            last_end = found.end()
            continue
        joined.extend(tokens)
        last_end, last_star = found.end(), star == ":*"
    if joined:
        phrases.append((tuple(joined), last_star))
    return phrases


def _phrase_terms(words: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """``(text, is a prefix)`` words → ``(folded token, is a prefix)``, a word's prefix
    being its last token's."""
    terms: list[tuple[str, bool]] = []
    for text, prefix in words:
        tokens = [fold(found.group()) for found in token_spans(text)]
        tokens = [token for token in tokens if token]  # accents alone: no token
        for i, token in enumerate(tokens):
            terms.append((token, prefix and i == len(tokens) - 1))
    return terms


def _term_patterns(terms: list[tuple[str, bool]]) -> list[tuple[re.Pattern[str], int]]:
    """Where each distinct term occurs as a token (whole, or as a token's start for a
    prefix) in folded text, with how many times the query holds it: FTS5 walks a
    term's instances once for each time it is written (``error error``, ``"error" OR
    "error"``), and a prefix's instances beside those of a word it starts."""
    token = folded_token_class()
    counted: dict[tuple[str, bool], int] = {}
    for term, prefix in terms:
        if term:
            counted[(term, prefix)] = counted.get((term, prefix), 0) + 1
    return [
        (re.compile(f"(?<![{token}]){re.escape(term)}" + ("" if prefix else f"(?![{token}])")), n)
        for (term, prefix), n in counted.items()
    ]


# Distinct terms above which a row's tokens are counted once each rather than each term
# looked for in turn: a pattern per term (compiled anew past the regex module's cache of
# 512) and a pass over the text per term made a pasted paragraph of 2,000 words cost
# 0.4 s a row.
MANY_TERMS = 16


def instances(stored: str, terms: list[tuple[str, bool]], above: int | None = None) -> int:
    """How many instances of ``terms`` FTS5's snippet() walks in ``stored``: each term's
    tokens, once for each time the query holds the term; counting may stop past
    ``above``."""
    folded = fold(stored)
    if len(set(terms)) > MANY_TERMS:
        weight = _instances_per_token(terms)
        tokens = Counter(re.findall(f"[{folded_token_class()}]+", folded))
        return sum(times * weight(token) for token, times in tokens.items())
    count = 0
    for pattern, times in _term_patterns(terms):
        for _ in pattern.finditer(folded):
            count += times
            if above is not None and count > above:
                return count
    return count


def too_many_matches(stored: str, terms: list[tuple[str, bool]]) -> bool:
    """Whether FTS5's snippet() would take long on this row (see :data:`MAX_INSTANCES`):
    the terms counted as tokens of the folded text."""
    if not any(term for term, _ in terms):
        return False
    if len(set(terms)) > MANY_TERMS:  # the bounds below cost a pass per term
        return instances(stored, terms, MAX_INSTANCES) > MAX_INSTANCES
    if _instances_at_most(stored, terms) <= MAX_INSTANCES:
        return False
    # Substrings of the folded text first (C speed, an upper bound of the tokens):
    # nearly every row stops here.
    folded = fold(stored)  # "café" is an instance of "cafe" (helper 98: 10 s)
    if sum(folded.count(term) for term, _ in terms if term) <= MAX_INSTANCES:
        return False
    return instances(stored, terms, MAX_INSTANCES) > MAX_INSTANCES


@lru_cache(maxsize=64)
def may_be_heavy_above(match: str) -> int:
    """The length in characters (of the text as indexed) at or under which no row holds
    more than :data:`MAX_INSTANCES` instances of ``match``'s terms, so that no row that
    short need be looked at: :data:`SCAN_CHARS`, or more for long ASCII terms. unicode61
    folds each character to at most one, so an instance of a term of ``n`` letters takes
    ``n`` characters and a separator; that holds for the terms as written only where the
    match is ASCII (a case-fold may lengthen a word: ß is ss).

    A token is walked once for each term it is an instance of (a word written twice, a
    prefix of a word also written), so :data:`SCAN_CHARS` shrinks by the most terms one
    token can be: ``a`` written 8 times made 1,999 characters of ``a a ...`` 8,000
    instances, 0.8 s each for FTS5."""
    return _heavy_above(_terms_of(match), match.isascii())


def _heavy_above(terms: list[tuple[str, bool]], ascii: bool) -> int:
    """:func:`may_be_heavy_above` of a match of ``terms``, ASCII or not."""
    terms = [(term, prefix) for term, prefix in terms if term]
    if not terms:
        return SCAN_CHARS
    scan = SCAN_CHARS // _most_terms_of_one_token(terms)
    if not ascii:
        return scan
    shortest = min(len(term) for term, _ in terms)
    return max(scan, MAX_INSTANCES * (shortest + 1) // len(terms))


def _most_terms_of_one_token(terms: list[tuple[str, bool]]) -> int:
    """How many of ``terms`` (repeats counted) one token can be an instance of. The
    most is reached by a token written as one of the terms: a longer token is an
    instance of the prefixes only, which its own start is an instance of too."""
    weight = _instances_per_token(terms)
    return max(weight(term) for term, _ in terms)


def _instances_per_token(terms: list[tuple[str, bool]]) -> Callable[[str], int]:
    """How many instances of ``terms`` one folded token is, for FTS5: once for each time
    the query holds it as a word, and once for each time it holds a prefix of it. Each
    of the token's starts is looked up rather than every term compared (a pasted
    paragraph of 2,000 words: 0.3 s for the pairs)."""
    exact = Counter(term for term, prefix in terms if term and not prefix)
    prefixes = Counter(term for term, prefix in terms if term and prefix)
    longest = max(map(len, prefixes), default=0)

    def weight(token: str) -> int:
        starts = range(1, min(len(token), longest) + 1)
        return exact[token] + sum(prefixes[token[:end]] for end in starts)

    return weight


# UTF-8 lead bytes of U+0080-U+07FF (Latin-1 to Latin Extended-B, the combining marks),
# and the starts of U+1E00-U+1EFF (Latin Extended Additional) and U+2100-U+213F (letterlike
# symbols: the Kelvin and Ångström signs): the characters that may fold to an ASCII one.
_TWO_BYTE_LEADS = bytes(range(0xC2, 0xE0))
_THREE_BYTE_LATIN = (b"\xe1\xb8", b"\xe1\xb9", b"\xe1\xba", b"\xe1\xbb", b"\xe2\x84")


def _instances_at_most(stored: str, terms: list[tuple[str, bool]]) -> int:
    """An upper bound of the instances of ``terms`` in ``stored``, without folding its
    diacritics when the terms are ASCII: an instance is either written in ASCII (found
    in the case-folded text as it is) or holds a character that may fold to ASCII
    (counted, once for each term it might start). Folding a non-ASCII text costs ten
    times the case-fold (0.4 ms for 30 KB), and nearly every long row of a page is far
    under the bound this gives."""
    folded = stored.casefold()
    literal = sum(folded.count(term) for term, _ in terms if term)
    if folded.isascii():
        return literal
    if not all(term.isascii() for term, _ in terms):
        return literal + len(folded) * len(terms)  # no bound: the exact count decides
    raw = folded.encode("utf-8", "surrogatepass")
    foldable = len(raw) - len(raw.translate(None, _TWO_BYTE_LEADS))
    foldable += sum(raw.count(start) for start in _THREE_BYTE_LATIN)
    return literal + foldable * len(terms)


def _token_occurrences(folded_text: str, term: str, prefix: bool, at_most: int) -> int:
    """How often ``term`` is a token of ``folded_text`` (a token's start, for a prefix),
    not a substring, counted up to ``at_most``: ``3`` is in every timestamp of a log, and
    taken for the common word it made ``worker`` the rare one of ``worker-3``. Letters
    and digits make tokens."""
    edge = r"(?<![^\W_])"
    pattern = edge + re.escape(term) + ("" if prefix else r"(?![^\W_])")
    count = 0
    for _ in re.finditer(pattern, folded_text):
        count += 1
        if count >= at_most:
            break
    return count


def joined_by_punctuation(gap: str) -> bool:
    """Whether two tokens with ``gap`` between them are one phrase as written: joined by
    punctuation alone (``request_id=req-000123``, ``src/config/loader.rs``), not spaced
    apart. A snippet marks such a run as one; a query word that is one is preferred
    where a text writes it so (query/search.py ``query_words``)."""
    return gap != "" and not any(ch.isspace() for ch in gap)


@cache
def _original_token_char() -> re.Pattern[str]:
    return re.compile(ORIGINAL_TOKEN_CHAR)


@lru_cache(maxsize=64)
def _spelling_pattern(spelling: str) -> re.Pattern[str]:
    return re.compile(re.escape(spelling), re.IGNORECASE)


def holds_spelling(text: str, spelling: str, prefix: bool) -> bool:
    """Whether ``text`` (as stored) writes ``spelling`` (a query word joined by
    punctuation, as stored) as typed, in any case, starting where a token starts and,
    unless ``prefix`` (the query's last word), ending where one ends: ``user_profile``
    is in ``user_profile.save()``, not in ``superuser_profile``, nor in the prose "user
    profile", which the index takes for the same two words. The tokens' edges are the
    tokenizer's (:func:`~sessiondex.indexer.unicode61.separators_as_spaces`): an
    underscore is one, so ``old_user_profile`` writes it, as FTS5 finds it there too."""
    pattern = _spelling_pattern(spelling)
    found = pattern.search(text)
    if found is None:  # prose: one scan, no copy of the text
        return False
    edges = separators_as_spaces(text)  # the same length: a span of it is one of text
    token_char = _original_token_char()
    while found is not None:
        start, end = found.span()
        if (start == 0 or not token_char.match(edges, start - 1)) and (
            prefix or end == len(edges) or not token_char.match(edges, end)
        ):
            return True
        found = pattern.search(text, start + 1)
    return False


def bounded_snippet(stored: str, terms: list[tuple[str, bool]], tokens: int) -> str:
    """A snippet as FTS5 makes one, for a row where its own would take too long: a
    window of ``tokens`` tokens around the first match of the rarest term (the one a
    reader is looking for: ``shard 1999`` in a log of 20,000 shards), starting a few
    tokens before it, each match marked with :data:`OPEN`/:data:`CLOSE` (a run of
    matched CJK characters, the index's one-character tokens of a word, as one), and
    :data:`ELLIPSIS` where the text goes on. One pass over the tokens up to the
    window."""
    from collections import deque

    wanted = {term for term, prefix in terms if not prefix}
    prefixes = tuple(term for term, prefix in terms if prefix)

    def matches(folded: str) -> bool:
        return folded in wanted or (bool(prefixes) and folded.startswith(prefixes))

    folded_text = fold(stored)
    # The rarest; of several as rare, the first in the query (a phrase's first word). A
    # query of one word has no rarer one: whether it is there is all that is asked (its
    # every instance counted was most of a heavy row's snippet for a letter typed: ``s``
    # in each long prompt of a page).
    one_word = len({(term, prefix) for term, prefix in terms if term}) == 1
    present = [
        (
            _token_occurrences(folded_text, term, prefix, 1 if one_word else len(folded_text)),
            at,
            term,
            prefix,
        )
        for at, (term, prefix) in enumerate(terms)
        if term
    ]
    present = [item for item in present if item[0]]
    if not present:
        return ""
    _, _, rare, rare_prefix = min(present)

    def anchors(folded: str) -> bool:
        return folded.startswith(rare) if rare_prefix else folded == rare

    lead = max(0, tokens // 4)
    before: deque[re.Match[str]] = deque(maxlen=lead)
    window: list[re.Match[str]] = []
    fallback: list[re.Match[str]] = []  # from the first match of any term
    for found in token_spans(stored):
        folded = fold(found.group())
        if window:
            window.append(found)
            if len(window) >= tokens:
                break
            continue
        if fallback and len(fallback) < tokens:
            fallback.append(found)
        if anchors(folded):
            window = [*before, found]
            if len(window) >= tokens:
                break
            continue
        if not fallback and matches(folded):
            fallback = [found]
        before.append(found)
    window = window or fallback
    if not window:
        return ""
    head = stored[: window[0].start()]
    return _render(stored, window, matches, ELLIPSIS if head.strip() else head, None)


def _render(
    stored: str,
    window: list[re.Match[str]],
    matches: Callable[[str], bool],
    head: str,
    tail: str | None,
) -> str:
    """``window``'s tokens of ``stored`` with the text between them, each match marked:
    ``head`` before them, and after them ``tail``, or (None) :data:`ELLIPSIS` where text
    goes on."""
    marked = [matches(fold(found.group())) for found in window]
    out = [head]
    at = window[0].start()
    for i, found in enumerate(window):
        gap = stored[at : found.start()]
        token = found.group()
        # Matched tokens one run of text holds (a phrase such as request_id=req-000123,
        # joined by punctuation alone), or a matched CJK character right after another,
        # one space apart: one marked run, as FTS5 marks a phrase.
        joined = (
            marked[i]
            and i > 0
            and marked[i - 1]
            and (
                joined_by_punctuation(gap)
                or (gap == " " and is_cjk(token[0]) and is_cjk(window[i - 1].group()[-1]))
            )
        )
        if joined:
            out[-1] = out[-1][: -len(CLOSE)]  # reopen the run
            out.append(gap + token + CLOSE)
        else:
            out.append(gap)
            out.append(f"{OPEN}{token}{CLOSE}" if marked[i] else token)
        at = found.end()
    if tail is not None:
        out.append(tail)
    elif stored[at:].strip():
        out.append(ELLIPSIS)
    return "".join(out)


# A text longer than this (characters) is cut by :func:`bounded_snippet`, whose one pass
# stops at its window, rather than tokenized whole for :func:`fts5_snippet`.
FTS5_WINDOW_CHARS = 100_000


def fts5_snippet(stored: str, phrases: list[Phrase], tokens: int) -> str:
    """:func:`scored_fts5_snippet`'s snippet."""
    return scored_fts5_snippet(stored, phrases, tokens)[1]


def best_fts5_snippet(texts: list[str], phrases: list[Phrase], tokens: int) -> str:
    """The snippet FTS5's ``snippet()`` takes from a row of several columns (``texts``,
    in the table's order): that of the column whose window scores best, the first of
    those as good; the first text too heavy for FTS5, if one is, as the local index
    takes it (query/dialect.py ``SqliteDialect.snippets``)."""
    best, chosen = 0.0, ""
    for text in texts:
        score, cut = scored_fts5_snippet(text, phrases, tokens) if text else (0.0, "")
        if cut and score > best:
            best, chosen = score, cut
    return chosen


def scored_fts5_snippet(stored: str, phrases: list[Phrase], tokens: int) -> tuple[float, str]:
    """``(score, snippet)``: a snippet of ``stored`` (the text as indexed) cut as FTS5's ``snippet()`` cuts
    one, for the team store, which has no FTS5 (``fts5_aux.c``): the window of
    ``tokens`` tokens that scores best (1,000 for each phrase first met in it, 1 for
    each further instance), tried at each instance, centred on the instances it holds
    and kept inside the text, or at the start of the instance's sentence (a token after
    ``.`` or ``:`` and a blank) when that scores better (+100, +120 at the text's
    start); ``…`` where the text goes on past the window, else the rest of the text as
    it is; each run of overlapping instances marked once. A text the local index finds
    too heavy for FTS5 (:data:`MAX_INSTANCES`), or over :data:`FTS5_WINDOW_CHARS`, is
    cut by :func:`bounded_snippet`, as the local index cuts it, and scores infinity
    (such a column is the one the local index cuts); no match: 0, ''."""
    from bisect import bisect_left, bisect_right

    terms = [
        (token, prefix and i == len(words) - 1)
        for words, prefix in phrases
        for i, token in enumerate(words)
    ]
    if not terms:
        return 0.0, ""
    # The local index's rule for a row too heavy for FTS5 (SqliteDialect.snippets).
    above = _heavy_above(terms, all(term.isascii() for term, _ in terms))
    if len(stored) > FTS5_WINDOW_CHARS or (len(stored) > above and too_many_matches(stored, terms)):
        return _heavy(stored, terms, tokens)
    spans = list(token_spans(stored))
    # One fold of all the tokens rather than one per token (a token folds to no blank).
    folded = fold(" ".join(span.group() for span in spans)).split(" ") if spans else []
    if len(folded) != len(spans):  # pragma: no cover - a fold that made a blank
        return _heavy(stored, terms, tokens)
    firsts_of = {words[0] for words, prefix in phrases if not (prefix and len(words) == 1)}
    prefix_firsts = tuple(words[0] for words, prefix in phrases if prefix and len(words) == 1)
    candidates = [
        i
        for i, token in enumerate(folded)
        if token in firsts_of or (prefix_firsts and token.startswith(prefix_firsts))
    ]
    found: list[tuple[int, int]] = []  # (token position, phrase), in FTS5's order
    for position in candidates:
        for index, (words, prefix) in enumerate(phrases):
            end = position + len(words)
            if end > len(folded):
                continue
            if all(folded[position + j] == word for j, word in enumerate(words[:-1])) and (
                folded[end - 1].startswith(words[-1]) if prefix else folded[end - 1] == words[-1]
            ):
                found.append((position, index))
    if not found:
        return 0.0, ""
    size = len(spans)
    offsets = [span.start() for span in spans]
    firsts = [0]  # the first token of each sentence: after "." or ":" and a blank
    for gap in re.finditer(r"[.:][ \t\n\r]+", stored):
        at = bisect_left(offsets, gap.end())
        if at < size and offsets[at] == gap.end() and at > firsts[-1]:
            firsts.append(at)
    positions = [position for position, _ in found]

    def score(start: int) -> tuple[int, int]:
        """The window from ``start``: its score, and where FTS5 moves it to."""
        inside = found[bisect_left(positions, start) : bisect_left(positions, start + tokens)]
        if not inside:
            return 0, 0
        seen: set[int] = set()
        total = 0
        for _, index in inside:
            total += 1 if index in seen else 1000
            seen.add(index)
        first, last = inside[0][0], inside[-1][0] + len(phrases[inside[-1][1]][0])
        room = tokens - (last - first)  # below 0 when a phrase runs past the window:
        moved = first - (room // 2 if room >= 0 else -(-room // 2))  # C's division
        if moved + tokens > size:
            moved = size - tokens
        return total, max(moved, 0)

    best, start = 0, 0
    for position in positions:
        total, moved = score(position)
        if total > best:
            best, start = total, moved
        if size > tokens:
            sentence = firsts[bisect_right(firsts, position) - 1]
            if sentence < position:
                total = score(sentence)[0] + (120 if sentence == 0 else 100)
                if total > best:
                    best, start = total, sentence
    stop = min(start + tokens, size)  # after the window's last token
    # Runs of overlapping instances (FTS5's coalesced instances), from the window on.
    runs: list[list[int]] = []
    for position, index in found:
        last = position + len(phrases[index][0]) - 1
        if runs and position <= runs[-1][1]:
            runs[-1][1] = max(runs[-1][1], last)
        else:
            runs.append([position, last])
    opens = {first: last for first, last in runs if start <= first < stop}
    out = [ELLIPSIS if start > 0 else stored[: offsets[start]]]
    at = offsets[start]
    open_until = -1
    for position in range(start, stop):
        span = spans[position]
        if position in opens and open_until < 0:
            out.append(stored[at : span.start()] + OPEN)
            at = span.start()
            open_until = opens[position]
        if open_until >= 0 and (position == open_until or position == stop - 1):
            out.append(stored[at : span.end()] + CLOSE)
            at = span.end()
            open_until = -1
    out.append(stored[at : spans[stop - 1].end()])
    out.append(stored[spans[stop - 1].end() :] if stop == size else ELLIPSIS)
    return float(best), "".join(out)


def _heavy(stored: str, terms: list[tuple[str, bool]], tokens: int) -> tuple[float, str]:
    cut = bounded_snippet(stored, terms, tokens)
    return (math.inf if cut else 0.0), cut
