"""One definition of a bad line: ``index`` and ``show`` count the same lines in the same
file, and an unfinished last line is "being written", never bad."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
from sessiondex.transcripts.chain import load_entries
from sessiondex.transcripts.reader import (
    PROBLEM_BEING_WRITTEN,
    PROBLEM_NEVER_FINISHED,
    parse_line,
    split_lines,
)
from tests.builders import ConfigTree
from tests.helpers_index import index_snapshot, rebuilt_snapshot

CWD = "/w/app"
UNFINISHED = b'{"type":"user","message":{"role":"user","content":"half a li'


def _file(tmp_path: Path, lines: list[bytes], tail: bytes = b"") -> tuple[ConfigTree, str, Path]:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("a good first prompt")
    for line in lines:
        s.raw(line + b"\n")
    s.user("a good last prompt")
    if tail:
        s.raw(tail)
    return tree, s.session_id, s.write()


def _index_problems(tmp_path: Path, tree: ConfigTree) -> Counter[str]:
    db = open_db(tmp_path / "i.db")
    try:
        return Counter(refresh(db, [tree.root]).problems)
    finally:
        db.close()


@pytest.mark.parametrize(
    ("lines", "tail", "bad"),
    [
        ([b'{"type": "user", "message": ', b"not json"], UNFINISHED, {"malformed-json": 2}),
        ([b'{"a":"x\x00y"}'], b"", {"nul-byte": 1}),
        ([b"[1, 2]", b"42"], UNFINISHED, {"not-an-object": 2}),
        ([b'{"type":"user","message":{"content":"\xff\xfe"}}'], b"", {"invalid-utf8": 1}),
        # Not JSON with or without its bad bytes: skipped, so counted as what it is
        # (invalid-utf8 counts the lines read with U+FFFD; helper 115).
        ([b"\xc3\x28 broken"], b"", {"malformed-json": 1}),
        ([b'{"a":"\xff"} and more'], b"", {"malformed-json": 1}),
        # What the SDK (Python's json) reads is a record for both: NaN, Infinity, Unicode
        # whitespace around the object, an escaped lone surrogate.
        ([b'{"type":"x","n":NaN,"m":-Infinity}'], b"", {}),
        (['\u00a0{"type":"x"}\u3000'.encode()], b"", {}),
        ([b'{"type":"x","s":"\\ud800"}'], b"", {}),
        ([b"", b"   ", b"\r"], b"", {}),
        ([], b'{"type":"last-prompt","lastPrompt":"done"}', {}),  # whole, just no \n yet
        ([], UNFINISHED, {}),
        # the whole class of lines that are not one clean record (h602): a UTF-8 BOM
        # (not whitespace to Python's json nor to JSON.parse), CRLF (stripped), a record
        # then garbage, N records glued with or without whitespace, spaced JSON glued,
        # a NUL-padded line (a preallocated file), an empty line
        ([b'\xef\xbb\xbf{"type":"x"}'], b"", {"malformed-json": 1}),
        ([b'{"type":"x"}\r', b"\r"], b"", {}),
        ([b'{"type":"x"}garbage'], b"", {"malformed-json": 1}),
        ([b'{"type":"x"}{"type":"y"}{"type":"z"}'], b"", {"malformed-json": 1}),
        (
            [b'{"type": "x"} {"type": "y"}', b'{"type":"x"}\t{"type":"y"}'],
            b"",
            {"malformed-json": 2},
        ),
        ([b'{"type":"x"}\x00\x00\x00'], b"", {"nul-byte": 1}),
        ([b"\x00" * 64], b"", {"nul-byte": 1}),
        ([b""], b"", {}),
    ],
)
def test_index_and_show_count_the_same_bad_lines(
    tmp_path: Path, lines: list[bytes], tail: bytes, bad: dict[str, int]
) -> None:
    tree, _, path = _file(tmp_path, lines, tail)
    assert dict(_index_problems(tmp_path, tree)) == bad
    _, shown = load_entries(path)
    being_written = shown.pop(PROBLEM_BEING_WRITTEN, 0)
    assert dict(shown) == bad
    assert being_written == (1 if tail == UNFINISHED else 0)


def test_the_issue_case_two_bad_lines_and_an_unfinished_one(tmp_path: Path) -> None:
    tree, sid, _ = _file(tmp_path, [b"{oops", b"also not json"], UNFINISHED)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "c.db")]
    indexed = CliRunner().invoke(cli, [*base, "index", "--json"])
    assert json.loads(indexed.stdout)["bad_lines"] == 2
    shown = CliRunner().invoke(cli, [*base, "show", sid, "--cwd", CWD])
    assert shown.exit_code == 0, shown.output
    assert (
        "note: 2 unreadable lines skipped (malformed-json 2); "
        "the last line is still being written (not shown)"
    ) in shown.output
    as_json = CliRunner().invoke(cli, [*base, "show", sid, "--cwd", CWD, "--format", "json"])
    assert as_json.stderr == (
        "note: 2 unreadable lines skipped (malformed-json 2); "
        "the last line is still being written (not shown)\n"
    )


def test_an_unfinished_line_in_a_quiet_file_is_never_finished_not_being_written(
    tmp_path: Path,
) -> None:
    """A fragment left by a write that stopped a year ago is not "still being written"
    (spec: a tail incomplete past the quiet period is a crashed write). It is still not
    a bad line, and the index does not read past it: the next write may end it."""
    tree, sid, path = _file(tmp_path, [], UNFINISHED)
    year_ago = time.time() - 365 * 86400
    os.utime(path, (year_ago, year_ago))
    _, shown = load_entries(path)
    assert dict(shown) == {PROBLEM_NEVER_FINISHED: 1}
    assert _index_problems(tmp_path, tree) == Counter()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "c.db")]
    result = CliRunner().invoke(cli, [*base, "show", sid, "--cwd", CWD])
    assert result.exit_code == 0, result.output
    assert "the last line was never finished: a write stopped mid-line (not shown)" in (
        result.output
    )
    assert "being written" not in result.output


def test_a_lone_surrogate_never_reaches_an_encoder() -> None:
    record, problem = parse_line(b'{"t":"a\\ud800b","k":["\\udfff"]}')
    assert problem is None and record == {"t": "a\ufffdb", "k": ["\ufffd"]}
    record["t"].encode("utf-8")  # would raise with the surrogate


@pytest.mark.parametrize(
    ("data", "lines", "tail"),
    [
        (b"", [], b""),
        (b"a\n", [b"a"], b""),
        (b"a\nb", [b"a"], b"b"),
        (b"a\n\nb\n", [b"a", b"", b"b"], b""),
        ("a\u2028b\n".encode(), [b"a\xe2\x80\xa8b"], b""),  # U+2028 does not end a line
    ],
)
def test_split_lines(data: bytes, lines: list[bytes], tail: bytes) -> None:
    assert split_lines(data) == (lines, tail)


def test_a_prompt_with_invalid_utf8_is_indexed_as_claude_code_reads_it(tmp_path: Path) -> None:
    """One bad byte in the first prompt's line used to drop the line from the index: no
    first prompt, one message fewer, its words unsearchable (the SDK's listing and
    Claude Code show it, with U+FFFD for the byte)."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("résumé of the zzmarker plan")
    s.assistant("noted")
    path = s.write()
    path.write_bytes(path.read_bytes().replace("é".encode(), b"\xe9"))
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    listed = CliRunner().invoke(cli, [*base, "list", "--scope", "all", "--json"])
    (row,) = json.loads(listed.stdout)
    assert row["first_prompt"] == "r\ufffdsum\ufffd of the zzmarker plan"
    assert row["message_count"] == 2
    found = CliRunner().invoke(cli, [*base, "search", "zzmarker", "--scope", "all", "--json"])
    assert [r["session_id"] for r in json.loads(found.stdout)] == [s.session_id]


