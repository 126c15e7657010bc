"""``python -m bench.fts_build``: where the FTS5 rebuild of the message text spends its time.

The text-heavy cold build misses its goal (≤ 3× the bare parse) by more than any other
figure, and the one step that decides it is FTS5's ``'rebuild'`` of ``messages_fts``
(README, "Where the time goes"). This takes the message text of a bench index, copies
it into a plain table in memory, and rebuilds an FTS5 table over it in several ways,
alternately, so a burst of load falls on every variant:

- **ours**: the index's tokenizer (``unicode61 remove_diacritics 2``), full detail, the
  rebuild's 16 MB pending-terms budget (``indexer/bulk.py``);
- **ascii**: FTS5's ``ascii`` tokenizer, which does no Unicode folding at all: the most a
  faster tokenizer could gain;
- **detail=column** and **detail=none**: FTS5 keeping less than every token's position
  (no phrase or NEAR queries: not something search can give up);
- **hashsize 1 MB / 64 MB**: FTS5's default budget and a larger one.

It prints each variant's median rebuild time, its ratio to ours, and the token count
(``fts5vocab``), so the cost per token is on the page. Nothing here changes the index.

    python -m bench.fts_build [--db INDEX] [--profile tool-heavy|text-heavy] [--runs N]

Without ``--db`` it builds (once, in the bench cache) the index of the profile's corpus.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import time
from pathlib import Path

from bench.runner import DEFAULT_CORPUS, build_in_child, cache_dir, ensure_corpus

OURS = ("unicode61 remove_diacritics 2", "", 16 << 20)
VARIANTS: dict[str, tuple[str, str, int]] = {
    "ours": OURS,
    "ascii tokenizer": ("ascii", "", OURS[2]),
    "detail=column": (OURS[0], ", detail=column", OURS[2]),
    "detail=none": (OURS[0], ", detail=none", OURS[2]),
    "hashsize 1 MB (FTS5's default)": (OURS[0], "", 1 << 20),
    "hashsize 64 MB": (OURS[0], "", 64 << 20),
}


def message_texts(db_path: Path) -> list[str]:
    """Every message's text as indexed, through the index's own SQL functions."""
    from sessiondex import prepare_connection

    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        prepare_connection(conn)
        return [row[0] for row in conn.execute("SELECT text FROM message_text")]
    finally:
        conn.close()


def rebuild_seconds(texts: list[str], tokenizer: str, options: str, hashsize: int) -> float:
    """One FTS5 ``'rebuild'`` over ``texts``, external content as in the index."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE TABLE body(id INTEGER PRIMARY KEY, text TEXT)")
        conn.executemany("INSERT INTO body(text) VALUES (?)", ((t,) for t in texts))
        conn.execute(
            "CREATE VIRTUAL TABLE f USING fts5(text, content='body', content_rowid='id',"
            f" tokenize='{tokenizer}'{options})"
        )
        conn.execute(f"INSERT INTO f(f, rank) VALUES ('hashsize', {hashsize})")
        started = time.perf_counter()
        conn.execute("INSERT INTO f(f) VALUES ('rebuild')")
        conn.commit()
        return time.perf_counter() - started
    finally:
        conn.close()


def token_count(texts: list[str]) -> tuple[int, int]:
    """(tokens, distinct terms) as our tokenizer reads ``texts``."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(text, tokenize='{OURS[0]}')")
        conn.executemany("INSERT INTO f(text) VALUES (?)", ((t,) for t in texts))
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(f, row)")
        terms, tokens = conn.execute("SELECT count(*), sum(cnt) FROM v").fetchone()
        return int(tokens or 0), int(terms)
    finally:
        conn.close()


def bench_index(profile: str) -> Path:
    """The cold-built index of ``profile``'s default corpus, built once in the cache."""
    corpus = ensure_corpus({**DEFAULT_CORPUS, "profile": profile})
    db_path = cache_dir() / f"fts-build-{corpus.name}.db"
    if not db_path.exists():
        print(f"building the index of {corpus} ...", flush=True)
        build_in_child(db_path, [corpus])
    return db_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fts_build", description=__doc__)
    parser.add_argument("--db", type=Path, help="an index to read the message text from")
    parser.add_argument("--profile", default="text-heavy", choices=["tool-heavy", "text-heavy"])
    parser.add_argument("--runs", type=int, default=3, help="rebuilds per variant (default 3)")
    opts = parser.parse_args(argv)
    db_path = opts.db or bench_index(opts.profile)
    texts = message_texts(db_path)
    chars = sum(map(len, texts))
    tokens, terms = token_count(texts)
    print(f"{len(texts):,} messages, {chars / 1e6:.1f} M characters, {tokens:,} tokens,")
    print(f"{terms:,} distinct terms ({db_path})")
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(opts.runs):
        for name, variant in VARIANTS.items():
            samples[name].append(rebuild_seconds(texts, *variant))
    ours = statistics.median(samples["ours"])
    print(f"\n{'variant':<32} {'median':>8} {'min–max':>15} {'÷ ours':>7} {'ns/token':>9}")
    for name, runs in samples.items():
        median = statistics.median(runs)
        spread = f"{min(runs):.2f}–{max(runs):.2f} s"
        per_token = median / tokens * 1e9 if tokens else 0.0
        print(f"{name:<32} {median:>6.2f} s {spread:>15} {median / ours:>7.2f} {per_token:>9.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
