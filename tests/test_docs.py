"""Every command is documented: --help with an example, and a README mention."""

from __future__ import annotations

import re
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


def _subcommands() -> list[list[str]]:
    """``[group, sub]`` for every command of a group (``store init`` …)."""
    import click

    found = []
    for name in sorted(COMMANDS):
        command = cli.get_command(click.Context(cli), name)
        if isinstance(command, click.Group):
            found += [[name, sub] for sub in sorted(command.commands)]
    return found


@pytest.mark.parametrize("words", _subcommands(), ids=" ".join)
def test_subcommand_help_has_an_example(words: list[str]) -> None:
    """The top-level commands' help was checked, a group's commands' was not."""
    result = CliRunner().invoke(cli, [*words, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    assert f"sessiondex {' '.join(words)}" in result.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_is_in_the_readme(name: str) -> None:
    assert f"sessiondex {name}" in README


def test_top_level_help_and_version() -> None:
    runner = CliRunner()
    assert "Example" in runner.invoke(cli, ["--help"]).output
    result = runner.invoke(cli, ["--version"])
    # The constant the command prints is the version the package was installed as.
    from importlib.metadata import version

    assert result.exit_code == 0
    assert result.output == f"sessiondex, version {version('sessiondex')}\n"


def test_unknown_command_is_a_usage_error() -> None:
    assert CliRunner().invoke(cli, ["frobnicate"]).exit_code == 2


REPO = Path(__file__).resolve().parent.parent
CODE_DIRS = ("transcripts", "indexer", "query", "actions", "render", "package", "cli", "bench")
CITATION = re.compile(r"docs/([a-z-]+\.md)(?:#([a-z0-9_-]+))?")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    anchors = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", title)))
    return anchors


def _citations() -> list[tuple[str, str, str | None]]:
    found = []
    for folder in CODE_DIRS:
        for path in sorted((REPO / folder).rglob("*.py")):
            for match in CITATION.finditer(path.read_text()):
                found.append((str(path.relative_to(REPO)), match.group(1), match.group(2)))
    return found


def test_code_cites_the_rules_in_docs() -> None:
    # The rules are written down in docs/; the code says which page it follows.
    assert len(_citations()) >= 20


@pytest.mark.parametrize(("source", "page", "anchor"), _citations())
def test_every_docs_citation_resolves(source: str, page: str, anchor: str | None) -> None:
    target = REPO / "docs" / page
    assert target.is_file(), f"{source} cites docs/{page}, which does not exist"
    if anchor:
        assert anchor in _anchors(target), f"{source} cites docs/{page}#{anchor}: no such heading"


@pytest.mark.parametrize("folder", CODE_DIRS)
def test_no_citation_of_documents_outside_the_repository(folder: str) -> None:
    outside = re.compile(r"\b(spec|reference)/[a-z-]+\.md|§\s?\d")
    for path in sorted((REPO / folder).rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            assert not outside.search(line), f"{path.relative_to(REPO)}:{number}: {line.strip()}"


def test_raw_search_examples_in_help_are_queries_fts5_parses(tmp_path: Path) -> None:
    """Helper 93: ``search --help`` showed ``--raw 'auth NEAR/5 token'``, FTS3's syntax,
    which FTS5 refuses: the example always failed."""
    import shlex

    from tests.builders import ConfigTree

    s = ConfigTree(tmp_path / "claude").session(cwd="/w/app")
    s.user("the auth token expired again")
    s.write()
    text = CliRunner().invoke(cli, ["search", "--help"]).output
    examples = [line.strip() for line in text.splitlines() if "search --raw" in line]
    assert examples
    base = ["--config-dir", str(tmp_path / "claude"), "--db", str(tmp_path / "index.db")]
    for example in examples:
        args = shlex.split(example)[1:]  # after "sessiondex"
        result = CliRunner().invoke(cli, [*base, *args, "--scope", "all"])
        assert result.exit_code in (0, 1), (example, result.output)
        assert "cannot parse" not in result.stderr, (example, result.stderr)


def test_a_group_given_no_command_prints_its_help_on_its_own_lines() -> None:
    """Helper 93: ``sessiondex store`` printed its whole help on one line (the error
    cleaning folded every newline)."""
    result = CliRunner().invoke(cli, ["store"])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines[0].startswith("Usage: ") and len(lines) > 5
    assert any(line.strip().startswith("sessiondex store init") for line in lines)
