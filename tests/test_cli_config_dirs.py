"""Config dirs on the command line: one path per CLAUDE_CONFIG_DIR, a named dir that is
missing is a usage error, the default one missing is said once; the environment is
documented in ``--help``."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from tests.builders import ConfigTree

MISSING_NOTE = "does not exist: no Claude Code history to read"


def _tree(root: Path, word: str = "capybara", session_id: str | None = None) -> ConfigTree:
    tree = ConfigTree(root)
    s = tree.session(cwd="/w/app", session_id=session_id)
    s.user(f"talk about the {word}")
    s.write(mtime=1_800_000_000)
    return tree


def _run(tmp_path: Path, args: list[str], env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["--db", str(tmp_path / "i.db"), *args], env=env)


def test_a_comma_is_part_of_claude_config_dir(tmp_path: Path) -> None:
    """Claude Code writes to ``/x/claude,old`` itself; splitting it found nothing."""
    tree = _tree(tmp_path / "claude,old")
    result = _run(
        tmp_path,
        ["search", "capybara", "--scope", "all", "--json"],
        env={"CLAUDE_CONFIG_DIR": str(tree.root)},
    )
    assert result.exit_code == 0, result.output
    assert [r["config_dir"] for r in json.loads(result.stdout)] == [str(tree.root)]


def test_several_dirs_from_sessiondex_config_dirs(tmp_path: Path) -> None:
    # Two sessions (copies of one session ID would be one row: test_query's twins).
    one = _tree(tmp_path / "m1", "capybara", "00000000-0000-4000-8000-0000000000a1")
    two = _tree(tmp_path / "m2", "capybara", "00000000-0000-4000-8000-0000000000a2")
    result = _run(
        tmp_path,
        ["list", "--scope", "all", "--json"],
        env={"SESSIONDEX_CONFIG_DIRS": f"{one.root}{os.pathsep}{two.root}"},
    )
    assert result.exit_code == 0, result.output
    assert {r["config_dir"] for r in json.loads(result.stdout)} == {str(one.root), str(two.root)}


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("option", "Error: Invalid value for '--config-dir': directory '{d}' does not exist."),
        (
            "option-file",
            "Error: Invalid value for '--config-dir': directory '{d}' is not a directory.",
        ),
        (
            "claude-env",
            "Error: Invalid value for CLAUDE_CONFIG_DIR: directory '{d}' does not exist.",
        ),
        (
            "sessiondex-env",
            "Error: Invalid value for SESSIONDEX_CONFIG_DIRS: directory '{d}' does not exist.",
        ),
    ],
)
@pytest.mark.parametrize(
    "command",
    [["list", "--scope", "all"], ["search", "x"], ["from-pr"], ["index"], ["stats"]],
)
def test_a_named_config_dir_that_is_missing_is_a_usage_error(
    tmp_path: Path, how: str, expected: str, command: list[str]
) -> None:
    good = _tree(tmp_path / "good").root
    missing = tmp_path / "nope"
    if how == "option-file":
        missing.write_text("")
    args, env = list(command), {}
    if how.startswith("option"):
        args = ["--config-dir", str(good), "--config-dir", str(missing), *command]
    elif how == "claude-env":
        env = {"CLAUDE_CONFIG_DIR": str(missing)}
    else:
        env = {"SESSIONDEX_CONFIG_DIRS": f"{good}{os.pathsep}{missing}"}
    result = _run(tmp_path, args, env=env)
    assert result.exit_code == 2
    assert result.stderr == expected.format(d=missing) + "\n"  # one line, no usage block
    assert "--scope" not in result.stderr and result.stdout == ""


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (["list", "--scope", "all"], 0),
        (["list", "--scope", "all", "--json"], 0),
        (["search", "x"], 1),
        (["from-pr", "12"], 1),
        (["resolve", "abcdef12"], 1),
        (["index"], 0),
        (["stats"], 0),
    ],
)
def test_missing_default_config_dir_is_said_once_plainly(
    tmp_path: Path, command: list[str], code: int
) -> None:
    home = Path(os.environ["HOME"])  # conftest: a fresh home without .claude
    assert not (home / ".claude").exists()
    result = _run(tmp_path, command)
    assert result.exit_code == code, result.output
    assert result.stderr.count(MISSING_NOTE) == 1
    assert str(home / ".claude") in result.stderr
    assert "try --scope" not in result.stderr and "Traceback" not in result.output


def test_the_library_keeps_working_with_a_missing_dir(tmp_path: Path) -> None:
    """Index and the SDK-style API are not the CLI: no error, empty answers (the SDK
    returns [] for a missing config dir)."""
    from sessiondex import Index
    from sessiondex.sdk import list_sessions

    missing = tmp_path / "nope"
    with Index(tmp_path / "i.db", [missing]) as index:
        assert index.list(scope="all") == []
        assert index.search("x", scope="all") == []
    assert list_sessions(config_dir=str(missing)) == []


# How the library reads a variable: os.environ[...] / .get(...), env.get(...) on a copy
# of it, os.getenv(...), click's envvar=...
_READS_ENV = re.compile(
    r"""(?:environ|env)(?:\.get\(|\.setdefault\(|\[)"([A-Z_][A-Z0-9_]*)"|"""
    r'getenv\("([A-Z_][A-Z0-9_]*)"|envvar="([A-Z_][A-Z0-9_]*)"|'
    r'xdg_(?:dir|value)\("([A-Z_][A-Z0-9_]*)"'  # transcripts/fspath.py
)
_PACKAGE = Path(__file__).resolve().parent.parent


def test_help_names_every_environment_variable() -> None:
    """`sessiondex --help` promises every variable sessiondex reads: the list is checked
    against the code itself (XDG_DATA_HOME, read by `archive`, was missing)."""
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    read: set[str] = {"SESSIONDEX_MANAGED_SETTINGS"}  # read through a constant
    for folder in (
        *("actions", "cli", "indexer", "query", "render", "store", "transcripts"),
        *("web", "mcp_server", "picker", "package"),
    ):
        for source in (_PACKAGE / folder).rglob("*.py"):
            for match in _READS_ENV.finditer(source.read_text()):
                read.add(next(g for g in match.groups() if g))
    assert {"CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "SESSIONDEX_DB"} <= read
    for name in sorted(read):
        assert f"\n    {name}" in result.output, name
    db_help = result.output[result.output.index("--db PATH") : result.output.index("--no-refresh")]
    assert "$SESSIONDEX_DB" in db_help


def test_help_needs_no_config_dir(tmp_path: Path) -> None:
    result = _run(tmp_path, ["--config-dir", str(tmp_path / "nope"), "search", "--help"])
    assert (
        result.exit_code == 0
        and "Exit status" in result.output
        and "search [OPTIONS] QUERY" in result.output
    )


def _root_world(tmp_path: Path) -> tuple[ConfigTree, ConfigTree, str, str]:
    """Two config dirs with a session each for the same cwd, named alike and linked to
    the same PR, answered from one shared index (as the default cache index is)."""
    sessions = []
    trees = []
    for name, sid in (
        ("one", "abcdef12-1111-4111-8111-111111111111"),
        ("two", "abcdef12-2222-4222-8222-222222222222"),
    ):
        tree = ConfigTree(tmp_path / name)
        s = tree.session(cwd="/w/app", session_id=sid)
        s.user("talk about the capybara")
        s.pr_link(number=7, url="https://github.com/acme/app/pull/7", repository="acme/app")
        s.meta("custom-title", customTitle="capybara work")
        s.write(mtime=1_800_000_000)
        trees.append(tree)
        sessions.append(sid)
    return trees[0], trees[1], sessions[0], sessions[1]


ROOT_QUERIES = {
    "list": ["list", "--scope", "all", "--json"],
    "search": ["search", "capybara", "--scope", "all", "--json"],
    "from-pr number": ["from-pr", "7", "--scope", "all", "--json"],
    "from-pr url": ["from-pr", "https://github.com/acme/app/pull/7", "--json"],
    "search url": ["search", "https://github.com/acme/app/pull/7", "--json"],
    "resolve name": ["resolve", "capybara work", "--cwd", "/w/app", "--json"],
    # both IDs start abcdef12: in one config dir it names one session, not two
    "resolve prefix": ["resolve", "{prefix}", "--cwd", "/w/app", "--json"],
    "continue": ["continue", "--cwd", "/w/app", "--json"],
}


@pytest.mark.parametrize("query", list(ROOT_QUERIES))
def test_answers_come_only_from_the_configured_config_dirs(tmp_path: Path, query: str) -> None:
    """One index holds rows of every config dir it was ever asked about; the rows of a
    config dir not asked for now never answer (nor can an ID from it be resolved)."""
    one, two, first, second = _root_world(tmp_path)
    for tree, own in ((one, first), (two, second)):
        args = [a.replace("{prefix}", own[:8]) for a in ROOT_QUERIES[query]]
        result = _run(tmp_path, ["--config-dir", str(tree.root), *args])
        assert result.exit_code == 0, result.output
        found = json.loads(result.stdout)
        rows = found if isinstance(found, list) else [found]
        assert [r["session_id"] for r in rows] == [own], query


def test_an_id_of_a_config_dir_not_asked_for_is_not_found(tmp_path: Path) -> None:
    one, two, first, second = _root_world(tmp_path)
    assert _run(tmp_path, ["--config-dir", str(one.root), "list", "--json"]).exit_code == 0
    # its project dir and another one; --no-refresh: answered from the rows A left
    for cwd in ("/w/app", "/elsewhere"):
        for fresh in (["--no-refresh"], []):  # from A's rows first, before any refresh
            args = ["--config-dir", str(two.root), *fresh, "resolve", first, "--cwd", cwd]
            result = _run(tmp_path, [*args, "--json"])
            assert result.exit_code == 1, (cwd, fresh)
        assert f"No conversation found with session ID: {first}" in result.output


def test_stats_counts_the_config_dirs_in_use(tmp_path: Path) -> None:
    """One index may hold several config dirs' rows; stats, like every answer, is for
    the config dirs it was given (the index size stays the whole file's)."""
    a, b = ConfigTree(tmp_path / "a"), ConfigTree(tmp_path / "b")
    for tree, count in ((a, 3), (b, 1)):
        for n in range(count):
            s = tree.session(cwd=f"/w/p{n}")
            s.user(f"question {n}")
            s.assistant("answer")
            s.pr_link(number=n + 1, url=f"https://github.com/o/r/pull/{n + 1}", repository="o/r")
            s.write()
    db = ["--db", str(tmp_path / "i.db")]

    def stats(*trees: ConfigTree) -> dict[str, Any]:
        dirs = [arg for t in trees for arg in ("--config-dir", str(t.root))]
        result = CliRunner().invoke(cli, [*dirs, *db, "stats", "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def index(*trees: ConfigTree) -> dict[str, Any]:
        dirs = [arg for t in trees for arg in ("--config-dir", str(t.root))]
        result = CliRunner().invoke(cli, [*dirs, *db, "index", "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    # index's summary counts the same sessions (it counted every row of the file); /w/p0's
    # session has one ID in both dirs (each tree's first): one session, as list shows it
    assert (index(a, b)["sessions"], index(b)["sessions"], index(a)["sessions"]) == (3, 1, 3)
    both = stats(a, b)
    only_b = stats(b)
    assert both["config_dirs"] == [str(a.root), str(b.root)]
    assert only_b["config_dirs"] == [str(b.root)]
    assert (both["sessions"], only_b["sessions"]) == (3, 1)
    # a project is a directory: /w/p0 in both config dirs is one
    assert (both["projects"], only_b["projects"]) == (3, 1)
    assert (both["files"], only_b["files"]) == (4, 1)
    assert (both["messages_indexed"], only_b["messages_indexed"]) == (8, 2)
    assert (both["pr_links"], only_b["pr_links"]) == (3, 1)
    assert only_b["corpus_bytes"] == sum(p.stat().st_size for p in b.root.rglob("*.jsonl"))
    assert only_b["index_bytes"] >= os.path.getsize(tmp_path / "i.db")  # the whole file
    from sessiondex import Index

    with Index(tmp_path / "i.db", [b.root]) as index:
        library = index.stats()
    assert {k: library[k] for k in ("config_dirs", "sessions", "files", "pr_links")} == {
        k: only_b[k] for k in ("config_dirs", "sessions", "files", "pr_links")
    }


def test_stats_and_index_count_a_session_in_two_config_dirs_once(tmp_path: Path) -> None:
    """A live config dir indexed with its backup (`SESSIONDEX_CONFIG_DIRS=~/.claude:
    ~/backup/.claude`, as the README suggests) holds each session twice; `list` shows
    it once, as Claude Code's picker counts a session ID once, but `stats` said
    "sessions: 4" and `index` "4 sessions" for 2 sessions, while counting their project
    once. Files (and the messages indexed from them) are what is on disk: both."""
    live = ConfigTree(tmp_path / "live")
    for n in range(2):
        s = live.session(cwd=f"/w/p{n}")
        s.user(f"question {n}")
        s.assistant("answer")
        s.write(mtime=1_800_000_000 + n)
    import shutil

    shutil.copytree(live.root, tmp_path / "backup", copy_function=shutil.copy2)
    dirs = ["--config-dir", str(live.root), "--config-dir", str(tmp_path / "backup")]
    summary = _run(tmp_path, [*dirs, "index", "--json"])
    assert summary.exit_code == 0, summary.output
    assert json.loads(summary.stdout)["sessions"] == 2
    listed = _run(tmp_path, [*dirs, "list", "--scope", "all", "--json"])
    assert len(json.loads(listed.stdout)) == 2
    stats = json.loads(_run(tmp_path, [*dirs, "stats", "--json"]).stdout)
    assert (stats["sessions"], stats["visible_sessions"], stats["projects"]) == (2, 2, 2)
    assert (stats["files"], stats["messages_indexed"]) == (4, 8)


def _text_options() -> list[tuple[list[str], str]]:
    """(command words, option) for every option of every command that takes free text."""
    import click

    from sessiondex.cli.errors import CHECKED_BY_THEIR_COMMAND
    from sessiondex.cli.main import COMMANDS

    found: list[tuple[list[str], str]] = []

    def walk(words: list[str], command: click.Command) -> None:
        for param in command.params:
            if (
                isinstance(param, click.Option)
                and not param.is_flag
                and isinstance(param.type, (click.types.StringParamType, click.Path))
                and (command.name, param.name) not in CHECKED_BY_THEIR_COMMAND
            ):
                found.append((words, max(param.opts, key=len)))
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk([*words, name], sub)

    ctx = click.Context(cli)
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None
        walk([name], command)
    return found


@pytest.mark.parametrize(("words", "option"), _text_options())
def test_every_option_that_takes_text_refuses_an_empty_value(
    tmp_path: Path, words: list[str], option: str
) -> None:
    """One rule for all (cli.errors.refuse_empty_values): `cleanup --apply --archive ""`
    deleted without archiving, `archive --to ""` used the default dir, `--user ""`
    listed nothing, each as if the option were not given."""
    tree = _tree(tmp_path / "claude")
    before = {p: p.read_bytes() for p in tree.root.rglob("*.jsonl")}
    result = _run(tmp_path, ["--config-dir", str(tree.root), *words, option, ""])
    assert result.exit_code == 2, (words, option, result.output)
    assert result.stderr == (
        f"Error: Invalid value for '{option}': it is empty (is a variable unset?)\n"
    ), result.stderr
    assert {p: p.read_bytes() for p in tree.root.rglob("*.jsonl")} == before


def _session_argument_commands() -> list[str]:
    from sessiondex.cli.errors import SESSION_ARGUMENT
    from sessiondex.cli.main import COMMANDS

    ctx = click.Context(cli)
    found = []
    for name in COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None
        if any(
            isinstance(p, click.Argument) and p.name == SESSION_ARGUMENT for p in command.params
        ):
            found.append(name)
    return found


@pytest.mark.parametrize("command", _session_argument_commands())
def test_an_empty_session_argument_is_a_usage_error(tmp_path: Path, command: str) -> None:
    """``show "$ID"`` with ID unset said "empty session argument" as a not-found, exit 1;
    it is a usage error like an empty option value."""
    tree = _tree(tmp_path / "claude")
    extra = {"rename": ["new name"], "tag": ["t"], "export": ["-o", str(tmp_path / "x.md")]}
    result = _run(tmp_path, ["--config-dir", str(tree.root), command, "", *extra.get(command, [])])
    assert result.exit_code == 2, result.output
    assert "it is empty (is a variable unset?)" in result.stderr


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        (["search", ""], "QUERY"),
        (["search", " ", "\t"], "QUERY"),
        (["restore", ""], "ID"),
        (["restore", "  "], "ID"),
    ],
)
def test_an_empty_query_or_archived_id_is_a_usage_error(
    tmp_path: Path, args: list[str], argument: str
) -> None:
    """``search "$Q"`` with Q unset answered "No matches." and ``restore "$ID"`` "No
    archived session with ID: ", both exit 1, as if something had been looked for;
    an empty session argument was already a usage error (exit 2), and so are these."""
    tree = _tree(tmp_path / "claude")
    result = _run(tmp_path, ["--config-dir", str(tree.root), *args])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"Error: Invalid value for '{argument}': it is empty (is a variable unset?)\n"
    ), result.stderr


def test_a_query_with_one_empty_word_still_searches(tmp_path: Path) -> None:
    """Only a query that is blank as a whole is refused: ``search capybara ""`` searches."""
    tree = _tree(tmp_path / "claude")
    result = _run(tmp_path, ["--config-dir", str(tree.root), "search", "capybara", ""])
    assert result.exit_code in (0, 1), result.output
    assert "is empty" not in result.stderr


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--config-dir", "", "list"], "--config-dir"),
        (["--config-dir", "{root}", "--config-dir", " ", "list"], "--config-dir"),
        (["--config-dir", "{root}", "list", "--branch", ""], "--branch"),
        (["--config-dir", "{root}", "list", "--since", ""], "--since"),
        (["--config-dir", "{root}", "search", "capybara", "--cwd", ""], "--cwd"),
        (["--config-dir", "{root}", "delete", "x", "--cwd", "", "--yes"], "--cwd"),
    ],
)
def test_an_empty_option_value_is_a_usage_error(
    tmp_path: Path, args: list[str], option: str
) -> None:
    """An empty value is nearly always an unset variable (``--config-dir "$BACKUP"``).
    It was taken as "not given": the command listed, or would have deleted from, the
    default config dir instead of the one meant, and ``--branch ""`` filtered nothing."""
    tree = _tree(tmp_path / "claude")
    before = {p: p.read_bytes() for p in tree.root.rglob("*.jsonl")}
    result = _run(tmp_path, [a.format(root=tree.root) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"Error: Invalid value for '{option}': it is empty (is a variable unset?)\n"
    )
    assert {p: p.read_bytes() for p in tree.root.rglob("*.jsonl")} == before


def test_a_config_dir_that_cannot_be_entered_is_a_warning_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config dir at mode 000 (or 644): ``Path.is_dir()`` of its projects/ raised
    PermissionError and every command was a traceback. Now a warning, and the index
    keeps what it holds. EACCES is simulated: the suite may run as root."""
    tree = _tree(tmp_path / "claude")
    assert _run(tmp_path, ["--config-dir", str(tree.root), "index"]).exit_code == 0
    inside = os.path.join(str(tree.root), "")
    real = {name: getattr(os, name) for name in ("stat", "lstat", "scandir")}

    def denied(name: str) -> Any:
        def call(target: Any, *args: Any, **kwargs: Any) -> Any:
            if os.fspath(target).startswith(inside):
                raise PermissionError(13, "Permission denied", os.fspath(target))
            return real[name](target, *args, **kwargs)

        return call

    for name in real:
        monkeypatch.setattr(os, name, denied(name))
    indexed = _run(tmp_path, ["--config-dir", str(tree.root), "index"])
    listed = _run(tmp_path, ["--config-dir", str(tree.root), "list", "--scope", "all", "--json"])
    monkeypatch.undo()
    assert indexed.exit_code == 0, indexed.output
    assert f"cannot look into {tree.root} (Permission denied)" in indexed.stderr
    assert "Traceback" not in indexed.output + listed.output
    assert listed.exit_code == 0 and len(json.loads(listed.stdout)) == 1


@pytest.mark.parametrize("linked", ["config-dir", "projects"])
@pytest.mark.parametrize("command", [["tag", "{path}", "moved"], ["resolve", "{path}", "--json"]])
def test_a_linked_config_dir_takes_its_files_by_their_real_path(
    tmp_path: Path, linked: str, command: list[str]
) -> None:
    """With ``--config-dir`` a symlink (a dotfile manager's), a transcript's real path
    was "not a session transcript inside a configured projects/ dir" to the write
    commands, and resolve called it a session of an unconfigured config dir."""
    real = ConfigTree(tmp_path / "real")
    s = real.session(cwd="/w/app")
    s.user("hello from the real dir")
    s.write()
    if linked == "config-dir":
        configured = tmp_path / "link"
        configured.symlink_to(real.root)
    else:
        configured = tmp_path / "configured"
        configured.mkdir()
        (configured / "projects").symlink_to(real.root / "projects")
    args = [a.format(path=s.path) for a in command]
    result = CliRunner().invoke(
        cli, ["--config-dir", str(configured), "--db", str(tmp_path / "i.db"), *args]
    )
    assert result.exit_code == 0, result.output
    if command[0] == "resolve":
        (obj,) = json.loads(result.stdout)
        assert obj["config_dir"] == str(configured)
        assert obj["matched_by"] == "path"
    else:
        assert s.path.read_bytes().endswith(
            b'"tag":"moved","sessionId":"' + s.session_id.encode() + b'"}\n'
        )


@pytest.mark.parametrize(
    "case", ["missing-config-dir", "no-projects-folder", "db-is-a-dir", "no-default-config-dir"]
)
def test_errors_and_warnings_quoting_a_path_never_carry_its_escapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """click's own usage errors and our warnings printed a path as given: an escape
    sequence in it reached the terminal (click strips them only when it is no
    terminal; color=True keeps them, as a terminal gets them)."""
    odd = tmp_path / "esc\x1b[31mRED\x07"
    odd.mkdir()
    args = {
        "missing-config-dir": ["--config-dir", str(odd / "nodir"), "list"],
        "no-projects-folder": ["--config-dir", str(odd), "list", "--scope", "all"],
        "db-is-a-dir": [
            "--config-dir",
            str(_tree(tmp_path / "claude").root),
            "--db",
            str(odd),
            "list",
        ],
        "no-default-config-dir": ["--db", str(tmp_path / "i.db"), "list"],
    }[case]
    if case == "no-default-config-dir":  # the note names ~/.claude
        monkeypatch.setenv("HOME", str(odd))
        monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
        monkeypatch.delenv("SESSIONDEX_CONFIG_DIRS", raising=False)
    result = CliRunner().invoke(cli, args, color=True)
    assert "^[[31mRED^G" in result.stderr, result.stderr
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr


@pytest.mark.parametrize("how", ["config-dir", "path-argument", "unchanged-spelling"])
def test_dot_dot_after_a_linked_folder_is_read_as_the_kernel_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """``out/lnk/../cfg``, with ``lnk`` a link to ``real/holder``, is ``real/cfg`` for the
    kernel; abspath made it ``out/cfg`` and another config dir (or transcript) was
    read. Without ``..`` the spelling the user gave is kept (a linked config dir)."""
    real, decoy = _tree(tmp_path / "real" / "cfg"), _tree(tmp_path / "out" / "cfg")
    (tmp_path / "real" / "holder").mkdir()
    (tmp_path / "out" / "lnk").symlink_to(tmp_path / "real" / "holder")
    monkeypatch.chdir(tmp_path)
    real_id = next(real.projects_dir.rglob("*.jsonl")).stem  # the decoy's has the same ID
    assert next(decoy.projects_dir.rglob("*.jsonl")).stem == real_id
    if how == "config-dir":
        args = [
            "--config-dir",
            "out/lnk/../cfg",
            "--db",
            "i.db",
            "list",
            "--scope",
            "all",
            "--json",
        ]
    elif how == "path-argument":
        transcript = next(real.projects_dir.rglob(f"{real_id}.jsonl"))
        typed = "out/lnk/../cfg/" + str(transcript.relative_to(real.root))
        args = ["--config-dir", str(real.root), "--db", "i.db", "resolve", typed, "--json"]
    else:
        (tmp_path / "linked-cfg").symlink_to(real.root)
        args = ["--config-dir", "linked-cfg", "--db", "i.db", "list", "--scope", "all", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    objects = json.loads(result.stdout)
    assert real_id in {o["session_id"] for o in objects}
    roots = {o["config_dir"] for o in objects}
    expected = str(tmp_path / ("linked-cfg" if how == "unchanged-spelling" else "real/cfg"))
    assert roots == {expected}


@pytest.mark.parametrize("through", ["a-file", "a-missing-folder"])
def test_a_path_the_kernel_refuses_names_no_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, through: str
) -> None:
    """``<A>.jsonl/../<B>.jsonl`` is "not a directory" to the kernel, and
    ``nope/../<B>.jsonl`` "no such file"; realpath folded the ``..`` by spelling, and
    tag (or delete) acted on B."""
    tree = ConfigTree(tmp_path / "claude")
    a, b = tree.session(cwd="/w/app"), tree.session(cwd="/w/app")
    for s in (a, b):
        s.user("hello")
        s.write()
    monkeypatch.chdir(tmp_path)
    step = a.path.name if through == "a-file" else "nope"
    typed = str((a.path.parent / step / ".." / b.path.name).relative_to(tmp_path))
    before = b.path.read_bytes()
    result = _run(tmp_path, ["--config-dir", str(tree.root), "tag", typed, "t"])
    assert result.exit_code == 1, result.output
    assert b.path.read_bytes() == before


@pytest.mark.parametrize("variable", ["CLAUDE_CONFIG_DIR", "SESSIONDEX_CONFIG_DIRS"])
def test_a_config_dir_from_the_environment_that_is_not_utf8_is_one_usage_line(
    tmp_path: Path, variable: str
) -> None:
    """Helper 96: ``CLAUDE_CONFIG_DIR=$'\\xffdir'`` failed as "cannot open the index …
    surrogates not allowed" (exit 1), after making an empty index file; the same bytes
    as ``--config-dir`` are a usage line (every argument is checked)."""
    folder = os.fsdecode(os.fsencode(tmp_path) + b"/\xffdir")
    os.makedirs(os.path.join(folder, "projects"))
    db = tmp_path / "i.db"
    env = {"CLAUDE_CONFIG_DIR": None, "SESSIONDEX_CONFIG_DIRS": None, variable: folder}
    result = CliRunner().invoke(cli, ["--db", str(db), "list"], env=env)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: Invalid value for {variable}: ")
    assert "\\xffdir' is not valid UTF-8" in result.stderr
    assert not db.exists()


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["search", "--no-verify"], "put -- before it: sessiondex search -- --no-verify"),
        (["search", "-rf"], "put -- before it: sessiondex search -- '-text'"),
        (["rename", "abc", "--draft"], "put -- before it: sessiondex rename ARG -- --draft"),
        (["search", "--scop", "all", "x"], None),  # a mistyped option: click's own hint
        (["list", "--no-verify"], None),  # no text to give
    ],
)
def test_text_that_starts_with_a_dash_is_explained(
    tmp_path: Path, args: list[str], hint: str | None
) -> None:
    """``search --no-verify`` (a flag looked for as typed) was a bare "No such option"
    (helper 127): the usage line says how to give such text."""
    base = ["--config-dir", str(tmp_path), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, *args])
    assert result.exit_code == 2
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("Error:")]
    assert (hint in line) if hint else "put -- before it" not in line, line


@pytest.mark.parametrize(
    ("args", "option", "example"),
    [
        (["list", "--db", "x.db"], "--db", "sessiondex --db … list"),
        (["list", "--db=x.db"], "--db", "sessiondex --db … list"),
        (["search", "cookie", "--no-refresh"], "--no-refresh", "sessiondex --no-refresh search"),
        (["show", "abc", "--config-dir", "d"], "--config-dir", "sessiondex --config-dir … show"),
        (["store", "deleted", "x", "--db", "y"], "--db", "sessiondex --db … store deleted"),
        (["list", "--version"], "--version", "a global option: sessiondex --version"),
        (
            ["push", "--db", "postgresql://h/t"],
            "--db",
            "copy into is --to DSN: sessiondex push --to",
        ),
        (
            ["store", "init", "--db", "postgresql://h/t"],
            "--db",
            "DSN argument: sessiondex store init DSN",
        ),
    ],
)
def test_a_global_option_after_the_command_says_where_it_goes(
    tmp_path: Path, args: list[str], option: str, example: str
) -> None:
    """Helper h508: ``list --db x.db`` (the order a new user types) said "No such option
    '--db'. Did you mean '--cwd'?", and ``search cookie --no-refresh`` advised
    ``search -- --no-refresh``, a search for that text: the line names the global option
    and shows it before the command."""
    base = ["--config-dir", str(tmp_path), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, *args])
    assert result.exit_code == 2
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("Error:")]
    assert f"'{option}' is a global option" in line, line
    assert example in line and "--version list" not in line, line
    assert "Did you mean" not in line and "put -- before it" not in line, line


@pytest.mark.parametrize(
    "projects", ["missing", "a regular file", "a FIFO", "a dangling symlink", "a link to a file"]
)
@pytest.mark.parametrize("command", [["list", "--scope", "all"], ["index"], ["stats"]])
def test_a_projects_entry_that_is_no_folder_is_said(
    tmp_path: Path, projects: str, command: list[str]
) -> None:
    """A config dir whose ``projects`` is there but is no folder (a file, a FIFO, a link
    to a file) got no line at all: the warning looked only for a missing one, and the
    empty answer's own line is left out when no config dir has history (that warning
    is meant to be out already), so ``list`` printed nothing and exited 0."""
    root = tmp_path / "claude"
    root.mkdir()
    entry = root / "projects"
    if projects == "a regular file":
        entry.write_text("not a folder\n")
    elif projects == "a FIFO":
        os.mkfifo(entry)
    elif projects == "a dangling symlink":
        entry.symlink_to(tmp_path / "nowhere")
    elif projects == "a link to a file":
        (tmp_path / "file").write_text("x\n")
        entry.symlink_to(tmp_path / "file")
    result = _run(tmp_path, ["--config-dir", str(root), *command])
    assert result.exit_code == 0, result.output
    said = (
        "has no projects/ folder"
        if projects in ("missing", "a dangling symlink")
        else ("projects is not a folder")
    )
    lines = [line for line in result.stderr.splitlines() if str(root) in line]
    assert len(lines) == 1 and said in lines[0], result.stderr
    assert "nothing to index there" in lines[0]


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("claude/projects", "claude"),  # the projects/ folder itself
        ("claude/projects/-w-app", "claude"),  # one project's folder
        ("elsewhere", None),  # an empty dir: nothing to point at
    ],
    ids=["projects-folder", "project-folder", "unrelated"],
)
def test_a_folder_inside_a_config_dir_names_the_config_dir(
    tmp_path: Path, given: str, meant: str | None
) -> None:
    """Helper 608: ``--config-dir ~/.claude/projects`` (the folder the transcripts are
    in, as a new user may name it) said "has no projects/ folder; nothing to index
    there" and listed nothing, without the dir that was meant."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("a question")
    s.write()
    (tmp_path / "elsewhere").mkdir()
    result = _run(tmp_path, ["--config-dir", str(tmp_path / given), "list", "--scope", "all"])
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stderr.splitlines() if "nothing to index there" in line]
    if meant is None:
        assert line.endswith("nothing to index there")
    else:
        assert line.endswith(
            f"nothing to index there (name the config dir: --config-dir {tmp_path / meant})"
        )
