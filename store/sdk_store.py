"""``PostgresSessionStore``: the Agent SDK's ``SessionStore`` protocol on PostgreSQL.

An SDK application passes ``session_store=PostgresSessionStore(dsn)``; the SDK mirrors
every transcript line into it, resumes from it, and lists and deletes through it. The
entries land in the team store's tables, so they are also what ``push`` writes and what
team search reads. The rules (order, idempotency, mtimes) are in :mod:`.write`.

The protocol is async; so is this store (psycopg's ``AsyncConnectionPool``). A pool
belongs to one event loop, so the store keeps one per running loop and opens it on
first use: the constructor does no I/O and can run before any loop exists, as
``ClaudeAgentOptions(session_store=...)`` usually is. asyncio only (psycopg has no trio
support).
"""

from __future__ import annotations

import asyncio
import getpass
import socket
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sessiondex.store.schema import migrate
from sessiondex.store.tombstones import delete_key
from sessiondex.store.write import Entry, Key, Writer, append, dumps_entry

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool


class UnstorableKey(ValueError):
    """A session key the store cannot hold: PostgreSQL text has no NUL character.
    Mapped to a stand-in it would be another key's (``a\\0b`` and ``a\\ufffdb`` one
    session), so writing one is this error, and reading one answers as for a key never
    written (none can have been)."""


def _storable(key: Any) -> Key:
    """``key`` as :class:`Key`, or :class:`UnstorableKey` naming the field with a NUL."""
    for field in ("project_key", "session_id", "subpath"):
        value = key.get(field)
        if isinstance(value, str) and "\x00" in value:
            raise UnstorableKey(
                f"session key {field} {value!r} holds a NUL character, which PostgreSQL"
                " text cannot store"
            )
    return Key.from_sdk(key)


def _has_nul(value: Any) -> bool:
    return isinstance(value, str) and "\x00" in value


def _summary_fold() -> Any:
    """The SDK's ``fold_session_summary`` when the SDK is installed (it is, for an app
    that uses this store); without it no summaries are kept, and the SDK's
    ``list_sessions_from_store`` derives them by loading, as for any store."""
    try:
        from claude_agent_sdk._internal.session_summary import fold_session_summary
    except ImportError:  # pragma: no cover - the SDK is a test dependency
        return None
    return fold_session_summary


def local_identity() -> tuple[str | None, str | None]:
    """``(user, host)`` of this process, recorded on what it writes."""
    try:
        user: str | None = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        user = None
    return user, socket.gethostname() or None


