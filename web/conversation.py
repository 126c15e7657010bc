"""A conversation (:class:`~sessiondex.render.conversation.Conversation`) as an HTML
fragment for the session page.

The export's ``render_html`` is a whole standalone page with messages as plain text;
the web page wants Markdown, highlighted code, tool calls folded in ``<details>``,
subagents inline and an anchor on every message, so it has its own small walk over the
same model. A transcript is untrusted input, so every string from it reaches the page
only escaped: Markdown is rendered with raw HTML off (``<script>`` shows as text),
markdown-it refuses ``javascript:``/``data:`` links, images are not rendered (they would
load from anywhere), and Pygments escapes the code it colours.
"""

from __future__ import annotations

import html
import json
import operator
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from sessiondex.render.conversation import (
    Block,
    Conversation,
    FileSeen,
    Item,
    Marker,
    Message,
    Subagent,
    Thread,
    Turns,
    files_seen,
    grown_conversation,
    json_dumps,
    problem_note,
    reads_the_same,
)
from sessiondex.render.counts import counted
from sessiondex.render.sizes import human_size
from sessiondex.render.terminal import neutralize

# Past these sizes text is shown plain and cut: a page must stay quick to render and to
# load even for a 50 MB tool output (`sessiondex show --tools` has all of it).
MARKDOWN_MAX_CHARS = 100_000
HIGHLIGHT_MAX_CHARS = 50_000
CLIP_MAX_LINES = 400
CLIP_MAX_CHARS = 40_000


def esc(value: Any) -> str:
    """``value`` as HTML text, its control and bidi characters made visible as ``show``
    prints them (``^[``, ``<U+202E>``): a page is human-facing output too."""
    return html.escape(neutralize(str(value)), quote=True)


# ----------------------------------------------------------------- markdown + code
def _highlight(code: str, lang: str, _attrs: Any) -> str:
    """Pygments spans for a fenced block with a known language, else "" (markdown-it
    then escapes the block itself)."""
    if not lang or len(code) > HIGHLIGHT_MAX_CHARS:
        return ""
    return highlight(code, lang)


def highlight(code: str, lang: str) -> str:
    """``code`` as escaped Pygments spans (no wrapper), or "" for an unknown language."""
    from pygments import highlight as pygments_highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        lexer = get_lexer_by_name(lang.strip().lower())
    except ClassNotFound:
        return ""
    result: str = pygments_highlight(code, lexer, HtmlFormatter(nowrap=True))
    return result


def _link_open(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    # A link out of a transcript should not tell the site where it came from.
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    return renderer.renderToken(tokens, idx, options, env)


def _cell_open(
    renderer: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    # Column alignment as a class: the pages' CSP refuses inline style attributes.
    token = tokens[idx]
    style = str(token.attrs.pop("style", "") or "")
    if style.startswith("text-align:"):
        token.attrJoin("class", "al-" + style.split(":", 1)[1].strip())
    return renderer.renderToken(tokens, idx, options, env)


@lru_cache(maxsize=1)
def markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "highlight": _highlight})
    md.enable(["table", "strikethrough"])
    md.disable("image")
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("th_open", _cell_open)
    md.add_render_rule("td_open", _cell_open)
    return md


def render_markdown(text: str) -> str:
    if len(text) > MARKDOWN_MAX_CHARS:
        return pre(text)
    return str(markdown().render(neutralize(text)))


@lru_cache(maxsize=1)
def pygments_css() -> str:
    """The colours for highlighted code in messages and tool inputs."""
    from pygments.formatters import HtmlFormatter

    css: str = HtmlFormatter(style="default").get_style_defs([".md pre", "pre.hl"])
    return css


