"""Concurrency: a writer and readers while ``sessiondex watch`` (a real subprocess) runs.

1. A writer does what a busy machine does to transcripts — appends (half of the lines
   in two writes with a pause between), a truncation, a rewrite, a deletion, sessions in
   new project dirs — while a reader polls ``search`` on its own connection for the
   line being split. The reader must never find a line whose second half had not even
   started to be written. After quiescence the live index equals a clean rebuild.
2. Several reader *processes* run ``list``/``search`` in a loop while the watcher
   ingests a larger corpus: zero "database is locked", every query answered.

No duration is asserted: waits poll for a condition and fail with what they last saw.
(tests/test_watch.py covers the watcher's own scenarios in-process.)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bench.corpus import generate
from sessiondex.indexer.db import open_db
from sessiondex.indexer.lock import watcher_alive
from sessiondex.indexer.refresh import refresh
from sessiondex.query.filters import Filters
from sessiondex.query.search import search
from tests.builders import ConfigTree, SessionWriter, append_bytes, dumps, one_session
from tests.helpers_index import check_fts_integrity, index_snapshot, rebuilt_snapshot

pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")

REPO = Path(__file__).resolve().parents[1]
STRESS = os.environ.get("SESSIONDEX_STRESS") == "1"
DEADLINE = 30.0  # only ever reached when something is broken
EVERYWHERE = Filters(scope="all", all_kinds=True, include_archived=True)


def wait_for(condition: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
    end = time.monotonic() + deadline
    last: Any = None
    while time.monotonic() < end:
        last = condition()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


class WatchProcess:
    """``sessiondex watch`` as a child process, stopped with SIGTERM."""

    def __init__(self, root: Path, db: Path, stderr: Path) -> None:
        self.db = db
        self._err = open(stderr, "wb")  # noqa: SIM115 - closed in stop()
        self.stderr_path = stderr
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from sessiondex.cli.main import main; main()",
                "--config-dir",
                str(root),
                "--db",
                str(db),
                "watch",
                "-v",
                "--debounce",
                "20",
                "--max-latency",
                "200",
                "--rescan",
                "0",
                # the generated corpus is months old: no archiving of it (a rebuild of the
                # transcripts alone is what the live index is compared with)
                "--no-archive",
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=self._err,
        )
        wait_for(lambda: watcher_alive(db) or self.proc.poll() is not None, "watch to start")
        assert self.proc.poll() is None, self.stderr()

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(DEADLINE)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._err.close()


def live_equals_rebuild(root: Path, db_path: Path, scratch: Path) -> None:
    expected = rebuilt_snapshot([root], scratch / "rebuilt.db")

    def matches() -> bool:
        db = open_db(db_path)
        try:
            return index_snapshot(db) == expected
        finally:
            db.close()

    try:
        wait_for(matches, "the live index to equal a rebuild")
    except AssertionError:
        db = open_db(db_path)
        try:
            got = index_snapshot(db)
        finally:
            db.close()
        differing = {
            t: (
                sorted(set(got[t]) - set(expected[t]), key=repr)[:3],
                sorted(set(expected[t]) - set(got[t]), key=repr)[:3],
            )
            for t in expected
            if got[t] != expected[t]
        }
        raise AssertionError(f"live index != rebuild: {differing}") from None
    db = open_db(db_path)
    try:
        check_fts_integrity(db)
    finally:
        db.close()


# ----------------------------------------------------------- 1. writer and a reader
class SplitReader(threading.Thread):
    """Polls ``search`` for the word of the line being split, on its own connection."""

    def __init__(self, db_path: Path, writer: Writer) -> None:
        super().__init__(daemon=True)
        self.db_path = db_path
        self.writer = writer
        self.stop = threading.Event()
        self.queries = 0
        self.during_split = 0
        self.violations: list[str] = []
        self.errors: list[str] = []

    def run(self) -> None:
        db = open_db(self.db_path)
        try:
            while not self.stop.is_set():
                word = self.writer.splitting
                probe = word or "alpha"
                try:
                    hits = search(db, probe, EVERYWHERE)
                except Exception:  # any error is a finding, reported by the test
                    self.errors.append(traceback.format_exc())
                    continue
                self.queries += 1
                if word is None:
                    continue
                self.during_split += 1
                # checked after the query: its rest had not even started to be written
                if hits and word not in self.writer.second_half_started:
                    self.violations.append(word)
        finally:
            db.close()


class Writer:
    def __init__(self, tree: ConfigTree) -> None:
        self.tree = tree
        self.splitting: str | None = None
        self.second_half_started: set[str] = set()
        self.split_lines = 0
        self.sessions = [self._session(f"/srv/app{i}", f"alpha{i} start") for i in range(6)]

    def _session(self, cwd: str, text: str) -> SessionWriter:
        s = self.tree.session(cwd=cwd)
        s.user(text)
        s.assistant(f"answer to {text}")
        s.write()
        return s

    def split_append(self, s: SessionWriter, word: str, cut: int | None) -> None:
        """One user record in two writes: ``cut`` bytes (None: all but the newline)."""
        s.user(f"{word} is in a line written in two parts")
        line = dumps(s.entries.pop()) + b"\n"
        cut = len(line) - 1 if cut is None else cut
        self.splitting = word
        append_bytes(s.path, line[:cut])
        time.sleep(0.35)  # longer than the watcher's max latency: it sees the half
        self.second_half_started.add(word)
        append_bytes(s.path, line[cut:])
        self.splitting = None
        self.split_lines += 1

    def run(self) -> None:
        a, b, c, d, e, f = self.sessions
        for i in range(6):
            a.user(f"plain append {i}")
            a.append()
            self.split_append(b if i % 2 else a, f"splitword{i}", cut=None if i % 2 else 40 + i)
        # truncate one file to nothing, then one line comes back
        c.path.write_bytes(b"")
        time.sleep(0.1)
        c.user("comeback after truncation")
        line = dumps(c.entries.pop()) + b"\n"
        append_bytes(c.path, line)
        # rewrite one in place: shorter, different content
        lines = d.path.read_bytes().splitlines(keepends=True)
        d.user("rewritten tail")
        d.path.write_bytes(lines[0] + dumps(d.entries.pop()) + b"\n")
        # delete one
        e.path.unlink()
        # sessions in new project dirs, one with a subagent
        for n in range(3):
            self._session(f"/srv/new{n}/project", f"newproject{n} hello")
        g = self.tree.session(cwd="/srv/agents")
        g.user("delegate work")
        turn = g.assistant("delegating", tool_uses=[("Task", {"prompt": "look"})])
        agent = g.subagent(agent_id="a1b2c3", tool_use_id=turn.tool_use_ids[0])
        agent.user("inside the subagent")
        g.write()
        f.meta("custom-title", customTitle="Renamed while watched")
        f.append()


def test_writer_and_reader_during_watch(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    writer = Writer(tree)
    db_path = tmp_path / "index.db"
    watch = WatchProcess(tree.root, db_path, tmp_path / "watch.err")
    reader: SplitReader | None = None
    try:
        wait_for(lambda: db_path.exists(), "the index to exist")
        reader = SplitReader(db_path, writer)
        reader.start()
        writer.run()
        live_equals_rebuild(tree.root, db_path, tmp_path)
    finally:
        if reader is not None:
            reader.stop.set()
            reader.join(DEADLINE)
        code = watch.stop()
    assert code == 0, watch.stderr()
    assert "Traceback" not in watch.stderr()
    assert reader.errors == []
    assert reader.violations == []
    assert writer.split_lines == 6
    assert reader.during_split > 0, "the reader never looked while a line was half written"
    print(f"split-line reader: {reader.queries} queries, {reader.during_split} during splits")


# ------------------------------------------------------- 2. reader processes vs ingest
READER = r"""
import contextlib, io, json, os, sys, time
from sessiondex.cli.main import cli
config, db, stop_file, seed = sys.argv[1:5]
words = ["error", "test", "auth", "refactor", "deploy", "function", "config", "zzzz"]
queries = answered = locked = 0
failures = []
i = int(seed)
while not os.path.exists(stop_file) or queries < 5:
    i += 1
    if i % 2:
        args = ["list", "--scope", "all", "--json"]
    else:
        args = ["search", words[i % len(words)], "--scope", "all", "--json"]
    out, err = io.StringIO(), io.StringIO()
    queries += 1
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli.main(["--config-dir", config, "--db", db, *args], standalone_mode=False)
        json.loads(out.getvalue())
        answered += 1
    except BaseException as exc:
        text = repr(exc) + err.getvalue()
        if "locked" in text:
            locked += 1
        failures.append(text[:300])
