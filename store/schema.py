"""The team store's PostgreSQL schema, as a list of versioned migrations.

Kept beside SQLite's (``indexer/schema.py``) and shaped like it, so that the query layer
can answer from either: ``sessions`` holds the same derived fields as SQLite's
``sessions`` (the fold of ``indexer/derive.py``), ``messages`` the same indexed text,
``branches``, ``pr_links`` and ``pr_mentions`` the same collections. Unlike the SQLite
index, the store is not disposable: ``entries`` is the log itself (what the Agent SDK
appended, or what ``push`` copied), so a change of shape is always a new migration,
never a rebuild.

Migrations run on first connect, in one transaction under an advisory lock, so two
processes connecting to a new database at once do not both create the tables; a
database migrated by a newer sessiondex is refused rather than written with old rules.
``sessiondex store init DSN`` runs the same code for DBAs who apply schema changes by
hand.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sessiondex.store.messages import no_team_store, schema_too_new, schema_too_old
from sessiondex.store.vectors import TS_CONFIG as TS_CONFIG  # re-exported

if TYPE_CHECKING:
    from psycopg import AsyncConnection

# pg_advisory_xact_lock key: any constant, unlikely to collide with an application's own.
MIGRATION_LOCK_KEY = 0x5E55_10DE


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str
    # Work SQL cannot do (derived text computed by our own Python), run after ``sql`` in
    # the same transaction.
    then: Callable[[AsyncConnection[Any]], Awaitable[None]] | None = None


M001_INITIAL = f"""
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- One row per session (project key + session id), whoever wrote it. Derived columns
-- are those of SQLite's sessions table (indexer/derive.py SessionState); the push
-- columns say who copied it, from where.
CREATE TABLE sessions (
    id bigserial PRIMARY KEY,
    project_key text NOT NULL,
    session_id text NOT NULL,
    source text NOT NULL DEFAULT 'sdk',        -- last writer: 'sdk' (SessionStore) or 'push'
    config_dir text,                           -- push: the config dir the file was in
    file_path text,                            -- push: the transcript's path there
    pushed_by_user text,
    pushed_by_host text,
    pushed_at timestamptz,
    origin_url text,                           -- git remote get-url origin of cwd, no credentials
    cwd text,
    custom_title text,
    ai_title text,
    agent_name text,
    summary text,
    last_prompt text,
    first_prompt text,
    prompt_fallback text,
    first_command text,
    seen_real_prompt integer NOT NULL DEFAULT 0,
    tag text,
    git_branch text,
    branches_text text,
    pr_text text,
    created_ms bigint,
    last_activity_ms bigint,
    mtime_ms bigint,                           -- push: file mtime; sdk: storage write time
    file_size bigint NOT NULL DEFAULT 0,       -- a pushed file's size; SDK writes: bytes stored
    message_count integer NOT NULL DEFAULT 0,
    raw_message_count integer NOT NULL DEFAULT 0,
    entrypoint text,
    is_sidechain integer,
    forked_from_session text,
    forked_from_message text,
    -- weighted metadata search: A names, B tag/branches/PRs, C summary/prompts
    search tsvector NOT NULL DEFAULT ''::tsvector,
    UNIQUE (project_key, session_id)
);
CREATE INDEX sessions_sid ON sessions (session_id);
CREATE INDEX sessions_origin ON sessions (origin_url);
CREATE INDEX sessions_activity_order
    ON sessions ((coalesce(last_activity_ms, mtime_ms)) DESC, mtime_ms DESC, session_id);
CREATE INDEX sessions_search ON sessions USING gin (search);
CREATE INDEX sessions_names_trgm ON sessions USING gin (
    (coalesce(custom_title, '') || ' ' || coalesce(ai_title, '') || ' ' ||
     coalesce(agent_name, '')) gin_trgm_ops);

-- One row per stored transcript: the session's main one (subpath '') or a subkey
-- (subagents/agent-<id>), the SDK's SessionKey.
CREATE TABLE transcripts (
    id bigserial PRIMARY KEY,
    session_ref bigint NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    subpath text NOT NULL DEFAULT '',
    mtime_ms bigint NOT NULL,                  -- storage write time, strictly increasing
    entry_count bigint NOT NULL DEFAULT 0,
    byte_count bigint NOT NULL DEFAULT 0,
    sdk_summary json,                          -- fold_session_summary state, verbatim
    UNIQUE (session_ref, subpath)
);

