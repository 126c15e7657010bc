"""``push`` throughput into PostgreSQL, against the cold SQLite build of the same corpus.

``python -m bench.push_throughput --dsn DSN [--quick] [--with-tools] [--runs 1]``

``DSN`` names a database the bench may create databases from (``postgres``, with rights
to ``CREATE DATABASE``); each run pushes into a new ``sessiondex_bench_<random>`` that is
dropped afterwards. Both figures are corpus bytes per second, over the same generated
corpus (``bench/corpus.py``, the runner's cache): the cold build as the main bench
measures it (a child process, ``indexer.refresh``), and a full ``push`` (a child process
running the CLI, as a user runs it: redaction, tool outputs left out unless
``--with-tools``, one transaction per chunk). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.runner import (
    DEFAULT_CORPUS,
    QUICK_CORPUS,
    REPO_ROOT,
    build_in_child,
    corpus_bytes,
    ensure_corpus,
)

_PUSH = "import sys; from sessiondex.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _admin(dsn: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql)


def _database_dsn(dsn: str, name: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(dsn)
    params["dbname"] = name
    return make_conninfo(**params)


def push_once(corpus: Path, admin_dsn: str, with_tools: bool) -> dict[str, Any]:
    """A full push of ``corpus`` into a fresh database, in a child process."""
    import psycopg

    name = f"sessiondex_bench_{secrets.token_hex(4)}"
    _admin(admin_dsn, f"CREATE DATABASE {name}")
    try:
        target = _database_dsn(admin_dsn, name)
        url = (
            "postgresql:///"
            + name
            + "?"
            + "&".join(
                f"{k}={v}"
                for k, v in psycopg.conninfo.conninfo_to_dict(target).items()
                if k != "dbname"
            )
        )
        argv = ["--config-dir", str(corpus), "push", "--to", url, "--json"]
        if with_tools:
            argv.append("--with-tools")
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _PUSH, *argv],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            check=False,
        )
        seconds = time.perf_counter() - started
        if proc.returncode != 0:
            raise RuntimeError(f"push failed: {proc.stderr.strip()[-2000:]}")
        summary: dict[str, Any] = json.loads(proc.stdout)
        with psycopg.connect(target) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        summary["database_bytes"] = row[0] if row else None
        summary["wall_seconds"] = seconds
        return summary
    finally:
        _admin(admin_dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", required=True, help="a maintenance database's DSN")
    parser.add_argument("--quick", action="store_true", help="the 60-session corpus")
    parser.add_argument("--with-tools", action="store_true")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args(argv)
    corpus = ensure_corpus(QUICK_CORPUS if args.quick else DEFAULT_CORPUS)
    size = corpus_bytes(corpus)
    builds, pushes = [], []
    for _ in range(max(1, args.runs)):
        with tempfile.TemporaryDirectory() as tmp:
            builds.append(build_in_child(Path(tmp) / "index.db", [corpus])["seconds"])
        pushes.append(push_once(corpus, args.dsn, args.with_tools))
    # Both timed inside their process, after imports (the build child's own clock;
    # push's summary, which includes connecting and creating the schema).
    build_s = min(builds)
    best = min(pushes, key=lambda p: p["seconds"])
    result = {
        "corpus_bytes": size,
        "cold_build_seconds": round(build_s, 3),
        "cold_build_mb_per_s": round(size / build_s / 1e6, 1),
        "push_seconds": round(best["seconds"], 3),
        "push_mb_per_s": round(size / best["seconds"] / 1e6, 1),
        "push_over_build": round(best["seconds"] / build_s, 2),
        "with_tools": args.with_tools,
        "push": best,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
