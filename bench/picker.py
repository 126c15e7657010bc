"""``python -m bench.picker``: the picker's figures (the performance goals in bench/README.md).

- **keystroke → results painted**: the picker runs headless (Textual's ``run_test``) on
  an index of the generated corpus, in the "all projects" scope; a word is typed one key
  at a time and each key is timed from the press until the rows of *its* query are on
  screen (the load's generation painted). A PR URL is pasted in one insert and timed
  the same way. p50/p95 over every keystroke. The words again in the picker's default
  scope, one worktree: the project holding the median number of sessions
  (:func:`median_project`), where a word's matches are mostly other projects'.
- **startup → first paint**: a new Python process that imports the picker, opens the
  index and paints the first rows (headless), timed from spawn to its "painted" line.

The index is built once per corpus (in ``--db-dir``, default the bench cache dir); the
corpus comes from :func:`bench.runner.ensure_corpus` (``--scale 10``: 20,000 sessions).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.corpus import PROFILES
from bench.runner import DEFAULT_CORPUS, cache_dir, ensure_bytecode, ensure_corpus, read_manifest

WORDS = ["kubectl", "stripe", "zephyrquartz", "timeout", "thornwhistle", "database"]
STARTUP_RUNS = 11

CHILD = r"""
import sys, time, asyncio
from pathlib import Path
from sessiondex.picker import prefetch
from sessiondex.picker.model import PickerOptions
from sessiondex.picker.source import Source

async def main():
    # as run_picker does: the first query waits for the quick freshness check
    source = Source(Path(sys.argv[1]), [Path(sys.argv[2])], refresh_first=True)
    options = PickerOptions(cwd="/", scope="all")
    from sessiondex.picker.app import PickerApp

    initial = prefetch(source, options)  # as run_picker does, once Textual is imported

    app = PickerApp(source, options, live_interval=None, initial=initial)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.picker
        for _ in range(20000):
            if screen.painted_generation >= 1 and screen.session_list.objects:
                break
            await asyncio.sleep(0.001)
        print("painted", len(screen.session_list.rows), flush=True)
    source.close()

asyncio.run(main())
"""


BARE_CHILD = r"""
import asyncio
from textual.app import App
from textual.widgets import Static

class Bare(App):
    def compose(self):
        yield Static("hello")

async def main():
    app = Bare()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        print("painted", flush=True)

asyncio.run(main())
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def build_index(corpus: Path, db: Path) -> None:
    from sessiondex.index import Index

    # Always through a refresh: a cached index of an older derivation (or schema) is
    # rebuilt by it, a current one costs a no-change pass.
    print(f"indexing {corpus} into {db} ...", file=sys.stderr)
    db.parent.mkdir(parents=True, exist_ok=True)
    with Index(db, [corpus]) as index:
        index.refresh()


def summary(samples: list[float], peak: bool = False) -> dict[str, Any]:
    """p50 and p95 of ``samples`` (None when there are none), their count, and with
    ``peak`` the slowest."""
    out: dict[str, Any] = {
        "p50": statistics.median(samples) if samples else None,
        "p95": percentile(samples, 0.95) if samples else None,
    }
    if peak:
        out["max"] = max(samples) if samples else None
    out["n"] = len(samples)
    return out


