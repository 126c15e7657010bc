"""A terminal whose encoding is not UTF-8 (``LANG=en_US.ISO-8859-1``, ``LANG=C``): every
command still answers, with no traceback. Human text shows what the encoding cannot
hold as ``?``; JSON stays lossless, as ``\\uXXXX`` escapes (JSON's own way to write any
character in ASCII)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from tests.builders import copy_fixtures

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NAMES = json.loads((FIXTURES / "scenarios.json").read_text())["names"]
UNICODE = NAMES["blog-unicode"]  # "Блог 🚀 café résumé": Cyrillic, an emoji, accents

COMMANDS = {
    "list": ["list", "--scope", "all"],
    "search": ["search", "café", "--scope", "all"],
    "resolve": ["resolve", UNICODE, "--cwd", "/home/dev/blog"],
    "show": ["show", UNICODE, "--cwd", "/home/dev/blog"],
    "stats": ["stats"],
    "from-pr": ["from-pr", "--scope", "all"],
}


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("locale")
    root = copy_fixtures(base)
    db = base / "index.db"
    assert (
        CliRunner().invoke(cli, ["--config-dir", str(root), "--db", str(db), "index"]).exit_code
        == 0
    )
    return root, db


def _run(config: tuple[Path, Path], args: list[str], charset: str) -> Any:
    root, db = config
    return CliRunner(charset=charset).invoke(
        cli,
        ["--config-dir", str(root), "--db", str(db), "--no-refresh", *args],
        env={"PAGER": "cat"},
    )


# Only Latin-1 for human text: under an ASCII stdout click itself writes UTF-8 (and
# Python's UTF-8 mode makes LANG=C UTF-8 anyway).
@pytest.mark.parametrize("name", list(COMMANDS))
def test_human_output_in_a_narrow_encoding(config: tuple[Path, Path], name: str) -> None:
    charset = "latin-1"
    wide = _run(config, COMMANDS[name], "utf-8")
    narrow = _run(config, COMMANDS[name], charset)
    assert narrow.exception is None or isinstance(narrow.exception, SystemExit), narrow.output
    assert narrow.exit_code == wide.exit_code == 0
    # The same lines, each character the encoding lacks shown as "?".
    expected = wide.stdout.encode(charset, "replace").decode(charset)
    assert narrow.stdout == expected


# show and export write the SDK's messages as JSON: exact too (helper 115: "????").
JSON_ARGS = {
    **{name: [*COMMANDS[name], "--json"] for name in ("list", "search", "resolve", "from-pr")},
    "show": [*COMMANDS["show"], "--format", "json"],
    "export": ["export", UNICODE, "--cwd", "/home/dev/blog", "-o", "-", "--format", "json"],
}


@pytest.mark.parametrize("charset", ["latin-1", "ascii"])
@pytest.mark.parametrize("name", list(JSON_ARGS))
def test_json_in_a_narrow_encoding_is_the_same_value(
    config: tuple[Path, Path], name: str, charset: str
) -> None:
    wide = _run(config, JSON_ARGS[name], "utf-8")
    narrow = _run(config, JSON_ARGS[name], charset)
    assert narrow.exit_code == wide.exit_code == 0, narrow.output
    assert narrow.stdout.isascii()
    assert json.loads(narrow.stdout) == json.loads(wide.stdout)
    if name in ("show", "export"):  # the messages' own non-ASCII text, escaped when narrow
        assert not wide.stdout.isascii()
    else:
        assert "\U0001f680" in wide.stdout or name in ("from-pr",)  # the title's emoji


@pytest.mark.parametrize("argument", ["café", "/home/dev/ü"], ids=["a search word", "a path"])
def test_a_utf8_argument_under_the_c_locale_says_what_to_do(tmp_path: Path, argument: str) -> None:
    """Helper 93: with ``LC_ALL=C`` and Python's UTF-8 mode off, ``search café`` said
    "'caf\\xc3\\xa9' is not valid UTF-8", which it is. Taking it as text (helper 96)
    then broke every path argument (a traceback at the first ``stat``: this process's
    file names are ASCII). Such an argument is one usage line saying why, and what to
    run instead; bytes that are not UTF-8 are refused as before."""
    import os
    import subprocess
    import sys

    root = tmp_path / "claude"
    (root / "projects").mkdir(parents=True)
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
    env.pop("PYTHONIOENCODING", None)
    command = [sys.executable, "-c", "from sessiondex.cli.main import main; main()"]
    command += ["--config-dir", str(root), "--db", str(tmp_path / "index.db")]
    args = ["search", argument] if argument == "café" else ["list", "--cwd", argument]
    result = subprocess.run([*command, *args], env=env, capture_output=True, timeout=60)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.decode("ascii", "backslashreplace").splitlines()
    assert line.startswith("Error: Invalid value for an argument: ")
    assert "is not ASCII" in line and "PYTHONUTF8=1" in line and "Traceback" not in line
    refused = subprocess.run(
        [*command, "search", os.fsdecode(b"caf\xe9")], env=env, capture_output=True, timeout=60
    )
    assert refused.returncode == 2
    assert b"'caf\\xe9' is not valid UTF-8" in refused.stderr


@pytest.mark.parametrize("where", ["CLAUDE_CONFIG_DIR", "SESSIONDEX_DB", "the config file"])
def test_a_non_ascii_path_from_the_environment_under_the_c_locale_is_one_line(
    tmp_path: Path, where: str
) -> None:
    """Helper 97: under ``LC_ALL=C PYTHONUTF8=0`` a non-ASCII ``db`` in config.toml ended
    in a traceback (``os.path.realpath``), and ``CLAUDE_CONFIG_DIR=/tmp/cfgü`` was called
    "not valid UTF-8". Values from the environment and the config file get the
    arguments' one line, saying what to run instead."""
    import os
    import subprocess
    import sys

    root = tmp_path / "claude"
    (root / "projects").mkdir(parents=True)
    odd = tmp_path / "cfgü"
    (odd / "projects").mkdir(parents=True)
    xdg = tmp_path / "xdg"
    (xdg / "sessiondex").mkdir(parents=True)
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "XDG_CONFIG_HOME": str(xdg)}
    for name in ("PYTHONIOENCODING", "SESSIONDEX_DB", "CLAUDE_CONFIG_DIR", "SESSIONDEX_CONFIG"):
        env.pop(name, None)
    command = [sys.executable, "-c", "from sessiondex.cli.main import main; main()"]
    if where == "CLAUDE_CONFIG_DIR":
        env["CLAUDE_CONFIG_DIR"] = str(odd)
        command += ["--db", str(tmp_path / "i.db")]
    elif where == "SESSIONDEX_DB":
        env["SESSIONDEX_DB"] = str(tmp_path / "ü.db")
        command += ["--config-dir", str(root)]
    else:
        (xdg / "sessiondex" / "config.toml").write_text(
            f'db = "{tmp_path}/idxü.db"\n', encoding="utf-8"
        )
        command += ["--config-dir", str(root)]
    # (the environment carries the path as UTF-8 bytes, as a shell would)
    result = subprocess.run([*command, "list"], env=env, capture_output=True, timeout=60)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.decode("ascii", "backslashreplace").splitlines()
    assert "is not ASCII" in line and "PYTHONUTF8=1" in line, line


def test_a_non_ascii_archive_dir_from_xdg_data_home_under_the_c_locale_is_one_line(
    tmp_path: Path,
) -> None:
    """Helper 98: ``archive`` with a non-ASCII ``XDG_DATA_HOME`` under ``LC_ALL=C
    PYTHONUTF8=0`` ended in a 46-line traceback after making directories."""
    import os
    import subprocess
    import sys

    root = tmp_path / "claude"
    (root / "projects").mkdir(parents=True)
    data = tmp_path / "data"
    data.mkdir()
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0"}
    env.pop("PYTHONIOENCODING", None)
    env["XDG_DATA_HOME"] = str(data / "é")
    command = [sys.executable, "-c", "from sessiondex.cli.main import main; main()"]
    command += ["--config-dir", str(root), "--db", str(tmp_path / "i.db"), "archive"]
    result = subprocess.run(command, env=env, capture_output=True, timeout=60)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.decode("ascii", "backslashreplace").splitlines()
    assert line.startswith("Error: Invalid value for XDG_DATA_HOME: ") and "not ASCII" in line
    assert list(data.iterdir()) == []
