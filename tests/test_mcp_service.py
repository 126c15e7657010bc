"""The MCP tools' answers in-process (no protocol): the size cap, paging, cut markers,
message UUIDs of merged turns, the --http address rule, and the dirty bit that lets an
answer skip the freshness check (``indexer/dirty.py``)."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from watchdog.events import (
    DirAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileClosedNoWriteEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileOpenedEvent,
    FileSystemEvent,
)
from watchdog.observers.api import BaseObserver

pytest.importorskip("mcp", reason="the mcp extra is not installed")


import sessiondex.indexer.watch as watch_module  # noqa: E402
from sessiondex import Index  # noqa: E402
from sessiondex.indexer.dirty import MAX_WRITTEN, DirtyBit, _Handler  # noqa: E402
from sessiondex.mcp_server.server import parse_loopback  # noqa: E402
from sessiondex.mcp_server.service import SessionService, Settings, UserError, cut  # noqa: E402
from tests.builders import ConfigTree, SessionWriter, copy_fixtures  # noqa: E402
from tests.test_watch import START_ERRORS, UNRELIABLE, count_observers  # noqa: E402
from tests.test_watch import _delays as _waits  # noqa: E402

CWD = "/tmp/sessiondex-mcp-tests/repo"
NEXT_RE = re.compile(r"offset=(\d+) limit=\d+(?: include_tools=true)?\]$", re.M)
MORE_RE = re.compile(r"^\[more: call read_session with (.+)\]$", re.M)
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


@pytest.mark.parametrize("include_tools", [True, False])
def test_the_next_page_line_carries_every_argument_the_page_used(
    tmp_path: Path, include_tools: bool
) -> None:
    """Turns are numbered with or without the tool turns: the next-page line said only
    ``offset``, and a model that followed it as written, without include_tools, skipped
    turns (24 steps of 1,000 at offset 1,000; helper 130)."""
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    for number in range(15):
        session.user(f"step {number}")
        turn = session.assistant(f"doing {number}", tool_uses=[("Bash", {"command": "make"})])
        session.tool_result(turn.tool_use_ids[0], "ok")
        session.assistant(f"done {number}")
    session.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        answers = service(index, cwd=CWD)
        whole = answers.read_session(session.session_id, limit=200, include_tools=include_tools)
        expected = UUID_RE.findall(whole)
        seen: list[str] = []
        arguments: dict[str, Any] = {"ref": session.session_id, "limit": 4}
        if include_tools:
            arguments["include_tools"] = True
        for _ in range(60):
            page = answers.read_session(**arguments)
            seen += UUID_RE.findall(page)
            more = MORE_RE.search(page)
            if more is None:
                break
            # The line as a model reads it: nothing but what it says.
            arguments = dict(pair.split("=", 1) for pair in more.group(1).split())
            arguments = {
                k: (
                    int(v)
                    if k in ("offset", "limit")
                    else v == "true"
                    if v in ("true", "false")
                    else v
                )
                for k, v in arguments.items()
            }
        assert seen == expected and len(expected) > 20


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
        # NUL in any text: the team store cannot take it; refused alike on both
        (lambda s: s.search_sessions("coupon\x00x"), "query cannot contain a NUL"),
        (lambda s: s.search_sessions("coupon", branch="\x00"), "branch cannot contain a NUL"),
        (lambda s: s.list_sessions(branch="ma\x00in"), "branch cannot contain a NUL"),
        # blank, as the CLI's --branch " " (a usage error there): said, not "no session"
        (lambda s: s.list_sessions(branch=" "), "branch is empty"),
        (lambda s: s.list_sessions(branch="\t\n"), "branch is empty"),
        (lambda s: s.search_sessions("coupon", branch=" "), "branch is empty"),
        (lambda s: s.list_sessions(since="  "), "since is empty"),
        (lambda s: s.sessions_for_pr("12\x00"), "pr cannot contain a NUL"),
        (lambda s: s.tag_session("4045e6f8", "a\x00b"), "tag cannot contain a NUL"),
        # nothing visible: cleared with "" here, there is no untag tool to point to
        (lambda s: s.tag_session("4045e6f8", "\u200b\u202e"), 'give tag "" to clear'),
        (lambda s: s.rename_session("4045e6f8", "a\x00b"), "name cannot contain a NUL"),
        # a number SQLite cannot hold is no PR number (it was an internal OverflowError)
        (lambda s: s.sessions_for_pr("99999999999999999999999999"), "not a PR number"),
        # the ref is quoted as given ("..": it used to come back as ".")
        (lambda s: s.read_session("v1..v2 release notes"), "'v1..v2 release notes'"),
        # another project's ID prefix: the advice is the tool's argument, not a shell's
        # "run the command from its directory", which a model cannot do (helper 130)
        (lambda s: s.read_session("12a0e588"), "give its whole ID, or pass its directory as cwd"),
        # blank: "message  is not on the live branch of session …", a UUID of nothing
        (
            lambda s: s.read_session("4045e6f8", around_message=" \t"),
            "around_message is empty: leave it out",
        ),
    ],
)
def test_bad_input_is_one_sentence(fixture_index: Index, call, says: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UserError, match=re.escape(says)):
        call(service(fixture_index))


def test_a_near_miss_names_its_suggestions_once(fixture_index: Index) -> None:
    """'Did you mean: Auth refactor?. Closest titles: Auth refactor.' said it twice."""
    with pytest.raises(UserError) as raised:
        service(fixture_index).read_session("Auth refactr")
    message = str(raised.value)
    assert message.endswith("?") and "Closest titles" not in message, message


def test_a_name_with_a_slash_is_a_name_not_a_path(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    session.user("plan the login work")
    session.meta("custom-title", customTitle="feat/login: plan")
    session.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        found = json.loads(service(index, cwd=CWD).resolve_session("feat/login: plan"))
    assert (found["status"], found["session"]["session_id"]) == ("found", session.session_id)


# ----------------------------------------------------------------- the dirty bit
# The server's own watcher (indexer/dirty.py): events only set a bit; a set bit makes the
# next answer check the transcripts. Events arrive on watchdog's threads, so a change is
# awaited with a bounded deadline; nothing here asserts a duration.
DEADLINE = 10.0


def eventually(check: Callable[[], bool]) -> bool:
    """``check()`` turned true within DEADLINE seconds (polled every 10 ms)."""
    deadline = time.monotonic() + DEADLINE
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture()
def watched(tmp_path: Path) -> Iterator[tuple[ConfigTree, SessionWriter, DirtyBit]]:
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    session.user("first words")
    session.write()
    bit = DirtyBit([tree.root])
    assert bit.start()
    try:
        yield tree, session, bit
    finally:
        bit.stop()


def _append(tree: ConfigTree, session: SessionWriter) -> None:
    session.user("more words")
    session.append()


def _new_project(tree: ConfigTree, session: SessionWriter) -> None:
    other = tree.session(cwd="/tmp/sessiondex-mcp-tests/other")
    other.user("a new session in a new project dir")
    other.write()


def _rename(tree: ConfigTree, session: SessionWriter) -> None:
    session.path.rename(session.path.with_name("00000000-0000-4000-8000-000000000001.jsonl"))


def _subagent(tree: ConfigTree, session: SessionWriter) -> None:
    agent = session.subagent(agent_id="a1", tool_use_id="toolu_01")
    agent.user("subagent task")
    agent.write()


# watchdog warns when a new dir's subdir is added twice (`mkdir -p a/b` races its own
# recursive walk); harmless, and not ours to fix.
@pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")
@pytest.mark.parametrize(
    ("change", "alone"),
    [
        (_append, True),
        (lambda tree, session: os.utime(session.path, (1, 1)), True),
        (_new_project, False),
        (lambda tree, session: session.path.unlink(), False),
        (_rename, False),
        (lambda tree, session: shutil.rmtree(session.path.parent), False),
        (_subagent, False),
    ],
    ids=["append", "touch", "new-project", "delete", "rename", "project-dir-removed", "subagent"],
)
def test_every_change_to_a_transcript_sets_the_bit(
    watched: tuple[ConfigTree, SessionWriter, DirtyBit],
    change: Callable[[ConfigTree, SessionWriter], None],
    alone: bool,
) -> None:
    """``alone``: the file can be ingested on its own (take() names it); otherwise the
    first event of the change already asks for the whole check."""
    tree, session, bit = watched
    assert not bit.clean()  # the bit starts set: the first answer checks
    bit.take()
    assert bit.clean()
    path = str(session.path)
    change(tree, session)
    assert eventually(lambda: not bit.clean())
    # cleared until the next event (a change of several events may still be arriving)
    assert bit.take() == ([path] if alone else None)


T = "/c/projects/k/s.jsonl"


@pytest.mark.parametrize(
    ("event", "then"),
    [
        # written to: the next look may ingest just that file
        (FileModifiedEvent(T), [T]),
        (FileAttribEvent(T), [T]),
        # anything else: the whole check
        (FileCreatedEvent(T), None),
        (FileDeletedEvent(T), None),
        (FileMovedEvent("/c/projects/k/s.tmp", T), None),
        (DirCreatedEvent("/c/projects/k"), None),
        (DirDeletedEvent("/c/projects/k"), None),
        (DirMovedEvent("/c/projects/k", "/c/projects/j"), None),
        (DirAttribEvent("/c/projects/k"), None),  # a chmod: what it holds may show now
        # not a change: a reader (the refresh itself, read_session) opens and closes
        # transcripts; "closed" follows a "modified"; other files are not transcripts
        (FileOpenedEvent(T), "clean"),
        (FileClosedNoWriteEvent(T), "clean"),
        (FileClosedEvent(T), "clean"),
        (FileModifiedEvent("/c/projects/k/s/subagents/agent-a1.meta.json"), "clean"),
        (FileCreatedEvent("/c/projects/k/notes.txt"), "clean"),
        (DirModifiedEvent("/c/projects/k"), "clean"),  # its mtime: the file event says more
    ],
)
def test_only_events_watch_would_act_on_set_the_bit(
    watched: tuple[ConfigTree, SessionWriter, DirtyBit],
    event: FileSystemEvent,
    then: list[str] | str | None,
) -> None:
    _tree, _session, bit = watched
    assert bit.take() is None  # the first look is always the whole check
    _Handler(bit, "/c/projects", "/c/projects").on_any_event(event)  # as the observer calls it
    assert bit.clean() is (then == "clean")
    assert bit.take() == ([] if then == "clean" else then)
    assert bit.clean()


@pytest.mark.parametrize(
    ("watched_dir", "configured", "event_path", "named"),
    [
        ("/c/projects", "/c/projects", "/c/projects/k/s.jsonl", "/c/projects/k/s.jsonl"),
        # ~/.claude -> /data/claude: the watch is on the real dir, the index has ~/.claude
        (
            "/data/claude/projects",
            "/h/.claude/projects",
            "/data/claude/projects/k/s.jsonl",
            "/h/.claude/projects/k/s.jsonl",
        ),
        (
            "/data/p",
            "/h/.claude/projects",
            "/data/p/k/s/subagents/agent-a.jsonl",
            "/h/.claude/projects/k/s/subagents/agent-a.jsonl",
        ),
    ],
)
def test_written_files_are_named_under_the_configured_projects_dir(
    watched: tuple[ConfigTree, SessionWriter, DirtyBit],
    watched_dir: str,
    configured: str,
    event_path: str,
    named: str,
) -> None:
    _tree, _session, bit = watched
    bit.take()
    _Handler(bit, watched_dir, configured).on_any_event(FileModifiedEvent(event_path))
    assert bit.take() == [named]


def test_many_written_files_or_a_due_rescan_ask_for_the_whole_check(
    watched: tuple[ConfigTree, SessionWriter, DirtyBit],
) -> None:
    _tree, _session, bit = watched
    bit.take()
    paths = [f"/c/projects/k/{n}.jsonl" for n in range(MAX_WRITTEN + 1)]
    bit.written(paths[:MAX_WRITTEN])
    assert bit.take() == sorted(paths[:MAX_WRITTEN])
    bit.written(paths)
    assert bit.take() is None
    bit.written(paths[:1])
    bit.mark()
    assert bit.take() is None
    bit.rescan_interval = 0.0
    bit.take()
    bit.written(paths[:1])
    assert bit.take() is None


def test_a_projects_dir_created_or_replaced_after_start_is_seen_and_watched(
    tmp_path: Path,
) -> None:
    """No event announces it (nothing watched it yet, or the watch follows the old inode):
    the stat in clean() does, on the very next call, and take() watches the new dir."""
    root = tmp_path / "claude"
    root.mkdir()
    bit = DirtyBit([root])
    heard: list[str] = []  # what the handler reported as written, whatever take() merged
    real_written = bit.written
    bit.written = lambda paths: (heard.extend(paths), real_written(paths))[1]  # type: ignore[method-assign]
    assert bit.start()
    try:
        bit.take()
        assert bit.clean()  # no projects/ yet: no transcript can have changed
        tree = ConfigTree(root)  # creates projects/
        session = tree.session(cwd=CWD)
        session.user("first words")
        session.write()
        assert not bit.clean()
        assert bit.take() is None  # a dir watched anew: the whole check
        session.user("more words")
        session.append()
        assert eventually(lambda: str(session.path) in heard)

        tree.projects_dir.rename(root / "projects.old")
        session.write()  # the same transcript, in a new projects/ dir
        assert not bit.clean()
        assert bit.take() is None
        heard.clear()
        session.user("even more words")
        session.append()
        assert eventually(lambda: str(session.path) in heard)
    finally:
        bit.stop()


def _no_rescan_period(bit: DirtyBit) -> None:
    bit.rescan_interval = 0.0


@pytest.mark.parametrize(
    ("before_take", "after_take", "clean"),
    [
        (None, None, True),
        (None, DirtyBit.mark, False),  # an event or an overflow after the check
        (_no_rescan_period, None, False),  # the periodic rescan is due at once
        (None, DirtyBit.stop, False),
    ],
    ids=["nothing", "marked", "rescan-due", "stopped"],
)
def test_what_keeps_the_bit_set(
    watched: tuple[ConfigTree, SessionWriter, DirtyBit],
    before_take: Callable[[DirtyBit], None] | None,
    after_take: Callable[[DirtyBit], None] | None,
    clean: bool,
) -> None:
    _tree, _session, bit = watched
    if before_take is not None:
        before_take(bit)
    bit.take()
    if after_take is not None:
        after_take(bit)
    assert bit.clean() is clean


def test_an_observer_that_cannot_start_or_dies_means_checking_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = ConfigTree(tmp_path / "claude")
    said: list[str] = []

    def no_inotify(self: object) -> None:
        raise OSError(28, "inotify watch limit reached")

    with monkeypatch.context() as patched:
        patched.setattr(BaseObserver, "start", no_inotify)
        bit = DirtyBit([tree.root], log=said.append)
        assert not bit.start()
    assert len(said) == 1 and "inotify watch limit reached" in said[0]
    for _ in range(3):
        bit.take()
        assert not bit.clean() and not bit.watching
    assert len(said) == 1

    said.clear()
    bit = DirtyBit([tree.root], log=said.append)
    assert bit.start()
    bit.take()
    assert bit.clean()
    observer = bit._observer
    assert observer is not None
    observer.stop()  # its thread ends behind the bit's back
    observer.join(10)
    for _ in range(3):
        assert not bit.clean()
        bit.take()
    assert not bit.watching and len(said) == 1 and "stopped" in said[0]


def test_a_directory_left_unwatched_means_checking_every_time(tmp_path: Path) -> None:
    """Past the inotify watch limit, watchdog only logs "Unable to watch …" for a new
    directory: the bit said "clean" after appends there, and the MCP server answered
    stale until its periodic rescan (helper 128)."""
    import logging

    tree = ConfigTree(tmp_path / "claude")
    (tree.root / "projects").mkdir(parents=True, exist_ok=True)
    said: list[str] = []
    bit = DirtyBit([tree.root], log=said.append)
    assert bit.start()
    try:
        bit.take()
        assert bit.clean()
        logging.getLogger("watchdog.observers.inotify").warning(
            "Unable to watch %r: %s",
            str(tree.root / "projects" / "-new"),
            OSError(28, "inotify watch limit reached"),
        )
        bit.take()  # the mark the warning set, taken: clean() must still say no
        for _ in range(3):
            assert not bit.clean()
            bit.take()
        assert not bit.watching and len(said) == 1 and "no longer reliable" in said[0]
    finally:
        bit.stop()


def _back_to_events(bit: DirtyBit) -> list[str] | None:
    """take() until one brings the observer back; every take before it asks for the
    whole check and leaves clean() saying no. Returns what the returning take said."""
    taken: list[list[str] | None] = []

    def returned() -> bool:
        result = bit.take()
        if bit.watching:
            taken.append(result)
            return True
        assert result is None and not bit.clean()
        return False

    assert eventually(returned)
    return taken[0]


@pytest.mark.parametrize("what", sorted(UNRELIABLE))
def test_events_given_up_as_unreliable_come_back_and_leaving_again_waits_longer(
    watched: tuple[ConfigTree, SessionWriter, DirtyBit], soon: None, what: str
) -> None:
    """Once events proved unreliable (a directory past the watch limit, an overflow
    storm) the bit gave up on them for the server's life, and every answer checked
    every transcript (~20 ms at 2,000 sessions). They are tried again as ``watch``
    tries them; the take that brings them back asks for the whole check, so an append
    made while nothing watched is not missed, and appends after it are events again."""
    tree, session, bit = watched
    said: list[str] = []
    bit.log = said.append
    for round_no in range(2):
        bit.take()
        assert bit.clean()
        for name, message, args in UNRELIABLE[what]:
            logging.getLogger(name).warning(message, *args)
        assert not bit.clean()
        assert bit.take() is None and not bit.watching and bit.retrying  # given up
        session.user(f"written while nothing watched {round_no}")
        session.append()
        assert _back_to_events(bit) is None  # the gap: the whole check
        assert bit.clean()  # nothing since the take
        _append(tree, session)
        assert eventually(lambda: not bit.clean())
        assert bit.take() == [str(session.path)]
    assert _waits(said) == [0.3, 0.6], said
    assert sum("work again" in n for n in said) == 2, said
    bit.stop()  # the end: no try after it
    assert not bit.retrying and bit.take() is None and not bit.watching


@START_ERRORS
def test_events_unavailable_at_start_are_tried_again_only_for_a_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, soon: None, error: OSError, retried: bool
) -> None:
    """A try that fails changes nothing but the wait (doubled); the server keeps the
    bit while a try is planned, so its answers get cheap once the limit has room."""
    real_start = BaseObserver.start
    failing = {"left": 2}  # the start and the first try again

    def limited(self: BaseObserver) -> None:
        if failing["left"] > 0:
            failing["left"] -= 1
            raise error
        real_start(self)

    monkeypatch.setattr(BaseObserver, "start", limited)
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    session.user("first words")
    session.write()
    said: list[str] = []

    def hits(answers: SessionService, word: str) -> int:
        return int(json.loads(answers.search_sessions(word))["count"])

    with Index(tmp_path / "index.db", [tree.root], notice=said.append) as index:
        assert not index.watch_transcripts()
        bit = index._changes
        if not retried:
            assert bit is None and _waits(said) == [], said
            return
        assert bit is not None and bit.retrying
        answers = service(index, cwd=CWD)
        # each answer's renew() takes the bit, and so makes the tries
        assert eventually(lambda: hits(answers, "first") == 1 and bit.watching)
        assert _waits(said) == [0.3, 0.6], said
        assert sum("still unavailable" in n for n in said) == 1, said
        assert index.watch_transcripts()
        session.user("salak on file events")
        session.append()
        assert eventually(lambda: hits(answers, "salak") == 1)


def test_events_are_not_tried_while_the_tree_outgrows_the_watch_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, soon: None
) -> None:
    """A try would take every watch the user has left for a moment: with more
    directories than the kernel's per-user limit it is not made until that is raised."""
    tree = ConfigTree(tmp_path / "claude")
    for n in range(3):
        other = tree.session(cwd=f"/tmp/sessiondex-mcp-tests/p{n}")
        other.user(f"session {n}")
        other.write()  # projects/ and 3 project dirs: 4 watches
    limit = {"watches": 2}
    monkeypatch.setattr(watch_module, "_inotify_watch_limit", lambda: limit["watches"])
    said: list[str] = []
    bit = DirtyBit([tree.root], log=said.append)
    assert bit.start()
    try:
        for name, message, args in UNRELIABLE["limit"]:
            logging.getLogger(name).warning(message, *args)
        assert bit.take() is None and not bit.watching
        made = count_observers(monkeypatch)
        assert eventually(lambda: bit.take() is None and len(_waits(said)) == 3)
        assert made == [] and not bit.watching
        assert "need 4 watches, more than fs.inotify.max_user_watches (2)" in said[-1], said
        limit["watches"] = 100_000  # raised with sysctl
        assert _back_to_events(bit) is None
        assert len(made) == 1 and bit.clean()
    finally:
        bit.stop()


