"""transcripts.chain: reading a whole transcript and the SDK's chain rules (docs/sdk-compat.md#conversation-chain)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiondex.transcripts.chain import (
    load_entries,
    main_chain,
    scan_chain,
    subagent_chain,
    visible_messages,
)
from tests.builders import FIXTURES_DIR, ConfigTree, write_jsonl


def _e(uuid: str, parent: str | None, type_: str = "user", **extra: Any) -> dict[str, Any]:
    """A minimal chain entry; a user text message unless told otherwise."""
    entry: dict[str, Any] = {
        "type": type_,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "s",
        "timestamp": extra.pop("timestamp", ""),
    }
    if type_ in ("user", "assistant"):
        entry["message"] = {"role": type_, "content": extra.pop("content", uuid)}
    entry.update(extra)
    return entry


def _uuids(entries: list[dict[str, Any]]) -> list[str]:
    return [e["uuid"] for e in entries]


# ----------------------------------------------------------------- load_entries
@pytest.mark.parametrize(
    ("lines", "expected_uuids", "problems"),
    [
        pytest.param([b'{"type":"user","uuid":"a"}'], ["a"], {}, id="plain"),
        pytest.param(
            [b'{"type":"user","uuid":"a"}', b"", b"   ", b"\r"],
            ["a"],
            {},
            id="blank-lines-are-no-problem",
        ),
        pytest.param(
            [b'{"type":"user","uuid":"a"', b'{"uuid":"b"}'],
            ["b"],
            {"malformed-json": 1},
            id="malformed",
        ),
        pytest.param(
            [b"[1,2]", b'"x"', b'{"uuid":"c"}'], ["c"], {"not-an-object": 2}, id="not-an-object"
        ),
        pytest.param(
            [b'{"uuid":"d","t":"\xff\xfe"}'],
            ["d"],
            {"invalid-utf8": 1},
            id="invalid-utf8-kept-and-counted",
        ),
        pytest.param([b'{"uuid":"e","n":NaN}'], ["e"], {}, id="stdlib-json-extension-as-sdk"),
        pytest.param([b'{"uuid":"f"}\r'], ["f"], {}, id="crlf"),
    ],
)
def test_load_entries_table(
    tmp_path: Path, lines: list[bytes], expected_uuids: list[str], problems: dict[str, int]
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    entries, counted = load_entries(path)
    assert [e["uuid"] for e in entries] == expected_uuids
    assert dict(counted) == problems


def test_load_entries_replaces_bad_bytes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"uuid":"d","text":"ok \xff end"}\n')
    entries, _ = load_entries(path)
    assert entries[0]["text"] == "ok \ufffd end"


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_line_with_raw_unicode_separator_survives(tmp_path: Path, separator: str) -> None:
    """splitlines() would cut these lines in two and lose both halves (the SDK fork bug)."""
    text = f"before{separator}after"
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {"type": "user", "uuid": "a", "parentUuid": None, "message": {"content": text}},
        ],
    )
    assert separator.encode() in path.read_bytes()  # raw in the file, not escaped
    entries, problems = load_entries(path)
    assert not problems
    assert entries[0]["message"]["content"] == text


def test_load_entries_does_not_touch_the_file(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [{"uuid": "a"}], mtime=1_700_000_000)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    load_entries(path)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


# ----------------------------------------------------------------- main_chain
MAIN_CHAIN_CASES: list[Any] = [
    pytest.param([_e("u1", None), _e("a1", "u1", "assistant")], ["u1", "a1"], id="linear"),
    pytest.param(
        # rewind: u2/a2 abandoned, the conversation went on from a1 with u2b/a2b
        [
            _e("u1", None),
            _e("a1", "u1", "assistant"),
            _e("u2", "a1"),
            _e("a2", "u2", "assistant"),
            _e("u2b", "a1"),
            _e("a2b", "u2b", "assistant"),
        ],
        ["u1", "a1", "u2b", "a2b"],
        id="rewind-latest-branch-wins",
    ),
    pytest.param(
        # the newest branch in the file wins even if it is shorter
        [
            _e("u1", None),
            _e("a1", "u1", "assistant"),
            _e("u2", "a1"),
            _e("a2", "u2", "assistant"),
            _e("u3", "a2"),
            _e("u2b", "a1"),
        ],
        ["u1", "a1", "u2b"],
        id="latest-in-file-not-longest",
    ),
    pytest.param(
        [_e("u1", None), _e("a1", "u1", "assistant"), _e("u2", "a1"), _e("m", "a1", isMeta=True)],
        ["u1", "a1", "u2"],
        id="meta-leaf-loses-to-older-main-leaf",
    ),
    pytest.param(
        [_e("u1", None), _e("a1", "u1", "assistant"), _e("m", "a1", isMeta=True)],
        ["u1", "a1", "m"],
        id="only-meta-candidate-falls-back-to-it",
    ),
    pytest.param(
        [_e("u1", None), _e("a1", "u1", "assistant"), _e("s1", None, isSidechain=True)],
        ["u1", "a1"],
        id="sidechain-leaf-skipped",
    ),
    pytest.param(
        [_e("u1", None), _e("a1", "u1", "assistant"), _e("t1", None, teamName="x")],
        ["u1", "a1"],
        id="team-leaf-skipped",
    ),
    pytest.param(
        [_e("s1", None, isSidechain=True), _e("s2", "s1", "assistant", isSidechain=True)],
        ["s1", "s2"],
        id="only-sidechain-candidates",
    ),
    pytest.param(
        # progress/system terminals lead back to their nearest message
        [
            _e("u1", None),
            _e("a1", "u1", "assistant"),
            _e("p1", "a1", "progress"),
            _e("x1", "p1", "system", subtype="stop_hook_summary"),
        ],
        ["u1", "a1"],
        id="non-message-terminal-walks-up",
    ),
    pytest.param(
        # compact boundary: parentUuid null, logicalParentUuid not followed
        [
            _e("u1", None),
            _e("a1", "u1", "assistant"),
            _e("cb", None, "system", subtype="compact_boundary", logicalParentUuid="a1"),
            _e("cs", "cb", isCompactSummary=True),
            _e("a2", "cs", "assistant"),
        ],
        ["cb", "cs", "a2"],
        id="compact-boundary-stops-walk",
    ),
    pytest.param([_e("a", "b"), _e("b", "a")], [], id="pure-cycle-has-no-terminal"),
    pytest.param(
        [_e("r", None), _e("a", "c"), _e("c", "a"), _e("leaf", "a")],
        ["c", "a", "leaf"],
        id="cycle-on-the-way-up-stops",
    ),
    pytest.param(
        [_e("u1", "missing"), _e("a1", "u1", "assistant")],
        ["u1", "a1"],
        id="missing-parent-is-root",
    ),
    pytest.param(
        [_e("u1", None), _e("a1", ["not", "a", "string"], "assistant")],
        ["a1"],
        id="non-string-parent-is-no-link",
    ),
    pytest.param(
        [{"type": "user", "uuid": 5}, {"type": "summary", "uuid": "x"}, _e("u1", None)],
        ["u1"],
        id="non-chain-records-ignored",
    ),
    pytest.param([], [], id="empty"),
]


@pytest.mark.parametrize(("entries", "expected"), MAIN_CHAIN_CASES)
def test_main_chain_table(entries: list[dict[str, Any]], expected: list[str]) -> None:
    assert _uuids(main_chain(entries)) == expected


def _tool_use(call: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call, "name": "Bash", "input": {}}


def _call(uuid: str, parent: str, mid: str, call: str, ts: str) -> dict[str, Any]:
    return _e(uuid, parent, "assistant", timestamp=ts, content=[_tool_use(call)]) | {
        "message": {"id": mid, "role": "assistant", "content": [_tool_use(call)]}
    }


def _result(uuid: str, parent: str, call: str, ts: str, **extra: Any) -> dict[str, Any]:
    return _e(
        uuid,
        parent,
        timestamp=ts,
        content=[{"type": "tool_result", "tool_use_id": call, "content": "ok"}],
        **extra,
    )


PARALLEL = [
    _e("u1", None, timestamp="t00"),
    _call("c1", "u1", "m1", "T1", "t01"),
    _call("c2", "c1", "m1", "T2", "t02"),
    _call("c3", "c2", "m1", "T3", "t03"),
    _result("r1", "c1", "T1", "t04"),
    _result("r2", "c2", "T2", "t05"),
    _result("r3", "c3", "T3", "t06"),
]


@pytest.mark.parametrize(
    ("continue_from", "expected"),
    [
        pytest.param(
            "r3", ["u1", "c1", "c2", "c3", "r1", "r2", "r3", "next"], id="from-last-result"
        ),
        pytest.param(
            "r1", ["u1", "c1", "c2", "c3", "r2", "r3", "r1", "next"], id="from-first-result"
        ),
    ],
)
def test_parallel_tool_calls_recovered(continue_from: str, expected: list[str]) -> None:
    entries = [*PARALLEL, _e("next", continue_from, "assistant", timestamp="t07")]
    assert _uuids(main_chain(entries)) == expected


def test_ambiguous_tool_use_id_is_not_used() -> None:
    """The same call id in two responses places nothing by id (only by parent)."""
    entries = [
        _e("u1", None),
        _call("c1", "u1", "m1", "T", "t1"),
        _e("u2", "c1"),
        _call("d1", "u2", "m2", "T", "t2"),
        _result("stray", "elsewhere", "T", "t3"),  # parent is no member: a stray by id only
        _e("u3", "d1"),
    ]
    assert "stray" not in _uuids(main_chain(entries))


def test_sidechain_result_never_answers_main_call() -> None:
    entries = [
        _e("u1", None),
        _call("c1", "u1", "m1", "T1", "t1"),
        _call("c2", "c1", "m1", "T2", "t2"),
        _result("r2", "c2", "T2", "t3"),
        _result("side", "zz", "T1", "t4", isSidechain=True, agentId="ag"),
        _e("next", "r2", "assistant"),
    ]
    assert _uuids(main_chain(entries)) == ["u1", "c1", "c2", "r2", "next"]


def test_visible_messages_filters_like_the_sdk() -> None:
    chain = [
        _e("u", None),
        _e("m", "u", isMeta=True),
        _e("p", "m", "progress"),
        _e("s", "p", isSidechain=True),
        _e("t", "s", teamName="x"),
        _e("c", "t", isCompactSummary=True),
        _e("a", "c", "assistant"),
    ]
    assert _uuids(visible_messages(chain)) == ["u", "c", "a"]


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        pytest.param(
            [
                _e("u", None, isSidechain=True),
                _e("a", "u", "assistant", isSidechain=True),
                _e("p", "a", "progress"),
            ],
            ["u", "a"],
            id="last-message-is-leaf",
        ),
        pytest.param(
            [_e("u", None), _e("m", "u", isMeta=True), _e("x", "u", "assistant")],
            ["u", "x"],
            id="file-order-not-branch",
        ),
        pytest.param([_e("u", None), _e("m", "u", isMeta=True)], ["u", "m"], id="meta-kept"),
        pytest.param([_e("p", None, "progress")], [], id="no-message"),
    ],
)
def test_subagent_chain_table(entries: list[dict[str, Any]], expected: list[str]) -> None:
    assert _uuids(subagent_chain(entries)) == expected


def test_builder_session_round_trip(tmp_path: Path) -> None:
    """A builder session (one line per content block) reads back whole."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session()
    s.user("hello")
    turn = s.assistant("hi", thinking="hmm", tool_uses=[("Bash", {"command": "ls"})])
    s.tool_result(turn.tool_use_ids[0], "a\nb")
    s.meta("custom-title", customTitle="T")
    entries, problems = load_entries(s.write())
    assert not problems
    chain = main_chain(entries)
    assert [e["type"] for e in chain] == ["user", "assistant", "assistant", "assistant", "user"]
    assert orjson.dumps(visible_messages(chain)) == orjson.dumps(chain)


