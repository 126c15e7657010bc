"""Team search: ``--db postgresql://…`` answers ``list``, ``search``, ``resolve``,
``from-pr`` and ``show`` from the team store with the local index's semantics and output.

The promise is "one query interface, two backends", so the tests ask the same question
of both: the fixture tree is indexed locally and pushed into a fresh PostgreSQL
database, and each answer must name the same sessions in the same order (search: the
same set; its scores are bm25 against ts_rank). Then what only the store has: a session
an Agent SDK app wrote through ``PostgresSessionStore`` is found, repositories are
their origin remote (two clones at different paths are one repository), and
``--user``/``--host`` say who pushed.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sessiondex import Index
from sessiondex.cli.main import cli
from sessiondex.query.dialect import TS_CONFIG
from sessiondex.store.push import TOOL_OUTPUT_OMITTED
from sessiondex.store.schema import TS_CONFIG as STORE_TS_CONFIG
from tests.builders import ConfigTree, copy_fixtures
from tests.pgserver import database_url, require_database, truncate

ZERO_BYTE = "21f67f9f-95c3-52a4-9bd5-db482d19552d"  # shop-empty: nothing to push
# blog-gitlab ends in a truncated line: push stores complete lines, so its size there
# is the bytes before it (the partial line is sent once it is complete).
TRUNCATED = "7f58f8d1-d517-5d78-bdb3-ff37365184fc"
SHOP = "/home/dev/shop"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """``(config dir, SQLite path, store URL)``: the fixture tree, indexed and pushed."""
    dsn = require_database("team query world")
    truncate(dsn)
    root = copy_fixtures(tmp_path_factory.mktemp("team"))
    url = database_url(dsn)
    pushed = CliRunner().invoke(cli, ["--config-dir", str(root), "push", "--to", url])
    assert pushed.exit_code == 0, pushed.output
    return root, str(root.parent / "index.db"), url


def run(root: Path, db: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--config-dir", str(root), "--db", db, *args])


def both(world: tuple[Path, str, str], *args: str) -> tuple[Any, Any]:
    """The JSON answer of the local index and of the team store (same exit code)."""
    root, local, team = world
    a, b = run(root, local, *args, "--json"), run(root, team, *args, "--json")
    assert a.exit_code == b.exit_code, (a.output, b.output)
    return json.loads(a.stdout or "null"), json.loads(b.stdout or "null")


def ids(rows: Any) -> list[str]:
    rows = rows if isinstance(rows, list) else [rows]
    return [r["session_id"] for r in rows if r and r["session_id"] != ZERO_BYTE]


def test_text_search_configs_agree() -> None:
    # query/ and store/ may not import each other: the constant is kept twice.
    assert TS_CONFIG == STORE_TS_CONFIG
    from sessiondex.query.teamdb import READ_SCHEMA_VERSION
    from sessiondex.store.schema import SCHEMA_VERSION

    assert READ_SCHEMA_VERSION == SCHEMA_VERSION


@pytest.mark.parametrize(
    "args",
    [
        ("list", "--scope", "all"),
        ("list", "--scope", "all", "--all-kinds"),  # bar the zero-byte file: no entries
        ("list", "--cwd", SHOP),
        ("list", "--cwd", SHOP, "--scope", "repo", "--branch", "main"),
        ("list", "--scope", "all", "--since", "2026-10-20"),
        ("list", "--scope", "all", "--limit", "3"),
        ("from-pr", "12", "--scope", "all"),
        ("from-pr", "--scope", "all"),
        ("from-pr", "https://github.com/acme/shop/pull/12"),
        ("resolve", "Auth refactor", "--cwd", SHOP),
        ("resolve", "4045e6f8", "--cwd", SHOP),
        ("resolve", "4045e6f8-686a-5d64-9f2b-e0830c6ab007", "--cwd", SHOP),
        ("resolve", "4045e6f8-686a-5d64-9f2b-e0830c6ab007", "--cwd", "/elsewhere"),
    ],
)
def test_same_sessions_in_the_same_order(world: tuple[Path, str, str], args: tuple[str]) -> None:
    local, team = both(world, *args)
    assert ids(local), "the question must have an answer to compare"
    assert ids(team) == ids(local)


def test_same_session_objects(world: tuple[Path, str, str]) -> None:
    """Not only the order: every field of every session object (the store keeps the
    pushed file's path, config dir, size and mtime; the size is the file's, a last line
    still being written included, as the local index reports it)."""
    local, team = both(world, "list", "--scope", "all")
    assert TRUNCATED in ids(local)
    assert team == local


@pytest.mark.parametrize(
    "query",
    [
        "auth",
        "login cookie",
        "expired session",
        "блог",
        "reconcil",
        "refactr",
        "auth zebra",
        "12",
        # As FTS5's unicode61 (remove_diacritics 2) reads text, not PostgreSQL's parser:
        "resume",  # "résumé" in a title: diacritics folded
        "cafe",
        "CAFÉ",
        "x-docs",  # a hyphenated word is its words
        "feature-x",
        "and",  # a word inside a path ("…/payments-and-billing/…")
        "🚀",  # no word at all: looked for as typed in the names (query.search.symbol_search)
    ],
)
def test_search_finds_the_same_sessions(world: tuple[Path, str, str], query: str) -> None:
    local, team = both(world, "search", query, "--scope", "all")
    if query == "auth zebra":  # partial matches: the table's alone, so asked of Index
        from sessiondex import Index

        root, local_db, team_url = world
        outcomes = []
        for db in (local_db, team_url):
            with Index(db, [root], refresh=False) as index:
                outcomes.append(index.search_outcome(query, scope="all"))
        assert local == team == []
        assert outcomes[0].kind == outcomes[1].kind == "partial"
        local, team = outcomes[0].rows, outcomes[1].rows
    assert ids(local), "the question must have an answer to compare"
    assert set(ids(team)) == set(ids(local))
    # The same kind of answer (match, partial or the typo fallback) for each session.
    assert {r["matched_by"] for r in team} == {r["matched_by"] for r in local}


def test_search_snippets_mark_the_match(world: tuple[Path, str, str]) -> None:
    root, _, team = world
    rows = json.loads(run(root, team, "search", "login", "--scope", "all", "--json").stdout)
    assert rows and all("[login]" in r["snippet"].lower() for r in rows)
    assert rows[0]["matched_by"] == "title"  # "Fix login 500 …", the AI title


def test_title_hits_rank_above_message_hits(world: tuple[Path, str, str]) -> None:
    """Weighted tsvector: a session named for the words comes before one that only
    talks about them."""
    local, team = both(world, "search", "auth", "--scope", "all")
    titled = {r["session_id"] for r in local if r["matched_by"] == "title"}
    assert titled and {r["session_id"] for r in team if r["matched_by"] == "title"} == titled
    # bm25 and ts_rank order the title hits each their own way; both put them first
    kinds = [r["matched_by"] == "title" for r in team]
    assert kinds == sorted(kinds, reverse=True) and team[0]["matched_by"] == "title"


def test_show_renders_the_stored_entries(world: tuple[Path, str, str]) -> None:
    root, local, team = world
    for session in ("4045e6f8-686a-5d64-9f2b-e0830c6ab007", "0299d474"):
        for fmt in ("md", "text", "json"):
            args = ("show", session, "--format", fmt, "--subagents", "--cwd", "/home/dev/shop")
            a, b = run(root, local, *args), run(root, team, *args)
            assert b.exit_code == a.exit_code == 0, b.output
            if fmt == "json":  # json carries tool results, which push leaves out
                assert _without_tool_output(json.loads(b.stdout)) == _without_tool_output(
                    json.loads(a.stdout)
                )
            else:
                assert b.stdout == a.stdout
    # Tool outputs stay on the machine unless pushed with --with-tools; --tools says so.
    args = ("show", "4045e6f8-686a-5d64-9f2b-e0830c6ab007", "--format", "text", "--tools")
    assert TOOL_OUTPUT_OMITTED in run(root, team, *args).stdout


def test_show_of_a_subagent_path_shows_that_subagent_from_the_store(
    world: tuple[Path, str, str],
) -> None:
    """A subagent transcript's path showed the session's main conversation from the
    store, while the local index showed the subagent."""
    root, local, team = world
    subagent = next((root / "projects").glob("*/*/subagents/agent-*.jsonl"))
    for fmt in ("text", "md"):
        a = run(root, local, "show", str(subagent), "--format", fmt)
        b = run(root, team, "show", str(subagent), "--format", fmt)
        assert a.exit_code == b.exit_code == 0, b.output
        assert "subagent" in a.stdout and b.stdout == a.stdout


def _without_tool_output(value: Any) -> Any:
    """``value`` with every tool result's content as push stores it by default."""
    if isinstance(value, list):
        return [_without_tool_output(v) for v in value]
    if isinstance(value, dict):
        if value.get("type") == "tool_result":
            return {**value, "content": TOOL_OUTPUT_OMITTED}
        return {k: _without_tool_output(v) for k, v in value.items() if k != "toolUseResult"}
    return value


