"""``sessiondex mcp``: driven end to end by the ``mcp`` SDK's own clients.

The server runs as a subprocess (``sessiondex mcp``) on a copy of ``fixtures/claude``; the
stdio client (``mcp.client.stdio``) initializes, lists and calls every tool, reads the
``session://`` resource and sends bad input; every answer is checked against what the
CLI (or ``sessiondex.Index``) answers for the same question, on the same database. One
server per test, a bounded wait on everything (``anyio.fail_after``).
"""

from __future__ import annotations

import http.client
import json
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.types import CallToolResult  # noqa: E402

from sessiondex import Index  # noqa: E402
from sessiondex.cli.main import cli  # noqa: E402
from sessiondex.render.conversation import Message  # noqa: E402
from tests.builders import ConfigTree, SessionWriter, copy_fixtures  # noqa: E402
from tests.test_reliability_truth import snapshot  # noqa: E402

SERVER = [sys.executable, "-c", "from sessiondex.cli.main import main; main()"]
SHOP = "/home/dev/shop"
FEATURE = "/home/dev/shop-wt/feature-x"  # a worktree of shop (no real git repository)
AUTH = "4045e6f8-686a-5d64-9f2b-e0830c6ab007"  # "Auth refactor", 22 messages, PR #12
FORK = "25fc1c07-f8f7-59ba-b975-33d6d570e572"  # "Auth refactor (fork)"
BIG = "0299d474-8976-5a23-b6a6-e232a4e09752"  # 92 messages, ~215 KiB
READ_TOOLS = {
    "search_sessions",
    "list_sessions",
    "resolve_session",
    "sessions_for_pr",
    "read_session",
}
WRITE_TOOLS = {"rename_session", "tag_session"}
TIMEOUT = 90
TURN_RE = re.compile(r"^\[(\d+)\] (.+?)(?: · uuid ([0-9a-f-]+))?$", re.M)
NEXT_RE = re.compile(r"^\[more: call read_session with ref=(\S+) offset=(\d+) limit=\d+\]$", re.M)


@pytest.fixture()
def tree(tmp_path: Path) -> tuple[Path, Path]:
    return copy_fixtures(tmp_path), tmp_path / "index.db"


def cli_json(tree: tuple[Path, Path], *args: str) -> Any:
    """The CLI's JSON answer to the same question (exit 1 is "nothing": [])."""
    config, db = tree
    result = CliRunner().invoke(cli, ["--config-dir", str(config), "--db", str(db), *args])
    assert result.exit_code in (0, 1, 3), result.output
    return json.loads(result.stdout) if result.stdout.strip() else []


