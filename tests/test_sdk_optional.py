"""The suite runs without ``claude-agent-sdk``: every use of it is skippable.

The SDK is a test extra for parity checks, not a dependency; a venv without it (or a
version whose private modules moved) must give skips, not failures. A bare
``from claude_agent_sdk import …`` in a test body fails instead, so this pins the rule:
import it only through ``pytest.importorskip`` or inside ``try: … except ImportError``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
_CATCHES = {"ImportError", "ModuleNotFoundError"}


def _guarded_lines(tree: ast.AST) -> set[int]:
    """Lines inside a ``try`` body whose handlers catch an import failure."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught: set[str] = set()
        for handler in node.handlers:
            kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught.update(k.id for k in kinds if isinstance(k, ast.Name))
        if caught & _CATCHES:
            for stmt in node.body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _sdk_imports(tree: ast.AST) -> list[int]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(n == "claude_agent_sdk" or n.startswith("claude_agent_sdk.") for n in names):
            found.append(node.lineno)
    return found


@pytest.mark.parametrize("path", sorted(TESTS.glob("*.py")), ids=lambda p: p.name)
def test_sdk_imported_only_where_its_absence_skips(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bare = sorted(set(_sdk_imports(tree)) - _guarded_lines(tree))
    assert not bare, (
        f"{path.name}: claude_agent_sdk imported at line(s) {bare}; use "
        'pytest.importorskip("claude_agent_sdk") so the suite runs without it'
    )
