"""The one output layer: every command that prints sessions goes through :func:`emit`.

``table`` for people (title, last activity, branch, size, messages, short ID),
``json`` (one array, ``[]`` when empty), ``jsonl`` (one object a line) and ``csv`` for
scripts. JSON is serialized with orjson; times are already ISO strings.

Titles, branches, tags, directories and snippets come from transcripts anyone can
write: every human-facing string passes :func:`sessiondex.render.terminal.neutralize`
here (:func:`clean`, :func:`clean_line`), before our own highlighting is added; JSON
keeps exact strings, with C1 and bidi controls written as ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import time
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import click
import orjson

from sessiondex.cli.streams import narrow_encoding
from sessiondex.render.counts import counted as counted  # re-exported for the commands
from sessiondex.render.counts import sessions_and_files as sessions_and_files
from sessiondex.render.sizes import human_size as human_size  # re-exported for the commands
from sessiondex.render.terminal import json_ascii, json_escape_controls, neutralize

FORMATS = ("table", "json", "jsonl", "csv")

# What ``search`` puts around a match when the table is highlighted: Unicode
# noncharacters (reserved for internal use), so the snippet can be cleaned like any
# transcript text and only then get its colour. A transcript holding these characters
# can at worst toggle the highlight.
HIGHLIGHT = ("\ufdd0", "\ufdd1")
_HIGHLIGHT_ANSI = ("\x1b[1;33m", "\x1b[0m")


def clean(text: str) -> str:
    """Transcript-derived text for a terminal, lines kept (see render/terminal.py)."""
    return neutralize(text)


def clean_line(text: str) -> str:
    """Transcript-derived text for one line of a terminal (a cell, a note, a message)."""
    return neutralize(text, single_line=True)


def _one_format(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """``--json`` with ``--format`` naming another format is a usage error (``--json``
    used to win in silence). Whichever of the two click processes second sees both."""
    from click.core import ParameterSource

    given = ctx.meta.setdefault(f"sessiondex.formats.{id(ctx)}", {})
    if param.name == "fmt":
        if ctx.get_parameter_source("fmt") is ParameterSource.COMMANDLINE:
            given["fmt"] = value
    elif value:
        given["json"] = True
    if given.get("json") and given.get("fmt") not in (None, "json"):
        raise click.UsageError(f"--json and --format {given['fmt']} disagree: give one", ctx)
    return value


def _format_choice(
    choices: tuple[str, ...],
    func: Callable[..., Any],
    *,
    default: str | None = "table",
    help: str = "Output format.",
) -> Callable[..., Any]:
    """The two options, with ``--json`` folded into ``fmt`` before the command runs: a
    command that looked at ``fmt`` alone printed a table for ``--json`` (restore did)."""

    @functools.wraps(func)
    def json_folded(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("as_json"):
            kwargs["fmt"] = "json"
        return func(*args, **kwargs)

    with_json = click.option(
        "--json", "as_json", is_flag=True, callback=_one_format, help="Short for --format json."
    )(json_folded)
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=default,
        show_default=default is not None,
        callback=_one_format,
        help=help,
    )(with_json)


def format_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--format table|json|jsonl|csv`` and ``--json`` (short for ``--format json``),
    for commands that print sessions."""
    return _format_choice(FORMATS, func)


