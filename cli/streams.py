"""Standard output and error in a terminal whose encoding is not UTF-8.

Kept apart from :mod:`.output` so every command can fit its streams at start-up
without importing the output layer (orjson, the renderers)."""

from __future__ import annotations

import codecs
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


class WatchedStdout:
    """Standard output that remembers whether anything was written to it: a command
    that met a damaged index is run again after the rebuild only if it printed nothing
    yet (a second answer after the first made ``--json`` output two documents). Every
    other attribute is the wrapped stream's."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.written = False

    def write(self, text: Any) -> Any:
        if text:
            self.written = True
        return self._stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    @property
    def buffer(self) -> Any:
        self.written = True  # bytes may follow (export -o -): count them as output
        return self._stream.buffer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
