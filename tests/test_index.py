"""The indexer: fixture expectations, incremental == rebuild, no-change refresh, bad input."""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlite_utils import Database

import sessiondex.transcripts.reader as reader_module
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.query.sessions import VISIBLE_SQL, select_rows, to_object
from tests.builders import (
    ConfigTree,
    append_bytes,
    append_records,
    copy_fixtures,
    dumps,
    write_jsonl,
)
from tests.helpers_index import (
    check_fts_integrity,
    files_opened,
    index_snapshot,
    rebuilt_snapshot,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
COMPARED_FIELDS = (
    "cwd",
    "custom_title",
    "ai_title",
    "summary",
    "last_prompt",
    "first_prompt",
    "title",
    "tag",
    "git_branch",
    "branches",
    "pr_links",
    "pr_mentions",
    "message_count",
    "entrypoint",
    "is_sidechain",
    "forked_from",
    "created_at",
    "last_activity",
    "file_size",
    "project_key",
)


@pytest.fixture(scope="module")
def fixture_index(tmp_path_factory):
    base = tmp_path_factory.mktemp("fixtures")
    root = copy_fixtures(base)
    db = open_db(base / "index.db")
    stats = refresh(db, [root])
    yield root, db, stats
    db.close()


def _snapshot_files(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("session_id", sorted(EXPECTED), ids=lambda s: EXPECTED[s]["name"])
def test_fixture_session_fields(fixture_index, session_id: str) -> None:
    _, db, _ = fixture_index
    expected = EXPECTED[session_id]
    rows = select_rows(db, "s.session_id = ?", [session_id])
    assert len(rows) == 1
    got = to_object(db, rows[0])
    for name in COMPARED_FIELDS:
        if name in expected:
            assert got[name] == expected[name], name
    visible = db.execute(
        f"SELECT count(*) FROM sessions s WHERE s.session_id = ? AND {VISIBLE_SQL}", [session_id]
    ).fetchone()[0]
    assert (not visible) == expected["hidden_from_picker"]


def test_fixture_summary_counts_problems(fixture_index) -> None:
    _, _, stats = fixture_index
    assert stats.new == stats.files_seen
    assert stats.bad_lines == 1 and stats.problems == {"malformed-json": 1}
    # ignored names (agent-*.jsonl, *.orphaned-*, notes.jsonl) are never sessions
    assert stats.sessions == len(EXPECTED)


def test_indexing_never_touches_transcripts(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path)
    before = _snapshot_files(root)
    db = open_db(tmp_path / "i.db")
    refresh(db, [root])
    refresh(db, [root], rebuild=True)
    assert _snapshot_files(root) == before


def test_no_change_refresh_reads_no_bytes(tmp_path: Path, monkeypatch) -> None:
    root = copy_fixtures(tmp_path)
    db = open_db(tmp_path / "i.db")
    refresh(db, [root])
    with files_opened() as opened:
        stats = refresh(db, [root])
    assert stats.bytes_read == 0
    assert stats.unchanged == stats.files_seen > 0
    assert not [p for p in opened if p.endswith(".jsonl")]


def test_rebuild_equals_incremental_on_fixtures(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path)
    db = open_db(tmp_path / "a.db")
    refresh(db, [root])
    refresh(db, [root], rebuild=True)
    assert index_snapshot(db) == rebuilt_snapshot([root], tmp_path / "b.db")
    check_fts_integrity(db)


def _session(tree: ConfigTree, cwd: str = "/work/app", **kw):
    s = tree.session(cwd=cwd, **kw)
    s.user("first prompt about parsers")
    s.assistant("reply one")
    return s


def test_incremental_sequence_equals_rebuild(tmp_path: Path) -> None:
    """Appends, a partial line, truncation, in-place rewrite, replacement, deletion and
    new files: after each step the incremental index equals a fresh one."""
    tree = ConfigTree(tmp_path / "claude")
    a = _session(tree)
    a.meta("custom-title", customTitle="Parser work")
    path_a = a.write()
    b = _session(tree, cwd="/work/other")
    path_b = b.write()
    db = open_db(tmp_path / "inc.db")
    step = 0

    def check() -> None:
        nonlocal step
        step += 1
        refresh(db, [tree.root])
        assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / f"r{step}.db"), step
        check_fts_integrity(db)

    check()
    append_records(path_a, [{"type": "tag", "tag": "wip", "sessionId": a.session_id}])
    check()
    half = dumps(
        {
            "type": "user",
            "uuid": "u-late",
            "sessionId": a.session_id,
            "timestamp": "2026-11-03T00:00:00.000Z",
            "gitBranch": "late",
            "message": {"role": "user", "content": "zebra crossing words"},
        }
    )
    append_bytes(path_a, half[:20])
    check()
    assert not select_rows(db, "s.branches_text LIKE '%late%'")
    append_bytes(path_a, half[20:] + b"\n")
    check()
    assert select_rows(db, "s.branches_text LIKE '%late%'")
    # truncation below the consumed offset
    data = path_a.read_bytes()
    path_a.write_bytes(data[: len(data) // 2].rsplit(b"\n", 1)[0] + b"\n")
    check()
    # in-place rewrite with the same size: a changed byte early in the file
    data = bytearray(path_b.read_bytes())
    index = data.index(b"reply one")
    data[index : index + 9] = b"reply two"
    path_b.write_bytes(bytes(data))
    check()
    # replacement by rename (new inode), as Claude Code's compaction GC does
    tmp = path_b.with_name(path_b.name + ".compact.tmp.1")
    tmp.write_bytes(
        path_b.read_bytes()
        + dumps({"type": "custom-title", "customTitle": "Renamed", "sessionId": b.session_id})
        + b"\n"
    )
    os.replace(tmp, path_b)
    check()
    c = _session(tree, cwd="/work/third")
    sub = c.subagent(agent_id="abc", tool_use_id="toolu_1")
    sub.user("subagent words")
    c.write()
    check()
    path_b.unlink()
    check()
    assert {r["session_id"] for r in select_rows(db)} == {a.session_id, c.session_id}


def test_pr_mentions_read_in_any_order_equal_a_rebuild(tmp_path: Path) -> None:
    """A subagent's mention indexed before its main file's: the session object listed
    the mentions in the order they were read, a rebuild in file order."""
    tree = ConfigTree(tmp_path / "claude")
    a = _session(tree)
    path_a = a.write()
    db = open_db(tmp_path / "inc.db")
    refresh(db, [tree.root])
    sub = a.subagent(agent_id="s1", tool_use_id="toolu_9")
    sub.user("the subagent saw https://github.com/acme/shop/pull/3")
    a.write()
    refresh(db, [tree.root])
    append_records(
        path_a,
        [
            {
                "type": "user",
                "uuid": "u-pr",
                "sessionId": a.session_id,
                "message": {"role": "user", "content": "see https://github.com/acme/shop/pull/2"},
            }
        ],
    )
    refresh(db, [tree.root])
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "fresh.db")
    [obj] = [to_object(db, r) for r in select_rows(db)]
    assert [m["number"] for m in obj["pr_mentions"]] == [2, 3]


def test_a_new_sessions_mentions_are_in_the_order_a_changed_one_lists_them(
    tmp_path: Path,
) -> None:
    """A new session's object listed its mentions in the order its text names them
    (7, then 3); once the session changed, the object was built from the table, in
    number order (3, 7). A fresh build and a live index must answer alike."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree)
    s.user("see https://github.com/acme/shop/pull/7 and https://github.com/acme/shop/pull/3")
    path = s.write()
    db = open_db(tmp_path / "inc.db")
    refresh(db, [tree.root])

    def numbers() -> list[int]:
        [obj] = [to_object(db, r) for r in select_rows(db)]
        return [m["number"] for m in obj["pr_mentions"]]

    assert numbers() == [3, 7]
    append_records(path, [{"type": "tag", "tag": "x", "sessionId": s.session_id}])
    refresh(db, [tree.root])
    assert numbers() == [3, 7]


def test_subagents_are_indexed_under_their_parent(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree)
    sub = s.subagent(agent_id="a1", tool_use_id="toolu_9")
    sub.user("unique subagent wording xylophone")
    sub.assistant("done")
    s.write()
    db = open_db(tmp_path / "i.db")
    stats = refresh(db, [tree.root])
    assert stats.sessions == 1
    hits = db.execute(
        "SELECT s.session_id FROM messages_fts f JOIN messages m ON m.id = f.rowid"
        " JOIN sessions s ON s.id = m.session_rowid WHERE messages_fts MATCH"
        " 'xylophone'"
    ).fetchall()
    assert hits == [(s.session_id,)]
    row = select_rows(db)[0]
    assert row["message_count"] == 2  # subagent messages are not the session's own


def test_unreadable_file_is_reported_and_skipped(tmp_path: Path, monkeypatch) -> None:
    """EACCES on open (simulated: the suite may run as root, which ignores modes)."""
    tree = ConfigTree(tmp_path / "claude")
    path = _session(tree).write()
    _session(tree, cwd="/work/b").write()
    real_open = os.open

    def deny(target, *args, **kwargs):
        if str(target) == str(path):
            raise PermissionError(13, "Permission denied", str(target))
        return real_open(target, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    db = open_db(tmp_path / "i.db")
    stats = refresh(db, [tree.root])
    assert stats.errors == [(str(path), "Permission denied")]
    assert stats.sessions == 1
    monkeypatch.undo()
    assert refresh(db, [tree.root]).sessions == 2  # readable again: picked up


@pytest.mark.parametrize("how", ["list", "enter"])
@pytest.mark.parametrize("unlisted", ["projects", "project", "subagents"])
def test_a_directory_that_cannot_be_listed_keeps_its_sessions(
    tmp_path: Path, monkeypatch, unlisted: str, how: str
) -> None:
    """A restore or sync can leave a directory without read permission: its transcripts
    are unseen, not deleted. The refresh names the directory and keeps their rows (it
    used to forget them, silently); once readable, it is indexed as usual. EACCES is
    simulated: the suite may run as root, which ignores modes."""
    tree = ConfigTree(tmp_path / "claude")
    kept = _session(tree, cwd="/work/app")
    sub = kept.subagent(agent_id="a1", tool_use_id="toolu_1")
    sub.user("subagent wording quokka")
    sub.assistant("done")
    kept_path = kept.write()
    _session(tree, cwd="/work/other").write()
    db = open_db(tmp_path / "i.db")
    assert refresh(db, [tree.root]).sessions == 2
    before = index_snapshot(db)
    denied = {
        "projects": tree.root / "projects",
        "project": kept_path.parent,
        "subagents": kept_path.with_suffix("") / "subagents",
    }[unlisted]
    real_scandir, real_lstat = os.scandir, os.lstat

    def deny_list(target):
        if os.fspath(target) == str(denied):
            raise PermissionError(13, "Permission denied", os.fspath(target))
        return real_scandir(target)

    def inside(target) -> bool:
        return os.fspath(target).startswith(os.path.join(str(denied), ""))

    def deny_scandir_inside(target):  # mode r--: listed, but nothing under it reached
        if inside(target):
            raise PermissionError(13, "Permission denied", os.fspath(target))
        return real_scandir(target)

    def deny_lstat_inside(target, *args, **kwargs):
        if inside(target):
            raise PermissionError(13, "Permission denied", os.fspath(target))
        return real_lstat(target, *args, **kwargs)

    if how == "list":
        monkeypatch.setattr(os, "scandir", deny_list)
    else:
        monkeypatch.setattr(os, "scandir", deny_scandir_inside)
        monkeypatch.setattr(os, "lstat", deny_lstat_inside)
    stats = refresh(db, [tree.root])
    assert stats.removed == 0
    named = [p for p, _ in stats.errors]
    assert named and all(p == str(denied) or inside(p) for p in named), named
    assert all("Permission denied" in error for _, error in stats.errors)
    assert all("what the index holds from it is kept" in error for _, error in stats.errors)
    assert index_snapshot(db) == before
    monkeypatch.undo()
    kept.user("a later prompt")
    kept.write()
    assert refresh(db, [tree.root]).errors == []
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")


def test_a_rebuild_says_it_leaves_out_a_directory_it_cannot_list(
    tmp_path: Path, monkeypatch
) -> None:
    """``index --rebuild`` starts from an empty index: "what the index holds from it is
    kept" was false there. It says the dir's sessions are left out until it can be read."""
    tree = ConfigTree(tmp_path / "claude")
    _session(tree).write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    projects = str(tree.root / "projects")
    real_scandir = os.scandir

    def deny(target):
        if os.fspath(target) == projects:
            raise PermissionError(13, "Permission denied", projects)
        return real_scandir(target)

    monkeypatch.setattr(os, "scandir", deny)
    stats = refresh(db, [tree.root], rebuild=True)
    assert stats.errors == [
        (
            projects,
            "cannot list it (Permission denied); its sessions are left out of this rebuild"
            " until it can be read",
        )
    ]


@pytest.mark.parametrize(
    ("error", "kept"), [(PermissionError(13, "Permission denied"), True), (None, False)]
)
def test_the_watcher_forgets_a_transcript_only_when_it_is_gone(
    tmp_path: Path, monkeypatch, error: OSError | None, kept: bool
) -> None:
    """An event for a transcript in a dir that cannot be entered (a restore by ``mv``
    with bad modes) read as "gone", and the watcher removed its rows; a full refresh
    keeps them (``_entries``). EACCES is simulated: the suite may run as root."""
    from sessiondex.indexer.refresh import ingest_path
    from sessiondex.indexer.stats import RefreshStats

    tree = ConfigTree(tmp_path / "claude")
    path = _session(tree).write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    if error is None:
        path.unlink()
    else:
        real_lstat = os.lstat

        def deny(target, *args, **kwargs):
            if os.fspath(target) == str(path):
                raise error
            return real_lstat(target, *args, **kwargs)

        monkeypatch.setattr(os, "lstat", deny)
    stats = RefreshStats()
    ingest_path(db, str(path), [tree.root], stats)
    monkeypatch.undo()
    assert (len(select_rows(db)), stats.removed) == ((1, 0) if kept else (0, 1))
    assert bool(stats.errors) == kept


def test_file_vanishing_between_stat_and_open_is_left_out_quietly(
    tmp_path: Path, monkeypatch
) -> None:
    """A transcript deleted after discovery (Claude Code's sweep, a delete) is gone, not
    broken: no warning (a dozen of them under churn were noise: helper 90), no row."""
    tree = ConfigTree(tmp_path / "claude")
    path = _session(tree).write()
    real_open = os.open

    def vanish(target, *args, **kwargs):
        if str(target) == str(path):
            path.unlink()
        return real_open(target, *args, **kwargs)

    monkeypatch.setattr(os, "open", vanish)
    db = open_db(tmp_path / "i.db")
    stats = refresh(db, [tree.root])
    assert stats.errors == []
    assert stats.sessions == 0


@pytest.mark.parametrize(
    ("records", "field", "expected"),
    [
        # a tool input with summary/gitBranch keys is not a summary or a branch
        (
            [
                {
                    "type": "assistant",
                    "uuid": "a",
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "tool_use",
                                "id": "t",
                                "name": "X",
                                "input": {"summary": "NOT", "gitBranch": "NOT"},
                            }
                        ],
                    },
                }
            ],
            "summary",
            None,
        ),
        ([{"type": "tag", "tag": "x"}, {"type": "tag", "tag": ""}], "tag", None),
        ([{"type": "tag", "tag": ""}, {"type": "tag", "tag": "y"}], "tag", "y"),
        # a tag record without a string tag clears it, as the SDK reads one
        ([{"type": "tag", "tag": "x"}, {"type": "tag", "tag": None}], "tag", None),
        ([{"type": "tag", "tag": "x"}, {"type": "tag", "tag": 7}], "tag", None),
        ([{"type": "tag", "tag": "x"}, {"type": "tag"}], "tag", None),
        (
            [
                {"type": "custom-title", "customTitle": "A"},
                {"type": "custom-title", "customTitle": "B"},
            ],
            "custom_title",
            "B",
        ),
        (
            [
                {"type": "custom-title", "customTitle": "A"},
                {"type": "custom-title", "customTitle": ""},
            ],
            "custom_title",
            None,
        ),
        ([{"type": "user", "cwd": 5, "uuid": "u", "message": "x"}], "cwd", None),
        (
            [{"type": "user", "uuid": "u", "timestamp": "yesterday", "message": {"content": "hi"}}],
            "created_ms",
            None,
        ),
        (
            [{"type": "summary", "summary": "S1"}, {"type": "summary", "summary": "S2"}],
            "summary",
            "S2",
        ),
        # semantics 2: cwd from the first user/assistant record, not an earlier system one
        (
            [
                {"type": "system", "cwd": "/from/system", "content": "hook"},
                {"type": "user", "cwd": "/w/real", "message": {"role": "user", "content": "hi"}},
            ],
            "cwd",
            "/w/real",
        ),
        # entrypoint: the first one seen, even when the first record has none
        (
            [
                {"type": "custom-title", "customTitle": "T"},
                {"type": "user", "entrypoint": "sdk-ts", "message": {"content": "a"}},
                {"type": "user", "entrypoint": "cli", "message": {"content": "b"}},
            ],
            "entrypoint",
            "sdk-ts",
        ),
    ],
)
def test_whole_file_semantics_table(
    tmp_path: Path, records: list[dict], field: str, expected: object
) -> None:
    tree = ConfigTree(tmp_path / "claude")
    sid = "0f8b7c1e-2d3a-4b5c-8d9e-0a1b2c3d4e5f"
    write_jsonl(
        tree.project_dir("/w") / f"{sid}.jsonl",
        [{**record, "sessionId": sid} for record in records],
    )
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    assert select_rows(db)[0][field] == expected


