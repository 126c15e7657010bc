"""resume finds sessions outside ~/.claude: ``CLAUDE_CONFIG_DIR`` in ``resume_command``,
``resume --dry-run`` and the environment of ``claude`` (issue 16 item 1)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiondex import Index
from sessiondex.cli.main import cli
from tests.builders import ConfigTree

CWD = "/tmp/sessiondex-resume-tests/app"  # no such dir: the home fixture makes one


def _tree(root: Path) -> tuple[ConfigTree, str]:
    tree = ConfigTree(root)
    s = tree.session(cwd=CWD)
    s.user("resume me")
    s.assistant("ok")
    s.write(mtime=1_790_000_000)
    return tree, s.session_id


def _fake_claude(bin_dir: Path, out: Path) -> None:
    """A ``claude`` that writes down its config dir, directory and arguments."""
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "claude"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n%s\\n%s\\n" "${{CLAUDE_CONFIG_DIR-unset}}" "$PWD" "$*" > {shlex.quote(str(out))}\n'
    )
    script.chmod(0o755)


def _printed_lines(base: list[str], sid: str) -> tuple[str, str]:
    """The resume line as ``list --json`` gives it and as ``resume --dry-run`` prints it."""
    runner = CliRunner()
    listed = json.loads(runner.invoke(cli, [*base, "list", "--json", "--cwd", CWD]).stdout)
    dry = runner.invoke(cli, [*base, "resume", sid, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    return listed[0]["resume_command"], dry.stdout.strip()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    # A directory that exists, under tmp_path (it was made in /tmp and left there): the
    # module's CWD, which every helper and test here reads when it runs.
    workdir = tmp_path / "app"
    workdir.mkdir()
    monkeypatch.setattr(sys.modules[__name__], "CWD", str(workdir))
    return home


@pytest.mark.parametrize("where", ["default", "named default", "elsewhere", "with a space"])
def test_resume_points_claude_at_the_sessions_config_dir(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    root = {
        "default": home / ".claude",
        "named default": home / ".claude",
        "elsewhere": tmp_path / "laptop" / ".claude",
        "with a space": tmp_path / "old laptop",
    }[where]
    tree, sid = _tree(root)
    options = [] if where == "default" else ["--config-dir", str(root)]
    base = [*options, "--db", str(tmp_path / "i.db")]
    expected_dir = None if "default" in where else str(root)
    prefix = f"CLAUDE_CONFIG_DIR={shlex.quote(str(root))} " if expected_dir else ""
    line = f"cd {CWD} && {prefix}claude --resume {sid}"
    runner = CliRunner()
    assert _printed_lines(base, sid) == (line, line)

    # The line works in a shell, and resume itself sets the same environment; an
    # inherited CLAUDE_CONFIG_DIR that names another dir is not passed on.
    out = tmp_path / "claude-saw.txt"
    _fake_claude(tmp_path / "bin", out)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    subprocess.run(["sh", "-c", line], check=True, env=env)
    by_shell = out.read_text().splitlines()
    out.unlink()
    inherited = {} if where == "default" else {"CLAUDE_CONFIG_DIR": str(tmp_path / "nope")}
    result = runner.invoke(cli, [*base, "resume", sid], env=inherited)
    assert result.exit_code == 0, result.output
    saw = out.read_text().splitlines()
    assert by_shell == [expected_dir or "unset", CWD, f"--resume {sid}"]
    # With another dir inherited, ~/.claude is named rather than left unset.
    assert saw == [expected_dir or (str(root) if inherited else "unset"), *by_shell[1:]]


@pytest.mark.parametrize(
    ("exported", "needs_prefix"),
    [
        (None, False),
        ("{home}/.claude", False),  # claude would open ~/.claude anyway
        ("{tmp}/work-claude", True),  # pasted as is, the line opened the other dir
    ],
)
def test_a_resume_line_counts_the_exported_claude_config_dir(
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    exported: str | None,
    needs_prefix: bool,
) -> None:
    """The line is pasted into the shell it was printed in: with ``CLAUDE_CONFIG_DIR``
    exported there to another dir, a session of ``~/.claude`` needs it set back."""
    root = home / ".claude"
    tree, sid = _tree(root)
    env_value = exported.format(home=home, tmp=tmp_path) if exported else None
    if env_value:
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", env_value)
    else:
        monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    prefix = f"CLAUDE_CONFIG_DIR={shlex.quote(str(root))} " if needs_prefix else ""
    line = f"cd {CWD} && {prefix}claude --resume {sid}"
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    assert _printed_lines(base, sid) == (line, line)
    # Pasted into that shell, it opens the session's own dir.
    out = tmp_path / "claude-saw.txt"
    _fake_claude(tmp_path / "bin", out)
    shell_env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", line], check=True, env=shell_env)
    assert out.read_text().splitlines()[0] in (str(root), "unset")
    # A long-lived reader's kept listing follows the variable too.
    with Index(tmp_path / "i.db", [root]) as index:
        assert index.list(scope="all")[0]["resume_command"] == line
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "elsewhere"))
        assert "CLAUDE_CONFIG_DIR=" in index.list(scope="all")[0]["resume_command"]


def test_the_default_is_decided_by_the_readers_home(tmp_path: Path) -> None:
    """The index stores no HOME-dependent line: the same database answers each reader
    for its own ~/.claude."""
    home = tmp_path / "home"
    tree, sid = _tree(home / ".claude")
    db = tmp_path / "i.db"
    env = os.environ.copy()
    try:
        os.environ["HOME"] = str(tmp_path / "someone-else")
        with Index(db, [tree.root]) as index:
            assert "CLAUDE_CONFIG_DIR=" in index.list(scope="all")[0]["resume_command"]
        os.environ["HOME"] = str(home)
        with Index(db, [tree.root], refresh=False) as index:
            command = index.list(scope="all")[0]["resume_command"]
            assert command == f"cd {CWD} && claude --resume {sid}"
            assert index.resolve(sid).session["resume_command"] == command
    finally:
        os.environ.clear()
        os.environ.update(env)


@pytest.mark.parametrize(
    "directory",
    [
        "/p/nl\ndir",
        "/p/tab\tand 'quote'",
        "/p/esc\x1b[31mred\x1b[0m",
        "/p/back\\slash\r",
        "/p/plain dir",
        "/p/$(touch pwned)`x`",
        "/p/c1\x85next",  # a C1 control (NEL)
        "/p/bidi\u202eevil",  # a bidi override
        "/p/line\u2028sep",  # str.splitlines breaks here
        "/p/zero\u200bwidth",
        "/p/café 🚀",  # plain non-ASCII stays as it is
    ],
)
def test_a_resume_line_names_the_directory_on_one_line(directory: str) -> None:
    """A cwd holding a newline was quoted with the newline in it: printed in a
    one-line place it became a space (another directory). The word is now one line,
    with no control character, and bash reads it back as the directory."""
    import shutil
    import subprocess

    from sessiondex.indexer.objects import shell_quote

    word = shell_quote(directory)
    assert word.isascii() or "🚀" in word  # every escaped character as \\xHH bytes
    assert not any(ch < " " or ch == "\x7f" for ch in word)
    bash = shutil.which("bash")
    assert bash is not None
    out = subprocess.run([bash, "-c", f"printf %s {word}"], capture_output=True, check=True)
    assert out.stdout.decode() == directory


# (what to resume, the config dir) → what ``claude`` receives when the line is pasted
RESUME_TARGETS = [
    pytest.param("3f2a9c1e-0000-4000-8000-000000000001", "/configs/team copy", id="uuid"),
    pytest.param("3F2A9C1E-0000-4000-8000-000000000001", None, id="upper-case uuid"),
    pytest.param("/backups/loose dir/it's.jsonl", None, id="a path with a space and a quote"),
    pytest.param(
        "3f2a9c1e-0000-4000-8000-000000000001", "/x;touch pwned;#", id="hostile config dir"
    ),
]


@pytest.mark.parametrize(("target", "config_dir"), RESUME_TARGETS)
def test_a_pasted_resume_line_hands_claude_exactly_its_target(
    tmp_path: Path, target: str, config_dir: str | None
) -> None:
    """Each part is quoted once (a transcript path was quoted twice: claude received
    the quote characters), and the config dir goes before ``claude`` as its own word
    (it used to be spliced into the finished line)."""
    import shutil
    import subprocess

    from sessiondex.indexer.objects import resume_command

    line = resume_command(target, str(tmp_path), config_dir)
    assert line is not None
    bash = shutil.which("bash")
    assert bash is not None
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "claude").write_text('#!/bin/sh\nprintf "%s|%s|%s" "$CLAUDE_CONFIG_DIR" "$1" "$2"\n')
    (fake / "claude").chmod(0o755)
    out = subprocess.run(
        [bash, "-c", line],
        capture_output=True,
        env={"PATH": f"{fake}:/usr/bin:/bin"},
        cwd="/",
        check=True,
    )
    assert out.stdout.decode() == f"{config_dir or ''}|--resume|{target}"
    assert not (tmp_path / "pwned").exists() and not os.path.exists("/pwned")


@pytest.mark.parametrize(
    "session_id",
    [
        "x$(touch pwned); echo",  # a team store's ID is whatever its writer said
        "a claude --resume b",
        "--dangerously-skip-permissions",
        "relative/path.jsonl",
    ],
)
def test_an_id_claude_cannot_resume_has_no_resume_line(session_id: str) -> None:
    """Quoting cannot stop ``claude`` from taking ``--dangerously-…`` for an option, and
    an ID that holds "claude --resume" made the config dir land inside its quotes."""
    from sessiondex.indexer.objects import resume_command

    assert resume_command(session_id, "/tmp", "/x;touch pwned;#") is None


def test_a_loose_transcript_s_resume_line_is_quoted_once(tmp_path: Path) -> None:
    """A transcript given by path, outside any config dir, is resumed by its path: the
    path was quoted, then quoted again, so claude received the quote characters."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=str(tmp_path))
    s.user("loose file talk")
    s.write()
    loose = tmp_path / "loose dir"
    loose.mkdir()
    path = loose / s.path.name
    path.write_bytes(s.path.read_bytes())
    s.path.unlink()
    db = str(tmp_path / "index.db")
    for args in (["resume", "--dry-run", str(path)], ["resolve", "--json", str(path)]):
        result = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "--db", db, *args])
        assert result.exit_code == 0, result.output
        line = result.stdout.strip()
        if args[0] == "resolve":
            line = json.loads(line)[0]["resume_command"]
        assert shlex.split(line)[-3:] == ["claude", "--resume", str(path)]


