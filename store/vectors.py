"""The team store's full-text vectors, made from the words SQLite's tokenizer sees.

PostgreSQL's own parser keeps a hyphenated word, a path, a URL or an e-mail address
whole and keeps diacritics, so its vectors of the same text found other sessions than
FTS5's ``unicode61 remove_diacritics 2``. The store's vectors are therefore made from
:func:`~sessiondex.indexer.text.word_text` (migration 2 rewrote those made before), and
queries on the store go through the same function (``query/dialect.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.text import stored_words, word_text
from sessiondex.store.bulk_copy import copy_rows

if TYPE_CHECKING:
    from psycopg import AsyncConnection

# Text search configuration: no stemming, like SQLite's unicode61 tokenizer, so a word
# matches the same sessions in both backends (the words themselves come from word_text).
TS_CONFIG = "simple"

SEARCH_WEIGHTS = (
    ("A", ("custom_title", "ai_title", "agent_name")),
    ("B", ("tag", "branches_text", "pr_text")),
    ("C", ("summary", "first_prompt", "last_prompt")),
)

MESSAGE_COLUMNS = ("session_ref", "transcript_ref", "uuid", "type", "ts_ms", "text")
_VECTOR = f"setweight(to_tsvector('{TS_CONFIG}', %s), '{{weight}}')"


async def insert_messages(conn: AsyncConnection[Any], rows: Sequence[Sequence[Any]]) -> None:
    """Insert message rows (:data:`MESSAGE_COLUMNS`, the text in ``fts_text`` form) in
    order, each with its vector of :func:`~sessiondex.indexer.text.word_text`: COPY into
    a scratch table with the words beside the text, then one INSERT that makes the
    vectors (COPY cannot call ``to_tsvector``)."""
    if not rows:
        return
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS incoming_messages (ord integer, session_ref bigint,"
        " transcript_ref bigint, uuid text, type text, ts_ms bigint, text text, words text)"
        " ON COMMIT DELETE ROWS"
    )
    await copy_rows(
        conn,
        "incoming_messages",
        ("ord", *MESSAGE_COLUMNS, "words"),
        [(i, *row, stored_words(row[-1])) for i, row in enumerate(rows)],
    )
    columns = ", ".join(MESSAGE_COLUMNS)
    await conn.execute(
        f"INSERT INTO messages ({columns}, tsv) SELECT {columns},"
        f" setweight(to_tsvector('{TS_CONFIG}', words), 'D') FROM incoming_messages ORDER BY ord"
    )
    await conn.execute("TRUNCATE incoming_messages")


def session_vector(row: dict[str, Any]) -> tuple[str, list[str]]:
    """The SQL (and its parameters) of a session's weighted ``search`` vector from its
    columns: :data:`SEARCH_WEIGHTS`, each group's texts as :func:`word_text`."""
    parts, params = [], []
    for weight, columns in SEARCH_WEIGHTS:
        parts.append(_VECTOR.format(weight=weight))
        params.append(" ".join(word_text(row[c]) for c in columns if isinstance(row.get(c), str)))
    return " || ".join(parts), params


async def rewrite_search_vectors(conn: AsyncConnection[Any], batch: int = 2000) -> None:
    """Recompute every message's and session's vector from its stored text (migration
    2, when the vectors changed from PostgreSQL's parse of the text to our words, and
    6, when our words became the tokenizer's own: ``indexer/unicode61.py``)."""
    last = 0
    while True:
        cur = await conn.execute(
            "SELECT id, text FROM messages WHERE id > %s ORDER BY id LIMIT %s", [last, batch]
        )
        rows = await cur.fetchall()
        if not rows:
            break
        async with conn.cursor() as update:
            await update.executemany(
                f"UPDATE messages SET tsv = {_VECTOR.format(weight='D')} WHERE id = %s",
                [(stored_words(text), id_) for id_, text in rows],
            )
        last = rows[-1][0]
    columns = [c for _, group in SEARCH_WEIGHTS for c in group]
    cur = await conn.execute(f"SELECT id, {', '.join(columns)} FROM sessions")
    sessions = await cur.fetchall()
    async with conn.cursor() as update:
        for row in sessions:
            sql, params = session_vector(dict(zip(columns, row[1:])))
            await update.execute(
                f"UPDATE sessions SET search = {sql} WHERE id = %s", [*params, row[0]]
            )


async def rewrite_pr_texts(conn: AsyncConnection[Any], session_refs: Sequence[int]) -> None:
    """Recompute ``pr_text`` and the ``search`` vector of these sessions from their
    stored ``pr_links`` (migration 4, when link hosts changed under them)."""
    from sessiondex.indexer.ingest import derived_texts

    columns = [c for _, group in SEARCH_WEIGHTS for c in group]
    for ref in session_refs:
        cur = await conn.execute(
            "SELECT url, number, repository FROM pr_links WHERE session_ref = %s ORDER BY id",
            [ref],
        )
        _, pr_text = derived_texts([], await cur.fetchall())
        await conn.execute("UPDATE sessions SET pr_text = %s WHERE id = %s", [pr_text, ref])
        cur = await conn.execute(f"SELECT {', '.join(columns)} FROM sessions WHERE id = %s", [ref])
        row = await cur.fetchone()
        assert row is not None
        sql, params = session_vector(dict(zip(columns, row)))
        await conn.execute(f"UPDATE sessions SET search = {sql} WHERE id = %s", [*params, ref])
