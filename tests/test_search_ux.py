"""What a search user sees: which rows are real matches, words ANDed across a session,
exit codes as grep's, matches in other scopes, forks beside their origin, CJK snippets
as written, PR shorthand, and from-pr's PR column, mentions and default scope."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from sessiondex.cli.main import cli
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.indexer.text import fts_text
from sessiondex.query.filters import Filters
from sessiondex.query.search import FUZZY, MATCH, PARTIAL, run_search, search
from sessiondex.query.snippets import original_text
from tests.builders import ConfigTree, copy_fixtures, git

ALL = Filters(scope="all")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NAMES = json.loads((FIXTURES / "scenarios.json").read_text())["names"]
SHOP_WT = "/home/dev/shop-wt/feature-x"


class World:
    """A config tree with named sessions, indexed on demand."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.tree = ConfigTree(tmp_path / "claude")
        self.ids: dict[str, str] = {}
        self._mtime = 1_800_000_000

    def add(
        self,
        name: str,
        *,
        cwd: str = "/w/app",
        title: str | None = None,
        texts: tuple[str, ...] = (),
        **extra: object,
    ):
        s = self.tree.session(cwd=cwd)
        for text in texts:
            s.user(text, **extra)
        if title:
            s.meta("custom-title", customTitle=title)
        self._mtime += 100
        s.write(mtime=self._mtime)
        self.ids[name] = s.session_id
        return s

    def db(self):
        db = open_db(self.tmp / "i.db")
        refresh(db, [self.tree.root])
        return db

    def names(self, rows: list[dict]) -> list[str]:
        by_id = {v: k for k, v in self.ids.items()}
        return [by_id[r["session_id"]] for r in rows]

    def cli(self, *args: str):
        return CliRunner().invoke(
            cli, ["--config-dir", str(self.tree.root), "--db", str(self.tmp / "c.db"), *args]
        )


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


# ---- 11: every word, anywhere in the session ------------------------------------------


def test_words_are_anded_across_title_and_messages(world: World) -> None:
    world.add("spread", title="Websocket reconnect", texts=("the login page hangs",))
    world.add("login-only", texts=("fix the login form",))
    world.add("socket-only", texts=("websocket frames are dropped",))
    outcome = run_search(world.db(), "websocket login", ALL)
    assert outcome.kind == MATCH
    assert world.names(outcome.rows) == ["spread"]


def test_words_in_one_message_outrank_words_far_apart(world: World) -> None:
    world.add("apart", texts=("the websocket is flaky", "unrelated", "and the login too"))
    world.add("together", texts=("websocket login handshake fails",))
    rows = search(world.db(), "websocket login", ALL)
    assert world.names(rows) == ["together", "apart"]
    assert rows[0]["score"] < rows[1]["score"]
    assert "[websocket] [login]" in rows[0]["snippet"]


def test_no_session_with_every_word_offers_partial_matches(world: World) -> None:
    world.add("two-of-three", texts=("websocket login", "nothing else"))
    world.add("one-of-three", title="Login page", texts=("css",))
    world.add("none", texts=("unrelated words",))
    outcome = run_search(world.db(), "websocket login oauth", ALL)
    assert outcome.kind == PARTIAL and not outcome.matched
    assert outcome.words == ["websocket", "login", "oauth"]
    assert world.names(outcome.rows) == ["two-of-three", "one-of-three"]
    assert [r["matched_by"] for r in outcome.rows] == ["text", "title"]
    result = world.cli("search", "websocket login oauth", "--scope", "all")
    assert result.exit_code == 1
    assert result.stdout.startswith(
        "No session has all of: websocket, login, oauth; best partial matches:\n"
    )


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ('"websocket login" oauth', ["websocket", "login", "oauth"]),
        ('websocket "login oauth"', ["websocket", "login", "oauth"]),
        ('websocket lo"gin oauth', ["websocket", "lo gin", "oauth"]),
    ],
)
def test_the_words_a_partial_match_names_are_shown_without_their_quotes(
    world: World, query: str, words: list[str]
) -> None:
    """A quoted phrase's quotes became spaces in the words the outcome names: "No
    session has all of:  websocket, login , oauth" (the CLI, the web page, the MCP
    note). Each word is shown as the search reads it, its quotes no spaces at its ends."""
    world.add("two-of-three", texts=("websocket login lo gin", "nothing else"))
    outcome = run_search(world.db(), query, ALL)
    assert outcome.kind == PARTIAL
    assert outcome.words == words


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_partial_matches_stay_out_of_machine_formats(world: World, fmt: str) -> None:
    """A partial match's row says ``matched_by: text`` like a real match: a script that
    reads json, jsonl or csv without the exit code took these suggestions for matches.
    They are the table's alone; the other formats print no row and say why on stderr."""
    world.add("two-of-three", texts=("websocket login", "nothing else"))
    result = world.cli("search", "websocket login oauth", "--scope", "all", "--format", fmt)
    assert result.exit_code == 1
    assert result.stdout in ("[]\n", "") or result.stdout.startswith("session_id,")
    assert "two-of-three" not in result.stdout and "websocket" not in result.stdout
    assert result.stderr.startswith("No session has all of: websocket, login, oauth;")
    assert "--format table" in result.stderr


