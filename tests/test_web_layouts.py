"""The session page keeps a session's layout between requests (web.conversation.Layouts):
the next page of a long session reads that page's lines, not the whole transcript, and
any change to the files it is read from is shown at the next request."""

from __future__ import annotations

import html
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("datasette", reason="the web extra is not installed")

from sessiondex.render.conversation import (  # noqa: E402
    build_conversation,
    conversation_key,
)
from sessiondex.transcripts.chain import ChainScan  # noqa: E402
from sessiondex.web.conversation import (  # noqa: E402
    PAGE_TURNS,
    Layouts,
    layout,
    render_page,
    thread_turns,
)
from tests.builders import ConfigTree, SessionWriter, append_bytes, dumps  # noqa: E402
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
    ("change", "query", "shows", "gone", "scans"),
    [
        # an append is read on from where the last read stopped (see below)
        (_append, "?page=3", "a late question about the freshword", None, 1),
        (_rewrite_in_place, "?page=1", "question 3 about omega", "question 3 about alpha", 2),
        (
            _replace_keeping_size_and_mtime,
            "?page=1",
            "question 3 about omega",
            "question 3 about alpha",
            2,
        ),
        (_grow_the_subagent, "?page=2", "and look again for the freshword", None, 1),
        (_drop_the_subagent, "?page=2", None, "no wombat yet", 2),
    ],
)
def test_a_change_between_two_requests_is_shown(
    served: Served,
    reads: Reads,
    change: Callable[[Served], None],
    query: str,
    shows: str | None,
    gone: str | None,
    scans: int,
) -> None:
    before = served.page(query)
    served.page("?page=2")  # kept: the next request reads no transcript whole
    assert reads.scans[served.session.path.name] == 1
    change(served)
    served.web.clock.now += 1.5  # past the refresh throttle: the index follows too
    after = served.page(query)
    assert reads.scans[served.session.path.name] == scans  # 2: read and laid out afresh
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


# ----------------------------------------------------------------- a session that grows
def _session_of(s: SessionWriter, root: Path) -> dict[str, Any]:
    return {
        "file_path": str(s.path),
        "config_dir": str(root),
        "project_key": s.path.parent.name,
        "session_id": s.session_id,
    }


def _new_turns(served: Served) -> None:
    s = served.session
    s.user("a late question about the freshword")
    call = s.assistant("a late call", tool_uses=[("Bash", {"command": "ls"})])
    s.tool_result(call.tool_use_ids[0], "a.txt")
    s.assistant("a late answer")
    s.append()


def _more_of_the_last_response(served: Served) -> None:
    """The last response's next block: it joins the last turn (one message id)."""
    s = served.session
    last = s.records[-1]
    s.assistant("and the rest of that answer with the freshword")
    s.records[-1]["message"]["id"] = last["message"]["id"]
    s.records[-1]["requestId"] = last["requestId"]
    s.append()


def _the_half_line_completed(served: Served) -> None:
    """The line still being written when the page was shown, finished: that page
    was not kept (it reads differently later), the one before it grew by a line."""
    s = served.session
    s.user("a late question about the freshword")
    line = dumps(s.records[-1])
    append_bytes(s.path, line[:25])
    assert "still being written" in served.page("?page=3")
    append_bytes(s.path, line[25:])
    s._flushed = len(s.entries)


def _a_stopped_line_completed(served: Served) -> None:
    """A last line that stopped mid-way long ago (kept: it reads the same until the
    file changes), then completed: where reading would go on is inside that line."""
    s = served.session
    s.user("a late question about the freshword")
    line = dumps(s.records[-1])
    append_bytes(s.path, line[:25], mtime=time.time() - 600)
    assert "was never finished" in served.page("?page=3")
    append_bytes(s.path, line[25:])
    s._flushed = len(s.entries)


def _a_whole_record_then_its_newline(served: Served) -> None:
    """A last record without its ``\\n`` is read (the SDK reads it): the bytes after
    it continue that line, so nothing read before ends where reading would go on."""
    s = served.session
    s.user("a late question about the freshword")
    append_bytes(s.path, dumps(s.records[-1]).rstrip(b"\n"))
    s._flushed = len(s.entries)
    assert "a late question about the freshword" in served.page("?page=3")
    append_bytes(s.path, b"\n")
    s.assistant("a late answer")
    s.append()


def _a_new_leaf_on_an_older_branch(served: Served) -> None:
    s = served.session
    s.user("a question asked again after a rewind", parentUuid=served.prompts[-5])
    s.append()


def _a_compaction(served: Served) -> None:
    s = served.session
    s.system("compact_boundary")
    s.user("summary of all that came before", isCompactSummary=True)
    s.user("a question after the compaction")
    s.append()


def _the_subagent_grows(served: Served) -> None:
    served.sub.assistant("and there is the wombat after all")
    served.sub.append()


