"""rename, tag, untag, fork, delete: the records written, the index after, and bad input.

Every failure case checks the three promises of docs/mutations.md#failures-and-exit-codes: one
``Error:`` line, the exit code (1, or 3 for an ambiguous name), and not one byte or
mtime changed anywhere in the config dir.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.transcripts.fork import ForkError, NothingToFork, build_fork, fork_transcript
from tests.builders import ConfigTree, one_session

CWD = "/home/dev/proj"  # does not exist: no git repository, no worktrees
MTIME = 1_790_000_000


class World:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.tree = ConfigTree(base / "claude")
        self.db = base / "index.db"
        self.ids: dict[str, str] = {}
        self.paths: dict[str, Path] = {}

        s = self._session("alpha", title="Alpha")
        s.user("first question about alpha")
        s.assistant("answer about alpha")
        s.write(mtime=MTIME + 1)

        for n, name in enumerate(("twin1", "twin2")):
            s = self._session(name, title="Same name")
            s.user(f"prompt of {name}")
            s.assistant("ok")
            s.write(mtime=MTIME + 10 + n)

        # The fork source: a progress link, a sidechain entry, a raw U+2028, a subagent.
        s = self._session("source", title="Source work")
        self.source_user = s.user("start the source work")
        turn = s.assistant("Running", tool_uses=[("Bash", {"command": "make"})])
        self.source_progress = s.progress(turn.tool_use_ids[0])
        self.source_result = s.tool_result(turn.tool_use_ids[0], "built")
        self.source_side = s.user("a sidechain line", isSidechain=True)
        self.source_sep = s.assistant("line\u2028separated text")
        self.source_last = s.user("and the last prompt")
        s.meta("tag", tag="keep-me-out-of-the-fork")
        sub = s.subagent(agent_id="a1", tool_use_id=turn.tool_use_ids[0])
        sub.user("subagent task")
        sub.assistant("subagent answer")
        s.write(mtime=MTIME + 20)
        self.source_records = s.records

        # No trailing newline on the last line (a writer that crashed mid-append).
        s = self._session("ragged", title="Ragged")
        s.user("ragged prompt")
        s.assistant("ragged answer")
        s.raw(b'{"type":"last-prompt","lastPrompt":"half","sessionId":"x"}')
        s.write(mtime=MTIME + 30)

        # A transcript outside every projects/ dir.
        self.outside = base / "elsewhere" / "0c0c0c0c-0000-4000-8000-000000000c0c.jsonl"
        self.outside.parent.mkdir()
        self.outside.write_bytes(self.paths["alpha"].read_bytes())

    def _session(self, name: str, title: str | None = None) -> Any:
        s = self.tree.session(CWD)
        if title:
            s.meta("custom-title", customTitle=title)
        self.ids[name] = s.session_id
        self.paths[name] = s.path
        return s

    def run(self, *args: str, no_refresh: bool = False, input: str | None = None) -> Any:
        base = ["--config-dir", str(self.tree.root), "--db", str(self.db)]
        if no_refresh:
            base.append("--no-refresh")
        return CliRunner().invoke(cli, [*base, *args], input=input)

    def resolve(self, arg: str) -> dict[str, Any]:
        result = self.run("resolve", arg, "--cwd", CWD, "--json", no_refresh=True)
        assert result.exit_code == 0, result.output
        return one_session(result.stdout)

    def snapshot(self) -> dict[str, tuple[bytes, int]]:
        """Every file under the config dir (and the outside one): bytes and mtime."""
        out = {}
        for path in sorted([*self.tree.root.rglob("*"), self.outside]):
            if path.is_file():
                out[str(path)] = (path.read_bytes(), path.stat().st_mtime_ns)
        return out


@pytest.fixture
def world(tmp_path: Path) -> World:
    w = World(tmp_path)
    assert w.run("index").exit_code == 0
    return w


def last_line(path: Path) -> dict[str, Any]:
    return orjson.loads(path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1])


# ----------------------------------------------------------------- appends
def test_rename_appends_the_sdk_record_and_updates_the_index(world: World) -> None:
    path = world.paths["alpha"]
    before = path.read_bytes()
    result = world.run("rename", world.ids["alpha"], "  Beta ☕  ", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    written = path.read_bytes()[len(before) :]
    # Exactly the SDK's record and key order, stripped name, raw UTF-8 like the CLI.
    assert (
        written
        == (
            '{"type":"custom-title","customTitle":"Beta ☕","sessionId":"'
            + world.ids["alpha"]
            + '"}\n'
        ).encode()
    )
    # --no-refresh: the mutation itself brought the index up to date.
    assert world.resolve("beta ☕")["session_id"] == world.ids["alpha"]


def test_tag_is_sanitised_and_untag_clears(world: World) -> None:
    sid = world.ids["alpha"]
    result = world.run("tag", sid, "  \ufb01x\u200b-it ", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert last_line(world.paths["alpha"]) == {"type": "tag", "tag": "fix-it", "sessionId": sid}
    assert world.resolve(sid)["tag"] == "fix-it"
    result = world.run("untag", sid, "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert last_line(world.paths["alpha"]) == {"type": "tag", "tag": "", "sessionId": sid}
    assert world.resolve(sid)["tag"] is None


def test_rename_by_transcript_path_inside_projects(world: World) -> None:
    result = world.run("rename", str(world.paths["alpha"]), "By path")
    assert result.exit_code == 0, result.output
    assert world.resolve(world.ids["alpha"])["custom_title"] == "By path"


def test_append_adds_the_missing_newline_first(world: World) -> None:
    path = world.paths["ragged"]
    before = path.read_bytes()
    assert not before.endswith(b"\n")
    result = world.run("tag", world.ids["ragged"], "fixed", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    after = path.read_bytes()
    assert after.startswith(before + b"\n")  # the half line is closed, not glued to
    lines = after.rstrip(b"\n").split(b"\n")
    assert orjson.loads(lines[-2]) == {
        "type": "last-prompt",
        "lastPrompt": "half",
        "sessionId": "x",
    }
    assert orjson.loads(lines[-1])["tag"] == "fixed"


def test_json_output_is_the_session_after_the_change(world: World) -> None:
    result = world.run("rename", world.ids["alpha"], "Gamma", "--cwd", CWD, "--json")
    assert result.exit_code == 0, result.output
    [obj] = json.loads(result.stdout)
    assert (obj["session_id"], obj["custom_title"], obj["title"]) == (
        world.ids["alpha"],
        "Gamma",
        "Gamma",
    )


# ----------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["rename", "99999999-9999-4999-8999-999999999999", "x"],
            "No conversation found with session ID: 99999999-9999-4999-8999-999999999999",
        ),
        (["rename", "no such session", "x"], "Error: No session matches 'no such session'."),
        (["rename", "Alpha", ""], "Error: the new name is empty"),
        (["rename", "Alpha", " \t "], "Error: the new name is empty"),
        (["tag", "Alpha", ""], "Error: the tag is empty"),
        (["tag", "Alpha", "\u200b\ufeff "], "Error: the tag is empty"),
        (["fork", "Alpha", "--title", "\u200b"], "Error: the fork's title is empty"),
        (
            ["fork", "Alpha", "--up-to", "77777777-7777-4777-8777-777777777777"],
            "Error: Message 77777777-7777-4777-8777-777777777777 not found in session",
        ),
        (["untag", "OUTSIDE"], "is not a session transcript inside a configured projects/ dir"),
        (
            ["rename", "OUTSIDE", "x"],
            "is not a session transcript inside a configured projects/ dir",
        ),
        (
            ["delete", "OUTSIDE", "--yes"],
            "is not a session transcript inside a configured projects/ dir",
        ),
        (["delete", "Alpha"], "Error: refusing to delete without confirmation: pass --yes"),
    ],
)
def test_bad_input_is_one_line_exit_1_and_writes_nothing(
    world: World, args: list[str], message: str
) -> None:
    args = [str(world.outside) if a == "OUTSIDE" else a for a in args]
    before = world.snapshot()
    result = world.run(*args, "--cwd", CWD)
    assert result.exit_code == 1, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output
    assert world.snapshot() == before


@pytest.mark.parametrize(
    "args",
    [
        ["rename", "same name", "x"],
        ["tag", "Same Name", "t"],
        ["untag", "same name"],
        ["fork", "same name"],
        ["delete", "same name", "--yes"],
    ],
)
def test_ambiguous_name_exits_3_with_candidates_and_writes_nothing(
    world: World, args: list[str]
) -> None:
    before = world.snapshot()
    result = world.run(*args, "--cwd", CWD, "--json" if args[0] != "delete" else "--yes")
    assert result.exit_code == 3, result.output
    assert "2 sessions are named 'same name'" in result.stderr.lower()
    if args[0] != "delete":
        assert {c["session_id"] for c in json.loads(result.stdout)} == {
            world.ids["twin1"],
            world.ids["twin2"],
        }
    else:
        assert world.ids["twin1"][:8] in result.stdout and world.ids["twin2"][:8] in result.stdout
    assert world.snapshot() == before


@pytest.mark.parametrize("became", ["nothing", "a directory"])
@pytest.mark.parametrize("action", ["rename", "tag", "fork"])
def test_a_file_that_vanishes_after_it_was_resolved_is_never_recreated(
    world: World, action: str, became: str
) -> None:
    """The race the check of one session cannot close: the file goes (or a directory
    takes its name) between the lookup and the write. The write refuses in one
    message, writes nothing, and forgets the session."""
    from sessiondex import Index
    from sessiondex.actions.mutations import MutationError, fork, rename, tag
    from sessiondex.transcripts.fork import ForkError

    assert world.run("index").exit_code == 0
    path = world.paths["alpha"]
    with Index(world.db, [world.tree.root]) as index:
        found = index.resolve(world.ids["alpha"], cwd=CWD)
        path.unlink()
        if became == "a directory":
            path.mkdir()
        db = index.writer()
        roots = index.roots
        write = {
            "rename": lambda: rename(db, found, "x", roots=roots),
            "tag": lambda: tag(db, found, "x", roots=roots),
            "fork": lambda: fork(db, found, roots=roots),
        }[action]
        with pytest.raises((MutationError, ForkError)) as refused:
            write()
    assert "\n" not in str(refused.value) and str(path) in str(refused.value)
    assert path.is_dir() and not any(path.iterdir()) if became != "nothing" else not path.exists()
    assert world.run("resolve", world.ids["alpha"], "--cwd", CWD, no_refresh=True).exit_code == 1


def test_vanished_file_is_an_error_and_is_never_recreated(world: World) -> None:
    path = world.paths["alpha"]
    path.unlink()
    # --no-refresh skips the pass over every file, not the check of the one named: the
    # session is known gone before anything is written.
    result = world.run("rename", world.ids["alpha"], "x", "--cwd", CWD, no_refresh=True)
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == f"No conversation found with session ID: {world.ids['alpha']}"
    assert not path.exists()
    # And the index forgot it on the way.
    gone = world.run("resolve", world.ids["alpha"], "--cwd", CWD, no_refresh=True)
    assert gone.exit_code == 1


def test_a_transcript_that_became_a_directory_is_refused(world: World) -> None:
    """A write that fails for another reason than "missing" (here the path is now a
    directory named ``<id>.jsonl``): one line, exit 1, nothing written."""
    path = world.paths["alpha"]
    path.unlink()
    path.mkdir()
    before = world.snapshot()
    result = world.run("tag", world.ids["alpha"], "t", "--cwd", CWD, no_refresh=True)
    assert result.exit_code == 1, result.output
    # the check of the one session finds no transcript there now (no pass needed)
    assert result.stderr == f"No conversation found with session ID: {world.ids['alpha']}\n"
    assert path.is_dir() and not any(path.iterdir())
    assert world.snapshot() == before


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="root writes through chmod 0444; the "
    "directory case above covers a failing append when running as root",
)
def test_read_only_transcript_is_refused(world: World) -> None:
    path = world.paths["alpha"]
    path.chmod(0o444)
    before = world.snapshot()
    result = world.run("rename", world.ids["alpha"], "x", "--cwd", CWD)
    assert result.exit_code == 1, result.output
    assert "cannot write" in result.stderr and len(result.stderr.splitlines()) == 1
    assert world.snapshot() == before


# ----------------------------------------------------------------- fork
def _records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().split(b"\n") if line]


def test_fork_copies_the_main_thread_with_new_ids(world: World) -> None:
    result = world.run("fork", "Source work", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    new_id = result.stdout.strip()
    source_path = world.paths["source"]
    fork_path = source_path.parent / f"{new_id}.jsonl"
    assert stat.S_IMODE(fork_path.stat().st_mode) == 0o600
    records = _records(fork_path)
    entries, title = records[:-1], records[-1]
    originals = {r["uuid"]: r for r in world.source_records if "uuid" in r}
    # Every chain entry but the progress link and the sidechain line, in file order.
    expected = [
        u for u, r in originals.items() if r["type"] != "progress" and not r.get("isSidechain")
    ]
    assert [e["forkedFrom"]["messageUuid"] for e in entries] == expected
    new_of = {e["forkedFrom"]["messageUuid"]: e["uuid"] for e in entries}
    assert not set(new_of.values()) & set(originals)  # fresh UUIDs only
    for entry in entries:
        original = originals[entry["forkedFrom"]["messageUuid"]]
        assert entry["forkedFrom"]["sessionId"] == world.ids["source"]
        assert entry["sessionId"] == new_id and entry["isSidechain"] is False
        assert entry["timestamp"] == original["timestamp"]  # originals kept
        assert entry["message"] == original["message"]
    # The tool result hung off the progress link: its parent is now the progress
    # link's own parent (the assistant line), remapped.
    result_entry = next(e for e in entries if e["forkedFrom"]["messageUuid"] == world.source_result)
    progress = originals[world.source_progress]
    assert result_entry["parentUuid"] == new_of[progress["parentUuid"]]
    # The U+2028 entry survived (the SDK's splitlines() loses it).
    assert any(e["forkedFrom"]["messageUuid"] == world.source_sep.uuid for e in entries)
    assert "\u2028".encode() in fork_path.read_bytes()
    assert title == {
        "type": "custom-title",
        "sessionId": new_id,
        "customTitle": "Source work (fork)",
        "uuid": title["uuid"],
        "timestamp": title["timestamp"],
    }
    assert len(title["timestamp"]) == len("2026-11-01T10:00:00.000Z")
    # No tag, no subagents copied (the fork's folder holds only its title sidecar);
    # the index knows the fork already.
    assert not any(r.get("type") == "tag" for r in records)
    assert [p.name for p in (source_path.parent / new_id).iterdir()] == ["custom-title.json"]
    obj = world.resolve(new_id)
    assert obj["forked_from"] == {
        "session_id": world.ids["source"],
        "message_uuid": world.source_user,
    }
    assert obj["title"] == "Source work (fork)" and obj["tag"] is None


def test_fork_up_to_a_message_with_a_title(world: World) -> None:
    result = world.run(
        "fork",
        world.ids["source"],
        "--up-to",
        world.source_result,
        "--title",
        "Plan B",
        "--cwd",
        CWD,
    )
    assert result.exit_code == 0, result.output
    new_id = result.stdout.strip()
    records = _records(world.paths["source"].parent / f"{new_id}.jsonl")
    assert records[-2]["forkedFrom"]["messageUuid"] == world.source_result
    assert records[-1]["customTitle"] == "Plan B"
    assert world.resolve("plan b")["session_id"] == new_id


def test_fork_up_to_a_sidechain_entry_is_not_found(world: World) -> None:
    before = world.snapshot()
    result = world.run("fork", world.ids["source"], "--up-to", world.source_side, "--cwd", CWD)
    assert result.exit_code == 1
    assert "not found in session" in result.stderr
    assert world.snapshot() == before


@pytest.mark.parametrize(
    "taken_by", ["a transcript", "a symlink to a transcript", "a dangling symlink"]
)
def test_fork_never_overwrites_what_holds_the_new_path(
    world: World, monkeypatch: pytest.MonkeyPatch, taken_by: str
) -> None:
    """spec: a fork is created with O_EXCL and never overwrites. A new ID whose file
    exists (a UUID collision, or a path planted there) is an error; nothing is written
    through a link either."""
    import uuid

    from sessiondex.transcripts import fork as fork_module

    taken = uuid.UUID("0f0f0f0f-0000-4000-8000-000000000001")
    monkeypatch.setattr(fork_module.uuid, "uuid4", lambda: taken)
    path = world.paths["source"].parent / f"{taken}.jsonl"
    if taken_by == "a transcript":
        path.write_bytes(b'{"type":"user","message":{"role":"user","content":"mine"}}\n')
    elif taken_by == "a symlink to a transcript":
        path.symlink_to(world.paths["alpha"])
    else:
        path.symlink_to(world.base / "nowhere.jsonl")
    before = world.snapshot()
    result = world.run("fork", world.ids["source"], "--cwd", CWD)
    assert result.exit_code == 1, result.output
    assert result.stderr == f"Error: {path} already exists; not overwriting it\n"
    assert world.snapshot() == before
    assert not (world.base / "nowhere.jsonl").exists()


SIDECHAIN_ONLY = (
    b'{"parentUuid":null,"isSidechain":true,"type":"user","message":{"role":"user",'
    b'"content":"a subagent\'s task"},"uuid":"5c5c5c5c-0000-4000-8000-0000000000a1"}\n'
    b'{"type":"tag","tag":"t","sessionId":"x"}\n'
)


@pytest.mark.parametrize(
    ("now_holds", "fresh", "error"),
    [
        # Claude Code rewrites a transcript in place (truncate, then write): a fork
        # reading in between sees an empty file, or a first line not yet complete.
        (b"", True, "session is being written, try again"),
        (b'{"parentUuid":null,"isSidechain":false,"type":"user","mess', True, "being written"),
        (b"", False, "has no messages to fork"),  # at rest: the session really has none
        # whole messages, all a subagent's: none to fork however long one waits, and a
        # file just tagged or renamed said "being written, try again" for 2 s
        (SIDECHAIN_ONLY, True, "has no messages to fork"),
        (SIDECHAIN_ONLY, False, "has no messages to fork"),
        # unless a line is still being written: it may be the first message to fork
        (SIDECHAIN_ONLY + b'{"parentUuid":null,"type":"us', True, "being written"),
    ],
    ids=[
        "truncated-mid-rewrite",
        "first-line-being-written",
        "empty-at-rest",
        "sidechain-only-just-written",
        "sidechain-only-at-rest",
        "sidechain-only-and-a-line-being-written",
    ],
)
def test_a_fork_of_a_file_being_rewritten_says_try_again(
    world: World, now_holds: bytes, fresh: bool, error: str
) -> None:
    """Seen beside a writer that rewrites the transcript in place (1 fork in 34): "has
    no messages to fork" for a session with hundreds, where trying again a moment later
    works. The file changed between the command's check of it and the fork's read, so
    this calls the fork itself. Only a file at rest has no messages; one written to
    within the quiet period is being written (as for an append), and nothing is made,
    unless its lines are all whole and hold messages, every one a subagent's: those
    it never has to fork."""
    path = world.paths["alpha"]
    path.write_bytes(now_holds)
    if not fresh:
        os.utime(path, (MTIME, MTIME))
    before = world.snapshot()
    with pytest.raises(ForkError) as caught:
        fork_transcript(path, [world.tree.root])
    assert error in str(caught.value)
    assert isinstance(caught.value, NothingToFork) is ("no messages" in error)  # SDK: ValueError
    assert world.snapshot() == before


def test_a_fork_appears_whole_or_not_at_all(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fork killed while writing a big transcript left ``<new id>.jsonl`` cut
    mid-line, listed as a session. The copy is written under a hidden name and put in
    place whole: while its bytes are written, no transcript of its ID exists."""
    import uuid

    from sessiondex.transcripts import fork as fork_module

    taken = uuid.UUID("0f0f0f0f-0000-4000-8000-000000000002")
    monkeypatch.setattr(fork_module.uuid, "uuid4", lambda: taken)
    target = world.paths["source"].parent / f"{taken}.jsonl"
    seen_while_writing: list[bool] = []
    real_write = os.write

    def watched_write(fd: int, data: Any) -> int:
        if not bytes(data).startswith(b'{"customTitle"'):  # the title sidecar comes after
            seen_while_writing.append(target.exists())
        return real_write(fd, data)

    monkeypatch.setattr(fork_module.os, "write", watched_write)
    result = world.run("fork", world.ids["source"], "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert seen_while_writing == [False]
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".")] == []
    assert target.stat().st_nlink == 1  # no second name holds it (a deleted fork would)
    lines = target.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(orjson.loads(raw) for raw in lines[:-1])
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_fork_sweeps_the_part_files_killed_forks_left(world: World) -> None:
    """A fork killed while writing leaves ``.<id>.jsonl.part``, as big as what it
    copied; the next fork in the folder removes those untouched for an hour (not a
    fresh one: a fork may be writing it), and nothing else."""
    folder = world.paths["source"].parent
    stale = folder / ".0f0f0f0f-0000-4000-8000-00000000000a.jsonl.part"
    fresh = folder / ".0f0f0f0f-0000-4000-8000-00000000000b.jsonl.part"
    other = folder / ".notes.jsonl.part"
    for path in (stale, fresh, other):
        path.write_bytes(b'{"type":"user"')
    old = time.time() - 7200
    for path in (stale, other):
        os.utime(path, (old, old))
    result = world.run("fork", world.ids["source"], "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert not stale.exists() and fresh.exists() and other.exists()


def test_build_fork_never_reuses_ids_and_skips_progress_chains() -> None:
    """Pure function: a chain user → progress → progress → assistant."""
    records = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"content": "hi"},
            "timestamp": "2026-01-01T00:00:00.000Z",
        },
        {"type": "progress", "uuid": "p1", "parentUuid": "u1"},
        {"type": "progress", "uuid": "p2", "parentUuid": "p1"},
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "p2",
            "slug": "s",
            "teamName": "t",
            "message": {"content": "yo"},
        },
        {"type": "content-replacement", "sessionId": "S", "replacements": [{"k": 1}]},
    ]
    out = build_fork(records, source_id="S", new_id="N", now="2026-02-02T00:00:00.000Z")
    user, assistant, replacement, title = out
    assert assistant["parentUuid"] == user["uuid"]
    assert "slug" not in assistant and "teamName" not in assistant
    assert assistant["timestamp"] == "2026-02-02T00:00:00.000Z"  # had none
    assert user["timestamp"] == "2026-01-01T00:00:00.000Z"
    assert replacement["replacements"] == [{"k": 1}] and replacement["sessionId"] == "N"
    assert title["customTitle"] == "hi (fork)"


