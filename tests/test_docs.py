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
