"""The conversation chain of a transcript, by the official SDK's rules.

docs/sdk-compat.md#conversation-chain: a transcript is a tree of entries linked by
``parentUuid``; rewinds and edits leave dead branches behind, and the CLI writes one
assistant entry per content block, so a turn with parallel tool calls forks too. The
conversation is the path from the root to the newest main-thread leaf, with the parallel
calls and their results put back. ``show``, ``export`` and the SDK-compatible message
reader all use these functions so they agree with ``get_session_messages`` entry for entry.

Where the SDK fails we do not: invalid UTF-8 is replaced instead of raising, and a line
is split on ``\\n`` only, so a raw U+2028 inside a string survives.
"""

from __future__ import annotations

import errno
import os
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from sessiondex.transcripts.discover import open_regular
from sessiondex.transcripts.reader import (
    PROBLEM_BEING_WRITTEN,
    PROBLEM_NEVER_FINISHED,
    glued_records,
    parse_line,
    split_lines,
)
from sessiondex.transcripts.records import (
    MESSAGE_TYPES,
    block_ids,
    is_chain_entry,
    is_tool_result,
    response_id,
)
from sessiondex.transcripts.write import TAIL_QUIET_SECONDS

Entry = dict[str, Any]


def _parse_line(
    raw: bytes, problems: Counter[str], *, complete: bool = True, quiet: bool = False
) -> Entry | None:
    """One line by ``transcripts.reader``'s definitions (so ``show`` and ``index`` count
    the same bad lines), invalid UTF-8 repaired (U+FFFD) and counted. A last line
    without its ``\\n`` (``complete=False``) is kept if it already is a whole record
    (the SDK reads it) and otherwise counted as ``being-written``, or ``never-finished``
    when the file is ``quiet`` (:func:`quiet_since_written`), never as bad."""
    entry, problem = parse_line(raw, repair_utf8=True)
    if entry is None and not complete:
        if raw.strip():
            problems[PROBLEM_NEVER_FINISHED if quiet else PROBLEM_BEING_WRITTEN] += 1
        return None
    if problem is not None:
        problems[problem] += 1
    return entry


def quiet_since_written(st: os.stat_result) -> bool:
    """Whether a file has been still long enough for an unfinished last line to be a
    write that stopped, not one in progress (the rule appends use:
    ``transcripts.write.TAIL_QUIET_SECONDS``)."""
    return time.time() - st.st_mtime >= TAIL_QUIET_SECONDS


def load_entries(
    path: Path, *, complete_only: bool = False, glued: bool = False
) -> tuple[list[Entry], Counter[str]]:
    """Every JSON object of the file in file order, and the skipped or repaired lines by
    kind (``transcripts.reader``'s definitions, so ``show`` and ``index`` agree).

    The whole file is read (the chain can reach anywhere in it). Lines are split on
    ``b"\\n"`` only; ``str.splitlines`` would also cut at U+2028/U+2029 and lose the
    record. A last line without ``\\n`` is read too, as the SDK reads it, if it already
    is a whole record (else it is ``being-written``, not bad), unless ``complete_only``
    (a writer may still be writing it: a copy must not take half a record, nor a whole
    one whose line has not ended yet). With ``glued``, a bad line gives the metadata
    records the index reads of it (``reader.glued_records``: a title the SDK glued onto
    a line without its newline), in their place, as the session's title is read.
    Raises only ``OSError`` for the file itself, never for its content.
    """
    with open_regular(path) as stream:
        quiet = quiet_since_written(os.fstat(stream.fileno()))
        data = stream.read()
    if complete_only:
        data = data[: data.rfind(b"\n") + 1]
    problems: Counter[str] = Counter()
    entries: list[Entry] = []
    lines, tail = split_lines(data)
    for raw in lines:
        entry = _parse_line(raw, problems)
        if entry is not None:
            entries.append(entry)
        elif glued and raw.strip():
            entries.extend(glued_records(raw))
    last = _parse_line(tail, problems, complete=False, quiet=quiet)
    if last is not None:
        entries.append(last)
    return entries, problems


