"""An index a newer sessiondex made, met by an older one: left as it is, everywhere.

"Newer" is either of the two things only a newer copy writes: a derivation version
above this code's (``meta.derivation_version``), or a migration this code does not
know (a row of ``_sqlite_migrations``). An older process meeting either at open, or
later while it runs (a ``watch``, an MCP server, the web view, the picker left open
through an upgrade), stops with one line and writes nothing: the two would otherwise
clear and rebuild the index in turns, or the old one write rows by its old rules
into tables the newer schema changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.indexer.db import open_db
from sessiondex.indexer.lock import watcher_alive
from sessiondex.indexer.refresh import refresh
from sessiondex.indexer.shape import DERIVATION_VERSION, MIGRATION_SET
from tests.builders import ConfigTree, copy_fixtures

DEADLINE = 20.0


def _newer_rules(conn: sqlite3.Connection) -> None:
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = 'derivation_version'",
        [str(DERIVATION_VERSION + 1)],
    )


def _newer_migration(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at)"
        " VALUES (?, 'm999_from_a_newer_sessiondex', '2030-01-01 00:00:00')",
        [MIGRATION_SET],
    )


NEWER: dict[str, Callable[[sqlite3.Connection], None]] = {
    "derivation": _newer_rules,
    "migration": _newer_migration,
}


def _make_newer(path: Path, how: str) -> None:
    """What a newer sessiondex leaves in the file, written from a connection of its own."""
    conn = sqlite3.connect(path, timeout=DEADLINE)
    try:
        with conn:
            NEWER[how](conn)
    finally:
        conn.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _built(tmp_path: Path) -> tuple[Path, Path]:
    root = copy_fixtures(tmp_path)
    path = tmp_path / "index.db"
    db = open_db(path)
    refresh(db, [root])
    db.close()  # the last connection: the WAL is folded into the file and removed
    return root, path


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "newer sessiondex" in lines[0], stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize("how", sorted(NEWER))
@pytest.mark.parametrize(
    "command",
    [
        ["list", "--scope", "all"],
        ["--no-refresh", "list", "--scope", "all"],
        ["search", "anything"],
        ["index"],
        ["index", "--rebuild"],
    ],
    ids=["list", "list-no-refresh", "search", "index", "rebuild"],
)
def test_an_older_command_leaves_a_newer_index_byte_for_byte(
    tmp_path: Path, how: str, command: list[str]
) -> None:
    """A migration this code does not know counts as "from newer" as a higher
    derivation version does: before, such an index failed the read-only open's check
    every time, was opened for writing, and the refresh wrote rows by the old rules
    into tables the newer migration may have changed (exit 0)."""
    root, path = _built(tmp_path)
    _make_newer(path, how)
    before = _digest(path)

    result = CliRunner().invoke(cli, ["--config-dir", str(root), "--db", str(path), *command])

    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    _one_line(result.stderr)
    assert _digest(path) == before
    assert not list(tmp_path.glob("index.db.corrupt-*"))


# --------------------------------------------------------------------- a running watch
@pytest.mark.parametrize("how", sorted(NEWER))
def test_a_running_watch_stops_when_a_newer_sessiondex_takes_the_index(
    tmp_path: Path, how: str
) -> None:
    """A ``watch`` started before the upgrade checked the index only when it opened
    it, and went on ingesting appends by its own rules into the index the newer copy
    had re-derived. It now looks before each pass, stops with one line and exit 1, and
    the append waits for the newer copy."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/work/repo")
    s.user("alpha start")
    s.write()
    path = tmp_path / "index.db"
    done = threading.Event()
    counts: dict[str, int] = {}

    def upgrade_under_it() -> None:
        end = time.monotonic() + DEADLINE
        while not done.is_set() and not watcher_alive(path):
            if time.monotonic() > end:
                return
            time.sleep(0.02)
        time.sleep(0.3)  # the catch-up is committed before the lock is looked at
        _make_newer(path, how)
        conn = sqlite3.connect(path)
        try:
            counts["before"] = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        finally:
            conn.close()
        s.user("zulu appended after the upgrade")
        s.append()
        # A watch that does not stop is stopped as Ctrl-C would (exit 0: the test fails).
        while watcher_alive(path) and time.monotonic() < end:
            time.sleep(0.05)
        if watcher_alive(path):
            os.kill(os.getpid(), signal.SIGTERM)

    upgrader = threading.Thread(target=upgrade_under_it)
    upgrader.start()
    try:
        result = CliRunner().invoke(
            cli,
            [
                "--config-dir",
                str(tree.root),
                "--db",
                str(path),
                "watch",
                "--debounce",
                "10",
                "--no-archive",
            ],
        )
    finally:
        done.set()
        upgrader.join(DEADLINE)
    assert "before" in counts, result.output
    assert result.exit_code == 1, result.output
    line = _one_line(result.stderr)
    assert line.startswith("Error: stopped watching: "), line
    assert not watcher_alive(path)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == counts["before"]
        if how == "derivation":
            stored = conn.execute(
                "SELECT value FROM meta WHERE key = 'derivation_version'"
            ).fetchone()[0]
            assert stored == str(DERIVATION_VERSION + 1)
    finally:
        conn.close()


