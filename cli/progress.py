"""Progress on stderr for long work: a bar on a terminal, nothing elsewhere."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # the stats module costs a command ~3 ms of start-up
    from sessiondex.indexer.stats import ProgressCallback


def stderr_is_terminal() -> bool:
    """Whether someone watches stderr (tests replace this)."""
    return sys.stderr.isatty()


class ProgressBar:
    """A ``(done, total)`` callback drawing a click progress bar on stderr once the work
    has run ``delay`` seconds (a quick refresh before a reading command draws nothing),
    and closing it when ``done`` reaches ``total`` or on :meth:`close`. The delay is
    each pass's own: one command may refresh several times."""

    def __init__(self, label: str, *, delay: float = 0.0) -> None:
        self._label = label
        self._delay = delay
        self._started: float | None = None
        self._bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self._started is None:
            self._started = now
        if self._bar is None:
            if done >= total:  # a pass over without a bar: the next one's delay is its own
                self._started = None
                return
            if now - self._started < self._delay:
                return
            self._bar = click.progressbar(length=max(total, 1), label=self._label, file=sys.stderr)
            self._bar.__enter__()
        self._bar.length = max(total, 1)
        self._bar.update(done - self._bar.pos)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            bar, self._bar = self._bar, None
            bar.__exit__(None, None, None)
        self._started = None


@contextlib.contextmanager
def progress_bar(label: str) -> Iterator[ProgressCallback | None]:
    """A :class:`ProgressBar` for the duration, or None when stderr is no terminal."""
    if not stderr_is_terminal():
        yield None
        return
    bar = ProgressBar(label)
    try:
        yield bar
    finally:
        bar.close()


class ProgressCount:
    """Progress of work whose total is not known ahead (``archive``: the library plans
    and archives in one call): ``label: <what is done>`` on one line of stderr, once the
    work has run ``delay`` seconds (from its creation: the planning before the first
    item counts), redrawn at most ten times a second, and cleared by :meth:`close` so
    that what is printed next starts on a clean line."""

    def __init__(self, label: str, *, delay: float = 0.0) -> None:
        self._label = label
        self._delay = delay
        self._started = time.monotonic()
        self._drawn_at: float | None = None
        self._width = 0

    def __call__(self, done: str) -> None:
        now = time.monotonic()
        if now - self._started < self._delay:
            return
        if self._drawn_at is not None and now - self._drawn_at < 0.1:
            return
        self._drawn_at = now
        line = f"{self._label}: {done}"
        self._width = max(self._width, len(line))
        click.echo("\r" + line.ljust(self._width), file=sys.stderr, nl=False)

    def close(self) -> None:
        if self._width:
            click.echo("\r" + " " * self._width + "\r", file=sys.stderr, nl=False)
        self._drawn_at = None
        self._width = 0


@contextlib.contextmanager
def progress_count(label: str, *, delay: float = 0.0) -> Iterator[ProgressCount | None]:
    """A :class:`ProgressCount` for the duration, or None when stderr is no terminal."""
    if not stderr_is_terminal():
        yield None
        return
    count = ProgressCount(label, delay=delay)
    try:
        yield count
    finally:
        count.close()
