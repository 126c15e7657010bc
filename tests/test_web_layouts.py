"""The session page keeps a session's layout between requests (web.conversation.Layouts):
the next page of a long session reads that page's lines, not the whole transcript, and
any change to the files it is read from is shown at the next request."""

from __future__ import annotations

import html
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("datasette", reason="the web extra is not installed")

from sessiondex.render.conversation import build_conversation  # noqa: E402
from sessiondex.transcripts.chain import ChainScan  # noqa: E402
from sessiondex.web.conversation import (  # noqa: E402
    PAGE_TURNS,
    Layouts,
    layout,
    thread_turns,
)
from tests.builders import ConfigTree, SessionWriter  # noqa: E402
from tests.test_web import Web, _served  # noqa: E402
from tests.web_tree import SHOP  # noqa: E402

PAIRS = PAGE_TURNS + PAGE_TURNS // 4  # a prompt and an answer a pair: 3 pages of turns


@dataclass
class Reads:
    """What the server read of transcripts: whole scans (pass 1) and lines read back."""

    scans: Counter[str]
    lines: Counter[str]

    def reset(self) -> None:
        self.scans.clear()
        self.lines.clear()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    out = Reads(Counter(), Counter())
    scan, read = ChainScan.__init__, ChainScan.read

    def counted_scan(self: ChainScan, path: Path) -> None:
        out.scans[Path(path).name] += 1
        scan(self, path)

    def counted_read(self: ChainScan, stubs: Any) -> Iterator[dict[str, Any]]:
        for entry in read(self, stubs):
            out.lines[self.path.name] += 1
            yield entry

    monkeypatch.setattr(ChainScan, "__init__", counted_scan)
    monkeypatch.setattr(ChainScan, "read", counted_read)
    return out


