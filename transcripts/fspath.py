"""A path the user typed, made absolute as the kernel reads it.

``os.path.abspath`` folds ``..`` into the folder before it, while the kernel follows a
symlinked folder first: ``lnk/../cfg``, with ``lnk`` a link to ``/data/x``, is
``/data/cfg`` to every system call but ``./cfg`` to abspath, which then reads (or
writes) another folder than the one named. Paths without ``..`` are only made absolute,
so the spelling of a folder reached through a link (a config dir on another disk) is
kept as the user wrote it.
"""

from __future__ import annotations

import os


def from_cwd(path: str | os.PathLike[str]) -> str:
    """``path`` from the cwd, *not* normalised: ``os.path.abspath`` folds ``..`` into the
    folder before it, while the kernel follows a symlinked folder first, so
    ``out/link/../x`` names ``x`` beside the link's target, not ``out/x``."""
    return os.path.join(os.getcwd(), os.fspath(path))


def absolute(path: str | os.PathLike[str]) -> str:
    """``path`` from the cwd, with ``..`` resolved as the kernel resolves it."""
    joined = from_cwd(path)
    if ".." not in joined.split(os.sep):
        return os.path.normpath(joined)
    directory, name = os.path.split(joined)
    if not os.path.isdir(directory):
        # A folder on the way is missing or is a file: the kernel refuses the path ("not
        # a directory"), where realpath folds ".." by spelling. Left as typed, every
        # later look at it goes through the kernel and finds nothing.
        return joined
    try:
        if name in ("", ".", ".."):
            return os.path.realpath(joined, strict=True)
        return os.path.join(os.path.realpath(directory, strict=True), name)
    except OSError:
        return joined
