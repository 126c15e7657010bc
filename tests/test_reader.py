"""The streaming reader: complete lines only, problems counted, never raises."""

from __future__ import annotations

import io
import sys

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiondex.transcripts.reader import (
    PROBLEM_INVALID_UTF8,
    PROBLEM_MALFORMED,
    PROBLEM_NOT_OBJECT,
    PROBLEM_NUL,
    PROBLEM_TOO_LONG,
    RecordReader,
    glued_record,
    glued_records,
)


def read(data: bytes, offset: int = 0, **kwargs):
    reader = RecordReader(io.BytesIO(data), offset, **kwargs)
    return list(reader), reader


GOOD = b'{"type":"user","n":1}\n'


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"not json", PROBLEM_MALFORMED),
        (b'{"type":"user"', PROBLEM_MALFORMED),
        (b'{"a":"x\x00y"}', PROBLEM_NUL),
        (b"[1,2,3]", PROBLEM_NOT_OBJECT),
        (b"42", PROBLEM_NOT_OBJECT),
        (b'"text"', PROBLEM_NOT_OBJECT),
        (b"null", PROBLEM_NOT_OBJECT),
        # nested too deep, and not valid JSON either: still a bad line
        (b'{"a":' + b"[" * 2000 + b"]" * 1999 + b"}", PROBLEM_MALFORMED),
    ],
)
def test_bad_lines_are_counted_by_kind_and_skipped(line: bytes, problem: str) -> None:
    records, reader = read(GOOD + line + b"\n" + GOOD)
    assert [r for _, r in records] == [{"type": "user", "n": 1}] * 2
    assert reader.problems == {problem: 1}


def test_invalid_utf8_is_counted_and_repaired_not_skipped() -> None:
    """Claude Code and the SDK's listing read such a line with U+FFFD for the bad bytes;
    skipping it lost the session's prompt (or its only message) from the index."""
    records, reader = read(GOOD + b'{"type":"user","text":"r\xe9sum\xe9"}\n' + GOOD)
    assert [r for _, r in records] == [
        {"type": "user", "n": 1},
        {"type": "user", "text": "r\ufffdsum\ufffd"},
        {"type": "user", "n": 1},
    ]
    assert reader.problems == {PROBLEM_INVALID_UTF8: 1}


@pytest.mark.parametrize("blank", [b"", b"   ", b"\t", b"\r"])
def test_whitespace_lines_are_neither_records_nor_problems(blank: bytes) -> None:
    records, reader = read(GOOD + blank + b"\n" + GOOD)
    assert len(records) == 2
    assert not reader.problems


def test_final_line_without_newline_is_not_a_record_yet() -> None:
    partial = b'{"type":"user","n":2}'
    records, reader = read(GOOD + partial)
    assert len(records) == 1
    assert reader.end_offset == len(GOOD)
    records, reader = read(GOOD + partial + b"\n", reader.end_offset)
    assert [r["n"] for _, r in records] == [2]
    assert reader.end_offset == len(GOOD) + len(partial) + 1


def test_offsets_are_line_starts() -> None:
    data = GOOD + b'{"b":2}\n' + GOOD
    records, _ = read(data)
    assert [o for o, _ in records] == [0, len(GOOD), len(GOOD) + 8]


def test_limit_stops_at_the_snapshot_size() -> None:
    data = GOOD * 3
    records, reader = read(data, limit=len(GOOD) * 2 + 3)
    assert len(records) == 2
    assert reader.end_offset == len(GOOD) * 2


def test_over_long_line_is_skipped_with_bounded_memory() -> None:
    huge = b'{"x":"' + b"a" * 5000 + b'"}'
    records, reader = read(GOOD + huge + b"\n" + GOOD, max_line=1000)
    assert len(records) == 2
    assert reader.problems == {PROBLEM_TOO_LONG: 1}


def test_line_spanning_many_chunks_is_reassembled(monkeypatch) -> None:
    import sessiondex.transcripts.reader as module

    monkeypatch.setattr(module, "CHUNK_BYTES", 7)
    record = {"type": "user", "text": "é" * 40}
    data = orjson.dumps(record) + b"\n" + GOOD
    records, _ = read(data)
    assert [r for _, r in records] == [record, {"type": "user", "n": 1}]


