"""One pass over a transcript's new complete lines, without the database.

Pure: it reads a stream and returns what the lines hold, so a cold build can parse the
next file in a second process while SQLite writes this one (:mod:`.prefetch`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sessiondex.indexer.derive import SessionState, message_texts
from sessiondex.indexer.text import fts_text
from sessiondex.transcripts.pr_urls import PullRequest
from sessiondex.transcripts.reader import RecordReader, classify
from sessiondex.transcripts.records import timestamp_ms

FINGERPRINT_WINDOW = 4096


def fingerprint(stream: Any, consumed: int) -> str:
    """Hash of the consumed prefix's first and last window: a rewrite or truncation
    under the offset changes it (almost surely) without re-reading the prefix."""
    digest = hashlib.blake2b(digest_size=16)
    stream.seek(0)
    digest.update(stream.read(min(FINGERPRINT_WINDOW, consumed)))
    start = max(0, consumed - FINGERPRINT_WINDOW)
    stream.seek(start)
    digest.update(stream.read(consumed - start))
    digest.update(str(consumed).encode())
    return digest.hexdigest()


@dataclass
class ParsedTail:
    """What one pass over a file's new complete lines found; computed without the
    database, so a cold build can parse the next file while SQLite writes this one."""

    state: SessionState | None  # main transcripts only
    known_branches: set[str]
    known_links: set[str]
    messages: list[tuple[str | None, str, int | None, str]]  # uuid, type, ts_ms, fts text
    mentions: list[PullRequest]
    consumed: int
    fingerprint: str
    problems: Counter[str]
    bytes_read: int


def parse_tail(
    stream: Any,
    size: int,
    offset: int,
    state: SessionState | None,
    known_branches: set[str],
    known_links: set[str],
    include_tools: bool,
) -> ParsedTail:
    """Fold the complete lines from ``offset`` up to ``size`` (the stat taken before
    reading: later bytes wait for the next pass)."""
    reader = RecordReader(stream, offset, limit=size - offset)
    messages: list[tuple[str | None, str, int | None, str]] = []
    mentions: list[PullRequest] = []
    for _, line in reader.lines():
        record, problem = classify(line)
        if record is None:
            if problem is not None:
                reader.problems[problem] += 1
            continue
        if state is not None:
            state.apply(record, known_branches, known_links)
        kind = record.get("type")
        if kind != "user" and kind != "assistant":
            continue
        text, found = message_texts(record, include_tools=include_tools)
        mentions.extend(found)
        if text:
            uuid = record.get("uuid")
            messages.append(
                (
                    uuid if isinstance(uuid, str) else None,
                    kind,
                    timestamp_ms(record),
                    fts_text(text),
                )
            )
    if state is not None:
        state.finish()
    consumed = reader.end_offset
    return ParsedTail(
        state,
        known_branches,
        known_links,
        messages,
        mentions,
        consumed,
        fingerprint(stream, consumed),
        reader.problems,
        reader.bytes_read,
    )
