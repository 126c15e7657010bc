"""Which config dirs are indexed, and where they came from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessiondex.transcripts.config import config_dirs, find_config_dirs

SEP = os.pathsep


@pytest.mark.parametrize(
    ("explicit", "env", "expected", "source"),
    [
        (["/a", "/b"], {"CLAUDE_CONFIG_DIR": "/env"}, ["/a", "/b"], "--config-dir"),
        (["/a", "/a"], {}, ["/a"], "--config-dir"),
        ([], {"CLAUDE_CONFIG_DIR": "/env"}, ["/env"], "CLAUDE_CONFIG_DIR"),
        # One path, as Claude Code reads it: a comma is part of the name.
        ([], {"CLAUDE_CONFIG_DIR": "/data/claude,old"}, ["/data/claude,old"], "CLAUDE_CONFIG_DIR"),
        ([], {"CLAUDE_CONFIG_DIR": "/one, /two,,"}, ["/one, /two,,"], "CLAUDE_CONFIG_DIR"),
        # Several dirs: SESSIONDEX_CONFIG_DIRS, os.pathsep-separated, empties dropped.
        (
            [],
            {"SESSIONDEX_CONFIG_DIRS": f"/m1{SEP}/m2,x{SEP}{SEP}/m1"},
            ["/m1", "/m2,x"],
            "SESSIONDEX_CONFIG_DIRS",
        ),
        # Claude Code's own variable first: the SDK-style API answers for the SDK's dir.
        (
            [],
            {"CLAUDE_CONFIG_DIR": "/env", "SESSIONDEX_CONFIG_DIRS": f"/m1{SEP}/m2"},
            ["/env"],
            "CLAUDE_CONFIG_DIR",
        ),
        (["/a"], {"SESSIONDEX_CONFIG_DIRS": "/m1"}, ["/a"], "--config-dir"),
        ([], {"CLAUDE_CONFIG_DIR": "", "HOME": "/home/u"}, ["/home/u/.claude"], "default"),
        ([], {"SESSIONDEX_CONFIG_DIRS": SEP, "HOME": "/home/u"}, ["/home/u/.claude"], "default"),
        ([], {"HOME": "/home/u"}, ["/home/u/.claude"], "default"),
        # NFC, as Claude Code normalizes the value.
        ([], {"CLAUDE_CONFIG_DIR": "/cafe\u0301"}, ["/caf\u00e9"], "CLAUDE_CONFIG_DIR"),
        # A folder named with --config-dir is the folder named: NFD and NFC are two.
        (["/cafe\u0301"], {}, ["/cafe\u0301"], "--config-dir"),
        ([], {"SESSIONDEX_CONFIG_DIRS": "/cafe\u0301"}, ["/cafe\u0301"], "SESSIONDEX_CONFIG_DIRS"),
    ],
)
def test_config_dir_precedence(
    explicit: list[str], env: dict[str, str], expected: list[str], source: str
) -> None:
    assert config_dirs(explicit, env) == [Path(p) for p in expected]
    assert find_config_dirs(explicit, env).source == source


def test_tilde_is_expanded_for_the_option_not_for_claude_config_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code does not expand ``~`` in CLAUDE_CONFIG_DIR (a relative path resolves
    against the cwd), so neither do we; ``--config-dir=~/x`` is expanded as a courtesy."""
    monkeypatch.chdir(tmp_path)
    home = os.path.expanduser("~")
    assert config_dirs(["~/c"], {}) == [Path(home) / "c"]
    assert config_dirs([], {"CLAUDE_CONFIG_DIR": "~/c"}) == [tmp_path / "~" / "c"]


@pytest.mark.parametrize(
    "spellings",
    [
        ("real", "link"),
        ("link", "real"),
        ("real", "real/../real"),
        ("link", "link/."),
    ],
)
def test_one_directory_by_two_spellings_is_one_config_dir(
    tmp_path: Path, spellings: tuple[str, str]
) -> None:
    """Indexed twice, a symlinked config dir lists every session twice and makes each ID
    ambiguous; the first spelling is kept (it is what resume commands name)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    given = [str(tmp_path / s) for s in spellings]
    assert config_dirs(given, {}) == [Path(os.path.abspath(given[0]))]


@pytest.mark.parametrize("link", ["both to a disk", "one to the other's"])
def test_two_config_dirs_whose_projects_is_one_dir_are_one(tmp_path: Path, link: str) -> None:
    """``A/projects`` and ``B/projects`` links to one place hold the same transcripts:
    indexed twice, every session was listed twice (and the watcher watched the place
    twice, so re-pointing one link stopped the other's watch)."""
    for name in ("A", "B"):
        (tmp_path / name).mkdir()
    (tmp_path / "disk" / "projects").mkdir(parents=True)
    if link == "both to a disk":
        (tmp_path / "A" / "projects").symlink_to(tmp_path / "disk" / "projects")
    else:
        (tmp_path / "A" / "projects").mkdir()
    (tmp_path / "B" / "projects").symlink_to(
        tmp_path / ("disk" if link == "both to a disk" else "A") / "projects"
    )
    given = [str(tmp_path / "A"), str(tmp_path / "B")]
    assert config_dirs(given, {}) == [Path(given[0])]


def test_a_symlink_to_another_directory_is_its_own_config_dir(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    (tmp_path / "to-b").symlink_to("b")
    given = [str(tmp_path / "a"), str(tmp_path / "to-b")]
    assert config_dirs(given, {}) == [Path(p) for p in given]


@pytest.mark.parametrize("value", ["relcache", "./x", "~/.cache", ""])
def test_a_relative_xdg_dir_is_ignored_as_the_xdg_spec_says(tmp_path: Path, value: str) -> None:
    """The XDG Base Directory spec: "all paths set in these environment variables must
    be absolute"; a relative one is invalid and ignored. `XDG_CACHE_HOME=relcache` put
    the index at `./relcache/sessiondex/index.db`, under whichever directory the command
    ran in (a new, empty index in each), and so the config file, the archive dir and the
    daily job's systemd unit. Each falls back to its place under the home directory."""
    from sessiondex.actions.schedule import _systemd_dir
    from sessiondex.cli.settings import config_file_path
    from sessiondex.indexer.db import default_db_path
    from sessiondex.transcripts.archive import default_archive_dir

    home = tmp_path / "home"
    env = {
        "HOME": str(home),
        "XDG_CACHE_HOME": value,
        "XDG_CONFIG_HOME": value,
        "XDG_DATA_HOME": value,
    }
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = str(home)  # what expanduser reads
    try:
        assert default_db_path(env) == home / ".cache" / "sessiondex" / "index.db"
        assert config_file_path(env) == home / ".config" / "sessiondex" / "config.toml"
        assert default_archive_dir(env) == home / ".local" / "share" / "sessiondex" / "archive"
        assert _systemd_dir(env, home) == home / ".config" / "systemd" / "user"
    finally:
        if old_home is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = old_home
    absolute = {k: str(tmp_path / "x") for k in env if k.startswith("XDG_")}
    assert default_db_path(absolute) == tmp_path / "x" / "sessiondex" / "index.db"
