"""show and export: the conversation from the transcript, as the SDK reads it."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.render.conversation import build_conversation, render_text
from tests.builders import ConfigTree, SessionWriter, one_session

CWD = "/tmp/sessiondex-show-tests/repo"  # outside any git repository (the SDK runs git)


def _run(tree: ConfigTree, tmp_path: Path, *args: str) -> Any:
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tree.root), "--db", str(tmp_path / "index.db"), *args]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


# ----------------------------------------------------------------- scenarios
def _plain(s: SessionWriter) -> dict[str, Any]:
    s.user("explain the build")
    s.assistant("It uses hatch.", thinking="let me look")
    s.user("and the tests?")
    s.assistant("pytest")
    return {}


def _parallel(s: SessionWriter, continue_from: int = -1) -> dict[str, Any]:
    """Three parallel calls written as the CLI does: each result's parent is its call."""
    s.user("run the three checks")
    turn = s.assistant(
        "Running them",
        tool_uses=[
            ("Bash", {"command": "check-alpha"}),
            ("Bash", {"command": "check-beta"}),
            ("Bash", {"command": "check-gamma"}),
        ],
    )
    results = [
        s.tool_result(tid, f"output-{name}", parentUuid=turn.uuids[i + 1])
        for i, (tid, name) in enumerate(zip(turn.tool_use_ids, ("alpha", "beta", "gamma")))
    ]
    s.last_uuid = results[continue_from]
    s.assistant("All three passed")
    return {}


def _rewind(s: SessionWriter) -> dict[str, Any]:
    s.user("start here")
    turn = s.assistant("ok")
    s.user("ABANDONED-PROMPT go left")
    s.assistant("ABANDONED-ANSWER going left")
    s.last_uuid = turn.uuid  # the user rewound to after "ok"
    s.user("go right instead")
    s.assistant("going right")
    return {"absent": ["ABANDONED-PROMPT", "ABANDONED-ANSWER"]}


def _compacted(s: SessionWriter) -> dict[str, Any]:
    s.user("BEFORE-COMPACT prompt")
    s.assistant("before answer")
    s.system("compact_boundary")
    s.user("Summary of the earlier conversation", isCompactSummary=True)
    s.user("after compact prompt")
    s.assistant("after answer")
    return {"absent": ["BEFORE-COMPACT"]}


def _meta_and_progress(s: SessionWriter) -> dict[str, Any]:
    s.user("<local-command-caveat>hidden</local-command-caveat>", is_meta=True)
    s.user("real prompt")
    turn = s.assistant(tool_uses=[("Read", {"file_path": "/x"})])
    s.progress(turn.tool_use_ids[0])
    s.tool_result(turn.tool_use_ids[0], "file text")
    s.attachment({"type": "queued_command", "prompt": "later"})
    s.assistant("read it")
    return {}


SCENARIOS: dict[str, Callable[[SessionWriter], dict[str, Any]]] = {
    "plain": _plain,
    "parallel-continue-last": _parallel,
    "parallel-continue-first": lambda s: _parallel(s, continue_from=0),
    "rewind": _rewind,
    "compacted": _compacted,
    "meta-and-progress": _meta_and_progress,
}


def _session(tmp_path: Path, name: str) -> tuple[ConfigTree, SessionWriter, dict[str, Any]]:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    info = SCENARIOS[name](s)
    s.meta("custom-title", customTitle=f"scenario {name}")
    s.write()
    return tree, s, info


# ----------------------------------------------------------------- SDK parity
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_json_matches_sdk_get_session_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    get_session_messages = pytest.importorskip("claude_agent_sdk").get_session_messages

    tree, s, _ = _session(tmp_path, name)
    result = _run(tree, tmp_path, "show", s.session_id, "--format", "json")
    assert result.exit_code == 0, result.output
    ours = json.loads(result.stdout)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tree.root))
    theirs = [dataclasses.asdict(m) for m in get_session_messages(s.session_id)]
    assert theirs, "the scenario must give the SDK something to compare"
    assert ours == theirs


def test_json_with_subagents_matches_sdk_at_call_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sdk = pytest.importorskip("claude_agent_sdk")
    get_session_messages, get_subagent_messages = (
        sdk.get_session_messages,
        sdk.get_subagent_messages,
    )

    tree, s = _with_subagent(tmp_path)
    result = _run(tree, tmp_path, "show", s.session_id, "--format", "json", "--subagents")
    ours = json.loads(result.stdout)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tree.root))
    main = [dataclasses.asdict(m) for m in get_session_messages(s.session_id)]
    sub = [dataclasses.asdict(m) for m in get_subagent_messages(s.session_id, "ag1")]
    assert sub and all(m["parent_tool_use_id"] == s.task_id for m in sub)
    # the subagent's messages follow the message that made the Task call
    call_at = next(
        i
        for i, m in enumerate(main)
        if any(
            isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") == s.task_id
            for b in m["message"]["content"]
        )
    )
    assert ours == main[: call_at + 1] + sub + main[call_at + 1 :]


# ----------------------------------------------------------------- what is shown
def test_rewind_shows_only_the_live_branch(tmp_path: Path) -> None:
    tree, s, info = _session(tmp_path, "rewind")
    for fmt in ("text", "md"):
        out = _run(tree, tmp_path, "show", s.session_id, "--format", fmt).stdout
        assert "go right instead" in out and "going right" in out
        for gone in info["absent"]:
            assert gone not in out


def test_compact_boundary_is_marked(tmp_path: Path) -> None:
    tree, s, info = _session(tmp_path, "compacted")
    out = _run(tree, tmp_path, "show", s.session_id).stdout
    assert "Conversation compacted" in out
    assert out.index("Conversation compacted") < out.index("after compact prompt")
    assert "BEFORE-COMPACT" not in out


@pytest.mark.parametrize("name", ["parallel-continue-last", "parallel-continue-first"])
def test_parallel_tool_calls_appear_in_order(tmp_path: Path, name: str) -> None:
    tree, s, _ = _session(tmp_path, name)
    out = _run(tree, tmp_path, "show", s.session_id, "--tools").stdout
    calls = [out.index(f"check-{n}") for n in ("alpha", "beta", "gamma")]
    outputs = [out.index(f"output-{n}") for n in ("alpha", "beta", "gamma")]
    assert calls == sorted(calls)
    assert max(calls) < min(outputs) and max(outputs) < out.index("All three passed")
    if name == "parallel-continue-last":  # the SDK's order: results by timestamp
        assert outputs == sorted(outputs)


