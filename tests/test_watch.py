"""``watch``: a live index equals a rebuild, half lines stay invisible, one writer, clean stop.

The watcher runs in-process (a :class:`indexer.watch.Watcher` in this test's threads) for
the scenarios, and as a real ``sessiondex watch`` subprocess for signals and the lock.
Nothing here asserts a duration: waits poll for a condition with a generous deadline and
fail with the state they last saw.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import queue
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import sessiondex.indexer.watch as watch_module
from sessiondex.cli.main import cli
from sessiondex.indexer.db import open_db
from sessiondex.indexer.lock import WatcherLock, lock_path, watcher_alive
from sessiondex.indexer.refresh import refresh
from sessiondex.indexer.watch import BatchReport, Watcher
from sessiondex.query.filters import Filters
from sessiondex.query.search import search
from sessiondex.query.sessions import select_rows
from tests.builders import ConfigTree, SessionWriter, append_bytes, dumps
from tests.helpers_index import check_fts_integrity, index_snapshot, rebuilt_snapshot

# watchdog's own noise when a watched directory moves (see cli/watch_cmd.py)
pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")

DEADLINE = 20.0  # seconds; only ever reached when something is broken
# The in-process watcher's idle tick (1 s in use): what it does on a tick (leave or go
# back to native events, watch a projects/ dir that appeared) is the same ten times a
# second, and a test waiting for it waits a tenth as long.
TICK = 0.1


@pytest.fixture(autouse=True)
def quick_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_module, "TICK", TICK)


EVERYWHERE = Filters(scope="all", all_kinds=True, include_archived=True)


def wait_for(condition: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
    end = time.monotonic() + deadline
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def found(db: Any, word: str) -> list[str]:
    return [hit["session_id"] for hit in search(db, word, EVERYWHERE)]


class Batches:
    """Thread-safe record of the watcher's applied batches."""

    def __init__(self) -> None:
        self.items: list[BatchReport] = []
        self._lock = threading.Lock()

    def __call__(self, report: BatchReport) -> None:
        with self._lock:
            self.items.append(report)

    def since(self, index: int) -> list[BatchReport]:
        with self._lock:
            return self.items[index:]

    def __len__(self) -> int:
        with self._lock:
            return len(self.items)


@pytest.fixture
def start_watcher(tmp_path: Path) -> Iterator[Callable[..., tuple[Watcher, Batches]]]:
    """Start in-process watchers; at teardown stop them and check that no thread leaked."""
    before = set(threading.enumerate())
    started: list[Watcher] = []

    def start(roots: list[Path], **options: Any) -> tuple[Watcher, Batches]:
        batches = Batches()
        options = {"debounce": 0.05, "max_latency": 0.3, "rescan": 0, **options}
        watcher = Watcher(tmp_path / "index.db", roots, on_batch=batches, **options)
        started.append(watcher)
        watcher.start(timeout=DEADLINE)
        return watcher, batches

    yield start
    for watcher in started:
        watcher.stop()
        assert watcher.failure is None, watcher.failure
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert leaked == []


def session(tree: ConfigTree, cwd: str, text: str, **kwargs: Any) -> SessionWriter:
    s = tree.session(cwd=cwd, **kwargs)
    s.user(text)
    s.assistant(f"answer to {text}")
    s.write()
    return s


def split_append(s: SessionWriter, text: str, cut: int | None, pause: float) -> None:
    """Append one user record in two writes, ``cut`` bytes first (None: all but the \\n)."""
    s.user(text)
    line = dumps(s.entries.pop()) + b"\n"  # popped: the writer must not write it again
    cut = len(line) - 1 if cut is None else cut
    append_bytes(s.path, line[:cut])
    time.sleep(pause)
    append_bytes(s.path, line[cut:])


# --------------------------------------------------------------------- live == rebuild
def run_writer(tree: ConfigTree, live: dict[str, SessionWriter]) -> None:
    """Everything a busy machine does to transcripts while the watcher runs."""
    a, b, c, d, e, f = (live[k] for k in "abcdef")
    pause = 0.02
    for i in range(6):
        a.user(f"alpha append {i}")
        a.assistant(f"alpha reply {i}")
        a.append()
        split_append(b, f"bravo split {i}", cut=None if i % 2 else 25, pause=pause)
        time.sleep(pause)
    a.meta("custom-title", customTitle="Renamed alpha")  # rename
    a.append()
    b.meta("tag", tag="urgent")  # tag
    b.append()
    c.pr_link(number=7, url="https://github.com/acme/app/pull/7", repository="acme/app")
    c.append()
    # new project dirs, one with a session that at once gets a new subagents/ folder
    g = session(tree, "/srv/brand/new", "golf in a new project")
    h = tree.session(cwd="/srv/other/new")
    h.user("hotel spawns an agent")
    turn = h.assistant("delegating", tool_uses=[("Task", {"prompt": "look"})])
    agent = h.subagent(agent_id="a1b2c3", tool_use_id=turn.tool_use_ids[0])
    agent.user("india inside a subagent")
    agent.assistant("india done")
    h.write()
    time.sleep(pause)
    # a subagents/ folder appearing under an existing session
    late = c.subagent(agent_id="d4e5f6", tool_use_id="toolu_late")
    late.user("juliet late subagent")
    late.write()
    g.user("golf grows")
    g.append()
    # delete a main transcript
    d.path.unlink()
    # rewrite in place (same inode, shorter, different content)
    lines = c.path.read_bytes().splitlines(keepends=True)
    with open(c.path, "r+b") as fh:
        fh.truncate(0)
        fh.write(b"".join(lines[:2]))
        time.sleep(pause)
        c.user("kilo after rewrite")
        fh.write(dumps(c.entries.pop()) + b"\n")
    # atomic replace by rename (an editor's save): new inode under the same name
    e.user("lima atomic replace")
    tmp = e.path.with_name(e.path.name + ".tmp")
    tmp.write_bytes(e.to_bytes())
    os.replace(tmp, e.path)
    # a transcript moved to a new name (another session id)
    os.rename(f.path, f.path.with_name("0f0f0f0f-0000-4000-8000-000000000001.jsonl"))
    # a whole project dir moved, then another deleted
    other = tree.project_dir("/srv/other/new")
    other.rename(other.with_name(other.name + "-moved"))
    shutil.rmtree(tree.project_dir("/srv/brand/new"))
    # mtime-only change
    os.utime(a.path, (1_800_000_000, 1_800_000_000))
    # and a last unterminated line that stays unterminated
    append_bytes(b.path, b'{"type":"user","message":{"role":"user","content":"mike half')


