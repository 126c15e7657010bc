"""Walking a directory tree without recursion, and sweeping a folder's leftovers.

``os.walk`` on Python 3.10 and 3.11 recurses once per level: a session folder nested
about a thousand directories deep (a runaway tool, a hostile archive) raised
``RecursionError`` out of ``cleanup``'s dry run, ``archive`` and the watcher. Python
3.12 made ``os.walk`` iterative; this is that walk for the versions we support.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator

__all__ = ["remove_stale", "walk"]


def walk(
    top: str | os.PathLike[str], onerror: Callable[[OSError], None] | None = None
) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top, followlinks=False)``, top-down, with an explicit stack.

    The same contract: ``(dirpath, dirnames, filenames)`` in the same order; a symlink
    to a directory is listed in ``dirnames`` but never entered; the caller may prune or
    reorder ``dirnames`` in place; a directory that cannot be listed is passed to
    ``onerror`` and skipped.
    """
    stack = [os.fspath(top)]
    while stack:
        current = stack.pop()
        dirs: list[str] = []
        files: list[str] = []
        enterable: set[str] = set()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if not is_dir:
                        files.append(entry.name)
                        continue
                    dirs.append(entry.name)
                    try:
                        if not entry.is_symlink():
                            enterable.add(entry.name)
                    except OSError:
                        pass
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            continue
        yield current, dirs, files
        stack.extend(os.path.join(current, d) for d in reversed(dirs) if d in enterable)


def remove_stale(folder: str | int, ours: Callable[[str], bool], cutoff: float) -> list[str]:
    """Remove the regular files of ``folder`` (a path, or an open directory's fd) whose
    name ``ours`` accepts and that were last modified at ``cutoff`` or before; returns
    their paths (their names for an fd). For temporary files a killed process left
    (an archive's, a title sidecar's): a link is never followed or removed, and what
    cannot be listed or removed (vanished, a permission) is skipped."""
    removed: list[str] = []
    try:
        with os.scandir(folder) as entries:
            listed = list(entries)
    except OSError:
        return removed
    for entry in listed:
        if not ours(entry.name):
            continue
        try:
            found = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(found.st_mode) and found.st_mtime <= cutoff:
                if isinstance(folder, int):
                    os.unlink(entry.name, dir_fd=folder)
                else:
                    os.unlink(entry.path)
                removed.append(entry.path)
        except OSError:
            continue
    return removed