# ---- 10: typo fallback rows are marked; real hits say how they matched -----------------


def test_typo_fallback_is_labelled(world: World) -> None:
    world.add("auth", title="Auth refactor", texts=("hello",))
    outcome = run_search(world.db(), "atuh refactr", ALL)
    assert outcome.kind == FUZZY and world.names(outcome.rows) == ["auth"]
    assert outcome.rows[0]["matched_by"] == "fuzzy"
    table = world.cli("search", "atuh refactr", "--scope", "all")
    assert table.exit_code == 1
    lines = table.stdout.splitlines()
    assert lines[0] == "No exact matches; closest titles:" and "Auth refactor" in lines[2]
    as_json = world.cli("search", "atuh refactr", "--scope", "all", "--json")
    assert as_json.exit_code == 1
    assert [r["matched_by"] for r in json.loads(as_json.stdout)] == ["fuzzy"]
    assert "closest" not in as_json.stdout


@pytest.mark.parametrize("query", ["atuh refactr", "ATUH REFACTR", "Atuh Refactr", "atuh-refactr!"])
def test_typo_fallback_ignores_case_and_punctuation(world: World, query: str) -> None:
    """As FTS matching does: "ATUH REFACTR" found nothing, and "Atuh Refactr" ranked
    the two sessions by how their titles happened to be capitalised."""
    world.add("upper", title="Auth refactor", texts=("hello",))
    world.add("lower", title="auth refactor", texts=("hello",))
    world.add("other", title="Café menu", texts=("hello",))
    outcome = run_search(world.db(), query, ALL)
    assert outcome.kind == FUZZY
    assert sorted(world.names(outcome.rows)) == ["lower", "upper"]
    assert len({r["score"] for r in outcome.rows}) == 1


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("quokka", "title"),  # custom title
        ("numbat", "title"),  # AI title
        ("wombat", "text"),  # a message
        ("feature/bilby", "text"),  # a branch is metadata, not a title
        ("quokka wombat", "text"),  # one word only in a message
        ("https://github.com/acme/zoo/pull/3", "pr-link"),
        ("https://github.com/acme/zoo/pull/4", "pr-mention"),
    ],
)
def test_matched_by(world: World, query: str, expected: str) -> None:
    s = world.tree.session(cwd="/w/zoo", git_branch="feature/bilby")
    s.user("a wombat walks in; see https://github.com/acme/zoo/pull/4")
    s.meta("custom-title", customTitle="Quokka census")
    s.meta("ai-title", aiTitle="Numbat survey")
    s.pr_link(number=3, url="https://github.com/acme/zoo/pull/3", repository="acme/zoo")
    s.write()
    rows = search(world.db(), query, ALL)
    assert [r["matched_by"] for r in rows] == [expected]


