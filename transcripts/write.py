"""The only code that changes transcripts: appends and deletes.

Appends follow the rules Claude Code and the SDK rely on, minus the SDK's bug: the file
must already exist (never created), and the record is one line written with one
``write`` on an ``O_APPEND`` descriptor, so a concurrent writer's complete line is never
interleaved with ours.

A file that does not end in ``\\n`` is the hard case: either a writer (Claude Code) is
in the middle of a line, or a writer died mid-line. Writing ``\\n`` + our record into
the first case splits the writer's line in two (both halves unparseable: its record is
lost); writing our record without the ``\\n`` in the second case glues it to the
fragment (ours is lost). So :func:`append_record` waits: a tail that gets its newline
is a line that finished (we append after it); a tail that stays unchanged for
:data:`TAIL_QUIET_SECONDS` (measured from the file's mtime) is a crashed write (we close
it with ``\\n``, keeping the fragment as its own bad line, then append); a tail that
keeps growing without finishing for :data:`TAIL_MAX_WAIT_SECONDS` is refused
("session is being written, try again").

A line that landed can still be undone: Claude Code now and then rewrites a transcript
(a temporary file renamed over it, or truncated and written again in place) from what
it read a moment before. A record appended between that read and that write is in the
orphaned file, or written over. So each append is checked where it landed: the path
still names the file written, and the bytes at that offset are ours. On a file someone
wrote to in the last :data:`TAIL_QUIET_SECONDS` (a live session, where a rewrite may be
under way) the check waits :data:`REWRITE_SETTLE_SECONDS` first. A record found undone
is appended again, to the file the path names now (a copy that kept it gets the same
record twice, which changes nothing: the last tag or title record wins, and both are
ours), at most :data:`APPEND_ATTEMPTS` times, then refused ("try again"). A rewrite
that takes longer than the settle time to land can still undo a record after the
command returned; nothing short of a lock Claude Code honours could prevent that.

A writer that writes one line with several ``write`` calls can also start a line
between our last look and our ``write``: our record would be glued to its first part
(both lines lost). Looking again right before the write does not make that unlikely on
its own: a writer in a burst starts its next line the moment the last one ends, which is
exactly when a wait for a complete line sees one (a tag glued 4 times in 20 beside a
writer of back-to-back split lines). So on a file written to in the last
:data:`TAIL_QUIET_SECONDS`, a complete line is written after only once we saw the file
still for :data:`WRITER_PAUSE_SECONDS`: in a pause between a writer's lines, not the
instant one ended. A file written to without such a pause for
:data:`TAIL_MAX_WAIT_SECONDS` is refused. And each append looks
at where it landed: bytes that arrived between our last look and our ``write`` without
ending their line mean our record was glued on, and it is appended again.

What remains (Claude Code takes no lock, so no lock of ours could exclude it): a writer
silent for the whole pause that starts a line in the microseconds between our last look
and our ``write``, with a ``write`` that is not the whole line, still has that line
broken (ours is appended again); one silent for the whole quiet period that resumes a
line in that instant has it split. Claude Code and the SDK write each line with one
``write``, which ``O_APPEND`` never interleaves with ours.

Besides transcripts, one side file is written: ``<id>/custom-title.json``, Claude Code's
mirror of the session's name (:func:`write_title_sidecar`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from fcntl import LOCK_EX, flock
from pathlib import Path
from typing import Any

import orjson

from sessiondex.transcripts.discover import (
    MAIN,
    TITLE_SIDECAR_NAME,
    TranscriptFile,
    describe_path,
    describe_project_jsonl,
)
from sessiondex.transcripts.tree import remove_stale, walk
from sessiondex.transcripts.windows import last_in_tail


class WriteRefused(Exception):
    """A mutation we will not perform; the message says why, in one line."""


def owned_transcript(path: Path, roots: list[Path]) -> TranscriptFile:
    """The main transcript at ``path`` if it sits inside a configured ``projects/`` dir
    (no symlink on the way), else :class:`WriteRefused`."""
    described = describe_path(path, roots)
    if described is None or described.kind != MAIN:
        raise WriteRefused(f"{path} is not a session transcript inside a configured projects/ dir")
    return described


# A tail without "\n" unchanged this long is a write that died, not one in progress.
TAIL_QUIET_SECONDS = 2.0
# A tail that keeps changing without ever ending its line: give up after this long.
TAIL_MAX_WAIT_SECONDS = 10.0
TAIL_POLL_SECONDS = 0.02
# A complete last line of a file written to in the last TAIL_QUIET_SECONDS is appended
# after only once we saw the file still this long: between a writer's lines, not the
# instant one of them ended (module docstring).
WRITER_PAUSE_SECONDS = 0.01
# After appending to a file written to moments ago: how long a rewrite from an earlier
# read may take to land before the record is checked (module docstring).
REWRITE_SETTLE_SECONDS = 0.25
APPEND_ATTEMPTS = 3

BEING_WRITTEN = "session is being written, try again"

# ``shutil.rmtree`` recurses once per level before Python 3.12 and would stop half way
# with a RecursionError near 1,000; Claude Code's own session folders are 2–3 deep.
MAX_DELETE_DEPTH = 200


def _tail(fd: int) -> tuple[int, bool]:
    """``(size, complete)``: the file's size and whether it is empty or ends in ``\\n``."""
    size = os.fstat(fd).st_size
    return size, size == 0 or os.pread(fd, 1, size - 1) == b"\n"


