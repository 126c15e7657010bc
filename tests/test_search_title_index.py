"""``session_title_fts``: the columns one or two typed letters filter (names, tag,
branches, the title shown), indexed again with a prefix index of one and two characters
(indexer/shape.py ``TITLE_FTS_COLUMNS``). It is kept by triggers of its own, so it must
follow every change of those columns (a rename, a tag, a session's first title, a new
or removed session) as ``session_search_fts`` does, come back with the others after a
cold build's bulk insert, and be made for an index from before it (m017)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlite_utils import Database

from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.query.filters import Filters
from sessiondex.query.search import run_search
from tests.builders import ConfigTree
from tests.helpers_index import check_fts_integrity

ALL = Filters(scope="all", limit=50)


def typed(db: Database, letters: str) -> list[tuple[str, str, str]]:
    """The picker's rows for ``letters`` typed: (session ID, snippet, matched_by)."""
    rows = run_search(db, letters, ALL, typing=True).rows
    return [(r["session_id"], r["snippet"], r["matched_by"]) for r in rows]


def answers(db: Database) -> dict[str, Any]:
    return {letters: typed(db, letters) for letters in ("s", "st", "so", "w", "we", "r", "fi", "q")}


def test_the_title_index_follows_every_change_of_the_columns_it_holds(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    a = tree.session(cwd="/w/a", git_branch="fix/sync")
    a.user("Sort out the stalled sync")
    a.assistant("done")
    a.write()
    b = tree.session(cwd="/w/b")
    b.user("what is the weather")
    b.assistant("sunny")
    b.meta("ai-title", aiTitle="Weather report")
    b.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])  # a cold build: the triggers off, the FTS tables rebuilt
    check_fts_integrity(db)
    assert [sid for sid, *_ in typed(db, "we")] == [b.session_id]
    assert [sid for sid, *_ in typed(db, "so")] == [a.session_id]  # its title shown: a prompt
    assert typed(db, "q") == []

    # renamed, tagged, a new untitled session, one that gains an AI title: triggers
    b.meta("custom-title", customTitle="Quarterly numbers")
    b.meta("tag", tag="stripe")
    b.append()
    c = tree.session(cwd="/w/c")
    c.user("Write the release notes")
    c.write()
    a.meta("ai-title", aiTitle="Fix the stalled sync")
    a.append()
    refresh(db, [tree.root])
    check_fts_integrity(db)
    assert [sid for sid, *_ in typed(db, "q")] == [b.session_id]
    assert {sid for sid, *_ in typed(db, "st")} == {b.session_id, a.session_id}  # tag, AI title
    assert {sid for sid, *_ in typed(db, "r")} == {b.session_id, c.session_id}
    assert typed(db, "so") == []  # titled now: the prompt is no longer its title shown

    b.path.unlink()
    refresh(db, [tree.root])
    check_fts_integrity(db)
    assert [sid for sid, *_ in typed(db, "q")] == []
    live = answers(db)
    rebuilt = open_db(tmp_path / "rebuilt.db")
    refresh(rebuilt, [tree.root])
    assert answers(rebuilt) == live
    rebuilt.close()
    db.close()


def test_an_index_from_before_the_title_index_gets_it_when_opened(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    for n, title in enumerate(("Stripe webhooks", "Sync the wiki", "Fix flaky retry")):
        s = tree.session(cwd=f"/w/{n}", git_branch=f"feature/{n}")
        s.user(f"see {title.lower()}")
        s.assistant("ok")
        s.meta("custom-title", customTitle=title)
        s.write()
    path = tmp_path / "i.db"
    db = open_db(path)
    refresh(db, [tree.root])
    before = answers(db)
    assert before["s"] and before["fi"]
    # as m016's code left an index: no session_title_fts, no triggers of it
    for kind in ("ai", "ad", "au"):
        db.execute(f"DROP TRIGGER session_title_{kind}")
    db.execute("DROP TABLE session_title_fts")
    db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm017_title_prefix_index'")
    db.conn.commit()
    db.close()

    db = open_db(path)
    sql = db.execute("SELECT sql FROM sqlite_master WHERE name = 'session_title_fts'").fetchone()
    assert "prefix='1 2'" in sql[0]
    check_fts_integrity(db)
    assert answers(db) == before
    db.close()
