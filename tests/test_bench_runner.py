"""Smoke test of the benchmark runner (``python -m bench --quick``) on a tiny corpus.

It proves the runner runs end to end, reports every row, writes its JSON and that our
answers agree with the generator's manifest. It asserts no timing: the machine is shared
and the figures are the bench's business, not a unit test's.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import runner  # noqa: E402
from bench.corpus import generate  # noqa: E402


class QuickRun(NamedTuple):
    status: int
    result: dict
    table: str
    printed: str  # all ``main`` wrote to standard output: the table, then the JSON's path
    out: Path


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> QuickRun:
    """One ``python -m bench --quick`` through ``main``, the command line's path, shared
    by every test that only reads its results (a quick run is ~2 s of CPU and children:
    the tests of the table, of the JSON and of ``main`` itself used to run one each)."""
    base = tmp_path_factory.mktemp("bench")
    corpus = generate(base / "corpus", sessions=40, projects=4, size_mb=3, seed=1).parent
    out = base / "out" / "results.json"
    argv = ["--corpus", str(corpus), "--out", str(out), "--quick", "--workdir", str(base)]
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        status = runner.main(argv)
    table = printed.getvalue().split("\nwritten: ", 1)[0]
    return QuickRun(status, json.loads(out.read_text()), table, printed.getvalue(), out)


def test_every_row_is_reported_in_order(quick_run: QuickRun) -> None:
    result, table = quick_run.result, quick_run.table
    assert [r["figure"] for r in result["rows"]] == list(runner.ROW_NAMES)
    for name in runner.ROW_NAMES:
        assert f"| {name} |" in table


@pytest.mark.parametrize(
    "name",
    [
        runner.COLD,
        runner.REFRESH,
        runner.LIST,
        runner.LIST_DECODED,
        runner.INFO,
        runner.SEARCH_LIB,
        runner.SEARCH_CLI,
        runner.READ_CLI,
        runner.RSS,
        runner.SIZE,
    ],
)
def test_measured_rows_have_a_figure(quick_run: QuickRun, name: str) -> None:
    row = next(r for r in quick_run[1]["rows"] if r["figure"] == name)
    assert row["ours"] not in ("error", "not measured"), row["note"]


def test_scale_rows_say_how_to_run_them(quick_run: QuickRun) -> None:
    for name in (runner.GROW_LIST, runner.GROW_SEARCH, runner.GROW_RSS):
        row = next(r for r in quick_run[1]["rows"] if r["figure"] == name)
        assert row["ours"] == "not run (use --scale-check)"
        assert row["met"] is None


def test_answers_match_the_manifest(quick_run: QuickRun) -> None:
    status, result, table = quick_run.status, quick_run.result, quick_run.table
    failed = [c for c in result["checks"] if not c["passed"]]
    assert not failed, failed
    assert status == 0
    assert result["all_checks_passed"] is True
    names = {c["name"] for c in result["checks"]}
    assert {
        "custom_title of every session = manifest",
        "tag of every session = manifest",
        "branches of every session = manifest",
        "pr_links (url, number, provider) of every session = manifest",
        "pr_links.repository of every session = manifest",
    } <= names
    assert "PASS  search 'thornwhistle'" in table and "FAIL" not in table


def test_the_index_of_the_run_is_sized_against_the_corpus(quick_run: QuickRun) -> None:
    row = next(r for r in quick_run[1]["rows"] if r["figure"] == runner.SIZE)
    assert row["data"]["corpus_bytes"] == quick_run[1]["corpus"]["bytes"] > 0
    assert row["ratio"] == pytest.approx(row["data"]["index_bytes"] / row["data"]["corpus_bytes"])


def test_a_wrong_index_fails_a_check(tmp_path: Path) -> None:
    """The checks can fail: a session whose title the index lost is reported."""
    from sessiondex.indexer.db import open_db
    from sessiondex.indexer.refresh import refresh

    corpus = generate(tmp_path / "c", sessions=12, projects=2, size_mb=1, seed=2).parent
    manifest = runner.read_manifest(corpus)
    db = open_db(tmp_path / "i.db")
    refresh(db, [corpus])
    assert all(c.passed for c in runner.correctness(db, manifest, None, None))
    titled = next(m for m in manifest if m["custom_title"])
    titled["custom_title"] = "a title the index never saw"
    failed = [c.name for c in runner.correctness(db, manifest, None, None) if not c.passed]
    assert failed == ["custom_title of every session = manifest"]
    db.close()


def test_main_writes_json_and_the_table(quick_run: QuickRun) -> None:
    """The command line path: ``main`` prints the table and writes ``--out``."""
    assert quick_run.status == 0
    assert quick_run.printed.startswith("| figure |") and str(quick_run.out) in quick_run.printed
    assert len(json.loads(quick_run.out.read_text())["rows"]) == len(runner.ROW_NAMES)


def test_missing_rg_is_reported_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = generate(tmp_path / "c", sessions=12, projects=2, size_mb=1, seed=4).parent
    monkeypatch.setattr(runner.shutil, "which", lambda name: None)
    opts = runner.parse_args(["--corpus", str(corpus), "--quick", "--workdir", str(tmp_path)])
    opts.appends = 0
    bench = runner.Bench(opts, log=lambda _m: None)
    bench.measure_watch = lambda row: None  # type: ignore[method-assign]
    assert bench.run() == 0
    for name in (runner.SEARCH_LIB, runner.SEARCH_CLI):
        row = bench.rows[name]
        assert "rg not found" in row.note
        assert row.ratio is None and row.met is None


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")
def test_the_build_peak_rss_is_the_childs_own_not_the_benchs(tmp_path: Path) -> None:
    """A child started from a big parent inherits the parent's high-water mark in its
    ``ru_maxrss`` (vfork + exec); the figure must be the build's own."""
    corpus = generate(tmp_path / "c", sessions=12, projects=2, size_mb=1, seed=5).parent
    ballast = bytearray(400 << 20)
    for offset in range(0, len(ballast), 4096):  # touched, so resident
        ballast[offset] = 1
    result = runner.build_in_child(tmp_path / "i.db", [corpus])
    assert result["sessions"] == 12
    assert result["peak_rss_bytes"] < 300 << 20, result
    assert result["peak_rss_bytes"] == result["vmhwm_kib"] * 1024
    del ballast


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({"/a": 1}, ("/a", 1)),
        ({"/a": 5, "/b": 1, "/c": 9}, ("/a", 5)),  # the middle of 1, 5, 9
        ({"/a": 2, "/b": 2, "/c": 7, "/d": 3}, ("/d", 3)),  # 2, 2, 3, 7: the upper middle
        ({"/b": 4, "/a": 4, "/c": 4}, ("/b", 4)),  # ties ordered by name
    ],
)
def test_the_picker_types_in_the_project_with_the_median_session_count(
    counts: dict[str, int], expected: tuple[str, int]
) -> None:
    """The picker's default scope is one worktree: the bench types its words again in the
    project holding the median number of sessions (not the biggest, where a word's
    matches are mostly its own), counting normal sessions only."""
    from bench.picker import median_project

    manifest = [{"cwd": cwd, "kind": "normal"} for cwd, n in counts.items() for _ in range(n)] + [
        {"cwd": "/sidechains", "kind": "sidechain"}
    ] * 50
    assert median_project(manifest) == expected
