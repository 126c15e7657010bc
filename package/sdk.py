"""A drop-in for the local-session functions of ``claude-agent-sdk``, answered from the index.

Readers (``list_sessions``, ``get_session_info``, ``get_session_messages``,
``list_subagents``, ``get_subagent_messages``) and writers (``rename_session``,
``tag_session``, ``delete_session``, ``fork_session``) have the SDK's names, parameters,
defaults, result types, validation and exceptions (docs/sdk-compat.md), so a program can
swap ``from claude_agent_sdk import …`` for ``from sessiondex import …``; the SDK's own
session tests run against this module (tests/test_sdk_upstream.py). The SDK opens and
scans every transcript on each call; here listings and info come from the index
(refreshed first, a stat per file), and only message reads open a transcript, following
the SDK's chain rules through ``transcripts.chain``. Writers find the session the same
way and change it through ``actions.mutations`` (the records the SDK appends, the fork
it makes), which also brings the index up to date before they return.

Deliberate differences, each a bug of the SDK we do not copy (docs/sdk-compat.md,
"Deliberate divergences"; tested in tests/test_sdk_interop.py):

* titles, tags and last prompts come from the whole file, not a 64 KiB head and tail,
  so a rename or tag deep in a large transcript is seen;
* fields are read from the top level of the right record types, so ``"summary"`` or
  ``"gitBranch"`` keys inside a tool input (or a ``customTitle`` inside a ``summary``
  record) are not a summary, a branch or a title;
* a ``directory`` maps to its project dir with Claude Code's rule (an emoji counts as
  two UTF-16 units), so sessions of emoji paths are found where Claude Code put them;
* invalid UTF-8 in a transcript does not raise;
* with one session ID in several project dirs, the newest non-empty copy is the one
  read or changed (the SDK takes whichever its directory listing returns first).

Extra keyword-only parameters: ``db`` (a path or an open connection; default: the
default database), ``config_dir`` (default: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``,
as the SDK) and ``refresh`` (default True: bring the index up to date first, as every
CLI read does).

The SDK package is not imported: its result types are mirrored below, field for field.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from sessiondex.query.scopes import git_worktrees
from sessiondex.transcripts.chain import read_messages
from sessiondex.transcripts.config import projects_dir
from sessiondex.transcripts.discover import iter_subagent_files, read_subagent_meta
from sessiondex.transcripts.keys import (
    canonical_directory,
    is_session_id,
    project_keys_for_directory,
)
from sessiondex.transcripts.records import display_prompt

if TYPE_CHECKING:
    from sqlite_utils import Database

    from sessiondex.actions.mutations import MutationResult
    from sessiondex.index import DbArg, Index
    from sessiondex.query.resolve import Resolution

T = TypeVar("T")


@dataclass
class SDKSessionInfo:
    """``claude_agent_sdk.SDKSessionInfo``: same fields, order, types and defaults."""

    session_id: str
    summary: str
    last_modified: int
    file_size: int | None = None
    custom_title: str | None = None
    first_prompt: str | None = None
    git_branch: str | None = None
    cwd: str | None = None
    tag: str | None = None
    created_at: int | None = None


@dataclass
class SessionMessage:
    """``claude_agent_sdk.SessionMessage``: same fields, order, types and defaults."""

    type: Literal["user", "assistant"]
    uuid: str
    session_id: str
    message: Any
    parent_tool_use_id: str | None = None
    parent_agent_id: str | None = None


@dataclass
class ForkSessionResult:
    """``claude_agent_sdk.ForkSessionResult``: the new session's ID."""

    session_id: str


# ----------------------------------------------------------------- plumbing
def _sdk_config_dirs(config_dir: str | os.PathLike[str] | None) -> list[Path]:
    """The config dir the SDK reads: ``config_dir``, else ``$CLAUDE_CONFIG_DIR``, else
    ``~/.claude``. sessiondex's own ``$SESSIONDEX_CONFIG_DIRS`` is the CLI's, not the
    SDK's: a drop-in must read and write where the SDK would."""
    from sessiondex.transcripts.config import find_config_dirs

    if config_dir:
        return find_config_dirs([os.fspath(config_dir)]).dirs
    environ = {k: v for k, v in os.environ.items() if k != "SESSIONDEX_CONFIG_DIRS"}
    return find_config_dirs(None, environ).dirs


