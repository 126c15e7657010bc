"""The one transformation between human text and the FTS5 index.

FTS5's ``unicode61`` tokenizer splits on spaces and punctuation, so a run of Chinese or
Japanese characters becomes a single token and a word inside it can never match. We put
a space around every CJK character on the way in and on the way out (queries), so each
character is a token and a CJK word becomes a phrase of adjacent tokens: findable
anywhere, with no extra tokenizer to install.
"""

from __future__ import annotations

import re

_CJK_RE = re.compile(
    "([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f])"
)
_CJK_RUN_RE = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+"
)
_SPACED_CJK_RE = re.compile(
    "(?<=[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]) "
    "(?=[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f])"
)


def fts_text(text: str) -> str:
    """Text as stored for FTS: CJK characters become separate tokens."""
    if text.isascii() or _CJK_RE.search(text) is None:
        return text
    return _CJK_RUN_RE.sub(_space_run, text)


def _space_run(match: re.Match[str]) -> str:
    return " " + " ".join(match.group(0)) + " "


def unspace_cjk(text: str) -> str:
    """Undo :func:`fts_text` for display (snippets)."""
    if text.isascii():
        return text
    return _SPACED_CJK_RE.sub("", text.replace("  ", " "))
