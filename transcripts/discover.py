"""Finding transcripts on disk: main sessions and their subagents.

A session is ``projects/<key>/<uuid>.jsonl`` (UUID stem, either case); everything else at
project level is ignored (``agent-*.jsonl``, ``*.orphaned-*``, directories named
``*.jsonl``). Subagents live at any depth below ``<key>/<uuid>/subagents/``. Symlinked
files and directories are not followed: a link can point anywhere (``/etc/passwd``), and
nothing outside ``projects/`` is ours to read.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from operator import attrgetter
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import orjson

from sessiondex.transcripts import ARCHIVE_SUFFIX as ARCHIVE_SUFFIX  # re-exported
from sessiondex.transcripts.fspath import absolute
from sessiondex.transcripts.keys import SESSION_ID_LENGTH, is_session_id

MAIN = "main"
SUBAGENT = "subagent"
# _scan_project's kind for a main transcript whose <id>/ folder exists (callers see MAIN).
MAIN_WITH_FOLDER = "main+folder"
# <id>.jsonl: the only length a main transcript's name can have (a cheap test before the
# ID pattern, which every name of that length still passes through).
_SESSION_FILE_NAME_LENGTH = SESSION_ID_LENGTH + len(".jsonl")
# Claude Code's picker archive (ctrl+e): <id>/archived.json, {"archived": true|false}.
PICKER_ARCHIVE_NAME = "archived.json"
# Claude Code writes ~50 bytes; more than this is not its sidecar.
MAX_PICKER_ARCHIVE_BYTES = 1 << 20
# Claude Code's mirror of the session's name: <id>/custom-title.json, {"customTitle": …}
# (optional "by"/"at"). Its picker reads the name from the tail record, else from this,
# else from the head record (docs/session-fields.md); clearing the name deletes it.
TITLE_SIDECAR_NAME = "custom-title.json"
# <realpath project dir>/.session-aliases: one project-dir path a line, the dirs of
# sessions started in a symlinked spelling of the directory (Claude Code writes it). What the
# refresh keeps of it (indexer/refresh.py) puts those dirs in the directory's scopes.
SESSION_ALIASES_NAME = ".session-aliases"
# Claude Code appends a line a session: far less than this is its file.
MAX_SESSION_ALIASES_BYTES = 1 << 20

#: ``path → lstat`` of each regular ``.session-aliases`` a walk saw (its collector).
AliasFiles = dict[str, os.stat_result]


@dataclass(frozen=True)
class TranscriptFile:
    """One transcript file and where it sits."""

    path: Path
    root: Path  # the config dir
    project_key: str
    session_id: str  # the owning session (a subagent's parent)
    kind: str  # MAIN or SUBAGENT
    agent_id: str | None = None
    size: int = 0
    mtime_ns: int = 0
    inode: int = 0
    device: int = 0
    ctime_ns: int | None = None  # the inode's change time; None: not known

    @property
    def main_path(self) -> Path:
        """The owning session's main transcript."""
        return self.root / "projects" / self.project_key / f"{self.session_id}.jsonl"

    def restat(self, st: os.stat_result) -> TranscriptFile:
        """The same file with the stat taken when it was opened: the size and identity
        that reading it will stand for (the file may have grown since discovery)."""
        return replace(
            self,
            size=st.st_size,
            mtime_ns=st.st_mtime_ns,
            inode=st.st_ino,
            device=st.st_dev,
            ctime_ns=st.st_ctime_ns,
        )


