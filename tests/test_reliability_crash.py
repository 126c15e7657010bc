"""Crash consistency: ``sessiondex index`` killed with SIGKILL at random moments.

Each file's rows and its byte offset are committed together (sessiondex.indexer.ingest), so a run
killed anywhere — while the schema is created, mid-file, mid-commit, during a
``--rebuild``'s clear — must leave a database that opens, passes ``PRAGMA
integrity_check`` and FTS5's own check, and that the next normal ``index`` completes to
exactly the rows of a clean rebuild.

The moments are drawn from a seeded ``random.Random`` over the duration of an unkilled
run (measured, not assumed), so the kills land before, during and after the work. Between
kills the tree is changed (appends, a rewrite, a truncation, a deletion, new sessions)
so grown and rewritten files get killed too, and half of the children commit after
nearly every file (a tiny commit group) so many partial states are reached.

``SESSIONDEX_STRESS=1`` runs the long variant (more kills, a bigger corpus).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench.corpus import generate
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from tests.helpers_index import check_fts_integrity, index_snapshot, rebuilt_snapshot

REPO = Path(__file__).resolve().parents[1]
STRESS = os.environ.get("SESSIONDEX_STRESS") == "1"
stress = pytest.mark.skipif(not STRESS, reason="long run: set SESSIONDEX_STRESS=1")

# The child: the real CLI (`sessiondex index`), optionally with a tiny commit group so
# that it commits after almost every file. "ready" is printed once Python is up, so the
# kill delay is measured from there and mostly lands in the indexing itself.
CHILD = """
import sys
from sessiondex.indexer import refresh
if sys.argv[1] == "small-groups":
    refresh.CommitGroup.GROUP_SECONDS = 0.002
if sys.argv[1] == "prefetch":  # the cold build's parsing process, whatever the size
    refresh.PREFETCH_MIN_BYTES = 0
