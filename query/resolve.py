"""Resolve an argument to one session: path → full UUID → exact name → ID prefix.

The rules are docs/resolution.md, which follow ``claude --resume``: an ID from another
project counts only when exactly one other project holds a transcript with messages for
it (a copied duplicate makes it ambiguous, and Claude Code then says not found).
"""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiondex.indexer.derive import SessionState, message_texts
from sessiondex.indexer.objects import absolute_cwd, pr_row
from sessiondex.query.dialect import dialect_of
from sessiondex.query.filters import (
    kept_sql,
    keys_sql,
    newest_copy_sql,
    root_rank,
    roots_sql,
    scope_sql,
)
from sessiondex.query.idprefix import MIN_PREFIX as MIN_PREFIX  # re-exported
from sessiondex.query.idprefix import is_id_prefix as is_id_prefix  # re-exported
from sessiondex.query.idprefix import name_key
from sessiondex.query.scopes import (
    belongs_elsewhere,
    continue_dirs,
    is_stranger,
    key_rank,
    resolve_cwd,
    scope_dirs,
)
from sessiondex.query.sessions import (
    build_object,
    display_title,
    finish_resume_commands,
    is_archived,
    resume_command,
    select_rows,
    to_object,
    to_objects,
)
from sessiondex.query.typos import typo_scores
from sessiondex.render.counts import counted
from sessiondex.transcripts.config import unreachable_reason
from sessiondex.transcripts.discover import (
    ARCHIVE_SUFFIX,
    archived_in_picker,
    describe_path,
    open_regular,
    transcripts_named,
    unreadable_transcript,
)
from sessiondex.transcripts.fspath import absolute
from sessiondex.transcripts.keys import (
    canonical_directory,
    is_session_id,
    project_key,
    project_keys_for_directory,
)
from sessiondex.transcripts.reader import RecordReader, without_lone_surrogates

if TYPE_CHECKING:
    from sqlite_utils import Database

MATCHED_PATH, MATCHED_ID, MATCHED_OTHER, MATCHED_NAME, MATCHED_PREFIX = (
    "path",
    "id",
    "id-other-project",
    "name",
    "id-prefix",
)
MAX_SUGGESTIONS = 5


class NotFound(Exception):
    """Nothing matched; the message is the one-line error to show. ``archived``: the
    archived session that would have matched had archives been asked for (set by
    ``Index.resolve``), so a front end can say how to reach it instead of "not found"."""

    def __init__(self, message: str, suggestions: list[str] | None = None) -> None:
        super().__init__(message)
        self.suggestions = suggestions or []
        self.archived: dict[str, Any] | None = None


