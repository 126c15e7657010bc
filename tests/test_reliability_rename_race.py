"""Two ``rename`` of one session at the same moment, in two processes.

Both append a ``custom-title`` record; the one appended last is the name, as Claude
Code and the Agent SDK read the file (the last ``custom-title`` record wins; the
sidecar ``<id>/custom-title.json`` comes after a record in the tail). Each process then
brings the index up to date on its own: the index must end with the winner's name,
never with the loser's, whichever process updates the index last. Bounded: at most
``ROUNDS`` races and ``SECONDS`` of them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.builders import ConfigTree, SessionWriter

ROUNDS = 12
SECONDS = 6.0
CLI = [
    sys.executable,
    "-c",
    "from sessiondex.transcripts import write; write.REWRITE_SETTLE_SECONDS = 0.02\n"
    "from sessiondex.cli.main import main; main()",
]


def last_custom_title(path: Path) -> str | None:
    """Claude Code's and the SDK's reading of a transcript's name: the last
    ``custom-title`` record's ``customTitle``."""
    title = None
    for line in path.read_bytes().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("type") == "custom-title":
            title = record.get("customTitle")
    return title


def indexed_title(db: Path, session_id: str) -> Any:
    """What the index holds, read without any refresh (a read through sessiondex
    checks the file first and would hide a stale row)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT custom_title FROM sessions WHERE session_id = ?", [session_id]
        ).fetchall()
    assert len(rows) == 1, rows
    return rows[0][0]


def _race_session(tmp_path: Path) -> tuple[ConfigTree, SessionWriter, Path]:
    """One session two renames race over: its tree, the session, and where its index
    goes."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/race")
    s.user("two people rename me at once")
    s.assistant("fine")
    s.write()
    return tree, s, tmp_path / "index.db"


def test_two_renames_at_once_leave_the_index_with_the_files_last_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, s, db = _race_session(tmp_path)
    sid = s.session_id
    base = [*CLI, "--config-dir", str(tree.root), "--db", str(db)]
    first = subprocess.run([*base, "index"], capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    env = {**os.environ, "COLUMNS": "200"}
    sdk = None
    try:
        import claude_agent_sdk as sdk
    except ImportError:  # the SDK is a test dependency; the reading rule is above
        pass
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tree.root))
    end = time.monotonic() + SECONDS
    rounds = 0
    while rounds < ROUNDS and time.monotonic() < end:
        names = (f"left {rounds}", f"right {rounds}")
        procs = [
            subprocess.Popen(
                [*base, "rename", sid, name],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for name in names
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, (out, err)
        rounds += 1
        winner = last_custom_title(s.path)
        assert winner in names
        if sdk is not None:
            info = sdk.get_session_info(sid)
            assert info is not None and info.custom_title == winner
        assert indexed_title(db, sid) == winner, f"round {rounds}: the index kept the loser"
        sidecar = json.loads((s.path.with_suffix("") / "custom-title.json").read_bytes())
        assert sidecar == {"customTitle": winner}, f"round {rounds}: the sidecar kept the loser"
    assert rounds >= 3  # enough races to mean something, even on a slow machine


def test_the_sidecar_ends_with_the_files_last_name_whatever_the_order_of_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the stress test above rarely hits, made certain: rename A appends its
    record, rename B appends its own after it and writes ``custom-title.json``, and only
    then A writes the sidecar. A wrote its own name over B's: the transcript's last
    record said B, the sidecar A, and Claude Code's picker shows the sidecar's name once
    the record is more than 64 KiB from the end (the index, reading the whole file, B).
    The sidecar now mirrors the transcript's last name, read under a lock on the
    session's folder."""
    import threading

    from sessiondex import Index
    from sessiondex.actions import mutations

    tree, s, db = _race_session(tmp_path)
    sid = s.session_id
    with Index(db, [tree.root]) as index:
        index.refresh()
    real = mutations.write_title_sidecar
    a_waits, b_done = threading.Event(), threading.Event()

    def held_back(path: Path, title: str, roots: list[Path]) -> Path:
        if title == "left":  # A: its record is in the file; B goes first from here
            a_waits.set()
            assert b_done.wait(30)
        return real(path, title, roots)

    monkeypatch.setattr(mutations, "write_title_sidecar", held_back)
    errors: list[BaseException] = []

    def rename_a() -> None:
        try:
            with Index(db, [tree.root]) as index:
                index.rename(sid, "left")
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
            a_waits.set()

    a = threading.Thread(target=rename_a)
    a.start()
    assert a_waits.wait(30)
    with Index(db, [tree.root]) as index:
        index.rename(sid, "right")
    b_done.set()
    a.join(30)
    assert not errors, errors
    assert last_custom_title(s.path) == "right"
    assert indexed_title(db, sid) == "right"
    sidecar = json.loads((s.path.with_suffix("") / "custom-title.json").read_bytes())
    assert sidecar == {"customTitle": "right"}


def test_a_folder_that_cannot_be_locked_still_gets_its_sidecar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some file systems refuse ``flock`` (an NFS mount without a lock daemon: ENOLCK).
    The lock only orders two of our renames; without it the sidecar is written as
    before, with no warning, rather than refused on every rename."""
    import errno

    from sessiondex import Index
    from sessiondex.transcripts import write

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(write, "flock", no_locks)
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/nfs")
    s.user("a session on a share")
    s.write()
    with Index(tmp_path / "index.db", [tree.root]) as index:
        result = index.rename(s.session_id, "On the share")
    assert result.warnings == []
    sidecar = json.loads((s.path.with_suffix("") / "custom-title.json").read_bytes())
    assert sidecar == {"customTitle": "On the share"}