def test_tools_hidden_by_default_and_long_output_folded(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("dump the log")
    turn = s.assistant("Here", tool_uses=[("Bash", {"command": "cat big.log"})])
    s.tool_result(turn.tool_use_ids[0], "".join(f"log line {i}\n" for i in range(500)))
    s.assistant("done")
    s.write()
    plain = _run(tree, tmp_path, "show", s.session_id).stdout
    assert "cat big.log" not in plain and "log line" not in plain
    for fmt in ("text", "md"):
        out = _run(tree, tmp_path, "show", s.session_id, "--tools", "--format", fmt).stdout
        assert "cat big.log" in out and "log line 0" in out
        assert "log line 499" not in out
        assert "500 lines" in out and "KB" in out


def _with_subagent(tmp_path: Path) -> tuple[ConfigTree, Any]:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("find the config loader")
    turn = s.assistant(
        "Delegating",
        tool_uses=[
            ("Task", {"description": "explore", "prompt": "find it", "subagent_type": "Explore"})
        ],
    )
    sub = s.subagent(agent_id="ag1", tool_use_id=turn.tool_use_ids[0], agent_type="Explore")
    sub.user("SUBAGENT-PROMPT find it")
    sub.assistant("SUBAGENT-ANSWER it is in config.py")
    s.tool_result(turn.tool_use_ids[0], "it is in config.py")
    s.assistant("MAIN-AFTER The loader is in config.py")
    s.write()
    s.task_id = turn.tool_use_ids[0]  # type: ignore[attr-defined]
    return tree, s


@pytest.mark.parametrize("fmt", ["text", "md"])
def test_subagent_appears_at_its_call_site(tmp_path: Path, fmt: str) -> None:
    tree, s = _with_subagent(tmp_path)
    without = _run(tree, tmp_path, "show", s.session_id, "--format", fmt).stdout
    assert "SUBAGENT-PROMPT" not in without
    out = _run(tree, tmp_path, "show", s.session_id, "--format", fmt, "--subagents").stdout
    assert (
        out.index("Delegating")
        < out.index("SUBAGENT-PROMPT")
        < out.index("SUBAGENT-ANSWER")
        < out.index("MAIN-AFTER")
    )
    assert "Explore" in out


def test_unlinked_subagent_is_listed_after(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("hello")
    s.assistant("hi")
    sub = s.subagent(agent_id="lost", tool_use_id="toolu_nowhere")
    sub.user("ORPHAN-SUBAGENT")
    s.write()
    out = _run(tree, tmp_path, "show", s.session_id, "--subagents").stdout
    assert "not linked" in out and out.index("hi") < out.index("ORPHAN-SUBAGENT")


def test_invalid_utf8_and_malformed_lines_still_show(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("first prompt")
    turn = s.assistant("answer")
    s.raw(b'{"type":"user","message":{"role":"user","content"\n')  # malformed
    s.raw(b"\xff\xfe garbage\n")
    line = json.dumps(
        {
            "parentUuid": turn.uuid,
            "type": "user",
            "uuid": "bad-bytes-1",
            "sessionId": s.session_id,
            "timestamp": "2026-11-01T11:00:00.000Z",
            "message": {"role": "user", "content": "caf@@ ok"},
        }
    ).encode()
    s.raw(line.replace(b"@@", b"\xc3") + b"\n")  # a lone lead byte: invalid UTF-8
    s.write()
    for fmt in ("text", "md"):
        result = _run(tree, tmp_path, "show", s.session_id, "--format", fmt)
        assert result.exit_code == 0
        assert "first prompt" in result.stdout and "answer" in result.stdout
        assert "caf\ufffd ok" in result.stdout
        assert "invalid UTF-8" in result.stdout and "skipped" in result.stdout
    result = _run(tree, tmp_path, "show", s.session_id, "--format", "json")
    assert json.loads(result.stdout)[-1]["message"]["content"] == "caf\ufffd ok"
    assert "note:" in result.stderr and "invalid UTF-8" in result.stderr


def test_raw_u2028_survives(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    prompt = "line one\u2028line two\u2029end"
    s.user(prompt)
    s.assistant("noted")
    path = s.write()
    assert "\u2028".encode() in path.read_bytes()
    messages = json.loads(_run(tree, tmp_path, "show", s.session_id, "--format", "json").stdout)
    assert [m["message"]["content"] for m in messages][0] == prompt
    assert prompt in _run(tree, tmp_path, "show", s.session_id, "--format", "md").stdout


def test_no_colour_when_not_a_terminal_and_colour_on_request(tmp_path: Path) -> None:
    tree, s, _ = _session(tmp_path, "plain")
    out = _run(tree, tmp_path, "show", s.session_id).stdout
    assert "\x1b[" not in out
    conv = build_conversation(
        one_session(_run(tree, tmp_path, "resolve", s.session_id, "--json").stdout)
    )
    assert "\x1b[" in render_text(conv, color=True)
    assert "\x1b[" not in render_text(conv, color=False)


def test_show_unknown_session_is_exit_1(tmp_path: Path) -> None:
    tree, _, _ = _session(tmp_path, "plain")
    result = _run(tree, tmp_path, "show", "00000000-0000-4000-8000-000000000000")
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_reading_changes_no_transcript(tmp_path: Path) -> None:
    tree, s = _with_subagent(tmp_path)
    files = sorted(p for p in tree.root.rglob("*") if p.is_file())
    before = [(p.read_bytes(), p.stat().st_mtime_ns) for p in files]
    _run(tree, tmp_path, "show", s.session_id, "--tools", "--subagents")
    _run(tree, tmp_path, "export", s.session_id, "-o", str(tmp_path / "x.html"), "--subagents")
    assert [(p.read_bytes(), p.stat().st_mtime_ns) for p in files] == before


# ----------------------------------------------------------------- export
class _TextCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs.extend(attrs)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_export_parses_and_holds_every_prompt(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD, git_branch="feature/x")
    prompts = [
        "plain prompt",
        "<script>alert('x')</script> & <b>not bold</b>",
        "quotes \" and ' and ]]> and </article>",
        "日本語のプロンプト\u2028two",
    ]
    for prompt in prompts:
        s.user(prompt)
        s.assistant(f"reply to {prompt[:5]}")
    s.pr_link(number=42, url="https://github.com/acme/shop/pull/42", repository="acme/shop")
    s.meta("custom-title", customTitle="Title <with> & tags")
    s.write()
    target = tmp_path / "out.html"
    result = _run(tree, tmp_path, "export", s.session_id, "-o", str(target), "--tools")
    assert result.exit_code == 0, result.output
    page = target.read_text(encoding="utf-8")
    parser = _TextCollector()
    parser.feed(page)
    parser.close()
    text = "".join(parser.text)
    for prompt in prompts:
        assert prompt in text
    assert "Title <with> & tags" in text and "feature/x" in text
    assert "https://github.com/acme/shop/pull/42" in text
    # self-contained, and user text never became markup
    assert "script" not in parser.tags and "link" not in parser.tags
    assert not [v for k, v in parser.attrs if k == "src"]
    assert [v for k, v in parser.attrs if k == "href"] == ["https://github.com/acme/shop/pull/42"]
    assert "b" not in parser.tags


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("out.md", "# scenario plain"),
        ("out.html", "<!DOCTYPE html>"),
        ("out.json", '[\n  {\n    "type": "user"'),
        ("out.txt", "# scenario plain"),
    ],
)
def test_export_format_from_extension(tmp_path: Path, name: str, expected: str) -> None:
    tree, s, _ = _session(tmp_path, "plain")
    result = _run(tree, tmp_path, "export", s.session_id, "-o", str(tmp_path / name))
    assert result.exit_code == 0, result.output
    assert (tmp_path / name).read_text(encoding="utf-8").startswith(expected)


def test_export_refuses_to_overwrite_unless_force(tmp_path: Path) -> None:
    tree, s, _ = _session(tmp_path, "plain")
    target = tmp_path / "out.md"
    target.write_text("keep me")
    result = _run(tree, tmp_path, "export", s.session_id, "-o", str(target))
    assert result.exit_code == 1 and "already exists" in result.output
    assert target.read_text() == "keep me"
    result = _run(
        tree, tmp_path, "export", s.session_id, "-o", str(target), "--force", "--format", "md"
    )
    assert result.exit_code == 0
    assert target.read_text(encoding="utf-8").startswith("# scenario plain")
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_export_into_missing_directory_is_an_error(tmp_path: Path) -> None:
    tree, s, _ = _session(tmp_path, "plain")
    result = _run(tree, tmp_path, "export", s.session_id, "-o", str(tmp_path / "no" / "x.md"))
    assert result.exit_code == 1 and "does not exist" in result.output


def test_metadata_only_file_by_path_says_so(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.meta("custom-title", customTitle="Only a title")
    path = s.write()
    for fmt in ("text", "md"):
        result = _run(tree, tmp_path, "show", str(path), "--format", fmt)
        assert result.exit_code == 0, result.output
        assert "Only a title" in result.stdout and "no messages" in result.stdout
    assert json.loads(_run(tree, tmp_path, "show", str(path), "--format", "json").stdout) == []


@dataclasses.dataclass
class Nested:
    """A session whose Task call (MAIN-CALL) starts ``outer``, whose own call
    (OUTER-CALL) starts ``inner`` in a folder of its own."""

    tree: ConfigTree
    session: SessionWriter
    main_call: str
    outer: Any
    outer_call: str


def _with_nested_subagents(tmp_path: Path) -> Nested:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("MAIN-PROMPT plan it")
    turn = s.assistant("MAIN-CALL", tool_uses=[("Task", {"prompt": "research"})])
    outer = s.subagent(agent_id="outer", tool_use_id=turn.tool_use_ids[0], agent_type="Plan")
    outer.user("OUTER-PROMPT research")
    outer_turn = outer.assistant("OUTER-CALL", tool_uses=[("Task", {"prompt": "dig"})])
    inner = s.subagent(
        agent_id="inner",
        tool_use_id=outer_turn.tool_use_ids[0],
        subdir="nested",
        meta={"parentAgentId": "outer"},
    )
    inner.user("INNER-PROMPT dig")
    outer.assistant("OUTER-DONE")
    s.tool_result(turn.tool_use_ids[0], "done")
    s.assistant("MAIN-DONE")
    s.write()
    return Nested(tree, s, turn.tool_use_ids[0], outer, outer_turn.tool_use_ids[0])


def test_nested_subagent_appears_inside_its_parent_subagent(tmp_path: Path) -> None:
    world = _with_nested_subagents(tmp_path)
    tree, s = world.tree, world.session
    out = _run(tree, tmp_path, "show", s.session_id, "--subagents").stdout
    order = ["MAIN-CALL", "OUTER-PROMPT", "OUTER-CALL", "INNER-PROMPT", "OUTER-DONE", "MAIN-DONE"]
    assert [out.index(m) for m in order] == sorted(out.index(m) for m in order)
    assert "not linked" not in out
    messages = json.loads(
        _run(tree, tmp_path, "show", s.session_id, "--format", "json", "--subagents").stdout
    )
    inner_ids = {
        (m["parent_tool_use_id"], m["parent_agent_id"]) for m in messages if m["parent_agent_id"]
    }
    assert inner_ids == {(world.outer_call, "outer")}


@pytest.mark.parametrize(
    "args", [["show", "{sid}"], ["export", "{sid}", "-o", "-", "--format", "md"]]
)
def test_header_values_from_the_transcript_stay_on_their_line(
    tmp_path: Path, args: list[str]
) -> None:
    """A newline in a recorded cwd, branch or tag printed a header line of its own
    ("branch: br" then "FAKE: line"): a transcript could forge header lines."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/p/nl\ndir", git_branch="br\nFAKE: line")
    s.user("hello there")
    s.meta("tag", tag="t\u2028FAKE: tag")  # str.splitlines breaks at U+2028 too
    s.write()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, *(a.format(sid=s.session_id) for a in args)])
    assert result.exit_code == 0, result.output
    assert not [line for line in result.stdout.splitlines() if "FAKE" in line.split(":")[0]]
    assert "\u2028" not in result.stdout
    assert "br FAKE: line" in result.stdout and "/p/nl dir" in result.stdout


DEEP_SID = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"


def _deep_tool_input_session(tmp_path: Path, depth: int) -> ConfigTree:
    """A tool call whose input nests ``depth`` arrays (orjson reads up to 1,024)."""
    tree = ConfigTree(tmp_path / "claude")
    project = tree.project_dir(CWD)
    project.mkdir(parents=True)
    head = {"sessionId": DEEP_SID, "cwd": CWD, "timestamp": "2026-11-01T10:00:00.000Z"}
    user = {**head, "type": "user", "uuid": "u1", "parentUuid": None}
    user["message"] = {"role": "user", "content": "run the deep tool"}
    deep = '{"v":' + "[" * depth + "1" + "]" * depth + "}"
    call = {**head, "type": "assistant", "uuid": "a1", "parentUuid": "u1"}
    block = {"type": "tool_use", "id": "t1", "name": "Deep", "input": "DEEP"}
    call["message"] = {"id": "m1", "role": "assistant", "content": [block]}
    call = json.dumps(call).replace('"DEEP"', deep)  # json.dumps could not write it
    (project / f"{DEEP_SID}.jsonl").write_text(json.dumps(user) + "\n" + call + "\n")
    return tree


@pytest.mark.parametrize("depth", [300, 1000])
@pytest.mark.parametrize(
    "args",
    [
        ["show", DEEP_SID],
        ["show", DEEP_SID, "--tools"],
        ["show", DEEP_SID, "--format", "md", "--tools"],
        ["show", DEEP_SID, "--format", "json"],
        ["export", DEEP_SID, "-o", "-", "--format", "html", "--tools"],
    ],
)
def test_a_deeply_nested_tool_input_is_shown_without_a_traceback(
    tmp_path: Path, depth: int, args: list[str]
) -> None:
    """Python's json module recursed past the interpreter's limit on a tool input orjson
    had read (orjson writes only 255 levels): a traceback for a line of a transcript."""
    tree = _deep_tool_input_session(tmp_path, depth)
    result = _run(tree, tmp_path, *args, "--cwd", CWD)
    assert result.exit_code == 0, result.output[-300:]
    assert "Traceback" not in result.output
    if "json" in args:
        assert result.stdout.count("[") >= depth  # the input kept whole, not elided
    else:
        assert "run the deep tool" in result.stdout


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_subagents_nested_past_the_shown_depth_are_listed_after(tmp_path: Path, fmt: str) -> None:
    """Subagents that each start the next, far deeper than Claude Code goes: the first
    levels appear at their calls, the rest after the conversation; no traceback."""
    from sessiondex.render.conversation import MAX_SUBAGENT_NESTING

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("start the chain")
    call = s.assistant("MAIN-CALL", tool_uses=[("Task", {"prompt": "go"})]).tool_use_ids[0]
    levels = MAX_SUBAGENT_NESTING * 8
    parent = None
    for level in range(levels):
        meta = {"parentAgentId": parent} if parent else {}
        sub = s.subagent(agent_id=f"lvl{level}", tool_use_id=call, meta=meta)
        sub.user(f"LEVEL-{level}-PROMPT")
        call = sub.assistant(f"LEVEL-{level}-CALL", tool_uses=[("Task", {})]).tool_use_ids[0]
        parent = f"lvl{level}"
    s.write()
    result = _run(tree, tmp_path, "show", s.session_id, "--subagents", "--format", fmt)
    assert result.exit_code == 0, result.output[-300:]
    assert "Traceback" not in result.output
    for level in range(levels):
        assert f"LEVEL-{level}-PROMPT" in result.stdout


@pytest.mark.parametrize("fmt", ["text", "md"])
def test_a_tool_result_that_is_an_object_is_shown_as_json(tmp_path: Path, fmt: str) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("ask the tool")
    turn = s.assistant("calling", tool_uses=[("Lookup", {"key": "a"})])
    s.tool_result(turn.tool_use_ids[0], {"found": True, "value": "é"})
    s.write()
    result = _run(tree, tmp_path, "show", s.session_id, "--tools", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert '{"found": true, "value": "é"}' in result.stdout
    assert "'found'" not in result.stdout  # not a Python repr


def test_a_markdown_export_holds_no_live_html_and_no_message_swallows_the_next(
    tmp_path: Path,
) -> None:
    """Rendered by a CommonMark renderer that passes raw HTML through (pandoc, mkdocs,
    Python-Markdown do), nothing from the transcript becomes HTML, every message keeps
    its own heading, and no text forges one."""
    from markdown_it import MarkdownIt

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(
        cwd="/p/`<img src=x onerror=alert(1)>`", git_branch="fix/`<script>alert(2)</script>`"
    )
    s.meta("custom-title", customTitle="<img src=x onerror=alert(3)> # title")
    s.meta("tag", tag="<b onmouseover=alert(4)>t</b>")
    s.user("look:\n```python\nprint('unclosed fence')\n## Assistant · 2026-01-01 forged")
    turn = s.assistant(
        "Sure. <script>alert(5)</script> and <!-- hide the rest\n```js\nnever closed",
        tool_uses=[("`<img src=y onerror=alert(6)>`", {"x": "<script>alert(7)</script>"})],
    )
    s.tool_result(turn.tool_use_ids[0], "<iframe src=javascript:alert(8)>")
    s.user("SECOND-PROMPT <em>kept as typed</em>")
    s.assistant("FINAL-ANSWER with `<code>` and **bold**")
    s.write()
    result = _run(tree, tmp_path, "show", s.session_id, "--format", "md", "--tools")
    assert result.exit_code == 0, result.output
    page = MarkdownIt("commonmark").render(result.stdout)
    for live in ("<script", "<img", "<iframe", "<b onmouseover", "<em>", "<!--"):
        assert live not in page, live
    headings = re.findall(r"<h2>(\w+) ·", page)
    assert headings == ["User", "Assistant", "Tool", "User", "Assistant"]  # none forged or lost
    assert "SECOND-PROMPT &lt;em&gt;kept as typed&lt;/em&gt;" in page
    assert "<strong>bold</strong>" in page and "<code>&lt;code&gt;</code>" in page
    assert "<h1>&lt;img src=x onerror=alert(3)&gt; # title</h1>" in page


def _markdown_of(tmp_path: Path, assistant: str, *, then: str = "NEXT-PROMPT") -> str:
    """``show --format md`` of a session whose assistant answers ``assistant`` to a
    first prompt, then is asked ``then`` and answers "done"."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("first prompt")
    s.assistant(assistant)
    s.user(then)
    s.assistant("done")
    s.write()
    result = _run(tree, tmp_path, "show", s.session_id, "--format", "md")
    assert result.exit_code == 0, result.output
    return str(result.stdout)


# pandoc's attribute syntax (raw_attribute, bracketed_spans, *_attributes, fenced
# divs) and Python-Markdown's attr_list put live HTML or event handlers in a page from
# plain Markdown text, no "<" needed (helper 115).
PANDOC_ATTRIBUTES = (
    "```{=html}\n<script>alert('fenced raw')</script>\n```\n\n"
    "inline: `<img src=x onerror=alert(1)>`{=html}\n\n"
    "~~~ {.js onclick=alert(2)}\nlet x = 1;\n~~~\n\n"
    "span: [x]{onclick=alert(3)} and [a](https://e.x){onmouseover=alert(4)}\n\n"
    "## heading {onclick=alert(5)}\n\n"
    "::: {onclick=alert(6)}\ndiv\n:::\n\n"
    "a paragraph\n{: onclick=alert(7) }"
)


def test_a_markdown_export_holds_no_attribute_syntax_a_renderer_would_make_live(
    tmp_path: Path,
) -> None:
    import shutil

    from markdown_it import MarkdownIt

    markdown = _markdown_of(tmp_path, PANDOC_ATTRIBUTES, then="PROMPT-2 must be visible")
    tokens = MarkdownIt("commonmark").parse(markdown)
    assert [t.info for t in tokens if t.type == "fence" and "{" in t.info] == []
    prose = markdown.split("## Assistant", 1)[1].split("## User", 1)[0]
    unescaped = re.findall(r"(?<![\\`])\{", re.sub(r"`[^`\n]*`", "", prose))
    assert unescaped == [], prose
    page = MarkdownIt("commonmark").render(markdown)
    assert "alert(5)" in page and "PROMPT-2 must be visible" in page  # shown, as text
    if shutil.which("pandoc"):  # the renderer that made them live, where it is installed
        html = _pandoc_html(markdown)
        for live in ("<script", "<img", "<iframe"):
            assert live not in html, live
        assert re.findall(r"<[^>]*\son\w+\s*=", html) == []  # no event handler in a tag
        assert "PROMPT-2 must be visible" in html


def _pandoc_html(markdown: str) -> str:
    """``markdown`` as pandoc renders it to HTML (it sanitizes nothing)."""
    import subprocess

    return subprocess.run(
        ["pandoc", "-f", "markdown", "-t", "html"],
        input=markdown,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


# A link or image whose destination runs script is live in pandoc's and Python-Markdown's
# HTML, which sanitize no URL (markdown-it drops them; the web view uses it). Found by
# the new-user pass of helper 305: `[here](javascript:alert(1))` came out as written.
SCRIPT_LINKS = (
    "click [here](javascript:alert(1)) or ![x](javascript:alert(2))\n\n"
    "[a](jav&#x61;script:alert(3)) [b](<javascript:alert(4)>) [c]( JavaScript:alert(5) 't')"
    " [h](\njavascript:alert(9)) [i](java&#9;script:alert(10)) [j\\](javascript:alert(11))\n\n"
    "[d](vbscript:msgbox(6)) [e](data:text/html;base64,PHNjcmlwdD4=)\n\n"
    "by reference: [f][ref] and [g]\n\n"
    "[ref]: javascript:alert(7)\n"
    "[g]:\n  javascript:alert(8)\n\n"
    "kept: [docs](https://example.com/a_(b)) [local](#top) [mail](mailto:a@b.c)"
    " [rel](docs/x.md) `[code](javascript:x)`"
)


def _destinations(markdown: str) -> list[str]:
    """Every link's and image's destination as a renderer that checks none sees it."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark")
    md.validateLink = lambda url: True  # as pandoc and Python-Markdown: no sanitizing
    out = []
    for block in md.parse(markdown):
        for token in block.children or []:
            if token.type in ("link_open", "image"):
                out.append(str(token.attrs.get("href") or token.attrs.get("src")))
    return out


def test_a_markdown_export_holds_no_link_that_runs_script(tmp_path: Path) -> None:
    import shutil
    from urllib.parse import unquote

    markdown = _markdown_of(tmp_path, SCRIPT_LINKS, then="PROMPT-2 must be visible")
    found = _destinations(markdown)
    live = [
        url
        for url in found
        if re.match(r"(javascript|vbscript|data):", re.sub(r"[\x00-\x20]", "", unquote(url)), re.I)
    ]
    assert live == [], markdown
    assert set(found) >= {"https://example.com/a_(b)", "#top", "mailto:a@b.c", "docs/x.md"}
    for shown in ("alert(1)", "alert(7)", "alert(8)", "msgbox(6)", "PROMPT-2 must be visible"):
        assert shown in markdown  # kept as text
    if shutil.which("pandoc"):
        html = _pandoc_html(markdown)
        assert re.findall(r"(?:href|src)=\"\s*(?:javascript|vbscript|data):", html, re.I) == []
        assert 'href="https://example.com/a_(b)"' in html


def test_markdown_of_a_long_line_is_not_made_one_character_at_a_time(tmp_path: Path) -> None:
    """Helper 608: ``export --format md`` of a 50 MB transcript of 10 KB lines took
    6.6 s (html: 0.6 s): the assistant's lines were made inert, and the prompts'
    fences sized, by a Python loop over every character. Counted as the lines of
    render/conversation.py run (no clock): they grow with the characters that matter
    (``<``, ``{``, backticks, ``]``), not with the text around them."""
    import sys

    from sessiondex.render import conversation

    prose = "lorem ipsum dolor sit amet " * 4000  # 108,000 characters, one line
    runs = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal runs
        if frame.f_code.co_filename != conversation.__file__:
            return None
        runs += event == "line"
        return tracer

    sys.settrace(tracer)
    try:
        markdown = _markdown_of(tmp_path, prose + "<b>{x}`<i>`", then=prose + "``")
    finally:
        sys.settrace(None)
    assert prose + "\\<b>\\{x}`<i>`" in markdown  # made inert as before
    assert f"```text\n{prose}``\n```" in markdown  # a fence longer than the prompt's run
    assert runs < 5_000, runs


# Indented code in the assistant's Markdown is code: shown as written, no backslash.
INDENTED_CODE = [
    (
        "Example:\n\n    x = <T>y;\n    if (a) { b(); }\n\nafter",
        ["x = &lt;T&gt;y;", "if (a) { b(); }"],
    ),
    ("    first line is code <T>\n\ntext", ["first line is code &lt;T&gt;"]),
]


@pytest.mark.parametrize(("assistant", "literal"), INDENTED_CODE)
def test_indented_code_in_the_assistants_markdown_is_kept_as_written(
    tmp_path: Path, assistant: str, literal: list[str]
) -> None:
    from markdown_it import MarkdownIt

    page = MarkdownIt("commonmark").render(_markdown_of(tmp_path, assistant))
    code = "".join(re.findall(r"<pre><code>(.*?)</code></pre>", page, re.S))
    for text in literal:
        assert text in code, (text, code)
    assert "\\" not in code


@pytest.mark.parametrize(
    ("assistant", "shown", "hidden"),
    [
        # a fence inside a list item ends with its item: what follows is outside it
        ("- first\n  ```\n  make\n- second\n<script>alert(1)</script>", None, "<script"),
        # ...and no closing line is added that would open a fence over the next message
        ("- build\n  ```\n  make\n- test", None, None),
        # code fenced inside a numbered item is code: shown as written, no backslashes
        ('1. Create the file:\n\n    ```html\n    <div class="x">hi</div>\n    ```',
         '&lt;div class=&quot;x&quot;&gt;hi&lt;/div&gt;', "\\&lt;"),
    ],
)  # fmt: skip
def test_markdown_export_follows_fences_inside_list_items(
    tmp_path: Path, assistant: str, shown: str | None, hidden: str | None
) -> None:
    from markdown_it import MarkdownIt

    page = MarkdownIt("commonmark").render(_markdown_of(tmp_path, assistant))
    assert re.findall(r"<h2>(\w+) ·", page) == ["User", "Assistant", "User", "Assistant"]
    assert "NEXT-PROMPT" in page.split("<h2>User")[-1]
    if shown:
        assert shown in page
    if hidden:
        assert hidden not in page


@pytest.mark.parametrize("upper", [False, True], ids=["as-named", "upper-case"])
@pytest.mark.parametrize("command", ["show", "resolve", "export -o {out}"])
def test_a_transcript_that_cannot_be_read_is_named_not_called_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, upper: bool
) -> None:
    """A transcript unreadable since before its first index (a restore that left mode
    000) was "No conversation found" for an ID the user can see in ``ls``. The check is
    simulated (``os.access``, as a failed open would be): the suite may run as root."""
    import os

    tree = ConfigTree(tmp_path / "claude")
    locked, other = tree.session(cwd=CWD), tree.session(cwd=CWD)
    for s, text in ((locked, "locked away"), (other, "still readable")):
        s.user(text)
        s.write()
    real_access, real_open = os.access, os.open

    def denied(path: Any) -> bool:
        return os.fspath(path) == str(locked.path)

    def fake_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        if denied(path):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "access", lambda p, m: False if denied(p) else real_access(p, m))
    monkeypatch.setattr(os, "open", fake_open)  # transcripts are opened by os.open
    argv = command.format(out=tmp_path / "out.md").split()
    typed = locked.session_id.upper() if upper else locked.session_id
    result = _run(tree, tmp_path, *argv[:1], typed, *argv[1:])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == (
        f"Error: cannot read {locked.path} (Permission denied); session {typed} is not indexed"
    )
    missing = other.session_id[:-4] + "0000"
    result = _run(tree, tmp_path, "show", missing)
    assert result.exit_code == 1
    # After the read's note that a transcript could not be read (the answer may lack it).
    note, line = result.output.strip().splitlines()
    assert note.startswith(f"note: {locked.path}: Permission denied")
    assert line == f"No conversation found with session ID: {missing}"


@pytest.mark.parametrize("case", ["parent-off-chain", "names-its-own-call"])
def test_json_lists_each_subagent_message_once(tmp_path: Path, case: str) -> None:
    """A subagent started by one whose call is not on the chain (a rewound branch) was
    listed twice with --subagents --format json: once among the unlinked, again after
    its parent's call. So was one whose toolUseId names its own call."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("plan it")
    s.assistant("nothing delegated on the chain")
    if case == "parent-off-chain":
        outer = s.subagent(agent_id="b-outer", tool_use_id="toolu_DEAD")
        outer.user("OUTER-PROMPT")
        call = outer.assistant("INNER-CALL", tool_uses=[("Task", {"prompt": "dig"})])
        inner = s.subagent(
            agent_id="a-inner", tool_use_id=call.tool_use_ids[0], meta={"parentAgentId": "b-outer"}
        )
        inner.user("INNER-PROMPT")
        inner.assistant("INNER-DONE")
    else:
        loop = s.subagent(agent_id="a-loop", tool_use_id="toolu_SELF")
        loop.user("LOOP-PROMPT")
        loop.assistant("LOOP-CALL", tool_uses=[("Task", {"prompt": "again"})])
        loop.meta_json["toolUseId"] = loop.entries[-1]["message"]["content"][-1]["id"]
    s.write()
    messages = json.loads(
        _run(tree, tmp_path, "show", s.session_id, "--format", "json", "--subagents").stdout
    )
    uuids = [m["uuid"] for m in messages]
    assert len(uuids) == len(set(uuids))
    texts = [json.dumps(m["message"]) for m in messages]
    if case == "parent-off-chain":
        order = ["OUTER-PROMPT", "INNER-CALL", "INNER-PROMPT", "INNER-DONE"]
        at = [next(i for i, t in enumerate(texts) if word in t) for word in order]
        assert at == sorted(at)
    else:
        assert sum("LOOP-PROMPT" in t for t in texts) == 1


@pytest.mark.parametrize("options", [[], ["--subagents"]])
def test_export_counts_what_it_wrote(tmp_path: Path, options: list[str]) -> None:
    """With --subagents the file held the subagents' messages too, and the line said
    only the main conversation's count."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("plan it")
    turn = s.assistant("delegating", tool_uses=[("Task", {"prompt": "research"})])
    sub = s.subagent(agent_id="a1", tool_use_id=turn.tool_use_ids[0])
    sub.user("research this")
    sub.assistant("found it")
    s.write()
    out = tmp_path / "x.json"
    result = _run(tree, tmp_path, "export", s.session_id, "-o", str(out), *options)
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text())
    main = sum(1 for m in written if not m["parent_tool_use_id"])
    of_subagents = len(written) - main
    said = (
        f"({main} messages and {of_subagents} of subagents, json)"
        if options
        else (f"({main} messages, json)")
    )
    assert said in result.stderr
    assert of_subagents == (2 if options else 0)


def _server_tools_session(tree: ConfigTree) -> SessionWriter:
    """A PDF attached alone, then a web search the API ran itself: its call and result
    are assistant records of their own, as Claude Code writes each content block."""
    s = tree.session(cwd=CWD)
    s.user([{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}])  # fmt: skip
    s.assistant("reading the PDF")
    s.user("search the web")
    blocks = [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
         "input": {"query": "sqlite fts5"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": [{"type": "web_search_result", "title": "FTS5",
                      "url": "https://sqlite.org/fts5.html"}]},
        {"type": "text", "text": "found it"},
    ]  # fmt: skip
    parent = s.entries[-1]["uuid"]
    for n, block in enumerate(blocks):
        uuid = f"b0000000-0000-4000-8000-00000000000{n}"
        s.entries.append(
            {**s.entries[-1], "type": "assistant", "uuid": uuid, "parentUuid": parent,
             "message": {"id": "msg_9", "role": "assistant", "content": [block]}}
        )  # fmt: skip
        parent = uuid
    return s


@pytest.mark.parametrize(
    ("fmt", "options", "shown", "hidden"),
    [
        ("text", [], ["[document]", "found it"], ["web_search", "sqlite.org"]),
        (
            "text",
            ["--tools"],
            ["[document]", "web_search", "FTS5 https://sqlite.org/fts5.html"],
            [],
        ),
        ("md", ["--tools"], ["[document]", "web_search", "https://sqlite.org/fts5.html"], []),
    ],
)
def test_documents_and_server_tools_are_shown(
    tmp_path: Path, fmt: str, options: list[str], shown: list[str], hidden: list[str]
) -> None:
    """A message made only of a PDF vanished from text, Markdown and HTML (and so from
    --uuids, which fork --up-to aims with), and a web search the API ran was left out
    even with --tools."""
    tree = ConfigTree(tmp_path / "claude")
    s = _server_tools_session(tree)
    s.write()
    out = _run(tree, tmp_path, "show", s.session_id, "--format", fmt, *options).stdout
    assert all(text in out for text in shown), out
    assert not any(text in out for text in hidden), out


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_a_subagent_transcript_path_shows_that_file(tmp_path: Path, fmt: str) -> None:
    """semantics §3.1: a transcript path names that file. ``show`` of a subagent's
    transcript printed its parent session's conversation instead; it shows the
    subagent's own (with the session it belongs to in the header), the subagents it
    started with --subagents, and in JSON what the SDK's get_subagent_messages gives."""
    world = _with_nested_subagents(tmp_path)
    tree, s, outer = world.tree, world.session, world.outer

    result = _run(tree, tmp_path, "show", str(outer.path), "--format", fmt)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "OUTER-PROMPT" in out and "OUTER-DONE" in out
    assert "MAIN-CALL" not in out and "MAIN-DONE" not in out and "INNER-PROMPT" not in out
    if fmt == "json":
        messages = json.loads(out)
        assert {(m["parent_tool_use_id"], m["parent_agent_id"]) for m in messages} == {
            (world.main_call, None)
        }
        assert {m["session_id"] for m in messages} == {s.session_id}
    else:
        # the heading is the session's title; the header says which subagent this is
        assert s.session_id in out and re.search(r"subagent\W+outer \(Plan\)", out)

    nested = _run(tree, tmp_path, "show", str(outer.path), "--subagents", "--format", fmt).stdout
    order = ["OUTER-PROMPT", "OUTER-CALL", "INNER-PROMPT", "OUTER-DONE"]
    assert [nested.index(m) for m in order] == sorted(nested.index(m) for m in order)
    assert "MAIN-CALL" not in nested and "not linked" not in nested

    # the main transcript's path still shows the whole session
    whole = _run(tree, tmp_path, "show", str(s.path), "--subagents").stdout
    assert whole.index("MAIN-PROMPT") < whole.index("OUTER-PROMPT") < whole.index("MAIN-DONE")


def _with_unreached_subagents(tmp_path: Path) -> tuple[ConfigTree, Any, Any]:
    """A workflow agent whose call is not on the main chain, and the agent it started."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("MAIN-PROMPT run the workflow")
    s.assistant("MAIN-DONE")
    parent = s.subagent(
        agent_id="wfp", tool_use_id="toolu_not_on_the_chain", subdir="workflows/run-1"
    )
    parent.user("PARENT-PROMPT")
    call = parent.assistant("PARENT-CALL", tool_uses=[("Task", {"prompt": "child"})])
    child = s.subagent(
        agent_id="wfc",
        tool_use_id=call.tool_use_ids[0],
        subdir="workflows/run-1",
        meta={"parentAgentId": "wfp"},
    )
    child.user("CHILD-PROMPT")
    parent.assistant("PARENT-DONE")
    s.write()
    return tree, parent, child


def test_a_subagent_not_reached_from_the_main_chain_shows_the_agents_it_started(
    tmp_path: Path,
) -> None:
    tree, parent, _ = _with_unreached_subagents(tmp_path)
    out = _run(tree, tmp_path, "show", str(parent.path), "--subagents").stdout
    order = ["PARENT-PROMPT", "PARENT-CALL", "CHILD-PROMPT", "PARENT-DONE"]
    assert [out.index(m) for m in order] == sorted(out.index(m) for m in order)
    assert "MAIN-PROMPT" not in out.split("\n", 1)[1]  # past the heading


def test_a_subagent_path_through_a_link_to_the_config_dir_is_that_subagent(
    tmp_path: Path,
) -> None:
    """--config-dir given as it is, the path through a link to it: the subagent file
    was read as a loose transcript (no messages, a resume line naming the file)."""
    tree, parent, _ = _with_unreached_subagents(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(tree.root)
    via_link = link / parent.path.relative_to(tree.root)
    shown = _run(tree, tmp_path, "show", str(via_link))
    assert shown.exit_code == 0 and "PARENT-PROMPT" in shown.stdout
    assert "subagent: wfp" in shown.stdout
    found = one_session(_run(tree, tmp_path, "resolve", str(via_link), "--json").stdout)
    assert (
        found["file_path"]
        == str(tree.root / parent.path.relative_to(tree.root).parents[3]) + ".jsonl"
    )


def test_a_subagent_in_a_folder_that_cannot_be_listed_is_read_from_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session's listing of its subagents did not reach it (a folder that can be
    entered but not listed, mode 311): show was a ValueError traceback."""
    from sessiondex.render import conversation

    tree, parent, _ = _with_unreached_subagents(tmp_path)
    # what the listing of such a folder finds: nothing below it
    monkeypatch.setattr(conversation, "iter_subagent_files", lambda *args, **kwargs: iter(()))
    shown = _run(tree, tmp_path, "show", str(parent.path))
    assert shown.exit_code == 0, shown.output
    assert "PARENT-PROMPT" in shown.stdout and "subagent: wfp" in shown.stdout


@pytest.mark.parametrize("with_main", [True, False])
def test_a_copied_subagent_transcript_shows_that_subagent(tmp_path: Path, with_main: bool) -> None:
    """A subagent transcript outside the configured dirs (a copied session folder) was
    read as a loose transcript of its own: no messages on its chain, and a resume line
    pointing claude at the subagent file."""
    import shutil

    world = _with_nested_subagents(tmp_path)
    s = world.session
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copytree(s.path.with_suffix(""), copy / s.session_id)
    if with_main:
        shutil.copy2(s.path, copy / s.path.name)
    copied = copy / world.outer.path.relative_to(s.path.parent)
    shown = _run(world.tree, tmp_path, "show", str(copied))
    assert shown.exit_code == 0, shown.output
    assert "OUTER-PROMPT" in shown.stdout and "subagent: outer" in shown.stdout
    assert "MAIN-DONE" not in shown.stdout
    found = one_session(_run(world.tree, tmp_path, "resolve", str(copied), "--json").stdout)
    assert found["session_id"] == s.session_id
    resumed = _run(world.tree, tmp_path, "resume", str(copied), "--dry-run")
    said = _run(world.tree, tmp_path, "resolve", str(copied)).stdout
    if with_main:
        assert found["file_path"] == str(copy / s.path.name)
        assert resumed.exit_code == 0 and s.path.name in resumed.stdout
    else:
        assert found["resume_command"] is None  # claude cannot resume a subagent file
        assert resumed.exit_code == 1 and resumed.stdout == ""
        assert "Claude Code cannot resume it" in resumed.stderr
        assert "matched by path: it is a subagent's transcript" in said


# `--json` is short for `--format json` in every command with a json format; show and
# export had their own --format without it (helpers 120, 123).
@pytest.mark.parametrize(
    ("command", "other"),
    [(("show",), "md"), (("export", "-o", "-"), "html")],
)
def test_json_shorthand_in_show_and_export(
    tmp_path: Path, command: tuple[str, ...], other: str
) -> None:
    tree, s, _ = _session(tmp_path, "plain")
    name, *rest = command
    longhand = _run(tree, tmp_path, name, s.session_id, *rest, "--format", "json")
    shorthand = _run(tree, tmp_path, name, s.session_id, *rest, "--json")
    assert longhand.exit_code == shorthand.exit_code == 0
    assert json.loads(shorthand.stdout) == json.loads(longhand.stdout) != []
    both = _run(tree, tmp_path, name, s.session_id, *rest, "--json", "--format", other)
    assert both.exit_code == 2 and "disagree" in both.output


@pytest.mark.parametrize(
    ("arg", "shown"),
    [
        ("full", True),  # read from its transcript, as Claude Code opens it
        ("upper", True),  # the ID as some tools print it
        ("prefix", False),  # a prefix needs the index
    ],
)
def test_a_session_not_indexed_yet_is_shown_by_its_full_id(
    tmp_path: Path, arg: str, shown: bool
) -> None:
    """``--no-refresh`` before a new session's first refresh: the index has no row for
    it, and a full ID said "No conversation found" though its transcript is there."""
    tree = ConfigTree(tmp_path / "claude")
    old = tree.session(cwd=CWD)
    old.user("an older question")
    old.assistant("an older answer")
    old.write()
    assert _run(tree, tmp_path, "index").exit_code == 0
    new = tree.session(cwd=CWD)
    new.user("the newest question")
    new.assistant("the newest answer")
    new.write()
    given = {
        "full": new.session_id,
        "upper": new.session_id.upper(),
        "prefix": new.session_id[:8],
    }[arg]
    result = _run(tree, tmp_path, "--no-refresh", "show", given, "--cwd", CWD)
    if shown:
        assert result.exit_code == 0, result.output
        assert "the newest question" in result.stdout and "the newest answer" in result.stdout
        resolved = one_session(
            _run(tree, tmp_path, "--no-refresh", "resolve", given, "--cwd", CWD, "--json").stdout
        )
        assert resolved["session_id"] == new.session_id
    else:
        assert result.exit_code == 1 and "No session matches" in result.stderr


def test_a_full_id_not_found_looks_in_each_project_dir_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full ID the index has no row for walked every project dir twice: once for the
    transcripts to read, once more (the same paths) for one it cannot read."""
    from sessiondex.indexer.db import open_db
    from sessiondex.indexer.refresh import refresh
    from sessiondex.query.resolve import NotFound, resolve
    from sessiondex.transcripts import discover

    tree = ConfigTree(tmp_path / "claude")
    for cwd in ("/w/a", "/w/b", "/w/c"):
        s = tree.session(cwd=cwd)
        s.user("a question")
        s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    walks: list[Path] = []
    listed = discover.iter_project_keys

    def counted(root: Path, *args: Any, **kwargs: Any) -> Any:
        walks.append(root)
        return listed(root, *args, **kwargs)

    monkeypatch.setattr(discover, "iter_project_keys", counted)
    missing = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(NotFound, match="No conversation found with session ID"):
        resolve(db, missing, cwd="/w/a", roots=[tree.root])
    assert walks == [tree.root]
