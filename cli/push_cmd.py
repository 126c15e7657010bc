"""``push``: copy local transcripts, redacted, into the PostgreSQL team store."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from sessiondex.cli.app import EXIT_AMBIGUOUS, CliError, app
from sessiondex.cli.errors import warn
from sessiondex.cli.output import clean_line, counted, emit_object, human_size
from sessiondex.cli.progress import progress_bar


def _summary_line(stats: dict[str, Any], dry_run: bool) -> str:
    redactions = ", ".join(f"{k} {v}" for k, v in sorted(stats["redactions"].items()))
    verb = "would send" if dry_run else "sent"
    line = (
        f"{counted(stats['files_seen'], 'file')} seen: {stats['new']} new, "
        f"{stats['grown']} grown, {stats['rewritten']} rewritten, "
        f"{stats['unchanged']} unchanged; {counted(stats['sessions'], 'session')}, "
        f"{counted(stats['entries'], 'entry', 'entries')} {verb}"
        + (f" ({stats['duplicates']} already in the store)" if stats["duplicates"] else "")
        + f", {human_size(stats['bytes_read'])} read, "
        f"{counted(sum(stats['redactions'].values()), 'secret')} redacted"
        + (f" ({redactions})" if redactions else "")
        + f", {counted(stats['tool_outputs_omitted'], 'tool output')} left out"
        + (f", {counted(stats['bad_lines'], 'bad line')}" if stats["bad_lines"] else "")
        + (
            f", {counted(stats['deleted_in_store'], 'file')} left out as deleted from the store"
            " (push --resend-deleted ID sends a session again)"
            if stats["deleted_in_store"]
            else ""
        )
        + (
            f", {counted(stats['resent_deleted'], 'file')} of deleted sessions {verb} again"
            if stats["resent_deleted"]
            else ""
        )
        + f", {stats['seconds']:.2f}s"
    )
    return line


def _project_keys(projects: tuple[str, ...], roots: list[Path]) -> set[str] | None:
    """``--project`` values as project keys: a directory (the sessions started there,
    named as Claude Code names their folder; it need not exist any more) or a project
    folder's own name. A value that names no project folder is an error: a typo should
    not push nothing quietly."""
    if not projects:
        return None
    from sessiondex.transcripts.keys import project_keys_named

    keys: set[str] = set()
    for value in projects:
        candidates = project_keys_named(value)
        found = [k for k in candidates if any((r / "projects" / k).is_dir() for r in roots)]
        if not found:
            raise CliError(f"--project {value!r}: no sessions started there")
        keys.update(found)
    return keys


@click.command()
@click.option("--to", "dsn", required=True, metavar="DSN", help="postgresql://… of the team store.")
@click.option(
    "--project",
    "projects",
    multiple=True,
    metavar="DIR",
    help="Only sessions started in DIR (repeatable); a project folder name works too.",
)
@click.option(
    "--since",
    default=None,
    metavar="WHEN",
    help="Only transcripts modified since WHEN (7d, 2026-11-01).",
)
@click.option(
    "--with-tools",
    is_flag=True,
    help="Also send tool outputs (left out by default: most of the bytes, most of the secrets).",
)
@click.option(
    "--resend-deleted",
    "resend_deleted",
    multiple=True,
    metavar="ID",
    help="Send session ID (or an ID prefix) again though it was deleted from the store"
    " (repeatable).",
)
@click.option("--dry-run", is_flag=True, help="Show what would be sent; send nothing.")
@click.option(
    "--show-redactions",
    is_flag=True,
    help="List each redaction (kind and a masked preview, never the secret).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def push(
    dsn: str,
    projects: tuple[str, ...],
    since: str | None,
    with_tools: bool,
    resend_deleted: tuple[str, ...],
    dry_run: bool,
    show_redactions: bool,
    as_json: bool,
) -> None:
    """Copy local transcripts, redacted, into the PostgreSQL team store.

    Sends only what the store does not have yet (appended lines; a rewritten file
    again), so running it twice, or from two machines at once, stores every line
    once. Secrets (cloud keys, tokens, JWTs, private keys, password assignments,
    random-looking values in env lines) are replaced by [REDACTED:kind] before they
    leave; tool outputs stay home unless --with-tools. Everyone with the DSN sees
    everything pushed. A session deleted from the store (PostgresSessionStore.delete)
    is left out, and counted, unless --resend-deleted names it (an ID in any case or
    a prefix of 8 or more, as for show; one that names no deleted session is a
    warning).

    \b
    Example:
        sessiondex push --to postgresql://db.internal/team --dry-run --show-redactions
        sessiondex push --to postgresql://db.internal/team --project ~/code/shop --since 30d
        sessiondex push --to postgresql://db.internal/team --resend-deleted 3f2a9c1e-7b4d-4c1a-9e2f-0a1b2c3d4e5f
    """
    from sessiondex.store import MissingDriver, require_driver
    from sessiondex.store.dsn import error_line, hide_password, is_postgres_dsn

    if not is_postgres_dsn(dsn):
        raise click.BadParameter("expected a postgresql:// URL", param_hint="--to")
    try:
        require_driver()
    except MissingDriver as exc:
        raise CliError(str(exc)) from None
    import psycopg

    from sessiondex.store.prefix_memo import default_memo_path
    from sessiondex.store.push import PushOptions, run_push
    from sessiondex.store.schema import SchemaTooNew
    from sessiondex.store.tombstones import AmbiguousResend

    state = app()
    since_ms = None
    if since is not None:
        from sessiondex.query.filters import parse_since

        try:
            since_ms = parse_since(since)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--since") from None
    options = PushOptions(
        roots=state.roots,
        project_keys=_project_keys(projects, state.roots),
        since_ms=since_ms,
        with_tools=with_tools,
        dry_run=dry_run,
        resend_deleted=frozenset(resend_deleted),
        show_redactions=show_redactions,
        memo_path=default_memo_path(),
    )
    state.warn_missing_roots()
    try:
        with progress_bar("Pushing") as progress:
            stats = run_push(dsn, options, progress)
    except AmbiguousResend as exc:
        click.echo(f"Error: {clean_line(str(exc))}", err=True)
        sys.exit(EXIT_AMBIGUOUS)
    except (psycopg.Error, SchemaTooNew, ValueError) as exc:  # ValueError: a malformed DSN
        raise CliError(f"team store {hide_password(dsn)}: {error_line(exc, dsn)}") from None
    for typed in stats.resend_not_deleted:
        warn(f"--resend-deleted {typed}: no session deleted from the store has this ID")
    for path, offset, finding in stats.findings:
        click.echo(
            f"{clean_line(path)} byte {offset}: {finding.kind} {finding.preview}", err=as_json
        )
    summary = stats.as_dict()
    summary["dry_run"] = dry_run
    emit_object(summary, "json" if as_json else "table", text=_summary_line(summary, dry_run))
