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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from sessiondex.render.conversation import (
    Block,
    Conversation,
    Item,
    Marker,
    Message,
    Subagent,
    Turns,
    json_dumps,
    problem_note,
)
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
    return head, f"… cut: {len(lines)} lines, {size} in all (sessiondex show --tools has it)"


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
            f' <span class="brief">{lines} lines, {esc(size)}</span></summary>'
            f"{pre(block.text)}</details>"
        )


def _subagent(walk: _Walk, sub: Subagent) -> None:
    kind = f" ({sub.agent_type})" if sub.agent_type else ""
    shown = thread_turns(sub.iter_items(), sub.thread.chain)
    count = sum(1 for i in shown.turns if isinstance(i, Message))
    is_open = " open" if any(u in walk.hits for u in subagent_entries(sub)) else ""
    walk.out.append(
        f'<details class="subagent"{is_open}><summary>Subagent {esc(sub.agent_id)}{esc(kind)}'
        f' <span class="brief">{count} messages</span></summary>'
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
    subagents not linked to a call on the chain close the last page."""

    conv: Conversation
    main: ThreadTurns
    page_turns: int
    # Every entry a page shows (the chain's, its subagents') → (page, position in the
    # conversation): where a search hit or a fork point is, without rendering a page.
    located: dict[str, tuple[int, int]]

    @property
    def pages(self) -> int:
        return max(1, -(-len(self.main.turns) // self.page_turns))

    def page_of(self, uuid: str) -> int | None:
        place = self.located.get(uuid)
        return place[0] if place else None

    def in_order(self, uuids: Iterable[str]) -> list[tuple[str, int]]:
        """``(uuid, page)`` of those of ``uuids`` a page shows, in conversation order."""
        found = [(self.located[u], u) for u in set(uuids) if u in self.located]
        return [(u, place[0]) for place, u in sorted(found)]

    def turn_range(self, page: int) -> range:
        start = (page - 1) * self.page_turns
        return range(start, min(start + self.page_turns, len(self.main.turns)))


def layout(conv: Conversation, page_turns: int = PAGE_TURNS) -> Layout:
    """Reads the live chain (every turn's content: the page to show may depend on
    where a hit is) and places each entry on its page."""
    main = thread_turns(conv.iter_items(), conv.chain)
    out = Layout(conv, main, page_turns, {})

    def place(uuids: Iterable[str], page: int) -> None:
        for uuid in uuids:
            out.located.setdefault(uuid, (page, len(out.located)))

    for n, item in enumerate(main.turns):
        page = n // page_turns + 1
        place(main.entries[n], page)
        if isinstance(item, Message):
            for block in item.blocks:
                for sub in block.subagents:
                    place(subagent_entries(sub), page)
    for sub in conv.unlinked:
        place(subagent_entries(sub), out.pages)
    return out


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
    for n in lay.turn_range(page):
        _turn(walk, lay.main.turns[n], lay.main.anchors(n))
    if page == lay.pages:
        if not lay.main.turns:
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
