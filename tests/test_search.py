"""search and from-pr: ranking, escaping, languages, PR URLs, typo tolerance."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiondex.cli.main import cli
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.query.filters import Filters
from sessiondex.query.search import quote_query, search
from tests.builders import ConfigTree, copy_fixtures
from tests.helpers_index import statements

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NAMES = json.loads((FIXTURES / "scenarios.json").read_text())["names"]
ALL = Filters(scope="all")


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory):
    base = tmp_path_factory.mktemp("search")
    root = copy_fixtures(base)
    db = open_db(base / "i.db")
    refresh(db, [root])
    yield db
    db.close()


def ids(rows: list[dict]) -> list[str]:
    by_id = {v: k for k, v in NAMES.items()}
    return [by_id.get(r["session_id"], r["session_id"]) for r in rows]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # Pasted PR URL variants → the linked session (links before mentions)
        ("https://github.com/acme/shop/pull/12", ["wt-feature", "shop-auth"]),
        ("github.com/acme/shop/pull/12/files", ["wt-feature", "shop-auth"]),
        ("http://GITHUB.com/acme/shop/pull/12#discussion_r1", ["wt-feature", "shop-auth"]),
        ("https://gitlab.com/acme/marketing/blog/-/merge_requests/12/diffs", ["blog-gitlab"]),
        ("github.acme.corp/web/blog/pull/7?tab=files", ["blog-ghe"]),
        ("https://bitbucket.org/acme/ledger-service/pull-requests/5/overview", ["long-bitbucket"]),
        ("https://github.com/acme/shop/pull/15", ["wt-mention"]),  # mentioned only
        # languages: Cyrillic, CJK (inside a longer run), accents folded
        ("ошибку", ["blog-unicode"]),
        ("認証", ["blog-unicode"]),
        ("バグ", ["blog-unicode"]),
        ("resume", ["blog-unicode"]),  # résumé without accents
        ("CAFÉ", ["blog-unicode"]),
    ],
)
def test_search_table(fixture_db, query: str, expected: list[str]) -> None:
    assert ids(search(fixture_db, query, ALL)) == expected


def test_pr_url_link_versus_mention(fixture_db) -> None:
    rows = search(fixture_db, "https://github.com/acme/shop/pull/15", ALL)
    assert rows[0]["snippet"].startswith("mentioned:")
    assert rows[0]["pr_links"] == [] or all(
        link["url"] != "https://github.com/acme/shop/pull/15" for link in rows[0]["pr_links"]
    )
    assert [m["url"] for m in rows[0]["pr_mentions"]] == ["https://github.com/acme/shop/pull/15"]
    linked = search(fixture_db, "https://github.com/acme/shop/pull/12", ALL)
    assert linked[0]["snippet"].startswith("linked:")


def test_title_outranks_message_text(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    body = tree.session(cwd="/w/a")
    body.user("we should talk about the quokka later")
    body.write(mtime=2_000_000_000)  # newer, but only a message hit
    titled = tree.session(cwd="/w/b")
    titled.user("something else")
    titled.meta("custom-title", customTitle="Quokka migration")
    titled.write(mtime=1_000_000_000)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    rows = search(db, "quokka", ALL)
    assert [r["session_id"] for r in rows] == [titled.session_id, body.session_id]
    assert rows[0]["score"] < rows[1]["score"]
    assert "[Quokka]" in rows[0]["snippet"]


def test_ties_are_broken_by_recency(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    made = []
    for i, start in enumerate(["2026-01-01T00:00:00.000Z", "2026-06-01T00:00:00.000Z"]):
        s = tree.session(cwd=f"/w/{i}", start=start)
        s.user("identical wombat text")
        s.write()
        made.append(s.session_id)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    assert [r["session_id"] for r in search(db, "wombat", ALL)] == made[::-1]


def test_word_in_the_50th_message_is_found(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w")
    for i in range(49):
        s.user(f"message number {i}")
        s.assistant(f"reply {i}")
    s.user("the fiftieth mentions a narwhal")
    s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    rows = search(db, "narwhal", ALL)
    assert [r["session_id"] for r in rows] == [s.session_id]
    assert "[narwhal]" in rows[0]["snippet"]


def test_typo_tolerance_finds_the_title(fixture_db) -> None:
    rows = search(fixture_db, "atuh refactr", ALL)
    assert ids(rows)[0] in ("shop-auth", "shop-fork")
    assert all(r["score"] < 0 for r in rows)


SPECIALS = [
    '"',
    '""',
    "'",
    "-",
    "--x",
    "*",
    "a*",
    "NEAR",
    "NEAR(a b)",
    "a:b",
    ":",
    "(",
    ")",
    "(a",
    "a)",
    "AND",
    "OR",
    "NOT",
    "a OR",
    "^",
    "{a}",
    "[x]",
    "\\",
    "%",
    "_",
    ";",
    "a\x00b",
    "🙂",
    "-auth",
    "auth -",
    "col:auth",
    '"unbalanced',
    "a + b",
]


@pytest.mark.parametrize("query", SPECIALS)
def test_fts_special_characters_never_raise(fixture_db, query: str) -> None:
    search(fixture_db, query, ALL)
    match = quote_query(query)
    if match:  # the escaped form is valid FTS5 syntax
        fixture_db.execute(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", [match]
        ).fetchone()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=40))
def test_any_text_query_never_raises(fixture_db, query: str) -> None:
    search(fixture_db, query, ALL)


def test_raw_syntax_error_is_exit_1_with_a_hint(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path)
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, "search", "--raw", "auth AND (", "--scope", "all"])
    assert result.exit_code == 1
    assert "drop --raw" in result.stderr and "Traceback" not in result.output
    ok = CliRunner().invoke(
        cli, [*base, "search", "--raw", "auth OR ошибку", "--scope", "all", "--json"]
    )
    assert ok.exit_code == 0 and len(json.loads(ok.stdout)) >= 2


@pytest.mark.parametrize("query", ['"', "auth AND (", "bogus:cookie"])
@pytest.mark.parametrize("scope", ["worktree", "repo"])
def test_raw_syntax_error_in_a_scope_with_no_sessions_has_the_hint(
    tmp_path: Path, query: str, scope: str
) -> None:
    """A scope with no session answers before FTS5 reads the query; the count of matches
    in the wider scopes then ran it outside the syntax-error rule, and the user read
    "the index at … failed: unterminated string" with no word of --raw (h608)."""
    root = copy_fixtures(tmp_path)
    empty = tmp_path / "no-sessions-here"
    empty.mkdir()
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(
        cli, [*base, "search", "--raw", query, "--scope", scope, "--cwd", str(empty)]
    )
    assert result.exit_code == 1, result.output
    assert "drop --raw" in result.stderr and "failed" not in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("query", "term"),
    [
        ("refac", '"refac"*'),
        ("C++", '"C++"'),  # one token, "c": no one-letter prefix
        ("c#", '"c#"'),
        ("foo.ba", '"foo.ba"'),  # the last token "ba" is too short
        ("foo.bar", '"foo.bar"*'),
        ("-x-", '"-x-"'),
        ("ab", '"ab"'),
    ],
)
def test_the_last_word_is_a_prefix_only_from_three_indexed_letters(query: str, term: str) -> None:
    """``C++`` has three characters but FTS5 indexes one of them: as a prefix it matched
    every word starting with "c", and the C++ session came last."""
    assert quote_query(query) == term


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("text:needle", {"in text"}),  # the messages' column
        ("custom_title:needle", {"in title"}),  # a session column
        ("{custom_title tag}: needle", {"in title"}),
        ("needle", {"in text", "in title"}),
        ("nosuchcolumn:needle", "error"),
    ],
)
def test_raw_column_filters_search_the_table_that_has_the_column(
    tmp_path: Path, query: str, found: object
) -> None:
    """One --raw query runs on the sessions' and the messages' FTS tables, whose columns
    differ: a valid column filter failed as "no such column" on the other one."""
    tree = ConfigTree(tmp_path / "claude")
    for title, text in (("in text", "a needle in the prose"), ("in title", "plain prose")):
        s = tree.session(cwd="/w/app")
        s.user(text)
        s.meta("custom-title", customTitle=title + (" needle" if title == "in title" else ""))
        s.write()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, "search", "--raw", query, "--scope", "all", "--json"])
    if found == "error":
        assert result.exit_code == 1 and "drop --raw" in result.stderr
        return
    assert result.exit_code == 0, result.output
    titles = {row["custom_title"].removesuffix(" needle") for row in json.loads(result.stdout)}
    assert titles == found


def test_escaped_query_keeps_operators_as_words() -> None:
    assert quote_query('auth NEAR "x') == '"auth" "NEAR" "x"'
    assert quote_query("auth refac") == '"auth" "refac"*'
    assert quote_query("ab") == '"ab"'
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    con.execute("INSERT INTO t VALUES ('the word near here')")
    assert (
        con.execute("SELECT count(*) FROM t WHERE t MATCH ?", [quote_query("NEAR")]).fetchone()[0]
        == 1
    )


def test_search_plain_markers_off_a_terminal(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path)
    result = CliRunner().invoke(
        cli,
        [
            "--config-dir",
            str(root),
            "--db",
            str(tmp_path / "i.db"),
            "search",
            "ошибку",
            "--scope",
            "all",
        ],
    )
    assert result.exit_code == 0
    assert "[ошибку]" in result.stdout and "\x1b[" not in result.stdout


# ---- from-pr -------------------------------------------------------------------------


def _git_repo(path: Path, remote: str | None) -> None:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=path, check=True)
    if remote:
        subprocess.run(["git", "remote", "add", "origin", remote], cwd=path, check=True)


@pytest.fixture
def pr_world(tmp_path: Path):
    repo = tmp_path / "shop"
    _git_repo(repo, "git@github.com:acme/shop.git")
    plain = tmp_path / "plain"
    plain.mkdir()
    tree = ConfigTree(tmp_path / "claude")
    made = {}

    def add(name: str, cwd: Path, links: list[tuple[int, str, str]], mtime: int) -> None:
        # activity follows mtime: both order "newest first"
        s = tree.session(cwd=str(cwd), start=f"2026-11-0{mtime // 100}T10:00:00.000Z")
        s.user(f"work on {name}")
        for number, url, repository in links:
            s.pr_link(number=number, url=url, repository=repository)
            s.pr_link(number=number, url=url, repository=repository)  # re-emitted
        s.write(mtime=mtime)
        made[name] = s.session_id

    add(
        "three_prs",
        repo,
        [
            (1, "https://github.com/acme/shop/pull/1", "acme/shop"),
            (2, "https://github.com/acme/shop/pull/2", "acme/shop"),
            (3, "https://github.com/acme/shop/pull/3", "acme/shop"),
        ],
        100,
    )
    add("other_repo_12", repo, [(12, "https://github.com/other/lib/pull/12", "other/lib")], 200)
    add("shop_12", repo, [(12, "https://github.com/acme/shop/pull/12", "acme/shop")], 300)
    add("plain_12", plain, [(12, "https://github.com/acme/shop/pull/12", "acme/shop")], 400)
    add("no_pr", repo, [], 500)
    return tree, repo, plain, made, tmp_path / "i.db"


@pytest.mark.parametrize(
    ("pr", "where", "expected"),
    [
        ("1", "repo", ["three_prs"]),
        ("2", "repo", ["three_prs"]),  # every PR of a session finds it (#84511)
        ("#3", "repo", ["three_prs"]),
        ("12", "repo", ["shop_12"]),  # PR #12 of other/lib is not this repository's
        ("12", "plain", ["plain_12"]),  # no remote: the number alone
        ("https://github.com/acme/shop/pull/12", "plain", ["plain_12", "shop_12"]),
        ("https://github.com/other/lib/pull/12/files", "repo", ["other_repo_12"]),
        (None, "repo", ["shop_12", "other_repo_12", "three_prs"]),
        ("99", "repo", []),
    ],
)
def test_from_pr_table(pr_world, pr: str | None, where: str, expected: list[str]) -> None:
    tree, repo, plain, made, db = pr_world
    cwd = repo if where == "repo" else plain
    args = ["--config-dir", str(tree.root), "--db", str(db), "from-pr"]
    args += ([pr] if pr else []) + ["--cwd", str(cwd), "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == (0 if expected else 1), result.output  # 1: none, as grep
    names = {v: k for k, v in made.items()}
    assert [names[r["session_id"]] for r in json.loads(result.stdout)] == expected


def test_from_pr_rejects_garbage(pr_world) -> None:
    tree, repo, _, _, db = pr_world
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tree.root), "--db", str(db), "from-pr", "abc", "--cwd", str(repo)]
    )
    assert result.exit_code == 2 and "not a PR number, URL or owner/repo#number" in result.stderr


@pytest.fixture(scope="module")
def typing_db(tmp_path_factory):
    """Titles and names starting with q (custom, ai, both old and new), q-words only in
    the text or the first prompt, and two projects."""
    tree = ConfigTree(tmp_path_factory.mktemp("typing") / "claude")
    made = {}
    specs = [  # name, cwd, prompt, custom title, ai title, mtime
        ("quarterly", "/w/a", "numbers please", "Quarterly report", None, 2_000_000_500),
        ("quick", "/w/b", "login is broken", None, "Quick fix for login", 2_000_000_400),
        ("text-only", "/w/a", "the quota exceeded error again", "Other thing", None, 2_000_000_300),
        ("prompt-only", "/w/b", "quiet please", "Unrelated", None, 2_000_000_200),
        ("mid-word", "/w/a", "nothing", "Banquet planning", None, 2_000_000_100),
        ("second-word", "/w/b", "nothing", "Fix quoting bug", None, 2_000_000_000),
        # no custom or AI title: the first prompt is the display title
        ("untitled", "/w/a", "quarantine the flaky test", None, None, 2_000_000_050),
        ("tagged", "/w/b", "nothing", "Tagged thing", None, 1_999_999_900),  # tag "qa"
    ]
    for name, cwd, prompt, custom, ai, mtime in specs:
        s = tree.session(cwd=cwd)
        s.user(prompt)
        if custom:
            s.meta("custom-title", customTitle=custom)
        if ai:
            s.meta("ai-title", aiTitle=ai)
        if name == "tagged":
            s.meta("tag", tag="qa")
        s.write(mtime=mtime)
        made[name] = s.session_id
    db = open_db(tmp_path_factory.mktemp("typing-db") / "i.db")
    refresh(db, [tree.root])
    yield db, made
    db.close()


@pytest.mark.parametrize(
    ("query", "filters", "expected"),
    [
        # one or two letters: the title shown, names, tags and branches holding a word
        # with that prefix, newest first, as Claude Code's filter (not the text, not a
        # prompt behind a custom title, not the middle of a word)
        ("q", ALL, ["quarterly", "quick", "untitled", "second-word", "tagged"]),
        ("Qu", ALL, ["quarterly", "quick", "untitled", "second-word"]),
        ("qu", Filters(scope="all", limit=1), ["quarterly"]),
        ("q", Filters(cwd="/w/b", scope="worktree"), ["quick", "second-word", "tagged"]),
        ("zz", ALL, []),  # nothing: no typo fallback while typing
        ("ü", ALL, ["prompt-only"]),  # accents folded as FTS folds them: "Unrelated"
    ],
)
def test_typing_one_or_two_letters_filters_titles_by_prefix(
    typing_db, query: str, filters: Filters, expected: list[str]
) -> None:
    from sessiondex.query.search import run_search

    db, made = typing_db
    names = {v: k for k, v in made.items()}
    outcome = run_search(db, query, filters, typing=True)
    assert [names[r["session_id"]] for r in outcome.rows] == expected
    assert [r["matched_by"] for r in outcome.rows] == [
        "text" if names[r["session_id"]] == "tagged" else "title" for r in outcome.rows
    ]
    assert all(r["score"] is None for r in outcome.rows)
    if outcome.rows:
        assert outcome.kind == "match"
        assert "[" in outcome.rows[0]["snippet"]  # the title word, marked


@pytest.mark.parametrize("query", ["quo", "quick", "q fix", "qu login", "-", "認"])
def test_typing_three_letters_or_more_is_the_full_search(typing_db, query: str) -> None:
    """From the third letter (or a second word) a query being typed is ``search``'s."""
    from sessiondex.query.search import run_search

    db, _ = typing_db
    typed = run_search(db, query, ALL, typing=True)
    plain = run_search(db, query, ALL)
    assert (typed.kind, typed.rows) == (plain.kind, plain.rows)


