"""The MCP server: :class:`~sessiondex.mcp_server.service.SessionService` on the official
``mcp`` SDK (``MCPServer``), over stdio or streamable HTTP on a loopback address.

Why it is built this way:

* **One worker thread owns the index.** The SDK runs tools on an event loop (sync tools
  on a pool of threads); SQLite handles belong to the thread that opened them and
  :class:`sessiondex.Index` is not thread-safe, so every call is handed to a single
  worker thread, which also serializes the refreshes.
* **Errors are results.** The SDK turns a ``ToolError`` (and a schema violation) into a
  result with ``isError``; the service raises nothing else, so bad input, a broken index
  or a vanished transcript never ends the server.
* **Stdout is the protocol's.** The SDK's stdio transport moves fd 1 to stderr while it
  serves, so a stray print cannot corrupt the stream; logs go to stderr.
* **Schemas say the rules.** Every argument's type, range and meaning is in its JSON
  schema, and the descriptions say what comes back, the size cap and how to page, because
  a model reads them to decide which tool to call and how.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar, overload

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.types import Resource, Tool, ToolAnnotations
from pydantic import Field, ValidationError

from sessiondex.mcp_server.service import (
    MAX_OFFSET,
    NoSuchSession,
    SessionService,
    Settings,
    UserError,
    cut,
)
from sessiondex.query.limits import MAX_QUERY_CHARS
from sessiondex.render.terminal import neutralize

if TYPE_CHECKING:
    from sessiondex.index import Index

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("sessiondex.mcp")

SERVER_NAME = "sessiondex"
INSTRUCTIONS = """\
Search and read the user's past Claude Code sessions (every project on this machine).
Use search_sessions for "what did we decide about X", "where did we fix Y": each hit has
the session's id, title, project directory, branch, last activity, snippets with the
message_uuid they come from, and the command to resume it. Then call read_session with
ref=<session_id> and around_message=<message_uuid> to read the turns around a hit.
list_sessions shows recent sessions; sessions_for_pr finds the sessions behind a pull
request; resolve_session turns an ID prefix or a session name into one session.
Answers are capped (about {max_chars} characters) and say how to get the rest."""

ReadOnly = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
Writes = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

# Argument types: the JSON schema a model sees is made from these.
Scope = Literal["worktree", "repo", "all"]
ScopeArg = Annotated[
    Scope,
    Field(
        description="worktree: the project of `cwd` only; repo: every git worktree of "
        "cwd's repository; all: every project on this machine."
    ),
]
CwdArg = Annotated[
    str | None,
    Field(
        description="Absolute directory the question is asked from (for scope worktree/repo "
        "and name lookups). Default: the directory the server was started in.",
        min_length=1,
        max_length=4096,
    ),
]
BranchArg = Annotated[
    str | None,
    Field(
        description="Only sessions that were on this git branch (leave it out for any).",
        min_length=1,
        max_length=255,
    ),
]
SinceArg = Annotated[
    str | None,
    Field(
        description="Only sessions active since then: 7d, 12h, 2w, 30m, or a date "
        "such as 2026-11-01 (leave it out for any time).",
        min_length=1,
        max_length=40,
    ),
]
OffsetArg = Annotated[
    int,
    Field(
        description=f"Rows to skip, 0-{MAX_OFFSET}: the offset a previous answer's `more` or"
        " `truncated` gave.",
        ge=0,
        le=MAX_OFFSET,
    ),
]
RefArg = Annotated[
    str,
    Field(
        description="The session: a full session ID, an ID prefix of 8+ hex characters, "
        "its name (title), or the path of its .jsonl transcript under the Claude config "
        "dir's projects/.",
        min_length=1,
        max_length=4096,
    ),
]


class SessiondexServer(MCPServer[Any]):
    """``MCPServer`` whose resource list is live: the newest sessions, each as
    ``session://<id>`` (a static list would be stale the moment a session starts)."""

    def __init__(self, runner: Runner, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.runner = runner

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """A tool call; arguments that fail the tool's schema are one sentence (what
        the README promises for bad input), not pydantic's multi-line report with a
        link to its documentation. A name that is none of the tools is named as the CLI
        names text it was given (made visible, cut short: the SDK echoed a name of any
        length whole), with the tools there are; so is an argument the tool does not
        have, with the arguments it has."""
        schemas = {tool.name: tool.input_schema for tool in await self.list_tools()}
        if name not in schemas:
            raise ToolError(f"no tool {_quoted(name)}; the tools are {', '.join(schemas)}")
        known = list(schemas[name].get("properties", {}))
        unknown = [key for key in arguments or {} if key not in known]
        if unknown:
            # Pydantic drops what no parameter takes: `limt=5` answered 10 rows.
            raise ToolError(
                f"bad arguments for {name}: no argument {_quoted(unknown[0])}"
                + (f" (nor {len(unknown) - 1} more)" if len(unknown) > 1 else "")
                + f"; the arguments are {', '.join(known)}"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, ValidationError):
                raise
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: "
                f"{error['msg'].rstrip('.')}"
                for error in cause.errors()
            )
            raise ToolError(f"bad arguments for {name}: {problems}") from None

    async def run_stdio_async(self) -> None:
        """As the SDK serves stdio, with a line its JSON parser refuses for a lone
        surrogate escape (``"\\ud800"``: JSON text, not Unicode) read again with each
        lone half as U+FFFD (:class:`_SurrogatesMended`). The SDK dropped such a line
        without an answer, so the client waited for one forever."""
        from mcp.server.stdio import stdio_server

        lowlevel = getattr(self, "_lowlevel_server", None)
        if lowlevel is None:  # not the SDK layout this was written for: run it as it is
            await super().run_stdio_async()
            return
        async with stdio_server() as (read_stream, write_stream):
            await lowlevel.run(
                _SurrogatesMended(read_stream),
                write_stream,
                lowlevel.create_initialization_options(),
            )

    async def list_tools(self) -> list[Tool]:
        """The SDK's tools, each schema closed (``additionalProperties: false``): an
        argument no parameter takes is an error (:meth:`call_tool`), and a client that
        checks arguments against the schema first finds that out there."""
        return [
            tool.model_copy(
                update={"input_schema": {**tool.input_schema, "additionalProperties": False}}
            )
            for tool in await super().list_tools()
        ]

    async def list_resources(self) -> list[Resource]:
        try:
            rows = await self.runner.run(self.runner.service.recent_sessions)
        except UserError as exc:
            log.warning("resources/list: %s", exc)
            rows = []
        # A client shows these to a person (Claude Code's @ menu): transcript text in
        # them made visible, as in an error (:func:`shown`); a tool's JSON keeps it exact.
        return [
            Resource(
                uri=f"session://{row['session_id']}",
                name=str(row["session_id"]),
                title=_visible(row.get("title")),
                description=f"{_visible(row.get('cwd') or '?')}"
                f" · {_visible(row.get('git_branch') or '-')}"
                f" · last activity {_visible(row.get('last_activity') or '?')}",
                mime_type="text/markdown",
            )
            for row in rows
        ] + await super().list_resources()


