"""One pass over a transcript's new complete lines, without the database.

Pure: it reads a stream and returns what the lines hold, so a cold build can parse the
next file in a second process while SQLite writes this one (:mod:`.prefetch`).
"""

from __future__ import annotations

import hashlib
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sessiondex.indexer.derive import SessionState, message_texts
from sessiondex.indexer.text import fts_text
from sessiondex.transcripts import reader as _reader
from sessiondex.transcripts.pr_urls import PullRequest
from sessiondex.transcripts.reader import (
    PROBLEM_MALFORMED,
    PROBLEM_TOO_LONG,
    RecordReader,
    classify,
    glued_records,
)
from sessiondex.transcripts.records import timestamp_ms

FINGERPRINT_WINDOW = 4096
SCAN_CHUNK = 1 << 20


def fingerprint(stream: Any, consumed: int, known: tuple[int, int] = (0, 0)) -> str:
    """What the consumed prefix ``[0, consumed)`` holds, to tell an append from a rewrite
    when the file is next seen: ``<windows>:<crc>``, a hash of its first and last window
    and its length (a rewrite that moves them, cheaply told), then the CRC-32 of every
    byte of it (a same-length edit in the middle, then an append: a user's redaction in
    place, a script's fix; the windows alone took that for an append and kept the old
    text searchable).

    ``known`` is ``(offset, crc)``: the CRC of ``[0, offset)`` already known (the stored
    one, when the pass read on from there), so only ``[offset, consumed)`` is read."""
    digest = hashlib.blake2b(digest_size=16)
    stream.seek(0)
    digest.update(stream.read(min(FINGERPRINT_WINDOW, consumed)))
    start = max(0, consumed - FINGERPRINT_WINDOW)
    stream.seek(start)
    digest.update(stream.read(consumed - start))
    digest.update(str(consumed).encode())
    offset, crc = known if known[0] <= consumed else (0, 0)
    stream.seek(offset)
    while offset < consumed:
        chunk = stream.read(min(SCAN_CHUNK, consumed - offset))
        if not chunk:
            break
        crc = zlib.crc32(chunk, crc)
        offset += len(chunk)
    return f"{digest.hexdigest()}:{crc:08x}"


def known_crc(stored_fingerprint: str | None, consumed: int) -> tuple[int, int]:
    """``fingerprint``'s ``known`` from a stored fingerprint of ``[0, consumed)``; one of
    an older version (the windows alone) knows nothing: the next pass reads it all."""
    windows, colon, crc = (stored_fingerprint or "").partition(":")
    if not colon or consumed <= 0:
        return (0, 0)
    try:
        return (consumed, int(crc, 16))
    except ValueError:
        return (0, 0)


def same_prefix(stored_fingerprint: str | None, current: str) -> bool:
    """Whether a stored fingerprint and one just taken of the same prefix agree. One of
    an older version (its windows alone) never does: it cannot rule out an edit in the
    middle, so a file that changed since is read again from the start, once (and then
    holds a CRC)."""
    return ":" in current and stored_fingerprint == current


@dataclass
class ParsedTail:
    """What one pass over a file's new complete lines found; computed without the
    database, so a cold build can parse the next file while SQLite writes this one."""

    state: SessionState | None  # main transcripts only
    known_branches: set[str]
    known_links: set[str]
    # uuid, type, ts_ms, fts text (or, when ``encoded``, its stored body:
    # textstore.encode), byte offset of the line
    messages: list[tuple[str | None, str, int | None, str | bytes, int]]
    mentions: list[PullRequest]
    consumed: int
    fingerprint: str
    problems: Counter[str]
    bytes_read: int
    # Bytes up to here were looked at: past ``consumed`` they hold no newline yet.
    scanned: int = 0
    # The texts are already their stored bodies (compressed by the parsing process).
    encoded: bool = False