def test_rename_deep_in_a_large_file(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree)
    s.meta("custom-title", customTitle="Deep name")
    for i in range(60):
        s.assistant(f"filler {i} " + "x" * 2000)
    path = s.write()
    assert path.stat().st_size > 128 * 1024
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    assert to_object(db, select_rows(db)[0])["title"] == "Deep name"


LINES = [
    {
        "type": "user",
        "uuid": "u1",
        "timestamp": "2026-11-01T00:00:00Z",
        "cwd": "/w",
        "gitBranch": "main",
        "message": {"role": "user", "content": "alpha words"},
    },
    {
        "type": "assistant",
        "uuid": "a1",
        "gitBranch": "feat",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "beta words"}]},
    },
    {"type": "custom-title", "customTitle": "T1"},
    {
        "type": "pr-link",
        "prNumber": 3,
        "prUrl": "https://github.com/o/r/pull/3",
        "prRepository": "o/r",
    },
    {"type": "tag", "tag": "t"},
    {
        "type": "user",
        "uuid": "u2",
        "message": {"role": "user", "content": "see https://gitlab.com/g/p/-/merge_requests/4"},
    },
    {"type": "tag", "tag": ""},
    {"type": "ai-title", "aiTitle": "AI"},
]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.sampled_from(range(len(LINES))), min_size=1, max_size=12),
    st.lists(st.integers(min_value=0, max_value=400), max_size=6),
)
def test_any_split_points_equal_rebuild(
    tmp_path_factory, picks: list[int], cuts: list[int]
) -> None:
    """Property: valid records appended at arbitrary byte split points, indexed after
    every write, give the same index as one pass over the final file."""
    base = tmp_path_factory.mktemp("prop")
    tree = ConfigTree(base / "claude")
    path = tree.project_dir("/w") / "0f8b7c1e-2d3a-4b5c-8d9e-0a1b2c3d4e5f.jsonl"
    path.parent.mkdir(parents=True)
    data = b"".join(dumps(LINES[i]) + b"\n" for i in picks)
    points = sorted({min(c, len(data)) for c in cuts} | {len(data)})
    path.write_bytes(b"")
    db = open_db(base / "inc.db")
    previous = 0
    for point in points:
        append_bytes(path, data[previous:point])
        previous = point
        refresh(db, [tree.root])
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], base / "full.db")


