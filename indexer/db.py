"""The one way to open the index.

WAL so readers never wait on the writer (``watch``), ``synchronous=NORMAL`` because the
index can always be rebuilt, a busy timeout so a reader that meets a checkpoint waits
instead of failing, and migrations applied on every open.

``open_db(path, readonly=True)`` is for a command that will only read (``--no-refresh``,
or a live ``watch`` keeps the index current): when the index on disk is current it
returns a :class:`ReadOnlyIndex` over a ``mode=ro`` connection without importing
sqlite-utils, whose import is half of a query process's start-up. Otherwise it opens
(and migrates) as usual. Where even ``mode=ro`` cannot open it (a read-only directory
with no ``-shm`` file yet) it is read as an immutable file.

The index is derived and disposable: a file SQLite calls damaged ("malformed", "not a
database") is moved aside (:func:`~sessiondex.indexer.faults.quarantine`), the
``on_recover`` callback says so in one line, and a new, empty index is opened in its
place; the caller refreshes it from the transcripts. The settings that are not derived
(archive dirs, whether tools are indexed) are carried over when they can be read.
"""

from __future__ import annotations

import functools
import os
import re
import sqlite3
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.bulk import BULK_TRIGGER_KEY, repair_interrupted_bulk, triggers_missing
from sessiondex.indexer.faults import (
    BUSY,
    CANTOPEN,
    CORRUPT,
    FULL,
    IO,
    READONLY,
    classify,
    file_identity,
    quarantine,
)
from sessiondex.indexer.lock import lock_path
from sessiondex.indexer.meta import (
    EMPTIED_FOR_RULES,
    KEPT_SETTINGS,
    database_path,
    from_newer,
    get_meta,
    immediate,
    newer_reason,
    refuse_newer,
    seed_kept_settings,
    set_meta,
    write_turn,
)
from sessiondex.indexer.meta import (
    IndexFromNewer as IndexFromNewer,  # where the front ends have it from
)
from sessiondex.indexer.shape import (
    DERIVATION_VERSION,
    FTS_TABLES,
    MIGRATION_NAMES,
    MIGRATION_SET,
    SCHEMA_OBJECTS,
)
from sessiondex.indexer.textstore import register
from sessiondex.transcripts.config import default_config_dir
from sessiondex.transcripts.fspath import xdg_dir

if TYPE_CHECKING:
    from sqlite_utils import Database

BUSY_TIMEOUT_MS = 30_000
# Page size of a new index file, and of one a rebuild VACUUMs (release_space). Compressed
# message rows are 0.1-4 KB and a page holds a whole number of them: on the text-heavy
# bench ~19% of the messages table's pages was slack at 4 KiB, ~7% at 16 KiB (134 -> 124
# MB; docs/index.md#page-size).
PAGE_SIZE = 16384
# Checkpoint the WAL when it holds this many bytes of frames: SQLite's default is 1000
# pages, ~4 MB at the 4 KiB pages the index used to have; counted in pages it would let
# the WAL file (which keeps its largest size under a long-running watcher) grow to
# ~16 MB at 16 KiB pages for no gain.
WAL_CHECKPOINT_BYTES = 1000 * 4096
# Page cache of a connection, in KiB (SQLite's default is 2 MiB). A listing reads every
# session row (the text-heavy bench's ``sessions`` table is 10 MB: first and last prompts)
# and a search page the bodies of its hits; a long-lived front end (picker, MCP server,
# web view) asks again and again, and with the default cache each answer read its pages
# from the OS once more. Pages enter only when read, so a short command pays nothing.
CACHE_KIB = 32 * 1024
DATA_TABLES = (
    "messages",
    "pr_mentions",
    "pr_links",
    "branches",
    "sessions",
    "session_aliases",
    "files",
    "text_dicts",  # last: deleting messages decodes their bodies (the FTS delete trigger)
)


