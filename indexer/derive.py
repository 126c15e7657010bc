"""Session fields derived from records, one record at a time.

Every rule of docs/session-fields.md is a fold over the file's records: last-wins fields,
first-seen fields and counters. Because a fold can resume from its stored state, an
appended tail updates a session without re-reading the file, and the result equals a
fold over the whole file (the incremental == rebuild invariant).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from sessiondex.transcripts.pr_urls import (
    PullRequest,
    find_pr_urls,
    is_link_text,
    parse_pr_url,
    unknown_forge_link,
)
from sessiondex.transcripts.records import (
    CHAIN_TYPES,
    MESSAGE_TYPES,
    FirstPromptState,
    content_texts,
    get_str,
    timestamp_ms,
)
from sessiondex.transcripts.windows import in_head_window


@dataclass
class SessionState:
    """The ``sessions`` columns that records determine (file facts are set apart)."""

    cwd: str | None = None
    custom_title: str | None = None
    ai_title: str | None = None
    agent_name: str | None = None
    summary: str | None = None
    last_prompt: str | None = None
    first_prompt: str | None = None
    prompt_fallback: str | None = None
    first_command: str | None = None
    seen_real_prompt: int = 0
    tag: str | None = None
    git_branch: str | None = None
    created_ms: int | None = None
    last_activity_ms: int | None = None
    message_count: int = 0
    raw_message_count: int = 0
    entrypoint: str | None = None
    is_sidechain: int | None = None
    forked_from_session: str | None = None
    forked_from_message: str | None = None
    # What Claude Code's picker and --continue hide besides the above: a team member's
    # session, a background daemon's, and one whose conversation went on in another
    # session (``continued-in``); docs/session-fields.md.
    team_name: str | None = None
    session_kind: str | None = None
    seen_parent_link: int = 0  # the first record with a parentUuid key was read
    continued_in: str | None = None
    # Claude Code's head/tail window test for desktop sessions, answered from the index
    # (transcripts/retention.py window_desktop): ``head_entrypoint``, the first string
    # ``entrypoint`` when its whole line lies in the first 64 KiB (what the head window
    # yields; settled once the first is read, as appends never move it), and the last
    # one with the byte offset of its line (the tail window moves as the file grows).
    # Index-only columns: the team store does not keep them (see ``columns``).
    head_entrypoint: str | None = None
    last_entrypoint: str | None = None
    last_entrypoint_offset: int | None = None
    # Collections written to their own tables; new items only, per pass.
    new_branches: list[str] = field(default_factory=list)
    new_pr_links: list[PullRequest] = field(default_factory=list)
    new_pending_stamps: list[object] = field(default_factory=list)

    def finish(self) -> None:
        """Settle what apply() deferred: the last parseable timestamp of this pass."""
        for raw in reversed(self.new_pending_stamps):
            stamp = timestamp_ms({"timestamp": raw})
            if stamp is not None:
                self.last_activity_ms = stamp
                break
        self.new_pending_stamps.clear()

    # Columns of SQLite's ``sessions`` table only (not the team store's).
    INDEX_ONLY: ClassVar[tuple[str, ...]] = (
        "head_entrypoint",
        "last_entrypoint",
        "last_entrypoint_offset",
    )

    @classmethod
    def from_row(cls, row: dict[str, Any] | None) -> SessionState:
        state = cls()
        if row:
            for f in fields(cls):
                if not f.name.startswith("new_") and f.name in row:
                    setattr(state, f.name, row[f.name])
        return state

    def columns(self) -> dict[str, Any]:
        """The columns every store keeps (the team store's ``sessions`` too)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if not f.name.startswith("new_") and f.name not in self.INDEX_ONLY
        }

    def index_columns(self) -> dict[str, Any]:
        """The columns of SQLite's ``sessions`` table: :meth:`columns` and the index-only ones."""
        return {**self.columns(), **{name: getattr(self, name) for name in self.INDEX_ONLY}}

    def _prompt_state(self) -> FirstPromptState:
        return FirstPromptState(
            prompt=self.first_prompt,
            command_fallback=self.prompt_fallback,
            first_command=self.first_command,
            seen_real=bool(self.seen_real_prompt),
        )

    def apply(
        self,
        record: dict[str, Any],
        known_branches: set[str],
        known_links: set[str],
        line_offset: int | None = None,
        line_end: int | None = None,
    ) -> None:
        """Fold one record of the main transcript into the state (``line_offset`` and
        ``line_end``: where its line starts and ends, its newline aside, for the
        window test's ``last_entrypoint_offset`` and ``head_entrypoint``)."""
        kind = record.get("type")
        if not isinstance(kind, str):
            kind = None  # "type": [] or {} is no known type (and unhashable in a set test)
        if self.is_sidechain is None and kind in CHAIN_TYPES:
            self.is_sidechain = 1 if record.get("isSidechain") is True else 0
        raw_stamp = record.get("timestamp")
        if raw_stamp is not None:
            if self.created_ms is None:
                self.created_ms = timestamp_ms(record)
            # Parsed lazily in finish(): only the last parseable one matters.
            self.new_pending_stamps.append(raw_stamp)
        entrypoint = record.get("entrypoint")
        if isinstance(entrypoint, str):
            if self.entrypoint is None:
                self.entrypoint = entrypoint
                if line_end is not None and in_head_window(line_end):
                    self.head_entrypoint = entrypoint
            self.last_entrypoint = entrypoint
            self.last_entrypoint_offset = line_offset
        branch = record.get("gitBranch")  # every record has one: no helper call here
        if branch and isinstance(branch, str):
            self.git_branch = branch
            if branch not in known_branches:
                known_branches.add(branch)
                self.new_branches.append(branch)
        if self.team_name is None:
            team = record.get("teamName")
            if isinstance(team, str) and team:
                self.team_name = team
        if not self.seen_parent_link and "parentUuid" in record:
            # Claude Code takes the kind from the first line that has a parentUuid.
            self.seen_parent_link = 1
            self.session_kind = get_str(record, "sessionKind")
        if self.forked_from_session is None and "forkedFrom" in record:
            origin = record["forkedFrom"]
            if isinstance(origin, dict) and isinstance(origin.get("sessionId"), str):
                self.forked_from_session = origin["sessionId"]
                message = origin.get("messageUuid")
                self.forked_from_message = message if isinstance(message, str) else None
        if kind in MESSAGE_TYPES:
            self.raw_message_count += 1
            if self.cwd is None:
                self.cwd = get_str(record, "cwd")
            if record.get("isMeta") is not True and record.get("isSidechain") is not True:
                self.message_count += 1
            if kind == "user" and not (self.first_prompt is not None and self.seen_real_prompt):
                prompt = self._prompt_state()
                prompt.feed(record)
                self.first_prompt = prompt.prompt
                self.prompt_fallback = prompt.command_fallback
                self.first_command = prompt.first_command
                self.seen_real_prompt = int(prompt.seen_real)
        elif kind == "custom-title":
            value = get_str(record, "customTitle")
            if value is not None:
                self.custom_title = value.strip() or None  # "" clears the name
        elif kind == "ai-title":
            value = get_str(record, "aiTitle")
            if value is not None:
                self.ai_title = value.strip() or None
        elif kind == "agent-name":
            value = get_str(record, "agentName")
            if value is not None:
                self.agent_name = value or None
        elif kind == "summary":
            # The last record's value, "" clearing it (the SDK and Claude Code read the
            # last one and take "" for none); a record without the key changes nothing.
            value = get_str(record, "summary")
            if value is not None:
                self.summary = value or None
        elif kind == "last-prompt":
            value = get_str(record, "lastPrompt")
            if value is not None:
                self.last_prompt = value or None
        elif kind == "tag":
            # "" clears the tag, and so does a missing or non-string one, as the SDK
            # reads a tag record (only a string value sets it).
            self.tag = get_str(record, "tag") or None
        elif kind == "continued-in":
            self.continued_in = get_str(record, "continuedInSessionId") or self.continued_in
        elif kind == "pr-link":
            link = pr_link_from_record(record)
            if link is not None and link.url not in known_links:
                known_links.add(link.url)
                self.new_pr_links.append(link)


