"""Hints and errors that named the wrong thing: an option the user did not give, the
wider of two options, a branch where the directory is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from tests.builders import ConfigTree, git

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


@pytest.mark.parametrize("command", [["list"], ["search", "numbatword"]], ids=["list", "search"])
@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("no-git", "git is not installed (no git on PATH)"),
        ("no-repo", "{cwd} is not in a git repository"),
        ("detached", "{cwd} has a detached HEAD (no branch)"),
    ],
    ids=["git-not-installed", "outside-a-repository", "detached-head"],
)
def test_current_branch_says_why_there_is_no_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], where: str, says: str
) -> None:
    """``--current-branch`` with git not installed, outside a repository and on a
    detached HEAD all said "<dir> is not on a git branch": one line, exit 1 (an expected
    failure, spec/cli.md), but with no git on PATH it sent the user to look at a
    repository that was fine. Each says its own reason, still one line, no traceback."""
    tree = _tree(tmp_path, "plain")
    cwd = tmp_path / "work"
    cwd.mkdir()
    if where == "detached":
        git("init", "-q", "-b", "main", cwd=cwd)
        git("commit", "-q", "--allow-empty", "-m", "x", cwd=cwd)
        git("checkout", "-q", "--detach", cwd=cwd)
    if where == "no-git":
        git("init", "-q", "-b", "main", cwd=cwd)  # a repository: git alone is missing
        no_git = tmp_path / "bin"
        no_git.mkdir()
        monkeypatch.setenv("PATH", str(no_git))
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db"), *command]
        + ["--current-branch", "--cwd", str(cwd)],
    )
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr == f"Error: --current-branch: {says.format(cwd=cwd)}\n"


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


@pytest.mark.parametrize(
    ("args", "quoted"),
    [
        (["resolve", "Auth", "refactor"], "'Auth refactor'"),
        (["resume", "--dry-run", "Auth", "refactor", "plan"], "'Auth refactor plan'"),
        (["rename", "4045e6f8", "New", "name"], "'New name'"),
        (["tag", "4045e6f8", "needs", "review"], "'needs review'"),
        (["show", "it's", "mine"], "'it'\"'\"'s mine'"),  # shell-quoted as typed back
        (["list", "extra"], None),  # no text argument to quote
        (["from-pr", "12", "13"], None),  # a PR, an ID: never one with spaces
        (["restore", "4045e6f8", "x"], None),
    ],
    ids=["resolve", "resume", "rename", "tag", "a-quote-inside", "list", "from-pr", "restore"],
)
def test_words_given_apart_to_a_name_say_to_quote_them(
    tmp_path: Path, args: list[str], quoted: str | None
) -> None:
    """Helper 608: ``sessiondex resume Auth refactor`` (a name typed without quotes, as
    ``search auth refactor`` takes it) said only "Got unexpected extra argument
    (refactor)"; it now shows the name quoted as one argument."""
    (tmp_path / "claude" / "projects").mkdir(parents=True)
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tmp_path / "claude"), "--db", str(tmp_path / "i.db"), *args]
    )
    assert result.exit_code == 2
    error = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and "unexpected extra argument" in error[0], result.stderr
    if quoted is None:
        assert "quote" not in error[0]
    else:
        assert error[0].endswith(f"; to give text with spaces as one argument, quote it: {quoted}")


@pytest.mark.parametrize(
    ("command", "suggested"),
    [
        ("lsit", "'list'"),
        ("serach", "'search'"),
        ("ls", "'list'"),
        ("restor", "'restore'"),
        ("frompr", "'from-pr'"),
        ("xyzzy", None),
    ],
)
def test_a_mistyped_command_names_the_closest_commands(
    tmp_path: Path, command: str, suggested: str | None
) -> None:
    """Helper 608: ``sessiondex lsit`` said "No such command 'lsit'." with no more, where
    a mistyped option gets click's "Did you mean"."""
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "i.db"), command])
    assert result.exit_code == 2
    error = result.stderr.splitlines()[-1]
    assert error.startswith(f"Error: No such command '{command}'.")
    if suggested is None:
        assert "Did you mean" not in error
    else:
        assert error.endswith(f" Did you mean {suggested}?")


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