def median_project(manifest: list[dict[str, Any]]) -> tuple[str, int]:
    """The directory whose project holds the median number of sessions (ties: the first
    by name), and that number: a typical worktree for the picker's default scope."""
    counts: dict[str, int] = {}
    for session in manifest:
        if session.get("kind") == "normal" and session.get("cwd"):
            counts[session["cwd"]] = counts.get(session["cwd"], 0) + 1
    ranked = sorted(counts.items(), key=lambda item: (item[1], item[0]))
    return ranked[len(ranked) // 2]


async def keystrokes(
    corpus: Path, db: Path, pr_urls: list[str], cwd: str = "/", scope: str = "all"
) -> dict[str, list[float]]:
    from sessiondex.picker.app import PickerApp
    from sessiondex.picker.model import PickerOptions
    from sessiondex.picker.source import Source

    source = Source(db, [corpus])
    app = PickerApp(source, PickerOptions(cwd=cwd, scope=scope), live_interval=None)
    out: dict[str, list[float]] = {"word": [], "burst": [], "pr": [], "counts": []}
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.picker
            box = screen.query_one("#query")

            async def painted(after: int, timeout: float = 10.0) -> None:
                """Wait for a load newer than generation ``after`` to be on screen. (The
                time is the screen's own ``painted_at``, taken as the list draws: the
                pilot's ``press`` returns only once the app is idle, well after.)"""
                started = time.perf_counter()
                while screen.generation <= after or screen.painted_generation < screen.generation:
                    if time.perf_counter() - started > timeout:
                        raise TimeoutError("no paint")
                    await asyncio.sleep(0.0005)

            async def clear() -> None:
                if box.value:  # type: ignore[attr-defined]
                    before = screen.generation
                    box.value = ""  # type: ignore[attr-defined]
                    await painted(before)
                screen.search_cache.clear()

            await painted(0)
            for round_ in range(2):  # the first round warms the page cache
                for word in WORDS:
                    await clear()
                    # every keystroke, waiting for its answer before the next key
                    for ch in word:
                        before = screen.generation
                        t0 = time.perf_counter()
                        await pilot.press(ch)
                        await painted(before)
                        if round_:  # painted_at: when the list drew the answer's rows
                            out["word"].append((screen.painted_at - t0) * 1000)
                    out["counts"].append(len(screen.session_list.rows))
                    # typed at 10 keys a second: the last key to its answer on screen
                    await clear()
                    for ch in word:
                        before = screen.generation
                        t0 = time.perf_counter()
                        await pilot.press(ch)
                        await asyncio.sleep(0.1)
                    await painted(before)
                    if round_:
                        out["burst"].append((screen.painted_at - t0) * 1000)
                for url in pr_urls:
                    await clear()
                    before = screen.generation
                    t0 = time.perf_counter()
                    box.insert_text_at_cursor(url)  # type: ignore[attr-defined]
                    await painted(before)
                    if round_:
                        out["pr"].append((screen.painted_at - t0) * 1000)
    finally:
        source.close()
    return out


def library_search(corpus: Path, db: Path, cwd: str = "/", scope: str = "all") -> list[float]:
    """The floor under a keystroke: ``Index.search`` alone for every prefix typed, as
    the picker asks it (``typing``)."""
    import inspect

    from sessiondex.index import Index

    samples = []
    # As the picker asks (a query being typed), where this version of Index has it.
    typing = {"typing": True} if "typing" in inspect.signature(Index.search).parameters else {}
    with Index(db, [corpus], refresh=False) as index:
        for round_ in range(2):
            for word in WORDS:
                for end in range(1, len(word) + 1):
                    t0 = time.perf_counter()
                    index.search(word[:end], cwd=cwd, scope=scope, limit=50, **typing)
                    if round_:
                        samples.append((time.perf_counter() - t0) * 1000)
    return samples


def _first_paint_ms(corpus: Path, db: Path, child: str) -> float:
    """Spawn → the child's "painted" line (read as it comes: its teardown is not timed)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", child, str(db), str(corpus)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    elapsed = (time.perf_counter() - started) * 1000
    _, err = proc.communicate(timeout=60)
    if "painted" not in line or proc.returncode != 0:
        raise RuntimeError(line + err)
    return elapsed


def startup(corpus: Path, db: Path, runs: int = STARTUP_RUNS) -> tuple[list[float], list[float]]:
    """The picker's start-up and a bare Textual app's, alternately (so that a burst of
    load on this shared machine falls on both), after one warm-up of each."""
    ours: list[float] = []
    bare: list[float] = []
    for run in range(runs + 1):
        for child, samples in ((CHILD, ours), (BARE_CHILD, bare)):
            elapsed = _first_paint_ms(corpus, db, child)
            if run:
                samples.append(elapsed)
    return ours, bare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.picker")
    parser.add_argument("--scale", type=int, default=10, help="corpus scale for keystrokes")
    parser.add_argument("--startup-scale", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("bench/out/picker.json"))
    parser.add_argument(
        "--profile",
        choices=PROFILES,
        default=PROFILES[0],
        help="which generated corpus to type into (default tool-heavy)",
    )
    parser.add_argument(
        "--db-dir",
        type=Path,
        default=None,
        help="where the index DBs are built and kept (default: the bench cache dir)",
    )
    args = parser.parse_args(argv)
    ensure_bytecode()
    db_dir = args.db_dir or cache_dir()

    params = {**DEFAULT_CORPUS, "profile": args.profile}
    # The tool-heavy index keeps its old name, so a kept one is reused as before.
    suffix = "" if args.profile == PROFILES[0] else f"-{args.profile}"
    corpus = ensure_corpus(params, scale=args.scale)
    db = db_dir / f"picker-x{args.scale}{suffix}.db"
    build_index(corpus, db)
    manifest = read_manifest(corpus)
    urls = sorted({link["url"] for m in manifest for link in m.get("pr_links", [])})[:10]
    results = asyncio.run(keystrokes(corpus, db, urls))
    project, project_sessions = median_project(manifest)
    in_project = asyncio.run(keystrokes(corpus, db, [], cwd=project, scope="worktree"))

    start_corpus = ensure_corpus(params, scale=args.startup_scale)
    start_db = db_dir / f"picker-x{args.startup_scale}{suffix}.db"
    build_index(start_corpus, start_db)
    boot, bare = startup(start_corpus, start_db)
    floor = library_search(corpus, db)
    project_floor = library_search(corpus, db, cwd=project, scope="worktree")

    report: dict[str, Any] = {
        "profile": args.profile,
        "sessions": len(manifest),
        "keystroke_word_ms": summary(results["word"], peak=True),
        "index_search_alone_ms": summary(floor),
        "keystroke_word_one_project_ms": {
            "cwd": project,
            "sessions": project_sessions,
            **summary(in_project["word"], peak=True),
        },
        "index_search_alone_one_project_ms": summary(project_floor),
        "word_typed_last_key_ms": summary(results["burst"]),
        "pr_url_ms": summary(results["pr"]),
        "startup_sessions": len(read_manifest(start_corpus)),
        "startup_first_paint_ms": {
            "p50": statistics.median(boot),
            "min": min(boot),
            "max": max(boot),
            "n": len(boot),
        },
        "bare_textual_app_first_paint_ms": {"p50": statistics.median(bare), "n": len(bare)},
        "load_average": os.getloadavg()[0],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
