"""list, resolve, continue on a tree with two repositories, one with two worktrees."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.query.scopes import git_worktrees
from sessiondex.render.terminal import neutralize
from tests.builders import ConfigTree, git, one_session
from tests.helpers_index import statements

ID_PREFIX_A = "abcdef12-0000-4000-8000-000000000001"
ID_PREFIX_B = "abcdef12-1111-4000-8000-000000000002"
ID_DUP = "d0d0d0d0-0000-4000-8000-00000000d0d0"
ID_OTHER = "0e0e0e0e-0000-4000-8000-000000000e0e"
ID_META_ELSEWHERE = "4e4e4e4e-0000-4000-8000-000000004e4e"
ID_ONLY_META = "5e5e5e5e-0000-4000-8000-000000005e5e"


class World:
    """Two repositories (A with a second worktree, B), a plain dir, and the sessions."""

    def __init__(self, base: Path) -> None:
        self.repo_a = base / "repo-a"
        self.repo_a_wt = base / "repo-a-wt"
        self.repo_b = base / "repo-b"
        self.plain = base / "plain"
        for d in (self.repo_a, self.repo_b, self.plain):
            d.mkdir()
        git("init", "-q", "-b", "main", cwd=self.repo_a)
        git("commit", "-q", "--allow-empty", "-m", "init", cwd=self.repo_a)
        git("worktree", "add", "-q", "-b", "feat", str(self.repo_a_wt), cwd=self.repo_a)
        git("init", "-q", "-b", "main", cwd=self.repo_b)
        git_worktrees.cache_clear()
        self.tree = ConfigTree(base / "claude")
        self.db = base / "index.db"
        self.ids: dict[str, str] = {}
        t = 1_790_000_000
        self.add("auth", self.repo_a, title="Auth refactor", mtime=t + 10)
        self.add("billing", self.repo_a_wt, ai_title="Billing cleanup", branch="feat", mtime=t + 20)
        self.add("deploy1", self.repo_a, title="Deploy script", mtime=t + 30)
        self.add("deploy2", self.repo_a_wt, title="deploy SCRIPT", branch="feat", mtime=t + 40)
        self.add("onlyb", self.repo_b, title="Only in B", mtime=t + 50)
        self.add("prefix_a", self.repo_a, session_id=ID_PREFIX_A, mtime=t + 60)
        self.add("prefix_b", self.repo_a, session_id=ID_PREFIX_B, mtime=t + 61)
        self.add("dup_b", self.repo_b, session_id=ID_DUP, mtime=t + 70)
        self.add("dup_plain", self.plain, session_id=ID_DUP, mtime=t + 71)
        self.add("other", self.repo_b, session_id=ID_OTHER, mtime=t + 80)
        self.add("meta_b", self.repo_b, session_id=ID_META_ELSEWHERE, messages=False, mtime=t + 90)
        self.add("real_plain", self.plain, session_id=ID_META_ELSEWHERE, mtime=t + 91)
        self.add("only_meta", self.repo_b, session_id=ID_ONLY_META, messages=False, mtime=t + 95)
        self.add("newest_normal", self.repo_a, title="Newest normal", mtime=t + 100)
        self.add("print_mode", self.repo_a, entrypoint="sdk-cli", mtime=t + 110)
        self.add("loop", self.repo_a, first="<command-name>/loop</command-name>", mtime=t + 120)

    def add(
        self,
        name: str,
        cwd: Path,
        *,
        title: str | None = None,
        ai_title: str | None = None,
        branch: str = "main",
        session_id: str | None = None,
        entrypoint: str = "cli",
        messages: bool = True,
        first: str | None = None,
        mtime: float,
    ) -> None:
        s = self.tree.session(
            cwd=str(cwd), git_branch=branch, session_id=session_id, entrypoint=entrypoint
        )
        if messages:
            s.user(first or f"prompt for {name}")
            s.assistant(f"answer for {name}")
        if title:
            s.meta("custom-title", customTitle=title)
        if ai_title:
            s.meta("ai-title", aiTitle=ai_title)
        if not messages:
            s.meta("custom-title", customTitle=f"meta only {name}")
        s.write(mtime=mtime)
        self.ids[name] = s.session_id

    def run(self, *args: str, cwd: Path | None = None):
        base = ["--config-dir", str(self.tree.root), "--db", str(self.db)]
        if cwd is not None and args and args[0] not in ("index",):
            args = (*args, "--cwd", str(cwd))
        return CliRunner().invoke(cli, [*base, *args])

    def ids_of(self, result) -> list[str]:
        assert result.exit_code in (0, 3), result.output
        return [row["session_id"] for row in json.loads(result.stdout)]


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    return World(tmp_path_factory.mktemp("world"))


@pytest.mark.parametrize(
    ("arg", "where", "exit_code", "expected", "matched_by"),
    [
        ("auth", "a", 1, None, None),  # not a name, not hex: not found
        ("Auth refactor", "a", 0, "auth", "name"),
        ("  auth REFACTOR ", "a", 0, "auth", "name"),  # trimmed, case-insensitive
        ("billing cleanup", "a", 0, "billing", "name"),  # AI title, another worktree
        ("Auth refactor", "wt", 0, "auth", "name"),  # from the linked worktree
        ("deploy script", "a", 3, ["deploy2", "deploy1"], "name"),  # ambiguous, newest first
        ("Only in B", "a", 1, None, None),  # name in another repository
        ("Only in B", "b", 0, "onlyb", "name"),
        (ID_OTHER, "a", 0, "other", "id-other-project"),  # exactly one other project
        (ID_DUP, "a", 1, None, None),  # two other projects: not found
        (ID_DUP, "b", 0, "dup_b", "id"),  # in the cwd's project: found
        (ID_META_ELSEWHERE, "a", 0, "real_plain", "id-other-project"),  # metadata-only ignored
        (ID_ONLY_META, "a", 1, None, None),  # only a metadata-only file: not counted
        ("abcdef12-0000", "a", 0, "prefix_a", "id-prefix"),
        ("ABCDEF12-1", "a", 0, "prefix_b", "id-prefix"),
        ("abcdef12", "a", 3, ["prefix_b", "prefix_a"], "id-prefix"),  # ambiguous prefix
    ],
)
def test_resolve_table(
    world: World,
    arg: str,
    where: str,
    exit_code: int,
    expected: str | list[str] | None,
    matched_by: str | None,
) -> None:
    cwd = {"a": world.repo_a, "wt": world.repo_a_wt, "b": world.repo_b}[where]
    result = world.run("resolve", arg, "--json", cwd=cwd)
    assert result.exit_code == exit_code, result.output
    if exit_code == 0:
        obj = one_session(result.stdout)
        assert obj["session_id"] == world.ids[expected]
        assert obj["matched_by"] == matched_by
    elif exit_code == 3:  # every candidate, each saying how it matched (cli.md)
        assert world.ids_of(result) == [world.ids[n] for n in expected]
        assert {c["matched_by"] for c in json.loads(result.stdout)} == {matched_by}
    else:
        assert json.loads(result.stdout) == []  # nothing found: an empty array
        assert len(result.stderr.strip().splitlines()) == 1


def test_an_ambiguous_prefix_lists_ids_that_tell_the_candidates_apart(world: World) -> None:
    """The table cut every ID at 8 characters, so the candidates of an ambiguous 8-char
    prefix all read the same, and "say which one" left nothing to type."""
    result = world.run("resolve", "abcdef12", cwd=world.repo_a)
    assert result.exit_code == 3
    shown = [line.split()[-1] for line in result.stdout.splitlines()[1:]]
    assert len(set(shown)) == 2
    for cut in shown:
        again = world.run("resolve", cut, "--json", cwd=world.repo_a)
        assert again.exit_code == 0, again.output
    listing = world.run("list", cwd=world.repo_a)
    ids = [line.split()[-1] for line in listing.stdout.splitlines()[1:]]
    assert len(ids[0]) > 8 and len({len(i) for i in ids}) == 1  # one width per table


@pytest.mark.parametrize(
    ("ids", "chars"),
    [
        (["0a1b2c3d-aaaa", "ffff0000-bbbb"], 8),
        (["abcdef12-0000-4", "abcdef12-1111-4"], 10),
        (["abcdef12-0000-4", "ABCDEF12-0000-5"], 15),  # case aside, as resolve reads it
        (["abcdef12-0000-4", "abcdef12-0000-4"], 8),  # one ID twice: copies stay alike
        ([], 8),
    ],
)
def test_id_chars(ids: list[str], chars: int) -> None:
    from sessiondex.cli.output import id_chars

    assert id_chars(ids) == chars


@pytest.mark.parametrize(
    ("prefix", "says"),
    [
        (ID_OTHER[:8], f"session {ID_OTHER} of another project does: give its whole ID"),
        (ID_DUP[:8], f"session {ID_DUP} does, in 2 other projects: run the command from"),
    ],
    ids=["one-project", "several-projects"],
)
def test_a_prefix_found_only_elsewhere_says_what_will_work(
    world: World, prefix: str, says: str
) -> None:
    """ "give its whole ID" was said of an ID that two other projects hold, which is not
    found whole either (Claude Code's rule): the advice then failed."""
    result = world.run("resolve", prefix, cwd=world.repo_a)
    assert result.exit_code == 1
    assert says in result.stderr
    if "whole ID" in says:
        whole = says.split()[1]
        assert world.run("resolve", whole, "--json", cwd=world.repo_a).exit_code == 0


def test_a_prefix_of_several_sessions_elsewhere_names_how_many(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    for n, cwd in enumerate(("/w/x", "/w/y")):
        s = tree.session(cwd=cwd, session_id=f"feedbeef-000{n}-4000-8000-000000000000")
        s.user("hello")
        s.write()
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db"), "resolve", "feedbeef",
         "--cwd", "/w/here"],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "2 sessions of other projects do (feedbeef-0000-4000-8000-000000000000, …)" in (
        result.stderr
    )


@pytest.mark.parametrize("real", [False, True], ids=["alone", "beside-a-real-one"])
def test_a_name_on_a_file_without_messages_is_no_handle(tmp_path: Path, real: bool) -> None:
    """A file holding only a title (and a tag) resolved by that name, though there is
    nothing to resume and neither its ID nor list counts it; beside a real session of
    that name it made the name ambiguous."""
    tree = ConfigTree(tmp_path / "claude")
    ghost = tree.session(cwd="/w/here")
    ghost.meta("custom-title", customTitle="ghost")
    ghost.meta("tag", tag="spooky")
    ghost.write()
    if real:
        s = tree.session(cwd="/w/here")
        s.user("a real conversation")
        s.meta("custom-title", customTitle="Ghost")
        s.write()
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db"), "resolve", "ghost",
         "--cwd", "/w/here", "--json"],
    )  # fmt: skip
    if real:
        assert result.exit_code == 0, result.output
        assert one_session(result.stdout)["session_id"] == s.session_id
    else:
        assert result.exit_code == 1 and json.loads(result.stdout) == []