print(json.dumps({"queries": queries, "answered": answered, "locked": locked,
                  "failures": failures[:5]}))
"""


@pytest.mark.parametrize(
    "size",
    [
        pytest.param((240, 16, 3), id="ci"),
        pytest.param(
            (1500, 150, 4),
            id="stress",
            marks=[
                pytest.mark.stress,
                pytest.mark.timeout(1800),
                pytest.mark.skipif(not STRESS, reason="long run: set SESSIONDEX_STRESS=1"),
            ],
        ),
    ],
)
def test_reader_processes_while_watch_ingests(tmp_path: Path, size: tuple[int, int, int]) -> None:
    sessions, size_mb, readers = size
    staging = tmp_path / "staging"
    generate(staging, sessions=sessions, projects=8, size_mb=size_mb, seed=5)
    tree = ConfigTree(tmp_path / "claude")
    writer_session = tree.session(cwd="/srv/seed")
    writer_session.user("seed session so that list has rows from the start")
    writer_session.write()
    db_path = tmp_path / "index.db"
    stop_file = tmp_path / "stop"
    watch = WatchProcess(tree.root, db_path, tmp_path / "watch.err")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        wait_for(lambda: db_path.exists(), "the index to exist")
        for n in range(readers):
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        READER,
                        str(tree.root),
                        str(db_path),
                        str(stop_file),
                        str(n),
                    ],
                    cwd=REPO,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
            )
        # the corpus arrives while the readers read: whole project dirs moved in
        for project in sorted((staging / "projects").iterdir()):
            shutil.move(str(project), str(tree.root / "projects" / project.name))
        live_equals_rebuild(tree.root, db_path, tmp_path)
    finally:
        stop_file.touch()
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err.decode(errors="replace")
            results.append(json.loads(out.decode().strip().splitlines()[-1]))
        code = watch.stop()
    assert code == 0, watch.stderr()
    assert "Traceback" not in watch.stderr()
    queries = sum(r["queries"] for r in results)
    assert sum(r["locked"] for r in results) == 0, results
    assert [r["failures"] for r in results] == [[]] * readers, results
    assert sum(r["answered"] for r in results) == queries
    print(f"reader processes: {queries} queries answered, 0 locked")


# ------------------------------------------------------ 3. writers racing on one file
def _indexed_tree(tmp_path: Path, sessions: int = 3) -> tuple[ConfigTree, list[SessionWriter]]:
    tree = ConfigTree(tmp_path / "claude")
    writers = []
    for i in range(sessions):
        s = tree.session(cwd=f"/srv/race{i}")
        s.user(f"race{i} opening words")
        s.assistant(f"race{i} answer")
        s.write()
        writers.append(s)
    return tree, writers


@pytest.mark.parametrize("change", ["new", "grown", "rewritten"])
def test_a_row_changed_by_another_writer_is_never_applied_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """Issue 14 item 3, made deterministic: between the moment an ingest looks at a
    file's stored row and the moment it writes, another connection ingests the same
    file (the watcher beside a mutation). Seen on main: "UNIQUE constraint failed:
    files.path" for a new file, the same messages twice for a grown one. Now the row is
    read under the write lock, so the other writer waits its turn (or, as here in one
    thread, gives up after a short wait) and nothing is applied twice."""
    import sessiondex.indexer.ingest as ingest_module
    from sessiondex.indexer.faults import IndexBusy
    from sessiondex.indexer.meta import set_write_policy
    from sessiondex.indexer.refresh import ingest_path
    from sessiondex.indexer.stats import RefreshStats

    tree, (s, *_rest) = _indexed_tree(tmp_path)
    db_path = tmp_path / "index.db"
    victim, other = open_db(db_path), open_db(db_path)
    set_write_policy(other, wait=0.2)
    try:
        refresh(victim, [tree.root])
        if change == "new":
            s = tree.session(cwd="/srv/racenew")
            s.user("brand new race session")
            s.write()
        else:
            if change == "grown":
                s.user("a grown tail")
                s.assistant("its answer")
                s.append()
            else:
                s.entries = s.entries[:1]
                s.user("rewritten shorter")
                s.write()
        interleaved: list[str] = []

        def interleave() -> None:
            if not interleaved:
                interleaved.append("tried")
                try:
                    ingest_path(other, str(s.path), [tree.root], RefreshStats())
                    interleaved.append("other writer went first")
                except IndexBusy:
                    interleaved.append("other writer waited")

        # The first thing an ingest does with the file after looking at its stored row:
        # fingerprint the indexed prefix (a known file) or parse it (a new one).
        for name in ("fingerprint", "parse_tail"):
            real = getattr(ingest_module, name)
            monkeypatch.setattr(
                ingest_module,
                name,
                lambda *a, _real=real, **k: (interleave(), _real(*a, **k))[1],
            )
        ingest_path(victim, str(s.path), [tree.root], RefreshStats())
        monkeypatch.undo()
        ingest_path(other, str(s.path), [tree.root], RefreshStats())  # its turn now
        assert interleaved[0] == "tried"
        assert index_snapshot(victim) == rebuilt_snapshot([tree.root], tmp_path / "r.db")
        check_fts_integrity(victim)
    finally:
        victim.close()
        other.close()


def test_threads_ingesting_the_same_files_equal_a_rebuild(tmp_path: Path) -> None:
    """Four connections (as four processes would) bring the same growing files up to
    date at once, in a loop bounded by count and time: no error, no duplicate row."""
    from sessiondex.indexer.refresh import ingest_path
    from sessiondex.indexer.stats import RefreshStats

    tree, writers = _indexed_tree(tmp_path, sessions=4)
    db_path = tmp_path / "index.db"
    open_db(db_path).close()
    errors: list[str] = []
    stop = threading.Event()

    def ingester(n: int) -> None:
        db = open_db(db_path)
        try:
            for _ in range(400):
                if stop.is_set():
                    break
                for s in writers:
                    try:
                        ingest_path(db, str(s.path), [tree.root], RefreshStats())
                    except Exception:
                        errors.append(traceback.format_exc(limit=3))
        finally:
            db.close()

    threads = [threading.Thread(target=ingester, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    try:
        end = time.monotonic() + 2.0
        i = 0
        while time.monotonic() < end and i < 200:
            s = writers[i % len(writers)]
            s.user(f"line {i} from the writer")
            s.append()
            i += 1
            time.sleep(0.005)
    finally:
        stop.set()
        for t in threads:
            t.join(DEADLINE)
    assert errors == [], errors[:3]
    db = open_db(db_path)
    try:
        refresh(db, [tree.root])  # what the last loop may have missed of the last lines
        assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "r.db")
        check_fts_integrity(db)
    finally:
        db.close()


INDEX_CMD = [sys.executable, "-c", "from sessiondex.cli.main import main; main()"]


def test_two_cold_index_processes_both_succeed(tmp_path: Path) -> None:
    """Issue 14 item 4: two ``index`` processes on a new index at once (on main: one
    died with a raw "database is locked" traceback in 9 of 10 runs). Both wait their
    turn and exit 0; the result equals a rebuild. Two rounds, each on a fresh index."""
    staging = tmp_path / "corpus"
    generate(staging, sessions=60, projects=4, size_mb=6, seed=11)
    expected = rebuilt_snapshot([staging], tmp_path / "rebuilt.db")
    for round_ in range(2):
        db_path = tmp_path / f"double{round_}.db"
        args = [*INDEX_CMD, "--config-dir", str(staging), "--db", str(db_path), "index"]
        procs = [
            subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(2)
        ]
        outputs = [p.communicate(timeout=120) for p in procs]
        for proc, (_out, err) in zip(procs, outputs):
            text = err.decode(errors="replace")
            assert proc.returncode == 0, text
            assert "Traceback" not in text and "locked" not in text, text
        db = open_db(db_path)
        try:
            assert index_snapshot(db) == expected
            check_fts_integrity(db)
        finally:
            db.close()


def test_two_bulk_cold_builds_at_once_keep_fts_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 4: a cold build drops the FTS insert triggers (indexer/bulk.py). Two at once
    on one index (two connections; the second finds the bulk lock taken and keeps the
    triggers) must leave every row searchable: FTS5's integrity check passes and the
    index equals a rebuild."""
    import sessiondex.indexer.refresh as refresh_module
    from sessiondex.indexer.prefetch import parse_new_file

    class InlinePrefetcher:  # the parsing process, in this process: same items
        def __init__(self, files: list[Any], include_tools: bool, dictionary: Any = None) -> None:
            self.dictionary = dictionary
            self.include_tools = include_tools

        def use_dictionary(self, dictionary: Any) -> None:
            self.dictionary = dictionary

        def take(self, tf: Any) -> Any:
            return parse_new_file(tf, self.include_tools)

        def close(self) -> None:
            pass

    monkeypatch.setattr(refresh_module, "PREFETCH_MIN_BYTES", 0)
    monkeypatch.setattr(refresh_module, "Prefetcher", InlinePrefetcher)
    staging = tmp_path / "corpus"
    generate(staging, sessions=40, projects=3, size_mb=3, seed=12)
    db_path = tmp_path / "bulk.db"
    open_db(db_path).close()
    errors: list[str] = []

    def build() -> None:
        db = open_db(db_path)
        try:
            refresh_module.refresh(db, [staging])
        except Exception:
            errors.append(traceback.format_exc(limit=4))
        finally:
            db.close()

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == [], errors
    db = open_db(db_path)
    try:
        check_fts_integrity(db)
        assert index_snapshot(db) == rebuilt_snapshot([staging], tmp_path / "r.db")
    finally:
        db.close()


