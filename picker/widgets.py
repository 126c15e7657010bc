"""The picker's widgets: a virtual session list, the query box, and two small dialogs.

:class:`SessionList` draws only the lines on screen (Textual's line API on a
``ScrollView``): the list holds lightweight :class:`~.model.Row` entries for every
session in scope and asks for the session objects of the rows it is about to draw, so
a scope of 20,000 sessions costs 20,000 small tuples, not 20,000 widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Region, Size
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input, Static

from sessiondex.picker.model import Row
from sessiondex.picker.rows import UNICODE, Columns, Glyphs, row_text
from sessiondex.render.terminal import typed_line


class Picker(Protocol):
    """What the widgets ask of the picker screen (``app.PickerScreen``)."""

    def action_toggle_preview(self) -> None: ...
    def action_right(self) -> None: ...
    def action_left(self) -> None: ...
    def action_help(self) -> None: ...
    def show_header(self, columns: Columns) -> None: ...
    def focus_query(self) -> None: ...
    def type_into_query(self, character: str) -> None: ...
    def backspace_query(self) -> None: ...
    def highlight_changed(self) -> None: ...
    def fetch_objects(self, paths: list[str]) -> None: ...
    def painted(self, generation: int) -> None: ...


CURSOR_STYLE = Style(reverse=True, bold=True)
STRIP_CACHE = 2000  # drawn rows kept


class SessionList(ScrollView, can_focus=True):
    """Every row of the current scope or search, drawn a screen at a time."""

    DEFAULT_CSS = """
    SessionList { height: 1fr; scrollbar-size-vertical: 1; overflow-x: hidden; }
    """

    def __init__(
        self,
        picker: Picker,
        *,
        clock: Callable[[], float],
        glyphs: Glyphs = UNICODE,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.picker = picker
        self.clock = clock
        self.glyphs = glyphs
        self.rows: list[Row] = []
        self.objects: dict[str, dict[str, Any]] = {}
        self.cursor = 0
        self.show_project = False
        # drawn rows, reused while scrolling and moving, and across loads: the key has
        # the row's *look* (a number per path, new when what a row shows of its object
        # changes) rather than which load it came from, so a keystroke that narrows a
        # search redraws only the rows that are new on screen; and the minute (relative
        # times) and the column widths
        self.generation = 0  # the load whose rows these are (the picker's count)
        self._looks: dict[str, int] = {}
        self._next_look = 0
        self._strips: dict[tuple[Row, bool, int, int, int, Columns], Strip] = {}
        self._paint: tuple[Style, Columns, float, int] = (Style(), Columns(title=10), 0.0, 0)
        self._fetch_pending = False

    # ----------------------------------------------------------------- state
    @property
    def current(self) -> Row | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def columns(self) -> Columns:
        return Columns.for_width(self.scrollable_content_region.width, self.show_project)

    def set_rows(self, rows: list[Row], cursor: int, *, screen_offset: int | None = None) -> None:
        """Show ``rows`` with the cursor on ``cursor``; ``screen_offset`` keeps that row
        on the same screen line (a live update must not make the list jump)."""
        self.rows = rows
        self.cursor = max(0, min(cursor, len(rows) - 1)) if rows else 0
        self.virtual_size = Size(self.scrollable_content_region.width, len(rows))
        if screen_offset is not None:
            self.scroll_to(y=max(0, self.cursor - screen_offset), animate=False, immediate=True)
        self.scroll_to_cursor()
        self.refresh()

    def move_to(self, index: int) -> None:
        if not self.rows:
            return
        self.cursor = max(0, min(index, len(self.rows) - 1))
        self.scroll_to_cursor()
        self.refresh()
        self.picker.highlight_changed()

    def move(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def scroll_to_cursor(self) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = round(self.scroll_offset.y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def screen_offset(self) -> int:
        return self.cursor - round(self.scroll_offset.y)

    def visible_paths(self, extra: int = 0) -> list[str]:
        top = round(self.scroll_offset.y)
        height = self.scrollable_content_region.height
        return [r.path for r in self.rows[top : top + height + extra]]

    # ----------------------------------------------------------------- drawing
    def render_lines(self, crop: Region) -> list[Strip]:
        # What every line of one paint shares, computed once per paint (the widget's
        # style is a computed property, and a paint is 20-40 lines).
        width = self.scrollable_content_region.width
        columns = self.columns()
        self._paint = (self.rich_style, columns, self.clock(), width)
        # The rows are laid out for the width they get now: a scrollbar that came or
        # went with the rows changes it, and the header must follow (it is laid out
        # from the same Columns; setting the same text again draws nothing).
        self.picker.show_header(columns)
        lines = super().render_lines(crop)
        self.picker.painted(self.generation)
        return lines

    def render_line(self, y: int) -> Strip:
        base, columns, now, width = self._paint
        index = round(self.scroll_offset.y) + y
        if index >= len(self.rows):
            return Strip.blank(width, base)
        row = self.rows[index]
        obj = self.objects.get(row.path)
        if obj is None:
            self._want(row.path)
        look = self._looks.get(row.path, -1)
        key = (row, index == self.cursor, width, look, int(now // 60), columns)
        strip = self._strips.get(key)
        if strip is not None:
            return strip
        text = row_text(
            obj,
            columns,
            now,
            depth=row.depth,
            forks=row.forks,
            expanded=row.expanded,
            glyphs=self.glyphs,
            ascii_only=self.glyphs is not UNICODE,
        )
        text.truncate(width, pad=True)
        if index == self.cursor:
            text.stylize(CURSOR_STYLE)
        segments = list(text.render(self.app.console, end=""))
        strip = Strip(Segment.apply_style(segments, base)).crop_extend(0, width, base)
        if obj is not None:
            if len(self._strips) > STRIP_CACHE:
                self._strips.clear()
            self._strips[key] = strip
        return strip

    def _want(self, path: str) -> None:
        """A row on screen has no object yet: ask for the screen's worth once drawn."""
        if not self._fetch_pending:
            self._fetch_pending = True
            self.call_after_refresh(self._fetch_missing)

    def _fetch_missing(self) -> None:
        self._fetch_pending = False
        wanted = [p for p in self.visible_paths(extra=50) if p not in self.objects]
        if wanted:
            self.picker.fetch_objects(wanted)

    def add_objects(self, objects: dict[str, dict[str, Any]]) -> None:
        self._note_looks(objects)
        self.objects.update(objects)
        self.refresh()

    def replace_objects(self, objects: dict[str, dict[str, Any]]) -> None:
        self._note_looks(objects)
        self._looks = {path: self._looks[path] for path in objects}
        self.objects = dict(objects)

    def _note_looks(self, objects: dict[str, dict[str, Any]]) -> None:
        """A new look for each object that shows differently from the one it replaces
        (a search answer's ``score``, ``snippet`` and ``matched_by`` are not drawn)."""
        for path, obj in objects.items():
            old = self.objects.get(path)
            if old is None or path not in self._looks or _drawn(old) != _drawn(obj):
                self._next_look += 1
                self._looks[path] = self._next_look

    # ----------------------------------------------------------------- input
    def on_key(self, event: events.Key) -> None:
        """Letters that are commands only here (the query box types them); any other
        printable key goes to the query box, so typing always searches."""
        actions = {
            "j": lambda: self.move(1),
            "k": lambda: self.move(-1),
            "space": self.picker.action_toggle_preview,
            "right": self.picker.action_right,
            "left": self.picker.action_left,
            "question_mark": self.picker.action_help,
            "slash": self.picker.focus_query,
            "backspace": self.picker.backspace_query,
        }
        action = actions.get(event.key)
        if action is not None:
            event.stop()
            event.prevent_default()
            action()
        elif event.is_printable and event.character:
            event.stop()
            event.prevent_default()
            self.picker.type_into_query(event.character)

    def on_click(self, event: events.Click) -> None:
        index = round(self.scroll_offset.y) + event.y
        if 0 <= index < len(self.rows):
            self.move_to(index)


