"""A NUL in a message or a name (a pasted binary, a tool's raw output) is read by FTS5
as U+FFFD (``indexer/text.without_nul``): its ``snippet()`` copies the text between
matches as C strings, so everything after a NUL up to the next match was dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.query.filters import Filters
from sessiondex.query.search import search
from tests.builders import ConfigTree, session_holding

ALL = Filters(scope="all")


@pytest.mark.parametrize(
    ("where", "text", "query", "snippet"),
    [
        (
            "prompt",
            "hello \0 nulword and more after it",
            "nulword",
            "hello \ufffd [nulword] and more after it",
        ),
        (
            "reply",
            "answer with zebraword\0 and a tail",
            "zebraword",
            "answer with [zebraword]\ufffd and a tail",
        ),
        (
            "reply",
            "answer with zebraword\0 and a tail",
            "tail",
            "answer with zebraword\ufffd and a [tail]",
        ),
        (
            "reply",
            "two\0\0nuls then quokka at the end",
            "quokka",
            "two\ufffd\ufffdnuls then [quokka] at the end",
        ),
        ("title", "Title\0 rest of the title", "rest", "Title\ufffd [rest] of the title"),
    ],
)
def test_a_nul_loses_no_text_around_a_match(
    tmp_path: Path, where: str, text: str, query: str, snippet: str
) -> None:
    tree = ConfigTree(tmp_path / "claude")
    session_holding(tree, "/w/a", where, text)
    db = open_db(tmp_path / "i.db")
    try:
        refresh(db, [tree.root])
        rows = search(db, query, ALL)
        assert [r["snippet"] for r in rows] == [snippet]
        if where == "title":  # the name itself is the text as written
            assert rows[0]["title"] == text
    finally:
        db.close()
