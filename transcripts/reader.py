"""Streaming JSONL reader: complete lines only, bounded memory, never raises on content.

Claude Code appends to a transcript while we read it, so a final line without ``\\n``
may be half-written: it is not a record yet and is left for the next pass (the caller
keeps :attr:`RecordReader.end_offset`, the byte after the last complete line). A line
that is not a JSON object — malformed, invalid UTF-8, holding a NUL, or longer than
``MAX_LINE_BYTES`` — is counted by kind in :attr:`RecordReader.problems` and skipped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

CHUNK_BYTES = 1 << 20
# Real lines can hold pasted images as base64; beyond this a line is treated as hostile.
MAX_LINE_BYTES = 32 << 20

PROBLEM_MALFORMED = "malformed-json"
PROBLEM_NOT_OBJECT = "not-an-object"
PROBLEM_INVALID_UTF8 = "invalid-utf8"
PROBLEM_NUL = "nul-byte"
PROBLEM_TOO_LONG = "line-too-long"


def classify(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """Parse one line (without its ``\\n``): ``(record, None)`` or ``(None, problem)``.

    A whitespace-only line is neither a record nor a problem: ``(None, None)``.
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        # orjson refuses any raw NUL, so a NUL line always lands here: name it only now
        # (a scan of every good line for NUL would cost the whole corpus once more).
        if b"\x00" in line:
            return None, PROBLEM_NUL
        if not line.strip():
            return None, None
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            return None, PROBLEM_INVALID_UTF8
        return None, PROBLEM_MALFORMED
    if not isinstance(value, dict):
        return None, PROBLEM_NOT_OBJECT
    return value, None


class RecordReader:
    """Iterate ``(line_offset, record)`` from ``offset`` to the last complete line.

    After iteration: ``end_offset`` is where the next pass starts, ``bytes_read`` how
    much was read, ``problems`` the skipped lines by kind.
    """

    def __init__(
        self,
        stream: BinaryIO,
        offset: int = 0,
        *,
        limit: int | None = None,
        max_line: int | None = None,
    ) -> None:
        self._stream = stream
        self.start_offset = offset
        self.end_offset = offset
        self.bytes_read = 0
        self.problems: Counter[str] = Counter()
        self._limit = limit
        self._max_line = MAX_LINE_BYTES if max_line is None else max_line

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """Complete lines (without ``\\n``) with their start offsets."""
        stream = self._stream
        stream.seek(self.start_offset)
        pos = self.start_offset  # offset of the first byte of ``pending``
        pending: list[bytes] = []
        pending_len = 0
        skipping = False  # inside an over-long line: drop bytes until its newline
        remaining = self._limit
        while True:
            size = CHUNK_BYTES if remaining is None else min(CHUNK_BYTES, remaining)
            if size <= 0:
                break
            chunk = stream.read(size)
            if not chunk:
                break
            self.bytes_read += len(chunk)
            if remaining is not None:
                remaining -= len(chunk)
            start = 0
            while True:
                nl = chunk.find(b"\n", start)
                if nl < 0:
                    tail = chunk[start:]
                    if not skipping:
                        pending.append(tail)
                        pending_len += len(tail)
                        if pending_len > self._max_line:
                            skipping = True
                            pending, pending_len = [], pending_len
                    else:
                        pending_len += len(tail)
                    break
                piece = chunk[start:nl]
                line_len = pending_len + len(piece)
                if skipping or line_len > self._max_line:
                    self.problems[PROBLEM_TOO_LONG] += 1
                else:
                    if pending:
                        pending.append(piece)
                        line = b"".join(pending)
                    else:
                        line = piece
                    yield pos, line
                pos += line_len + 1
                self.end_offset = pos
                pending, pending_len, skipping = [], 0, False
                start = nl + 1

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for offset, line in self.lines():
            record, problem = classify(line)
            if problem is not None:
                self.problems[problem] += 1
            elif record is not None:
                yield offset, record