def test_renew_looks_only_at_what_the_bit_says_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Index.renew with watch_transcripts(): nothing is checked while nothing changed; an
    append is ingested alone (the file the event names); any other change (a new
    transcript) runs the whole check and refresh. Every answer after a change is fresh."""
    from sessiondex.indexer import freshness, refresh

    counts = {"check": 0, "refresh": 0, "ingest": 0}

    def counting(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(freshness, "nothing_changed", counting("check", freshness.nothing_changed))
    monkeypatch.setattr(refresh, "refresh", counting("refresh", refresh.refresh))
    monkeypatch.setattr(refresh, "ingest_path", counting("ingest", refresh.ingest_path))
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    session.user("first words")
    session.write()

    def hits(answers: SessionService, word: str) -> int:
        return int(json.loads(answers.search_sessions(word))["count"])

    with Index(tmp_path / "index.db", [tree.root]) as index:
        answers = service(index, cwd=CWD)
        assert hits(answers, "first") == 1
        assert index._changes is not None and index._changes.watching
        before = dict(counts)
        for _ in range(5):
            assert hits(answers, "first") == 1
        assert counts == before  # nothing changed: nothing looked at

        session.user("zanzibar appears")
        session.append()
        assert eventually(lambda: hits(answers, "zanzibar") == 1)
        assert counts["ingest"] == before["ingest"] + 1
        assert (counts["check"], counts["refresh"]) == (before["check"], before["refresh"])

        other = tree.session(cwd=CWD)
        other.user("quokka session")
        other.write()  # a created file: the whole check, then the refresh
        assert eventually(lambda: hits(answers, "quokka") == 1)
        assert counts["check"] > before["check"] and counts["refresh"] > before["refresh"]
    assert index._changes is None  # close() stopped the observer


def test_renew_checks_every_time_without_the_observer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DirtyBit, "start", lambda self: False)
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    session.user("first words")
    session.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        answers = service(index, cwd=CWD)
        assert json.loads(answers.search_sessions("zanzibar"))["count"] == 0
        assert index._changes is None
        session.user("zanzibar appears")
        session.append()
        # the per-answer check is synchronous: the very next answer has it
        assert json.loads(answers.search_sessions("zanzibar"))["count"] == 1


@pytest.mark.parametrize("observer", [True, False], ids=["dirty-bit", "no-observer"])
def test_an_index_whose_folder_becomes_writable_is_answered_from_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, observer: bool
) -> None:
    """Started where its index's folder could not be written, the server reads the file
    as an immutable one (no -shm can be made). Once the folder can be written (remounted
    read-write, ``chattr -i``), its refreshes write the index again, but every answer
    still came from the immutable handle, which sees no change: nothing appended since
    was ever found, until the server was restarted. Found by helper h603 (serve had
    the same, fixed in web/state.py); the rule is now the Index's."""
    from tests.test_reliability_faults import read_only

    if not observer:
        monkeypatch.setattr(DirtyBit, "start", lambda self: False)
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    session.user("first words")
    session.write()
    base = tmp_path / "cache"
    base.mkdir()
    db = base / "index.db"
    with Index(db, [tree.root]) as builder:
        builder.refresh()
    with read_only(base), Index(db, [tree.root]) as index:
        answers = service(index, cwd=CWD)
        assert json.loads(answers.search_sessions("first"))["count"] == 1
        assert index.read_immutable
    # the same server, the folder writable again (a new Index would not show the bug)
    with Index(db, [tree.root]) as index:
        answers = service(index, cwd=CWD)
        with read_only(base):
            assert json.loads(answers.search_sessions("first"))["count"] == 1
            assert index.read_immutable
        session.user("zanzibar appears")
        session.append()
        assert eventually(lambda: json.loads(answers.search_sessions("zanzibar"))["count"] == 1)
        assert not index.read_immutable