def fts_segments_to_merge(db: Database, fts: str) -> bool:
    """Whether ``fts`` holds more than one segment: FTS5's 'merge' with a negative
    budget merges any two segments, and changes nothing when only one is left."""
    conn = db.conn
    before = conn.total_changes
    with conn:
        conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('merge', -1)")
    return conn.total_changes - before >= 2


def test_bulk_build_leaves_one_segment_so_appends_never_merge_big_ones(
    tmp_path: Path, monkeypatch
) -> None:
    """A cold build's FTS rebuild ends with one segment per table: big segments left on
    the low levels are rewritten by the automerge of some later small append, which stalls
    that live update for a second or more on a real-sized history."""
    import sessiondex.indexer.bulk as bulk
    import sessiondex.indexer.refresh as ingest

    root = copy_fixtures(tmp_path)
    monkeypatch.setattr(ingest, "PREFETCH_MIN_BYTES", 1)
    # a tiny pending-terms budget makes the fixtures' rebuild write many segments
    monkeypatch.setattr(bulk, "REBUILD_HASHSIZE", 512)
    db = open_db(tmp_path / "bulk.db")
    refresh(db, [root])
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] > 50
    for fts in ("messages_fts", "session_search_fts"):
        assert not fts_segments_to_merge(db, fts), fts
    check_fts_integrity(db)
    db.close()


def test_bulk_build_gives_the_merged_segments_pages_back(tmp_path: Path, monkeypatch) -> None:
    """The FTS 'optimize' that ends a cold build frees the pages of the segments it
    merged; a new index is incremental-vacuum, so the build ends with none left over
    (otherwise a text-heavy index keeps ~5 MB of free pages until later writes)."""
    import sessiondex.indexer.bulk as bulk
    import sessiondex.indexer.refresh as ingest

    tree = ConfigTree(tmp_path / "claude")
    rng = random.Random(4)
    words = [f"w{n}" for n in range(3000)]
    for n in range(12):
        s = _session(tree, cwd=f"/work/p{n % 3}")
        for _ in range(20):
            s.user(" ".join(rng.choice(words) for _ in range(300)))
        s.write()
    monkeypatch.setattr(ingest, "PREFETCH_MIN_BYTES", 1)
    monkeypatch.setattr(bulk, "REBUILD_HASHSIZE", 512)  # many segments to merge
    db = open_db(tmp_path / "bulk.db")
    assert db.execute("PRAGMA auto_vacuum").fetchone() == (2,)  # incremental
    freed: list[int] = []
    real = bulk.restore_fts

    def restore_and_count(db_: Database) -> None:
        real(db_)
        freed.append(db_.execute("PRAGMA freelist_count").fetchone()[0])

    monkeypatch.setattr(bulk, "restore_fts", restore_and_count)
    refresh(db, [tree.root])
    assert freed and freed[0] > 0  # what the merge left: this test sees the vacuum work
    assert db.execute("PRAGMA freelist_count").fetchone() == (0,)
    check_fts_integrity(db)


def test_a_rebuild_converts_an_index_made_without_auto_vacuum(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path)
    path = tmp_path / "old.db"
    # An index an older version made, before new files got auto_vacuum: the migrations
    # run on a file without that setting (once it has pages, it is fixed at NONE).
    from sqlite_utils import Database as PlainDatabase

    from sessiondex.indexer.db import register
    from sessiondex.indexer.schema import migrations

    old = PlainDatabase(path)
    register(old.conn)  # the stored-text function the FTS views read through
    old.execute("PRAGMA page_size = 16384")
    migrations.apply(old)
    old.close()
    db = open_db(path)
    refresh(db, [root])
    assert db.execute("PRAGMA auto_vacuum").fetchone() == (0,)
    refresh(db, [root], rebuild=True)
    assert db.execute("PRAGMA auto_vacuum").fetchone() == (2,)
    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] > 0


def _fts_segment_rows(db: Database) -> int:
    return int(db.execute("SELECT count(*) FROM session_search_fts_data").fetchone()[0])


