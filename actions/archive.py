"""Rescue sessions before Claude Code's sweep deletes them: ``archive``, ``restore``, and
the daily run ``watch`` performs.

``archive`` copies (verified, compressed: :mod:`sessiondex.transcripts.archive`) every
session Claude Code's retention sweep will delete within a window, already expired ones
included, and changes nothing in the config dir. Which sessions those are is the
cleanup plan's rule (:func:`sessiondex.query.cleanup.plan_cleanup`, asked about
``now + window``): the same settings files and precedence, invalid values skip the sweep,
desktop sessions are exempt, and the transcript's mtime is what counts. A session whose
current version (size and mtime) is already in an archive dir is not archived again; one
that changed gets a new version beside the old one, and the index shows the newest
(``indexer/archive_ingest.py``). The rules are in ``docs/retention.md``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

# archive_dir_problem: re-exported, the one rule for where archives may go.
from sessiondex.actions.cleanup import archive_dir_problem as archive_dir_problem
from sessiondex.actions.cleanup import fresh_plan
from sessiondex.actions.paths import placed
from sessiondex.query.archives import (
    LAST_RUN_KEY,
    archived_version,
    live_transcripts,
    newest_archive,
)
from sessiondex.query.cleanup import SESSION, PlanEntry
from sessiondex.query.sessions import iso_ms
from sessiondex.render.counts import sessions_and_files
from sessiondex.transcripts.archive import default_archive_dir as default_archive_dir
from sessiondex.transcripts.discover import MAIN, describe_path
from sessiondex.transcripts.retention import DAY, UNSET, read_retention

if TYPE_CHECKING:
    from sqlite_utils import Database

DEFAULT_WINDOW = 3 * DAY
ARCHIVED, ALREADY, PLANNED, SKIPPED, FAILED = (
    "archived",
    "already-archived",
    "would-archive",
    "skipped",
    "failed",
)


@dataclass
class ArchiveResult:
    """What happened to one session the sweep will delete within the window."""

    session_id: str
    config_dir: str
    project_key: str
    file_path: str
    title: str
    cwd: str | None
    mtime: str | None
    size: int
    status: str  # archived / already-archived / would-archive / skipped / failed
    archive: str | None = None
    message: str = ""
    # The plan entry's kind: a session, or a project-level *.jsonl that is none (a
    # legacy agent-*.jsonl, another .jsonl): what a count of results calls them.
    kind: str = SESSION

    @property
    def is_session(self) -> bool:
        return self.kind == SESSION

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ArchiveRun:
    """One ``archive`` run: where, for which window, and each session's result."""

    now: float
    archive_dir: str
    window: float  # seconds
    dry_run: bool
    config_dirs: list[dict[str, Any]]
    results: list[ArchiveResult] = field(default_factory=list)
    stopped: bool = False  # asked to stop before every session was looked at

    def count(self, status: str) -> int:
        return sum(1 for r in self.results if r.status == status)

    def count_apart(self, status: str) -> tuple[int, int]:
        """``(sessions, other files)`` with ``status``: the files that are no sessions
        are counted apart wherever a count names what it counts."""
        sessions = sum(1 for r in self.results if r.status == status and r.is_session)
        return sessions, self.count(status) - sessions

    def as_dict(self) -> dict[str, Any]:
        statuses = (ARCHIVED, ALREADY, PLANNED, SKIPPED, FAILED)
        return {
            "now": iso_ms(int(self.now * 1000)),
            "archive_dir": self.archive_dir,
            "expiring_within_days": self.window / DAY,
            "dry_run": self.dry_run,
            "config_dirs": self.config_dirs,
            "results": [r.as_dict() for r in self.results],
            "totals": {s.replace("-", "_"): self.count(s) for s in statuses},
        }


def _result(entry: PlanEntry, status: str, **extra: Any) -> ArchiveResult:
    return ArchiveResult(
        entry.session_id,
        entry.config_dir,
        entry.project_key,
        entry.file_path,
        entry.title,
        entry.cwd,
        entry.mtime,
        entry.size,
        status,
        kind=entry.kind,
        **extra,
    )


