"""A drop-in for the session readers of ``claude-agent-sdk``, answered from the index.

``list_sessions``, ``get_session_info``, ``get_session_messages``, ``list_subagents`` and
``get_subagent_messages`` have the SDK's names, parameters, defaults and result types
(reference/sdk-sessions.md §3), so a program can swap ``from claude_agent_sdk import …``
for ``from query.sdk_api import …``. The SDK opens and scans every transcript on each
call; here listings and info come from the index (refreshed first, a stat per file),
and only message reads open a transcript, following the SDK's chain rules through
``transcripts.chain``.

Deliberate differences, each a bug of the SDK we do not copy (tested in
tests/test_sdk_interop.py):

* titles, tags and last prompts come from the whole file, not a 64 KiB head and tail,
  so a rename or tag deep in a large transcript is seen;
* fields are read from the top level of the right record types, so ``"summary"`` or
  ``"gitBranch"`` keys inside a tool's input are not a summary or a branch;
* a ``directory`` maps to its project dir with Claude Code's rule (an emoji counts as
  two UTF-16 units), so sessions of emoji paths are found where Claude Code put them;
* invalid UTF-8 in a transcript does not raise.

Extra keyword-only parameters: ``db`` (an open index; default: the default database),
``config_dir`` (default: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``, as the SDK) and
``refresh`` (default True: bring the index up to date first, as every CLI read does).

The SDK package is not imported: its result types are mirrored below, field for field.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from sessiondex.query.scopes import git_worktrees
from sessiondex.transcripts.chain import load_entries, main_chain, subagent_chain, visible_messages
from sessiondex.transcripts.discover import iter_subagent_files, read_subagent_meta
from sessiondex.transcripts.keys import (
    canonical_directory,
    is_session_id,
    project_keys_for_directory,
)
from sessiondex.transcripts.records import display_prompt

if TYPE_CHECKING:
    from sqlite_utils import Database

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


# ----------------------------------------------------------------- plumbing
@contextmanager
def _index(
    db: Database | None,
    config_dir: str | os.PathLike[str] | None,
    refresh: bool,
    session_id: str | None = None,
) -> Iterator[tuple[Database, list[Path]]]:
    """The index and the config dirs to answer for, through :class:`sessiondex.Index`
    (which owns the refresh rule); a ``db`` passed in is the caller's to close. With a
    ``session_id``, that session's transcripts are checked first (read your writes)."""
    from sessiondex.index import Index

    with Index(db, [config_dir] if config_dir else None, refresh=refresh) as index:
        if session_id is not None:
            index.sync_session(session_id)
        yield index.reader(), index.roots


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

    Listings ignore a lone worktree (the SDK scans only the directory then); ID lookups
    try any worktree after the directory's own project dir (``min_worktrees=1``)."""
    canonical = canonical_directory(directory)
    pairs = [(key, canonical) for key in project_keys_for_directory(canonical)]
    if include_worktrees:
        worktrees = git_worktrees(canonical)
        if len(worktrees) >= min_worktrees:
            for path in sorted(worktrees, key=len, reverse=True):
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
    db: Database | None = None,
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
    db: Database | None = None,
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
    db: Database | None = None,
    config_dir: str | os.PathLike[str] | None = None,
    refresh: bool = True,
) -> list[SessionMessage]:
    """The conversation's user and assistant messages, root first (``[]`` if not found)."""
    with _index(db, config_dir, refresh, session_id) as (database, roots):
        row = _find_main(database, roots, session_id, directory)
    if row is None:
        return []
    try:
        entries, _problems = load_entries(Path(row["file_path"]))
    except OSError:
        return []
    messages = [_message(e) for e in visible_messages(main_chain(entries))]
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
    db: Database | None = None,
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
    db: Database | None = None,
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
        entries, _problems = load_entries(path)
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
        for e in subagent_chain(entries)
    ]
    return _page(messages, limit, offset)


__all__ = [
    "SDKSessionInfo",
    "SessionMessage",
    "get_session_info",
    "get_session_messages",
    "get_subagent_messages",
    "list_sessions",
    "list_subagents",
]
