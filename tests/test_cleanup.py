"""cleanup: Claude Code's retention predicted exactly, and a cleanup that loses nothing.

Library tests use one fixed ``NOW``; CLI tests (real clock) put every mtime days away
from any boundary, so nothing depends on how long a test takes.
"""

from __future__ import annotations

import json
import os
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from sessiondex.actions import cleanup as act
from sessiondex.cli.main import cli
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.query import cleanup as cl
from sessiondex.transcripts import retention as rules
from tests.builders import ConfigTree, one_session
from tests.helpers_index import files_opened

NOW = 1_800_000_000.0
DAY = 86400


# --------------------------------------------------------------------------- helpers


def _settings(path: Path, content: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(json.dumps(content), encoding="utf-8")


def _session(
    tree: ConfigTree,
    text: str,
    mtime: float,
    *,
    cwd: str = "/work/repo",
    entrypoint: str = "cli",
    tag: str | None = None,
    folder: bool = False,
) -> Any:
    s = tree.session(cwd=cwd, entrypoint=entrypoint)
    s.user(text)
    s.assistant(f"answer about {text}")
    if tag is not None:
        s.meta("tag", tag=tag, sessionId=s.session_id)
    if folder:
        turn = s.assistant("delegating", tool_uses=[("Task", {"prompt": "sub"})])
        sub = s.subagent(agent_id="a1b2c3", tool_use_id=turn.tool_use_ids[0])
        sub.user(f"subagent work on {text}")
        sub.assistant("done")
        results = s.project_dir / s.session_id / "tool-results" / "r1.txt"
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_bytes(b"big tool output\n")
        os.utime(results, (mtime, mtime))
    s.write(mtime=mtime)
    return s


def _snapshot(base: Path) -> dict[str, bytes | str | None]:
    """Every path under ``base`` (links not followed): file bytes, link target, or None."""
    out: dict[str, bytes | str | None] = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, base)
            if os.path.islink(path):
                out[rel] = "->" + os.readlink(path)
            elif os.path.isdir(path):
                out[rel] = None
            else:
                out[rel] = Path(path).read_bytes()
    return out


def _run(args: list[str], root: Path, db: Path, env: dict[str, str] | None = None) -> Any:
    runner = CliRunner()
    return runner.invoke(
        cli,
        ["--config-dir", str(root), "--db", str(db), *args],
        env={"SESSIONDEX_MANAGED_SETTINGS": str(root / "no-managed.json"), **(env or {})},
    )


def _stdout_json(result: Any) -> Any:
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


# --------------------------------------------------------------------------- settings

ABSENT = object()
BAD_JSON = b'{"cleanupPeriodDays": 7,'

# (managed, local, project, user) → (days or None when the sweep is skipped,
#                                    the kind that set it, or the kind whose file is bad)
PRECEDENCE = [
    ((ABSENT, ABSENT, ABSENT, ABSENT), 30, "default"),
    ((ABSENT, ABSENT, ABSENT, {"cleanupPeriodDays": 10}), 10, "user"),
    ((ABSENT, ABSENT, {"cleanupPeriodDays": 20}, {"cleanupPeriodDays": 10}), 20, "project"),
    (
        (ABSENT, {"cleanupPeriodDays": 5}, {"cleanupPeriodDays": 20}, {"cleanupPeriodDays": 10}),
        5,
        "local",
    ),
    (
        ({"cleanupPeriodDays": 7}, {"cleanupPeriodDays": 5}, ABSENT, {"cleanupPeriodDays": 10}),
        7,
        "managed",
    ),
    (({"model": "x"}, {"other": 1}, ABSENT, {"cleanupPeriodDays": 12}), 12, "user"),
    ((ABSENT, {"cleanupPeriodDays": 3}, {"model": "x"}, ABSENT), 3, "local"),
    ((ABSENT, ABSENT, ABSENT, {"model": "x"}), 30, "default"),
    ((ABSENT, ABSENT, ABSENT, b""), 30, "default"),
    ((ABSENT, ABSENT, ABSENT, {"cleanupPeriodDays": 0}), None, "user"),
    ((ABSENT, ABSENT, ABSENT, {"cleanupPeriodDays": -5}), None, "user"),
    ((ABSENT, ABSENT, ABSENT, {"cleanupPeriodDays": "30"}), None, "user"),
    ((ABSENT, ABSENT, ABSENT, {"cleanupPeriodDays": 1.5}), None, "user"),
    # Claude Code reads settings in JavaScript, where 30.0 and 3e1 are the integer 30
    ((ABSENT, ABSENT, ABSENT, {"cleanupPeriodDays": 30.0}), 30, "user"),
    ((ABSENT, ABSENT, ABSENT, b'{"cleanupPeriodDays": 3e1}'), 30, "user"),
    ((ABSENT, ABSENT, ABSENT, {"cleanupPeriodDays": -0.0}), None, "user"),
    ((ABSENT, ABSENT, ABSENT, b'{"cleanupPeriodDays": 1e400}'), None, "user"),
    ((ABSENT, ABSENT, ABSENT, {"cleanupPeriodDays": True}), None, "user"),
    ((ABSENT, ABSENT, ABSENT, {"cleanupPeriodDays": None}), None, "user"),
    ((ABSENT, ABSENT, ABSENT, BAD_JSON), None, "user"),
    ((ABSENT, ABSENT, BAD_JSON, {"cleanupPeriodDays": 10}), None, "project"),
    ((ABSENT, {"cleanupPeriodDays": 5}, ABSENT, BAD_JSON), None, "user"),
    (({"cleanupPeriodDays": 0}, {"cleanupPeriodDays": 5}, ABSENT, ABSENT), None, "managed"),
    ((BAD_JSON, ABSENT, ABSENT, {"cleanupPeriodDays": 10}), None, "managed"),
    # a valid higher file does not rescue an invalid lower one: Claude Code's validation
    # fails as a whole and the sweep is skipped
    ((ABSENT, {"cleanupPeriodDays": 5}, ABSENT, {"cleanupPeriodDays": "x"}), None, "user"),
]


@pytest.mark.parametrize(("files", "days", "kind"), PRECEDENCE)
def test_settings_precedence(
    tmp_path: Path, files: tuple[Any, ...], days: int | None, kind: str
) -> None:
    root = tmp_path / "claude"
    cwd = tmp_path / "repo"
    cwd.mkdir()
    paths = {
        "managed": tmp_path / "etc" / "managed-settings.json",
        "local": cwd / ".claude" / "settings.local.json",
        "project": cwd / ".claude" / "settings.json",
        "user": root / "settings.json",
    }
    for (_, path), content in zip(paths.items(), files):
        if content is not ABSENT:
            _settings(path, content)
    retention = rules.read_retention(root, str(cwd), paths["managed"])
    assert retention.days == days
    if days is None:
        assert not retention.sweep_enabled
        assert retention.problems[0]["file"] == str(paths[kind])
        assert retention.source == str(paths[kind])
    else:
        assert retention.source_kind == kind
        assert retention.source == ("default" if kind == "default" else str(paths[kind]))
        assert retention.problems == []


def test_managed_path_per_platform() -> None:
    assert rules.default_managed_path("linux", {}) == Path("/etc/claude-code/managed-settings.json")
    assert rules.default_managed_path("darwin", {}) == Path(
        "/Library/Application Support/ClaudeCode/managed-settings.json"
    )
    assert rules.default_managed_path("linux", {rules.MANAGED_ENV: "/x.json"}) == Path("/x.json")


# --------------------------------------------------------------------------- the plan


@pytest.fixture()
def world(tmp_path: Path) -> dict[str, Any]:
    """A config dir with sessions on both sides of a 30-day cutoff at NOW."""
    tree = ConfigTree(tmp_path / "claude")
    cutoff = NOW - 30 * DAY
    s = {
        "old": _session(tree, "old parser work", cutoff - 10 * DAY, folder=True),
        "older": _session(tree, "ancient css", cutoff - 200 * DAY, cwd="/work/other"),
        "edge_in": _session(tree, "just expired", cutoff - 1),
        "edge_out": _session(tree, "just kept", cutoff + 1),
        "young": _session(tree, "fresh work", NOW - 2 * DAY),
        "soon": _session(tree, "expires soon", cutoff + 2 * DAY),
        "desktop": _session(tree, "desktop chat", cutoff - 5 * DAY, entrypoint="claude-desktop"),
        "desktop_3p": _session(
            tree, "third-party desktop chat", cutoff - 6 * DAY, entrypoint="claude-desktop-3p"
        ),
        "released": _session(tree, "released desktop", cutoff - 5 * DAY, entrypoint="local-agent"),
        "keep": _session(tree, "precious notes", cutoff - 3 * DAY, tag="keep"),
    }
    released = s["released"]
    tree.write_file(
        f"projects/{released.project_dir.name}/{released.session_id}.desktop-released.json",
        b'{"released": true}',
        mtime=cutoff - 5 * DAY,
    )
    db = open_db(tmp_path / "index.db")
    refresh(db, [tree.root])
    return {"tree": tree, "s": s, "db": db, "cwd": str(tmp_path)}