@pytest.mark.parametrize(
    "stamp",
    ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+23:59"],
)
@pytest.mark.parametrize("where", ["first", "last"])
def test_a_timestamp_with_no_utc_year_is_unparseable_not_fatal(
    tmp_path: Path, stamp: str, where: str
) -> None:
    """In UTC those are year 0 or 10000, which Python cannot hold: the OverflowError
    skipped the whole file on every refresh ('skipped …: OverflowError')."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("plan the zzstamp work", **({"timestamp": stamp} if where == "first" else {}))
    s.assistant("ok", **({"timestamp": stamp} if where == "last" else {}))
    s.write()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, "list", "--scope", "all", "--json"])
    assert result.exit_code == 0, result.output
    assert "skipped" not in result.stderr
    (row,) = json.loads(result.stdout)
    assert row["session_id"] == s.session_id and row["message_count"] == 2


def _unterminated(tmp_path: Path, *, quiet: bool) -> tuple[ConfigTree, str, Path]:
    """A session whose last record, a rename, never got its newline (a crashed write)."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("the only prompt about zzcrash")
    s.meta("custom-title", customTitle="Final Title")
    path = s.write()
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    stamp = (time.time() - (60 if quiet else 0)) * 1e9
    os.utime(path, ns=(int(stamp), int(stamp)))
    return tree, s.session_id, path