@pytest.mark.parametrize("link", ["config-dir", "projects-dir"])
def test_appends_under_a_linked_config_dir_are_ingested(tmp_path: Path, link: str) -> None:
    """A config dir (dotfiles) or its projects/ may be a link: the watch is on the real
    directory, and the files it names are ingested under the paths the index uses."""
    real = ConfigTree(tmp_path / "real")
    session = real.session(cwd=CWD)
    session.user("first words")
    session.write()
    if link == "config-dir":
        (tmp_path / "claude").symlink_to(tmp_path / "real")
    else:
        (tmp_path / "claude").mkdir()
        (tmp_path / "claude" / "projects").symlink_to(tmp_path / "real" / "projects")
    with Index(tmp_path / "index.db", [tmp_path / "claude"]) as index:
        answers = service(index, cwd=CWD)
        assert json.loads(answers.search_sessions("first"))["count"] == 1
        assert index._changes is not None and index._changes.watching
        session.user("zanzibar appears")
        session.append()
        assert eventually(lambda: json.loads(answers.search_sessions("zanzibar"))["count"] == 1)


@pytest.mark.parametrize(("scope", "hint"), [("all", False), ("repo", True), ("worktree", True)])
def test_no_match_suggests_scope_all_only_when_it_is_wider(
    fixture_index: Index, scope: str, hint: bool
) -> None:
    answer = json.loads(service(fixture_index).search_sessions("zzqqxxnomatch", scope=scope))
    assert answer["count"] == 0 and answer["note"].startswith("no session matches")
    assert ("scope='all'" in answer["note"]) is hint