-- The log. ``entry`` is json, not jsonb: json keeps the text as given (key order,
-- duplicate keys, number spelling); nothing queries inside it.
CREATE TABLE entries (
    id bigserial PRIMARY KEY,                  -- append order
    transcript_ref bigint NOT NULL REFERENCES transcripts (id) ON DELETE CASCADE,
    uuid text,                                 -- idempotency key where the entry has one
    entry json NOT NULL
);
CREATE UNIQUE INDEX entries_uuid ON entries (transcript_ref, uuid);  -- NULLs never collide
CREATE INDEX entries_order ON entries (transcript_ref, id);

CREATE TABLE branches (
    id bigserial PRIMARY KEY,
    session_ref bigint NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    branch text NOT NULL,
    UNIQUE (session_ref, branch)
);
CREATE INDEX branches_trgm ON branches USING gin (branch gin_trgm_ops);

CREATE TABLE pr_links (
    id bigserial PRIMARY KEY,
    session_ref bigint NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    transcript_ref bigint NOT NULL REFERENCES transcripts (id) ON DELETE CASCADE,
    url text NOT NULL,
    number integer NOT NULL,
    repository text,
    host text,
    provider text,
    UNIQUE (session_ref, transcript_ref, url)
);
CREATE INDEX pr_links_url ON pr_links (url);
CREATE INDEX pr_links_number ON pr_links (number);
CREATE TABLE pr_mentions (LIKE pr_links INCLUDING ALL);
ALTER TABLE pr_mentions
    ADD FOREIGN KEY (session_ref) REFERENCES sessions (id) ON DELETE CASCADE,
    ADD FOREIGN KEY (transcript_ref) REFERENCES transcripts (id) ON DELETE CASCADE;

-- Searchable message text, as SQLite's messages (indexer/text.py fts_text).
CREATE TABLE messages (
    id bigserial PRIMARY KEY,
    session_ref bigint NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    transcript_ref bigint NOT NULL REFERENCES transcripts (id) ON DELETE CASCADE,
    uuid text,
    type text NOT NULL,
    ts_ms bigint,
    text text NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (setweight(to_tsvector('{TS_CONFIG}', text), 'D')) STORED
);
CREATE INDEX messages_session ON messages (session_ref);
CREATE INDEX messages_transcript ON messages (transcript_ref);
CREATE INDEX messages_tsv ON messages USING gin (tsv);

-- push: how far each local file has been sent, per machine and config dir.
CREATE TABLE push_files (
    host text NOT NULL,
    config_dir text NOT NULL,
    path text NOT NULL,
    transcript_ref bigint REFERENCES transcripts (id) ON DELETE CASCADE,
    consumed bigint NOT NULL DEFAULT 0,        -- byte after the last complete line sent
    fingerprint text,                          -- of the consumed prefix (indexer/parse.py)
    meta_digest text,                          -- subagents: the .meta.json last sent
    with_tools boolean NOT NULL DEFAULT false,
    pushed_at timestamptz,
    PRIMARY KEY (host, config_dir, path)
);
"""

# Full text as SQLite's tokenizer reads it (indexer/text.py word_text): the message
# vectors are written from Python-prepared words, not generated from the text by
# PostgreSQL's parser (which keeps "x-docs", paths and diacritics whole).
#
# The column is kept, its generation dropped: a reader of an earlier sessiondex connected
# meanwhile (an MCP server, a search) may hold temporary views of ``messages`` that depend
# on it, and dropping the column failed the upgrade ("other objects depend on it").
M002_WORD_VECTORS = """
ALTER TABLE messages ALTER COLUMN tsv DROP EXPRESSION;
ALTER TABLE messages ALTER COLUMN tsv SET DEFAULT ''::tsvector;
ALTER TABLE messages ALTER COLUMN tsv SET NOT NULL;
"""


# Where a pushed line was in its file: a record without a uuid (a title, a tag, a PR
# link) pushed again from another copy of the same transcript (a second machine, a
# second config dir) is the same line at the same offset, and is not appended twice
# (store/write.py ``_fresh``); appended twice, the older title folded last and won.
M003_LINE_OFFSETS = """
ALTER TABLE entries ADD COLUMN line_offset bigint;
CREATE INDEX entries_line_offset ON entries (transcript_ref, line_offset)
    WHERE uuid IS NULL AND line_offset IS NOT NULL;
