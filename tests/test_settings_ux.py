"""The config file, ``sessiondex config``, shell completion and the pager (issue 16
item 2 and the "polished CLI" extras)."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.shell_completion import ShellComplete
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.cli.pager import choose_pager
from tests.builders import ConfigTree, append_records, one_session

T0 = 1_790_000_000


class World:
    """Two projects; a config file under XDG_CONFIG_HOME, written per test."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.tree = ConfigTree(base / "claude")
        self.db = base / "i.db"
        self.ids: dict[str, str] = {}
        for name, cwd, when in (
            ("Auth refactor", "/w/shop", T0 + 20),
            ("Auth notes", "/w/shop", T0 + 10),
            ("Blog feed", "/w/blog", T0),
        ):
            s = self.tree.session(cwd=cwd)
            s.user(f"work on {name}")
            s.assistant("ok")
            s.meta("custom-title", customTitle=name)
            s.write(mtime=when)
            self.ids[name] = s.session_id
        self.xdg = base / "xdg"
        self.file = self.xdg / "sessiondex" / "config.toml"
        self.file.parent.mkdir(parents=True)
        assert self.run("index").exit_code == 0

    def write(self, text: str | None) -> None:
        if text is None:
            self.file.unlink(missing_ok=True)
        else:
            self.file.write_text(text)

    def run(self, *args: str, env: dict[str, str] | None = None, base: bool = True) -> Any:
        options = ["--config-dir", str(self.tree.root), "--db", str(self.db)] if base else []
        environment = {"XDG_CONFIG_HOME": str(self.xdg), **(env or {})}
        return CliRunner().invoke(cli, [*options, *args], env=environment)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("settings"))


@pytest.fixture
def clean_file(world: World) -> Any:
    yield world
    world.write(None)


def _effective(world: World, *options: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = world.run(*options, "config", "--json", env=env, base=False)
    assert result.exit_code == 0, result.output
    return {k: (v["value"], v["source"]) for k, v in json.loads(result.stdout)["settings"].items()}


def test_precedence_options_then_env_then_file_then_defaults(clean_file: World) -> None:
    world = clean_file
    here = str(world.file)
    defaults = _effective(world)
    assert {k: source for k, (_, source) in defaults.items()} == dict.fromkeys(
        ("scope", "config_dirs", "db", "pager", "color"), "default"
    )
    world.write(
        f'scope = "repo"\nconfig_dirs = ["{world.tree.root}"]\ndb = "{world.db}"\n'
        'pager = "most"\ncolor = "always"\n'
    )
    from_file = _effective(world)
    assert from_file == {
        "scope": ("repo", here),
        "config_dirs": ([str(world.tree.root)], here),
        "db": (str(world.db), here),
        "pager": ("most", here),
        "color": ("always", here),
    }
    env = {
        "CLAUDE_CONFIG_DIR": str(world.base),
        "SESSIONDEX_DB": str(world.base / "env.db"),
        "PAGER": "less",
        "NO_COLOR": "1",
    }
    from_env = _effective(world, env=env)
    assert from_env["config_dirs"] == ([str(world.base)], "CLAUDE_CONFIG_DIR")
    assert from_env["db"] == (str(world.base / "env.db"), "SESSIONDEX_DB")
    assert from_env["pager"] == ("less", "PAGER")
    assert from_env["color"] == ("never", "NO_COLOR")
    from_options = _effective(
        world, "--config-dir", str(world.tree.root), "--db", str(world.db), env=env
    )
    assert from_options["config_dirs"] == ([str(world.tree.root)], "--config-dir")
    assert from_options["db"] == (str(world.db), "--db")
    table = world.run("config").stdout
    assert "scope        repo" in table and f"config file: {world.file}" in table


def test_the_files_scope_is_the_default_scope(clean_file: World) -> None:
    world = clean_file

    def listed(*args: str) -> set[str]:
        result = world.run("list", "--json", "--cwd", "/w/shop", *args)
        assert result.exit_code == 0, result.output
        return {row["session_id"] for row in json.loads(result.stdout)}

    assert world.ids["Blog feed"] not in listed()
    world.write('scope = "all"\n')
    assert world.ids["Blog feed"] in listed()
    assert world.ids["Blog feed"] not in listed("--scope", "worktree")  # the option wins


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("scope = \n", "Invalid value"),
        ("colour = 'never'\n", "unknown key 'colour'"),
        ('scope = "everything"\n', "scope must be one of worktree, repo, all"),
        ("db = 3\n", "db must be a string"),
        ('config_dirs = ["/nonexistent/claude"]\n', "directory '/nonexistent/claude' does not"),
        (b"scope = '\xff'\n", "not UTF-8"),
        ('db = "index.db"\n', "db: 'index.db' is not an absolute path"),
    ],
)
def test_a_bad_config_file_is_one_line_naming_it(
    clean_file: World, text: str | bytes, says: str
) -> None:
    world = clean_file
    if isinstance(text, bytes):
        world.file.write_bytes(text)
    else:
        world.write(text)
    result = world.run("list", base=False)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {world.file}") and says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output
    # Where one looks at a broken setup, it does not stop the command (README): config
    # shows the settings without the file and says what is wrong with it; completion's
    # script (eval'd by a shell's rc file) and --help still print.
    shown = world.run("config", base=False)
    assert shown.exit_code == 0, shown.output
    assert "config file:" in shown.stdout
    if "config_dirs" not in str(text):  # a missing dir is shown as the file names it
        assert says in shown.stderr
    script = world.run("completion", "bash", base=False)
    assert script.exit_code == 0 and "_SESSIONDEX_COMPLETE" in script.stdout
    helped = world.run("list", "--help", base=False)
    assert helped.exit_code == 0 and "Usage:" in helped.stdout


