"""`sessiondex pick`: every key on a fixture tree, headless (Textual's ``run_test``).

The tree (tests/picker_world.py) has a repository with two worktrees and a second
project; the clock is pinned so relative times are the same every day.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.index import Index
from sessiondex.picker.app import PickerApp
from sessiondex.picker.model import Listing, PickerOptions
from sessiondex.picker.rows import ASCII, clean, glyphs_for, marked_snippet, markers
from tests.builders import ConfigTree, append_records
from tests.picker_world import HOSTILE, NOW, PR_URL, PickerWorld, drive, settle, titles

pytest.importorskip("textual")


@pytest.fixture(autouse=True)
def quick_idle_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's pilot guesses the app is idle by sleeping 20 ms slices until one used
    almost no CPU, twice a key and once a pause: most of this file's time. The tests
    wait for the picker's own state instead (``settle``: no worker running, the latest
    load painted), so the guess is polled in 5 ms slices, with the same CPU share."""
    import textual._wait

    monkeypatch.setattr(textual._wait, "SLEEP_GRANULARITY", 0.005)
    monkeypatch.setattr(textual._wait, "SLEEP_IDLE", 0.005 / 20)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> PickerWorld:
    # Under a fixed-looking home so the project column reads ~/… in screenshots.
    return PickerWorld(tmp_path_factory.mktemp("picker"))


def screen_text(app: PickerApp) -> str:
    """What the screen shows, as text: the SVG export's console, recorded as text."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), force_terminal=True, record=True
    )
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


async def press(app: PickerApp, pilot: Any, *keys: str) -> None:
    await pilot.press(*keys)
    await settle(app, pilot)


# ----------------------------------------------------------------- keys
def test_first_screen_lists_this_worktree_with_forks_folded(world: PickerWorld) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        return titles(app), screen_text(app)

    _, (shown, text) = drive(world, run)
    # newest first (a fork group keeps its origin's place, as `list`); the fork folded
    # under its origin; the -p session hidden
    assert shown == ["Implement coupon codes", HOSTILE, "Auth refactor"]
    assert "(+1 fork)" in text and "#review" in text
    assert "3 sessions" in text


def test_moving_choosing_and_leaving(world: PickerWorld) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        moves = []
        for key in ("down", "ctrl+n", "up", "ctrl+p", "pagedown", "pageup"):
            await press(app, pilot, key)
            moves.append(app.picker.session_list.cursor)
        await press(app, pilot, "tab", "j")  # j/k move when the list has the focus
        moves.append(app.picker.session_list.cursor)
        await press(app, pilot, "k")
        moves.append(app.picker.session_list.cursor)
        await press(app, pilot, "enter")
        return moves

    chosen, moves = drive(world, run)
    assert moves == [1, 2, 1, 0, 2, 0, 1, 0]
    assert chosen["session_id"] == world.ids["coupons"]


def test_escape_clears_the_query_then_leaves(world: PickerWorld) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        narrowed = titles(app)  # started with --query coupon: searched once, at start
        assert app.picker.generation == 1
        await press(app, pilot, "escape")
        cleared = (app.picker.query_text, len(titles(app)))
        await press(app, pilot, "escape")
        return narrowed, cleared

    chosen, (narrowed, cleared) = drive(
        world, run, options=PickerOptions(cwd=str(world.shop), query="coupon")
    )
    assert narrowed == ["Implement coupon codes"]
    assert cleared == ("", 3)
    assert chosen is None


TYPED = [  # (query, scope, the sessions it must find; None: whatever Index.search finds)
    ("websocket heartbeat", "worktree", ["auth"]),
    ("auth", "worktree", None),
    ("zephyrquartz", "all", ["ledger"]),
]


def test_typing_narrows_to_what_index_search_finds(world: PickerWorld) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        shown = []
        for query, scope, _ in TYPED:
            if scope == "all" and app.picker.scope != "all":
                await press(app, pilot, "ctrl+a")
            await press(app, pilot, *["space" if ch == " " else ch for ch in query])
            shown.append([r.session_id for r in app.picker.session_list.rows])
            await press(app, pilot, "escape")
        return shown

    _, shown = drive(world, run)
    with Index(world.db, [world.tree.root], refresh=False) as index:
        for (query, scope, expected), got in zip(TYPED, shown):
            found = index.search(query, cwd=str(world.shop), scope=scope, limit=50)
            assert got == [o["session_id"] for o in found], query
            if expected is not None:
                assert got == [world.ids[name] for name in expected], query


def test_each_keystroke_shows_what_index_search_finds_while_typing(world: PickerWorld) -> None:
    """Key by key: one or two letters filter titles by prefix (``typing``), from the
    third the full search; each keystroke's rows are its own query's, never the last's."""
    queries = ["a", "au", "aut", "auth", "aut", "au", "a", "b", "bi", "bil"]
    keys = ["a", "u", "t", "h", "backspace", "backspace", "backspace", "backspace"]
    keys += ["b", "i", "l"]

    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, "ctrl+a")
        shown = []
        for key in keys:
            await press(app, pilot, key)
            if app.picker.query_text:
                shown.append(
                    (app.picker.query_text, [r.session_id for r in app.picker.session_list.rows])
                )
        return shown

    _, shown = drive(world, run)
    assert [q for q, _ in shown] == queries
    with Index(world.db, [world.tree.root], refresh=False) as index:
        for query, got in shown:
            found = index.search(query, cwd=str(world.shop), scope="all", limit=50, typing=True)
            assert got == [o["session_id"] for o in found], query
    by_query = dict(shown)
    # "a": the titles with a word starting with a, newest first (the fork was used last)
    assert by_query["a"] == [world.ids["fork"], world.ids["auth"]]
    # "Billing cleanup", then the hostile title's "[bold red]boom"; the fork's "plan B"
    # is its prompt, not its title
    assert by_query["b"] == [world.ids["billing"], world.ids["hostile"]]
    assert by_query["bil"] == [world.ids["billing"]]