def test_short_queries_keep_their_search_semantics_without_typing(typing_db) -> None:
    """``search q`` (the CLI, MCP) still looks for the word, then offers typo matches."""
    from sessiondex.query.search import run_search

    db, _ = typing_db
    assert run_search(db, "qu", ALL).kind in ("fuzzy", "none")
    assert run_search(db, "qu", ALL, typing=True).kind == "match"


# ------------------------------------------- snippets of rows with thousands of matches
@pytest.mark.parametrize(
    ("match", "terms"),
    [
        ('"word"', [("word", False)]),
        ('"tim"*', [("tim", True)]),
        ('"connection" "refused"', [("connection", False), ("refused", False)]),
        ('"Café" "x"""', [("cafe", False), ("x", False)]),
        # a --raw query: its operators aside (NEAR's distance counts as a word: harmless)
        ("auth NEAR(token refresh, 5) OR ses*", [("auth", False), ("token", False),
                                                  ("refresh", False), ("5", False),
                                                  ("ses", True)]),
        # column filters name columns, not words: the typed-letters filter's, a --raw one's
        ('{custom_title ai_title shown_title} : ("s"*)', [("s", True)]),
        ("custom_title : deploy OR - {tag branches_text} : fix*", [("deploy", False),
                                                                    ("fix", True)]),
        ('title:"a b" NOT summary:c', [("a", False), ("b", False), ("c", False)]),
    ],
)  # fmt: skip
def test_match_terms(match: str, terms: list[tuple[str, bool]]) -> None:
    from sessiondex.query.snippets import match_terms

    assert match_terms(match) == terms


