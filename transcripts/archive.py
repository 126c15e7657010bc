"""One compressed archive per session, verified before anything is deleted.

Format: a gzip-compressed PAX tar, ``<DIR>/<project_key>/<session_id>.tar.gz``, whose
members are laid out as in a config dir:

* ``projects/<key>/<session_id>.jsonl`` first (so an indexer reads it without seeking
  past the folder), then
* ``projects/<key>/<session_id>/…`` (subagents, tool results; symlinks stored as links,
  never followed).

Why tar.gz and not ``.jsonl.gz`` plus a folder tar: the session stays one file (moved,
copied or deleted as a unit); ``tar -xzf X.tar.gz -C ~/.claude`` restores it in place
with no sessiondex installed; gzip and tar are in the standard library and on every
machine; PAX keeps sub-second mtimes (Claude Code's retention keys on mtime). gzip
has no random access, which costs nothing here: the transcript is read whole anyway.

An archive is written to a temporary name, read back in full (gzip CRC, then every
member compared byte for byte with the file on disk), and only then given its final
name, never over an existing archive: a later version of the same session is
``<id>-2.tar.gz``, ``<id>-3.tar.gz``… :func:`restore_session_archive` puts a session back
into a config dir, byte for byte and with its mtimes, never over an existing file. Nothing here deletes anything but our own
temporary files: a run killed mid-archive leaves its ``.<id>.<random>.tmp`` behind, and
:func:`remove_stale_temps` (called by the next ``cleanup --archive``) removes those.
"""

from __future__ import annotations

import fcntl
import functools
import gzip
import os
import re
import shutil
import stat
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from sessiondex.transcripts.discover import ARCHIVE_SUFFIX as ARCHIVE_SUFFIX
from sessiondex.transcripts.discover import (
    MAIN,
    SUBAGENT,
    ProjectJsonl,
    TranscriptFile,
    open_regular,
)
from sessiondex.transcripts.fspath import xdg_dir
from sessiondex.transcripts.keys import is_session_id
from sessiondex.transcripts.tree import remove_stale, walk

CHUNK = 1 << 20
# Decompressed transcripts up to this size stay in memory while indexed; larger spill.
SPOOL_BYTES = 32 << 20
# The names write_session_archive gives its temporary files: "." + session id + "." +
# tempfile's 8 random characters + ".tmp". Nothing else is ever removed as a leftover.
_TEMP_NAME = re.compile(
    r"\.([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})"
    r"\.[a-z0-9_]{8}\.tmp"
)
# The temporary names of copies of files that are no sessions (write_file_archive):
# "." + the file's name (a *.jsonl, no "/") + "." + 8 random characters + ".tmp".
_FILE_TEMP_NAME = re.compile(r"\.[^/]+\.jsonl\.[a-z0-9_]{8}\.tmp")
# A temporary file untouched this long is a leftover; a younger one may belong to a run
# that is archiving right now (writing keeps its mtime fresh; verifying a large archive
# takes seconds to minutes).
STALE_TEMP_SECONDS = 600


