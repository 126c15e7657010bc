"""Claude Code's retention sweep, predicted, and a cleanup that loses nothing silently.

Claude Code deletes transcripts whose **file mtime** is older than ``cleanupPeriodDays``
(default 30) when it starts, at most once a day (``reference/cli-sessions.md`` §5,
``spec/semantics.md`` §6). Its users get no warning. This module answers, for each
config dir: which period applies (and from which settings file), whether the sweep will
run at all, which sessions it will delete next time, which are exempt (desktop
sessions) and which the user protected (a ``keep`` tag); and it carries out our own
cleanup (:func:`apply_plan`): delete, or archive then delete, with the safety rules of
the spec. Every function takes ``now`` so tests (and callers) get one fixed clock.

Where Claude Code's behaviour is ambiguous we lean towards predicting deletion: a false
alarm costs a glance, a missed warning costs months of history.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sessiondex.indexer.ingest import RefreshStats, include_tools_setting, ingest_file, remove_path
from sessiondex.query.scopes import resolve_cwd
from sessiondex.query.sessions import activity_ms, display_title, iso_ms
from sessiondex.transcripts.discover import MAIN, TranscriptFile, describe_path, iter_transcripts
from sessiondex.transcripts.records import DESKTOP_ENTRYPOINTS
from sessiondex.transcripts.tags import sanitize_tag

if TYPE_CHECKING:
    from sqlite_utils import Database

DEFAULT_DAYS = 30
DAY = 86400
SOON_DAYS = 3
# A transcript (or a file in its folder) written this recently may be live: never touched.
LIVE_SECONDS = 600
DEFAULT_KEEP_TAG = "keep"
# Claude Code re-runs its sweep only when <config>/.last-cleanup is older than this.
SWEEP_INTERVAL = DAY
# Head/tail window Claude Code reads for the entrypoint of a transcript.
ENTRYPOINT_WINDOW = 64 * 1024
MANAGED_ENV = "SESSIONDEX_MANAGED_SETTINGS"

MANAGED, LOCAL, PROJECT, USER, DEFAULT = "managed", "local", "project", "user", "default"


def default_managed_path(platform: str | None = None,
                         environ: dict[str, str] | None = None) -> Path | None:
    """Claude Code's managed (policy) settings file for this OS; ``$SESSIONDEX_MANAGED_SETTINGS``
    overrides it (tests, unusual installs)."""
    env = os.environ if environ is None else environ
    if env.get(MANAGED_ENV):
        return Path(env[MANAGED_ENV])
    system = platform or sys.platform
    if system.startswith("linux"):
        return Path("/etc/claude-code/managed-settings.json")
    if system == "darwin":
        return Path("/Library/Application Support/ClaudeCode/managed-settings.json")
    return None


def settings_files(config_dir: Path, cwd: str, managed: Path | None) -> list[tuple[str, Path]]:
    """The settings files Claude Code reads, highest precedence first."""
    files: list[tuple[str, Path]] = []
    if managed is not None:
        files.append((MANAGED, managed))
    project = Path(cwd) / ".claude"
    files += [(LOCAL, project / "settings.local.json"), (PROJECT, project / "settings.json"),
              (USER, Path(config_dir) / "settings.json")]
    return files


@dataclass
class Retention:
    """Claude Code's retention for one config dir, as its settings say."""

    days: int | None  # None: the sweep is skipped (an invalid value or unreadable file)
    source: str  # the file that set ``days``, or "default"
    source_kind: str  # managed / local / project / user / default
    desktop_days: int = 0  # desktopSessionCleanupPeriodDays; 0 = no ceiling
    problems: list[dict[str, str]] = field(default_factory=list)  # {"file", "problem"}
    notes: list[str] = field(default_factory=list)

    @property
    def sweep_enabled(self) -> bool:
        return self.days is not None

    def as_dict(self) -> dict[str, Any]:
        return {"days": self.days, "source": self.source, "source_kind": self.source_kind,
                "sweep_enabled": self.sweep_enabled,
                "desktop_session_cleanup_period_days": self.desktop_days,
                "problems": self.problems, "notes": self.notes}


