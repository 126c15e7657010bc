"""``search_sessions`` round trip over MCP stdio (goal: p95 ≤ 50 ms).

``python -m bench.mcp_latency [--sessions 2000] [--corpus DIR] [--db FILE] [--calls 200]
[--mode all|default|check|watch] [--out FILE]``

Generates (or reuses) the bench corpus (``bench/corpus.py``; 2,000 sessions is the goal
corpus, ``--sessions N`` a smaller or larger one with the same shape), builds its index
once (or brings ``--db FILE`` up to date, so repeated runs skip the build), then starts
``sessiondex mcp`` as Claude Code does (a subprocess on stdio) and
times ``tools/call search_sessions`` from the ``mcp`` SDK's own stdio client: the time
from sending the request to having the parsed result, for a rotation of words (planted
words in a known set of sessions, topic words in a quarter of them, general words in
nearly all), ``limit`` 10 as a model calls it.

Three modes, all reported by default:

* ``default`` — as installed: no ``sessiondex watch``; the server watches the transcripts
  itself (``indexer/dirty.py``) and checks them only after a file-system event, so on an
  unchanged corpus every answer skips the check (a flag and one ``stat`` per config dir).
* ``check`` — the server's watcher disabled (patched out in the server process, as when it
  cannot start: inotify limits, unsupported FS): the server checks every transcript before
  every answer (one ``lstat`` each; most of the time at 2,000 sessions).
* ``watch`` — a ``sessiondex watch`` keeps the index live, so answers skip the check: the
  old recommendation for a long-lived server.

Nothing in the corpus changes while it runs. ``--appending`` measures the modes as they
are used: the Claude Code session that calls the server appends to its own transcript
between two calls, so before each call (10 ms before, as the tool call follows the line
that asks for it) one line is appended to a session in a second, small config dir the
server also serves. Then ``default`` ingests that one file before answering, ``check``
checks every transcript, finds it changed and runs the refresh, and ``watch`` answers
once its debounced batch lands (or before it). The modes are reported as
``default+append`` and so on.

The first answer of each mode is checked against ``sessiondex.Index.search`` for the same
question (same sessions, same order). Every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from bench.runner import DEFAULT_CORPUS, ensure_bytecode, ensure_corpus
from bench.watch_latency import _append, _percentile, _record, _Subprocess

GOAL_P95_MS = 50.0
DEFAULT_CALLS = 200
WARMUP_CALLS = 10
CALL_TIMEOUT = 30.0
APPEND_GAP = 0.01  # --appending: seconds from the calling session's line to its call
WORDS = [
    "thornwhistle",
    "kubectl",
    "stripe refund",
    "obsidianfjord",
    "database",
    "timeout",
    "zephyrquartz",
    "postgres vacuum",
    "react hydration",
    "tokio",
]
SERVER = [sys.executable, "-c", "from sessiondex.cli.main import main; main()"]
# The server with its own watcher disabled: Index.watch_transcripts() says "cannot".
SERVER_CHECK = [
    sys.executable,
    "-c",
    "from sessiondex.index import Index\n"
    "Index.watch_transcripts = lambda self: False\n"
    "from sessiondex.cli.main import main\n"
    "main()",
]
MODES = ["default", "check", "watch"]
REPO_ROOT = Path(__file__).resolve().parent.parent


def corpus_params(sessions: int) -> dict[str, Any]:
    """The default corpus's shape, scaled to ``sessions`` (same size per session)."""
    if sessions == DEFAULT_CORPUS["sessions"]:
        return dict(DEFAULT_CORPUS)
    scale = sessions / DEFAULT_CORPUS["sessions"]
    return {
        "sessions": sessions,
        "projects": max(
            2, min(DEFAULT_CORPUS["projects"], round(DEFAULT_CORPUS["projects"] * scale))
        ),
        "size_mb": round(DEFAULT_CORPUS["size_mb"] * scale, 1),
        "seed": DEFAULT_CORPUS["seed"],
    }


class _CallingSession:
    """The transcript of the session that calls the server, in its own config dir: one
    line appended before each call, as Claude Code writes its turns."""

    def __init__(self, root: Path) -> None:
        project = root / "projects" / "-sessiondex-bench-mcp-caller"
        project.mkdir(parents=True, exist_ok=True)
        self.session_id = str(uuid.uuid4())
        self.path = project / f"{self.session_id}.jsonl"
        self.parent, line = _record(self.session_id, None, "the calling session starts")
        self.path.write_bytes(line)
        self.turns = 0

    def append(self) -> None:
        self.turns += 1
        self.parent, line = _record(self.session_id, self.parent, f"turn {self.turns}")
        _append(self.path, line)