def test_unicode_line_separators_do_not_split_records() -> None:
    record = {"text": "a\u2028b\u2029c\x85d"}
    records, _ = read(orjson.dumps(record) + b"\n")
    assert [r for _, r in records] == [record]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.integers(min_value=0, max_value=2100))
def test_no_byte_string_makes_the_reader_raise(data: bytes, offset: int) -> None:
    records, reader = read(data, min(offset, len(data)))
    assert reader.end_offset <= len(data)
    assert all(isinstance(r, dict) for _, r in records)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=3), max_size=10),
    st.integers(min_value=1, max_value=64),
)
def test_chunked_reading_equals_whole_reading(records: list[dict], chunk: int) -> None:
    import sessiondex.transcripts.reader as module

    data = b"".join(orjson.dumps(r) + b"\n" for r in records)
    original = module.CHUNK_BYTES
    module.CHUNK_BYTES = chunk
    try:
        got, _ = read(data)
    finally:
        module.CHUNK_BYTES = original
    assert [r for _, r in got] == records


SID = "1a1a1a1a-0000-4000-8000-000000000003"
TITLE = b'{"type":"custom-title","customTitle":"T","sessionId":"' + SID.encode() + b'"}'


@pytest.mark.parametrize(
    ("line", "glued"),
    [
        (b'{"type":"user","uuid":"u"}' + TITLE, "custom-title"),  # onto a whole record
        (b'{"type":"user","message":{"role":"us' + TITLE, "custom-title"),  # a fragment
        (b'{"type":"assistant","message":{"content":[{"type":"text"' + TITLE, "custom-title"),
        (TITLE, None),  # a whole line: a record, not glued
        (b"garbage" + TITLE.replace(b"custom-title", b"tag"), None),  # the SDK skips it
        (b"garbage" + TITLE.replace(b'"sessionId"', b'"other"'), None),  # no sessionId
        (b"garbage" + TITLE + b"x", None),  # not at the line's end
        (b'garbage{"type":"text","text":"a"}]}}', None),  # a nested block's tail
        (b'{"type":"user","t":"say \\"{\\"type\\":\\"custom-title\\"}\\""', None),  # in a string
        (b"garbage" + TITLE.replace(b"custom-title", b"pr-link"), "pr-link"),
    ],
)
def test_glued_record(line: bytes, glued: str | None) -> None:
    found = glued_record(line)
    assert (found or {}).get("type") == glued


def test_a_glued_record_keeps_only_its_type_s_own_fields() -> None:
    """What else the glued record carries is the bad line's, which no reader parses
    (the desktop exemption's window test must not take its entrypoint)."""
    extra = b',"entrypoint":"claude-desktop","gitBranch":"b","timestamp":"2026-01-01T00:00:00Z"}'
    line = b'{"type":"user","uuid":"u"}' + TITLE[:-1] + extra
    assert glued_record(line) == {"type": "custom-title", "customTitle": "T", "sessionId": SID}


def _meta(kind: str, **fields: object) -> bytes:
    return orjson.dumps({"type": kind, **fields, "sessionId": SID})