def test_a_keystroke_is_drawn_with_its_rows_unless_the_search_is_slow(
    world: PickerWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repaints wait for the rows a key asks for (one frame for both, not the key's echo
    and then the rows); a search slower than ``HOLD_PAINT_SECONDS`` lets the key show
    first, and the rows follow when they come."""
    import sessiondex.picker.app as picker_app

    delay = {"seconds": 0.0}
    real_load = picker_app.load_rows

    def load_rows(*args: Any, **kwargs: Any) -> Any:
        time.sleep(delay["seconds"])
        return real_load(*args, **kwargs)

    monkeypatch.setattr(picker_app, "load_rows", load_rows)
    held_at_apply: list[int] = []
    real_apply = picker_app.PickerScreen.apply

    def apply(self: Any, loaded: Any, offset: Any) -> None:
        held_at_apply.append(self.app._batch_count)  # noqa: SLF001 - Textual's repaint hold
        real_apply(self, loaded, offset)

    monkeypatch.setattr(picker_app.PickerScreen, "apply", apply)

    async def run(app: PickerApp, pilot: Any) -> Any:
        screen = app.picker
        await press(app, pilot, "ctrl+a")
        monkeypatch.setattr(picker_app, "HOLD_PAINT_SECONDS", 5.0)  # a fast search: held
        held_at_apply.clear()
        await press(app, pilot, "a")
        fast = (list(held_at_apply), app._batch_count, screen._paint_hold)  # noqa: SLF001
        monkeypatch.setattr(picker_app, "HOLD_PAINT_SECONDS", 0.05)
        delay["seconds"] = 0.6  # a slow one: the key is drawn before its rows
        held_at_apply.clear()
        await pilot.press("u")
        await asyncio.sleep(0.3)
        await pilot.pause()
        slow = (
            app._batch_count,  # noqa: SLF001
            held_at_apply == [],  # rows not applied yet
            # the key is on screen: the query box's line reads "au"
            screen_text(app).splitlines()[app.query_one("#query").region.y].strip().endswith("au"),
        )
        await settle(app, pilot)
        return fast, slow, list(held_at_apply), [r.session_id for r in screen.session_list.rows]

    _, (fast, slow, late, rows) = drive(world, run)
    assert fast == ([1], 0, None)
    assert slow == (0, True, True)
    assert late == [0]
    assert rows == [world.ids["fork"], world.ids["auth"]]


def test_pasting_a_pr_url_shows_the_linked_session_first(world: PickerWorld) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        box = app.picker.query_one("#query")
        box.insert_text_at_cursor(PR_URL + "/files")  # a paste lands as one insert
        await settle(app, pilot)
        return app.picker.session_list.rows[0].session_id

    _, first = drive(world, run)
    assert first == world.ids["auth"]


def test_scope_keys(world: PickerWorld) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        seen = {}
        await press(app, pilot, "ctrl+w")
        seen["repo"] = set(titles(app))
        await press(app, pilot, "ctrl+w")
        seen["back"] = set(titles(app))
        await press(app, pilot, "ctrl+a")
        seen["all"] = set(titles(app))
        seen["project column"] = "project" in screen_text(app)
        await press(app, pilot, "ctrl+a", "ctrl+b")
        seen["branch"] = set(titles(app))
        return seen

    _, seen = drive(world, run)
    assert seen["repo"] == {"Auth refactor", "Implement coupon codes", HOSTILE, "Billing cleanup"}
    assert seen["back"] == {"Auth refactor", "Implement coupon codes", HOSTILE}
    assert "Ledger reconciliation" in seen["all"]
    assert seen["project column"]
    # shop is on main: coupon codes (feature-x) is not
    assert seen["branch"] == {"Auth refactor", HOSTILE}


def test_forks_expand_and_collapse_and_the_preview_toggles(world: PickerWorld) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        steps = []
        await press(app, pilot, "tab", "down", "down", "right")  # expands the fork group
        steps.append((titles(app)[2:], app.picker.preview_shown))
        await press(app, pilot, "down", "left")  # on the fork: back to its origin, folded
        steps.append((len(titles(app)), app.picker.session_list.cursor))
        await press(app, pilot, "right", "right")  # expand, then (no folded forks) preview
        steps.append(app.picker.preview_shown)
        await press(app, pilot, "space")
        steps.append(app.picker.preview_shown)
        await press(app, pilot, "space")
        await pilot.pause(0.2)
        await settle(app, pilot)
        steps.append(screen_text(app))
        return steps

    _, steps = drive(world, run)
    assert steps[0] == (["Auth refactor", "Auth refactor (fork)"], False)
    assert steps[1] == (3, 2)
    assert steps[2] is True and steps[3] is False
    preview = steps[4]
    for expected in ("refactor the auth middleware", PR_URL, "websocket heartbeat", "main"):
        assert expected in preview
    assert str(world.shop.name) in preview


def test_preview_marks_the_matching_words(world: PickerWorld) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, *"heartbeat")
        await press(app, pilot, "tab", "space")
        await pilot.pause(0.2)
        await settle(app, pilot)
        return screen_text(app)

    _, text = drive(world, run)
    assert "match" in text and "heartbeat" in text and "\x02" not in text


def test_help_shows_the_keys(world: PickerWorld) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, "question_mark")
        shown = screen_text(app)
        await press(app, pilot, "escape")
        return shown, app.screen is app.picker

    chosen, (shown, closed) = drive(world, run)
    assert "Ctrl+R" in shown and "rename" in shown and "Esc" in shown
    assert closed and chosen is None or closed


def test_rename_writes_a_record_resolve_finds(tmp_path: Path) -> None:
    world = PickerWorld(tmp_path)

    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, "ctrl+r")
        prompt = app.screen.query_one("#prompt")
        prompt.value = ""
        await press(app, pilot, *"Coupons v2", "enter")
        await pilot.pause(0.1)
        await settle(app, pilot)
        renamed = titles(app)
        await press(app, pilot, "ctrl+t", *"keep", "enter")
        await pilot.pause(0.1)
        await settle(app, pilot)
        return renamed, app.picker.session_list.cursor

    _, (renamed, cursor) = drive(world, run)
    assert "Coupons v2" in renamed and cursor == renamed.index("Coupons v2")
    with Index(world.db, [world.tree.root], refresh=False) as index:
        found = index.resolve("coupons v2", cwd=str(world.shop))
    assert found.session["session_id"] == world.ids["coupons"]
    assert found.session["tag"] == "keep"
    lines = world.paths["coupons"].read_text().splitlines()
    assert '"customTitle":"Coupons v2"' in lines[-2] and '"tag":"keep"' in lines[-1]


def test_the_rename_prompt_shows_its_text_and_offers_only_a_real_name(tmp_path: Path) -> None:
    """Textual's own ``Input:focus`` border outranked the prompt's one-row style, so the
    rename and tag prompts showed no text at all; and the prompt was filled with the
    display title, so Ctrl+R, Enter named a session after its cut first prompt. Now the
    typed text shows, and a session without a name gets an empty field with its title
    as the placeholder: Enter on it, or Esc, writes nothing."""
    world = PickerWorld(tmp_path)
    path = world.paths["coupons"]
    before = (path.read_bytes(), path.stat().st_mtime_ns)

    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, "ctrl+r")
        prompt = app.screen.query_one("#prompt")
        offered = (prompt.value, prompt.placeholder, prompt.content_region.height)
        await press(app, pilot, *"Qzx typed")
        shown = screen_text(app)
        await press(app, pilot, "escape")
        await press(app, pilot, "ctrl+r", "enter")
        await pilot.pause(0.1)
        await settle(app, pilot)
        await press(app, pilot, "ctrl+t")
        tag_rows = app.screen.query_one("#prompt").content_region.height
        await press(app, pilot, "escape")
        return offered, shown, tag_rows

    _, (offered, shown, tag_rows) = drive(world, run)
    assert offered == ("", "Implement coupon codes", 1)
    assert "Qzx typed" in shown
    assert tag_rows == 1
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_rename_to_nothing_visible_or_to_the_same_name_writes_nothing(tmp_path: Path) -> None:
    world = PickerWorld(tmp_path)
    path = world.paths["coupons"]
    before = (path.read_bytes(), path.stat().st_mtime_ns)

    async def run(app: PickerApp, pilot: Any) -> Any:
        notes: list[str] = []
        app.notify = lambda message, **_: notes.append(str(message))  # type: ignore[method-assign]

        async def rename(name: str | None) -> tuple[bytes, int]:
            await press(app, pilot, "ctrl+r")
            if name is not None:  # None: keep what the prompt holds, the current name
                app.screen.query_one("#prompt").value = name
            await press(app, pilot, "enter")
            await pilot.pause(0.1)
            await settle(app, pilot)
            return path.read_bytes(), path.stat().st_mtime_ns

        refused = await rename("   \u200b \u202e")
        renamed = await rename("Coupons v2")
        await rename(None)
        return notes, refused, renamed

    _, (notes, refused, renamed) = drive(world, run)
    assert refused == before  # nothing visible: refused, as the CLI refuses it
    assert b'"customTitle":"Coupons v2"' in renamed[0].splitlines()[-1]
    assert (path.read_bytes(), path.stat().st_mtime_ns) == renamed  # the same name again
    assert any("empty" in note for note in notes) and notes[-1] == "nothing changed"


# Text a person gives a box: an escape sequence (an OSC that retitles the terminal), a
# bell, a tab and a bidi override, as `pick --query "$(…)"` or a paste can bring them.
TYPED_HOSTILE = "q\x1b]0;pwned\x07\tx \u202eevil\u202c"
TYPED_SHOWN = "q ]0;pwned  x evil"


@pytest.mark.parametrize("way", ["--query", "paste in the query box", "paste in the prompt"])
def test_a_box_shows_typed_text_without_its_control_characters(
    world: PickerWorld, way: str
) -> None:
    """The query box and the rename/tag prompts drew what they were given as it was: an
    escape sequence in ``pick --query`` (or pasted) reached the terminal raw, where it
    can retitle the window, move the cursor or reorder the line (a bidi override). A
    box now holds one line of visible text: a control character is a space, a bidi
    control is dropped, so what it shows is what is searched for or saved."""
    from textual import events

    async def run(app: PickerApp, pilot: Any) -> Any:
        box = app.picker.query_one("#query")
        if way == "paste in the query box":
            box.post_message(events.Paste(TYPED_HOSTILE))
        elif way == "paste in the prompt":
            await press(app, pilot, "ctrl+r")
            box = app.screen.query_one("#prompt")
            box.value = ""
            box.post_message(events.Paste(TYPED_HOSTILE))
        await pilot.pause(0.05)
        await settle(app, pilot)
        shown = screen_text(app)
        return box.value, app.picker.query_text, shown

    options = PickerOptions(cwd=str(world.shop), query=TYPED_HOSTILE if way == "--query" else "")
    _, (value, query, shown) = drive(world, run, options=options)
    assert value == TYPED_SHOWN
    if way != "paste in the prompt":
        assert query == TYPED_SHOWN  # what is searched for is what the box shows
    assert TYPED_SHOWN in shown
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]", shown)


def test_enter_on_a_session_deleted_since_it_was_listed_says_so(tmp_path: Path) -> None:
    """A transcript deleted while its row was on screen (cleanup, another terminal,
    Claude Code's own sweep; before the next live check) was still chosen: ``pick``
    exited 0 with a resume command ``claude`` answers "No conversation found" to. Enter
    now says the transcript is gone and stays; the next choice works."""
    world = PickerWorld(tmp_path)

    async def run(app: PickerApp, pilot: Any) -> Any:
        notes: list[str] = []
        app.notify = lambda message, **_: notes.append(str(message))  # type: ignore[method-assign]
        first = app.picker.session_list.rows[0]
        Path(first.path).unlink()
        await press(app, pilot, "enter")
        stayed = app.is_running
        await press(app, pilot, "down", "enter")
        return first.session_id, stayed, notes

    chosen, (deleted, stayed, notes) = drive(world, run)
    assert stayed and any("deleted" in note for note in notes), notes
    assert chosen is not None and chosen["session_id"] != deleted


@pytest.mark.parametrize("width", [20, 30, 39])
def test_a_prompt_on_a_narrow_terminal_fits_it_and_shows_what_is_typed(
    world: PickerWorld, width: int
) -> None:
    """The rename and tag prompts were at least 40 columns wide: on a narrower terminal
    their right side was off the screen, and so was the end of a name as it was typed
    (the box scrolled inside its 36 columns, of which the screen showed a few). A
    prompt now takes the terminal's width when 40 columns do not fit."""

    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, "ctrl+r")
        box = app.screen.query_one("#prompt")
        await press(app, pilot, *"renamedxyz")
        region = app.screen.query_one("TextPrompt > Vertical").region
        shown = screen_text(app)
        await press(app, pilot, "escape")
        return box.value, region.right, shown

    _, (value, right, shown) = drive(world, run, size=(width, 12))
    assert value == "renamedxyz"
    assert right <= width
    assert "renamedxyz" in shown


def test_a_rename_on_a_read_only_index_says_which_index_and_why(tmp_path: Path) -> None:
    """Ctrl+R and Ctrl+T on an index in a folder that cannot be written notified
    SQLite's bare "unable to open database file"; the CLI's line names the index and
    says it cannot be written (indexer/faults.py describe), and so does the picker."""
    import shutil

    from tests.test_reliability_faults import read_only

    world = PickerWorld(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.move(str(world.db), cache / "index.db")
    world.db = cache / "index.db"
    before = world.paths["coupons"].read_bytes()

    async def run(app: PickerApp, pilot: Any) -> Any:
        notes: list[str] = []
        app.notify = lambda message, **_: notes.append(str(message))  # type: ignore[method-assign]
        for key, text in (("ctrl+r", "newname"), ("ctrl+t", "tg")):
            await press(app, pilot, key)
            await press(app, pilot, *text, "enter")
            for _ in range(100):
                if len(notes) == (1 if key == "ctrl+r" else 2):
                    break
                await pilot.pause(0.02)
        return notes

    with read_only(cache):
        _, notes = drive(world, run)
    assert len(notes) == 2, notes
    for note in notes:
        assert f"cannot write the index at {world.db}" in note, note
    assert world.paths["coupons"].read_bytes() == before


@pytest.mark.parametrize("refresh", [True, False], ids=["refreshing", "no-refresh"])
def test_a_rename_the_index_could_not_follow_is_a_note_and_shows_once_caught_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refresh: bool
) -> None:
    """Ctrl+R whose record landed but whose index update failed (a full disk for the
    index alone, IndexNotUpdated) was notified as an error, as if nothing was renamed,
    and a picker opened with ``--no-refresh`` never showed the new name, the index
    being left behind until some other command refreshed it. Now it is a warning that
    says what was done, and the next live round brings that session's row up to date
    (``Index.sync_session``, refresh or not) once the index takes writes again."""
    from tests.test_mutations import IndexFullAfterTheWrite

    world = PickerWorld(tmp_path)

    async def run(app: PickerApp, pilot: Any) -> Any:
        notes: list[tuple[str, str]] = []
        app.notify = lambda message, **k: notes.append((k.get("severity"), str(message)))  # type: ignore[method-assign]
        full = pytest.MonkeyPatch()
        IndexFullAfterTheWrite(full)
        try:
            await press(app, pilot, "ctrl+r")
            app.screen.query_one("#prompt").value = ""
            await press(app, pilot, *"Zed", "enter")
            for _ in range(100):
                if notes:
                    break
                await pilot.pause(0.02)
        finally:
            full.undo()  # the disk has room again
        for _ in range(200):
            if "Zed" in titles(app):
                break
            await pilot.pause(0.02)
        await settle(app, pilot)
        return notes, titles(app)

    _, (notes, shown) = drive(world, run, live_interval=0.05, refresh=refresh)
    assert [severity for severity, _ in notes] == ["warning"], notes
    assert notes[0][1].startswith(f"renamed {world.ids['coupons']} to 'Zed'; "), notes
    assert notes[0][1].endswith("it will catch up on the next refresh"), notes
    assert shown[0] == "Zed", shown


def test_drawn_rows_follow_their_sessions_across_loads(tmp_path: Path) -> None:
    """Rows drawn for one load are reused by the next only when they show the same:
    a rename or a tag redraws the row; a search that keeps a session keeps its row."""
    world = PickerWorld(tmp_path)

    def row_line(app: PickerApp, title: str) -> str:
        return next(line for line in screen_text(app).splitlines() if title in line)

    async def run(app: PickerApp, pilot: Any) -> Any:
        seen = [row_line(app, "Implement coupon codes")]
        await press(app, pilot, *"coupon")  # a search that keeps the session
        seen.append(row_line(app, "Implement coupon codes"))
        await press(app, pilot, "tab", "ctrl+t", *"hot", "enter")
        await pilot.pause(0.1)
        await settle(app, pilot)
        seen.append(row_line(app, "Implement coupon codes"))
        await press(app, pilot, "ctrl+r")
        app.screen.query_one("#prompt").value = ""
        await press(app, pilot, *"Coupons v2", "enter")
        await pilot.pause(0.1)
        await settle(app, pilot)
        return seen, screen_text(app)

    _, (seen, text) = drive(world, run)
    assert "#review" in seen[0] and seen[1] == seen[0]
    assert "#hot" in seen[2] and "#review" not in seen[2]
    assert "Coupons v2" in text and "Implement coupon codes" not in text


def auth_prompt(world: PickerWorld, content: str, n: int) -> dict[str, Any]:
    """A new prompt in the "auth" session, a minute before the pinned clock's now."""
    return {
        "parentUuid": None,
        "isSidechain": False,
        "type": "user",
        "message": {"role": "user", "content": content},
        "uuid": f"7e57a11c-0000-4000-8000-{n:012d}",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(NOW - 60)),
        "sessionId": world.ids["auth"],
        "cwd": str(world.shop),
    }


