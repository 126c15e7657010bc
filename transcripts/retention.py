"""Claude Code's retention sweep: which period applies, and which sessions it spares.

Claude Code deletes transcripts whose **file mtime** is older than ``cleanupPeriodDays``
(default 30) when it starts, at most once a day. These are its rules, read from the
settings files it reads, in its order (see ``docs/retention.md``): a period that is
present but invalid, or a settings file that does not parse, makes it skip the sweep
entirely; desktop sessions are exempt unless released. Nothing here touches the index.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from sessiondex.transcripts.config import resolve_cwd
from sessiondex.transcripts.discover import read_regular
from sessiondex.transcripts.records import DESKTOP_ENTRYPOINTS
from sessiondex.transcripts.tree import walk
from sessiondex.transcripts.windows import WINDOW, read_windows

DEFAULT_DAYS = 30
DAY = 86400
# Claude Code re-runs its sweep only when <config>/.last-cleanup is older than this.
SWEEP_INTERVAL = DAY
MANAGED_ENV = "SESSIONDEX_MANAGED_SETTINGS"

MANAGED, LOCAL, PROJECT, USER, DEFAULT = "managed", "local", "project", "user", "default"


def default_managed_path(
    platform: str | None = None, environ: dict[str, str] | None = None
) -> Path | None:
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
    files += [
        (LOCAL, project / "settings.local.json"),
        (PROJECT, project / "settings.json"),
        (USER, Path(config_dir) / "settings.json"),
    ]
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

    @property
    def exempts_desktop(self) -> bool:
        """Whether desktop sessions can be exempt at all: not when policy (managed
        settings) sets the retention."""
        return self.source_kind != MANAGED

    def as_dict(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "source": self.source,
            "source_kind": self.source_kind,
            "sweep_enabled": self.sweep_enabled,
            "desktop_session_cleanup_period_days": self.desktop_days,
            "problems": self.problems,
            "notes": self.notes,
        }


# "not given" for ``managed``: None means "no managed settings file".
UNSET: Any = object()


# Longer than any file can be old: a period past it expires nothing, as the exact value
# would, and keeps ``now - days * DAY`` a finite number.
MAX_DAYS = 10**12


def _whole_days(value: Any, minimum: int) -> int | None:
    """A period as Claude Code accepts it (an integer ≥ ``minimum``), else None.

    Claude Code reads settings in JavaScript, where ``30.0`` and ``3e1`` are the integer
    30 (``Number.isInteger``): a float without a fraction counts, ``true`` does not."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None  # a fraction, or inf/nan (orjson gives neither, but a caller might)
    if value < minimum:
        return None
    return int(min(value, MAX_DAYS))


