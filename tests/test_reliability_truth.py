"""Truth is never touched: every command over the fixture tree leaves the transcripts alone.

The transcripts are the source of truth (docs/transcripts.md#source-of-truth); the index is derived.
Every reading command of ``cli.main.COMMANDS`` runs over a copy of ``fixtures/claude``
and afterwards each file under the config dir has the same bytes and the same mtime.
The mutations then change exactly what they target and nothing else: one appended line
(rename, tag, untag), one new file (fork), the session's files removed (delete), nothing
at all (cleanup --apply when nothing is expired); and rename and fork the session's
``<id>/custom-title.json``, Claude Code's mirror of its name.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sessiondex.cli.main import COMMANDS, cli
from tests.builders import copy_fixtures

SHOP = "/home/dev/shop"
AUTH_ID = "4045e6f8-686a-5d64-9f2b-e0830c6ab007"  # "Auth refactor", tag "auth", PR #12
AUTH_PATH = f"projects/-home-dev-shop/{AUTH_ID}.jsonl"
AUTH_SIDECAR = f"projects/-home-dev-shop/{AUTH_ID}/custom-title.json"
WITH_SUBAGENTS = "8c136a88-d56e-5503-90fb-65c938b104f6"  # has an <id>/subagents/ folder

Snapshot = dict[str, tuple[bytes, int]]


def snapshot(root: Path) -> Snapshot:
    """Every file under ``root`` (relative path → bytes, mtime_ns); directories as markers."""
    out: Snapshot = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(dirpath, name), root) + "/"] = (b"", 0)
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = (fh.read(), os.stat(path).st_mtime_ns)
    return out


def module_exists(command: str) -> bool:
    return importlib.util.find_spec(COMMANDS[command].split(":")[0]) is not None


def skip_unless_built(command: str) -> None:
    if not module_exists(command):
        pytest.skip(f"{COMMANDS[command]} is not built yet")


class Fixture:
    def __init__(self, base: Path) -> None:
        self.config = copy_fixtures(base)
        self.db = base / "index.db"
        self.out = base / "out"
        self.out.mkdir()
        self.runner = CliRunner()

    def run(self, *args: str) -> Result:
        return self.runner.invoke(
            cli,
            ["--config-dir", str(self.config), "--db", str(self.db), *args],
            catch_exceptions=True,
        )


# Each reading command with the arguments that make it read the most (every format,
# subagents and tools, an ID, a name, a path, a prefix). The exit codes are part of the
# check: a command that failed early would not prove it left the files alone.
READ_RUNS: list[tuple[str, list[str], tuple[int, ...]]] = [
    ("index", ["index"], (0,)),
    ("index", ["index", "--rebuild", "--json"], (0,)),
    ("stats", ["stats"], (0,)),
    ("stats", ["stats", "--json"], (0,)),
    *[
        ("list", ["list", "--scope", "all", "--all-kinds", "--format", f], (0,))
        for f in ("table", "json", "jsonl", "csv")
    ],
    ("list", ["list", "--cwd", SHOP], (0,)),
    *[
        ("search", ["search", "auth", "--scope", "all", "--format", f], (0,))
        for f in ("table", "json", "jsonl", "csv")
    ],
    ("search", ["search", "https://github.com/acme/shop/pull/12", "--scope", "all"], (0,)),
    ("search", ["search", "--raw", "auth OR login", "--scope", "all", "--json"], (0,)),
    ("from-pr", ["from-pr", "12", "--cwd", SHOP, "--json"], (0,)),
    ("from-pr", ["from-pr", "--scope", "all"], (0,)),
    ("resolve", ["resolve", AUTH_ID, "--cwd", SHOP, "--json"], (0,)),
    ("resolve", ["resolve", "Auth refactor", "--cwd", SHOP], (0,)),
    ("resolve", ["resolve", AUTH_ID[:8], "--cwd", SHOP], (0,)),
    ("resolve", ["resolve", "{config}/" + AUTH_PATH], (0,)),
    ("continue", ["continue", "--cwd", SHOP, "--json"], (0,)),
    ("continue", ["continue", "--cwd", SHOP, "--print-mode"], (0,)),
    ("resume", ["resume", AUTH_ID, "--cwd", SHOP, "--dry-run"], (0,)),
    ("pick", ["pick", "--cwd", SHOP], (2,)),  # no terminal here: refuses in one line
    *[
        (
            "show",
            ["show", WITH_SUBAGENTS, "--cwd", SHOP, "--tools", "--subagents", "--format", f],
            (0,),
        )
        for f in ("text", "md", "json")
    ],
    ("show", ["show", "{config}/" + AUTH_PATH], (0,)),
    *[
        (
            "export",
            [
                "export",
                WITH_SUBAGENTS,
                "--cwd",
                SHOP,
                "--tools",
                "--subagents",
                "-o",
                "{out}/export." + ext,
            ],
            (0,),
        )
        for ext in ("md", "html", "json")
    ],
    ("cleanup", ["cleanup"], (0,)),
    ("cleanup", ["cleanup", "--days", "1", "--json"], (0,)),
    ("show", ["show", AUTH_ID, "--cwd", SHOP, "--uuids"], (0,)),
    ("config", ["config"], (0,)),
    ("config", ["config", "--json"], (0,)),
    ("completion", ["completion", "zsh"], (0,)),
]


def _fill(args: list[str], fx: Fixture) -> list[str]:
    return [a.format(config=fx.config, out=fx.out) for a in args]


def test_every_command_is_covered() -> None:
    """A command added to the CLI must be added here too (reading or mutation list)."""
    # mcp: tests/test_mcp.py calls every read tool and checks the same snapshot; push and
    # store (the PostgreSQL team store): tests/test_store_push.py
    # ::test_push_leaves_the_transcripts_alone, against a real server
    covered = {c for c, _, _ in READ_RUNS} | set(MUTATIONS)
    covered |= {"watch", "serve", "mcp", "push", "store"}
    assert set(COMMANDS) <= covered, set(COMMANDS) - covered


def test_reading_commands_never_touch_transcripts(tmp_path: Path) -> None:
    fx = Fixture(tmp_path)
    before = snapshot(fx.config)
    assert any(k.endswith(".jsonl") for k in before)
    ran = 0
    for command, args, codes in READ_RUNS:
        if not module_exists(command):
            continue  # reported by test_every_command_is_covered's sibling below
        result = fx.run(*_fill(args, fx))
        assert result.exit_code in codes, (args, result.output, result.exception)
        assert not isinstance(result.exception, Exception) or isinstance(
            result.exception, SystemExit
        ), (args, result.exception)
        assert "Traceback" not in result.output, args
        after = snapshot(fx.config)
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        assert changed == [], (args, changed)
        ran += 1
    assert ran >= 30
    # the export files were really written, outside the config dir
    assert sorted(p.name for p in fx.out.iterdir()) == ["export.html", "export.json", "export.md"]


@pytest.mark.parametrize("command", sorted({c for c, _, _ in READ_RUNS}))
def test_reading_command_exists(command: str) -> None:
    """One visible skip per reading command whose module is not built yet."""
    skip_unless_built(command)


def test_watch_never_touches_transcripts(tmp_path: Path) -> None:
    """``watch`` catches up, then is stopped; the tree is unchanged (touching a file while
    it runs makes it read that file again)."""
    skip_unless_built("watch")
    fx = Fixture(tmp_path)
    before = snapshot(fx.config)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from sessiondex.cli.main import main; main()",
            "--config-dir",
            str(fx.config),
            "--db",
            str(fx.db),
            "watch",
            "-v",
            "--debounce",
            "20",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).parents[1],
    )
    try:
        deadline = time.monotonic() + 30
        from sessiondex.indexer.lock import watcher_alive

        while not watcher_alive(fx.db):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "watch did not start"
            time.sleep(0.05)
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert b"Traceback" not in err
    assert snapshot(fx.config) == before


def test_serve_never_touches_transcripts(tmp_path: Path) -> None:
    """``serve`` refreshes, answers every page (each session's too, with tools and
    subagents), refreshes again on requests, and is stopped; the tree is unchanged."""
    skip_unless_built("serve")
    pytest.importorskip("datasette", reason="the web extra is not installed")
    import re
    import urllib.request

    fx = Fixture(tmp_path)
    before = snapshot(fx.config)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from sessiondex.cli.main import main; main()",
            "--config-dir",
            str(fx.config),
            "--db",
            str(fx.db),
            "serve",
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "Serving http://127.0.0.1:PORT/ …", or "" if it died
        assert line.startswith("Serving http://127.0.0.1:"), (line, proc.stderr)
        url = line.split()[1]

        def get(path: str) -> str:
            with urllib.request.urlopen(url + path.lstrip("/"), timeout=30) as response:
                assert response.status == 200, path
                return str(response.read().decode())

        home = get("/")
        ids = sorted(set(re.findall(r'href="/session/([0-9a-f-]{36})', home)))
        assert AUTH_ID in ids and WITH_SUBAGENTS in ids
        for session_id in ids:
            get(f"/session/{session_id}?q=auth")
        for path in (
            "/search?q=auth",
            "/search?q=https%3A%2F%2Fgithub.com%2Facme%2Fshop%2Fpull%2F12",
            "/sessiondex/sessions",
            "/sessiondex/messages",
            "/sessiondex/busiest_projects",
        ):
            get(path)
        time.sleep(1.1)  # past the refresh throttle: the next request refreshes
        get("/")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert snapshot(fx.config) == before


# ------------------------------------------------------------------------------ mutations
def _appended_one_line(old: bytes, new: bytes) -> bytes:
    assert new.startswith(old), "the old bytes must be kept as they were"
    extra = new[len(old) :]
    assert extra.endswith(b"\n") and extra.count(b"\n") == 1, extra
    return extra


def _rename(fx: Fixture) -> list[str]:
    return ["rename", AUTH_ID, "A new name", "--cwd", SHOP]


def _tag(fx: Fixture) -> list[str]:
    return ["tag", AUTH_ID, "reviewed", "--cwd", SHOP]


def _untag(fx: Fixture) -> list[str]:
    return ["untag", AUTH_ID, "--cwd", SHOP]


APPENDING = {
    "rename": (_rename, b'"customTitle":"A new name"'),
    "tag": (_tag, b'"tag":"reviewed"'),
    "untag": (_untag, b'"tag":""'),
}
MUTATIONS = [*APPENDING, "fork", "delete", "cleanup", "archive", "restore"]


@pytest.mark.parametrize("command", sorted(APPENDING))
def test_appending_mutation_changes_only_its_target_by_one_line(
    tmp_path: Path, command: str
) -> None:
    skip_unless_built(command)
    fx = Fixture(tmp_path)
    assert fx.run("index").exit_code == 0
    before = snapshot(fx.config)
    make_args, marker = APPENDING[command]
    result = fx.run(*make_args(fx))
    assert result.exit_code == 0, (result.output, result.exception)
    after = snapshot(fx.config)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if command == "rename":  # and Claude Code's mirror of the name, in a new <id>/
        assert changed == [AUTH_PATH, AUTH_SIDECAR.rsplit("/", 1)[0] + "/", AUTH_SIDECAR]
        assert after[AUTH_SIDECAR][0] == b'{"customTitle":"A new name"}'
    else:
        assert changed == [AUTH_PATH]
    extra = _appended_one_line(before[AUTH_PATH][0], after[AUTH_PATH][0])
    assert marker in extra


def test_fork_adds_one_file_and_changes_nothing(tmp_path: Path) -> None:
    skip_unless_built("fork")
    fx = Fixture(tmp_path)
    before = snapshot(fx.config)
    result = fx.run("fork", WITH_SUBAGENTS, "--cwd", SHOP)
    assert result.exit_code == 0, (result.output, result.exception)
    new_id = result.output.strip().splitlines()[-1]
    after = snapshot(fx.config)
    assert {k: v for k, v in after.items() if k in before} == before
    added = sorted(set(after) - set(before))
    fork = f"projects/-home-dev-shop/{new_id}"
    assert added == [f"{fork}.jsonl", f"{fork}/", f"{fork}/custom-title.json"]
    assert after[added[0]][0].count(b"\n") >= 2


def test_delete_removes_only_its_session(tmp_path: Path) -> None:
    skip_unless_built("delete")
    fx = Fixture(tmp_path)
    before = snapshot(fx.config)
    result = fx.run("delete", WITH_SUBAGENTS, "--yes", "--cwd", SHOP)
    assert result.exit_code == 0, (result.output, result.exception)
    after = snapshot(fx.config)
    main = f"projects/-home-dev-shop/{WITH_SUBAGENTS}.jsonl"
    folder = f"projects/-home-dev-shop/{WITH_SUBAGENTS}/"
    removed = sorted(set(before) - set(after))
    assert main in removed
    assert all(k == main or k.startswith(folder) for k in removed), removed
    assert any(k.startswith(folder) and k.endswith(".jsonl") for k in removed)
    assert set(after) <= set(before)
    assert {k: before[k] for k in after} == after


def test_cleanup_apply_with_nothing_expired_changes_nothing(tmp_path: Path) -> None:
    skip_unless_built("cleanup")
    fx = Fixture(tmp_path)
    before = snapshot(fx.config)
    result = fx.run("cleanup", "--apply", "--days", "36500", "--json")
    assert result.exit_code == 0, (result.output, result.exception)
    assert snapshot(fx.config) == before


def test_archive_writes_nothing_and_restore_puts_back_exactly_its_session(
    tmp_path: Path,
) -> None:
    """``archive`` (every session, with a window of a century) leaves the tree as it was;
    after a ``delete``, ``restore`` brings back exactly that session's files, bytes and
    mtimes."""
    skip_unless_built("restore")
    fx = Fixture(tmp_path)
    before = snapshot(fx.config)
    for args in (["--dry-run"], ["--json"]):
        result = fx.run("archive", "--expiring-within", "5200w", *args)
        assert result.exit_code == 0, (result.output, result.exception)
        assert snapshot(fx.config) == before
    assert fx.run("delete", WITH_SUBAGENTS, "--yes", "--cwd", SHOP).exit_code == 0
    assert snapshot(fx.config) != before
    result = fx.run("restore", WITH_SUBAGENTS)
    assert result.exit_code == 0, (result.output, result.exception)
    assert snapshot(fx.config) == before
