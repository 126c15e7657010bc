"""Interop with the real ``claude-agent-sdk`` (a test dependency).

Three promises: the SDK sees what our mutations write, we see what the SDK's mutations
write, and ``query.sdk_api`` answers like the SDK field by field, except where the SDK's
head/tail reads are wrong. Those cases are listed below with the reason, and for each
the test asserts that ours holds the right value.

The SDK is pointed at a tmp tree with ``CLAUDE_CONFIG_DIR``; every cwd is outside any
git repository (and directory listings pass ``include_worktrees=False``), so no test
depends on the machine's git state.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from sessiondex import sdk as sdk_api
from sessiondex.cli.main import cli
from sessiondex.indexer.db import open_db
from tests.builders import FIXTURES_DIR, ConfigTree, copy_fixtures, git, one_session

sdk = pytest.importorskip("claude_agent_sdk")

T0 = 1_790_000_000

# Sessions of fixtures/ where the SDK is wrong, field → why. Ours must equal
# fixtures/expected.json there (asserted below), and the SDK elsewhere.
FIXTURE_SDK_BUGS: dict[str, dict[str, str]] = {
    "0299d474-8976-5a23-b6a6-e232a4e09752": {  # shop-big
        "custom_title": "the only custom-title is >64 KiB from both ends: the SDK's head+tail "
        "read misses it and reports the tail's ai-title",
        "summary": "follows custom_title",
    },
    "c6a04f93-f286-5217-a5c3-ce43f91715c6": {  # blog-trap
        "summary": "the SDK's key scan takes a tool_use input's \"summary\" key as a summary",
        "git_branch": "the SDK's key scan takes a tool_use input's \"gitBranch\" key as the branch",
    },
}


def asdicts(items: list[Any]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(i) for i in items]


@pytest.fixture
def fixture_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = copy_fixtures(tmp_path)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    return root


def ours(root: Path, name: str, *args: Any, **kwargs: Any) -> Any:
    db = open_db(root.parent / "index.db")
    try:
        return getattr(sdk_api, name)(*args, db=db, config_dir=root, **kwargs)
    finally:
        db.close()


def run_cli(root: Path, *args: str) -> Any:
    result = CliRunner().invoke(
        cli, ["--config-dir", str(root), "--db", str(root.parent / "index.db"), *args]
    )
    return result


def our_session(root: Path, session_id: str) -> dict[str, Any] | None:
    """The session object our index holds (after the refresh every read does)."""
    result = run_cli(root, "resolve", session_id, "--json")
    return one_session(result.stdout) if result.exit_code == 0 else None


def test_an_id_in_two_worktrees_is_looked_up_in_gits_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ID lookups with a directory try the directory's own project dir, then every
    worktree in `git worktree list` order (the listing's longest-path-first order
    answered with the other copy)."""
    repo, linked = tmp_path / "repo", tmp_path / "repo-wt"
    (repo / "sub").mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=repo)
    git("-c", "user.email=a@b", "-c", "user.name=n", "commit", "-q", "--allow-empty",
        "-m", "x", cwd=repo)  # fmt: skip
    git("worktree", "add", "-q", str(linked), "-b", "wt", cwd=repo)
    tree = ConfigTree(tmp_path / "claude")
    sid = "66666666-0000-4000-8000-000000000000"
    for where, text in ((repo, "copy in main checkout"), (linked, "copy in linked worktree")):
        s = tree.session(str(where), session_id=sid)
        s.user(text)
        s.write(mtime=T0)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tree.root))
    directory = str(repo / "sub")
    theirs = sdk.get_session_info(sid, directory)
    mine = sdk_api.get_session_info(sid, directory, db=tmp_path / "i.db")
    assert theirs is not None and mine is not None
    assert mine.first_prompt == theirs.first_prompt == "copy in main checkout"
    messages = sdk_api.get_session_messages(sid, directory, db=tmp_path / "i.db")
    assert [m.message for m in messages] == [
        m.message for m in sdk.get_session_messages(sid, directory)
    ]