class Ambiguous(Exception):
    """Several sessions matched; ``candidates`` are session objects, newest first."""

    def __init__(self, message: str, candidates: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.candidates = candidates


@dataclass
class Resolution:
    session: dict[str, Any]
    row: dict[str, Any]
    matched_by: str
    other_directory: bool = False
    notes: list[str] = field(default_factory=list)
    #: The subagent transcript ARG named, when it is part of this session rather than
    #: its main transcript: ``show`` and ``export`` read that file (a path names a file).
    subagent_path: str | None = None

    def as_object(self) -> dict[str, Any]:
        return {**self.session, "matched_by": self.matched_by}


def not_found_id(session_id: str) -> NotFound:
    return NotFound(f"No conversation found with session ID: {session_id}")


def _row_from_file(path: Path) -> dict[str, Any] | None:
    """A session row folded straight from a transcript outside the index (a path
    argument naming a file anywhere), with the same rules as the indexer. The row also
    carries what the index keeps in tables of its own (``_branches``, ``_links``,
    ``_mentions``) for :func:`to_object_external`.

    Where it belongs: a file named ``<session ID>.jsonl`` under ``<dir>/projects/<key>/``
    is that session of that config dir and project, as Claude Code opens it; any other
    file is in none (``config_dir`` null, the project key its cwd's, the ID its records
    carry: a copy named ``backup.jsonl`` is still that session), and Claude Code opens
    it by path (``claude --resume <path>``)."""
    state = SessionState()
    branches: set[str] = set()
    links: set[str] = set()
    mentions: list[Any] = []
    inside: str | None = None
    with open_regular(path) as stream:
        for _, record in RecordReader(stream):
            state.apply(record, branches, links)
            if record.get("type") in ("user", "assistant"):
                mentions.extend(message_texts(record, include_tools=True)[1])
            if inside is None and is_session_id(record.get("sessionId")):
                inside = record["sessionId"]
        st = os.fstat(stream.fileno())
    state.finish()
    name = path.name[: -len(".jsonl")]
    # Claude Code opens a session of a config dir by its file's name, whatever ID the
    # records carry (a copy saved under another UUID): only such a name is one there.
    in_config_dir = path.parent.parent.name == "projects" and is_session_id(name)
    session_id = name if in_config_dir else inside or name
    if not is_session_id(session_id):
        return None  # notes.jsonl and the like: Claude Code ignores them, so do we
    row = state.columns()
    row.update(
        id=-1,
        root=str(path.parent.parent.parent) if in_config_dir else None,
        project_key=path.parent.name if in_config_dir else _key_of(row.get("cwd")),
        session_id=session_id,
        file_path=str(path),
        mtime_ns=st.st_mtime_ns,
        file_size=st.st_size,
        archived=0,
        _branches=list(state.new_branches),
        _links=[pr_row(p) for p in state.new_pr_links],
        _mentions=[pr_row(p) for p in dict.fromkeys(mentions)],
        _loose=not in_config_dir,
    )
    return row


def _key_of(cwd: Any) -> str | None:
    return project_key(cwd) if isinstance(cwd, str) and cwd else None


def _by_path(db: Database, arg: str, roots: list[Path], for_write: bool) -> Resolution | None:
    if "\x00" in arg or not arg.endswith(".jsonl"):
        return None
    path = Path(absolute(os.path.expanduser(arg)))
    try:
        if not path.is_file():
            return None
    except (OSError, ValueError):
        return None
    described = describe_path(path, roots)
    if for_write and (described is None or described.kind != "main"):
        raise NotFound(f"{arg} is not a session transcript inside a configured projects/ dir")
    subagent_path = None
    if described is not None and described.kind != "main":
        # A subagent's transcript is part of its session: answer with that session,
        # and say which of its files was named.
        subagent_path = str(described.path)
        path = described.main_path if described.main_path.is_file() else described.path
    elif described is not None:
        path = described.path  # as the index spells it (a config dir may be a link)
    else:
        laid_out, main = _loose_subagent(path)  # a copy, a backup: by its place alone
        if laid_out:
            subagent_path = str(path)
            path = main if main is not None else path
    rows = select_rows(db, "s.file_path = ?", [str(path)])
    if rows:
        return Resolution(
            to_object(db, rows[0]), rows[0], MATCHED_PATH, subagent_path=subagent_path
        )
    row = _row_from_file(path)
    if row is None:
        return None  # no record names a session and the name is no session ID: not one
    if described is not None:  # inside a projects/ dir: its place says where it belongs
        row.update(
            root=str(described.root),
            project_key=described.project_key,
            session_id=described.session_id,
        )
    session = to_object_external(row)
    if subagent_path is not None and str(path) == subagent_path:
        session["resume_command"] = None  # no main transcript: claude cannot resume a subagent
    return Resolution(session, row, MATCHED_PATH, subagent_path=subagent_path)


#: Why a subagent's transcript whose session has no main transcript cannot be resumed.
NO_MAIN_TRANSCRIPT = (
    "it is a subagent's transcript and its session's main transcript is not there:"
    " Claude Code cannot resume it (show reads it)"
)


def without_main_transcript(found: Resolution) -> bool:
    """Whether ``found`` is a subagent's transcript standing alone (its session's main
    transcript deleted, or a copied folder without it): nothing to resume."""
    return found.subagent_path is not None and found.session.get("file_path") == (
        found.subagent_path
    )


#: Why a transcript with no user or assistant record cannot be resumed (named by its
#: path: a whole ID, a name and a prefix never pick such a file).
NO_MESSAGES = (
    "it holds no user or assistant message (empty, or metadata only): Claude Code finds"
    " no conversation to resume in it (show reads it)"
)


def without_messages(found: Resolution) -> bool:
    """Whether ``found`` is a transcript with no user or assistant record (an empty
    file, a title or tag alone), which only a path names. ``claude --resume <id>``
    looks for such a record and answers "No conversation found" without one, so
    there is nothing to resume; reading it (``show``, ``resolve``) is harmless."""
    return not found.row.get("raw_message_count")


def _loose_subagent(path: Path) -> tuple[bool, Path | None]:
    """Whether a transcript outside the configured dirs is laid out as a subagent's
    (``<dir>/<id>/subagents/…/agent-<x>.jsonl``), and its session's main transcript
    beside the folder (``<dir>/<id>.jsonl``) when that is there."""
    if not (path.name.startswith("agent-") and path.name.endswith(".jsonl")):
        return False, None
    parts = path.parts
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] == "subagents" and is_session_id(parts[i - 1]):
            main = Path(*parts[: i - 1]) / f"{parts[i - 1]}.jsonl"
            return True, main if main.is_file() else None
    return False, None


