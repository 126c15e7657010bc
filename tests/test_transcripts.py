"""Discovery, record views and the first-prompt rule (one implementation, one table)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils
from click.testing import CliRunner

import sessiondex
from sessiondex.cli.main import cli
from sessiondex.indexer.shape import FTS_TABLES
from sessiondex.transcripts.discover import (
    MAIN,
    MAIN_WITH_FOLDER,
    SUBAGENT,
    describe_path,
    iter_found,
    iter_stats,
    iter_transcripts,
)
from sessiondex.transcripts.records import FirstPromptState, display_prompt, is_real_user_message
from tests.builders import copy_fixtures

SID = "0f8b7c1e-2d3a-4b5c-8d9e-0a1b2c3d4e5f"


def _touch(path: Path, data: bytes = b"{}\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _by_transcripts(root: Path) -> set[tuple[str, str, str, str | None]]:
    return {(str(tf.path), tf.kind, tf.session_id, tf.agent_id) for tf in iter_transcripts(root)}


def _by_found(root: Path) -> set[tuple[str, str, str, str | None]]:
    return {(f.path, f.kind, f.session_id, f.agent_id) for f in iter_found(root)}


def _by_stats(root: Path) -> set[tuple[str, str, str, str | None]]:
    """The check before a reading command's walk (unsorted, no objects): the same files."""
    out = set()
    for path, sid, kind, agent, st in iter_stats(root):
        assert st.st_size == os.lstat(path).st_size
        out.add((path, MAIN if kind == MAIN_WITH_FOLDER else kind, sid, agent))
    return out


@pytest.mark.parametrize("walk", [_by_transcripts, _by_found, _by_stats])
def test_discovery_keeps_uuid_stems_and_subagents_only(tmp_path: Path, walk) -> None:
    root = tmp_path / "claude"
    project = root / "projects" / "-w"
    main = _touch(project / f"{SID}.jsonl")
    upper = _touch(project / f"{SID.upper()}.jsonl")
    _touch(project / "agent-abc.jsonl")
    _touch(project / f"{SID}.jsonl.orphaned-1")
    _touch(project / f"{SID}.jsonl.superseded-2")
    _touch(project / "notes.jsonl")
    (project / "a1b2c3d4-0000-4000-8000-000000000000.jsonl").mkdir()  # a directory
    outside = _touch(tmp_path / "secret.jsonl")
    (project / "11111111-0000-4000-8000-000000000000.jsonl").symlink_to(outside)
    flat = _touch(project / SID / "subagents" / "agent-flat.jsonl")
    nested = _touch(project / SID / "subagents" / "workflows" / "run1" / "agent-deep.jsonl")
    _touch(project / SID / "subagents" / "notes.jsonl")
    _touch(project / SID / "tool-results" / "x.txt")
    # a session whose <id>/ is a link, one whose subagents/ is: never followed
    linked = "22222222-0000-4000-8000-000000000000"
    linked_main = _touch(project / f"{linked}.jsonl")
    _touch(tmp_path / "elsewhere" / "subagents" / "agent-out.jsonl")
    (project / linked).symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    linked_sub = "33333333-0000-4000-8000-000000000000"
    linked_sub_main = _touch(project / f"{linked_sub}.jsonl")
    (project / linked_sub).mkdir()
    (project / linked_sub / "subagents").symlink_to(
        tmp_path / "elsewhere" / "subagents", target_is_directory=True
    )
    # a name that is no UTF-8, at both levels
    _touch(Path(os.fsdecode(os.path.join(os.fsencode(project), b"\xff" + b"a" * 35 + b".jsonl"))))
    _touch(Path(os.fsdecode(os.fsencode(project / SID / "subagents") + b"/agent-\xff.jsonl")))
    assert walk(root) == {
        (str(main), MAIN, SID, None),
        (str(upper), MAIN, SID.upper(), None),
        (str(flat), SUBAGENT, SID, "flat"),
        (str(nested), SUBAGENT, SID, "deep"),
        (str(linked_main), MAIN, linked, None),
        (str(linked_sub_main), MAIN, linked_sub, None),
    }


