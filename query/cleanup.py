"""Claude Code's retention sweep, predicted from the index: the dry run of ``cleanup``
and the counts of ``stats`` (the warning under ``list``, and which sessions the sweep
deletes soon, are :mod:`query.expiry`).

The rules themselves (which period, which sessions are exempt) are
:mod:`sessiondex.transcripts.retention`; carrying a plan out is
:mod:`sessiondex.actions.cleanup`. Every function takes ``now`` so tests (and callers)
get one fixed clock. Where Claude Code's behaviour is ambiguous we lean towards
predicting deletion: a false alarm costs a glance, a missed warning costs months of
history.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.shape import stat_unchanged
from sessiondex.query.archives import (
    archived_copy_sql,
    archived_only,
    archived_paths,
    archived_version,
    last_run,
)
from sessiondex.query.expiry import COUNT_COLUMNS, SOON_DAYS, deleted_by
from sessiondex.query.expiry import expiring_soon as expiring_soon  # re-exported
from sessiondex.query.sessions import activity_ms, display_title, iso_ms
from sessiondex.transcripts.discover import (
    LEGACY_SUBAGENT,
    MAIN,
    OTHER_JSONL,
    ProjectJsonl,
    TranscriptFile,
    describe_path,
    iter_project_jsonl,
    iter_transcripts,
)
from sessiondex.transcripts.retention import (
    DAY,
    MANAGED,
    SWEEP_INTERVAL,
    UNSET,
    Retention,
    desktop_exemption,
    files_say_desktop,
    folder_stats,
    read_retention,
    window_desktop,
)
from sessiondex.transcripts.tags import sanitize_tag

if TYPE_CHECKING:
    from sqlite_utils import Database

DEFAULT_KEEP_TAG = "keep"

# A plan entry's ``kind``: a session, or a project-level ``*.jsonl`` that is none
# (:func:`~sessiondex.transcripts.discover.project_jsonl_kind`'s kinds), which the sweep
# deletes all the same.
SESSION = "session"
#: What the dry run calls each kind of file that is no session.
FILE_LABELS = {
    LEGACY_SUBAGENT: "legacy subagent transcript (agent-*.jsonl), not a session",
    OTHER_JSONL: ".jsonl file that is not a session",
}


# --------------------------------------------------------------------------- plan


# 0001-01-01T00:00:00Z: a time before it is no date (a --days of millions of days).
_FIRST_DATE = -62135596800


def _iso(seconds: float | None) -> str | None:
    if seconds is None or seconds < _FIRST_DATE:
        return None
    try:
        return iso_ms(int(seconds * 1000))
    except (OverflowError, OSError, ValueError):
        return None


def _cutoff(now: float, days: int | None) -> float | None:
    return None if days is None else now - days * DAY


@dataclass
class PlanEntry:
    """One session the plan talks about."""

    session_id: str
    config_dir: str
    project_key: str
    file_path: str
    cwd: str | None
    title: str
    tag: str | None
    entrypoint: str | None
    last_activity: str | None
    mtime: str | None
    mtime_ns: int
    transcript_size: int
    size: int  # transcript + <id>/ folder
    # SESSION, or the kind of a project-level *.jsonl that is none (then session_id is
    # its file name's stem, and title says what it is: no session to resume).
    kind: str = SESSION
    protected: bool = False
    claude_code_deletes: bool = False
    exempt_reason: str | None = None
    archive: str | None = None  # the archive already holding this exact version
    # A surviving session: its subagent transcripts the sweep deletes (older than the
    # cutoff), and their bytes.
    old_subagents: int = 0
    old_subagent_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ENTRY_FIELDS}


#: The keys of :meth:`PlanEntry.as_dict` (the JSON, jsonl and CSV fields of an entry):
#: all but ``mtime_ns``, which ``mtime`` says in ISO form.
ENTRY_FIELDS = tuple(f.name for f in fields(PlanEntry) if f.name != "mtime_ns")


@dataclass
class RootPlan:
    """The plan for one config dir."""

    config_dir: str
    retention: Retention
    days: int | None  # the period this plan uses (--days, else Claude Code's)
    days_source: str
    cutoff: float | None
    last_cleanup: float | None
    next_sweep: float | None  # None: at Claude Code's next start
    expired: list[PlanEntry] = field(default_factory=list)  # incl. protected
    exempt: list[PlanEntry] = field(default_factory=list)
    # Sessions the sweep keeps but whose old subagent transcripts it deletes (it clears
    # old files out of surviving sessions' folders: docs/retention.md#what-the-sweep-deletes).
    losing_subagents: list[PlanEntry] = field(default_factory=list)
    claude_code_sessions: int = 0
    claude_code_bytes: int = 0
    # Project-level *.jsonl files that are no sessions, which the sweep deletes too.
    claude_code_files: int = 0
    claude_code_file_bytes: int = 0

    def count_deletion(self, entry: PlanEntry) -> None:
        """Count ``entry`` among what Claude Code's sweep deletes."""
        if entry.kind == SESSION:
            self.claude_code_sessions += 1
            self.claude_code_bytes += entry.size
        else:
            self.claude_code_files += 1
            self.claude_code_file_bytes += entry.size

    @property
    def to_delete(self) -> list[PlanEntry]:
        return [e for e in self.expired if not e.protected]

    @property
    def protected(self) -> list[PlanEntry]:
        return [e for e in self.expired if e.protected]

    def as_dict(self) -> dict[str, Any]:
        return {
            "config_dir": self.config_dir,
            "claude_code": {
                **self.retention.as_dict(),
                "last_cleanup": _iso(self.last_cleanup),
                "next_sweep": _iso(self.next_sweep),
                "would_delete_sessions": self.claude_code_sessions,
                "would_delete_bytes": self.claude_code_bytes,
                "would_delete_files": self.claude_code_files,
                "would_delete_file_bytes": self.claude_code_file_bytes,
                "would_delete_subagent_transcripts": sum(
                    e.old_subagents for e in self.losing_subagents
                ),
                "would_delete_subagent_bytes": sum(
                    e.old_subagent_bytes for e in self.losing_subagents
                ),
            },
            "losing_subagents": [e.as_dict() for e in self.losing_subagents],
            "days": self.days,
            "days_source": self.days_source,
            "cutoff": _iso(self.cutoff),
            "expired": [e.as_dict() for e in self.to_delete],
            "protected": [e.as_dict() for e in self.protected],
            "exempt": [e.as_dict() for e in self.exempt],
            "totals": _totals(self.to_delete, self.protected, self.exempt),
        }


