"""Archived sessions (``cleanup --apply --archive``) are counted, shown, marked and
readable, and never offered a resume command that cannot work (issue 16 item 4)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from tests.builders import ConfigTree, one_session

CWD = "/w/app"


class Archived:
    """Two expired sessions archived by cleanup (one with a subagent), one live."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.tree = ConfigTree(base / "claude")
        self.db = base / "i.db"
        self.archive_dir = base / "archive"
        old = time.time() - 60 * 86400
        first = self.tree.session(cwd=CWD)
        first.user("plan the zebra migration")
        turn = first.assistant("delegating", tool_uses=[("Task", {"prompt": "survey"})])
        sub = first.subagent(agent_id="a1b2c3", tool_use_id=turn.tool_use_ids[0])
        sub.user("survey the zebra tables")
        sub.assistant("three tables")
        first.tool_result(turn.tool_use_ids[0], "three tables")
        first.meta("custom-title", customTitle="Zebra migration")
        first.write(mtime=old)
        second = self.tree.session(cwd=CWD)
        second.user("zebra cleanup")
        second.assistant("done")
        second.write(mtime=old - 10)
        live = self.tree.session(cwd=CWD)
        live.user("zebra today")
        live.assistant("sure")
        live.write(mtime=time.time() - 3600)
        self.first, self.second, self.live = first, second, live
        self.cleanup = self.run("cleanup", "--apply", "--archive", str(self.archive_dir))

    def run(self, *args: str) -> Any:
        base = ["--config-dir", str(self.tree.root), "--db", str(self.db)]
        return CliRunner().invoke(cli, [*base, *args, "--cwd", CWD])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Archived:
    return Archived(tmp_path_factory.mktemp("archived"))


def test_cleanup_counts_what_it_archived(world: Archived) -> None:
    assert world.cleanup.exit_code == 0, world.cleanup.output
    last = world.cleanup.stdout.strip().splitlines()[-1]
    assert last.startswith("2 sessions deleted (")
    assert "all archived first; 0 skipped; 0 failed." in last
    assert "skipped or archived" not in world.cleanup.stdout


def test_list_marks_archived_rows_and_offers_no_resume_command(world: Archived) -> None:
    table = world.run("list", "--include-archived").stdout
    rows = {line.split()[-1]: line for line in table.splitlines()[1:]}
    assert rows[world.first.session_id[:8]].startswith("[archived] Zebra migration")
    assert "[archived]" not in rows[world.live.session_id[:8]]
    objects = json.loads(world.run("list", "--include-archived", "--json").stdout)
    commands = {o["session_id"]: o["resume_command"] for o in objects}
    assert commands[world.first.session_id] is None
    assert commands[world.second.session_id] is None
    assert "claude --resume" in commands[world.live.session_id]
    assert world.first.session_id not in world.run("list").stdout


