"""``sessiondex push`` and ``store init`` against a real PostgreSQL: incremental,
idempotent (twice, or two processes at once), resumable after SIGKILL, redacted."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.store.push import TOOL_OUTPUT_OMITTED
from sessiondex.store.schema import MIGRATIONS
from sessiondex.transcripts.discover import iter_transcripts
from sessiondex.transcripts.reader import RecordReader
from tests.builders import ConfigTree, SessionWriter, append_records, copy_fixtures
from tests.pgserver import database_url, require_database, truncate

REPO = Path(__file__).resolve().parent.parent
SECRET = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"
TOOL_SECRET = "AKIAIOSFODNN7EXAMPLE"
NAMES = json.loads(
    (Path(__file__).resolve().parent.parent / "fixtures" / "scenarios.json").read_text()
)["names"]
RUN_CLI = "import sys; from sessiondex.cli.main import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def pg_dsn() -> str:
    dsn = require_database()
    truncate(dsn)
    return dsn


def query(dsn: str, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        cur = conn.execute(sql, params or [])
        return cur.fetchall() if cur.description else []


def push(root: Path, dsn: str, *args: str) -> dict[str, Any]:
    """Run ``push --json`` in-process; return its summary."""
    result = CliRunner().invoke(
        cli, ["--config-dir", str(root), "push", "--to", database_url(dsn), "--json", *args]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def build_session(tree: ConfigTree, cwd: str, title: str, turns: int = 2) -> SessionWriter:
    s = tree.session(cwd=cwd, git_branch="fix/auth")
    s.user("the login returns 500 on an expired cookie")
    for n in range(turns):
        turn = s.assistant(f"Looking at it ({n})", tool_uses=[("Bash", {"command": "pytest -q"})])
        s.tool_result(turn.tool_use_ids[0], f"1 failed, AWS_KEY={TOOL_SECRET}")
        s.user(f"try again {n}")
    s.meta("custom-title", customTitle=title)
    s.pr_link(number=412, url="https://github.com/acme/shop/pull/412", repository="acme/shop")
    return s


def expected_entries(root: Path) -> int:
    """Entries a full push stores: every JSON record line, plus one agent_metadata
    entry per subagent with a .meta.json."""
    total = 0
    for tf in iter_transcripts(root):
        with open(tf.path, "rb") as fh:
            total += sum(1 for _ in RecordReader(fh))
        if tf.path.with_name(tf.path.name[:-6] + ".meta.json").exists():
            total += 1
    return total


def assert_each_entry_once(dsn: str, root: Path) -> None:
    [(count,)] = query(dsn, "SELECT count(*) FROM entries")
    assert count == expected_entries(root)
    assert (
        query(
            dsn,
            "SELECT transcript_ref, uuid FROM entries WHERE uuid IS NOT NULL"
            " GROUP BY 1, 2 HAVING count(*) > 1",
        )
        == []
    )
    # uuid-less records (titles, PR links) are guarded by the file offsets alone
    assert (
        query(
            dsn,
            "SELECT transcript_ref, entry::text FROM entries WHERE uuid IS NULL"
            " GROUP BY 1, 2 HAVING count(*) > 1",
        )
        == []
    )


@pytest.fixture
def main(tmp_path: Path) -> SessionWriter:
    """A tree of two sessions; the one returned has a subagent."""
    tree = ConfigTree(tmp_path / "claude")
    main = build_session(tree, "/home/dev/shop", "Auth refactor")
    agent = main.subagent(agent_id="a1b2", tool_use_id="toolu_x")
    agent.user("explore the auth module")
    agent.assistant("Found it in auth/session.py")
    main.write(mtime=1_790_000_000)
    build_session(tree, "/home/dev/blog", "RSS feed").write(mtime=1_790_000_100)
    return main


@pytest.fixture
def tree(main: SessionWriter) -> ConfigTree:
    return main.tree


def test_push_twice_sends_nothing_new(tree: ConfigTree, pg_dsn: str) -> None:
    first = push(tree.root, pg_dsn)
    assert (first["new"], first["sessions"], first["duplicates"]) == (3, 2, 0)
    assert_each_entry_once(pg_dsn, tree.root)
    second = push(tree.root, pg_dsn)
    assert (second["entries"], second["unchanged"], second["new"]) == (0, 3, 0)
    assert_each_entry_once(pg_dsn, tree.root)
    rows = query(
        pg_dsn,
        "SELECT custom_title, git_branch, message_count, source FROM sessions ORDER BY custom_title",
    )
    assert rows == [("Auth refactor", "fix/auth", 9, "push"), ("RSS feed", "fix/auth", 9, "push")]
    assert query(pg_dsn, "SELECT DISTINCT url FROM pr_links") == [
        ("https://github.com/acme/shop/pull/412",)
    ]


def test_session_records_who_pushed_it_and_its_repository(tmp_path: Path, pg_dsn: str) -> None:
    cwd = tmp_path / "shop"
    cwd.mkdir()
    subprocess.run(["git", "init", "-q", str(cwd)], check=True)
    remote = f"https://x-access-token:{SECRET}@github.com/acme/shop.git"
    subprocess.run(["git", "-C", str(cwd), "remote", "add", "origin", remote], check=True)
    tree = ConfigTree(tmp_path / "claude")
    session = build_session(tree, str(cwd), "Auth refactor")
    session.write()
    push(tree.root, pg_dsn)
    [row] = query(
        pg_dsn,
        "SELECT pushed_by_user, pushed_by_host, config_dir, file_path, origin_url, cwd FROM sessions",
    )
    import getpass
    import socket

    assert row == (
        getpass.getuser(),
        socket.gethostname(),
        str(tree.root),
        str(session.path),
        "github.com/acme/shop",  # normalized (transcripts/remotes.py), no credentials
        str(cwd),
    )


def test_appended_transcript_sends_only_the_new_lines(
    main: SessionWriter, tree: ConfigTree, pg_dsn: str
) -> None:
    push(tree.root, pg_dsn)
    before = query(pg_dsn, "SELECT id FROM entries ORDER BY id")
    main.user("one more thing")
    main.meta("tag", tag="review")
    main.append()
    with open(main.path, "ab") as fh:
        fh.write(b'{"type":"user","half":')  # a line still being written
    result = push(tree.root, pg_dsn)
    assert (result["grown"], result["entries"], result["unchanged"]) == (1, 2, 2)
    after = query(pg_dsn, "SELECT id FROM entries ORDER BY id")
    assert after[: len(before)] == before and len(after) == len(before) + 2
    assert query(pg_dsn, "SELECT tag FROM sessions WHERE custom_title = 'Auth refactor'") == [
        ("review",)
    ]
    with open(main.path, "ab") as fh:
        fh.write(b'"x"}\n')  # the line completes: it is sent next time, once
    assert push(tree.root, pg_dsn)["entries"] == 1
    assert_each_entry_once(pg_dsn, tree.root)


def test_rewritten_transcript_is_sent_again(
    main: SessionWriter, tree: ConfigTree, pg_dsn: str
) -> None:
    push(tree.root, pg_dsn)
    sid = main.session_id
    rewritten = tree.session(cwd="/home/dev/shop", session_id=sid, git_branch="main")
    rewritten.user("a different history")
    rewritten.meta("custom-title", customTitle="Rewritten")
    rewritten.write()  # same path, new content (a cleanup rewrite)
    result = push(tree.root, pg_dsn)
    assert result["rewritten"] == 1
    assert_each_entry_once(pg_dsn, tree.root)
    assert query(
        pg_dsn,
        "SELECT custom_title, git_branch, message_count FROM sessions WHERE session_id = %s",
        [sid],
    ) == [("Rewritten", "main", 1)]
    assert query(
        pg_dsn,
        "SELECT branch FROM branches b JOIN sessions s ON s.id = b.session_ref"
        " WHERE s.session_id = %s",
        [sid],
    ) == [("main",)]


@pytest.mark.parametrize("old_state", [False, True])
def test_an_edit_in_place_then_an_append_is_sent_again(
    tmp_path: Path, pg_dsn: str, old_state: bool
) -> None:
    """A same-length edit in the middle of a transcript (a secret redacted with as many
    '*') followed by an append was pushed as an append: the store kept the secret. A
    push state stored by an older version (its fingerprint the windows alone) cannot
    tell even a same-size edit: that file is sent again, once. A transcript pushed in
    several chunks stores the CRC of all of it."""
    from sessiondex.indexer.parse import fingerprint

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/home/dev/shop", git_branch="main")
    for n in range(40):
        s.user(f"question {n} " + "padding text " * 40)
        if n == 20:
            s.user("my token is mysecretvalueQQ keep it")
    s.assistant("noted")
    path = s.write(mtime=1_790_000_000)
    push(tree.root, pg_dsn)
    if old_state:
        query(pg_dsn, "UPDATE push_files SET fingerprint = substr(fingerprint, 1, 32)")
    data = path.read_bytes().replace(b"mysecretvalueQQ", b"***************")
    with open(path, "r+b") as file:
        file.write(data)
    if not old_state:  # an append too (an older state's is sent again even without)
        s.user("one more question")
        with open(path, "ab") as file:
            file.write(json.dumps(s.records[-1]).encode() + b"\n")
    assert push(tree.root, pg_dsn)["rewritten"] == 1
    assert push(tree.root, pg_dsn)["unchanged"] == 1  # then it holds a CRC
    texts = query(pg_dsn, "SELECT text FROM messages")
    assert not any("mysecretvalueQQ" in str(t) for (t,) in texts)
    assert_each_entry_once(pg_dsn, tree.root)
    [(stored,)] = query(pg_dsn, "SELECT fingerprint FROM push_files")
    with open(path, "rb") as stream:
        assert stored == fingerprint(stream, path.stat().st_size)


def test_a_push_in_chunks_stores_the_crc_of_the_whole_file(
    tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each chunk carries the CRC of what was sent before on (it was computed from byte 0
    for every chunk: a push's cost grew with the square of the file)."""
    import sessiondex.store.push as push_module
    from sessiondex.indexer.parse import fingerprint

    monkeypatch.setattr(push_module, "CHUNK_BYTES", 4096)
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/home/dev/shop", git_branch="main")
    for n in range(60):
        s.user(f"question {n} " + "padding text " * 40)
    path = s.write(mtime=1_790_000_000)
    read: list[int] = []
    real = push_module.fingerprint

    def counted(stream: Any, consumed: int, *rest: Any) -> str:
        start = rest[0][0] if rest else 0
        read.append(consumed - start)
        return real(stream, consumed, *rest)

    monkeypatch.setattr(push_module, "fingerprint", counted)
    push(tree.root, pg_dsn)
    size = path.stat().st_size
    assert sum(read) < 2 * size  # not once per chunk from the start
    [(stored,)] = query(pg_dsn, "SELECT fingerprint FROM push_files")
    with open(path, "rb") as stream:
        assert stored == fingerprint(stream, size)