def _totals(
    delete: list[PlanEntry], protected: list[PlanEntry], exempt: list[PlanEntry]
) -> dict[str, int]:
    """What each list of a plan holds, sessions and files that are none counted apart
    (a file is no session): ``sessions``/``bytes`` and ``files``/``file_bytes`` of the
    expired, ``protected``/``protected_bytes`` (sessions only: a file has no tag), and
    ``exempt``/``exempt_bytes`` and ``exempt_files``/``exempt_file_bytes`` of the exempt.
    Each total is its list's entries of one kind, so they add up to the lists."""

    def split(entries: list[PlanEntry]) -> tuple[list[PlanEntry], list[PlanEntry]]:
        return [e for e in entries if e.kind == SESSION], [e for e in entries if e.kind != SESSION]

    sessions, files = split(delete)
    exempt_sessions, exempt_files = split(exempt)
    return {
        "sessions": len(sessions),
        "bytes": sum(e.size for e in sessions),
        "files": len(files),
        "file_bytes": sum(e.size for e in files),
        "protected": len(protected),
        "protected_bytes": sum(e.size for e in protected),
        "exempt": len(exempt_sessions),
        "exempt_bytes": sum(e.size for e in exempt_sessions),
        "exempt_files": len(exempt_files),
        "exempt_file_bytes": sum(e.size for e in exempt_files),
    }


@dataclass
class CleanupPlan:
    now: float
    keep_tag: str
    roots: list[RootPlan]

    @property
    def to_delete(self) -> list[PlanEntry]:
        return [e for r in self.roots for e in r.to_delete]

    def as_dict(self) -> dict[str, Any]:
        roots = [r.as_dict() for r in self.roots]
        return {
            "now": _iso(self.now),
            "keep_tag": self.keep_tag,
            "config_dirs": roots,
            "totals": _totals(
                self.to_delete,
                [e for r in self.roots for e in r.protected],
                [e for r in self.roots for e in r.exempt],
            ),
        }


#: A callback bringing one transcript's rows up to date (``stored``: its ``files`` row,
#: None when not indexed); True when it wrote them, so they are read again.
RefreshFile = Callable[[TranscriptFile, "dict[str, Any] | None"], bool]

# Paths per statement: SQLite's default limit of host parameters is far above it.
_CHUNK = 500
# The session row's column the plan adds: the archive holding its version (else NULL).
_ARCHIVE_COPY = "archive_copy"