def _valid_days(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _load_settings(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(settings, None), (None, None) when absent, or (None, problem)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except NotADirectoryError:
        return None, None
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if not data.strip():
        return {}, None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return None, f"does not parse as JSON ({exc})"
    if not isinstance(value, dict):
        return {}, None  # parses; Claude Code ignores a non-object (no retention key)
    return value, None


_UNSET: Any = object()


def read_retention(config_dir: Path, cwd: str | None = None,
                   managed: Path | None = _UNSET) -> Retention:
    """``cleanupPeriodDays`` for a sweep started in ``cwd`` on ``config_dir``.

    Highest precedence first: managed, ``<cwd>/.claude/settings.local.json``,
    ``<cwd>/.claude/settings.json``, ``<config>/settings.json``; else 30. Any file that
    cannot be parsed, or any present but invalid value (not a positive integer), makes
    Claude Code skip its sweep: ``days`` is None and ``problems`` names the file.
    """
    managed_path = default_managed_path() if managed is _UNSET else managed
    here = resolve_cwd(cwd)
    days: int | None = None
    source, kind = DEFAULT, DEFAULT
    desktop: int | None = None
    problems: list[dict[str, str]] = []
    notes: list[str] = []
    for label, path in settings_files(config_dir, here, managed_path):
        settings, problem = _load_settings(path)
        if problem:
            problems.append({"file": str(path), "problem": f"{label} settings {problem}"})
            continue
        if settings is None:
            continue
        if "cleanupPeriodDays" in settings:
            value = settings["cleanupPeriodDays"]
            if not _valid_days(value, 1):
                problems.append({"file": str(path), "problem":
                                 f"cleanupPeriodDays is {orjson.dumps(value).decode()}, "
                                 "not a positive integer"})
            elif days is None:
                days, source, kind = value, str(path), label
        if "desktopSessionCleanupPeriodDays" in settings and desktop is None:
            value = settings["desktopSessionCleanupPeriodDays"]
            if _valid_days(value, 0):
                desktop = value
            else:
                # Read as "no ceiling": we then never predict a desktop session's deletion
                # from a value Claude Code may reject.
                notes.append(f"ignored desktopSessionCleanupPeriodDays "
                             f"{orjson.dumps(value).decode()} in {path}")
    if problems:
        return Retention(None, problems[0]["file"], "invalid", desktop or 0, problems, notes)
    if days is None:
        days = DEFAULT_DAYS
    return Retention(days, source, kind, desktop or 0, problems, notes)


# --------------------------------------------------------------------------- desktop


def _entrypoint_of(line: bytes) -> str | None:
    if b'"entrypoint"' not in line:
        return None
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None  # a line cut by the window's edge
    value = record.get("entrypoint") if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


def _window_entrypoints(path: Path) -> list[str]:
    """The first entrypoint in the file's head window and the last in its tail window."""
    found: list[str] = []
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            head = stream.read(ENTRYPOINT_WINDOW)
            if size > ENTRYPOINT_WINDOW:
                stream.seek(max(ENTRYPOINT_WINDOW, size - ENTRYPOINT_WINDOW))
                tail = stream.read(ENTRYPOINT_WINDOW)
            else:
                tail = head
    except OSError:
        return found
    for lines in (head.split(b"\n"), reversed(tail.split(b"\n"))):
        for line in lines:
            value = _entrypoint_of(line)
            if value is not None:
                found.append(value)
                break
    return found


def _released(transcript: Path) -> bool:
    """``<id>.desktop-released.json`` beside the transcript releases the session (unless it
    says ``"released": false``; the marker's exact shape is not documented)."""
    marker = transcript.with_name(transcript.name[:-len(".jsonl")] + ".desktop-released.json")
    try:
        if not stat.S_ISREG(os.lstat(marker).st_mode):
            return False
        value = orjson.loads(marker.read_bytes() or b"{}")
    except FileNotFoundError:
        return False
    except (OSError, orjson.JSONDecodeError):
        return True
    return not (isinstance(value, dict) and value.get("released") is False)


def desktop_exemption(path: Path, entrypoint: str | None, retention: Retention,
                      mtime: float, now: float) -> str | None:
    """Why Claude Code keeps this expired transcript (a desktop session), else None."""
    if retention.source_kind == MANAGED:
        return None  # the exemption does not apply when policy manages retention
    if entrypoint not in DESKTOP_ENTRYPOINTS and not any(
            e in DESKTOP_ENTRYPOINTS for e in _window_entrypoints(path)):
        return None
    if _released(path):
        return None
    if retention.desktop_days and mtime < now - retention.desktop_days * DAY:
        return None
    return "desktop session (entrypoint claude-desktop / claude-desktop-3p / local-agent)"


# --------------------------------------------------------------------------- plan


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    try:
        return iso_ms(int(seconds * 1000))
    except (OverflowError, OSError, ValueError):
        return None


def _cutoff(now: float, days: int | None) -> float | None:
    return None if days is None else now - days * DAY


def _folder_stats(folder: Path) -> tuple[int, int]:
    """(bytes, newest mtime_ns) of the regular files in a session folder, links not
    followed."""
    total, newest = 0, 0
    try:
        st = os.lstat(folder)
    except OSError:
        return 0, 0
    if not stat.S_ISDIR(st.st_mode):
        return 0, 0  # a symlink is unlinked, never followed: nothing of ours behind it
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        for name in dirnames + filenames:
            try:
                item = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if stat.S_ISREG(item.st_mode):  # a directory's mtime says little about liveness
                total += item.st_size
                newest = max(newest, item.st_mtime_ns)
    return total, newest


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
    protected: bool = False
    claude_code_deletes: bool = False
    exempt_reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "mtime_ns"}


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
    claude_code_sessions: int = 0
    claude_code_bytes: int = 0

    @property
    def to_delete(self) -> list[PlanEntry]:
        return [e for e in self.expired if not e.protected]

    @property
    def protected(self) -> list[PlanEntry]:
        return [e for e in self.expired if e.protected]

    def as_dict(self) -> dict[str, Any]:
        return {
            "config_dir": self.config_dir,
            "claude_code": {**self.retention.as_dict(),
                            "last_cleanup": _iso(self.last_cleanup),
                            "next_sweep": _iso(self.next_sweep),
                            "would_delete_sessions": self.claude_code_sessions,
                            "would_delete_bytes": self.claude_code_bytes},
            "days": self.days, "days_source": self.days_source,
            "cutoff": _iso(self.cutoff),
            "expired": [e.as_dict() for e in self.to_delete],
            "protected": [e.as_dict() for e in self.protected],
            "exempt": [e.as_dict() for e in self.exempt],
            "totals": _totals(self.to_delete, self.protected, self.exempt),
        }


def _totals(delete: list[PlanEntry], protected: list[PlanEntry],
            exempt: list[PlanEntry]) -> dict[str, int]:
    return {"sessions": len(delete), "bytes": sum(e.size for e in delete),
            "protected": len(protected), "protected_bytes": sum(e.size for e in protected),
            "exempt": len(exempt)}


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
            "now": _iso(self.now), "keep_tag": self.keep_tag, "config_dirs": roots,
            "totals": _totals(self.to_delete, [e for r in self.roots for e in r.protected],
                              [e for r in self.roots for e in r.exempt]),
        }


