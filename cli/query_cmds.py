"""Reading commands: list, search, from-pr, resolve, continue, resume."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sessiondex.cli.app import EXIT_AMBIGUOUS, EXIT_NOT_FOUND, BareError, CliError, app
from sessiondex.cli.completion import complete_session
from sessiondex.cli.options import build_filters, cwd_option, run_filters, scope_options
from sessiondex.cli.output import (
    HIGHLIGHT,
    clean,
    clean_line,
    counted,
    emit,
    format_options,
    is_archived,
)

# What resolve says for a session without a resume line that is not archived: a team
# store's session whose ID is no session ID (indexer/objects.py resume_command).
NOT_RESUMABLE = "claude --resume cannot take this session's ID (it is not a session ID)"


def _why_not_resumable(obj: dict[str, Any]) -> str:
    """What to say of a session with no resume line: archived, in a config dir Claude
    Code cannot be pointed at, or a team store's ID that is no session ID."""
    from sessiondex.transcripts.config import unreachable_reason

    if is_archived(obj):
        return archived_advice(obj)
    return unreachable_reason(obj.get("config_dir")) or NOT_RESUMABLE


if TYPE_CHECKING:
    from sessiondex.index import Index
    from sessiondex.query.resolve import Resolution

#: What a resolution asked of an index answers (:func:`resolved_or_exit`).
R = TypeVar("R")


def echo_notes(notes: list[str]) -> None:
    """Resolution notes (they quote directories and titles) on stderr, cleaned."""
    for note in notes:
        click.echo(clean_line(note), err=True)


def resolve_or_exit(
    arg: str,
    cwd: str | None,
    fmt: str = "table",
    *,
    for_write: bool = False,
    include_archived: bool = False,
    if_archived: Callable[[dict[str, Any]], str] | None = None,
) -> Resolution:
    """Resolve ARG for any command; not found → exit 1, ambiguous → candidates, exit 3.
    With ``if_archived``, an ARG that only an archived session matches is exit 1 with
    ``if_archived(session)`` as the message (what to do instead), not "not found"."""
    state = app()
    if for_write:
        state.check_writable()
    state.reading_db()
    # through the Index: it checks the session's own file first (read your writes)
    return resolved_or_exit(
        state.index,
        lambda index: index.resolve(
            arg, cwd=cwd, for_write=for_write, include_archived=include_archived
        ),
        fmt,
        if_archived=if_archived,
    )


def resolved_or_exit(
    index: Index,
    ask: Callable[[Index], R],
    fmt: str = "table",
    *,
    if_archived: Callable[[dict[str, Any]], str] | None = None,
) -> R:
    """``ask(index)``'s resolution, its failures said as every command says them (not
    found: exit 1; ambiguous: the candidates, exit 3), whichever index answers: ``store
    delete`` asks the team store its DSN names, not the ``--db`` one (and answers the
    sessions a whole ID names: every stored copy)."""
    from sessiondex.query.resolve import Ambiguous, NotFound

    try:
        return ask(index)
    except NotFound as exc:
        if if_archived is not None and exc.archived is not None:
            raise CliError(clean_line(if_archived(exc.archived))) from None
        if fmt in ("json", "csv"):  # "[]", or the header, as for every listing
            from sessiondex.query.sessions import SESSION_FIELDS

            emit([], fmt, fields=(*SESSION_FIELDS, "matched_by"))
        # The message quotes ARG and the closest titles: transcript text, cleaned.
        if str(exc).startswith("No conversation found with session ID"):
            raise BareError(clean(str(exc))) from None
        raise CliError(clean(str(exc))) from None
    except Ambiguous as exc:
        click.echo(
            f"Error: {clean(str(exc))}; say which one (candidates below, newest first)", err=True
        )
        emit(
            exc.candidates,
            fmt,
            project=True,
            **_marks(exc.candidates, fmt, index),
        )
        sys.exit(EXIT_AMBIGUOUS)