def test_secrets_and_tool_outputs_stay_home(tree: ConfigTree, pg_dsn: str) -> None:
    s = tree.session(cwd="/home/dev/ops")
    s.user(f"use my token {SECRET} for the release")
    s.assistant("Deploying", tool_uses=[("Bash", {"command": f"GH_TOKEN={SECRET} gh release"})])
    s.write()
    dry = CliRunner().invoke(
        cli,
        [
            "--config-dir",
            str(tree.root),
            "push",
            "--to",
            database_url(pg_dsn),
            "--dry-run",
            "--show-redactions",
        ],
    )
    assert dry.exit_code == 0, dry.output
    assert SECRET not in dry.output and "github-token ghp_… (42 chars)" in dry.output
    assert "would send" in dry.output
    [(tables,)] = query(pg_dsn, "SELECT to_regclass('entries') IS NOT NULL")
    assert not tables or query(pg_dsn, "SELECT count(*) FROM entries") == [(0,)]

    summary = push(tree.root, pg_dsn)
    assert summary["redactions"]["github-token"] == 2
    assert summary["tool_outputs_omitted"] == 4
    everything = " ".join(
        str(r)
        for table in ("entries", "messages", "sessions", "transcripts")
        for r in query(pg_dsn, f"SELECT t::text FROM {table} t")
    )
    assert SECRET not in everything and TOOL_SECRET not in everything
    assert "[REDACTED:github-token]" in everything and TOOL_OUTPUT_OMITTED in everything
    # PR URLs printed by tools are still found (pr_mentions), as the SQLite index finds them

    # --with-tools sends the outputs too (redacted), again for files already pushed
    again = push(tree.root, pg_dsn, "--with-tools")
    assert again["rewritten"] == again["files_seen"] and again["tool_outputs_omitted"] == 0
    assert_each_entry_once(pg_dsn, tree.root)
    outputs = " ".join(r[0] for r in query(pg_dsn, "SELECT entry::text FROM entries"))
    assert "1 failed, AWS_KEY=[REDACTED:aws-access-key]" in outputs and TOOL_SECRET not in outputs
    assert TOOL_OUTPUT_OMITTED not in outputs
    assert push(tree.root, pg_dsn, "--with-tools")["entries"] == 0


def test_pushed_session_resumes_through_the_sdk_store(
    main: SessionWriter, tree: ConfigTree, pg_dsn: str
) -> None:
    from sessiondex.store.sdk_store import PostgresSessionStore

    push(tree.root, pg_dsn)
    with open(main.path, "rb") as fh:
        records = [r for _, r in RecordReader(fh)]

    async def load() -> tuple[Any, Any]:
        async with PostgresSessionStore(pg_dsn) as store:
            key = {"project_key": main.project_dir.name, "session_id": main.session_id}
            return await store.load(key), await store.list_subkeys(key)

    loaded, subkeys = asyncio.run(load())
    assert len(loaded) == len(records)
    clean = [r for r in records if "toolUseResult" not in r]
    assert [r for r in loaded if "toolUseResult" not in r and r in clean] == clean
    assert subkeys == ["subagents/agent-a1b2"]


