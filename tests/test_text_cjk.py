"""The cheap CJK pre-test (indexer/text.py ``may_hold_cjk``): it may say yes where there
is no CJK character (then the exact pattern decides), never no where there is one."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiondex.indexer.text import _CJK, cjk_runs, fts_text, is_cjk, may_hold_cjk
from sessiondex.query.snippets import CLOSE, OPEN, _take_marks, original_text

CASES = {
    "empty": ("", False),
    "ascii": ("fix the flaky test", False),
    "latin accents": ("café crème déjà vu", False),
    "cyrillic": ("исправь ошибку в тесте", False),
    "greek": ("διόρθωσε το σφάλμα", False),
    "arabic": ("أصلح الخطأ", False),
    "devanagari": ("त्रुटि ठीक करें", False),
    "thai (written without spaces: spaced as CJK)": ("แก้ไขข้อผิดพลาด", True),
    "lao": ("ພາສາລາວ", True),
    "myanmar": ("မြန်မာ", True),
    "khmer": ("ភាសាខ្មែរ", True),
    "georgian (after Myanmar, spaced words)": ("ქართული", False),
    "tamil (before Thai, spaced words)": ("தமிழ்", False),
    "hiragana": ("テストを直して", True),
    "chinese": ("修复测试", True),
    "hangul": ("테스트 수정", True),
    "half-width katakana": ("ﾃｽﾄ", True),
    "compatibility ideograph": ("\uf900", True),
    "emoji": ("deploy 🚀", False),
    # every search snippet carries snippet()'s markers (U+FDD0/U+FDD1) and often "…"
    "snippet markers and ellipsis": ("\ufdd0thornwhistle\ufdd1 in the…", False),
    "full-width latin and ideographic space (yes: the pattern decides)": ("ｆｏｏ\u3000bar", True),
    "lone surrogate (yes: the pattern decides)": ("bad \ud800 escape", True),
}


@pytest.mark.parametrize(("text", "expected"), CASES.values(), ids=list(CASES))
def test_may_hold_cjk(text: str, expected: bool) -> None:
    assert may_hold_cjk(text) is expected
    if cjk_runs().search(text):
        assert may_hold_cjk(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8")))
def test_never_no_where_there_is_cjk(text: str) -> None:
    if cjk_runs().search(text):
        assert may_hold_cjk(text)


@pytest.mark.parametrize("text", ["修复测试 in café", "ошибка 修复", "テスト ok 🚀"])
def test_cjk_spacing_still_round_trips(text: str) -> None:
    stored = fts_text(text)
    assert stored != text  # spaced
    assert original_text(stored) == text


def test_every_character_next_to_a_cjk_range_is_told_apart() -> None:
    # The pre-test reads lead bytes (and the second byte after 0xEF), so the characters
    # just outside each range are where it could go wrong in either direction.
    edges = [ord(c) for pair in _CJK.split("-") for c in pair]
    for code in {e + delta for e in edges for delta in (-1, 0, 1)}:
        char = chr(code)
        if cjk_runs().search(char):
            assert may_hold_cjk(char), hex(code)


def test_every_cjk_range_edge_is_seen() -> None:
    edges = [c for pair in _CJK.split("-") for c in pair]  # "a-bc-d..." → endpoints
    for char in edges:
        if cjk_runs().search(char):
            assert may_hold_cjk(char), hex(ord(char))


WORDS = {
    "diacritics folded": ("Блог 🚀 café résumé", "блог cafe resume"),
    "hyphen and path split": ("/home/dev/payments-and-billing", "home dev payments and billing"),
    "underscore and e-mail split": ("snake_case a.b@x.com", "snake case a b x com"),
    "CJK one character a word": ("修复 swiftui 测试", "修 复 swiftui 测 试"),
    "long token cut as stored": ("Z" * 100, "z" * 32),
    "upper case lowered": ("ÅNGSTRÖM ΣΟΦΙΑ", "angstrom σοφια"),
    # where unicode61's tables are not Python's: a precomposed й is kept (и + U+0306
    # written apart is и), a strike-through mark cuts a word, ß is not ss
    "the tokenizer's own folds": ("новый нови\u0306 straße", "новый нови straße"),
    "marks that cut a word": ("x\u0336ERROR a\u0332b", "x error a b"),
}


@pytest.mark.parametrize(("text", "words"), WORDS.values(), ids=list(WORDS))
def test_word_text_is_what_unicode61_tokenizes(text: str, words: str) -> None:
    from sessiondex.indexer.text import word_text

    assert word_text(text).split() == words.split()


def test_word_text_agrees_with_fts5_on_the_words(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The words FTS5 itself finds (fts5vocab over a unicode61 remove_diacritics 2 table)
    are word_text's words, for each text of the table above."""
    import sqlite3

    from sessiondex.indexer.text import word_text

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    for text, _ in WORDS.values():
        conn.execute("DELETE FROM t")
        conn.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", [fts_text(text)])
        tokens = [r[0] for r in conn.execute("SELECT term FROM v ORDER BY offset")]
        assert tokens == word_text(text).split(), text