def shows_project(filters: Any, rows: list[dict[str, Any]]) -> bool:
    """Whether a table needs the project column: outside the worktree scope, or when
    rows come from other projects anyway (a PR URL matches in every project)."""
    if filters.scope != "worktree":
        return True
    from sessiondex.query.scopes import resolve_cwd, scope_keys

    here = set(scope_keys(resolve_cwd(filters.cwd), "worktree") or ())
    return any(row.get("project_key") not in here for row in rows)


@click.command("list")
@scope_options()
@format_options
def list_cmd(fmt: str, as_json: bool, **options: Any) -> None:
    """List sessions like the /resume picker, newest activity first.

    Sidechain, metadata-only, -p/SDK and /loop sessions, and team, daemon and
    superseded ones, are hidden unless --all-kinds. A fork (marked ↳) stands at its
    own place, so --limit N gives the N sessions used last.

    \b
    Example:
        sessiondex list
        sessiondex list --scope repo --current-branch --since 7d
        sessiondex list --scope all --json | jq '.[].title'
    """
    from sessiondex.query.listing import list_sessions
    from sessiondex.query.sessions import SESSION_FIELDS

    filters = build_filters(**options)
    db = app().reading_db()
    rows = run_filters(lambda: list_sessions(db, filters))
    emit(
        rows,
        fmt,
        empty_message=_empty_message(_no_sessions(db, filters)) if not rows else None,
        project=shows_project(filters, rows),
        **_marks(rows, fmt),
        fields=SESSION_FIELDS,
    )
    _warn_expiring(db, rows, filters.cwd)


def _marks(rows: list[dict[str, Any]], fmt: str, index: Index | None = None) -> dict[str, Any]:
    """What a table shows of its rows beyond their objects (emit's keywords): the ID
    width (``Index.id_width``: IDs typed back name one session among all the index
    holds), agent names (``@name``) and the picker-archive mark. The JSON object keeps
    the contract's keys: other formats get none of them."""
    if fmt != "table" or not rows:
        return {}
    index = index or app().index
    return {
        "widen": index.id_width,
        "agents": index.agent_names(rows),
        "in_picker_archive": index.picker_archived(rows),
    }


def _no_sessions(db: Any, filters: Any) -> str:
    """What an empty ``list`` says: which wider scope to try, and ``--all-kinds`` when the
    sessions in scope are all of the kinds it hides (:data:`HIDDEN_KINDS`). A wider
    scope is named only when the same filters find a session there: "try --scope all"
    after a ``--since`` nothing passes would send the user to another empty answer."""
    from dataclasses import replace

    from sessiondex.query.listing import list_sessions

    wider = {"worktree": ["repo", "all"], "repo": ["all"]}.get(filters.scope, [])
    for i, scope in enumerate(wider):
        if list_sessions(db, replace(filters, scope=scope, limit=1)):
            # every scope after it holds that session too
            tries = [f"--scope {s}" for s in wider[i:]]
            break
    else:
        tries = []
    said = "No sessions in this scope" + _left_nothing(db, filters)
    said += f" (try {' or '.join(tries)})." if tries else "."
    hint = hidden_hint(filters, lambda wider: list_sessions(db, replace(wider, limit=1)))
    return f"{said} {hint}" if hint else said


def _left_nothing(db: Any, filters: Any) -> str:
    """`` match --branch X --since 7d`` when the scope holds sessions and those filters
    left none: "No sessions in this scope." alone read as an empty directory."""
    import shlex
    from dataclasses import replace

    from sessiondex.query.listing import list_sessions

    named = ["--current-branch"] if filters.current_branch else []
    for flag, value in (
        ("--branch", filters.branch),
        ("--since", filters.since),
        ("--user", filters.user),
        ("--host", filters.host),
    ):
        if value:
            named.append(f"{flag} {shlex.quote(value)}")
    if not named:
        return ""
    unfiltered = replace(
        filters, branch=None, current_branch=False, since=None, user=None, host=None, limit=1
    )
    if not list_sessions(db, unfiltered):
        return ""  # the scope itself is empty: the filters are not what left nothing
    return " match " + clean_line(" ".join(named))


