"""``sessiondex push``: copy local transcripts into the team store, redacted.

Each transcript becomes the store key the Agent SDK would give it
(``<project_key>/<session_id>[/subagents/…]``, ``file_path_to_session_key``), so a
pushed session can be listed, read and resumed through ``PostgresSessionStore`` on
another machine, and a session an SDK app already mirrored is not stored twice (its
entries carry the same uuids).

Incremental like ``index``: ``push_files`` keeps, per (host, config dir, path), the
byte after the last complete line sent and a fingerprint of that prefix
(``indexer/parse.py``). A grown file sends only its new lines; a rewritten or shrunk
one (the fingerprint differs) is sent again from the start, replacing what the store
held for it. Each chunk of lines commits together with its new offset, under a row
lock on the file's ``push_files`` row: a killed push resumes where it stopped, and two
pushes of the same files at once (two terminals, two machines sharing a home) send
every line exactly once — the second waits for the first's chunk, then starts after it.

A session deleted from the store is not sent again (``tombstones.py``): its files are
left out, and counted, unless ``resend_deleted`` names it.

Nothing leaves unredacted (``redact.py``), and tool outputs (``tool_result`` contents,
``toolUseResult``, tool progress output) are left out unless ``with_tools``: they are
most of the bytes and most of the secrets. Tool calls and the conversation stay.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sessiondex.indexer.parse import fingerprint, known_crc, same_prefix
from sessiondex.store.dsn import connection_string
from sessiondex.store.prefix_memo import PrefixMemo
from sessiondex.store.redact import Finding, candidate_rules, redact_text, redact_value
from sessiondex.store.schema import migrate
from sessiondex.store.sdk_store import local_identity
from sessiondex.store.tombstones import covers, deleted_keys, resend_sessions, still_deleted
from sessiondex.store.write import (
    Entry,
    Key,
    Writer,
    append,
    dumps_entry,
    reset_transcript,
    set_file_stat,
)
from sessiondex.transcripts.discover import (
    MAIN,
    TranscriptFile,
    iter_transcripts,
    open_regular,
    read_regular,
    subagent_meta_path,
)
from sessiondex.transcripts.pr_urls import PullRequest, find_pr_urls
from sessiondex.transcripts.reader import RecordReader, classify
from sessiondex.transcripts.remotes import origin_of

if TYPE_CHECKING:
    from psycopg import AsyncConnection

# One transaction carries at most this many bytes of lines: small enough that a killed
# push loses little, large enough that commits are not the cost.
CHUNK_BYTES = 2 << 20
TOOL_OUTPUT_OMITTED = "[tool output not pushed; push --with-tools sends it]"
# progress ``data`` keys that describe the event rather than carry a tool's output
_PROGRESS_KEEP = frozenset({"type", "hookEvent", "hookName", "toolName", "status"})

Progress = Callable[[int, int], None]


@dataclass
class PushOptions:
    roots: list[Path]
    project_keys: set[str] | None = None  # None: every project
    since_ms: int | None = None  # only files modified since
    with_tools: bool = False
    dry_run: bool = False
    show_redactions: bool = False
    # Where this machine keeps what it learnt of each file's bytes (prefix_memo.py);
    # None: keep nothing, read every file a skip depends on.
    memo_path: Path | None = None
    # Session IDs (or prefixes, any case) deleted from the store to send again all the
    # same (tombstones.py resend_sessions).
    resend_deleted: frozenset[str] = frozenset()


@dataclass
class PushStats:
    files_seen: int = 0
    new: int = 0
    grown: int = 0
    rewritten: int = 0
    unchanged: int = 0
    deleted_in_store: int = 0  # files left out: their session was deleted from the store
    resent_deleted: int = 0  # files of such sessions sent again (--resend-deleted)
    # --resend-deleted values that name no session deleted from the store, as typed
    resend_not_deleted: list[str] = field(default_factory=list)
    sessions: set[tuple[str, str]] = field(default_factory=set)
    entries: int = 0  # entries stored (or, in a dry run, that would be sent)
    duplicates: int = 0  # entries the store already held (same uuid)
    bytes_read: int = 0
    bad_lines: Counter[str] = field(default_factory=Counter)
    redactions: Counter[str] = field(default_factory=Counter)
    tool_outputs_omitted: int = 0
    findings: list[tuple[str, int, Finding]] = field(default_factory=list)  # path, line
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "files_seen": self.files_seen,
            "new": self.new,
            "grown": self.grown,
            "rewritten": self.rewritten,
            "unchanged": self.unchanged,
            "deleted_in_store": self.deleted_in_store,
            "resent_deleted": self.resent_deleted,
            "resend_not_deleted": list(self.resend_not_deleted),
            "sessions": len(self.sessions),
            "entries": self.entries,
            "duplicates": self.duplicates,
            "bytes_read": self.bytes_read,
            "bad_lines": sum(self.bad_lines.values()),
            "problems": dict(self.bad_lines),
            "redactions": dict(self.redactions),
            "tool_outputs_omitted": self.tool_outputs_omitted,
            "seconds": round(self.seconds, 3),
        }


# ----------------------------------------------------------------------------- entries
def strip_tool_outputs(record: dict[str, Any]) -> tuple[dict[str, Any], list[PullRequest], int]:
    """``record`` without its tool outputs: ``(record, PR URLs they held, how many)``.

    The PR URLs are kept for ``pr_mentions`` (``gh pr create`` prints the URL in a tool
    result; the SQLite index finds it there too): a URL is not a secret.
    """
    kind = record.get("type")
    if kind == "progress":
        data = record.get("data")
        if isinstance(data, dict) and set(data) - _PROGRESS_KEEP:
            kept = {k: v for k, v in data.items() if k in _PROGRESS_KEEP}
            return {**record, "data": kept}, [], 1
        return record, [], 0
    if kind != "user":
        return record, [], 0
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    mentions: list[PullRequest] = []
    omitted = 0
    new_content = content
    if isinstance(content, list):
        new_content = []
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and "content" in block
            ):
                for text in _texts(block["content"]):
                    mentions.extend(find_pr_urls(text))
                block = {**block, "content": TOOL_OUTPUT_OMITTED}
                omitted += 1
            new_content.append(block)
    if not omitted and "toolUseResult" not in record:
        return record, [], 0
    out = {k: v for k, v in record.items() if k != "toolUseResult"}
    if omitted:
        assert isinstance(message, dict)
        out["message"] = {**message, "content": new_content}
    return out, mentions, max(omitted, 1)


def _texts(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                yield item["text"]


def prepare(
    line: bytes,
    record: dict[str, Any],
    *,
    with_tools: bool,
    findings: list[Finding],
) -> tuple[Entry, int]:
    """One line → the entry to push (redacted, tool outputs left out unless
    ``with_tools``) and the number of tool outputs left out. A line nothing had to
    change is stored as the very bytes of the file."""
    value, mentions, omitted = (record, [], 0) if with_tools else strip_tool_outputs(record)
    try:
        raw: str | None = line.decode("utf-8")
    except UnicodeDecodeError:
        # The reader read it with U+FFFD, as Claude Code does (``record`` is that
        # reading); PostgreSQL text is UTF-8, so the repaired record is what is stored.
        raw = None
    scanned = raw if raw is not None else dumps_entry(record)
    if value is not record:  # the outputs left out need no scan: look at what remains
        try:
            scanned = orjson.dumps(value).decode("utf-8")
        except orjson.JSONEncodeError:  # an int beyond 64 bits: the whole line is a superset
            pass
    rules = candidate_rules(scanned)
    redacted, _ = redact_value(value, findings, rules)
    if raw is not None and redacted is record and not _strict_json(raw):
        raw = None  # NaN, a leading no-break space: read by us, refused by PostgreSQL
    if raw is not None and redacted is record and rules and redact_text(raw, None, rules) != raw:
        # The line's bytes hold a secret its reading does not: a key written twice keeps
        # its last value only. The record (re-encoded) is stored, never those bytes.
        raw = None
    text = raw if redacted is record and raw is not None else dumps_entry(redacted)
    return Entry(text, redacted, mentions), omitted


def _strict_json(text: str) -> bool:
    """Whether ``text`` is JSON as PostgreSQL's json type takes it. orjson is stricter
    still (a number past float, a lone surrogate escape): those lines are stored as
    re-encoded, which reads back the same."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


