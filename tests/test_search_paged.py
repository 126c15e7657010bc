"""A page of search results is the head of the whole ranking.

``query.search`` ranks a page from the best ``FIRST_CUT`` matching messages (FTS5 ranks
them, then only those are mapped to sessions) instead of joining and grouping every
match. That is an optimisation only: the page must be exactly the first rows of the
unlimited answer, in any scope, whether the cut was enough or not.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sessiondex.query.search as search_module  # noqa: E402
from bench.corpus import generate  # noqa: E402
from sessiondex.indexer.db import open_db  # noqa: E402
from sessiondex.indexer.refresh import refresh  # noqa: E402
from sessiondex.query.filters import Filters  # noqa: E402
from sessiondex.query.search import search  # noqa: E402

WORDS = ("the", "database", "timeout", "thornwhistle", "kubectl", "cache error")


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("paged")
    root = generate(base / "cfg", sessions=60, projects=4, size_mb=4, seed=9).parent
    db = open_db(base / "index.db")
    refresh(db, [root])
    yield db, root
    db.close()


def _ids(rows: list[dict]) -> list[tuple[str, float]]:
    return [(r["session_id"], r["score"]) for r in rows]


@pytest.mark.parametrize("first_cut", [search_module.FIRST_CUT, 3])
def test_a_page_is_the_head_of_the_full_ranking(
    corpus_db, first_cut: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, _ = corpus_db
    monkeypatch.setattr(search_module, "FIRST_CUT", first_cut)
    for word in WORDS:
        everything = search(db, word, Filters(scope="all"))
        assert everything, word
        for limit in (1, 3, 10, 50):
            page = search(db, word, Filters(scope="all", limit=limit))
            assert _ids(page) == _ids(everything[:limit]), (word, limit)
            assert [r["snippet"] for r in page] == [r["snippet"] for r in everything[:limit]]
