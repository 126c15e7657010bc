"""``sessiondex.picker``: the interactive session picker (``sessiondex pick``).

A Textual front end over :class:`sessiondex.Index` and nothing below it. Textual is an
optional dependency (``pip install 'sessiondex[picker]'``); importing this package does
not import it, so the CLI can say what is missing instead of failing with a traceback.

Example::

    from sessiondex.picker import PickerOptions, run_picker

    chosen = run_picker(db_path, config_dirs, PickerOptions(cwd="/home/me/shop"))
    if chosen is not None:
        print(chosen["resume_command"])
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import Future

    from sessiondex.picker.model import Loaded, PickerOptions
    from sessiondex.picker.rows import Glyphs
    from sessiondex.picker.source import Source

__all__ = ["PickerOptions", "prefetch", "run_picker", "textual_available"]


def textual_available() -> bool:
    """True when the optional ``textual`` dependency can be imported."""
    import importlib.util

    return importlib.util.find_spec("textual") is not None


def run_picker(
    db_path: Path,
    config_dirs: Sequence[Path],
    options: PickerOptions,
    *,
    refresh: bool = True,
    glyphs: Glyphs | None = None,
) -> dict[str, Any] | None:
    """Run the picker on this terminal; the chosen session object, or None if left."""
    from sessiondex.picker.source import Source

    source = Source(db_path, config_dirs, refresh_first=refresh)
    try:
        # Textual first, then the first page: a query running on the index thread while
        # Textual imports shares the GIL with the import and delays both (start-up to
        # first paint 245-282 ms against 230-261 ms with the query after, measured);
        # after it, the query overlaps the app's own start-up, which mostly waits.
        from sessiondex.picker.app import PickerApp
        from sessiondex.picker.rows import UNICODE

        initial = prefetch(source, options)

        app = PickerApp(source, options, glyphs=glyphs or UNICODE, refresh=refresh, initial=initial)
        with _terminal_on_stdout():
            return app.run()
    finally:
        source.close()


def prefetch(source: Source, options: PickerOptions) -> Future[Loaded]:
    """Ask the index for the first screen of rows before the app starts: the query runs
    on the index thread while the UI starts (start-up to first paint is a benchmark
    figure). Called once Textual is imported (see :func:`run_picker`)."""
    from sessiondex.picker.model import filters_for, load

    try:
        height = os.get_terminal_size(2).lines
    except OSError:
        height = 40
    query = options.query.strip()
    filters = filters_for(options)
    return source.first_rows(lambda index: load(index, 1, query, filters, height=height))


@contextlib.contextmanager
def _terminal_on_stdout() -> Iterator[None]:
    """Textual sizes the screen from stdout. In ``eval "$(sessiondex pick)"`` stdout is
    a pipe that must receive only the chosen command, so while the picker runs, fd 1
    is the terminal the picker draws on (stderr) and the pipe is put back after."""
    stdout, stderr = sys.__stdout__, sys.__stderr__
    if stdout is None or stderr is None or stdout.isatty() or not stderr.isatty():
        yield
        return
    stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def __getattr__(name: str) -> Any:
    if name == "PickerOptions":
        from sessiondex.picker.model import PickerOptions

        return PickerOptions
    raise AttributeError(f"module 'sessiondex.picker' has no attribute {name!r}")
