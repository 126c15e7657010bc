"""cleanup and archive: every ``*.jsonl`` Claude Code's sweep deletes, not only sessions.

The sweep deletes every old ``projects/<dir>/*.jsonl`` (``reference/cli-sessions.md``
§5.3), including the top-level ``agent-<id>.jsonl`` sidechain transcripts older builds
wrote, which are no sessions (§1: not listed, not resumable). The dry run lists them
apart, ``--apply`` deletes them under the sessions' guards, and the rescue keeps a copy.
CLI tests run on the real clock with every mtime days away from any boundary.
"""

from __future__ import annotations

import json
import os
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from tests.builders import ConfigTree, dumps

DAY = 86400
PARENT = "5b8e2f0a-3c1d-4e6f-9a7b-2d4c6e8f0a1b"


def _sidechain(project: Path, name: str, mtime: float, *, entrypoint: str = "cli") -> Path:
    """A legacy top-level sidechain transcript, as Claude Code before subagents/ wrote it."""
    records = [
        {
            "parentUuid": None,
            "isSidechain": True,
            "userType": "external",
            "cwd": "/work/repo",
            "sessionId": PARENT,
            "version": "1.0.30",
            "agentId": name[len("agent-") : -len(".jsonl")],
            "entrypoint": entrypoint,
            "type": "user",
            "message": {"role": "user", "content": "look for the flaky pangolin test"},
            "uuid": "0f6c2a1e-8d3b-4c5a-9e7f-1a2b3c4d5e6f",
            "timestamp": "2025-06-01T10:00:00.000Z",
        },
        {
            "parentUuid": "0f6c2a1e-8d3b-4c5a-9e7f-1a2b3c4d5e6f",
            "isSidechain": True,
            "userType": "external",
            "cwd": "/work/repo",
            "sessionId": PARENT,
            "version": "1.0.30",
            "agentId": name[len("agent-") : -len(".jsonl")],
            "entrypoint": entrypoint,
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "found it"}]},
            "uuid": "1a7d3b2f-9e4c-4d6b-8f0a-2b3c4d5e6f70",
            "timestamp": "2025-06-01T10:00:05.000Z",
        },
    ]
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(dumps(r) + b"\n" for r in records))
    os.utime(path, (mtime, mtime))
    return path


@pytest.fixture()
def world(tmp_path: Path) -> dict[str, Any]:
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    old = tree.session(cwd="/work/repo")
    old.user("zebra migration plan")
    old.assistant("sure")
    old.write(mtime=now - 45 * DAY)
    young = tree.session(cwd="/work/repo")
    young.user("fresh lemur work")
    young.assistant("ok")
    young.write(mtime=now - 2 * DAY)
    project = old.project_dir
    files = {
        "legacy": _sidechain(project, "agent-1a2b3c4d.jsonl", now - 40 * DAY),
        "desktop": _sidechain(
            project, "agent-9f8e7d6c.jsonl", now - 40 * DAY, entrypoint="claude-desktop"
        ),
        "notes": project / "notes.jsonl",
        "fresh": _sidechain(project, "agent-00ff00ff.jsonl", now - 3 * DAY),
    }
    files["notes"].write_bytes(b'{"note":"scratch"}\n')
    os.utime(files["notes"], (now - 50 * DAY,) * 2)
    tree.write_file(".last-cleanup", b"x", mtime=now - 2 * DAY)
    return {"tree": tree, "old": old, "young": young, "files": files, "tmp": tmp_path}


def _run(world: dict[str, Any], *args: str) -> Any:
    tree = world["tree"]
    return CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(world["tmp"] / "index.db"), *args],
        env={"SESSIONDEX_MANAGED_SETTINGS": str(tree.root / "no-managed.json"), "COLUMNS": "200"},
    )


