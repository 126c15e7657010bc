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
from collections.abc import Iterable
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


def _shown(message: Message) -> bool:
    """The page shows text, tool traffic (folded) and subagents; a message with none
    (only thinking, say) is left out."""
    return any(
        (b.kind == "text" and b.text.strip()) or b.kind in ("tool_use", "tool_result")
        for b in message.blocks
    )


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


def aliases(items: list[Item], entries: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Shown message uuid → the uuids of the other chain entries shown as part of it.

    One assistant response is written as several entries (a line per content block)
    and shown as one message under the first entry's uuid; consecutive tool results are
    shown as one too. A search hit names the entry, so each shown message carries an
    anchor for every entry folded into it (each follows the message it joins)."""
    shown = {i.uuid for i in items if isinstance(i, Message) and _shown(i)}
    out: dict[str, list[str]] = {}
    current: str | None = None
    for entry in entries:
        uuid = entry.get("uuid")
        if not isinstance(uuid, str):
            continue
        if uuid in shown:
            current = uuid
        elif current is not None:
            out.setdefault(current, []).append(uuid)
    return out


def _contains_hit(sub: Subagent, hits: set[str]) -> bool:
    return any(isinstance(e.get("uuid"), str) and e["uuid"] in hits for e in sub.entries) or any(
        _contains_hit(child, hits)
        for item in sub.items
        if isinstance(item, Message)
        for block in item.blocks
        for child in block.subagents
    )


def _items(walk: _Walk, items: list[Item], entries: Iterable[dict[str, Any]]) -> None:
    extra = aliases(items, entries)
    for item in items:
        if isinstance(item, Marker):
            walk.out.append(
                f'<p class="marker">{esc(item.text)} ({esc(_stamp(item.timestamp))})</p>'
            )
            continue
        if not _shown(item):
            continue
        _message(walk, item, extra.get(item.uuid, []))


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
    count = sum(1 for i in sub.items if isinstance(i, Message) and _shown(i))
    is_open = " open" if _contains_hit(sub, walk.hits) else ""
    walk.out.append(
        f'<details class="subagent"{is_open}><summary>Subagent {esc(sub.agent_id)}{esc(kind)}'
        f' <span class="brief">{count} messages</span></summary>'
    )
    note = problem_note(sub.problems)
    if note:
        walk.out.append(f'<p class="note">{esc(note)}</p>')
    _items(walk, sub.items, sub.entries)
    walk.out.append("</details>")


@dataclass
class Rendered:
    html: str
    shown_hits: list[str]  # anchors of the messages shown as hits, in page order


def render_conversation(conv: Conversation, hits: Iterable[str] = ()) -> Rendered:
    """The messages of the live chain as HTML; messages whose uuid is in ``hits`` (a
    search's matches) carry the ``hit`` class. A hit off the live chain (rewound, or
    before a compaction) is not shown, so ``shown_hits`` may be fewer."""
    walk = _Walk(set(hits))
    note = problem_note(conv.problems)
    if note:
        walk.out.append(f'<p class="note">{esc(note)}</p>')
    _items(walk, conv.items, conv.chain)
    if not any(isinstance(i, Marker) or _shown(i) for i in conv.items):
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
