"""The output layer: aligned tables with wide characters, and the machine formats."""

from __future__ import annotations

import fcntl
import os
import shutil
import struct
import sys
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from sessiondex.cli.output import display_width, relative_time, render_table, terminal_columns


@pytest.mark.parametrize(
    ("text", "width"),
    [
        ("abc", 3),
        ("認証", 4),
        ("Блог", 4),
        ("café", 4),
        ("e\u0301", 1),
        ("🚀x", 3),
        ("", 0),
        ("สวัสดีครับ", 7),  # Thai vowel and tone marks sit on their consonant
        ("a\u200bb", 2),  # zero-width space
        ("\ufeffname", 4),  # BOM
        ("flag\U000e0067\U000e0062", 4),  # tag characters
        ("x\u00ady", 3),  # a soft hyphen is drawn
    ],
)
def test_display_width(text: str, width: int) -> None:
    assert display_width(text) == width


def test_display_width_counts_every_character_as_it_did_one_by_one() -> None:
    """The count by ``len`` for characters below U+0300 and a lookup for the others
    gives each character's own width, for every code point of planes 0 to 3 (in runs of
    256 after ASCII, where a wrong width would shift a whole run)."""
    from sessiondex.cli.output import _char_width

    one_by_one = _char_width.__wrapped__
    for start in range(0, 0x40000, 256):
        run = "".join(
            chr(c) for c in range(start, start + 256) if not 0xD800 <= c < 0xE000
        )  # no lone surrogates
        text = "ab " + run
        assert display_width(text) == 3 + sum(one_by_one(ch) for ch in run), hex(start)


