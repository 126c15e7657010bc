"""``cleanup``: what Claude Code's retention sweep will delete, and a safe cleanup of our own."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sessiondex.cli.app import CliError, app
from sessiondex.cli.options import cwd_option
from sessiondex.cli.output import counted, report_formats, sessions_and_files

if TYPE_CHECKING:
    from sessiondex.actions.cleanup import Outcome


def describe_summary(summary: dict[str, Any]) -> str:
    """The one ``cleanup:`` line of ``stats`` (from ``query.cleanup.cleanup_summary``)."""
    from sessiondex.cli.output import human_size

    parts = []
    days = sorted({d["days"] for d in summary["config_dirs"] if d["sweep_enabled"]})
    if days:
        parts.append(
            f"{counted(summary['expired_sessions'], 'session')} "
            f"({human_size(summary['expired_bytes'])}) past cleanupPeriodDays "
            f"({'/'.join(str(d) for d in days)}), "
            f"{summary['expiring_within_3_days']} more within 3 days"
        )
    for item in summary["config_dirs"]:
        if not item["sweep_enabled"]:
            problem = item["problems"][0]
            parts.append(
                f"Claude Code skips its sweep of {item['config_dir']} "
                f"({problem['problem']}: {problem['file']})"
            )
    if "archive" in summary:
        parts.append(describe_archive(summary["archive"]))
    return "; ".join(parts) + "; see `sessiondex cleanup`"


def describe_archive(archive: dict[str, Any]) -> str:
    """What the archive covers of the next days' deletions (``cleanup_summary``'s
    ``archive``), for ``stats`` and ``cleanup``. The counts are of sessions (the index
    has no row for an old ``*.jsonl`` that is none), and say so: unnamed, they read as
    if those files, which the sweep deletes too, were counted."""
    text = (
        f"archive: {counted(archive['protected'], 'session')} protected,"
        f" {archive['at_risk']} at risk (deleted within {counted(archive['window_days'], 'day')},"
        " not archived"
    )
    text += "; `sessiondex archive` copies them)" if archive["at_risk"] else ")"
    if archive["archived_only"]:
        text += f", {archive['archived_only']} kept only in the archive"
    return text + f", last archive run {archive['last_run'] or 'never'}"


def _entry_rows(entries: list[dict[str, Any]]) -> list[list[str]]:
    from sessiondex.cli.output import human_size, id_chars, project_label, relative_time

    ids = [e["session_id"] for e in entries]
    width = max(id_chars(ids), app().index.id_width(ids))  # typed back: one session
    return [
        [
            e["title"] + (" [archived]" if e.get("archive") else ""),
            project_label(e),
            relative_time(e["last_activity"]),
            relative_time(e["mtime"]),
            human_size(e["size"]),
            e["session_id"][:width],
        ]
        for e in entries
    ]


def _table(entries: list[dict[str, Any]]) -> str:
    from sessiondex.cli.output import PROJECT_SHRINK, render_table
    from sessiondex.query.cleanup import SESSION

    sessions = [e for e in entries if e.get("kind", SESSION) == SESSION]
    files = [e for e in entries if e.get("kind", SESSION) != SESSION]
    parts = []
    if sessions:
        parts.append(
            render_table(
                _entry_rows(sessions),
                ("title", "project", "last activity", "modified", "size", "id"),
                shrink={1: PROJECT_SHRINK},
                from_left=(1,),
            )
        )
    if files:
        parts.append(_file_table(files))
    return "\n".join("  " + line for line in "\n".join(parts).split("\n"))


def _file_table(entries: list[dict[str, Any]]) -> str:
    """The files that are no sessions: named by their file name (there is no ID to
    resume), with what they are."""
    from sessiondex.cli.output import PROJECT_SHRINK, human_size, relative_time, render_table

    rows = [
        [
            Path(e["file_path"]).name,
            e["kind"],
            e["project_key"],
            relative_time(e["mtime"]),
            human_size(e["size"]),
        ]
        for e in entries
    ]
    return render_table(
        rows,
        ("file (not a session)", "kind", "project dir", "modified", "size"),
        shrink={2: PROJECT_SHRINK},
        from_left=(2,),
    )


def _files_line(plan: dict[str, Any]) -> str:
    """The heading of the files that are no sessions, and whose cleanup takes them.

    With ``--days N`` the plan is our own cleanup: it takes what Claude Code's sweep
    would take at N days (every old ``*.jsonl`` of a project dir), also when Claude Code
    skips its sweep (an invalid cleanupPeriodDays); files sessiondex otherwise ignores
    are then deleted by ``--apply`` alone, which the line says rather than credit the
    sweep with it."""
    from sessiondex.cli.output import human_size

    totals = plan["totals"]
    line = (
        f"{counted(totals['files'], 'file')}, {human_size(totals['file_bytes'])}, not sessions"
        " (legacy subagent transcripts agent-*.jsonl, other .jsonl): "
    )
    if plan["days_source"] != "--days":
        return line + "Claude Code's sweep deletes every old *.jsonl of a project dir"
    line += (
        f"--days {plan['days']} covers them as Claude Code's sweep would at that period"
        " (it deletes every old *.jsonl of a project dir)"
    )
    if not plan["claude_code"]["sweep_enabled"]:
        line += "; Claude Code's sweep is off here, so only cleanup --apply deletes them"
    return line


def _render_root(
    plan: dict[str, Any], applying: bool, archive: str | None, keep_tag: str
) -> list[str]:
    from sessiondex.cli.output import human_size
    from sessiondex.query.cleanup import SESSION

    cc = plan["claude_code"]
    out = [f"Config dir {plan['config_dir']}"]
    if cc["sweep_enabled"]:
        where = "default" if cc["source"] == "default" else cc["source"]
        when = (
            f"not before {cc['next_sweep']} (.last-cleanup is under a day old)"
            if cc["next_sweep"]
            else "the next time it starts"
        )
        also = ""
        if cc["would_delete_files"]:
            also = (
                f", and {counted(cc['would_delete_files'], 'other .jsonl file')}, "
                f"{human_size(cc['would_delete_file_bytes'])}"
            )
        out.append(
            f"  Claude Code: cleanupPeriodDays = {cc['days']} ({where}); its sweep can "
            f"run {when} and would delete {counted(cc['would_delete_sessions'], 'session')}, "
            f"{human_size(cc['would_delete_bytes'])}{also}."
        )
    else:
        for problem in cc["problems"]:
            out.append(
                f"  Claude Code skips its sweep: {problem['problem']} ({problem['file']}); "
                "nothing is expiring by Claude Code."
            )
    for note in cc["notes"]:
        out.append(f"  note: {note}")
    if plan["days"] is None:
        out.append("  No period to plan with: pass --days N.")
        return out
    totals = plan["totals"]
    source = "--days" if plan["days_source"] == "--days" else "cleanupPeriodDays"
    if plan["cutoff"] is None:  # further back than a date can say: nothing is that old
        out.append(f"  Cutoff: none ({source} = {plan['days']} reaches before any date).")
    else:
        out.append(
            f"  Cutoff: {plan['cutoff']} ({source} = {plan['days']}; transcripts last "
            "modified before it are expired)."
        )
    verb = "Deleting" if applying else "Expired (cleanup --apply deletes these)"
    sessions = [e for e in plan["expired"] if e.get("kind", SESSION) == SESSION]
    files = [e for e in plan["expired"] if e.get("kind", SESSION) != SESSION]
    if sessions:
        out.append(
            f"  {verb}: {counted(totals['sessions'], 'session')}, {human_size(totals['bytes'])}"
        )
        out.append(_table(sessions))
    else:
        out.append("  No expired session.")
    if files:
        out.append(f"  {verb}, too: {_files_line(plan)}.")
        out.append(_table(files))
    if plan["protected"]:
        theirs = sum(1 for entry in plan["protected"] if entry.get("claude_code_deletes"))
        if theirs == len(plan["protected"]):
            sweep = "but Claude Code's own sweep will still delete them (it ignores tags)"
        elif theirs:
            sweep = (
                f"but Claude Code's own sweep will still delete {theirs} of them (it ignores tags)"
            )
        else:
            sweep = "and Claude Code's sweep does not delete them either"
        out.append(
            f"  Protected by tag {keep_tag!r} ({counted(totals['protected'], 'session')}, "
            f"{human_size(totals['protected_bytes'])}): cleanup --apply keeps them, {sweep}."
        )
        out.append(_table(plan["protected"]))
        if not archive:
            out.append(
                "  Keep a copy: sessiondex cleanup --apply --archive DIR (archives them "
                "and leaves the originals)."
            )
    if plan["exempt"]:
        exempt = sessions_and_files(totals["exempt"], totals["exempt_files"], of="desktop ")
        out.append(
            f"  Exempt: {exempt} past the cutoff; Claude Code's sweep keeps them (not counted)."
        )
        out.append(_table(plan["exempt"]))
    if plan["losing_subagents"]:
        out.append(
            "  Claude Code's sweep also deletes "
            f"{counted(cc['would_delete_subagent_transcripts'], 'old subagent transcript')}, "
            f"{human_size(cc['would_delete_subagent_bytes'])}, "
            "inside these sessions it keeps (sessiondex archive keeps a copy):"
        )
        out.append(_table(plan["losing_subagents"]))
    return out


@click.command()
@click.option(
    "--days",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Plan our own cleanup with N days instead of cleanupPeriodDays from the settings:"
    " what Claude Code's sweep would delete at N days (old sessions and the other old"
    " *.jsonl of a project dir), also when Claude Code's own sweep is off.",
)
@click.option(
    "--apply",
    "do_apply",
    is_flag=True,
    help="Delete the expired sessions (default: a dry run that deletes nothing).",
)
@click.option(
    "--archive",
    "archive_dir",
    # Not file_okay=False: click's refusal is a multi-line usage error that would come
    # before ours, which says why (a transcript, the index) in one line.
    type=click.Path(),
    default=None,
    metavar="DIR",
    help="With --apply: first archive each session into DIR "
    "(one verified .tar.gz each); DIR stays searchable.",
)
@click.option(
    "--keep-tag",
    default="keep",
    show_default=True,
    metavar="T",
    help="Sessions tagged T are never deleted by --apply.",
)
@cwd_option
@report_formats
def cleanup(
    days: int | None,
    do_apply: bool,
    archive_dir: str | None,
    keep_tag: str,
    cwd: str | None,
    fmt: str,
    as_json: bool,
) -> None:
    """Show what Claude Code's retention sweep will delete; optionally clean up first.

    Claude Code deletes transcripts whose file mtime is older than cleanupPeriodDays
    (settings: managed, <cwd>/.claude/settings.local.json, <cwd>/.claude/settings.json,
    <config>/settings.json; default 30) when it starts, at most once a day. The dry
    run lists those sessions with titles and sizes, and apart the old *.jsonl files
    that are no sessions (legacy agent-*.jsonl), which the sweep deletes too. --apply
    deletes the expired transcripts and their <id>/ folders (never one written in the
    last 10 minutes, never through a symlink, never a session tagged --keep-tag);
    --archive DIR keeps a verified compressed copy of each, found later with
    --include-archived.
    --format json prints the whole plan; jsonl and csv one row per session in it
    (plan: expired, protected or exempt; with --apply, what was done to it).

    \b
    Example:
        sessiondex cleanup
        sessiondex cleanup --days 90 --json
        sessiondex cleanup --format csv > plan.csv
        sessiondex cleanup --apply --archive ~/claude-archive
        sessiondex search "old idea" --scope all --include-archived
    """
    from sessiondex.actions.cleanup import (
        DELETED,
        FAILED,
        apply_plan,
        fresh_plan,
    )
    from sessiondex.cli.output import clean, clean_line, dumps, emit
    from sessiondex.query.cleanup import cleanup_summary
    from sessiondex.transcripts.archive import ArchiveError
    from sessiondex.transcripts.tags import sanitize_tag

    if not sanitize_tag(keep_tag):
        raise click.BadParameter("the tag is empty after sanitizing", param_hint="--keep-tag")
    state = app()
    roots = state.roots
    if archive_dir:
        from sessiondex.actions.cleanup import archive_dir_problem
        from sessiondex.cli.options import UnsafeOutputPath

        problem = archive_dir_problem(
            Path(archive_dir), roots, state.index.db_path, label="--archive"
        )
        if problem:
            raise UnsafeOutputPath(problem)
    db = state.fresh_db(checked=do_apply)
    # A dry run changes no transcript: it may run again after a repair, and an output
    # that fails does not claim a change was made.
    state.writes_started = do_apply
    # The dry run answers the desktop window test from the index where it is current;
    # --apply reads each expired file's windows, as it acts on them.
    plan = fresh_plan(db, roots, cwd=cwd, days=days, keep_tag=keep_tag, index_windows=not do_apply)
    result = plan.as_dict()
    result["archive"] = cleanup_summary(db, roots, cwd, now=plan.now)["archive"]
    if fmt == "table":
        lines: list[str] = []
        for root in result["config_dirs"]:
            lines.extend(_render_root(root, do_apply, archive_dir, keep_tag))
        archive_line = describe_archive(result["archive"])
        lines.append(archive_line[0].upper() + archive_line[1:] + ".")
        if not do_apply and plan.to_delete:
            lines.append(
                "Dry run: nothing was deleted. Run with --apply (and --archive DIR "
                "to keep a compressed copy)."
            )
        click.echo(clean("\n".join(lines)))
    if not do_apply:
        if fmt == "json":
            click.echo(dumps(result, indent=True))
        elif fmt in ("jsonl", "csv"):
            emit(plan_rows(result, []), fmt, fields=plan_row_fields())
        return
    echo_err = fmt != "table"

    def report(outcome: Outcome) -> None:
        # Paths and messages may quote names from the transcripts' tree: cleaned.
        if outcome.status == DELETED:
            for path in outcome.removed:
                click.echo(clean_line(f"deleted {path}"), err=echo_err)
            if outcome.archive:
                click.echo(clean_line(f"  archived as {outcome.archive}"), err=echo_err)
        elif outcome.status == FAILED:
            click.echo(clean_line(f"failed {outcome.file_path}: {outcome.message}"), err=True)
        else:
            where = f" ({outcome.archive})" if outcome.archive else ""
            click.echo(
                clean_line(f"{outcome.status} {outcome.file_path}: {outcome.message}{where}"),
                err=echo_err,
            )

    try:
        outcomes = apply_plan(
            db,
            plan,
            roots,
            archive_dir=Path(archive_dir) if archive_dir else None,
            on_outcome=report,
        )
    except (ValueError, ArchiveError) as exc:  # ArchiveError: DIR cannot be locked
        raise CliError(clean_line(str(exc))) from None
    deleted = [o for o in outcomes if o.status == DELETED]
    failed = [o for o in outcomes if o.status == FAILED]
    freed = sum(e.size for e in plan.to_delete if e.file_path in {o.file_path for o in deleted})
    if fmt == "json":
        result["results"] = [o.as_dict() for o in outcomes]
        click.echo(dumps(result, indent=True))
    elif fmt in ("jsonl", "csv"):
        emit(plan_rows(result, [o.as_dict() for o in outcomes]), fmt, fields=plan_row_fields())
    else:
        click.echo(_summary(outcomes, freed))
    if failed:
        from sessiondex.query.cleanup import SESSION

        files = sum(1 for o in failed if o.kind != SESSION)
        said = sessions_and_files(len(failed) - files, files)
        raise CliError(f"{said} could not be cleaned up (see above)")


#: The lists of a config dir's plan that name sessions, each a row's ``plan``.
PLAN_LISTS = ("expired", "protected", "exempt")


def plan_row_fields() -> tuple[str, ...]:
    """The keys of every :func:`plan_rows` row, in order: a CSV's header, also when
    the plan names no session."""
    from sessiondex.query.cleanup import ENTRY_FIELDS

    return ("plan", *ENTRY_FIELDS, "status", "message")


def plan_rows(result: dict[str, Any], outcomes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per session a cleanup plan names (``--format jsonl|csv``): ``plan`` (the
    list it is in), the plan's entry, and with ``--apply`` what was done to it
    (``status``, ``message``; ``archive`` the copy made, if one was). Every row has the
    same keys, so a CSV has one header."""
    done = {str(o.get("file_path")): o for o in outcomes}
    rows: list[dict[str, Any]] = []
    for root in result["config_dirs"]:
        for plan in PLAN_LISTS:
            for entry in root.get(plan) or []:
                outcome = done.get(str(entry.get("file_path")), {})
                rows.append(
                    {
                        "plan": plan,
                        **entry,
                        "archive": outcome.get("archive") or entry.get("archive"),
                        "status": outcome.get("status"),
                        "message": outcome.get("message"),
                    }
                )
    return rows


def _summary(outcomes: list[Outcome], freed: int) -> str:
    """The last line of ``cleanup --apply``: each outcome counted once, under its name
    (an archived-then-deleted session is deleted *and* archived; a protected session's
    copy is archived with its original kept)."""
    from sessiondex.actions.cleanup import ARCHIVED, DELETED, FAILED, SKIPPED
    from sessiondex.cli.output import human_size
    from sessiondex.query.cleanup import SESSION

    def count(status: str) -> int:
        return sum(1 for o in outcomes if o.status == status)

    deleted = count(DELETED)
    first = sum(1 for o in outcomes if o.status == DELETED and o.archive)
    files = sum(1 for o in outcomes if o.status == DELETED and o.kind != SESSION)
    line = f"{sessions_and_files(deleted - files, files)} deleted ({human_size(freed)})"
    if first:
        line += f", {'all' if first == deleted else first} archived first"
    if count(ARCHIVED):
        line += f"; {counted(count(ARCHIVED), 'protected session')} archived, originals kept"
    return f"{line}; {count(SKIPPED)} skipped; {count(FAILED)} failed."
