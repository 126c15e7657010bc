"""show and export: a session's conversation, read from its transcript."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sessiondex.cli.app import CliError, app
from sessiondex.cli.completion import complete_session
from sessiondex.cli.options import cwd_option
from sessiondex.cli.output import clean_line, conversation_formats, counted
from sessiondex.cli.query_cmds import echo_notes, resolve_or_exit

if TYPE_CHECKING:
    from sessiondex.render.conversation import Conversation

_EXTENSION_FORMATS = {
    ".html": "html",
    ".htm": "html",
    ".json": "json",
    ".md": "md",
    ".markdown": "md",
    ".txt": "md",  # Markdown is plain text
}


def _export_format(output: str) -> str:
    """The format named by ``output``'s extension; none (or ``-``) is Markdown. Any other
    extension is a usage error: Markdown written into ``x.pdf`` would look like success."""
    extension = os.path.splitext(output)[1].lower()
    if not extension or output == "-":
        return "md"
    if extension not in _EXTENSION_FORMATS:
        from sessiondex.cli.errors import InvalidValue

        known = ", ".join(list(_EXTENSION_FORMATS)[:-1]) + " or " + list(_EXTENSION_FORMATS)[-1]
        raise InvalidValue(
            "'-o' / '--output'",
            f"unknown extension {extension!r} (export writes {known};"
            " or pass --format md|html|json)",
        )
    return _EXTENSION_FORMATS[extension]


def _conversation_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = cwd_option(func)
    func = click.option(
        "--include-archived",
        is_flag=True,
        help="Also find archived sessions (sessiondex archive, cleanup --archive), read from the archive.",
    )(func)
    func = click.option(
        "--subagents",
        is_flag=True,
        help="Show each subagent's conversation where its Task/Agent call was made.",
    )(func)
    func = click.option(
        "--tools",
        is_flag=True,
        help="Include tool calls and results (long ones folded, with their size).",
    )(func)
    return func


@contextmanager
def _opened(arg: str, cwd: str | None, fmt: str, include_archived: bool) -> Iterator[Conversation]:
    """Resolve ARG, then read its transcript (the truth; the index only located it), or
    for an archived session the transcript inside its archive (unpacked for as long as
    the ``with`` block renders it)."""
    from sessiondex.render.conversation import archived_conversation
    from sessiondex.transcripts.archive import ArchiveError

    found = resolve_or_exit(
        arg,
        cwd,
        "json" if fmt == "json" else "table",
        include_archived=include_archived,
        if_archived=_archived_hint,
    )
    echo_notes(found.notes)
    with ExitStack() as stack:
        try:
            if found.row.get("archived"):
                conv = stack.enter_context(archived_conversation(found.session))
            else:
                conv = app().index.conversation_of(found)  # the store's: its entries
        except ArchiveError as exc:
            raise CliError(clean_line(str(exc))) from None
        except OSError as exc:
            where = found.session.get("file_path")
            raise CliError(clean_line(f"cannot read {where}: {exc.strerror or exc}")) from None
        yield conv


def _archived_hint(session: dict[str, Any]) -> str:
    return (
        f"session {session['session_id']} is archived ({session['file_path']}): "
        "add --include-archived to read it"
    )


def _warn_problems(conv: Conversation) -> None:
    """JSON output must stay the SDK's shape, so the bad-lines note goes to stderr."""
    from sessiondex.render.conversation import problem_note

    note = problem_note(conv.problems)
    if note:
        click.echo(clean_line(f"note: {note}"), err=True)