@asynccontextmanager
async def connect(
    tree: tuple[Path, Path], *extra: str, server: list[str] = SERVER
) -> AsyncIterator[ClientSession]:
    config, db = tree
    params = StdioServerParameters(
        command=server[0],
        args=[*server[1:], "--config-dir", str(config), "--db", str(db), "mcp", *extra],
        cwd=str(config.parent),
    )
    with open(config.parent / "server.stderr", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def run(test: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(TIMEOUT):
            await test()

    anyio.run(bounded)


def text(result: CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert block.type == "text"
    return block.text


async def ok(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert not result.is_error, text(result)
    return text(result)


async def answer(session: ClientSession, tool: str, **arguments: Any) -> Any:
    return json.loads(await ok(session, tool, **arguments))


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, CallToolResult)
    assert result.is_error, text(result)
    return text(result)


def ids(rows: list[dict[str, Any]]) -> list[str]:
    return [row["session_id"] for row in rows]


def expected_turns(tree: tuple[Path, Path], session_id: str) -> list[str]:
    """The UUIDs read_session shows: the library's live-branch messages with text."""
    config, db = tree
    with Index(db, [config]) as index:
        conversation = index.conversation(session_id)
    return [
        item.uuid
        for item in conversation.items
        if isinstance(item, Message) and item.role != "tool" and item.has_text()
    ]


def page_uuids(page: str) -> list[str]:
    return [m.group(3) for m in TURN_RE.finditer(page) if m.group(3)]


# ----------------------------------------------------------------- read-only server
def test_read_only_server_answers_as_the_cli_does(tree: tuple[Path, Path]) -> None:
    before = snapshot(tree[0])

    async def scenario() -> None:
        async with connect(tree, "--cwd", SHOP) as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == READ_TOOLS  # no write tool without --allow-writes
            for tool in tools.values():
                assert tool.description and len(tool.description) > 80
                assert tool.annotations and tool.annotations.read_only_hint
                assert tool.input_schema["type"] == "object"
            limit_schema = tools["search_sessions"].input_schema["properties"]["limit"]
            assert (limit_schema["minimum"], limit_schema["maximum"]) == (1, 50)

            # search_sessions: the CLI's sessions, in its order, plus snippets with UUIDs
            found = await answer(session, "search_sessions", query="checkout", limit=10)
            cli_rows = cli_json(
                tree, "search", "checkout", "--scope", "all", "--limit", "10", "--json"
            )
            assert ids(found["sessions"]) == ids(cli_rows) and found["count"] == len(cli_rows)
            by_id = {row["session_id"]: row for row in cli_rows}
            for hit in found["sessions"]:
                row = by_id[hit["session_id"]]
                for key in ("title", "cwd", "git_branch", "last_activity", "resume_command"):
                    assert hit[key] == row[key]
                assert hit["snippet"] == row["snippet"]
            big = next(h for h in found["sessions"] if h["session_id"] == BIG)
            assert big["snippets"] and all(s["message_uuid"] for s in big["snippets"])
            assert all("[" in s["snippet"].lower() for s in big["snippets"])
            turns = expected_turns(tree, BIG)
            hit_uuid = next(s["message_uuid"] for s in big["snippets"] if s["role"] == "user")
            assert hit_uuid in turns

            scoped = await answer(
                session, "search_sessions", query="auth", scope="worktree", branch="fix/auth"
            )
            assert ids(scoped["sessions"]) == ids(
                cli_json(tree, "search", "auth", "--cwd", SHOP, "--branch", "fix/auth", "--json")
            )
            assert ids(scoped["sessions"]) == [AUTH]
            pr_query = await answer(
                session, "search_sessions", query="https://github.com/acme/shop/pull/12"
            )
            assert ids(pr_query["sessions"]) == ids(
                cli_json(tree, "search", "https://github.com/acme/shop/pull/12", "--json")
            )

            # list_sessions
            for arguments, cli_args in [
                ({"scope": "all", "limit": 50}, ["--scope", "all", "--limit", "50"]),
                ({}, ["--scope", "repo", "--cwd", SHOP, "--limit", "20"]),
                (
                    {"scope": "all", "since": "2026-11-10"},
                    ["--scope", "all", "--since", "2026-11-10", "--limit", "20"],
                ),
                (
                    {"scope": "worktree", "cwd": "/home/dev/blog", "limit": 3},
                    ["--cwd", "/home/dev/blog", "--limit", "3"],
                ),
            ]:
                listed = await answer(session, "list_sessions", **arguments)
                expected = cli_json(tree, "list", *cli_args, "--json")
                assert ids(listed["sessions"]) == ids(expected), arguments
                assert [s["resume_command"] for s in listed["sessions"]] == [
                    row["resume_command"] for row in expected
                ]

            # resolve_session: the CLI's rules (name, prefix, full ID)
            for ref in ("Auth refactor", "auth REFACTOR ", "4045e6f8", AUTH):
                resolved = await answer(session, "resolve_session", ref=ref)
                [expected] = cli_json(tree, "resolve", ref, "--cwd", SHOP, "--json")
                assert resolved["status"] == "found"
                assert resolved["session"]["session_id"] == expected["session_id"] == AUTH
                assert resolved["matched_by"] == expected["matched_by"]
            transcript = str(next(tree[0].glob(f"projects/*/{AUTH}.jsonl")))
            by_path = await answer(session, "resolve_session", ref=transcript)
            assert (by_path["matched_by"], by_path["session"]["session_id"]) == ("path", AUTH)

            # sessions_for_pr: a number (this repository), a URL, owner/repo#N
            for pr, cwd, cli_args in [
                ("12", SHOP, ["12", "--cwd", SHOP]),
                ("#14", FEATURE, ["14", "--cwd", FEATURE]),
                (
                    "https://github.com/acme/shop/pull/12",
                    SHOP,
                    ["https://github.com/acme/shop/pull/12"],
                ),
                (
                    "https://gitlab.com/acme/marketing/blog/-/merge_requests/12",
                    SHOP,
                    ["https://gitlab.com/acme/marketing/blog/-/merge_requests/12"],
                ),
            ]:
                linked = await answer(session, "sessions_for_pr", pr=pr, cwd=cwd)
                assert ids(linked["sessions"]) == ids(
                    cli_json(tree, "from-pr", *cli_args, "--json")
                ), pr
                assert linked["sessions"], pr
            shorthand = await answer(session, "sessions_for_pr", pr="acme/shop#12")
            by_url = cli_json(tree, "from-pr", "https://github.com/acme/shop/pull/12", "--json")
            assert sorted(ids(shorthand["sessions"])) == sorted(ids(by_url))
            assert (await answer(session, "sessions_for_pr", pr="other/repo#12"))["count"] == 0

            # read_session: every live-branch turn once, paged, with the library's UUIDs
            seen: list[str] = []
            offset = 0
            for _ in range(50):
                page = await ok(session, "read_session", ref=BIG, offset=offset, limit=7)
                assert len(page) <= 20_000
                seen += page_uuids(page)
                more = NEXT_RE.search(page)
                if more is None:
                    assert page.rstrip().endswith("[end of session]")
                    break
                assert more.group(1) == BIG
                offset = int(more.group(2))
            assert seen == turns
            around = await ok(session, "read_session", ref=BIG, around_message=hit_uuid, limit=6)
            assert hit_uuid in page_uuids(around) and "centred on message" in around
            position = turns.index(hit_uuid)
            assert page_uuids(around)[0] == turns[max(0, position - 3)]
            auth_page = await ok(session, "read_session", ref="Auth refactor", include_tools=True)
            assert "[tool call Bash]" in auth_page and "[tool result]" in auth_page
            assert page_uuids(auth_page)[: len(expected_turns(tree, AUTH))]
            assert "compaction" in auth_page  # the compact boundary is marked

            # the session:// resource and its template
            templates = (await session.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["session://{session_id}"]
            listed_resources = (await session.list_resources()).resources
            assert f"session://{AUTH}" in {str(r.uri) for r in listed_resources}
            contents = (await session.read_resource(f"session://{AUTH}")).contents
            with Index(tree[1], [tree[0]]) as index:
                markdown = index.show(AUTH, format="md", cwd=SHOP)
            assert contents[0].text == markdown and contents[0].mime_type == "text/markdown"

            # bad input: an error result each time, and the server goes on
            outside = tree[0].parent / "outside" / f"{AUTH}.jsonl"
            outside.parent.mkdir()
            outside.write_bytes(Path(transcript).read_bytes())
            sneaky = str(tree[0] / "projects" / ".." / ".." / "outside" / f"{AUTH}.jsonl")
            for tool, arguments, says in [
                (
                    "read_session",
                    {"ref": "00000000-0000-4000-8000-000000000000"},
                    "No conversation found",
                ),
                ("resolve_session", {"ref": "no such session name"}, "no session"),
                ("search_sessions", {"query": "   "}, "query is empty"),
                ("search_sessions", {"query": ""}, "query"),
                ("search_sessions", {"query": "auth", "limit": 10**9}, "less than or equal to 50"),
                ("list_sessions", {"limit": 0}, "greater than or equal to 1"),
                ("read_session", {"ref": BIG, "limit": 100_000}, "less than or equal to 200"),
                ("read_session", {"ref": str(outside)}, "refusing"),
                ("resolve_session", {"ref": sneaky}, "refusing"),
                # not ….jsonl: a name to resolve, never a file to read
                ("read_session", {"ref": "/etc/passwd"}, "no session matches"),
                (
                    "read_session",
                    {"ref": BIG, "around_message": "not-a-message"},
                    "not on the live branch",
                ),
                ("list_sessions", {"since": "last tuesday"}, "cannot read --since"),
                # empty, as the CLI's --branch "" and --since "" are usage errors (the
                # filter was meant, not "any"): said, not taken for no filter
                ("list_sessions", {"scope": "all", "branch": ""}, "at least 1 character"),
                ("list_sessions", {"since": ""}, "at least 1 character"),
                ("search_sessions", {"query": "auth", "branch": ""}, "at least 1 character"),
                ("search_sessions", {"query": "auth", "cwd": ""}, "at least 1 character"),
                ("list_sessions", {"scope": "galaxy"}, "scope"),
                ("list_sessions", {"cwd": "relative/dir"}, "absolute"),
                (
                    "sessions_for_pr",
                    {"pr": "not a pr"},
                    "not a PR number, URL or owner/repo#number",
                ),
                ("search_sessions", {}, "query"),
                ("no_such_tool", {}, "no_such_tool"),
            ]:
                message = await error(session, tool, **arguments)
                assert says.lower() in message.lower(), (tool, arguments, message)
                # one sentence, as the README says (pydantic's dump was five lines with a
                # link to its docs)
                assert "\n" not in message.strip() and "pydantic" not in message, message
            with pytest.raises(Exception, match="No conversation found"):
                await session.read_resource("session://00000000-0000-4000-8000-000000000000")

            # ... and still answers
            again = await answer(session, "search_sessions", query="checkout", limit=10)
            assert ids(again["sessions"]) == ids(found["sessions"])

    run(scenario)
    assert snapshot(tree[0]) == before  # the transcripts are the truth: bytes and mtimes


# ----------------------------------------------------------------- writes
def test_write_tools_only_with_allow_writes_and_write_what_the_cli_writes(
    tree: tuple[Path, Path],
) -> None:
    transcript = next(tree[0].glob(f"projects/*/{FORK}.jsonl"))

    async def scenario() -> None:
        async with connect(tree, "--cwd", SHOP, "--allow-writes") as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == READ_TOOLS | WRITE_TOOLS
            assert tools["rename_session"].annotations.read_only_hint is False

            renamed = await answer(session, "rename_session", ref=FORK, name="Auth refactor")
            assert (renamed["session_id"], renamed["title"]) == (FORK, "Auth refactor")
            last = json.loads(transcript.read_bytes().splitlines()[-1])
            assert last == {
                "type": "custom-title",
                "customTitle": "Auth refactor",
                "sessionId": FORK,
            }
            # two sessions share the name now: candidates, not an error, newest first
            ambiguous = await answer(session, "resolve_session", ref="Auth refactor")
            assert ambiguous["status"] == "ambiguous"
            expected = cli_json(tree, "resolve", "Auth refactor", "--cwd", SHOP, "--json")
            assert ids(ambiguous["candidates"]) == ids(expected) and set(ids(expected)) == {
                AUTH,
                FORK,
            }
            message = await error(session, "read_session", ref="Auth refactor")
            assert AUTH in message and FORK in message

            tagged = await answer(session, "tag_session", ref=FORK, tag="keep")
            assert tagged["tag"] == "keep"
            row = next(
                r
                for r in cli_json(tree, "list", "--scope", "all", "--json")
                if r["session_id"] == FORK
            )
            assert (row["custom_title"], row["tag"]) == ("Auth refactor", "keep")
            cleared = await answer(session, "tag_session", ref=FORK, tag="")
            assert cleared["tag"] is None
            assert json.loads(transcript.read_bytes().splitlines()[-1])["tag"] == ""

            await error(session, "rename_session", ref=FORK, name="   ")
            # nothing visible, as the CLI refuses it
            await error(session, "rename_session", ref=FORK, name=" \u200b \u202e")
            await error(session, "tag_session", ref=FORK, tag="\u200b")
            # a change that changes nothing writes nothing (the mtime is Claude Code's clock)
            size, mtime = transcript.stat().st_size, transcript.stat().st_mtime_ns
            same = await answer(session, "rename_session", ref=FORK, name="Auth refactor")
            assert same["changed"] is False and renamed["changed"] is True
            untagged = await answer(session, "tag_session", ref=FORK, tag="")
            assert untagged["changed"] is False
            assert (transcript.stat().st_size, transcript.stat().st_mtime_ns) == (size, mtime)
            await error(session, "tag_session", ref="00000000-0000-4000-8000-000000000000", tag="x")
            assert (await answer(session, "list_sessions", scope="all"))["count"] > 0

    run(scenario)


# ----------------------------------------------------------------- failures
def test_vanished_transcript_is_an_error_result_and_a_broken_index_is_rebuilt(
    tree: tuple[Path, Path],
) -> None:
    """A transcript gone under the index is an error result; an index file overwritten
    under the running server is moved aside and rebuilt by sessiondex.Index (issue 14
    item 5), so the next call answers as before, even with --no-refresh."""
    config, db = tree
    cli_json(tree, "index", "--json")
    victim = next(config.glob(f"projects/*/{BIG}.jsonl"))

    async def scenario() -> None:
        # --no-refresh: the index (built above) still lists a transcript that is gone
        victim.rename(victim.with_suffix(".bak"))
        config_args = ["--config-dir", str(config), "--db", str(db), "--no-refresh"]
        params = StdioServerParameters(
            command=SERVER[0], args=[*SERVER[1:], *config_args, "mcp", "--cwd", SHOP]
        )
        with open(config.parent / "server.stderr", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    message = await error(session, "read_session", ref=BIG)
                    # --no-refresh skips the pass over every file, not the one session's
                    assert f"No conversation found with session ID: {BIG}" in message
                    db.write_bytes(b"this is not a database" * 100)
                    for name in (f"{db.name}-wal", f"{db.name}-shm"):
                        (db.parent / name).unlink(missing_ok=True)
                    for _ in range(2):  # rebuilt once, then answered from the new file
                        rows = (await answer(session, "list_sessions", scope="all"))["sessions"]
                        assert rows and BIG not in ids(rows)  # rebuilt from what is there
                    assert list(db.parent.glob(f"{db.name}.corrupt-*"))
                    assert (await session.send_ping()) is not None

    run(scenario)


def test_stdout_carries_only_the_protocol(tree: tuple[Path, Path]) -> None:
    """Raw pipes, no SDK client: every stdout line is a JSON-RPC message; logs are on
    stderr; closing stdin ends the server."""
    config, db = tree
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "read_session", "arguments": {"ref": "nope-not-a-session"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "search_sessions", "arguments": {"query": "auth"}},
        },
        # A lone surrogate escape (valid JSON text, not valid Unicode): the SDK's parser
        # refused the line and nothing was answered, so the client waited forever.
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "search_sessions", "arguments": {"query": "\ud800auth\udc00"}},
        },
    ]
    errlog = open(config.parent / "server.stderr", "wb")  # closed below
    server = subprocess.Popen(
        [*SERVER, "--config-dir", str(config), "--db", str(db), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        cwd=config.parent,
    )
    assert server.stdin and server.stdout
    try:
        server.stdin.write("".join(json.dumps(r) + "\n" for r in requests).encode())
        server.stdin.flush()
        lines: queue.Queue[bytes] = queue.Queue()
        stdout = server.stdout
        reader = threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True)
        reader.start()
        received: list[bytes] = []
        deadline = time.monotonic() + TIMEOUT
        # stdin stays open until every answer is in (closing it cancels pending calls)
        while len(received) < 5 and time.monotonic() < deadline:
            try:
                received.append(lines.get(timeout=0.5))
            except queue.Empty:
                assert server.poll() is None, "the server ended early"
        server.stdin.close()  # the client goes away: the server ends by itself
        assert server.wait(timeout=20) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)
        errlog.close()
    reader.join(timeout=10)  # stdout is closed once the server has ended
    while not lines.empty():  # anything after the 5 answers would be a protocol error
        received.append(lines.get())
    stderr = (config.parent / "server.stderr").read_text()
    messages = [json.loads(line) for line in received]
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    by_id = {m["id"]: m for m in messages}
    assert set(by_id) == {1, 2, 3, 4, 5}
    assert by_id[3]["result"]["isError"] is True
    assert AUTH in by_id[4]["result"]["content"][0]["text"]
    assert AUTH in by_id[5]["result"]["content"][0]["text"]  # each lone half as U+FFFD
    assert "sessiondex mcp: serving over stdio" in stderr