def test_project_and_since_choose_what_is_pushed(tree: ConfigTree, pg_dsn: str) -> None:
    assert push(tree.root, pg_dsn, "--project", "/home/dev/blog", "--dry-run")["sessions"] == 1
    assert push(tree.root, pg_dsn, "--since", "2026-09-21T14:14:10Z", "--dry-run")["sessions"] == 1
    result = CliRunner().invoke(
        cli,
        [
            "--config-dir",
            str(tree.root),
            "push",
            "--to",
            database_url(pg_dsn),
            "--project",
            "/nope",
        ],
    )
    assert result.exit_code == 1 and "no sessions started there" in result.output


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["push", "--to", "sessions.db"], 2, "postgresql://"),
        (
            ["push", "--to", "postgresql://127.0.0.1:1/none?connect_timeout=2"],
            1,
            "Error: team store",
        ),
        (
            ["store", "init", "postgresql://u:hunter2@127.0.0.1:1/none?connect_timeout=2"],
            1,
            "u:***@",
        ),
    ],
)
def test_bad_stores_are_one_line_errors(
    tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    result = CliRunner().invoke(cli, ["--config-dir", str(tmp_path), *args])
    assert result.exit_code == code, result.output
    assert message in result.output and "Traceback" not in result.output
    assert "hunter2" not in result.output


def _push_process(root: Path, dsn: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            RUN_CLI,
            "--config-dir",
            str(root),
            "push",
            "--to",
            database_url(dsn),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def big_tree(root: Path, sessions: int, turns: int) -> ConfigTree:
    tree = ConfigTree(root)
    filler = "the websocket heartbeat drops after the proxy idles; " * 18
    for n in range(sessions):
        s = tree.session(cwd=f"/home/dev/repo{n}")
        for t in range(turns):
            s.user(f"{t}: {filler}")
            s.assistant(f"{t}: {filler}")
        s.meta("custom-title", customTitle=f"Session {n}")
        s.write()
    return tree


def test_two_pushes_at_once_store_every_entry_once(tmp_path: Path, pg_dsn: str) -> None:
    tree = big_tree(tmp_path / "claude", sessions=4, turns=300)
    procs = [_push_process(tree.root, pg_dsn) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    assert_each_entry_once(pg_dsn, tree.root)


@pytest.mark.long
def test_killed_push_resumes_where_it_stopped(tmp_path: Path, pg_dsn: str) -> None:
    """SIGKILL after the first chunks committed: the store holds a consistent prefix
    (offsets and entries moved together), and the next push sends exactly the rest."""
    tree = big_tree(tmp_path / "claude", sessions=3, turns=1400)  # ~2.3 MB each: 2 chunks
    proc = _push_process(tree.root, pg_dsn)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        rows = query(pg_dsn, "SELECT to_regclass('push_files') IS NOT NULL")
        if rows[0][0] and query(pg_dsn, "SELECT count(*) FROM push_files WHERE consumed > 0")[0][0]:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    [(partial,)] = query(pg_dsn, "SELECT count(*) FROM entries")
    total = expected_entries(tree.root)
    assert 0 < partial < total, "the kill should land mid-push"
    # what is stored is exactly what the offsets say was sent
    for path, consumed in query(pg_dsn, "SELECT path, consumed FROM push_files"):
        with open(path, "rb") as fh:
            sent = sum(1 for _ in RecordReader(fh, limit=consumed))
        [(stored,)] = query(
            pg_dsn,
            "SELECT count(*) FROM entries e JOIN push_files p ON p.transcript_ref = e.transcript_ref"
            " WHERE p.path = %s",
            [path],
        )
        assert stored == sent
    resumed = push(tree.root, pg_dsn)
    assert resumed["entries"] == total - partial and resumed["duplicates"] == 0
    assert_each_entry_once(pg_dsn, tree.root)


def test_store_init_migrates_once_even_when_raced(pg_dsn: str) -> None:
    import secrets

    import psycopg

    from tests.pgserver import _admin_dsn, _with_dbname

    admin = _admin_dsn()
    assert admin is not None
    name = f"sessiondex_test_init_{secrets.token_hex(3)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        url = database_url(_with_dbname(admin, name))
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", RUN_CLI, "store", "init", url],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        outputs = [proc.communicate(timeout=120) for proc in procs]
        assert [p.returncode for p in procs] == [0, 0], outputs
        texts = sorted(out.decode() for out, _ in outputs)
        assert "applied 001 initial" in texts[0] + texts[1]
        assert "up to date" in texts[0] + texts[1]
        fresh = _with_dbname(admin, name)
        assert query(fresh, "SELECT version FROM sessiondex_migrations ORDER BY 1") == [
            (m.version,) for m in MIGRATIONS
        ]
        # a schema from a newer sessiondex is refused, not written with old rules
        query(fresh, "INSERT INTO sessiondex_migrations (version, name) VALUES (99, 'future')")
        result = CliRunner().invoke(cli, ["store", "init", url])
        assert result.exit_code == 1 and "upgrade sessiondex" in result.output
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _ms(iso: str | None) -> int | None:
    from datetime import datetime

    return (
        None
        if iso is None
        else int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
    )


def test_pushed_rows_hold_the_sqlite_index_fields(tmp_path: Path, pg_dsn: str) -> None:
    """The fixture tree pushed to PostgreSQL and indexed in SQLite: every session has
    the same derived fields in both (the same fold), which team search will rely on."""
    from sessiondex import Index
    from tests.builders import copy_fixtures

    root = copy_fixtures(tmp_path)
    with Index(tmp_path / "index.db", [root]) as index:
        objects = {o["session_id"]: o for o in index.list(scope="all", all_kinds=True)}
    push(root, pg_dsn)
    fields = (
        "custom_title ai_title summary last_prompt tag git_branch message_count entrypoint cwd"
    ).split()
    rows = query(
        pg_dsn,
        f"SELECT s.session_id, {', '.join('s.' + f for f in fields)}, s.created_ms,"
        " coalesce(s.last_activity_ms, s.mtime_ms), s.forked_from_session,"
        " (SELECT array_agg(branch ORDER BY id) FROM branches WHERE session_ref = s.id),"
        " (SELECT array_agg(DISTINCT url) FROM pr_links WHERE session_ref = s.id),"
        " (SELECT array_agg(DISTINCT url) FROM pr_mentions WHERE session_ref = s.id)"
        " FROM sessions s WHERE EXISTS"
        " (SELECT 1 FROM transcripts t WHERE t.session_ref = s.id AND t.subpath = '')",
    )
    # an empty file is a session to the index, and nothing to send to the store
    assert {r[0] for r in rows} == {sid for sid, o in objects.items() if o["file_size"]}
    for sid, *values in rows:
        obj = objects[sid]
        *plain, created, last, forked, branches, links, mentions = values
        assert plain == [obj[f] for f in fields], sid
        assert (created, last) == (_ms(obj["created_at"]), _ms(obj["last_activity"])), sid
        assert forked == (obj["forked_from"] or {}).get("session_id"), sid
        assert (branches or []) == obj["branches"], sid
        assert sorted(links or []) == sorted({p["url"] for p in obj["pr_links"]}), sid
        linked = {p["url"] for p in obj["pr_links"]}
        shown = set(mentions or []) - linked
        assert shown == {p["url"] for p in obj["pr_mentions"]}, sid


def test_push_leaves_the_transcripts_alone(tmp_path: Path, pg_dsn: str) -> None:
    """The transcripts are the truth: push (full, incremental, dry run, with tools) and
    store init change no byte and no mtime under the config dir."""
    from tests.builders import copy_fixtures
    from tests.test_reliability_truth import snapshot

    root = copy_fixtures(tmp_path)
    before = snapshot(root)
    push(root, pg_dsn, "--dry-run", "--show-redactions")
    push(root, pg_dsn)
    push(root, pg_dsn, "--with-tools")
    result = CliRunner().invoke(
        cli, ["--config-dir", str(root), "store", "init", database_url(pg_dsn)]
    )
    assert result.exit_code == 0, result.output
    assert snapshot(root) == before


def test_a_version_1_store_is_upgraded_to_word_vectors(pg_dsn: str, tmp_path: Path) -> None:
    """Migration 2 rewrites the full-text vectors of a store version 1 made (PostgreSQL's
    parse of the text): then "resume" finds the "résumé" session, and "x-docs" the session
    whose text says "x-docs", as on the local index."""
    root = copy_fixtures(tmp_path)
    push(root, pg_dsn)
    # Back to version 1: vectors generated by PostgreSQL from the text, as it made them.
    query(
        pg_dsn,
        "ALTER TABLE messages DROP COLUMN tsv;"
        " ALTER TABLE messages ADD COLUMN tsv tsvector GENERATED ALWAYS AS"
        " (setweight(to_tsvector('simple', text), 'D')) STORED;"
        " UPDATE sessions SET search = setweight(to_tsvector('simple',"
        " coalesce(custom_title, '') || ' ' || coalesce(ai_title, '')), 'A')"
        " || setweight(to_tsvector('simple', coalesce(first_prompt, '')), 'C');"
        # and without what later migrations added
        " DROP INDEX entries_line_offset; ALTER TABLE entries DROP COLUMN line_offset;"
        " DELETE FROM sessiondex_migrations WHERE version >= 2",
    )
    url = database_url(pg_dsn)

    def found(word: str) -> set[str]:
        result = CliRunner().invoke(
            cli,
            ["--config-dir", str(root), "--db", url, "search", word, "--scope", "all", "--json"],
        )
        return {
            r["session_id"] for r in json.loads(result.stdout or "[]") if r["matched_by"] != "fuzzy"
        }

    before = {word: found(word) for word in ("resume", "x-docs")}
    # A reader connected meanwhile (an MCP server, a search) holds temporary views that
    # depend on the column: the upgrade must not need to drop it.
    import psycopg

    with psycopg.connect(pg_dsn, autocommit=True) as reader:
        reader.execute("CREATE TEMP VIEW messages AS SELECT id, text, tsv FROM messages")
        result = CliRunner().invoke(cli, ["store", "init", url])
    assert result.exit_code == 0 and "applied 002 word vectors" in result.output, result.output
    after = {word: found(word) for word in ("resume", "x-docs")}
    assert (
        after["resume"] >= {NAMES["blog-unicode"]} and NAMES["blog-unicode"] not in before["resume"]
    )
    assert after["x-docs"] >= {NAMES["wt-mention"]} and NAMES["wt-mention"] not in before["x-docs"]


def test_a_version_5_store_gets_the_tokenizer_s_own_words(pg_dsn: str, tmp_path: Path) -> None:
    """Migration 6 makes the vectors again with the words unicode61 cuts and folds: a
    version 5 store held "новыи" for "новый" and "xerror" for "x̶ERROR", so the team
    store found other sessions than the local index for them."""
    tree = ConfigTree(tmp_path / "claude")
    s = build_session(tree, "/home/dev/shop", "Новый релиз")
    s.user("новый x\u0336ERROR в логах")
    s.write()
    push(tree.root, pg_dsn)
    # Back to version 5: the words as Python's rules made them.
    query(
        pg_dsn,
        "UPDATE messages SET tsv = setweight(to_tsvector('simple', 'новыи xerror в логах'), 'D');"
        " UPDATE sessions SET search = setweight(to_tsvector('simple', 'новыи релиз'), 'A');"
        " DELETE FROM sessiondex_migrations WHERE version >= 6",
    )
    url = database_url(pg_dsn)
    result = CliRunner().invoke(cli, ["store", "init", url])
    assert result.exit_code == 0 and "applied 006" in result.output, result.output
    for word in ("error", "новый", "релиз"):
        result = CliRunner().invoke(
            cli, ["--config-dir", str(tree.root), "--db", url, "search", word, "--scope", "all",
                  "--json"],
        )  # fmt: skip
        rows = json.loads(result.stdout or "[]")
        assert [r["matched_by"] for r in rows] in (["text"], ["title"]), (word, result.output)


def test_a_version_8_store_gets_words_without_invisible_characters(
    pg_dsn: str, tmp_path: Path
) -> None:
    """Since b0696f2 an invisible character inside a word (a soft hyphen, a zero width
    space) is no part of it: the local index was rebuilt (DERIVATION_VERSION 39), but a
    store written before kept "data" "base" for data\u200bbase, so ``search database
    --db`` missed what the local index found. Migration 9 makes the vectors again from
    the stored text."""
    tree = ConfigTree(tmp_path / "claude")
    s = build_session(tree, "/home/dev/shop", "Connec\u00adtion pool")
    s.user("the data\u200bbase migration")
    s.write()
    push(tree.root, pg_dsn)
    # Back to version 8: the words cut at the invisible characters.
    query(
        pg_dsn,
        "UPDATE messages SET tsv = setweight(to_tsvector('simple', 'the data base migration'),"
        " 'D') WHERE text LIKE '%%migration%%';"
        " UPDATE sessions SET search = setweight(to_tsvector('simple', 'connec tion pool'), 'A');"
        " DELETE FROM sessiondex_migrations WHERE version >= 9",
    )
    url = database_url(pg_dsn)

    def found(word: str) -> list[str]:
        result = CliRunner().invoke(
            cli, ["--config-dir", str(tree.root), "--db", url, "search", word, "--scope", "all",
                  "--json"],
        )  # fmt: skip
        return [r["matched_by"] for r in json.loads(result.stdout or "[]")]

    assert query(pg_dsn, "SELECT count(*) FROM messages WHERE tsv @@ 'database'") == [(0,)]
    result = CliRunner().invoke(cli, ["store", "init", url])
    assert result.exit_code == 0 and "applied 009" in result.output, result.output
    assert found("database") == ["text"]
    assert found("connection") == ["title"]


def test_a_version_3_store_s_www_forge_hosts_become_the_forge_s_own(
    pg_dsn: str, tmp_path: Path
) -> None:
    """Before ``www.github.com`` (and GitLab's and Bitbucket's ``www.``) were read as the
    forge's own host, a store kept links and origins in that form, and ``from-pr`` with
    the canonical URL missed them. Migration 4 gives the rows a fresh push gives."""
    tree = ConfigTree(tmp_path / "claude")
    s = build_session(tree, "/home/dev/shop", "Checkout fix")  # links github.com/…/412
    s.pr_link(number=9, url="https://gitlab.com/acme/api/-/merge_requests/9", repository="acme/api")
    s.user("see https://bitbucket.org/acme/web/pull-requests/3 and github.com/acme/shop/pull/412")
    s.write()
    push(tree.root, pg_dsn)
    query(pg_dsn, "UPDATE sessions SET origin_url = 'github.com/acme/shop'")
    tables = ("pr_links", "pr_mentions")

    def snapshot() -> dict[str, Any]:
        rows = {
            t: query(
                pg_dsn,
                f"SELECT session_ref, url, number, repository, host, provider FROM {t} ORDER BY id",
            )  # fmt: skip
            for t in tables
        }
        rows["sessions"] = query(pg_dsn, "SELECT origin_url, pr_text, search::text FROM sessions")
        return rows

    fresh = snapshot()
    assert {r[4] for t in tables for r in fresh[t]} == {"github.com", "gitlab.com", "bitbucket.org"}
    # Back to version 3, as an older sessiondex stored it: links in the www. form, one
    # of them stored both ways (pushed once from each of two spellings), and each
    # mention stored again in the www. form after its canonical one.
    www = "regexp_replace({0}, '(github\\.com|gitlab\\.com|bitbucket\\.org)', 'www.\\1')"
    query(
        pg_dsn,
        f"UPDATE pr_links SET url = {www.format('url')}, host = 'www.' || host;"
        " INSERT INTO pr_links (session_ref, transcript_ref, url, number, repository, host,"
        " provider) SELECT session_ref, transcript_ref, replace(url, 'www.', ''), number,"
        " repository, substr(host, 5), provider FROM pr_links WHERE number = 412;"
        " INSERT INTO pr_mentions (session_ref, transcript_ref, url, number, repository, host,"
        f" provider) SELECT session_ref, transcript_ref, {www.format('url')}, number,"
        " repository, 'www.' || host, provider FROM pr_mentions ORDER BY id;"
        f" UPDATE sessions SET origin_url = {www.format('origin_url')},"
        f" pr_text = {www.format('pr_text')};"
        " DELETE FROM sessiondex_migrations WHERE version >= 4",
    )
    url = database_url(pg_dsn)

    def from_pr(link: str) -> list[str]:
        result = CliRunner().invoke(
            cli, ["--config-dir", str(tree.root), "--db", url, "from-pr", link, "--json"]
        )
        return [r["session_id"] for r in json.loads(result.stdout or "[]")]

    assert from_pr("https://gitlab.com/acme/api/-/merge_requests/9") == []
    result = CliRunner().invoke(cli, ["store", "init", url])
    assert result.exit_code == 0 and "applied 004" in result.output, result.output
    after = snapshot()
    assert {t: sorted(after[t]) for t in tables} == {t: sorted(fresh[t]) for t in tables}
    assert after["sessions"] == fresh["sessions"]
    assert from_pr("https://gitlab.com/acme/api/-/merge_requests/9") == [s.session_id]


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_line_with_invalid_utf8_is_pushed_as_it_is_read(
    tmp_path: Path, pg_dsn: str, dry_run: bool
) -> None:
    """One byte of Latin-1 in a line ended every push (and ``--dry-run``) in a
    traceback at that file, and nothing after it was ever pushed. The line is read
    with U+FFFD, as Claude Code, the index and the SDK read it, and stored so."""
    tree = ConfigTree(tmp_path / "claude")
    bad = tree.session(cwd="/home/dev/bad")
    bad.user("placeholder")
    bad.write()
    line = bad.path.read_bytes().replace(b"placeholder", b"caf\xe9 au lait")
    bad.path.write_bytes(line)
    good = build_session(tree, "/home/dev/shop", "Auth refactor")
    good.write()
    summary = push(tree.root, pg_dsn, *(["--dry-run"] if dry_run else []))
    assert summary["sessions"] == 2
    stored = query(pg_dsn, "SELECT entry->'message'->>'content' FROM entries")
    if dry_run:
        assert stored == []
    else:
        assert ("caf\ufffd au lait",) in stored
        assert query(pg_dsn, "SELECT count(*) FROM sessions") == [(2,)]


# A DSN whose text psycopg quotes in its error, or that cannot be parsed at all: every
# command says one line, and the password never shows (as written or decoded).
SECRET_DSNS = [
    pytest.param("postgresql://ann:hunter%2@127.0.0.1:1/team", id="bad-percent-escape"),
    pytest.param("Postgresql://ann:hunter2x@127.0.0.1:1/team?connect_timeout=2", id="mixed-case"),
    pytest.param("POSTGRES://ann:hunter2x@127.0.0.1:1/team?connect_timeout=2", id="upper-case"),
    pytest.param("postgresql://ann:hunter2x@[::1/team", id="broken-ipv6"),
    pytest.param("postgresql:///team?host=127.0.0.1&port=1&password=hunter2x", id="query-password"),
    pytest.param("postgresql://ann:hunter2@tail9x@127.0.0.1:1/team", id="at-in-password"),
    # libpq takes "?", "#" and "/" in a password as written; a URL parser ends it there.
    pytest.param("postgresql://ann:hunter2?tail9x@127.0.0.1:1/team", id="question-in-password"),
    pytest.param("postgresql://ann:hunter2#tail9x@127.0.0.1:1/team", id="hash-in-password"),
    pytest.param("postgresql://ann:hunter2/tail9x@127.0.0.1:1/team", id="slash-in-password"),
    pytest.param("postgresql://ann@127.0.0.1:1/team?sslpassword=hunter2x", id="sslpassword"),
]


@pytest.mark.parametrize("dsn", SECRET_DSNS)
@pytest.mark.parametrize("command", ["push", "store init", "list"])
def test_a_dsn_s_password_never_shows_in_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dsn: str, command: str
) -> None:
    monkeypatch.chdir(tmp_path)  # a DSN taken for a path would be created here
    (tmp_path / "claude" / "projects").mkdir(parents=True)
    argv = {
        "push": ["--db", str(tmp_path / "i.db"), "push", "--to", dsn],
        "store init": ["store", "init", dsn],
        "list": ["--db", dsn, "list", "--scope", "all"],
    }[command]
    result = CliRunner().invoke(cli, ["--config-dir", str(tmp_path / "claude"), *argv])
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1
    for secret in ("hunter2", "hunter%2", "tail9x"):
        assert secret not in result.output
    assert not list(tmp_path.glob("*ostgres*"))  # never taken for a local index path


def test_push_gives_up_on_a_server_that_never_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listener that accepts and never replies: reads gave up after 10 s, push and
    store init waited forever. The DSN sets no timeout; the default applies (made 1 s
    here)."""
    import socket

    from sessiondex.store import dsn as dsn_rules

    monkeypatch.setattr(dsn_rules, "CONNECT_TIMEOUT", 1)
    (tmp_path / "claude" / "projects").mkdir(parents=True)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        dsn = f"postgresql://u@127.0.0.1:{port}/team"
        for argv in (["push", "--to", dsn], ["store", "init", dsn]):
            result = CliRunner().invoke(
                cli,
                ["--config-dir", str(tmp_path / "claude"), "--db", str(tmp_path / "i.db"), *argv],
            )
            assert result.exit_code == 1 and "timeout" in result.output, result.output


@pytest.mark.parametrize(
    "db",
    [
        "postgresql+psycopg://ann:hunter2x@h:1/team",
        " postgresql://ann:hunter2x@h:1/team",
        "postgresql:/ann:hunter2x@h:1/team",
        "Postgres+psycopg:/ann:hunter2x@h:1/team",
        "sqlite:///index.db",
        "host=h port=1 dbname=team user=ann password=hunter2x",
        "dbname=team password=hunter2x",
    ],
)
def test_a_url_that_is_no_team_store_is_no_index_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db: str
) -> None:
    """Each was a local index created under the cwd, named after the password."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claude" / "projects").mkdir(parents=True)
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tmp_path / "claude"), "--db", db, "list", "--scope", "all"]
    )
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1
    assert "looks like a URL" in result.output or "connection string" in result.output
    assert "hunter2x" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claude"]