# ----------------------------------------------------------------- result types
@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        (sdk_api.SDKSessionInfo, sdk.SDKSessionInfo),
        (sdk_api.SessionMessage, sdk.SessionMessage),
    ],
)
def test_result_types_mirror_the_sdk(mine: Any, theirs: Any) -> None:
    def shape(cls: Any) -> list[tuple[str, Any]]:
        return [(f.name, f.default) for f in dataclasses.fields(cls)]

    assert shape(mine) == shape(theirs)


@pytest.mark.parametrize(
    "name",
    [
        "list_sessions",
        "get_session_info",
        "get_session_messages",
        "list_subagents",
        "get_subagent_messages",
    ],
)
def test_signatures_start_with_the_sdk_parameters(name: str) -> None:
    import inspect

    theirs = list(inspect.signature(getattr(sdk, name)).parameters.values())
    mine = list(inspect.signature(getattr(sdk_api, name)).parameters.values())
    assert [(p.name, p.default) for p in mine[: len(theirs)]] == [
        (p.name, p.default) for p in theirs
    ]
    assert all(p.kind == p.KEYWORD_ONLY for p in mine[len(theirs) :])


# ----------------------------------------------------------------- parity: fixtures
def _compare(
    mine: list[dict[str, Any]], theirs: list[dict[str, Any]], bugs: dict[str, dict[str, str]]
) -> None:
    assert [i["session_id"] for i in mine] == [i["session_id"] for i in theirs]
    for a, b in zip(mine, theirs):
        wrong = bugs.get(a["session_id"], {})
        for field in a:
            if field in wrong:
                assert a[field] != b[field], f"SDK bug gone? {a['session_id']} {field}"
            else:
                assert a[field] == b[field], (a["session_id"], field)


def test_fixture_tree_list_sessions_equals_the_sdk(fixture_root: Path) -> None:
    mine = asdicts(ours(fixture_root, "list_sessions"))
    theirs = asdicts(sdk.list_sessions())
    assert len(mine) == 21  # 23 sessions minus the sidechain file and the empty one
    _compare(mine, theirs, FIXTURE_SDK_BUGS)
    expected = json.loads((FIXTURES_DIR / "expected.json").read_text(encoding="utf-8"))
    by_id = {i["session_id"]: i for i in mine}
    for sid in FIXTURE_SDK_BUGS:
        row = expected[sid]
        assert by_id[sid]["custom_title"] == (row["custom_title"] or row["ai_title"])
        assert by_id[sid]["git_branch"] == row["git_branch"]
        assert by_id[sid]["summary"] == row["title"]


@pytest.mark.parametrize("cwd", ["/home/dev/shop", "/home/dev/blog", "/home/dev/shop-wt/feature-x"])
@pytest.mark.parametrize(("limit", "offset"), [(None, 0), (3, 1)])
def test_fixture_tree_directory_listing_equals_the_sdk(
    fixture_root: Path, cwd: str, limit: int | None, offset: int
) -> None:
    mine = asdicts(ours(fixture_root, "list_sessions", cwd, limit, offset, False))
    theirs = asdicts(sdk.list_sessions(cwd, limit, offset, include_worktrees=False))
    assert mine
    _compare(mine, theirs, FIXTURE_SDK_BUGS)


def _session_ids(root: Path) -> list[str]:
    return sorted(
        p.stem for p in (root / "projects").glob("*/*.jsonl") if sdk_api.is_session_id(p.stem)
    )


def test_fixture_tree_info_messages_and_subagents_equal_the_sdk(fixture_root: Path) -> None:
    checked_subagents = 0
    for sid in _session_ids(fixture_root):
        mine = ours(fixture_root, "get_session_info", sid)
        theirs = sdk.get_session_info(sid)
        if theirs is None or mine is None:
            assert mine == theirs, sid
        else:
            _compare([dataclasses.asdict(mine)], [dataclasses.asdict(theirs)], FIXTURE_SDK_BUGS)
        assert asdicts(ours(fixture_root, "get_session_messages", sid)) == asdicts(
            sdk.get_session_messages(sid)
        ), sid
        agents = ours(fixture_root, "list_subagents", sid)
        assert agents == sdk.list_subagents(sid)
        for agent in agents:
            checked_subagents += 1
            assert asdicts(ours(fixture_root, "get_subagent_messages", sid, agent)) == asdicts(
                sdk.get_subagent_messages(sid, agent)
            )
    assert checked_subagents >= 2