# ----------------------------------------------------------------- freshness, no `watch`
# The server watches the transcripts itself (indexer/dirty.py): an event sets a dirty bit
# and the next answer checks and refreshes. Events reach the bit on watchdog's threads a
# moment after the write, so an event-driven change is polled for (bounded); the changes
# the design makes visible on the very next call (a projects/ dir that appears, the
# per-call check of the fallback) are asserted on it.
WORD = "zanzibarquux"
FRESH_DEADLINE = 10.0
FALLBACK_NOTE = "checking the transcripts before each answer instead"
# `sessiondex mcp` whose file-system observer cannot start, as when inotify's limits are
# reached: a real monkeypatch, in the server's own process.
NO_OBSERVER = [
    sys.executable,
    "-c",
    "import errno\n"
    "from watchdog.observers.api import BaseObserver\n"
    "def start(self):\n"
    "    raise OSError(errno.ENOSPC, 'inotify watch limit reached')\n"
    "BaseObserver.start = start\n"
    "from sessiondex.cli.main import main\n"
    "main()",
]


async def found(session: ClientSession, query: str) -> list[str]:
    return ids((await answer(session, "search_sessions", query=query))["sessions"])


async def until_found(session: ClientSession, query: str, expected: list[str]) -> int:
    """Ask until ``query`` finds exactly ``expected`` (bounded); returns the calls it took."""
    deadline = time.monotonic() + FRESH_DEADLINE
    calls = 1
    while (got := await found(session, query)) != expected:
        assert time.monotonic() < deadline, f"{query!r}: still {got}, want {expected}"
        await anyio.sleep(0.01)
        calls += 1
    return calls