def test_dry_run_lists_old_non_session_jsonl_apart(world: dict[str, Any]) -> None:
    files = world["files"]
    result = _run(world, "cleanup", "--json", "--cwd", str(world["tmp"]))
    assert result.exit_code == 0, result.output
    (root,) = json.loads(result.stdout)["config_dirs"]
    by_path = {e["file_path"]: e for e in root["expired"]}
    assert set(by_path) == {str(world["old"].path), str(files["legacy"]), str(files["notes"])}
    assert by_path[str(world["old"].path)]["kind"] == "session"
    legacy = by_path[str(files["legacy"])]
    assert legacy["kind"] == "legacy-subagent" and legacy["claude_code_deletes"]
    assert legacy["size"] == files["legacy"].stat().st_size
    assert by_path[str(files["notes"])]["kind"] == "other-jsonl"
    # The desktop exemption is read from the file's head and tail, as for a session.
    assert [e["file_path"] for e in root["exempt"]] == [str(files["desktop"])]
    cc = root["claude_code"]
    assert cc["would_delete_sessions"] == 1
    assert cc["would_delete_files"] == 2
    assert cc["would_delete_file_bytes"] == (
        files["legacy"].stat().st_size + files["notes"].stat().st_size
    )
    assert root["totals"]["sessions"] == 1 and root["totals"]["files"] == 2

    text = _run(world, "cleanup", "--cwd", str(world["tmp"]))
    assert text.exit_code == 0, text.output
    assert "agent-1a2b3c4d.jsonl" in text.output and "notes.jsonl" in text.output
    assert "legacy-subagent" in text.output and "other-jsonl" in text.output
    assert "not sessions (legacy subagent transcripts" in text.output
    assert "agent-00ff00ff" not in text.output  # young: kept


def test_apply_deletes_them_under_the_same_guards(world: dict[str, Any]) -> None:
    files = world["files"]
    link = files["legacy"].with_name("agent-linked00.jsonl")
    outside = world["tmp"] / "outside.jsonl"
    outside.write_bytes(b"{}\n")
    old = time.time() - 60 * DAY
    os.utime(outside, (old, old))
    link.symlink_to(outside)
    result = _run(world, "cleanup", "--apply", "--cwd", str(world["tmp"]))
    assert result.exit_code == 0, result.output
    assert not files["legacy"].exists() and not files["notes"].exists()
    assert f"deleted {files['legacy']}" in result.output
    assert files["desktop"].exists() and files["fresh"].exists()
    assert not world["old"].path.exists() and world["young"].path.exists()
    assert link.is_symlink() and outside.exists()  # never through a symlink
    assert "2 other files" in result.output


def test_apply_keeps_a_file_written_in_the_last_minutes(world: dict[str, Any]) -> None:
    from sessiondex.actions import cleanup as act
    from sessiondex.indexer.db import open_db
    from sessiondex.indexer.refresh import refresh

    tree, files = world["tree"], world["files"]
    db = open_db(world["tmp"] / "lib.db")
    refresh(db, [tree.root])
    plan = act.fresh_plan(db, [tree.root], cwd=str(world["tmp"]), managed=None)
    entry = next(e for e in plan.to_delete if e.file_path == str(files["legacy"]))
    outcomes = act.apply_plan(db, plan, [tree.root], clock=lambda: entry.mtime_ns / 1e9 + 60)
    mine = next(o for o in outcomes if o.file_path == str(files["legacy"]))
    assert mine.status == act.SKIPPED and files["legacy"].exists()


def test_apply_archive_keeps_a_restorable_copy(world: dict[str, Any]) -> None:
    files = world["files"]
    legacy_bytes = files["legacy"].read_bytes()
    legacy_mtime = files["legacy"].stat().st_mtime_ns
    archive = world["tmp"] / "arch"
    result = _run(
        world, "cleanup", "--apply", "--archive", str(archive), "--cwd", str(world["tmp"])
    )
    assert result.exit_code == 0, result.output
    assert not files["legacy"].exists()
    (kept,) = archive.rglob("agent-1a2b3c4d.jsonl*.tar.gz")
    # Laid out as in a config dir: `tar -xzf X -C ~/.claude` puts it back, mtime too.
    back = world["tmp"] / "back"
    with tarfile.open(kept, "r:gz") as tar:
        (member,) = tar.getmembers()
        assert member.name == f"projects/{world['old'].project_dir.name}/agent-1a2b3c4d.jsonl"
        tar.extractall(back, filter="data")
    restored = back / member.name
    assert restored.read_bytes() == legacy_bytes
    assert abs(restored.stat().st_mtime_ns - legacy_mtime) < 1000
    # The archived sessions stay searchable and restorable; the file copy is no session.
    found = _run(world, "search", "zebra", "--scope", "all", "--include-archived", "--json")
    assert found.exit_code == 0, found.output
    back_again = _run(world, "restore", world["old"].session_id)
    assert back_again.exit_code == 0, back_again.output
    assert world["old"].path.exists()