@dataclass
class _Indexed:
    """What the index holds of the transcripts a plan names, read in a few statements
    (per session, three queries cost 1.4 s of a 20,000-session dry run): their
    ``files`` rows, and their ``sessions`` rows with the archive of their version."""

    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)

    def load(self, db: Database, paths: list[str]) -> _Indexed:
        for start in range(0, len(paths), _CHUNK):
            chunk = paths[start : start + _CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for row in _dicts(db, f"SELECT * FROM files WHERE path IN ({marks})", chunk):
                self.files[row["path"]] = row
            sql = (
                f"SELECT s.*, {archived_copy_sql('s')} AS {_ARCHIVE_COPY}"
                f" FROM sessions s WHERE s.file_path IN ({marks})"
            )
            for row in _dicts(db, sql, chunk):
                self.sessions.setdefault(row["file_path"], row)
        return self

    def reload(self, db: Database, path: str) -> None:
        """Forget one transcript's rows and read them again (the refresh wrote them)."""
        self.files.pop(path, None)
        self.sessions.pop(path, None)
        self.load(db, [path])

    def window_test(self, tf: TranscriptFile) -> bool | None:
        """Claude Code's desktop window test from the index (:func:`window_desktop`) when
        it holds this transcript as it is now, else None (the file must be read): its
        ``files`` row has the file's stat and is not racily so (the refresh's own skip
        rule), every byte was folded (a whole last record without its newline waits
        for the file to be quiet) and no line was repaired or skipped (a glued or
        invalid line, where the fold and the sweep's reading may part)."""
        stored = self.files.get(str(tf.path))
        row = self.sessions.get(str(tf.path))
        if stored is None or row is None or stored["kind"] != MAIN:
            return None
        if not stat_unchanged(stored, tf) or stored["consumed"] != tf.size or stored["bad_lines"]:
            return None
        return window_desktop(
            row["head_entrypoint"], row["last_entrypoint"], row["last_entrypoint_offset"], tf.size
        )


def _dicts(db: Database, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cursor = db.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r)) for r in cursor.fetchall()]


def archived_copy_exists(db: Database, archive_dir: Path, entry: PlanEntry) -> str | None:
    """The archive in ``archive_dir`` that already holds this exact version of the
    session, else None."""
    return archived_version(
        db,
        entry.session_id,
        entry.project_key,
        entry.transcript_size,
        entry.mtime_ns,
        archive_dir=str(archive_dir),
    )


def _same_tag(tag: str | None, keep_tag: str) -> bool:
    return tag is not None and tag != "" and sanitize_tag(tag).casefold() == keep_tag.casefold()