# ---- 12: exit status as grep's ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "rows"),
    [
        (["search", "capybara"], 0, 1),
        (["search", "zzzqqq"], 1, 0),
        (["search", "https://github.com/acme/none/pull/9"], 1, 0),
        (["search", "capybara zzzqqq"], 1, 0),  # partial: the table's suggestion only
        (["search", "capybarra"], 1, 1),  # typo fallback: a suggestion, not a match
        (["search", "--raw", "capybara OR zzzqqq"], 0, 1),
        (["search", "--raw", "zzzqqq"], 1, 0),
    ],
)
def test_exit_status_like_grep(world: World, args: list[str], code: int, rows: int) -> None:
    s = world.add("capy", cwd="/w/app", texts=("the capybara module",))
    s.pr_link(number=7, url="https://github.com/acme/app/pull/7", repository="acme/app")
    s.write(mtime=1_900_000_000)
    result = world.cli(*args, "--scope", "all", "--json")
    assert result.exit_code == code, result.output
    assert len(json.loads(result.stdout)) == rows  # json prints [] when empty


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_every_search_answer_has_one_key_order(world: World, fmt: str) -> None:
    """Helper 93: a PR-URL search with hits put ``matched_by`` before ``score`` and
    ``snippet`` in its CSV header, a text search or an empty answer after them."""
    s = world.add("capy", cwd="/w/app", texts=("the capybara module",))
    s.pr_link(number=7, url="https://github.com/acme/app/pull/7", repository="acme/app")
    s.write(mtime=1_900_000_000)
    orders = set()
    for query in ("capybara", "https://github.com/acme/app/pull/7", "zzzqqq"):
        out = world.cli("search", query, "--scope", "all", "--format", fmt).stdout
        if fmt == "csv":
            orders.add(tuple(out.splitlines()[0].split(",")))
        elif json.loads(out):
            orders.add(tuple(json.loads(out)[0]))
    [order] = orders
    assert order[-3:] == ("score", "snippet", "matched_by")


@pytest.mark.parametrize("query", ["okapiword", "https://github.com/acme/app/pull/9"])
def test_a_search_only_hidden_kinds_answer_says_so(world: World, query: str) -> None:
    """Helpers 93 and 94: ``from-pr`` said "Hidden kinds are linked to it: try
    --all-kinds" where ``search`` of the same PR URL, or of a word only an SDK session
    holds, said only "No matches."."""
    s = world.add("sdk", cwd="/w/app", texts=("the okapiword pipeline",), entrypoint="sdk-cli")
    s.pr_link(number=9, url="https://github.com/acme/app/pull/9", repository="acme/app")
    s.write(mtime=1_900_000_000)
    missed = world.cli("search", query, "--scope", "all")
    assert missed.exit_code == 1
    assert "Hidden kinds match it: try --all-kinds" in missed.stderr
    found = world.cli("search", query, "--scope", "all", "--all-kinds", "--json")
    assert found.exit_code == 0 and len(json.loads(found.stdout)) == 1
    nothing = world.cli("search", "zzzqqqword", "--scope", "all")
    assert nothing.exit_code == 1 and "Hidden kinds" not in nothing.stderr


def test_search_help_documents_the_exit_status() -> None:
    text = CliRunner().invoke(cli, ["search", "--help"]).output
    assert "Exit status" in text and "1 when none did" in text and "suggestions" in text


# ---- 13: matches in other scopes -------------------------------------------------------


def test_no_match_here_says_how_many_other_scopes_hold(world: World, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git(
        "-c",
        "user.email=a@b",
        "-c",
        "user.name=n",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "x",
        cwd=repo,
    )
    git("worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature", cwd=repo)
    world.add("in-worktree", cwd=str(tmp_path / "wt"), texts=("wombat in the worktree",))
    for i in range(3):
        world.add(f"other-{i}", cwd=f"/w/other{i}", texts=(f"wombat number {i}",))
    empty = tmp_path / "empty"
    empty.mkdir()
    result = world.cli("search", "wombat", "--cwd", str(empty))
    assert result.exit_code == 1
    assert result.stderr == "No matches.\n4 matches in other projects: --scope all\n"
    result = world.cli("search", "wombat", "--cwd", str(repo))
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        "1 match in other worktrees of this repository: --scope repo;"
        " 3 in other projects: --scope all"
    )
    assert world.cli("search", "wombat", "--cwd", str(repo), "--scope", "repo").exit_code == 0
    result = world.cli("search", "wombat", "--cwd", str(empty), "--json")
    assert result.stdout.strip() == "[]" and result.stderr == ""


