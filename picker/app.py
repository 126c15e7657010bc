"""``sessiondex pick``: the session picker, a Textual app over :class:`sessiondex.Index`.

Rows are ``list``'s (title by the picker's precedence, last activity, branch, size,
messages, the project when the scope is wider than the worktree), forks folded under
their origin; typing searches at once (``Index.search``: full text, titles, PR URLs).
The app returns the chosen session object, or None when left without choosing.

Nothing here waits on the index: every query runs on the :class:`~.source.Source`
thread from an exclusive async worker, so a new keystroke cancels the query of the
previous one if it has not started, and drops its answer if it has (each load carries a
generation number; only the latest is applied).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static

from sessiondex.picker.model import (
    EVERY,
    PAGE,
    Listing,
    Loaded,
    PickerOptions,
    SearchRows,
    filters_for,
    position,
    with_agent_names,
)
from sessiondex.picker.model import load as load_rows
from sessiondex.picker.rows import (
    UNICODE,
    Columns,
    Glyphs,
    clean,
    fit,
    header_text,
    marked_snippet,
    short_path,
)
from sessiondex.picker.source import Freshness, Interrupted, Source
from sessiondex.picker.widgets import HelpScreen, QueryBox, SessionList, TextPrompt
from sessiondex.query.sessions import is_archived
from sessiondex.render.counts import counted

if TYPE_CHECKING:
    from sessiondex.index import Index

SCOPE_LABELS = {"worktree": "this worktree", "repo": "all worktrees", "all": "all projects"}
PREVIEW_MESSAGES = 4  # last messages shown in the preview
PREVIEW_CHARS = 400  # per message
SEARCH_CACHE = 32  # recent search answers kept
#: How long a keystroke's repaint waits for the rows it asks for. Textual draws the
#: whole screen per frame; the key's echo drawn alone and then the rows made every
#: search answer wait for the echo's frame. Held this long, a quick search (most take a
#: few ms) is drawn with its key in one frame; a slower one lets the key show first.
HOLD_PAINT_SECONDS = 0.03


@dataclass
class Preview:
    session: dict[str, Any]
    messages: list[tuple[str, str]] = field(default_factory=list)  # (role, text)
    note: str | None = None


class PickerScreen(Screen[None]):
    """The picker itself: the query box, the list, the preview and the keys."""

    BINDINGS = [
        Binding("up,ctrl+p", "move(-1)", "Up", priority=True, show=False),
        Binding("down,ctrl+n", "move(1)", "Down", priority=True, show=False),
        Binding("pageup", "page(-1)", "Page up", priority=True, show=False),
        Binding("pagedown", "page(1)", "Page down", priority=True, show=False),
        # Not a priority binding: in the query box Enter is the box's own (Submitted,
        # on_input_submitted), so it comes after the characters typed before it.
        Binding("enter", "choose", "Choose", show=False),
        Binding("escape", "escape", "Clear / leave", priority=True, show=False),
        Binding("ctrl+a", "toggle_scope('all')", "All projects", priority=True, show=False),
        Binding("ctrl+w", "toggle_scope('repo')", "Worktrees", priority=True, show=False),
        Binding("ctrl+b", "toggle_branch", "Branch", priority=True, show=False),
        Binding("ctrl+r", "rename", "Rename", priority=True, show=False),
        Binding("ctrl+t", "tag", "Tag", priority=True, show=False),
        Binding("ctrl+c", "leave", "Leave", priority=True, show=False),
    ]

    DEFAULT_CSS = """
    PickerScreen { layout: vertical; }
    #status { height: 1; padding: 0 1; background: $panel; }
    #query { border: none; height: 1; padding: 0 1; }
    #columns { height: 1; padding: 0 0; color: $text-muted; }
    #preview {
        height: 45%; border-top: solid $accent; padding: 0 1; display: none;
        overflow-y: auto;
    }
    #preview.shown { display: block; }
    #hints { height: 1; padding: 0 1; color: $text-muted; }
    PickerScreen.ascii #preview { border-top: ascii $accent; }
    PickerScreen.ascii SessionList { scrollbar-size-vertical: 0; }
    """

    def __init__(
        self, options: PickerOptions, *, clock: Callable[[], float], glyphs: Glyphs
    ) -> None:
        super().__init__()
        self.options = options
        self.clock = clock
        self.glyphs = glyphs
        self.scope = options.scope
        # Where Ctrl+A goes back to (started in all projects: this worktree).
        self.before_all = options.scope if options.scope != "all" else "worktree"
        self.current_branch = options.current_branch
        self.query_text = options.query
        self.search_limit = PAGE
        self.search_complete = True
        self.expanded: set[str] = set()
        # recent search answers, for backspacing; emptied whenever the index changes
        self.search_cache: OrderedDict[Any, Loaded] = OrderedDict()
        self.search_newest_first = False
        self.search_rows: SearchRows | None = None  # the rows' search, for their objects
        self.listing: Listing | None = None
        self.generation = 0
        self.painted_generation = 0  # the last load whose rows reached the screen
        self.painted_at = 0.0
        self.choose_when_loaded = False
        self.preview_shown = False
        self.is_loading = True
        self.error: str | None = None
        self.session_list = SessionList(self, clock=clock, glyphs=glyphs, id="list")
        self._paint_hold: tuple[Any, Any] | None = None  # (batch context, release timer)
        # what each one-line Static shows (update_chrome): (markup, style)
        self._lines: dict[str, tuple[str, str]] = {}
        if glyphs is not UNICODE:
            self.add_class("ascii")

    @property
    def source(self) -> Source:
        app = self.app
        assert isinstance(app, PickerApp)
        return app.source

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield QueryBox(
            self,
            value=self.options.query,
            placeholder="type to search titles, text, branches, PR URLs",
            id="query",
        )
        yield Static(id="columns")
        yield self.session_list
        yield Static(id="preview")
        yield Static(id="hints")

    def on_mount(self) -> None:
        self.query_one(QueryBox).focus()
        app = self.app
        initial = app.initial if isinstance(app, PickerApp) else None
        if initial is None:
            self.start_load(keep=None)
        else:
            self.generation = initial_generation = 1
            self.apply_initial(initial, initial_generation)

    @work(group="load")
    async def apply_initial(self, initial: Future[Loaded], generation: int) -> None:
        """The first rows, queried while Textual was still starting (see ``prefetch``)."""
        try:
            loaded = await asyncio.wrap_future(initial)
        except Exception:  # noqa: BLE001 - ask again the ordinary way, which reports it
            if self.generation == generation:
                self.start_load(keep=None)
            return
        if self.generation == generation:
            self.apply(loaded, None)

    def on_resize(self) -> None:
        self.update_chrome()

    # ----------------------------------------------------------------- loading
    def filters(self) -> dict[str, Any]:
        return filters_for(self.options, self.scope, self.current_branch)

    def start_load(self, keep: str | None, *, live: bool = False) -> None:
        """Load the rows of the current query and filters, keeping the cursor on the
        session ``keep`` (and, for a live update, on the same screen line; if that
        session is gone, on the same row number)."""
        self.generation += 1
        fallback = self.session_list.cursor if live else 0
        self.source.interrupt()  # a running search answers a query nobody waits for now
        offset = self.session_list.screen_offset() if live and keep else None
        if live:
            self.search_cache.clear()
        cached = self.search_cache.get(self._search_key())
        if cached is not None:  # backspace over a query seen a moment ago
            self.search_cache.move_to_end(self._search_key())
            at = position(cached.rows, keep, fallback)
            self.apply(replace(cached, generation=self.generation, cursor=at), offset)
            return
        self.load(self.generation, keep, offset, fallback)

    def _search_key(self) -> tuple[Any, ...] | None:
        query = self.query_text.strip()
        if not query:
            return None
        return (query, self.search_limit, tuple(sorted(self.filters().items())))

    @work(exclusive=True, group="load")
    async def load(
        self, generation: int, keep: str | None, offset: int | None, fallback: int
    ) -> None:
        query = self.query_text.strip()
        filters = self.filters()
        expanded = set(self.expanded)
        limit = self.search_limit
        height = max(1, self.session_list.scrollable_content_region.height or 24)

        def job(index: Index) -> Loaded | None:
            if generation != self.generation:
                return None  # superseded while it waited: skip the query
            # A newer sessiondex may have re-derived the index since the picker opened:
            # its rows are not this code's to read (one small SELECT a load).
            index.check_rules()
            return load_rows(
                index,
                generation,
                query,
                filters,
                expanded=expanded,
                limit=limit,
                height=height,
                keep=keep,
                fallback=fallback,
            )

        try:
            loaded = await asyncio.wrap_future(self.source.submit(job, interruptible=True))
        except Interrupted:
            return
        except ValueError as exc:  # a filter that cannot apply (no git branch here)
            self.release_paint()
            self.notify(clean(str(exc)), severity="error", markup=False)
            if self.current_branch:
                self.current_branch = False
                self.start_load(keep)
            return
        except Exception as exc:  # noqa: BLE001 - a busy or damaged index: say so, stay up
            from sessiondex.indexer.db import IndexFromNewer

            if isinstance(exc, IndexFromNewer):
                # The CLI's one line, and no rows: none can be read from it any more,
                # and the ones on screen no longer answer what is typed.
                self.error = clean(str(exc))
                self.search_cache.clear()
                self.session_list.set_rows([], 0)
            else:
                self.error = clean(f"{type(exc).__name__}: {exc}")
            self.is_loading = False
            self.update_chrome()
            self.release_paint()
            return
        if loaded is None or loaded.generation != self.generation:
            return
        self.apply(loaded, offset)

    def apply(self, loaded: Loaded, offset: int | None) -> None:
        key = self._search_key()
        if key is not None and loaded.listing is None:
            self.search_cache[key] = loaded
            while len(self.search_cache) > SEARCH_CACHE:
                self.search_cache.popitem(last=False)
        self.is_loading = False
        self.error = None
        self.listing = loaded.listing
        self.search_complete = loaded.complete
        self.search_newest_first = loaded.newest_first
        self.search_rows = loaded.search
        self.session_list.replace_objects(loaded.objects)
        self.session_list.generation = loaded.generation
        self.session_list.show_project = self.scope != "worktree"
        self.session_list.set_rows(loaded.rows, loaded.cursor, screen_offset=offset)
        self.update_chrome()
        self.highlight_changed()
        self.release_paint()
        if self.choose_when_loaded:
            self.call_after_refresh(self.action_choose)

    def painted(self, generation: int) -> None:
        """The list has drawn the rows of load ``generation`` (called as it renders:
        the moment a keystroke's answer is on screen, for the tests and the bench)."""
        if generation > self.painted_generation:
            self.painted_generation = generation
            self.painted_at = time.perf_counter()  # for bench/picker.py

    def fetch_objects(self, paths: list[str]) -> None:
        self._fetch(paths, self.generation, self.search_rows)

    @work(group="objects")
    async def _fetch(self, paths: list[str], generation: int, search: SearchRows | None) -> None:
        """The objects of rows come into view: a search's from its ranking (with the
        snippets the preview shows), without ranking again; else the listing's."""

        def job(index: Index) -> list[dict[str, Any]]:
            if search is not None:
                return search.objects(index, paths)
            return with_agent_names(index, index.sessions_at(paths))

        try:
            found = await asyncio.wrap_future(self.source.submit(job))
        except Exception:  # noqa: BLE001 - rows stay as placeholders; the next load retries
            return
        if generation == self.generation:
            self.session_list.add_objects({o["file_path"]: o for o in found})
            if self.preview_shown:
                self.highlight_changed()

    def reload_live(self) -> None:
        """The index changed under us: reload in place, the cursor on the same session."""
        row = self.session_list.current
        self.start_load(row.path if row else None, live=True)

    # ----------------------------------------------------------------- chrome
    def update_chrome(self) -> None:
        """The status line, the column header and the hints. Each is one line across the
        screen whatever it says, so an update redraws the line without a layout pass
        (``layout=False``): with one, every keystroke re-arranged the whole screen."""
        width = self.size.width or 80
        rows = self.session_list.rows
        parts = ["sessiondex pick", SCOPE_LABELS.get(self.scope, self.scope)]
        if self.current_branch:
            parts.append("current branch")
        if self.is_loading:
            parts.append("loading")
        elif self.error:
            parts.append(self.error)
        elif self.query_text.strip():
            more = "" if self.search_complete else "+"
            parts.append(f"{len(rows)}{more} match{'es' if len(rows) != 1 else ''}")
            if self.search_newest_first:  # a word too common to rank as it is typed
                parts.append("newest first")
        else:
            parts.append(counted(len(rows), "session"))
        if not rows and not self.is_loading and not self.error and self.scope != "all":
            parts.append("^A: all projects")  # as search says where else it matches
        if rows:
            parts.append(f"{self.session_list.cursor + 1}/{len(rows)}")
        right = "? keys"
        left = f" {self.glyphs.dot} ".join(parts)
        left = fit(left, max(10, width - 2 - len(right) - 1), self.glyphs)
        self._set_line(
            "#status",
            Text(left + " " * max(1, width - 2 - len(left) - len(right)) + right, no_wrap=True),
        )
        self.show_header(self.session_list.columns())
        hints = [
            "enter resume",
            "esc quit",
            "space preview",
            "^A all",
            "^W worktrees",
            "^B branch",
            "^R rename",
            "^T tag",
        ]
        line = ""
        for hint in hints:
            candidate = f"{line}  {hint}" if line else hint
            if len(candidate) > width - 2:
                break
            line = candidate
        self._set_line("#hints", Text(line, no_wrap=True))

    def show_header(self, columns: Columns) -> None:
        """The column names over the rows, laid out as the rows are (``columns``)."""
        self._set_line("#columns", header_text(columns))

    def _set_line(self, selector: str, text: Text) -> None:
        """Show ``text`` in a one-line Static, unless it already does (no redraw)."""
        shown = (text.markup, str(text.style))
        if self._lines.get(selector) != shown:
            self._lines[selector] = shown
            self.query_one(selector, Static).update(text, layout=False)

    def highlight_changed(self) -> None:
        self.update_chrome()
        if self.preview_shown:
            self.show_preview()

    # ----------------------------------------------------------------- preview
    def show_preview(self) -> None:
        row = self.session_list.current
        pane = self.query_one("#preview", Static)
        if row is None:
            pane.update(Text("no session", style="dim"))
            return
        obj = self.session_list.objects.get(row.path)
        if obj is None:
            pane.update(Text(self.glyphs.ellipsis, style="dim"))
            return
        pane.update(self.preview_text(Preview(obj, note=self.glyphs.ellipsis)))
        self.load_preview(obj, self.query_text.strip())

    @work(exclusive=True, group="preview")
    async def load_preview(self, obj: dict[str, Any], query: str) -> None:
        path = obj["file_path"]

        def job(index: Index) -> Preview:
            try:
                conv = index.conversation(path, include_archived=True)
            except Exception as exc:  # noqa: BLE001 - a vanished or unreadable file
                return Preview(obj, note=f"cannot read the transcript: {exc}")
            messages = []
            for item in conv.items[::-1]:
                blocks = getattr(item, "blocks", None)
                role = getattr(item, "role", "")
                if not blocks or role not in ("user", "assistant"):
                    continue
                text = " ".join(b.text for b in blocks if b.kind == "text" and b.text.strip())
                if text:
                    messages.append((role, text))
                if len(messages) >= PREVIEW_MESSAGES:
                    break
            return Preview(obj, messages=messages[::-1])

        await asyncio.sleep(0.05)  # holding ↓ must not read every transcript on the way
        preview = await asyncio.wrap_future(self.source.submit(job))
        current = self.session_list.current
        if self.preview_shown and current is not None and current.path == path:
            self.query_one("#preview", Static).update(self.preview_text(preview, query))

    def preview_text(self, preview: Preview, query: str = "") -> Text:
        obj = preview.session
        ascii_only = self.glyphs is not UNICODE
        text = Text(no_wrap=False)

        def line(label: str, value: Any) -> None:
            if value:
                text.append(f"{label:<8}", style="bold")
                text.append(clean(value, ascii_only=ascii_only) + "\n")

        text.append(clean(obj.get("title"), ascii_only=ascii_only) + "\n", style="bold")
        line("id", obj.get("session_id"))
        room = max(20, (self.size.width or 80) - 12)
        line("cwd", fit(clean(short_path(obj.get("cwd"))), room, self.glyphs, left=True))
        branches = obj.get("branches") or []
        line("branch", ", ".join(str(b) for b in branches) or obj.get("git_branch"))
        for pr in (obj.get("pr_links") or [])[:3]:
            line("PR", pr.get("url"))
        line("tag", obj.get("tag") and "#" + str(obj["tag"]))
        line("first", obj.get("first_prompt"))
        snippet = obj.get("snippet")
        if snippet and query:
            text.append(f"{'match':<8}", style="bold")
            text.append_text(marked_snippet(snippet, ascii_only=ascii_only))
            text.append("\n")
        for role, message in preview.messages:
            text.append(f"{role:<10}", style="bold" if role == "user" else "italic")
            text.append(fit(clean(message, ascii_only=ascii_only), PREVIEW_CHARS, self.glyphs))
            text.append("\n")
        if preview.note:
            text.append(clean(preview.note, ascii_only=ascii_only), style="dim")
        return text

    # ----------------------------------------------------------------- actions
    def action_move(self, delta: int) -> None:
        self.session_list.move(delta)
        self._maybe_more()

    def action_page(self, direction: int) -> None:
        self.session_list.move(direction * self.session_list.page())
        self._maybe_more()

    def _maybe_more(self) -> None:
        """Near the end of a full first page of search results: ask for the rest of the
        ranking, once. A page-down past it reads the objects of the rows it shows, from
        that ranking (``fetch_objects``): asking for one more page each time ran the
        whole search again per page."""
        rows = self.session_list.rows
        if self.query_text.strip() and not self.search_complete:
            if self.session_list.cursor >= len(rows) - self.session_list.page():
                self.search_limit = EVERY
                self.search_complete = True  # one request at a time
                current = self.session_list.current
                self.start_load(current.path if current else None, live=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the query box. As the box's own key, it is handled after the
        characters before it (pasted, or typed fast, in one terminal read): a priority
        binding ran first and chose from the rows of the query before them."""
        if event.input.id == "query":
            event.stop()
            if event.value != self.query_text:  # its Changed is still on the way
                self.on_input_changed(Input.Changed(event.input, event.value))
            self.action_choose()

    def action_choose(self) -> None:
        if self.session_list.generation < self.generation and not self.error:
            # typed, then Enter at once: choose from the answer to what was typed. Its
            # rows loaded is what counts, not drawn: on a screen too short to show a row
            # nothing is ever drawn, and Enter waited for it for good.
            self.choose_when_loaded = True
            return
        self.choose_when_loaded = False
        row = self.session_list.current
        if row is None:
            return
        obj = self.session_list.objects.get(row.path)
        if obj is None:
            return  # its object is on the way; Enter again
        if obj.get("resume_command") is None and is_archived(obj):
            self._say_archived(obj)
            return
        path = obj.get("file_path")
        if path and not os.path.exists(path):
            # Deleted since it was listed, before the live check drops its row: its
            # resume command would only get "No conversation found" from claude.
            self.notify(
                "its transcript was deleted since it was listed: nothing to resume",
                severity="warning",
                markup=False,
            )
            return
        self.app.exit(obj)

    def _say_archived(self, obj: dict[str, Any]) -> None:
        self.notify(
            f"archived: restore it first (sessiondex restore {clean(obj['session_id'])})",
            severity="warning",
            markup=False,
        )

    def action_escape(self) -> None:
        box = self.query_one(QueryBox)
        if box.value:
            box.value = ""
            box.focus()
        else:
            self.app.exit(None)

    def action_leave(self) -> None:
        self.app.exit(None)

    def action_toggle_scope(self, scope: str) -> None:
        """Ctrl+W: every worktree of this repository ↔ this worktree (from all projects,
        every worktree); Ctrl+A: all projects ↔ back where it was. Started in ``repo``,
        Ctrl+W used to leave it for good: it went back to the start scope, which was
        where it was."""
        if scope == "all":
            if self.scope == "all":
                self.scope = self.before_all
            else:
                self.before_all, self.scope = self.scope, "all"
        else:
            self.scope = "worktree" if self.scope == "repo" else "repo"
        self._reload_keeping()

    def action_toggle_branch(self) -> None:
        self.current_branch = not self.current_branch
        self._reload_keeping()

    def _reload_keeping(self) -> None:
        row = self.session_list.current
        self.search_limit = PAGE
        self.start_load(row.path if row else None)

    def action_toggle_preview(self) -> None:
        self.preview_shown = not self.preview_shown
        self.query_one("#preview", Static).set_class(self.preview_shown, "shown")
        if self.preview_shown:
            self.show_preview()
        self.call_after_refresh(self.session_list.scroll_to_cursor)

    def action_right(self) -> None:
        row = self.session_list.current
        if row is not None and row.forks and not row.expanded and self.listing is not None:
            self.expanded.add(row.session_id)
            self._regroup(row.path)
        else:
            self.action_toggle_preview()

    def action_left(self) -> None:
        row = self.session_list.current
        if row is None or self.listing is None:
            if self.preview_shown:
                self.action_toggle_preview()
            return
        if row.expanded:
            self.expanded.discard(row.session_id)
            self._regroup(row.path)
        elif row.depth:
            origin = self.listing.origin_of(row.path)
            target = next((r for r in self.session_list.rows if r.session_id == origin), None)
            if origin and target is not None:
                self.expanded.discard(origin)
                self._regroup(target.path)
        elif self.preview_shown:
            self.action_toggle_preview()

    def _regroup(self, keep: str) -> None:
        """Expand or collapse on the UI thread: the order is already here."""
        assert self.listing is not None
        rows = self.listing.rows(self.expanded)
        self.session_list.set_rows(rows, position(rows, keep))
        self.highlight_changed()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.glyphs))

    def focus_query(self) -> None:
        self.query_one(QueryBox).focus()

    def type_into_query(self, character: str) -> None:
        box = self.query_one(QueryBox)
        box.focus()
        box.insert_text_at_cursor(character)

    def backspace_query(self) -> None:
        box = self.query_one(QueryBox)
        box.focus()
        box.action_end()
        box.action_delete_left()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "query" or event.value == self.query_text:
            return  # (the box reports its initial --query too: already loaded)
        self.query_text = event.value
        self.search_limit = PAGE
        self.hold_paint()
        self.start_load(keep=None)

    def hold_paint(self) -> None:
        """Suspend repaints until the load now starting is applied, or for
        :data:`HOLD_PAINT_SECONDS` at most (:meth:`release_paint`)."""
        if self._paint_hold is not None:
            return  # the key before is still held: its timer bounds this one too
        batch = self.app.batch_update()
        batch.__enter__()
        self._paint_hold = (batch, self.set_timer(HOLD_PAINT_SECONDS, self.release_paint))

    def release_paint(self) -> None:
        if self._paint_hold is not None:
            batch, timer = self._paint_hold
            self._paint_hold = None
            timer.stop()
            batch.__exit__(None, None, None)

    def on_unmount(self) -> None:
        self.release_paint()

    def action_rename(self) -> None:
        obj = self._current_object()
        if obj is None:
            return
        if is_archived(obj):  # its transcript is inside the archive: nothing to write to
            self._say_archived(obj)
            return
        path = obj["file_path"]
        shown = clean(obj.get("custom_title"))

        def done(name: str | None) -> None:
            if name is not None and name == shown and obj.get("custom_title"):
                # Enter on the name as offered: it is the display form (whitespace folded,
                # controls made visible), and written back it would replace the name.
                self.notify("nothing changed", markup=False)
            elif name is not None and name.strip():
                self.mutate(lambda index: index.rename(path, name.strip()), path, "renamed")

        # Only a name the session has is offered to edit: a title made from a prompt
        # (cut, ending in "…") would become its name on Enter. It shows as the hint.
        self.app.push_screen(
            TextPrompt("Rename session", shown, placeholder=clean(obj.get("title"))),
            done,
        )

    def action_tag(self) -> None:
        obj = self._current_object()
        if obj is None:
            return
        if is_archived(obj):
            self._say_archived(obj)
            return
        path = obj["file_path"]
        shown = clean(obj.get("tag"))

        def done(tag: str | None) -> None:
            if tag is None:
                return
            if tag == shown and obj.get("tag"):
                self.notify("nothing changed", markup=False)  # as offered: see rename
            elif tag.strip():
                self.mutate(lambda index: index.tag(path, tag.strip()), path, "tagged")
            elif obj.get("tag"):
                self.mutate(lambda index: index.untag(path), path, "tag cleared")

        self.app.push_screen(
            TextPrompt("Tag session", shown, "Enter to save (empty clears), Esc to cancel"),
            done,
        )

    def _current_object(self) -> dict[str, Any] | None:
        row = self.session_list.current
        return self.session_list.objects.get(row.path) if row else None

    @work(group="mutate")
    async def mutate(self, action: Callable[[Index], Any], path: str, done: str) -> None:
        from sessiondex.actions.mutations import IndexNotUpdated

        try:
            result = await asyncio.wrap_future(self.source.submit(action))
        except IndexNotUpdated as exc:
            # Done (the transcript has it), the index behind: a note, not an error, and
            # the live thread brings the session's row up to date (Source.behind).
            self.notify(clean(str(exc)), severity="warning", markup=False)
            for text in exc.result.warnings:
                self.notify(clean(text), severity="warning", markup=False)
            obj = self.session_list.objects.get(path)
            if obj is not None:
                self.source.note_behind(str(obj["session_id"]))
            return
        except Exception as exc:  # noqa: BLE001 - NotFound, a refused name, a vanished file
            message = str(exc)
            if isinstance(exc, sqlite3.Error):  # the CLI's line: which index, what is wrong
                from sessiondex.indexer.faults import describe

                message = describe(exc, self.source.db_path)
            self.notify(clean(message), severity="error", markup=False)
            return
        self.notify(done if getattr(result, "written", True) else "nothing changed", markup=False)
        for text in getattr(result, "warnings", ()):  # done, but the title sidecar is not
            self.notify(clean(text), severity="warning", markup=False)
        self.start_load(path, live=True)


class PickerApp(App[dict[str, Any] | None]):
    """The picker as an app: returns the chosen session object, or None.

    ``clock`` gives "now" for relative times (tests pin it); ``live_interval`` is how
    often the index is checked for changes (None: never, for tests that drive it);
    ``refresh`` False answers from the index as it is (``--no-refresh``); ``initial``
    is the first load, already asked for (:func:`sessiondex.picker.prefetch`).
    """

    ENABLE_COMMAND_PALETTE = False
    TITLE = "sessiondex pick"

    def __init__(
        self,
        source: Source,
        options: PickerOptions,
        *,
        clock: Callable[[], float] = time.time,
        glyphs: Glyphs = UNICODE,
        live_interval: float | None = 2.0,
        refresh: bool = True,
        initial: Future[Loaded] | None = None,
    ) -> None:
        super().__init__()
        self.initial = initial
        self.source = source
        self.options = options
        self.clock = clock
        self.glyphs = glyphs
        self.live_interval = live_interval
        self.refresh_index = refresh
        self.picker = PickerScreen(options, clock=clock, glyphs=glyphs)
        self._freshness: Freshness | None = None

    def get_default_screen(self) -> Screen[Any]:
        return self.picker

    def on_mount(self) -> None:
        if self.live_interval is not None:
            loop = asyncio.get_running_loop()

            def changed() -> None:  # on the freshness thread
                loop.call_soon_threadsafe(self.picker.reload_live)

            def failed(message: str) -> None:
                loop.call_soon_threadsafe(self._warn, message)

            self._freshness = Freshness(
                self.source, self.live_interval, changed, failed, refresh=self.refresh_index
            )
            self._freshness.start()

    def _warn(self, message: str) -> None:
        self.notify(clean(message), severity="warning", markup=False)

    def on_unmount(self) -> None:
        if self._freshness is not None:
            self._freshness.stop()
