"""``PostgresSessionStore`` against a real PostgreSQL: the SDK's own conformance suite,
exact round trips, retries, mtimes, many writers, and resume through the SDK."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from sessiondex.store.sdk_store import PostgresSessionStore
from tests.pgserver import database_url, require_database, truncate

KEY = {"project_key": "-home-dev-shop", "session_id": "3f2a9c1e-0000-4000-8000-000000000001"}
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def pg_dsn() -> str:
    return require_database()


def run(dsn: str, body: Callable[[PostgresSessionStore], Awaitable[Any]]) -> Any:
    """Run ``body(store)`` on a fresh store in its own event loop, then close it."""

    async def main() -> Any:
        async with PostgresSessionStore(dsn) as store:
            return await body(store)

    return asyncio.run(main())


def test_conformance_suite_passes_with_nothing_skipped(pg_dsn: str) -> None:
    testing = pytest.importorskip("claude_agent_sdk.testing")
    conformance = pytest.importorskip("claude_agent_sdk.testing.session_store_conformance")

    stores: list[PostgresSessionStore] = []

    def make() -> PostgresSessionStore:
        truncate(pg_dsn)
        stores.append(PostgresSessionStore(pg_dsn))
        return stores[-1]

    async def main() -> None:
        try:
            probe = make()
            for method in ("list_sessions", "list_session_summaries", "delete", "list_subkeys"):
                assert conformance._has_optional(probe, method, frozenset()), method
            await testing.run_session_store_conformance(make)
        finally:
            for store in stores:
                await store.close()

    asyncio.run(main())


# Values a JSON round trip keeps and a careless store would not.
EXACT = [
    {"type": "user", "uuid": "u1", "b": 1, "a": 2, "message": {"content": "héllo 🚀 日本語"}},
    {"type": "x", "big": 2**70, "neg": -(2**63), "f": 0.1, "e": 1e-300, "nul": "a\u0000b"},
    {"type": "x", "surrogate": "\ud800 lone", "nested": [[], {}, [None, True, False]]},
    {"type": "x", "uuid": "", "emptykey": {"": "v"}, "ls": "\u2028\u2029"},
]


def test_entries_round_trip_exactly_with_key_order(pg_dsn: str) -> None:
    truncate(pg_dsn)

    async def body(store: PostgresSessionStore) -> list[Any] | None:
        await store.append(KEY, EXACT)
        return await store.load(KEY)

    loaded = run(pg_dsn, body)
    assert loaded == EXACT
    assert [list(e) for e in loaded] == [list(e) for e in EXACT]  # key order kept
    assert json.dumps(loaded) == json.dumps(EXACT)


def test_retried_batch_is_stored_once_and_uuidless_entries_are_appended(pg_dsn: str) -> None:
    truncate(pg_dsn)
    batch = [
        {"type": "user", "uuid": "a", "n": 1},
        {"type": "custom-title", "customTitle": "T", "sessionId": KEY["session_id"]},
        {"type": "assistant", "uuid": "b", "n": 2},
        {"type": "assistant", "uuid": "b", "n": 2},  # the same uuid twice in one batch
    ]

    async def body(store: PostgresSessionStore) -> list[Any] | None:
        await store.append(KEY, batch)
        await store.append(KEY, batch)  # a retry after a lost acknowledgement
        return await store.load(KEY)

    loaded = run(pg_dsn, body)
    assert loaded is not None
    assert [e.get("uuid") for e in loaded] == ["a", None, "b", None]


def test_mtimes_are_epoch_ms_and_strictly_increasing(pg_dsn: str) -> None:
    truncate(pg_dsn)

    async def body(store: PostgresSessionStore) -> list[int]:
        seen = []
        for n in range(20):
            await store.append(KEY, [{"type": "x", "n": n}])
            [listed] = await store.list_sessions(KEY["project_key"])
            seen.append(listed["mtime"])
        return seen

    mtimes = run(pg_dsn, body)
    assert all(m > 1e12 for m in mtimes)
    assert all(b > a for a, b in zip(mtimes, mtimes[1:]))


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from sessiondex.store import PostgresSessionStore

    dsn, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    key = {"project_key": "-p", "session_id": "s"}

    async def main():
        async with PostgresSessionStore(dsn) as store:
            for n in range(count):
                await store.append(key, [
                    {"type": "user", "uuid": f"{name}-{n}", "w": name, "n": n},
                    {"type": "tag", "tag": f"{name}-{n}", "w": name, "n": n},
                ])
                await store.append({**key, "subpath": f"subagents/agent-{name}"},
                                   [{"type": "user", "uuid": f"{name}-{n}", "n": n}])

    asyncio.run(main())
    """
)


