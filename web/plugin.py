"""The Datasette plugin: routes for the sessiondex pages, the refresh before each
request, security headers, and session IDs in Datasette's own tables linked to the
session page.

The plugin is registered by ``sessiondex serve`` (:func:`sessiondex.web.app.build`), not
through a ``datasette`` entry point: it replaces Datasette's home page, which no other
``datasette`` run on the same machine should get. Its hooks act only on a Datasette
that :func:`~sessiondex.web.app.build` made (one holding a :class:`WebIndex`).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import quote

from datasette import hookimpl as _hookimpl
from datasette.utils.asgi import Response, asgi_static
from jinja2 import Environment, StrictUndefined, TemplateError
from markupsafe import Markup

from sessiondex.indexer.db import IndexFromNewer
from sessiondex.render.terminal import neutralize
from sessiondex.transcripts.reader import MAX_LINE_BYTES
from sessiondex.web import pages
from sessiondex.web.conversation import esc, pygments_css
from sessiondex.web.hosts import host_of, is_loopback
from sessiondex.web.state import WebIndex

HERE = Path(__file__).resolve().parent
STATIC_DIR = HERE / "static"
TEMPLATE_DIR = HERE / "templates"
STATIC_PREFIX = "/-/sessiondex/static/"

#: Our pages run no inline script and load nothing from elsewhere; a transcript string
#: that escaped escaping still could not run or phone home.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
#: Datasette's own pages (tables, rows, SQL, ``/-/``) run a few inline scripts from its
#: templates, allowed by their hashes (:func:`datasette_csp`), and carry inline styles
#: (``style=`` attributes, one of them sized by the query, and the SQL editor's
#: ``<style>``), hence ``'unsafe-inline'`` for styles only: a style cannot run code, and
#: with nothing else allowed from another origin it cannot send anything there either.
DATASETTE_CSP = (
    "default-src 'none'; script-src {scripts}; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'; object-src 'none'"
)
# An inline script in a template: ``<script>`` without ``src``.
_INLINE_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.DOTALL)
_SRC_ATTR = re.compile(r"\bsrc\s*=")
#: What Datasette's views give its inline scripts' variables: table.html sets
#: ``DATASETTE_ALLOW_FACET`` from the ``allow_facet`` setting. A script using any other
#: variable (a plugin's ``extra_body_script``) gets no hash and does not run.
_SCRIPT_CONTEXTS: tuple[dict[str, str], ...] = (
    {"datasette_allow_facet": "true"},
    {"datasette_allow_facet": "false"},
)
#: On every response, Datasette's pages too.
COMMON_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",  # search words and paths stay on this machine
    "x-frame-options": "DENY",
}
SESSION_ARG = r"[A-Za-z0-9_-]{1,128}"  # an ID or a prefix: never a path
DATABASE_NAME = "sessiondex"

F = TypeVar("F", bound=Callable[..., Any])
hookimpl = cast(Callable[[F], F], _hookimpl)  # pluggy's marker, typed for mypy
hookimpl_first = cast(Callable[[F], F], _hookimpl(tryfirst=True))

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def web_index(datasette: Any) -> WebIndex | None:
    """The WebIndex of a Datasette built by ``sessiondex serve``, else None."""
    state = getattr(datasette, "sessiondex", None)
    return state if isinstance(state, WebIndex) else None


def _state(datasette: Any) -> WebIndex:
    state = web_index(datasette)
    assert state is not None
    return state


def _args(request: Any) -> dict[str, str]:
    """Query parameters, the first value of each (a NUL cannot reach SQLite)."""
    return {k: request.args.get(k, "").replace("\x00", "") for k in request.args.keys()}


async def _page(
    datasette: Any, request: Any, template: str, context: Mapping[str, Any], status: int = 200
) -> Response:
    body = await datasette.render_template(
        template, {"static": STATIC_PREFIX, **context}, request=request
    )
    return Response.html(
        body,
        status=status,
        headers={"content-security-policy": CSP, "cache-control": "no-cache"},
    )


async def _not_found(datasette: Any, request: Any, message: str) -> Response:
    return await _page(datasette, request, "sessiondex_404.html", {"message": message}, 404)


async def _bad_request(datasette: Any, request: Any, exc: pages.BadRequest) -> Response:
    """A 400 page saying what of the request cannot be taken, and a way on."""
    context = {"heading": "Bad request", "message": str(exc), "link": exc.link}
    return await _page(datasette, request, "sessiondex_404.html", context, 400)


# ----------------------------------------------------------------- pages
async def home(request: Any, datasette: Any) -> Response:
    args = _args(request)
    context = await _state(datasette).run(lambda index: pages.home(index, args))
    return await _page(datasette, request, "sessiondex_home.html", context)


async def search(request: Any, datasette: Any) -> Response:
    args = _args(request)
    try:
        context = await _state(datasette).run(lambda index: pages.search(index, args))
    except pages.BadRequest as exc:  # a q over the length limit
        return await _bad_request(datasette, request, exc)
    return await _page(datasette, request, "sessiondex_search.html", context)


async def session(request: Any, datasette: Any) -> Response:
    arg = request.url_vars["session_id"]
    args = _args(request)
    try:
        context = await _state(datasette).run(lambda index: pages.session(index, arg, args))
        if "conversation" in context:  # read and rendered off the index's thread
            loop = asyncio.get_running_loop()
            context = await loop.run_in_executor(None, pages.render_session, context)
    except pages.PageNotFound as exc:
        return await _not_found(datasette, request, str(exc))
    except pages.BadRequest as exc:
        return await _bad_request(datasette, request, exc)
    template = "sessiondex_choose.html" if "choose" in context else "sessiondex_session.html"
    return await _page(datasette, request, template, context)


async def pygments_stylesheet() -> Response:
    return Response(
        pygments_css(), content_type="text/css; charset=utf-8", headers=dict(COMMON_HEADERS)
    )


def _get_only(view: Callable[..., Awaitable[Response]]) -> Callable[..., Awaitable[Response]]:
    """Our pages only read: anything but GET/HEAD is refused (405)."""

    async def guarded(request: Any, datasette: Any) -> Response:
        if request.method not in ("GET", "HEAD"):
            return Response.text("read-only: only GET", status=405, headers={"allow": "GET"})
        return await view(request, datasette)

    guarded.__name__ = view.__name__
    return guarded


# ----------------------------------------------------------------- hooks
#: The longest string or blob Datasette's connections make or read: twice the longest
#: transcript line read (``transcripts.reader.MAX_LINE_BYTES``), so every value the
#: index holds, a message's decompressed text too, still fits.
MAX_VALUE_BYTES = 2 * MAX_LINE_BYTES


@hookimpl
def prepare_connection(conn: Any, database: str, datasette: Any) -> None:
    """Datasette's own connections to the index (its table pages and canned queries)
    get the function that reads the compressed message text: the view
    ``message_text`` and ``snippet()`` on ``messages_fts`` need it."""
    if web_index(datasette) is None or database != DATABASE_NAME:
        return
    from sessiondex.index import prepare_connection as prepare

    prepare(conn)
    # One statement step that builds a huge value (``hex(zeroblob(4e8))``: 1.2 GB and
    # 2 s in one step) is not cut by the time limit, which SQLite's progress handler
    # checks between steps: no value here is longer than one transcript line can give.
    setlimit = getattr(conn, "setlimit", None)  # Python 3.11+
    length = getattr(sqlite3, "SQLITE_LIMIT_LENGTH", None)
    if setlimit is not None and length is not None:
        setlimit(length, MAX_VALUE_BYTES)


def _visible(value: Any) -> Any:
    """Jinja's ``finalize``: every plain string a template prints (a title, a branch, a
    directory, a cell of Datasette's own tables) with its control and bidi characters
    made visible, as ``show`` prints them; HTML built here (``Markup``) is made from
    text that went through :func:`~sessiondex.web.conversation.esc` already."""
    if type(value) is str:
        return neutralize(value)
    return value


@hookimpl
def prepare_jinja2_environment(env: Any, datasette: Any) -> None:
    if web_index(datasette) is not None:
        env.finalize = _visible


@hookimpl
def register_routes(datasette: Any) -> list[tuple[str, Any]]:
    if web_index(datasette) is None:
        return []
    return [
        (r"^/$", _get_only(home)),
        (r"^/search$", _get_only(search)),
        (rf"^/session/(?P<session_id>{SESSION_ARG})$", _get_only(session)),
        (r"^/-/sessiondex/pygments\.css$", pygments_stylesheet),
        (r"^/-/sessiondex/static/(?P<path>.*)$", asgi_static(STATIC_DIR)),
    ]


@hookimpl
def asgi_wrapper(datasette: Any) -> Callable[[ASGIApp], ASGIApp]:
    def wrap(app: ASGIApp) -> ASGIApp:
        if web_index(datasette) is None:
            return app  # another Datasette in this process: not ours to change
        # Our pages send the stricter CSP themselves; every other response gets this one.
        csp = datasette_csp(datasette.jinja_env)
        default_headers = {**COMMON_HEADERS, "content-security-policy": csp}

        async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
            state = web_index(datasette)
            if state is None or scope.get("type") != "http":
                await app(scope, receive, send)
                return
            target = _origin_form(scope)
            if isinstance(target, tuple) and target[0] != 204:
                await _refuse(send, *target)
                return
            if not isinstance(target, tuple):
                scope = target
            if scope.get("http_version") == "1.1" and _host(scope) is None:
                # uvicorn's h11 parser refuses it before us, its httptools one does not.
                await _refuse(send, 400, _NO_HOST)
                return
            if state.loopback_only and not _names_loopback(scope):
                await _refuse(send, 421, _MISDIRECTED)
                return
            if isinstance(target, tuple):  # OPTIONS *, its host judged as any request's
                await _refuse(send, *target)
                return
            started = False

            async def send_with_headers(message: dict[str, Any]) -> None:
                nonlocal started
                if message.get("type") == "http.response.start":
                    started = True
                    names = {bytes(k).lower() for k, _ in message.get("headers", [])}
                    extra = [
                        (k.encode(), v.encode())
                        for k, v in default_headers.items()
                        if k.encode() not in names
                    ]
                    message = {**message, "headers": [*message.get("headers", []), *extra]}
                await send(message)

            path = str(scope.get("path", ""))
            try:
                if not path.startswith(("/-/static", "/-/sessiondex/", "/favicon")):  # assets
                    try:
                        await state.fresh()
                    except IndexFromNewer as exc:  # an upgrade while serving: restart it
                        _say_unavailable(scope, str(exc))
                        await _refuse(send, 503, f"{exc}\n".encode())
                        return
                await app(scope, receive, send_with_headers)
            except Exception:
                # uvicorn answers an error raised before the answer began with its own
                # bare 500, without the headers every other answer carries. Ours has
                # them; raised on, the error still reaches the server's log.
                if not started:
                    await _refuse(send, 500, _INTERNAL_ERROR)
                raise

        return wrapped

    return wrap


#: The path of a request said on the server's stderr is at most this long.
_PATH_SAID_MAX = 200


def _say_unavailable(scope: Scope, why: str) -> None:
    """One line on the server's stderr, where ``serve`` says what goes wrong (see
    ``web/state.py``), for a 503: the browser shows the page, the person who ran
    ``serve`` saw nothing. The path without its query (search words stay out of
    logs), made visible and cut; ``why``'s first line."""
    import sys

    path = neutralize(str(scope.get("path", "")), single_line=True)
    if len(path) > _PATH_SAID_MAX:
        path = path[: _PATH_SAID_MAX - 1] + "…"
    method = neutralize(str(scope.get("method", "GET")), single_line=True)[:20]
    reason = why.strip().splitlines()[0] if why.strip() else "unavailable"
    print(f"sessiondex serve: 503 for {method} {path}: {reason}", file=sys.stderr)