@click.command()
@click.argument("arg", shell_complete=complete_session)
@conversation_formats(
    ("text", "md", "json"),
    default="text",
    help="text for the terminal, md for Markdown, json for the SDK's SessionMessage objects.",
)
@click.option(
    "--uuids",
    is_flag=True,
    help="Show each message's short UUID, which fork --up-to takes.",
)
@_conversation_options
def show(
    arg: str,
    fmt: str,
    as_json: bool,
    uuids: bool,
    tools: bool,
    subagents: bool,
    cwd: str | None,
    include_archived: bool,
) -> None:
    """Print a session's conversation from its transcript.

    The messages are the live chain, as the SDK's get_session_messages computes it:
    rewound branches are left out, parallel tool calls put back, compactions marked.
    On a terminal the text is coloured (unless NO_COLOR, or color = "never" in the
    config file) and long output goes through a pager as git log does ($PAGER, else
    the config file's pager, else less with LESS=FRX when LESS is unset; a pager
    that cannot show colours gets plain text). Lines that cannot be read are skipped and counted in a note. An archived
    session (cleanup --archive) is read from its archive with --include-archived.
    --uuids shows each message's short UUID (the JSON has the full ones): fork a
    session up to a message with `sessiondex fork ARG --up-to <short uuid>`.

    \b
    Example:
        sessiondex show "auth refactor"
        sessiondex show 3f2a9c1e --tools --subagents
        sessiondex show 3f2a9c1e --uuids
        sessiondex show 3f2a9c1e --format json | jq '.[].message.content'
    """
    with _opened(arg, cwd, fmt, include_archived) as conv:
        _show(conv, fmt, tools, subagents, uuids)


def _show(conv: Conversation, fmt: str, tools: bool, subagents: bool, uuids: bool) -> None:
    from sessiondex.cli.settings import current, use_color
    from sessiondex.render.conversation import render_stream

    if fmt == "json":
        _warn_problems(conv)
    terminal = sys.stdout.isatty()
    color = fmt == "text" and use_color(terminal)
    # terminal=True whatever stdout is: show's text and Markdown are for people.
    chunks = _reading(
        render_stream(
            conv, fmt, tools=tools, subagents=subagents, color=color, terminal=True, uuids=uuids
        ),
        conv,
    )
    if terminal and fmt != "json":
        head, longer = _screenful(chunks, shutil.get_terminal_size().lines - 1)
        if longer:
            from sessiondex.cli.pager import choose_pager, page

            settings = current()
            pager = choose_pager(settings["pager"] if settings else os.environ.get("PAGER"))
            paged = _chain(head, chunks)
            # Only our own styles are ANSI codes (transcript text is neutralized).
            page(paged if pager.color else map(click.unstyle, paged), pager)
            return
        chunks = iter(head)
    for chunk in _exact(chunks, fmt):
        click.echo(chunk, nl=False, color=color)


def _exact(chunks: Iterable[str], fmt: str) -> Iterable[str]:
    """JSON for a standard output that cannot hold every character, as every other
    command's JSON (``output.dumps``): the same value, written in ASCII, never a "?"."""
    from sessiondex.cli.streams import narrow_encoding

    if fmt != "json" or not narrow_encoding(sys.stdout):
        return chunks
    from sessiondex.render.terminal import json_ascii

    return map(json_ascii, chunks)


def _reading(chunks: Iterable[str], conv: Conversation) -> Iterator[str]:
    """The rendered pieces; a transcript replaced while being read is a one-line error."""
    try:
        yield from chunks
    except OSError as exc:
        raise CliError(
            clean_line(f"cannot read {conv.archive or conv.path}: {exc.strerror or exc}; try again")
        ) from None


def _screenful(chunks: Iterator[str], lines: int) -> tuple[list[str], bool]:
    """The first pieces of the output, read until they hold more than ``lines`` lines
    (then True: page it, like git) or the output ends (False: print it as it is)."""
    head: list[str] = []
    count = 0
    for chunk in chunks:
        head.append(chunk)
        count += chunk.count("\n")
        if count > lines:
            return head, True
    return head, False


def _chain(head: list[str], rest: Iterator[str]) -> Iterator[str]:
    yield from head
    yield from rest