def to_object_external(row: dict[str, Any]) -> dict[str, Any]:
    """Session object for a file that is not in the index (its branches and PRs from
    the row :func:`_row_from_file` folded). A file in no config dir is resumed by its
    path, which ``claude --resume`` takes; one in a config dir other than the default
    gets ``CLAUDE_CONFIG_DIR``, as an indexed session does."""
    obj = build_object(
        row, row.get("_branches", []), row.get("_links", []), row.get("_mentions", [])
    )
    if row.get("_loose"):
        obj["resume_command"] = resume_command(str(row["file_path"]), obj.get("cwd"))
    finish_resume_commands([obj], [False])
    return obj


def _other_directory_note(session: dict[str, Any]) -> str:
    """Claude Code's hint with the session's ``resume_command`` (the directory
    shell-quoted: a cwd is data, and spaces, quotes, ``;`` or ``$(…)`` in it must not
    become shell syntax when the line is pasted; ``CLAUDE_CONFIG_DIR`` when needed)."""
    how = session["resume_command"]
    if how is None and is_archived(session):
        return f"This session is archived. To resume it, run: sessiondex restore {session['session_id']}"
    unreachable = unreachable_reason(session.get("config_dir"))
    if how is None and unreachable:
        return f"This session is from a different directory. {unreachable}."
    if how is None:  # a team store's session whose ID claude --resume cannot take
        return (
            "This session is from a different directory; its ID is not one claude --resume takes."
        )
    if not absolute_cwd(session.get("cwd")):  # the line has no cd
        how += f" (from the directory of project {session['project_key']})"
    return f"This session is from a different directory. To resume, run: {how}"


def _by_id(
    db: Database, session_id: str, keys: list[str], include_archived: bool, roots: list[Path]
) -> Resolution:
    kept, kept_params = kept_sql(db, include_archived, roots)
    scope = f" AND s.raw_message_count > 0 AND {kept}"
    rows = select_rows(db, f"s.session_id = ?{scope}", [session_id, *kept_params])
    if not rows:
        rows = select_rows(db, f"lower(s.session_id) = lower(?){scope}", [session_id, *kept_params])
    named: list[str] | None = None  # the transcripts of the ID on disk, once looked for
    if not rows and dialect_of(db).name == "sqlite":
        named = list(transcripts_named(roots, session_id))
        rows = _unindexed_copies(named)
    here = [r for r in rows if key_rank(r["project_key"], keys) is not None]
    # One project dir in two config dirs (a backup indexed beside the live one): the
    # newest copy.
    local = sorted(here, key=lambda row: _id_copy_order(row, keys, roots))
    if local:
        return Resolution(_session_object(db, local[0]), local[0], MATCHED_ID)
    # One project dir in two config dirs (a backup beside the live one) is one project
    # holding copies of the session, not the duplicate Claude Code refuses.
    projects = {r["project_key"] for r in rows}
    if not projects and (unreadable := unreadable_transcript(roots, session_id, named)):
        path, reason = unreadable
        raise NotFound(f"cannot read {path} ({reason}); session {session_id} is not indexed")
    if len(projects) != 1:
        raise not_found_id(session_id)
    row = min(rows, key=lambda r: _id_copy_order(r, keys, roots))
    session = _session_object(db, row)
    return Resolution(
        session,
        row,
        MATCHED_OTHER,
        other_directory=True,
        notes=[_other_directory_note(session)],
    )


