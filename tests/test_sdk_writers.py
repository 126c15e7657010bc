"""The SDK-style writers (rename_session, tag_session, delete_session, fork_session) and
``db=`` as a path or a connection, on their own.

The SDK's own tests run in tests/test_sdk_upstream.py; this file pins the rules that make
the functions a drop-in (validation before lookup, exact-ID lookup, the SDK's exception
types and wordings, the records written byte for byte) and what the SDK cannot test: the
index follows every write before the call returns (checked with ``refresh=False``).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sessiondex
from sessiondex import (
    ForkSessionResult,
    delete_session,
    fork_session,
    get_session_info,
    get_session_messages,
    list_sessions,
    rename_session,
    tag_session,
)
from tests.builders import ConfigTree

A = "/home/dev/a"  # do not exist: no git repository, no worktrees
B = "/home/dev/b"
MTIME = 1_790_000_000
MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def tree(tmp_path: Path) -> ConfigTree:
    return ConfigTree(tmp_path / "claude")


def opts(tree: ConfigTree, **extra: Any) -> dict[str, Any]:
    """The extra keyword arguments: the tree's config dir, an index file next to it."""
    return {"db": tree.root.parent / "index.db", "config_dir": tree.root, **extra}


def make(tree: ConfigTree, cwd: str = A, prompt: str = "hello there", **kw: Any) -> Any:
    s = tree.session(cwd, **kw)
    s.user(prompt)
    s.assistant("hi")
    s.write(mtime=MTIME)
    return s


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def info(tree: ConfigTree, session_id: str) -> Any:
    """The session as the index holds it now, read from the index alone (even
    ``refresh=False`` checks the one session's file before answering)."""
    from sessiondex.indexer.db import open_db
    from sessiondex.sdk import _find_main, _info

    db = open_db(opts(tree)["db"])
    try:
        row = _find_main(db, [tree.root], session_id, None)
        return None if row is None else _info(row, None)
    finally:
        db.close()


# ----------------------------------------------------------------- the import swap
SDK_NAMES = [
    "SDKSessionInfo",
    "SessionMessage",
    "ForkSessionResult",
    "list_sessions",
    "get_session_info",
    "get_session_messages",
    "list_subagents",
    "get_subagent_messages",
    "rename_session",
    "tag_session",
    "delete_session",
    "fork_session",
]


@pytest.mark.parametrize("name", SDK_NAMES)
def test_exported_from_sessiondex(name: str) -> None:
    assert name in sessiondex.__all__
    assert getattr(sessiondex, name) is getattr(sessiondex.sdk, name)


@pytest.mark.parametrize("name", SDK_NAMES)
def test_same_signature_as_the_sdk(name: str) -> None:
    """Positional parameters, names and defaults as the SDK's; ours add keyword-only
    ``db``, ``config_dir``, ``refresh`` to the functions; dataclass fields are equal."""
    sdk = pytest.importorskip("claude_agent_sdk")
    theirs: Any = getattr(sdk, name)
    ours: Any = getattr(sessiondex, name)
    if dataclasses.is_dataclass(theirs):
        fields = [(f.name, f.default) for f in dataclasses.fields(theirs)]
        assert [(f.name, f.default) for f in dataclasses.fields(ours)] == fields
        return
    ours_params = [
        (p.name, p.kind, p.default)
        for p in inspect.signature(ours).parameters.values()
        if p.name not in ("db", "config_dir", "refresh")
    ]
    theirs_params = [
        (p.name, p.kind, p.default) for p in inspect.signature(theirs).parameters.values()
    ]
    assert ours_params == theirs_params