@click.command()
@click.argument("arg", shell_complete=complete_session)
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    type=click.Path(dir_okay=False),
    help="File to write (refused if it exists, unless --force; never inside a config "
    "dir's projects/ or over the index); - for stdout.",
)
@conversation_formats(
    ("md", "html", "json"),
    default=None,
    help="Default: from FILE's extension (.md, .markdown, .txt or none: md; .html or"
    " .htm: html; .json: json); another extension is an error.",
)
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@_conversation_options
def export(
    arg: str,
    output: str,
    fmt: str | None,
    as_json: bool,
    force: bool,
    tools: bool,
    subagents: bool,
    cwd: str | None,
    include_archived: bool,
) -> None:
    """Write a session's conversation to a file: Markdown, one self-contained HTML page
    (metadata at the top, no external assets) or the SDK's JSON messages.

    The file is written to a temporary name and renamed into place, so it is never
    seen half-written. A path inside a config dir's projects/ (Claude Code's
    transcripts) or one of the index's files is refused (exit 2); -o - writes to
    standard output.

    \b
    Example:
        sessiondex export "auth refactor" -o auth.md
        sessiondex export 3f2a9c1e -o session.html --tools --subagents
        sessiondex export 3f2a9c1e -o messages.json
    """
    from sessiondex.cli.options import check_output_path
    from sessiondex.render.conversation import render_stream

    if fmt is None:
        fmt = _export_format(output)
    if output != "-":
        check_output_path(output, "-o")
        if os.path.lexists(output) and not force:
            raise CliError(f"{output} already exists (use --force to overwrite it)")
    with _opened(arg, cwd, fmt, include_archived) as conv:
        if output != "-":
            _check_not_its_source(output, conv)
        _warn_problems(conv)
        # A file keeps the text exact but for ESC, C1 and bidi controls; -o - on a
        # screen is cleaned like show.
        screen = output == "-" and sys.stdout.isatty()
        chunks = _reading(
            render_stream(conv, fmt, tools=tools, subagents=subagents, terminal=screen), conv
        )
        if output == "-":
            for chunk in _exact(chunks, fmt):
                click.echo(chunk, nl=False)
            return
        _write_atomic(output, chunks, force=force)
    count = counted(conv.message_count, "message")
    if subagents and conv.subagents:
        count += f" and {sum(len(sub.thread.shown) for sub in conv.subagents)} of subagents"
    click.echo(clean_line(f"wrote {output} ({count}, {fmt})"), err=True)


def _check_not_its_source(output: str, conv: Conversation) -> None:
    """The session's own config dir is protected like the configured ones: a transcript
    read by path may come from another (``export <dir>/projects/k/<id>.jsonl -o …``), and
    its ``projects/`` is Claude Code's all the same. Its transcript is never the output."""
    from sessiondex.actions.paths import placed
    from sessiondex.cli.options import UnsafeOutputPath, check_output_path

    source = Path(os.path.realpath(conv.path))
    if conv.archive is None:
        also = [Path(conv.session["config_dir"])] if conv.session.get("config_dir") else []
        if source.parent.parent.name == "projects":
            also.append(source.parent.parent.parent)
        check_output_path(output, "-o", also)
    where = placed(output)
    if str(source) in {os.path.realpath(where), where}:
        raise UnsafeOutputPath(f"-o {output} is the session's own transcript; choose another path")


def _write_atomic(target: str, chunks: Iterable[str], *, force: bool) -> None:
    """Temp file in the target's directory, written piece by piece, then renamed into
    place: never a half-written file, and never the whole output in memory.

    Without ``force`` the final step is a hard link, which fails if the name appeared
    meanwhile, so an existing file is never replaced by a race either.
    """
    import tempfile

    from sessiondex.actions.paths import placed

    target = placed(target)  # where the kernel puts it: ".." after a symlinked folder
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        problem = "is not a directory" if os.path.lexists(directory) else "does not exist"
        raise CliError(f"{directory} {problem}")
    try:
        fd, temp = tempfile.mkstemp(
            dir=directory, prefix=f".{os.path.basename(target)}.", suffix=".tmp"
        )
    except OSError as exc:
        raise CliError(f"cannot write in {directory}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                handle.write(chunk.encode("utf-8", "surrogatepass"))
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # mkstemp makes 0600; a plain file follows the umask
        if force:
            os.replace(temp, target)
        else:
            try:
                os.link(temp, target)
            except FileExistsError:
                raise CliError(f"{target} already exists (use --force to overwrite it)") from None
            except OSError:  # no hard links here (some network/FAT mounts)
                if os.path.lexists(target):
                    raise CliError(
                        f"{target} already exists (use --force to overwrite it)"
                    ) from None
                os.replace(temp, target)
    except OSError as exc:
        raise CliError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        if os.path.lexists(temp):
            os.unlink(temp)