from sessiondex.cli.main import main
print("ready", flush=True)
main(sys.argv[2:])
"""

MARK = "SESSIONDEX_CRASH_TEST_MARK"  # inherited by the child and anything it spawns


def processes_marked(mark: str) -> list[int]:
    """Live processes whose environment carries ``MARK=mark`` (Linux /proc)."""
    found = []
    needle = f"{MARK}={mark}".encode()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as fh:
                zombie = fh.read().rsplit(b")", 1)[1].split()[0] == b"Z"
        except OSError:
            continue
        if needle in environ and not zombie:
            found.append(int(entry))
    return found


class CrashWorld:
    def __init__(self, base: Path, sessions: int, size_mb: float, seed: int) -> None:
        generate(base / "corpus", sessions=sessions, projects=6, size_mb=size_mb, seed=seed)
        self.config = base / "corpus"
        self.db = base / "index.db"
        self.scratch = base / "scratch"
        self.scratch.mkdir()
        self.rng = random.Random(seed)
        self._expected: dict[str, Any] | None = None
        self.kills = 0
        self.mark = f"{os.getpid()}-{uuid.uuid4()}"
        self.clean_exits = 0

    @property
    def roots(self) -> list[Path]:
        return [self.config]

    def transcripts(self) -> list[Path]:
        # the corpus also holds decoys (a directory named <uuid>.jsonl, agent-*.jsonl)
        return sorted(
            p
            for p in self.config.glob("projects/*/*.jsonl")
            if p.is_file() and not p.is_symlink() and not p.name.startswith("agent-")
        )

    # ------------------------------------------------------------------ child runs
    def start(self, *args: str, mode: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CHILD,
                mode,
                "--config-dir",
                str(self.config),
                "--db",
                str(self.db),
                "index",
                *args,
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, MARK: self.mark},
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready", proc.communicate()
        return proc

    def run_and_kill(self, delay: float, *args: str, mode: str) -> None:
        proc = self.start(*args, mode=mode)
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            self.kills += 1
        proc.wait(timeout=60)
        # before reading its pipes: a leftover worker would hold them open
        self.assert_no_orphans()
        _, err = proc.communicate(timeout=60)
        if proc.returncode >= 0:
            # (a killed run may leave noise from its parsing worker, which saw its parent
            # vanish mid-handshake; a run that finished must be clean)
            assert b"Traceback" not in err, err.decode(errors="replace")
            assert proc.returncode == 0, err
            self.clean_exits += 1
        else:
            assert proc.returncode == -signal.SIGKILL

    def assert_no_orphans(self) -> None:
        """The cold build's parsing process must not outlive a killed ``index``."""
        deadline = time.monotonic() + 10
        while (left := processes_marked(self.mark)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left == [], f"processes left behind by a killed index: {left}"

    def full_run_seconds(self) -> float:
        """How long an unkilled cold run takes on this machine, from "ready"."""
        if self.db.exists():
            self.drop_db()
        proc = self.start(mode="small-groups")
        started = time.monotonic()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        return time.monotonic() - started

    def drop_db(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.db}{suffix}").unlink(missing_ok=True)

    # ------------------------------------------------------------------ tree changes
    def change_tree(self) -> None:
        """Appends, a rewrite, a truncation, a deletion, a new session: work for the next
        run of every kind (grown, rewritten, removed, new)."""
        rng = self.rng
        files = self.transcripts()
        for path in rng.sample(files, min(12, len(files))):
            lines = path.read_bytes().splitlines(keepends=True)
            if lines:
                with open(path, "ab") as fh:  # copies of its own complete lines
                    fh.write(b"".join(rng.choice(lines) for _ in range(3)))
        victim, cut, doomed, source = rng.sample(files, 4)
        data = victim.read_bytes()
        victim.write_bytes(data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")  # rewrite
        with open(cut, "r+b") as fh:  # truncate to zero, then one line back
            first = fh.readline()
            fh.seek(0)
            fh.truncate(0)
            fh.write(first)
        doomed.unlink()
        new = source.with_name(f"{uuid.UUID(int=rng.getrandbits(128), version=4)}.jsonl")
        shutil.copyfile(source, new)
        self._expected = None

    # ------------------------------------------------------------------ checks
    def expected(self) -> dict[str, Any]:
        if self._expected is None:
            target = self.scratch / f"rebuild-{self.rng.getrandbits(32)}.db"
            self._expected = rebuilt_snapshot(self.roots, target)
        return self._expected

    def check_after_crash(self) -> None:
        if self.db.exists():
            con = sqlite3.connect(self.db)
            try:
                assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            finally:
                con.close()
        db = open_db(self.db)  # never left unopenable (migrations included)
        try:
            check_fts_integrity(db)
            refresh(db, self.roots)
            check_fts_integrity(db)
            assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert index_snapshot(db) == self.expected()
        finally:
            db.close()


def crash_rounds(world: CrashWorld, kills: int) -> None:
    """Rounds of change → kill (once or twice) → check, until ``kills`` children died
    mid-run (a kill that lands after the child finished is a clean exit, not counted)."""
    span = world.full_run_seconds() * 1.2 + 0.05
    rng = world.rng
    rounds = 0
    while world.kills < kills:
        rounds += 1
        assert rounds <= 3 * kills, (world.kills, world.clean_exits)
        scenario = rng.choice(["cold", "rebuild", "changes", "changes"])
        if scenario == "cold":
            world.drop_db()
        elif scenario == "changes":
            world.change_tree()
        args = ("--rebuild",) if scenario == "rebuild" else ()
        # once in three rounds, kill twice before looking (a crash on top of a crash)
        for _ in range(2 if rng.random() < 0.33 else 1):
            mode = rng.choice(["default", "small-groups", "small-groups", "prefetch"])
            # an incremental run after a few changes is much shorter than a cold one
            window = span if scenario != "changes" else span * 0.4
            world.run_and_kill(rng.uniform(0, window), *args, mode=mode)
        world.check_after_crash()


@pytest.mark.long
def test_killed_index_is_completed_by_the_next_run(tmp_path: Path) -> None:
    world = CrashWorld(tmp_path, sessions=80, size_mb=5, seed=20261129)
    crash_rounds(world, kills=7)
    assert world.kills >= 7


@pytest.mark.stress
@pytest.mark.timeout(3600)
@stress
def test_killed_index_stress(tmp_path: Path) -> None:
    world = CrashWorld(tmp_path, sessions=300, size_mb=24, seed=7)
    crash_rounds(world, kills=200)
    assert world.kills >= 200
