"""Rows into a table with PostgreSQL's COPY (a push writes most of its rows this way)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.text import NUL_STANDIN, without_nul

if TYPE_CHECKING:
    from psycopg import AsyncConnection


def no_nul(value: Any) -> Any:
    """``value`` as a PostgreSQL text column can hold it: a NUL of derived text as
    :data:`~sessiondex.indexer.text.NUL_STANDIN` (entries keep theirs, escaped inside
    the JSON)."""
    return without_nul(value) if isinstance(value, str) else value


def _copy_field(value: Any) -> str:
    """One field of COPY's text format, a NUL as :func:`no_nul` stores it."""
    if value is None:
        return "\\N"
    if not isinstance(value, str):
        return str(value)
    return (
        value.replace("\\", "\\\\")
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
        .replace("\x00", NUL_STANDIN)
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
