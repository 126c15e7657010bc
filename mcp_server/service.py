"""What the MCP tools answer, as plain synchronous calls on one :class:`sessiondex.Index`.

This module knows nothing of the protocol (``server.py`` maps it onto the SDK): each
method takes already type-checked arguments, checks what a JSON schema cannot say (an
empty query, a relative directory, a transcript path outside the config dirs), asks the
``Index`` and shapes a bounded answer for a model to read:

* every answer is at most ``max_chars`` characters (default 20,000): listings drop their
  last rows and say how many; ``read_session`` pages by turns and says which ``offset``
  comes next; one long message is cut with a marker, so a transcript never arrives whole;
* every failure a caller can cause is a :class:`UserError` with one clear sentence; the
  server turns it into an error result (``isError``), never into a dead server;
* every answer sees the transcripts as they are when it is asked, as each CLI command
  does, without paying for a look at every transcript each time. The ``Index`` is
  opened with its own file-system watcher (:meth:`sessiondex.Index.watch_transcripts`:
  a dirty bit in ``indexer/dirty.py``, set by any event ``sessiondex watch`` would act
  on), and :meth:`sessiondex.Index.renew` before each answer does what the bit says:
  nothing while it is clean (a flag and one ``stat`` per config dir); the ingest of the
  written files alone when appends were all that happened (the common case: the
  calling session writes its own transcript between two calls); otherwise the whole
  check (one ``lstat`` per transcript, ~20 ms at 2,000 sessions) and refresh. The bit is
  cleared first, so a change made meanwhile is not lost. A change lands in the bit a
  few milliseconds after its write (watchdog's threads; ``indexer/dirty.py`` says how
  many); a call inside that window answers without it, and the next one has it. When the watcher cannot start
  (inotify limits, an unsupported file system) or dies, one note goes to stderr and
  every answer checks, as before; a live ``sessiondex watch`` still makes the check
  unnecessary. The server's own writes (rename, tag) update the index before they
  return, whatever the bit says.

It is not thread-safe: the server calls it from one worker thread (SQLite handles belong
to the thread that opened them).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sessiondex.render.counts import counted

if TYPE_CHECKING:
    from sessiondex.index import Index
    from sessiondex.render.conversation import Conversation, Entry, Item, Subagent

log = logging.getLogger("sessiondex.mcp")

T = TypeVar("T")

DEFAULT_MAX_CHARS = 20_000
MIN_MAX_CHARS = 2_000
SNIPPETS_PER_SESSION = 3
TOOL_TEXT_CHARS = 600  # one tool call or result inside read_session(include_tools=true)
RESOURCE_LIST_LIMIT = 50
# C0 controls other than tab and newline, DEL, C1 controls, bidi overrides: a transcript
# may hold terminal escapes; a model gains nothing from them.
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


#: resolve's advice to a person at a shell, as a model calling a tool can follow it.
_SHELL_ADVICE = (
    (
        "run the command from the directory of the one you mean",
        "pass cwd= the directory of the one you mean",
    ),
    ("run the command from its directory", "pass its directory as cwd"),
)


def _for_a_model(message: str) -> str:
    """A not-found message with its shell advice (a model cannot change directory)
    turned into the tool argument that does the same."""
    for said, instead in _SHELL_ADVICE:
        message = message.replace(said, instead)
    return message


#: A string in a JSON answer is at most ``max_chars // FIELD_SHARE`` characters (cut with
#: the marker), and never cut below FIELD_FLOOR; a list of strings (PR links, notes) at
#: most LIST_ITEMS long: a row with one huge field still fits beside others.
FIELD_SHARE = 8
FIELD_FLOOR = 40
LIST_ITEMS = 20


def _bounded(value: Any, chars: int, items: int) -> Any:
    """``value`` (an answer, a row, a field) with every string longer than ``chars`` cut
    (:func:`cut`) and every list of strings longer than ``items`` shortened, its last
    item saying how many were left out. Lists of rows are the caller's to shorten."""
    if isinstance(value, str):
        return cut(value, chars)
    if isinstance(value, dict):
        return {key: _bounded(item, chars, items) for key, item in value.items()}
    if isinstance(value, list):
        if len(value) > items and all(isinstance(item, str) for item in value):
            return [_bounded(item, chars, items) for item in value[:items]] + [
                f"[… {len(value) - items} more]"
            ]
        return [_bounded(item, chars, items) for item in value]
    return value


