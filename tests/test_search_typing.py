"""The picker's search while a word is typed (``typing``): a word too common to rank in a
keystroke lists the sessions of its newest messages, newest first, after the ranked title
hits; a cold build numbers messages oldest session first, which is what that walks; and
sessions that score the same come in one order whatever order the index was built in."""

from __future__ import annotations

from pathlib import Path

import pytest

import sessiondex.query.search as search_module
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.query.dialect import SQLITE
from sessiondex.query.filters import Filters
from sessiondex.query.search import query_terms, run_search, search
from tests.builders import ConfigTree
from tests.helpers_index import statements

ALL = Filters(scope="all")
DAY = 86_400.0
BASE = 1_700_000_000.0


def common_word_tree(root: Path) -> tuple[ConfigTree, list[str], str]:
    """Six sessions whose replies say "wombat" (one of them often, so it ranks best by
    bm25) but whose prompts do not (prompts are metadata, ranked as titles are), a
    seventh titled "Wombat", and one without the word; written a day apart, in projects
    whose names sort against their age."""
    tree = ConfigTree(root)
    said = []
    for day in range(6):
        s = tree.session(cwd=f"/w/p{9 - day}", start=f"2026-01-{day + 1:02d}T00:00:00.000Z")
        s.user("what did we find?")
        s.assistant("wombat wombat wombat wombat" if day == 0 else f"a wombat on day {day}")
        s.user("thanks")
        s.write(mtime=BASE + day * DAY)
        said.append(s.session_id)
    titled = tree.session(cwd="/w/t", start="2025-06-01T00:00:00.000Z")
    titled.user("something else entirely")
    titled.meta("custom-title", customTitle="Wombat census")
    titled.write(mtime=BASE - 100 * DAY)
    other = tree.session(cwd="/w/o", start="2026-02-01T00:00:00.000Z")
    other.user("nothing to see")
    other.write(mtime=BASE + 30 * DAY)
    return tree, said, titled.session_id


@pytest.mark.parametrize(
    ("rank_limit", "limit", "expected"),
    [
        # fewer matches than the limit: ranked by relevance, as `search` ranks
        (100, 50, "ranked"),
        # more: the title hit first, then the sessions by last activity, newest first
        (3, 50, "newest"),
        # a page of three: the title hit and the two newest
        (3, 3, "newest"),
    ],
)
def test_a_common_word_typed_lists_the_newest_sessions_after_title_hits(
    tmp_path: Path, monkeypatch, rank_limit: int, limit: int, expected: str
) -> None:
    monkeypatch.setattr(search_module, "TYPING_RANK_LIMIT", rank_limit)
    tree, said, titled = common_word_tree(tmp_path / "claude")
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    page = Filters(scope="all", limit=limit)
    outcome = run_search(db, "wombat", page, typing=True)
    typed = [r["session_id"] for r in outcome.rows]
    ranked = [r["session_id"] for r in search(db, "wombat", page)]
    assert outcome.newest_first is (expected == "newest")
    if expected == "ranked":
        assert typed == ranked
    else:
        assert typed == ([titled, *said[::-1]])[:limit]
        assert typed != ranked[:limit] or limit < 3
    # a big enough page holds exactly the sessions `search` finds
    everything = Filters(scope="all", limit=1000)
    assert {r["session_id"] for r in run_search(db, "wombat", everything, typing=True).rows} == {
        r["session_id"] for r in search(db, "wombat", everything)
    }
    db.close()


@pytest.mark.parametrize("typed", ["wom", "wombat"])  # a prefix, then the whole word
@pytest.mark.parametrize(
    "narrowing",
    [{"scope": "worktree", "cwd": "/w/p9"}, {"scope": "all", "branch": "feature/zoo"}],
)
def test_a_common_word_typed_in_a_narrow_scope_is_ranked_in_its_sessions(
    tmp_path: Path, monkeypatch, typed: str, narrowing: dict[str, str]
) -> None:
    """In a scope of a few sessions (the picker's default: one worktree) the typed word is
    ranked in those sessions, as Enter ranks it, not answered from the newest matches of
    every project: those were mostly other projects' (``error`` in a 70-session
    worktree at 20,000 sessions: 199,000 rows mapped to their sessions, 2.6 s a
    keystroke)."""
    monkeypatch.setattr(search_module, "TYPING_RANK_LIMIT", 3)
    tree = ConfigTree(tmp_path / "claude")
    mine = []
    for day, reply in enumerate(["wombat " * 6, "a wombat", "one wombat, then nothing"]):
        s = tree.session(cwd="/w/p9", git_branch="feature/zoo")
        s.user("what did we find?")
        s.assistant(reply)
        s.write(mtime=BASE + day * DAY)  # the best-ranked reply is the oldest
        mine.append(s.session_id)
    for n in range(8):  # newer, elsewhere, on another branch
        s = tree.session(cwd=f"/w/other{n}", git_branch="main")
        s.user("and here?")
        s.assistant(f"a wombat again, {n}")
        s.write(mtime=BASE + (10 + n) * DAY)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    page = Filters(limit=50, **narrowing)
    ranked = [(r["session_id"], r["score"]) for r in search(db, "wombat", page)]
    assert [sid for sid, _ in ranked] == mine  # bm25: the reply that says it most first
    with statements(db.conn) as asked:
        outcome = run_search(db, typed, page, typing=True)
    assert not outcome.newest_first
    if typed == "wombat":
        assert [(r["session_id"], r["score"]) for r in outcome.rows] == ranked
    assert {r["session_id"] for r in outcome.rows} == set(mine)
    everywhere = [sql for sql in asked if "ORDER BY rowid DESC" in sql]
    assert not everywhere, everywhere
    db.close()