def _fresh_row(db: Database, tf: TranscriptFile) -> dict[str, Any] | None:
    """The session's index row, brought up to date first (a stat when unchanged): the
    ``keep`` tag must be read from the file as it is now, not as last indexed."""
    ingest_file(db, tf, RefreshStats(), include_tools=include_tools_setting(db))
    cursor = db.execute("SELECT * FROM sessions WHERE file_path = ?", [str(tf.path)])
    row = cursor.fetchone()
    return None if row is None else dict(zip([d[0] for d in cursor.description], row))


def _same_tag(tag: str | None, keep_tag: str) -> bool:
    return bool(tag) and sanitize_tag(tag).casefold() == keep_tag.casefold()


def plan_root(db: Database, root: Path, *, cwd: str | None, now: float,
              days: int | None = None, keep_tag: str = DEFAULT_KEEP_TAG,
              managed: Path | None = _UNSET) -> RootPlan:
    """What Claude Code's next sweep deletes in ``root``, and what we would."""
    retention = read_retention(root, cwd, managed)
    effective = days if days is not None else retention.days
    cutoff = _cutoff(now, effective)
    cc_cutoff = _cutoff(now, retention.days)
    try:
        last = os.lstat(Path(root) / ".last-cleanup").st_mtime
    except OSError:
        last = None
    next_sweep = last + SWEEP_INTERVAL if last is not None and last + SWEEP_INTERVAL > now else None
    plan = RootPlan(str(root), retention, effective,
                    "--days" if days is not None else retention.source, cutoff, last,
                    next_sweep)
    keep = sanitize_tag(keep_tag)
    for tf in iter_transcripts(root, subagents=False):
        mtime = tf.mtime_ns / 1e9
        ours = cutoff is not None and mtime < cutoff
        theirs = cc_cutoff is not None and mtime < cc_cutoff
        if not (ours or theirs):
            continue
        row = _fresh_row(db, tf) or {"session_id": tf.session_id, "mtime_ns": tf.mtime_ns}
        exempt = desktop_exemption(tf.path, row.get("entrypoint"), retention, mtime, now)
        folder_bytes, _ = _folder_stats(tf.path.with_suffix(""))
        entry = PlanEntry(
            session_id=tf.session_id, config_dir=str(root), project_key=tf.project_key,
            file_path=str(tf.path), cwd=row.get("cwd"), title=display_title(row),
            tag=row.get("tag"), entrypoint=row.get("entrypoint"),
            last_activity=iso_ms(activity_ms(row)), mtime=_iso(mtime), mtime_ns=tf.mtime_ns,
            transcript_size=tf.size, size=tf.size + folder_bytes,
            protected=_same_tag(row.get("tag"), keep),
            claude_code_deletes=theirs and exempt is None, exempt_reason=exempt)
        if entry.claude_code_deletes:
            plan.claude_code_sessions += 1
            plan.claude_code_bytes += entry.size
        if ours:
            (plan.exempt if exempt else plan.expired).append(entry)
    for entries in (plan.expired, plan.exempt):
        entries.sort(key=lambda e: (e.mtime_ns, e.session_id))  # oldest (next to go) first
    return plan