"""


# What Claude Code's picker also hides (the index's m012): a team member's session, a
# background daemon's, one that went on in another session. Rows stored before it read
# as none of these until they are pushed again.
M005_HIDDEN_KINDS = """
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS team_name text;
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS session_kind text;
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS seen_parent_link integer NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS continued_in text;
"""


# What was deleted from the store (store/tombstones.py): the delete took the push_files
# rows with the session, and the next push sent the transcript again, whole. Keyed as
# the SDK's SessionKey: subpath '' is the whole session.
M008_DELETED_SESSIONS = """
CREATE TABLE IF NOT EXISTS deleted_sessions (
    project_key text NOT NULL,
    session_id text NOT NULL,
    subpath text NOT NULL DEFAULT '',
    deleted_by_user text,
    deleted_by_host text,
    deleted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_key, session_id, subpath)
);
"""


# Every stored line of every main transcript, in order. Read as text and picked in
# Python: PostgreSQL's json operators raise on a value anywhere in the entry holding
# \u0000 (a NUL in a prompt), which a json column stores without complaint.
_MAIN_ENTRIES = """
SELECT t.session_ref, e.entry::text
FROM transcripts t JOIN entries e ON e.transcript_ref = t.id
WHERE t.subpath = ''
ORDER BY t.session_ref, e.id
"""


def _may_decide(text: str, state: Any) -> bool:
    """Whether a stored line can change the columns migration 5 fills, by a cheap look
    at its text: SessionState then decides (indexer/derive.py, the one rule)."""
    return (
        (not state.seen_parent_link and '"parentUuid"' in text)
        or (state.team_name is None and '"teamName"' in text)
        or '"continued-in"' in text
    )


async def _fold_hidden_kinds(conn: AsyncConnection[Any]) -> None:
    """Fill the new columns of the sessions stored before them. Left empty, a push with
    nothing new sent nothing and the rows stayed unclassified, and a session that grew
    took its kind from its new lines (the first record with a parentUuid had been folded
    already, but the store did not know it)."""
    from sessiondex.indexer.derive import SessionState
    from sessiondex.store.bulk_copy import no_nul
    from sessiondex.transcripts.reader import parse_line

    states: dict[int, SessionState] = {}
    async with conn.cursor(name="sessiondex_m005") as cur:  # streamed, not all in memory
        await cur.execute(_MAIN_ENTRIES)
        async for session_ref, text in cur:
            state = states.setdefault(session_ref, SessionState())
            if not _may_decide(text, state):
                continue
            # As every reader reads a line (a lone surrogate, 1e400: what orjson refuses
            # and PostgreSQL's json keeps), or the store and a fresh push disagree.
            record, _problem = parse_line(text.encode("utf-8", "surrogatepass"), repair_utf8=True)
            if record is not None:
                state.apply(record, set(), set())
    async with conn.cursor() as update:
        await update.executemany(
            "UPDATE sessions SET team_name = %s, session_kind = %s, seen_parent_link = %s,"
            " continued_in = %s WHERE id = %s",
            [
                (
                    no_nul(st.team_name),
                    no_nul(st.session_kind),
                    st.seen_parent_link,
                    no_nul(st.continued_in),
                    ref,
                )
                for ref, st in states.items()
                if st.team_name or st.session_kind or st.seen_parent_link or st.continued_in
            ],
        )


async def _rewrite_vectors(conn: AsyncConnection[Any]) -> None:
    from sessiondex.store.vectors import rewrite_search_vectors

    await rewrite_search_vectors(conn)


async def _canonical_forge_hosts(conn: AsyncConnection[Any]) -> None:
    """Read every stored link of a session that has one on a forge's ``www.`` host again
    (:func:`~sessiondex.transcripts.pr_urls.parse_pr_url`, the rule a fresh push
    applies); of two rows that are now one link, the first stored stays, as a fold
    keeps a link's first spelling."""
    from sessiondex.store.vectors import rewrite_pr_texts
    from sessiondex.transcripts.pr_urls import FORGE_HOST_ALIASES, parse_pr_url

    aliases = list(FORGE_HOST_ALIASES)
    touched: set[int] = set()
    for table in ("pr_links", "pr_mentions"):
        cur = await conn.execute(
            f"SELECT id, session_ref, transcript_ref, url FROM {table} WHERE session_ref IN"
            f" (SELECT session_ref FROM {table} WHERE host = ANY(%s)) ORDER BY id",
            [aliases],
        )
        seen: set[tuple[int, int, str]] = set()
        drop: list[int] = []
        mend: list[tuple[str, str, str, str | None, int]] = []
        for id_, sref, tref, url in await cur.fetchall():
            pr = parse_pr_url(url)
            key = (sref, tref, pr.url if pr is not None else url)
            if key in seen:
                drop.append(id_)
            else:
                seen.add(key)
                if pr is None or pr.url == url:
                    continue
                mend.append((pr.url, pr.host, pr.provider, pr.repository, id_))
            if table == "pr_links":
                touched.add(sref)
        await conn.execute(f"DELETE FROM {table} WHERE id = ANY(%s)", [drop])
        async with conn.cursor() as update:
            await update.executemany(
                f"UPDATE {table} SET url = %s, host = %s, provider = %s, repository = %s"
                " WHERE id = %s",
                mend,
            )
    await conn.execute(
        "UPDATE sessions s SET origin_url = a.host || substr(s.origin_url, length(a.alias) + 1)"
        " FROM unnest(%s::text[], %s::text[]) AS a(alias, host)"
        " WHERE s.origin_url LIKE a.alias || '/%%'",
        [aliases, list(FORGE_HOST_ALIASES.values())],
    )
    await rewrite_pr_texts(conn, sorted(touched))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial", M001_INITIAL),
    Migration(2, "word vectors", M002_WORD_VECTORS, _rewrite_vectors),
    Migration(3, "line offsets", M003_LINE_OFFSETS),
    # PR links and origins stored before www.github.com (and GitLab's and Bitbucket's
    # www. hosts) were read as the forge's own host: the form every query compares.
    Migration(4, "canonical forge hosts", "", _canonical_forge_hosts),
    Migration(5, "hidden kinds", M005_HIDDEN_KINDS, _fold_hidden_kinds),
    # The words were cut and folded by Python's rules, which differ from unicode61's on
    # thousands of characters (a precomposed "й" became "и", a strike-through mark
    # joined two words): made again as the index's tokenizer makes them.
    Migration(6, "tokenizer's own words", "", _rewrite_vectors),
    # The directory is no searchable field (the local index dropped it from its
    # metadata table, m015): made again without it, so both find the same sessions.
    Migration(7, "no directory in the session vector", "", _rewrite_vectors),
    Migration(8, "deleted sessions", M008_DELETED_SESSIONS),
    # An invisible character inside a word (a soft hyphen, a zero width space) is no part
    # of it (indexer/text.py without_invisible; the local index's DERIVATION_VERSION 39):
    # the vectors made before cut "data\u200bbase" into "data" and "base", so `search
    # database --db` missed what the local index found. Made again from the stored
    # text, which still holds the character (snippets show it as written). Not mended
    # here: a NUL that a store written before ff2a1da dropped from derived text (U+FFFD
    # now); only the stored entries still hold it.
    Migration(9, "no invisible characters in the words", "", _rewrite_vectors),
)
SCHEMA_VERSION = MIGRATIONS[-1].version