# ------------------------------------------------------------------ completion
def test_a_config_file_named_by_its_variable_must_exist(clean_file: World) -> None:
    """Helper 93: ``SESSIONDEX_CONFIG`` naming a file that does not exist was ignored in
    silence (the defaults used), where a missing ``--config-dir`` is a usage error. The
    file's own default place may be missing: that is no setting."""
    world = clean_file
    missing = world.base / "nope.toml"
    result = world.run("list", env={"SESSIONDEX_CONFIG": str(missing)})
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: Invalid value for SESSIONDEX_CONFIG: file '{missing}' does not exist\n"
    )
    shown = world.run("config", env={"SESSIONDEX_CONFIG": str(missing)})
    assert shown.exit_code == 0 and str(missing) in shown.stdout
    world.file.unlink(missing_ok=True)
    assert world.run("list").exit_code == 0  # no file at the default place: defaults


def _complete(world: World, args: list[str], incomplete: str) -> list[tuple[str, str | None]]:
    os.environ["XDG_CONFIG_HOME"] = str(world.xdg)
    complete = ShellComplete(cli, {}, "sessiondex", "_SESSIONDEX_COMPLETE")
    options = ["--config-dir", str(world.tree.root), "--db", str(world.db)]
    return [(c.value, c.help) for c in complete.get_completions([*options, *args], incomplete)]


@pytest.mark.parametrize(
    ("args", "incomplete", "expected"),
    [
        ([], "sh", ["show"]),
        ([], "con", ["continue", "config"]),
        (["list"], "--include-h", ["--include-hidden"]),
        (["show", "--cwd", "/w/shop"], "auth", ["Auth refactor", "Auth notes"]),
        # a name, then the IDs: this repository's first (@: the ID of that session)
        (["rename", "--cwd", "/w/blog"], "", ["Blog feed", "@Blog feed", "@Auth refactor"]),
    ],
)
def test_completion_of_commands_options_and_sessions(
    world: World, args: list[str], incomplete: str, expected: list[str]
) -> None:
    expected = [world.ids[e[1:]] if e.startswith("@") else e for e in expected]
    values = [value for value, _ in _complete(world, args, incomplete)]
    assert values[: len(expected)] == expected


def test_completion_describes_ids_by_title_and_needs_no_index(world: World, tmp_path: Path) -> None:
    found = dict(_complete(world, ["resume"], world.ids["Blog feed"][:4]))
    assert found[world.ids["Blog feed"]] == "Blog feed"
    complete = ShellComplete(cli, {}, "sessiondex", "_SESSIONDEX_COMPLETE")
    missing = ["--db", str(tmp_path / "none.db"), "show"]
    assert complete.get_completions(missing, "") == []
    assert not (tmp_path / "none.db").exists()  # nothing created or refreshed
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"not an index" * 1000)
    assert complete.get_completions(["--db", str(damaged), "show"], "") == []
    # a Tab repairs nothing (it used to move the file aside and create a new index)
    assert damaged.read_bytes() == b"not an index" * 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.db"]


