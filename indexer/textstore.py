"""How message text is stored in the index: the one encoder, the one decoder, and the SQL
function that every connection to the index gets.

Message text is most of a text-heavy index (100 M characters of prose for a 440 MB
history), and FTS5's ``snippet()`` needs it back verbatim. So ``messages.body`` holds it
compressed, and ``messages_fts`` reads it through the view ``message_text``, which
decompresses with the application-defined function :data:`FUNCTION`
(``sessiondex_text(body)``). FTS5 reads its external content for ``snippet()``,
``highlight()``, ``'rebuild'`` and its integrity check, and the triggers on ``messages``
hand it the text to add or remove (docs/index.md#message-text).

A body is one of (the storage class says which, no guessing):

* ``TEXT``: the text itself, for texts under :data:`COMPRESS_MIN_BYTES` of UTF-8 (a
  deflate stream has a floor of a few bytes and saves nothing there) and for texts that
  do not shrink;
* ``BLOB``: a marker byte naming the codec, then its payload. :data:`DEFLATE` is raw
  deflate (zlib without its 6 bytes of header and checksum: SQLite pages are checked
  by SQLite). New markers can be added without touching old rows.

Compression runs where the text is made (``indexer/parse.py``), so on a cold build it
happens in the parsing process, not in the writer.

Without the function a connection can still read every other column, but not
``message_text``, ``snippet()`` on ``messages_fts``, or write ``messages`` (its triggers
call it): :func:`register` is called wherever a connection to the index is made
(``indexer/db.py`` for ours and for one a library caller passes to ``Index``; the web
view's Datasette through its ``prepare_connection`` hook).
"""

from __future__ import annotations

import sqlite3
import zlib
from typing import Any

#: The SQL function that turns a stored body back into its text.
FUNCTION = "sessiondex_text"
#: Texts shorter than this (UTF-8 bytes) are stored as they are.
COMPRESS_MIN_BYTES = 128
#: Marker byte of a raw deflate body.
DEFLATE = 0x01
#: zlib level 1: measured on the text-heavy bench's 104 MB of message text, level 6
#: stores 2.3% fewer bytes for ~25% more compression time (which a cold build pays in
#: its parsing process, the slower of its two).
LEVEL = 1
_WBITS = -15  # raw deflate, 32 KiB window


def encode(text: str) -> str | bytes:
    """The body stored for ``text``: itself (short or incompressible) or a marked,
    compressed BLOB. ``decode(encode(t)) == t`` for every ``t``."""
    raw = text.encode("utf-8")
    if len(raw) < COMPRESS_MIN_BYTES:
        return text
    packer = zlib.compressobj(LEVEL, zlib.DEFLATED, _WBITS)
    packed = packer.compress(raw) + packer.flush()
    if len(packed) + 1 >= len(raw):
        return text
    return bytes((DEFLATE,)) + packed


def decode(body: Any) -> str | None:
    """The text of a stored body (NULL stays NULL).

    A body that does not decode (a damaged row: SQLite's page checks did not catch it)
    reads as the empty string rather than failing the query: the index is disposable
    and ``index --rebuild`` restores it, while an error here would stop every search
    and snippet that meets the row."""
    if body is None or isinstance(body, str):
        return body
    if isinstance(body, (bytes, bytearray, memoryview)):
        data = bytes(body)
        if data and data[0] == DEFLATE:
            try:
                return zlib.decompress(data[1:], _WBITS).decode("utf-8")
            except (zlib.error, UnicodeDecodeError):
                return ""
        return ""
    return str(body)  # a number: never written by us, shown as SQLite would


def register(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the function the index's view and triggers call. Deterministic:
    SQLite may use it in indexes and may skip calls whose input it has seen."""
    conn.create_function(FUNCTION, 1, decode, deterministic=True)
