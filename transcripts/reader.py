"""Transcript lines: what a record is, what a bad line is, and the streaming reader.

This module holds the one definition every reader uses (the indexer, ``show``/``export``
and the SDK-style message reader through ``transcripts.chain``), so ``index`` and
``show`` count the same bad lines in the same file:

* a **line** is the bytes before a ``\\n``. A final piece without ``\\n`` is not a line
  yet: Claude Code may be writing it right now. It is never a bad line; it is reported
  as *being written* (:data:`PROBLEM_BEING_WRITTEN`, by the whole-file readers; *never
  finished*, :data:`PROBLEM_NEVER_FINISHED`, once the file has been quiet) and left
  for the next pass (the indexer keeps :attr:`RecordReader.end_offset`), unless the file
  is quiet and it is a whole record (``indexer.parse.parse_tail``'s ``quiet``);
* a **record** is a line that parses as a JSON object, read as the SDK reads it
  (:func:`parse_line`: Unicode whitespace around it ignored, and the standard
  library's extensions — ``NaN``, ``Infinity`` — accepted, as Python's ``json`` does);
* a whitespace-only line is neither a record nor a problem;
* any other line is **bad**, counted by kind: ``malformed-json``, ``not-an-object``,
  ``invalid-utf8``, ``nul-byte``. The streaming reader also skips lines longer than
  ``MAX_LINE_BYTES`` (``line-too-long``) to bound its memory; the whole-file readers,
  which hold the file anyway, read them.

A line with invalid UTF-8 is counted (``invalid-utf8``) and repaired, bad bytes as
U+FFFD, by every reader: Claude Code (Node decodes with replacement) and the SDK's
listing read it so, and an index that skipped it lost the session's first prompt (or its
only message) where they show it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from functools import cache
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
#: Not a bad line: the final bytes of a file, without their ``\\n`` yet.
PROBLEM_BEING_WRITTEN = "being-written"
#: Not a bad line either: such final bytes in a file quiet since (a write that stopped
#: mid-line). Never skipped past: the next write may end it, or glue a record onto it.
PROBLEM_NEVER_FINISHED = "never-finished"


def parse_line(
    line: bytes, *, repair_utf8: bool = False
) -> tuple[dict[str, Any] | None, str | None]:
    """Parse one line (without its ``\\n``): ``(record, None)`` or ``(None, problem)``;
    ``(None, None)`` for a whitespace-only line.

    With ``repair_utf8`` a line with invalid UTF-8 is decoded with U+FFFD for the bad
    bytes and, if it then parses, returned as ``(record, "invalid-utf8")``; if it still
    does not, it is ``malformed-json`` as any other line that is skipped.
    """
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        value = _REFUSED  # out of the handler: the error holds the line again, as text
    if value is _REFUSED:
        # orjson refuses any raw NUL, so a NUL line always lands here: name it only now
        # (a scan of every good line for NUL would cost the whole corpus once more).
        if b"\x00" in line:
            return None, PROBLEM_NUL
        if not line.strip():
            return None, None
        return _parse_slowly(line, repair_utf8)
    if not isinstance(value, dict):
        return None, PROBLEM_NOT_OBJECT
    return value, None


_REFUSED = object()


def _parse_slowly(line: bytes, repair_utf8: bool) -> tuple[dict[str, Any] | None, str | None]:
    """What orjson refused, read as the SDK reads it (only failing lines get here)."""
    repaired = False
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        if not repair_utf8:
            return None, PROBLEM_INVALID_UTF8
        text, repaired = line.decode("utf-8", "replace"), True
    whole = len(text)
    text = text.strip()  # str.strip, as the SDK: Unicode whitespace too
    if not text:
        return None, PROBLEM_INVALID_UTF8 if repaired else None
    value: Any = _REFUSED
    if repaired or len(text) != whole:
        # Not the bytes orjson just refused (those it would refuse again, after building
        # a value pool of ~12 bytes per byte: a 32 MB line, +160 MB).
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # out of the handler: the error holds the text again
    if value is _REFUSED:
        value = _loads_as_json_does(text)
        if value is _REFUSED:  # skipped: malformed, whatever its bytes were
            return None, PROBLEM_MALFORMED
    if not isinstance(value, dict):
        return None, PROBLEM_NOT_OBJECT
    return value, PROBLEM_INVALID_UTF8 if repaired else None


def _loads_as_json_does(text: str) -> Any:
    """``text`` read as ``json.loads`` reads it, or :data:`_REFUSED`.

    What ``json.loads`` reads depends on the process's recursion limit (the watcher and
    the MCP server raise it), and a rebuild must read the record the watcher read: so
    the line is checked whole first, and one nested deeper than :data:`MAX_DEPTH` has
    its deepest values cut (never malformed ones: they are checked)."""
    import json  # here only: a rare path, and start-up time is a benchmark figure

    depth = json_depth(text)
    if depth < 0:
        return _REFUSED
    shallow = _capped(text) if depth > MAX_DEPTH else text
    try:
        return orjson.loads(shallow)
    except orjson.JSONDecodeError:
        pass
    try:
        return without_lone_surrogates(json.loads(shallow, parse_int=_bounded_int))
    except (ValueError, RecursionError):
        return _REFUSED


#: How deep a record's values are kept when a line nests deeper than orjson reads (1,024
#: levels; Claude Code's JSON.parse reads more): a record, not a bad line.
MAX_DEPTH = 200


# One JSON token as json.loads reads one (NaN and Infinity too), whitespace, or any other
# character (``bad``): what :func:`json_depth` and :func:`_capped` walk (through
# :func:`_json_tokens`). A string's opening quote only: its body is read by ``json``'s own
# scanner. A regex over the body kept backtracking state for every character (a
# ``(?:a|b)*`` group): ~150 bytes of memory per byte of a long string, 2 GB for one 16 MB
# tool result cut short by a crash. Compiled on first use (a line that needs the walk):
# not in every command's start-up.
@cache
def _json_grammar_tokens() -> re.Pattern[str]:
    return re.compile(
        r"[ \t\n\r]+"
        r'|(?P<s>")'
        r"|(?P<n>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|NaN|-?Infinity)"
        r"|(?P<p>[\[\]{}:,])"
        r"|(?P<bad>.)",
        re.S,
    )


def _json_tokens(text: str) -> Iterator[tuple[str, str, int]]:
    """``(kind, token, start)`` of each JSON token of ``text``, whitespace left out, in
    time and memory linear in ``text`` (a line of a million escaped quotes is one pass).
    A string is read by the scanner ``json.loads`` uses (its token is ``'"'``); one that
    is unterminated, or holds a control character or a bad escape, is ``bad``, as is any
    character no token starts with."""
    # json.decoder's C scanner (typeshed leaves it out; it has been there since 2.6)
    from json.decoder import scanstring  # type: ignore[attr-defined]

    match = _json_grammar_tokens().match
    pos, size = 0, len(text)
    while pos < size:
        token = match(text, pos)
        assert token is not None  # ``bad`` matches any character
        kind, start, pos = token.lastgroup, token.start(), token.end()
        if kind is None:
            continue  # whitespace
        if kind == "s":
            try:
                # a string cut short (a crash mid-write) has no closing quote: said
                # without the scanner's decoded copy of the rest of the line
                if text.find('"', pos) < 0:
                    raise ValueError("unterminated string")
                pos = scanstring(text, pos, True)[1]
            except ValueError:
                kind = "bad"
        yield kind, token.group(), start
        if kind == "bad":
            return


# The longest integer literal read: Python's default int_max_str_digits, fixed here so that
# an interpreter started with another (PYTHONINTMAXSTRDIGITS) reads the same lines.
MAX_INT_DIGITS = 4300


def _too_long_int(literal: str) -> bool:
    """An integer literal of more digits than :data:`MAX_INT_DIGITS` (a float's are not
    limited)."""
    digits = literal.lstrip("-")
    return len(digits) > MAX_INT_DIGITS and digits.isdigit()


def _bounded_int(literal: str) -> int:
    if _too_long_int(literal):
        raise ValueError(f"an integer of more than {MAX_INT_DIGITS} digits")
    return int(literal)


_ARRAY = ord("[")


def json_depth(text: str) -> int:
    """How deep the one JSON value ``text`` nests, or -1 when it is not one (as
    ``json.loads`` would judge it, without building anything and without recursion, so
    a line too deep for any parser is still judged)."""
    # one byte per open bracket ("[" or "{"): a line of 32 M brackets cut short held
    # 8 bytes a level as a list (300 MB)
    stack = bytearray()
    deepest = 0
    expect = "value"  # value, item (value or "]"), key, field (key or "}"), colon, next, end
    for kind, token, _ in _json_tokens(text):
        if kind == "bad":
            return -1
        closing = kind == "p" and token in "]}"
        if expect in ("value", "item"):
            if kind == "p" and token in "[{":
                stack.append(ord(token))
                deepest = max(deepest, len(stack))
                expect = "item" if token == "[" else "field"
                continue
            if not (kind in ("s", "n") or (expect == "item" and token == "]")):
                return -1
            if kind == "n" and _too_long_int(token):
                return -1  # json.loads refuses it (:func:`_bounded_int`)
            if token == "]":
                stack.pop()
        elif expect in ("key", "field"):
            if kind == "s":
                expect = "colon"
                continue
            if not (expect == "field" and token == "}"):
                return -1
            stack.pop()
        elif expect == "colon":
            if token != ":":
                return -1
            expect = "value"
            continue
        elif expect == "next":
            if token == ",":
                expect = "value" if stack[-1] == _ARRAY else "key"
                continue
            if not closing or token != ("]" if stack[-1] == _ARRAY else "}"):
                return -1
            stack.pop()
        else:  # end: nothing may follow the value
            return -1
        expect = "next" if stack else "end"
    return deepest if expect == "end" else -1


def _capped(text: str) -> str:
    """``text`` (a JSON line :func:`json_depth` found whole) with each value that opens
    below :data:`MAX_DEPTH` levels written as ``null``: a line that nests deeper than
    orjson reads (a tool result of pathological JSON) keeps its record (its message, its
    place in the chain); only that depth of it is lost."""
    out: list[str] = []
    depth, kept_to, cut_from = 0, 0, -1
    for kind, bracket, start in _json_tokens(text):
        if kind != "p" or bracket in (":", ","):
            continue
        if bracket in ("[", "{"):
            depth += 1
            if depth == MAX_DEPTH + 1:
                cut_from = start
        else:
            if depth == MAX_DEPTH + 1 and cut_from >= 0:
                out += (text[kept_to:cut_from], "null")
                kept_to, cut_from = start + 1, -1
            depth -= 1
    if not out:
        return text
    out.append(text[kept_to:])
    return "".join(out)


def without_lone_surrogates(value: Any) -> Any:
    """``json`` decodes an escaped lone surrogate (``"\\ud800"``) into a string no UTF-8
    encoder takes (SQLite, orjson, a terminal): make it U+FFFD, as invalid bytes are.
    For a transcript's values, and for text that reached the library or the MCP server
    through JSON (a query, a name, a session argument)."""
    if isinstance(value, str):
        if value.isascii():
            return value
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [without_lone_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    return value


#: Records that find their way into the answers even glued onto the end of a bad line.
#: The SDK's ``rename_session`` appends to a file whose last line lacks its newline
#: without adding one (upstream bug), gluing its record onto that line; Claude Code's
#: picker and the SDK's listing still show the title, since they find these fields by
#: a string search of the file's tail. A glued ``tag`` they do not see (they take only
#: lines that start with it), nor any message, so neither do we. Only each type's own
#: fields are kept: everything else on a glued line (an ``entrypoint``, a ``gitBranch``,
#: a ``timestamp``) is a bad line's, which the sweep's window test and every line-parsing
#: reader skip; taken from the glued record, the index's window columns answered the
#: desktop exemption otherwise than ``cleanup`` reading the file.
GLUED_FIELDS: dict[str, tuple[str, ...]] = {
    "custom-title": ("customTitle",),
    "ai-title": ("aiTitle",),
    "last-prompt": ("lastPrompt",),
    "summary": ("summary",),
    "pr-link": ("prNumber", "prUrl", "prRepository"),
}
GLUED_TYPES = frozenset(GLUED_FIELDS)
#: What the SDK takes a tag from: a line that starts exactly so (its tail scan), and
#: then the last ``"tag"`` value on that line, a record glued onto it included.
TAG_LINE_START = b'{"type":"tag"'
#: What is read of the whole record a bad line starts with, when another writer glued
#: its record onto it (the line had lost its newline): the fields of
#: :data:`GLUED_FIELDS`, which the picker's and the SDK's string search still find
#: there, and a tag, since the line starts with it (:data:`TAG_LINE_START`).
HEAD_FIELDS: dict[str, tuple[str, ...]] = {**GLUED_FIELDS, "tag": ("tag",)}
#: Where a record may start on a bad line: ``{"type":"`` with any JSON whitespace
#: around its colon (a spaced or pretty-printed writer's too). Inside a JSON string
#: the quotes of that opening would be escaped, so it can only begin a record or a
#: nested object (which never ends where a record must: see :func:`_glued_chain`).
_RECORD_START = re.compile(rb'\{[ \t\r\n]*"type"[ \t\r\n]*:[ \t\r\n]*"')
_JSON_SPACE = b" \t\r\n"


def _kept(value: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    kept: dict[str, Any] = {"type": value["type"]}
    if "sessionId" in value:
        kept["sessionId"] = value["sessionId"]
    kept.update((key, value[key]) for key in fields if key in value)
    return kept


def _glued_chain(
    line: bytes, first: int, kinds: dict[str, tuple[str, ...]]
) -> list[dict[str, Any]]:
    """The records glued onto a bad ``line`` from byte ``first`` on, in line order, each
    cut to its type's fields: a record is a JSON object that starts with a ``type``
    (:data:`_RECORD_START`), of a type in ``kinds``, with a ``sessionId`` (as both
    writers write it), that ends, after JSON whitespace, at the line's end or where the
    next such record starts. Read from the end, so one glued record or N are one rule;
    a record that is not whole breaks no record after it."""
    # Only a start of a type in ``kinds`` is decoded (a long bad line holds thousands
    # of nested ``{"type":"text"`` blocks); where its object ends is found first by
    # ``raw_decode`` over the line read as Latin-1 (a character per byte, so its offsets
    # are the bytes'), which reads that object only: orjson checks the UTF-8 of all it
    # is given, and a line holding many such objects nested cost its length each.
    starts = [
        m.start()
        for m in _RECORD_START.finditer(line, first)
        if m.start() > 0
        and line[m.end() : line.find(b'"', m.end())].decode("ascii", "replace") in kinds
    ]
    if not starts:
        return []
    import json  # here only: a rare path (a bad line with a metadata type on it)

    scan = json.JSONDecoder(strict=False).raw_decode
    latin = line.decode("latin-1")
    view = memoryview(line)
    found: list[dict[str, Any]] = []
    end = len(line.rstrip(_JSON_SPACE))
    for start in reversed(starts):
        try:
            stop = scan(latin, start)[1]
        except (ValueError, RecursionError):
            continue
        if stop != end:
            continue
        try:
            value = orjson.loads(view[start:end])
        except orjson.JSONDecodeError:
            continue
        if not isinstance(value, dict) or not isinstance(value.get("sessionId"), str):
            continue
        kind = value.get("type")
        fields = kinds.get(kind) if isinstance(kind, str) else None
        if fields is None:
            continue
        found.append(_kept(value, fields))
        end = len(line[:start].rstrip(_JSON_SPACE))
    found.reverse()
    return found


def glued_record(line: bytes) -> dict[str, Any] | None:
    """The last metadata record glued onto a bad ``line`` (:func:`_glued_chain` with
    :data:`GLUED_FIELDS`), or None."""
    chain = _glued_chain(line, 0, GLUED_FIELDS)
    return chain[-1] if chain else None


def _head_record(line: bytes) -> tuple[dict[str, Any] | None, int]:
    """The whole metadata record (:data:`HEAD_FIELDS`) a bad ``line`` starts with,
    followed by more bytes, cut to its type's fields, and the byte where it ends; None
    and 0 when the line starts with anything else. Both writers put ``type`` first, so
    only a line that starts with such a type is decoded (with the standard library's
    ``raw_decode``, which says where the first value ends; orjson reads whole
    documents only)."""
    match = _RECORD_START.match(line)
    if match is None:
        return None, 0
    kind_end = line.find(b'"', match.end())
    kind = line[match.end() : kind_end].decode("ascii", "replace")
    fields = HEAD_FIELDS.get(kind)
    if fields is None:
        return None, 0
    import json  # here only: a rare path (a bad line that starts with metadata)

    try:
        text = line.decode("utf-8")
        value, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None, 0
    if not isinstance(value, dict) or value.get("type") != kind or not text[end:].strip():
        return None, 0
    kept: dict[str, Any] = without_lone_surrogates(_kept(value, fields))
    return kept, len(text[:end].encode("utf-8"))


def glued_records(line: bytes) -> list[dict[str, Any]]:
    """What other readers take from a bad ``line`` onto which writers glued records,
    in line order: the whole metadata record the line starts with (:func:`_head_record`:
    the line had lost its newline, and Claude Code's last record is most often one of
    its metadata block), then every record glued on after it (:func:`_glued_chain`;
    a tag too when the line starts with a tag, as the SDK reads a tag line). Two
    records glued or N, with or without whitespace between them: one rule."""
    records: list[dict[str, Any]] = []
    if b"\x00" in line:  # a nul-byte line, which no reader takes anything from
        return records
    head, head_end = _head_record(line)
    if head is not None:
        records.append(head)
    kinds = HEAD_FIELDS if line.startswith(TAG_LINE_START) else GLUED_FIELDS
    records.extend(_glued_chain(line, head_end, kinds))
    return records


def classify(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """:func:`parse_line` for the index: a line with invalid UTF-8 is repaired, and
    both its record and the problem are returned (the record is kept, the line counted)."""
    return parse_line(line, repair_utf8=True)


def split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """A whole file's complete lines (without ``\\n``) and its unterminated tail
    (``b""`` when it ends in ``\\n``): the tail is not a line yet."""
    *lines, tail = data.split(b"\n")
    return lines, tail


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
            if record is not None:
                yield offset, record
