"""Transcripts → index, by byte offset.

One code path serves ``index``, the cheap refresh before every reading command, and the
watcher: :func:`ingest_file` decides per file whether it is unchanged (a stat, no read),
grown (read only the new complete lines), or rewritten/shrunk/replaced (drop its rows and
read it again), and commits the file's rows together with its new offset, so a run killed
at any moment leaves an index the next run completes.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from sqlite_utils import Database

from sessiondex.indexer.bulk import BulkFts
from sessiondex.indexer.db import clear_index, get_meta, set_meta
from sessiondex.indexer.derive import SessionState, message_texts
from sessiondex.indexer.objects import build_object, store_objects
from sessiondex.indexer.schema import SESSION_FTS_COLUMNS
from sessiondex.indexer.text import fts_text
from sessiondex.transcripts.discover import MAIN, TranscriptFile, describe_path, iter_transcripts
from sessiondex.transcripts.pr_urls import PullRequest
from sessiondex.transcripts.reader import RecordReader, classify
from sessiondex.transcripts.records import timestamp_ms

FINGERPRINT_WINDOW = 4096
# File systems stamp mtimes with a coarse clock: a file rewritten within the same tick
# as our read keeps its size and mtime. Like git's "racy clean" check, a file whose
# mtime was that close to our stat is verified by fingerprint next time instead of
# being trusted (costs two small reads, only for files written in the last moments).
RACY_WINDOW_NS = 2_000_000_000
# Below this many new bytes a second parsing process costs more than it saves.
PREFETCH_MIN_BYTES = 64 << 20

NEW, GROWN, REWRITTEN, UNCHANGED = "new", "grown", "rewritten", "unchanged"


@dataclass
class RefreshStats:
    """What a refresh did; printed by ``index`` and returned to library callers."""

    files_seen: int = 0
    new: int = 0
    grown: int = 0
    rewritten: int = 0
    removed: int = 0
    unchanged: int = 0
    sessions: int = 0
    messages: int = 0
    bytes_read: int = 0
    bad_lines: int = 0
    problems: Counter[str] = field(default_factory=Counter)
    errors: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "files_seen": self.files_seen, "new": self.new, "grown": self.grown,
            "rewritten": self.rewritten, "removed": self.removed,
            "unchanged": self.unchanged, "sessions": self.sessions,
            "messages": self.messages, "bytes_read": self.bytes_read,
            "bad_lines": self.bad_lines, "problems": dict(sorted(self.problems.items())),
            "errors": [{"path": p, "error": e} for p, e in self.errors],
            "seconds": round(self.seconds, 3),
        }


ProgressCallback = Callable[[int, int], None]  # (files done, files total)


def include_tools_setting(db: Database) -> bool:
    return get_meta(db, "include_tools") == "1"


def _fingerprint(stream: Any, consumed: int) -> str:
    """Hash of the consumed prefix's first and last window: a rewrite or truncation
    under the offset changes it (almost surely) without re-reading the prefix."""
    digest = hashlib.blake2b(digest_size=16)
    stream.seek(0)
    digest.update(stream.read(min(FINGERPRINT_WINDOW, consumed)))
    start = max(0, consumed - FINGERPRINT_WINDOW)
    stream.seek(start)
    digest.update(stream.read(consumed - start))
    digest.update(str(consumed).encode())
    return digest.hexdigest()


def _delete_file_rows(db: Database, file_id: int) -> None:
    db.execute("DELETE FROM messages WHERE file_id = ?", [file_id])
    db.execute("DELETE FROM pr_mentions WHERE file_id = ?", [file_id])


def _delete_session(db: Database, session_rowid: int) -> None:
    for table in ("messages", "pr_mentions", "pr_links", "branches"):
        db.execute(f"DELETE FROM {table} WHERE session_rowid = ?", [session_rowid])
    db.execute("DELETE FROM session_search WHERE id = ?", [session_rowid])
    db.execute("DELETE FROM sessions WHERE id = ?", [session_rowid])
    db.execute("DELETE FROM files WHERE session_rowid = ? AND kind != 'main'", [session_rowid])


def remove_path(db: Database, path: str) -> bool:
    """Forget a transcript that no longer exists (with its subagents, for a main file)."""
    row = db.execute("SELECT id, kind FROM files WHERE path = ?", [path]).fetchone()
    if row is None:
        return False
    file_id, kind = row
    with db.atomic():
        if kind == MAIN:
            _delete_session(db, file_id)
        else:
            _delete_file_rows(db, file_id)
        db.execute("DELETE FROM files WHERE id = ?", [file_id])
    return True


def _stored(db: Database, path: str) -> dict[str, Any] | None:
    cursor = db.execute("SELECT * FROM files WHERE path = ?", [path])
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cursor.description], row))


def _session_row(db: Database, session_rowid: int) -> dict[str, Any] | None:
    cursor = db.execute("SELECT * FROM sessions WHERE id = ?", [session_rowid])
    row = cursor.fetchone()
    return None if row is None else dict(zip([d[0] for d in cursor.description], row))


def _derived_texts(branches: list[str], links: Iterable[tuple[str, int, str | None]]
                   ) -> tuple[str | None, str | None]:
    """``branches_text`` and ``pr_text``: what the session search indexes of its branches
    and PR links ("PR #12 owner/repo" as the picker's search matches it, beside the URL)."""
    pr_text = " ".join(f"{u} PR #{n} {r or ''}".strip() for u, n, r in links) or None
    return " ".join(branches) or None, pr_text


def _search_values(row: dict[str, Any]) -> list[str | None]:
    return [fts_text(row[c]) if isinstance(row.get(c), str) else None
            for c in SESSION_FTS_COLUMNS]


_SEARCH_INSERT = (f"INSERT INTO session_search (id, {', '.join(SESSION_FTS_COLUMNS)}) "
                  f"VALUES (?, {', '.join('?' for _ in SESSION_FTS_COLUMNS)})")


def _write_session_search(db: Database, session_rowid: int) -> None:
    """Refresh the session's FTS row from ``sessions`` and its link/branch tables."""
    row = _session_row(db, session_rowid)
    if row is None:
        return
    branches = [r[0] for r in db.execute(
        "SELECT branch FROM branches WHERE session_rowid = ? ORDER BY id", [session_rowid])]
    links = db.execute(
        "SELECT url, number, repository FROM pr_links WHERE session_rowid = ? ORDER BY id",
        [session_rowid]).fetchall()
    row["branches_text"], row["pr_text"] = _derived_texts(branches, links)
    values = _search_values(row)
    db.execute("UPDATE sessions SET branches_text = ?, pr_text = ? WHERE id = ?",
               [row["branches_text"], row["pr_text"], session_rowid])
    current = db.execute("SELECT * FROM session_search WHERE id = ?", [session_rowid]).fetchone()
    if current is not None and list(current[1:]) == values:
        return
    # DELETE then INSERT: REPLACE's implicit delete would not fire the FTS delete trigger.
    db.execute("DELETE FROM session_search WHERE id = ?", [session_rowid])
    db.execute(_SEARCH_INSERT, [session_rowid, *values])


def _write_new_session(db: Database, tf: TranscriptFile, parsed: ParsedTail,
                       stats: RefreshStats, checked_ns: int) -> None:
    """A main transcript seen for the first time: every row is known from the parse, so
    it is written without reading anything back (8 statements instead of ~22; most of
    a cold build's database time). Its rows equal what the general path writes, which
    the incremental == rebuild tests check."""
    state = parsed.state
    assert state is not None
    problems = parsed.problems
    cursor = db.execute(
        "INSERT INTO files (path, root, project_key, session_id, kind, agent_id, size,"
        " mtime_ns, inode, device, consumed, fingerprint, bad_lines, problems, checked_ns)"
        " VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [str(tf.path), str(tf.root), tf.project_key, tf.session_id, tf.kind, tf.size,
         tf.mtime_ns, tf.inode, tf.device, parsed.consumed, parsed.fingerprint,
         sum(problems.values()), orjson.dumps(dict(problems)).decode() if problems else None,
         checked_ns])
    rowid = cursor.lastrowid
    assert rowid is not None
    db.execute("UPDATE files SET session_rowid = ? WHERE id = ?", [rowid, rowid])
    links = [(p.url, p.number, p.repository, p.host, p.provider) for p in state.new_pr_links]
    first_seen: dict[str, tuple[str, int, str, str, str]] = {}
    for p in parsed.mentions:
        first_seen.setdefault(p.url, (p.url, p.number, p.repository, p.host, p.provider))
    mentions = list(first_seen.values())
    row = state.columns()
    row.update(id=rowid, root=str(tf.root), project_key=tf.project_key,
               session_id=tf.session_id, file_path=str(tf.path), archived=0,
               mtime_ns=tf.mtime_ns, file_size=tf.size)
    row["branches_text"], row["pr_text"] = _derived_texts(
        state.new_branches, [(u, n, r) for u, n, r, _, _ in links])
    row["object_json"] = orjson.dumps(
        build_object(row, list(state.new_branches), links, mentions)).decode()
    db.execute(f"INSERT INTO sessions ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
               list(row.values()))
    db.conn.executemany(
        "INSERT INTO messages (session_rowid, file_id, uuid, type, ts_ms, text)"
        " VALUES (?, ?, ?, ?, ?, ?)", [(rowid, rowid, *m) for m in parsed.messages])
    db.conn.executemany("INSERT INTO branches (session_rowid, branch) VALUES (?, ?)",
                        [(rowid, b) for b in state.new_branches])
    _insert_prs(db, "pr_links", rowid, rowid, state.new_pr_links)
    _insert_prs(db, "pr_mentions", rowid, rowid, parsed.mentions)
    db.execute(_SEARCH_INSERT, [rowid, *_search_values(row)])
    stats.bytes_read += parsed.bytes_read
    stats.messages += len(parsed.messages)
    stats.bad_lines += sum(problems.values())
    stats.problems.update(problems)


