"""Faults of the index file itself: damaged, read-only, disk full, busy.

The index is derived and disposable (spec/semantics.md §5a): whatever its file holds,
every command answers or says in one line what is wrong, never with a traceback.

1. Damaged (issue 14 item 5): truncated to one page, random bytes, a text file, a bad
   page under the sessions table or the full-text index, undecodable stored JSON, stored
   objects with a key missing or extra. Every command (reading, ``--no-refresh``,
   ``show``, a mutation, ``index``, ``index --rebuild``, ``stats``) exits 0 with the
   right answer; the damaged file is moved aside as ``index.db.corrupt-<timestamp>``
   and one stderr line says so (a damaged stored value is rebuilt from its row).
2. Read-only file, read-only directory, disk full (item 6): ``--no-refresh`` reads work;
   refreshing reads answer as the index is, with a note; writing commands exit 1 with
   one line naming the index and "read-only"/"disk full" and, for a read-only index,
   before the transcript is touched; once space returns the index catches up.
   Root ignores permission bits, so read-only is made with ``chattr +i`` (skipped
   where that is not possible); disk full with ``PRAGMA max_page_count``, which makes
   SQLite fail exactly as on a full disk (SQLITE_FULL) once the free pages are used up,
   and writes too big for the slack left in the file's pages (see ``disk``).
3. Busy (item 4): a writing command waits for another process's write turn, says so
   after ~2 s on a terminal, and succeeds; a refresh before a read waits a few seconds
   and otherwise answers from the index as it is, with a note; a writer that waits too
   long exits 1 with one line, the transcript untouched.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import shutil
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import sessiondex.cli.progress as progress_module
import sessiondex.index as index_module
import sessiondex.indexer.db as db_module
import sessiondex.indexer.meta as meta_module
from sessiondex.cli.main import cli
from sessiondex.indexer.db import open_db
from sessiondex.indexer.lock import WriteTurn
from sessiondex.indexer.refresh import refresh
from tests.builders import ConfigTree, copy_fixtures, one_session
from tests.helpers_index import check_fts_integrity, index_snapshot, rebuilt_snapshot
from tests.test_reliability_concurrency import INDEX_CMD

CWD = "/srv/faults"
WORD = "quokkaword"


class World:
    """A fixture tree plus one session of ours, indexed into ``db``."""

    def __init__(self, base: Path) -> None:
        self.root = copy_fixtures(base)
        self.db = base / "index.db"
        tree = ConfigTree(self.root)
        s = tree.session(cwd=CWD)
        s.user(f"the {WORD} needs feeding")
        s.assistant("feeding it now")
        s.meta("custom-title", customTitle="Quokka care")
        s.write()
        self.session = s
        self.sid = s.session_id
        assert self.run("index").exit_code == 0
        self.expected = self.ids(self.run("list", "--scope", "all", "--all-kinds", "--json"))
        settle(self.db)

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(
            cli, ["--config-dir", str(self.root), "--db", str(self.db), *args]
        )

    @staticmethod
    def ids(result: Result) -> set[str]:
        assert result.exit_code == 0, result.output
        return {row["session_id"] for row in json.loads(result.stdout)}


def settle(db: Path) -> None:
    """Checkpoint the WAL into the file and drop the side files (as after a clean exit),
    so that damage done to the file is all there is."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)


def error_line(result: Result) -> str:
    """The one ``Error:`` line a failed command printed (notes may come before it)."""
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    return errors[0]


