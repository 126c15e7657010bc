"""Hints and errors that named the wrong thing: an option the user did not give, the
wider of two options, a branch where the directory is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from tests.builders import ConfigTree

PR = "https://github.com/acme/app/pull/5"


def _tree(base: Path, kind: str) -> ConfigTree:
    """One session in /w/app that every default listing leaves out: tagged __hidden
    (the soft delete) or a ``claude -p``/SDK one (a hidden kind)."""
    tree = ConfigTree(base / "claude")
    s = tree.session(cwd="/w/app", entrypoint="sdk-cli" if kind == "sdk" else "cli")
    s.user(f"the numbatword pipeline, see {PR}")
    s.assistant("on it")
    s.pr_link(number=5, url=PR, repository="acme/app")
    if kind == "tagged":
        s.meta("tag", tag="__hidden")
    s.write()
    return tree


@pytest.mark.parametrize(
    "command",
    [["list"], ["search", "numbatword"], ["from-pr", PR]],
    ids=["list", "search", "from-pr"],
)
@pytest.mark.parametrize(
    ("kind", "hint", "not_said"),
    [
        # The tag's own message says --include-hidden; --all-kinds shows it too, and
        # more: the hint named the wider option.
        ("tagged", "tagged __hidden", "--all-kinds"),
        ("sdk", "try --all-kinds (-p/SDK", "--include-hidden"),
    ],
)
def test_the_hidden_hint_names_the_option_that_shows_what_matched(
    tmp_path: Path, command: list[str], kind: str, hint: str, not_said: str
) -> None:
    tree = _tree(tmp_path, kind)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, *command, "--cwd", "/w/app"])
    assert result.exit_code == (0 if command == ["list"] else 1), result.output
    assert hint in result.stderr and not_said not in result.stderr, result.stderr
    if kind == "tagged":
        assert "try --include-hidden." in result.stderr, result.stderr
        # and the option named does show it
        shown = CliRunner().invoke(
            cli, [*base, *command, "--cwd", "/w/app", "--include-hidden", "--json"]
        )
        assert shown.exit_code == 0 and '"__hidden"' in shown.stdout, shown.output


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p / "gone", "does not exist"),
        (lambda p: p / "gone" / "deeper", "does not exist"),
    ],
    ids=["missing", "missing-parent"],
)
def test_current_branch_in_a_missing_directory_says_it_is_missing(
    tmp_path: Path, make: object, says: str
) -> None:
    """``list --current-branch --cwd /missing`` said "/missing is not on a git branch",
    as if git had been asked there."""
    tree = _tree(tmp_path, "plain")
    missing = make(tmp_path)  # type: ignore[operator]
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db"), "list"]
        + ["--current-branch", "--cwd", str(missing)],
    )
    assert result.exit_code == 1, result.output
    assert result.stderr == f"Error: --current-branch: {missing} {says}\n"


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"garbage, not a database\n", "not a SQLite database"),
        (b'{"type":"user"}\n', "not a SQLite database"),
    ],
    ids=["garbage", "a-transcript-line"],
)
def test_a_file_at_the_default_index_path_is_not_blamed_on_db(
    tmp_path: Path, content: bytes, what: str
) -> None:
    """No --db and no SESSIONDEX_DB: a file that was never the index at the default
    path is left alone (it may be someone's), but the error said "Invalid value for
    '--db'" about an option nobody gave. It names the file, where the path came from
    and what to do."""
    tree = _tree(tmp_path, "plain")
    cache = tmp_path / "cache"
    target = cache / "sessiondex" / "index.db"
    target.parent.mkdir(parents=True)
    target.write_bytes(content)
    env = {"XDG_CACHE_HOME": str(cache), "SESSIONDEX_DB": None}
    result = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "list"], env=env)
    assert result.exit_code == 1, result.output
    [line] = result.stderr.splitlines()
    assert "Invalid value" not in line and "'--db'" not in line, line
    assert line.startswith(f"Error: {target} is not a sessiondex index ({what})"), line
    assert "default index path" in line and "move it away" in line, line
    assert target.read_bytes() == content  # left as it is
