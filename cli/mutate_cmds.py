"""Writing commands: rename, tag, untag, fork, delete.

Each resolves ARG like ``resolve`` (paths only inside a configured ``projects/`` dir; an
ambiguous ARG prints the candidates and exits 3 before anything is written), then
calls ``sessiondex.actions.mutations``, which appends the record Claude Code and the SDK read and
updates the index before returning.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from sessiondex.cli.app import CliError, app
from sessiondex.cli.completion import complete_session
from sessiondex.cli.options import cwd_option
from sessiondex.cli.output import clean_line, format_options

if TYPE_CHECKING:
    from sessiondex.actions.mutations import MutationResult
    from sessiondex.query.resolve import Resolution


def _stdin_is_terminal() -> bool:
    """Whether a person can answer a question (tests replace this)."""
    return sys.stdin.isatty()


def confirm_delete(question: str, yes: bool) -> None:
    """Ask ``question`` on the terminal unless ``yes``; refuse without a terminal to ask
    on (a script must say --yes), and stop with nothing deleted on a no."""
    if yes:
        return
    if not _stdin_is_terminal():
        raise CliError("refusing to delete without confirmation: pass --yes")
    if not click.confirm(clean_line(question), default=False, err=True):
        raise CliError("aborted: nothing deleted")


def _target(arg: str, cwd: str | None, fmt: str) -> Resolution:
    from sessiondex.cli.query_cmds import resolve_or_exit

    return resolve_or_exit(arg, cwd, fmt, for_write=True, if_archived=_archived_refusal)


def _archived_refusal(session: dict[str, Any]) -> str:
    """What a write says of a session only its archive holds (Claude Code's sweep
    deleted the transcript): not "No session matches", which `list --include-archived`
    and `show` contradict, but where it is and how to get it back."""
    return (
        f"session {session['session_id']} is archived in {session['file_path']}; "
        f"run `sessiondex restore {session['session_id']}` first to change it"
    )


def _run(action: Callable[[], MutationResult], notes: Sequence[str] = ()) -> MutationResult:
    """Call a mutation; its expected failures become one ``Error:`` line, exit 1. The
    resolution's ``notes`` (the session is another directory's, and how to resume it)
    follow a mutation that went through, never one that failed, and so do its
    ``warnings`` (what of it was not done: the title sidecar), each one
    ``warning:`` line; the exit status stays 0.

    A change written that the index could not follow (a full disk) is exit 1 too, its
    one line saying what was done and that the index catches up: the command's promise
    (the next ``--no-refresh`` read shows the change) is not kept, and a script must
    stop there; the words "renamed …" tell a person not to run it again."""
    from sessiondex.actions.mutations import IndexNotUpdated, MutationError
    from sessiondex.cli.errors import warn
    from sessiondex.cli.query_cmds import echo_notes

    try:
        result = action()
    except IndexNotUpdated as exc:
        for text in exc.result.warnings:
            warn(text)
        raise CliError(clean_line(str(exc))) from None
    except MutationError as exc:
        raise CliError(clean_line(str(exc))) from None
    for text in result.warnings:
        warn(text)
    echo_notes(list(notes))
    return result


def _report(result: MutationResult, fmt: str, text: str, unchanged: str = "") -> None:
    """``text`` for people; the session object after the change for scripts. When
    nothing was written, ``unchanged`` says why (on stderr for scripts)."""
    if not result.written:
        text = f"{result.session_id} {unchanged}; nothing written"
        if fmt != "table":
            click.echo(text, err=True)
    if fmt == "table":
        click.echo(clean_line(text))
        return
    from sessiondex.cli.output import emit

    emit([result.session] if result.session else [], fmt)


def _checked(check: Callable[[str], object], value: str) -> str:
    from sessiondex.actions.mutations import MutationError

    try:
        return str(check(value))
    except MutationError as exc:
        raise CliError(clean_line(str(exc))) from None


@click.command()
@click.argument("arg", shell_complete=complete_session)
@click.argument("name")
@cwd_option
@format_options
def rename(arg: str, name: str, cwd: str | None, fmt: str, as_json: bool) -> None:
    """Rename a session (the name `claude --resume NAME` and the picker use).

    Appends the custom-title record Claude Code writes for /rename. Invisible
    characters are removed and a name with nothing visible left is refused (as a tag
    is); renaming to the current name writes nothing.

    \b
    Example:
        sessiondex rename 3f2a9c1e "Auth refactor"
        sessiondex rename "old name" "new name" --cwd ~/src/shop
    """
    from sessiondex.actions.mutations import rename as do_rename
    from sessiondex.actions.mutations import user_name

    title = _checked(user_name, name)
    found = _target(arg, cwd, fmt)
    result = _run(
        lambda: do_rename(app().db(), found, title, roots=app().roots, if_changed=True),
        found.notes,
    )
    _report(result, fmt, f"Renamed {result.session_id} to {title!r}", f"is already named {title!r}")


@click.command()
@click.argument("arg", shell_complete=complete_session)
@click.argument("tag")
@cwd_option
@format_options
def tag(arg: str, tag: str, cwd: str | None, fmt: str, as_json: bool) -> None:
    """Tag a session (shown as #TAG in the picker; one tag per session).

    The tag is cleaned the way the SDK cleans it (NFKC; invisible and private-use
    characters removed; surrounding spaces stripped), and a leading # is dropped (the
    picker adds its own). Tagging with the tag the session already has writes nothing.
    The tag __hidden hides the session from list, search, from-pr and pick (a soft
    delete; --include-hidden shows it, untag brings it back).

    \b
    Example:
        sessiondex tag 3f2a9c1e review
        sessiondex tag "Auth refactor" shipped
        sessiondex tag 3f2a9c1e __hidden
    """
    from sessiondex.actions.mutations import tag as do_tag
    from sessiondex.actions.mutations import user_tag

    clean = _checked(user_tag, tag)
    found = _target(arg, cwd, fmt)
    result = _run(
        lambda: do_tag(app().db(), found, clean, roots=app().roots, if_changed=True),
        found.notes,
    )
    _report(result, fmt, f"Tagged {result.session_id} #{clean}", f"is already tagged #{clean}")
    from sessiondex.query.sessions import HIDDEN_TAG

    if clean == HIDDEN_TAG and fmt == "table":
        click.echo(
            "Hidden from list, search and pick (--include-hidden shows it; untag brings it back)."
        )


@click.command()
@click.argument("arg", shell_complete=complete_session)
@cwd_option
@format_options
def untag(arg: str, cwd: str | None, fmt: str, as_json: bool) -> None:
    """Clear a session's tag (nothing is written when it has none).

    \b
    Example:
        sessiondex untag 3f2a9c1e
    """
    from sessiondex.actions.mutations import untag as do_untag

    found = _target(arg, cwd, fmt)
    result = _run(
        lambda: do_untag(app().db(), found, roots=app().roots, if_changed=True), found.notes
    )
    _report(result, fmt, f"Cleared the tag of {result.session_id}", "is already untagged")


@click.command()
@click.argument("arg", shell_complete=complete_session)
@click.option(
    "--up-to",
    "up_to",
    metavar="MESSAGE_UUID",
    default=None,
    help="Copy the conversation only up to and including this message: its UUID or a "
    "unique prefix (show --uuids prints them).",
)
@click.option(
    "--title", default=None, metavar="T", help="Name of the fork (default: '<source name> (fork)')."
)
@cwd_option
@format_options
def fork(
    arg: str, up_to: str | None, title: str | None, cwd: str | None, fmt: str, as_json: bool
) -> None:
    """Copy a session into a new one and print the new session's ID.

    The copy gets new IDs, keeps the original timestamps, names its origin in each
    record (forkedFrom) and leaves out subagent (sidechain) entries. Resume it with
    `claude --resume <new id>`.

    \b
    Example:
        sessiondex fork 3f2a9c1e
        sessiondex fork "Auth refactor" --up-to 8d0e5a7b-1c2d-4e3f-9a8b-7c6d5e4f3a2b --title "Auth: plan B"
        sessiondex show 3f2a9c1e --uuids; sessiondex fork 3f2a9c1e --up-to 8d0e5a7b
    """
    from sessiondex.actions.mutations import fork as do_fork
    from sessiondex.actions.mutations import user_name

    if title is not None:
        title = _checked(lambda value: user_name(value, "the fork's title"), title)
    found = _target(arg, cwd, fmt)
    result = _run(lambda: do_fork(app().db(), found, roots=app().roots, up_to=up_to, title=title))
    _report(result, fmt, result.session_id)
    how = (result.session or {}).get("resume_command")
    if found.other_directory and how:  # the fork is as far away as its source
        click.echo(
            clean_line(f"The fork is in another directory. To resume it, run: {how}"), err=True
        )


@click.command()
@click.argument("arg", shell_complete=complete_session)
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@cwd_option
def delete(arg: str, yes: bool, cwd: str | None) -> None:
    """Delete a session's transcript and its subagent folder, for good.

    Asks first unless --yes; without a terminal to ask on, --yes is required.
    (A softer alternative: `sessiondex tag ARG __hidden` hides it from list,
    search, from-pr and pick; `sessiondex untag ARG` brings it back.)

    \b
    Example:
        sessiondex delete 3f2a9c1e
        sessiondex delete "scratch session" --yes
    """
    from sessiondex.actions.mutations import delete as do_delete

    found = _target(arg, cwd, "table")
    session = found.session
    confirm_delete(
        f"Delete session {session['title']!r} ({session['session_id']}), "
        f"{session['file_path']} and its subagents?",
        yes,
    )
    result = _run(lambda: do_delete(app().db(), found, roots=app().roots))
    for path in result.removed:
        click.echo(clean_line(f"Deleted {path}"))