@pytest.mark.parametrize("how", sorted(NEWER))
def test_a_watch_started_on_a_newer_index_does_not_start(tmp_path: Path, how: str) -> None:
    """The start's own line, for either kind of "newer", and the file untouched."""
    root, path = _built(tmp_path)
    _make_newer(path, how)
    before = _digest(path)
    result = CliRunner().invoke(
        cli, ["--config-dir", str(root), "--db", str(path), "watch", "--no-archive"]
    )
    assert result.exit_code == 1, result.output
    line = _one_line(result.stderr)
    assert line.startswith("Error: cannot start watching: the index "), line
    assert not watcher_alive(path)
    assert _digest(path) == before


@pytest.mark.parametrize("how", sorted(NEWER))
@pytest.mark.parametrize("shell", ["bash_complete", "zsh_complete"])
def test_a_tab_on_a_newer_index_offers_nothing_and_says_nothing(
    tmp_path: Path, how: str, shell: str
) -> None:
    """Shell completion of a session argument (``show <Tab>``) on a newer sessiondex's
    index: nothing offered, nothing on stderr (no traceback in the user's command
    line), exit 0, the file untouched (``indexer.db.open_if_current``)."""
    root, path = _built(tmp_path)
    words = f"sessiondex --config-dir {root} --db {path} show "
    env = {
        "_SESSIONDEX_COMPLETE": shell,
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split())),
    }
    offered = CliRunner().invoke(cli, [], env=env, prog_name="sessiondex")
    assert offered.exit_code == 0 and offered.stdout.strip(), offered.output  # IDs, names
    _make_newer(path, how)
    before = _digest(path)
    result = CliRunner().invoke(cli, [], env=env, prog_name="sessiondex")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "" and result.stderr == ""
    assert _digest(path) == before


