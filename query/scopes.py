"""Which project dirs a command looks at: the picker's scopes.

``worktree`` is the cwd's own project dir, ``repo`` adds every git worktree of the cwd's
repository (``git worktree list --porcelain``), ``all`` is every project. Both take, as
Claude Code's picker does, the dirs a ``.session-aliases`` names and Claude Code's own
worktree dirs (:func:`scope_dirs`, the one rule).
"""

from __future__ import annotations

import os
import time
import unicodedata
from collections.abc import Callable
from typing import Any, TypeVar

from sessiondex.transcripts.config import resolve_cwd as resolve_cwd  # re-exported
from sessiondex.transcripts.keys import (
    MAX_SANITIZED_LENGTH,
    canonical_directory,
    project_dir_name_override,
    project_key,
    project_key_for_canonical,
    project_keys_for_directory,
)
from sessiondex.transcripts.remotes import git as _git
from sessiondex.transcripts.remotes import origin_of, parse_remote

SCOPES = ("worktree", "repo", "all")

T = TypeVar("T")
# How long a git fact (worktrees, current branch, origin) is taken as known: one command
# asks several times, and each ``git`` run costs milliseconds; a long-lived front end (the
# MCP server, the picker) must still see a worktree added or a branch switched since.
GIT_FACTS_SECONDS = 2.0


class _Briefly:
    """A function of one directory whose answer is kept for ``GIT_FACTS_SECONDS``
    (``functools.lru_cache`` kept it for the life of the process: an MCP server
    started before ``git worktree add`` never saw that worktree's sessions)."""

    def __init__(self, function: Callable[[str], Any]) -> None:
        self._function = function
        self._kept: dict[str, tuple[float, Any]] = {}
        self.__doc__ = function.__doc__

    def __call__(self, cwd: str) -> Any:
        now = time.monotonic()
        kept = self._kept.get(cwd)
        if kept is not None and now - kept[0] < GIT_FACTS_SECONDS:
            return kept[1]
        value = self._function(cwd)
        if len(self._kept) >= 64:
            self._kept.clear()
        self._kept[cwd] = (now, value)
        return value

    def cache_clear(self) -> None:
        self._kept.clear()


def _briefly(function: Callable[[str], T]) -> Callable[[str], T]:
    return _Briefly(function)


@_briefly
def git_worktrees(cwd: str) -> tuple[str, ...]:
    """Paths of every worktree of the repository containing ``cwd`` (empty outside one)."""
    out = _git(cwd, "worktree", "list", "--porcelain") or ""
    return tuple(
        unicodedata.normalize("NFC", line[len("worktree ") :])
        for line in out.splitlines()
        if line.startswith("worktree ")
    )


@_briefly
def git_current_branch(cwd: str) -> str | None:
    """The branch HEAD names (None when detached, or outside a repository). Read as
    ``git symbolic-ref``, not ``rev-parse --abbrev-ref HEAD``, which fails before the
    first commit (``git init``, then ``claude``) though HEAD already names the branch."""
    branch = (_git(cwd, "symbolic-ref", "--short", "-q", "HEAD") or "").strip()
    return branch or None


def no_branch_reason(cwd: str) -> str:
    """Why :func:`git_current_branch` found no branch at ``cwd``, as the end of one line
    (``--current-branch: <reason>``): the directory is missing, git is not installed, the
    directory is in no repository (or in one git does not trust), or HEAD is detached. Asked only once it failed, so a
    listing with a branch pays nothing for it."""
    import os
    import shutil

    if not os.path.isdir(cwd):
        # git is asked in the directory: one that is gone has no branch to read
        return f"{cwd} {'is not a directory' if os.path.lexists(cwd) else 'does not exist'}"
    if shutil.which("git") is None:
        return "git is not installed (no git on PATH)"
    from sessiondex.transcripts.remotes import git_run

    done = git_run(cwd, "rev-parse", "--git-dir")
    if done is None:
        return f"git could not be run in {cwd}"
    if done.returncode != 0:
        if "dubious ownership" in done.stderr:
            # a repository owned by another user (a mounted volume, a container run
            # as root): git refuses it, and it is no less a repository
            return (
                f"git does not trust the repository at {cwd}: it is owned by another"
                " user (git config --global --add safe.directory <dir>)"
            )
        return f"{cwd} is not in a git repository"
    return f"{cwd} has a detached HEAD (no branch)"