@contextmanager
def _open(
    db: DbArg,
    config_dir: str | os.PathLike[str] | None,
    refresh: bool,
    notice: Callable[[str], None] | None = None,
) -> Iterator[Index]:
    """:class:`sessiondex.Index` for the config dir (it owns the database, the handles
    and the refresh rule); a ``db`` connection passed in is the caller's to close."""
    from sessiondex.index import Index

    with Index(db, _sdk_config_dirs(config_dir), refresh=refresh, notice=notice) as index:
        yield index


def _note(text: str) -> None:
    import logging

    logging.getLogger("sessiondex").warning(text)


@contextmanager
def _index(
    db: DbArg,
    config_dir: str | os.PathLike[str] | None,
    refresh: bool,
    session_id: str | None = None,
) -> Iterator[tuple[Database, list[Path]]]:
    """The index brought up to date (by the Index's rule) and the config dirs to answer
    for. With a ``session_id``, that session's transcripts are checked first (read your
    writes, even while a watcher that has not caught up is trusted).

    The SDK reads the files and never fails for want of a place to write: where the
    default index cannot be opened (a read-only ``HOME``, a cache path that is a file)
    or brought up to date (a read-only index), the answer comes from an index built in
    memory for the call, as slow as the SDK's own scan, rather than an error or a stale
    answer; so does a default index a newer sessiondex made (an old virtualenv's
    program after an upgrade), which this code neither reads nor writes. Another
    process writing the index (busy) is waited for as ever; a ``db`` the caller gives
    is used as given: its failures are raised, a newer sessiondex's index as
    ``sessiondex.IndexFromNewer`` (one line), with ``refresh=False`` too."""
    import sqlite3

    from sessiondex.indexer.db import IndexFromNewer

    notes: list[str] = []  # said once the answer's source is known
    with _open(db, config_dir, refresh, notes.append) as index:
        try:
            if session_id is not None:
                index.sync_session(session_id)
            reader = index.reader()
        except (OSError, sqlite3.Error, IndexFromNewer):  # a newer copy's: left as it is
            if db is not None:
                raise
        else:
            stale = refresh and index.stale_because not in (None, "busy")
            if db is not None or not stale:
                for text in notes:
                    _note(text)
                yield reader, index.roots
                return
        roots, where = index.roots, index.db_path
    _note(
        f"note: the index at {where or 'its default place'} cannot be used here;"
        " answering from the transcripts, read in memory for this call"
    )
    with _in_memory(roots) as answer:
        yield answer


@contextmanager
def _in_memory(roots: list[Path]) -> Iterator[tuple[Database, list[Path]]]:
    """An index of ``roots`` built in memory for one answer (see :func:`_index`)."""
    import sqlite3

    from sessiondex.index import Index

    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        with Index(conn, roots, refresh=True) as index:
            yield index.reader(), index.roots
    finally:
        conn.close()


def _rows(
    db: Database,
    roots: list[Path],
    keys: Sequence[str] | None = None,
    session_id: str | None = None,
) -> list[dict[str, Any]]:
    from sessiondex.query.sessions import select_rows

    where = [f"s.root IN ({', '.join('?' for _ in roots)})", "s.archived = 0"]
    params: list[Any] = [str(r) for r in roots]
    if keys is not None:
        where.append(f"s.project_key IN ({', '.join('?' for _ in keys)})")
        params.extend(keys)
    if session_id is not None:
        where.append("s.session_id = ?")  # exact case, as the SDK's file lookup on Linux
        params.append(session_id)
    return select_rows(db, " AND ".join(where), params, order="s.mtime_ns DESC, s.session_id")


def _last_modified(mtime_ns: int) -> int:
    """The SDK's ``int(st_mtime * 1000)``, computed from the same float CPython builds
    for ``st_mtime`` (``sec + nsec * 1e-9``), so both give the same millisecond."""
    seconds, nanos = divmod(int(mtime_ns), 1_000_000_000)
    return int((seconds + nanos * 1e-9) * 1000)


