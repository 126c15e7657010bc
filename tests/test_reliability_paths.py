"""Path safety: no ARG makes a command read, write or delete outside ``projects/``.

Every command that takes a session ARG is tried with traversal (``../``), absolute paths
outside the config dir, a NUL, a UUID with a trailing newline, names holding ``/`` and
``\\``, a symlink inside projects/ pointing out, and a real transcript-shaped ``.jsonl``
outside projects/. A sentinel directory outside must survive byte for byte (mtimes
too), the config tree too, and an audit of every path opened in-process (``open``,
``io.open``, ``os.open``) shows nothing outside the test's tmp tree except Python's own
files. Reading commands may read a ``.jsonl`` the user names explicitly (docs/resolution.md#transcript-path, as
``claude --resume <path>`` does); writing commands refuse anything not inside projects/.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from sessiondex.cli.main import cli
from sessiondex.cli.settings import config_file_path
from tests.builders import ConfigTree
from tests.test_reliability_truth import snapshot

CWD = "/home/dev/paths"
OUTSIDE_ID = "5e5e5e5e-0000-4000-8000-000000000001"
LINK_ID = "5e5e5e5e-0000-4000-8000-000000000002"

READING = ["resolve", "resume", "show", "export"]
WRITING = ["rename", "tag", "untag", "fork", "delete"]


def _args(command: str, arg: str, out: Path) -> list[str]:
    extra = {
        "resume": ["--dry-run"],
        "export": ["-o", str(out)],
        "rename": ["new name"],
        "tag": ["newtag"],
        "delete": ["--yes"],
    }.get(command, [])
    if command in ("rename", "tag"):
        return [command, arg, *extra, "--cwd", CWD]
    return [command, arg, *extra, "--cwd", CWD]


class PathWorld:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.tree = ConfigTree(base / "claude")
        self.db = base / "index.db"
        s = self.tree.session(cwd=CWD)
        s.user("an ordinary session")
        s.assistant("fine")
        s.meta("custom-title", customTitle="Ordinary")
        s.write(mtime=1_790_000_000)
        self.good = s.path
        self.project = s.path.parent
        # outside the config dir: a sentinel dir with a transcript-shaped file
        self.sentinel = base / "sentinel"
        self.sentinel.mkdir()
        self.outside = self.sentinel / f"{OUTSIDE_ID}.jsonl"
        self.outside.write_bytes(
            orjson.dumps(
                {
                    "type": "user",
                    "sessionId": OUTSIDE_ID,
                    "uuid": "u1",
                    "cwd": CWD,
                    "message": {"role": "user", "content": "outside words"},
                }
            )
            + b"\n"
        )
        (self.sentinel / OUTSIDE_ID / "subagents").mkdir(parents=True)
        (self.sentinel / OUTSIDE_ID / "subagents" / "agent-x.jsonl").write_bytes(b"{}\n")
        (self.sentinel / "keep.txt").write_bytes(b"do not touch\n")
        os.utime(self.outside, (1_700_000_000, 1_700_000_000))
        # inside projects/: a transcript that is a link out, and a linked project dir
        (self.project / f"{LINK_ID}.jsonl").symlink_to(self.outside)
        (self.project / LINK_ID).symlink_to(self.sentinel / OUTSIDE_ID, target_is_directory=True)
        (self.tree.root / "projects" / "-linked").symlink_to(
            self.sentinel, target_is_directory=True
        )
        self.out = base / "exports"
        self.out.mkdir()

    def hostile_args(self) -> list[str]:
        rel_outside = os.path.relpath(self.outside, self.project)
        return [
            "../",
            "..",
            "../../etc/passwd",
            "../../../../../../../../etc/passwd",
            "/etc/passwd",
            "/etc",
            "/",
            str(self.sentinel),
            str(self.sentinel / "keep.txt"),
            str(self.outside),
            rel_outside,
            f"./{rel_outside}",
            str(self.project / ".." / ".." / ".." / "sentinel" / f"{OUTSIDE_ID}.jsonl"),
            str(self.project / f"{LINK_ID}.jsonl"),
            str(self.tree.root / "projects" / "-linked" / f"{OUTSIDE_ID}.jsonl"),
            f"{self.good}\x00.jsonl",
            f"x\x00{self.outside}",
            f"{OUTSIDE_ID}\n",
            f"{self.good.stem}\n",
            f" {self.good.stem}",
            f"{self.good.stem}/../{OUTSIDE_ID}",
            "a/b",
            "..\\..\\etc\\passwd",
            "C:\\Windows\\win.ini",
            "name/with/slashes",
            "~/../../etc/passwd",
            "~root/.bashrc",
            "$HOME/x.jsonl",
            "%2e%2e%2fetc%2fpasswd",
            "-linked",
            OUTSIDE_ID,
            LINK_ID,
            "file:///etc/passwd",
            "\\\\server\\share\\x.jsonl",
        ]


class OpenAudit:
    """Every path opened in this process while active (realpath)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real_open, real_io_open, real_os_open = builtins.open, io.open, os.open

        def note(target: Any) -> None:
            if isinstance(target, int):
                return
            try:
                self.paths.append(os.path.realpath(os.fsdecode(target)))
            except (TypeError, ValueError):
                self.paths.append(repr(target))

        def audited_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            note(file)
            return real_open(file, *args, **kwargs)

        def audited_io_open(file: Any, *args: Any, **kwargs: Any) -> Any:
            note(file)
            return real_io_open(file, *args, **kwargs)

        def audited_os_open(path: Any, *args: Any, **kwargs: Any) -> Any:
            note(path)
            return real_os_open(path, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", audited_open)
        monkeypatch.setattr(io, "open", audited_io_open)
        monkeypatch.setattr(os, "open", audited_os_open)

    def take(self) -> list[str]:
        paths, self.paths = self.paths, []
        return paths


def _allowed_prefixes(base: Path) -> tuple[str, ...]:
    prefixes = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        str(Path(__file__).resolve().parents[1]),
        "/usr/",
        "/dev/",
        "/proc/",
        "/sys/",
        os.path.realpath(base),
        str(config_file_path()),  # the user's config file, read (if any) by every command
    }
    return tuple(os.path.realpath(p) for p in prefixes)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PathWorld:
    w = PathWorld(tmp_path)
    monkeypatch.chdir(w.project)  # relative ARGs start inside projects/<key>/
    result = CliRunner().invoke(cli, ["--config-dir", str(w.tree.root), "--db", str(w.db), "index"])
    assert result.exit_code == 0, result.output
    return w