def report_formats(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--format table|json|jsonl|csv`` and ``--json``, for commands whose answer is a
    report about sessions (cleanup, archive): ``json`` is the whole report, ``jsonl`` and
    ``csv`` one row per session it names, for scripts and spreadsheets."""
    return _format_choice(FORMATS, func)


def conversation_formats(
    choices: tuple[str, ...], *, default: str | None, help: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--format`` with the formats a conversation is written in (``show``, ``export``)
    and ``--json``: the shorthand is in every command that has a ``json`` format."""
    return functools.partial(_format_choice, choices, default=default, help=help)


def table_or_json(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--format table|json`` and ``--json``, for commands that print one summary."""
    return _format_choice(("table", "json"), func)


def _in_order(item: dict[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    ordered = {name: item[name] for name in fields if name in item}
    ordered.update((name, value) for name, value in item.items() if name not in ordered)
    return ordered


def relative_time(iso: str | None, now: float | None = None) -> str:
    """``5m ago``, ``3h ago``, ``2d ago``, else the date."""
    if not iso:
        return ""
    try:
        stamp = datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return iso
    delta = (time.time() if now is None else now) - stamp
    if delta < 0:
        return "just now" if delta > -60 else iso[:10]
    for limit, size, unit in (
        (60, 1, "s"),
        (3600, 60, "m"),
        (86400, 3600, "h"),
        (30 * 86400, 86400, "d"),
    ):
        if delta < limit:
            return f"{int(delta // size)}{unit} ago"
    return iso[:10]


def dumps(value: Any, *, indent: bool = False) -> str:
    """JSON text for standard output: exact strings, safe to print (C1 and bidi controls
    escaped), and ASCII when standard output cannot hold every character."""
    option = orjson.OPT_INDENT_2 if indent else 0
    text = json_escape_controls(orjson.dumps(value, option=option)).decode()
    return json_ascii(text) if narrow_encoding(sys.stdout) else text


# Every character below U+0300 takes one column (none is wide, a mark or a format
# character but the soft hyphen, drawn as a hyphen): only the others are looked up.
_NOT_SURELY_ONE = re.compile("[^\x00-\u02ff]")


def display_width(text: str) -> int:
    """Terminal columns: East Asian wide/full-width characters and emoji take two; marks
    that sit on the character before them (Thai vowels and tones, accents) and invisible
    format characters (zero-width space and joiner, tag characters) take none, or a
    row of Thai or one with a zero-width space pushed the next columns right.

    Latin, Greek and the like count by ``len``, the rest once per character each (a
    table of 13,000 text-heavy rows spent ~1.2 s asking unicodedata per character)."""
    if text.isascii():
        return len(text)
    others = _NOT_SURELY_ONE.findall(text)
    return len(text) - len(others) + sum(map(_char_width, others))


@functools.lru_cache(maxsize=1 << 16)
def _char_width(ch: str) -> int:
    if unicodedata.east_asian_width(ch) in "WF":
        return 2
    if ch != "\u00ad" and unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0  # a soft hyphen (Cf) is drawn as a hyphen by terminals
    return 1


def _fit(text: str, width: int, *, from_left: bool = False) -> str:
    """Cut to ``width`` columns (with ``…``) and pad to exactly ``width``; ``from_left``
    keeps the end (a path's last folders say most about it)."""
    if display_width(text) > width:
        out, used = [], 0
        for ch in reversed(text) if from_left else text:
            step = display_width(ch)
            if used + step > width - 1:
                break
            out.append(ch)
            used += step
        text = "…" + "".join(reversed(out)) if from_left else "".join(out) + "…"
    return text + " " * (width - display_width(text))


SESSION_COLUMNS = ("title", "last activity", "branch", "size", "msgs", "id")
PROJECT_COLUMN = "project"
# How far a column may shrink on a narrow terminal: first to its floor, and only when
# the title is down to its own floor too, to its minimum (never below its header).
BRANCH_SHRINK = (16, 6)
PROJECT_SHRINK = (20, 7)
TITLE_FLOOR, TITLE_MIN = 24, 10


def is_archived(obj: dict[str, Any]) -> bool:
    """An archived session (:func:`sessiondex.query.sessions.is_archived`)."""
    from sessiondex.query.sessions import is_archived as archived

    return archived(obj)


def project_label(obj: dict[str, Any]) -> str:
    """Where a session was run: its directory with the home folder as ``~`` (the
    project key stands in when no directory is recorded)."""
    cwd = str(obj.get("cwd") or "")
    if not cwd:
        return str(obj.get("project_key") or "")
    home = os.path.expanduser("~").rstrip("/")
    if home and (cwd == home or cwd.startswith(home + "/")):
        return "~" + cwd[len(home) :]
    return cwd


SHORT_ID = 8


def id_chars(session_ids: Iterable[str]) -> int:
    """How many characters of a session ID a table shows: 8, or as many as tell apart
    the different IDs it lists (an ambiguous prefix's candidates all began alike, and
    the table gave the user nothing to type next). Copies of one ID stay alike."""
    distinct = sorted({sid.lower() for sid in session_ids})
    width = SHORT_ID
    for a, b in zip(distinct, distinct[1:]):
        common = len(os.path.commonprefix([a, b]))
        width = max(width, common + 1)
    return width


def _text(obj: dict[str, Any], key: str) -> str:
    """A text field of a session object, "" when it is not one. The stored objects are
    built by the indexer, but the index is a file anyone can edit: a table shows what it
    can of a row holding a number for a title rather than stopping in a traceback."""
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _session_cells(
    obj: dict[str, Any],
    project: bool,
    agent: str | None = None,
    id_width: int = SHORT_ID,
    in_picker_archive: bool = False,
) -> list[str]:
    title = _text(obj, "title")
    if agent and agent.strip():
        title += f" @{agent.strip()}"  # the picker's rule: an agent-name beside the title
    if in_picker_archive:
        title = "[picker-archived] " + title
    if is_archived(obj):
        title = "[archived] " + title
    if obj.get("forked_from"):
        title = "↳ " + title
    if tag := _text(obj, "tag"):
        title += f"  #{tag}"
    size = obj.get("file_size")
    return [
        title,
        *([project_label(obj)] if project else []),
        relative_time(_text(obj, "last_activity") or None),
        _text(obj, "git_branch"),
        human_size(size if type(size) is int else None),
        str(obj.get("message_count", "")),
        str(obj.get("session_id", ""))[:id_width],
    ]


def render_table(
    rows: Sequence[Sequence[str]],
    headers: Sequence[str],
    flexible: int = 0,
    shrink: Mapping[int, tuple[int, int]] | None = None,
    from_left: Collection[int] = (),
) -> str:
    """Plain aligned columns cut to the terminal's width (:func:`column_widths`):
    column ``flexible`` (the title) keeps the most room, the ``shrink`` columns
    (index → floor, minimum) give theirs up first; columns in ``from_left`` are cut
    from the left (paths)."""
    width = terminal_columns()
    rows = [[clean_line(c) for c in row] for row in rows]
    natural = [max([len(h)] + [display_width(r[i]) for r in rows]) for i, h in enumerate(headers)]
    widths = column_widths(natural, width, flexible, shrink or {})
    lines = ["  ".join(_fit(h, widths[i]) for i, h in enumerate(headers)).rstrip()]
    for row in rows:
        cells = [_fit(c, widths[i], from_left=i in from_left) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def terminal_columns(fallback: int = 120) -> int:
    """``shutil.get_terminal_size((fallback, 24)).columns``, by its rules: ``$COLUMNS``
    when a positive number, else the width of the terminal standard output goes to, else
    ``fallback``. Not shutil itself: importing it imports bz2 and lzma, ~1.5 ms of
    every ``list`` and ``search`` that prints a table (tests/test_output.py checks both
    agree)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no stdout, closed, not a terminal
        return fallback
    return columns or fallback


def column_widths(
    natural: Sequence[int], width: int, title: int, shrink: Mapping[int, tuple[int, int]]
) -> list[int]:
    """Column widths for a table whose columns want ``natural`` widths on a ``width``
    terminal (two spaces between columns). What does not fit is taken, in this order:
    from the ``shrink`` columns down to their floor (widest first), from the title down
    to :data:`TITLE_FLOOR`, from the ``shrink`` columns down to their minimum, from the
    title down to :data:`TITLE_MIN`. Other columns (times, sizes, IDs) keep their width;
    if even that does not fit, the line is longer than the terminal."""
    widths = list(natural)
    over = sum(widths) + 2 * (len(widths) - 1) - width
    floors = {i: limits[0] for i, limits in shrink.items()}
    minimums = {i: limits[1] for i, limits in shrink.items()}
    for limits in (floors, {title: TITLE_FLOOR}, minimums, {title: TITLE_MIN}):
        over = _squeeze(widths, limits, over)
    return widths


def _squeeze(widths: list[int], floors: Mapping[int, int], over: int) -> int:
    """Narrow the columns in ``floors`` (never below their floor), widest first, by up
    to ``over`` columns in all; returns what is still over."""
    while over > 0:
        movable = [i for i in floors if widths[i] > floors[i]]
        if not movable:
            break
        widest = max(movable, key=lambda i: widths[i])
        widths[widest] -= 1
        over -= 1
    return over


def _csv_value(value: Any) -> Any:
    """CSV is read by people too (a terminal, a spreadsheet): strings are cleaned, with
    their line breaks kept (CSV quotes them). Lists, objects and booleans are written as
    JSON writes them (``true``, not Python's ``True``), so one cell reads like the other.
    A leading ``=``, ``+``, ``-`` or ``@`` is kept, not neutralized with a quote: CSV is
    data a script reads back exactly; README says how to open it in a spreadsheet."""
    if isinstance(value, (list, dict, bool)):
        return dumps(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return clean(value)
    return value


def emit(
    objects: Iterable[dict[str, Any]],
    fmt: str,
    *,
    extra_columns: Sequence[str] = (),
    empty_message: str | None = None,
    highlight: bool = False,
    columns: Sequence[tuple[str, Callable[[dict[str, Any]], str]]] = (),
    project: bool = False,
    agents: Mapping[str, str] | None = None,
    fields: Sequence[str] = (),
    widen: Callable[[list[str]], int] | None = None,
    in_picker_archive: Collection[str] = (),
) -> None:
    """Print session objects in ``fmt``. Table mode adds ``extra_columns`` (e.g. snippet)
    on a second, indented line per row; with ``highlight``, the :data:`HIGHLIGHT`
    markers in them become colour, after the text around them is cleaned. ``columns``
    (header, cell function) come after the session columns (e.g. from-pr's PR column).
    ``project`` adds the project column (rows from several projects: two sessions of
    one name in two repositories must be told apart). ``agents`` (file path → agent
    name, ``query.sessions.agent_names``) shows ``@name`` beside those titles.
    ``fields``: the CSV header when there is no row (a CSV reader still gets its
    columns). ``widen`` (``Index.id_width``): the table's ID width, so that an ID typed
    back from it names one session among all the index holds, not only those shown.
    ``in_picker_archive``: file paths of sessions Claude Code's picker archived, marked
    ``[picker-archived]`` (shown only with ``--all-kinds``, or by ``resolve``)."""
    items = list(objects)
    if fields and fmt != "table":
        # One key order whatever built the rows (a PR-URL search adds matched_by before
        # score and snippet, a text search after): a CSV header, and a JSON object's
        # keys, are the same for every answer of a command.
        items = [_in_order(item, fields) for item in items]
    out = sys.stdout
    if fmt == "json":
        out.write(dumps(items, indent=True) + "\n")
    elif fmt == "jsonl":
        for item in items:
            out.write(dumps(item) + "\n")
    elif fmt == "csv":
        import csv
        import io

        if not items and not fields:
            return
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(items[0].keys() if items else fields))
        writer.writeheader()
        for item in items:
            writer.writerow({k: _csv_value(v) for k, v in item.items()})
        out.write(buffer.getvalue())
    else:
        if not items:
            if empty_message:
                click.echo(empty_message, err=True)
            return
        names = agents or {}
        ids = [str(i.get("session_id", "")) for i in items]
        width = max(id_chars(ids), widen(ids)) if widen is not None else id_chars(ids)
        rows = [
            _session_cells(
                i,
                project,
                names.get(str(i.get("file_path"))),
                width,
                str(i.get("file_path")) in in_picker_archive,
            )
            + [cell(i) for _, cell in columns]
            for i in items
        ]
        headers = list(SESSION_COLUMNS)
        shrink = {headers.index("branch") + project: BRANCH_SHRINK}
        if project:
            headers.insert(1, PROJECT_COLUMN)
            shrink[1] = PROJECT_SHRINK
        headers.extend(name for name, _ in columns)
        text = render_table(rows, headers, shrink=shrink, from_left=(1,) if project else ())
        if extra_columns:
            lines = text.split("\n")
            merged = [lines[0]]
            for line, item in zip(lines[1:], items):
                merged.append(line)
                for column in extra_columns:
                    if item.get(column):
                        merged.append("    " + _extra(str(item[column]), highlight))
            text = "\n".join(merged)
        # highlight is colour chosen (a terminal, or color = "always"): click would strip
        # it from a pipe, leaving the match neither coloured nor bracketed
        click.echo(text, color=True if highlight else None)


def _extra(text: str, highlight: bool) -> str:
    line = clean_line(text)
    if highlight:
        line = line.replace(HIGHLIGHT[0], _HIGHLIGHT_ANSI[0]).replace(
            HIGHLIGHT[1], _HIGHLIGHT_ANSI[1]
        )
    return line


def emit_object(value: dict[str, Any], fmt: str, *, text: str | None = None) -> None:
    """A single non-session result (stats, index summary, cleanup plan)."""
    if fmt in ("json", "jsonl"):
        sys.stdout.write(dumps(value, indent=fmt == "json") + "\n")
    elif fmt == "csv":
        import csv

        writer = csv.writer(sys.stdout)
        for key, item in value.items():
            writer.writerow([key, _csv_value(item)])
    else:
        shown = text if text is not None else "\n".join(f"{k}: {v}" for k, v in value.items())
        click.echo(clean(shown))