def _utf8_name(name: str) -> bool:
    """Whether a directory entry's name is valid UTF-8 (no surrogate escapes).

    Claude Code's names are ASCII (sanitized keys, UUIDs); a name that is not UTF-8 was
    made by something else and cannot be stored in the index (SQLite text is UTF-8),
    so it is skipped like any other foreign file instead of stopping the whole refresh.
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def storable(path: str) -> bool:
    """Whether ``path`` can be a row of the index at all: valid UTF-8, as SQLite text
    is. Discovery skips (and counts) the rest; the watcher passes over them, as binding
    one to a query raised and stopped it."""
    return _utf8_name(path)


SKIPPED_SYMLINK = "skipped-symlink"
SKIPPED_NOT_A_FILE = "skipped-not-a-file"
SKIPPED_NON_UTF8_NAME = "skipped-non-utf8-name"


def why_unseen(exc: OSError) -> str | None:
    """Why a path that failed with ``exc`` is unseen rather than gone, or None when it
    is gone (ENOENT, ENOTDIR). The one rule for discovery, the watcher and the refresh:
    what cannot be looked at (permissions, an I/O error) may still be there, and the
    index keeps what it holds of it."""
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return None
    return exc.strerror or type(exc).__name__


def _regular_file_stat(
    path: str, skipped: Counter[str] | None = None, unlisted: dict[str, str] | None = None
) -> os.stat_result | None:
    """lstat of a regular file; anything else (a link, a directory named like a
    transcript, a vanished entry) is None, counted in ``skipped`` by kind. An entry
    that exists but cannot be looked at (a directory that may be read but not entered,
    an I/O error) puts its directory in ``unlisted``: its files are unseen, not gone."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        reason = why_unseen(exc)
        if reason is not None and unlisted is not None:
            unlisted.setdefault(os.path.dirname(path), reason)
        return None
    if stat.S_ISREG(st.st_mode):
        return st
    if skipped is not None:
        skipped[SKIPPED_SYMLINK if stat.S_ISLNK(st.st_mode) else SKIPPED_NOT_A_FILE] += 1
    return None


def unseen_because(path: str) -> str | None:
    """Why ``path`` cannot be looked at although it may exist (its directory cannot be
    entered, an I/O error), or None: it is there, or it is gone. A path that is unseen
    is not a transcript deleted; its index rows stay (the watcher's rule, as
    :func:`_entries` is the full walk's)."""
    try:
        os.lstat(path)
    except OSError as exc:
        return why_unseen(exc)
    return None


def _named_ok(name: str, skipped: Counter[str] | None) -> bool:
    if _utf8_name(name):
        return True
    if skipped is not None:
        skipped[SKIPPED_NON_UTF8_NAME] += 1
    return False


def _entries(
    path: str, unlisted: dict[str, str] | None, *, ordered: bool = True
) -> list[os.DirEntry[str]]:
    """A directory's entries, by name when ``ordered`` (else as the directory lists
    them: the check before a reading command only compares; sorting the ~2,800
    directories of 20,000 sessions cost it ~5 ms); none when it is gone. A directory that
    exists but cannot be listed (its permissions, an I/O error) is recorded in
    ``unlisted`` with the reason: the transcripts in it are unseen, not deleted, and the
    refresh must not forget what the index holds for them (``indexer/refresh.py``)."""
    try:
        entries = list(os.scandir(path))
    except OSError as exc:
        reason = why_unseen(exc)
        if reason is not None and unlisted is not None:
            unlisted[path] = reason
        return []
    if ordered:
        entries.sort(key=_by_name)
    return entries


_by_name = attrgetter("name")


def _found(
    path: str,
    root: Path,
    key: str,
    sid: str,
    kind: str,
    agent: str | None,
    st: os.stat_result,
    picker_archive: str | None = None,
) -> Found:
    return Found(
        path,
        root,
        key,
        sid,
        kind,
        agent,
        st.st_size,
        st.st_mtime_ns,
        st.st_ino,
        st.st_dev,
        st.st_ctime_ns,
        picker_archive,
    )


def _make(
    path: str, root: Path, key: str, sid: str, kind: str, agent: str | None, st: os.stat_result
) -> TranscriptFile:
    return _found(path, root, key, sid, kind, agent, st).file()


def iter_subagent_files(
    root: Path, key: str, session_id: str, skipped: Counter[str] | None = None
) -> Iterator[TranscriptFile]:
    """Every ``agent-<id>.jsonl`` below ``<key>/<session_id>/subagents``, sorted, no links."""
    for path, agent, st in _scan_subagents(root, key, session_id, skipped):
        yield _make(path, root, key, session_id, SUBAGENT, agent, st)