def test_table_columns_line_up_with_wide_characters(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    rows = [["認証のバグを修正", "2d ago"], ["plain title", "3h ago"], ["🚀 launch", "1m ago"]]
    lines = render_table(rows, ["title", "when"]).splitlines()
    starts = {
        display_width(line[: line.index(ago)])
        for line, ago in zip(lines[1:], ["2d ago", "3h ago", "1m ago"])
    }
    assert len(starts) == 1  # the second column starts at the same terminal column


def test_long_titles_are_cut_to_the_terminal(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    lines = render_table([["x" * 100, "now"]], ["title", "when"]).splitlines()
    assert all(display_width(line) <= 40 for line in lines)
    assert "…" in lines[1]


@pytest.fixture
def stdout_kinds() -> Iterator[dict[str, Any]]:
    """Standard outputs as the process may have them: terminals of two widths (one that
    reports 0 columns, as a serial console may), a pipe, none at all."""
    opened: list[IO[Any]] = []

    def terminal(columns: int) -> IO[Any]:
        leader, follower = os.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        os.close(leader)
        stream = os.fdopen(follower, "w")
        opened.append(stream)
        return stream

    reader, writer = os.pipe()
    os.close(reader)
    pipe = os.fdopen(writer, "w")
    opened.append(pipe)
    yield {"terminal 93": terminal(93), "terminal 0": terminal(0), "pipe": pipe, "none": None}
    for stream in opened:
        stream.close()


@pytest.mark.parametrize("columns_env", [None, "", "0", "-5", "abc", "77"])
@pytest.mark.parametrize("stdout", ["terminal 93", "terminal 0", "pipe", "none"])
def test_terminal_columns_are_shutils(
    monkeypatch: pytest.MonkeyPatch,
    stdout_kinds: dict[str, Any],
    columns_env: str | None,
    stdout: str,
) -> None:
    """The table's width without importing shutil (its bz2 and lzma are start-up time)
    is the width shutil.get_terminal_size gives, whatever $COLUMNS and stdout are."""
    if columns_env is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns_env)
    monkeypatch.setattr(sys, "__stdout__", stdout_kinds[stdout])
    assert terminal_columns() == shutil.get_terminal_size((120, 24)).columns
    assert terminal_columns(80) == shutil.get_terminal_size((80, 24)).columns


@pytest.mark.parametrize(
    ("iso", "now", "shown"),
    [
        ("2026-11-29T12:00:00.000Z", 1795953600 + 30, "30s ago"),
        ("2026-11-29T12:00:00.000Z", 1795953600 + 7200, "2h ago"),
        ("2026-11-29T12:00:00.000Z", 1795953600 + 3 * 86400, "3d ago"),
        ("2026-09-01T00:00:00.000Z", 1795953600, "2026-09-01"),
        (None, 0, ""),
    ],
)
def test_relative_time(iso: str | None, now: float, shown: str) -> None:
    assert relative_time(iso, now) == shown


@pytest.mark.parametrize(
    ("natural", "width", "expected"),
    [
        # title, branch, id: everything fits, nothing moves
        ([30, 10, 8], 60, [30, 10, 8]),
        # a 270-character branch gives way first, down to its floor (16)
        ([40, 270, 8], 80, [40, 28, 8]),
        ([90, 270, 8], 80, [52, 16, 8]),
        # then the title, down to 24; then the branch, down to 6
        ([60, 270, 8], 50, [24, 14, 8]),
        # then the title again, down to 10; fixed columns never shrink
        ([60, 270, 8], 30, [12, 6, 8]),
        ([60, 270, 8], 10, [10, 6, 8]),
    ],
)
def test_column_widths_give_the_title_the_most_room(
    natural: list[int], width: int, expected: list[int]
) -> None:
    from sessiondex.cli.output import column_widths

    assert column_widths(natural, width, 0, {1: (16, 6)}) == expected


def test_the_index_summary_keeps_skipped_entries_apart_from_bad_lines() -> None:
    """'1 bad lines (nul-byte 1, skipped-not-a-file 1, skipped-symlink 2)' did not add
    up: skipped entries are not lines."""
    from sessiondex.cli.index_cmds import _summary_line

    stats = {
        "files_seen": 3,
        "new": 3,
        "grown": 0,
        "rewritten": 0,
        "removed": 0,
        "sessions": 2,
        "messages": 5,
        "bytes_read": 2048,
        "bad_lines": 1,
        "seconds": 0.5,
        "problems": {"nul-byte": 1, "skipped-not-a-file": 1, "skipped-symlink": 2},
    }
    assert _summary_line(stats).endswith(
        "1 bad line (nul-byte 1); skipped not-a-file 1, symlink 2, 0.50s"
    )


@pytest.mark.parametrize("separator", ["\u2028", "\u2029"])
def test_a_line_separator_is_a_space_in_a_table_cell(separator: str) -> None:
    """str.splitlines (and some terminals) break at U+2028/U+2029: a branch or a path
    holding one printed a table row as two lines."""
    from sessiondex.render.terminal import neutralize

    assert neutralize(f"feat{separator}x", single_line=True) == "feat x"
    assert neutralize(f"kept{separator}in show") == f"kept{separator}in show"  # lines: as is


@pytest.mark.parametrize(
    ("args", "exit_code"),
    [
        (["list", "--json", "--format", "csv"], 2),
        (["list", "--format", "jsonl", "--json"], 2),
        (["stats", "--json", "--format", "table"], 2),
        (["config", "--format", "table", "--json"], 2),
        (["list", "--format", "json", "--json"], 0),  # the same format twice
        (["list", "--json"], 0),
        (["list", "--format", "csv"], 0),
    ],
)
def test_json_and_another_format_together_are_a_usage_error(
    tmp_path: Path, args: list[str], exit_code: int
) -> None:
    """Helper 93: ``--json`` silently won over an explicit ``--format csv``."""
    from click.testing import CliRunner

    from sessiondex.cli.main import cli

    root = tmp_path / "claude"
    (root / "projects").mkdir(parents=True)
    base = ["--config-dir", str(root), "--db", str(tmp_path / "index.db")]
    result = CliRunner().invoke(cli, [*base, *args])
    assert result.exit_code == exit_code, result.output
    if exit_code == 2:
        assert "disagree: give one" in result.stderr