# ----------------------------------------------------------------- validation first
WRITERS: dict[str, Callable[..., Any]] = {
    "rename": lambda sid, **kw: rename_session(sid, "New title", **kw),
    "tag": lambda sid, **kw: tag_session(sid, "t", **kw),
    "untag": lambda sid, **kw: tag_session(sid, None, **kw),
    "delete": lambda sid, **kw: delete_session(sid, **kw),
    "fork": lambda sid, **kw: fork_session(sid, **kw),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize(
    "arg",
    ["not-a-uuid", "", "Alpha", "{prefix}", "{id}\n", " {id}"],
    ids=["word", "empty", "a-session-name", "id-prefix", "trailing-newline", "leading-space"],
)
def test_non_uuid_is_value_error_never_resolved(tree: ConfigTree, writer: str, arg: str) -> None:
    """A name, prefix or padded ID that ``sessiondex resolve`` would accept is no
    session ID to the SDK's writers: ValueError, nothing written."""
    s = make(tree, prompt="Alpha")
    s.meta("custom-title", customTitle="Alpha")
    s.write(mtime=MTIME)
    get_session_info(s.session_id, **opts(tree))  # indexed, so a name could resolve
    before = snapshot(tree.root)
    bad = arg.format(prefix=s.session_id[:13], id=s.session_id)
    with pytest.raises(ValueError, match="^Invalid session_id: "):
        WRITERS[writer](bad, **opts(tree))
    assert snapshot(tree.root) == before


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda sid, **kw: rename_session(sid, "", **kw), "title must be non-empty"),
        (lambda sid, **kw: rename_session(sid, " \n\t", **kw), "title must be non-empty"),
        (lambda sid, **kw: tag_session(sid, "", **kw), "tag must be non-empty"),
        (lambda sid, **kw: tag_session(sid, "\u200b\ufeff ", **kw), "tag must be non-empty"),
        (lambda sid, **kw: fork_session(sid, up_to_message_id="m1", **kw), "Invalid up_to"),
        (lambda sid, **kw: rename_session(sid, 5, **kw), "title must be a string, not int"),
        (lambda sid, **kw: tag_session(sid, [], **kw), "tag must be a string or None, not list"),
        (lambda sid, **kw: fork_session(sid, title=5, **kw), "title must be a string"),
        (lambda sid, **kw: fork_session(sid, title=b"x", **kw), "title must be a string"),
    ],
    ids=[
        "empty-title",
        "blank-title",
        "empty-tag",
        "invisible-tag",
        "bad-cut-point",
        "int-title",
        "list-tag",
        "int-fork-title",
        "bytes-fork-title",
    ],
)
def test_bad_arguments_before_lookup(tree: ConfigTree, call: Any, message: str) -> None:
    """As in the SDK, the arguments are checked before the session is looked for: a bad
    title for a session that does not exist is a ValueError, not FileNotFoundError."""
    with pytest.raises(ValueError, match=message):
        call(MISSING, **opts(tree))


# ----------------------------------------------------------------- not found
@pytest.mark.parametrize(
    ("writer", "directory", "projects", "message"),
    [
        ("rename", None, True, "Session {id} not found in any project directory"),
        ("tag", None, False, "Session {id} not found (no projects directory)"),
        ("untag", A, True, "Session {id} not found in project directory for " + A),
        ("delete", None, True, "Session {id} not found"),
        ("delete", None, False, "Session {id} not found"),
        ("fork", A, True, "Session {id} not found in project directory for " + A),
    ],
)
def test_not_found_wording(
    tmp_path: Path, writer: str, directory: str | None, projects: bool, message: str
) -> None:
    root = tmp_path / "claude"
    if projects:
        (root / "projects").mkdir(parents=True)
    with pytest.raises(FileNotFoundError) as caught:
        WRITERS[writer](MISSING, directory=directory, db=tmp_path / "i.db", config_dir=root)
    assert str(caught.value) == message.format(id=MISSING)


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_session_of_another_project_is_not_found(tree: ConfigTree, writer: str) -> None:
    s = make(tree, A)
    before = snapshot(tree.root)
    with pytest.raises(FileNotFoundError, match=f"not found in project directory for {B}"):
        WRITERS[writer](s.session_id, directory=B, **opts(tree))
    assert snapshot(tree.root) == before


