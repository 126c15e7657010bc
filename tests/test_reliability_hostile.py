"""Hostile corpus: whatever is under projects/, ``index`` completes and nothing crashes.

A config dir is written by many versions of Claude Code, by crashes, by other tools and
by people. Every bad thing in one tree: malformed JSON, NUL bytes, invalid UTF-8, a 50 MB
line, whitespace-only lines, arrays and numbers instead of objects, every known field
with the wrong type, empty files, a directory, a symlink loop and a link to /etc/passwd
named like transcripts, a project dir whose name is not UTF-8, a symlinked project dir,
and files that vanish or turn unreadable between the stat and the open. ``index --json``
exits 0, counts each problem by kind, indexes the good sessions (listed and searchable);
then every reading command exits 0 or 1 over that corpus, never with a traceback.
A hypothesis property does the same for any JSON value in any known field.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiondex.cli.main import cli
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.query.filters import Filters
from sessiondex.query.listing import list_sessions
from sessiondex.query.search import search
from sessiondex.render.conversation import build_conversation, render
from tests.builders import ConfigTree, append_records, write_jsonl
from tests.helpers_index import check_fts_integrity, index_snapshot

CWD = "/home/dev/hostile"
BIG_LINE_BYTES = 50_000_000

# Every field sessiondex or the conversation model reads, with a value of the wrong type.
WRONG_TYPES: dict[str, Any] = {
    "cwd": 5,
    "message": "x",
    "timestamp": "yesterday",
    "customTitle": 7,
    "tag": [],
    "gitBranch": {},
    "isSidechain": "yes",
    "prUrl": 5,
    "prNumber": "twelve",
    "prRepository": 9,
    "aiTitle": [],
    "summary": {},
    "lastPrompt": 3,
    "agentName": 1.5,
    "entrypoint": 3,
    "forkedFrom": "x",
    "uuid": 5,
    "parentUuid": 7,
    "sessionId": [],
    "isMeta": "yes",
    "toolUseResult": 5,
    "leafUuid": {},
    "isCompactSummary": "no",
    "logicalParentUuid": 3,
    "agentId": [],
    "subtype": 4,
    "content": 8,
    "compactMetadata": "x",
    "userType": 0,
    "version": [],
    "requestId": {},
}
BAD_CONTENT: list[Any] = [
    1,
    None,
    "plain",
    [],
    {"type": 5},
    {"type": "text", "text": 5},
    {"type": "text"},
    {"type": "tool_use", "input": "x", "name": 3, "id": []},
    {"type": "tool_result", "content": 5, "tool_use_id": None},
    {"type": "tool_result", "content": [1, {"type": "text", "text": None}]},
    {"type": "thinking", "thinking": {}},
    {"type": "image", "source": "x"},
]


def wrong_type_records(sid: str) -> list[dict[str, Any]]:
    """One record per field and type it could carry, then one with every field wrong."""
    records: list[dict[str, Any]] = []
    kinds = [
        "user",
        "assistant",
        "system",
        "summary",
        "custom-title",
        "ai-title",
        "tag",
        "pr-link",
        "agent-name",
        "last-prompt",
        "progress",
        "attachment",
        "file-history-snapshot",
        "queue-operation",
    ]
    for kind in kinds:
        for key, value in WRONG_TYPES.items():
            records.append({"type": kind, "sessionId": sid, key: value})
    for kind in ("user", "assistant"):
        for block in BAD_CONTENT:
            records.append(
                {
                    "type": kind,
                    "sessionId": sid,
                    "uuid": f"{kind}-{len(records)}",
                    "message": {"role": kind, "content": [block]},
                }
            )
        for message in (
            {"role": 5, "content": 5},
            {"content": {"a": 1}},
            [],
            5,
            None,
            {"content": None},
            {"role": "user"},
        ):
            records.append({"type": kind, "sessionId": sid, "message": message})
    for stamp in (1e300, -1, 0, "9999999-01-01", "2026-13-45T99:99:99Z", True, None, []):
        records.append(
            {
                "type": "user",
                "sessionId": sid,
                "timestamp": stamp,
                "message": {"role": "user", "content": "stamp"},
            }
        )
    for origin in ({"sessionId": 5}, {"sessionId": "s", "messageUuid": []}, [], 1):
        records.append({"type": "user", "sessionId": sid, "forkedFrom": origin})
    for kind in (5, None, [], {}, "", "USER"):
        records.append({"type": kind, "sessionId": sid})
    records.append({"type": "user", **WRONG_TYPES})
    records.append({"type": "assistant", **WRONG_TYPES})
    return records


class Hostile:
    """The tree, with the expected problem counts and the good sessions' words."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.tree = ConfigTree(base / "claude")
        self.db = base / "index.db"
        self.projects = self.tree.root / "projects"
        self.expected_problems: dict[str, int] = {}
        self.good: dict[str, str] = {}  # unique word → session id
        self.hostile_ids: list[str] = []
        self.inputs = 0  # bad things tried, for the report

        for word in ("zucchini", "quokka"):
            s = self.tree.session(cwd=CWD)
            s.user(f"please look at the {word} module")
            s.assistant(f"The {word} module is fine")
            s.meta("custom-title", customTitle=f"Good {word}")
            s.write(mtime=1_790_000_000)
            self.good[word] = s.session_id

        # A session whose bad lines sit between good ones: the good ones are indexed.
        s = self.tree.session(cwd=CWD)
        s.user("survivor before the bad lines")
        bad_lines = {
            "malformed-json": [
                b'{"type": "user", "message": ',
                b"not json at all",
                b"{]",
                b'{"a": 1}}',
                b"\xef\xbb\xbf{}",
                b"\xc3\x28 broken",  # not JSON either way: skipped, so malformed
            ],
            "nul-byte": [b'{"type":"user","message":{"content":"a\x00b"}}', b"\x00" * 64],
            "invalid-utf8": [  # read, its bad bytes as U+FFFD
                b'{"type":"user","message":{"content":"\xff\xfe"}}',
            ],
            "not-an-object": [
                b"[1, 2, 3]",
                b"42",
                b'"a string"',
                b"null",
                b"true",
                b"[]",
                b"-0.5e10",
            ],
        }
        for kind, lines in bad_lines.items():
            for line in lines:
                s.raw(line + b"\n")
                self.expected_problems[kind] = self.expected_problems.get(kind, 0) + 1
        for blank in (b"", b" ", b"\t", b"\r", b" \t \r ", b"\x0c"):
            s.raw(blank + b"\n")  # whitespace lines are neither records nor problems
        self.inputs += sum(len(v) for v in bad_lines.values()) + 6
        s.user("survivor after the bad lines")
        s.write(mtime=1_790_000_100)
        self.good["survivor"] = s.session_id
        self.hostile_ids.append(s.session_id)

        # A 50 MB line (over MAX_LINE_BYTES), then a good line in the same file.
        s = self.tree.session(cwd=CWD)
        s.user("before the giant line")
        s.write(mtime=1_790_000_200)
        with open(s.path, "ab") as fh:
            fh.write(b'{"type":"user","message":{"role":"user","content":"')
            chunk = b"giant " * 100_000
            for _ in range(BIG_LINE_BYTES // len(chunk)):
                fh.write(chunk)
            fh.write(b'"}}\n')
            fh.write(
                orjson.dumps(
                    {
                        "type": "user",
                        "sessionId": s.session_id,
                        "uuid": "after-giant",
                        "cwd": CWD,
                        "message": {"role": "user", "content": "walrus after the giant line"},
                    }
                )
                + b"\n"
            )
        os.utime(s.path, (1_790_000_200, 1_790_000_200))
        self.expected_problems["line-too-long"] = 1
        self.good["walrus"] = s.session_id
        self.hostile_ids.append(s.session_id)
        self.inputs += 1

        # Every known field with the wrong type.
        sid = "0f8b7c1e-2d3a-4b5c-8d9e-0a1b2c3d4e5f"
        records: list[Any] = wrong_type_records(sid)
        for number in (b"99999999999999999999999", b"1e308", b"-1e308", b"-0"):
            records.append(
                b'{"type":"user","uuid":"big","timestamp":'
                + number
                + b',"message":{"role":"user","content":[{"type":"text","text":'
                + number
                + b"}]}}\n"
            )
        records.append(
            {
                "type": "user",
                "sessionId": sid,
                "cwd": CWD,
                "uuid": "typed-ok",
                "message": {"role": "user", "content": "ocelot typed fine"},
            }
        )
        write_jsonl(self.tree.project_dir(CWD) / f"{sid}.jsonl", records, mtime=1_790_000_300)
        self.good["ocelot"] = sid
        self.hostile_ids.append(sid)
        self.inputs += len(records) - 1

        # Empty and whitespace-only transcripts.
        project = self.tree.project_dir(CWD)
        empty = "1a1a1a1a-0000-4000-8000-000000000001"
        (project / f"{empty}.jsonl").write_bytes(b"")
        blank = "1a1a1a1a-0000-4000-8000-000000000002"
        (project / f"{blank}.jsonl").write_bytes(b"\n \n\t\n")
        partial = "1a1a1a1a-0000-4000-8000-000000000003"
        (project / f"{partial}.jsonl").write_bytes(b'{"type":"user","message":{"content":"x')
        self.hostile_ids += [empty, blank, partial]
        self.inputs += 3

        # Things named like transcripts that are not regular files inside projects/.
        outside = base / "outside"
        outside.mkdir()
        (outside / "secret.jsonl").write_bytes(
            orjson.dumps(
                {
                    "type": "user",
                    "cwd": CWD,
                    "uuid": "o",
                    "message": {"role": "user", "content": "narwhal outside"},
                }
            )
            + b"\n"
        )
        (project / "2b2b2b2b-0000-4000-8000-000000000001.jsonl").mkdir()
        loop = project / "2b2b2b2b-0000-4000-8000-000000000002.jsonl"
        loop.symlink_to(loop.name)
        (project / "2b2b2b2b-0000-4000-8000-000000000003.jsonl").symlink_to("/etc/passwd")
        (project / "2b2b2b2b-0000-4000-8000-000000000004.jsonl").symlink_to(
            outside / "secret.jsonl"
        )
        (self.projects / "-linked-project").symlink_to(outside, target_is_directory=True)
        (outside / "2b2b2b2b-0000-4000-8000-000000000005.jsonl").symlink_to(
            outside / "secret.jsonl"
        )
        # a subagents/ folder that is a link out of projects/
        (project / self.good["zucchini"]).mkdir()
        (project / self.good["zucchini"] / "subagents").symlink_to(outside)
        (outside / "agent-evil.jsonl").write_bytes((outside / "secret.jsonl").read_bytes())
        self.inputs += 6

        # A project dir whose name is not valid UTF-8, holding a good session.
        odd = os.path.join(os.fsencode(self.projects), b"-home-dev-caf\xe9")
        os.mkdir(odd)
        odd_id = "3c3c3c3c-0000-4000-8000-000000000001"
        with open(os.path.join(odd, f"{odd_id}.jsonl".encode()), "wb") as fh:
            fh.write(
                orjson.dumps(
                    {
                        "type": "user",
                        "sessionId": odd_id,
                        "uuid": "c",
                        "cwd": "/home/dev/café",
                        "message": {"role": "user", "content": "platypus in an odd dir"},
                    }
                )
                + b"\n"
            )
        self.odd_id = odd_id
        self.inputs += 1

        # Two that will vanish / turn unreadable between the stat and the open.
        self.vanishing = self._plain_session("vanishing words")
        self.denied = self._plain_session("denied words")
        self.inputs += 2

    def _plain_session(self, text: str) -> Path:
        s = self.tree.session(cwd=CWD)
        s.user(text)
        return s.write(mtime=1_790_000_400)

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(
            cli, ["--config-dir", str(self.tree.root), "--db", str(self.db), *args]
        )


def no_traceback(result: Result, codes: tuple[int, ...] = (0, 1)) -> None:
    assert result.exit_code in codes, (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    return Hostile(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def indexed(hostile: Hostile) -> dict[str, Any]:
    """``index --json`` over the hostile tree, with the vanish/EACCES races simulated."""
    import sessiondex.indexer.ingest as ingest

    real_open = ingest.open_regular

    def racy_open(target: Any) -> Any:
        if str(target) == str(hostile.vanishing) and hostile.vanishing.exists():
            hostile.vanishing.unlink()  # gone after the stat, before the open
        if str(target) == str(hostile.denied):
            raise PermissionError(13, "Permission denied", str(target))
        return real_open(target)

    mp = pytest.MonkeyPatch()
    mp.setattr(ingest, "open_regular", racy_open)  # the indexer's opens only
    try:
        result = hostile.run("index", "--json")
    finally:
        mp.undo()
    no_traceback(result, (0,))
    return json.loads(result.stdout)


# Entries named like transcripts that are never read: the symlink loop, the link to
# /etc/passwd, the link to a file outside, the linked project dir, the linked
# subagents/ folder; the directory named <uuid>.jsonl; the non-UTF-8 project dir.
EXPECTED_SKIPPED = {"skipped-symlink": 5, "skipped-not-a-file": 1, "skipped-non-utf8-name": 1}


def test_index_counts_every_problem_by_kind(hostile: Hostile, indexed: dict[str, Any]) -> None:
    assert indexed["problems"] == {**hostile.expected_problems, **EXPECTED_SKIPPED}
    assert indexed["bad_lines"] == sum(hostile.expected_problems.values())
    errors = {e["path"]: e["error"] for e in indexed["errors"]}
    # a transcript gone since discovery is no error (deleted: the next refresh forgets
    # it); one that cannot be read is
    assert errors == {str(hostile.denied): "Permission denied"}


def test_good_sessions_are_listed_and_searchable(hostile: Hostile, indexed: dict[str, Any]) -> None:
    listed = hostile.run("list", "--scope", "all", "--all-kinds", "--json")
    no_traceback(listed, (0,))
    ids = {row["session_id"] for row in json.loads(listed.stdout)}
    assert set(hostile.good.values()) <= ids
    for word, sid in hostile.good.items():
        found = hostile.run("search", word, "--scope", "all", "--all-kinds", "--json")
        no_traceback(found, (0,))
        assert [row["session_id"] for row in json.loads(found.stdout)] == [sid], word
    # the good lines around the bad ones were all read
    both = hostile.run("search", "survivor", "--scope", "all", "--json")
    assert "after the bad lines" in both.stdout or json.loads(both.stdout)
    db = open_db(hostile.db)
    try:
        texts = {r[0] for r in db.execute("SELECT text FROM message_text")}
        assert any("survivor before" in t for t in texts)
        assert any("survivor after" in t for t in texts)
        check_fts_integrity(db)
    finally:
        db.close()


def test_nothing_outside_projects_or_through_links_is_indexed(
    hostile: Hostile, indexed: dict[str, Any]
) -> None:
    db = open_db(hostile.db)
    try:
        paths = [r[0] for r in db.execute("SELECT path FROM files")]
        # (not `search`: with no match it offers close titles instead)
        assert (
            db.execute(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'narwhal'"
            ).fetchone()[0]
            == 0
        )
    finally:
        db.close()
    projects = str(hostile.projects) + os.sep
    assert all(p.startswith(projects) for p in paths)
    assert not any("2b2b2b2b" in p or "-linked-project" in p or "agent-evil" in p for p in paths)


def test_odd_project_dir_name_does_not_stop_the_index(
    hostile: Hostile, indexed: dict[str, Any]
) -> None:
    """A non-UTF-8 directory name is skipped; it used to stop every refresh."""
    db = open_db(hostile.db)
    try:
        rows = db.execute(
            "SELECT count(*) FROM sessions WHERE session_id = ?", [hostile.odd_id]
        ).fetchone()[0]
    finally:
        db.close()
    # Skipped (SQLite text is UTF-8; Claude Code never makes such a name), while the
    # index went on: the fixture asserted exit 0 and the good sessions are searchable.
    assert rows == 0
    assert not any(hostile.odd_id in e["path"] for e in indexed["errors"])


def test_a_second_run_reads_nothing_and_equals_a_rebuild(
    hostile: Hostile, indexed: dict[str, Any], tmp_path: Path
) -> None:
    # The file the first run could not open is new to this one, unless a test sharing
    # the index ran before (the order of tests decides which).
    db = open_db(hostile.db)
    try:
        skipped = db.execute("SELECT 1 FROM files WHERE path = ?", [str(hostile.denied)])
        picked_up_already = skipped.fetchone() is not None
    finally:
        db.close()
    again = hostile.run("index", "--json")
    no_traceback(again, (0,))
    summary = json.loads(again.stdout)
    assert summary["new"] == (0 if picked_up_already else 1) and summary["rewritten"] == 0
    # the files skipped by the simulated races are picked up now
    assert {e["path"] for e in summary["errors"]} <= {str(hostile.vanishing)}
    db = open_db(hostile.db)
    rebuilt = open_db(tmp_path / "rebuilt.db")
    try:
        refresh(rebuilt, [hostile.tree.root])
        assert index_snapshot(db) == index_snapshot(rebuilt)
    finally:
        db.close()
        rebuilt.close()


def test_the_parsing_process_handles_the_same_corpus(
    hostile: Hostile, indexed: dict[str, Any], tmp_path: Path, monkeypatch
) -> None:
    """The cold build's prefetching worker (used for big corpora) gives the same rows."""
    import sessiondex.indexer.refresh as ingest

    monkeypatch.setattr(ingest, "PREFETCH_MIN_BYTES", 0)
    a, b = open_db(tmp_path / "prefetch.db"), open_db(tmp_path / "plain.db")
    try:
        stats = refresh(a, [hostile.tree.root])
        assert dict(stats.problems) == {**hostile.expected_problems, **EXPECTED_SKIPPED}
        monkeypatch.setattr(ingest, "PREFETCH_MIN_BYTES", 1 << 62)
        refresh(b, [hostile.tree.root])
        assert index_snapshot(a) == index_snapshot(b)
    finally:
        a.close()
        b.close()


def _reading_runs(hostile: Hostile) -> list[list[str]]:
    ids = hostile.hostile_ids + list(hostile.good.values()) + [hostile.odd_id]
    runs: list[list[str]] = [
        ["stats"],
        ["stats", "--json"],
        ["cleanup"],
        ["cleanup", "--json", "--days", "1"],
        ["from-pr", "--scope", "all"],
        ["from-pr", "12", "--cwd", CWD],
        ["continue", "--cwd", CWD],
        ["continue", "--cwd", CWD, "--print-mode", "--json"],
    ]
    for fmt in ("table", "json", "jsonl", "csv"):
        runs.append(["list", "--scope", "all", "--all-kinds", "--format", fmt])
        runs.append(["search", "stamp", "--scope", "all", "--all-kinds", "--format", fmt])
    # ("\udcff", bytes that are not UTF-8: a usage error, test_an_argument_that_is_not_utf8…)
    for query in ("giant", "x", "5", "yes", "typed", "\x00", "ü" * 300):
        runs.append(["search", query, "--scope", "all", "--all-kinds"])
    for sid in ids:
        runs.append(["resolve", sid, "--cwd", CWD, "--json"])
        runs.append(["resume", sid, "--cwd", CWD, "--dry-run"])
        for fmt in ("text", "md", "json"):
            runs.append(["show", sid, "--cwd", CWD, "--tools", "--subagents", "--format", fmt])
        runs.append(
            [
                "export",
                sid,
                "--cwd",
                CWD,
                "--tools",
                "--subagents",
                "-o",
                str(hostile.base / "exports" / f"{sid}.html"),
            ]
        )
    return runs


def test_every_reading_command_exits_cleanly(hostile: Hostile, indexed: dict[str, Any]) -> None:
    (hostile.base / "exports").mkdir(exist_ok=True)
    runs = _reading_runs(hostile)
    for args in runs:
        no_traceback(hostile.run(*args))
    assert len(runs) >= 90


# ------------------------------------------------------------- property: any JSON value
KNOWN_FIELDS = sorted(set(WRONG_TYPES) | {"type", "message"})
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "text",
                    "content",
                    "role",
                    "input",
                    "id",
                    "tool_use_id",
                    "sessionId",
                    "name",
                ]
            ),
            children,
            max_size=3,
        )
    ),
    max_leaves=8,
)
RECORD = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "user",
                "assistant",
                "system",
                "summary",
                "custom-title",
                "tag",
                "pr-link",
                "ai-title",
                "last-prompt",
                "agent-name",
            ]
        )
        | JSON
    },
    optional={name: JSON for name in KNOWN_FIELDS if name != "type"},
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(records=st.lists(RECORD, min_size=1, max_size=6), split=st.integers(0, 6))
@pytest.mark.long
def test_any_json_in_any_known_field_never_raises(
    tmp_path_factory, records: list[dict], split: int
) -> None:
    """Index (in two passes split anywhere), list, search and render any records."""
    base = tmp_path_factory.mktemp("prop")
    tree = ConfigTree(base / "claude")
    sid = "4d4d4d4d-0000-4000-8000-000000000001"
    path = tree.project_dir(CWD) / f"{sid}.jsonl"
    write_jsonl(path, records[:split])
    db = open_db(base / "i.db")
    try:
        refresh(db, [tree.root])
        append_records(path, records[split:])  # the rest, appended: a grown file
        refresh(db, [tree.root])
        everywhere = Filters(scope="all", all_kinds=True, include_archived=True)
        sessions = list_sessions(db, everywhere)
        search(db, "x", everywhere)
        for session in sessions:
            conv = build_conversation(session)
            for fmt in ("text", "md", "json", "html"):
                render(conv, fmt, tools=True, subagents=True)
    finally:
        db.close()