# ---- 14: forks right after their origin ------------------------------------------------


def test_a_fork_stands_where_its_score_puts_it_in_search_results(world: World) -> None:
    """Ranked by score, not grouped: the fork that says quokka three times and is named
    for it comes first, above the origin that mentions it once."""
    origin = world.add("origin", texts=("we talked about the quokka once",))
    fork = world.tree.session(cwd="/w/app")
    fork.user(
        "quokka quokka quokka", forkedFrom={"sessionId": origin.session_id, "messageUuid": "m"}
    )
    fork.meta("custom-title", customTitle="Quokka plan (fork)")
    fork.write(mtime=1_900_000_000)
    world.ids["fork"] = fork.session_id
    world.add("other", title="Quokka facts", texts=("x",))
    rows = search(world.db(), "quokka", ALL)
    names = world.names(rows)
    assert len(names) == 3
    assert names[-1] == "origin"
    scores = [row["score"] for row in rows]
    assert scores == sorted(scores)


# ---- 15: CJK snippets keep the text as written -----------------------------------------


@pytest.mark.parametrize(
    ("query", "snippet"),
    [
        ("日本語", "[日本語] テキスト の 説明"),
        ("日", "[日]本語 テキスト の 説明"),
        ("テキスト", "日本語 [テキスト] の 説明"),
        ("説明", "日本語 テキスト の [説明]"),
        ("本語 の", "日[本語] テキスト [の] 説明"),
    ],
)
def test_cjk_snippet_keeps_spacing(world: World, query: str, snippet: str) -> None:
    world.add("cjk", texts=("日本語 テキスト の 説明",))
    assert search(world.db(), query, ALL)[0]["snippet"] == snippet


def test_snippet_keeps_the_users_spaces_and_flattens_lines(world: World) -> None:
    world.add("spaces", texts=("keep  two spaces\nthen a quokka\t here",))
    assert (
        search(world.db(), "quokka", ALL)[0]["snippet"] == "keep  two spaces then a [quokka] here"
    )


@given(st.text(alphabet="日本語テキa b\n。", max_size=30))
def test_the_index_form_is_exactly_invertible(text: str) -> None:
    assert original_text(fts_text(text)) == text


# ---- 16: owner/repo#123 wherever a PR URL works ----------------------------------------


@pytest.mark.parametrize(
    "ref", ["acme/shop#12", "Acme/Shop#12", "https://github.com/acme/shop/pull/12"]
)
def test_shorthand_finds_what_the_url_finds(tmp_path: Path, ref: str) -> None:
    root = copy_fixtures(tmp_path)
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    expected = [NAMES["wt-feature"], NAMES["shop-auth"]]
    result = CliRunner().invoke(cli, [*base, "search", ref, "--scope", "all", "--json"])
    assert result.exit_code == 0, result.output
    assert [r["session_id"] for r in json.loads(result.stdout)] == expected


@pytest.fixture()
def emoji_world(tmp_path: Path):
    """Sessions named with emoji (by `rename`, `/rename` or an AI title), as people do."""
    tree = ConfigTree(tmp_path / "claude")
    made = {}
    for key, (name, prompt) in {
        "rocket": ("🚀 launch the blog", "deploy it"),
        "fire": ("Perf 🔥 调查", "profile the checkout"),
        "both": ("🚀 and 🔥 together", "all hands"),
        "percent": ("rollout at 100%", "ship_it now"),
        "plain": ("nothing special", "a prompt with 🎉 in it"),
        "flags": ("🇯🇵🇺🇸 trip", "plan it"),
        "family": ("👨‍👩‍👧‍👦 team", "plan it"),
        "wave": ("👋🏽 hello", "plan it"),
    }.items():
        s = tree.session(cwd="/w/app")
        s.user(prompt)
        s.meta("custom-title", customTitle=name)
        made[key] = s.session_id
        s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    return db, made