def test_archive_job_keeps_a_copy_once(world: dict[str, Any]) -> None:
    files = world["files"]
    before = {p: p.read_bytes() for p in files.values()}
    archive = world["tmp"] / "arch"
    args = ("archive", "--to", str(archive), "--cwd", str(world["tmp"]), "--json")
    first = _run(world, *args)
    assert first.exit_code == 0, first.output
    results = {r["file_path"]: r for r in json.loads(first.stdout)["results"]}
    assert results[str(files["legacy"])]["status"] == "archived"
    assert results[str(files["notes"])]["status"] == "archived"
    assert str(files["desktop"]) not in results and str(files["fresh"]) not in results
    assert {p: p.read_bytes() for p in files.values()} == before  # nothing changed
    second = _run(world, *args)
    assert second.exit_code == 0, second.output
    again = {r["file_path"]: r for r in json.loads(second.stdout)["results"]}
    assert again[str(files["legacy"])]["status"] == "already-archived"
    assert len(list(archive.rglob("agent-1a2b3c4d.jsonl*.tar.gz"))) == 1
    # The archive dir's refresh does not take the copy for a damaged session archive.
    stats = _run(world, "stats", "--json")
    assert stats.exit_code == 0, stats.output
    assert "holds no session transcript" not in stats.output


def test_a_release_marker_ends_the_desktop_exemption(world: dict[str, Any]) -> None:
    """``<stem>.desktop-released.json`` beside the file releases it, as for a session."""
    desktop = world["files"]["desktop"]
    desktop.with_name("agent-9f8e7d6c.desktop-released.json").write_bytes(b"{}")
    result = _run(world, "cleanup", "--json", "--cwd", str(world["tmp"]))
    (root,) = json.loads(result.stdout)["config_dirs"]
    assert str(desktop) in {e["file_path"] for e in root["expired"]}
    assert root["exempt"] == []


def test_a_killed_copy_leaves_a_temp_the_next_run_removes(world: dict[str, Any]) -> None:
    from sessiondex.transcripts.archive import FILE_COPIES_DIR, remove_stale_temps

    archive = world["tmp"] / "arch"
    folder = archive / world["old"].project_dir.name / FILE_COPIES_DIR
    folder.mkdir(parents=True)
    left = folder / ".agent-1a2b3c4d.jsonl.k3x9_q2z.tmp"
    mine = folder / "agent-1a2b3c4d.jsonl.tar.gz"
    for path in (left, mine):
        path.write_bytes(b"x")
        os.utime(path, (time.time() - 3600,) * 2)
    assert remove_stale_temps(archive) == [left]
    assert mine.exists()


# ------------------------------------------------------- what the counts say they count