def last_line_unfinished(path: Path) -> bool:
    """Whether the file at ``path`` ends in bytes without their ``\\n`` (:func:`_tail`):
    a line a writer may still be in. OSError when it cannot be read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    try:
        return not _tail(fd)[1]
    finally:
        os.close(fd)


def _settled_prefix(
    fd: int, path: Path, quiet: float, max_wait: float, poll: float, pause: float
) -> tuple[bytes, int]:
    """Wait until the file's last line is complete and we saw the file still for
    ``pause``, or its last line counts as abandoned (still for ``quiet``); returns the
    bytes to write before our record (``b""`` or ``b"\\n"``) and the size it was decided
    at. Raises :class:`WriteRefused` when neither comes within ``max_wait``."""
    started = time.monotonic()
    seen_size: int | None = None
    quiet_since = paused_since = started
    while True:
        size, complete = _tail(fd)
        now = time.monotonic()
        if size != seen_size:
            if seen_size is None:
                # First look: the file has been still since its last modification (an
                # mtime in the future says nothing: count from now). That is also its
                # pause when nobody wrote for the quiet period; a shorter one is timed
                # here, not read from an mtime the kernel stamps a few ms coarse.
                age = max(0.0, time.time() - os.fstat(fd).st_mtime)
                quiet_since = now - age
                paused_since = quiet_since if age >= quiet else now
            else:
                quiet_since = paused_since = now  # it grew while we watched
            seen_size = size
        if complete and now - paused_since >= pause:
            return b"", size
        if not complete and now - quiet_since >= quiet:
            return b"\n", size  # abandoned mid-line: close it, keep the fragment as a line
        if now - started >= max_wait:
            what = (
                "is written to without a pause"
                if complete
                else "ends in a line that is still being written"
            )
            raise WriteRefused(f"{BEING_WRITTEN} ({path} {what})")
        time.sleep(min(poll, pause - (now - paused_since)) if complete else poll)


def append_record(
    path: Path,
    record: dict[str, Any],
    roots: list[Path],
    *,
    quiet: float | None = None,
    max_wait: float | None = None,
    poll: float | None = None,
    settle: float | None = None,
    pause: float | None = None,
) -> None:
    """Append one record as one line to an existing transcript, never splitting a line
    another process is completing, and see that it stayed (see the module docstring for
    the rules and their limit).

    ``quiet``, ``max_wait``, ``poll``, ``settle`` and ``pause`` default to the module's
    constants (read at call time, so tests can shorten them).
    """
    owned_transcript(path, roots)
    timing = _Timing(
        quiet=TAIL_QUIET_SECONDS if quiet is None else quiet,
        poll=TAIL_POLL_SECONDS if poll is None else poll,
        settle=REWRITE_SETTLE_SECONDS if settle is None else settle,
        pause=WRITER_PAUSE_SECONDS if pause is None else pause,
        deadline=time.monotonic() + (TAIL_MAX_WAIT_SECONDS if max_wait is None else max_wait),
    )
    line = orjson.dumps(record) + b"\n"
    for _ in range(APPEND_ATTEMPTS):
        if _append_once(path, line, timing):
            return
    raise WriteRefused(f"{BEING_WRITTEN} ({path} was rewritten each time the record was appended)")


@dataclass(frozen=True)
class _Timing:
    quiet: float
    poll: float
    settle: float
    pause: float
    deadline: float  # time.monotonic() by which the record must be written


def _append_once(path: Path, line: bytes, timing: _Timing) -> bool:
    """One append of ``line`` to the file ``path`` names now; whether it is there, on a
    line of its own, when checked (:func:`_glued`, :func:`_still_there`)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise WriteRefused(f"{path} no longer exists") from None
    except OSError as exc:
        raise WriteRefused(f"cannot write {path}: {exc.strerror}") from None
    try:
        while True:
            prefix, decided_at = _settled_prefix(
                fd,
                path,
                timing.quiet,
                max(0.0, timing.deadline - time.monotonic()),
                timing.poll,
                timing.pause,
            )
            live = time.time() - os.fstat(fd).st_mtime < timing.quiet  # written moments ago
            # The last look, as close to the write as we can get: the decision holds only
            # for the file as it was then.
            size, complete = _tail(fd)
            if size == decided_at and complete == (prefix == b""):
                break
        data = prefix + line
        written = os.write(fd, data)
        if written != len(data):
            raise WriteRefused(_taken_back(fd, path, written, len(data)))
        # O_APPEND put the bytes at the end as it was then: the offset now ends them
        landed_at = os.lseek(fd, 0, os.SEEK_CUR) - len(data)
        if _glued(fd, decided_at, landed_at):
            return False
        if live:
            time.sleep(timing.settle)
        return _still_there(fd, path, landed_at, data)
    except OSError as exc:
        raise WriteRefused(f"cannot write {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def _taken_back(fd: int, path: Path, written: int, wanted: int) -> str:
    """Cut off the ``written`` bytes of a ``write`` that could not write all
    ``wanted`` (a full disk writes what fits, then fails), and say so in one line. Left
    there, that part of our record is a line without its newline, onto which Claude
    Code's next record (or the SDK's) is glued, both lost. Taken back only while they
    still end the file: bytes another writer appended since belong to a line of theirs
    that a cut would break, and they are left as they are (said so)."""
    end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: the end of what we wrote
    try:
        if os.fstat(fd).st_size == end:
            os.ftruncate(fd, end - written)
            return (
                f"short write to {path} ({written} of {wanted} bytes: a full disk?);"
                " nothing of the record was kept"
            )
    except OSError:
        pass
    return (
        f"short write to {path} ({written} of {wanted} bytes: a full disk?); another"
        " writer appended after them, so they are left in the file"
    )


def _glued(fd: int, decided_at: int, landed_at: int) -> bool:
    """Whether bytes another writer appended between our last look (the file was
    ``decided_at`` long) and our write leave a line unfinished before ours: our record
    (or our closing ``\\n``) then went into the middle of that writer's line."""
    return landed_at != decided_at and os.pread(fd, 1, landed_at - 1) != b"\n"


def _still_there(fd: int, path: Path, landed_at: int, data: bytes) -> bool:
    """Whether ``data`` is still at ``landed_at`` in the file the path names: the file
    ``fd`` wrote (not truncated or written over in place), or a copy renamed over it
    that was read after our write (it holds the record where we put it)."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        raise WriteRefused(f"{path} no longer exists") from None
    ours = os.fstat(fd)
    if (now.st_ino, now.st_dev) == (ours.st_ino, ours.st_dev):
        return os.pread(fd, len(data), landed_at) == data
    try:
        copy = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except OSError:
        return False  # gone or changed again: the next attempt looks at what is there
    try:
        return stat.S_ISREG(os.fstat(copy).st_mode) and os.pread(copy, len(data), landed_at) == data
    finally:
        os.close(copy)


def write_title_sidecar(path: Path, title: str, roots: list[Path]) -> Path:
    """Write the session's name to ``<id>/custom-title.json`` beside the main transcript
    ``path`` (inside a configured ``projects/`` dir), as Claude Code does on every
    rename and fork; returns the sidecar's path. Claude Code's picker reads a name
    from the last 64 KiB's ``custom-title`` record, else from this file, else from the
    first 64 KiB's record (docs/session-fields.md): a sidecar left saying an old
    name brings that name back once the record is further from the end.

    The name written is the transcript's last ``custom-title`` record in its last
    64 KiB (``title`` when there is none there), read under an exclusive ``flock`` on
    the ``<id>/`` folder that every sidecar write of ours takes: two renames at once
    append in one order and could write their sidecars in the other, leaving the
    loser's name beside the winner's record. Now whichever writes last reads after
    both appends. A last record that clears the name (``""``) writes nothing, as
    Claude Code deletes the sidecar then.

    Only the name is written: the sidecar's optional ``by`` and ``at`` are documented as
    optional and not what they hold, and one kept from an earlier rename would describe
    that rename. The ``<id>/`` folder is made (mode 0700) when there is none. The file
    is written under a hidden name in that folder (``O_EXCL``, mode 0600) and renamed
    over the old one, so a reader sees the old sidecar or the new, never half of one; a
    sidecar that is a link is replaced, not followed, and a folder that is a link is
    refused: nothing is written outside the projects dir. :class:`WriteRefused` (one
    line) when it cannot be written; the transcript is not touched either way."""
    tf = owned_transcript(path, roots)
    folder = tf.path.with_suffix("")
    sidecar = folder / TITLE_SIDECAR_NAME
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise WriteRefused(f"cannot make {folder}: {exc.strerror}") from None
    if folder.is_symlink():
        raise WriteRefused(f"{folder} is a link; not writing {TITLE_SIDECAR_NAME} through it")
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    try:
        folder_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | nofollow)
    except OSError as exc:
        raise WriteRefused(f"cannot write {sidecar}: {exc.strerror}") from None
    temporary = f".{TITLE_SIDECAR_NAME}.{uuid.uuid4().hex}.tmp"
    try:
        # Released when folder_fd is closed. A file system without locks (ENOLCK on
        # some NFS mounts) writes as before: the lock only orders two of our renames.
        with contextlib.suppress(OSError):
            flock(folder_fd, LOCK_EX)
        name = _last_name(tf.path, title)
        if name is None:
            return sidecar
        data = orjson.dumps({"customTitle": name})
        fd = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600, dir_fd=folder_fd
        )
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(0, f"short write ({written} of {len(data)} bytes)")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, TITLE_SIDECAR_NAME, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        _sweep_stale_temporaries(folder_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder_fd)
        raise WriteRefused(f"cannot write {sidecar}: {exc.strerror}") from None
    finally:
        os.close(folder_fd)
    return sidecar


def _last_name(transcript: Path, title: str) -> str | None:
    """The name the transcript's last 64 KiB record last (what Claude Code's picker
    reads first), stripped; ``title`` when they hold no ``custom-title`` record or
    cannot be read (the record just appended is there unless more than 64 KiB followed
    it); None when that last record clears the name."""
    try:
        last = last_in_tail(transcript, "custom-title", "customTitle")
    except OSError:
        return title
    if last is None:
        return title
    return last.strip() or None


# A temporary sidecar older than this was left by a process killed between writing and
# renaming it: a live rename holds its file for milliseconds.
STALE_TEMPORARY_SECONDS = 3600


def _sweep_stale_temporaries(folder_fd: int) -> None:
    """Remove the temporary sidecars (``.custom-title.json.<hex>.tmp``, regular files
    only, never through a link) in the session folder ``folder_fd`` that are older than
    :data:`STALE_TEMPORARY_SECONDS`: nothing else ever would, since Claude Code's sweep
    removes the folder only with its transcript. Best effort: a file that cannot be
    removed stays for the next rename."""
    prefix = f".{TITLE_SIDECAR_NAME}."
    remove_stale(
        folder_fd,
        lambda name: name.startswith(prefix) and name.endswith(".tmp"),
        time.time() - STALE_TEMPORARY_SECONDS,
    )


CAP_FOWNER = 3  # linux/capability.h


def _may_act_as_any_owner() -> bool:
    """Whether the kernel may let this process remove another user's entry from a
    sticky directory: root, unless CAP_FOWNER was dropped (a container, ``setpriv``);
    in a user namespace only for owners mapped into it (:func:`_owner_unmapped`)."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_FOWNER & 1)
    except (OSError, ValueError, IndexError):
        pass
    return True  # no /proc (not Linux): root is root