def test_a_rebuild_begun_during_a_bulk_build_leaves_every_row_searchable(
    tmp_path: Path,
) -> None:
    """Two ``index --rebuild`` at once (helper 90, 4 runs of 4): the second cleared the
    index while the first's bulk build had the FTS triggers off, and the clear took the
    saved trigger SQL with the other ``meta`` rows. The first build then neither rebuilt
    FTS nor put the triggers back: every later search found nothing, for good. Here the
    first build is held open (its FTS work off) while a second connection rebuilds."""
    from sessiondex.indexer.bulk import BulkFts

    staging = tmp_path / "corpus"
    generate(staging, sessions=12, projects=2, size_mb=1, seed=5)
    db_path = tmp_path / "index.db"
    first, second = open_db(db_path), open_db(db_path)
    try:
        refresh(first, [staging])
        building = BulkFts(first).__enter__()
        assert building.active
        refresh(second, [staging], rebuild=True)  # finds the bulk lock taken
        building.__exit__(None, None, None)
        check_fts_integrity(second)
        assert index_snapshot(second) == rebuilt_snapshot([staging], tmp_path / "r.db")
        hits = search(second, "the", Filters(scope="all"))
        assert hits and all(h["matched_by"] != "fuzzy" for h in hits)
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("lost", ["messages_ai", "session_search_au"])
def test_an_index_whose_fts_triggers_were_lost_is_rebuilt_not_a_dead_end(
    tmp_path: Path, lost: str
) -> None:
    """What two rebuilds at once left before the fix above: FTS triggers gone, with no
    saved SQL to put them back. No refresh, plain or ``--rebuild``, repaired it. Now
    every open sees it: a read-only handle is not given, and ``open_db`` moves the file
    aside and a refresh rebuilds it; a build in progress (its bulk lock held) is left
    alone."""
    from sessiondex.indexer.bulk import BULK_LOCK
    from sessiondex.indexer.db import open_current_readonly
    from sessiondex.indexer.lock import WatcherLock

    staging = tmp_path / "corpus"
    generate(staging, sessions=6, projects=1, size_mb=1, seed=9)
    db_path = tmp_path / "index.db"
    db = open_db(db_path)
    refresh(db, [staging])
    db.execute(f"DROP TRIGGER {lost}")
    db.close()
    building = WatcherLock(db_path, BULK_LOCK)
    building.acquire()  # someone's bulk build: its triggers are its own business
    try:
        open_db(db_path).close()
        assert not list(tmp_path.glob("index.db.corrupt-*"))
    finally:
        building.release()
    assert open_current_readonly(db_path) is None
    notices: list[str] = []
    db = open_db(db_path, on_recover=notices.append)
    try:
        assert len(notices) == 1 and "full-text triggers are gone" in notices[0]
        assert len(list(tmp_path.glob("index.db.corrupt-*"))) == 1
        refresh(db, [staging])
        check_fts_integrity(db)
        assert index_snapshot(db) == rebuilt_snapshot([staging], tmp_path / "r.db")
    finally:
        db.close()


