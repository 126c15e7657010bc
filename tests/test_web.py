"""The web view (``sessiondex serve``), in process: Datasette's own test client against a
real index of a real transcript tree. The browser test is tests/test_web_browser.py."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlencode

import pytest

pytest.importorskip("datasette", reason="the web extra is not installed")

from sessiondex import Index  # noqa: E402
from sessiondex.web.app import build  # noqa: E402
from sessiondex.web.conversation import PAGE_TURNS, mark_snippet, thread_turns  # noqa: E402
from sessiondex.web.state import WebIndex  # noqa: E402
from tests.builders import ConfigTree  # noqa: E402
from tests.web_tree import BLOG, PR_URL, SCRIPT, SHOP, build_web_tree  # noqa: E402


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Web:
    tree: Any  # a WebTree; a LongTree for the paging tests
    state: WebIndex
    clock: FakeClock
    datasette: Any
    loop: asyncio.AbstractEventLoop
    db: Path

    def request(self, path: str, method: str = "GET") -> Any:
        call = getattr(self.datasette.client, method.lower())
        return self.loop.run_until_complete(call(path))

    def get(self, path: str, status: int = 200) -> str:
        response = self.request(path)
        assert response.status_code == status, (path, response.status_code, response.text[:500])
        return str(response.text)


@contextmanager
def _served(db: Path, root: Path, tree: Any) -> Iterator[Web]:
    clock = FakeClock()
    state = WebIndex(Index(db, [root]), clock=clock)
    state.start()
    loop = asyncio.new_event_loop()
    try:
        yield Web(tree, state, clock, build(state, db), loop, db)
    finally:
        loop.close()
        state.close()


@contextmanager
def _serving(root: Path) -> Iterator[Web]:
    db = root / "index.db"
    tree = build_web_tree(root, db)
    with _served(db, tree.tree.root, tree) as served:
        yield served


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    """One server for the tests that only read (building the tree is most of the time)."""
    with _serving(tmp_path_factory.mktemp("web")) as served:
        yield served


@pytest.fixture
def fresh_web(tmp_path: Path) -> Iterator[Web]:
    """A server of its own, for a test that changes transcripts or the clock."""
    with _serving(tmp_path) as served:
        yield served


def _session_links(page: str) -> list[str]:
    return re.findall(r'href="/session/([0-9a-f-]{36})', page)


# ----------------------------------------------------------------- home
def test_home_lists_recent_sessions_with_facets(web: Web) -> None:
    page = web.get("/")
    links = _session_links(page)
    cli_order = web.state.call(lambda index: [s["session_id"] for s in index.list(scope="all")])
    assert links == cli_order  # the CLI's list --scope all: same sessions, same order
    assert {web.tree.auth_id, web.tree.blog_id, web.tree.evil_id, web.tree.fork_id} <= set(links)
    assert "Auth refactor" in page and "acme/shop#12" in page and "#auth" in page
    for facet in ("since", "project", "branch", "tag", "pr"):
        assert f'data-facet="{facet}"' in page
    assert 'action="/search"' in page  # the search box


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("project=-tmp-sessiondex-web-tests-blog", {"blog", "evil"}),
        ("branch=fix/auth", {"auth", "fork"}),
        ("tag=auth", {"auth"}),
        (f"pr={quote(PR_URL, safe='')}", {"auth"}),
        # any spelling /search takes (it showed 0 sessions; helper 130)
        (f"pr={quote('acme/shop#12', safe='')}", {"auth"}),
        (f"pr={quote(PR_URL + '/files#diff', safe='')}", {"auth"}),
        ("branch=feat/comments&project=-tmp-sessiondex-web-tests-blog", {"blog"}),
    ],
)
def test_home_filters(web: Web, query: str, expected: set[str]) -> None:
    t = web.tree
    ids = {"auth": t.auth_id, "blog": t.blog_id, "evil": t.evil_id, "fork": t.fork_id}
    page = web.get("/?" + query)
    assert set(_session_links(page)) == {ids[name] for name in expected}
    assert "remove this filter" in page


def test_home_date_filter_and_bad_date(web: Web) -> None:
    # The tree's sessions are from early 2026-11; only the fork was written today.
    assert _session_links(web.get("/?since=1d")) == [web.tree.fork_id]
    page = web.get("/?since=soon")
    assert "cannot read --since" in page and web.tree.auth_id in page


# ----------------------------------------------------------------- search
def test_search_is_the_cli_search_with_marked_snippets(web: Web) -> None:
    page = web.get("/search?q=heartbeat")
    expected = web.state.call(
        lambda index: [s["session_id"] for s in index.search("heartbeat", scope="all")]
    )
    assert _session_links(page) == expected and web.tree.auth_id in expected
    assert "<mark>heartbeat</mark>" in page
    # Each result links to its best message, which the session page anchors.
    link = re.search(
        rf'href="(/session/{web.tree.auth_id}\?q=heartbeat&amp;at=([0-9a-f-]+)#msg-\2)"', page
    )
    assert link is not None
    assert f'id="msg-{link.group(2)}"' in web.get(html.unescape(link.group(1)).split("#")[0])


@pytest.mark.parametrize(
    "query", [PR_URL + "/files", "github.com/acme/shop/pull/12#discussion", "acme/shop#12"]
)
def test_search_a_pr_lists_linked_sessions(web: Web, query: str) -> None:
    page = web.get("/search?q=" + quote(query, safe=""))
    assert set(_session_links(page)) == {web.tree.auth_id}
    assert "for the PR" in page and "linked" in page


def test_search_raw_syntax_error_is_a_message(web: Web) -> None:
    page = web.get("/search?raw=1&q=" + quote('"unbalanced', safe=""))
    assert "FTS5 cannot parse" in page


def test_search_typo_falls_back_to_close_titles(web: Web) -> None:
    page = web.get("/search?q=atuh+refactr")
    assert web.tree.auth_id in _session_links(page) and "closest titles" in page


def test_search_says_when_no_session_has_every_word(web: Web) -> None:
    # Labelled as the CLI labels them: the web view reads the same search outcome.
    page = web.get("/search?q=heartbeat+zeppelin")
    assert "No session has all of: heartbeat, zeppelin; best partial matches:" in page
    assert web.tree.auth_id in _session_links(page)


# ----------------------------------------------------------------- session
def test_session_page_shows_conversation_and_metadata(web: Web) -> None:
    t = web.tree
    page = web.get(f"/session/{t.auth_id}")
    for text in ("Auth refactor", "/tmp/sessiondex-web-tests/shop", "fix/auth", PR_URL, "auth"):
        assert text in page
    # The tree is not in ~/.claude: Claude Code is told where it is.
    resume = f"cd /tmp/sessiondex-web-tests/shop &amp;&amp; CLAUDE_CONFIG_DIR={t.tree.root} claude"
    assert f"{resume} --resume {t.auth_id}" in page
    assert 'data-copy="#resume-command"' in page
    assert f'id="msg-{t.heartbeat_uuid}"' in page
    assert f'id="msg-{t.merged_uuid}"' in page  # an entry merged into the message shown
    # Markdown, with the code highlighted by Pygments; tool calls folded.
    assert '<code class="language-python"><span class="k">def</span>' in page
    assert '<details class="tool call"><summary>Tool call <code>Bash</code>' in page
    assert "3 passed in 0.4s" in page
    # The subagent's transcript inline, at its call.
    assert (
        page.index("Asking a subagent")
        < page.index("SUBAGENT-PROMPT")
        < page.index("SUBAGENT-ANSWER")
        < page.index("MAIN-AFTER")
    )
    assert "Auth refactor: plan B" in page  # its fork
    fork = web.get(f"/session/{t.fork_id}")
    assert "Forked from" in fork and re.search(
        rf'href="/session/{t.auth_id}\?at=([0-9a-f-]+)#msg-\1"', fork
    )
    # A session of one page shows it as before: no page links.
    assert 'class="pager"' not in page and "page 1 of" not in page


def test_session_page_marks_search_hits(web: Web) -> None:
    t = web.tree
    page = web.get(f"/session/{t.auth_id}?q=heartbeat")
    assert re.search(rf'<article class="msg user hit" id="msg-{t.heartbeat_uuid}"', page)
    # A hit inside a subagent opens its folded transcript.
    assert '<details class="subagent" open>' in page
    assert f'id="msg-{t.subagent_uuid}"' in page


def test_session_page_by_prefix_and_unknown(web: Web) -> None:
    assert "Auth refactor" in web.get(f"/session/{web.tree.auth_id[:8]}")
    assert "No session" in web.get("/session/00000000-0000-4000-8000-000000000000", status=404)
    for path in ("/session/..%2F..%2Fetc%2Fpasswd", "/session/x.jsonl"):  # never a path
        response = web.request(path)
        assert response.status_code in (302, 404) and "root:" not in response.text


def test_transcript_strings_are_escaped_everywhere(web: Web) -> None:
    pages = [
        web.get("/"),
        web.get(f"/session/{web.tree.evil_id}"),
        web.get("/search?q=xsscanary"),
        web.get("/search?q=" + quote(SCRIPT)),
    ]
    for page in pages:
        assert "<script>window" not in page and "<img src=x" not in page
        # as text only (a snippet may cut it after the name)
        assert "javascript:" not in page.replace("javascript:window.__pwned", "")
        assert not re.search(r'href="javascript', page)
        assert " onerror=" not in page.replace("onerror=&#34;", "").replace("onerror=&quot;", "")
    session = pages[1]
    assert "&lt;script&gt;window.__pwned = 1;" in session
    assert "&lt;img src=x" in session  # the title
    assert 'src="http' not in session  # no image is loaded from a transcript
    assert "&lt;b onmouseover" in session
    assert "<mark>xsscanary</mark>" in pages[2]


def test_security_headers_and_read_only(web: Web) -> None:
    response = web.request("/")
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert response.headers["referrer-policy"] == "no-referrer"
    assert web.request("/sessiondex/sessions").headers["x-content-type-options"] == "nosniff"
    for path in ("/", "/search?q=x", f"/session/{web.tree.auth_id}"):
        assert web.request(path, method="POST").status_code == 405
    # Datasette's connections are mode=ro: SQL cannot write even if it got that far.
    bad = web.request("/sessiondex.json?sql=" + quote("delete from sessions"))
    assert bad.status_code == 400
    assert web.state.call(lambda index: len(index.list(scope="all", all_kinds=True))) == len(
        _session_links(web.get("/"))
    )
    conn = web.datasette.get_database("sessiondex").connect()
    try:
        with pytest.raises(Exception, match="readonly"):
            conn.execute("delete from meta")  # no trigger: the mode alone refuses it
    finally:
        conn.close()


def _session_row_id(web: Web) -> int:
    rows = web.request("/sessiondex/sessions.json?_shape=array&_col=id").json()
    return int(rows[0]["id"])


# Which Content-Security-Policy each kind of response carries: our pages their own, every
# other response (Datasette's pages, JSON, CSV, static files, errors) the one with the
# hashes of Datasette's inline scripts.
@pytest.mark.parametrize(
    ("path", "ours"),
    [
        ("/", True),
        ("/search?q=heartbeat", True),
        ("/session/{auth_id}", True),
        ("/session/00000000-0000-4000-8000-000000000000", True),  # our 404
        ("/sessiondex", False),
        ("/sessiondex/sessions", False),
        ("/sessiondex/sessions/{row_id}", False),
        ("/sessiondex?sql=select+session_id,+project_key+from+sessions", False),
        ("/sessiondex/sessions_for_pr?pr=acme/shop%2312", False),
        ("/sessiondex/sessions.json", False),
        ("/sessiondex/sessions.csv", False),
        ("/-/versions", False),
        ("/-/plugins", False),
        ("/-/static/app.css", False),
        ("/-/sessiondex/pygments.css", False),
        ("/sessiondex/no_such_table", False),  # Datasette's 404 page
    ],
)
def test_every_response_carries_a_content_security_policy(web: Web, path: str, ours: bool) -> None:
    from sessiondex.web.plugin import CSP, datasette_csp

    path = path.format(auth_id=web.tree.auth_id, row_id=_session_row_id(web))
    response = web.request(path)
    assert response.status_code in (200, 404), (path, response.status_code)
    policy = response.headers.get_list("content-security-policy")
    assert policy == [CSP if ours else datasette_csp(web.datasette.jinja_env)], path
    assert response.headers["x-content-type-options"] == "nosniff"
    if not ours:
        assert "default-src 'none'" in policy[0] and "'unsafe-inline'" not in _scripts(policy[0])
    if response.headers["content-type"].startswith("text/html"):
        # Every inline script the page holds is one the policy lets run (the browser
        # test shows them running), and no other.
        for body in re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", response.text, re.S):
            digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in _scripts(policy[0]), (path, body[:80])


def _scripts(policy: str) -> str:
    return next(d for d in policy.split(";") if d.strip().startswith("script-src"))


@pytest.mark.parametrize(
    ("template", "scripts"),
    [
        ("<p>no script</p>", []),
        ('<script src="/-/static/table.js" defer></script>', []),
        ("<script>\nrun();\n</script>", ["\nrun();\n"]),
        ("<script>A = {{ datasette_allow_facet }};</script>", ["A = true;", "A = false;"]),
        # A plugin's extra_body_script: a value no view here gives it, so no hash.
        ("<script>{{ body_script.script }}</script>", []),
        ('<script type="module">a()</script><script>b()</script>', ["a()", "b()"]),
        ("<script>{% if %}</script>", []),  # not a template: nothing to allow
    ],
)
def test_inline_script_hashes_are_those_of_the_rendered_scripts(
    template: str, scripts: list[str]
) -> None:
    from sessiondex.web.plugin import inline_script_hashes

    expected = {
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
        for s in scripts
    }
    assert set(inline_script_hashes([template])) == expected


def test_datasette_tables_and_canned_queries_stay(web: Web) -> None:
    assert "sessions_for_pr" in web.get("/sessiondex")
    assert web.tree.auth_id in web.get("/sessiondex/sessions")
    for pr in ("acme/shop#12", PR_URL, "12"):
        rows = web.request("/sessiondex/sessions_for_pr.json?_shape=array&pr=" + quote(pr)).json()
        assert {r["session_id"] for r in rows} >= {web.tree.auth_id}, pr
    rows = web.request("/sessiondex/sessions_on_branch.json?_shape=array&branch=fix/auth").json()
    assert web.tree.auth_id in {r["session_id"] for r in rows}
    rows = web.request("/sessiondex/busiest_projects.json?_shape=array").json()
    assert {r["cwd"]: r["sessions"] for r in rows} == {SHOP: 2, BLOG: 2}  # + the fork
    # Session IDs in Datasette's tables link to the session page.
    assert f'<a href="/session/{web.tree.auth_id}">' in web.get("/sessiondex/sessions")


@pytest.mark.parametrize("pr", ["garbage", "acme/shop#x", "12abc"])
def test_sessions_for_pr_says_when_it_cannot_read_the_pr(web: Web, pr: str) -> None:
    """A PR the saved query cannot read answered an empty table, as if nothing linked
    it; it now says so, in ``from-pr``'s words (the same parse), on the page and in
    the JSON, as Datasette reports a query's error (400)."""
    from sessiondex.query.prs import NotAPullRequest, pr_argument

    with pytest.raises(NotAPullRequest) as refused:
        pr_argument(pr)
    message = str(refused.value)
    page = web.request("/sessiondex/sessions_for_pr?pr=" + quote(pr))
    assert page.status_code == 400
    assert message in html.unescape(page.text)
    answer = web.request("/sessiondex/sessions_for_pr.json?pr=" + quote(pr))
    assert answer.status_code == 400
    assert answer.json()["ok"] is False and answer.json()["error"] == message