@pytest.mark.parametrize("writer", ["rename", "tag", "untag", "fork"])
def test_empty_stub_skipped_for_the_real_copy(tree: ConfigTree, writer: str) -> None:
    s = make(tree, B)
    stub = tree.project_dir(A) / f"{s.session_id}.jsonl"
    stub.parent.mkdir(parents=True)
    stub.write_bytes(b"")
    size = s.path.stat().st_size
    WRITERS[writer](s.session_id, **opts(tree))
    assert stub.read_bytes() == b""
    forks = list(tree.project_dir(B).glob("*.jsonl"))
    assert s.path.stat().st_size > size or len(forks) == 2


def test_vanished_transcript_is_file_not_found_and_leaves_the_index(tree: ConfigTree) -> None:
    s = make(tree)
    assert info(tree, s.session_id) is None  # not indexed yet
    assert get_session_info(s.session_id, **opts(tree)) is not None
    s.path.unlink()
    with pytest.raises(FileNotFoundError, match=f"Session {s.session_id} not found"):
        rename_session(s.session_id, "x", **opts(tree, refresh=False))
    assert info(tree, s.session_id) is None


def test_refused_write_is_os_error(tree: ConfigTree, monkeypatch: pytest.MonkeyPatch) -> None:
    from sessiondex.actions import mutations
    from sessiondex.transcripts.write import WriteRefused

    s = make(tree)

    def refuse(path: Path, record: dict[str, Any], roots: list[Path]) -> None:
        raise WriteRefused(f"cannot write {path}: Permission denied")

    monkeypatch.setattr(mutations, "append_record", refuse)
    with pytest.raises(OSError, match="Permission denied") as caught:
        tag_session(s.session_id, "t", **opts(tree))
    assert not isinstance(caught.value, FileNotFoundError)


# ----------------------------------------------------------------- what is written
@pytest.mark.parametrize(
    ("call", "line", "title", "tag"),
    [
        (
            lambda sid, **kw: rename_session(sid, "  My title ", **kw),
            '{{"type":"custom-title","customTitle":"My title","sessionId":"{id}"}}',
            "My title",
            None,
        ),
        (
            lambda sid, **kw: tag_session(sid, " ＦＵＬＬ\u200b ", **kw),
            '{{"type":"tag","tag":"FULL","sessionId":"{id}"}}',
            None,
            "FULL",
        ),
        (
            lambda sid, **kw: tag_session(sid, None, **kw),
            '{{"type":"tag","tag":"","sessionId":"{id}"}}',
            None,
            None,
        ),
    ],
    ids=["rename", "tag", "untag"],
)
def test_record_appended_and_indexed(
    tree: ConfigTree, call: Any, line: str, title: str | None, tag: str | None
) -> None:
    s = make(tree)
    before = s.path.read_bytes()
    call(s.session_id, directory=A, **opts(tree))
    after = s.path.read_bytes()
    assert after == before + line.format(id=s.session_id).encode() + b"\n"
    now = info(tree, s.session_id)  # the index followed the write: no refresh needed
    assert (now.custom_title, now.tag) == (title, tag)
    assert now.file_size == len(after)


@pytest.mark.parametrize(
    ("call", "field", "expected"),
    [
        (
            lambda sid, **kw: rename_session(sid, "cut \ud83d here", **kw),
            "title",
            "cut \ufffd here",
        ),
        (lambda sid, **kw: tag_session(sid, "t\udcffx", **kw), "tag", "t\ufffdx"),
        (lambda sid, **kw: fork_session(sid, title="fork \ud800", **kw), "title", "fork \ufffd"),
    ],
    ids=["rename", "tag", "fork-title"],
)
def test_a_lone_surrogate_is_written_as_the_readers_read_it(
    tree: ConfigTree, call: Any, field: str, expected: str
) -> None:
    """A JavaScript string cut inside an emoji: the SDK writes it as an escape, and
    orjson raised TypeError ("surrogates not allowed") with nothing written."""
    s = make(tree)
    result = call(s.session_id, **opts(tree))
    sid = getattr(result, "session_id", s.session_id)
    got = get_session_info(sid, **opts(tree))
    assert getattr(got, "custom_title" if field == "title" else "tag") == expected


