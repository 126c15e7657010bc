"""Every command is documented: --help with an example, and a README mention."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import COMMANDS, cli

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_help_has_an_example(name: str) -> None:
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    assert f"sessiondex {name}" in result.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_is_in_the_readme(name: str) -> None:
    assert f"sessiondex {name}" in README


def test_top_level_help_and_version() -> None:
    runner = CliRunner()
    assert "Example" in runner.invoke(cli, ["--help"]).output
    result = runner.invoke(cli, ["--version"])
    assert result.exit_code == 0 and "sessiondex" in result.output


def test_unknown_command_is_a_usage_error() -> None:
    assert CliRunner().invoke(cli, ["frobnicate"]).exit_code == 2