def test_unknown_id_uses_claude_codes_message(world: World) -> None:
    result = world.run("resolve", ID_DUP, cwd=world.repo_a)
    assert result.stderr.strip() == f"No conversation found with session ID: {ID_DUP}"


def test_other_directory_is_said(world: World) -> None:
    result = world.run("resolve", ID_OTHER, cwd=world.repo_a)
    assert "different directory" in result.stderr
    config = f"CLAUDE_CONFIG_DIR={world.tree.root}"  # not ~/.claude: said
    assert f"cd {world.repo_b} && {config} claude --resume {ID_OTHER}" in result.stderr


def test_not_found_name_suggests_close_titles(world: World) -> None:
    result = world.run("resolve", "auth refactr", cwd=world.repo_a)
    assert result.exit_code == 1
    assert "Auth refactor" in result.stderr


@pytest.mark.parametrize(
    "arg",
    [
        "../x",
        "/etc/passwd",
        ID_OTHER + "\n",
        "",
        "   ",
        "a\x00b",
        "../../etc/passwd.jsonl",
        "x/y/z",
        "/",
    ],
)
def test_hostile_arguments_are_clear_errors(world: World, arg: str) -> None:
    result = world.run("resolve", arg, cwd=world.repo_a)
    # An empty or blank one is an unset variable: a usage error (cli.errors.not_empty).
    assert result.exit_code == (2 if not arg.strip() else 1), result.output
    assert "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1


def test_transcript_path_resolves_anywhere_for_reading(world: World, tmp_path: Path) -> None:
    source = next(world.tree.projects_dir.rglob(f"{world.ids['auth']}.jsonl"))
    result = world.run("resolve", str(source), "--json", cwd=world.plain)
    assert one_session(result.stdout)["matched_by"] == "path"
    copy = tmp_path / "elsewhere.jsonl"
    copy.write_bytes(source.read_bytes())
    obj = one_session(world.run("resolve", str(copy), "--json").stdout)
    assert obj["matched_by"] == "path" and obj["title"] == "Auth refactor"


@pytest.mark.parametrize(
    ("args", "where", "expected"),
    [
        (
            ("--scope", "worktree"),
            "a",
            ["newest_normal", "prefix_b", "prefix_a", "deploy1", "auth"],
        ),
        (
            ("--scope", "repo"),
            "a",
            ["newest_normal", "prefix_b", "prefix_a", "deploy2", "deploy1", "billing", "auth"],
        ),
        (("--scope", "repo", "--branch", "feat"), "a", ["deploy2", "billing"]),
        (("--scope", "worktree", "--current-branch"), "wt", ["deploy2", "billing"]),
        (
            ("--scope", "worktree", "--all-kinds"),
            "a",
            ["loop", "print_mode", "newest_normal", "prefix_b", "prefix_a", "deploy1", "auth"],
        ),
        (("--scope", "repo", "--limit", "2"), "a", ["newest_normal", "prefix_b"]),
        (("--scope", "worktree", "--since", "2020-01-01"), "b", ["other", "dup_b", "onlyb"]),
        (("--scope", "worktree", "--since", "1d"), "b", []),
    ],
)
def test_list_table(world: World, args: tuple[str, ...], where: str, expected: list[str]) -> None:
    cwd = {"a": world.repo_a, "wt": world.repo_a_wt, "b": world.repo_b}[where]
    result = world.run("list", *args, "--json", cwd=cwd)
    assert world.ids_of(result) == [world.ids[n] for n in expected]


def test_list_scope_all_hides_hidden_kinds(world: World) -> None:
    ids = world.ids_of(world.run("list", "--scope", "all", "--json"))
    for hidden in ("print_mode", "loop", "only_meta"):
        assert world.ids[hidden] not in ids
    assert world.ids["onlyb"] in ids
    # the metadata-only copy in repo B is hidden, the real one in plain/ is listed
    assert ids.count(ID_META_ELSEWHERE) == 1


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "table"])
def test_every_format_prints_the_same_rows(world: World, fmt: str) -> None:
    result = world.run("list", "--format", fmt, cwd=world.repo_b)
    assert result.exit_code == 0
    if fmt == "json":
        rows = json.loads(result.stdout)
        from sessiondex.query.sessions import SESSION_FIELDS

        assert all(list(r) == list(SESSION_FIELDS) for r in rows)
    elif fmt == "jsonl":
        assert len(result.stdout.splitlines()) == 3
    elif fmt == "csv":
        assert result.stdout.splitlines()[0].startswith("session_id,project_key")
        assert len(result.stdout.splitlines()) == 4
    else:
        assert "Only in B" in result.stdout


def test_empty_json_is_an_array(world: World, tmp_path: Path) -> None:
    result = world.run("list", "--json", cwd=tmp_path)
    assert result.exit_code == 0 and json.loads(result.stdout) == []


@pytest.mark.parametrize(
    ("where", "print_mode", "expected"),
    [
        ("a", False, "newest_normal"),
        ("a", True, "loop"),
        ("wt", False, "deploy2"),
        ("b", False, "other"),
    ],
)
def test_continue_table(world: World, where: str, print_mode: bool, expected: str) -> None:
    cwd = {"a": world.repo_a, "wt": world.repo_a_wt, "b": world.repo_b}[where]
    args = ["continue", "--json"] + (["--print-mode"] if print_mode else [])
    result = world.run(*args, cwd=cwd)
    assert one_session(result.stdout)["session_id"] == world.ids[expected]


def test_resume_dry_run_prints_the_command(world: World) -> None:
    result = world.run("resume", "Auth refactor", "--dry-run", cwd=world.repo_a)
    assert result.exit_code == 0
    assert result.stdout.strip() == (
        f"cd {world.repo_a} && CLAUDE_CONFIG_DIR={world.tree.root}"
        f" claude --resume {world.ids['auth']}"
    )


def test_resume_without_claude_is_a_clear_error(world: World, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    result = world.run("resume", "Auth refactor", cwd=world.repo_a)
    assert result.exit_code == 1
    assert "claude" in result.stderr and "Traceback" not in result.output


def test_a_subagent_transcript_path_resolves_to_its_session(tmp_path: Path) -> None:
    """``projects/<key>/<id>/subagents/agent-*.jsonl`` is part of session <id>: resolving
    it answers with that session as its own transcript does (it came back as a session
    of project "subagents" in config dir ``projects/<key>``, with a resume line that
    could not work)."""
    from tests.builders import copy_fixtures

    root = copy_fixtures(tmp_path)
    session_id = "8c136a88-d56e-5503-90fb-65c938b104f6"
    main = root / "projects" / "-home-dev-shop" / f"{session_id}.jsonl"
    (sub,) = (main.parent / session_id / "subagents").glob("agent-*.jsonl")
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]

    def run(*args: str) -> Any:
        result = CliRunner().invoke(cli, [*base, *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    by_sub = one_session(run("resolve", str(sub), "--json"))
    by_main = one_session(run("resolve", str(main), "--json"))
    assert by_sub == by_main and by_sub["matched_by"] == "path"
    assert by_sub["config_dir"] == str(root) and by_sub["project_key"] == "-home-dev-shop"
    assert run("resume", str(sub), "--dry-run") == run("resume", str(main), "--dry-run")


def test_a_subagent_without_its_main_transcript_keeps_its_config_dir(tmp_path: Path) -> None:
    from tests.builders import copy_fixtures

    root = copy_fixtures(tmp_path)
    session_id = "8c136a88-d56e-5503-90fb-65c938b104f6"
    main = root / "projects" / "-home-dev-shop" / f"{session_id}.jsonl"
    (sub,) = (main.parent / session_id / "subagents").glob("agent-*.jsonl")
    main.unlink()
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(root), "--db", str(tmp_path / "i.db"), "resolve", str(sub), "--json"],
    )
    obj = one_session(result.stdout)
    assert (obj["session_id"], obj["config_dir"], obj["project_key"]) == (
        session_id,
        str(root),
        "-home-dev-shop",
    )


def test_a_jsonl_that_names_no_session_is_no_session(tmp_path: Path) -> None:
    """notes.jsonl in a project dir (no record names a session, the name is no session
    ID): Claude Code ignores it, and resolve gave 'claude --resume notes'."""
    from tests.builders import copy_fixtures

    root = copy_fixtures(tmp_path)
    notes = root / "projects" / "-home-dev-shop" / "notes.jsonl"
    assert notes.is_file()
    copy = tmp_path / "elsewhere.jsonl"
    copy.write_bytes(notes.read_bytes())
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db"), "resolve"]
    for path in (notes, copy):
        result = CliRunner().invoke(cli, [*base, str(path)])
        assert result.exit_code == 1 and "--resume notes" not in result.output, result.output