@pytest.mark.parametrize("text", [t for t, _ in WORDS.values()], ids=list(WORDS))
def test_stored_words_of_the_stored_form_are_the_words(text: str) -> None:
    from sessiondex.indexer.text import stored_words, word_text

    assert stored_words(fts_text(text)).split() == word_text(text).split()


def test_is_cjk_is_the_class_for_every_bmp_character() -> None:
    class_pattern = re.compile(f"[{_CJK}]")
    for code in range(0x10000):
        char = chr(code)
        assert is_cjk(char) is (class_pattern.fullmatch(char) is not None), hex(code)


def _reference_original_text(stored: str) -> str:
    """The snippet inversion as one pattern over the class (what original_text did
    before it walked the characters): the oracle for the walk."""
    text, marks = _take_marks(stored)
    keep = [True] * len(text)
    for match in re.finditer(f"[{_CJK}](?: [{_CJK}])*", text):
        start, end = match.span()
        for i in range(start + 1, end, 2):
            keep[i] = False
        if start > 0 and text[start - 1] == " ":
            keep[start - 1] = False
        if end < len(text) and text[end] == " ":
            keep[end] = False
    out: list[str] = []
    for i, ch in enumerate(text):
        out.extend(marks.get(i, ()))
        if keep[i]:
            out.append(ch)
    out.extend(marks.get(len(text), ()))
    return "".join(out)


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=["日", "本", "ア", "한", " ", "a", "é", "\n", OPEN, CLOSE], max_size=40),
    st.integers(0, 40),
    st.integers(0, 40),
)
def test_snippet_inversion_walk_matches_the_pattern(text: str, cut: int, length: int) -> None:
    # Snippets are cuts of the stored form with markers around matches: any slice.
    stored = fts_text(text)[cut : cut + length]
    assert original_text(stored) == _reference_original_text(stored)


SPACING = {
    "ascii": ("fix the flaky test", "fix the flaky test"),
    "chinese run": ("修复测试", " 修 复 测 试 "),
    "chinese in latin": ("fix 修复 now", "fix  修 复  now"),
    "run at both ends": ("東京x大阪", " 東 京 x 大 阪 "),
    "thai": ("แก้ไข", " แ ก ้ ไ ข "),
    "hangul with space": ("테스트 수정", " 테 스 트   수 정 "),
    "half-width katakana": ("ﾃｽﾄ!", " ﾃ ｽ ﾄ !"),
    "emoji between ideographs": ("日🚀本", " 日 🚀 本 "),
    "ideograph beyond the BMP": (
        "a\U00020000\U000323afb\U000323b0",
        "a \U00020000 \U000323af b\U000323b0",
    ),
    "lone surrogate next to a run": ("\ud800日\udfff", "\ud800 日 \udfff"),
    "combining mark after an ideograph": ("日\u0301本", " 日 \u0301 本 "),
    "range edges": (
        "\u0dff\u0e00\u0eff\u0f00\u109f\u10a0",
        "\u0dff \u0e00 \u0eff \u0f00 \u109f \u10a0",
    ),
    "full-width latin and ideographic space": ("ｆｏｏ\u3000bar", "ｆｏｏ\u3000bar"),
    "hangul end and surrogate start": ("\ud7af\ud7b0\ud800", " \ud7af \ud7b0\ud800"),
}


@pytest.mark.parametrize(("text", "spaced"), SPACING.values(), ids=list(SPACING))
def test_cjk_spacing_walked_and_by_the_pattern(text: str, spaced: str) -> None:
    """A process's first texts are spaced by walking their characters (no 1-2 ms compile
    of the class); the walk and the pattern give the same text."""
    from sessiondex.indexer import text as module

    assert cjk_runs().sub(module._space_run, text) == spaced
    walked = module._walked
    cached = module.cjk_runs.cache_info().currsize
    module.cjk_runs.cache_clear()
    try:
        module._walked = 0
        assert module._space_cjk(text) == spaced  # walked
        assert not module.cjk_runs.cache_info().currsize
        module._walked = module._WALK_BUDGET
        assert module._space_cjk(text) == spaced  # by the pattern
    finally:
        module._walked = walked
        if not cached:
            module.cjk_runs.cache_clear()


_NEAR_EDGES = sorted({ord(c) + d for pair in _CJK.split("-") for c in pair for d in (-1, 0, 1)})


@settings(max_examples=500, deadline=None)
@given(
    st.text(
        alphabet=st.one_of(
            st.characters(codec="utf-8"),
            st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),  # lone surrogates
            st.sampled_from([chr(c) for c in _NEAR_EDGES] + [" ", "a", "\u0301", "🚀"]),
        ),
        max_size=80,
    )
)
def test_cjk_walk_matches_the_pattern(text: str) -> None:
    from sessiondex.indexer import text as module

    walked = module._walked
    try:
        module.cjk_runs.cache_clear()
        module._walked = 0
        by_walking = module._space_cjk(text)  # before the class is compiled
        assert by_walking == cjk_runs().sub(module._space_run, text)
    finally:
        module._walked = walked
