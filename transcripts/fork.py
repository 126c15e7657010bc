"""Fork a session: copy its main chain entries into a new transcript with new IDs.

The shape of the new file is the one ``claude_agent_sdk.fork_session`` writes
(docs/mutations.md#fork), so the SDK, the CLI and our index all read a fork made
here as a fork: every entry gets a fresh ``uuid`` and the new ``sessionId``,
``parentUuid`` is remapped (skipping ``progress`` ancestors, which are not copied),
``forkedFrom {sessionId, messageUuid}`` names the original entry, sidechain entries are
dropped, and a ``custom-title`` record titles the fork ``<source title> (fork)``.

Where the SDK loses data we do not:

* lines are split on ``\\n`` only (the SDK's ``str.splitlines()`` also splits on raw
  U+2028/U+2029, which the CLI leaves inside JSON strings, and so drops those entries);
* original timestamps are kept on every entry (the SDK stamps the last one with "now",
  in microseconds, which no CLI writes); records without one get "now" in the CLI's
  millisecond ``Date.toISOString()`` form;
* the default title comes from the whole file, not a 64 KiB head and tail;
* non-ASCII is written as raw UTF-8, as the CLI writes it (the SDK escapes it).

The file is created with ``O_CREAT|O_EXCL`` and mode 0600 and written with one
``write``, so an existing session is never overwritten and a reader never sees a
half-made fork for long (a failed write removes it).
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from sessiondex.transcripts.chain import load_entries
from sessiondex.transcripts.keys import is_session_id
from sessiondex.transcripts.records import FirstPromptState, display_prompt, get_str, is_chain_entry
from sessiondex.transcripts.write import (
    BEING_WRITTEN,
    TAIL_QUIET_SECONDS,
    WriteRefused,
    last_line_unfinished,
    owned_transcript,
)

FORK_SUFFIX = " (fork)"
DEFAULT_BASE_TITLE = "Forked session"
# Keys the SDK removes from forked entries: team/agent identity and the per-session slug
# belong to the source session (``teamName`` would also hide the entry from readers).
_DROPPED_KEYS = ("teamName", "agentName", "slug")


class ForkError(WriteRefused):
    """The fork cannot be made (see :class:`NothingToFork`, or a disk failure); one-line
    message."""


class NothingToFork(ForkError):
    """The request, not the disk, is at fault: the source has no messages to copy, or the
    cut point is not among them. Front ends that mirror the SDK report it as its
    ``ValueError``; disk failures stay :class:`ForkError`."""


@dataclass(frozen=True)
class ForkResult:
    session_id: str
    path: Path
    entries: int  # chain entries copied (progress entries are not)
    title: str  # the fork's custom-title


def now_iso_ms() -> str:
    """The current time as the CLI writes timestamps: ISO-8601 UTC, milliseconds, ``Z``."""
    moment = datetime.now(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def default_base_title(records: list[dict[str, Any]]) -> str:
    """The source's name for ``<name> (fork)``: the last custom title (an empty one
    clears it), else the last AI title, else the first prompt, else "Forked session".

    The SDK's order (custom, AI, first prompt; never last-prompt or summary), read from
    the whole file so a rename deep in a large transcript is not missed. The first
    prompt is the one ``first_prompt`` is, a sidechain line's too, as the SDK's.
    """
    custom: str | None = None
    ai: str | None = None
    prompt = FirstPromptState()
    for record in records:
        kind = record.get("type")
        if kind == "custom-title":
            value = get_str(record, "customTitle")
            if value is not None:
                custom = value.strip() or None
        elif kind == "ai-title":
            value = get_str(record, "aiTitle")
            if value is not None:
                ai = value.strip() or None
        elif kind == "user" and not prompt.done:
            prompt.feed(record)
    first = prompt.result
    return custom or ai or (display_prompt(first) if first else None) or DEFAULT_BASE_TITLE


def _replacements(records: list[dict[str, Any]], source_id: str) -> list[Any]:
    """The source's ``content-replacement`` lists (large tool outputs kept out of the
    JSONL), concatenated in file order, so the fork can still find them."""
    out: list[Any] = []
    for record in records:
        if (
            record.get("type") == "content-replacement"
            and record.get("sessionId") == source_id
            and isinstance(record.get("replacements"), list)
        ):
            out.extend(record["replacements"])
    return out


#: The shortest message-UUID prefix ``up_to`` may be (``show --uuids`` prints 8).
MIN_UUID_PREFIX = 4
#: Characters of a message UUID ``show --uuids`` prints, more where two share them.
SHORT_UUID = 8


def fork_candidates(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of a transcript ``fork --up-to`` chooses among: its chain entries,
    sidechains left out."""
    return [r for r in records if is_chain_entry(r) and not r.get("isSidechain")]