@pytest.mark.parametrize(
    "db", ["http:/index.db", "./ab:/index.db", "a:b/index.db", "C:/x.db", "index.db"]
)
def test_a_relative_path_through_a_dir_named_like_a_scheme_is_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db: str
) -> None:
    """Only a URL ("scheme://…") or the team store's scheme with one slash is refused;
    a folder whose name ends in ":" is a folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "claude" / "projects").mkdir(parents=True)
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tmp_path / "claude"), "--db", db, "list", "--scope", "all"]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / db).is_file()


def test_a_second_copy_of_a_transcript_adds_no_record_twice(tmp_path: Path, pg_dsn: str) -> None:
    """The same session pushed from a second machine's (or config dir's) copy re-sent
    every record without a uuid (titles, tags, PR links), and the fold took the last:
    a title renamed on the first machine rolled back to the copy's older one."""
    import shutil

    first = ConfigTree(tmp_path / "m1")
    s = build_session(first, "/home/dev/shop", "Old name")
    s.write(mtime=1_790_000_000)
    shutil.copytree(first.root, tmp_path / "m2")  # the other machine's synced copy
    s.meta("custom-title", customTitle="New name")
    s.append(mtime=1_790_000_100)
    push(first.root, pg_dsn)
    before = query(pg_dsn, "SELECT count(*) FROM entries")
    push(tmp_path / "m2", pg_dsn)
    assert query(pg_dsn, "SELECT count(*) FROM entries") == before
    assert query(pg_dsn, "SELECT custom_title FROM sessions") == [("New name",)]