def test_the_first_rows_come_from_an_index_brought_up_to_date(tmp_path: Path) -> None:
    """The session just used is the one whose transcript changed since the last refresh.
    The picker opened on the index as it was and moved that session to the top a moment
    later, the highlight staying on the old first row: Enter resumed the wrong session.
    Now the first rows wait for the same quick refresh every reading command runs."""
    world = PickerWorld(tmp_path)
    append_records(
        world.paths["auth"], [auth_prompt(world, "back to the auth work", 2)], mtime=NOW - 60
    )

    async def run(app: PickerApp, pilot: Any) -> Any:
        first = app.picker.session_list.current
        await press(app, pilot, "enter")
        return first.path if first else None

    chosen, first = drive(world, run, refresh_first=True)
    assert first == str(world.paths["auth"])
    assert chosen is not None and chosen["session_id"] == world.ids["auth"]


@pytest.mark.parametrize("watching", [False, True])
def test_live_update_keeps_the_highlighted_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watching: bool
) -> None:
    """Without a watcher the picker refreshes the index itself; with one (simulated: the
    test indexes the change as `watch` would) it notices the database changed."""
    world = PickerWorld(tmp_path)
    if watching:
        monkeypatch.setattr(Index, "watcher_alive", lambda self: True)

    async def run(app: PickerApp, pilot: Any) -> Any:
        before = app.picker.session_list.current  # "Implement coupon codes", first row
        # another session gets a new prompt and a new name elsewhere: it becomes the
        # newest, and the highlighted one moves down a row
        append_records(
            world.paths["auth"],
            [
                auth_prompt(world, "one more thing", 1),
                {
                    "type": "custom-title",
                    "customTitle": "Auth, renamed elsewhere",
                    "sessionId": world.ids["auth"],
                },
            ],
            mtime=NOW - 60,
        )
        if watching:
            world.refresh()
        for _ in range(250):
            await pilot.pause(0.02)
            if "Auth, renamed elsewhere" in titles(app):
                break
        await settle(app, pilot)
        return before, app.picker.session_list.current, titles(app)

    _, (before, after, shown) = drive(world, run, live_interval=0.05)
    assert shown[0] == "Auth, renamed elsewhere"
    assert before is not None and after is not None and after.path == before.path
    assert shown.index("Implement coupon codes") == 1