@pytest.mark.parametrize(
    ("text", "terms", "snippet"),
    [
        # the window starts a few tokens before the first match of the rarest term
        ("a b c d e f shard 7 g shard 1999 h", [("shard", False), ("1999", False)],
         "…g [shard] [1999] h"),
        ("word word word word", [("word", False)], "[word] [word] [word] [word]"),
        ("one two three four five six", [("thr", True)], "…two [three] four five…"),
        ("Le Café est là", [("cafe", False)], "Le [Café] est là"),
        ("nothing here", [("absent", False)], ""),
        # the index's one-character CJK tokens of a word are one marked run (helper 97),
        # and no ellipsis where only the index's padding comes before
        (" 日 本 語 の テ キ ス ト abc", [("テ", False), ("キ", False), ("ス", False), ("ト", False)],
         "…語 の [テ キ ス ト] abc"),
        (" 犬 犬 犬", [("犬", False)], " [犬 犬 犬]"),
        # the rarest as a token, not a substring: "3" is in every timestamp of a log,
        # and "worker" was taken for the rarer, its first match shown (helper 127);
        # a phrase joined by punctuation is one marked run, as FTS5 marks it
        ("10:03:33 [worker-0] 10:03:34 [worker-3] x y z",
         [("worker", False), ("3", False)], "…34 [[worker-3]] x y z"),
        ("a request_id=req-000123 b", [("request", False), ("id", False), ("req", False),
         ("000123", False)], "a [request_id=req-000123] b"),
    ],
)  # fmt: skip
def test_bounded_snippet(text: str, terms: list[tuple[str, bool]], snippet: str) -> None:
    from sessiondex.query.snippets import CLOSE, OPEN, bounded_snippet

    got = bounded_snippet(text, terms, 4 if "four" in text else 8)
    assert got.replace(OPEN, "[").replace(CLOSE, "]") == snippet


