"""Found by helper h611 reviewing 14f5e6e (an immutable reader whose folder can be
written again is reopened, for mcp and serve): the picker's row source is the third
long-lived front end on one ``Index``, and it kept the immutable handle."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.index import Index
from sessiondex.picker.source import Source
from sessiondex.transcripts.keys import canonical_directory, project_key, sanitize_path
from tests.builders import ConfigTree, git
from tests.test_reliability_faults import read_only
from tests.test_watch import WatchProcess, wait_for


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


def test_a_session_aliases_file_written_while_watch_runs_puts_its_dir_in_scope(
    tmp_path: Path,
) -> None:
    """Found reviewing d083c0a (the alias dirs of ``.session-aliases`` in scopes, read by
    the refresh): with ``watch`` running a reading command skips its own refresh, and
    the watcher acted only on ``.jsonl`` and directory events. A session started in a
    symlinked spelling of the directory (its transcript in its own project dir, its dir
    appended to the real dir's ``.session-aliases``) was indexed at once but stayed out
    of the directory's list until the periodic rescan (5 minutes; never with none)."""
    tree = ConfigTree(tmp_path / "claude")
    real = tmp_path / "my-app"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    home = tree.session(cwd=canonical_directory(real))
    home.user("the quokka ledger at home")
    home.write()
    db = tmp_path / "index.db"
    with Index(db, [tree.root]) as builder:
        builder.refresh()
    watcher = WatchProcess(tree.root, db, "--no-archive")
    try:
        watcher.wait_for_line("watching")
        _link_session_and_alias(tree, real, link, db, home.session_id)
    finally:
        assert watcher.finish(signal.SIGTERM) == 0


def _link_session_and_alias(tree: ConfigTree, real: Path, link: Path, db: Path, home: str) -> None:
    via_link = tree.session(cwd=str(link), project_key=sanitize_path(str(link)))
    via_link.user("the quokka ledger through the link")
    via_link.write()
    aliases = tree.projects_dir / project_key(canonical_directory(real)) / ".session-aliases"
    aliases.write_text(f"{tree.projects_dir / sanitize_path(str(link))}\n", encoding="utf-8")

    def listed(scope: str) -> set[str]:
        result = CliRunner().invoke(
            cli,
            ["--config-dir", str(tree.root), "--db", str(db), "list", "--json"]
            + ["--scope", scope, "--cwd", str(real)],
        )
        assert result.exit_code == 0, result.output
        return {row["session_id"] for row in json.loads(result.output)}

    wait_for(lambda: via_link.session_id in listed("all"), "the linked session indexed")
    with Index(db, [tree.root]) as index:
        assert index.watcher_alive()  # so the list below does not refresh itself
    wait_for(
        lambda: listed("worktree") == {home, via_link.session_id},
        "the alias dir in the directory's scope",
        deadline=5.0,
    )
