"""How message text is stored in the index: the one encoder, the one decoder, the
dictionary they share, and the SQL functions that every connection to the index gets.

Message text is most of a text-heavy index (100 M characters of prose for a 440 MB
history), and FTS5's ``snippet()`` needs it back verbatim. So ``messages.body`` holds it
compressed, and ``messages_fts`` reads it through the view ``message_text``, which
decompresses with the application-defined function :data:`FUNCTION`
(``sessiondex_text(body)``). FTS5 reads its external content for ``snippet()``,
``highlight()``, ``'rebuild'`` and its integrity check, and the triggers on ``messages``
hand it the text to add or remove (docs/index.md#message-text).

A body is one of (the storage class says which, no guessing):

* ``TEXT``: the text itself, for texts under :data:`COMPRESS_MIN_BYTES` of UTF-8 (a
  compressed frame has a floor of a few bytes and saves nothing there) and for texts
  that do not shrink;
* ``BLOB``: a marker byte naming the codec, then its payload. :data:`ZSTD` is a
  Zstandard frame, with no checksum (SQLite checks its pages) and, when the index has
  one, compressed against the index's dictionary (the frame names it by its ID);
  :data:`DEFLATE` (raw deflate, what indexes of schema m007 wrote) is still read. New
  markers can be added without touching old rows.

Why Zstandard with a dictionary: a message is a few KB, too short for any compressor to
learn its vocabulary from the message alone. A dictionary trained on a sample of the
history's own messages (:func:`train`, once per cold build: table ``text_dicts``) gives
it that vocabulary up front. Measured on the text-heavy bench's 104 MB of message text:
raw deflate level 1 stored 51.9 MB in ~2.2 s of CPU; Zstandard level 3 with a 64 KiB
dictionary 39.8 MB in ~0.8-1.0 s. Python 3.14 has Zstandard in its standard library
(``compression.zstd``); before it, ``backports.zstd`` is the same module.

Compression runs where the text is made (``indexer/parse.py``), so on a cold build it
mostly happens in the parsing process, not in the writer.

Without the functions a connection can still read every other column, but not
``message_text``, ``session_search``, ``snippet()``, or write ``messages`` and
``sessions`` (their triggers call them): :func:`register` is called wherever a
connection to the index is made (``indexer/db.py`` for ours and for one a library caller
passes to ``Index``; the web view's Datasette through its ``prepare_connection`` hook).
"""

from __future__ import annotations

import sqlite3
import threading
import zlib
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, TypeVar

from sessiondex.indexer.objects import untitled_title
from sessiondex.indexer.shape import SHOWN_TITLE_SOURCES
from sessiondex.indexer.text import fts_text, without_nul

#: The SQL function that turns a stored body back into its text.
FUNCTION = "sessiondex_text"
#: The SQL function that turns a session's searchable column into its text as indexed
#: (``indexer/text.py`` ``fts_text``): the view ``session_search`` applies it to
#: ``sessions``, so that metadata is stored once (schema m008).
FTS_FUNCTION = "sessiondex_fts"
# The SQL function the session_search view computes ``shown_title`` with.
SHOWN_TITLE_FUNCTION = "sessiondex_shown_title"
#: The SQL function that reads what a user typed to name one PR (a URL in any form
#: ``search`` takes, or ``owner/repo#N``) as its normalized URL, else NULL: the web
#: view's saved query compares ``pr_links.url`` with it, by the CLI's one rule.
PR_URL_FUNCTION = "sessiondex_pr_url"
#: The SQL function that reads a PR number given alone (``12``, ``#12``, ``012``) as
#: ``from-pr`` reads it, else NULL.
PR_NUMBER_FUNCTION = "sessiondex_pr_number"
#: Texts shorter than this (UTF-8 bytes) are stored as they are.
COMPRESS_MIN_BYTES = 128
#: Marker byte of a raw deflate body (read only: schema m007's bodies).
DEFLATE = 0x01
_WBITS = -15  # raw deflate, 32 KiB window
#: Marker byte of a Zstandard frame.
ZSTD = 0x02
#: Zstandard level 3 (its default): on a sample of the text-heavy bench's messages, with
#: a dictionary, 11% fewer bytes than level 1 for ~30% more time (still under half of
#: deflate level 1's).
LEVEL = 3
#: Size of a trained dictionary (Zstandard's usual size for small records; others were
#: not measured).
DICT_BYTES = 64 << 10
#: A sample smaller than this trains no dictionary (Zstandard needs about a hundred
#: times the dictionary's size to learn one worth having; a small history is small).
MIN_SAMPLE_BYTES = 1 << 20
#: A sample is cut at this many bytes of text: more trains no better dictionary.
MAX_SAMPLE_BYTES = 4 << 20


