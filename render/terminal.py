"""What may reach a terminal: transcript text with its control characters made visible.

Titles, branches, directories, tags, prompts and message text come from files anyone
can write (a cloned repository's branch name, a pasted log, a hostile tool output).
Printed raw, an escape sequence in them can set the clipboard (OSC 52), plant a link
(OSC 8), move the cursor and rewrite what is on screen (CSI, also as the one-byte C1
``U+009B``), and a bidi override (``U+202E``) reorders the text around it. So every
human-facing output passes transcript-derived strings through one of these functions
*before* adding our own styling (search highlights, ``show``'s colours), as ``git`` and
``ls`` do with file names:

* C0 controls and DEL become caret notation, as ``cat -v`` and ``less`` show them:
  ESC ``^[``, BEL ``^G``, CR ``^M``, NUL ``^@``, DEL ``^?``;
* C1 controls (``U+0080``–``U+009F``) and the bidi controls (``U+202A``–``U+202E``,
  ``U+2066``–``U+2069``, ``U+200E``, ``U+200F``, ``U+061C``) become ``<U+XXXX>``, as
  ``less`` shows them;
* a byte that was not UTF-8 (a path's, held as U+DC80–U+DCFF) becomes ``\\xNN``;
* ``\\n`` and ``\\t`` are kept where the output has lines (``show``); in one-line places
  (table cells, snippets, notes) they become a space. ``\\r\\n`` is a line end.

Files written for people (``export`` to Markdown or HTML, and ``export -o -`` to a
terminal) are human-facing output too: they get what ``show`` prints
(:func:`neutralize_escapes`; a NUL is also a parse error in HTML). JSON keeps every
string exact; :func:`json_escape_controls` only spells DEL, C1 and bidi controls as
``\\uXXXX`` escapes, which decode to the same string.
"""

from __future__ import annotations

import re
from functools import cache

_BIDI = (
    [0x061C, 0x200E, 0x200F]
    + list(range(0x202A, 0x202F))  # LRE RLE PDF LRO RLO
    + list(range(0x2066, 0x206A))  # LRI RLI FSI PDI
)
_C1 = range(0x80, 0xA0)


def _caret(code: int) -> str:
    return "^?" if code == 0x7F else "^" + chr(code + 0x40)


def _unicode(code: int) -> str:
    return f"<U+{code:04X}>"


_LINES: dict[int, str] = {c: _caret(c) for c in (*range(0x20), 0x7F) if c not in (0x0A, 0x09)}
_LINES.update({c: _unicode(c) for c in (*_C1, *_BIDI)})
# A byte that was not UTF-8 in a path or an argument (Python holds it as U+DC80–U+DCFF,
# "surrogateescape") as ``\xNN``, as ``ls -b`` shows it; printed raw, the stream's
# error handler wrote ``\udcff``.
_LINES.update({c: f"\\x{c - 0xDC00:02x}" for c in range(0xDC80, 0xDD00)})
# U+2028/U+2029 are lines for str.splitlines and some terminals: a space in one line.
_ONE_LINE: dict[int, str] = {**_LINES, 0x0A: " ", 0x09: " ", 0x2028: " ", 0x2029: " "}
# Every character str.splitlines breaks a line at, and tab: spaces on one line.
_LINE_BREAKS = {
    c: " " for c in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)
}


def on_one_line(text: str) -> str:
    """Text already cleaned (or a JSON-bound value) put on one line: every line break
    and tab a space. A header value is one line whatever the transcript recorded (a
    newline in a cwd must not print a header line of its own); :func:`neutralize`'s
    one-line form does the same for what it has not already made visible."""
    return text.replace("\r\n", " ").translate(_LINE_BREAKS)


@cache
def _unsafe() -> re.Pattern[str]:
    """Anything a table above would replace: a quick test before translating (compiled
    on first use: every command imports this module, few print transcript text)."""
    return re.compile(
        "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\udc80-\udcff]"
    )


def neutralize(text: str, *, single_line: bool = False) -> str:
    """``text`` with every control and bidi character made visible (see the module doc).

    ``single_line`` also turns ``\\n`` and ``\\t`` into spaces (a table cell, a note).
    """
    if not _unsafe().search(text):
        return text
    if single_line:
        return text.replace("\r\n", "\n").translate(_ONE_LINE)
    return text.replace("\r\n", "\n").translate(_LINES)


# A one-line box a person types into: controls and line breaks are spaces, bidi controls
# are gone (see :func:`typed_line`), a byte that was not UTF-8 is U+FFFD.
_TYPED: dict[int, str | None] = {c: " " for c in (*range(0x20), 0x7F, *_C1, 0x2028, 0x2029)}
_TYPED.update(dict.fromkeys(_BIDI))
_TYPED.update(dict.fromkeys(range(0xDC80, 0xDD00), "\ufffd"))


def typed_line(text: str) -> str:
    """Text given to a one-line input box (the picker's query, its rename and tag
    prompts) as the box holds it: every control character and line break a space, the
    bidi controls removed. A box draws its text as it is, so made visible there
    (:func:`neutralize`) the ``^[`` and ``<U+202E>`` would become words searched for or
    saved; as spaces they separate words, as the search reads them anyway. Text a
    person gives (``pick --query "$(…)"``, a paste) is not a transcript's, but reaches
    the same terminal."""
    if not _unsafe().search(text):
        return text
    return text.replace("\r\n", " ").translate(_TYPED)


def neutralize_escapes(text: str) -> str:
    """``text`` for files people read (Markdown, HTML): as :func:`neutralize` keeps
    lines, every control but newline and tab made visible (a CRLF is a line end). They
    used to keep the other C0 controls as written, but a BEL or NUL reached the
    terminal of ``export -o -`` and broke HTML, against the rule that no human-facing
    output carries a control character from a transcript."""
    return neutralize(text)


# UTF-8 of DEL, the C1 and the bidi controls. In valid UTF-8 these byte sequences are
# always those characters (0x7F is ASCII; 0xC2, 0xD8 and 0xE2 are lead bytes), so a
# bytes-level substitution is safe; in JSON text they can only occur inside strings.
@cache
def _json_unsafe() -> re.Pattern[bytes]:
    return re.compile(
        rb"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xaa-\xae]|\xe2\x81[\xa6-\xa9]"
    )


def _json_escape(match: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(match.group().decode("utf-8"))


def json_escape_controls(data: bytes) -> bytes:
    """orjson output with DEL, C1 and bidi controls written as ``\\uXXXX`` (orjson
    escapes C0 itself but writes every other character raw): same JSON value, safe on a
    terminal."""
    if data.isascii() and b"\x7f" not in data:
        return data
    return _json_unsafe().sub(_json_escape, data)


@cache
def _non_ascii() -> re.Pattern[str]:
    return re.compile(r"[^\x00-\x7f]+")


def json_ascii(text: str) -> str:
    """JSON text with every non-ASCII character written as ``\\uXXXX`` (a surrogate pair
    beyond the BMP): the same value, for an output that cannot hold the characters (a
    terminal in ``LANG=C`` or Latin-1). JSON text holds them only inside strings."""
    if text.isascii():
        return text
    import json  # rare: only for such a terminal

    return _non_ascii().sub(lambda m: json.dumps(m.group())[1:-1], text)
