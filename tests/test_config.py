"""Which config dirs are indexed."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiondex.transcripts.config import config_dirs


@pytest.mark.parametrize(
    ("explicit", "env", "expected"),
    [
        (["/a", "/b"], {"CLAUDE_CONFIG_DIR": "/env"}, ["/a", "/b"]),
        (["/a", "/a"], {}, ["/a"]),
        ([], {"CLAUDE_CONFIG_DIR": "/env"}, ["/env"]),
        ([], {"CLAUDE_CONFIG_DIR": "/one, /two,,"}, ["/one", "/two"]),
        ([], {"CLAUDE_CONFIG_DIR": "", "HOME": "/home/u"}, ["/home/u/.claude"]),
        ([], {"HOME": "/home/u"}, ["/home/u/.claude"]),
    ],
)
def test_config_dir_precedence(
    explicit: list[str], env: dict[str, str], expected: list[str]
) -> None:
    assert config_dirs(explicit, env) == [Path(p) for p in expected]