# ----------------------------------------------------------------- parity: generated
EMOJI_CWD = "/tmp/sessiondex-interop/😀-project"  # never created: realpath keeps it


def build_generated_tree(root: Path) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """~30 builder-made sessions in three projects, and the SDK bugs they trigger:
    session id → {field: the right value}."""
    tree = ConfigTree(root)
    cwds = ["/home/gen/alpha", "/home/gen/beta-service", EMOJI_CWD]
    bugs: dict[str, dict[str, Any]] = {}
    ids: list[str] = []
    for n in range(30):
        cwd = cwds[n % 3]
        s = tree.session(
            cwd, git_branch=f"branch-{n % 4}", entrypoint="sdk-py" if n == 7 else "cli"
        )
        if n % 5 == 0:
            s.user("<command-name>/init</command-name>")
        s.user(f"task number {n}: " + "détails " * (n % 7) + ("\n second line" if n % 4 else ""))
        turn = s.assistant(
            f"working on {n}",
            tool_uses=[
                ("Bash", {"command": f"make t{n}"}),
                ("Read", {"file_path": f"/src/{n}.py"}),
            ],
        )
        for tool_id in turn.tool_use_ids:  # parallel calls: results parented on their call
            s.tool_result(tool_id, f"output {tool_id[-4:]}")
        s.assistant("done\u2028really" if n % 6 == 0 else "done")
        if n % 3 == 1:
            s.meta("ai-title", aiTitle=f"AI title {n}")
        if n % 4 == 1:
            s.meta("custom-title", customTitle=f"Custom {n} ✓")
        if n % 5 == 2:
            s.meta("tag", tag=f"tag{n}")
        if n % 7 == 3:
            s.meta("last-prompt", lastPrompt=f"last prompt {n}")
        if n % 8 == 5:
            s.meta("summary", summary=f"legacy summary {n}", leafUuid=s.last_uuid, sessionId=None)
        if n == 11:  # a rename deep in a large file: ~200 KiB, the title in the middle
            for k in range(60):
                s.user(f"step {k}")
                s.assistant("z" * 1600)
                if k == 30:
                    s.meta("custom-title", customTitle="Deep rename")
            bugs[s.session_id] = {"custom_title": "Deep rename", "summary": "Deep rename"}
        if n == 13:  # a tag set deep in a large file is still the live tag
            s.meta("tag", tag="deep-tag")
            for _ in range(50):
                s.assistant("y" * 2000)
            bugs[s.session_id] = {"tag": "deep-tag"}
        if n == 17:  # keys inside a tool input are not metadata
            s.assistant(
                "editing",
                tool_uses=[
                    (
                        "Write",
                        {
                            "summary": "not a summary",
                            "gitBranch": "not-a-branch",
                            "customTitle": "not a title",
                        },
                    )
                ],
            )
            bugs[s.session_id] = {
                "git_branch": s.git_branch,
                "custom_title": "Custom 17 ✓",
                "summary": "Custom 17 ✓",
            }
        s.write(mtime=T0 + n)
        ids.append(s.session_id)
    side = tree.session(cwds[0], is_sidechain=True)
    side.user("sidechain")
    side.write(mtime=T0 + 100)
    meta = tree.session(cwds[1])
    meta.meta("custom-title", customTitle="Only metadata")
    meta.write(mtime=T0 + 101)
    ids.append(meta.session_id)
    return ids, bugs


@pytest.fixture
def generated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, list[str], dict[str, Any]]:
    root = tmp_path / "claude"
    ids, bugs = build_generated_tree(root)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    return root, ids, bugs


def test_generated_tree_list_sessions_equals_the_sdk(generated: Any) -> None:
    root, ids, right = generated
    # A drop-in: no extra arguments (CLAUDE_CONFIG_DIR and the default index, as the SDK).
    mine = asdicts(sdk_api.list_sessions())
    theirs = asdicts(sdk.list_sessions())
    assert sorted(i["session_id"] for i in mine) == sorted(ids)
    bugs = {sid: dict.fromkeys(fields, "see build_generated_tree") for sid, fields in right.items()}
    _compare(mine, theirs, bugs)
    by_id = {i["session_id"]: i for i in mine}
    for sid, fields in right.items():
        for field, value in fields.items():
            assert by_id[sid][field] == value, (sid, field)