def inline_script_hashes(templates: Iterable[str]) -> list[str]:
    """The CSP sources (``'sha256-…'``) of the inline scripts these template sources
    can render.

    Hashes, not ``'unsafe-inline'`` nor a nonce added to the page afterwards: a
    ``<script>`` that a transcript string slipped into a page is not one of the
    template's, so it does not run. Each script is rendered alone with the values
    Datasette's views give it (:data:`_SCRIPT_CONTEXTS`); its text, as the browser
    hashes it, is the rendered text between the tags."""
    # The text between the tags, its last newline too (a template's end loses it).
    render = Environment(autoescape=True, undefined=StrictUndefined, keep_trailing_newline=True)
    sources: set[str] = set()
    for source in templates:
        for match in _INLINE_SCRIPT.finditer(source):
            if _SRC_ATTR.search(match.group("attrs")):
                continue
            for context in _SCRIPT_CONTEXTS:
                try:
                    text = render.from_string(match.group("body")).render(context)
                except TemplateError:  # a variable no view here gives it
                    continue
                digest = hashlib.sha256(text.encode("utf-8")).digest()
                sources.add(f"'sha256-{base64.b64encode(digest).decode('ascii')}'")
    return sorted(sources)


def datasette_csp(env: Any) -> str:
    """:data:`DATASETTE_CSP` with the hashes of the inline scripts in every template
    ``env`` (Datasette's Jinja environment) can load: its own, ours and any plugin's,
    read where they are installed, so an upgrade that changes them changes the hashes."""
    loader = env.loader
    templates = (loader.get_source(env, name)[0] for name in loader.list_templates())
    return DATASETTE_CSP.format(scripts=" ".join(["'self'", *inline_script_hashes(templates)]))


