"""``sessiondex.Index``: the one way into the index for every front end.

The CLI, the SDK-style functions (:mod:`sessiondex.sdk`) and every later front end
(picker, MCP server, web view) need the same three things: which config dirs to answer
for, which database to open (and whether read-only), and the one rule for refreshing
before a read — bring the index up to date with a cheap incremental pass, unless the
caller said not to or a live ``watch`` already keeps it current. That rule lives here
and nowhere else; the query, action and render layers take an open database and answer.

Example::

    from sessiondex import Index

    with Index() as index:                      # ~/.claude, the default database
        for session in index.list(scope="all", limit=5):
            print(session["title"])
        hits = index.search("auth refactor", scope="all")
        found = index.resolve("Auth refactor")  # ID, name, path or ID prefix
        print(index.show(found.session["session_id"], format="md"))
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlite_utils import Database

    from sessiondex.actions.archive import ArchiveRun, RestoreResult
    from sessiondex.actions.mutations import MutationResult
    from sessiondex.indexer.stats import ProgressCallback, RefreshStats
    from sessiondex.query.filters import Filters
    from sessiondex.query.resolve import Resolution
    from sessiondex.query.search import SearchOutcome
    from sessiondex.query.teamdb import TeamDatabase
    from sessiondex.render.conversation import Conversation

    DbArg = str | os.PathLike[str] | sqlite3.Connection | Database | None


Sessions = list[dict[str, Any]]  # session objects, as the JSON output prints them
MessageHits = dict[str, list[str]]  # session file_path → uuids of matching messages


class Index:
    """The index of one or more Claude config dirs, and every question asked of it.

    ``db`` is a path, an open ``sqlite3.Connection`` or sqlite-utils ``Database``, or
    None for the default (``$SESSIONDEX_DB``, else ``$XDG_CACHE_HOME/sessiondex/index.db``).
    A ``postgresql://`` DSN answers from the team store instead (read-only; ``refresh``
    does nothing there: ``push`` and SDK writes fill it), with the same questions.
    ``config_dirs`` defaults as the CLI's ``--config-dir`` does. ``refresh=False``
    answers from the index as it is (the CLI's ``--no-refresh``).

    Handles are opened on first use and closed by :meth:`close` (or ``with``); a
    connection passed in is the caller's and is never closed here.
    """

    def __init__(
        self,
        db: DbArg = None,
        config_dirs: Iterable[str | os.PathLike[str]] | None = None,
        *,
        refresh: bool = True,
    ) -> None:
        from sessiondex.transcripts.config import config_dirs as resolve_config_dirs

        self.roots: list[Path] = resolve_config_dirs(
            [os.fspath(d) for d in config_dirs] if config_dirs is not None else None
        )
        self.auto_refresh = refresh
        self._given: Database | None = None
        self._path: Path | None = None
        self._team_dsn: str | None = None
        self._team: TeamDatabase | None = None
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        from sessiondex.query.teamdb import is_dsn

        if db is None and is_dsn(os.environ.get("SESSIONDEX_DB")):
            db = os.environ["SESSIONDEX_DB"]
        if is_dsn(db):
            assert isinstance(db, str)
            self._team_dsn = db
        elif db is None or isinstance(db, (str, os.PathLike)):
            from sessiondex.indexer.db import default_db_path

            self._path = Path(db) if db is not None else default_db_path()
        else:
            self._given = _as_database(db)
            self._path = _database_file(self._given)
        self._writer: Database | None = None
        self._reader: Database | None = None
        self._refreshed = False

    # ------------------------------------------------------------------ handles
    @property
    def db_path(self) -> Path | None:
        """The database file; None for an in-memory database passed in or the team store."""
        return self._path

    @property
    def team_dsn(self) -> str | None:
        """The team store's DSN when this index answers from PostgreSQL."""
        return self._team_dsn

    def watcher_alive(self) -> bool:
        """True while a ``sessiondex watch`` keeps this database current."""
        from sessiondex.indexer.lock import watcher_alive

        return self._path is not None and watcher_alive(self._path)

    def writer(self) -> Database:
        """The database opened for writing (created and migrated if needed)."""
        if self._team_dsn is not None:
            raise ValueError(
                "the team store is read-only here: `sessiondex push` and the Agent SDK's"
                " PostgresSessionStore write it; index, rename, tag, fork, delete and"
                " archive work on a local index"
            )
        if self._given is not None:
            return self._given
        if self._writer is None:
            from sessiondex.indexer.db import open_db

            self._writer = open_db(self._path)
        return self._writer

    def reader(self) -> Database:
        """The database for answering, first brought up to date unless ``refresh=False``
        or a live watcher keeps it so. Without a refresh to do it is a read-only handle
        (no sqlite-utils import: start-up time is a benchmark figure)."""
        if self._team_dsn is not None:
            if self._team is None:
                from sessiondex.query.teamdb import TeamDatabase

                self._team = TeamDatabase(self._team_dsn)
            return self._team  # type: ignore[return-value]  # the subset queries use
        if self._reader is None:
            if self._given is not None:
                self.ensure_fresh()
                self._reader = self._given
            elif not self.auto_refresh or self.watcher_alive():
                from sessiondex.indexer.db import open_db

                assert self._path is not None
                self._reader = open_db(self._path, readonly=True)
            else:
                self.ensure_fresh()
                self._reader = self.writer()
        return self._reader

    def ensure_fresh(self) -> None:
        """Refresh once in this object's life, by the rule in the module docstring (never
        for the team store: it is not built from this machine's transcripts)."""
        if self._team_dsn is not None:
            return
        if self._refreshed or not self.auto_refresh or self.watcher_alive():
            return
        self.refresh()

    def refresh(
        self,
        *,
        rebuild: bool = False,
        progress: ProgressCallback | None = None,
        include_tools: bool | None = None,
    ) -> RefreshStats:
        """Bring the index up to date with every transcript now (``index``); nothing to
        do for the team store (``push`` fills it from each machine)."""
        if self._team_dsn is not None:
            from sessiondex.indexer.stats import RefreshStats

            return RefreshStats()
        from sessiondex.indexer.refresh import refresh

        stats = refresh(
            self.writer(),
            self.roots,
            rebuild=rebuild,
            progress=progress,
            include_tools=include_tools,
        )
        self._refreshed = True
        return stats

    def close(self) -> None:
        if self._team is not None:
            self._team.close()
            self._team = None
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
        handles = {id(h): h for h in (self._reader, self._writer) if h is not None}
        for handle in handles.values():
            if handle is not self._given:
                handle.close()
        self._reader = self._writer = None

    def __enter__(self) -> Index:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ answers
    def list(self, **filters: Any) -> Sessions:
        """Picker rows, newest activity first. Keyword arguments are
        :class:`~sessiondex.query.filters.Filters` fields (``cwd``, ``scope``,
        ``branch``, ``current_branch``, ``since``, ``all_kinds``,
        ``include_archived``, ``limit``)."""
        from sessiondex.query.listing import list_sessions

        return list_sessions(self.reader(), _filters(filters))

    def search(
        self,
        query: str,
        *,
        raw: bool = False,
        markers: tuple[str, str] | None = None,
        **filters: Any,
    ) -> Sessions:
        """Ranked sessions for a full-text query, a PR/MR URL or ``owner/repo#N`` (each
        with ``score``, ``snippet``, ``matched_by``): every word's matches, else the best
        partial matches, else the typo fallback. ``markers`` surround the matched words
        in snippets (default ``[`` ``]``; the web view uses control characters, so it can
        escape a snippet first and then mark it)."""
        return self.search_outcome(query, raw=raw, markers=markers, **filters).rows

    def search_outcome(
        self,
        query: str,
        *,
        raw: bool = False,
        markers: tuple[str, str] | None = None,
        elsewhere: bool = False,
        **filters: Any,
    ) -> SearchOutcome:
        """:meth:`search` with what the rows are (``kind``: match, partial, fuzzy, none),
        the words used and, with ``elsewhere``, how many sessions wider scopes match
        when this one has none: what a front end needs to label the rows."""
        from sessiondex.query.search import DEFAULT_MARKERS, run_search

        return run_search(
            self.reader(),
            query,
            _filters(filters),
            raw=raw,
            markers=markers or DEFAULT_MARKERS,
            elsewhere=elsewhere,
        )

    def from_pr(self, pr: str | None, **filters: Any) -> Sessions:
        """Sessions linked to a PR number or URL (every linked one with None)."""
        from sessiondex.query.prs import from_pr

        return from_pr(self.reader(), pr, _filters(filters))

    def resolve(
        self, arg: str, *, cwd: str | None = None, include_archived: bool = False
    ) -> Resolution:
        """One session from an ID, name, transcript path or ID prefix; raises
        :class:`~sessiondex.query.resolve.NotFound` or ``Ambiguous``."""
        from sessiondex.query.resolve import resolve

        return resolve(
            self.reader(), arg, cwd=cwd, roots=self.roots, include_archived=include_archived
        )

    def continue_session(
        self, *, cwd: str | None = None, print_mode: bool = False
    ) -> dict[str, Any] | None:
        """The session ``claude --continue`` would open in ``cwd``."""
        from sessiondex.query.resolve import continue_session

        return continue_session(self.reader(), cwd=cwd, print_mode=print_mode)

    def stats(self) -> dict[str, Any]:
        """Counts, sizes, freshness, watcher status and the retention outlook."""
        from sessiondex.query.cleanup import cleanup_summary
        from sessiondex.query.stats import index_stats

        db = self.reader()
        result = index_stats(db, self._path or Path(":memory:"))
        result["cleanup"] = cleanup_summary(db, self.roots)
        return result

    def conversation(
        self, arg: str, *, cwd: str | None = None, include_archived: bool = False
    ) -> Conversation:
        """The live branch of a session's conversation, read from its transcript."""
        found = self.resolve(arg, cwd=cwd, include_archived=include_archived)
        return self.conversation_of(found)

    def conversation_of(self, found: Resolution) -> Conversation:
        """The conversation of a resolved session: read from its transcript, or on the
        team store from its stored entries (written as a transcript tree in a scratch
        dir this object removes on :meth:`close`, then read by the same chain and
        render code, so ``show`` is the same from either backend)."""
        from sessiondex.render.conversation import build_conversation

        if self._team is None or found.row.get("id", -1) < 0:
            return build_conversation(found.session)
        if self._scratch is None:
            self._scratch = tempfile.TemporaryDirectory(prefix="sessiondex-show-")
        session = _materialize(self._team, found, Path(self._scratch.name))
        return build_conversation(session)

    def show(
        self,
        arg: str,
        *,
        format: str = "md",
        tools: bool = False,
        subagents: bool = False,
        cwd: str | None = None,
    ) -> str:
        """A session's conversation rendered as ``md``, ``text``, ``html`` or ``json``."""
        from sessiondex.render.conversation import render

        return render(self.conversation(arg, cwd=cwd), format, tools=tools, subagents=subagents)

    # ------------------------------------------------------------------ writes
    def rename(self, arg: str, name: str, *, cwd: str | None = None) -> MutationResult:
        """Append the ``custom-title`` record Claude Code reads."""
        from sessiondex.actions.mutations import rename

        return self._mutate(lambda db: rename(db, arg, name, cwd=cwd, roots=self.roots))

    def tag(self, arg: str, tag: str, *, cwd: str | None = None) -> MutationResult:
        """Append a ``tag`` record (sanitized as the SDK does)."""
        from sessiondex.actions.mutations import tag as tag_session

        return self._mutate(lambda db: tag_session(db, arg, tag, cwd=cwd, roots=self.roots))

    def untag(self, arg: str, *, cwd: str | None = None) -> MutationResult:
        """Append the ``tag`` record that clears the tag."""
        from sessiondex.actions.mutations import untag

        return self._mutate(lambda db: untag(db, arg, cwd=cwd, roots=self.roots))

    def fork(
        self,
        arg: str,
        *,
        up_to: str | None = None,
        title: str | None = None,
        cwd: str | None = None,
    ) -> MutationResult:
        """Copy a session into a new one (fresh IDs, ``forkedFrom`` on every entry)."""
        from sessiondex.actions.mutations import fork

        return self._mutate(
            lambda db: fork(db, arg, cwd=cwd, roots=self.roots, up_to=up_to, title=title)
        )

    def delete(self, arg: str, *, cwd: str | None = None) -> MutationResult:
        """Remove a session's transcript and its ``<id>/`` folder."""
        from sessiondex.actions.mutations import delete

        return self._mutate(lambda db: delete(db, arg, cwd=cwd, roots=self.roots))

    def _mutate(self, action: Callable[[Database], MutationResult]) -> MutationResult:
        # Writes resolve against the writable handle: the session must be found as the
        # index holds it now, and the index follows the write before this returns.
        return action(self.writer())

    # ------------------------------------------------------------------ web view
    def message_hits(
        self, query: str, file_paths: Iterable[str], *, raw: bool = False
    ) -> MessageHits:
        """For each session (by ``file_path``), the uuids of its messages matching
        ``query`` as :meth:`search` reads it, best first: the web view links a result to
        its best message and marks the hits on the session page."""
        from sessiondex.query.hits import message_hits

        return message_hits(self.reader(), query, file_paths, raw=raw)

    # ------------------------------------------------------------------ long-lived front ends
    def renew(self) -> None:
        """Apply the refresh rule again now, keeping the open handles.

        A long-lived front end (the MCP server) answers many questions over hours; each
        must see the transcripts as they are when it is asked, as each CLI command does,
        while :meth:`ensure_fresh` refreshes once in this object's life. Called before
        a write too: the writes resolve their argument against the index as it is."""
        self._refreshed = False
        self.ensure_fresh()

    def message_snippets(
        self, query: str, file_paths: Iterable[str], *, per_session: int = 3
    ) -> dict[str, Sessions]:
        """The best message hits of each session (by ``file_path``) for a full-text query:
        ``{"message_uuid", "role", "snippet"}``, best first, so a search answer can point
        at the exact turn to open."""
        from sessiondex.query.hits import message_snippets

        return message_snippets(self.reader(), query, list(file_paths), per_session=per_session)

    # ------------------------------------------------------------------ archive
    def archive(self, **options: Any) -> ArchiveRun:
        """Archive every session Claude Code's sweep deletes within ``window`` seconds
        (default 3 days) that is not archived as it is now; keyword arguments are
        :func:`sessiondex.actions.archive.archive_expiring`'s (``archive_dir``, ``window``,
        ``cwd``, ``now``, ``dry_run``, ``on_result``). Transcripts are not touched."""
        from sessiondex.actions.archive import archive_expiring

        db = self.writer()
        self.ensure_fresh()
        return archive_expiring(db, self.roots, db_path=self._path, **options)

    def restore(self, session_id: str) -> RestoreResult:
        """Put an archived session's transcript (and ``<id>/`` folder) back, byte for
        byte; never over an existing transcript."""
        from sessiondex.actions.archive import restore

        db = self.writer()
        self.ensure_fresh()  # a transcript the sweep just deleted must not count as live
        return restore(db, session_id, self.roots)


def _materialize(team: TeamDatabase, found: Resolution, scratch: Path) -> dict[str, Any]:
    """Write a stored session's entries as ``<scratch>/<n>/projects/<key>/<id>.jsonl``
    (subagents beside it, their ``agent_metadata`` entry as the ``.meta.json``); return
    its session object pointing there."""
    import orjson

    session = found.session
    root = scratch / str(int(found.row["id"]))
    project = root / "projects" / session["project_key"]
    files: dict[str, list[str]] = {}
    metas: dict[str, str] = {}
    for subpath, text in team.entries(int(found.row["id"])):
        if subpath and '"agent_metadata"' in text:
            entry = orjson.loads(text)
            if isinstance(entry, dict) and entry.pop("type", None) == "agent_metadata":
                metas[subpath] = orjson.dumps(entry).decode()
                continue
        files.setdefault(subpath, []).append(text)
    for subpath, lines in files.items():
        parts = [p for p in subpath.split("/") if p not in ("", ".", "..")]
        name = "/".join([session["session_id"], *parts]) if parts else session["session_id"]
        path = project / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        if subpath in metas:
            path.with_name(path.name[: -len(".jsonl")] + ".meta.json").write_text(metas[subpath])
    return {
        **session,
        "config_dir": str(root),
        "file_path": str(project / f"{session['session_id']}.jsonl"),
    }


def _filters(options: dict[str, Any]) -> Filters:
    """The answers' keyword arguments as :class:`Filters`: its fields, or ``filters=`` a
    ready-made one (the CLI builds it from its options)."""
    from sessiondex.query.filters import Filters

    given = options.get("filters")
    if isinstance(given, Filters):
        if len(options) > 1:
            raise TypeError("pass either filters= or the filter fields, not both")
        return given
    return Filters(**options)


def _as_database(db: Any) -> Database:
    """An open connection (sqlite3 or sqlite-utils), as the sqlite-utils ``Database``
    the layers below take, migrated if it is new."""
    from sqlite_utils import Database

    from sessiondex.indexer.db import ReadOnlyIndex, prepare

    if isinstance(db, sqlite3.Connection):
        return prepare(Database(db))
    if isinstance(db, Database):
        return prepare(db)
    if isinstance(db, ReadOnlyIndex):
        return db  # type: ignore[return-value]  # the subset the query layer uses
    raise TypeError(
        "db must be a path, a sqlite3.Connection or a sqlite_utils.Database, "
        f"not {type(db).__name__}"
    )


def _database_file(db: Database) -> Path | None:
    row = db.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else None