def clip(text: str) -> tuple[str, str | None]:
    """``(shown, note)``: long text cut to its head, the note saying what was left."""
    lines = text.splitlines()
    if len(lines) <= CLIP_MAX_LINES and len(text) <= CLIP_MAX_CHARS:
        return text, None
    head = "\n".join(lines[:CLIP_MAX_LINES])[:CLIP_MAX_CHARS]
    size = human_size(len(text.encode("utf-8", "surrogatepass")))
    return (
        head,
        f"… cut: {counted(len(lines), 'line')}, {size} in all (sessiondex show --tools has it)",
    )


def pre(text: str, lang: str = "") -> str:
    shown, note = clip(neutralize(text))
    body = highlight(shown, lang) if lang and len(shown) <= HIGHLIGHT_MAX_CHARS else ""
    out = f'<pre class="hl">{body}</pre>' if body else f"<pre>{html.escape(shown)}</pre>"
    if note:
        out += f'<p class="folded">{esc(note)}</p>'
    return out


# ----------------------------------------------------------------- the walk
# Turns per page of the session page. A turn is the unit MCP's read_session pages by
# (with include_tools: tool traffic is on the page, folded), so page N holds turns
# (N-1)*200 to N*200-1. A count, not a byte budget, so a page's bounds do not move when
# a message's size would: a link to page 7 stays a link to the same turns while the
# session grows. 200 turns are ~200 KB of HTML for an ordinary session (the 12,000-
# message one was 20 MB, 14 s in Chromium, on one page); long text is clipped anyway.
PAGE_TURNS = 200


@dataclass
class _Walk:
    hits: set[str]
    out: list[str] = field(default_factory=list)
    shown_hits: list[str] = field(default_factory=list)  # page order


def _stamp(timestamp: str | None) -> str:
    if not timestamp:
        return ""
    text = timestamp.replace("T", " ")
    if "." in text and text.endswith("Z"):
        text = text[: text.index(".")] + "Z"
    return text


def _role(message: Message) -> str:
    return "summary" if message.is_compact_summary else message.role


def _brief(input_json: str) -> str:
    """A tool input in one short line for the folded summary."""
    try:
        value = json.loads(input_json)
    except (ValueError, RecursionError):
        value = input_json
    if isinstance(value, dict):
        for key in ("command", "file_path", "pattern", "description", "url", "query", "prompt"):
            if isinstance(value.get(key), str):
                value = value[key]
                break
    text = value if isinstance(value, str) else json_dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text[:117] + "…" if len(text) > 120 else text


@dataclass
class ThreadTurns:
    """A thread (the main conversation or a subagent's) as the page shows it: its turns
    (:class:`~sessiondex.render.conversation.Turns`, tool traffic included), and for
    each the UUIDs of the chain entries it shows, in chain order. A search hit or a
    fork point names an entry, so every one of them gets an anchor in its turn."""

    turns: list[Item]
    entries: list[list[str]]

    def anchors(self, turn: int) -> list[str]:
        """The entries of ``turn`` other than the one it is shown under."""
        item = self.turns[turn]
        own = item.uuid if isinstance(item, Message) else None
        return [u for u in self.entries[turn] if u != own]


def thread_turns(items: Iterable[Item], chain: Iterable[dict[str, Any]]) -> ThreadTurns:
    numbered = Turns(tools=True)
    turns = [item for item in items if numbered.add(item) is not None]
    entries: list[list[str]] = [[] for _ in turns]
    if turns:
        for uuid, turn in numbered.where(chain).items():
            entries[turn].append(uuid)
    return ThreadTurns(turns, entries)


def subagent_entries(sub: Subagent) -> Iterator[str]:
    """The UUID of every entry on ``sub``'s chain and on those of the subagents it
    started, at any depth: where a search hit inside it can be. From the chains' stubs,
    so no transcript is read for it."""
    pending, seen = [sub], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for stub in current.thread.chain:
            if isinstance(stub.get("uuid"), str):
                yield stub["uuid"]
        for children in current.thread.links.values():
            pending.extend(children)


