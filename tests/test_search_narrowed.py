"""A search of words spread over several messages ranks the other words' matches only in
the sessions holding the rarest one (query/search.py ``_each_term_best``). That must be
a shortcut, never a different answer: every search here is run both ways (the shortcut
turned off by ``RANK_WITHIN = 0``) and the answers compared row by row, score included.

The sessions are made from a small vocabulary with a fixed seed, so that words are
spread over prompts, answers, titles and branches, some common to most sessions, some
rare, and some sessions hold every word of a query only across several messages."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.query import search as search_module
from sessiondex.query.filters import Filters
from sessiondex.query.search import run_search
from tests.builders import ConfigTree
from tests.helpers_index import statements

COMMON = ["the", "retry", "upload", "handler", "config", "test"]
RARE = ["zephyr", "quartz", "marrow", "fjord", "lumen"]
VOCABULARY = COMMON + RARE


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tree = ConfigTree(tmp_path_factory.mktemp("narrowed") / "claude")
    pick = random.Random(7)
    for n in range(40):
        session = tree.session(cwd=f"/w/project-{n % 4}", git_branch=f"feature/{pick.choice(RARE)}")
        if n % 5 == 0:
            session.meta("custom-title", customTitle=f"{pick.choice(VOCABULARY)} notes")
        for _ in range(pick.randint(1, 4)):
            words = pick.sample(COMMON, 3) + pick.sample(RARE, pick.choice([0, 0, 1]))
            session.user(" ".join(words) + " please")
            session.assistant(" ".join(pick.choices(VOCABULARY, k=pick.randint(2, 12))))
        session.write()
    db = open_db(tmp_path_factory.mktemp("narrowed-db") / "i.db")
    refresh(db, [tree.root])
    return db


def _both_ways(db: Any, query: str, monkeypatch: pytest.MonkeyPatch, **filters: Any) -> None:
    answers = []
    for rank_within in (search_module.RANK_WITHIN, 0):
        monkeypatch.setattr(search_module, "RANK_WITHIN", rank_within)
        outcome = run_search(db, query, Filters(**filters))
        answers.append(
            (
                outcome.kind,
                [
                    (r["session_id"], round(r["score"], 9), r["snippet"], r["matched_by"])
                    for r in outcome.rows
                ],
            )
        )
    assert answers[0] == answers[1], query


@pytest.mark.parametrize(
    "query",
    [
        "the retry",  # common words, together and apart
        "zephyr retry",  # a rare word narrows
        "zephyr quartz the",  # two rare words: often held only apart
        "marrow upload handler config",
        "fjord lumen zephyr quartz marrow",  # rarely all in one session
        "the retry upl",  # the last word as a prefix
        "notes zephyr",  # a title word
        "feature fjord",  # a branch
        "absentword the",  # held by no session: the partial answer
    ],
)
@pytest.mark.parametrize("limit", [50, 3])
def test_the_narrowed_ranking_answers_as_ranking_every_match(
    index: Any, query: str, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    _both_ways(index, query, monkeypatch, scope="all", limit=limit)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(st.sampled_from(VOCABULARY + ["absentword"]), min_size=2, max_size=5),
    limit=st.sampled_from([1, 5, 50]),
)
def test_any_query_of_the_vocabulary_answers_alike(
    index: Any, words: list[str], limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    _both_ways(index, " ".join(words), monkeypatch, scope="all", limit=limit)


def test_the_scope_narrows_before_the_sessions_do(
    index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holders of the rarest word are taken within the scope: a session of another
    project holding it must not let one of this project through."""
    for query in ("zephyr retry", "quartz the config", "lumen fjord"):
        _both_ways(index, query, monkeypatch, scope="worktree", cwd="/w/project-1", limit=50)


def _statements(index: Any, query: str) -> list[str]:
    """The SQL a search for ``query`` (every project, a page of 50) runs."""
    with statements(index.conn) as asked:
        run_search(index, query, Filters(scope="all", limit=50))
    return asked


