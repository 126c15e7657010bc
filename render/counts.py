"""A count with its noun, as people write it: ``1 session``, ``3 sessions``, ``0 bad lines``.

One function for every summary, note and error line that counts something, in the
lowest layer that prints counts (the CLI, actions and the renderers import it), so
no message says ``1 files`` or hedges with ``session(s)``. Machine formats (json,
jsonl, csv) carry bare numbers and never go through it.
"""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, made plural unless the count is exactly 1 (English says
    ``0 sessions``). ``noun`` ends with the word counted (``"bad line"``, ``"other
    file"``); what follows it goes after the call (``f"{counted(n, 'file')} seen"``).
    The plural adds ``s``; ``plural`` spells it when that is wrong (``"entries"``)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def sessions_and_files(sessions: int, files: int, of: str = "") -> str:
    """``3 sessions and 2 other files (not sessions)``: a count of what cleanup or
    archive did, with the project-level ``*.jsonl`` files that are no sessions (legacy
    ``agent-*.jsonl``, other ``.jsonl``; Claude Code's sweep deletes them too) said
    apart, as the dry run lists them. Counting them as sessions claimed sessions that
    do not exist. No files: the sessions alone; no sessions but files: the files alone.
    ``of`` qualifies both (``"desktop "``: ``1 desktop session``)."""
    said = f"{counted(files, f'other {of}file')} (not sessions)"
    if not files:
        return counted(sessions, f"{of}session")
    return f"{counted(sessions, f'{of}session')} and {said}" if sessions else said
