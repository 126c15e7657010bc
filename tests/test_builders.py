"""The transcript builder writes what the CLI writes; every other test relies on it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson

from sessiondex.transcripts.keys import project_key
from tests.builders import ConfigTree, append_records, copy_fixtures, write_jsonl


def _lines(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_session_lines_parse_and_chain(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/work/repo", start="2026-11-01T10:00:00.000Z")
    u1 = s.user("fix the auth bug")
    turn = s.assistant("Looking", thinking="hmm", tool_uses=[("Bash", {"command": "pytest"})])
    r1 = s.tool_result(turn.tool_use_ids[0], "1 passed")
    s.meta("custom-title", customTitle="Auth")
    path = s.write()

    assert (
        path
        == tmp_path / "claude" / "projects" / project_key("/work/repo") / f"{s.session_id}.jsonl"
    )
    records = _lines(path)
    chain = [r for r in records if r["type"] in ("user", "assistant")]
    assert [r["type"] for r in chain] == ["user", "assistant", "assistant", "assistant", "user"]
    assert chain[0]["parentUuid"] is None and chain[0]["uuid"] == u1
    for prev, cur in zip(chain, chain[1:]):
        assert cur["parentUuid"] == prev["uuid"]
    # one API response, three lines sharing message.id, one block each
    assistant = chain[1:4]
    assert len({r["message"]["id"] for r in assistant}) == 1
    assert [r["message"]["content"][0]["type"] for r in assistant] == [
        "thinking",
        "text",
        "tool_use",
    ]
    assert turn.uuid == assistant[-1]["uuid"] and chain[-1]["uuid"] == r1
    assert chain[-1]["sourceToolAssistantUUID"] == turn.uuid
    assert chain[-1]["message"]["content"][0]["tool_use_id"] == turn.tool_use_ids[0]
    # timestamps advance one second per record
    assert [r["timestamp"] for r in chain[:2]] == [
        "2026-11-01T10:00:00.000Z",
        "2026-11-01T10:00:01.000Z",
    ]
    assert records[-1] == {"type": "custom-title", "customTitle": "Auth", "sessionId": s.session_id}
    # CLI-style serialization: compact, raw UTF-8, envelope key order
    first = path.read_bytes().split(b"\n")[0]
    assert first.startswith(
        b'{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/work/repo"'
    )


def test_deterministic(tmp_path: Path) -> None:
    def build(root: Path) -> bytes:
        s = ConfigTree(root).session(cwd="/x")
        s.user("héllo 認証")
        s.assistant("ok", tool_uses=[("Bash", {"command": "ls"})])
        return s.write().read_bytes()

    a, b = build(tmp_path / "a"), build(tmp_path / "b")
    assert a == b
    assert "認証".encode() in a  # raw UTF-8, not \\u escapes


def test_subagents_placed_with_meta(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w")
    s.user("explore")
    turn = s.assistant(
        tool_uses=[("Task", {"description": "look", "prompt": "p", "subagent_type": "Explore"})]
    )
    sub = s.subagent(agent_id="a1b2c3", tool_use_id=turn.tool_use_ids[0], agent_type="Explore")
    sub.user("p")
    sub.assistant("found it")
    nested = s.subagent(agent_id="d4e5", tool_use_id=turn.tool_use_ids[0], subdir="workflows/run-1")
    nested.user("q")
    s.write(mtime=1_800_000_000)

    folder = s.path.parent / s.session_id / "subagents"
    records = _lines(folder / "agent-a1b2c3.jsonl")
    assert all(r["isSidechain"] is True and r["agentId"] == "a1b2c3" for r in records)
    assert all(r["sessionId"] == s.session_id for r in records)
    assert records[1]["parentUuid"] == records[0]["uuid"]
    meta = json.loads((folder / "agent-a1b2c3.meta.json").read_text())
    assert meta == {"agentType": "Explore", "toolUseId": turn.tool_use_ids[0]}
    assert (folder / "workflows" / "run-1" / "agent-d4e5.jsonl").exists()
    assert os.stat(folder / "agent-a1b2c3.jsonl").st_mtime == 1_800_000_000


def test_mtime_raw_and_append(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w", project_key="custom-key")
    s.user("one")
    s.raw(b"not json\n")
    path = s.write(mtime=1_700_000_000.5)
    assert path.parent.name == "custom-key"
    assert os.stat(path).st_mtime == 1_700_000_000.5
    assert path.read_bytes().splitlines()[1] == b"not json"

    s.assistant("two")
    s.append()
    last = orjson.loads(path.read_bytes().splitlines()[-1])
    assert last["message"]["content"][0]["text"] == "two"
    append_records(path, [{"type": "tag", "tag": "x", "sessionId": s.session_id}], terminate=False)
    assert path.read_bytes().endswith(b'"}')

    other = write_jsonl(tmp_path / "f.jsonl", [{"a": 1}, b'{"b":'])
    assert other.read_bytes() == b'{"a":1}\n{"b":'


def test_compact_boundary_and_meta_records(tmp_path: Path) -> None:
    s = ConfigTree(tmp_path / "c").session(cwd="/w")
    u = s.user("hi")
    b = s.system("compact_boundary")
    s.user("summary of the conversation", isCompactSummary=True)
    s.meta("summary", summary="old", leafUuid=u, sessionId=None)
    s.pr_link(number=12, url="https://github.com/o/r/pull/12", repository="o/r")
    records = _lines(s.write())
    boundary = records[1]
    assert boundary["uuid"] == b and boundary["parentUuid"] is None
    assert boundary["logicalParentUuid"] == u
    assert records[2]["parentUuid"] == b and records[2]["isCompactSummary"] is True
    assert "sessionId" not in records[3]
    assert records[4]["prNumber"] == 12 and records[4]["timestamp"].endswith("Z")


def test_copy_fixtures_applies_mtimes(tmp_path: Path) -> None:
    config = copy_fixtures(tmp_path)
    mtimes = json.loads((Path(__file__).parent.parent / "fixtures" / "mtimes.json").read_text())
    assert mtimes
    for relative, mtime in mtimes.items():
        assert os.stat(config / relative).st_mtime == mtime
    assert json.loads((config / "settings.json").read_text()) == {"cleanupPeriodDays": 30}


def test_fixture_expectations_match_the_files() -> None:
    """Cross-check the hand-written ``fixtures/expected.json`` against the committed files.

    A deliberately naive reading (whole file, top-level fields of the right record type) so a
    typo in the hand-derived values is caught here, not blamed on the indexer.
    """
    root = Path(__file__).parent.parent / "fixtures"
    expected = json.loads((root / "expected.json").read_text(encoding="utf-8"))
    assert len(expected) >= 20
    for session_id, row in expected.items():
        path = root / "claude" / row["file_path"]
        assert path.stem == session_id
        records = []
        for line in path.read_bytes().split(b"\n"):
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
        chain = [r for r in records if r.get("type") in ("user", "assistant")]
        counted = [r for r in chain if not r.get("isMeta") and not r.get("isSidechain")]
        assert len(counted) == row["message_count"], row["name"]
        entrypoints = [r["entrypoint"] for r in records if "entrypoint" in r]
        assert (entrypoints[0] if entrypoints else None) == row["entrypoint"], row["name"]
        assert bool(records and records[0].get("isSidechain")) == row["is_sidechain"], row["name"]
        assert (chain[0]["cwd"] if chain else None) == row["cwd"], row["name"]

        def last(type_: str, key: str, records: list[dict] = records) -> str | None:
            values = [r[key] for r in records if r.get("type") == type_ and key in r]
            return values[-1] or None if values else None

        assert last("custom-title", "customTitle") == row["custom_title"], row["name"]
        assert last("ai-title", "aiTitle") == row["ai_title"], row["name"]
        assert last("tag", "tag") == row["tag"], row["name"]
        assert last("summary", "summary") == row["summary"], row["name"]
        assert last("last-prompt", "lastPrompt") == row["last_prompt"], row["name"]
        branches = [r["gitBranch"] for r in records if "gitBranch" in r]
        assert (branches[-1] if branches else None) == row["git_branch"], row["name"]
        assert list(dict.fromkeys(branches)) == row["branches"], row["name"]
        links = [r["prUrl"] for r in records if r.get("type") == "pr-link"]
        assert list(dict.fromkeys(links)) == [p["url"] for p in row["pr_links"]], row["name"]
        assert row["title"] == (
            row["custom_title"]
            or row["ai_title"]
            or row["summary"]
            or row["last_prompt"]
            or row["first_prompt"]
            or session_id[:8]
        ), row["name"]
        assert os.stat(path).st_size == row["file_size"]