def default_db_path(environ: dict[str, str] | None = None) -> Path:
    """``$SESSIONDEX_DB``, else ``$XDG_CACHE_HOME/sessiondex/index.db`` (``~/.cache``)."""
    env = os.environ if environ is None else environ
    if env.get("SESSIONDEX_DB"):
        return Path(env["SESSIONDEX_DB"]).expanduser()
    return xdg_dir("XDG_CACHE_HOME", ".cache", env) / "sessiondex" / "index.db"


class ReadOnlyIndex:
    """The part of sqlite-utils' ``Database`` the query layer uses, over a read-only
    connection: ``execute``, ``conn`` and ``close``."""

    def __init__(self, conn: sqlite3.Connection, immutable: bool = False) -> None:
        self.conn = conn
        # Opened ``immutable=1``: SQLite sees no other writer's changes through it.
        self.immutable = immutable

    def execute(self, sql: str, parameters: Any = None) -> sqlite3.Cursor:
        return self.conn.execute(sql, parameters if parameters is not None else ())

    def close(self) -> None:
        self.conn.close()


def _uri(target: Path, immutable: bool) -> str:
    # URI-escape the three characters a file name may hold that a URI path may not
    # (urllib.parse would cost its import on every reading command).
    uri_path = str(target).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{uri_path}?mode=ro{'&immutable=1' if immutable else ''}"


def check_schema_objects(conn: Any) -> None:
    """Raise the error of a damaged file when a table or view the migrations made is
    gone (:data:`~sessiondex.indexer.shape.SCHEMA_OBJECTS`): every query of it would
    fail "no such table", where a damaged index is rebuilt. Only for an index whose
    migrations are all recorded; one sqlite_master read."""
    marks = ", ".join("?" for _ in SCHEMA_OBJECTS)
    found = {
        row[0]
        for row in conn.execute(
            f"SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name IN ({marks})",
            sorted(SCHEMA_OBJECTS),
        )
    }
    missing = sorted(SCHEMA_OBJECTS - found)
    if missing:
        raise sqlite3.DatabaseError(
            f"database disk image is malformed: {', '.join(missing)} missing"
        )


def _open_current_readonly(target: Path) -> ReadOnlyIndex | None:
    """A read-only handle when the index exists and needs no migration, derivation
    rebuild or repair; else None (the caller opens it the normal way). Raises the
    SQLite error when the file is damaged."""
    if not target.is_file():
        return None
    for immutable in (False, True):
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(_uri(target, immutable), uri=True)
            register(conn)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            applied = {
                r[0]
                for r in conn.execute(
                    "SELECT name FROM _sqlite_migrations WHERE migration_set = ?",
                    [MIGRATION_SET],
                )
            }
            meta = dict(
                conn.execute(
                    "SELECT key, value FROM meta WHERE key IN ('derivation_version', ?)",
                    [BULK_TRIGGER_KEY],
                )
            )
            lost_triggers = triggers_missing(conn)
            newer = newer_reason(conn)
            if applied == set(MIGRATION_NAMES):
                check_schema_objects(conn)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            kind = classify(exc)
            if kind == CORRUPT:
                raise
            if kind in (CANTOPEN, READONLY, FULL, IO) and not immutable:
                # No -shm can be made here (a read-only directory, a full disk: SQLite
                # says IOERR_SHMSIZE): read the file as it stands.
                continue
            return None
        if newer is not None:
            # Left as it is, read or written: neither a writable open nor this one's
            # queries of rows and tables a newer copy made (one line, exit 1).
            error = from_newer(conn, newer)
            conn.close()
            raise error
        if (
            applied != set(MIGRATION_NAMES)
            or meta.get("derivation_version") != str(DERIVATION_VERSION)
            or BULK_TRIGGER_KEY in meta
            or lost_triggers  # a build's, or lost: prepare() sees which
        ):
            conn.close()
            return None
        return ReadOnlyIndex(conn, immutable)
    return None


def open_current_readonly(path: str | os.PathLike[str]) -> ReadOnlyIndex | None:
    """The read-only handle of :func:`open_db` when the index at ``path`` is current,
    else None (new, to migrate or rebuild, damaged: for :func:`open_db` to handle)."""
    try:
        return _open_current_readonly(Path(path))
    except sqlite3.Error:
        return None


