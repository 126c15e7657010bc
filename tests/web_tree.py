"""The transcript tree the web view's tests browse: two projects, a PR link, a tag, a
fork, a subagent, code, tool calls, and one session full of hostile strings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sessiondex import Index
from tests.builders import ConfigTree

SHOP = "/tmp/sessiondex-web-tests/shop"  # outside any git repository
BLOG = "/tmp/sessiondex-web-tests/blog"
PR_URL = "https://github.com/acme/shop/pull/12"
# A transcript is untrusted: every one of these must reach the page as text.
SCRIPT = '<script>window.__pwned = 1; alert("pwned")</script>'
EVIL_TITLE = '<img src=x onerror="window.__pwned=2"> Evil title'
EVIL_MARKDOWN = (
    "xsscanary says " + SCRIPT + "\n\n"
    "[click me](javascript:window.__pwned=3)\n\n"
    "![tracker](http://127.0.0.1:9/pixel.png)\n\n"
    '<a href="javascript:window.__pwned=4">raw link</a> <b onmouseover="x()">bold</b>'
)


@dataclass
class WebTree:
    tree: ConfigTree
    auth_id: str
    auth_path: Path
    heartbeat_uuid: str  # the user message that says "heartbeat"
    subagent_uuid: str  # the subagent's message that says "heartbeat"
    merged_uuid: str  # the 2nd entry of a multi-block assistant response
    evil_id: str
    blog_id: str
    fork_id: str


def build_web_tree(root: Path, db: Path) -> WebTree:
    tree = ConfigTree(root / "claude")
    auth = tree.session(cwd=SHOP, git_branch="fix/auth")
    heartbeat = auth.user("the websocket heartbeat drops after 30 seconds")
    turn = auth.assistant(
        "Here is the fix:\n\n```python\ndef heartbeat(interval=30):\n    return ping()\n```",
        tool_uses=[("Bash", {"command": "pytest tests/test_ws.py"})],
    )
    auth.tool_result(turn.tool_use_ids[0], "3 passed in 0.4s")
    task = auth.assistant(
        "Asking a subagent",
        tool_uses=[("Task", {"description": "check", "prompt": "check the heartbeat"})],
    )
    sub = auth.subagent(agent_id="ag1", tool_use_id=task.tool_use_ids[0], agent_type="Explore")
    sub.user("SUBAGENT-PROMPT check the heartbeat timer")
    sub.assistant("SUBAGENT-ANSWER the timer is fine")
    auth.tool_result(task.tool_use_ids[0], "the timer is fine")
    auth.assistant("MAIN-AFTER all good")
    auth.meta("custom-title", customTitle="Auth refactor")
    auth.meta("tag", tag="auth")
    auth.pr_link(number=12, url=PR_URL, repository="acme/shop")
    auth.write()

    evil = tree.session(cwd=BLOG, git_branch="main", start="2026-11-03T10:00:00.000Z")
    evil.user(EVIL_MARKDOWN)
    evil.assistant("I will not run " + SCRIPT)
    evil.meta("custom-title", customTitle=EVIL_TITLE)
    evil.write()

    blog = tree.session(cwd=BLOG, git_branch="feat/comments", start="2026-11-02T10:00:00.000Z")
    blog.user("add a comments widget to the blog")
    blog.assistant("Added a comments widget.")
    blog.write()

    with Index(db, [tree.root]) as index:
        index.refresh()
        fork = index.fork(auth.session_id, title="Auth refactor: plan B")
    return WebTree(
        tree=tree,
        auth_id=auth.session_id,
        auth_path=auth.path,
        heartbeat_uuid=heartbeat,
        subagent_uuid=sub.records[0]["uuid"],
        merged_uuid=turn.uuids[1],
        evil_id=evil.session_id,
        blog_id=blog.session_id,
        fork_id=fork.session_id,
    )
