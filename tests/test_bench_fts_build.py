"""``bench.fts_build``: it reads the message text of an index and times every FTS5
variant over exactly that text, without touching the index."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.corpus import generate
from bench.fts_build import VARIANTS, main, message_texts, token_count
from bench.runner import build_in_child


def test_fts_build_times_every_variant_over_the_index_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    generate(corpus, sessions=8, projects=2, size_mb=1, seed=3, profile="text-heavy")
    db_path = tmp_path / "index.db"
    build_in_child(db_path, [corpus])
    before = db_path.read_bytes()

    texts = message_texts(db_path)
    assert texts and all(isinstance(t, str) for t in texts)
    tokens, terms = token_count(texts)
    assert tokens > terms > 0

    assert main(["--db", str(db_path), "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{tokens:,} tokens" in out
    for name in VARIANTS:
        assert f"\n{name} " in out
    assert db_path.read_bytes() == before
