"""Appending entries to the team store, and keeping its derived rows in step.

Both writers go through :func:`append`: the Agent SDK's ``SessionStore.append`` (entries
as the app sent them) and ``sessiondex push`` (lines of local transcripts, redacted).
One transaction per call does the whole job, so a reader never sees an entry without
its derived rows, and a killed writer leaves nothing half done.

The rules, and why:

* **Order.** ``entries.id`` is a sequence, and every append first locks its transcript
  row (the upsert that bumps ``mtime_ms``), so appends to one key are serialized and
  ids grow in commit order: ``load`` returns entries in append order, across processes.
* **Idempotency.** An entry with a ``uuid`` is stored at most once per key: a retried
  batch, or the same session pushed from two machines, adds nothing twice. Entries
  without a ``uuid`` (titles, tags, mode markers) are appended as given: that is the
  SDK's rule (``SessionStore.append``), and those records are last-wins, so a repeated
  one changes no derived field. ``push`` never relies on it: its per-file offsets make
  each line travel once.
* **mtime.** Epoch milliseconds of the server's clock, and strictly greater than the
  key's previous mtime (two appends within one millisecond still differ), as the
  protocol asks.
* **Derived rows** are folded from the new entries only, with the SQLite index's own
  fold (``indexer/derive.py``), so both backends hold the same fields.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.derive import SessionState, message_texts
from sessiondex.indexer.ingest import derived_texts
from sessiondex.indexer.text import fts_text
from sessiondex.store.bulk_copy import copy_rows, no_nul
from sessiondex.store.vectors import insert_messages, session_vector
from sessiondex.transcripts.pr_urls import PullRequest
from sessiondex.transcripts.reader import without_lone_surrogates
from sessiondex.transcripts.records import timestamp_ms

if TYPE_CHECKING:
    from psycopg import AsyncConnection

MAIN_SUBPATH = ""

# Search weights of the session row (A highest), following query/search.py's bm25
# weights: names above labels above descriptions above the directory.
SummaryFold = Callable[[Any, dict[str, Any], list[Any]], dict[str, Any]]


@dataclass(frozen=True)
class Key:
    """The SDK's ``SessionKey``; ``subpath`` '' is the main transcript."""

    project_key: str
    session_id: str
    subpath: str = MAIN_SUBPATH

    @classmethod
    def from_sdk(cls, key: Any) -> Key:
        # An empty subpath is invalid in the SDK; like its InMemorySessionStore we read
        # it as the main transcript rather than fail a mirror batch over it.
        return cls(key["project_key"], key["session_id"], key.get("subpath") or MAIN_SUBPATH)

    @property
    def is_main(self) -> bool:
        return self.subpath == MAIN_SUBPATH


@dataclass
class Entry:
    """One entry to append: ``text`` is what is stored, ``record`` its parsed value."""

    text: str
    record: dict[str, Any]
    extra_mentions: list[PullRequest] = field(default_factory=list)
    # Byte offset of the line in its transcript (``push``; an SDK append has none).
    offset: int | None = None
    # The value as an SDK app handed it over (``record`` may differ: lone surrogates made
    # U+FFFD); None for a pushed line, whose ``record`` is the line as read.
    given: Any = None

    @property
    def uuid(self) -> str | None:
        value = self.record.get("uuid")
        return value if isinstance(value, str) and value else None

    @classmethod
    def from_value(cls, value: Any) -> Entry:
        """An entry as an SDK app hands it over: stored exactly (a lone surrogate stays
        an escape in ``text``), derived from a copy whose lone surrogates are U+FFFD, as
        a transcript line is read (PostgreSQL takes no lone surrogate in a text column:
        the whole batch failed, the good entries beside it too)."""
        record = without_lone_surrogates(value) if isinstance(value, dict) else {}
        return cls(dumps_entry(value), record, given=value)


@dataclass(frozen=True)
class Writer:
    """Who wrote, from where: recorded on the session row."""

    source: str  # 'sdk' or 'push'
    user: str | None
    host: str | None
    config_dir: str | None = None
    file_path: str | None = None
    file_mtime_ms: int | None = None
    file_size: int | None = None
    origin_url: str | None = None


@dataclass
class Appended:
    session_ref: int
    transcript_ref: int
    mtime_ms: int
    inserted: int
    skipped: int