@pytest.mark.long
def test_many_writer_processes_at_once(pg_dsn: str) -> None:
    """Three processes append to one key (and their own subkeys) at once: every entry
    lands exactly once, each writer's entries in its own order, mtimes distinct."""
    truncate(pg_dsn)
    count = 6
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, pg_dsn, name, str(count)], cwd=REPO)
        for name in ("w1", "w2", "w3")
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0

    async def body(store: PostgresSessionStore) -> tuple[Any, ...]:
        key = {"project_key": "-p", "session_id": "s"}
        subs = await store.list_subkeys(key)
        return await store.load(key), subs, await store.list_session_summaries("-p")

    loaded, subkeys, summaries = run(pg_dsn, body)
    assert len(loaded) == 3 * count * 2
    for name in ("w1", "w2", "w3"):
        mine = [e["n"] for e in loaded if e["w"] == name and e["type"] == "user"]
        assert mine == list(range(count))
    assert subkeys == [f"subagents/agent-{n}" for n in ("w1", "w2", "w3")]
    # the summary fold was serialized: its tag is the last tag entry stored
    last_tag = [e for e in loaded if e["type"] == "tag"][-1]["tag"]
    assert summaries[0]["data"]["tag"] == last_tag


def _transcript(session_id: str, cwd: str) -> list[dict[str, Any]]:
    first, second = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
    common = {"sessionId": session_id, "cwd": cwd, "gitBranch": "fix/auth", "entrypoint": "sdk-py"}
    return [
        {
            "parentUuid": None,
            "isSidechain": False,
            "type": "user",
            "message": {"role": "user", "content": "fix the websocket heartbeat"},
            "uuid": first,
            "timestamp": "2026-11-01T10:00:00.000Z",
            **common,
        },
        {
            "parentUuid": first,
            "isSidechain": False,
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            "uuid": second,
            "timestamp": "2026-11-01T10:00:05.000Z",
            **common,
        },
        {"type": "custom-title", "customTitle": "Heartbeat fix", "sessionId": session_id},
    ]


def test_resume_through_the_store(pg_dsn: str, tmp_path: Path) -> None:
    """What the SDK does before spawning ``claude --resume`` with a store: load the
    session (and its subagents) into a temporary config dir; and the store-reading
    helpers, as the SDK's InMemorySessionStore tests use them."""
    sdk = pytest.importorskip("claude_agent_sdk")
    resume = pytest.importorskip("claude_agent_sdk._internal.session_resume")
    sessions = pytest.importorskip("claude_agent_sdk._internal.sessions")

    truncate(pg_dsn)
    cwd = tmp_path / "shop"
    cwd.mkdir()
    sid = "5e551000-aaaa-4bbb-8ccc-000000000042"
    key = {"project_key": sessions.project_key_for_directory(str(cwd)), "session_id": sid}
    entries = _transcript(sid, str(cwd))
    sub = [{**entries[0], "isSidechain": True, "agentId": "a1"}]
    meta = {"type": "agent_metadata", "agentType": "general-purpose", "toolUseId": "toolu_1"}

    async def body(store: PostgresSessionStore) -> dict[str, Any]:
        await store.append(key, entries)
        await store.append({**key, "subpath": "subagents/agent-a1"}, [*sub, meta])
        await sdk.tag_session_via_store(store, sid, "review", directory=str(cwd))
        options = sdk.ClaudeAgentOptions(session_store=store, resume=sid, cwd=str(cwd))
        materialized = await resume.materialize_resume_session(options)
        assert materialized is not None
        try:
            project = materialized.config_dir / "projects" / key["project_key"]
            main = [
                json.loads(line) for line in (project / f"{sid}.jsonl").read_text().splitlines()
            ]
            agent = project / sid / "subagents" / "agent-a1.jsonl"
            return {
                "main": main,
                "agent": [json.loads(line) for line in agent.read_text().splitlines()],
                "meta": json.loads(agent.with_name("agent-a1.meta.json").read_text()),
                "resume": materialized.resume_session_id,
                "messages": await sdk.get_session_messages_from_store(
                    store, sid, directory=str(cwd)
                ),
                "listed": await sdk.list_sessions_from_store(store, directory=str(cwd)),
            }
        finally:
            await materialized.cleanup()

    got = run(pg_dsn, body)
    assert got["resume"] == sid
    assert got["main"][:3] == entries and got["main"][3]["type"] == "tag"
    assert got["agent"] == sub
    assert got["meta"] == {"agentType": "general-purpose", "toolUseId": "toolu_1"}
    assert [m.uuid for m in got["messages"]] == [entries[0]["uuid"], entries[1]["uuid"]]
    [info] = got["listed"]
    assert (info.session_id, info.summary, info.tag, info.git_branch) == (
        sid,
        "Heartbeat fix",
        "review",
        "fix/auth",
    )