# ----------------------------------------------------------------------------- where from
def subpath_of(tf: TranscriptFile) -> str:
    """The SDK's subpath for a transcript: '' for the main one, else the path under
    ``<session_id>/`` without ``.jsonl`` (``subagents/agent-x``), '/'-joined."""
    if tf.kind == MAIN:
        return ""
    session_dir = tf.root / "projects" / tf.project_key / tf.session_id
    relative = tf.path.relative_to(session_dir).as_posix()
    return relative[: -len(".jsonl")]


@cache
def origin_url(cwd: str) -> str | None:
    """``git remote get-url origin`` in ``cwd``, normalized (no credentials, ``host/owner/repo``
    as :func:`transcripts.remotes.normalize_remote` spells it, the form queries compare
    with), if it is a repository on this machine: what identifies a repository across
    machines, where paths differ."""
    return origin_of(cwd)


def select_files(options: PushOptions) -> list[TranscriptFile]:
    """The transcripts to consider: every root, the chosen projects, modified since."""
    files = []
    for root in options.roots:
        for tf in iter_transcripts(root):
            if options.project_keys is not None and tf.project_key not in options.project_keys:
                continue
            if options.since_ms is not None and tf.mtime_ns // 1_000_000 < options.since_ms:
                continue
            files.append(tf)
    return files


