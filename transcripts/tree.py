"""Walking a directory tree without recursion.

``os.walk`` on Python 3.10 and 3.11 recurses once per level: a session folder nested
about a thousand directories deep (a runaway tool, a hostile archive) raised
``RecursionError`` out of ``cleanup``'s dry run, ``archive`` and the watcher. Python
3.12 made ``os.walk`` iterative; this is that walk for the versions we support.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

__all__ = ["walk"]


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
