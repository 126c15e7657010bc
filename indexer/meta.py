"""The two things every writer shares: the write transaction that starts as a write, and
the ``meta`` table (settings and markers the index keeps about itself).

Every change to the index goes through :func:`immediate`. A transaction that begins as
a read (``BEGIN``, or Python's implicit one) and writes later cannot wait for the write
lock: in WAL mode, if another process committed meanwhile, SQLite fails it at once with
"database is locked", whatever the busy timeout. So a writer takes its turn
(:class:`~sessiondex.indexer.lock.WriteTurn`, fair between processes), then
``BEGIN IMMEDIATE``, and only then reads the rows it is about to change.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.lock import WriteTurn
from sessiondex.indexer.shape import DERIVATION_VERSION, MIGRATION_NAMES, MIGRATION_SET

if TYPE_CHECKING:
    from sqlite_utils import Database

# How long a writer waits for its turn before giving up with IndexBusy. Writers hold
# the turn for one file or half a second of a refresh at a time, so a long wait means
# something is stuck; readers that only want to refresh first wait much less.
WRITE_WAIT = 120.0
NOTICE_AFTER = 2.0


@dataclass
class WritePolicy:
    """How one connection waits for its write turn."""

    # Read when the policy is made (not when this module is imported), so the module
    # constants can be changed for a process (tests shorten them).
    wait: float = field(default_factory=lambda: WRITE_WAIT)
    notice: Callable[[], None] | None = None
    notice_after: float = field(default_factory=lambda: NOTICE_AFTER)
    turn: WriteTurn | None = field(default=None, repr=False)
    resolved: bool = False


_POLICIES: weakref.WeakKeyDictionary[Any, WritePolicy] = weakref.WeakKeyDictionary()


def database_path(db: Database | sqlite3.Connection) -> Path | None:
    """The file a connection has open as ``main``; None in memory."""
    row = db.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else None


def write_policy(db: Database) -> WritePolicy:
    """The connection's policy (created with the defaults on first use)."""
    policy = _POLICIES.get(db)
    if policy is None:
        policy = _POLICIES[db] = WritePolicy()
    return policy


def set_write_policy(
    db: Database,
    *,
    wait: float | None = None,
    notice: Callable[[], None] | None = None,
    notice_after: float | None = None,
) -> WritePolicy:
    """Change how long ``db`` waits for its write turn and what it says meanwhile."""
    policy = write_policy(db)
    if wait is not None:
        policy.wait = wait
    if notice is not None:
        policy.notice = notice
    if notice_after is not None:
        policy.notice_after = notice_after
    return policy


def _turn(db: Database, policy: WritePolicy) -> WriteTurn | None:
    if not policy.resolved:
        policy.resolved = True
        path = database_path(db)
        policy.turn = WriteTurn(path) if path else None  # in-memory: one connection
    return policy.turn


@contextlib.contextmanager
def write_turn(db: Database) -> Iterator[None]:
    """Hold the write turn without a transaction (``PRAGMA journal_mode``, which cannot
    run inside one)."""
    policy = write_policy(db)
    turn = _turn(db, policy)
    if turn is not None:
        turn.acquire(policy.wait, policy.notice, policy.notice_after)
    try:
        yield
    finally:
        if turn is not None:
            turn.release()


@contextlib.contextmanager
def immediate(db: Database) -> Iterator[Database]:
    """A transaction that holds the write lock from its start: the write turn, then
    ``BEGIN IMMEDIATE``. Inside another transaction of the same connection it is a
    savepoint (so a failing file rolls back alone inside a refresh's commit group).

    Raises :class:`~sessiondex.indexer.faults.IndexBusy` when the turn does not come
    within the connection's :class:`WritePolicy` wait.
    """
    conn: sqlite3.Connection = db.conn
    if conn.in_transaction:
        # One name for every level: SQLite releases or rolls back to the innermost
        # savepoint of that name, which is always this one; a name per call would be
        # a new statement to prepare for every file a refresh writes.
        name = "sessiondex_step"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield db
        except BaseException:
            # An error such as SQLITE_FULL may already have ended the transaction.
            if conn.in_transaction:
                conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
                conn.execute(f"RELEASE SAVEPOINT {name}")
            raise
        else:
            if conn.in_transaction:
                conn.execute(f"RELEASE SAVEPOINT {name}")
        return
    with write_turn(db):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Under the write lock: a newer sessiondex cannot re-derive or migrate the
            # index between this look and the commit (one small SELECT per transaction).
            refuse_newer(db)
            yield db
        except BaseException:
            conn.rollback()
            raise
        if conn.in_transaction:
            try:
                conn.execute("COMMIT")
            except BaseException:
                conn.rollback()
                raise


class IndexFromNewer(RuntimeError):
    """The index was made by a newer sessiondex: left as it is (one line)."""


# What only a newer sessiondex writes, in one read: the derivation version, and one
# applied migration this code does not know (names are identifiers: quoted inline).
_NEWER_SQL = (
    "SELECT (SELECT value FROM meta WHERE key = 'derivation_version'),"
    " (SELECT name FROM _sqlite_migrations WHERE migration_set = ? AND name NOT IN ("
    + ", ".join(f"'{name}'" for name in MIGRATION_NAMES)
    + ") LIMIT 1)"
)


