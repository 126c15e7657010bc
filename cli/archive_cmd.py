"""``archive``: rescue sessions before Claude Code's sweep deletes them (once, or as a
daily job); ``restore``: put one back. ``watch`` runs the same rescue at start and once a
day (:func:`watch_rescue`)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sessiondex.cli.app import EXIT_AMBIGUOUS, CliError, app
from sessiondex.cli.options import UnsafeOutputPath, cwd_option
from sessiondex.cli.output import counted, report_formats, sessions_and_files, table_or_json

if TYPE_CHECKING:
    from sessiondex.actions.archive import ArchiveResult, ArchiveRun, Daily
    from sessiondex.index import Index

DEFAULT_WINDOW = "3d"
# A run that archives many sessions (a first run on a long history) counts them on a
# terminal once it has taken this long.
ARCHIVE_PROGRESS_DELAY = 1.0


def _window_seconds(text: str) -> int:
    from sessiondex.query.filters import parse_duration

    seconds = parse_duration(text)
    if seconds is None:
        raise click.BadParameter(
            f"{text!r}: use a duration such as 3d, 36h or 1w", param_hint="--expiring-within"
        )
    return seconds


def _result_row(result: ArchiveResult, id_width: int) -> list[str]:
    from sessiondex.cli.output import human_size, project_label, relative_time

    return [
        result.status,
        result.title,
        project_label({"cwd": result.cwd, "project_key": result.project_key}),
        relative_time(result.mtime),
        human_size(result.size),
        result.session_id[:id_width],
    ]


def _retention_line(item: dict[str, Any]) -> str:
    if item["sweep_enabled"]:
        source = "default" if item["source"] == "default" else item["source"]
        return (
            f"Config dir {item['config_dir']}: Claude Code deletes sessions not modified "
            f"for {counted(item['days'], 'day')} (cleanupPeriodDays, {source})."
        )
    problem = item["problems"][0]
    return (
        f"Config dir {item['config_dir']}: Claude Code skips its sweep "
        f"({problem['problem']}: {problem['file']}); nothing there is at risk."
    )


def _render_run(run: ArchiveRun, window: str) -> str:
    from sessiondex.actions.archive import ALREADY, ARCHIVED, FAILED, PLANNED, SKIPPED
    from sessiondex.cli.output import id_chars, render_table

    lines = [f"Archive dir {run.archive_dir}"]
    lines += [_retention_line(item) for item in run.config_dirs]
    if not run.results:
        lines.append(f"No session is deleted by Claude Code's sweep within {window}.")
        return "\n".join(lines)
    ids = [r.session_id for r in run.results]
    width = max(id_chars(ids), app().index.id_width(ids))  # typed back: one session
    table = render_table(
        [_result_row(r, width) for r in run.results],
        ("status", "title", "project", "modified", "size", "id"),
        flexible=1,
    )
    lines += ["  " + line for line in table.split("\n")]
    for result in run.results:
        if result.status in (FAILED, SKIPPED):
            lines.append(f"{result.status} {result.file_path}: {result.message}")
    if run.dry_run:
        lines.append(
            # Not "session(s)": old *.jsonl files that are no sessions are archived too.
            f"Dry run: {run.count(PLANNED)} would be archived, {run.count(ALREADY)} already are."
        )
    else:
        lines.append(
            f"{run.count(ARCHIVED)} archived, {run.count(ALREADY)} already archived, "
            f"{run.count(SKIPPED)} skipped, {run.count(FAILED)} failed."
        )
    return "\n".join(lines)


def _job(
    install: bool,
    uninstall: bool,
    print_only: bool,
    at: str,
    scheduler: str,
    no_activate: bool,
    window: str,
    archive_dir: Path,
    cwd: str | None,
) -> None:
    from sessiondex.actions import schedule
    from sessiondex.cli.output import clean, clean_line

    state = app()
    try:
        at_time = schedule.parse_at(at)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--at") from None
    kind = schedule.detect_scheduler() if scheduler == "auto" else scheduler
    try:
        command = schedule.job_command(
            schedule.sessiondex_executable(),
            state.roots,
            state.database_path,
            archive_dir,
            window,
            cwd,
        )
        job = schedule.make_job(command, at_time, kind)
        if print_only:
            if job.crontab_line is not None:
                click.echo(clean(job.crontab_line))
            for item in job.files:
                click.echo(clean(f"# {item.path}\n{item.text}"))
            if install and job.activate:
                click.echo("# then: " + "; ".join(" ".join(c) for c in job.activate))
            return
        if job.crontab_line is not None:
            if install:
                click.echo("No systemd or launchd here; add this line with `crontab -e`:")
                click.echo(clean(job.crontab_line))
            else:
                click.echo("Remove the `sessiondex … archive` line with `crontab -e`.")
            return
        if install:
            lines = schedule.install_job(job, activate=not no_activate)
        else:
            lines = schedule.uninstall_job(job, activate=not no_activate)
    except (schedule.JobError, OSError) as exc:
        raise CliError(clean_line(str(exc))) from None
    for line in lines:
        click.echo(clean_line(line))
    if install:
        hour, minute = at_time
        click.echo(f"The archive job runs daily at {hour:02d}:{minute:02d}: {' '.join(command)}")


def _refuse_job_options_alone() -> None:
    """The options that shape a job, given with no job to shape: a usage error, not an
    archive run that ignored them (``archive --at 09:30`` archived now, silently)."""
    from click.core import ParameterSource

    ctx = click.get_current_context()
    for name, flag in (
        ("print_only", "--print"),
        ("at", "--at"),
        ("scheduler", "--scheduler"),
        ("no_activate", "--no-activate"),
    ):
        if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE:
            raise click.UsageError(f"{flag} goes with --install-job or --uninstall-job")


@click.command()
@click.option(
    "--expiring-within",
    "window",
    default=DEFAULT_WINDOW,
    show_default=True,
    metavar="DURATION",
    help="Archive the sessions Claude Code's sweep deletes within this long "
    "(already expired ones included): 3d, 36h, 1w.",
)
@click.option(
    "--to",
    "archive_dir",
    type=click.Path(),
    default=None,
    metavar="DIR",
    help="Archive dir. Default: $XDG_DATA_HOME/sessiondex/archive "
    "(~/.local/share/sessiondex/archive).",
)
@click.option("--dry-run", is_flag=True, help="List what would be archived; write nothing.")
@cwd_option
@click.option(
    "--install-job",
    is_flag=True,
    help="Install a daily job that runs this archive (systemd user timer, launchd agent, "
    "or a crontab line to add).",
)
@click.option("--uninstall-job", is_flag=True, help="Remove the job --install-job installed.")
@click.option(
    "--at",
    default="12:00",
    show_default=True,
    metavar="HH:MM",
    help="With --install-job: the daily time (local).",
)
@click.option(
    "--print",
    "print_only",
    is_flag=True,
    help="With --install-job/--uninstall-job: show the job's files, write nothing.",
)
@click.option(
    "--scheduler",
    type=click.Choice(["auto", "systemd", "launchd", "cron"]),
    default="auto",
    show_default=True,
    help="With --install-job: which scheduler (auto: launchd on macOS, systemd on Linux "
    "when it runs, else cron).",
)
@click.option(
    "--no-activate",
    is_flag=True,
    help="With --install-job/--uninstall-job: write or remove the files only; do not run "
    "systemctl or launchctl.",
)
@report_formats
def archive(
    window: str,
    archive_dir: str | None,
    dry_run: bool,
    cwd: str | None,
    install_job: bool,
    uninstall_job: bool,
    at: str,
    print_only: bool,
    scheduler: str,
    no_activate: bool,
    fmt: str,
    as_json: bool,
) -> None:
    """Archive every session Claude Code's retention sweep will delete soon.

    Copies each session the sweep deletes within --expiring-within (already expired
    ones included) into the archive dir: one verified, compressed .tar.gz per session,
    never touching the transcript. A session already archived as it is now in that
    dir is skipped; one that changed gets a new version (the newest is the one found).
    Archived sessions stay findable with --include-archived after the sweep deleted
    them, and `sessiondex restore ID` puts one back. `watch` does the same at start and once a day.
    --format json prints the whole run; jsonl and csv one row per session.

    \b
    Example:
        sessiondex archive --dry-run
        sessiondex archive --expiring-within 7d --to ~/claude-archive
        sessiondex archive --install-job --at 09:30
        sessiondex archive --install-job --print
        sessiondex search "old idea" --scope all --include-archived
    """
    from dataclasses import fields

    from sessiondex.actions.archive import (
        FAILED,
        ArchiveResult,
        archive_dir_problem,
        default_archive_dir,
    )
    from sessiondex.cli.output import clean, clean_line, dumps, emit

    seconds = _window_seconds(window)
    if install_job and uninstall_job:
        raise click.UsageError("--install-job and --uninstall-job exclude each other")
    state = app()
    directory = Path(archive_dir) if archive_dir else default_archive_dir()
    if not archive_dir:  # from XDG_DATA_HOME or HOME (an --archive argument is checked)
        from sessiondex.cli.errors import InvalidValue

        default_problem = _default_dir_problem(directory)
        if default_problem is not None:
            raise InvalidValue(*default_problem)
    problem = archive_dir_problem(directory, state.roots, state.database_path)
    if problem:
        raise UnsafeOutputPath(clean_line(problem))
    if install_job or uninstall_job:
        _job(
            install_job,
            uninstall_job,
            print_only,
            at,
            scheduler,
            no_activate,
            window,
            directory,
            cwd,
        )
        return
    _refuse_job_options_alone()
    from sessiondex.transcripts.archive import ArchiveError

    state.fresh_db()
    from sessiondex.cli.progress import progress_count

    try:
        with progress_count("Archiving", delay=ARCHIVE_PROGRESS_DELAY) as count:
            run = state.index.archive(
                archive_dir=directory,
                window=seconds,
                cwd=cwd,
                dry_run=dry_run,
                # A dry run writes nothing: not "Archiving" (and it plans in a moment).
                on_result=_counting(count) if count is not None and not dry_run else None,
            )
    except ValueError as exc:
        raise UnsafeOutputPath(clean_line(str(exc))) from None
    except ArchiveError as exc:  # the dir cannot be locked, or another run holds it
        raise CliError(clean_line(str(exc))) from None
    if fmt == "json":
        click.echo(dumps(run.as_dict(), indent=True))
    elif fmt in ("jsonl", "csv"):
        emit(run.as_dict()["results"], fmt, fields=[f.name for f in fields(ArchiveResult)])
    else:
        click.echo(clean(_render_run(run, window)))
    if run.count(FAILED):
        failed = sessions_and_files(*run.count_apart(FAILED))
        raise CliError(f"{failed} could not be archived (see above)")


@click.command()
@click.argument("session_id", metavar="ID")
@table_or_json
def restore(session_id: str, fmt: str, as_json: bool) -> None:
    """Put an archived session back, byte for byte.

    Restores the newest archived version of session ID (its transcript and its <id>/
    folder, with their archived modification times) into its project dir, and the
    index shows it live again. Refused when a transcript of that session exists: nothing
    is ever overwritten.

    \b
    Example:
        sessiondex search "old idea" --include-archived --scope all
        sessiondex restore 4f0c2a8e-5b1d-4c3e-9f7a-2d6b8e1c0a93
    """
    from sessiondex.cli.output import clean_line, dumps
    from sessiondex.query.resolve import Ambiguous, NotFound
    from sessiondex.transcripts.archive import ArchiveError

    state = app()
    state.fresh_db()
    try:
        result = state.index.restore(session_id)
    except NotFound as exc:
        raise CliError(clean_line(str(exc))) from None
    except Ambiguous as exc:  # the message names the candidates
        click.echo(f"Error: {clean_line(str(exc))}", err=True)
        sys.exit(EXIT_AMBIGUOUS)
    except ArchiveError as exc:
        raise CliError(clean_line(str(exc))) from None
    try:
        resume = state.index.resolve(result.session_id).session.get("resume_command")
    except Exception:  # the session restored fine; only the hint is missing
        resume = None
    out = result.as_dict() | {"resume_command": resume}
    if fmt == "json":
        click.echo(dumps(out, indent=True))
        return
    click.echo(clean_line(f"restored {result.transcript}"))
    if result.folder:
        click.echo(clean_line(f"restored {result.folder}"))
    if result.expired:
        click.echo(
            f"note: it was last modified more than cleanupPeriodDays ({result.days}) ago, so "
            "Claude Code's next sweep deletes it again (the archive keeps it); resume it "
            "to keep it.",
            err=True,
        )
    if resume:
        click.echo(clean_line(f"resume: {resume}"))


def _counting(count: Callable[[str], None]) -> Callable[[ArchiveResult], None]:
    """An ``on_result`` for :meth:`Index.archive` that shows the sessions (and other
    files) done so far on ``count``'s line."""
    done = [0, 0]

    def on_result(result: ArchiveResult) -> None:
        done[0 if result.is_session else 1] += 1
        count(sessions_and_files(done[0], done[1]))

    return on_result