def _ids(entries: list[cl.PlanEntry]) -> set[str]:
    return {e.session_id for e in entries}


def test_dry_run_lists_exactly_the_sessions_before_the_cutoff(world: dict[str, Any]) -> None:
    s, tree = world["s"], world["tree"]
    plan = act.fresh_plan(world["db"], [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    (root,) = plan.roots
    assert root.days == 30 and root.cutoff == NOW - 30 * DAY
    assert _ids(root.to_delete) == {
        s[k].session_id for k in ("old", "older", "edge_in", "released")
    }
    assert _ids(root.protected) == {s["keep"].session_id}
    # semantics 6: claude-desktop and claude-desktop-3p sessions are exempt
    assert _ids(root.exempt) == {s["desktop"].session_id, s["desktop_3p"].session_id}
    assert all(e.exempt_reason and not e.claude_code_deletes for e in root.exempt)
    keep = root.protected[0]
    assert keep.claude_code_deletes and keep.tag == "keep"
    assert root.claude_code_sessions == 5  # the four + the protected one
    old = next(e for e in root.to_delete if e.session_id == s["old"].session_id)
    assert old.title == "old parser work" and old.cwd == "/work/repo"
    assert old.size > old.transcript_size  # the <id>/ folder counts
    assert old.last_activity and old.last_activity.endswith("Z")
    as_json = plan.as_dict()
    assert as_json["totals"]["sessions"] == 4 and as_json["totals"]["protected"] == 1


def test_days_override_and_skipped_sweep(world: dict[str, Any]) -> None:
    s, tree = world["s"], world["tree"]
    tree.write_settings({"cleanupPeriodDays": "forever"})
    plan = act.fresh_plan(world["db"], [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    (root,) = plan.roots
    assert not root.retention.sweep_enabled and root.expired == []
    assert root.retention.problems[0]["file"] == str(tree.root / "settings.json")
    assert root.claude_code_sessions == 0
    plan = act.fresh_plan(
        world["db"], [tree.root], cwd=world["cwd"], now=NOW, days=100, managed=None
    )
    (root,) = plan.roots
    assert _ids(root.to_delete) == {s["older"].session_id}
    assert not root.to_delete[0].claude_code_deletes  # Claude Code will not sweep at all


def test_managed_retention_lifts_the_desktop_exemption(
    world: dict[str, Any], tmp_path: Path
) -> None:
    managed = tmp_path / "managed.json"
    _settings(managed, {"cleanupPeriodDays": 30})
    plan = act.fresh_plan(
        world["db"], [world["tree"].root], cwd=world["cwd"], now=NOW, managed=managed
    )
    assert world["s"]["desktop"].session_id in _ids(plan.roots[0].to_delete)


def test_a_desktop_entrypoint_outside_both_windows_is_no_exemption(tmp_path: Path) -> None:
    """Claude Code looks for the entrypoint in the first and the last 64 KiB only: a
    file whose head holds none and whose only desktop one lies between the windows is
    deleted by its sweep. We took the first entrypoint wherever it was, so cleanup did
    not list it and the rescue did not archive it (helper 129)."""
    import orjson

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/work/repo")
    s.user("x" * 80_000, entrypoint=None)  # no entrypoint in the head window
    s.user("from the desktop app", entrypoint="claude-desktop")
    s.assistant("filler " * 12_000, entrypoint=None)  # pushes it out of the tail window
    s.user("back in the terminal", entrypoint="cli")
    s.write(mtime=NOW - 60 * DAY)
    lines = [orjson.loads(line) for line in s.path.read_bytes().splitlines()]
    assert [r.get("entrypoint") for r in lines if r.get("type") == "user"] == [
        None,
        "claude-desktop",
        "cli",
    ]
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    plan = act.fresh_plan(db, [tree.root], cwd="/work/repo", now=NOW, managed=None)
    (entry,) = plan.roots[0].expired
    assert entry.claude_code_deletes and entry.exempt_reason is None


def test_desktop_ceiling(world: dict[str, Any]) -> None:
    world["tree"].write_settings({"desktopSessionCleanupPeriodDays": 32})
    plan = act.fresh_plan(
        world["db"], [world["tree"].root], cwd=world["cwd"], now=NOW, managed=None
    )
    assert world["s"]["desktop"].session_id in _ids(plan.roots[0].to_delete)


@pytest.mark.parametrize(
    ("settings", "desktop_kept"),
    [
        ({"desktopSessionCleanupPeriodDays": 32.0}, False),
        ({"desktopSessionCleanupPeriodDays": 2.5}, True),
    ],
)
def test_desktop_ceiling_as_a_whole_float(
    world: dict[str, Any], settings: dict[str, Any], desktop_kept: bool
) -> None:
    world["tree"].write_settings(settings)
    plan = act.fresh_plan(
        world["db"], [world["tree"].root], cwd=world["cwd"], now=NOW, managed=None
    )
    assert (world["s"]["desktop"].session_id not in _ids(plan.roots[0].to_delete)) is desktop_kept


@pytest.mark.parametrize("days", [1e300, 18446744073709551615])
def test_a_period_longer_than_any_file_is_old_expires_nothing(
    world: dict[str, Any], days: float
) -> None:
    # Valid for Claude Code (an integer in JavaScript): its cutoff lies before any mtime.
    world["tree"].write_settings({"cleanupPeriodDays": days})
    plan = act.fresh_plan(
        world["db"], [world["tree"].root], cwd=world["cwd"], now=NOW, managed=None
    )
    (root,) = plan.roots
    assert root.retention.sweep_enabled and root.expired == []
    assert plan.as_dict()["totals"]["sessions"] == 0


def test_expiring_soon_counts_within_three_days(world: dict[str, Any]) -> None:
    s = world["s"]
    paths = [str(s[k].path) for k in ("old", "soon", "young", "desktop", "edge_out")]
    count = cl.expiring_soon(
        world["db"], paths, world["cwd"], [world["tree"].root], now=NOW, managed=None
    )
    assert count == 3  # old (expired), soon (in 2 days), edge_out (in 1 s); desktop exempt
    summary = cl.cleanup_summary(
        world["db"], [world["tree"].root], world["cwd"], now=NOW, managed=None
    )
    assert summary["expired_sessions"] == 5
    assert summary["expiring_within_3_days"] == 2


def test_next_sweep_from_last_cleanup(world: dict[str, Any]) -> None:
    tree = world["tree"]
    tree.write_file(".last-cleanup", b"2027-01-01T00:00:00Z", mtime=NOW - 3600)
    plan = act.fresh_plan(world["db"], [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    assert plan.roots[0].next_sweep == NOW - 3600 + DAY
    tree.write_file(".last-cleanup", b"x", mtime=NOW - 2 * DAY)
    plan = act.fresh_plan(world["db"], [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    assert plan.roots[0].next_sweep is None  # at the next start


@pytest.mark.parametrize(
    ("layout", "last"),
    [
        ("file", NOW - 3600),
        ("link to a fresh file", NOW - 3600),  # stow / home-manager dotfiles
        ("dangling link", None),  # Claude Code finds no marker: it sweeps at the start
    ],
)
def test_last_cleanup_is_read_through_a_symlink(
    world: dict[str, Any], tmp_path: Path, layout: str, last: float | None
) -> None:
    """Claude Code stats ``.last-cleanup`` and writes it through a symlink: the
    target's mtime holds the sweep back, not the link's own (we read the link's with
    lstat: a link made two days ago said the sweep could run now)."""
    tree = world["tree"]
    marker = tree.root / ".last-cleanup"
    target = tmp_path / "dotfiles" / "last-cleanup"
    if layout == "file":
        tree.write_file(".last-cleanup", b"x", mtime=NOW - 3600)
    else:
        target.parent.mkdir()
        marker.symlink_to(target)
        os.utime(marker, (NOW - 2 * DAY, NOW - 2 * DAY), follow_symlinks=False)
        if layout == "link to a fresh file":
            target.write_bytes(b"2027-01-06T00:00:00Z")
            os.utime(target, (NOW - 3600, NOW - 3600))
    plan = act.fresh_plan(world["db"], [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    assert plan.roots[0].last_cleanup == last
    assert plan.roots[0].next_sweep == (None if last is None else last + DAY)


def test_a_sweep_held_back_deletes_what_is_old_by_then(world: dict[str, Any]) -> None:
    """With the sweep held back 23 hours by ``.last-cleanup``, the dry run said it
    "would delete" only what is expired now; by the time it can run, a session kept
    by a second now is a day older and goes too (helper 129)."""
    tree, s = world["tree"], world["s"]
    tree.write_file(".last-cleanup", b"x", mtime=NOW - 3600)
    plan = act.fresh_plan(world["db"], [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    (root,) = plan.roots
    held_back = {e.session_id for e in root.expired if e.claude_code_deletes}
    tree.write_file(".last-cleanup", b"x", mtime=NOW - 2 * DAY)
    plan = act.fresh_plan(world["db"], [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    at_once = {e.session_id for e in plan.roots[0].expired if e.claude_code_deletes}
    assert s["edge_out"].session_id not in at_once  # kept by a second, now
    assert root.claude_code_sessions == plan.roots[0].claude_code_sessions + 1
    assert held_back == at_once  # ``expired`` is ours: what --apply would delete now


# --------------------------------------------------------------------------- apply (library)


def test_live_and_symlinked_sessions_are_left_alone(world: dict[str, Any], tmp_path: Path) -> None:
    s, tree, db = world["s"], world["tree"], world["db"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_bytes(b"not yours")
    target = outside / "elsewhere.jsonl"
    target.write_bytes(s["older"].path.read_bytes())
    os.utime(target, (NOW - 300 * DAY,) * 2)
    link = s["older"].project_dir / "0f0f0f0f-0000-4000-8000-000000000001.jsonl"
    link.symlink_to(target)
    os.utime(link, (NOW - 300 * DAY,) * 2, follow_symlinks=False)
    # the expired session's <id>/ folder is a link out of projects/
    folder_link = s["older"].path.with_suffix("")
    folder_link.symlink_to(outside, target_is_directory=True)
    plan = act.fresh_plan(db, [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    assert "0f0f0f0f-0000-4000-8000-000000000001" not in _ids(plan.to_delete)
    before_outside = _snapshot(outside)
    live_mtime = s["edge_in"].path.stat().st_mtime
    outcomes = act.apply_plan(db, plan, [tree.root], clock=lambda: live_mtime + 60)
    status = {o.session_id: o.status for o in outcomes}
    # by this clock "edge_in" was written a minute ago: it may be live, so it is kept
    assert status[s["edge_in"].session_id] == act.SKIPPED and s["edge_in"].path.exists()
    assert status[s["older"].session_id] == act.DELETED
    assert status[s["old"].session_id] == act.DELETED
    assert not os.path.lexists(folder_link) and not s["older"].path.exists()
    assert _snapshot(outside) == before_outside
    assert link.is_symlink() and target.exists()


def test_session_changed_since_the_plan_is_kept(world: dict[str, Any]) -> None:
    s, tree, db = world["s"], world["tree"], world["db"]
    plan = act.fresh_plan(db, [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    os.utime(s["older"].path, (NOW - 100 * DAY,) * 2)
    outcomes = act.apply_plan(db, plan, [tree.root], clock=lambda: NOW)
    older = next(o for o in outcomes if o.session_id == s["older"].session_id)
    assert older.status == act.SKIPPED and s["older"].path.exists()


def test_archive_failure_keeps_the_original(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sessiondex.transcripts.archive as archive

    s, tree, db = world["s"], world["tree"], world["db"]

    def broken(path: Path, entries: Any) -> None:
        raise archive.ArchiveError(f"{path}: simulated mismatch")

    monkeypatch.setattr(archive, "verify_archive", broken)
    plan = act.fresh_plan(db, [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    outcomes = act.apply_plan(
        db, plan, [tree.root], archive_dir=tmp_path / "arch", clock=lambda: NOW
    )
    assert outcomes and all(o.status == act.FAILED for o in outcomes)
    assert all(Path(e.file_path).exists() for e in plan.to_delete)
    assert s["keep"].path.exists()
    assert not list((tmp_path / "arch").rglob("*.tar.gz"))  # no half-verified archive left


@pytest.mark.parametrize("how", ["list", "enter"])
def test_a_session_folder_that_cannot_be_read_whole_is_not_archived_nor_deleted(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """With ``subagents/`` unreadable (a bad restore: mode 000, or 644 which lists but
    cannot be entered), the archive held the main transcript alone, was called
    archived, and the session was deleted: its subagents lost to ``restore``. Now that
    session's archive fails, and it is kept."""
    s, tree, db = world["s"], world["tree"], world["db"]
    denied = s["old"].path.with_suffix("") / "subagents"
    real_scandir, real_lstat = os.scandir, os.lstat

    def inside(target: Any) -> bool:
        return os.fspath(target).startswith(os.path.join(str(denied), ""))

    def scandir(target: Any) -> Any:
        if os.fspath(target) == str(denied) if how == "list" else inside(target):
            raise PermissionError(13, "Permission denied", os.fspath(target))
        return real_scandir(target)

    def lstat(target: Any, *args: Any, **kwargs: Any) -> Any:
        if how == "enter" and inside(target):
            raise PermissionError(13, "Permission denied", os.fspath(target))
        return real_lstat(target, *args, **kwargs)

    plan = act.fresh_plan(db, [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    assert s["old"].session_id in _ids(plan.to_delete)
    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "lstat", lstat)
    outcomes = act.apply_plan(
        db, plan, [tree.root], archive_dir=tmp_path / "arch", clock=lambda: NOW
    )
    monkeypatch.undo()
    status = {o.session_id: o.status for o in outcomes}
    assert status[s["old"].session_id] == act.FAILED
    assert s["old"].path.exists() and denied.is_dir()
    assert not list((tmp_path / "arch").rglob(f"{s['old'].session_id}.tar.gz"))


@pytest.mark.parametrize("archive", [False, True])
def test_a_session_folder_that_cannot_be_removed_keeps_its_transcript(
    world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, archive: bool
) -> None:
    """A folder that can be read but not written (mode 555 on subagents/ after a
    restore): the transcript was deleted first and the folder then failed, leaving a
    half-deleted session that ``restore`` refused to put back over. The folder goes
    first now; when it fails, the session fails with its transcript still there."""
    import shutil

    s, tree, db = world["s"], world["tree"], world["db"]
    folder = s["old"].path.with_suffix("")
    real_rmtree = shutil.rmtree

    def read_only(path: Any, *args: Any, **kwargs: Any) -> None:
        if Path(path) == folder:
            raise PermissionError(13, "Permission denied", str(folder / "subagents"))
        real_rmtree(path, *args, **kwargs)

    plan = act.fresh_plan(db, [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    monkeypatch.setattr(shutil, "rmtree", read_only)
    outcomes = act.apply_plan(
        db,
        plan,
        [tree.root],
        archive_dir=tmp_path / "arch" if archive else None,
        clock=lambda: NOW,
    )
    status = {o.session_id: o.status for o in outcomes}
    assert status[s["old"].session_id] == act.FAILED
    assert s["old"].path.exists() and folder.is_dir()
    assert status[s["older"].session_id] == act.DELETED  # the others go on


def test_a_session_folder_nested_a_thousand_deep_is_planned_archived_and_kept(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """``os.walk`` recursed once per level: a folder ~1,000 deep (a runaway tool) was a
    RecursionError traceback out of the dry run, ``archive`` and ``--apply``. It is now
    measured and archived whole; the delete refuses (``shutil.rmtree`` would stop half
    way) and removes nothing."""
    s, tree, db = world["s"], world["tree"], world["db"]
    folder = s["old"].path.with_suffix("")
    bottom = folder
    for _ in range(1_100):  # Path.mkdir(parents=True) recurses too
        bottom = bottom / "d"
        os.mkdir(bottom)
    (bottom / "notes.txt").write_bytes(b"x" * 5_000)
    stale = NOW - 40 * DAY
    os.utime(bottom / "notes.txt", (stale, stale))

    try:
        plan = act.fresh_plan(db, [tree.root], cwd=world["cwd"], now=NOW, managed=None)
        (entry,) = [e for e in plan.to_delete if e.session_id == s["old"].session_id]
        assert entry.size >= entry.transcript_size + 5_000
        outcomes = act.apply_plan(
            db, plan, [tree.root], archive_dir=tmp_path / "arch", clock=lambda: NOW
        )
        status = {o.session_id: o.status for o in outcomes}
        assert status[s["old"].session_id] == act.FAILED
        assert status[s["older"].session_id] == act.DELETED  # the others go on
        assert s["old"].path.exists() and (bottom / "notes.txt").exists()
        (kept,) = (tmp_path / "arch").rglob(f"{s['old'].session_id}*.tar.gz")
        with tarfile.open(kept) as tar:
            assert any(m.name.endswith("/d/d/notes.txt") for m in tar.getmembers())
    finally:  # pytest's own rmtree of tmp_path would recurse as deep
        (bottom / "notes.txt").unlink()
        while bottom != folder:
            bottom.rmdir()
            bottom = bottom.parent


@pytest.mark.parametrize("where", ["project", "folder", "subagents", "tool-results"])
def test_a_delete_that_could_not_finish_removes_nothing(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """rmtree removes entries until its first failure: with tool-results/ read-only,
    the subagent transcripts listed before it were gone and the delete then failed.
    What a delete needs (write and search permission on every directory it removes
    entries from) is now checked before anything is removed. The check is simulated
    (``os.access``): the suite may run as root."""
    s, tree, db = world["s"], world["tree"], world["db"]
    folder = s["old"].path.with_suffix("")
    denied = {
        "project": s["old"].path.parent,
        "folder": folder,
        "subagents": folder / "subagents",
        "tool-results": folder / "tool-results",
    }[where]
    before = sorted(p for p in folder.rglob("*")) + [s["old"].path]
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == denied else real_access(p, mode)
    )
    plan = act.fresh_plan(db, [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    outcomes = act.apply_plan(db, plan, [tree.root], clock=lambda: NOW)
    status = {o.session_id: o.status for o in outcomes}
    assert status[s["old"].session_id] == act.FAILED
    assert all(p.exists() for p in before), [p for p in before if not p.exists()]


@pytest.mark.parametrize(
    ("owner_override", "entry_owner", "namespace", "deleted"),
    [
        (True, "another", False, True),  # root: the kernel lets it remove anyone's entry
        (False, "another", False, False),  # root without CAP_FOWNER, or another user
        (False, "same", False, True),
        # root of a rootless container: CAP_FOWNER reaches only the owners mapped into
        # its user namespace; the others show as 65534
        (True, "unmapped", True, False),
        (True, "another", True, True),
    ],
)
def test_a_sticky_dir_in_a_session_folder_follows_the_kernel_rule(
    world: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    owner_override: bool,
    entry_owner: str,
    namespace: bool,
    deleted: bool,
) -> None:
    """In a sticky directory an entry goes only with ownership of it or the directory,
    or CAP_FOWNER over its owner. Root was exempted by its uid alone; as root without
    CAP_FOWNER (a container, ``setpriv``), or in a user namespace where the owner is not
    mapped, rmtree then removed part of the folder and failed."""
    from sessiondex.transcripts import write

    if entry_owner != "same" and os.geteuid() != 0:
        pytest.skip("making another user's file takes root")
    s, tree, db = world["s"], world["tree"], world["db"]
    folder = s["old"].path.with_suffix("")
    sticky = folder / "subagents"
    os.chmod(sticky, 0o1777)
    entry = next(sticky.glob("*.jsonl"))
    if entry_owner != "same":
        owner = write.OVERFLOW_ID if entry_owner == "unmapped" else 4242
        os.chown(entry, owner, owner)
        os.chown(sticky, 4343, 4343)
    before = sorted(folder.rglob("*")) + [s["old"].path]
    monkeypatch.setattr(write, "_may_act_as_any_owner", lambda: owner_override)
    maps = ("0 0 1\n1 100000 5000\n", "0 0 1\n1 100000 5000\n") if namespace else ("", "")
    monkeypatch.setattr(write, "_id_maps", lambda: maps)
    plan = act.fresh_plan(db, [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    outcomes = act.apply_plan(db, plan, [tree.root], clock=lambda: NOW)
    status = {o.session_id: o.status for o in outcomes}
    if deleted:
        assert status[s["old"].session_id] == act.DELETED
        assert not any(p.exists() for p in before)
    else:
        assert status[s["old"].session_id] == act.FAILED
        assert all(p.exists() for p in before)


@pytest.mark.parametrize(("dropped", "expected"), [(None, True), ("-fowner", False)])
def test_cap_fowner_is_read_from_the_process(dropped: str | None, expected: bool) -> None:
    """As root, whether CAP_FOWNER is in the effective set, read from /proc."""
    import shutil
    import subprocess

    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None or not os.path.exists("/proc/self/status"):
        pytest.skip("needs root, setpriv and /proc")
    probe = [
        sys.executable,
        "-c",
        "from sessiondex.transcripts.write import _may_act_as_any_owner as f; print(f())",
    ]
    drop = [] if dropped is None else [setpriv, f"--bounding-set={dropped}", "--"]
    out = subprocess.run([*drop, *probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(expected)


def test_archive_dir_inside_projects_is_refused(world: dict[str, Any]) -> None:
    tree = world["tree"]
    plan = act.fresh_plan(world["db"], [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    with pytest.raises(ValueError, match="inside"):
        act.apply_plan(world["db"], plan, [tree.root], archive_dir=tree.projects_dir / "arch")


@pytest.mark.parametrize("kind", ["fifo", "linked-folder"])
def test_an_archive_dir_may_be_a_linked_folder_but_no_fifo(
    world: dict[str, Any], tmp_path: Path, kind: str
) -> None:
    tree = world["tree"]
    target = tmp_path / "archive-here"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        (tmp_path / "other-disk").mkdir()
        target.symlink_to(tmp_path / "other-disk")
    plan = act.fresh_plan(world["db"], [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    if kind == "fifo":
        with pytest.raises(ValueError, match="is a FIFO, not a folder"):
            act.apply_plan(world["db"], plan, [tree.root], archive_dir=target)
    else:
        act.apply_plan(world["db"], plan, [tree.root], archive_dir=target, clock=lambda: NOW)
        assert list((tmp_path / "other-disk").rglob("*.tar.gz"))


# --------------------------------------------------------------------------- CLI


@pytest.fixture()
def live(tmp_path: Path) -> dict[str, Any]:
    """A config dir on the real clock, with every mtime days from any boundary."""
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    s = {
        "old": _session(tree, "zebra migration plan", now - 45 * DAY, folder=True),
        "older": _session(tree, "quokka refactor", now - 120 * DAY, cwd="/work/other"),
        "young": _session(tree, "fresh lemur work", now - 3 * DAY, folder=True),
        "keep": _session(tree, "precious walrus notes", now - 60 * DAY, tag="keep"),
        "desktop": _session(tree, "desktop ibis chat", now - 50 * DAY, entrypoint="claude-desktop"),
    }
    project = s["old"].project_dir
    # Things that are not sessions, old as they are. The two *.jsonl ones Claude Code's
    # sweep deletes as transcripts (tests/test_cleanup_legacy.py), the side files stay.
    for name in (
        "agent-deadbeef.jsonl",
        "notes.jsonl",
        f"{s['old'].session_id}.ccr-tip.json",
        "bridge-pointer.json",
    ):
        (project / name).write_bytes(b"{}\n")
        os.utime(project / name, (now - 90 * DAY,) * 2)
    tree.write_file(".last-cleanup", b"2020-01-01T00:00:00.000Z", mtime=now - 2 * DAY)
    return {"tree": tree, "s": s, "db": tmp_path / "index.db", "tmp": tmp_path}


def test_cli_dry_run_json_and_table(live: dict[str, Any]) -> None:
    s, tree = live["s"], live["tree"]
    before = _snapshot(tree.root)
    result = _run(["cleanup", "--json", "--cwd", str(live["tmp"])], tree.root, live["db"])
    assert result.exit_code == 0, result.output
    plan = _stdout_json(result)
    (root,) = plan["config_dirs"]
    assert {e["session_id"] for e in root["expired"] if e["kind"] == "session"} == {
        s["old"].session_id,
        s["older"].session_id,
    }
    assert {e["session_id"] for e in root["expired"] if e["kind"] != "session"} == {
        "agent-deadbeef",
        "notes",
    }
    assert {e["session_id"] for e in root["protected"]} == {s["keep"].session_id}
    assert {e["session_id"] for e in root["exempt"]} == {s["desktop"].session_id}
    assert root["claude_code"]["days"] == 30 and root["claude_code"]["next_sweep"] is None
    assert _snapshot(tree.root) == before  # a dry run touches nothing

    text = _run(["cleanup", "--cwd", str(live["tmp"])], tree.root, live["db"])
    assert text.exit_code == 0, text.output
    assert "zebra migration plan" in text.output and "quokka refactor" in text.output
    assert "lemur" not in text.output
    assert "Claude Code's own sweep will still delete them" in text.output
    assert "--archive" in text.output
    assert "Exempt: 1 desktop session" in text.output


# What the table says of Claude Code and the sessions the keep tag protects, by the
# settings and --days: only what its own sweep would delete is said to be deleted.
KEEP_TAG_SWEEP_NOTES = [
    ({"cleanupPeriodDays": 30}, [], "Claude Code's own sweep will still delete them"),
    # No sweep at all: nothing is deleted by Claude Code, whatever --days plans.
    ({"cleanupPeriodDays": "forever"}, ["--days", "5"], "does not delete them either"),
    # Past --days 50 but not past Claude Code's 90 days: its sweep keeps them too.
    ({"cleanupPeriodDays": 90}, ["--days", "50"], "does not delete them either"),
]


@pytest.mark.parametrize(("settings", "args", "said"), KEEP_TAG_SWEEP_NOTES)
def test_cli_says_what_claude_code_does_with_protected_sessions(
    live: dict[str, Any], settings: dict[str, Any], args: list[str], said: str
) -> None:
    tree = live["tree"]
    tree.write_settings(settings)
    text = _run(["cleanup", "--cwd", str(live["tmp"]), *args], tree.root, live["db"])
    assert text.exit_code == 0, text.output
    assert "Protected by tag 'keep'" in text.output
    phrases = ("will still delete", "does not delete them either")
    assert [p for p in phrases if p in text.output] == [p for p in phrases if p in said]


def test_cli_invalid_settings_lists_nothing_but_days_still_plans(live: dict[str, Any]) -> None:
    tree = live["tree"]
    tree.write_settings({"cleanupPeriodDays": 0})
    result = _run(["cleanup", "--cwd", str(live["tmp"])], tree.root, live["db"])
    assert result.exit_code == 0, result.output
    assert "skips its sweep" in result.output and str(tree.root / "settings.json") in result.output
    assert "zebra" not in result.output
    plan = _stdout_json(
        _run(
            ["cleanup", "--json", "--days", "100", "--cwd", str(live["tmp"])], tree.root, live["db"]
        )
    )
    assert [e["session_id"] for e in plan["config_dirs"][0]["expired"]] == [
        live["s"]["older"].session_id
    ]


def test_cli_apply_removes_exactly_the_expired(live: dict[str, Any]) -> None:
    s, tree = live["s"], live["tree"]
    before = _snapshot(tree.root)
    result = _run(["cleanup", "--apply", "--cwd", str(live["tmp"])], tree.root, live["db"])
    assert result.exit_code == 0, result.output
    expected = dict(before)
    project = os.path.relpath(s["old"].project_dir, tree.root)
    for name in ("agent-deadbeef.jsonl", "notes.jsonl"):  # old *.jsonl: the sweep's too
        del expected[os.path.join(project, name)]
    for key in ("old", "older"):
        rel = os.path.relpath(s[key].path, tree.root)
        assert f"deleted {s[key].path}" in result.output
        for path in list(expected):
            if (
                path == rel
                or path == rel[: -len(".jsonl")]
                or path.startswith(rel[: -len(".jsonl")] + os.sep)
            ):
                del expected[path]
    assert _snapshot(tree.root) == expected
    assert s["keep"].path.exists() and s["desktop"].path.exists()
    # the index dropped them in the same run
    gone = _run(["--no-refresh", "resolve", s["old"].session_id], tree.root, live["db"])
    assert gone.exit_code == 1
    kept = _run(["--no-refresh", "resolve", s["keep"].session_id, "--json"], tree.root, live["db"])
    assert kept.exit_code == 0, kept.output


def test_cli_one_failure_does_not_stop_the_others(
    live: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sessiondex.transcripts.write as write

    s, tree = live["s"], live["tree"]
    real = write.delete_session_files

    def flaky(path: Path, roots: list[Path]) -> list[Path]:
        if Path(path) == s["older"].path:
            raise write.WriteRefused(f"cannot delete {path}: Permission denied")
        return real(path, roots)

    monkeypatch.setattr(write, "delete_session_files", flaky)
    result = _run(["cleanup", "--apply", "--cwd", str(live["tmp"])], tree.root, live["db"])
    assert result.exit_code == 1
    assert "failed" in result.stderr and "Permission denied" in result.stderr
    assert not s["old"].path.exists() and s["older"].path.exists()


def test_cli_archive_round_trip_and_findable(live: dict[str, Any]) -> None:
    s, tree, tmp = live["s"], live["tree"], live["tmp"]
    archive_dir = tmp / "archive"
    originals = {k: _snapshot(s[k].project_dir) for k in ("old",)}
    old_bytes = s["old"].path.read_bytes()
    old_mtime_ns = s["old"].path.stat().st_mtime_ns
    result = _run(
        ["cleanup", "--apply", "--archive", str(archive_dir), "--json", "--cwd", str(tmp)],
        tree.root,
        live["db"],
    )
    assert result.exit_code == 0, result.output
    outcome = {o["session_id"]: o for o in _stdout_json(result)["results"]}
    assert outcome[s["old"].session_id]["status"] == "deleted"
    # the protected session: a copy archived, the original kept
    assert outcome[s["keep"].session_id]["status"] == "archived" and s["keep"].path.exists()
    assert not s["old"].path.exists()

    archive = Path(outcome[s["old"].session_id]["archive"])
    assert archive == archive_dir / s["old"].project_dir.name / f"{s['old'].session_id}.tar.gz"
    restore = tmp / "restore"
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(restore)  # noqa: S202 - our own archive, in a temp dir
    restored = restore / "projects" / s["old"].project_dir.name / s["old"].path.name
    assert restored.read_bytes() == old_bytes
    assert abs(restored.stat().st_mtime_ns - old_mtime_ns) < 1000
    restored_tree = _snapshot(restore / "projects" / s["old"].project_dir.name)
    for rel, content in originals["old"].items():
        sid = s["old"].session_id
        if rel in (sid, f"{sid}.jsonl") or rel.startswith(sid + os.sep):
            assert restored_tree[rel] == content
    assert f"{s['old'].session_id}.ccr-tip.json" not in restored_tree  # side files stay

    # findable with --include-archived only (search, resolve), also after a rebuild
    for extra in ([], ["index", "--rebuild"]):
        if extra:
            assert _run(extra, tree.root, live["db"]).exit_code == 0
        hidden = _stdout_json(
            _run(["search", "zebra", "--scope", "all", "--json"], tree.root, live["db"])
        )
        assert hidden == []
        found = _stdout_json(
            _run(
                ["search", "zebra", "--scope", "all", "--include-archived", "--json"],
                tree.root,
                live["db"],
            )
        )
        assert [r["session_id"] for r in found] == [s["old"].session_id]
        assert found[0]["file_path"] == str(archive)
        assert _run(["resolve", s["old"].session_id], tree.root, live["db"]).exit_code == 1
        resolved = _run(
            ["resolve", s["old"].session_id, "--include-archived", "--json", "--cwd", "/work/repo"],
            tree.root,
            live["db"],
        )
        assert resolved.exit_code == 0, resolved.output
        assert one_session(resolved.stdout)["session_id"] == s["old"].session_id
        # subagent text inside the archive is searchable too
        sub = _stdout_json(
            _run(
                [
                    "search",
                    "subagent work on zebra",
                    "--scope",
                    "all",
                    "--include-archived",
                    "--json",
                ],
                tree.root,
                live["db"],
            )
        )
        assert [r["session_id"] for r in sub] == [s["old"].session_id]

    # a second run does not archive the protected session again
    again = _run(
        ["cleanup", "--apply", "--archive", str(archive_dir), "--json", "--cwd", str(tmp)],
        tree.root,
        live["db"],
    )
    results = _stdout_json(again)["results"]
    assert [r["status"] for r in results] == ["skipped"]
    assert len(list(archive_dir.rglob(f"{s['keep'].session_id}*.tar.gz"))) == 1


def test_cli_keep_tag_option(live: dict[str, Any]) -> None:
    s, tree = live["s"], live["tree"]
    result = _run(
        ["cleanup", "--apply", "--keep-tag", "zebra", "--json", "--cwd", str(live["tmp"])],
        tree.root,
        live["db"],
    )
    assert result.exit_code == 0, result.output
    assert s["keep"].path.exists() is False  # "keep" is no longer the protecting tag
    assert s["old"].path.exists() is False


def test_cli_stats_has_a_cleanup_line(live: dict[str, Any]) -> None:
    tree = live["tree"]
    result = _run(["stats"], tree.root, live["db"])
    assert result.exit_code == 0, result.output
    assert "cleanup: 3 sessions" in result.output
    data = _stdout_json(_run(["stats", "--json"], tree.root, live["db"]))
    assert data["cleanup"]["expired_sessions"] == 3


def test_cli_list_warns_about_expiring_sessions(live: dict[str, Any]) -> None:
    tree = live["tree"]
    result = _run(["list", "--scope", "all"], tree.root, live["db"])
    assert result.exit_code == 0, result.output
    assert "3 listed sessions will be deleted" in result.stderr


def test_archive_module_is_byte_identical(tmp_path: Path) -> None:
    from sessiondex.transcripts.archive import read_archive, write_session_archive
    from sessiondex.transcripts.discover import describe_path

    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "archive me", NOW - 40 * DAY, folder=True)
    s.raw(b'{"type":"user","broken":')  # a torn last line is kept as is
    s.write(mtime=NOW - 40 * DAY)
    tf = describe_path(s.path, [tree.root])
    assert tf is not None
    archive = write_session_archive(tf, tmp_path / "arch")
    second = write_session_archive(tf, tmp_path / "arch")
    assert second.name == f"{s.session_id}-2.tar.gz"  # never overwritten
    items = [(i.kind, i.stream.read()) for i in read_archive(archive)]
    assert items[0] == ("main", s.path.read_bytes())
    assert [k for k, _ in items[1:]] == ["subagent"]
    with tarfile.open(archive, "r:gz") as tar:
        names = tar.getnames()
    assert names[0] == f"projects/{s.project_dir.name}/{s.session_id}.jsonl"
    assert f"projects/{s.project_dir.name}/{s.session_id}/tool-results/r1.txt" in names
    assert orjson.loads(items[1][1].splitlines()[0])["isSidechain"] is True


def test_archive_leftovers_of_a_killed_run_are_removed(
    world: dict[str, Any], tmp_path: Path
) -> None:
    """A run killed mid-archive leaves ``.<id>.<random>.tmp``; the next run removes such
    files of its own once they are stale, and nothing else (issue 14, item 8)."""
    s, tree, db = world["s"], world["tree"], world["db"]
    arch = tmp_path / "arch"
    key = s["old"].project_dir.name
    folder = arch / key
    folder.mkdir(parents=True)
    sid = s["old"].session_id
    now = time.time()
    stale = now - 3600
    files = {
        f".{sid}.k3x_9qz0.tmp": (stale, False),  # ours, killed an hour ago: removed
        f".{s['older'].session_id}.abcdefgh.tmp": (stale, False),
        f".{sid}.live1234.tmp": (now, True),  # ours, but a run may be writing it now
        ".notes.abcdefgh.tmp": (stale, True),  # not our pattern
        f"{sid}.tar.gz.tmp": (stale, True),  # not our pattern
        f".{sid}.abcdefgh.tmp.bak": (stale, True),
        f".{sid}.abcdefgh.tmp2": (stale, True),
    }
    for name, (mtime, _kept) in files.items():
        (folder / name).write_bytes(b"partial archive")
        os.utime(folder / name, (mtime, mtime))
    outside = tmp_path / "outside.tmp"
    outside.write_bytes(b"not ours")
    link = folder / f".{sid}.linkxxxx.tmp"
    link.symlink_to(outside)
    os.utime(link, (stale, stale), follow_symlinks=False)
    deep = folder / "nested"
    deep.mkdir()
    (deep / f".{sid}.deepxxxx.tmp").write_bytes(b"x")
    os.utime(deep / f".{sid}.deepxxxx.tmp", (stale, stale))

    plan = act.fresh_plan(db, [tree.root], cwd=world["cwd"], now=NOW, managed=None)
    act.apply_plan(db, plan, [tree.root], archive_dir=arch, clock=lambda: NOW)
    for name, (_mtime, kept) in files.items():
        assert (folder / name).exists() == kept, name
    assert link.is_symlink() and outside.read_bytes() == b"not ours"
    assert (deep / f".{sid}.deepxxxx.tmp").exists()  # only one level down is ours
    assert list(arch.rglob("*.tar.gz"))  # the run itself went on and archived
    kept = {n for n, (_m, k) in files.items() if k} | {link.name, f".{sid}.deepxxxx.tmp"}
    assert {p.name for p in arch.rglob("*.tmp*") if p.is_file() or p.is_symlink()} == kept


# --------------------------------------------------------------------------- the window, from the index

D = "claude-desktop"
PAD = 9000  # bytes of prompt per padding record: 8 records are past one 64 KiB window


def _windowed(tree: ConfigTree, layout: list[tuple[str | None, int]], mtime: float) -> Any:
    """A session whose records carry each (entrypoint, padding records) in turn."""
    s = tree.session(entrypoint=layout[0][0])
    for i, (entrypoint, pads) in enumerate(layout):
        s.entrypoint = entrypoint
        s.user(f"part {i}")
        for n in range(pads):
            s.user(f"pad {i}.{n} " + "x" * PAD)
    s.write(mtime=mtime)
    return s


WINDOW_LAYOUTS = {
    "small, desktop last": [("cli", 0), (D, 0)],
    "small, desktop first": [(D, 0), ("cli", 0)],
    "between windows, desktop past the head": [("cli", 10), (D, 0)],
    "large, desktop in the tail": [("cli", 20), (D, 1)],
    "large, desktop in the middle only": [("cli", 10), (D, 1), ("cli", 10)],
    "large, desktop last but out of the tail": [("cli", 10), (D, 0), (None, 10)],
    "large, desktop in the head then cli": [(D, 0), ("cli", 20)],
    "large, no entrypoint after the head": [("cli", 0), (None, 20)],
    "large, desktop first but past the head": [(None, 10), (D, 1), ("cli", 10)],
}


def _index_says_desktop(db: Any, tree: ConfigTree, s: Any) -> bool:
    """Whether ``list``'s warning (the index alone) keeps this long-expired session, as
    a desktop one: it counts every expired session the sweep deletes."""
    doomed = cl.expiring_soon(db, [str(s.path)], "/work/repo", [tree.root], now=NOW, managed=None)
    return doomed == 0


def _files_say_desktop(s: Any) -> bool:
    """The file-reading path's answer (``cleanup``, the rescue): the windows, read."""
    retention = rules.Retention(30, "default", rules.DEFAULT)
    return rules.desktop_exemption(s.path, retention, NOW - 100 * DAY, NOW) is not None


@pytest.mark.parametrize("name", list(WINDOW_LAYOUTS))
def test_window_columns_answer_like_the_file_windows(tmp_path: Path, name: str) -> None:
    """The index's columns give the answer reading the head/tail windows gives: a
    first entrypoint past the head window exempts nothing there either (the warning
    under ``list`` counted such a session kept, where the sweep deletes it)."""
    tree = ConfigTree(tmp_path / "claude")
    s = _windowed(tree, WINDOW_LAYOUTS[name], NOW - 100 * DAY)
    db = open_db(tmp_path / "index.db")
    refresh(db, [tree.root])
    from_file = _files_say_desktop(s)
    assert _index_says_desktop(db, tree, s) == from_file
    expected = name.split(", ")[1] in (
        "desktop last",
        "desktop first",
        "desktop past the head",
        "desktop in the tail",
        "desktop in the head then cli",
    )
    assert from_file == expected


@pytest.mark.parametrize(("past", "exempt"), [(0, True), (1, False)])
def test_a_first_entrypoint_cut_by_the_head_window_is_not_read(
    tmp_path: Path, past: int, exempt: bool
) -> None:
    """The first entrypoint's line must end inside the first 64 KiB: Claude Code cannot
    parse a line cut by the window's edge. ``past``: bytes of the line beyond the
    window (its newline aside). Incremental: the head is indexed before the rest."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/work/repo", entrypoint=None)
    while len(s.to_bytes()) < rules.WINDOW - 6000:
        s.user("pad " + "x" * 1000)
    start = len(s.to_bytes())
    s.entrypoint = D
    s.user("")
    short = len(s.to_bytes()) - start - 1  # the line without its newline, prompt empty
    s.entries.pop()
    s.user("y" * (rules.WINDOW - start - short + past))
    assert start + len(s.to_bytes()) - start - 1 == rules.WINDOW + past
    s.write(mtime=NOW - 100 * DAY)
    db = open_db(tmp_path / "index.db")
    refresh(db, [tree.root])
    s.entrypoint = "cli"
    for n in range(20):
        s.user(f"later {n} " + "z" * PAD)
    s.append(mtime=NOW - 100 * DAY)
    refresh(db, [tree.root])
    assert _files_say_desktop(s) is exempt
    assert _index_says_desktop(db, tree, s) is exempt


def _glue(s: Any, first: str | None, glued: str, *, prompt: str = "glued") -> None:
    """A glued line: a user record with entrypoint ``first``, and, with no newline
    between, a title record carrying entrypoint ``glued`` (another writer's append that
    completed this line). Claude Code parses neither half; the title alone is still
    found by the tail's string search (reader.glued_record)."""
    s.entrypoint = first
    s.user(prompt)
    user = s.entries.pop()
    title = s.meta("custom-title", customTitle="Glued", entrypoint=glued)
    s.entries.pop()
    s.raw(orjson.dumps(user) + orjson.dumps(title) + b"\n")


# Each step: (entrypoint, padding records) as in WINDOW_LAYOUTS, or ("glue", first, glued).
GLUED_LAYOUTS: dict[str, tuple[list[tuple[Any, ...]], bool]] = {
    "glued in the head, desktop glued on": ([("glue", "cli", D), ("cli", 0)], False),
    "glued in the head, desktop glued on, large": ([("glue", "cli", D), ("cli", 20)], False),
    "glued in the head, desktop first, cli glued on": (
        [("glue", D, "cli"), (D, 0), ("cli", 20)],
        True,
    ),
    "glued last, after the head window": ([("cli", 20), ("glue", "cli", D)], False),
    "glued last, desktop first, cli glued on": ([("cli", 20), (D, 0), ("glue", D, "cli")], True),
    "glued across the head window's edge": ([(None, 6), ("glue", D, D), ("cli", 20)], False),
}


@pytest.mark.parametrize("name", list(GLUED_LAYOUTS))
def test_a_glued_line_gives_the_window_test_no_entrypoint(tmp_path: Path, name: str) -> None:
    """Two records on one line (no newline between) are one bad line: the windows as
    Claude Code's sweep reads them take no entrypoint from it, and neither may the
    index's window columns (the second record's once exempted what the sweep deletes,
    and hid a desktop entrypoint on the next line from the head's answer)."""
    layout, expected = GLUED_LAYOUTS[name]
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/work/repo", entrypoint="cli")
    for i, step in enumerate(layout):
        if step[0] == "glue":
            _glue(s, step[1], step[2], prompt=f"glued {i} " + "g" * (PAD if i else 0))
            continue
        entrypoint, pads = step
        s.entrypoint = entrypoint
        s.user(f"part {i}")
        for n in range(pads):
            s.user(f"pad {i}.{n} " + "x" * PAD)
    data = s.to_bytes()
    s.write(mtime=NOW - 100 * DAY)
    if "edge" in name:  # the glued line starts in the head and ends past it
        start = data.index(b"glued 1 ")
        assert start < rules.WINDOW < data.index(b"\n", start)
    db = open_db(tmp_path / "index.db")
    refresh(db, [tree.root])
    assert _files_say_desktop(s) is expected
    assert _index_says_desktop(db, tree, s) is expected


@pytest.mark.parametrize(
    "args",
    [
        ["list", "--scope", "all"],
        ["list", "--scope", "all", "--json"],
        ["search", "desktop", "--scope", "all"],
        ["resolve", "SESSION"],
        ["stats"],
        ["stats", "--json"],
        ["from-pr", "https://github.com/acme/app/pull/7"],
    ],
)
@pytest.mark.parametrize("state", ["all expired", "nothing expired", "mtimes in the future"])
def test_reading_commands_open_no_transcript(tmp_path: Path, args: list[str], state: str) -> None:
    """list (with its expiring warning), search, resolve, stats (with its cleanup
    summary) and from-pr answer from the index: no transcript is opened, whatever the
    cleanup state (every session expired, desktop ones among them, one released), nor
    when the files' mtimes lie ahead of the clock (set, or copied from a skewed
    machine): such a file never looked quiet, and every command read it again."""
    tree = ConfigTree(tmp_path / "claude")
    days_ago = {"all expired": 400, "nothing expired": 1, "mtimes in the future": -2}[state]
    mtime = time.time() - days_ago * DAY
    plain = _session(tree, "plain cli work", mtime)
    plain_pr = tree.session(cwd="/work/repo")
    plain_pr.user("see the pull request")
    plain_pr.pr_link(number=7, url="https://github.com/acme/app/pull/7", repository="acme/app")
    plain_pr.write(mtime=mtime)
    _session(tree, "desktop chat", mtime, entrypoint="claude-desktop")
    _windowed(tree, [("cli", 10), (D, 1)], mtime)  # desktop only in the tail window
    released = _session(tree, "released desktop", mtime, entrypoint="local-agent")
    tree.write_file(
        f"projects/{released.project_dir.name}/{released.session_id}.desktop-released.json",
        b'{"released": true}',
        mtime=mtime,
    )
    db = tmp_path / "index.db"
    assert _run(["index"], tree.root, db).exit_code == 0
    argv = [plain.session_id if a == "SESSION" else a for a in args]
    with files_opened() as opened:
        result = _run(argv, tree.root, db)
    assert result.exit_code == 0, result.output
    transcripts = [p for p in opened if p.startswith(str(tree.root)) and p.endswith(".jsonl")]
    assert transcripts == []
    if args[0] == "list" and state == "all expired":
        # the warning counts what the sweep deletes: not the desktop ones, not released
        assert "warning: 3 listed sessions" in result.stderr


@pytest.mark.parametrize(
    "args", [["cleanup"], ["cleanup", "--json"], ["cleanup", "--format", "csv"]]
)
def test_the_dry_run_opens_no_transcript_the_index_holds(tmp_path: Path, args: list[str]) -> None:
    """The dry run answers the desktop window test from the index where the index holds
    the file as it is (the row's stat, every byte folded, no bad line), as ``list``'s
    warning does: it read the head and tail of each expired transcript, twice when the
    sweep was held back a day (18,846 reads, ~1.4 s of 10.8 s at 20,000 sessions). A
    project-level ``*.jsonl`` that is no session is never indexed: its windows are read.
    The plan is the one reading every file gives."""
    tree = ConfigTree(tmp_path / "claude")
    mtime = time.time() - 400 * DAY
    _session(tree, "plain cli work", mtime, folder=True)
    _session(tree, "kept work", mtime, tag="keep")
    _session(tree, "desktop chat", mtime, entrypoint="claude-desktop")
    released = _session(tree, "released desktop", mtime, entrypoint="local-agent")
    tree.write_file(
        f"projects/{released.project_dir.name}/{released.session_id}.desktop-released.json",
        b'{"released": true}',
        mtime=mtime,
    )
    for layout in WINDOW_LAYOUTS.values():
        _windowed(tree, layout, mtime)
    legacy = tree.write_file(
        f"projects/{released.project_dir.name}/agent-0a1b2c3d.jsonl",
        b'{"type":"user","entrypoint":"claude-desktop","message":{"content":"x"}}\n',
        mtime=mtime,
    )
    (tree.root / ".last-cleanup").write_text("x")  # the sweep held back: judged at +24 h
    db = tmp_path / "index.db"
    assert _run(["index"], tree.root, db).exit_code == 0
    with files_opened() as opened:
        result = _run(args, tree.root, db)
    assert result.exit_code == 0, result.output
    transcripts = [p for p in opened if p.startswith(str(tree.root)) and p.endswith(".jsonl")]
    assert transcripts == [str(legacy)]  # the one file the index does not hold
    dry = _stdout_json(_run(["cleanup", "--json"], tree.root, db))
    with_files = cl.plan_cleanup(
        open_db(db), [tree.root], cwd=None, now=time.time(), managed=None
    ).as_dict()
    for plan in ("expired", "protected", "exempt"):
        said = [e["file_path"] for e in dry["config_dirs"][0][plan]]
        read = [e["file_path"] for e in with_files["config_dirs"][0][plan]]
        assert said == read, plan
    assert len(dry["config_dirs"][0]["exempt"]) == 7  # 5 layouts, the chat, the legacy file


# Files whose window test the index cannot answer as the sweep reads them: each is read.
NOT_HELD = {
    # the index repairs the line and sees its desktop entrypoint; the sweep cannot parse it
    "invalid UTF-8 on the desktop line": b'{"type":"user","entrypoint":"claude-desktop","x":"\xff"}\n',
    # one line holding two records: counted bad, read from the file (derivation 36)
    "glued line": b'{"type":"user","entrypoint":"cli"}{"type":"user","entrypoint":"claude-desktop"}\n',
    # appended after the index last read it (no refresh): the row is not the file's
    "appended since indexed": b'{"type":"user","entrypoint":"claude-desktop"}\n',
}


@pytest.mark.parametrize("case", list(NOT_HELD))
def test_the_dry_run_reads_the_files_the_index_does_not_hold_as_they_are(
    tmp_path: Path, case: str
) -> None:
    """Where the index's row is not the file's (appended since, no refresh) or the fold
    repaired or skipped a line, the window test reads the file: the plan is the one
    reading every file gives."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "some work", NOW - 100 * DAY)
    if case != "appended since indexed":
        s.raw(NOT_HELD[case])
        s.write(mtime=NOW - 100 * DAY)
    db = open_db(tmp_path / "index.db")
    refresh(db, [tree.root])
    if case == "appended since indexed":
        with open(s.path, "ab") as fh:
            fh.write(NOT_HELD[case])
        os.utime(s.path, (NOW - 100 * DAY, NOW - 100 * DAY))
    plans = [
        cl.plan_cleanup(
            db, [tree.root], cwd="/work/repo", now=NOW, managed=None, index_windows=index
        ).as_dict()
        for index in (True, False)
    ]
    assert plans[0] == plans[1]
    exempt = [e["session_id"] for e in plans[0]["config_dirs"][0]["exempt"]]
    assert exempt == ([s.session_id] if case == "appended since indexed" else [])


@pytest.mark.parametrize("days", ["99999999999999", "99999999", "2932897"])
def test_days_beyond_any_date_say_so(tmp_path: Path, days: str) -> None:
    """``--days 99999999999999`` printed "Cutoff: None", ``--days 99999999`` a date in
    the year -271764."""
    tree = ConfigTree(tmp_path / "claude")
    _session(tree, "some work", time.time() - 40 * DAY)
    result = _run(["cleanup", "--days", days], tree.root, tmp_path / "index.db")
    assert result.exit_code == 0, result.output
    assert f"Cutoff: none (--days = {days} reaches before any date)." in result.output
    assert "None" not in result.output and "Cutoff: -" not in result.output


@pytest.mark.parametrize("command", [["cleanup"], ["archive", "--to", "{arch}"]])
def test_cleanup_and_archive_tables_tell_ids_apart(tmp_path: Path, command: list[str]) -> None:
    """Their id columns were cut at 8 characters, as the listings' were."""
    tree = ConfigTree(tmp_path / "claude")
    old = time.time() - 45 * DAY
    ids = ["abcdef01-2345-4000-8000-000000000001", "abcdef01-2399-4000-8000-000000000002"]
    for sid in ids:
        s = tree.session(cwd="/work/repo", session_id=sid)
        s.user("old work")
        s.write(mtime=old)
    args = [a.format(arch=tmp_path / "arch") for a in command]
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db"), *args]
    )
    assert result.exit_code == 0, result.output
    shown = {line.split()[-1] for line in result.stdout.splitlines() if "abcdef01" in line}
    assert shown == {"abcdef01-234", "abcdef01-239"}


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_cleanup_and_archive_print_one_row_per_session_as_jsonl_or_csv(
    tmp_path: Path, fmt: str
) -> None:
    """cli.md: every command that prints sessions takes jsonl and csv; cleanup and
    archive took table and json only. A row per session the report names, the same
    columns on every row (one CSV header), what --apply did in ``status``."""
    import csv
    import io

    tree = ConfigTree(tmp_path / "claude")
    now = time.time()
    made = {
        "expired": _session(tree, "old notes", now - 40 * DAY),
        "protected": _session(tree, "precious notes", now - 41 * DAY, tag="keep"),
        "exempt": _session(tree, "desktop chat", now - 42 * DAY, entrypoint="claude-desktop"),
    }
    _session(tree, "young notes", now - 2 * DAY)
    db = tmp_path / "index.db"

    def rows(*args: str) -> list[dict[str, Any]]:
        result = _run([*args, "--format", fmt], tree.root, db)
        assert result.exit_code == 0, result.output
        if fmt == "jsonl":
            return [json.loads(line) for line in result.stdout.splitlines()]
        return list(csv.DictReader(io.StringIO(result.stdout)))

    planned = rows("cleanup")
    assert {r["plan"]: r["session_id"] for r in planned} == {
        plan: s.session_id for plan, s in made.items()
    }
    assert len({tuple(r) for r in planned}) == 1  # one set of columns
    assert all(not r["status"] for r in planned)  # a dry run did nothing

    archived = rows("archive", "--to", str(tmp_path / "keep"))
    assert {r["session_id"] for r in archived} >= {made["expired"].session_id}
    assert {r["status"] for r in archived} == {"archived"}

    applied = rows("cleanup", "--apply")
    by_plan = {r["plan"]: r for r in applied}
    assert by_plan["expired"]["status"] == "deleted"
    assert not made["expired"].path.exists() and made["protected"].path.exists()


def test_the_list_warning_reads_the_settings_of_the_cwd_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``list --cwd P`` warned with the settings of the process's directory, not P's
    (whose .claude/settings.json may shorten the period), while ``cleanup --cwd P``
    read P's: run from elsewhere, the warning was missing."""
    project = tmp_path / "project"
    _settings(project / ".claude" / "settings.json", {"cleanupPeriodDays": 5})
    tree = ConfigTree(tmp_path / "claude")
    _session(tree, "four days old", time.time() - 4 * DAY, cwd=str(project))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    db = tmp_path / "index.db"
    monkeypatch.chdir(elsewhere)
    warned = _run(["list", "--scope", "all", "--cwd", str(project)], tree.root, db)
    assert warned.exit_code == 0, warned.output
    assert "1 listed session will be deleted" in warned.stderr
    quiet = _run(["list", "--scope", "all"], tree.root, db)  # from elsewhere: 30 days
    assert "will be deleted" not in quiet.stderr


def test_a_session_stamped_in_the_future_expires_by_its_mtime(tmp_path: Path) -> None:
    """A clock that ran ahead wrote year-2099 timestamps: Claude Code's sweep keys on
    the file's mtime only (cli-sessions §5), so the session expires when its file is
    old, whatever its last timestamp; its last activity (semantics: the last
    timestamp) is what the plan reports, and it exempts nothing."""
    tree = ConfigTree(tmp_path / "claude")
    skewed = tree.session(cwd="/work/repo", start="2099-01-01T00:00:00.000Z")
    skewed.user("written by a skewed clock")
    skewed.assistant("an answer from the future")
    skewed.write(mtime=NOW - 40 * DAY)
    recent = _session(tree, "recent work", NOW - 40 * DAY + 1)
    young = _session(tree, "young work", NOW - DAY)
    db = open_db(tmp_path / "index.db")
    refresh(db, [tree.root])
    plan = act.fresh_plan(db, [tree.root], cwd=str(tmp_path), now=NOW, managed=None)
    (root,) = plan.roots
    assert _ids(root.to_delete) == {skewed.session_id, recent.session_id}
    assert young.session_id not in _ids(root.expired)
    (entry,) = [e for e in root.to_delete if e.session_id == skewed.session_id]
    assert entry.last_activity is not None and entry.last_activity.startswith("2099-")
    assert entry.claude_code_deletes