@pytest.mark.parametrize(
    ("query", "expected", "matched_by"),
    [
        ("🚀", {"rocket", "both"}, "title"),
        ("🔥", {"fire", "both"}, "title"),
        ("🚀 🔥", {"both"}, "title"),  # every word, as for words
        ("🎉", {"plain"}, "text"),  # the first prompt holds it
        ("%", {"percent"}, "title"),  # LIKE's wildcards are literal here
        ("_", {"percent"}, "text"),
        # whole emoji only: not across two flags, nor one person of a family
        ("🇺🇸", {"flags"}, "title"),
        ("👨‍👩‍👧‍👦", {"family"}, "title"),
        ("👋", {"wave"}, "title"),  # a skin tone dresses the emoji it follows
        ("👋🏽", {"wave"}, "title"),
    ],
)
def test_a_query_of_symbols_alone_finds_the_sessions_that_hold_it(
    emoji_world, query: str, expected: set[str], matched_by: str
) -> None:
    """The tokenizer keeps no emoji, so `search 🚀` found nothing (or a typo suggestion)
    for a session named "🚀 launch the blog". A query with no letter or digit is now
    looked for as typed in the names, tag, summary and prompts: an exact match."""
    db, made = emoji_world
    outcome = run_search(db, query, ALL)
    names = {v: k for k, v in made.items()}
    assert outcome.kind == MATCH
    assert {names[r["session_id"]] for r in outcome.rows} == expected
    assert {r["matched_by"] for r in outcome.rows} == {matched_by}
    first = query.split()[0]
    assert all(f"[{first}" in r["snippet"] and "]" in r["snippet"] for r in outcome.rows)


@pytest.mark.parametrize("query", ["🦄", "🇵🇺", "👨", "🏽", "👧‍👦", "🇺", "🇯"])
def test_a_symbol_query_that_no_session_holds_whole_is_no_match(emoji_world, query: str) -> None:
    """`🇵🇺` is in `🇯🇵🇺🇸` only across two flags, `🇺` and `🇯` are half a flag, `👨` and
    `👧‍👦` are parts of the family, `🏽` only dresses `👋`: none is a match (their
    highlight split the emoji)."""
    db, _ = emoji_world
    assert run_search(db, query, ALL).kind != MATCH


def test_a_symbol_hit_in_a_long_text_has_a_snippet_not_the_whole_text(tmp_path: Path) -> None:
    """The snippet of a symbol query's hit was the whole column it was found in: a
    first prompt that pastes a 10 KB log after `deploy 🚀 now` printed all of it under
    the row, as did a long summary. A snippet is a window around the match, as FTS5
    makes one for words: a few words before it, some after, `…` where the text goes on,
    never cutting an emoji (a run of families with no space in it) in two."""
    tree = ConfigTree(tmp_path / "claude")
    family = "👨‍👩‍👧‍👦"
    texts = {
        "paste": "deploy 🚀 now\n" + "log line with words here\n" * 400,
        "late": "context words " * 300 + "then 🚀 at the end",
        "run": family * 200 + " 🚀 " + family * 200,
        "blanks": "head" + " " * 100 + "🚀",  # no run of blanks after the ellipsis
    }
    for name, text in texts.items():
        s = tree.session(cwd="/w/app")
        s.user(text)
        s.meta("custom-title", customTitle=name)
        s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    outcome = run_search(db, "🚀", ALL)
    assert outcome.kind == MATCH
    snippets = {r["custom_title"]: r["snippet"] for r in outcome.rows}
    assert set(snippets) == set(texts)
    for name, snippet in snippets.items():
        assert "[🚀]" in snippet, (name, snippet)
        assert len(snippet) <= 160, (name, len(snippet))
    assert snippets["paste"].startswith("deploy [🚀] now log line")
    assert snippets["paste"].endswith("…")
    assert snippets["late"].startswith("…") and snippets["late"].endswith("then [🚀] at the end")
    assert snippets["blanks"] == "…[🚀]"
    run = snippets["run"].strip("…")
    # whole families on each side: the text left and right of the match splits into them
    left, right = run.split(" [🚀] ")
    assert left and right and not left.replace(family, "") and not right.replace(family, "")


