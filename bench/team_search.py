"""Team search latency and size: ``search`` from the team store against the local index.

``python -m bench.team_search --dsn DSN [--quick] [--runs 40]``

``DSN`` names a database the bench may create databases from (as
``bench/push_throughput.py``). The bench corpus is pushed into a new
``sessiondex_bench_<random>`` (dropped afterwards) and indexed locally; then the same
queries are asked of both through ``sessiondex.Index`` (the library: no process
start-up in the figure), each ``runs`` times after a warm-up, and p50/p95 reported per
backend. Sizes: the store's search structures (session rows with their ``tsvector``,
messages with theirs, branches, PR tables, their indexes) and the entries, per session,
so that a size for 1M sessions can be extrapolated (linearly: said as such). Prints
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.push_throughput import _admin, _database_dsn
from bench.runner import DEFAULT_CORPUS, DEFAULT_WORD, QUICK_CORPUS, REPO_ROOT, ensure_corpus

_CLI = "import sys; from sessiondex.cli.main import main; sys.exit(main(sys.argv[1:]))"
# One rare planted word, two-word queries, a prefix and a typo (the fallback path).
QUERIES = (DEFAULT_WORD, "migration rollback", "websocket reconnect", "refactor", "thornwhistel")
SEARCH_TABLES = ("sessions", "messages", "branches", "pr_links", "pr_mentions")


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(p95 * 1000, 2),
    }


def _time(db: Any, roots: list[Path], runs: int) -> dict[str, Any]:
    """Per query and overall: p50/p95 of ``Index.search(q, scope="all", limit=50)``."""
    from sessiondex import Index

    out: dict[str, Any] = {}
    every: list[float] = []
    with Index(db, roots, refresh=False) as index:
        for query in QUERIES:
            index.search(query, scope="all", limit=50)  # warm-up
            samples = []
            for _ in range(runs):
                started = time.perf_counter()
                index.search(query, scope="all", limit=50)
                samples.append(time.perf_counter() - started)
            every += samples
            out[query] = _percentiles(samples)
    out["all"] = _percentiles(every)
    return out


def _url(target: str, name: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    params = {k: v for k, v in conninfo_to_dict(target).items() if k != "dbname"}
    return f"postgresql:///{name}?" + "&".join(f"{k}={v}" for k, v in params.items())


def _sizes(target: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(target) as conn:
        sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()
        search = conn.execute(
            "SELECT sum(pg_total_relation_size(t)) FROM unnest(%s::regclass[]) t",
            [list(SEARCH_TABLES)],
        ).fetchone()
        entries = conn.execute(
            "SELECT pg_total_relation_size('entries') + pg_total_relation_size('transcripts')"
        ).fetchone()
        database = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    n = int(sessions[0]) if sessions else 0
    search_bytes = int(search[0]) if search and search[0] else 0
    entry_bytes = int(entries[0]) if entries and entries[0] else 0
    return {
        "sessions": n,
        "search_bytes": search_bytes,
        "entries_bytes": entry_bytes,
        "database_bytes": int(database[0]) if database else 0,
        "search_bytes_per_session": search_bytes // max(n, 1),
        "entries_bytes_per_session": entry_bytes // max(n, 1),
        "extrapolated_1m_sessions_gb": round(
            (search_bytes + entry_bytes) / max(n, 1) * 1_000_000 / 1e9, 1
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", required=True, help="a maintenance database's DSN")
    parser.add_argument("--quick", action="store_true", help="the 60-session corpus")
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args(argv)
    corpus = ensure_corpus(QUICK_CORPUS if args.quick else DEFAULT_CORPUS)
    name = f"sessiondex_bench_{secrets.token_hex(4)}"
    _admin(args.dsn, f"CREATE DATABASE {name}")
    try:
        target = _database_dsn(args.dsn, name)
        url = _url(target, name)
        push = subprocess.run(
            [sys.executable, "-c", _CLI, "--config-dir", str(corpus), "push", "--to", url],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            check=False,
        )
        if push.returncode != 0:
            raise RuntimeError(f"push failed: {push.stderr.strip()[-2000:]}")
        _admin(target, "VACUUM ANALYZE")
        with tempfile.TemporaryDirectory() as tmp:
            from sessiondex import Index

            local = Path(tmp) / "index.db"
            with Index(local, [corpus]) as index:
                index.refresh()
            result = {
                "corpus": str(corpus),
                "runs": args.runs,
                "sqlite": _time(local, [corpus], args.runs),
                "postgresql": _time(url, [corpus], args.runs),
                "store": _sizes(target),
            }
        print(json.dumps(result, indent=2))
        return 0
    finally:
        _admin(args.dsn, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


if __name__ == "__main__":
    raise SystemExit(main())
