"""Carry out a cleanup plan: delete, or archive then delete, losing nothing silently.

The plan (what Claude Code's sweep and our ``--days`` would delete) is
:mod:`sessiondex.query.cleanup`; this module acts on it with the safety rules of
``docs/retention.md``: never a transcript written in the last minutes, never through a
symlink, never anything but ``<uuid>.jsonl`` and ``<uuid>/`` (and the project-level
``*.jsonl`` files that are no sessions, which Claude Code's sweep deletes too), and the
index follows each deletion.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiondex.actions.paths import placed, write_target_problem
from sessiondex.indexer.ingest import include_tools_setting, ingest_file, remove_path
from sessiondex.indexer.stats import UNCHANGED, RefreshStats
from sessiondex.query.cleanup import (
    SESSION,
    CleanupPlan,
    PlanEntry,
    archived_copy_exists,
    plan_cleanup,
)
from sessiondex.transcripts.discover import MAIN, TranscriptFile, describe_path
from sessiondex.transcripts.retention import folder_stats

if TYPE_CHECKING:
    from sqlite_utils import Database

# A transcript (or a file in its folder) written this recently may be live: never touched.
LIVE_SECONDS = 600


def fresh_plan(db: Database, roots: Iterable[Path], **options: Any) -> CleanupPlan:
    """:func:`~sessiondex.query.cleanup.plan_cleanup` with each expired session's rows
    first brought up to date from its file (a stat when unchanged): a ``keep`` tag added
    a moment ago must protect the session."""
    tools = include_tools_setting(db)

    def refresh_file(tf: TranscriptFile, stored: dict[str, Any] | None) -> bool:
        # ``stored``: the plan read the rows of all expired sessions at once, so an
        # unchanged file costs a stat and no query.
        found = ingest_file(db, tf, RefreshStats(), include_tools=tools, stat_row=stored)
        return found != UNCHANGED

    return plan_cleanup(db, roots, refresh_file=refresh_file, **options)


DELETED, ARCHIVED, SKIPPED, FAILED = "deleted", "archived", "skipped", "failed"


@dataclass
class Outcome:
    """What happened to one planned session."""

    session_id: str
    file_path: str
    status: str  # deleted / archived (a protected session: copy kept) / skipped / failed
    message: str = ""
    removed: list[str] = field(default_factory=list)
    archive: str | None = None
    kind: str = SESSION  # the plan entry's: a session, or a *.jsonl that is none

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def archive_dir_problem(
    directory: Path,
    roots: Iterable[Path],
    db_path: str | os.PathLike[str] | None = None,
    *,
    label: str = "archive dir",
) -> str | None:
    """Why ``directory`` cannot hold archives, else None (``archive --to`` and ``cleanup
    --archive`` alike): the output-path rule of :mod:`sessiondex.actions.paths` widened
    to the whole config dir (Claude Code's housekeeping prunes many of its folders, and
    an archive may be the only copy left), and not a file."""
    problem = write_target_problem(directory, roots, db_path, label=label, whole_config_dir=True)
    if problem is None and os.path.exists(directory) and not os.path.isdir(directory):
        problem = f"{label} {directory} is a file, not a directory"
    return problem


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev


def _apply_one(
    db: Database,
    entry: PlanEntry,
    roots: list[Path],
    archive_dir: Path | None,
    clock: Callable[[], float],
    archive_stats: RefreshStats,
) -> Outcome:
    from sessiondex.indexer.archive_ingest import ingest_archive
    from sessiondex.transcripts.archive import (
        ArchiveError,
        holds_session_as_it_is,
        write_session_archive,
    )
    from sessiondex.transcripts.write import WriteRefused, delete_session_files

    path = Path(entry.file_path)
    outcome = Outcome(entry.session_id, entry.file_path, FAILED)
    if not os.path.lexists(path):
        remove_path(db, str(path))
        outcome.status, outcome.message = SKIPPED, "already gone"
        return outcome
    tf = describe_path(path, roots)
    if tf is None or tf.kind != MAIN:
        outcome.message = "not a regular transcript inside projects/ (a symlink?); left alone"
        return outcome
    if tf.mtime_ns != entry.mtime_ns:
        outcome.status, outcome.message = SKIPPED, "modified since the plan was made; kept"
        return outcome
    _, folder_newest = folder_stats(path.with_suffix(""))
    newest = max(tf.mtime_ns, folder_newest) / 1e9
    if clock() - newest < LIVE_SECONDS:
        outcome.status = SKIPPED
        outcome.message = "written in the last 10 minutes (may be live); kept"
        return outcome
    before = _stat_key(os.lstat(path))
    archive: Path | None = None
    kept = None if archive_dir is None else archived_copy_exists(db, archive_dir, entry)
    if kept is not None and not holds_session_as_it_is(Path(kept), tf):
        kept = None  # the transcript as archived, its folder not: a new version
    if kept is not None:
        archive = Path(kept)  # this very version is there already (an archive run's)
        outcome.archive = kept
    elif archive_dir is not None:
        try:
            archive = write_session_archive(tf, archive_dir)
        except ArchiveError as exc:
            outcome.message = f"not archived, kept: {exc}"
            return outcome
        try:
            changed = _stat_key(os.lstat(path)) != before
        except OSError:
            changed = True
        if changed:
            archive.unlink(missing_ok=True)
            outcome.message = "changed while archiving; kept"
            return outcome
        outcome.archive = str(archive)
    try:
        removed = delete_session_files(path, roots)
    except WriteRefused as exc:
        outcome.message = str(exc)
        if not os.path.lexists(path):
            remove_path(db, str(path))  # the transcript went even if its folder did not
        return outcome
    remove_path(db, str(path))
    if archive is not None and archive_dir is not None and kept is None:
        ingest_archive(
            db,
            archive,
            Path(placed(archive_dir)),
            archive_stats,
            include_tools=include_tools_setting(db),
        )
    outcome.status = DELETED
    outcome.removed = [str(p) for p in removed]
    return outcome


def _apply_file(
    entry: PlanEntry, roots: list[Path], archive_dir: Path | None, clock: Callable[[], float]
) -> Outcome:
    """A project-level ``*.jsonl`` that is no session: the session's guards (in place,
    regular, unchanged since the plan, not written in the last 10 minutes), a verified
    copy first with ``archive_dir`` (reused when one of this version is there), then
    the file alone is removed. Nothing of it is indexed."""
    from sessiondex.transcripts.archive import (
        ArchiveError,
        file_archive_holding,
        write_file_archive,
    )
    from sessiondex.transcripts.discover import describe_project_jsonl
    from sessiondex.transcripts.write import WriteRefused, delete_project_jsonl

    path = Path(entry.file_path)
    outcome = Outcome(entry.session_id, entry.file_path, FAILED, kind=entry.kind)
    if not os.path.lexists(path):
        outcome.status, outcome.message = SKIPPED, "already gone"
        return outcome
    jf = describe_project_jsonl(path, roots)
    if jf is None:
        outcome.message = "not a regular file inside projects/ (a symlink?); left alone"
        return outcome
    if jf.mtime_ns != entry.mtime_ns:
        outcome.status, outcome.message = SKIPPED, "modified since the plan was made; kept"
        return outcome
    if clock() - jf.mtime_ns / 1e9 < LIVE_SECONDS:
        outcome.status = SKIPPED
        outcome.message = "written in the last 10 minutes (may be live); kept"
        return outcome
    if archive_dir is not None:
        before = _stat_key(os.lstat(path))
        try:
            archive = file_archive_holding(archive_dir, jf) or write_file_archive(jf, archive_dir)
            changed = _stat_key(os.lstat(path)) != before
        except ArchiveError as exc:
            outcome.message = f"not archived, kept: {exc}"
            return outcome
        except OSError:
            changed = True
        if changed:
            outcome.message = "changed while archiving; kept"
            return outcome
        outcome.archive = str(archive)
    try:
        outcome.removed = [str(delete_project_jsonl(path, roots))]
    except WriteRefused as exc:
        outcome.message = str(exc)
        return outcome
    outcome.status = DELETED
    return outcome


def _archive_copy(
    db: Database,
    entry: PlanEntry,
    roots: list[Path],
    archive_dir: Path,
    archive_stats: RefreshStats,
) -> Outcome:
    """A protected session: archive a copy (Claude Code's sweep ignores our tag), keep it.
    Skipped when the archive dir already holds this exact version."""
    from sessiondex.indexer.archive_ingest import ingest_archive
    from sessiondex.transcripts.archive import ArchiveError, write_session_archive

    outcome = Outcome(entry.session_id, entry.file_path, FAILED)
    directory = Path(placed(archive_dir))
    if archived_copy_exists(db, directory, entry):
        outcome.status, outcome.message = SKIPPED, "protected; already archived, kept"
        return outcome
    tf = describe_path(Path(entry.file_path), roots)
    if tf is None or tf.kind != MAIN:
        outcome.message = "not a regular transcript inside projects/; left alone"
        return outcome
    try:
        archive = write_session_archive(tf, directory)
    except ArchiveError as exc:
        outcome.message = f"protected; not archived: {exc}"
        return outcome
    ingest_archive(db, archive, directory, archive_stats, include_tools=include_tools_setting(db))
    outcome.status, outcome.archive = ARCHIVED, str(archive)
    outcome.message = "protected; archived a copy, original kept"
    return outcome


def apply_plan(
    db: Database,
    plan: CleanupPlan,
    roots: list[Path],
    *,
    archive_dir: Path | None = None,
    clock: Callable[[], float] = time.time,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Delete (after archiving, with ``archive_dir``) every unprotected expired session of
    ``plan``. Never a transcript written in the last 10 minutes by ``clock`` (nor one
    changed since the plan), never through a symlink, never anything but ``<uuid>.jsonl``
    and ``<uuid>/``; one failure does not stop the rest; the index follows each deletion."""
    from sessiondex.transcripts.archive import archive_dir_lock

    if archive_dir is None:
        return _apply(db, plan, roots, None, clock, on_outcome)
    archive_dir = Path(placed(archive_dir))
    problem = archive_dir_problem(archive_dir, roots)
    if problem:
        raise ValueError(problem)
    # As ``archive`` does: one run at a time per archive dir (actions.archive).
    with archive_dir_lock(archive_dir):
        from sessiondex.indexer.archive_ingest import add_archive_dir
        from sessiondex.transcripts.archive import remove_stale_temps

        remove_stale_temps(archive_dir)  # what a killed earlier run left behind
        add_archive_dir(db, archive_dir)  # before any deletion: never forgotten
        return _apply(db, plan, roots, archive_dir, clock, on_outcome)


def _apply(
    db: Database,
    plan: CleanupPlan,
    roots: list[Path],
    archive_dir: Path | None,
    clock: Callable[[], float],
    on_outcome: Callable[[Outcome], None] | None,
) -> list[Outcome]:
    outcomes: list[Outcome] = []
    stats = RefreshStats()
    for entry in [e for r in plan.roots for e in r.expired]:
        if entry.protected and archive_dir is None:
            continue
        try:
            if entry.kind != SESSION:  # no tag is read from it: never protected
                outcome = _apply_file(entry, roots, archive_dir, clock)
            elif entry.protected:
                outcome = _archive_copy(db, entry, roots, Path(archive_dir or "."), stats)
            else:
                outcome = _apply_one(db, entry, roots, archive_dir, clock, stats)
        except OSError as exc:  # a vanished folder, a permission: this session only
            message = f"{exc.strerror or exc}"
            outcome = Outcome(entry.session_id, entry.file_path, FAILED, message, kind=entry.kind)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes
