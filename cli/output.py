"""The one output layer: every command that prints sessions goes through :func:`emit`.

``table`` for people (title, last activity, branch, size, messages, short ID),
``json`` (one array, ``[]`` when empty), ``jsonl`` (one object a line) and ``csv`` for
scripts. JSON is serialized with orjson; times are already ISO strings.
"""

from __future__ import annotations

import sys
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

import click
import orjson

from sessiondex.render.sizes import human_size as human_size  # re-exported for the commands

FORMATS = ("table", "json", "jsonl", "csv")


def format_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--format table|json|jsonl|csv`` and ``--json`` (short for ``--format json``)."""
    func = click.option("--json", "as_json", is_flag=True, help="Short for --format json.")(func)
    func = click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default="table",
        show_default=True,
        help="Output format.",
    )(func)
    return func


def chosen_format(fmt: str, as_json: bool) -> str:
    return "json" if as_json else fmt


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
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(value, option=option).decode()


def display_width(text: str) -> int:
    """Terminal columns: East Asian wide/full-width characters and emoji take two."""
    if text.isascii():
        return len(text)
    return sum(
        2 if unicodedata.east_asian_width(ch) in "WF" else 0 if unicodedata.combining(ch) else 1
        for ch in text
    )


def _fit(text: str, width: int) -> str:
    """Cut to ``width`` columns (with ``…``) and pad to exactly ``width``."""
    if display_width(text) > width:
        out, used = [], 0
        for ch in text:
            step = display_width(ch)
            if used + step > width - 1:
                break
            out.append(ch)
            used += step
        text = "".join(out) + "…"
    return text + " " * (width - display_width(text))


SESSION_COLUMNS = ("title", "last activity", "branch", "size", "msgs", "id")


def _session_cells(obj: dict[str, Any]) -> list[str]:
    title = obj.get("title") or ""
    if obj.get("forked_from"):
        title = "↳ " + title
    if obj.get("tag"):
        title += f"  #{obj['tag']}"
    return [
        title,
        relative_time(obj.get("last_activity")),
        obj.get("git_branch") or "",
        human_size(obj.get("file_size")),
        str(obj.get("message_count", "")),
        str(obj.get("session_id", ""))[:8],
    ]


def render_table(rows: Sequence[Sequence[str]], headers: Sequence[str], flexible: int = 0) -> str:
    """Plain aligned columns; column ``flexible`` shrinks to fit the terminal."""
    import shutil

    width = shutil.get_terminal_size((120, 24)).columns
    widths = [max([len(h)] + [display_width(r[i]) for r in rows]) for i, h in enumerate(headers)]
    others = sum(w for i, w in enumerate(widths) if i != flexible) + 2 * (len(headers) - 1)
    widths[flexible] = max(10, min(widths[flexible], width - others))
    lines = ["  ".join(h.ljust(widths[i]) for i, h in enumerate(headers)).rstrip()]
    for row in rows:
        cells = [_fit(c.replace("\n", " "), widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _csv_value(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return dumps(value)
    if value is None:
        return ""
    return value


def emit(
    objects: Iterable[dict[str, Any]],
    fmt: str,
    *,
    extra_columns: Sequence[str] = (),
    empty_message: str | None = None,
) -> None:
    """Print session objects in ``fmt``. Table mode adds ``extra_columns`` (e.g. snippet)
    on a second, indented line per row."""
    items = list(objects)
    out = sys.stdout
    if fmt == "json":
        out.write(dumps(items, indent=True) + "\n")
    elif fmt == "jsonl":
        for item in items:
            out.write(dumps(item) + "\n")
    elif fmt == "csv":
        import csv
        import io

        if not items:
            return
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(items[0].keys()))
        writer.writeheader()
        for item in items:
            writer.writerow({k: _csv_value(v) for k, v in item.items()})
        out.write(buffer.getvalue())
    else:
        if not items:
            if empty_message:
                click.echo(empty_message, err=True)
            return
        rows = [_session_cells(i) for i in items]
        text = render_table(rows, SESSION_COLUMNS)
        if extra_columns:
            lines = text.split("\n")
            merged = [lines[0]]
            for line, item in zip(lines[1:], items):
                merged.append(line)
                for column in extra_columns:
                    if item.get(column):
                        merged.append("    " + str(item[column]).replace("\n", " "))
            text = "\n".join(merged)
        click.echo(text)


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
        click.echo(text if text is not None else "\n".join(f"{k}: {v}" for k, v in value.items()))