def live_tree(tmp_path: Path) -> tuple[ConfigTree, SessionWriter]:
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=SHOP)
    session.user("first words of the session")
    session.write()
    return tree, session


@pytest.mark.parametrize("observer", ["own watcher", "cannot start"])
def test_appends_new_and_deleted_sessions_are_answered_without_watch(
    tmp_path: Path, observer: str
) -> None:
    """No `sessiondex watch`: an append, a session in a new project dir and a deleted
    transcript are all in the answers that follow. With the server's own watcher they
    arrive by events (polled for); when it cannot start, the per-call check of the
    transcripts makes each visible on the very next call, and stderr says so once."""
    tree, live = live_tree(tmp_path)
    db = tmp_path / "index.db"
    fallback = observer == "cannot start"
    server = NO_OBSERVER if fallback else SERVER

    async def next_call_or_soon(session: ClientSession, query: str, expected: list[str]) -> None:
        if fallback:
            assert await found(session, query) == expected
        else:
            await until_found(session, query, expected)

    async def scenario() -> None:
        async with connect((tree.root, db), server=server) as session:
            assert await found(session, WORD) == []
            assert await found(session, "first") == [live.session_id]  # no change: no check

            live.user(f"we settled on the {WORD} approach")
            live.append()
            await next_call_or_soon(session, WORD, [live.session_id])

            other = tree.session(cwd="/home/dev/elsewhere")
            other.user(f"a second {WORD} session, another project")
            other.write()
            await next_call_or_soon(session, "another project", [other.session_id])

            live.path.unlink()
            await next_call_or_soon(session, WORD, [other.session_id])
            assert (await answer(session, "list_sessions", scope="all"))["count"] == 1

    run(scenario)
    # one log record (the SDK's log handler may wrap it over several lines)
    stderr = " ".join((tmp_path / "server.stderr").read_text().split())
    assert stderr.count(FALLBACK_NOTE) == (1 if fallback else 0), stderr
    if fallback:
        assert "inotify watch limit reached" in stderr