def _insert_prs(db: Database, table: str, session_rowid: int, file_id: int,
                prs: Iterable[PullRequest]) -> None:
    db.conn.executemany(
        f"INSERT OR IGNORE INTO {table} (session_rowid, file_id, url, number, repository,"
        " host, provider) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(session_rowid, file_id, p.url, p.number, p.repository, p.host, p.provider)
         for p in prs])


def _stat_unchanged(stored: dict[str, Any], tf: TranscriptFile) -> bool:
    """Same size, mtime and inode as when indexed, and not "racily" so."""
    return (stored["size"], stored["mtime_ns"], stored["inode"], stored["device"]) == (
        tf.size, tf.mtime_ns, tf.inode, tf.device) and (
        stored["mtime_ns"] < stored["checked_ns"] - RACY_WINDOW_NS)


def _classify(stored: dict[str, Any] | None, tf: TranscriptFile, stream: Any) -> str:
    if stored is None:
        return NEW
    if (stored["inode"], stored["device"]) != (tf.inode, tf.device):
        return REWRITTEN
    if tf.size < stored["consumed"]:
        return REWRITTEN
    if stored["fingerprint"] != _fingerprint(stream, stored["consumed"]):
        return REWRITTEN
    if tf.size == stored["size"]:
        return UNCHANGED  # verified by fingerprint: only the mtime moved
    return GROWN


