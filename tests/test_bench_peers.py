"""``bench.peers``: both tools run on their own copies of the corpus, and the figures
are what the processes did (a stand-in for claude-code-log that writes its cache where
the real one does; the real one is installed by bench/setup.sh, not by the tests)."""

from __future__ import annotations

import stat
from pathlib import Path

from bench.corpus import generate
from bench.peers import CCL_CACHE, measure, table


def _fake_ccl(path: Path) -> Path:
    """Writes a 12,345-byte cache into --projects-dir, as claude-code-log does."""
    path.write_text(
        "#!/bin/sh\n"
        'while [ "$#" -gt 0 ]; do\n'
        '  if [ "$1" = "--projects-dir" ]; then dir="$2"; fi\n'
        "  shift\n"
        "done\n"
        '[ -n "$dir" ] || exit 3\n'
        f'head -c 12345 /dev/zero > "$dir/{CCL_CACHE}"\n'
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_peers_measure_both_tools_on_copies(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    generate(corpus, sessions=12, projects=3, size_mb=1, seed=5)
    before = sorted((p.relative_to(corpus), p.stat().st_mtime_ns) for p in corpus.rglob("*"))
    result = measure(corpus, "tool-heavy", _fake_ccl(tmp_path / "ccl"))
    ours, theirs = result["sessiondex"], result["claude-code-log"]
    assert theirs["size_bytes"] == 12345
    assert ours["size_bytes"] > 0 and ours["cold_s"] > 0 and ours["no_change_s"] > 0
    assert theirs["cold_s"] > 0 and theirs["no_change_s"] > 0
    # the corpus itself is untouched: each tool worked on a copy
    assert (
        sorted((p.relative_to(corpus), p.stat().st_mtime_ns) for p in corpus.rglob("*")) == before
    )
    assert not (corpus / "projects" / CCL_CACHE).exists()
    text = table(result)
    assert "| index / cache size |" in text and "claude-code-log" in text