# What a shell passes for bytes that are not UTF-8 (Python decodes argv with
# surrogateescape): every command refuses it in one usage line, never a traceback.
NOT_UTF8 = "x\udcff"


@pytest.mark.parametrize(
    "args",
    [
        ["rename", "{sid}", NOT_UTF8],
        ["tag", "{sid}", NOT_UTF8],
        ["search", NOT_UTF8],
        ["list", "--branch", NOT_UTF8],
        ["show", f"/tmp/bad{NOT_UTF8}.jsonl"],
        ["resolve", NOT_UTF8],
    ],
    ids=lambda a: a[0] if a[0] != "list" else "list --branch",
)
def test_an_argument_that_is_not_utf8_is_one_usage_line(tmp_path: Path, args: list[str]) -> None:
    from click.testing import CliRunner

    from sessiondex.cli.main import cli
    from tests.builders import ConfigTree

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("hello")
    path = s.write()
    before = path.read_bytes()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, *(a.format(sid=s.session_id) for a in args)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert (
        result.stderr == "Error: Invalid value for an argument: 'x\\xff' is not valid UTF-8\n"
        or (result.stderr.startswith("Error: Invalid value for an argument: '/tmp/bad"))
    )
    assert path.read_bytes() == before


def _ingest(path: Path, tf: Any, tmp_path: Path) -> Any:
    from sessiondex.indexer.ingest import ingest_file
    from sessiondex.indexer.stats import RefreshStats

    stats = RefreshStats()
    db = open_db(tmp_path / "index.db")
    try:
        ingest_file(db, tf, stats)
    finally:
        db.close()
    return stats.errors