# ---- found by an adversarial run: continue, ID prefixes and long project keys ----------


def _cli_json(tmp_path: Path, root: Path, *args: str) -> Any:
    result = CliRunner().invoke(
        cli, ["--config-dir", str(root), "--db", str(tmp_path / "q.db"), *args, "--json"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


class SlugTwins:
    """``<base>/a/b-c`` and ``<base>/a/b/c`` share one project dir (project keys are
    lossy). In it: a session recorded in each twin, a name and an 8-character ID prefix
    that both twins' sessions have, and a session that recorded no cwd at all."""

    def __init__(self, base: Path) -> None:
        self.dirs = {"b-c": base / "a" / "b-c", "b/c": base / "a" / "b" / "c"}
        for d in self.dirs.values():
            d.mkdir(parents=True)
        self.tree = ConfigTree(base / "claude")
        self.db = base / "index.db"
        key = self.tree.project_dir(str(self.dirs["b-c"])).name
        self.ids: dict[str, str] = {}
        for n, (name, where, title) in enumerate(
            [
                ("here", "b-c", "Plan here"),
                ("there", "b/c", "Plan there"),
                ("same_here", "b-c", "Shared plan"),
                ("same_there", "b/c", "Shared plan"),
            ]
        ):
            sid = f"{'7a7a7a7a' if n < 2 else '5a5a5a5a'}-{n}{n}{n}{n}-4000-8000-00000000000{n}"
            s = self.tree.session(cwd=str(self.dirs[where]), session_id=sid, project_key=key)
            s.user(f"work on {name}")
            s.assistant(f"done with {name}")
            s.meta("custom-title", customTitle=title)
            s.write(mtime=1_800_000_000 + n)
            self.ids[name] = sid
        nowhere = self.tree.session(
            cwd=str(self.dirs["b-c"]), session_id="0c0c0c0c-0000-4000-8000-0000000000cc"
        )
        sid = nowhere.session_id
        nowhere.raw(
            b'{"type":"user","message":{"role":"user","content":"no cwd recorded"},'
            b'"uuid":"u1","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"'
            + sid.encode()
            + b'"}\n{"type":"custom-title","customTitle":"Nobody\'s plan","sessionId":"'
            + sid.encode()
            + b'"}\n'
        )
        nowhere.write(mtime=1_800_000_100)
        self.ids["nowhere"] = sid

    def run(self, *args: str) -> Any:
        base = ["--config-dir", str(self.tree.root), "--db", str(self.db)]
        return CliRunner().invoke(cli, [*base, *args])


@pytest.fixture(scope="module")
def slug_twins(tmp_path_factory: pytest.TempPathFactory) -> SlugTwins:
    return SlugTwins(tmp_path_factory.mktemp("twins"))


@pytest.mark.parametrize(
    ("arg", "cwd", "expected", "matched_by"),
    [
        # A name: only the sessions of this directory (and its worktrees), as the picker
        # lists them; the twin's session is another directory's (helper 306).
        ("Plan here", "b-c", "here", "name"),
        ("Plan here", "b/c", None, None),
        ("Plan there", "b/c", "there", "name"),
        ("Plan there", "b-c", None, None),
        ("Shared plan", "b-c", "same_here", "name"),  # was ambiguous with the twin's
        ("Shared plan", "b/c", "same_there", "name"),
        ("nobody's plan", "b-c", "nowhere", "name"),  # no cwd recorded: either twin's
        ("nobody's plan", "b/c", "nowhere", "name"),
        # An ID prefix: the same sessions.
        ("7a7a7a7a-0", "b-c", "here", "id-prefix"),
        ("7a7a7a7a-1", "b-c", None, None),
        ("7a7a7a7a-1", "b/c", "there", "id-prefix"),
        ("5a5a5a5a", "b-c", "same_here", "id-prefix"),  # was ambiguous with the twin's
        ("5a5a5a5a", "b/c", "same_there", "id-prefix"),
        ("0c0c0c0c", "b-c", "nowhere", "id-prefix"),
        ("0c0c0c0c", "b/c", "nowhere", "id-prefix"),
        # A whole ID: Claude Code's rule, the transcript in the cwd's project dir.
        ("7a7a7a7a-1111-4000-8000-000000000001", "b-c", "there", "id"),
        ("7a7a7a7a-0000-4000-8000-000000000000", "b/c", "here", "id"),
        ("0c0c0c0c-0000-4000-8000-0000000000cc", "b/c", "nowhere", "id"),
    ],
)
def test_resolve_leaves_the_slug_twins_session_out_of_names_and_prefixes(
    slug_twins: SlugTwins, arg: str, cwd: str, expected: str | None, matched_by: str | None
) -> None:
    """``resolve "Plan there"`` in ``/a/b-c`` answered the session of ``/a/b/c`` (and
    ``rename`` wrote to it): a name and an ID prefix match among the sessions of the
    cwd's repository and worktrees, and a session recorded in another directory of the
    same project key is none of them, as ``list`` and ``continue`` already had it."""
    result = slug_twins.run("resolve", arg, "--cwd", str(slug_twins.dirs[cwd]), "--json")
    if expected is None:
        assert result.exit_code == 1, result.output
        assert json.loads(result.stdout) == []
        return
    assert result.exit_code == 0, result.output
    found = one_session(result.stdout)
    assert (found["session_id"], found["matched_by"]) == (slug_twins.ids[expected], matched_by)


def test_a_prefix_of_the_slug_twins_session_says_its_whole_id_works(
    slug_twins: SlugTwins,
) -> None:
    """The twin's session is named in the error, as another project's is, and the whole
    ID given there resolves from here (Claude Code looks a whole ID up by project dir)."""
    here = str(slug_twins.dirs["b-c"])
    result = slug_twins.run("resolve", "7a7a7a7a-1", "--cwd", here)
    there = slug_twins.ids["there"]
    assert result.exit_code == 1
    assert f"session {there} of another directory with this project dir does" in result.stderr
    assert slug_twins.run("resolve", there, "--cwd", here).exit_code == 0


@pytest.mark.parametrize(
    ("cwd", "offered"),
    [
        ("b-c", ["Nobody's plan", "Plan here", "Shared plan"]),
        ("b/c", ["Nobody's plan", "Plan there", "Shared plan"]),
    ],
)
def test_completion_offers_the_names_that_resolve_from_here(
    slug_twins: SlugTwins, cwd: str, offered: list[str]
) -> None:
    """Completion offers what ``resolve`` accepts: a Tab in ``/a/b-c`` offered the
    twin's ``Plan there``, which names nothing there."""
    from sessiondex.indexer.db import open_if_current
    from sessiondex.query.complete import complete_sessions
    from sessiondex.transcripts.keys import is_session_id

    assert slug_twins.run("index").exit_code == 0
    db = open_if_current(slug_twins.db)
    assert db is not None
    try:
        found = complete_sessions(db, "", str(slug_twins.dirs[cwd]), [slug_twins.tree.root])
    finally:
        db.close()
    assert sorted(value for value, _ in found if not is_session_id(value)) == offered
    for name in offered:
        resolved = slug_twins.run("resolve", name, "--cwd", str(slug_twins.dirs[cwd]))
        assert resolved.exit_code == 0, resolved.output


def test_rename_by_name_does_not_write_to_the_slug_twins_session(tmp_path: Path) -> None:
    """The write that the name rule protects: ``rename "Plan there" …`` from ``/a/b-c``
    appended a custom-title to the session of ``/a/b/c``."""
    twins = SlugTwins(tmp_path)
    theirs = next(twins.tree.projects_dir.glob(f"*/{twins.ids['there']}.jsonl"))
    before = theirs.read_bytes()
    result = twins.run("rename", "Plan there", "Hijacked", "--cwd", str(twins.dirs["b-c"]))
    assert result.exit_code == 1, result.output
    assert theirs.read_bytes() == before


def test_continue_skips_a_session_of_another_directory_with_the_same_key(
    tmp_path: Path,
) -> None:
    """``/p/b-c`` and ``/p/b/c`` share a project dir; Claude Code's --continue skips the
    other directory's sessions (reference §7.4), we took the newest of either."""
    tree = ConfigTree(tmp_path / "claude")
    mine = tree.session(cwd="/p/b-c")
    mine.user("work in b-c")
    mine.write(mtime=1_800_000_000)
    other = tree.session(cwd="/p/b/c", project_key=mine.project_dir.name)
    other.user("work in b/c")
    other.write(mtime=1_800_000_500)
    [found] = _cli_json(tmp_path, tree.root, "continue", "--cwd", "/p/b-c")
    assert found["session_id"] == mine.session_id


@pytest.mark.parametrize("newest_recorded", ["link", "other slug"])
def test_continue_takes_the_newest_session_recorded_in_this_directory_however_spelled(
    tmp_path: Path, newest_recorded: str
) -> None:
    """Only a *different* directory of the same slug is passed over (reference §7.4):
    the cwd reached through a symlink is this directory, and a recorded cwd of another
    slug is no slug collision; list showed both, continue skipped them (helper 114)."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "lnk").symlink_to(real)
    recorded = {"link": str(tmp_path / "lnk"), "other slug": "/elsewhere/entirely"}
    tree = ConfigTree(tmp_path / "claude")
    older = tree.session(cwd=str(real))
    older.user("older, recorded as the real path")
    older.write(mtime=1_800_000_000)
    newest = tree.session(cwd=recorded[newest_recorded], project_key=older.project_dir.name)
    newest.user("newest, recorded otherwise")
    newest.write(mtime=1_800_000_500)
    for cwd in (str(real), str(tmp_path / "lnk")):
        listed = _cli_json(tmp_path, tree.root, "list", "--cwd", cwd)
        assert [r["session_id"] for r in listed][0] == newest.session_id
        [found] = _cli_json(tmp_path, tree.root, "continue", "--cwd", cwd)
        assert found["session_id"] == newest.session_id, cwd


def _older_and_newest(tmp_path: Path) -> tuple[ConfigTree, Any, Any]:
    """Two sessions of /w/app: ``continue`` takes the newest unless it is passed over."""
    tree = ConfigTree(tmp_path / "claude")
    older = tree.session(cwd="/w/app")
    older.user("the older conversation")
    older.write(mtime=1_800_000_000)
    newest = tree.session(cwd="/w/app")
    newest.user("the newest conversation")
    newest.write(mtime=1_800_000_500)
    return tree, older, newest


@pytest.mark.parametrize(
    ("sidecar", "skipped"),
    [
        (b'{"archived": true, "at": "2026-11-30T10:00:00.000Z"}', True),
        (b'{"archived": false, "at": "2026-11-30T10:00:00.000Z"}', False),  # unarchived
        (b'{"archived": "yes"}', False),  # only true archives
        (b"{not json", False),
    ],
)
def test_continue_passes_over_a_session_claude_codes_picker_archived(
    tmp_path: Path, sidecar: bytes, skipped: bool
) -> None:
    """reference §7.4: --continue skips archived sessions (ctrl+e in the picker writes
    ``<id>/archived.json``); when only archived ones are left, the user is told."""
    tree, older, newest = _older_and_newest(tmp_path)
    tree.write_file(
        f"projects/{newest.project_dir.name}/{newest.session_id}/archived.json", sidecar
    )
    [found] = _cli_json(tmp_path, tree.root, "continue", "--cwd", "/w/app")
    assert found["session_id"] == (older if skipped else newest).session_id
    if skipped:
        tree.write_file(
            f"projects/{older.project_dir.name}/{older.session_id}/archived.json", sidecar
        )
        result = CliRunner().invoke(
            cli,
            ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db"), "continue",
             "--cwd", "/w/app"],
        )  # fmt: skip
        assert result.exit_code == 1
        assert result.stderr.startswith(
            "Error: No conversation found to continue in /w/app: its 2 sessions are"
            " archived in Claude Code's picker"
        )


def _picker_archive(s: Any, archived: bool | None) -> None:
    """What Claude Code's picker does on ctrl+e (None: the sidecar removed)."""
    sidecar = s.project_dir / s.session_id / "archived.json"
    if archived is None:
        sidecar.unlink()
        return
    sidecar.parent.mkdir(exist_ok=True)
    sidecar.write_text(json.dumps({"archived": archived, "at": "2026-11-30T10:00:00.000Z"}))


def test_listings_hide_what_claude_codes_picker_archived_and_follow_each_toggle(
    tmp_path: Path,
) -> None:
    """reference §6.3: the picker hides an archived session (ctrl+e writes
    ``<id>/archived.json``; no transcript changes). list, search and from-pr hide it
    too, --all-kinds shows it, and each toggle is seen by the next command; the index
    rebuilt says the same."""
    tree = ConfigTree(tmp_path / "claude")
    kept = tree.session(cwd="/w/app")
    kept.user("the pelican census, kept")
    kept.write(mtime=1_800_000_000)
    shelved = tree.session(cwd="/w/app")
    shelved.user("the pelican census, shelved")
    shelved.pr_link(number=3, url="https://github.com/acme/app/pull/3", repository="acme/app")
    shelved.write(mtime=1_800_000_100)

    def ids(*args: str) -> set[str]:
        return {r["session_id"] for r in _cli_json(tmp_path, tree.root, *args)}

    def answers() -> tuple[set[str], ...]:
        return (
            ids("list", "--cwd", "/w/app"),
            ids("search", "pelican", "--cwd", "/w/app"),
            ids("list", "--cwd", "/w/app", "--all-kinds"),
        )

    both = {kept.session_id, shelved.session_id}
    assert answers() == (both, both, both)
    for archived in (True, False, True):
        _picker_archive(shelved, archived)
        shown = {kept.session_id} if archived else both
        assert answers() == (shown, shown, both)
        pr = CliRunner().invoke(
            cli,
            ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db"), "from-pr",
             "https://github.com/acme/app/pull/3", "--cwd", "/w/app", "--json"],
        )  # fmt: skip
        assert pr.exit_code == (1 if archived else 0)
    rebuilt = CliRunner().invoke(
        cli, ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db"), "index", "--rebuild"]
    )
    assert rebuilt.exit_code == 0, rebuilt.output
    assert answers() == ({kept.session_id}, {kept.session_id}, both)
    _picker_archive(shelved, None)
    assert answers() == (both, both, both)


def test_a_picker_archived_session_stays_hidden_when_another_command_reads_it_anew(
    tmp_path: Path,
) -> None:
    """A rewritten transcript is read again from the start, its session row written
    anew; cleanup's plan did that without the sidecar, and the session came back in
    every listing until a rebuild (the sidecar's stamp had not changed)."""
    tree = ConfigTree(tmp_path / "claude")
    kept = tree.session(cwd="/w/app")
    kept.user("the kept conversation")
    kept.write(mtime=1_800_000_000)
    shelved = tree.session(cwd="/w/app")
    shelved.user("the shelved conversation")
    shelved.assistant("noted")
    path = shelved.write(mtime=1_700_000_000)
    _picker_archive(shelved, True)

    def listed() -> set[str]:
        return {r["session_id"] for r in _cli_json(tmp_path, tree.root, "list", "--cwd", "/w/app")}

    assert listed() == {kept.session_id}
    path.write_bytes(path.read_bytes().split(b"\n")[0] + b"\n")  # rewritten shorter
    os.utime(path, (1_700_000_000, 1_700_000_000))
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db")]
    for args in (["--no-refresh", "cleanup", "--cwd", "/w/app"], ["index"], ["index", "--rebuild"]):
        assert CliRunner().invoke(cli, [*base, *args]).exit_code == 0
        assert listed() == {kept.session_id}, args


@pytest.mark.parametrize("how", ["a linked folder", "a linked sidecar"])
def test_a_sidecar_reached_through_a_link_counts_everywhere(tmp_path: Path, how: str) -> None:
    """Claude Code reads archived.json through links; list hid nothing and continue
    skipped the session (it read through the link): both now count it."""
    tree, older, newest = _older_and_newest(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "archived.json").write_text('{"archived": true}')
    folder = newest.project_dir / newest.session_id
    if how == "a linked folder":
        folder.symlink_to(elsewhere)
    else:
        folder.mkdir()
        (folder / "archived.json").symlink_to(elsewhere / "archived.json")
    listed = _cli_json(tmp_path, tree.root, "list", "--cwd", "/w/app")
    assert [r["session_id"] for r in listed] == [older.session_id]
    [found] = _cli_json(tmp_path, tree.root, "continue", "--cwd", "/w/app")
    assert found["session_id"] == older.session_id


def test_a_fifo_for_a_sidecar_never_blocks(tmp_path: Path) -> None:
    """Opening a FIFO waits for a writer: continue hung for good."""
    import threading

    from sessiondex.transcripts.discover import archived_in_picker, picker_archive_stamp

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("a conversation")
    path = s.write(mtime=1_800_000_000)
    (s.project_dir / s.session_id).mkdir()
    os.mkfifo(s.project_dir / s.session_id / "archived.json")
    answers: list[bool] = []
    reader = threading.Thread(target=lambda: answers.append(archived_in_picker(path)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert answers == [False]
    assert picker_archive_stamp(path) is None
    [found] = _cli_json(tmp_path, tree.root, "continue", "--cwd", "/w/app")
    assert found["session_id"] == s.session_id


@pytest.mark.parametrize("kind", ["empty", "metadata-only"])
def test_an_id_prefix_skips_files_without_messages_as_a_whole_id_does(
    tmp_path: Path, kind: str
) -> None:
    tree = ConfigTree(tmp_path / "claude")
    sid = "7a7a7a7a-0000-4000-8000-00000000007a"
    real = tree.session(cwd="/w/real", session_id=sid)
    real.user("the real conversation")
    real.write()
    stub = tree.session(cwd="/w/here", session_id=sid)
    if kind == "metadata-only":
        stub.meta("custom-title", customTitle="just a name")
    path = stub.write()
    if kind == "empty":
        path.write_bytes(b"")
    [found] = _cli_json(tmp_path, tree.root, "resolve", sid, "--cwd", "/w/here")
    assert found["cwd"] == "/w/real"
    # A prefix names sessions in scope only (spec); the one elsewhere is named.
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db"), "resolve", sid[:8],
         "--cwd", "/w/here"],
    )  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: No session of this repository starts with {sid[:8]!r}; session {sid} of"
        " another project does: give its whole ID, or run the command from its directory\n"
    )


