"""Every transcript under the config dirs → the index: ``index``, the refresh before
each reading command, and the watcher's per-event entry point (:func:`ingest_path`).

Per-file work is :mod:`.ingest`; this module picks the files, forgets vanished ones,
hands new files to the parsing process on a cold build (:mod:`.prefetch`), groups
commits, and sweeps the archive dirs.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from sessiondex.indexer import textstore
from sessiondex.indexer.archive_ingest import refresh_archives
from sessiondex.indexer.bulk import BulkFts
from sessiondex.indexer.db import IndexFromNewer, clear_index, release_space
from sessiondex.indexer.faults import classify
from sessiondex.indexer.ingest import (
    apply_tail,
    follow_picker_archive,
    include_tools_setting,
    ingest_file,
    parent_file_id,
    read_in_one_pass,
    remove_path,
    stored_file,
    sync_picker_archive,
)
from sessiondex.indexer.meta import get_meta, immediate, keep_setting, set_meta
from sessiondex.indexer.prefetch import Prefetched, Prefetcher, may_start_parser, parse_new_file
from sessiondex.indexer.shape import alias_stamp, stat_settled
from sessiondex.indexer.stats import NEW, UNCHANGED, ProgressCallback, RefreshStats
from sessiondex.indexer.textstore import current_dictionary, store_dictionary, train
from sessiondex.transcripts.discover import (
    MAIN,
    AliasFiles,
    Found,
    describe_path,
    iter_found,
    picker_archive_stamp,
    read_session_aliases,
    unseen_because,
)

# Below this many new bytes a second parsing process costs more than it saves.
PREFETCH_MIN_BYTES = 64 << 20
# How many new files a cold build samples to train its text dictionary.
DICTIONARY_SAMPLE_FILES = 64
# meta: the stored message bytes when training from the index last gave no dictionary.
TRAIN_FAILED_KEY = "text_dict_failed_at"


def train_dictionary(db: Database, new_files: list[Found], include_tools: bool) -> bytes | None:
    """Train and store the dictionary a cold build compresses message text against, on
    the texts of up to ``DICTIONARY_SAMPLE_FILES`` of the new files, spread over them
    (projects and years differ in vocabulary). It runs while the parsing process starts
    on the first files (:meth:`Prefetcher.use_dictionary`).

    ~0.2 s on the 440 MB bench corpora, once. A history with too little text to train
    one (``textstore.MIN_SAMPLE_BYTES``; tool output is not message text without
    ``--tools``) stays without until :func:`train_from_index` finds enough
    (docs/index.md#message-text)."""
    samples = [found for found in new_files if read_in_one_pass(found.size)]
    if not samples:
        return None
    step = max(1, len(samples) // DICTIONARY_SAMPLE_FILES)

    def texts() -> Any:
        for found in samples[::step]:
            parsed = parse_new_file(found.file(), include_tools).parsed
            if parsed is not None:
                yield from (str(m[3]) for m in parsed.messages)

    dictionary = train(texts())
    _keep_dictionary(db, dictionary)
    return dictionary


def _keep_dictionary(db: Database, dictionary: bytes | None) -> None:
    if dictionary is not None:
        with immediate(db):
            store_dictionary(db.conn, dictionary)


def ingest_prefetched(
    db: Database,
    item: Prefetched,
    stats: RefreshStats,
    include_tools: bool,
    dictionary: bytes | None = None,
) -> str:
    """Write a new file parsed by the prefetcher (same rows as :func:`ingest_file`).

    ``dictionary``: the one the parsing process compressed against. It is stored (if
    missing) in the same transaction as the bodies that need it: an ``index --rebuild``
    in another process between two commit groups empties ``text_dicts``, and the
    bodies written after it would otherwise name a dictionary the index no longer has."""
    tf = item.tf
    stats.files_seen += 1
    if item.vanished:
        return UNCHANGED
    if item.error is not None:
        stats.errors.append((str(tf.path), item.error))
        return UNCHANGED
    assert item.parsed is not None
    with immediate(db):
        if stored_file(db, str(tf.path)) is not None:  # indexed meanwhile: the normal path
            stats.files_seen -= 1
            return ingest_file(db, tf, stats, include_tools=include_tools)
        session_rowid: int | None = None
        if tf.kind != MAIN:
            session_rowid = parent_file_id(db, tf)
            if session_rowid is None:
                return UNCHANGED
        if dictionary is not None and item.parsed.encoded:
            store_dictionary(db.conn, dictionary)
        apply_tail(
            db,
            tf,
            None,
            None,
            NEW,
            session_rowid,
            stats,
            include_tools,
            item.checked_ns,
            parsed=item.parsed,
        )
    stats.new += 1
    return NEW


class CommitGroup:
    """Several files' transactions committed as one (each file stays a savepoint).

    FTS5 flushes its pending terms into a new segment at every commit; one commit per
    small file makes a cold build spend most of its time merging segments. A group is
    still all-or-nothing for each file and its offset, so a killed run stays
    consistent; it is closed after ``GROUP_BYTES`` read or ``GROUP_SECONDS``, so
    readers see progress and other writers get their turn (the group holds the write
    turn while open).
    """

    GROUP_BYTES = 64 << 20
    GROUP_SECONDS = 0.5

    def __init__(self, db: Database) -> None:
        self._db = db
        self._context: Any = None
        self._start_bytes = 0
        self._started = 0.0

    def after_file(self, bytes_read: int) -> None:
        if self._context is None:
            self._context = immediate(self._db)
            self._context.__enter__()
            self._start_bytes, self._started = bytes_read, time.perf_counter()
        elif (
            bytes_read - self._start_bytes >= self.GROUP_BYTES
            or time.perf_counter() - self._started >= self.GROUP_SECONDS
        ):
            self.close()

    def close(self, error: BaseException | None = None) -> None:
        """Commit the open group, or roll it back when closing because of ``error``.
        (Not ``sys.exc_info()``: a refresh run from inside an ``except`` block, as after
        a damaged index was moved aside, would see that handled error and roll back.)"""
        if self._context is not None:
            context, self._context = self._context, None
            if error is None:
                context.__exit__(None, None, None)
            else:
                context.__exit__(type(error), error, error.__traceback__)


def file_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is one file's own failure (a record the derivation chokes on, a
    constraint), as opposed to the database's (busy, full, read-only, damaged), which
    stops the whole run: going on would only fail again on every file. So does an index
    a newer sessiondex took meanwhile (:class:`IndexFromNewer`)."""
    if isinstance(exc, IndexFromNewer):
        return False
    if isinstance(exc, sqlite3.IntegrityError):
        return True
    if isinstance(exc, sqlite3.Error):
        return classify(exc) is None and not isinstance(exc, sqlite3.OperationalError)
    return isinstance(exc, Exception) and not isinstance(exc, (MemoryError, RecursionError))


def _indexed_bytes(db: Database) -> int:
    return int(db.execute("SELECT coalesce(sum(size), 0) FROM files").fetchone()[0])


def refresh(
    db: Database,
    roots: list[Path],
    *,
    rebuild: bool = False,
    progress: ProgressCallback | None = None,
    include_tools: bool | None = None,
) -> RefreshStats:
    """Bring the index up to date with every transcript under ``roots``."""
    started = time.perf_counter()
    stats = RefreshStats()
    cleared = rebuild
    if rebuild:
        clear_index(db)
        release_space(db)  # and a file of older, smaller pages gets PAGE_SIZE ones
    if include_tools is not None and include_tools != include_tools_setting(db):
        cleared = True
        with immediate(db):
            clear_index(db)
            keep_setting(db, "include_tools", "1" if include_tools else "0")
    tools = include_tools_setting(db)
    found_files: list[Found] = []
    unlisted: dict[str, str] = {}
    aliases: AliasFiles = {}
    for root in roots:
        found_files.extend(
            iter_found(root, skipped=stats.problems, unlisted=unlisted, aliases=aliases)
        )
    seen = {found.path for found in found_files}
    kept = (
        "its sessions are left out of this rebuild until it can be read"
        if cleared
        else "what the index holds from it is kept"
    )
    for folder, reason in unlisted.items():
        stats.errors.append((folder, f"cannot list it ({reason}); {kept}"))
    # Transcripts in a directory that cannot be listed are unseen, not deleted (a
    # restore or sync that left the wrong permissions): their rows stay until it can be.
    unseen = tuple(os.path.join(folder, "") for folder in unlisted)
    root_texts = [str(r) for r in roots]
    cursor = db.execute(
        "SELECT path, size, mtime_ns, inode, device, checked_ns, ctime_ns, picker_archive"
        f" FROM files WHERE root IN ({', '.join('?' for _ in roots)}) ORDER BY kind DESC",
        root_texts,
    )
    names = [d[0] for d in cursor.description]
    known = {row[0]: dict(zip(names, row)) for row in cursor.fetchall()}
    for path in known:
        if path not in seen and not path.startswith(unseen) and remove_path(db, path):
            stats.removed += 1
    forget_vanished_roots(db, roots, stats)
    sync_session_aliases(db, roots, aliases, unseen, stats)
    group = CommitGroup(db)
    # Known files in discovery order, then the new ones oldest first (only they get new
    # rowids; sorting every file would tax each no-change refresh).
    new_files = oldest_first([found for found in found_files if found.path not in known])
    files = [found for found in found_files if found.path in known] + new_files
    new_bytes = sum(found.size for found in new_files)
    big = new_bytes >= PREFETCH_MIN_BYTES
    prefetcher = None
    if big:
        dictionary = current_dictionary(db.conn)
        if may_start_parser():
            # A file bigger than a slice is read here, a slice at a time (ingest_file).
            prefetcher = Prefetcher(
                [f for f in new_files if read_in_one_pass(f.size)], tools, dictionary
            )
            if dictionary is None:
                prefetcher.use_dictionary(train_dictionary(db, new_files, tools))
        elif dictionary is None:  # parsed here: the ingest compresses against it
            train_dictionary(db, new_files, tools)
    # Rebuilding FTS costs the whole index's text: worth it only when most is new.
    bulk = BulkFts(db) if big and new_bytes >= _indexed_bytes(db) else contextlib.nullcontext()
    failure: BaseException | None = None
    no_ctime: list[tuple[int | None, str]] = []  # rows of an older index, unchanged
    try:
        bulk.__enter__()
        for done, found in enumerate(files, 1):
            stat_row = known.get(found.path)
            if stat_row is not None and stat_settled(
                (
                    stat_row["size"],
                    stat_row["mtime_ns"],
                    stat_row["inode"],
                    stat_row["device"],
                    stat_row["checked_ns"],
                    stat_row["ctime_ns"],
                ),
                found.size,
                found.mtime_ns,
                found.inode,
                found.device,
                found.ctime_ns,
            ):
                if stat_row["ctime_ns"] is None:
                    no_ctime.append((found.ctime_ns, found.path))
                stats.files_seen += 1
                stats.unchanged += 1
                if found.kind == MAIN and found.picker_archive != stat_row["picker_archive"]:
                    stats.picker_archives += follow_picker_archive(
                        db, found.path, found.picker_archive, stat_row["picker_archive"]
                    )
                if progress is not None:
                    progress(done, len(files))
                continue
            tf = found.file()
            try:
                if prefetcher is not None and stat_row is None and read_in_one_pass(found.size):
                    ingest_prefetched(db, prefetcher.take(tf), stats, tools, prefetcher.dictionary)
                else:
                    ingest_file(db, tf, stats, include_tools=tools, stat_row=stat_row)
                if (  # changed with its transcript (a new row read it already)
                    found.kind == MAIN
                    and stat_row is not None
                    and found.picker_archive != stat_row["picker_archive"]
                ):
                    sync_picker_archive(db, found.path, found.picker_archive)
            except Exception as exc:
                if not file_failure(exc):
                    raise
                # This file's savepoint is rolled back; the others go on, and the next
                # refresh tries it again.
                stats.errors.append((str(tf.path), f"{type(exc).__name__}: {exc}"))
            group.after_file(stats.bytes_read)
            if progress is not None:
                progress(done, len(files))
        fill_ctimes(db, no_ctime)
    except BaseException as exc:
        failure = exc
        raise
    finally:
        if prefetcher is not None:
            prefetcher.close()
        group.close(failure)
        bulk.__exit__(None, None, None)  # restores the FTS triggers either way
    if stats.messages and not big:
        train_from_index(db)
    refresh_archives(db, stats, include_tools=tools)  # dirs written by cleanup --archive
    # the sessions of the config dirs refreshed (one index may hold others': the
    # default index is shared), as ``stats`` counts them, archived copies aside, and
    # a session copied into two of them (a live dir and its backup) once
    marks = ", ".join("?" for _ in roots)
    stats.sessions = db.execute(
        f"SELECT count(DISTINCT session_id) FROM sessions WHERE archived = 0 AND root IN ({marks})",
        [str(r) for r in roots],
    ).fetchone()[0]
    with immediate(db):
        set_meta(db, "last_refresh", str(time.time()))
    stats.seconds = time.perf_counter() - started
    return stats


def fill_ctimes(db: Database, rows: list[tuple[int | None, str]]) -> None:
    """Store the change time of unchanged files whose rows were written before it was
    kept (schema m013), once: from then on a same-size edit with its mtime set back is
    seen (``shape.stat_settled``)."""
    if rows:
        with immediate(db):
            db.conn.executemany(
                "UPDATE files SET ctime_ns = ? WHERE path = ? AND ctime_ns IS NULL", rows
            )


def forget_vanished_roots(db: Database, roots: list[Path], stats: RefreshStats) -> None:
    """Forget the sessions of a config dir (or archive dir) that no longer exists, though
    this refresh was not asked about it: one database may hold several roots (a
    repeated --config-dir), and rows of a deleted one were listed and found by search
    forever while ``show`` could not open them. A root that exists but is not asked
    about keeps its rows (the database is shared by design); a dir on a drive that is
    not mounted now is indexed again when it is back (the index is derived)."""
    asked = {str(root) for root in roots}
    gone = [
        root
        for (root,) in db.execute("SELECT DISTINCT root FROM files").fetchall()
        if root not in asked and not os.path.isdir(root)
    ]
    for root in gone:
        paths = db.execute(
            "SELECT path FROM files WHERE root = ? ORDER BY kind DESC", [root]
        ).fetchall()
        for (path,) in paths:
            if remove_path(db, path):
                stats.removed += 1


def sync_session_aliases(
    db: Database, roots: list[Path], seen: AliasFiles, unseen: tuple[str, ...], stats: RefreshStats
) -> None:
    """Bring ``session_aliases`` up to date with the ``.session-aliases`` files the walk
    ``seen`` in ``roots``: each new or changed one read (a few lines), each gone one
    forgotten (not one in a directory that cannot be listed: ``unseen``), and those of a
    config dir that no longer exists (as :func:`forget_vanished_roots`). One that cannot
    be read is kept with no alias and reported; it is read again once it changes."""
    texts = [str(r) for r in roots]
    marks = ", ".join("?" for _ in texts)
    stored = {
        str(path): (size, mtime_ns, inode, ctime_ns)
        for path, size, mtime_ns, inode, ctime_ns in db.execute(
            "SELECT path, size, mtime_ns, inode, ctime_ns FROM session_aliases"
            f" WHERE root IN ({marks})",
            texts,
        ).fetchall()
    }
    gone = [p for p in stored if p not in seen and not p.startswith(unseen)]
    gone_roots = [
        root
        for (root,) in db.execute(
            f"SELECT DISTINCT root FROM session_aliases WHERE root NOT IN ({marks})", texts
        ).fetchall()
        if not os.path.isdir(root)
    ]
    changed = {p: st for p, st in seen.items() if stored.get(p) != alias_stamp(st)}
    if not (gone or gone_roots or changed):
        return
    read: dict[str, list[str]] = {}
    for path in changed:
        try:
            read[path] = read_session_aliases(path)
        except (OSError, ValueError) as exc:
            read[path] = []
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            stats.errors.append((path, f"cannot read it ({why}); no alias dir taken from it"))
    with immediate(db):
        for path in gone:
            db.execute("DELETE FROM session_aliases WHERE path = ?", [path])
        for root in gone_roots:
            db.execute("DELETE FROM session_aliases WHERE root = ?", [root])
        for path, st in changed.items():
            root = next(t for t in texts if path.startswith(os.path.join(t, "projects", "")))
            key = os.path.basename(os.path.dirname(path))
            db.execute(
                "INSERT INTO session_aliases"
                " (path, root, project_key, size, mtime_ns, inode, ctime_ns, aliases)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET"
                " root = excluded.root, project_key = excluded.project_key,"
                " size = excluded.size, mtime_ns = excluded.mtime_ns, inode = excluded.inode,"
                " ctime_ns = excluded.ctime_ns, aliases = excluded.aliases",
                [path, root, key, *alias_stamp(st), "\n".join(read[path])],
            )


def oldest_first(files: list[Found]) -> list[Found]:
    """Transcripts in the order of their sessions' last write, oldest first, each main
    transcript still followed by its subagents (``iter_found``'s units). A subagent
    listed without its main (the main is indexed already) joins the unit before it: it
    needs only its main's row, which exists.

    New rows get growing rowids, so a cold build in this order numbers the messages as
    the appends of a live index would: the newest conversations get the highest rowids,
    which is what the picker's newest-first answer to a common word walks
    (``query/search.py`` ``_newest_message_hits``)."""
    units: list[list[Found]] = []
    for found in files:
        if found.kind == MAIN or not units:
            units.append([found])
        else:
            units[-1].append(found)
    units.sort(key=lambda unit: (unit[0].mtime_ns, unit[0].path))
    return [found for unit in units for found in unit]


def train_from_index(db: Database) -> None:
    """Train the index's dictionary from its own newest messages, once it holds enough
    text and has none: an index that grew by small refreshes and appends (a history
    under the cold build's 64 MB, or a watcher running since the index was new) would
    otherwise never get one. Bodies already stored stay as they are (they read the
    same); new ones are compressed against it."""
    if current_dictionary(db.conn) is not None:
        return
    (stored,) = db.execute("SELECT coalesce(sum(length(body)), 0) FROM messages").fetchone()
    if stored < textstore.MIN_SAMPLE_BYTES:  # compressed bytes: the text is at least this much
        return
    # A sample Zstandard cannot train on (a few huge tool outputs) is tried again only
    # once the index holds twice the text: not at every refresh that adds a message.
    failed_at = int(get_meta(db, TRAIN_FAILED_KEY) or 0)
    if failed_at and stored < 2 * failed_at:
        return
    cursor = db.execute("SELECT text FROM message_text ORDER BY id DESC")
    texts: list[str] = []
    total = 0
    try:
        for (text,) in cursor:  # a row at a time: with --tools a text can be megabytes
            if text:
                texts.append(text)
                total += len(text)
                if total >= textstore.MAX_SAMPLE_BYTES:
                    break
    finally:
        cursor.close()
    dictionary = train(texts)
    if dictionary is None:
        with immediate(db):
            set_meta(db, TRAIN_FAILED_KEY, str(stored))
    _keep_dictionary(db, dictionary)


def ingest_path(db: Database, path: str, roots: list[Path], stats: RefreshStats) -> str:
    """Bring one path up to date after a file-system event (the watcher's entry point):
    index it if it is a transcript, forget it if it vanished."""
    tf = describe_path(Path(path), roots)
    if tf is None:
        reason = unseen_because(path)
        if reason is not None:  # it may be there, in a dir we cannot enter: not gone
            stats.errors.append((path, f"cannot look at it ({reason}); its rows are kept"))
            return UNCHANGED
        if remove_path(db, os.path.abspath(path)):
            stats.removed += 1
            return "removed"
        return UNCHANGED
    if tf.kind != MAIN:
        main = describe_path(tf.main_path, roots)
        if main is not None:
            ingest_file(db, main, stats, include_tools=include_tools_setting(db))
        return ingest_file(db, tf, stats, include_tools=include_tools_setting(db))
    done = ingest_file(db, tf, stats, include_tools=include_tools_setting(db))
    # its archived.json may be what changed (watch maps an event on it here)
    sync_picker_archive(db, str(tf.path), picker_archive_stamp(str(tf.path)))
    return done