def test_a_common_word_typed_reads_the_messages_index_once(tmp_path: Path, monkeypatch) -> None:
    """Whether a typed word is too common to rank and which messages are its newest are
    one statement: FTS5 merges a prefix's every doclist before the first row (190 ms for
    ``str*`` at 20,000 text-heavy sessions), which a count of its own paid again."""
    monkeypatch.setattr(search_module, "TYPING_RANK_LIMIT", 3)
    tree, said, titled = common_word_tree(tmp_path / "claude")
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    with statements(db.conn) as asked:
        for typed in ("wom", "wombat"):  # a prefix, then the whole word
            asked.clear()
            outcome = run_search(db, typed, Filters(scope="all", limit=50), typing=True)
            assert outcome.newest_first
            assert [r["session_id"] for r in outcome.rows] == [titled, *said[::-1]]
            finding = [
                sql for sql in asked if "messages_fts MATCH" in sql and "snippet(" not in sql
            ]
            assert len(finding) == 1, finding
    db.close()


def test_a_typed_word_whose_metadata_hits_fill_the_page_does_not_read_messages(
    tmp_path: Path, monkeypatch
) -> None:
    """A typed word in the titles or prompts of more than TYPING_RANK_LIMIT sessions is
    in more messages still; their sessions would come after every metadata hit, which
    fill the page: the page is those, without the messages' doclists merged (190 ms for
    "str" at 20,000 text-heavy sessions). A larger page, which the metadata hits do not
    fill, still lists the newest sessions that only said it after them."""
    monkeypatch.setattr(search_module, "TYPING_RANK_LIMIT", 2)
    tree = ConfigTree(tmp_path / "claude")
    named = []
    for day in range(4):
        s = tree.session(cwd=f"/w/n{day}")
        s.user(f"wombat census, part {day}")
        s.assistant("wombat " * (day + 1))
        s.write(mtime=BASE + day * DAY)
        named.append(s.session_id)
    said = []
    for day in range(3):
        s = tree.session(cwd=f"/w/s{day}")
        s.user("what lives here?")
        s.assistant("a wombat")
        s.write(mtime=BASE + (10 + day) * DAY)
        said.append(s.session_id)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    with statements(db.conn) as asked:
        for typed in ("wom", "wombat"):
            asked.clear()
            page = run_search(db, typed, Filters(scope="all", limit=3), typing=True)
            finding = [
                sql for sql in asked if "messages_fts MATCH" in sql and "snippet(" not in sql
            ]
            assert finding == []
            whole = run_search(db, typed, Filters(scope="all", limit=50), typing=True)
            ids = [r["session_id"] for r in whole.rows]
            assert [r["session_id"] for r in page.rows] == ids[:3]
            assert set(ids[:4]) == set(named) and set(ids[4:]) == set(said)
    db.close()


@pytest.mark.parametrize("rank_limit", [2, 3, 4, 5])
def test_how_many_sessions_metadata_hold_a_typed_word_is_read_from_its_ranking(
    tmp_path: Path, monkeypatch, rank_limit: int
) -> None:
    """Whether more than TYPING_RANK_LIMIT sessions' metadata hold a typed word is
    learnt by reading the metadata ranking on past its page, not by a count statement
    of its own, which made FTS5 merge a prefix's doclists again (8 ms of "str"'s 52 at
    20,000 text-heavy sessions). The answer is the count's: four sessions named by the
    word are more than 2 and 3, not more than 4 or 5, whose messages are then read."""
    monkeypatch.setattr(search_module, "TYPING_RANK_LIMIT", rank_limit)
    monkeypatch.setattr(search_module, "FIRST_CUT", 1)  # batches of two rows: read on
    tree = ConfigTree(tmp_path / "claude")
    named = []
    for day in range(4):
        s = tree.session(cwd=f"/w/n{day}")
        s.user(f"wombat census, part {day}")
        s.assistant("a wombat")
        if day == 0:  # the best, alone: the page of one is certain after two rows
            s.meta("custom-title", customTitle="Wombat")
        s.write(mtime=BASE + day * DAY)
        named.append(s.session_id)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    for typed in ("wom", "wombat"):
        with statements(db.conn) as asked:
            page = run_search(db, typed, Filters(scope="all", limit=1), typing=True)
        assert [r["session_id"] for r in page.rows] == [named[0]]
        counted = [sql for sql in asked if "OFFSET" in sql]
        assert counted == []
        ranked = [sql for sql in asked if "session_search_fts MATCH" in sql and "bm25(" in sql]
        assert len(ranked) == 1
        messages = [sql for sql in asked if "messages_fts MATCH" in sql]
        match = SQLITE.all_of(query_terms(typed, SQLITE)[0])
        more = search_module._matches_more_than(db, match, rank_limit, "session_search_fts")
        assert more == (rank_limit < 4)
        assert (messages == []) == more
    db.close()


