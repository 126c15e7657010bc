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
        return [CompletionItem(value, help=help) for value, help in _candidates(ctx, incomplete)]
    except Exception:  # a Tab must never print a traceback into the command line
        return []


def _candidates(ctx: click.Context, incomplete: str) -> list[tuple[str, str]]:
    from sessiondex.cli.settings import resolve_settings
    from sessiondex.indexer.db import open_db
    from sessiondex.query.complete import complete_sessions

    # The group's callback does not run while completing: read its options here.
    root = ctx.find_root().params
    settings = resolve_settings(
        config_dirs=root.get("config_dirs") or (), db=root.get("db_path") or None
    )
    path = str(settings["db"])
    if not os.path.isfile(path):
        return []
    db = open_db(path, readonly=True)
    try:
        return complete_sessions(db, incomplete, ctx.params.get("cwd"))
    finally:
        db.close()
