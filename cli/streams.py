"""Standard output and error in a terminal whose encoding is not UTF-8.

Kept apart from :mod:`.output` so every command can fit its streams at start-up
without importing the output layer (orjson, the renderers)."""

from __future__ import annotations

import codecs
import os
import sys
from typing import Any


def narrow_encoding(stream: Any) -> bool:
    """Whether ``stream`` encodes text in less than Unicode (``LANG=C``, Latin-1, …)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        return not codecs.lookup(encoding).name.startswith("utf")
    except LookupError:
        return True


def fit_streams_to_encoding() -> None:
    """Let standard output and error show what their encoding cannot hold as ``?``
    instead of failing the command with a ``UnicodeEncodeError``: a terminal in
    ``LANG=C`` or Latin-1 still gets every answer. (JSON is kept exact: ``output.dumps``.)"""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and narrow_encoding(stream):
            reconfigure(errors="replace")


class StdoutFailed(Exception):
    """Standard output could not take the answer (a full disk, a closed descriptor).
    Not an ``OSError``: a command's own ``except OSError`` (a file it could not read)
    must not take it for its own failure."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


class WatchedStdout:
    """Standard output that remembers whether anything was written to it: a command
    that met a damaged index is run again after the rebuild only if it printed nothing
    yet (a second answer after the first made ``--json`` output two documents). A write
    that fails, except for a closed pipe (click's quiet exit for ``| head``), raises
    :class:`StdoutFailed`, which the command group turns into one ``Error:`` line.
    Every other attribute is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        # Started with descriptor 1 closed (``>&-``): Python's stdout is None. The null
        # device answers ``isatty()`` and the like; the first write fails, so a command
        # that prints nothing (``watch``) still runs.
        self._closed = stream is None
        self._stream = open(os.devnull, "w") if stream is None else stream  # noqa: SIM115
        self.written = False

    def write(self, text: Any) -> Any:
        if text:
            self.written = True
            if self._closed:
                raise StdoutFailed("standard output is closed")
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutFailed(_reason(exc)) from None

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Flush what the stream still buffers: a full disk often shows only here, and
        at the interpreter's exit it would be a traceback-like "Exception ignored"."""
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutFailed(_reason(exc)) from None

    @property
    def buffer(self) -> Any:
        self.written = True  # bytes may follow (export -o -): count them as output
        if self._closed:
            raise StdoutFailed("standard output is closed")
        return self._stream.buffer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def discard_stdout(stream: Any) -> None:
    """After a failed write, point descriptor 1 at the null device: what the stream
    still buffers is then flushed there at exit instead of failing again."""
    if isinstance(stream, WatchedStdout):
        if stream._closed:
            return
        stream = stream._stream
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
    except (AttributeError, OSError, ValueError):
        return
    try:
        os.dup2(null, fd)
    except OSError:
        pass
    finally:
        os.close(null)