@pytest.mark.parametrize(
    "call",
    [
        lambda sid, **kw: rename_session(sid, "x", **kw),
        lambda sid, **kw: tag_session(sid, "t", **kw),
        lambda sid, **kw: tag_session(sid, None, **kw),
        lambda sid, **kw: fork_session(sid, **kw),
        lambda sid, **kw: delete_session(sid, **kw),
    ],
    ids=["rename", "tag", "untag", "fork", "delete"],
)
def test_a_read_only_index_is_os_error_and_nothing_is_written(tree: ConfigTree, call: Any) -> None:
    """sqlite3.OperationalError ("attempt to write a readonly database") reached a
    program moving from the SDK, which expects the OSError of a failed append. The
    index is opened read-only by SQLite's URI rule: the suite may run as root."""
    s = make(tree)
    get_session_info(s.session_id, **opts(tree))  # indexed
    before = snapshot(tree.root)
    uri = f"file:{tree.root.parent / 'index.db'}?mode=ro"
    with sqlite3.connect(uri, uri=True) as conn:
        with pytest.raises(OSError, match="read-only|readonly") as caught:
            call(s.session_id, **{**opts(tree), "db": conn})
    assert not isinstance(caught.value, FileNotFoundError)
    assert snapshot(tree.root) == before


def test_untag_clears_a_tag(tree: ConfigTree) -> None:
    s = make(tree)
    tag_session(s.session_id, "keep", **opts(tree))
    assert info(tree, s.session_id).tag == "keep"
    tag_session(s.session_id, None, **opts(tree))
    assert info(tree, s.session_id).tag is None


def test_delete_removes_files_and_rows(tree: ConfigTree) -> None:
    s = tree.session(A)
    s.user("hello there")
    s.assistant("hi")
    sub = s.subagent(agent_id="ag1", tool_use_id="toolu_1")
    sub.user("subtask")
    s.write(mtime=MTIME)
    folder = s.path.with_suffix("")
    assert folder.is_dir()
    delete_session(s.session_id, directory=A, **opts(tree))
    assert not s.path.exists() and not folder.exists()
    assert list_sessions(**opts(tree, refresh=False)) == []
    with pytest.raises(FileNotFoundError):
        delete_session(s.session_id, **opts(tree))


def _chain(tree: ConfigTree) -> tuple[Any, list[str]]:
    s = tree.session(A)
    uuids = [s.user("first question"), s.assistant("first answer").uuid]
    uuids += [s.user("second question"), s.assistant("second answer").uuid]
    s.meta("custom-title", customTitle="Original")
    s.write(mtime=MTIME)
    return s, uuids


@pytest.mark.parametrize(
    ("kwargs", "title", "messages"),
    [
        ({}, "Original (fork)", 4),
        ({"title": "  Mine "}, "Mine", 4),
        ({"title": "   "}, "Original (fork)", 4),  # blank counts as none, as in the SDK
        ({"title": ""}, "Original (fork)", 4),
        ({"up_to_message_id": 1}, "Original (fork)", 2),
        ({"up_to_message_id": ""}, "Original (fork)", 4),  # falsy: the whole session
    ],
    ids=["default", "title", "blank-title", "empty-title", "up-to", "empty-up-to"],
)
def test_fork(tree: ConfigTree, kwargs: dict[str, Any], title: str, messages: int) -> None:
    s, uuids = _chain(tree)
    if isinstance(kwargs.get("up_to_message_id"), int):
        kwargs = {**kwargs, "up_to_message_id": uuids[kwargs["up_to_message_id"]]}
    result = fork_session(s.session_id, A, **kwargs, **opts(tree))
    assert isinstance(result, ForkSessionResult) and result.session_id != s.session_id
    assert (tree.project_dir(A) / f"{result.session_id}.jsonl").is_file()
    forked = info(tree, result.session_id)
    assert forked is not None and forked.custom_title == title
    got = get_session_messages(result.session_id, **opts(tree, refresh=False))
    assert len(got) == messages


