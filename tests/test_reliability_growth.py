"""Hostile sizes under ``watch``: a very long line that grows in chunks.

Issue 14 item 10: a 50 MB line appended in 1 MB chunks made the watcher re-read ~1.4 GB
(27x): every pass read the incomplete line again from its start. Now a pass remembers
how far it looked without finding a newline (``files.scanned``) and the next pass looks
only at the new bytes, so the bytes read stay about linear in the line's length (once
to find its end, once to parse it; a line over the length limit is skipped without the
second read). The watcher's per-event entry point (``ingest_path``) is driven directly,
once per chunk, and ``RefreshStats.bytes_read`` counts every byte read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sessiondex.transcripts.reader as reader_module
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import ingest_path, refresh
from sessiondex.indexer.stats import RefreshStats
from sessiondex.query.filters import Filters
from sessiondex.query.search import search
from tests.builders import ConfigTree, append_bytes, dumps
from tests.helpers_index import index_snapshot, rebuilt_snapshot

EVERYWHERE = Filters(scope="all", all_kinds=True, include_archived=True)


@pytest.mark.parametrize(
    ("line_mb", "limit_mb"),
    [
        pytest.param(4, None, id="long-line"),
        pytest.param(3, 1, id="over-the-limit"),
    ],
)
def test_a_line_growing_in_chunks_is_read_about_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line_mb: int, limit_mb: int | None
) -> None:
    if limit_mb is not None:  # the 32 MB limit, scaled down with the line
        monkeypatch.setattr(reader_module, "MAX_LINE_BYTES", limit_mb << 20)
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/srv/big")
    s.user("before the long line")
    s.write()
    db = open_db(tmp_path / "index.db")
    try:
        refresh(db, [tree.root])
        filler = "lorem ipsum " * ((line_mb << 20) // 12)
        s.user(f"{filler} longlineend")
        line = dumps(s.entries.pop()) + b"\n"
        s.user("afterwards a short line")
        after = dumps(s.entries.pop()) + b"\n"
        chunk = 64 << 10
        read = passes = 0
        for start in range(0, len(line), chunk):
            append_bytes(s.path, line[start : start + chunk])
            stats = RefreshStats()
            ingest_path(db, str(s.path), [tree.root], stats)
            read += stats.bytes_read
            passes += 1
        append_bytes(s.path, after)
        stats = RefreshStats()
        ingest_path(db, str(s.path), [tree.root], stats)
        read += stats.bytes_read
        # Re-reading from the line's start every pass would be ~passes/2 times its size.
        assert passes >= 40
        assert read <= 2.2 * len(line), (read, len(line))
        hits = {h["session_id"] for h in search(db, "afterwards", EVERYWHERE)}
        assert hits == {s.session_id}
        long_hits = db.execute(
            "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'longlineend'"
        ).fetchone()[0]
        assert long_hits == (0 if limit_mb else 1)
        assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "rebuilt.db")
    finally:
        db.close()