@pytest.mark.parametrize("poll", [False, True], ids=["native", "polling"])
def test_live_index_equals_rebuild(tmp_path: Path, start_watcher, poll: bool) -> None:
    tree = ConfigTree(tmp_path / "claude")
    live = {
        "a": session(tree, "/work/repo", "alpha start"),
        "b": session(tree, "/work/repo", "bravo start"),
        "c": session(tree, "/work/repo", "charlie start"),
        "d": session(tree, "/work/repo", "delta start"),
        "e": session(tree, "/work/side", "echo start"),
        "f": session(tree, "/work/side", "foxtrot start"),
    }
    sub = live["a"].subagent(agent_id="abc123", tool_use_id="toolu_x")
    sub.user("alpha subagent")
    sub.write()
    watcher, batches = start_watcher([tree.root], poll=poll, poll_interval=0.1)
    assert watcher.observer_kind == ("polling" if poll else "inotify")

    writer = threading.Thread(target=run_writer, args=(tree, live))
    writer.start()
    writer.join(DEADLINE)
    assert not writer.is_alive()

    expected = rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: index_snapshot(db) == expected, "the live index to match a rebuild")
        check_fts_integrity(db)
        assert found(db, "kilo") and found(db, "juliet") and found(db, "india")
        assert not found(db, "mike") and not found(db, "delta")
    finally:
        db.close()
    # rescan is off and the catch-up ran before the writer: events did all of it
    assert {r.reason for r in batches.since(0)} == {"catch-up", "events"}


# --------------------------------------------------------------------- partial lines
@pytest.mark.parametrize("cut", [None, 30], ids=["all-but-newline", "mid-line"])
def test_partial_line_never_visible(tmp_path: Path, start_watcher, cut: int | None) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/work/repo", "hello")
    watcher, batches = start_watcher([tree.root])
    db = open_db(tmp_path / "index.db")
    seen_early: list[list[str]] = []
    second_half = threading.Event()
    done = threading.Event()

    def reader() -> None:
        rdb = open_db(tmp_path / "index.db")
        try:
            while not done.is_set():
                early = not second_half.is_set()
                hits = found(rdb, "zanzibar")
                if hits and early:
                    seen_early.append(hits)
        finally:
            rdb.close()

    poller = threading.Thread(target=reader)
    poller.start()
    try:
        s.user("zanzibar quokka")
        line = dumps(s.entries.pop()) + b"\n"
        cut_at = len(line) - 1 if cut is None else cut
        mark = len(batches)
        append_bytes(s.path, line[:cut_at])
        # the watcher has seen the half line: it read the file after the first write
        wait_for(
            lambda: any(str(s.path) in r.paths for r in batches.since(mark)),
            "a batch that read the half-written file",
        )
        assert found(db, "zanzibar") == []
        second_half.set()
        append_bytes(s.path, line[cut_at:])
        assert wait_for(lambda: found(db, "zanzibar"), "the completed line") == [s.session_id]
    finally:
        done.set()
        poller.join()
        db.close()
    assert seen_early == []


def test_a_whole_record_whose_newline_never_comes_is_read_once_quiet(
    tmp_path: Path, start_watcher
) -> None:
    """A writer that dies after a whole record but before its newline sends no more
    events; ``index`` reads that record once the file has been quiet for 2 s, and so
    must the watcher (readers skip their own refresh while it runs), not only at its
    periodic rescan. Before it is quiet, it is not read."""
    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/work/repo", "hello")
    watcher, batches = start_watcher([tree.root])  # rescan=0: no periodic pass
    db = open_db(tmp_path / "index.db")
    try:
        s.user("golfquiet tail")
        mark = len(batches)
        append_bytes(s.path, dumps(s.entries.pop()))  # no "\n", and nothing after
        wait_for(
            lambda: any(str(s.path) in r.paths for r in batches.since(mark)),
            "a batch that read the file while fresh",
        )
        assert found(db, "golfquiet") == []
        assert wait_for(lambda: found(db, "golfquiet"), "the quiet record") == [s.session_id]
    finally:
        db.close()


# --------------------------------------------------------------------- directories
def test_projects_dir_created_after_start(tmp_path: Path, start_watcher) -> None:
    root = tmp_path / "claude"
    root.mkdir()
    watcher, _ = start_watcher([root])
    tree = ConfigTree(root)  # creates projects/ now
    s = tree.session(cwd="/late/project")
    s.user("papaya arrives late")
    turn = s.assistant("spawning", tool_uses=[("Task", {"prompt": "x"})])
    agent = s.subagent(agent_id="ff00", tool_use_id=turn.tool_use_ids[0], subdir="nested")
    agent.user("quince in a nested subagent dir")
    s.write()
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "papaya") and found(db, "quince"), "the late projects dir")
        # and the projects dir replaced wholesale is watched again
        shutil.rmtree(tree.projects_dir)
        wait_for(lambda: not found(db, "papaya"), "the deleted projects dir to be forgotten")
        tree2 = ConfigTree(root)
        session(tree2, "/again", "rambutan after replace")
        wait_for(lambda: found(db, "rambutan"), "the re-created projects dir")
    finally:
        db.close()


def test_a_project_dir_moved_in_unreadable_is_read_once_mended(
    tmp_path: Path, start_watcher, monkeypatch
) -> None:
    """A project dir restored by ``mv`` with bad modes cannot be walked when it arrives
    (the watcher now says so); its chmod is an event on the dir, which is walked again
    then, not only at the next periodic rescan (off here). EACCES is simulated while
    the dir is "unreadable": the suite may run as root."""
    tree = ConfigTree(tmp_path / "claude")
    session(tree, "/a", "anchor session apricot")
    away = tmp_path / "away"
    moved = session(tree, "/b", "loquat in the restored dir")
    watcher, batches = start_watcher([tree.root])
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "loquat"), "the first index")
        project = moved.path.parent
        project.rename(away)
        wait_for(lambda: not found(db, "loquat"), "the moved-away dir to be forgotten")
        inside = os.path.join(str(project), "")
        real_scandir = os.scandir

        def unreadable(target: Any) -> Any:
            name = os.fsdecode(target)  # watchdog walks with bytes
            if name.startswith(inside) or name == str(project):
                raise PermissionError(13, "Permission denied", name)
            return real_scandir(target)

        monkeypatch.setattr(os, "scandir", unreadable)
        away.rename(project)
        wait_for(
            lambda: any(str(project) in path for b in batches.items for path, _ in b.stats.errors),
            "the watcher to say it cannot list the dir",
        )
        assert not found(db, "loquat")
        monkeypatch.undo()
        project.chmod(0o755)  # mended: an attrib event on the dir
        wait_for(lambda: found(db, "loquat"), "the mended dir to be read")
    finally:
        db.close()


@pytest.mark.parametrize("change", ["chmod", "touch", "recreate"])
def test_a_change_to_projects_itself_is_walked_once_not_forever(
    tmp_path: Path, start_watcher, change: str
) -> None:
    """A chmod (or touch) of projects/ counted as the dir replaced: the watcher watched
    it again and queued its walk, which counted as replaced again, ten walks a second
    for as long as it ran (an rsync -a or chown -R sets that off). The same loop
    followed a projects/ dir deleted and made again."""
    tree = ConfigTree(tmp_path / "claude")
    session(tree, "/a", "medlar before the change")
    watcher, batches = start_watcher([tree.root])
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "medlar"), "the first index")
        projects = tree.root / "projects"
        if change == "chmod":
            projects.chmod(0o750)
        elif change == "touch":
            os.utime(projects)
        else:
            shutil.rmtree(projects)
            tree2 = ConfigTree(tree.root)
            session(tree2, "/b", "sloe after the change")
            wait_for(lambda: found(db, "sloe"), "the re-created dir")
        time.sleep(0.6)  # the change's own batches (max_latency 0.3 s)
        settled = len(batches.items)
        time.sleep(0.8)
        # a loop walks ~10 times a second; one late batch on a loaded machine is none
        assert len(batches.items) - settled <= 1, [b.reason for b in batches.items]
        session(tree if change != "recreate" else tree2, "/c", "rowan after it settled")
        wait_for(lambda: found(db, "rowan"), "a new session after the change")
    finally:
        db.close()