def dumps_entry(value: Any) -> str:
    """JSON text for an entry, compact, UTF-8 where it can be.

    stdlib ``json`` rather than orjson: orjson writes NaN as ``null`` (the round trip
    would change the value) where json refuses it; a lone surrogate cannot travel as
    UTF-8, so such an entry is written with ``\\u`` escapes, which load back the same.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    except ValueError:  # NaN, 1e400: no JSON spelling PostgreSQL's json takes
        return dumps_entry(_finite(value))


def _finite(value: Any) -> Any:
    """``value`` with NaN and the infinities as null, as JavaScript's JSON.stringify
    writes them (Claude Code never writes them; a line that holds one came from
    elsewhere, and must not stop a push)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


_NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"


@dataclass
class _Locked:
    session_ref: int
    transcript_ref: int
    mtime_ms: int
    sdk_summary: dict[str, Any] | None
    new_transcript: bool


# One statement: create or lock the session row (with a time from the start: a subagent
# may come first, and a reader orders by it), then create or lock the transcript's
# and bump its mtime. Every append of a session thus queues on the session row (a
# subagent's too), always in the same order (session, then transcript): no deadlock.
_LOCK = f"""
WITH s AS (
    INSERT INTO sessions (project_key, session_id, mtime_ms) VALUES (%s, %s, {_NOW_MS})
    ON CONFLICT (project_key, session_id) DO UPDATE SET project_key = EXCLUDED.project_key
    RETURNING id
)
INSERT INTO transcripts (session_ref, subpath, mtime_ms) SELECT id, %s, {_NOW_MS} FROM s
ON CONFLICT (session_ref, subpath) DO UPDATE
    SET mtime_ms = greatest(transcripts.mtime_ms + 1, EXCLUDED.mtime_ms)
RETURNING session_ref, id, mtime_ms, sdk_summary, xmax = 0
"""


async def lock_transcript(conn: AsyncConnection[Any], key: Key) -> _Locked:
    """The key's rows, locked until the transaction ends, its mtime bumped (strictly
    increasing), created on first sight (a subagent may come before its session)."""
    cur = await conn.execute(_LOCK, [key.project_key, key.session_id, key.subpath])
    row = await cur.fetchone()
    assert row is not None
    return _Locked(int(row[0]), int(row[1]), int(row[2]), row[3], bool(row[4]))


async def _fresh(
    conn: AsyncConnection[Any], locked: _Locked, entries: Sequence[Entry]
) -> list[Entry]:
    """The entries not stored yet: a uuid already stored for this key (or earlier in
    the batch) is a retry; an entry without a uuid is new unless it is a pushed line
    stored before at the same offset with the same text (another copy of the file,
    :data:`~sessiondex.store.schema.M003_LINE_OFFSETS`). Exact because the caller holds
    the transcript's row lock: nobody else inserts for this key meanwhile."""
    uuids = [e.uuid for e in entries if e.uuid is not None]
    offsets = [e.offset for e in entries if e.uuid is None and e.offset is not None]
    seen: set[str] = set()
    lines: set[tuple[int, str]] = set()
    if uuids and not locked.new_transcript:
        cur = await conn.execute(
            "SELECT uuid FROM entries WHERE transcript_ref = %s AND uuid = ANY(%s)",
            [locked.transcript_ref, uuids],
        )
        seen = {row[0] for row in await cur.fetchall()}
    if offsets and not locked.new_transcript:
        cur = await conn.execute(
            "SELECT line_offset, entry::text FROM entries WHERE transcript_ref = %s"
            " AND uuid IS NULL AND line_offset = ANY(%s)",
            [locked.transcript_ref, offsets],
        )
        lines = {(int(row[0]), str(row[1])) for row in await cur.fetchall()}
    fresh = []
    for entry in entries:
        uuid = entry.uuid
        if uuid is not None:
            if uuid in seen:
                continue
            seen.add(uuid)
        elif entry.offset is not None and (entry.offset, entry.text) in lines:
            continue
        fresh.append(entry)
    return fresh