def _directory_keys(
    directory: str, include_worktrees: bool, min_worktrees: int = 2
) -> list[tuple[str, str]]:
    """(project key, the path it stands for) for ``directory`` and, if asked, each git
    worktree of its repository: the cwd reported for sessions whose records have none.

    Listings ignore a lone worktree (the SDK scans only the directory then) and take
    the longest worktree path first; ID lookups (``min_worktrees=1``) try any worktree
    after the directory's own project dir, in git's order, as the SDK does, so that of
    two copies of one ID in two worktrees the same one answers."""
    canonical = canonical_directory(directory)
    pairs = [(key, canonical) for key in project_keys_for_directory(canonical)]
    if include_worktrees:
        worktrees = git_worktrees(canonical)
        if len(worktrees) >= min_worktrees:
            ordered = worktrees if min_worktrees == 1 else sorted(worktrees, key=len, reverse=True)
            for path in ordered:
                for key in project_keys_for_directory(path):
                    if key not in {k for k, _ in pairs}:
                        pairs.append((key, path))
    return pairs


def _info(row: dict[str, Any], fallback_cwd: str | None = None) -> SDKSessionInfo | None:
    """The SDK's view of one session row; None where the SDK skips the session
    (a sidechain, or nothing to call it by)."""
    if row.get("is_sidechain"):
        return None
    first = row.get("first_prompt") or row.get("prompt_fallback")
    first_prompt = display_prompt(first) if first else None
    # The SDK reports an AI title as custom_title when there is no user title.
    custom_title = row.get("custom_title") or row.get("ai_title") or None
    summary = custom_title or row.get("last_prompt") or row.get("summary") or first_prompt
    if not summary:
        return None
    return SDKSessionInfo(
        session_id=row["session_id"],
        summary=summary,
        last_modified=_last_modified(row["mtime_ns"]),
        file_size=row["file_size"],
        custom_title=custom_title,
        first_prompt=first_prompt or None,
        git_branch=row.get("git_branch") or None,
        cwd=row.get("cwd") or fallback_cwd,
        tag=row.get("tag") or None,
        created_at=row.get("created_ms"),
    )


def _page(items: list[T], limit: int | None, offset: int) -> list[T]:
    """The SDK's message paging: a slice when limit > 0, else everything from offset."""
    if limit is not None and limit > 0:
        return items[offset : offset + limit]
    if offset > 0:
        return items[offset:]
    return items


def _find_main(
    db: Database, roots: list[Path], session_id: str, directory: str | None
) -> dict[str, Any] | None:
    """The session's non-empty main transcript: in the directory's project dir, then its
    worktrees' (as the SDK looks), or anywhere; among copies, the newest."""
    if not is_session_id(session_id):
        return None
    rows = [r for r in _rows(db, roots, session_id=session_id) if r["file_size"] > 0]
    if not directory:
        return rows[0] if rows else None
    for key, _path in _directory_keys(directory, include_worktrees=True, min_worktrees=1):
        for row in rows:
            if row["project_key"] == key:
                return row
    return None


# ----------------------------------------------------------------- public API
def list_sessions(
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    include_worktrees: bool = True,
    *,
    db: DbArg = None,
    config_dir: str | os.PathLike[str] | None = None,
    refresh: bool = True,
) -> list[SDKSessionInfo]:
    """Sessions newest first (by file mtime): those of ``directory`` (and, with
    ``include_worktrees``, of every git worktree of its repository), or of every
    project; one per session ID (the newest copy). ``offset``/``limit`` apply only when
    positive, as in the SDK."""
    with _index(db, config_dir, refresh) as (database, roots):
        if directory:
            pairs = _directory_keys(directory, include_worktrees)
            where_from = dict(reversed(pairs))  # first pair wins for a key
            rows = _rows(database, roots, keys=[k for k, _ in pairs])
        else:
            where_from = {}
            rows = _rows(database, roots)
    newest: dict[str, SDKSessionInfo] = {}
    for row in rows:  # newest mtime first: the first copy of an ID is the one kept
        info = _info(row, where_from.get(row["project_key"]))
        if info is not None and info.session_id not in newest:
            newest[info.session_id] = info
    result = sorted(newest.values(), key=lambda i: (-i.last_modified, i.session_id))
    if offset > 0:
        result = result[offset:]
    if limit is not None and limit > 0:
        result = result[:limit]
    return result