def _parse_in_the_parser(path: Path, tf: Any, tmp_path: Path) -> Any:
    from sessiondex.indexer.prefetch import parse_new_file

    return parse_new_file(tf, False).error


def _show(path: Path, tf: Any, tmp_path: Path) -> Any:
    from sessiondex.transcripts.chain import load_entries

    return load_entries(path)


def _retention_windows(path: Path, tf: Any, tmp_path: Path) -> Any:
    from sessiondex.transcripts.windows import read_windows

    return read_windows(path, tail_overlaps_head=True)


def _show_by_scan(path: Path, tf: Any, tmp_path: Path) -> Any:
    from sessiondex.transcripts.chain import scan_chain

    return scan_chain(path)


def _resolve_by_path(path: Path, tf: Any, tmp_path: Path) -> Any:
    from sessiondex.query.resolve import _row_from_file

    return _row_from_file(path)


@pytest.mark.parametrize(
    "read",
    [_ingest, _parse_in_the_parser, _show, _show_by_scan, _retention_windows, _resolve_by_path],
)
def test_a_transcript_turned_into_a_fifo_after_it_was_found_never_hangs_a_reader(
    tmp_path: Path, read: Any
) -> None:
    """A transcript found as a file and replaced by a FIFO before it was read: a
    cold build (indexer or parsing process), ``show`` and the retention check opened
    it with a plain ``open`` and waited forever for a writer. Now the reader says the
    file cannot be read, as for one that vanished."""
    import threading

    from sessiondex.transcripts.discover import iter_found

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("found as a file")
    path = s.write(mtime=1_790_000_000)
    (found,) = list(iter_found(tree.root))
    tf = found.file()
    path.unlink()
    os.mkfifo(path)
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(read(path, tf, tmp_path))
        except OSError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():  # let the stuck open go: a writer that opens and closes
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail("the reader waited on the FIFO")
    assert outcome and outcome[0], outcome  # an error said, or raised


