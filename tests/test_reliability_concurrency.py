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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.corpus import generate
from sessiondex.indexer.db import open_db
from sessiondex.indexer.lock import watcher_alive
from sessiondex.query.filters import Filters
from sessiondex.query.search import search
from tests.builders import ConfigTree, SessionWriter, append_bytes, dumps
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