# ----------------------------------------------------------------- screenshots
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_first_screen_snapshot(world: PickerWorld, size: tuple[int, int]) -> None:
    """The first screen, as text, equals the stored one (SESSIONDEX_UPDATE_SNAPSHOTS=1
    rewrites it); the pinned clock makes the relative times the same every day."""

    async def run(app: PickerApp, pilot: Any) -> Any:
        return screen_text(app), app.export_screenshot()

    _, (text, svg) = drive(world, run, size=size)
    golden = SNAPSHOTS / f"pick-{size[0]}x{size[1]}.txt"
    # File sizes hold the tmp path (every record has the cwd): the one unstable column.
    stable = re.sub(r"\d+\.\d KB", "#.# KB", text)
    if os.environ.get("SESSIONDEX_UPDATE_SNAPSHOTS"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(stable, encoding="utf-8")
    assert stable == golden.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) == size[1] and all(len(line) <= size[0] for line in lines)
    assert lines[0].startswith(" sessiondex pick · ") and lines[0].rstrip().endswith("? keys")
    assert lines[2].split() == ["title", "activity", "branch", "size", "msgs"]
    auth = next(line for line in lines if "Auth refactor" in line)
    assert "(+1 fork)" in auth and "1d ago" in auth and "main" in auth
    # untrusted text: no escape character or bidi override reaches the screen, and
    # markup is shown as typed, not interpreted
    assert "\x1b" not in text and "\u202e" not in text
    assert "[bold red]boom[/]" in text
    assert "Auth&#160;refactor" in svg


