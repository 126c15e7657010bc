"""The column a metadata snippet is cut from when the match is one column filter (the
letters typed in the picker: ``{custom_title ... shown_title} : ("s"*)``): FTS5's own
choice, asked of that column alone so that the long summary and prompts, which hold no
instance of such a match, are not tokenized for it (query/dialect.py
``_instance_column``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.indexer.shape import SESSION_FTS_COLUMNS, SHOWN_TITLE_COLUMN, TITLE_FTS_COLUMNS
from sessiondex.query.dialect import SQLITE, _instance_column, filtered_columns
from sessiondex.query.filters import Filters
from sessiondex.query.search import TYPED_PREFIX_COLUMNS, run_search
from sessiondex.query.snippets import CLOSE, ELLIPSIS, OPEN, display_snippet
from tests.builders import ConfigTree
from tests.helpers_index import statements

TABLE = "session_search_fts"
# The letters typed are filtered, and their snippets cut, over this one: the filter's
# columns alone, with a prefix index (indexer/shape.py TITLE_FTS_COLUMNS).
TITLES = "session_title_fts"
# The table's columns, in its order: the one way snippet() and highlight() number them.
FTS_COLUMNS = (*SESSION_FTS_COLUMNS, SHOWN_TITLE_COLUMN)
# Long prompts full of words starting with the letter typed, which the filter does not
# read: FTS5's snippet() with no column tokenized them all the same.
PROSE = "we said so, since the sales sync stalled. " * 30

LAST = f"and the rest: {PROSE}"
# name: (custom title, ai title, agent name, tag, branch, last prompt (an untitled
# session's title shown), the column FTS5 cuts from, the column asked for: that one, or
# -1 where several hold instances and FTS5 scores them)
CASES: dict[str, tuple[Any, ...]] = {
    "the AI title alone": (
        None,
        "Stripe webhooks",
        None,
        None,
        "main",
        LAST,
        "ai_title",
        "ai_title",
    ),
    "the agent name alone": ("Review", None, "scout", None, None, LAST, "agent_name", "agent_name"),
    "untitled: the title shown": (
        None,
        None,
        None,
        None,
        "main",
        LAST,
        "shown_title",
        "shown_title",
    ),
    # one instance each: the same score, and the lower column wins
    "a tie of title and branch": ("Stripe", None, None, None, "sync", LAST, "custom_title", -1),
    "a tie of branch and title shown": (
        None,
        None,
        None,
        None,
        "sync",
        "Fix the sync",
        "branches_text",
        -1,
    ),
    # the branch's window holds three instances against the title's one
    "more in the branch": ("Stripe", None, None, None, "s/sync-sso", LAST, "branches_text", -1),
    "more in the tag": (None, "Spike", None, "setup sso", None, LAST, "tag", -1),
    "more in the title shown": (None, None, None, None, "sync", LAST, "shown_title", -1),
}


def _session(tree: ConfigTree, case: tuple[Any, ...]) -> str:
    custom, ai, agent, tag, branch, last = case[:6]
    s = tree.session(cwd="/w/a", git_branch=branch)
    s.user(f"Sort out {PROSE}")
    s.assistant("done")
    s.meta("last-prompt", lastPrompt=last)
    if custom:
        s.meta("custom-title", customTitle=custom)
    if ai:
        s.meta("ai-title", aiTitle=ai)
    if agent:
        s.meta("agent-name", agentName=agent)
    if tag:
        s.meta("tag", tag=tag)
    s.write()
    return s.session_id


def _fts5_snippet(db: Any, match: str, rowid: int, column: int) -> str:
    return str(
        db.execute(
            f"SELECT snippet({TABLE}, ?, ?, ?, ?, 12) FROM {TABLE}"
            f" WHERE {TABLE} MATCH ? AND rowid = ?",
            [column, OPEN, CLOSE, ELLIPSIS, match, rowid],
        ).fetchone()[0]
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("world")
    tree = ConfigTree(root / "claude")
    ids = {name: _session(tree, case) for name, case in CASES.items()}
    db = open_db(root / "i.db")
    refresh(db, [tree.root])
    rowids = {
        name: db.execute("SELECT id FROM sessions WHERE session_id = ?", [sid]).fetchone()[0]
        for name, sid in ids.items()
    }
    yield db, rowids
    db.close()


@pytest.mark.parametrize("name", list(CASES))
def test_the_column_asked_for_is_the_one_fts5_chooses(world: Any, name: str) -> None:
    """Per row, the column the statement asks snippet() for: the one column holding
    instances (never a long one), -1 where several do; and the snippet is FTS5's own
    with no column, whose choice (the strictly best window, the lower column on a
    tie) is the one named in the table."""
    db, rowids = world
    rowid = rowids[name]
    match = SQLITE.title_match(SQLITE.term("s", True), TYPED_PREFIX_COLUMNS)
    *_, chosen, asked = CASES[name]
    (which,) = db.execute(
        f"SELECT {_instance_column(TABLE, TYPED_PREFIX_COLUMNS, OPEN)} FROM {TABLE}"
        f" WHERE {TABLE} MATCH ? AND rowid = ?",
        [match, rowid],
    ).fetchone()
    assert which == (asked if asked == -1 else FTS_COLUMNS.index(asked))
    fts5 = _fts5_snippet(db, match, rowid, -1)
    assert fts5 == _fts5_snippet(db, match, rowid, FTS_COLUMNS.index(chosen))
    assert OPEN in fts5
    assert SQLITE.snippets(db, "meta", match, [rowid], 12) == {rowid: fts5}


def test_a_page_of_typed_letters_asks_no_long_column(world: Any) -> None:
    """The typed letters' snippets, one statement for the page: highlight() is asked
    of the filter's columns only (titles, names, tag, branch), snippet() of the column
    that answers; each row's snippet is FTS5's with no column."""
    db, rowids = world
    with statements(db.conn) as asked:
        rows = run_search(db, "s", Filters(scope="all", limit=50), typing=True).rows
    assert len(rows) == len(CASES)
    # From session_title_fts (those columns alone, with a prefix index), whose column
    # numbers are its own.
    (statement,) = [sql for sql in asked if f"snippet({TITLES}" in sql]
    highlighted = {int(i) for i in re.findall(rf"highlight\({TITLES}, (\d+)", statement)}
    assert highlighted == {TITLE_FTS_COLUMNS.index(c) for c in TYPED_PREFIX_COLUMNS}
    assert f"snippet({TITLES}, (CASE " in statement
    assert not [sql for sql in asked if TABLE in sql]
    match = SQLITE.title_match(SQLITE.term("s", True), TYPED_PREFIX_COLUMNS)
    fts5 = {rowid: _fts5_snippet(db, match, rowid, -1) for rowid in rowids.values()}
    assert SQLITE.snippets(db, "meta", match, list(rowids.values()), 12) == fts5
    # the same snippets as session_search_fts's, whose columns hold the same texts
    assert SQLITE.snippets(db, "title", match, list(rowids.values()), 12) == fts5
    assert {row["snippet"] for row in rows} == {
        display_snippet(t, ("[", "]")) for t in fts5.values()
    }


def test_a_match_over_every_column_leaves_the_choice_to_fts5(world: Any) -> None:
    """A query's words may be in any column (the full search): snippet() chooses."""
    db, _ = world
    with statements(db.conn) as asked:
        run_search(db, "stripe", Filters(scope="all", limit=50))
    (statement,) = [sql for sql in asked if f"snippet({TABLE}" in sql]
    assert f"snippet({TABLE}, -1," in statement and "highlight(" not in statement


