"""The README's sample runs still say what the commands print.

A new user copies the README's ``$ sessiondex …`` lines and compares. Each example
below is run on a copy of the fixtures (as the README says it was made: ``HOME=/home/dev``)
and the README's output lines must appear, in order, in what the command prints now.
Relative dates and timings change with the day of the run, so they are compared as a
placeholder; column padding is compared as one space (a wider date moves columns);
a README line that is only ``…`` marks rows cut for the page.

Left out on purpose: examples whose answer depends on the day the fixtures are read
(``cleanup --apply`` deletes what expired by then), on a config file or config dir the
README only describes (``config``, ``--config-dir /tmp/old-laptop/claude``), or on a
directory that exists only on the machine that made them (``resume --dry-run``'s ``cd``).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiondex import Index
from sessiondex.cli.main import cli
from tests.builders import copy_fixtures

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")

#: The sample runs checked, spelled as in the README.
EXAMPLES = [
    "sessiondex index",
    "sessiondex list --scope all",
    "sessiondex --config-dir /nope list",
    'sessiondex search "cookie login" --scope all',
    'sessiondex search "cookie websocket" --scope all',
    'sessiondex search "atuh refactr" --scope all',
    "sessiondex search coupon --cwd /home/dev/shop",
    "sessiondex search acme/shop#12",
    "sessiondex from-pr 12 --cwd /home/dev/shop",
    "sessiondex from-pr 15 --cwd /home/dev/shop-wt/feature-x",
    'sessiondex tag fe260cbd "#review" --cwd /home/dev/shop-wt/feature-x',
    "sessiondex untag 8c136a88 --cwd /home/dev/shop",
    "sessiondex show 25fc1c07 --uuids --cwd /home/dev/shop",
    "sessiondex export 4045e6f8 -o auth.pdf --cwd /home/dev/shop",
]

_VARYING = re.compile(
    r"\b\d+[smhd] ago\b"  # relative dates
    r"|\b\d{4}-\d\d-\d\d\b"  # dates old enough to be shown as such
    r"|\b\d+\.\d+s\b"  # timings
)


def _sample_runs() -> dict[str, list[str]]:
    """Each ``$ sessiondex …`` line of the README's code → the lines printed under it: to
    the next ``$`` line or the end of its fenced block (an indented block: its first
    blank line)."""
    runs: dict[str, list[str]] = {}
    current: list[str] | None = None
    fenced = False
    for raw in README.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            fenced, current = not fenced, None
        elif line.startswith("$ "):
            current = runs.setdefault(line[2:], []) if line.startswith("$ sessiondex ") else None
        elif not line:
            current = current if fenced else None
        elif current is not None:
            current.append(raw)
    return runs


def _normal(line: str) -> str:
    return " ".join(_VARYING.sub("<date>", line).split())


def _in_order(wanted: list[str], got: list[str]) -> list[str]:
    """The wanted lines not found, in order, in ``got`` (a "…" line skips any)."""
    rest = iter(got)
    missing = []
    for line in wanted:
        if line.strip() == "…":
            continue
        if not any(line == other for other in rest):
            missing.append(line)
            rest = iter(got)
    return missing


def test_every_checked_example_is_still_in_the_readme() -> None:
    runs = _sample_runs()
    assert [e for e in EXAMPLES if e not in runs] == []


@pytest.mark.parametrize("example", EXAMPLES)
def test_a_readme_example_prints_what_the_readme_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, example: str
) -> None:
    config = copy_fixtures(tmp_path)  # tag and untag must write nothing, but a copy
    env = {"HOME": "/home/dev", "COLUMNS": None}  # no terminal: the default width
    args = shlex.split(example)[1:]
    prefix = ["--db", str(tmp_path / "index.db")]
    if "--config-dir" not in args:
        prefix += ["--config-dir", str(config)]
        if args != ["index"]:  # the index the README's first run made
            assert CliRunner().invoke(cli, [*prefix, "index"], env=env).exit_code == 0
    monkeypatch.chdir(tmp_path)  # export's auth.pdf, were it written, lands here
    result = CliRunner().invoke(cli, [*prefix, *args], env=env)
    wanted = [_normal(x) for x in _sample_runs()[example]]
    got = [_normal(x) for x in result.output.splitlines()]
    assert wanted, example
    assert _in_order(wanted, got) == [], result.output


def _mcp_exchange() -> list[tuple[str, dict[str, object], str]]:
    """The README's MCP exchange: (tool, arguments, the answer as shown)."""
    start = README.index("An exchange on the fixture tree")
    opening = README.index("```\n", start) + 4
    block = README[opening : README.index("\n```", opening)]
    calls = []
    for part in block.split("→ ")[1:]:
        head, _, answer = part.partition("\n")
        tool, _, arguments = head.partition(" ")
        calls.append((tool, json.loads(arguments), answer.strip()))
    return calls