def test_a_linked_projects_dir_is_watched(tmp_path: Path, start_watcher) -> None:
    """``~/.claude/projects`` as a link to another disk: every reader follows it, but
    the watcher never watched it (new sessions waited for the 5-minute rescan, while
    reading commands trusted the watcher and skipped their own refresh)."""
    elsewhere = ConfigTree(tmp_path / "disk" / "claude")
    session(elsewhere, "/a", "damson before start")
    root = tmp_path / "claude"
    root.mkdir()
    (root / "projects").symlink_to(elsewhere.projects_dir, target_is_directory=True)
    watcher, _ = start_watcher([root])
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "damson"), "the catch-up")
        # written where the link points; the index has it under the configured path
        later = session(elsewhere, "/b", "greengage after start")
        wait_for(lambda: found(db, "greengage"), "a session written after start")
        [row] = [r for r in select_rows(db) if r["session_id"] == later.session_id]
        assert row["file_path"].startswith(str(root / "projects"))  # where it is configured
    finally:
        db.close()


# --------------------------------------------------------------------- robustness
def test_stop_commits_the_pending_batch(tmp_path: Path, start_watcher) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/work/repo", "hello")
    watcher, batches = start_watcher([tree.root], debounce=60, max_latency=120)
    s.user("saguaro pending at stop")
    s.append()
    wait_for(lambda: watcher.pending() > 0, "the event to be queued")
    watcher.stop()
    assert batches.since(0)[-1].reason == "events"
    db = open_db(tmp_path / "index.db")
    try:
        assert found(db, "saguaro") == [s.session_id]
    finally:
        db.close()


def test_a_stop_during_a_big_batch_ends_it_soon_after(
    tmp_path: Path, start_watcher, monkeypatch
) -> None:
    """A stop while a big batch is applied (a backup of thousands of sessions moved into
    projects/: 8,000 took 15 s when probed) waited for the whole batch, past the 30 s
    the CLI waits for the worker on a bigger one: `watch: stopped` was printed and the
    lock released while the worker went on writing. A stop still commits what was
    queued when it came, for ``STOP_GRACE`` at most; then the batch ends after the file
    it is on and the next start reads the rest."""
    monkeypatch.setattr(watch_module, "STOP_GRACE", 0.2)
    tree = ConfigTree(tmp_path / "claude")
    session(tree, "/work/repo", "hello")
    watcher, _batches = start_watcher([tree.root], debounce=0.05)
    real = watch_module.ingest_path
    ingested: list[str] = []

    def slow(db: Any, path: str, *args: Any) -> Any:
        ingested.append(path)
        time.sleep(0.05)
        return real(db, path, *args)

    monkeypatch.setattr(watch_module, "ingest_path", slow)
    moved = ConfigTree(tmp_path / "backup")
    total = 80
    for i in range(total):
        session(moved, "/work/restored", f"restored {i}")
    (folder,) = (moved.root / "projects").iterdir()
    folder.rename(tree.root / "projects" / folder.name)
    wait_for(lambda: len(ingested) >= 3, "the batch to start")
    watcher.stop()
    assert not watcher.running
    assert len(ingested) < total // 2, f"the stop waited for {len(ingested)} of {total} files"
    monkeypatch.setattr(watch_module, "ingest_path", real)
    db = open_db(tmp_path / "index.db")
    try:
        check_fts_integrity(db)
        refresh(db, [tree.root])  # the next start: the rest
        assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")
    finally:
        db.close()


def test_names_that_are_not_utf8_are_skipped_as_index_skips_them(
    tmp_path: Path, start_watcher
) -> None:
    """`index` counts a transcript-like name that is not UTF-8 as skipped (SQLite text
    is UTF-8: such a path can never be in the index). `watch` bound it to a query: a
    folder so named (an unzip of an archive, a sync tool) stopped the watcher ("watch
    stopped: 'utf-8' codec can't encode character"), and a file so named was logged and
    tried again and again. Both are passed over; the watcher goes on."""
    tree = ConfigTree(tmp_path / "claude")
    seed = session(tree, "/work/repo", "hello")
    watcher, batches = start_watcher([tree.root])
    projects = os.fsencode(tree.root / "projects")
    try:
        os.mkdir(projects + b"/-work-caf\xe9")  # a Latin-1 folder name
    except OSError:
        pytest.skip("this file system takes UTF-8 names only")
    data = seed.path.read_bytes()
    (Path(os.fsdecode(projects + b"/-work-caf\xe9")) / seed.path.name).write_bytes(data)
    Path(os.fsdecode(os.fsencode(seed.path.parent) + b"/caf\xe9.jsonl")).write_bytes(data)
    later = session(tree, "/work/other", "quetzal after the foreign names")
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "quetzal") == [later.session_id], "the next session", 5.0)
        assert watcher.running, watcher.failure
        assert [e for b in batches.since(0) for e in b.stats.errors] == []
        assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")
    finally:
        db.close()


def test_periodic_rescan_catches_dropped_events(tmp_path: Path, start_watcher, monkeypatch) -> None:
    monkeypatch.setattr(watch_module._Handler, "on_any_event", lambda self, event: None)
    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/work/repo", "hello")
    watcher, batches = start_watcher([tree.root], rescan=0.2)
    s.user("tamarind never announced")
    s.append()
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "tamarind"), "the periodic rescan")
    finally:
        db.close()
    assert "events" not in {r.reason for r in batches.since(0)}


def test_inotify_overflow_triggers_a_rescan(tmp_path: Path, start_watcher) -> None:
    tree = ConfigTree(tmp_path / "claude")
    session(tree, "/work/repo", "hello")
    watcher, batches = start_watcher([tree.root])
    logging.getLogger("watchdog.observers.inotify_c").warning(
        "Inotify queue overflowed; filesystem events were lost"
    )
    wait_for(lambda: any(r.reason == "rescan" for r in batches.since(0)), "a rescan")


def test_falls_back_to_polling_when_native_events_fail(
    tmp_path: Path, start_watcher, monkeypatch
) -> None:
    import watchdog.observers

    class Broken(watchdog.observers.Observer):  # type: ignore[misc, valid-type]
        def start(self) -> None:
            raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watchdog.observers, "Observer", Broken)
    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/work/repo", "hello")
    notes: list[str] = []
    watcher, _ = start_watcher([tree.root], poll_interval=0.1, log=notes.append)
    assert watcher.observer_kind == "polling"
    assert any("polling" in n for n in notes)
    s.user("ugli polled")
    s.append()
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "ugli"), "the polling observer")
    finally:
        db.close()


