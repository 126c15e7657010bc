"""PostgreSQL connection strings: recognising one, and showing one without its password."""

from __future__ import annotations

import re
from functools import cache
from urllib.parse import urlsplit, urlunsplit

_URL_SCHEMES = ("postgresql://", "postgres://")
# Seconds to wait for the server to answer a connection, unless the DSN says otherwise:
# an unreachable or silent server fails in seconds, not at the OS's TCP timeout (minutes)
# or never (a listener that accepts and never replies).
CONNECT_TIMEOUT = 10


# The patterns are compiled on first use (a password to hide), not at import: every
# command asks :func:`is_postgres_dsn` of its ``--db``.
@cache
def _keyword_password() -> re.Pattern[str]:
    """``password=`` and ``sslpassword=`` (the client key's), in a key=value string or a
    query."""
    return re.compile(r"(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


@cache
def _userinfo_password() -> re.Pattern[str]:
    """The password of a URL's ``user:password@``."""
    return re.compile(r"(//[^:/@\s]*:)[^@\s]*(@)")


def is_postgres_dsn(value: object) -> bool:
    """A ``postgresql://``/``postgres://`` URL (what ``--db`` and ``--to`` accept); the
    scheme in any case, as URL schemes are (RFC 3986)."""
    return isinstance(value, str) and value.lower().startswith(_URL_SCHEMES)


def connection_string(dsn: str) -> str:
    """What to hand libpq for a DSN: a URL's scheme lower-cased (libpq takes only that
    spelling, and read ``Postgresql://…`` as a key=value string, echoing it whole,
    password too, in its error), and :data:`CONNECT_TIMEOUT` added unless the DSN sets
    one (a ``key=value`` string too, as the SDK store takes). Raises
    ``ValueError``/``psycopg.Error`` for a malformed DSN."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    if is_postgres_dsn(dsn):
        scheme, rest = dsn.split("://", 1)
        dsn = f"{scheme.lower()}://{rest}"
    if "connect_timeout" not in conninfo_to_dict(dsn):
        dsn = make_conninfo(dsn, connect_timeout=CONNECT_TIMEOUT)
    return dsn


def hide_password(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***``: DSNs end up in messages and logs.
    Never raises: a DSN too malformed to parse is masked by pattern. What libpq reads
    as a password is masked wherever it shows, whatever the URL parser made of it (an
    unencoded ``?``, ``#`` or ``/`` ends a URL's password for it, not for libpq)."""
    masked = _masked_by_shape(dsn)
    for secret in _passwords(dsn):
        masked = masked.replace(secret, "***")
    return masked


def _masked_by_shape(dsn: str) -> str:
    if is_postgres_dsn(dsn):
        try:
            parts = urlsplit(dsn)
            password = parts.password
        except ValueError:  # "Invalid IPv6 URL" and the like
            return _keyword_password().sub(r"\1***", _userinfo_password().sub(r"\1***\2", dsn))
        if not parts.netloc:  # postgresql:///db?host=…: urlunsplit would drop the //
            return _keyword_password().sub(r"\1***", dsn.replace("&", " &")).replace(" &", "&")
        if password is not None:
            host = parts.netloc.rsplit("@", 1)[1]
            user = parts.username or ""
            parts = parts._replace(netloc=f"{user}:***@{host}")
        query = _keyword_password().sub(r"\1***", parts.query)
        return urlunsplit(parts._replace(query=query))
    return _keyword_password().sub(r"\1***", dsn)


def error_line(exc: BaseException, dsn: str) -> str:
    """``exc``'s message on one line, without the DSN's password: psycopg's messages
    may quote the connection string whole ("invalid percent-encoded token",
    "missing '=' after …")."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    masked = hide_password(dsn)
    text = text.replace(dsn, masked)
    for secret in _passwords(dsn):
        text = text.replace(secret, "***")
    return text


def _passwords(dsn: str) -> list[str]:
    """The password of ``dsn`` as written and as decoded (longest first), if any."""
    from urllib.parse import unquote

    found: set[str] = set()
    if is_postgres_dsn(dsn):
        # The URL's userinfo runs to the last "@"; with an unencoded "@" in the password
        # libpq may cut at the first and quote the rest as the host name, so every piece
        # of it is masked too (more rather than less).
        rest = dsn.split("://", 1)[1]
        userinfo = rest[: max(rest.rfind("@"), 0)]
        if ":" in userinfo:
            written = userinfo.split(":", 1)[1]
            found.update({written, unquote(written), *written.split("@")})
    for keyword in _keyword_password().finditer(dsn):
        value = keyword.group(2).split("&")[0].strip("'")
        found.update({value, unquote(value)})
    found.update(_libpq_passwords(dsn))
    return sorted((p for p in found if len(p) >= 2), key=len, reverse=True)


def _libpq_passwords(dsn: str) -> set[str]:
    """The passwords libpq itself reads in ``dsn`` (``password``, ``sslpassword``), when
    psycopg is there to ask and the DSN parses; else none (the patterns above stand)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parsed = conninfo_to_dict(connection_string(dsn))
    except Exception:  # no psycopg, or a DSN it refuses: nothing more to learn
        return set()
    return {str(parsed[k]) for k in ("password", "sslpassword") if parsed.get(k)}