# ----------------------------------------------------------------- two passes
# ``show`` of a 64 MB transcript must not hold 64 MB of parsed JSON: the chain needs only
# each entry's links, never its content. Pass 1 (:func:`scan_chain`) keeps, per chain
# entry, a *stub* with just the fields the chain rules read, and where its line is; the
# chain functions below run on stubs unchanged. Pass 2 (:meth:`ChainScan.read`) reads
# back, one at a time, only the lines the caller shows.
_CHUNK = 1 << 20
_STUB_KEYS = (
    "type",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "isSidechain",
    "teamName",
    "isMeta",
    "agentId",
    "timestamp",
    "subtype",
    "isCompactSummary",
    "sourceToolAssistantUUID",
)
_LINK_BLOCKS = ("tool_use", "tool_result")


def _stub(entry: Entry) -> Entry:
    """The fields of ``entry`` that the chain rules, ``visible_messages`` and the
    conversation's layout read; content reduced to its tool_use/tool_result ids."""
    stub = {k: entry[k] for k in _STUB_KEYS if k in entry}
    message = entry.get("message")
    if isinstance(message, dict):
        reduced: dict[str, Any] = {}
        if "id" in message:
            reduced["id"] = message["id"]
        content = message.get("content")
        if isinstance(content, list):
            reduced["content"] = [
                {"type": b.get("type"), "id": b.get("id"), "tool_use_id": b.get("tool_use_id")}
                for b in content
                if isinstance(b, dict) and b.get("type") in _LINK_BLOCKS
            ]
        stub["message"] = reduced
    return stub


def _iter_lines(
    stream: BinaryIO, offset: int = 0, seen: Callable[[bytes], None] | None = None
) -> Iterator[tuple[int, bytes, bool]]:
    """``(offset, line, ended)`` for every line split on ``b"\\n"`` from the stream's
    position (``offset`` in the file), the last one even without its ``\\n`` (``ended``
    False, as :func:`load_entries` reads it); one line in memory at a time. ``seen`` is
    handed every chunk read, in order."""
    pending: list[bytes] = []
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        if seen is not None:
            seen(chunk)
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                pending.append(chunk[start:])
                break
            if pending:
                pending.append(chunk[start:nl])
                line = b"".join(pending)
                pending = []
            else:
                line = chunk[start:nl]
            yield offset, line, True
            offset += len(line) + 1
            start = nl + 1
    if pending:
        line = b"".join(pending)
        if line:
            yield offset, line, False