def _scan_subagents(
    root: Path,
    key: str,
    session_id: str,
    skipped: Counter[str] | None,
    unlisted: dict[str, str] | None = None,
    *,
    folder_is_dir: bool = False,
    ordered: bool = True,
) -> list[tuple[str, str, os.stat_result]]:
    """(path, agent id, lstat) of :func:`iter_subagent_files`, sorted when ``ordered``.
    ``folder_is_dir``: the caller has just seen ``<id>/`` as a directory entry that is
    no link."""
    base = os.path.join(str(root), "projects", key, session_id, "subagents")
    # scandir follows a link given as its argument: refuse a linked <id>/ or subagents/
    # (<id>/ not looked at again when its directory entry said: one lstat per session
    # with a folder, ~5% of the check before every reading command)
    if (not folder_is_dir and os.path.islink(os.path.dirname(base))) or os.path.islink(base):
        if skipped is not None:
            skipped[SKIPPED_SYMLINK] += 1
        return []
    stack = [base]
    found: list[tuple[str, str, os.stat_result]] = []
    while stack:
        for entry in _entries(stack.pop(), unlisted, ordered=ordered):
            if not _named_ok(entry.name, skipped):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                    continue
            except OSError:
                continue
            name = entry.name
            if name.startswith("agent-") and name.endswith(".jsonl"):
                st = _regular_file_stat(entry.path, skipped, unlisted)
                if st is not None:
                    found.append((entry.path, name[len("agent-") : -len(".jsonl")], st))
    return sorted(found) if ordered else found


def iter_project_keys(
    root: Path,
    skipped: Counter[str] | None = None,
    unlisted: dict[str, str] | None = None,
    *,
    ordered: bool = True,
) -> Iterator[str]:
    """Project dir names under ``root/projects`` (real directories only), by name when
    ``ordered``."""
    for entry in _entries(os.path.join(str(root), "projects"), unlisted, ordered=ordered):
        if not _named_ok(entry.name, skipped):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                yield entry.name
            elif entry.is_symlink() and skipped is not None:
                skipped[SKIPPED_SYMLINK] += 1  # a linked project dir is never followed
        except OSError:
            continue


def transcripts_named(roots: list[Path], session_id: str) -> Iterator[str]:
    """Each main transcript ``<root>/projects/<key>/<session_id>.jsonl`` on disk (a
    regular file), indexed or not: where Claude Code finds a session by its ID, one
    ``lstat`` per project dir. For when the index has no row for the ID."""
    names = dict.fromkeys([session_id + ".jsonl", session_id.lower() + ".jsonl"])
    for root in roots:
        for key in iter_project_keys(root):
            for name in names:  # as typed, and as Claude Code names its files
                path = os.path.join(str(root), "projects", key, name)
                if _regular_file_stat(path) is not None:
                    yield path


def unreadable_transcript(
    roots: list[Path], session_id: str, named: Iterable[str] | None = None
) -> tuple[str, str] | None:
    """``(path, reason)`` of a main transcript named ``<session_id>.jsonl`` that is on
    disk but cannot be read, so it was never indexed; else None. What tells a user why
    a session they can see in ``ls`` is "not found". ``named``: what
    :func:`transcripts_named` gave the caller already, so the project dirs, one
    ``lstat`` each, are not walked a second time."""
    for path in transcripts_named(roots, session_id) if named is None else named:
        if not os.access(path, os.R_OK):
            return path, os.strerror(errno.EACCES)
    return None