def test_index_api_routes_a_dsn_to_the_store(world: tuple[Path, str, str]) -> None:
    root, local, team = world
    with Index(local, [root]) as here, Index(team, [root]) as there:
        assert ids(there.list(scope="all")) == ids(here.list(scope="all"))
        assert there.resolve("Auth refactor", cwd=SHOP).session["title"] == "Auth refactor"
        assert "Auth refactor" in there.show("Auth refactor", cwd=SHOP, format="md")
        there.refresh()  # nothing to do: push fills the store
        with pytest.raises(ValueError, match="read-only"):
            there.rename("Auth refactor", "x", cwd=SHOP)


def test_sessiondex_db_may_name_the_store(
    world: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, local, team = world
    monkeypatch.setenv("SESSIONDEX_DB", team)
    result = CliRunner().invoke(
        cli, ["--config-dir", str(root), "list", "--scope", "all", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert ids(json.loads(result.stdout)) == ids(both(world, "list", "--scope", "all")[0])
    with Index(config_dirs=[root]) as index:
        assert index.team_dsn == team and index.db_path is None


@pytest.mark.parametrize("query", ["(((", "!!!"])
def test_a_raw_query_the_store_cannot_parse_points_to_its_own_syntax(
    world: tuple[Path, str, str], query: str
) -> None:
    """Helper 93: the team store's parse error pointed to FTS5's syntax page, though
    ``--raw`` there is ``websearch_to_tsquery`` syntax."""
    root, _, team = world
    result = run(root, team, "search", "--raw", query, "--scope", "all")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: The team store cannot parse"), result.stderr
    assert "websearch_to_tsquery" in result.stderr and "FTS5" not in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_user_and_host_are_a_usage_error_on_sqlite(world: tuple[Path, str, str]) -> None:
    root, local, _ = world
    result = run(root, local, "list", "--user", "ann")
    assert result.exit_code == 2
    assert "--user and --host filter the team store" in result.output


def test_local_only_commands_say_so_on_the_store(world: tuple[Path, str, str]) -> None:
    root, _, team = world
    for args in (
        ("stats",),
        ("index",),
        ("tag", "Auth refactor", "x", "--cwd", SHOP),
        ("serve", "--port", "0"),
        # a teammate's session is no `claude --continue` / `--resume` of this machine
        ("continue", "--cwd", SHOP),
        ("resume", "Auth refactor", "--cwd", SHOP, "--dry-run"),
    ):
        result = run(root, team, *args)
        assert result.exit_code == 1, (args, result.output)
        assert result.output.count("\n") == 1 and "local index" in result.output


def test_message_hits_and_snippets_name_the_same_messages(world: tuple[Path, str, str]) -> None:
    """The web view's and the MCP server's per-message hits (query/hits.py) read the
    team store with its own SQL: the same messages match (order is bm25 against
    ts_rank), and each snippet marks a word of the query."""
    root, local, team = world
    with Index(local, [root]) as here, Index(team, [root]) as there:
        for query in ("auth", "coupon codes"):
            paths = [h["file_path"] for h in here.search(query, scope="all")]
            paths_there = {
                h["session_id"]: h["file_path"] for h in there.search(query, scope="all")
            }
            mine = here.message_hits(query, paths)
            theirs = there.message_hits(query, paths_there.values())
            by_id = {here.resolve(p).session["session_id"]: set(u) for p, u in mine.items()}
            assert mine and by_id == {
                sid: set(theirs[path]) for sid, path in paths_there.items() if path in theirs
            }, query
            snippets = there.message_snippets(query, paths_there.values())
            assert snippets and all(
                "[" in hit["snippet"] and hit["role"] in ("user", "assistant")
                for hits in snippets.values()
                for hit in hits
            ), query


def test_mcp_server_answers_from_the_team_store(world: tuple[Path, str, str]) -> None:
    """``sessiondex --db postgresql://… mcp``: the tools answer from the store as from
    the local index (same sessions found and read), a transcript path is refused (the
    store has none), and --allow-writes is a usage error."""
    from sessiondex.mcp_server.service import SessionService, Settings, UserError

    root, local, team = world
    here = SessionService(lambda: Index(local, [root]), Settings(cwd=SHOP))
    there = SessionService(lambda: Index(team, [root]), Settings(cwd=SHOP))
    try:
        found = [json.loads(s.search_sessions("auth", scope="all")) for s in (here, there)]
        assert sorted(ids(found[0]["sessions"])) == sorted(ids(found[1]["sessions"])) != []
        assert any(row["snippets"] for row in found[1]["sessions"])
        pages = [s.read_session("Auth refactor") for s in (here, there)]
        assert "Auth refactor" in pages[1]
        turns = [p[p.index("[0]") :] for p in pages]
        assert turns[0] == turns[1]
        assert "Auth refactor" in there.session_markdown("4045e6f8-686a-5d64-9f2b-e0830c6ab007")
        path = next((root / "projects").rglob("4045e6f8-*.jsonl"))
        with pytest.raises(UserError, match="by session ID or name"):
            there.read_session(str(path))
    finally:
        here.close()
        there.close()
    refused = run(root, team, "mcp", "--allow-writes")
    assert refused.exit_code == 2 and "read-only" in refused.output


# ------------------------------------------------------------------ store-only
@pytest.fixture
def store() -> str:
    dsn = require_database()
    truncate(dsn)
    return database_url(dsn)


def _clone(path: Path, remote: str) -> str:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "remote", "add", "origin", remote], check=True)
    return str(path)


def _push_as(
    monkeypatch: pytest.MonkeyPatch, tree: ConfigTree, url: str, user: str, host: str
) -> None:
    """``push`` as another teammate on another machine (who pushed is recorded)."""
    monkeypatch.setenv("LOGNAME", user)
    monkeypatch.setenv("USER", user)
    monkeypatch.setattr(socket, "gethostname", lambda: host)
    result = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", url])
    assert result.exit_code == 0, result.output


def _session(tree: ConfigTree, cwd: str, title: str, words: str) -> str:
    # An ID of its own: ConfigTree numbers each tree's sessions from 1, and two people's
    # sessions with one ID would be copies of one session (one row, its newest copy).
    s = tree.session(cwd=cwd, session_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{cwd}#{title}")))
    s.user(words)
    s.assistant("on it")
    s.meta("custom-title", customTitle=title)
    s.write()
    return s.session_id


def test_repositories_are_their_origin_and_who_pushed_is_a_filter(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ann and Bob cloned the same repository at different paths (and spelled its
    remote differently); a third clone's ``--scope repo`` finds both sessions, not the
    unrelated one, and ``--user``/``--host`` pick out who pushed what."""
    ann_dir = _clone(tmp_path / "ann" / "shop", "git@github.com:Acme/Shop.git")
    bob_dir = _clone(tmp_path / "bob" / "src" / "shop", "https://github.com/acme/shop")
    other_dir = _clone(tmp_path / "bob" / "blog", "git@github.com:acme/blog.git")
    mine = _clone(tmp_path / "me" / "shop", "ssh://git@github.com/acme/shop.git")
    ann_tree, bob_tree = ConfigTree(tmp_path / "ann" / ".claude"), ConfigTree(tmp_path / "bob")
    ann = _session(ann_tree, ann_dir, "Ann checkout", "checkout totals are off by one")
    bob = _session(bob_tree, bob_dir, "Bob checkout", "checkout retries on timeout")
    blog = _session(bob_tree, other_dir, "Bob blog", "checkout the blog theme")
    _push_as(monkeypatch, ann_tree, store, "ann", "ann-laptop")
    _push_as(monkeypatch, bob_tree, store, "bob", "bob-desktop")

    def answer(*args: str) -> set[str]:
        result = CliRunner().invoke(cli, ["--db", store, *args, "--cwd", mine, "--json"])
        assert result.exit_code in (0, 1), result.output
        return {r["session_id"] for r in json.loads(result.stdout)}

    assert answer("list", "--scope", "repo") == {ann, bob}
    assert answer("search", "checkout", "--scope", "repo") == {ann, bob}
    assert answer("list", "--scope", "worktree") == set()  # same origin, not this path
    assert answer("list", "--scope", "all") == {ann, bob, blog}
    assert answer("list", "--scope", "all", "--user", "bob") == {bob, blog}
    assert answer("search", "checkout", "--scope", "all", "--host", "ann-laptop") == {ann}
    assert answer("list", "--scope", "repo", "--user", "bob", "--host", "bob-desktop") == {bob}
    result = CliRunner().invoke(cli, ["--db", store, "resolve", "Bob checkout", "--cwd", mine])
    assert result.exit_code == 0 and bob in result.output  # by name, in the repository


def test_a_session_written_through_the_sdk_store_is_searchable(store: str) -> None:
    """An Agent SDK app mirrors its transcript into the store (no push, no file):
    ``search --db`` finds it, and ``show`` renders it from the stored entries."""
    from sessiondex.store.sdk_store import PostgresSessionStore

    session_id = "6f1c2a9e-0b7d-4c1e-9a55-3e2f1d0c9b8a"
    key = {"project_key": "-srv-agents-triage", "session_id": session_id}
    entries = [
        {
            "type": "user",
            "uuid": "8d7e8a52-2c3b-4f7e-a1d0-6c1b0f2e3a41",
            "parentUuid": None,
            "sessionId": session_id,
            "cwd": "/srv/agents/triage",
            "timestamp": "2026-11-20T09:00:00.000Z",
            "message": {"role": "user", "content": "triage the flaky websocket reconnect test"},
        },
        {
            "type": "assistant",
            "uuid": "2b9f0c1d-5e6a-4b7c-8d9e-0f1a2b3c4d5e",
            "parentUuid": "8d7e8a52-2c3b-4f7e-a1d0-6c1b0f2e3a41",
            "sessionId": session_id,
            "cwd": "/srv/agents/triage",
            "timestamp": "2026-11-20T09:00:05.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "The reconnect backoff races the ping."}],
            },
        },
    ]

    async def write() -> None:
        async with PostgresSessionStore(store) as s:
            await s.append(key, entries)

    asyncio.run(write())
    result = CliRunner().invoke(
        cli, ["--db", store, "search", "websocket reconnect", "--scope", "all", "--all-kinds"]
    )
    assert result.exit_code == 0, result.output
    assert session_id[:8] in result.output and "[websocket] [reconnect]" in result.output
    shown = CliRunner().invoke(cli, ["--db", store, "show", session_id, "--format", "text"])
    assert shown.exit_code == 0, shown.output
    assert "The reconnect backoff races the ping." in shown.output


def test_typo_fallback_reaches_old_sessions_through_pg_trgm(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Locally the typo fallback ranks the newest sessions in scope; the store also asks
    its trigram indexes, so a misspelt name finds a session older than that window."""
    import sessiondex.query.search as search_module

    tree = ConfigTree(tmp_path / "claude")
    old = _session(tree, "/srv/app", "Websocket reconnect storm", "the pings race")
    for n in range(3):
        _session(tree, "/srv/app", f"Newer work {n}", "unrelated")
    # Each session's activity is its records' time: make the named one the oldest.
    for path in sorted(tree.root.glob("projects/*/*.jsonl")):
        if old in path.name:
            text = path.read_text().replace("2026-", "2025-")
            path.write_text(text)
    pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
    assert pushed.exit_code == 0, pushed.output
    monkeypatch.setattr(search_module, "FUZZY_CANDIDATES", 2)
    local = str(tmp_path / "index.db")
    query = ("search", "websockt reconect", "--scope", "all", "--json")
    a = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "--db", local, *query])
    b = CliRunner().invoke(cli, ["--db", store, *query])
    assert old not in a.stdout  # outside the newest two
    [hit] = json.loads(b.stdout)
    assert (hit["session_id"], hit["matched_by"]) == (old, "fuzzy")


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/Shop.git",
        "https://x-access-token:ghp_secret@github.com/acme/shop.git",
        "ssh://git@github.com:22/acme/shop",
        "https://GitHub.com/acme/shop/",
        # a query or fragment is no part of the repository (and may hold a token)
        "https://github.com/acme/shop.git?private_token=glpat-secret",
        "https://github.com/acme/shop#readme",
    ],
)
def test_one_repository_however_its_remote_is_spelled(url: str) -> None:
    from sessiondex.transcripts.remotes import normalize_remote

    assert normalize_remote(url) == "github.com/acme/shop"
    assert normalize_remote("/srv/git/shop.git") == "/srv/git/shop"  # a path: as given


