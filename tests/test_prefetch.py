"""The cold build's parsing process: what it keeps in flight bounds the writer's memory."""

from __future__ import annotations

from concurrent.futures import Executor, Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sessiondex.indexer.prefetch import Prefetched, Prefetcher
from sessiondex.transcripts.discover import MAIN, Found

MB = 1 << 20


class InlinePool(Executor):
    """Parses nothing: each submitted file comes back at once as an empty parse."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        tf = args[0]
        future: Future[Any] = Future()
        future.set_result(Prefetched(tf))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def _files(sizes: list[int]) -> list[Found]:
    return [
        Found(
            path=f"/c/projects/k/{i:08d}-0000-4000-8000-000000000000.jsonl",
            root=Path("/c"),
            project_key="k",
            session_id=f"{i:08d}-0000-4000-8000-000000000000",
            kind=MAIN,
            agent_id=None,
            size=size,
            mtime_ns=0,
            inode=i,
            device=1,
        )
        for i, size in enumerate(sizes)
    ]


# (file sizes, WINDOW, WINDOW_BYTES, most files in flight, most bytes in flight)
WINDOW_CASES = {
    "small files: the file count binds": ([1 * MB] * 40, 16, 24 * MB, 16, 16 * MB),
    "big files: the byte budget binds": ([5 * MB] * 40, 16, 24 * MB, 4, 20 * MB),
    "one file over the budget still goes alone": (
        [30 * MB, 1 * MB, 1 * MB],
        16,
        24 * MB,
        2,
        30 * MB,
    ),
    "mixed sizes stay under the budget": (
        [10 * MB, 1 * MB, 12 * MB, 3 * MB, 9 * MB] * 4,
        16,
        24 * MB,
        4,
        24 * MB,
    ),
}


@pytest.mark.parametrize("case", list(WINDOW_CASES))
def test_the_window_is_bounded_by_files_and_bytes(case: str, monkeypatch) -> None:
    sizes, window, window_bytes, most_files, most_bytes = WINDOW_CASES[case]
    monkeypatch.setattr(Prefetcher, "WINDOW", window)
    monkeypatch.setattr(Prefetcher, "WINDOW_BYTES", window_bytes)

    def start_inline(self: Prefetcher, dictionary: bytes | None) -> InlinePool:
        self._encode_texts = SimpleNamespace(value=0)
        return InlinePool()

    monkeypatch.setattr(Prefetcher, "_start_pool", start_inline)
    files = _files(sizes)
    prefetcher = Prefetcher(files, include_tools=False)
    seen_files, seen_bytes = [len(prefetcher._futures)], [prefetcher._bytes_in_flight]
    taken = []
    for found in files:
        taken.append(prefetcher.take(found.file()).tf)
        seen_files.append(len(prefetcher._futures))
        seen_bytes.append(prefetcher._bytes_in_flight)
    prefetcher.close()
    assert taken == [found.file() for found in files]  # every file, in order
    for count, size in zip(seen_files, seen_bytes):
        assert count <= window and (size <= window_bytes or count == 1)
    assert max(seen_files) == most_files
    assert max(seen_bytes) == most_bytes
    assert seen_bytes[-1] == 0