def test_an_index_replaced_under_a_live_watcher_is_read_anew(tmp_path: Path) -> None:
    """The index file is deleted and a watcher builds a new one at the same path: the
    server's open handles still read the deleted inode, and because a watcher is live
    it trusted the index and never refreshed, so it answered from the deleted file
    forever, with no error. Each answer now looks at which file is there."""
    from sessiondex.indexer.lock import WatcherLock

    tree = ConfigTree(tmp_path / "claude")
    first = tree.session(cwd=CWD)
    first.user("pangolin notes")
    first.write()
    db = tmp_path / "index.db"

    def hits(answers: SessionService, word: str) -> int:
        return int(json.loads(answers.search_sessions(word))["count"])

    with Index(db, [tree.root]) as index, WatcherLock(db):
        answers = service(index, cwd=CWD)
        assert hits(answers, "pangolin") == 1
        for side in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            side.unlink(missing_ok=True)
        second = tree.session(cwd=CWD)
        second.user("armadillo notes")
        second.write()
        with Index(db, [tree.root]) as watcher:  # what the live watcher does
            watcher.refresh()
        assert eventually(lambda: hits(answers, "armadillo") == 1)
        assert hits(answers, "pangolin") == 1


@pytest.mark.parametrize("name", ["tests", "docs", "README.md", "src/app"])
def test_a_name_that_is_also_a_file_where_the_server_runs_is_a_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Claude Code starts the server in the project, where ``tests/`` or ``docs/``
    exist: a session named so was refused as a path outside the config dir, while
    ``resolve`` (which reads only ``….jsonl`` as a path) finds it by name."""
    project = tmp_path / "project"
    (project / "src" / "app").mkdir(parents=True)
    for folder in ("tests", "docs"):
        (project / folder).mkdir()
    (project / "README.md").write_text("# project\n")
    monkeypatch.chdir(project)
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    session.user("the work")
    session.meta("custom-title", customTitle=name)
    session.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        found = json.loads(service(index, cwd=CWD).resolve_session(name))
    assert (found["status"], found["session"]["session_id"]) == ("found", session.session_id)


def test_partial_and_fuzzy_rows_are_labelled_as_suggestions(tmp_path: Path) -> None:
    """The CLI heads them "No session has all of: …; best partial matches"; the MCP
    answer gave the same rows as plain matches, which a model cannot tell apart."""
    tree = ConfigTree(tmp_path / "claude")
    unit = tree.session(cwd=CWD)
    unit.user("write the unit tests")
    unit.meta("custom-title", customTitle="Unit tests")
    unit.write()
    pay = tree.session(cwd=CWD)
    pay.user("the payments page is slow")
    pay.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        answers = service(index, cwd=CWD)
        both = json.loads(answers.search_sessions("unit tests"))
        partial = json.loads(answers.search_sessions("unit payments"))
        fuzzy = json.loads(answers.search_sessions("Unti tetss"))
    assert "match" not in both and "note" not in both
    assert partial["match"] == "partial" and "not matches" in partial["note"]
    assert {s["session_id"] for s in partial["sessions"]} == {unit.session_id, pay.session_id}
    assert fuzzy["match"] == "fuzzy" and fuzzy["sessions"][0]["session_id"] == unit.session_id


@pytest.mark.parametrize("pr", ["acme/shop#15", "https://github.com/acme/shop/pull/15"])
def test_sessions_for_pr_lists_mentions_for_every_spelling(tmp_path: Path, pr: str) -> None:
    """``owner/repo#N`` kept only sessions with a pr-link record, while the URL form
    and the CLI's ``from-pr`` list those that mention the PR too."""
    tree = ConfigTree(tmp_path / "claude")
    linked = tree.session(cwd=CWD)
    linked.user("open the PR")
    linked.pr_link(number=15, url="https://github.com/acme/shop/pull/15", repository="acme/shop")
    linked.write(mtime=1_790_000_000)
    mentions = tree.session(cwd=CWD)
    mentions.user("review https://github.com/acme/shop/pull/15 please")
    mentions.write(mtime=1_790_000_100)
    with Index(tmp_path / "index.db", [tree.root]) as index:
        found = json.loads(service(index, cwd=CWD).sessions_for_pr(pr))
    assert [(s["session_id"], s["matched_by"]) for s in found["sessions"]] == [
        (linked.session_id, "pr-link"),
        (mentions.session_id, "pr-mention"),
    ]