def _a_late_result_of_an_older_call(served: Served) -> None:
    """A parallel call's result written after the turns that followed it (read on
    and shown): it is put back into its call's turn, so the chain changed before the
    last turn."""
    s = served.session
    calls = s.assistant(
        "two calls", tool_uses=[("Bash", {"command": "ls"}), ("Bash", {"command": "pwd"})]
    )
    s.tool_result(calls.tool_use_ids[1], "/shop")
    s.user("the next question")
    answer = s.assistant("the next answer")
    s.append()
    served.web.clock.now += 1.5
    assert "the next answer" in served.page("?page=3")
    s.tool_result(calls.tool_use_ids[0], "a late a.txt", parentUuid=calls.uuids[1])
    s.user("and one more question", parentUuid=answer.uuid)
    s.append()


GROWS = [
    # change, read on from the last read (else laid out afresh), what the pages show
    (_new_turns, True, "a late answer"),
    (_more_of_the_last_response, True, "the rest of that answer"),
    (_the_subagent_grows, True, "the wombat after all"),
    (_the_half_line_completed, True, "a late question about the freshword"),
    (_a_stopped_line_completed, False, "a late question about the freshword"),
    (_a_whole_record_then_its_newline, False, "a late answer"),
    (_a_new_leaf_on_an_older_branch, False, "asked again after a rewind"),
    (_a_compaction, False, "a question after the compaction"),
    (_a_late_result_of_an_older_call, False, "a late a.txt"),
    (_rewrite_in_place, False, "question 3 about omega"),
]


@pytest.mark.parametrize(("change", "read_on", "shows"), GROWS)
def test_a_grown_session_pages_as_one_read_afresh(
    served: Served,
    reads: Reads,
    change: Callable[[Served], None],
    read_on: bool,
    shows: str,
) -> None:
    """After an append (a session being watched), the page reads only the new lines
    and lays out again only from the last turn: a full read of a 15,000-message
    transcript cost ~0.5 s of CPU after every turn. Whatever the change, every page
    and the page count are those of the transcript read afresh; a change that is no
    append to the live chain (a rewrite, a branch, a compaction, a line completed) is
    read afresh."""
    name = served.session.path.name
    for page in (1, 2, 3):
        served.page(f"?page={page}")
    assert reads.scans[name] == 1
    change(served)
    served.web.clock.now += 1.5
    reads.reset()
    served.page("?page=1")
    assert (reads.scans[name] == 0) is read_on
    if read_on:  # page 1's 200 lines, the last turn's and the new ones; not all 500 again
        assert reads.lines[name] < PAGE_TURNS + 20
    fresh = layout(build_conversation(_session_of(served.session, served.web.tree.root)))
    beyond = served.web.request(f"/session/{served.session.session_id}?page={fresh.pages + 1}")
    assert beyond.status_code == 400 and f"has {fresh.pages} page" in beyond.text
    found = "".join(
        served.web.get(f"/session/{served.session.session_id}?page={page}")
        for page in range(1, fresh.pages + 1)
    )
    for page in range(1, fresh.pages + 1):
        assert render_page(fresh, page).html in found
    assert shows in html.unescape(found)
    reads.reset()
    served.page("?page=1")
    assert reads.scans[name] == 0  # kept again, under its new key


@pytest.mark.parametrize("per_page", [1, 2, 3, PAGE_TURNS])
def test_a_layout_read_on_is_the_layout_read_afresh(tmp_path: Path, per_page: int) -> None:
    """Layouts.grow after each of several appends (compaction markers, merged
    responses, nested and unlinked subagents, a subagent that grows): the same pages,
    turns, anchors and places of every entry as a layout of the files read afresh."""
    s = _page_tree(tmp_path)
    root = tmp_path / "claude"
    session = _session_of(s, root)
    kept = Layouts()
    kept.keep("s", conversation_key(session), layout(build_conversation(session), per_page))
    sub = next(w for w in s.subagents if w.agent_id == "ag3")
    grown = 0
    for i in range(6):
        if i % 3 == 1:
            sub.user(f"third follow-up {i}")
            sub.append()
        call = s.assistant(f"answer {i}", tool_uses=[("Bash", {"command": f"ls {i}"})])
        s.tool_result(call.tool_use_ids[0], f"out {i}")
        s.assistant(thinking="thinking alone")  # joins the turn before it
        s.user(f"late question {i}")
        s.append()
        lay = kept.grow("s", conversation_key(session))
        assert lay is not None
        grown += 1
        fresh = layout(build_conversation(session), per_page)
        assert lay.pages == fresh.pages and lay.turns == fresh.turns
        assert (lay.starts, lay.entries, lay.calls) == (fresh.starts, fresh.entries, fresh.calls)
        assert lay.located == fresh.located and lay.first == fresh.first
        for page in range(1, fresh.pages + 1):
            assert render_page(lay, page).html == render_page(fresh, page).html
    assert grown == 6