def _default_dir_problem(directory: Path) -> tuple[str, str] | None:
    """(the variable it came from, what is wrong) when the default archive dir is no
    text this process can name files with (``cli.errors.text_problem``), else None."""

    from sessiondex.cli.errors import text_problem

    problem = text_problem(str(directory))
    if problem is None:
        return None
    from sessiondex.transcripts.fspath import xdg_value

    return ("XDG_DATA_HOME" if xdg_value("XDG_DATA_HOME") else "HOME"), problem


def watch_rescue(
    index: Index,
    log: Callable[[str], None],
    *,
    clock: Callable[[], float] = time.time,
    should_stop: Callable[[], bool] | None = None,
) -> Daily:
    """The rescue ``watch`` polls: archive what the sweep deletes within 3 days into the
    default archive dir, at start and once a day by ``clock``; problems are logged,
    never fatal to ``watch``. ``should_stop`` (Ctrl-C, SIGTERM) ends a run between two
    sessions or while it waits for another run's lock, so ``watch`` stops at once."""
    from sessiondex.actions.archive import (
        ARCHIVED,
        DEFAULT_WINDOW,
        FAILED,
        Daily,
        default_archive_dir,
    )

    def job() -> None:
        problem = _default_dir_problem(default_archive_dir())
        if problem is not None:  # as `archive` says it, once a day
            log(f"archive: invalid value for {problem[0]}: {problem[1]}")
            return
        from sessiondex.transcripts.archive import ArchiveStopped

        try:
            run = index.archive(window=DEFAULT_WINDOW, now=clock(), should_stop=should_stop)
        except ArchiveStopped:
            return  # watch is stopping: the next start runs it again
        except Exception as exc:  # the index busy, the archive dir refused: try tomorrow
            log(f"archive: {exc}")
            return
        if run.count(ARCHIVED):
            log(
                f"archived {sessions_and_files(*run.count_apart(ARCHIVED))} Claude Code's"
                f" sweep deletes within 3 days into {run.archive_dir}"
            )
        for result in run.results:
            if result.status == FAILED:
                log(f"archive: failed {result.file_path}: {result.message}")

    return Daily(job, clock=clock)
