"""The shared helpers: record access (transcripts/records.py) and ``human_size``.

Each exists once, so the chain builder, the renderer and the indexer cannot drift apart
on what a record's content or response id is; the last test keeps it that way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sessiondex.cli.output import human_size as cli_human_size
from sessiondex.render.conversation import fold
from sessiondex.render.sizes import human_size
from sessiondex.transcripts.records import (
    block_ids,
    content_blocks,
    message_content,
    response_id,
)

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ["transcripts", "indexer", "query", "actions", "render", "cli", "package"]

CALL = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}


@pytest.mark.parametrize(
    ("record", "content", "blocks"),
    [
        ({"type": "user", "message": {"content": "hi"}}, "hi", []),
        ({"type": "user", "message": {"content": [CALL, "x", 3]}}, [CALL, "x", 3], [CALL]),
        ({"type": "user", "message": "not an object"}, None, []),
        ({"type": "user", "message": None}, None, []),
        ({"type": "user"}, None, []),
        ({"type": "user", "message": {"content": {"type": "text"}}}, {"type": "text"}, []),
    ],
    ids=["str", "list", "message-str", "message-null", "no-message", "content-object"],
)
def test_message_content_and_blocks(
    record: dict[str, Any], content: Any, blocks: list[Any]
) -> None:
    assert message_content(record) == content
    assert content_blocks(record) == blocks


@pytest.mark.parametrize(
    ("record", "kind", "key", "expected"),
    [
        ({"message": {"content": [CALL, RESULT]}}, "tool_use", "id", ["toolu_1"]),
        ({"message": {"content": [CALL, RESULT]}}, "tool_result", "tool_use_id", ["toolu_1"]),
        ({"message": {"content": [{"type": "tool_use", "id": 7}]}}, "tool_use", "id", []),
        ({"message": {"content": "toolu_1"}}, "tool_use", "id", []),
    ],
    ids=["calls", "answers", "non-string-id", "str-content"],
)
def test_block_ids(record: dict[str, Any], kind: str, key: str, expected: list[str]) -> None:
    assert block_ids(record, kind, key) == expected


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"type": "assistant", "message": {"id": "msg_1"}}, "msg_1"),
        ({"type": "assistant", "message": {"id": ""}}, None),
        ({"type": "assistant", "message": {"id": 5}}, None),
        ({"type": "assistant", "message": "msg_1"}, None),
        ({"type": "user", "message": {"id": "msg_1"}}, None),
    ],
    ids=["assistant", "empty", "non-string", "message-str", "user"],
)
def test_response_id(record: dict[str, Any], expected: str | None) -> None:
    assert response_id(record) == expected


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (None, ""),
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KB"),
        (1536, "1.5 KB"),
        (1024**2, "1.0 MB"),
        (5 * 1024**3, "5.0 GB"),
        (3 * 1024**4, "3072.0 GB"),
    ],
)
def test_human_size(size: int | None, text: str) -> None:
    assert human_size(size) == text
    assert cli_human_size is human_size  # the CLI's size column is the same function


def test_fold_note_uses_human_size() -> None:
    text = "x" * 2000 + "\n" + "y\n" * 100
    _shown, note = fold(text)
    assert note is not None and note.endswith(human_size(len(text.encode())))


@pytest.mark.parametrize(
    ("pattern", "home"),
    [
        (r'\.get\("content"\) if isinstance\(', "transcripts/records.py"),
        (r"^def human_size\(", "render/sizes.py"),
        (r'\.get\("id"\) if isinstance\(message, dict\)', "transcripts/records.py"),
    ],
    ids=["message-content", "human-size", "response-id"],
)
def test_helper_defined_once(pattern: str, home: str) -> None:
    regex = re.compile(pattern, re.MULTILINE)
    hits = [
        f"{path.relative_to(ROOT)}: {len(regex.findall(path.read_text(encoding='utf-8')))}"
        for folder in LIBRARY
        for path in sorted((ROOT / folder).rglob("*.py"))
        if regex.search(path.read_text(encoding="utf-8"))
    ]
    assert hits == [f"{home}: 1"]