_WORDS = ["alpha", "beta", "gamma", "café", "日本", "x"]
_GAPS = [" ", "  ", ". ", ": ", ", ", " - ", "\n", ".\n", "/", ":\t", " . "]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_GAPS)), max_size=60),
    edges=st.tuples(st.sampled_from(["", " "]), st.sampled_from(["", " 🔐", "."])),
    phrases=st.lists(
        st.tuples(st.lists(st.sampled_from(_WORDS[:4]), min_size=1, max_size=2), st.booleans()),
        min_size=1,
        max_size=3,
    ),
    tokens=st.sampled_from([4, 8, 12, 20]),
)
def test_the_team_stores_snippet_is_fts5s(
    words: list[tuple[str, str]],
    edges: tuple[str, str],
    phrases: list[tuple[list[str], bool]],
    tokens: int,
) -> None:
    """The team store cuts its snippets in Python (query/dialect.py): the same text as
    FTS5's ``snippet()`` gives, window and marks, for any text and phrases (prefixes,
    phrases of two words, sentences, CJK, diacritics). Before, a window from three
    tokens before the match: a short prompt lost its first words."""
    from sessiondex.indexer.shape import FTS_TOKENIZER
    from sessiondex.indexer.text import fts_text
    from sessiondex.indexer.unicode61 import fold
    from sessiondex.query.snippets import CLOSE, ELLIPSIS, OPEN, fts5_snippet

    text = fts_text(edges[0] + "".join(w + g for w, g in words) + edges[1])
    match = " OR ".join(f'"{" ".join(ws)}"' + ("*" if prefix else "") for ws, prefix in phrases)
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS_TOKENIZER}')")
    db.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", [text])
    row = db.execute(
        "SELECT snippet(t, 0, ?, ?, ?, ?) FROM t WHERE t MATCH ?",
        [OPEN, CLOSE, ELLIPSIS, tokens, match],
    ).fetchone()
    ours = [
        (tuple(fold(fts_text(w)).split()), prefix) for ws, prefix in phrases for w in [" ".join(ws)]
    ]
    assert fts5_snippet(text, ours, tokens) == (row[0] if row else "")


@pytest.mark.parametrize(
    ("text", "terms", "many"),
    [
        (" ".join(["in"] * 301), [("in", False)], True),
        # "in" inside other words is no instance (helper 97: a prose message took the
        # cut path, its snippet not FTS5's)
        ("running during ruin " * 200, [("in", False)], False),
        ("tim timeout timer " * 120, [("tim", True)], True),
        ("tim timeout timer " * 120, [("tim", False)], False),
        # written with the diacritics the index folds away (helper 98: 10.6 s)
        ("café " * 400, [("cafe", False)], True),
        ("CAFÉ " * 400, [("cafe", False)], True),
        # the index folds Latin diacritics only: й is no и, ά no α (helper 99)
        ("йогурт " * 400, [("иогурт", False)], False),
        ("σοφία " * 400, [("σοφια", False)], False),
    ],
)
def test_too_many_matches_counts_tokens(
    text: str, terms: list[tuple[str, bool]], many: bool
) -> None:
    from sessiondex.query.snippets import too_many_matches

    assert too_many_matches(text, terms) is many


_WORDS = " ".join(f"w{i}" for i in range(40))
_PASTED = ['"cafe"', '"strasse"', '"w2"'] + [f'"w{i}"' for i in range(5, 25)]


def _fts5_instances(text: str, phrases: list[str]) -> int:
    """How many instances of ``phrases`` FTS5 itself finds in ``text``, indexed with the
    index's tokenizer: what its snippet() walks, a list per phrase. Counted phrase by
    phrase as the tokens highlight() marks (one phrase's instances never overlap)."""
    import sqlite3

    from sessiondex.indexer.shape import FTS_TOKENIZER

    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS_TOKENIZER}')")
    conn.execute("INSERT INTO t VALUES (?)", (text,))
    count = 0
    for phrase in phrases:
        for (marked,) in conn.execute(
            "SELECT highlight(t, 0, char(1), char(2)) FROM t WHERE t MATCH ?", (phrase,)
        ):
            count += str(marked).count("\x01")
    return count