async def append(
    conn: AsyncConnection[Any],
    key: Key,
    entries: Sequence[Entry],
    writer: Writer,
    *,
    include_tools: bool = False,
    fold_summary: SummaryFold | None = None,
) -> Appended:
    """Append ``entries`` to ``key`` and fold them into the derived rows.

    Run inside the caller's transaction. ``fold_summary`` is the SDK's
    ``fold_session_summary`` (main transcripts only): its result is stored verbatim,
    stamped with this append's mtime, the clock ``list_sessions`` reports.
    """
    locked = await lock_transcript(conn, key)
    sref, tref = locked.session_ref, locked.transcript_ref
    fresh = await _fresh(conn, locked, entries)
    size = sum(len(e.text.encode("utf-8")) for e in fresh)
    await copy_rows(
        conn,
        "entries",
        ("transcript_ref", "uuid", "entry", "line_offset"),
        [(tref, e.uuid, e.text, e.offset) for e in fresh],
    )
    new_summary = None
    if key.is_main and fold_summary is not None and fresh:
        sdk_key = {"project_key": key.project_key, "session_id": key.session_id}
        # The entries as given, as the SDK's own stores fold them: a lone surrogate in a
        # title is the app's to see again, not U+FFFD (the summary is JSON, which keeps it).
        given = [e.given if isinstance(e.given, dict) else e.record for e in fresh]
        new_summary = fold_summary(locked.sdk_summary, sdk_key, given)
        new_summary["mtime"] = locked.mtime_ms
    await conn.execute(
        "UPDATE transcripts SET entry_count = entry_count + %s, byte_count = byte_count + %s,"
        " sdk_summary = coalesce(%s::json, sdk_summary) WHERE id = %s",
        [len(fresh), size, None if new_summary is None else dumps_entry(new_summary), tref],
    )
    state = await _derive(conn, key, locked, fresh, include_tools)
    if key.is_main:
        await _update_session(conn, locked, state, writer, size, added=bool(fresh))
    return Appended(sref, tref, locked.mtime_ms, len(fresh), len(entries) - len(fresh))


_STATE_COLUMNS = tuple(SessionState().columns())


@dataclass
class _Folded:
    state: SessionState
    branches: list[str]  # every branch, first seen first
    links: list[tuple[str, int, str | None]]  # every PR link (url, number, repository)


async def _derive(
    conn: AsyncConnection[Any],
    key: Key,
    locked: _Locked,
    fresh: Sequence[Entry],
    include_tools: bool,
) -> _Folded | None:
    """Fold new entries into ``messages`` and ``pr_mentions``, and for the main
    transcript (as SQLite does) into the session's fields, ``branches`` and
    ``pr_links``; returns the folded session state for :func:`_update_session`."""
    if not fresh:
        return None
    sref, tref = locked.session_ref, locked.transcript_ref
    folded: _Folded | None = None
    if key.is_main:
        folded = _Folded(SessionState(), [], [])
        if not locked.new_transcript:  # a new main transcript has folded nothing yet
            cur = await conn.execute(
                f"SELECT {', '.join(_STATE_COLUMNS)},"
                " array(SELECT branch FROM branches WHERE session_ref = s.id ORDER BY id),"
                " array(SELECT ARRAY[url, number::text, repository] FROM pr_links"
                " WHERE session_ref = s.id ORDER BY id)"
                " FROM sessions s WHERE id = %s",
                [sref],
            )
            row = await cur.fetchone()
            assert row is not None
            folded.state = SessionState.from_row(dict(zip(_STATE_COLUMNS, row)))
            folded.branches = list(row[-2])
            folded.links = [(u, int(n), r) for u, n, r in row[-1]]
    state = folded.state if folded is not None else None
    known_branches = set(folded.branches) if folded is not None else set()
    known_links = {u for u, _, _ in folded.links} if folded is not None else set()
    messages: list[tuple[Any, ...]] = []
    mentions: dict[str, PullRequest] = {}
    for entry in fresh:
        record = entry.record
        if state is not None:
            state.apply(record, known_branches, known_links)
        kind = record.get("type")
        if kind == "user" or kind == "assistant":
            text, found = message_texts(record, include_tools=include_tools)
            for pr in found:
                mentions.setdefault(pr.url, pr)
            if text:
                messages.append(
                    (sref, tref, entry.uuid, kind, timestamp_ms(record), fts_text(text))
                )
        for pr in entry.extra_mentions:
            mentions.setdefault(pr.url, pr)
    await insert_messages(conn, messages)
    await _insert_prs(conn, "pr_mentions", sref, tref, list(mentions.values()))
    if folded is not None:
        folded.state.finish()
        new_branches = [no_nul(b) for b in folded.state.new_branches]
        if new_branches:
            await conn.execute(
                "INSERT INTO branches (session_ref, branch) SELECT %s, b"
                " FROM unnest(%s::text[]) WITH ORDINALITY AS t(b, o) ORDER BY o"
                " ON CONFLICT DO NOTHING",
                [sref, new_branches],
            )
        await _insert_prs(conn, "pr_links", sref, tref, folded.state.new_pr_links)
        folded.branches += new_branches
        folded.links += [(p.url, p.number, p.repository) for p in folded.state.new_pr_links]
    return folded