@cache
def _zstd() -> Any:
    """The Zstandard module (``zstandard``), imported on first use: most commands never
    decode a body, and its import would be paid by every start-up.

    ``zstandard`` rather than the standard library's ``compression.zstd`` (3.14; its
    ``backports.zstd`` before): a decompressor there reads one frame and is spent, so
    every body decoded made a new decompression context, ~16 us of a ~22 us decode on
    the text-heavy bench (most of making a search's snippets, and of the FTS rebuild's
    read of every body). ``zstandard`` keeps one context per dictionary: ~5 us. Frames
    are Zstandard's either way; indexes written before read the same."""
    import zstandard

    return zstandard


# zstandard's compressors, decompressors and dictionaries are not thread-safe (they
# compress without the GIL): two threads each building its own index through one shared
# compressor crashed the process. Every thread keeps its own, as each keeps its own
# SQLite connections (an Index belongs to one thread).
_THREAD = threading.local()
T = TypeVar("T")


def _per_thread(kind: str, key: Any, make: Callable[[], T], bound: int) -> T:
    """This thread's ``make()`` for ``key`` among its ``kind``, the ``bound`` most
    recently made kept (a long-running watcher sees a new dictionary at every rebuild
    of its index)."""
    made: dict[Any, Any] | None = getattr(_THREAD, kind, None)
    if made is None:
        made = {}
        setattr(_THREAD, kind, made)
    found = made.get(key)
    if found is None:
        if len(made) >= bound:
            made.pop(next(iter(made)))
        found = made[key] = make()
    return found


def _zstd_dict(content: bytes) -> Any:
    """A dictionary ready to use, this thread's."""
    return _per_thread("dicts", content, lambda: _zstd().ZstdCompressionDict(content), 8)


def dictionary_id(content: bytes) -> int:
    """The ID a trained dictionary carries (and every frame compressed against it)."""
    return int(_zstd_dict(content).dict_id())


def frame_dictionary_id(frame: bytes) -> int:
    """The ID of the dictionary a frame (a body without its marker byte) was
    compressed against; 0 for none."""
    return int(_zstd().get_frame_parameters(frame).dict_id)


class Packer:
    """Compresses texts into bodies, against one dictionary or none. One compressor is
    kept and reused: giving Zstandard a dictionary per text would cost more than the
    compression itself."""

    def __init__(self, dictionary: bytes | None = None) -> None:
        zstd = _zstd()
        zdict = _zstd_dict(dictionary) if dictionary else None
        if zdict is not None:
            zdict.precompute_compress(level=LEVEL)  # digested once, not per text
        self._compressor = zstd.ZstdCompressor(
            level=LEVEL, dict_data=zdict, write_checksum=False, write_content_size=False
        )

    def encode(self, text: str) -> str | bytes:
        """The body stored for ``text``: itself (short or incompressible) or a marked,
        compressed BLOB. ``decode(encode(t)) == t`` for every ``t``."""
        raw = text.encode("utf-8")
        if len(raw) < COMPRESS_MIN_BYTES:
            return text
        packed: bytes = self._compressor.compress(raw)
        if len(packed) + 1 >= len(raw):
            return text
        return bytes((ZSTD,)) + packed


def packer(dictionary: bytes | None = None) -> Packer:
    """The packer for ``dictionary`` (made once per thread and dictionary; the few most
    recent are kept, each holds a compression context)."""
    return _per_thread("packers", dictionary, lambda: Packer(dictionary), 4)


def encode(text: str) -> str | bytes:
    """``text``'s body with no dictionary (what an index without one stores)."""
    return packer(None).encode(text)


def train(texts: Iterable[str]) -> bytes | None:
    """A dictionary trained on these message texts (as indexed), or None when they are
    too few to train one worth having."""
    samples: list[bytes] = []
    total = 0
    for text in texts:
        raw = text.encode("utf-8")
        if len(raw) < COMPRESS_MIN_BYTES:
            continue
        samples.append(raw)
        total += len(raw)
        if total >= MAX_SAMPLE_BYTES:
            break
    if total < MIN_SAMPLE_BYTES:
        return None
    zstd = _zstd()
    try:
        return bytes(zstd.train_dictionary(DICT_BYTES, samples).as_bytes())
    except zstd.ZstdError:
        return None