def hidden_hint(filters: Any, answers: Callable[[Any], Any], what: str = "match it") -> str | None:
    """What an empty ``list``, ``search`` or ``from-pr`` says when sessions it hides would
    answer: the narrower option that shows them. ``--include-hidden`` when sessions
    tagged ``__hidden`` do (the tag's own message names it; ``--all-kinds`` shows them
    too, with every hidden kind besides), else ``--all-kinds`` when a hidden kind does.
    ``answers(filters)``: whether the command finds anything with these filters."""
    from dataclasses import replace

    if filters.all_kinds:
        return None
    if not filters.include_hidden and answers(replace(filters, include_hidden=True)):
        return f"Sessions tagged __hidden {what}: try --include-hidden."
    if answers(replace(filters, all_kinds=True)):
        return f"Hidden kinds {what}: try --all-kinds ({HIDDEN_KINDS})."
    return None


def _warn_expiring(db: Any, rows: list[dict[str, Any]], cwd: str | None) -> None:
    """A stderr line when Claude Code's retention sweep will soon delete listed sessions
    (this machine's sweep: not for the team store's rows), with the settings Claude Code
    started in ``cwd`` reads (its project's may set the period), as ``cleanup --cwd``."""
    if getattr(getattr(db, "dialect", None), "team", False):
        return
    try:
        from sessiondex.query.expiry import expiring_soon
        from sessiondex.transcripts.fspath import CwdGone
    except ImportError:
        return
    try:
        count = expiring_soon(db, [r["file_path"] for r in rows], cwd=cwd, roots=app().roots)
    except CwdGone:  # advice only: a listing from a deleted directory goes without it
        return
    if count:
        click.echo(
            f"warning: {counted(count, 'listed session')} will be deleted by Claude Code's "
            "cleanup within 3 days; see `sessiondex cleanup`",
            err=True,
        )


def _elsewhere_hint(counts: dict[str, int], nouns: tuple[str, str]) -> str | None:
    """``3 matches in other projects: --scope all`` when this scope has none but wider
    scopes do (``counts``: scope → count there, each including the narrower ones;
    ``nouns``: singular and plural)."""
    repo = counts.get("repo", 0)
    every = counts.get("all", 0)
    parts = []
    if repo:
        noun = nouns[repo != 1]
        parts.append(f"{repo} {noun} in other worktrees of this repository: --scope repo")
    if every > repo:
        rest = every - repo
        noun = "" if parts else f" {nouns[rest != 1]}"
        parts.append(f"{rest}{noun} in other projects: --scope all")
    return "; ".join(parts) or None


# What --all-kinds shows besides, in the hint of an answer that only they would give.
HIDDEN_KINDS = (
    "-p/SDK, sidechain, /loop, team, daemon, superseded, picker-archived and"
    " __hidden-tagged sessions"
)


def _empty_message(message: str) -> str | None:
    """``message`` for an empty answer, unless no config dir has any history (the line
    saying so is already out; a scope hint would send the user the wrong way)."""
    from sessiondex.cli.config_dirs import no_history

    state = app()
    if state.index.team_dsn is not None:
        return message  # the team store answered, whatever this machine holds
    return None if no_history(state.roots) else message


