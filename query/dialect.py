"""The query layer's one seam between its two backends: SQL fragments per dialect.

``list``, ``search``, ``resolve`` and ``from-pr`` are written once (scopes, resolution
order, ranking merge, fork placement, session objects). What differs between the local
SQLite index and the PostgreSQL team store is *data access*: how a full-text query is
spelled and run (FTS5 ``MATCH``/``bm25``/``snippet`` against ``tsvector`` ``@@``,
``ts_rank`` and a snippet cut in Python), how a case-insensitive comparison is written, and
what a repository is (local worktree paths against the ``origin`` remote, since paths
differ per machine). Each of those is a method here, and every query function asks
:func:`dialect_of` for the handle it was given. Everything else — including the
relational shape: :mod:`query.teamdb` presents the store's tables under the index's
names — is shared.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.shape import SESSION_FTS_COLUMNS, SHOWN_TITLE_COLUMN, TITLE_FTS_COLUMNS
from sessiondex.indexer.text import (
    cjk_runs,
    fts_text,
    may_hold_cjk,
    without_invisible,
    word_text,
)

if TYPE_CHECKING:
    from collections.abc import Sequence


def raw_cjk(text: str) -> str:
    """A ``--raw`` query with its CJK written as the index holds it: one token per
    character (:func:`~sessiondex.indexer.text.fts_text`). Typed as is, ``東京`` was one
    token and found nothing. Inside a quoted phrase a run becomes its characters; outside
    one, a phrase of them (``"東 京"``), so operators, column filters and ``NEAR`` around
    it keep their meaning. Both FTS5 and ``websearch_to_tsquery`` quote with ``"``.
    An invisible character inside a word goes, as from the text it is looked for in
    (:func:`~sessiondex.indexer.text.without_invisible`)."""
    if not may_hold_cjk(text):
        return without_invisible(text)
    runs = cjk_runs()
    parts = text.split('"')  # FTS5 escapes a quote inside a phrase as "": an empty part
    for index, part in enumerate(parts):
        if index % 2:  # inside a phrase
            parts[index] = runs.sub(lambda m: " " + " ".join(m.group(0)) + " ", part)
        else:
            parts[index] = runs.sub(lambda m: ' "' + " ".join(m.group(0)) + '" ', part)
    return without_invisible('"'.join(parts))


# Must equal store/schema.py TS_CONFIG (store/ and query/ may not import each other;
# tests/test_team_query.py checks they agree): no stemming, like FTS5's unicode61.
TS_CONFIG = "simple"
#: The metadata columns a snippet may come from: the ones FTS5 indexes, in its order.
META_COLUMNS = SESSION_FTS_COLUMNS
#: ``session_search_fts``'s columns by their FTS5 index: :data:`META_COLUMNS`, then the
#: computed ``shown_title`` (indexer/schema.py ``build_session_search``).
_FTS_META_COLUMNS = (*META_COLUMNS, SHOWN_TITLE_COLUMN)
_FTS_META_INDEX = {name: i for i, name in enumerate(_FTS_META_COLUMNS)}


def filtered_columns(match: str) -> tuple[str, ...] | None:
    """The columns of ``session_search_fts`` a match that is one column filter over
    the whole of it (``{custom_title tag} : (...)``, what :meth:`SqliteDialect.
    title_match` writes) holds its every instance in: FTS5 applies a filter to each
    phrase inside it (a nested one narrows it further). None for any other match,
    whose instances may be in any column."""
    head, brace, rest = match.partition("}")
    if not brace or not head.startswith("{"):
        return None
    names = tuple(head[1:].split())
    if not names or any(name not in _FTS_META_INDEX for name in names):
        return None
    rest = rest.lstrip()
    if not rest.startswith(":"):
        return None
    body = rest[1:].lstrip()
    if not body.startswith("("):
        return None
    depth, quoted = 0, False
    for at, ch in enumerate(body):
        if ch == '"':
            quoted = not quoted  # FTS5's "" inside a string: out and in again
        elif quoted:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:  # the filter's group closes: it must be the whole match
                return names if not body[at + 1 :].strip() else None
    return None


def _instance_column(
    table: str, within: Sequence[str], mark: str, order: Sequence[str] = _FTS_META_COLUMNS
) -> str:
    """SQL for the column FTS5's ``snippet()`` takes when asked for none (-1), on a row
    whose every instance is in one of ``within`` (:func:`filtered_columns`), without
    its reading the others.

    Asked for no column, SQLite's ``fts5SnippetFunction`` (ext/fts5/fts5_aux.c) reads
    and tokenizes *every* column of the row, the long summary and prompts too, to find
    its sentences, then scores a window at each instance of the columns that hold
    some; the strictly best score wins, so the lowest column of a tie, and with no
    instance at all it cuts column 0 from its start. A column's score depends on
    that column alone. So where one column holds every instance, the answer is that
    column; where none does, column 0; where several do, FTS5 scores them itself
    (-1), as before. Which of ``within`` hold one is ``highlight()`` of each (a
    title, a tag, a branch: a few words to tokenize) holding ``mark``, which the
    stored text never does: it marks every instance in the column, from the same
    instance list ``snippet()`` reads. The SQL is a ``CASE`` over the bit mask of
    those columns, evaluated once per row. (What it saves is small: 0.4-0.6 ms of CPU
    for the 50 snippets of a letter typed at 20,000 text-heavy sessions, of 7-25 ms
    for the statement without the heavy-row check; FTS5's merge of the prefix's
    doclists and reading each row through the ``session_search`` view, which either
    way reads every column, are the rest.) ``order``: ``table``'s columns, in its
    order (``session_search_fts``'s by default; ``session_title_fts`` has fewer)."""
    assert "'" not in mark
    indexes = sorted(order.index(name) for name in set(within))
    held = " + ".join(
        f"(coalesce(instr(highlight({table}, {i}, '{mark}', ''), '{mark}'), 0) > 0) * {1 << i}"
        for i in indexes
    )
    one = " ".join(f"WHEN {1 << i} THEN {i}" for i in indexes)
    return f"(CASE {held} WHEN 0 THEN 0 {one} ELSE -1 END)"


class SqliteDialect:
    """The local index: FTS5 tables beside ``sessions`` and ``messages``."""

    name = "sqlite"
    team = False
    #: What a query the full-text engine cannot parse raises (``--raw`` only), and
    #: where its syntax is written down.
    syntax_errors: tuple[type[Exception], ...]
    raw_syntax: tuple[str, str] = ("FTS5", "https://sqlite.org/fts5.html#full_text_query_syntax")

    def __init__(self) -> None:
        import sqlite3

        self.syntax_errors = (sqlite3.OperationalError,)

    # -------------------------------------------------------------- comparisons
    def nocase_eq(self, column: str) -> str:
        return f"{column} = ? COLLATE NOCASE"

    def limit(self, limit: int) -> int | None:
        """A row limit as the engine takes it (-1: none)."""
        return limit

    def change_stamp(self, db: Any) -> tuple[int, int] | None:
        """What changes whenever the data ``db`` reads may have: SQLite's
        ``data_version`` (a commit by any other connection, in any process) and this
        connection's ``total_changes`` (its own writes). None where no stamp can be
        trusted: a file opened ``immutable`` (SQLite then sees no one else's writes,
        so neither would the stamp), or a transaction open on the connection."""
        if getattr(db, "immutable", False) or db.conn.in_transaction:
            return None  # an open transaction's rollback changes rows, not the stamp
        version = db.execute("PRAGMA data_version").fetchone()[0]
        return (int(version), int(db.conn.total_changes))

    def as_bytes(self, column: str) -> str:
        """A text column read as its UTF-8 bytes (where the driver can): for orjson,
        which would otherwise be handed a str made from those bytes only to encode it."""
        return f"CAST({column} AS BLOB)"

    # -------------------------------------------------------------- full text
    def term(self, spaced: str, prefix: bool) -> str:
        """One word of a query (already through ``fts_text``) as a full-text term."""
        return '"' + spaced.replace('"', '""') + '"' + ("*" if prefix else "")

    def all_of(self, terms: Sequence[str]) -> str:
        # FTS5 (3.40) takes no implicit AND beside a parenthesized group: a term that
        # is one (query_terms: a long token's prefix or its stored form) needs AND.
        return (" AND " if any(t.startswith("(") for t in terms) else " ").join(terms)

    def any_of(self, terms: Sequence[str]) -> str:
        return " OR ".join(terms)

    def raw_query(self, db: Any, text: str) -> str:
        """A ``--raw`` query as the engine's own syntax: FTS5 takes it as typed, but for
        its CJK words (:func:`raw_cjk`)."""
        return raw_cjk(text)

    def metadata_hits_sql(self, where: str, weights: str, boost: float, activity: str) -> str:
        """Rows ``(session id, score, activity)``; params: match, where's, limit."""
        return (
            f"SELECT f.rowid, bm25(session_search_fts, {weights}) * {boost}"
            f" AS score, {activity} AS activity"
            " FROM session_search_fts f JOIN sessions s ON s.id = f.rowid"
            f" WHERE session_search_fts MATCH ? AND {where}"
            " ORDER BY score, activity DESC LIMIT ?"
        )

    def message_hits_sql(self, where: str, activity: str, rows: str = "1") -> str:
        """Each session's best message ``(session id, score, message id, activity)``
        (SQLite gives a bare column the values of the row that holds the ``min()``).
        ``where`` is on the session (``s``), ``rows`` on each match (``f``, its FTS row).

        ``CROSS JOIN`` keeps FTS5 the outer loop. With a narrow ``where`` (the sessions
        holding a search's rarest word: ``s.id IN (…)``) SQLite otherwise started from
        the sessions and asked FTS5 for each of their messages by rowid, walking the
        word's doclist once per message: a question in plain words took 2 s against one
        6,000-message session, 0.01 s so.

        ``where`` is evaluated once for each session that holds a match, after the
        grouping (the scope depends on the session alone, so its best message is the
        same): tested on every match, the scope's correlated ``NOT EXISTS`` and a
        ``sessions`` lookup ran for each of ``retry``'s 126,000 messages at 20,000
        sessions; built first as the list of every session in scope, it cost a rare
        word's search 2.3 ms at 2,000 sessions for its 15 matches."""
        return (
            f"SELECT g.session_rowid, g.score, g.rowid, {activity} AS activity FROM ("
            " SELECT m.session_rowid, min(f.rank) AS score, f.rowid"
            " FROM messages_fts f CROSS JOIN messages m ON m.id = f.rowid"
            f" WHERE messages_fts MATCH ? AND {rows} GROUP BY m.session_rowid) g"
            f" CROSS JOIN sessions s ON s.id = g.session_rowid WHERE {where}"
            " ORDER BY g.score, activity DESC LIMIT ?"
        )

    def message_holders_sql(self, where: str) -> str:
        """The sessions in scope with a message that matches, unranked (param: match,
        then where's): FTS5 walks the doclist once, without a bm25 per row (``CROSS
        JOIN``: see :meth:`message_hits_sql`)."""
        return (
            "SELECT DISTINCT m.session_rowid FROM messages_fts f CROSS JOIN messages m"
            " ON m.id = f.rowid CROSS JOIN sessions s ON s.id = m.session_rowid"
            f" WHERE messages_fts MATCH ? AND {where}"
        )

    def ranked_hits_sql(self, marks: str) -> str:
        """Each session's (``file_path IN (marks)``) best message hits for a match,
        ``(message id, file_path, uuid, type)``, at most ``?`` per session, best first."""
        return (
            "SELECT id, file_path, uuid, type FROM ("
            " SELECT f.rowid AS id, s.file_path AS file_path, m.uuid AS uuid, m.type AS type,"
            "  row_number() OVER (PARTITION BY m.session_rowid ORDER BY f.rank, m.id) AS n"
            " FROM messages_fts f JOIN messages m ON m.id = f.rowid"
            " JOIN sessions s ON s.id = m.session_rowid"
            f" WHERE messages_fts MATCH ? AND s.file_path IN ({marks}) AND m.uuid IS NOT NULL"
            ") WHERE n <= ? ORDER BY file_path, n"
        )

    def spelled_rows_sql(self, ids: str) -> str:
        """``(session id, message id, text as stored)`` of the best ``?`` messages of
        each session among ``ids`` that match a term (params: the term, the count), best
        first: the rows the literal tier reads (query/search.py ``_literal_tier``).
        ``CROSS JOIN`` keeps FTS5 the outer loop (:meth:`message_hits_sql`); the text
        is decompressed for the rows kept only, after the window has picked them."""
        return (
            "SELECT r.session_rowid, r.id, t.text FROM ("
            " SELECT m.session_rowid AS session_rowid, f.rowid AS id,"
            "  row_number() OVER (PARTITION BY m.session_rowid ORDER BY f.rank, f.rowid) AS n"
            " FROM messages_fts f CROSS JOIN messages m ON m.id = f.rowid"
            f" WHERE messages_fts MATCH ? AND m.session_rowid IN ({ids})"
            ") r CROSS JOIN message_text t ON t.id = r.id WHERE r.n <= ?"
            " ORDER BY r.session_rowid, r.n"
        )

    def title_sql(self, ids: str) -> str:
        """Session ids among ``ids`` whose titles and names hold a term (param: the
        :meth:`title_match` of it). ``+rowid``: a plain ``rowid IN`` is handed to FTS5
        one value at a time, and each lookup of a prefix term (``"tim"*``) merges every
        matching term's doclist again; filtered after the match, it is merged once."""
        return (
            "SELECT rowid FROM session_search_fts WHERE session_search_fts MATCH ?"
            f" AND +rowid IN ({ids})"
        )

    def title_match(self, term: str, title_columns: Sequence[str]) -> str:
        return "{" + " ".join(title_columns) + "} : (" + term + ")"

    def snippets(
        self,
        db: Any,
        source: str,
        match: str,
        rowids: Sequence[int],
        tokens: int,
        column: int = -1,
    ) -> dict[int, str]:
        """Row id → the matched words in context, marked with ``OPEN``/``CLOSE``, stored
        form, for every row of ``rowids`` (one source, one match) in one query. For
        ``meta``, ``column`` (an index of :data:`META_COLUMNS`) is the column to cut it
        from; -1, FTS5's choice: the column whose window holds most matches, which is
        not the one that wrote a spelling (query/search.py ``_literal_tier``). FTS5
        is asked for the column it would choose where the match is one column filter
        (the letters typed: :func:`_instance_column`), not to read every column.
        ``title``: a ``meta`` row of the letters typed, cut from ``session_title_fts``
        (the same texts as ``session_search_fts``'s columns of that name, so the same
        snippet; indexer/shape.py ``TITLE_FTS_COLUMNS``), column -1 only.

        One query, and ``+rowid`` rather than ``rowid IN``/``rowid =``: FTS5 answers a
        rowid constraint by running the match once per value, and for a prefix term
        (``"tim"*``, the picker's every keystroke) each run merges the doclists of every
        term with that prefix (tens of thousands of rows at 20,000 sessions: ~10 ms
        each, 50 snippets half a second). Filtered after the match, they are merged once
        and ``snippet()`` runs only on the rows asked for.

        A row whose text holds so many matches that FTS5's ``snippet()`` would take
        seconds (query/snippets.py ``MAX_INSTANCES``: a pasted log) is cut in Python
        instead. The check (:data:`HEAVY_FUNCTION`, asked only of rows long enough to
        hold that many) is in the same statement, in a ``CASE`` whose ``ELSE`` is
        ``snippet()``: FTS5 reads a row's text once for the lengths, the check and the
        snippet, where a look at the texts before the statement read each twice (a
        third of a search's time on a history of long messages)."""
        from sessiondex.query.snippets import (
            CLOSE,
            ELLIPSIS,
            HEAVY_FUNCTION,
            OPEN,
            bounded_snippet,
            match_terms,
            may_be_heavy_above,
            register_heavy,
        )

        if not rowids:
            return {}
        fts_column = str(int(column))
        if source in ("meta", "title"):  # a first prompt may hold a whole pasted log too
            table, columns = "session_search_fts", list(META_COLUMNS)
            order: Sequence[str] = _FTS_META_COLUMNS
            if source == "title":  # the letters typed (query/search.py title_prefix_search)
                table, order = "session_title_fts", TITLE_FTS_COLUMNS
                columns = [name for name in META_COLUMNS if name in order]
            if column >= 0:
                columns = [META_COLUMNS[column]]
            elif (within := filtered_columns(match)) is not None:
                fts_column = _instance_column(table, within, OPEN, order)
                # Nor can another column be too heavy for snippet(): it walks no
                # instance there. (A long prompt full of words starting with a letter
                # typed was counted, then cut here in place of the title matched.)
                columns = [name for name in META_COLUMNS if name in within]
        else:
            table, columns, fts_column = "messages_fts", ["text"], "-1"
        # In bytes, at least the characters: length() of a text counts its characters
        # only up to a NUL, and a log pasted with one near its start (a binary file
        # read) measured a few characters and went to snippet() unchecked.
        lengths = [f"coalesce(length(CAST({column} AS BLOB)), 0)" for column in columns]
        longest = lengths[0] if len(lengths) == 1 else f"max({', '.join(lengths)})"
        # CASE, not AND: SQLite before 3.41 evaluates both sides of an AND in a result
        # column, which called the check on every row.
        heavy = (
            f"(CASE WHEN {longest} > {may_be_heavy_above(match)}"
            f" THEN {HEAVY_FUNCTION}(?, {', '.join(columns)}) ELSE 0 END)"
        )
        checked = [match, match]
        if not columns:  # the title shown alone (display_prompt: 200 characters)
            heavy, checked = "0", []
        heavy_text = " ".join(f"WHEN {i} THEN {column}" for i, column in enumerate(columns, 1))
        ids = ", ".join(str(int(rowid)) for rowid in rowids)
        sql = (
            f"SELECT rowid, {heavy}, CASE {heavy} WHEN 0 THEN"
            f" snippet({table}, {fts_column}, ?, ?, ?, {tokens}) {heavy_text} END"
            f" FROM {table}"
            f" WHERE {table} MATCH ? AND rowid BETWEEN ? AND ? AND +rowid IN ({ids})"
        )
        params = [*checked, OPEN, CLOSE, ELLIPSIS, match, min(rowids), max(rowids)]
        try:
            rows = db.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if HEAVY_FUNCTION not in str(exc):
                raise
            register_heavy(db.conn)  # once per connection: a new one expires statements
            rows = db.execute(sql, params).fetchall()
        out: dict[int, str] = {}
        for rowid, is_heavy, text in rows:
            if is_heavy:  # FTS5 takes its best column; here the first too heavy for it
                text = bounded_snippet(str(text), match_terms(match), tokens)
            if text:
                out[int(rowid)] = str(text)
        return out

    def similar_names(self, query: str) -> tuple[str, list[Any]] | None:
        """A condition for sessions whose names or branches are close to ``query`` by an
        index, for the typo fallback; None where the newest sessions must do."""
        return None

    # -------------------------------------------------------------- scopes
    def scope_clause(self, db: Any, cwd: str, scope: str) -> tuple[str, list[Any]] | None:
        """Which sessions a scope holds; None for every session. Locally a scope is a
        set of project dirs: the cwd's own, or those of every worktree of its repo,
        with their alias and Claude Code worktree dirs (``query.scopes.scope_dirs``)."""
        from sessiondex.query.scopes import keys_sql, scope_dirs

        keys = scope_dirs(db, cwd, scope)
        return None if keys is None else keys_sql(keys)


class PostgresDialect(SqliteDialect):
    """The team store: ``tsvector`` columns (``sessions.search`` weighted A names, B
    labels, C descriptions; ``messages.tsv`` all D, so a name outranks a line of
    conversation), GIN indexes, ``ts_rank`` negated so that lower is better as with
    ``bm25``."""

    name = "postgresql"
    team = True

    def change_stamp(self, db: Any) -> tuple[int, int] | None:
        """None: the team store is written by other machines, and nothing as cheap as
        SQLite's ``data_version`` tells that it was."""
        return None

    def __init__(self) -> None:
        import psycopg

        self.syntax_errors = (psycopg.Error,)
        self.raw_syntax = (
            "The team store",
            "https://www.postgresql.org/docs/current/textsearch-controls.html"
            " (websearch_to_tsquery)",
        )

    def nocase_eq(self, column: str) -> str:
        return f"lower({column}) = lower(?)"

    def limit(self, limit: int) -> int | None:
        return None if limit < 0 else limit  # LIMIT NULL: no limit

    def as_bytes(self, column: str) -> str:
        return column  # the store keeps no stored object (teamdb: NULL), nothing to gain

    def term(self, spaced: str, prefix: bool) -> str:
        # A quoted to_tsquery phrase of the words the store indexed (word_text: as FTS5
        # splits them, diacritics folded), in order, as an FTS5 "phrase".
        words = word_text(spaced)
        if not prefix or not words.split():
            return self._quoted(words)
        # FTS5's "user profile"* is a prefix of its last token alone; to_tsquery puts a
        # phrase's :* on every word ('user pro':* is 'user':* <-> 'pro':*), so the
        # words go apart, the last one a prefix: user_pro finds user_profile, as locally.
        *before, last = words.split()
        return " <-> ".join([*map(self._quoted, before), self._quoted(last) + ":*"])

    @staticmethod
    def _quoted(words: str) -> str:
        return "'" + words.replace("\\", "\\\\").replace("'", "''") + "'"

    def all_of(self, terms: Sequence[str]) -> str:
        return " & ".join(f"({t})" for t in terms)

    def any_of(self, terms: Sequence[str]) -> str:
        return " | ".join(f"({t})" for t in terms)

    def raw_query(self, db: Any, text: str) -> str:
        """``--raw`` on the team store is ``websearch_to_tsquery`` syntax (``"a phrase"``,
        ``or``, ``-word``), turned into the ``to_tsquery`` text the other steps take."""
        row = db.execute(
            f"SELECT websearch_to_tsquery('{TS_CONFIG}', ?)::text", [raw_cjk(text)]
        ).fetchone()
        return str(row[0]) if row and row[0] else ""

    def metadata_hits_sql(self, where: str, weights: str, boost: float, activity: str) -> str:
        return (
            f"SELECT s.id, -ts_rank(f.search, q) * {boost} AS score, {activity} AS activity"
            f" FROM to_tsquery('{TS_CONFIG}', ?) q, session_search f"
            " JOIN sessions s ON s.id = f.id"
            f" WHERE f.search @@ q AND {where}"
            " ORDER BY score, activity DESC LIMIT ?"
        )

    def message_hits_sql(self, where: str, activity: str, rows: str = "1") -> str:
        assert rows == "1", "PostgreSQL's ranking is never narrowed by message rows"
        # The matching messages first, by the GIN index (MATERIALIZED): the planner
        # underestimates the scope filter and would otherwise walk every session's
        # messages (48 ms → a few ms for a rare word at the 2k bench corpus).
        return (
            "WITH hit AS MATERIALIZED ("
            " SELECT m.session_rowid, -ts_rank(m.tsv, q) AS score, m.id"
            f" FROM to_tsquery('{TS_CONFIG}', ?) q, messages m WHERE m.tsv @@ q)"
            " SELECT session_rowid, score, id, activity FROM ("
            " SELECT DISTINCT ON (m.session_rowid) m.session_rowid, m.score, m.id,"
            f" {activity} AS activity"
            " FROM hit m JOIN sessions s ON s.id = m.session_rowid"
            f" WHERE {where}"
            " ORDER BY m.session_rowid, m.score, m.id) best"
            " ORDER BY score, activity DESC LIMIT ?"
        )

    def ranked_hits_sql(self, marks: str) -> str:
        return (
            "SELECT id, file_path, uuid, type FROM ("
            " SELECT m.id AS id, s.file_path AS file_path, m.uuid AS uuid, m.type AS type,"
            "  row_number() OVER (PARTITION BY m.session_rowid"
            "   ORDER BY ts_rank(m.tsv, q) DESC, m.id) AS n"
            f" FROM to_tsquery('{TS_CONFIG}', ?) q, messages m"
            " JOIN sessions s ON s.id = m.session_rowid"
            f" WHERE m.tsv @@ q AND s.file_path IN ({marks}) AND m.uuid IS NOT NULL"
            ") ranked WHERE n <= ? ORDER BY file_path, n"
        )

    def spelled_rows_sql(self, ids: str) -> str:
        return (
            "SELECT session_rowid, id, text FROM ("
            " SELECT m.session_rowid, m.id, m.text, row_number() OVER ("
            "  PARTITION BY m.session_rowid ORDER BY ts_rank(m.tsv, q) DESC, m.id) AS n"
            f" FROM to_tsquery('{TS_CONFIG}', ?) q, messages m"
            f" WHERE m.tsv @@ q AND m.session_rowid IN ({ids})"
            ") ranked WHERE n <= ? ORDER BY session_rowid, n"
        )

    def title_sql(self, ids: str) -> str:
        return (
            f"SELECT f.id FROM to_tsquery('{TS_CONFIG}', ?) q, session_search f"
            f" WHERE ts_filter(f.search, '{{a}}') @@ q AND f.id IN ({ids})"
        )

    def title_match(self, term: str, title_columns: Sequence[str]) -> str:
        return term  # weight A holds exactly the titles and names (store/write.py)

    def snippets(
        self,
        db: Any,
        source: str,
        match: str,
        rowids: Sequence[int],
        tokens: int,
        column: int = -1,
    ) -> dict[int, str]:
        """As SQLite's, one row at a time (GIN has no doclist to merge)."""
        found = {rowid: self.snippet(db, source, match, rowid, tokens, column) for rowid in rowids}
        return {rowid: text for rowid, text in found.items() if text}

    def snippet(
        self, db: Any, source: str, match: str, rowid: int, tokens: int, column: int = -1
    ) -> str:
        """The row's snippet, cut in Python as FTS5 cuts one (query/snippets.py
        ``best_fts5_snippet``: its column, window and marks), not by ``ts_headline``:
        that reads the text with PostgreSQL's parser, which keeps a path, a dotted name, a URL, an e-mail address
        or a version whole (``src/auth/middleware.py`` is one token to it), so the words
        the store's vectors hold (indexer/text.py ``word_text``, FTS5's) were never
        marked in them: a search for ``auth/middleware`` showed the text's first words
        with nothing marked."""
        from sessiondex.query.snippets import best_fts5_snippet, tsquery_phrases

        if source in ("meta", "title"):
            wanted = META_COLUMNS if column < 0 else (META_COLUMNS[column],)
            row = db.execute(
                f"SELECT {', '.join(wanted)} FROM sessions s WHERE s.id = ?", [rowid]
            ).fetchone()
            # As the search vector was built (CJK split), one column at a time, unless
            # the caller names the column.
            texts = [fts_text(v) if isinstance(v, str) else "" for v in (row or ())]
        else:
            row = db.execute("SELECT m.text FROM messages m WHERE m.id = ?", [rowid]).fetchone()
            texts = [str(row[0])] if row and row[0] else []
        # A metadata row: the column FTS5's snippet() takes (the best window, the first
        # of those as good, in its table's order); before, the first with a match.
        return best_fts5_snippet(texts, tsquery_phrases(match), tokens)

    def similar_names(self, query: str) -> tuple[str, list[Any]] | None:
        """``pg_trgm`` word similarity (``<%``) against the names and the branches, each
        written as its GIN trigram index is (store/schema.py), so the index serves."""
        return (
            "(s.id IN (SELECT n.id FROM sessions n WHERE ? <% (coalesce(n.custom_title, '')"
            " || ' ' || coalesce(n.ai_title, '') || ' ' || coalesce(n.agent_name, '')))"
            " OR s.id IN (SELECT b.session_rowid FROM branches b WHERE ? <% b.branch))",
            [query, query],
        )

    def scope_clause(self, db: Any, cwd: str, scope: str) -> tuple[str, list[Any]] | None:
        """On the team store a repository is its ``origin`` remote (normalized), not a
        path: ``repo`` is every session pushed from a clone of the cwd's origin, on any
        machine; ``worktree`` is the cwd's own project (same path) *and*, when the cwd
        has an origin, the same origin or none recorded — one machine's ``~/src/app``
        is not another's. Without an origin the scopes fall back to paths, as locally."""
        from sessiondex.query.scopes import git_origin, keys_sql, present_keys, scope_keys

        if scope == "all":
            return None
        origin = git_origin(cwd)
        if scope == "repo" and origin:
            return "s.origin_url = ?", [origin]
        keys = scope_keys(cwd, scope)
        assert keys is not None
        sql, params = keys_sql(present_keys(db, keys))
        if scope == "worktree" and origin:
            sql = f"({sql} AND (s.origin_url = ? OR s.origin_url IS NULL))"
            params = [*params, origin]
        return sql, params


SQLITE = SqliteDialect()


def dialect_of(db: Any) -> SqliteDialect:
    """The dialect of a database handle: the team store's adapter says so; anything else
    is the local SQLite index."""
    found = getattr(db, "dialect", None)
    return found if isinstance(found, SqliteDialect) else SQLITE
