"""PostgreSQL connection strings: recognising one, and showing one without its password."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

_URL_SCHEMES = ("postgresql://", "postgres://")
_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def is_postgres_dsn(text: str) -> bool:
    """A ``postgresql://``/``postgres://`` URL (what ``--db`` and ``--to`` accept)."""
    return text.lower().startswith(_URL_SCHEMES)


def hide_password(dsn: str) -> str:
    """``dsn`` with any password replaced by ``***``: DSNs end up in messages and logs."""
    if is_postgres_dsn(dsn):
        parts = urlsplit(dsn)
        if parts.password is not None:
            host = parts.netloc.rsplit("@", 1)[1]
            user = parts.username or ""
            parts = parts._replace(netloc=f"{user}:***@{host}")
        query = _KEYWORD_PASSWORD.sub(r"\1***", parts.query)
        return urlunsplit(parts._replace(query=query))
    return _KEYWORD_PASSWORD.sub(r"\1***", dsn)