@pytest.mark.parametrize(
    ("line", "records"),
    [
        # a whole metadata record lost its newline, and a record was glued onto it
        (TITLE + _meta("tag", tag="x"), [("custom-title", "customTitle", "T")]),
        (
            _meta("tag", tag="kept") + TITLE,
            [("tag", "tag", "kept"), ("custom-title", "customTitle", "T")],
        ),
        (
            _meta("last-prompt", lastPrompt="p") + TITLE,
            [("last-prompt", "lastPrompt", "p"), ("custom-title", "customTitle", "T")],
        ),
        (
            _meta("ai-title", aiTitle="A") + b'{"type":"user","message":{"role":"us',
            [("ai-title", "aiTitle", "A")],
        ),
        # a tag glued onto a line that starts with a tag: the SDK reads the line's last
        (
            _meta("tag", tag="old") + _meta("tag", tag="new"),
            [("tag", "tag", "old"), ("tag", "tag", "new")],
        ),
        (b'{"type":"tag","ta' + _meta("tag", tag="new"), [("tag", "tag", "new")]),
        # not a metadata record at the start: its fields are a bad line's
        (b'{"type":"user","uuid":"u","gitBranch":"b"}' + _meta("tag", tag="x"), []),
        (b'{"type":"permission-mode","mode":"x"}' + TITLE, [("custom-title", "customTitle", "T")]),
        # a fragment of one: nothing
        (b'{"type":"custom-title","customTitle":"cut' + _meta("tag", tag="x"), []),
        # invalid UTF-8 or nesting too deep for the decoder: nothing, no exception
        (
            b'{"type":"custom-title","customTitle":"\xff"}' + TITLE,
            [("custom-title", "customTitle", "T")],
        ),
        (
            b'{"type":"tag","tag":' + b"[" * 100_000 + b"]" * 100_000 + b"}" + TITLE,
            [("custom-title", "customTitle", "T")],
        ),
        # non-ASCII in the head: the decoder counts characters, not bytes
        (
            _meta("custom-title", customTitle="Блог ☕") + _meta("tag", tag="x"),
            [("custom-title", "customTitle", "Блог ☕")],
        ),
        # a line with a NUL is a nul-byte line, not a malformed one: nothing
        (TITLE + b"\x00" + _meta("tag", tag="x"), []),
        # a lone surrogate escape in the head reads as U+FFFD, as every reader reads it
        (
            b'{"type":"custom-title","customTitle":"a\\ud83d"}x',
            [("custom-title", "customTitle", "a\ufffd")],
        ),
    ],
)
def test_glued_records(line: bytes, records: list[tuple[str, str, str]]) -> None:
    """What a bad line gives: the whole metadata record it starts with (its newline was
    lost before another writer glued a record onto it), then the glued record."""
    found = glued_records(line)
    assert [r["type"] for r in found] == [kind for kind, _, _ in records]
    assert [r[key] for r, (_, key, _) in zip(found, records)] == [v for _, _, v in records]


def _depth(value: object) -> int:
    depth = 0
    while isinstance(value, list):
        depth += 1
        value = value[0] if value else None
    return depth


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"", b""),
        # what orjson also refuses, so the line went to json.loads: a lone surrogate
        # (half an emoji, as JSON.stringify writes it) before or after the deep part,
        # NaN; kept or dropped by the process's recursion limit until the cut came first
        (b'"half":"\\ud83d",', b""),
        (b"", b',"half":"\\udc00"'),
        (b'"n":NaN,', b""),
    ],
    ids=["plain", "surrogate-before", "surrogate-after", "nan"],
)
@pytest.mark.parametrize("depth", [100, 1000, 1030, 5000, 100_000])
def test_a_record_nested_deeper_than_orjson_reads_is_kept(
    depth: int, before: bytes, after: bytes
) -> None:
    """orjson reads 1,024 levels and json.loads fewer: a valid record nested deeper (a
    tool result of pathological JSON) was skipped as malformed JSON, and its message
    with it (Claude Code's JSON.parse reads it). It is kept, each value opening below
    MAX_DEPTH levels read as null; brackets and quotes inside strings do not count."""
    from sessiondex.transcripts.reader import MAX_DEPTH

    head = b'{"type":"user",' + before
    head += b'"message":{"content":"deepword \\" [ { ] }"},"toolUseResult":'
    line = head + b"[" * depth + b"]" * depth + b',"after":"kept"' + after + b"}"
    records, reader = read(GOOD + line + b"\n" + GOOD)
    assert reader.problems == {}
    (record,) = [r for _, r in records if r.get("type") == "user" and "message" in r]
    assert record["message"]["content"] == 'deepword " [ { ] }'
    assert record["after"] == "kept"
    # within orjson's 1,024 levels (the record's own two too) and nothing else it
    # refuses: read whole; otherwise cut at MAX_DEPTH
    read_whole = depth <= 1000 and not (before or after) or depth < MAX_DEPTH
    assert _depth(record["toolUseResult"]) == (depth if read_whole else MAX_DEPTH - 1)
    # the same in a process with a higher recursion limit (the watcher's): json.loads
    # would have read deeper there, and a rebuild would differ from the watcher
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    try:
        again, _ = read(GOOD + line + b"\n" + GOOD)
    finally:
        sys.setrecursionlimit(limit)
    assert _depth(again[1][1]["toolUseResult"]) == _depth(record["toolUseResult"])


DEEP_HEAD = b'{"type":"user","message":{"content":"ghostword"},"toolUseResult":'