@pytest.mark.parametrize("pr", ["", "   "])
def test_sessions_for_pr_without_a_pr_is_the_empty_form(web: Web, pr: str) -> None:
    """The query's page before anything is typed: its form, no complaint."""
    answer = web.request("/sessiondex/sessions_for_pr.json?_shape=array&pr=" + quote(pr))
    assert answer.status_code == 200 and answer.json() == []
    assert 'name="pr"' in web.get("/sessiondex/sessions_for_pr")


def test_pages_follow_new_messages_with_a_throttled_refresh(fresh_web: Web) -> None:
    web = fresh_web
    t = web.tree
    before = web.state.refreshes
    web.get("/")
    assert web.state.refreshes == before  # the start refreshed under a second ago
    web.clock.now += 1.5
    web.get("/")
    web.get("/")
    assert web.state.refreshes == before + 1  # at most one refresh a second
    with t.auth_path.open("ab") as fh:
        import orjson

        fh.write(
            orjson.dumps(
                {
                    "parentUuid": None,
                    "isSidechain": False,
                    "type": "user",
                    "message": {"role": "user", "content": "a brandnewword arrives"},
                    "uuid": "11111111-2222-4333-8444-555555555555",
                    "timestamp": "2026-11-29T10:00:00.000Z",
                    "sessionId": t.auth_id,
                    "cwd": "/tmp/sessiondex-web-tests/shop",
                }
            )
            + b"\n"
        )
    assert "<mark>brandnewword" not in web.get("/search?q=brandnewword")  # throttled
    web.clock.now += 1.5
    assert "<mark>brandnewword</mark>" in web.get("/search?q=brandnewword")
    # Datasette's own read-only connections see the refreshed (WAL) database too, and
    # read the compressed message text (the prepare_connection hook).
    rows = web.request(
        "/sessiondex/message_text.json?_shape=array&text__contains=brandnewword"
    ).json()
    assert len(rows) == 1