def test_a_long_symbol_query_and_other_scopes(emoji_world) -> None:
    """A thousand words were a SQL error ("Expression tree is too large"); a symbol
    query that matches nothing here says what other scopes hold, as a word query does."""
    db, made = emoji_world
    outcome = run_search(db, " ".join(["🚀"] * 1000 + ["🔥"] * 1000), ALL)
    assert {r["session_id"] for r in outcome.rows} == {made["both"]}
    here = Filters(cwd="/elsewhere", scope="worktree")
    outcome = run_search(db, "🚀", here, elsewhere=True)
    assert outcome.rows == [] and outcome.elsewhere == {"repo": 0, "all": 2}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("東京", ["tokyo"]),
        ("cookie OR 東京", ["cookie", "tokyo"]),
        ('"東京の天気"', ["tokyo"]),
        ('"東京 天気"', []),  # a phrase: の stands between them
        ("NEAR(東京 天気, 2)", ["tokyo"]),
        ("東京 NOT 天気", []),
        ("서울", ["seoul"]),
        ("カタカナ*", ["kana"]),
    ],
)
def test_raw_queries_find_cjk_as_plain_search_does(
    world: World, raw: str, expected: list[str]
) -> None:
    """Typed as is, a CJK word in a --raw query was one FTS5 token, while the index holds
    one token per character: ``search --raw 東京`` found nothing."""
    world.add("tokyo", texts=("明日の東京の天気を調べる",))
    world.add("seoul", texts=("서울 날씨",))
    world.add("kana", texts=("カタカナの表記",))
    world.add("cookie", texts=("the session cookie expired",))
    rows = run_search(world.db(), raw, ALL, raw=True).rows
    assert sorted(world.names(rows)) == sorted(expected)


@pytest.mark.parametrize(
    ("query", "expected", "snippet"),
    [
        ("ระบบ", ["thai"], "ช่วยแก้บั๊กใน[ระบบ]"),
        ("บั๊ก", ["thai"], "ช่วยแก้[บั๊ก]ในระบบ"),
        ("สวัสดี", ["greeting"], "[สวัสดี]ครับ"),  # the last vowel stays in the match
        ("ພາສາ", ["lao"], "ລາວ [ພາສາ]"),
        ("ខ្មែរ", ["khmer"], "ភាសា[ខ្មែរ]"),
    ],
)
def test_words_inside_a_run_of_thai_lao_or_khmer_are_found(
    world: World, query: str, expected: list[str], snippet: str
) -> None:
    """These scripts put no space between words, and unicode61 cut their runs at vowel
    and tone marks: a word inside a run (ระบบ in ช่วยแก้บั๊กในระบบ) was found only by the
    typo fallback, and a highlight split a vowel off its consonant."""
    world.add("thai", texts=("ช่วยแก้บั๊กในระบบ",))
    world.add("greeting", texts=("สวัสดีครับ",))
    world.add("lao", texts=("ລາວ ພາສາ",))
    world.add("khmer", texts=("ភាសាខ្មែរ",))
    outcome = run_search(world.db(), query, ALL)
    assert world.names(outcome.rows) == expected
    assert [r["matched_by"] for r in outcome.rows] == ["text"]
    assert outcome.rows[0]["snippet"] == snippet


@pytest.mark.parametrize(
    ("text", "query", "snippet"),
    [
        # a keycap is a digit, U+FE0F and U+20E3: the highlight ends after the whole of it
        ("release 1️⃣ first, then 2️⃣ second", "1️⃣", "release [1️⃣] first, then 2️⃣ second"),
        ("café́ au lait", "cafe", "[café́] au lait"),  # two marks on one letter
        # snippet()'s own markers are noncharacters a text may still hold: they are no
        # highlight, and the word still is
        ("a \ufdd0 marker and the word zebra", "zebra", "a \ufffd marker and the word [zebra]"),
        ("closing \ufdd1 too, zebra", "zebra", "closing \ufffd too, [zebra]"),
    ],
)
def test_a_highlight_holds_whole_characters_and_only_the_match(
    world: World, text: str, query: str, snippet: str
) -> None:
    world.add("one", texts=(text,))
    outcome = run_search(world.db(), query, ALL)
    assert world.names(outcome.rows) == ["one"]
    assert outcome.rows[0]["snippet"] == snippet