@pytest.mark.parametrize(
    ("text", "phrases"),
    [
        # marks unicode61 takes for separators, though Latin text carries them: U+0336
        # strike-through, U+0332 low line, U+0340 (helper 104: 20,000 lines, 2.3 s)
        ("x\u0336ERROR " * 400, ['"error"']),
        ("a\u0332b " * 400, ['"b"']),
        ("a\u0340b " * 400, ['"b"']),
        # an accent written apart is dropped after any letter, a precomposed one is kept
        # outside Latin: и + U+0306 is "и" (helper 104: 3.2 s), й is no и
        ("\u0438\u0306 " * 400, ['"\u0438"']),
        ("\u0439 " * 400, ['"\u0438"']),
        ("\u0306abc " * 400, ['"abc"']),
        # a word written twice is walked twice: FTS5 keeps a list per phrase (helper
        # 104: 50 rows of 295 "error", 3.2 s)
        ("error " * 200, ['"error"', '"error"']),
        ("error " * 200, ['"err"*', '"error"']),
        ("error " * 100 + "errand " * 150, ['"err"*', '"error"']),
        # folds of its own: ß is no ss, private use characters are letters
        ("straße " * 400, ['"strasse"']),
        ("\ue000x " * 400, ['"\ue000x"']),
        ("CAFÉ café cafe\u0301 " * 150, ['"cafe"']),
        ("snake_case_name " * 400, ['"case"']),
        ("running during ruin " * 200, ['"in"']),
        # more words than MANY_TERMS (a pasted paragraph): the row's tokens counted
        # once each instead of a pattern per word, with the same answer
        ((_WORDS + " ") * 10, [f'"w{i}"' for i in range(20)]),
        ((_WORDS + " ") * 20, [f'"w{i}"' for i in range(18)] + ['"w1"*', '"w3"', '"w3"']),
        (("CAFÉ café cafe\u0301 straße x\u0336w2 " + _WORDS) * 30, _PASTED),
    ],
)
def test_the_heavy_row_check_counts_what_fts5_walks(text: str, phrases: list[str]) -> None:
    """The check decides between FTS5's snippet() and ours by the instances snippet()
    walks: counting fewer sent rows of tens of thousands of instances to FTS5 (seconds
    each), so it must cut and fold tokens as FTS5 does, and count as it does."""
    from sessiondex.query.snippets import MAX_INSTANCES, instances, match_terms, too_many_matches

    fts5 = _fts5_instances(text, phrases)
    for match in (" ".join(phrases), " OR ".join(phrases)):
        assert instances(text, match_terms(match)) == fts5, match
        assert too_many_matches(text, match_terms(match)) is (fts5 > MAX_INSTANCES), match


@pytest.mark.parametrize(
    "text, query",
    [
        ("thornwhistle " * 400, '"thornwhistle"'),
        ("Thornwhistle, THORNWHISTLE; thornwhistle. " * 200, '"thornwhistle"'),
        # diacritics and letters that fold to ASCII: Kelvin sign, long s, dotted I
        ("café cafe\u0301 CAFÉ " * 200, '"cafe"'),
        ("\u212aelvin kelvin " * 300, '"kelvin"'),
        ("\u017ftop stop " * 300, '"stop"'),
        ("\u0130dle idle " * 300, '"idle"'),
        ("ḁb ab " * 300, '"ab"*'),
        # beside CJK text, which folds to nothing ASCII
        (" 東 京  thornwhistle  東 京 " * 300, '"thornwhistle"'),
        (" 東 京 " * 600, '"東 京"'),  # the text as indexed: a token per character
        ("naïve " * 400, '"naive" "nai"*'),
    ],
)
def test_the_cheap_instance_count_is_never_below_the_folded_one(text: str, query: str) -> None:
    """The heavy-row check first counts without folding diacritics (ten times cheaper on
    a non-ASCII text): that count must bound the exact one, or a heavy row would reach
    FTS5's snippet()."""
    from sessiondex.query.snippets import (
        _instances_at_most,
        instances,
        match_terms,
        too_many_matches,
    )

    terms = match_terms(query)
    exact = instances(text, terms)
    assert exact > 0
    assert _instances_at_most(text, terms) >= exact
    assert too_many_matches(text, terms) is (exact > 300)


@pytest.mark.parametrize(
    "query, above",
    [
        ('"thornwhistle"', 3900),  # 300 instances of 12 letters and a space
        ('"ab"', 2000),  # never under SCAN_CHARS
        ('"thornwhistle" "zygomorphic"', 2000),  # two terms: half the instances each
        ('"thornwhistle" "zygomorphicflowers"', 2000),
        ('"straße"', 2000),  # not ASCII: a case-fold may lengthen a word
        ('"thornwhistle"*', 3900),
        # a token counts once for each term it is an instance of: a word written again,
        # or a prefix of a word also written, makes fewer characters enough
        ('"a" "a" "a" "a"', 500),
        (" ".join(['"a"'] * 8), 250),
        ('"err" "error"*', 2000),  # no token is an instance of both
        ('"error" "err"*', 1000),  # "error" is an instance of both
        ('"error" "err"* "er"*', 666),
        ('"thornwhistle" "thornwhistle"', 1950),  # 150 tokens of 12 letters and a space
    ],
)
def test_rows_too_short_to_be_heavy_are_not_looked_at(query: str, above: int) -> None:
    from sessiondex.query.snippets import (
        MAX_INSTANCES,
        SCAN_CHARS,
        match_terms,
        may_be_heavy_above,
        too_many_matches,
    )

    assert may_be_heavy_above(query) == above
    if above <= SCAN_CHARS:
        return  # the fixed length under which any row is FTS5's (up to ~1,000 instances)
    (word, _), *_ = match_terms(query)
    # the densest row of the term at the bound holds no more than the limit; one more
    # instance is longer than the bound
    densest = " ".join([word] * MAX_INSTANCES)
    assert len(densest) <= above
    assert not too_many_matches(densest, match_terms(query))
    assert len(densest + " " + word) > above


def _traced_search(
    tmp_path: Path,
    tree: ConfigTree,
    query: str,
    judged: list[tuple[int, bool]] | None = None,
    raw: bool = False,
) -> tuple[Any, list[dict[str, Any]], list[str]]:
    """The index of ``tree``, ``search(query)`` in every scope, and the SQL it ran;
    ``judged`` gets (length, verdict) of each text the heavy-row check was asked of."""
    from sessiondex.query.snippets import HEAVY_FUNCTION, _terms_of, too_many_matches

    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    asked: list[str] = []
    db.conn.set_trace_callback(asked.append)
    if judged is not None:

        def heavy(match: str, *texts: str | None) -> int:
            asked_of = [len(text) for text in texts if text]
            judged.append((max(asked_of, default=0), False))  # the row's longest text
            for position, text in enumerate(texts, 1):
                if text and too_many_matches(text, _terms_of(match)):
                    judged[-1] = (len(text), True)
                    return position
            return 0

        db.conn.create_function(HEAVY_FUNCTION, -1, heavy)
    return db, search(db, query, Filters(scope="all"), raw=raw), asked


def test_a_word_written_again_makes_a_short_row_heavy(tmp_path: Path) -> None:
    """Helper 105: FTS5's snippet() walks a term's instances once for each time the
    query holds it, and rows under SCAN_CHARS were never looked at: 20 rows of 1,999
    characters of "a " searched with "a" written 8 times took 16 s (16 times: 59 s).
    Such a row is looked at, and its snippet cut in Python. (A query as typed holds
    each word once, see the next test; ``--raw`` passes it on as written.)"""
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd="/w/letters")
    session.user("letters, please")
    session.assistant("a " * 999 + "a")
    session.write()
    judged: list[tuple[int, bool]] = []
    _, rows, asked = _traced_search(tmp_path, tree, " ".join(['"a"'] * 8), judged, raw=True)
    assert [r["session_id"] for r in rows] == [session.session_id]
    assert (1999, True) in judged
    assert rows[0]["snippet"].startswith("[a")


