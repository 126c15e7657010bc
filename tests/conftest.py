"""Shared fixtures: every test gets its own cache dir and no inherited Claude config."""

from __future__ import annotations

import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests check answers, not speed (spec/performance.md keeps timings in bench/):
# hypothesis's per-example deadline failed a test whose first example imported
# claude-agent-sdk (~0.4 s) whenever no earlier test in that xdist worker had.
settings.register_profile("sessiondex", deadline=None)
settings.load_profile("sessiondex")

# A run's temporary trees go to a RAM-backed directory when the machine has one: every
# test builds transcript trees and indexes, and on a disk each index close is a
# checkpoint with fsyncs (the suite ran ~25% faster on /dev/shm). SESSIONDEX_TEST_TMP
# names another parent; "default" keeps pytest's own.
RAM_TMP = Path("/dev/shm")


def pytest_report_header(config: pytest.Config) -> str:
    con = sqlite3.connect(":memory:")
    try:
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        fts5 = "yes"
    except sqlite3.OperationalError:
        fts5 = "no"
    return f"sqlite {sqlite3.sqlite_version}, fts5: {fts5}"


def pytest_configure(config: pytest.Config) -> None:
    """Choose this run's base temp dir (the controller only: xdist workers are handed a
    subdirectory of it). A fresh directory per run, so two runs never clear each other's.

    Also compile sessiondex's modules to bytecode once, as ``pip install`` does: the
    suite starts hundreds of ``sessiondex`` processes, and with an editable install under
    ``PYTHONDONTWRITEBYTECODE`` (set on the CI machines) each one compiled every module
    it imported (~35 ms a process)."""
    if hasattr(config, "workerinput"):
        return
    _compile_package()
    if config.option.basetemp:
        return
    parent = os.environ.get("SESSIONDEX_TEST_TMP") or str(RAM_TMP)
    if parent == "default" or not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        return
    _drop_old_runs(Path(parent))
    config.option.basetemp = tempfile.mkdtemp(prefix=RUN_PREFIX, dir=parent)
    config.stash[_OWN_BASETEMP] = config.option.basetemp


_OWN_BASETEMP = pytest.StashKey[str]()
RUN_PREFIX = "sessiondex-tests-"
KEEP_FAILED_RUNS = 3  # as pytest keeps its own last three base temp dirs
ACTIVE_SECONDS = 6 * 3600  # a run this recent may still be going (stress runs): kept


def _drop_old_runs(parent: Path) -> None:
    """Remove the trees of earlier failed runs beyond the newest few (they live in RAM),
    leaving any written to within the last six hours, which may belong to a run still
    going, and anything that is not this user's."""
    runs = []
    for path in parent.glob(RUN_PREFIX + "*"):
        try:
            st = path.lstat()
        except OSError:
            continue
        if path.is_dir() and not path.is_symlink() and st.st_uid == os.getuid():
            runs.append((st.st_mtime, path))
    runs.sort(reverse=True)
    now = time.time()
    for mtime, path in runs[KEEP_FAILED_RUNS:]:
        if now - mtime > ACTIVE_SECONDS:
            shutil.rmtree(path, ignore_errors=True)


def _compile_package() -> None:
    from bench.runner import ensure_bytecode  # the bench's own step, the same reason

    ensure_bytecode()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> object:
    """Keep the test modules' assert-rewritten bytecode in ``tests/__pycache__`` even
    under ``PYTHONDONTWRITEBYTECODE``, as pytest does without it: each xdist worker
    otherwise rewrote every test module's asserts on every run (~4 s of CPU a worker,
    12 s a run of ``-n 3``). pytest reads a cached file only while its source's mtime
    and size match, so an edited test is rewritten again. Only for the collection: the
    tests themselves run with the setting they were given."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = before


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the run's RAM-backed trees when every test passed; a failed run keeps them
    for a look (pytest names the path in the failure)."""
    own = session.config.stash.get(_OWN_BASETEMP, None)
    if own is not None and exitstatus == 0:
        shutil.rmtree(own, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``long`` run first. pytest-xdist hands out the first tests round
    robin, so the long ones start at once on different workers instead of one of them
    arriving last and keeping a single worker busy while the other waits."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory, monkeypatch) -> None:
    """Never read the machine's ~/.claude or write its ~/.cache."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    # the default archive dir and the archive job's unit files
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # tempfile (and any child process) writes under this test's own temp dir, never /tmp
    scratch = tmp_path_factory.mktemp("tmp")
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    # Most tests write a transcript and then tag or rename it at once: a file written
    # moments ago, whose appends wait for a rewrite under way to land. No test's writer
    # rewrites it, but the ones that do (test_reliability_appends.py), which set it back.
    from sessiondex.transcripts import write

    monkeypatch.setattr(write, "REWRITE_SETTLE_SECONDS", 0.02)
    for name in ("CLAUDE_CONFIG_DIR", "SESSIONDEX_DB", "CLAUDE_CODE_PROJECT_DIR_NAME"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def soon(monkeypatch: pytest.MonkeyPatch) -> None:
    """Native file events tried again within a fraction of a second, not 10 minutes:
    for the watcher's and the MCP dirty bit's return from polling or giving up
    (indexer/watch.py ``NativeRetry``)."""
    import sessiondex.indexer.watch as watch_module

    monkeypatch.setattr(watch_module, "NATIVE_RETRY_FIRST", 0.3)
    monkeypatch.setattr(watch_module, "NATIVE_RETRY_MAX", 60.0)