class ChainScan:
    """Pass 1 over a transcript: stubs of its chain entries, in file order, and the
    skipped or repaired lines by kind (the same counts :func:`load_entries` gives).

    ``main_chain(scan.stubs)`` / ``subagent_chain(scan.stubs)`` give the chain as stubs;
    :meth:`read` turns stubs back into the full entries. Memory is proportional to the
    number of chain entries, not to the bytes of the file.

    What was read is kept to tell an append from a rewrite later (the indexer's rule,
    ``indexer.ingest.classify_change``): ``end``, the bytes up to the last ``\\n``;
    ``whole``, whether nothing followed it; ``crc``, the CRC-32 of those bytes (the
    ``known`` part of ``indexer.parse.fingerprint``); ``stat``, the file's after reading.
    :meth:`grown` reads on from ``end``.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.stubs: list[Entry] = []
        self.problems: Counter[str] = Counter()
        self._where: dict[int, tuple[int, int]] = {}
        self.end = 0
        self.crc = 0
        self.whole = True
        with open_regular(self.path) as stream:
            st = os.fstat(stream.fileno())
            self._identity = (st.st_dev, st.st_ino)
            self._scan(stream, st)

    def _scan(self, stream: BinaryIO, st: os.stat_result) -> None:
        """Read the lines from ``self.end`` (where ``stream`` is) to the end of the file."""
        quiet = quiet_since_written(st)
        read = [self.end, self.crc]  # the offset and the CRC of [0, offset) read so far

        def seen(chunk: bytes) -> None:
            read[0] += len(chunk)
            read[1] = zlib.crc32(chunk, read[1])

        for offset, raw, ended in _iter_lines(stream, self.end, seen):
            if ended:
                self.end = offset + len(raw) + 1
            if not raw.strip():
                continue
            entry = _parse_line(raw, self.problems, complete=ended, quiet=quiet)
            if entry is None or not is_chain_entry(entry):
                continue
            stub = _stub(entry)
            self.stubs.append(stub)
            self._where[id(stub)] = (offset, len(raw))
        self.whole = read[0] == self.end
        self.crc = read[1] if self.whole else 0
        self.stat = os.fstat(stream.fileno())

    def grown(self) -> ChainScan:
        """This scan with the lines written after ``end`` read too, as a new scan (this
        one is left as it is: a page may be reading from it). For a file the caller
        knows to have only grown since (``indexer.ingest.classify_change`` says GROWN or
        UNCHANGED), and a scan that is ``whole``: the same stubs then, and the new
        lines' after them, are what a scan of the file now gives. Raises ``OSError``
        (``ESTALE`` for a file replaced meanwhile)."""
        if not self.whole:
            raise ValueError("a scan ending in a partial line cannot be read on")
        out = ChainScan.__new__(ChainScan)
        out.path = self.path
        out.stubs = list(self.stubs)
        out.problems = Counter(self.problems)
        out._where = dict(self._where)
        out._identity = self._identity
        out.end, out.crc, out.whole = self.end, self.crc, True
        with open_regular(self.path) as stream:
            st = os.fstat(stream.fileno())
            if (st.st_dev, st.st_ino) != self._identity:
                raise OSError(errno.ESTALE, f"{self.path} was replaced")
            stream.seek(self.end)
            out._scan(stream, st)
        return out

    def read(self, stubs: Iterable[Entry]) -> Iterator[Entry]:
        """The full entry of each stub (stubs of this scan), read back from its line.

        Raises ``OSError`` if the file was replaced or rewritten since the scan (an
        append, the only change Claude Code makes, does not matter).
        """
        with open_regular(self.path) as stream:
            fd = stream.fileno()
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != self._identity:
                raise OSError(errno.ESTALE, f"{self.path} was replaced while being read")
            for stub in stubs:
                offset, length = self._where[id(stub)]
                raw = os.pread(fd, length, offset)
                entry = _parse_line(raw, Counter()) if len(raw) == length else None
                if entry is None or entry.get("uuid") != stub.get("uuid"):
                    raise OSError(errno.ESTALE, f"{self.path} was rewritten while being read")
                yield entry


def scan_chain(path: Path) -> ChainScan:
    """Pass 1 over ``path`` (see :class:`ChainScan`); raises only ``OSError``."""
    return ChainScan(path)


def read_messages(path: Path, *, subagent: bool = False) -> list[Entry]:
    """The full entries ``get_session_messages`` returns for the transcript at ``path``
    (``get_subagent_messages`` with ``subagent``), holding in memory only those entries
    and the stubs, not every entry of the file. Raises only ``OSError``."""

    def pick(entries: list[Entry]) -> list[Entry]:
        return subagent_chain(entries) if subagent else visible_messages(main_chain(entries))

    scan = scan_chain(path)
    try:
        return list(scan.read(pick(scan.stubs)))
    except OSError as exc:
        if exc.errno != errno.ESTALE:
            raise
        # Replaced between the two passes (not something Claude Code does): read it
        # whole, once, as it is now.
        entries, _problems = load_entries(path)
        return pick(entries)


def _parent(entry: Entry) -> str | None:
    parent = entry.get("parentUuid")
    # A non-string parent is no link (the SDK would crash hashing a list here).
    return parent if isinstance(parent, str) and parent else None


def _walk_to_root(leaf: Entry, by_uuid: dict[str, Entry]) -> tuple[list[Entry], set[str]]:
    """Root-to-leaf path from ``leaf``; stops at a missing parent or a cycle."""
    path: list[Entry] = []
    seen: set[str] = set()
    current: Entry | None = leaf
    while current is not None and current["uuid"] not in seen:
        seen.add(current["uuid"])
        path.append(current)
        parent = _parent(current)
        current = by_uuid.get(parent) if parent else None
    path.reverse()
    return path, seen


def _is_main_thread(entry: Entry) -> bool:
    return not entry.get("isSidechain") and not entry.get("teamName") and not entry.get("isMeta")


def main_chain(entries: list[Entry]) -> list[Entry]:
    """The live conversation, root first: every chain entry type, parallel calls recovered.

    The leaf is the latest (in file order) user/assistant entry reached from a terminal
    entry that is not sidechain, team or meta; the walk up does not follow
    ``logicalParentUuid``, so a compacted session starts at its compact boundary.
    """
    chain_entries = [e for e in entries if is_chain_entry(e)]
    if not chain_entries:
        return []
    by_uuid: dict[str, Entry] = {}
    position: dict[str, int] = {}
    for index, entry in enumerate(chain_entries):
        by_uuid[entry["uuid"]] = entry  # a later duplicate wins, as in the SDK
        position[entry["uuid"]] = index
    parents = {p for p in (_parent(e) for e in chain_entries) if p}

    candidates: list[Entry] = []
    for terminal in chain_entries:
        if terminal["uuid"] in parents:
            continue
        current: Entry | None = terminal
        visited: set[str] = set()
        while current is not None and current["uuid"] not in visited:
            visited.add(current["uuid"])
            if current.get("type") in MESSAGE_TYPES:
                candidates.append(current)
                break
            parent = _parent(current)
            current = by_uuid.get(parent) if parent else None
    if not candidates:
        return []
    preferred = [c for c in candidates if _is_main_thread(c)] or candidates
    # max() keeps the first of equal positions, like the SDK's strict ">" scan.
    leaf = max(preferred, key=lambda e: position.get(e["uuid"], -1))
    chain, seen = _walk_to_root(leaf, by_uuid)
    return _recover_parallel(by_uuid, chain, seen)


# ----------------------------------------------------------------- parallel tool calls
def _is_tool_result_entry(entry: Entry) -> bool:
    """A user entry with a parent whose content holds a ``tool_result`` block."""
    return entry.get("type") == "user" and _parent(entry) is not None and is_tool_result(entry)


def _same_writer(a: Entry, b: Entry) -> bool:
    """Written by the same (sub)agent: a sidechain result never answers a main call."""
    return bool(a.get("isSidechain")) == bool(b.get("isSidechain")) and (
        a.get("agentId") == b.get("agentId")
    )


def _stamp(entry: Entry) -> str:
    value = entry.get("timestamp")
    return value if isinstance(value, str) else ""


def _recover_parallel(by_uuid: dict[str, Entry], chain: list[Entry], seen: set[str]) -> list[Entry]:
    """Put back the sibling calls and results that a parallel turn left off the path.

    Each tool_result's parent is its own call's entry, so the path keeps only the
    branch the next turn continued from. For each response (``message.id``) on the
    chain, its off-chain entries and their results are inserted after the response's
    last on-chain entry: siblings first, then results, each stably by timestamp.
    """
    chain_assistants = [e for e in chain if e.get("type") == "assistant"]
    anchors: dict[str, Entry] = {}
    for entry in chain_assistants:
        mid = response_id(entry)
        if mid:
            anchors[mid] = entry  # the last on-chain entry of the response
    if not anchors:
        return chain

    siblings: dict[str, list[Entry]] = {}
    # tool_use id → the entry that issued it; None when two responses claim it.
    owner_of: dict[str, Entry | None] = {}
    results: list[Entry] = []
    for entry in by_uuid.values():
        mid = response_id(entry)
        if mid:
            siblings.setdefault(mid, []).append(entry)
            for call in block_ids(entry, "tool_use", "id"):
                if call not in owner_of:
                    owner_of[call] = entry
                else:
                    previous = owner_of[call]
                    same = previous is not None and response_id(previous) == mid
                    owner_of[call] = entry if same else None
        elif _is_tool_result_entry(entry):
            results.append(entry)

    results_of: dict[str, list[Entry]] = {}
    for result in results:
        results_of.setdefault(result["parentUuid"], []).append(result)
        source = result.get("sourceToolAssistantUUID")
        if isinstance(source, str):
            source_entry = by_uuid.get(source)
            if source_entry is not None and _same_writer(result, source_entry):
                results_of.setdefault(source, []).append(result)
        for call in block_ids(result, "tool_result", "tool_use_id"):
            owner = owner_of.get(call)
            if owner is not None and _same_writer(result, owner):
                results_of.setdefault(owner["uuid"], []).append(result)

    answered_on_chain: set[str] | None = None
    file_order = {uid: i for i, uid in enumerate(by_uuid)}
    done: set[str] = set()
    inserts: dict[str, list[Entry]] = {}
    for assistant in chain_assistants:
        mid = response_id(assistant)
        if not mid or mid in done:
            continue
        done.add(mid)
        group = siblings.get(mid, [assistant])
        members = {m["uuid"] for m in group}
        lost_siblings = [m for m in group if m["uuid"] not in seen]
        lost_results: list[Entry] = []
        strays: list[Entry] = []
        collected: set[str] = set()
        for member in group:
            for result in results_of.get(member["uuid"], ()):
                if result["uuid"] in seen or result["uuid"] in collected:
                    continue
                collected.add(result["uuid"])
                (lost_results if result["parentUuid"] in members else strays).append(result)
        if strays:
            # A result parented elsewhere is taken only if it answers a call of this
            # response that nothing on the chain (or recovered) answers yet.
            if answered_on_chain is None:
                answered_on_chain = {
                    c for e in chain for c in block_ids(e, "tool_result", "tool_use_id")
                }
            answered = set(answered_on_chain)
            for result in lost_results:
                answered.update(block_ids(result, "tool_result", "tool_use_id"))
            for result in sorted(strays, key=lambda e: file_order[e["uuid"]]):
                calls = block_ids(result, "tool_result", "tool_use_id")
                if any(
                    c not in answered
                    and (o := owner_of.get(c)) is not None
                    and o["uuid"] in members
                    for c in calls
                ):
                    answered.update(calls)
                    lost_results.append(result)
        if not lost_siblings and not lost_results:
            continue
        recovered = sorted(lost_siblings, key=_stamp) + sorted(lost_results, key=_stamp)
        seen.update(e["uuid"] for e in recovered)
        inserts[anchors[mid]["uuid"]] = recovered
    if not inserts:
        return chain
    out: list[Entry] = []
    for entry in chain:
        out.append(entry)
        out.extend(inserts.get(entry["uuid"], ()))
    return out


def visible_messages(chain: list[Entry]) -> list[Entry]:
    """What ``get_session_messages`` returns from a chain: user and assistant entries that
    are not meta, sidechain or team entries (compact summaries are kept: they are the only
    trace of what came before a compaction)."""
    return [
        e
        for e in chain
        if e.get("type") in MESSAGE_TYPES
        and not e.get("isMeta")
        and not e.get("isSidechain")
        and not e.get("teamName")
    ]


def subagent_chain(entries: list[Entry]) -> list[Entry]:
    """A subagent transcript's messages: walk up from its last user/assistant entry.

    Subagent files are linear, so the SDK takes the last message in file order as the
    leaf and filters nothing (meta entries included); we do the same.
    """
    chain_entries = [e for e in entries if is_chain_entry(e)]
    by_uuid = {e["uuid"]: e for e in chain_entries}
    leaf = next((e for e in reversed(chain_entries) if e.get("type") in MESSAGE_TYPES), None)
    if leaf is None:
        return []
    chain, _seen = _walk_to_root(leaf, by_uuid)
    return [e for e in chain if e.get("type") in MESSAGE_TYPES]