def test_no_refresh_while_a_watcher_keeps_the_index_live(
    fresh_web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    web = fresh_web
    monkeypatch.setattr(Index, "watcher_alive", lambda self: True)
    before = web.state.refreshes
    web.clock.now += 5
    web.get("/")
    assert web.state.refreshes == before


# ----------------------------------------------------------------- long sessions
LONG_PAIRS = 1500  # prompts and answers: 3,000-odd turns, 16 pages


@dataclass
class LongTree:
    root: Path
    session_id: str
    turns: list[str]  # the uuid each turn is shown under, in order
    near: str  # the entry of a strong hit on page 3 (joined to its response)
    far: str  # the entry of a weaker hit on page 13
    sub_call: str  # the turn whose call started a subagent, and the subagent's hit
    sub_hit: str
    fork_id: str
    fork_point: str  # the parent's message the fork's origin link names (page 9)
    short_id: str

    def page_of(self, uuid: str) -> int:
        return self.turns.index(uuid) // PAGE_TURNS + 1

    @property
    def pages(self) -> int:
        return -(-len(self.turns) // PAGE_TURNS)


def _build_long_tree(root: Path) -> LongTree:
    tree = ConfigTree(root / "claude")
    long = tree.session(cwd=SHOP, git_branch="main")
    turns: list[str] = []
    near = far = sub_call = sub_hit = ""
    for i in range(LONG_PAIRS):
        if i == 700:
            task = long.assistant(
                "Asking a subagent",
                tool_uses=[("Task", {"description": "look", "prompt": "find the quokka"})],
            )
            sub = long.subagent(agent_id="ag9", tool_use_id=task.tool_use_ids[0])
            sub.user("find the quokka")
            sub.assistant("no quokka here")
            sub_hit = sub.records[-1]["uuid"]
            sub_call = task.uuids[0]
            turns.append(sub_call)
            turns.append(long.tool_result(task.tool_use_ids[0], "none found"))
        turns.append(long.user(f"question {i} about the build"))
        if i == 230:
            # thinking, then text: one message shown under the thinking entry's uuid
            answer = long.assistant("zanzibar zanzibar zanzibar", thinking="let me see")
            near = answer.uuids[1]
        elif i == 1250:
            answer = long.assistant(f"answer {i}: the zanzibar build is slow, as said before")
            far = answer.uuids[0]
        else:
            answer = long.assistant(f"answer {i}: done")
        turns.append(answer.uuids[0])
    long.meta("custom-title", customTitle="The long one")
    long.write()
    fork_point = turns[8 * PAGE_TURNS + 17]  # on page 9
    # A fork of the session after a compaction: its first entry names a message deep
    # in the parent (sessiondex's own forks copy from the first message, page 1).
    fork = tree.session(cwd=SHOP, git_branch="main")
    origin = {"sessionId": long.session_id, "messageUuid": fork_point}
    fork.user("carry on from here", forkedFrom=origin)
    fork.assistant("carrying on", forkedFrom=origin)
    fork.write()
    short = tree.session(cwd=BLOG, git_branch="main")
    short.user("a short one")
    short.assistant("indeed")
    short.write()
    return LongTree(
        tree.root,
        long.session_id,
        turns,
        near,
        far,
        sub_call,
        sub_hit,
        fork.session_id,
        fork_point,
        short.session_id,
    )


@pytest.fixture(scope="module")
def long_web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Web]:
    root = tmp_path_factory.mktemp("long")
    tree = _build_long_tree(root)
    with _served(root / "index.db", root / "claude", tree) as served:
        yield served


def _main_articles(page: str, tree: LongTree) -> list[str]:
    """The uuids of the session's own messages on a page (not its subagent's)."""
    found = re.findall(r'<article class="msg [^"]*" id="msg-([0-9a-f-]+)"', page)
    return [u for u in found if u != tree.sub_hit and u in set(tree.turns)]


def _pager_links(page: str) -> dict[str, str]:
    nav = page[page.index('<nav class="pager"') :]
    nav = nav[: nav.index("</nav>")]
    return {
        rel: html.unescape(href) for href, rel in re.findall(r'href="([^"]+)" rel="(\w+)"', nav)
    }


@pytest.mark.parametrize("page", [1, 2, 9, 16])
def test_a_long_session_is_shown_a_page_at_a_time(long_web: Web, page: int) -> None:
    """A session of 12,000 messages was one page of 20 MB (14 s in Chromium)."""
    t: LongTree = long_web.tree
    assert t.pages == 16
    body = long_web.get(f"/session/{t.session_id}" + (f"?page={page}" if page > 1 else ""))
    start = (page - 1) * PAGE_TURNS
    assert _main_articles(body, t) == t.turns[start : start + PAGE_TURNS]
    total = len(t.turns)
    end = min(start + PAGE_TURNS, total)
    assert f"page {page} of 16" in body and f"(turns {start + 1}–{end} of {total})" in body
    links = _pager_links(body)
    url = f"/session/{t.session_id}?page="
    expected = {}
    if page > 1:
        expected |= {"first": url + "1", "prev": url + str(page - 1)}
    if page < 16:
        expected |= {"next": url + str(page + 1), "last": url + "16"}
    assert links == expected
    assert body.count('<nav class="pager"') == 2  # above and below the conversation


def test_pages_are_the_turns_read_session_counts(long_web: Web) -> None:
    """One notion of a turn: page 3 starts at read_session's turn 400 (with tools)."""
    from sessiondex.mcp_server.service import SessionService, Settings

    t: LongTree = long_web.tree
    service = SessionService(lambda: Index(long_web.db, [t.root]), Settings(cwd=SHOP))
    try:
        text = service.read_session(
            t.session_id, offset=2 * PAGE_TURNS, limit=3, include_tools=True
        )
    finally:
        service.close()
    first = re.search(r"^\[400\] \w+ · [^·]+ · uuid ([0-9a-f-]+)$", text, re.M)
    assert first is not None
    body = long_web.get(f"/session/{t.session_id}?page=3")
    assert _main_articles(body, t)[0] == first.group(1) == t.turns[2 * PAGE_TURNS]


def test_a_search_result_opens_the_page_of_its_hit(long_web: Web) -> None:
    t: LongTree = long_web.tree
    results = long_web.get("/search?q=zanzibar")
    link = re.search(rf'href="(/session/{t.session_id}\?[^"#]*)#msg-([0-9a-f-]+)"', results)
    assert link is not None and link.group(2) == t.near  # the best hit, on page 3
    body = long_web.get(html.unescape(link.group(1)))
    assert t.page_of(t.turns[t.turns.index(_main_articles(body, t)[0])]) == 3
    assert f'<span class="alias" id="msg-{t.near}"></span>' in body
    assert "page 3 of 16" in body


def test_hits_on_other_pages_are_counted_and_a_link_away(long_web: Web) -> None:
    t: LongTree = long_web.tree
    base = f"/session/{t.session_id}?q=zanzibar"
    # No page asked: the page of the first hit, which says where the others are.
    first = long_web.get(base)
    assert "page 3 of 16" in first and "2 messages matching" in first
    assert "1 on this page" in first and "previous match" not in first
    nxt = re.search(r'<a href="([^"]+)">next match ›</a> \(page (\d+)\)', first)
    assert nxt is not None and int(nxt.group(2)) == t.page_of(t.far) == 13
    assert nxt.group(1).endswith(f"at={t.far}#msg-{t.far}")
    second = long_web.get(html.unescape(nxt.group(1)).split("#")[0])
    assert "page 13 of 16" in second and f'id="msg-{t.far}"' in second
    assert re.search(rf'<article class="msg assistant hit" id="msg-{t.far}"', second)
    back = re.search(r'<a href="([^"]+)">‹ previous match</a> \(page 3\)', second)
    assert back is not None and back.group(1).endswith(f"#msg-{t.near}")
    assert "next match" not in second
    # Page links keep the search, and say which page (the first hit's is not page 1).
    assert _pager_links(second)["first"] == base + "&page=1"
    page1 = long_web.get(base + "&page=1")
    assert "page 1 of 16" in page1 and "0 on this page" in page1 and "next match" in page1
    # "clear" drops the search, not the page.
    assert f'<a href="/session/{t.session_id}?page=13">clear</a>' in second


def test_a_hit_in_a_subagent_opens_the_page_of_its_call(long_web: Web) -> None:
    t: LongTree = long_web.tree
    body = long_web.get(f"/session/{t.session_id}?q=quokka")
    assert f"page {t.page_of(t.sub_call)} of 16" in body and t.page_of(t.sub_call) == 8
    assert '<details class="subagent" open>' in body and f'id="msg-{t.sub_hit}"' in body


def test_a_fork_s_origin_link_opens_the_page_of_the_fork_point(long_web: Web) -> None:
    t: LongTree = long_web.tree
    fork = long_web.get(f"/session/{t.fork_id}")
    link = re.search(rf'href="(/session/{t.session_id}\?at={t.fork_point})#msg-', fork)
    assert link is not None
    parent = long_web.get(link.group(1))
    assert "page 9 of 16" in parent and f'id="msg-{t.fork_point}"' in parent
    assert t.page_of(t.fork_point) == 9


def test_a_message_not_on_the_conversation_opens_the_first_page(long_web: Web) -> None:
    t: LongTree = long_web.tree
    body = long_web.get(f"/session/{t.session_id}?at=00000000-0000-4000-8000-000000000000")
    assert "page 1 of 16" in body and "is not on the live conversation" in body


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("0", "takes a page number from 1, not '0'"),
        ("-2", "takes a page number from 1"),
        ("abc", "takes a page number from 1, not 'abc'"),
        ("1.5", "takes a page number from 1"),
        ("\uff12", "takes a page number from 1"),  # a fullwidth 2: int() would take it
        ("17", "has 16 pages of conversation: there is no page 17."),
        ("99999999999999999999", "takes a page number from 1"),
    ],
)
def test_a_bad_page_is_a_400_that_says_why(long_web: Web, value: str, says: str) -> None:
    t: LongTree = long_web.tree
    response = long_web.request(f"/session/{t.session_id}?page={quote(value)}")
    assert response.status_code == 400
    assert says in html.unescape(response.text)
    assert response.headers["content-security-policy"]
    # and a way on: the last page for a page past it, else the first
    if value == "17":
        assert f'href="/session/{t.session_id}?page=16">its last page</a>' in response.text
    else:
        assert f'href="/session/{t.session_id}">its first page</a>' in response.text


