"""A session's conversation, read from its transcript, and its renderers.

The transcript is the truth (the index only finds the file): the main chain is the SDK's
(:mod:`transcripts.chain`), so ``show --format json`` is what ``get_session_messages``
returns, and the text, Markdown and HTML views show the same messages. Subagent
transcripts are linked to the Task/Agent call that started them through the
``toolUseId`` of their ``.meta.json`` and shown at that call with ``subagents=True``.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sessiondex.render.sizes import human_size
from sessiondex.transcripts.chain import load_entries, main_chain, subagent_chain, visible_messages
from sessiondex.transcripts.discover import iter_subagent_files, read_subagent_meta
from sessiondex.transcripts.reader import PROBLEM_INVALID_UTF8
from sessiondex.transcripts.records import content_blocks, message_content, response_id

# Tool outputs and inputs longer than this are folded: the head is shown with the size.
FOLD_LINES = 12
FOLD_CHARS = 2000
FOLD_KEEP_LINES = 8


# ----------------------------------------------------------------- the model
@dataclass
class Block:
    """One displayable piece of a message: text, a tool call or a tool result."""

    kind: str  # "text" | "tool_use" | "tool_result"
    text: str = ""
    name: str | None = None  # the tool's name (tool_use)
    tool_id: str | None = None  # tool_use id, or the id a tool_result answers
    is_error: bool = False
    subagents: list[Subagent] = field(default_factory=list)  # started by this call


@dataclass
class Message:
    """One turn as shown: consecutive assistant entries of one response are merged."""

    role: str  # "user" | "assistant" | "tool" (a user entry holding only tool results)
    uuid: str
    timestamp: str | None
    blocks: list[Block]
    is_compact_summary: bool = False

    def has_text(self) -> bool:
        return any(b.kind == "text" and b.text.strip() for b in self.blocks)


@dataclass
class Marker:
    """A compact boundary: what came before it is not on the chain."""

    timestamp: str | None
    text: str


@dataclass
class Subagent:
    agent_id: str
    agent_type: str | None
    tool_use_id: str | None
    parent_agent_id: str | None
    path: Path
    entries: list[dict[str, Any]]  # the SDK's subagent chain (user + assistant)
    items: list[Item]
    problems: Counter[str]


Item = Message | Marker


@dataclass
class Conversation:
    session: dict[str, Any]  # the contract session object (metadata for the header)
    path: Path
    chain: list[dict[str, Any]]  # main_chain(): every entry type
    items: list[Item]
    problems: Counter[str]
    subagents: list[Subagent]  # every subagent file found
    unlinked: list[Subagent]  # those whose call is not on the chain

    @property
    def messages(self) -> list[dict[str, Any]]:
        return visible_messages(self.chain)


# ----------------------------------------------------------------- building it
def _content_blocks(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The entry's blocks for display: a plain-string content is one text block."""
    content = message_content(entry)
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content_blocks(entry)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
            elif isinstance(item, dict) and item.get("type") == "image":
                parts.append("[image]")
        return "\n".join(parts)
    return "" if content is None else str(content)


def _input_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return repr(value)


def _blocks(entry: dict[str, Any]) -> list[Block]:
    out: list[Block] = []
    for block in _content_blocks(entry):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            out.append(Block("text", block["text"]))
        elif kind == "image":
            out.append(Block("text", "[image]"))
        elif kind == "tool_use":
            name = block.get("name")
            tool_id = block.get("id")
            out.append(
                Block(
                    "tool_use",
                    _input_text(block.get("input")),
                    name=name if isinstance(name, str) else "tool",
                    tool_id=tool_id if isinstance(tool_id, str) else None,
                )
            )
        elif kind == "tool_result":
            tool_id = block.get("tool_use_id")
            out.append(
                Block(
                    "tool_result",
                    _result_text(block.get("content")),
                    tool_id=tool_id if isinstance(tool_id, str) else None,
                    is_error=block.get("is_error") is True,
                )
            )
    return out


