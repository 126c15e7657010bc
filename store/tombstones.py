"""Deleting from the team store, and remembering it so that ``push`` does not undo it.

A delete (``PostgresSessionStore.delete``, the SDK's ``delete_session_via_store``)
removes the session's rows, and with them the ``push_files`` rows that said what each
machine had sent of it (they reference its transcripts). Without a trace of the delete,
the next ``push`` from any machine that still has the transcript saw a file never sent
and sent it again, whole: a user who deleted a session for a secret in its prose got it
back, silently. So each delete leaves a row in ``deleted_sessions`` (schema migration
8): the SDK's key (a main key, subpath '', stands for the whole session, its subagents
too), who deleted it, when. ``push`` leaves such transcripts out and counts them;
``push --resend-deleted ID`` is the deliberate way back, and lifts the tombstone; its
ID is read as the CLI reads IDs (:func:`resend_sessions`).

An SDK app that appends to the key afterwards is stored as it asks (the protocol's
rule: the key starts afresh with the new entries), and the tombstone stays: the app's
own mirror sends what it writes, and all a push could add is the lines deleted.

A delete and a push's chunk of the same session take one transaction-scoped advisory
lock (:func:`lock_session`), so they run one after the other: a push that has begun a
file when the delete commits sees the tombstone at its next chunk, and a delete never
waits on a push's ``push_files`` row while the push waits on the session row it holds
(a deadlock, before).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.objects import iso_ms
from sessiondex.store.write import MAIN_SUBPATH, Key

if TYPE_CHECKING:
    from psycopg import AsyncConnection

#: The migration that made ``deleted_sessions`` (store/schema.py).
TOMBSTONES_VERSION = 8

#: The keys of each tombstone :func:`list_tombstones` returns, in order (``store
#: deleted --format json|jsonl|csv``).
TOMBSTONE_FIELDS = (
    "session_id",
    "project_key",
    "subpath",
    "deleted_at",
    "deleted_by_user",
    "deleted_by_host",
)

# The class of pg_advisory_xact_lock(int, int) keys taken per session: the two-key
# space does not overlap the one-key space of the migration lock (schema.py).
SESSION_LOCK_CLASS = 0x5E55


async def lock_session(conn: AsyncConnection[Any], project_key: str, session_id: str) -> None:
    """Serialize with any delete or push chunk of the same session until the caller's
    transaction ends (a hash collision only makes an unrelated one wait)."""
    await conn.execute(
        "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
        [SESSION_LOCK_CLASS, f"{project_key}/{session_id}"],
    )


async def delete_key(
    conn: AsyncConnection[Any], key: Key, user: str | None, host: str | None
) -> None:
    """Delete ``key`` (the main key: the whole session, every derived row) and record the
    tombstone, in the caller's transaction. A key never stored is recorded too: the
    transcript may be on its way from a push, or pushed tomorrow from elsewhere."""
    await lock_session(conn, key.project_key, key.session_id)
    if key.is_main:
        await conn.execute(
            "DELETE FROM sessions WHERE project_key = %s AND session_id = %s",
            [key.project_key, key.session_id],
        )
    else:
        await conn.execute(
            "DELETE FROM transcripts t USING sessions s WHERE t.session_ref = s.id"
            " AND s.project_key = %s AND s.session_id = %s AND t.subpath = %s",
            [key.project_key, key.session_id, key.subpath],
        )
    await conn.execute(
        "INSERT INTO deleted_sessions (project_key, session_id, subpath, deleted_by_user,"
        " deleted_by_host) VALUES (%s, %s, %s, %s, %s)"
        " ON CONFLICT (project_key, session_id, subpath) DO UPDATE SET"
        " deleted_by_user = EXCLUDED.deleted_by_user,"
        " deleted_by_host = EXCLUDED.deleted_by_host, deleted_at = now()",
        [key.project_key, key.session_id, key.subpath, user, host],
    )


class AmbiguousResend(Exception):
    """A ``--resend-deleted`` prefix that starts the IDs of several deleted sessions."""

    def __init__(self, typed: str, candidates: list[str]) -> None:
        super().__init__(
            f"--resend-deleted {typed}: {len(candidates)} deleted sessions start with it"
            f" ({', '.join(candidates)}); give more of the ID"
        )
        self.candidates = candidates


def resend_sessions(
    deleted: set[tuple[str, str, str]], typed: Iterable[str]
) -> tuple[frozenset[str], list[str]]:
    """The deleted sessions (IDs in lower case) that the ``--resend-deleted`` values
    ``typed`` name, and the values that name none. A session ID names its session in
    any case, and a prefix of one (query/resolve.py ``is_id_prefix``: 8 or more hex
    digits) names the deleted session whose ID it alone starts, as ``show`` or
    ``resume`` read them; a prefix of several raises :class:`AmbiguousResend` (the
    push has sent nothing yet). ``deleted``: :func:`deleted_keys`."""
    sessions = {session_id.lower() for _, session_id, _ in deleted}
    named: set[str] = set()
    unknown: list[str] = []
    for value in typed:
        found = ids_named(sessions, value)
        if len(found) > 1:
            raise AmbiguousResend(value, found)
        if found:
            named.add(found[0])
        else:
            unknown.append(value)
    return frozenset(named), unknown


def ids_named(sessions: set[str], typed: str) -> list[str]:
    """Which of the deleted sessions ``sessions`` (IDs in lower case) ``typed`` names, as
    ``show`` reads an ID: the session ID in any case, or else every ID that a prefix of
    8 or more hex digits (query/resolve.py ``is_id_prefix``) starts, sorted."""
    from sessiondex.query.resolve import is_id_prefix

    wanted = typed.lower()
    if wanted in sessions:
        return [wanted]
    return sorted(s for s in sessions if s.startswith(wanted)) if is_id_prefix(typed) else []


def covers(deleted: set[tuple[str, str, str]], key: Key) -> bool:
    """Whether a tombstone in ``deleted`` (as :func:`deleted_keys` returns) stands for
    ``key``: its own, or its session's."""
    return (key.project_key, key.session_id, MAIN_SUBPATH) in deleted or (
        key.project_key,
        key.session_id,
        key.subpath,
    ) in deleted