def get_session_info(
    session_id: str,
    directory: str | None = None,
    *,
    db: DbArg = None,
    config_dir: str | os.PathLike[str] | None = None,
    refresh: bool = True,
) -> SDKSessionInfo | None:
    """One session's info, or None (invalid ID, missing or empty file, a sidechain,
    nothing to call it by)."""
    with _index(db, config_dir, refresh, session_id) as (database, roots):
        row = _find_main(database, roots, session_id, directory)
        if row is None:
            return None
        fallback = None
        if directory:
            pairs = _directory_keys(directory, True, min_worktrees=1)
            fallback = dict(reversed(pairs)).get(row["project_key"])
        return _info(row, fallback)


def _message(
    entry: dict[str, Any], parent_tool_use_id: str | None = None, parent_agent_id: str | None = None
) -> SessionMessage:
    session = entry.get("sessionId")
    uuid = entry.get("uuid")
    return SessionMessage(
        type=entry["type"],
        uuid=uuid if isinstance(uuid, str) else "",
        session_id=session if isinstance(session, str) else "",
        message=entry.get("message"),
        parent_tool_use_id=parent_tool_use_id,
        parent_agent_id=parent_agent_id,
    )


def get_session_messages(
    session_id: str,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    *,
    db: DbArg = None,
    config_dir: str | os.PathLike[str] | None = None,
    refresh: bool = True,
) -> list[SessionMessage]:
    """The conversation's user and assistant messages, root first (``[]`` if not found)."""
    with _index(db, config_dir, refresh, session_id) as (database, roots):
        row = _find_main(database, roots, session_id, directory)
    if row is None:
        return []
    try:
        entries = read_messages(Path(row["file_path"]))
    except OSError:
        return []
    messages = [_message(e) for e in entries]
    return _page(messages, limit, offset)


def _subagent_files(row: dict[str, Any]) -> list[tuple[str, Path]]:
    """(agent id, path) below the session's ``subagents/``, in the SDK's walk order
    (each directory sorted by name, depth first); symlinks are not followed."""
    root = Path(row["root"])
    base = root / "projects" / row["project_key"] / row["session_id"] / "subagents"
    files = list(iter_subagent_files(root, row["project_key"], row["session_id"]))
    files.sort(key=lambda tf: tf.path.relative_to(base).parts)
    return [(tf.agent_id or "", tf.path) for tf in files]


def list_subagents(
    session_id: str,
    directory: str | None = None,
    *,
    db: DbArg = None,
    config_dir: str | os.PathLike[str] | None = None,
    refresh: bool = True,
) -> list[str]:
    """Agent IDs of the session's subagent transcripts (``[]`` without a main file)."""
    with _index(db, config_dir, refresh, session_id) as (database, roots):
        row = _find_main(database, roots, session_id, directory)
    if row is None:
        return []
    return [agent for agent, _path in _subagent_files(row)]


def get_subagent_messages(
    session_id: str,
    agent_id: str,
    directory: str | None = None,
    limit: int | None = None,
    offset: int = 0,
    *,
    db: DbArg = None,
    config_dir: str | os.PathLike[str] | None = None,
    refresh: bool = True,
) -> list[SessionMessage]:
    """One subagent's messages, each carrying the Agent ``tool_use`` id that spawned it
    and its parent agent id, from the ``.meta.json`` sidecar."""
    if not agent_id:
        return []
    with _index(db, config_dir, refresh, session_id) as (database, roots):
        row = _find_main(database, roots, session_id, directory)
    if row is None:
        return []
    path = next((p for agent, p in _subagent_files(row) if agent == agent_id), None)
    if path is None:
        return []
    try:
        entries = read_messages(path, subagent=True)
    except OSError:
        return []
    meta = read_subagent_meta(path)
    tool_use = meta.get("toolUseId")
    parent_agent = meta.get("parentAgentId")
    messages = [
        _message(
            e,
            tool_use if isinstance(tool_use, str) else None,
            parent_agent if isinstance(parent_agent, str) else None,
        )
        for e in entries
    ]
    return _page(messages, limit, offset)


