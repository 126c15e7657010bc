"""Which hosts the web view answers for: loopback names only, unless told otherwise.

Binding to 127.0.0.1 keeps other machines out, but not other web pages: a page the user
visits can point a name it controls at 127.0.0.1 (DNS rebinding) and read every session
through the user's own browser, which sends that name in the ``Host`` header. Answering
only requests that name a loopback host closes that. Imported by the CLI without
Datasette.
"""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """True for ``localhost`` (and its subdomains) and the loopback ranges
    (127.0.0.0/8, ::1)."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_of(header: str) -> str:
    """The host of a ``Host`` header value (``name:port``, ``[::1]:port``, ``name``)."""
    value = header.strip()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value