# A tool name quoted back in an error is at most this long (ours are under 20).
NAME_SHOWN_MAX = 64


def _quoted(name: str) -> str:
    """``name`` as an error quotes it: control and bidi characters made visible, and at
    most :data:`NAME_SHOWN_MAX` characters."""
    text = neutralize(name, single_line=True)
    return repr(text if len(text) <= NAME_SHOWN_MAX else text[: NAME_SHOWN_MAX - 1] + "…")


# A field of a resource's title or description is at most this long (a menu line; a
# transcript's branch or directory may be of any length).
RESOURCE_FIELD_CHARS = 300


@overload
def _visible(text: str) -> str: ...
@overload
def _visible(text: str | None) -> str | None: ...
def _visible(text: str | None) -> str | None:
    """Transcript text a client shows a person, on one line with its control and bidi
    characters made visible (render/terminal.py), and cut at RESOURCE_FIELD_CHARS."""
    if text is None:
        return None
    return cut(neutralize(text, single_line=True), RESOURCE_FIELD_CHARS)


def shown(error: UserError, limit: int) -> str:
    """An error for the client, which shows it to a person too: names and paths in it
    come from transcripts, so their control and bidi characters are made visible, as
    the CLI prints them (render/terminal.py). At most ``limit`` characters, as every
    answer: an error may quote what it was given (a 4,096-character ref)."""
    text = neutralize(str(error), single_line=True)
    limit -= ERROR_PREFIX_ROOM
    return text if len(text) <= limit else text[: limit - 1] + "…"


