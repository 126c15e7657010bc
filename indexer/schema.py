"""The index schema, as sqlite-utils migrations.

The index is derived and disposable: a change of shape is a new migration here (or, for
a change of derivation rules, a bump of ``DERIVATION_VERSION``, which makes ``open_db``
drop every row so the next refresh rebuilds from the transcripts).

Every table has an explicit INTEGER primary key: external-content FTS5 tables are keyed
on it, and implicit rowids are not stable across VACUUM.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlite_utils import Database, Migrations

from sessiondex.indexer.shape import (  # noqa: F401 - DERIVATION_VERSION re-exported
    DERIVATION_VERSION,
    FTS_TOKENIZER,
    ID_LIKE_NAME_SQL,
    MIGRATION_SET,
    SESSION_FTS_COLUMNS,
    SHOWN_TITLE_COLUMN,
    SHOWN_TITLE_SOURCES,
    TITLE_FTS_COLUMNS,
    TITLE_FTS_PREFIX,
)
from sessiondex.indexer.textstore import FTS_FUNCTION, SHOWN_TITLE_FUNCTION
from sessiondex.indexer.textstore import FUNCTION as TEXT_FUNCTION

migrations = Migrations(MIGRATION_SET)


@migrations()
def m001_initial(db: Database) -> None:
    db.execute("""
        CREATE TABLE files (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            root TEXT NOT NULL,
            project_key TEXT NOT NULL,
            session_id TEXT NOT NULL,
            kind TEXT NOT NULL,              -- 'main' or 'subagent'
            agent_id TEXT,
            session_rowid INTEGER,           -- sessions.id this file belongs to
            size INTEGER NOT NULL DEFAULT 0,
            mtime_ns INTEGER NOT NULL DEFAULT 0,
            inode INTEGER NOT NULL DEFAULT 0,
            device INTEGER NOT NULL DEFAULT 0,
            consumed INTEGER NOT NULL DEFAULT 0,   -- byte after the last complete line read
            fingerprint TEXT,                      -- of the consumed prefix's head and tail
            checked_ns INTEGER NOT NULL DEFAULT 0, -- wall clock when the stat was taken
            bad_lines INTEGER NOT NULL DEFAULT 0,
            problems TEXT                          -- JSON {kind: count}
        )""")
    db.execute("CREATE INDEX files_session ON files(session_rowid)")
    db.execute("""
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,          -- = files.id of the main transcript
            root TEXT NOT NULL,
            project_key TEXT NOT NULL,
            session_id TEXT NOT NULL,
            file_path TEXT NOT NULL UNIQUE,
            archived INTEGER NOT NULL DEFAULT 0,
            cwd TEXT,
            custom_title TEXT,
            ai_title TEXT,
            agent_name TEXT,
            summary TEXT,
            last_prompt TEXT,
            first_prompt TEXT,               -- full text; cut for display in query/
            prompt_fallback TEXT,            -- first slash command, when no prompt
            first_command TEXT,
            seen_real_prompt INTEGER NOT NULL DEFAULT 0,
            tag TEXT,
            git_branch TEXT,
            branches_text TEXT,
            pr_text TEXT,
            created_ms INTEGER,
            last_activity_ms INTEGER,
            mtime_ns INTEGER NOT NULL DEFAULT 0,
            file_size INTEGER NOT NULL DEFAULT 0,
            message_count INTEGER NOT NULL DEFAULT 0,
            raw_message_count INTEGER NOT NULL DEFAULT 0,  -- any user/assistant record
            entrypoint TEXT,
            is_sidechain INTEGER,            -- NULL until the first record is seen
            forked_from_session TEXT,
            forked_from_message TEXT
        )""")
    db.execute("CREATE INDEX sessions_sid ON sessions(session_id)")
    db.execute("CREATE INDEX sessions_project ON sessions(project_key)")
    db.execute("CREATE INDEX sessions_activity ON sessions(last_activity_ms)")
    db.execute("""
        CREATE TABLE branches (
            id INTEGER PRIMARY KEY,
            session_rowid INTEGER NOT NULL,
            branch TEXT NOT NULL,
            UNIQUE(session_rowid, branch)
        )""")
    db.execute("CREATE INDEX branches_branch ON branches(branch)")
    for table in ("pr_links", "pr_mentions"):
        db.execute(f"""
            CREATE TABLE {table} (
                id INTEGER PRIMARY KEY,
                session_rowid INTEGER NOT NULL,
                file_id INTEGER NOT NULL,
                url TEXT NOT NULL,
                number INTEGER NOT NULL,
                repository TEXT,
                host TEXT,
                provider TEXT,
                UNIQUE(session_rowid, file_id, url)
            )""")
        db.execute(f"CREATE INDEX {table}_url ON {table}(url)")
        db.execute(f"CREATE INDEX {table}_number ON {table}(number)")
    db.execute("""
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            session_rowid INTEGER NOT NULL,
            file_id INTEGER NOT NULL,
            uuid TEXT,
            type TEXT NOT NULL,
            ts_ms INTEGER,
            text TEXT NOT NULL               -- as indexed (indexer/text.py fts_text)
        )""")
    db.execute("CREATE INDEX messages_session ON messages(session_rowid)")
    db.execute("CREATE INDEX messages_file ON messages(file_id)")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    # The searchable metadata, as indexed (indexer/text.py), apart from ``sessions`` so
    # that a counter update does not re-index the session's FTS row.
    columns = ",\n".join(f"{c} TEXT" for c in SESSION_FTS_COLUMNS)
    db.execute(f"CREATE TABLE session_search (id INTEGER PRIMARY KEY, {columns})")
    _external_content_fts(db, "session_search", SESSION_FTS_COLUMNS)
    _external_content_fts(db, "messages", ("text",))


def _external_content_fts(db: Database, table: str, columns: Sequence[str]) -> None:
    """``{table}_fts``, an FTS5 index over ``table`` kept in step by three triggers: the
    objects sqlite-utils' ``Table.enable_fts(..., create_triggers=True)`` creates, with the
    same names and SQL. It is written out because inside a transaction (every migration
    runs in one) sqlite-utils 4 splits a script into statements one character at a time:
    17 of the ~55 ms that creating a new index took."""
    fts = f"{table}_fts"
    names = ", ".join(f'"{c}"' for c in columns)
    new = ", ".join(f'new."{c}"' for c in columns)
    old = ", ".join(f'old."{c}"' for c in columns)
    insert = f'INSERT INTO "{fts}" (rowid, {names}) VALUES (new.rowid, {new});'
    delete = f'INSERT INTO "{fts}" ("{fts}", rowid, {names}) VALUES(\'delete\', old.rowid, {old});'
    db.execute(
        f'CREATE VIRTUAL TABLE "{fts}" USING FTS5 (\n    {names},\n'
        f"    tokenize='{FTS_TOKENIZER}',\n    content=\"{table}\"\n)"
    )
    db.execute(f'CREATE TRIGGER "{table}_ai" AFTER INSERT ON "{table}" BEGIN\n  {insert}\nEND')
    db.execute(f'CREATE TRIGGER "{table}_ad" AFTER DELETE ON "{table}" BEGIN\n  {delete}\nEND')
    db.execute(
        f'CREATE TRIGGER "{table}_au" AFTER UPDATE ON "{table}" BEGIN\n  {delete}\n  {insert}\nEND'
    )


@migrations()
def m002_session_object(db: Database) -> None:
    """The contract's session object, stored as JSON whenever the session changes
    (indexer/objects.py), so listings decode instead of rebuilding."""
    db.execute("ALTER TABLE sessions ADD COLUMN object_json TEXT")


@migrations()
def m003_activity_order_index(db: Database) -> None:
    """Listings are "newest activity first": an index on exactly that ORDER BY
    (query/sessions.py ACTIVITY_SQL) lets ``LIMIT N`` stop after N rows instead of
    sorting every session, so a page costs the same with 10x the sessions."""
    db.execute(
        "CREATE INDEX sessions_activity_order ON sessions("
        "coalesce(last_activity_ms, mtime_ns / 1000000) DESC, mtime_ns DESC, session_id)"
    )
    db.execute("DROP INDEX IF EXISTS sessions_activity")


@migrations()
def m004_message_offsets(db: Database) -> None:
    """Each message row names the byte offset of its line, and a file cannot hold two
    rows for one offset: ingesting the same bytes twice (two processes racing on one
    file) is then an error that rolls back, never a duplicate. The unique index replaces
    the plain one on ``file_id`` (same prefix, so the same lookups).

    ``files.scanned``: how far past ``consumed`` a previous pass already looked without
    finding a newline, so a long line that grows in chunks is searched for its end only
    in the new bytes (otherwise every pass re-reads it: quadratic in its length).
    (DERIVATION_VERSION 4 refills rows written without offsets.)"""
    db.execute("ALTER TABLE messages ADD COLUMN line_offset INTEGER")
    db.execute("DROP INDEX IF EXISTS messages_file")
    db.execute("CREATE UNIQUE INDEX messages_file_offset ON messages(file_id, line_offset)")
    db.execute("ALTER TABLE files ADD COLUMN scanned INTEGER NOT NULL DEFAULT 0")


@migrations()
def m005_fork_origin_index(db: Database) -> None:
    """``list --limit N`` is the first N rows of the whole list, where each fork follows
    its origin (query/listing.py): a page looks up the forks of the sessions on it, and
    without this index that lookup reads every row (20 ms at 20,000 sessions against
    0.1 ms for the page). Partial: most sessions are not forks."""
    db.execute(
        "CREATE INDEX sessions_fork_origin ON sessions(forked_from_session)"
        " WHERE forked_from_session IS NOT NULL"
    )


@migrations()
def m006_entrypoint_window(db: Database) -> None:
    """``sessions.last_entrypoint`` and the byte offset of its line: with ``entrypoint``
    (the first one) they answer Claude Code's head/tail window test for a desktop
    session from the index, so ``list``'s warning and ``stats`` open no transcript
    (transcripts/retention.py ``window_desktop``; DERIVATION_VERSION 5 fills them)."""
    db.execute("ALTER TABLE sessions ADD COLUMN last_entrypoint TEXT")
    db.execute("ALTER TABLE sessions ADD COLUMN last_entrypoint_offset INTEGER")


@migrations()
def m007_compressed_message_text(db: Database) -> None:
    """Message text stored compressed (``messages.body``, indexer/textstore.py) and read
    back through the view ``message_text``, which is ``messages_fts``' external content:
    FTS5's ``snippet()``, ``'rebuild'`` and integrity check read the text from it, and
    the triggers hand FTS5 the decompressed text of the row inserted or deleted.

    The rows are derived, so the table is made anew rather than converted (and
    DERIVATION_VERSION 7 refills it). The triggers keep their names: a bulk build drops
    and restores ``messages_ai`` by name (indexer/bulk.py)."""
    # A bulk build interrupted before this migration saved the old insert trigger's
    # SQL; the rows it describes are dropped here, so is that note.
    db.execute("DELETE FROM meta WHERE key = 'bulk_insert_trigger'")
    for trigger in ("messages_ai", "messages_ad", "messages_au"):
        db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    db.execute("DROP TABLE IF EXISTS messages_fts")
    db.execute("DROP TABLE IF EXISTS messages")
    db.execute(f"""
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            session_rowid INTEGER NOT NULL,
            file_id INTEGER NOT NULL,
            uuid TEXT,
            type TEXT NOT NULL,
            ts_ms INTEGER,
            line_offset INTEGER,
            body BLOB NOT NULL   -- {TEXT_FUNCTION}(body) is the text as indexed
        )""")
    db.execute("CREATE INDEX messages_session ON messages(session_rowid)")
    db.execute("CREATE UNIQUE INDEX messages_file_offset ON messages(file_id, line_offset)")
    db.execute(f"""
        CREATE VIEW message_text AS
        SELECT id, session_rowid, file_id, uuid, type, ts_ms, line_offset,
               {TEXT_FUNCTION}(body) AS text
        FROM messages""")
    db.execute(
        "CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='message_text',"
        f" content_rowid='id', tokenize='{FTS_TOKENIZER}')"
    )
    new, old = f"{TEXT_FUNCTION}(new.body)", f"{TEXT_FUNCTION}(old.body)"
    delete = "INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, {})"
    insert = "INSERT INTO messages_fts(rowid, text) VALUES (new.id, {})"
    db.execute(
        f"CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN {insert.format(new)}; END"
    )
    db.execute(
        f"CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN {delete.format(old)}; END"
    )
    db.execute(
        "CREATE TRIGGER messages_au AFTER UPDATE ON messages BEGIN"
        f" {delete.format(old)}; {insert.format(new)}; END"
    )


@migrations()
def m008_session_search_view(db: Database) -> None:
    """``session_search`` becomes a view of ``sessions`` instead of a table holding a
    second copy of its searchable columns (the first prompt above all: 5.5 of the
    text-heavy bench index's 128 MB). The view applies ``fts_text`` through the SQL
    function :data:`~sessiondex.indexer.textstore.FTS_FUNCTION`, so FTS5 reads exactly
    what the table held, and the triggers move to ``sessions``. Their update trigger
    fires only when a searchable column changes, as writing the table did: a counter or
    object update does not re-index the session. The trigger names stay (a bulk build
    drops and restores ``session_search_ai`` by name, indexer/bulk.py)."""
    build_session_search(db, shown_title=False)


@migrations()
def m009_text_dictionaries(db: Database) -> None:
    """The Zstandard dictionaries message bodies are compressed against
    (indexer/textstore.py): trained on a sample of the history's messages at a cold
    build; ``zstd_id`` is the ID each frame names. Derived, like the rows that use them
    (DERIVATION_VERSION 8 re-stores every body)."""
    db.execute(
        "CREATE TABLE text_dicts (id INTEGER PRIMARY KEY, zstd_id INTEGER NOT NULL UNIQUE,"
        " content BLOB NOT NULL)"
    )


@migrations()
def m010_sessions_by_project_and_cwd(db: Database) -> None:
    """The cwds recorded in a scope's project dirs, read from the index alone: a scope
    leaves out sessions of another directory sharing the project dir
    (``query.scopes.strangers_sql``), and without this index that read visited every
    session row of the project (9 ms for a project of 5,000 sessions, on every keystroke
    of the picker); with it, only the distinct (key, cwd) entries."""
    db.execute("CREATE INDEX sessions_project_cwd ON sessions(project_key, cwd)")


def _view_values(prefix: str, columns: Sequence[str]) -> list[str]:
    """The SQL of the ``session_search`` view's ``columns`` computed from a ``sessions``
    row (``new``/``old`` in a trigger, none in the view): what the FTS tables index."""
    dot = f"{prefix}." if prefix else ""
    sources = ", ".join(f"{dot}{c}" for c in SHOWN_TITLE_SOURCES)
    return [
        f"{SHOWN_TITLE_FUNCTION}({sources})"
        if c == SHOWN_TITLE_COLUMN
        else f"{FTS_FUNCTION}({dot}{c})"
        for c in columns
    ]


def build_session_search(db: Database, *, shown_title: bool = True) -> None:
    """The ``session_search`` view of ``sessions``, its FTS5 index (the searchable
    columns through ``fts_text``, then the computed ``shown_title``: indexer/shape.py)
    and the three triggers that keep the index in step, from scratch, then indexed
    (``'rebuild'``). m008 made the view (as it was: without ``shown_title``); m011
    added ``shown_title``."""
    for trigger in ("session_search_ai", "session_search_ad", "session_search_au"):
        db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    db.execute("DROP TABLE IF EXISTS session_search_fts")
    kind = db.execute("SELECT type FROM sqlite_master WHERE name = 'session_search'").fetchone()
    if kind is not None:  # a table before m008, a view after it
        db.execute(f"DROP {kind[0].upper()} session_search")

    indexed = (*SESSION_FTS_COLUMNS, *([SHOWN_TITLE_COLUMN] if shown_title else []))

    def values(prefix: str) -> list[str]:
        return _view_values(prefix, indexed)

    names = ", ".join(indexed)
    columns = ", ".join(f"{v} AS {c}" for v, c in zip(values(""), indexed))
    db.execute(f"CREATE VIEW session_search AS SELECT id, {columns} FROM sessions")
    db.execute(
        f"CREATE VIRTUAL TABLE session_search_fts USING fts5({names},"
        f" content='session_search', content_rowid='id', tokenize='{FTS_TOKENIZER}')"
    )
    insert = (
        f"INSERT INTO session_search_fts(rowid, {names})"
        f" VALUES (new.id, {', '.join(values('new'))})"
    )
    delete = (
        f"INSERT INTO session_search_fts(session_search_fts, rowid, {names})"
        f" VALUES ('delete', old.id, {', '.join(values('old'))})"
    )
    watched = tuple(
        dict.fromkeys((*SESSION_FTS_COLUMNS, *(SHOWN_TITLE_SOURCES if shown_title else ())))
    )
    changed = " OR ".join(f"old.{c} IS NOT new.{c}" for c in watched)
    db.execute(f"CREATE TRIGGER session_search_ai AFTER INSERT ON sessions BEGIN {insert}; END")
    db.execute(f"CREATE TRIGGER session_search_ad AFTER DELETE ON sessions BEGIN {delete}; END")
    db.execute(
        f"CREATE TRIGGER session_search_au AFTER UPDATE OF {', '.join(watched)} ON sessions"
        f" WHEN {changed} BEGIN {delete}; {insert}; END"
    )
    db.execute("INSERT INTO session_search_fts(session_search_fts) VALUES ('rebuild')")


@migrations()
def m011_shown_title(db: Database) -> None:
    """``session_search_fts`` gains ``shown_title``: the title the picker shows a session
    with neither a custom nor an AI title, which Claude Code's picker filters as letters
    are typed. Computed by the view (no ``sessions`` column): the view, the FTS table
    and its triggers are made again and indexed (``'rebuild'``, a few thousand rows)."""
    build_session_search(db)


@migrations()
def m012_hidden_kinds(db: Database) -> None:
    """``sessions`` gains what Claude Code's picker and ``--continue`` also hide: a team
    member's session (``team_name``), a background daemon's (``session_kind``), and one
    that went on in another session (``continued_in``). DERIVATION_VERSION 22 fills
    them."""
    for column in ("team_name", "session_kind", "continued_in"):
        db.execute(f"ALTER TABLE sessions ADD COLUMN {column} TEXT")
    db.execute("ALTER TABLE sessions ADD COLUMN seen_parent_link INTEGER NOT NULL DEFAULT 0")


@migrations()
def m013_files_ctime(db: Database) -> None:
    """``files`` gains the inode's change time (``ctime_ns``): a same-size edit whose
    mtime was set back (``touch -r``, ``cp -p`` in place) moves it, where size, mtime
    and inode all stay (``shape.stat_settled``). Rows made before have none and are
    compared without it until the refresh fills it in (``refresh.fill_ctimes``)."""
    db.execute("ALTER TABLE files ADD COLUMN ctime_ns INTEGER")


@migrations()
def m014_picker_archive(db: Database) -> None:
    """Claude Code's picker archive (ctrl+e: ``<id>/archived.json``), which its picker
    and ``--continue`` hide: ``sessions.picker_archived``, and the sidecar's ``lstat``
    as last read in the main transcript's ``files`` row (``picker_archive``), so that a
    refresh reads it again only when it changed. Rows made before hold none: the next
    refresh reads each sidecar there is, once."""
    db.execute("ALTER TABLE sessions ADD COLUMN picker_archived INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE files ADD COLUMN picker_archive TEXT")


@migrations()
def m015_no_directory_in_metadata_search(db: Database) -> None:
    """``session_search_fts`` no longer indexes ``cwd``. FTS5 weighs a word by the rows
    holding it in any column: the name of the project most sessions ran in was in most
    rows through their directory, its weight clamped to ~0 for every column, and a
    session titled with it ranked below a passing mention in a message. The spec's
    searchable fields do not include the directory; ``--scope`` narrows by it. The view,
    the FTS table and its triggers are made again and indexed (``'rebuild'``)."""
    build_session_search(db)


@migrations()
def m016_head_entrypoint(db: Database) -> None:
    """``sessions.head_entrypoint``: the first entrypoint when its line lies whole in the
    first 64 KiB, the head window's answer to Claude Code's desktop test. ``entrypoint``
    (the first wherever it lies) counted a desktop one past the head, which the sweep
    never reads (transcripts/retention.py ``window_desktop``; DERIVATION_VERSION 35
    fills it)."""
    db.execute("ALTER TABLE sessions ADD COLUMN head_entrypoint TEXT")


def build_title_search(db: Database) -> None:
    """``session_title_fts``: the columns one or two typed letters filter
    (:data:`~sessiondex.indexer.shape.TITLE_FTS_COLUMNS`), read from the
    ``session_search`` view and indexed with a prefix index of one and two characters,
    and its three triggers, from scratch, then indexed (``'rebuild'``). Why a table of
    its own: shape.py says, beside the columns. Its update trigger fires only when a
    column the title shown is made from, or another of its columns, changed."""
    for trigger in ("session_title_ai", "session_title_ad", "session_title_au"):
        db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    db.execute("DROP TABLE IF EXISTS session_title_fts")
    names = ", ".join(TITLE_FTS_COLUMNS)
    db.execute(
        f"CREATE VIRTUAL TABLE session_title_fts USING fts5({names},"
        " content='session_search', content_rowid='id',"
        f" prefix='{TITLE_FTS_PREFIX}', tokenize='{FTS_TOKENIZER}')"
    )
    insert = (
        f"INSERT INTO session_title_fts(rowid, {names})"
        f" VALUES (new.id, {', '.join(_view_values('new', TITLE_FTS_COLUMNS))})"
    )
    delete = (
        f"INSERT INTO session_title_fts(session_title_fts, rowid, {names})"
        f" VALUES ('delete', old.id, {', '.join(_view_values('old', TITLE_FTS_COLUMNS))})"
    )
    stored = [c for c in TITLE_FTS_COLUMNS if c != SHOWN_TITLE_COLUMN]
    watched = tuple(dict.fromkeys((*stored, *SHOWN_TITLE_SOURCES)))
    changed = " OR ".join(f"old.{c} IS NOT new.{c}" for c in watched)
    db.execute(f"CREATE TRIGGER session_title_ai AFTER INSERT ON sessions BEGIN {insert}; END")
    db.execute(f"CREATE TRIGGER session_title_ad AFTER DELETE ON sessions BEGIN {delete}; END")
    db.execute(
        f"CREATE TRIGGER session_title_au AFTER UPDATE OF {', '.join(watched)} ON sessions"
        f" WHEN {changed} BEGIN {delete}; {insert}; END"
    )
    db.execute("INSERT INTO session_title_fts(session_title_fts) VALUES ('rebuild')")


@migrations()
def m017_title_prefix_index(db: Database) -> None:
    """``session_title_fts``: the typed letters' filter columns again, with a prefix
    index of one and two characters (:func:`build_title_search`; shape.py
    ``TITLE_FTS_COLUMNS`` says why). Made and indexed from the rows there are
    (``'rebuild'``, a few thousand short rows)."""
    build_title_search(db)


@migrations()
def m018_session_id_width_indexes(db: Database) -> None:
    """What a table's ID column is sized by (``query/idprefix.prefix_width``) read from
    two indexes, not the sessions' wide rows: every resumable session's ID (a covering
    index of the columns its filter reads), and the few sessions whose name is one
    word of ``MIN_ID_PREFIX`` characters or more (``shape.ID_LIKE_NAME_SQL``), which
    could read as an ID prefix (a partial index whose condition the query repeats).
    Scanning the table for them read every row's stored object: 60-200 ms of each
    ``list``/``search``/``resolve`` table at 20,000 sessions."""
    db.execute(
        "CREATE INDEX sessions_id_width ON sessions(session_id, raw_message_count, archived, root)"
    )
    db.execute(f"CREATE INDEX sessions_id_like_names ON sessions(id) WHERE {ID_LIKE_NAME_SQL}")


@migrations()
def m019_session_aliases(db: Database) -> None:
    """``session_aliases``: each ``<config>/projects/<key>/.session-aliases`` the refresh
    saw (its path, its stat to tell a change, and the project dirs its lines name, one
    key a line in ``aliases``), so that a scope takes those dirs as Claude Code's picker
    and ``--continue`` do (``query.scopes.scope_dirs``; docs/resolution.md#scopes)
    without the query layer opening a file. Empty until the next refresh, which the
    check before a reading command asks for when a file is there
    (``indexer/freshness.py``)."""
    db.execute("""
        CREATE TABLE session_aliases (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            root TEXT NOT NULL,
            project_key TEXT NOT NULL,       -- the dir holding the file
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            inode INTEGER NOT NULL,
            ctime_ns INTEGER NOT NULL,
            aliases TEXT NOT NULL            -- the project keys it names, one a line
        )""")
    db.execute("CREATE INDEX session_aliases_project ON session_aliases(project_key)")
