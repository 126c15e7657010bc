"""Typed views of transcript records, and the first-prompt rule.

Only top-level fields of the right type are read: a ``"summary"`` key inside a tool input
is not a summary, and ``cwd: 5`` is no cwd. Unknown record types and fields are ignored.
The first-prompt filter is defined here and nowhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from typing import Any

# Records that carry the uuid/parentUuid chain.
CHAIN_TYPES = frozenset({"user", "assistant", "progress", "system", "attachment"})
MESSAGE_TYPES = frozenset({"user", "assistant"})
# Entry points of ``claude -p`` and the SDKs: hidden from the picker and ``--continue``.
PRINT_MODE_ENTRYPOINTS = frozenset({"sdk-cli", "sdk-ts", "sdk-py"})
DESKTOP_ENTRYPOINTS = frozenset({"claude-desktop", "claude-desktop-3p", "local-agent"})

FIRST_PROMPT_DISPLAY_CHARS = 200

_SKIP_PREFIXES = (
    "<local-command-stdout>",
    "<session-start-hook>",
    "<tick>",
    "<goal>",
    "[Request interrupted by user",
)


@cache
def _command_re() -> re.Pattern[str]:
    """Compiled on first use (only indexing folds prompts; start-up time)."""
    return re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)


@cache
def _whole_ide_re() -> re.Pattern[str]:
    return re.compile(
        r"\s*(<ide_opened_file>.*</ide_opened_file>|<ide_selection>.*</ide_selection>)\s*\Z",
        re.DOTALL,
    )


def get_str(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) else None


def is_chain_entry(record: dict[str, Any]) -> bool:
    kind = record.get("type")  # may be any JSON value: only a str can be a chain type
    return isinstance(kind, str) and kind in CHAIN_TYPES and isinstance(record.get("uuid"), str)


def parse_timestamp(value: object) -> datetime | None:
    """An ISO-8601 timestamp as aware UTC; a naive one is taken as UTC (not local time,
    unlike the SDK, so answers do not depend on the machine's timezone)."""
    if not isinstance(value, str) or not value:
        return None
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    try:
        return stamp.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00+01:00 or 9999-12-31T23:59-01:00: no UTC year
        return None


def timestamp_ms(record: dict[str, Any]) -> int | None:
    """The record's top-level ``timestamp`` in epoch milliseconds, if it parses."""
    stamp = parse_timestamp(record.get("timestamp"))
    return None if stamp is None else int(stamp.timestamp() * 1000)


def message_content(record: dict[str, Any]) -> Any:
    """``record["message"]["content"]`` when ``message`` is an object, else None: a str,
    a list of blocks, or whatever a writer put there. Every reader of message content
    starts here, so a record with ``"message": "text"`` or ``null`` is handled once."""
    message = record.get("message")
    return message.get("content") if isinstance(message, dict) else None


def content_blocks(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The object blocks of a list content (other items skipped); ``[]`` for str content."""
    content = message_content(record)
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def block_ids(record: dict[str, Any], block_type: str, key: str) -> list[str]:
    """The string ``key`` of each ``block_type`` block: ``("tool_use", "id")`` gives the
    calls an assistant record makes, ``("tool_result", "tool_use_id")`` the calls a user
    record answers."""
    return [
        b[key]
        for b in content_blocks(record)
        if b.get("type") == block_type and isinstance(b.get(key), str)
    ]


def response_id(record: dict[str, Any]) -> str | None:
    """The API response an assistant record belongs to (``message.id``; non-empty).

    The CLI writes one line per content block of a response, all with the same id, so
    this is what groups parallel tool calls (chain recovery) and what joins the lines
    back into one message for display."""
    if record.get("type") != "assistant":
        return None
    message = record.get("message")
    value = message.get("id") if isinstance(message, dict) else None
    return value if isinstance(value, str) and value else None


def is_tool_result(record: dict[str, Any]) -> bool:
    return any(b.get("type") == "tool_result" for b in content_blocks(record))


def content_texts(record: dict[str, Any]) -> tuple[list[str], list[str]]:
    """One walk of a user or assistant record's content: ``(text, tool)`` where text is
    what a person or the model wrote and tool is tool inputs (their string values) and
    tool results. The indexer needs both for every record, so they come together."""
    content = message_content(record)
    if isinstance(content, str):
        return [content], []
    texts: list[str] = []
    tools: list[str] = []
    if not isinstance(content, list):
        return texts, tools
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                texts.append(text)
        elif kind == "tool_result":
            result = block.get("content")
            if isinstance(result, str):
                tools.append(result)
            elif isinstance(result, list):
                tools.extend(
                    item["text"]
                    for item in result
                    if isinstance(item, dict) and isinstance(item.get("text"), str)
                )
        elif kind == "tool_use":
            value = block.get("input")
            if isinstance(value, dict):
                tools.extend(v for v in value.values() if isinstance(v, str))
    return texts, tools


def text_parts(record: dict[str, Any]) -> list[str]:
    """The human-readable text of a user or assistant record (no tool traffic)."""
    return content_texts(record)[0]


def is_real_user_message(record: dict[str, Any]) -> bool:
    """A user record a person typed: not a tool result, not meta, not a compact summary."""
    return (
        record.get("type") == "user"
        and record.get("isMeta") is not True
        and record.get("isCompactSummary") is not True
        and not is_tool_result(record)
    )


def display_prompt(text: str | None) -> str | None:
    """A prompt cut for display: 200 code points, trailing space removed, then ``…``."""
    if text is None or len(text) <= FIRST_PROMPT_DISPLAY_CHARS:
        return text
    return text[:FIRST_PROMPT_DISPLAY_CHARS].rstrip() + "…"


@dataclass
class FirstPromptState:
    """What the first-prompt rule has seen so far; persisted so that incremental
    indexing can resume it from where the last pass stopped."""

    prompt: str | None = None  # full text, newlines turned into spaces
    command_fallback: str | None = None
    first_command: str | None = None  # slash command of the first real user message
    seen_real: bool = False

    @property
    def done(self) -> bool:
        return self.prompt is not None and self.seen_real

    @property
    def result(self) -> str | None:
        """The first prompt, else the first command seen, else None."""
        return self.prompt if self.prompt is not None else self.command_fallback

    def feed(self, record: dict[str, Any]) -> None:
        """The SDK's first-prompt rule (docs/session-fields.md#first-prompt-filter), from parsed
        fields instead of raw substring scans, so a ``"tool_result"`` word in a prompt
        does not hide it."""
        if self.done or not is_real_user_message(record):
            return
        message = record.get("message")
        if not isinstance(message, dict):
            return
        texts = text_parts(record)
        if not self.seen_real:
            self.seen_real = True
            for text in texts:
                match = _command_re().search(text)
                if match:
                    self.first_command = match.group(1).strip()
                    break
        if self.prompt is not None:
            return
        for raw in texts:
            text = raw.replace("\n", " ").strip()
            if not text:
                continue
            match = _command_re().search(text)
            if match:
                if not self.command_fallback:  # an empty name is none (the SDK's test)
                    self.command_fallback = match.group(1).strip() or None
                continue
            if text.startswith(_SKIP_PREFIXES) or _whole_ide_re().match(text):
                continue
            self.prompt = text
            return


#: The first command of a session ``/loop`` started: Claude Code's picker and
#: ``--continue`` pass over it, as over -p/SDK sessions (query.sessions.INTERACTIVE_SQL).
LOOP_COMMAND = "/loop"
