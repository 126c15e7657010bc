"""Rename, tag, untag, fork and delete a session (docs/mutations.md).

Each mutation resolves its argument exactly as ``resolve`` does but for writing
(a transcript path must lie inside a configured ``projects/`` dir; an ambiguous
argument raises :class:`~query.resolve.Ambiguous` before anything is written), writes
through ``transcripts.write`` / ``transcripts.fork`` (the only code that changes
transcripts), then brings the index up to date for that one file, so the next query
sees the change even with ``--no-refresh`` or a watcher that has not caught up yet.
When the index cannot take it (a full disk, a read-only or failing index file) after
the transcript was written, the mutation still finishes (the title sidecar) and raises
:class:`IndexNotUpdated`, which says what was done: the index is derived and catches up
on its next refresh, so the change must not be reported as failed, nor tried again.

The records appended are byte-for-byte the ones ``claude_agent_sdk.rename_session`` and
``tag_session`` append (except that non-ASCII stays raw UTF-8, as the CLI writes it),
so Claude Code and the SDK read our changes and we read theirs. A rename and a fork also
write the name to ``<id>/custom-title.json``, as Claude Code does (its picker reads that
file when the record is not within a transcript's last 64 KiB).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.faults import BUSY, CANTOPEN, FULL, IO, READONLY, classify, describe
from sessiondex.indexer.ingest import remove_path
from sessiondex.indexer.meta import database_path
from sessiondex.indexer.refresh import ingest_path
from sessiondex.indexer.stats import RefreshStats
from sessiondex.query.resolve import NotFound, Resolution, resolve
from sessiondex.query.sessions import select_rows, to_object
from sessiondex.transcripts.discover import title_in_sidecar
from sessiondex.transcripts.fork import NothingToFork, fork_transcript
from sessiondex.transcripts.reader import without_lone_surrogates
from sessiondex.transcripts.tags import clean_name, clean_tag, sanitize_tag
from sessiondex.transcripts.windows import sdk_title_and_tag
from sessiondex.transcripts.write import (
    WriteRefused,
    append_record,
    delete_session_files,
    write_title_sidecar,
)

if TYPE_CHECKING:
    from sqlite_utils import Database


class MutationError(Exception):
    """An expected failure of a mutation (bad input, file gone, write refused)."""


class CannotFork(MutationError):
    """The fork request names nothing to copy (no messages, an unknown cut point): the
    request is wrong, not the disk, so SDK-style callers get a ``ValueError``."""


@dataclass
class MutationResult:
    """What a mutation did. ``session`` is the session object after the change (None
    after a delete); ``removed`` lists deleted paths; ``written`` is False when the
    session already was as asked (nothing appended, the mtime untouched); ``warnings``
    says what of a change that went through was not done (the title sidecar)."""

    action: str
    session_id: str
    file_path: str
    session: dict[str, Any] | None = None
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    written: bool = True
    warnings: list[str] = field(default_factory=list)
    #: Why the index could not take the change that was written (None: it did);
    #: ``session`` is then None, the index's row being the one from before.
    index_error: str | None = None


class IndexNotUpdated(MutationError):
    """The change is written (the transcript, and the title sidecar where one is kept),
    but the index could not follow it: a full disk, a read-only or failing index file.
    The message says what was done first; ``result`` is the mutation's result (its
    ``warnings`` still to be shown). The index catches up on its next refresh, so the
    caller must not write again: a retry would append the record a second time."""

    def __init__(self, result: MutationResult, done: str) -> None:
        super().__init__(
            f"{done}; the index could not be updated: {result.index_error};"
            " it will catch up on the next refresh"
        )
        self.result = result


# Failures of the index file that leave it as it was before the write (SQLite rolled
# the transaction back): the change waits in the transcript for the next refresh. A
# damaged index is not among them (it is rebuilt: see Index._mutate_now and the CLI's
# guarded_invoke), nor a bug.
_INDEX_BEHIND = frozenset({BUSY, CANTOPEN, FULL, IO, READONLY})


Target = Resolution | str


def find_target(db: Database, arg: str, *, cwd: str | None = None, roots: list[Path]) -> Resolution:
    """Resolve ``arg`` for writing; raises NotFound / Ambiguous like ``resolve``."""
    return resolve(db, arg, cwd=cwd, roots=roots, for_write=True)


def _target(db: Database, target: Target, cwd: str | None, roots: list[Path]) -> Resolution:
    if isinstance(target, Resolution):
        return target
    return find_target(db, target, cwd=cwd, roots=roots)


def _sync(db: Database, path: str, roots: list[Path]) -> None:
    """Make the index agree with ``path`` now (ingest it, or forget it if it is gone)."""
    ingest_path(db, path, roots, RefreshStats())


def _index_behind(db: Database, follow: Callable[[], object]) -> str | None:
    """Run ``follow`` (the index's update after the transcript changed): None when the
    index took the change, else why not, in :func:`~sessiondex.indexer.faults.describe`'s
    words (the transcript is written: the failure must not hide that)."""
    try:
        follow()
    except sqlite3.Error as exc:
        if classify(exc) not in _INDEX_BEHIND:
            raise
        return describe(exc, database_path(db))
    return None


def _settled(result: MutationResult, done: str) -> MutationResult:
    """``result``, or :class:`IndexNotUpdated` saying ``done`` when the index did not
    follow the write (called last, once everything else of the mutation is done)."""
    if result.index_error is not None:
        raise IndexNotUpdated(result, done)
    return result


def _write_guard(db: Database, path: str, roots: list[Path]) -> None:
    """Say "no longer exists" for a transcript that vanished since it was indexed (the
    write layer would call it "not a transcript", true but unhelpful) and drop it from
    the index; the write layer still re-checks, so a race only changes the wording."""
    if not os.path.lexists(path):
        _sync(db, path, roots)
        raise MutationError(f"{path} no longer exists")


def _object_for(db: Database, path: str) -> dict[str, Any] | None:
    rows = select_rows(db, "s.file_path = ?", [path])
    return to_object(db, rows[0]) if rows else None


def _append(
    db: Database, found: Resolution, record: dict[str, Any], roots: list[Path], action: str
) -> MutationResult:
    path = found.row["file_path"]
    _write_guard(db, path, roots)
    try:
        append_record(Path(path), record, roots)
    except WriteRefused as exc:
        _sync(db, path, roots)  # e.g. the file vanished: the index must not keep it
        raise MutationError(str(exc)) from None
    behind = _index_behind(db, lambda: _sync(db, path, roots))
    return MutationResult(
        action,
        found.session["session_id"],
        path,
        session=_object_for(db, path) if behind is None else None,
        notes=list(found.notes),
        index_error=behind,
    )


def _mirror_title(result: MutationResult, title: str, roots: list[Path]) -> MutationResult:
    """Write the name just recorded to the session's ``<id>/custom-title.json``, as
    Claude Code does; one it cannot write is a warning, not a failure: the record
    landed, and it is what sessiondex, the SDK and the picker's tail read."""
    try:
        write_title_sidecar(Path(result.file_path), title, roots)
    except WriteRefused as exc:
        result.warnings.append(
            f"{exc}; the name is recorded in the transcript, but Claude Code's picker"
            " may show the sidecar's name once that record is over 64 KiB from the end"
        )
    return result


def _text(value: object, what: str) -> str:
    """A name or tag from a program (the library, MCP, the SDK-style functions), lone
    surrogates as U+FFFD; one that is no string is said to be so, not "empty"."""
    if not isinstance(value, str):
        raise MutationError(f"{what} must be a string, not {type(value).__name__}")
    text: str = without_lone_surrogates(value)
    return text


def check_name(name: object, what: str = "the new name") -> str:
    """The name as the SDK stores it (stripped); empty is an error (Claude Code's
    ``/rename`` with no name asks the model instead, which we cannot do). A lone
    surrogate (a JavaScript string cut inside an emoji) becomes U+FFFD, as every reader
    reads the SDK's escape of it; orjson cannot write one. What a person typed goes
    through :func:`user_name` first."""
    title = _text(name, what).strip()
    if not title:
        raise MutationError(f"{what} is empty")
    return title


def check_tag(value: object) -> str:
    """The tag as the SDK stores it (its sanitising, then stripped); empty is an error.
    What a person typed goes through :func:`user_tag` first."""
    clean = sanitize_tag(_text(value, "the tag"))
    if not clean:
        raise MutationError(
            "the tag is empty (after removing invisible characters); use untag to clear a tag"
        )
    return clean


def user_name(name: object, what: str = "the new name") -> str:
    """The one validation of a name a person typed (``rename``, ``fork --title``):
    :func:`~transcripts.tags.clean_name` (invisible and bidi characters removed, but
    the joiners of emoji and scripts kept, stripped); nothing visible left is an error.
    The SDK-style writers keep the SDK's looser rule (:func:`check_name`): they must
    write what the SDK writes."""
    title = clean_name(_text(name, what))
    if not title:
        raise MutationError(f"{what} is empty (after removing invisible characters)")
    return title


def user_tag(value: object) -> str:
    """The one validation of a tag a person typed: :func:`~transcripts.tags.clean_tag`
    (as :func:`user_name`, and without leading ``#``, which the picker adds itself)."""
    clean = clean_tag(_text(value, "the tag"))
    if not clean:
        raise MutationError(
            "the tag is empty (after removing invisible characters); use untag to clear a tag"
        )
    return clean


def _shown(session: dict[str, Any]) -> tuple[str | None, str | None]:
    """The title and tag Claude Code's picker and the SDK show for the session: they read
    64 KiB windows, so a name or tag followed by more conversation than that is gone
    from their view although the file still holds it. Writing it again is then a change
    (the name or tag reappears there), not the no-op it is to sessiondex."""
    try:
        return sdk_title_and_tag(session["file_path"])
    except OSError:
        return None, None  # unreadable: the append will say why


def _unchanged(
    db: Database, found: Resolution, roots: list[Path], action: str, same: Any
) -> MutationResult | None:
    """A result with ``written=False`` when ``same(session)`` holds for the session as
    its file says now (the index is brought up to date with the file first: with
    ``--no-refresh`` it may lag behind), else None."""
    path = found.row["file_path"]
    _write_guard(db, path, roots)
    _sync(db, path, roots)
    current = _object_for(db, path)
    if current is None or not same(current):
        return None
    return MutationResult(
        action,
        found.session["session_id"],
        path,
        session=current,
        notes=list(found.notes),
        written=False,
    )


def rename(
    db: Database,
    target: Target,
    name: str,
    *,
    cwd: str | None = None,
    roots: list[Path],
    if_changed: bool = False,
) -> MutationResult:
    """Append ``{"type":"custom-title","customTitle":…,"sessionId":…}``. With
    ``if_changed`` nothing is written when the session already has that name (the
    SDK's ``rename_session`` always appends, and its drop-in must too)."""
    title = check_name(name)
    found = _target(db, target, cwd, roots)
    if if_changed:
        same = _unchanged(
            db,
            found,
            roots,
            "rename",
            lambda s: (
                s.get("custom_title") == title
                and _shown(s)[0] == title
                and title_in_sidecar(s["file_path"]) in (None, title)
            ),
        )
        if same is not None:
            return same
    record = {
        "type": "custom-title",
        "customTitle": title,
        "sessionId": found.session["session_id"],
    }
    result = _mirror_title(_append(db, found, record, roots, "rename"), title, roots)
    return _settled(result, f"renamed {result.session_id} to {title!r}")


def tag(
    db: Database,
    target: Target,
    value: str,
    *,
    cwd: str | None = None,
    roots: list[Path],
    if_changed: bool = False,
) -> MutationResult:
    """Append ``{"type":"tag","tag":…,"sessionId":…}`` with the SDK's sanitising; a tag
    that is empty after sanitising is an error (use :func:`untag` to clear). With
    ``if_changed`` nothing is written when the session already has that tag."""
    clean = check_tag(value)
    found = _target(db, target, cwd, roots)
    if if_changed:
        same = _unchanged(
            db, found, roots, "tag", lambda s: s.get("tag") == clean and _shown(s)[1] == clean
        )
        if same is not None:
            return same
    record = {"type": "tag", "tag": clean, "sessionId": found.session["session_id"]}
    result = _append(db, found, record, roots, "tag")
    return _settled(result, f"tagged {result.session_id} #{clean}")


def untag(
    db: Database,
    target: Target,
    *,
    cwd: str | None = None,
    roots: list[Path],
    if_changed: bool = False,
) -> MutationResult:
    """Append ``{"type":"tag","tag":"","sessionId":…}``: an empty tag clears it. With
    ``if_changed`` nothing is written when the session has no tag."""
    found = _target(db, target, cwd, roots)
    if if_changed:
        same = _unchanged(db, found, roots, "untag", lambda s: not s.get("tag"))
        if same is not None:
            return same
    record = {"type": "tag", "tag": "", "sessionId": found.session["session_id"]}
    result = _append(db, found, record, roots, "untag")
    return _settled(result, f"cleared the tag of {result.session_id}")


def fork(
    db: Database,
    target: Target,
    *,
    cwd: str | None = None,
    roots: list[Path],
    up_to: str | None = None,
    title: str | None = None,
) -> MutationResult:
    """Copy the session into a new one in the same project dir; the result's
    ``session_id`` is the new session's."""
    if title is not None:
        title = check_name(title, "the fork's title")
    found = _target(db, target, cwd, roots)
    path = found.row["file_path"]
    _write_guard(db, path, roots)
    try:
        result = fork_transcript(Path(path), roots, up_to=up_to, title=title)
    except NothingToFork as exc:
        raise CannotFork(str(exc)) from None
    except WriteRefused as exc:
        _sync(db, path, roots)
        raise MutationError(str(exc)) from None
    behind = _index_behind(db, lambda: _sync(db, str(result.path), roots))
    forked = _mirror_title(
        MutationResult(
            "fork",
            result.session_id,
            str(result.path),
            session=_object_for(db, str(result.path)) if behind is None else None,
            notes=list(found.notes),
            index_error=behind,
        ),
        result.title,
        roots,
    )
    return _settled(forked, f"forked {found.session['session_id']} into {result.session_id}")


def delete(
    db: Database, target: Target, *, cwd: str | None = None, roots: list[Path]
) -> MutationResult:
    """Remove the transcript and its ``<id>/`` folder (subagents), then its index rows."""
    found = _target(db, target, cwd, roots)
    path = found.row["file_path"]
    _write_guard(db, path, roots)
    try:
        removed = delete_session_files(Path(path), roots)
    except WriteRefused as exc:
        _sync(db, path, roots)
        raise MutationError(str(exc)) from None
    behind = _index_behind(db, lambda: remove_path(db, path))
    deleted = MutationResult(
        "delete",
        found.session["session_id"],
        path,
        removed=[str(p) for p in removed],
        notes=list(found.notes),
        index_error=behind,
    )
    return _settled(deleted, f"deleted {deleted.session_id}")


__all__ = [
    "CannotFork",
    "IndexNotUpdated",
    "MutationError",
    "MutationResult",
    "NotFound",
    "check_name",
    "check_tag",
    "user_name",
    "user_tag",
    "delete",
    "find_target",
    "fork",
    "rename",
    "tag",
    "untag",
]