def _id_maps() -> tuple[str, str]:
    """This process's ``uid_map`` and ``gid_map`` ("" where there is no /proc)."""
    maps = []
    for name in ("uid_map", "gid_map"):
        try:
            with open(f"/proc/self/{name}") as fh:
                maps.append(fh.read())
        except OSError:
            maps.append("")
    return maps[0], maps[1]


# How the kernel shows an owner that is not mapped into a user namespace.
OVERFLOW_ID = 65534
WHOLE_RANGE = "0 0 4294967295"


def _owner_unmapped() -> Callable[[os.stat_result], bool]:
    """Whether an inode's owner is outside this process's user namespace, where
    CAP_FOWNER does not reach (a rootless container maps a few IDs; the rest show as
    65534). In the initial namespace every ID is mapped."""
    uid_map, gid_map = _id_maps()
    if all(not m.strip() or m.split() == WHOLE_RANGE.split() for m in (uid_map, gid_map)):
        return lambda st: False
    return lambda st: OVERFLOW_ID in (st.st_uid, st.st_gid)


def _undeletable(transcript: Path, folder: Path) -> str | None:
    """Why the transcript and its folder could not all be removed, as far as can be told
    before removing anything, else None. ``shutil.rmtree`` removes entries until its
    first failure: a folder with one read-only dir inside lost the subagent transcripts
    listed before it, and the delete then failed. The rule is the kernel's: a directory
    entry goes with write and search permission on its directory (and, in a sticky one,
    ownership of the entry or the directory)."""

    def blocked(directory: str, names: list[str]) -> str | None:
        """Why these entries of ``directory`` could not be removed, else None: the
        directory is looked at once, each entry only in a sticky one."""
        if not os.access(directory, os.W_OK | os.X_OK):
            return f"{directory} is not writable"
        st = os.lstat(directory)
        if st.st_mode & stat.S_ISVTX and os.geteuid() != st.st_uid:
            for name in names:
                entry = os.path.join(directory, name)
                owner = os.lstat(entry)
                if owner.st_uid == os.geteuid():
                    continue
                if not owner_override or unmapped(owner):
                    return f"{entry} is another user's, in a sticky directory"
        return None

    def unreadable(exc: OSError) -> None:
        raise exc

    owner_override = _may_act_as_any_owner()
    unmapped = _owner_unmapped()
    try:
        reason = blocked(str(transcript.parent), [transcript.name])
        if reason is None and folder.is_dir() and not folder.is_symlink():
            reason = blocked(str(folder.parent), [folder.name])
            top = str(folder).count(os.sep)
            for current, dirs, files in walk(folder, onerror=unreadable):
                if reason is not None:
                    break
                if current.count(os.sep) - top >= MAX_DELETE_DEPTH:
                    return f"{folder} is nested over {MAX_DELETE_DEPTH} directories deep"
                reason = blocked(current, [*dirs, *files])
    except OSError as exc:
        return f"{exc.filename or folder} cannot be read ({exc.strerror})"
    return reason


