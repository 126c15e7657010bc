"""Found by helper h611 reviewing 14f5e6e (an immutable reader whose folder can be
written again is reopened, for mcp and serve): the picker's row source is the third
long-lived front end on one ``Index``, and it kept the immutable handle."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.index import Index
from sessiondex.picker.source import Source
from tests.builders import ConfigTree, git
from tests.test_reliability_faults import read_only


def test_the_pickers_rows_are_read_anew_once_the_index_folder_can_be_written(
    tmp_path: Path,
) -> None:
    """A picker opened where its index's folder could not be written reads the file as
    an immutable one (no -shm can be made). Once the folder can be written again, its
    Freshness thread's refresh writes the index, but the rows' queries still came from
    the immutable handle, which sees no change: a reload showed the picker's first rows
    until it was closed."""
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd="/w/app")
    session.user("first words")
    session.write()
    base = tmp_path / "cache"
    base.mkdir()
    db = base / "index.db"
    with Index(db, [tree.root]) as builder:
        builder.refresh()
    source = Source(db, [tree.root])
    try:
        with read_only(base):
            found = source.submit(lambda index: index.search("first", scope="all")).result()
            assert len(found) == 1
            assert source.submit(lambda index: index.read_immutable).result()
        session.user("zanzibar appears")
        session.append()
        with Index(db, [tree.root]) as refresher:  # what Freshness does, on its own Index
            assert refresher.refresh().grown == 1
        found = source.submit(lambda index: index.search("zanzibar", scope="all")).result()
        assert len(found) == 1
        assert not source.submit(lambda index: index.read_immutable).result()
    finally:
        source.close()


def test_current_branch_in_a_repository_git_does_not_trust_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found reviewing ab32893 (--current-branch says why there is no branch): in a
    repository owned by another user (a mounted volume, a container run as root),
    git refuses every command ("detected dubious ownership"), and the line said
    '<dir> is not in a git repository', sending the user away from a repository that
    is there. git's own knob stands in for the other owner."""
    tree = ConfigTree(tmp_path / "claude")
    tree.projects_dir.mkdir(parents=True, exist_ok=True)
    cwd = tmp_path / "work"
    cwd.mkdir()
    git("init", "-q", "-b", "main", cwd=cwd)
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db"), "list"]
        + ["--current-branch", "--cwd", str(cwd)],
    )
    assert result.exit_code == 1, result.output
    assert result.stderr == (
        f"Error: --current-branch: git does not trust the repository at {cwd}: it is"
        " owned by another user (git config --global --add safe.directory <dir>)\n"
    )