@contextmanager
def another_bulk_build(db_path: Path, seconds: float | None = None) -> Iterator[threading.Event]:
    """A cold build's bulk work held open on another connection (its FTS work off, as a
    build in another process keeps it), for ``seconds`` or until the block ends; yields
    the event set when the build has ended."""
    from sessiondex.indexer.bulk import BulkFts

    started, finished, stop = threading.Event(), threading.Event(), threading.Event()

    def build() -> None:
        db = open_db(db_path)
        try:
            with BulkFts(db) as building:
                assert building.active
                started.set()
                stop.wait(10 if seconds is None else seconds)
            finished.set()
        finally:
            db.close()

    builder = threading.Thread(target=build)
    builder.start()
    try:
        assert started.wait(10)
        yield finished
    finally:
        stop.set()
        builder.join(10)


def test_a_read_that_refreshes_waits_for_another_processs_cold_build(tmp_path: Path) -> None:
    """Helper 90, 5 runs of 5: ``search`` run while ``index`` built a new index refreshed
    beside the build (its rows written with the FTS work off, as the build's own are)
    and answered from an FTS index still empty: fuzzy rows, exit 1, no note. A read that
    refreshed now waits for the build to end, and says so."""
    import sessiondex

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/built")
    s.user("where did the zanzibarword go")
    s.write()
    db_path = tmp_path / "index.db"
    with another_bulk_build(db_path, seconds=0.5) as finished:
        notes: list[str] = []
        index = sessiondex.Index(db_path, tree.root, notice=notes.append)
        try:
            hits = index.search("zanzibarword", scope="all")
        finally:
            index.close()
    # (finished is set just after the bulk lock is let go, which is what the read
    # waits for: not asserted inside the block, where the two race.)
    assert finished.is_set()
    assert [h["matched_by"] for h in hits] == ["text"]
    assert any("waiting for another sessiondex process" in n for n in notes), notes