def test_watch_rescue_log_counts_sessions_and_other_files_apart(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daily rescue's log line said "archived 3 session(s)" for one session and two
    files that are no sessions (the legacy ``agent-*.jsonl`` and ``notes.jsonl``)."""
    from sessiondex.cli.archive_cmd import watch_rescue
    from sessiondex.index import Index
    from sessiondex.transcripts.archive import default_archive_dir

    tree = world["tree"]
    monkeypatch.setenv("SESSIONDEX_MANAGED_SETTINGS", str(tree.root / "no-managed.json"))
    monkeypatch.chdir(world["tmp"])
    logged: list[str] = []
    with Index(world["tmp"] / "index.db", [tree.root]) as index:
        assert watch_rescue(index, logged.append).poll()
    assert logged == [
        "archived 1 session and 2 other files (not sessions) Claude Code's sweep"
        f" deletes within 3 days into {default_archive_dir()}"
    ]


@pytest.mark.parametrize(
    ("sessions", "files", "said"),
    [
        (0, 0, "0 sessions"),
        (3, 0, "3 sessions"),
        (1, 0, "1 session"),
        (1, 2, "1 session and 2 other files (not sessions)"),
        (0, 2, "2 other files (not sessions)"),
        (0, 1, "1 other file (not sessions)"),
    ],
)
def test_sessions_and_files_wording(sessions: int, files: int, said: str) -> None:
    from sessiondex.cli.output import sessions_and_files

    assert sessions_and_files(sessions, files) == said


def test_archive_failures_count_sessions_and_other_files_apart(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two files that are no sessions failing to archive made "2 session(s) could not be
    archived"."""
    from sessiondex.transcripts import archive
    from sessiondex.transcripts.archive import ArchiveError

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise ArchiveError("disk full")

    monkeypatch.setattr(archive, "write_file_archive", refused)
    result = _run(world, "archive", "--to", str(world["tmp"] / "arch"), "--cwd", str(world["tmp"]))
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == (
        "Error: 2 other files (not sessions) could not be archived (see above)"
    )


@pytest.mark.parametrize(
    "error", [PermissionError(13, "Permission denied"), "refused"], ids=["oserror", "refused"]
)
def test_cleanup_failures_count_sessions_and_other_files_apart(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, error: Any
) -> None:
    """Two files that are no sessions failing to be deleted made "2 session(s) could not
    be cleaned up"; one failing with an OSError was also counted as a session."""
    from sessiondex.transcripts import write

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise error if isinstance(error, OSError) else write.WriteRefused(error)

    monkeypatch.setattr(write, "delete_project_jsonl", refused)
    result = _run(world, "cleanup", "--apply", "--cwd", str(world["tmp"]))
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == (
        "Error: 2 other files (not sessions) could not be cleaned up (see above)"
    )
    assert world["files"]["legacy"].exists() and not world["old"].path.exists()


def test_stats_and_cleanup_say_their_archive_counts_are_sessions(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The archive's ``protected`` / ``at risk`` counts cover sessions only (the index
    holds no row for a file that is no session): "archive: 0 protected, 1 at risk" read
    as if the two old files the sweep also deletes were counted. The ``cleanup:`` line
    of ``stats`` and the ``list`` warning name sessions already."""
    monkeypatch.chdir(world["tmp"])  # stats reads the settings of the process's cwd
    stats = _run(world, "stats")
    assert stats.exit_code == 0, stats.output
    (line,) = [x for x in stats.output.splitlines() if x.startswith("cleanup:")]
    assert line.startswith("cleanup: 1 session (")
    assert "; archive: 0 sessions protected, 1 at risk (" in line
    dry = _run(world, "cleanup", "--cwd", str(world["tmp"]))
    assert "Archive: 0 sessions protected, 1 at risk (" in dry.output
    listed = _run(world, "list", "--scope", "all", "--cwd", str(world["tmp"]))
    assert "warning: 1 listed session will be deleted" in listed.stderr


@pytest.mark.parametrize(
    ("settings", "days", "said"),
    [
        # Claude Code's own period: its sweep deletes them, and says so
        ({}, None, "Claude Code's sweep deletes every old *.jsonl of a project dir."),
        # --days with the sweep on: ours, at the sweep's reach
        (
            {},
            "30",
            "--days 30 covers them as Claude Code's sweep would at that period (it deletes"
            " every old *.jsonl of a project dir).",
        ),
        # --days with the sweep off (an invalid value): nothing but --apply deletes them
        (
            {"cleanupPeriodDays": 0},
            "30",
            "--days 30 covers them as Claude Code's sweep would at that period (it deletes"
            " every old *.jsonl of a project dir); Claude Code's sweep is off here, so only"
            " cleanup --apply deletes them.",
        ),
    ],
    ids=["settings", "days", "days-sweep-off"],
)
def test_days_says_whose_cleanup_takes_the_other_files(
    world: dict[str, Any], settings: dict[str, Any], days: str | None, said: str
) -> None:
    """``cleanup --days N`` is our own cleanup: it takes the old ``*.jsonl`` files that
    are no sessions as Claude Code's sweep would at N days, also when Claude Code skips
    its sweep (an invalid cleanupPeriodDays). The dry run said "Claude Code's sweep
    deletes every old *.jsonl" even then: a surprise, since nothing but ``--apply``
    would delete them. The JSON says per entry whether Claude Code's sweep deletes it."""
    world["tree"].write_settings(settings)
    args = ("cleanup", "--cwd", str(world["tmp"]), *(("--days", days) if days else ()))
    text = _run(world, *args)
    assert text.exit_code == 0, text.output
    (line,) = [x for x in text.output.splitlines() if ", too: 2 files" in x]
    assert line.endswith(said), line
    assert "notes.jsonl" in text.output and "agent-1a2b3c4d.jsonl" in text.output
    (root,) = json.loads(_run(world, *args, "--json").stdout)["config_dirs"]
    files = [e for e in root["expired"] if e["kind"] != "session"]
    assert len(files) == 2
    assert all(e["claude_code_deletes"] == ("cleanupPeriodDays" not in settings) for e in files)


def test_the_exempt_line_counts_a_desktop_file_as_no_session(world: dict[str, Any]) -> None:
    """A legacy ``agent-*.jsonl`` of Claude Code Desktop is exempt as a desktop session
    is; the dry run said "Exempt: 1 desktop session(s)" for it."""
    text = _run(world, "cleanup", "--cwd", str(world["tmp"]))
    assert text.exit_code == 0, text.output
    assert (
        "  Exempt: 1 other desktop file (not sessions) past the cutoff; Claude Code's"
        " sweep keeps them (not counted)." in text.output.splitlines()
    )


#: The totals of a cleanup plan, and the list (and kinds) each one counts.
TOTALS = {
    "sessions": ("expired", True, "n"),
    "bytes": ("expired", True, "size"),
    "files": ("expired", False, "n"),
    "file_bytes": ("expired", False, "size"),
    "protected": ("protected", True, "n"),
    "protected_bytes": ("protected", True, "size"),
    "exempt": ("exempt", True, "n"),
    "exempt_bytes": ("exempt", True, "size"),
    "exempt_files": ("exempt", False, "n"),
    "exempt_file_bytes": ("exempt", False, "size"),
}


def _totals_of(plans: list[dict[str, Any]]) -> dict[str, int]:
    """Each total as the entries of its list (sessions, or files that are none) add up."""
    out = {}
    for name, (plan, sessions, what) in TOTALS.items():
        entries = [e for root in plans for e in root[plan] if (e["kind"] == "session") is sessions]
        out[name] = len(entries) if what == "n" else sum(e["size"] for e in entries)
    return out


@pytest.mark.parametrize(
    ("extra", "exempt_sessions", "protected"),
    [
        ([], 0, 0),
        ([("claude-desktop", None)], 1, 0),
        ([("claude-desktop", "keep"), ("claude-desktop-3p", None)], 2, 0),
        ([("cli", "keep")], 0, 1),
        ([("cli", "keep"), ("claude-desktop", "keep")], 1, 1),
    ],
    ids=["files-only", "desktop-session", "desktop-tagged-keep", "protected", "both"],
)
def test_json_totals_are_the_lists_counted_by_kind(
    world: dict[str, Any], extra: list[tuple[str, str | None]], exempt_sessions: int, protected: int
) -> None:
    """``totals.exempt`` counted the exempt desktop sessions and the exempt files that
    are no sessions together (``totals.sessions`` and ``totals.files`` count the expired
    ones apart): a desktop session and a desktop ``agent-*.jsonl`` said "exempt": 2.
    Every total is now its list's entries of one kind, in each config dir and overall.
    A desktop session tagged keep is exempt (the sweep keeps it), not protected, and its
    entry said ``"protected": true`` in the ``exempt`` list, which totals.protected left
    out."""
    now = time.time()
    for i, (entrypoint, tag) in enumerate(extra):
        s = world["tree"].session(cwd="/work/repo", entrypoint=entrypoint)
        s.user(f"old pangolin notes {i}")
        s.assistant("noted")
        if tag is not None:
            s.meta("tag", tag=tag, sessionId=s.session_id)
        s.write(mtime=now - (41 + i) * DAY)
    result = _run(world, "cleanup", "--json", "--cwd", str(world["tmp"]))
    assert result.exit_code == 0, result.output
    plan = json.loads(result.stdout)
    (root,) = plan["config_dirs"]
    assert root["totals"] == _totals_of([root])
    assert plan["totals"] == _totals_of(plan["config_dirs"])
    # an entry's ``protected`` says which list it is in: the tag keeps it from --apply
    for name in ("expired", "protected", "exempt"):
        assert {e["protected"] for e in root[name]} <= {name == "protected"}, name
    totals = root["totals"]
    assert (totals["exempt"], totals["exempt_files"]) == (exempt_sessions, 1)
    assert (totals["protected"], totals["sessions"], totals["files"]) == (protected, 1, 2)
