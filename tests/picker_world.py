"""A small, realistic tree for the picker tests: one repository with two worktrees, a
second project elsewhere, forks, a tag, a PR link, a -p session and a hostile title;
plus a headless driver for :class:`sessiondex.picker.app.PickerApp`."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sessiondex.index import Index
from sessiondex.picker import prefetch
from sessiondex.picker.app import PickerApp
from sessiondex.picker.model import PickerOptions
from sessiondex.picker.rows import UNICODE, Glyphs
from sessiondex.picker.source import Source
from sessiondex.query.scopes import git_current_branch, git_worktrees
from tests.builders import ConfigTree, git

# "Now" for every picker test: relative times in screenshots must not depend on the day.
NOW = 1_793_000_000.0  # 2026-10-27T09:33:20Z
HOUR = 3600
PR_URL = "https://github.com/acme/shop/pull/42"
HOSTILE = "[bold red]boom[/] \x1b[31mred\x1b[0m \u202eevil\u202c title"


class PickerWorld:
    """``shop`` (git, branch main) with worktree ``shop-wt`` (branch feat), and ``api``."""

    def __init__(self, base: Path) -> None:
        self.shop = base / "shop"
        self.shop_wt = base / "shop-wt"
        self.api = base / "api"
        for d in (self.shop, self.api):
            d.mkdir()
        git("init", "-q", "-b", "main", cwd=self.shop)
        git("commit", "-q", "--allow-empty", "-m", "init", cwd=self.shop)
        git("worktree", "add", "-q", "-b", "feat", str(self.shop_wt), cwd=self.shop)
        git_worktrees.cache_clear()
        git_current_branch.cache_clear()
        self.tree = ConfigTree(base / "claude")
        self.db = base / "index.db"
        self.ids: dict[str, str] = {}
        self.paths: dict[str, Path] = {}
        t = NOW - 30 * HOUR
        auth = self.add(
            "auth",
            self.shop,
            "refactor the auth middleware",
            reply="The websocket heartbeat keeps the token alive.",
            title="Auth refactor",
            pr=42,
            mtime=t + 1 * HOUR,
        )
        self.add(
            "fork",
            self.shop,
            "try plan B for auth",
            title="Auth refactor (fork)",
            forked_from=auth,
            mtime=t + 5 * HOUR,
        )
        self.add(
            "coupons",
            self.shop,
            "implement coupon codes",
            ai_title="Implement coupon codes",
            tag="review",
            branch="feature-x",
            mtime=t + 3 * HOUR,
        )
        self.add("hostile", self.shop, "odd title", title=HOSTILE, mtime=t + 2 * HOUR)
        self.add("sdk", self.shop, "scripted run", entrypoint="sdk-cli", mtime=t + 4 * HOUR)
        self.add(
            "billing",
            self.shop_wt,
            "clean up billing",
            ai_title="Billing cleanup",
            branch="feat",
            mtime=t + 6 * HOUR,
        )
        self.add(
            "ledger",
            self.api,
            "reconcile the ledger",
            reply="zephyrquartz appears only here",
            title="Ledger reconciliation",
            mtime=t + 7 * HOUR,
        )
        self.refresh()

    def add(
        self,
        name: str,
        cwd: Path,
        prompt: str,
        *,
        reply: str = "Done.",
        title: str | None = None,
        ai_title: str | None = None,
        tag: str | None = None,
        branch: str = "main",
        entrypoint: str = "cli",
        pr: int | None = None,
        forked_from: str | None = None,
        mtime: float,
    ) -> str:
        start = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(mtime - 60))
        session = self.tree.session(str(cwd), git_branch=branch, entrypoint=entrypoint, start=start)
        extra: dict[str, Any] = {}
        if forked_from:
            extra["forkedFrom"] = {"sessionId": forked_from, "messageUuid": "m-1"}
        session.user(prompt, **extra)
        session.assistant(reply, **extra)
        if title:
            session.meta("custom-title", customTitle=title)
        if ai_title:
            session.meta("ai-title", aiTitle=ai_title)
        if tag:
            session.meta("tag", tag=tag)
        if pr:
            session.pr_link(number=pr, url=PR_URL, repository="acme/shop")
        self.paths[name] = session.write(mtime=mtime)
        self.ids[name] = session.session_id
        return session.session_id

    def refresh(self) -> None:
        with Index(self.db, [self.tree.root]) as index:
            index.refresh()


Driver = Callable[[PickerApp, Any], Awaitable[Any]]


async def settle(app: PickerApp, pilot: Any, rounds: int = 200) -> None:
    """Wait until the latest load is on screen and no worker is busy (bounded)."""
    screen = app.picker
    for _ in range(rounds):
        await pilot.pause()
        busy = any(w.is_running for w in app.workers) or any(w.is_running for w in screen.workers)
        if not busy and screen.painted_generation >= screen.generation:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the picker did not settle")


def drive(
    world: PickerWorld,
    driver: Driver,
    *,
    size: tuple[int, int] = (120, 40),
    options: PickerOptions | None = None,
    live_interval: float | None = None,
    glyphs: Glyphs = UNICODE,
    refresh_first: bool = False,
    refresh: bool = True,
) -> tuple[Any, Any]:
    """Run the picker headless on ``world``; (the app's return value, the driver's)."""

    async def main() -> tuple[Any, Any]:
        source = Source(world.db, [world.tree.root], refresh_first=refresh_first)
        chosen_options = options or PickerOptions(cwd=str(world.shop))
        app = PickerApp(
            source,
            chosen_options,
            clock=lambda: NOW,
            live_interval=live_interval,
            glyphs=glyphs,
            refresh=refresh,
            initial=prefetch(source, chosen_options),  # as run_picker starts it
        )
        try:
            async with app.run_test(size=size) as pilot:
                await settle(app, pilot)
                result = await driver(app, pilot)
        finally:
            source.close()
        return app.return_value, result

    return asyncio.run(main())


def titles(app: PickerApp) -> list[str]:
    """The titles of the visible rows, in order (objects loaded by the settle)."""
    rows = app.picker.session_list.rows
    objects = app.picker.session_list.objects
    return [objects[r.path]["title"] if r.path in objects else "?" for r in rows]