@_briefly
def git_remote_repositories(cwd: str) -> tuple[tuple[str, str], ...]:
    """``(host, owner/repo)`` of every remote of the repository at ``cwd`` that names
    one (fetch and push URLs, ``insteadOf`` applied, as ``git remote -v`` lists them;
    empty outside a repository). Not ``origin`` alone: in the clone of a fork, the PRs
    it opens are the upstream remote's (``gh pr create`` targets it)."""
    found: list[tuple[str, str]] = []
    for line in (_git(cwd, "remote", "-v") or "").splitlines():
        _, tab, rest = line.partition("\t")
        url = rest.rsplit(" (", 1)[0] if tab else ""
        parsed = parse_remote(url)
        if parsed is not None and parsed not in found:
            found.append(parsed)
    return tuple(found)


@_briefly
def git_origin(cwd: str) -> str | None:
    """The ``origin`` remote of ``cwd``, normalized (:mod:`transcripts.remotes`): the
    team store's repository identity, spelled as ``push`` stores it."""
    return origin_of(cwd)


def worktree_keys(cwd: str) -> list[str]:
    """Project keys of the cwd and of every worktree of its repository, cwd first."""
    keys = list(project_keys_for_directory(cwd))
    for path in git_worktrees(canonical_directory(cwd)):
        for key in project_keys_for_directory(path):
            if key not in keys:
                keys.append(key)
    return keys


def scope_keys(cwd: str, scope: str) -> list[str] | None:
    """Project keys in ``scope`` for ``cwd``; None means every project."""
    if scope == "all":
        return None
    if scope == "repo":
        return worktree_keys(cwd)
    if scope == "worktree":
        return list(project_keys_for_directory(cwd))
    raise ValueError(f"unknown scope: {scope}")


#: Claude Code's own worktrees (``claude --worktree``) live in ``<repo>/.claude/worktrees/
#: <name>``: their project dirs are named ``<repo key>--claude-worktrees-<name>``.
CLAUDE_WORKTREES = "--claude-worktrees-"


def claude_worktree_keys(db: Any, keys: list[str]) -> list[str]:
    """The project dirs the index holds named ``<key>--claude-worktrees-*`` for each of
    ``keys``, by name (docs/resolution.md#scopes). A key over the length cap has
    none: such a name would be hashed whole."""
    found: list[str] = []
    for key in keys:
        if len(key) > MAX_SANITIZED_LENGTH:
            continue
        prefix = key + CLAUDE_WORKTREES
        # the names from the prefix up to the next name that does not start with it
        # ("-" + 1 is "."): a range the project index answers, case-sensitively
        rows = db.execute(
            "SELECT DISTINCT project_key FROM sessions WHERE project_key >= ?"
            " AND project_key < ? ORDER BY project_key",
            [prefix, prefix[:-1] + "."],
        ).fetchall()
        found.extend(str(k) for (k,) in rows if str(k) not in found)
    return found


def alias_keys(db: Any, keys: list[str]) -> list[str]:
    """The project dirs the ``.session-aliases`` of ``keys``' dirs name, as the last
    refresh read them (``session_aliases``; docs/resolution.md#scopes): the dirs of
    sessions started in a symlinked spelling of the directory. One level: an alias
    dir's own file is not followed."""
    if not keys:
        return []
    rows = db.execute(
        f"SELECT aliases FROM session_aliases WHERE project_key IN ({', '.join('?' for _ in keys)})"
        " ORDER BY id",
        list(keys),
    ).fetchall()
    found: list[str] = []
    for (text,) in rows:
        found.extend(k for k in str(text).split("\n") if k and k not in found)
    return found