def pr_link_from_record(record: dict[str, Any]) -> PullRequest | None:
    """A ``pr-link`` record's PR, normalized; a forge's URL we cannot parse is kept,
    normalized as far as we can (:func:`unknown_forge_link`), with the record's
    positive ``prNumber``."""
    url = get_str(record, "prUrl")
    if url is None or not is_link_text(url):
        return None
    parsed = parse_pr_url(url)
    if parsed is not None:
        return parsed
    number = record.get("prNumber")
    if not isinstance(number, int) or isinstance(number, bool) or not 0 < number < 2**63:
        return None
    link = unknown_forge_link(url, number)
    if link is None:
        return None
    normalized, host = link
    return PullRequest(
        url=normalized,
        number=number,
        repository=get_str(record, "prRepository") or "",
        host=host,
        provider="github",
    )


def message_texts(record: dict[str, Any], *, include_tools: bool) -> tuple[str, list[PullRequest]]:
    """What a user/assistant record gives the index: its searchable text (prompts and
    replies; tool traffic only with ``include_tools``; nothing from meta records) and the
    PR/MR URLs its text and tool traffic mention. One walk of the content for both."""
    texts, tools = content_texts(record)
    mentions: list[PullRequest] = []
    for part in texts + tools:
        mentions.extend(find_pr_urls(part))
    if record.get("type") == "user" and record.get("isMeta") is True:
        texts = []
    searchable = texts + tools if include_tools else texts
    return "\n".join(p for p in searchable if p), mentions