def test_resolve_says_how_to_get_it_back(world: Archived) -> None:
    result = world.run("resolve", world.first.session_id, "--include-archived")
    assert result.exit_code == 0, result.output
    assert "claude --resume" not in result.stdout
    assert f"run `sessiondex restore {world.first.session_id}` first" in result.stdout
    obj = one_session(
        world.run("resolve", world.first.session_id, "--include-archived", "--json").stdout
    )
    assert obj["resume_command"] is None


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_resume_of_an_archived_session_points_to_restore(
    world: Archived, dry_run: list[str]
) -> None:
    result = world.run("resume", "Zebra migration", *dry_run)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "archived in " in result.stderr
    assert f"run `sessiondex restore {world.first.session_id}` first" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_show_reads_an_archived_session_from_its_archive(
    world: Archived, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    hint = world.run("show", world.first.session_id)
    assert hint.exit_code == 1 and "add --include-archived to read it" in hint.stderr
    # resolve said "No session matches" where show says why and what to do
    said = world.run("resolve", world.first.session_id)
    assert said.exit_code == 1 and "add --include-archived to resolve it" in said.stderr
    result = world.run("show", world.first.session_id, "--include-archived", "--subagents")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "plan the zebra migration" in text and "survey the zebra tables" in text
    assert f"archived: {world.archive_dir}" in text
    assert f"sessiondex restore {world.first.session_id}" in text
    as_json = world.run("show", world.first.session_id, "--include-archived", "--format", "json")
    chain = [r["uuid"] for r in world.first.records if r.get("type") in ("user", "assistant")]
    assert [m["uuid"] for m in json.loads(as_json.stdout)] == chain
    exported = world.run("export", "Zebra migration", "--include-archived", "-o", "-")
    assert exported.exit_code == 0 and "# Zebra migration" in exported.stdout
    assert not list(tmp_path.iterdir())  # the unpacked copy is gone


def test_an_archived_session_is_read_by_its_archive_path(
    world: Archived, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An archived session's ``file_path`` is its archive, and the picker's preview and
    rename ask the index for the session by it: that was "No session matches"."""
    import tempfile

    from sessiondex import Index

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    listed = world.run("list", "--include-archived", "--json")
    (archived,) = [
        o for o in json.loads(listed.stdout) if o["session_id"] == world.first.session_id
    ]
    assert archived["file_path"].endswith(".tar.gz")
    with Index(world.db, [world.tree.root], refresh=False) as index:
        conv = index.conversation(archived["file_path"], include_archived=True)
        shown = json.dumps([str(i) for i in conv.items])  # read while the index is open
        found = index.resolve(archived["file_path"], include_archived=True)
    assert "plan the zebra migration" in shown
    assert found.session["session_id"] == world.first.session_id
    result = world.run("show", archived["file_path"], "--include-archived")
    assert result.exit_code == 0 and "plan the zebra migration" in result.stdout


def test_the_library_and_the_mcp_server_say_a_session_is_archived(world: Archived) -> None:
    """What only an archived session matches is not "no conversation found": the library's
    NotFound names the archived session, and the MCP tools say how to get it back (they
    had said it does not exist, where the CLI says it is archived)."""
    from sessiondex.index import Index
    from sessiondex.mcp_server.service import SessionService, Settings, UserError
    from sessiondex.query.resolve import NotFound

    with Index(world.db, [world.tree.root]) as index:
        with pytest.raises(NotFound) as raised:
            index.resolve(world.first.session_id, cwd=CWD)
        assert raised.value.archived is not None
        assert raised.value.archived["session_id"] == world.first.session_id
        with pytest.raises(NotFound) as missing:
            index.resolve("00000000-0000-4000-8000-000000000000", cwd=CWD)
        assert missing.value.archived is None
        served = SessionService(lambda: index, Settings(cwd=CWD, max_chars=20_000))
        for call in (served.resolve_session, served.read_session):
            with pytest.raises(UserError) as said:
                call(world.first.session_id)
            message = str(said.value)
            assert "is archived (" in message and str(world.archive_dir) in message
            assert f"`sessiondex restore {world.first.session_id}`" in message


@pytest.mark.parametrize("how", ["id-prefix", "name", "id"])
def test_a_transcript_the_sweep_just_deleted_is_said_archived_the_first_time_too(
    tmp_path: Path, how: str
) -> None:
    """New user, helper 305: archived by `archive`, then deleted by Claude Code's sweep;
    the first `--no-refresh show 6b0d549b` after that said "No session matches", the next
    one "is archived: add --include-archived". The lookup found the live row, saw its
    transcript gone and asked again, outside the step that looks in the archives."""
    from sessiondex import Index
    from sessiondex.query.resolve import NotFound

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("plan the okapi migration")
    s.assistant("sure")
    s.meta("custom-title", customTitle="Okapi migration")
    s.write(mtime=time.time() - 60 * 86400)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    archived = CliRunner().invoke(cli, [*base, "archive", "--to", str(tmp_path / "archive")])
    assert archived.exit_code == 0, archived.output
    s.path.unlink()  # the sweep
    arg = {"id-prefix": s.session_id[:8], "name": "Okapi migration", "id": s.session_id}[how]
    said = CliRunner().invoke(cli, [*base, "--no-refresh", "show", arg, "--cwd", CWD])
    assert said.exit_code == 1
    assert "add --include-archived to read it" in said.stderr, said.stderr
    s.write(mtime=time.time() - 60 * 86400)
    Index(tmp_path / "i.db", tree.root).refresh()
    s.path.unlink()
    with Index(tmp_path / "i.db", tree.root, refresh=False) as index:
        with pytest.raises(NotFound) as raised:
            index.resolve(arg, cwd=CWD)
    assert raised.value.archived is not None
    assert raised.value.archived["session_id"] == s.session_id


@pytest.mark.parametrize(
    "command",
    [["rename", "{arg}", "new name"], ["tag", "{arg}", "keep"], ["untag", "{arg}"]]
    + [["fork", "{arg}"], ["delete", "{arg}", "--yes"]],
    ids=["rename", "tag", "untag", "fork", "delete"],
)
@pytest.mark.parametrize("by", ["id", "prefix", "name"])
def test_a_write_to_an_archived_session_says_it_is_archived(
    world: Archived, command: list[str], by: str
) -> None:
    """New user, helper 305: `tag 907a70c3 keep` after the sweep said "No session
    matches '907a70c3'" while `list --include-archived` showed 907a70c3 and `show` said
    it is archived. A write names the archive and `restore`, and writes nothing."""
    arg = {
        "id": world.first.session_id,
        "prefix": world.first.session_id[:8],
        "name": "Zebra migration",
    }[by]
    before = sorted((p.name, p.stat().st_mtime_ns) for p in world.archive_dir.rglob("*"))
    result = world.run(*[part.replace("{arg}", arg) for part in command])
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"session {world.first.session_id} is archived in {world.archive_dir}" in result.stderr
    assert f"`sessiondex restore {world.first.session_id}`" in result.stderr
    assert sorted((p.name, p.stat().st_mtime_ns) for p in world.archive_dir.rglob("*")) == before


def test_the_librarys_and_the_mcp_servers_writes_name_an_archived_session(
    world: Archived,
) -> None:
    """The same for ``Index.rename``/``tag``/``untag``/``fork``/``delete`` and the MCP
    write tools: their "not found" names the archived session and ``restore``."""
    from sessiondex.index import Index
    from sessiondex.mcp_server.service import SessionService, Settings, UserError
    from sessiondex.query.resolve import NotFound

    sid = world.first.session_id
    with Index(world.db, [world.tree.root]) as index:
        writes = [
            lambda: index.rename(sid[:8], "x", cwd=CWD),
            lambda: index.tag("Zebra migration", "x", cwd=CWD),
            lambda: index.untag(sid, cwd=CWD),
            lambda: index.fork(sid, cwd=CWD),
            lambda: index.delete(sid, cwd=CWD),
        ]
        for write in writes:
            with pytest.raises(NotFound) as raised:
                write()
            assert raised.value.archived is not None
            assert raised.value.archived["session_id"] == sid
        served = SessionService(
            lambda: index, Settings(cwd=CWD, max_chars=20_000, allow_writes=True)
        )
        for call in (
            lambda: served.rename_session(sid, "x"),
            lambda: served.tag_session(sid, "x"),
        ):
            with pytest.raises(UserError) as said:
                call()
            assert "is archived (" in str(said.value) and f"`sessiondex restore {sid}`" in str(
                said.value
            )