# ----------------------------------------------------------------- writers
def _check_session_id(session_id: object) -> str:
    """The SDK's first check in every writer: a UUID, never resolved as a name or prefix."""
    if not is_session_id(session_id):
        raise ValueError(f"Invalid session_id: {session_id}")
    assert isinstance(session_id, str)
    return session_id


def _not_found(session_id: str, directory: str | None, roots: list[Path], appending: bool) -> str:
    """The SDK's wording: its appenders (rename, tag) and its finders (delete, fork)
    word a miss differently, and programs match on these messages."""
    if directory:
        return f"Session {session_id} not found in project directory for {directory}"
    if not appending:
        return f"Session {session_id} not found"
    if not any(projects_dir(root).is_dir() for root in roots):
        return f"Session {session_id} not found (no projects directory)"
    return f"Session {session_id} not found in any project directory"


def _writable(index: Index) -> None:
    """Check the index takes writes before a transcript is touched: one that cannot (read
    only, busy past the wait, a full disk, made by a newer sessiondex) is the ``OSError`` the SDK's own failed
    appends raise, not a ``sqlite3`` error a program moving from the SDK never expects;
    a damaged one is rebuilt, as for every other write."""
    import sqlite3

    from sessiondex.indexer.db import IndexFromNewer
    from sessiondex.indexer.faults import describe, is_corrupt

    try:
        index.writable()
    except IndexFromNewer as exc:  # a newer sessiondex's index: refused, as read-only
        raise OSError(str(exc)) from None
    except sqlite3.DatabaseError as exc:
        if not (is_corrupt(exc) and index.recover(exc)):
            raise OSError(describe(exc, index.db_path)) from None
        index.refresh()


def _target(index: Index, session_id: str, directory: str | None, appending: bool) -> Resolution:
    """The session an SDK writer would change: the non-empty transcript of that exact ID
    in the directory's project dir or its worktrees' (anywhere without a directory), as
    the index knows it now; ``FileNotFoundError`` if there is none. The index is checked
    writable first (:func:`_writable`)."""
    from sessiondex.query.resolve import MATCHED_ID, Resolution
    from sessiondex.query.sessions import to_object

    _writable(index)
    row = _find_main(index.reader(), index.roots, session_id, directory)
    if row is None and index.auto_refresh and index.watcher_alive():
        # A live watcher keeps the index current, but not within the same instant: a
        # session written a moment ago must not be "not found" to a writer.
        index.refresh()
        row = _find_main(index.writer(), index.roots, session_id, directory)
    if row is None:
        raise FileNotFoundError(_not_found(session_id, directory, index.roots, appending))
    return Resolution(to_object(index.writer(), row), row, MATCHED_ID)


@contextmanager
def _sdk_errors(session_id: str, found: Resolution) -> Iterator[None]:
    """The mutation layer's one error type as the SDK's: a transcript that vanished under
    us is ``FileNotFoundError``, a refused write ``OSError``, as its own appends raise."""
    from sessiondex.actions.mutations import CannotFork, MutationError

    try:
        yield
    except CannotFork as exc:
        raise ValueError(str(exc)) from None
    except MutationError as exc:
        if not os.path.lexists(found.row["file_path"]):
            raise FileNotFoundError(f"Session {session_id} not found") from None
        raise OSError(str(exc)) from None


def _landed(write: Callable[[], MutationResult]) -> MutationResult:
    """Run a mutation whose change the SDK would have made: its warnings (the title
    sidecar) and an index that could not follow it (a full disk) are logged, not
    raised. The SDK's own writers have no index: the record on disk is their success,
    and the index catches up on its next refresh."""
    from sessiondex.actions.mutations import IndexNotUpdated

    try:
        result = write()
    except IndexNotUpdated as exc:
        result = exc.result
        notes = [*result.warnings, str(exc)]
    else:
        notes = list(result.warnings)
    for text in notes:
        _note(text)
    return result


