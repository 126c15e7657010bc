"""``transcripts.tree.walk``: ``os.walk`` without recursion, the same answers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessiondex.transcripts.tree import walk


def _session_folder(root: Path) -> Path:
    """A session folder as Claude Code leaves it, plus what users and tools add."""
    folder = root / "0b5c8f7e-4a8d-4f5e-9a59-2b1f3c4d5e6f"
    (folder / "subagents" / "workflows" / "run-1").mkdir(parents=True)
    (folder / "tool-results").mkdir()
    (folder / "subagents" / "agent-a1.jsonl").write_bytes(b"{}\n")
    (folder / "subagents" / "agent-a1.meta.json").write_bytes(b"{}")
    (folder / "subagents" / "workflows" / "run-1" / "agent-b2.jsonl").write_bytes(b"{}\n")
    (folder / "tool-results" / "toolu_01.txt").write_bytes(b"output")
    outside = root / "elsewhere"
    (outside / "inner").mkdir(parents=True)
    (outside / "inner" / "x.jsonl").write_bytes(b"{}\n")
    (folder / "linked-dir").symlink_to(outside)  # listed as a dir, never entered
    (folder / "linked-file").symlink_to(folder / "tool-results" / "toolu_01.txt")
    (folder / "dangling").symlink_to(root / "nowhere")
    return folder


def _as_lists(rows: object) -> list[tuple[str, list[str], list[str]]]:
    return [(top, sorted(dirs), sorted(files)) for top, dirs, files in rows]  # type: ignore[attr-defined]


def test_the_same_rows_as_os_walk_in_the_same_order(tmp_path: Path) -> None:
    folder = _session_folder(tmp_path)
    assert list(walk(folder)) == list(os.walk(folder))
    assert _as_lists(walk(str(folder))) == _as_lists(os.walk(folder))
    visited = [top for top, _, _ in walk(folder)]
    assert str(folder / "linked-dir") not in visited
    assert not any(top.startswith(str(tmp_path / "elsewhere")) for top in visited)


@pytest.mark.parametrize(
    ("prune", "expected_below"),
    [
        (lambda dirs: dirs.clear(), set()),
        (lambda dirs: dirs.remove("subagents"), {"tool-results"}),
        (lambda dirs: dirs.sort(reverse=True), {"tool-results", "subagents", "workflows"}),
    ],
    ids=["clear", "remove-one", "reorder"],
)
def test_the_caller_prunes_and_orders_dirnames_in_place(
    tmp_path: Path, prune: object, expected_below: set[str]
) -> None:
    folder = _session_folder(tmp_path)
    seen: list[str] = []
    for top, dirs, _files in walk(folder):
        if top == str(folder):
            prune(dirs)  # type: ignore[operator]
        else:
            seen.append(os.path.basename(top))
    assert set(seen) - {"run-1"} == expected_below
    if expected_below and "subagents" in expected_below:
        assert seen[0] == "tool-results"  # the reversed order was kept


def test_an_unlistable_dir_goes_to_onerror_and_the_walk_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _session_folder(tmp_path)
    denied = str(folder / "subagents")
    real_scandir = os.scandir

    def scandir(path: str) -> object:
        if os.fspath(path) == denied:
            raise PermissionError(13, "Permission denied", denied)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    errors: list[OSError] = []
    visited = [top for top, _, _ in walk(folder, onerror=errors.append)]
    assert [e.filename for e in errors] == [denied]
    assert denied not in visited and str(folder / "tool-results") in visited
    assert [top for top, _, _ in walk(tmp_path / "missing")] == []  # no onerror: skipped


def test_a_folder_nested_past_the_recursion_limit(tmp_path: Path) -> None:
    """``os.walk`` on Python 3.11 raised RecursionError here."""
    bottom = tmp_path
    for _ in range(1_200):
        bottom = bottom / "d"
        os.mkdir(bottom)
    (bottom / "agent-deep.jsonl").write_bytes(b"{}\n")
    try:
        rows = list(walk(tmp_path))
        assert len(rows) == 1_201
        assert rows[-1] == (str(bottom), [], ["agent-deep.jsonl"])
    finally:  # pytest's own rmtree of tmp_path would recurse as deep
        (bottom / "agent-deep.jsonl").unlink()
        while bottom != tmp_path:
            bottom.rmdir()
            bottom = bottom.parent