def _crc_of(stream: Any, start: int, stop: int, crc: int) -> tuple[int, int | None]:
    """``crc`` carried over the bytes ``[start, stop)`` of the file, read now; and
    ``stop``, or None when the file no longer holds them."""
    offset = start
    while offset < stop:
        piece = os.pread(stream.fileno(), min(1 << 20, stop - offset), offset)
        if not piece:
            return crc, None
        crc = zlib.crc32(piece, crc)
        offset += len(piece)
    return crc, stop


def _same_stat(st: os.stat_result, tf: TranscriptFile) -> bool:
    """Whether ``st`` is the stat ``tf`` was discovered with (no write since)."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev, st.st_ctime_ns) == (
        tf.size,
        tf.mtime_ns,
        tf.inode,
        tf.device,
        tf.ctime_ns,
    )


def _meta_path(tf: TranscriptFile) -> Path:
    return subagent_meta_path(tf.path)


def _meta_digest(tf: TranscriptFile) -> str | None:
    """The digest :meth:`Pusher._push_meta` records for a subagent's ``.meta.json``."""
    try:
        return hashlib.blake2b(read_regular(_meta_path(tf)), digest_size=16).hexdigest()
    except OSError:
        return None


# ----------------------------------------------------------------------------- push
@dataclass
class _FileState:
    consumed: int
    fingerprint: str | None
    meta_digest: str | None
    transcript_ref: int | None
    with_tools: bool = False