_UNKNOWN: dict[str, Any] = {}


def ingest_file(db: Database, tf: TranscriptFile, stats: RefreshStats, *,
                include_tools: bool = False, force: bool = False,
                stat_row: dict[str, Any] | None = _UNKNOWN) -> str:
    """Bring one transcript's rows up to date; returns what was found (new, grown, …).

    ``stat_row`` is the file's stored row when the caller already loaded it (refresh
    loads all rows in one query, so a no-change pass costs a stat and no query per file);
    ``None`` means the file is not in the index yet.
    """
    stats.files_seen += 1
    path = str(tf.path)
    if stat_row is not _UNKNOWN and stat_row is not None and not force and _stat_unchanged(
            stat_row, tf):
        stats.unchanged += 1
        return UNCHANGED
    stored = _stored(db, path)
    if stored is not None and not force and _stat_unchanged(stored, tf):
        stats.unchanged += 1
        return UNCHANGED
    session_rowid: int | None = None
    if tf.kind != MAIN:
        parent = db.execute("SELECT id FROM files WHERE path = ? AND kind = 'main'",
                            [str(tf.main_path)]).fetchone()
        if parent is None:
            return UNCHANGED  # an orphan subagent: nothing to attach it to yet
        session_rowid = parent[0]
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed in finally
    except OSError as exc:
        stats.errors.append((path, exc.strerror or str(exc)))
        return UNCHANGED
    try:
        try:
            checked_ns = time.time_ns()
            st = os.fstat(stream.fileno())
        except OSError as exc:
            stats.errors.append((path, exc.strerror or str(exc)))
            return UNCHANGED
        tf = TranscriptFile(tf.path, tf.root, tf.project_key, tf.session_id, tf.kind,
                            tf.agent_id, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
        state_kind = NEW if force and stored is None else _classify(stored, tf, stream)
        if force and stored is not None:
            state_kind = REWRITTEN
        if state_kind == UNCHANGED:
            assert stored is not None
            with db.atomic():
                db.execute("UPDATE files SET mtime_ns = ?, checked_ns = ? WHERE id = ?",
                           [tf.mtime_ns, checked_ns, stored["id"]])
                db.execute("UPDATE sessions SET mtime_ns = ? WHERE id = ?",
                           [tf.mtime_ns, stored["id"]])
                if stored["kind"] == MAIN:
                    store_objects(db, [stored["id"]])
            stats.unchanged += 1
            return UNCHANGED
        with db.atomic():
            _ingest_locked(db, tf, stream, stored, state_kind, session_rowid, stats,
                           include_tools, checked_ns)
    except OSError as exc:
        stats.errors.append((path, exc.strerror or str(exc)))
        return UNCHANGED
    finally:
        stream.close()
    setattr(stats, state_kind, getattr(stats, state_kind) + 1)
    return state_kind


@dataclass
class ParsedTail:
    """What one pass over a file's new complete lines found; computed without the
    database, so a cold build can parse the next file while SQLite writes this one."""

    state: SessionState | None  # main transcripts only
    known_branches: set[str]
    known_links: set[str]
    messages: list[tuple[str | None, str, int | None, str]]  # uuid, type, ts_ms, fts text
    mentions: list[PullRequest]
    consumed: int
    fingerprint: str
    problems: Counter[str]
    bytes_read: int


def parse_tail(stream: Any, size: int, offset: int, state: SessionState | None,
               known_branches: set[str], known_links: set[str],
               include_tools: bool) -> ParsedTail:
    """Fold the complete lines from ``offset`` up to ``size`` (the stat taken before
    reading: later bytes wait for the next pass)."""
    reader = RecordReader(stream, offset, limit=size - offset)
    messages: list[tuple[str | None, str, int | None, str]] = []
    mentions: list[PullRequest] = []
    for _, line in reader.lines():
        record, problem = classify(line)
        if record is None:
            if problem is not None:
                reader.problems[problem] += 1
            continue
        if state is not None:
            state.apply(record, known_branches, known_links)
        kind = record.get("type")
        if kind != "user" and kind != "assistant":
            continue
        text, found = message_texts(record, include_tools=include_tools)
        mentions.extend(found)
        if text:
            uuid = record.get("uuid")
            messages.append((uuid if isinstance(uuid, str) else None, kind,
                             timestamp_ms(record), fts_text(text)))
    if state is not None:
        state.finish()
    consumed = reader.end_offset
    return ParsedTail(state, known_branches, known_links, messages, mentions, consumed,
                      _fingerprint(stream, consumed), reader.problems, reader.bytes_read)


def _ingest_locked(db: Database, tf: TranscriptFile, stream: Any,
                   stored: dict[str, Any] | None, state_kind: str,
                   session_rowid: int | None, stats: RefreshStats,
                   include_tools: bool, checked_ns: int,
                   parsed: ParsedTail | None = None) -> None:
    """Apply one file's new lines inside the caller's transaction. ``parsed`` is the
    file already parsed from 0 (a new file); otherwise it is parsed here."""
    path = str(tf.path)
    is_main = tf.kind == MAIN
    if stored is None and is_main:
        if parsed is None:
            parsed = parse_tail(stream, tf.size, 0, SessionState(), set(), set(),
                                include_tools)
        _write_new_session(db, tf, parsed, stats, checked_ns)
        return
    if stored is None:
        cursor = db.execute(
            "INSERT INTO files (path, root, project_key, session_id, kind, agent_id,"
            " session_rowid) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [path, str(tf.root), tf.project_key, tf.session_id, tf.kind, tf.agent_id,
             session_rowid])
        file_id = cursor.lastrowid
        assert file_id is not None
        offset = 0
    else:
        file_id = stored["id"]
        offset = stored["consumed"] if state_kind == GROWN else 0
    if is_main:
        session_rowid = file_id
        db.execute("UPDATE files SET session_rowid = ? WHERE id = ?", [file_id, file_id])
    assert session_rowid is not None
    bad_lines = stored["bad_lines"] if stored and state_kind == GROWN else 0
    problems: Counter[str] = Counter(
        orjson.loads(stored["problems"]) if stored and state_kind == GROWN and stored["problems"]
        else {})
    if state_kind == REWRITTEN:
        _delete_file_rows(db, file_id)
        if is_main:
            db.execute("DELETE FROM pr_links WHERE session_rowid = ?", [session_rowid])
            db.execute("DELETE FROM branches WHERE session_rowid = ?", [session_rowid])
            db.execute("DELETE FROM sessions WHERE id = ?", [session_rowid])
    if is_main:
        row = _session_row(db, session_rowid)
        if row is None:
            db.execute(
                "INSERT INTO sessions (id, root, project_key, session_id, file_path)"
                " VALUES (?, ?, ?, ?, ?)",
                [session_rowid, str(tf.root), tf.project_key, tf.session_id, path])
    if parsed is None:
        state = None
        known_branches: set[str] = set()
        known_links: set[str] = set()
        if is_main:
            state = SessionState.from_row(row)
            known_branches = {r[0] for r in db.execute(
                "SELECT branch FROM branches WHERE session_rowid = ?", [session_rowid])}
            known_links = {r[0] for r in db.execute(
                "SELECT url FROM pr_links WHERE session_rowid = ?", [session_rowid])}
        parsed = parse_tail(stream, tf.size, offset, state, known_branches, known_links,
                            include_tools)
    db.conn.executemany(
        "INSERT INTO messages (session_rowid, file_id, uuid, type, ts_ms, text)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(session_rowid, file_id, *message) for message in parsed.messages])
    problems.update(parsed.problems)
    bad_lines += sum(parsed.problems.values())
    stats.bytes_read += parsed.bytes_read
    stats.messages += len(parsed.messages)
    stats.bad_lines += sum(parsed.problems.values())
    stats.problems.update(parsed.problems)
    if parsed.mentions:
        _insert_prs(db, "pr_mentions", session_rowid, file_id, parsed.mentions)
    if is_main and parsed.state is not None:
        columns = parsed.state.columns()
        columns.update(mtime_ns=tf.mtime_ns, file_size=tf.size)
        assignments = ", ".join(f"{k} = ?" for k in columns)
        db.execute(f"UPDATE sessions SET {assignments} WHERE id = ?",
                   list(columns.values()) + [session_rowid])
        if parsed.state.new_branches:
            db.conn.executemany(
                "INSERT OR IGNORE INTO branches (session_rowid, branch) VALUES (?, ?)",
                [(session_rowid, b) for b in parsed.state.new_branches])
        if parsed.state.new_pr_links:
            _insert_prs(db, "pr_links", session_rowid, file_id, parsed.state.new_pr_links)
        _write_session_search(db, session_rowid)
    store_objects(db, [session_rowid])
    db.execute(
        "UPDATE files SET size = ?, mtime_ns = ?, inode = ?, device = ?, consumed = ?,"
        " fingerprint = ?, bad_lines = ?, problems = ?, session_rowid = ?, checked_ns = ?"
        " WHERE id = ?",
        [tf.size, tf.mtime_ns, tf.inode, tf.device, parsed.consumed, parsed.fingerprint,
         bad_lines, orjson.dumps(dict(problems)).decode() if problems else None,
         session_rowid, checked_ns, file_id])


@dataclass
class _Prefetched:
    tf: TranscriptFile
    checked_ns: int = 0
    parsed: ParsedTail | None = None
    error: str | None = None


def _exit_with_parent(parent: int) -> None:
    """Parsing worker's initializer: end the worker once its parent is gone.

    A parent killed with SIGKILL cannot shut the pool down, and the worker would wait
    on its call queue forever (it holds both ends of it), keeping the dead command's
    stdout/stderr open too.
    """
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _parse_new_file(tf: TranscriptFile, include_tools: bool) -> _Prefetched:
    path = str(tf.path)
    try:
        with open(path, "rb") as stream:
            checked_ns = time.time_ns()
            st = os.fstat(stream.fileno())
            tf = TranscriptFile(tf.path, tf.root, tf.project_key, tf.session_id, tf.kind,
                                tf.agent_id, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
            state = SessionState() if tf.kind == MAIN else None
            parsed = parse_tail(stream, tf.size, 0, state, set(), set(), include_tools)
    except OSError as exc:
        return _Prefetched(tf, error=exc.strerror or str(exc))
    return _Prefetched(tf, checked_ns, parsed)


class _Prefetcher:
    """Parses new files in a second process, in order, while this one writes.

    Parsing is pure Python and writing is mostly SQLite's FTS5 tokenizer; in one process
    the two fight over the GIL (a thread is slower than none), in two they overlap, so a
    cold build on two cores takes about the longer of the two instead of their sum.
    Only new files go this way: they need no stored state, so the parser never touches
    the database. At most ``WINDOW`` files are in flight, which bounds memory.
    """

    WINDOW = 16
    # Measured on two cores: a second parser is slower (the writer and one parser
    # already keep both busy).
    WORKERS = 1

    def __init__(self, files: list[TranscriptFile], include_tools: bool) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # fork starts the parser at once, but forking a process with other threads (the
        # watcher's) can copy a held lock into the child: then spawn a fresh interpreter.
        method = "fork" if (threading.active_count() == 1 and sys.platform == "linux") else "spawn"
        self._pool = ProcessPoolExecutor(max_workers=self.WORKERS,
                                         mp_context=multiprocessing.get_context(method),
                                         initializer=_exit_with_parent,
                                         initargs=(os.getpid(),))
        self._pending = iter(files)
        self._include_tools = include_tools
        self._futures: collections.deque[Any] = collections.deque()
        for _ in range(self.WINDOW):
            self._submit_next()

    def _submit_next(self) -> None:
        tf = next(self._pending, None)
        if tf is not None:
            self._futures.append(self._pool.submit(_parse_new_file, tf, self._include_tools))

    def take(self, tf: TranscriptFile) -> _Prefetched:
        item: _Prefetched = self._futures.popleft().result()
        self._submit_next()
        assert item.tf.path == tf.path, (item.tf.path, tf.path)
        return item

    def close(self) -> None:
        for future in self._futures:
            future.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)


def _ingest_prefetched(db: Database, item: _Prefetched, stats: RefreshStats,
                       include_tools: bool) -> str:
    """Write a new file parsed by the prefetcher (same rows as :func:`ingest_file`)."""
    tf = item.tf
    stats.files_seen += 1
    if item.error is not None:
        stats.errors.append((str(tf.path), item.error))
        return UNCHANGED
    assert item.parsed is not None
    if _stored(db, str(tf.path)) is not None:  # indexed meanwhile: take the normal path
        stats.files_seen -= 1
        return ingest_file(db, tf, stats, include_tools=include_tools)
    session_rowid: int | None = None
    if tf.kind != MAIN:
        parent = db.execute("SELECT id FROM files WHERE path = ? AND kind = 'main'",
                            [str(tf.main_path)]).fetchone()
        if parent is None:
            return UNCHANGED
        session_rowid = parent[0]
    with db.atomic():
        _ingest_locked(db, tf, None, None, NEW, session_rowid, stats, include_tools,
                       item.checked_ns, parsed=item.parsed)
    stats.new += 1
    return NEW


class _CommitGroup:
    """Several files' transactions committed as one (each file stays a savepoint).

    FTS5 flushes its pending terms into a new segment at every commit; one commit per
    small file makes a cold build spend most of its time merging segments. A group is
    still all-or-nothing for each file and its offset, so a killed run stays
    consistent; it is closed after ``GROUP_BYTES`` read or ``GROUP_SECONDS``, so
    readers see progress.
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
            self._context = self._db.atomic()
            self._context.__enter__()
            self._start_bytes, self._started = bytes_read, time.perf_counter()
        elif (bytes_read - self._start_bytes >= self.GROUP_BYTES
              or time.perf_counter() - self._started >= self.GROUP_SECONDS):
            self.close()

    def close(self) -> None:
        if self._context is not None:
            context, self._context = self._context, None
            context.__exit__(*sys.exc_info())


def _indexed_bytes(db: Database) -> int:
    return int(db.execute("SELECT coalesce(sum(size), 0) FROM files").fetchone()[0])


def refresh(db: Database, roots: list[Path], *, rebuild: bool = False,
            progress: ProgressCallback | None = None,
            include_tools: bool | None = None) -> RefreshStats:
    """Bring the index up to date with every transcript under ``roots``."""
    started = time.perf_counter()
    stats = RefreshStats()
    if rebuild:
        clear_index(db)
    if include_tools is not None and include_tools != include_tools_setting(db):
        clear_index(db)
        with db.atomic():
            set_meta(db, "include_tools", "1" if include_tools else "0")
    tools = include_tools_setting(db)
    files: list[TranscriptFile] = []
    for root in roots:
        files.extend(iter_transcripts(root, skipped=stats.problems))
    seen = {str(tf.path) for tf in files}
    root_texts = [str(r) for r in roots]
    cursor = db.execute(
        "SELECT path, size, mtime_ns, inode, device, checked_ns FROM files"
        f" WHERE root IN ({', '.join('?' for _ in roots)}) ORDER BY kind DESC", root_texts)
    names = [d[0] for d in cursor.description]
    known = {row[0]: dict(zip(names, row)) for row in cursor.fetchall()}
    for path in known:
        if path not in seen and remove_path(db, path):
            stats.removed += 1
    group = _CommitGroup(db)
    new_files = [tf for tf in files if str(tf.path) not in known]
    new_bytes = sum(tf.size for tf in new_files)
    big = new_bytes >= PREFETCH_MIN_BYTES
    prefetcher = _Prefetcher(new_files, tools) if big else None
    # Rebuilding FTS costs the whole index's text: worth it only when most is new.
    bulk = BulkFts(db) if big and new_bytes >= _indexed_bytes(db) else contextlib.nullcontext()
    try:
        bulk.__enter__()
        for done, tf in enumerate(files, 1):
            stat_row = known.get(str(tf.path))
            if prefetcher is not None and stat_row is None:
                _ingest_prefetched(db, prefetcher.take(tf), stats, tools)
            else:
                ingest_file(db, tf, stats, include_tools=tools, stat_row=stat_row)
            group.after_file(stats.bytes_read)
            if progress is not None:
                progress(done, len(files))
    finally:
        if prefetcher is not None:
            prefetcher.close()
        group.close()
        bulk.__exit__(*sys.exc_info())
    from sessiondex.indexer.archive_ingest import refresh_archives  # lazy: it imports this module

    refresh_archives(db, stats, include_tools=tools)  # dirs written by cleanup --archive
    stats.sessions = db.execute("SELECT count(*) FROM sessions").fetchone()[0]
    with db.atomic():
        set_meta(db, "last_refresh", str(time.time()))
    stats.seconds = time.perf_counter() - started
    return stats


def ingest_path(db: Database, path: str, roots: list[Path], stats: RefreshStats) -> str:
    """Bring one path up to date after a file-system event (the watcher's entry point):
    index it if it is a transcript, forget it if it vanished."""
    tf = describe_path(Path(path), roots)
    if tf is None:
        if remove_path(db, os.path.abspath(path)):
            stats.removed += 1
            return "removed"
        return UNCHANGED
    if tf.kind != MAIN:
        main = describe_path(tf.main_path, roots)
        if main is not None:
            ingest_file(db, main, stats, include_tools=include_tools_setting(db))
    return ingest_file(db, tf, stats, include_tools=include_tools_setting(db))