def _salvage_settings(target: Path) -> dict[str, str]:
    """What can still be read of the kept settings of a damaged index (often nothing)."""
    try:
        conn = sqlite3.connect(_uri(target, True), uri=True)
    except sqlite3.Error:
        return {}
    try:
        marks = ", ".join("?" for _ in KEPT_SETTINGS)
        return {
            str(k): str(v)
            for k, v in conn.execute(
                f"SELECT key, value FROM meta WHERE key IN ({marks})", list(KEPT_SETTINGS)
            )
        }
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


Notice = Callable[[str], None]


def recover_damaged(
    target: Path, error: BaseException, expected: tuple[int, int] | None, notice: Notice | None
) -> dict[str, str]:
    """Move the damaged index at ``target`` aside and say so; returns the settings to
    carry over. Raises ``error`` when it cannot be moved (a read-only directory)."""
    kept = _salvage_settings(target)
    try:
        moved = quarantine(target, expected)
    except OSError as exc:
        raise error from exc
    if moved is not None and notice is not None:
        detail = " ".join(str(error).split()) or type(error).__name__
        notice(
            f"warning: the index at {target} was damaged ({detail}); moved it to {moved} "
            "and rebuilding it from the transcripts"
        )
    return kept


SQLITE_HEADER = b"SQLite format 3\x00"


class NotAnIndex(ValueError):
    """The index path names something that must not become the index: it is left alone
    (a damaged index is moved aside and replaced; a transcript or a settings file given
    as ``--db`` by mistake never is)."""


def _is_utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # surrogate escapes: bytes that were not UTF-8
        return False
    return True


def _printable(path: Path | str) -> str:
    """``path`` with the bytes that were not UTF-8 as ``\\xHH``, as ls -b shows them."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


@functools.cache
def _not_a_path() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The spellings of the team store that ``--db`` may be given by mistake. Compiled
    on first use: only a value holding ``:/`` or ``=``, as each of them does, is
    matched against them (compiling them was start-up time of every command)."""
    return (
        # A URL: a scheme, then "://" (a path never holds "//" once written as a Path,
        # so this is read in the text as given) ...
        re.compile(r"\s*([A-Za-z][A-Za-z0-9+.-]+://)"),
        # ... or the team store's scheme with one slash (a typo).
        re.compile(r"\s*((?:postgres|postgresql)(?:\+[A-Za-z0-9]+)?:/)", re.IGNORECASE),
        # libpq's key=value connection string ("host=db user=ann password=…"), which
        # psql takes.
        re.compile(
            r"\s*((?:host|hostaddr|port|dbname|user|password|passfile|service|sslmode)\s*=)",
            re.IGNORECASE,
        ),
    )