@dataclass
class Served:
    web: Web
    session: SessionWriter
    sub: Any  # the subagent's writer
    prompts: list[str]  # the uuid of each prompt, in order

    def page(self, query: str = "") -> str:
        return html.unescape(self.web.get(f"/session/{self.session.session_id}{query}"))


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """A session of three pages, one line a turn; its one subagent's call on page 2."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=SHOP, git_branch="main")
    prompts: list[str] = []
    sub = None
    for i in range(PAIRS):
        prompts.append(s.user(f"question {i} about alpha"))
        if i == PAGE_TURNS // 2 + 10:
            task = s.assistant(tool_uses=[("Task", {"description": "look", "prompt": "look"})])
            sub = s.subagent(agent_id="ag1", tool_use_id=task.tool_use_ids[0])
            sub.user("look for the wombat")
            sub.assistant("no wombat yet")
        else:
            s.assistant(f"answer {i}")
    s.write()
    with _served(tmp_path / "index.db", tree.root, tree) as web:
        yield Served(web, s, sub, prompts)


def test_a_page_shown_again_reads_only_its_own_lines(served: Served, reads: Reads) -> None:
    """A page cost the whole transcript, read and parsed twice (~0.6 s of CPU at
    15,000 messages) to place the hits; the next request of the session reads none of
    it again, only the lines of the page it shows."""
    name = served.session.path.name
    first = served.page("?page=3")
    assert reads.scans[name] == 1 and reads.lines[name] >= 2 * PAIRS  # every line
    reads.reset()
    assert served.page("?page=3") == first
    assert reads.scans[name] == 0 and reads.lines[name] == 2 * PAIRS - 2 * PAGE_TURNS
    for query, page in [
        ("?page=1", 1),
        ("?q=wombat", 2),  # a subagent's hit: the page of its call
        (f"?at={served.prompts[-1]}", 3),
        ("?q=question&page=2", 2),
    ]:
        reads.reset()
        body = served.page(query)
        assert f"page {page} of 3" in body
        assert reads.scans[name] == 0 and reads.lines[name] <= PAGE_TURNS + 1
    assert "previous match" in body and "next match" in body  # hits placed on other pages
    reads.reset()
    response = served.web.request(f"/session/{served.session.session_id}?page=4")
    assert response.status_code == 400 and "has 3 pages" in response.text
    assert reads.scans[name] == 0 and reads.lines[name] == 0


def _append(served: Served) -> None:
    served.session.user("a late question about the freshword")
    served.session.assistant("a late answer")
    served.session.append()


def _rewrite_in_place(served: Served) -> None:
    """The same bytes but one word, the same size: only the mtime tells."""
    path = served.session.path
    st = path.stat()
    data = path.read_bytes().replace(b"question 3 about alpha", b"question 3 about omega")
    with path.open("r+b") as fh:
        fh.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _replace_keeping_size_and_mtime(served: Served) -> None:
    """A new file in its place (a new inode), of the same size and mtime."""
    path = served.session.path
    st = path.stat()
    data = path.read_bytes().replace(b"question 3 about alpha", b"question 3 about omega")
    spare = path.with_suffix(".new")
    spare.write_bytes(data)
    os.replace(spare, path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _grow_the_subagent(served: Served) -> None:
    served.sub.user("and look again for the freshword")
    served.sub.append()


def _drop_the_subagent(served: Served) -> None:
    served.sub.path.unlink()


@pytest.mark.parametrize(
    ("change", "query", "shows", "gone"),
    [
        (_append, "?page=3", "a late question about the freshword", None),
        (_rewrite_in_place, "?page=1", "question 3 about omega", "question 3 about alpha"),
        (
            _replace_keeping_size_and_mtime,
            "?page=1",
            "question 3 about omega",
            "question 3 about alpha",
        ),
        (_grow_the_subagent, "?page=2", "and look again for the freshword", None),
        (_drop_the_subagent, "?page=2", None, "no wombat yet"),
    ],
)
def test_a_change_between_two_requests_is_shown(
    served: Served,
    reads: Reads,
    change: Callable[[Served], None],
    query: str,
    shows: str | None,
    gone: str | None,
) -> None:
    before = served.page(query)
    served.page("?page=2")  # kept: the next request reads no transcript whole
    assert reads.scans[served.session.path.name] == 1
    change(served)
    served.web.clock.now += 1.5  # past the refresh throttle: the index follows too
    after = served.page(query)
    assert reads.scans[served.session.path.name] == 2  # laid out again
    if shows is not None:
        assert shows in after and shows not in before
    if gone is not None:
        assert gone in before and gone not in after


def test_an_append_moves_the_hits_and_the_page_count(served: Served) -> None:
    s = served.session
    assert "page 1 of 3" in served.page()
    for i in range(PAGE_TURNS // 2):  # past page 3: a fourth page
        s.user(f"late question {i} about the freshword")
        s.assistant("late answer")
    s.append()
    served.web.clock.now += 1.5
    body = served.page("?q=freshword")
    assert "page 3 of 4" in body and f"{PAGE_TURNS // 2} messages matching" in body
    assert "next match" in body and re.search(r"next match ›</a> \(page 4\)", body)


def _page_tree(root: Path) -> SessionWriter:
    """A session with everything that joins entries into a turn: a compaction (its
    marker is a turn), a response written a line a block, a thinking-only response,
    parallel calls with their results, subagents (nested, and one whose call is not on
    the chain)."""
    tree = ConfigTree(root / "claude")
    s = tree.session(cwd=SHOP, git_branch="main")
    s.user("before the compaction")
    s.assistant("gone from the chain")
    s.system("compact_boundary")
    s.user("summary of before", isCompactSummary=True)
    s.user("first question")
    s.assistant("thinking then text", thinking="hmm")
    s.assistant(thinking="only thinking")  # shows nothing: joins the turn before it
    calls = s.assistant(
        "two calls",
        tool_uses=[
            ("Task", {"description": "a", "prompt": "a"}),
            ("Bash", {"command": "ls"}),
        ],
    )
    sub = s.subagent(agent_id="ag1", tool_use_id=calls.tool_use_ids[0])
    sub.user("sub question")
    inner = sub.assistant("sub calls", tool_uses=[("Task", {"description": "b", "prompt": "b"})])
    nested = s.subagent(agent_id="ag2", tool_use_id=inner.tool_use_ids[0])
    nested.user("nested question")
    nested.assistant("nested answer")
    s.tool_result(calls.tool_use_ids[0], "sub done")
    s.tool_result(calls.tool_use_ids[1], "a.txt")  # one turn with the result before it
    s.assistant("after the calls")
    for i in range(4):
        s.user(f"question {i}")
        s.assistant(f"answer {i}")
    late = s.assistant("a late call", tool_uses=[("Task", {"description": "c", "prompt": "c"})])
    third = s.subagent(agent_id="ag3", tool_use_id=late.tool_use_ids[0])
    third.user("third question")
    third.assistant("third answer")
    s.tool_result(late.tool_use_ids[0], "third done")
    lost = s.subagent(agent_id="ag4", tool_use_id="toolu_not_on_the_chain")
    lost.user("unlinked question")
    lost.assistant("unlinked answer")
    s.user("last question")
    s.write()
    return s


@pytest.mark.parametrize("per_page", [1, 2, 3, 5, PAGE_TURNS])
def test_a_page_read_alone_is_that_page_of_the_whole_conversation(
    tmp_path: Path, per_page: int
) -> None:
    """Layout.page reads a page's piece of the chain alone: its turns, their anchors
    and the subagents at their calls are those of the whole walk, wherever the page
    bounds fall."""
    s = _page_tree(tmp_path)
    session = {
        "file_path": str(s.path),
        "config_dir": str(tmp_path / "claude"),
        "project_key": s.path.parent.name,
        "session_id": s.session_id,
    }
    conv = build_conversation(session)
    whole = thread_turns(conv.iter_items(), conv.chain)
    lay = layout(conv, per_page)
    assert lay.turns == len(whole.turns) > 10
    assert any(type(t).__name__ == "Marker" for t in whole.turns) and conv.unlinked
    for page in range(1, lay.pages + 1):
        span = lay.turn_range(page)
        alone = lay.page(page)
        assert alone.turns == whole.turns[span.start : span.stop]
        assert [alone.anchors(n) for n in range(len(span))] == [whole.anchors(t) for t in span]


def test_layouts_keep_those_shown_last_within_their_bounds(tmp_path: Path) -> None:
    s = _page_tree(tmp_path)
    conv = build_conversation({"file_path": str(s.path), "session_id": s.session_id})
    lay = layout(conv)
    held = len(conv.main.scan.stubs) if conv.main.scan is not None else 0
    kept = Layouts(size=2, entries=10 * held)
    kept.keep("a", ("k",), lay)
    kept.keep("b", ("k",), lay)
    assert kept.get("a", ("k",)) is lay  # a: used last
    assert kept.get("a", ("other",)) is None  # a changed file: not that layout
    kept.keep("c", ("k",), lay)
    assert kept.get("b", ("k",)) is None and kept.get("a", ("k",)) is lay
    kept.keep("c", ("k2",), lay)  # a session read again replaces its own layout
    assert len(kept) == 2 and kept.get("c", ("k",)) is None
    kept.keep("d", None, lay)  # no key: nothing to find it by
    assert kept.get("d", None) is None and len(kept) == 2
    small = Layouts(size=8, entries=held + 1)  # room for one
    small.keep("a", ("k",), lay)
    small.keep("b", ("k",), lay)
    assert len(small) == 1 and small.get("b", ("k",)) is lay  # the last one always


def test_a_transcript_with_a_line_being_written_is_read_again(served: Served, reads: Reads) -> None:
    """An unfinished last line is "being written" until the file has been quiet a
    while, then "never finished": the same file reads differently later, so its layout
    is not kept."""
    path = served.session.path
    with path.open("ab") as fh:
        fh.write(b'{"type":"user","message":{"role":"us')
    for scans in (1, 2):
        assert "still being written" in served.page("?page=3")
        assert reads.scans[path.name] == scans
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 60 * 10**9))
    assert "was never finished" in served.page("?page=3")
