"""archive / restore / the daily job (issue 22): rescue sessions before Claude Code's
sweep deletes them, and put them back byte for byte.

Library tests use one fixed ``NOW``; CLI tests run on the real clock with every mtime
at least a day from any boundary, so nothing depends on how long a test takes.
"""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.actions import schedule
from sessiondex.actions.archive import ALREADY, ARCHIVED, default_archive_dir
from sessiondex.cli.archive_cmd import watch_rescue
from sessiondex.cli.main import cli
from sessiondex.index import Index
from sessiondex.query.resolve import NotFound
from tests.builders import ConfigTree, run_cli_in_bind_mount

NOW = 1_800_000_000.0
DAY = 86400


def _session(tree: ConfigTree, text: str, mtime: float, **kwargs: Any) -> Any:
    s = tree.session(**kwargs)
    s.user(text)
    s.assistant(f"answer about {text}")
    s.write(mtime=mtime)
    return s


def _with_folder(s: Any, mtime: float) -> None:
    """A subagent and a tool result in the session's ``<id>/`` folder."""
    turn = s.assistant("delegating", tool_uses=[("Task", {"prompt": "sub"})])
    sub = s.subagent(agent_id="a1b2c3", tool_use_id=turn.tool_use_ids[0])
    sub.user("subagent digs through the walrus logs")
    sub.assistant("done")
    result = s.project_dir / s.session_id / "tool-results" / "r1.txt"
    result.parent.mkdir(parents=True, exist_ok=True)
    result.write_bytes(b"tool output\n")
    os.utime(result, (mtime, mtime))
    s.write(mtime=mtime)


def _tree_state(base: Path) -> dict[str, tuple[Any, ...]]:
    """Every path under ``base`` with its bytes (or link target) and mtime: what
    "nothing written into the config dir" compares."""
    out: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if os.path.islink(path):
                content: Any = "->" + os.readlink(path)
            elif os.path.isdir(path):
                content = None
            else:
                content = Path(path).read_bytes()
            out[os.path.relpath(path, base)] = (content, st.st_mtime_ns)
    return out


def _run(tree: ConfigTree, db: Path, *args: str) -> Any:
    return CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(db), *args],
        env={"SESSIONDEX_MANAGED_SETTINGS": str(tree.root / "no-managed.json")},
    )


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _index(tree: ConfigTree, tmp_path: Path) -> Index:
    return Index(tmp_path / "index.db", [tree.root])


def _archive(index: Index, tmp_path: Path, now: float = NOW, **options: Any) -> Any:
    return index.archive(now=now, archive_dir=tmp_path / "arch", managed=None, **options)


# --------------------------------------------------------------------------- the window

# (settings, age in days, entrypoint) → archived by `archive --expiring-within 3d`
WINDOW_CASES = [
    pytest.param(None, 29, "cli", True, id="29d-of-30-expires-in-1d"),
    pytest.param(None, 10, "cli", False, id="10d-of-30"),
    pytest.param(None, 26.5, "cli", False, id="26.5d-of-30-expires-in-3.5d"),
    pytest.param(None, 45, "cli", True, id="already-expired"),
    pytest.param(None, 45, "claude-desktop", False, id="desktop-exempt"),
    pytest.param({"cleanupPeriodDays": 7}, 5, "cli", True, id="user-period-7"),
    pytest.param({"cleanupPeriodDays": 0}, 45, "cli", False, id="invalid-period-skips-sweep"),
    pytest.param({"cleanupPeriodDays": 90}, 45, "cli", False, id="user-period-90"),
]


@pytest.mark.parametrize(("settings", "age", "entrypoint", "archived"), WINDOW_CASES)
def test_archive_takes_what_the_sweep_deletes_within_the_window(
    tmp_path: Path, settings: Any, age: float, entrypoint: str, archived: bool
) -> None:
    tree = ConfigTree(tmp_path / "claude")
    if settings is not None:
        tree.write_settings(settings)
    s = _session(tree, "a session", NOW - age * DAY, entrypoint=entrypoint)
    with _index(tree, tmp_path) as index:
        run = _archive(index, tmp_path, window=3 * DAY)
    assert [r.session_id for r in run.results if r.status == ARCHIVED] == (
        [s.session_id] if archived else []
    )


