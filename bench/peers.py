"""``python -m bench.peers``: sessiondex beside claude-code-log on the same corpus.

The peer the performance goals name: claude-code-log keeps a cache of the transcripts
(``claude-code-log-cache.db``) and renders them to HTML; the index should be smaller than
that cache (bench/README.md). Three figures for each tool, on one copy of the bench
corpus per tool (claude-code-log writes its cache and HTML into the projects dir, so it
never runs on the shared corpus), each a new process timed from spawn to exit:

- **cold build**: ours ``sessiondex index`` into a new index; theirs ``claude-code-log
  --all-projects --projects-dir COPY``, which also renders every session to HTML (that
  is how it builds its cache; the table says so);
- **no-change run**: the same command again, nothing changed;
- **size**: our index file (with its WAL) against their cache database (the HTML it
  writes beside is not counted).

claude-code-log lives in its own virtualenv (``bench/setup.sh`` makes it: its
dependencies, Textual among them, would pin ours). One run per figure: their cold build
of the 440 MB corpus takes minutes.

    python -m bench.peers [--profile tool-heavy|text-heavy|both] [--ccl PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.runner import (
    DEFAULT_CORPUS,
    cache_dir,
    corpus_bytes,
    db_bytes,
    ensure_bytecode,
    ensure_corpus,
    sessiondex_command,
)

CCL_VERSION = "1.7.0"
CCL_CACHE = "claude-code-log-cache.db"


def default_ccl() -> Path:
    """Where ``bench/setup.sh`` installs claude-code-log."""
    return cache_dir() / "peers" / f"claude-code-log-{CCL_VERSION}" / "bin" / "claude-code-log"


def timed_run(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds from spawn to exit; a failing run stops the bench with its stderr."""
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace")[-1500:]
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}: {tail}")
    return elapsed


def copy_projects(corpus: Path, dest: Path) -> Path:
    """A config dir at ``dest`` holding a copy of the corpus's ``projects``."""
    shutil.copytree(corpus / "projects", dest / "projects", symlinks=True)
    return dest


def measure_ours(corpus: Path, work: Path) -> dict[str, Any]:
    root = copy_projects(corpus, work / "ours")
    db = work / "index.db"
    argv = [*sessiondex_command(), "--config-dir", str(root), "--db", str(db), "index"]
    cold = timed_run(argv)
    again = timed_run(argv)
    return {"cold_s": cold, "no_change_s": again, "size_bytes": db_bytes(db)}


def measure_theirs(corpus: Path, work: Path, ccl: Path) -> dict[str, Any]:
    root = copy_projects(corpus, work / "theirs")
    projects = root / "projects"
    # HOME too: it must not read or write the machine's own ~/.claude.
    env = {**os.environ, "HOME": str(work / "home")}
    argv = [str(ccl), "--all-projects", "--projects-dir", str(projects)]
    cold = timed_run(argv, env)
    again = timed_run(argv, env)
    cache = projects / CCL_CACHE
    size = sum(p.stat().st_size for p in projects.glob(f"{CCL_CACHE}*") if p.is_file())
    return {"cold_s": cold, "no_change_s": again, "size_bytes": size, "cache": str(cache)}


def measure(corpus: Path, profile: str, ccl: Path) -> dict[str, Any]:
    """Both tools on their own copies of ``corpus``."""
    with tempfile.TemporaryDirectory(prefix="sessiondex-peers-") as tmp:
        work = Path(tmp)
        ours = measure_ours(corpus, work)
        theirs = measure_theirs(corpus, work, ccl)
    return {
        "profile": profile,
        "corpus_bytes": corpus_bytes(corpus),
        "sessiondex": ours,
        "claude-code-log": theirs,
    }


def table(result: dict[str, Any]) -> str:
    ours, theirs, total = result["sessiondex"], result["claude-code-log"], result["corpus_bytes"]
    rows = [
        ("cold build (a new process)", ours["cold_s"], theirs["cold_s"], "s"),
        ("no-change run (a new process)", ours["no_change_s"], theirs["no_change_s"], "s"),
        ("index / cache size", ours["size_bytes"] / 1e6, theirs["size_bytes"] / 1e6, "MB"),
    ]
    lines = [
        f"## profile: {result['profile']} ({total / 1e6:.1f} MB of transcripts)",
        "",
        "| figure | sessiondex | claude-code-log | ratio |",
        "|---|---|---|---|",
    ]
    for name, a, b, unit in rows:
        lines.append(f"| {name} | {a:,.2f} {unit} | {b:,.2f} {unit} | {a / b:.3f} |")
    lines.append(
        f"| size ÷ corpus | {ours['size_bytes'] / total:.3f} |"
        f" {theirs['size_bytes'] / total:.3f} | — |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", choices=["tool-heavy", "text-heavy", "both"], default="both")
    parser.add_argument("--ccl", type=Path, default=None, help="the claude-code-log executable")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = parser.parse_args(argv)
    ccl = args.ccl or default_ccl()
    if not ccl.exists():
        print(
            f"bench.peers: claude-code-log not found at {ccl}: run bench/setup.sh (or --ccl PATH)",
            file=sys.stderr,
        )
        return 2
    ensure_bytecode()
    profiles = ["tool-heavy", "text-heavy"] if args.profile == "both" else [args.profile]
    results = []
    for profile in profiles:
        result = measure(ensure_corpus({**DEFAULT_CORPUS, "profile": profile}), profile, ccl)
        results.append(result)
        print(table(result), flush=True)
        print(flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
