"""One picker row as terminal text: pure functions of a session object and a clock.

Everything here is untrusted-string safe: transcript strings (titles, branches, paths,
snippets) pass through :func:`clean` before they reach the screen, and rows are built as
``rich.text.Text`` objects, never as markup, so ``[bold]`` in a title is shown as typed.
The clock is a parameter (``now``) so a screenshot test renders the same relative times
on any day.
"""

from __future__ import annotations

import codecs
import os
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from sessiondex.picker.model import MARKERS
from sessiondex.query.sessions import is_archived
from sessiondex.render.sizes import human_size
from sessiondex.render.terminal import neutralize

# Entrypoints of `claude -p` and the Agent SDK (transcripts.records.PRINT_MODE_ENTRYPOINTS;
# repeated here because a front end reads the session objects, not the layers below).
PRINT_MODE = {"sdk-cli": "-p", "sdk-ts": "sdk", "sdk-py": "sdk"}


@dataclass(frozen=True)
class Glyphs:
    """The few non-ASCII characters the picker draws itself, with ASCII stand-ins for a
    terminal whose encoding cannot show them (a Latin-1 locale)."""

    collapsed: str = "▸"
    expanded: str = "▾"
    fork: str = "↳"
    ellipsis: str = "…"
    dot: str = "·"


UNICODE = Glyphs()
ASCII = Glyphs(collapsed="+", expanded="-", fork=">", ellipsis="...", dot="|")


def glyphs_for(encoding: str | None) -> Glyphs:
    """Unicode glyphs for a UTF-8 (or UTF-16/32) terminal, ASCII ones otherwise."""
    try:
        name = codecs.lookup(encoding or "ascii").name
    except LookupError:
        return ASCII
    return UNICODE if name.startswith("utf") else ASCII


def clean(value: Any, *, ascii_only: bool = False) -> str:
    """A transcript string made safe to draw on one line: control and bidi characters
    made visible the project's one way (``render.terminal.neutralize``: ``^[``,
    ``<U+202E>``), whitespace runs collapsed to one space; with ``ascii_only`` the rest
    folded to ASCII (accents dropped, else ``?``) for a terminal that cannot show it."""
    return "" if value is None else _inline(str(value), ascii_only).strip()


_SPACES = re.compile(r"\s+")


def _inline(text: str, ascii_only: bool) -> str:
    """:func:`clean` without the trim: for pieces of one line (snippet parts)."""
    text = _SPACES.sub(" ", neutralize(text, single_line=True))
    if ascii_only and not text.isascii():
        folded = unicodedata.normalize("NFKD", text)
        text = "".join(
            ch if ch.isascii() else ("" if unicodedata.combining(ch) else "?") for ch in folded
        )
    return text


def relative_time(iso: str | None, now: float) -> str:
    """``5m ago``, ``3h ago``, ``2d ago``, else the date (as ``list`` shows it)."""
    if not iso:
        return ""
    try:
        stamp = datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return clean(iso)[:10]
    delta = now - stamp
    if delta < 60:
        return "just now" if delta > -60 else iso[:10]
    for limit, size, unit in ((3600, 60, "m"), (86400, 3600, "h"), (30 * 86400, 86400, "d")):
        if delta < limit:
            return f"{int(delta // size)}{unit} ago"
    return iso[:10]


def short_path(path: str | None, home: str | None = None) -> str:
    """A directory as a person reads it: ``~/src/shop`` for one under the home dir."""
    if not path:
        return ""
    home = home if home is not None else os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")) :]
    return path


