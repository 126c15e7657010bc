"""Tag sanitising, byte-for-byte the rule of the official ``claude-agent-sdk``.

Claude Code and the Python SDK read the same ``{"type":"tag","tag":…}`` records that
``sessiondex tag`` appends (docs/mutations.md#tag-and-untag). If we stored a tag the SDK would have
sanitised differently, ``sessiondex`` and the SDK would show two different tags for the
same session, and ``tag_session`` round-trips would not compare equal. So this module
copies ``claude_agent_sdk._internal.session_mutations._sanitize_unicode`` followed by
``.strip()`` (docs/mutations.md#tag-sanitizing) and deliberately adds nothing: no length
limit, no case folding, no whitespace collapsing, and control characters such as TAB
and LF are kept, exactly as the SDK keeps them.

The stripped characters are the ones usable to hide or reorder text in a terminal
(zero-width and bidi controls, BOM) plus private-use and unassigned code points, whose
rendering nobody can predict. ``Cn`` depends on the Unicode database of the running
Python, as it does for the SDK.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

#: Passes the SDK makes at most before giving up on reaching a fixed point.
MAX_PASSES = 10

# Explicit ranges, mostly redundant with the category test but kept because the SDK
# (and the TypeScript CLI it mirrors) applies them too; keeping both makes the rule
# identical even on a Python whose Unicode database differs.
_STRIP_CATEGORIES = frozenset({"Cf", "Co", "Cn"})
# Control characters and the line and paragraph separators: a space in a name.
_LINE_BREAKING = frozenset({"Cc", "Zl", "Zp"})


@cache
def _strip_re() -> re.Pattern[str]:
    # Compiled on first use: its class spans the private-use area, whose 6,400 code
    # points Python's regex compiler walks one by one (~0.5 ms), and every `list`
    # imports this module (query/resolve.py, for the width of its IDs) without a name
    # or tag to clean.
    return re.compile("[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ue000-\uf8ff]")


def _sanitize_once(value: str) -> str:
    """One SDK pass: NFKC, drop Cf/Co/Cn, drop the explicit ranges."""
    value = unicodedata.normalize("NFKC", value)
    value = "".join(c for c in value if unicodedata.category(c) not in _STRIP_CATEGORIES)
    return _strip_re().sub("", value)


def sanitize_unicode(value: str) -> str:
    """Apply the SDK pass until nothing changes (at most :data:`MAX_PASSES` times).

    Repeating matters because NFKC can produce a character that a later pass removes,
    and removing a character can create a new NFKC composition.
    """
    current = value
    for _ in range(MAX_PASSES):
        previous = current
        current = _sanitize_once(current)
        if current == previous:
            break
    return current


def sanitize_tag(tag: str) -> str:
    """Return ``tag`` as the SDK would store it: sanitised, then whitespace-stripped.

    Returns ``""`` when nothing is left. The caller decides what that means: the SDK
    raises ``ValueError("tag must be non-empty (use None to clear)")`` for a non-empty
    input that sanitises to nothing, while an explicit clear writes ``""``.
    """
    return sanitize_unicode(tag).strip()


# Characters that draw nothing although Unicode does not call them whitespace (Hangul
# fillers, the braille blank): a name made of them looks empty in the picker.
_BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# The default-ignorable marks (Mn, so neither the SDK's sanitizing nor a format-character
# test removes them): the combining grapheme joiner, the Khmer inherent vowels, the
# Mongolian and the standard variation selectors. Each only changes how the character
# before it is drawn; with nothing else, a name of them showed as empty.
_IGNORABLE_MARKS = re.compile(
    "[\u034f\u17b4\u17b5\u180b-\u180d\u180f\ufe00-\ufe0f\U000e0100-\U000e01ef]"
)


def _shows_nothing(text: str) -> bool:
    return all(
        ch.isspace()
        or ch in _BLANKS
        or _IGNORABLE_MARKS.match(ch)
        or unicodedata.category(ch) in ("Cc", "Cf")
        for ch in text
    )


# Format characters a name keeps: the joiners that emoji sequences (👨‍👩‍👧) and
# scripts such as Persian and the Indic ones are written with.
_NAME_JOINERS = frozenset("\u200c\u200d")


def clean_name(value: str) -> str:
    """A session name (``rename``, ``fork --title``) as we store it, or ``""`` when
    nothing visible is left.

    As typed, stripped, without what hides or reorders text: format characters (bidi
    controls, zero-width space, BOM, word joiner, tag characters) except the joiners,
    and private-use and unassigned code points, as for a tag. Unlike a tag, no NFKC:
    it changes what a name shows (``①`` → ``1``, ``ｶﾀｶﾅ`` → ``カタカナ``, a family emoji
    → three people), and Claude Code finds a session by its name typed again, compared
    exactly (case aside), as the SDK's ``rename_session`` stores it. A control
    character (a tab, a newline, an escape) or a line or paragraph separator is a space: a name is one line wherever it
    is shown, and the name shown must be the name that, typed again, resolves.
    """
    kept = "".join(
        " " if unicodedata.category(c) in _LINE_BREAKING else c
        for c in value
        if c in _NAME_JOINERS or unicodedata.category(c) not in _STRIP_CATEGORIES
    ).strip()
    return "" if _shows_nothing(kept) else kept


def clean_label(value: str) -> str:
    """A session name or tag as we store it, or ``""`` when nothing visible is left.

    The one validation for everything a user names a session with (``rename``,
    ``tag``, ``fork --title``): the SDK's tag sanitising (so invisible and bidi
    characters never reach a name either, and a tag is stored as the SDK stores it),
    stripped; text made only of whitespace, blank-looking letters or control
    characters counts as empty. What is left is stored as is (control characters
    inside a name are kept, as the SDK keeps them in tags).
    """
    clean = sanitize_tag(value)
    return "" if _shows_nothing(clean) else clean


def clean_tag(value: str) -> str:
    """:func:`clean_label`, without leading ``#``: the picker shows a tag as ``#TAG``, so
    ``tag X "#hash"`` means the tag ``hash`` (storing ``#hash`` would show ``##hash``)."""
    return clean_label(clean_label(value).lstrip("#"))