# ----------------------------------------------------------------- delete
def test_delete_with_yes_removes_transcript_folder_and_index_row(world: World) -> None:
    path = world.paths["source"]
    folder = path.with_suffix("")
    assert folder.is_dir()
    result = world.run("delete", "Source work", "--yes", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert not path.exists() and not folder.exists()
    assert world.run("resolve", world.ids["source"], "--cwd", CWD, no_refresh=True).exit_code == 1


@pytest.mark.parametrize(("answer", "deleted"), [("y\n", True), ("n\n", False), ("\n", False)])
def test_delete_asks_on_a_terminal(
    world: World, monkeypatch: pytest.MonkeyPatch, answer: str, deleted: bool
) -> None:
    import sessiondex.cli.mutate_cmds as mutate_cmds

    monkeypatch.setattr(mutate_cmds, "_stdin_is_terminal", lambda: True)
    result = world.run("delete", "Alpha", "--cwd", CWD, input=answer)
    assert "Delete session 'Alpha'" in result.stderr
    assert result.exit_code == (0 if deleted else 1), result.output
    assert world.paths["alpha"].exists() is not deleted


@pytest.mark.parametrize(
    ("command", "hint"),
    [
        (
            ["rename", "{sid}", "Elsewhere"],
            "To resume, run: cd {cwd} && {cfg} claude --resume {sid}",
        ),
        (["tag", "{sid}", "far"], "To resume, run: cd {cwd} && {cfg} claude --resume {sid}"),
        (["fork", "{sid}"], "To resume it, run: cd {cwd} && {cfg} claude --resume {new}"),
        (["delete", "{sid}", "--yes"], None),
    ],
    ids=["rename", "tag", "fork", "delete"],
)
def test_a_session_of_another_directory_gets_the_hint_that_fits_the_command(
    world: World, command: list[str], hint: str | None
) -> None:
    """delete printed how to resume the session it deleted, and fork how to resume its
    source instead of the fork."""
    sid = world.ids["alpha"]
    args = [a.format(sid=sid) for a in command]
    result = world.run(*args, "--cwd", "/somewhere/else")
    assert result.exit_code == 0, result.output
    new = result.stdout.strip() if command[0] == "fork" else ""
    cfg = f"CLAUDE_CONFIG_DIR={world.tree.root}"
    if hint is None:
        assert "resume" not in result.stderr
    else:
        assert hint.format(cwd=CWD, cfg=cfg, sid=sid, new=new) in result.stderr
        if command[0] == "fork":
            assert f"--resume {sid}" not in result.stderr


def test_a_failed_mutation_says_only_why(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiondex.actions import mutations
    from sessiondex.transcripts.write import WriteRefused

    def refuse(path: Path, record: dict[str, Any], roots: list[Path]) -> None:
        raise WriteRefused(f"cannot write {path}: Permission denied")

    monkeypatch.setattr(mutations, "append_record", refuse)
    result = world.run("rename", world.ids["alpha"], "Nope", "--cwd", "/somewhere/else")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: cannot write {world.paths['alpha']}: Permission denied"
    ]


@pytest.mark.parametrize(
    ("records", "title"),
    [
        # The SDK's rule (reference §4.4 step 10: first_prompt(H), §2.5), which does not
        # pass over a sidechain line, as our own first_prompt does not (helper 125).
        (
            [
                {"type": "user", "isMeta": True, "message": {"content": "meta"}},
                {"type": "user", "isSidechain": True, "message": {"content": "side prompt"}},
                {"type": "user", "message": {"content": "real prompt"}},
            ],
            "side prompt",
        ),
        ([{"type": "user", "message": {"content": "real prompt"}}], "real prompt"),
        ([{"type": "ai-title", "aiTitle": "Named"}, {"type": "user", "message": {"content": "p"}}], "Named"),
        ([], "Forked session"),
    ],
)  # fmt: skip
def test_a_fork_s_default_title_is_the_sdk_s(records: list[dict[str, Any]], title: str) -> None:
    from sessiondex.transcripts.fork import default_base_title

    assert default_base_title(records) == title


# ----------------------------------------------------------------- the title sidecar
# Claude Code mirrors a session's name into <id>/custom-title.json, and its picker and
# `--resume NAME` read a name tail record > that sidecar > head record
# (reference/cli-sessions.md §6.4). A sidecar left saying the old name brings the old
# name back once the record is more than 64 KiB from the end.
SIDECAR = "custom-title.json"
STALE = b'{"customTitle":"Old","by":"user","at":"2026-11-01T10:00:00.000Z"}'


def _sidecar(world: World, name: str) -> Path:
    return world.paths[name].with_suffix("") / SIDECAR


def _stale_sidecar(world: World, name: str, how: str) -> Path | None:
    """Put the ``<id>/`` folder of session ``name`` in state ``how``; returns the file
    outside the projects dir a link points at, if any."""
    sidecar = _sidecar(world, name)
    if how == "no folder":
        assert not sidecar.parent.exists()
        return None
    sidecar.parent.mkdir(exist_ok=True)
    if how == "a stale sidecar":
        sidecar.write_bytes(STALE)
        return None
    if how == "a folder without one":
        return None
    outside = world.base / "elsewhere" / "title.json"
    outside.write_bytes(STALE)
    if how == "a link to a file outside":
        sidecar.symlink_to(outside)
    elif how == "a dangling link":
        sidecar.symlink_to(world.base / "elsewhere" / "nowhere.json")
    else:
        raise AssertionError(how)
    return outside


@pytest.mark.parametrize(
    ("session", "how"),
    [
        ("alpha", "a stale sidecar"),
        ("alpha", "no folder"),
        ("alpha", "a link to a file outside"),
        ("alpha", "a dangling link"),
        ("source", "a folder without one"),  # its subagents' folder
        ("source", "a stale sidecar"),
    ],
)
def test_rename_writes_the_sidecar_claude_code_reads(world: World, session: str, how: str) -> None:
    sidecar = _sidecar(world, session)
    outside = _stale_sidecar(world, session, how)
    result = world.run("rename", world.ids[session], "New ☕", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert last_line(world.paths[session])["customTitle"] == "New ☕"  # the record first
    # a regular file of its own (a link is replaced, never written through), JSON with
    # only what Claude Code's sidecar is documented to hold that we know: the name
    assert not sidecar.is_symlink() and sidecar.is_file()
    assert json.loads(sidecar.read_bytes()) == {"customTitle": "New ☕"}
    assert "New ☕".encode() in sidecar.read_bytes()  # raw UTF-8, as the transcript
    assert stat.S_IMODE(sidecar.stat().st_mode) == 0o600
    if outside is not None:
        assert outside.read_bytes() == STALE
    assert not (world.base / "elsewhere" / "nowhere.json").exists()
    leftovers = [p.name for p in sidecar.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # no temporary file left behind
    assert world.resolve("new ☕")["session_id"] == world.ids[session]


def test_a_rename_sweeps_the_sidecar_temporaries_a_killed_rename_left(world: World) -> None:
    """A process killed between writing its temporary sidecar and renaming it leaves
    ``.custom-title.json.<hex>.tmp`` behind; the next rename of that session removes
    such files once they are an hour old (a live rename's is milliseconds old), and
    nothing else: not a young one, not another file, not a link, not a directory."""
    folder = _sidecar(world, "alpha").parent
    folder.mkdir(exist_ok=True)
    day_ago = time.time() - 86400
    stale = folder / f".custom-title.json.{'a' * 32}.tmp"
    young = folder / f".custom-title.json.{'b' * 32}.tmp"
    other = folder / ".notes.tmp"
    linked = folder / f".custom-title.json.{'c' * 32}.tmp"
    kept_dir = folder / f".custom-title.json.{'d' * 32}.tmp"
    target = world.base / "elsewhere.json"
    for path in (stale, young, other, target):
        path.write_bytes(b'{"customTitle": "half')
    linked.symlink_to(target)
    kept_dir.mkdir()
    for path in (stale, other, target, kept_dir):
        os.utime(path, (day_ago, day_ago))
    os.utime(linked, (day_ago, day_ago), follow_symlinks=False)
    result = world.run("rename", world.ids["alpha"], "Swept", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert not stale.exists()
    assert young.exists() and other.exists() and kept_dir.is_dir()
    assert linked.is_symlink() and target.exists()


def test_renaming_to_the_name_the_sidecar_contradicts_writes_again(world: World) -> None:
    """``rename`` writes nothing when the session already has the name; a sidecar
    saying another name is Claude Code's picker showing that name, not "already
    named"."""
    _stale_sidecar(world, "alpha", "a stale sidecar")
    result = world.run("rename", world.ids["alpha"], "Alpha", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert "nothing written" not in result.output
    assert json.loads(_sidecar(world, "alpha").read_bytes()) == {"customTitle": "Alpha"}
    # and with the sidecar right, the same name again is a no-op
    before = world.snapshot()
    again = world.run("rename", world.ids["alpha"], "Alpha", "--cwd", CWD)
    assert again.exit_code == 0 and "nothing written" in again.output
    assert world.snapshot() == before


def test_the_sidecar_is_replaced_whole(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Written aside in the same folder and renamed over the old one: a reader (Claude
    Code's picker) sees the old sidecar or the new, never a half-written one."""
    sidecar = _sidecar(world, "alpha")
    _stale_sidecar(world, "alpha", "a stale sidecar")
    seen: list[bytes] = []
    real_write = os.write

    def watched_write(fd: int, data: Any) -> int:
        seen.append(sidecar.read_bytes())
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", watched_write)
    result = world.run("rename", world.ids["alpha"], "New", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert seen and set(seen) == {STALE}  # every write happened beside the old sidecar
    assert json.loads(sidecar.read_bytes()) == {"customTitle": "New"}


@pytest.mark.parametrize(
    "how", ["a file where the folder goes", "a link to a folder outside", "a directory sidecar"]
)
def test_a_sidecar_that_cannot_be_written_leaves_the_rename_done_and_says_so(
    world: World, how: str
) -> None:
    """The record is the source of truth (sessiondex, the SDK and the picker's tail read
    it): the rename is done, exit 0, and one warning line says the sidecar is not
    updated. Nothing is written outside the projects dir."""
    folder = world.paths["alpha"].with_suffix("")
    outside = world.base / "elsewhere" / "folder"
    if how == "a file where the folder goes":
        folder.write_bytes(b"not a folder")
    elif how == "a link to a folder outside":
        outside.mkdir()
        folder.symlink_to(outside)
    else:
        (folder / SIDECAR).mkdir(parents=True)
    result = world.run("rename", world.ids["alpha"], "New", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert last_line(world.paths["alpha"])["customTitle"] == "New"
    [line] = result.stderr.splitlines()
    assert line.startswith("warning: ") and SIDECAR in line and str(folder) in line
    assert world.resolve("new")["session_id"] == world.ids["alpha"]
    if how == "a link to a folder outside":
        assert list(outside.iterdir()) == []
    if how == "a file where the folder goes":
        assert folder.read_bytes() == b"not a folder"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_read_only_session_folder_leaves_the_rename_done_and_says_so(world: World) -> None:
    folder = world.paths["source"].with_suffix("")  # it holds the subagents
    folder.chmod(0o555)
    try:
        result = world.run("rename", world.ids["source"], "New", "--cwd", CWD)
    finally:
        folder.chmod(0o755)
    assert result.exit_code == 0, result.output
    assert last_line(world.paths["source"])["customTitle"] == "New"
    [line] = result.stderr.splitlines()
    assert line.startswith("warning: ") and "Permission denied" in line
    assert not (folder / SIDECAR).exists()


@pytest.mark.parametrize("title", [None, "Plan C"])
def test_a_fork_gets_the_sidecar_of_its_own_title(world: World, title: str | None) -> None:
    """Claude Code's fork writes the sidecar of the new session too."""
    _stale_sidecar(world, "source", "a stale sidecar")  # the source's is not copied
    result = world.run(
        "fork", world.ids["source"], *(["--title", title] if title else []), "--cwd", CWD
    )
    assert result.exit_code == 0, result.output
    new_id = result.stdout.strip()
    folder = world.paths["source"].parent / new_id
    name = title or "Source work (fork)"
    assert _records(folder.with_suffix(".jsonl"))[-1]["customTitle"] == name
    assert sorted(p.name for p in folder.iterdir()) == [SIDECAR]  # no subagents copied
    assert json.loads((folder / SIDECAR).read_bytes()) == {"customTitle": name}
    assert _sidecar(world, "source").read_bytes() == STALE


def test_the_sdk_writers_write_the_sidecar_too(world: World) -> None:
    from sessiondex.sdk import fork_session, rename_session

    _stale_sidecar(world, "alpha", "a stale sidecar")
    opts = {"db": world.db, "config_dir": world.tree.root}
    rename_session(world.ids["alpha"], "  From the SDK ", **opts)
    assert json.loads(_sidecar(world, "alpha").read_bytes()) == {"customTitle": "From the SDK"}
    forked = fork_session(world.ids["alpha"], title="SDK fork", **opts)
    folder = world.paths["alpha"].parent / forked.session_id
    assert json.loads((folder / SIDECAR).read_bytes()) == {"customTitle": "SDK fork"}


def test_list_after_a_rename_shows_the_name_and_reads_nothing_again(world: World) -> None:
    """The sidecar is no transcript: writing it (and making ``<id>/``) changes no
    transcript's stat, so the refresh after a rename reads no byte again and finds
    nothing new, grown or rewritten (the just-appended transcript is only looked at,
    as after a tag, until its mtime is out of the racy window); the index never opens
    the sidecar or anything in the new folder (the record says the same)."""
    from sessiondex import Index
    from tests.helpers_index import files_opened

    result = world.run("rename", world.ids["alpha"], "New", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    sidecar = _sidecar(world, "alpha")
    assert sidecar.is_file()
    with Index(world.db, [world.tree.root]) as index, files_opened() as opened:
        stats = index.refresh()
        listed = {s["session_id"]: s["title"] for s in index.list(scope="all")}
    assert (stats.new, stats.grown, stats.rewritten, stats.removed) == (0, 0, 0, 0)
    assert (stats.bytes_read, stats.picker_archives) == (0, 0)
    assert listed[world.ids["alpha"]] == "New"
    assert not [p for p in opened if p.startswith(str(sidecar.parent) + os.sep)]
    assert {p for p in opened if p.endswith(".jsonl")} <= {str(world.paths["alpha"])}


# ------------------------------------------- the write landed, the index did not follow
class IndexFullAfterTheWrite:
    """The index takes nothing once the transcript was written (a full disk for the
    index alone): every ``ingest_path``/``remove_path`` of the mutation after the write
    fails as SQLite fails on a full disk; the checks before the write still pass."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import sqlite3

        from sessiondex.actions import mutations

        self.written = False

        def after(real: Any) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                done = real(*args, **kwargs)
                self.written = True
                return done

            return call

        def full(real: Any) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                if self.written:
                    raise sqlite3.OperationalError("database or disk is full")
                return real(*args, **kwargs)

            return call

        for name in ("append_record", "fork_transcript", "delete_session_files"):
            monkeypatch.setattr(mutations, name, after(getattr(mutations, name)))
        for name in ("ingest_path", "remove_path"):
            monkeypatch.setattr(mutations, name, full(getattr(mutations, name)))


# (command, session, what the error line says was done: {sid} and {new} filled in)
WRITES_THE_INDEX_MISSED = [
    (["rename", "{sid}", "Gamma"], "alpha", "renamed {sid} to 'Gamma'"),
    (["tag", "{sid}", "#later"], "alpha", "tagged {sid} #later"),
    (["untag", "{sid}"], "source", "cleared the tag of {sid}"),
    (["fork", "{sid}"], "source", "forked {sid} into {new}"),
    (["delete", "{sid}", "--yes"], "alpha", "deleted {sid}"),
]


@pytest.mark.parametrize(("command", "session", "done"), WRITES_THE_INDEX_MISSED)
def test_a_write_the_index_cannot_follow_says_it_was_done(
    world: World, monkeypatch: pytest.MonkeyPatch, command: list[str], session: str, done: str
) -> None:
    """A full disk under the index (helper h510's probe): the record was appended, then
    the command exited 1 with "cannot write the index … the disk is full" alone, as if
    nothing had happened, and a rename left the title sidecar saying the old name. Now
    the one error line says what was done and that the index catches up, the sidecar
    is written, and the next refresh shows the change."""
    sid = world.ids[session]
    before = set(world.paths[session].parent.glob("*.jsonl"))
    IndexFullAfterTheWrite(monkeypatch)
    result = world.run(*[a.format(sid=sid) for a in command], "--cwd", CWD)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    new = [p.stem for p in set(world.paths[session].parent.glob("*.jsonl")) - before]
    expected = done.format(sid=sid, new=new[0] if new else "")
    assert line.startswith(f"Error: {expected}; the index could not be updated: "), line
    assert str(world.db) in line and "the disk is full" in line
    assert line.endswith("it will catch up on the next refresh"), line
    monkeypatch.undo()
    listed = world.run("list", "--scope", "all", "--all-kinds", "--json")
    sessions = {s["session_id"]: s for s in json.loads(listed.stdout)}
    if command[0] == "rename":
        assert sessions[sid]["custom_title"] == "Gamma"
        assert json.loads(_sidecar(world, "alpha").read_bytes()) == {"customTitle": "Gamma"}
    elif command[0] == "tag":
        assert sessions[sid]["tag"] == "later"
    elif command[0] == "untag":
        assert sessions[sid]["tag"] is None
    elif command[0] == "fork":
        [fork_id] = new
        assert sessions[fork_id]["custom_title"] == "Source work (fork)"
        sidecar = world.paths[session].parent / fork_id / SIDECAR
        assert json.loads(sidecar.read_bytes()) == {"customTitle": "Source work (fork)"}
    else:
        assert sid not in sessions and not world.paths[session].exists()


def test_an_sdk_write_the_index_cannot_follow_succeeds_as_the_sdk_s_would(
    world: World, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK's own writers have no index: the record that landed is their success.
    ``rename_session`` raised OSError for the index's full disk with the record written."""
    from sessiondex.sdk import rename_session

    IndexFullAfterTheWrite(monkeypatch)
    rename_session(world.ids["alpha"], "From the SDK", db=world.db, config_dir=world.tree.root)
    assert last_line(world.paths["alpha"])["customTitle"] == "From the SDK"
    assert json.loads(_sidecar(world, "alpha").read_bytes()) == {"customTitle": "From the SDK"}
    assert "the index could not be updated" in caplog.text  # logged, as its warnings