def test_a_latin1_terminal_without_colour(
    world: PickerWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NO_COLOR and a non-UTF-8 locale: ASCII glyphs and text, and the highlighted row
    still stands out (reverse video, not a colour)."""
    assert glyphs_for("ISO-8859-1") is ASCII and glyphs_for("utf-8") is not ASCII
    monkeypatch.setenv("NO_COLOR", "1")

    async def run(app: PickerApp, pilot: Any) -> Any:
        first = app.picker.session_list.render_line(0)
        return app.no_color, screen_text(app), [seg.style for seg in first if seg.text.strip()]

    _, (no_color, text, styles) = drive(world, run, size=(80, 24), glyphs=ASCII)
    body = "\n".join(text.splitlines()[2:-1])
    assert no_color and body.isascii(), [ch for ch in body if not ch.isascii()]
    assert styles and all(style is not None and style.reverse for style in styles)


# ----------------------------------------------------------------- pure parts
@pytest.mark.parametrize(
    "raw, expected",
    [
        ("a\nb\tc  d", "a b c d"),
        ("\x1b[31mred\x1b[0m", "^[[31mred^[[0m"),  # visible, as `list` shows it
        ("left\u202eright", "left<U+202E>right"),
        ("café ✓", "café ✓"),
        (None, ""),
    ],
)
def test_clean(raw: Any, expected: str) -> None:
    assert clean(raw) == expected


def test_clean_ascii_only_folds_accents() -> None:
    assert clean("café 日本", ascii_only=True) == "cafe ??"


@pytest.mark.parametrize(
    "snippet, plain, marked",
    [
        (
            "…the \x02websocket\x03 \x02heartbeat\x03 keeps…",
            "…the websocket heartbeat keeps…",
            ["websocket", "heartbeat"],
        ),
        ("see [docs] about \x02auth\x03", "see [docs] about auth", ["auth"]),
        ("\x02x\x1b]52\x03 y\nz", "x^[]52 y z", ["x^[]52"]),
        ("no marks", "no marks", []),
    ],
)
def test_marked_snippet(snippet: str, plain: str, marked: list[str]) -> None:
    text = marked_snippet(snippet)
    assert text.plain == plain
    assert [text.plain[s.start : s.end] for s in text.spans] == marked


@pytest.mark.parametrize(
    "fields, expected",
    [
        ({"tag": "review"}, ["#review"]),
        ({"entrypoint": "sdk-cli"}, ["-p"]),
        ({"entrypoint": "sdk-py", "tag": "x\u202ey"}, ["#x<U+202E>y", "sdk"]),
        ({"resume_command": None, "file_path": "/a/-k/s.tar.gz"}, ["archived"]),
        ({"resume_command": None, "file_path": None}, []),  # a store session claude cannot resume
        ({"entrypoint": "cli"}, []),
        ({"agent_name": "reviewer", "tag": "t"}, ["@reviewer", "#t"]),  # semantics 2
        ({"agent_name": None}, []),
        ({"agent_name": "   "}, []),  # nothing visible: no dangling "@"
    ],
)
def test_row_markers(fields: dict[str, Any], expected: list[str]) -> None:
    obj = {"session_id": "s", "resume_command": "claude --resume s", **fields}
    assert markers(obj) == expected


def test_listing_groups_forks_under_their_origin() -> None:
    order = [
        {"file_path": "a", "session_id": "A", "forked_from_session": None},
        {"file_path": "a1", "session_id": "A1", "forked_from_session": "A"},
        {"file_path": "a11", "session_id": "A11", "forked_from_session": "A1"},
        {"file_path": "b", "session_id": "B", "forked_from_session": "gone"},
    ]
    listing = Listing(order)
    assert [r.session_id for r in listing.rows(set())] == ["A", "B"]
    assert [(r.session_id, r.depth) for r in listing.rows({"A"})] == [
        ("A", 0),
        ("A1", 1),
        ("B", 0),
    ]
    assert [r.depth for r in listing.rows({"A", "A1"})] == [0, 1, 2, 0]
    cycle = [
        {"file_path": "x", "session_id": "X", "forked_from_session": "Y"},
        {"file_path": "y", "session_id": "Y", "forked_from_session": "X"},
    ]
    assert len(Listing(cycle).rows(set())) >= 1


# ----------------------------------------------------------------- the command
def test_pick_without_a_terminal_refuses_in_one_line(world: PickerWorld) -> None:
    result = CliRunner().invoke(cli, ["--db", str(world.db), "pick"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "sessiondex list" in lines[0] and "terminal" in lines[0]


def test_resume_without_arg_nor_terminal_says_to_give_arg(world: PickerWorld) -> None:
    """Helper h508: ``sessiondex resume`` in a script said "pick needs a terminal", a
    command the user never ran: the line says resume needs ARG there."""
    base = ["--db", str(world.db), "--config-dir", str(world.tree.root)]
    result = CliRunner().invoke(cli, [*base, "resume"])
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("Error: resume needs ARG without a terminal"), line
    assert "sessiondex list" in line and "pick needs" not in line, line


@pytest.mark.parametrize("flags, field", [([], "resume_command"), (["--print-id"], "session_id")])
def test_pick_prints_the_choice_of_another_project(
    world: PickerWorld, monkeypatch: pytest.MonkeyPatch, flags: list[str], field: str
) -> None:
    """Choosing a session of another project prints the `cd … && claude --resume` line
    `resume --dry-run` prints, or its ID alone."""
    result = _pick_cli(world, monkeypatch, ["pick", "--cwd", str(world.shop), *flags])
    assert result.exit_code == 0, result.output
    with Index(world.db, [world.tree.root], refresh=False) as index:
        ledger = index.resolve(str(world.paths["ledger"])).session
    assert result.output.strip() == ledger[field]
    if field == "resume_command":
        base = ["--db", str(world.db), "--config-dir", str(world.tree.root)]
        dry = CliRunner().invoke(cli, [*base, "resume", "--dry-run", ledger["session_id"]])
        assert result.output == dry.output and result.output.startswith(f"cd {world.api} && ")


def test_leaving_the_picker_exits_1(world: PickerWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    import sessiondex.cli.pick_cmd as pick_cmd
    import sessiondex.picker as picker

    monkeypatch.setattr(pick_cmd, "has_terminal", lambda: True)
    monkeypatch.setattr(picker, "run_picker", lambda *a, **k: None)
    base = ["--db", str(world.db), "--config-dir", str(world.tree.root)]
    result = CliRunner().invoke(cli, [*base, "pick"])
    assert result.exit_code == 1 and result.output == ""


def test_choosing_in_the_app_returns_a_session_of_another_project(world: PickerWorld) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, *"zephyrquartz")
        await press(app, pilot, "ctrl+a", "enter")
        return None

    chosen, _ = drive(world, run)
    assert chosen["session_id"] == world.ids["ledger"]
    config = f"CLAUDE_CONFIG_DIR={world.tree.root}"  # the tree is not ~/.claude
    assert (
        chosen["resume_command"]
        == f"cd {world.api} && {config} claude --resume {world.ids['ledger']}"
    )


def test_a_stale_search_is_interrupted(world: PickerWorld) -> None:
    """A new keystroke stops the query of the previous one instead of waiting for it."""
    import threading

    from sessiondex.picker.source import Interrupted, Source

    started = threading.Event()

    def endless(index: Index) -> Any:
        started.set()
        db = index.reader()
        return db.execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1e10)"
            " SELECT count(*) FROM c"
        ).fetchone()

    source = Source(world.db, [world.tree.root])
    try:
        future = source.submit(endless, interruptible=True)
        assert started.wait(10)
        time.sleep(0.05)
        source.interrupt()
        with pytest.raises(Interrupted):
            future.result(timeout=10)
        # the thread is free for the next query
        assert source.submit(lambda index: len(index.list_order(scope="all"))).result(10) == 6
    finally:
        source.close()


def _pick_cli(
    world: PickerWorld, monkeypatch: pytest.MonkeyPatch, args: list[str], choice: str = "ledger"
) -> Any:
    """Run a CLI command with the picker replaced by its answer (the app is tested above)."""
    import sessiondex.cli.pick_cmd as pick_cmd
    import sessiondex.picker as picker

    def fake_run(db_path: Path, roots: Any, options: PickerOptions, **kw: Any) -> Any:
        assert options.cwd == os.path.abspath(world.shop)
        with Index(db_path, roots, refresh=False) as index:
            return index.resolve(str(world.paths[choice])).session

    monkeypatch.setattr(pick_cmd, "has_terminal", lambda: True)
    monkeypatch.setattr(picker, "run_picker", fake_run)
    base = ["--db", str(world.db), "--config-dir", str(world.tree.root)]
    return CliRunner().invoke(cli, [*base, *args])


@pytest.mark.parametrize("command", [["pick", "--exec"], ["resume"]])
def test_exec_and_resume_without_arg_run_claude_in_the_session_directory(
    world: PickerWorld, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: list[str]
) -> None:
    record = tmp_path / "claude-ran"
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$PWD $*" > {record}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    result = _pick_cli(world, monkeypatch, [*command, "--cwd", str(world.shop)])
    assert result.exit_code == 0, result.output
    assert record.read_text().split() == [str(world.api), "--resume", world.ids["ledger"]]


def test_a_long_list_is_paged_from_the_index(tmp_path: Path) -> None:
    """Rows for every session, objects only for those near the screen; moving down a
    page at a time fetches the rest as they come into view."""
    tree = ConfigTree(tmp_path / "claude")
    cwd = tmp_path / "big"
    cwd.mkdir()
    count = 160
    for n in range(count):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(NOW - 3600 - n * 60))
        session = tree.session(str(cwd), start=stamp)
        session.user(f"task number {n}")
        session.meta("custom-title", customTitle=f"Task {n:03d}")
        session.write(mtime=NOW - 3600 - n * 60)
    db = tmp_path / "index.db"
    with Index(db, [tree.root]) as index:
        index.refresh()

    async def run(app: PickerApp, pilot: Any) -> Any:
        first = (len(app.picker.session_list.rows), len(app.picker.session_list.objects))
        for _ in range(9):
            await press(app, pilot, "pagedown")
        await pilot.pause(0.1)
        await settle(app, pilot)
        return first, app.picker.session_list.current, titles(app)

    world = PickerWorld.__new__(PickerWorld)  # an empty world around this tree
    world.tree, world.db, world.shop = tree, db, cwd
    _, (first, current, shown) = drive(world, run, size=(80, 24))
    assert first[0] == count and first[1] < count  # never every object at once
    assert current is not None and shown[-1] == f"Task {count - 1:03d}"
    assert "?" not in shown[-20:]  # the rows on screen have their objects now


@pytest.mark.parametrize(
    ("rank_limit", "scope", "said"),
    [
        (5000, "all", False),
        (0, "all", True),
        # a scope of few sessions is ranked in them at every keystroke (docs/search.md)
        (0, "worktree", False),
    ],
)
def test_the_status_line_says_when_a_common_word_is_answered_newest_first(
    world: PickerWorld, monkeypatch, rank_limit: int, scope: str, said: bool
) -> None:
    """A typed word found in more messages than can be ranked in a keystroke is answered
    newest first (docs/search.md); the status line says so, since the order changes."""
    import sessiondex.query.search as search_module

    monkeypatch.setattr(search_module, "TYPING_RANK_LIMIT", rank_limit)

    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, *"heartbeat")
        return titles(app), screen_text(app)

    options = PickerOptions(cwd=str(world.shop), scope=scope)
    _, (shown, text) = drive(world, run, options=options)
    assert "Auth refactor" in shown
    status = text.splitlines()[0]
    assert ("newest first" in status) is said, status


@pytest.mark.parametrize(
    ("typed", "chosen"),
    [
        ("ledger", "Ledger reconciliation"),  # not the row highlighted before the query
        ("qqqqzz", None),  # matches nothing: Enter chooses nothing
    ],
)
def test_a_query_and_enter_in_one_burst_choose_from_the_query(
    world: PickerWorld, typed: str, chosen: str | None
) -> None:
    """Pasted, or typed fast, the characters and Enter arrive in one terminal read:
    Enter ran before the query box reported its change, and chose the row highlighted
    before the query (resuming the wrong session, or one when nothing matched)."""
    from textual import events

    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, "ctrl+a")
        for ch in typed:
            app.post_message(events.Key(ch, ch))
        app.post_message(events.Key("enter", "\r"))
        for _ in range(250):  # until it chose, or the typed query's answer is on screen
            await pilot.pause(0.02)
            screen = app.picker
            if not app.is_running or (
                screen.query_text == typed and screen.painted_generation >= screen.generation
            ):
                break
        await pilot.pause(0.1)  # time enough for a wrong choice to be made
        return app.is_running

    result, running = drive(world, run)
    if chosen is None:
        assert result is None and running  # still open, nothing chosen
    else:
        assert result is not None and result["title"] == chosen


def test_a_row_of_a_named_agent_session_shows_at_name(tmp_path: Path) -> None:
    """The picker's objects carry the agent name for its ``@name`` marker (semantics 2);
    the Index's session objects do not (their keys are the contract's)."""
    from sessiondex.picker.model import with_agent_names
    from tests.builders import ConfigTree

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("review the parser")
    s.meta("agent-name", agentName="reviewer")
    path = s.write()
    with Index(tmp_path / "i.db", [tree.root]) as index:
        (plain,) = index.sessions_at([str(path)])
        assert "agent_name" not in plain
        (obj,) = with_agent_names(index, [plain])
    assert markers(obj) == ["@reviewer"]


@pytest.mark.parametrize("size", [(120, 12), (120, 40), (80, 8)])
def test_the_column_header_follows_the_rows_when_a_scrollbar_comes_and_goes(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """The header was laid out once, from the list's width before the rows came; a
    scrollbar that appeared with them narrowed the rows and not the header (the
    activity column 7 cells apart at 120 columns)."""
    from sessiondex.picker.rows import header_text

    world = PickerWorld(tmp_path)
    for n in range(12):  # enough rows for a scrollbar on a short screen
        world.add(f"extra{n}", world.api, f"extra task {n}", mtime=NOW - 9000 - n)
    world.refresh()

    async def run(app: PickerApp, pilot: Any) -> Any:
        await settle(app, pilot)
        await pilot.pause(0.05)
        shown = []
        for query in ("", "extra task 3"):  # many rows, then one: the scrollbar goes
            app.picker.query_one("#query").value = query
            await pilot.pause(0.2)
            await settle(app, pilot)
            await pilot.pause(0.05)
            expected = header_text(app.picker.session_list.columns()).plain
            header = str(app.picker.query_one("#columns").render())
            shown.append((header.rstrip(), expected.rstrip()))
        return shown

    _, shown = drive(world, run, size=size, options=PickerOptions(cwd="/", scope="all"))
    for header, expected in shown:
        assert header == expected


def test_ctrl_c_cancels_a_prompt(tmp_path: Path) -> None:
    """Ctrl+C leaves the picker everywhere else; in the rename prompt it did nothing."""
    world = PickerWorld(tmp_path)
    path = world.paths["coupons"]
    before = path.read_bytes()

    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, "ctrl+r")
        opened = app.screen is not app.picker
        await press(app, pilot, *"Not saved", "ctrl+c")
        await pilot.pause(0.1)
        return opened, app.screen is app.picker

    _, (opened, closed) = drive(world, run)
    assert opened and closed and path.read_bytes() == before


def test_an_empty_scope_points_to_all_projects(tmp_path: Path) -> None:
    world = PickerWorld(tmp_path)

    async def run(app: PickerApp, pilot: Any) -> Any:
        await settle(app, pilot)
        return str(app.picker.query_one("#status").render())

    _, status = drive(world, run, options=PickerOptions(cwd=str(tmp_path / "none")))
    assert "0 sessions" in status and "^A: all projects" in status


def test_a_stopped_search_is_a_stop_whatever_sqlite_says(world: PickerWorld) -> None:
    """An interrupt landing while SQLite builds the FTS5 virtual table for a new
    connection raises "vtable constructor failed: messages_fts", not "interrupted":
    the picker showed it as an error toast. Any error of a job it stopped is the stop;
    an error of a job it did not stop is still an error."""
    import sqlite3
    import threading

    from sessiondex.picker.source import Interrupted, Source

    started, release = threading.Event(), threading.Event()

    def failing_after_the_stop(index: Index) -> Any:
        started.set()
        release.wait(10)
        raise sqlite3.OperationalError("vtable constructor failed: messages_fts")

    source = Source(world.db, [world.tree.root])
    try:
        future = source.submit(failing_after_the_stop, interruptible=True)
        assert started.wait(10)
        source.interrupt()
        release.set()
        with pytest.raises(Interrupted):
            future.result(timeout=10)
        started.clear()
        release.set()
        unstopped = source.submit(failing_after_the_stop, interruptible=True)
        with pytest.raises(sqlite3.OperationalError):
            unstopped.result(timeout=10)
    finally:
        source.close()


@pytest.mark.parametrize(
    "field", ["title", "tag", "last_activity", "git_branch", "file_size", "cwd", "message_count"]
)
def test_a_row_whose_stored_object_holds_a_wrong_type_is_still_drawn(field: str) -> None:
    """A stored object edited by hand (valid JSON, a list for a title) ended the picker
    in a traceback; the row is drawn with what it can show."""
    import time

    from sessiondex.picker.rows import Columns, row_text

    obj = {
        "session_id": "4045e6f8-0000-4000-8000-000000000001",
        "title": "Auth refactor",
        "tag": "keep",
        "last_activity": "2026-11-01T10:00:00.000Z",
        "git_branch": "main",
        "file_size": 2048,
        "cwd": "/home/dev/shop",
        "message_count": 4,
        field: [1, {"a": 2}],
    }
    text = row_text(obj, Columns.for_width(120, show_project=True), time.time()).plain
    assert ("Auth refactor" in text) is (field != "title")


def _renamed_by_another_process(tree: ConfigTree, s: Any, db: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tree.root), "--db", str(db), "rename", s.session_id, "Renamed"]
    )
    assert result.exit_code == 0, result.output


def _indexed_by_another_command(tree: ConfigTree, s: Any, db: Path) -> None:
    late = tree.session(cwd="/w/app")
    late.user("a session another command indexed first")
    late.write()
    result = CliRunner().invoke(cli, ["--config-dir", str(tree.root), "--db", str(db), "list"])
    assert result.exit_code == 0, result.output


def _archived_in_claude_codes_picker(tree: ConfigTree, s: Any, db: Path) -> None:
    folder = s.project_dir / s.session_id
    folder.mkdir(exist_ok=True)
    (folder / "archived.json").write_text('{"archived": true}')


@pytest.mark.parametrize(
    "change",
    [_renamed_by_another_process, _indexed_by_another_command, _archived_in_claude_codes_picker],
)
def test_an_open_picker_without_watch_sees_every_change(tmp_path: Path, change: Any) -> None:
    """Without watch, the picker reloaded only when its own refresh read a transcript:
    a change another process had indexed already (a rename, an MCP server's or a
    command's refresh) or one to Claude Code's picker archive (no transcript changes)
    left it showing the old rows for good."""
    import threading

    from sessiondex.picker.source import Freshness, Source

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("the session on screen")
    s.write(mtime=1_790_000_000)
    db = tmp_path / "index.db"
    assert (
        CliRunner()
        .invoke(cli, ["--config-dir", str(tree.root), "--db", str(db), "index"])
        .exit_code
        == 0
    )
    changed = threading.Event()
    source = Source(db, [tree.root])
    live = Freshness(source, 0.05, changed.set, lambda text: None)
    live.start()
    try:
        time.sleep(0.3)  # the first rounds: nothing new
        changed.clear()
        change(tree, s, db)
        assert changed.wait(timeout=10)
    finally:
        live.stop()
        source.close()


def _one_indexed_session(tmp_path: Path) -> tuple[ConfigTree, Any, Path, list[str]]:
    """A config dir with one session, indexed; the CLI's arguments for both."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("the session on screen")
    s.write(mtime=1_790_000_000)
    db = tmp_path / "index.db"
    argv = ["--config-dir", str(tree.root), "--db", str(db)]
    assert CliRunner().invoke(cli, [*argv, "index"]).exit_code == 0
    return tree, s, db, argv


def _live_sees_a_change(source: Any, *, refresh: bool = True) -> bool:
    """Whether the picker's live thread over ``source`` reports a change within 10 s."""
    import threading

    from sessiondex.picker.source import Freshness

    changed = threading.Event()
    live = Freshness(source, 0.05, changed.set, lambda text: None, refresh=refresh)
    live.start()
    try:
        return changed.wait(timeout=10)
    finally:
        live.stop()
        source.close()


def test_a_refresh_failure_that_comes_back_is_said_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live thread says a failed refresh once, not every round; but once a round
    has passed, the same kind of failure later (the disk full again an hour on) is news
    and is said again. It was said only the first time: a set never emptied."""
    import threading

    from sessiondex.picker.source import Freshness, Source

    _tree, _s, db, _argv = _one_indexed_session(tmp_path)
    # Each round takes the next outcome; the last one stays.
    outcomes = iter(["fail", "fail", "pass", "pass", "fail", "fail"])
    last = ["pass"]
    rounds = threading.Semaphore(0)
    real_refresh = Index.refresh

    def refresh(self: Index, *args: Any, **kwargs: Any) -> Any:
        last[0] = next(outcomes, last[0])
        rounds.release()
        if last[0] == "fail":
            raise OSError(28, "No space left on device")
        return real_refresh(self, *args, **kwargs)

    monkeypatch.setattr(Index, "refresh", refresh)
    said: list[str] = []
    source = Source(db, [_tree.root])
    live = Freshness(source, 0.02, lambda: None, said.append)
    live.start()
    try:
        for _ in range(8):  # every outcome taken, and two more rounds
            assert rounds.acquire(timeout=10)
    finally:
        live.stop()
        source.close()
    assert len(said) == 2, said
    assert all("No space left on device" in line for line in said), said


@pytest.mark.parametrize("refresh", [True, False], ids=["refreshing", "beside a watch"])
def test_a_change_committed_while_the_picker_starts_is_shown(tmp_path: Path, refresh: bool) -> None:
    """The first rows are read before the UI starts (prefetch) and the live thread took
    its first look once it had: a rename committed in between was shown only with the
    next change. (Beside a watch the live thread compares the database's stat: the
    rename stands for the watcher's commit.)"""

    from sessiondex.picker import prefetch
    from sessiondex.picker.source import Source

    tree, s, db, argv = _one_indexed_session(tmp_path)
    source = Source(db, [tree.root], refresh_first=refresh)
    rows = prefetch(source, PickerOptions(cwd="/w/app")).result(timeout=30)
    assert rows is not None
    result = CliRunner().invoke(cli, [*argv, "rename", s.session_id, "Renamed meanwhile"])
    assert result.exit_code == 0, result.output
    assert _live_sees_a_change(source, refresh=refresh)


def test_a_change_committed_during_the_pickers_first_refresh_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first round recorded what it found as the starting point: a rename another
    process committed while that first refresh ran was never shown."""

    from sessiondex.picker.source import Source

    tree, s, db, argv = _one_indexed_session(tmp_path)
    real_refresh = Index.refresh
    calls: list[int] = []

    def refresh_with_a_rename_meanwhile(self: Index, *args: Any, **kwargs: Any) -> Any:
        if not calls:
            result = CliRunner().invoke(cli, [*argv, "rename", s.session_id, "Renamed meanwhile"])
            assert result.exit_code == 0, result.output
        calls.append(1)
        return real_refresh(self, *args, **kwargs)

    monkeypatch.setattr(Index, "refresh", refresh_with_a_rename_meanwhile)
    assert _live_sees_a_change(Source(db, [tree.root]))


# A row keeps its columns whatever its markers hold: a 300-character tag or agent name
# pushed the activity, branch, size and message columns off an 80-column screen.
LONG_MARKERS = [
    {"tag": "t" * 300},
    {"agent_name": "a" * 300},
    {"tag": "review-" * 20, "agent_name": "reviewer-" * 10},
    {"tag": "数据库" * 60},
]


@pytest.mark.parametrize("fields", LONG_MARKERS, ids=["tag", "agent", "both", "wide"])
@pytest.mark.parametrize("width", [80, 120])
def test_long_markers_are_cut_to_the_title_column(fields: dict[str, str], width: int) -> None:
    import time

    from rich.cells import cell_len

    from sessiondex.picker.rows import Columns, header_text, row_text

    obj = {
        "session_id": "4045e6f8-0000-4000-8000-000000000001",
        "title": "Auth refactor",
        "last_activity": "2026-11-01T10:00:00.000Z",
        "git_branch": "main",
        "file_size": 2048,
        "cwd": "/home/dev/shop",
        "message_count": 4,
        **fields,
    }
    columns = Columns.for_width(width, show_project=True)
    row = row_text(obj, columns, time.time()).plain
    assert cell_len(row) == cell_len(header_text(columns).plain)
    assert row.rstrip().endswith("shop")  # the last column still where it belongs


# Ctrl+W: every worktree ↔ this worktree; Ctrl+A: all projects ↔ back, from any start
# (helper 119: started in repo, as `scope = "repo"` in the config makes it, Ctrl+W
# left it for good).
SCOPE_KEYS = [
    ("worktree", ["ctrl+w", "ctrl+w", "ctrl+w"], ["repo", "worktree", "repo"]),
    ("repo", ["ctrl+w", "ctrl+w", "ctrl+w"], ["worktree", "repo", "worktree"]),
    ("repo", ["ctrl+w", "ctrl+a", "ctrl+a"], ["worktree", "all", "worktree"]),
    ("worktree", ["ctrl+w", "ctrl+a", "ctrl+a"], ["repo", "all", "repo"]),
    ("all", ["ctrl+a", "ctrl+a", "ctrl+w"], ["worktree", "all", "repo"]),
]


@pytest.mark.parametrize(("start", "keys", "scopes"), SCOPE_KEYS)
def test_scope_keys_from_every_start(
    world: PickerWorld, start: str, keys: list[str], scopes: list[str]
) -> None:
    async def run(app: PickerApp, pilot: Any) -> Any:
        seen = []
        for key in keys:
            await press(app, pilot, key)
            seen.append(app.picker.scope)
        return seen

    options = PickerOptions(cwd=str(world.shop), scope=start)
    _, seen = drive(world, run, options=options)
    assert seen == scopes


def test_enter_on_a_name_or_tag_as_offered_writes_nothing(tmp_path: Path) -> None:
    """The prompts offer the name and tag as rows show them (whitespace folded, control
    and bidi characters made visible): Enter on them unchanged wrote that display form
    back as the name, and moved the mtime, Claude Code's retention clock (helper 119)."""
    world = PickerWorld(tmp_path)
    world.add(
        "odd",
        world.shop,
        "the newest session",
        title="Fix  the\tparser \x1b[31mred\x1b[0m \u202eevil",
        tag="two  spaces",
        mtime=NOW,
    )
    path = world.paths["odd"]
    before = (path.read_bytes(), path.stat().st_mtime_ns)

    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, "ctrl+r", "enter")
        await pilot.pause(0.1)
        await settle(app, pilot)
        await press(app, pilot, "ctrl+t", "enter")
        await pilot.pause(0.1)
        await settle(app, pilot)
        return app.picker.session_list.rows[0].session_id

    _, first = drive(world, run, refresh_first=True)
    assert first == world.ids["odd"]
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


@pytest.mark.parametrize(
    ("typed", "chosen"), [("", "Implement coupon codes"), ("ledger", "Ledger reconciliation")]
)
def test_enter_chooses_on_a_screen_too_short_to_show_a_row(
    world: PickerWorld, typed: str, chosen: str
) -> None:
    """Three lines high (a squeezed pane), the list has no line to draw: Enter waited
    for the rows to be drawn, which never happened, and did nothing, over and over.
    It chooses from the rows of what was typed once they are loaded, drawn or not."""
    from sessiondex.picker import prefetch
    from sessiondex.picker.source import Source

    async def main() -> Any:
        source = Source(world.db, [world.tree.root])
        options = PickerOptions(cwd=str(world.shop), scope="all" if typed else "worktree")
        app = PickerApp(
            source,
            options,
            clock=lambda: NOW,
            live_interval=None,
            initial=prefetch(source, options),
        )
        try:
            async with app.run_test(size=(80, 3)) as pilot:
                for ch in typed:
                    await pilot.press(ch)
                for _ in range(250):  # until what was typed is answered (never drawn here)
                    await pilot.pause(0.02)
                    screen = app.picker
                    if (
                        screen.query_text == typed
                        and screen.session_list.generation == screen.generation
                        and screen.session_list.objects
                    ):
                        break
                await pilot.press("enter")
                for _ in range(100):
                    if not app.is_running:
                        break
                    await pilot.pause(0.02)
        finally:
            source.close()
        return app.return_value

    result = asyncio.run(main())
    assert result is not None and result["title"] == chosen


@pytest.mark.parametrize(
    ("typed", "ranker"),
    [
        ("deploy", "_find"),  # the full-text ranking of a query of 3+ letters
        ("ta", "title_prefix_search"),  # one or two letters: the title filter's order
    ],
)
def test_paging_down_a_search_ranks_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: str, ranker: str
) -> None:
    """Past the first page of a search's results, a page-down ran the whole search again
    with a limit 100 rows larger (0.15 s a page at 1,500 results): the ranking and every
    row's object and snippet, each time. The ranking past the first page is read once;
    a page-down then reads only the objects of the rows it brings into view, search
    objects (with their snippets, for the preview), in the order ``search`` gives."""
    import sessiondex.query.search as search_module
    from sessiondex.picker.model import MARKERS

    tree = ConfigTree(tmp_path / "claude")
    cwd = tmp_path / "big"
    cwd.mkdir()
    count = 200
    for n in range(count):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(NOW - 3600 - n * 60))
        session = tree.session(str(cwd), start=stamp)
        # some say it twice: scores differ, not only recency
        session.user(f"deploy step {n}" + (" then deploy again" if n % 7 == 0 else ""))
        session.meta("custom-title", customTitle=f"Task {n:03d}")
        session.write(mtime=NOW - 3600 - n * 60)
    db = tmp_path / "index.db"
    with Index(db, [tree.root]) as index:
        index.refresh()
        found = index.search(typed, cwd=str(cwd), typing=True)
    expected = [o["session_id"] for o in found]
    assert len(expected) == count

    rankings: list[str] = []
    rank = getattr(search_module, ranker)

    def counted(*args: Any, **kwargs: Any) -> Any:
        rankings.append(ranker)
        return rank(*args, **kwargs)

    monkeypatch.setattr(search_module, ranker, counted)

    async def run(app: PickerApp, pilot: Any) -> Any:
        await press(app, pilot, *typed)
        before = len(rankings)
        for _ in range(12):
            await press(app, pilot, "pagedown")
        await pilot.pause(0.1)
        await settle(app, pilot)
        screen = app.picker
        rows = screen.session_list.rows
        objects = screen.session_list.objects
        return (
            len(rankings) - before,
            [r.session_id for r in rows],
            screen.session_list.cursor,
            [objects.get(r.path) for r in rows[-20:]],
        )

    world = PickerWorld.__new__(PickerWorld)  # an empty world around this tree
    world.tree, world.db, world.shop = tree, db, cwd
    _, (ranked, shown, cursor, last) = drive(world, run, size=(80, 24))
    assert ranked == 1  # the rest of the ranking, once; no page re-ran it
    assert shown == expected
    assert cursor == count - 1
    # the rows on screen have their objects, as the search gives them (marked snippets)
    assert all(obj is not None and MARKERS[0] in obj["snippet"] for obj in last)