def _turn(walk: _Walk, item: Item, anchors: list[str]) -> None:
    if isinstance(item, Marker):
        spans = "".join(f'<span class="alias" id="msg-{esc(a)}"></span>' for a in anchors)
        walk.out.append(
            f'<p class="marker">{spans}{esc(item.text)} ({esc(_stamp(item.timestamp))})</p>'
        )
    else:
        _message(walk, item, anchors)


def _message(walk: _Walk, item: Message, alias: list[str]) -> None:
    role = _role(item)
    hit = item.uuid in walk.hits or any(a in walk.hits for a in alias)
    classes = f"msg {role}" + (" hit" if hit else "")
    if hit:
        walk.shown_hits.append(item.uuid)
    out = walk.out
    out.append(f'<article class="{esc(classes)}" id="msg-{esc(item.uuid)}">')
    out.extend(f'<span class="alias" id="msg-{esc(a)}"></span>' for a in alias)
    out.append(
        f'<div class="msg-head"><span class="role">{esc(role)}</span> · '
        f'<time datetime="{esc(item.timestamp or "")}">{esc(_stamp(item.timestamp))}</time>'
        f' <a class="anchor" href="#msg-{esc(item.uuid)}" title="link to this message">#</a>'
        "</div>"
    )
    texts = [b for b in item.blocks if b.kind == "text" and b.text.strip()]
    if role == "summary" and texts:
        is_open = " open" if hit else ""
        out.append(f"<details{is_open}><summary>Summary of the earlier conversation</summary>")
    for block in item.blocks:
        _block(walk, block)
    if role == "summary" and texts:
        out.append("</details>")
    out.append("</article>")


def _block(walk: _Walk, block: Block) -> None:
    out = walk.out
    if block.kind == "text":
        if block.text.strip():
            out.append(f'<div class="md">{render_markdown(block.text)}</div>')
    elif block.kind == "tool_use":
        out.append(
            f'<details class="tool call"><summary>Tool call <code>{esc(block.name)}</code>'
            f' <span class="brief">{esc(_brief(block.text))}</span></summary>'
            f"{pre(block.text, 'json')}</details>"
        )
        for sub in block.subagents:
            _subagent(walk, sub)
    elif block.kind == "tool_result":
        kind = "error" if block.is_error else "result"
        size = human_size(len(block.text.encode("utf-8", "surrogatepass")))
        lines = len(block.text.splitlines())
        out.append(
            f'<details class="tool {kind}"><summary>Tool {kind}'
            f' <span class="brief">{counted(lines, "line")}, {esc(size)}</span></summary>'
            f"{pre(block.text)}</details>"
        )


def _subagent(walk: _Walk, sub: Subagent) -> None:
    kind = f" ({sub.agent_type})" if sub.agent_type else ""
    shown = thread_turns(sub.iter_items(), sub.thread.chain)
    count = sum(1 for i in shown.turns if isinstance(i, Message))
    is_open = " open" if any(u in walk.hits for u in subagent_entries(sub)) else ""
    walk.out.append(
        f'<details class="subagent"{is_open}><summary>Subagent {esc(sub.agent_id)}{esc(kind)}'
        f' <span class="brief">{counted(count, "message")}</span></summary>'
    )
    note = problem_note(sub.problems)
    if note:
        walk.out.append(f'<p class="note">{esc(note)}</p>')
    for n, item in enumerate(shown.turns):
        _turn(walk, item, shown.anchors(n))
    walk.out.append("</details>")