# What watchdog logs while it runs when native events can no longer be trusted: a
# directory left unwatched (the watch limit reached after start: a project made then was
# never indexed, and nothing said so), or an overflow storm (more dirs watched than the
# queue holds: its recovery overflows the queue again, for ever, a core busy; helper 126).
def count_observers(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The native observers made from now on (watchdog's ``Observer``, counted): a try
    to go back to native events makes one."""
    import watchdog.observers

    made: list[object] = []

    class Counted(watchdog.observers.Observer):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            made.append(self)
            super().__init__()

    monkeypatch.setattr(watchdog.observers, "Observer", Counted)
    return made


UNRELIABLE = {
    "limit": [("watchdog.observers.inotify", "Unable to watch %r: %s",
               ("/c/projects/-new", OSError(28, "inotify watch limit reached")))],
    # as watchdog logs one overflow: events lost, then a reconciling per watched root
    "storm": [("watchdog.observers.inotify_c", "Inotify queue overflowed; filesystem events"
               " were lost", ()),
              ("watchdog.observers.inotify", "Inotify queue overflowed; reconciling"
               " recursive watches below %r", ("/c/projects",)),
              ("watchdog.observers.inotify", "Inotify queue overflowed; reconciling"
               " recursive watches below %r", ("/d/projects",))] * 5,
}  # fmt: skip


@pytest.mark.parametrize("what", sorted(UNRELIABLE))
def test_events_found_unreliable_while_watching_turn_to_polling(
    tmp_path: Path, start_watcher, what: str
) -> None:
    tree = ConfigTree(tmp_path / "claude")
    notes: list[str] = []
    watcher, _ = start_watcher([tree.root], poll_interval=0.1, log=notes.append)
    assert watcher.observer_kind != "polling"
    for logger, message, args in UNRELIABLE[what]:
        logging.getLogger(logger).warning(message, *args)
    wait_for(lambda: watcher.observer_kind == "polling", "polling")
    assert sum("no longer reliable" in n for n in notes) == 1, notes
    s = session(tree, "/work/made-later", "quokka polled")  # a project dir made now
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "quokka"), "the polling observer")
    finally:
        db.close()
    assert watcher.running and s.path.is_file()


def test_an_overflow_now_and_then_stays_on_native_events(tmp_path: Path, start_watcher) -> None:
    """A few overflows are rescans, not a reason to poll: four, each logged as watchdog
    logs it for two watched roots (three lines an overflow: three overflows used to
    count as a storm; helper 128)."""
    tree = ConfigTree(tmp_path / "claude")
    watcher, batches = start_watcher([tree.root])
    for logger, message, args in UNRELIABLE["storm"][: 3 * 4]:
        logging.getLogger(logger).warning(message, *args)
    wait_for(lambda: any(r.reason == "rescan" for r in batches.since(0)), "a rescan")
    time.sleep(3 * TICK)  # past a few ticks, when the watcher would switch
    assert watcher.observer_kind != "polling"


def _delays(notes: list[str]) -> list[float]:
    """The waits the watcher announced before each next try at native events."""
    return [float(m) for n in notes for m in re.findall(r"native events again in ([\d.]+)s", n)]


@pytest.mark.parametrize("what", sorted(UNRELIABLE))
def test_native_events_come_back_and_leaving_them_again_waits_longer(
    tmp_path: Path, start_watcher, soon: None, what: str
) -> None:
    """Polling never went back: after one storm (or one directory past the watch
    limit) ``watch`` stat'ed every transcript each second, with up to a second's delay
    per change, until restarted. Native events are tried again after a wait that
    doubles each time they have to be left again, so a recurring storm cannot flap."""
    tree = ConfigTree(tmp_path / "claude")
    notes: list[str] = []
    watcher, _ = start_watcher([tree.root], poll_interval=0.1, log=notes.append)
    native = watcher.observer_kind
    assert native != "polling"
    db = open_db(tmp_path / "index.db")
    try:
        for round_no in range(2):
            for logger, message, args in UNRELIABLE[what]:
                logging.getLogger(logger).warning(message, *args)
            wait_for(lambda: watcher.observer_kind == "polling", f"polling, round {round_no}")
            wait_for(lambda: watcher.observer_kind == native, f"native again, round {round_no}")
            word = f"kiwano{round_no}"
            s = session(tree, f"/work/round-{round_no}", f"{word} after the return")
            wait_for(lambda s=s, word=word: found(db, word) == [s.session_id], "its session")
    finally:
        db.close()
    assert _delays(notes) == [0.3, 0.6], notes
    assert sum("work again" in n for n in notes) == 2, notes


# Errors an observer's start can fail with: a limit may pass, an unsupported file system
# does not (shared with the MCP dirty bit's tests).
START_ERRORS = pytest.mark.parametrize(
    ("error", "retried"),
    [
        (OSError(errno.ENOSPC, "inotify watch limit reached"), True),
        (OSError(errno.EMFILE, "inotify instance limit reached"), True),
        (OSError(errno.ENOTSUP, "Operation not supported"), False),  # e.g. a network FS
    ],
    ids=["watch-limit", "instance-limit", "unsupported"],
)


@START_ERRORS
def test_native_events_unavailable_at_start_are_tried_again_only_for_a_limit(
    tmp_path: Path, start_watcher, monkeypatch, soon: None, error: OSError, retried: bool
) -> None:
    """A try that fails leaves polling in place and waits longer; none leaves a thread
    behind (the fixture checks); once the limit has room, events are native again."""
    import watchdog.observers

    failing = {"left": 2}  # the start and the first try again

    class Limited(watchdog.observers.Observer):  # type: ignore[misc, valid-type]
        def start(self) -> None:
            if failing["left"] > 0:
                failing["left"] -= 1
                raise error
            super().start()

    monkeypatch.setattr(watchdog.observers, "Observer", Limited)
    tree = ConfigTree(tmp_path / "claude")
    notes: list[str] = []
    watcher, _ = start_watcher([tree.root], poll_interval=0.1, log=notes.append)
    assert watcher.observer_kind == "polling"
    if not retried:
        assert _delays(notes) == [] and watcher._native.again_at is None, notes
        return
    wait_for(lambda: watcher.observer_kind != "polling", "native events once there is room")
    assert _delays(notes) == [0.3, 0.6], notes
    assert sum("still unavailable" in n for n in notes) == 1, notes
    s = session(tree, "/work/later", "salak on native events")
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "salak") == [s.session_id], "the session")
    finally:
        db.close()


def test_native_events_are_not_tried_while_the_tree_outgrows_the_watch_limit(
    tmp_path: Path, start_watcher, monkeypatch, soon: None
) -> None:
    """A try would take every watch the user has left for a moment (another program
    asking for one then is refused): with more directories than the kernel's per-user
    limit it cannot succeed, so it is not made until the limit is raised."""
    tree = ConfigTree(tmp_path / "claude")
    for n in range(3):
        session(tree, f"/work/p{n}", f"session {n}")  # projects/ and 3 project dirs
    limit = {"watches": 2}
    monkeypatch.setattr(watch_module, "_inotify_watch_limit", lambda: limit["watches"])
    notes: list[str] = []
    watcher, _ = start_watcher([tree.root], poll_interval=0.1, log=notes.append)
    for logger, message, args in UNRELIABLE["limit"]:
        logging.getLogger(logger).warning(message, *args)
    wait_for(lambda: watcher.observer_kind == "polling", "polling")
    made = count_observers(monkeypatch)
    wait_for(lambda: len(_delays(notes)) == 3, "two checks of the limit")
    assert made == [] and watcher.observer_kind == "polling"
    assert "need 4 watches, more than fs.inotify.max_user_watches (2)" in notes[-1], notes
    limit["watches"] = 100_000  # raised with sysctl
    wait_for(lambda: watcher.observer_kind != "polling", "native events once it fits")
    assert len(made) == 1


def test_subagent_events_are_placed_in_their_session(tmp_path: Path) -> None:
    """An event names the subagent file itself: it must map to its session (not be
    mistaken for a vanished path and dropped), directly in subagents/ or deeper."""
    from sessiondex.transcripts.discover import SUBAGENT, describe_path

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session()
    s.user("x")
    direct = s.subagent(agent_id="d1", tool_use_id="t1")
    nested = s.subagent(agent_id="n1", tool_use_id="t2", subdir="workflows/run1")
    direct.user("y")
    nested.user("z")
    s.write()
    for agent in (direct, nested):
        tf = describe_path(agent.path, [tree.root])
        assert tf is not None
        assert (tf.kind, tf.session_id, tf.agent_id) == (SUBAGENT, s.session_id, agent.agent_id)


# --------------------------------------------------------------------- the command
class WatchProcess:
    """``sessiondex watch -v`` as a subprocess, its stderr read on a thread."""

    def __init__(
        self, root: Path, db_path: Path, *extra: str, hangup: Any = signal.SIG_DFL
    ) -> None:
        """``hangup``: how the process starts out taking SIGHUP (SIG_IGN: under ``nohup``)."""
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from sessiondex.cli.main import main; main()",
                "--config-dir",
                str(root),
                "--db",
                str(db_path),
                "watch",
                "-v",
                "--debounce",
                "50",
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
            preexec_fn=lambda: signal.signal(signal.SIGHUP, hangup),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            self.lines.put(line)

    def wait_for_line(self, text: str) -> str:
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            if text in line:
                return line
        raise AssertionError(f"no {text!r} line; stderr so far: {''.join(self.stderr)}")

    def finish(self, sig: int) -> int:
        """Send ``sig`` (0: none, the process is ending already) and wait for the exit."""
        if sig:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(DEADLINE)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(DEADLINE)
        return code


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_watch_command_keeps_index_live_and_stops_cleanly(tmp_path: Path, sig: int) -> None:
    tree = ConfigTree(tmp_path / "claude")
    a = session(tree, "/work/repo", "alpha start")
    db_path = tmp_path / "index.db"
    watcher = WatchProcess(tree.root, db_path)
    try:
        watcher.wait_for_line("watching")
        assert watcher_alive(db_path)
        for i in range(5):
            a.user(f"vanilla {i}")
            a.append()
            split_append(a, f"walnut {i}", cut=20, pause=0.01)
        session(tree, "/work/new-project", "xigua in a new project")
        a.meta("custom-title", customTitle="Yuzu title")
        a.append()
        runner = CliRunner()
        wait_for(
            lambda: (
                "xigua"
                in runner.invoke(
                    cli,
                    [
                        "--config-dir",
                        str(tree.root),
                        "--db",
                        str(db_path),
                        "search",
                        "xigua",
                        "--scope",
                        "all",
                        "--json",
                    ],
                ).output
            ),
            "search to see the new session",
        )
        # a second watch on the same index is refused
        second = runner.invoke(cli, ["--config-dir", str(tree.root), "--db", str(db_path), "watch"])
        assert second.exit_code == 1
        assert "already running" in second.output
    finally:
        code = watcher.finish(sig)
    assert code == 0, "".join(watcher.stderr)
    assert "Traceback" not in "".join(watcher.stderr)
    assert watcher.stderr[-1].strip() == "watch: stopped"
    assert not watcher_alive(db_path)
    db = open_db(db_path)
    try:
        assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")
    finally:
        db.close()


def test_a_hang_up_stops_watch_as_sigterm_does_unless_nohup_ignores_it(tmp_path: Path) -> None:
    """A closed terminal sends SIGHUP: `watch` died of it at once (exit -1, the batch
    queued then left to the next start, no `stopped` line). It now stops as for
    SIGTERM; started under `nohup` (SIGHUP ignored) it keeps ignoring it."""
    tree = ConfigTree(tmp_path / "claude")
    session(tree, "/work/repo", "hello")
    for hangup, expected in [(signal.SIG_DFL, "stops"), (signal.SIG_IGN, "ignores")]:
        db_path = tmp_path / f"{expected}.db"
        watcher = WatchProcess(tree.root, db_path, "--no-archive", hangup=hangup)
        try:
            watcher.wait_for_line("watching")
            watcher.proc.send_signal(signal.SIGHUP)
            if expected == "ignores":
                with pytest.raises(subprocess.TimeoutExpired):
                    watcher.proc.wait(1.0)
        finally:
            code = watcher.finish(signal.SIGTERM if expected == "ignores" else 0)
        assert code == 0, (expected, "".join(watcher.stderr))
        assert watcher.stderr[-1].strip() == "watch: stopped"
        assert not watcher_alive(db_path)


def test_stale_lock_from_a_killed_watcher_does_not_block(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    session(tree, "/work/repo", "hello")
    db_path = tmp_path / "index.db"
    first = WatchProcess(tree.root, db_path)
    first.wait_for_line("watching")
    first.finish(signal.SIGKILL)
    assert lock_path(db_path).exists()  # the file stays; the kernel dropped the flock
    assert not watcher_alive(db_path)
    second = WatchProcess(tree.root, db_path)
    try:
        second.wait_for_line("watching")
        assert watcher_alive(db_path)
    finally:
        assert second.finish(signal.SIGTERM) == 0


def test_a_failing_file_is_logged_retried_and_the_watcher_lives_on(
    tmp_path: Path, start_watcher, monkeypatch
) -> None:
    """Issue 14 item 3: a file whose ingest raises (here a bug-like RuntimeError three
    times, then an IntegrityError once) is logged and tried again with a growing delay,
    while other files keep being indexed and the watcher keeps running."""
    faults: list[BaseException] = [
        RuntimeError("boom 1"),
        RuntimeError("boom 2"),
        RuntimeError("boom 3"),
        sqlite3.IntegrityError("UNIQUE constraint failed: files.path"),
    ]
    real = watch_module.ingest_path

    def flaky(db: Any, path: str, roots: list[Path], stats: Any) -> str:
        if "flaky" in Path(path).read_text(errors="replace") and faults:
            raise faults.pop(0)
        return real(db, path, roots, stats)

    monkeypatch.setattr(watch_module, "ingest_path", flaky)
    monkeypatch.setattr(watch_module, "RETRY_FIRST", 0.05)
    logged: list[str] = []
    tree = ConfigTree(tmp_path / "claude")
    watcher, _batches = start_watcher([tree.root], log=logged.append)
    db = open_db(tmp_path / "index.db")
    try:
        session(tree, "/work/a", "flaky zebra")
        session(tree, "/work/b", "steady yak")
        wait_for(lambda: found(db, "yak"), "the healthy file to be indexed meanwhile")
        wait_for(lambda: found(db, "zebra"), "the failing file to be indexed once it works")
        assert watcher.running
        assert faults == []
        retries = [line for line in logged if "trying again in" in line]
        assert len(retries) == 4, logged
        assert "boom 1" in retries[0] and "UNIQUE constraint" in retries[3]
        delays = [float(line.rsplit("in ", 1)[1].rstrip("s")) for line in retries]
        assert delays == sorted(delays) and delays[0] < delays[-1], delays
        live = index_snapshot(db)
    finally:
        db.close()
    assert live == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")


def test_watch_exits_1_when_its_worker_dies(tmp_path: Path, monkeypatch) -> None:
    """A watcher whose worker failed outside any one file (here its batch loop itself)
    must not linger holding the lock, indexing nothing."""

    def broken(*args: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(watch_module.Watcher, "_apply", broken)
    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/work/repo", "hello")
    db_path = tmp_path / "index.db"
    finished = threading.Event()

    def keep_appending() -> None:  # until the watcher is up and sees one
        while not finished.wait(0.05):
            if watcher_alive(db_path):
                s.user("more")
                s.append()

    appender = threading.Thread(target=keep_appending)
    appender.start()
    try:
        result = CliRunner().invoke(
            cli, ["--config-dir", str(tree.root), "--db", str(db_path), "watch", "--debounce", "10"]
        )
    finally:
        finished.set()
        appender.join()
    assert result.exit_code == 1
    # The first batch may fail while start() still waits for the catch-up ("cannot start
    # watching") or after it ("watch stopped"): either way one line names the failure.
    assert re.search(r"Error: (watch stopped|cannot start watching): boom", result.output)
    assert not watcher_alive(db_path)


def test_a_watch_of_one_config_dir_leaves_another_dirs_refresh_to_the_reader(
    tmp_path: Path,
) -> None:
    """New user, helper 305: with `watch` running on `~/.claude`, `sessiondex
    --config-dir ~/old-laptop/.claude search …` on the same (default) index skipped its
    refresh, since "a watcher is live", and answered "No matches." for the old laptop's
    sessions, which no one indexed. A watcher keeps only the config dirs it watches
    current: a reader with another one refreshes itself."""
    from sessiondex import Index

    here = ConfigTree(tmp_path / "claude")
    session(here, "/work/repo", "alpha on this machine")
    laptop = ConfigTree(tmp_path / "old laptop")
    db_path = tmp_path / "index.db"
    watcher = WatchProcess(here.root, db_path, "--no-archive")
    try:
        watcher.wait_for_line("watching")
        session(laptop, "/work/old", "aardvark on the old laptop")
        result = CliRunner().invoke(
            cli,
            ["--config-dir", str(laptop.root), "--db", str(db_path)]
            + ["search", "aardvark", "--scope", "all", "--json"],
        )
        assert result.exit_code == 0, result.output
        assert [s["title"] for s in json.loads(result.output)] == ["aardvark on the old laptop"]
        session(laptop, "/work/old", "badger later on the old laptop")
        with Index(db_path, [here.root, laptop.root]) as index:
            titles = {s["title"] for s in index.list(scope="all")}
        assert "badger later on the old laptop" in titles
        with Index(db_path, here.root) as index:
            assert index.watcher_alive() and index.stats()["watcher"] == "running"
        with Index(db_path, laptop.root) as index:
            assert not index.watcher_alive()
            assert index.stats()["watcher"].startswith("running for other config dirs")
    finally:
        assert watcher.finish(signal.SIGTERM) == 0


def test_second_watch_exits_1_with_a_clear_message(tmp_path: Path) -> None:
    db_path = tmp_path / "index.db"
    (tmp_path / "claude" / "projects").mkdir(parents=True)
    with WatcherLock(db_path):
        result = CliRunner().invoke(
            cli, ["--config-dir", str(tmp_path / "claude"), "--db", str(db_path), "watch"]
        )
    assert result.exit_code == 1
    assert (
        f"another sessiondex watch is already running for this index (pid {os.getpid()})"
        in result.output
    )
    assert "Traceback" not in result.output


def test_a_file_that_keeps_failing_is_retried_a_bounded_number_of_times(
    tmp_path: Path, start_watcher, monkeypatch
) -> None:
    """The retries of one failing file stop after RETRY_LIMIT (its next change or the
    rescan tries again): a file that stays broken does not log forever."""
    real = watch_module.ingest_path

    def always_broken(db: Any, path: str, roots: list[Path], stats: Any) -> str:
        if "broken" in Path(path).read_text(errors="replace"):
            raise RuntimeError("still broken")
        return real(db, path, roots, stats)

    monkeypatch.setattr(watch_module, "ingest_path", always_broken)
    monkeypatch.setattr(watch_module, "RETRY_FIRST", 0.01)
    monkeypatch.setattr(watch_module, "RETRY_MAX", 0.02)
    monkeypatch.setattr(watch_module, "RETRY_LIMIT", 3)
    logged: list[str] = []
    tree = ConfigTree(tmp_path / "claude")
    watcher, _batches = start_watcher([tree.root], log=logged.append)
    session(tree, "/work/a", "broken beyond repair")
    wait_for(lambda: any("left for its next change" in line for line in logged), "giving up")
    time.sleep(0.3)  # no retry after that
    tries = [line for line in logged if "still broken" in line]
    assert len(tries) == 4, logged  # the first try and RETRY_LIMIT retries
    assert watcher.running


# --------------------------------------------------------------------- deep trees, dead emitters
def _nest(base: Path, levels: int) -> Path:
    """``base/d/d/…`` ``levels`` deep, made without recursion (Path.mkdir recurses)."""
    bottom = base
    for _ in range(levels):
        bottom = bottom / "d"
        os.mkdir(bottom)
    return bottom


def _wait_found(db_path: Path, word: str, what: str) -> None:
    db = open_db(db_path)
    try:
        wait_for(lambda: found(db, word), what)
    finally:
        db.close()


def _unnest(base: Path, bottom: Path) -> None:
    """Remove what :func:`_nest` made: pytest's own rmtree of tmp_path would recurse."""
    while bottom != base:
        bottom.rmdir()
        bottom = bottom.parent


@pytest.mark.parametrize("when", ["before-start", "moved-in"])
def test_a_session_folder_past_the_recursion_limit_is_watched(
    tmp_path: Path, start_watcher, when: str
) -> None:
    """watchdog walks a watched tree with os.walk, which recursed once per level: a
    folder ~1,000 deep was a traceback at start, or killed the emitter thread while
    ``watch`` went on as if alive (and commands, trusting it, answered stale)."""
    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/work/repo", "alpha start")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    base = s.path.with_suffix("") if when == "before-start" else outside / "folder"
    base.mkdir()
    bottom = _nest(base, 1_100)
    try:
        watcher, _ = start_watcher([tree.root])
        if when == "moved-in":
            moved = tree.project_dir("/work/moved") / s.session_id
            moved.parent.mkdir(parents=True)
            os.rename(base, moved)
            bottom = Path(str(bottom).replace(str(base), str(moved), 1))
            base = moved
        session(tree, "/work/later", "zebrafish after the deep folder")
        _wait_found(tmp_path / "index.db", "zebrafish", "a session written after it")
        assert watcher.failure is None
    finally:
        _unnest(base, bottom)


def test_a_watch_whose_emitter_died_is_watched_again(
    tmp_path: Path, start_watcher, caplog: pytest.LogCaptureFixture
) -> None:
    """An error inside watchdog ends its emitter thread; the watcher went on without
    events (and held the 'watcher alive' lock, so commands skipped their refresh)."""
    tree = ConfigTree(tmp_path / "claude")
    session(tree, "/work/repo", "alpha start")
    with caplog.at_level(logging.WARNING, logger="sessiondex.indexer.watch"):
        watcher, _ = start_watcher([tree.root])
        observer = watcher._observer
        assert observer is not None
        for emitter in observer.emitters.copy():
            emitter.stop()
            emitter.join(DEADLINE)
        session(tree, "/work/repo", "quokka after the emitter died")
        _wait_found(tmp_path / "index.db", "quokka", "a session written after it died")
    assert any("stopped; watching it again" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("queued", "walked"),
    [
        (["/p/a/b", "/p/a", "/p/a/b/c"], ["/p/a"]),
        (["/p/a/b", "/p/a-b", "/p/a"], ["/p/a", "/p/a-b"]),  # "-" sorts before "/"
        (["/p/ab", "/p/a"], ["/p/a", "/p/ab"]),  # a name prefix is no parent
        (["/p/a", "/p/a"], ["/p/a"]),
        ([], []),
    ],
)
def test_a_batch_walks_only_the_outermost_directories(queued: list[str], walked: list[str]) -> None:
    assert watch_module._outermost(queued) == walked


@contextlib.contextmanager
def _streaming(pending: Any, path: str, every: float, count: int) -> Iterator[None]:
    """Another thread queues ``path`` every ``every`` seconds (at most ``count`` times)
    while the block runs: a session streaming records."""
    stop = threading.Event()

    def stream() -> None:
        for _ in range(count):  # bounded by count and by the stop
            if stop.is_set():
                return
            pending.add_file(path)
            time.sleep(every)

    streamer = threading.Thread(target=stream)
    streamer.start()
    try:
        yield
    finally:
        stop.set()
        streamer.join(timeout=10)


def test_a_session_streaming_beside_it_does_not_hold_a_change_back() -> None:
    """Each queued path is due by its own events: one timer for all was restarted by
    every event anywhere, so while one session streamed a record every 50 ms, every
    other session's append waited --max-latency (p95 ~700 ms against the 300 ms goal)."""
    pending = watch_module._Pending()
    with _streaming(pending, "/c/projects/k/streaming.jsonl", 0.005, 400):
        time.sleep(0.02)
        pending.add_file("/c/projects/k/appended.jsonl")
        work = pending.take(debounce=0.05, max_latency=30.0, tick=30.0)
    assert work is not None and work.files == ["/c/projects/k/appended.jsonl"]
    # the streaming one is still queued, due at its own max latency or once quiet
    assert len(pending) == 1
    rest = pending.take(debounce=0.05, max_latency=30.0, tick=30.0)
    assert rest is not None and rest.files == ["/c/projects/k/streaming.jsonl"]


def test_a_path_that_never_goes_quiet_is_applied_at_its_max_latency() -> None:
    pending = watch_module._Pending()
    with _streaming(pending, "/c/projects/k/streaming.jsonl", 0.002, 2000):
        time.sleep(0.01)
        work = pending.take(debounce=0.05, max_latency=0.2, tick=30.0)
    assert work is not None and work.files == ["/c/projects/k/streaming.jsonl"]


@pytest.mark.parametrize("first", ["folder exists", "folder made with the sidecar"])
def test_an_archive_toggled_in_claude_codes_picker_reaches_the_index(
    tmp_path: Path, start_watcher, first: str
) -> None:
    """ctrl+e in Claude Code's picker writes ``<id>/archived.json`` and no transcript:
    the watcher maps that file to its session, which listings then hide (and show
    again once unarchived)."""
    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/w/app", "guava shelved in the picker")
    folder = s.project_dir / s.session_id
    if first == "folder exists":
        folder.mkdir()
    start_watcher([tree.root])
    db = open_db(tmp_path / "index.db")

    def archived() -> Any:
        row = db.execute(
            "SELECT picker_archived FROM sessions WHERE session_id = ?", [s.session_id]
        ).fetchone()
        return row is not None and row[0]

    try:
        wait_for(lambda: found(db, "guava"), "the session")
        folder.mkdir(exist_ok=True)
        sidecar = folder / "archived.json"
        temporary = folder / ".archived.json.tmp"  # written aside, then renamed over
        for state in (True, False, True):
            temporary.write_text(json.dumps({"archived": state, "at": "2026-11-30T10:00:00Z"}))
            os.rename(temporary, sidecar)
            wait_for(lambda state=state: bool(archived()) is state, f"archived={state}")
        sidecar.unlink()
        wait_for(lambda: not archived(), "the sidecar removed")
        # archived again, then the whole folder moved away (to the trash, say): only a
        # directory event, which names no transcript
        temporary.write_text(json.dumps({"archived": True, "at": "2026-11-30T10:00:00Z"}))
        os.rename(temporary, sidecar)
        wait_for(archived, "archived once more")
        folder.rename(tmp_path / "trash")
        wait_for(lambda: not archived(), "the folder moved out of projects/")
    finally:
        db.close()


def test_a_front_end_sees_an_append_before_watch_applies_it(tmp_path: Path, start_watcher) -> None:
    """With watch running, a long-lived front end (the MCP server) left its dirty bit's
    writes to watch, and answered without a line appended 20 ms before it was asked
    (watch applies it within its debounce, up to --max-latency). It ingests them."""
    from sessiondex import Index

    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/w/app", "the first line")
    start_watcher([tree.root], debounce=30.0, max_latency=60.0)  # its batch: not soon
    with WatcherLock(tmp_path / "index.db"), Index(tmp_path / "index.db", [tree.root]) as index:
        assert index.watch_transcripts() and index.watcher_alive()
        index.renew()
        assert index.search("kumquat", scope="all") == []  # a first question answered
        s.user("a kumquat line appended just now")
        s.append()
        wait_for(lambda: not index._changes.clean(), "the dirty bit to see the append")
        index.renew()
        hits = index.search("kumquat", scope="all")
        assert [h["session_id"] for h in hits] == [s.session_id]
        # a new session (more than an append: a new file, here in a new project dir)
        new = session(tree, "/w/new-project", "a persimmon in a brand new session")
        wait_for(lambda: not index._changes.clean(), "the dirty bit to see the new file")
        index.renew()
        hits = index.search("persimmon", scope="all")
        assert [h["session_id"] for h in hits] == [new.session_id]


def test_a_second_watcher_through_a_symlink_to_the_index_is_refused(tmp_path: Path) -> None:
    """One writer per index: the lock was named after the path given, so a watcher on
    a link to the index took a lock of its own (helper 118)."""
    from sessiondex.indexer.lock import AlreadyWatching, WatcherLock

    db = tmp_path / "i.db"
    db.write_bytes(b"")
    (tmp_path / "link.db").symlink_to(db)
    first = WatcherLock(db)
    first.acquire()
    try:
        with pytest.raises(AlreadyWatching):
            WatcherLock(tmp_path / "link.db").acquire()
    finally:
        first.release()


def test_a_full_disk_outlasting_the_retries_is_caught_up_once_writable(
    tmp_path: Path, start_watcher, monkeypatch
) -> None:
    """A file's retries run out after RETRY_LIMIT (~2 minutes). When what failed was the
    database (a full disk), not the file, nothing tried again once space came back:
    readers skip their refresh while a watcher runs, so the session stayed unfound
    until the periodic rescan, 5 minutes on (helper 122)."""
    disk = {"full": False}
    real_ingest, real_refresh = watch_module.ingest_path, watch_module.refresh

    def full(*_args: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    def ingest(*args: Any) -> Any:
        return full() if disk["full"] else real_ingest(*args)

    def refresh(*args: Any, **kwargs: Any) -> Any:
        return full() if disk["full"] else real_refresh(*args, **kwargs)

    monkeypatch.setattr(watch_module, "ingest_path", ingest)
    monkeypatch.setattr(watch_module, "refresh", refresh)
    monkeypatch.setattr(watch_module, "RETRY_FIRST", 0.01)
    monkeypatch.setattr(watch_module, "RETRY_MAX", 0.05)
    monkeypatch.setattr(watch_module, "RETRY_LIMIT", 2)
    logged: list[str] = []
    tree = ConfigTree(tmp_path / "claude")
    start_watcher([tree.root], log=logged.append)  # no periodic rescan (rescan=0)
    disk["full"] = True
    session(tree, "/work/a", "written on a full disk")
    wait_for(lambda: any("left for its next change" in line for line in logged), "giving up")
    disk["full"] = False  # space comes back; no event follows
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "full disk"), "the session once the disk has room")
    finally:
        db.close()


def test_reading_a_transcript_wakes_no_watcher(
    tmp_path: Path, start_watcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher asks the kernel only for the events that can change a transcript:
    every file its own ingest or rescan read came back as "opened" and "closed" events
    (and so did every read by Claude Code, the picker or a reading command), each woke
    the observer's thread only to be dropped."""
    seen: list[str] = []
    classify = watch_module._Handler.on_any_event

    def recording(self: Any, event: Any) -> None:
        seen.append(event.event_type)
        classify(self, event)

    monkeypatch.setattr(watch_module._Handler, "on_any_event", recording)
    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/a", "quince before start")
    watcher, _ = start_watcher([tree.root])
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "quince"), "the catch-up")
        for _ in range(3):
            s.path.read_bytes()
        s.user("rowan appended")
        s.append()
        wait_for(lambda: found(db, "rowan"), "an append")
    finally:
        db.close()
    assert "modified" in seen  # the append came through the handler
    assert not {"opened", "closed", "closed_no_write"} & set(seen), seen