class Pusher:
    """One push run over one connection."""

    def __init__(
        self,
        conn: AsyncConnection[Any] | None,
        options: PushOptions,
        memo: PrefixMemo | None = None,
        checked_ns: int = 0,
    ) -> None:
        self.conn = conn
        self.options = options
        self.memo = memo if memo is not None else PrefixMemo(None)
        # A time taken before the files were stat'ed (the memo's racy-window check).
        self.checked_ns = checked_ns
        self.stats = PushStats()
        user, host = local_identity()
        self.user = user
        self.host = host or "unknown"
        self._known: dict[tuple[str, str], _FileState] = {}
        # path -> (offset, fingerprint) this run stored after its last chunk of the file
        self._sent: dict[str, tuple[int, str | None]] = {}
        # The store's tombstones when the run began; each chunk checks again.
        self._deleted: set[tuple[str, str, str]] = set()
        # The deleted sessions --resend-deleted names (lower case), from those tombstones.
        self._resending: frozenset[str] = frozenset()

    async def load_known(self) -> None:
        """What this host has pushed, in one query: a file that has not changed since
        is then skipped without a transaction of its own (most files, most runs). And
        what was deleted from the store: left out without being read, unless
        ``--resend-deleted`` names it (an ambiguous prefix raises before any file)."""
        if self.conn is not None:
            self._deleted = await deleted_keys(self.conn)
        self._resending, self.stats.resend_not_deleted = resend_sessions(
            self._deleted, sorted(self.options.resend_deleted)
        )
        if self.conn is None:
            return
        cur = await self.conn.execute(
            "SELECT config_dir, path, consumed, fingerprint, meta_digest, transcript_ref,"
            " with_tools FROM push_files WHERE host = %s",
            [self.host],
        )
        self._known = {(r[0], r[1]): _FileState(*r[2:]) for r in await cur.fetchall()}

    def _unchanged(self, tf: TranscriptFile) -> bool:
        """Sent whole and unchanged (size, fingerprint, tool choice, subagent meta):
        safe to skip even while another push runs, which can only be further along."""
        state = self._known.get((str(tf.root), str(tf.path)))
        if (
            state is None
            or state.consumed != tf.size
            or state.with_tools != self.options.with_tools
        ):
            return False
        remembered = self.memo.fingerprint(tf)
        if remembered is not None:  # the bytes are as when last read: no need to read
            if not same_prefix(state.fingerprint, remembered):
                return False
        else:
            try:
                with open_regular(tf.path) as stream:
                    now = fingerprint(stream, state.consumed)
            except OSError:
                return False
            # an older version's fingerprint (windows alone) cannot tell a same-size
            # edit: such a file is sent again, once, and then holds a CRC
            if not same_prefix(state.fingerprint, now):
                return False
            self.memo.learn(tf, self.checked_ns, now)
        if tf.kind != MAIN:
            digest = _meta_digest(tf)
            return digest is None or digest == state.meta_digest
        return True

    async def _state(self, tf: TranscriptFile, *, lock: bool) -> _FileState:
        conn = self.conn
        if conn is None:  # a dry run against a store never migrated: nothing sent yet
            return _FileState(0, None, None, None, self.options.with_tools)
        args = [self.host, str(tf.root), str(tf.path)]
        columns = "consumed, fingerprint, meta_digest, transcript_ref, with_tools"
        if lock:  # create or lock the file's row, in one statement
            cur = await conn.execute(
                "INSERT INTO push_files (host, config_dir, path) VALUES (%s, %s, %s)"
                " ON CONFLICT (host, config_dir, path) DO UPDATE SET host = EXCLUDED.host"
                f" RETURNING {columns}",
                args,
            )
        else:
            cur = await conn.execute(
                f"SELECT {columns} FROM push_files"
                " WHERE host = %s AND config_dir = %s AND path = %s",
                args,
            )
        row = await cur.fetchone()
        return _FileState(*row) if row else _FileState(0, None, None, None, self.options.with_tools)

    def _writer(self, tf: TranscriptFile, size: int, cwd: str | None) -> Writer:
        return Writer(
            source="push",
            user=self.user,
            host=self.host,
            config_dir=str(tf.root),
            file_path=str(tf.path),
            file_mtime_ms=tf.mtime_ns // 1_000_000,
            file_size=size,
            origin_url=origin_url(cwd) if cwd else None,
        )

    async def push_file(self, tf: TranscriptFile) -> None:
        """Send what ``tf`` has that the store has not: chunk by chunk, each chunk one
        transaction with its offset."""
        key = Key(tf.project_key, tf.session_id, subpath_of(tf))
        session = (key.project_key, key.session_id)
        counted = session in self.stats.sessions
        status = "unchanged"
        if covers(self._deleted, key):
            if not self._resend(key):
                status = "deleted_in_store"
            else:
                self.stats.resent_deleted += 1
        if status == "deleted_in_store" or self._unchanged(tf):
            pass
        elif self.options.dry_run:
            status = await self._dry_file(tf, key)
        else:
            assert self.conn is not None
            for _ in range(2 + tf.size // CHUNK_BYTES + 1_000):  # bounded; each pass advances
                async with self.conn.transaction():
                    status, done = await self._chunk(tf, key, status)
                if done:
                    break
            if tf.kind != MAIN and status != "deleted_in_store":
                await self._push_meta(tf, key)
        if status == "deleted_in_store" and not counted:
            self.stats.sessions.discard(session)  # deleted after a chunk of it was sent
        setattr(self.stats, status, getattr(self.stats, status) + 1)

    async def _dry_file(self, tf: TranscriptFile, key: Key) -> str:
        """What a push of ``tf`` would send, without writing anything."""
        state = await self._state(tf, lock=False)
        try:
            stream = open_regular(tf.path)
        except OSError:
            return "unchanged"
        with stream:
            size = os.fstat(stream.fileno()).st_size
            consumed, status = state.consumed, "grown" if state.consumed else "new"
            if self._changed(stream, size, state, str(tf.path)):
                consumed, status = 0, "rewritten"
            start = consumed
            while consumed < size:
                entries, end, _ = self._read(tf, stream, consumed, size)
                self.stats.entries += len(entries)
                if end == consumed:
                    break
                consumed = end
                self.stats.sessions.add((key.project_key, key.session_id))
        return status if consumed > start or status == "rewritten" else "unchanged"

    def _changed(self, stream: Any, size: int, state: _FileState, path: str) -> bool:
        """Whether what was sent of a file no longer stands: the file was rewritten or
        shrunk under the offset, or ``--with-tools`` changed (lines already sent hold,
        or lack, the tool outputs: they are sent again the way asked now).

        Between two chunks of one run, the prefix this run just fingerprinted is checked
        by its windows only (its CRC carried on): a whole CRC per chunk made a push's
        cost grow with the square of the file; the next run checks it all."""
        consumed = state.consumed
        if not consumed:
            return False
        if state.with_tools != self.options.with_tools:
            return True
        if consumed > size:
            return True
        ours = self._sent.get(path) == (consumed, state.fingerprint)
        known = known_crc(state.fingerprint, consumed) if ours else (0, 0)
        return not same_prefix(state.fingerprint, fingerprint(stream, consumed, known))

    async def _chunk(self, tf: TranscriptFile, key: Key, status: str) -> tuple[str, bool]:
        """One transaction: lock the file's row, check for a rewrite, send the next
        chunk of lines, move the offset. ``(status, done)``. A session deleted from the
        store since the run began is left alone from here on (``deleted_in_store``)."""
        assert self.conn is not None
        if await still_deleted(self.conn, key, resend=self._resend(key)):
            return "deleted_in_store", True
        state = await self._state(tf, lock=True)
        try:
            stream = open_regular(tf.path)
        except OSError:
            return status, True  # vanished or unreadable: the next push tries again
        with stream:
            stat = os.fstat(stream.fileno())
            size = stat.st_size
            consumed = state.consumed
            if self._changed(stream, size, state, str(tf.path)):
                status, consumed = "rewritten", 0
                if state.transcript_ref is not None:
                    sref = await self._session_ref(state.transcript_ref)
                    await reset_transcript(self.conn, key, state.transcript_ref, sref)
                    await self.conn.execute(  # the .meta.json entry went too: send it again
                        "UPDATE push_files SET meta_digest = NULL"
                        " WHERE host = %s AND config_dir = %s AND path = %s",
                        [self.host, str(tf.root), str(tf.path)],
                    )
            if consumed >= size:
                return status, True
            # the stored CRC stands for [0, consumed) when _changed kept the offset
            sent = known_crc(state.fingerprint, consumed) if consumed else (0, 0)
            entries, end, read_crc = self._read(tf, stream, consumed, size, sent[1])
            if end == consumed:  # only a line still being written: not sent, but counted
                mtime_ms = os.fstat(stream.fileno()).st_mtime_ns // 1_000_000
                await set_file_stat(self.conn, key, str(tf.path), size, mtime_ms)
                return status, True
            if status == "unchanged":
                status = "grown" if consumed else "new"
            self.stats.sessions.add((key.project_key, key.session_id))
            cwd = next(
                (c for e in entries if isinstance(c := e.record.get("cwd"), str) and c), None
            )
            result = await append(
                self.conn,
                key,
                entries,
                self._writer(tf, size, cwd),  # the file's size, as the local index has it
                include_tools=self.options.with_tools,
            )
            self.stats.entries += result.inserted
            self.stats.duplicates += result.skipped
            # the CRC of what was sent before, carried on: one pass over the file for a
            # push in chunks, not one per chunk from byte 0
            taken = fingerprint(stream, end, sent)
            stored: str | None = taken
            if read_crc is not None and taken.rpartition(":")[2] != f"{read_crc:08x}":
                # The bytes changed between their reading and now (an edit in place while
                # they were sent): the store holds what was read, so no fingerprint of
                # the file as it is may stand for it. None: the next look sends it again.
                stored = None
            await self.conn.execute(
                "UPDATE push_files SET consumed = %s, fingerprint = %s, transcript_ref = %s,"
                " with_tools = %s, pushed_at = now()"
                " WHERE host = %s AND config_dir = %s AND path = %s",
                [
                    end,
                    stored,
                    result.transcript_ref,
                    self.options.with_tools,
                    self.host,
                    str(tf.root),
                    str(tf.path),
                ],
            )
            self._sent[str(tf.path)] = (end, stored)
            if stored is not None and end == size and _same_stat(stat, tf):
                # The whole file is in the store, and it has not changed since it was
                # discovered (the CRC of earlier chunks was carried, not read again: an
                # edit between chunks shows only in the stat, and then the next push
                # reads it all).
                self.memo.learn(tf, self.checked_ns, stored)  # stat is tf's (_same_stat)
            return status, end >= size

    def _resend(self, key: Key) -> bool:
        return key.session_id.lower() in self._resending

    async def _session_ref(self, transcript_ref: int) -> int:
        assert self.conn is not None
        cur = await self.conn.execute(
            "SELECT session_ref FROM transcripts WHERE id = %s", [transcript_ref]
        )
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])

    def _read(
        self, tf: TranscriptFile, stream: Any, consumed: int, size: int, crc: int = 0
    ) -> tuple[list[Entry], int, int | None]:
        """Complete lines from ``consumed`` (up to ``size``, the stat taken first), at
        most ``CHUNK_BYTES`` of them but at least one, prepared for sending; returns
        them, the offset after the last, and the CRC-32 of the bytes read, carried on
        from ``crc`` (that of ``[0, consumed)``): what the fingerprint stored with them
        must say. A line too long to keep, skipped by the reader, is read for its CRC
        when it is met (it is never sent, so only the lines around it must be as read).
        None only when the file ends short of what the reader saw."""
        reader = RecordReader(stream, consumed, limit=size - consumed)
        entries: list[Entry] = []
        findings: list[Finding] = []
        end: int | None = None
        expected: int | None = consumed  # where the next line starts, while contiguous
        for offset, line in reader.lines():
            if expected is not None and offset > expected:
                crc, expected = _crc_of(stream, expected, offset, crc)
            if expected is not None:
                crc = zlib.crc32(b"\n", zlib.crc32(line, crc))
                expected = offset + len(line) + 1
            record, problem = classify(line)
            if record is None:
                if problem is not None:
                    self.stats.bad_lines[problem] += 1
            else:
                before = len(findings)
                entry, omitted = prepare(
                    line, record, with_tools=self.options.with_tools, findings=findings
                )
                entry.offset = offset
                self.stats.tool_outputs_omitted += omitted
                for finding in findings[before:]:
                    self.stats.redactions[finding.kind] += 1
                    if self.options.show_redactions:
                        self.stats.findings.append((str(tf.path), offset, finding))
                entries.append(entry)
            if offset + len(line) + 1 - consumed >= CHUNK_BYTES:
                end = offset + len(line) + 1
                break
        if end is None:
            end = reader.end_offset
        for kind, count in reader.problems.items():
            self.stats.bad_lines[kind] += count
        self.stats.bytes_read += end - consumed
        if expected is not None and expected < end:  # skipped lines at the end
            crc, expected = _crc_of(stream, expected, end, crc)
        return entries, end, crc if expected == end else None

    async def _push_meta(self, tf: TranscriptFile, key: Key) -> None:
        """A subagent's ``agent-<id>.meta.json`` as the SDK imports it: one
        ``agent_metadata`` entry, sent again only when the file changed."""
        try:
            raw = read_regular(_meta_path(tf))
            meta = orjson.loads(raw)
        except (OSError, orjson.JSONDecodeError):
            return
        if not isinstance(meta, dict) or self.conn is None or self.options.dry_run:
            return
        digest = hashlib.blake2b(raw, digest_size=16).hexdigest()
        findings: list[Finding] = []
        redacted, _ = redact_value({**meta, "type": "agent_metadata"}, findings)
        for finding in findings:
            self.stats.redactions[finding.kind] += 1
        async with self.conn.transaction():
            if await still_deleted(self.conn, key, resend=self._resend(key)):
                return
            state = await self._state(tf, lock=True)
            if state.meta_digest == digest:
                return
            writer = self._writer(tf, state.consumed, None)
            result = await append(self.conn, key, [Entry(dumps_entry(redacted), redacted)], writer)
            await self.conn.execute(
                "UPDATE push_files SET meta_digest = %s, transcript_ref = %s"
                " WHERE host = %s AND config_dir = %s AND path = %s",
                [digest, result.transcript_ref, self.host, str(tf.root), str(tf.path)],
            )