SEARCH_ONLY = ("score", "snippet", "matched_by")  # a search hit's extras, never drawn


def _drawn(obj: dict[str, Any]) -> dict[str, Any]:
    """What a row can show of a session object: everything but the search extras."""
    return {k: v for k, v in obj.items() if k not in SEARCH_ONLY}


class PlainInput(Input):
    """A one-line box holding visible text only (``render.terminal.typed_line``): a
    control character given to it (``pick --query``, a paste) is a space, a bidi
    control is dropped. Textual draws an input's text as it is, so an escape sequence
    in it reached the terminal raw."""

    def validate_value(self, value: str) -> str:
        # Every way a value is set (the constructor, ``value =``); replace() cleans first
        # so the cursor lands after the text actually inserted.
        return typed_line(value)

    def replace(self, text: str, start: int, end: int) -> None:
        super().replace(typed_line(text), start, end)


class QueryBox(PlainInput):
    """The query: always shown, focused at start. Space, ``?``, ← and → are text here,
    except where they cannot be: Space or ``?`` in an empty box, → at the end and ← at
    the start of the text act as they do on the list."""

    def __init__(self, picker: Picker, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.picker = picker

    async def _on_key(self, event: events.Key) -> None:
        if not self.value and event.key in ("space", "question_mark"):
            event.stop()
            event.prevent_default()
            if event.key == "space":
                self.picker.action_toggle_preview()
            else:
                self.picker.action_help()
            return
        await super()._on_key(event)

    def action_cursor_right(self, select: bool = False) -> None:
        if not select and self.cursor_at_end:
            self.picker.action_right()
        else:
            super().action_cursor_right(select)

    def action_cursor_left(self, select: bool = False) -> None:
        if not select and self.cursor_at_start:
            self.picker.action_left()
        else:
            super().action_cursor_left(select)


class TextPrompt(ModalScreen[str | None]):
    """One line of text (a new name, a tag); Enter gives it, Esc cancels."""

    DEFAULT_CSS = """
    TextPrompt { align: center middle; }
    TextPrompt > Vertical {
        width: 70%; min-width: 40; max-width: 90; height: auto;
        border: round $accent; padding: 0 1; background: $surface;
    }
    TextPrompt.-narrow > Vertical { width: 100%; min-width: 0; }
    TextPrompt #prompt, TextPrompt #prompt:focus {
        border: none; height: 1; padding: 0; margin: 1 0 0 0;
    }
    """
    # Narrower than the prompt's 40 columns, it takes the terminal's width: at least 40,
    # its right side (and the end of what is typed) was off the screen.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (40, "-wide")]
    # Ctrl+C too: it leaves the picker everywhere else, and did nothing in the prompt.
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", priority=True),
        Binding("ctrl+c", "cancel", "Cancel", priority=True),
    ]

    def __init__(self, title: str, value: str = "", hint: str = "", placeholder: str = "") -> None:
        super().__init__()
        self.prompt_title = title
        self.value = value
        self.hint = hint
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.prompt_title, style="bold"))
            # By id: Textual's own "Input:focus" border outranks a type selector, and a
            # one-row input with a border has no row left for its text.
            yield PlainInput(value=self.value, placeholder=self.placeholder, id="prompt")
            yield Static(Text(self.hint or "Enter to save, Esc to cancel", style="dim"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


KEYS = [
    ("↑ ↓  Ctrl+P Ctrl+N", "move (j k on the list)"),
    ("PgUp PgDn", "move a page"),
    ("Enter", "choose: print the resume command (or run it with --exec)"),
    ("type", "search titles, text, branches, PR URLs (the box always has the text)"),
    ("Tab", "move between the query box and the list"),
    ("Space  →", "preview (→ first expands a session's forks)"),
    ("←", "collapse forks, or close the preview"),
    ("Ctrl+A", "all projects / back"),
    ("Ctrl+W", "every worktree of this repository / this worktree"),
    ("Ctrl+B", "only sessions on the current git branch / all branches"),
    ("Ctrl+R", "rename the highlighted session"),
    ("Ctrl+T", "tag it (an empty tag clears it)"),
    ("Esc", "clear the query, then leave"),
    ("?", "this help"),
]


class HelpScreen(ModalScreen[None]):
    """The key table; any key closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Static {
        width: auto; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; padding: 0 1; background: $surface;
    }
    """

    def __init__(self, glyphs: Glyphs = UNICODE) -> None:
        super().__init__()
        self.glyphs = glyphs

    def compose(self) -> ComposeResult:
        text = Text("Keys\n", style="bold")
        width = max(len(k) for k, _ in KEYS)
        for key, meaning in KEYS:
            if self.glyphs is not UNICODE:
                key = key.replace("↑", "Up").replace("↓", "Down")
                key = key.replace("→", "Right").replace("←", "Left")
            text.append(key.ljust(width + 2), style="bold")
            text.append(meaning + "\n")
        text.append("any key closes this", style="dim")
        yield Static(text)

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        self.dismiss(None)

    def on_click(self) -> None:
        self.dismiss(None)