@click.command()
@click.argument("query", nargs=-1, required=True)
@scope_options(default_limit=50)
@click.option(
    "--raw",
    is_flag=True,
    help="Pass QUERY to FTS5 as is (AND, OR, NEAR, prefix*); on the team store, to"
    ' websearch_to_tsquery ("a phrase", or, -word).',
)
@format_options
def search(query: tuple[str, ...], raw: bool, fmt: str, as_json: bool, **options: Any) -> None:
    """Full-text search over titles, names, tags, branches, PR links, prompts and
    message text; or, given a PR/MR URL or owner/repo#123, the sessions linked to that
    PR, then those that only mention it.

    QUERY may be several words, quoted or not (search auth refactor is search "auth
    refactor"). Every word must appear in the session, though not necessarily in one
    message; the last word also matches as a prefix. Words are matched as typed (quotes, -, *, :
    are plain text) unless --raw. Each JSON row says how it matched: matched_by is
    title, text, pr-link, pr-mention or fuzzy.

    When no session has every word, the table shows the best partial matches under
    "No session has all of: ...; best partial matches:" (json, jsonl and csv print
    none: their rows could not say they are partial); when none has any word, the
    closest titles under "No exact matches; closest titles:" (typo tolerance; in json,
    matched_by "fuzzy"). When nothing matches in this scope, a line says how many
    matches wider scopes hold.

    Exit status, as grep's: 0 when a session matched; 1 when none did (partial matches
    and closest titles are suggestions, not matches); 2 for a usage error.

    \b
    Example:
        sessiondex search "auth refactor" --scope all
        sessiondex search https://github.com/acme/shop/pull/42
        sessiondex search acme/shop#42
        sessiondex search --raw 'NEAR(auth token, 5)' --json
    """
    from sessiondex.cli.settings import use_color
    from sessiondex.query.search import FUZZY, PARTIAL, SearchSyntaxError
    from sessiondex.query.sessions import SESSION_FIELDS

    text = " ".join(query)  # the words of an unquoted query, as one quoted would be
    filters = build_filters(**options)
    index = app().reading_index()
    table = fmt == "table"
    highlight = table and use_color(sys.stdout.isatty())
    # Placeholders, not colour codes: the snippet is transcript text and is cleaned
    # before the placeholders become colour (cli/output.py).
    markers = HIGHLIGHT if highlight else ("[", "]")
    try:
        outcome = run_filters(
            lambda: index.search_outcome(
                text, raw=raw, markers=markers, elsewhere=table, filters=filters
            )
        )
    except SearchSyntaxError as exc:
        raise CliError(clean(str(exc))) from None
    rows = outcome.rows
    if outcome.kind == PARTIAL:
        words = clean_line(", ".join(outcome.words))
        if table:
            click.echo(f"No session has all of: {words}; best partial matches:")
        else:
            # A row of json, jsonl or csv says how it matched, not that the match was
            # partial: a script reading it (the exit code unread) would take these
            # suggestions for matches. Only a reader sees them. Fuzzy rows say "fuzzy".
            click.echo(
                f"No session has all of: {words}; `--format table` shows the best partial matches",
                err=True,
            )
            rows = []
    elif table and outcome.kind == FUZZY:
        click.echo("No exact matches; closest titles:")
    emit(
        rows,
        fmt,
        extra_columns=("snippet",),
        empty_message=_empty_message("No matches."),
        highlight=highlight,
        project=shows_project(filters, rows),
        **_marks(rows, fmt),
        fields=(*SESSION_FIELDS, "score", "snippet", "matched_by"),
    )
    hint = _elsewhere_hint(outcome.elsewhere, ("match", "matches"))
    if hint:
        click.echo(hint, err=True)
    if not outcome.matched:
        hidden = hidden_hint(
            filters,
            lambda wider: (
                run_filters(lambda: index.search_outcome(text, raw=raw, filters=wider)).matched
            ),
        )
        if hidden:
            click.echo(hidden, err=True)
    if not outcome.matched:
        # Nothing matched: exit 1, as grep. click's Exit, not SystemExit, so a caller
        # of cli.main(standalone_mode=False) gets the code back (not an exception).
        raise click.exceptions.Exit(EXIT_NOT_FOUND)