def test_session_metadata_is_indexed_once_and_reindexed_only_when_it_changes(
    tmp_path: Path,
) -> None:
    """``session_search`` is a view of ``sessions`` (m008): the title is searchable,
    a new title replaces the old in the FTS index, and an append that changes no
    searchable column (only counters and times) does not re-index the session."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree)
    s.user("first question about caching")
    s.meta("custom-title", customTitle="Zanzibar migration")
    path = s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    assert db.execute(
        "SELECT type FROM sqlite_master WHERE name = 'session_search'"
    ).fetchone() == ("view",)

    def titled(word: str) -> int:
        return int(
            db.execute(
                "SELECT count(*) FROM session_search_fts WHERE session_search_fts MATCH ?",
                [f"custom_title: {word}"],
            ).fetchone()[0]
        )

    assert titled("zanzibar") == 1
    with db.conn:
        db.execute("INSERT INTO session_search_fts(session_search_fts) VALUES ('optimize')")
    segments = _fts_segment_rows(db)
    for change in ("+ 1", "- 1"):  # a counter changes; a searchable one is set, unchanged
        with db.conn:
            db.execute(
                f"UPDATE sessions SET message_count = message_count {change},"
                " custom_title = custom_title, first_prompt = first_prompt"
            )
    assert _fts_segment_rows(db) == segments
    append_records(
        path,
        [{"type": "custom-title", "customTitle": "Kilimanjaro rollout", "sessionId": s.session_id}],
    )
    refresh(db, [tree.root])
    assert (titled("zanzibar"), titled("kilimanjaro")) == (0, 1)
    check_fts_integrity(db)
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "new.db")


def _index_before(path: Path, migration: str) -> Database:
    """An index as a version that stopped before ``migration`` left it, at this
    DERIVATION_VERSION (so opening it migrates, and does not re-derive)."""
    from sessiondex.indexer import schema
    from sessiondex.indexer.shape import DERIVATION_VERSION
    from sessiondex.indexer.textstore import register

    old = Database(path)
    register(old.conn)
    schema.migrations.apply(old, stop_before=migration)
    old.execute(
        "INSERT INTO meta (key, value) VALUES ('derivation_version', ?)",
        [str(DERIVATION_VERSION)],
    )
    return old


def test_an_index_of_schema_m007_keeps_its_session_search_answers(tmp_path: Path) -> None:
    """m008 replaces the ``session_search`` table by the view and re-indexes from
    ``sessions``: what the old table held (``fts_text`` of the same columns) is found."""
    path = tmp_path / "old.db"
    old = _index_before(path, "m008_session_search_view")
    old.execute(
        "INSERT INTO sessions (id, root, project_key, session_id, file_path, custom_title,"
        " first_prompt) VALUES (1, '/r', 'k', 's', '/r/k/s.jsonl', 'Quokka audit',"
        " 'why does the 数据库 fail')"
    )
    old.execute(
        "INSERT INTO session_search (id, custom_title, first_prompt)"
        " VALUES (1, 'Quokka audit', 'why does the 数 据 库 fail')"
    )
    old.conn.commit()
    old.close()
    db = open_db(path)
    for query in ("quokka", '"数 据"'):
        assert db.execute(
            "SELECT rowid FROM session_search_fts WHERE session_search_fts MATCH ?", [query]
        ).fetchall() == [(1,)], query
    check_fts_integrity(db)


def _shown(db: Database, word: str) -> list[int]:
    return [
        r[0]
        for r in db.execute(
            "SELECT rowid FROM session_search_fts WHERE session_search_fts MATCH ?",
            [f"shown_title: {word}"],
        )
    ]


def test_the_title_shown_of_an_untitled_session_is_indexed_until_it_gets_a_name(
    tmp_path: Path,
) -> None:
    """``shown_title`` (m011) holds the title the picker shows a session with no custom
    or AI title, its first prompt here, for the filter as letters are typed; once an AI
    title comes, the column is empty (the name is what is shown)."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/work/app")
    s.user("quarantine the flaky test")
    s.assistant("ok")
    s.user("a later ask about parsers")
    path = s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    (rowid,) = [r["id"] for r in select_rows(db)]
    assert (_shown(db, "quarantine"), _shown(db, "parsers")) == ([rowid], [])
    append_records(
        path, [{"type": "ai-title", "aiTitle": "Flaky tests", "sessionId": s.session_id}]
    )
    refresh(db, [tree.root])
    assert _shown(db, "quarantine") == []
    check_fts_integrity(db)
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "new.db")


def test_an_index_of_schema_m010_gets_shown_title(tmp_path: Path) -> None:
    """m011 makes the view, the FTS table and the triggers again with ``shown_title`` and
    indexes the sessions already there; later writes keep it in step."""
    path = tmp_path / "old.db"
    old = _index_before(path, "m011_shown_title")
    old.execute(
        "INSERT INTO sessions (id, root, project_key, session_id, file_path, first_prompt)"
        " VALUES (1, '/r', 'k', 's', '/r/k/s.jsonl', 'quokka audit please')"
    )
    old.conn.commit()
    assert old.execute(
        "SELECT count(*) FROM pragma_table_info('session_search_fts') WHERE name = 'shown_title'"
    ).fetchone() == (0,)
    old.close()
    db = open_db(path)
    assert _shown(db, "quokka") == [1]
    with db.conn:
        db.execute("UPDATE sessions SET custom_title = 'Audit' WHERE id = 1")
    assert _shown(db, "quokka") == []
    check_fts_integrity(db)


def test_reader_limit_keeps_memory_bounded_on_a_huge_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(reader_module, "MAX_LINE_BYTES", 1 << 16)
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree)
    s.raw(b'{"type":"user","message":{"content":"' + b"z" * 200_000 + b'"}}\n')
    s.assistant("after the huge line")
    s.write()
    db = open_db(tmp_path / "i.db")
    stats = refresh(db, [tree.root])
    assert stats.problems == {"line-too-long": 1}
    assert select_rows(db)[0]["message_count"] == 3


def test_bulk_build_equals_trigger_build_and_survives_a_crash(tmp_path: Path, monkeypatch) -> None:
    """A refresh big enough for bulk mode (insert trigger off, one FTS rebuild) gives the
    same index as row-by-row FTS; a bulk build that dies mid-way is repaired by the
    next open_db (trigger restored, FTS rebuilt from the rows)."""
    import sessiondex.indexer.refresh as ingest
    from sessiondex.indexer.bulk import BULK_TRIGGER_KEY, FTS5_HASHSIZE, TRIGGERS, BulkFts

    root = copy_fixtures(tmp_path)
    monkeypatch.setattr(ingest, "PREFETCH_MIN_BYTES", 1)
    db = open_db(tmp_path / "bulk.db")
    refresh(db, [root])
    check_fts_integrity(db)
    assert (
        db.execute("SELECT count(*) FROM meta WHERE key = ?", [BULK_TRIGGER_KEY]).fetchone()[0] == 0
    )
    # The rebuild's larger pending-terms budget is not left for the small transactions.
    for fts in ("messages_fts", "session_search_fts"):
        budget = db.execute(f"SELECT v FROM {fts}_config WHERE k = 'hashsize'").fetchone()
        assert budget is not None and budget[0] == FTS5_HASHSIZE
    monkeypatch.setattr(ingest, "PREFETCH_MIN_BYTES", 1 << 40)
    assert index_snapshot(db) == rebuilt_snapshot([root], tmp_path / "plain.db")
    db.close()

    crashed = open_db(tmp_path / "crash.db")
    bulk = BulkFts(crashed)
    bulk.__enter__()
    assert bulk.active
    monkeypatch.setattr(ingest, "BulkFts", lambda db: contextlib.nullcontext())
    refresh(crashed, [root])  # rows written while the trigger is off
    crashed.close()
    bulk._lock.release()  # the process "died": its lock is gone
    reopened = open_db(tmp_path / "crash.db")
    check_fts_integrity(reopened)
    names = {r[0] for r in reopened.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert set(TRIGGERS) <= names
    assert index_snapshot(reopened) == rebuilt_snapshot([root], tmp_path / "plain2.db")
    hits = reopened.execute(
        "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", ['"ошибку"']
    ).fetchone()[0]
    assert hits == 1
    titles = reopened.execute(
        "SELECT count(*) FROM session_search_fts WHERE session_search_fts MATCH ?", ['"Auth"']
    ).fetchone()[0]
    assert titles >= 1


def test_a_bulk_build_of_an_older_version_is_repaired(tmp_path: Path) -> None:
    """An older version's bulk build dropped only the insert triggers and kept their SQL:
    killed mid-way, the next open rebuilds both tables and puts those two back."""
    from sessiondex.indexer.bulk import BULK_TRIGGER_KEY, TRIGGERS

    root = copy_fixtures(tmp_path)
    db = open_db(tmp_path / "old.db")
    refresh(db, [root])
    saved = dict(
        db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
            " AND name IN ('messages_ai', 'session_search_ai')"
        )
    )
    with db.conn:
        for name in saved:
            db.execute(f"DROP TRIGGER {name}")
        db.execute("DELETE FROM messages_fts_data WHERE id > 10")  # its FTS: not whole
        db.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?)", [BULK_TRIGGER_KEY, json.dumps(saved)]
        )
    db.close()
    reopened = open_db(tmp_path / "old.db")
    check_fts_integrity(reopened)
    names = {r[0] for r in reopened.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert set(TRIGGERS) <= names
    assert index_snapshot(reopened) == rebuilt_snapshot([root], tmp_path / "plain.db")


def test_rows_changed_by_anyone_during_a_bulk_build_stay_in_step(
    tmp_path: Path, monkeypatch
) -> None:
    """While a bulk build runs, rows are deleted, rewritten and added by ordinary
    refreshes (another process's, between two of the build's commits): rows indexed
    before the build and rows written during it. The deletes had failed with "database
    disk image is malformed": the delete triggers told FTS5 to delete rows it never had.
    FTS5's integrity check passes after the build, and so does a search for what is
    left and what is gone."""
    import sessiondex.indexer.bulk as bulk
    import sessiondex.indexer.refresh as ingest

    monkeypatch.setattr(ingest, "PREFETCH_MIN_BYTES", 1 << 40)  # ordinary refreshes
    tree = ConfigTree(tmp_path / "claude")

    def session(word: str, n: int) -> Any:
        s = _session(tree, cwd=f"/work/{word}")
        for i in range(n):
            s.user(f"{word} question {i}")
            s.assistant(f"{word} answer {i}")
        s.write()
        return s

    kept_old, gone_old, kept_new = session("alpaca", 3), session("bison", 3), session("camel", 3)
    db = open_db(tmp_path / "i.db")
    later = kept_new.path.with_suffix(".later")
    kept_new.path.rename(later)
    refresh(db, [tree.root])  # alpaca and bison: indexed by the triggers
    build = bulk.BulkFts(db)
    build.__enter__()
    assert build.active
    later.rename(kept_new.path)
    gone_new = session("dingo", 4)
    refresh(db, [tree.root])  # bison again (unchanged), camel and dingo: during the build
    gone_old.path.unlink()  # rows FTS5 has
    gone_new.path.unlink()  # rows it never had
    kept_old.user("alpaca appended later")
    kept_old.write()
    refresh(db, [tree.root])
    build.__exit__(None, None, None)
    check_fts_integrity(db)

    def found(word: str) -> int:
        return db.execute(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", [word]
        ).fetchone()[0]

    assert (found("alpaca"), found("bison"), found("camel"), found("dingo")) == (7, 0, 6, 0)
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "plain.db")


