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

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessiondex.picker.app import PickerOptions
    from sessiondex.picker.rows import Glyphs

__all__ = ["PickerOptions", "run_picker", "textual_available"]


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
    from sessiondex.picker.app import PickerApp
    from sessiondex.picker.rows import UNICODE
    from sessiondex.picker.source import Source

    source = Source(db_path, config_dirs)
    try:
        app = PickerApp(source, options, glyphs=glyphs or UNICODE, refresh=refresh)
        return app.run()
    finally:
        source.close()


def __getattr__(name: str) -> Any:
    if name == "PickerOptions":
        from sessiondex.picker.app import PickerOptions

        return PickerOptions
    raise AttributeError(f"module 'sessiondex.picker' has no attribute {name!r}")
