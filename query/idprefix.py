"""Session ID prefixes: what can be one, and how many characters of an ID a table shows.

The rules :mod:`query.resolve` reads a typed prefix or name by, kept apart from it so
that a table of sessions (``list``, ``search``) sizes its ID column without importing
what resolving needs besides (reading transcripts: ``indexer.derive``,
``transcripts.discover``; ~2 ms of those commands' start-up).
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from sessiondex.indexer.shape import ID_LIKE_NAME_SQL, MIN_ID_PREFIX
from sessiondex.query.filters import roots_sql
from sessiondex.transcripts.tags import clean_name

if TYPE_CHECKING:
    from sqlite_utils import Database

MIN_PREFIX = MIN_ID_PREFIX
_PREFIX_RE = re.compile(r"[0-9a-fA-F][0-9a-fA-F-]{7,35}\Z")


def is_id_prefix(text: str) -> bool:
    """Whether ``text`` can be a session ID prefix (8 to 36 hex digits and dashes,
    starting with a digit): the one rule for ``resolve`` and the web view's URLs."""
    return bool(_PREFIX_RE.match(text))


def name_key(name: str) -> str:
    """A name as typing it again compares: what ``rename`` stores of it, in one Unicode
    composition, case aside, each run of white space one space. Tables and suggestions
    show a name with its runs folded (``display_title``), and the name shown must be
    one that, typed again, resolves."""
    import unicodedata

    return " ".join(unicodedata.normalize("NFC", clean_name(name)).lower().split())


def _wider(width: int, a: str, b: str) -> int:
    """``width``, or one more than ``a`` and ``b`` share when they begin alike over it.
    The slices compared first settle almost every pair without ``commonprefix``: a
    listing of 70,000 IDs has as many pairs, most alike over 4 or 5 characters."""
    if a[:width] != b[:width]:
        return width
    return max(width, len(os.path.commonprefix([a, b])) + 1)


def prefix_width(db: Database, session_ids: Iterable[str], roots: list[Path] | None) -> int:
    """How many characters of a session ID a table shows so that each one typed back
    names its session alone: :data:`MIN_PREFIX`, or more where another session ID an
    ID prefix can resolve to (any kind, hidden ones too: a file with messages of
    these config dirs, or an archived one) begins alike, or another ID listed does, or
    where a session's name is that prefix (a name is tried before an ID prefix).
    Copies of one ID stay alike.

    The IDs of the index are read once, sorted, and each listed ID's neighbours found by
    bisection: no parameter per listed ID (a team store of 70,000 sessions listed whole
    passed PostgreSQL's 65,535), and no sort in SQL. Both reads are of indexes
    (m018), not of the sessions' wide rows: the table read for them, each row with its
    stored object, was 60-200 ms of every table at 20,000 sessions (and ``DISTINCT``
    had SQLite read it in session ID order, a lookup of a wide row each: 165 ms)."""
    listed = sorted({sid.lower() for sid in session_ids if sid})
    width = MIN_PREFIX
    for a, b in zip(listed, listed[1:]):
        width = _wider(width, a, b)
    if not listed:
        return width
    where, params = roots_sql(db, roots)
    resumable = f"s.raw_message_count > 0 AND {where}"
    known = sorted(
        {
            str(sid).lower()
            for (sid,) in db.execute(
                f"SELECT session_id FROM sessions s WHERE {resumable}", params
            ).fetchall()
        }
    )
    for sid in listed:
        before, after = bisect.bisect_left(known, sid), bisect.bisect_right(known, sid)
        for other in (
            known[before - 1] if before else "",
            known[after] if after < len(known) else "",
        ):
            if other:
                width = _wider(width, sid, other)
    # Names that can read as an ID prefix once cleaned as resolve compares them (format
    # characters dropped: any stored length): one word, at least MIN_PREFIX long.
    names = {
        key
        for (text,) in db.execute(
            "SELECT coalesce(custom_title, ai_title) FROM sessions s"
            f" WHERE {ID_LIKE_NAME_SQL} AND {resumable}",
            params,
        ).fetchall()
        for key in (str(text).strip().lower(), name_key(str(text)))
        if is_id_prefix(key)
    }
    longest = max(len(sid) for sid in listed)
    while names and width < longest and any(sid[:width] in names for sid in listed):
        width += 1
    return width
