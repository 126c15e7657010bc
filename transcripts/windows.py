"""The 64 KiB windows other readers see of a transcript.

Claude Code's retention sweep, its ``/resume`` picker and the official SDK's listing read
a session's first and last 64 KiB only, never the middle. sessiondex reads whole files,
so where its answer must match theirs (the sweep's desktop exemption, whether a title or
tag is still visible to them) it reads the same windows.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from sessiondex.transcripts.discover import open_regular
from sessiondex.transcripts.reader import glued_records

WINDOW = 64 * 1024


def in_head_window(line_end: int) -> bool:
    """Whether a line ending at byte ``line_end`` (its newline aside) is read whole in
    the head window: a line cut by the window's edge does not parse, so the head yields
    nothing from it (the sweep's desktop test, folded at ingest: indexer/derive.py)."""
    return line_end <= WINDOW


def read_windows(path: str | Path, *, tail_overlaps_head: bool) -> tuple[bytes, bytes]:
    """``(head, tail)``: the first and the last :data:`WINDOW` bytes. The SDK's tail
    starts at ``size - WINDOW`` and may overlap the head (``tail_overlaps_head``); the
    sweep's starts no earlier than the head's end. A file of one window is both."""
    with open_regular(path) as stream:
        size = os.fstat(stream.fileno()).st_size
        head = stream.read(WINDOW)
        if size <= WINDOW:
            return head, head
        start = size - WINDOW if tail_overlaps_head else max(WINDOW, size - WINDOW)
        stream.seek(start)
        return head, stream.read(WINDOW)


def _last_value(window: bytes, kind: str, key: str) -> str | None:
    """The ``key`` of the last whole record of type ``kind`` in ``window`` ("" counts:
    an empty tag clears the one before it); None when there is none."""
    needle = f'"{kind}"'.encode()
    for line in reversed(window.split(b"\n")):
        if needle not in line:
            continue
        try:
            records = [orjson.loads(line)]
        except orjson.JSONDecodeError:  # cut by the window's edge, or a record glued on
            records = glued_records(line)
        for record in reversed(records):
            if isinstance(record, dict) and record.get("type") == kind:
                value = record.get(key)
                if isinstance(value, str):
                    return value
    return None


def last_in_tail(path: str | Path, kind: str, key: str) -> str | None:
    """The ``key`` of the last whole ``kind`` record in the last :data:`WINDOW` bytes
    of ``path`` (the tail Claude Code's picker reads first), or None; OSError when it
    cannot be read. The title sidecar's writer reads its name here
    (:func:`~sessiondex.transcripts.write.write_title_sidecar`)."""
    with open_regular(path) as stream:
        size = os.fstat(stream.fileno()).st_size
        stream.seek(max(0, size - WINDOW))
        return _last_value(stream.read(WINDOW), kind, key)


def sdk_title_and_tag(path: str | Path) -> tuple[str | None, str | None]:
    """The custom title and tag the SDK's listing and Claude Code's picker show for the
    transcript at ``path``: the title from the tail, else the head; the tag from the
    tail alone. A rename or tag followed by more than 64 KiB of conversation is gone
    from their view until it is written again (or Claude Code re-appends it)."""
    head, tail = read_windows(path, tail_overlaps_head=True)
    title = _last_value(tail, "custom-title", "customTitle")
    if title is None:
        title = _last_value(head, "custom-title", "customTitle")
    tag = _last_value(tail, "tag", "tag")
    return (title.strip() or None) if title else None, tag or None
