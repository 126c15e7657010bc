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
from collections.abc import Mapping
from pathlib import Path


class CwdGone(FileNotFoundError):
    """The process's working directory was deleted and the shell did not say where it
    was: questions asked "from here" have no here."""


def real_cwd() -> str | None:
    """The process's working directory as the kernel has it, None when it was deleted
    under the process: where a relative path is read or written, and where a program
    can be started."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        return None


def process_cwd() -> str:
    """The process's working directory. One that was deleted under the process (a
    removed checkout or worktree) is the path the shell says it was, ``$PWD``: its
    sessions are still in the index, under that directory's project key. Without an
    absolute ``$PWD`` that is gone too, :class:`CwdGone`."""
    here = real_cwd()
    if here is not None:
        return here
    pwd = os.environ.get("PWD")
    if pwd and os.path.isabs(pwd) and not os.path.lexists(pwd):
        # gone as the cwd is; a $PWD that names a directory still there is left over
        # from elsewhere (a parent that changed directory without updating it)
        return pwd
    raise CwdGone("the current directory no longer exists: cd to another, or pass --cwd DIR")


def from_cwd(path: str | os.PathLike[str]) -> str:
    """``path`` from the cwd, *not* normalised: ``os.path.abspath`` folds ``..`` into the
    folder before it, while the kernel follows a symlinked folder first, so
    ``out/link/../x`` names ``x`` beside the link's target, not ``out/x``. An absolute
    path is itself; a relative one from a cwd that was deleted is left relative (the
    kernel then finds nothing, and every later look says so)."""
    text = os.fspath(path)
    if os.path.isabs(text):
        return text
    # not process_cwd(): a path is read (or written) where the kernel would, and a $PWD
    # left over from another directory must not place a relative -o anywhere
    here = real_cwd()
    return text if here is None else os.path.join(here, text)


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


def xdg_dir(
    variable: str,
    fallback: str,
    environ: Mapping[str, str] | None = None,
    home: str | os.PathLike[str] | None = None,
) -> Path:
    """``$variable`` (``XDG_CACHE_HOME``, ``XDG_CONFIG_HOME``, ``XDG_DATA_HOME``) when it
    is an absolute path, else ``<home>/<fallback>`` (``~/.cache`` …). The XDG Base
    Directory spec says a relative value is invalid and is to be ignored: taken as
    given, ``XDG_CACHE_HOME=relcache`` (or ``"~/.cache"``, quoted in a shell's start-up
    file so that no shell expanded it) put the index under whichever directory a
    command ran in, a new empty one in each, and so the config file, the archive dir
    and the daily job's unit. ``home``: ``$HOME`` of ``environ``, else the user's."""
    env = os.environ if environ is None else environ
    value = xdg_value(variable, env)
    if value is not None:
        return Path(value)
    if home is None:
        home = env.get("HOME") or os.path.expanduser("~")
    return Path(home) / fallback


def xdg_value(variable: str, environ: Mapping[str, str] | None = None) -> str | None:
    """``$variable`` when :func:`xdg_dir` takes it (an absolute path), else None: a
    message can then say where a directory came from."""
    value = (os.environ if environ is None else environ).get(variable)
    return value if value and os.path.isabs(value) else None