def test_an_unreachable_store_is_one_line_without_the_password(tmp_path: Path) -> None:
    (tmp_path / "claude" / "projects").mkdir(parents=True)
    dsn = "postgresql://ann:hunter2@127.0.0.1:1/team"
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tmp_path / "claude"), "--db", dsn, "list"]
    )
    assert result.exit_code == 1
    assert result.output.startswith("Error: cannot open the team store: ")
    assert result.output.count("\n") == 1 and "hunter2" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ("list",),
        ("search", "auth"),
        ("from-pr", "12"),
        ("resolve", "3f2a9c1e"),
        ("show", "3f2a9c1e"),
        ("export", "3f2a9c1e", "-o", "-"),
    ],
    ids=lambda args: args[0],
)
def test_a_team_store_read_without_psycopg_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    """Helper 608: in a venv without the ``team`` extra, ``--db postgresql://… list``
    said ``cannot open the team store: No module named 'psycopg'``, where ``push`` and
    ``store init`` name the extra to install; every read from the store says so too."""
    import sys

    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` now fails
    (tmp_path / "claude" / "projects").mkdir(parents=True)
    dsn = "postgresql://ann:hunter2@127.0.0.1:1/team"
    result = CliRunner().invoke(cli, ["--config-dir", str(tmp_path / "claude"), "--db", dsn, *args])
    assert result.exit_code == 1
    assert result.output.startswith("Error: the team store needs psycopg: ")
    assert "pip install 'sessiondex[team]'" in result.output
    assert result.output.count("\n") == 1 and "hunter2" not in result.output


@pytest.mark.parametrize(
    "args",
    [
        ("rename", "Auth refactor", "Renamed"),
        ("tag", "Auth refactor", "x"),
        ("untag", "Auth refactor"),
        ("fork", "Auth refactor"),
        ("delete", "Auth refactor", "--yes"),
    ],
    ids=lambda a: a[0],
)
def test_a_write_to_the_team_store_says_it_is_read_only_here(
    world: tuple[Path, str, str], args: tuple[str, ...]
) -> None:
    """The store opened fine: the error is that it is written by push and the SDK, not
    that it "cannot be opened" (helper 91)."""
    root, _, team = world
    result = run(root, team, *args, "--cwd", "/home/dev/shop")
    assert result.exit_code == 1
    [line] = result.output.splitlines()
    assert line.startswith("Error: the team store is read-only here: `sessiondex push`"), line


def test_a_read_only_connection_answers(world: tuple[Path, str, str]) -> None:
    """A read replica, or a role with default_transaction_read_only: the store's
    relations were temporary views, which PostgreSQL refuses to create in a read-only
    transaction ("cannot execute CREATE VIEW"); reading needs no object of its own."""
    root, _, team = world
    read_only = (
        team + ("&" if "?" in team else "?") + "options=-c%20default_transaction_read_only%3Don"
    )
    for args in (
        ("list", "--scope", "all", "--json"),
        ("search", "auth", "--scope", "all", "--json"),
        ("from-pr", "https://github.com/acme/shop/pull/12", "--json"),
    ):
        expected, got = run(root, team, *args), run(root, read_only, *args)
        assert got.exit_code == expected.exit_code == 0, got.output
        assert json.loads(got.stdout) == json.loads(expected.stdout)


def test_the_config_files_db_may_name_the_store(
    world: tuple[Path, str, str], tmp_path: Path
) -> None:
    """The README says the config file's ``db`` sets what --db sets, and --db takes a
    postgresql:// DSN; the file refused one ("is not an absolute path")."""
    root, _, team = world
    config = tmp_path / "xdg" / "sessiondex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'db = "{team}"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    from_file = CliRunner().invoke(
        cli, ["--config-dir", str(root), "list", "--scope", "all", "--json"], env=env
    )
    assert from_file.exit_code == 0, from_file.output
    given = run(root, team, "list", "--scope", "all", "--json")
    assert json.loads(from_file.stdout) == json.loads(given.stdout) != []


def test_the_team_store_answers_without_notes_about_this_machine(
    world: tuple[Path, str, str], tmp_path: Path
) -> None:
    """Helper 96: a team-store read with no ~/.claude said "~/.claude does not exist: no
    Claude Code history to read" (the store answered, not this machine), and a search
    that found nothing said nothing at all, where the local index says "No matches."."""
    _, _, team = world
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": None, "SESSIONDEX_CONFIG_DIRS": None}
    listed = CliRunner().invoke(cli, ["--db", team, "list", "--scope", "all"], env=env)
    assert listed.exit_code == 0 and listed.stderr == "", listed.output
    missed = CliRunner().invoke(
        cli, ["--db", team, "search", "zzqqxxword", "--scope", "all"], env=env
    )
    assert missed.exit_code == 1
    assert missed.stderr.strip() == "No matches."  # on stderr, as locally


def test_a_stale_push_does_not_answer_when_a_filter_leaves_out_the_newest(
    tmp_path: Path, store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Helper 99 (P1): on the team store the newest copy was chosen after every filter,
    so a ``__hidden`` tag or a ``--branch`` on the newest push let an older push of the
    same session answer with its old title and words. The local rule holds there too."""
    sid = "66666666-6666-4666-8666-666666666666"
    live_tree, backup_tree = ConfigTree(tmp_path / "live"), ConfigTree(tmp_path / "backup")
    live = live_tree.session(cwd="/w/shop", session_id=sid, git_branch="feat")
    live.user("fresh text")
    live.meta("custom-title", customTitle="NewTitle")
    live.meta("tag", tag="__hidden")
    live.write(mtime=2_000_000_000)
    old = backup_tree.session(cwd="/w/oldshop", session_id=sid, git_branch="dev")
    old.user("stale secretword")
    old.meta("custom-title", customTitle="OldTitle")
    old.write(mtime=1_900_000_000)
    _push_as(monkeypatch, live_tree, store, "ann", "ann-laptop")
    _push_as(monkeypatch, backup_tree, store, "ann", "ann-backup")
    for args in (
        ["list", "--scope", "all"],
        ["list", "--scope", "all", "--include-hidden", "--branch", "dev"],
        ["search", "secretword", "--scope", "all"],
    ):
        result = CliRunner().invoke(cli, ["--db", store, *args, "--json"])
        assert result.exit_code in (0, 1), result.output
        assert json.loads(result.stdout or "[]") == [], (args, result.stdout)


@pytest.mark.parametrize("command", [("list",), ("search", "auth"), ("from-pr", "12")])
def test_a_store_failing_mid_answer_is_one_line_without_the_password(
    world: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    """The store opened, then a query failed (a DBA's statement_timeout on the read-only
    role, a connection dropped): one line, as when it cannot be opened, never a
    traceback."""
    import psycopg

    from sessiondex.query.teamdb import TeamDatabase

    def cancelled(self: TeamDatabase, sql: str, params: Any = ()) -> Any:
        raise psycopg.errors.QueryCanceled("canceling statement due to statement timeout")

    monkeypatch.setattr(TeamDatabase, "execute", cancelled)
    root, _, team = world
    result = run(root, team, *command, "--scope", "all")
    assert result.exit_code == 1, result.output
    assert result.output == (
        "Error: the team store failed to answer: canceling statement due to statement timeout\n"
    )


def test_a_store_migrated_by_a_newer_sessiondex_is_refused_for_reading(
    world: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its tables may have changed under names this version's queries use: said, as a
    push says it, rather than answered wrongly or with a traceback."""
    from sessiondex.query import teamdb

    monkeypatch.setattr(teamdb, "READ_SCHEMA_VERSION", teamdb.READ_SCHEMA_VERSION - 1)
    root, _, team = world
    result = run(root, team, "list", "--scope", "all")
    assert result.exit_code == 1, result.output
    [line] = result.output.splitlines()
    assert "newer than this sessiondex knows" in line and "upgrade sessiondex" in line, line


@pytest.mark.parametrize(
    ("field", "query"),
    [
        ("title", "waffle"),
        ("tag", "quince"),
        ("branch", "zephyr"),
        ("prompt", "marmot"),
    ],
)
def test_a_nul_between_two_words_parts_them_in_both_backends(
    tmp_path: Path, store: str, field: str, query: str
) -> None:
    """PostgreSQL text holds no NUL, so the store drops it from a session's columns;
    locally FTS5 reads it as a separator. The words it parts are the session's words on
    both backends (before, the store's vector was made after the NUL was dropped, and
    ``title\\0waffle`` was the one word ``titlewaffle`` there)."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/app", git_branch="feat\x00zephyr" if field == "branch" else "main")
    s.user("plain prompt" if field != "prompt" else "hello\x00marmot")
    s.assistant("on it")
    s.meta("custom-title", customTitle="title\x00waffle" if field == "title" else "plain")
    if field == "tag":
        s.meta("tag", tag="tag\x00quince")
    s.write()
    pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
    assert pushed.exit_code == 0, pushed.output
    local = str(tmp_path / "index.db")
    found = []
    for db in (local, store):
        result = run(tree.root, db, "search", query, "--scope", "all", "--json")
        found.append([row["session_id"] for row in json.loads(result.stdout or "[]")])
    assert found == [[s.session_id], [s.session_id]]


@pytest.mark.parametrize(
    ("field", "query"),
    [
        ("title", "database"),
        ("prompt", "connection"),
        ("reply", "database"),
        ("reply", "data\u00adbase"),  # the query's own soft hyphen
        ("reply", "--raw data\u200bbase"),
    ],
)
def test_an_invisible_character_inside_a_word_is_no_part_of_it_in_both_backends(
    tmp_path: Path, store: str, field: str, query: str
) -> None:
    """A soft hyphen or zero width space inside a word (indexer/text.py
    ``without_invisible``) is dropped from the store's words and text as from the
    index's: both find the session and mark the same word."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/app")
    s.user("fix the connec\u00adtion pool" if field == "prompt" else "plain prompt")
    s.assistant("the data\u200bbase is down" if field == "reply" else "on it")
    s.meta("custom-title", customTitle="data\u200bbase notes" if field == "title" else "plain")
    s.write()
    pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
    assert pushed.exit_code == 0, pushed.output
    local = str(tmp_path / "index.db")
    words = query.split(" ")
    found = []
    for db in (local, store):
        result = run(tree.root, db, "search", *words, "--scope", "all", "--json")
        found.append([(r["session_id"], r["snippet"]) for r in json.loads(result.stdout or "[]")])
    assert found[0] == found[1]
    assert [sid for sid, _ in found[0]] == [s.session_id]
    assert "[database]" in found[0][0][1] or "[connection]" in found[0][0][1]


# (first prompt, a word only it holds): where FTS5's snippet() puts its window.
SNIPPET_CASES = [
    ("after the big line afterword", "afterword"),  # short: the whole text
    ("исправить ошибку авторизации в модуле loginpanel 🔐", "loginpanel"),  # and its tail
    (" ".join(["filler"] * 40) + " tailword", "tailword"),  # at the end: a full window
    (" ".join(["filler"] * 40) + " midword " + " ".join(["filler"] * 40), "midword"),
    # a sentence's start is preferred when the match is in its window
    (
        "one two three four five six seven. Then the sentword is here and more words follow"
        " after it for a while longer still",
        "sentword",
    ),
    ("lead " * 8 + "pairone x pairtwo " + "tail " * 20, "pairone pairtwo"),
    # 340 matches in 1,070 characters: FTS5's locally (too short to be looked at)
    ("lead " * 10 + "zq " * 340, "zq"),
    # 1,000 in 3,050: too heavy for FTS5, cut by bounded_snippet on both
    ("lead " * 10 + "zv " * 1000, "zv"),
]


def test_snippets_are_cut_where_fts5_cuts_them(tmp_path: Path, store: str) -> None:
    """The store's snippets were a window from three tokens before the match: a short
    prompt lost its first words ("…the big line [afterword]"), a match at the end of a
    long one showed three words before it where FTS5 shows a full window, and a tail
    after the last word became "…". Now the window is FTS5's (centred on the matches,
    kept inside the text, a sentence's start preferred)."""
    tree = ConfigTree(tmp_path / "claude")
    for n, (text, _) in enumerate(SNIPPET_CASES):
        s = tree.session(cwd="/srv/app", session_id=str(uuid.uuid5(uuid.NAMESPACE_URL, text)))
        s.user(text)
        s.assistant(f"reply {n}")
        s.write()
    pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
    assert pushed.exit_code == 0, pushed.output
    local = str(tmp_path / "index.db")
    for _, query in SNIPPET_CASES:
        got = []
        for db in (local, store):
            result = run(tree.root, db, "search", query, "--scope", "all", "--json")
            [row] = json.loads(result.stdout)
            got.append(row["snippet"])
        assert got[1] == got[0], query


@pytest.mark.parametrize("where", [150_000, 299_000])
def test_a_match_deep_in_a_300_kb_message_is_shown_bounded(
    tmp_path: Path, store: str, where: int
) -> None:
    """A message over FTS5_WINDOW_CHARS (100,000 characters) with its only match far
    past that: the store's snippet shows the match, a window of words around it (not
    the text's first words, not the whole text), as the local index's does. (The two
    windows are not cut alike: over 100,000 characters the store cuts by
    bounded_snippet, FTS5 by its own window.)"""
    filler = "lorem ipsum dolor sit amet consectetur "
    head = (filler * (where // len(filler) + 1))[:where]
    text = head + " the deepmatchword is here " + filler * ((300_000 - where) // len(filler))
    assert len(text) > 300_000
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/app")
    s.user("short question")
    s.assistant(text)
    s.write()
    pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
    assert pushed.exit_code == 0, pushed.output
    got = []
    for db in (str(tmp_path / "index.db"), store):
        result = run(tree.root, db, "search", "deepmatchword", "--scope", "all", "--json")
        [row] = json.loads(result.stdout)
        got.append(row["snippet"])
    for snippet in got:
        assert "deepmatchword" in snippet and len(snippet) < 400, snippet[:500]


@pytest.mark.parametrize(
    ("title", "prompt", "query"),
    [
        ("Zcookie jar", "zlogin fails when the zcookie expired", "zlogin zcookie"),
        ("Zalpha notes", "zalpha and zbeta together", "zalpha zbeta"),
        ("Deploy qwerty", "nothing here", "qwerty"),  # one column holds it: that one
        ("Ztie one", "ztie two", "ztie"),  # as good in both: the first column, the title
    ],
)
def test_a_sessions_snippet_is_from_the_column_fts5_picks(
    tmp_path: Path, store: str, title: str, prompt: str, query: str
) -> None:
    """FTS5 cuts a session's snippet from the column whose best window scores highest
    (the first of those as good); the store took the first column with a match, so a
    title holding one word of two beat the prompt holding both."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/app")
    s.user(prompt)
    s.assistant("on it")
    s.meta("custom-title", customTitle=title)
    s.write()
    pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
    assert pushed.exit_code == 0, pushed.output
    local = str(tmp_path / "index.db")
    got = []
    for db in (local, store):
        result = run(tree.root, db, "search", query, "--scope", "all", "--json")
        [row] = json.loads(result.stdout)
        got.append(row["snippet"])
    assert got[1] == got[0]