def newer_reason(db: Database | sqlite3.Connection | Any) -> str | None:
    """Why the index was made by a newer sessiondex than this one, or None: a
    derivation version above :data:`DERIVATION_VERSION`, or an applied migration this
    code does not know (a newer copy's table change, which this code's writes would
    not follow). The one rule; one small SELECT, so a long-lived process can ask before
    every pass. An index without the tables yet (new) is not newer."""
    try:
        stored, unknown = db.execute(_NEWER_SQL, [MIGRATION_SET]).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return None
    if unknown is not None:
        return f"migration {unknown}, which this one does not know"
    if stored is not None and str(stored).isdigit() and int(stored) > DERIVATION_VERSION:
        return f"rules {stored}; this one has {DERIVATION_VERSION}"
    return None


def from_newer(db: Database | sqlite3.Connection | Any, why: str) -> IndexFromNewer:
    """The one line for an index :func:`newer_reason` says a newer sessiondex made."""
    path = database_path(db)
    where = str(path) if path is not None else "file"
    return IndexFromNewer(
        f"the index {where} was built by a newer sessiondex ({why}): upgrade this copy,"
        f" or stop the newer one's processes and delete {where} to rebuild it with this one"
    )


def refuse_newer(db: Database | sqlite3.Connection | Any, *, between_passes: bool = False) -> None:
    """Raise :class:`IndexFromNewer` when a newer sessiondex made the index. An older
    process still running after an upgrade (a ``watch`` service, an MCP server, an old
    virtualenv) would otherwise clear what the newer one derived, or write rows by its
    old rules into it; every write transaction (:func:`immediate`) and every open asks.

    ``between_passes``: a long-lived process's look before its next pass or answer; a
    database error while looking (damage, a file truncated under the handle) is then
    not raised here but left to that pass or answer, which recovers from it."""
    try:
        why = newer_reason(db)
    except sqlite3.Error:
        if not between_passes:
            raise
        return
    if why is not None:
        raise from_newer(db, why)


def check_writable(db: Database) -> None:
    """Fail now, with SQLite's own error, if ``db`` cannot take the rows a mutation will
    write: a read-only file or directory, or damage (``PRAGMA quick_check``, a few ms per
    MB of index; mutations are rare). Called before a mutation touches a transcript, so
    the failure comes before the change, not after it. Takes the write turn (so it also
    waits out another writer) and changes nothing."""
    with immediate(db):
        db.execute("DELETE FROM meta WHERE 0")
        problems = [" ".join(str(r[0]).split()) for r in db.execute("PRAGMA quick_check(3)")]
    if problems != ["ok"]:
        raise sqlite3.DatabaseError(f"database disk image is malformed: {'; '.join(problems)}")


def get_meta(db: Database, key: str) -> str | None:
    """A ``meta`` value; None when unset (or before the first migration made the table)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return None
    return None if row is None else row[0]


def set_meta(db: Database, key: str, value: str) -> None:
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", [key, value])


#: ``meta`` key holding the derivation version of the rows an upgrade emptied the index
#: of (indexer/db.py ``_check_derivation_version``), until a refresh fills it again: a
#: read that does not refresh says so instead of "has never been built".
EMPTIED_FOR_RULES = "emptied_for_rules"

#: ``meta`` keys that are the user's choices, not derived from the transcripts: where
#: ``cleanup --archive`` and ``archive --to`` put sessions, when ``archive`` last ran,
#: and ``index --tools``. The index is disposable (deleted, or moved aside when
#: damaged), so they are also kept in a file beside it, and a new index starts from it.
KEPT_SETTINGS = ("archive_dirs", "archive_last_run", "include_tools")


def settings_file(index_path: str | os.PathLike[str]) -> str:
    """The file beside the index at ``index_path`` that keeps :data:`KEPT_SETTINGS`."""
    return f"{os.fspath(index_path)}-settings.json"


def keep_setting(db: Database, key: str, value: str) -> None:
    """Set one of :data:`KEPT_SETTINGS` in the index and in the file beside it. The
    file is replaced whole (a reader sees the old or the new one); where it cannot be
    written (a read-only directory) the index alone keeps the setting, as before."""
    import orjson

    set_meta(db, key, value)
    path = database_path(db)
    if path is None:
        return
    kept = read_kept_settings(path)
    kept[key] = value
    target = settings_file(path)
    scratch = f"{target}.{os.getpid()}.tmp"
    try:
        with open(scratch, "wb") as out:
            out.write(orjson.dumps(kept, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        os.replace(scratch, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(scratch)


def read_kept_settings(index_path: str | os.PathLike[str]) -> dict[str, str]:
    """What the file beside the index keeps (:func:`keep_setting`); ``{}`` when it is
    missing or is not what it wrote (the settings are then the index's alone)."""
    import orjson

    try:
        with open(settings_file(index_path), "rb") as stream:
            value = orjson.loads(stream.read(1 << 20))
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if k in KEPT_SETTINGS and isinstance(v, str)}


def seed_kept_settings(db: Database) -> None:
    """Give a new index the settings its predecessor at the same path kept (the one
    deleted or moved aside), where it has none of its own."""
    path = database_path(db)
    kept = read_kept_settings(path) if path is not None else {}
    missing = {k: v for k, v in kept.items() if get_meta(db, k) is None}
    if missing:
        with immediate(db):
            for key, value in missing.items():
                set_meta(db, key, value)