def plan_root(
    db: Database,
    root: Path,
    *,
    cwd: str | None,
    now: float,
    days: int | None = None,
    keep_tag: str = DEFAULT_KEEP_TAG,
    managed: Path | None = UNSET,
    refresh_file: RefreshFile | None = None,
    strictest: bool = False,
    index_windows: bool = False,
) -> RootPlan:
    """What Claude Code's next sweep deletes in ``root``, and what we would.

    ``refresh_file`` brings one expired session's rows up to date before they are read
    (the writer's job, not this read-only module's): a ``keep`` tag must be read from
    the file as it is now, not as last indexed. ``strictest``: plan for every sweep a
    directory of the history would run (:func:`sweep_cwds`), the soonest heading the
    answer, instead of the one started in ``cwd``. ``index_windows``: answer the desktop
    window test from the index where it holds the file as it is (``cleanup``'s dry
    run, which then opens no transcript of a current index), else by reading each
    expired file's windows (``--apply``, the rescue: what they act on is read)."""
    if strictest:
        # Every sweep a ``claude`` started in one of the history's directories would
        # run, the soonest first: its plan heads the answer, the others add what only
        # they delete (a desktop ceiling where the soonest keeps desktop sessions).
        plans = [
            plan_root(
                db,
                root,
                cwd=where,
                now=now,
                days=days,
                keep_tag=keep_tag,
                managed=managed,
                refresh_file=refresh_file,
                index_windows=index_windows,
            )
            for where in sweep_cwds(db, root, cwd, managed)
        ]
        return _merged(plans)
    retention = read_retention(root, cwd, managed)
    effective = days if days is not None else retention.days
    cutoff = _cutoff(now, effective)
    try:
        # Followed, as Claude Code stats and rewrites it: a marker kept in dotfiles
        # (stow, home-manager) is a link whose target's mtime holds the sweep back.
        last = os.stat(Path(root) / ".last-cleanup").st_mtime
    except OSError:
        last = None  # absent or dangling: Claude Code sweeps at its next start
    next_sweep = last + SWEEP_INTERVAL if last is not None and last + SWEEP_INTERVAL > now else None
    # What Claude Code's next sweep deletes is judged when it can run: a sweep held back
    # by .last-cleanup a day deletes what is a day older by then ("would delete 0" of a
    # session 29.5 days old, a sweep in 23 h and 30 days kept, was wrong).
    sweep_at = next_sweep if next_sweep is not None else now
    cc_cutoff = _cutoff(sweep_at, retention.days)
    plan = RootPlan(
        str(root),
        retention,
        effective,
        "--days" if days is not None else retention.source,
        cutoff,
        last,
        next_sweep,
    )
    keep = sanitize_tag(keep_tag)
    cc_deleted: set[str] = set()  # transcripts the sweep deletes whole

    def old_enough(mtime_ns: int) -> tuple[bool, bool]:
        """Whether our plan, and Claude Code's sweep, take a file this old."""
        mtime = mtime_ns / 1e9
        return (
            cutoff is not None and mtime < cutoff,
            cc_cutoff is not None and mtime < cc_cutoff,
        )

    def place(entry: PlanEntry, ours: bool, theirs: bool, desktop: bool | None) -> None:
        path, mtime = Path(entry.file_path), entry.mtime_ns / 1e9
        if desktop is None and retention.exempts_desktop:
            desktop = files_say_desktop(path)  # read once for both moments
        exempt = desktop_exemption(path, retention, mtime, now, desktop=desktop)
        exempt_then = (
            exempt
            if sweep_at == now
            else desktop_exemption(path, retention, mtime, sweep_at, desktop=desktop)
        )
        entry.claude_code_deletes = theirs and exempt_then is None
        entry.exempt_reason = exempt
        if entry.claude_code_deletes:
            cc_deleted.add(entry.file_path)
            plan.count_deletion(entry)
        if ours and exempt:
            # The sweep keeps it whatever its tag: ``protected`` names the expired
            # sessions the keep tag alone saves (the ``protected`` list; ``tag`` still
            # says it is tagged).
            entry.protected = False
            plan.exempt.append(entry)
        elif ours:
            plan.expired.append(entry)

    # Only the files old enough to be in the plan get an entry; their rows are read in
    # a few statements, not three per session.
    old = [(tf, *old_enough(tf.mtime_ns)) for tf in iter_transcripts(root, subagents=False)]
    old = [(tf, ours, theirs) for tf, ours, theirs in old if ours or theirs]
    indexed = _Indexed().load(db, [str(tf.path) for tf, _, _ in old])
    for tf, ours, theirs in old:
        path = str(tf.path)
        if refresh_file is not None and refresh_file(tf, indexed.files.get(path)):
            indexed.reload(db, path)
        row = indexed.sessions.get(path) or {"session_id": tf.session_id, "mtime_ns": tf.mtime_ns}
        # The window test from the index where it holds the file as it is (the dry
        # run); otherwise, and for --apply and the rescue, the file's windows are read.
        desktop = indexed.window_test(tf) if index_windows else None
        place(_entry(db, root, tf, row, keep), ours, theirs, desktop)
    # The sweep deletes every old *.jsonl of a project dir, sessions or not (a legacy
    # top-level subagent transcript, any other name): the same cutoffs and desktop rule
    # (the entrypoint in the file's head or tail window: never indexed, always read),
    # no keep tag (no tag record is read from a file that is no session).
    for jf in iter_project_jsonl(root):
        ours, theirs = old_enough(jf.mtime_ns)
        if ours or theirs:
            place(file_entry(jf), ours, theirs, None)
    if cc_cutoff is not None and abs(cc_cutoff) < 9e9:  # beyond, no int64 ns (and no file)
        plan.losing_subagents = _losing_subagents(db, root, int(cc_cutoff * 1e9), keep, cc_deleted)
    for entries in (plan.expired, plan.exempt):
        entries.sort(key=lambda e: (e.mtime_ns, e.session_id))  # oldest (next to go) first
    return plan


