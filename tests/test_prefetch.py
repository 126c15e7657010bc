"""The cold build's parsing process: what it keeps in flight bounds the writer's memory."""

from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import Executor, Future
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from sessiondex.indexer.prefetch import Prefetched, Prefetcher
from sessiondex.transcripts.discover import MAIN, Found, iter_found
from tests.builders import ConfigTree

MB = 1 << 20
T0 = 1_790_000_000  # a quiet past (2026-09-21)


class InlinePool(Executor):
    """Parses nothing: each submitted batch of files comes back at once as empty parses
    (and the batches are kept)."""

    def __init__(self) -> None:
        self.batches: list[list[Any]] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        files = args[0]
        self.batches.append(files)
        future: Future[Any] = Future()
        future.set_result([Prefetched(tf) for tf in files])
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


# (file sizes, WINDOW, WINDOW_BYTES, most files held, most bytes held): the queue holds
# at most twice the window's files and the window's bytes (one file always goes, however
# big)
WINDOW_CASES = {
    "small files: the file count binds": ([512 << 10] * 80, 16, 24 * MB, 32, 16 * MB),
    "files of 1 MB: the byte budget binds": ([1 * MB] * 40, 16, 24 * MB, 24, 24 * MB),
    "big files: the byte budget binds": ([5 * MB] * 40, 16, 24 * MB, 4, 20 * MB),
    "one file over the budget still goes alone": (
        [60 * MB, 1 * MB, 1 * MB],
        16,
        24 * MB,
        2,
        60 * MB,
    ),
    "mixed sizes stay under the budget": (
        [10 * MB, 1 * MB, 12 * MB, 3 * MB, 9 * MB] * 4,
        16,
        24 * MB,
        4,
        24 * MB,
    ),
}


def _start_with(pool: Executor) -> Any:
    def start(self: Prefetcher, dictionary: bytes | None) -> Executor:
        self._encode_texts = SimpleNamespace(value=0)
        return pool

    return start


@pytest.mark.parametrize("case", list(WINDOW_CASES))
def test_the_queue_is_bounded_by_files_and_bytes(case: str, monkeypatch) -> None:
    sizes, window, window_bytes, most_files, most_bytes = WINDOW_CASES[case]
    monkeypatch.setattr(Prefetcher, "WINDOW", window)
    monkeypatch.setattr(Prefetcher, "WINDOW_BYTES", window_bytes)
    monkeypatch.setattr(Prefetcher, "_start_pool", _start_with(InlinePool()))
    files = _files(sizes)
    prefetcher = Prefetcher(files, include_tools=False)
    seen_files, seen_bytes = [len(prefetcher._futures)], [prefetcher._held]
    taken = []
    for found in files:
        taken.append(prefetcher.take(found.file()).tf)
        seen_files.append(len(prefetcher._futures))
        seen_bytes.append(prefetcher._held)
    prefetcher.close()
    assert taken == [found.file() for found in files]  # every file, in order
    for count, size in zip(seen_files, seen_bytes):
        assert count <= 2 * window and (size <= window_bytes or count == 1)
    assert max(seen_files) == most_files
    assert max(seen_bytes) == most_bytes
    assert seen_bytes[-1] == 0


