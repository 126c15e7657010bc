"""Which hosts the web view answers for: loopback names only, unless told otherwise.

Binding to 127.0.0.1 keeps other machines out, but not other web pages: a page the user
visits can point a name it controls at 127.0.0.1 (DNS rebinding) and read every session
through the user's own browser, which sends that name in the ``Host`` header. Answering
only requests that name a loopback host closes that. Imported by the CLI without
Datasette.
"""

from __future__ import annotations

import ipaddress
import re


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


# What a browser sends: a name or IPv4 address, or an IPv6 one in brackets, and maybe
# a port. Nothing else is a host (``localhost:8001@evil.test`` named loopback before).
_HOST_HEADER = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::[0-9]{1,5})?"
)


def host_of(header: str) -> str:
    """The host of a ``Host`` header value (``name:port``, ``[::1]:port``, ``name``);
    ``""``, which is no loopback host, for anything else."""
    match = _HOST_HEADER.fullmatch(header.strip())
    if match is None:
        return ""
    return match.group("v6") or match.group("name")
