"""Project dirs a scope takes beyond the cwd's own (reference/cli-sessions.md §2, §6.1,
§7.4): the alias dirs a ``.session-aliases`` file names (a session started in a
symlinked spelling of the directory) and Claude Code's own worktree dirs
``<cwd key>--claude-worktrees-*`` (``claude --worktree``). The aliases are read by the
refresh (the query layer opens no file), and a scope, a name, completion and
``continue`` take them as the one rule says (``query.scopes.scope_dirs``)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.transcripts.keys import canonical_directory, project_key, sanitize_path
from tests.builders import ConfigTree, git, one_session

ALIASES = ".session-aliases"


@dataclass
class World:
    """``real/`` (a plain directory, or a git repository with a linked worktree), a
    symlink ``link`` to it, and one session in each project dir a scope may take."""

    base: Path
    worktrees: bool = False
    tree: ConfigTree = field(init=False)
    db: Path = field(init=False)
    real: Path = field(init=False)
    ids: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tree = ConfigTree(self.base / "claude")
        self.db = self.base / "index.db"
        self.real = self.base / "my-app"
        self.real.mkdir()
        if self.worktrees:
            git("init", "-q", "-b", "main", cwd=self.real)
            git("commit", "-q", "--allow-empty", "-m", "x", cwd=self.real)
            git("worktree", "add", "-q", str(self.base / "wt"), "-b", "feature", cwd=self.real)
        link = self.base / "link"
        link.symlink_to(self.real)
        real = canonical_directory(self.real)
        claude_wt = os.path.join(real, ".claude", "worktrees", "feat")
        sessions: list[tuple[str, str, str | None]] = [
            ("home", real, None),
            # started in the symlinked spelling: its own project dir, named by the alias
            ("alias", str(link), sanitize_path(str(link))),
            ("claude-wt", claude_wt, sanitize_path(claude_wt)),
            ("subdir", os.path.join(real, "sub"), None),  # <key>-sub: another project
            ("other", "/w/other", None),
        ]
        if self.worktrees:
            sessions.append(("worktree", canonical_directory(self.base / "wt"), None))
        for n, (name, cwd, key) in enumerate(sessions):
            s = self.tree.session(cwd=cwd, project_key=key)
            s.user(f"the quokka ledger, {name} part")
            s.assistant("noted")
            s.meta("custom-title", customTitle=f"Quokka {name}")
            s.write(mtime=1_800_000_000 + n)
            self.ids[name] = s.session_id
        self.aliases_file = self.tree.projects_dir / project_key(real) / ALIASES

    def write_aliases(self, *lines: str) -> None:
        self.aliases_file.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")

    def alias_line(self) -> str:
        """As Claude Code writes it: the alias dir's full path."""
        return str(self.tree.projects_dir / sanitize_path(str(self.base / "link")))

    def run(self, *args: str) -> Any:
        base = ["--config-dir", str(self.tree.root), "--db", str(self.db)]
        return CliRunner().invoke(cli, [*base, *args])

    def listed(self, *args: str, cwd: Path | None = None) -> set[str]:
        result = self.run(*args, "--cwd", str(cwd or self.real), "--json")
        assert result.exit_code in (0, 1), result.output
        found = {r["session_id"] for r in json.loads(result.stdout)} if result.stdout else set()
        names = {v: k for k, v in self.ids.items()}
        return {names[sid] for sid in found}