def _unindexed_copies(named: list[str]) -> list[dict[str, Any]]:
    """Rows folded from the transcripts of an ID on disk (``named``: as
    :func:`~sessiondex.transcripts.discover.transcripts_named` finds them, the scan the
    unreadable check reuses), for when the index has none: a refresh that could not
    write (a full disk, a read-only index) or has not run yet (``--no-refresh``) leaves
    a new session out, and Claude Code opens a session by its file. As for an indexed one, a file with no message is nothing to open; one that
    cannot be read is left to :func:`unreadable_transcript`'s message."""
    rows: list[dict[str, Any]] = []
    for path in named:
        try:
            row = _row_from_file(Path(path))
        except OSError:
            continue
        if row is not None and row.get("raw_message_count"):
            rows.append(row)
    return rows


def id_copies(db: Database, session_id: str, roots: list[Path]) -> list[dict[str, Any]]:
    """Every row the index holds of ``session_id`` (in any case, an exact match first,
    as :func:`resolve` reads an ID), as session objects, newest first: the copies a
    whole ID names where it is not read to open one session (``store delete``). Unlike
    :func:`resolve`, a copy without a message counts, and copies in several projects
    (the duplicate Claude Code refuses) are all answered."""
    kept, kept_params = kept_sql(db, False, roots)
    for same in ("s.session_id = ?", "lower(s.session_id) = lower(?)"):
        rows = select_rows(db, f"{same} AND {kept}", [session_id, *kept_params])
        if rows:
            break
    return _matched(to_objects(db, rows), MATCHED_ID)


def _session_object(db: Database, row: dict[str, Any]) -> dict[str, Any]:
    """The session object of an indexed row, or of one folded from its file (``id`` -1)."""
    return to_object_external(row) if row.get("id") == -1 else to_object(db, row)


def _scope_rows(
    db: Database, here: str, include_archived: bool, roots: list[Path], *, newest: bool = False
) -> list[dict[str, Any]]:
    """The rows a name or ID prefix resolves among: the cwd's repository (its worktrees'
    project dirs locally, its origin remote on the team store) in ``roots``, as its
    listing holds them (:func:`~sessiondex.query.filters.scope_sql`: a session recorded
    in another directory of the same project key is that directory's). With
    ``newest``, only sessions with messages, each as its newest copy there
    (:func:`~sessiondex.query.filters.newest_copy_sql`): what names are compared with."""
    scoped = scope_sql(db, here, "repo")
    assert scoped is not None
    kept, kept_params = kept_sql(db, include_archived, roots)
    where, params = f"{scoped[0]} AND {kept}", [*scoped[1], *kept_params]
    if newest:
        where, params = (
            f"{where} AND s.raw_message_count > 0 AND {newest_copy_sql(where, roots)}",
            params + params,
        )
    return select_rows(db, where, params)


def _row_mtime(row: dict[str, Any]) -> int:
    return int(row.get("mtime_ns") or 0)


def _id_copy_order(
    row: dict[str, Any], keys: list[str], roots: list[Path]
) -> tuple[int, int, int, int]:
    """Where a copy stands when a whole ID is resolved: its project dir's rank (the
    cwd's own, then the worktrees in git's order; others after), then newest first,
    then the config dir given first, then the higher row id: the tie-break of
    :func:`~sessiondex.query.filters.newest_copy_sql`, so copies with one mtime (a
    backup made with ``cp -a``) resolve by ID to the copy ``list`` and a name show."""
    rank = key_rank(row["project_key"], keys)
    return (
        len(keys) if rank is None else rank,
        -_row_mtime(row),
        root_rank(row.get("root"), roots),
        -int(row.get("id") or 0),
    )