def _items(chain: list[dict[str, Any]], messages: list[dict[str, Any]]) -> list[Item]:
    """Chain entries → display items: messages (one per response) and compact markers."""
    shown = {id(e) for e in messages}
    items: list[Item] = []
    response_of: dict[str, str] = {}  # displayed assistant message uuid → response id
    for entry in chain:
        if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary":
            items.append(
                Marker(
                    _str(entry.get("timestamp")),
                    "Conversation compacted: earlier messages are not on the live chain",
                )
            )
            continue
        if id(entry) not in shown:
            continue
        role = "user" if entry.get("type") == "user" else "assistant"
        blocks = _blocks(entry)
        previous = items[-1] if items else None
        if role == "user" and blocks and all(b.kind == "tool_result" for b in blocks):
            # Tool output is written as a user entry; it is no prompt, so show it as
            # "tool", one item for the results of consecutive parallel calls.
            if isinstance(previous, Message) and previous.role == "tool":
                previous.blocks.extend(blocks)
                continue
            role = "tool"
        rid = response_id(entry)
        if (
            rid
            and isinstance(previous, Message)
            and previous.role == "assistant"
            and response_of.get(previous.uuid) == rid
        ):
            previous.blocks.extend(blocks)
            continue
        message = Message(
            role,
            entry["uuid"],
            _str(entry.get("timestamp")),
            blocks,
            is_compact_summary=bool(entry.get("isCompactSummary")),
        )
        if rid:
            response_of[message.uuid] = rid
        items.append(message)
    return items


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _load_subagent(path: Path, agent_id: str) -> Subagent:
    try:
        entries, problems = load_entries(path)
    except OSError:
        entries, problems = [], Counter({"unreadable": 1})
    chain = subagent_chain(entries)
    meta = read_subagent_meta(path)
    return Subagent(
        agent_id=agent_id,
        agent_type=_str(meta.get("agentType")),
        tool_use_id=_str(meta.get("toolUseId")),
        parent_agent_id=_str(meta.get("parentAgentId")),
        path=path,
        entries=chain,
        items=_items(chain, chain),
        problems=problems,
    )


def _tool_blocks(items: list[Item]) -> Iterator[Block]:
    for item in items:
        if isinstance(item, Message):
            yield from (b for b in item.blocks if b.kind == "tool_use")


def _link(items: list[Item], by_call: dict[str, list[Subagent]], linked: set[int]) -> None:
    """Attach subagents to the call that started them, nested ones included."""
    for block in _tool_blocks(items):
        for sub in by_call.pop(block.tool_id or "", []):
            block.subagents.append(sub)
            linked.add(id(sub))
            _link(sub.items, by_call, linked)


def build_conversation(session: dict[str, Any]) -> Conversation:
    """The conversation of a resolved session (its contract object); raises OSError when
    the transcript cannot be read."""
    path = Path(session["file_path"])
    entries, problems = load_entries(path)
    chain = main_chain(entries)
    items = _items(chain, visible_messages(chain))
    subagents = [
        _load_subagent(tf.path, tf.agent_id or "")
        for tf in iter_subagent_files(
            Path(session["config_dir"]), session["project_key"], session["session_id"]
        )
    ]
    by_call: dict[str, list[Subagent]] = {}
    for sub in subagents:
        if sub.tool_use_id:
            by_call.setdefault(sub.tool_use_id, []).append(sub)
    linked: set[int] = set()
    _link(items, by_call, linked)
    unlinked = [s for s in subagents if id(s) not in linked]
    return Conversation(
        session=session,
        path=path,
        chain=chain,
        items=items,
        problems=problems,
        subagents=subagents,
        unlinked=unlinked,
    )


# ----------------------------------------------------------------- shared helpers
def problem_note(problems: Counter[str]) -> str | None:
    """One line about the lines that were repaired or skipped, or None."""
    parts = []
    if problems.get(PROBLEM_INVALID_UTF8):
        parts.append(
            f"{problems[PROBLEM_INVALID_UTF8]} line(s) with invalid UTF-8 "
            "(bad bytes replaced with U+FFFD)"
        )
    skipped = sum(v for k, v in problems.items() if k != PROBLEM_INVALID_UTF8)
    if skipped:
        kinds = ", ".join(
            f"{k} {v}" for k, v in sorted(problems.items()) if k != PROBLEM_INVALID_UTF8
        )
        parts.append(f"{skipped} unreadable line(s) skipped ({kinds})")
    return "; ".join(parts) if parts else None