def no_traceback(result: Result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output


# ------------------------------------------------------------------- 1. damaged
def _root_page(db: Path, name: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(
            conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", [name]).fetchone()[0]
        )
    finally:
        conn.close()


def _page_size(data: bytes) -> int:
    """The page size a database file's header gives (bytes 16-17; 1 means 64 KiB)."""
    size = int.from_bytes(data[16:18], "big")
    return 65536 if size == 1 else size


def damage(db: Path, kind: str) -> None:
    data = db.read_bytes()
    noise = random.Random(kind).randbytes
    if kind == "truncated":
        db.write_bytes(data[: _page_size(data)])
    elif kind == "random-bytes":
        db.write_bytes(noise(len(data)))
    elif kind == "binary-file":
        db.write_bytes(b"\x89PNG\r\n\x1a\n\x00" + noise(len(data)))
    elif kind.startswith("bad-page:"):
        page = _root_page(db, kind.split(":", 1)[1])
        size = _page_size(data)
        start = (page - 1) * size
        db.write_bytes(data[:start] + noise(size) + data[start + size :])
    elif kind.startswith("dropped:"):  # a table dropped by hand: "no such table" forever
        conn = sqlite3.connect(db)
        conn.execute(f"DROP TABLE {kind.split(':', 1)[1]}")
        conn.commit()
        conn.close()
    elif kind == "undecodable-json":
        conn = sqlite3.connect(db)
        conn.execute("UPDATE sessions SET object_json = '{\"session_id\": ' || quote(id)")
        conn.execute("UPDATE sessions SET object_json = x'ff00fe' WHERE id % 2 = 0")
        conn.commit()
        conn.close()
    elif kind == "incomplete-object":  # valid JSON, but not the contract's object
        conn = sqlite3.connect(db)
        for remainder, change in enumerate(
            (
                "json_remove(object_json, '$.session_id')",  # the first key
                "json_remove(object_json, '$.resume_command')",  # the last key
                "json_remove(object_json, '$.title')",
                "json_set(object_json, '$.extra', 1)",
                "json_array(object_json)",
            )
        ):
            conn.execute(f"UPDATE sessions SET object_json = {change} WHERE id % 5 = {remainder}")
        conn.commit()
        conn.close()
    else:
        raise AssertionError(kind)


DAMAGES = [
    "truncated",
    "random-bytes",
    "binary-file",
    "bad-page:sessions",
    "bad-page:messages_fts_data",
    "undecodable-json",
    "incomplete-object",
    # search failed "no such table" and index said all was well; without meta or files
    # every command failed, index too (helper 122)
    "dropped:messages_fts",
    "dropped:meta",
    "dropped:files",
]
# Damage every command meets: the file does not open, every answer reads the page, or
# the opening finds a table of the schema gone.
DAMAGES_EVERYONE_MEETS = {
    "truncated",
    "random-bytes",
    "binary-file",
    "bad-page:sessions",
    "dropped:messages_fts",
    "dropped:meta",
    "dropped:files",
}
# A bad page in the full-text index is met by the commands that read or write it (a
# mutation checks the whole index before it writes); a listing never reads it.
MEETS_A_BAD_FTS_PAGE = {"search", "rename", "index --rebuild"}
COMMANDS: dict[str, list[str]] = {
    "list": ["list", "--scope", "all", "--all-kinds", "--json"],
    "list --no-refresh": ["--no-refresh", "list", "--scope", "all", "--all-kinds", "--json"],
    "search": ["search", WORD, "--scope", "all", "--json"],
    "show": ["show", "{sid}", "--format", "json"],
    "rename": ["rename", "{sid}", "Renamed after damage"],
    "index": ["index", "--json"],
    "index --rebuild": ["index", "--rebuild", "--json"],
    "stats": ["stats", "--json"],
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[World, Any]:
    """One indexed tree the reading commands share (they never change a transcript),
    with the snapshot a rebuild of it gives."""
    world = World(tmp_path_factory.mktemp("pristine"))
    return world, rebuilt_snapshot([world.root], world.db.parent / "rebuilt.db")


# What --db (or SESSIONDEX_DB) may name by mistake, each never to be moved aside or
# replaced: a transcript, Claude Code's history and settings, a note, a new file inside
# projects/.
NOT_AN_INDEX = {
    "a transcript": "projects/{key}/{sid}.jsonl",
    "history.jsonl": "history.jsonl",
    "settings.json": "settings.json",
    "a note outside the config dir": "../notes.txt",
    "a Latin-1 note": "../latin1.txt",
    "a UTF-16 note": "../utf16.txt",
    "a gzip archive": "../archive.jsonl.gz",
    "a new file inside projects/": "projects/{key}/index.db",
    "an empty file with other names (a hard link to an empty transcript)": "../empty-link.db",
    "a FIFO (reading it would block)": "../fifo",
    # SQLite creates the file, then names it in text Python cannot decode.
    "a new file whose name is not UTF-8": "../caf\udce9.db",
    # Helpers 93 and 96: the migrations added our 49 objects beside the program's own.
    "another program's SQLite database": "../app.sqlite",
    "another program's SQLite database with a table named as ours": "../clash.sqlite",
    "another program's SQLite database of views alone": "../views.sqlite",
    "another program's SQLite database with a view named as ours": "../meta-view.sqlite",
    "another program's migrations table": "../migrated.sqlite",
    "a SQLite file with a user_version": "../versioned.sqlite",
    "a SQLite file with an application_id": "../app-id.sqlite",
    "a SQLite file whose schema is in its write-ahead log": "../live.sqlite",
    # Helper 97: taken, the -wal deleted; moved aside as a damaged index of ours.
    "an empty file beside another program's write-ahead log": "../walonly.sqlite",
    "a SQLite header on what SQLite cannot read": "../garbage.sqlite",
    "a SQLite header cut short": "../short.sqlite",
    # Helper 98: through a link, the -wal beside the file it names was not seen.
    "a link to a SQLite file whose schema is in its write-ahead log": "../live-link.sqlite",
    "a link to an empty file beside a write-ahead log": "../walonly-link.sqlite",
}

# How each of those SQLite files is made (what its owner ran).
FOREIGN_SQLITE = {
    "app.sqlite": "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
    " INSERT INTO users (name) VALUES ('ada')",
    "clash.sqlite": "CREATE TABLE files (id INTEGER PRIMARY KEY, name TEXT)",
    "views.sqlite": "CREATE VIEW v AS SELECT 1 AS one",
    "meta-view.sqlite": "CREATE VIEW meta AS SELECT 'k' AS key, 'v' AS value",
    "migrated.sqlite": "CREATE TABLE _sqlite_migrations (id INTEGER PRIMARY KEY,"
    " migration_set TEXT, name TEXT, applied_at TEXT); INSERT INTO _sqlite_migrations"
    " (migration_set, name) VALUES ('myapp', 'm001'); CREATE TABLE users (id, name)",
    "versioned.sqlite": "PRAGMA user_version = 42",
    "app-id.sqlite": "PRAGMA application_id = 1234",
}


@pytest.mark.parametrize("via", ["--db", "SESSIONDEX_DB"])
@pytest.mark.parametrize("what", list(NOT_AN_INDEX))
def test_a_path_that_is_not_an_index_is_refused_and_left_alone(
    tmp_path: Path, what: str, via: str
) -> None:
    """A damaged index is moved aside and rebuilt; a text file given as the index by
    mistake was treated the same way, so ``--db <transcript>`` moved the transcript
    aside and put an index in its place (the session vanished for Claude Code)."""
    root = tmp_path / "claude"
    tree = ConfigTree(root)
    s = tree.session(cwd="/w/app")
    s.user("hello")
    transcript = s.write(mtime=1_800_000_000)
    (root / "history.jsonl").write_text('{"display":"hello","project":"/w/app"}\n')
    (root / "settings.json").write_text('{"cleanupPeriodDays": 30}\n')
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    (tmp_path / "utf16.txt").write_text("remember the milk\n", encoding="utf-16")
    (tmp_path / "archive.jsonl.gz").write_bytes(gzip.compress(b'{"type":"user"}\n'))
    empty = tree.session(cwd="/w/app").write()
    empty.write_bytes(b"")  # an empty transcript, reached through a hard link
    os.link(empty, tmp_path / "empty-link.db")
    os.mkfifo(tmp_path / "fifo")
    for name, script in FOREIGN_SQLITE.items():
        with contextlib.closing(sqlite3.connect(tmp_path / name)) as conn:
            conn.executescript(script)
            conn.commit()
    # A live database in WAL mode whose schema is not checkpointed yet: a copy of its
    # two files, as its owner's process holds them.
    with contextlib.closing(sqlite3.connect(tmp_path / "owner.sqlite")) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        shutil.copyfile(tmp_path / "owner.sqlite", tmp_path / "live.sqlite")
        shutil.copyfile(tmp_path / "owner.sqlite-wal", tmp_path / "live.sqlite-wal")
        (tmp_path / "walonly.sqlite").write_bytes(b"")
        shutil.copyfile(tmp_path / "owner.sqlite-wal", tmp_path / "walonly.sqlite-wal")
    os.symlink(tmp_path / "live.sqlite", tmp_path / "live-link.sqlite")
    os.symlink(tmp_path / "walonly.sqlite", tmp_path / "walonly-link.sqlite")
    noise = random.Random(97).randbytes(8192 - 16)
    (tmp_path / "garbage.sqlite").write_bytes(
        db_module.SQLITE_HEADER + noise[:44] + bytes(12) + noise[56:]
    )
    (tmp_path / "short.sqlite").write_bytes(db_module.SQLITE_HEADER + b"abc")
    target = root / NOT_AN_INDEX[what].format(key=transcript.parent.name, sid=s.session_id)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.rglob("*") if p.is_file()}
    args = ["--config-dir", str(root), "list", "--scope", "all", "--json"]
    if via == "--db":
        result = CliRunner().invoke(cli, ["--db", str(target), *args])
    else:
        result = CliRunner().invoke(cli, args, env={"SESSIONDEX_DB": str(target)})
    no_traceback(result)
    assert result.exit_code == 2, result.output
    named = via if via == "SESSIONDEX_DB" else repr(via)
    if "UTF-8" in what:
        assert "caf\\xe9.db" in result.stderr  # the byte shown, not a replacement mark
        if via == "--db":
            named = "an argument"  # every argument is checked before the options are read
    assert result.stderr.startswith(f"Error: Invalid value for {named}: ")
    assert len(result.stderr.splitlines()) == 1
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before  # nothing moved, written or left beside it
    with pytest.raises(db_module.NotAnIndex):
        sessiondex_index(target, root)


@pytest.mark.parametrize("what", ["a copy of an index", "a SQLite file without a table"])
def test_a_sqlite_file_that_may_be_the_index_is_taken(tmp_path: Path, what: str) -> None:
    """The other side of refusing another program's database: an index copied
    elsewhere (no lock files beside it) and a database with no table yet are taken."""
    world = World(tmp_path / "w")
    target = tmp_path / "elsewhere" / "index.db"
    target.parent.mkdir()
    if what == "a copy of an index":
        settle(world.db)
        shutil.copyfile(world.db, target)
    else:
        with contextlib.closing(sqlite3.connect(target)) as conn:
            conn.execute("VACUUM")  # a header and a first page, nothing in it
    args = ["--config-dir", str(world.root), "--db", str(target), "list", "--scope", "all"]
    result = CliRunner().invoke(cli, [*args, "--all-kinds", "--json"])
    assert World.ids(result) == world.expected


@pytest.mark.parametrize("cache", ["claude/projects", "caf\udce9"])
def test_a_default_index_path_that_cannot_be_says_it_is_the_default(
    tmp_path: Path, cache: str
) -> None:
    """With neither --db nor SESSIONDEX_DB, the path comes from XDG_CACHE_HOME: the
    error says it is the default path and names the options that would change it, not
    the word "default" as if it were an option, nor "Invalid value for '--db'" (an
    option nobody gave: exit 1, not a usage error)."""
    root = tmp_path / "claude"
    session = ConfigTree(root).session(cwd="/w/app")
    session.user("hello")
    session.write()
    env = {"XDG_CACHE_HOME": str(tmp_path / cache), "SESSIONDEX_DB": None}
    result = CliRunner().invoke(cli, ["--config-dir", str(root), "list"], env=env)
    no_traceback(result)
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("Error: ") and "Invalid value" not in line, line
    assert line.endswith(
        "It is the default index path (under $XDG_CACHE_HOME): choose another with"
        " --db PATH or SESSIONDEX_DB"
    ), line
    assert not (tmp_path / cache / "sessiondex").exists()


def sessiondex_index(target: Path, root: Path) -> None:
    import sessiondex

    sessiondex.Index(target, [root]).close()


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", DAMAGES)
def test_a_damaged_index_is_moved_aside_and_rebuilt(
    pristine: tuple[World, Any], tmp_path: Path, kind: str, command: str
) -> None:
    if command == "rename":  # changes a transcript: a tree of its own
        world = World(tmp_path)
        expected = None
    else:
        shared, expected = pristine
        world = World.__new__(World)
        world.__dict__.update(shared.__dict__)
        world.db = tmp_path / "index.db"
        shutil.copyfile(shared.db, world.db)
        for lock in shared.db.parent.glob(f"{shared.db.name}.*.lock"):
            # An index in use leaves its lock files beside it: a damaged file with them
            # is damage (without them, a file that was never the index is refused).
            shutil.copyfile(lock, world.db.parent / lock.name)
    damage(world.db, kind)
    args = [a.format(sid=world.sid) for a in COMMANDS[command]]
    result = world.run(*args)
    no_traceback(result)
    assert result.exit_code == 0, result.output
    moved = [
        p for p in tmp_path.glob("index.db.corrupt-*") if not p.name.endswith(("-wal", "-shm"))
    ]
    notes = [line for line in result.stderr.splitlines() if "was damaged" in line]
    touched = kind in DAMAGES_EVERYONE_MEETS or (
        kind == "bad-page:messages_fts_data" and command in MEETS_A_BAD_FTS_PAGE
    )
    if touched:
        assert len(moved) == 1 and len(notes) == 1, (moved, result.stderr)
        assert str(world.db) in notes[0] and str(moved[0]) in notes[0]
    else:  # rebuilt row by row, or never read by this answer (still right): not moved
        assert moved == [] and notes == [], result.stderr
    if command.startswith("list"):
        assert World.ids(result) == world.expected
    elif command == "search":
        assert World.ids(result) == {world.sid}
    elif command == "show":
        assert "feeding" in result.stdout
    elif command == "rename":
        listed = world.run("--no-refresh", "resolve", world.sid, "--json")
        assert one_session(listed.stdout)["title"] == "Renamed after damage"
    if kind in ("undecodable-json", "incomplete-object") and command != "index --rebuild":
        # The answers were right (objects rebuilt from their rows); the stored values
        # stay as they are until a rebuild rewrites them.
        assert world.run("index", "--rebuild").exit_code == 0
    elif not touched:
        return  # the bad page is still there, for the first command that reads it
    # The index is whole again and equals one built from scratch.
    db = open_db(world.db)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        check_fts_integrity(db)
        if expected is None:
            expected = rebuilt_snapshot([world.root], tmp_path / "rebuilt.db")
        assert index_snapshot(db) == expected
    finally:
        db.close()


def test_the_schema_objects_are_what_the_migrations_make(tmp_path: Path) -> None:
    """``shape.SCHEMA_OBJECTS``, which an opening checks, is the schema of a new index:
    a migration that adds or drops a table must say so there."""
    from sessiondex.indexer.shape import SCHEMA_OBJECTS

    db = open_db(tmp_path / "new.db")
    try:
        made = {
            row[0]
            for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                " AND name NOT LIKE 'sqlite_%' AND name != '_sqlite_migrations'"
            )
        }
    finally:
        db.close()
    assert made == SCHEMA_OBJECTS


def test_index_rebuild_works_whatever_the_file_holds(tmp_path: Path) -> None:
    """A valid SQLite file of something else (a table named like ours, other columns)
    cannot be migrated; ``index --rebuild`` moves it aside and builds anew."""
    world = World(tmp_path)
    world.db.unlink()
    conn = sqlite3.connect(world.db)
    conn.execute("CREATE TABLE files (name TEXT, owner TEXT)")
    conn.execute("INSERT INTO files VALUES ('mine', 'someone')")
    conn.commit()
    conn.close()
    result = world.run("index", "--rebuild")
    no_traceback(result)
    assert result.exit_code == 0, result.output
    (moved,) = (p for p in tmp_path.glob("index.db.corrupt-*") if not p.name.endswith("-wal"))
    kept = sqlite3.connect(moved)
    assert kept.execute("SELECT * FROM files").fetchall() == [("mine", "someone")]
    kept.close()
    assert World.ids(world.run("list", "--scope", "all", "--all-kinds", "--json")) == world.expected


# ------------------------------------------------------- 2. read-only, disk full
@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make ``path`` (a file or a directory) unwritable, even for root."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(
            f"running as root and chattr +i failed ({done.stderr!r}): cannot make {path} read-only"
        )
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_read_only_index_still_answers_and_writers_say_so(tmp_path: Path, what: str) -> None:
    base = tmp_path / "cache"
    base.mkdir()
    world = World(tmp_path)
    shutil.move(str(world.db), base / "index.db")
    world.db = base / "index.db"
    before = world.session.path.read_bytes()
    with read_only(world.db if what == "file" else base):
        quiet = world.run("--no-refresh", "list", "--scope", "all", "--all-kinds", "--json")
        no_traceback(quiet)
        assert World.ids(quiet) == world.expected
        refreshing = world.run("search", WORD, "--scope", "all", "--json")
        no_traceback(refreshing)
        assert World.ids(refreshing) == {world.sid}
        assert "answering from it as it is" in refreshing.stderr
        shown = world.run("show", world.sid)
        no_traceback(shown)
        assert shown.exit_code == 0 and "feeding" in shown.stdout
        for args in (["rename", world.sid, "never written"], ["index"]):
            refused = world.run(*args)
            no_traceback(refused)
            assert refused.exit_code == 1, refused.output
            line = error_line(refused)
            assert str(world.db) in line
            assert "read-only" in line, line
    assert world.session.path.read_bytes() == before  # refused before the transcript


