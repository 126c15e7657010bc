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
A path that does not exist yet is resolved as far as it exists. Folders are also
compared where they lie on disk, which no path shows: by device and inode, and on Linux
through the mount table (``/proc/self/mountinfo``) as (device, path within that file
system), so a folder mounted at a second path (a bind mount, a container volume), a
project folder on a volume of its own, and a write through an overlay (it lands in the
upper layer) are all seen for what they are.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sessiondex.transcripts.fspath import from_cwd, real_cwd


@dataclass(frozen=True)
class _Asked:
    """What a write target is checked against, and how a refusal names it."""

    shown: str  # the path as the user gave it
    roots: tuple[Path, ...]
    db_path: str | os.PathLike[str] | None
    label: str
    whole_config_dir: bool  # a folder (an archive dir) that may not be in a config dir


def placed(path: str | os.PathLike[str]) -> str:
    """Where a file renamed into place at ``path`` lands: its folder as the kernel
    resolves it (symlinks, then ``..``), and its own name, which the rename replaces
    whatever it is (a link included)."""
    directory, name = os.path.split(from_cwd(path))
    if name in ("", ".", ".."):
        return os.path.realpath(from_cwd(path))
    return os.path.join(os.path.realpath(directory), name)


def _inside(target: str, folder: str) -> bool:
    return target == folder or target.startswith(folder.rstrip(os.sep) + os.sep)


def _index_file(target: str, db_path: str | os.PathLike[str] | None) -> str | None:
    """The index file ``target`` would overwrite (the database or one of its side files)."""
    if db_path is None:
        return None
    db = os.path.realpath(from_cwd(db_path))
    if target == db:
        return db
    directory, name = os.path.split(db)
    there, candidate = os.path.split(target)
    if there == directory and candidate.startswith((name + "-", name + ".")):
        return target
    return None


def _not_replaceable(path: str, *, file: bool) -> str | None:
    """What ``path`` is when a file renamed into place there would replace something
    that is no file of the user's: a device, FIFO or socket (as root, ``export -o
    /dev/null --force`` replaced /dev/null itself), or, for a file, a symbolic link
    (``/dev/stdout`` is one: redirected to a file, it links to a regular file, and the
    rename replaced the link). A folder may be a link (an archive dir on another disk).
    None for a file, a folder, or nothing there yet."""
    import stat

    modes = []
    for look in (os.lstat, os.stat):
        try:
            modes.append(look(path).st_mode)
        except OSError:
            pass
    for mode in modes:
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return "a device"
        if stat.S_ISFIFO(mode):
            return "a FIFO"
        if stat.S_ISSOCK(mode):
            return "a socket"
    if file and modes and stat.S_ISLNK(modes[0]):
        return f"a symbolic link (to {os.readlink(path)})"
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
    if not os.path.isabs(os.fspath(path)) and real_cwd() is None:
        # nothing relative can be placed from a deleted cwd
        return (
            f"{label} {os.fspath(path)} is relative and the current directory no"
            " longer exists: give an absolute path"
        )
    where = placed(path)
    odd = _not_replaceable(where, file=not whole_config_dir)
    if odd is not None and whole_config_dir:
        return f"{label} {os.fspath(path)} is {odd}, not a folder"
    if odd is not None:
        return (
            f"{label} {os.fspath(path)} is {odd}, not a file: a file written into place"
            " would replace it (give a file's path, or - for standard output)"
        )
    # Where the bytes land: through a link to its target, but a write that replaces the
    # name (a rename into place) puts a new file where the link was. Both must be safe.
    asked = _Asked(os.fspath(path), tuple(roots), db_path, label, whole_config_dir)
    for target in sorted({os.path.realpath(where), where}):
        problem = _target_problem(target, asked)
        if problem:
            return problem
    return _same_folder_problem(where, asked)


