"""Shared fixtures: every test gets its own cache dir and no inherited Claude config."""

from __future__ import annotations

import sqlite3
import tempfile

import pytest


def pytest_report_header(config: pytest.Config) -> str:
    con = sqlite3.connect(":memory:")
    try:
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        fts5 = "yes"
    except sqlite3.OperationalError:
        fts5 = "no"
    return f"sqlite {sqlite3.sqlite_version}, fts5: {fts5}"


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory, monkeypatch) -> None:
    """Never read the machine's ~/.claude or write its ~/.cache."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    # the default archive dir and the archive job's unit files
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    # tempfile (and any child process) writes under this test's own temp dir, never /tmp
    scratch = tmp_path_factory.mktemp("tmp")
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    for name in ("CLAUDE_CONFIG_DIR", "SESSIONDEX_DB", "CLAUDE_CODE_PROJECT_DIR_NAME"):
        monkeypatch.delenv(name, raising=False)