def test_a_projects_dir_created_after_start_is_answered_on_the_next_call(
    tmp_path: Path,
) -> None:
    """A config dir without projects/ at start (Claude Code not run there yet): the first
    session written there is found by the very next call (one stat of projects/ per call
    notices the dir; it is watched before the check), and later appends by events."""
    root = tmp_path / "claude"
    root.mkdir()
    db = tmp_path / "index.db"

    async def scenario() -> None:
        async with connect((root, db)) as session:
            assert (await answer(session, "list_sessions", scope="all"))["count"] == 0
            tree = ConfigTree(root)
            first = tree.session(cwd=SHOP)
            first.user(f"the first {WORD} session here")
            first.write()
            assert await found(session, WORD) == [first.session_id]
            first.user("and a later turn about quokkas")
            first.append()
            await until_found(session, "quokkas", [first.session_id])

    run(scenario)
    assert FALLBACK_NOTE not in " ".join((tmp_path / "server.stderr").read_text().split())


# ----------------------------------------------------------------- HTTP
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_streamable_http_on_loopback(tree: tuple[Path, Path]) -> None:
    config, db = tree
    port = _free_port()
    server = subprocess.Popen(
        [
            *SERVER,
            "--config-dir",
            str(config),
            "--db",
            str(db),
            "mcp",
            "--cwd",
            SHOP,
            "--http",
            f"127.0.0.1:{port}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=config.parent,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, server.communicate()[1].decode()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.05)

        async def scenario() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    assert {t.name for t in (await session.list_tools()).tools} == READ_TOOLS
                    found = await answer(session, "search_sessions", query="auth", limit=5)
                    expected = cli_json(
                        tree, "search", "auth", "--scope", "all", "--limit", "5", "--json"
                    )
                    assert ids(found["sessions"]) == ids(expected)
                    await error(session, "read_session", ref="/etc/passwd")
                    assert (await answer(session, "list_sessions", scope="all"))["count"]

        run(scenario)
        # DNS rebinding: a page elsewhere that resolves its name to 127.0.0.1 is refused
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.putrequest("POST", "/mcp", skip_host=True)
        for name, value in [
            ("Host", f"attacker.example:{port}"),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Content-Length", "2"),
        ]:
            connection.putheader(name, value)
        connection.endheaders(b"{}")
        assert connection.getresponse().status == 421
        connection.close()
    finally:
        server.terminate()
        try:
            _, stderr = server.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            _, stderr = server.communicate(timeout=10)
    assert f"http://127.0.0.1:{port}/mcp" in stderr.decode()


@pytest.mark.parametrize(
    "address",
    ["0.0.0.0:8765", "192.168.1.5:8765", "example.com:8765", "[::]:8765", "10.0.0.1:80"],
)
def test_http_refuses_non_loopback_hosts(address: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "i.db"), "mcp", "--http", address])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "loopback" in lines[0]