@pytest.mark.parametrize(
    ("relative", "kind"),
    [
        (f"projects/-w/{SID}.jsonl", MAIN),
        (f"projects/-w/{SID}/subagents/agent-x.jsonl", SUBAGENT),
        (f"projects/-w/{SID}/subagents/a/b/agent-y.jsonl", SUBAGENT),
        ("projects/-w/notes.jsonl", None),
        (f"projects/{SID}.jsonl", None),
        (f"projects/-w/../-w/{SID}.jsonl", None),
        (f"other/-w/{SID}.jsonl", None),
    ],
)
def test_describe_path_places_only_transcripts(
    tmp_path: Path, relative: str, kind: str | None
) -> None:
    root = tmp_path / "claude"
    target = root / relative
    if ".." not in relative:
        _touch(target)
    described = describe_path(target, [root])
    assert (described.kind if described else None) == kind


def test_describe_path_refuses_a_symlinked_project_dir(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    real = tmp_path / "elsewhere"
    _touch(real / f"{SID}.jsonl")
    (root / "projects").mkdir(parents=True)
    os.symlink(real, root / "projects" / "-w")
    assert describe_path(root / "projects" / "-w" / f"{SID}.jsonl", [root]) is None


def _user(content, **extra) -> dict:
    return {"type": "user", "message": {"role": "user", "content": content}, **extra}


TOOL_RESULT = [{"type": "tool_result", "tool_use_id": "t", "content": "out"}]


@pytest.mark.parametrize(
    ("records", "prompt", "command"),
    [
        ([_user("hello world")], "hello world", None),
        ([_user("line one\nline two")], "line one line two", None),
        ([_user("x", isMeta=True), _user("real")], "real", None),
        ([_user(TOOL_RESULT), _user("after tool")], "after tool", None),
        ([_user("sum", isCompactSummary=True), _user("next")], "next", None),
        ([_user("<local-command-stdout>ok</local-command-stdout>"), _user("p")], "p", None),
        ([_user("<session-start-hook>h"), _user("p")], "p", None),
        ([_user("<tick>"), _user("<goal>g"), _user("p")], "p", None),
        ([_user("[Request interrupted by user]"), _user("p")], "p", None),
        ([_user("<ide_opened_file>a.py</ide_opened_file>"), _user("p")], "p", None),
        ([_user("<ide_selection>x = 1</ide_selection>"), _user("p")], "p", None),
        (
            [_user("<ide_selection>x = 1</ide_selection> why?")],
            "<ide_selection>x = 1</ide_selection> why?",
            None,
        ),
        (
            [_user("<ide_opened_file>a.py</ide_opened_file> and fix it")],
            "<ide_opened_file>a.py</ide_opened_file> and fix it",
            None,
        ),
        ([_user("<command-name>/init</command-name>")], None, "/init"),
        ([_user("<command-name>/init</command-name>"), _user("then this")], "then this", "/init"),
        # An empty name is no command: the first real one is still the fallback (the SDK
        # tests `if not command_fallback`; helper 121).
        (
            [_user("<command-name></command-name>"), _user("<command-name>/review</command-name>")],
            None,
            "/review",
        ),
        (
            [
                _user("<command-name> </command-name>"),
                _user("<command-name>/review</command-name>"),
            ],
            None,
            "/review",
        ),
        (
            [_user([{"type": "text", "text": "  "}, {"type": "text", "text": "block"}])],
            "block",
            None,
        ),
        ([_user(5), _user({"bad": 1}), {"type": "user", "message": "x"}, _user("ok")], "ok", None),
        ([{"type": "assistant", "message": {"content": "no"}}, _user("yes")], "yes", None),
    ],
)
def test_first_prompt_table(records: list[dict], prompt: str | None, command: str | None) -> None:
    state = FirstPromptState()
    for record in records:
        state.feed(record)
    assert state.prompt == prompt
    assert state.command_fallback == command
    assert state.result == (prompt if prompt is not None else command)


def test_first_command_is_the_first_real_messages() -> None:
    state = FirstPromptState()
    for record in (
        _user("x", isMeta=True),
        _user("<command-name>/loop</command-name><command-args>5m</command-args>"),
        _user("later"),
    ):
        state.feed(record)
    assert state.first_command == "/loop"
    assert state.prompt == "later"


def test_display_prompt_cuts_at_200_code_points() -> None:
    text = "é" * 199 + " " + "x" * 10
    shown = display_prompt(text)
    assert shown == "é" * 199 + "…"
    assert display_prompt("short") == "short"


@pytest.mark.parametrize(
    ("record", "real"),
    [
        (_user("a"), True),
        (_user("a", isMeta=True), False),
        (_user(TOOL_RESULT), False),
        (_user("a", isCompactSummary=True), False),
        ({"type": "assistant"}, False),
    ],
)
def test_real_user_message(record: dict, real: bool) -> None:
    assert is_real_user_message(record) is real


def test_fixture_index_opens_in_sqlite_utils_with_fts(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path)
    db_path = tmp_path / "i.db"
    result = CliRunner().invoke(
        cli, ["--config-dir", str(root), "--db", str(db_path), "index", "--json"]
    )
    summary = json.loads(result.stdout)
    assert summary["sessions"] == 23 and summary["bad_lines"] == 1
    db = sqlite_utils.Database(db_path)
    assert set(db.table_names(fts5=True)) == set(FTS_TABLES)
    # Message text is stored compressed, and the searchable session metadata is a view
    # of ``sessions``: a connection of one's own reads them (message_text,
    # session_search, snippet()) once sessiondex.prepare_connection gave it the functions.
    with pytest.raises(sqlite3.OperationalError, match="no such function: sessiondex_text"):
        db.execute("SELECT text FROM message_text").fetchall()
    with pytest.raises(sqlite3.OperationalError, match="no such function: sessiondex_fts"):
        db.execute("SELECT custom_title FROM session_search").fetchall()
    sessiondex.prepare_connection(db.conn)
    titles = db.execute(
        "SELECT s.custom_title FROM session_search_fts f JOIN session_search s"
        " ON s.id = f.rowid WHERE session_search_fts MATCH 'custom_title:' || ?",
        ["refactor"],
    ).fetchall()
    assert sorted(titles) == [("Auth refactor",), ("Auth refactor (fork)",)]
    hits = db.execute(
        "SELECT t.text, snippet(messages_fts, 0, '[', ']', '…', 8) FROM messages_fts"
        " JOIN message_text t ON t.id = messages_fts.rowid WHERE messages_fts MATCH ?",
        ["ошибку"],
    ).fetchall()
    assert hits and "ошибку" in hits[0][0] and "[ошибку]" in hits[0][1]


def test_forks_are_listed_by_their_own_activity(tmp_path: Path) -> None:
    """Newest activity first for every row: the fixtures' fork (used after its origin's
    newer neighbours) is not moved under its origin."""
    root = copy_fixtures(tmp_path)
    result = CliRunner().invoke(
        cli,
        [
            "--config-dir",
            str(root),
            "--db",
            str(tmp_path / "i.db"),
            "list",
            "--scope",
            "all",
            "--json",
        ],
    )
    rows = json.loads(result.stdout)
    activity = [(r["last_activity"] or r["mtime"], r["mtime"]) for r in rows]
    assert activity == sorted(activity, reverse=True)
    position = {r["session_id"]: i for i, r in enumerate(rows)}
    forks = [r for r in rows if r["forked_from"]]
    assert forks
    assert any(
        position[f["session_id"]] != position[f["forked_from"]["session_id"]] + 1 for f in forks
    )
