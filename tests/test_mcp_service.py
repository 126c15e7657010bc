"""The MCP tools' answers in-process (no protocol): the size cap, paging, cut markers,
message UUIDs of merged turns, and the --http address rule."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")


from sessiondex import Index  # noqa: E402
from sessiondex.mcp_server.server import parse_loopback  # noqa: E402
from sessiondex.mcp_server.service import SessionService, Settings, UserError, cut  # noqa: E402
from tests.builders import ConfigTree, copy_fixtures  # noqa: E402

CWD = "/tmp/sessiondex-mcp-tests/repo"
NEXT_RE = re.compile(r"offset=(\d+)\]$", re.M)
UUID_RE = re.compile(r"· uuid ([0-9a-f-]+)$", re.M)


@pytest.fixture()
def fixture_index(tmp_path: Path) -> Iterator[Index]:
    with Index(tmp_path / "index.db", [copy_fixtures(tmp_path)]) as index:
        yield index


def service(index: Index, max_chars: int = 20_000, cwd: str = "/home/dev/shop") -> SessionService:
    return SessionService(lambda: index, Settings(cwd=cwd, max_chars=max_chars))


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 10, "short"),
        ("x" * 100, 100, "x" * 100),
        ("x" * 200, 60, "x" * 31 + " [… cut: 169 more characters]"),
        ("y" * 5000, 100, "y" * 70 + " [… cut: 4930 more characters]"),
    ],
)
def test_cut_says_how_much_was_left_out(text: str, limit: int, expected: str) -> None:
    assert cut(text, limit) == expected and len(cut(text, limit)) <= limit


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", 8765)),
        ("localhost:1", ("localhost", 1)),
        ("[::1]:9000", ("::1", 9000)),
        ("127.0.0.2:80", ("127.0.0.2", 80)),
    ],
)
def test_loopback_addresses_are_accepted(value: str, expected: tuple[str, int]) -> None:
    assert parse_loopback(value) == expected


def test_listings_stay_under_the_cap_and_say_what_was_left_out(fixture_index: Index) -> None:
    small = service(fixture_index, max_chars=2_000)
    answer = small.list_sessions(scope="all", limit=50)
    assert len(answer) <= 2_000
    parsed = json.loads(answer)
    everything = fixture_index.list(scope="all", limit=50)
    shown = [s["session_id"] for s in parsed["sessions"]]
    assert 0 < len(shown) < len(everything)
    assert shown == [s["session_id"] for s in everything[: len(shown)]]
    assert parsed["truncated"].startswith(f"{len(everything) - len(shown)} of {len(everything)}")


def test_read_session_pages_cover_every_turn_once_and_cut_long_messages(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    expected: list[str] = []
    for number in range(30):
        expected.append(
            session.user(f"question {number} " + "why " * (2_000 if number == 7 else 5))
        )
        expected.append(session.assistant(f"answer {number}").uuids[0])
    session.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        small = service(index, max_chars=3_000, cwd=CWD)
        seen: list[str] = []
        offset, pages = 0, 0
        while pages < 100:
            pages += 1
            page = small.read_session(session.session_id, offset=offset, limit=40)
            assert len(page) <= 3_000
            seen += UUID_RE.findall(page)
            more = NEXT_RE.search(page)
            if more is None:
                break
            offset = int(more.group(1))
        assert seen == expected and pages > 2
        long_turn = small.read_session(session.session_id, offset=14, limit=1)
        assert "question 7" in long_turn and "[… cut:" in long_turn
        assert len(long_turn) <= 3_000
        past_the_end = small.read_session(session.session_id, offset=500)
        assert "none at offset 500; the session has 60 turns" in past_the_end


def test_around_message_finds_a_merged_assistant_line(tmp_path: Path) -> None:
    """A search hit names a transcript entry; one response written as several lines is
    one turn, shown under its first line's UUID: a later line still finds it."""
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    for number in range(20):
        session.user(f"step {number}")
        turn = session.assistant(f"doing {number}", tool_uses=[("Bash", {"command": "make"})])
        session.tool_result(turn.tool_use_ids[0], "ok")
        if number == 12:
            target = turn
    session.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        answers = service(index, cwd=CWD)
        page = answers.read_session(session.session_id, around_message=target.uuids[-1], limit=4)
        assert UUID_RE.findall(page)[2] == target.uuids[0]
        assert "doing 12" in page and "centred on message" in page
        with_tools = answers.read_session(
            session.session_id, around_message=target.uuids[-1], limit=4, include_tools=True
        )
        assert '[tool call Bash] { "command": "make" }' in with_tools


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda s: s.search_sessions(" \t "), "query is empty"),
        (lambda s: s.sessions_for_pr(" "), "pr is empty"),
        (lambda s: s.read_session("\x00"), "NUL"),
        (lambda s: s.list_sessions(cwd="not/absolute"), "absolute"),
        (lambda s: s.resolve_session("../../etc/passwd.jsonl"), "refusing"),
    ],
)
def test_bad_input_is_one_sentence(fixture_index: Index, call, says: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UserError, match=re.escape(says)):
        call(service(fixture_index))


def test_a_name_with_a_slash_is_a_name_not_a_path(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    session.user("plan the login work")
    session.meta("custom-title", customTitle="feat/login: plan")
    session.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        found = json.loads(service(index, cwd=CWD).resolve_session("feat/login: plan"))
    assert (found["status"], found["session"]["session_id"]) == ("found", session.session_id)