async def _time_calls(
    configs: list[Path], db: Path, calls: int, server: list[str], caller: _CallingSession | None
) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from sessiondex import Index

    params = StdioServerParameters(
        command=server[0],
        args=[
            *server[1:],
            *(arg for config in configs for arg in ("--config-dir", str(config))),
            *("--db", str(db), "mcp"),
        ],
        cwd=str(REPO_ROOT),
    )
    samples: list[float] = []
    errors = 0
    with open(db.parent / "mcp.stderr", "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                first = await session.call_tool("search_sessions", {"query": WORDS[0], "limit": 10})
                got = [s["session_id"] for s in json.loads(first.content[0].text)["sessions"]]  # type: ignore[union-attr]
                with Index(db, configs, refresh=False) as index:
                    want = [s["session_id"] for s in index.search(WORDS[0], scope="all", limit=10)]
                for number in range(WARMUP_CALLS + calls):
                    word = WORDS[number % len(WORDS)]
                    if caller is not None:
                        caller.append()
                        await anyio.sleep(APPEND_GAP)
                    started = time.perf_counter()
                    with anyio.fail_after(CALL_TIMEOUT):
                        result = await session.call_tool(
                            "search_sessions", {"query": word, "limit": 10}
                        )
                    elapsed = (time.perf_counter() - started) * 1000
                    errors += bool(getattr(result, "is_error", True))
                    if number >= WARMUP_CALLS:
                        samples.append(elapsed)
    ordered = sorted(samples)
    p95 = _percentile(ordered, 0.95)
    return {
        "calls": len(samples),
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(p95, 2),
        "max_ms": round(ordered[-1], 2),
        "errors": errors,
        "same_answer_as_library": got == want,
        "goal_p95_ms": GOAL_P95_MS,
        "met": p95 <= GOAL_P95_MS,
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }


def measure(
    config: Path,
    workdir: Path,
    calls: int,
    modes: list[str],
    db: Path | None = None,
    appending: bool = False,
) -> dict[str, Any]:
    db = db or workdir / "index.db"
    caller = _CallingSession(workdir / "caller") if appending else None
    configs = [config] if caller is None else [config, workdir / "caller"]
    started = time.perf_counter()
    subprocess.run(
        [
            *SERVER,
            *(arg for c in configs for arg in ("--config-dir", str(c))),
            *("--db", str(db), "index"),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=1800,
    )
    results: dict[str, Any] = {"index_build_s": round(time.perf_counter() - started, 2)}
    for mode in modes:
        watcher = None
        if mode == "watch":
            watcher = _Subprocess(configs, db, 100)
            watcher.wait_ready()
        server = SERVER_CHECK if mode == "check" else SERVER
        try:
            results[mode + ("+append" if appending else "")] = {
                "loadavg_before": [round(x, 2) for x in os.getloadavg()],
                **anyio.run(_time_calls, configs, db, calls, server, caller),
            }
        finally:
            if watcher is not None:
                watcher.stop()
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.mcp_latency", description=__doc__.splitlines()[0]
    )
    ap.add_argument(
        "--sessions",
        type=int,
        default=DEFAULT_CORPUS["sessions"],
        help="corpus size (default 2000, the goal corpus)",
    )
    ap.add_argument(
        "--corpus", type=Path, default=None, help="a generated corpus dir (skips generation)"
    )
    ap.add_argument("--calls", type=int, default=DEFAULT_CALLS, help="timed calls per mode")
    ap.add_argument("--mode", choices=["all", *MODES], default="all")
    ap.add_argument(
        "--db", type=Path, default=None, help="an index to reuse (built or brought up to date)"
    )
    ap.add_argument(
        "--appending",
        action="store_true",
        help="append a line to the calling session's transcript before each call",
    )
    ap.add_argument("--workdir", type=Path, default=None, help="scratch dir for the index")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "out" / "mcp_latency.json")
    opts = ap.parse_args(argv)
    ensure_bytecode()
    if not 1 <= opts.calls <= 100_000 or opts.sessions < 1:
        ap.error("--calls must be 1-100000 and --sessions at least 1")
    config = opts.corpus or ensure_corpus(corpus_params(opts.sessions))
    modes = MODES if opts.mode == "all" else [opts.mode]
    with tempfile.TemporaryDirectory(dir=opts.workdir) as scratch:
        results = measure(Path(config), Path(scratch), opts.calls, modes, opts.db, opts.appending)
    report = {
        "figure": "search_sessions round trip over MCP stdio",
        "corpus": str(config),
        "sessions": opts.sessions if opts.corpus is None else None,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        **results,
    }
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"search_sessions over stdio, {report['corpus']} (index built or updated in {results['index_build_s']} s)"
    )
    print(
        f"{'mode':15} {'calls':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}  goal p95 ≤ {GOAL_P95_MS:g} ms"
        f"  (load average before → after)"
    )
    failed = False
    for name in modes:
        mode = name + ("+append" if opts.appending else "")
        row = results[mode]
        failed |= bool(row["errors"]) or not row["same_answer_as_library"]
        print(
            f"{mode:15} {row['calls']:>5} {row['p50_ms']:>8} {row['p95_ms']:>8} {row['max_ms']:>8}"
            f"  {'met' if row['met'] else 'not met'}"
            f"  ({row['loadavg_before'][0]:g} → {row['loadavg_after'][0]:g})"
            + ("" if row["same_answer_as_library"] else "  (answer differs from the library!)")
            + (f"  ({row['errors']} error results)" if row["errors"] else "")
        )
    print(f"written to {opts.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
