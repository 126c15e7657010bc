"""The one transformation between human text and the FTS5 index.

FTS5's ``unicode61`` tokenizer splits on spaces and punctuation, so a run of Chinese or
Japanese characters becomes a single token and a word inside it can never match. We put
a space around every CJK character on the way in and on the way out (queries), so each
character is a token and a CJK word becomes a phrase of adjacent tokens: findable
anywhere, with no extra tokenizer to install.

Tokens nobody types (longer than ``LONG_TOKEN_MAX`` characters without a separator:
base64, minified code, long hashes) keep only their first ``LONG_TOKEN_PREFIX``
characters, then ``…``: a pasted 10 KB blob costs the index one short token instead of
10 KB of term data, and its prefix (or the whole blob: queries go through this function
too) still finds it. Snippets show the cut form (``Zm9vYmFy…``): the stored text is what
FTS5's ``snippet()`` reads. Hashes up to SHA-256 (64 hex digits) are kept whole.
"""

from __future__ import annotations

import re
from functools import cache

from sessiondex.indexer.unicode61 import (
    ORIGINAL_TOKEN_CHAR,
    fold,
    is_original_token_char,
    separators_as_spaces,
)

# Scripts written without spaces between words: Thai, Lao, Myanmar, Khmer; then
# hiragana, katakana, CJK ideographs (and extension A), Hangul syllables, compatibility
# ideographs, half-width katakana; then the ideographs beyond the BMP (extensions B to H
# and the compatibility supplement, U+20000-U+323AF). (The name says CJK: they are all
# treated alike.)
_CJK = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff"
    "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U000323af"
)
# The same ranges as code points, in order, for is_cjk.
_CJK_RANGES = tuple((ord(_CJK[i]), ord(_CJK[i + 2])) for i in range(0, len(_CJK), 3))


def is_cjk(char: str) -> bool:
    """Whether one character is in ``_CJK``: what a short text (a snippet) tests per
    character instead of compiling the pattern over the class (2-4 ms, once a process)."""
    code = ord(char)
    for low, high in _CJK_RANGES:  # in order: the first range not below it decides
        if code <= high:
            return code >= low
    return False


@cache
def _high_lead_bytes() -> re.Pattern[bytes]:
    # The UTF-8 starts of _CJK's characters: E0 B8-BB (Thai and Lao, U+0E00-U+0EFF),
    # E1 80-82 and 9E-9F (Myanmar U+1000-U+10BF, Khmer U+1780-U+17FF), lead bytes E3-EE
    # (U+3000-U+EFFF), after EF only the second bytes of U+F900-U+FAFF (A4-AB) and
    # U+FF40-U+FFBF (BD, BE), and F0 A0-B2 (U+20000-U+32FFF, four bytes long). That
    # leaves out U+FDD0/U+FDD1, the markers every search snippet carries, and emoji.
    return re.compile(
        rb"\xe0[\xb8-\xbb]|\xe1[\x80-\x82\x9e\x9f]|[\xe3-\xee]|\xef[\xa4-\xab\xbd\xbe]"
        rb"|\xf0[\xa0-\xb2]"
    )


@cache
def _any_lead_byte() -> re.Pattern[bytes]:
    # Every lead byte the pattern above starts with, as one byte class: searched first,
    # because a class is ~3 times faster to rule out than the alternation, and most
    # text (Latin, Cyrillic, emoji, dashes and quotes) holds none of them.
    return re.compile(rb"[\xe0\xe1\xe3-\xef\xf0]")


def may_hold_cjk(text: str) -> bool:
    """False when ``text`` surely holds no CJK character; a cheap test before the
    patterns over _CJK, whose compiling alone (Python's regex compiler walks every code
    point of the ranges) costs a command 2-7 ms: ASCII, Latin, Cyrillic and the like
    never reach them."""
    if text.isascii():
        return False
    data = text.encode("utf-8", "surrogatepass")
    return _any_lead_byte().search(data) is not None and _high_lead_bytes().search(data) is not None


@cache
def cjk_runs() -> re.Pattern[str]:
    """Runs of ``_CJK`` characters, each of which FTS stores as a token of its own.
    Compiled on first use: compiling at import would cost every command start-up."""
    return re.compile(f"[{_CJK}]+")


#: How many characters of CJK-bearing text a process spaces by walking them one by one
#: before it compiles :func:`cjk_runs` (1-2 ms) and lets the pattern do it: a search
#: spaces a few titles and first prompts (~1000 characters), an index run megabytes.
_WALK_BUDGET = 4096
_walked = 0


