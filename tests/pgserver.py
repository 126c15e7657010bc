"""A scratch PostgreSQL database for the team-store tests.

PostgreSQL runs on the development and CI machines (socket and 127.0.0.1:5432, trust
auth). The first test that calls :func:`require_database` creates ``sessiondex_test_<random>``,
and it is dropped when the test process exits; tests that need an empty store call
:func:`truncate`. Test modules wrap :func:`require_database` in a fixture of their own;
with no server reachable, their tests skip and say why.
"""

from __future__ import annotations

import atexit
import os
import secrets
from functools import cache

import pytest

# Where a server may be, in order; SESSIONDEX_TEST_PG (a DSN or URL of a maintenance
# database) comes first.
CANDIDATES = (
    "host=/var/run/postgresql dbname=postgres user=postgres",
    "host=127.0.0.1 port=5432 dbname=postgres user=postgres",
    "host=/var/run/postgresql dbname=postgres",
    "host=127.0.0.1 port=5432 dbname=postgres user=root",
)


@cache
def _admin_dsn() -> str | None:
    import psycopg

    given = os.environ.get("SESSIONDEX_TEST_PG")
    for dsn in ((given,) if given else ()) + CANDIDATES:
        try:
            with psycopg.connect(dsn, connect_timeout=3):
                return dsn
        except psycopg.Error:
            continue
    return None


def _with_dbname(dsn: str, name: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    return make_conninfo(**{**conninfo_to_dict(dsn), "dbname": name})


@cache
def _scratch(purpose: str) -> str:
    """One database per ``purpose`` and process (``purpose`` only keys the cache)."""
    import psycopg

    admin = _admin_dsn()
    assert admin is not None
    name = f"sessiondex_test_{secrets.token_hex(4)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
        # Tests kill clients, never the server: commits need not wait for the disk.
        conn.execute(f"ALTER DATABASE {name} SET synchronous_commit = off")

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    atexit.register(drop)
    return _with_dbname(admin, name)


def database_url(dsn: str) -> str:
    """The same database as a ``postgresql://`` URL (what ``--to`` takes)."""
    from urllib.parse import quote, urlencode

    from psycopg.conninfo import conninfo_to_dict

    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
    name = params.pop("dbname", "")
    return f"postgresql:///{quote(name)}?{urlencode(params)}"


def require_database(purpose: str = "shared") -> str:
    """The scratch database's DSN (shared by the process's tests), or skip the test.

    A module-scoped store that tests keep reading gets a ``purpose`` of its own: with
    xdist a worker interleaves modules, and another module's :func:`truncate` of the
    shared database would empty it between two of its tests."""
    pytest.importorskip("psycopg", reason="the team store needs psycopg ('sessiondex[team]')")
    if _admin_dsn() is None:
        pytest.skip("no PostgreSQL server reachable (socket or 127.0.0.1:5432)")
    return _scratch(purpose)


def truncate(dsn: str) -> None:
    """Empty every store table (the schema stays)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('sessions') IS NOT NULL").fetchone()
        if exists and exists[0]:
            # DELETE, not TRUNCATE: on tables this small it is ten times faster, and the
            # foreign keys cascade from sessions to everything but push_files.
            conn.execute("DELETE FROM push_files")
            conn.execute("DELETE FROM sessions")
            tombstones = conn.execute("SELECT to_regclass('deleted_sessions') IS NOT NULL")
            if tombstones.fetchone() == (True,):  # store migration 8
                conn.execute("DELETE FROM deleted_sessions")