# A table of the test's own that takes up the index's free pages while the disk is full.
FILLER = "test_disk_filler"


def fill_free_pages(db: Any) -> None:
    """Let the index file not grow, and use up its free pages: rows of half a page until
    SQLite says the disk is full. What is left is slack inside the pages in use (up to a
    page of it per table: more with bigger pages), so a write that must fail needs more
    than a page (overflow pages), whatever the page size (``test_disk_full_...``)."""
    conn: sqlite3.Connection = db.conn
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.execute(f"CREATE TABLE IF NOT EXISTS {FILLER} (b BLOB)")  # its root page may grow the file
    conn.commit()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    for _ in range(2 * free + 10):  # each row takes a page: bounded by the free pages
        try:
            conn.execute(f"INSERT INTO {FILLER} VALUES (randomblob(?))", [page_size // 2])
            conn.commit()
        except sqlite3.OperationalError as exc:
            assert "full" in str(exc), exc
            conn.rollback()
            break
    else:
        raise AssertionError(f"{free} free pages, and the index file still grows")
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """``disk["full"] = True``: every index opened from now on cannot grow (SQLITE_FULL)
    and has no free page left; once it is False again, the filler is dropped."""
    state = {"full": False}
    real = db_module.prepare

    def prepare(db: Any) -> Any:
        db = real(db)
        if state["full"]:
            fill_free_pages(db)
        else:
            db.execute(f"DROP TABLE IF EXISTS {FILLER}")
        return db

    monkeypatch.setattr(db_module, "prepare", prepare)
    return state


@pytest.mark.parametrize("mutation", ["rename", "tag"])
def test_disk_full_is_one_line_and_the_index_catches_up(
    tmp_path: Path, disk: dict[str, bool], mutation: str
) -> None:
    """``index`` and a mutation on a full disk: one line each, the index intact, and
    caught up once there is room. The mutation's record lands (the disk is full for the
    index only): its line says so, not just "cannot write the index", and a rename's
    title sidecar is written (helper h510: it said only the index's failure, and the
    sidecar kept the old name)."""
    world = World(tmp_path)
    # (a new ConfigTree would number its sessions from 1 again: an ID of our own)
    big = ConfigTree(world.root).session(cwd=CWD, session_id=str(uuid.uuid4()))
    filler = random.Random(5)
    for i in range(40):
        # random hex: message text is stored compressed, so it must not shrink much
        noise = " ".join(filler.randbytes(16).hex() for _ in range(300))
        big.user(f"bulky wombatword {i} {noise}")
    big.write()
    # A name longer than a page (random hex, it must not shrink either): a short one
    # could be written into the slack of the pages the index already has, which a real
    # full disk may allow too, and this test is about the write that does not fit.
    page_size = sqlite3.connect(world.db).execute("PRAGMA page_size").fetchone()[0]
    name = "Renamed on a full disk " + filler.randbytes(page_size).hex()
    if mutation == "rename":
        change, done = ["rename", world.sid, name], f"renamed {world.sid} to {name!r}; "
    else:
        change, done = ["tag", world.sid, name], f"tagged {world.sid} #{name}; "
    disk["full"] = True
    for args in (["index"], change):
        result = world.run(*args)
        no_traceback(result)
        assert result.exit_code == 1, result.output
        line = error_line(result)
        assert str(world.db) in line and "disk is full" in line
        if args is change:
            assert line.startswith(f"Error: {done}the index could not be updated: "), line
            assert line.endswith("it will catch up on the next refresh"), line
        db = open_db(world.db)
        try:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            check_fts_integrity(db)
        finally:
            db.close()
    reading = world.run("list", "--scope", "all", "--all-kinds", "--json")
    no_traceback(reading)
    assert World.ids(reading) == world.expected  # as it was: the new session not yet in
    assert "disk is full" in reading.stderr
    disk["full"] = False
    assert world.run("index").exit_code == 0
    found = world.run("--no-refresh", "search", "wombatword", "--scope", "all", "--json")
    assert World.ids(found) == {big.session_id}
    resolved = one_session(world.run("--no-refresh", "resolve", world.sid, "--json").stdout)
    sidecar = world.session.path.with_suffix("") / "custom-title.json"
    if mutation == "rename":
        assert resolved["custom_title"] == name  # the transcript had it (the title is cut)
        assert json.loads(sidecar.read_bytes()) == {"customTitle": name}
    else:
        assert resolved["tag"] == name
    db = open_db(world.db)
    try:
        assert index_snapshot(db) == rebuilt_snapshot([world.root], tmp_path / "rebuilt.db")
    finally:
        db.close()


def _bulky_new_session(world: World) -> Any:
    """A session written after the index was built, too big for a full disk's slack."""
    big = ConfigTree(world.root).session(cwd=CWD, session_id=str(uuid.uuid4()))
    filler = random.Random(7)
    for i in range(40):
        # random hex: message text is stored compressed, so it must not shrink much
        noise = " ".join(filler.randbytes(16).hex() for _ in range(300))
        big.user(f"bulky wombatword {i} {noise}")
    big.assistant("the wombat is fed")
    big.write()
    return big


@pytest.mark.parametrize("command", ["show", "export"])
def test_a_session_the_full_disk_kept_out_of_the_index_is_still_shown(
    tmp_path: Path, disk: dict[str, bool], command: str
) -> None:
    """A new session the refresh could not write for a full disk: ``show <its ID>``
    said "not found" after the note that the index could not be updated, though its
    transcript is there. A full ID whose transcript exists is read from the file, as
    Claude Code resolves it (a prefix or a name needs the index: it says so)."""
    world = World(tmp_path)
    big = _bulky_new_session(world)
    disk["full"] = True
    out = tmp_path / "out.md"
    args = [command, big.session_id] + (["-o", str(out)] if command == "export" else [])
    result = world.run(*args)
    no_traceback(result)
    assert "disk is full" in result.stderr  # the note: answered without the index
    assert result.exit_code == 0, result.output
    text = out.read_text() if command == "export" else result.stdout
    assert "bulky wombatword 39" in text and "the wombat is fed" in text
    # A prefix needs the index: "not found" says why it may not be there.
    prefix = world.run("show", big.session_id[:8])
    no_traceback(prefix)
    assert prefix.exit_code == 1
    assert "not up to date" in error_line(prefix) and "full session ID" in error_line(prefix)


def test_a_full_disk_with_no_room_for_the_shm_file_still_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index closed cleanly has no ``-shm``; on a full disk a reader cannot make one,
    and SQLite says "disk I/O error" (IOERR_SHMSIZE). Every reading command failed so,
    where a read-only directory answers from the file as it stands (helper 122)."""
    world = World(tmp_path)
    real_connect = sqlite3.connect

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        # Every open of the index but an immutable one needs the -shm it cannot make.
        text = str(database)
        if str(world.db) in text and "immutable=1" not in text:
            raise sqlite3.OperationalError("disk I/O error")
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    quiet = world.run("--no-refresh", "list", "--scope", "all", "--all-kinds", "--json")
    no_traceback(quiet)
    assert World.ids(quiet) == world.expected
    found = world.run("search", WORD, "--scope", "all", "--json")
    no_traceback(found)
    assert World.ids(found) == {world.sid}
    shown = world.run("--no-refresh", "show", world.sid)
    assert shown.exit_code == 0 and "feeding" in shown.stdout


STDOUT_COMMANDS = [
    # (arguments, whether the command changed something before printing)
    (["--help"], False),
    (["--version"], False),
    (["list", "--help"], False),
    (["list", "--scope", "all", "--json"], False),
    (["stats"], False),
    (["show", "{sid}"], False),
    (["export", "{sid}", "-o", "-"], False),
    (["tag", "{sid}", "fed"], True),
    (["cleanup"], False),  # a dry run (helper 96: it said its change was done)
]


@pytest.fixture(scope="module")
def stdout_world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("stdout"))


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("stdout", ["full", "closed"])
@pytest.mark.parametrize(("args", "changes"), STDOUT_COMMANDS)
def test_standard_output_that_cannot_be_written_is_one_error_line(
    stdout_world: World, stdout: str, args: list[str], changes: bool
) -> None:
    """Helper 93: ``list --json > /dev/full`` and ``stats >&-`` ended in a traceback
    (``OSError: No space left on device``, ``'NoneType' object has no attribute
    'write'``), as did help and ``--version``, printed before any command runs. Now one
    ``Error:`` line and exit 1; a command that changed something says it is done."""
    world = stdout_world
    command = [*INDEX_CMD, "--config-dir", str(world.root), "--db", str(world.db)]
    command += [a.format(sid=world.sid) for a in args]
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            command,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            preexec_fn=(lambda: os.close(1)) if stdout == "closed" else None,
        )
    why = "No space left on device" if stdout == "full" else "standard output is closed"
    expected = f"Error: cannot write to standard output: {why}"
    if changes:
        expected += " (what the command changed is done)"
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines()[-1] == expected, result.stderr
    assert "Traceback" not in result.stderr and "Exception ignored" not in result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("stdout", ["full", "a pipe nobody reads"])
def test_the_mcp_servers_standard_output_that_fails_is_one_line_or_quiet(
    stdout_world: World, stdout: str
) -> None:
    """Helper 96: ``mcp`` over stdio with stdout on /dev/full, or a client gone, ended in
    an 80-line ExceptionGroup traceback from the MCP SDK's task group. A full disk is
    the one ``Error:`` line; a client that went away, a quiet exit 1 (click's, as for
    ``| head``)."""
    world = stdout_world
    initialize = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        }
    )
    command = [*INDEX_CMD, "--config-dir", str(world.root), "--db", str(world.db), "mcp"]
    if stdout == "full":
        with open("/dev/full", "w") as full:
            result = subprocess.run(
                command, input=initialize + "\n", stdout=full, stderr=subprocess.PIPE,
                text=True, timeout=60,
            )  # fmt: skip
        assert result.stderr.splitlines()[-1] == (
            "Error: cannot write to standard output: No space left on device"
        ), result.stderr
    else:
        read, write = os.pipe()
        os.close(read)  # the client is gone before the answer
        try:
            result = subprocess.run(
                command, input=initialize + "\n", stdout=write, stderr=subprocess.PIPE,
                text=True, timeout=60,
            )  # fmt: skip
        finally:
            os.close(write)
        assert "Error" not in result.stderr, result.stderr
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "Exception" not in result.stderr


# ------------------------------------------------------------------- 3. busy
@contextlib.contextmanager
def turn_held(db: Path, seconds: float) -> Iterator[None]:
    """Another writer holds the index's write turn for ``seconds`` (a thread here: the
    turn is a lock per open file, so it excludes this process's other connections)."""
    turn = WriteTurn(db)
    taken = threading.Event()

    def hold() -> None:
        turn.acquire(5)
        taken.set()
        time.sleep(seconds)
        turn.release()

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait(5)
    try:
        yield
    finally:
        holder.join()
        turn.close()


def test_a_writer_waits_its_turn_says_so_on_a_terminal_and_succeeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World(tmp_path)
    monkeypatch.setattr(progress_module, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(meta_module, "NOTICE_AFTER", 0.3)
    with turn_held(world.db, 1.0):
        started = time.monotonic()
        result = world.run("--no-refresh", "rename", world.sid, "Renamed in turn")
        waited = time.monotonic() - started
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert waited >= 0.5
    assert result.stderr.count("waiting for another sessiondex process") == 1, result.stderr
    resolved = one_session(world.run("--no-refresh", "resolve", world.sid, "--json").stdout)
    assert resolved["title"] == "Renamed in turn"


def test_a_reader_that_cannot_refresh_in_time_answers_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World(tmp_path)
    late = ConfigTree(world.root).session(cwd=CWD, session_id=str(uuid.uuid4()))
    late.user("written after the last index")
    late.write()
    monkeypatch.setattr(index_module, "READ_WAIT", 0.3)
    monkeypatch.setattr(progress_module, "stderr_is_terminal", lambda: False)
    with turn_held(world.db, 1.5):
        result = world.run("list", "--scope", "all", "--all-kinds", "--json")
    no_traceback(result)
    assert World.ids(result) == world.expected  # the index as it was
    (note,) = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert "another sessiondex process is writing to it" in note
    assert "answering from it as it is" in note
    assert late.session_id in World.ids(
        world.run("list", "--scope", "all", "--all-kinds", "--json")
    )


def test_a_writer_that_waits_too_long_exits_1_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World(tmp_path)
    before = world.session.path.read_bytes()
    monkeypatch.setattr(meta_module, "WRITE_WAIT", 0.3)
    with turn_held(world.db, 1.0):
        result = world.run("--no-refresh", "rename", world.sid, "Too late")
    no_traceback(result)
    assert result.exit_code == 1
    line = error_line(result)
    assert str(world.db) in line and "busy" in line, line
    assert world.session.path.read_bytes() == before


def test_damage_met_after_the_answer_is_printed_does_not_print_it_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``list --json`` printed its rows, then met a bad page (its expiring-sessions
    check), rebuilt the index and ran again: two JSON documents on stdout."""
    import sessiondex.query.expiry as expiry_module

    world = World(tmp_path)
    calls = []

    def damaged(*args: Any, **kwargs: Any) -> int:
        calls.append(1)
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(expiry_module, "expiring_soon", damaged)
    result = world.run("list", "--scope", "all", "--all-kinds", "--json")
    no_traceback(result)
    assert calls == [1]  # not run a second time
    assert result.exit_code == 1
    # One JSON document on stdout, the whole answer.
    assert {r["session_id"] for r in json.loads(result.stdout)} == world.expected
    error = error_line(result)
    assert "has been rebuilt" in error and "run the command again" in error


def test_a_damaged_index_reached_through_a_link_is_still_rebuilt(tmp_path: Path) -> None:
    """Its lock files lie beside the file the link names, not beside the link: it was
    the index all the same (it was refused as 'not a sessiondex index')."""
    world = World(tmp_path)
    damage(world.db, "random-bytes")
    link = tmp_path / "link.db"
    link.symlink_to(world.db)
    result = CliRunner().invoke(
        cli, ["--config-dir", str(world.root), "--db", str(link), "list", "--scope", "all"]
    )
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert "was damaged" in result.stderr


@pytest.mark.parametrize(
    ("read_only", "said"),
    [
        ({"index.db"}, "cannot write the index at {db}: "),
        ({"index.db-wal"}, "cannot write the index at {db} ({db}-wal read-only): "),
        ({"index.db-wal", "index.db-shm"}, "({db}-wal and {db}-shm read-only)"),
        ({"folder"}, "(its folder {folder} is read-only)"),
    ],
    ids=["main", "wal", "both", "folder"],
)
def test_a_read_only_side_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_only: set[str], said: str
) -> None:
    """After ``chmod 644 index.db`` the -wal and -shm made read-only with it still were,
    and the message sent the user back to index.db. The check is simulated
    (``os.access``): the suite may run as root."""
    import sqlite3

    from sessiondex.indexer.faults import describe

    db = tmp_path / "index.db"
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        (tmp_path / name).write_bytes(b"")
    real_access = os.access

    def access(p: Any, mode: int) -> bool:
        name = "folder" if Path(p) == tmp_path else Path(p).name
        return False if name in read_only else real_access(p, mode)

    monkeypatch.setattr(os, "access", access)
    text = describe(sqlite3.OperationalError("attempt to write a readonly database"), db)
    assert said.format(db=db, folder=tmp_path) in text


@pytest.mark.parametrize(
    "field", ["title", "last_activity", "file_size", "git_branch", "tag", "cwd", "message_count"]
)
@pytest.mark.parametrize("value", ['[1, {"a": 2}]', "42", '{"x": 1}'])
def test_a_stored_object_with_a_value_of_the_wrong_type_still_makes_a_table(
    tmp_path: Path, field: str, value: str
) -> None:
    """A stored object edited by hand that keeps its keys and stays valid JSON is
    trusted (checking every value's type would tax every listing). A table built from a
    number for a title, or a list for a date, ended in a traceback; it shows the row
    with what it can."""
    import sqlite3

    world = World(tmp_path)
    with sqlite3.connect(world.db) as conn:
        conn.execute(
            f"UPDATE sessions SET object_json = json_set(object_json, '$.{field}', json(?))",
            [value],
        )
    for args in (
        ["list", "--scope", "all"],
        ["search", WORD, "--scope", "all"],
        ["resolve", world.sid],
    ):
        result = world.run("--no-refresh", *args, "--cwd", CWD)
        assert result.exit_code == 0, (args, result.output)
        assert "Traceback" not in result.output and world.sid[:8] in result.stdout


def test_completion_opens_nothing_of_another_programs_database(tmp_path: Path) -> None:
    """Helper 97: a Tab with ``--db`` naming another program's WAL database left an
    ``app.db-shm`` beside it (completion opened it read-only to look); the commands
    refuse it without opening it, and so does completion now."""
    owner = tmp_path / "owner.db"
    with contextlib.closing(sqlite3.connect(owner)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE other (x)")
        conn.commit()
        shutil.copyfile(owner, tmp_path / "app.db")
        shutil.copyfile(f"{owner}-wal", tmp_path / "app.db-wal")
    assert db_module.open_if_current(tmp_path / "app.db") is None
    assert sorted(p.name for p in tmp_path.glob("app.db*")) == ["app.db", "app.db-wal"]


def test_an_index_emptied_under_an_open_connection_is_rebuilt_not_waited_on(
    tmp_path: Path,
) -> None:
    """A running ``watch`` (or ``pick``, the MCP or web server) keeps the index open in
    WAL mode, which holds a shared lock on the file. Emptied under it (``: > index.db``,
    a sync tool), the file has no page, and no writer can ever give it its first ones
    while that connection lives: the next reading command hung for good inside SQLite's
    backup, holding the write turn. It is damage: moved aside and rebuilt."""
    root = tmp_path / "claude"
    session = ConfigTree(root).session(cwd=CWD)
    session.user(f"hello {WORD}")
    session.write()
    target = tmp_path / "index.db"
    holder = open_db(target)  # the watcher's connection
    try:
        refresh(holder, [root])
        os.truncate(target, 0)
        env = {**os.environ, "SESSIONDEX_DB": str(target)}
        args = ["--config-dir", str(root), "list", "--scope", "all", "--json"]
        try:
            done = subprocess.run(
                [*INDEX_CMD, *args], capture_output=True, text=True, env=env, timeout=25
            )
        except subprocess.TimeoutExpired:
            pytest.fail("a reading command hung on an index emptied under an open connection")
    finally:
        holder.close()
    assert done.returncode == 0, done.stderr
    assert [row["session_id"] for row in json.loads(done.stdout)] == [session.session_id]
    notes = [line for line in done.stderr.splitlines() if "was damaged" in line]
    assert len(notes) == 1, done.stderr


def test_a_long_lived_index_writes_again_once_its_file_is_writable(tmp_path: Path) -> None:
    """SQLite opens a file it may not write read-only and keeps the handle so: an Index
    that first met its file read-only (``serve``, ``mcp``, the picker) failed every
    refresh after the file was writable again, until restarted (helper h510)."""
    from sessiondex import Index

    world = World(tmp_path)
    grown = ConfigTree(world.root).session(cwd=CWD, session_id=str(uuid.uuid4()))
    grown.user("a lateword arrives")
    grown.write()
    with Index(world.db, [world.root]) as index:
        with read_only(world.db):
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                index.refresh()
        index.refresh()
        assert [s["session_id"] for s in index.search("lateword", scope="all")] == [
            grown.session_id
        ]