async def push(dsn: str, options: PushOptions, progress: Progress | None = None) -> PushStats:
    """Push every selected transcript to the store at ``dsn``; ``progress(done, total)``
    is called in bytes of files handled."""
    import psycopg

    started = time.monotonic()
    checked_ns = time.time_ns()
    files = select_files(options)
    memo = PrefixMemo(options.memo_path)
    async with await psycopg.AsyncConnection.connect(
        connection_string(dsn), autocommit=True
    ) as conn:
        if options.dry_run:
            from sessiondex.store.schema import current_version

            usable = await current_version(conn) is not None
            pusher = Pusher(conn if usable else None, options, memo, checked_ns)
        else:
            await migrate(conn)
            # Each offset commits with the lines it covers: a commit lost in a server
            # crash loses both, and the next push sends them again. So push need not
            # wait for its commits to reach the disk (the SDK store's appends do).
            await conn.execute("SET synchronous_commit = off")
            pusher = Pusher(conn, options, memo, checked_ns)
        await pusher.load_known()
        total = sum(tf.size for tf in files)
        done = 0
        try:
            for tf in files:
                pusher.stats.files_seen += 1
                await pusher.push_file(tf)
                done += tf.size
                if progress is not None:
                    progress(done, total)
            if options.project_keys is None and options.since_ms is None:
                memo.forget_others(options.roots, {str(tf.path) for tf in files})
        finally:
            if not options.dry_run:  # a dry run writes nothing, here either
                memo.save()  # what was learnt holds even when the push stopped early
    pusher.stats.seconds = time.monotonic() - started
    return pusher.stats


def run_push(dsn: str, options: PushOptions, progress: Progress | None = None) -> PushStats:
    """:func:`push` for synchronous callers (the CLI)."""
    return asyncio.run(push(dsn, options, progress))
