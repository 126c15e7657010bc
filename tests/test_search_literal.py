"""search: a word joined by punctuation (an identifier, a path, a flag) that a session
wrote as typed ranks before sessions that hold its words only as prose
(docs/search.md#written-as-typed), on the local index and on the team store."""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex import Index
from sessiondex.cli.main import cli
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.query import search as search_module
from sessiondex.query.filters import Filters
from sessiondex.query.search import query_words, search
from tests.builders import ConfigTree
from tests.helpers_index import statements
from tests.pgserver import database_url, require_database, truncate

ALL = Filters(scope="all")

# (query, a message that writes it as typed, messages that hold its words as prose). The
# literal one is long (bm25 favours short rows) and its session the oldest, so that
# bm25 and recency alone put it last.
CASES: list[tuple[str, str, list[str]]] = [
    (
        "user_profile",
        "the crash is in user_profile.save() when the email field is empty; the"
        " serializer passes None through and the migration from last week made the column"
        " NOT NULL, so every signup without an email address fails with an IntegrityError",
        ["the user profile page is slow", "make the user profile avatar round"],
    ),
    (
        "auth/middleware",
        'Traceback (most recent call last):\n  File "/srv/api/src/auth/middleware.py",'
        " line 42, in verify_token\n    payload = jwt.decode(token, key, algorithms=['HS256'])"
        "\njwt.exceptions.ExpiredSignatureError: Signature has expired",
        ["the auth middleware rejects the token", "move auth middleware before cors"],
    ),
    (
        "--no-verify",
        "the pre-commit hook runs the whole test suite and takes four minutes, so for this"
        " fixup can I just run git commit --no-verify and push, then fix the hook later?",
        ["no, verify the signature first", "no verify step is needed here"],
    ),
    (
        "loader.rs",
        "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value',"
        " src/config/loader.rs:14:5\nnote: run with `RUST_BACKTRACE=1` environment variable"
        " to display a backtrace",
        ["is it the python loader or the rust loader? rs files only", "the loader: rs first"],
    ),
]


def _id(root: Path, n: int) -> str:
    # Unique across trees: the team store test pushes several into one store.
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{root}#{n}"))


def _tree(root: Path, literal: str, prose: list[str]) -> tuple[ConfigTree, str, list[str]]:
    """A tree of a session writing ``literal`` and, newer, one per ``prose`` text, each
    text in a message of its own between a neutral first and last prompt (so that it is
    a message hit, not a prompt's); plus unrelated sessions."""
    tree = ConfigTree(root)
    made: list[str] = []
    for day, text in enumerate([literal, *prose], start=1):
        s = tree.session(
            cwd="/w/app", start=f"2026-11-{day:02d}T10:00:00.000Z", session_id=_id(root, day)
        )
        s.user("a question about the app")
        s.assistant("sure, go ahead")
        s.user(text)
        s.assistant("let me look")
        s.user("thanks")
        s.write()
        made.append(s.session_id)
    for k in range(5):
        other = tree.session(
            cwd="/w/other", start="2026-10-01T10:00:00.000Z", session_id=_id(root, 100 + k)
        )
        other.user(f"deploy the app to staging {k}")
        other.write()
    return tree, made[0], made[1:]


@pytest.mark.parametrize(("query", "literal", "prose"), CASES, ids=[c[0] for c in CASES])
def test_the_spelling_as_typed_ranks_first(
    tmp_path: Path, query: str, literal: str, prose: list[str]
) -> None:
    tree, wrote, said = _tree(tmp_path / "claude", literal, prose)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    rows = search(db, query, ALL)
    assert [r["session_id"] for r in rows][0] == wrote, rows
    assert {r["session_id"] for r in rows[1:]} == set(said)
    spelled = query.strip("-")
    assert f"[{spelled}]" in rows[0]["snippet"], rows[0]["snippet"]


def test_a_flag_is_given_after_the_double_dash(tmp_path: Path) -> None:
    """The CLI's rule for text that starts with a dash (README): after ``--``."""
    query, literal, prose = CASES[2]
    tree, wrote, said = _tree(tmp_path / "claude", literal, prose)
    args = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db"), "search"]
    result = CliRunner().invoke(cli, [*args, "--scope", "all", "--json", "--", query])
    assert result.exit_code == 0, result.output
    order = [r["session_id"] for r in json.loads(result.stdout)]
    assert order[0] == wrote and set(order[1:]) == set(said)


