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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.derive import SessionState, message_texts
from sessiondex.indexer.ingest import _derived_texts
from sessiondex.indexer.text import fts_text
from sessiondex.store.schema import TS_CONFIG
from sessiondex.transcripts.pr_urls import PullRequest
from sessiondex.transcripts.records import timestamp_ms

if TYPE_CHECKING:
    from psycopg import AsyncConnection

MAIN_SUBPATH = ""

# Search weights of the session row (A highest), following query/search.py's bm25
# weights: names above labels above descriptions above the directory.
SEARCH_WEIGHTS = (
    ("A", ("custom_title", "ai_title", "agent_name")),
    ("B", ("tag", "branches_text", "pr_text")),
    ("C", ("summary", "first_prompt", "last_prompt")),
    ("D", ("cwd",)),
)

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

    @property
    def uuid(self) -> str | None:
        value = self.record.get("uuid")
        return value if isinstance(value, str) and value else None

    @classmethod
    def from_value(cls, value: Any) -> Entry:
        record = value if isinstance(value, dict) else {}
        return cls(dumps_entry(value), record)


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


_NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"


async def session_ref(conn: AsyncConnection[Any], project_key: str, session_id: str) -> int:
    """The session row's id, created on first sight (a subagent may come first)."""
    cur = await conn.execute(
        "INSERT INTO sessions (project_key, session_id) VALUES (%s, %s)"
        " ON CONFLICT DO NOTHING RETURNING id",
        [project_key, session_id],
    )
    row = await cur.fetchone()
    if row is None:
        cur = await conn.execute(
            "SELECT id FROM sessions WHERE project_key = %s AND session_id = %s",
            [project_key, session_id],
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def lock_transcript(
    conn: AsyncConnection[Any], key: Key
) -> tuple[int, int, int, dict[str, Any] | None]:
    """``(session_ref, transcript_ref, mtime_ms, sdk_summary)`` with the transcript row
    locked until the transaction ends and its mtime bumped (strictly increasing)."""
    sref = await session_ref(conn, key.project_key, key.session_id)
    cur = await conn.execute(
        f"INSERT INTO transcripts (session_ref, subpath, mtime_ms) VALUES (%s, %s, {_NOW_MS})"
        " ON CONFLICT (session_ref, subpath) DO UPDATE"
        " SET mtime_ms = greatest(transcripts.mtime_ms + 1, EXCLUDED.mtime_ms)"
        " RETURNING id, mtime_ms, sdk_summary",
        [sref, key.subpath],
    )
    row = await cur.fetchone()
    assert row is not None
    return sref, int(row[0]), int(row[1]), row[2]


async def _fresh(
    conn: AsyncConnection[Any], transcript_ref: int, entries: Sequence[Entry]
) -> list[Entry]:
    """The entries not stored yet: a uuid already stored for this key (or earlier in
    the batch) is a retry; entries without a uuid are always new. Exact because the
    caller holds the transcript's row lock: nobody else inserts for this key meanwhile."""
    uuids = [e.uuid for e in entries if e.uuid is not None]
    seen: set[str] = set()
    if uuids:
        cur = await conn.execute(
            "SELECT uuid FROM entries WHERE transcript_ref = %s AND uuid = ANY(%s)",
            [transcript_ref, uuids],
        )
        seen = {row[0] for row in await cur.fetchall()}
    fresh = []
    for entry in entries:
        uuid = entry.uuid
        if uuid is not None:
            if uuid in seen:
                continue
            seen.add(uuid)
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
    sref, tref, mtime_ms, summary = await lock_transcript(conn, key)
    fresh = await _fresh(conn, tref, entries)
    size = sum(len(e.text.encode("utf-8")) for e in fresh)
    if fresh:
        async with conn.cursor() as cur:
            async with cur.copy("COPY entries (transcript_ref, uuid, entry) FROM STDIN") as copy:
                for entry in fresh:
                    await copy.write_row((tref, entry.uuid, entry.text))
    new_summary = None
    if key.is_main and fold_summary is not None and fresh:
        sdk_key = {"project_key": key.project_key, "session_id": key.session_id}
        new_summary = fold_summary(summary, sdk_key, [e.record for e in fresh])
        new_summary["mtime"] = mtime_ms
    await conn.execute(
        "UPDATE transcripts SET entry_count = entry_count + %s, byte_count = byte_count + %s,"
        " sdk_summary = coalesce(%s::json, sdk_summary) WHERE id = %s",
        [len(fresh), size, None if new_summary is None else dumps_entry(new_summary), tref],
    )
    await _derive(conn, key, sref, tref, fresh, include_tools)
    if key.is_main:
        await _stamp_session(conn, sref, writer, mtime_ms, size)
    return Appended(sref, tref, mtime_ms, len(fresh), len(entries) - len(fresh))


async def _stamp_session(
    conn: AsyncConnection[Any], sref: int, writer: Writer, mtime_ms: int, size: int
) -> None:
    """Who wrote the session last, from where, and its size and mtime: a pushed file's
    own, or for an SDK write the store's clock and the bytes stored."""
    await conn.execute(
        "UPDATE sessions SET source = %s, pushed_by_user = %s, pushed_by_host = %s,"
        " pushed_at = now(), config_dir = coalesce(%s, config_dir),"
        " file_path = coalesce(%s, file_path), origin_url = coalesce(%s, origin_url),"
        " mtime_ms = coalesce(%s, %s),"
        " file_size = coalesce(%s, file_size + %s) WHERE id = %s",
        [
            writer.source,
            writer.user,
            writer.host,
            writer.config_dir,
            writer.file_path,
            writer.origin_url,
            writer.file_mtime_ms,
            mtime_ms,
            writer.file_size,
            size,
            sref,
        ],
    )


_STATE_COLUMNS = tuple(SessionState().columns())


async def _derive(
    conn: AsyncConnection[Any],
    key: Key,
    sref: int,
    tref: int,
    fresh: Sequence[Entry],
    include_tools: bool,
) -> None:
    """Fold new entries into ``sessions`` (main transcript only, as SQLite does),
    ``messages``, ``branches``, ``pr_links`` and ``pr_mentions``."""
    if not fresh:
        return
    state: SessionState | None = None
    known_branches: set[str] = set()
    known_links: set[str] = set()
    if key.is_main:
        cur = await conn.execute(
            f"SELECT {', '.join(_STATE_COLUMNS)} FROM sessions WHERE id = %s", [sref]
        )
        row = await cur.fetchone()
        state = SessionState.from_row(dict(zip(_STATE_COLUMNS, row or ())))
        cur = await conn.execute("SELECT branch FROM branches WHERE session_ref = %s", [sref])
        known_branches = {r[0] for r in await cur.fetchall()}
        cur = await conn.execute("SELECT url FROM pr_links WHERE session_ref = %s", [sref])
        known_links = {r[0] for r in await cur.fetchall()}
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
    if messages:
        async with conn.cursor() as cur:
            async with cur.copy(
                "COPY messages (session_ref, transcript_ref, uuid, type, ts_ms, text) FROM STDIN"
            ) as copy:
                for message in messages:
                    await copy.write_row(message)
    if mentions:
        async with conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO pr_mentions (session_ref, transcript_ref, url, number, repository,"
                " host, provider) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [
                    (sref, tref, p.url, p.number, p.repository, p.host, p.provider)
                    for p in mentions.values()
                ],
            )
    if state is not None:
        state.finish()
        await _write_state(conn, sref, tref, state)