def _id_order_copies(
    rows: list[dict[str, Any]], keys: list[str], roots: list[Path]
) -> list[dict[str, Any]]:
    """``rows`` with one row per session ID, the copy a whole ID resolves to (order kept)."""
    best: dict[str, dict[str, Any]] = {}
    for row in rows:
        kept = best.get(row["session_id"])
        if kept is None or _id_copy_order(row, keys, roots) < _id_copy_order(kept, keys, roots):
            best[row["session_id"]] = row
    return [row for row in rows if best[row["session_id"]] is row]


def _matched(candidates: list[dict[str, Any]], how: str) -> list[dict[str, Any]]:
    """Ambiguous candidates with ``matched_by``, as a single match's object has it."""
    return [{**c, "matched_by": how} for c in candidates]


def _shown_key(name: str | None) -> str | None:
    """:func:`~sessiondex.query.idprefix.name_key` of a name as it is shown
    (``render.terminal.neutralize``), for a name that shows otherwise than it reads;
    else None."""
    from sessiondex.render.terminal import neutralize

    if not name:
        return None
    shown = neutralize(name, single_line=True)
    return name_key(shown) if shown != name else None


def name_of(row: dict[str, Any]) -> str | None:
    """A session's resume handle: its custom title, else its AI title."""
    return row.get("custom_title") or row.get("ai_title")


def resolve(
    db: Database,
    arg: str,
    *,
    cwd: str | None = None,
    roots: list[Path],
    for_write: bool = False,
    include_archived: bool = False,
) -> Resolution:
    """One session for ``arg``, or :class:`NotFound` / :class:`Ambiguous`."""
    if not isinstance(arg, str) or not arg.strip():
        raise NotFound("empty session argument: give a session ID, name or path")
    arg = without_lone_surrogates(arg)  # from JSON (MCP, a program): SQLite refuses them
    if "\x00" in arg:
        raise NotFound("a session argument cannot contain a NUL character")
    here = resolve_cwd(cwd)
    by_path = _by_path(db, arg, roots, for_write)
    if by_path is not None:
        return by_path
    if include_archived and arg.endswith(ARCHIVE_SUFFIX):
        # An archived session's file_path is its archive (the picker previews by it).
        path = absolute(os.path.expanduser(arg))
        rows = select_rows(db, "s.file_path = ? AND s.archived", [path])
        if rows:
            return Resolution(to_object(db, rows[0]), rows[0], MATCHED_PATH)
    if is_session_id(arg):
        return _by_id(db, arg, scope_dirs(db, here, "repo") or [], include_archived, roots)
    if arg.strip() != arg and is_session_id(arg.strip()):
        raise NotFound(f"Invalid session ID {arg!r}: remove the surrounding whitespace")
    # As for an ID, a file with no message (a title or tag alone) is nothing to resume.
    # Copies of one session are its newest before any name is compared, as Claude Code
    # lists them first: a name only an older copy (a backup) still has names nothing.
    resumable = _scope_rows(db, here, include_archived, roots, newest=True)
    # Only sessions that have a name can be named, and only by something visible: an
    # argument of invisible or bidi characters alone cleans down to "", as a session
    # without a name does, and must not pick those out (nor write to them).
    with_names = [(r, name) for r in resumable if (name := name_of(r))]
    wanted = arg.strip().lower()
    named = [r for r, name in with_names if name.strip().lower() == wanted]
    if not named:
        # The name typed with an invisible or bidi character that rename never stores,
        # or composed otherwise (a decomposed é from a macOS file name looks the same).
        wanted = name_key(arg)
        named = [r for r, name in with_names if wanted and name_key(name) == wanted]
    if not named and wanted:
        # The name typed as every table and suggestion shows it: a control character as
        # ``^[``, a bidi control as ``<U+202E>`` (a title the SDK or Claude Code stored
        # with one could not be typed back).
        named = [r for r in resumable if _shown_key(name_of(r)) == wanted]
    if len(named) == 1:
        return Resolution(to_object(db, named[0]), named[0], MATCHED_NAME)
    if len(named) > 1:
        raise Ambiguous(
            f"{len(named)} sessions are named {arg.strip()!r}",
            _matched(to_objects(db, named), MATCHED_NAME),
        )
    if is_id_prefix(arg):
        keys = scope_dirs(db, here, "repo") or []
        repo_rows = _scope_rows(db, here, include_archived, roots)
        resolution = _by_prefix(db, arg.lower(), repo_rows, keys, include_archived, roots)
        if resolution is not None:
            return resolution
    if dialect_of(db).name != "sqlite":
        # The team store holds any ID an SDK app stored ("my-custom-id"); its answers
        # name such a session by it (MCP's "more" footers), so it resolves as an ID.
        try:
            keys = scope_dirs(db, here, "repo") or []
            return _by_id(db, arg.strip(), keys, include_archived, roots)
        except NotFound:
            pass
    # The closest names, by search's typo rule: each word typed a word of the title or
    # a typo of one (WRatio >= 50 suggested "Debug logging" for "bug", any title for
    # "looping"). The best first; ties in the listing's order (``resumable``'s).
    titles = list(dict.fromkeys(display_title(r) for r in resumable if name_of(r)))
    close = typo_scores(arg, titles)
    suggestions = [titles[i] for i in sorted(close, key=lambda i: (-close[i], i))][:MAX_SUGGESTIONS]
    hint = f" Did you mean: {'; '.join(suggestions)}?" if suggestions else ""
    elsewhere = _named_elsewhere(
        db, arg, {r["session_id"] for r in resumable}, include_archived, roots
    )
    raise NotFound(f"No session matches {arg!r}.{hint}{elsewhere}", suggestions)