HOSTILE_NAME = "ünïcødé $(touch PWNED) `id`"


@pytest.mark.parametrize(
    ("shell", "name", "value"),
    [
        # bash inserts a candidate as it is: shell-quoted, one argument, nothing runs
        ("bash_complete", HOSTILE_NAME, "'ünïcødé $(touch PWNED) `id`'"),
        ("bash_complete", "my quoted name", "'my quoted name'"),
        ("bash_complete", "plain", "plain"),
        # zsh's compadd and fish quote what they insert: the name as it is
        ("zsh_complete", HOSTILE_NAME, HOSTILE_NAME),
        ("fish_complete", "my quoted name", "my quoted name"),
        # the protocols are line- and tab-based: no control character gets through
        ("zsh_complete", "two\nlines\tand a tab", "two lines and a tab"),
        ("bash_complete", "two\nlines", "'two lines'"),
        # Helper 206: an escape or a bidi override reached the terminal as it was (the
        # override reorders the command line shown); they are made visible as tables
        # show them, a name that resolves as typed
        ("bash_complete", "deploy\x1b[31m fix", "'deploy^[[31m fix'"),
        ("zsh_complete", "evil \u202etxt.exe", "evil <U+202E>txt.exe"),
        ("fish_complete", "bell\x07 ring", "bell^G ring"),
    ],
)
def test_a_completed_name_is_one_argument_and_never_runs(
    world: World, monkeypatch: pytest.MonkeyPatch, shell: str, name: str, value: str
) -> None:
    # the record Claude Code's /rename (or any tool) writes: rename itself would clean
    # the control characters this checks
    sid = world.ids["Blog feed"]
    path = one_session(world.run("resolve", sid, "--cwd", "/w/blog", "--json").stdout)
    record = {"type": "custom-title", "customTitle": name, "sessionId": sid}
    append_records(Path(path["file_path"]), [record])
    monkeypatch.setenv("_SESSIONDEX_COMPLETE", shell)
    prefix = name.split()[0].split("\n")[0][:3]
    world.run("index")  # completion reads the index as it is
    completed = _complete(world, ["show", "--cwd", "/w/blog"], prefix)
    assert value in [v for v, _ in completed]
    for text in [t for pair in completed for t in pair if t]:
        assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text), text


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_command_prints_the_script(world: World, shell: str) -> None:
    result = world.run("completion", shell, base=False)
    assert result.exit_code == 0 and "_SESSIONDEX_COMPLETE" in result.stdout


# ------------------------------------------------------------------ pager
@pytest.mark.parametrize(
    ("pager", "less", "command", "less_env", "color"),
    [
        (None, None, ["less"], "FRX", True),  # git's default
        (None, "-X", ["less"], "-X", False),  # the user's LESS, without -R: no colour
        ("less -R", "-X", ["less", "-R"], "-X", True),
        ("less --RAW-CONTROL-CHARS", "", ["less", "--RAW-CONTROL-CHARS"], "", True),
        ("more", None, ["more"], None, False),
        ("{bin}/most -s", None, ["{bin}/most", "-s"], None, True),
        ("cat", None, None, None, True),
        ("", None, None, None, True),
        # as git runs $PAGER: shell syntax goes through sh -c (a variable set before the
        # program, a pipe, ~), and the colour is read from the program and that variable
        ("LESS=-R less", "-X", ["sh", "-c", "LESS=-R less"], "-X", True),
        ("less -R | tee log", None, ["sh", "-c", "less -R | tee log"], "FRX", True),
        ("less -+R", None, ["less", "-+R"], "FRX", False),  # -+R resets raw colours
        ("not-installed-pager -x", None, None, None, True),  # printed directly
        # a program named through a variable is the shell's to find, as for git
        ("$HOME/bin/pg", None, ["sh", "-c", "$HOME/bin/pg"], None, False),
        ("less -Pprompt", "-X", ["less", "-Pprompt"], "-X", False),  # a prompt's text
        # options run together in $LESS, as less reads them (helper 115): the last says
        (None, "FRX-+R", ["less"], "FRX-+R", False),
        (None, "-+RFRX", ["less"], "-+RFRX", True),
        (None, "+G -R", ["less"], "+G -R", True),  # +G is a command, not options
        (None, "+R", ["less"], "+R", False),
    ],
)
def test_the_pager_and_whether_it_gets_colour(
    tmp_path: Path,
    pager: str | None,
    less: str | None,
    command: list[str] | None,
    less_env: str,
    color: bool,
) -> None:
    for name in ("less", "more", "most"):
        program = tmp_path / name
        program.write_text("#!/bin/sh\ncat\n")
        program.chmod(0o755)
    env = {"PATH": str(tmp_path)} if less is None else {"LESS": less, "PATH": str(tmp_path)}
    given = None if pager is None else pager.replace("{bin}", str(tmp_path))
    expected = None if command is None else [c.replace("{bin}", str(tmp_path)) for c in command]
    chosen = choose_pager(given, env)
    assert (chosen.command, chosen.env.get("LESS"), chosen.color) == (expected, less_env, color)