def test_search_says_when_more_sessions_match_than_it_shows(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    for n in range(4):
        s = tree.session(cwd=CWD)
        s.user(f"the websocket drops, attempt {n}")
        s.write(mtime=1_790_000_000 + n)
    with Index(tmp_path / "index.db", [tree.root]) as index:
        answers = service(index, cwd=CWD)
        some = json.loads(answers.search_sessions("websocket", limit=3))
        every = json.loads(answers.search_sessions("websocket", limit=4))
        rest = json.loads(answers.search_sessions("websocket", limit=3, offset=3))
        listed = [
            json.loads(answers.list_sessions(scope="all", limit=3, offset=offset))
            for offset in (0, 3)
        ]
    assert some["count"] == 3 and "call again with offset=3" in some["more"]
    assert every["count"] == 4 and "more" not in every
    assert rest["count"] == 1 and rest["offset"] == 3 and "more" not in rest
    ids = [r["session_id"] for r in every["sessions"]]
    assert [r["session_id"] for r in some["sessions"] + rest["sessions"]] == ids
    assert "offset=3" in listed[0]["more"] and "more" not in listed[1]
    assert sum(len(page["sessions"]) for page in listed) == 4


def test_rows_cut_to_fit_are_counted_out_and_reachable(tmp_path: Path) -> None:
    """Rows dropped to stay under the cap were unreachable, and the answer said both
    "count": 50 and "raise limit" beside "26 of 50 rows left out… ask for fewer"
    (helper 130). ``count`` is the rows given; ``truncated`` names the offset of the
    rest, and following it reaches every session once."""
    tree = ConfigTree(tmp_path / "claude")
    for n in range(12):
        s = tree.session(cwd=CWD)
        s.user(f"commonword report {n} " + "padding " * 60)
        s.write(mtime=1_790_000_000 + n)
    with Index(tmp_path / "index.db", [tree.root]) as index:
        small = service(index, max_chars=3_000, cwd=CWD)
        seen: list[str] = []
        offset = 0
        for _ in range(12):  # bounded: at least one row a page
            page = json.loads(small.search_sessions("commonword", limit=12, offset=offset))
            assert page["count"] == len(page["sessions"]) >= 1
            assert not ("more" in page and "truncated" in page)
            seen += [r["session_id"] for r in page["sessions"]]
            said = page.get("truncated") or page.get("more")
            if said is None:
                break
            offset = int(re.search(r"offset=(\d+)", said).group(1))  # type: ignore[union-attr]
    assert len(seen) == len(set(seen)) == 12


def _with_subagent(tree: ConfigTree, subagent_turns: list[str]) -> SessionWriter:
    """A session whose one Task call started a subagent saying ``subagent_turns``
    (user, assistant, user, …)."""
    s = tree.session(cwd=CWD)
    s.user("look into the flaky deploy")
    turn = s.assistant("delegating", tool_uses=[("Task", {"prompt": "dig"})])
    sub = s.subagent(agent_id="a1b2c3", tool_use_id=turn.tool_use_ids[0])
    for n, text in enumerate(subagent_turns):
        (sub.user if n % 2 == 0 else sub.assistant)(text)
    s.write()
    return s


def test_a_subagent_s_search_hit_opens_with_around_message(tmp_path: Path) -> None:
    """search_sessions names the message a snippet comes from, and says to pass it to
    read_session as around_message; for a hit in a subagent's transcript that was
    refused as "not on the live branch". It opens that side conversation."""
    tree = ConfigTree(tmp_path / "claude")
    s = _with_subagent(
        tree,
        ["search the logs for the zanzibar timeout", "the zanzibar timeout comes from the proxy"],
    )
    with Index(tmp_path / "index.db", [tree.root]) as index:
        answers = service(index, cwd=CWD)
        found = json.loads(answers.search_sessions("zanzibar"))
        [hit] = found["sessions"]
        uuid = hit["snippets"][0]["message_uuid"]
        page = answers.read_session(s.session_id, around_message=uuid)
    assert "subagent" in page and "zanzibar timeout comes from the proxy" in page
    assert f"uuid {uuid}" in page and "[end of subagent]" in page


def test_a_subagent_pages_without_repeating_turns(tmp_path: Path) -> None:
    """Following a subagent page's "more" moved half a page and repeated the rest."""
    tree = ConfigTree(tmp_path / "claude")
    turns = [
        f"step {n // 2}: look further" if n % 2 == 0 else f"finding {n // 2}" for n in range(24)
    ]
    s = _with_subagent(tree, [turns[0] + " zanzibar", *turns[1:]])
    with Index(tmp_path / "index.db", [tree.root]) as index:
        answers = service(index, cwd=CWD)
        found = json.loads(answers.search_sessions("zanzibar"))
        uuid = found["sessions"][0]["snippets"][0]["message_uuid"]
        seen: list[str] = []
        call: dict[str, Any] = {"around_message": uuid, "limit": 6}
        for _ in range(10):  # bounded: 24 turns, 6 a page
            page = answers.read_session(s.session_id, **call)
            seen += re.findall(r"^\[(\d+)\] ", page, flags=re.M)
            more = re.search(r"around_message=(\S+) offset=(\d+) limit=6\]", page)
            if more is None:
                break
            call = {"around_message": more.group(1), "offset": int(more.group(2)), "limit": 6}
    assert seen == [str(n) for n in range(24)]
    with Index(tmp_path / "index.db", [tree.root]) as index:
        first = service(index, cwd=CWD).read_session(
            s.session_id, around_message=uuid, offset=0, limit=6
        )
    assert "turns 0–5 of 24" in first and "centred" not in first  # offset 0 is an offset


@pytest.mark.parametrize("asked_from", ["its-own-directory", "elsewhere"])
def test_resolve_says_once_why_a_non_nfc_config_dir_has_no_resume_line(
    tmp_path: Path, asked_from: str
) -> None:
    """From the session's own directory the answer had a null resume_command and no
    word why; elsewhere the reason is in the other-directory note, and only there."""
    root = tmp_path / "cafe\u0301"
    tree = ConfigTree(root)
    s = tree.session(cwd="/w/app")
    s.user("hello")
    s.write()
    cwd = "/w/app" if asked_from == "its-own-directory" else str(tmp_path)
    with Index(db=tmp_path / "i.db", config_dirs=[root]) as index:
        answer = json.loads(service(index, cwd=cwd).resolve_session(s.session_id))
    assert answer["session"]["resume_command"] is None
    notes = " ".join(answer["notes"])
    assert notes.count("rename the folder in NFC") == 1, answer["notes"]


HOSTILE_CWD = "/home/dev/x\x1b]0;pwned\x07y"
HOSTILE_BRANCH = "feat\x1b[2J\u202eevil"
# What a terminal or a bidi-aware view acts on: none of it may reach a text answer.
ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_text_answers_carry_no_terminal_escapes_from_the_transcript(tmp_path: Path) -> None:
    """A transcript's cwd and branch are untrusted as its messages are: the header of
    read_session shows them stripped as its turns are (an error result is made visible
    by the server: test_mcp.py)."""
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=HOSTILE_CWD, git_branch=HOSTILE_BRANCH)
    session.user("question")
    session.assistant("answer")
    session.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        page = service(index, cwd=HOSTILE_CWD).read_session(session.session_id)
    assert "pwned" in page and "evil" in page  # shown, but inert
    assert ACTIVE.findall(page) == []