def test_sdk_writes_fill_the_team_index_rows(pg_dsn: str, tmp_path: Path) -> None:
    """An SDK-mirrored session gets the same derived fields as a SQLite index row, so
    team search can find it."""
    import psycopg

    truncate(pg_dsn)
    sid = "5e551000-aaaa-4bbb-8ccc-000000000043"
    key = {"project_key": "-home-dev-shop", "session_id": sid}
    run(pg_dsn, lambda store: store.append(key, _transcript(sid, "/home/dev/shop")))
    with psycopg.connect(pg_dsn) as conn:
        row = conn.execute(
            "SELECT custom_title, cwd, git_branch, message_count, entrypoint, source,"
            " pushed_by_host IS NOT NULL, first_prompt, created_ms < last_activity_ms"
            " FROM sessions WHERE session_id = %s",
            [sid],
        ).fetchone()
        hits = conn.execute(
            "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_ref"
            " WHERE s.session_id = %s AND m.tsv @@ websearch_to_tsquery('simple', 'heartbeat')",
            [sid],
        ).fetchone()
        title_hit = conn.execute(
            "SELECT ts_rank(search, websearch_to_tsquery('simple', 'heartbeat')) > 0"
            " FROM sessions WHERE session_id = %s",
            [sid],
        ).fetchone()
    assert row == (
        "Heartbeat fix",
        "/home/dev/shop",
        "fix/auth",
        2,
        "sdk-py",
        "sdk",
        True,
        "fix the websocket heartbeat",
        True,
    )
    assert hits == (1,) and title_hit == (True,)


def test_a_pool_per_event_loop(pg_dsn: str) -> None:
    """The options object outlives event loops (``asyncio.run`` per call in scripts)."""
    truncate(pg_dsn)
    store = PostgresSessionStore(pg_dsn)

    async def write(n: int) -> None:
        await store.append(KEY, [{"type": "x", "n": n}])
        await store.close()

    for n in range(2):
        asyncio.run(write(n))

    async def read() -> Any:
        try:
            return await store.load(KEY)
        finally:
            await store.close()

    assert asyncio.run(read()) == [{"type": "x", "n": 0}, {"type": "x", "n": 1}]


# (project_key, session_id) a store writer may send → nothing outside the scratch dir
HOSTILE_KEYS = [
    pytest.param("{victim}", "4045e6f8-686a-5d64-9f2b-e0830c6ab007", id="absolute-key"),
    pytest.param(
        "../../../../../../..{escaped}", "e5ca9e00-0000-4000-8000-000000000001", id="dotdot-key"
    ),
]


