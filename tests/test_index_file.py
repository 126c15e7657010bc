"""The index file's page size: every new file gets ``PAGE_SIZE`` pages, an older file
gets them when a rebuild VACUUMs it (derivation rules changed, ``index --rebuild``), and
the WAL is checkpointed at the same number of bytes whatever the page size."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

import sessiondex
import sessiondex.indexer.db as db_module
from sessiondex.indexer.db import PAGE_SIZE, WAL_CHECKPOINT_BYTES, open_db
from sessiondex.indexer.meta import set_meta
from sessiondex.indexer.refresh import refresh
from sessiondex.indexer.shape import DERIVATION_VERSION
from tests.builders import copy_fixtures
from tests.helpers_index import check_fts_integrity, index_snapshot, rebuilt_snapshot

OLD_PAGE_SIZE = 4096  # what index files had before PAGE_SIZE was 16 KiB
CHECKPOINT_PAGES = WAL_CHECKPOINT_BYTES // PAGE_SIZE


def _pragma(path: Path, name: str) -> Any:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def _through_open_db(path: Path, root: Path) -> None:
    open_db(path).close()


def _through_index(path: Path, root: Path) -> None:
    with sessiondex.Index(path, [root]) as index:
        index.refresh()


def _through_a_connection_of_the_caller(path: Path, root: Path) -> None:
    conn = sqlite3.connect(path)
    with sessiondex.Index(conn, [root]) as index:
        index.refresh()
    conn.close()


def _through_a_database_of_the_caller(path: Path, root: Path) -> None:
    db = sqlite_utils.Database(path)
    with sessiondex.Index(db, [root]) as index:
        index.refresh()
    db.close()


def _replacing_a_damaged_file(path: Path, root: Path) -> None:
    open_db(path).close()  # it was the index (its lock files stay beside it) ...
    path.write_bytes(bytes(range(256)) * 64)  # ... then garbage: a damaged index
    notes: list[str] = []
    open_db(path, on_recover=notes.append).close()
    assert notes and "damaged" in notes[0]


@pytest.mark.parametrize(
    "create",
    [
        _through_open_db,
        _through_index,
        _through_a_connection_of_the_caller,
        _through_a_database_of_the_caller,
        _replacing_a_damaged_file,
    ],
)
def test_every_new_index_file_has_pages_of_page_size(
    tmp_path: Path, create: Callable[[Path, Path], None]
) -> None:
    root = copy_fixtures(tmp_path)
    path = tmp_path / "index.db"
    create(path, root)
    assert _pragma(path, "page_size") == PAGE_SIZE
    assert _pragma(path, "journal_mode") == "wal"


def test_the_wal_is_checkpointed_at_the_same_bytes_whatever_the_page_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = open_db(tmp_path / "new.db")
    assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == CHECKPOINT_PAGES
    db.close()
    monkeypatch.setattr(db_module, "PAGE_SIZE", OLD_PAGE_SIZE)
    db = open_db(tmp_path / "old.db")
    assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000  # SQLite's default
    db.close()


def _old_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A filled index file of 4 KiB pages, as made before ``PAGE_SIZE`` changed."""
    root = copy_fixtures(tmp_path)
    path = tmp_path / "index.db"
    with monkeypatch.context() as patch:
        patch.setattr(db_module, "PAGE_SIZE", OLD_PAGE_SIZE)
        db = open_db(path)
        refresh(db, [root])
        db.close()
    assert _pragma(path, "page_size") == OLD_PAGE_SIZE
    return root, path


def _outdate(path: Path) -> None:
    """Mark the index as derived by the previous rules (the next open clears it)."""
    db = open_db(path)
    set_meta(db, "derivation_version", str(DERIVATION_VERSION - 1))
    db.conn.commit()
    db.close()


def _answers_as_rebuilt(db: Any, root: Path, tmp_path: Path) -> None:
    refresh(db, [root])
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    check_fts_integrity(db)
    assert index_snapshot(db) == rebuilt_snapshot([root], tmp_path / "rebuilt.db")


def test_new_derivation_rules_repack_an_older_file_into_new_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, path = _old_index(tmp_path, monkeypatch)
    _outdate(path)
    db = open_db(path)
    assert db.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == CHECKPOINT_PAGES
    _answers_as_rebuilt(db, root, tmp_path)
    db.close()


def test_index_rebuild_repacks_an_older_file_into_new_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, path = _old_index(tmp_path, monkeypatch)
    with sessiondex.Index(path, [root], refresh=False) as index:
        index.refresh(rebuild=True)
        assert index.search("fixture", scope="all") is not None
    assert _pragma(path, "page_size") == PAGE_SIZE
    assert _pragma(path, "journal_mode") == "wal"
    db = open_db(path)
    _answers_as_rebuilt(db, root, tmp_path)
    db.close()


def test_an_older_file_another_connection_has_open_keeps_its_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leaving WAL mode needs the file to itself: with a reader open the rebuild goes on
    in the old pages (no wait, no error), and a later rebuild can still repack it."""
    root, path = _old_index(tmp_path, monkeypatch)
    _outdate(path)
    reader = sqlite3.connect(path)
    reader.execute("SELECT count(*) FROM sessions").fetchone()
    db = open_db(path)
    assert db.execute("PRAGMA page_size").fetchone()[0] == OLD_PAGE_SIZE
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0  # cleared all the same
    _answers_as_rebuilt(db, root, tmp_path)
    reader.close()
    refresh(db, [root], rebuild=True)
    assert db.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE
    _answers_as_rebuilt(db, root, tmp_path)
    db.close()


@pytest.mark.parametrize(
    "command",
    [["list", "--scope", "all"], ["search", "anything"], ["stats"], ["index"]],
)
def test_an_index_derived_by_a_newer_sessiondex_is_left_alone(
    tmp_path: Path, command: list[str]
) -> None:
    """An older sessiondex (a ``watch`` service left running through an upgrade, an old
    virtualenv) meeting an index a newer one derived does not clear it: both would
    otherwise clear and rebuild it in turns, every time either opened it. It stops with
    one line instead, and the newer one's index keeps every row."""
    from click.testing import CliRunner

    from sessiondex.cli.main import cli

    root = copy_fixtures(tmp_path)
    path = tmp_path / "index.db"
    db = open_db(path)
    refresh(db, [root])
    set_meta(db, "derivation_version", str(DERIVATION_VERSION + 1))
    db.conn.commit()
    sessions = db.execute("SELECT count(*) FROM sessions").fetchone()[0]
    db.close()
    assert sessions

    result = CliRunner().invoke(cli, ["--config-dir", str(root), "--db", str(path), *command])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    message = result.stderr.strip().splitlines()
    assert len(message) == 1 and "newer sessiondex" in message[0], result.stderr
    check = sqlite3.connect(path)
    try:
        assert check.execute("SELECT count(*) FROM sessions").fetchone()[0] == sessions
        assert check.execute("SELECT value FROM meta WHERE key = 'derivation_version'").fetchone()[
            0
        ] == str(DERIVATION_VERSION + 1)
    finally:
        check.close()
    assert not list(tmp_path.glob("index.db.corrupt-*"))