def fold(text: str) -> tuple[str, str | None]:
    """``(shown, note)``: long text cut to its first lines, ``note`` saying what was left."""
    lines = text.splitlines()
    if len(lines) <= FOLD_LINES and len(text) <= FOLD_CHARS:
        return text, None
    head = "\n".join(lines[:FOLD_KEEP_LINES])
    if len(head) > FOLD_CHARS:
        head = head[:FOLD_CHARS]
    size = len(text.encode("utf-8", "surrogatepass"))
    return head, f"… folded: {len(lines)} lines, {human_size(size)}"


def _stamp(timestamp: str | None) -> str:
    """``2026-11-01 10:00:01Z`` from the transcript's ISO time (UTC, as written)."""
    if not timestamp:
        return ""
    text = timestamp.replace("T", " ")
    if "." in text and text.endswith("Z"):
        text = text[: text.index(".")] + "Z"
    return text


def _visible(message: Message, tools: bool, subagents: bool) -> bool:
    if message.has_text():
        return True
    if tools and any(b.kind in ("tool_use", "tool_result") for b in message.blocks):
        return True
    return subagents and any(b.subagents for b in message.blocks)


EMPTY_NOTE = "(no messages on the conversation chain)"


def _empty(items: list[Item], tools: bool, subagents: bool) -> bool:
    """Nothing to show: a metadata-only file, or only tool traffic without --tools."""
    return not any(isinstance(i, Marker) or _visible(i, tools, subagents) for i in items)


def _role_label(message: Message) -> str:
    return "summary" if message.is_compact_summary else message.role


def _pr_urls(session: dict[str, Any]) -> list[str]:
    return [p["url"] for p in session.get("pr_links") or [] if p.get("url")]


def _header_fields(session: dict[str, Any]) -> list[tuple[str, str]]:
    fields = [("session", str(session.get("session_id") or ""))]
    if session.get("cwd"):
        fields.append(("directory", session["cwd"]))
    branches = session.get("branches") or (
        [session["git_branch"]] if session.get("git_branch") else []
    )
    if branches:
        fields.append(("branch", ", ".join(branches)))
    prs = _pr_urls(session)
    if prs:
        fields.append(("PRs", " ".join(prs)))
    if session.get("tag"):
        fields.append(("tag", session["tag"]))
    dates = " → ".join(
        _stamp(d) for d in (session.get("created_at"), session.get("last_activity")) if d
    )
    if dates:
        fields.append(("dates", dates))
    return fields


# ----------------------------------------------------------------- text
@dataclass
class _Style:
    color: bool

    def __call__(self, text: str, **kw: Any) -> str:
        if not self.color:
            return text
        import click

        return click.style(text, **kw)


_ROLE_COLORS = {"user": "green", "assistant": "cyan", "summary": "magenta", "tool": "blue"}


def render_text(
    conv: Conversation, *, tools: bool = False, subagents: bool = False, color: bool = False
) -> str:
    style = _Style(color)
    out: list[str] = []
    session = conv.session
    out.append(style(str(session.get("title") or session.get("session_id")), bold=True))
    for name, value in _header_fields(session):
        out.append(style(f"{name}: ", dim=True) + value)
    note = problem_note(conv.problems)
    if note:
        out.append(style(f"note: {note}", fg="yellow"))
    out.append("")
    if _empty(conv.items, tools, subagents):
        out += [style(EMPTY_NOTE, dim=True), ""]
    _text_items(out, conv.items, style, tools, subagents, indent="")
    if subagents and conv.unlinked:
        out.append(style("Subagents not linked to a call on this chain", bold=True))
        out.append("")
        for sub in conv.unlinked:
            _text_subagent(out, sub, style, tools, indent="")
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.split("\n"))


def _text_items(
    out: list[str], items: list[Item], style: _Style, tools: bool, subagents: bool, indent: str
) -> None:
    for item in items:
        if isinstance(item, Marker):
            out.append(indent + style(f"── {item.text} ({_stamp(item.timestamp)}) ──", fg="yellow"))
            out.append("")
            continue
        if not _visible(item, tools, subagents):
            continue
        role = _role_label(item)
        out.append(
            indent
            + style(role, fg=_ROLE_COLORS.get(role), bold=True)
            + style(f"  {_stamp(item.timestamp)}", dim=True)
        )
        body = indent + "  "
        for block in item.blocks:
            if block.kind == "text":
                if block.text.strip():
                    out.append(_indent(block.text.strip("\n"), body))
            elif block.kind == "tool_use":
                if tools:
                    compact = _one_line(block.text)
                    if compact is not None:
                        out.append(body + style(f"→ {block.name} ", fg="blue") + compact)
                    else:
                        shown, folded = fold(block.text)
                        out.append(body + style(f"→ {block.name}", fg="blue"))
                        out.append(_indent(shown, body + "    "))
                        if folded:
                            out.append(body + "    " + style(folded, dim=True))
                if subagents:
                    for sub in block.subagents:
                        _text_subagent(out, sub, style, tools, indent=body)
            elif block.kind == "tool_result" and tools:
                shown, folded = fold(block.text)
                label = "← error" if block.is_error else "← result"
                out.append(body + style(label, fg="red" if block.is_error else "blue"))
                if shown.strip("\n"):
                    out.append(_indent(shown.strip("\n"), body + "    "))
                if folded:
                    out.append(body + "    " + style(folded, dim=True))
        out.append("")