@pytest.mark.parametrize("query", ["", "?page=", "?page=1"])
def test_a_short_session_is_one_page_without_page_links(long_web: Web, query: str) -> None:
    body = long_web.get(f"/session/{long_web.tree.short_id}{query}")
    assert "a short one" in body and 'class="pager"' not in body
    response = long_web.request(f"/session/{long_web.tree.short_id}?page=2")
    assert response.status_code == 400 and "has 1 page of conversation" in response.text


def test_every_hit_of_a_common_word_is_counted_marked_and_linked(long_web: Web) -> None:
    """The session page asked the index for the search page's 200 best hits a session:
    "question" is in each of the 1,500 prompts, all as good, so the best 200 were the
    first 200, on pages 1 and 2. Page 9 said "200 messages matching · 0 on this page",
    marked none of its prompts and linked no next match."""
    t: LongTree = long_web.tree
    body = long_web.get(f"/session/{t.session_id}?q=question&page=9")
    prompts = body.count('<article class="msg user')
    assert prompts > 50
    assert body.count('<article class="msg user hit"') == prompts
    assert f"{LONG_PAIRS} messages matching" in body and f"{prompts} on this page" in body
    assert "(page 8)" in body and "(page 10)" in body  # previous and next match
    # No ?page=: the first hit's page; the last page has hits too.
    assert "page 1 of 16" in long_web.get(f"/session/{t.session_id}?q=question")
    last = long_web.get(f"/session/{t.session_id}?q=question&page=16")
    assert '<article class="msg user hit"' in last and "next match" not in last


