"""Progress on stderr: a reading command whose refresh runs long (the first build of a
large history, or a rebuild after an upgrade) shows a bar on a terminal after a delay;
a quick one, or stderr that is no terminal, shows nothing; stdout is the answer alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import sessiondex.cli.app as app_module
import sessiondex.cli.progress as progress_module
from sessiondex.cli.main import cli
from tests.builders import ConfigTree


def _tree(tmp_path: Path, sessions: int = 6) -> ConfigTree:
    tree = ConfigTree(tmp_path / "claude")
    for n in range(sessions):
        s = tree.session(cwd=f"/work/p{n % 2}")
        s.user(f"question {n} about the parser")
        s.assistant("an answer")
        s.write()
    return tree


def _list(tree: ConfigTree, db: Path) -> tuple[list[str], str]:
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tree.root), "--db", str(db), "list", "--scope", "all", "--json"]
    )
    assert result.exit_code == 0, result.output
    return [o["session_id"] for o in json.loads(result.stdout)], result.stderr


# (stderr a terminal, delay before the bar, a bar expected on the first run)
CASES = {
    "a long refresh on a terminal: a bar": (True, 0.0, True),
    "a quick refresh on a terminal: none": (True, 60.0, False),
    "not a terminal: never": (False, 0.0, False),
}


@pytest.mark.parametrize(("tty", "delay", "bar"), CASES.values(), ids=list(CASES))
def test_a_reading_commands_refresh_shows_progress_only_when_it_runs_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tty: bool, delay: float, bar: bool
) -> None:
    monkeypatch.setattr(progress_module, "stderr_is_terminal", lambda: tty)
    monkeypatch.setattr(app_module, "READ_PROGRESS_DELAY", delay)
    tree = _tree(tmp_path)
    first, err = _list(tree, tmp_path / "i.db")
    assert len(first) == 6
    assert ("Indexing" in err) is bar, err
    again, err = _list(tree, tmp_path / "i.db")
    assert again == first  # stdout stays the answer alone, bar or not
    if not bar:
        assert "Indexing" not in err


def test_a_quick_pass_after_an_earlier_one_draws_no_bar(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Helper 608: one command may refresh several times (``archive`` refreshes before
    its plan and again after writing 3,000 archives ten seconds later). The delay was
    counted from the first pass, which ended without a bar, so the second pass, quick
    as it was, drew an ``Indexing`` bar at once at the end of the run."""
    from types import SimpleNamespace

    clock = [100.0]
    monkeypatch.setattr(progress_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    bar = progress_module.ProgressBar("Indexing", delay=1.0)
    for start in (100.0, 110.0):  # two quick passes, ten seconds apart
        clock[0] = start
        bar(0, 3)
        clock[0] = start + 0.2
        bar(2, 3)
        bar(3, 3)
    assert "Indexing" not in capsys.readouterr().err
    clock[0] = 120.0  # a pass that runs long still gets its bar
    bar(0, 3)
    clock[0] = 121.5
    bar(1, 3)
    bar(3, 3)
    assert "Indexing" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("tty", "dry_run"),
    [(True, False), (False, False), (True, True)],
    ids=["terminal", "no-terminal", "dry-run"],
)
def test_archive_counts_what_it_archived_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tty: bool, dry_run: bool
) -> None:
    """Helper 608: ``archive`` of 3,000 expiring sessions ran ten silent seconds (its
    library call plans and archives in one go, so no total is known ahead): on a
    terminal it now counts on stderr, then clears the line before the report."""
    import time

    import sessiondex.cli.archive_cmd as archive_module

    monkeypatch.setattr(progress_module, "stderr_is_terminal", lambda: tty)
    monkeypatch.setattr(archive_module, "ARCHIVE_PROGRESS_DELAY", 0.0, raising=False)
    tree = ConfigTree(tmp_path / "claude")
    for n in range(3):  # 45 days old: past the default 30
        s = tree.session(cwd=f"/work/p{n}")
        s.user(f"an old question {n}")
        s.assistant("an answer")
        s.write(mtime=time.time() - 45 * 86400)
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
        + ["archive", "--to", str(tmp_path / "arch")]
        + (["--dry-run"] if dry_run else []),
        env={"SESSIONDEX_MANAGED_SETTINGS": str(tmp_path / "none.json")},
    )
    assert result.exit_code == 0, result.output
    done = "3 would be archived" if dry_run else "3 archived"
    assert result.stdout.startswith("Archive dir ") and done in result.stdout
    if tty and not dry_run:
        assert result.stderr.startswith("\rArchiving: 1 session")
        assert result.stderr.endswith("\r")  # cleared: the report starts on a clean line
    else:
        assert "Archiving" not in result.stderr
