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
    and closing it when ``done`` reaches ``total`` or on :meth:`close`."""

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
            if done >= total or now - self._started < self._delay:
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