def _run(world: PathWorld, args: list[str]) -> Result:
    return CliRunner().invoke(
        cli, ["--config-dir", str(world.tree.root), "--db", str(world.db), *args]
    )


@pytest.mark.parametrize("command", READING + WRITING)
def test_no_arg_reaches_outside_projects(
    world: PathWorld, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sentinel_before = snapshot(world.sentinel)
    tree_before = snapshot(world.tree.root)
    etc_passwd = os.stat("/etc/passwd")
    allowed = _allowed_prefixes(world.base)
    outside_real = os.path.realpath(world.outside)
    audit = OpenAudit(monkeypatch)
    tried = 0
    for n, arg in enumerate(world.hostile_args()):
        out = world.out / f"{command}-{n}.md"
        audit.take()  # drop this test's own reads (the snapshots)
        result = _run(world, _args(command, arg, out))
        opened = audit.take()
        tried += 1
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            arg,
            repr(result.exception),
        )
        assert "Traceback" not in result.output
        named_outside = (
            os.path.realpath(os.path.abspath(os.path.expanduser(arg))) == outside_real
            if "\x00" not in arg
            else False
        )
        if command in WRITING:
            assert result.exit_code in (1, 2), (arg, result.output)
        else:
            assert result.exit_code in (0, 1, 2), (arg, result.output)
            # only a .jsonl the user named may be read (docs/resolution.md#transcript-path), nothing else outside
            assert result.exit_code != 0 or named_outside, (arg, result.output)
        assert os.path.realpath("/etc/passwd") not in opened, arg
        strays = [p for p in opened if not p.startswith(allowed)]
        assert strays == [], (arg, strays)
        in_sentinel = [p for p in opened if p.startswith(os.path.realpath(world.sentinel))]
        if command in WRITING or not named_outside:
            assert in_sentinel == [], (arg, in_sentinel)
        else:
            # the named transcript and its own <id>/subagents/, nothing else there
            own = outside_real[: -len(".jsonl")] + os.sep
            assert all(p == outside_real or p.startswith(own) for p in in_sentinel), (
                arg,
                in_sentinel,
            )
        assert snapshot(world.sentinel) == sentinel_before, arg
        assert snapshot(world.tree.root) == tree_before, arg
    assert os.stat("/etc/passwd").st_mtime_ns == etc_passwd.st_mtime_ns
    assert tried >= 30


@pytest.mark.parametrize("command", WRITING)
def test_writing_commands_still_work_on_a_real_transcript(world: PathWorld, command: str) -> None:
    """The refusals above are not because the commands never work."""
    result = _run(world, _args(command, str(world.good), world.out / "x.md"))
    assert result.exit_code == 0, (result.output, result.exception)