def scope_dirs(db: Any, cwd: str, scope: str) -> list[str] | None:
    """The project dirs of ``scope`` for ``cwd`` as the index holds them (None: every
    one), the one rule of listings, search, names, ID prefixes and completion:

    - ``worktree``: the cwd's project dir (:func:`present_keys`) and the dirs its
      ``.session-aliases`` names (:func:`alias_keys`); when the cwd's repository has one
      worktree (or there is none), also Claude Code's worktree dirs
      ``<key>--claude-worktrees-*`` (:func:`claude_worktree_keys`), as the picker's
      default scope takes them. With several worktrees the picker
      shows the current worktree's rows by default, and a Claude Code worktree that
      still exists is a worktree of its own: not taken.
    - ``repo``: every worktree's project dir, with their Claude Code worktree dirs and
      alias dirs (Ctrl+W; the picker takes every ``<worktree key>-*`` dir, which holds
      those, while our repo scope matches worktree keys exactly).

    Those dirs come with the project key, which a slug twin (``/a/b/c`` beside ``/a/b-c``)
    shares: a session there recorded in the twin's directory is the twin's
    (:func:`strangers_sql`, :func:`belongs_elsewhere`). On the team store (no
    ``.session-aliases`` is pushed) the keys alone."""
    keys = scope_keys(cwd, scope)
    if keys is None:
        return None
    found = present_keys(db, keys)
    if db is None or getattr(getattr(db, "dialect", None), "team", False):
        return found  # (query.dialect.dialect_of, which imports this module)
    several = scope == "worktree" and len(git_worktrees(canonical_directory(cwd))) > 1
    extra = [] if several else claude_worktree_keys(db, found)
    extra += alias_keys(db, found + extra)
    return found + [k for k in dict.fromkeys(extra) if k not in found]


def continue_dirs(db: Any, cwd: str) -> list[str]:
    """Where ``continue`` looks: the cwd's own project dir and the dirs its
    ``.session-aliases`` names, never a worktree's, as ``claude --continue`` does."""
    found = present_keys(db, list(project_keys_for_directory(cwd)))
    return found + [k for k in alias_keys(db, found) if k not in found]


def is_stranger(recorded: str, key: str, here: set[str]) -> bool:
    """Whether a session recorded in project dir ``key`` with cwd ``recorded`` belongs to
    *another* directory of the same slug (``/a/b-c`` beside ``/a/b/c``), which Claude
    Code's picker hides and ``--continue`` skips: ``here`` holds the directories the dir
    is asked for (as :func:`canonical_directory` gives them, and as given). A symlinked
    spelling of one of them is that directory; a cwd of another slug is no collision."""
    return (
        recorded not in here
        and project_key(recorded) == key
        and canonical_directory(recorded) not in here
    )


