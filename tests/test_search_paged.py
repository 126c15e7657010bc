"""A page of search results is the head of the whole ranking.

``query.search`` ranks a page from the best ``FIRST_CUT`` matching messages (FTS5 ranks
them, then only those are mapped to sessions) instead of joining and grouping every
match. That is an optimisation only: the page must be exactly the first rows of the
unlimited answer, in any scope, whether the cut was enough or not.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sessiondex.query.search as search_module  # noqa: E402
from bench.corpus import generate  # noqa: E402
from sessiondex.indexer.db import open_db  # noqa: E402
from sessiondex.indexer.refresh import refresh  # noqa: E402
from sessiondex.query.filters import Filters  # noqa: E402
from sessiondex.query.search import rank_search, ranked_rows, search  # noqa: E402
from tests.builders import ConfigTree  # noqa: E402

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


def _hide(s: Any) -> None:
    s.meta("tag", tag="__hidden")  # the soft delete
    s.write()


def _empty(s: Any) -> None:
    s.entries.clear()  # rewritten with no message: a title alone is no session to show
    s.meta("custom-title", customTitle="deploy notes")
    s.write()


def _archive_in_picker(s: Any) -> None:
    folder = s.project_dir / s.session_id
    folder.mkdir(exist_ok=True)
    (folder / "archived.json").write_text('{"archived": true}')


@pytest.mark.parametrize("change", [_hide, _empty, _archive_in_picker])
@pytest.mark.parametrize("typed", ["deploy", "de"])  # full text; the title filter's prefix
def test_a_page_read_after_the_ranking_applies_the_filters_again(
    tmp_path: Path, change: Callable[[Any], None], typed: str
) -> None:
    """The picker ranks a search once and reads each page's rows later (ranked_rows):
    a session hidden, emptied or archived in Claude Code's picker in between stays out
    of the page, as the next search leaves it out; the others keep their order."""
    tree = ConfigTree(tmp_path / "claude")
    made = []
    for n in range(4):
        s = tree.session("/w/app", start=f"2026-11-0{n + 1}T10:00:00.000Z")
        s.meta("custom-title", customTitle=f"deploy task {n}")
        s.user(f"deploy the service, step {n}")
        s.write()
        made.append(s)
    db = open_db(tmp_path / "index.db")
    refresh(db, [tree.root])
    filters = Filters(scope="all", limit=10)
    ranking = rank_search(db, typed, filters, typing=True)
    before = [r["session_id"] for r in ranked_rows(db, ranking)]
    assert sorted(before) == sorted(s.session_id for s in made)
    gone = made[1]
    change(gone)
    refresh(db, [tree.root])
    assert gone.session_id not in [r["session_id"] for r in search(db, typed, filters)]
    page = [r["session_id"] for r in ranked_rows(db, ranking)]
    assert page == [sid for sid in before if sid != gone.session_id]