def plan_cleanup(db: Database, roots: Iterable[Path], *, cwd: str | None = None,
                 days: int | None = None, keep_tag: str = DEFAULT_KEEP_TAG,
                 now: float | None = None, managed: Path | None = _UNSET) -> CleanupPlan:
    """The dry run: one :class:`RootPlan` per config dir. ``days`` overrides
    ``cleanupPeriodDays`` for our plan (Claude Code's own prediction keeps its value)."""
    current = time.time() if now is None else now
    return CleanupPlan(current, keep_tag, [
        plan_root(db, Path(root), cwd=cwd, now=current, days=days, keep_tag=keep_tag,
                  managed=managed) for root in roots])


# --------------------------------------------------------------------------- apply

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

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def archive_dir_problem(archive_dir: Path, roots: Iterable[Path]) -> str | None:
    """Why ``archive_dir`` cannot hold archives (inside a projects/ dir), else None."""
    target = os.path.realpath(archive_dir)
    for root in roots:
        projects = os.path.realpath(Path(root) / "projects")
        if target == projects or target.startswith(projects + os.sep):
            return (f"--archive {archive_dir} is inside {projects}: Claude Code would sweep "
                    "it; choose a directory outside projects/")
    return None


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev


def _apply_one(db: Database, entry: PlanEntry, roots: list[Path], archive_dir: Path | None,
               clock: Callable[[], float], archive_stats: RefreshStats) -> Outcome:
    from sessiondex.indexer.archive_ingest import ingest_archive
    from sessiondex.transcripts.archive import ArchiveError, write_session_archive
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
    _, folder_newest = _folder_stats(path.with_suffix(""))
    newest = max(tf.mtime_ns, folder_newest) / 1e9
    if clock() - newest < LIVE_SECONDS:
        outcome.status = SKIPPED
        outcome.message = "written in the last 10 minutes (may be live); kept"
        return outcome
    before = _stat_key(os.lstat(path))
    archive: Path | None = None
    if archive_dir is not None:
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
    if archive is not None and archive_dir is not None:
        ingest_archive(db, archive, Path(os.path.abspath(archive_dir)), archive_stats,
                       include_tools=include_tools_setting(db))
    outcome.status = DELETED
    outcome.removed = [str(p) for p in removed]
    return outcome


def _archive_copy(db: Database, entry: PlanEntry, roots: list[Path], archive_dir: Path,
                  archive_stats: RefreshStats) -> Outcome:
    """A protected session: archive a copy (Claude Code's sweep ignores our tag), keep it.
    Skipped when the archive dir already holds this exact version."""
    from sessiondex.indexer.archive_ingest import ingest_archive
    from sessiondex.transcripts.archive import ArchiveError, write_session_archive

    outcome = Outcome(entry.session_id, entry.file_path, FAILED)
    directory = Path(os.path.abspath(archive_dir))
    if db.execute("SELECT 1 FROM sessions WHERE archived = 1 AND root = ? AND session_id = ?"
                  " AND project_key = ? AND file_size = ? AND abs(mtime_ns - ?) < 1000",
                  [str(directory), entry.session_id, entry.project_key,
                   entry.transcript_size, entry.mtime_ns]).fetchone():
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
    ingest_archive(db, archive, directory, archive_stats,
                   include_tools=include_tools_setting(db))
    outcome.status, outcome.archive = ARCHIVED, str(archive)
    outcome.message = "protected; archived a copy, original kept"
    return outcome