@pytest.mark.parametrize(
    "line",
    [
        # broken below the depth that is cut: the cut must not hide it (a record that
        # no reader loads appeared in search and show)
        DEEP_HEAD + b"[" * 250 + b"not json at all,,}{" + b"]" * 250 + b"}",
        DEEP_HEAD + b"[" * 250 + b'"\\q\\x"' + b"]" * 250 + b"}",
        DEEP_HEAD + b"[" * 1100 + b"garbage" + b"]" * 1100 + b"}",
        DEEP_HEAD + b"[" * 1100 + b"]" * 1099 + b"}",
        # an integer json.loads refuses (more than 4,300 digits), below the cut
        DEEP_HEAD + b"[" * 201 + b"7" * 5000 + b"]" * 201 + b"}",
        # an unterminated string of escaped quotes (a tool result cut by a crash): one
        # pass, not a rescan from every quote (64 KiB took 13 s)
        b'{"type":"user","t":"' + b'\\"' * 32_768,
    ],
    ids=[
        "garbage-250",
        "bad-escape-250",
        "garbage-1100",
        "unbalanced-1100",
        "huge-int-201",
        "open-string",
    ],
)
def test_a_malformed_deep_line_stays_a_bad_line(line: bytes) -> None:
    records, reader = read(GOOD + line + b"\n" + GOOD)
    assert [r for _, r in records] == [{"type": "user", "n": 1}] * 2
    assert reader.problems == {PROBLEM_MALFORMED: 1}


@pytest.mark.parametrize(
    "text",
    [
        '{"a":[1,2,{"b":null}],"c":"x\\"y","d":"\\u00e9\\/"}',
        "[]",
        "{}",
        '"x"',
        "-0.5e+3",
        '{"a":-1,"b":Infinity,"c":-Infinity,"d":NaN,"e":true,"f":false}',
        ' \t{"a" : [ 1 , 2 ] }\r\n',
        '{"a":}',
        '{"a":1,}',
        "[1,]",
        "[1 2]",
        '{"a" 1}',
        "{1:2}",
        '{"a":"\t"}',  # a raw control character in a string: json.loads refuses it
        '"\\x"',
        "01",
        "[",
        "]",
        "{}}",
        "nan",
        "",
        "1" * 4300,
        "1" * 4301,  # beyond Python's default int_max_str_digits: json.loads refuses it
        "[-" + "7" * 5000 + "]",
        "1." + "5" * 5000,  # a float has no such limit
        '["a\\\\", "b"]',  # an escaped backslash, then the string ends
        '["a\\\\\\"b"]',  # an escaped backslash, then an escaped quote: never ends
        '{"a":"\\ud800"}',  # a lone surrogate escape: json.loads takes it
        '{"a":"\\u12"}',
        '{"a":"x' + "\\n" * 500 + '"}',
        '{"a":"x' + "\\n" * 500,
    ],
)
def test_json_depth_judges_a_line_as_json_loads_does(text: str) -> None:
    import json

    from sessiondex.transcripts.reader import json_depth

    try:
        value = json.loads(text)
    except ValueError:
        assert json_depth(text) == -1
        return
    depth = 0
    while isinstance(value, (list, dict)):
        depth += 1
        inner = list(value.values()) if isinstance(value, dict) else value
        value = next((v for v in inner if isinstance(v, (list, dict))), None)
    assert json_depth(text) == depth


@pytest.mark.parametrize(
    "line",
    [
        # a tool result cut short by a crash, and the next record glued on
        b'{"type":"user","message":{"content":"' + b"word " * 400_000,
        b'{"type":"user","message":{"content":"'
        + b"word " * 400_000
        + b'{"type":"custom-title","customTitle":"x","sessionId":"s"}',
        # escapes all the way (a pasted JSON blob)
        b'{"type":"user","message":{"content":"' + b'\\"' * 600_000 + b'"}x',
        # nesting cut short: the depth stack (8 bytes a level as a list)
        b'{"a":' + b"[" * 100_000,
        # one character above U+FFFF: the text is 4 bytes a character
        b'{"type":"user","message":{"content":"\xf0\x9f\x98\x80' + b"w" * 1_000_000,
    ],
    ids=["cut-short", "record-glued-on", "escapes", "deep-cut-short", "astral-cut-short"],
)
def test_a_long_malformed_line_is_judged_in_memory_linear_in_it(line: bytes) -> None:
    """A regex over each string's body kept backtracking state per character: ~150
    bytes of memory per byte, 2 GB for one 16 MB tool result cut short."""
    import tracemalloc

    from sessiondex.transcripts.reader import _capped, classify, json_depth

    text = line.decode()
    tracemalloc.start()
    try:
        assert json_depth(text) == -1
        _capped(text)
        json_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        assert classify(line) == (None, PROBLEM_MALFORMED)
        classify_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert json_peak < 2 * len(line), json_peak  # at most a decoded copy of a string
    # orjson's own refusal allocates ~12x the line (its value pool, mostly never
    # touched); the slow path adds copies of the text, not a multiple per byte
    assert classify_peak < 20 * len(line), classify_peak