def rename_session(
    session_id: str,
    title: str,
    directory: str | None = None,
    *,
    db: DbArg = None,
    config_dir: str | os.PathLike[str] | None = None,
    refresh: bool = True,
) -> None:
    """Append ``{"type":"custom-title","customTitle":<title stripped>,"sessionId":…}``;
    the last one wins. ``ValueError`` for an invalid ID or a blank title,
    ``FileNotFoundError`` when the session is not there."""
    from sessiondex.actions.mutations import MutationError, check_name, rename

    session_id = _check_session_id(session_id)
    if not isinstance(title, str):
        raise ValueError(f"title must be a string, not {type(title).__name__}")
    try:
        check_name(title)
    except MutationError:
        raise ValueError("title must be non-empty") from None
    with _open(db, config_dir, refresh) as index:
        found = _target(index, session_id, directory, appending=True)
        with _sdk_errors(session_id, found):
            _landed(lambda: rename(index.writer(), found, title, roots=index.roots))


def tag_session(
    session_id: str,
    tag: str | None,
    directory: str | None = None,
    *,
    db: DbArg = None,
    config_dir: str | os.PathLike[str] | None = None,
    refresh: bool = True,
) -> None:
    """Append ``{"type":"tag","tag":…,"sessionId":…}`` with the tag sanitized as the SDK
    does; ``None`` clears it (an empty tag is written). ``ValueError`` for an invalid ID
    or a tag that is empty once invisible characters and whitespace are removed."""
    from sessiondex.actions.mutations import MutationError, check_tag, untag
    from sessiondex.actions.mutations import tag as tag_action

    session_id = _check_session_id(session_id)
    if tag is not None and not isinstance(tag, str):
        raise ValueError(f"tag must be a string or None, not {type(tag).__name__}")
    if tag is not None:
        try:
            check_tag(tag)
        except MutationError:
            raise ValueError("tag must be non-empty (use None to clear)") from None
    with _open(db, config_dir, refresh) as index:
        found = _target(index, session_id, directory, appending=True)
        with _sdk_errors(session_id, found):
            if tag is None:
                _landed(lambda: untag(index.writer(), found, roots=index.roots))
            else:
                _landed(lambda: tag_action(index.writer(), found, tag, roots=index.roots))


def delete_session(
    session_id: str,
    directory: str | None = None,
    *,
    db: DbArg = None,
    config_dir: str | os.PathLike[str] | None = None,
    refresh: bool = True,
) -> None:
    """Remove the transcript and its ``<id>/`` folder (subagents), for good, and its
    index rows. ``ValueError`` for an invalid ID, ``FileNotFoundError`` if not there."""
    from sessiondex.actions.mutations import delete

    session_id = _check_session_id(session_id)
    with _open(db, config_dir, refresh) as index:
        found = _target(index, session_id, directory, appending=False)
        with _sdk_errors(session_id, found):
            _landed(lambda: delete(index.writer(), found, roots=index.roots))


def fork_session(
    session_id: str,
    directory: str | None = None,
    up_to_message_id: str | None = None,
    title: str | None = None,
    *,
    db: DbArg = None,
    config_dir: str | os.PathLike[str] | None = None,
    refresh: bool = True,
) -> ForkSessionResult:
    """Copy the session into a new one next to it (fresh IDs, ``forkedFrom`` on each
    entry), up to and including ``up_to_message_id``, titled ``title`` or
    ``<source title> (fork)`` (a blank title counts as none, as in the SDK).
    ``ValueError`` for invalid IDs, nothing to fork or an unknown cut point;
    ``FileNotFoundError`` when the session is not there."""
    from sessiondex.actions.mutations import fork

    session_id = _check_session_id(session_id)
    if title is not None and not isinstance(title, str):
        raise ValueError(f"title must be a string, not {type(title).__name__}")
    if up_to_message_id and not is_session_id(up_to_message_id):
        raise ValueError(f"Invalid up_to_message_id: {up_to_message_id}")
    with _open(db, config_dir, refresh) as index:
        found = _target(index, session_id, directory, appending=False)
        with _sdk_errors(session_id, found):
            result = _landed(
                lambda: fork(
                    index.writer(),
                    found,
                    roots=index.roots,
                    up_to=up_to_message_id or None,
                    title=title if title and title.strip() else None,
                )
            )
    return ForkSessionResult(session_id=result.session_id)


__all__ = [
    "ForkSessionResult",
    "SDKSessionInfo",
    "SessionMessage",
    "delete_session",
    "fork_session",
    "get_session_info",
    "get_session_messages",
    "get_subagent_messages",
    "list_sessions",
    "list_subagents",
    "rename_session",
    "tag_session",
]
