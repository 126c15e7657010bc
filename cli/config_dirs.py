"""The command line's check of the config dirs, once per command.

A config dir the user named (``--config-dir``, ``CLAUDE_CONFIG_DIR``,
``SESSIONDEX_CONFIG_DIRS``) that does not exist is a typo, not an empty history: exit 2
before anything is read, instead of an empty list that suggests another scope. The
default ``~/.claude`` missing is normal on a machine without Claude Code: one plain line
says so and the command goes on (empty answers). The library (``sessiondex.Index`` and
the SDK-style functions) checks nothing: the SDK returns ``[]`` for a missing dir, and so
do we there.
"""

from __future__ import annotations

import stat
from collections.abc import Sequence
from pathlib import Path

import click

from sessiondex.cli.errors import InvalidValue, text_problem, warn
from sessiondex.transcripts.config import SOURCE_OPTION, find_config_dirs


def check_config_dirs(explicit: Sequence[str], *, notes: bool = True) -> None:
    """Raise :class:`InvalidValue` for a named config dir that is missing; otherwise one
    stderr line for a missing default dir, or per dir without a ``projects/`` folder
    (unless ``notes`` is False: the team store answers, not this machine's history)."""
    found = find_config_dirs(list(explicit))
    where = f"'{SOURCE_OPTION}'" if found.source == SOURCE_OPTION else found.source
    for root in found.dirs:
        # From the environment or the config file (arguments are checked before)
        problem = text_problem(str(root))
        if problem is not None:
            raise InvalidValue(where, problem)
        if root.is_dir() or found.is_default:
            continue
        problem = "is not a directory" if root.exists() else "does not exist"
        raise InvalidValue(where, f"directory '{root}' {problem}.")
    if not notes:
        return
    if found.is_default and not found.dirs[0].is_dir():
        from sessiondex.cli.output import clean_line

        click.echo(
            clean_line(
                f"note: {found.dirs[0]} does not exist: no Claude Code history to read"
                " (name a config dir with --config-dir or CLAUDE_CONFIG_DIR)"
            ),
            err=True,
        )
        return
    for root in found.dirs:
        try:
            mode = (root / "projects").stat().st_mode
        except FileNotFoundError:
            warn(f"{root} has no projects/ folder; nothing to index there{_meant(root)}")
            continue
        except OSError as exc:  # a dir that cannot be entered: Path.is_dir() raises
            warn(
                f"cannot look into {root} ({exc.strerror}); its transcripts are not read until it can be"
            )
            continue
        if not stat.S_ISDIR(mode):
            # A file (or FIFO) there reads as no history (no_history), whose empty
            # answers then say nothing, counting on this line: it must be said too.
            warn(f"{root}/projects is not a folder; nothing to index there")


def _meant(root: Path) -> str:
    """For a folder inside a config dir named in its place (``~/.claude/projects``, or
    one project's folder in it, where the transcripts are seen): the config dir."""
    for folder in (root, root.parent):
        if folder.name == "projects" and _has_projects(folder.parent):
            return f" (name the config dir: --config-dir {folder.parent})"
    return ""


def _has_projects(root: Path) -> bool:
    try:
        return (root / "projects").is_dir()
    except OSError:
        return True  # there, but not to be entered: the index may still hold its sessions


def no_history(roots: Sequence[Path]) -> bool:
    """True when no config dir has a ``projects/`` folder: an empty answer then says
    nothing about scopes (the line above already said why)."""
    return not any(_has_projects(root) for root in roots)