class SchemaTooNew(RuntimeError):
    """The database was migrated by a newer sessiondex than this one."""


_BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS sessiondex_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""


async def current_version(conn: AsyncConnection) -> int | None:
    """The highest applied migration, or None when the schema was never created."""
    cur = await conn.execute("SELECT to_regclass('sessiondex_migrations') IS NOT NULL")
    row = await cur.fetchone()
    if not row or not row[0]:
        return None
    cur = await conn.execute("SELECT max(version) FROM sessiondex_migrations")
    row = await cur.fetchone()
    return row[0] if row else None


def _check(version: int | None) -> None:
    if version is not None and version > SCHEMA_VERSION:
        raise SchemaTooNew(schema_too_new(version, SCHEMA_VERSION))


class SchemaTooOld(RuntimeError):
    """The database holds no team store, or one not migrated to what a command reads.
    Only commands that must not migrate say so (``store deleted``, ``store delete``'s
    lookup); the others migrate on connect."""


async def check_readable(conn: AsyncConnection, needed: int) -> None:
    """Raise :class:`SchemaTooOld` unless the store is at migration ``needed`` or later,
    and :class:`SchemaTooNew` if a newer sessiondex migrated it (its tables may differ
    from what is read here)."""
    version = await current_version(conn)
    if version is None:
        raise SchemaTooOld(no_team_store())
    _check(version)
    if version < needed:
        raise SchemaTooOld(schema_too_old(version, needed, reader="command"))


async def migrate(conn: AsyncConnection) -> list[Migration]:
    """Apply the migrations this database lacks; return those applied.

    A cheap read first (the common case: nothing to do, no lock taken), then one
    transaction under a transaction-scoped advisory lock: a second process waits, then
    finds the work done. DDL is transactional in PostgreSQL, so a failed migration
    leaves the schema as it was.
    """
    version = await current_version(conn)
    _check(version)
    if version == SCHEMA_VERSION:
        return []
    applied: list[Migration] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", [MIGRATION_LOCK_KEY])
        await conn.execute(_BOOKKEEPING)
        cur = await conn.execute("SELECT version FROM sessiondex_migrations")
        done = {row[0] for row in await cur.fetchall()}
        _check(max(done, default=None))
        for migration in MIGRATIONS:
            if migration.version in done:
                continue
            if migration.sql:
                await conn.execute(migration.sql.encode())
            if migration.then is not None:
                await migration.then(conn)
            await conn.execute(
                "INSERT INTO sessiondex_migrations (version, name) VALUES (%s, %s)",
                [migration.version, migration.name],
            )
            applied.append(migration)
    return applied
