"""The typo fallback (semantics §4) and the name suggestions (semantics §3.3): a real typo
of a word of a title, name, tag or branch finds its session, and nothing else does.

The word cutoff of 70 offered unrelated titles: ``looping`` scored 73 against the word
``long`` (its letters in order) and found "long summary of the release" (helper 401)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlite_utils import Database

from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.query.filters import Filters
from sessiondex.query.resolve import NotFound, resolve
from sessiondex.query.search import FUZZY, run_search
from tests.builders import ConfigTree

CWD = "/w/typos"

#: name → (title, first prompt, git branch, agent name, tag). The prompts hold no word a
#: query below is a typo of, so each query has one session to find.
SESSIONS: dict[str, tuple[str | None, str, str, str | None, str | None]] = {
    "stripe": ("Stripe webhook signature mismatch", "check it in prod", "main", None, None),
    "auth": ("Refactor authentication middleware", "tidy the code", "main", None, None),
    "agent": (None, "look over my diff", "main", "reviewer", None),
    "branch": (None, "next page token", "feature/pagination-cursor", None, None),
    "tag": ("A tagged one", "ship now", "main", None, "hotfix"),
    "db": ("Database migration rollback", "undo it", "main", None, None),
    "cafe": ("Café menu", "prices", "main", None, None),
    "l10n": ("Localization of checkout", "strings", "main", None, None),
    "long": ("long summary of the release", "notes", "main", None, None),
    "debug": ("Debug logging for the worker", "verbose", "main", None, None),
    "stats": ("Usage statistics dashboard", "charts", "main", None, None),
    "transform": ("Transform pipeline", "etl", "main", None, None),
    "zh": ("数据库连接问题", "慢", "main", None, None),
    "ja": ("データベース接続エラー", "遅い", "main", None, None),
    "ru": ("Исправить авторизацию", "вход", "main", None, None),
}


@pytest.fixture(scope="module")
def typo_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Database, dict[str, str], Path]:
    tmp = tmp_path_factory.mktemp("typos")
    tree = ConfigTree(tmp / "claude")
    ids: dict[str, str] = {}
    for day, (name, (title, prompt, branch, agent, tag)) in enumerate(SESSIONS.items(), 1):
        s = tree.session(cwd=CWD, git_branch=branch, start=f"2026-11-{day:02d}T10:00:00.000Z")
        s.user(prompt)
        if title:
            s.meta("custom-title", customTitle=title)
        if agent:
            s.meta("agent-name", agentName=agent)
        if tag:
            s.meta("tag", tag=tag)
        s.write()
        ids[s.session_id] = name
    db = open_db(tmp / "i.db")
    refresh(db, [tree.root])
    return db, ids, tree.root


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        ("strpie", "stripe"),  # transposed letters, 6 letters, a title
        ("webhok", "stripe"),  # a letter missing
        ("signatrue", "stripe"),  # transposed, 9 letters
        ("mismatchh", "stripe"),  # a letter extra
        ("refactro", "auth"),
        ("midleware", "auth"),  # missing, 10 letters
        ("authentcaton", "auth"),  # two missing in a 14-letter word
        ("reveiwer", "agent"),  # an agent name
        ("reviewr", "agent"),
        ("paginaton", "branch"),  # a branch's word
        ("cursro", "branch"),
        ("hotfx", "tag"),  # a tag, 5 letters
        ("migartion", "db"),
        ("rollbak", "db"),
        ("mneu", "cafe"),  # transposed, 4 letters
        ("mwnu", "cafe"),  # a wrong letter, 4 letters
        ("localisation", "l10n"),  # a wrong letter, 12 letters
        ("strpie webhok", "stripe"),  # every word a typo
        ("Strpie-Webhok!", "stripe"),  # case and punctuation aside, as FTS matching
        ("dashbaord", "stats"),
        ("pipelien", "transform"),
        ("авторизацыю", "ru"),  # a wrong letter, Cyrillic
        # CJK runs words together: a typo of any stretch of the text
        ("数据库链接", "zh"),  # a wrong character
        ("データベス", "ja"),  # a character missing
    ],
)
def test_a_typo_finds_its_session_alone(
    typo_index: tuple[Database, dict[str, str], Path], query: str, wanted: str
) -> None:
    db, ids, _ = typo_index
    outcome = run_search(db, query, Filters(scope="all"))
    assert outcome.kind == FUZZY
    assert [ids[r["session_id"]] for r in outcome.rows] == [wanted]


@pytest.mark.parametrize(
    "query",
    [
        "looping",  # "long" holds its letters in order (ratio 73)
        "bug",  # a short word inside a longer one ("Debug")
        "lease",  # a shorter word inside a title's ("release")
        "station",  # a shared prefix only ("statistics")
        "transfer",  # "transform": two edits in 8 letters
        "authority",  # "authentication": a shared prefix only
        "pageant",  # "pagination"
        "strpie xylophone",  # one word of two
        "sumary relaese zebra",
        "数据分析",  # two characters of four in common
        "连结",  # two characters: no edit allowed
    ],
)
def test_an_unrelated_word_finds_no_session(
    typo_index: tuple[Database, dict[str, str], Path], query: str
) -> None:
    db, ids, _ = typo_index
    outcome = run_search(db, query, Filters(scope="all"))
    fuzzy = [ids[r["session_id"]] for r in outcome.rows if r.get("matched_by") == "fuzzy"]
    assert fuzzy == []


@pytest.mark.parametrize(
    ("arg", "suggested"),
    [
        ("Stripe webhok signature mismatch", ["Stripe webhook signature mismatch"]),
        ("refactor authentcation", ["Refactor authentication middleware"]),
        ("database", ["Database migration rollback"]),  # a word of the name
        ("looping", []),
        ("bug", []),
        ("transfer pipeline", []),
    ],
)
def test_a_name_not_found_suggests_by_the_same_rule(
    typo_index: tuple[Database, dict[str, str], Path], arg: str, suggested: list[str]
) -> None:
    db, _, root = typo_index
    with pytest.raises(NotFound) as caught:
        resolve(db, arg, cwd=CWD, roots=[root])
    assert caught.value.suggestions == suggested