# What the MCP SDK puts before a tool's error ("Error executing tool <name>: "), our
# tool names being short: left free under the cap.
ERROR_PREFIX_ROOM = 64


class Runner:
    """Runs service calls on the one worker thread (see the module docstring)."""

    def __init__(self, service: SessionService) -> None:
        self.service = service
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sessiondex-index")

    async def run(self, call: Callable[[], T]) -> T:
        return await asyncio.wrap_future(self._executor.submit(call))

    async def tool(self, call: Callable[[], str]) -> str:
        """A tool's answer; a :class:`UserError` becomes an error result (``isError``)."""
        try:
            return await self.run(call)
        except UserError as exc:
            raise ToolError(shown(exc, self.service.settings.max_chars)) from None

    def shutdown(self) -> None:
        """Close the index on its own thread, then stop the thread."""
        try:
            self._executor.submit(self.service.close).result(timeout=10)
        except Exception as exc:  # shutting down: say it, never raise
            log.warning("closing the index failed: %r", exc)
        self._executor.shutdown(wait=False, cancel_futures=True)


class _SurrogatesMended:
    """The stdio transport's read stream, with each line the SDK could not parse for a
    lone surrogate escape parsed again: Python's ``json`` takes it, each lone half
    becomes U+FFFD, and the message is validated as the SDK validates a line. Anything
    else that failed passes on as it was (the SDK's own handling)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def receive(self) -> Any:
        return _mended(await self._stream.receive())

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> _SurrogatesMended:
        return self

    async def __anext__(self) -> Any:
        return _mended(await self._stream.__anext__())

    async def __aenter__(self) -> _SurrogatesMended:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)


def _mended(item: Any) -> Any:
    if not isinstance(item, ValidationError):
        return item
    errors = item.errors()
    if not errors or errors[0].get("type") != "json_invalid":
        return item
    line = errors[0].get("input")
    if not isinstance(line, str):
        return item
    import json

    import mcp_types
    from mcp.shared.message import SessionMessage

    from sessiondex.transcripts.reader import without_lone_surrogates

    try:
        text = json.dumps(without_lone_surrogates(json.loads(line)), ensure_ascii=False)
        message = mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except (ValueError, ValidationError):
        return item
    return SessionMessage(message)


def build_server(open_index: Callable[[], Index], settings: Settings) -> SessiondexServer:
    """The server with its tools (the write tools only with ``settings.allow_writes``),
    the ``session://{session_id}`` resource template and the live resource list."""
    service = SessionService(open_index, settings)
    runner = Runner(service)
    cap = settings.max_chars
    server = SessiondexServer(
        runner,
        name=SERVER_NAME,
        title="Claude Code session history (sessiondex)",
        instructions=INSTRUCTIONS.format(max_chars=cap),
        version=_version(),
        log_level="WARNING",
    )

    def tool(text: str, annotations: ToolAnnotations = ReadOnly) -> Callable[[F], F]:
        # Plain text results (structured_output=False): what a model reads is the text.
        return server.tool(
            description=" ".join(text.split()), annotations=annotations, structured_output=False
        )

    @tool(
        f"""Full-text search over past Claude Code sessions: titles, names, tags, branches,
        PR links, prompts and message text (not tool output), ranked best first. Returns
        JSON: per session its session_id, title, cwd (project directory), git_branch,
        last_activity, matched_by, the best snippet, up to 3 `snippets` each with the
        `message_uuid` it comes from (pass it to read_session as around_message to read
        that part), and resume_command (the shell line that reopens the session). Matched
        words are in [brackets]. When no word matches, close titles are offered. The
        answer is capped at {cap} characters (rows beyond it are left out and counted);
        `more` or `truncated` then gives the offset that reaches the rest."""
    )
    async def search_sessions(
        query: Annotated[
            str,
            Field(
                description="Words to look for (matched as typed; the last word also as a "
                "prefix), or a pull/merge request URL.",
                min_length=1,
                max_length=MAX_QUERY_CHARS,  # the web view's q takes as much
            ),
        ],
        scope: ScopeArg = "all",
        cwd: CwdArg = None,
        branch: BranchArg = None,
        since: SinceArg = None,
        limit: Annotated[int, Field(description="Sessions to return, 1-50.", ge=1, le=50)] = 10,
        offset: OffsetArg = 0,
    ) -> str:
        return await runner.tool(
            lambda: service.search_sessions(query, scope, cwd, branch, since, limit, offset)
        )

    @tool(
        f"""Recent Claude Code sessions, newest activity first, like the /resume picker
        (default: every git worktree of the current repository). Returns JSON: per session
        its session_id, title, cwd, git_branch, last_activity, message_count, tag and
        resume_command. Capped at {cap} characters; `more` or `truncated` gives the
        offset of the next page."""
    )
    async def list_sessions(
        scope: ScopeArg = "repo",
        cwd: CwdArg = None,
        branch: BranchArg = None,
        since: SinceArg = None,
        limit: Annotated[int, Field(description="Sessions to return, 1-50.", ge=1, le=50)] = 20,
        offset: OffsetArg = 0,
    ) -> str:
        return await runner.tool(
            lambda: service.list_sessions(scope, cwd, branch, since, limit, offset)
        )

    @tool(
        """Find one session from a reference, by the rules of `claude --resume`: a
        transcript path, a full session ID (this repository first, else another project if
        exactly one has it), an exact name, or an ID prefix of 8+ hex characters. Returns
        JSON with status "found" (matched_by and the session, with its first prompt and PR
        links) or "ambiguous" (the candidates, newest first: call again with one
        session_id). An unknown reference is an error that lists the closest titles."""
    )
    async def resolve_session(ref: RefArg, cwd: CwdArg = None) -> str:
        return await runner.tool(lambda: service.resolve_session(ref, cwd))

    @tool(
        f"""The sessions that created or worked on a pull/merge request (linked with a
        pr-link record), newest first. Returns JSON: per session its session_id, title,
        cwd, git_branch, last_activity, pr_links and resume_command. Capped at {cap}
        characters."""
    )
    async def sessions_for_pr(
        pr: Annotated[
            str,
            Field(
                description="A PR number (42: the current repository's worktrees), a PR/MR "
                "URL (GitHub, GitLab, Bitbucket, Gerrit; any project) or owner/repo#42 "
                "(any project).",
                min_length=1,
                max_length=2000,
            ),
        ],
        cwd: CwdArg = None,
        limit: Annotated[int, Field(description="Sessions to return, 1-50.", ge=1, le=50)] = 20,
    ) -> str:
        return await runner.tool(lambda: service.sessions_for_pr(pr, cwd, limit))

    @tool(
        f"""Read a session's conversation as plain text: the live branch (rewound branches
        left out, as `claude --resume` shows it), one numbered turn per user or assistant
        message, each with its time and uuid; compactions are marked. Paged: offset and
        limit count turns, the header says which turns are shown of how many, and the last
        line gives the offset of the next page. A page is at most {cap} characters and one
        message at most {settings.message_chars} (a longer one ends with a "cut" marker).
        Tool calls and results are left out unless include_tools."""
    )
    async def read_session(
        ref: RefArg,
        around_message: Annotated[
            str | None,
            Field(
                description="A message_uuid from search_sessions: the page is centred on "
                "the turn that holds it (offset is then ignored), in the session or in the "
                "subagent it comes from (there, an offset pages that subagent).",
                max_length=100,
            ),
        ] = None,
        offset: Annotated[
            int | None, Field(description="First turn to show (0-based).", ge=0, le=1_000_000)
        ] = None,
        limit: Annotated[int, Field(description="Turns per page, 1-200.", ge=1, le=200)] = 40,
        include_tools: Annotated[
            bool, Field(description="Also show tool calls and their results (shortened).")
        ] = False,
        cwd: CwdArg = None,
    ) -> str:
        return await runner.tool(
            lambda: service.read_session(ref, around_message, offset, limit, include_tools, cwd)
        )

    if settings.allow_writes:

        @tool(
            """Rename a session: appends the custom-title record Claude Code writes for
            /rename, so the /resume picker, `claude --resume <name>` and the Agent SDK show
            the new name. Returns JSON with the session_id and its title now.""",
            Writes,
        )
        async def rename_session(
            ref: RefArg,
            name: Annotated[str, Field(description="The new name.", min_length=1, max_length=500)],
            cwd: CwdArg = None,
        ) -> str:
            return await runner.tool(lambda: service.rename_session(ref, name, cwd))

        @tool(
            """Set (or, with an empty tag, clear) a session's tag: appends the tag record
            Claude Code and the Agent SDK read (invisible characters removed as the SDK
            does). Returns JSON with the session_id and its tag now.""",
            Writes,
        )
        async def tag_session(
            ref: RefArg,
            tag: Annotated[
                str, Field(description="The tag; an empty string clears it.", max_length=200)
            ],
            cwd: CwdArg = None,
        ) -> str:
            return await runner.tool(lambda: service.tag_session(ref, tag, cwd))

    @server.resource(
        "session://{session_id}",
        name="session",
        title="A Claude Code session as Markdown",
        description=f"The conversation of the session with this ID (or ID prefix), as "
        f"Markdown, capped at {cap} characters; use read_session to page through it.",
        mime_type="text/markdown",
    )
    async def session_resource(session_id: str) -> str:
        try:
            return await runner.run(lambda: service.session_markdown(session_id))
        except NoSuchSession as exc:
            # The SDK's "resource not found" (its code, the URI in the error's data), as
            # for a URI no resource takes: not -32603, which says the server failed.
            raise ResourceNotFoundError(shown(exc, cap)) from None
        except UserError as exc:
            raise ResourceError(shown(exc, cap)) from None

    return server


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("sessiondex")
    except Exception:  # an uninstalled checkout
        return "0"