def _one_line(input_json: str) -> str | None:
    """A tool input as one short line of JSON when it fits, else None."""
    try:
        value = json.loads(input_json)
    except ValueError:
        return None
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 and "\n" not in text else None


def _subagent_title(sub: Subagent) -> str:
    kind = f" ({sub.agent_type})" if sub.agent_type else ""
    return f"subagent {sub.agent_id}{kind}"


def _text_subagent(out: list[str], sub: Subagent, style: _Style, tools: bool, indent: str) -> None:
    out.append(indent + style(f"┌ {_subagent_title(sub)}", fg="magenta", bold=True))
    note = problem_note(sub.problems)
    if note:
        out.append(indent + "│ " + style(f"note: {note}", fg="yellow"))
    inner: list[str] = []
    _text_items(inner, sub.items, style, tools, True, indent="")
    for line in "\n".join(inner).rstrip("\n").split("\n"):
        out.append(indent + "│ " + line if line else indent + "│")
    out.append(indent + style(f"└ end of {_subagent_title(sub)}", fg="magenta"))


# ----------------------------------------------------------------- markdown
def _fence(text: str, lang: str = "") -> str:
    """A code fence longer than any backtick run inside ``text``."""
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def render_markdown(conv: Conversation, *, tools: bool = False, subagents: bool = False) -> str:
    session = conv.session
    out = [f"# {session.get('title') or session.get('session_id')}", ""]
    for name, value in _header_fields(session):
        if name == "PRs":
            value = ", ".join(f"<{u}>" for u in _pr_urls(session))
        elif name in ("session", "directory", "branch"):
            value = f"`{value}`"
        out.append(f"- **{name}**: {value}")
    note = problem_note(conv.problems)
    if note:
        out += ["", f"> **note:** {note}"]
    out += ["", "---", ""]
    if _empty(conv.items, tools, subagents):
        out += [f"*{EMPTY_NOTE}*", ""]
    _md_items(out, conv.items, tools, subagents, level=2)
    if subagents and conv.unlinked:
        out += ["## Subagents not linked to a call on this chain", ""]
        for sub in conv.unlinked:
            _md_subagent(out, sub, tools, level=3)
    return "\n".join(out).rstrip("\n") + "\n"


def _md_items(out: list[str], items: list[Item], tools: bool, subagents: bool, level: int) -> None:
    hashes = "#" * min(level, 6)
    for item in items:
        if isinstance(item, Marker):
            out += [f"> *{item.text}* ({_stamp(item.timestamp)})", ""]
            continue
        if not _visible(item, tools, subagents):
            continue
        out += [f"{hashes} {_role_label(item).capitalize()} · {_stamp(item.timestamp)}", ""]
        for block in item.blocks:
            if block.kind == "text":
                if block.text.strip():
                    out += [block.text.strip("\n"), ""]
            elif block.kind == "tool_use":
                if tools:
                    shown, folded = fold(block.text)
                    out += [f"**Tool call:** `{block.name}`", "", _fence(shown, "json"), ""]
                    if folded:
                        out += [f"*{folded}*", ""]
                if subagents:
                    for sub in block.subagents:
                        _md_subagent(out, sub, tools, level + 1)
            elif block.kind == "tool_result" and tools:
                shown, folded = fold(block.text)
                label = "Tool error" if block.is_error else "Tool result"
                out += [f"**{label}:**", "", _fence(shown.strip("\n")), ""]
                if folded:
                    out += [f"*{folded}*", ""]