@pytest.mark.parametrize(
    ("records", "up_to", "message"),
    [
        ([{"type": "user", "message": {"role": "user", "content": "hi"}}], None, "no messages"),
        (None, MISSING, f"Message {MISSING} not found in session"),
    ],
    ids=["no-chain-entries", "unknown-cut-point"],
)
def test_fork_with_nothing_to_copy_is_value_error(
    tree: ConfigTree, records: list[dict[str, Any]] | None, up_to: str | None, message: str
) -> None:
    if records is None:
        s, _ = _chain(tree)
    else:
        s = tree.session(A)
        s.entries.extend(records)
        s.write(mtime=MTIME)
    with pytest.raises(ValueError, match=message):
        fork_session(s.session_id, up_to_message_id=up_to, **opts(tree))
    assert list(tree.project_dir(A).glob("*.jsonl")) == [s.path]


# ----------------------------------------------------------------- db= and freshness
@pytest.mark.parametrize("kind", ["str", "path", "sqlite3", "sqlite-utils"])
def test_db_as_path_or_connection(tree: ConfigTree, kind: str) -> None:
    """``db=`` takes what :class:`sessiondex.Index` takes, for readers and writers
    (``list_sessions(db="/path")`` used to raise AttributeError)."""
    from sqlite_utils import Database

    s = make(tree)
    file = tree.root.parent / "index.db"
    db: Any = {
        "str": str(file),
        "path": file,
        "sqlite3": sqlite3.connect(file) if kind == "sqlite3" else None,
        "sqlite-utils": Database(file) if kind == "sqlite-utils" else None,
    }[kind]
    try:
        rename_session(s.session_id, "Renamed", db=db, config_dir=tree.root)
        [listed] = list_sessions(db=db, config_dir=tree.root, refresh=False)
        assert listed.custom_title == "Renamed"
        assert get_session_info(s.session_id, db=db, config_dir=tree.root) == listed
    finally:
        if kind in ("sqlite3", "sqlite-utils"):
            db.close()  # a connection passed in is the caller's: still open here
    assert file.is_file()


def test_writer_finds_a_session_a_live_watcher_has_not_indexed_yet(
    tree: ConfigTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a watcher running, reads skip the refresh; a writer that misses refreshes
    once instead of calling a session that exists "not found"."""
    from sessiondex.index import Index

    first = make(tree)
    assert list_sessions(**opts(tree))  # the index exists
    second = make(tree, prompt="written a moment ago")
    monkeypatch.setattr(Index, "watcher_alive", lambda self: True)
    tag_session(second.session_id, "fresh", **opts(tree))
    assert info(tree, second.session_id).tag == "fresh"
    assert info(tree, first.session_id) is not None


def test_default_database_answers_only_for_the_current_config_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One default index, config dirs changing between calls (as each SDK test sets its
    own ``CLAUDE_CONFIG_DIR``): rows of another root never leak into an answer."""
    monkeypatch.delenv("SESSIONDEX_DB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    one, two = ConfigTree(tmp_path / "one"), ConfigTree(tmp_path / "two")
    s1 = make(one)
    s2 = make(two, prompt="other root", session_id="22222222-2222-4222-8222-222222222222")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(one.root))
    assert [i.session_id for i in list_sessions()] == [s1.session_id]
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(two.root))
    assert [i.session_id for i in list_sessions()] == [s2.session_id]
    assert get_session_info(s1.session_id) is None
    with pytest.raises(FileNotFoundError):
        rename_session(s1.session_id, "not here")
    rename_session(s2.session_id, "here")
    assert list_sessions()[0].custom_title == "here"
    assert os.path.isfile(tmp_path / "cache" / "sessiondex" / "index.db")
