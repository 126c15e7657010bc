"""Invisible characters inside a word (a soft hyphen, a zero-width space or joiner, a
variation selector: Unicode's Default_Ignorable_Code_Point) are no part of the words
the index and a query hold (``indexer/text.without_invisible``): ``data\\u200bbase``,
pasted from a web page or a PDF, reads as one word and FTS5's unicode61 took it for two,
so ``database`` missed it. Where one changes no word (between emoji, beside a space)
it is kept, so a snippet shows an emoji sequence as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.indexer.text import fts_text, without_invisible, word_text
from sessiondex.indexer.unicode61 import separators_as_spaces
from sessiondex.query.filters import Filters
from sessiondex.query.search import FUZZY, run_search
from sessiondex.query.typos import typo_words
from tests.builders import ConfigTree, session_holding

ALL = Filters(scope="all")

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # man ZWJ woman ZWJ girl
HEART = "\u2764\ufe0f"  # a heart, emoji presentation


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("data\u200bbase", "database"),  # zero width space
        ("connec\u00adtion", "connection"),  # soft hyphen
        ("con\u00ad\u200bnec\u2060tion", "connection"),  # several, one after another
        ("\ufeffbom\ufeffword", "\ufeffbomword"),  # a BOM at the start changes no word
        ("re\ufe0fset", "reset"),  # a variation selector inside a word
        ("na\u200dive", "naive"),  # ZWJ between letters
        ("de\u034fbug", "debug"),  # combining grapheme joiner
        ("\u2066isolated\u2069 word", "isolated word"),  # isolates: tokens to unicode61
        ("é\u200bclair", "éclair"),
        ("12\u200b345", "12345"),
        # Between emoji, beside a space or punctuation: no word changes, kept as written.
        (FAMILY + " family", FAMILY + " family"),
        (HEART + " love", HEART + " love"),
        ("word\u200b word", "word\u200b word"),
        ("a.\u200bb", "a.\u200bb"),
        ("plain text", "plain text"),
        ("", ""),
    ],
)
def test_invisible_characters_inside_a_word_are_dropped(text: str, expected: str) -> None:
    assert without_invisible(text) == expected
    assert without_invisible(expected) == expected  # once is enough
    # The index's form and the team store's words follow the same rule.
    assert word_text(text) == word_text(expected)
    assert fts_text(text) == fts_text(expected)


def test_a_zero_width_non_joiner_stays_a_word_boundary() -> None:
    """U+200C is spelling in Persian (and other Arabic-script and Indic writing): it
    stands between the parts of a word written together, ``می\u200cخواهم`` ("I
    want"), where unicode61 cuts it. Dropped as an invisible stray, the parts became one
    word that none of the ways a Persian reader types it found (the verb alone, or the
    parts with a space between them). Helper h611 found the regression of b0696f2."""
    persian = "من می\u200cخواهم"
    assert without_invisible(persian) == persian
    # the words as FTS5's tokenizer cuts them
    words = separators_as_spaces(fts_text(persian)).split()
    assert "خواهم" in words and "می" in words, words
    # a zero width space between the same letters is still no part of a word
    assert separators_as_spaces(fts_text("می\u200bخواهم")).split() == ["میخواهم"]


def test_cjk_and_thai_keep_their_zero_width_spaces() -> None:
    # Thai writes ZWSP between words and both scripts are one token per character:
    # the ZWSP stands beside a space in the stored form and is kept, so the snippet
    # shows the text as written.
    for text in ("東京\u200b大阪", "สวัสดี\u200bครับ"):
        assert "\u200b" in fts_text(text)


def test_typo_words_read_a_word_with_a_soft_hyphen_as_one() -> None:
    assert typo_words("Connec\u00adtion pool") == ["connection", "pool"]


def _index(tmp_path: Path, texts: list[tuple[str, str]]) -> object:
    tree = ConfigTree(tmp_path / "claude")
    for i, (where, text) in enumerate(texts):
        session_holding(tree, f"/w/p{i}", where, text)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    return db


@pytest.mark.parametrize(
    ("where", "text", "query", "snippet"),
    [
        ("reply", "the data\u200bbase is down", "database", "the [database] is down"),
        ("prompt", "check the connec\u00adtion pool", "connection", "check the [connection] pool"),
        ("reply", "the database is down", "data\u200bbase", "the [database] is down"),
        ("reply", "the data\u200bbase is down", "data\u00adbase", "the [database] is down"),
        # The last word typed so far is a prefix, with a soft hyphen or without one.
        ("reply", "the data\u200bbase is down", "the data\u00adbas", "[the] [database] is down"),
        ("title", "Fix connec\u00adtion leak", "connection", "Fix [connection] leak"),
        # Nothing inside a word: the text is shown as written, emoji sequences whole.
        ("reply", FAMILY + " family photo", "family", FAMILY + " [family] photo"),
        ("reply", HEART + " quokka", "quokka", HEART + " [quokka]"),
    ],
)
def test_search_finds_a_word_written_with_invisible_characters(
    tmp_path: Path, where: str, text: str, query: str, snippet: str
) -> None:
    db = _index(tmp_path, [(where, text)])
    try:
        outcome = run_search(db, query, ALL)
        assert outcome.matched
        assert [r["snippet"] for r in outcome.rows] == [snippet]
        if where == "title":  # the name itself is the text as written
            assert outcome.rows[0]["title"] == text
    finally:
        db.close()  # type: ignore[attr-defined]


def test_the_typed_prefix_and_the_typo_fallback_read_them_so(tmp_path: Path) -> None:
    db = _index(tmp_path, [("title", "Connec\u00adtion leak")])
    try:
        # The picker's one or two letters, from the word's start: "co" and not "ti".
        typed = run_search(db, "co", ALL, typing=True).rows
        assert [r["title"] for r in typed] == ["Connec\u00adtion leak"]
        assert run_search(db, "ti", ALL, typing=True).rows == []
        # The typo fallback over titles (connectoin: two letters swapped).
        fuzzy = run_search(db, "connectoin", ALL)
        assert fuzzy.kind == FUZZY
        assert [r["title"] for r in fuzzy.rows] == ["Connec\u00adtion leak"]
        # A word typed with a soft hyphen of its own, and a --raw query.
        assert run_search(db, "connec\u00adtion", ALL).matched
        assert run_search(db, "connec\u200btion", ALL, raw=True).matched
    finally:
        db.close()  # type: ignore[attr-defined]