def test_new_session_rows_equal_the_general_path(tmp_path: Path) -> None:
    """A transcript indexed whole on first sight (the fast path) and the same transcript
    indexed as an append to an empty-looking file (the general path) give equal rows,
    mention order included."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w")
    s.user("see https://github.com/o/r/pull/2 then https://github.com/o/r/pull/1")
    s.assistant(
        "and https://github.com/o/r/pull/2 again, https://gitlab.com/g/p/-/merge_requests/3"
    )
    s.pr_link(number=1, url="https://github.com/o/r/pull/1", repository="o/r")
    s.meta("custom-title", customTitle="Mentions")
    path = s.write()
    data = path.read_bytes()
    path.write_bytes(data[:1])  # not a complete line: the file is known, nothing read
    stepwise = open_db(tmp_path / "step.db")
    refresh(stepwise, [tree.root])
    path.write_bytes(data)
    refresh(stepwise, [tree.root])
    whole = open_db(tmp_path / "whole.db")
    refresh(whole, [tree.root])
    assert index_snapshot(stepwise) == index_snapshot(whole)
    obj = json.loads(whole.execute("SELECT object_json FROM sessions").fetchone()[0])
    assert [m["number"] for m in obj["pr_mentions"]] == [2, 3]


def test_migration_names_constant_matches_the_registered_migrations() -> None:
    from sessiondex.indexer.schema import migrations
    from sessiondex.indexer.shape import MIGRATION_NAMES

    assert tuple(m.name for m in migrations._migrations) == MIGRATION_NAMES


def _schema_and_rows(db: Database) -> dict[str, Any]:
    """What a new index holds: its objects, page settings and every table's rows (the
    migrations' own timestamps left out)."""
    conn = db.conn
    held: dict[str, Any] = {
        "objects": sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")),
        "pragmas": [
            conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("page_size", "auto_vacuum", "journal_mode", "user_version")
        ],
    }
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        columns = "name, migration_set" if table == "_sqlite_migrations" else "*"
        held[table] = sorted(conn.execute(f"SELECT {columns} FROM [{table}]"), key=repr)
    return held


def test_a_new_index_begun_from_the_template_equals_one_migrated_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sessiondex.indexer.db as db_module

    root = copy_fixtures(tmp_path)
    copied = open_db(tmp_path / "copied.db")

    def no_template(page_size: int) -> sqlite3.Connection:
        raise sqlite3.OperationalError("no template here")

    monkeypatch.setattr(db_module, "_migrated_template", no_template)
    migrated = open_db(tmp_path / "migrated.db")
    assert _schema_and_rows(copied) == _schema_and_rows(migrated)
    assert copied.execute("PRAGMA page_size").fetchone()[0] == db_module.PAGE_SIZE
    for db in (copied, migrated):
        refresh(db, [root])
        check_fts_integrity(db)
    assert index_snapshot(copied) == index_snapshot(migrated)


def test_a_new_database_set_to_another_encoding_keeps_it(tmp_path: Path) -> None:
    """The template is UTF-8; a caller who set ``PRAGMA encoding`` on the empty
    database they hand to ``Index`` got UTF-8 all the same (helper 88)."""
    import sessiondex

    root = copy_fixtures(tmp_path)
    conn = sqlite3.connect(tmp_path / "utf16.db")
    conn.execute("PRAGMA encoding = 'UTF-16le'")
    with sessiondex.Index(conn, [root]) as index:
        index.refresh()
        assert index.list(scope="all")
    assert conn.execute("PRAGMA encoding").fetchone()[0] == "UTF-16le"
    conn.close()


