"""Parse new files in a second process while this one writes (cold builds)."""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import BrokenExecutor, Executor, Future
from dataclasses import dataclass
from typing import Any

from sessiondex.indexer.derive import SessionState
from sessiondex.indexer.parse import ParsedTail, parse_tail
from sessiondex.indexer.shape import settled_at
from sessiondex.indexer.textstore import packer
from sessiondex.transcripts.discover import MAIN, Found, TranscriptFile, open_regular


@dataclass
class Prefetched:
    tf: TranscriptFile
    checked_ns: int = 0
    parsed: ParsedTail | None = None
    error: str | None = None
    vanished: bool = False  # deleted since discovery: not an error (ingest._unread)


# One task of the parsing process: each file's result (or what parsing it raised), in
# order; a result is set to None once the writer takes it.
Batch = Future[list[Prefetched | Exception | None]]


# In the parsing worker: the writer's wish that this process compress the message texts
# (a shared byte, set by Prefetcher.take), and the dictionary to compress them against.
_encode_texts: Any = None
_dictionary: bytes | None = None


def _exit_with_parent(
    parent: int, encode_texts: Any = None, dictionary: bytes | None = None
) -> None:
    """Parsing worker's initializer: end the worker once its parent is gone (and keep
    the shared compress-here flag and the index's dictionary).

    A parent killed with SIGKILL cannot shut the pool down, and the worker would wait
    on its call queue forever (it holds both ends of it), keeping the dead command's
    stdout/stderr open too.
    """

    global _encode_texts, _dictionary
    _encode_texts, _dictionary = encode_texts, dictionary

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _set_dictionary(dictionary: bytes) -> None:
    """In the parsing worker: compress against ``dictionary`` from the next file on."""
    global _dictionary
    _dictionary = dictionary


def parse_new_file(tf: TranscriptFile, include_tools: bool) -> Prefetched:
    path = str(tf.path)
    try:
        with open_regular(path) as stream:
            checked_ns = time.time_ns()
            st = os.fstat(stream.fileno())
            tf = tf.restat(st)
            state = SessionState() if tf.kind == MAIN else None
            here = _encode_texts is not None and bool(_encode_texts.value)
            encoder = packer(_dictionary).encode if here else None
            parsed = parse_tail(
                stream,
                tf.size,
                0,
                state,
                set(),
                set(),
                include_tools,
                encoder=encoder,
                quiet=settled_at(tf.mtime_ns, checked_ns),
            )
    except FileNotFoundError:
        return Prefetched(tf, vanished=True)
    except OSError as exc:
        return Prefetched(tf, error=exc.strerror or str(exc))
    return Prefetched(tf, checked_ns, parsed)


def parse_new_files(
    files: Sequence[TranscriptFile], include_tools: bool
) -> list[Prefetched | Exception | None]:
    """:func:`parse_new_file` of each file, in order: one task of the parsing process.
    What parsing one file raises is returned in its place, so it is raised at that
    file's turn (:meth:`Prefetcher.take`) and the others of its batch are written.
    (None is the place of a result the writer took.)"""
    out: list[Prefetched | Exception | None] = []
    for tf in files:
        try:
            out.append(parse_new_file(tf, include_tools))
        except Exception as exc:
            out.append(exc)
    return out


def may_start_parser() -> bool:
    """Whether this process may start the parsing process (:class:`Prefetcher`): only
    while it is the one thread of its process. Then the child is forked on Linux (or
    spawned elsewhere, from the CLI's own script). A process with other threads is
    someone's program: a front end (the picker, whose Textual took over stderr, so
    starting the child failed with "bad value(s) in fds_to_keep") or a library user's (a
    spawned child imports the caller's ``__main__`` again, which without a main guard
    runs the script twice and fails). There the new files are parsed in-process."""
    return threading.active_count() == 1