def apply_plan(db: Database, plan: CleanupPlan, roots: list[Path], *,
               archive_dir: Path | None = None, clock: Callable[[], float] = time.time,
               on_outcome: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Delete (after archiving, with ``archive_dir``) every unprotected expired session of
    ``plan``. Never a transcript written in the last 10 minutes by ``clock`` (nor one
    changed since the plan), never through a symlink, never anything but ``<uuid>.jsonl``
    and ``<uuid>/``; one failure does not stop the rest; the index follows each deletion."""
    if archive_dir is not None:
        from sessiondex.indexer.archive_ingest import add_archive_dir

        archive_dir = Path(os.path.abspath(archive_dir))
        problem = archive_dir_problem(archive_dir, roots)
        if problem:
            raise ValueError(problem)
        Path(archive_dir).mkdir(parents=True, exist_ok=True)
        add_archive_dir(db, Path(archive_dir))  # before any deletion: never forgotten
    outcomes: list[Outcome] = []
    stats = RefreshStats()
    for entry in [e for r in plan.roots for e in r.expired]:
        if entry.protected and archive_dir is None:
            continue
        try:
            if entry.protected:
                outcome = _archive_copy(db, entry, roots, Path(archive_dir or "."), stats)
            else:
                outcome = _apply_one(db, entry, roots, archive_dir, clock, stats)
        except OSError as exc:  # a vanished folder, a permission: this session only
            outcome = Outcome(entry.session_id, entry.file_path, FAILED,
                              f"{exc.strerror or exc}")
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes


# --------------------------------------------------------------------------- list / stats


def _rows_for_paths(db: Database, paths: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for start in range(0, len(paths), 500):
        chunk = paths[start:start + 500]
        cursor = db.execute(
            "SELECT root, file_path, mtime_ns, file_size, entrypoint FROM sessions"
            f" WHERE archived = 0 AND file_path IN ({', '.join('?' for _ in chunk)})", chunk)
        names = [d[0] for d in cursor.description]
        rows.extend(dict(zip(names, r)) for r in cursor.fetchall())
    return rows


def _count_deleted_by(rows: list[dict[str, Any]], cwd: str | None,
                      now: float, horizon: float,
                      managed: Path | None) -> tuple[int, int, dict[str, Retention]]:
    """(sessions, bytes) among ``rows`` that Claude Code's sweep deletes by ``now + horizon``."""
    retentions: dict[str, Retention] = {}
    count = size = 0
    for row in rows:
        root = row["root"]
        if root not in retentions:
            retentions[root] = read_retention(Path(root), cwd, managed)
        retention = retentions[root]
        if retention.days is None:
            continue
        mtime = row["mtime_ns"] / 1e9
        if mtime >= now + horizon - retention.days * DAY:
            continue
        if desktop_exemption(Path(row["file_path"]), row.get("entrypoint"), retention,
                             mtime, now + horizon):
            continue
        count += 1
        size += row["file_size"] or 0
    return count, size, retentions


def expiring_soon(db: Database, file_paths: list[str], cwd: str | None, roots: list[Path],
                  *, now: float | None = None, managed: Path | None = _UNSET) -> int:
    """How many of these sessions Claude Code's sweep deletes within 3 days (already
    expired ones included), for the warning under ``list``."""
    del roots  # each row records its own config dir
    current = time.time() if now is None else now
    rows = _rows_for_paths(db, list(file_paths))
    count, _, _ = _count_deleted_by(rows, cwd, current, SOON_DAYS * DAY, managed)
    return count


def cleanup_summary(db: Database, roots: list[Path], cwd: str | None = None, *,
                    now: float | None = None, managed: Path | None = _UNSET) -> dict[str, Any]:
    """Counts for ``stats``: what Claude Code's sweep deletes now and within 3 days."""
    current = time.time() if now is None else now
    texts = [str(r) for r in roots]
    cursor = db.execute(
        "SELECT root, file_path, mtime_ns, file_size, entrypoint FROM sessions"
        f" WHERE archived = 0 AND root IN ({', '.join('?' for _ in texts) or 'NULL'})", texts)
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, r)) for r in cursor.fetchall()]
    expired, expired_bytes, retentions = _count_deleted_by(rows, cwd, current, 0, managed)
    soon, _, _ = _count_deleted_by(rows, cwd, current, SOON_DAYS * DAY, managed)
    for root in texts:
        retentions.setdefault(root, read_retention(Path(root), cwd, managed))
    return {
        "expired_sessions": expired, "expired_bytes": expired_bytes,
        "expiring_within_3_days": soon - expired,
        "config_dirs": [{"config_dir": k, **v.as_dict()} for k, v in retentions.items()],
    }