@pytest.mark.parametrize("name", ["settings.json", "meta.json"])
def test_a_fifo_for_a_settings_or_subagent_meta_file_never_hangs(tmp_path: Path, name: str) -> None:
    """Claude Code's ``settings.json`` (read for ``cleanupPeriodDays``) and a subagent's
    ``agent-<id>.meta.json`` are read whole; a FIFO in their place made the reader wait."""
    import threading

    from sessiondex.transcripts.discover import read_subagent_meta
    from sessiondex.transcripts.retention import _load_settings

    if name == "settings.json":
        path = tmp_path / "settings.json"
        read: Any = lambda: _load_settings(path)  # noqa: E731
    else:
        path = tmp_path / "agent-a1.meta.json"
        read = lambda: read_subagent_meta(tmp_path / "agent-a1.jsonl")  # noqa: E731
    os.mkfifo(path)
    outcome: list[Any] = []
    thread = threading.Thread(target=lambda: outcome.append(read()), daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail("the reader waited on the FIFO")
    expected = (None, "cannot be read (not a regular file)") if name == "settings.json" else {}
    assert outcome == [expected]


def test_a_directory_whose_name_is_not_utf8_is_named_with_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Helper 93: ``continue`` in a directory named with the byte 0xFF said ``…/bad
    \\udcffdir`` (the stream's error handler); other messages show ``\\xff``, as
    ``ls -b`` does. Every cleaned line now shows such a byte that way."""
    import os

    from click.testing import CliRunner

    from sessiondex.cli.main import cli
    from sessiondex.render.terminal import neutralize

    root = tmp_path / "claude"
    (root / "projects").mkdir(parents=True)
    here = os.fsdecode(os.fsencode(tmp_path) + b"/bad\xffdir")
    os.mkdir(here)
    monkeypatch.chdir(here)  # an argument with that byte would be refused
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, "continue"])
    assert result.exit_code == 1, result.output
    assert result.stderr.rstrip().endswith("/bad\\xffdir"), result.stderr
    assert neutralize("a\udcffb\n\udc80", single_line=True) == "a\\xffb \\x80"
    assert neutralize("\ud800") == "\ud800"  # not a byte of a path: left to the stream