def test_the_pickers_rows_are_read_anew_once_the_index_folder_can_be_written(
    tmp_path: Path,
) -> None:
    """A picker opened where its index's folder could not be written reads the file as
    an immutable one (no -shm can be made). Once the folder can be written again, its
    Freshness thread's refresh writes the index, but the rows' queries still came from
    the immutable handle, which sees no change: a reload showed the picker's first rows
    until it was closed. Found by helper h611 reviewing 14f5e6e."""
    from sessiondex.picker.source import Source
    from tests.test_reliability_faults import read_only

    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd="/w/app")
    session.user("first words")
    session.write()
    base = tmp_path / "cache"
    base.mkdir()
    db = base / "index.db"
    with Index(db, [tree.root]) as builder:
        builder.refresh()
    source = Source(db, [tree.root])
    try:
        with read_only(base):
            found = source.submit(lambda index: index.search("first", scope="all")).result()
            assert len(found) == 1
            assert source.submit(lambda index: index.read_immutable).result()
        session.user("zanzibar appears")
        session.append()
        with Index(db, [tree.root]) as refresher:  # what Freshness does, on its own Index
            assert refresher.refresh().grown == 1
        found = source.submit(lambda index: index.search("zanzibar", scope="all")).result()
        assert len(found) == 1
        assert not source.submit(lambda index: index.read_immutable).result()
    finally:
        source.close()