@pytest.mark.parametrize(
    ("match", "columns"),
    [
        ('{custom_title tag} : ("s"*)', ("custom_title", "tag")),
        ('{shown_title}:("a)" OR "b""(")', ("shown_title",)),
        ('{custom_title} : ("x" NOT {tag} : "y")', ("custom_title",)),
        # not one filter over the whole match: any column may hold an instance
        ('{custom_title} : ("x") OR ("y")', None),
        ('{custom_title} : ("x") "y"', None),
        ('-{custom_title} : ("x")', None),
        ('custom_title : "x"', None),
        ('{no_such_column} : ("x")', None),
        ('"x"', None),
        ('{custom_title} : ("x"', None),
    ],
)
def test_filtered_columns(match: str, columns: tuple[str, ...] | None) -> None:
    assert filtered_columns(match) == columns


def test_a_long_prompt_the_filter_does_not_read_is_no_snippet_of_the_letters(
    tmp_path: Path,
) -> None:
    """A prompt with hundreds of words starting with the letter typed was taken for a
    row too heavy for FTS5's snippet() (query/snippets.py ``MAX_INSTANCES``), though
    the filter reads only the titles, names, tag and branch, where FTS5 finds the few
    it marks: the row's snippet was cut in Python from the prompt, words the filter
    did not match marked, not from the title it matched (and the check read every
    long prompt of the page, for each letter typed)."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/a")
    s.user("see some stars shine " * 200)
    s.assistant("ok")
    s.meta("ai-title", aiTitle="Stripe webhooks")
    s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    with statements(db.conn) as asked:
        (row,) = run_search(db, "s", Filters(scope="all", limit=50), typing=True).rows
    assert row["snippet"] == "[Stripe] webhooks"
    (statement,) = [sql for sql in asked if f"snippet({TITLES}" in sql]
    assert "first_prompt" not in statement and "summary" not in statement
    db.close()


@pytest.mark.parametrize("columns", [("shown_title",), ("tag", "shown_title"), ("first_prompt",)])
def test_any_filter_of_the_columns_cuts_fts5s_snippet(world: Any, columns: tuple[str, ...]) -> None:
    """A filter of the title shown alone leaves no text to check for heaviness; a
    filter of a long column checks and cuts that one."""
    db, rowids = world
    match = SQLITE.title_match(SQLITE.term("s", True), columns)
    found = [r for (r,) in db.execute(f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ?", [match])]
    assert found
    fts5 = {rowid: _fts5_snippet(db, match, rowid, -1) for rowid in found}
    assert SQLITE.snippets(db, "meta", match, found, 12) == fts5
