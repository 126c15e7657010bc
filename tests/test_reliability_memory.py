"""``show`` and ``export`` of a large transcript: memory flat in the file's size
(issue 14, item 10).

A transcript made mostly of large tool outputs (what real 64 MB sessions are) is shown
with ``--tools`` and exported; Python's peak allocation, measured with ``tracemalloc``
around the command alone, may grow with the file by a small fraction of its size only.
The whole-file reader this replaced grew by three times the file's size.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from tests.builders import ConfigTree

CWD = "/home/dev/big-proj"  # does not exist: no git repository
OUTPUT_LINES = 4000  # ~ 150 KB of tool output per turn, written twice (content, toolUseResult)


def _session(tree: ConfigTree, title: str, turns: int) -> Any:
    s = tree.session(CWD)
    s.meta("custom-title", customTitle=title)
    output = "".join(f"log line {i} of a long build output\n" for i in range(OUTPUT_LINES))
    for turn_no in range(turns):
        s.user(f"run build {turn_no}")
        turn = s.assistant(f"Running build {turn_no}", tool_uses=[("Bash", {"command": "make"})])
        s.tool_result(turn.tool_use_ids[0], output)
    s.assistant("LAST-ANSWER all builds done")
    s.write()
    return s


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("big")
    tree = ConfigTree(base / "claude")
    small = _session(tree, "Small logs", 2)
    big = _session(tree, "Big logs", 40)
    args = ["--config-dir", str(tree.root), "--db", str(base / "index.db")]
    assert CliRunner().invoke(cli, [*args, "index"]).exit_code == 0
    return {"base": base, "args": [*args, "--no-refresh"], "small": small, "big": big}


def _peak(args: list[str]) -> tuple[Any, int]:
    """Run the CLI in-process; its result and the peak of Python allocations during it."""
    runner = CliRunner()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = runner.invoke(cli, args)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


@pytest.mark.parametrize(
    "command",
    [
        ["show", "@ID", "--tools"],
        ["export", "@ID", "--tools", "-o", "@OUT.html", "--force"],
        ["export", "@ID", "-o", "@OUT.json", "--force"],
    ],
    ids=["show-text", "export-html", "export-json"],
)
def test_show_and_export_memory_is_flat_in_file_size(
    world: dict[str, Any], command: list[str]
) -> None:
    """The big transcript may cost more than the small one only by its stubs: the
    difference in peak memory is a small fraction of the difference in size."""
    measured = {}
    for name in ("small", "small", "big"):  # the first run imports what the command needs
        s = world[name]
        out = world["base"] / f"{name}-out"
        argv = [s.session_id if a == "@ID" else a.replace("@OUT", str(out)) for a in command]
        result, peak = _peak([*world["args"], *argv, "--cwd", CWD])
        assert result.exit_code == 0, result.output
        text = (
            result.stdout if command[0] == "show" else Path(argv[argv.index("-o") + 1]).read_text()
        )
        assert "LAST-ANSWER" in text
        measured[name] = (peak, s.path.stat().st_size)
    (small_peak, small_size), (big_peak, big_size) = measured["small"], measured["big"]
    assert big_size - small_size > 10 << 20  # the point: far more than we may hold
    # Holding the file (as the whole-file reader did) cost 3x the extra size here; stubs
    # plus one entry at a time cost about 5% (mostly where a line falls across chunks).
    growth = big_peak - small_peak
    assert growth < (big_size - small_size) // 10, (
        f"peak grew {growth} bytes for {big_size - small_size} more bytes of transcript"
    )