def _space_cjk(text: str) -> str:
    """``text`` with a space around each character of a run of ``_CJK`` characters and
    between them (``cjk_runs().sub(_space_run, text)``)."""
    global _walked
    # (the walk and the pattern give the same text: two threads racing here is harmless)
    if _walked + len(text) > _WALK_BUDGET or cjk_runs.cache_info().currsize:
        runs = cjk_runs()
        return runs.sub(_space_run, text) if runs.search(text) is not None else text
    _walked += len(text)
    pieces: list[str] = []
    done = 0
    start = -1  # where the current run began, or -1
    for i, char in enumerate(text):
        cjk = char >= "\u0e00" and is_cjk(char)
        if cjk and start < 0:
            start = i
        elif not cjk and start >= 0:
            pieces += (text[done:start], " ", " ".join(text[start:i]), " ")
            done, start = i, -1
    if start >= 0:
        pieces += (text[done:start], " ", " ".join(text[start:]), " ")
        done = len(text)
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


LONG_TOKEN_MAX = 64
LONG_TOKEN_PREFIX = 32


@cache
def _long_tokens() -> re.Pattern[str]:
    # In unicode61.separators_as_spaces' copy: a run of token characters that starts at
    # a token boundary and is longer than LONG_TOKEN_MAX.
    char = ORIGINAL_TOKEN_CHAR
    return re.compile(f"(?<!{char}){char}{{{LONG_TOKEN_MAX + 1},}}")


#: What FTS5's ``snippet()`` is asked to put around a match (``query/snippets.py``):
#: noncharacters, so the markers can be told from the text. A text that holds them
#: anyway has them stored as U+FFFD: they mean nothing, and left as they are they would
#: be taken for highlights.
SNIPPET_OPEN = "\ufdd0"
SNIPPET_CLOSE = "\ufdd1"


#: What a NUL of derived text reads as, where it cannot stay a NUL: FTS5's snippet()
#: and highlight() copy text as C strings, and PostgreSQL text holds no NUL. U+FFFD,
#: not nothing: the tokenizers read it as a separator, as they read a NUL, so the words
#: either side stay two words (``title\0waffle`` joined would be found by neither), a
#: text of NULs alone is not empty, and ``dae\0mon`` is not ``daemon``; the same
#: stand-in as for a byte that is no UTF-8.
NUL_STANDIN = "\ufffd"


def without_nul(text: str) -> str:
    """``text`` with each NUL as :data:`NUL_STANDIN`."""
    return text.replace("\x00", NUL_STANDIN) if "\x00" in text else text


# Characters a reader does not see: Unicode's Default_Ignorable_Code_Point (DerivedCore
# Properties), which a renderer shows as nothing. Typed by nobody, they reach a text
# copied from a web page or a PDF (a soft hyphen at each possible line break, a zero
# width space where a long word may wrap), and unicode61 cuts a word at most of them:
# "data\u200bbase" was the two words "data" and "base". In order: soft hyphen, combining
# grapheme joiner, Arabic letter mark, the Mongolian variation selectors and vowel
# separator, zero width space, zero width joiner, the left-to-right and
# right-to-left marks, the bidi embeddings and overrides, word joiner, invisible
# operators, bidi isolates and the deprecated format characters, variation selectors
# and the zero width no-break space (a byte order mark). Left out of the property's
# list: the zero width non-joiner (U+200C), which Persian and other Arabic-script and
# Indic writing spell with between the parts of a word written together (``می\u200cخواهم``,
# "I want"), where unicode61 cuts it: each part, typed alone or with a space between,
# finds it, as before; the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), letters of a jamo sequence
# to the tokenizer; the Khmer inherent vowels (U+17B4, U+17B5), as Khmer is one token
# per character anyway (_CJK); U+FFF0-U+FFF8, unassigned; and those beyond the BMP
# (tags, which stand between emoji in a flag's sequence, the ideographic variation
# selectors, after an ideograph that is a token of its own, shorthand and musical
# format controls, among symbols): never inside a word, and a class beyond the BMP made
# the look for them in every text that is not ASCII ~4 times slower (13 µs a KB, not 3).
_INVISIBLE = "\u00ad\u034f\u061c\u180b-\u180f\u200b\u200d-\u200f\u202a-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff"


@cache
def _invisible() -> re.Pattern[str]:
    # One character, not a run: Python's regex engine rules a class out ~3 times faster
    # than the class repeated (``+``), which only the rare text holding one is cut by.
    return re.compile(f"[{_INVISIBLE}]")


@cache
def _invisible_runs() -> re.Pattern[str]:
    return re.compile(f"[{_INVISIBLE}]+")