def test_the_page_limit_does_not_hide_the_spelling(tmp_path: Path) -> None:
    """The literal session is ranked last by bm25; a page of one still shows it."""
    query, literal, prose = CASES[0]
    tree, wrote, _ = _tree(tmp_path / "claude", literal, prose)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    assert [r["session_id"] for r in search(db, query, Filters(scope="all", limit=1))] == [wrote]


def test_a_spelling_beats_a_title_of_prose_and_together_still_beats_apart(
    tmp_path: Path,
) -> None:
    """The tier is within the matches: every word is still required, and sessions
    holding them in one row still come before those holding them apart, the spelling
    first within each. A title holding the words as prose (weighed most, and boosted)
    ranked before a message that wrote the identifier."""
    tree = ConfigTree(tmp_path / "claude")
    wrote = tree.session(cwd="/w/app", start="2026-11-01T10:00:00.000Z")
    wrote.user("a question")
    wrote.user("the user_profile migration fails on sqlite with a locked database error")
    wrote.assistant("let me look")
    wrote.user("thanks")
    wrote.write()
    titled = tree.session(cwd="/w/app", start="2026-11-02T10:00:00.000Z")
    titled.user("a question")
    titled.meta("custom-title", customTitle="User profile migration")
    titled.write()
    apart = tree.session(cwd="/w/app", start="2026-11-03T10:00:00.000Z")
    apart.user("a question")
    apart.user("look at user_profile")
    apart.assistant("ok")
    apart.user("now write the migration")
    apart.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    rows = search(db, "user_profile migration", ALL)
    order = [r["session_id"] for r in rows]
    assert order == [wrote.session_id, titled.session_id, apart.session_id], rows


def test_a_query_without_punctuation_is_ranked_as_before_and_reads_no_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    query, literal, prose = CASES[0]
    tree, wrote, said = _tree(tmp_path / "claude", literal, prose)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    read: list[Any] = []
    original = search_module._literal_tier
    monkeypatch.setattr(
        search_module, "_literal_tier", lambda *a, **k: read.append(a) or original(*a, **k)
    )
    rows = search(db, "user profile", ALL)
    assert read == []
    assert [r["session_id"] for r in rows][-1] == wrote  # bm25: the long message last
    scores = [r["score"] for r in rows]
    assert scores == sorted(scores)
    search(db, "user_profile", ALL)
    assert len(read) == 1


def _spelled_tree(root: Path) -> ConfigTree:
    """Sessions for :func:`test_a_one_word_spelling_reads_its_own_ranking_again`: one per
    case writing it among its prose, one writing it only past its 5 best messages for
    it (six short rows of prose rank first), and two copies alike, whose rows tie."""
    tree = ConfigTree(root)
    for day, (_, literal, prose) in enumerate(CASES, start=1):
        s = tree.session(cwd="/w/app", start=f"2026-11-{day:02d}T10:00:00.000Z")
        s.user(prose[0])
        s.assistant(literal)
        s.user(prose[1])
        s.write()
    late = tree.session(cwd="/w/app", start="2026-11-10T10:00:00.000Z")
    for _, literal, prose in CASES:
        for n in range(6):
            late.user(prose[n % 2])
        late.assistant(literal)
    late.write()
    for copy in range(2):
        twin = tree.session(
            cwd="/w/app", start="2026-11-11T10:00:00.000Z", session_id=_id(root, 50 + copy)
        )
        for _, literal, prose in CASES:
            twin.user(prose[0])
            twin.assistant(literal)
        twin.write()
    return tree


def _searched(db: Any, query: str, filters: Filters) -> tuple[list[tuple[Any, ...]], int]:
    """The answer's rows, and the most statements that matched one FTS query against the
    messages while ranking (a word typed so far is matched as typed first,
    ``src/config/lo``, then as ``src/config/``)."""
    with statements(db.conn) as asked:
        ranking = search_module.rank_search(db, query, filters)
    matched = Counter(
        found[1] for sql in asked if (found := re.search(r"messages_fts MATCH ('[^']*')", sql))
    )
    rows = [
        (r["session_id"], r["score"], r["snippet"], r["matched_by"])
        for r in search_module.ranked_rows(db, ranking)
    ]
    return rows, max(matched.values())


