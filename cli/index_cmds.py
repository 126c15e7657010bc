"""``index`` and ``stats``."""

from __future__ import annotations

from typing import Any

import click

from sessiondex.cli.app import app
from sessiondex.cli.errors import warn
from sessiondex.cli.output import counted, emit_object, human_size, table_or_json
from sessiondex.cli.progress import progress_bar


def _summary_line(stats: dict[str, Any]) -> str:
    # Bad lines by kind in brackets (they add up to the count); entries that are not
    # transcripts at all (a link, a directory named like one) apart, as skipped.
    kinds = stats["problems"].items()
    bad = ", ".join(f"{k} {v}" for k, v in kinds if not k.startswith("skipped-"))
    skipped = ", ".join(f"{k[len('skipped-') :]} {v}" for k, v in kinds if k.startswith("skipped-"))
    line = (
        f"{counted(stats['files_seen'], 'file')} seen: {stats['new']} new, "
        f"{stats['grown']} grown, {stats['rewritten']} rewritten, {stats['removed']} removed; "
        f"{counted(stats['sessions'], 'session')}, {counted(stats['messages'], 'message')}"
        f" indexed, {human_size(stats['bytes_read'])} read, "
        f"{counted(stats['bad_lines'], 'bad line')}"
        f"{' (' + bad + ')' if bad else ''}{'; skipped ' + skipped if skipped else ''},"
        f" {stats['seconds']:.2f}s"
    )
    return line


@click.command()
@click.option("--rebuild", is_flag=True, help="Drop the index and read every transcript again.")
@click.option(
    "--tools/--no-tools",
    "tools",
    default=None,
    help="Also index tool inputs and results (off by default: they are most of "
    "the bytes). The choice is remembered; changing it rebuilds the index.",
)
@table_or_json
def index(rebuild: bool, tools: bool | None, fmt: str, as_json: bool) -> None:
    """Bring the index up to date with the transcripts.

    Reads only what changed since the last run (new files, appended lines, rewritten
    files); --rebuild starts over. Transcripts are never modified.

    \b
    Example:
        sessiondex index
        sessiondex index --tools        # make tool output (logs, gh output) searchable
        sessiondex --config-dir ~/.claude --config-dir /backup/claude index --rebuild
    """
    state = app()
    with progress_bar("Indexing") as progress:
        stats = state.refresh(rebuild=rebuild, progress=progress, include_tools=tools)
    summary = stats.as_dict()
    for path, error in stats.errors:
        warn(f"skipped {path}: {error}")
    emit_object(summary, fmt, text=_summary_line(summary))


@click.command()
@table_or_json
def stats(fmt: str, as_json: bool) -> None:
    """Counts, corpus and index sizes, freshness and watcher status.

    Counts are for the config dirs in use (and archived sessions, each once); the index size is
    the whole file, which may hold other config dirs' rows too.

    \b
    Example:
        sessiondex stats --json
    """
    from sessiondex.cli.cleanup_cmd import describe_summary
    from sessiondex.query.cleanup import cleanup_summary
    from sessiondex.query.stats import index_stats

    state = app()
    db = state.reading_db()
    result = index_stats(db, state.database_path, [str(r) for r in state.roots])
    result["cleanup"] = cleanup_summary(db, state.roots)

    def shown(key: str, value: Any) -> Any:
        if key.endswith("_bytes"):
            return human_size(value)
        return ", ".join(value) if isinstance(value, list) else value

    lines = [
        f"{k.replace('_', ' ')}: {shown(k, v)}"
        for k, v in result.items()
        if not isinstance(v, dict)
    ]
    lines.append(f"cleanup: {describe_summary(result['cleanup'])}")
    emit_object(result, fmt, text="\n".join(lines))
