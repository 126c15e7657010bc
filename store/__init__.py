"""The team store: sessions in PostgreSQL, written by the Agent SDK and ``push``.

``from sessiondex.store import PostgresSessionStore`` needs the ``team`` extra
(``pip install 'sessiondex[team]'``: psycopg 3 and psycopg-pool); importing this package
does not, so the CLI can say so in one line instead of a traceback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessiondex.store.sdk_store import PostgresSessionStore

__all__ = ["PostgresSessionStore", "MissingDriver", "require_driver"]

INSTALL_HINT = "the team store needs psycopg: pip install 'sessiondex[team]'"


class MissingDriver(ImportError):
    """psycopg or psycopg-pool is not installed."""


def require_driver() -> None:
    """Raise :class:`MissingDriver` (with the install line) unless psycopg is present."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise MissingDriver(f"{INSTALL_HINT} ({exc})") from None


def __getattr__(name: str) -> Any:
    if name == "PostgresSessionStore":
        require_driver()
        from sessiondex.store.sdk_store import PostgresSessionStore

        return PostgresSessionStore
    raise AttributeError(name)