def test_an_id_in_an_older_hash_variant_of_the_cwds_long_key_is_local(tmp_path: Path) -> None:
    """A path over 200 characters gets a hashed key; an older build hashed it another
    way. Claude Code (and our listing) count that dir as the cwd's own: resolve did not."""
    from sessiondex.transcripts.keys import project_keys_for_directory

    cwd = "/w/" + "x" * 250
    (key,) = {k for k in project_keys_for_directory(cwd) if len(k) > 200}
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=cwd, project_key=key[:201] + "oldhash1")
    s.user("long path work")
    s.write()
    listed = _cli_json(tmp_path, tree.root, "list", "--cwd", cwd)
    assert [r["session_id"] for r in listed] == [s.session_id]
    [found] = _cli_json(tmp_path, tree.root, "resolve", s.session_id, "--cwd", cwd)
    assert found["matched_by"] == "id"


def test_long_paths_sharing_their_first_200_characters_are_two_projects(
    tmp_path: Path,
) -> None:
    """A deep project and its subdirectory: both keys are hashed, with one 200-character
    prefix and two hashes. Each dir is its own directory's; the prefix is only the way
    to a dir an older build hashed otherwise, and then only one whose sessions recorded
    this cwd, as Claude Code accepts it (helper 114: each listed the other's sessions)."""
    from sessiondex.transcripts.keys import project_key

    root_cwd = "/w/" + "deep-monorepo-" * 15
    sub_cwd = root_cwd + "/packages/api"
    assert project_key(root_cwd)[:201] == project_key(sub_cwd)[:201]
    tree = ConfigTree(tmp_path / "claude")
    made = {}
    for name, cwd in (("root", root_cwd), ("sub", sub_cwd)):
        s = tree.session(cwd=cwd)
        s.meta("custom-title", customTitle=f"{name} work")
        s.user(f"work in {name}")
        s.write()
        made[name] = s.session_id
    # A third path known only from an older build's dir: the prefix, another hash.
    web_cwd = root_cwd + "/packages/web"
    old = tree.session(cwd=web_cwd, project_key=project_key(web_cwd)[:201] + "oldhash1")
    old.user("older build's session of the web path")
    old.write()
    for cwd, wanted in (
        (root_cwd, {made["root"]}),
        (sub_cwd, {made["sub"]}),
        (web_cwd, {old.session_id}),  # the old dir holds this cwd's sessions: taken
    ):
        listed = _cli_json(tmp_path, tree.root, "list", "--cwd", cwd)
        assert {r["session_id"] for r in listed} == wanted, cwd[-20:]
    [found] = _cli_json(tmp_path, tree.root, "resolve", made["root"], "--cwd", sub_cwd)
    assert found["matched_by"] == "id-other-project"
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db"), "resolve", "root work"]
        + ["--cwd", sub_cwd],
    )
    assert result.exit_code == 1, result.output