class PostgresSessionStore:
    """A ``SessionStore`` (claude-agent-sdk) kept in PostgreSQL.

    ``dsn`` is a libpq connection string or ``postgresql://`` URL. The schema is
    created or migrated on first use. Use ``await store.close()`` (or ``async with``)
    to close the pool of the current event loop.

    Entries are stored exactly (JSON text as given, see :mod:`.schema`); appends are
    ordered, and idempotent by ``uuid``; mtimes are epoch ms, strictly increasing per
    key; any number of processes may write at once.
    """

    def __init__(self, dsn: str, *, max_size: int = 10) -> None:
        self.dsn = dsn
        self.max_size = max_size
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncConnectionPool] = (
            weakref.WeakKeyDictionary()
        )
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self._fold = _summary_fold()
        user, host = local_identity()
        self._writer = Writer(source="sdk", user=user, host=host)

    def __repr__(self) -> str:
        return f"PostgresSessionStore({_redacted_dsn(self.dsn)!r})"

    async def _pool(self) -> AsyncConnectionPool:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is not None:
            return pool
        lock = self._locks.setdefault(loop, asyncio.Lock())
        async with lock:
            pool = self._pools.get(loop)
            if pool is None:
                pool = await open_pool(self.dsn, max_size=self.max_size)
                self._pools[loop] = pool
        return pool

    async def close(self) -> None:
        """Close this event loop's pool (the next call opens a new one)."""
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> PostgresSessionStore:
        await self._pool()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ protocol
    async def append(self, key: Any, entries: list[Any]) -> None:
        """Persist ``entries`` after the key's earlier ones; a uuid already stored for
        the key is skipped (a retried batch). ``append(key, [])`` changes nothing.

        A deleted key starts afresh, and its tombstone stays: push still leaves the
        local transcript (the deleted lines) out (:mod:`.tombstones`)."""
        if not entries:
            return
        k = _storable(key)
        prepared = [Entry.from_value(e) for e in entries]
        pool = await self._pool()
        async with pool.connection() as conn, conn.transaction():
            await append(conn, k, prepared, self._writer, fold_summary=self._fold)

    async def load(self, key: Any) -> list[Any] | None:
        """Every entry of ``key`` in append order; None if it was never written (as a
        key holding a NUL never was: :class:`UnstorableKey`)."""
        try:
            k = _storable(key)
        except UnstorableKey:
            return None
        pool = await self._pool()
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT e.id, e.entry FROM sessions s"
                " JOIN transcripts t ON t.session_ref = s.id AND t.subpath = %s"
                " LEFT JOIN entries e ON e.transcript_ref = t.id"
                " WHERE s.project_key = %s AND s.session_id = %s ORDER BY e.id",
                [k.subpath, k.project_key, k.session_id],
            )
            rows = await cur.fetchall()
        if not rows:
            return None
        # A transcript without entries is one row of NULLs; an entry that is JSON null
        # has an id (it was dropped with them, where the SDK's stores give it back).
        return [entry for entry_id, entry in rows if entry_id is not None]

    async def list_sessions(self, project_key: str) -> list[dict[str, Any]]:
        """Main transcripts of ``project_key`` with their mtimes (epoch ms)."""
        if _has_nul(project_key):  # no such project can be stored
            return []
        pool = await self._pool()
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT s.session_id, t.mtime_ms FROM sessions s"
                " JOIN transcripts t ON t.session_ref = s.id AND t.subpath = ''"
                " WHERE s.project_key = %s",
                [project_key],
            )
            return [{"session_id": sid, "mtime": int(mtime)} for sid, mtime in await cur.fetchall()]

    async def list_session_summaries(self, project_key: str) -> list[dict[str, Any]]:
        """The summaries folded in ``append`` (stored verbatim), main transcripts only.

        A session last written by ``push`` has none, or an older one: the SDK sees it
        as missing or stale (its mtime is below ``list_sessions``') and loads it."""
        if _has_nul(project_key):
            return []
        pool = await self._pool()
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT t.sdk_summary FROM sessions s"
                " JOIN transcripts t ON t.session_ref = s.id AND t.subpath = ''"
                " WHERE s.project_key = %s AND t.sdk_summary IS NOT NULL",
                [project_key],
            )
            return [row[0] for row in await cur.fetchall()]

    async def delete(self, key: Any) -> None:
        """Delete a key; the main key takes the whole session (subkeys, derived rows).
        The delete is remembered (:mod:`.tombstones`): ``push`` does not send it again."""
        await self.delete_all([key])

    async def delete_all(self, keys: Iterable[Any]) -> None:
        """Delete several keys as :meth:`delete` does, in one transaction: all of them
        or, when the store refuses one (a lock timeout, a dropped connection, a
        trigger), none. ``store delete --all-copies`` deletes a session's copies in
        several projects this way; one transaction per copy left some deleted and some
        not after a failure half way.

        The sessions' locks are taken in one order (sorted keys), so two of these, or
        one and a push (one session per transaction), cannot wait on each other.
        A key holding a NUL was never stored: nothing to delete."""
        storable = []
        for key in keys:
            try:
                storable.append(_storable(key))
            except UnstorableKey:
                continue
        chosen = sorted(
            set(storable),
            key=lambda k: (k.project_key, k.session_id, k.subpath),
        )
        if not chosen:
            return
        pool = await self._pool()
        async with pool.connection() as conn, conn.transaction():
            for k in chosen:
                await delete_key(conn, k, self._writer.user, self._writer.host)

    async def list_subkeys(self, key: Any) -> list[str]:
        """Subpaths stored under a session (subagent transcripts), sorted."""
        if _has_nul(key["project_key"]) or _has_nul(key["session_id"]):
            return []
        pool = await self._pool()
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT t.subpath FROM sessions s JOIN transcripts t ON t.session_ref = s.id"
                " WHERE s.project_key = %s AND s.session_id = %s AND t.subpath <> ''"
                " ORDER BY t.subpath",
                [key["project_key"], key["session_id"]],
            )
            return [row[0] for row in await cur.fetchall()]


async def open_pool(dsn: str, *, max_size: int = 10) -> AsyncConnectionPool:
    """An open pool on ``dsn`` (autocommit connections; writers open transactions),
    with the schema migrated."""
    from psycopg_pool import AsyncConnectionPool

    from sessiondex.store.dsn import connection_string

    pool = AsyncConnectionPool(
        connection_string(dsn),  # any-case scheme, a connect timeout: as push and reads
        min_size=1,
        max_size=max_size,
        open=False,
        kwargs={"autocommit": True},
    )
    await pool.open(wait=True)
    try:
        async with pool.connection() as conn:
            await migrate(conn)
    except BaseException:
        await pool.close()
        raise
    return pool


def _redacted_dsn(dsn: str) -> str:
    """The DSN without its password, for reprs and messages."""
    from sessiondex.store.dsn import hide_password

    return hide_password(dsn)


__all__ = ["PostgresSessionStore", "dumps_entry", "local_identity", "open_pool"]
