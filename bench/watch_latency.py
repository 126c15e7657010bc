"""Append → ``search`` latency under ``watch`` (goal: p95 ≤ 300 ms).

``python -m bench.watch_latency --config-dir D [--db PATH] [--appends 100] [--in-process]``

Starts a watcher on ``D`` (by default a real ``sessiondex watch`` subprocess, as a user
runs it; ``--in-process`` runs :class:`indexer.watch.Watcher` in this process instead),
waits for its catch-up, then appends one uniquely-worded user line at a time to a session
of its own and polls ``query.search.search`` from a separate connection until the word is
visible. The time from the ``write`` to the first successful search is one sample.

Only the bench's own session file (``projects/-sessiondex-bench-watch-latency/<uuid>.jsonl``)
is written, and it is removed at the end; still, point ``--config-dir`` at a scratch tree
(``python -m bench.corpus --out ...``), never at a real ``~/.claude``.

Searches use ``raw=True``: the word is a plain FTS token either way, and raw mode skips the
fuzzy fallback a miss would otherwise run on every poll, which would both slow the poll
and steal CPU from the watcher being measured.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from sessiondex.indexer.db import open_db
from sessiondex.query.filters import Filters
from sessiondex.query.search import search

PROJECT_KEY = "-sessiondex-bench-watch-latency"
POLL_SECONDS = 0.002
SAMPLE_TIMEOUT = 10.0
START_TIMEOUT = 900.0  # the catch-up of a cold 4 GB corpus
GOAL_P95_MS = 300.0
EVERYWHERE = Filters(scope="all", all_kinds=True, include_archived=True)
REPO_ROOT = Path(__file__).resolve().parent.parent


def _record(session_id: str, parent: str | None, text: str) -> tuple[str, bytes]:
    uid = str(uuid.uuid4())
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/sessiondex/bench/watch-latency",
        "sessionId": session_id,
        "version": "2.1.332",
        "gitBranch": "main",
        "entrypoint": "cli",
        "type": "user",
        "message": {"role": "user", "content": text},
        "uuid": uid,
        "timestamp": stamp,
    }
    return uid, orjson.dumps(record) + b"\n"


def _append(path: Path, data: bytes) -> None:
    """One write with O_APPEND, as Claude Code appends a line."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


class _Subprocess:
    """``sessiondex watch -v`` with its stderr drained on a thread."""

    def __init__(self, config_dir: Path | list[Path], db_path: Path, debounce_ms: int) -> None:
        dirs = config_dir if isinstance(config_dir, list) else [config_dir]
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from sessiondex.cli.main import main; main()",
                *(arg for d in dirs for arg in ("--config-dir", str(d))),
                "--db",
                str(db_path),
                "watch",
                "-v",
                "--debounce",
                str(debounce_ms),
                "--no-archive",  # measure indexing; never archive a generated corpus
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.observer = "?"
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line)

    def wait_ready(self) -> None:
        end = time.monotonic() + START_TIMEOUT
        seen: list[str] = []
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            seen.append(line)
            if " watching " in line:
                self.observer = line.split(" with ")[-1].split(" events")[0]
                return
        self.stop()
        raise RuntimeError("sessiondex watch did not start:\n" + "".join(seen))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile (no interpolation: every figure is a real sample)."""
    rank = max(1, int(round(fraction * len(sorted_values) + 0.5)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def measure_append_latency(
    config_dir: str | os.PathLike[str],
    db_path: str | os.PathLike[str],
    appends: int = 100,
    *,
    in_process: bool = False,
    debounce_ms: int = 100,
    spacing: float = 0.05,
) -> dict[str, Any]:
    """Latency (ms) from appending a line to a transcript to ``search`` returning it.

    Returns ``{"appends", "p50_ms", "p95_ms", "max_ms", "timeouts", "observer", "mode",
    "debounce_ms", "goal_p95_ms", "met"}``; a sample that is not visible within
    ``SAMPLE_TIMEOUT`` counts as a timeout (and as that timeout in the figures).
    """
    root = Path(os.path.abspath(config_dir))
    project = root / "projects" / PROJECT_KEY
    project.mkdir(parents=True, exist_ok=True)
    session_id = str(uuid.uuid4())
    path = project / f"{session_id}.jsonl"
    parent, line = _record(session_id, None, "sessiondex watch latency bench")
    path.write_bytes(line)
    watcher: Any
    if in_process:
        from sessiondex.indexer.watch import Watcher

        watcher = Watcher(db_path, [root], debounce=debounce_ms / 1000)
        watcher.start()
        observer = watcher.observer_kind
    else:
        watcher = _Subprocess(root, Path(db_path), debounce_ms)
        watcher.wait_ready()
        observer = watcher.observer
    samples: list[float] = []
    timeouts = 0
    db = open_db(db_path)
    try:
        for index in range(appends):
            word = f"wlat{index}q{uuid.uuid4().hex[:10]}"
            parent, line = _record(session_id, parent, f"latency probe {word}")
            started = time.perf_counter()
            _append(path, line)
            deadline = started + SAMPLE_TIMEOUT
            while not search(db, word, EVERYWHERE, raw=True):
                if time.perf_counter() > deadline:
                    timeouts += 1
                    break
                time.sleep(POLL_SECONDS)
            samples.append((time.perf_counter() - started) * 1000)
            time.sleep(spacing)
    finally:
        db.close()
        watcher.stop()
        path.unlink(missing_ok=True)
        try:
            project.rmdir()
        except OSError:
            pass
    ordered = sorted(samples)
    p95 = _percentile(ordered, 0.95) if ordered else float("nan")
    return {
        "appends": appends,
        "p50_ms": round(statistics.median(ordered), 1) if ordered else None,
        "p95_ms": round(p95, 1) if ordered else None,
        "max_ms": round(ordered[-1], 1) if ordered else None,
        "timeouts": timeouts,
        "observer": observer,
        "mode": "in-process" if in_process else "subprocess",
        "debounce_ms": debounce_ms,
        "goal_p95_ms": GOAL_P95_MS,
        "met": bool(ordered) and timeouts == 0 and p95 <= GOAL_P95_MS,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.watch_latency", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--config-dir", required=True, help="a scratch config dir (bench.corpus)")
    ap.add_argument(
        "--db",
        help="index to use (default: a new one in a temp dir; the watcher's catch-up builds it)",
    )
    ap.add_argument("--appends", type=int, default=100)
    ap.add_argument("--debounce", type=int, default=100, metavar="MS")
    ap.add_argument(
        "--in-process",
        action="store_true",
        help="run the Watcher in this process instead of `sessiondex watch`",
    )
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sessiondex-watch-bench-") as scratch:
        db_path = Path(args.db) if args.db else Path(scratch) / "index.db"
        result = measure_append_latency(
            args.config_dir,
            db_path,
            args.appends,
            in_process=args.in_process,
            debounce_ms=args.debounce,
        )
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"append → search visible ({result['mode']}, {result['observer']}, debounce "
            f"{result['debounce_ms']} ms, {result['appends']} appends): p50 "
            f"{result['p50_ms']} ms, p95 {result['p95_ms']} ms, max {result['max_ms']} ms, "
            f"{result['timeouts']} timeouts; goal p95 ≤ {GOAL_P95_MS:g} ms: "
            f"{'met' if result['met'] else 'NOT met'}"
        )
    return 0 if result["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
