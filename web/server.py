"""uvicorn's HTTP protocol with the security headers on the 400 it answers itself.

A request uvicorn's parser cannot read (a malformed header line, TLS sent to the plain
port; with h11, an HTTP/1.1 request without ``Host``) is answered by uvicorn with a
400 before any ASGI app sees it, so the plugin's wrapper (``web/plugin.py``
``asgi_wrapper``), which adds the headers to every other response, never sees it.
The protocol class is the one uvicorn would pick (httptools when installed, else h11),
with that one answer written here.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sessiondex.web.plugin import refusal_headers


class _RefusalWithHeaders:
    """Overrides the ``send_400_response`` of uvicorn's H11Protocol and HttpToolsProtocol
    (each writes the response and closes the connection)."""

    transport: asyncio.Transport
    server_state: Any  # uvicorn.server.ServerState: its ``default_headers`` (date, server)

    def send_400_response(self, msg: str) -> None:
        body = msg.encode("ascii", "replace")
        headers = [
            *self.server_state.default_headers,
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            *refusal_headers(),
        ]
        head = b"".join(bytes(name) + b": " + bytes(value) + b"\r\n" for name, value in headers)
        self.transport.write(b"HTTP/1.1 400 Bad Request\r\n" + head + b"\r\n" + body)
        self.transport.close()


def http_protocol() -> type[asyncio.Protocol]:
    """For ``uvicorn.Config(http=...)``: uvicorn's own choice of protocol, refusing with
    the security headers."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    return type("HTTPProtocol", (_RefusalWithHeaders, AutoHTTPProtocol), {})
