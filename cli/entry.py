"""The ``sessiondex`` console script (``[project.scripts]`` in pyproject.toml).

It imports the command group with Python's cyclic garbage collector paused. Importing
click and the group makes tens of thousands of objects (functions, classes, dicts) that
live as long as the process, and the collector, run every 700 allocations, walks them
again and again, all of them now and then, and once more while the interpreter shuts
down: ~6 ms of the ~65 ms CPU of ``sessiondex search WORD`` (the bench's corpus),
where Python's own start-up is ~9 ms. They are then frozen (``gc.freeze``: never walked
again) and the collector switched back on, so every command runs with it, as before;
only what start-up built is left out of its walks, and none of that is garbage.

Kept out of ``cli/main.py`` because the pause must start before ``import click``.
"""

from __future__ import annotations

import gc
from typing import Any


def run() -> Any:
    """``sessiondex``: the command group, imported with the collector paused."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        from sessiondex.cli.main import cli
    finally:
        if enabled:  # an embedding program that runs with it off keeps it off
            gc.freeze()
            gc.enable()
    return cli()