def _origin_form(scope: Scope) -> Scope | tuple[int, bytes]:
    """The request with its target as a path (RFC 9112 §3.2), or the status and line to
    refuse it with.

    A request target other than a path reached Datasette as one (uvicorn's h11 parser
    passes the target on as it came): ``GET http://evil.test/`` was redirected to
    ``http://evil.test``, and ``OPTIONS *`` or ``GET x`` failed with 500. The
    absolute form (what a client sends to a proxy) is taken as RFC 9112 §3.2.2 says:
    its authority is the request's host, whatever the ``Host`` header says, so the
    loopback check judges that host, and its path is the path. ``OPTIONS *`` asks
    what the server allows: GET and HEAD. Anything else is not a request target."""
    from urllib.parse import unquote_to_bytes, urlsplit

    raw = bytes(scope.get("raw_path") or str(scope.get("path", "")).encode("latin-1"))
    if raw.startswith(b"/"):
        resolved = _without_dot_segments(raw)
        if resolved == raw:
            return scope
        path = unquote_to_bytes(resolved).decode("utf-8", "replace")
        return {**scope, "path": path, "raw_path": resolved}
    if raw == b"*":
        if scope.get("method") == "OPTIONS":
            return 204, b""
        return 400, _BAD_TARGET
    try:
        parts = urlsplit(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return 400, _BAD_TARGET
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
        return 400, _BAD_TARGET  # RFC 9110 §4.2.4: userinfo in an http URI is an error
    path = _without_dot_segments((parts.path or "/").encode("ascii")).decode("ascii")
    headers = [(k, v) for k, v in scope.get("headers", []) if bytes(k).lower() != b"host"]
    return {
        **scope,
        "path": unquote_to_bytes(path).decode("utf-8", "replace"),
        "raw_path": path.encode("ascii"),
        "headers": [*headers, (b"host", parts.netloc.encode("ascii"))],
    }


def _without_dot_segments(raw: bytes) -> bytes:
    """A path's ``.`` and ``..`` segments resolved (RFC 3986 §5.2.4), written plainly or
    percent-encoded, as a browser resolves them before it sends a URL. Others (curl
    ``--path-as-is``, a script) send them as typed, and get the page the browser gets."""
    from urllib.parse import unquote_to_bytes

    segments = raw.split(b"/")[1:]
    names = [unquote_to_bytes(segment) for segment in segments]
    if b"." not in names and b".." not in names:
        return raw
    kept: list[bytes] = []
    for i, (segment, name) in enumerate(zip(segments, names, strict=True)):
        if name in (b".", b".."):
            if name == b".." and kept:
                kept.pop()
            if i == len(segments) - 1:
                kept.append(b"")  # "/search/.." names the folder: "/"
        else:
            kept.append(segment)
    return b"/" + b"/".join(kept)


_BAD_TARGET = b"400 Bad Request: the request target must be a path such as /search.\n"


def _host(scope: Scope) -> str | None:
    """The request's ``Host`` header, None when it has none."""
    for name, value in scope.get("headers", []):
        if bytes(name).lower() == b"host":
            return bytes(value).decode("latin-1")
    return None


def _names_loopback(scope: Scope) -> bool:
    """Whether the request's ``Host`` names a loopback host. An HTTP/1.0 request may have
    none (an HTTP/1.1 one without is refused first): no browser sends that."""
    host = _host(scope)
    return host is None or is_loopback(host_of(host))


# RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host.
_NO_HOST = b"400 Bad Request: an HTTP/1.1 request must have a Host header.\n"
_INTERNAL_ERROR = b"500 Internal Server Error: see the server's log.\n"
_MISDIRECTED = (
    b"421 Misdirected Request: this sessiondex serves http://127.0.0.1 and "
    b"http://localhost only (a page may not reach it through another name).\n"
)


def refusal_headers() -> list[tuple[bytes, bytes]]:
    """The security headers of a line of plain text answered before Datasette sees the
    request: ours (:func:`_refuse`) and uvicorn's own 400 (``web/server.py``)."""
    return [
        (b"content-security-policy", CSP.encode()),
        *((k.encode(), v.encode()) for k, v in COMMON_HEADERS.items()),
    ]


async def _refuse(send: Send, status: int, body: bytes) -> None:
    """Answer ``status`` with a line of plain text, before Datasette sees the request;
    204 (``OPTIONS *``) with what is allowed and no content (RFC 9110 §8.6: not even a
    length)."""
    if status == 204:
        described = [(b"allow", b"GET, HEAD")]
    else:
        described = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),  # else sent chunked
        ]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*described, *refusal_headers()],
        }
    )
    await send({"type": "http.response.body", "body": body})