def test_a_new_file_another_process_began_meanwhile_is_not_copied_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes may open a new index at once. The one that waited for the write
    turn finds the file begun, and written to, by the other: its rows stay."""
    import sessiondex.indexer.db as db_module
    from sessiondex.indexer.meta import get_meta, set_meta

    target = tmp_path / "index.db"
    waiting = Database(target)  # opened while the file is still empty
    real_turn = db_module.write_turn
    other_went = False

    @contextlib.contextmanager
    def turn_after_the_other(db: Database) -> Any:
        nonlocal other_went
        if not other_went:
            other_went = True
            other = open_db(target)
            set_meta(other, "archive_dirs", '["/kept"]')
            other.close()
        with real_turn(db):
            yield

    monkeypatch.setattr(db_module, "write_turn", turn_after_the_other)
    db_module.prepare(waiting)
    assert other_went
    assert get_meta(waiting, "archive_dirs") == '["/kept"]'


def test_readonly_open_answers_like_the_full_one(tmp_path: Path) -> None:
    from sessiondex.indexer.db import ReadOnlyIndex
    from sessiondex.query.filters import Filters
    from sessiondex.query.listing import list_sessions
    from sessiondex.query.search import search

    root = copy_fixtures(tmp_path)
    path = tmp_path / "i.db"
    assert not isinstance(open_db(path, readonly=True), ReadOnlyIndex)  # new: migrated
    full = open_db(path)
    refresh(full, [root])
    reader = open_db(path, readonly=True)
    assert isinstance(reader, ReadOnlyIndex)
    everything = Filters(scope="all", all_kinds=True)
    assert list_sessions(reader, everything) == list_sessions(full, everything)
    assert search(reader, "ошибку", everything) == search(full, "ошибку", everything)
    with pytest.raises(sqlite3.OperationalError):
        reader.execute("DELETE FROM sessions")


def test_tool_output_is_searchable_only_with_tools(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sessiondex.cli.main import cli

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w")
    s.user("run the build")
    turn = s.assistant("running", tool_uses=[("Bash", {"command": "make"})])
    s.tool_result(turn.tool_use_ids[0], "error: flibbertigibbet not found")
    s.write()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]

    def hits() -> list[str]:
        out = CliRunner().invoke(
            cli, [*base, "search", "flibbertigibbet", "--scope", "all", "--json"]
        )
        return [r["session_id"] for r in json.loads(out.stdout)]

    assert CliRunner().invoke(cli, [*base, "index"]).exit_code == 0
    assert hits() == []
    assert CliRunner().invoke(cli, [*base, "index", "--tools"]).exit_code == 0
    assert hits() == [s.session_id]
    assert CliRunner().invoke(cli, [*base, "index"]).exit_code == 0  # remembered
    assert hits() == [s.session_id]
    # remembered across a rebuild too (it forgot, and tool output went unsearchable)
    assert CliRunner().invoke(cli, [*base, "index", "--rebuild"]).exit_code == 0
    assert hits() == [s.session_id]
    assert CliRunner().invoke(cli, [*base, "index", "--no-tools"]).exit_code == 0
    assert hits() == []


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://github.com/o/r/pull/3", "https://github.com/o/r/pull/3"),
        # a forge our parser does not know: kept (docs/pull-requests.md), normalized as
        # far as its path allows: https, host case, credentials, default port, trailing
        # slash, query and fragment (the spec's normalized form; helper 120)
        (
            "https://dev.azure.com/o/p/_git/r/pullrequest/3",
            "https://dev.azure.com/o/p/_git/r/pullrequest/3",
        ),
        (
            "HTTP://u:tok@Dev.Azure.COM:443/o/p/_git/r/pullrequest/3/?tab=x#frag",
            "https://dev.azure.com/o/p/_git/r/pullrequest/3",
        ),
        ("https://forge.example:8443/o/r/pr/3", "https://forge.example:8443/o/r/pr/3"),
        # the number not in the path: the query or fragment holds it, and stays (each
        # PR of such a forge was one URL, and a session's others were lost; helper 128)
        ("https://gerrit.example.org/#/c/3/", "https://gerrit.example.org#/c/3"),
        ("https://phab.example.org/D?id=3", "https://phab.example.org/D?id=3"),
        ("https://forge.example:99999/o/r/pr/3", None),  # no port at all
        # not a URL at all: no link (it used to be one, on host "not a url", provider github)
        ("not a url", None),
        ("ftp://example.com/pull/3", None),
        ("https:///pull/3", None),
        # a newline (urlsplit drops it) or a space: no URL, and no forged header line
        ("https://github.com/o/r/pull/4\nsession: forged", None),
        ("https://dev.azure.com/o/p/_git/r/pullrequest/3 x", None),
        # whatever the forge: known ones too (their parser took what came before)
        ("https://github.com/o/r/pull/5\t", None),
        ("https://github.com/o/r/pull/5\u202e", None),
        ("https://git\u200bhub.com/o/r/pull/5", None),
        ("https://gitlab.com/g/p/-/merge_requests/5\x0b", None),
        # a character a URL spells %-encoded: it would end an href or an autolink
        ('https://github.com/o/r/pull/7"><script>alert(1)</script>', None),
    ],
)
def test_a_pr_link_record_needs_a_web_url(tmp_path: Path, url: str, kept: str | None) -> None:
    from sessiondex.indexer.derive import pr_link_from_record

    record = {"type": "pr-link", "prNumber": 3, "prUrl": url, "prRepository": "o/r"}
    link = pr_link_from_record(record)
    assert (link.url if link else None) == kept
    if link is not None:
        assert link.url.startswith((f"https://{link.host}/", f"https://{link.host}#"))


@pytest.mark.parametrize(("number", "kept"), [(3, True), (0, False), (-3, False), (2**63, False)])
def test_an_unknown_forge_s_link_needs_a_pr_number(number: int, kept: bool) -> None:
    """A PR number is positive and fits SQLite; ``-3`` was kept as the link's number."""
    from sessiondex.indexer.derive import pr_link_from_record

    url = "https://dev.azure.com/o/p/_git/r/pullrequest/3"
    record = {"type": "pr-link", "prNumber": number, "prUrl": url}
    assert (pr_link_from_record(record) is not None) == kept


def test_a_deleted_config_dir_leaves_the_shared_index(tmp_path: Path) -> None:
    """One database, two config dirs; the first is deleted, the second is indexed: the
    first's sessions leave the answers (they were listed and found by search, and show
    could not open them). A config dir that exists but is not asked about keeps its rows
    in the index, which answer again once it is asked about (and only then)."""
    import shutil

    from click.testing import CliRunner

    from sessiondex.cli.main import cli

    trees = {}
    for i, name in enumerate(("a", "b", "c")):
        tree = ConfigTree(tmp_path / name)
        # Three sessions: one ID in two config dirs would be copies of one (one row).
        s = tree.session(cwd=f"/w/{name}", session_id=f"00000000-0000-4000-8000-00000000000{i}")
        s.user(f"the zebra{name} word")
        s.write()
        trees[name] = tree
    db = str(tmp_path / "shared.db")

    def run(*args: str) -> Any:
        roots = [arg for t in trees.values() for arg in ("--config-dir", str(t.root))]
        return CliRunner().invoke(cli, [*roots, "--db", db, *args])

    assert run("index").exit_code == 0
    shutil.rmtree(trees.pop("a").root)
    del trees["c"]  # still on disk, just not asked about this time
    assert run("index").exit_code == 0
    listed = json.loads(run("list", "--scope", "all", "--json").stdout)
    assert sorted(r["cwd"] for r in listed) == ["/w/b"]
    assert run("search", "zebraa", "--scope", "all").exit_code == 1
    trees["c"] = ConfigTree(tmp_path / "c")
    listed = json.loads(run("--no-refresh", "list", "--scope", "all", "--json").stdout)
    assert sorted(r["cwd"] for r in listed) == ["/w/b", "/w/c"]


def test_a_reading_command_forgets_a_deleted_config_dir_too(tmp_path: Path) -> None:
    """Its rows were not listed, but only ``index`` forgot them: until then they still
    weighed in FTS5's bm25 statistics, and search ranked otherwise than a rebuild did
    (helper 111). The check before a reading command sees the dir is gone."""
    import shutil

    from click.testing import CliRunner

    from sessiondex.cli.main import cli

    kept, gone = ConfigTree(tmp_path / "kept"), ConfigTree(tmp_path / "gone")
    for n, (tree, text) in enumerate(((kept, "alpha alpha golf"), (kept, "alpha golf golf"))):
        s = tree.session(cwd=f"/w/k{n}")
        s.user(text)
        s.write(mtime=1_790_000_000)
    for n in range(4):  # IDs of their own: one ID in two config dirs is one session
        s = gone.session(cwd=f"/w/g{n}", session_id=f"00000000-0000-4000-8000-00000000009{n}")
        s.user(f"golf number {n}")
        s.write(mtime=1_790_000_000)
    db = str(tmp_path / "shared.db")

    def search(*roots: ConfigTree, index: str = db) -> list[tuple[str, float]]:
        args = [a for t in roots for a in ("--config-dir", str(t.root))]
        result = CliRunner().invoke(
            cli, [*args, "--db", index, "search", "alpha golf", "--scope", "all", "--json"]
        )
        return [(r["session_id"], r["score"]) for r in json.loads(result.stdout)]

    search(kept, gone)
    shutil.rmtree(gone.root)
    assert search(kept) == search(kept, index=str(tmp_path / "rebuilt.db"))
    left = open_db(tmp_path / "shared.db").execute(
        "SELECT count(*) FROM files WHERE root = ?", [str(gone.root)]
    )
    assert left.fetchone()[0] == 0