@pytest.mark.parametrize("address", ["8765", "127.0.0.1:", "127.0.0.1:99999", "127.0.0.1:http"])
def test_http_address_must_be_host_and_port(address: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "i.db"), "mcp", "--http", address])
    assert result.exit_code == 2 and "--http" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_http_on_a_taken_port_is_one_error_line(tmp_path: Path) -> None:
    """uvicorn bound inside the server's run: a log line and exit 3 (which the CLI
    contract keeps for ambiguity); ``serve`` says it in one line with exit 1."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            cli, ["--db", str(tmp_path / "i.db"), "mcp", "--http", f"127.0.0.1:{port}"]
        )
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: cannot serve on 127.0.0.1:")
    assert result.output.count("\n") == 1


def test_an_error_result_shows_transcript_text_as_the_cli_does() -> None:
    """Helper 91: after the SDK named a session "\u202eevil\x1b[31mred\x07 name", an
    error suggesting it ("Did you mean: …") carried the raw RLO, ESC and BEL to the
    client, which shows tool errors to the user; the CLI prints them made visible."""
    import asyncio

    from mcp.server.mcpserver.exceptions import ToolError

    from sessiondex.mcp_server.server import Runner
    from sessiondex.mcp_server.service import SessionService, Settings, UserError

    def failing() -> str:
        raise UserError("No session named 'final'. Did you mean: \u202eevil\x1b[31mred\x07 name?")

    runner = Runner(SessionService(_no_index, Settings(cwd="/w")))  # the call needs none
    try:
        with pytest.raises(ToolError) as raised:
            asyncio.run(runner.tool(failing))
    finally:
        runner._executor.shutdown()
    assert str(raised.value) == (
        "No session named 'final'. Did you mean: <U+202E>evil^[[31mred^G name?"
    )


def _no_index() -> Any:
    raise AssertionError("the call needs no index")


def test_an_error_result_is_as_short_as_every_answer() -> None:
    """Helper 95: with ``--max-chars 2000``, ``resolve_session`` of a 4,096-character
    ref answered an error of 4,156 characters (the ref quoted whole); every answer is
    at most ``--max-chars``, errors too."""
    import asyncio

    from mcp.server.mcpserver.exceptions import ToolError

    from sessiondex.mcp_server.server import ERROR_PREFIX_ROOM, Runner
    from sessiondex.mcp_server.service import SessionService, Settings, UserError

    def failing() -> str:
        raise UserError(f"No session matches {'a' * 4096!r}.")

    runner = Runner(SessionService(_no_index, Settings(cwd="/w", max_chars=2000)))
    try:
        with pytest.raises(ToolError) as raised:
            asyncio.run(runner.tool(failing))
    finally:
        runner._executor.shutdown()
    # Helper 97: the SDK then adds "Error executing tool <name>: ", kept under the cap.
    assert len(str(raised.value)) == 2000 - ERROR_PREFIX_ROOM
    assert str(raised.value).startswith("No session matches 'aaa") and str(raised.value)[-1] == "…"


# (the tool name a client sent, how the error quotes it)
UNKNOWN_TOOLS = {
    "a near miss": ("search_session", "'search_session'"),
    "a name of any length (helper 99: echoed whole)": ("x" * 5000, repr("x" * 63 + "…")),
    "control and bidi characters": ("\u202etool\x1b[31m", "'<U+202E>tool^[[31m'"),
}


@pytest.mark.parametrize("case", list(UNKNOWN_TOOLS))
def test_an_unknown_tool_is_quoted_short_and_visible_with_the_tools_there_are(
    case: str,
) -> None:
    """The SDK's "Unknown tool: <name>" echoed a name of any length, with its control
    characters, to a client that shows tool errors to a person; the error now quotes it
    as every error quotes what it was given, and says which tools there are."""
    import asyncio

    from mcp.server.mcpserver.exceptions import ToolError

    from sessiondex.mcp_server.server import build_server
    from sessiondex.mcp_server.service import Settings

    sent, quoted = UNKNOWN_TOOLS[case]
    server = build_server(_no_index, Settings(cwd="/w"))
    try:
        with pytest.raises(ToolError) as raised:
            asyncio.run(server.call_tool(sent, {}))
    finally:
        server.runner.shutdown()
    message = str(raised.value)
    assert message.startswith(f"no tool {quoted}; the tools are ")
    assert "search_sessions" in message and "read_session" in message


# (tool, arguments with one the tool does not have, the name the error quotes)
UNKNOWN_ARGUMENTS = {
    "a misspelt limit": ("search_sessions", {"query": "auth", "limt": 5}, "'limt'"),
    "a paging word the tool does not use": ("read_session", {"ref": AUTH, "page": 2}, "'page'"),
    "a filter list_sessions does not have": ("list_sessions", {"project": "/x"}, "'project'"),
    "a name with an escape": ("resolve_session", {"ref": AUTH, "\x1b[2Jx": 1}, "'^[[2Jx'"),
}


@pytest.mark.parametrize("case", list(UNKNOWN_ARGUMENTS))
def test_an_argument_the_tool_does_not_have_is_an_error_naming_the_ones_it_has(
    case: str,
) -> None:
    """An argument no tool parameter takes was dropped without a word: ``limt=5``
    answered 10 sessions, ``read_session(page=2)`` the first page, as if asked. It is
    now bad input like a wrong type (one sentence, the arguments there are), and the
    schemas say so (``additionalProperties: false``) for a client that checks first."""
    import asyncio

    from mcp.server.mcpserver.exceptions import ToolError

    from sessiondex.mcp_server.server import build_server
    from sessiondex.mcp_server.service import Settings

    tool, arguments, quoted = UNKNOWN_ARGUMENTS[case]
    server = build_server(_no_index, Settings(cwd="/w"))
    try:
        with pytest.raises(ToolError) as raised:
            asyncio.run(server.call_tool(tool, arguments))
        schemas = {t.name: t.input_schema for t in asyncio.run(server.list_tools())}
    finally:
        server.runner.shutdown()
    message = str(raised.value)
    assert message.startswith(f"bad arguments for {tool}: no argument {quoted}; ")
    assert "\n" not in message and "\x1b" not in message
    assert all(name in message for name in schemas[tool]["properties"])
    assert all(schema["additionalProperties"] is False for schema in schemas.values())


def test_the_resource_list_shows_transcript_text_as_the_cli_does(tmp_path: Path) -> None:
    """The resource list is what a client shows a person (Claude Code's @ menu), but it
    carried a session's title, directory and branch raw: an OSC that retitles the
    terminal, an ESC sequence that clears it, a bidi override. They are made visible
    there, as in an error; the session is still named and reached by its ID."""
    import asyncio

    from sessiondex.mcp_server.server import build_server
    from sessiondex.mcp_server.service import Settings

    tree = ConfigTree(tmp_path / "claude")
    hostile = tree.session(cwd="/w/shop\x1b[2J", git_branch="fix\u202eevil")
    hostile.user("hello")
    hostile.assistant("hi")
    hostile.meta("custom-title", customTitle="title\x1b]0;pwned\x07 \u202eevil")
    hostile.write()
    db = tmp_path / "index.db"
    server = build_server(lambda: Index(db, [tree.root]), Settings(cwd="/w"))
    try:
        resources = asyncio.run(server.list_resources())
    finally:
        server.runner.shutdown()
    (resource,) = [r for r in resources if str(r.uri) == f"session://{hostile.session_id}"]
    assert resource.name == hostile.session_id
    assert resource.title == "title^[]0;pwned^G <U+202E>evil"
    assert resource.description is not None
    assert resource.description.startswith("/w/shop^[[2J · fix<U+202E>evil · last activity ")


def test_the_resource_list_is_bounded_whatever_a_transcript_records(tmp_path: Path) -> None:
    """A session whose branch was 30,000 characters gave a resource description of
    30,000 characters (the list offers 50 sessions: megabytes for a menu line each).
    A description's directory and branch are cut as a tool's answer cuts them."""
    import asyncio

    from sessiondex.mcp_server.server import build_server
    from sessiondex.mcp_server.service import Settings

    tree = ConfigTree(tmp_path / "claude")
    huge = tree.session(cwd="/w/" + "d" * 5000, git_branch="b" * 30_000)
    huge.user("hello")
    huge.assistant("hi")
    huge.meta("custom-title", customTitle="t" * 10_000)
    huge.write()
    server = build_server(lambda: Index(tmp_path / "index.db", [tree.root]), Settings(cwd="/w"))
    try:
        (resource,) = asyncio.run(server.list_resources())
    finally:
        server.runner.shutdown()
    assert resource.description is not None and resource.title is not None
    assert len(resource.description) <= 1000 and len(resource.title) <= 300
    assert "[… cut:" in resource.description and "last activity" in resource.description


def test_search_takes_the_query_length_the_web_view_takes() -> None:
    """One limit for the servers' searches (sessiondex.query.limits): the tool's schema
    says it, and one character more is bad input, answered without a search."""
    import asyncio

    from mcp.server.mcpserver.exceptions import ToolError

    from sessiondex.mcp_server.server import build_server
    from sessiondex.mcp_server.service import Settings
    from sessiondex.query.limits import MAX_QUERY_CHARS

    server = build_server(_no_index, Settings(cwd="/w"))
    try:
        schemas = {t.name: t.input_schema for t in asyncio.run(server.list_tools())}
        with pytest.raises(ToolError) as raised:
            asyncio.run(server.call_tool("search_sessions", {"query": "x" * (MAX_QUERY_CHARS + 1)}))
    finally:
        server.runner.shutdown()
    assert schemas["search_sessions"]["properties"]["query"]["maxLength"] == MAX_QUERY_CHARS
    assert f"{MAX_QUERY_CHARS}" in str(raised.value)


UNKNOWN = "00000000-0000-4000-8000-000000000000"
# (the URI read, what the error's message says): every one is the SDK's "resource not
# found" (ResourceNotFoundError), with the URI in the error's data
NOT_FOUND_URIS = [
    (f"session://{UNKNOWN}", f"No conversation found with session ID: {UNKNOWN}"),
    ("session://abcdef12", "No session matches 'abcdef12'"),
    ("session://%20", "ref is empty"),  # malformed: no ID
    ("session://", "ref is empty"),
    ("session://a/b", "Unknown resource: session://a/b"),  # the SDK's own answer
    ("nope://x", "Unknown resource: nope://x"),
]


@pytest.mark.parametrize(("uri", "says"), NOT_FOUND_URIS)
def test_a_missing_or_malformed_resource_is_the_sdks_not_found_error(
    tmp_path: Path, uri: str, says: str
) -> None:
    """Reading ``session://<an ID no session has>`` (or one naming no ID) was JSON-RPC
    -32603, "internal error", as if the server had failed; a client could not tell it
    from a crash. It is now the SDK's resource-not-found error (ResourceNotFoundError:
    -32602 in this SDK, SEP-2164), one line naming what was asked, as for a URI no
    resource takes; a session that is there is still read."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    from sessiondex.mcp_server.server import build_server
    from sessiondex.mcp_server.service import Settings

    tree = ConfigTree(tmp_path / "claude")
    there = tree.session(cwd="/w/shop")
    there.user("hello")
    there.assistant("hi")
    there.write()
    server = build_server(lambda: Index(tmp_path / "index.db", [tree.root]), Settings(cwd="/w"))

    async def scenario() -> None:
        async with Client(server, mode="legacy") as client:
            with pytest.raises(MCPError) as raised:
                await client.read_resource(uri)
            contents = (await client.read_resource(f"session://{there.session_id}")).contents
            assert "hello" in contents[0].text  # type: ignore[union-attr]
        error = raised.value
        assert (error.code, error.data) == (INVALID_PARAMS, {"uri": uri}), error.error
        assert says in error.message and "\n" not in error.message, error.message

    try:
        run(scenario)
    finally:
        server.runner.shutdown()