@hookimpl
def register_magic_parameters(datasette: Any) -> list[tuple[str, Callable[[str, Any], None]]]:
    """``sessions_for_pr``'s check of its ``pr`` (``query.saved``): a PR it cannot read
    fails the query with ``from-pr``'s message, which Datasette shows on the page and
    in the JSON (``"error"``, status 400) as any query's error."""
    if web_index(datasette) is None:
        return []
    from sessiondex.query.saved import PR_CHECK_PREFIX

    return [(PR_CHECK_PREFIX, _check_pr)]


def _check_pr(key: str, request: Any) -> None:
    from sessiondex.query.saved import PR_CHECK_SUFFIX, pr_problem

    if key != PR_CHECK_SUFFIX:
        raise KeyError(key)  # Datasette's answer to an unknown magic parameter
    problem = pr_problem((request.args.get("pr") or "").replace("\x00", ""))
    if problem is not None:
        # What Datasette reports as the query's error (sqlite3 raises it as it binds).
        raise sqlite3.DatabaseError(problem)


@hookimpl
def render_cell(value: Any, column: str, database: str | None, datasette: Any) -> Markup | None:
    """A session ID in Datasette's tables and queries links to its session page."""
    if web_index(datasette) is None or database != DATABASE_NAME or column != "session_id":
        return None
    if not isinstance(value, str) or not value:
        return None
    return Markup(f'<a href="/session/{esc(quote(value, safe=""))}">{esc(value)}</a>')