def test_a_cut_session_resource_closes_the_code_block_it_cut(tmp_path: Path) -> None:
    """Each user message is a fenced block in the Markdown: the resource was cut
    inside one, so the "[… cut at …]" marker was read as code (helper 130)."""
    from sessiondex.mcp_server.service import _open_fence

    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    for number in range(40):
        session.user(f"paste {number}:\n```\n" + "a log line\n" * 30 + "```\nwhat now?")
        session.assistant(f"answer {number}")
    session.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        for cap in (3_000, 3_050, 4_321):
            text = service(index, max_chars=cap, cwd=CWD).session_markdown(session.session_id)
            body, _, marker = text.rpartition("\n[… cut at ")
            assert len(text) <= cap and marker.startswith(f"{cap} of ")
            assert _open_fence(body) is None, body[-200:]


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_write_to_a_read_only_index_says_so_as_the_cli_does(tmp_path: Path, what: str) -> None:
    """rename_session and tag_session on a read-only index (its file, or its folder)
    answered "the index could not answer (OperationalError: unable to open database
    file); try again, or run `sessiondex index` in a terminal": neither helps. The CLI
    names the index and says it is read-only (indexer/faults.py describe); so does the
    tool now. Nothing is written to the transcript, as with the CLI."""
    from tests.test_reliability_faults import read_only

    tree = ConfigTree(tmp_path / "claude")
    writer = tree.session(cwd="/w/shop")
    writer.user("hello there")
    writer.assistant("hi")
    writer.write()
    base = tmp_path / "cache"
    base.mkdir()
    db = base / "index.db"
    with Index(db, [tree.root]) as index:
        index.refresh()
    before = writer.path.read_bytes()
    svc = SessionService(lambda: Index(db, [tree.root]), Settings(cwd="/w/shop"))
    try:
        with read_only(db if what == "file" else base):
            assert json.loads(svc.list_sessions(scope="all"))["count"] == 1  # reads answer
            for call in (
                lambda: svc.rename_session(writer.session_id, "never written"),
                lambda: svc.tag_session(writer.session_id, "never"),
            ):
                with pytest.raises(UserError) as raised:
                    call()
                message = str(raised.value)
                assert str(db) in message and "read-only" in message, message
                assert "try again" not in message
    finally:
        svc.close()
    assert writer.path.read_bytes() == before