def test_on_this_page_counts_hits_as_the_hits_line_does(tmp_path: Path) -> None:
    """The hits line counts hits by entry (the index's message rows), and so did "N on
    this page" not: a response written one line per text block is one message, so two
    hits in it were "3 messages matching · 1 on this page" with all three on the page."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=SHOP, git_branch="main")
    for i in range(PAGE_TURNS // 2 + 10):  # two turns a pair: two pages
        s.user(f"question {i}")
        if i == PAGE_TURNS // 2 + 5:  # page 2: one response, two text lines
            first = s.assistant("the wombat is here")
            s.assistant("and the wombat is there")
            s.records[-1]["message"]["id"] = first.message_id
        else:
            s.assistant("a wombat answer" if i == PAGE_TURNS // 2 + 7 else f"answer {i}")
    s.write()
    with _served(tmp_path / "index.db", tree.root, tree) as web:
        body = html.unescape(web.get(f"/session/{s.session_id}?q=wombat"))
    assert "page 2 of 2" in body and "3 messages matching" in body
    assert "3 on this page" in body


# ----------------------------------------------------------------- pieces
def test_mark_snippet_escapes_and_balances() -> None:
    start, end = "\x02", "\x03"
    assert mark_snippet(f"a {start}<b>{end} c", start, end) == "a <mark>&lt;b&gt;</mark> c"
    assert mark_snippet(f"{end}x{start}y", start, end) == "x<mark>y</mark>"
    assert mark_snippet(f"{start}{start}z{end}{end}", start, end) == "<mark>z</mark>"


def test_aliases_follow_the_message_they_join(tmp_path: Path) -> None:
    from sessiondex.render.conversation import build_conversation

    db = tmp_path / "index.db"
    tree = build_web_tree(tmp_path, db)
    with Index(db, [tree.tree.root]) as index:
        session = index.resolve(tree.auth_id).session
    conv = build_conversation(session)
    shown = thread_turns(conv.iter_items(), conv.chain)
    extra = [shown.anchors(n) for n in range(len(shown.turns))]
    assert any(tree.merged_uuid in uuids for uuids in extra)
    assert tree.heartbeat_uuid not in {u for uuids in extra for u in uuids}


# ----------------------------------------------------------------- the command
def test_loopback_hosts() -> None:
    from sessiondex.web.hosts import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.168.1.5", "example.test"]))


@pytest.mark.parametrize(
    ("header", "loopback"),
    [
        ("127.0.0.1:8001", True),
        ("localhost", True),
        ("[::1]:8001", True),
        ("LOCALHOST.:8001", True),
        ("evil.test", False),
        ("localhost:8001@evil.test", False),  # helper 91: no browser sends it; refused
        ("localhost:8001:9", False),
        ("localhost evil.test", False),
        ("[::1", False),
        ("", False),
    ],
)
def test_a_host_header_names_a_loopback_host_only_as_a_browser_sends_one(
    header: str, loopback: bool
) -> None:
    from sessiondex.web.hosts import host_of, is_loopback

    assert is_loopback(host_of(header)) is loopback


def test_serve_warns_off_loopback_and_reports_a_bad_address(tmp_path: Path) -> None:
    import socket

    from click.testing import CliRunner

    from sessiondex.cli.main import cli

    base = ["--config-dir", str(tmp_path / "claude"), "--db", str(tmp_path / "index.db")]
    (tmp_path / "claude" / "projects").mkdir(parents=True)
    # 192.0.2.1 (TEST-NET-1) is on no interface here: the bind fails, nothing is sent.
    result = CliRunner().invoke(cli, [*base, "serve", "--host", "192.0.2.1", "--port", "0"])
    assert result.exit_code == 1
    assert "may hold secrets" in result.stderr and "cannot serve on 192.0.2.1" in result.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        result = CliRunner().invoke(cli, [*base, "serve", "--port", port])
    assert result.exit_code == 1 and f"cannot serve on 127.0.0.1:{port}" in result.stderr
    assert "secrets" not in result.stderr


def test_markdown_is_rendered_safely() -> None:
    from sessiondex.web.conversation import render_markdown

    html = render_markdown(
        "**bold** <script>x()</script> [a](javascript:x()) [b](https://example.test/)"
        " ![img](https://example.test/p.png)\n\n| a | b |\n|--:|:-:|\n| 1 | 2 |\n\n"
        "```nosuchlanguage\n<tag>\n```\n\n```python\nimport os\n```"
    )
    assert "<strong>bold</strong>" in html and "&lt;script&gt;x()&lt;/script&gt;" in html
    assert "javascript:" not in html.replace("(javascript:x())", "")
    assert '<a href="https://example.test/" rel="noopener noreferrer nofollow">b</a>' in html
    assert "<img" not in html and "style=" not in html
    assert '<th class="al-right">a</th>' in html
    assert "&lt;tag&gt;" in html  # an unknown language: escaped, not highlighted
    assert '<span class="kn">import</span>' in html


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("localhost", 200),
        ("localhost:8765", 200),
        ("127.0.0.1:8765", 200),
        ("[::1]:8765", 200),
        ("app.localhost", 200),
        # DNS rebinding: a page's own name pointed at 127.0.0.1 reaches the server, and
        # the browser sends that name
        ("attacker.example", 421),
        ("attacker.example:8765", 421),
        ("127.0.0.1.attacker.example", 421),
        ("192.168.1.5:8765", 421),
    ],
)
def test_only_requests_naming_a_loopback_host_are_answered(
    web: Web, host: str, status: int
) -> None:
    from sessiondex.web.plugin import CSP

    for path in ("/", f"/session/{web.tree.auth_id}", "/sessiondex.json?sql=select+1"):
        response = web.loop.run_until_complete(
            web.datasette.client.get(path, headers={"host": host})
        )
        assert response.status_code == status, (host, path)
        if status == 421:
            assert web.tree.auth_id not in response.text and "Misdirected" in response.text
            assert response.headers["content-security-policy"] == CSP


def _asgi_request(
    web: Web,
    headers: list[tuple[bytes, bytes]],
    *,
    method: str = "GET",
    target: bytes = b"/sessiondex",
    http_version: str = "1.1",
) -> list[dict[str, Any]]:
    """What the app sends for one request, given to it as uvicorn gives it (``path``
    as the target came: h11 does not parse an absolute form)."""
    raw_path, _, query_string = target.partition(b"?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": http_version,
        "method": method,
        "scheme": "http",
        "path": unquote(raw_path.decode()),  # as uvicorn decodes it
        "raw_path": raw_path,
        "query_string": query_string,
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8001),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    web.loop.run_until_complete(web.datasette.app()(scope, receive, send))
    return sent


# What the app itself answers, whichever HTTP parser uvicorn picked (its h11 one refuses
# an HTTP/1.1 request without Host before the app; its httptools one passes it on).
@pytest.mark.parametrize(
    ("http_version", "headers", "status"),
    [
        ("1.1", [], 400),
        ("1.1", [(b"host", b"127.0.0.1:8001")], 200),
        ("1.1", [(b"host", b"evil.test")], 421),
        ("1.0", [], 200),  # HTTP/1.0 had no Host to send
        ("1.0", [(b"host", b"evil.test")], 421),
    ],
)
def test_an_http_1_1_request_without_host_is_refused_by_the_app(
    web: Web, http_version: str, headers: list[tuple[bytes, bytes]], status: int
) -> None:
    sent = _asgi_request(web, headers, http_version=http_version)
    assert sent[0]["status"] == status
    if status == 400:
        body = b"".join(m.get("body", b"") for m in sent[1:])
        assert body == b"400 Bad Request: an HTTP/1.1 request must have a Host header.\n"
        assert (b"content-type", b"text/plain; charset=utf-8") in sent[0]["headers"]


# Request targets as uvicorn's h11 parser passes them on (as they came, split at "?"),
# and what each is answered. Before, the absolute form was taken for a path: Datasette
# redirected "http://evil.test/" off-site to http://evil.test, and "*" or "x" were 500s.
@pytest.mark.parametrize(
    ("method", "target", "host", "status", "location"),
    [
        ("GET", b"http://evil.test/", b"127.0.0.1:8001", 421, None),  # its host is evil.test
        ("GET", b"http://evil.test/search/", b"127.0.0.1:8001", 421, None),
        ("GET", b"http://127.0.0.1:8001/", b"evil.test", 200, None),  # RFC 9112 §3.2.2
        ("GET", b"http://localhost:8001/search", b"127.0.0.1:8001", 200, None),
        ("GET", b"HTTP://LOCALHOST:8001/search/", b"127.0.0.1:8001", 302, b"/search"),
        ("GET", b"http://localhost", b"127.0.0.1:8001", 200, None),  # no path: "/"
        ("GET", b"http://localhost:8001@evil.test/", b"127.0.0.1:8001", 400, None),
        ("GET", b"ftp://localhost/", b"127.0.0.1:8001", 400, None),
        ("GET", b"http:///search", b"127.0.0.1:8001", 400, None),
        ("OPTIONS", b"*", b"127.0.0.1:8001", 204, None),
        ("OPTIONS", b"*", b"evil.test", 421, None),  # judged by its host like any request
        ("GET", b"*", b"127.0.0.1:8001", 400, None),
        ("GET", b"search", b"127.0.0.1:8001", 400, None),
        ("GET", b"127.0.0.1:8001", b"127.0.0.1:8001", 400, None),
        ("GET", b"/search", b"127.0.0.1:8001", 200, None),
    ],
)
def test_a_request_target_that_is_not_a_path(
    web: Web, method: str, target: bytes, host: bytes, status: int, location: bytes | None
) -> None:
    sent = _asgi_request(web, [(b"host", host)], method=method, target=target)
    assert sent[0]["status"] == status
    headers = {bytes(k).lower(): bytes(v) for k, v in sent[0]["headers"]}
    assert headers.get(b"location") == location
    assert b"content-security-policy" in headers
    body = b"".join(m.get("body", b"") for m in sent[1:])
    if status == 204:
        assert headers[b"allow"] == b"GET, HEAD" and body == b""
        assert b"content-length" not in headers and b"content-type" not in headers
    if status == 400:
        assert body == b"400 Bad Request: the request target must be a path such as /search.\n"


@pytest.mark.parametrize(("http_version", "status"), [("1.1", 400), ("1.0", 204)])
def test_options_star_without_host_is_judged_like_any_request(
    web: Web, http_version: str, status: int
) -> None:
    """``OPTIONS *`` is answered only once its host is judged: an HTTP/1.1 one without
    Host is a 400 (uvicorn's httptools parser passes it on), as a path's would be."""
    sent = _asgi_request(web, [], method="OPTIONS", target=b"*", http_version=http_version)
    assert sent[0]["status"] == status


@pytest.mark.parametrize("how", ["deleted", "moved aside"])
def test_an_index_deleted_or_replaced_under_serve_is_opened_again(fresh_web: Web, how: str) -> None:
    """As ``watch`` does: the pages answered from the deleted file (new sessions went
    into it, nothing came back at the path) and Datasette's tables failed with 500."""
    web = fresh_web
    before = _session_links(web.get("/"))
    assert before
    for _ in range(4):  # Datasette's query threads (3) each open their connection
        web.get("/sessiondex.json?sql=select+count(*)+from+sessions")
    for suffix in ("", "-wal", "-shm"):
        path = web.db.with_name(web.db.name + suffix)
        if path.exists():
            if how == "deleted":
                path.unlink()
            else:
                path.rename(path.with_name(path.name + ".corrupt-1"))
    assert sorted(_session_links(web.get("/"))) == sorted(before)  # rebuilt, same sessions
    assert web.db.is_file()  # at the path again
    rows = json.loads(web.get("/sessiondex/sessions.json?_shape=array&_size=max"))
    assert len(rows) >= len(before)
    # Datasette's query threads read the new file too, not the one they had opened
    with web.tree.auth_path.open("ab") as fh:
        record = {
            "type": "user",
            "message": {"role": "user", "content": "a replacedword arrives"},
            "uuid": "11111111-2222-4333-8444-555555555559",
            "timestamp": "2026-11-29T10:00:00.000Z",
            "sessionId": web.tree.auth_id,
        }
        fh.write(json.dumps(record).encode() + b"\n")
    web.clock.now += 1.5
    web.get("/")
    sql = "select count(*) as n from messages_fts where messages_fts match 'replacedword'"
    for _ in range(4):  # every query thread (Datasette has 3)
        assert json.loads(web.get("/sessiondex.json?_shape=array&sql=" + quote(sql))) == [{"n": 1}]


def test_an_index_in_a_read_only_folder_is_served_by_datasette_too(tmp_path: Path) -> None:
    """In a folder serve cannot write (chattr +i, a read-only mount), the index is read
    as an immutable file (no -shm can be made there, so ``mode=ro`` cannot open it):
    sessiondex's pages answered, but Datasette, which opened it ``mode=ro``, failed
    every table, query and SQL page with 500 ("unable to open database file"). It now
    opens it as the Index does."""
    from tests.test_reliability_faults import read_only

    base = tmp_path / "cache"
    base.mkdir()
    db = base / "index.db"
    tree = build_web_tree(tmp_path, db)
    with read_only(base):
        with _served(db, tree.tree.root, tree) as web:
            assert tree.auth_id in _session_links(web.get("/"))
            rows = json.loads(web.get("/sessiondex/sessions.json?_shape=array&_size=max"))
            assert tree.auth_id in {row["session_id"] for row in rows}
            web.get("/sessiondex/sessions_on_branch?branch=fix/auth")
            web.get("/sessiondex?sql=select+count(*)+from+sessions")


def _serve_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("sessiondex serve:")]