def delete_session_files(path: Path, roots: list[Path]) -> list[Path]:
    """Remove a main transcript and its ``<id>/`` folder; returns what was removed.

    Only ``<uuid>.jsonl`` and ``<uuid>/`` inside a configured ``projects/`` dir are ever
    removed; a symlinked folder is unlinked, never followed. The folder goes first: one
    that cannot be removed whole (a subagents dir a restore left read-only) fails the
    delete with the transcript still there. Transcript first, it left a session half
    deleted (its subagents orphaned) that ``restore`` then refused to put back over.
    """
    tf = owned_transcript(path, roots)
    if not os.path.lexists(tf.path):
        raise WriteRefused(f"{tf.path} no longer exists")
    folder = tf.path.with_suffix("")
    problem = _undeletable(tf.path, folder)
    if problem is not None:
        raise WriteRefused(f"cannot delete {tf.path}: {problem}; nothing was removed")
    removed_folder = False
    if folder.is_symlink():
        folder.unlink()
        removed_folder = True
    elif folder.is_dir():
        try:
            shutil.rmtree(folder)  # rmtree never follows symlinks inside the tree
        except OSError as exc:
            raise WriteRefused(
                f"cannot delete all of {folder} ({exc}); {tf.path} is kept"
            ) from None
        removed_folder = True
    _unlink(tf.path)
    return [tf.path, *([folder] if removed_folder else [])]


def _unlink(path: Path) -> None:
    """Remove ``path``; :class:`WriteRefused` (one line) when it is gone or cannot be."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        raise WriteRefused(f"{path} no longer exists") from None
    except OSError as exc:
        raise WriteRefused(f"cannot delete {path}: {exc.strerror}") from None


def delete_project_jsonl(path: Path, roots: list[Path]) -> Path:
    """Remove a project-level ``*.jsonl`` that is no session (a legacy
    ``agent-<id>.jsonl``), as Claude Code's sweep does; returns it. Only a regular file
    named so, directly in a configured ``projects/<key>/`` reached through no symlink,
    is ever removed (a link is refused, not unlinked: it is no file of Claude Code's)."""
    jf = describe_project_jsonl(path, roots)
    if jf is None:
        raise WriteRefused(f"{path} is not a .jsonl file inside a configured projects/ dir")
    _unlink(jf.path)
    return jf.path