async def deleted_keys(conn: AsyncConnection[Any]) -> set[tuple[str, str, str]]:
    """Every tombstone, read once at the start of a push; a store not migrated to them
    yet (a dry run does not migrate) has none."""
    cur = await conn.execute("SELECT to_regclass('deleted_sessions') IS NOT NULL")
    row = await cur.fetchone()
    if not row or not row[0]:
        return set()
    cur = await conn.execute("SELECT project_key, session_id, subpath FROM deleted_sessions")
    return {(str(r[0]), str(r[1]), str(r[2])) for r in await cur.fetchall()}


async def still_deleted(conn: AsyncConnection[Any], key: Key, *, resend: bool) -> bool:
    """Within a push's transaction, before it writes anything of ``key``: take the
    session's lock, then say whether a tombstone covers the key now (a delete may have
    committed since :func:`deleted_keys`). ``resend``: lift the session's tombstones
    instead (``push --resend-deleted``), and go on."""
    await lock_session(conn, key.project_key, key.session_id)
    if resend:
        await conn.execute(
            "DELETE FROM deleted_sessions WHERE project_key = %s AND session_id = %s",
            [key.project_key, key.session_id],
        )
        return False
    cur = await conn.execute(
        "SELECT EXISTS (SELECT 1 FROM deleted_sessions WHERE project_key = %s"
        " AND session_id = %s AND subpath IN (%s, %s))",
        [key.project_key, key.session_id, MAIN_SUBPATH, key.subpath],
    )
    row = await cur.fetchone()
    return bool(row and row[0])


async def deleted_session(conn: AsyncConnection[Any], typed: str) -> list[dict[str, Any]]:
    """The tombstones of the whole session ``typed`` names among the deleted ones (an ID,
    or a prefix that starts one deleted session's ID alone: :func:`ids_named`), newest
    first, one per project it was deleted from; none when it names no deleted session,
    or several. ``store delete`` says with them that what it was asked for is deleted
    already. Reads only, as :func:`list_tombstones`."""
    whole = [row for row in await list_tombstones(conn) if row["subpath"] == MAIN_SUBPATH]
    found = ids_named({str(row["session_id"]).lower() for row in whole}, typed)
    if len(found) != 1:
        return []
    return [row for row in whole if str(row["session_id"]).lower() == found[0]]


async def list_tombstones(conn: AsyncConnection[Any]) -> list[dict[str, Any]]:
    """Every tombstone, newest first (``store deleted``): the SDK key it stands for
    (``subpath`` '' for the whole session), ``deleted_at`` as ISO-8601 UTC, and who
    deleted it when the deleting process knew (null otherwise). Reads only: a store
    without tombstones yet raises :class:`~sessiondex.store.schema.SchemaTooOld` (a
    listing is no reason to migrate someone's database)."""
    from sessiondex.store.schema import check_readable

    await check_readable(conn, TOMBSTONES_VERSION)
    cur = await conn.execute(
        "SELECT session_id, project_key, subpath,"
        " (extract(epoch FROM deleted_at) * 1000)::bigint, deleted_by_user, deleted_by_host"
        " FROM deleted_sessions"
        " ORDER BY deleted_at DESC, project_key, session_id, subpath"
    )
    return [
        dict(zip(TOMBSTONE_FIELDS, (sid, key, sub, iso_ms(ms), user, host)))
        for sid, key, sub, ms, user, host in await cur.fetchall()
    ]
