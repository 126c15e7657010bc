"""Where a file the user names may be written: never over the truth, never over the index.

``export -o FILE --force`` and ``cleanup --archive DIR`` write where they are told. Told
the wrong place they would overwrite a session's own transcript, plant a file named like
a transcript that Claude Code and every reader then take for a session, or replace the
index database under a running watcher. One rule, used by every command that writes a
path the user gives:

* nothing inside any configured config dir's ``projects/`` (Claude Code owns that tree,
  and its retention sweep deletes from it); with ``whole_config_dir``, nothing inside
  the config dir at all (the archive: Claude Code's housekeeping prunes many of its
  folders, and a copy kept there is lost with the config dir);
* not the index database, nor a file that belongs to it: ``<db>-wal``, ``<db>-shm``,
  ``<db>-journal``, ``<db>.<kind>.lock``, ``<db>.corrupt-…`` — any name in the
  database's directory that starts with the database's name and ``-`` or ``.``.

Paths are compared after resolving ``..`` and every symlink on the way (the last
component too), so a link pointing into ``projects/`` is refused like the real path;
and with the last component kept as it is, so a link *inside* ``projects/`` pointing
out is refused too (a write renamed into place replaces the link with a file there).
A path that does not exist yet is resolved as far as it exists.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path


def _inside(target: str, folder: str) -> bool:
    return target == folder or target.startswith(folder.rstrip(os.sep) + os.sep)


def _index_file(target: str, db_path: str | os.PathLike[str] | None) -> str | None:
    """The index file ``target`` would overwrite (the database or one of its side files)."""
    if db_path is None:
        return None
    db = os.path.realpath(os.path.abspath(os.fspath(db_path)))
    if target == db:
        return db
    directory, name = os.path.split(db)
    there, candidate = os.path.split(target)
    if there == directory and candidate.startswith((name + "-", name + ".")):
        return target
    return None


def _special_file(path: str) -> str | None:
    """What ``path`` is when it, or what it links to, is a device, FIFO or socket
    (``/dev/null``, ``/dev/stdout``): our writes rename a new file into place, which as
    root replaced ``/dev/null`` itself. None for a file, a directory or nothing."""
    import stat

    for look in (os.lstat, os.stat):
        try:
            mode = look(path).st_mode
        except OSError:
            continue
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return "a device"
        if stat.S_ISFIFO(mode):
            return "a FIFO"
        if stat.S_ISSOCK(mode):
            return "a socket"
    return None


def write_target_problem(
    path: str | os.PathLike[str],
    roots: Iterable[Path],
    db_path: str | os.PathLike[str] | None,
    *,
    label: str = "output",
    whole_config_dir: bool = False,
) -> str | None:
    """Why ``path`` must not be written (one line, naming ``label``), else None.

    ``roots`` are the configured config dirs; ``db_path`` is the index database (None
    when there is no database file).
    """
    given = os.path.abspath(os.fspath(path))
    special = _special_file(given)
    if special is not None:
        return (
            f"{label} {os.fspath(path)} is {special}, not a file: a file written into place"
            " would replace it (give a file path, or - for standard output)"
        )
    # Where the bytes land: through a link to its target, but a write that replaces the
    # name (a rename into place) puts a new file where the link was. Both must be safe.
    targets = {
        os.path.realpath(given),
        os.path.join(os.path.realpath(os.path.dirname(given)), os.path.basename(given)),
    }
    for target in sorted(targets):
        problem = _target_problem(target, os.fspath(path), roots, db_path, label, whole_config_dir)
        if problem:
            return problem
    return None


def _target_problem(
    target: str,
    shown: str,
    roots: Iterable[Path],
    db_path: str | os.PathLike[str] | None,
    label: str,
    whole_config_dir: bool,
) -> str | None:
    for root in roots:
        config = os.path.realpath(os.path.abspath(root))
        if whole_config_dir and _inside(target, config):
            return (
                f"{label} {shown} is inside the Claude config dir {config}; "
                "choose a path outside it"
            )
        projects = os.path.realpath(os.path.abspath(Path(root) / "projects"))
        if _inside(target, projects):
            return (
                f"{label} {shown} is inside {projects}, Claude Code's transcript "
                "folder; choose a path outside projects/"
            )
    index_file = _index_file(target, db_path)
    if index_file is not None:
        return f"{label} {shown} is the index's own file {index_file}; choose another path"
    return None