def _named(tree: ConfigTree, day: str, prompt: str, title: str | None, tag: str = "") -> Any:
    """A session of /w/shop begun on that November day, with a title or a tag."""
    s = tree.session(cwd="/w/shop", start=f"2026-11-{day}T10:00:00.000Z")
    s.user(prompt)
    if title:
        s.meta("custom-title", customTitle=title)
    if tag:
        s.meta("tag", tag=tag)
    s.write()
    return s


@pytest.mark.parametrize(
    ("typo", "wanted"),
    [
        ("strpie", "Stripe webhook signature mismatch"),  # a word of the title
        ("webhok", "Stripe webhook signature mismatch"),
        ("hotfx", "a tagged one"),  # a tag (it was not among the candidates)
    ],
)
def test_a_typo_of_a_word_finds_its_session_first(tmp_path: Path, typo: str, wanted: str) -> None:
    """WRatio caps a short query against any longer text near 75: ``strpie`` scored the
    user's own title as it scored an unrelated, newer prompt, and recency put that
    first (helper 127). A query word is now compared with each word too."""
    tree = ConfigTree(tmp_path / "claude")
    _named(tree, "01", "the signature check fails in prod", "Stripe webhook signature mismatch")
    _named(tree, "02", "a tagged one", None, tag="hotfix")
    for n, prompt in enumerate(
        ["fatal: refusing to merge unrelated histories", "restore the deleted migration"]
    ):
        newer = tree.session(cwd="/w/shop", start=f"2026-11-2{n}T10:00:00.000Z")
        newer.user(prompt)
        newer.write()
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
        + ["search", typo, "--scope", "all", "--json"],
    )
    rows = json.loads(result.stdout)
    assert rows[0]["title"] == wanted and rows[0]["matched_by"] == "fuzzy", rows


def test_a_typo_prefers_a_name_to_a_prompt_shown_as_the_title(tmp_path: Path) -> None:
    """An untitled session shows its prompt as its title: that is no name, and it tied
    with the renamed session of the same words, the newer winning (helper 128)."""
    tree = ConfigTree(tmp_path / "claude")
    named = _named(tree, "01", "the signature check fails", "Stripe webhook")
    _named(tree, "20", "stripe webhook", None)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    outcome = run_search(db, "strpie webhok", Filters(scope="all"))
    assert outcome.kind == FUZZY
    assert [r["session_id"] for r in outcome.rows][:1] == [named.session_id]


@pytest.mark.parametrize(
    "args",
    [
        ["auth", "refactor"],  # typed without quotes, as into any search box
        ["auth refactor"],
        ["auth", "refactor", "--json"],  # options after the words still options
        ["--json", "auth", "refactor"],
    ],
)
def test_the_query_may_be_several_words_unquoted(world: World, args: list[str]) -> None:
    """``sessiondex search auth refactor`` was a usage error ("Got unexpected extra
    argument (refactor)"): the query had to be one quoted argument. The words are
    joined with a space, the same search as the quoted query."""
    world.add("both", texts=("the auth refactor is done",))
    world.add("one", texts=("auth only here",))
    quoted = world.cli("search", "auth refactor", "--scope", "all", "--json")
    result = world.cli("search", *args, "--scope", "all", *([] if "--json" in args else ["--json"]))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(quoted.stdout)
    assert world.names(json.loads(result.stdout)) == ["both"]


def test_a_search_without_words_is_a_usage_error(world: World) -> None:
    result = world.cli("search", "--scope", "all")
    assert result.exit_code == 2 and "Missing argument 'QUERY" in result.stderr
