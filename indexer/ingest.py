"""One transcript → its rows in the index, by byte offset.

:func:`ingest_file` decides per file whether it is unchanged (a stat, no read), grown
(read only the new complete lines), or rewritten/shrunk/replaced (drop its rows and read
it again), and commits the file's rows together with its new offset, so a run killed at
any moment leaves an index the next run completes. Refresh orchestration (which files,
in what order, commit grouping) is :mod:`.refresh`.

Several processes ingest the same files at once (``watch``, ``index``, a reading
command's refresh, a mutation syncing the file it wrote). The stored row a decision
rests on is therefore read inside the write transaction that applies it
(:func:`~sessiondex.indexer.meta.immediate`): a row read before the lock may be stale
by the time we write (then a new file is inserted twice, or a grown tail is applied
twice). A row read *outside* the lock is only ever used to skip a file whose stat
still matches it, which is safe. Message rows are unique per (file, line offset), so
a duplicate is impossible even for a caller that gets this wrong.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import orjson
from sqlite_utils import Database

from sessiondex.indexer.derive import SessionState
from sessiondex.indexer.meta import get_meta, immediate
from sessiondex.indexer.objects import build_object, pr_row, store_objects
from sessiondex.indexer.parse import (
    ParsedTail,
    fingerprint,
    known_crc,
    parse_tail,
    same_prefix,
)
from sessiondex.indexer.shape import settled_at, stat_unchanged
from sessiondex.indexer.stats import GROWN, NEW, REWRITTEN, UNCHANGED, RefreshStats
from sessiondex.indexer.textstore import current_dictionary, packer
from sessiondex.transcripts.discover import (
    MAIN,
    TranscriptFile,
    archived_in_picker,
    open_regular,
    picker_archive_stamp,
)
from sessiondex.transcripts.pr_urls import PullRequest


def include_tools_setting(db: Database) -> bool:
    return get_meta(db, "include_tools") == "1"


def _delete_file_rows(db: Database, file_id: int) -> None:
    db.execute("DELETE FROM messages WHERE file_id = ?", [file_id])
    db.execute("DELETE FROM pr_mentions WHERE file_id = ?", [file_id])


def _delete_session(db: Database, session_rowid: int) -> None:
    for table in ("messages", "pr_mentions", "pr_links", "branches"):
        db.execute(f"DELETE FROM {table} WHERE session_rowid = ?", [session_rowid])
    db.execute("DELETE FROM sessions WHERE id = ?", [session_rowid])
    db.execute("DELETE FROM files WHERE session_rowid = ? AND kind != 'main'", [session_rowid])


def remove_path(db: Database, path: str) -> bool:
    """Forget a transcript that no longer exists (with its subagents, for a main file)."""
    if db.execute("SELECT 1 FROM files WHERE path = ?", [path]).fetchone() is None:
        return False  # nothing to forget: no need to wait for the write turn
    with immediate(db):
        row = db.execute("SELECT id, kind FROM files WHERE path = ?", [path]).fetchone()
        if row is None:
            return False  # forgotten meanwhile by another process
        file_id, kind = row
        if kind == MAIN:
            _delete_session(db, file_id)
        else:
            _delete_file_rows(db, file_id)
        db.execute("DELETE FROM files WHERE id = ?", [file_id])
    return True


def stored_file(db: Database, path: str) -> dict[str, Any] | None:
    cursor = db.execute("SELECT * FROM files WHERE path = ?", [path])
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip([d[0] for d in cursor.description], row))


def _session_row(db: Database, session_rowid: int) -> dict[str, Any] | None:
    cursor = db.execute("SELECT * FROM sessions WHERE id = ?", [session_rowid])
    row = cursor.fetchone()
    return None if row is None else dict(zip([d[0] for d in cursor.description], row))


def derived_texts(
    branches: list[str], links: Iterable[tuple[str, int, str | None]]
) -> tuple[str | None, str | None]:
    """``branches_text`` and ``pr_text``: what the session search indexes of its branches
    and PR links ("PR #12 owner/repo" as the picker's search matches it, beside the URL)."""
    pr_text = " ".join(f"{u} PR #{n} {r or ''}".strip() for u, n, r in links) or None
    return " ".join(branches) or None, pr_text


# The most of a file read in one pass: a transcript of hundreds of MB is read in
# slices, each applied as an append is, so that its parsed text is never held whole
# (one 200 MB transcript of prose peaked at 653 MB read at once).
SLICE_BYTES = 16 << 20


def read_in_one_pass(size: int) -> bool:
    """Whether a file of ``size`` bytes is read whole (else a slice at a time, here): a
    cold build's parsing process and its dictionary samples take only such files."""
    return size <= SLICE_BYTES


# A plain INSERT: the unique (file_id, line_offset) index turns a double ingest into an
# error that rolls the file back (and is retried), never into duplicate rows.
_MESSAGE_INSERT = (
    "INSERT INTO messages (session_rowid, file_id, uuid, type, ts_ms, body, line_offset)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _message_rows(
    db: Database, session_rowid: int, file_id: int, parsed: ParsedTail
) -> list[tuple[Any, ...]]:
    """``parsed``'s messages as ``_MESSAGE_INSERT`` rows, each text stored as its body
    (compressed here, against the index's dictionary, unless the parsing process already
    did it)."""
    if parsed.encoded or not parsed.messages:
        return [(session_rowid, file_id, *m) for m in parsed.messages]
    encode = packer(current_dictionary(db.conn)).encode
    return [
        (session_rowid, file_id, uuid, kind, ts, encode(str(text)), offset)
        for uuid, kind, ts, text, offset in parsed.messages
    ]


def _write_session_search(db: Database, session_rowid: int) -> None:
    """Refresh the session's searchable branch and PR texts from its link/branch tables
    (the triggers on ``sessions`` re-index the session when they or another searchable
    column changed)."""
    stored = db.execute(
        "SELECT branches_text, pr_text FROM sessions WHERE id = ?", [session_rowid]
    ).fetchone()
    if stored is None:
        return
    branches = [
        r[0]
        for r in db.execute(
            "SELECT branch FROM branches WHERE session_rowid = ? ORDER BY id", [session_rowid]
        )
    ]
    links = db.execute(
        "SELECT url, number, repository FROM pr_links WHERE session_rowid = ? ORDER BY id",
        [session_rowid],
    ).fetchall()
    texts = derived_texts(branches, links)
    if texts != tuple(stored):
        db.execute(
            "UPDATE sessions SET branches_text = ?, pr_text = ? WHERE id = ?",
            [*texts, session_rowid],
        )


def _write_new_session(
    db: Database, tf: TranscriptFile, parsed: ParsedTail, stats: RefreshStats, checked_ns: int
) -> None:
    """A main transcript seen for the first time: every row is known from the parse, so
    it is written without reading anything back (8 statements instead of ~22; most of
    a cold build's database time). Its rows equal what the general path writes, which
    the incremental == rebuild tests check."""
    state = parsed.state
    assert state is not None
    problems = parsed.problems
    cursor = db.execute(
        "INSERT INTO files (path, root, project_key, session_id, kind, agent_id, size,"
        " mtime_ns, inode, device, consumed, fingerprint, bad_lines, problems, checked_ns,"
        " scanned, ctime_ns) VALUES (?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            str(tf.path),
            str(tf.root),
            tf.project_key,
            tf.session_id,
            tf.kind,
            tf.size,
            tf.mtime_ns,
            tf.inode,
            tf.device,
            parsed.consumed,
            parsed.fingerprint,
            sum(problems.values()),
            orjson.dumps(dict(problems)).decode() if problems else None,
            checked_ns,
            parsed.scanned,
            tf.ctime_ns,
        ],
    )
    rowid = cursor.lastrowid
    assert rowid is not None
    db.execute("UPDATE files SET session_rowid = ? WHERE id = ?", [rowid, rowid])
    links = [pr_row(p) for p in state.new_pr_links]
    first_seen: dict[str, tuple[str, int, str, str, str]] = {}
    for p in parsed.mentions:
        first_seen.setdefault(p.url, pr_row(p))
    mentions = list(first_seen.values())
    row = state.index_columns()
    row.update(
        id=rowid,
        root=str(tf.root),
        project_key=tf.project_key,
        session_id=tf.session_id,
        file_path=str(tf.path),
        archived=0,
        mtime_ns=tf.mtime_ns,
        file_size=tf.size,
    )
    row["branches_text"], row["pr_text"] = derived_texts(
        state.new_branches, [(u, n, r) for u, n, r, _, _ in links]
    )
    row["object_json"] = orjson.dumps(
        build_object(row, list(state.new_branches), links, mentions)
    ).decode()
    db.execute(
        f"INSERT INTO sessions ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
        list(row.values()),
    )
    db.conn.executemany(_MESSAGE_INSERT, _message_rows(db, rowid, rowid, parsed))
    db.conn.executemany(
        "INSERT INTO branches (session_rowid, branch) VALUES (?, ?)",
        [(rowid, b) for b in state.new_branches],
    )
    _insert_prs(db, "pr_links", rowid, rowid, state.new_pr_links)
    _insert_prs(db, "pr_mentions", rowid, rowid, parsed.mentions)
    stats.bytes_read += parsed.bytes_read
    stats.messages += len(parsed.messages)
    stats.bad_lines += sum(problems.values())
    stats.problems.update(problems)