def _load_settings(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(settings, None), (None, None) when absent, or (None, problem)."""
    try:
        data = read_regular(path)
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


def read_retention(
    config_dir: Path, cwd: str | None = None, managed: Path | None = UNSET
) -> Retention:
    """``cleanupPeriodDays`` for a sweep started in ``cwd`` on ``config_dir``.

    Highest precedence first: managed, ``<cwd>/.claude/settings.local.json``,
    ``<cwd>/.claude/settings.json``, ``<config>/settings.json``; else 30. Any file that
    cannot be parsed, or any present but invalid value (not a positive integer), makes
    Claude Code skip its sweep: ``days`` is None and ``problems`` names the file.
    """
    managed_path = default_managed_path() if managed is UNSET else managed
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
            whole = _whole_days(value, 1)
            if whole is None:
                problems.append(
                    {
                        "file": str(path),
                        "problem": f"cleanupPeriodDays is {orjson.dumps(value).decode()}, "
                        "not a positive integer",
                    }
                )
            elif days is None:
                days, source, kind = whole, str(path), label
        if "desktopSessionCleanupPeriodDays" in settings and desktop is None:
            value = settings["desktopSessionCleanupPeriodDays"]
            desktop = _whole_days(value, 0)
            if desktop is None:
                # Read as "no ceiling": we then never predict a desktop session's deletion
                # from a value Claude Code may reject.
                notes.append(
                    f"ignored desktopSessionCleanupPeriodDays "
                    f"{orjson.dumps(value).decode()} in {path}"
                )
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


def files_say_desktop(path: Path) -> bool:
    """Claude Code's window test, answered by reading the file's head and tail windows
    as it reads them (a file that cannot be read is no desktop session)."""
    return any(e in DESKTOP_ENTRYPOINTS for e in _window_entrypoints(path))


def _window_entrypoints(path: Path) -> list[str]:
    """The first entrypoint in the file's head window and the last in its tail window."""
    found: list[str] = []
    try:
        head, tail = read_windows(path, tail_overlaps_head=False)
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
    marker = transcript.with_name(transcript.name[: -len(".jsonl")] + ".desktop-released.json")
    try:
        if not stat.S_ISREG(os.lstat(marker).st_mode):
            return False
        value = orjson.loads(marker.read_bytes() or b"{}")
    except FileNotFoundError:
        return False
    except (OSError, orjson.JSONDecodeError):
        return True
    return not (isinstance(value, dict) and value.get("released") is False)


def window_desktop(
    head_entrypoint: str | None,
    last_entrypoint: str | None,
    last_offset: int | None,
    size: int,
) -> bool:
    """Claude Code's window test answered from the index's columns, without the file.

    ``head_entrypoint`` is the head window's answer, settled at ingest: the file's first
    string entrypoint when its line lies whole in the first 64 KiB
    (:func:`~sessiondex.transcripts.windows.in_head_window`), else None; a first one
    further on is never read by the sweep. ``last_entrypoint`` is the file's last,
    at byte ``last_offset``: the tail window's answer exactly when that line starts
    inside the tail window ``[max(64 KiB, size - 64 KiB), size)`` (a line cut by the
    window's edge does not parse; no later line has one). ``size`` is the indexed size,
    the file's own once the refresh before every command has run."""
    if head_entrypoint in DESKTOP_ENTRYPOINTS:
        return True
    if last_entrypoint not in DESKTOP_ENTRYPOINTS or last_offset is None:
        return False
    return size <= WINDOW or last_offset >= max(WINDOW, size - WINDOW)


def desktop_exemption(
    path: Path,
    retention: Retention,
    mtime: float,
    now: float,
    *,
    desktop: bool | None = None,
) -> str | None:
    """Why Claude Code keeps this expired transcript (a desktop session), else None.

    ``desktop``: the window test already answered (:func:`window_desktop`, from the
    index); None reads the file's head and tail windows (``cleanup``'s plan, which
    looks at the files as they are now, and the rescue's), as Claude Code reads them:
    the file's first entrypoint, wherever it lies, is not asked, since a desktop one
    between the windows exempts nothing from the sweep. Only the release marker is
    looked at then."""
    if not retention.exempts_desktop:
        return None  # the exemption does not apply when policy manages retention
    if desktop is None:
        desktop = files_say_desktop(path)
    if not desktop:
        return None
    if _released(path):
        return None
    if retention.desktop_days and mtime < now - retention.desktop_days * DAY:
        return None
    return "desktop session (entrypoint claude-desktop / claude-desktop-3p / local-agent)"


def folder_stats(folder: Path) -> tuple[int, int]:
    """(bytes, newest mtime_ns) of the regular files in a session folder, links not
    followed."""
    total, newest = 0, 0
    try:
        st = os.lstat(folder)
    except OSError:
        return 0, 0
    if not stat.S_ISDIR(st.st_mode):
        return 0, 0  # a symlink is unlinked, never followed: nothing of ours behind it
    for dirpath, dirnames, filenames in walk(folder):
        for name in dirnames + filenames:
            try:
                item = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if stat.S_ISREG(item.st_mode):  # a directory's mtime says little about liveness
                total += item.st_size
                newest = max(newest, item.st_mtime_ns)
    return total, newest