@pytest.mark.parametrize("then", ["a new mtime", "an append", "the mtime set back"])
@pytest.mark.parametrize("edit", ["a word mid-file", "the title mid-file", "touch only"])
def test_a_same_size_edit_mid_file_is_read_again(tmp_path: Path, edit: str, then: str) -> None:
    """The fingerprint covered the first and last 4 KiB read: a same-size change between
    them (same inode) left the old words searchable and the new ones not, under watch
    and index alike, while a rebuild had them: with a new mtime alone, and, until the
    fingerprint held a CRC of the whole prefix, when a line was appended after the edit
    (a redacted secret stayed searchable)."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree)
    for n in range(40):
        s.user(f"question {n} about the parser " + "filler words here " * 20)
        if n == 20:
            s.meta("custom-title", customTitle="alphatitle")
            s.user("the zebramark word sits in the middle")
        s.assistant(f"answer {n} " + "more filler text " * 20)
    path = s.write(mtime=1_800_000_000)
    db = open_db(tmp_path / "inc.db")
    refresh(db, [tree.root])
    data = path.read_bytes()
    assert len(data) > 40_000
    if edit == "a word mid-file":
        data = data.replace(b"zebramark", b"yakmarker")
    elif edit == "the title mid-file":
        data = data.replace(b"alphatitle", b"omegatitle")
    with open(path, "r+b") as file:  # in place: same inode, same size
        file.write(data)
    if then == "an append":  # Claude Code goes on writing
        s.user("one more question after the edit")
        with open(path, "ab") as file:
            file.write(json.dumps(s.records[-1]).encode() + b"\n")
    # touch -r, cp -p in place: size, mtime and inode as indexed; only the ctime moved
    mtime = 1_800_000_000 if then == "the mtime set back" else 1_800_000_100
    os.utime(path, ns=(mtime * 10**9, mtime * 10**9))
    stats = refresh(db, [tree.root])
    # read again from the start, but for a pure append (a same-size touch is read again
    # too: the only sure answer, and Claude Code's writes change the size); a touch
    # with the mtime set back is checked by its fingerprint and found unchanged
    pure_append = edit == "touch only" and then == "an append"
    nothing = edit == "touch only" and then == "the mtime set back"
    expected = (0, 1) if pure_append else (0, 0) if nothing else (1, 0)
    assert (stats.rewritten, stats.grown) == expected
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")
    check_fts_integrity(db)


@pytest.mark.parametrize("repair", ["as a record", "as a record and its newline"])
def test_an_unfinished_last_line_repaired_in_place_with_the_mtime_kept_is_read(
    tmp_path: Path, repair: str
) -> None:
    """A crashed write left a last line that is no JSON and has no newline; it is fixed
    in place, same size, the mtime set back (touch -r, cp -p). The CRC checks the prefix
    the index folded, but nothing looked at the bytes after it: the title stayed
    missing for good, a rebuild had it (helper 111)."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree)
    s.user("fix the bug")
    path = s.write(mtime=1_790_000_000)
    record = json.dumps(
        {"type": "custom-title", "customTitle": "Kilo title", "sessionId": s.session_id},
        separators=(",", ":"),
    ).encode()
    fixed = record + b"\n" if repair == "as a record and its newline" else record + b" "
    with open(path, "ab") as file:
        file.write(record[:-1] + b"X" + b"X" * (len(fixed) - len(record)))  # a crashed write
    os.utime(path, ns=(1_790_000_100 * 10**9,) * 2)
    db = open_db(tmp_path / "inc.db")
    refresh(db, [tree.root])
    st = os.stat(path)
    with open(path, "r+b") as file:  # in place: same inode, same size
        file.seek(st.st_size - len(fixed))
        file.write(fixed)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    refresh(db, [tree.root])
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")
    title = db.execute("SELECT custom_title FROM sessions").fetchone()[0]
    assert title == "Kilo title"


def test_a_chmod_is_checked_once_and_an_older_index_learns_ctimes(
    tmp_path: Path, monkeypatch
) -> None:
    """The change time also moves on a chmod: the file is opened once and its
    fingerprint says unchanged; the next refresh trusts the stat again. Rows of an index
    made before ctimes were kept get theirs at the next refresh, without a read."""
    import sessiondex.indexer.ingest as ingest

    tree = ConfigTree(tmp_path / "claude")
    path = _session(tree).write(mtime=1_800_000_000)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    checks: list[str] = []
    real = ingest.fingerprint
    monkeypatch.setattr(ingest, "fingerprint", lambda *a: checks.append("x") or real(*a))
    os.chmod(path, 0o600)
    assert refresh(db, [tree.root]).unchanged == 1 and checks == ["x"]
    assert refresh(db, [tree.root]).unchanged == 1 and checks == ["x"]  # not again
    with db.conn:
        db.execute("UPDATE files SET ctime_ns = NULL")
    refresh(db, [tree.root])
    assert checks == ["x"]
    (ctime,) = db.execute("SELECT ctime_ns FROM files").fetchone()
    assert ctime == os.stat(path).st_ctime_ns


def test_a_reading_command_sees_a_same_size_edit_with_the_mtime_set_back(
    tmp_path: Path,
) -> None:
    """The check before a reading command compares the change time too."""
    from click.testing import CliRunner

    from sessiondex.cli.main import cli

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("please fix the zebra bug")
    path = s.write(mtime=1_800_000_000)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    assert CliRunner().invoke(cli, [*base, "index"]).exit_code == 0
    with open(path, "r+b") as file:
        file.write(path.read_bytes().replace(b"zebra", b"yakka"))
    os.utime(path, ns=(1_800_000_000 * 10**9, 1_800_000_000 * 10**9))
    found = CliRunner().invoke(cli, [*base, "search", "yakka", "--scope", "all", "--json"])
    assert found.exit_code == 0, found.output
    assert [o["session_id"] for o in json.loads(found.stdout)] == [s.session_id]
    gone = CliRunner().invoke(cli, [*base, "search", "zebra", "--scope", "all", "--json"])
    assert json.loads(gone.stdout) == []


@pytest.mark.parametrize("edited", [False, True])
def test_a_file_grown_since_an_older_versions_fingerprint_is_read_again_once(
    tmp_path: Path, edited: bool
) -> None:
    """A fingerprint stored before it held a CRC (its first and last windows alone) cannot
    rule out an edit in the middle: a file that grew since is read again from the start,
    once, with or without such an edit (the redacted secret is gone either way); then it
    holds a CRC and the next append is read as one. A file that did not change is not
    read at all."""
    tree = ConfigTree(tmp_path / "claude")
    s = _session(tree)
    for n in range(30):
        s.user(f"filler question {n} " + "padding words " * 40)
        if n == 15:  # in the middle: outside both 4 KiB windows
            s.user("my key is SECRETpw12345 do not share")
    path = s.write(mtime=1_800_000_000)
    quiet = _session(tree, cwd="/work/other").write(mtime=1_800_000_000)
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    with db.conn:  # as the older version left them
        db.execute("UPDATE files SET fingerprint = substr(fingerprint, 1, 32)")
    assert refresh(db, [tree.root]).unchanged == 2  # nothing read for them
    if edited:
        data = path.read_bytes().replace(b"SECRETpw12345", b"*************")
        with open(path, "r+b") as file:  # in place: same inode, same size
            file.write(data)
    s.user("one more question")
    with open(path, "ab") as file:
        file.write(json.dumps(s.records[-1]).encode() + b"\n")
    stats = refresh(db, [tree.root])
    assert (stats.rewritten, stats.grown, stats.unchanged) == (1, 0, 1)
    assert (
        ":" in db.execute("SELECT fingerprint FROM files WHERE path = ?", [str(path)]).fetchone()[0]
    )
    assert (
        ":"
        not in db.execute("SELECT fingerprint FROM files WHERE path = ?", [str(quiet)]).fetchone()[
            0
        ]
    )
    secret = db.execute(
        "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'SECRETpw12345'"
    ).fetchone()[0]
    assert secret == (0 if edited else 1)
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")
    s.user("and another")
    with open(path, "ab") as file:
        file.write(json.dumps(s.records[-1]).encode() + b"\n")
    assert refresh(db, [tree.root]).grown == 1


def test_a_github_mention_of_a_linked_pr_in_another_case_is_no_mention(tmp_path: Path) -> None:
    """GitHub owner and repository names ignore case, and the PR lookup treats them so;
    the session object listed the same PR under both pr_links and pr_mentions."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("see https://github.com/owner/repo/pull/7 and https://gitlab.com/G/P/-/merge_requests/3")
    s.pr_link(number=7, url="https://github.com/Owner/Repo/pull/7", repository="Owner/Repo")
    s.pr_link(number=3, url="https://gitlab.com/g/p/-/merge_requests/3", repository="g/p")
    s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    (obj,) = [json.loads(r["object_json"]) for r in select_rows(db)]
    assert [p["url"] for p in obj["pr_links"]] == [
        "https://github.com/Owner/Repo/pull/7",
        "https://gitlab.com/g/p/-/merge_requests/3",
    ]
    # GitLab paths are case-sensitive: a mention in another case is another URL.
    assert [p["url"] for p in obj["pr_mentions"]] == ["https://gitlab.com/G/P/-/merge_requests/3"]


def test_a_process_with_other_threads_parses_a_cold_build_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parsing process of a cold build was started from any process: from the
    picker (other threads, Textual's stderr) it failed with "bad value(s) in
    fds_to_keep" and the index never caught up; from a library user's threads it
    spawned a child that ran the caller's script again. With other threads alive the
    new files are parsed in-process, and the dictionary is still trained."""
    import threading

    import sessiondex.indexer.refresh as refresh_module
    from bench.corpus import generate
    from sessiondex import Index
    from sessiondex.indexer.prefetch import Prefetcher
    from sessiondex.indexer.textstore import current_dictionary

    def no_process(self: Any, dictionary: Any) -> Any:
        raise AssertionError("a parsing process was started")

    monkeypatch.setattr(refresh_module, "PREFETCH_MIN_BYTES", 1)
    monkeypatch.setattr(Prefetcher, "_start_pool", no_process)
    corpus = tmp_path / "corpus"
    generate(corpus, sessions=30, projects=3, size_mb=4, seed=7, profile="text-heavy")
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # a front end's thread
    other.start()
    try:
        with Index(tmp_path / "index.db", [corpus]) as index:
            stats = index.refresh()
            assert stats.sessions >= 30
            assert index.search("the", scope="all", limit=3)
            assert current_dictionary(index.writer().conn) is not None
    finally:
        stop.set()
        other.join()