def _huge_fields_tree(tmp_path: Path) -> tuple[ConfigTree, SessionWriter, SessionWriter]:
    """A session whose branch is 30,000 characters and directory 3,000 (a transcript
    may record anything), and an ordinary one after it in list order."""
    tree = ConfigTree(tmp_path / "claude")
    huge = tree.session(cwd="/tmp/" + "d" * 3000, git_branch="b" * 30_000)
    huge.user("hugefield session")
    huge.assistant("the answer")
    huge.pr_link(number=7, url="https://github.com/acme/shop/pull/7", repository="acme/shop")
    huge.write()
    plain = tree.session(cwd="/tmp/plain", git_branch="main", start="2026-10-01T00:00:00.000Z")
    plain.user("hugefield plain")
    plain.assistant("fine")
    plain.write()
    return tree, huge, plain


@pytest.mark.parametrize("max_chars", [2_000, 20_000])
@pytest.mark.parametrize("tool", ["list_sessions", "search_sessions"])
def test_a_row_with_a_huge_field_is_shown_cut_and_paging_reaches_every_row(
    tmp_path: Path, tool: str, max_chars: int
) -> None:
    """One session's 30,000-character branch made its row larger than the cap: every
    row was left out ("2 of 2 rows left out … call again with offset=0", the same call
    again, for ever) and the ordinary session with it. A field longer than a sixteenth
    of the cap is now cut with the cut marker, so each page shows rows and the offsets
    it gives reach every session."""
    tree, huge, plain = _huge_fields_tree(tmp_path)
    svc = SessionService(
        lambda: Index(tmp_path / "i.db", [tree.root]), Settings("/tmp/plain", max_chars=max_chars)
    )
    seen: list[str] = []
    offset = 0
    try:
        for _ in range(5):
            if tool == "list_sessions":
                text = svc.list_sessions(scope="all", offset=offset)
            else:
                text = svc.search_sessions("hugefield", offset=offset)
            assert len(text) <= max_chars
            page = json.loads(text)
            assert page["sessions"], page  # never a page of nothing that points to itself
            seen += [row["session_id"] for row in page["sessions"]]
            follow = re.search(r"offset=(\d+)", page.get("truncated") or page.get("more") or "")
            if follow is None:
                break
            offset = int(follow.group(1))
    finally:
        svc.close()
    assert sorted(seen) == sorted([huge.session_id, plain.session_id])


