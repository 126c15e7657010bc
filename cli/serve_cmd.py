"""``serve``: the web view (a Datasette plugin) over the index, read-only."""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import time
import webbrowser
from collections.abc import Iterator
from typing import Any

import click

from sessiondex.cli.app import CliError, app
from sessiondex.web.hosts import is_loopback

# --open waits at most this long for the server to accept connections.
_OPEN_WAIT_SECONDS = 10.0


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a taken port is a one-line error and
    ``--port 0`` prints the port it got."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM
        )[0]
    except socket.gaierror as exc:
        raise CliError(f"cannot serve on {host}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot serve on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = "127.0.0.1" if host == "0.0.0.0" else "[::1]"
    return f"http://{shown}:{port}/"


def _server(config: Any) -> Any:
    """A uvicorn server that stops on SIGINT/SIGTERM and returns, like ``watch``: the
    index is closed and the exit code is 0. (uvicorn itself re-raises the signal after
    its graceful shutdown, so the process would die of it before closing anything.)"""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            handled = (signal.SIGINT, signal.SIGTERM)
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server(config)


def _open_when_up(server: Any, url: str) -> None:
    deadline = time.monotonic() + _OPEN_WAIT_SECONDS
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    if server.started:
        webbrowser.open(url)


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but loopback lets others on the network read "
    "your transcripts.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8001,
    show_default=True,
    help="Port to listen on (0: any free port; the URL is printed).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in your browser.")
def serve(host: str, port: int, open_browser: bool) -> None:
    """Browse and search the history in a web page (Datasette), read-only.

    Refreshes the index, then serves: recent sessions of every project with facets
    (project, branch, tag, PR, date), search (the same ranking and query handling as
    `sessiondex search`; a pasted PR URL or owner/repo#N lists the linked sessions), and
    each session's conversation. Datasette's own table views and canned queries stay
    under /sessiondex. Pages follow new messages: each request refreshes the index at
    most once a second, unless `sessiondex watch` keeps it live or --no-refresh is given.
    Nothing is ever written to transcripts, and there are no write endpoints.

    \b
    Example:
        sessiondex serve
        sessiondex serve --port 8002 --open
        sessiondex --config-dir ~/.claude serve --host 0.0.0.0   # warns: secrets
    """
    try:
        import uvicorn

        from sessiondex.web.app import build
        from sessiondex.web.server import http_protocol
        from sessiondex.web.state import WebIndex
    except ImportError as exc:
        raise CliError(
            f"the web view needs the web extra ({exc.name} is missing): "
            "pip install 'sessiondex[web]'"
        ) from None
    from sessiondex.indexer.db import IndexFromNewer

    state = app()
    _ = state.database_path  # Datasette browses a SQLite index: not the team store
    state.warn_missing_roots()
    index = state.index
    if not is_loopback(host):
        click.echo(
            f"warning: serving on {host}: anyone who can reach it can read every transcript, "
            "and transcripts may hold secrets (keys, tokens, file contents). Use the "
            "default 127.0.0.1 unless you mean it.",
            err=True,
        )
    # On loopback, answer only requests naming a loopback host (web/hosts.py: DNS
    # rebinding); on an address the user chose, any name they reach it by.
    web = WebIndex(index, loopback_only=is_loopback(host))
    try:
        try:
            web.start()
        except IndexFromNewer as exc:  # its own line names the file
            raise CliError(str(exc)) from None
        except Exception as exc:
            raise CliError(f"cannot open the index at {index.db_path}: {exc}") from None
        if index.db_path is None or not index.db_path.is_file():
            raise CliError(
                f"no index at {index.db_path}: run `sessiondex index` first, or drop --no-refresh"
            )
        sock = _bind(host, port)
        url = _url(sock)
        datasette = build(web, index.db_path)
        server = _server(
            uvicorn.Config(
                datasette.app(),
                http=http_protocol(),  # uvicorn's own 400s carry the security headers too
                log_level="warning",
                lifespan="on",
                access_log=False,
            )
        )
        click.echo(f"Serving {url} (read-only; Ctrl-C to stop)")
        if open_browser:
            threading.Thread(target=_open_when_up, args=(server, url), daemon=True).start()
        try:
            server.run(sockets=[sock])
        finally:
            sock.close()
    finally:
        web.close()