@dataclass
class Layout:
    """A conversation cut into pages of ``page_turns`` turns of its live chain; the
    subagents not linked to a call on the chain close the last page.

    It holds where each turn is on the chain, not the turns: :meth:`page` reads a page
    back from its own lines when it is shown. So a layout kept between requests
    (:data:`LAYOUTS`) costs the chain's stubs, not the conversation's text, and showing
    page 40 of a long session reads page 40, not the session."""

    conv: Conversation
    page_turns: int
    # The chain index of the entry each turn's item starts at: a page is the chain from
    # its first turn's start to the next page's.
    starts: list[int]
    # Per turn, the UUIDs of the chain entries it shows (as ThreadTurns.entries).
    entries: list[list[str]]
    # Tool-use id → the turn whose call shows the subagents it started.
    calls: dict[str, int]
    # Every entry a page shows (the chain's, its subagents') → (page, position in the
    # conversation): where a search hit or a fork point is, without reading a page.
    located: dict[str, tuple[int, int]]
    # The first entry of each display item → its turn (Turns.first): what the walk
    # knew, to go on from a turn when the transcript grows (relayout).
    first: dict[str, int] = field(default_factory=dict)

    @property
    def turns(self) -> int:
        return len(self.starts)

    @property
    def pages(self) -> int:
        return max(1, -(-self.turns // self.page_turns))

    def page_of(self, uuid: str) -> int | None:
        place = self.located.get(uuid)
        return place[0] if place else None

    def in_order(self, uuids: Iterable[str]) -> list[tuple[str, int]]:
        """``(uuid, page)`` of those of ``uuids`` a page shows, in conversation order."""
        found = [(self.located[u], u) for u in set(uuids) if u in self.located]
        return [(u, place[0]) for place, u in sorted(found)]

    def turn_range(self, page: int) -> range:
        start = (page - 1) * self.page_turns
        return range(start, min(start + self.page_turns, self.turns))

    def page(self, page: int) -> ThreadTurns:
        """The turns of page ``page``, read from the transcript: only the lines of the
        chain entries from its first turn to the next page's first.

        A turn starts a display item, and what makes an item (merging a response's
        lines, a run of tool results) looks back no further than the item being built,
        so the page's piece of the chain yields the same turns as the whole chain
        does. A subagent goes with the one call the whole walk showed it at; the
        anchors are the whole walk's (an entry that joins the turn before it may sit
        on the page before)."""
        span = self.turn_range(page)
        if not span:
            return ThreadTurns([], [])
        main, chain = self.conv.main, self.conv.chain
        end = self.starts[span.stop] if span.stop < self.turns else len(chain)
        piece = chain[self.starts[span.start] : end]
        shown = {id(stub) for stub in main.shown}
        thread = Thread(main.scan, piece, [stub for stub in piece if id(stub) in shown])
        thread.links = {
            call: subs for call, subs in main.links.items() if self.calls.get(call, -1) in span
        }
        numbered = Turns(tools=True)
        turns = [item for item in thread.iter_items() if numbered.add(item) is not None]
        return ThreadTurns(turns, self.entries[span.start : span.stop])


def layout(conv: Conversation, page_turns: int = PAGE_TURNS) -> Layout:
    """Reads the live chain once (every entry's content: whether an item shows
    anything decides the turns) and places each entry on its page. One item at a time:
    only the layout is kept, not the items."""
    return _layout(conv, page_turns, 0, [], {}, {})


def _layout(
    conv: Conversation,
    page_turns: int,
    turn: int,
    starts: list[int],
    calls: dict[str, int],
    first: dict[str, int],
) -> Layout:
    """:func:`layout`, the walk begun at turn ``turn``: ``starts``, ``calls`` and
    ``first`` hold those of the turns before it (a layout of a chain that was the same
    up to there: :func:`relayout`), and are added to."""
    chain, main = conv.chain, conv.main
    begin = starts[turn] if turn else 0
    del starts[turn:]
    thread = main
    if begin:  # as Layout.page reads a page: a turn starts an item
        piece = chain[begin:]
        shown = {id(stub) for stub in main.shown}
        thread = Thread(main.scan, piece, [stub for stub in piece if id(stub) in shown])
        thread.links = {call: subs for call, subs in main.links.items() if call not in calls}
    position = {stub["uuid"]: n for n, stub in enumerate(thread.chain, begin)}
    numbered = Turns(tools=True, count=turn, first=first)
    started: dict[int, list[Subagent]] = {}  # turn → the subagents its calls started
    for call, early in calls.items():
        started.setdefault(early, []).extend(main.links[call])
    for item in thread.iter_items():
        at = numbered.add(item)
        if at is None:
            continue
        starts.append(position[item.uuid])
        for block in item.blocks if isinstance(item, Message) else ():
            if block.subagents and block.tool_id is not None:
                calls[block.tool_id] = at
                started.setdefault(at, []).extend(block.subagents)
    entries: list[list[str]] = [[] for _ in starts]
    if starts:
        for uuid, at in numbered.where(chain).items():
            entries[at].append(uuid)
    out = Layout(conv, page_turns, starts, entries, calls, {}, numbered.first)

    def place(uuids: Iterable[str], page: int) -> None:
        for uuid in uuids:
            out.located.setdefault(uuid, (page, len(out.located)))

    for n, shown_entries in enumerate(entries):
        page = n // page_turns + 1
        place(shown_entries, page)
        for sub in started.get(n, ()):
            place(subagent_entries(sub), page)
    for sub in conv.unlinked:
        place(subagent_entries(sub), out.pages)
    return out


def _links(conv: Conversation) -> dict[tuple[Path, str], list[Path]]:
    """Which subagent transcripts each call of ``conv`` (the main thread's, and its
    subagents') shows."""
    threads = [(conv.path, conv.main), *((sub.path, sub.thread) for sub in conv.subagents)]
    return {
        (owner, call): [sub.path for sub in subs]
        for owner, thread in threads
        for call, subs in thread.links.items()
    }


def relayout(old: Layout, conv: Conversation) -> Layout | None:
    """The layout of ``conv``, a conversation ``old``'s grew into (its transcripts
    appended to: ``render.conversation.grown_conversation``), walking only from
    ``old``'s last turn on; None when that cannot give what :func:`layout` would.

    What an item holds is decided by the entries up to the next item's start, so the
    turns before the last one stand as long as the chain up to the last turn's first
    entry is the same (the same stubs, in the same places) and every call shows the
    same subagents: an append that continues the conversation. A new leaf on another
    branch, a rewind, a compaction or a late parallel result moves the chain there,
    and a subagent linked elsewhere changes the calls: None."""
    last = old.turns - 1
    if last < 1 or old.page_turns <= 0:
        return None
    begin = old.starts[last]
    before, now = old.conv.chain, conv.chain
    if len(now) <= begin or not all(map(operator.is_, before[: begin + 1], now[: begin + 1])):
        return None
    if _links(old.conv) != _links(conv):
        return None
    first = {uuid: turn for uuid, turn in old.first.items() if turn < last}
    calls = {call: turn for call, turn in old.calls.items() if turn < last}
    return _layout(conv, old.page_turns, last, list(old.starts), calls, first)


#: The layouts the server keeps (those of the sessions shown last): at most this many
#: sessions, and at most this many transcript entries together, the last one shown
#: always. A layout is its transcripts' stubs, ~1.4 KB an entry: 21 MB for a session of
#: 15,000 messages, so the entry budget is ~100 MB.
LAYOUTS_KEPT = 8
LAYOUTS_ENTRIES = 75_000


def _entries_held(lay: Layout) -> int:
    threads = [lay.conv.main, *(sub.thread for sub in lay.conv.subagents)]
    return sum(len(t.scan.stubs) if t.scan is not None else len(t.chain) for t in threads)


class Layouts:
    """The layouts of the sessions shown last, one a transcript, each with the
    :func:`~sessiondex.render.conversation.conversation_key` it was read under (the
    path, inode, size and mtime of every file the conversation is read from): the next
    page of a session reads that page, not the whole transcript again. A rewrite or a
    new subagent changes the key, so the page after it is laid out afresh (and replaces
    the old layout); an append to the transcript or a subagent's (a session being
    watched live) is read on from where the last read stopped (:meth:`grow`). Shared
    by the server's threads."""

    def __init__(self, size: int = LAYOUTS_KEPT, entries: int = LAYOUTS_ENTRIES) -> None:
        self.size = size
        self.entries = entries
        # transcript path → (key, layout, entries it holds, its files as read)
        self._kept: OrderedDict[str, tuple[Hashable, Layout, int, dict[Path, FileSeen] | None]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def get(self, path: str, key: Hashable | None) -> Layout | None:
        """The layout of the transcript at ``path`` if it was read under ``key``."""
        with self._lock:
            found = self._kept.get(path)
            if key is None or found is None or found[0] != key:
                return None
            self._kept.move_to_end(path)
            return found[1]

    def grow(self, path: str, key: tuple[tuple[object, ...], ...] | None) -> Layout | None:
        """The layout of the transcript at ``path``, now under ``key``, from the one
        kept for it when its files were only appended to since: the new lines read,
        and the turns laid out again from the last one the kept layout had
        (:func:`relayout`); kept in its place. None when it cannot be had so (no
        layout kept, a rewrite, a branch, a compaction…): lay it out afresh."""
        with self._lock:
            found = self._kept.get(path)
        if key is None or found is None:
            return None
        old_key, old, _, seen = found
        if seen is None or not isinstance(old_key, tuple):
            return None
        conv = grown_conversation(old.conv, seen, old_key, key)
        lay = relayout(old, conv) if conv is not None else None
        if lay is None:
            return None
        self.keep(path, key if reads_the_same(lay.conv) else None, lay)
        return lay

    def keep(self, path: str, key: Hashable | None, lay: Layout) -> None:
        """Keep ``lay``, read under ``key``, for ``path`` (None: it cannot be looked up
        again, nothing is kept), dropping those used longest ago past the bounds."""
        if key is None:
            return
        seen = files_seen(lay.conv)
        with self._lock:
            self._kept[path] = (key, lay, _entries_held(lay), seen)
            self._kept.move_to_end(path)
            while len(self._kept) > 1 and (
                len(self._kept) > self.size
                or sum(found[2] for found in self._kept.values()) > self.entries
            ):
                self._kept.popitem(last=False)

    def __len__(self) -> int:
        return len(self._kept)


LAYOUTS = Layouts()


@dataclass
class Rendered:
    html: str
    shown_hits: list[str]  # anchors of the messages shown as hits, in page order


def render_page(lay: Layout, page: int, hits: Iterable[str] = ()) -> Rendered:
    """Page ``page`` (from 1) of the live chain as HTML; messages whose uuid is in
    ``hits`` (a search's matches) carry the ``hit`` class. A hit off the live chain
    (rewound, or before a compaction) is on no page."""
    walk = _Walk(set(hits))
    conv = lay.conv
    note = problem_note(conv.problems)  # about the whole transcript: on every page
    if note:
        walk.out.append(f'<p class="note">{esc(note)}</p>')
    shown = lay.page(page)
    for n, item in enumerate(shown.turns):
        _turn(walk, item, shown.anchors(n))
    if page == lay.pages:
        if not lay.turns:
            walk.out.append('<p class="marker">(no messages on the conversation chain)</p>')
        if conv.unlinked:
            walk.out.append("<h2>Subagents not linked to a call on this chain</h2>")
            for sub in conv.unlinked:
                _subagent(walk, sub)
    return Rendered("\n".join(walk.out), walk.shown_hits)


def mark_snippet(snippet: str, start: str, end: str) -> str:
    """A search snippet, escaped, with the text between ``start`` and ``end`` in
    ``<mark>``. The tags are always balanced, whatever stray marker characters the
    snippet holds (a transcript could contain them)."""
    out: list[str] = []
    inside = False
    piece: list[str] = []
    for char in snippet:
        if char == start and not inside:
            out.append(esc("".join(piece)))
            piece, inside = [], True
            out.append("<mark>")
        elif char == end and inside:
            out.append(esc("".join(piece)))
            piece, inside = [], False
            out.append("</mark>")
        elif char not in (start, end):
            piece.append(char)
    out.append(esc("".join(piece)))
    if inside:
        out.append("</mark>")
    return "".join(out)