@pytest.mark.parametrize(("name", "coloured"), [("less", True), ("more", False)])
def test_show_pages_like_git_log(world: World, tmp_path: Path, name: str, coloured: bool) -> None:
    """On a terminal, long output goes to the pager: with ``LESS=FRX`` and colours for
    ``less``, without colours for a pager that would print ``ESC[36m`` literally."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "seen.txt"
    fake = bin_dir / name
    fake.write_text(f'#!/bin/sh\nprintf "LESS=%s\\n" "$LESS" > {seen}\ncat >> {seen}\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("LESS", "PAGER", "NO_COLOR")}
    env.update(PATH=f"{bin_dir}:{env['PATH']}", LINES="3", COLUMNS="80", TERM="xterm")
    if name != "less":
        env["PAGER"] = name
    main, secondary = pty.openpty()
    command = [str(Path(sys.executable).with_name("sessiondex"))]
    process = subprocess.run(
        [*command, "--config-dir", str(world.tree.root), "--db", str(world.db)]
        + ["show", world.ids["Auth refactor"]],
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=subprocess.PIPE,
        env=env,
        timeout=60,
    )
    os.close(secondary)
    os.close(main)
    assert process.returncode == 0, process.stderr
    text = seen.read_text()
    assert text.splitlines()[0] == ("LESS=FRX" if name == "less" else "LESS=")
    assert "work on Auth refactor" in text
    assert ("\x1b[" in text) is coloured


@pytest.mark.parametrize(("argv", "scope"), [(["pick"], "all"), (["resume"], "all")])
def test_the_picker_opens_in_the_files_scope(
    clean_file: World, monkeypatch: pytest.MonkeyPatch, argv: list[str], scope: str
) -> None:
    import sessiondex.cli.pick_cmd as pick_cmd

    seen: list[str] = []

    def choose(cwd: str | None, **options: Any) -> dict[str, Any]:
        seen.append(options["scope"])
        raise SystemExit(1)

    monkeypatch.setattr(pick_cmd, "choose_session", choose)
    clean_file.write(f'scope = "{scope}"\n')
    clean_file.run(*argv)
    clean_file.run("pick", "--scope", "worktree")
    assert seen == [scope, "worktree"]


@pytest.mark.parametrize(
    ("db", "env", "says"),
    [
        ("", {}, "Error: Invalid value for '--db': the index path is empty"),
        ("{dir}", {}, "Error: Invalid value for '--db': '{dir}' is a directory"),
        (None, {"SESSIONDEX_DB": "{dir}"}, "Error: Invalid value for SESSIONDEX_DB: '{dir}' is"),
    ],
)
def test_an_index_path_that_is_no_file_is_one_usage_line(
    tmp_path: Path, db: str | None, env: dict[str, str], says: str
) -> None:
    # It used to be a note that the index was answered "as it is", then an error that it
    # could not be written, exit 1.
    directory = str(tmp_path)
    args = [
        "--config-dir",
        str(tmp_path),
        *([] if db is None else ["--db", db.format(dir=directory)]),
    ]
    env = {k: v.format(dir=directory) for k, v in env.items()}
    result = CliRunner().invoke(cli, [*args, "list"], env=env)
    assert result.exit_code == 2
    assert result.stderr.startswith(says.format(dir=directory))
    assert len(result.stderr.strip().splitlines()) == 1


def test_completion_offers_only_the_sessions_of_the_config_dirs_given(tmp_path: Path) -> None:
    """Completion offers what resolve accepts: a session another config dir left in a
    shared index is neither (it was offered, then resolve said not found)."""
    from click.shell_completion import ShellComplete

    from tests.test_cli_config_dirs import _root_world

    one, two, first, second = _root_world(tmp_path)
    db = str(tmp_path / "shared.db")
    for tree in (one, two):  # both indexed into the one file
        assert (
            CliRunner().invoke(cli, ["--config-dir", str(tree.root), "--db", db, "index"]).exit_code
            == 0
        )
    complete = ShellComplete(cli, {}, "sessiondex", "_SESSIONDEX_COMPLETE")
    args = ["--config-dir", str(two.root), "--db", db, "show", "--cwd", "/w/app"]
    values = {c.value for c in complete.get_completions(args, "")}
    assert second in values and first not in values


@pytest.mark.parametrize(
    ("color", "marked"),
    [("always", "\x1b["), ("auto", "[notes]"), ("never", "[notes]")],
)
def test_search_highlights_in_a_pipe_as_the_colour_setting_says(
    clean_file: World, color: str, marked: str
) -> None:
    """``color = "always"`` chose colour for the highlight, then click stripped the
    colour on its way to a pipe: the match was neither coloured nor bracketed."""
    clean_file.write(f'color = "{color}"\n')
    result = clean_file.run("search", "notes", "--scope", "all")
    assert result.exit_code == 0, result.output
    snippet = result.stdout.splitlines()[2]
    assert marked in snippet


def test_config_never_prints_a_dsns_password(clean_file: World) -> None:
    """``config`` printed ``--db postgresql://u:hunter2@…`` as given; every other
    message that names a DSN masks its password."""
    dsn = "postgresql://ann:hunter2@db.example/team"
    for fmt in ("table", "json"):
        result = clean_file.run("--db", dsn, "config", "--format", fmt, base=False)
        assert result.exit_code == 0, result.output
        assert "hunter2" not in result.output and "ann:***@db.example" in result.output


def test_a_config_file_with_a_byte_order_mark_is_read(clean_file: World) -> None:
    """A file saved with a UTF-8 byte-order mark (some Windows editors) failed with
    "Invalid statement (at line 1, column 1)", naming nothing the user could see."""
    clean_file.file.write_bytes(b'\xef\xbb\xbfscope = "all"\n')
    assert _effective(clean_file)["scope"] == ("all", str(clean_file.file))


def test_a_connection_string_in_the_wrong_place_shows_no_password(clean_file: World) -> None:
    """The file's db refuses a key=value connection string (only postgresql:// URLs
    name the store), and its error printed the password."""
    clean_file.write('db = "host=127.0.0.1 dbname=x password=Sup3rSecret"\n')
    result = clean_file.run("list")
    assert result.exit_code == 2
    assert "Sup3rSecret" not in result.output and "password=***" in result.output


def test_config_shows_several_config_dirs_so_they_can_be_told_apart(
    clean_file: World, tmp_path: Path
) -> None:
    """The table joined the dirs with ", ": `/tmp/a,b` and `/tmp/c` read as three dirs
    (a comma is part of a path, as Claude Code reads CLAUDE_CONFIG_DIR). Each dir is
    shell-quoted when it needs it, one space between: what a shell would take back."""
    import shlex

    dirs = [tmp_path / "old laptop, 2025", tmp_path / "plain"]
    for d in dirs:
        (d / "projects").mkdir(parents=True)
    options = [w for d in dirs for w in ("--config-dir", str(d))]
    table = clean_file.run(*options, "config", base=False, env={"COLUMNS": "1000"}).stdout
    row = next(line for line in table.splitlines() if line.startswith("config_dirs"))
    shown = row.removeprefix("config_dirs").rsplit("--config-dir", 1)[0].strip()
    assert shlex.split(shown) == [str(d) for d in dirs]
