"""Byte counts as people read them, for the renderers and the CLI alike.

One function, in the lowest layer that prints sizes, so a fold note in ``show`` and the
size column of ``list`` never disagree. A module of its own: the CLI imports it on every
command and must not pay for the conversation renderer.
"""

from __future__ import annotations


def human_size(size: int | None) -> str:
    """``512 B``, ``1.5 KB``, ``3.2 MB``, ``1.1 GB`` (binary units); ``""`` for unknown."""
    if size is None:
        return ""
    value = float(size)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{value:.0f} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"