def _title(tree: ConfigTree, db: Path) -> str:
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tree.root), "--db", str(db), "list", "--scope", "all", "--json"]
    )
    (row,) = json.loads(result.stdout)
    return str(row["title"])


def test_a_whole_last_record_without_newline_is_read_once_the_file_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code and the SDK read it; the index waited for a newline that a crashed
    write never brings, so the session kept its old title for good."""
    import sessiondex.indexer.shape as shape

    tree, _, _ = _unterminated(tmp_path / "quiet", quiet=True)
    assert _title(tree, tmp_path / "quiet.db") == "Final Title"
    monkeypatch.setattr(shape, "RACY_WINDOW_NS", 300_000_000)
    tree, _, _ = _unterminated(tmp_path / "live", quiet=False)
    assert _title(tree, tmp_path / "live.db") != "Final Title"  # may still be written
    time.sleep(0.4)  # now quiet: the racy re-check reads it
    assert _title(tree, tmp_path / "live.db") == "Final Title"


@pytest.mark.parametrize("how", ["ended first", "glued on"])
def test_an_append_after_a_whole_unterminated_record_equals_a_rebuild(
    tmp_path: Path, how: str
) -> None:
    """After the tail was read as a record, a writer may end it with a newline first
    (sessiondex, fixed Claude Code) or glue its record on (the SDK's bug): the index
    answers as a fresh one does either way."""
    tree, sid, path = _unterminated(tmp_path, quiet=True)
    db = open_db(tmp_path / "inc.db")
    refresh(db, [tree.root])
    record = json.dumps({"type": "tag", "tag": "later", "sessionId": sid}).encode()
    with open(path, "ab") as file:
        file.write((b"\n" if how == "ended first" else b"") + record + b"\n")
    refresh(db, [tree.root])
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")


@pytest.mark.parametrize("between", [b"", b" ", b"\t", b"  \t "])
def test_three_records_glued_on_a_line_are_read_as_two_are(tmp_path: Path, between: bytes) -> None:
    """A crash and a resume each glued a record onto a line that had lost its newline:
    the title between them is the session's, as the SDK's and the picker's string search
    of the tail finds it; only the last glued record was read, so the session was listed
    under its last prompt."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    s.user("a good first prompt")
    sid = s.session_id

    def meta(kind: str, sep: tuple[str, str], **fields: str) -> bytes:
        return json.dumps({"type": kind, **fields, "sessionId": sid}, separators=sep).encode()

    compact, spaced = (",", ":"), (", ", ": ")
    s.raw(
        b'{"type":"user","message":{"role":"us'
        + meta("custom-title", compact, customTitle="Old")
        + between
        + meta("custom-title", spaced, customTitle="Glued Title")
        + between
        + meta("last-prompt", compact, lastPrompt="the last prompt")
        + b"\n"
    )
    s.write()
    assert _title(tree, tmp_path / "i.db") == "Glued Title"
    titles = [
        e.get("customTitle") for e in load_entries(s.path, glued=True)[0] if e.get("customTitle")
    ]
    assert titles == ["Old", "Glued Title"]