def _entry(
    db: Database, root: Path, tf: TranscriptFile, row: dict[str, Any], keep: str
) -> PlanEntry:
    folder_bytes, _ = folder_stats(tf.path.with_suffix(""))
    key = (tf.session_id, tf.project_key, tf.size, tf.mtime_ns)
    if _ARCHIVE_COPY in row and (
        (row.get("session_id"), row.get("project_key"), row.get("file_size"), row.get("mtime_ns"))
        == key
    ):
        archive = row[_ARCHIVE_COPY]  # read with the row, of this very version
    else:
        archive = archived_version(db, *key)
    return PlanEntry(
        session_id=tf.session_id,
        config_dir=str(root),
        project_key=tf.project_key,
        file_path=str(tf.path),
        cwd=row.get("cwd"),
        title=display_title(row),
        tag=row.get("tag"),
        entrypoint=row.get("entrypoint"),
        last_activity=iso_ms(activity_ms(row)),
        mtime=_iso(tf.mtime_ns / 1e9),
        mtime_ns=tf.mtime_ns,
        transcript_size=tf.size,
        size=tf.size + folder_bytes,
        protected=_same_tag(row.get("tag"), keep),
        archive=archive,
    )


def file_entry(jf: ProjectJsonl) -> PlanEntry:
    """The plan's entry for a project-level ``*.jsonl`` that is no session: its name
    stands for the ID, its kind for the title; it has no cwd, tag or activity (it is
    not indexed, and not read beyond the desktop windows)."""
    return PlanEntry(
        session_id=jf.path.name[: -len(".jsonl")],
        config_dir=str(jf.root),
        project_key=jf.project_key,
        file_path=str(jf.path),
        cwd=None,
        title=FILE_LABELS.get(jf.kind, FILE_LABELS[OTHER_JSONL]),
        tag=None,
        entrypoint=None,
        last_activity=None,
        mtime=_iso(jf.mtime_ns / 1e9),
        mtime_ns=jf.mtime_ns,
        transcript_size=jf.size,
        size=jf.size,
        kind=jf.kind,
    )


def _losing_subagents(
    db: Database, root: Path, cutoff_ns: int, keep: str, deleted: set[str]
) -> list[PlanEntry]:
    """Sessions whose transcript the sweep keeps (younger than the cutoff, or exempt: a
    desktop session) but whose subagent transcripts it deletes, being older than the
    cutoff; ``deleted``: the transcripts it deletes whole. From the index."""
    rows = db.execute(
        "SELECT s.file_path, count(*), sum(f.size) FROM files f"
        " JOIN sessions s ON s.id = f.session_rowid"
        " WHERE f.root = ? AND f.kind = 'subagent' AND f.mtime_ns < ? AND s.archived = 0"
        " GROUP BY s.id ORDER BY s.mtime_ns, s.session_id",
        [str(root), cutoff_ns],
    ).fetchall()
    entries: list[PlanEntry] = []
    kept = [(str(path), count, size) for path, count, size in rows if path not in deleted]
    indexed = _Indexed().load(db, [path for path, _, _ in kept])
    for file_path, count, size in kept:
        tf = describe_path(Path(file_path), [root])
        row = indexed.sessions.get(file_path) if tf is not None and tf.kind == MAIN else None
        if tf is None or row is None:
            continue
        entry = _entry(db, root, tf, row, keep)
        entry.old_subagents, entry.old_subagent_bytes = int(count), int(size or 0)
        entries.append(entry)
    return entries


def sweep_cwds(
    db: Database, root: Path, cwd: str | None, managed: Path | None = UNSET
) -> list[str | None]:
    """One directory for each sweep a ``claude`` started in ``cwd`` or in a directory a
    session of ``root`` was recorded in would run, the soonest (shortest
    ``cleanupPeriodDays``) first, ``cwd`` first among equals.

    Claude Code's sweep covers every project dir of the config dir, with the settings
    where it starts: a project whose ``.claude/settings.json`` says 7 days deletes the
    10-day-old sessions of every other project the next time ``claude`` starts there,
    and one with a desktop ceiling deletes old desktop sessions another keeps. A rescue
    (``archive``, ``watch``'s daily run) must plan for each such sweep, not only for the
    one started where it runs. Two directories sweep alike when their period, desktop
    ceiling and managed settings (which lift the desktop exemption) agree; directories
    whose settings make Claude Code skip the sweep are no candidates."""
    rows = db.execute(
        "SELECT DISTINCT cwd FROM sessions WHERE root = ? AND cwd IS NOT NULL AND cwd != ''",
        [str(root)],
    ).fetchall()
    sweeps: dict[tuple[int, int, bool], str | None] = {}
    for candidate in [cwd, *(str(c) for (c,) in rows)]:
        retention = read_retention(root, candidate, managed)
        if retention.days is None:
            continue
        key = (retention.days, retention.desktop_days, retention.source_kind == MANAGED)
        sweeps.setdefault(key, candidate)
    if not sweeps:
        return [cwd]  # no sweep anywhere: the plan says so for cwd
    return [sweeps[key] for key in sorted(sweeps, key=lambda k: k[0])]


