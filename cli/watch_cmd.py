"""``watch``: catch up, then keep the index live until SIGINT/SIGTERM."""

from __future__ import annotations

import signal
import threading
import time
import warnings
from typing import TYPE_CHECKING

import click

from sessiondex.cli.app import CliError, app
from sessiondex.cli.output import clean_line, counted, human_size

if TYPE_CHECKING:
    from sessiondex.indexer.watch import BatchReport

# How often the main thread checks that the worker is still alive while it waits for a
# signal; a short wait also keeps signal delivery prompt on every platform.
_WAIT = 0.5


def _batch_line(report: BatchReport) -> str:
    stats = report.stats
    what = (
        counted(len(report.paths), "path")
        if report.reason == "events"
        else counted(stats.files_seen, "file")
    )
    line = (
        f"{time.strftime('%H:%M:%S')} {report.reason}: {what}; {stats.new} new, "
        f"{stats.grown} grown, {stats.rewritten} rewritten, {stats.removed} removed; "
        f"{counted(stats.messages, 'message')}, {human_size(stats.bytes_read)} read, "
        f"{report.seconds * 1000:.0f} ms"
    )
    if stats.errors:
        line += f", {len(stats.errors)} skipped"
    return line


@click.command()
@click.option(
    "--debounce",
    type=click.IntRange(min=0),
    default=100,
    show_default=True,
    metavar="MS",
    help="Apply a transcript's changes once it has been quiet this long (each by its "
    "own changes: a session written beside it does not hold it back).",
)
@click.option(
    "--max-latency",
    type=click.IntRange(min=1),
    default=250,
    show_default=True,
    metavar="MS",
    help="Apply a transcript that keeps changing at the latest this long after its "
    "first change (raise it to spend less on very large live sessions).",
)
@click.option(
    "--rescan",
    type=click.FloatRange(min=0),
    default=300,
    show_default=True,
    metavar="SECONDS",
    help="Full incremental rescan this often, for events the OS dropped; 0: never.",
)
@click.option(
    "--poll",
    is_flag=True,
    help="Poll the file system (every second) instead of native events, e.g. on "
    "network file systems.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log one line per applied batch to stderr.")
@click.option(
    "--no-archive",
    is_flag=True,
    help="Do not archive, at start and once a day, the sessions Claude Code's sweep "
    "deletes within 3 days (see `sessiondex archive`).",
)
def watch(
    debounce: int, max_latency: int, rescan: float, poll: bool, verbose: bool, no_archive: bool
) -> None:
    """Keep the index live from file-system events until interrupted.

    Catches up first (whatever changed while no watcher ran), then applies each burst of
    changes to the transcripts within --max-latency. Only one watch may run per index;
    while it runs, reading commands skip their own refresh. Stop it with Ctrl-C or
    SIGTERM: the last batch is committed first. Transcripts are never modified.
    At start and once a day it also runs `sessiondex archive` (unless --no-archive).

    \b
    Example:
        sessiondex watch -v
        sessiondex --config-dir ~/.claude watch --debounce 50 --rescan 600
    """
    from sessiondex.cli.archive_cmd import watch_rescue
    from sessiondex.indexer.db import IndexFromNewer
    from sessiondex.indexer.lock import AlreadyWatching, WatcherLock
    from sessiondex.indexer.watch import Watcher, WatchError

    state = app()
    # watchdog warns when a watched directory is moved within the tree (it re-registers
    # the same inotify watch); the move is handled, so the warning is only noise.
    warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning)

    def log(message: str) -> None:
        click.echo(clean_line(f"watch: {message}"), err=True)

    lock = WatcherLock(state.database_path, roots=state.roots)
    try:
        lock.acquire()
    except AlreadyWatching as exc:
        raise CliError(f"{exc}; stop it first, or use another --db") from None
    except OSError as exc:
        raise CliError(f"cannot take the watch lock {lock.path}: {exc.strerror or exc}") from None
    stop = threading.Event()
    signals = [signal.SIGINT, signal.SIGTERM]
    # A closed terminal hangs watch up: stop as for SIGTERM (the last batch committed),
    # not die mid-batch; unless it was started to ignore that (nohup), which stays so.
    hangup = getattr(signal, "SIGHUP", None)  # none on Windows
    if hangup is not None and signal.getsignal(hangup) == signal.SIG_DFL:
        signals.append(hangup)
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in signals}
    watcher = Watcher(
        state.database_path,
        state.roots,
        debounce=debounce / 1000,
        max_latency=max_latency / 1000,
        rescan=rescan,
        poll=poll,
        on_batch=(lambda report: log(_batch_line(report))) if verbose else None,
        log=log,
        should_stop=stop.is_set,  # a signal during the catch-up ends it at the next file
    )
    try:
        try:
            watcher.start()
        except WatchError as exc:
            raise CliError(f"cannot start watching: {exc}") from None
        if verbose and not stop.is_set():
            roots = ", ".join(str(r) for r in state.roots)
            log(
                f"watching {roots} with {watcher.observer_kind} events; index "
                f"{state.database_path}; Ctrl-C to stop"
            )
        rescue = None if no_archive else watch_rescue(state.index, log, should_stop=stop.is_set)
        if rescue is not None:
            rescue.poll()  # at start, then once a day
        while not stop.wait(_WAIT) and watcher.running:
            if rescue is not None:
                rescue.poll()
    finally:
        watcher.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        lock.release()
    if isinstance(watcher.failure, IndexFromNewer):  # an upgrade while it ran: restart it
        raise CliError(f"stopped watching: {watcher.failure}")
    if watcher.failure is not None:
        raise CliError(f"watch stopped: {watcher.failure}")
    if verbose:
        log("stopped")