def test_a_read_only_index_is_said_once_and_served_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Helper h510's probe: ``serve`` on a read-only index printed "refresh failed" on
    every request a second apart, for as long as it ran. The start's note says it once
    (read-only, answering as it is) and requests add nothing; once the index can be
    written again, one line says so and the pages follow new messages again."""
    from contextlib import ExitStack

    from tests.test_reliability_faults import read_only

    base = tmp_path / "cache"
    base.mkdir()
    db = base / "index.db"
    tree = build_web_tree(tmp_path, db)
    capsys.readouterr()
    with ExitStack() as unwritable, ExitStack() as serving:
        unwritable.enter_context(read_only(db))
        web = serving.enter_context(_served(db, tree.tree.root, tree))
        for _ in range(5):
            web.clock.now += 1.5
            assert tree.auth_id in _session_links(web.get("/"))
        err = capsys.readouterr().err
        assert _serve_lines(err) == [], err
        # the Index's note (on stderr in `serve`: the CLI passes it there)
        [note] = web.state.index.notes
        assert str(db) in note and "it is read-only" in note, note
        assert "answering from it as it is" in note, note
        unwritable.close()
        with tree.auth_path.open("ab") as fh:
            record = {
                "type": "user",
                "message": {"role": "user", "content": "a lateword arrives"},
                "uuid": "11111111-2222-4333-8444-555555555556",
                "timestamp": "2026-11-29T10:00:00.000Z",
                "sessionId": tree.auth_id,
            }
            fh.write(json.dumps(record).encode() + b"\n")
        web.clock.now += 1.5
        page = web.get("/search?q=lateword")
        [line] = _serve_lines(capsys.readouterr().err)
        assert str(db) in line and "up to date again" in line, line
        assert "<mark>lateword</mark>" in page


# (what each refresh does: raise this, or None for a refresh that works; the lines said)
REFRESH_FAULTS = [
    (["readonly", "readonly", "readonly"], ["read-only"]),
    (["readonly", "full", "full", "readonly"], ["read-only", "disk is full", "read-only"]),
    (["busy", None, None, "busy"], ["busy", "up to date again", "busy"]),
    (["bug", "bug", "other bug"], ["refresh failed: bug", "refresh failed: other bug"]),
    ([None, None], []),
]


@pytest.mark.parametrize(("refreshes", "said"), REFRESH_FAULTS)
def test_a_refresh_failure_is_said_when_its_cause_changes(
    fresh_web: Web,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    refreshes: list[str | None],
    said: list[str],
) -> None:
    import sqlite3

    from sessiondex.indexer.faults import IndexBusy

    errors = {
        "readonly": sqlite3.OperationalError("attempt to write a readonly database"),
        "full": sqlite3.OperationalError("database or disk is full"),
        "busy": IndexBusy("database is locked"),
    }
    index = fresh_web.state.index
    real = index.refresh
    capsys.readouterr()
    for what in refreshes:

        def refresh(what: str | None = what, **options: Any) -> Any:
            if what is None:
                return real(**options)
            raise errors.get(what) or RuntimeError(what)

        monkeypatch.setattr(index, "refresh", refresh)
        fresh_web.clock.now += 1.5
        fresh_web.get("/")
    lines = _serve_lines(capsys.readouterr().err)
    assert len(lines) == len(said), lines
    for line, words in zip(lines, said, strict=True):
        assert words in line, (words, line)


def test_saved_queries_answer_for_the_served_config_dirs_only(tmp_path: Path) -> None:
    """The index file may hold another config dir's rows; the saved queries showed them
    (a PR's sessions, a branch's, the busiest projects) while every page did not."""
    other = ConfigTree(tmp_path / "other")
    s = other.session(
        cwd="/home/dev/elsewhere",
        git_branch="fix/auth",
        session_id="0e0e0e0e-1111-4222-8333-444444444444",
    )
    s.user("another config dir's session")
    s.pr_link(number=12, url=PR_URL, repository="acme/shop")
    s.write()
    with _serving(tmp_path / "served") as web:
        with Index(web.db, [other.root]) as index:
            index.refresh()  # its rows now share the served index file
        for path in (
            "/sessiondex/sessions_for_pr.json?_shape=array&pr=12",
            "/sessiondex/sessions_on_branch.json?_shape=array&branch=fix/auth",
        ):
            ids = {r["session_id"] for r in web.request(path).json()}
            assert web.tree.auth_id in ids and s.session_id not in ids, path
        rows = web.request("/sessiondex/busiest_projects.json?_shape=array").json()
        assert "/home/dev/elsewhere" not in {r["cwd"] for r in rows}


# Control and bidi characters a transcript may hold; none may reach a page raw.
HOSTILE_CHARS = "\u202e\u202c\u2066\x1b\x9b\x07"


def test_control_and_bidi_characters_are_made_visible_on_every_page(fresh_web: Web) -> None:
    """spec/cli.md: human-facing output never carries control or bidi characters from
    transcripts. The HTML export and ``show`` made them visible; the web view printed
    them raw (a branch ``feat/<U+202E>gnp.exe`` displayed as ``feat/exe.png``)."""
    web = fresh_web
    s = web.tree.tree.session(
        cwd="/tmp/sessiondex-web-tests/evil\u202edir", git_branch="feat/\u202egnp.exe"
    )
    s.meta("custom-title", customTitle="report\u202efdp.exe bidicanary")
    s.user("run \u202eexe.txt\u202c and \x1b[2J\x9b31m bidicanary \x07")
    turn = s.assistant(
        "**bold \u2066isolate\u2069** bidicanary", tool_uses=[("Bash", {"command": "ls \u202e"})]
    )
    s.tool_result(turn.tool_use_ids[0], "out \x1b[31mred\u202e")
    s.write()
    web.clock.now += 1.5
    pages = {
        "home": web.get("/"),
        "search": web.get("/search?q=bidicanary"),
        "session": web.get(f"/session/{s.session_id}"),
        "datasette table": web.get("/sessiondex/sessions?custom_title__contains=bidicanary"),
    }
    for name, page in pages.items():
        raw = sorted({f"U+{ord(c):04X}" for c in page if c in HOSTILE_CHARS})
        assert raw == [], (name, raw)
    assert all("bidicanary" in page for page in pages.values())
    assert "report&lt;U+202E&gt;fdp.exe" in pages["datasette table"]  # the row, not the form
    assert "feat/&lt;U+202E&gt;gnp.exe" in pages["session"]
    assert "^[" in pages["session"] and "&lt;U+202E&gt;" in pages["search"]


@pytest.mark.parametrize("how", ["deleted", "replaced by a folder"])
def test_a_session_whose_transcript_just_went_is_a_404(fresh_web: Web, how: str) -> None:
    """Inside the refresh throttle the index still lists the session; the page read
    its transcript, found it gone, and answered 500 with a traceback on stderr."""
    web, t = fresh_web, fresh_web.tree
    web.get(f"/session/{t.auth_id}")
    t.auth_path.unlink()
    if how != "deleted":
        t.auth_path.mkdir()
    assert "is gone" in web.get(f"/session/{t.auth_id}", status=404)


def test_search_page_says_when_more_sessions_match_and_links_to_them(web: Web) -> None:
    """It said "50 sessions matching" with no way to see the rest; the home page had
    a "Show more" link."""
    every = web.get("/search?q=the&limit=2000")
    total = every.count('class="result"')
    assert total > 2
    page = web.get("/search?q=the&limit=2")
    assert page.count('class="result"') == 2
    assert "The best 2 sessions matching" in page
    assert "The best 1 session matching" in web.get("/search?q=the&limit=1")  # not "sessions"
    [more] = re.findall(r'<a href="([^"]*)">Show more</a>', page)
    more = html.unescape(more)
    assert more == "/search?q=the&limit=10"  # the same search, more of it
    assert web.get(more).count('class="result"') == min(10, total)
    assert "Show more" not in every


def _words(count: int) -> str:
    """``count`` distinct words of 7 letters (8 characters with the space each)."""
    return " ".join(f"w{n:06x}" for n in range(count))


@pytest.mark.parametrize("page", ["/search", "/session/{sid}"])
def test_a_search_over_the_length_cap_is_a_400_that_says_so(web: Web, page: str) -> None:
    """Helper h510's probe: 15,000 distinct words (120 KB) in ``q`` took 2.6 s of the
    index's one thread on a 5-session index; the MCP server takes 1,000 characters. The
    web view takes what the MCP server takes (one limit, the query layer's), and a
    longer ``q`` is a 400 saying so, answered without a search."""
    import time

    from sessiondex.query.limits import MAX_QUERY_CHARS

    path = page.format(sid=web.tree.auth_id)
    at_cap = "heartbeat " + _words(200)[: MAX_QUERY_CHARS - len("heartbeat ")]
    assert len(at_cap) == MAX_QUERY_CHARS
    assert web.request(f"{path}?{urlencode({'q': at_cap})}").status_code == 200
    for query in (at_cap + "x", _words(7_000)):  # 56 KB: httpx takes URLs up to 64 KiB
        started = time.perf_counter()
        response = web.request(f"{path}?{urlencode({'q': query})}")
        took = time.perf_counter() - started
        assert response.status_code == 400, (len(query), response.text[:300])
        text = html.unescape(response.text)
        assert f"The search is {len(query):,} characters long" in text, text[:2000]
        assert f"at most {MAX_QUERY_CHARS:,}" in text
        assert response.headers["content-security-policy"]
        assert took < 0.5, took


def test_saved_queries_follow_the_clis_rules(tmp_path: Path) -> None:
    """The saved queries were SQL of their own in the web view: a title rule of their
    own (no first-prompt cut, no command fallback), a PR read by rtrim (www., /files,
    another case found nothing) and -p, sidechain and hidden sessions listed. They now
    follow the rules ``list`` and ``from-pr`` follow (query/saved.py)."""
    with _serving(tmp_path / "served") as web:
        t = web.tree.tree
        long_prompt = "please " + "look into the flaky checkout test " * 12
        untitled = t.session(cwd="/home/dev/shop", git_branch="fix/auth")
        untitled.user(long_prompt)
        untitled.pr_link(number=12, url=PR_URL, repository="acme/shop")
        # the same number in another repository: a bare 12 matches both links
        untitled.pr_link(
            number=12, url="https://github.com/other/lib/pull/12", repository="other/lib"
        )
        untitled.write()
        printed = t.session(cwd="/home/dev/shop", git_branch="fix/auth", entrypoint="sdk-cli")
        printed.user("claude -p run")
        printed.pr_link(number=12, url=PR_URL, repository="acme/shop")
        printed.write()
        with Index(web.db, [t.root]) as index:
            index.refresh()
            titles = {o["session_id"]: o["title"] for o in index.list(scope="all")}
        for pr in (
            PR_URL + "/files",
            "https://www.github.com/Acme/Shop/pull/12#discussion_r1",
            "github.com/acme/shop/pull/12",
            "acme/shop#12",
            "#12",
            "012",  # as from-pr reads a number
            " #012 ",
        ):
            rows = web.request(
                "/sessiondex/sessions_for_pr.json?_shape=array&pr=" + quote(pr)
            ).json()
            found = {r["session_id"] for r in rows}
            assert {web.tree.auth_id, untitled.session_id} <= found, pr
            assert printed.session_id not in found, pr  # -p sessions stay hidden
            assert all(r["title"] == titles[r["session_id"]] for r in rows), pr
            assert len(rows) == len({r["session_id"] for r in rows}), pr  # each once
            linked = {r["session_id"] for r in rows if r["how"] == "linked"}
            assert not linked & {r["session_id"] for r in rows if r["how"] == "mentioned"}, pr
        assert titles[untitled.session_id].endswith("…")  # the cut title, not the prompt
        branch = web.request(
            "/sessiondex/sessions_on_branch.json?_shape=array&branch=fix/auth"
        ).json()
        assert printed.session_id not in {r["session_id"] for r in branch}

        # Sessions of the same last activity come in list's order (then by mtime, then
        # by ID), as from-pr and list --branch give them: the queries had sorted by
        # activity alone, or by its minute.
        twins = []
        for n in (9, 3, 7, 1):  # indexed in another order than their IDs sort in
            twin = t.session(
                cwd="/home/dev/shop",
                git_branch="twins",
                start="2026-11-20T10:00:00Z",
                session_id=f"{n}{n}{n}{n}{n}{n}{n}{n}-0000-4000-8000-000000000000",
            )
            twin.user("same moment")
            twin.pr_link(
                number=77, url="https://github.com/acme/shop/pull/77", repository="acme/shop"
            )
            twin.write(mtime=1_795_000_000 + n)  # the same activity, not the same mtime
            twins.append(twin.session_id)
        with Index(web.db, [t.root]) as index:
            index.refresh()
            by_branch = [o["session_id"] for o in index.list(scope="all", branch="twins")]
            by_pr = [o["session_id"] for o in index.from_pr("acme/shop#77", scope="all")]
        assert sorted(by_branch) == sorted(twins) and by_pr == by_branch
        for url, expected in (
            ("/sessiondex/sessions_on_branch.json?_shape=array&branch=twins", by_branch),
            ("/sessiondex/sessions_for_pr.json?_shape=array&pr=acme/shop%2377", by_pr),
        ):
            assert [r["session_id"] for r in web.request(url).json()] == expected, url


# Dot segments, which a browser resolves before it sends a URL and curl --path-as-is or a
# script may not: Datasette's 404 page for them failed with 500 (its handler prints the
# exception with rich outside an except block: "Value for 'trace' required").
@pytest.mark.parametrize(
    ("target", "same_as"),
    [
        (b"/./search", b"/search"),
        (b"/.", b"/"),
        (b"/..", b"/"),
        (b"/search/../", b"/"),
        (b"/a/b/../../search", b"/search"),
        (b"/%2e/search", b"/search"),
        (b"/-/./static/app.css", b"/-/static/app.css"),
        (b"/./-/sessiondex/static/../../static/app.css", b"/-/static/app.css"),
        (b"/sessiondex/./sessions.json", b"/sessiondex/sessions.json"),
    ],
)
def test_dot_segments_are_resolved_as_a_browser_would(
    web: Web, target: bytes, same_as: bytes
) -> None:
    host = [(b"host", b"127.0.0.1:8001")]
    sent = _asgi_request(web, host, target=target)
    expected = _asgi_request(web, host, target=same_as)
    assert sent[0]["status"] == expected[0]["status"] != 500
    bodies = [b"".join(m.get("body", b"") for m in answer[1:]) for answer in (sent, expected)]
    timing = re.compile(rb'"query_ms": [0-9.e-]+')  # how long Datasette's query took
    assert timing.sub(b"", bodies[0]) == timing.sub(b"", bodies[1])


# Paths no route takes (a mistyped link, a script's doubled slash) and methods no page
# answers: Datasette's not-found handling printed the exception with rich outside an
# except block and the server answered 500, without the security headers (helper 112).
@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("GET", b"/a/b/c/d/e/f"),
        ("GET", b"//x"),
        ("GET", b"/x//y"),
        ("GET", b"/session//x"),
        ("GET", b"/sessiondex/sessions/1/2/3"),
        ("POST", b"/sessiondex/sessions/-/insert"),
        # A sort Datasette refuses is the request's fault; it answered 500.
        ("GET", b"/sessiondex/sessions?_sort=nope"),
        ("GET", b"/sessiondex/messages?_sort_desc=nope"),
        ("GET", b"/sessiondex/sessions?_sort=id&_sort_desc=id"),
        # Parameters Datasette's pages read without checking them (helper h503): a
        # _through that is not JSON or not {table, column, value}, a facet given as a
        # JSON object, a time limit or _next that is no number, a NUL in _where, an
        # integer SQLite cannot hold, _shape=array on the database page. Each was 500.
        ("GET", b"/sessiondex/sessions?_through="),
        ("GET", b"/sessiondex/sessions?_through=%7B%7D"),
        ("GET", b"/sessiondex/sessions?_facet=%7B%7D"),
        ("GET", b"/sessiondex/messages_fts?_facet_date=%7B%7D"),
        ("GET", b"/sessiondex/sessions?_facet_array=%7B%7D"),
        ("GET", b"/sessiondex/sessions?_where=%00"),
        ("GET", b"/sessiondex/sessions?_timelimit=x"),
        ("GET", b"/sessiondex/sessions_for_pr.json?pr=12&_timelimit=x"),
        ("GET", b"/sessiondex/sessions?id__gt=99999999999999999999999"),
        ("GET", b"/sessiondex/message_text?_next=%7B%7D"),
        ("GET", b"/sessiondex/message_text?_next=99999999999999999999999"),
        ("GET", b"/sessiondex.json?_shape=array"),
    ],
)
def test_an_unrouted_request_is_a_clean_error_with_the_headers(
    web: Web, method: str, target: bytes
) -> None:
    sent = _asgi_request(web, [(b"host", b"127.0.0.1:8001")], method=method, target=target)
    start = sent[0]
    assert 400 <= start["status"] < 500, (target, start["status"])
    headers = {bytes(k).lower(): bytes(v) for k, v in start["headers"]}
    assert headers.get(b"content-security-policy"), target
    assert headers.get(b"x-content-type-options") == b"nosniff"


def test_a_failure_of_our_own_page_stays_a_500_whatever_its_parameters(
    fresh_web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only Datasette's own pages, which read some parameters unchecked, answer a
    ValueError for a request with parameters as a bad request: ours check theirs, so
    the same error there is a bug, and stays a server error."""
    from sessiondex.web import pages

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise ValueError("a bug")

    monkeypatch.setattr(pages, "search", broken)
    assert fresh_web.request("/search?q=heartbeat").status_code == 500


@pytest.mark.parametrize("where", ["index refresh", "app"])
def test_a_request_that_fails_before_its_answer_is_a_500_with_the_headers(
    fresh_web: Web, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A request that raised before any answer began (the refresh before it, or the app
    itself) got uvicorn's own bare 500: none of the headers every other answer carries.
    It is our 500 now, with them, and the error still reaches the server's log."""
    from sessiondex.web import plugin

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("disk gone")

    if where == "index refresh":
        monkeypatch.setattr(fresh_web.state, "fresh", broken)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    app = fresh_web.datasette.app()
    if where == "app":
        app = plugin.asgi_wrapper(fresh_web.datasette)(broken)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/",
        "raw_path": b"/",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8001")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8001),
    }
    with pytest.raises(RuntimeError, match="disk gone"):
        fresh_web.loop.run_until_complete(app(scope, receive, send))
    assert sent and sent[0]["status"] == 500
    headers = {bytes(k).lower(): bytes(v) for k, v in sent[0]["headers"]}
    assert headers.get(b"x-content-type-options") == b"nosniff"
    assert headers.get(b"content-security-policy")


def test_a_session_page_is_rendered_off_the_index_thread(
    web: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The conversation of a session page (seconds for 12,000 messages) was read and
    rendered on WebIndex's one thread, and every other page, Datasette's own too,
    waited behind it (helper 130). Only the lookup runs there now."""
    import threading

    from sessiondex.web import pages

    threads: list[str] = []

    def recording(real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            threads.append(threading.current_thread().name)
            return real(*args, **kwargs)

        return call

    # A page shown before is not laid out again (the module's server): it is still read.
    for name in ("layout", "render_page"):
        monkeypatch.setattr(pages, name, recording(getattr(pages, name)))
    page = web.get(f"/session/{web.tree.auth_id}")
    assert "Auth refactor" in page and threads
    assert not any(name.startswith("sessiondex-index") for name in threads), threads


def test_a_facet_s_hidden_values_are_a_link_away(tmp_path: Path) -> None:
    """ "and 2 more" was plain text: a branch past the first twelve could be chosen only
    by typing its URL (helper 130)."""
    from sessiondex.web import pages

    tree = ConfigTree(tmp_path / "claude")
    for n in range(pages.FACET_SIZE + 2):
        s = tree.session(cwd="/w/app", git_branch=f"feature/{n:02d}")
        s.user(f"work on feature {n}")
        s.write()
    with Index(tmp_path / "i.db", [tree.root]) as index:
        first = pages.home(index, {})
        (branches,) = [f for f in first["facets"] if f.name == "branch"]
        assert len(branches.values) == pages.FACET_SIZE and branches.more == 2
        assert branches.more_url == "/?more=branch"
        every = pages.home(index, {"more": "branch"})
        (branches,) = [f for f in every["facets"] if f.name == "branch"]
        assert len(branches.values) == pages.FACET_SIZE + 2 and branches.more == 0
    template = (Path(pages.__file__).parent / "templates" / "sessiondex_home.html").read_text()
    assert '<a href="{{ facet.more_url }}">and {{ facet.more }} more</a>' in template


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ("short", None),
        ("x" * 50_000, "… cut: 1 line, 48.8 KB in all (sessiondex show --tools has it)"),
        ("y\n" * 3_000, "… cut: 3000 lines, 5.9 KB in all (sessiondex show --tools has it)"),
    ],
)
def test_a_long_text_cut_says_how_many_lines(text: str, note: str | None) -> None:
    """A prompt pasted as one long line said "1 lines"."""
    from sessiondex.web.conversation import clip

    assert clip(text)[1] == note


def test_a_503_is_said_on_the_servers_stderr_one_line_each(
    fresh_web: Web, capsys: pytest.CaptureFixture[str]
) -> None:
    """A newer sessiondex took the index while ``serve`` ran: the browser got a 503 page
    and the terminal running ``serve`` said nothing, so its user saw no reason. Each
    503 is now one line there (no traceback): the method, the path, and why."""
    from tests.test_index_from_newer import _make_newer

    web = fresh_web
    web.get("/")
    capsys.readouterr()
    _make_newer(web.db, "derivation")
    pages = ["/", "/search?q=hello", "/sessiondex/sessions"]
    for page in pages:
        web.clock.now += 1.5
        assert web.request(page).status_code == 503
    err = capsys.readouterr().err
    lines = _serve_lines(err)
    assert len(lines) == len(pages) and "Traceback" not in err, err
    for line, page in zip(lines, pages, strict=True):
        assert f"503 for GET {page.split('?')[0]}:" in line, line
        assert "newer sessiondex" in line and str(web.db) in line, line


# (SQL that would run or grow without end, what Datasette's JSON error says)
RUNAWAY_SQL = [
    # cut by the time limit (sql_time_limit_ms): SQLite's progress handler
    (
        "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c",
        "SQL query took too long",
    ),
    # one step that no progress handler sees: a 200 MB string (1.2 GB of memory and
    # 2 s before), refused by the length limit on Datasette's connections
    ("select length(hex(zeroblob(100000000)))", "string or blob too big"),
]


@pytest.mark.parametrize(("sql", "says"), RUNAWAY_SQL)
def test_arbitrary_sql_that_would_run_away_ends_with_datasettes_error(
    web: Web, sql: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``?sql=`` runs anything on the index: a query that would run forever is cut off
    with Datasette's time-limit error, even when ``?_timelimit=`` asks for more, and
    one statement that builds a huge value fails at once; the pages still answer,
    a message's text still reads."""
    from sessiondex.web.app import SQL_TIME_LIMIT_MS

    assert web.datasette.setting("sql_time_limit_ms") == SQL_TIME_LIMIT_MS
    assert web.datasette.sql_time_limit_ms == SQL_TIME_LIMIT_MS  # what queries are held to
    # The limit is served as set; a tenth of it cuts the same query by the same
    # mechanism without burning the 3 s twice (``_timelimit`` still asks for far more).
    monkeypatch.setattr(web.datasette, "sql_time_limit_ms", SQL_TIME_LIMIT_MS // 10)
    for extra in ("", f"&_timelimit={SQL_TIME_LIMIT_MS * 100}"):
        response = web.request(f"/sessiondex.json?sql={quote(sql)}{extra}")
        assert response.status_code == 400, response.text[:300]
        assert says in response.json()["error"], response.text[:300]
    rows = json.loads(
        web.get("/sessiondex.json?_shape=array&sql=" + quote("select text from message_text"))
    )
    assert rows and any(row["text"] for row in rows)


def test_an_index_whose_folder_becomes_writable_is_followed_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``serve`` started on an index in a folder it cannot write reads the file as an
    immutable one (no ``-shm`` can be made there), and so does Datasette. Once the
    folder can be written (a mount remounted read-write, ``chattr -i``), the next
    refresh writes the index again, but both kept reading it immutable: no new
    message ever showed, for as long as serve ran. The next request after that
    refresh reads the file as it is now, on sessiondex's pages and Datasette's."""
    from contextlib import ExitStack

    from tests.test_reliability_faults import read_only

    base = tmp_path / "cache"
    base.mkdir()
    db = base / "index.db"
    tree = build_web_tree(tmp_path, db)
    with ExitStack() as unwritable, ExitStack() as serving:
        unwritable.enter_context(read_only(base))
        web = serving.enter_context(_served(db, tree.tree.root, tree))
        assert web.state.read_immutable
        for _ in range(2):
            web.clock.now += 1.5
            assert tree.auth_id in _session_links(web.get("/"))
        unwritable.close()
        with tree.auth_path.open("ab") as fh:
            record = {
                "type": "user",
                "message": {"role": "user", "content": "a folderword arrives"},
                "uuid": "11111111-2222-4333-8444-555555555557",
                "timestamp": "2026-11-29T10:00:00.000Z",
                "sessionId": tree.auth_id,
            }
            fh.write(json.dumps(record).encode() + b"\n")
        web.clock.now += 1.5
        assert "<mark>folderword</mark>" in web.get("/search?q=folderword")
        assert not web.state.read_immutable
        sql = "select count(*) as n from messages_fts where messages_fts match 'folderword'"
        rows = json.loads(web.get("/sessiondex.json?_shape=array&sql=" + quote(sql)))
        assert rows == [{"n": 1}]
        # and it stays followed: the next append shows too
        with tree.auth_path.open("ab") as fh:
            record["uuid"] = "11111111-2222-4333-8444-555555555558"
            record["message"] = {"role": "user", "content": "then a laterword"}
            fh.write(json.dumps(record).encode() + b"\n")
        web.clock.now += 1.5
        assert "<mark>laterword</mark>" in web.get("/search?q=laterword")