def _scan_project(
    root: Path,
    key: str,
    subagents: bool,
    skipped: Counter[str] | None,
    unlisted: dict[str, str] | None = None,
    *,
    ordered: bool = True,
    aliases: AliasFiles | None = None,
) -> Iterator[tuple[str, str, str, str | None, os.stat_result]]:
    """(path, session id, kind, agent id, lstat) of one project dir's transcripts, in
    :func:`iter_project`'s order (unless not ``ordered``), without building a
    :class:`TranscriptFile` each. A regular ``.session-aliases`` among the entries
    goes to ``aliases`` (path → lstat), when given: no call for a dir without one."""
    entries = _entries(os.path.join(str(root), "projects", key), unlisted, ordered=ordered)
    # One pass over the entries: the names of transcripts (the length before the ID
    # pattern), and the real <id>/ folders from the entries' types (no extra system
    # call): most sessions have none, and looking for subagents/ in each would cost two.
    # Only an entry named like a session ID can be a session's folder.
    sessions = []
    folders = set()
    linked = set()  # a link where <id>/ would be: Claude Code reads archived.json through it
    for entry in entries:
        name = entry.name
        if len(name) == _SESSION_FILE_NAME_LENGTH:
            if name.endswith(".jsonl") and is_session_id(name[:-6]):
                sessions.append(entry)
        elif len(name) == SESSION_ID_LENGTH:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.add(name)
                elif entry.is_symlink():
                    linked.add(name)
            except OSError:
                continue
        elif aliases is not None and name == SESSION_ALIASES_NAME:
            st = _regular_file_stat(entry.path)
            if st is not None:  # a link is not followed, as for a transcript
                aliases[entry.path] = st
    for entry in sessions:
        st = _regular_file_stat(entry.path, skipped, unlisted)
        if st is None:
            continue
        sid = entry.name[:-6]
        if sid in folders:
            yield entry.path, sid, MAIN_WITH_FOLDER, None, st
            if subagents:
                found = _scan_subagents(
                    root, key, sid, skipped, unlisted, folder_is_dir=True, ordered=ordered
                )
                for path, agent, st in found:
                    yield path, sid, SUBAGENT, agent, st
        else:
            yield entry.path, sid, MAIN_WITH_FOLDER if sid in linked else MAIN, None, st


def iter_project(
    root: Path, key: str, *, subagents: bool = True, skipped: Counter[str] | None = None
) -> Iterator[TranscriptFile]:
    """Main transcripts of one project dir, each followed by its subagents. Entries named
    like transcripts that are not regular files are counted in ``skipped``."""
    for path, sid, kind, agent, st in _scan_project(root, key, subagents, skipped):
        yield _make(path, root, key, sid, MAIN if kind == MAIN_WITH_FOLDER else kind, agent, st)


class Found(NamedTuple):
    """A transcript as discovery sees it, before it is worth a :class:`TranscriptFile`:
    most files of a refresh are unchanged and are only compared by their ``lstat``.

    Only the five numbers of the ``lstat`` that the skip rule compares are kept: a whole
    ``os.stat_result`` is ~1 KB, and a refresh holds one of these per transcript (24 MB
    of a cold build's peak at 20,000 sessions)."""

    path: str
    root: Path
    project_key: str
    session_id: str
    kind: str
    agent_id: str | None
    size: int
    mtime_ns: int
    inode: int
    device: int
    ctime_ns: int | None = None
    # A main transcript's <id>/archived.json, as picker_archive_stamp says it is now.
    picker_archive: str | None = None

    def file(self) -> TranscriptFile:
        return TranscriptFile(
            path=Path(self.path),
            root=self.root,
            project_key=self.project_key,
            session_id=self.session_id,
            kind=self.kind,
            agent_id=self.agent_id,
            size=self.size,
            mtime_ns=self.mtime_ns,
            inode=self.inode,
            device=self.device,
            ctime_ns=self.ctime_ns,
        )