@pytest.mark.parametrize(
    "query, terms",
    [
        ("auth auth bug", ['"auth"', '"bug"*']),
        ("Auth AUTH auth. bug", ['"Auth"', '"bug"*']),  # the same word as the index folds it
        ("café cafe\u0301 CAFE bug", ['"café"', '"bug"*']),  # é is e, as the index folds it
        ("auth bug auth", ['"auth"', '"bug"', '"auth"*']),  # the last word is a prefix too
        (" ".join(["the auth bug"] * 3000), ['"the"', '"auth"', '"bug"', '"bug"*']),
    ],
)
def test_a_word_typed_again_is_asked_once(query: str, terms: list[str]) -> None:
    """A pasted log repeating a few words 3,000 times took 8 s to search a handful of
    sessions: FTS5 walks a phrase's matches once for each time it is written, and the
    words spread over several messages were looked up once per word written."""
    assert quote_query(query) == " ".join(terms)


def _log_pasted(tree: ConfigTree, where: str, log: str) -> Any:
    """A session with ``log`` in "a message" (the assistant's answer) or in "the first
    prompt" (pasted after a line of its own)."""
    session = tree.session(cwd="/w/logs")
    if where == "a message":
        session.user("here is the log")
        session.assistant(log)
    else:
        session.user(f"here is the log\n{log}")
    session.write()
    return session


@pytest.mark.parametrize("lines", [3000, 200], ids=["105 KB", "7 KB"])
@pytest.mark.parametrize("where", ["a message", "the first prompt"])
def test_a_row_with_thousands_of_matches_is_not_given_to_fts5_snippet(
    tmp_path: Path, where: str, lines: int
) -> None:
    """Helper 95: FTS5's snippet() scores a window at every instance, counting the
    instances in it: a message (or a first prompt: a pasted log) repeating the word
    32,000 times took 8.8 s to search, a 1.2 MB log 31 s, and the MCP server, the picker
    and the web view waited. Such a row's snippet is cut in Python; every other row
    keeps FTS5's. (No timing here: the trace shows which rows snippet() was asked for.)"""
    tree = ConfigTree(tmp_path / "claude")
    # (7 KB: helper 97, rows under the first cut's 16,000 characters, many to a page,
    # still took FTS5 0.3 s each)
    log = "\n".join(f"ERROR connection refused to shard {i}" for i in range(lines))
    heavy = _log_pasted(tree, where, log)
    light = tree.session(cwd="/w/logs")
    light.user("one connection refused, once")
    light.write()
    judged: list[tuple[int, bool]] = []
    db, rows, asked = _traced_search(tmp_path, tree, "connection refused", judged)
    snippets = {r["session_id"]: r["snippet"] for r in rows}
    assert "[connection] [refused] to shard 0 " in snippets[heavy.session_id]
    assert snippets[light.session_id] == "one [connection] [refused], once"
    fts5 = [sql for sql in asked if "snippet(" in sql]
    assert fts5, "the light row's snippet is FTS5's"
    # Each source is asked in one statement that reads each text once: snippet() is
    # the answer of a CASE only where the heavy-row check said 0, and the check said
    # the log is too heavy (and was asked of no row without a long text).
    table = "messages_fts" if where == "a message" else "session_search_fts"
    (statement,) = [sql for sql in fts5 if f"snippet({table}" in sql]
    assert f"WHEN 0 THEN snippet({table}" in statement
    heavy_text = log if where == "a message" else f"here is the log\n{log}"
    assert (len(heavy_text), True) in judged
    assert all(longest > 2000 for longest, _ in judged), judged


def test_typed_letters_mark_words_that_start_with_them_not_the_column_names(
    tmp_path: Path,
) -> None:
    """The typed-letters filter is an FTS5 query over named columns (``{custom_title ...
    shown_title} : "s"*``); a prompt long and full enough of such words has its snippet
    cut in Python, which took the column names for words too: it marked ``title`` and
    ``tag`` in the prompt and opened the window on them, not on a word typed."""
    from sessiondex.query.search import run_search

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/a")
    s.user("the title and tag of it: " + "see some stars shine " * 200)
    s.assistant("ok")
    s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    (row,) = run_search(db, "s", Filters(scope="all", limit=50), typing=True).rows
    assert "[see] [some] [stars] [shine]" in row["snippet"]
    assert "[title]" not in row["snippet"] and "[tag]" not in row["snippet"]
    db.close()


@pytest.mark.parametrize("where", ["a message", "the first prompt"])
def test_a_nul_character_does_not_hide_a_heavy_row_from_the_check(
    tmp_path: Path, where: str
) -> None:
    """SQLite's ``length()`` of a text stops at its first NUL: a log pasted with a NUL
    near its start (a binary file read, ``\\u0000`` in the transcript's JSON) measured a
    few characters, so the heavy-row check was never asked and FTS5's snippet() counted
    its thousands of instances (30,000: 7.5 s). The check must be asked of it."""
    tree = ConfigTree(tmp_path / "claude")
    log = "PNG\x00\n" + "\n".join(f"ERROR connection refused to shard {i}" for i in range(3000))
    _log_pasted(tree, where, log)
    judged: list[tuple[int, bool]] = []
    _, rows, _ = _traced_search(tmp_path, tree, "connection refused", judged)
    heavy_text = log if where == "a message" else f"here is the log\n{log}"
    assert (len(heavy_text), True) in judged
    (row,) = rows
    assert "[connection] [refused] to shard 0 " in row["snippet"]


def test_a_first_prompt_long_only_once_indexed_is_not_given_to_fts5_snippet(
    tmp_path: Path,
) -> None:
    """A CJK first prompt of 1,400 characters is 2,801 as indexed (a space around each
    character): over the length from which a row's matches are counted, though its
    stored text is under it. Its 700 matches are cut in Python, not given to FTS5."""
    tree = ConfigTree(tmp_path / "claude")
    heavy = tree.session(cwd="/w/cjk")
    heavy.user("東京" * 700)
    heavy.write()
    judged: list[tuple[int, bool]] = []
    _, rows, asked = _traced_search(tmp_path, tree, "東京", judged)
    assert [r["session_id"] for r in rows] == [heavy.session_id]
    assert rows[0]["snippet"].startswith("[東京東京")  # a run of matched CJK: one mark
    assert (2801, True) in judged  # the prompt as indexed: cut here, not by FTS5