def test_a_read_after_a_build_that_did_not_finish_says_so(tmp_path: Path) -> None:
    """A first build stopped part way (``watch`` killed during its catch-up, Ctrl-C on
    ``index``) leaves sessions in the index and no completed refresh: ``--no-refresh
    list`` answered 920 sessions beside "has never been built" (h608). The note now
    says the build did not finish and how many sessions it holds."""
    import sessiondex
    from sessiondex.indexer.db import open_db

    tree = ConfigTree(tmp_path / "claude")
    for n in range(3):
        s = tree.session(cwd="/srv/half")
        s.user(f"session number {n}")
        s.write()
    db_path = tmp_path / "index.db"
    with sessiondex.Index(db_path, tree.root) as builder:
        builder.refresh()
    db = open_db(db_path)
    db.execute("DELETE FROM meta WHERE key = 'last_refresh'")  # as a build cut short
    db.conn.commit()
    db.close()
    notes: list[str] = []
    with sessiondex.Index(db_path, tree.root, refresh=False, notice=notes.append) as index:
        assert len(index.list(scope="all")) == 3
    assert len(notes) == 1, notes
    assert "never been built" not in notes[0], notes
    assert "did not finish" in notes[0] and "3 sessions" in notes[0], notes


def test_a_read_that_does_not_refresh_says_another_build_is_under_way(tmp_path: Path) -> None:
    """Helper 92: ``search --no-refresh`` during another process's ``index --rebuild``
    said the index "has never been built" (it had; it was being built again) while
    its search found nothing. It now names the build under way; an index nobody has
    built still gets the old note."""
    import sessiondex

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/built")
    s.user("where did the zanzibarword go")
    s.write()
    db_path = tmp_path / "index.db"

    def notes_of_a_read() -> list[str]:
        notes: list[str] = []
        index = sessiondex.Index(db_path, tree.root, refresh=False, notice=notes.append)
        try:
            index.list(scope="all")
        finally:
            index.close()
        return notes

    never = notes_of_a_read()
    assert len(never) == 1 and "has never been built" in never[0], never
    with another_bulk_build(db_path):
        during = notes_of_a_read()
    assert len(during) == 1, during
    assert f"(pid {os.getpid()}) is building the index" in during[0], during
    assert "never been built" not in during[0]
    # Helper 96: a small first build takes no bulk lock, only the write turn.
    from sessiondex.indexer.lock import WriteTurn

    turn = WriteTurn(db_path)
    turn.acquire(5)
    try:
        small = notes_of_a_read()
    finally:
        turn.release()
    assert len(small) == 1 and "another sessiondex process is building" in small[0], small