@pytest.mark.parametrize("folder", ["none yet", "holds subagents"])
def test_a_rename_and_its_title_sidecar_are_not_read_again(
    tmp_path: Path, start_watcher, folder: str
) -> None:
    """``rename`` appends the record, brings the index up to date itself, then writes
    ``<id>/custom-title.json`` (aside, renamed over; making ``<id>/`` when missing).
    The watcher reads none of it again: the sidecar is no transcript, and the new
    folder names the transcript the rename already ingested."""
    from sessiondex import Index

    tree = ConfigTree(tmp_path / "claude")
    s = session(tree, "/w/app", "kiwi renamed while watched")
    if folder == "holds subagents":
        turn = s.assistant("delegating", tool_uses=[("Task", {"prompt": "sub"})])
        s.subagent(agent_id="k1", tool_use_id=turn.tool_use_ids[0]).user("kiwi subagent task")
        s.write()
    _, batches = start_watcher([tree.root])
    db = open_db(tmp_path / "index.db")
    try:
        wait_for(lambda: found(db, "kiwi"), "the session")
        start = len(batches)
        with Index(tmp_path / "index.db", [tree.root]) as index:
            index.rename(s.session_id, "Kiwi plan")
        sidecar = s.project_dir / s.session_id / "custom-title.json"
        assert json.loads(sidecar.read_bytes()) == {"customTitle": "Kiwi plan"}
        # a later change elsewhere: once it is in, the rename's events were handled
        marker = session(tree, "/w/app", "lychee written after the rename")
        wait_for(
            lambda: any(str(marker.path) in b.paths for b in batches.since(start)),
            "the batch of the session written after",
        )
        applied = batches.since(start)
        assert not [
            p for b in applied for p in b.paths if p.startswith(str(sidecar.parent) + os.sep)
        ]
        for batch in applied:
            stats = batch.stats
            assert (stats.rewritten, stats.removed, stats.picker_archives) == (0, 0, 0), batch
        # the marker is new; the appended record is read once, by the rename (or by the
        # watcher, when its event is handled before the rename's own ingest), never again
        assert sum(b.stats.new for b in applied) == 1
        assert sum(b.stats.grown for b in applied) <= 1
        row = db.execute(
            "SELECT custom_title FROM sessions WHERE session_id = ?", [s.session_id]
        ).fetchone()
        assert row[0] == "Kiwi plan" and marker.path.exists()
    finally:
        db.close()