def _fts5_tokens(texts: dict[int, str]) -> dict[int, list[str]]:
    """The tokens the index's tokenizer makes of each text, in order (fts5vocab)."""
    import sqlite3

    from sessiondex.indexer.shape import FTS_TOKENIZER

    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS_TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    conn.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", texts.items())
    tokens: dict[int, list[str]] = {}
    for doc, term in conn.execute("SELECT doc, term FROM v ORDER BY doc, offset"):
        tokens.setdefault(doc, []).append(term)
    return tokens


def test_tokens_are_cut_and_folded_as_fts5_does_across_unicode() -> None:
    """Every 89th code point, between letters and alone, cut and folded as the index's
    own tokenizer does (its tables are not Python's: see indexer/unicode61.py)."""
    from sessiondex.indexer.unicode61 import fold, token_spans

    texts = {}
    for code in range(0x80, 0x110000, 89):
        if not 0xD800 <= code <= 0xDFFF:
            texts[len(texts) + 1] = f"Xa{chr(code)}b {chr(code)} {chr(code)}{chr(code)}Q"
    fts5 = _fts5_tokens(texts)
    for doc, text in texts.items():
        ours = [fold(found.group()) for found in token_spans(text)]
        assert [token for token in ours if token] == fts5.get(doc, []), ascii(text)
        assert fold(text).split() == fts5.get(doc, []), ascii(text)


def test_the_ranges_taken_as_kept_as_is_are_so() -> None:
    """The CJK ranges unicode61.py does not ask about: each character a token of its
    own, folded to itself, by the tokenizer itself."""
    from sessiondex.indexer.unicode61 import KEPT_AS_IS

    codes = [code for low, high in KEPT_AS_IS for code in range(low, high + 1)]
    fts5 = _fts5_tokens({code: f"a{chr(code)}b" for code in codes})
    assert [code for code in codes if fts5.get(code) != [f"a{chr(code)}b"]] == []


def test_a_raw_query_of_many_terms_is_refused_not_ranked_for_minutes(tmp_path: Path) -> None:
    # FTS5 ranks a row in phrases x instances: `a` written 400 times in a --raw query
    # took 2.4 s on one message of 3,000 `a`s (5,000 times: 383 s); a typed query
    # asks for each word once.
    tree = ConfigTree(tmp_path / "claude")
    body = tree.session(cwd="/w/a")
    body.user("a " * 3000)
    body.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    from sessiondex.query.hits import message_hits
    from sessiondex.query.search import SearchSyntaxError

    path = str(next(tree.root.rglob("*.jsonl")))
    with statements(db.conn) as asked:
        with pytest.raises(SearchSyntaxError, match="drop --raw"):
            search(db, " ".join(["a"] * 400), ALL, raw=True)
        # The web view's conversation page asks for hits without a search first.
        assert message_hits(db, " ".join(["a"] * 400), [path], raw=True) == {}
    assert [sql for sql in asked if "MATCH" in sql] == []  # refused before FTS5 is asked
    assert message_hits(db, "a a", [path], raw=True)  # an ordinary raw query has hits
    assert search(db, " ".join(["a"] * 400), ALL)  # typed: the word once
    assert search(db, 'NEAR("a" "a", 2) OR a*', ALL, raw=True)  # an ordinary raw query
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, "search", "--raw", "a " * 400, "--scope", "all"])
    assert result.exit_code == 1 and "drop --raw" in result.stderr
    assert "Traceback" not in result.output


# Helper 117: what a user pastes or mistypes finds the session it came from.
FOUND_AS_PASTED = [
    # a quote inside a word is a separator, as the tokenizer takes it (was glued: fhello)
    ('print(f"hello {name}") and payload = b"data"', ['f"hello', 'b"data"', 'print(f"hello']),
    # CJK beyond the BMP (Extension B) is one token per character, as the BMP's
    ("粵語字 𠝹𨋢 同埋 東京", ["𨋢", "𠝹", "東"]),
]


@pytest.mark.parametrize(("text", "queries"), FOUND_AS_PASTED)
def test_words_as_pasted_find_their_session(tmp_path: Path, text: str, queries: list[str]) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/a")
    s.user("paste below")
    s.assistant(text)
    s.write()
    other = tree.session(cwd="/w/b")
    other.user("nothing to see here")
    other.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    for query in queries:
        rows = search(db, query, ALL)
        assert [r["session_id"] for r in rows] == [s.session_id], query
        assert rows[0]["matched_by"] != "fuzzy", query