# sqlite3 reports an exception raised in a SQL callback as unraisable, then fails the
# statement with its own error: that report is this test's input, not a problem.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_inside_a_sql_function_is_aborted_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during a build often lands in the text functions SQLite calls back; the
    KeyboardInterrupt came out as "Error: the index at … failed: user-defined function
    raised exception". It is click's "Aborted!", exit 1, and the next run completes."""
    import os
    import signal

    from click.testing import CliRunner

    import sessiondex.indexer.textstore as textstore
    from sessiondex.cli.main import cli

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("the test runner handles SIGINT itself")
    root = copy_fixtures(tmp_path)
    fts_value = textstore._fts_value
    sent: list[bool] = []

    def interrupted(value: Any) -> Any:
        if not sent:  # once: the command's own handler is in place then
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # delivered inside this SQL callback
        return fts_value(value)

    monkeypatch.setattr(textstore, "_fts_value", interrupted)
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, "index"])
    assert result.exit_code == 1
    assert "Aborted!" in result.output and "user-defined function" not in result.output
    monkeypatch.setattr(textstore, "_fts_value", fts_value)
    again = CliRunner().invoke(cli, [*base, "index"])
    assert again.exit_code == 0, again.output


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_ctrl_c_during_a_rebuild_stops_it_and_keeps_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during `index --rebuild` (a user tired of waiting) landed in a SQL text
    function too; a rebuild took any failure it could not name as an index it cannot
    clear, so it said "the index … was damaged (user-defined function raised
    exception)", moved the file aside (a whole copy left as `.corrupt-…`) and built
    again, ignoring the Ctrl-C. It is "Aborted!", exit 1, the file left where it is."""
    import os
    import signal

    from click.testing import CliRunner

    import sessiondex.indexer.textstore as textstore
    from sessiondex.cli.main import cli

    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("the test runner handles SIGINT itself")
    root = copy_fixtures(tmp_path)
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    assert CliRunner().invoke(cli, [*base, "index"]).exit_code == 0
    fts_value = textstore._fts_value
    sent: list[bool] = []

    def interrupted(value: Any) -> Any:
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # delivered inside this SQL callback
        return fts_value(value)

    monkeypatch.setattr(textstore, "_fts_value", interrupted)
    result = CliRunner().invoke(cli, [*base, "index", "--rebuild"])
    assert sent
    assert result.exit_code == 1, result.output
    assert "Aborted!" in result.output and "damaged" not in result.output
    assert not list(tmp_path.glob("i.db.corrupt*"))
    monkeypatch.setattr(textstore, "_fts_value", fts_value)
    again = CliRunner().invoke(cli, [*base, "index", "--rebuild"])
    assert again.exit_code == 0, again.output
    assert not list(tmp_path.glob("i.db.corrupt*"))


@pytest.mark.parametrize("slice_bytes", [300, 4096])
@pytest.mark.parametrize("cold", [False, True], ids=["one by one", "cold build"])
def test_a_file_read_in_slices_gives_the_rows_of_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slice_bytes: int, cold: bool
) -> None:
    """A transcript of hundreds of MB was parsed whole (one of 200 MB peaked at 653 MB):
    files past ``SLICE_BYTES`` are read a slice at a time, each applied as an append
    is. The fixtures (titles, tags, PR links late in files, a malformed line, a last
    line without its newline, subagents, forks) read in slices of 300 bytes (shorter
    than most lines) and 4 KB give the same rows as one read, and so does a cold build,
    which leaves such files to the writer."""
    import sessiondex.indexer.ingest as ingest_module
    import sessiondex.indexer.refresh as refresh_module

    root = copy_fixtures(tmp_path)
    whole = rebuilt_snapshot([root], tmp_path / "whole.db")
    monkeypatch.setattr(ingest_module, "SLICE_BYTES", slice_bytes)
    if cold:
        monkeypatch.setattr(refresh_module, "PREFETCH_MIN_BYTES", 1)
    db = open_db(tmp_path / "sliced.db")
    stats = refresh(db, [root])
    assert stats.new == stats.files_seen  # each file counted once, however many slices
    assert index_snapshot(db) == whole
    check_fts_integrity(db)
    db.close()


def test_a_failing_step_rolls_back_alone_at_every_depth(tmp_path: Path) -> None:
    """``immediate`` inside a transaction is a savepoint; a refresh nests them (a commit
    group, a file, a slice). One that fails takes back its own rows only, whatever
    the depth, and the rows of the steps around it stay."""
    from sessiondex.indexer.meta import immediate

    db = open_db(tmp_path / "i.db")
    db.execute("CREATE TABLE steps (name TEXT)")

    def names() -> list[str]:
        return [row[0] for row in db.execute("SELECT name FROM steps ORDER BY rowid")]

    with immediate(db):
        db.execute("INSERT INTO steps VALUES ('outer')")
        with immediate(db):
            db.execute("INSERT INTO steps VALUES ('kept')")
            with contextlib.suppress(RuntimeError), immediate(db):
                db.execute("INSERT INTO steps VALUES ('failed deep')")
                raise RuntimeError
            db.execute("INSERT INTO steps VALUES ('after')")
        with contextlib.suppress(RuntimeError), immediate(db):
            db.execute("INSERT INTO steps VALUES ('failed')")
            with immediate(db):
                db.execute("INSERT INTO steps VALUES ('inside the failed one')")
            raise RuntimeError
        db.execute("INSERT INTO steps VALUES ('last')")
    assert not db.conn.in_transaction
    assert names() == ["outer", "kept", "after", "last"]


_ABSENT = object()
_TITLE_VALUES = [_ABSENT, "", "  ", "x"]


@pytest.mark.parametrize("summary", [None, "legacy summary"])
@pytest.mark.parametrize("ai", _TITLE_VALUES, ids=["ai-absent", "ai-empty", "ai-blank", "ai-x"])
@pytest.mark.parametrize(
    "custom", _TITLE_VALUES, ids=["custom-absent", "custom-empty", "custom-blank", "custom-x"]
)
def test_title_precedence_with_empty_and_blank_titles(
    tmp_path: Path, custom: object, ai: object, summary: str | None
) -> None:
    """semantics: an empty (or blank) custom or AI title is no title, so the shown title
    falls through to the next one, down to the summary and the first prompt; Claude Code's
    JS ``customTitle ?? aiTitle`` would keep "" but the spec says "" clears."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session()
    s.user("the first prompt")
    s.assistant("reply")
    if summary is not None:
        s.meta("summary", summary=summary, sessionId=None)
    # an earlier real name, so "" must clear it rather than be skipped over
    s.meta("custom-title", customTitle="old name")
    s.meta("ai-title", aiTitle="old ai")
    if custom is not _ABSENT:
        s.meta("custom-title", customTitle=custom)
    if ai is not _ABSENT:
        s.meta("ai-title", aiTitle=ai)
    s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    row = select_rows(db)[0]
    expected_custom = {_ABSENT: "old name", "": None, "  ": None, "x": "x"}[custom]  # type: ignore[index]
    expected_ai = {_ABSENT: "old ai", "": None, "  ": None, "x": "x"}[ai]  # type: ignore[index]
    assert (row["custom_title"], row["ai_title"]) == (expected_custom, expected_ai)
    shown = expected_custom or expected_ai or summary or "the first prompt"
    assert to_object(db, row)["title"] == shown