def _identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _same_folder_problem(where: str, asked: _Asked) -> str | None:
    """The rules again, by identity (device and inode) instead of by path: a folder
    mounted at a second path (a bind mount, a container volume) has no path in common
    with ``projects/`` for realpath to see, and ``export -o`` through it replaced a
    transcript."""
    shown, roots, db_path, label = asked.shown, asked.roots, asked.db_path, asked.label
    whole_config_dir = asked.whole_config_dir
    ancestors: set[tuple[int, int]] = set()
    folder = os.path.dirname(where)
    while True:
        found = _identity(folder)
        if found is not None:
            ancestors.add(found)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    own = _identity(where)
    if whole_config_dir and own is not None:
        ancestors.add(own)  # the folder itself may be the config dir
    for root in roots:
        guarded = Path(root) if whole_config_dir else Path(root) / "projects"
        if _identity(guarded) in ancestors:
            return (
                f"{label} {shown} is inside {guarded} (mounted at another path too); "
                "choose a path outside it"
            )
    problem = _mounted_problem(where, asked)
    if problem:
        return problem
    if db_path is not None and not whole_config_dir:
        db = os.path.realpath(from_cwd(db_path))
        folder_id = _identity(os.path.dirname(where))
        same_file = own is not None and own == _identity(db)
        beside = folder_id is not None and folder_id == _identity(os.path.dirname(db))
        base = os.path.basename(db)
        side = os.path.basename(where).startswith((base + "-", base + "."))
        if same_file or (beside and (os.path.basename(where) == base or side)):
            return f"{label} {shown} is the index's own file {db}; choose another path"
    return None


@dataclass(frozen=True)
class _Mount:
    point: str  # where it is mounted
    root: str  # the folder of its file system mounted there
    device: str  # major:minor
    upper: str  # an overlay's upper layer, where every write through it lands; else ""
    lower: tuple[str, ...] = ()  # an overlay's lower layers, what it shows of them


def _mounts() -> list[_Mount]:
    """Every mount of this process (Linux's ``/proc/self/mountinfo``; none elsewhere)."""
    import re

    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []

    def unescape(field: str) -> str:  # spaces, tabs, newlines and \ are \ooo there
        return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)

    out = []
    for line in lines:
        fields = line.split(" ")
        if len(fields) < 5:
            continue
        upper = ""
        lower: tuple[str, ...] = ()
        if " - overlay " in line:
            options = line.split(" - ", 1)[1].split(" ")[-1]
            # overlay's own escape: a comma in a layer's path is "\,", a colon "\:"
            for option in re.split(r"(?<!\\),", options):
                if option.startswith("upperdir="):
                    upper = re.sub(r"\\(.)", r"\1", unescape(option[len("upperdir=") :]))
                elif option.startswith("lowerdir="):
                    layers = re.split(r"(?<!\\):", unescape(option[len("lowerdir=") :]))
                    lower = tuple(re.sub(r"\\(.)", r"\1", layer) for layer in layers if layer)
        out.append(_Mount(unescape(fields[4]), unescape(fields[3]), fields[2], upper, lower))
    return out


def _locate(path: str, mounts: list[_Mount], depth: int = 0) -> tuple[str, str] | None:
    """``(device, path within that file system)`` where a write to ``path`` lands: the
    same folder reached through two mount points (a bind mount of ``projects/<key>``, a
    container volume) has one such location, and a write through an overlay lands in
    its upper layer. The mount is the one the nearest existing folder's own device says
    it is on, the deepest such mount point above it: a mount covered by a later one on
    a folder above it is listed still, but no path reaches it."""
    existing, rest = os.path.realpath(path), ""
    while not os.path.isdir(existing):
        parent = os.path.dirname(existing)
        if parent == existing:
            return None
        existing, rest = parent, os.path.join(os.path.basename(existing), rest)
    try:
        st = os.stat(existing)
    except OSError:
        return None
    device = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    candidates = [m for m in mounts if m.device == device] or mounts
    best: _Mount | None = None
    for mount in candidates:  # the last of two on one point is the one on top
        if _inside(existing, mount.point) and (best is None or len(mount.point) >= len(best.point)):
            best = mount
    if best is None:
        return None
    inner = existing[len(best.point) :].lstrip(os.sep) if best.point != os.sep else existing
    inner = os.path.join(inner.lstrip(os.sep), rest) if rest else inner.lstrip(os.sep)
    if best.upper and not os.path.isabs(best.upper):
        # mount(8) took it from the cwd of whoever mounted it, which no one can know now
        return UNKNOWN_PLACE
    if best.upper and depth < 8:
        return _locate(os.path.join(best.upper, inner), mounts, depth + 1)
    return best.device, os.path.normpath(os.path.join(best.root, inner))