def _pr_cell(kind: str, number: int | None, url: str | None) -> Any:
    """The PR column: the session's PRs this answer is about (all its links without a
    PR), as ``owner/repo#N``; more than two are counted."""
    from sessiondex.query.prs import pr_label

    def cell(obj: dict[str, Any]) -> str:
        prs = [
            p
            for p in obj.get(kind) or []
            if (number is None or p.get("number") == number)
            and (url is None or str(p.get("url", "")).lower() == url.lower())
        ]
        labels = [pr_label(p) for p in prs]
        return ", ".join(labels[:2]) + (f" +{len(labels) - 2}" if len(labels) > 2 else "")

    return cell


@click.command("from-pr")
@click.argument("pr", required=False)
@scope_options(default_scope="repo")
@format_options
def from_pr(pr: str | None, fmt: str, as_json: bool, **options: Any) -> None:
    """Sessions linked to a pull/merge request, by number, URL or owner/repo#123, then
    the sessions that only mention it (its URL appears in their text, without the
    pr-link record Claude Code writes for the PRs it opens).

    A number matches the PRs of sessions in scope (default: every worktree of this
    directory's repository, as Claude Code's --from-pr does; --scope worktree for this
    directory's alone), and only this repository's PRs when its origin remote is known;
    a URL or owner/repo#123 names one PR and matches in every project. Without PR:
    every session in scope that has a PR link. The table's pr column shows the PRs
    concerned.

    Exit status: 0 when a session was found, 1 when none was (--json prints []), 2
    for a usage error (a PR that is no number, URL or owner/repo#123).

    \b
    Example:
        sessiondex from-pr 42
        sessiondex from-pr 42 --scope worktree
        sessiondex from-pr acme/shop#42
        sessiondex from-pr https://gitlab.com/acme/api/-/merge_requests/7
    """
    from sessiondex.cli.errors import InvalidValue
    from sessiondex.query.prs import NotAPullRequest, find_pr, pr_argument, pr_label
    from sessiondex.query.sessions import SESSION_FIELDS

    if pr is not None:
        try:
            pr_argument(pr)  # bad input is a usage error before any lookup
        except NotAPullRequest as exc:
            raise InvalidValue("'PR'", str(exc)) from None
    filters = build_filters(**options)
    db = app().reading_db()
    answer = run_filters(lambda: find_pr(db, pr, filters, elsewhere=fmt == "table"))
    if fmt != "table":
        # exactly the session object's keys (the CLI contract: only search and resolve add
        # matched_by); links come first, and a row's pr_links say whether it is one
        rows = [{key: row[key] for key in SESSION_FIELDS} for row in answer.rows]
        emit(rows, fmt, fields=SESSION_FIELDS)
    else:
        url = answer.pr.url if answer.pr else None
        what = (
            pr_label(answer.pr)
            if answer.pr
            else f"PR #{answer.number}"
            if answer.number is not None
            else None
        )
        project = shows_project(filters, answer.rows)
        if answer.linked:
            emit(
                answer.linked,
                fmt,
                columns=[("pr", _pr_cell("pr_links", answer.number, url))],
                project=project,
                **_marks(answer.linked, fmt),
            )
        if answer.mentioned:
            if answer.linked:
                click.echo("\nMentioned in (no pr-link record):")
            else:
                click.echo(f"No session is linked to {what}; mentioned in:")
            emit(
                answer.mentioned,
                fmt,
                columns=[("pr", _pr_cell("pr_mentions", answer.number, url))],
                project=project,
                **_marks(answer.mentioned, fmt),
            )
        if not answer.rows:
            message = (
                f"No session is linked to {what}."
                if what
                else "No session in this scope has a PR link."
            )
            hidden = hidden_hint(
                filters,
                lambda wider: run_filters(lambda: find_pr(db, pr, wider).rows),
                what="are linked to it",
            )
            if hidden:
                message += f" {hidden}"
            if _empty_message(message):
                click.echo(clean_line(message), err=True)
            hint = _elsewhere_hint(answer.elsewhere, ("session", "sessions"))
            if hint:
                click.echo(hint, err=True)
    if not answer.rows:
        # Nothing matched: exit 1, as grep. click's Exit, not SystemExit, so a caller
        # of cli.main(standalone_mode=False) gets the code back (not an exception).
        raise click.exceptions.Exit(EXIT_NOT_FOUND)