def test_a_copy_that_adds_nothing_leaves_the_session_to_the_copy_that_did(
    tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob's synced copy of Ann's session, older than what Ann pushed, sent no entry
    but took the session row: its size, mtime, path and pusher replaced Ann's, so the
    store listed a stale size and date, resumed from Bob's dir, and `--user ann` lost
    the session whose every line Ann had pushed. A copy that does add a line takes it."""
    import shutil

    def as_user(name: str) -> None:
        for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
            monkeypatch.setenv(variable, name)

    ann = ConfigTree(tmp_path / "ann")
    s = build_session(ann, "/home/dev/shop", "Auth refactor")
    s.write(mtime=1_790_000_000)
    shutil.copytree(ann.root, tmp_path / "bob")  # synced before Ann went on
    s.user("one more thing, on Ann's machine")
    s.append(mtime=1_790_000_100)
    columns = "file_size, mtime_ms, config_dir, file_path, pushed_by_user, message_count"
    as_user("ann")
    push(ann.root, pg_dsn)
    anns = query(pg_dsn, f"SELECT {columns} FROM sessions")
    assert anns == [
        (s.path.stat().st_size, 1_790_000_100_000, str(ann.root), str(s.path), "ann", 10)
    ]
    as_user("bob")
    assert push(tmp_path / "bob", pg_dsn)["entries"] == 0
    assert query(pg_dsn, f"SELECT {columns} FROM sessions") == anns
    listed = CliRunner().invoke(
        cli, ["--db", database_url(pg_dsn), "list", "--scope", "all", "--user", "ann", "--json"]
    )
    assert [o["session_id"] for o in json.loads(listed.stdout)] == [s.session_id]

    bob_path = tmp_path / "bob" / s.path.relative_to(ann.root)
    own = {**s.records[-1], "uuid": "b0b00000-0000-4000-8000-000000000001"}
    own["message"] = {"role": "user", "content": "Bob goes on from his copy"}
    append_records(bob_path, [own], mtime=1_790_000_200)
    push(tmp_path / "bob", pg_dsn)
    [row] = query(pg_dsn, f"SELECT {columns} FROM sessions")
    assert row[1:] == (1_790_000_200_000, str(tmp_path / "bob"), str(bob_path), "bob", 11)


def test_a_version_4_store_learns_which_sessions_the_picker_hides(
    pg_dsn: str, tmp_path: Path
) -> None:
    """Migration 5 added team_name, session_kind and continued_in empty: a push with
    nothing new sent nothing, so the store listed every team, daemon and superseded
    session, and one that grew took its kind from its new lines."""
    from tests.test_query import SHOWN_KINDS, _kinds_world

    tree, ids = _kinds_world(tmp_path)
    # What the migration must read as the fold does: a NUL in a prompt (PostgreSQL's
    # json operators raise on \u0000 anywhere in an entry), a teamName that is no
    # string before one that is, and a last continued-in naming nothing.
    nul = tree.session(cwd="/w/kinds")
    nul.user("a prompt with a NUL \x00 in it")
    nul.write(mtime=1_790_000_000)
    teams = tree.session(cwd="/w/kinds")
    teams.user("a team member after all", teamName=5)
    teams.user("second line", teamName="beta")
    teams.write(mtime=1_790_000_001)
    went_on = tree.session(cwd="/w/kinds")
    went_on.user("went on, then said nothing")
    went_on.meta("continued-in", continuedInSessionId=ids["plain"], timestamp=True)
    went_on.meta("continued-in", continuedInSessionId="", timestamp=True)
    went_on.write(mtime=1_790_000_002)
    ids.update({"nul": nul.session_id, "teams": teams.session_id, "went-on": went_on.session_id})
    # Lines orjson refuses and PostgreSQL's json keeps: a cut emoji, a number past float.
    for name, odd in (("cut-emoji", '"cut \\ud83d here"'), ("huge-number", "1e400")):
        sid = f"0dd0dd00-0000-4000-8000-{len(ids):012d}"
        line = (
            f'{{"parentUuid":null,"type":"user","sessionId":"{sid}","uuid":"{sid[:8]}-u",'
            f'"cwd":"/w/kinds","timestamp":"2026-11-20T10:00:00.000Z","teamName":"beta",'
            f'"sessionKind":"daemon","odd":{odd},"message":{{"role":"user","content":"x"}}}}\n'
        )
        (tree.projects_dir / nul.project_dir.name / f"{sid}.jsonl").write_text(line)
        ids[name] = sid
    names = {v: k for k, v in ids.items()}
    push(tree.root, pg_dsn)
    columns = "team_name, session_kind, seen_parent_link, continued_in"
    fresh = sorted(query(pg_dsn, f"SELECT session_id, {columns} FROM sessions"))
    query(
        pg_dsn,
        "UPDATE sessions SET team_name = NULL, session_kind = NULL, seen_parent_link = 0,"
        " continued_in = NULL; DELETE FROM sessiondex_migrations WHERE version >= 5",
    )
    url = database_url(pg_dsn)
    old = CliRunner().invoke(cli, ["--db", url, "list", "--scope", "all"])
    assert old.exit_code == 1 and "Traceback" not in old.output, old.output  # was a traceback
    from sessiondex.query.teamdb import READ_SCHEMA_VERSION

    reads = f"older than this sessiondex reads ({READ_SCHEMA_VERSION}): `sessiondex store init"
    assert reads in old.stderr
    result = CliRunner().invoke(cli, ["store", "init", url])
    assert result.exit_code == 0 and "applied 005" in result.output, result.output
    assert sorted(query(pg_dsn, f"SELECT session_id, {columns} FROM sessions")) == fresh

    def listed() -> set[str]:
        result = CliRunner().invoke(cli, ["--db", url, "list", "--scope", "all", "--json"])
        return {names[o["session_id"]] for o in json.loads(result.stdout or "[]")}

    assert listed() == SHOWN_KINDS | {"nul"}
    plain = next(tree.root.glob(f"projects/*/{ids['plain']}.jsonl"))
    with open(plain, "ab") as fh:  # a later record naming a kind: the first one decides
        fh.write(json.dumps({"type": "user", "uuid": "9e9e9e9e-0000-4000-8000-000000000009",
                             "parentUuid": None, "sessionId": ids["plain"],
                             "sessionKind": "daemon",
                             "message": {"role": "user", "content": "more"}}).encode() + b"\n")  # fmt: skip
    push(tree.root, pg_dsn)
    assert listed() == SHOWN_KINDS | {"nul"}


@pytest.mark.parametrize(
    "odd",
    [
        '"odd":NaN',
        '"odd":1e400',
        '"odd":1e400,"key":"AKIAIOSFODNN7EXAMPLQ"',  # a line push rewrites (redaction)
        '"odd":"cut \\ud83d emoji"',
    ],
    ids=["nan", "huge-number", "huge-number-redacted", "lone-surrogate"],
)
@pytest.mark.parametrize("lead", ["", "\u00a0"], ids=["plain", "no-break-space-first"])
def test_a_line_the_readers_take_never_stops_a_push(
    pg_dsn: str, tmp_path: Path, odd: str, lead: str
) -> None:
    """Lines our readers read but PostgreSQL's json refuses (NaN, a leading no-break
    space) or json.dumps refuses to write (1e400 once the line is rewritten) ended the
    push of every session with 'Out of range float values…' or 'invalid input syntax
    for type json', and every retry again."""
    tree = ConfigTree(tmp_path / "claude")
    good = build_session(tree, "/home/dev/shop", "Good session")
    good.write()
    sid = "0dd0dd00-0000-4000-8000-0000000000aa"
    line = (
        f'{lead}{{"parentUuid":null,"type":"user","sessionId":"{sid}","uuid":"u-{sid[:8]}",'
        f'"cwd":"/home/dev/odd","timestamp":"2026-11-20T10:00:00.000Z",{odd},'
        '"message":{"role":"user","content":"an odd line"}}\n'
    )
    odd_path = tree.projects_dir / "-home-dev-odd" / f"{sid}.jsonl"
    odd_path.parent.mkdir(parents=True)
    odd_path.write_text(line, encoding="utf-8")
    here = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    local = json.loads(CliRunner().invoke(cli, [*here, "list", "--scope", "all", "--json"]).stdout)
    summary = push(tree.root, pg_dsn)
    assert summary["sessions"] == len(local)
    stored = {r[0] for r in query(pg_dsn, "SELECT session_id FROM sessions")}
    assert {o["session_id"] for o in local} <= stored
    assert push(tree.root, pg_dsn)["entries"] == 0  # and nothing again on a second push