# Where a write through an overlay with a relative upper layer lands: not knowable.
UNKNOWN_PLACE = ("?", "?")


def _regions(folder: Path, mounts: list[_Mount]) -> list[tuple[str, str]]:
    """Where ``folder``'s tree lies on disk: the folder itself, and every file system
    mounted inside it (a project folder on a volume of its own, or an overlay, whose
    writes land in its upper layer), each as ``(device, path within that file
    system)``."""
    located = _locate(str(folder), mounts)
    if located is None:
        return []
    out = [located]
    real = os.path.realpath(folder)
    for mount in mounts:
        if mount.point != real and _inside(mount.point, real):
            out.append((mount.device, mount.root))
            # An overlay inside it shows its layers there: writing into one, upper or
            # lower (a transcript not copied up lives only there), writes into the tree.
            for layer in (mount.upper, *mount.lower):
                if layer and os.path.isabs(layer):
                    located_layer = _locate(layer, mounts)
                    if located_layer is not None:
                        out.append(located_layer)
    return out


def _mounted_problem(where: str, asked: _Asked) -> str | None:
    """The folder rules by location on disk: a bind mount of one project folder (or of
    a session's folder) has neither a path nor an ancestor in common with ``projects/``,
    and ``export -o`` and ``archive --to`` through one wrote inside it."""
    shown, roots, label, whole_config_dir = (
        asked.shown,
        asked.roots,
        asked.label,
        asked.whole_config_dir,
    )
    mounts = _mounts()
    if not mounts:
        return None
    located = _locate(where, mounts)
    if located is None:
        return None
    if located == UNKNOWN_PLACE:
        return (
            f"{label} {shown} is under an overlay mount whose upper layer is a relative path:"
            " where a write lands cannot be told; choose another path"
        )
    device, place = located
    for root in roots:
        for guarded in (Path(root) / "projects", *([Path(root)] if whole_config_dir else [])):
            if not os.path.isdir(guarded):
                continue
            if any(dev == device and _inside(place, at) for dev, at in _regions(guarded, mounts)):
                return (
                    f"{label} {shown} is inside {guarded} (mounted at another path too); "
                    "choose a path outside it"
                )
    if asked.db_path is not None and not whole_config_dir:
        db = os.path.realpath(from_cwd(asked.db_path))
        index = _locate(db, mounts)
        if index is not None and index[0] == device:
            folder, name = os.path.split(place)
            base = os.path.basename(index[1])
            if place == index[1] or (
                folder == os.path.dirname(index[1]) and name.startswith((base + "-", base + "."))
            ):
                return f"{label} {shown} is the index's own file {db}; choose another path"
    return None


def _target_problem(target: str, asked: _Asked) -> str | None:
    shown, roots, db_path, label = asked.shown, asked.roots, asked.db_path, asked.label
    whole_config_dir = asked.whole_config_dir
    for root in roots:
        config = os.path.realpath(from_cwd(root))
        if whole_config_dir and _inside(target, config):
            return (
                f"{label} {shown} is inside the Claude config dir {config}; "
                "choose a path outside it"
            )
        projects = os.path.realpath(from_cwd(Path(root) / "projects"))
        if _inside(target, projects):
            return (
                f"{label} {shown} is inside {projects}, Claude Code's transcript "
                "folder; choose a path outside projects/"
            )
    index_file = _index_file(target, db_path)
    if index_file is not None:
        return f"{label} {shown} is the index's own file {index_file}; choose another path"
    return None