def _archive_one(
    db: Database, entry: PlanEntry, roots: list[Path], directory: Path
) -> ArchiveResult:
    from sessiondex.indexer.archive_ingest import ingest_archive
    from sessiondex.indexer.ingest import include_tools_setting
    from sessiondex.indexer.stats import RefreshStats
    from sessiondex.transcripts.archive import ArchiveError, write_session_archive

    tf = describe_path(Path(entry.file_path), roots)
    if tf is None or tf.kind != MAIN:
        return _result(entry, SKIPPED, message="gone, or not a regular transcript in projects/")
    if (tf.size, tf.mtime_ns) != (entry.transcript_size, entry.mtime_ns):
        return _result(entry, SKIPPED, message="written since the plan; no longer expiring")
    try:
        archive = write_session_archive(tf, directory)
    except ArchiveError as exc:
        return _result(entry, FAILED, message=str(exc))
    stats = RefreshStats()
    ingest_archive(db, archive, directory, stats, include_tools=include_tools_setting(db))
    if stats.errors:
        return _result(entry, FAILED, archive=str(archive), message=stats.errors[0][1])
    return _result(entry, ARCHIVED, archive=str(archive))


def _archive_file(
    entry: PlanEntry, roots: list[Path], directory: Path, dry_run: bool
) -> ArchiveResult:
    """A project-level ``*.jsonl`` that is no session (a legacy ``agent-<id>.jsonl``),
    which the sweep deletes as it does transcripts: a verified copy under
    ``<DIR>/<key>/not-sessions/`` (:func:`~sessiondex.transcripts.archive.write_file_archive`),
    once per version. Not indexed: it was no session live either."""
    from sessiondex.transcripts.archive import (
        ArchiveError,
        file_archive_holding,
        write_file_archive,
    )
    from sessiondex.transcripts.discover import describe_project_jsonl

    jf = describe_project_jsonl(Path(entry.file_path), roots)
    if jf is None:
        return _result(entry, SKIPPED, message="gone, or not a regular file in projects/")
    if (jf.size, jf.mtime_ns) != (entry.transcript_size, entry.mtime_ns):
        return _result(entry, SKIPPED, message="written since the plan; no longer expiring")
    held = file_archive_holding(directory, jf)
    if held is not None:
        return _result(entry, ALREADY, archive=str(held))
    if dry_run:
        return _result(entry, PLANNED)
    try:
        return _result(entry, ARCHIVED, archive=str(write_file_archive(jf, directory)))
    except ArchiveError as exc:
        return _result(entry, FAILED, message=str(exc))