# What Datasette's table page raises, with DatasetteError's default status (500), for a
# ``?_sort=``/``?_sort_desc=`` it cannot take: a column that is not there, or both at once.
_REFUSED_SORT = ("Cannot sort table by ", "Cannot use _sort and _sort_desc at the same time")


# What Datasette's pages raise reading a request parameter they take as given: a
# ``_through`` or ``_facet`` that is not the JSON they expect (ValueError, KeyError), a
# ``_timelimit``/``_next`` that is no number, ``_shape=array`` where there are no rows
# (KeyError), a NUL in ``_where`` (sqlite3.ProgrammingError), an integer SQLite cannot
# hold in a filter (OverflowError) or as a view's ``_next`` offset (IntegrityError,
# "datatype mismatch": the index is read-only here, no write can violate a constraint).
_READING_A_VALUE = (
    ValueError,
    LookupError,
    TypeError,
    OverflowError,
    sqlite3.ProgrammingError,
    sqlite3.IntegrityError,
)


def _datasette_page(path: str) -> bool:
    """A page of Datasette's own over the index (its tables, rows, queries, SQL), not
    one of ours: ours check their arguments, so an error there is a bug."""
    return path == f"/{DATABASE_NAME}" or path.startswith(
        (f"/{DATABASE_NAME}/", f"/{DATABASE_NAME}.")
    )


@hookimpl_first
def handle_exception(datasette: Any, request: Any, exception: Exception) -> Any:
    """A request whose parameters Datasette refuses or cannot read is the request's
    fault: 400, not a server error.

    A sort it refuses keeps its message, only the status changes (Datasette's own
    handler, run after this one, renders it). A parameter its pages read without a
    check fails with a plain Python error (``?_through=`` ends in a JSONDecodeError):
    on one of Datasette's pages over the index, for a request that has parameters, that
    is answered as Datasette answers a bad request, saying which parameters it had.
    Datasette's own handler still runs after this one and prints the traceback to the
    server's log, so a bug of Datasette's answered so is not hidden there."""
    from datasette.handle_exception import handle_exception as datasette_answer
    from datasette.utils.asgi import BadRequest
    from datasette.views.base import DatasetteError

    if web_index(datasette) is None:
        return None
    if (
        isinstance(exception, DatasetteError)
        and exception.status == 500
        and str(exception).startswith(_REFUSED_SORT)
    ):
        exception.status = 400
        return None
    if (
        isinstance(exception, _READING_A_VALUE)
        and request.query_string
        and _datasette_page(request.path)
    ):
        names = ", ".join(neutralize(name, single_line=True)[:40] for name in request.args)
        problem = f"{type(exception).__name__}: {neutralize(str(exception), single_line=True)}"
        return datasette_answer(
            datasette,
            request,
            BadRequest(
                f"This page cannot read the request's parameters ({names}): {problem[:300]}"
            ),
        )
    return None


@hookimpl
def menu_links(datasette: Any) -> list[dict[str, str]] | None:
    if web_index(datasette) is None:
        return None
    return [
        {"href": "/", "label": "Recent sessions"},
        {"href": "/search", "label": "Search sessions"},
        {"href": f"/{DATABASE_NAME}", "label": "Tables and queries"},
    ]