SDK_CASES = [c for c in MAIN_CHAIN_CASES if c.id != "non-string-parent-is-no-link"] + [
    pytest.param([*PARALLEL, _e("next", "r3", "assistant")], None, id="parallel-last"),
    pytest.param([*PARALLEL, _e("next", "r1", "assistant")], None, id="parallel-first"),
]


@pytest.mark.parametrize(("entries", "_expected"), SDK_CASES)
def test_main_chain_equals_sdk_chain(entries: list[dict[str, Any]], _expected: Any) -> None:
    """The same tables through the SDK's own chain builder (it crashes on a list parent,
    so that case is ours alone)."""
    sdk = pytest.importorskip("claude_agent_sdk._internal.sessions")
    sdk_entries = [
        e
        for e in entries
        if e.get("type") in ("user", "assistant", "progress", "system", "attachment")
        and isinstance(e.get("uuid"), str)
    ]
    assert _uuids(main_chain(entries)) == _uuids(sdk._build_conversation_chain(sdk_entries))


# ----------------------------------------------------------------- two passes
# ``show`` and ``get_session_messages`` find the chain on stubs (pass 1) and read back only
# its lines (pass 2); the answer must be the whole-file answer, entry for entry.
def _two_pass_equals_whole_file(path: Path) -> None:
    entries, problems = load_entries(path)
    scan = scan_chain(path)
    assert scan.problems == problems
    for chain_of in (main_chain, subagent_chain):
        whole = chain_of(entries)
        stubs = chain_of(scan.stubs)
        assert _uuids(stubs) == _uuids(whole)
        assert list(scan.read(stubs)) == whole  # the same entries, the same order
    whole_visible = visible_messages(main_chain(entries))
    assert list(scan.read(visible_messages(main_chain(scan.stubs)))) == whole_visible