def test_a_line_still_being_written_moves_the_stored_size_and_mtime(
    tmp_path: Path, pg_dsn: str
) -> None:
    """A pushed file that grew only by a line still being written kept the size and
    mtime of its last push in the store ("2 unchanged"), while the local index had the
    file's: list from --db postgresql:// and from the index differed."""
    tree = ConfigTree(tmp_path / "claude")
    s = build_session(tree, "/home/dev/shop", "Auth refactor")
    s.write(mtime=1_795_000_000)
    push(tree.root, pg_dsn)
    with open(s.path, "ab") as fh:
        fh.write(b'{"type":"user","message":{"role":"user","content":"still typ')
    os.utime(s.path, (1_795_000_200, 1_795_000_200))
    push(tree.root, pg_dsn)

    def listed(db: str) -> dict[str, Any]:
        result = CliRunner().invoke(
            cli, ["--config-dir", str(tree.root), "--db", db, "list", "--scope", "all", "--json"]
        )
        assert result.exit_code == 0, result.output
        [row] = json.loads(result.stdout)
        return row

    local, team = listed(str(tmp_path / "index.db")), listed(database_url(pg_dsn))
    assert local["file_size"] == s.path.stat().st_size
    assert (team["file_size"], team["mtime"]) == (local["file_size"], local["mtime"])


# ------------------------------------------------------------- the prefix memo
def _counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Bytes each fingerprint taken by push had to read from the start of a file."""
    from sessiondex.store import push as push_module

    reads: list[int] = []
    real = push_module.fingerprint

    def counted(stream: Any, consumed: int, known: tuple[int, int] = (0, 0)) -> str:
        reads.append(consumed - known[0])
        return real(stream, consumed, known)

    monkeypatch.setattr(push_module, "fingerprint", counted)
    return reads


def test_a_push_with_nothing_to_send_reads_no_transcript(
    tree: ConfigTree, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each skip needs the file's fingerprint: it was taken by reading every byte, so a
    push with nothing to send read the whole history. The memo in the cache dir says
    which bytes a file held at which stat; a file with that stat now is not read."""
    push(tree.root, pg_dsn)
    memo = Path(os.environ["XDG_CACHE_HOME"]) / "sessiondex" / "push-prefixes.json"
    assert len(json.loads(memo.read_text())["files"]) == 3
    reads = _counted_reads(monkeypatch)
    assert push(tree.root, pg_dsn)["unchanged"] == 3
    assert reads == []


def _edit_in_place_mtime_kept(path: Path, pg_dsn: str) -> None:
    before = path.stat()
    data = path.read_bytes().replace(b"expired cookie", b"expired ticket")
    with open(path, "r+b") as file:
        file.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as `touch -r` does


def _store_state_of_an_older_version(path: Path, pg_dsn: str) -> None:
    query(pg_dsn, "UPDATE push_files SET fingerprint = substr(fingerprint, 1, 32)")


def _memo_damaged(path: Path, pg_dsn: str) -> None:
    memo = Path(os.environ["XDG_CACHE_HOME"]) / "sessiondex" / "push-prefixes.json"
    memo.write_bytes(b'{"version": 1, "files": {"' + str(path).encode() + b'": [1, 2')