@pytest.mark.parametrize(
    ("worktrees", "command", "expected"),
    [
        # One worktree (here: no repository): the cwd's dir, its alias dirs and
        # Claude Code's worktree dirs (reference §6.1), never <key>-sub nor another.
        (False, ["list"], {"home", "alias", "claude-wt"}),
        (False, ["list", "--scope", "repo"], {"home", "alias", "claude-wt"}),
        (False, ["search", "quokka"], {"home", "alias", "claude-wt"}),
        # Several worktrees: the worktree scope is the cwd's dir and its aliases (a
        # Claude Code worktree is then a worktree of its own, which the picker's
        # default filter leaves out); repo takes every worktree and their dirs.
        (True, ["list"], {"home", "alias"}),
        (True, ["list", "--scope", "repo"], {"home", "alias", "claude-wt", "worktree"}),
        (True, ["search", "quokka", "--scope", "repo"], {"home", "alias", "claude-wt", "worktree"}),
        (True, ["list", "--scope", "all"], {"home", "alias", "claude-wt", "worktree", "subdir", "other"}),
    ],
    ids=["list", "repo", "search", "wt-list", "wt-repo", "wt-search-repo", "wt-all"],
)  # fmt: skip
def test_a_scope_takes_the_alias_and_claude_worktree_dirs(
    tmp_path: Path, worktrees: bool, command: list[str], expected: set[str]
) -> None:
    """Sessions started in a symlinked spelling of the directory (their dir named in
    ``.session-aliases``) and in ``claude --worktree`` worktrees since removed were in
    no scope but ``all``: ``list`` in the directory did not show them, as the picker
    does."""
    world = World(tmp_path, worktrees=worktrees)
    world.write_aliases(world.alias_line())
    assert world.listed(*command) == expected


@pytest.mark.parametrize(
    ("name", "found"),
    [("Quokka alias", "alias"), ("Quokka claude-wt", "claude-wt"), ("Quokka subdir", None)],
)
def test_a_name_resolves_and_completes_in_those_dirs(
    tmp_path: Path, name: str, found: str | None
) -> None:
    """A name resolves among the repository's sessions, the alias and Claude Code's
    worktree dirs with them (as ``list --scope repo``), and completion offers it."""
    from sessiondex.indexer.db import open_if_current
    from sessiondex.query.complete import complete_sessions

    world = World(tmp_path)
    world.write_aliases(world.alias_line())
    result = world.run("resolve", name, "--cwd", str(world.real), "--json")
    if found is None:
        assert result.exit_code == 1, result.output
    else:
        assert result.exit_code == 0, result.output
        assert one_session(result.stdout)["session_id"] == world.ids[found]
    db = open_if_current(world.db)
    assert db is not None
    try:
        offered = {value for value, _ in complete_sessions(db, "Quokka", str(world.real), None)}
    finally:
        db.close()
    assert (name in offered) is (found is not None)


@pytest.mark.parametrize(
    ("newest", "expected"),
    # the newest of the dir and its alias dirs, never a worktree's (claude-wt)
    [("alias", "alias"), ("claude-wt", "alias"), ("home", "home")],
)
def test_continue_takes_alias_dirs_not_worktree_dirs(
    tmp_path: Path, newest: str, expected: str
) -> None:
    """``claude --continue`` takes the cwd's dir and its ``.session-aliases`` dirs,
    not worktrees (reference §7.4): the newest session of an alias dir continues."""
    world = World(tmp_path)
    world.write_aliases(world.alias_line())
    path = next(world.tree.projects_dir.glob(f"*/{world.ids[newest]}.jsonl"))
    os.utime(path, (1_900_000_000, 1_900_000_000))
    result = world.run("continue", "--cwd", str(world.real), "--json")
    assert result.exit_code == 0, result.output
    assert one_session(result.stdout)["session_id"] == world.ids[expected]


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param(["{alias}"], id="as-written"),
        pytest.param(["", "  {alias}  ", "{alias}"], id="blank-padded-repeated"),
        pytest.param(["{alias}/"], id="trailing-slash"),
        pytest.param(["{alias}\r"], id="crlf"),
    ],
)
def test_the_aliases_file_is_read_by_the_refresh_and_followed(
    tmp_path: Path, lines: list[str]
) -> None:
    """The aliases are derived when the index is refreshed: a file written (or
    removed) after the index was built is seen by the next reading command, though no
    transcript changed."""
    world = World(tmp_path)
    assert world.listed("list") == {"home", "claude-wt"}
    world.write_aliases(*(line.format(alias=world.alias_line()) for line in lines))
    assert world.listed("list") == {"home", "alias", "claude-wt"}
    world.aliases_file.unlink()
    assert world.listed("list") == {"home", "claude-wt"}


