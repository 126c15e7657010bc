"""The bench corpus generator is deterministic and writes well-formed transcripts.

Benchmarks compare runs across days and machines, so the same seed must give the same
bytes *and* the same mtimes (the indexer keys on mtime). No timings are asserted here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.corpus import KINDS, generate  # noqa: E402


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in files + dirs:
            p = Path(dirpath) / name
            data = p.read_bytes() if name in files else b"<dir>"
            out[str(p.relative_to(root))] = (data, p.stat().st_mtime_ns)
    return out


def test_same_seed_gives_identical_corpus(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", sessions=40, projects=4, size_mb=1.5, seed=11)
    b = generate(tmp_path / "b", sessions=40, projects=4, size_mb=1.5, seed=11)
    snap_a, snap_b = _snapshot(a.parent), _snapshot(b.parent)
    assert snap_a.keys() == snap_b.keys()
    for rel in snap_a:
        assert snap_a[rel][0] == snap_b[rel][0], rel
        assert snap_a[rel][1] == snap_b[rel][1], rel
    jsonl_mtimes = [m for rel, (d, m) in snap_a.items() if rel.endswith(".jsonl") and d != b"<dir>"]
    assert len(set(jsonl_mtimes)) == len(jsonl_mtimes), "mtimes must be distinct per file"

    other = generate(tmp_path / "c", sessions=40, projects=4, size_mb=1.5, seed=12)
    assert _snapshot(other.parent) != snap_a


def test_lines_parse_and_manifest_covers_every_kind(tmp_path: Path) -> None:
    manifest = generate(tmp_path / "cfg", sessions=40, projects=4, size_mb=3, seed=3)
    root = manifest.parent
    rows = [orjson.loads(line) for line in manifest.read_bytes().splitlines()]
    assert len(rows) == 40
    assert len({r["session_id"] for r in rows}) == 40
    kinds = {k: sum(1 for r in rows if r["kind"] == k) for k in KINDS}
    assert all(n > 0 for n in kinds.values()), kinds

    for row in rows:
        path = root / row["path"]
        data = path.read_bytes()
        assert row["size"] == len(data)
        lines = data.split(b"\n")
        if not row["truncated"]:
            assert data == b"" or data.endswith(b"\n")
        else:
            lines = lines[:-1]  # the cut-short last line is the point of a truncated file
        for line in lines:
            if line:
                orjson.loads(line)
        for sub in row["subagents"]:
            for line in (root / sub["path"]).read_bytes().splitlines():
                assert orjson.loads(line)["isSidechain"] is True

    planted = {p["word"] for r in rows for p in r["planted"]}
    assert "zephyrquartz" in planted


def _prose_share(root: Path) -> float:
    """Bytes of prompt and assistant text/thinking strings ÷ bytes of the transcripts."""
    total = prose = 0
    for path in (root / "projects").rglob("*.jsonl"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        total += len(data)
        for line in data.splitlines():
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(rec, dict) or rec.get("type") not in ("user", "assistant"):
                continue
            content = (rec.get("message") or {}).get("content")
            if isinstance(content, str):
                prose += len(content.encode())
            elif isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") in ("text", "thinking"):
                        text = block.get("text") or block.get("thinking") or ""
                        prose += len(text.encode())
    return prose / total


@pytest.mark.long
def test_text_heavy_profile_is_deterministic_and_a_third_prose(tmp_path: Path) -> None:
    a = generate(tmp_path / "a", sessions=60, projects=4, size_mb=2, seed=5, profile="text-heavy")
    b = generate(tmp_path / "b", sessions=60, projects=4, size_mb=2, seed=5, profile="text-heavy")
    assert _snapshot(a.parent) == _snapshot(b.parent)
    tool = generate(tmp_path / "t", sessions=60, projects=4, size_mb=2, seed=5)
    assert 0.25 <= _prose_share(a.parent) <= 0.45
    assert _prose_share(tool.parent) < 0.12
    # Same plan (sessions, planted words) whatever the profile; only the text differs.
    rows_a = [orjson.loads(line) for line in a.read_bytes().splitlines()]
    rows_t = [orjson.loads(line) for line in tool.read_bytes().splitlines()]
    assert [r["session_id"] for r in rows_a] == [r["session_id"] for r in rows_t]
    assert [r["planted"] for r in rows_a] == [r["planted"] for r in rows_t]