@pytest.mark.parametrize("max_chars", [2_000, 20_000])
def test_resolve_and_read_of_a_session_with_a_huge_field_stay_whole(
    tmp_path: Path, max_chars: int
) -> None:
    """resolve_session answered JSON cut in the middle (not JSON), and read_session a
    header so long that the cut took the turns and the last line with it."""
    tree, huge, _ = _huge_fields_tree(tmp_path)
    svc = SessionService(
        lambda: Index(tmp_path / "i.db", [tree.root]), Settings("/tmp/plain", max_chars=max_chars)
    )
    try:
        resolved = svc.resolve_session(huge.session_id)
        page = svc.read_session(huge.session_id)
        listed = json.loads(svc.sessions_for_pr("https://github.com/acme/shop/pull/7"))
    finally:
        svc.close()
    assert len(resolved) <= max_chars and len(page) <= max_chars
    session = json.loads(resolved)["session"]
    assert session["session_id"] == huge.session_id
    assert session["git_branch"].startswith("bbb") and "[… cut:" in session["git_branch"]
    assert "[0] user" in page and "the answer" in page and page.endswith("[end of session]\n")
    assert [row["session_id"] for row in listed["sessions"]] == [huge.session_id]


def test_every_read_session_page_ends_with_its_next_step_whatever_a_turn_records(
    tmp_path: Path,
) -> None:
    """A turn's head showed the entry's uuid and timestamp as the transcript recorded
    them: a 20,000-character uuid made a page of that turn alone longer than the cap,
    and the cut took the line that says where the next page starts (the reader was
    stuck there); an escape sequence in them reached the text raw. They are cleaned
    and cut as every other transcript string of the page."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/tmp/x", git_branch="main")
    s.user("first prompt")
    s.assistant("reply", uuid="u" * 20_000 + "\x1b]0;t\x07")
    s.user("third", timestamp="2026-11-01T10:00:05.000Z" + "Z" * 20_000)
    s.assistant("fourth")
    s.write()
    svc = SessionService(
        lambda: Index(tmp_path / "i.db", [tree.root]), Settings("/tmp/x", max_chars=2000)
    )
    bodies: list[str] = []
    offset = 0
    try:
        for _ in range(10):
            page = svc.read_session(s.session_id, offset=offset, limit=40)
            assert len(page) <= 2000 and "\x1b" not in page and "\x07" not in page
            last = page.rstrip("\n").splitlines()[-1]
            assert last == "[end of session]" or last.startswith("[more: "), last
            bodies += [
                b for b in ("first prompt", "reply", "third", "fourth") if f"\n{b}\n" in page
            ]
            if last == "[end of session]":
                break
            offset = int(re.search(r"offset=(\d+)", last).group(1))  # type: ignore[union-attr]
    finally:
        svc.close()
    assert bodies == ["first prompt", "reply", "third", "fourth"]


def test_reading_past_the_end_of_a_one_turn_session_says_1_turn(tmp_path: Path) -> None:
    """read_session past the end said "the session has 1 turns"."""
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD)
    session.user("only question")
    session.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        page = service(index, cwd=CWD).read_session(session.session_id, offset=5)
    assert "none at offset 5; the session has 1 turn\n" in page, page


def test_a_rename_the_index_cannot_follow_is_answered_as_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record landed, the index's disk is full: the tool's error says the rename
    was done (a model that reads only "cannot write the index" renames again)."""
    from tests.test_mutations import IndexFullAfterTheWrite

    tree = ConfigTree(tmp_path / "claude")
    writer = tree.session(cwd="/w/shop")
    writer.user("hello there")
    writer.write()
    db = tmp_path / "index.db"
    svc = SessionService(lambda: Index(db, [tree.root]), Settings(cwd="/w/shop"))
    try:
        svc.list_sessions(scope="all")  # indexed before the disk fills
        IndexFullAfterTheWrite(monkeypatch)
        with pytest.raises(UserError) as raised:
            svc.rename_session(writer.session_id, "Done anyway")
    finally:
        svc.close()
    message = str(raised.value)
    assert message.startswith(f"renamed {writer.session_id} to 'Done anyway'; "), message
    assert "the disk is full" in message and "catch up on the next refresh" in message
    assert json.loads(writer.path.read_bytes().splitlines()[-1])["customTitle"] == "Done anyway"
