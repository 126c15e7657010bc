"""A session's conversation, read from its transcript, and its renderers.

The transcript is the truth (the index only finds the file): the main chain is the SDK's
(:mod:`transcripts.chain`), so ``show --format json`` is what ``get_session_messages``
returns, and the text, Markdown and HTML views show the same messages. Subagent
transcripts are linked to the Task/Agent call that started them through the
``toolUseId`` of their ``.meta.json`` and shown at that call with ``subagents=True``.

Memory stays flat in the size of the transcript (a 64 MB session must not take a
gigabyte): :func:`build_conversation` keeps only the chain's *stubs* (links, no content;
:class:`~sessiondex.transcripts.chain.ChainScan`), and every renderer is a generator
(:func:`render_stream`) that reads each shown entry back from its line, turns it into
display items and writes them out before reading the next. The whole text is built only
by :func:`render` and the ``render_*`` helpers, for callers that want a string.

Everything taken from a transcript passes through a cleaning function before our own
styling is added (:mod:`sessiondex.render.terminal`): for a terminal every control and
bidi character is made visible; in files only ESC, C1 and bidi controls are.
"""

from __future__ import annotations

import html
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sessiondex.render.counts import counted
from sessiondex.render.sizes import human_size
from sessiondex.render.terminal import (
    json_escape_controls,
    neutralize,
    neutralize_escapes,
    on_one_line,
)
from sessiondex.transcripts.chain import (
    ChainScan,
    main_chain,
    scan_chain,
    subagent_chain,
    visible_messages,
)
from sessiondex.transcripts.discover import (
    TranscriptFile,
    iter_subagent_files,
    open_regular,
    read_subagent_meta,
    subagent_meta_path,
)
from sessiondex.transcripts.fork import SHORT_UUID, fork_candidates, short_handles
from sessiondex.transcripts.reader import (
    PROBLEM_BEING_WRITTEN,
    PROBLEM_INVALID_UTF8,
    PROBLEM_NEVER_FINISHED,
)
from sessiondex.transcripts.records import content_blocks, message_content, response_id

# Tool outputs and inputs longer than this are folded: the head is shown with the size.
FOLD_LINES = 12
FOLD_CHARS = 2000
FOLD_KEEP_LINES = 8
# Rendered output is handed on in pieces of about this many characters.
CHUNK_CHARS = 1 << 16

Entry = dict[str, Any]
Clean = Callable[[str], str]


def _keep(text: str) -> str:
    return text


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
    # The last entry merged into this message: what ``fork --up-to`` cuts after to
    # keep the whole message (a response is written one entry per content block).
    last_uuid: str = ""

    @property
    def fork_point(self) -> str:
        return self.last_uuid or self.uuid

    def has_text(self) -> bool:
        return any(b.kind == "text" and b.text.strip() for b in self.blocks)


@dataclass
class Marker:
    """A compact boundary: what came before it is not on the chain."""

    timestamp: str | None
    text: str
    # The boundary entry's UUID: where the marker is on the chain (the web's session
    # page reads a page from there), never shown.
    uuid: str = ""


Item = Message | Marker

COMPACTED = "Conversation compacted: earlier messages are not on the live chain"


class Thread:
    """One transcript's conversation (the main one or a subagent's), read lazily.

    ``chain`` holds stubs (see :class:`~sessiondex.transcripts.chain.ChainScan`);
    ``shown`` the stubs of the messages shown, in chain order; ``links`` the subagents
    started by a call of this thread (tool_use id → subagents), decided once by
    :func:`build_conversation`.
    """

    def __init__(self, scan: ChainScan | None, chain: list[Entry], shown: list[Entry]) -> None:
        self.scan = scan
        self.chain = chain
        self.shown = shown
        self.links: dict[str, list[Subagent]] = {}

    def call_ids(self) -> Iterator[str | None]:
        """The ids of the tool calls shown, in order (what subagents are linked to)."""
        for stub in self.shown:
            for block in _content_blocks(stub):
                if block.get("type") == "tool_use":
                    tool_id = block.get("id")
                    yield tool_id if isinstance(tool_id, str) else None

    def entries(self) -> Iterator[Entry]:
        """The full entries of the shown messages, one at a time (pass 2)."""
        if self.scan is None or not self.shown:
            return iter(())
        return self.scan.read(self.shown)

    def iter_items(self, clean: Clean = _keep) -> Iterator[Item]:
        """Chain entries → display items: messages (one per response, consecutive tool
        results together) and compact markers. An item is yielded once the next entry
        shows it is complete."""
        pending_links = dict(self.links)
        shown = {id(e) for e in self.shown}
        full = self.entries()
        previous: Item | None = None
        response_of: dict[str, str] = {}  # displayed assistant message uuid → response id
        for stub in self.chain:
            if stub.get("type") == "system" and stub.get("subtype") == "compact_boundary":
                if previous is not None:
                    yield previous
                previous = Marker(
                    _clean_opt(_str(stub.get("timestamp")), clean), COMPACTED, clean(stub["uuid"])
                )
                continue
            if id(stub) not in shown:
                continue
            entry = next(full)
            role = "user" if entry.get("type") == "user" else "assistant"
            blocks = _blocks(entry, clean)
            for block in blocks:
                if block.kind == "tool_use" and block.tool_id is not None:
                    block.subagents = list(pending_links.pop(block.tool_id, ()))
            if role == "user" and blocks and all(b.kind == "tool_result" for b in blocks):
                # Tool output is written as a user entry; it is no prompt, so show it as
                # "tool", one item for the results of consecutive parallel calls.
                if isinstance(previous, Message) and previous.role == "tool":
                    previous.blocks.extend(blocks)
                    previous.last_uuid = clean(entry["uuid"])
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
                previous.last_uuid = clean(entry["uuid"])
                continue
            message = Message(
                role,
                clean(entry["uuid"]),
                _clean_opt(_str(entry.get("timestamp")), clean),
                blocks,
                is_compact_summary=bool(entry.get("isCompactSummary")),
            )
            if rid:
                response_of[message.uuid] = rid
            if previous is not None:
                yield previous
            previous = message
        if previous is not None:
            yield previous


@dataclass
class Subagent:
    agent_id: str
    agent_type: str | None
    tool_use_id: str | None
    parent_agent_id: str | None
    path: Path
    thread: Thread
    problems: Counter[str]

    def iter_items(self, clean: Clean = _keep) -> Iterator[Item]:
        return self.thread.iter_items(clean)

    @property
    def items(self) -> list[Item]:
        return list(self.iter_items())

    @property
    def entries(self) -> list[Entry]:
        """The SDK's subagent chain (user + assistant entries), read whole."""
        return list(self.thread.entries())