def _find_newline(stream: Any, start: int, end: int) -> tuple[int, int]:
    """The offset of the first ``\\n`` in ``[start, end)`` (-1: none) and the bytes read."""
    stream.seek(start)
    pos, read = start, 0
    while pos < end:
        chunk = stream.read(min(SCAN_CHUNK, end - pos))
        if not chunk:
            break
        read += len(chunk)
        nl = chunk.find(b"\n")
        if nl >= 0:
            return pos + nl, read
        pos += len(chunk)
    return -1, read


def _with_whole_tail(reader: RecordReader, stream: Any, size: int) -> Iterator[tuple[int, bytes]]:
    """The reader's complete lines, then the final bytes without ``\n`` when they parse
    as a record (``reader.end_offset`` then moves past them): for a quiet file only."""
    yield from reader.lines()
    start = reader.end_offset
    if start >= size or size - start > _reader.MAX_LINE_BYTES:
        return
    stream.seek(start)
    tail = stream.read(size - start)
    reader.bytes_read += len(tail)
    if len(tail) != size - start:
        return
    record, _ = classify(tail)
    if record is not None:
        reader.end_offset = size
        yield start, tail


def _as_is(text: str) -> str:
    return text


def parse_tail(
    stream: Any,
    size: int,
    offset: int,
    state: SessionState | None,
    known_branches: set[str],
    known_links: set[str],
    include_tools: bool,
    scanned: int = 0,
    encoder: Callable[[str], str | bytes] | None = None,
    quiet: bool = False,
    known: tuple[int, int] = (0, 0),
) -> ParsedTail:
    """Fold the complete lines from ``offset`` up to ``size`` (the stat taken before
    reading: later bytes wait for the next pass).

    ``quiet``: the file had been quiet for the racy window when stat'ed
    (``shape.settled_at``), so final bytes without ``\n`` that form a whole record are
    a write that died before its newline: folded as a record (Claude Code and the SDK
    read it; the next write ends it with ``\n`` first), where otherwise they wait.

    ``scanned`` (from the previous pass) says ``[offset, scanned)`` holds no newline: a
    line still being written is then searched for its end only in the bytes after it,
    and a line already known to be too long is skipped without reading it again.

    ``encoder`` (``textstore.Packer.encode``): store-ready bodies (compressed) instead
    of texts, for the parsing process of a cold build when it has time the writer has
    not (``indexer/prefetch.py``). ``known``: :func:`fingerprint`'s, for ``offset``.
    """
    store = encoder or _as_is
    problems: Counter[str] = Counter()
    bytes_read = 0
    if offset < scanned <= size:
        nl, bytes_read = _find_newline(stream, scanned, size)
        if nl < 0 and quiet and size - offset <= _reader.MAX_LINE_BYTES:
            pass  # no newline, but quiet: the tail may be a whole record (below)
        elif nl < 0:  # still no complete line: nothing to fold
            if state is not None:
                state.finish()
            return ParsedTail(
                state,
                known_branches,
                known_links,
                [],
                [],
                offset,
                fingerprint(stream, offset, known),
                problems,
                bytes_read,
                size,
            )
        if nl - offset > _reader.MAX_LINE_BYTES:
            problems[PROBLEM_TOO_LONG] += 1
            offset = nl + 1
    reader = RecordReader(stream, offset, limit=size - offset)
    reader.problems = problems
    messages: list[tuple[str | None, str, int | None, str | bytes, int]] = []
    mentions: list[PullRequest] = []
    lines: Iterable[tuple[int, bytes]] = reader.lines()
    if quiet:
        lines = _with_whole_tail(reader, stream, size)
    for line_offset, line in lines:
        record, problem = classify(line)
        if problem is not None:
            reader.problems[problem] += 1
        if record is None:
            if problem == PROBLEM_MALFORMED and state is not None:
                for glued in glued_records(line):
                    state.apply(
                        glued, known_branches, known_links, line_offset, line_offset + len(line)
                    )
            continue
        if state is not None:
            state.apply(record, known_branches, known_links, line_offset, line_offset + len(line))
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
                    store(fts_text(text)),
                    line_offset,
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
        fingerprint(stream, consumed, known),
        reader.problems,
        bytes_read + reader.bytes_read,
        size,
        encoder is not None,
    )