async def _insert_prs(
    conn: AsyncConnection[Any], table: str, sref: int, tref: int, prs: Sequence[PullRequest]
) -> None:
    if not prs:
        return
    await conn.execute(
        f"INSERT INTO {table} (session_ref, transcript_ref, url, number, repository, host,"
        " provider) SELECT %s, %s, u, n, r, h, p"
        " FROM unnest(%s::text[], %s::int[], %s::text[], %s::text[], %s::text[])"
        " WITH ORDINALITY AS t(u, n, r, h, p, o) ORDER BY o ON CONFLICT DO NOTHING",
        [
            sref,
            tref,
            [p.url for p in prs],
            [p.number for p in prs],
            [p.repository for p in prs],
            [p.host for p in prs],
            [p.provider for p in prs],
        ],
    )


async def _update_session(
    conn: AsyncConnection[Any],
    locked: _Locked,
    folded: _Folded | None,
    writer: Writer,
    size: int,
    *,
    added: bool,
) -> None:
    """One UPDATE of the session row: its folded fields and search vector (when new
    entries came), and who wrote it last, from where, its size and mtime (a pushed
    file's own; for an SDK write the store's clock and the bytes stored).

    A write that ``added`` nothing (another copy of the file, synced from a machine that
    pushed more: every line already stored) takes the row only when no file holds it yet
    (an SDK app mirrored it): else the older copy's size, mtime, path and pusher replaced
    those of the copy whose lines the store holds, and ``--user`` lost who pushed them."""
    assignments = [
        "source = %s",
        "pushed_by_user = %s",
        "pushed_by_host = %s",
        "pushed_at = now()",
        "config_dir = coalesce(%s, config_dir)",
        "file_path = coalesce(%s, file_path)",
        "origin_url = coalesce(%s, origin_url)",
        "mtime_ms = coalesce(%s, %s)",
        "file_size = coalesce(%s, file_size + %s)",
    ]
    params: list[Any] = [
        writer.source,
        writer.user,
        writer.host,
        writer.config_dir,
        writer.file_path,
        writer.origin_url,
        writer.file_mtime_ms,
        locked.mtime_ms,
        writer.file_size,
        size,
    ]
    if folded is not None:
        row = {column: no_nul(value) for column, value in folded.state.columns().items()}
        row["branches_text"], row["pr_text"] = derived_texts(folded.branches, folded.links)
        assignments += [f"{column} = %s" for column in row]
        params += row.values()
        vector, vector_params = session_vector(row)
        params += vector_params
        assignments.append(f"search = {vector}")
    claim = "" if added else " AND file_path IS NULL"
    await conn.execute(
        f"UPDATE sessions SET {', '.join(assignments)} WHERE id = %s{claim}",
        [*params, locked.session_ref],
    )


async def set_file_stat(
    conn: AsyncConnection[Any], key: Key, file_path: str, size: int, mtime_ms: int
) -> None:
    """A pushed main transcript grew by a line still being written, which is not sent:
    the session row still takes the file's size and mtime, as the local index reports
    them. Only the row of that file (another machine's copy keeps its own)."""
    if not key.is_main:
        return
    await conn.execute(
        "UPDATE sessions SET file_size = %s, mtime_ms = %s WHERE project_key = %s"
        " AND session_id = %s AND file_path = %s"
        " AND (file_size IS DISTINCT FROM %s OR mtime_ms IS DISTINCT FROM %s)",
        [size, mtime_ms, key.project_key, key.session_id, file_path, size, mtime_ms],
    )


async def reset_transcript(conn: AsyncConnection[Any], key: Key, tref: int, sref: int) -> None:
    """Forget what a transcript held (its file was rewritten and is sent again): its
    entries and derived rows, and for a main transcript the session's folded fields."""
    for table in ("entries", "messages", "pr_mentions", "pr_links"):
        await conn.execute(f"DELETE FROM {table} WHERE transcript_ref = %s", [tref])
    await conn.execute(
        "UPDATE transcripts SET entry_count = 0, byte_count = 0, sdk_summary = NULL WHERE id = %s",
        [tref],
    )
    if key.is_main:
        await conn.execute("DELETE FROM branches WHERE session_ref = %s", [sref])
        defaults = SessionState().columns()
        assignments = ", ".join(f"{column} = %s" for column in defaults)
        await conn.execute(
            f"UPDATE sessions SET {assignments}, branches_text = NULL, pr_text = NULL,"
            " search = ''::tsvector, file_size = 0 WHERE id = %s",
            [*defaults.values(), sref],
        )