def test_an_archive_dir_named_gets_its_own_copy(tmp_path: Path) -> None:
    """``archive --to DIR2`` after a run into DIR1 said "already archived" (in DIR1) and
    wrote nothing into the dir the user named; "already archived" is per archive dir."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "a session", NOW - 29 * DAY)
    first, second = tmp_path / "first", tmp_path / "second"
    with _index(tree, tmp_path) as index:

        def run(directory: Path, **options: Any) -> list[tuple[str, str | None]]:
            done = index.archive(now=NOW, archive_dir=directory, managed=None, **options)
            return [(r.status, r.archive) for r in done.results if r.session_id == s.session_id]

        (status, in_first), *_ = run(first)
        assert status == ARCHIVED and in_first and in_first.startswith(str(first))
        assert run(second, dry_run=True) == [("would-archive", None)]
        (status, in_second), *_ = run(second)
        assert status == ARCHIVED and in_second and in_second.startswith(str(second))
        assert run(second) == [(ALREADY, in_second)]
        assert run(first) == [(ALREADY, in_first)]


# --------------------------------------------------------------------------- versions


def test_unchanged_is_not_archived_again_and_a_grown_session_gets_a_new_version(
    tmp_path: Path,
) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "narwhal migration", NOW - 29 * DAY)
    first_bytes = s.path.read_bytes()
    with _index(tree, tmp_path) as index:
        first = _archive(index, tmp_path)
        assert [r.status for r in first.results] == [ARCHIVED]
        again = _archive(index, tmp_path, now=NOW + 3600)
        assert [r.status for r in again.results] == [ALREADY]
        assert again.results[0].archive == first.results[0].archive
        # resumed once more, then left alone: old again, and grown
        s.user("one more question about the okapi")
        s.append(mtime=NOW - 28.5 * DAY)
        grown = _archive(index, tmp_path, now=NOW + 7200)
        assert [r.status for r in grown.results] == [ARCHIVED]
        assert Path(grown.results[0].archive or "").name == f"{s.session_id}-2.tar.gz"
        assert sorted(p.name for p in (tmp_path / "arch").rglob("*.tar.gz")) == [
            f"{s.session_id}-2.tar.gz",
            f"{s.session_id}.tar.gz",
        ]
        # while the transcript exists, the session is listed once, live
        hits = index.search("narwhal", scope="all", include_archived=True)
        assert [h["file_path"] for h in hits] == [str(s.path)]
        # the sweep deletes it: the newest version takes over, once
        grown_bytes = s.path.read_bytes()
        s.path.unlink()
        index.refresh()
        for query in ("narwhal", "okapi"):
            hits = index.search(query, scope="all", include_archived=True)
            assert [h["file_path"] for h in hits] == [grown.results[0].archive]
        assert index.search("narwhal", scope="all") == []
        # restore brings back the newest version (the older one is kept in the archive)
        restored = index.restore(s.session_id)
    assert s.path.read_bytes() == grown_bytes != first_bytes
    assert restored.archive == grown.results[0].archive


# --------------------------------------------------------------------------- the CLI


def test_cli_rescue_sweep_restore_round_trip(tmp_path: Path) -> None:
    """The issue's must-hold: a 29-day-old session under cleanupPeriodDays 30 is
    archived, a 10-day-old one is not, nothing is written into the config dir; after
    the sweep it is found with --include-archived, and restore puts it back byte for
    byte; a second run archives nothing."""
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    tree.write_settings({"cleanupPeriodDays": 30})
    old = _session(tree, "zebra migration plan", now - 29 * DAY)
    _with_folder(old, now - 29 * DAY)
    young = _session(tree, "lemur refactor", now - 10 * DAY)
    db = tmp_path / "index.db"
    assert "1 listed session will be deleted" in _run(tree, db, "list", "--scope", "all").stderr
    before = _tree_state(tree.root)
    original = {p: v for p, v in before.items() if old.session_id in p}
    counts = ("sessions", "visible_sessions", "projects", "files", "messages_indexed")
    live_counts = {k: _json(_run(tree, db, "stats", "--json"))[k] for k in counts}

    run = _json(_run(tree, db, "archive", "--expiring-within", "3d", "--json"))
    assert [(r["session_id"], r["status"]) for r in run["results"]] == [
        (old.session_id, "archived")
    ]
    archive = default_archive_dir() / old.project_dir.name / f"{old.session_id}.tar.gz"
    assert run["results"][0]["archive"] == str(archive) and archive.is_file()
    assert _tree_state(tree.root) == before  # nothing written into the config dir

    again = _json(_run(tree, db, "archive", "--json"))
    assert [r["status"] for r in again["results"]] == ["already-archived"]
    assert sorted(default_archive_dir().rglob("*.tar.gz")) == [archive]
    # archived: no warning under list; stats and cleanup count it as protected
    listed = _run(tree, db, "list", "--scope", "all")
    assert listed.exit_code == 0 and "will be deleted" not in listed.stderr
    whole = _json(_run(tree, db, "stats", "--json"))
    stats = whole["cleanup"]["archive"]
    assert (stats["protected"], stats["at_risk"]) == (1, 0) and stats["last_run"]
    # the archived copy of a live session is that session, counted once
    assert {k: whole[k] for k in counts} == live_counts
    assert "Archive: 1 session protected, 0 at risk" in _run(tree, db, "cleanup").output
    # listed once (live) even with --include-archived; resolve is not ambiguous
    both = _json(
        _run(tree, db, "search", "zebra", "--scope", "all", "--include-archived", "--json")
    )
    assert [r["file_path"] for r in both] == [str(old.path)]
    assert _run(tree, db, "resolve", old.session_id, "--include-archived").exit_code == 0

    # Claude Code's sweep deletes the transcript and its folder
    old.path.unlink()
    shutil.rmtree(old.project_dir / old.session_id)
    gone = _run(tree, db, "search", "zebra", "--scope", "all", "--json")
    assert (gone.exit_code, json.loads(gone.stdout)) == (1, [])  # no match: exit 1, as grep
    found = _json(
        _run(tree, db, "search", "walrus", "--scope", "all", "--include-archived", "--json")
    )
    assert [(r["session_id"], r["file_path"]) for r in found] == [(old.session_id, str(archive))]
    # swept: the archived version is the session now, still counted once
    swept = _json(_run(tree, db, "stats", "--json"))
    assert (swept["sessions"], swept["projects"]) == (
        live_counts["sessions"],
        live_counts["projects"],
    )

    restored = _run(tree, db, "restore", old.session_id)
    assert restored.exit_code == 0, restored.output
    assert f"restored {old.path}" in restored.output
    assert {p: v for p, v in _tree_state(tree.root).items() if old.session_id in p} == original
    live = _json(_run(tree, db, "search", "zebra", "--scope", "all", "--json"))
    assert [r["file_path"] for r in live] == [str(old.path)]
    # never over an existing transcript
    refused = _run(tree, db, "restore", old.session_id)
    assert refused.exit_code == 1 and "nothing restored" in refused.output
    missing = _run(tree, db, "restore", young.session_id)
    assert missing.exit_code == 1 and "No archived session" in missing.output


def test_restore_refuses_a_leftover_folder_and_writes_nothing(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "capybara notes", NOW - 40 * DAY)
    _with_folder(s, NOW - 40 * DAY)
    with _index(tree, tmp_path) as index:
        _archive(index, tmp_path)
        s.path.unlink()  # the transcript went, its folder stayed
        index.refresh()
        before = _tree_state(tree.root)
        from sessiondex.transcripts.archive import RestoreRefused

        with pytest.raises(RestoreRefused, match="already exists"):
            index.restore(s.session_id)
    assert _tree_state(tree.root) == before


@pytest.mark.parametrize("member", ["a file", "a folder"])
def test_restore_writes_nothing_through_a_link_an_archive_holds(
    tmp_path: Path, member: str
) -> None:
    """A doctored archive: a link member in the folder, then a member "under" it. It was
    written through the link, outside the config dir (helper 129)."""
    import io
    import tarfile

    from sessiondex.transcripts.archive import ArchiveError, restore_session_archive

    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "doctored", NOW - 40 * DAY)
    outside = tmp_path / "outside"
    outside.mkdir()
    prefix = f"projects/{s.project_dir.name}/{s.session_id}"
    archive = tmp_path / "doctored.tar.gz"
    with tarfile.open(archive, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        tar.add(s.path, arcname=prefix + ".jsonl")
        folder = tarfile.TarInfo(prefix)
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        link = tarfile.TarInfo(prefix + "/a")
        link.type, link.linkname = tarfile.SYMTYPE, str(outside)
        tar.addfile(link)
        under = tarfile.TarInfo(prefix + ("/a/evil.txt" if member == "a file" else "/a/sub"))
        if member == "a file":
            under.size = 6
            tar.addfile(under, io.BytesIO(b"pwned\n"))
        else:
            under.type = tarfile.DIRTYPE
            tar.addfile(under)
    s.path.unlink()
    before = _tree_state(tree.root)
    with pytest.raises(ArchiveError, match="lies under a link"):
        restore_session_archive(archive, tree.root)
    assert list(outside.iterdir()) == [] and _tree_state(tree.root) == before


def test_restore_writes_the_transcript_before_the_folder_and_clears_what_a_kill_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed while the transcript was written (the slow part), restore had renamed the
    folder into place already: every retry said "<id> already exists", beside a partial
    temporary transcript (helper 129). The folder now comes after the transcript's
    check, and the temporary names a stopped restore leaves are cleared by the next."""
    from sessiondex.transcripts import archive as archive_module

    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "restored whole", NOW - 40 * DAY)
    _with_folder(s, NOW - 40 * DAY)
    folder = s.project_dir / s.session_id
    with _index(tree, tmp_path) as index:
        _archive(index, tmp_path)
        shutil.rmtree(folder)
        s.path.unlink()
        index.refresh()
        stale_tmp = s.project_dir / f".{s.session_id}.0badf00d.tmp"  # what a kill leaves
        stale_tmp.write_bytes(b"half a transcr")
        stale_dir = s.project_dir / f".{s.session_id}.k1ll3d"
        (stale_dir / "subagents").mkdir(parents=True)
        for path in (stale_tmp, stale_dir):
            os.utime(path, (time.time() - 3600, time.time() - 3600))
        real_same_bytes = archive_module._same_bytes
        folder_while_checking: list[bool] = []

        def same_bytes(*args: Any) -> bool:
            folder_while_checking.append(folder.exists())
            return real_same_bytes(*args)

        monkeypatch.setattr(archive_module, "_same_bytes", same_bytes)
        index.restore(s.session_id)
    assert folder_while_checking == [False]
    assert s.path.is_file() and (folder / "tool-results" / "r1.txt").is_file()
    assert not stale_tmp.exists() and not stale_dir.exists()
    assert sorted(p.name for p in s.project_dir.iterdir()) == sorted([s.path.name, s.session_id])