def _md_subagent(out: list[str], sub: Subagent, tools: bool, level: int) -> None:
    inner: list[str] = [f"**{_subagent_title(sub)}**", ""]
    note = problem_note(sub.problems)
    if note:
        inner += [f"**note:** {note}", ""]
    _md_items(inner, sub.items, tools, True, level)
    text = "\n".join(inner).rstrip("\n")
    out += [_indent(text, "> "), ""]


# ----------------------------------------------------------------- json (SDK shape)
def session_messages(conv: Conversation, *, subagents: bool = False) -> list[dict[str, Any]]:
    """SDK ``SessionMessage`` objects; with ``subagents``, each subagent's messages
    (with ``parent_tool_use_id``/``parent_agent_id`` as the SDK sets them) follow the
    message that made its call."""
    by_call: dict[str, list[Subagent]] = {}
    if subagents:
        for sub in conv.subagents:
            if sub.tool_use_id:
                by_call.setdefault(sub.tool_use_id, []).append(sub)
    out: list[dict[str, Any]] = []
    emitted: set[int] = set()
    _json_entries(out, conv.messages, None, by_call, emitted)
    if subagents:
        for sub in conv.subagents:
            if id(sub) not in emitted:
                emitted.add(id(sub))
                _json_entries(out, sub.entries, sub, by_call, emitted)
    return out


def _json_entries(
    out: list[dict[str, Any]],
    entries: list[dict[str, Any]],
    sub: Subagent | None,
    by_call: dict[str, list[Subagent]],
    emitted: set[int],
) -> None:
    for entry in entries:
        out.append(
            {
                "type": "user" if entry.get("type") == "user" else "assistant",
                "uuid": entry.get("uuid", ""),
                "session_id": entry.get("sessionId", ""),
                "message": entry.get("message"),
                "parent_tool_use_id": sub.tool_use_id if sub else None,
                "parent_agent_id": sub.parent_agent_id if sub else None,
            }
        )
        for block in _content_blocks(entry):
            if block.get("type") == "tool_use":
                for child in by_call.pop(str(block.get("id")), []):
                    emitted.add(id(child))
                    _json_entries(out, child.entries, child, by_call, emitted)


def render_json(conv: Conversation, *, subagents: bool = False) -> str:
    messages = session_messages(conv, subagents=subagents)
    try:
        return orjson.dumps(messages, option=orjson.OPT_INDENT_2).decode() + "\n"
    except TypeError:  # lone surrogates from a "\ud800" escape: orjson refuses them
        return json.dumps(messages, indent=2) + "\n"


