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
name, never over an existing archive. Nothing here deletes anything but our own
temporary files: a run killed mid-archive leaves its ``.<id>.<random>.tmp`` behind, and
:func:`remove_stale_temps` (called by the next ``cleanup --archive``) removes those.
"""

from __future__ import annotations

import gzip
import os
import re
import shutil
import stat
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from sessiondex.transcripts.discover import MAIN, SUBAGENT, TranscriptFile
from sessiondex.transcripts.keys import is_session_id

ARCHIVE_SUFFIX = ".tar.gz"
CHUNK = 1 << 20
# Decompressed transcripts up to this size stay in memory while indexed; larger spill.
SPOOL_BYTES = 32 << 20
# The names write_session_archive gives its temporary files: "." + session id + "." +
# tempfile's 8 random characters + ".tmp". Nothing else is ever removed as a leftover.
_TEMP_NAME = re.compile(
    r"\.([0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})"
    r"\.[a-z0-9_]{8}\.tmp"
)
# A temporary file untouched this long is a leftover; a younger one may belong to a run
# that is archiving right now (writing keeps its mtime fresh; verifying a large archive
# takes seconds to minutes).
STALE_TEMP_SECONDS = 600


class ArchiveError(Exception):
    """Writing or verifying an archive failed; the message says why, in one line."""


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


def _entries(tf: TranscriptFile) -> list[_Entry]:
    """The transcript, then its ``<id>/`` folder walked without following links."""
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
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames.sort()
        relative = os.path.relpath(dirpath, folder)
        base = prefix if relative == "." else f"{prefix}/{Path(relative).as_posix()}"
        for name in sorted(dirnames) + sorted(filenames):
            path = Path(dirpath) / name
            entries.append(_Entry(f"{base}/{name}", path, os.lstat(path)))
    return entries


def _same_bytes(member_stream: IO[bytes], path: Path, size: int) -> bool:
    with open(path, "rb") as original:
        remaining = size
        while remaining > 0:
            want = min(CHUNK, remaining)
            a = member_stream.read(want)
            b = original.read(want)
            if a != b or len(a) != want:
                return False
            remaining -= want
        return original.read(1) == b"" and member_stream.read(1) == b""


def verify_archive(archive: Path, entries: list[_Entry]) -> None:
    """Read ``archive`` back and compare it with the files it was made from."""
    try:
        with gzip.open(archive, "rb") as whole:  # reading to the end checks the CRC
            while whole.read(CHUNK):
                pass
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


def write_session_archive(tf: TranscriptFile, archive_dir: Path) -> Path:
    """Archive one session (transcript + ``<id>/`` folder) into ``archive_dir``; verified
    byte for byte and durable on return. Raises :class:`ArchiveError`."""
    if tf.kind != MAIN:
        raise ArchiveError(f"{tf.path} is not a main transcript")
    directory = Path(archive_dir) / tf.project_key
    try:
        directory.mkdir(parents=True, exist_ok=True)
        entries = _entries(tf)
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below
            dir=directory, prefix=f".{tf.session_id}.", suffix=".tmp", delete=False
        )
    except OSError as exc:
        raise ArchiveError(f"cannot archive {tf.path} into {directory}: {exc}") from None
    tmp = Path(handle.name)
    try:
        try:
            with (
                handle,
                tarfile.open(fileobj=handle, mode="w:gz", format=tarfile.PAX_FORMAT) as tar,
            ):
                for entry in entries:
                    info = tar.gettarinfo(str(entry.path), arcname=entry.arcname)
                    # Sub-second mtime: PAX stores a float; Claude Code's sweep keys on it.
                    info.mtime = entry.st.st_mtime_ns / 1e9
                    if info.isreg():
                        with open(entry.path, "rb") as source:
                            tar.addfile(info, source)
                    else:
                        tar.addfile(info)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            raise ArchiveError(f"cannot write an archive of {tf.path}: {exc}") from None
        verify_archive(tmp, entries)
        final = _final_name(directory, tf.session_id)
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
    level down, not modified for ``min_age`` seconds (default
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
    for folder in folders:
        try:
            entries = list(os.scandir(folder.path))
        except OSError:
            continue
        for entry in entries:
            if not _TEMP_NAME.fullmatch(entry.name):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and moment - st.st_mtime >= age:
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
            except OSError:
                continue
    return removed


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
    (closed when the iteration moves on). Raises :class:`ArchiveError` on a damaged file."""
    try:
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
                        int(member.mtime * 1e9),
                        spool,
                    )
    except (OSError, EOFError, tarfile.TarError) as exc:
        raise ArchiveError(f"cannot read {archive}: {exc}") from None