def _memo_forged(path: Path, pg_dsn: str) -> None:
    """A memo whose entry for the file was hand-edited to a wrong shape."""
    memo = Path(os.environ["XDG_CACHE_HOME"]) / "sessiondex" / "push-prefixes.json"
    data = json.loads(memo.read_text())
    data["files"][str(path)][6] = None
    memo.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_edit_in_place_mtime_kept, "rewritten"),
        (_store_state_of_an_older_version, "rewritten"),
        (_memo_damaged, "unchanged"),
        (_memo_forged, "unchanged"),
    ],
)
def test_the_memo_never_hides_a_change(
    tree: ConfigTree, main: SessionWriter, pg_dsn: str, change: Any, expected: str
) -> None:
    """The memo only spares a read: a same-size edit whose mtime was set back (the
    change time still moves), a store state it cannot vouch for, or a memo damaged or
    edited is read and decided as before."""
    push(tree.root, pg_dsn)
    change(main.path, pg_dsn)
    assert push(tree.root, pg_dsn)[expected] >= 1
    texts = " ".join(str(t) for (t,) in query(pg_dsn, "SELECT text FROM messages"))
    if change is _edit_in_place_mtime_kept:
        assert "expired ticket" in texts and "expired cookie" in texts  # the other session
    assert push(tree.root, pg_dsn)["unchanged"] == 3
    assert_each_entry_once(pg_dsn, tree.root)


def test_a_file_written_moments_ago_is_read_until_it_settles(
    tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stat taken within the racy window of the file's last write cannot prove the
    bytes (a second write in the same clock tick keeps mtime and size): such a file is
    read by every push until it has been quiet for the window."""
    tree = ConfigTree(tmp_path / "claude")
    build_session(tree, "/home/dev/shop", "Fresh").write()  # mtime: now
    push(tree.root, pg_dsn)
    reads = _counted_reads(monkeypatch)
    assert push(tree.root, pg_dsn)["unchanged"] == 1
    assert len(reads) == 1


def test_the_memo_forgets_deleted_transcripts(tree: ConfigTree, pg_dsn: str) -> None:
    push(tree.root, pg_dsn)
    memo = Path(os.environ["XDG_CACHE_HOME"]) / "sessiondex" / "push-prefixes.json"
    gone = next(iter(json.loads(memo.read_text())["files"]))
    Path(gone).unlink()
    push(tree.root, pg_dsn)
    assert gone not in json.loads(memo.read_text())["files"]
    assert len(json.loads(memo.read_text())["files"]) == 2


def _push_editing(
    root: Path,
    dsn: str,
    monkeypatch: pytest.MonkeyPatch,
    path: Path,
    secret: bytes,
    after_chunk: int,
) -> None:
    """One push during which, once ``after_chunk`` chunks are sent, ``secret`` is
    redacted in place with as many ``*`` and the mtime set back (a long-quiet file)."""
    from sessiondex.store import push as push_module

    calls = 0
    real_append = push_module.append

    async def append_then_edit(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        result = await real_append(*args, **kwargs)
        calls += 1
        if calls == after_chunk:
            with open(path, "r+b") as file:
                file.write(path.read_bytes().replace(secret, b"*" * len(secret)))
            os.utime(path, (1_790_000_000, 1_790_000_000))
        return result

    with monkeypatch.context() as patched:
        patched.setattr(push_module, "append", append_then_edit)
        push(root, dsn)


@pytest.mark.parametrize(
    ("after_chunk", "edit_chunk"),
    [
        (1, 1),  # edited after its chunk was read, before its fingerprint was taken
        (2, 1),  # an earlier chunk edited while a later one was sent
        (3, 2),
    ],
)
def test_an_edit_in_place_while_a_push_sends_the_file_is_sent_again(
    tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch, after_chunk: int, edit_chunk: int
) -> None:
    """A user redacting a secret in place while a long push runs: the store kept the
    secret for good. Edited after its chunk was read, the bytes were fingerprinted as
    they are now while the store held them as read; edited while a later chunk was
    sent, the memo took the file's new stat for the old CRC. Either way the next push
    (or this one) sends the file again."""
    from sessiondex.store import push as push_module

    monkeypatch.setattr(push_module, "CHUNK_BYTES", 4096)
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/home/dev/shop", git_branch="main")
    for n in range(60):
        secret = f"my token is mysecretvalueQ{n:02d} " if n % 4 == 1 else ""
        s.user(f"question {n} {secret}" + "padding text " * 20)
    s.assistant("noted")
    path = s.write(mtime=1_790_000_000)
    data = path.read_bytes()
    # a secret well inside the chunk to edit (a chunk ends with the line that crosses
    # each 4096 bytes: chunk k holds about [4096 (k-1), 4096 k) and a line more)
    low, high = (edit_chunk - 1) * 4096 + 800, edit_chunk * 4096 - 100
    secret = next(
        data[i : i + 16] for i in range(low, high) if data.startswith(b"mysecretvalueQ", i)
    )
    _push_editing(tree.root, pg_dsn, monkeypatch, path, secret, after_chunk)
    push(tree.root, pg_dsn)
    texts = " ".join(str(t) for (t,) in query(pg_dsn, "SELECT text FROM messages"))
    assert secret.decode() not in texts
    assert push(tree.root, pg_dsn)["unchanged"] == 1
    assert_each_entry_once(pg_dsn, tree.root)


def test_an_edit_beside_a_line_too_long_to_send_is_sent_again(
    tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line too long to keep is skipped by the reader, unseen: the chunk holding one
    was not checked against the bytes read, and an edit made while it was sent stayed
    out of the store for good. The long line is read for its CRC when met."""
    from sessiondex.transcripts import reader as reader_module

    monkeypatch.setattr(reader_module, "MAX_LINE_BYTES", 2000)
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/home/dev/shop", git_branch="main")
    s.user("my token is mysecretvalueQ01 keep it")
    for n in range(6):
        s.user(f"question {n} " + "padding text " * 20)
    s.user("L" * 5000)  # too long: skipped, never sent
    s.assistant("noted")
    path = s.write(mtime=1_790_000_000)
    secret = b"mysecretvalueQ01"
    _push_editing(tree.root, pg_dsn, monkeypatch, path, secret, 1)
    push(tree.root, pg_dsn)
    texts = " ".join(str(t) for (t,) in query(pg_dsn, "SELECT text FROM messages"))
    assert secret.decode() not in texts and "question 5" in texts
    assert push(tree.root, pg_dsn)["unchanged"] == 1  # and not sent again and again


# ----------------------------------------------------------------------------- deleted
def sdk_delete(dsn: str, project_key: str, session_id: str, subpath: str | None = None) -> None:
    """``PostgresSessionStore.delete``: how README tells a user to remove a session."""
    from sessiondex.store.sdk_store import PostgresSessionStore

    key = {"project_key": project_key, "session_id": session_id}
    if subpath is not None:
        key["subpath"] = subpath

    async def run() -> None:
        async with PostgresSessionStore(dsn) as store:
            await store.delete(key)

    asyncio.run(run())


def stored_keys(dsn: str) -> list[tuple[str, str]]:
    return query(
        dsn,
        "SELECT s.session_id, t.subpath FROM sessions s"
        " JOIN transcripts t ON t.session_ref = s.id ORDER BY 1, 2",
    )


@pytest.mark.parametrize(
    ("subpath", "left_out", "kept"),
    [
        # the session: its subagent is left out too, and does not bring its row back
        (None, 2, []),
        # one subagent transcript: the session stays, that transcript is not sent again
        ("subagents/agent-a1b2", 1, [""]),
    ],
)
def test_a_session_deleted_from_the_store_is_not_pushed_again(
    main: SessionWriter,
    tree: ConfigTree,
    pg_dsn: str,
    subpath: str | None,
    left_out: int,
    kept: list[str],
) -> None:
    """Deleted through the SDK store (a secret in its prose), a session came back whole
    on the next push from any machine that had the transcript: the delete cascaded to
    the push_files rows that said what was sent. A tombstone now keeps it out, and the
    summary counts what was left out."""
    push(tree.root, pg_dsn)
    pk, sid = main.project_dir.name, main.session_id
    sdk_delete(pg_dsn, pk, sid, subpath)
    [(tomb_sub, user, host, recent)] = query(
        pg_dsn,
        "SELECT subpath, deleted_by_user, deleted_by_host, deleted_at > now() - interval '1 hour'"
        " FROM deleted_sessions WHERE project_key = %s AND session_id = %s",
        [pk, sid],
    )
    import getpass
    import socket

    assert (tomb_sub, user, host, recent) == (
        subpath or "",
        getpass.getuser(),
        socket.gethostname(),
        True,
    )
    other = [k for k in stored_keys(pg_dsn) if k[0] != sid]
    main.user("one more line, written after the delete")
    main.append()
    results = [push(tree.root, pg_dsn), push(tree.root, pg_dsn, "--dry-run")]
    for result in results:
        assert result["deleted_in_store"] == left_out
        assert result["files_seen"] == sum(
            result[k] for k in ("new", "grown", "rewritten", "unchanged", "deleted_in_store")
        )
        assert stored_keys(pg_dsn) == sorted(other + [(sid, s) for s in kept])
    # the line appended since goes with the session's main transcript, if that stays
    assert [r["entries"] for r in results] == [0 if subpath is None else 1, 0]
    text = _summary_text(tree.root, pg_dsn)
    files = "file" if left_out == 1 else "files"
    assert f"{left_out} {files} left out as deleted from the store" in text


def _summary_text(root: Path, dsn: str, *args: str) -> str:
    result = CliRunner().invoke(
        cli, ["--config-dir", str(root), "push", "--to", database_url(dsn), *args]
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def test_resend_deleted_sends_that_session_again_whole(
    main: SessionWriter, tree: ConfigTree, pg_dsn: str
) -> None:
    push(tree.root, pg_dsn)
    before = stored_keys(pg_dsn)
    entries = query(pg_dsn, "SELECT count(*) FROM entries")
    pk, sid = main.project_dir.name, main.session_id
    sdk_delete(pg_dsn, pk, sid)
    dry = push(tree.root, pg_dsn, "--dry-run", "--resend-deleted", sid)
    assert (dry["deleted_in_store"], dry["resent_deleted"], dry["new"]) == (0, 2, 2)
    assert query(pg_dsn, "SELECT count(*) FROM deleted_sessions") == [(1,)]  # a dry run
    result = push(tree.root, pg_dsn, "--resend-deleted", sid)
    assert (result["deleted_in_store"], result["resent_deleted"], result["new"]) == (0, 2, 2)
    assert stored_keys(pg_dsn) == before
    assert query(pg_dsn, "SELECT count(*) FROM entries") == entries
    assert query(pg_dsn, "SELECT count(*) FROM deleted_sessions") == [(0,)]
    again = push(tree.root, pg_dsn)
    assert (again["unchanged"], again["deleted_in_store"], again["entries"]) == (3, 0, 0)
    assert_each_entry_once(pg_dsn, tree.root)


@pytest.mark.parametrize(
    "typed",
    [
        str.upper,  # an ID names its session in any case, as everywhere in the CLI
        lambda sid: sid[:8],  # so does a prefix of 8 or more that names one alone
        lambda sid: sid[:13].upper(),
    ],
    ids=["upper", "prefix", "upper-prefix"],
)
def test_resend_deleted_takes_an_id_as_the_cli_takes_ids(
    main: SessionWriter, tree: ConfigTree, pg_dsn: str, typed: Callable[[str], str]
) -> None:
    """An ID typed in upper case (or a prefix) silently resent nothing."""
    push(tree.root, pg_dsn)
    pk, sid = main.project_dir.name, main.session_id
    sdk_delete(pg_dsn, pk, sid)
    result = push(tree.root, pg_dsn, "--resend-deleted", typed(sid))
    assert (result["deleted_in_store"], result["resent_deleted"], result["new"]) == (0, 2, 2)
    assert query(pg_dsn, "SELECT count(*) FROM deleted_sessions") == [(0,)]


def test_resend_deleted_of_a_session_not_deleted_says_so(
    main: SessionWriter, tree: ConfigTree, pg_dsn: str
) -> None:
    """An ID that names no deleted session (a typo, or one already sent again) was
    ignored without a word: a warning on stderr, and the push goes on."""
    push(tree.root, pg_dsn)
    pk, sid = main.project_dir.name, main.session_id
    sdk_delete(pg_dsn, pk, sid)
    other = "00000000-0000-4000-8000-000000000000"
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "push", "--to", database_url(pg_dsn), "--json"]
        + ["--resend-deleted", other],
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"warning: --resend-deleted {other}: no session deleted from the store has this ID"
    ]
    summary = json.loads(result.stdout)
    assert (summary["deleted_in_store"], summary["resent_deleted"]) == (2, 0)
    assert summary["resend_not_deleted"] == [other]
    assert query(pg_dsn, "SELECT count(*) FROM deleted_sessions") == [(1,)]