def check_index_path(target: Path, roots: Sequence[Path] = (), given: str | None = None) -> None:
    """Raise :class:`NotAnIndex` when ``target`` cannot be the index.

    - Inside a config dir's ``projects/`` (those given, and the default ``~/.claude``):
      Claude Code's transcripts live there, and nothing sessiondex writes goes there.
    - Anything but a regular file (a FIFO, a device).
    - An existing file that does not start as a SQLite database does and was never
      opened as the index (no lock file of ours beside it): a transcript, a settings
      file, a note, an archive given as ``--db`` by mistake, whatever its encoding. An
      empty file is what ``sqlite3.connect`` (ours in another process) leaves before
      its first write, and is taken, unless it has other names (a hard link to an empty
      transcript).

    What SQLite cannot read is otherwise taken for a damaged index and moved aside; a
    file that was the index (its lock files stay beside it) still is, whatever it holds
    now, so a damaged index stays recoverable."""
    text = str(target) if given is None else given
    if ":/" in text or "=" in text:
        url_like, store_typo, conninfo_like = _not_a_path()
        url = url_like.match(text) or store_typo.match(text)
        if url:
            # "postgresql+psycopg://u:pw@h/db", " postgresql://…", "postgresql:/…": meant
            # for the team store, they would be a local index named after the password.
            # The value is not repeated: it may hold one.
            raise NotAnIndex(
                f"the index path looks like a URL ({url.group(1)!r}…), not a file path; the"
                " team store takes postgresql://user@host/db"
            )
        conninfo = conninfo_like.match(text)
        if conninfo:  # the same, in psql's other spelling
            raise NotAnIndex(
                f"the index path looks like a PostgreSQL connection string"
                f" ({conninfo.group(1).strip()!r}…), not a file path; the team store"
                " takes postgresql://user@host/db"
            )
    where = os.path.realpath(target)
    if not _is_utf8(where):
        # SQLite takes the bytes, then hands the name back as text that Python cannot
        # decode: the first query would fail, after the file was created.
        raise NotAnIndex(f"{_printable(target)} is not a UTF-8 path; give the index a path that is")
    for root in (*roots, default_config_dir()):
        projects = os.path.realpath(os.path.join(root, "projects"))
        if where == projects or where.startswith(projects + os.sep):
            raise NotAnIndex(
                f"{target} is inside {projects}, where Claude Code keeps its transcripts:"
                " give the index a path outside it"
            )
    try:
        st = os.stat(target)
    except OSError:
        return  # missing (created later) or unreachable: said when opened
    if stat.S_ISDIR(st.st_mode):  # (the CLI says it first, as a usage error)
        raise NotAnIndex(
            f"{target} is a directory: give the index file's path (e.g. {target}/index.db)"
        )
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read below; /dev/null…
        raise NotAnIndex(f"{target} is not a regular file; give the index a file path")
    ours = any(  # beside the path given, or beside the file a link names
        lock_path(path, kind).exists()
        for path in {str(target), where}
        for kind in ("write", "gate")
    )
    if ours:
        # A file that was the index: what it holds now is damage. And not opened here:
        # closing any descriptor of a file drops every POSIX lock this process holds on
        # it, SQLite's too (an Index opened beside another, as watch's archive rescue
        # is). Another process would then take itself for the last connection and
        # delete the WAL the first one still writes to.
        return
    try:
        with open(target, "rb") as file:
            header = file.read(100)
    except OSError:
        return  # unreadable: said when opened
    head = header[: len(SQLITE_HEADER)]
    # SQLite follows a symbolic link and keeps its -wal beside the file it names: look
    # there (through a link, another program's -wal was not seen, then deleted).
    real = Path(where)
    if head == SQLITE_HEADER:
        others = _another_programs(real, header)
        if others:
            raise NotAnIndex(
                f"{target} is a SQLite database of another program ({others}), not a"
                " sessiondex index, and is left as it is; give the index another path"
                " (a new one is created)"
            )
        return  # an index, a copy of one, or a database with nothing in it yet
    if not head and st.st_nlink == 1 and not _wal_beside(real):
        return  # what sqlite3.connect leaves before its first write (another process's)
    what = (
        "not a SQLite database"
        if head
        else "an empty file with other names"
        if st.st_nlink > 1
        else "an empty file beside another program's write-ahead log"
    )
    raise NotAnIndex(
        f"{target} is not a sessiondex index ({what}) and is left as it is;"
        " give the index another path (a new one is created)"
    )


def _wal_beside(target: Path) -> bool:
    """Whether a non-empty ``-wal`` lies beside the file: a database in use, or left so."""
    try:
        return os.stat(f"{target}-wal").st_size > 0
    except OSError:
        return False


