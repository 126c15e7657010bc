"""Nothing from a transcript drives the terminal (issue 14, item 9).

A session whose title, branch, cwd, tag, first prompt, message text and tool output
carry OSC 52 (clipboard write), OSC 8 (hyperlink), a C1 CSI, a bare ESC, BEL and a bidi
override goes through every human-facing command: no ESC, BEL, C1 or bidi control
reaches stdout or stderr, while ``--json`` gives back the exact strings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.cli.output import HIGHLIGHT, emit
from sessiondex.render.conversation import build_conversation, render_text
from sessiondex.render.terminal import json_escape_controls, neutralize, neutralize_escapes
from tests.builders import ConfigTree, append_records, one_session

OSC52 = "\x1b]52;c;SGVsbG8=\x07"
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
EVIL = f"{OSC52}{OSC8}\x9b31mred\x1b bare\x07bell\u202eesrever\u2066iso\u2069"


def _evil(word: str) -> str:
    return f"{word} {EVIL} end"


TITLE = _evil("Zebratitle")
BRANCH = _evil("feat/zebrabranch")
CWD = "/tmp/sessiondex-no-such-dir/" + _evil("zebracwd")
TAG = _evil("zebratag")
PROMPT = _evil("zebraprompt")
ANSWER = _evil("zebraanswer")
TOOL_OUT = _evil("zebraoutput")
HOME_CWD = "/home/dev/elsewhere"  # another project: resolve by ID adds the "cd …" note

# What must never reach a terminal: ESC, BEL and other C0 but \n \t, DEL, C1, bidi.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("evil")
    tree = ConfigTree(base / "claude")
    s = tree.session(CWD, git_branch=BRANCH)
    s.user(PROMPT)
    turn = s.assistant(ANSWER, tool_uses=[("Bash", {"command": _evil("zebracommand")})])
    s.tool_result(turn.tool_use_ids[0], TOOL_OUT)
    s.assistant("done")
    s.meta("custom-title", customTitle=TITLE)
    s.meta("tag", tag=TAG)
    s.write()
    args = ["--config-dir", str(tree.root), "--db", str(base / "index.db")]
    assert CliRunner().invoke(cli, [*args, "index"]).exit_code == 0
    return {"args": args, "id": s.session_id, "base": base, "path": s.path}


def _run(world: dict[str, Any], *argv: str) -> Any:
    # A wide terminal: table cells are cut to fit, and the test looks for every evil
    # character made visible, not cut off.
    return CliRunner().invoke(cli, [*world["args"], *argv], env={"COLUMNS": "2000"})


COMMANDS = [
    ["list", "--scope", "all"],
    ["list", "--scope", "all", "--format", "csv"],
    ["search", "zebraanswer", "--scope", "all"],
    ["search", "zebratitle", "--scope", "all", "--format", "csv"],
    ["resolve", "@ID", "--cwd", HOME_CWD],  # from another directory: the "cd" note
    ["resolve", "Zebratitl", "--cwd", CWD],  # not found: the close titles in the error
    ["resume", "@ID", "--dry-run", "--cwd", HOME_CWD],
    ["show", "@ID"],
    ["show", "@ID", "--tools"],
    ["show", "@ID", "--tools", "--format", "md"],
    ["rename", "@ID", "Renamed", "--cwd", HOME_CWD],
]


COMMAND_IDS = [
    "list",
    "list-csv",
    "search",
    "search-csv",
    "resolve-other-dir",
    "resolve-not-found",
    "resume-dry-run",
    "show",
    "show-tools",
    "show-md",
    "rename",
]


@pytest.mark.parametrize("argv", COMMANDS, ids=COMMAND_IDS)
def test_no_control_or_bidi_character_reaches_the_terminal(
    world: dict[str, Any], argv: list[str]
) -> None:
    argv = [world["id"] if a == "@ID" else a for a in argv]
    result = _run(world, *argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    for stream in (result.stdout, result.stderr):
        found = FORBIDDEN.search(stream)
        assert found is None, f"{found.group()!r} in {stream!r}"
    shown = result.stdout + result.stderr
    # The data is shown, made visible, not dropped: in caret notation, or escaped in a
    # shell word ($'…\x1b…', the resume line of a directory holding ESC).
    assert ("^[" in shown and "^G" in shown) or ("\\x1b" in shown and "\\x07" in shown)
    assert ("<U+009B>" in shown and "<U+202E>" in shown) or (
        "\\xc2\\x9b" in shown and "\\xe2\\x80\\xae" in shown  # UTF-8 bytes in $'…'
    )
    if argv[0] == "rename":  # undo, so the other commands still see the evil title
        # Appended as Claude Code would: `rename` itself strips bidi controls from a name.
        record = {"type": "custom-title", "customTitle": TITLE, "sessionId": world["id"]}
        append_records(world["path"], [record])


def test_the_other_directory_note_quotes_the_path_like_resume_command(
    world: dict[str, Any],
) -> None:
    result = _run(world, "resolve", world["id"], "--cwd", HOME_CWD, "--json")
    obj = one_session(result.stdout)
    # $'…': the directory's ESC and BEL escaped, so the line is one line and pastes as is
    assert obj["resume_command"].startswith("cd $'/tmp/sessiondex-no-such-dir/zebracwd \\x1b]52")
    assert neutralize(obj["resume_command"], single_line=True) in result.stderr


def test_json_keeps_the_exact_strings(world: dict[str, Any]) -> None:
    for argv in (["list", "--scope", "all", "--json"], ["resolve", world["id"], "--json"]):
        result = _run(world, *argv, "--cwd", HOME_CWD)
        assert FORBIDDEN.search(result.stdout) is None  # escaped by the encoder
        value = json.loads(result.stdout)
        obj = value[0] if isinstance(value, list) else value
        assert (obj["title"], obj["git_branch"], obj["cwd"], obj["tag"]) == (
            TITLE,
            BRANCH,
            CWD,
            TAG,
        )
        assert obj["first_prompt"] == PROMPT
    result = _run(world, "show", world["id"], "--format", "json")
    assert FORBIDDEN.search(result.stdout) is None
    messages = json.loads(result.stdout)
    assert messages[0]["message"]["content"] == PROMPT
    assert messages[1]["message"]["content"][0]["text"] == ANSWER


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_exported_files_keep_text_but_never_escapes(
    world: dict[str, Any], fmt: str, tmp_path: Path
) -> None:
    target = tmp_path / f"out.{fmt}"
    result = _run(world, "export", world["id"], "--tools", "-o", str(target))
    assert result.exit_code == 0, result.output
    text = target.read_text()
    assert re.search("[\x1b\x80-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", text) is None
    # No control character but newline and tab: a BEL or NUL reached the terminal of
    # `export -o -` and broke HTML (spec: no human-facing output carries one)
    assert re.search("[\x00-\x08\x0b-\x1f\x7f]", text) is None and "^G" in text
    assert "zebraanswer" in text and "^[" in text


def test_our_own_colours_survive_cleaning(
    world: dict[str, Any], capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """show's styling and search's highlight are added after the data is cleaned."""
    resolved = one_session(_run(world, "resolve", world["id"], "--json", "--cwd", CWD).stdout)
    coloured = render_text(build_conversation(resolved), color=True)
    ours = re.compile(r"\x1b\[[0-9;]*m")  # click.style's SGR codes
    assert ours.search(coloured)
    assert FORBIDDEN.search(ours.sub("", coloured)) is None
    row = {"title": "t", "session_id": "s", "snippet": f"a {HIGHLIGHT[0]}hit{HIGHLIGHT[1]} {EVIL}"}
    # As on a terminal: click would strip every SGR code from output to a pipe.
    monkeypatch.setattr(click.utils, "should_strip_ansi", lambda *a, **k: False)
    emit([row], "table", extra_columns=("snippet",), highlight=True)
    out = capsys.readouterr().out
    assert "\x1b[1;33mhit\x1b[0m" in out
    assert FORBIDDEN.search(ours.sub("", out)) is None


@pytest.mark.parametrize(
    ("text", "lines", "one_line", "in_files"),
    [
        ("plain", "plain", "plain", "plain"),
        ("a\x1bb", "a^[b", "a^[b", "a^[b"),
        ("bell\x07", "bell^G", "bell^G", "bell^G"),
        ("nul\x00 del\x7f", "nul^@ del^?", "nul^@ del^?", "nul^@ del^?"),
        ("csi\x9b1m", "csi<U+009B>1m", "csi<U+009B>1m", "csi<U+009B>1m"),
        ("bidi\u202e\u2066\u200f\u061c", *["bidi<U+202E><U+2066><U+200F><U+061C>"] * 3),
        ("two\nlines\ttab", "two\nlines\ttab", "two lines tab", "two\nlines\ttab"),
        ("crlf\r\nend\rx", "crlf\nend^Mx", "crlf end^Mx", "crlf\nend^Mx"),
        # U+2028 is a line for str.splitlines and some terminals: a space on one line
        ("é 漢字 \u2028", "é 漢字 \u2028", "é 漢字  ", "é 漢字 \u2028"),
    ],
)
def test_neutralize_table(text: str, lines: str, one_line: str, in_files: str) -> None:
    assert neutralize(text) == lines
    assert neutralize(text, single_line=True) == one_line
    assert neutralize_escapes(text) == in_files


def test_json_escape_controls_keeps_the_value() -> None:
    import orjson

    for value in ({"t": EVIL + " é 漢字 \U0001f600 \u2028 \x7f"}, {"t": "ascii only \x7f"}):
        data = json_escape_controls(orjson.dumps(value))
        assert json.loads(data) == value
        assert re.search(rb"\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\x1b|\x7f", data) is None