def _merged(plans: list[RootPlan]) -> RootPlan:
    """The first plan (the soonest sweep's), with what only the others delete added:
    their expired sessions and sessions losing subagents it does not list."""
    head = plans[0]
    listed = {e.file_path for e in head.expired}
    for plan in plans[1:]:
        for entry in plan.expired:
            if entry.file_path not in listed:
                listed.add(entry.file_path)
                head.expired.append(entry)
                if entry.claude_code_deletes:
                    head.count_deletion(entry)
    head.exempt = [e for e in head.exempt if e.file_path not in listed]
    losing = {e.file_path for e in head.losing_subagents}
    for plan in plans[1:]:
        for entry in plan.losing_subagents:
            if entry.file_path not in listed and entry.file_path not in losing:
                losing.add(entry.file_path)
                head.losing_subagents.append(entry)
    head.expired.sort(key=lambda e: (e.mtime_ns, e.session_id))
    return head


def plan_cleanup(
    db: Database,
    roots: Iterable[Path],
    *,
    cwd: str | None = None,
    days: int | None = None,
    keep_tag: str = DEFAULT_KEEP_TAG,
    now: float | None = None,
    managed: Path | None = UNSET,
    refresh_file: RefreshFile | None = None,
    strictest: bool = False,
    index_windows: bool = False,
) -> CleanupPlan:
    """The dry run: one :class:`RootPlan` per config dir. ``days`` overrides
    ``cleanupPeriodDays`` for our plan (Claude Code's own prediction keeps its value);
    ``strictest`` plans each for every sweep its directories would run (:func:`sweep_cwds`);
    ``index_windows``: the desktop window test from the index where it is current
    (:func:`plan_root`)."""
    current = time.time() if now is None else now
    return CleanupPlan(
        current,
        keep_tag,
        [
            plan_root(
                db,
                Path(root),
                cwd=cwd,
                now=current,
                days=days,
                keep_tag=keep_tag,
                managed=managed,
                refresh_file=refresh_file,
                strictest=strictest,
                index_windows=index_windows,
            )
            for root in roots
        ],
    )


# --------------------------------------------------------------------------- list / stats


def cleanup_summary(
    db: Database,
    roots: list[Path],
    cwd: str | None = None,
    *,
    now: float | None = None,
    managed: Path | None = UNSET,
) -> dict[str, Any]:
    """Counts for ``stats`` and ``cleanup``: what Claude Code's sweep deletes now and
    within 3 days, and what the archive covers of it (``archive``: ``protected``, doomed
    within 3 days but archived as they are; ``at_risk``, doomed and not archived;
    ``archived_only``, sessions the archive alone still holds; ``last_run``)."""
    current = time.time() if now is None else now
    texts = [str(r) for r in roots]
    cursor = db.execute(
        f"SELECT {COUNT_COLUMNS} FROM sessions s"
        f" WHERE s.archived = 0 AND s.root IN ({', '.join('?' for _ in texts) or 'NULL'})",
        texts,
    )
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, r)) for r in cursor.fetchall()]
    retentions: dict[str, Retention] = {}
    expired = deleted_by(rows, cwd, current, 0, managed, retentions)
    soon = deleted_by(rows, cwd, current, SOON_DAYS * DAY, managed, retentions)
    for root in texts:
        retentions.setdefault(root, read_retention(Path(root), cwd, managed))
    protected = len(archived_paths(db, [row["file_path"] for row in soon]))
    return {
        "expired_sessions": len(expired),
        "expired_bytes": sum(row["file_size"] or 0 for row in expired),
        "expiring_within_3_days": len(soon) - len(expired),
        "config_dirs": [{"config_dir": k, **v.as_dict()} for k, v in retentions.items()],
        "archive": {
            "protected": protected,
            "at_risk": len(soon) - protected,
            "window_days": SOON_DAYS,
            "archived_only": archived_only(db),
            "last_run": last_run(db),
        },
    }