def _another_programs(target: Path, header: bytes) -> str | None:
    """What shows that a SQLite file with no lock file of ours beside it belongs to
    another program, or None: an index, a copy of one, or a database with nothing in
    it yet (what ``sqlite3.connect`` leaves). The migrations would otherwise add our
    tables beside another program's own (``--db`` naming an application's database
    by mistake). Ours holds our ``_sqlite_migrations`` rows and sets neither
    ``user_version`` nor ``application_id``; the schema is read from the main file
    alone (``immutable``: no ``-wal`` or ``-shm`` is made beside another's file), and
    a non-empty ``-wal`` beside a file with no schema of its own is another's live
    database. A file SQLite cannot read is left to the open (damage is repaired)."""
    if len(header) < 100:
        return "a SQLite header cut short"
    user_version = int.from_bytes(header[60:64], "big")
    application_id = int.from_bytes(header[68:72], "big")
    if application_id:
        return f"application_id {application_id}"
    if user_version:
        return f"user_version {user_version}"
    try:
        conn = sqlite3.connect(_uri(target, immutable=True), uri=True)
    except sqlite3.Error:
        return "a file SQLite cannot open"
    try:
        objects = conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE"
            " '\\' ORDER BY rowid"
        ).fetchall()
        if any(kind == "table" and name == "_sqlite_migrations" for kind, name in objects):
            ours = conn.execute(
                "SELECT count(*) FROM _sqlite_migrations WHERE migration_set = ?",
                [MIGRATION_SET],
            ).fetchone()[0]
            if ours:
                return None
    except sqlite3.Error:
        # Not readable as SQLite, and never the index (no lock file of ours): a damaged
        # index is moved aside and rebuilt only with our lock files beside it.
        return "a SQLite header on what SQLite cannot read"
    finally:
        conn.close()
    if not objects:
        return "its schema in the write-ahead log beside it" if _wal_beside(target) else None
    shown = ", ".join(f"{kind} {name}" for kind, name in objects[:3])
    return shown + (", …" if len(objects) > 3 else "")


def _open_writable(target: Path) -> Database:
    from sqlite_utils import Database

    target.parent.mkdir(parents=True, exist_ok=True)
    db = Database(target)
    try:
        return prepare(db)
    except BaseException:
        db.close()
        raise


def open_if_current(path: str | os.PathLike[str]) -> Database | None:
    """A read-only handle on the index at ``path`` when it is current, else None: never
    creating, migrating, re-deriving or repairing it (shell completion, where a Tab must
    change nothing: a damaged or outdated index is for the next command to handle).
    Nor another program's file at the path: opened read-only, its WAL would still get a
    ``-shm`` beside it (:func:`check_index_path` looks without opening it)."""
    try:
        check_index_path(Path(path))
        return _open_current_readonly(Path(path))  # type: ignore[return-value]
    except (sqlite3.Error, NotAnIndex, IndexFromNewer):
        return None


def open_db(
    path: str | os.PathLike[str] | None = None,
    *,
    readonly: bool = False,
    on_recover: Notice | None = None,
) -> Database:
    """Open (creating if needed) and migrate the index at ``path``; a damaged one is
    moved aside and replaced by an empty one (``on_recover`` hears about it)."""
    target = Path(path) if path is not None else default_db_path()
    check_index_path(target)
    expected = file_identity(target)
    try:
        if readonly:
            handle = _open_current_readonly(target)
            if handle is not None:
                return handle  # type: ignore[return-value]  # the subset queries use
        return _open_writable(target)
    except sqlite3.DatabaseError as exc:
        if classify(exc) != CORRUPT:
            raise
        kept = recover_damaged(target, exc, expected, on_recover)
    db = _open_writable(target)
    if kept:
        with immediate(db):
            for key, value in kept.items():
                set_meta(db, key, value)
    return db


def prepare(db: Database) -> Database:
    """Settings, the stored-text function, migrations and repair for a database opened
    by anyone (``open_db``, or a connection a library caller passed to
    ``sessiondex.Index``)."""
    from sessiondex.indexer.schema import migrations

    register(db.conn)
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    fresh = db.execute("PRAGMA page_count").fetchone()[0] == 0
    if fresh:
        with write_turn(db):
            _begin_empty_file(db)
    if db.execute("PRAGMA journal_mode").fetchone()[0] not in ("wal", "memory"):
        with write_turn(db):  # changing the journal mode needs the database to itself
            db.enable_wal()
    _set_autocheckpoint(db)
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("PRAGMA foreign_keys = OFF")
    db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    # Before anything is migrated, cleared or repaired: a newer copy's index is left
    # as it is (IndexFromNewer; also asked at every write transaction, meta.immediate).
    refuse_newer(db)
    pending = migrations.pending(db)
    if not pending:
        check_schema_objects(db.conn)
    if pending or get_meta(db, "derivation_version") != str(DERIVATION_VERSION):
        # Several processes may open a new index at once (a watcher and a reader):
        # take the write lock first, then look again, so one of them migrates.
        with immediate(db):
            if migrations.pending(db):
                migrations.apply(db)
            cleared = _check_derivation_version(db)
        if cleared:
            release_space(db)
    if fresh:
        seed_kept_settings(db)
    repair_interrupted_bulk(db)
    return db