class Prefetcher:
    """Parses new files in a second process, in order, while this one writes.

    Parsing is pure Python and writing is mostly SQLite's FTS5 tokenizer; in one process
    the two fight over the GIL (a thread is slower than none), in two they overlap, so a
    cold build on two cores takes about the longer of the two instead of their sum.
    Only new files go this way: they need no stored state, so the parser never touches
    the database.

    The parser works at most ``WINDOW`` files ahead of what it has finished, and what
    waits in this process bounds the writer's memory: parsed results wait until the
    writer takes them, and when the writer is the slower side (FTS work, a loaded
    machine) they pile up. So the queue holds at most ``2 * WINDOW`` files *and* at most
    ``WINDOW_BYTES`` of transcript (one file always goes, however big): a queue of big
    text-heavy files would otherwise hold several MB of parsed text each.

    Message texts are compressed (indexer/textstore.py) by whichever process has time:
    when the writer finds the next file already parsed, the parser is ahead and
    compresses the next ones itself; when the writer has to wait, the writer
    compresses (measured on the text-heavy bench: the writer waits ~5 s of a ~15 s build
    on the parser, and compression is ~2.5 s of CPU).

    Parsing is shared the same way. Where tool output is most of the bytes the parser is
    the slower side: the writer waited ~1.3 s of a 2.6 s pass on the tool-heavy bench.
    So instead of waiting, the writer parses the first file not yet sent itself
    (:meth:`_parse_while_waiting`), after topping up the parser's window, unless it is
    big (``HERE_MAX_BYTES``). Its result
    takes that file's place in the queue: the files are written in order all the same.
    (A window counted in files not yet taken, as before, starved the parser: its
    finished files wait behind the head while the writer parses.)

    Files are sent in batches (``BATCH_FILES``, ``BATCH_BYTES``): one task per file
    kept the parser idle a third of a tool-heavy build between tasks, and the writer's
    result thread busy unpickling between its writes. With batches and a window of 64
    files the tool-heavy bench's cold build went from 2.08 s to 1.64 s, the text-heavy
    one from 5.4 s to 4.9 s (2026-12-03; windows of 16, 32 and 128, batches of 4 to 32
    files and 0.5 to 4 MB measured slower).
    """

    WINDOW = 64
    WINDOW_BYTES = 24 << 20
    # The biggest file the writer parses itself while it waits (most are tens of KB):
    # one of 100 MB would hold it up for seconds, with its parsed text in its memory.
    HERE_MAX_BYTES = 2 << 20
    # Files go to the parser in batches of up to this many files and bytes (a bigger file
    # alone): each task costs both processes ~0.4 ms of pickling, pipes, futures and
    # thread hand-offs, as much as parsing a 100 KB transcript, and most are smaller.
    BATCH_FILES = 16
    BATCH_BYTES = 1 << 20
    # Measured on two cores: a second parser is slower (the writer and one parser
    # already keep both busy).
    WORKERS = 1

    def __init__(
        self, files: Sequence[Found], include_tools: bool, dictionary: bytes | None = None
    ) -> None:
        """Parse ``files`` in this order; each becomes a :class:`TranscriptFile` only when
        it is sent (the refresh holds every new file of a cold build). Texts the parser
        compresses are compressed against ``dictionary`` (the index's)."""
        self.dictionary = dictionary
        self._pool = self._start_pool(dictionary)
        assert self.WORKERS == 1  # use_dictionary relies on one worker taking tasks in order
        self._pending = collections.deque(files)
        self._include_tools = include_tools
        # In file order, each file's batch (its results to come), its place in the
        # batch, its size, and whether it is parsed here (_parse_while_waiting) rather
        # than by the parser; ``_held`` sums the sizes.
        self._futures: collections.deque[tuple[Batch, int, int, bool]] = collections.deque()
        self._held = 0
        self._running: collections.deque[tuple[Batch, int]] = collections.deque()  # + files
        self._in_flight = 0  # files in ``_running``
        self._lost = False  # the parsing process died: every file is parsed here
        self._fill()

    def _start_pool(self, dictionary: bytes | None) -> Executor:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # fork starts the parser at once (only ever from a single-threaded process: see
        # may_start_parser); where fork is not the platform's way, spawn a fresh
        # interpreter.
        method = "fork" if sys.platform == "linux" else "spawn"
        context = multiprocessing.get_context(method)
        self._encode_texts = context.Value("b", 0, lock=False)
        return ProcessPoolExecutor(
            max_workers=self.WORKERS,
            mp_context=context,
            initializer=_exit_with_parent,
            initargs=(os.getpid(), self._encode_texts, dictionary),
        )

    def _backlog(self) -> int:
        """Files sent to the parser that it has not finished (it takes them in order)."""
        while self._running and self._running[0][0].done():
            self._in_flight -= self._running.popleft()[1]
        return self._in_flight

    def _room_for(self, size: int, files: int = 0, held: int = 0) -> bool:
        """Whether one more file of ``size`` may be held, besides ``files`` files of
        ``held`` bytes about to be added."""
        if not self._futures and not files:
            return True  # one file always goes, however big
        return (
            len(self._futures) + files < 2 * self.WINDOW
            and self._held + held + size <= self.WINDOW_BYTES
        )

    def _fill(self) -> None:
        """Keep the parser ``WINDOW`` files ahead, within what this process may hold."""
        while self._pending and (backlog := self._backlog()) < self.WINDOW:
            batch = self._next_batch(self.WINDOW - backlog)
            if not batch:
                return
            try:
                future = self._pool.submit(
                    parse_new_files, [found.file() for found in batch], self._include_tools
                )
            except BrokenExecutor:
                self._parser_lost()
                return
            for index, found in enumerate(batch):
                self._futures.append((future, index, found.size, False))
                self._held += found.size
            self._running.append((future, len(batch)))
            self._in_flight += len(batch)

    def _next_batch(self, most: int) -> list[Found]:
        """The next pending files for one task: at most ``most`` and ``BATCH_FILES``
        files and ``BATCH_BYTES`` (but always one), within what may be held."""
        batch: list[Found] = []
        batch_bytes = 0
        while self._pending and len(batch) < min(most, self.BATCH_FILES):
            size = self._pending[0].size
            if batch and batch_bytes + size > self.BATCH_BYTES:
                break
            if not self._room_for(size, len(batch), batch_bytes):
                break
            batch.append(self._pending.popleft())
            batch_bytes += size
        return batch

    def use_dictionary(self, dictionary: bytes | None) -> None:
        """Compress against ``dictionary`` from now on: the files already sent to the
        worker are compressed without one (their bodies read the same), the rest with it.
        So a cold build trains its dictionary while the parser starts on the first files,
        instead of before it (~0.15-0.25 s on the bench corpora)."""
        if dictionary is None:
            return
        self.dictionary = dictionary
        try:
            self._pool.submit(_set_dictionary, dictionary)  # after the files sent so far
        except BrokenExecutor:
            self._parser_lost()

    def _parse_while_waiting(self, head: Batch) -> None:
        """Parse the first file not yet sent, here, while ``head`` is not done and the
        parser has its window. Whatever parsing one raises is kept in its place and
        raised when its turn comes, as the parser's would be."""
        while not head.done():
            self._fill()
            if not self._pending:
                return
            size = self._pending[0].size
            if size > self.HERE_MAX_BYTES or not self._room_for(size):
                return  # a big file stays the parser's: the writer would be held up by it
            found = self._pending.popleft()
            parsed: Batch = Future()
            parsed.set_result(parse_new_files([found.file()], self._include_tools))
            self._futures.append((parsed, 0, found.size, True))
            self._held += found.size

    def take(self, tf: TranscriptFile) -> Prefetched:
        if self._lost:
            return self._parse_here(tf)
        head, _, _, here = self._futures[0]
        # The parser is ahead when its next result is already there: then it compresses.
        self._encode_texts.value = int(not here and head.done())
        self._parse_while_waiting(head)
        if self._lost:  # found while sending more
            return self._parse_here(tf)
        batch, index, size, _ = self._futures.popleft()
        try:
            results = batch.result()
        except BrokenExecutor:
            self._parser_lost()
            return self._parse_here(tf)
        item = results[index]
        results[index] = None  # the batch's other files may wait longer: not this one
        self._held -= size
        self._fill()
        if isinstance(item, Exception):
            raise item
        assert item is not None and item.tf.path == tf.path, (item, tf.path)
        return item

    def _parser_lost(self) -> None:
        """The parsing process died (the OOM killer, a signal sent to it alone): every
        file from the one being taken on is parsed here, in order. Each file queued
        behind it failed with the pool, and the files never sent were left waiting: the
        build went on, reporting hundreds of files as failed (helper 100)."""
        self._lost = True
        self._futures.clear()
        self._pending.clear()
        self._running.clear()
        self._held = self._in_flight = 0

    def _parse_here(self, tf: TranscriptFile) -> Prefetched:
        (item,) = parse_new_files([tf], self._include_tools)
        if isinstance(item, Exception):
            raise item
        assert item is not None
        return item

    def close(self) -> None:
        for future, _, _, _ in self._futures:
            future.cancel()
        self._pool.shutdown(wait=True, cancel_futures=True)