@click.command()
@click.argument("arg", shell_complete=complete_session)
@cwd_option
@click.option("--include-archived", is_flag=True, help="Also resolve archived sessions.")
@format_options
def resolve(arg: str, cwd: str | None, include_archived: bool, fmt: str, as_json: bool) -> None:
    """Find one session from an ID, a name, a transcript path or an ID prefix.

    Order: transcript path, full session ID (this repository first, then another
    project only if exactly one holds it), exact name (custom or AI title, any
    case), then an ID prefix of 8+ characters. Exit 1 if nothing matches, 3 with the
    candidates if several do.

    \b
    Example:
        sessiondex resolve 3f2a9c1e-5b7d-4e8f-9a0b-1c2d3e4f5a6b
        sessiondex resolve "auth refactor" --json
        sessiondex resolve 3f2a9c1e
    """
    from sessiondex.query.resolve import NO_MAIN_TRANSCRIPT, without_main_transcript

    found = resolve_or_exit(
        arg,
        cwd,
        fmt,
        include_archived=include_archived,
        if_archived=lambda session: (
            f"session {session['session_id']} is archived ({session['file_path']}): add"
            f" --include-archived to resolve it, or `sessiondex restore"
            f" {session['session_id']}` to put it back"
        ),
    )
    echo_notes(found.notes)
    obj = found.as_object()
    if fmt == "table":
        emit(
            [obj],
            fmt,
            project=True,
            **_marks([obj], fmt),
        )
        how = obj["resume_command"] or (
            NO_MAIN_TRANSCRIPT if without_main_transcript(found) else _why_not_resumable(obj)
        )
        if any(how in note for note in found.notes):  # said just above: once is enough
            click.echo(clean(f"matched by {found.matched_by}"))
        else:
            click.echo(clean(f"matched by {found.matched_by}: {how}"))
    else:  # json: an array of one, as for several candidates
        emit(
            [obj],
            fmt,
            **_marks([obj], fmt),
        )


@click.command("continue")
@cwd_option
@click.option(
    "--print-mode",
    is_flag=True,
    help="Also consider -p/SDK and /loop sessions, as `claude -p --continue` does.",
)
@format_options
def continue_cmd(cwd: str | None, print_mode: bool, fmt: str, as_json: bool) -> None:
    """The session `claude --continue` would open in this directory.

    \b
    Example:
        sessiondex continue
        sessiondex continue --cwd ~/src/shop --json
    """
    from sessiondex.query.resolve import NotFound, continue_session

    app().require_local()
    db = app().reading_db()
    try:
        obj = continue_session(db, cwd=cwd, print_mode=print_mode, roots=app().roots)
    except NotFound as exc:
        if fmt in ("json", "csv"):  # "[]", or the header, as for every listing
            from sessiondex.query.sessions import SESSION_FIELDS

            emit([], fmt, fields=SESSION_FIELDS)
        raise CliError(clean(str(exc))) from None
    emit(
        [obj],
        fmt,
        **_marks([obj], fmt),
    )


def archived_advice(session: dict[str, Any]) -> str:
    """What to do with an archived session instead of resuming it (it has no
    resume_command: Claude Code cannot find a transcript that is in an archive)."""
    return (
        f"archived in {session['file_path']}; "
        f"run `sessiondex restore {session['session_id']}` first to resume it"
    )