#: How far ``offset`` may page a listing or a search: each call ranks every row before
#: its page, so deep pages cost what a long page does.
MAX_OFFSET = 500


def _check_offset(offset: int) -> None:
    if not 0 <= offset <= MAX_OFFSET:
        raise UserError(f"offset must be 0 to {MAX_OFFSET}: narrow the question to go further")


class UserError(Exception):
    """A bad argument or a question with no answer: one sentence for the caller."""


class NoSuchSession(UserError):
    """The reference names no session (or names nothing: empty, a NUL): the
    ``session://`` resource answers it as the SDK's resource-not-found error."""


@dataclass
class Settings:
    """How the server answers: the directory questions are asked from (the project Claude
    Code started the server in), whether write tools exist, and the size cap."""

    cwd: str
    allow_writes: bool = False
    max_chars: int = DEFAULT_MAX_CHARS

    @property
    def message_chars(self) -> int:
        """The longest one message may be inside a ``read_session`` page."""
        return max(500, self.max_chars // 4)


class SessionService:
    """The tools' answers over one lazily opened ``Index`` (see the module docstring)."""

    def __init__(self, open_index: Callable[[], Index], settings: Settings) -> None:
        self._open_index = open_index
        self.settings = settings
        self._index: Index | None = None

    # ------------------------------------------------------------------ plumbing
    def index(self) -> Index:
        """The ``Index``, opened on first use and brought up to date for this answer."""
        if self._index is None:
            self._index = self._open_index()
            # Before the first renew: a change made while it checks is then an event.
            self._index.watch_transcripts()
        self._index.renew()
        return self._index

    def close(self) -> None:
        if self._index is not None:
            try:
                self._index.close()
            finally:
                self._index = None

    def answer(self, name: str, call: Callable[[], T]) -> T:
        """Run one tool's work; every failure leaves as a :class:`UserError`.

        A database or file failure also drops the open ``Index`` so the next call opens
        it afresh (a repaired or replaced index is then picked up, and a failure in the
        middle of a refresh is not left in a half-open handle)."""
        from sessiondex.actions.mutations import MutationError
        from sessiondex.indexer.db import IndexFromNewer
        from sessiondex.query.resolve import Ambiguous, NotFound

        try:
            return call()
        except UserError:
            raise
        except IndexFromNewer as exc:  # an upgrade while the server ran: restart it
            log.warning("%s: %s", name, exc)
            self.close()  # the next call looks again, on a new Index
            raise UserError(str(exc)) from None
        except Ambiguous as exc:
            raise UserError(
                f"{exc}; say which one by ID: "
                + "; ".join(_candidate_line(c) for c in exc.candidates[:10])
            ) from None
        except NotFound as exc:
            if exc.archived is not None:
                sid, where = exc.archived.get("session_id"), exc.archived.get("file_path")
                raise UserError(
                    f"Session {sid} is archived ({where}): it cannot be read or changed here until"
                    f" `sessiondex restore {sid}` puts its transcript back."
                ) from None
            text = _for_a_model(str(exc))
            text = text if text.endswith((".", "?")) else f"{text}."
            # resolve's message may already name them ("Did you mean: …?")
            named = all(t in text for t in exc.suggestions)
            hint = (
                f" Closest titles: {', '.join(exc.suggestions)}."
                if exc.suggestions and not named
                else ""
            )
            raise NoSuchSession(text + hint) from None
        except sqlite3.Error as exc:
            from sessiondex.indexer.faults import CANTOPEN, FULL, IO, READONLY, classify, describe

            log.warning("%s: the index failed: %r", name, exc)
            path = self._index.db_path if self._index is not None else None
            self.close()
            if classify(exc) in (READONLY, FULL, CANTOPEN, IO):
                # The CLI's line (which index, what is wrong): trying again would not
                # help, nor would `sessiondex index`. A busy or damaged one passes (the
                # next call waits, or rebuilds it).
                raise UserError(describe(exc, path)) from None
            raise UserError(
                f"the index could not answer ({type(exc).__name__}: {exc}); try again, or run"
                " `sessiondex index` in a terminal"
            ) from None
        except OSError as exc:  # a transcript (or the index file) vanished or is unreadable
            log.warning("%s: %r", name, exc)
            self.close()
            raise UserError(
                f"could not read {exc.filename or 'a file'}: {exc.strerror or exc}"
            ) from None
        except (ValueError, MutationError) as exc:  # a bad since, PR text, name or tag
            raise UserError(str(exc)) from None
        except Exception as exc:  # a bug: logged with its traceback, the server goes on
            log.exception("%s failed", name)
            self.close()
            raise UserError(f"internal error in {name}: {type(exc).__name__}: {exc}") from None

    def _cwd(self, cwd: str | None) -> str:
        if cwd is None:
            return self.settings.cwd
        if "\x00" in cwd or not os.path.isabs(os.path.expanduser(cwd)):
            raise UserError(f"cwd must be an absolute directory path, not {cwd!r}")
        return os.path.normpath(os.path.expanduser(cwd))

    def _inside_roots(self, path: str) -> bool:
        """True when ``path`` (links resolved) lies in a config dir's ``projects/``."""
        assert self._index is not None
        try:
            real = Path(os.path.realpath(path))
        except (OSError, ValueError):
            return False
        for root in self._index.roots:
            projects = Path(os.path.realpath(root / "projects"))
            if real == projects or projects in real.parents:
                return True
        return False

    @staticmethod
    def _no_nul(**texts: str | None) -> None:
        """Text arguments hold no NUL: the team store (PostgreSQL) cannot take one, and a
        local index answers it as a separator; refused the same way for both."""
        for name, value in texts.items():
            if value is not None and "\x00" in value:
                raise UserError(f"{name} cannot contain a NUL character")

    @staticmethod
    def _not_blank(**filters: str | None) -> None:
        """A filter given blank (spaces only) is a mistake, as on the command line
        (``--branch " "`` is a usage error there), not a filter that matches nothing;
        left out, it means any."""
        for name, value in filters.items():
            if value is not None and not value.strip():
                raise UserError(f"{name} is empty: leave it out for any {name}")

    def _check_ref(self, ref: str) -> str:
        """A session reference as ``resolve`` takes it; a path must lie in a config dir."""
        text = ref.strip()
        if not text:
            raise NoSuchSession("ref is empty: give a session ID, an ID prefix, a name or a path")
        if "\x00" in text:
            raise NoSuchSession("ref cannot contain a NUL character")
        # A path is what ``resolve`` reads as one (``….jsonl``, query.resolve._by_path);
        # anything else is a name or an ID, even when a file of that name happens to exist
        # where the server runs (Claude Code starts it in the project: "tests", "docs").
        path = os.path.abspath(os.path.expanduser(text))
        if text.endswith(".jsonl"):
            index = self.index()
            if index.team_dsn is not None:
                raise UserError(
                    f"refusing {ref!r}: the team store answers by session ID or name,"
                    " not by a transcript path"
                )
            if not self._inside_roots(path):
                roots = ", ".join(str(r / "projects") for r in index.roots)
                raise UserError(
                    f"refusing {ref!r}: this server reads only transcripts under {roots}"
                )
        return ref

    def _checked_session(self, session: dict[str, Any]) -> dict[str, Any]:
        """Defence in depth: whatever resolved, it must be a transcript in a config dir
        (on the team store, a session the store holds: no local file is read)."""
        assert self._index is not None
        if self._index.team_dsn is None and not self._inside_roots(session["file_path"]):
            raise UserError(
                f"refusing session {session['session_id']}: its transcript is outside the"
                " configured config dirs"
            )
        return session

    def _dump(self, answer: dict[str, Any], rows_key: str | None = None, offset: int = 0) -> str:
        """JSON text within ``max_chars``. Each string is at most a share of the cap and
        each list of strings at most :data:`LIST_ITEMS` long (:func:`_bounded`: a
        transcript's branch, directory or PR links may be of any length, and one such
        field made a row larger than the cap); then rows are dropped from the end (and
        counted in ``truncated``, with the ``offset`` that reaches them) until it fits,
        but never the first: a row still too big has its fields cut shorter. ``count``
        stays the number of rows given. Cutting the whole text is the last resort."""
        limit = self.settings.max_chars
        chars, items = max(FIELD_FLOOR, limit // FIELD_SHARE), LIST_ITEMS
        text = _json(_bounded(answer, chars, items))
        rows = answer.get(rows_key) if rows_key else None
        if isinstance(rows, list) and len(text) > limit:
            total = len(rows)
            while len(rows) > 1 and len(text) > limit:
                rows.pop()
                if "count" in answer:
                    answer["count"] = len(rows)
                answer.pop("more", None)  # said by "truncated" now, with the offset
                answer["truncated"] = (
                    f"{total - len(rows)} of {total} rows left out to stay within"
                    f" {limit} characters; call again with"
                    f" offset={offset + len(rows)} to see them"
                )
                text = _json(_bounded(answer, chars, items))
        while len(text) > limit and chars > FIELD_FLOOR:
            # One row left (or none to drop), still too big: its fields shorter.
            chars, items = max(FIELD_FLOOR, chars // 2), max(1, items // 2)
            text = _json(_bounded(answer, chars, items))
        if len(text) > limit:
            text = cut(text, limit)
        return text

    # ------------------------------------------------------------------ tools
    def search_sessions(
        self,
        query: str,
        scope: str = "all",
        cwd: str | None = None,
        branch: str | None = None,
        since: str | None = None,
        limit: int = 10,
        offset: int = 0,
    ) -> str:
        text = query.strip()
        if not text:
            raise UserError("query is empty: give words to look for, or a PR/MR URL")
        _check_offset(offset)
        self._no_nul(query=query, branch=branch, since=since)
        self._not_blank(branch=branch, since=since, cwd=cwd)

        def run() -> str:
            from sessiondex.query.search import FUZZY, PARTIAL

            index = self.index()
            outcome = index.search_outcome(
                text,
                scope=scope,
                cwd=self._cwd(cwd),
                branch=branch or None,
                since=since or None,
                limit=offset + limit + 1,  # one more than shown: whether there are more
            )
            hits = outcome.rows[offset : offset + limit]
            snippets = index.message_snippets(
                text, [h["file_path"] for h in hits], per_session=SNIPPETS_PER_SESSION
            )
            sessions = []
            for hit in hits:
                row = summary(hit)
                if hit.get("matched_by"):  # when the search layer says how it matched
                    row["matched_by"] = hit["matched_by"]
                row["snippet"] = hit.get("snippet")
                row["snippets"] = snippets.get(hit["file_path"], [])
                row["resume_command"] = hit.get("resume_command")
                sessions.append(row)
            answer: dict[str, Any] = {"query": text, "scope": scope, "count": len(sessions)}
            if offset:
                answer["offset"] = offset
            # As the CLI heads them: suggestions, which a model must not take for matches.
            if sessions and outcome.kind == PARTIAL:
                answer["match"] = "partial"
                answer["note"] = (
                    f"no session has all of: {', '.join(outcome.words)}; these are the best"
                    " partial matches (each holds some of the words), not matches"
                )
            elif sessions and outcome.kind == FUZZY:
                answer["match"] = "fuzzy"
                answer["note"] = "no exact matches; these are the closest titles, not matches"
            if len(outcome.rows) > offset + limit:
                answer["more"] = (
                    f"more sessions match: call again with offset={offset + len(sessions)},"
                    " or narrow the query"
                    if outcome.kind not in (PARTIAL, FUZZY)
                    else f"there are more suggestions: call again with offset={offset + len(sessions)}"
                )
            if not sessions:
                answer["note"] = "no session matches; try other words" + (
                    "" if scope == "all" else " or scope='all'"
                )
            answer["sessions"] = sessions
            return self._dump(answer, "sessions", offset)

        return self.answer("search_sessions", run)

    def list_sessions(
        self,
        scope: str = "repo",
        cwd: str | None = None,
        branch: str | None = None,
        since: str | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> str:
        self._no_nul(branch=branch, since=since)
        self._not_blank(branch=branch, since=since, cwd=cwd)
        _check_offset(offset)

        def run() -> str:
            rows = self.index().list(
                scope=scope,
                cwd=self._cwd(cwd),
                branch=branch or None,
                since=since or None,
                limit=offset + limit + 1,  # one more than shown: whether there are more
            )
            page = rows[offset : offset + limit]
            sessions = [{**summary(r), "resume_command": r.get("resume_command")} for r in page]
            answer: dict[str, Any] = {"scope": scope, "count": len(sessions)}
            if offset:
                answer["offset"] = offset
            if len(rows) > offset + limit:
                answer["more"] = f"more sessions: call again with offset={offset + len(sessions)}"
            answer["sessions"] = sessions
            return self._dump(answer, "sessions", offset)

        return self.answer("list_sessions", run)

    def resolve_session(self, ref: str, cwd: str | None = None) -> str:
        from sessiondex.query.resolve import Ambiguous

        def run() -> str:
            self._check_ref(ref)
            try:
                found = self.index().resolve(ref, cwd=self._cwd(cwd))
            except Ambiguous as exc:
                return self._dump(
                    {
                        "status": "ambiguous",
                        "message": f"{exc}; call again with one candidate's session_id",
                        "candidates": [summary(c) for c in exc.candidates],
                    },
                    "candidates",
                )
            session = self._checked_session(found.session)
            answer = {
                "status": "found",
                "matched_by": found.matched_by,
                "session": {
                    **summary(session),
                    "first_prompt": _clip(session.get("first_prompt"), 300),
                    "pr_links": [link["url"] for link in session.get("pr_links") or []],
                    "forked_from": session.get("forked_from"),
                    "resume_command": session.get("resume_command"),
                },
                "notes": found.notes + _no_resume_line(session, found.notes),
            }
            return self._dump(answer)

        return self.answer("resolve_session", run)

    def sessions_for_pr(self, pr: str, cwd: str | None = None, limit: int = 20) -> str:
        text = pr.strip()
        if not text:
            raise UserError("pr is empty: give a number (42), a URL or owner/repo#42")
        self._no_nul(pr=pr)

        def run() -> str:
            from sessiondex.query.prs import parse_pr_number

            index = self.index()
            here = self._cwd(cwd)
            # The CLI's from-pr: sessions linked to the PR, then those that only mention
            # it (matched_by says which); a URL or owner/repo#N names one PR anywhere.
            if (pr_number := parse_pr_number(text)) is not None:
                rows = index.from_pr(text, scope="repo", cwd=here)
                how = f"sessions linked to PR #{pr_number} in this repository's worktrees"
            else:
                rows = index.from_pr(text, scope="all", cwd=here)
                how = "sessions linked to that PR/MR, in every project"
            how += ", then those that only mention it"
            sessions = [
                {
                    **summary(r),
                    "matched_by": r.get("matched_by"),
                    "pr_links": [link["url"] for link in r.get("pr_links") or []],
                    "resume_command": r.get("resume_command"),
                }
                for r in rows[:limit]
            ]
            answer: dict[str, Any] = {"pr": text, "how": how, "count": len(sessions)}
            if len(rows) > limit:
                answer["more"] = f"{len(rows) - limit} more; raise limit to see them"
            answer["sessions"] = sessions
            return self._dump(answer, "sessions")

        return self.answer("sessions_for_pr", run)

    def read_session(
        self,
        ref: str,
        around_message: str | None = None,
        offset: int | None = None,
        limit: int = 40,
        include_tools: bool = False,
        cwd: str | None = None,
    ) -> str:
        if around_message and not around_message.strip():
            # Else looked up as a UUID: "message  is not on the live branch of …".
            raise UserError(
                "around_message is empty: leave it out to read from offset, or give a"
                " message_uuid from search_sessions"
            )

        def run() -> str:
            self._check_ref(ref)
            conversation = self.index().conversation(ref, cwd=self._cwd(cwd))
            self._checked_session(conversation.session)
            return self._page(conversation, around_message, offset, limit, include_tools)

        return self.answer("read_session", run)

    def rename_session(self, ref: str, name: str, cwd: str | None = None) -> str:
        if not name.strip():
            raise UserError("name is empty")
        self._no_nul(name=name)

        def run() -> str:
            self._check_ref(ref)
            result = self.index().rename(ref, name, cwd=self._cwd(cwd))
            return self._mutation(result)

        return self.answer("rename_session", run)

    def tag_session(self, ref: str, tag: str, cwd: str | None = None) -> str:
        self._no_nul(tag=tag)

        def run() -> str:
            from sessiondex.transcripts.tags import clean_tag

            self._check_ref(ref)
            index = self.index()
            if tag.strip() and not clean_tag(tag):  # the library's message names untag
                raise UserError(
                    "the tag is empty (after removing invisible characters); give tag"
                    ' "" to clear the tag'
                )
            if tag.strip():
                result = index.tag(ref, tag, cwd=self._cwd(cwd))
            else:
                result = index.untag(ref, cwd=self._cwd(cwd))
            return self._mutation(result)

        return self.answer("tag_session", run)

    def session_markdown(self, session_id: str) -> str:
        """The ``session://{id}`` resource: the conversation as Markdown, capped."""

        def run() -> str:
            self._check_ref(session_id)
            index = self.index()
            found = index.resolve(session_id, cwd=self.settings.cwd)
            session = self._checked_session(found.session)
            text = index.show(session["session_id"], format="md", cwd=self.settings.cwd)
            if len(text) > self.settings.max_chars:
                text = cut_markdown(
                    text,
                    self.settings.max_chars,
                    marker=f"\n[… cut at {self.settings.max_chars} of {len(text)} characters;"
                    f" page through the session with the read_session tool"
                    f" (ref={session['session_id']}, offset=…)]",
                )
            return text

        return self.answer("session resource", run)

    def recent_sessions(self) -> list[dict[str, Any]]:
        """The newest sessions everywhere, for the resource list."""
        return self.answer(
            "resources/list",
            lambda: [
                summary(r)
                for r in self.index().list(
                    scope="all", cwd=self.settings.cwd, limit=RESOURCE_LIST_LIMIT
                )
            ],
        )

    # ------------------------------------------------------------------ helpers
    def _mutation(self, result: Any) -> str:
        session = result.session or {}
        return self._dump(
            {
                "done": result.action,
                # False: the session already was so, and nothing was written
                "changed": result.written,
                "session_id": result.session_id,
                "title": session.get("title"),
                "tag": session.get("tag"),
                "notes": result.notes + result.warnings,
            }
        )

    def _page(
        self,
        conversation: Conversation,
        around_message: str | None,
        offset: int | None,
        limit: int,
        include_tools: bool,
    ) -> str:
        turns, where = _turns(
            conversation.iter_items(),
            conversation.chain,
            include_tools,
            self.settings.message_chars,
        )
        session = conversation.session
        subagent: Subagent | None = None
        centred = False  # the page is centred on around_message
        if around_message:
            key = around_message.strip()
            if key not in where:
                # A search hit may be a subagent's message: page that side conversation.
                for sub in conversation.subagents:
                    sub_turns, sub_where = _turns(
                        sub.iter_items(),
                        sub.thread.chain,
                        include_tools,
                        self.settings.message_chars,
                    )
                    if key in sub_where:
                        turns, where, subagent = sub_turns, sub_where, sub
                        break
                else:
                    raise UserError(
                        f"message {key} is not on the live branch of session"
                        f" {session['session_id']} nor in one of its subagents (it may be"
                        " before a compaction or on a rewound branch); read without"
                        " around_message"
                    )
            centred = subagent is None or offset is None
            if centred:
                offset = max(0, where[key] - limit // 2)
            # else: a subagent's message names the thread, offset the page in it (the
            # footer's "more" for a subagent), since its turns have no ref of their own
        offset = offset or 0
        total = len(turns)
        thread = "subagent" if subagent is not None else "session"
        # Every field is transcript text (a cwd or branch may hold a terminal escape).
        # Each at most a share of the cap, as a JSON answer's fields (_bounded): a header
        # longer than the page left no room for a turn, and the cut took the last line.
        chars = max(FIELD_FLOOR, self.settings.max_chars // FIELD_SHARE)

        def field(key: str, absent: str) -> str:
            return cut(_clean(str(session.get(key) or absent)), chars)

        header = [
            f"session {session['session_id']} · {field('title', '')}",
            f"project: {field('cwd', '?')} · branch: {field('git_branch', '-')}"
            f" · last activity: {field('last_activity', '?')}",
            f"resume: {field('resume_command', '-')}",
        ]
        if offset >= total:
            header.append(
                f"turns: none at offset {offset}; the {thread} has {counted(total, 'turn')}"
            )
            return "\n".join(header) + "\n"
        budget = self.settings.max_chars - sum(len(h) + 1 for h in header) - 200
        shown: list[str] = []
        end = offset
        for turn in turns[offset : offset + limit]:
            block = turn.text()
            if shown and len(block) + sum(len(s) for s in shown) > budget:
                break
            shown.append(block)
            end += 1
        if subagent is not None:
            header.append(
                f"subagent {subagent.agent_type or 'agent'} {subagent.agent_id}: a side"
                " conversation this session started (its own turns, numbered from 0)"
            )
        header.append(
            f"turns {offset}–{end - 1} of {total}"
            + (f" (centred on message {(around_message or '').strip()})" if centred else "")
        )
        if end >= total:
            footer = "[end of subagent]" if subagent is not None else "[end of session]"
        else:
            # Every argument the page depends on: turns are numbered with or without the
            # tool turns, so an offset read without include_tools skipped turns.
            more = [f"ref={session['session_id']}"]
            if subagent is not None:
                more.append(f"around_message={(around_message or '').strip()}")
            more.append(f"offset={end}")
            more.append(f"limit={limit}")
            if include_tools:
                more.append("include_tools=true")
            footer = f"[more: call read_session with {' '.join(more)}]"
        text = "\n".join(header) + "\n\n" + "\n".join(shown) + "\n" + footer + "\n"
        return text if len(text) <= self.settings.max_chars else cut(text, self.settings.max_chars)


#: A turn's time or uuid as shown (both are ~25-36 characters when Claude Code wrote them;
#: around_message takes at most 100).
HEAD_FIELD_CHARS = 100


@dataclass
class Turn:
    """One shown turn of ``read_session``: a message (with its UUID) or a compaction."""

    index: int
    role: str
    uuid: str | None
    timestamp: str | None
    body: str

    def text(self) -> str:
        # The uuid and time are the transcript's strings: cleaned and cut as the rest
        # of the page (a 20,000-character uuid made one turn longer than the page, and
        # the cut took the line saying where the next page starts). A uuid longer than
        # around_message takes could not be passed back anyway.
        head = f"[{self.index}] {self.role}"
        if self.timestamp:
            head += f" · {cut(_clean(self.timestamp), HEAD_FIELD_CHARS)}"
        if self.uuid:
            head += f" · uuid {cut(_clean(self.uuid), HEAD_FIELD_CHARS)}"
        return f"{head}\n{self.body}\n"


def _turns(
    items: Iterable[Item], chain: list[Entry], include_tools: bool, message_chars: int
) -> tuple[list[Turn], dict[str, int]]:
    """A thread's live branch (the main conversation's or a subagent's: its display
    ``items`` and its ``chain``) as turns, and every entry UUID on it → the turn that
    shows it.

    Display merges several transcript entries into one turn (one assistant response
    written as one line per block; parallel tool results), and a search hit names the
    entry, so each entry on the chain maps to the turn at or before it."""
    from sessiondex.render.conversation import Message, Turns

    turns: list[Turn] = []
    numbered = Turns(include_tools)  # what a turn is: the web's session page pages so too
    # One item at a time (the renderer streams the transcript), each body cut at once:
    # memory follows the number of turns, not the transcript's size.
    for item in items:
        if numbered.add(item) is None:
            continue
        if not isinstance(item, Message):
            turns.append(Turn(len(turns), "compaction", None, _stamp(item.timestamp), item.text))
            continue
        parts: list[str] = []
        for block in item.blocks:
            if block.kind == "text" and block.text.strip():
                parts.append(block.text)
            elif include_tools and block.kind == "tool_use":
                parts.append(
                    f"[tool call {block.name}] {_clip(' '.join(block.text.split()), TOOL_TEXT_CHARS)}"
                )
            elif include_tools and block.kind == "tool_result":
                label = "tool error" if block.is_error else "tool result"
                parts.append(f"[{label}] {_clip(block.text, TOOL_TEXT_CHARS)}")
        body = cut(_clean("\n".join(parts)), message_chars)
        role = "summary of earlier conversation" if item.is_compact_summary else item.role
        turns.append(Turn(len(turns), role, item.uuid, _stamp(item.timestamp), body))
    return turns, numbered.where(chain)


# ------------------------------------------------------------------ shaping


def summary(session: dict[str, Any]) -> dict[str, Any]:
    """The fields a model needs to tell sessions apart (the full object is ~25 keys)."""
    return {
        "session_id": session.get("session_id"),
        "title": _clip(session.get("title"), 300),
        "cwd": session.get("cwd"),
        "git_branch": session.get("git_branch"),
        "last_activity": session.get("last_activity"),
        "message_count": session.get("message_count"),
        "tag": session.get("tag"),
    }


def _candidate_line(session: dict[str, Any]) -> str:
    return (
        f"{session.get('session_id')} ({_clip(session.get('title'), 80)},"
        f" {session.get('cwd') or '?'}, {session.get('last_activity') or '?'})"
    )


def cut(text: str, limit: int, marker: str | None = None) -> str:
    """``text`` within ``limit`` characters, ending with a marker that says how much was
    cut (so a reader never mistakes a cut message for a whole one)."""
    if len(text) <= limit:
        return text
    if marker is not None:
        return text[: max(0, limit - len(marker))] + marker
    keep = limit
    for _ in range(3):  # the note's length depends on the count it reports
        note = f" [… cut: {len(text) - keep} more characters]"
        keep = max(0, limit - len(note))
    return text[:keep] + f" [… cut: {len(text) - keep} more characters]"


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _open_fence(markdown: str) -> str | None:
    """The fence of a code block ``markdown`` leaves open at its end, if any."""
    open_fence: str | None = None
    for line in markdown.splitlines():
        match = _FENCE_RE.match(line)
        if match is None:
            continue
        run = match.group(1)
        if open_fence is None:
            open_fence = run
        elif (
            run[0] == open_fence[0] and len(run) >= len(open_fence) and not line.strip()[len(run) :]
        ):
            open_fence = None
    return open_fence


def cut_markdown(text: str, limit: int, marker: str) -> str:
    """Markdown within ``limit`` characters: whole lines, a code block left open by the
    cut closed, then ``marker``. Cut inside a fence, the marker was read as code."""
    keep = max(0, limit - len(marker))
    for _ in range(3):  # the closing fence takes room too
        head = text[:keep]
        if "\n" in head:
            head = head[: head.rfind("\n") + 1]
        fence = _open_fence(head)
        closing = "" if fence is None else fence + "\n"
        if len(head) + len(closing) + len(marker) <= limit:
            return head + closing + marker
        keep = max(0, len(head) - len(closing) - 1)
    return cut(text, limit)


def _clip(value: Any, limit: int) -> Any:
    return cut(value, limit) if isinstance(value, str) else value


def _clean(text: str) -> str:
    return _CONTROL_RE.sub("", text)


def _stamp(timestamp: str | None) -> str | None:
    """``2026-11-01 10:00:01Z``: the transcript's UTC time without milliseconds."""
    if not timestamp:
        return None
    text = timestamp.replace("T", " ")
    if "." in text and text.endswith("Z"):
        text = text[: text.index(".")] + "Z"
    return text


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def _no_resume_line(session: dict[str, Any], notes: list[str]) -> list[str]:
    """Why a session has no resume line when it is not archived and no note said so: a
    config dir Claude Code cannot be pointed at (its path is not in NFC)."""
    from sessiondex.transcripts.config import unreachable_reason

    if session.get("resume_command"):
        return []
    reason = unreachable_reason(session.get("config_dir"))
    if reason is None:
        return []
    return [] if any(reason in note for note in notes) else [reason]