@pytest.mark.parametrize("where", ["config", "projects", "index"])
def test_archive_dir_is_never_in_a_config_dir_or_the_index(tmp_path: Path, where: str) -> None:
    tree = ConfigTree(tmp_path / "claude")
    _session(tree, "a session", time.time() - 40 * DAY)
    db = tmp_path / "index.db"
    target = {
        "config": tree.root / "archive",
        "projects": tree.projects_dir / "archive",
        "index": db,
    }[where]
    before = _tree_state(tree.root)
    result = _run(tree, db, "archive", "--to", str(target))
    assert result.exit_code == 2, result.output
    assert _tree_state(tree.root) == before


@pytest.mark.parametrize("command", [["archive", "--to"], ["cleanup", "--apply", "--archive"]])
def test_an_archive_dir_after_a_symlinked_folder_is_where_the_shell_puts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """``out/x/../arch`` with ``out/x`` a link to ``far/d1`` is ``far/arch`` for the
    kernel (``mkdir -p`` makes it there); the path rules already read it so, but the
    archive was written to ``out/arch``, abspath's reading."""
    tree = ConfigTree(tmp_path / "claude")
    _session(tree, "a session", time.time() - 40 * DAY)
    (tmp_path / "far" / "d1").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").symlink_to(tmp_path / "far" / "d1")
    monkeypatch.chdir(tmp_path)
    result = _run(tree, tmp_path / "index.db", *command, "out/x/../arch")
    assert result.exit_code == 0, result.output
    assert list((tmp_path / "far" / "arch").rglob("*.tar.gz"))
    assert not (tmp_path / "out" / "arch").exists()


@pytest.mark.parametrize("mounted", ["projects", "one-project-folder", "config-dir"])
@pytest.mark.parametrize("command", [["archive", "--to"], ["cleanup", "--apply", "--archive"]])
def test_an_archive_dir_in_a_bind_mount_of_the_config_dir_is_refused(
    tmp_path: Path, mounted: str, command: list[str]
) -> None:
    """Through a bind mount of projects/ (or of one project folder) archives were written
    inside projects/, and cleanup then deleted the originals."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "a session", time.time() - 40 * DAY)
    source = {
        "projects": tree.projects_dir,
        "one-project-folder": s.project_dir,
        "config-dir": tree.root,
    }[mounted]
    mnt = tmp_path / "mnt"
    before = _tree_state(tree.root)
    args = ["--config-dir", str(tree.root), "--db", str(tmp_path / "index.db"), *command]
    result = run_cli_in_bind_mount(source, mnt, [*args, str(mnt / "arch")])
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert _tree_state(tree.root) == before


def test_a_window_that_is_not_a_duration_is_a_usage_error(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    result = _run(tree, tmp_path / "index.db", "archive", "--expiring-within", "soon")
    assert result.exit_code == 2 and "3d" in result.output
    assert not (tmp_path / "index.db").exists()


# --------------------------------------------------------------------------- watch


def test_watch_rescues_at_start_and_after_a_day(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    soon = _session(tree, "expires tomorrow", NOW - 29 * DAY)
    later = _session(tree, "expires in 3.5 days", NOW - 26.5 * DAY)
    clock = [NOW]
    logged: list[str] = []
    with _index(tree, tmp_path) as index:
        daily = watch_rescue(index, logged.append, clock=lambda: clock[0])

        def archived() -> list[str]:
            return sorted(p.name for p in default_archive_dir().rglob("*.tar.gz"))

        assert daily.poll()  # at start
        assert archived() == [f"{soon.session_id}.tar.gz"]
        clock[0] += 3600
        assert not daily.poll()  # not again within the day
        clock[0] += DAY
        assert daily.poll()
        assert archived() == sorted([f"{soon.session_id}.tar.gz", f"{later.session_id}.tar.gz"])
    assert len(logged) == 2 and all("archived 1 session " in line for line in logged)


def test_watch_rescue_checks_the_default_archive_dir_as_archive_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``archive`` refuses a default archive dir that is no text (XDG_DATA_HOME with
    bytes that are not UTF-8, or not ASCII under ``LC_ALL=C``) in one line; ``watch``'s
    daily rescue archived into it, or logged a codec error. It logs the same sentence
    and archives nothing."""
    import os

    tree = ConfigTree(tmp_path / "claude")
    _session(tree, "expires tomorrow", NOW - 29 * DAY)
    data_home = tmp_path / os.fsdecode(b"data-\xff")
    monkeypatch.setenv("XDG_DATA_HOME", str(data_home))
    logged: list[str] = []
    with _index(tree, tmp_path) as index:
        assert watch_rescue(index, logged.append, clock=lambda: NOW).poll()
    assert logged == [
        f"archive: invalid value for XDG_DATA_HOME: '{tmp_path}/data-\\xff/sessiondex/"
        "archive' is not valid UTF-8"
    ]
    assert not data_home.exists()


def test_watch_command_archives_at_start(tmp_path: Path) -> None:
    from tests.test_watch import WatchProcess

    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "expires tomorrow", time.time() - 29 * DAY)
    process = WatchProcess(tree.root, tmp_path / "index.db")
    try:
        process.wait_for_line("archived 1 session ")
    finally:
        assert process.finish(signal.SIGTERM) == 0
    assert (default_archive_dir() / s.project_dir.name / f"{s.session_id}.tar.gz").is_file()


# --------------------------------------------------------------------------- the job

ODD_DIR = 'with space %h $HOME "quote" back\\slash'


def _job(tmp_path: Path, scheduler: str) -> schedule.Job:
    command = schedule.job_command(
        schedule.sessiondex_executable(),
        [tmp_path / ODD_DIR / "claude"],
        tmp_path / "index.db",
        tmp_path / "archive",
        "3d",
    )
    return schedule.make_job(command, (9, 30), scheduler, home=tmp_path / "home")