def without_invisible(text: str) -> str:
    """``text`` without the invisible characters (:data:`_INVISIBLE`) that stand inside a
    word: the index and a query (every path that reads words: ``fts_text``, the typo
    fallback, a ``--raw`` query) take ``connec\\u00adtion`` for ``connection``, as a
    reader does. A run of them is dropped when a token character (as unicode61 cuts
    tokens) stands on both sides of it, or when the tokenizer keeps one of them inside
    a token (the bidi isolates, U+2066-U+2069: ``\\u2066word\\u2069`` is no ``word``).
    Elsewhere (between emoji, beside a space, punctuation or CJK, which ``fts_text``
    spaces first) dropping one changes no word, and it stays: a snippet shows the
    family emoji's joiners, a heart's presentation selector and Thai's word breaks as
    written. Dropped inside a word, a joiner or a selector that changed how letters are
    drawn (a zero width joiner, a Mongolian variation selector) shows plain letters."""
    if text.isascii():
        return text
    first = _invisible().search(text)
    if first is None:
        return text
    runs = list(_invisible_runs().finditer(text, first.start()))
    edges = separators_as_spaces(text)  # the same length: unicode61's separators spaces
    pieces: list[str] = []
    done = 0
    for run in runs:
        start, end = run.span()
        inside = (
            start > 0
            and end < len(text)
            and is_original_token_char(edges[start - 1])
            and is_original_token_char(edges[end])
        )
        if inside or edges[start:end].strip():  # or a token character of the run's own
            pieces.append(text[done:start])
            done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def fts_text(text: str) -> str:
    """Text as stored for FTS: CJK characters become separate tokens, invisible
    characters inside a word go (:func:`without_invisible`), tokens longer than
    ``LONG_TOKEN_MAX`` keep their first ``LONG_TOKEN_PREFIX`` characters, and the
    snippet markers (:data:`SNIPPET_OPEN`, :data:`SNIPPET_CLOSE`) become U+FFFD."""
    if SNIPPET_OPEN in text or SNIPPET_CLOSE in text:
        text = text.replace(SNIPPET_OPEN, "\ufffd").replace(SNIPPET_CLOSE, "\ufffd")
    if may_hold_cjk(text):
        text = _space_cjk(text)
    text = without_invisible(text)
    if len(text) > LONG_TOKEN_MAX and _may_hold_long_token(text):
        text = _cut_long_tokens(text)
    return text


def _cut_long_tokens(text: str) -> str:
    """Each token longer than ``LONG_TOKEN_MAX`` as its first ``LONG_TOKEN_PREFIX``
    characters and ``…``, the tokens being unicode61's: Python's ``\\w`` splits at a
    decomposed accent or a private-use character, where FTS5 keeps one token (a blob
    of them slipped through whole), and joins a few letters FTS5 splits at (a word
    after them was cut off)."""
    pieces: list[str] = []
    done = 0
    for token in _long_tokens().finditer(separators_as_spaces(text)):
        start = token.start()
        pieces += (text[done:start], text[start : start + LONG_TOKEN_PREFIX], "\u2026")
        done = token.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def _may_hold_long_token(text: str) -> bool:
    """False when every ``LONG_TOKEN_MAX + 1`` characters hold a space (prose: almost
    always), which rules out a long token; jumping from space to space with ``rfind``
    is several times faster than a regular expression over the whole text."""
    width = LONG_TOKEN_MAX + 1
    start, end = 0, len(text)
    while start + width <= end:
        space = text.rfind(" ", start, start + width)
        if space < 0:
            return True
        start = space + 1
    return False


def _space_run(match: re.Match[str]) -> str:
    return " " + " ".join(match.group(0)) + " "


def word_text(text: str) -> str:
    """``text`` as the words SQLite's tokenizer (``unicode61 remove_diacritics 2``) finds
    in its :func:`fts_text` form, lower-cased, every other character a space.

    The team store indexes this instead of the text itself: PostgreSQL's parser keeps a
    hyphenated word, a path, a URL or an e-mail address whole, and keeps diacritics,
    so "x-docs", a word inside a path, or "resume" for "résumé" found sessions locally
    and none there. Fed only words, its ``simple`` configuration finds what FTS5 finds
    (lower-cased here too: PostgreSQL lower-cases by the database's locale)."""
    return stored_words(fts_text(text))


def stored_words(text: str) -> str:
    """:func:`word_text` of a text already in :func:`fts_text` form (what the index and
    the store keep): the same words, without cutting and spacing it a second time.
    Folded by the tokenizer's own rules (``indexer/unicode61.py``): Python's differ on
    thousands of characters (a precomposed "й" is no "и" to FTS5, a strike-through
    mark cuts a word), and the store then found other sessions than the index."""
    return fold(text)
