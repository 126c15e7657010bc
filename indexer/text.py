"""The one transformation between human text and the FTS5 index.

FTS5's ``unicode61`` tokenizer splits on spaces and punctuation, so a run of Chinese or
Japanese characters becomes a single token and a word inside it can never match. We put
a space around every CJK character on the way in and on the way out (queries), so each
character is a token and a CJK word becomes a phrase of adjacent tokens: findable
anywhere, with no extra tokenizer to install.
"""

from __future__ import annotations

import re
from functools import cache

# Hiragana, katakana, CJK ideographs (and extension A), Hangul syllables, compatibility
# ideographs, half-width katakana.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"


@cache
def _run_pattern() -> re.Pattern[str]:
    """Compiled on first use: compiling at import would cost every command start-up."""
    return re.compile(f"[{_CJK}]+")


@cache
def _gap_pattern() -> re.Pattern[str]:
    return re.compile(f"(?<=[{_CJK}]) (?=[{_CJK}])")


def fts_text(text: str) -> str:
    """Text as stored for FTS: CJK characters become separate tokens."""
    if text.isascii():
        return text
    runs = _run_pattern()
    if runs.search(text) is None:
        return text
    return runs.sub(_space_run, text)


def _space_run(match: re.Match[str]) -> str:
    return " " + " ".join(match.group(0)) + " "


def unspace_cjk(text: str) -> str:
    """Undo :func:`fts_text` for display (snippets)."""
    if text.isascii():
        return text
    return _gap_pattern().sub("", text.replace("  ", " "))