def parse_loopback(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) → (host, port); anything but a loopback
    address is refused: the server has no authentication, so it must not be reachable
    from another machine."""
    host, sep, port_text = value.rpartition(":")
    if not sep or not (port_text.isascii() and port_text.isdigit()):
        raise ValueError(f"--http wants HOST:PORT, e.g. 127.0.0.1:8765, not {value!r}")
    host = host.strip("[]")
    port = int(port_text)
    if not 0 < port < 65536:
        raise ValueError(f"--http port must be 1-65535, not {port}")
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(
                f"--http {value}: refusing to listen on {host!r}; the MCP server has no "
                "authentication, so it binds to a loopback address only (127.0.0.1, ::1, "
                "localhost)"
            )
    return host, port


def serve(
    open_index: Callable[[], Index],
    settings: Settings,
    http: tuple[str, int] | None = None,
) -> None:
    """Run until the client goes away (stdio: stdin closes) or SIGINT/SIGTERM (HTTP)."""
    server = build_server(open_index, settings)
    runner = server.runner
    mode = "read-only" if not settings.allow_writes else "with rename/tag"
    try:
        if http is None:
            print(f"sessiondex mcp: serving over stdio ({mode})", file=sys.stderr)
            server.run("stdio")
        else:
            host, port = http
            from mcp.server.transport_security import TransportSecuritySettings

            shown = f"[{host}]" if ":" in host else host
            print(f"sessiondex mcp: serving on http://{shown}:{port}/mcp ({mode})", file=sys.stderr)
            server.run(
                "streamable-http",
                host=host,
                port=port,
                transport_security=TransportSecuritySettings(
                    enable_dns_rebinding_protection=True,
                    allowed_hosts=[f"{shown}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"],
                    allowed_origins=[
                        f"http://{shown}:*",
                        "http://127.0.0.1:*",
                        "http://localhost:*",
                        "http://[::1]:*",
                    ],
                ),
            )
    except KeyboardInterrupt:
        pass
    finally:
        runner.shutdown()