@pytest.mark.parametrize(("project_key", "session_id"), HOSTILE_KEYS)
def test_reading_a_stored_session_writes_only_into_its_scratch_dir(
    pg_dsn: str, tmp_path: Path, project_key: str, session_id: str
) -> None:
    """``show`` writes a stored session's entries to a scratch dir to render them; the
    key and ID come from whoever wrote to the store. An absolute or ``..`` key replaced a
    local transcript or wrote a ``.jsonl`` anywhere the reader could write."""
    from sessiondex import Index

    truncate(pg_dsn)
    victim_dir = tmp_path / "victim" / "projects" / "-home-dev-shop"
    victim_dir.mkdir(parents=True)
    victim = victim_dir / "4045e6f8-686a-5d64-9f2b-e0830c6ab007.jsonl"
    victim.write_text('{"type":"user","message":{"role":"user","content":"precious"}}\n')
    escaped = tmp_path / "escaped"
    key = {
        "project_key": project_key.format(victim=victim_dir, escaped=escaped),
        "session_id": session_id.format(escaped=escaped),
    }
    sid = key["session_id"]
    entries = _transcript(sid, "/home/u/y")
    run(pg_dsn, lambda store: store.append(key, entries))
    before = victim.read_bytes()
    with Index(database_url(pg_dsn), [tmp_path / "claude"]) as index:
        found = index.list(scope="all", all_kinds=True)  # an SDK session (sdk-py)
        assert len(found) == 1
        shown = index.show(found[0]["session_id"], format="text")
    assert "fix the websocket heartbeat" in shown
    assert victim.read_bytes() == before
    assert not escaped.exists()
    assert not list(tmp_path.rglob("*.jsonl"))[1:]  # the victim's alone


def test_a_subagent_stored_before_its_session_breaks_no_answer(pg_dsn: str) -> None:
    """An SDK app may mirror a subagent before its main transcript: the store then holds
    a session row without a main file (no mtime), which ``list``/``search`` with
    ``--all-kinds`` ended in a TypeError for everyone reading the store."""
    from sessiondex import Index

    truncate(pg_dsn)
    sid = "0ab00000-0000-4000-8000-000000000001"
    key = {"project_key": "-home-u-orph", "session_id": sid, "subpath": "subagents/agent-a1"}
    entry = {
        "parentUuid": None,
        "isSidechain": True,
        "agentId": "a1",
        "type": "user",
        "cwd": "/home/u/orph",
        "sessionId": sid,
        "message": {"role": "user", "content": "sub task orphword"},
        "uuid": "0ab00000-0000-4000-8000-0000000000a1",
        "timestamp": "2026-11-21T10:00:00.000Z",
    }
    run(pg_dsn, lambda store: store.append(key, [entry]))
    with Index(database_url(pg_dsn)) as index:
        listed = index.list(scope="all", all_kinds=True)
        found = index.search("orphword", scope="all", all_kinds=True)
    assert all(isinstance(o["session_id"], str) for o in listed + found)


def test_a_lone_surrogate_in_an_appended_entry_loses_nothing(pg_dsn: str) -> None:
    """Claude Code cuts ``lastPrompt`` at 200 UTF-16 units, which can leave half an
    emoji; the SDK hands such an entry on as a lone surrogate. The batch failed whole
    (the derived rows could not be encoded), so the good entries beside it were lost."""
    truncate(pg_dsn)
    sid = "5e000000-0000-4000-8000-000000000001"
    key = {"project_key": "-home-u-sdk", "session_id": sid}
    user = {**_transcript(sid, "/home/u/sdk")[0], "uuid": "5e000000-0000-4000-8000-0000000000aa"}
    half = "\ud83d"  # half of 🚀
    last = {"type": "last-prompt", "lastPrompt": f"deploy {half}", "sessionId": sid}
    title = {"type": "custom-title", "customTitle": f"half {half}", "sessionId": sid}

    async def body(store: PostgresSessionStore) -> Any:
        await store.append(key, [user, last, title])
        return await store.load(key)

    loaded = run(pg_dsn, body)
    assert loaded is not None and len(loaded) == 3
    assert loaded[1]["lastPrompt"] == "deploy \ud83d"  # stored exactly


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "custom-title", "customTitle": "half \ud83d"},
        {"type": "tag", "tag": "\udfff lone"},
        {"type": "last-prompt", "lastPrompt": "deploy \ud83d"},
        {"type": "custom-title", "customTitle": "nul \x00 kept"},
    ],
)
def test_the_summary_is_the_sdks_own_fold_of_the_entries_as_given(
    pg_dsn: str, entry: dict[str, Any]
) -> None:
    """``list_session_summaries`` gives what the SDK's own store folds from the same
    appends: before, the fold read the copy made for the derived rows, whose lone
    surrogates are U+FFFD, so ``list_sessions_from_store`` showed a title the app never
    wrote."""
    InMemorySessionStore = pytest.importorskip("claude_agent_sdk").InMemorySessionStore

    truncate(pg_dsn)
    sid = "5e000000-0000-4000-8000-000000000002"
    key = {"project_key": "-home-u-sdk", "session_id": sid}
    batch = [*_transcript(sid, "/home/u/sdk")[:1], {**entry, "sessionId": sid}]

    async def summaries(store: Any) -> list[dict[str, Any]]:
        await store.append(key, batch)
        found = await store.list_session_summaries("-home-u-sdk")
        return [{k: v for k, v in s.items() if k != "mtime"} for s in found]

    async def in_memory() -> list[dict[str, Any]]:
        return await summaries(InMemorySessionStore())

    assert run(pg_dsn, summaries) == asyncio.run(in_memory())