def default_archive_dir(environ: dict[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/sessiondex/archive`` (``~/.local/share/…``): data, not cache (an
    archive may be the only copy left), beside sessiondex's other files and never inside
    a Claude config dir. Always indexed when it exists (indexer.archive_ingest), so a new
    or rebuilt index finds what was archived there."""
    env = os.environ if environ is None else environ
    return xdg_dir("XDG_DATA_HOME", os.path.join(".local", "share"), env) / "sessiondex" / "archive"


class ArchiveError(Exception):
    """Writing or verifying an archive failed; the message says why, in one line."""


# How long an archiving run waits for another one on the same archive dir to finish.
LOCK_WAIT_SECONDS = 600.0
LOCK_NAME = ".sessiondex-archive.lock"


class ArchiveStopped(Exception):
    """The run was asked to stop (``watch`` got Ctrl-C or SIGTERM) while it waited for
    another run's lock or between two sessions: what it archived is kept."""


@contextmanager
def archive_dir_lock(
    directory: Path,
    wait: float = LOCK_WAIT_SECONDS,
    should_stop: Callable[[], bool] | None = None,
) -> Iterator[None]:
    """Hold ``directory``'s archiving lock (an ``flock`` on a dot file in it, which the
    kernel drops with its holder however it dies). Two runs on one dir at once (``watch``'s
    daily archive and the installed job, possibly of two indexes) would each find a
    session not yet archived and both write it, as ``<id>.tar.gz`` and a byte-identical
    ``<id>-2.tar.gz``; the second now waits, then finds the first's archive. Raises
    :class:`ArchiveError` when the other run holds it for longer than ``wait`` seconds,
    :class:`ArchiveStopped` as soon as ``should_stop()`` says so while waiting."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise ArchiveError(f"cannot lock {directory}: {exc.strerror or exc}") from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if should_stop is not None and should_stop():
                    raise ArchiveStopped(f"stopped while waiting for {directory}") from None
                if time.monotonic() >= deadline:
                    raise ArchiveError(
                        f"another sessiondex run is archiving into {directory}; try again later"
                    ) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # drops the lock


class RestoreRefused(ArchiveError):
    """Restoring would replace something on disk; nothing was written."""


@dataclass(frozen=True)
class _Entry:
    arcname: str
    path: Path
    st: os.stat_result


@dataclass
class ArchivedTranscript:
    """One transcript read back from an archive: a seekable stream of its exact bytes."""

    kind: str  # MAIN or SUBAGENT
    member: str
    project_key: str
    session_id: str
    agent_id: str | None
    size: int
    mtime_ns: int
    stream: IO[bytes]


def _archivable(st: os.stat_result) -> bool:
    """A regular file, a directory or a symlink: what a session folder holds. A socket,
    FIFO or device someone left in it carries no session data and has no bytes to
    keep (``tarfile`` cannot describe a socket at all), so it is left out."""
    return stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode)


def _unreadable(exc: OSError) -> None:
    """``os.walk`` skips a directory it cannot list; an archive without it would be
    "archived" and the session then deleted with its subagents lost: fail instead."""
    raise exc


def _entries(tf: TranscriptFile) -> list[_Entry]:
    """The transcript, then its ``<id>/`` folder walked without following links (only
    what :func:`_archivable` keeps)."""
    prefix = f"projects/{tf.project_key}/{tf.session_id}"
    entries = [_Entry(prefix + ".jsonl", tf.path, os.lstat(tf.path))]
    folder = tf.path.with_suffix("")
    try:
        folder_st = os.lstat(folder)
    except FileNotFoundError:
        return entries
    entries.append(_Entry(prefix, folder, folder_st))
    if not stat.S_ISDIR(folder_st.st_mode):
        return entries  # a symlink (or odd file) named like the folder: stored as itself
    for dirpath, dirnames, filenames in walk(folder, onerror=_unreadable):
        dirnames.sort()
        relative = os.path.relpath(dirpath, folder)
        base = prefix if relative == "." else f"{prefix}/{Path(relative).as_posix()}"
        for name in sorted(dirnames) + sorted(filenames):
            path = Path(dirpath) / name
            st = os.lstat(path)
            if _archivable(st):
                entries.append(_Entry(f"{base}/{name}", path, st))
    return entries


def _same_bytes(member_stream: IO[bytes], path: Path, size: int) -> bool:
    with open_regular(path) as original:
        remaining = size
        while remaining > 0:
            want = min(CHUNK, remaining)
            a = member_stream.read(want)
            b = original.read(want)
            if a != b or len(a) != want:
                return False
            remaining -= want
        return original.read(1) == b"" and member_stream.read(1) == b""


def check_whole(archive: Path) -> None:
    """Read the gzip stream of ``archive`` to its end, where its CRC and length are
    checked: ``tarfile`` stops at the tar's end-of-archive blocks, before the gzip
    trailer, so a flipped byte inside would otherwise read as valid (and wrong) data.
    Raises ``OSError`` (``gzip.BadGzipFile``) or ``EOFError`` on a damaged file."""
    try:
        with gzip.open(archive, "rb") as whole:
            while whole.read(CHUNK):
                pass
    except zlib.error as exc:  # damaged deflate data: as gzip's own errors, an OSError
        raise gzip.BadGzipFile(f"{archive}: {exc}") from None


def verify_archive(archive: Path, entries: list[_Entry]) -> None:
    """Read ``archive`` back and compare it with the files it was made from."""
    try:
        check_whole(archive)
        expected = {e.arcname: e for e in entries}
        seen: set[str] = set()
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                entry = expected.get(member.name)
                if entry is None or member.name in seen:
                    raise ArchiveError(f"{archive}: unexpected member {member.name}")
                seen.add(member.name)
                mode = entry.st.st_mode
                if stat.S_ISREG(mode):
                    extracted = tar.extractfile(member)
                    if (
                        not member.isreg()
                        or extracted is None
                        or not _same_bytes(extracted, entry.path, member.size)
                    ):
                        raise ArchiveError(
                            f"{archive}: {member.name} does not match "
                            f"{entry.path} (changed while archiving?)"
                        )
                elif stat.S_ISLNK(mode):
                    if not member.issym() or member.linkname != os.readlink(entry.path):
                        raise ArchiveError(f"{archive}: link {member.name} does not match")
                elif stat.S_ISDIR(mode) and not member.isdir():
                    raise ArchiveError(f"{archive}: {member.name} is not a directory")
        missing = set(expected) - seen
        if missing:
            raise ArchiveError(f"{archive}: missing {sorted(missing)[0]}")
    except (OSError, EOFError, tarfile.TarError) as exc:
        raise ArchiveError(f"cannot read back {archive}: {exc}") from None


def holds_session_as_it_is(archive: Path, tf: TranscriptFile) -> bool:
    """Whether ``archive`` holds the session of ``tf`` as it is now on disk: the same
    members (the transcript, its folder's files, folders and links), each regular file
    of the same size and mtime, each link to the same target. Reading the headers only
    (no bytes compared: the archive was verified when written). An archive of the same
    transcript whose folder changed since (a file added by Claude Code's picker, a
    subagent's output rewritten) is not the session as it is: deleting the session on
    its strength would lose the change."""
    try:
        entries = {e.arcname: e for e in _entries(tf)}
        seen: set[str] = set()
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                entry = entries.get(member.name)
                if entry is None or member.name in seen:
                    return False
                seen.add(member.name)
                mode = entry.st.st_mode
                if stat.S_ISREG(mode):
                    if not member.isreg() or member.size != entry.st.st_size:
                        return False
                    if member_mtime_ns(member) != entry.st.st_mtime_ns:
                        return False
                elif stat.S_ISLNK(mode):
                    if not member.issym() or member.linkname != os.readlink(entry.path):
                        return False
                elif not member.isdir():
                    return False
        return seen == set(entries)
    except (OSError, EOFError, tarfile.TarError):
        return False


def _final_name(directory: Path, session_id: str) -> Path:
    """``<id>.tar.gz``, else ``<id>-2.tar.gz``…: an earlier archive of the same session
    (restored, continued and expired again) is never overwritten."""
    candidate = directory / f"{session_id}{ARCHIVE_SUFFIX}"
    n = 2
    while os.path.lexists(candidate):
        candidate = directory / f"{session_id}-{n}{ARCHIVE_SUFFIX}"
        n += 1
    return candidate


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _changed(entry: _Entry, st: os.stat_result) -> bool:
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino) != (
        entry.st.st_mode,
        entry.st.st_size,
        entry.st.st_mtime_ns,
        entry.st.st_ino,
    )


def _add_entry(tar: tarfile.TarFile, entry: _Entry) -> None:
    """One member, as :func:`_entries` saw it: its header (mtime above all) and its
    bytes must be of the same moment, or a restore makes a file that never existed.
    Raises :class:`ArchiveError` when the file changed since it was listed (Claude Code
    resumed the session meanwhile: the next run archives the new version)."""
    changed = ArchiveError(f"{entry.path} changed while archiving; try again")
    info = tar.gettarinfo(str(entry.path), arcname=entry.arcname)
    if info is None:  # replaced by a socket or the like since it was listed
        raise changed
    if info.islnk():
        # A second name of a file already stored (hard links: dedupe tools make them).
        # Kept as a file of its own, so each name is checked and restored by itself.
        info.type, info.linkname = tarfile.REGTYPE, ""
    # Sub-second mtime (Claude Code's sweep keys on it): the PAX header holds it as an
    # exact decimal (a float would lose the nanoseconds).
    info.mtime = entry.st.st_mtime_ns / 1e9
    if entry.st.st_mtime_ns >= 0:
        seconds, ns = divmod(entry.st.st_mtime_ns, 10**9)
        info.pax_headers = {**info.pax_headers, "mtime": f"{seconds}.{ns:09d}"}
    if not info.isreg():
        if _changed(entry, os.lstat(entry.path)):
            raise changed
        tar.addfile(info)
        return
    with open_regular(entry.path) as source:
        if _changed(entry, os.fstat(source.fileno())):
            raise changed
        info.size = entry.st.st_size
        tar.addfile(info, source)
        if _changed(entry, os.fstat(source.fileno())):
            raise changed


def write_session_archive(tf: TranscriptFile, archive_dir: Path) -> Path:
    """Archive one session (transcript + ``<id>/`` folder) into ``archive_dir``; verified
    byte for byte and durable on return. Raises :class:`ArchiveError`."""
    if tf.kind != MAIN:
        raise ArchiveError(f"{tf.path} is not a main transcript")
    directory = Path(archive_dir) / tf.project_key
    try:
        directory.mkdir(parents=True, exist_ok=True)
        entries = _entries(tf)
    except OSError as exc:
        raise ArchiveError(f"cannot archive {tf.path} into {directory}: {exc}") from None
    return _write_archive(entries, directory, tf.session_id, tf.path)


# Where the copies of project-level *.jsonl files that are no sessions go, inside the
# project's archive folder: one level below the session archives, which the archive
# index reads (``indexer/archive_ingest.py`` ``iter_archives``), so a copy is never taken
# for a damaged session archive. Not indexed, not searchable, not for ``restore``: a
# file that is no session was never indexed live either.
FILE_COPIES_DIR = "not-sessions"


def _file_copy_member(jf: ProjectJsonl) -> str:
    return f"projects/{jf.project_key}/{jf.path.name}"


def write_file_archive(jf: ProjectJsonl, archive_dir: Path) -> Path:
    """Archive a project-level ``*.jsonl`` that is no session (a legacy
    ``agent-<id>.jsonl``): ``<DIR>/<key>/not-sessions/<name>.tar.gz``, one member laid
    out as in a config dir (``tar -xzf X -C ~/.claude`` puts it back, mtime and all);
    verified as a session archive is, versions ``<name>-2.tar.gz``… beside. Raises
    :class:`ArchiveError`."""
    directory = Path(archive_dir) / jf.project_key / FILE_COPIES_DIR
    try:
        directory.mkdir(parents=True, exist_ok=True)
        entries = [_Entry(_file_copy_member(jf), jf.path, os.lstat(jf.path))]
    except OSError as exc:
        raise ArchiveError(f"cannot archive {jf.path} into {directory}: {exc}") from None
    if not stat.S_ISREG(entries[0].st.st_mode):
        raise ArchiveError(f"{jf.path} is not a regular file")
    return _write_archive(entries, directory, jf.path.name, jf.path)


def file_archive_holding(archive_dir: Path, jf: ProjectJsonl) -> Path | None:
    """The copy in ``archive_dir`` of ``jf`` as it is now (the same member, size and
    mtime in its header), else None: the rescue archives a file once, not every day."""
    directory = Path(archive_dir) / jf.project_key / FILE_COPIES_DIR
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None
    version = re.compile(re.escape(jf.path.name) + r"(-[0-9]+)?" + re.escape(ARCHIVE_SUFFIX))
    for name in names:
        if not version.fullmatch(name):
            continue
        try:
            with tarfile.open(directory / name, "r:gz") as tar:
                members = tar.getmembers()
        except (OSError, EOFError, tarfile.TarError):
            continue
        if (
            len(members) == 1
            and members[0].name == _file_copy_member(jf)
            and members[0].isreg()
            and members[0].size == jf.size
            and member_mtime_ns(members[0]) == jf.mtime_ns
        ):
            return directory / name
    return None


def _write_archive(entries: list[_Entry], directory: Path, stem: str, source: Path) -> Path:
    """``entries`` into ``directory/<stem>.tar.gz`` (the next free version's name):
    written to a temporary file, read back whole, then linked to its final name."""
    try:
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below
            dir=directory, prefix=f".{stem}.", suffix=".tmp", delete=False
        )
    except OSError as exc:
        raise ArchiveError(f"cannot archive {source} into {directory}: {exc}") from None
    tmp = Path(handle.name)
    try:
        try:
            with (
                handle,
                tarfile.open(fileobj=handle, mode="w:gz", format=tarfile.PAX_FORMAT) as tar,
            ):
                for entry in entries:
                    _add_entry(tar, entry)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise ArchiveError(f"cannot write an archive of {source}: {exc}") from None
        verify_archive(tmp, entries)
        final = _final_name(directory, stem)
        try:
            os.link(tmp, final)  # fails rather than replace a file that appeared meanwhile
        except FileExistsError:
            raise ArchiveError(f"{final} appeared while archiving; kept the original") from None
        except OSError:
            if os.path.lexists(final):
                raise ArchiveError(f"{final} already exists") from None
            os.rename(tmp, final)  # file systems without hard links
        _fsync_dir(directory)
        return final
    finally:
        if tmp.exists():
            tmp.unlink()


def remove_stale_temps(
    archive_dir: Path, *, min_age: float | None = None, now: float | None = None
) -> list[Path]:
    """Remove the temporary files a killed archiving run left in ``archive_dir``'s
    project folders; returns what was removed.

    Only regular files named exactly like ours (``.<session id>.<8 chars>.tmp``), one
    level down (``.<name>.jsonl.<8 chars>.tmp`` in its ``not-sessions/`` folder: a
    copy of a file that is no session), not modified for ``min_age`` seconds (default
    :data:`STALE_TEMP_SECONDS`): a concurrent run's live temporary file is younger.
    Links are never followed; errors (a vanished file, a permission) are skipped.
    """
    age = STALE_TEMP_SECONDS if min_age is None else min_age
    moment = time.time() if now is None else now
    removed: list[Path] = []
    try:
        folders = [e for e in os.scandir(archive_dir) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return removed
    places = [(f.path, _TEMP_NAME) for f in folders]
    places += [(os.path.join(f.path, FILE_COPIES_DIR), _FILE_TEMP_NAME) for f in folders]
    for folder, pattern in places:
        if not os.path.islink(folder):
            ours = functools.partial(_named_like, pattern)
            removed += map(Path, remove_stale(folder, ours, moment - age))
    return removed


def _named_like(pattern: re.Pattern[str], name: str) -> bool:
    return pattern.fullmatch(name) is not None


def member_mtime_ns(member: tarfile.TarInfo) -> int:
    """A member's mtime in nanoseconds, exact from its PAX decimal when there is one
    (tarfile's own ``mtime`` is a float)."""
    text = member.pax_headers.get("mtime", "")
    whole, _, fraction = text.partition(".")
    if text.isascii() and whole.isdigit() and (fraction == "" or fraction.isdigit()):
        return int(whole) * 10**9 + int((fraction + "000000000")[:9])
    return int(member.mtime * 1e9)


def _layout(name: str) -> tuple[str, str, str, str | None] | None:
    """``(kind, project_key, session_id, agent_id)`` for a transcript member name."""
    parts = name.split("/")
    if len(parts) < 3 or parts[0] != "projects" or any(p in ("", ".", "..") for p in parts):
        return None
    key = parts[1]
    if len(parts) == 3 and parts[2].endswith(".jsonl") and is_session_id(parts[2][:-6]):
        return MAIN, key, parts[2][:-6], None
    if (
        len(parts) >= 5
        and is_session_id(parts[2])
        and parts[3] == "subagents"
        and parts[-1].startswith("agent-")
        and parts[-1].endswith(".jsonl")
    ):
        return SUBAGENT, key, parts[2], parts[-1][len("agent-") : -len(".jsonl")]
    return None


def read_archive(archive: Path) -> Iterator[ArchivedTranscript]:
    """The transcripts inside one session archive, main first, each as a seekable stream
    (closed when the iteration moves on). Raises :class:`ArchiveError` on a damaged file
    (checked whole first: its content is indexed as the session)."""
    try:
        check_whole(archive)
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                layout = _layout(member.name)
                if layout is None or not member.isreg():
                    continue
                source = tar.extractfile(member)
                if source is None:
                    continue
                kind, key, sid, agent = layout
                with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
                    shutil.copyfileobj(source, spool, CHUNK)
                    spool.seek(0)
                    yield ArchivedTranscript(
                        kind,
                        member.name,
                        key,
                        sid,
                        agent,
                        member.size,
                        member_mtime_ns(member),
                        spool,
                    )
    except (OSError, EOFError, tarfile.TarError) as exc:
        raise ArchiveError(f"cannot read {archive}: {exc}") from None


# --------------------------------------------------------------------------- restore


@dataclass
class RestoredSession:
    """Where :func:`restore_session_archive` put a session back."""

    session_id: str
    project_key: str
    transcript: Path
    folder: Path | None  # None when the archive held no ``<id>/`` folder
    mtime_ns: int


def _restore_plan(tar: tarfile.TarFile, archive: Path) -> tuple[str, str, list[tarfile.TarInfo]]:
    """(project_key, session_id, members) of a session archive; every member must be the
    transcript or lie inside its ``<id>/`` folder (nothing else is ever extracted)."""
    members = tar.getmembers()  # the gzip CRC is not read here: see check_whole
    main = next((m for m in members if m.isreg() and _layout(m.name)), None)
    layout = _layout(main.name) if main is not None else None
    if main is None or layout is None or layout[0] != MAIN:
        raise ArchiveError(f"{archive} holds no session transcript")
    _, key, sid, _ = layout
    prefix = f"projects/{key}/{sid}"
    links = {m.name for m in members if m.issym()}
    seen: set[str] = set()
    for member in members:
        parts = member.name.split("/")
        if (
            any(p in ("", ".", "..") for p in parts)
            or not (
                member.name in (prefix, prefix + ".jsonl") or member.name.startswith(prefix + "/")
            )
            or member.name in seen
        ):
            raise ArchiveError(f"{archive}: unexpected member {member.name}")
        seen.add(member.name)
        # A member under a link member would be written through the link, wherever it
        # points (an archive sessiondex writes never holds one: a link is not walked).
        if any("/".join(parts[:i]) in links for i in range(1, len(parts))):
            raise ArchiveError(f"{archive}: {member.name} lies under a link")
    return key, sid, members


def _extract_member(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> None:
    """One regular file or link at ``target`` (which must not exist), as archived."""
    if member.issym():
        os.symlink(member.linkname, target)
        return
    source = tar.extractfile(member)
    if source is None:
        raise ArchiveError(f"cannot read {member.name}")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, member.mode & 0o777 or 0o600)
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(source, out, CHUNK)
        out.flush()
        os.fsync(out.fileno())
    mtime_ns = member_mtime_ns(member)
    os.utime(target, ns=(mtime_ns, mtime_ns))


def _extract_folder(
    tar: tarfile.TarFile, members: list[tarfile.TarInfo], prefix: str, staging: Path
) -> None:
    """The ``<id>/`` folder's members into ``staging`` (an empty directory that becomes
    the folder); directory mtimes are set last, deepest first (writing into a directory
    changes its mtime)."""
    dirs: list[tuple[Path, tarfile.TarInfo]] = []
    for member in members:
        relative = member.name[len(prefix) + 1 :]
        target = staging / relative if relative else staging
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            dirs.append((target, member))
        elif member.isreg() or member.issym():
            target.parent.mkdir(parents=True, exist_ok=True)
            _extract_member(tar, member, target)
    for target, member in sorted(dirs, key=lambda d: len(d[0].parts), reverse=True):
        os.chmod(target, member.mode & 0o777 or 0o700)
        mtime_ns = member_mtime_ns(member)
        os.utime(target, ns=(mtime_ns, mtime_ns))


#: A restore's temporary file or folder this old was left by one that was stopped (a
#: running one writes or renames its own within seconds).
INTERRUPTED_SECONDS = 600


def _remove_interrupted(project_dir: Path, session_id: str) -> None:
    """Remove what a restore of ``session_id`` stopped midway left in ``project_dir``:
    its ``.<id>.<hex>.tmp`` transcript and ``.<id>.<random>`` staging folder, once old
    enough not to be a running restore's."""
    cutoff = time.time() - INTERRUPTED_SECONDS
    try:
        names = os.listdir(project_dir)
    except OSError:
        return
    for name in names:
        if not name.startswith(f".{session_id}."):
            continue
        path = project_dir / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_mtime >= cutoff:
            continue
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path, ignore_errors=True)
        elif stat.S_ISREG(st.st_mode):
            path.unlink(missing_ok=True)


def restore_session_archive(archive: Path, config_dir: Path) -> RestoredSession:
    """Put the session in ``archive`` back into ``config_dir/projects/<key>/``: the
    transcript and its ``<id>/`` folder byte for byte, with their archived mtimes (so the
    restored session is exactly the archived version, and counts as archived).

    Never replaces anything: refused (:class:`RestoreRefused`) when ``<id>.jsonl`` or
    ``<id>/`` exists, or the project dir is a symlink (``projects/`` may be one). The
    transcript is written first to a temporary file compared with the archive; the
    folder is extracted under a temporary name and renamed; the transcript is then
    hard-linked into place (which fails rather than replace a file that appeared
    meanwhile): readers see the session whole or not at all, and a restore stopped
    midway leaves temporary names the next one removes.
    """
    try:
        check_whole(archive)  # nothing is written from an archive that is not whole
        with tarfile.open(archive, "r:gz") as tar:
            key, sid, members = _restore_plan(tar, archive)
            prefix = f"projects/{key}/{sid}"
            project_dir = Path(config_dir) / "projects" / key
            transcript = project_dir / f"{sid}.jsonl"
            folder = project_dir / sid
            # ``projects/`` itself may be a link (moved to another disk): every reader
            # follows it, as discovery does. A linked project dir is never read
            # (transcripts.discover), so a session restored through one would be lost.
            if os.path.islink(project_dir):
                raise RestoreRefused(f"{project_dir} is a symlink; nothing restored")
            for path in (transcript, folder):
                if os.path.lexists(path):
                    raise RestoreRefused(f"{path} already exists; nothing restored")
            project_dir.mkdir(parents=True, exist_ok=True)
            main = next(m for m in members if m.name == prefix + ".jsonl")
            inside = [m for m in members if m.name == prefix or m.name.startswith(prefix + "/")]
            restored_folder: Path | None = None
            _remove_interrupted(project_dir, sid)
            tmp = project_dir / f".{sid}.{os.urandom(4).hex()}.tmp"
            try:
                # The transcript first, to a temporary file checked against the archive
                # (the slow part); then the folder renamed into place and the transcript
                # linked: a restore stopped midway leaves only temporary names, which
                # the next one removes, never a folder without its transcript.
                _extract_member(tar, main, tmp)
                check = tar.extractfile(main)
                if check is None or not _same_bytes(check, tmp, main.size):
                    raise ArchiveError(f"{tmp} does not match {archive} after writing")
                link = next((m for m in inside if m.name == prefix and m.issym()), None)
                if link is not None:  # a symlinked folder was stored as the link itself
                    _extract_member(tar, link, folder)
                    restored_folder = folder
                elif inside:
                    staging = Path(tempfile.mkdtemp(prefix=f".{sid}.", dir=project_dir))
                    try:
                        _extract_folder(tar, inside, prefix, staging)
                        if os.path.lexists(folder):
                            raise RestoreRefused(f"{folder} appeared meanwhile; nothing restored")
                        os.rename(staging, folder)
                    except BaseException:
                        shutil.rmtree(staging, ignore_errors=True)
                        raise
                    restored_folder = folder
                try:
                    os.link(tmp, transcript)
                except FileExistsError:
                    raise RestoreRefused(
                        f"{transcript} appeared meanwhile; nothing restored"
                    ) from None
            except BaseException:
                if restored_folder is not None and os.path.islink(restored_folder):
                    os.unlink(restored_folder)
                elif restored_folder is not None:
                    shutil.rmtree(restored_folder, ignore_errors=True)
                raise
            finally:
                if os.path.lexists(tmp):
                    os.unlink(tmp)
            _fsync_dir(project_dir)
            return RestoredSession(
                sid, key, transcript, restored_folder, os.lstat(transcript).st_mtime_ns
            )
    except (OSError, EOFError, tarfile.TarError) as exc:
        raise ArchiveError(f"cannot restore from {archive}: {exc}") from None


def extract_for_reading(archive: Path, dest: Path) -> Path:
    """Unpack one session archive's transcripts into ``dest`` laid out as a config dir
    (``projects/<key>/<id>.jsonl``, its subagents and their ``.meta.json``), for reading
    them with the code that reads live sessions (``show --include-archived``); returns
    the main transcript's path. Only regular members with those names are written, so
    a doctored archive cannot place a file outside ``dest``. Raises
    :class:`ArchiveError` (damaged archive, no main transcript) or ``OSError``."""
    main: Path | None = None
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                name = member.name
                is_meta = name.endswith(".meta.json")
                layout = _layout(name[: -len(".meta.json")] + ".jsonl" if is_meta else name)
                if not member.isreg() or layout is None or (is_meta and layout[0] == MAIN):
                    continue
                target = dest / name
                if layout[0] == MAIN:
                    if main is not None:
                        continue  # one session per archive
                    main = target
                source = tar.extractfile(member)
                if source is None or target.exists():
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "xb") as out:
                    shutil.copyfileobj(source, out, CHUNK)
    except (EOFError, tarfile.TarError) as exc:
        raise ArchiveError(f"cannot read {archive}: {exc}") from None
    if main is None:
        raise ArchiveError(f"{archive} holds no session transcript")
    return main
