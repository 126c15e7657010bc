"""Archived sessions (``cleanup --archive DIR``) stay findable: DIR is indexed read-only.

Each ``<DIR>/<project_key>/<id>.tar.gz`` becomes one ``sessions`` row with
``archived = 1`` (``list``/``search``/``resolve`` show it only with
``--include-archived``) whose ``file_path`` is the archive. Its transcript is
decompressed into a seekable temporary stream and folded by the same code as a live
transcript (:func:`sessiondex.indexer.ingest.apply_tail`), so an archived session holds exactly
the rows it held before it was archived. Subagent transcripts inside the archive are
indexed too, under ``<archive>#<member>`` paths.

The archive dirs are remembered in ``meta`` (``archive_dirs``, a JSON list) and swept by
every :func:`sessiondex.indexer.refresh.refresh`; :func:`indexer.db.clear_index` keeps that key so
``index --rebuild`` does not forget them, and the file beside the index keeps it too
(``indexer.meta.keep_setting``), so an index moved aside as damaged (or deleted) is
rebuilt with it. The default archive dir is swept whenever it exists, recorded or not. Archives are write-once, so an unchanged
archive (same mtime, inode and device) costs a stat.

Versions: a session archived again after it changed (``sessiondex archive`` of a session
that grew, or one restored, continued and expiring again) gets a new file beside the old
one, ``<id>-2.tar.gz``, ``<id>-3.tar.gz``… (:mod:`sessiondex.transcripts.archive` never
replaces an archive). Every version is indexed, and :func:`mark_newest` keeps exactly one
row per session at ``archived = 1``, the newest by the archived transcript's mtime (then
size, then the later ingest), across every archive dir; the others get ``archived = 2``
and are never shown. Readers show the ``archived = 1`` row only while no live transcript
of the session exists (``query/archives.py``).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
from sqlite_utils import Database

from sessiondex.indexer.ingest import apply_tail, remove_path
from sessiondex.indexer.meta import get_meta, immediate, keep_setting
from sessiondex.indexer.stats import NEW, REWRITTEN, UNCHANGED, RefreshStats
from sessiondex.transcripts.archive import (
    ARCHIVE_SUFFIX,
    ArchiveError,
    default_archive_dir,
    read_archive,
)
from sessiondex.transcripts.discover import MAIN, TranscriptFile
from sessiondex.transcripts.fspath import absolute

ARCHIVE_DIRS_KEY = "archive_dirs"
# sessions.archived: 0 live, 1 the newest archived version, 2 an older version.
NEWEST, SUPERSEDED = 1, 2


def archive_dirs(db: Database) -> list[Path]:
    """The archive dirs recorded in the index, in the order they were added, then the
    default one (``transcripts.archive.default_archive_dir``) when it exists: an index
    that is new, or was rebuilt after damage, has no record, and what ``archive``
    rescued there must stay findable and restorable."""
    recorded = _recorded_dirs(db)
    default = Path(os.path.abspath(default_archive_dir()))
    if default not in recorded and default.is_dir():
        recorded.append(default)
    return recorded


def _recorded_dirs(db: Database) -> list[Path]:
    raw = get_meta(db, ARCHIVE_DIRS_KEY)
    if not raw:
        return []
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return []
    return [Path(v) for v in value if isinstance(v, str)] if isinstance(value, list) else []


def add_archive_dir(db: Database, directory: Path) -> Path:
    """Remember ``directory`` (absolute) as an archive root; returns it."""
    path = Path(absolute(directory))
    current = _recorded_dirs(db)
    if path not in current:
        with immediate(db):
            keep_setting(
                db, ARCHIVE_DIRS_KEY, orjson.dumps([str(p) for p in [*current, path]]).decode()
            )
    return path


def iter_archives(directory: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """``<dir>/<key>/*.tar.gz`` regular files (no symlinks followed), sorted."""
    try:
        keys = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for key in keys:
        try:
            if not key.is_dir(follow_symlinks=False):
                continue
            entries = sorted(os.scandir(key.path), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.name.endswith(ARCHIVE_SUFFIX):
                continue
            try:
                st = os.lstat(entry.path)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                yield Path(entry.path), st


def _archive_unchanged(db: Database, path: str, st: os.stat_result) -> bool:
    stored = db.execute(
        "SELECT mtime_ns, inode, device FROM files WHERE path = ?", [path]
    ).fetchone()
    return stored is not None and tuple(stored) == (st.st_mtime_ns, st.st_ino, st.st_dev)


def ingest_archive(
    db: Database,
    archive: Path,
    directory: Path,
    stats: RefreshStats,
    *,
    include_tools: bool = False,
    st: os.stat_result | None = None,
) -> str:
    """Index one session archive (again, if it changed); returns new/unchanged/rewritten."""
    path = str(archive)
    stats.files_seen += 1
    try:
        st = st or os.lstat(archive)
    except OSError as exc:
        stats.errors.append((path, exc.strerror or str(exc)))
        return UNCHANGED
    if _archive_unchanged(db, path, st):  # a hint read without the lock: only to skip
        stats.unchanged += 1
        return UNCHANGED
    try:
        with immediate(db):
            stored = db.execute("SELECT 1 FROM files WHERE path = ?", [path]).fetchone()
            if stored is not None and _archive_unchanged(db, path, st):
                stats.unchanged += 1
                return UNCHANGED
            state = NEW if stored is None else REWRITTEN
            if stored is not None:
                remove_path(db, path)  # with its subagent rows: re-read from scratch
            session_rowid: int | None = None
            for item in read_archive(archive):
                if item.kind == MAIN:
                    if session_rowid is not None:
                        continue  # one session per archive
                    member_path = archive
                elif session_rowid is None:
                    continue  # a subagent before (or without) its main transcript
                else:
                    member_path = Path(f"{path}#{item.member}")
                tf = TranscriptFile(
                    member_path,
                    Path(directory),
                    item.project_key,
                    item.session_id,
                    item.kind,
                    item.agent_id,
                    item.size,
                    item.mtime_ns,
                    st.st_ino,
                    st.st_dev,
                )
                apply_tail(
                    db,
                    tf,
                    item.stream,
                    None,
                    NEW,
                    session_rowid,
                    stats,
                    include_tools,
                    time.time_ns(),
                )
                if item.kind == MAIN:
                    row = db.execute("SELECT id FROM files WHERE path = ?", [path]).fetchone()
                    session_rowid = row[0]
                    db.execute("UPDATE sessions SET archived = 1 WHERE id = ?", [session_rowid])
                    # Change detection keys on the archive file itself (write-once).
                    db.execute(
                        "UPDATE files SET mtime_ns = ?, inode = ?, device = ? WHERE id = ?",
                        [st.st_mtime_ns, st.st_ino, st.st_dev, session_rowid],
                    )
            if session_rowid is None:
                raise ArchiveError(f"{archive} holds no session transcript")
            (session_id,) = db.execute(
                "SELECT session_id FROM sessions WHERE id = ?", [session_rowid]
            ).fetchone()
            mark_newest(db, session_id)
    except ArchiveError as exc:
        stats.errors.append((path, str(exc)))
        # Changed and now unreadable: the rows of what it held are no copy any more
        # (kept, it counted as "already archived" and "protected" from the sweep).
        remove_path(db, path)
        return UNCHANGED
    setattr(stats, state, getattr(stats, state) + 1)
    return state


def mark_newest(db: Database, session_id: str) -> None:
    """Give exactly one archived row of ``session_id`` ``archived = 1``: the newest version
    (archived transcript's mtime, then size, then the later ingest); the rest ``2``."""
    newest = db.execute(
        "SELECT id FROM sessions WHERE session_id = ? AND archived != 0"
        " ORDER BY mtime_ns DESC, file_size DESC, id DESC LIMIT 1",
        [session_id],
    ).fetchone()
    if newest is None:
        return
    db.execute(
        "UPDATE sessions SET archived = CASE id WHEN ? THEN ? ELSE ? END"
        " WHERE session_id = ? AND archived != 0",
        [newest[0], NEWEST, SUPERSEDED, session_id],
    )


def refresh_archives(
    db: Database,
    stats: RefreshStats,
    *,
    include_tools: bool = False,
    directories: list[Path] | None = None,
) -> None:
    """Bring every recorded archive dir's rows up to date (new, changed, vanished)."""
    for directory in directories if directories is not None else archive_dirs(db):
        found = dict(iter_archives(directory))
        for path, session_id in db.execute(
            "SELECT path, session_id FROM files WHERE root = ? AND kind = 'main'",
            [str(directory)],
        ).fetchall():
            if Path(path) not in found and remove_path(db, path):
                stats.removed += 1
                mark_newest(db, session_id)  # an older version may be the newest now
        for archive, st in found.items():
            ingest_archive(db, archive, directory, stats, include_tools=include_tools, st=st)