@click.command()
@click.argument("arg", required=False, shell_complete=complete_session)
@cwd_option
@click.option("--dry-run", is_flag=True, help="Print the command instead of running it.")
def resume(arg: str | None, cwd: str | None, dry_run: bool) -> None:
    """Resolve ARG, then run `claude --resume <id>` in the session's directory.

    If the recorded directory no longer exists, --cwd (when it exists) or the current
    one is used, and said.
    Without ARG, on a terminal, the picker (`sessiondex pick`) chooses the session.
    A session outside ~/.claude is resumed with CLAUDE_CONFIG_DIR set to its config
    dir, so Claude Code looks where the session is. An archived session cannot be
    resumed: `sessiondex restore ID` puts it back first.

    \b
    Example:
        sessiondex resume "auth refactor"
        sessiondex resume 3f2a9c1e --dry-run
        sessiondex resume
        sessiondex --config-dir ~/old-laptop/.claude resume 3f2a9c1e
    """
    from sessiondex.query.resolve import (
        NO_MAIN_TRANSCRIPT,
        NO_MESSAGES,
        without_main_transcript,
        without_messages,
    )
    from sessiondex.query.sessions import absolute_cwd, claude_config_dir, resume_command
    from sessiondex.transcripts.config import unreachable_reason
    from sessiondex.transcripts.fspath import real_cwd  # not $PWD: claude must start there

    app().require_local()
    if arg is None:
        from sessiondex.cli.options import configured_scope
        from sessiondex.cli.pick_cmd import choose_session

        arg = choose_session(cwd, scope=configured_scope("worktree"))["file_path"]

    found = resolve_or_exit(
        arg, cwd, if_archived=lambda session: f"session {archived_advice(session)}"
    )
    session = found.session
    if without_main_transcript(found):
        raise CliError(clean_line(f"{arg}: {NO_MAIN_TRANSCRIPT}"))
    if without_messages(found):
        raise CliError(clean_line(f"{arg}: {NO_MESSAGES}"))
    unreachable = unreachable_reason(session.get("config_dir"))
    if unreachable:  # before any note that it is resuming
        raise CliError(unreachable)
    recorded = session.get("cwd")
    # Only an absolute directory: a relative one ("." too) would be this process's.
    workdir = absolute_cwd(recorded)
    if not workdir or not os.path.isabs(workdir) or not os.path.isdir(workdir):
        # --cwd, unless it is gone too: claude must start in a directory that exists
        fallback = os.path.abspath(cwd) if cwd and os.path.isdir(cwd) else real_cwd()
        if fallback is None:  # the process's own was deleted as well
            raise CliError(
                clean_line(
                    f"{workdir or 'the session directory'} no longer exists, nor does the"
                    " current directory: pass --cwd DIR to resume from there"
                )
            )
        if workdir:
            click.echo(
                clean_line(f"note: {workdir} no longer exists; resuming from {fallback}"),
                err=True,
            )
        elif recorded:
            click.echo(
                clean_line(
                    f"note: the recorded directory {recorded!r} is no absolute path;"
                    f" resuming from {fallback}"
                ),
                err=True,
            )
        workdir = fallback
    config_dir = claude_config_dir(session)
    # A transcript in no config dir (a backup given by path) is opened by its path,
    # which `claude --resume` takes; an ID would be looked for in a config dir.
    target = session["session_id"] if session.get("config_dir") else session["file_path"]
    # Shell-quoted by resume_command ($'…' for a directory holding control characters:
    # one line, nothing for the terminal to obey, the same directory when pasted).
    command = resume_command(target, workdir, config_dir)
    if command is None:  # not a session ID (a team store's): claude cannot resume it
        raise CliError(f"{target!r} is not a session ID that claude --resume takes")
    line = clean(command)
    if dry_run:
        click.echo(line)
        return
    import shutil
    import subprocess

    executable = shutil.which("claude")
    if executable is None:
        raise CliError(
            f"the `claude` executable is not on PATH; install Claude Code or run: {line}"
        )
    environment = dict(os.environ)
    if config_dir:
        environment["CLAUDE_CONFIG_DIR"] = config_dir
    else:  # in ~/.claude (or in no config dir): an inherited one would mislead claude
        environment.pop("CLAUDE_CONFIG_DIR", None)
    sys.stdout.flush()
    completed = subprocess.run(
        [executable, "--resume", target], cwd=workdir, env=environment, check=False
    )
    sys.exit(completed.returncode)