def fit(text: str, width: int, glyphs: Glyphs = UNICODE, *, left: bool = False) -> str:
    """Cut ``text`` to ``width`` terminal cells (wide characters count two), marking the
    cut with an ellipsis at the end, or at the start with ``left`` (paths: the tail is
    what tells them apart)."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return text
    room = width - cell_len(glyphs.ellipsis)
    chars = reversed(text) if left else iter(text)
    kept: list[str] = []
    used = 0
    for ch in chars:
        step = cell_len(ch)
        if used + step > room:
            break
        kept.append(ch)
        used += step
    body = "".join(reversed(kept)) if left else "".join(kept)
    return glyphs.ellipsis + body if left else body + glyphs.ellipsis


@dataclass(frozen=True)
class Columns:
    """Column widths for a terminal width; the title takes what is left."""

    title: int
    activity: int = 10
    branch: int = 16
    size: int = 8
    msgs: int = 5
    project: int = 0

    @classmethod
    def for_width(cls, width: int, show_project: bool) -> Columns:
        branch = 16 if width >= 100 else 12
        project = (24 if width >= 120 else 16) if show_project else 0
        fixed = 2 + 10 + branch + 8 + 5 + project + (6 if show_project else 5)
        return cls(title=max(12, width - fixed), branch=branch, project=project)


def _text(obj: dict[str, Any], key: str) -> str:
    """A text field of a session object, "" when it is not one: a stored object edited
    by hand may hold a number for a title, and a row shows what it can."""
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def markers(obj: dict[str, Any]) -> list[str]:
    """Short labels after the title: ``@agent`` (an ``agent-name`` record, as Claude
    Code's picker shows it), ``#tag``, ``-p``/``sdk``, ``archived``."""
    out = []
    agent = str(obj.get("agent_name") or "").strip()
    if agent:
        out.append("@" + clean(agent))
    if tag := _text(obj, "tag"):
        out.append("#" + clean(tag))
    kind = PRINT_MODE.get(str(obj.get("entrypoint") or ""))
    if kind:
        out.append(kind)
    if is_archived(obj):
        out.append("archived")
    return out


def header_text(columns: Columns) -> Text:
    """Column names laid out exactly as :func:`row_text` lays out the cells."""
    cells = [
        ("activity", columns.activity),
        ("branch", columns.branch),
        ("size", columns.size),
        ("msgs", columns.msgs),
    ]
    if columns.project:
        cells.append(("project", columns.project))
    line = "  " + "title".ljust(columns.title) + "".join(" " + n.ljust(w) for n, w in cells)
    return Text(line, style="bold", no_wrap=True)


def row_text(
    obj: dict[str, Any] | None,
    columns: Columns,
    now: float,
    *,
    depth: int = 0,
    forks: int = 0,
    expanded: bool = False,
    glyphs: Glyphs = UNICODE,
    ascii_only: bool = False,
) -> Text:
    """One row: group marker, title (indented for a fork) with its markers, then last
    activity, branch, size, messages and, for wide scopes, the project directory."""
    lead = (glyphs.expanded if expanded else glyphs.collapsed) + " " if forks else "  "
    if obj is None:
        return Text(lead + glyphs.ellipsis, style="dim", no_wrap=True)
    indent = ("  " * (depth - 1) + glyphs.fork + " ") if depth else ""
    suffix = [clean(m, ascii_only=ascii_only) for m in markers(obj)]
    if forks and not expanded:
        suffix.append(f"(+{forks} fork{'s' if forks != 1 else ''})")
    title_room = columns.title - cell_len(indent)
    title = clean(_text(obj, "title") or str(obj.get("session_id", ""))[:8], ascii_only=ascii_only)
    tail = ("  " + " ".join(suffix)) if suffix else ""
    # The markers stay visible: the title gives up room first, down to 4 cells; then
    # the markers are cut too (a 300-character tag pushed every column off the screen).
    tail = fit(tail, max(0, title_room - 4), glyphs)
    title = fit(title, max(4, title_room - cell_len(tail)), glyphs)
    text = Text(lead + indent, no_wrap=True)
    text.append(title)
    text.append(tail, style=Style(color="cyan"))
    text.append(" " * max(0, columns.title - cell_len(indent) - cell_len(title) - cell_len(tail)))
    size = obj.get("file_size")
    cells = [
        fit(relative_time(_text(obj, "last_activity") or None, now), columns.activity, glyphs),
        fit(clean(_text(obj, "git_branch"), ascii_only=ascii_only), columns.branch, glyphs),
        fit(human_size(size if type(size) is int else None), columns.size, glyphs),
        fit(str(obj.get("message_count") or 0), columns.msgs, glyphs),
    ]
    widths = [columns.activity, columns.branch, columns.size, columns.msgs]
    if columns.project:
        project = clean(short_path(_text(obj, "cwd") or None), ascii_only=ascii_only)
        cells.append(fit(project, columns.project, glyphs, left=True))
        widths.append(columns.project)
    for cell, width in zip(cells, widths):
        text.append(" " + cell + " " * (width - cell_len(cell)))
    return text


MARK_STYLE = Style(bold=True, reverse=True)


def marked_snippet(snippet: str, *, ascii_only: bool = False) -> Text:
    """A search snippet (with :data:`MARKERS` around the matched words) as text with the
    matches highlighted; every piece cleaned before it is styled."""
    start, end = MARKERS
    out = Text()
    for index, piece in enumerate(snippet.split(start)):
        marked, rest = "", piece
        if index:
            marked, _, rest = piece.partition(end)
        if marked:
            out.append(_inline(marked, ascii_only), style=MARK_STYLE)
        if rest:
            out.append(_inline(rest, ascii_only))
    return out