@pytest.mark.parametrize("read", ["list", "search", "resolve", "stats"])
def test_a_read_that_does_not_refresh_says_an_upgrade_emptied_the_index(
    tmp_path: Path, read: str
) -> None:
    """The first ``--no-refresh`` read after an upgrade that changed the derivation rules
    empties the index for the rebuild (indexer/db.py ``_check_derivation_version``), and
    answered from the empty file "the index … has never been built": it had, by the
    older sessiondex. Now the note says that an upgrade emptied it, in that read and in
    the ones after it, until a refresh fills it again."""
    from click.testing import CliRunner

    from sessiondex.cli.main import cli
    from sessiondex.indexer.meta import set_meta
    from sessiondex.indexer.shape import DERIVATION_VERSION

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/upgraded")
    s.user("the quetzalword before the upgrade")
    s.write()
    db_path = tmp_path / "index.db"
    base = ["--config-dir", str(tree.root), "--db", str(db_path)]
    assert CliRunner().invoke(cli, [*base, "index"]).exit_code == 0
    db = open_db(db_path)
    set_meta(db, "derivation_version", str(DERIVATION_VERSION - 1))
    db.conn.commit()
    db.close()
    args = {
        "list": ["list", "--scope", "all"],
        "search": ["search", "--scope", "all", "quetzalword"],
        "resolve": ["resolve", "quetzal name"],
        "stats": ["stats"],
    }[read]
    for _ in range(2):  # the read that emptied it, and the next
        result = CliRunner().invoke(cli, [*base, "--no-refresh", *args])
        assert "Traceback" not in result.output
        notes = [line for line in result.stderr.splitlines() if line.startswith("note:")]
        assert len(notes) == 1, result.stderr
        assert "never been built" not in notes[0], notes
        assert "older sessiondex" in notes[0] and "sessiondex index" in notes[0], notes
    refreshed = CliRunner().invoke(cli, [*base, "list", "--scope", "all", "--json"])
    assert refreshed.exit_code == 0 and len(json.loads(refreshed.stdout)) == 1
    again = CliRunner().invoke(cli, [*base, "--no-refresh", "list", "--scope", "all"])
    assert "note:" not in again.stderr, again.stderr


# ------------------------------------------- 4. the index file deleted under a watcher
def cli_run(root: Path, db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*INDEX_CMD, "--config-dir", str(root), "--db", str(db), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_index_deleted_under_watch_is_rebuilt_and_never_answers_empty(tmp_path: Path) -> None:
    """Issue 14 item 7: ``rm index.db*`` while ``watch`` runs. On main the next reader
    trusted the watcher and answered "No matches" from a new, empty index. Now a reader
    refreshes an index nobody has filled, and the watcher notices the file is gone (one
    stat per wake-up), reopens it and rebuilds, and keeps it live afterwards."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/gone")
    s.user("the platypusword is indexed before the index is deleted")
    s.write()
    db_path = tmp_path / "index.db"
    watch = WatchProcess(tree.root, db_path, tmp_path / "watch.err")
    try:
        wait_for(
            lambda: (
                cli_run(
                    tree.root, db_path, "--no-refresh", "search", "platypusword", "--scope", "all"
                ).returncode
                == 0
            ),
            "the watcher's catch-up",
        )
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        found = cli_run(tree.root, db_path, "search", "platypusword", "--scope", "all", "--json")
        assert found.returncode == 0, found.stdout + found.stderr
        assert [r["session_id"] for r in json.loads(found.stdout)] == [s.session_id]
        wait_for(lambda: "deleted or replaced" in watch.stderr(), "the watcher to notice")
        s.user("the echidnaword arrives after the rebuild")
        s.append()

        def live() -> bool:
            done = cli_run(
                tree.root, db_path, "--no-refresh", "search", "echidnaword", "--scope", "all"
            )
            return done.returncode == 0

        wait_for(live, "the watcher to keep the new index live")
        assert watch.proc.poll() is None, watch.stderr()
        live_equals_rebuild(tree.root, db_path, tmp_path)
    finally:
        code = watch.stop()
    assert code == 0, watch.stderr()
    assert "Traceback" not in watch.stderr()


# --------------------------------------------------------- 5. read your own writes
def test_reads_of_one_session_see_writes_made_beside_a_watcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14 item 11: with a watcher alive, readers skip their own refresh. On main,
    right after a rename through the SDK 10 of 10 reads returned the old title, and
    ``get_session_messages(new_id)`` after a fork returned ``[]``. Here the watcher is
    alive (its lock is held) but never catches up, which is the worst case: every read
    of one session must check that session's file itself. Writes through the official
    SDK, through ``sessiondex.Index`` and through the CLI are all seen at once."""
    from sessiondex import Index
    from sessiondex import sdk as ours
    from sessiondex.indexer.lock import WatcherLock

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/ryw")
    s.user("read your writes")
    s.assistant("of course")
    s.user("and a second turn")
    s.write()
    sid = s.session_id
    db_path = tmp_path / "index.db"
    with Index(db_path, [tree.root]) as index:
        index.refresh()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tree.root))
    sdk = pytest.importorskip("claude_agent_sdk")

    def info(session_id: str) -> Any:
        return ours.get_session_info(session_id, db=db_path, config_dir=tree.root)

    with WatcherLock(db_path):
        assert watcher_alive(db_path)
        for i in range(10):
            sdk.rename_session(sid, f"SDK title {i}")
            assert info(sid).custom_title == f"SDK title {i}"
        forked = sdk.fork_session(sid)
        theirs = [m.uuid for m in sdk.get_session_messages(forked.session_id)]
        mine = ours.get_session_messages(forked.session_id, db=db_path, config_dir=tree.root)
        assert theirs and [m.uuid for m in mine] == theirs
        with Index(db_path, [tree.root]) as index:
            index.rename(sid, "Index title")
            assert index.resolve(sid).session["title"] == "Index title"
            fork_id = index.fork(sid).session_id
        assert ours.get_session_messages(fork_id, db=db_path, config_dir=tree.root)
        renamed = cli_run(tree.root, db_path, "rename", sid, "CLI title")
        assert renamed.returncode == 0, renamed.stderr
        resolved = cli_run(tree.root, db_path, "resolve", sid, "--json")
        assert one_session(resolved.stdout)["title"] == "CLI title"
        s.meta("custom-title", customTitle="Claude Code title")  # written by Claude Code
        s.append()
        shown = cli_run(tree.root, db_path, "resolve", sid, "--json")
        assert one_session(shown.stdout)["title"] == "Claude Code title"


