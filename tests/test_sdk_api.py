"""sessiondex.sdk's readers alone: the SDK's field rules, paging and lookups, from the index.

Parity with the real ``claude-agent-sdk`` is tests/test_sdk_interop.py; this file pins
the rules themselves so a failure says which one broke.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from sessiondex import sdk as sdk_api
from sessiondex.indexer.db import open_db
from tests.builders import ConfigTree

A = "/home/dev/a"
B = "/home/dev/b"
T0 = 1_790_000_000


@pytest.fixture
def tree(tmp_path: Path) -> ConfigTree:
    return ConfigTree(tmp_path / "claude")


def api(tree: ConfigTree, name: str, *args: Any, **kwargs: Any) -> Any:
    db = open_db(tree.root.parent / "index.db")
    try:
        return getattr(sdk_api, name)(*args, db=db, config_dir=tree.root, **kwargs)
    finally:
        db.close()


@pytest.mark.parametrize(
    ("metas", "summary", "custom_title"),
    [
        ([], "the first prompt", None),
        ([("summary", {"summary": "Legacy summary", "sessionId": None})], "Legacy summary", None),
        (
            [
                ("summary", {"summary": "S", "sessionId": None}),
                ("last-prompt", {"lastPrompt": "LP"}),
            ],
            "LP",
            None,
        ),
        ([("last-prompt", {"lastPrompt": "LP"}), ("ai-title", {"aiTitle": "AI"})], "AI", "AI"),
        (
            [("ai-title", {"aiTitle": "AI"}), ("custom-title", {"customTitle": "Mine"})],
            "Mine",
            "Mine",
        ),
        (
            [
                ("custom-title", {"customTitle": "Mine"}),
                ("custom-title", {"customTitle": ""}),
                ("ai-title", {"aiTitle": "AI"}),
            ],
            "AI",
            "AI",
        ),
    ],
)
def test_summary_and_custom_title_precedence(
    tree: ConfigTree, metas: list[Any], summary: str, custom_title: str | None
) -> None:
    s = tree.session(A)
    s.user("the first prompt")
    s.assistant("ok")
    for kind, fields in metas:
        s.meta(kind, **fields)
    s.write(mtime=T0)
    [info] = api(tree, "list_sessions")
    assert (info.summary, info.custom_title, info.first_prompt) == (
        summary,
        custom_title,
        "the first prompt",
    )


def test_fields_of_one_session(tree: ConfigTree) -> None:
    s = tree.session(A, git_branch="main")
    s.user("x" * 250)
    s.git_branch = "feature"
    s.assistant("ok", tool_uses=[("Edit", {"summary": "not a summary", "gitBranch": "nope"})])
    s.meta("tag", tag="t1")
    s.meta("tag", tag="t2")
    path = s.write(mtime=T0 + 0.5)
    [info] = api(tree, "list_sessions")
    assert dataclasses.asdict(info) == {
        "session_id": s.session_id,
        "summary": "x" * 200 + "…",
        "last_modified": 1_790_000_000_500,
        "file_size": path.stat().st_size,
        "custom_title": None,
        "first_prompt": "x" * 200 + "…",
        "git_branch": "feature",
        "cwd": A,
        "tag": "t2",
        "created_at": 1_793_527_200_000,  # 2026-11-01T10:00:00Z
    }


def test_listing_scope_hidden_files_and_cwd_fallback(tree: ConfigTree) -> None:
    ids = {}
    for name, cwd, mtime in (("a1", A, 1), ("a2", A, 2), ("b1", B, 3)):
        s = tree.session(cwd)
        s.user(f"prompt {name}")
        s.write(mtime=T0 + mtime)
        ids[name] = s.session_id
    side = tree.session(A, is_sidechain=True)
    side.user("sidechain file")
    side.write(mtime=T0 + 4)
    empty = tree.session(A)
    empty.write(mtime=T0 + 5)  # zero bytes: the SDK skips it
    meta_only = tree.session(A)
    meta_only.meta("custom-title", customTitle="Notes")
    meta_only.write(mtime=T0 + 6)
    listed = api(tree, "list_sessions", A)
    assert [i.session_id for i in listed] == [meta_only.session_id, ids["a2"], ids["a1"]]
    # A metadata-only session has no cwd of its own: the directory asked about.
    assert listed[0].cwd == A and listed[0].summary == "Notes"
    assert {i.session_id for i in api(tree, "list_sessions")} == {
        meta_only.session_id,
        *ids.values(),
    }
    assert api(tree, "list_sessions", "/home/dev/nowhere") == []


@pytest.mark.parametrize(
    ("limit", "offset", "expected"),
    [
        (None, 0, [4, 3, 2, 1, 0]),
        (2, 0, [4, 3]),
        (2, 1, [3, 2]),
        (0, 0, [4, 3, 2, 1, 0]),
        (-1, 3, [1, 0]),
        (None, -2, [4, 3, 2, 1, 0]),
        (10, 4, [0]),
    ],
)
def test_list_paging(tree: ConfigTree, limit: int | None, offset: int, expected: list[int]) -> None:
    ids = []
    for n in range(5):
        s = tree.session(A)
        s.user(f"p{n}")
        s.write(mtime=T0 + n)
        ids.append(s.session_id)
    got = api(tree, "list_sessions", limit=limit, offset=offset)
    assert [i.session_id for i in got] == [ids[n] for n in expected]


@pytest.mark.parametrize(
    "session_id",
    [
        "not-a-uuid",
        "99999999-9999-4999-8999-999999999999",
        "",
        "../../etc/passwd",
    ],
)
def test_unknown_or_invalid_ids_answer_empty(tree: ConfigTree, session_id: str) -> None:
    s = tree.session(A)
    s.user("hello")
    s.write(mtime=T0)
    assert api(tree, "get_session_info", session_id) is None
    assert api(tree, "get_session_messages", session_id) == []
    assert api(tree, "list_subagents", session_id) == []
    assert api(tree, "get_subagent_messages", session_id, "a1") == []


def test_info_equals_the_listing_and_respects_directory(tree: ConfigTree) -> None:
    s = tree.session(A)
    s.user("hello")
    s.meta("custom-title", customTitle="Hi")
    s.write(mtime=T0)
    [listed] = api(tree, "list_sessions")
    assert api(tree, "get_session_info", s.session_id) == listed
    assert api(tree, "get_session_info", s.session_id, A) == listed
    assert api(tree, "get_session_info", s.session_id, B) is None


@pytest.mark.parametrize(
    ("limit", "offset", "expected"),
    [
        (None, 0, slice(None)),
        (2, 0, slice(0, 2)),
        (2, 3, slice(3, 5)),
        (None, 4, slice(4, None)),
        (0, 0, slice(None)),
        (1, -2, slice(-2, -1)),
        (2, -2, slice(-2, 0)),  # the SDK slices items[offset:offset+limit]: [-2:0] is empty
    ],
)
def test_messages_follow_the_chain_and_page(
    tree: ConfigTree, limit: int | None, offset: int, expected: slice
) -> None:
    s = tree.session(A)
    u1 = s.user("first")
    a1 = s.assistant("line\u2028with a separator")
    s.user("injected context", is_meta=True)
    u2 = s.user("second")
    s.raw(b'{"type":"user","uuid":"bad-\xff-utf8","parentUuid":null}\n')
    a2 = s.assistant("done", tool_uses=[("Bash", {"command": "ls"})])
    r = s.tool_result(a2.tool_use_ids[0], "files")
    s.write(mtime=T0)
    chain = [u1, *a1.uuids, u2, *a2.uuids, r]
    got = api(tree, "get_session_messages", s.session_id, limit=limit, offset=offset)
    assert [m.uuid for m in got] == chain[expected]
    assert all(m.session_id == s.session_id and m.parent_tool_use_id is None for m in got)
    full = api(tree, "get_session_messages", s.session_id)
    assert full[1].message["content"][0]["text"] == "line\u2028with a separator"


def test_subagents(tree: ConfigTree) -> None:
    s = tree.session(A)
    s.user("delegate")
    turn = s.assistant("spawning", tool_uses=[("Task", {"prompt": "look"})])
    sub = s.subagent(
        agent_id="zz", tool_use_id=turn.tool_use_ids[0], meta={"parentAgentId": "parent-1"}
    )
    first = sub.user("look around")
    answer = sub.assistant("looked")
    nested = s.subagent(agent_id="aa", tool_use_id="toolu_x", subdir="workflows/run1")
    nested.user("nested")
    s.write(mtime=T0)
    assert api(tree, "list_subagents", s.session_id) == ["zz", "aa"]
    messages = api(tree, "get_subagent_messages", s.session_id, "zz")
    assert [m.uuid for m in messages] == [first, answer.uuid]
    assert {(m.parent_tool_use_id, m.parent_agent_id) for m in messages} == {
        (turn.tool_use_ids[0], "parent-1")
    }
    assert api(tree, "get_subagent_messages", s.session_id, "") == []
    assert api(tree, "get_subagent_messages", s.session_id, "missing") == []


def test_refresh_picks_up_new_files_without_an_index_command(tree: ConfigTree) -> None:
    s = tree.session(A)
    s.user("one")
    s.write(mtime=T0)
    assert len(api(tree, "list_sessions")) == 1
    t = tree.session(A)
    t.user("two")
    t.write(mtime=T0 + 1)
    assert [i.session_id for i in api(tree, "list_sessions")] == [t.session_id, s.session_id]
    assert len(api(tree, "list_sessions", refresh=False)) == 2


# Where the default index cannot serve (helper 116): the SDK reads the files and never
# fails for want of a place to write, and never answers from an old index either.
def _cache_is_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cachefile").write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cachefile"))


@pytest.mark.parametrize("unusable", [_cache_is_a_file], ids=["cache-path-is-a-file"])
def test_readers_answer_from_the_transcripts_where_the_default_index_cannot_be_made(
    tree: ConfigTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unusable: Any
) -> None:
    s = tree.session(cwd=A)
    s.user("a question")
    s.assistant("an answer")
    s.write()
    monkeypatch.delenv("SESSIONDEX_DB", raising=False)
    unusable(tmp_path, monkeypatch)
    root = tree.root
    assert [i.session_id for i in sdk_api.list_sessions(config_dir=root)] == [s.session_id]
    info = sdk_api.get_session_info(s.session_id, config_dir=root)
    assert info is not None and info.session_id == s.session_id
    assert len(sdk_api.get_session_messages(s.session_id, config_dir=root)) == 2


def test_readers_see_a_new_session_though_the_default_index_is_read_only(
    tree: ConfigTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_reliability_faults import read_only

    monkeypatch.delenv("SESSIONDEX_DB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    old = tree.session(cwd=A)
    old.user("indexed before")
    old.write()
    assert len(sdk_api.list_sessions(config_dir=tree.root)) == 1  # builds the default index
    new = tree.session(cwd=A)
    new.user("written after the index was made read-only")
    new.write()
    with read_only(tmp_path / "cache" / "sessiondex"):
        listed = {i.session_id for i in sdk_api.list_sessions(config_dir=tree.root)}
        assert listed == {old.session_id, new.session_id}
        assert sdk_api.get_session_info(new.session_id, config_dir=tree.root) is not None
        assert len(sdk_api.get_session_messages(new.session_id, config_dir=tree.root)) == 1


def test_the_default_config_dir_is_the_sdk_s_not_sessiondex_s_own_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$SESSIONDEX_CONFIG_DIRS is the CLI's; a drop-in reads and writes where the SDK
    would: $CLAUDE_CONFIG_DIR, else ~/.claude (helper 116: it read, and deleted in,
    the other dirs)."""
    home = tmp_path / "home"
    mine, other = ConfigTree(home / ".claude"), ConfigTree(tmp_path / "other")
    here = mine.session(cwd=A)
    here.user("in ~/.claude")
    here.write()
    there = other.session(cwd=A, session_id="00000000-0000-4000-8000-0000000000ee")
    there.user("in the other dir")
    there.write()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("SESSIONDEX_DB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("SESSIONDEX_CONFIG_DIRS", str(other.root))
    assert [i.session_id for i in sdk_api.list_sessions()] == [here.session_id]
    assert sdk_api.get_session_info(there.session_id) is None
    with pytest.raises(FileNotFoundError):
        sdk_api.delete_session(there.session_id)
    assert there.path.exists()