def _begin_empty_file(db: Database) -> None:
    """Give a database without a page its first ones: a copy of this process's
    :func:`_migrated_template` when it can, else the settings the migrations then
    build on. The copy is the same schema made by the same migrations, made once per
    process: a new index costs ~3 ms instead of ~20 ms of DDL (a process that makes
    many, a test suite or a user's rebuilds after damage, pays that once).

    Called holding the write turn, and the file looked at again under it: another
    process may have begun the file, and even written to it, while this one waited,
    and a copy made over that would lose its rows."""
    if db.execute("PRAGMA page_count").fetchone()[0] != 0:
        return
    _check_nobody_holds_it(db)
    # The template is UTF-8: a caller's connection set to another encoding (before
    # handing it to Index) keeps it, migrated the slow way.
    utf8 = db.execute("PRAGMA encoding").fetchone()[0] == "UTF-8"
    if utf8 and not db.conn.in_transaction:
        try:
            with _TEMPLATE_LOCK:
                _migrated_template(PAGE_SIZE).backup(db.conn)
            return
        except sqlite3.Error:
            pass  # the migrations do the same (a copy that failed wrote nothing)
    # Both only take effect before the file has a page.
    db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    db.execute("PRAGMA auto_vacuum = INCREMENTAL")  # see bulk.give_back_free_pages


_TEMPLATE_LOCK = threading.Lock()

# How long a file without a page may stay locked by another connection, while this one
# holds the write turn, before it counts as damaged (:func:`_check_nobody_holds_it`).
EMPTY_FILE_HOLDER_WAIT_MS = 2_000


def _check_nobody_holds_it(db: Database) -> None:
    """Raise a damage error when the index file has no page, yet another connection
    keeps a lock on it: the file was truncated (``: > index.db``, a sync tool) under a
    connection that has it open in WAL mode (a running ``watch``, ``pick``, the MCP or
    web server), which holds a shared lock on the file for as long as it is open. No
    writer could ever give such a file its first pages: SQLite's backup retried
    forever (a reading command hung, holding the write turn, and the watcher behind
    it), and the migrations would fail with "database is locked" after the busy
    timeout. A new file that another sessiondex process is just opening is locked for
    moments only (its ``PRAGMA page_count``); the writers of it wait for the write turn
    we hold. Damage is moved aside and rebuilt (``open_db``); the holder sees its file
    replaced and follows (``watch`` reopens and rebuilds)."""
    if db.conn.in_transaction:
        return
    path = database_path(db)
    if path is None:
        return  # in memory: nobody else can hold it
    # Asked on a connection of its own: a transaction begun on ``db`` itself would fix
    # the new file's page size and auto-vacuum before the template or migrations set them.
    probe = sqlite3.connect(path, timeout=EMPTY_FILE_HOLDER_WAIT_MS / 1000)
    try:
        probe.execute("BEGIN EXCLUSIVE")
        probe.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if classify(exc) != BUSY:
            raise
        raise sqlite3.DatabaseError(
            "database disk image is malformed: the file is empty, yet another"
            " connection has it open (truncated under a running process)"
        ) from exc
    finally:
        probe.close()


@functools.cache
def _migrated_template(page_size: int) -> sqlite3.Connection:
    """An in-memory database holding what the migrations make of an empty file, with
    the page settings a new index gets (SQLite's backup copies them with the pages)."""
    from sqlite_utils import Database

    from sessiondex.indexer.schema import migrations

    conn = sqlite3.connect(":memory:", check_same_thread=False)
    register(conn)
    conn.execute(f"PRAGMA page_size = {page_size}")
    conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
    migrations.apply(Database(conn))
    conn.commit()
    return conn