# ----------------------------------------------------- 6. everything at once, for a while
# A mutation beside a line the writer has not finished may wait for it and, if it
# keeps growing, refuse (issue 14 item 1, transcripts/write.py): an expected exit 1.
BEING_WRITTEN = "session is being written, try again"


class Loop(threading.Thread):
    """One CLI command run over and over in fresh processes until ``stop``; records
    every run that printed a traceback, met "database is locked", or exited with a code
    not in ``ok`` (a mutation refused beside a half-written line excepted)."""

    def __init__(
        self,
        name: str,
        root: Path,
        db: Path,
        make_args: Callable[[int], list[str] | None],
        stop: threading.Event,
        ok: tuple[int, ...] = (0,),
        on_result: Callable[[int, subprocess.CompletedProcess[str]], None] | None = None,
        limit: int = 10_000,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.root, self.db, self.make_args, self.stop, self.ok = root, db, make_args, stop, ok
        self.on_result, self.limit = on_result, limit
        self.runs = 0
        self.failures: list[str] = []

    def run(self) -> None:
        for i in range(self.limit):
            if self.stop.is_set():
                break
            args = self.make_args(i)
            if args is None:
                time.sleep(0.05)
                continue
            done = cli_run(self.root, self.db, *args)
            self.runs += 1
            text = done.stdout + done.stderr
            refused = done.returncode == 1 and BEING_WRITTEN in done.stderr
            if (
                "Traceback" in text
                or "database is locked" in text
                or (done.returncode not in self.ok and not refused)
            ):
                self.failures.append(f"{args} -> {done.returncode}: {text[-600:]}")
            elif self.on_result is not None:
                self.on_result(i, done)


class StressWriter(threading.Thread):
    """Claude Code, writing: whole lines and lines in two writes with a pause, into its
    own sessions; remembers every line so none may be lost or broken."""

    def __init__(self, sessions: list[SessionWriter], stop: threading.Event) -> None:
        super().__init__(name="writer", daemon=True)
        self.sessions, self.stop = sessions, stop
        self.lines: dict[Path, list[bytes]] = {s.path: [] for s in sessions}
        self.words: list[str] = []

    def run(self) -> None:
        for i in range(100_000):
            if self.stop.is_set():
                break
            s = self.sessions[i % len(self.sessions)]
            word = f"stressword{i}"
            s.user(f"{word} from the writer, line {i}")
            line = dumps(s.entries.pop()) + b"\n"
            if i % 3 == 0:  # split: the watcher and every reader see a half line
                cut = 1 + (i * 7) % (len(line) - 1)
                append_bytes(s.path, line[:cut])
                time.sleep(0.03)
                append_bytes(s.path, line[cut:])
            else:
                append_bytes(s.path, line)
            self.lines[s.path].append(line)
            self.words.append(word)
            time.sleep(0.02)


@pytest.mark.parametrize(
    "seconds",
    [
        pytest.param(3.0, id="ci"),
        pytest.param(
            90.0,
            id="stress",
            marks=[
                pytest.mark.stress,
                pytest.mark.timeout(1800),
                pytest.mark.skipif(not STRESS, reason="long run: set SESSIONDEX_STRESS=1"),
            ],
        ),
    ],
)
@pytest.mark.long
def test_everything_at_once(tmp_path: Path, seconds: float) -> None:
    """Issue 14, "must hold": ``watch`` running; a writer appending (a third of its
    lines split in two writes); and in parallel, each in fresh CLI processes,
    ``rename``/``tag`` loops, a ``fork`` loop, a ``delete`` loop (of those forks), an
    ``index`` loop and ``search``/``show``/``list`` loops, for a bounded time (and a
    bounded count). Ends with: no traceback, no "database is locked", every exit code
    as expected, every writer line intact in its file, every transcript line valid
    JSON, the watcher alive, and the live index equal to a fresh rebuild (all rows,
    so sessions and message counts) giving the same search answers.

    Mutations also act on the sessions the writer is writing, so their lines and the
    writer's meet (item 1, transcripts/write.py: a mutation never splits a line being
    written; it waits for it, or refuses with exit 1)."""
    tree = ConfigTree(tmp_path / "claude")
    targets = []
    for i in range(4):
        t = tree.session(cwd=f"/srv/target{i}")
        t.user(f"target{i} is renamed, tagged and forked")
        t.assistant("fine")
        t.write()
        targets.append(t.session_id)
    written = []
    for i in range(3):
        w = tree.session(cwd=f"/srv/live{i}")
        w.user(f"live{i} session, still being written")
        w.write()
        written.append(w)
    db_path = tmp_path / "index.db"
    watch = WatchProcess(tree.root, db_path, tmp_path / "watch.err")
    stop = threading.Event()
    writer = StressWriter(written, stop)
    forks: list[str] = []
    forks_lock = threading.Lock()

    def record_fork(_i: int, done: subprocess.CompletedProcess[str]) -> None:
        with forks_lock:
            forks.append(done.stdout.strip().splitlines()[-1])

    def next_fork(_i: int) -> list[str] | None:
        with forks_lock:
            return ["delete", forks.pop(0), "--yes"] if forks else None

    def reader(i: int) -> list[str]:
        word = writer.words[-5] if len(writer.words) > 5 else "target0"
        return [
            ["search", word, "--scope", "all", "--json"],
            ["show", targets[i % len(targets)]],
            ["list", "--scope", "all", "--all-kinds", "--json"],
        ][i % 3]

    def check_list(_i: int, done: subprocess.CompletedProcess[str]) -> None:
        if done.stdout.startswith("["):
            json.loads(done.stdout)  # a complete answer, never half a page

    root = tree.root
    every = [*targets, *(w.session_id for w in written)]
    n = len(every)
    loops = [
        Loop("rename", root, db_path, lambda i: ["rename", every[i % n], f"Title {i}"], stop),
        Loop("tag", root, db_path, lambda i: ["tag", every[(i + 1) % n], f"t{i}"], stop),
        Loop(
            "fork",
            root,
            db_path,
            lambda i: ["fork", every[(i + 2) % n], "--title", f"Fork {i}"],
            stop,
            on_result=record_fork,
        ),
        Loop("delete", root, db_path, next_fork, stop),
        Loop("index", root, db_path, lambda i: ["index"], stop),
        Loop("read", root, db_path, reader, stop, ok=(0, 1), on_result=check_list),
        Loop(
            "read2", root, db_path, lambda i: reader(i + 2), stop, ok=(0, 1), on_result=check_list
        ),
    ]
    try:
        writer.start()
        for loop in loops:
            loop.start()
        time.sleep(seconds)
        # On a loaded machine a loop may not have run twice yet (each run is a new
        # process): give it a bounded while longer rather than fail on the count.
        deadline = time.monotonic() + 4 * seconds
        while time.monotonic() < deadline and any(loop.runs < 2 for loop in loops):
            time.sleep(0.1)
    finally:
        stop.set()
        writer.join(DEADLINE)
        for loop in loops:
            loop.join(DEADLINE * 4)
    try:
        assert watch.proc.poll() is None, "the watcher died: " + watch.stderr()[-2000:]
        failures = [f"{loop.name}: {f}" for loop in loops for f in loop.failures]
        assert failures == [], failures[:5]
        runs = {loop.name: loop.runs for loop in loops}
        assert all(n >= 2 for n in runs.values()), runs
        for path, lines in writer.lines.items():
            data = path.read_bytes()
            for line in lines:
                assert line in data, f"lost or broken writer line in {path.name}: {line[:80]!r}"
        for path in (tree.root / "projects").rglob("*.jsonl"):
            for raw in path.read_bytes().splitlines():
                json.loads(raw)  # no malformed line anywhere
        live_equals_rebuild(tree.root, db_path, tmp_path)
        live, rebuilt = open_db(db_path), open_db(tmp_path / "rebuilt.db")
        try:
            for word in [*writer.words[:: max(1, len(writer.words) // 20)], "target1", "Fork"]:
                assert [h["session_id"] for h in search(live, word, EVERYWHERE)] == [
                    h["session_id"] for h in search(rebuilt, word, EVERYWHERE)
                ], word
        finally:
            live.close()
            rebuilt.close()
    finally:
        code = watch.stop()
    assert code == 0, watch.stderr()[-2000:]
    assert "Traceback" not in watch.stderr()
    print(f"everything at once: {runs}, {len(writer.words)} writer lines")


def test_a_second_handle_never_drops_the_first_ones_sqlite_locks(tmp_path: Path) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it,
    SQLite's included. Opening a second Index (watch's archive rescue does, beside its
    worker's connection) read the database's header with Python's open() and closed it:
    another process's writer then took itself for the last connection and deleted the
    WAL under the first, whose commits no other process saw any more."""
    from sessiondex import Index
    from tests.builders import ConfigTree

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("alpha first prompt")
    s.write()
    db = tmp_path / "i.db"
    first = Index(db, [tree.root])
    try:
        first.refresh()
        wal = Path(f"{db}-wal")
        assert wal.exists()
        Index(db, [tree.root]).close()
        other = subprocess.run(
            [sys.executable, "-m", "sessiondex.cli.main", "--config-dir", str(tree.root),
             "--db", str(db), "tag", s.session_id, "mine", "--cwd", "/w/app"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert other.returncode == 0, other.stderr
        assert wal.exists()  # still the first handle's WAL, shared with everyone
        s.assistant("bravo appended later")
        s.write()
        first.refresh()
        seen = subprocess.run(
            [sys.executable, "-m", "sessiondex.cli.main", "--config-dir", str(tree.root),
             "--db", str(db), "--no-refresh", "search", "bravo", "--scope", "all"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert seen.returncode == 0, seen.stderr  # the first handle's commit is visible
    finally:
        first.close()