def test_the_newest_answer_marks_each_sessions_newest_matching_message(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(search_module, "TYPING_RANK_LIMIT", 1)
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/a")
    s.user("what lives here?")
    s.assistant("the first platypus")
    s.user("and then?")
    s.assistant("the last platypus")
    s.user("thanks")
    s.write(mtime=BASE)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    rows = run_search(db, "platypus", Filters(scope="all", limit=50), typing=True).rows
    assert len(rows) == 1 and "last [platypus]" in rows[0]["snippet"]
    db.close()


def test_a_cold_build_numbers_messages_oldest_session_first(tmp_path: Path) -> None:
    """Project dirs and session IDs sort against the sessions' age; message rowids still
    follow the transcripts' last writes, and each subagent follows its own session."""
    tree = ConfigTree(tmp_path / "claude")
    made = []
    for age in range(5):
        s = tree.session(cwd=f"/w/z{9 - age}")
        s.user(f"session of age {age}")
        if age == 2:
            sub = s.subagent(agent_id="a1", tool_use_id="toolu_1")
            sub.user("the subagent's task")
        s.write(mtime=BASE + age * DAY)
        made.append(s.session_id)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    order = [
        sid
        for (sid,) in db.execute(
            "SELECT s.session_id FROM messages m JOIN sessions s ON s.id = m.session_rowid"
            " ORDER BY m.id"
        )
    ]
    firsts = list(dict.fromkeys(order))
    assert firsts == made
    kinds = [k for (k,) in db.execute("SELECT f.kind FROM files f ORDER BY f.id")]
    assert kinds.index("subagent") == 3  # right after its main, the third session
    db.close()


def test_equal_scores_come_in_one_order_however_the_index_was_built(tmp_path: Path) -> None:
    """Sessions with the same words and the same last activity tie on score and
    recency; a live index (sessions added one refresh at a time, newest first) and a
    cold build order them alike: by session ID."""
    tree = ConfigTree(tmp_path / "claude")
    sessions = []
    for i in range(4):
        s = tree.session(cwd=f"/w/{i}", start="2026-03-01T00:00:00.000Z")
        s.user("identical echidna words")
        sessions.append(s)
    live = open_db(tmp_path / "live.db")
    for i, s in enumerate(reversed(sessions)):
        s.write(mtime=BASE + i)
        refresh(live, [tree.root])
    cold = open_db(tmp_path / "cold.db")
    refresh(cold, [tree.root])
    answers = [[r["session_id"] for r in search(db, "echidna", ALL)] for db in (live, cold)]
    assert answers[0] == answers[1] == sorted(s.session_id for s in sessions)
    live.close()
    cold.close()


@pytest.mark.parametrize(("rank_limit", "spread_found"), [(100, True), (1, False)])
def test_typed_words_spread_over_messages_are_left_out_only_when_common(
    tmp_path: Path, monkeypatch, rank_limit: int, spread_found: bool
) -> None:
    """Two words in one reply, or in two replies of a session: `search` finds both
    sessions; typed, a query with a word too common to rank keeps to the first."""
    monkeypatch.setattr(search_module, "TYPING_RANK_LIMIT", rank_limit)
    tree = ConfigTree(tmp_path / "claude")
    together = tree.session(cwd="/w/a")
    together.user("what now?")
    together.assistant("the numbat burrow is flooded")
    together.assistant("the numbat burrow again")
    together.user("ok")
    together.write(mtime=BASE)
    spread = tree.session(cwd="/w/b")
    spread.user("what now?")
    spread.assistant("a numbat was seen")
    spread.assistant("and a burrow nearby")
    spread.user("ok")
    spread.write(mtime=BASE + DAY)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    page = Filters(scope="all", limit=50)
    both = {together.session_id, spread.session_id}
    assert {r["session_id"] for r in search(db, "numbat burrow", page)} == both
    typed = {r["session_id"] for r in run_search(db, "numbat burrow", page, typing=True).rows}
    assert typed == (both if spread_found else {together.session_id})
    db.close()