def test_generated_tree_messages_equal_the_sdk(generated: Any) -> None:
    root, ids, _right = generated
    for sid in ids:
        assert asdicts(sdk_api.get_session_messages(sid, limit=5, offset=1)) == asdicts(
            sdk.get_session_messages(sid, limit=5, offset=1)
        )
        assert asdicts(sdk_api.get_session_messages(sid)) == asdicts(
            sdk.get_session_messages(sid)
        ), sid


def test_emoji_project_path_is_found_where_claude_code_writes_it(generated: Any) -> None:
    """The CLI turns an emoji into two dashes (UTF-16); the SDK into one, so the SDK
    looks in a project dir Claude Code never writes and finds nothing."""
    root, ids, _right = generated
    mine = sdk_api.list_sessions(EMOJI_CWD, include_worktrees=False)
    assert len(mine) == 10 and all(i.cwd == EMOJI_CWD for i in mine)
    assert sdk.list_sessions(EMOJI_CWD, include_worktrees=False) == []
    assert sdk_api.get_session_info(mine[0].session_id, EMOJI_CWD) == mine[0]
    assert sdk.get_session_info(mine[0].session_id, EMOJI_CWD) is None


# ----------------------------------------------------------------- our writes → the SDK
def test_the_sdk_sees_our_rename_tag_untag_and_fork(fixture_root: Path) -> None:
    sid = "0299d474-8976-5a23-b6a6-e232a4e09752"  # shop-big: the SDK misses its deep title
    assert sdk.get_session_info(sid).custom_title == "Investigate slow checkout endpoint"
    assert run_cli(fixture_root, "rename", sid, "Perf ☕ work").exit_code == 0
    assert run_cli(fixture_root, "tag", sid, "perf").exit_code == 0
    info = sdk.get_session_info(sid)
    assert (info.custom_title, info.summary, info.tag) == ("Perf ☕ work", "Perf ☕ work", "perf")
    assert info.session_id in {i.session_id for i in sdk.list_sessions() if i.tag == "perf"}
    assert run_cli(fixture_root, "untag", sid).exit_code == 0
    assert sdk.get_session_info(sid).tag is None

    source = "4045e6f8-686a-5d64-9f2b-e0830c6ab007"  # shop-auth
    forked = run_cli(fixture_root, "fork", source)
    assert forked.exit_code == 0, forked.output
    new_id = forked.stdout.strip()
    info = sdk.get_session_info(new_id)
    assert info is not None and info.custom_title == "Auth refactor (fork)"
    assert new_id in {
        i.session_id for i in sdk.list_sessions("/home/dev/shop", include_worktrees=False)
    }

    # The SDK reads the same conversation from the fork as from the source.
    def bodies(messages: list[Any]) -> list[Any]:
        return [(m.type, m.message) for m in messages]

    assert bodies(sdk.get_session_messages(new_id)) == bodies(sdk.get_session_messages(source))
    assert all(m.session_id == new_id for m in sdk.get_session_messages(new_id))


@pytest.mark.parametrize("command", [["tag", "review"], ["rename", "Checkout perf"]])
def test_a_name_or_tag_the_sdk_no_longer_sees_is_written_again(
    fixture_root: Path, command: list[str]
) -> None:
    """After more than 64 KiB of conversation the SDK and Claude Code's picker no longer
    see a tag or name (they read the first and last 64 KiB); ours, reading the whole file,
    still did, so tagging again said "already tagged; nothing written" and the user had
    no way to make it visible again. The no-op now holds only for what they see."""
    sid = "0299d474-8976-5a23-b6a6-e232a4e09752"  # shop-big: a name there leaves the head
    path = next(fixture_root.glob(f"projects/*/{sid}.jsonl"))
    assert path.stat().st_size > 2 * 64 * 1024
    assert run_cli(fixture_root, *command[:1], sid, command[1]).exit_code == 0
    again = run_cli(fixture_root, *command[:1], sid, command[1])
    assert again.exit_code == 0 and "nothing written" in again.output  # still a no-op
    filler = {"type": "user", "sessionId": sid, "message": {"role": "user", "content": "w" * 2000}}
    with open(path, "ab") as fh:
        for n in range(40):  # Claude Code's turns, with no metadata re-appended
            fh.write(orjson.dumps({**filler, "uuid": f"00000000-0000-4000-8000-{n:012d}"}) + b"\n")
    field = "tag" if command[0] == "tag" else "custom_title"
    assert getattr(sdk.get_session_info(sid), field) != command[1]
    size = path.stat().st_size
    written = run_cli(fixture_root, *command[:1], sid, command[1])
    assert written.exit_code == 0 and "nothing written" not in written.output, written.output
    assert path.stat().st_size > size
    assert getattr(sdk.get_session_info(sid), field) == command[1]