async def _write_state(
    conn: AsyncConnection[Any], sref: int, tref: int, state: SessionState
) -> None:
    async with conn.cursor() as cur:
        if state.new_branches:
            await cur.executemany(
                "INSERT INTO branches (session_ref, branch) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                [(sref, b) for b in state.new_branches],
            )
        if state.new_pr_links:
            await cur.executemany(
                "INSERT INTO pr_links (session_ref, transcript_ref, url, number, repository,"
                " host, provider) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                [
                    (sref, tref, p.url, p.number, p.repository, p.host, p.provider)
                    for p in state.new_pr_links
                ],
            )
        await cur.execute("SELECT branch FROM branches WHERE session_ref = %s ORDER BY id", [sref])
        branches = [r[0] for r in await cur.fetchall()]
        await cur.execute(
            "SELECT url, number, repository FROM pr_links WHERE session_ref = %s ORDER BY id",
            [sref],
        )
        links = [(r[0], r[1], r[2]) for r in await cur.fetchall()]
    row = state.columns()
    row["branches_text"], row["pr_text"] = _derived_texts(branches, links)
    weighted = []
    params: list[Any] = []
    for weight, columns in SEARCH_WEIGHTS:
        text = " ".join(fts_text(row[c]) for c in columns if isinstance(row.get(c), str))
        weighted.append(f"setweight(to_tsvector('{TS_CONFIG}', %s), '{weight}')")
        params.append(text)
    assignments = ", ".join(f"{column} = %s" for column in row)
    await conn.execute(
        f"UPDATE sessions SET {assignments}, search = {' || '.join(weighted)} WHERE id = %s",
        [*row.values(), *params, sref],
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