def belongs_elsewhere(recorded: str, keys: set[str], here: set[str]) -> bool:
    """Whether a session of an alias or Claude Code worktree dir (:func:`scope_dirs`),
    recorded in ``recorded``, is another directory's that shares one of ``keys`` (a
    slug twin's: ``/a/b/c/.claude/worktrees/x`` beside ``/a/b-c``): walking up from it
    (as :func:`canonical_directory` gives it: a symlinked spelling is its target), the
    first directory named with one of ``keys`` is not one of ``here``. A path that
    meets neither (a symlink since removed) is taken with the dir."""
    path = canonical_directory(recorded)
    while True:
        if path in here:
            return False
        if project_key_for_canonical(path) in keys:
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def strangers_sql(db: Any, cwd: str, scope: str) -> tuple[str, list[Any]] | None:
    """Rows to leave out of a ``worktree`` or ``repo`` scope: a session whose recorded
    cwd is *another* directory with the same project key (``/a/b-c`` beside ``/a/b/c``,
    both ``-a-b-c``), as Claude Code's picker hides it (and ``continue`` skips it). None
    when there is none. The few distinct cwds recorded in the scope's project dirs are
    compared as directories (:func:`canonical_directory`), so a symlinked spelling of
    the same directory stays."""
    if scope not in ("worktree", "repo"):
        return None
    places = [(key, cwd) for key in project_keys_for_directory(cwd)]
    if scope == "repo":
        for path in git_worktrees(canonical_directory(cwd)):
            places.extend((key, path) for key in project_keys_for_directory(path))
    override = project_dir_name_override()
    allowed: dict[str, set[str]] = {}
    for key, path in places:
        if key != override:  # a named dir holds whatever its user puts there
            allowed.setdefault(key, set()).add(canonical_directory(path))
    if not allowed:
        return None
    marks = ", ".join("?" for _ in allowed)
    recorded = db.execute(
        f"SELECT DISTINCT s.project_key, s.cwd FROM sessions s WHERE s.project_key IN ({marks})"
        " AND s.cwd IS NOT NULL",
        list(allowed),
    ).fetchall()
    # A row is left out only in the key where its cwd is a stranger (a worktree's session
    # recorded in the main checkout's directory stays in the main checkout's own dir).
    strangers = [
        (key, where)
        for key, where in set(recorded)
        if where and is_stranger(where, key, allowed[key])
    ]
    # The alias and Claude Code worktree dirs come with the project key, which a slug
    # twin shares: a session there recorded in the twin's directory (or below it) is
    # the twin's.
    extra = [k for k in scope_dirs(db, cwd, scope) or () if k not in allowed and k != override]
    if extra:
        here = set().union(*allowed.values())
        keys = set(allowed)
        rows = db.execute(
            "SELECT DISTINCT s.project_key, s.cwd FROM sessions s"
            f" WHERE s.project_key IN ({', '.join('?' for _ in extra)}) AND s.cwd IS NOT NULL",
            extra,
        ).fetchall()
        strangers.extend(
            (key, where) for key, where in rows if where and belongs_elsewhere(where, keys, here)
        )
    strangers.sort()
    if not strangers:
        return None
    pairs = " OR ".join("(s.project_key = ? AND coalesce(s.cwd, '') = ?)" for _ in strangers)
    return f"NOT ({pairs})", [value for pair in strangers for value in pair]


def present_keys(db: Any, keys: list[str]) -> list[str]:
    """``keys`` as the project dirs the index holds them in. A hashed long key is its
    own dir when that dir is there. When it is not (an older Claude Code hashed long
    paths otherwise), it is every dir named with its first 200 characters and ``-`` in
    which a session recorded a cwd of this key, as Claude Code accepts one: a dir that
    merely shares the 200 characters is another deep directory's (a project and its
    subdirectory)."""
    found: list[str] = []
    for key in keys:
        these = [key]
        if db is not None and len(key) > MAX_SANITIZED_LENGTH:
            rows = db.execute(
                "SELECT DISTINCT s.project_key, s.cwd FROM sessions s"
                " WHERE substr(s.project_key, 1, ?) = ?",
                [MAX_SANITIZED_LENGTH + 1, key[: MAX_SANITIZED_LENGTH + 1]],
            ).fetchall()
            if key not in {str(dir_key) for dir_key, _ in rows}:
                accepted = {str(k) for k, cwd in rows if cwd and project_key(str(cwd)) == key}
                these = sorted(accepted) or [key]
        found.extend(k for k in these if k not in found)
    return found


def keys_sql(keys: list[str], column: str = "s.project_key") -> tuple[str, list[Any]]:
    """``column`` in ``keys`` (:func:`present_keys` first, for a hashed long key)."""
    if not keys:
        return "0", []
    return f"{column} IN ({', '.join('?' for _ in keys)})", list(keys)


def key_rank(key: str, keys: list[str]) -> int | None:
    """Python twin of :func:`keys_sql` for rows already loaded: the position of ``key``
    in ``keys``, else None."""
    return keys.index(key) if key in keys else None