def test_the_shortcut_is_taken(index: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a test that compares a path with itself: the narrowed ranking is what runs
    for a query with a rare word (the common word is ranked in few sessions)."""
    asked = _statements(index, "zephyr retry")
    assert any("s.id IN (" in sql and "min(f.rank)" in sql for sql in asked)


def test_the_narrowed_matches_are_dropped_before_their_lookups(index: Any) -> None:
    """FTS5 walks a common word's every match even when it is ranked in a few sessions;
    each match of another session must be dropped by its rowid, against the list of
    those sessions' messages, before the lookups in ``messages`` and ``sessions`` that
    tested it by its session (``the`` in 101 of the text-heavy bench's 2,000 sessions:
    33 → 23 ms; ``fix``: 22 → 9). Read from the plans: the list is searched, by the
    messages' session index, before ``m`` is."""
    asked = _statements(index, "zephyr retry")
    narrowed = [sql for sql in dict.fromkeys(asked) if "s.id IN (" in sql and "min(f.rank)" in sql]
    assert narrowed
    for sql in narrowed:
        plan = [row[3] for row in index.conn.execute("EXPLAIN QUERY PLAN " + sql)]
        listed = next(i for i, step in enumerate(plan) if "messages_session" in step)
        assert listed < plan.index("SEARCH m USING INTEGER PRIMARY KEY (rowid=?)"), plan


@pytest.mark.parametrize("query", ["zephyr retry", "quartz the config"])
def test_the_metadata_of_a_common_word_is_ranked_in_the_narrowed_sessions_only(
    index: Any, query: str
) -> None:
    """Narrowed, only the sessions holding the rarest word can be answered, so the
    other words' metadata is ranked in those alone, as their messages are: every
    session's for ``the`` was 76 ms of a 0.97 s search at 20,000 sessions (``fix the
    api_client``, 18 of them narrowed to), 2 ms so. The rarest word's own metadata is
    still asked whole: its sessions are the ones narrowed to."""
    asked = _statements(index, query)
    named = [sql for sql in asked if "session_search_fts MATCH" in sql and "bm25" in sql]
    rarest, *others = query.split()
    for word in others:
        ranked = [sql for sql in named if f'MATCH \'"{word}"' in sql]
        assert ranked and all("+f.rowid IN (" in sql for sql in ranked), ranked
        for sql in ranked:
            plan = [row[3] for row in index.conn.execute("EXPLAIN QUERY PLAN " + sql)]
            assert not [step for step in plan if "VIRTUAL TABLE INDEX 0:=" in step], plan
    assert [sql for sql in named if f'MATCH \'"{rarest}"' in sql]


def test_fts5_drives_every_narrowed_join(tmp_path: Any) -> None:
    """Narrowed to the sessions holding the rarest word (``s.id IN (…)``), SQLite chose
    to start from those sessions and probe FTS5 for each of their messages by rowid
    (``VIRTUAL TABLE INDEX 0:=M1``), walking a common word's doclist once per message: a
    plain question took seconds against one long session (helper 127). FTS5 must be
    the outer loop of every statement the search runs, as the plans say."""
    tree = ConfigTree(tmp_path / "claude")
    long = tree.session(cwd="/w/app")
    long.user("the kubernetes deploy keeps failing")
    for step in range(200):
        long.user(f"step {step}: the test is still failing")
        long.assistant(f"looked at step {step}; the fixture was stale")
    long.write()
    for _ in range(5):
        short = tree.session(cwd="/w/app")
        short.user("the test is failing again")
        short.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    with statements(db.conn) as asked:
        outcome = run_search(db, "the test is still failing kubernetes", Filters(scope="all"))
    assert [r["session_id"] for r in outcome.rows] == [long.session_id]
    joins = [sql for sql in dict.fromkeys(asked) if "messages_fts f" in sql and "JOIN" in sql]
    assert any("s.id IN (" in sql for sql in joins)  # the narrowed statements ran
    for sql in joins:
        plan = [row[3] for row in db.conn.execute("EXPLAIN QUERY PLAN " + sql)]
        probes = [step for step in plan if "VIRTUAL TABLE INDEX 0:=" in step]
        assert not probes, (sql, plan)


def _page(db: Any, query: str, limit: int | None) -> tuple[str, list[tuple[str, float, str]]]:
    outcome = run_search(db, query, Filters(scope="all", limit=limit))
    rows = [(r["session_id"], round(r["score"], 9), r["matched_by"]) for r in outcome.rows]
    return outcome.kind, rows


def _count_each_term_best(monkeypatch: pytest.MonkeyPatch, query: str) -> list[str]:
    """The calls that rank each word alone (``_each_term_best``), one ``query`` each."""
    calls: list[str] = []
    each_term_best = search_module._each_term_best

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(query)
        return each_term_best(*args, **kwargs)

    monkeypatch.setattr(search_module, "_each_term_best", counted)
    return calls


@pytest.mark.parametrize("query", ["the retry", "handler config", "the retry upl", "config test"])
def test_a_page_filled_by_rows_holding_every_word_ranks_no_word_alone(
    index: Any, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sessions holding the words only apart come after every session that holds them in
    one row, so once those fill the page no apart session can be on it: ranking each
    word's every match for them was most of a plain question's time (``database
    connection``, 0.64 s at 20,000 sessions, for a page it could not change)."""
    kind, everything = _page(index, query, None)
    assert kind == "match" and len(everything) > 3
    calls = _count_each_term_best(monkeypatch, query)
    assert _page(index, query, 3) == (kind, everything[:3])
    assert calls == []


@pytest.mark.parametrize("limit", [3, 5])
def test_a_spelling_does_not_rank_words_alone_for_a_page_already_filled(
    tmp_path: Any, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query with a spelling (``cache_key``) asks for LITERAL_CANDIDATES sessions, not
    the page, so that one writing it below the page can rise. The sessions holding the
    words only apart still come after every one holding them in one row, spelling or
    not: once those fill the page, ranking each word alone cannot change it. Asked of
    the pool instead, it ran whenever fewer than 200 sessions held every word together:
    `fix the cache_key handler` 200 ms against 70 ms for `fix the cache key handler` on
    the text-heavy bench's 2,000 sessions, most of it ranking `the` alone."""
    tree = ConfigTree(tmp_path / "claude")
    for n in range(5):  # every word in one message, some writing the identifier
        s = tree.session(cwd="/w/app", start=f"2026-11-{n + 1:02d}T10:00:00.000Z")
        spelled = "cache_key" if n % 2 else "cache key"
        s.user(f"fix the {spelled} handler, it drops entries {n}")
        s.assistant("looking at it")
        s.write()
    for n in range(3):  # the words only apart
        s = tree.session(cwd="/w/app", start=f"2026-11-{n + 10:02d}T10:00:00.000Z")
        s.user("fix the flaky handler")
        s.assistant("the cache_key is built from the path")
        s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    query = "fix the cache_key handler"
    kind, everything = _page(db, query, None)
    assert kind == "match" and len(everything) == 8  # the apart ones are found
    calls = _count_each_term_best(monkeypatch, query)
    assert _page(db, query, limit) == (kind, everything[:limit])
    assert calls == []
    # Not filled by them, the page still takes the apart sessions.
    assert _page(db, query, 6) == (kind, everything[:6])
    assert calls == [query]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(st.sampled_from(VOCABULARY + ["absentword"]), min_size=2, max_size=4),
    limit=st.sampled_from([1, 3, 10]),
)
def test_a_page_is_the_start_of_the_whole_answer(index: Any, words: list[str], limit: int) -> None:
    """Whatever tier fills it, a page of ``limit`` sessions is the first ``limit`` of the
    answer without a limit, scores included."""
    query = " ".join(words)
    kind, everything = _page(index, query, None)
    assert _page(index, query, limit) == (kind, everything[:limit])


@pytest.mark.parametrize("query", ["zephyr quartz the", "fjord lumen retry upload"])
def test_the_rarer_words_narrow_together_below_the_cap(
    index: Any, query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rarest word of a plain question can be held by more sessions than
    :data:`RANK_WITHIN` while the few rare words together are held by a handful ("do" in
    1,334 of the text-heavy bench's 20,000 sessions, "how do i ... failing" in far
    fewer): the other rare words' holders, found unranked, narrow the sessions before
    the cap is asked, and the common words are then ranked in those alone (a page of 50
    of that question: 3.1 -> 0.9 s). Run here with the cap just under the rarest word's
    holders."""

    def holders(word: str) -> set[str]:
        outcome = run_search(index, word, Filters(scope="all", limit=None))
        return {r["session_id"] for r in outcome.rows}

    rare = [word for word in query.split() if word in RARE]
    fewest = min(len(holders(word)) for word in rare)
    together = set.intersection(*(holders(word) for word in rare))
    assert 0 < len(together) < fewest - 1  # the premise: together they narrow further
    monkeypatch.setattr(search_module, "RANK_WITHIN", fewest - 1)
    with statements(index.conn) as asked:
        run_search(index, query, Filters(scope="all", limit=50))
    assert any("s.id IN (" in sql and "min(f.rank)" in sql for sql in asked)
    _both_ways(index, query, monkeypatch, scope="all", limit=50)
    _both_ways(index, query, monkeypatch, scope="all", limit=2)


@pytest.mark.parametrize(
    "query",
    [
        "absentword zephyr quartz the",  # three of four at most: few sessions
        "absentword the retry",  # common words: most sessions hold both
        "absentword fjord lumen marrow",
        "absentword otherabsent zephyr retry",  # two words no session holds
        "absentword notes feature",  # a title's and a branch's word
        "absentword zep",  # the last word as a prefix
    ],
)
@pytest.mark.parametrize("limit", [1, 2, 3, 7, 50, None])
@pytest.mark.parametrize("cwd", [None, "/w/project-2"])
def test_a_partial_page_ranks_its_sessions_alike(
    index: Any, query: str, limit: int | None, cwd: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No session holds every word: only the sessions holding the most words, enough to
    fill the page, are ranked (``_partial_page``), and the answer is the one ranking
    every match gives, ties at the page's last count of words included."""
    scope = {"scope": "all"} if cwd is None else {"scope": "worktree", "cwd": cwd}
    _both_ways(index, query, monkeypatch, limit=limit, **scope)


def test_a_partial_page_ranks_no_word_everywhere(index: Any) -> None:
    """A partial answer's page of 50 (of 40 sessions) or of 1 ranks each word in its
    sessions only: no ranked statement without the sessions' list, as ranking every match
    of every word was (``what is the best way to handle errors``: 4.5 s at 20,000
    text-heavy sessions)."""
    for query in ("absentword the retry", "absentword zephyr quartz the"):
        for limit in (1, 50):
            with statements(index.conn) as asked:
                outcome = run_search(index, query, Filters(scope="all", limit=limit))
            assert outcome.kind == "partial"
            # Each held word's ranking; the word no session holds (alone, and with the
            # others together) is ranked before, an empty match.
            ranked = [
                sql
                for sql in asked
                if ("min(f.rank)" in sql or "bm25(" in sql)
                and 'MATCH \'"absentword"' not in sql
                and not sql.startswith("--")  # FTS5's own, within a statement
            ]
            assert ranked, query
            assert all("s.id IN (" in sql or "f.rowid IN (" in sql for sql in ranked), (
                query,
                limit,
            )


def _per_match(self: Any, where: str, activity: str, rows: str = "1") -> str:
    """The ranking statement as it was before the scope was checked once per session:
    ``where`` tested on each match, the reference the new statement must agree with."""
    return (
        f"SELECT m.session_rowid, min(f.rank) AS score, f.rowid, {activity} AS activity"
        " FROM messages_fts f CROSS JOIN messages m ON m.id = f.rowid"
        " CROSS JOIN sessions s ON s.id = m.session_rowid"
        f" WHERE messages_fts MATCH ? AND {where} AND {rows} GROUP BY m.session_rowid"
        " ORDER BY score, activity DESC LIMIT ?"
    )


@pytest.mark.parametrize(
    "query",
    ["the retry", "zephyr retry", "marrow upload handler config", "absentword the", "retry"],
)
@pytest.mark.parametrize("scope", [{"scope": "all"}, {"scope": "worktree", "cwd": "/w/project-2"}])
@pytest.mark.parametrize("limit", [None, 5])
def test_the_scope_checked_once_per_session_answers_as_checked_per_match(
    index: Any, monkeypatch: pytest.MonkeyPatch, query: str, scope: dict[str, Any], limit: Any
) -> None:
    """Each word ranked in every session (the words apart, a partial answer, no limit)
    checks the scope once per session, after each session's best message is found, not
    on each match: ``retry upload handler`` at 20,000 text-heavy sessions tested the
    scope's correlated subqueries on each of 126,000 matches. A session's best message
    is the same either way (the scope depends on the session alone), so is the answer."""
    from sessiondex.query.dialect import SqliteDialect

    answers = []
    for statement in (SqliteDialect.message_hits_sql, _per_match):
        monkeypatch.setattr(SqliteDialect, "message_hits_sql", statement)
        outcome = run_search(index, query, Filters(limit=limit, **scope))
        rows = [(r["session_id"], round(r["score"], 9), r["snippet"]) for r in outcome.rows]
        answers.append((outcome.kind, rows))
    assert answers[0] == answers[1]
    assert answers[0][1]  # each query answers something in each scope


def test_the_scope_of_a_ranking_is_checked_after_grouping(index: Any) -> None:
    """The scope's correlated subqueries are asked once per session that holds a match,
    after the matches are grouped (outside the co-routine that scans FTS5), and the
    sessions are only ever looked up by rowid: not on each match (126,000 times for
    ``retry`` at 20,000 sessions), and not as a list of every session in scope built
    first (2.3 ms of a rare word's 4 at 2,000 sessions), as the plans say."""
    asked = _statements(index, "the retry zephyr")
    ranked = [sql for sql in dict.fromkeys(asked) if "min(f.rank)" in sql]
    assert ranked
    for sql in ranked:
        plan = {row[0]: (row[1], row[3]) for row in index.conn.execute("EXPLAIN QUERY PLAN " + sql)}
        fts_scans = [step for step, (_, detail) in plan.items() if detail.startswith("SCAN f ")]
        assert fts_scans and all(
            any(a.startswith(("CO-ROUTINE g", "MATERIALIZE g")) for a in _ancestors(plan, step))
            for step in fts_scans
        ), plan  # the matches grouped first
        correlated = [step for step, (_, detail) in plan.items() if "CORRELATED" in detail]
        assert correlated, plan  # the scope's own (a fork's newer copy, ...)
        for step in correlated:
            assert not any(a.endswith(" g") for a in _ancestors(plan, step)), plan
        assert not any(detail.startswith("SCAN s") for _, detail in plan.values()), plan


NARROW_FILTERS = [
    {"scope": "worktree", "cwd": "/w/project-3"},
    {"scope": "repo", "cwd": "/w/project-1"},
    {"scope": "all", "branch": "feature/zephyr"},
]


def _rows(index: Any, query: str, filters: Filters) -> tuple[str, list[Any]]:
    outcome = run_search(index, query, filters)
    return outcome.kind, [(r["session_id"], r["score"], r["snippet"]) for r in outcome.rows]


@pytest.mark.parametrize("rank_within", [1000, 3])  # 3: the scope too wide to rank alone
@pytest.mark.parametrize("rarity_cap", [5000, 1])  # 1: every word common, none to narrow by
@pytest.mark.parametrize("narrowing", NARROW_FILTERS)
def test_a_narrow_scope_ranked_alone_answers_as_the_whole_ranking(
    index: Any,
    monkeypatch: pytest.MonkeyPatch,
    rank_within: int,
    rarity_cap: int,
    narrowing: dict[str, str],
) -> None:
    """A narrow scope (a worktree, a repository, a branch) is ranked in its own sessions
    before the ranking of every match (``the`` in a 7-session project at 2,000 text-heavy
    sessions: 155 ms ranked everywhere, 36 ms so), and a ranking of every match that has
    read ``NARROW_AFTER`` rows without filling its page switches to it: each gives the
    page, scores and snippets the whole ranking gives, whether it answers or the scope is
    too wide for it (None). Words all common, held apart, are ranked in the scope's
    sessions too (``_ranked_within``)."""
    monkeypatch.setattr(search_module, "RANK_WITHIN", rank_within)
    monkeypatch.setattr(search_module, "RARITY_CAP", rarity_cap)
    monkeypatch.setattr(search_module, "FIRST_CUT", 1)  # small batches: a few rows each
    answered: list[bool] = []
    scope_page, ranked_within = search_module._scope_page, search_module._ranked_within
    within: list[str] = []

    def spy(*args: Any) -> Any:
        page = scope_page(*args)
        answered.append(page is not None)
        return page

    def spy_within(*args: Any) -> Any:
        within.append(args[1])
        return ranked_within(*args)

    monkeypatch.setattr(search_module, "_scope_page", spy)
    monkeypatch.setattr(search_module, "_ranked_within", spy_within)
    narrows = Filters.narrows
    for query in ("the", "retry", "the retry", "upload handler config", "zephyr", "the zephyr"):
        for limit in (1, 3, 8, 50):
            filters = Filters(limit=limit, **narrowing)
            monkeypatch.setattr(Filters, "narrows", lambda self: False)
            monkeypatch.setattr(search_module, "NARROW_AFTER", 10**9)
            whole = _rows(index, query, filters)  # the whole ranking, never narrowed
            monkeypatch.setattr(search_module, "NARROW_AFTER", 1)
            switched = _rows(index, query, filters)  # narrowed after the first batch
            monkeypatch.setattr(Filters, "narrows", narrows)
            first = _rows(index, query, filters)  # narrowed before ranking
            assert whole == switched == first, (query, limit, narrowing)
            assert whole[1], (query, limit, narrowing)
    assert answered and all(answered) == (rank_within == 1000), answered
    # Words held apart, every one too common to narrow by: ranked in the scope's sessions
    # (as the narrowed rankings rank theirs, so with a rare word it is asked too).
    if rank_within == 1000 and rarity_cap == 1:
        assert within


@pytest.mark.parametrize("narrowing", NARROW_FILTERS)
@pytest.mark.parametrize("query", ["the", "the retry", "upload handler config"])
def test_a_common_word_in_a_narrow_scope_is_never_ranked_everywhere(
    index: Any, narrowing: dict[str, str], query: str
) -> None:
    """What the shortcut is for: no statement ranks every match of a word in the
    messages (``MATCH ? ORDER BY rank``) or the sessions' metadata (``ORDER BY score``),
    or reads its newest matches (``ORDER BY rowid DESC``), with no filter on the
    sessions, when the scope's sessions are few; typed or not. (Counting the sessions
    whose metadata holds a typed word, up to 5,000, is a walk of rowids: allowed.)"""
    for typing in (False, True):
        with statements(index.conn) as asked:
            outcome = run_search(index, query, Filters(limit=3, **narrowing), typing=typing)
        assert outcome.rows
        everywhere = [
            sql
            for sql in asked
            if ("ORDER BY rank" in sql and "s.id IN (" not in sql)
            or ("ORDER BY score" in sql and "f.rowid IN (" not in sql)
            or ("ORDER BY rowid DESC" in sql and "LIMIT 1 OFFSET" not in sql)
        ]
        assert not everywhere, (typing, everywhere)
    assert any("s.id IN (" in sql for sql in asked)


def _ancestors(plan: dict[int, tuple[int, str]], step: int) -> list[str]:
    """The details of the steps of an ``EXPLAIN QUERY PLAN`` that hold ``step``."""
    chain = []
    while step in plan:
        step = plan[step][0]
        if step in plan:
            chain.append(plan[step][1])
    return chain


def _counted_by_finding(db: Any, query: str, filters: Filters) -> dict[str, int]:
    """What the wider scopes' counts were before they were counted without ranking:
    the sessions :func:`_find` finds there, with no limit."""
    terms, _ = search_module.query_terms(query, search_module.dialect_of(db))
    counts = {}
    for scope in {"worktree": ("repo", "all"), "repo": ("all",)}[filters.scope]:
        where, params = replace(filters, scope=scope, limit=None).where(db)
        counts[scope] = len(search_module._find(db, terms, where, params, -1)[0])
    return counts


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(st.sampled_from(VOCABULARY + ["absentword", "upl"]), min_size=1, max_size=4),
    project=st.sampled_from(["/w/project-1", "/w/project-3", "/w/nowhere"]),
    scope=st.sampled_from(["worktree", "repo"]),
)
def test_the_wider_scopes_count_the_sessions_a_search_there_finds(
    index: Any, words: list[str], project: str, scope: str
) -> None:
    """A search that finds nothing in its scope says how many sessions match in the
    wider ones (``elsewhere``): counted by each word's holders, with no match ranked
    (``error`` from a directory with no session, 20,000 text-heavy sessions: 1.6 s
    ranked), the number the search there finds: words in one row or apart, titles and
    branches included."""
    query = " ".join(words)
    filters = Filters(scope=scope, cwd=project, limit=50)
    terms, _ = search_module.query_terms(query, search_module.dialect_of(index))
    with statements(index.conn) as asked:
        counted = search_module._elsewhere(index, terms, filters)
    assert counted == _counted_by_finding(index, query, filters), query
    ranked = [sql for sql in asked if "rank" in sql or "bm25(" in sql]
    assert not ranked, ranked


@pytest.fixture(scope="module")
def spelled_index(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A worktree of a few sessions writing ``user_profile`` (or the prose "user
    profile"), among many more sessions of other projects writing it too."""
    tree = ConfigTree(tmp_path_factory.mktemp("spelled") / "claude")
    for n in range(6):
        s = tree.session(cwd="/w/app", start=f"2026-11-{n + 1:02d}T10:00:00.000Z")
        spelled = "user_profile" if n % 2 else "user profile"
        s.user(f"the {spelled} page breaks on save {n}")
        s.assistant(f"the {spelled} form posts twice" if n % 3 else "looking at it")
        s.write()
    for n in range(40):
        s = tree.session(cwd=f"/w/other-{n % 5}", start=f"2026-10-{n % 28 + 1:02d}T10:00:00.000Z")
        for k in range(3):
            s.user(f"user_profile user_profile cleanup {k}")
            s.assistant("user profile user_profile done")
        s.write()
    db = open_db(tmp_path_factory.mktemp("spelled-db") / "i.db")
    refresh(db, [tree.root])
    return db


@pytest.mark.parametrize("query", ["user_profile", "user_pro", "user_p", "the user_profile"])
@pytest.mark.parametrize("typing", [False, True])
@pytest.mark.parametrize("limit", [1, 3, 50])
def test_a_spelled_word_in_a_narrow_scope_ranks_in_it_alone(
    spelled_index: Any, monkeypatch: pytest.MonkeyPatch, query: str, typing: bool, limit: int
) -> None:
    """A query of one word with a spelling keeps its ranking for the literal tier
    (``_keep_ranks``): in a narrow scope it ranked every match of every project, past
    the switch to the scope's own sessions (``NARROW_AFTER``), which the other query
    shapes take first. Ranked in the scope alone, the answer is the whole ranking's,
    sessions that write the spelling first, and no statement ranks the word everywhere."""
    monkeypatch.setattr(search_module, "FIRST_CUT", 1)  # small batches: a few rows each
    filters = Filters(scope="worktree", cwd="/w/app", limit=limit)
    narrows = Filters.narrows
    monkeypatch.setattr(Filters, "narrows", lambda self: False)
    monkeypatch.setattr(search_module, "NARROW_AFTER", 10**9)
    whole = run_search(spelled_index, query, filters, typing=typing)
    monkeypatch.setattr(Filters, "narrows", narrows)
    monkeypatch.setattr(search_module, "NARROW_AFTER", 1)
    with statements(spelled_index.conn) as asked:
        narrowed = run_search(spelled_index, query, filters, typing=typing)

    def rows(outcome: Any) -> list[Any]:
        return [(r["session_id"], r["score"], r["snippet"]) for r in outcome.rows]

    assert narrowed.kind == whole.kind == "match"
    assert rows(narrowed) == rows(whole)
    assert len(narrowed.rows) == min(limit, 6)  # every session of the worktree holds it
    everywhere = [
        sql
        for sql in asked
        if ("ORDER BY rank" in sql and "s.id IN (" not in sql)
        or ("ORDER BY score" in sql and "f.rowid IN (" not in sql)
        or ("ORDER BY rowid DESC" in sql and "LIMIT 1 OFFSET" not in sql)
    ]
    assert not everywhere, everywhere