def _insert_prs(
    db: Database, table: str, session_rowid: int, file_id: int, prs: Iterable[PullRequest]
) -> None:
    db.conn.executemany(
        f"INSERT OR IGNORE INTO {table} (session_rowid, file_id, url, number, repository,"
        " host, provider) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(session_rowid, file_id, *pr_row(p)) for p in prs],
    )


def _unread(stats: RefreshStats, path: str, exc: OSError) -> None:
    """A file that could not be read: reported, unless it is gone. A transcript deleted
    since discovery (Claude Code's sweep, a delete, a session moved) is no problem of
    the file's: the next refresh forgets its rows, as for one deleted before it (a
    warning for each was noise under churn: helper 90)."""
    if not isinstance(exc, FileNotFoundError):
        stats.errors.append((path, exc.strerror or str(exc)))


def classify_change(stored: dict[str, Any] | None, tf: TranscriptFile, stream: Any) -> str:
    """How the file open as ``stream`` (``tf``: its stat now) changed since it was read
    as ``stored`` says (its ``files`` row: size, mtime_ns, ctime_ns, inode, device,
    consumed, fingerprint, checked_ns): NEW, UNCHANGED, GROWN (only appended to: the
    bytes ``[0, consumed)`` are as they were, so reading on from there is enough) or
    REWRITTEN. The one rule for "append or rewrite"; the web's session page uses it too
    (``render.conversation.grown_conversation``)."""
    if stored is None:
        return NEW
    if (stored["inode"], stored["device"]) != (tf.inode, tf.device):
        return REWRITTEN
    if tf.size < stored["consumed"]:
        return REWRITTEN
    if not same_prefix(stored["fingerprint"], fingerprint(stream, stored["consumed"])):
        return REWRITTEN
    if tf.size > stored["consumed"] and _glued_onto_whole_tail(stream, stored["consumed"]):
        return REWRITTEN
    if tf.size == stored["size"]:
        if tf.mtime_ns != stored["mtime_ns"]:
            # Same size, a new mtime: bytes may have been changed in place anywhere (an
            # editor, a script fixing a title of the same length), not only where the
            # fingerprint looks. Claude Code's own writes change the size, so this is
            # rare, and reading the file again is the only sure answer.
            return REWRITTEN
        if stored["consumed"] < tf.size and stored.get("ctime_ns") not in (None, tf.ctime_ns):
            # Same size and mtime, but the change time moved (touch -r or cp -p over an
            # edit): the CRC vouches for the prefix, nothing for the unfinished line
            # after it, which an edit in place may have completed (a crashed write fixed
            # by hand). Read again: a same-stat change is rare, and this is sure.
            return REWRITTEN
        if stored["consumed"] < tf.size and not settled_at(
            stored["mtime_ns"], stored["checked_ns"]
        ):
            return GROWN  # a racy re-check of a line without "\n": is it whole now?
        return UNCHANGED  # a racy re-check: same stat, verified by the fingerprint
    return GROWN