def _printed_files(tmp_path: Path, scheduler: str) -> dict[str, str]:
    """``archive --install-job --print`` for a config dir with an awkward name: the
    files it shows, by name (it writes none)."""
    tree = ConfigTree(tmp_path / ODD_DIR / "claude")
    home = Path(os.environ["HOME"])
    before = _tree_state(home)
    args = ["archive", "--install-job", "--print", "--at", "09:30", "--scheduler", scheduler]
    result = _run(tree, tmp_path / "index.db", *args)
    assert result.exit_code == 0, result.output
    assert _tree_state(home) == before
    files: dict[str, list[str]] = {}
    current: list[str] = []
    for line in result.stdout.splitlines():
        if line.startswith("# /"):
            current = files.setdefault(os.path.basename(line[2:]), [])
        elif line.startswith("# then:"):
            current = []
        else:
            current.append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in files.items()}


def test_printed_systemd_units_pass_systemd_analyze(tmp_path: Path) -> None:
    files = _printed_files(tmp_path, "systemd")
    service, timer = files["sessiondex-archive.service"], files["sessiondex-archive.timer"]
    exec_start = next(line for line in service.splitlines() if line.startswith("ExecStart="))
    assert exec_start.startswith("ExecStart=/")  # this sessiondex, by absolute path
    assert '%%h $$HOME \\"quote\\" back\\\\slash' in exec_start
    assert "--db" in exec_start and " archive --expiring-within 3d --to " in exec_start
    assert "OnCalendar=*-*-* 09:30:00" in timer and "Persistent=true" in timer
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed here")
    units = tmp_path / "units"
    units.mkdir()
    for name, text in files.items():
        (units / name).write_text(text)
    done = subprocess.run(
        ["systemd-analyze", "verify", *(str(units / name) for name in files)],
        capture_output=True,
        text=True,
        check=False,
    )
    if "Failed to initialize manager" in done.stderr:
        pytest.skip(f"systemd-analyze cannot run here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr


def test_printed_launchd_plist_and_crontab_line(tmp_path: Path) -> None:
    (text,) = _printed_files(tmp_path, "launchd").values()
    plist = plistlib.loads(text.encode())
    assert plist["Label"] == schedule.LABEL
    assert plist["ProgramArguments"][0].startswith("/")
    assert str(tmp_path / ODD_DIR / "claude") in plist["ProgramArguments"]
    assert plist["StartCalendarInterval"] == {"Hour": 9, "Minute": 30}
    cron = _job(tmp_path, schedule.CRON)
    assert cron.files == [] and cron.crontab_line is not None
    assert cron.crontab_line.startswith("30 9 * * * ") and "\\%h" in cron.crontab_line


def test_install_job_writes_exactly_its_files_and_uninstall_removes_them(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    db = tmp_path / "index.db"
    home = Path(os.environ["HOME"])
    units = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"
    before = _tree_state(home)
    printed = _run(tree, db, "archive", "--install-job", "--print", "--scheduler", "systemd")
    assert printed.exit_code == 0, printed.output
    assert f"# {units / 'sessiondex-archive.service'}" in printed.output
    assert "--config-dir" in printed.output and f"--db {db}" in printed.output
    assert _tree_state(home) == before  # --print writes nothing

    args = ["archive", "--scheduler", "systemd", "--no-activate"]
    installed = _run(tree, db, *args, "--install-job", "--at", "07:15")
    assert installed.exit_code == 0, installed.output
    assert sorted(p.name for p in units.iterdir()) == [
        "sessiondex-archive.service",
        "sessiondex-archive.timer",
    ]
    assert "OnCalendar=*-*-* 07:15:00" in (units / "sessiondex-archive.timer").read_text()
    removed = _run(tree, db, *args, "--uninstall-job")
    assert removed.exit_code == 0, removed.output
    assert list(units.iterdir()) == []

    (units / "sessiondex-archive.timer").write_text("[Timer]\n# the user's own\n")
    refused = _run(tree, db, *args, "--install-job")
    assert refused.exit_code == 1 and "not written by sessiondex" in refused.output
    assert _run(tree, db, *args, "--uninstall-job").exit_code == 0
    assert (units / "sessiondex-archive.timer").read_text() == "[Timer]\n# the user's own\n"
    assert _run(tree, db, *args, "--install-job", "--at", "25:00").exit_code == 2


@pytest.mark.parametrize(
    "options",
    [("--print",), ("--at", "09:30"), ("--scheduler", "cron"), ("--no-activate",)],
)
def test_job_options_without_a_job_are_a_usage_error(tmp_path: Path, options: tuple) -> None:
    """They shaped nothing: ``archive --at 09:30 --dry-run`` ran an archive and ignored
    the time (helper 123)."""
    tree = ConfigTree(tmp_path / "claude")
    result = _run(tree, tmp_path / "index.db", "archive", "--dry-run", *options)
    assert result.exit_code == 2
    assert f"{options[0]} goes with --install-job or --uninstall-job" in result.output


def test_activation_runs_the_scheduler_commands(tmp_path: Path) -> None:
    job = _job(tmp_path, schedule.SYSTEMD)
    ran: list[list[str]] = []

    def fake(command: Any) -> tuple[bool, str]:
        ran.append(list(command))
        return True, ""

    schedule.install_job(job, run=fake)
    assert ran == job.activate
    link = job.extra_paths[0]  # what `systemctl enable` makes
    link.parent.mkdir()
    link.symlink_to(Path("..") / "sessiondex-archive.timer")
    ran.clear()
    schedule.uninstall_job(job, run=fake)
    assert ran[0] == job.deactivate[0]
    assert not any(os.path.lexists(p) for p in (*[f.path for f in job.files], link))


def test_job_runs_this_sessiondex(tmp_path: Path) -> None:
    script = tmp_path / "sessiondex"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert schedule.sessiondex_executable(str(script)) == [str(script)]
    # run as something else (pytest): the console script installed beside this Python
    beside = os.path.join(os.path.dirname(sys.executable), "sessiondex")
    assert schedule.sessiondex_executable("/nowhere/pytest") == [os.path.abspath(beside)]


def _damage(archive: Path, how: str) -> None:
    data = bytearray(archive.read_bytes())
    if how == "a byte flipped":  # tar reads fine; only the gzip CRC at the end tells
        data[len(data) // 2] ^= 0xFF
    else:
        data = data[: len(data) // 2]
    archive.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["a byte flipped", "truncated"])
def test_a_damaged_archive_protects_nothing_and_restores_nothing(tmp_path: Path, how: str) -> None:
    """A damaged archive is no copy: it counted as 'already archived' and 'protected'
    (then the sweep deleted the only good copy), was listed as the session, and restore
    wrote its wrong bytes with exit 0 (the gzip CRC was never read)."""
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    tree.write_settings({"cleanupPeriodDays": 30})
    old = _session(tree, "zebra migration plan " * 300, now - 29 * DAY)
    db = tmp_path / "index.db"
    run = _json(_run(tree, db, "archive", "--expiring-within", "3d", "--json"))
    archive = Path(run["results"][0]["archive"])
    _damage(archive, how)
    os.utime(archive, (now, now))

    cleanup = _run(tree, db, "cleanup")
    assert "0 sessions protected, 1 at risk" in cleanup.output, cleanup.output
    # Claude Code's sweep deletes the transcript: the damaged archive is all there is
    original = old.path.read_bytes()
    old.path.unlink()
    listed = _run(tree, db, "list", "--scope", "all", "--include-archived", "--json")
    assert json.loads(listed.stdout or "[]") == []
    restored = _run(tree, db, "restore", old.session_id)
    assert restored.exit_code == 1 and not old.path.exists(), restored.output
    assert original  # what a good archive would have given back


def test_another_config_dirs_live_copy_neither_hides_nor_blocks_an_archived_session(
    tmp_path: Path,
) -> None:
    """One index, config dirs A and B holding the same session ID. B's copy is archived
    and then swept; under B, A's live copy hid the archived one from --include-archived
    and blocked its restore (with A's path in the message)."""
    from sessiondex import Index

    sid = "11111111-2222-4333-8444-555555555555"
    copies = {}
    for name, mtime in (("A", 1_790_000_200), ("B", 1_780_000_100)):
        tree = ConfigTree(tmp_path / name)
        s = tree.session(cwd="/work/repo", session_id=sid)
        s.user(f"shared copy in {name}")
        s.meta("custom-title", customTitle=f"Shared {name} title")
        copies[name] = (tree, s.write(mtime=mtime))
    db = tmp_path / "X.db"
    for tree, _ in copies.values():
        with Index(db, [tree.root]) as index:
            index.refresh()
    b_root = copies["B"][0].root
    with Index(db, [b_root]) as index:
        index.archive(archive_dir=tmp_path / "arch", window=10**9)
    copies["B"][1].unlink()  # Claude Code's sweep
    with Index(db, [b_root]) as index:
        listed = index.list(scope="all", include_archived=True)
        assert [(s["session_id"], s["title"]) for s in listed] == [(sid, "Shared B title")]
        assert index.resolve(sid, include_archived=True).session["title"] == "Shared B title"
        index.restore(sid)
    assert copies["B"][1].exists() and copies["A"][1].exists()
    assert "shared copy in B" in copies["B"][1].read_text()


# --------------------------------------------------------------------------- odd folders


def _socket(path: Path) -> None:
    import socket

    here = os.getcwd()
    os.chdir(path.parent)  # a socket's whole path must fit in 108 bytes
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(path.name)
    finally:
        os.chdir(here)


def _hard_links(path: Path) -> None:
    path.write_bytes(b"same tool output\n")
    os.link(path, path.with_name("b.txt"))


# What a session folder may hold besides transcripts → what restore gives back there.
ODD_FOLDER_CASES = [
    pytest.param(_socket, {}, id="socket"),
    pytest.param(lambda p: os.mkfifo(p), {}, id="fifo"),
    pytest.param(
        _hard_links,
        {"a.txt": b"same tool output\n", "b.txt": b"same tool output\n"},
        id="hard-links",
    ),
]


@pytest.mark.parametrize(("make", "restored"), ODD_FOLDER_CASES)
def test_an_odd_file_in_the_session_folder_never_stops_archiving(
    tmp_path: Path, make: Any, restored: dict[str, bytes]
) -> None:
    """A socket or FIFO is left out (no bytes to keep; it crashed the run and every
    session after it), and a second name of a hard-linked file is kept as a file of its
    own (tarfile's link member failed the byte-for-byte check on every run)."""
    tree = ConfigTree(tmp_path / "claude")
    odd = _session(tree, "odd folder", NOW - 40 * DAY)
    folder = odd.project_dir / odd.session_id / "tool-results"
    folder.mkdir(parents=True)
    make(folder / "a.txt")
    bystander = _session(tree, "innocent bystander", NOW - 35 * DAY)
    with _index(tree, tmp_path) as index:
        run = _archive(index, tmp_path)
        assert sorted((r.session_id, r.status) for r in run.results) == sorted(
            [(odd.session_id, ARCHIVED), (bystander.session_id, ARCHIVED)]
        )
        shutil.rmtree(odd.project_dir / odd.session_id)
        odd.path.unlink()
        index.refresh()
        index.restore(odd.session_id)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == restored


def test_a_transcript_appended_to_while_archiving_is_not_archived_with_its_old_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code resumes the session between the listing of its files and the read of
    its bytes: an archive with the new bytes under the old mtime would restore a file
    that never existed. That session fails this run; the next archives the new version."""
    import tarfile

    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "race me", NOW - 40 * DAY)
    original = tarfile.TarFile.gettarinfo
    appended: list[bool] = []

    def resumed_meanwhile(self: Any, name: Any = None, *args: Any, **kwargs: Any) -> Any:
        if name and str(name).endswith(".jsonl") and not appended:
            appended.append(True)
            s.user("resumed while the archive was being written")
            s.append(mtime=NOW - 39 * DAY)
        return original(self, name, *args, **kwargs)

    monkeypatch.setattr(tarfile.TarFile, "gettarinfo", resumed_meanwhile)
    with _index(tree, tmp_path) as index:
        first = _archive(index, tmp_path)
        assert [r.status for r in first.results] == ["failed"]
        assert "changed while archiving" in (first.results[0].message or "")
        assert list((tmp_path / "arch").rglob("*.tar.gz")) == []
        second = _archive(index, tmp_path)
        assert [r.status for r in second.results] == [ARCHIVED]
        grown = s.path.read_bytes()
        mtime_ns = s.path.stat().st_mtime_ns
        s.path.unlink()
        index.refresh()
        index.restore(s.session_id)
    assert s.path.read_bytes() == grown
    assert s.path.stat().st_mtime_ns == mtime_ns


# --------------------------------------------------------------------------- a lost index


def _lose(db: Path, how: str) -> None:
    if how == "damaged":
        db.write_bytes(b"garbage where the index was" * 100)
    else:
        for side in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            side.unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["damaged", "deleted"])
@pytest.mark.parametrize("where", ["default", "--to"])
def test_archived_sessions_outlive_the_index(tmp_path: Path, how: str, where: str) -> None:
    """The index is disposable; the archive may be the only copy left. After the index
    is moved aside as damaged or deleted, the default archive dir is indexed at once,
    and a ``--to`` dir as soon as the daily ``archive`` runs again (even with nothing
    left to archive): the session is found and restored."""
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "the only copy is archived", now - 40 * DAY)
    db = tmp_path / "index.db"
    to = ["--to", str(tmp_path / "arch")] if where == "--to" else []
    assert _json(_run(tree, db, "archive", *to, "--json"))["results"][0]["status"] == "archived"
    s.path.unlink()  # Claude Code's sweep
    _lose(db, how)
    if where == "--to":
        again = _json(_run(tree, db, "archive", *to, "--json"))
        assert again["results"] == []
    listed = _json(_run(tree, db, "list", "--scope", "all", "--include-archived", "--json"))
    assert [r["session_id"] for r in listed] == [s.session_id]
    restored = _run(tree, db, "restore", s.session_id)
    assert restored.exit_code == 0, restored.output
    assert s.path.is_file()


def test_two_archive_runs_at_once_write_each_session_once(tmp_path: Path) -> None:
    """``watch``'s daily archive and the installed job may start together (even for two
    indexes): the second waits for the archive dir's lock, then finds the first one's
    archives. Both wrote every session before, as ``<id>.tar.gz`` and ``<id>-2.tar.gz``."""
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    ids = {_session(tree, f"session {i}", now - 40 * DAY).session_id for i in range(6)}
    arch = tmp_path / "arch"
    runs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sessiondex.cli.main",
                "--config-dir",
                str(tree.root),
                "--db",
                str(tmp_path / f"index-{n}.db"),  # two indexes: only the dir is shared
                "archive",
                "--to",
                str(arch),
                "--json",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    statuses: dict[str, list[str]] = {}
    for proc in runs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        for result in json.loads(out)["results"]:
            statuses.setdefault(result["session_id"], []).append(result["status"])
    assert set(statuses) == ids
    assert all(sorted(s) == ["already-archived", "archived"] for s in statuses.values()), statuses
    assert sorted(p.name for p in arch.rglob("*.tar.gz")) == sorted(f"{i}.tar.gz" for i in ids)


def test_cleanup_archive_reuses_the_archive_run_s_copy(tmp_path: Path) -> None:
    """``archive``, then ``cleanup --apply --archive`` into the same dir: the session
    is deleted with the archive already there, not archived a second time."""
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "archived first", now - 40 * DAY)
    db, arch = tmp_path / "index.db", tmp_path / "arch"
    assert _run(tree, db, "archive", "--to", str(arch)).exit_code == 0
    applied = _run(tree, db, "cleanup", "--apply", "--archive", str(arch), "--json")
    assert applied.exit_code == 0, applied.output
    [outcome] = json.loads(applied.stdout)["results"]
    assert outcome["archive"] == str(next(arch.rglob("*.tar.gz")))  # said archived, as it is
    assert not s.path.exists()
    assert [p.name for p in arch.rglob("*.tar.gz")] == [f"{s.session_id}.tar.gz"]
    found = _json(_run(tree, db, "list", "--scope", "all", "--include-archived", "--json"))
    assert [r["file_path"] for r in found] == [str(next(arch.rglob("*.tar.gz")))]


@pytest.mark.parametrize("change", ["a file added", "a file rewritten", "a file removed"])
def test_cleanup_archive_writes_a_new_version_when_only_the_folder_changed(
    tmp_path: Path, change: str
) -> None:
    """The archive run's copy was reused because the transcript was as archived; the
    folder had gained a file since (Claude Code's picker writes ``<id>/archived.json``,
    a rename ``custom-title.json``, without touching the transcript), and cleanup then
    deleted the folder with it in no archive: "all archived first" (helper 129)."""
    import tarfile

    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "archived first", now - 40 * DAY)
    _with_folder(s, now - 40 * DAY)
    db, arch = tmp_path / "index.db", tmp_path / "arch"
    assert _run(tree, db, "archive", "--to", str(arch)).exit_code == 0
    folder = s.project_dir / s.session_id
    changed = folder / ("custom-title.json" if change == "a file added" else "tool-results/r1.txt")
    if change == "a file removed":
        changed.unlink()
    else:
        changed.write_text('{"customTitle": "precious name"}')
        os.utime(changed, (now - 20 * DAY, now - 20 * DAY))
    applied = _run(tree, db, "cleanup", "--apply", "--archive", str(arch), "--json")
    [outcome] = _json(applied)["results"]
    assert not s.path.exists() and not folder.exists()
    with tarfile.open(outcome["archive"]) as tar:
        names = {m.name.split(f"{s.session_id}/", 1)[-1] for m in tar}
        member = next((m for m in tar if m.name.endswith(changed.name)), None)
        kept = None if member is None else tar.extractfile(member).read()  # type: ignore[union-attr]
    if change == "a file removed":
        assert "tool-results/r1.txt" not in names
    else:
        assert kept == b'{"customTitle": "precious name"}'
    assert len(list(arch.rglob("*.tar.gz"))) == 2  # the first version stays


@pytest.mark.parametrize("linked", ["projects", "project dir"])
def test_restore_through_a_linked_projects_dir_but_never_a_linked_project_dir(
    tmp_path: Path, linked: str
) -> None:
    """``projects/`` moved to another disk and linked back is read by every command
    (and by Claude Code): restore goes through it too. A linked project dir is never
    read by discovery, so a session restored there would be lost: refused."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "through the link", NOW - 40 * DAY)
    elsewhere = tmp_path / "bigdisk"
    elsewhere.mkdir()
    if linked == "projects":
        shutil.move(str(tree.root / "projects"), str(elsewhere / "projects"))
        os.symlink(elsewhere / "projects", tree.root / "projects")
    with _index(tree, tmp_path) as index:
        run = _archive(index, tmp_path)
        assert [r.status for r in run.results] == [ARCHIVED]
        s.path.unlink()
        if linked == "project dir":
            shutil.move(str(s.project_dir), str(elsewhere / s.project_dir.name))
            os.symlink(elsewhere / s.project_dir.name, s.project_dir)
        index.refresh()
        if linked == "projects":
            index.restore(s.session_id)
            assert s.path.is_file()
            assert [o["session_id"] for o in index.list(scope="all")] == [s.session_id]
        else:
            from sessiondex.transcripts.archive import RestoreRefused

            with pytest.raises(RestoreRefused, match="is a symlink"):
                index.restore(s.session_id)
            assert not s.path.exists()


def test_archive_plans_for_the_project_whose_settings_sweep_soonest(tmp_path: Path) -> None:
    """Claude Code's sweep covers every project dir with the period of the settings
    where ``claude`` starts: a project saying 7 days deletes another project's 10-day-old
    session. The rescue, run from anywhere, archives it; ``cleanup`` (what starting
    *here* deletes) still answers for its own cwd."""
    p1, p2 = tmp_path / "p1", tmp_path / "p2"
    (p2 / ".claude").mkdir(parents=True)
    p1.mkdir()
    (p2 / ".claude" / "settings.json").write_text('{"cleanupPeriodDays": 7}')
    tree = ConfigTree(tmp_path / "claude")
    ten_days = _session(tree, "p1 work, ten days old", NOW - 10 * DAY, cwd=str(p1))
    _session(tree, "p2 recent", NOW - 1 * DAY, cwd=str(p2))
    with _index(tree, tmp_path) as index:
        run = _archive(index, tmp_path, cwd=str(p1))
        assert [(r.session_id, r.status) for r in run.results] == [(ten_days.session_id, ARCHIVED)]
        assert run.config_dirs[0]["source"] == str(p2 / ".claude" / "settings.json")
    # what starting claude in p1 deletes: nothing yet (30 days there)
    listed = _run(tree, tmp_path / "index.db", "cleanup", "--cwd", str(p1), "--json")
    plan = _json(listed)
    assert [r["days"] for r in plan["config_dirs"]] == [30]


def test_archive_plans_for_every_sweep_a_project_s_settings_make(tmp_path: Path) -> None:
    """The soonest period is not the whole story: p1 sweeps at 10 days but keeps desktop
    sessions for ever; p2 sweeps at 30 days and desktop sessions at 35. A 40-day-old
    desktop session recorded in p2 is deleted by a claude started in p2, which cleanup
    said, and the rescue planned only for p1's sweep and missed it (helper 118)."""
    p1, p2 = tmp_path / "p1", tmp_path / "p2"
    for project, settings in (
        (p1, '{"cleanupPeriodDays": 10}'),
        (p2, '{"cleanupPeriodDays": 30, "desktopSessionCleanupPeriodDays": 35}'),
    ):
        (project / ".claude").mkdir(parents=True)
        (project / ".claude" / "settings.json").write_text(settings)
    tree = ConfigTree(tmp_path / "claude")
    desktop = _session(
        tree, "desktop chat in p2", NOW - 40 * DAY, cwd=str(p2), entrypoint="claude-desktop"
    )
    eleven = _session(tree, "p1 work, eleven days old", NOW - 11 * DAY, cwd=str(p1))
    with _index(tree, tmp_path) as index:
        run = _archive(index, tmp_path, cwd=str(p2))
    assert sorted((r.session_id, r.status) for r in run.results) == sorted(
        [(desktop.session_id, ARCHIVED), (eleven.session_id, ARCHIVED)]
    )
    assert run.config_dirs[0]["days"] == 10  # the soonest sweep still heads the report


@pytest.mark.parametrize(
    ("age", "entrypoint"), [(1, "cli"), (40, "claude-desktop")], ids=["resumed", "desktop"]
)
def test_old_subagent_transcripts_of_a_kept_session_are_warned_about_and_archived(
    tmp_path: Path, age: int, entrypoint: str
) -> None:
    """The sweep also deletes old files inside the folders of sessions it keeps (cli-
    sessions.md 5.3): a 40-day-old subagent transcript of a session resumed yesterday.
    ``cleanup`` said "would delete 0", ``archive`` archived nothing, and after the
    sweep the subagent's conversation was gone."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "long-lived session", NOW - age * DAY, entrypoint=entrypoint)
    turn = s.assistant("delegating", tool_uses=[("Task", {"prompt": "sub"})])
    sub = s.subagent(agent_id="a1b2c3", tool_use_id=turn.tool_use_ids[0])
    sub.user("subagent digs through the zebraword logs")
    sub.assistant("done")
    s.write(mtime=NOW - age * DAY)  # a desktop session: kept however old (exempt)
    agent = next((s.project_dir / s.session_id / "subagents").rglob("agent-*.jsonl"))
    os.utime(agent, (NOW - 40 * DAY, NOW - 40 * DAY))
    with _index(tree, tmp_path) as index:
        from sessiondex.query.cleanup import plan_cleanup

        plan = plan_cleanup(index.reader(), [tree.root], now=NOW, managed=None)
        [losing] = plan.roots[0].losing_subagents
        assert (losing.session_id, losing.old_subagents) == (s.session_id, 1)
        cc = plan.roots[0].as_dict()["claude_code"]
        assert cc["would_delete_subagent_transcripts"] == 1
        run = _archive(index, tmp_path)
        assert [(r.session_id, r.status) for r in run.results] == [(s.session_id, ARCHIVED)]
    archive = Path(run.results[0].archive or "")
    import tarfile

    with tarfile.open(archive) as tar:
        assert any(m.name.endswith(agent.name) for m in tar.getmembers())


def test_restore_takes_the_short_id_list_shows(tmp_path: Path) -> None:
    """``list --include-archived`` shows an 8-character ID; restore wanted the whole."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "short id", NOW - 40 * DAY)
    with _index(tree, tmp_path) as index:
        assert [r.status for r in _archive(index, tmp_path).results] == [ARCHIVED]
        s.path.unlink()
        index.refresh()
        # Shorter than list shows is too short, and says so rather than "not found"
        # of a session that is archived (helper 123).
        with pytest.raises(NotFound, match="too short for an ID: give at least 8"):
            index.restore(s.session_id[:7])
        with pytest.raises(NotFound, match="No archived session with ID: 0000000"):
            index.restore("0000000")
        restored = index.restore(s.session_id[:8].upper())
    assert restored.session_id == s.session_id and s.path.is_file()


@pytest.mark.parametrize("lock", ["a directory", "a symlink loop"])
def test_an_archive_dir_that_cannot_be_locked_is_one_error_line(tmp_path: Path, lock: str) -> None:
    tree = ConfigTree(tmp_path / "claude")
    _session(tree, "old", time.time() - 40 * DAY)
    arch = tmp_path / "arch"
    arch.mkdir()
    where = arch / ".sessiondex-archive.lock"
    if lock == "a directory":
        where.mkdir()
    else:
        os.symlink(where, where)
    for args in (["archive", "--to", str(arch)], ["cleanup", "--apply", "--archive", str(arch)]):
        result = _run(tree, tmp_path / "index.db", *args)
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output and result.stderr.count("\n") == 1
        assert result.stderr.startswith("Error: cannot lock")


def test_the_archive_table_shows_home_as_a_tilde(tmp_path: Path) -> None:
    """Every table's project column shows the home folder as ``~``; the archive's
    printed the whole path."""
    import os

    home = os.path.expanduser("~")
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "an expiring session", time.time() - 45 * DAY, cwd=f"{home}/src/shop")
    result = _run(
        tree, tmp_path / "index.db", "archive", "--to", str(tmp_path / "arch"), "--dry-run"
    )
    assert result.exit_code == 0, result.output
    [row] = [line for line in result.stdout.splitlines() if s.session_id[:8] in line]
    assert "~/src/shop" in row and home not in row


def test_restore_speaks_json_and_calls_a_shared_prefix_ambiguous(tmp_path: Path) -> None:
    """``restore --json`` is ``--format json`` (the flag was taken and ignored), and a
    short ID that starts several archived sessions is exit 3 with the candidates, as
    every other command's ambiguity is; nothing is restored."""
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    tree.write_settings({"cleanupPeriodDays": 30})
    ids = [f"a0000000-0000-4000-8000-00000000000{n}" for n in (1, 2, 3)]
    olds = [
        _session(tree, f"otter plan {n}", now - 29 * DAY, session_id=sid)
        for n, sid in enumerate(ids)
    ]
    db = tmp_path / "index.db"
    assert _run(tree, db, "archive", "--expiring-within", "3d").exit_code == 0
    for s in olds:
        s.path.unlink()

    ambiguous = _run(tree, db, "restore", "a0000000")
    assert ambiguous.exit_code == 3, ambiguous.output
    assert all(sid in ambiguous.stderr for sid in ids) and "Traceback" not in ambiguous.output
    assert not any(s.path.exists() for s in olds)

    for how in (["--json"], ["--format", "json"]):
        sid = ids[0] if how == ["--json"] else ids[1]
        out = _json(_run(tree, db, "restore", sid, *how))
        assert out["session_id"] == sid and out["transcript"] == str(olds[ids.index(sid)].path)
        assert out["resume_command"].endswith(f"claude --resume {sid}")


LOSING_THE_INDEX = {
    "deleted": lambda db: [Path(f"{db}{s}").unlink(missing_ok=True) for s in ("", "-wal", "-shm")],
    "overwritten": lambda db: (
        db.write_bytes(b"SQLite format 3\x00garbage"),
        [Path(f"{db}{s}").unlink(missing_ok=True) for s in ("-wal", "-shm")],
    ),
}


@pytest.mark.parametrize("how", sorted(LOSING_THE_INDEX))
def test_a_custom_archive_dir_outlives_the_index(tmp_path: Path, how: str) -> None:
    """The index is disposable; where ``cleanup --archive DIR`` put sessions is not: a
    rebuilt index (after the file was deleted, or damaged and moved aside) still finds
    them with --include-archived, ``restore`` still brings them back, ``stats`` still
    knows the last archive run, and ``index --tools`` still holds."""
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "narwhal rollout", now - 40 * DAY)
    db, arch = tmp_path / "index.db", tmp_path / "arch"
    assert _run(tree, db, "index", "--tools").exit_code == 0
    assert _run(tree, db, "archive", "--to", str(tmp_path / "other")).exit_code == 0
    applied = _run(tree, db, "cleanup", "--apply", "--archive", str(arch))
    assert applied.exit_code == 0 and not s.path.exists(), applied.output
    before = _json(_run(tree, db, "stats", "--json"))

    LOSING_THE_INDEX[how](db)
    found = _json(
        _run(tree, db, "search", "narwhal", "--scope", "all", "--include-archived", "--json")
    )
    assert [r["file_path"] for r in found] == [str(next(arch.rglob("*.tar.gz")))]
    after = _json(_run(tree, db, "stats", "--json"))
    assert after["cleanup"]["archive"]["last_run"] == before["cleanup"]["archive"]["last_run"]
    from sessiondex.indexer.db import open_db
    from sessiondex.indexer.ingest import include_tools_setting

    index = open_db(db)
    assert include_tools_setting(index) is True  # index --tools, as chosen
    index.close()
    restored = _run(tree, db, "restore", s.session_id)
    assert restored.exit_code == 0 and s.path.exists(), restored.output


