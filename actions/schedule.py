"""A daily ``sessiondex archive`` for users who do not keep ``watch`` running.

One job per user, in the scheduler the OS has: a systemd user timer and service on Linux
(``$XDG_CONFIG_HOME/systemd/user/``), a launchd agent on macOS (``~/Library/LaunchAgents/``),
else a crontab line that we print (editing a crontab is the user's call). The job runs
the installed ``sessiondex`` by absolute path with every setting spelled out
(``--config-dir`` for each config dir, ``--db``, ``--to``): a scheduler's environment
has none of the user's shell variables, and the job must archive what the user's
commands read.

Each file we write carries :data:`MARKER`; ``--uninstall-job`` removes only files that
carry it (and the ``timers.target.wants`` link ``systemctl enable`` made for our
timer), never anything else, and installing again replaces only our own files.
Activation (``systemctl --user``/``launchctl``) is a separate step the caller may skip:
tests write the files and nothing more.
"""

from __future__ import annotations

import os
import plistlib
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sessiondex.actions.paths import placed
from sessiondex.transcripts.fspath import xdg_dir

SYSTEMD, LAUNCHD, CRON = "systemd", "launchd", "cron"
SCHEDULERS = (SYSTEMD, LAUNCHD, CRON)
UNIT = "sessiondex-archive"
LABEL = "local.sessiondex.archive"
# In every file we write (no "--": it would end an XML comment in the plist).
MARKER = "Installed by sessiondex (the archive job)."
_REMOVE = "Remove with: sessiondex archive --uninstall-job"
_AT_RE = re.compile(r"\s*([01]?\d|2[0-3]):([0-5]\d)\s*\Z")
# systemd's unit-file words need no quoting when made of these (see systemd.syntax(7)).
_SYSTEMD_PLAIN = re.compile(r"[A-Za-z0-9_@+=:,./-]+\Z")

Runner = Callable[[Sequence[str]], tuple[bool, str]]


class JobError(Exception):
    """The job cannot be written or removed as asked; the message says why."""


def parse_at(text: str) -> tuple[int, int]:
    """``HH:MM`` (24-hour) → (hour, minute)."""
    match = _AT_RE.match(text)
    if not match:
        raise ValueError(f"--at {text!r}: use HH:MM, e.g. 12:30")
    return int(match.group(1)), int(match.group(2))


def detect_scheduler(platform: str | None = None) -> str:
    """launchd on macOS; systemd on Linux when it is the running init (what
    ``sd_booted()`` checks); else cron."""
    system = platform or sys.platform
    if system == "darwin":
        return LAUNCHD
    if system.startswith("linux") and os.path.isdir("/run/systemd/system"):
        return SYSTEMD
    return CRON


def sessiondex_executable(argv0: str | None = None) -> list[str]:
    """How a scheduler starts this sessiondex, by absolute path: the console script
    being run, else the one installed beside this Python, else on PATH, else this
    Python with ``-m``. Paths are made absolute but not resolved: a virtualenv's script
    works through its own path, not through the interpreter it links to."""
    given = argv0 if argv0 is not None else sys.argv[0]
    candidates = []
    if os.path.basename(given) == "sessiondex":
        candidates.append(given if os.sep in given else shutil.which(given) or "")
    candidates.append(os.path.join(os.path.dirname(sys.executable), "sessiondex"))
    candidates.append(shutil.which("sessiondex") or "")
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return [os.path.abspath(candidate)]
    return [os.path.abspath(sys.executable), "-m", "sessiondex.cli.main"]


def job_command(
    executable: Sequence[str],
    config_dirs: Sequence[Path],
    db_path: Path,
    archive_dir: Path,
    window: str,
    cwd: str | None = None,
) -> list[str]:
    """The job's command line: everything explicit, nothing read from the environment."""
    command = list(executable)
    # Absolute as the kernel reads them (``..`` after a symlinked folder climbs from its
    # target), the way the command typed now would have named them.
    for root in config_dirs:
        command += ["--config-dir", placed(root)]
    command += ["--db", placed(db_path), "archive", "--expiring-within", window]
    command += ["--to", placed(archive_dir)]
    if cwd is not None:
        command += ["--cwd", placed(cwd)]
    for word in command:
        if any(ord(c) < 32 or c == "\x7f" for c in word):
            raise JobError(f"cannot schedule a command with a control character: {word!r}")
    return command


