"""``bench/mcp_latency.py`` runs end to end on a tiny corpus (no timing is asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from bench import mcp_latency  # noqa: E402
from bench.corpus import generate  # noqa: E402


@pytest.mark.parametrize(
    ("mode", "extra"), [("default", []), ("check", []), ("default", ["--appending"])]
)
def test_mcp_latency_reports_a_checked_figure(
    tmp_path: Path, capsys, mode: str, extra: list[str]
) -> None:  # type: ignore[no-untyped-def]
    corpus = generate(tmp_path / "corpus", sessions=20, projects=2, size_mb=1, seed=1).parent
    out = tmp_path / "mcp.json"
    code = mcp_latency.main(
        [
            "--corpus",
            str(corpus),
            "--calls",
            "3",
            "--mode",
            mode,
            "--out",
            str(out),
            "--workdir",
            str(tmp_path),
            *extra,
        ]
    )
    assert code == 0, capsys.readouterr()
    report = json.loads(out.read_text())
    mode += "+append" if extra else ""
    row = report[mode]
    assert row["calls"] == 3 and row["errors"] == 0 and row["same_answer_as_library"]
    assert row["p50_ms"] <= row["p95_ms"] <= row["max_ms"] and row["goal_p95_ms"] == 50.0
    assert mode in capsys.readouterr().out and len(row["loadavg_before"]) == 3


def test_scaled_corpus_keeps_the_default_shape() -> None:
    assert mcp_latency.corpus_params(2000) == {
        "sessions": 2000,
        "projects": 50,
        "size_mb": 400.0,
        "seed": 1,
    }
    assert mcp_latency.corpus_params(200) == {
        "sessions": 200,
        "projects": 5,
        "size_mb": 40.0,
        "seed": 1,
    }
