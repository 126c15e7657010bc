"""Tag sanitising must equal the SDK's, since both read the same tag records."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiondex.transcripts.tags import sanitize_tag, sanitize_unicode

CASES = [
    # Examples from docs/mutations.md#tag-sanitizing
    ("  \ufb01x\u200b-it ", "fix-it"),  # ligature NFKC-expanded, ZWSP dropped, stripped
    ("\uff26\uff35\uff2c\uff2c", "FULL"),  # full-width letters
    ("line\nbreak", "line\nbreak"),  # Cc kept, internal whitespace kept
    ("a\U000f0000b", "ab"),  # supplementary private use (Co)
    ("ship it \U0001f680", "ship it \U0001f680"),  # emoji kept
    ("\u200b\u200c\u200d\u200e\u200f\u202a\u202e\u2066\u2069\ufeff\u00ad\u2060", ""),
    # More of the same rule
    ("tab\there", "tab\there"),
    ("Release", "Release"),  # no case folding
    ("a   b", "a   b"),  # no whitespace collapsing
    ("\ue000x\uf8ff", "x"),  # BMP private use
    ("x\U000e0001y", "xy"),  # language tag (Cf)
    ("x\u0378y", "xy"),  # unassigned (Cn)
    ("\u2460", "1"),  # circled digit → 1
    ("cafe\u0301", "caf\u00e9"),  # NFKC composes
    ("   ", ""),
    ("", ""),
    ("x" * 5000, "x" * 5000),  # no length limit
]


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_sanitize_tag(raw: str, expected: str) -> None:
    assert sanitize_tag(raw) == expected


def _sdk_sanitize() -> Callable[[str], str] | None:
    """The SDK's own function, so the comparison follows the installed version."""
    try:
        from claude_agent_sdk._internal.session_mutations import _sanitize_unicode
    except ImportError:  # pragma: no cover - the SDK is a test dependency
        return None
    sanitize: Callable[[str], str] = _sanitize_unicode
    return sanitize


@pytest.mark.parametrize(("raw", "expected"), CASES)
def test_matches_installed_sdk_on_table(raw: str, expected: str) -> None:
    sdk = _sdk_sanitize()
    if sdk is None:
        pytest.skip("claude-agent-sdk not installed")
    assert sdk(raw).strip() == sanitize_tag(raw) == expected


@settings(max_examples=500)
@given(st.text())
def test_matches_installed_sdk_on_any_text(raw: str) -> None:
    sdk = _sdk_sanitize()
    if sdk is None:
        pytest.skip("claude-agent-sdk not installed")
    assert sanitize_unicode(raw) == sdk(raw)
    assert sanitize_tag(raw) == sdk(raw).strip()