def archive_expiring(
    db: Database,
    roots: list[Path],
    *,
    archive_dir: Path | None = None,
    window: float = DEFAULT_WINDOW,
    db_path: str | os.PathLike[str] | None = None,
    cwd: str | None = None,
    now: float | None = None,
    dry_run: bool = False,
    managed: Path | None = UNSET,
    on_result: Callable[[ArchiveResult], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> ArchiveRun:
    """Archive every session Claude Code's sweep deletes by ``now + window`` (already
    expired ones included) that ``archive_dir`` (default :func:`default_archive_dir`)
    does not hold as it is now. Writes only into that dir and the index; raises
    ValueError when the archive dir is not allowed. ``cwd`` is where Claude Code will
    start (its project settings may set the period), as for ``cleanup``.

    ``should_stop`` (``watch``'s Ctrl-C or SIGTERM) is asked while another run holds the
    dir's lock and between two sessions: a stop raises
    :class:`~sessiondex.transcripts.archive.ArchiveStopped`, keeping what was archived,
    and the run is not recorded as the last one."""
    from sessiondex.indexer.meta import keep_setting
    from sessiondex.transcripts.archive import ArchiveStopped, archive_dir_lock

    current = time.time() if now is None else now
    directory = Path(placed(archive_dir or default_archive_dir()))
    problem = archive_dir_problem(directory, roots, db_path)
    if problem:
        raise ValueError(problem)
    if dry_run:
        return _archive_run(db, roots, directory, window, cwd, current, True, managed, on_result)
    # Planned and written under the dir's lock: a second run at the same time waits,
    # then finds the first one's archives instead of writing them again.
    with archive_dir_lock(directory, should_stop=should_stop):
        run = _archive_run(
            db, roots, directory, window, cwd, current, False, managed, on_result, should_stop
        )
    if run.stopped:
        done = sum(1 for r in run.results if r.is_session)
        raise ArchiveStopped(f"stopped after {sessions_and_files(done, len(run.results) - done)}")
    stamp = iso_ms(int(current * 1000))
    if stamp is not None:
        with db.atomic():
            keep_setting(db, LAST_RUN_KEY, stamp)
    return run


def _archive_run(
    db: Database,
    roots: list[Path],
    directory: Path,
    window: float,
    cwd: str | None,
    now: float,
    dry_run: bool,
    managed: Path | None,
    on_result: Callable[[ArchiveResult], None] | None,
    should_stop: Callable[[], bool] | None = None,
) -> ArchiveRun:
    from sessiondex.indexer.archive_ingest import add_archive_dir, refresh_archives
    from sessiondex.indexer.stats import RefreshStats
    from sessiondex.transcripts.archive import remove_stale_temps

    if not dry_run:
        remove_stale_temps(directory)  # what a killed earlier run left behind
        # Indexed from now on, also after a rebuild; and again by every run, so an index
        # that was lost (damaged, deleted) learns the dir back from the daily job. Before
        # the plan, whose refresh reads the dir: what another run (another index) just
        # archived there counts as archived.
        add_archive_dir(db, directory)
        refresh_archives(db, RefreshStats(), directories=[directory])
    # For the sweep that deletes soonest: claude started in any project of the history.
    plan = fresh_plan(db, roots, cwd=cwd, now=now + window, managed=managed, strictest=True)
    run = ArchiveRun(
        now,
        str(directory),
        window,
        dry_run,
        [{"config_dir": r.config_dir, **r.retention.as_dict()} for r in plan.roots],
    )
    # With no --days, a root plan's ``expired`` is exactly what the sweep deletes by then
    # (keep-tagged sessions included: the sweep ignores tags); exempt ones are apart.
    # A session it keeps but whose old subagent transcripts it deletes is archived whole
    # too: the archive is then the only copy of those.
    for entry in [e for r in plan.roots for e in (*r.expired, *r.losing_subagents)]:
        if should_stop is not None and should_stop():
            run.stopped = True
            break
        if entry.kind != SESSION:
            try:
                result = _archive_file(entry, roots, directory, dry_run)
            except OSError as exc:  # a vanished file, a permission: this file only
                result = _result(entry, FAILED, message=str(exc.strerror or exc))
        # Archived as it is now in *this* dir: a copy in another archive dir does not
        # count, or `--to DIR2` would never write the copy the user asked DIR2 for.
        elif here := entry.archive and archived_version(
            db,
            entry.session_id,
            entry.project_key,
            entry.transcript_size,
            entry.mtime_ns,
            archive_dir=str(directory),
        ):
            result = _result(entry, ALREADY, archive=here)
        elif dry_run:
            result = _result(entry, PLANNED)
        else:
            try:
                result = _archive_one(db, entry, roots, directory)
            except OSError as exc:  # a vanished file, a permission: this session only
                result = _result(entry, FAILED, message=str(exc.strerror or exc))
        run.results.append(result)
        if on_result is not None:
            on_result(result)
    return run


# --------------------------------------------------------------------------- restore


@dataclass
class RestoreResult:
    """A session put back from its archive."""

    session_id: str
    archive: str
    transcript: str
    folder: str | None
    expired: bool  # its archived mtime is past cleanupPeriodDays: the next sweep takes it
    days: int | None  # the config dir's cleanupPeriodDays (None: the sweep is skipped)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _restore_root(roots: list[Path], project_key: str) -> Path:
    """The config dir a session goes back to: the first configured one that still has
    its project dir, else the first one (the archive does not record the config dir;
    with one config dir, the usual case, this is always where it came from)."""
    for root in roots:
        if (root / "projects" / project_key).is_dir():
            return root
    return roots[0]


def restore(
    db: Database, session_id: str, roots: list[Path], *, now: float | None = None
) -> RestoreResult:
    """Put the newest archived version of ``session_id`` back into its project dir, byte
    for byte (its archived mtimes too), and index it live. Raises
    :class:`~sessiondex.query.resolve.NotFound` when no archive holds the session,
    :class:`~sessiondex.query.resolve.Ambiguous` when a short ID starts several, and
    :class:`~sessiondex.transcripts.archive.RestoreRefused` (nothing written) when a
    transcript of the session exists, there or anywhere the index knows."""
    from sessiondex.indexer.ingest import include_tools_setting, ingest_file
    from sessiondex.indexer.refresh import ingest_path
    from sessiondex.indexer.stats import RefreshStats
    from sessiondex.query.archives import archived_ids_with_prefix
    from sessiondex.query.resolve import MIN_PREFIX, Ambiguous, NotFound, is_id_prefix
    from sessiondex.transcripts.archive import RestoreRefused, restore_session_archive
    from sessiondex.transcripts.discover import iter_subagent_files

    if not roots:
        raise RestoreRefused("no config dir to restore into")
    row = newest_archive(db, session_id.strip())
    if row is None and is_id_prefix(session_id.strip()):  # the short ID `list` shows
        ids = archived_ids_with_prefix(db, session_id.strip())
        if len(ids) > 1:
            raise Ambiguous(
                f"{session_id} starts {len(ids)} archived sessions ({', '.join(ids[:5])}"
                f"{', …' if len(ids) > 5 else ''}): give more of the ID",
                [{"session_id": sid} for sid in ids],
            )
        row = newest_archive(db, ids[0]) if ids else None
    if row is None:
        short = session_id.strip()
        if short and len(short) < MIN_PREFIX and archived_ids_with_prefix(db, short):
            raise NotFound(
                f"{short} is too short for an ID: give at least {MIN_PREFIX} characters"
                " (as `list --include-archived` shows)"
            )
        raise NotFound(f"No archived session with ID: {session_id}")
    live = live_transcripts(db, row["session_id"], roots)
    if live:
        raise RestoreRefused(
            f"session {row['session_id']} is not gone: its transcript is {live[0]}; "
            "nothing restored"
        )
    root = _restore_root(roots, row["project_key"])
    restored = restore_session_archive(Path(row["file_path"]), root)
    stats = RefreshStats()
    ingest_path(db, str(restored.transcript), roots, stats)
    tools = include_tools_setting(db)
    for sub in iter_subagent_files(root, restored.project_key, restored.session_id):
        ingest_file(db, sub, stats, include_tools=tools)
    retention = read_retention(root)
    current = time.time() if now is None else now
    expired = (
        retention.days is not None and restored.mtime_ns / 1e9 < current - retention.days * DAY
    )
    return RestoreResult(
        restored.session_id,
        row["file_path"],
        str(restored.transcript),
        str(restored.folder) if restored.folder is not None else None,
        expired,
        retention.days,
    )


# --------------------------------------------------------------------------- schedule


class Daily:
    """Calls ``job`` at the first :meth:`poll` and again whenever ``interval`` seconds
    have passed by ``clock`` since the last call: ``watch`` polls it from its main loop,
    so a user who keeps ``watch`` running is rescued at start and once a day. The
    clock is injectable (tests advance a fake one instead of waiting a day)."""

    def __init__(
        self,
        job: Callable[[], object],
        *,
        interval: float = DAY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.job = job
        self.interval = interval
        self.clock = clock
        self.last: float | None = None

    def poll(self) -> bool:
        """Run the job if it is due; whether it ran."""
        now = self.clock()
        if self.last is not None and now - self.last < self.interval:
            return False
        self.last = now
        self.job()
        return True