ODD_LINES = [
    b'{"type":"user","uuid":"u1","parentUuid":null,"message":{"content":"hi"}}',
    b"",
    b'{"type":"user","uuid":"bad","t":"\xff"}',
    b"not json",
    b'{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m",'
    b'"content":[{"type":"tool_use","id":"t1"},{"type":["odd"]},"x"]}}',
    b'{"type":"user","uuid":"r1","parentUuid":"a1","message":{"content":'
    b'[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}',
    b'{"type":"user","uuid":"u1","parentUuid":null,"message":"not a dict"}',  # duplicate
    b'{"type":"assistant","uuid":"a2","parentUuid":"r1","message":{"content":"line\xe2\x80\xa8two"}}',
    b'{"type":"user","uuid":"tail","parentUuid":"a2","message":{"content":"no newline"}}',
]


@pytest.mark.parametrize(("entries", "_expected"), [*MAIN_CHAIN_CASES, *SDK_CASES[-2:]])
def test_two_pass_chain_equals_whole_file_chain(
    tmp_path: Path, entries: list[dict[str, Any]], _expected: Any
) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", entries)
    _two_pass_equals_whole_file(path)


def test_two_pass_chain_on_odd_lines_and_fixtures(tmp_path: Path) -> None:
    odd = tmp_path / "odd.jsonl"
    odd.write_bytes(b"\n".join(ODD_LINES))  # the last line has no newline
    _two_pass_equals_whole_file(odd)
    fixtures = sorted((FIXTURES_DIR / "claude").rglob("*.jsonl"))
    assert len(fixtures) > 20
    for path in fixtures:
        _two_pass_equals_whole_file(path)


def test_two_pass_read_refuses_a_replaced_file(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "t.jsonl", [_e("u1", None), _e("u2", "u1")])
    scan = scan_chain(path)
    chain = main_chain(scan.stubs)
    write_jsonl(tmp_path / "new.jsonl", [_e("x1", None), _e("x2", "x1")]).replace(path)
    with pytest.raises(OSError, match="replaced"):
        list(scan.read(chain))