def iter_found(
    root: Path,
    skipped: Counter[str] | None = None,
    unlisted: dict[str, str] | None = None,
    aliases: AliasFiles | None = None,
) -> Iterator[Found]:
    """Every transcript :func:`iter_transcripts` yields, in its order, without a ``Path``
    per file (building those was most of a no-change refresh): the refresh and the
    check before a reading command (``indexer/freshness.py``) compare stats first.
    Directories that exist but cannot be listed go to ``unlisted`` (path → reason), the
    ``.session-aliases`` files to ``aliases`` (path → lstat) when given."""
    for key in iter_project_keys(root, skipped, unlisted):
        scanned = _scan_project(root, key, True, skipped, unlisted, aliases=aliases)
        for path, sid, kind, agent, st in scanned:
            if kind == MAIN_WITH_FOLDER:  # only a session with a folder can have one
                yield _found(path, root, key, sid, MAIN, agent, st, picker_archive_stamp(path))
            else:
                yield _found(path, root, key, sid, kind, agent, st)


def iter_stats(
    root: Path, aliases: AliasFiles | None = None
) -> Iterator[tuple[str, str, str, str | None, os.stat_result]]:
    """``(path, session id, kind, agent id, lstat)`` of every transcript
    :func:`iter_found` yields, in no set order and with no object per file: what the
    check before every reading command compares with the index
    (``indexer/freshness.py``): it needs neither :func:`iter_found`'s order nor a
    :class:`Found` for each of the 25,000 files of 20,000 sessions. ``kind`` is :data:`MAIN_WITH_FOLDER` for a main transcript
    whose ``<id>/`` folder exists (only then can it hold ``archived.json``). The
    ``.session-aliases`` files go to ``aliases`` when given (:func:`_scan_project`)."""
    for key in iter_project_keys(root, ordered=False):
        yield from _scan_project(root, key, True, None, ordered=False, aliases=aliases)


def iter_transcripts(
    root: Path, *, subagents: bool = True, skipped: Counter[str] | None = None
) -> Iterator[TranscriptFile]:
    """Every transcript under one config dir, project by project."""
    for key in iter_project_keys(root, skipped):
        yield from iter_project(root, key, subagents=subagents, skipped=skipped)


def subagent_meta_path(path: Path) -> Path:
    """The ``agent-<id>.meta.json`` beside the subagent transcript ``agent-<id>.jsonl``."""
    return path.with_name(path.name[: -len(".jsonl")] + ".meta.json")


def read_subagent_meta(path: Path) -> dict[str, Any]:
    """The ``agent-<id>.meta.json`` beside a subagent transcript (``toolUseId``,
    ``parentAgentId``, ``agentType``, …); ``{}`` when missing, unreadable or not an
    object, as the SDK treats it."""
    try:
        value = orjson.loads(read_regular(subagent_meta_path(path)))
    except (OSError, orjson.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a transcript found earlier for reading, never blocking: a FIFO (or a
    device) put in its place since would make a plain ``open`` wait forever for a
    writer. What is no regular file now raises ``OSError``, as a vanished one does."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The whole of a small file found earlier (a settings file, a subagent's
    ``.meta.json``), read through :func:`open_regular`: never waiting on a FIFO."""
    with open_regular(path) as stream:
        return stream.read()


def session_sidecar_path(transcript: str | os.PathLike[str], name: str) -> str:
    """The path of the sidecar ``name`` in a main transcript's ``<id>/`` folder."""
    text = os.fspath(transcript)
    folder = text[: -len(".jsonl")] if text.endswith(".jsonl") else text
    return os.path.join(folder, name)


def _picker_archive_path(transcript: str | os.PathLike[str]) -> str:
    return session_sidecar_path(transcript, PICKER_ARCHIVE_NAME)