class SlowPool(Executor):
    """A parser slower than the writer: it finishes one file every ``delay`` seconds, in
    the order they came, and answers each batch without parsing (``parsed`` stays
    None)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.queue: queue.Queue[tuple[Future[Any], Any] | None] = queue.Queue()
        self.unfinished = 0
        self.most_unfinished = 0
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._work, daemon=True)
        self.thread.start()

    def _work(self) -> None:
        while (job := self.queue.get()) is not None:
            future, files = job
            time.sleep(self.delay * len(files))
            with self.lock:
                self.unfinished -= len(files)
            future.set_result([Prefetched(tf) for tf in files])

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()  # every job here is a batch of files to parse
        with self.lock:
            self.unfinished += len(args[0])
            self.most_unfinished = max(self.most_unfinished, self.unfinished)
        self.queue.put((future, args[0]))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.queue.put(None)
        self.thread.join()


def _transcripts(tmp_path: Path, count: int) -> list[Found]:
    tree = ConfigTree(tmp_path / "claude")
    for n in range(count):
        s = tree.session(cwd="/w/app", session_id=f"{n:08d}-0000-4000-8000-000000000000")
        s.user(f"prompt number {n}")
        s.assistant("an answer")
        s.write(mtime=T0 + n)
    return sorted(iter_found(tree.root), key=lambda f: f.path)


def test_a_writer_ahead_of_the_parser_parses_the_next_files_itself_in_order(
    tmp_path: Path, monkeypatch
) -> None:
    """The writer waited on a slower parser (1.3 s of a 2.6 s tool-heavy pass): now it
    parses the first files not yet sent meanwhile, and writes every file in order; the
    parser is kept its window ahead all the same."""
    files = _transcripts(tmp_path, 24)
    pool = SlowPool(delay=0.02)
    monkeypatch.setattr(Prefetcher, "WINDOW", 3)
    monkeypatch.setattr(Prefetcher, "_start_pool", _start_with(pool))
    prefetcher = Prefetcher(files, include_tools=False)
    try:
        items = []
        for found in files:
            items.append(prefetcher.take(found.file()))
            assert len(prefetcher._futures) <= 2 * Prefetcher.WINDOW
    finally:
        prefetcher.close()
    assert [item.tf.path for item in items] == [found.file().path for found in files]
    here = [item for item in items if item.parsed is not None]
    assert 0 < len(here) < len(files)  # both sides parsed
    assert all(item.parsed.state.first_prompt.startswith("prompt number") for item in here)
    assert pool.most_unfinished == Prefetcher.WINDOW


def test_what_a_file_parsed_by_the_writer_raised_is_raised_at_its_own_turn(
    tmp_path: Path, monkeypatch
) -> None:
    import sessiondex.indexer.prefetch as prefetch

    files = _transcripts(tmp_path, 12)
    broken = files[-1].path  # sent last: parsed by the waiting writer, ahead of its turn

    def parse(tf: Any, include_tools: bool) -> Prefetched:
        if tf.path == Path(broken):
            raise RuntimeError("a file that breaks the parse")
        return Prefetched(tf)

    monkeypatch.setattr(prefetch, "parse_new_file", parse)
    monkeypatch.setattr(Prefetcher, "WINDOW", 2)
    monkeypatch.setattr(Prefetcher, "_start_pool", _start_with(SlowPool(delay=0.05)))
    prefetcher = Prefetcher(files, include_tools=False)
    try:
        for found in files[:-1]:
            assert prefetcher.take(found.file()).tf.path == Path(found.path)
        with pytest.raises(RuntimeError, match="breaks the parse"):
            prefetcher.take(files[-1].file())
    finally:
        prefetcher.close()


def test_a_big_file_is_left_to_the_parser(tmp_path: Path, monkeypatch) -> None:
    """A writer that parsed a 100 MB transcript itself held up every write behind it
    and kept its parsed text (helper 88: 207 MB peak against 153 MB): files over
    ``HERE_MAX_BYTES`` wait for the parser."""
    files = _transcripts(tmp_path, 12)
    monkeypatch.setattr(Prefetcher, "WINDOW", 2)
    monkeypatch.setattr(Prefetcher, "HERE_MAX_BYTES", 0)  # every file counts as big
    monkeypatch.setattr(Prefetcher, "_start_pool", _start_with(SlowPool(delay=0.01)))
    prefetcher = Prefetcher(files, include_tools=False)
    try:
        items = [prefetcher.take(found.file()) for found in files]
    finally:
        prefetcher.close()
    assert [item.parsed for item in items] == [None] * len(files)  # all the parser's


KB = 1 << 10

# (file sizes, BATCH_FILES, BATCH_BYTES, files per task): a task takes files in order up
# to the count and the bytes, and a file bigger than the bytes goes alone
BATCH_CASES = {
    "small files: the bytes bind": ([100 * KB] * 40, 16, 1 * MB, [10, 10, 10, 10]),
    "tiny files: the count binds": ([1 * KB] * 20, 4, 1 * MB, [4, 4, 4, 4, 4]),
    "big files go one by one": ([3 * MB] * 3, 16, 1 * MB, [1, 1, 1]),
    "a big file ends a batch and goes alone": (
        [100 * KB, 2 * MB, 100 * KB, 100 * KB],
        16,
        1 * MB,
        [1, 1, 2],
    ),
}


@pytest.mark.parametrize("case", list(BATCH_CASES))
def test_files_go_to_the_parser_in_batches(case: str, monkeypatch) -> None:
    """One task per file cost ~0.4 ms each of pickling and hand-offs, as much as
    parsing a small transcript: the parser idled a third of a tool-heavy build."""
    sizes, batch_files, batch_bytes, expected = BATCH_CASES[case]
    pool = InlinePool()
    monkeypatch.setattr(Prefetcher, "BATCH_FILES", batch_files)
    monkeypatch.setattr(Prefetcher, "BATCH_BYTES", batch_bytes)
    monkeypatch.setattr(Prefetcher, "WINDOW_BYTES", 64 * MB)
    monkeypatch.setattr(Prefetcher, "_start_pool", _start_with(pool))
    files = _files(sizes)
    prefetcher = Prefetcher(files, include_tools=False)
    taken = [prefetcher.take(found.file()).tf for found in files]
    prefetcher.close()
    assert taken == [found.file() for found in files]
    assert [len(batch) for batch in pool.batches] == expected


class RunningPool(Executor):
    """Runs each task here, at once, as the parsing process would."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass


def test_what_one_file_of_a_batch_raised_is_raised_at_its_turn_alone(
    tmp_path: Path, monkeypatch
) -> None:
    """A batch is one task, but each of its files is its own: the file that breaks the
    parse fails at its turn, and the files around it are written."""
    import sessiondex.indexer.prefetch as prefetch

    files = _transcripts(tmp_path, 6)
    broken = Path(files[2].path)
    real = prefetch.parse_new_file

    def parse(tf: Any, include_tools: bool) -> Prefetched:
        if tf.path == broken:
            raise RuntimeError("a file that breaks the parse")
        return real(tf, include_tools)

    monkeypatch.setattr(prefetch, "parse_new_file", parse)
    monkeypatch.setattr(Prefetcher, "_start_pool", _start_with(RunningPool()))
    prefetcher = Prefetcher(files, include_tools=False)
    outcomes: list[str] = []
    try:
        for found in files:
            try:
                item = prefetcher.take(found.file())
            except RuntimeError as exc:
                outcomes.append(str(exc))
            else:
                outcomes.append(item.parsed.state.first_prompt)
    finally:
        prefetcher.close()
    assert outcomes == [
        "prompt number 0",
        "prompt number 1",
        "a file that breaks the parse",
        "prompt number 3",
        "prompt number 4",
        "prompt number 5",
    ]


def test_a_parser_that_dies_leaves_its_files_to_the_writer(tmp_path: Path, monkeypatch) -> None:
    """Helper 100: when the parsing process was killed mid-build (the OOM killer),
    every file queued for it failed with the pool and the files never sent failed with
    ``IndexError``: ``index`` exited 0 with hundreds of files left out and as many
    warnings. The writer now parses every file from there on itself, in order."""
    import os
    import signal

    files = _transcripts(tmp_path, 60)
    monkeypatch.setattr(Prefetcher, "WINDOW", 2)  # most files not sent yet when it dies
    monkeypatch.setattr(Prefetcher, "BATCH_FILES", 1)
    prefetcher = Prefetcher(files, include_tools=False)  # the real parsing process
    try:
        first = prefetcher.take(files[0].file())
        workers = list(prefetcher._pool._processes)  # type: ignore[attr-defined]
        assert workers
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        rest = [prefetcher.take(found.file()) for found in files[1:]]
        assert prefetcher._lost
    finally:
        prefetcher.close()
    prompts = [item.parsed.state.first_prompt for item in [first, *rest]]  # type: ignore[union-attr]
    assert prompts == [f"prompt number {n}" for n in range(60)]