def _named_elsewhere(
    db: Database, arg: str, here: set[str], include_archived: bool, roots: list[Path]
) -> str:
    """What to add to "No session matches" when sessions outside the repository are
    named ``arg`` (compared as :func:`resolve` compares names, with each session's
    newest copy): the one's ID and directory, or how many, since a name resolves only
    in the repository scope (docs/resolution.md) and its whole ID from anywhere. As an ID prefix
    found elsewhere says; "" when none is."""
    kept, kept_params = kept_sql(db, include_archived, roots)
    where = f"{kept} AND s.raw_message_count > 0"
    rows = select_rows(
        db,
        f"{where} AND (s.custom_title IS NOT NULL OR s.ai_title IS NOT NULL)"
        f" AND {newest_copy_sql(where, roots)}",
        [*kept_params, *kept_params],
    )
    wanted, key = arg.strip().lower(), name_key(arg)
    named: dict[str, dict[str, Any]] = {}
    for row in rows:
        name = name_of(row)
        if not name or row["session_id"] in here:
            continue
        if name.strip().lower() == wanted or (key and name_key(name) == key):
            named.setdefault(row["session_id"], row)
    if not named:
        return ""
    if len(named) > 1:
        first = next(iter(named))
        return f" {len(named)} sessions of other projects are named so ({first}, …)."
    (row,) = named.values()
    where_it_is = row.get("cwd") or f"project {row['project_key']}"
    return (
        f" But session {row['session_id']} of another project, in {where_it_is}, is named"
        " so: give its ID, or run the command from its directory."
    )