def test_continue_takes_the_newest_transcript_mtime_not_the_newest_activity(
    tmp_path: Path,
) -> None:
    """semantics 3: continue = the newest session by transcript mtime, as the CLI picks
    it, even where the records' timestamps say another was active later."""
    tree = ConfigTree(tmp_path / "claude")
    touched = tree.session(cwd="/w/app", start="2026-01-01T10:00:00.000Z")
    touched.user("older conversation, file touched last")
    touched.write(mtime=1_800_000_900)
    active = tree.session(cwd="/w/app", start="2026-06-01T10:00:00.000Z")
    active.user("newer conversation, file older")
    active.write(mtime=1_800_000_000)
    [found] = _cli_json(tmp_path, tree.root, "continue", "--cwd", "/w/app")
    assert found["session_id"] == touched.session_id
    listed = _cli_json(tmp_path, tree.root, "list", "--cwd", "/w/app")
    assert listed[0]["session_id"] == active.session_id  # list orders by activity


def test_a_transcript_outside_the_index_is_described_as_an_indexed_one(tmp_path: Path) -> None:
    """resolve <path> of a copy (a backup, another machine's config dir): the object had
    a config dir and project made up from folder names, no branches or PR links, the
    file's mtime as last activity, and a resume command that could not open it."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app", git_branch="feat/x")
    s.user("see https://github.com/acme/shop/pull/9 for the old attempt")
    s.assistant("looking")
    s.pr_link(number=7, url="https://github.com/acme/shop/pull/7", repository="acme/shop")
    s.write(mtime=1_900_000_000)
    [indexed] = _cli_json(tmp_path, tree.root, "resolve", s.session_id, "--cwd", "/w/app")
    loose = tmp_path / "backups" / "backup.jsonl"
    loose.parent.mkdir()
    loose.write_bytes(s.path.read_bytes())
    other = tmp_path / "old-laptop" / "projects" / "-w-app" / s.path.name
    other.parent.mkdir(parents=True)
    other.write_bytes(s.path.read_bytes())
    same = ("session_id", "cwd", "title", "branches", "pr_links", "pr_mentions",
            "created_at", "last_activity", "message_count", "git_branch")  # fmt: skip
    for path, config_dir, key in (
        (loose, None, "-w-app"),
        (other, str(tmp_path / "old-laptop"), "-w-app"),
    ):
        [found] = _cli_json(tmp_path, tree.root, "resolve", str(path), "--cwd", "/w/app")
        assert {k: found[k] for k in same} == {k: indexed[k] for k in same}, path
        assert (found["config_dir"], found["project_key"]) == (config_dir, key)
        assert found["file_path"] == str(path)
    [found] = _cli_json(tmp_path, tree.root, "resolve", str(loose), "--cwd", "/w/app")
    assert found["resume_command"] == f"cd /w/app && claude --resume {loose}"
    here = tmp_path / "here"  # /w/app does not exist: resume starts claude in --cwd
    here.mkdir()
    resumed = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db"), "resume", str(loose),
         "--dry-run", "--cwd", str(here)],
    )  # fmt: skip
    assert resumed.stdout == f"cd {here} && claude --resume {loose}\n"
    [found] = _cli_json(tmp_path, tree.root, "resolve", str(other), "--cwd", "/w/app")
    assert found["resume_command"] == (
        f"cd /w/app && CLAUDE_CONFIG_DIR={tmp_path / 'old-laptop'} claude --resume {s.session_id}"
    )


@pytest.mark.parametrize(
    "args", [["resolve", "no such session"], ["continue"], ["resolve", "zzzzzzzz"]]
)
def test_nothing_found_prints_an_empty_json_array(tmp_path: Path, args: list[str]) -> None:
    """spec/cli.md: json prints one JSON array, ``[]`` when empty, as list and search do;
    resolve and continue printed nothing at all."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("hello")
    s.write()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db")]
    result = CliRunner().invoke(cli, [*base, *args, "--cwd", "/w/empty", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout) == []
    assert result.stderr.startswith(("Error: ", "No conversation found"))


def _kinds_world(tmp_path: Path) -> tuple[ConfigTree, dict[str, str]]:
    """One directory's sessions, newest last: a plain one, then the kinds Claude Code's
    picker and --continue hide, then kinds that look alike but are shown."""
    tree = ConfigTree(tmp_path / "claude")
    ids: dict[str, str] = {}
    kinds: dict[str, dict[str, Any]] = {
        "plain": {},
        "continue-target": {},
        "bg": {"sessionKind": "bg"},  # a background session the user started: shown
        "continued-in-nowhere": {},  # points at a session that is not there: shown
        "team-member": {"teamName": "review-squad"},
        "daemon": {"sessionKind": "daemon"},
        "daemon-worker": {"sessionKind": "daemon-worker"},
        "superseded": {},
    }
    for n, (name, extra) in enumerate(kinds.items()):
        s = tree.session(cwd="/w/kinds")
        s.user(f"the {name} session", **extra)
        s.assistant("ok", **extra)
        if name == "superseded":
            s.meta("continued-in", continuedInSessionId=ids["continue-target"], timestamp=True)
        if name == "continued-in-nowhere":
            s.meta(
                "continued-in",
                continuedInSessionId="00000000-0000-4000-8000-00000000dead",
                timestamp=True,
            )
        s.write(mtime=1_790_000_000 + 100 * n)
        ids[name] = s.session_id
    return tree, ids


SHOWN_KINDS = {"plain", "continue-target", "bg", "continued-in-nowhere"}


def test_list_hides_team_daemon_and_superseded_sessions_as_the_picker_does(
    tmp_path: Path,
) -> None:
    tree, ids = _kinds_world(tmp_path)
    names = {v: k for k, v in ids.items()}
    listed = _cli_json(tmp_path, tree.root, "list", "--cwd", "/w/kinds")
    assert {names[o["session_id"]] for o in listed} == SHOWN_KINDS
    everything = _cli_json(tmp_path, tree.root, "list", "--cwd", "/w/kinds", "--all-kinds")
    assert {names[o["session_id"]] for o in everything} == set(ids)


@pytest.mark.parametrize("print_mode", [False, True])
def test_continue_skips_team_daemon_and_superseded_sessions(
    tmp_path: Path, print_mode: bool
) -> None:
    """``claude --continue`` (and ``-p -c``) skips them: the newest there is a
    daemon worker's, and continue picked it."""
    tree, ids = _kinds_world(tmp_path)
    args = ["continue", "--cwd", "/w/kinds", *(["--print-mode"] if print_mode else [])]
    (found,) = _cli_json(tmp_path, tree.root, *args)
    assert found["session_id"] == ids["continued-in-nowhere"]


@pytest.mark.parametrize("where", ["other-config-dir", "archived"])
def test_a_session_continued_in_one_claude_code_cannot_see_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Superseded was any row of that ID in the index: one in another config dir (which
    Claude Code, run on this one, never sees), or an archived copy of one the sweep
    deleted, hid the session from list and continue."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    here, there = ConfigTree(tmp_path / "here"), ConfigTree(tmp_path / "there")
    target_tree = there if where == "other-config-dir" else here
    target = target_tree.session(cwd="/w/m", session_id="7a7a7a7a-0000-4000-8000-00000000a7a7")
    target.user("the session it went on in")
    target.write(mtime=time.time() - 40 * 86400)
    source = here.session(cwd="/w/m")
    source.user("the source")
    source.meta("continued-in", continuedInSessionId=target.session_id, timestamp=True)
    source.write()
    db = str(tmp_path / "one.db")

    def run(tree: ConfigTree, *args: str) -> Any:
        return CliRunner().invoke(cli, ["--config-dir", str(tree.root), "--db", db, *args])

    if where == "other-config-dir":
        result = run(there, "index")
    else:
        result = run(here, "archive")
    assert result.exit_code == 0, result.output
    if where == "archived":
        target.path.unlink()  # Claude Code's sweep
    listed = json.loads(run(here, "list", "--cwd", "/w/m", "--json").stdout)
    assert [o["session_id"] for o in listed] == [source.session_id]
    (found,) = json.loads(run(here, "continue", "--cwd", "/w/m", "--json").stdout)
    assert found["session_id"] == source.session_id


def test_a_table_marks_what_claude_codes_picker_archived(tmp_path: Path) -> None:
    """Shown with --all-kinds (or resolved), a picker-archived session was a row like
    any other; Claude Code's picker says "archived" on it. The JSON keeps its keys."""
    tree, older, newest = _older_and_newest(tmp_path)
    _picker_archive(newest, True)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db")]
    table = CliRunner().invoke(cli, [*base, "list", "--cwd", "/w/app", "--all-kinds"])
    rows = {line.split()[-1]: line for line in table.stdout.splitlines()[1:]}
    assert rows[newest.session_id[:8]].startswith("[picker-archived] the newest")
    assert "[picker-archived]" not in rows[older.session_id[:8]]
    shown = CliRunner().invoke(cli, [*base, "resolve", newest.session_id])
    assert "[picker-archived]" in shown.stdout
    [obj] = _cli_json(tmp_path, tree.root, "resolve", newest.session_id)
    assert not any("picker" in key for key in obj)


def test_from_pr_says_when_only_hidden_kinds_are_linked(tmp_path: Path) -> None:
    """A PR whose only linked session is hidden (here archived in Claude Code's picker)
    said "No session is linked" as if none were."""
    tree, older, newest = _older_and_newest(tmp_path)
    newest.pr_link(number=9, url="https://github.com/acme/app/pull/9", repository="acme/app")
    newest.write(mtime=1_800_000_500)
    _picker_archive(newest, True)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db")]
    result = CliRunner().invoke(cli, [*base, "from-pr", "https://github.com/acme/app/pull/9"])
    assert result.exit_code == 1
    assert "try --all-kinds" in result.stderr
    shown = CliRunner().invoke(
        cli, [*base, "from-pr", "https://github.com/acme/app/pull/9", "--all-kinds"]
    )
    assert shown.exit_code == 0 and newest.session_id[:8] in shown.stdout
    other = CliRunner().invoke(cli, [*base, "from-pr", "https://github.com/acme/app/pull/10"])
    assert other.exit_code == 1 and "--all-kinds" not in other.stderr


def test_the_listing_stamp_moves_when_an_archive_moves_from_one_session_to_another(
    tmp_path: Path,
) -> None:
    """The picker compares it round to round: with plain sums, one session archived and
    another brought back in the same round cancelled out."""
    import sqlite3

    from sessiondex.query.sessions import listing_stamp

    tree, older, newest = _older_and_newest(tmp_path)
    _picker_archive(older, True)
    _cli_json(tmp_path, tree.root, "list", "--all-kinds")
    db = sqlite3.connect(tmp_path / "q.db")
    for column in ("picker_archived", "archived"):
        db.execute(f"UPDATE sessions SET {column} = (session_id = ?)", [older.session_id])
        before = listing_stamp(db)
        db.execute(f"UPDATE sessions SET {column} = 1 - {column}")  # swapped over
        assert listing_stamp(db) != before, column
    db.close()


@pytest.mark.parametrize("newer", ["live", "backup"])
@pytest.mark.parametrize(
    "how", ["name", "id-prefix", "id"], ids=["by-name", "by-prefix", "by-whole-id"]
)
def test_one_session_in_two_config_dirs_resolves_to_its_newest_copy(
    tmp_path: Path, how: str, newer: str
) -> None:
    """Helper 93: with a backup config dir indexed beside the live one (the README's own
    example), a name or ID prefix was ambiguous between two rows that read the same,
    and a whole ID took whichever row came first. Claude Code keeps the newest copy of
    a session ID among name matches; every way of naming it now does the same."""
    import shutil

    live = tmp_path / "claude"
    s = ConfigTree(live).session(cwd="/w/twins")
    s.user("keep the twins apart")
    s.meta("custom-title", customTitle="Backup twin")
    s.write()
    backup = tmp_path / "backup"
    shutil.copytree(live, backup)
    copies = {
        "live": live / s.path.relative_to(live),
        "backup": backup / s.path.relative_to(live),
    }
    for which, path in copies.items():
        stamp = 1_800_000_000 + (100 if which == newer else 0)
        os.utime(path, (stamp, stamp))
    arg = {"name": "backup TWIN", "id-prefix": s.session_id[:8], "id": s.session_id}[how]
    args = ["--config-dir", str(live), "--config-dir", str(backup)]
    args += ["--db", str(tmp_path / "index.db"), "resolve", arg, "--cwd", "/w/twins", "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    found = one_session(result.stdout)
    assert found["matched_by"] == how
    assert found["file_path"] == str(copies[newer])


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A live config dir and its backup indexed together: two sessions in both (the
    backup's copy of one newer), one only in the backup (swept from the live one)."""
    import shutil

    base = tmp_path_factory.mktemp("twins")
    live, backup = base / "claude", base / "backup"
    tree = ConfigTree(live)
    sessions = []
    for i, word in enumerate(["alpha", "beta", "gamma"]):
        s = tree.session(cwd="/w/twins")
        s.user(f"the {word} twin fixes https://github.com/acme/twins/pull/5")
        s.pr_link(number=5, url="https://github.com/acme/twins/pull/5", repository="acme/twins")
        s.write(mtime=1_800_000_000 + 100 * i)
        sessions.append(s)
    shutil.copytree(live, backup)
    newer = backup / sessions[1].path.relative_to(live)
    os.utime(newer, (1_800_000_500, 1_800_000_500))
    sessions[2].path.unlink()  # only the backup holds gamma now
    ids = [s.session_id for s in sessions]
    paths = {
        ids[0]: str(sessions[0].path),  # same mtime: either copy reads the same
        ids[1]: str(newer),
        ids[2]: str(backup / sessions[2].path.relative_to(live)),
    }
    args = ["--config-dir", str(live), "--config-dir", str(backup), "--db", str(base / "i.db")]
    return {"args": args, "ids": set(ids), "paths": paths, "first": ids[0]}


@pytest.mark.parametrize(
    "command",
    [
        ["list", "--scope", "all"],
        ["search", "twin", "--scope", "all"],
        ["search", "https://github.com/acme/twins/pull/5", "--scope", "all"],
        ["from-pr", "https://github.com/acme/twins/pull/5"],
        ["from-pr", "5", "--cwd", "/w/twins"],
    ],
    ids=["list", "search-text", "search-url", "from-pr-url", "from-pr-number"],
)
@pytest.mark.parametrize("limit", [None, 1, 2, 3])
def test_copies_of_a_session_in_two_config_dirs_are_one_row(
    twins: dict[str, Any], command: list[str], limit: int | None
) -> None:
    """Helper 94: with a backup config dir indexed beside the live one, list, search
    and from-pr printed each session twice, the rows alike. Claude Code's picker counts
    a session ID once (its newest copy); so do we, and a page still holds ``limit``
    sessions when there are that many."""
    extra = [] if limit is None else ["--limit", str(limit)]
    result = CliRunner().invoke(cli, [*twins["args"], *command, *extra, "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    ids = [row["session_id"] for row in rows]
    assert len(ids) == len(set(ids)), ids
    assert len(ids) == (3 if limit is None else limit)
    for row in rows:
        if row["session_id"] != twins["first"]:
            assert row["file_path"] == twins["paths"][row["session_id"]]


@pytest.mark.parametrize(
    ("stored", "typed"),
    [
        ("Foo  Bar", "Foo Bar"),  # two spaces, shown as one
        ("Tab\tName", "tab name"),  # the SDK stores a tab as given
        ("Line\nBreak  here", "line break here"),
        # Session 17: a control or bidi character is shown made visible, and was
        # "No session matches" typed so
        ("deploy\x1b[31m fix", "deploy^[[31m fix"),
        ("\u202eevil name", "<U+202E>evil name"),
        ("bell\x07 ring", "BELL^G ring"),
    ],
)
def test_a_name_typed_as_tables_show_it_resolves(tmp_path: Path, stored: str, typed: str) -> None:
    """Helper 94: a custom title with a run of white space is shown folded ("Foo Bar")
    in tables and in "Did you mean: Foo Bar?", and typing that back was "No session
    matches": the suggestion repeated what the user had typed. The name shown now
    resolves (after the exact comparison, which still comes first)."""
    s = ConfigTree(tmp_path / "claude").session(cwd="/w/names")
    s.user("hello")
    s.meta("custom-title", customTitle=stored)
    s.write()
    base = ["--config-dir", str(tmp_path / "claude"), "--db", str(tmp_path / "i.db")]
    listed = CliRunner().invoke(cli, [*base, "list", "--cwd", "/w/names"])
    shown = neutralize(" ".join(stored.split()), single_line=True)
    assert shown in listed.stdout
    for arg in (typed, shown):
        result = CliRunner().invoke(cli, [*base, "resolve", arg, "--cwd", "/w/names", "--json"])
        assert result.exit_code == 0, result.output
        assert one_session(result.stdout)["matched_by"] == "name"


def test_a_name_only_an_older_copy_has_names_nothing(tmp_path: Path) -> None:
    """Helper 96: with a live config dir and a backup indexed together, ``resolve "Old
    name"`` found the backup's stale copy (the live one was renamed since), and
    ``rename "Old name" …`` appended to the backup, which then hid the live one. Claude
    Code takes each session's newest copy before it compares names."""
    import shutil

    live = tmp_path / "claude"
    s = ConfigTree(live).session(cwd="/w/shop")
    s.user("fix it")
    s.meta("custom-title", customTitle="Old name")
    s.write(mtime=1_800_000_000)
    backup = tmp_path / "backup"
    shutil.copytree(live, backup)
    s.meta("custom-title", customTitle="New name")
    s.append(mtime=1_800_000_100)
    args = ["--config-dir", str(backup), "--config-dir", str(live), "--db", str(tmp_path / "i.db")]
    before = {p: p.read_bytes() for p in tmp_path.rglob("*.jsonl")}
    stale = CliRunner().invoke(cli, [*args, "resolve", "Old name", "--cwd", "/w/shop"])
    assert stale.exit_code == 1, stale.output
    renamed = CliRunner().invoke(cli, [*args, "rename", "Old name", "Renamed", "--cwd", "/w/shop"])
    assert renamed.exit_code == 1, renamed.output
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.jsonl")} == before
    found = CliRunner().invoke(cli, [*args, "resolve", "new NAME", "--cwd", "/w/shop", "--json"])
    assert one_session(found.stdout)["file_path"] == str(s.path)


def test_a_prefix_names_the_copy_its_whole_id_names(tmp_path: Path) -> None:
    """Helper 96: one session ID in the project dirs of two worktrees, the linked one's
    copy newer: from the main worktree the whole ID named its own dir's copy (Claude
    Code's order: the cwd's dir, then the worktrees) and the 8-character prefix the
    newer copy, so ``tag <prefix>`` and ``tag <ID>`` wrote to different files."""
    from tests.builders import git_repo_with_worktree

    repo, worktree = git_repo_with_worktree(tmp_path)
    root = tmp_path / "claude"
    sid = "11111111-2222-4333-8444-555555555555"
    paths = {}
    for where, stamp in ((repo, 1_800_000_000), (worktree, 1_800_000_100)):
        s = ConfigTree(root).session(cwd=str(where), session_id=sid)
        s.user("fix it")
        paths[where] = s.write(mtime=stamp)
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    for arg in (sid, sid[:8]):
        result = CliRunner().invoke(cli, [*base, "resolve", arg, "--cwd", str(repo), "--json"])
        assert result.exit_code == 0, result.output
        assert one_session(result.stdout)["file_path"] == str(paths[repo]), arg


def test_a_search_answers_from_each_sessions_newest_copy(tmp_path: Path) -> None:
    """Helper 96: with a backup indexed beside the live config dir, ``search
    oldonlyword`` showed the live copy's row with the backup's snippet (a word the live
    transcript no longer holds), and a title search ``matched_by: title`` beside
    another title. A session is its newest copy: a hit only in an older one is none."""
    sid = "11111111-2222-4333-8444-555555555555"
    copies = {}
    for root, title, word, stamp in (
        (tmp_path / "backup", "Old name", "oldonlyword", 1_800_000_000),
        (tmp_path / "claude", "New name", "newonlyword", 1_800_000_100),
    ):
        s = ConfigTree(root).session(cwd="/w/shop", session_id=sid)
        s.user(f"fix it {word}")
        s.meta("custom-title", customTitle=title)
        copies[word] = str(s.write(mtime=stamp))
    args = ["--config-dir", str(tmp_path / "backup"), "--config-dir", str(tmp_path / "claude")]
    args += ["--db", str(tmp_path / "i.db"), "search", "--scope", "all", "--json"]
    for query, found in (
        ("oldonlyword", None),
        ('"Old name"', None),
        ("newonlyword", "newonlyword"),
    ):
        result = CliRunner().invoke(cli, [*args, query])
        rows = json.loads(result.stdout or "[]")
        matched = [r for r in rows if r["matched_by"] != "fuzzy"]
        if found is None:
            assert result.exit_code == 1 and matched == [], (query, rows)
        else:
            assert result.exit_code == 0, result.output
            [row] = rows
            assert row["file_path"] == copies[found] and found in row["snippet"]


@pytest.fixture(scope="module")
def stale(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Helper 97's tree: a live config dir and a backup indexed together, copies of
    four sessions with the newer copy in either, one of them in another project."""
    base = tmp_path_factory.mktemp("stale")
    live, back = ConfigTree(base / "live"), ConfigTree(base / "backup")
    x1, x2, x3, x4 = (f"{c * 8}-{c * 4}-4{c * 3}-8{c * 3}-{c * 12}" for c in "1234")
    copies = [  # (tree, cwd, id, prompt, answer, title, mtime)
        (back, "/w/p", x1, "hello qxjstale commonword",
         "stale answer https://github.com/acme/shop/pull/7", "Old name", 1_790_000_000),
        (live, "/w/p", x1, "hello liveword commonword", "live answer", "New name", 1_790_001_000),
        (back, "/w/p", x2, "identical twinword commonword", "same", None, 1_790_000_100),
        (live, "/w/p", x2, "identical twinword commonword", "same", None, 1_790_000_200),
        (live, "/w/p", x3, "crossword oldq commonword", "x", "Cross old", 1_790_000_300),
        (back, "/w/q", x3, "crossword newq commonword", "y", "Cross new", 1_790_000_900),
        (live, "/w/p", x4, "flipword livestale commonword", "x", None, 1_790_000_400),
        (back, "/w/p", x4, "flipword backupnew commonword",
         "y https://github.com/acme/shop/pull/8", None, 1_790_000_800),
    ]  # fmt: skip
    for tree, cwd, sid, prompt, answer, title, mtime in copies:
        s = tree.session(cwd=cwd, session_id=sid)
        s.user(prompt)
        s.assistant(answer)
        if title:
            s.meta("custom-title", customTitle=title)
        s.write(mtime=mtime)
    args = ["--config-dir", str(live.root), "--config-dir", str(back.root)]
    return {"args": [*args, "--db", str(base / "i.db")], "ids": (x1, x2, x3, x4)}


def _stale_ids(stale: dict[str, Any], *command: str) -> list[str]:
    result = CliRunner().invoke(cli, [*stale["args"], *command, "--cwd", "/w/p", "--json"])
    assert result.exit_code in (0, 1), result.output
    return [row["session_id"] for row in json.loads(result.stdout or "[]")]


def test_a_page_is_the_top_of_the_ranking_of_newest_copies(stale: dict[str, Any]) -> None:
    """Helper 97: ``search commonword --limit 1`` answered session 3333 where ``--limit
    2`` began with 1111. Two causes: a stale copy took part in the ranking and was
    dropped after the page was cut (stale copies now never enter it: SQL), and sessions
    whose first prompts score exactly alike were cut from a page in the order FTS5 read
    them, where the whole ranking orders such ties by session ID."""
    whole = _stale_ids(stale, "search", "commonword", "--scope", "all")
    assert len(whole) == len(set(whole)) == 4
    for limit in (1, 2, 3):
        assert (
            _stale_ids(stale, "search", "commonword", "--scope", "all", "--limit", str(limit))
            == (whole[:limit])
        )


@pytest.mark.parametrize(
    ("command", "found"),
    [
        (["from-pr", "https://github.com/acme/shop/pull/7", "--scope", "all"], []),  # stale
        (["from-pr", "https://github.com/acme/shop/pull/8", "--scope", "all"], [3]),
        (["from-pr", "7", "--scope", "all"], []),
        (["search", "qxjstale", "--scope", "all"], []),
        (["search", "backupnew", "--scope", "all"], [3]),
        (["search", "livestale", "--scope", "all"], []),
    ],
)
def test_only_the_newest_copy_answers_a_pr_or_a_word(
    stale: dict[str, Any], command: list[str], found: list[int]
) -> None:
    """Helper 97: ``from-pr`` answered from a backup's stale copy (the live one, newer,
    has no link), where ``search`` and ``list`` answered from the newest."""
    rows = [r for r in _stale_ids(stale, *command)]
    assert rows == [stale["ids"][i] for i in found]


def test_copies_elsewhere_count_once_in_the_hint(stale: dict[str, Any]) -> None:
    """Helper 97: "2 matches in other projects" for one session in two copies."""
    result = CliRunner().invoke(cli, [*stale["args"], "search", "crossword", "--cwd", "/w/r"])
    assert result.exit_code == 1
    assert "1 match in other projects" in result.stderr, result.stderr


@pytest.mark.parametrize(
    "narrowing",
    [[], ["--include-hidden", "--branch", "dev"], ["--include-hidden", "--since", "2026-11-15"]],
    ids=["hidden tag", "branch", "since"],
)
def test_a_stale_copy_does_not_answer_when_a_filter_leaves_out_the_newest(
    tmp_path: Path, narrowing: list[str]
) -> None:
    """Helper 98 (P1): the newest copy was chosen among the rows every filter kept, so
    hiding the live copy (``__hidden``), or a ``--branch``/``--since`` only the backup's
    older copy passes, let the backup's old title and words answer again. Copies are
    compared within the scope and config dirs only: the newest decides, and when a
    filter leaves it out the session does not answer."""
    sid = "33333333-3333-4333-8333-333333333333"
    live = ConfigTree(tmp_path / "live").session(cwd="/w/shop", session_id=sid, git_branch="feat")
    live.user("fresh text")
    live.meta("custom-title", customTitle="NewTitle")
    live.meta("tag", tag="__hidden")
    live.write(mtime=2_000_000_000)
    old = ConfigTree(tmp_path / "backup").session(cwd="/w/shop", session_id=sid, git_branch="dev")
    old.user("stale secretword")
    old.meta("custom-title", customTitle="OldTitle")
    old.write(mtime=1_900_000_000)
    args = ["--config-dir", str(tmp_path / "live"), "--config-dir", str(tmp_path / "backup")]
    args += ["--db", str(tmp_path / "i.db")]
    for command in (["list", "--scope", "all"], ["search", "secretword", "--scope", "all"]):
        result = CliRunner().invoke(cli, [*args, *command, *narrowing, "--json"])
        assert result.exit_code in (0, 1), result.output
        assert json.loads(result.stdout or "[]") == [], (command, result.stdout)


def test_a_newer_copy_without_messages_hides_nothing(tmp_path: Path) -> None:
    """A file with no message (a title alone) is no copy, as for Claude Code's lookup of
    an ID: found in a second config dir and newer, it must not hide the session that has
    its messages from list, search or a name."""
    sid = "77777777-7777-4777-8777-777777777777"
    real = ConfigTree(tmp_path / "claude").session(cwd="/w/shop", session_id=sid)
    real.user("the otterword question")
    real.meta("custom-title", customTitle="Otter work")
    real.write(mtime=1_800_000_000)
    bare = ConfigTree(tmp_path / "other").session(cwd="/w/shop", session_id=sid)
    bare.meta("custom-title", customTitle="Otter work")
    bare.write(mtime=1_900_000_000)
    args = ["--config-dir", str(tmp_path / "claude"), "--config-dir", str(tmp_path / "other")]
    args += ["--db", str(tmp_path / "i.db")]
    for command in (
        ["list", "--scope", "all"],
        ["search", "otterword", "--scope", "all"],
        ["resolve", "otter WORK", "--cwd", "/w/shop"],
    ):
        result = CliRunner().invoke(cli, [*args, *command, "--json"])
        assert result.exit_code == 0, (command, result.output)
        assert [r["file_path"] for r in json.loads(result.stdout)] == [str(real.path)]


@pytest.mark.parametrize("backup_first", [False, True])
def test_copies_with_one_mtime_are_named_alike_every_way(
    tmp_path: Path, backup_first: bool
) -> None:
    """Helper 206: a backup made with ``cp -a`` (or rsync -a) keeps each transcript's
    mtime to the nanosecond, so a session's two copies tie. ``list``, ``search`` and a
    name took the copy with the higher row id, a whole ID and a prefix the lower one:
    ``resolve NAME`` printed one config dir's ``resume_command`` while ``rename ID``
    appended to the other file. From another directory the whole ID was "No
    conversation found": the two config dirs' copies counted as two projects, the
    duplicate Claude Code refuses, though they are one project dir's copies, which
    count once. A tie is broken the same way everywhere: for the config dir given first,
    the live one beside a backup (breaking it by row id named the backup's copy, indexed
    last, and its ``resume_command`` resumed the session in the backup)."""
    import shutil

    live = tmp_path / "claude"
    s = ConfigTree(live).session(cwd="/w/twins")
    s.user("keep the twins apart")
    s.meta("custom-title", customTitle="Tied twin")
    s.write(mtime=1_800_000_000)
    backup = tmp_path / "backup"
    shutil.copytree(live, backup)  # copy2: the same mtime
    first, second = (backup, live) if backup_first else (live, backup)
    base = ["--config-dir", str(first), "--config-dir", str(second)]
    base += ["--db", str(tmp_path / "index.db")]
    assert CliRunner().invoke(cli, [*base, "index"]).exit_code == 0
    named: dict[str, str] = {}
    for how, command in {
        "list": ["list", "--cwd", "/w/twins"],
        "search": ["search", "twins", "--cwd", "/w/twins"],
        "name": ["resolve", "tied TWIN", "--cwd", "/w/twins"],
        "id-prefix": ["resolve", s.session_id[:8], "--cwd", "/w/twins"],
        "id": ["resolve", s.session_id, "--cwd", "/w/twins"],
        "id-other-project": ["resolve", s.session_id, "--cwd", str(tmp_path)],
    }.items():
        result = CliRunner().invoke(cli, [*base, *command, "--json"])
        assert result.exit_code == 0, (how, result.output)
        named[how] = one_session(result.stdout)["file_path"]
    assert set(named.values()) == {str(first / s.path.relative_to(live))}, named


@pytest.mark.parametrize("command", ["resolve a name", "list", "list --scope repo", "search"])
def test_each_copy_is_compared_with_its_session_s_rows_only(tmp_path: Path, command: str) -> None:
    """Which copy of a session answers (``newest_copy_sql``) is asked once per row in
    scope; SQLite looked the other copies up by the scope's project key rather than
    by the session ID, visiting every session of the project for each one: resolving
    a name in a project of 2,387 sessions took 1.9 s, listing it 2.5 s (helper 306;
    31 and 46 ms once looked up by ID). Read from the plans: ``newer`` is searched by
    its session ID (``sessions_sid``, or m018's ``sessions_id_width`` that begins with
    it)."""
    from sessiondex.indexer.db import open_db
    from sessiondex.indexer.refresh import refresh
    from sessiondex.query.filters import Filters
    from sessiondex.query.listing import list_sessions
    from sessiondex.query.resolve import resolve
    from sessiondex.query.search import run_search

    tree = ConfigTree(tmp_path / "claude")
    for n in range(4):
        s = tree.session(cwd="/w/app")
        s.user(f"wombat number {n}")
        s.meta("custom-title", customTitle=f"Plan {n}")
        s.write()
    db = open_db(tmp_path / "i.db")
    refresh(db, [tree.root])
    roots = (str(tree.root),)
    run = {
        "resolve a name": lambda: resolve(db, "plan 1", cwd="/w/app", roots=[tree.root]),
        "list": lambda: list_sessions(db, Filters(cwd="/w/app", roots=roots)),
        "list --scope repo": lambda: list_sessions(
            db, Filters(cwd="/w/app", scope="repo", roots=roots)
        ),
        "search": lambda: run_search(db, "wombat", Filters(cwd="/w/app", roots=roots)),
    }[command]
    with statements(db.conn) as asked:
        run()
    compared = [sql for sql in dict.fromkeys(asked) if "FROM sessions newer" in sql]
    assert compared
    for sql in compared:
        plan = [row[3] for row in db.conn.execute("EXPLAIN QUERY PLAN " + sql)]
        newer = [step for step in plan if " newer " in f"{step} "]
        assert len(newer) == 1, plan
        assert newer[0].startswith("SEARCH newer USING ") and "(session_id=?" in newer[0], plan


@pytest.mark.parametrize(
    ("arg", "says"),
    [
        pytest.param(
            "Deploy checklist",
            "session {one} of another project, in /w/ops, is named so: give its ID, or run"
            " the command from its directory",
            id="one elsewhere",
        ),
        pytest.param("  deploy CHECKLIST ", "session {one} of another project", id="as typed"),
        pytest.param(
            "Shared name", "2 sessions of other projects are named so ({two}, …)", id="several"
        ),
        pytest.param("Stale name", None, id="only an older copy had it"),
        pytest.param("no such name anywhere", None, id="nowhere"),
    ],
)
def test_a_name_found_only_in_another_project_says_where(
    tmp_path: Path, arg: str, says: str | None
) -> None:
    """A name is looked for in the cwd's repository only (spec §3), and a session
    named so in another project got "No session matches", as a name nobody had; an ID
    prefix found elsewhere already named the session and what works instead. Now a
    name does too; one a stale copy alone still carries names nothing there either."""
    one = "0d0d0d0d-0000-4000-8000-000000000001"
    two = "0d0d0d0d-0000-4000-8000-000000000002"
    tree = ConfigTree(tmp_path / "claude")
    for sid, cwd, name in (
        (one, "/w/ops", "Deploy checklist"),
        (two, "/w/x", "Shared name"),
        ("0d0d0d0d-0000-4000-8000-000000000003", "/w/y", "shared name"),
    ):
        s = tree.session(cwd=cwd, session_id=sid)
        s.user("hello")
        s.meta("custom-title", customTitle=name)
        s.write(mtime=1_790_000_000)
    # One session in two config dirs: the newest copy no longer carries the old name.
    backup = ConfigTree(tmp_path / "backup")
    for root, name, mtime in (
        (backup, "Stale name", 1_780_000_000),
        (tree, "Fresh", 1_790_000_100),
    ):
        s = root.session(cwd="/w/z", session_id="0d0d0d0d-0000-4000-8000-000000000004")
        s.user("hello")
        s.meta("custom-title", customTitle=name)
        s.write(mtime=mtime)
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--config-dir", str(backup.root),
         "--db", str(tmp_path / "q.db"), "resolve", arg, "--cwd", "/w/here"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(f"Error: No session matches {arg!r}.")
    assert len(result.stderr.splitlines()) == 1
    if says is None:
        assert "another project" not in result.stderr and "other projects" not in result.stderr
    else:
        assert says.format(one=one, two=two) in result.stderr, result.stderr
        if "{one}" in says:  # the advice works: the whole ID resolves from here
            assert _cli_json(tmp_path, tree.root, "resolve", one, "--cwd", "/w/here")


@pytest.mark.parametrize(
    ("state", "found"),
    [
        pytest.param("unborn", True, id="a new repository before its first commit"),
        pytest.param("committed", True, id="after a commit"),
        pytest.param("detached", False, id="a detached HEAD"),
    ],
)
def test_current_branch_is_read_before_the_first_commit(
    tmp_path: Path, state: str, found: bool
) -> None:
    """``--current-branch`` asked ``git rev-parse --abbrev-ref HEAD``, which fails in a
    repository with no commit yet (``git init``, then ``claude``): "is not on a git
    branch", though HEAD names ``trunk`` and the sessions there recorded it. A detached
    HEAD still names no branch."""
    from sessiondex.query.scopes import git_current_branch

    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "trunk", cwd=repo)
    if state != "unborn":
        git("-c", "user.email=a@b", "-c", "user.name=n", "commit", "-q", "--allow-empty",
            "-m", "x", cwd=repo)  # fmt: skip
    if state == "detached":
        git("checkout", "-q", "--detach", cwd=repo)
    git_current_branch.cache_clear()
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=str(repo), git_branch="trunk")
    s.user("first steps")
    s.write()
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "q.db"), "list",
         "--current-branch", "--cwd", str(repo), "--json"],
    )  # fmt: skip
    if found:
        assert result.exit_code == 0, result.output
        assert [r["session_id"] for r in json.loads(result.stdout)] == [s.session_id]
    else:
        assert result.exit_code == 1 and "has a detached HEAD (no branch)" in result.stderr