def test_a_mistyped_agent_name_finds_its_session(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    named = tree.session(cwd="/w/a")
    named.meta("agent-name", agentName="reviewer")
    named.user("look at the diff")
    named.write()
    other = tree.session(cwd="/w/b", git_branch="feature/other-bot")
    other.user("unrelated")
    other.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    for typo in ("reveiwer", "reviewr"):
        rows = search(db, typo, ALL)
        assert rows and rows[0]["session_id"] == named.session_id, typo


def test_message_hits_take_any_query_text_and_words_found_apart(tmp_path: Path) -> None:
    """A lone surrogate (a library caller's text) is no crash, as in search(); and a
    session found by words in different messages has message hits, one per word's
    best message, for the web view and MCP to point at."""
    from sessiondex.query.hits import message_hits, message_snippets

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/a")
    s.user("the frobnicator broke")
    s.assistant("ok")
    s.user("and the quuxalator too")
    s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    path = str(s.path)
    assert search(db, "\ud800frobnicator", ALL)
    assert message_hits(db, "\ud800frobnicator", [path])
    assert message_snippets(db, "\ud800frobnicator", [path])
    assert [r["session_id"] for r in search(db, "frobnicator quuxalator", ALL)] == [s.session_id]
    assert len(message_hits(db, "frobnicator quuxalator", [path])[path]) == 2
    snippets = message_snippets(db, "frobnicator quuxalator", [path])[path]
    assert {("frobnicator" in x["snippet"], "quuxalator" in x["snippet"]) for x in snippets} == {
        (True, False),
        (False, True),
    }


def test_a_title_outranks_a_passing_mention_of_the_project_s_own_name(tmp_path: Path) -> None:
    """Most sessions are in /home/dev/shop: when the metadata table indexed the cwd,
    "shop" was in most of its rows, FTS5 clamped its bm25 weight to ~0 there, and a
    session titled "Shop checkout redesign" scored ~0 while one mentioning the shop
    in passing ranked first (helper 117). Titles weigh most; the directory is what
    --scope narrows by."""
    tree = ConfigTree(tmp_path / "claude")
    titled = tree.session(cwd="/home/dev/shop")
    titled.meta("custom-title", customTitle="Shop checkout redesign")
    titled.user("redo the checkout page")
    titled.write(mtime=1_800_000_000)
    for n in range(8):
        other = tree.session(cwd="/home/dev/shop")
        other.user(f"unrelated task number {n} about invoices")
        other.write(mtime=1_800_000_100 + n)
    passing = tree.session(cwd="/home/dev/shop")
    passing.user("I updated them; unrelated, but the shop footer has a typo")
    passing.write(mtime=1_800_001_000)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    rows = search(db, "shop", ALL)
    assert [r["session_id"] for r in rows][:2] == [titled.session_id, passing.session_id]
    assert rows[0]["matched_by"] == "title"
    assert len(rows) == 2  # a session is not a match for the directory it ran in


@pytest.mark.parametrize("query", ["terraform ImagePullBackOff", "ImagePullBackOff terraform"])
def test_words_together_in_one_message_beat_words_found_apart(tmp_path: Path, query: str) -> None:
    """The README's promise. A session whose first prompt holds the common word (its
    metadata hit boosted) and a message the other outranked both sessions that hold the
    two in one message, and its snippet showed the prompt without the word searched
    for (helper 127)."""
    tree = ConfigTree(tmp_path / "claude")
    long = tree.session(cwd="/w/app")
    long.user("help me with the terraform modules")
    for i in range(20):
        long.user(f"terraform plan for module {i} shows drift")
        long.assistant(f"I updated terraform state for module {i}.")
    long.user("after terraform apply the pods fail with ImagePullBackOff")
    long.write()
    together = tree.session(cwd="/w/ops")
    together.user("check the cluster")
    together.user("terraform apply left the pods in ImagePullBackOff state")
    together.write()
    apart = tree.session(cwd="/w/ops")
    apart.user("terraform cleanup")
    apart.user("the pods are in ImagePullBackOff state again, check it")
    apart.write()
    for k in range(10):
        other = tree.session(cwd="/w/app")
        other.user(f"deploy the app to staging {k}")
        other.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    rows = search(db, query, Filters(scope="all"))
    assert [r["session_id"] for r in rows][-1] == apart.session_id
    assert {r["session_id"] for r in rows[:2]} == {long.session_id, together.session_id}
    assert all("[ImagePullBackOff]" in r["snippet"] for r in rows), rows


# FTS5 keeps a snippet's window at the text's start while a phrase's first token is in
# it, and marks only the tokens within: a pasted path, identifier or flag past the
# twelfth token was shown cut after its first part (helper 127).
SNIPPET_PROMPTS = [
    "the pre-commit hook is slow, can I just git commit --no-verify? also rm -rf node_modules",
    "on windows I get Error: ENOENT: no such file or directory, open"
    " 'C:\\Users\\marta\\projects\\webapp\\src\\app.ts'",
    'Traceback (most recent call last):\n  File "/home/dev/api/src/auth/middleware.py",'
    " line 42, in verify_token\n    payload = jwt.decode(token)",
    "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value',"
    " src/config/loader.rs:14:5\nnote: run with RUST_BACKTRACE=1",
]


@pytest.fixture(scope="module")
def pasted(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("pasted")
    tree = ConfigTree(root / "claude")
    s = tree.session(cwd="/w/api")
    for prompt in SNIPPET_PROMPTS:
        s.user(prompt)
    s.write()
    db = open_db(root / "i.db")
    refresh(db, [tree.root])
    return db


@pytest.mark.parametrize(
    "query",
    [
        "no-verify",
        "C:\\Users\\marta\\projects\\webapp\\src\\app.ts",
        "verify_token",
        "src/config/loader.rs:14:5",
    ],
)
def test_a_snippet_marks_the_whole_phrase_searched_for(pasted: Any, query: str) -> None:
    (row,) = search(pasted, query, Filters(scope="all"))
    assert f"[{query}]" in row["snippet"], row["snippet"]


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_the_snippet_window_fits_the_phrase_in_either_dialect(dialect: str) -> None:
    """The team store's terms are to_tsquery 'phrases': its window stayed at twelve
    tokens where the local one grew to hold the phrase (helper 128)."""
    from sessiondex.indexer.text import fts_text
    from sessiondex.query.dialect import PostgresDialect, SqliteDialect
    from sessiondex.query.search import SNIPPET_TOKENS, snippet_tokens

    engine = SqliteDialect() if dialect == "sqlite" else PostgresDialect()
    term = engine.term(fts_text("src/config/loader.rs:14:5").strip(), False)
    assert snippet_tokens(engine.all_of([term])) == SNIPPET_TOKENS + 5
    single = engine.term(fts_text("loader").strip(), False)
    assert snippet_tokens(engine.all_of([single])) == SNIPPET_TOKENS


@pytest.mark.parametrize(
    ("match", "phrases"),
    [
        ("('user profile')", [(("user", "profile"), False)]),
        # a phrase whose last word is a prefix is written word by word (dialect.term)
        ("('user' <-> 'profile':*)", [(("user", "profile"), True)]),
        ("'x' <-> 'y' <-> 'z':* & 'w'", [(("x", "y", "z"), True), (("w",), False)]),
        ("'a' & 'b'", [(("a",), False), (("b",), False)]),
        ("('a' | 'b':*)", [(("a",), False), (("b",), True)]),
        ("!'neg' & 'pos'", [(("pos",), False)]),
        ("('auth/middleware')", [(("auth", "middleware"), False)]),
        ("'it''s'", [(("it", "s"), False)]),
    ],
)
def test_the_team_store_query_s_phrases_are_read_as_fts5_reads_them(
    match: str, phrases: list[tuple[tuple[str, ...], bool]]
) -> None:
    """The store's snippet marks what FTS5 would mark: a phrase is one run, so its
    words joined by ``<->`` are one phrase (``[user_profile]``, not
    ``[user]_[profile]``: test_search_literal's team store cases)."""
    from sessiondex.query.snippets import tsquery_phrases

    assert tsquery_phrases(match) == phrases