@pytest.mark.parametrize(
    "query",
    ["user_profile", "user_prof", "auth/middleware", "--no-verify", "loader.rs", "src/config/lo"],
)
@pytest.mark.parametrize("limit", [1, 3, 50])
def test_a_one_word_spelling_reads_its_own_ranking_again(
    tmp_path: Path, query: str, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The literal tier reads each candidate's best messages for the word. For a query of
    that one word, its ranking has just ranked every match (FTS5 ranks them all before
    the first row), so they are read on from it rather than matched and ranked a second
    time: for ``user_pro`` (``pro*`` merges the doclists of every word it starts) that
    second statement was 0.2 s of 0.55 at 20,000 sessions. The same answer as the
    statement gives (``LITERAL_KEPT = 0`` turns the reading on off)."""
    tree = _spelled_tree(tmp_path / "claude")
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    rows, most = _searched(db, query, Filters(scope="all", limit=limit))
    assert rows and most == 1
    monkeypatch.setattr(search_module, "LITERAL_KEPT", 0)
    assert _searched(db, query, Filters(scope="all", limit=limit)) == (rows, 2)


@pytest.mark.parametrize(("beyond", "most"), [(-1, 2), (0, 1), (1, 1)])
def test_a_word_in_more_messages_than_kept_is_matched_again(
    tmp_path: Path, beyond: int, most: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past :data:`LITERAL_KEPT` matching messages the rows are not read on (they would
    cost more than a plain word's second statement); up to it, they are. Read two rows
    at a time (``FIRST_CUT``) for one candidate, the page is certain after the first
    two (the short message ranks alone), so the rest is read on after it: the same
    answer either way."""
    tree = ConfigTree(tmp_path / "claude")
    for n in range(8):
        s = tree.session(cwd="/w/app", start=f"2026-11-{n + 1:02d}T10:00:00.000Z")
        s.user("user_profile" if n == 0 else "the user profile page " + "is slow " * n)
        s.assistant("user_profile.save() fails " + "again " * n)
        s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    filters = Filters(scope="all", limit=1)
    expected, _ = _searched(db, "user_profile", filters)
    monkeypatch.setattr(search_module, "FIRST_CUT", 1)
    monkeypatch.setattr(search_module, "LITERAL_CANDIDATES", 1)
    ended: list[bool] = []
    keep = search_module._keep_ranks
    monkeypatch.setattr(search_module, "_keep_ranks", lambda *a: ended.append(a[3]) or keep(*a))
    monkeypatch.setattr(search_module, "LITERAL_KEPT", 16 + beyond)  # 16 messages match
    assert _searched(db, "user_profile", filters) == (expected, most)
    assert ended == [False]


@pytest.mark.parametrize(
    ("word", "spelling"),
    [
        ("user_profile", "user_profile"),
        ("--no-verify", "no-verify"),  # a flag's dashes are not part of its name
        ("(src/config/loader.rs:14:5),", "src/config/loader.rs:14:5"),  # pasted
        ("auth/middleware", "auth/middleware"),
        ("設定.json", "設 定 .json"),  # as stored: CJK one token per character
        ("it's", "it's"),
        ("profile", None),  # one token: no spelling to prefer
        ("--verbose", None),
        ("C++", None),
        ("東京", None),
        ('f"hello', None),  # a quote separates, as in the text
    ],
)
def test_which_words_have_a_spelling(word: str, spelling: str | None) -> None:
    assert [w.literal for w in query_words(word)] == [spelling]


@pytest.fixture
def store() -> str:
    dsn = require_database("literal spelling")
    truncate(dsn)
    return database_url(dsn)


def test_the_team_store_ranks_the_spelling_first_too(tmp_path: Path, store: str) -> None:
    """Parity: the session that wrote the spelling first on both backends."""
    trees = []
    for i, (query, literal, prose) in enumerate(CASES):
        tree, wrote, said = _tree(tmp_path / f"claude{i}", literal, prose)
        pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
        assert pushed.exit_code == 0, pushed.output
        trees.append((query, tree, wrote))
    for i, (query, tree, wrote) in enumerate(trees):
        with Index(tmp_path / f"i{i}.db", [tree.root]) as local:
            here = [r["session_id"] for r in local.search(query, scope="all")]
        with Index(store, [tree.root], refresh=False) as team:
            there = [r["session_id"] for r in team.search(query, scope="all")]
        # The store holds every case's tree: this case's sessions, the one that wrote
        # the spelling first (the others in bm25's order here, ts_rank's there).
        there = [sid for sid in there if sid in here]
        assert here[0] == there[0] == wrote, query
        assert set(there) == set(here)


@pytest.mark.parametrize(
    ("text", "spelling", "prefix", "held"),
    [
        ("the bug is in User_Profile.save()", "user_profile", False, True),  # any case
        ("the user profile page", "user_profile", False, False),  # prose
        ("superuser_profile = None", "user_profile", False, False),  # starts mid-token
        ("old_user_profile = None", "user_profile", False, True),  # "_" is a token edge
        ("user_profiles table", "user_profile", False, False),  # ends mid-token
        ("user_profiles table", "user_profile", True, True),  # the last word: a prefix
        ("git commit --no-verify", "no-verify", True, True),
        ("src/config/loader.rs:14:5", "loader.rs", False, True),
        ("the loader.rsx file", "loader.rs", False, False),
        ("見て設定.jsonを開く", "設 定 .json", False, True),  # stored: CJK spaced
    ],
)
def test_a_text_writes_a_spelling(text: str, spelling: str, prefix: bool, held: bool) -> None:
    from sessiondex.indexer.text import fts_text
    from sessiondex.query.snippets import holds_spelling

    assert holds_spelling(fts_text(text), spelling, prefix) is held


def _branch_tree(root: Path) -> tuple[ConfigTree, str, str]:
    """Session A on branch ``fix/user_profile`` whose first prompt says "user profile"
    twice as prose (so FTS5 takes the prompt for the metadata row's best column);
    session B, newer, saying "user profile" in a message of its own."""
    tree = ConfigTree(root)
    a = tree.session(
        cwd="/w/app",
        start="2026-11-01T10:00:00.000Z",
        git_branch="fix/user_profile",
        session_id=_id(root, 1),
    )
    a.user("the user profile is broken: saving a user profile with an avatar returns a 500")
    a.assistant("let me look")
    a.write()
    b = tree.session(cwd="/w/app", start="2026-11-02T10:00:00.000Z", session_id=_id(root, 2))
    b.user("a question about the app")
    b.assistant("sure")
    b.user("the user profile page is slow")
    b.write()
    for k in range(5):
        other = tree.session(
            cwd="/w/other", start="2026-10-01T10:00:00.000Z", session_id=_id(root, 100 + k)
        )
        other.user(f"deploy the app to staging {k}")
        other.write()
    return tree, a.session_id, b.session_id


def test_a_metadata_column_that_writes_the_spelling_is_the_snippet(tmp_path: Path) -> None:
    """FTS5's snippet(..., -1, ...) takes the metadata row's best-scoring column: the
    prompt's prose "user profile", not the branch that wrote ``user_profile`` and put
    the session first (docs/search.md#written-as-typed)."""
    tree, a, b = _branch_tree(tmp_path / "claude")
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    rows = search(db, "user_profile", ALL)
    assert [r["session_id"] for r in rows] == [a, b], rows
    assert rows[0]["snippet"] == "fix/[user_profile]", rows[0]["snippet"]


def test_the_team_store_takes_the_snippet_from_the_column_too(tmp_path: Path, store: str) -> None:
    tree, a, b = _branch_tree(tmp_path / "claude")
    pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
    assert pushed.exit_code == 0, pushed.output
    with Index(store, [tree.root], refresh=False) as team:
        rows = team.search("user_profile", scope="all")
    assert [r["session_id"] for r in rows] == [a, b], rows
    assert "user_profile" in rows[0]["snippet"], rows[0]["snippet"]
    assert "broken" not in rows[0]["snippet"], rows[0]["snippet"]


def _one_session(root: Path, literal: str, prose: list[str]) -> tuple[ConfigTree, str, Path]:
    """One session saying the words as prose (short messages, first) and then, in a long
    message, writing them as typed; returns the tree, that message's uuid, the path."""
    tree = ConfigTree(root)
    s = tree.session(cwd="/w/app", session_id=_id(root, 1))
    s.user("a question about the app")
    for text in prose:
        s.user(text)
        s.assistant("let me look")
    wrote = s.user(literal)
    s.assistant("thanks")
    return tree, wrote, s.write()


def _message_answers(index: Index, query: str, path: str) -> tuple[list[str], list[Any]]:
    """What the front ends read of a session's messages for ``query``: the web's hits
    (a search result links to the first) and MCP's best snippet."""
    hits = index.message_hits(query, [path]).get(path, [])
    return hits, index.message_snippets(query, [path], per_session=1).get(path, [])


@pytest.mark.parametrize(("query", "literal", "prose"), CASES, ids=[c[0] for c in CASES])
def test_a_result_opens_on_the_message_that_writes_the_spelling(
    tmp_path: Path, query: str, literal: str, prose: list[str]
) -> None:
    """The session ranks first, its snippet shows the spelling, and yet the web's result
    link (?at=, #msg-) opened its best message by bm25 alone, the short prose "the user
    profile page is slow", and MCP's first snippet of it was that prose too."""
    tree, wrote, path = _one_session(tmp_path / "claude", literal, prose)
    with Index(tmp_path / "i.db", [tree.root]) as index:
        assert f"[{query.strip('-')}]" in index.search(query, scope="all")[0]["snippet"]
        hits, snippets = _message_answers(index, query, str(path))
    assert hits[0] == wrote and len(hits) == len(set(hits)) == len(prose) + 1
    assert [s["message_uuid"] for s in snippets] == [wrote]
    assert f"[{query.strip('-')}]" in snippets[0]["snippet"]


def test_the_team_store_opens_on_the_spelling_too(tmp_path: Path, store: str) -> None:
    query, literal, prose = CASES[0]
    tree, wrote, path = _one_session(tmp_path / "claude", literal, prose)
    pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
    assert pushed.exit_code == 0, pushed.output
    with Index(store, [tree.root], refresh=False) as team:
        (there,) = [r["file_path"] for r in team.search(query, scope="all")]
        hits, snippets = _message_answers(team, query, there)
    assert hits[0] == wrote and [s["message_uuid"] for s in snippets] == [wrote]


# More words developers search as typed: a dotted name, an address, a version, a URL.
# PostgreSQL's own parser reads each as one token (a host, an e-mail, a file, a URL).
TYPED: list[tuple[str, str, list[str]]] = [
    (
        "os.path.join",
        "the fix: path = os.path.join(base_dir, name) instead of string concatenation in"
        " the loader module, which broke on windows",
        ["the os path join docs", "os: path join helper"],
    ),
    (
        "bob@example.com",
        "the invite to bob@example.com bounced with 550 mailbox unavailable; the SMTP relay"
        " rejects the domain since the DNS change last week",
        ["bob at example com", "example com bob"],
    ),
    (
        "v1.2.3",
        "pin the client to v1.2.3 because v1.3.0 changed the retry semantics and the"
        " integration tests started failing on the timeout path",
        ["v1 2 3 later", "v1 and 2 and 3"],
    ),
    (
        "https://example.com/api/v2",
        "the webhook posts to https://example.com/api/v2/events and gets a 404 since the"
        " api gateway was moved; the old path still works",
        ["example com api v2", "https example com api v2"],
    ),
]


def test_the_team_store_marks_the_spelling_in_the_snippet(tmp_path: Path, store: str) -> None:
    """The team store ranked the session that wrote the word first and showed a snippet
    with nothing marked ("Traceback (most recent call last): File" for auth/middleware):
    ts_headline reads the text with PostgreSQL's parser, which keeps a path, a dotted
    name, an address or a version whole, while the store's vectors hold the words as
    FTS5 splits them (indexer/text.py word_text). Its snippets mark what it matched,
    as the local index's do."""
    trees = []
    for i, (query, literal, prose) in enumerate(CASES + TYPED):
        tree, wrote, _ = _tree(tmp_path / f"claude{i}", literal, prose)
        pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
        assert pushed.exit_code == 0, pushed.output
        trees.append((query, tree, wrote))
    for i, (query, tree, wrote) in enumerate(trees):
        spelled = f"[{query.strip('-')}]"
        with Index(tmp_path / f"i{i}.db", [tree.root]) as local:
            here = local.search(query, scope="all")[0]
        with Index(store, [tree.root], refresh=False) as team:
            there = next(r for r in team.search(query, scope="all") if r["session_id"] == wrote)
            (hit,) = team.message_snippets(query, [there["file_path"]], per_session=1).values()
        assert here["session_id"] == wrote and spelled in here["snippet"], query
        assert spelled in there["snippet"], (query, there["snippet"])
        assert spelled in hit[0]["snippet"], (query, hit)


@pytest.mark.parametrize(
    ("typed", "marked"),
    [
        ("user_pro", "[user_profile]"),  # an identifier typed so far
        ("auth.log", "[auth.login]"),
        ("src/config/load", "[src/config/loader]"),
        ("--no-ver", "--[no-verify]"),
    ],
)
def test_the_last_word_typed_so_far_is_a_prefix_on_the_team_store_too(
    tmp_path: Path, store: str, typed: str, marked: str
) -> None:
    """The last word of a query is a prefix from three letters: locally for a word
    joined by punctuation too, but the team store made a prefix of a one-word term
    only, so ``user_pro`` found no session there ("no exact matches", the typo
    fallback's titles) while the local index found user_profile."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app", session_id=_id(tmp_path, 1))
    s.user("the crash is in user_profile.save() from auth.login_handler")
    s.assistant("see src/config/loader.rs, then git commit --no-verify")
    s.write()
    pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
    assert pushed.exit_code == 0, pushed.output
    with Index(tmp_path / "i.db", [tree.root]) as local:
        here = local.search_outcome(typed, scope="all")
    with Index(store, [tree.root], refresh=False) as team:
        there = team.search_outcome(typed, scope="all")
    for outcome in (here, there):
        assert outcome.kind == "match", (typed, outcome.kind)
        assert [r["session_id"] for r in outcome.rows] == [s.session_id]
        assert marked in outcome.rows[0]["snippet"], outcome.rows[0]["snippet"]


@pytest.mark.parametrize("typed", ["user_p", "user_pr", "user_profile.s", "src/config/lo"])
@pytest.mark.parametrize("backend", ["local", "team"])
def test_an_identifier_typed_so_far_keeps_its_session_first(
    tmp_path: Path, request: pytest.FixtureRequest, typed: str, backend: str
) -> None:
    """Typed one key at a time, an identifier whose last token is under three letters
    was the exact phrase of its tokens (``user p``): no text holds it, so the picker's
    rows vanished for a keystroke or two, replaced by the typo fallback's titles or by
    nothing. The tokens before the short one are searched, and the session that wrote
    the identifier so far ranks first, ahead of prose that merely says "user"."""
    tree = ConfigTree(tmp_path / "claude")
    wrote = tree.session(
        cwd="/w/app", start="2026-11-01T10:00:00.000Z", session_id=_id(tmp_path, 1)
    )
    wrote.user("a question about the app")
    wrote.assistant(
        "the crash is in user_profile.save() when the email field is empty; see"
        " src/config/loader.rs for where the serializer is configured, line 14"
    )
    wrote.user("thanks")
    wrote.write()
    for n, text in enumerate(["the user asked for a dark mode", "every user sees the banner"]):
        prose = tree.session(
            cwd="/w/app", start=f"2026-11-0{n + 2}T10:00:00.000Z", session_id=_id(tmp_path, n + 2)
        )
        prose.user(f"{text}; also the src folder and the config")
        prose.write()
    if backend == "team":
        store = request.getfixturevalue("store")
        pushed = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "push", "--to", store])
        assert pushed.exit_code == 0, pushed.output
        index = Index(store, [tree.root], refresh=False)
    else:
        index = Index(tmp_path / "i.db", [tree.root])
    with index:
        outcome = index.search_outcome(typed, scope="all", typing=True)
        # the message hits (the web page's marks, MCP's best hits) take the same words
        hits = index.message_hits(typed, [str(wrote.path)]).get(str(wrote.path), [])
    assert outcome.kind == "match", (typed, outcome.kind)
    assert outcome.rows[0]["session_id"] == wrote.session_id, outcome.rows
    assert hits[:1] == [wrote.entries[1]["uuid"]], hits


@pytest.mark.parametrize(
    ("typed", "spaced", "literal_prefix"),
    [
        ("user_p", "user_", True),  # the short last token is left to the spelling
        ("loader.rs", "loader.", True),  # asked only when the phrase found nothing
        ("user_pro", "user_pro", True),  # a prefix already: no short tail
        ("a_b", "a_b", False),  # nothing left worth searching without it
        ("--no-v", "--no-v", False),
        ("user_p deploy", "user_p", False),  # not the last word: searched whole
    ],
)
def test_which_typed_identifiers_leave_their_short_tail_to_the_spelling(
    typed: str, spaced: str, literal_prefix: bool
) -> None:
    """The words tried when the phrase of the query's words found nothing (_rank)."""
    first = query_words(typed, short_tail=True)[0]
    assert (first.spaced, first.literal_prefix) == (spaced, literal_prefix)
    assert query_words(typed)[0].spaced == typed.split()[0]  # the first try: as typed