def test_ctrl_c_during_the_catch_up_stops_it_at_the_next_file(tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C or SIGTERM while the catch-up runs (minutes, for a cold multi-GB history)
    only set a flag the main thread read once the whole catch-up had finished: `watch`
    went on reading every transcript first (found by probing a real watch). The
    catch-up now stops after the file it is on; what it committed stays consistent, and
    the next start or `index` does the rest."""
    import sessiondex.indexer.refresh as refresh_module

    tree = ConfigTree(tmp_path / "claude")
    total = 40
    for i in range(total):
        session(tree, f"/work/repo{i % 3}", f"catch up {i}")
    db_path = tmp_path / "index.db"
    real = refresh_module.ingest_file
    ingested: list[str] = []

    def slow(db: Any, tf: Any, *args: Any, **kwargs: Any) -> Any:
        if len(ingested) == 3:  # the user presses Ctrl-C while the catch-up runs
            os.kill(os.getpid(), signal.SIGINT)
        ingested.append(str(tf.path))
        time.sleep(0.05)  # a bigger file: the main thread's handler runs meanwhile
        return real(db, tf, *args, **kwargs)

    monkeypatch.setattr(refresh_module, "ingest_file", slow)
    # Should `watch` not take SIGINT over, the signal must fail this test, not the run.
    previous = signal.signal(signal.SIGINT, lambda *_: None)
    try:
        result = CliRunner().invoke(
            cli, ["--config-dir", str(tree.root), "--db", str(db_path), "watch", "--no-archive"]
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert len(ingested) < total // 2, f"the catch-up read {len(ingested)} of {total} files"
    assert not watcher_alive(db_path)
    monkeypatch.setattr(refresh_module, "ingest_file", real)
    db = open_db(db_path)
    try:
        check_fts_integrity(db)
        assert db.execute("SELECT count(*) FROM files").fetchone()[0] < total
        refresh_module.refresh(db, [tree.root])  # the next start or `index`: the rest
        assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")
    finally:
        db.close()