def test_an_entry_of_json_null_is_loaded_back(pg_dsn: str) -> None:
    """Entries are stored exactly, whatever an app appends: a JSON ``null`` among them
    was dropped by ``load`` (taken for the no-entry row of a transcript without any),
    where the SDK's own stores give it back."""
    truncate(pg_dsn)
    appended: list[Any] = [{"type": "x", "uuid": "n-1"}, None, {"type": "x", "uuid": "n-2"}]

    async def body(store: PostgresSessionStore) -> Any:
        await store.append(KEY, appended)
        return await store.load(KEY)

    assert run(pg_dsn, body) == appended


def test_the_sdk_store_takes_a_url_with_any_case_scheme(pg_dsn: str) -> None:
    """As ``push`` and ``--db`` do: libpq took only the lower-case spelling, and the
    pool logged its error with the whole DSN, password too, until it timed out."""
    truncate(pg_dsn)
    url = database_url(pg_dsn)
    shouting = "POSTGRESQL" + url[len("postgresql") :]

    async def body(store: PostgresSessionStore) -> Any:
        await store.append(KEY, _transcript(KEY["session_id"], "/home/dev/shop"))
        return await store.load(KEY)

    assert len(run(shouting, body) or []) == 3


@pytest.mark.parametrize("subpath", [".", "/", "./", "subagents/.."])
def test_a_stored_subpath_never_stands_in_for_the_main_transcript(
    pg_dsn: str, tmp_path: Path, subpath: str
) -> None:
    """A subpath that names nothing under the session (``.``, ``/``) was written as
    the main transcript, so ``show`` displayed whatever it held instead."""
    from sessiondex import Index

    truncate(pg_dsn)
    sid = KEY["session_id"]
    run(pg_dsn, lambda store: store.append(KEY, _transcript(sid, "/home/dev/shop")))
    spoof = {
        **_transcript(sid, "/home/dev/shop")[0],
        "uuid": "5b00f000-0000-4000-8000-000000000001",
    }
    spoof["message"] = {"role": "user", "content": "SPOOFED main"}
    run(pg_dsn, lambda store: store.append({**KEY, "subpath": subpath}, [spoof]))
    with Index(database_url(pg_dsn), [tmp_path / "claude"]) as index:
        shown = index.show(sid, format="text")
    assert "fix the websocket heartbeat" in shown and "SPOOFED" not in shown


def test_a_session_whose_id_claude_cannot_resume_is_not_called_archived(
    pg_dsn: str, tmp_path: Path
) -> None:
    """Such a session has no resume line; tables marked it ``[archived]`` and resolve
    said "archived in None; run sessiondex restore" (the null resume line was read as
    "archived")."""
    from click.testing import CliRunner

    from sessiondex.cli.main import cli

    truncate(pg_dsn)
    sid = "my-custom-id"
    key = {"project_key": "-home-dev-shop", "session_id": sid}
    run(pg_dsn, lambda store: store.append(key, _transcript(sid, "/home/dev/shop")))
    url = database_url(pg_dsn)

    def cli_run(*args: str) -> Any:
        return CliRunner().invoke(cli, ["--config-dir", str(tmp_path), "--db", url, *args])

    listed = cli_run("list", "--scope", "all", "--all-kinds")
    assert listed.exit_code == 0 and "Heartbeat fix" in listed.output
    assert "archived" not in listed.output
    resolved = cli_run("resolve", "Heartbeat fix", "--cwd", "/home/dev/shop")
    assert resolved.exit_code == 0, resolved.output
    assert "archived" not in resolved.output and "restore" not in resolved.output
    assert "not a session ID" in resolved.output
    as_json = cli_run("resolve", "Heartbeat fix", "--cwd", "/home/dev/shop", "--json")
    assert json.loads(as_json.stdout)[0]["resume_command"] is None
    # and it resolves by its ID, as MCP's answers name it ("more" footers)
    by_id = cli_run("resolve", sid, "--cwd", "/home/dev/shop", "--json")
    assert by_id.exit_code == 0, by_id.output
    assert json.loads(by_id.stdout)[0]["session_id"] == sid