def _read_sidecar(transcript: str | os.PathLike[str], name: str) -> dict[str, Any] | None:
    """A session sidecar's JSON object as Claude Code reads it (through links; never
    blocking on a FIFO), or None when it is missing, unreadable, no regular file or no
    JSON object."""
    try:
        fd = os.open(session_sidecar_path(transcript, name), os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        value = orjson.loads(os.read(fd, MAX_PICKER_ARCHIVE_BYTES))
    except (OSError, orjson.JSONDecodeError):
        return None
    finally:
        os.close(fd)
    return value if isinstance(value, dict) else None


def archived_in_picker(transcript: str | os.PathLike[str]) -> bool:
    """Whether Claude Code's picker archived this session (ctrl+e): its folder holds
    ``archived.json`` saying ``{"archived": true}``. The picker hides such a session
    and ``claude --continue`` passes it over. Missing, unreadable or anything else:
    not archived. (Not sessiondex's own archive, a copy kept from the sweep.)"""
    value = _read_sidecar(transcript, PICKER_ARCHIVE_NAME)
    return value is not None and value.get("archived") is True


def title_in_sidecar(transcript: str | os.PathLike[str]) -> str | None:
    """The name ``<id>/custom-title.json`` holds (Claude Code's mirror of the session's
    name, which its picker shows when the last 64 KiB hold no ``custom-title`` record),
    or None when there is none to read. The index does not read it: the transcript's
    records say the same, and say it first; mutations read it to keep it in step."""
    value = _read_sidecar(transcript, TITLE_SIDECAR_NAME)
    title = None if value is None else value.get("customTitle")
    return title if isinstance(title, str) else None


def picker_archive_stamp(transcript: str | os.PathLike[str]) -> str | None:
    """The ``stat`` of a session's ``archived.json`` as one text (size, mtime, inode,
    device, change time), or None when there is none (or it is no regular file): what
    the index compares to know whether to read it again. Toggling the archive in the
    picker rewrites that file and touches no transcript."""
    try:
        st = os.stat(_picker_archive_path(transcript))  # through links, as it is read
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_dev}:{st.st_ctime_ns}"


def _configured_spelling(text: str, roots: list[Path]) -> str:
    """``text`` under the configured spelling of its config dir: a config dir (or its
    ``projects/``) that is a symlink, as dotfile managers make them, reads the same files
    under its target's path, and a path given that way is the same transcript."""
    if any(text.startswith(os.path.join(str(root), "projects") + os.sep) for root in roots):
        return text
    for root in roots:
        projects = os.path.join(str(root), "projects")
        real = os.path.realpath(projects)
        if real != projects and text.startswith(real + os.sep):
            return projects + text[len(real) :]
    # The other way round: the config dir is given as it is, the path reaches it through
    # a link (``~/link-to-claude/projects/…``). Its folder, links followed, is inside a
    # configured projects/ dir: the same file, spelled as configured.
    folder, name = os.path.split(text)
    real_folder = os.path.realpath(folder)
    if real_folder == folder:
        return text
    for root in roots:
        projects = os.path.join(str(root), "projects")
        real = os.path.realpath(projects)
        if real_folder.startswith(real + os.sep):
            return os.path.join(projects + real_folder[len(real) :], name)
    return text


def _placed(path: Path, roots: list[Path]) -> tuple[str, Path, list[str], os.stat_result] | None:
    """``(path as configured, config dir, parts below projects/, lstat)`` of a regular
    file (not a link) inside a configured ``projects/`` dir reached through no symlink,
    else None: the one rule for what may be acted on there."""
    text = _configured_spelling(absolute(path), roots)
    if not _utf8_name(text):
        return None
    for root in roots:
        projects = os.path.join(str(root), "projects") + os.sep
        if not text.startswith(projects):
            continue
        parts = text[len(projects) :].split(os.sep)
        if any(p in ("", ".", "..") for p in parts):
            return None
        st = _regular_file_stat(text)
        if st is None:
            return None
        # No directory between projects/ and the file may be a symlink out of it.
        check = os.path.join(str(root), "projects")
        for part in parts[:-1]:
            check = os.path.join(check, part)
            if os.path.islink(check):
                return None
        return text, root, parts, st
    return None