def test_the_slug_twin_rule_still_holds_beside_them(tmp_path: Path) -> None:
    """A session recorded in another directory with the cwd's project key stays out of
    the worktree scope (046bece) with the alias and worktree dirs added. Those dirs
    come with the project key, which the twin shares: from the twin, its own session
    is listed and continued, not the alias's nor the Claude Code worktree's, which
    were recorded in (or below) real's directory."""
    world = World(tmp_path)
    world.write_aliases(world.alias_line())
    twin_dir = tmp_path / "my" / "app"  # /…/my/app and /…/my-app share a key
    twin_dir.mkdir(parents=True)
    real = canonical_directory(world.real)
    twin = world.tree.session(cwd=canonical_directory(twin_dir), project_key=project_key(real))
    twin.user("the quokka ledger, twin part")
    twin.write(mtime=1_800_000_050)
    assert world.listed("list") == {"home", "alias", "claude-wt"}
    result = world.run("list", "--cwd", str(twin_dir), "--json")
    assert result.exit_code == 0, result.output
    assert [r["session_id"] for r in json.loads(result.stdout)] == [twin.session_id]
    world.ids["twin"] = twin.session_id
    for scope in ("worktree", "repo"):
        assert world.listed("list", "--scope", scope, cwd=twin_dir) == {"twin"}
    # newest of all, the alias's session is still not the twin's to continue
    alias = next(world.tree.projects_dir.glob(f"*/{world.ids['alias']}.jsonl"))
    os.utime(alias, (1_900_000_000, 1_900_000_000))
    result = world.run("continue", "--cwd", str(twin_dir), "--json")
    assert result.exit_code == 0, result.output
    assert one_session(result.stdout)["session_id"] == twin.session_id
    result = world.run("continue", "--cwd", str(world.real), "--json")
    assert one_session(result.stdout)["session_id"] == world.ids["alias"]


def test_a_session_aliases_file_written_while_watch_runs_puts_its_dir_in_scope(
    tmp_path: Path,
) -> None:
    """Found reviewing d083c0a (the alias dirs of ``.session-aliases`` in scopes, read by
    the refresh): with ``watch`` running a reading command skips its own refresh, and
    the watcher acted only on ``.jsonl`` and directory events. A session started in a
    symlinked spelling of the directory (its transcript in its own project dir, its dir
    appended to the real dir's ``.session-aliases``) was indexed at once but stayed out
    of the directory's list until the periodic rescan (5 minutes; never with none)."""
    import signal

    from sessiondex.index import Index
    from tests.test_watch import WatchProcess

    tree = ConfigTree(tmp_path / "claude")
    real = tmp_path / "my-app"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    home = tree.session(cwd=canonical_directory(real))
    home.user("the quokka ledger at home")
    home.write()
    db = tmp_path / "index.db"
    with Index(db, [tree.root]) as builder:
        builder.refresh()
    watcher = WatchProcess(tree.root, db, "--no-archive")
    try:
        watcher.wait_for_line("watching")
        _link_session_and_alias(tree, real, link, db, home.session_id)
    finally:
        assert watcher.finish(signal.SIGTERM) == 0


def _link_session_and_alias(tree: ConfigTree, real: Path, link: Path, db: Path, home: str) -> None:
    from sessiondex.index import Index
    from tests.test_watch import wait_for

    via_link = tree.session(cwd=str(link), project_key=sanitize_path(str(link)))
    via_link.user("the quokka ledger through the link")
    via_link.write()
    aliases = tree.projects_dir / project_key(canonical_directory(real)) / ".session-aliases"
    aliases.write_text(f"{tree.projects_dir / sanitize_path(str(link))}\n", encoding="utf-8")

    def listed(scope: str) -> set[str]:
        result = CliRunner().invoke(
            cli,
            ["--config-dir", str(tree.root), "--db", str(db), "list", "--json"]
            + ["--scope", scope, "--cwd", str(real)],
        )
        assert result.exit_code == 0, result.output
        return {row["session_id"] for row in json.loads(result.output)}

    wait_for(lambda: via_link.session_id in listed("all"), "the linked session indexed")
    with Index(db, [tree.root]) as index:
        assert index.watcher_alive()  # so the list below does not refresh itself
    wait_for(
        lambda: listed("worktree") == {home, via_link.session_id},
        "the alias dir in the directory's scope",
        deadline=5.0,
    )
