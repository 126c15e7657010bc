"""When a typed word is a typo of a word of a title: the one rule that search's typo
fallback (:func:`sessiondex.query.search.fuzzy_search`) and the suggestions of a name
not found (:func:`sessiondex.query.resolve.resolve`) share.

A word is a typo of another when the optimal-string-alignment distance between them
(an inserted, deleted or changed letter, or two neighbours swapped, each one edit) is
within :func:`allowed_edits` of the shorter of the two. Similarity ratios
(``fuzz.ratio`` ≥ 70, ``WRatio``) offered unrelated titles: ``looping`` scored 73 against
``long`` (its letters in order), ``station`` 71 against ``pagination``, and WRatio
matched ``bug`` inside "Debug logging" (any short query against a longer text)."""

from __future__ import annotations

from sessiondex.indexer.text import is_cjk, may_hold_cjk, without_invisible
from sessiondex.indexer.unicode61 import fold


def allowed_edits(length: int) -> int:
    """How many edits a word of ``length`` letters may be from the word it is a typo of:
    none up to 3 letters (one edit makes a three-letter word most others: ``api``,
    ``app``, ``apt``), one up to 9, two from 10 (``authentcaton``). One edit in an
    eight-letter word and not two: ``transfer`` is two from ``transform``."""
    return 0 if length <= 3 else 1 if length <= 9 else 2


def typo_words(text: str) -> list[str]:
    """The words of ``text`` as the full-text index compares them (case and diacritics
    folded, punctuation a separator), so ``Strpie-Webhok!`` is ``strpie webhok``. A
    text holding CJK is only lower-cased and cut at punctuation (rapidfuzz's
    ``default_process``): the index keeps those characters as they are, and folding
    5,000 sessions' CJK prompts character by character took 0.7 s, this 0.07 s (2 cores
    at load 3). Either way an invisible character inside a word is no part of it, as
    in the index (``Connec\\u00adtion`` is ``connection``)."""
    if text.isascii():
        return fold(text).split()
    text = without_invisible(text)
    if not may_hold_cjk(text):
        return fold(text).split()
    from rapidfuzz import utils  # only the typo fallback needs it (start-up)

    return utils.default_process(text).split()


def typo_scores(query: str, texts: list[str]) -> dict[int, float]:
    """Index of each text in which every word of ``query`` is a word or a typo of one →
    its score, 0-100: the mean over the query's words of the best one's similarity
    (100 for the word itself). A text holding only some of the words is no match, as a
    session holding only some is none for the full-text search."""
    query_words = list(dict.fromkeys(typo_words(query)))
    if not query_words:
        return {}
    holders: dict[str, list[int]] = {}
    for index, text in enumerate(texts):
        for word in set(typo_words(text)):
            holders.setdefault(word, []).append(index)
    words = list(holders)
    totals: dict[int, float] = {}
    counts: dict[int, int] = {}
    for query_word in query_words:
        best_here: dict[int, float] = {}
        for word, similarity in _close_words(query_word, words):
            for index in holders[word]:
                best_here[index] = max(best_here.get(index, 0.0), similarity)
        for index, score in best_here.items():
            totals[index] = totals.get(index, 0.0) + score
            counts[index] = counts.get(index, 0) + 1
    return {
        index: total / len(query_words)
        for index, total in totals.items()
        if counts[index] == len(query_words)
    }


def _close_words(query_word: str, words: list[str]) -> list[tuple[str, float]]:
    """The words of ``words`` that ``query_word`` is or is a typo of, each with its
    similarity (0-100). A word holding CJK is compared with every stretch of a word of
    its length (``fuzz.partial_ratio``), since those scripts run words together and the
    full-text index matches their characters anywhere: ``データベス`` is a typo in
    "データベース接続エラー", one word to the tokenizer's spaces."""
    from rapidfuzz import fuzz, process  # only the typo fallback needs it (start-up)
    from rapidfuzz.distance import OSA

    length = len(query_word)
    edits = allowed_edits(length)
    if may_hold_cjk(query_word) and any(is_cjk(c) for c in query_word):
        # One changed or swapped character is two edits of partial_ratio's (a deletion
        # and an insertion) over twice the length: 100 * (1 - edits / length).
        cutoff = 100.0 * (1.0 - edits / length) - 1e-9
        return [
            (word, score)
            for word, score, _ in process.extract(
                query_word, words, scorer=fuzz.partial_ratio, score_cutoff=cutoff, limit=None
            )
            if len(word) >= length - edits  # not a shorter word inside the query
        ]
    return [
        (word, 100.0 * (1.0 - found / max(length, len(word))))
        for word, found, _ in process.extract(
            query_word, words, scorer=OSA.distance, score_cutoff=edits, limit=None
        )
        if found <= allowed_edits(min(length, len(word)))
    ]
