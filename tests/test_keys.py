"""project_key and session-ID rules (docs/project-keys.md#test-vectors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.transcripts.keys import (
    is_session_id,
    project_dir_name_override,
    project_key,
    project_keys_for_directory,
    sanitize_path,
    validate_session_id,
)
from tests.builders import ConfigTree, one_session


@pytest.mark.parametrize(
    ("path", "suffix"),
    [
        ("/" + "a" * 250, "feo44x"),
        ("/" + "é" * 250, "5hvcwf"),
        ("/home/x/" + "b" * 300, "ii2o2g"),
    ],
)
def test_long_paths_get_the_cli_hash_suffix(path: str, suffix: str) -> None:
    key = project_key(path)
    assert key == sanitize_path(path)[:200] + "-" + suffix
    assert len(key) == 201 + len(suffix)


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/home/user/my_project.v2", "-home-user-my-project-v2"),
        ("/tmp/😀x", "-tmp---x"),  # UTF-16: an emoji is two code units, two dashes
        ("/tmp/ünï", "-tmp--n-"),
        ("/a/b-c", "-a-b-c"),
        ("/a/b/c", "-a-b-c"),  # lossy: never reverse a key
        ("/" + "x" * 199, "-" + "x" * 199),  # exactly 200: no hash
    ],
)
def test_project_key_table(path: str, key: str) -> None:
    assert project_key(path) == key


def test_project_key_uses_realpath(tmp_path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert project_key(link) == project_key(real)


def test_project_key_is_nfc(tmp_path) -> None:
    assert project_key("/tmp/cafe\u0301") == project_key("/tmp/caf\u00e9")


UUID = "0f8b7c1e-2d3a-4b5c-8d9e-0a1b2c3d4e5f"


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        (UUID, True),
        (UUID.upper(), True),
        ("00000000-0000-0000-0000-000000000000", True),
        (UUID + "\n", False),  # the SDK's `$` accepts this; we must not
        (" " + UUID, False),
        ("{" + UUID + "}", False),
        ("../" + UUID, False),
        (UUID[:-1], False),
        ("", False),
        (None, False),
        (UUID.replace("-", ""), False),
        (UUID[:-1] + "\x00", False),
    ],
)
def test_session_id_validation(text: object, valid: bool) -> None:
    assert is_session_id(text) is valid
    if valid:
        assert validate_session_id(text) == text
    else:
        with pytest.raises(ValueError):
            validate_session_id(text)


def test_a_session_id_digit_is_an_ascii_hex_digit_of_either_case() -> None:
    """The pattern spells both cases out (no IGNORECASE, which made discovery's test of
    every name twice as slow): no other character may pass for a digit, nor either case
    be refused. Every character of the Basic Multilingual Plane, in one digit's place."""
    hexdigits = set("0123456789abcdefABCDEF")
    accepted = {chr(c) for c in range(0x10000) if is_session_id(chr(c) + UUID[1:])}
    assert accepted == hexdigits


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_PROJECT_DIR_NAME": "my_proj-1"}, "my_proj-1"),
        ({"CLAUDE_CODE_PROJECT_DIR_NAME": "my_proj"}, None),  # needs CLAUDE_CONFIG_DIR
        ({"CLAUDE_CONFIG_DIR": "", "CLAUDE_CODE_PROJECT_DIR_NAME": "p"}, None),
        ({"CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_PROJECT_DIR_NAME": "a/b"}, None),
        ({"CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_PROJECT_DIR_NAME": "x" * 65}, None),
        ({"CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_PROJECT_DIR_NAME": "x" * 64}, "x" * 64),
        ({"CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_PROJECT_DIR_NAME": "CON"}, None),
        ({"CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_PROJECT_DIR_NAME": "lpt9"}, None),
        ({"CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_PROJECT_DIR_NAME": "com10"}, "com10"),
        ({"CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_PROJECT_DIR_NAME": "é"}, None),
    ],
)
def test_project_dir_name_override(env: dict[str, str], expected: str | None) -> None:
    assert project_dir_name_override(env) == expected
    keys = project_keys_for_directory("/home/u/app", env)
    assert keys[-1] == "-home-u-app"
    assert keys[0] == (expected or "-home-u-app")


@pytest.mark.parametrize(
    ("override", "honoured"),
    [("shared_proj", True), ("a/b", False), ("CON", False), ("x" * 65, False)],
)
def test_the_override_dir_answers_list_and_continue(
    tmp_path: Path, override: str, honoured: bool
) -> None:
    """With CLAUDE_CONFIG_DIR and a valid CLAUDE_CODE_PROJECT_DIR_NAME, Claude Code keeps
    the cwd's sessions in that dir: list and continue from the cwd must find them there
    (and an invalid value, which Claude Code ignores, must not move anything)."""
    tree = ConfigTree(tmp_path / "claude")
    own = tree.session(cwd="/w/app")
    own.user("in the derived dir")
    own.write(mtime=1_800_000_000)
    named = tree.session(cwd="/w/app", project_key="shared_proj")
    named.user("in the named dir")
    named.write(mtime=1_800_000_100)  # newer: what continue opens when honoured
    env = {"CLAUDE_CONFIG_DIR": str(tree.root), "CLAUDE_CODE_PROJECT_DIR_NAME": override}
    base = ["--db", str(tmp_path / "i.db")]
    listed = CliRunner().invoke(cli, [*base, "list", "--cwd", "/w/app", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    ids = {row["session_id"] for row in json.loads(listed.stdout)}
    expected = {own.session_id, named.session_id} if honoured else {own.session_id}
    assert ids == expected
    result = CliRunner().invoke(cli, [*base, "continue", "--cwd", "/w/app", "--json"], env=env)
    assert result.exit_code == 0, result.output
    opened = one_session(result.stdout)["session_id"]
    assert opened == (named.session_id if honoured else own.session_id)