# --------------------------------------------------------------------- every command
def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest.update(str(path).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


# Every command that opens the index, by ``{sid}`` (a session of the fixtures), ``{cwd}``
# (its directory) and ``{out}`` (a scratch dir).
EVERY_COMMAND = [
    ["stats"],
    ["from-pr", "1"],
    ["resolve", "{sid}"],
    ["continue", "--cwd", "{cwd}"],
    ["resume", "--dry-run", "{sid}"],
    ["show", "{sid}"],
    ["export", "{sid}", "-o", "{out}/out.md"],
    ["rename", "{sid}", "a new name"],
    ["tag", "{sid}", "t1"],
    ["untag", "{sid}"],
    ["fork", "{sid}"],
    ["delete", "{sid}", "--yes"],
    ["cleanup"],
    ["archive", "--to", "{out}/archive"],
    ["restore", "{sid}"],
]


@pytest.mark.parametrize("command", EVERY_COMMAND, ids=[c[0] for c in EVERY_COMMAND])
def test_every_command_says_the_one_line_and_touches_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    """The commands that open the index for writing (stats, the mutations, cleanup,
    archive…) said "cannot open the index at X: the index X was built by a newer
    sessiondex …": the file named twice, as if it could not be opened. Now the one line
    every reading command says; neither the index nor a transcript changes."""
    root, path = _built(tmp_path)
    conn = sqlite3.connect(path)
    try:
        sid, cwd = conn.execute(
            "SELECT session_id, cwd FROM sessions WHERE archived = 0 ORDER BY id LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    _make_newer(path, "derivation")
    before, transcripts = _digest(path), _tree_digest(root)
    out = tmp_path / "out"
    out.mkdir()
    args = [a.format(sid=sid, cwd=cwd, out=out) for a in command]

    result = CliRunner().invoke(cli, ["--config-dir", str(root), "--db", str(path), *args])

    assert result.exit_code == 1, result.output
    line = _one_line(result.stderr)
    assert line.startswith(f"Error: the index {path} was built by a newer sessiondex"), line
    assert _digest(path) == before
    assert _tree_digest(root) == transcripts


# --------------------------------------------------------------------- the front ends
def _messages(path: Path) -> int:
    conn = sqlite3.connect(path, timeout=DEADLINE)
    try:
        return int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def _append_prompt(root: Path, text: str) -> None:
    """One more user record at the end of a fixture transcript (a session goes on)."""
    transcript = sorted((root / "projects").glob("*/*.jsonl"))[0]
    record = {
        "type": "user",
        "uuid": "0b0b0b0b-0000-4000-8000-00000000abcd",
        "parentUuid": None,
        "sessionId": transcript.stem,
        "timestamp": "2030-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": text},
    }
    with open(transcript, "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


@pytest.mark.parametrize("how", sorted(NEWER))
def test_the_mcp_server_answers_a_tool_error_and_writes_nothing(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An MCP server started before the upgrade ingested the session's next append by
    its old rules into the newer index, then (with the write refused) answered
    "internal error in list_sessions: IndexFromNewer: …" with a traceback in its log.
    Now: the one line as the tool's error, no traceback, nothing written."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from sessiondex import Index
    from sessiondex.mcp_server.service import SessionService, Settings, UserError

    root, path = _built(tmp_path)
    service = SessionService(lambda: Index(path, [root]), Settings(cwd=str(tmp_path)))
    try:
        assert json.loads(service.list_sessions(scope="all"))["count"] > 0
        _make_newer(path, how)
        before = _messages(path)
        _append_prompt(root, "yankee appended after the upgrade")
        for _ in range(2):  # the first call, and the next one on a reopened Index
            with pytest.raises(UserError) as raised:
                service.list_sessions(scope="all")
            text = str(raised.value)
            assert text.startswith("the index ") and "newer sessiondex" in text, text
            assert "internal error" not in text and "\n" not in text
        assert _messages(path) == before
    finally:
        service.close()
    assert not [r for r in caplog.records if r.exc_info], caplog.text


@pytest.mark.parametrize("how", sorted(NEWER))
def test_the_web_view_answers_an_error_page_and_writes_nothing(tmp_path: Path, how: str) -> None:
    """``serve`` running through the upgrade refreshed by its old rules on the next
    request; now every page answers 503 with the one line, and nothing is written."""
    pytest.importorskip("datasette", reason="the web extra is not installed")
    import asyncio

    from sessiondex import Index
    from sessiondex.web.app import build
    from sessiondex.web.state import WebIndex

    root, path = _built(tmp_path)
    now = [1000.0]
    state = WebIndex(Index(path, [root]), clock=lambda: now[0])
    state.start()
    loop = asyncio.new_event_loop()
    try:
        datasette = build(state, path)
        assert loop.run_until_complete(datasette.client.get("/")).status_code == 200
        _make_newer(path, how)
        before = _messages(path)
        _append_prompt(root, "yankee appended after the upgrade")
        for page in ("/", "/search?q=yankee"):
            now[0] += 5  # past the refresh throttle
            response = loop.run_until_complete(datasette.client.get(page))
            assert response.status_code == 503, (page, response.text[:300])
            assert "newer sessiondex" in response.text and "Traceback" not in response.text
        assert _messages(path) == before
    finally:
        loop.close()
        state.close()


@pytest.mark.parametrize("how", sorted(NEWER))
def test_serve_and_pick_refuse_to_start_on_a_newer_index(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve`` said "cannot open the index at X: the index X was built …" (the path
    twice); ``pick`` opened the picker on it, which showed "IndexFromNewer: …" in its
    status line. Both now stop with the one line, exit 1, before anything starts."""
    pytest.importorskip("datasette", reason="the web extra is not installed")
    import sessiondex.cli.pick_cmd as pick_cmd
    import sessiondex.picker as picker

    root, path = _built(tmp_path)
    _make_newer(path, how)
    before = _digest(path)
    opened: list[object] = []
    monkeypatch.setattr(pick_cmd, "has_terminal", lambda: True)
    monkeypatch.setattr(picker, "run_picker", lambda *a, **k: opened.append(a))
    base = ["--config-dir", str(root), "--db", str(path)]
    for command in (["serve", "--port", "0"], ["pick"]):
        result = CliRunner().invoke(cli, [*base, *command])
        assert result.exit_code == 1, (command, result.output)
        line = _one_line(result.stderr)
        assert line.startswith("Error: the index "), line
    assert opened == []
    assert _digest(path) == before


@pytest.mark.parametrize("watching", [False, True], ids=["refreshing", "watch-running"])
def test_an_open_picker_says_so_once_and_writes_nothing(tmp_path: Path, watching: bool) -> None:
    """The picker's live thread, left open through the upgrade: refreshing by itself, or
    only looking at the file while a ``watch`` keeps it (it then never asked, and went
    on showing the newer index read by this code). One warning, nothing written."""
    from sessiondex.indexer.lock import WatcherLock
    from sessiondex.picker.source import Freshness, Source

    root, path = _built(tmp_path)
    _make_newer(path, "derivation")
    before = _messages(path)
    _append_prompt(root, "yankee appended after the upgrade")
    said: list[str] = []
    source = Source(path, [root])
    freshness = Freshness(source, 0.05, lambda: None, said.append)
    lock = WatcherLock(path)
    if watching:
        lock.acquire()
    try:
        freshness.start()
        end = time.monotonic() + DEADLINE
        while not said and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.3)  # a few more rounds: said once
    finally:
        freshness.stop()
        source.close()
        if watching:
            lock.release()
    assert len(said) == 1 and "newer sessiondex" in said[0], said
    assert _messages(path) == before


@pytest.mark.parametrize("noticed_by", ["typing", "live-thread"])
def test_an_open_picker_shows_the_one_line_instead_of_rows(tmp_path: Path, noticed_by: str) -> None:
    """A picker left open through the upgrade went on answering every keystroke from
    the newer index by this code's rules ("1 match", rows read from tables it does not
    know); its live thread said so only in a toast that faded ("could not refresh the
    index: the index …"), and without the live thread nothing was said. Now the status
    line says the CLI's line (no class name, no "could not refresh"), no row is shown,
    and the index is left as the newer copy made it."""
    pytest.importorskip("textual")
    from tests.picker_world import PickerWorld, drive
    from tests.test_picker import screen_text

    world = PickerWorld(tmp_path)

    async def run(app: Any, pilot: Any) -> Any:
        assert app.picker.session_list.rows
        _make_newer(world.db, "derivation")
        before = _digest(world.db)
        if noticed_by == "typing":
            await pilot.press(*"coupon")
        for _ in range(200):  # the live thread's round, then its reload (bounded)
            if app.picker.error:
                break
            await pilot.pause(0.02)
        await pilot.pause()  # the status line redrawn (no rows: nothing to paint)
        status = next(x for x in screen_text(app).splitlines() if "sessiondex pick" in x)
        return app.picker.error, status, list(app.picker.session_list.rows), before

    _, (error, status, rows, before) = drive(
        world, run, live_interval=None if noticed_by == "typing" else 0.05
    )
    assert error is not None and error.startswith(f"the index {world.db} was built by a newer")
    assert "the index " in status and "IndexFromNewer" not in status, status
    assert rows == []
    assert _digest(world.db) == before


# --------------------------------------------------------------------- the SDK's functions
@pytest.mark.parametrize("how", sorted(NEWER))
def test_the_sdk_drop_ins_answer_from_the_transcripts_beside_a_newer_default_index(
    tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's session functions never fail for want of a usable index (their
    contract: the SDK reads the files). A program of an old virtualenv on a default
    index a newer sessiondex made got IndexFromNewer raised at it; it now gets the
    answer read from the transcripts in memory, with one note, and the index stays as
    the newer copy left it."""
    import sessiondex.sdk as sdk_api

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/work/repo")
    s.user("a question")
    s.assistant("an answer")
    s.write()
    monkeypatch.delenv("SESSIONDEX_DB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert len(sdk_api.list_sessions(config_dir=tree.root)) == 1  # builds the default index
    path = tmp_path / "cache" / "sessiondex" / "index.db"
    _make_newer(path, how)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = _digest(path)
    s.user("a second question")
    s.append()

    assert [i.session_id for i in sdk_api.list_sessions(config_dir=tree.root)] == [s.session_id]
    info = sdk_api.get_session_info(s.session_id, config_dir=tree.root)
    assert info is not None and info.session_id == s.session_id
    assert len(sdk_api.get_session_messages(s.session_id, config_dir=tree.root)) == 3
    assert _digest(path) == before


@pytest.mark.parametrize("refresh", [True, False], ids=["refresh", "no-refresh"])
@pytest.mark.parametrize("given", ["path", "connection"])
def test_an_sdk_reader_given_a_newer_index_raises_the_public_exception(
    tmp_path: Path, given: str, refresh: bool
) -> None:
    """A ``db=`` the caller gives is used as given (README, the SDK functions): on a
    newer sessiondex's index every reader raises ``sessiondex.IndexFromNewer``, one
    line, whether the path or an open connection, with ``refresh=False`` too. Before,
    that class could not be imported from ``sessiondex`` (AttributeError)."""
    import sessiondex
    import sessiondex.sdk as sdk_api

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/work/repo")
    s.user("a question")
    s.assistant("an answer")
    s.write()
    path = tmp_path / "index.db"
    assert len(sdk_api.list_sessions(db=path, config_dir=tree.root)) == 1
    _make_newer(path, "derivation")
    before = _messages(path)
    public = sessiondex.IndexFromNewer
    assert "IndexFromNewer" in sessiondex.__all__
    readers: list[Callable[..., object]] = [
        lambda **kw: sdk_api.list_sessions(**kw),
        lambda **kw: sdk_api.get_session_info(s.session_id, **kw),
        lambda **kw: sdk_api.get_session_messages(s.session_id, **kw),
        lambda **kw: sdk_api.list_subagents(s.session_id, **kw),
    ]
    for read in readers:
        conn = sqlite3.connect(path) if given == "connection" else None
        try:
            with pytest.raises(public) as raised:
                read(db=conn or path, config_dir=tree.root, refresh=refresh)
        finally:
            if conn is not None:
                conn.close()
        text = str(raised.value)
        assert "\n" not in text and "was built by a newer sessiondex" in text, text
    assert _messages(path) == before


def test_an_sdk_drop_in_write_is_refused_as_an_oserror_before_the_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's writers raise ``OSError`` for a write refused (as for a read-only index,
    ``sdk._writable``); IndexFromNewer, a RuntimeError no program moving from the SDK
    expects, escaped instead. Nothing is appended, and the index is left as it is."""
    import sessiondex.sdk as sdk_api

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/work/repo")
    s.user("a question")
    s.write()
    monkeypatch.delenv("SESSIONDEX_DB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert len(sdk_api.list_sessions(config_dir=tree.root)) == 1
    path = tmp_path / "cache" / "sessiondex" / "index.db"
    _make_newer(path, "derivation")
    transcript = s.path.read_bytes()
    for write in (
        lambda: sdk_api.rename_session(s.session_id, "new title", config_dir=tree.root),
        lambda: sdk_api.tag_session(s.session_id, "t1", config_dir=tree.root),
    ):
        with pytest.raises(OSError, match="newer sessiondex"):
            write()
    assert s.path.read_bytes() == transcript
    assert _messages(path) == 1