@dataclass
class Conversation:
    session: dict[str, Any]  # the contract session object (metadata for the header)
    path: Path
    main: Thread
    problems: Counter[str]
    subagents: list[Subagent]  # every subagent file found
    unlinked: list[Subagent]  # those whose call is not on the chain
    archive: Path | None = None  # read from this archive (cleanup --archive)
    subagent: Subagent | None = None  # the one subagent shown, not the session's own thread

    def narrowed_to(self, path: str | Path) -> Conversation:
        """The conversation of one of this session's subagent transcripts, ``path``:
        its own thread in place of the main one, and the subagents it started (at
        any depth) as its subagents.

        The subagent is found among those read with the session, as the same file or
        by its place under ``<session>/subagents/`` (the team store's scratch copy of
        the session puts it elsewhere); one its listing did not reach (a folder that
        cannot be listed) is read from ``path`` itself. The subagents it started are
        linked from its own calls, whether or not it was reached from the main chain
        (a workflow's agent, one whose ``.meta.json`` is lost)."""
        wanted = Path(path)
        session_id = str(self.session.get("session_id") or "")
        place = _subagent_place(wanted, session_id)
        sub = next(
            (
                s
                for s in self.subagents
                if _same_file(s.path, wanted)
                or (place is not None and _subagent_place(s.path, session_id) == place)
            ),
            None,
        )
        if sub is None:
            agent = wanted.name[len("agent-") : -len(".jsonl")]
            sub = _load_subagent(wanted, agent)
        if not sub.thread.links:  # not reached from the main chain: link its calls now
            by_call: dict[str, list[Subagent]] = {}
            for other in self.subagents:
                if other is not sub and other.tool_use_id:
                    by_call.setdefault(other.tool_use_id, []).append(other)
            _link(sub.thread, by_call, set())
        started: list[Subagent] = []
        pending = [sub]
        while pending:  # depth first through the calls each one made
            for children in pending.pop().thread.links.values():
                fresh = [c for c in children if c is not sub and c not in started]
                started.extend(fresh)
                pending.extend(fresh)
        return Conversation(
            session=self.session,
            path=sub.path,
            main=sub.thread,
            problems=sub.problems,
            subagents=started,
            unlinked=[],
            archive=self.archive,
            subagent=sub,
        )

    @property
    def chain(self) -> list[Entry]:
        """main_chain(): every entry type, as stubs (links and ids, no content)."""
        return self.main.chain

    def handles(self) -> dict[str, str]:
        """Message UUID → the handle ``show --uuids`` prints for it: a prefix that
        ``fork --up-to`` takes for that message alone, among every entry of the file
        it would choose from (off the live chain too)."""
        stubs = self.main.scan.stubs if self.main.scan is not None else self.main.chain
        return short_handles(str(s.get("uuid")) for s in fork_candidates(stubs))

    @property
    def message_count(self) -> int:
        """How many SDK messages the conversation has (``len(messages)``, without
        reading them)."""
        return len(self.main.shown)

    def iter_items(self, clean: Clean = _keep) -> Iterator[Item]:
        return self.main.iter_items(clean)

    @property
    def items(self) -> list[Item]:
        return list(self.iter_items())

    def iter_messages(self) -> Iterator[Entry]:
        """The full entries ``get_session_messages`` returns, one at a time."""
        return self.main.entries()

    @property
    def messages(self) -> list[Entry]:
        return list(self.iter_messages())