@dataclass
class JobFile:
    path: Path
    text: str


@dataclass
class Job:
    """What ``--install-job`` writes (``files``) or prints (``crontab_line``), and the
    commands that start and stop it."""

    scheduler: str
    command: list[str]
    at: tuple[int, int]
    files: list[JobFile] = field(default_factory=list)
    crontab_line: str | None = None
    activate: list[list[str]] = field(default_factory=list)
    deactivate: list[list[str]] = field(default_factory=list)
    extra_paths: list[Path] = field(default_factory=list)  # made by activation


def _systemd_word(word: str) -> str:
    """One ExecStart word: double-quoted with C escapes when needed; ``%`` (specifiers)
    and ``$`` (variable expansion) doubled so the path reaches the program as is."""
    if not _SYSTEMD_PLAIN.match(word):
        word = '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return word.replace("%", "%%").replace("$", "$$")


def _systemd_dir(environ: dict[str, str], home: Path) -> Path:
    return xdg_dir("XDG_CONFIG_HOME", ".config", environ, home) / "systemd" / "user"


def _systemd_job(
    command: list[str], at: tuple[int, int], environ: dict[str, str], home: Path
) -> Job:
    directory = _systemd_dir(environ, home)
    service = (
        f"# {MARKER}\n# {_REMOVE}\n"
        "[Unit]\n"
        "Description=sessiondex: archive Claude Code sessions before its retention sweep\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"ExecStart={' '.join(_systemd_word(w) for w in command)}\n"
        "Nice=10\n"
        "IOSchedulingClass=idle\n"
    )
    timer = (
        f"# {MARKER}\n# {_REMOVE}\n"
        "[Unit]\n"
        "Description=sessiondex: daily archive of sessions Claude Code will delete soon\n"
        "\n"
        "[Timer]\n"
        f"OnCalendar=*-*-* {at[0]:02d}:{at[1]:02d}:00\n"
        "Persistent=true\n"
        "RandomizedDelaySec=10min\n"
        "\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )
    ctl = ["systemctl", "--user"]
    return Job(
        SYSTEMD,
        command,
        at,
        [
            JobFile(directory / f"{UNIT}.service", service),
            JobFile(directory / f"{UNIT}.timer", timer),
        ],
        activate=[[*ctl, "daemon-reload"], [*ctl, "enable", "--now", f"{UNIT}.timer"]],
        deactivate=[[*ctl, "disable", "--now", f"{UNIT}.timer"]],
        extra_paths=[directory / "timers.target.wants" / f"{UNIT}.timer"],
    )


def _launchd_job(command: list[str], at: tuple[int, int], home: Path) -> Job:
    path = home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    log = str(home / "Library" / "Logs" / "sessiondex-archive.log")
    body = plistlib.dumps(
        {
            "Label": LABEL,
            "ProgramArguments": command,
            "StartCalendarInterval": {"Hour": at[0], "Minute": at[1]},
            "ProcessType": "Background",
            "LowPriorityIO": True,
            "Nice": 10,
            "StandardOutPath": log,
            "StandardErrorPath": log,
        }
    ).decode()
    # The marker as an XML comment after the declaration: plistlib and launchd skip it.
    head, _, rest = body.partition("\n")
    text = f"{head}\n<!-- {MARKER} -->\n{rest}"
    domain = f"gui/{os.getuid()}" if hasattr(os, "getuid") else "gui"
    return Job(
        LAUNCHD,
        command,
        at,
        [JobFile(path, text)],
        activate=[["launchctl", "bootstrap", domain, str(path)]],
        deactivate=[["launchctl", "bootout", f"{domain}/{LABEL}"]],
    )


def _cron_job(command: list[str], at: tuple[int, int]) -> Job:
    # In a crontab line an unescaped % ends the command: escape it.
    words = " ".join(shlex.quote(w) for w in command).replace("%", "\\%")
    return Job(CRON, command, at, crontab_line=f"{at[1]} {at[0]} * * * {words}")


def make_job(
    command: list[str],
    at: tuple[int, int],
    scheduler: str,
    *,
    environ: dict[str, str] | None = None,
    home: Path | None = None,
) -> Job:
    """The job for ``scheduler`` (see :func:`detect_scheduler`), running ``command``
    daily at ``at`` (local time)."""
    env = dict(os.environ if environ is None else environ)
    base = Path(home) if home is not None else Path(os.path.expanduser("~"))
    if scheduler == SYSTEMD:
        return _systemd_job(command, at, env, base)
    if scheduler == LAUNCHD:
        return _launchd_job(command, at, base)
    if scheduler == CRON:
        return _cron_job(command, at)
    raise ValueError(f"unknown scheduler {scheduler!r}")


def _ours(path: Path) -> bool:
    try:
        return MARKER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def run_command(command: Sequence[str]) -> tuple[bool, str]:
    """Run ``systemctl``/``launchctl``; (ok, what it said). Never raises."""
    if shutil.which(command[0]) is None:
        return False, f"{command[0]} not found"
    try:
        done = subprocess.run(
            list(command), capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, str(exc)
    said = (done.stderr or done.stdout).strip().splitlines()
    return done.returncode == 0, said[-1] if said else f"exit status {done.returncode}"


def install_job(job: Job, *, activate: bool = True, run: Runner = run_command) -> list[str]:
    """Write the job's files (replacing only files of ours), then start it unless
    ``activate`` is false; returns what happened, a line each. A failed activation
    leaves the files in place and says which command to run."""
    for item in job.files:
        if os.path.lexists(item.path) and not _ours(item.path):
            raise JobError(f"{item.path} exists and was not written by sessiondex; left alone")
    lines: list[str] = []
    for item in job.files:
        item.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = item.path.with_name(f".{item.path.name}.{os.getpid()}.tmp")
        tmp.write_text(item.text, encoding="utf-8")
        os.replace(tmp, item.path)
        lines.append(f"wrote {item.path}")
    if not activate:
        if job.activate:
            lines.append("not activated; to start it: " + "; ".join(map(shlex.join, job.activate)))
        return lines
    if job.scheduler == LAUNCHD:  # bootstrap fails while an older copy is loaded
        run(job.deactivate[0])
    for command in job.activate:
        ok, said = run(command)
        if not ok:
            lines.append(
                f"could not run {shlex.join(command)} ({said}); the files are in place, "
                "run it yourself: " + "; ".join(map(shlex.join, job.activate))
            )
            break
        lines.append(f"ran {shlex.join(command)}")
    return lines


def uninstall_job(job: Job, *, activate: bool = True, run: Runner = run_command) -> list[str]:
    """Stop the job (unless ``activate`` is false) and remove exactly the files of ours
    that :func:`install_job` (and the scheduler's enable step) made."""
    lines: list[str] = []
    present = [f.path for f in job.files if os.path.lexists(f.path)]
    if activate and present:
        for command in job.deactivate:
            ok, said = run(command)
            lines.append(f"ran {shlex.join(command)}" if ok else f"{shlex.join(command)}: {said}")
    for path in present:
        if not _ours(path):
            lines.append(f"left {path}: not written by sessiondex")
            continue
        path.unlink()
        lines.append(f"removed {path}")
    timer = {f.path for f in job.files}
    for link in job.extra_paths:  # systemctl enable's link to our timer, if disable left it
        target = (
            os.path.normpath(os.path.join(link.parent, os.readlink(link)))
            if os.path.islink(link)
            else ""
        )
        if target and Path(target) in timer:
            link.unlink()
            lines.append(f"removed {link}")
    if activate and present and job.scheduler == SYSTEMD:
        run(["systemctl", "--user", "daemon-reload"])
    if not present and not lines:
        lines.append("no job of ours was installed")
    return lines