def _glued_onto_whole_tail(stream: Any, consumed: int) -> bool:
    """Whether the last pass folded final bytes without ``\n`` as a record (a quiet
    file: ``parse_tail``'s ``quiet``) and the bytes since continue that line: a writer
    that appended without ending it first glued its record on. A rebuild reads the glued
    line as one bad line, so the file is read again from the start to answer the same."""
    if consumed <= 0:
        return False
    stream.seek(consumed - 1)
    around = stream.read(2)
    return len(around) == 2 and around[0:1] != b"\n" and around[1:2] != b"\n"


_UNKNOWN: dict[str, Any] = {}


def ingest_file(
    db: Database,
    tf: TranscriptFile,
    stats: RefreshStats,
    *,
    include_tools: bool = False,
    force: bool = False,
    stat_row: dict[str, Any] | None = _UNKNOWN,
) -> str:
    """Bring one transcript's rows up to date; returns what was found (new, grown, …).

    ``stat_row`` is the file's stored row when the caller already loaded it (refresh
    loads all rows in one query, so a no-change pass costs a stat and no query per file);
    ``None`` means the file is not in the index yet. Either way it only decides whether
    the file can be skipped: anything else is decided again under the write lock.
    """
    stats.files_seen += 1
    path = str(tf.path)
    hint = stored_file(db, path) if stat_row is _UNKNOWN else stat_row
    if hint is not None and not force and stat_unchanged(hint, tf):
        stats.unchanged += 1
        return UNCHANGED
    with immediate(db):
        found, more = _ingest_locked(db, tf, stats, include_tools, force)
    # The rest of a big file, each slice as an append is read; bounded, should the file
    # be rewritten again and again meanwhile (the next refresh reads on from there).
    passes = 2 * (tf.size // SLICE_BYTES) + 4
    while more and passes:
        passes -= 1
        with immediate(db):
            _, more = _ingest_locked(db, tf, stats, include_tools, False, count=False)
    return found


def _read_picker_archive(db: Database, path: str) -> None:
    """Set a session row just written anew from its ``archived.json`` as it is now. Most
    sessions have none: the new row's flag is already 0, and only a stamp kept from an
    earlier reading is cleared (no savepoint, no read: a cold build does this per file)."""
    stamp = picker_archive_stamp(path)
    if stamp is None:
        db.execute(
            "UPDATE files SET picker_archive = NULL WHERE path = ? AND picker_archive IS NOT NULL",
            [path],
        )
        return
    follow_picker_archive(db, path, stamp, None, reread=True)


def sync_picker_archive(db: Database, path: str, stamp: str | None) -> None:
    """:func:`follow_picker_archive` with the stamp last read taken from the index: for
    the watcher's per-path ingest (an event may be the sidecar's alone)."""
    row = db.execute("SELECT picker_archive FROM files WHERE path = ?", [path]).fetchone()
    if row is not None:
        follow_picker_archive(db, path, stamp, row[0])


def follow_picker_archive(
    db: Database, path: str, stamp: str | None, known: str | None, *, reread: bool = False
) -> bool:
    """Bring a main transcript's session up to date with its ``archived.json`` (Claude
    Code's picker archive), whose ``lstat`` is ``stamp`` now and was ``known`` when last
    read (``discover.picker_archive_stamp``): read it again only when that changed, or
    with ``reread`` (the session row was written anew, the flag with it). Whether it was
    read."""
    if stamp == known and not reread:
        return False
    archived = stamp is not None and archived_in_picker(path)
    with immediate(db):
        db.execute("UPDATE files SET picker_archive = ? WHERE path = ?", [stamp, path])
        db.execute(
            "UPDATE sessions SET picker_archived = ? WHERE file_path = ? AND archived = 0",
            [int(archived), path],
        )
    return True


def parent_file_id(db: Database, tf: TranscriptFile) -> int | None:
    """The ``files`` row id of a subagent transcript's main session file (its session
    rowid), or None while the main file is not indexed: an orphan waits for its parent."""
    row = db.execute(
        "SELECT id FROM files WHERE path = ? AND kind = 'main'", [str(tf.main_path)]
    ).fetchone()
    return None if row is None else int(row[0])


def _ingest_locked(
    db: Database,
    tf: TranscriptFile,
    stats: RefreshStats,
    include_tools: bool,
    force: bool,
    *,
    count: bool = True,
) -> tuple[str, bool]:
    """:func:`ingest_file` once the write transaction is open: the stored row read here
    is the one the write applies to. Returns what was found and whether bytes are left
    past the :data:`SLICE_BYTES` read (``count``: whether to count what was found)."""
    path = str(tf.path)
    stored = stored_file(db, path)
    if stored is not None and not force and stat_unchanged(stored, tf):
        if count:
            stats.unchanged += 1
        return UNCHANGED, False
    session_rowid: int | None = None
    if tf.kind != MAIN:
        session_rowid = parent_file_id(db, tf)
        if session_rowid is None:
            return UNCHANGED, False  # an orphan subagent: nothing to attach it to yet
    try:
        stream = open_regular(path)
    except OSError as exc:
        _unread(stats, path, exc)
        return UNCHANGED, False
    more = False
    try:
        try:
            checked_ns = time.time_ns()
            st = os.fstat(stream.fileno())
        except OSError as exc:
            _unread(stats, path, exc)
            return UNCHANGED, False
        tf = tf.restat(st)
        state_kind = NEW if force and stored is None else classify_change(stored, tf, stream)
        if force and stored is not None:
            state_kind = REWRITTEN
        if state_kind == UNCHANGED:
            assert stored is not None
            db.execute(
                "UPDATE files SET mtime_ns = ?, checked_ns = ?, ctime_ns = ? WHERE id = ?",
                [tf.mtime_ns, checked_ns, tf.ctime_ns, stored["id"]],
            )
            db.execute("UPDATE sessions SET mtime_ns = ? WHERE id = ?", [tf.mtime_ns, stored["id"]])
            if stored["kind"] == MAIN:
                store_objects(db, [stored["id"]])
            if count:
                stats.unchanged += 1
            return UNCHANGED, False
        # A big file is read a slice at a time: its rows say the file ends where the
        # slice does, so the next pass finds it grown and reads on (ingest_file's loop,
        # or the next refresh after a crash) and the rows equal those of one read.
        start = 0
        if state_kind == GROWN and stored is not None:
            start = max(stored["consumed"], stored["scanned"] or 0)
        if tf.size - start > SLICE_BYTES:
            tf = replace(tf, size=start + SLICE_BYTES)
            more = True
        # A savepoint: a read error half-way rolls back this file's rows, not the
        # caller's whole transaction (a refresh commits several files as one).
        with immediate(db):
            apply_tail(
                db,
                tf,
                stream,
                stored,
                state_kind,
                session_rowid,
                stats,
                include_tools,
                checked_ns,
                whole=not more,
            )
    except OSError as exc:
        _unread(stats, path, exc)
        return UNCHANGED, False
    finally:
        stream.close()
    if count:
        setattr(stats, state_kind, getattr(stats, state_kind) + 1)
    return state_kind, more


def _stored_problems(raw: Any) -> Counter[str]:
    """``files.problems`` as a Counter; a damaged value counts as none (the index is
    derived: a wrong count must not stop ingestion)."""
    try:
        value = orjson.loads(raw) if raw else {}
    except (orjson.JSONDecodeError, TypeError):
        return Counter()
    if not isinstance(value, dict):
        return Counter()
    return Counter({str(k): v for k, v in value.items() if isinstance(v, int)})


def apply_tail(
    db: Database,
    tf: TranscriptFile,
    stream: Any,
    stored: dict[str, Any] | None,
    state_kind: str,
    session_rowid: int | None,
    stats: RefreshStats,
    include_tools: bool,
    checked_ns: int,
    parsed: ParsedTail | None = None,
    *,
    whole: bool = True,
) -> None:
    """Apply one file's new lines inside the caller's transaction. ``parsed`` is the
    file already parsed from 0 (a new file); otherwise it is parsed here, up to
    ``tf.size`` (``whole``: that is the file's end, not a slice's, so final bytes
    without a newline may be a whole record: ``parse_tail``'s ``quiet``)."""
    path = str(tf.path)
    is_main = tf.kind == MAIN
    quiet = whole and settled_at(tf.mtime_ns, checked_ns)
    if stored is None and is_main:
        if parsed is None:
            parsed = parse_tail(
                stream,
                tf.size,
                0,
                SessionState(),
                set(),
                set(),
                include_tools,
                quiet=quiet,
            )
        _write_new_session(db, tf, parsed, stats, checked_ns)
        _read_picker_archive(db, path)
        return
    if stored is None:
        cursor = db.execute(
            "INSERT INTO files (path, root, project_key, session_id, kind, agent_id,"
            " session_rowid) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                path,
                str(tf.root),
                tf.project_key,
                tf.session_id,
                tf.kind,
                tf.agent_id,
                session_rowid,
            ],
        )
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
    problems: Counter[str] = (
        _stored_problems(stored["problems"]) if stored and state_kind == GROWN else Counter()
    )
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
                [session_rowid, str(tf.root), tf.project_key, tf.session_id, path],
            )
            # a row written anew: its picker archive too, whoever ingests the file
            _read_picker_archive(db, path)
    if parsed is None:
        state = None
        known_branches: set[str] = set()
        known_links: set[str] = set()
        if is_main:
            state = SessionState.from_row(row)
            known_branches = {
                r[0]
                for r in db.execute(
                    "SELECT branch FROM branches WHERE session_rowid = ?", [session_rowid]
                )
            }
            known_links = {
                r[0]
                for r in db.execute(
                    "SELECT url FROM pr_links WHERE session_rowid = ?", [session_rowid]
                )
            }
        grown = stored if stored is not None and state_kind == GROWN else None
        parsed = parse_tail(
            stream,
            tf.size,
            offset,
            state,
            known_branches,
            known_links,
            include_tools,
            grown["scanned"] if grown else 0,
            quiet=quiet,
            known=known_crc(grown["fingerprint"], offset) if grown else (0, 0),
        )
    db.conn.executemany(_MESSAGE_INSERT, _message_rows(db, session_rowid, file_id, parsed))
    problems.update(parsed.problems)
    bad_lines += sum(parsed.problems.values())
    stats.bytes_read += parsed.bytes_read
    stats.messages += len(parsed.messages)
    stats.bad_lines += sum(parsed.problems.values())
    stats.problems.update(parsed.problems)
    if parsed.mentions:
        _insert_prs(db, "pr_mentions", session_rowid, file_id, parsed.mentions)
    if is_main and parsed.state is not None:
        columns = parsed.state.index_columns()
        columns.update(mtime_ns=tf.mtime_ns, file_size=tf.size)
        assignments = ", ".join(f"{k} = ?" for k in columns)
        db.execute(
            f"UPDATE sessions SET {assignments} WHERE id = ?",
            list(columns.values()) + [session_rowid],
        )
        if parsed.state.new_branches:
            db.conn.executemany(
                "INSERT OR IGNORE INTO branches (session_rowid, branch) VALUES (?, ?)",
                [(session_rowid, b) for b in parsed.state.new_branches],
            )
        if parsed.state.new_pr_links:
            _insert_prs(db, "pr_links", session_rowid, file_id, parsed.state.new_pr_links)
        _write_session_search(db, session_rowid)
    store_objects(db, [session_rowid])
    db.execute(
        "UPDATE files SET size = ?, mtime_ns = ?, inode = ?, device = ?, consumed = ?,"
        " fingerprint = ?, bad_lines = ?, problems = ?, session_rowid = ?, checked_ns = ?,"
        " scanned = ?, ctime_ns = ? WHERE id = ?",
        [
            tf.size,
            tf.mtime_ns,
            tf.inode,
            tf.device,
            parsed.consumed,
            parsed.fingerprint,
            bad_lines,
            orjson.dumps(dict(problems)).decode() if problems else None,
            session_rowid,
            checked_ns,
            parsed.scanned,
            tf.ctime_ns,
            file_id,
        ],
    )