def _set_autocheckpoint(db: Database) -> None:
    """``WAL_CHECKPOINT_BYTES`` in this file's pages (a setting of the connection)."""
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    db.execute(f"PRAGMA wal_autocheckpoint = {max(1, WAL_CHECKPOINT_BYTES // page_size)}")


def clear_index(db: Database) -> None:
    """Drop every derived row (the schema stays); the next refresh rebuilds all."""
    with immediate(db):
        for table in DATA_TABLES:
            db.execute(f"DELETE FROM {table}")
        # The delete triggers told FTS5 what each row held by today's rules
        # (``fts_text`` through the view ``session_search``); an index derived by older
        # rules indexed other tokens. Emptying the FTS tables outright leaves none behind.
        for fts in FTS_TABLES:
            db.execute(f"INSERT INTO {fts}({fts}) VALUES ('delete-all')")
        # Configuration, not derived: archive_dirs (where cleanup --archive put sessions),
        # the last archive run, and include_tools (index --tools is remembered: a rebuild,
        # asked for or after an upgrade, indexes what the user chose). Nor is the FTS
        # trigger SQL a bulk build in another process set aside (indexer/bulk.py): taken
        # with the rest, that build could neither rebuild FTS nor put its triggers back,
        # and every search after found nothing (two ``index --rebuild`` at once).
        kept = ("derivation_version", *KEPT_SETTINGS)
        db.execute(
            f"DELETE FROM meta WHERE key NOT IN ({', '.join('?' for _ in kept)}, ?)",
            [*kept, BULK_TRIGGER_KEY],
        )


def _check_derivation_version(db: Database) -> bool:
    """Clear an index derived by older rules; True when it held rows to clear.

    An index derived by *newer* rules is left alone (:class:`IndexFromNewer`): an old
    process still running after an upgrade (a ``watch`` service, an MCP server, an old
    virtualenv) would clear it, the new one clear it back, and each rebuild it in turn
    every time either opened it."""
    stored = get_meta(db, "derivation_version")
    if stored == str(DERIVATION_VERSION):
        return False
    refuse_newer(db)
    with immediate(db):
        if stored is not None:
            clear_index(db)
            set_meta(db, EMPTIED_FOR_RULES, str(stored))
        set_meta(db, "derivation_version", str(DERIVATION_VERSION))
    return stored is not None


def release_space(db: Database) -> None:
    """Give the pages of a cleared index back to the file system (``VACUUM``; cheap on
    a nearly empty database), in pages of ``PAGE_SIZE``. Otherwise the file keeps the
    old size and the rebuild only refills it: an index made smaller by new rules
    (compressed text, m007; 16 KiB pages) would stay as big as before. Best effort: a
    busy or full database keeps its free pages, one another connection has open keeps
    its page size."""
    if db.conn.in_transaction:
        return  # VACUUM cannot run inside a transaction: the caller's to finish
    try:
        with write_turn(db):
            # An index made before auto_vacuum was set becomes incremental here.
            db.execute("PRAGMA auto_vacuum = INCREMENTAL")
            if not _vacuum_into_new_pages(db):
                db.execute("VACUUM")
    except sqlite3.Error:
        pass


def _vacuum_into_new_pages(db: Database) -> bool:
    """VACUUM a WAL index whose pages are not ``PAGE_SIZE`` (a file made before it
    changed) into pages of that size; False when there is nothing to change or it
    cannot be done now. SQLite changes the page size of a WAL database only out of WAL
    mode, and leaving WAL mode needs the file to itself: with another connection open
    (a reader, a watcher) it fails at once, without the busy timeout, and the caller
    VACUUMs at the old size."""
    if db.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE:
        return False
    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        return False  # in memory: nothing on disk to repack
    try:
        if db.execute("PRAGMA journal_mode = DELETE").fetchone()[0] != "delete":
            return False
    except sqlite3.OperationalError:
        return False  # "database is locked": someone else has the file open
    try:
        db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        db.execute("VACUUM")
    finally:
        # Back to WAL (should this fail, the next prepare() switches it back).
        db.enable_wal()
        _set_autocheckpoint(db)
    return True