def _by_prefix(
    db: Database,
    prefix: str,
    repo_rows: list[dict[str, Any]],
    keys: list[str],
    include_archived: bool,
    roots: list[Path],
) -> Resolution | None:
    # As for a whole ID, an empty or metadata-only file never counts. Only sessions in
    # scope answer (the repository's worktrees); one elsewhere is named in the error, so
    # its whole ID (which resolves from anywhere when one project holds it) is a paste away.
    # Copies of one session: the one its whole ID would name (the cwd's own project dir
    # first, then the worktrees in git's order, then the newest).
    local = _id_order_copies(
        [
            r
            for r in repo_rows
            if r["session_id"].lower().startswith(prefix) and r["raw_message_count"]
        ],
        keys,
        roots,
    )
    if not local:
        kept, kept_params = kept_sql(db, include_archived, roots)
        elsewhere = select_rows(
            db,
            f"lower(s.session_id) LIKE ? ESCAPE '\\' AND s.raw_message_count > 0 AND {kept}",
            [prefix.replace("_", "\\_").replace("%", "\\%") + "%", *kept_params],
        )
        ids = sorted({r["session_id"] for r in elsewhere})
        if not ids:
            return None
        missing = f"No session of this repository starts with {prefix!r}"
        if len(ids) > 1:
            raise NotFound(
                f"{missing}; {len(ids)} sessions of other projects do ({ids[0]}, …): give a"
                " whole ID, or run the command from the directory of the one you mean"
            )
        projects = {r["project_key"] for r in elsewhere}  # as for a whole ID
        if len(projects) > 1:  # its whole ID is not found either: Claude Code's rule
            raise NotFound(
                f"{missing}; session {ids[0]} does, in {len(projects)} other projects: run"
                " the command from the directory of the one you mean"
            )
        # In a project dir of this repository, it is a session recorded in another
        # directory of the same project key (``/a/b-c`` beside ``/a/b/c``): its whole
        # ID is found here, by project dir, as Claude Code looks an ID up.
        twin = bool(projects & set(keys))
        whose = "another directory with this project dir" if twin else "another project"
        raise NotFound(
            f"{missing}; session {ids[0]} of {whose} does: give its whole ID, or"
            " run the command from its directory"
        )
    unique = {r["session_id"].lower() for r in local}
    if len(local) > 1 or len(unique) > 1:
        raise Ambiguous(
            f"{len(local)} sessions start with {prefix!r}",
            _matched(to_objects(db, local), MATCHED_PREFIX),
        )
    return Resolution(to_object(db, local[0]), local[0], MATCHED_PREFIX)


def continue_session(
    db: Database,
    *,
    cwd: str | None = None,
    print_mode: bool = False,
    roots: list[Path] | None = None,
) -> dict[str, Any]:
    """The session ``claude --continue`` would open in ``cwd``: newest transcript mtime in
    the cwd's own project dir and the dirs its ``.session-aliases`` names
    (:func:`~sessiondex.query.scopes.continue_dirs`; worktrees not searched) of
    ``roots``, skipping sidechains
    and files without messages, and unless ``print_mode``, ``-p``/SDK and ``/loop``
    sessions. As Claude Code does, a session whose recorded cwd is another directory
    with the same project key (``/a/b-c`` and ``/a/b/c``) is skipped too, and so is one
    its picker archived (``<id>/archived.json``, read here for the candidates in turn:
    the index does not hold it); when only those are left, the error says so."""
    from sessiondex.query.sessions import ALWAYS_HIDDEN_SQL, INTERACTIVE_SQL

    here = resolve_cwd(cwd)
    own = continue_dirs(db, here)
    where, params = keys_sql(own)
    rooted, root_params = roots_sql(db, roots)
    where += f" AND {rooted}"
    params.extend(root_params)
    # the picker's archive is read from each candidate's sidecar below, not the index:
    # toggled a moment ago, it is what claude --continue sees
    where += f" AND {ALWAYS_HIDDEN_SQL if print_mode else INTERACTIVE_SQL}"
    candidates = select_rows(
        db,
        where + " AND s.archived = 0",
        params,
        order="s.mtime_ns DESC, s.session_id",
        columns="s.id, s.cwd, s.file_path, s.project_key",
    )
    same = {canonical_directory(here), unicodedata.normalize("NFC", here)}
    # an alias dir's session is a slug twin's when recorded there, as in a listing
    # (query.scopes.strangers_sql)
    keys = set(project_keys_for_directory(here))
    archived = 0
    for candidate in candidates:
        recorded = candidate["cwd"]
        key = candidate["project_key"]
        if recorded is None:
            stranger = False
        elif key in keys:
            stranger = is_stranger(unicodedata.normalize("NFC", recorded), key, same)
        else:
            stranger = belongs_elsewhere(recorded, keys, same)
        if not stranger:
            if archived_in_picker(candidate["file_path"]):
                archived += 1
                continue
            (row,) = select_rows(db, f"s.id = {int(candidate['id'])}")
            return to_object(db, row)
    if archived:
        raise NotFound(
            f"No conversation found to continue in {here}: its {counted(archived, 'session')}"
            f" {'is' if archived == 1 else 'are'} archived in Claude Code's picker (ctrl+s"
            " there shows them; `sessiondex list --all-kinds` lists them)"
        )
    raise NotFound(f"No conversation found to continue in {here}")