def short_handles(uuids: Iterable[str]) -> dict[str, str]:
    """Each of ``uuids`` → the handle ``show --uuids`` prints for it: its first
    :data:`SHORT_UUID` characters, or as many more as it takes for no other of
    ``uuids`` to start with them in any case, so that :func:`_cut` takes the handle for
    that UUID alone (two UUIDs that differ only in case get their whole selves, which
    ``_cut`` matches exactly, as it does one whose handle would begin or end with a
    space, which ``_cut`` strips from a prefix). Git's abbreviated hashes grow the same
    way."""
    distinct = sorted(set(uuids), key=str.lower)
    lowered = [u.lower() for u in distinct]
    handles: dict[str, str] = {}
    for i, value in enumerate(distinct):
        need = SHORT_UUID
        # Sorted, the longest prefix a string shares with any other is with a neighbour.
        for j in (i - 1, i + 1):
            if 0 <= j < len(lowered):
                need = max(need, _shared_prefix(lowered[i], lowered[j]) + 1)
        handle = value[:need]
        handles[value] = handle if handle == handle.strip() else value
    return handles


def _shared_prefix(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


def _cut(entries: list[dict[str, Any]], up_to: str, source_id: str) -> int:
    """Index of the entry ``up_to`` names: its UUID, or a prefix of it (any case) that
    no other entry's UUID has, so a user can fork from the short UUID ``show --uuids``
    prints. The first entry of that UUID, as before."""
    exact = next((i for i, r in enumerate(entries) if r["uuid"] == up_to), None)
    if exact is not None:
        return exact
    prefix = up_to.strip().lower()
    if len(prefix) >= MIN_UUID_PREFIX:
        matches = {r["uuid"] for r in entries if str(r["uuid"]).lower().startswith(prefix)}
        if len(matches) == 1:
            (match,) = matches
            return next(i for i, r in enumerate(entries) if r["uuid"] == match)
        if matches:
            raise NothingToFork(
                f"Message {up_to} is ambiguous in session {source_id}: "
                f"{len(matches)} messages start with it; give more characters"
            )
    elif any(str(r["uuid"]).lower().startswith(prefix) for r in entries if prefix):
        raise NothingToFork(
            f"Message {up_to} is too short a prefix: give at least {MIN_UUID_PREFIX}"
            " characters of the UUID (show --uuids prints 8)"
        )
    raise NothingToFork(f"Message {up_to} not found in session {source_id}")


def build_fork(
    records: list[dict[str, Any]],
    *,
    source_id: str,
    new_id: str,
    up_to: str | None = None,
    title: str | None = None,
    now: str | None = None,
) -> list[dict[str, Any]]:
    """The records of the fork, in file order (pure: no I/O, testable on its own)."""
    stamp = now or now_iso_ms()
    entries = fork_candidates(records)
    if not entries:
        raise NothingToFork(f"Session {source_id} has no messages to fork")
    if up_to is not None:
        entries = entries[: _cut(entries, up_to, source_id) + 1]
    # Later duplicates of a uuid overwrite earlier ones, as every chain reader does.
    by_uuid = {r["uuid"]: r for r in entries}
    new_ids = {old: str(uuid.uuid4()) for old in by_uuid}

    def mapped_parent(parent: object) -> str | None:
        """The new id of the first non-progress ancestor (progress is not copied)."""
        seen: set[str] = set()
        while isinstance(parent, str) and parent in by_uuid and parent not in seen:
            seen.add(parent)
            ancestor = by_uuid[parent]
            if ancestor.get("type") != "progress":
                return new_ids[parent]
            parent = ancestor.get("parentUuid")
        return None

    out: list[dict[str, Any]] = []
    for entry in entries:
        if entry.get("type") == "progress":
            continue
        copy = dict(entry)  # original key order kept; new keys go at the end
        for key in _DROPPED_KEYS:
            copy.pop(key, None)
        copy["parentUuid"] = mapped_parent(entry.get("parentUuid"))
        if "logicalParentUuid" in copy and entry.get("logicalParentUuid"):
            copy["logicalParentUuid"] = new_ids.get(entry["logicalParentUuid"])
        # The SDK drops this link; remapping it keeps parallel tool-call recovery working
        # in readers that use it (it names the assistant line that made the call).
        source_tool = entry.get("sourceToolAssistantUUID")
        if source_tool is not None:
            if isinstance(source_tool, str) and source_tool in new_ids:
                copy["sourceToolAssistantUUID"] = new_ids[source_tool]
            else:
                copy.pop("sourceToolAssistantUUID")
        copy["isSidechain"] = False
        copy["sessionId"] = new_id
        copy["uuid"] = new_ids[entry["uuid"]]
        if not isinstance(copy.get("timestamp"), str):
            copy["timestamp"] = stamp
        copy["forkedFrom"] = {"sessionId": source_id, "messageUuid": entry["uuid"]}
        out.append(copy)
    if not out:
        raise NothingToFork(f"Session {source_id} has no messages to fork")
    replacements = _replacements(records, source_id)
    if replacements:
        out.append(
            {
                "type": "content-replacement",
                "sessionId": new_id,
                "replacements": replacements,
                "uuid": str(uuid.uuid4()),
                "timestamp": stamp,
            }
        )
    name = (title or "").strip() or default_base_title(records) + FORK_SUFFIX
    out.append(
        {
            "type": "custom-title",
            "sessionId": new_id,
            "customTitle": name,
            "uuid": str(uuid.uuid4()),
            "timestamp": stamp,
        }
    )
    return out


def _write_new(path: Path, data: bytes) -> None:
    """Create ``path`` (never over an existing file) with mode 0600, holding ``data``
    whole or not at all: it is written under a name no reader takes for a transcript
    (``.<name>.part``) and renamed into place. A fork killed while writing a big
    transcript left ``path`` cut mid-line, listed by Claude Code and sessiondex as a
    session; now it leaves at most a part file, swept by a later fork in the folder.

    A rename, not a hard link then an unlink: a kill between those two left the part
    file holding the same inode, so deleting the fork left the whole transcript in it.
    The name is a fresh UUID, checked free just before the rename."""
    _sweep_parts(path.parent)
    partial = path.with_name(f".{path.name}{PART_SUFFIX}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    if os.path.lexists(path):
        raise ForkError(f"{path} already exists; not overwriting it")
    try:
        fd = os.open(partial, flags, 0o600)
    except OSError as exc:
        raise ForkError(f"cannot create {path}: {exc.strerror}") from None
    try:
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(0, f"short write ({written} of {len(data)} bytes)")
        finally:
            os.close(fd)
        if os.path.lexists(path):
            raise ForkError(f"{path} already exists; not overwriting it")
        os.rename(partial, path)
    except OSError as exc:
        raise ForkError(f"cannot write {path}: {exc.strerror}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(partial)  # gone after the rename; a failed write's leftover


PART_SUFFIX = ".part"
# A part file this old belongs to no fork still writing: a killed one left it.
STALE_PART_SECONDS = 3600.0


def _sweep_parts(folder: Path) -> None:
    """Remove the part files killed forks left in ``folder`` (``.<uuid>.jsonl.part``,
    untouched for an hour): each can be as big as the transcript it copied."""
    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if not (name.startswith(".") and name.endswith(".jsonl" + PART_SUFFIX)):
            continue
        if not is_session_id(name[1 : -len(".jsonl" + PART_SUFFIX)]):
            continue
        with contextlib.suppress(OSError):
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and now - st.st_mtime > STALE_PART_SECONDS:
                os.unlink(entry.path)


def _may_still_get_one(path: Path, records: list[dict[str, Any]]) -> bool:
    """Whether a file written to moments ago, with no message to fork among its whole
    lines, may be a session being written rather than one with none: it holds no chain
    entry at all (emptied by a rewrite in place, or created at its first line), or its
    last line is not finished yet. One whose whole messages are all a subagent's
    (sidechain) has none to fork however long one waits: a file just tagged or renamed
    said "being written, try again" for the quiet period, then "no messages"."""
    if not any(is_chain_entry(r) for r in records):
        return True
    try:
        return last_line_unfinished(path)
    except OSError:
        return True  # gone or replaced while we looked: trying again will say which


def fork_transcript(
    source: Path, roots: list[Path], *, up_to: str | None = None, title: str | None = None
) -> ForkResult:
    """Fork the main transcript ``source`` (inside a configured ``projects/`` dir) into a
    new session in the same project dir; returns its ID and path."""
    owned = owned_transcript(source, roots)
    try:
        # Split on b"\n" only: a raw U+2028 inside a string does not end a record.
        # Complete lines only while Claude Code may be writing the last one; a file
        # quiet for as long as an append waits (transcripts/write.py) ended in a write
        # that died before its newline, and its last whole record is part of the
        # conversation (the SDK and our index read it). A name on a bad line (the SDK
        # glued it on, or glued its record onto it) names the fork as it names the
        # session (reader.glued_records).
        quiet = time.time() - os.stat(owned.path).st_mtime >= TAIL_QUIET_SECONDS
        records, _problems = load_entries(owned.path, complete_only=not quiet, glued=True)
    except FileNotFoundError:
        raise ForkError(f"{owned.path} no longer exists") from None
    except OSError as exc:
        raise ForkError(f"cannot read {owned.path}: {exc.strerror}") from None
    if not quiet and not fork_candidates(records) and _may_still_get_one(owned.path, records):
        # Claude Code rewrites a transcript in place (truncate, then write) and creates
        # it at its first line: a file just written with no whole message yet is being
        # written, not a session with none (which a moment later it no longer is).
        raise ForkError(f"{BEING_WRITTEN} ({owned.path} holds no whole message yet)")
    new_id = str(uuid.uuid4())
    fork = build_fork(records, source_id=owned.session_id, new_id=new_id, up_to=up_to, title=title)
    target = owned.path.parent / f"{new_id}.jsonl"
    _write_new(target, b"".join(orjson.dumps(r) + b"\n" for r in fork))
    return ForkResult(
        new_id, target, sum(1 for r in fork if is_chain_entry(r)), fork[-1]["customTitle"]
    )