SPACED_TITLE = b'{"type": "custom-title", "customTitle": "S", "sessionId": "' + SID.encode() + b'"}'


@pytest.mark.parametrize(
    ("line", "records"),
    [
        # N records glued on one line: each is read, as for two (the SDK's string
        # search finds the middle one's title as well as the last one's)
        (
            _meta("custom-title", customTitle="A")
            + _meta("custom-title", customTitle="B")
            + _meta("last-prompt", lastPrompt="C"),
            [
                ("custom-title", "customTitle", "A"),
                ("custom-title", "customTitle", "B"),
                ("last-prompt", "lastPrompt", "C"),
            ],
        ),
        (
            b'{"type":"user","message":{"role":"us'
            + _meta("custom-title", customTitle="A")
            + _meta("last-prompt", lastPrompt="C"),
            [("custom-title", "customTitle", "A"), ("last-prompt", "lastPrompt", "C")],
        ),
        (
            b"garbage" + TITLE + TITLE.replace(b'"T"', b'"U"') + _meta("pr-link", prNumber=1),
            [
                ("custom-title", "customTitle", "T"),
                ("custom-title", "customTitle", "U"),
                ("pr-link", "prNumber", 1),
            ],
        ),
        # whitespace between glued records, and spaced JSON
        (
            _meta("custom-title", customTitle="A") + b" \t" + _meta("last-prompt", lastPrompt="C"),
            [("custom-title", "customTitle", "A"), ("last-prompt", "lastPrompt", "C")],
        ),
        (b"garbage" + SPACED_TITLE, [("custom-title", "customTitle", "S")]),
        (
            b"garbage " + SPACED_TITLE + b"\t" + TITLE,
            [("custom-title", "customTitle", "S"), ("custom-title", "customTitle", "T")],
        ),
        (
            SPACED_TITLE + b" " + TITLE,
            [("custom-title", "customTitle", "S"), ("custom-title", "customTitle", "T")],
        ),
        # a middle record that is no whole record: what comes after it still counts
        (
            b"garbage" + TITLE[:-1] + b"x" + TITLE.replace(b'"T"', b'"U"'),
            [("custom-title", "customTitle", "U")],
        ),
        # "}{" and "} {" inside a string split nothing
        (b'garbage{"type":"user","t":"a} {\\"type\\": \\"custom-title\\"}{b"}', []),
        (
            b"garbage" + _meta("custom-title", customTitle='x"} {"type": "last-prompt"'),
            [("custom-title", "customTitle", 'x"} {"type": "last-prompt"')],
        ),
    ],
)
def test_n_glued_records(line: bytes, records: list[tuple[str, str, object]]) -> None:
    """Whatever is read of two records glued on a line is read of N, whatever the
    whitespace around them or inside them."""
    found = glued_records(line)
    assert [r["type"] for r in found] == [kind for kind, _, _ in records]
    assert [r[key] for r, (_, key, _) in zip(found, records)] == [v for _, _, v in records]


def test_nested_metadata_objects_on_a_bad_line_are_not_each_decoded_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bad line holding many objects of a metadata type nested (a tool input, say):
    none ends where a record must, and none is handed to orjson, which reads (checks
    the UTF-8 of) all it is given: the line's length once per object."""
    import sessiondex.transcripts.reader as module

    calls: list[int] = []
    real = module.orjson.loads

    def counting(data: bytes) -> object:
        calls.append(len(data))
        return real(data)

    monkeypatch.setattr(module.orjson, "loads", counting)
    inner = b",".join(_meta("custom-title", customTitle=f"n{i}") for i in range(2000))
    assert glued_records(b"garbage[" + inner + b"]") == []
    assert calls == []
    assert glued_records(b"garbage[" + inner + b"]" + TITLE) == [
        {"type": "custom-title", "sessionId": SID, "customTitle": "T"}
    ]
    assert calls == [len(TITLE)]
