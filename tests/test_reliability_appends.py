"""Appends beside a live writer: a mutation never splits a line another process is
completing (issue 14, item 1).

Claude Code may have half a line on disk when ``rename``/``tag``/``untag`` run. The
three cases of ``transcripts/write.py``: the writer finishes its line while we wait
(both records intact), the tail stays still past the quiet period (a crashed write:
closed with ``\\n``, the fragment kept as its own bad line), the tail keeps growing
without ending (refused, nothing of ours written). ``fork`` copies complete lines only.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.transcripts import write
from tests.builders import ConfigTree, SessionWriter, append_bytes

CWD = "/home/dev/live-proj"  # does not exist: no git repository


def _session(tmp_path: Path) -> tuple[ConfigTree, SessionWriter]:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(CWD)
    s.meta("custom-title", customTitle="Live work")
    s.meta("tag", tag="live")  # for untag to clear: an untag that changes nothing writes nothing
    s.user("start the live work")
    s.assistant("working on it")
    s.write()
    return tree, s


def _run(tree: ConfigTree, tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "index.db"), *args],
    )


def _writer_record(s: SessionWriter) -> bytes:
    """One realistic line the live writer is in the middle of (a long assistant turn)."""
    record = {
        "parentUuid": s.last_uuid,
        "isSidechain": False,
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "x" * 5000}]},
        "uuid": "0e0e0e0e-0000-4000-8000-00000000beef",
        "sessionId": s.session_id,
        "timestamp": "2026-11-01T10:05:00.000Z",
    }
    return orjson.dumps(record) + b"\n"


MUTATIONS = [
    (["rename", "@ID", "Renamed live"], {"type": "custom-title", "customTitle": "Renamed live"}),
    (["tag", "@ID", "review"], {"type": "tag", "tag": "review"}),
    (["untag", "@ID"], {"type": "tag", "tag": ""}),
]


def _args(template: list[str], session_id: str) -> list[str]:
    return [session_id if a == "@ID" else a for a in template] + ["--cwd", CWD]


@pytest.mark.parametrize(("template", "expected"), MUTATIONS, ids=["rename", "tag", "untag"])
def test_a_line_finished_while_we_wait_stays_whole(
    tmp_path: Path, template: list[str], expected: dict[str, Any]
) -> None:
    tree, s = _session(tmp_path)
    assert _run(tree, tmp_path, "index").exit_code == 0
    line = _writer_record(s)
    half = len(line) // 2
    append_bytes(s.path, line[:half])  # the writer is mid-line
    before = s.path.read_bytes()

    def finish() -> None:
        time.sleep(0.3)  # while the mutation waits (quiet period 2 s)
        append_bytes(s.path, line[half:])

    writer = threading.Thread(target=finish)
    writer.start()
    try:
        result = _run(tree, tmp_path, *_args(template, s.session_id))
    finally:
        writer.join(timeout=10)
    assert result.exit_code == 0, result.output
    data = s.path.read_bytes()
    assert data.startswith(before + line[half:])  # the writer's line, whole, in place
    lines = data.split(b"\n")
    assert lines[-1] == b""
    records = [orjson.loads(raw) for raw in lines[:-1]]  # every line parses
    assert records[-2]["uuid"] == "0e0e0e0e-0000-4000-8000-00000000beef"
    assert {k: records[-1][k] for k in expected} == expected


def test_a_stalled_half_line_is_closed_then_appended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(write, "TAIL_QUIET_SECONDS", 0.3)
    tree, s = _session(tmp_path)
    fragment = _writer_record(s)[:100]
    append_bytes(s.path, fragment)  # a writer that died mid-line, just now
    before = s.path.read_bytes()
    started = time.monotonic()
    result = _run(tree, tmp_path, "rename", s.session_id, "After the crash", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started >= 0.3  # it waited for the quiet period first
    data = s.path.read_bytes()
    assert data.startswith(before + b"\n")  # the fragment stays, as its own (bad) line
    last = data[len(before) + 1 :]
    assert last.endswith(b"\n") and last.count(b"\n") == 1
    assert orjson.loads(last)["customTitle"] == "After the crash"
    listed = _run(tree, tmp_path, "list", "--cwd", CWD, "--json")
    assert [o["title"] for o in orjson.loads(listed.stdout)] == ["After the crash"]


def test_a_tail_that_keeps_growing_is_refused_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(write, "TAIL_QUIET_SECONDS", 0.3)
    monkeypatch.setattr(write, "TAIL_MAX_WAIT_SECONDS", 0.6)
    tree, s = _session(tmp_path)
    assert _run(tree, tmp_path, "index").exit_code == 0
    original = s.path.read_bytes()
    append_bytes(s.path, b'{"type":"assistant","message":{"content":"')
    grown: list[bytes] = []
    stop = threading.Event()

    def keep_writing() -> None:
        deadline = time.monotonic() + 5
        for _ in range(500):  # bounded by count and time
            if stop.is_set() or time.monotonic() > deadline:
                return
            append_bytes(s.path, b"y")
            grown.append(b"y")
            time.sleep(0.02)

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        result = _run(tree, tmp_path, "tag", s.session_id, "review", "--cwd", CWD)
    finally:
        stop.set()
        writer.join(timeout=10)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    [message] = result.stderr.splitlines()
    assert message.startswith("Error: session is being written, try again")
    assert s.path.read_bytes() == (
        original + b'{"type":"assistant","message":{"content":"' + b"".join(grown)
    )


def test_append_record_decides_on_the_file_as_it_is_at_the_write(tmp_path: Path) -> None:
    """The library call itself: a complete file is appended at once; a half line that
    completes during the wait is never split (no CLI, no index)."""
    tree, s = _session(tmp_path)
    started = time.monotonic()
    write.append_record(s.path, {"type": "tag", "tag": "a"}, [tree.root], quiet=5, max_wait=5)
    assert time.monotonic() - started < 1  # nothing to wait for
    line = _writer_record(s)
    append_bytes(s.path, line[:10])
    timer = threading.Timer(0.2, append_bytes, (s.path, line[10:]))
    timer.start()
    try:
        write.append_record(s.path, {"type": "tag", "tag": "b"}, [tree.root], quiet=5, max_wait=5)
    finally:
        timer.join()
    tail = s.path.read_bytes().split(b"\n")[-3:]
    assert tail[0] == line[:-1] and orjson.loads(tail[1])["tag"] == "b" and tail[2] == b""


@pytest.mark.parametrize(("quiet_for", "copied"), [(0, False), (3600, True)])
def test_fork_copies_a_last_line_without_newline_only_once_the_file_is_quiet(
    tmp_path: Path, quiet_for: int, copied: bool
) -> None:
    """A last line without its newline in a file written just now is still being
    written: not part of the fork, even when what is on disk already parses. In a file
    quiet for an hour it is a write that died before its newline: the SDK, the index
    and fork read that whole record (the fork used to drop it)."""
    tree, s = _session(tmp_path)
    unfinished = orjson.dumps(
        {
            "parentUuid": s.last_uuid,
            "isSidechain": False,
            "type": "user",
            "message": {"role": "user", "content": "UNFINISHED-PROMPT"},
            "uuid": "0e0e0e0e-0000-4000-8000-00000000f00d",
            "sessionId": s.session_id,
            "timestamp": "2026-11-01T10:06:00.000Z",
        }
    )
    append_bytes(s.path, unfinished)  # whole JSON, no "\n" yet
    if quiet_for:
        then = time.time() - quiet_for
        os.utime(s.path, (then, then))
    before = s.path.read_bytes()
    result = _run(tree, tmp_path, "fork", s.session_id, "--cwd", CWD)
    assert result.exit_code == 0, result.output
    new_id = result.stdout.strip()
    fork = (s.path.parent / f"{new_id}.jsonl").read_bytes()
    assert (b"UNFINISHED-PROMPT" in fork) is copied
    assert b"start the live work" in fork
    assert s.path.read_bytes() == before


def _rename_a_copy_over(path: Path, snapshot: bytes) -> None:
    """Claude Code's rewrite: a temporary file, renamed over the transcript."""
    temporary = path.with_name(path.name + ".compact.tmp.1a2b")
    temporary.write_bytes(snapshot)
    os.rename(temporary, path)


