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