def test_the_readme_mcp_exchange_is_what_the_tools_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its ``more`` line said "raise limit (up to 50)" after the tool had come to say
    "call again with offset=N" (helper h508)."""
    from sessiondex.mcp_server.service import SessionService, Settings, UserError

    config = copy_fixtures(tmp_path)
    monkeypatch.setenv("HOME", "/home/dev")
    service = SessionService(
        lambda: Index(tmp_path / "index.db", [config]), Settings(cwd="/home/dev/shop")
    )
    exchange = _mcp_exchange()
    assert [tool for tool, _, _ in exchange] == ["search_sessions", "read_session", "read_session"]
    for tool, arguments, shown in exchange:
        shown = shown.replace("/tmp/fx/claude", str(config))
        try:
            answer = getattr(service, tool)(**arguments)
        except UserError as error:
            answer = f"isError: Error executing tool {tool}: {error}"
        assert answer.strip() == shown, tool


def test_the_readme_config_example_is_what_config_prints(tmp_path: Path) -> None:
    """The Configuration section's file, shown by ``sessiondex config``: its sample run
    listed several config dirs comma-separated after ``config`` had come to print them
    shell-quoted, one space apart (helper h508)."""
    start = README.index("```toml\n") + len("```toml\n")
    (tmp_path / "xdg" / "sessiondex").mkdir(parents=True)
    (tmp_path / "xdg" / "sessiondex" / "config.toml").write_text(
        README[start : README.index("```", start)], encoding="utf-8"
    )
    example = next(e for e in _sample_runs() if e.split("#")[0].split()[-1:] == ["config"])
    shown = "\n".join(_sample_runs()[example])
    shown = shown.replace("/tmp/uxcfg/xdg", str(tmp_path / "xdg"))
    shown = shown.replace("/tmp/uxfx/i.db", str(tmp_path / "i.db"))
    args = shlex.split(example.split("#")[0])[1:]
    args[args.index("--db") + 1] = str(tmp_path / "i.db")
    env = {
        "HOME": "/home/dev",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "COLUMNS": "400",  # the long temporary paths uncut; padding is compared as one space
        "CLAUDE_CONFIG_DIR": None,
        "SESSIONDEX_CONFIG_DIRS": None,
        "SESSIONDEX_CONFIG": None,
        "SESSIONDEX_DB": None,
        "PAGER": None,
    }
    result = CliRunner().invoke(cli, args, env=env)
    got = [_normal(line) for line in result.stdout.splitlines()]
    assert got == [_normal(line) for line in shown.splitlines()], result.output


def test_the_readme_completion_example_is_what_zsh_gets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Shell completion section's Tab, through click's zsh protocol on the fixtures."""
    from click.shell_completion import ZshComplete

    line = next(x for x in README.splitlines() if x.startswith("$ COMP_WORDS="))
    words = shlex.split(line.split("COMP_WORDS=", 1)[1])[0].split()
    shown = README.split(line + "\n", 1)[1].split("\n```", 1)[0].splitlines()
    config = copy_fixtures(tmp_path)
    options = ["--config-dir", str(config), "--db", str(tmp_path / "index.db")]
    env = {"HOME": "/home/dev"}
    assert CliRunner().invoke(cli, [*options, "index"], env=env).exit_code == 0
    monkeypatch.setenv("HOME", "/home/dev")
    complete = ZshComplete(cli, {}, "sessiondex", "_SESSIONDEX_COMPLETE")
    found = complete.get_completions([*options, *words[1:-1]], words[-1])
    assert "\n".join(complete.format_completion(c) for c in found).splitlines() == shown