def _rewrite_in_place(path: Path, snapshot: bytes) -> None:
    """Claude Code removing a row: the file truncated and written again."""
    with open(path, "r+b") as file:
        file.truncate(0)
        file.write(snapshot)


@pytest.mark.parametrize("rewrite", [_rename_a_copy_over, _rewrite_in_place])
@pytest.mark.parametrize("command", ["tag", "rename"])
def test_a_record_undone_by_a_rewrite_from_an_earlier_read_is_appended_again(
    tmp_path: Path, rewrite: Any, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live writer read the transcript, then (after the mutation had appended its
    record) wrote back what it read: the record was in an orphaned file, or written
    over, and the command said it was done. It is checked where it landed and
    appended again; the writer's line is whole and the record is there, once or more."""
    monkeypatch.setattr(write, "REWRITE_SETTLE_SECONDS", 0.25)  # the module's own
    tree, s = _session(tmp_path)
    assert _run(tree, tmp_path, "index").exit_code == 0
    line = _writer_record(s)
    half = len(line) // 2
    append_bytes(s.path, line[:half])  # the writer is mid-line
    rewrote = threading.Event()

    def live_writer() -> None:
        time.sleep(0.3)
        append_bytes(s.path, line[half:])  # finishes its line ...
        snapshot = s.path.read_bytes()  # ... reads the file to rewrite it ...
        size = len(snapshot)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and s.path.stat().st_size == size:
            time.sleep(0.001)  # ... while the mutation appends ...
        rewrite(s.path, snapshot)  # ... and writes back what it read
        rewrote.set()

    writer = threading.Thread(target=live_writer)
    writer.start()
    try:
        args = ["tag", s.session_id, "kept"] if command == "tag" else [
            "rename", s.session_id, "Kept name"]  # fmt: skip
        result = _run(tree, tmp_path, *args, "--cwd", CWD)
    finally:
        writer.join(timeout=10)
    assert rewrote.is_set()
    assert result.exit_code == 0, result.output
    records = [orjson.loads(raw) for raw in s.path.read_bytes().splitlines()]
    key, value = ("tag", "kept") if command == "tag" else ("customTitle", "Kept name")
    assert any(r.get(key) == value for r in records)
    assert records[-1].get(key) == value  # the last of its kind: the one that counts
    assert any(r.get("uuid") == "0e0e0e0e-0000-4000-8000-00000000beef" for r in records)
    shown = orjson.loads(_run(tree, tmp_path, "resolve", s.session_id, "--json").stdout)
    assert shown[0]["tag" if command == "tag" else "custom_title"] == value


def test_a_quiet_file_is_checked_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settle wait is for a file written to moments ago: a tag of a quiet session
    costs no sleep."""
    tree, s = _session(tmp_path)
    os.utime(s.path, (time.time() - 60, time.time() - 60))
    assert _run(tree, tmp_path, "index").exit_code == 0
    slept: list[float] = []
    monkeypatch.setattr(write.time, "sleep", slept.append)
    assert _run(tree, tmp_path, "tag", s.session_id, "quiet", "--cwd", CWD).exit_code == 0
    assert slept == []
    assert orjson.loads(s.path.read_bytes().splitlines()[-1])["tag"] == "quiet"


def test_a_complete_line_is_appended_to_only_once_its_writer_pauses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer in a burst starts its next line the moment the last one ends: appending
    right after a line completed is when a writer of lines in several ``write`` calls
    gets our record glued into its next one. So the append waits for the file to be
    still for the pause: here a writer adds a whole line at each of our first polls,
    and our record must come after all of them."""
    tree, s = _session(tmp_path)
    burst = [_writer_record(s).replace(b"beef", b"%04d" % n) for n in range(5)]
    pending = list(burst)
    real_sleep = time.sleep

    def sleep_while_the_writer_writes(seconds: float) -> None:
        if pending:
            append_bytes(s.path, pending.pop(0))
        real_sleep(seconds)

    monkeypatch.setattr(write.time, "sleep", sleep_while_the_writer_writes)
    write.append_record(
        s.path, {"type": "tag", "tag": "after"}, [tree.root], pause=0.05, poll=0.01, max_wait=5
    )
    lines = s.path.read_bytes().split(b"\n")
    assert pending == [] and lines[-1] == b""
    assert lines[-1 - len(burst) - 1 : -2] == [line[:-1] for line in burst]
    assert orjson.loads(lines[-2])["tag"] == "after"


def test_a_record_glued_to_a_line_begun_just_before_our_write_is_appended_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No lock excludes Claude Code: a writer may start a line (one ``write`` of its
    first half) between our last look and our ``write``. Our record then sits inside
    that writer's line; the append sees bytes that arrived after its last look without
    ending their line, and writes the record again, on a line of its own."""
    tree, s = _session(tmp_path)
    os.utime(s.path, (time.time() - 60, time.time() - 60))  # a quiet file: no pause
    line = _writer_record(s)
    real_write = os.write
    calls: list[bytes] = []

    def a_writer_begins_a_line_first(fd: int, data: bytes) -> int:
        calls.append(bytes(data))
        if len(calls) == 1:
            append_bytes(s.path, line[:50])  # the writer's first write of its line
        written = real_write(fd, data)
        if len(calls) == 1:
            append_bytes(s.path, line[50:])  # and its second
        return written

    monkeypatch.setattr(write.os, "write", a_writer_begins_a_line_first)
    write.append_record(s.path, {"type": "tag", "tag": "kept"}, [tree.root], settle=0)
    record = orjson.dumps({"type": "tag", "tag": "kept"}) + b"\n"
    assert calls == [record, record]  # written again after the glue was seen
    data = s.path.read_bytes()
    assert data.endswith(line[:50] + record + line[50:] + record)
    assert orjson.loads(data.split(b"\n")[-2])["tag"] == "kept"


def test_a_copy_renamed_over_that_holds_the_record_counts_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rewrite that read the file after our append renames a copy over it that keeps
    our record where we put it: the append succeeded, and is neither written again nor
    refused (helper 91: a tag reported "try again" was in the file each time)."""
    tree, s = _session(tmp_path)
    settled: list[float] = []

    def rewrite_from_a_later_read(seconds: float) -> None:
        settled.append(seconds)
        _rename_a_copy_over(s.path, s.path.read_bytes())

    monkeypatch.setattr(write.time, "sleep", rewrite_from_a_later_read)
    os.utime(s.path, (time.time() - 1, time.time() - 1))  # live (settle), but past the pause
    write.append_record(s.path, {"type": "tag", "tag": "once"}, [tree.root], pause=0)
    assert settled == [write.REWRITE_SETTLE_SECONDS]
    tags = [r for r in map(orjson.loads, s.path.read_bytes().splitlines()) if r["type"] == "tag"]
    assert [t["tag"] for t in tags] == ["live", "once"]


@pytest.mark.parametrize(
    ("tail", "written"),
    [
        (b"", 1),  # the file ends its last line: a part of our record, then a full disk
        (b"", 0),  # not a byte fits
        (b'{"type":"user","message":{"role":"us', 1),  # a crashed write: "\n" and a part
        (b'{"type":"user","message":{"role":"us', 40),
    ],
    ids=["a-part", "nothing", "after-a-fragment-one-byte", "after-a-fragment-a-part"],
)
@pytest.mark.parametrize(("template", "expected"), MUTATIONS, ids=["rename", "tag", "untag"])
def test_a_record_cut_by_a_full_disk_is_taken_back(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tail: bytes,
    written: int,
    template: list[str],
    expected: dict[str, Any],
) -> None:
    """A full disk cuts a ``write``: it returns the bytes that fit (seen on a full
    tmpfs: 601 of 3,092 bytes of a rename). The refusal said "short write" and left
    that part of our record at the end of the transcript, a line without its newline
    onto which Claude Code's next record (or the SDK's) is glued, and lost. What we
    wrote is cut off again, so the file is as it was before the command."""
    monkeypatch.setattr(write, "TAIL_QUIET_SECONDS", 0.2)
    tree, s = _session(tmp_path)
    assert _run(tree, tmp_path, "index").exit_code == 0
    append_bytes(s.path, tail, mtime=time.time() - 10)  # a write that died long ago
    before = s.path.read_bytes()
    real_write = os.write

    def full_disk(fd: int, data: Any) -> int:
        if os.fstat(fd).st_ino != os.stat(s.path).st_ino:
            return real_write(fd, data)
        if written == 0:
            raise OSError(28, "No space left on device")
        return real_write(fd, bytes(data)[:written])

    monkeypatch.setattr(os, "write", full_disk)
    result = _run(tree, tmp_path, *_args(template, s.session_id))
    monkeypatch.setattr(os, "write", real_write)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("Error: ") and len(result.stderr.splitlines()) == 1
    assert ("No space left" if written == 0 else "nothing of the record was kept") in result.stderr
    assert s.path.read_bytes() == before


def test_a_cut_record_another_writer_appended_after_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes another writer appended after the cut part of our record end a line of
    theirs (glued onto ours): cutting them off would break it too. Left, and said."""
    tree, s = _session(tmp_path)
    assert _run(tree, tmp_path, "index").exit_code == 0
    before = s.path.read_bytes()
    theirs = _writer_record(s)
    real_write = os.write

    def full_disk_then_another_writer(fd: int, data: Any) -> int:
        if os.fstat(fd).st_ino != os.stat(s.path).st_ino:
            return real_write(fd, data)
        done = real_write(fd, bytes(data)[:10])
        append_bytes(s.path, theirs)
        return done

    monkeypatch.setattr(os, "write", full_disk_then_another_writer)
    result = _run(tree, tmp_path, "tag", s.session_id, "review", "--cwd", CWD)
    monkeypatch.setattr(os, "write", real_write)
    assert result.exit_code == 1, result.output
    assert "another writer appended after them" in result.stderr
    assert s.path.read_bytes() == before + b'{"type":"t' + theirs