@pytest.mark.parametrize("copy_name", ["bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb", "backup"])
def test_a_copy_in_a_projects_layout_resumes_the_file_named(tmp_path: Path, copy_name: str) -> None:
    """A transcript copied under another name inside a ``projects/<key>/`` that is not
    indexed (a backup config dir) holds its original's ID in its records. Claude Code
    opens a session by its file's name, so the line named the records' ID in that config
    dir, where no such file is (helper 124): a UUID name is that session there; any other
    name is opened by its path."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=str(tmp_path))
    s.user("copied talk")
    s.write()
    backup = tmp_path / "backup"
    copy = backup / "projects" / s.path.parent.name / f"{copy_name}.jsonl"
    copy.parent.mkdir(parents=True)
    copy.write_bytes(s.path.read_bytes())
    s.path.unlink()
    db = str(tmp_path / "index.db")
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tree.root), "--db", db, "resolve", "--json", str(copy)]
    )
    assert result.exit_code == 0, result.output
    (obj,) = json.loads(result.stdout)
    words = shlex.split(obj["resume_command"])
    if copy_name == "backup":
        assert obj["config_dir"] is None and words[-3:] == ["claude", "--resume", str(copy)]
    else:
        assert obj["session_id"] == copy_name and obj["config_dir"] == str(backup)
        assert words[-4:] == [f"CLAUDE_CONFIG_DIR={backup}", "claude", "--resume", copy_name]
        projects = Path(obj["config_dir"]) / "projects" / obj["project_key"]
        assert (projects / f"{obj['session_id']}.jsonl").samefile(copy)


_SID = "3f2a9c1e-0000-4000-8000-000000000001"


@pytest.mark.parametrize(
    "target",
    [_SID, "/p/x y/3f2a9c1e.jsonl", "/p/it's/a.jsonl", "/p/claude --resume x"],
)
@pytest.mark.parametrize(
    "cwd",
    [
        "/p/plain",
        "/p/with claude --resume 3f2a9c1e in it",
        f"/p/x && claude --resume {_SID}",
        "/p/nl\nx",
        None,
    ],
)
@pytest.mark.parametrize("config_dir", ["/c fg/x", "/c/\u202ertl", "/plain"])
def test_a_stored_line_finished_with_a_config_dir_equals_one_built_with_it(
    target: str, cwd: str | None, config_dir: str
) -> None:
    """Listings of a config dir that is not the default finish each stored line instead
    of building it again (a hot path); the result must be the line built whole."""
    from sessiondex.indexer.objects import resume_command, with_config_dir

    stored = resume_command(target, cwd)
    assert stored is not None
    assert with_config_dir(stored, target, cwd, config_dir) == resume_command(
        target, cwd, config_dir
    )


def test_a_config_dir_claude_code_cannot_be_pointed_at_has_no_resume_line(
    tmp_path: Path,
) -> None:
    """Claude Code puts CLAUDE_CONFIG_DIR in NFC: for a folder named decomposed (café
    as e + U+0301), the resume line pointed Claude Code at the composed folder, another
    one, where the session is not (or another copy of it is)."""
    tree, session_id = _tree(tmp_path / "cafe\u0301")
    args = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    listed = CliRunner().invoke(cli, [*args, "list", "--scope", "all", "--json"])
    assert [o["resume_command"] for o in json.loads(listed.stdout)] == [None]
    result = CliRunner().invoke(cli, [*args, "resume", session_id, "--dry-run"])
    assert result.exit_code == 1
    assert "rename the folder in NFC to resume its sessions" in result.stderr


def test_a_decomposed_link_to_a_plain_folder_resumes_through_the_folder(tmp_path: Path) -> None:
    """A config dir named decomposed that is a link to a folder named plainly: Claude
    Code can be pointed at the folder it links to."""
    tree, session_id = _tree(tmp_path / "real")
    link = tmp_path / "cafe\u0301-link"
    link.symlink_to(tree.root)
    args = ["--config-dir", str(link), "--db", str(tmp_path / "i.db")]
    listed = CliRunner().invoke(cli, [*args, "list", "--scope", "all", "--json"])
    (obj,) = json.loads(listed.stdout)
    assert f"CLAUDE_CONFIG_DIR={tree.root}" in obj["resume_command"]


def test_every_message_says_why_a_decomposed_config_dir_cannot_be_resumed(
    tmp_path: Path,
) -> None:
    """resolve and show said the session ID was no session ID (the team store's case)."""
    tree, session_id = _tree(tmp_path / "cafe\u0301")
    args = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    for command in (["resolve", session_id], ["show", session_id]):
        result = CliRunner().invoke(cli, [*args, *command, "--cwd", str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert "rename the folder in NFC" in result.stderr, (command, result.stderr)
        said = result.stdout + result.stderr
        assert said.count("rename the folder in NFC") == 1, said  # not again on "matched by"


@pytest.mark.parametrize("given", ["an existing --cwd", "a missing --cwd", "no --cwd"])
def test_a_gone_directory_falls_back_to_one_that_exists(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    """The recorded directory is gone: resume runs from --cwd, else from the process
    cwd. A --cwd that does not exist either was named as the fallback ("… no longer
    exists; resuming from <the same missing dir>") and printed `cd <missing> && …`."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=str(tmp_path / "deleted-checkout"))
    s.user("resume me")
    s.assistant("ok")
    s.write()
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cwd = {
        "an existing --cwd": ["--cwd", str(elsewhere)],
        "a missing --cwd": ["--cwd", str(tmp_path / "deleted-checkout")],
        "no --cwd": [],
    }[given]
    expected = elsewhere if given == "an existing --cwd" else here
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
        + ["resume", s.session_id, "--dry-run", *cwd],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"cd {shlex.quote(str(expected))} && ")
    gone = tmp_path / "deleted-checkout"
    assert result.stderr == f"note: {gone} no longer exists; resuming from {expected}\n"


@pytest.mark.parametrize("pwd", ["the shell's $PWD", "no $PWD", "a $PWD left from elsewhere"])
def test_a_working_directory_deleted_under_the_process(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pwd: str
) -> None:
    """Run from a checkout that was deleted (os.getcwd() fails): every command was a
    FileNotFoundError traceback, even with an absolute --config-dir and an existing
    --cwd. The directory is the one the shell says ($PWD), whose sessions the index
    still holds; without $PWD, one line that says what to do, unless --cwd is given."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=str(checkout))
    s.user("work in the checkout")
    s.assistant("ok")
    s.write()
    monkeypatch.chdir(checkout)
    checkout.rmdir()
    if pwd == "no $PWD":
        monkeypatch.delenv("PWD", raising=False)
    elif pwd == "a $PWD left from elsewhere":  # names a directory that is still there
        monkeypatch.setenv("PWD", str(tmp_path))
    else:
        monkeypatch.setenv("PWD", str(checkout))
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    listed = CliRunner().invoke(cli, [*base, "list", "--json"])
    resumed = CliRunner().invoke(cli, [*base, "resume", s.session_id, "--dry-run"])
    if pwd != "the shell's $PWD":
        for result in (listed, resumed):
            assert result.exit_code == 1 and result.exception is not None
            assert isinstance(result.exception, SystemExit), result.exception
            assert result.stderr == (
                "Error: the current directory no longer exists: cd to another, or pass --cwd DIR\n"
            )
    else:
        assert listed.exit_code == 0, listed.output
        assert [o["session_id"] for o in json.loads(listed.stdout)] == [s.session_id]
        # claude cannot start in a deleted directory: neither the session's nor this one
        assert resumed.exit_code == 1
        assert "pass --cwd DIR to resume from there" in resumed.stderr
    here = tmp_path / "here"
    here.mkdir()
    given = CliRunner().invoke(
        cli, [*base, "resume", s.session_id, "--dry-run", "--cwd", str(here)]
    )
    assert given.exit_code == 0, given.output
    assert given.stdout.startswith(f"cd {shlex.quote(str(here))} && ")


def test_a_relative_output_from_a_deleted_directory_goes_nowhere_else(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$PWD says where a deleted working directory was, for the questions asked from
    it; a relative path to write is not placed by it (a $PWD left over from another
    directory would put `-o out.md` there): it stays relative, as the kernel reads it,
    and the write fails."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("export me")
    s.assistant("ok")
    s.write()
    gone, elsewhere = tmp_path / "gone", tmp_path / "elsewhere"
    gone.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    monkeypatch.setenv("PWD", str(elsewhere))
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
        + ["export", s.session_id, "-o", "out.md"],
    )
    assert result.exit_code == 2, result.output  # a usage error in one line
    assert isinstance(result.exception, SystemExit)
    assert "is relative and the current directory no longer exists" in result.stderr
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("relative", ["--db", "--config-dir"])
def test_a_relative_path_option_from_a_deleted_directory_is_one_line(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: str
) -> None:
    tree = ConfigTree(tmp_path / "claude")
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    monkeypatch.setenv("PWD", str(gone))
    values = {"--config-dir": str(tree.root), "--db": str(tmp_path / "i.db")}
    values[relative] = "relative"
    result = CliRunner().invoke(
        cli, [arg for option, value in values.items() for arg in (option, value)] + ["list"]
    )
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exception
    assert result.stderr == (
        "Error: the current directory no longer exists: give absolute paths, or cd to another\n"
    )


# What a transcript without one user or assistant record holds: Claude Code finds no
# conversation in it (``--resume <id>`` looks for such a line), so there is nothing to
# resume, though show and resolve still read the file.
_MESSAGELESS: dict[str, list[dict[str, object] | bytes]] = {
    "an empty file": [],
    "a custom-title alone": [{"type": "custom-title", "customTitle": "only a name"}],
    "a summary alone": [{"type": "summary", "summary": "old summary", "leafUuid": "x"}],
    "a tag and a pr-link": [
        {"type": "tag", "tag": "t"},
        {"type": "pr-link", "prNumber": 7, "prUrl": "https://github.com/o/r/pull/7"},
    ],
    "unreadable lines only": [b"{not json\n", b"[1, 2]\n"],
}


@pytest.mark.parametrize("where", ["in the config dir", "a loose copy"])
@pytest.mark.parametrize("content", list(_MESSAGELESS))
def test_a_transcript_without_messages_is_not_resumed(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, where: str
) -> None:
    """``resume PATH`` (and ``pick --exec``, which resumes the chosen file's path) of a
    transcript with no message ran ``claude --resume <id>``, which answers "No
    conversation found": a whole ID, a name and a prefix already skip such a file.
    Now it is one ``Error:`` line, exit 1, and claude is not started."""
    from tests.builders import write_jsonl

    tree = ConfigTree(tmp_path / "claude")
    sid = "3f2a9c1e-0000-4000-8000-0000000000aa"
    records = [{**r, "sessionId": sid} if isinstance(r, dict) else r for r in _MESSAGELESS[content]]
    path = write_jsonl(tree.project_dir(CWD) / f"{sid}.jsonl", records, mtime=1_790_000_000)
    if where == "a loose copy":
        loose = tmp_path / "loose" / "copy.jsonl"
        loose.parent.mkdir()
        loose.write_bytes(path.read_bytes())
        path = loose
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    out = tmp_path / "claude-ran"
    _fake_claude(tmp_path / "bin", out)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    # A loose file is a session only when a record names one (its name is no ID).
    session = where == "in the config dir" or any(isinstance(r, dict) for r in records)
    said = "no user or assistant message" if session else "No session matches"
    for dry in (["--dry-run"], []):
        result = CliRunner().invoke(cli, [*base, "resume", str(path), *dry])
        assert result.exit_code == 1, (dry, result.output)
        assert result.stdout == ""
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
        assert said in result.stderr, result.stderr
    assert not out.exists()  # claude was never started
    # reading it still works: resolve names the file
    shown = CliRunner().invoke(cli, [*base, "resolve", "--json", str(path)])
    assert shown.exit_code == (0 if session else 1), shown.output
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


# A recorded cwd that is no absolute directory (Claude Code records process.cwd(), always
# absolute: these come from a damaged or hostile transcript) → whether the line may cd.
RECORDED_CWDS = [
    pytest.param("-", False, id="dash: cd - goes to $OLDPWD"),
    pytest.param("-P", False, id="an option of cd"),
    pytest.param("--", False, id="end of options: cd -- goes home"),
    pytest.param("-L/tmp", False, id="an option glued to a path"),
    pytest.param("relative/dir", False, id="relative"),
    pytest.param(".", False, id="dot"),
    pytest.param("..", False, id="dot dot"),
    pytest.param("~", False, id="tilde, quoted so never home"),
    pytest.param("{tmp}/real dir", True, id="absolute"),
    pytest.param("C:\\Users\\dev\\app", True, id="a Windows drive path"),
]


@pytest.mark.parametrize(("recorded", "usable"), RECORDED_CWDS)
def test_a_resume_line_never_cds_to_a_cwd_that_is_no_absolute_directory(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recorded: str, usable: bool
) -> None:
    """The recorded cwd is transcript data. Quoting keeps it one word, but ``cd`` still
    reads ``-`` as "back to $OLDPWD", ``-P``/``--`` as options (home), and a relative
    path from wherever the line is pasted: ``resume_command`` and the other-directory
    note said ``cd - && claude --resume …``, and ``resume`` ran claude in ``.``
    (``os.path.isdir('.')``). Such a line now has no ``cd``, as for an unknown cwd, and
    ``resume`` starts claude in --cwd or the current directory, saying why."""
    from tests.builders import write_jsonl

    recorded = recorded.format(tmp=tmp_path)
    if usable and recorded.startswith("/"):
        Path(recorded).mkdir(parents=True)
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD, project_key="-some-key")
    s.user("where was I")
    s.assistant("ok")
    records = [{**r, "cwd": recorded} if "cwd" in r else r for r in s.records]
    write_jsonl(s.path, records, mtime=1_790_000_000)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    listed = CliRunner().invoke(cli, [*base, "list", "--scope", "all", "--json"])
    assert listed.exit_code == 0, listed.output
    (obj,) = json.loads(listed.stdout)
    assert obj["cwd"] == recorded  # JSON keeps the exact string
    words = shlex.split(obj["resume_command"])
    assert words[-2:] == ["--resume", s.session_id]
    if usable:
        assert words[:3] == ["cd", recorded, "&&"]
    else:
        assert "cd" not in words, obj["resume_command"]
    # From another directory, the note that it lives elsewhere carries the same line.
    resolved = CliRunner().invoke(cli, [*base, "resolve", s.session_id, "--cwd", str(here)])
    assert resolved.exit_code == 0, resolved.output
    assert obj["resume_command"] in resolved.stderr
    if recorded.startswith("/"):
        return  # resume runs there: the other tests of this file
    dry = CliRunner().invoke(cli, [*base, "resume", s.session_id, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.startswith(f"cd {shlex.quote(str(here))} && "), dry.stdout
    assert f"resuming from {here}" in dry.stderr