def test_resend_deleted_of_a_prefix_of_several_deleted_sessions_is_ambiguous(
    main: SessionWriter, tree: ConfigTree, pg_dsn: str
) -> None:
    push(tree.root, pg_dsn)
    pk, sid = main.project_dir.name, main.session_id
    twin = sid[:9] + "0000-4000-8000-000000000000"  # deleted too, never pushed
    sdk_delete(pg_dsn, pk, sid)
    sdk_delete(pg_dsn, pk, twin)
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "push", "--to", database_url(pg_dsn)]
        + ["--resend-deleted", sid[:8]],
    )
    assert result.exit_code == 3, result.output
    assert result.stderr.startswith(f"Error: --resend-deleted {sid[:8]}: 2 deleted sessions")
    assert sid in result.stderr and twin in result.stderr
    assert query(pg_dsn, "SELECT count(*) FROM deleted_sessions") == [(2,)]  # nothing sent


def test_an_sdk_app_writing_to_a_deleted_session_keeps_it_out_of_push(
    main: SessionWriter, tree: ConfigTree, pg_dsn: str
) -> None:
    """The SDK's own rule: an append after a delete starts the key afresh, and the store
    holds what the app wrote. Push still leaves the local file out: sent, it would
    bring back every line the delete removed."""
    from sessiondex.store.sdk_store import PostgresSessionStore

    push(tree.root, pg_dsn)
    key = {"project_key": main.project_dir.name, "session_id": main.session_id}
    sdk_delete(pg_dsn, key["project_key"], key["session_id"])
    written = {"type": "user", "uuid": "after-delete", "message": {"content": "still here"}}

    async def append_and_load() -> Any:
        async with PostgresSessionStore(pg_dsn) as store:
            await store.append(key, [written])
            return await store.load(key)

    assert asyncio.run(append_and_load()) == [written]
    result = push(tree.root, pg_dsn)
    assert result["deleted_in_store"] == 2
    assert query(
        pg_dsn,
        "SELECT e.entry::text FROM entries e JOIN transcripts t ON t.id = e.transcript_ref"
        " JOIN sessions s ON s.id = t.session_ref WHERE s.session_id = %s",
        [key["session_id"]],
    ) == [(json.dumps(written, separators=(",", ":")),)]


@pytest.mark.parametrize("at_chunk", [1, 2])
def test_a_delete_while_a_push_sends_the_session_wins(
    tmp_path: Path, pg_dsn: str, monkeypatch: pytest.MonkeyPatch, at_chunk: int
) -> None:
    """A delete that lands while a push runs: after the push read what was deleted
    (1), or between two chunks of the file (2). The push's next chunk re-created the
    session and, its push_files row gone, sent the file from its first byte."""
    from sessiondex.store import push as push_module

    monkeypatch.setattr(push_module, "CHUNK_BYTES", 4096)
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/home/dev/shop", git_branch="main")
    for n in range(40):
        s.user(f"question {n} " + "padding text " * 20)
    s.write(mtime=1_790_000_000)
    keep = build_session(tree, "/home/dev/blog", "RSS feed")
    keep.write(mtime=1_790_000_100)
    calls = 0
    real_chunk = push_module.Pusher._chunk

    async def delete_then_chunk(self: Any, tf: Any, key: Any, status: str) -> Any:
        nonlocal calls
        if tf.session_id == s.session_id:
            calls += 1
            if calls == at_chunk:
                from sessiondex.store.sdk_store import PostgresSessionStore

                async with PostgresSessionStore(pg_dsn) as store:
                    await store.delete(
                        {"project_key": s.project_dir.name, "session_id": s.session_id}
                    )
        return await real_chunk(self, tf, key, status)

    monkeypatch.setattr(push_module.Pusher, "_chunk", delete_then_chunk)
    result = push(tree.root, pg_dsn)
    assert calls == at_chunk  # the file was not read further
    assert result["deleted_in_store"] == 1 and result["sessions"] == 1
    assert [k[0] for k in stored_keys(pg_dsn)] == [keep.session_id]
    assert push(tree.root, pg_dsn)["deleted_in_store"] == 1
    assert [k[0] for k in stored_keys(pg_dsn)] == [keep.session_id]