def describe_path(path: Path, roots: list[Path]) -> TranscriptFile | None:
    """Place an arbitrary path inside a configured ``projects/`` dir, else None.

    The path must be a regular file (not a link) whose location matches the layout; used
    by the watcher and by mutations, which must never act outside ``projects/``.
    """
    placed = _placed(path, roots)
    if placed is not None:
        text, root, parts, st = placed
        if len(parts) == 2 and parts[1].endswith(".jsonl") and is_session_id(parts[1][:-6]):
            return _make(text, root, parts[0], parts[1][:-6], MAIN, None, st)
        if (
            len(parts) >= 4
            and parts[2] == "subagents"
            and is_session_id(parts[1])
            and parts[-1].startswith("agent-")
            and parts[-1].endswith(".jsonl")
        ):
            return _make(
                text,
                root,
                parts[0],
                parts[1],
                SUBAGENT,
                parts[-1][len("agent-") : -len(".jsonl")],
                st,
            )
    return None


# --------------------------------------------------------------------------- not sessions

# The ``*.jsonl`` files at project level that are no sessions, which Claude Code's sweep
# deletes as it deletes transcripts (every old ``projects/<dir>/*.jsonl``): the top-level
# ``agent-<id>.jsonl`` sidechain transcripts older builds wrote, and any other name.
LEGACY_SUBAGENT = "legacy-subagent"
OTHER_JSONL = "other-jsonl"


@dataclass(frozen=True)
class ProjectJsonl:
    """A ``projects/<key>/<name>.jsonl`` regular file whose stem is no session ID."""

    path: Path
    root: Path  # the config dir
    project_key: str
    kind: str  # LEGACY_SUBAGENT or OTHER_JSONL
    size: int
    mtime_ns: int


def project_jsonl_kind(name: str) -> str | None:
    """What a project-level entry named ``name`` is when it is a ``*.jsonl`` that is no
    session, else None (a session, or no ``.jsonl``: ``*.orphaned-*``, side files)."""
    if not name.endswith(".jsonl") or is_session_id(name[: -len(".jsonl")]):
        return None
    return LEGACY_SUBAGENT if name.startswith("agent-") else OTHER_JSONL


def iter_project_jsonl(root: Path) -> Iterator[ProjectJsonl]:
    """Every project-level ``*.jsonl`` of ``root`` that is no session, project by
    project, sorted: regular files only (a link or a directory named so is never
    followed). Discovery ignores them; only the retention plan looks at them."""
    for key in iter_project_keys(root):
        for entry in _entries(os.path.join(str(root), "projects", key), None):
            kind = project_jsonl_kind(entry.name)
            if kind is None or not _utf8_name(entry.name):
                continue
            st = _regular_file_stat(entry.path)
            if st is not None:
                yield ProjectJsonl(Path(entry.path), root, key, kind, st.st_size, st.st_mtime_ns)


def describe_project_jsonl(path: Path, roots: list[Path]) -> ProjectJsonl | None:
    """:func:`describe_path` for a project-level ``*.jsonl`` that is no session: the
    file as it is now, inside a configured ``projects/`` dir through no symlink, else
    None."""
    placed = _placed(path, roots)
    if placed is None:
        return None
    text, root, parts, st = placed
    kind = project_jsonl_kind(parts[-1])
    if len(parts) != 2 or kind is None:
        return None
    return ProjectJsonl(Path(text), root, parts[0], kind, st.st_size, st.st_mtime_ns)


def read_session_aliases(path: str | os.PathLike[str]) -> list[str]:
    """The project dirs a ``.session-aliases`` names, as project keys (each line is a
    project dir's full path: its last part), in order and once each; blank lines and
    a line with no name (``/``) name none. Raises ``OSError`` when it cannot be read,
    ``ValueError`` when it is too big to be Claude Code's."""
    with open_regular(path) as stream:
        data = stream.read(MAX_SESSION_ALIASES_BYTES + 1)
    if len(data) > MAX_SESSION_ALIASES_BYTES:
        raise ValueError(f"over {MAX_SESSION_ALIASES_BYTES} bytes")
    keys: list[str] = []
    for line in data.decode("utf-8", "replace").splitlines():
        # the last part, of a POSIX or a Windows path (``C:\\Users\\x\\…\\C--Users-x``)
        key = line.strip().rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
        if key and key not in keys and _utf8_name(key):
            keys.append(key)
    return keys
