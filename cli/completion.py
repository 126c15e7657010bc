"""Shell completion of session arguments (``ARG`` of resolve, resume, show, …).

click completes commands and options itself (``_SESSIONDEX_COMPLETE``, see
``sessiondex completion``); this adds session IDs and names. It runs on every Tab, so it
answers from the index as it is: opened read-only, no refresh, no transcript read, and
nothing at all (rather than an error) when there is no index yet or it cannot be read.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


def complete_session(ctx: click.Context, param: Any, incomplete: str) -> list[CompletionItem]:
    """click's ``shell_complete`` for a session argument (imported by every command
    with an ARG: what it needs is imported when it runs)."""
    from click.shell_completion import CompletionItem

    try:
        shell = os.environ.get("_SESSIONDEX_COMPLETE", "")
        return [
            CompletionItem(for_shell(value, shell), help=one_line(help))
            for value, help in _candidates(ctx, incomplete)
        ]
    except Exception:  # a Tab must never print a traceback into the command line
        return []


def one_line(text: str | None) -> str | None:
    """The text as a table cell shows it (:func:`~sessiondex.render.terminal.neutralize`,
    one line): click's completion protocols are line- and tab-separated, so a newline
    or a tab is a space (a name with a newline, which ``rename`` takes, would add a fake
    candidate or shift the others), and an escape or a bidi override is made visible
    (``^[``, ``<U+202E>``) rather than sent to the terminal, where an override reorders
    the command line the user reads. A name so shown resolves as typed."""
    if text is None:
        return None
    from sessiondex.render.terminal import neutralize

    return neutralize(text, single_line=True)


def for_shell(value: str, shell: str) -> str:
    """A completion value that the shell inserts as one argument and never runs.

    A name comes from a transcript (an AI title, a rename by any tool). bash puts
    click's candidates into the command line as they are, so ``$(…)`` or a backquote
    in a name would run when the user presses Enter, and a name with a space would be
    two arguments: for bash the value is shell-quoted. zsh's ``compadd`` and fish quote
    what they insert themselves, so they get the name as it is."""
    import shlex

    value = one_line(value) or ""
    return shlex.quote(value) if shell.startswith("bash") else value


def _candidates(ctx: click.Context, incomplete: str) -> list[tuple[str, str]]:
    from sessiondex.cli.settings import resolve_settings
    from sessiondex.indexer.db import open_if_current
    from sessiondex.query.complete import complete_sessions

    # The group's callback does not run while completing: read its options here.
    root = ctx.find_root().params
    settings = resolve_settings(
        config_dirs=root.get("config_dirs") or (), db=root.get("db_path") or None
    )
    db = open_if_current(str(settings["db"]))
    if db is None:  # none yet, damaged or of an older format: nothing to offer
        return []
    from sessiondex.transcripts.config import config_dirs

    roots = config_dirs(list(settings["config_dirs"]) or None)  # as Index resolves them
    try:
        return complete_sessions(db, incomplete, ctx.params.get("cwd"), roots)
    finally:
        db.close()