# ----------------------------------------------------------------- html
_CSS = """
:root { color-scheme: light dark; --fg:#1f2328; --bg:#fff; --muted:#656d76; --line:#d0d7de;
  --user:#ddf4ff; --assistant:#f6f8fa; --summary:#fbefff; --tool:#fff8c5; --err:#ffebe9; }
@media (prefers-color-scheme: dark) { :root { --fg:#e6edf3; --bg:#0d1117; --muted:#8d96a0;
  --line:#30363d; --user:#0c2d48; --assistant:#161b22; --summary:#2a1a3a; --tool:#2e2a0f;
  --err:#3d1418; } }
body { font: 15px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
  color: var(--fg); background: var(--bg); max-width: 52rem; margin: 2rem auto;
  padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .5rem; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem;
  color: var(--muted); margin: 0 0 1.5rem; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; overflow-wrap: anywhere; }
.note { border-left: 4px solid #d4a72c; padding: .4rem .8rem; margin: 1rem 0; }
.msg { border: 1px solid var(--line); border-radius: 8px; padding: .6rem .9rem;
  margin: .8rem 0; }
.msg.user { background: var(--user); } .msg.assistant { background: var(--assistant); }
.msg.summary { background: var(--summary); }
.msg header { font-size: .85rem; color: var(--muted); margin-bottom: .3rem; }
.msg header .role { color: var(--fg); font-weight: 600;
  text-transform: capitalize; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.4 ui-monospace,
  SFMono-Regular, Menlo, Consolas, monospace; margin: .3rem 0; }
details.tool { background: var(--tool); border-radius: 6px; padding: .3rem .6rem;
  margin: .4rem 0; } details.tool.error { background: var(--err); }
details.tool summary { cursor: pointer; font-size: .9rem; }
.folded { color: var(--muted); font-style: italic; font-size: .85rem; }
.marker { text-align: center; color: var(--muted); margin: 1.2rem 0;
  border-top: 1px dashed var(--line); padding-top: .4rem; }
section.subagent { border-left: 3px solid #8250df; padding-left: .8rem; margin: .6rem 0; }
section.subagent > h3 { font-size: .95rem; margin: .3rem 0; }
"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def render_html(conv: Conversation, *, tools: bool = False, subagents: bool = False) -> str:
    session = conv.session
    title = str(session.get("title") or session.get("session_id"))
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_esc(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{_esc(title)}</h1>",
        '<dl class="meta">',
    ]
    for name, value in _header_fields(session):
        if name == "PRs":
            links = " ".join(f'<a href="{_esc(u)}">{_esc(u)}</a>' for u in _pr_urls(session))
            out.append(f"<dt>{_esc(name)}</dt><dd>{links}</dd>")
        else:
            out.append(f"<dt>{_esc(name)}</dt><dd>{_esc(value)}</dd>")
    out.append("</dl>")
    note = problem_note(conv.problems)
    if note:
        out.append(f'<p class="note">{_esc(note)}</p>')
    out.append("<main>")
    if _empty(conv.items, tools, subagents):
        out.append(f'<p class="marker">{_esc(EMPTY_NOTE)}</p>')
    _html_items(out, conv.items, tools, subagents)
    if subagents and conv.unlinked:
        out.append("<h2>Subagents not linked to a call on this chain</h2>")
        for sub in conv.unlinked:
            _html_subagent(out, sub, tools)
    out += ["</main>", "</body>", "</html>"]
    return "\n".join(out) + "\n"


def _html_pre(text: str) -> str:
    shown, folded = fold(text)
    piece = f"<pre>{_esc(shown)}</pre>"
    if folded:
        piece += f'<p class="folded">{_esc(folded)}</p>'
    return piece


def _html_items(out: list[str], items: list[Item], tools: bool, subagents: bool) -> None:
    for item in items:
        if isinstance(item, Marker):
            out.append(f'<p class="marker">{_esc(item.text)} ({_esc(_stamp(item.timestamp))})</p>')
            continue
        if not _visible(item, tools, subagents):
            continue
        role = _role_label(item)
        out.append(f'<article class="msg {_esc(role)}" id="m-{_esc(item.uuid)}">')
        out.append(
            f'<header><span class="role">{_esc(role)}</span> · '
            f'<time datetime="{_esc(item.timestamp or "")}">'
            f"{_esc(_stamp(item.timestamp))}</time></header>"
        )
        for block in item.blocks:
            if block.kind == "text":
                if block.text.strip():
                    out.append(f'<div class="text">{_esc(block.text.strip())}</div>')
            elif block.kind == "tool_use":
                if tools:
                    out.append(
                        f'<details class="tool"><summary>Tool call: '
                        f"<code>{_esc(block.name)}</code></summary>"
                        f"{_html_pre(block.text)}</details>"
                    )
                if subagents:
                    for sub in block.subagents:
                        _html_subagent(out, sub, tools)
            elif block.kind == "tool_result" and tools:
                kind = "error" if block.is_error else "result"
                size = human_size(len(block.text.encode("utf-8", "surrogatepass")))
                out.append(
                    f'<details class="tool {kind}"><summary>Tool {kind} '
                    f"({_esc(size)})</summary>{_html_pre(block.text)}</details>"
                )
        out.append("</article>")


def _html_subagent(out: list[str], sub: Subagent, tools: bool) -> None:
    out.append(f'<section class="subagent"><h3>{_esc(_subagent_title(sub))}</h3>')
    note = problem_note(sub.problems)
    if note:
        out.append(f'<p class="note">{_esc(note)}</p>')
    _html_items(out, sub.items, tools, True)
    out.append("</section>")


def render(
    conv: Conversation,
    fmt: str,
    *,
    tools: bool = False,
    subagents: bool = False,
    color: bool = False,
) -> str:
    """One rendering entry point for ``show`` and ``export``."""
    if fmt == "json":
        return render_json(conv, subagents=subagents)
    if fmt == "md":
        return render_markdown(conv, tools=tools, subagents=subagents)
    if fmt == "html":
        return render_html(conv, tools=tools, subagents=subagents)
    return render_text(conv, tools=tools, subagents=subagents, color=color)