class Decoder:
    """The SQL function :data:`FUNCTION` of one connection: it finds the dictionaries
    that frames name in that connection's ``text_dicts`` (a dictionary added after the
    connection opened, by another process's cold build, is found too)."""

    def __init__(self, conn: sqlite3.Connection | None) -> None:
        self._conn = conn
        self._dicts: dict[int, Any] = {}
        self._decompressors: dict[int, Any] = {}  # dictionary ID (0: none) → one context

    def __call__(self, body: Any) -> str | None:
        """The text of a stored body (NULL stays NULL).

        A body that does not decode (a damaged row that SQLite's page checks did not
        catch, or a dictionary gone missing) reads as the empty string rather than
        failing the query: the index is disposable and ``index --rebuild`` restores it,
        while an error here would stop every search and snippet that meets the row."""
        if body is None:
            return body
        if isinstance(body, str):
            return without_nul(body)
        if not isinstance(body, (bytes, bytearray, memoryview)):
            return str(body)  # a number: never written by us, shown as SQLite would
        data = bytes(body)
        marker = data[:1]
        try:
            if marker == _ZSTD_MARK:
                frame = data[1:]
                reading = self._decompressor(frame_dictionary_id(frame)).decompressobj()
                text = reading.decompress(frame)
                if not reading.eof:  # a frame cut short: damage, as below
                    return ""
                return without_nul(text.decode("utf-8"))
            if marker == _DEFLATE_MARK:
                return without_nul(zlib.decompress(data[1:], _WBITS).decode("utf-8"))
        except (zlib.error, UnicodeDecodeError, LookupError, sqlite3.Error, _zstd().ZstdError):
            return ""
        return ""

    def _decompressor(self, dict_id: int) -> Any:
        """One decompression context per dictionary, kept for the connection's life."""
        found = self._decompressors.get(dict_id)
        if found is None:
            zdict = self._dictionary(dict_id) if dict_id else None
            found = self._decompressors[dict_id] = _zstd().ZstdDecompressor(dict_data=zdict)
        return found

    def _dictionary(self, dict_id: int) -> Any:
        zdict = self._dicts.get(dict_id)
        if zdict is None:
            if self._conn is None:
                raise LookupError(dict_id)
            row = self._conn.execute(
                "SELECT content FROM text_dicts WHERE zstd_id = ?", [dict_id]
            ).fetchone()
            if row is None:
                raise LookupError(dict_id)
            zdict = self._dicts[dict_id] = _zstd_dict(bytes(row[0]))
        return zdict

    def remember(self, content: bytes) -> None:
        """Know ``content`` without reading the table (the process that trained it)."""
        self._dicts[dictionary_id(content)] = _zstd_dict(content)


_ZSTD_MARK = bytes((ZSTD,))
_DEFLATE_MARK = bytes((DEFLATE,))


def decode(body: Any, dictionary: bytes | None = None) -> str | None:
    """The text of a stored body, outside SQL (tests, tools): ``dictionary`` is the one
    its frame was compressed against, if any."""
    decoder = Decoder(None)
    if dictionary:
        decoder.remember(dictionary)
    return decoder(body)


def current_dictionary(conn: sqlite3.Connection) -> bytes | None:
    """The dictionary new bodies are compressed against: the newest in ``text_dicts``
    (None in an index without one, or of a schema before it)."""
    try:
        row = conn.execute("SELECT content FROM text_dicts ORDER BY id DESC LIMIT 1").fetchone()
    except sqlite3.OperationalError:
        return None
    return bytes(row[0]) if row else None


def store_dictionary(conn: sqlite3.Connection, content: bytes) -> None:
    """Add a trained dictionary; new bodies are compressed against it from now on."""
    conn.execute(
        "INSERT OR IGNORE INTO text_dicts (zstd_id, content) VALUES (?, ?)",
        [dictionary_id(content), content],
    )


def register(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the functions the index's views and triggers call. Deterministic:
    SQLite may use them in indexes and may skip calls whose input it has seen."""
    conn.create_function(FUNCTION, 1, Decoder(conn), deterministic=True)
    conn.create_function(FTS_FUNCTION, 1, _fts_value, deterministic=True)
    conn.create_function(
        SHOWN_TITLE_FUNCTION, len(SHOWN_TITLE_SOURCES), _shown_title_value, deterministic=True
    )
    conn.create_function(PR_URL_FUNCTION, 1, _pr_url_value, deterministic=True)
    conn.create_function(PR_NUMBER_FUNCTION, 1, _pr_number_value, deterministic=True)


def _pr_number_value(value: Any) -> int | None:
    """:data:`PR_NUMBER_FUNCTION`: the PR number ``value`` gives alone, else NULL."""
    from sessiondex.transcripts.pr_urls import parse_pr_number

    return parse_pr_number(value) if isinstance(value, str) else None


def _pr_url_value(value: Any) -> str | None:
    """:data:`PR_URL_FUNCTION`: the normalized URL of the PR ``value`` names, else NULL."""
    from sessiondex.transcripts.pr_urls import parse_pr_ref

    found = parse_pr_ref(value) if isinstance(value, str) else None
    return found.url if found is not None else None


def _shown_title_value(*sources: Any) -> str | None:
    """The ``shown_title`` column as indexed: ``fts_text`` of
    :func:`~sessiondex.indexer.objects.untitled_title` of ``SHOWN_TITLE_SOURCES``."""
    return _fts_value(untitled_title(*sources))


def _fts_value(value: Any) -> str | None:
    """``fts_text`` of a session column (NULL, and anything not text, index as nothing:
    what the table ``session_search`` held before m008), NUL as :func:`without_nul`:
    FTS5's snippet() copies the text between matches as C strings, so everything after
    a NUL up to the next match was dropped (messages too: :class:`Decoder`). The words
    indexed stay the same (a NUL and U+FFFD both separate them), so an index made
    before reads, and removes, the same tokens."""
    return without_nul(fts_text(value)) if isinstance(value, str) else None
