"""Characters as the index's tokenizer sees them, learnt from SQLite itself.

FTS5's ``unicode61`` tokenizer (``remove_diacritics 2``) decides per code point: a
separator, a token character folded to one character, or a token character folded to
nothing (a combining accent, after any letter: "и" + U+0306 is "и", where a precomposed
"й" stays "й"). Its tables are its own: most combining marks that are no accent (U+0336
long stroke, U+0332 low line, U+0340) cut a token, unassigned code points and private
use characters are kept, and "ß" is not "ss". Python's ``\\w``, ``casefold()`` and
``unicodedata`` disagree on thousands of code points, and the query layer's heavy-row
check (query/snippets.py) counts the matches FTS5's snippet() will walk: where it cut or
folded differently it counted too few and a row of 20,000 ``x̶ERROR`` took FTS5 2.3 s.

So nothing here is a rule of ours: the first time a character is met, an in-memory FTS5
table with the index's tokenizer is asked what it makes of ``a<character>b`` (one row per
new character, a few milliseconds for a page of CJK text), and the answer is kept for the
process.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterator
from functools import cache

from sessiondex.indexer.shape import FTS_TOKENIZER

# Code point → what the tokenizer makes of it, in str.translate's terms: a folded
# character, None where it is a token character folded to nothing, " " for a separator.
# ASCII is filled in up front: letters lower-cased, digits kept, the rest separators.
_FOLDS: dict[int, str | None] = {
    code: (chr(code).lower() if chr(code).isalnum() else " ") for code in range(128)
}
# The same for cutting the original text without changing its length: only the
# separators past ASCII (as spaces), since an ASCII character is classed by the pattern.
_SEPARATORS: dict[int, str] = {}
_lock = threading.Lock()
_probe: tuple[int, sqlite3.Connection] | None = None  # the process that opened it, and it


@cache
def ascii_words() -> bytes:
    """``bytes.translate`` table: ASCII letters lower-cased, digits kept, the rest a space."""
    return bytes(
        (ord(chr(b).lower()) if chr(b).isalnum() else 32) if b < 128 else b for b in range(256)
    )


@cache
def folded_token_class() -> str:
    """A regular-expression class of the characters of a token in :func:`fold`'s output,
    where every character past ASCII is one (the separators are spaces by then).
    Written as what it is not (ASCII but a digit or a lower-case letter): Python's regex
    compiler walks every code point of a range, 2.5 ms for one up to U+10FFFF."""
    return r"^\x00-/:-`{-\x7f"


def fold(text: str) -> str:
    """``text`` as the index compares it: each token folded as unicode61 folds it, each
    separator a space (so tokens are the runs of :func:`folded_token_class`)."""
    if text.isascii():  # one C-level pass
        return text.encode("ascii").translate(ascii_words()).decode("ascii")
    _learn(text)
    return text.translate(_FOLDS)


#: A token character in :func:`separators_as_spaces`' output: an ASCII letter or digit,
#: or any character past ASCII (the separators there are spaces by then).
ORIGINAL_TOKEN_CHAR = r"[^\x00-/:-@\[-`{-\x7f]"


def is_original_token_char(char: str) -> bool:
    """Whether one character of :func:`separators_as_spaces`' output is a token
    character (:data:`ORIGINAL_TOKEN_CHAR`), without a pattern."""
    return char.isalnum() if char.isascii() else True


@cache
def _original_tokens() -> re.Pattern[str]:
    return re.compile(ORIGINAL_TOKEN_CHAR + "+")


def separators_as_spaces(text: str) -> str:
    """``text`` with each character past ASCII that unicode61 takes for a separator
    made a space, and nothing else changed (the same length, so a span found in it is
    the same span of ``text``): its tokens are the runs of :data:`ORIGINAL_TOKEN_CHAR`."""
    if text.isascii():
        return text
    _learn(text)
    return text.translate(_SEPARATORS)


def token_spans(text: str) -> Iterator[re.Match[str]]:
    """The tokens of ``text`` where unicode61 cuts them, as matches over a copy of it
    of the same length (``group()`` is the token as written)."""
    return _original_tokens().finditer(separators_as_spaces(text))


#: Ranges where the tokenizer keeps every character as it is (a token character of its
#: own, folded to itself): kana, CJK ideographs, Hangul syllables, most of a CJK text.
#: Taken as known instead of asked, so a search over CJK text asks nothing
#: (tests/test_search.py checks them against SQLite).
KEPT_AS_IS = (
    (0x3041, 0x3096),
    (0x30A1, 0x30FA),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
    (0xF900, 0xFAFF),
)


def _learn(text: str) -> None:
    unknown = {c for c in set(text) if ord(c) not in _FOLDS}
    if not unknown:
        return
    with _lock:
        asked: list[str] = []
        for c in unknown:
            code = ord(c)
            if code in _FOLDS:
                continue  # learnt meanwhile
            if any(low <= code <= high for low, high in KEPT_AS_IS):
                _FOLDS[code] = c
            elif 0xD800 <= code <= 0xDFFF:  # not text SQLite holds: never in a token
                _FOLDS[code] = _SEPARATORS[code] = " "
            else:
                asked.append(c)
        if asked:
            for c, fold in zip(asked, _ask(asked), strict=True):
                _FOLDS[ord(c)] = fold
                if fold == " ":
                    _SEPARATORS[ord(c)] = " "


def _ask(chars: list[str]) -> list[str | None]:
    """What the tokenizer makes of each character, asked in one text of ``a<c>b``
    words: two tokens "a" and "b" where it is a separator, else one token "a", its
    fold and "b" (None where it folds to nothing)."""
    conn = _probe_connection()
    conn.execute("DELETE FROM probe")
    conn.execute("INSERT INTO probe(rowid, x) VALUES (1, ?)", [" ".join(f"a{c}b" for c in chars)])
    rows = conn.execute("SELECT term FROM probe_terms ORDER BY offset")
    tokens = iter([str(term) for (term,) in rows])
    folds: list[str | None] = []
    for _ in chars:
        token = next(tokens)
        if token == "a":
            next(tokens)  # its "b"
            folds.append(" ")
        else:
            folds.append(token[1:-1] or None)
    return folds


def _probe_connection() -> sqlite3.Connection:
    """The in-memory table that is asked, opened again in a forked child: a SQLite
    connection must not be used on both sides of a fork."""
    global _probe
    if _probe is None or _probe[0] != os.getpid():
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.execute(f"CREATE VIRTUAL TABLE probe USING fts5(x, tokenize='{FTS_TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, instance)")
        _probe = (os.getpid(), conn)
    return _probe[1]