def test_a_stop_ends_a_run_waiting_for_the_lock_or_between_sessions(tmp_path: Path) -> None:
    """watch's Ctrl-C or SIGTERM sets its stop flag, but its daily run went on: until
    another run let the archive dir's lock go (10 minutes at most), or to the end of a
    long backlog (helper 118: 13.7 s for 30 sessions of 3 MB). Now the run asks."""
    import fcntl
    import os

    from sessiondex.transcripts.archive import LOCK_NAME, ArchiveStopped

    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    for n in range(3):
        _session(tree, f"old session {n}", now - 40 * DAY)
    arch = tmp_path / "arch"
    arch.mkdir()
    with _index(tree, tmp_path) as index:
        # Another run holds the lock: a stop ends the wait, as a timeout would not.
        fd = os.open(arch / LOCK_NAME, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            with pytest.raises(ArchiveStopped):
                index.archive(archive_dir=arch, should_stop=lambda: True)
        finally:
            os.close(fd)
        assert list(arch.rglob("*.tar.gz")) == []
        # Asked between sessions: the first is archived and kept, the run ends there,
        # and is not recorded as the last run.
        asked: list[int] = []
        with pytest.raises(ArchiveStopped):
            index.archive(archive_dir=arch, should_stop=lambda: asked.append(1) or len(asked) > 1)
        assert len(list(arch.rglob("*.tar.gz"))) == 1
        whole = index.archive(archive_dir=arch)  # the next run does the rest
    assert sorted(r.status for r in whole.results) == ["already-archived", "archived", "archived"]


def test_watch_s_rescue_stops_with_watch_and_logs_nothing_of_it(tmp_path: Path) -> None:
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    _session(tree, "old session", now - 40 * DAY)
    logged: list[str] = []
    with _index(tree, tmp_path) as index:
        daily = watch_rescue(index, logged.append, should_stop=lambda: True)
        assert daily.poll()
    assert logged == []  # stopping is no failure to report
    assert not default_archive_dir().exists() or not list(default_archive_dir().rglob("*.tar.gz"))


def test_a_long_lived_index_archives_into_the_file_that_is_the_index_now(
    tmp_path: Path,
) -> None:
    """watch's daily run went on writing its archive rows and last run into the handle
    it opened at start, after the index file was deleted and rebuilt: the live index
    said the session was at risk and the last run was older (helper 118)."""
    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    _session(tree, "old one", now - 40 * DAY)
    db = tmp_path / "index.db"
    with Index(db, [tree.root]) as index:
        index.archive(archive_dir=tmp_path / "arch", dry_run=True)  # its writer is open
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        assert _run(tree, db, "index").exit_code == 0  # the watcher rebuilds it
        run = index.archive(archive_dir=tmp_path / "arch")
        assert [r.status for r in run.results] == ["archived"]
    stats = _json(_run(tree, db, "stats", "--json"))["cleanup"]["archive"]
    assert (stats["protected"], stats["at_risk"]) == (1, 0) and stats["last_run"]


def test_a_rename_reaches_the_next_archive_with_its_title_sidecar(tmp_path: Path) -> None:
    """``rename`` appends the record and rewrites ``<id>/custom-title.json`` (Claude
    Code's mirror of the name). The transcript changed, so once the session expires
    again the archive writes a new version, holding the record and the new sidecar;
    the older version keeps the old sidecar, and restore brings back the new name in
    both places."""
    import tarfile

    now = time.time()
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree, "quince renamed before the sweep", now - 40 * DAY)
    folder = s.project_dir / s.session_id
    sidecar = folder / "custom-title.json"
    folder.mkdir()
    sidecar.write_bytes(b'{"customTitle":"Old"}')

    def member(archive: str, name: str) -> bytes:
        with tarfile.open(archive) as tar:
            found = next(m for m in tar if m.name.endswith(name))
            return tar.extractfile(found).read()  # type: ignore[union-attr]

    with _index(tree, tmp_path) as index:
        first = _archive(index, tmp_path, now=now)
        assert [r.status for r in first.results] == [ARCHIVED]
        index.rename(s.session_id, "Quince plan")
        # the append restarted the retention clock: nothing expires now
        assert _archive(index, tmp_path, now=time.time()).results == []
        later = _archive(index, tmp_path, now=time.time() + 40 * DAY)
        assert [r.status for r in later.results] == [ARCHIVED]
        newer = later.results[0].archive
        assert newer is not None and newer.endswith(f"{s.session_id}-2.tar.gz")
        assert member(newer, "custom-title.json") == b'{"customTitle":"Quince plan"}'
        assert b'"customTitle":"Quince plan"' in member(newer, f"{s.session_id}.jsonl")
        assert member(str(first.results[0].archive), "custom-title.json") == (
            b'{"customTitle":"Old"}'
        )
        # Claude Code's sweep, then restore: the newest version comes back
        s.path.unlink()
        shutil.rmtree(folder)
        index.refresh()
        index.restore(s.session_id)
        assert [o["title"] for o in index.list(scope="all")] == ["Quince plan"]
    assert json.loads(sidecar.read_bytes()) == {"customTitle": "Quince plan"}
