"""Tokens nobody types (base64, minified code, long hashes) do not bloat the index.

``indexer.text.fts_text`` keeps only the first ``LONG_TOKEN_PREFIX`` characters of a token
longer than ``LONG_TOKEN_MAX`` (then ``…``): the index grows with the words people type,
not with pasted blobs, and a search for a blob's prefix (or the whole blob) still finds it.
Sizes here are ratios on deterministic generated transcripts; no timing is asserted.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.indexer.text import LONG_TOKEN_MAX, LONG_TOKEN_PREFIX, fts_text
from sessiondex.query.filters import Filters
from sessiondex.query.search import search
from tests.builders import ConfigTree

WORDS = (
    "the cache session refresh worker timeout index query parser token render layout "
    "migration schema review branch commit merge deploy container cluster volume"
).split()
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _prose(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n // 6))


def _blob(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(ALNUM, k=n))


def _build(root: Path, hostile_share: float) -> tuple[int, float, list[str]]:
    """30 sessions of 8 turns; in the middle turns, long tokens without separators make
    ``hostile_share`` of the prompt bytes (the prose is the same whatever the share).
    Returns (index bytes, index bytes ÷ transcript bytes, one blob per session)."""
    prose_rng, blob_rng = random.Random(7), random.Random(8)
    tree = ConfigTree(root)
    blobs: list[str] = []
    for _ in range(30):
        session = tree.session()
        blob = ""
        for turn in range(8):
            text = _prose(prose_rng, prose_rng.randint(300, 3000))
            if hostile_share and 1 <= turn <= 6:
                extra = int(len(text) * hostile_share / (1 - hostile_share))
                pieces = []
                while extra > 0:
                    size = min(extra, blob_rng.randint(200, 10_000))
                    pieces.append(_blob(blob_rng, max(size, LONG_TOKEN_MAX + 1)))
                    extra -= size
                blob = blob or pieces[0]
                text = f"{text} {' '.join(pieces)} end of paste"
            session.user(text)
            session.assistant(_prose(prose_rng, prose_rng.randint(200, 2000)))
        session.write()
        blobs.append(blob)
    db_path = root / "index.db"
    db = open_db(db_path)
    refresh(db, [root])
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    db = sqlite3.connect(db_path)
    db.execute("VACUUM")
    db.close()
    size = db_path.stat().st_size
    corpus = sum(p.stat().st_size for p in (root / "projects").rglob("*.jsonl"))
    return size, size / corpus, blobs


def test_fts_text_cuts_only_tokens_nobody_types() -> None:
    sha256 = "a" * 64
    assert fts_text(f"commit {sha256} done") == f"commit {sha256} done"
    long = "Zm9v" * 50
    assert fts_text(f"paste {long} end") == f"paste {long[:LONG_TOKEN_PREFIX]}… end"
    assert len(long) > LONG_TOKEN_MAX
    # The query side goes through the same function: the whole blob finds its cut form.
    assert fts_text(long) == long[:LONG_TOKEN_PREFIX] + "…"
    # CJK characters are one token each, however long the run.
    cjk = "数据库" * 40
    assert "…" not in fts_text(cjk)


def test_index_size_stays_flat_whatever_the_share_of_long_tokens(tmp_path: Path) -> None:
    clean, clean_ratio, _ = _build(tmp_path / "clean", 0.0)
    for share in (0.3, 0.7):
        size, ratio, _ = _build(tmp_path / f"hostile-{share}", share)
        # The same prose with the blobs: about the same index, a smaller share of the corpus.
        assert size <= clean * 1.10, (share, size, clean)
        assert ratio < clean_ratio, (share, ratio, clean_ratio)


def test_a_long_token_is_found_by_its_prefix_and_whole(tmp_path: Path) -> None:
    root = tmp_path / "cfg"
    _, _, blobs = _build(root, 0.5)
    db = open_db(root / "index.db")
    target = blobs[11]
    for query in (target[:12], target[:LONG_TOKEN_PREFIX], target):
        rows = search(db, query, Filters(scope="all"))
        assert rows, query
        ids = [r["session_id"] for r in rows]
        hit = rows[0]
        assert len(ids) == 1, query
        assert target[:LONG_TOKEN_PREFIX] in hit["snippet"].replace("[", "").replace("]", "")
    db.close()


def test_a_long_token_is_found_by_a_prefix_longer_than_its_stored_form(tmp_path: Path) -> None:
    # A token longer than LONG_TOKEN_MAX is stored as its first LONG_TOKEN_PREFIX
    # characters; the first 40 of a SHA-512 (or 64 of a base64 blob) typed as the last
    # word found nothing: a prefix of no stored token. (A token of exactly
    # LONG_TOKEN_PREFIX characters that starts the typed word matches too: the stored
    # form does not say what followed the cut.)
    from sessiondex.indexer.refresh import refresh
    from tests.builders import ConfigTree

    digest = "ab12cd34" * 16  # 128 hex digits
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd="/w/a")
    session.user(f"the digest is {digest} ok")
    session.write()
    other = tree.session(cwd="/w/b")
    other.user(f"not this one: {digest[:30]}")
    other.write()
    db = open_db(tmp_path / "index.db")
    refresh(db, [tree.root])
    for query in (digest[:40], digest[:LONG_TOKEN_MAX], f"digest {digest[:50]}"):
        rows = search(db, query, Filters(scope="all"))
        assert [r["snippet"] for r in rows] == [
            f"the digest is [{digest[:LONG_TOKEN_PREFIX]}]… ok"
        ] or [r["snippet"] for r in rows] == [
            f"the [digest] is [{digest[:LONG_TOKEN_PREFIX]}]… ok"
        ], query
    db.close()


def _fts5_terms(text: str) -> list[str]:
    """The terms SQLite's own tokenizer (the index's) makes of ``text``."""
    from sessiondex.indexer.shape import FTS_TOKENIZER

    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS_TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    conn.execute("INSERT INTO t(x) VALUES (?)", [text])
    return [str(term) for (term,) in conn.execute("SELECT term FROM v ORDER BY offset")]


# Runs that are one token to unicode61 but not to Python's \w, and the reverse: the cut
# must follow the tokenizer, or a blob slips through whole (the index grows with it) or
# a word after the cut is lost.
LONG_TOKENS_AS_FTS5_CUTS_THEM = [
    # (text, longest term FTS5 may be left with, a term that must stay findable)
    ("a\u0301" * 120, LONG_TOKEN_PREFIX, None),  # decomposed accents: one 240-char token
    ("x\ue000" * 120, LONG_TOKEN_PREFIX, None),  # private use: token characters
    ("Zm9v" * 30 + "\u0301" + "Zm9v" * 30, LONG_TOKEN_PREFIX, None),
    ("a" * 40 + "\u19b0" + "b" * 40, 40, "b" * 40),  # Python: one word; FTS5: two
    ("ok " + "c\u0301" * 20 + " " + "d" * 60, 60, "d" * 60),  # short tokens stay whole
]


def test_long_tokens_are_cut_where_the_tokenizer_cuts_them() -> None:
    for text, longest, kept in LONG_TOKENS_AS_FTS5_CUTS_THEM:
        terms = _fts5_terms(fts_text(text))
        assert max(len(t) for t in terms) <= longest, (text[:20], terms)
        if kept is not None:
            assert kept in terms, (text[:20], terms)
        # The query side goes through the same function: the text as typed matches.
        assert fts_text(fts_text(text)) == fts_text(text)