@pytest.mark.parametrize(
    "typed", ["Family 👨\u200d👩\u200d👧", "ｶﾀｶﾅ notes", "①② plan", "می\u200cخواهم"]
)
def test_a_name_we_store_is_the_name_the_sdk_stores(fixture_root: Path, typed: str) -> None:
    """The SDK's rename_session keeps a name as typed (trimmed): ours must too, or the
    name typed again (claude --resume NAME compares exactly) finds nothing."""
    ours_id = "0299d474-8976-5a23-b6a6-e232a4e09752"
    theirs_id = "4045e6f8-686a-5d64-9f2b-e0830c6ab007"
    assert run_cli(fixture_root, "rename", ours_id, f" {typed} ").exit_code == 0
    sdk.rename_session(theirs_id, f" {typed} ")
    assert sdk.get_session_info(ours_id).custom_title == typed
    assert sdk.get_session_info(theirs_id).custom_title == typed


def test_our_append_keeps_the_last_line_the_sdk_would_glue_onto(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two copies of a file whose last line has no ``\\n``: after the SDK's tag_session
    its last message is gone (glued into an invalid line); after ours it is kept."""
    roots = {}
    for name in ("ours", "sdk"):
        tree = ConfigTree(tmp_path / name / "claude")
        s = tree.session("/home/dev/ragged", session_id="1a1a1a1a-0000-4000-8000-000000000001")
        s.user("hello")
        turn = s.assistant("last answer")
        s.write(mtime=T0)
        path = s.path
        path.write_bytes(path.read_bytes().rstrip(b"\n"))
        os.utime(path, (T0, T0))  # a file left so long ago, not one being written now
        roots[name] = tree.root
    sid = "1a1a1a1a-0000-4000-8000-000000000001"
    assert run_cli(roots["ours"], "tag", sid, "t").exit_code == 0
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(roots["sdk"]))
    sdk.tag_session(sid, "t")
    assert [m.uuid for m in sdk.get_session_messages(sid)][-1] != turn.uuid  # the SDK's bug
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(roots["ours"]))
    assert [m.uuid for m in sdk.get_session_messages(sid)][-1] == turn.uuid
    assert sdk.get_session_info(sid).tag == "t"


@pytest.mark.parametrize("tail", ["whole record", "fragment"])
def test_a_title_the_sdk_glued_onto_a_bad_line_is_read_as_the_sdk_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: str
) -> None:
    """rename_session on a file whose last line lacks its newline glues the record onto
    that line (the SDK's bug). The SDK's listing and Claude Code's picker still show the
    title (they search the tail's text for it); the index did not, and a second rename
    to the same name appended again."""
    tree = ConfigTree(tmp_path / "claude")
    sid = "1a1a1a1a-0000-4000-8000-000000000002"
    s = tree.session("/home/dev/glued", session_id=sid)
    s.user("hello")
    s.assistant("last answer")
    s.write(mtime=T0)
    data = s.path.read_bytes().rstrip(b"\n")
    if tail == "fragment":
        data += b'\n{"type":"user","message":{"role":"us'  # a write that died mid-line
    s.path.write_bytes(data)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tree.root))
    sdk.rename_session(sid, "Glued title")
    assert sdk.get_session_info(sid).custom_title == "Glued title"
    found = run_cli(tree.root, "resolve", "Glued title", "--cwd", "/home/dev/glued", "--json")
    assert found.exit_code == 0, found.output
    assert one_session(found.stdout)["custom_title"] == "Glued title"
    before = s.path.read_bytes()
    again = run_cli(tree.root, "rename", sid, "Glued title")
    assert again.exit_code == 0 and s.path.read_bytes() == before  # nothing to change


# The last record of a session is a metadata record more often than not (Claude Code
# re-appends its block at exit); a file that lost its final newline (a script that
# rewrote it with "\n".join, an editor) then gets the SDK's record glued onto it.
GLUED_ONTO_WHOLE: dict[str, tuple[tuple[str, dict[str, Any]], str, str | None]] = {
    "a name, then a tag": (("custom-title", {"customTitle": "Kept name"}), "tag_session", "new"),
    "an AI title, then a tag": (("ai-title", {"aiTitle": "Kept AI title"}), "tag_session", "new"),
    "a last prompt, then a tag": (
        ("last-prompt", {"lastPrompt": "kept prompt"}),
        "tag_session",
        "new",
    ),
    "a legacy summary, then a tag": (
        ("summary", {"summary": "Kept summary"}),
        "tag_session",
        "new",
    ),
    "a tag, then a name": (("tag", {"tag": "kept"}), "rename_session", "Glued name"),
    "a tag, then a tag": (("tag", {"tag": "old"}), "tag_session", "new"),
    "a tag, then a clear": (("tag", {"tag": "old"}), "tag_session", None),
}


@pytest.mark.parametrize("case", list(GLUED_ONTO_WHOLE))
def test_a_whole_record_the_sdk_glued_onto_is_read_as_the_sdk_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The SDK's append onto a last line that is a whole record without its newline
    leaves one line holding two records. The SDK's listing and Claude Code's picker
    still see the first one's name, prompt or tag (they scan the tail's text for
    them, and a tag on a line that starts with one); the index lost it, and listed
    the session under its first prompt, or without its tag."""
    (kind, fields), call, value = GLUED_ONTO_WHOLE[case]
    tree = ConfigTree(tmp_path / "claude")
    sid = "1a1a1a1a-0000-4000-8000-000000000004"
    s = tree.session("/home/dev/glued-whole", session_id=sid)
    s.user("the first prompt")
    s.assistant("an answer")
    s.meta(kind, **fields)
    s.write(mtime=T0)
    s.path.write_bytes(s.path.read_bytes().rstrip(b"\n"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tree.root))
    getattr(sdk, call)(sid, value)
    assert s.path.read_bytes().count(b"\n") == len(s.records)  # its last line holds two
    theirs = dataclasses.asdict(sdk.get_session_info(sid))
    mine = dataclasses.asdict(ours(tree.root, "get_session_info", sid))
    assert mine == theirs
    obj = our_session(tree.root, sid)
    assert obj is not None
    assert (obj["title"], obj["tag"]) == (theirs["summary"], theirs["tag"])
    if theirs["tag"]:  # the SDK and the picker see it: tagging it again changes nothing
        again = run_cli(tree.root, "tag", sid, theirs["tag"])
        assert again.exit_code == 0 and "nothing written" in again.output, again.output
    # A fork is named after the same title, by both writers.
    their_fork = sdk.get_session_info(sdk.fork_session(sid).session_id)
    forked = run_cli(tree.root, "fork", sid)
    assert forked.exit_code == 0, forked.output
    assert sdk.get_session_info(forked.stdout.strip()).custom_title == their_fork.custom_title


# ----------------------------------------------------------------- the SDK's writes → us
def test_our_index_sees_the_sdks_rename_tag_fork_and_delete(fixture_root: Path) -> None:
    sid = "d36aa0a1-11d8-5c2a-be7f-9879597e52d9"  # blog-aititle
    assert our_session(fixture_root, sid)["tag"] == "feed"  # indexed before the SDK writes
    sdk.rename_session(sid, "Блог RSS ☕")  # written as \\u escapes by the SDK
    sdk.tag_session(sid, "  \ufb01x\u200b-it ")
    obj = our_session(fixture_root, sid)
    assert (obj["custom_title"], obj["title"], obj["tag"]) == (
        "Блог RSS ☕",
        "Блог RSS ☕",
        "fix-it",
    )
    assert dataclasses.asdict(ours(fixture_root, "get_session_info", sid)) == (
        dataclasses.asdict(sdk.get_session_info(sid))
    )
    sdk.tag_session(sid, None)
    assert our_session(fixture_root, sid)["tag"] is None

    new_id = sdk.fork_session(sid).session_id
    obj = our_session(fixture_root, new_id)
    assert obj["forked_from"]["session_id"] == sid
    assert obj["custom_title"] == "Блог RSS ☕ (fork)"
    assert asdicts(ours(fixture_root, "get_session_messages", new_id)) == asdicts(
        sdk.get_session_messages(new_id)
    )

    sdk.delete_session(new_id)
    assert our_session(fixture_root, new_id) is None
    assert new_id not in {i.session_id for i in ours(fixture_root, "list_sessions")}


def test_our_fork_writes_what_the_sdk_fork_writes(fixture_root: Path) -> None:
    """Same entries, same links, same forkedFrom; our differences are deliberate
    (timestamps kept, raw UTF-8)."""
    source = "12a0e588-8672-5ff7-9137-d430dc55a4df"  # blog-unicode: raw U+2028 inside
    sdk_id = sdk.fork_session(source).session_id
    result = run_cli(fixture_root, "fork", source)
    assert result.exit_code == 0, result.output
    our_id = result.stdout.strip()
    folder = fixture_root / "projects" / "-home-dev-blog"

    def shape(session_id: str) -> list[tuple[Any, ...]]:
        records = [
            orjson.loads(line)
            for line in (folder / f"{session_id}.jsonl").read_bytes().split(b"\n")
            if line
        ]
        index = {r.get("uuid"): i for i, r in enumerate(records)}
        return [
            (r["type"], r.get("forkedFrom"), index.get(r.get("parentUuid")), r.get("customTitle"))
            for r in records
        ]

    mine, theirs = shape(our_id), shape(sdk_id)
    # The SDK's splitlines() drops the entry holding U+2028; ours keeps it.
    assert len(mine) == len(theirs) + 1
    dropped = [
        row
        for row in mine
        if row[1] and row[1]["messageUuid"] not in {t[1]["messageUuid"] for t in theirs if t[1]}
    ]
    assert len(dropped) == 1
    assert "\u2028".encode() in (folder / f"{our_id}.jsonl").read_bytes()
    assert [row[:2] for row in mine if row not in dropped] == [row[:2] for row in theirs]


@pytest.mark.parametrize(
    ("records", "summary", "last_prompt"),
    [
        # the last record's value wins; "" clears it, as the SDK's `a or b` chain reads it
        (
            [("last-prompt", {"lastPrompt": "stale"}), ("last-prompt", {"lastPrompt": ""})],
            None,
            None,
        ),
        ([("summary", {"summary": "Old summary"}), ("summary", {"summary": ""})], None, None),
        (
            [("last-prompt", {"lastPrompt": ""}), ("last-prompt", {"lastPrompt": "new"})],
            None,
            "new",
        ),
        # a record without the key (a rewind's last-prompt) changes nothing
        (
            [("last-prompt", {"lastPrompt": "kept"}), ("last-prompt", {"rewound": True})],
            None,
            "kept",
        ),
        (
            [("summary", {"summary": "Kept summary"}), ("summary", {"leafUuid": "x"})],
            "Kept summary",
            None,
        ),
    ],
)
def test_an_empty_summary_or_last_prompt_clears_it_as_the_sdk_reads_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    records: list[tuple[str, dict[str, Any]]],
    summary: str | None,
    last_prompt: str | None,
) -> None:
    """An empty ``lastPrompt`` or ``summary`` in the last such record kept the earlier
    value: the title read "stale" where the SDK and Claude Code show the first prompt."""
    tree = ConfigTree(tmp_path / "claude")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tree.root))
    s = tree.session(cwd="/tmp/sessiondex-interop/empty-values")
    s.user("the first prompt")
    s.assistant("ok")
    for kind, fields in records:
        s.meta(kind, **fields)
    s.write()
    obj = our_session(tree.root, s.session_id)
    assert obj is not None
    assert (obj["summary"], obj["last_prompt"]) == (summary, last_prompt)
    assert obj["title"] == (summary or last_prompt or "the first prompt")
    (mine,) = asdicts(ours(tree.root, "list_sessions"))
    (theirs,) = asdicts(sdk.list_sessions())
    assert mine["summary"] == theirs["summary"] == (last_prompt or summary or "the first prompt")