# ----------------------------------------------------------------- building it
def _content_blocks(entry: Entry) -> list[dict[str, Any]]:
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
            elif isinstance(item, dict) and item.get("type") in ("image", "document"):
                parts.append(f"[{item['type']}]")
            elif isinstance(item, dict) and isinstance(item.get("url"), str):
                title = item.get("title")  # a web search's results
                parts.append(f"{title} {item['url']}" if isinstance(title, str) else item["url"])
        return "\n".join(parts)
    if content is None:
        return ""
    try:  # an object or a number: as JSON, as it was written, not as a Python repr
        return json_dumps(content, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return TOO_DEEP


# orjson reads up to 1,024 levels of nesting, which Python's json module then walks a
# frame or two a level: more than the default recursion limit leaves below a command's
# own frames. Raised only around such a value, and put back.
_DEEP_JSON_FRAMES = 3 * 1024
TOO_DEEP = "(nested too deeply to show)"


def json_dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` that also handles the deepest value a transcript line can hold."""
    try:
        return json.dumps(value, **options)
    except RecursionError:
        pass
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + _DEEP_JSON_FRAMES)
    try:
        return json.dumps(value, **options)
    finally:
        sys.setrecursionlimit(limit)


def _input_text(value: Any) -> str:
    try:
        return json_dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        try:
            return repr(value)
        except RecursionError:
            return TOO_DEEP
    except RecursionError:
        return TOO_DEEP


#: Calls: the client's tools, and the ones the API runs itself (web search, MCP).
TOOL_USE_KINDS = ("tool_use", "server_tool_use", "mcp_tool_use")


def _blocks(entry: Entry, clean: Clean = _keep) -> list[Block]:
    out: list[Block] = []
    for block in _content_blocks(entry):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            out.append(Block("text", clean(block["text"])))
        elif kind in ("image", "document"):  # an attached picture or PDF
            out.append(Block("text", f"[{kind}]"))
        elif kind in TOOL_USE_KINDS:
            name = block.get("name")
            tool_id = block.get("id")
            out.append(
                Block(
                    "tool_use",
                    clean(_input_text(block.get("input"))),
                    name=clean(name) if isinstance(name, str) else "tool",
                    tool_id=tool_id if isinstance(tool_id, str) else None,
                )
            )
        elif isinstance(kind, str) and kind.endswith("tool_result"):
            # tool_result, and the server tools' web_search_tool_result and the like
            tool_id = block.get("tool_use_id")
            out.append(
                Block(
                    "tool_result",
                    clean(_result_text(block.get("content"))),
                    tool_id=tool_id if isinstance(tool_id, str) else None,
                    is_error=block.get("is_error") is True,
                )
            )
    return out


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _clean_opt(value: str | None, clean: Clean) -> str | None:
    return None if value is None else clean(value)


def _subagent_place(path: Path, session_id: str) -> tuple[str, ...] | None:
    """Where a subagent transcript sits below ``<session_id>/subagents/`` (its parts),
    else None: the same subagent in a copy of the session elsewhere has the same place."""
    parts = path.parts
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] == session_id and parts[i + 1] == "subagents":
            return parts[i + 2 :]
    return None


def _same_file(a: Path, b: Path) -> bool:
    """One file, however the two paths spell it (a config dir reached through a link)."""
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _load_subagent(path: Path, agent_id: str) -> Subagent:
    try:
        scan: ChainScan | None = scan_chain(path)
    except OSError:
        scan = None
    meta = read_subagent_meta(path)
    return _subagent(path, agent_id, scan, meta)


def _subagent(path: Path, agent_id: str, scan: ChainScan | None, meta: dict[str, Any]) -> Subagent:
    chain = subagent_chain(scan.stubs) if scan is not None else []
    return Subagent(
        agent_id=agent_id,
        agent_type=_str(meta.get("agentType")),
        tool_use_id=_str(meta.get("toolUseId")),
        parent_agent_id=_str(meta.get("parentAgentId")),
        path=path,
        thread=Thread(scan, chain, chain),
        problems=scan.problems if scan is not None else Counter({"unreadable": 1}),
    )


#: How deep subagents started by subagents are shown inside their calls. Every renderer
#: recurses a few frames a level; deeper ones are listed after the conversation, as
#: subagents whose call is not on the chain are (Claude Code's own go one or two deep).
MAX_SUBAGENT_NESTING = 32


def _link(
    thread: Thread, by_call: dict[str, list[Subagent]], linked: set[int], depth: int = 0
) -> None:
    """Attach subagents to the first call (in chain order, depth first through the
    subagents already attached) whose id their ``toolUseId`` names."""
    if depth >= MAX_SUBAGENT_NESTING:
        return
    for tool_id in thread.call_ids():
        subs = by_call.pop(tool_id or "", [])
        if not subs:
            continue
        thread.links[tool_id or ""] = subs
        for sub in subs:
            linked.add(id(sub))
            _link(sub.thread, by_call, linked, depth + 1)


def _subagent_files(session: dict[str, Any]) -> list[TranscriptFile]:
    """The subagent transcripts :func:`build_conversation` reads with ``session``'s."""
    # A transcript read by path from no config dir (a backup) has no subagent folder
    # where Claude Code keeps one.
    if not (session.get("config_dir") and session.get("project_key")):
        return []
    root, key = Path(session["config_dir"]), session["project_key"]
    return list(iter_subagent_files(root, key, session["session_id"]))


def conversation_key(session: dict[str, Any]) -> tuple[tuple[object, ...], ...] | None:
    """What :func:`build_conversation` of ``session`` would read, as it is now: each
    file's path, inode, size and mtime (the transcript's, its subagents' and their
    ``.meta.json``). Equal keys and a conversation that :func:`reads_the_same` give
    the same conversation, so a caller may keep one built earlier (an append, a
    rewrite or a new subagent changes the key). Costs a few ``stat`` calls and a
    listing of the subagent folder, no reading; None when the transcript cannot be
    looked at (reading it will say why)."""

    def identity(path: Path) -> tuple[object, ...]:
        try:
            st = os.stat(path)
        except OSError:
            return (str(path),)
        return (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    main = identity(Path(session["file_path"]))
    if len(main) == 1:
        return None
    parts: list[tuple[object, ...]] = [main]
    for tf in _subagent_files(session):
        parts.append(identity(tf.path))
        parts.append(identity(subagent_meta_path(tf.path)))
    return tuple(parts)


def reads_the_same(conv: Conversation) -> bool:
    """Whether ``conv``'s files, read again unchanged, give the same conversation: not
    when one ends in a line still being written, which is counted as never finished
    once the file has been quiet a while (``transcripts.chain.quiet_since_written``)."""
    threads = [conv.problems, *(sub.problems for sub in conv.subagents)]
    return not any(problems[PROBLEM_BEING_WRITTEN] for problems in threads)


def build_conversation(session: dict[str, Any]) -> Conversation:
    """The conversation of a resolved session (its contract object); raises OSError when
    the transcript cannot be read. Reads the transcript once (pass 1: stubs only)."""
    path = Path(session["file_path"])
    scan = scan_chain(path)
    subagents = [_load_subagent(tf.path, tf.agent_id or "") for tf in _subagent_files(session)]
    return _assembled(session, path, scan, subagents)


def _assembled(
    session: dict[str, Any], path: Path, scan: ChainScan, subagents: list[Subagent]
) -> Conversation:
    """The conversation of the main transcript's ``scan`` and its ``subagents``: the
    live chain, and each subagent linked to its call."""
    chain = main_chain(scan.stubs)
    main = Thread(scan, chain, visible_messages(chain))
    by_call: dict[str, list[Subagent]] = {}
    for sub in subagents:
        if sub.tool_use_id:
            by_call.setdefault(sub.tool_use_id, []).append(sub)
    linked: set[int] = set()
    _link(main, by_call, linked)
    return Conversation(
        session=session,
        path=path,
        main=main,
        problems=scan.problems,
        subagents=subagents,
        unlinked=[s for s in subagents if id(s) not in linked],
    )


#: What :func:`grown_conversation` knows of a file read earlier: its ``files`` row as
#: the indexer would have written it (``indexer.ingest.classify_change``).
FileSeen = dict[str, Any]


def files_seen(conv: Conversation) -> dict[Path, FileSeen] | None:
    """What :func:`grown_conversation` needs to read ``conv``'s files on later, taken
    right after they were read: per file, its identity, the bytes read (up to a last
    ``\\n``) and their fingerprint (``indexer.parse.fingerprint``, its CRC the one taken
    while scanning). None when one of them cannot be read on (a scan that ended in a
    partial line, or that could not be read)."""
    from sessiondex.indexer.parse import fingerprint

    out: dict[Path, FileSeen] = {}
    for thread in (conv.main, *(sub.thread for sub in conv.subagents)):
        scan = thread.scan
        if scan is None or not scan.whole:
            return None
        try:
            with open_regular(scan.path) as stream:
                st = os.fstat(stream.fileno())
                if (st.st_dev, st.st_ino) != (scan.stat.st_dev, scan.stat.st_ino):
                    return None
                mark = fingerprint(stream, scan.end, known=(scan.end, scan.crc))
        except OSError:
            return None
        out[scan.path] = {
            "size": scan.end,  # what was read: a size since then is an append
            "mtime_ns": scan.stat.st_mtime_ns,
            "ctime_ns": scan.stat.st_ctime_ns,
            "inode": scan.stat.st_ino,
            "device": scan.stat.st_dev,
            "consumed": scan.end,
            "fingerprint": mark,
            "checked_ns": time.time_ns(),
        }
    return out


def grown_conversation(
    conv: Conversation,
    seen: dict[Path, FileSeen],
    key: tuple[tuple[object, ...], ...] | None,
    now: tuple[tuple[object, ...], ...] | None,
) -> Conversation | None:
    """``conv`` (read under :func:`conversation_key` ``key``, its files as ``seen``) as
    a fresh :func:`build_conversation` would give it now (under ``now``),
    reading only what was appended since: None unless every file only grew or is
    unchanged (the indexer's rule: ``indexer.ingest.classify_change``), the subagent
    files are the same ones, and their ``.meta.json`` are untouched. A rewrite, a new or
    lost subagent, a changed meta file, or a scan that ended in a partial line: None,
    read it afresh."""
    from sessiondex.indexer.ingest import classify_change
    from sessiondex.indexer.stats import GROWN, UNCHANGED

    if key is None or now is None or len(key) != len(now) or conv.subagent is not None:
        return None
    if conv.archive is not None:
        return None
    files = _subagent_files(conv.session)
    if [tf.path for tf in files] != [sub.path for sub in conv.subagents]:
        return None
    # The key: the transcript's identity, then each subagent's and its .meta.json's.
    if any(key[n][0] != now[n][0] for n in range(len(key))) or any(
        key[n] != now[n] for n in range(2, len(key), 2)
    ):
        return None

    def read_on(scan: ChainScan | None) -> ChainScan | None:
        row = seen.get(scan.path) if scan is not None else None
        if scan is None or row is None:
            return None
        try:
            with open_regular(scan.path) as stream:
                st = os.fstat(stream.fileno())
                tf = TranscriptFile(
                    scan.path,
                    Path(),
                    "",
                    "",
                    "",
                    size=st.st_size,
                    mtime_ns=st.st_mtime_ns,
                    inode=st.st_ino,
                    device=st.st_dev,
                    ctime_ns=st.st_ctime_ns,
                )
                change = classify_change(row, tf, stream)
            if change == UNCHANGED and st.st_size == scan.end:
                return scan
            return scan.grown() if change in (GROWN, UNCHANGED) else None
        except OSError:
            return None

    main = read_on(conv.main.scan)
    if main is None:
        return None
    subagents: list[Subagent] = []
    for sub in conv.subagents:
        scan = read_on(sub.thread.scan)
        if scan is None:
            return None
        meta = {
            "agentType": sub.agent_type,
            "toolUseId": sub.tool_use_id,
            "parentAgentId": sub.parent_agent_id,
        }
        # A new Subagent even for an unchanged file: linking writes to its thread.
        subagents.append(_subagent(sub.path, sub.agent_id, scan, meta))
    return _assembled(conv.session, conv.path, main, subagents)


@contextmanager
def archived_conversation(session: dict[str, Any]) -> Iterator[Conversation]:
    """The conversation of an archived session (its ``file_path`` is the archive),
    read by the same code as a live one: the archive's transcripts are unpacked into a
    private temporary config dir that lives as long as the ``with`` block (rendering is
    streamed from it) and is removed after. Raises ``OSError`` or ``ArchiveError``."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sessiondex-archived-") as tmp:
        yield conversation_from_archive(session, Path(tmp))


def conversation_from_archive(session: dict[str, Any], dest: Path) -> Conversation:
    """An archived session's conversation, its transcripts unpacked into ``dest`` (an
    empty dir that must outlive the reading: rendering is streamed from it). Raises
    ``OSError`` or ``ArchiveError``."""
    from sessiondex.transcripts.archive import extract_for_reading

    archive = Path(session["file_path"])
    main = extract_for_reading(archive, dest)
    conv = build_conversation({**session, "file_path": str(main), "config_dir": str(dest)})
    conv.session = session
    conv.archive = archive
    return conv


# ----------------------------------------------------------------- shared helpers
def _handle(handles: dict[str, str], uuid: str) -> str:
    return handles.get(uuid) or uuid[:SHORT_UUID]


def problem_note(problems: Counter[str]) -> str | None:
    """One line about the lines that were repaired or skipped, or None. The unfinished
    last line of a file being written is said apart: it is not a bad line (``index``
    does not count it either; transcripts/reader.py)."""
    parts = []
    if problems.get(PROBLEM_INVALID_UTF8):
        parts.append(
            f"{counted(problems[PROBLEM_INVALID_UTF8], 'line')} with invalid UTF-8 "
            "(bad bytes replaced with U+FFFD)"
        )
    other = {
        k: v
        for k, v in problems.items()
        if k not in (PROBLEM_INVALID_UTF8, PROBLEM_BEING_WRITTEN, PROBLEM_NEVER_FINISHED) and v
    }
    if other:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(other.items()))
        parts.append(f"{counted(sum(other.values()), 'unreadable line')} skipped ({kinds})")
    if problems.get(PROBLEM_BEING_WRITTEN):
        parts.append("the last line is still being written (not shown)")
    if problems.get(PROBLEM_NEVER_FINISHED):
        parts.append("the last line was never finished: a write stopped mid-line (not shown)")
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
    return head, f"… folded: {counted(len(lines), 'line')}, {human_size(size)}"


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


def _shows(item: Item, tools: bool, subagents: bool) -> bool:
    return isinstance(item, Marker) or _visible(item, tools, subagents)


class Turns:
    """Numbers a thread's display items as *turns*, the unit a reader pages by, while
    they stream past.

    A turn is an item that shows something: a compact marker, or a message with text
    (with ``tools``, a tool call or result too). MCP's ``read_session`` pages by these
    turns (``offset``/``limit``), the web's session page shows a fixed number of them
    per page, so "turn 400" is the same message in both. Display merges several chain
    entries into one item (a response written one entry per block; parallel tool
    results), and an item that shows nothing (thinking alone) joins the turn before it;
    a search hit or a fork point names an *entry*, so :meth:`where` maps every entry on
    the chain to the turn that shows it."""

    def __init__(self, tools: bool, count: int = 0, first: dict[str, int] | None = None) -> None:
        """``count`` and ``first``: go on numbering where a walk that stopped at the
        start of turn ``count`` was (``first``: its :attr:`first`)."""
        self.tools = tools
        self.count = count
        # the first uuid of each display item → its turn
        self.first: dict[str, int] = {} if first is None else first

    def add(self, item: Item) -> int | None:
        """``item``'s turn number, or None when it shows nothing (its entries then
        belong to the turn before it)."""
        turn = None
        if _shows(item, self.tools, False):
            turn = self.count
            self.count += 1
        if isinstance(item, Message) and self.count:
            self.first[item.uuid] = self.count - 1
        return turn

    def where(self, chain: Iterable[Entry]) -> dict[str, int]:
        """Every entry UUID of ``chain`` (the thread's, in order) → the turn showing it:
        the turn of the item it starts, else of the item before it (turn 0 for an
        entry before the first turn)."""
        out: dict[str, int] = {}
        current = 0
        for entry in chain:
            uuid = entry.get("uuid")
            if not isinstance(uuid, str):
                continue
            current = self.first.get(uuid, current)
            out[uuid] = current
        return out


EMPTY_NOTE = "(no messages on the conversation chain)"


def _role_label(message: Message) -> str:
    return "summary" if message.is_compact_summary else message.role


def _pr_urls(session: dict[str, Any], clean: Clean = _keep) -> list[str]:
    return [clean(str(p["url"])) for p in session.get("pr_links") or [] if p.get("url")]


def _title(session: dict[str, Any], clean: Clean) -> str:
    return on_one_line(clean(str(session.get("title") or session.get("session_id"))))


def _header_fields(conv: Conversation, clean: Clean = _keep) -> list[tuple[str, str]]:
    """(name, value) pairs for the header, values cleaned (they come from transcripts)
    and on one line: a newline in a cwd, branch or tag must not print a header line of
    its own ("branch: x⏎FAKE: line")."""
    return [(name, on_one_line(value)) for name, value in _header_values(conv, clean)]


def _header_values(conv: Conversation, clean: Clean) -> list[tuple[str, str]]:
    session = conv.session
    fields = [("session", clean(str(session.get("session_id") or "")))]
    if conv.subagent is not None:
        kind = f" ({clean(conv.subagent.agent_type)})" if conv.subagent.agent_type else ""
        fields.append(("subagent", f"{clean(conv.subagent.agent_id)}{kind}"))
    if conv.archive is not None:
        restore = f"sessiondex restore {session.get('session_id')}"
        fields.append(("archived", clean(f"{conv.archive} ({restore} to resume it)")))
    if session.get("cwd"):
        fields.append(("directory", clean(str(session["cwd"]))))
    branches = session.get("branches") or (
        [session["git_branch"]] if session.get("git_branch") else []
    )
    if branches:
        fields.append(("branch", clean(", ".join(str(b) for b in branches))))
    prs = _pr_urls(session, clean)
    if prs:
        fields.append(("PRs", " ".join(prs)))
    if session.get("tag"):
        fields.append(("tag", clean(str(session["tag"]))))
    dates = " → ".join(
        _stamp(clean(str(d)))
        for d in (session.get("created_at"), session.get("last_activity"))
        if d
    )
    if dates:
        fields.append(("dates", dates))
    return fields


def _subagent_title(sub: Subagent, clean: Clean = _keep) -> str:
    kind = f" ({clean(sub.agent_type)})" if sub.agent_type else ""
    return f"subagent {clean(sub.agent_id)}{kind}"


def _rstripped(lines: Iterable[str]) -> Iterator[str]:
    """The physical lines of ``"\\n".join(lines).rstrip("\\n")``, streamed: trailing empty
    lines are held back until something follows them (so never emitted at the end)."""
    blanks = 0
    produced = False
    for chunk in lines:
        for line in chunk.split("\n"):
            if not line:
                blanks += 1
                continue
            if blanks:
                yield from [""] * blanks
                blanks = 0
            produced = True
            yield line
    if not produced:
        yield ""


def _batched(pieces: Iterable[str]) -> Iterator[str]:
    """Hand small pieces on in chunks of about :data:`CHUNK_CHARS` (fewer writes)."""
    buffer: list[str] = []
    size = 0
    for piece in pieces:
        buffer.append(piece)
        size += len(piece)
        if size >= CHUNK_CHARS:
            yield "".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.split("\n"))


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


def _text_lines(
    conv: Conversation,
    style: _Style,
    tools: bool,
    subagents: bool,
    clean: Clean,
    uuids: bool = False,
) -> Iterator[str]:
    session = conv.session
    handles = conv.handles() if uuids else None
    yield style(_title(session, clean), bold=True)
    for name, value in _header_fields(conv, clean):
        yield style(f"{name}: ", dim=True) + value
    note = problem_note(conv.problems)
    if note:
        yield style(f"note: {note}", fg="yellow")
    yield ""
    shown = False
    for item in conv.iter_items(clean):
        if _shows(item, tools, subagents):
            shown = True
            yield from _text_item(item, style, tools, subagents, "", clean, handles)
    if not shown:
        # Where the items would have been: nothing was written in their place.
        yield style(EMPTY_NOTE, dim=True)
        yield ""
    if subagents and conv.unlinked:
        yield style("Subagents not linked to a call on this chain", bold=True)
        yield ""
        for sub in conv.unlinked:
            yield from _text_subagent(sub, style, tools, "", clean)
            yield ""


def _text_item(
    item: Item,
    style: _Style,
    tools: bool,
    subagents: bool,
    indent: str,
    clean: Clean,
    handles: dict[str, str] | None = None,
) -> Iterator[str]:
    if isinstance(item, Marker):
        yield indent + style(f"── {item.text} ({_stamp(item.timestamp)}) ──", fg="yellow")
        yield ""
        return
    if not _visible(item, tools, subagents):
        return
    role = _role_label(item)
    yield (
        indent
        + style(role, fg=_ROLE_COLORS.get(role), bold=True)
        + style(f"  {_stamp(item.timestamp)}", dim=True)
        + (
            style(f"  {_handle(handles, item.fork_point)}", fg="yellow")
            if handles is not None
            else ""
        )
    )
    body = indent + "  "
    for block in item.blocks:
        if block.kind == "text":
            if block.text.strip():
                yield _indent(block.text.strip("\n"), body)
        elif block.kind == "tool_use":
            if tools:
                compact = _one_line(block.text)
                if compact is not None:
                    yield body + style(f"→ {block.name} ", fg="blue") + compact
                else:
                    shown, folded = fold(block.text)
                    yield body + style(f"→ {block.name}", fg="blue")
                    yield _indent(shown, body + "    ")
                    if folded:
                        yield body + "    " + style(folded, dim=True)
            if subagents:
                for sub in block.subagents:
                    yield from _text_subagent(sub, style, tools, body, clean)
        elif block.kind == "tool_result" and tools:
            shown, folded = fold(block.text)
            label = "← error" if block.is_error else "← result"
            yield body + style(label, fg="red" if block.is_error else "blue")
            if shown.strip("\n"):
                yield _indent(shown.strip("\n"), body + "    ")
            if folded:
                yield body + "    " + style(folded, dim=True)
    yield ""


def _one_line(input_json: str) -> str | None:
    """A tool input as one short line of JSON when it fits, else None."""
    try:
        value = json.loads(input_json)
    except (ValueError, RecursionError):
        return None
    text = json_dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 and "\n" not in text else None


def _text_subagent(
    sub: Subagent, style: _Style, tools: bool, indent: str, clean: Clean
) -> Iterator[str]:
    title = _subagent_title(sub, clean)
    yield indent + style(f"┌ {title}", fg="magenta", bold=True)
    note = problem_note(sub.problems)
    if note:
        yield indent + "│ " + style(f"note: {note}", fg="yellow")
    inner = (
        line
        for item in sub.iter_items(clean)
        for line in _text_item(item, style, tools, True, "", clean)
    )
    for line in _rstripped(inner):
        yield indent + "│ " + line if line else indent + "│"
    yield indent + style(f"└ end of {title}", fg="magenta")


def iter_text(
    conv: Conversation,
    *,
    tools: bool = False,
    subagents: bool = False,
    color: bool = False,
    clean: Clean = neutralize,
    uuids: bool = False,
) -> Iterator[str]:
    """The text view, piece by piece (every piece ends a line). ``uuids`` shows each
    message's short UUID (:meth:`Conversation.handles`), the handle ``fork --up-to`` takes."""
    lines = _text_lines(conv, _Style(color), tools, subagents, clean, uuids)
    return _batched(line + "\n" for line in _rstripped(lines))


def render_text(
    conv: Conversation, *, tools: bool = False, subagents: bool = False, color: bool = False
) -> str:
    return "".join(iter_text(conv, tools=tools, subagents=subagents, color=color))


# ----------------------------------------------------------------- markdown
# A Markdown export is read in renderers that pass raw HTML through (pandoc, mkdocs,
# Python-Markdown) as well as in sanitizing ones (GitHub). Nothing a transcript holds may
# become live HTML or break out of its place in the document there:
# * values on one line (title, tag, subagent names) have their Markdown and HTML
#   punctuation backslash-escaped, and code spans (directory, branch, tool names)
#   are delimited by a backtick run longer than any inside them;
# * a user's prompt, tool input and tool output are fenced blocks (a fence longer than
#   any backtick run inside): shown as typed, never read as Markdown, and a pasted
#   unclosed fence or a line like "## Assistant · …" cannot end or forge anything;
# * the assistant's Markdown (and a compaction summary, written by the model) is kept,
#   with raw HTML made text (a "<" that would open a tag, comment or declaration
#   outside code is escaped), attribute syntax made text (every "{" outside code is
#   escaped, and a fence's info string loses its braces: pandoc's `{=html}` raw blocks,
#   `[x]{onclick=…}` spans and `{…}` attributes, Python-Markdown's `{: …}`), and a
#   fence it leaves open closed at its end, so one message cannot swallow the rest.
#   Indented code is code: kept as written.
_MD_PUNCTUATION = frozenset("\\`*_[]<>&#|!~")


def _longest_run(text: str, char: str) -> int:
    """The longest run of ``char`` in ``text`` (0: none), found by the regex engine: a
    loop over every character took seconds for a transcript of long lines."""
    if char not in text:
        return 0
    return max(map(len, re.findall(re.escape(char) + "+", text)))


def _fence(text: str, lang: str = "") -> str:
    """A code fence longer than any backtick run inside ``text``."""
    ticks = "`" * max(3, _longest_run(text, "`") + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def _code_span(text: str) -> str:
    """Inline code showing ``text`` as it is: delimited by a backtick run longer than
    any inside it, padded with a space where CommonMark would otherwise eat one or
    join a backtick to the delimiter."""
    ticks = "`" * (_longest_run(text, "`") + 1)
    pad = text.startswith("`") or text.endswith("`") or (text[:1] == text[-1:] == " ")
    return f"{ticks} {text} {ticks}" if pad else f"{ticks}{text}{ticks}"


def _md_text(text: str) -> str:
    """One line of transcript text as Markdown that shows it literally."""
    return "".join("\\" + c if c in _MD_PUNCTUATION else c for c in text)


def _opening_fence(line: str) -> tuple[str, int, int] | None:
    """``(char, length, indent)`` if ``line`` opens (or closes) a code fence, at any
    indentation: inside a list item a fence sits as deep as the item's content."""
    stripped = line.lstrip(" ")
    if stripped[:3] not in ("```", "~~~"):
        return None
    char = stripped[0]
    length = len(stripped) - len(stripped.lstrip(char))
    if char == "`" and "`" in stripped[length:]:
        return None  # a backtick fence's info string holds no backtick
    return char, length, len(line) - len(stripped)


_LIST_ITEM = re.compile(r" {0,3}(?:[-+*]|\d{1,9}[.)])(?: |$)")


# Schemes a link or image of the assistant's Markdown keeps: the web's and mail. Any
# other (javascript:, vbscript:, data:…) would be live in pandoc's and Python-Markdown's
# HTML, which check no URL (markdown-it drops them; the web view renders with it).
_KEPT_SCHEME = re.compile(r"(?:https?|mailto|ftp)\Z", re.IGNORECASE)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
# Where a destination's scheme has ended for sure (":" included in the head).
_DESTINATION_HEAD_END = re.compile(r"[:()<>\[\]\"'\s/?]")


def _runs_script(line: str, start: int) -> bool:
    """Whether the link destination that begins at ``line[start]`` (after ``](``, or a
    reference definition's ``]:``) may name a scheme not kept, read as a renderer and a
    browser read it: ``<…>`` unwrapped, character references and backslash escapes
    decoded, ASCII spaces and controls dropped (a browser drops a tab written inside
    ``javascript:``). Only its head is read, up to a character no scheme or reference
    holds, so a line of many links costs once. A destination on the next line is not
    seen here: it counts as one."""
    while start < len(line) and line[start] in " \t":
        start += 1
    if start == len(line):
        return True
    if line[start] == "<":
        start += 1
    end = _DESTINATION_HEAD_END.search(line, start)
    head = line[start : len(line) if end is None else end.end()]
    head = re.sub(r"[\x00-\x20\\]", "", html.unescape(head))
    scheme = _SCHEME.match(head)
    return scheme is not None and not _KEPT_SCHEME.match(scheme.group(1))


def _escapes_before(line: str, i: int) -> int:
    """How many backslashes stand right before ``line[i]``."""
    j = i
    while j > 0 and line[j - 1] == "\\":
        j -= 1
    return i - j


# What :func:`_inert_line` looks at: a backtick (inline code), "<", "{" and "]".
_INERT_SPECIAL = re.compile(r"[`<{\]]")
_BACKTICKS = re.compile("`+")


def _inert_line(line: str) -> str:
    """``line`` with every ``<`` that could open raw HTML (a tag, comment, declaration
    or processing instruction), every ``{`` that could open attributes, and every ``]``
    that would end a link or reference definition whose destination runs script
    (:func:`_runs_script`), outside inline code, backslash-escaped (CommonMark shows
    ``\\{`` as ``{``; ``[x\\](javascript:…)`` is text)."""
    out: list[str] = []
    i = 0
    while i < len(line):
        # Only these characters change anything: the text up to the next one is copied
        # as it is (a loop over every character took seconds on long lines).
        special = _INERT_SPECIAL.search(line, i)
        if special is None:
            out.append(line[i:])
            break
        if special.start() > i:
            out.append(line[i : special.start()])
            i = special.start()
        c = line[i]
        if c == "`":
            ticks = _BACKTICKS.match(line, i)
            run = ticks.end() - i if ticks else 1
            close = line.find("`" * run, i + run)
            while close != -1 and line[close + run : close + run + 1] == "`":
                close = line.find("`" * run, close + run + 1)
            if close != -1:  # a code span: literal already
                out.append(line[i : close + run])
                i = close + run
                continue
            out.append(line[i : i + run])
            i += run
            continue
        if (
            c == "<"
            and line[i + 1 : i + 2].isascii()
            and (line[i + 1 : i + 2].isalpha() or line[i + 1 : i + 2] in ("/", "!", "?"))
        ):
            out.append("\\<")
        elif c == "{":
            out.append("\\{")
        elif (
            c == "]"
            and line[i + 1 : i + 2] in ("(", ":")
            and _escapes_before(line, i) % 2 == 0  # this "]" is not escaped
            and _runs_script(line, i + 2)
        ):
            out.append("\\]")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _inert_fence(line: str, found: tuple[str, int, int]) -> str:
    """An opening fence line whose info string is at most a plain language name:
    ``{=html}`` makes a raw HTML block in pandoc and ``{.js onclick=…}`` an attribute,
    and an info string pandoc cannot read as a fence's makes it a paragraph, whose
    lines (left as written, being code to us) would be read as Markdown and HTML.
    ``{=html}`` becomes ``html``, ``{.js onclick=…}`` ``js``."""
    char, length, indent = found
    head = indent + length
    words = line[head:].split()
    language = re.sub(r"[^A-Za-z0-9_+#-]", "", words[0]) if words else ""
    return line[:head] + language


def _md_prose(text: str) -> str:
    """The assistant's Markdown, kept, made safe to embed (see above).

    A fence is followed as CommonMark does, near enough: opened at any indentation,
    closed by a fence line of its character at least as long, and, when it sits in a
    list item (indented, or right after an item), ended without a closing line by a
    line less indented than itself (its item ended). A fence still open at the end is
    closed only when it is not in a list item; one in an item ends with the item at the
    next heading, and a closing line there would open a new fence instead."""
    out: list[str] = []
    fence: tuple[str, int, int] | None = None
    in_item = False  # the open fence belongs to a list item
    previous = ""  # the last non-blank line outside a fence
    blank_before = True  # the line before this one was blank (or there was none)
    indented_code = False  # inside an indented code block
    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        if indented_code:
            if not line.strip() or indent >= 4:
                out.append(line)  # code: shown as written
                blank_before = not line.strip()
                continue
            indented_code = False
        elif (
            fence is None
            and line.strip()
            and indent >= 4
            and blank_before
            and not (_LIST_ITEM.match(previous) or previous.startswith(" "))
        ):
            # After a blank line, outside any list item: an indented code block
            # (CommonMark), whose "<" and "{" are literal, escaped or not.
            indented_code = True
            out.append(line)
            previous, blank_before = line, False
            continue
        if fence is not None:
            indent = len(line) - len(line.lstrip(" "))
            if in_item and line.strip() and indent < fence[2]:
                fence = None  # its list item ended, and the block with it
            else:
                out.append(line)
                stripped = line.strip()
                if stripped and set(stripped) == {fence[0]} and len(stripped) >= fence[1]:
                    fence = None
                continue
        found = _opening_fence(line)
        if found is not None:
            fence = found
            in_item = found[2] > 3 or (
                found[2] > 0 and (bool(_LIST_ITEM.match(previous)) or previous.startswith(" "))
            )
            out.append(_inert_fence(line, found))
            continue
        out.append(_inert_line(line))
        blank_before = not line.strip()
        if line.strip():
            previous = line
    if fence is not None and not in_item:
        out.append(fence[0] * fence[1])
    return "\n".join(out)


def _md_lines(
    conv: Conversation, tools: bool, subagents: bool, clean: Clean, uuids: bool = False
) -> Iterator[str]:
    session = conv.session
    handles = conv.handles() if uuids else None
    yield f"# {_md_text(_title(session, clean))}"
    yield ""
    for name, value in _header_fields(conv, clean):
        if name == "PRs":
            value = on_one_line(", ".join(f"<{u}>" for u in _pr_urls(session, clean)))
        elif name in ("session", "directory", "branch"):
            value = _code_span(value)
        else:
            value = _md_text(value)
        yield f"- **{name}**: {value}"
    note = problem_note(conv.problems)
    if note:
        yield ""
        yield f"> **note:** {note}"
    yield from ("", "---", "")
    shown = False
    for item in conv.iter_items(clean):
        if _shows(item, tools, subagents):
            shown = True
            yield from _md_item(item, tools, subagents, 2, clean, handles)
    if not shown:
        yield f"*{EMPTY_NOTE}*"
        yield ""
    if subagents and conv.unlinked:
        yield "## Subagents not linked to a call on this chain"
        yield ""
        for sub in conv.unlinked:
            yield from _md_subagent(sub, tools, 3, clean)


def _md_item(
    item: Item,
    tools: bool,
    subagents: bool,
    level: int,
    clean: Clean,
    handles: dict[str, str] | None = None,
) -> Iterator[str]:
    hashes = "#" * min(level, 6)
    if isinstance(item, Marker):
        yield f"> *{item.text}* ({_stamp(item.timestamp)})"
        yield ""
        return
    if not _visible(item, tools, subagents):
        return
    handle = f" · {_code_span(_handle(handles, item.fork_point))}" if handles is not None else ""
    stamp = _md_text(_stamp(item.timestamp))
    yield f"{hashes} {_role_label(item).capitalize()} · {stamp}{handle}"
    yield ""
    typed = item.role == "user" and not item.is_compact_summary
    for block in item.blocks:
        if block.kind == "text":
            if block.text.strip():
                text = block.text.strip("\n")
                yield _fence(text, "text") if typed else _md_prose(text)
                yield ""
        elif block.kind == "tool_use":
            if tools:
                shown, folded = fold(block.text)
                call = f"**Tool call:** {_code_span(block.name or '?')}"
                yield from (call, "", _fence(shown, "json"), "")
                if folded:
                    yield f"*{folded}*"
                    yield ""
            if subagents:
                for sub in block.subagents:
                    yield from _md_subagent(sub, tools, level + 1, clean)
        elif block.kind == "tool_result" and tools:
            shown, folded = fold(block.text)
            label = "Tool error" if block.is_error else "Tool result"
            yield from (f"**{label}:**", "", _fence(shown.strip("\n")), "")
            if folded:
                yield f"*{folded}*"
                yield ""


def _md_subagent(sub: Subagent, tools: bool, level: int, clean: Clean) -> Iterator[str]:
    def inner() -> Iterator[str]:
        yield f"**{_md_text(_subagent_title(sub, clean))}**"
        yield ""
        note = problem_note(sub.problems)
        if note:
            yield f"**note:** {note}"
            yield ""
        for item in sub.iter_items(clean):
            yield from _md_item(item, tools, True, level, clean)

    for line in _rstripped(inner()):
        yield "> " + line if line else ">"
    yield ""


def iter_markdown(
    conv: Conversation,
    *,
    tools: bool = False,
    subagents: bool = False,
    clean: Clean = neutralize_escapes,
    uuids: bool = False,
) -> Iterator[str]:
    """The Markdown view, piece by piece (``uuids``: as :func:`iter_text`)."""
    lines = _md_lines(conv, tools, subagents, clean, uuids)
    return _batched(line + "\n" for line in _rstripped(lines))


def render_markdown(conv: Conversation, *, tools: bool = False, subagents: bool = False) -> str:
    return "".join(iter_markdown(conv, tools=tools, subagents=subagents))


# ----------------------------------------------------------------- json (SDK shape)
def iter_session_messages(conv: Conversation, *, subagents: bool = False) -> Iterator[Entry]:
    """SDK ``SessionMessage`` objects, one at a time; with ``subagents``, each subagent's
    messages (with ``parent_tool_use_id``/``parent_agent_id`` as the SDK sets them)
    follow the message that made its call, and the rest come last."""
    by_call: dict[str, list[Subagent]] = {}
    if subagents:
        for sub in conv.subagents:
            if sub.tool_use_id:
                by_call.setdefault(sub.tool_use_id, []).append(sub)
    emitted: set[int] = set()
    yield from _json_entries(conv.iter_messages(), conv.subagent, by_call, emitted)
    if not subagents:
        return
    # The rest: those whose call is not on the chain (a rewound branch). One started by
    # another of them follows its parent's call there, so parents go first; whatever is
    # left then (a call naming itself, a cycle) is listed once, on its own.
    rest = [sub for sub in conv.subagents if id(sub) not in emitted]
    calls_in_rest = {call for sub in rest for call in sub.thread.call_ids() if call}
    for pass_ in ("parents", "left"):
        for sub in rest:
            if id(sub) in emitted or (pass_ == "parents" and sub.tool_use_id in calls_in_rest):
                continue
            emitted.add(id(sub))
            yield from _json_entries(sub.thread.entries(), sub, by_call, emitted)


def session_messages(conv: Conversation, *, subagents: bool = False) -> list[Entry]:
    return list(iter_session_messages(conv, subagents=subagents))


def _json_entries(
    entries: Iterable[Entry],
    sub: Subagent | None,
    by_call: dict[str, list[Subagent]],
    emitted: set[int],
) -> Iterator[Entry]:
    for entry in entries:
        yield {
            "type": "user" if entry.get("type") == "user" else "assistant",
            "uuid": entry.get("uuid", ""),
            "session_id": entry.get("sessionId", ""),
            "message": entry.get("message"),
            "parent_tool_use_id": sub.tool_use_id if sub else None,
            "parent_agent_id": sub.parent_agent_id if sub else None,
        }
        for block in _content_blocks(entry):
            if block.get("type") == "tool_use":
                for child in by_call.pop(str(block.get("id")), []):
                    if id(child) in emitted:
                        continue  # listed already (a call that names its own agent)
                    emitted.add(id(child))
                    yield from _json_entries(child.thread.entries(), child, by_call, emitted)


def _json_item(message: Entry) -> str:
    """One array element as ``orjson``'s 2-space indented array would print it."""
    try:
        data = orjson.dumps(message, option=orjson.OPT_INDENT_2)
    except TypeError:  # lone surrogates from a "\ud800" escape, or over 255 levels deep
        data = json_dumps(message, indent=2).encode()
    # JSON strings hold no raw newline, so every "\n" here is the layout's.
    return "  " + json_escape_controls(data).decode().replace("\n", "\n  ")


def iter_json(conv: Conversation, *, subagents: bool = False) -> Iterator[str]:
    """The SDK messages as one indented JSON array, element by element."""

    def pieces() -> Iterator[str]:
        first = True
        for message in iter_session_messages(conv, subagents=subagents):
            yield ("[\n" if first else ",\n") + _json_item(message)
            first = False
        yield "[]\n" if first else "\n]\n"

    return _batched(pieces())


def render_json(conv: Conversation, *, subagents: bool = False) -> str:
    return "".join(iter_json(conv, subagents=subagents))


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


def _html_lines(conv: Conversation, tools: bool, subagents: bool, clean: Clean) -> Iterator[str]:
    session = conv.session
    title = _title(session, clean)
    yield from (
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
    )
    for name, value in _header_fields(conv, clean):
        if name == "PRs":
            links = " ".join(f'<a href="{_esc(u)}">{_esc(u)}</a>' for u in _pr_urls(session, clean))
            yield f"<dt>{_esc(name)}</dt><dd>{links}</dd>"
        else:
            yield f"<dt>{_esc(name)}</dt><dd>{_esc(value)}</dd>"
    yield "</dl>"
    note = problem_note(conv.problems)
    if note:
        yield f'<p class="note">{_esc(note)}</p>'
    yield "<main>"
    shown = False
    for item in conv.iter_items(clean):
        if _shows(item, tools, subagents):
            shown = True
            yield from _html_item(item, tools, subagents, clean)
    if not shown:
        yield f'<p class="marker">{_esc(EMPTY_NOTE)}</p>'
    if subagents and conv.unlinked:
        yield "<h2>Subagents not linked to a call on this chain</h2>"
        for sub in conv.unlinked:
            yield from _html_subagent(sub, tools, clean)
    yield from ("</main>", "</body>", "</html>")


def _html_pre(text: str) -> str:
    shown, folded = fold(text)
    piece = f"<pre>{_esc(shown)}</pre>"
    if folded:
        piece += f'<p class="folded">{_esc(folded)}</p>'
    return piece


def _html_item(item: Item, tools: bool, subagents: bool, clean: Clean) -> Iterator[str]:
    if isinstance(item, Marker):
        yield f'<p class="marker">{_esc(item.text)} ({_esc(_stamp(item.timestamp))})</p>'
        return
    if not _visible(item, tools, subagents):
        return
    role = _role_label(item)
    yield f'<article class="msg {_esc(role)}" id="m-{_esc(item.uuid)}">'
    yield (
        f'<header><span class="role">{_esc(role)}</span> · '
        f'<time datetime="{_esc(item.timestamp or "")}">'
        f"{_esc(_stamp(item.timestamp))}</time></header>"
    )
    for block in item.blocks:
        if block.kind == "text":
            if block.text.strip():
                yield f'<div class="text">{_esc(block.text.strip())}</div>'
        elif block.kind == "tool_use":
            if tools:
                yield (
                    f'<details class="tool"><summary>Tool call: '
                    f"<code>{_esc(block.name)}</code></summary>"
                    f"{_html_pre(block.text)}</details>"
                )
            if subagents:
                for sub in block.subagents:
                    yield from _html_subagent(sub, tools, clean)
        elif block.kind == "tool_result" and tools:
            kind = "error" if block.is_error else "result"
            size = human_size(len(block.text.encode("utf-8", "surrogatepass")))
            yield (
                f'<details class="tool {kind}"><summary>Tool {kind} '
                f"({_esc(size)})</summary>{_html_pre(block.text)}</details>"
            )
    yield "</article>"


def _html_subagent(sub: Subagent, tools: bool, clean: Clean) -> Iterator[str]:
    yield f'<section class="subagent"><h3>{_esc(_subagent_title(sub, clean))}</h3>'
    note = problem_note(sub.problems)
    if note:
        yield f'<p class="note">{_esc(note)}</p>'
    for item in sub.iter_items(clean):
        yield from _html_item(item, tools, True, clean)
    yield "</section>"


def iter_html(
    conv: Conversation,
    *,
    tools: bool = False,
    subagents: bool = False,
    clean: Clean = neutralize_escapes,
) -> Iterator[str]:
    """One self-contained HTML page, piece by piece."""
    return _batched(line + "\n" for line in _html_lines(conv, tools, subagents, clean))


def render_html(conv: Conversation, *, tools: bool = False, subagents: bool = False) -> str:
    return "".join(iter_html(conv, tools=tools, subagents=subagents))


#: What :func:`render_stream` writes.
FORMATS = ("text", "md", "html", "json")


def render_stream(
    conv: Conversation,
    fmt: str,
    *,
    tools: bool = False,
    subagents: bool = False,
    color: bool = False,
    terminal: bool | None = None,
    uuids: bool = False,
) -> Iterator[str]:
    """The one rendering entry point of ``show`` and ``export``: the output in pieces,
    each transcript entry read only when its turn comes. ``uuids`` adds each message's
    short UUID to the text and Markdown views (JSON has the full ones).

    ``terminal`` says the text is for a screen (``show``): every control and bidi
    character from the transcript is made visible. Otherwise (files) only ESC, C1 and
    bidi controls are. The default: text is for a screen, Markdown and HTML for files.
    JSON keeps every string exact. Raises ``OSError`` if the transcript is replaced
    while being read.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    if fmt == "json":
        return iter_json(conv, subagents=subagents)
    if terminal is None:
        terminal = fmt == "text"
    clean = neutralize if terminal else neutralize_escapes
    if fmt == "md":
        return iter_markdown(conv, tools=tools, subagents=subagents, clean=clean, uuids=uuids)
    if fmt == "html":
        return iter_html(conv, tools=tools, subagents=subagents, clean=clean)
    return iter_text(conv, tools=tools, subagents=subagents, color=color, clean=clean, uuids=uuids)


def render(
    conv: Conversation,
    fmt: str,
    *,
    tools: bool = False,
    subagents: bool = False,
    color: bool = False,
    terminal: bool | None = None,
) -> str:
    """:func:`render_stream` as one string."""
    return "".join(
        render_stream(conv, fmt, tools=tools, subagents=subagents, color=color, terminal=terminal)
    )
