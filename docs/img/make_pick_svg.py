"""Regenerate ``docs/img/pick.svg``: the picker on the bundled fixtures, exported by
Textual itself (``App.export_screenshot``), with the clock pinned so the relative times
do not change between runs.

    .venv/bin/python docs/img/make_pick_svg.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from sessiondex.index import Index  # noqa: E402
from sessiondex.picker.app import PickerApp  # noqa: E402
from sessiondex.picker.model import PickerOptions  # noqa: E402
from sessiondex.picker.source import Source  # noqa: E402
from tests.builders import copy_fixtures  # noqa: E402
from tests.picker_world import settle  # noqa: E402

NOW = 1_795_348_800.0  # 2026-11-16T12:00:00Z, the day after the newest fixture


async def main() -> None:
    base = Path(tempfile.mkdtemp())
    config = copy_fixtures(base)
    db = base / "index.db"
    with Index(db, [config]) as index:
        index.refresh()
    source = Source(db, [config])
    app = PickerApp(
        source,
        PickerOptions(cwd="/home/dev/shop", scope="all"),
        clock=lambda: NOW,
        live_interval=None,
    )
    try:
        async with app.run_test(size=(110, 32)) as pilot:
            await settle(app, pilot)
            for key in ("tab", *["down"] * 13, "right", "down", "space"):
                await pilot.press(key)
                await settle(app, pilot)
            await pilot.pause(0.3)
            await settle(app, pilot)
            svg = app.export_screenshot(title="sessiondex pick")
    finally:
        source.close()
    (ROOT / "docs" / "img" / "pick.svg").write_text(svg, encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