def test_a_delete_leaves_a_tombstone_and_a_later_append_starts_afresh(pg_dsn: str) -> None:
    """Every delete (the SDK's own ``delete_session_via_store`` too, and a subkey's)
    records who deleted what, so ``push`` does not bring it back. An append after the
    delete is the app's new write: stored from scratch, as the SDK's own stores do; the
    tombstone stays (it keeps the local file, with the deleted lines, out of push)."""
    sdk = pytest.importorskip("claude_agent_sdk")
    truncate(pg_dsn)
    sid = KEY["session_id"]
    sub = {**KEY, "subpath": "subagents/agent-x"}
    later = {"type": "user", "uuid": "u-after", "message": {"content": "after the delete"}}

    async def body(store: PostgresSessionStore) -> Any:
        await store.append(KEY, _transcript(sid, "/home/dev/shop"))
        await store.append(sub, [{"type": "user", "uuid": "u-sub"}])
        await store.delete(sub)
        subkeys = await store.list_subkeys(KEY)
        await sdk.delete_session_via_store(store, sid, directory="/home/dev/shop")
        await store.delete(KEY)  # again: no error, the tombstone says the latest
        gone = await store.load(KEY), await store.list_sessions(KEY["project_key"])
        await store.append(KEY, [later])
        return subkeys, gone, await store.load(KEY), await store.load(sub)

    subkeys, gone, loaded, loaded_sub = run(pg_dsn, body)
    assert subkeys == [] and gone == (None, [])
    assert loaded == [later] and loaded_sub is None
    import psycopg

    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            "SELECT project_key, session_id, subpath, deleted_by_host IS NOT NULL"
            " FROM deleted_sessions ORDER BY subpath"
        ).fetchall()
    assert rows == [
        (KEY["project_key"], sid, "", True),
        (KEY["project_key"], sid, "subagents/agent-x", True),
    ]


@pytest.mark.parametrize(
    "key",
    [
        pytest.param({"project_key": "-home\x00x", "session_id": KEY["session_id"]}, id="project"),
        pytest.param({"project_key": "-home-x", "session_id": "ab\x00cd"}, id="session"),
        pytest.param({**KEY, "subpath": "subagents/agent-\x00a"}, id="subpath"),
    ],
)
def test_a_key_holding_nul_is_a_clear_error_to_write_and_never_stored_to_read(
    pg_dsn: str, key: dict[str, str]
) -> None:
    """PostgreSQL text holds no NUL: every method failed with psycopg's DataError
    ("PostgreSQL text fields cannot contain NUL (0x00) bytes"). No such key can be
    stored, so a read answers as for a key never written, a delete has nothing to do,
    and an append is a ValueError naming the field (mapping the NUL to a stand-in would
    make two keys one)."""
    from sessiondex.store.sdk_store import UnstorableKey

    truncate(pg_dsn)
    entry = {"type": "user", "uuid": "3f2a9c1e-0000-4000-8000-0000000000aa"}

    async def body(store: PostgresSessionStore) -> Any:
        with pytest.raises(UnstorableKey, match="NUL") as raised:
            await store.append(key, [entry])
        assert isinstance(raised.value, ValueError)
        field = next(name for name, value in key.items() if "\x00" in value)
        assert f"{field} " in str(raised.value)
        return (
            await store.load(key),
            await store.list_sessions(key["project_key"]),
            await store.list_session_summaries(key["project_key"]),
            await store.list_subkeys(key),
            await store.delete(key),
            await store.delete_all([key, KEY]),
        )

    assert run(pg_dsn, body) == (None, [], [], [], None, None)
