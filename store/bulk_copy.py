"""Rows into a table with PostgreSQL's COPY (a push writes most of its rows this way)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg import AsyncConnection


def _copy_field(value: Any) -> str:
    """One field of COPY's text format. PostgreSQL text cannot hold NUL (SQLite's can):
    it is dropped from derived text; entries keep theirs, escaped inside the JSON."""
    if value is None:
        return "\\N"
    if not isinstance(value, str):
        return str(value)
    return (
        value.replace("\\", "\\\\")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
        .replace("\x00", "")
    )


async def copy_rows(
    conn: AsyncConnection[Any], table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """Insert ``rows`` in order with one COPY: a statement per row, or psycopg's
    parameter adaptation of large arrays, costs several times more on a push."""
    if not rows:
        return
    data = "".join("\t".join(map(_copy_field, row)) + "\n" for row in rows)
    async with conn.cursor() as cur:
        async with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            await copy.write(data.encode("utf-8"))
