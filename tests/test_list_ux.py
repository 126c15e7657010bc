"""list and its tables: --limit is a prefix of the full list, hidden-tagged sessions,
the project column, and column widths on a narrow terminal (issue 16 items 5-8)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex import Index
from sessiondex.cli.main import cli
from tests.builders import ConfigTree, one_session

T0 = 1_790_000_000


def _session(
    tree: ConfigTree,
    cwd: str,
    name: str,
    mtime: float,
    *,
    fork_of: str | None = None,
    tag: str | None = None,
    branch: str = "main",
) -> str:
    s = tree.session(cwd=cwd, git_branch=branch)
    extra: dict[str, Any] = {}
    if fork_of:
        extra["forkedFrom"] = {"sessionId": fork_of, "messageUuid": "m"}
    s.user(f"prompt for {name}", **extra)
    s.assistant(f"answer for {name}", **extra)
    s.meta("custom-title", customTitle=name)
    if tag:
        s.meta("tag", tag=tag)
    s.write(mtime=mtime)
    return s.session_id


class Forks:
    """Forks placed every way the cut can get wrong: an old fork of the newest session,
    a recent fork of an old session, a fork of a fork, a fork cycle, a fork whose
    origin is out of scope (another project)."""

    def __init__(self, base: Path) -> None:
        self.tree = ConfigTree(base / "claude")
        self.db = base / "i.db"
        tree, cwd = self.tree, "/w/app"
        self.ids: dict[str, str] = {}
        add = self.ids.__setitem__
        add("origin", _session(tree, cwd, "origin", T0 + 100))
        add("old fork", _session(tree, cwd, "old fork", T0 + 10, fork_of=self.ids["origin"]))
        add("middle", _session(tree, cwd, "middle", T0 + 90))
        add("old origin", _session(tree, cwd, "old origin", T0 + 5))
        add(
            "recent fork",
            _session(tree, cwd, "recent fork", T0 + 95, fork_of=self.ids["old origin"]),
        )
        add(
            "fork of fork",
            _session(tree, cwd, "fork of fork", T0 + 1, fork_of=self.ids["recent fork"]),
        )
        add("elsewhere", _session(tree, "/w/other", "elsewhere", T0 + 80))
        add(
            "fork of elsewhere",
            _session(tree, cwd, "fork of elsewhere", T0 + 85, fork_of=self.ids["elsewhere"]),
        )
        add("plain", _session(tree, cwd, "plain", T0 + 50))
        # A cycle: neither is a top of the list; place_forks puts them last.
        a = "c1c1c1c1-0000-4000-8000-000000000001"
        b = "c2c2c2c2-0000-4000-8000-000000000002"
        for sid, other, when in ((a, b, T0 + 70), (b, a, T0 + 60)):
            s = tree.session(cwd=cwd, session_id=sid)
            s.user("cycle", forkedFrom={"sessionId": other, "messageUuid": "m"})
            s.write(mtime=when)


@pytest.fixture(scope="module")
def forks(tmp_path_factory: pytest.TempPathFactory) -> Forks:
    return Forks(tmp_path_factory.mktemp("forks"))


@pytest.mark.parametrize(("scope", "cwd"), [("worktree", "/w/app"), ("all", "/w/app")])
def test_limit_is_a_prefix_of_the_full_list(forks: Forks, scope: str, cwd: str) -> None:
    with Index(forks.db, [forks.tree.root]) as index:
        full = [s["session_id"] for s in index.list(scope=scope, cwd=cwd)]
        assert len(full) >= 9
        for n in range(1, len(full) + 2):
            limited = [s["session_id"] for s in index.list(scope=scope, cwd=cwd, limit=n)]
            assert limited == full[:n], n


def test_limit_is_the_sessions_used_last_forks_at_their_own_place(forks: Forks) -> None:
    """Rows are ordered by last activity, newest first: a fork is not moved under its
    origin (a recent fork of an old session came right after it, an old fork of the
    newest session second), so ``--limit N`` is the N sessions used last."""
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(forks.tree.root), "--db", str(forks.db)]
        + ["list", "--json", "--cwd", "/w/app"],
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    activity = [(row["last_activity"], row["mtime"]) for row in rows]
    assert activity == sorted(activity, reverse=True)
    ids = [row["session_id"] for row in rows]
    assert ids.index(forks.ids["old fork"]) > ids.index(forks.ids["recent fork"])
    assert ids.index(forks.ids["recent fork"]) < ids.index(forks.ids["old origin"])
    limited = CliRunner().invoke(
        cli,
        ["--config-dir", str(forks.tree.root), "--db", str(forks.db)]
        + ["list", "--limit", "2", "--json", "--cwd", "/w/app"],
    )
    assert [row["session_id"] for row in json.loads(limited.stdout)] == ids[:2]
    assert forks.ids["old fork"] not in ids[:2]


class Hidden:
    """Two sessions about the same thing, one tagged __hidden (the soft delete)."""

    def __init__(self, base: Path) -> None:
        self.tree = ConfigTree(base / "claude")
        self.db = base / "i.db"
        self.shown = _session(self.tree, "/w/app", "wombat one", T0 + 10)
        s = self.tree.session(cwd="/w/app")
        s.user("wombat two, see https://github.com/acme/app/pull/3")
        s.pr_link(number=3, url="https://github.com/acme/app/pull/3", repository="acme/app")
        s.meta("tag", tag="__hidden")
        s.write(mtime=T0 + 20)
        self.hidden = s.session_id
        s = self.tree.session(cwd="/w/app")
        s.user("wombat three, see https://github.com/acme/app/pull/3")
        s.pr_link(number=3, url="https://github.com/acme/app/pull/3", repository="acme/app")
        s.write(mtime=T0 + 5)

    def ids(self, *args: str) -> list[str]:
        result = CliRunner().invoke(
            cli,
            ["--config-dir", str(self.tree.root), "--db", str(self.db), *args]
            + ["--json", "--cwd", "/w/app"],
        )
        assert result.exit_code == 0, result.output
        return [row["session_id"] for row in json.loads(result.stdout)]


@pytest.fixture(scope="module")
def hidden(tmp_path_factory: pytest.TempPathFactory) -> Hidden:
    return Hidden(tmp_path_factory.mktemp("hidden"))


@pytest.mark.parametrize("command", [["list"], ["search", "wombat"], ["from-pr", "3"]])
@pytest.mark.parametrize(
    ("flags", "shown"), [([], False), (["--include-hidden"], True), (["--all-kinds"], True)]
)
def test_hidden_tag_leaves_a_session_out(
    hidden: Hidden, command: list[str], flags: list[str], shown: bool
) -> None:
    ids = hidden.ids(*command, *flags)
    assert ids and (hidden.hidden in ids) is shown


def test_a_hidden_session_still_resolves_and_untag_brings_it_back(
    hidden: Hidden, tmp_path: Path
) -> None:
    import shutil

    root = tmp_path / "claude"
    shutil.copytree(hidden.tree.root, root)
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    runner = CliRunner()
    found = runner.invoke(cli, [*base, "resolve", hidden.hidden, "--json"])
    assert one_session(found.stdout)["tag"] == "__hidden"
    assert runner.invoke(cli, [*base, "untag", hidden.hidden]).exit_code == 0
    listed = runner.invoke(cli, [*base, "list", "--json", "--cwd", "/w/app"])
    assert hidden.hidden in [row["session_id"] for row in json.loads(listed.stdout)]


def test_tagging_hidden_says_what_it_does(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    sid = _session(tree, "/w/app", "scratch", T0)
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db"), "tag", sid, "__hidden"],
    )
    assert result.exit_code == 0, result.output
    assert "Hidden from list, search and pick" in result.stdout


class TwoRepos:
    """Two repositories under HOME with "auth-refactor" sessions (two in one of them),
    and a session with a 270-character branch name and directory."""

    def __init__(self, base: Path, home: Path) -> None:
        self.tree = ConfigTree(base / "claude")
        self.db = base / "i.db"
        self.home = home
        self.shop = _session(self.tree, f"{home}/src/shop", "auth-refactor", T0 + 20)
        self.blog = _session(self.tree, f"{home}/src/blog", "auth-refactor", T0 + 10)
        self.twin = _session(self.tree, f"{home}/src/shop", "auth-refactor", T0 + 15)
        deep = "/srv/" + "/".join(["deeply-nested-folder"] * 13) + "/service"
        self.long = _session(
            self.tree,
            deep,
            "Investigate the flaky checkout integration test on CI",
            T0,
            branch="feature/" + "x" * 262,
        )

    def run(self, *args: str, columns: int = 120) -> Any:
        return CliRunner().invoke(
            cli,
            ["--config-dir", str(self.tree.root), "--db", str(self.db), *args],
            env={"COLUMNS": str(columns), "HOME": str(self.home)},
        )


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> TwoRepos:
    base = tmp_path_factory.mktemp("repos")
    return TwoRepos(base, base / "home")


def _cells(table: str, column: str) -> list[str]:
    """The (stripped) cells of one column of a printed table."""
    lines = table.splitlines()
    header = lines[0]
    start = header.index(column)
    nxt = min((header.index(h) for h in header[start:].split()[1:2]), default=len(header))
    return [line[start:nxt].strip() for line in lines[1:]]


def test_scope_all_shows_the_project_of_each_row(repos: TwoRepos) -> None:
    result = repos.run("list", "--scope", "all")
    assert result.exit_code == 0, result.output
    projects = _cells(result.stdout, "project")
    assert projects[:3] == ["~/src/shop", "~/src/shop", "~/src/blog"]  # the auth-refactors
    assert projects[3].startswith("…") and projects[3].endswith("/service")
    here = repos.run("list", "--cwd", f"{repos.home}/src/shop")
    assert "project" not in here.stdout.splitlines()[0]  # worktree scope: one project


def test_ambiguous_candidates_show_their_project(repos: TwoRepos) -> None:
    result = repos.run("resolve", "auth-refactor", "--cwd", f"{repos.home}/src/shop")
    assert result.exit_code == 3, result.output
    assert _cells(result.stdout, "project") == ["~/src/shop", "~/src/shop"]


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_narrow_terminal_cuts_long_branches_and_paths_before_the_title(
    repos: TwoRepos, columns: int
) -> None:
    lines = repos.run("list", "--scope", "all", columns=columns).stdout.splitlines()
    assert all(len(line) <= columns for line in lines)
    row = next(line for line in lines if line.startswith("Investigate"))
    title = _cells("\n".join([lines[0], row]), "title")[0]
    branch = _cells("\n".join([lines[0], row]), "branch")[0]
    project = _cells("\n".join([lines[0], row]), "project")[0]
    assert len(title) >= max(len(branch), len(project), 22)
    assert branch.startswith("feat") and project.endswith("ice")


@pytest.mark.parametrize(
    ("elsewhere", "kinds", "scope", "says"),
    [
        # /w/app is no git repository: its repo scope is its worktree, nothing more
        (True, (), "worktree", "No sessions in this scope (try --scope all).\n"),
        (True, (), "repo", "No sessions in this scope (try --scope all).\n"),
        # Helper 206: nothing in any scope (an empty history, or every session filtered
        # out by --since/--branch) said "try --scope repo or --scope all", a dead end
        (False, (), "worktree", "No sessions in this scope.\n"),
        # every session there is is of a kind list hides: say so, not "--scope all" again
        (
            False,
            ("sdk-py", "sdk-cli"),
            "all",
            "No sessions in this scope. Hidden kinds match it: try --all-kinds (-p/SDK,"
            " sidechain, /loop, team, daemon, superseded, picker-archived and"
            " __hidden-tagged sessions).\n",
        ),
    ],
)
def test_an_empty_list_suggests_only_what_could_show_more(
    tmp_path: Path, elsewhere: bool, kinds: tuple[str, ...], scope: str, says: str
) -> None:
    tree = ConfigTree(tmp_path / "claude")
    if elsewhere:
        other = tree.session(cwd="/w/other")
        other.user("something elsewhere")
        other.write()
    for entrypoint in kinds:
        s = tree.session(cwd="/w/app", entrypoint=entrypoint)
        s.user("from a script")
        s.write()
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
        + ["list", "--scope", scope, "--cwd", "/w/app"],
    )
    assert result.exit_code == 0 and result.stderr == says


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["search", "auth", "--scope", "all", "--limit", str(2**30)], 0),  # OverflowError before
        (["search", "auth", "--scope", "all", "--limit", str(2**31 - 1)], 0),
        (["search", "auth", "--limit", str(2**31)], 2),  # past the range: a usage error
        (["list", "--limit", str(2**63)], 2),
        (["from-pr", "--limit", str(2**63)], 2),
        (["list", "--scope", "all", "--since", "99999999999999999999999d"], 0),  # everything
        (["list", "--scope", "all", "--since", "9" * 400 + "d"], 0),
    ],
)
def test_extreme_numbers_are_answers_or_usage_errors(
    tmp_path: Path, args: list[str], code: int
) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("the auth refactor")
    s.write()
    result = CliRunner().invoke(
        cli, ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db"), *args]
    )
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, OverflowError)


@pytest.mark.parametrize("limit", [0, -1, 2.5, "5", True, 2**31])
def test_index_refuses_a_limit_that_is_no_page_size(tmp_path: Path, limit: Any) -> None:
    tree = ConfigTree(tmp_path / "claude")
    tree.session(cwd="/w/app").write()
    with Index(tmp_path / "i.db", [tree.root]) as index:
        for call in (index.list, lambda **kw: index.search("auth", **kw)):
            with pytest.raises(ValueError, match="limit must be a whole number"):
                call(scope="all", limit=limit)


def test_the_cli_limit_range_is_the_libraries() -> None:
    from sessiondex.cli.main import cli as group
    from sessiondex.query.filters import MAX_LIMIT

    command = group.get_command(None, "list")  # type: ignore[arg-type]
    (limit,) = [p for p in command.params if p.name == "limit"]
    assert limit.type.max == MAX_LIMIT  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "command",
    [
        ["list", "--scope", "all"],
        ["search", "reviewing", "--scope", "all"],
        ["from-pr", "9", "--scope", "all"],
        ["resolve", "Parser review", "--cwd", "/w/app"],
        ["continue", "--cwd", "/w/app"],
    ],
)
def test_an_agent_name_is_shown_beside_the_title(tmp_path: Path, command: list[str]) -> None:
    """semantics 2: an agent-name record is shown as @agent beside the title (tables;
    the JSON object keeps its fixed keys)."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("reviewing the parser")
    s.meta("custom-title", customTitle="Parser review")
    s.meta("agent-name", agentName="reviewer")
    s.pr_link(number=9, url="https://github.com/acme/app/pull/9", repository="acme/app")
    s.write()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    table = CliRunner().invoke(cli, [*base, *command], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "Parser review @reviewer" in table.stdout
    as_json = json.loads(CliRunner().invoke(cli, [*base, *command, "--json"]).stdout)
    obj = as_json if isinstance(as_json, dict) else as_json[0]
    assert "agent" not in obj and obj["title"] == "Parser review"


# cli.md: "Every session object has exactly these keys"; jsonl is one object per line.
CONTRACT_KEYS = (
    "session_id, project_key, config_dir, file_path, cwd, title, custom_title, ai_title, "
    "summary, last_prompt, first_prompt, tag, git_branch, branches, pr_links, pr_mentions, "
    "created_at, last_activity, mtime, file_size, message_count, entrypoint, is_sidechain, "
    "forked_from, resume_command"
).split(", ")


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_every_format_carries_exactly_the_contracts_keys(tmp_path: Path, fmt: str) -> None:
    import csv
    import io

    tree = ConfigTree(tmp_path / "claude")
    for word in ("one", "two"):
        s = tree.session(cwd=f"/w/{word}")
        s.user(f"prompt {word}\nwith a second line, and a comma")
        s.write()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    out = CliRunner().invoke(cli, [*base, "list", "--scope", "all", "--format", fmt]).stdout
    if fmt == "json":
        rows = json.loads(out)
    elif fmt == "jsonl":
        lines = out.splitlines()
        assert len(lines) == 2  # one object per line, newlines inside strings escaped
        rows = [json.loads(line) for line in lines]
    else:
        reader = csv.DictReader(io.StringIO(out))
        assert reader.fieldnames == CONTRACT_KEYS
        rows = list(reader)
        # Booleans as JSON spells them (the lists in a cell are JSON too), not Python's
        assert {r["is_sidechain"] for r in rows} == {"false"}
    assert len(rows) == 2 and all(list(r) == CONTRACT_KEYS for r in rows)


# README "CSV and spreadsheets": cells are the values, a leading = + - @ included; no
# quote or apostrophe is added, so a script reading the CSV gets the title back.
@pytest.mark.parametrize(
    "title",
    ['=HYPERLINK("https://example.com/?x","click")', "+1+2", "-fix the parser", "@SUM(A1:A2)"],
)
def test_csv_cells_that_look_like_formulas_are_written_as_they_are(
    tmp_path: Path, title: str
) -> None:
    import csv
    import io

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/one")
    s.user(title)
    s.meta("custom-title", customTitle=title)
    s.write()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    out = CliRunner().invoke(cli, [*base, "list", "--scope", "all", "--format", "csv"]).stdout
    (row,) = csv.DictReader(io.StringIO(out))
    assert (row["title"], row["custom_title"], row["first_prompt"]) == (title, title, title)


def test_a_session_of_another_directory_with_the_same_project_key_is_not_listed(
    tmp_path: Path,
) -> None:
    """``/a/b-c`` and ``/a/b/c`` share the project dir ``-…-a-b-c``. Claude Code's picker
    (and ``continue``) leave out a row recorded in the other directory; ``list`` and
    ``search`` showed it. ``--scope all`` lists both, each under its own directory."""
    here, other = tmp_path / "a" / "b-c", tmp_path / "a" / "b" / "c"
    here.mkdir(parents=True)
    other.mkdir(parents=True)
    tree = ConfigTree(tmp_path / "claude")
    mine = tree.session(cwd=str(here))
    mine.user("wombat here")
    mine.write()
    theirs = tree.session(cwd=str(other), project_key=mine.path.parent.name)
    theirs.user("wombat there")
    theirs.write()
    (tmp_path / "link").symlink_to(here)
    linked = tree.session(cwd=str(tmp_path / "link"), project_key=mine.path.parent.name)
    linked.user("wombat through a link")  # the same directory, spelled another way
    linked.write()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]

    def ids(*args: str) -> set[str]:
        result = CliRunner().invoke(cli, [*base, *args, "--json"])
        assert result.exit_code in (0, 1), result.output
        return {row["session_id"] for row in json.loads(result.stdout)}

    shown = {mine.session_id, linked.session_id}
    assert ids("list", "--cwd", str(here)) == shown
    assert ids("search", "wombat", "--cwd", str(here)) == shown
    assert ids("list", "--cwd", str(here), "--scope", "all") == shown | {theirs.session_id}


def test_a_worktree_session_recorded_in_the_main_checkout_hides_nothing_of_it(
    tmp_path: Path,
) -> None:
    """The rule is per project dir: a session in the worktree's dir whose recorded cwd is
    the main checkout (a fork or resume copied it there) left out *every* session of the
    main checkout from ``--scope repo``."""
    from tests.builders import git_repo_with_worktree

    main, linked = git_repo_with_worktree(tmp_path)
    tree = ConfigTree(tmp_path / "claude")
    mine = tree.session(cwd=str(main))
    mine.user("alpha in main")
    mine.write()
    wt_key = tree.session(cwd=str(linked)).path.parent.name
    copied = tree.session(cwd=str(main), project_key=wt_key)
    copied.user("alpha copied into the worktree's dir")
    copied.write()
    unknown = tree.session(cwd=str(main))
    unknown.entries[:] = []
    unknown.raw(b'{"type":"user","message":{"role":"user","content":"alpha, no cwd"},"uuid":"u9",'
                b'"sessionId":"' + unknown.session_id.encode() + b'"}\n')  # fmt: skip
    unknown.write()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    for args in (["list", "--scope", "repo"], ["search", "alpha", "--scope", "repo"]):
        result = CliRunner().invoke(cli, [*base, *args, "--cwd", str(main), "--json"])
        assert result.exit_code == 0, result.output
        ids = {row["session_id"] for row in json.loads(result.stdout)}
        assert {mine.session_id, unknown.session_id} <= ids, args


# Each command that prints rows as CSV, with arguments that find the one session.
CSV_COMMANDS = [
    ["list", "--scope", "all"],
    ["search", "pelican", "--scope", "all"],
    ["from-pr", "https://github.com/acme/zoo/pull/7", "--scope", "all"],
    ["resolve", "Pelican count", "--cwd", "/w/zoo"],
    ["continue", "--cwd", "/w/zoo"],
    ["cleanup", "--days", "30"],
    ["archive", "--to", "ARCHIVE", "--dry-run", "--expiring-within", "1d"],
]


@pytest.mark.parametrize("args", CSV_COMMANDS, ids=[c[0] for c in CSV_COMMANDS])
def test_a_csv_with_no_row_still_has_its_header(tmp_path: Path, args: list[str]) -> None:
    """An empty answer printed nothing at all as CSV: a reader got no columns. It is
    the header alone, the same one the answer with a row has."""
    import csv
    import io

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/zoo", git_branch="main")
    s.user("count the pelican colony")
    s.assistant("About 40 pelicans.")
    s.meta("custom-title", customTitle="Pelican count")
    s.pr_link(number=7, url="https://github.com/acme/zoo/pull/7", repository="acme/zoo")
    s.write(mtime=T0)  # long past any cleanup period
    empty = ConfigTree(tmp_path / "empty")
    argv = [str(tmp_path / "archive") if a == "ARCHIVE" else a for a in args]

    def header_and_rows(root: Path) -> tuple[list[str], int]:
        base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
        result = CliRunner().invoke(cli, [*base, *argv, "--format", "csv"])
        assert result.exception is None or isinstance(result.exception, SystemExit)
        lines = list(csv.reader(io.StringIO(result.stdout)))
        assert lines, f"no CSV at all ({result.output!r})"
        return lines[0], len(lines) - 1

    header, rows = header_and_rows(tree.root)
    assert rows == 1
    assert header_and_rows(empty.root) == (header, 0)


def _hidden_twins(tree: ConfigTree) -> str:
    """Five sessions of one project whose IDs differ only in the last character: one a
    picker shows, and four it hides (-p/SDK, /loop, metadata only, a sidechain file).
    Returns the shown one's ID."""
    base = "dddddddd-0000-4000-8000-00000000000"
    shown = ""
    for last, kind in zip("abcde", ("shown", "sdk", "loop", "metadata", "sidechain")):
        s = tree.session(
            cwd="/w/cont",
            session_id=base + last,
            entrypoint="sdk-ts" if kind == "sdk" else "cli",
        )
        if kind == "metadata":
            s.meta("custom-title", customTitle="no messages")
        elif kind == "loop":
            s.user("<command-name>/loop</command-name><command-args>5m</command-args>")
        elif kind == "sidechain":
            s.user("a subagent's task", isSidechain=True)
        else:
            s.user(f"work of the {kind} session")
        s.write(mtime=T0 + 100 if kind == "shown" else T0)
        if kind == "shown":
            shown = s.session_id
    return shown


@pytest.mark.parametrize(
    "args",
    [["list"], ["continue"], ["search", "work"], ["list", "--all-kinds"]],
)
def test_an_id_shown_in_a_table_names_one_session_when_typed_back(
    tmp_path: Path, args: list[str]
) -> None:
    """IDs were shortened to tell apart only the rows shown: a hidden session whose ID
    began alike made `resolve <shown ID>` ambiguous (exit 3). The table shows as many
    characters as every session an ID prefix can resolve to needs."""
    tree = ConfigTree(tmp_path / "claude")
    shown = _hidden_twins(tree)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    table = CliRunner().invoke(cli, [*base, *args, "--cwd", "/w/cont"])
    assert table.exit_code == 0, table.output
    cells = {line.split()[-1] for line in table.stdout.splitlines()[1:] if line.strip()}
    typed = next(c for c in cells if shown.startswith(c))
    assert len(typed) > 8
    for command in (["resolve", typed], ["tag", typed, "kept"]):
        result = CliRunner().invoke(cli, [*base, *command, "--cwd", "/w/cont"])
        assert result.exit_code == 0, result.output
    assert CliRunner().invoke(cli, [*base, "resolve", shown, "--json"]).exit_code == 0


def test_an_id_with_no_look_alike_stays_short(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    _session(tree, "/w/a", "alpha", T0)
    _session(tree, "/w/a", "beta", T0 + 1)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    table = CliRunner().invoke(cli, [*base, "list", "--cwd", "/w/a"])
    assert {len(line.split()[-1]) for line in table.stdout.splitlines()[1:]} == {8}


def test_an_id_shown_is_never_another_sessions_name(tmp_path: Path) -> None:
    """A name is tried before an ID prefix: with another session named ``deadbeef``,
    the ID shown as ``deadbeef`` resolved to that one, and ``tag``/``delete`` of it would
    have acted on it."""
    tree = ConfigTree(tmp_path / "claude")
    target = tree.session(cwd="/w/shop", session_id="deadbeef-1111-4111-8111-111111111111")
    target.user("the session whose ID is shown")
    target.write(mtime=T0 + 10)
    other = tree.session(cwd="/w/shop", session_id="abcabcab-1111-4111-8111-111111111111")
    other.user("the session named like an ID")
    other.meta("custom-title", customTitle="  DeadBeef ")
    other.write(mtime=T0)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    table = CliRunner().invoke(cli, [*base, "list", "--cwd", "/w/shop"])
    cells = [line.split()[-1] for line in table.stdout.splitlines()[1:]]
    shown = next(c for c in cells if target.session_id.startswith(c))
    assert shown != "deadbeef"
    result = CliRunner().invoke(cli, [*base, "resolve", shown, "--cwd", "/w/shop", "--json"])
    assert json.loads(result.stdout)[0]["session_id"] == target.session_id


def test_an_id_width_for_a_huge_listing_binds_no_parameter_per_id(tmp_path: Path) -> None:
    """One parameter per listed ID passed PostgreSQL's 65,535 (a team store of 70,000
    sessions listed whole ended in a traceback) and SQLite's limit (32,766 upstream,
    250,000 in Debian's build): 260,000 IDs are widened in one read of the index's."""
    import uuid

    from sessiondex.indexer.db import open_db
    from sessiondex.indexer.refresh import refresh
    from sessiondex.query.idprefix import prefix_width

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/a", session_id="0badcafe-0000-4000-8000-000000000000")
    s.user("one real session")
    s.write(mtime=T0)
    db = open_db(tmp_path / "i.db")
    try:
        refresh(db, [tree.root])
        listed = [str(uuid.UUID(int=n << 64 | 0x4000_8000_0000_0000)) for n in range(1, 260_001)]
        listed.append("0badcafe-0000-4000-8000-000000000001")  # shares 35 with the real one
        assert prefix_width(db, listed, [tree.root]) == 36
    finally:
        db.close()


def test_an_id_shown_is_never_a_name_padded_with_invisible_characters(tmp_path: Path) -> None:
    """Names were looked at only up to 64 stored characters; one padded with zero-width
    spaces resolves (they are dropped) yet was longer than that."""
    tree = ConfigTree(tmp_path / "claude")
    target = tree.session(cwd="/w/shop", session_id="abcdef12-3456-4789-8abc-def012345678")
    target.user("the session whose ID is shown")
    target.write(mtime=T0 + 10)
    for sid, name in (
        ("21111111-0000-4000-8000-000000000001", "abcdef12"),
        ("31111111-0000-4000-8000-000000000002", "\u200b" * 60 + "abcdef12-"),
    ):
        other = tree.session(cwd="/w/shop", session_id=sid)
        other.user("a session named like an ID")
        other.meta("custom-title", customTitle=name)
        other.write(mtime=T0)
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    table = CliRunner().invoke(cli, [*base, "list", "--cwd", "/w/shop"])
    cells = [line.split()[-1] for line in table.stdout.splitlines()[1:]]
    shown = next(c for c in cells if target.session_id.startswith(c))
    result = CliRunner().invoke(cli, [*base, "resolve", shown, "--cwd", "/w/shop", "--json"])
    assert json.loads(result.stdout)[0]["session_id"] == target.session_id


def test_a_table_of_a_huge_listing_looks_up_its_marks_in_batches(tmp_path: Path) -> None:
    """Agent names and picker-archive marks are looked up by path: one parameter per
    row passed PostgreSQL's 65,535 (and SQLite's limit) for a whole big listing."""
    from sessiondex.indexer.db import open_db
    from sessiondex.indexer.refresh import refresh
    from sessiondex.query.sessions import agent_names, picker_archived_paths

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/a")
    s.user("one real session")
    s.meta("agent-name", agentName="reviewer")
    path = s.write(mtime=T0)
    db = open_db(tmp_path / "i.db")
    try:
        refresh(db, [tree.root])
        objects = [{"file_path": f"/nowhere/{n}.jsonl"} for n in range(260_000)]
        objects.append({"file_path": str(path)})
        assert agent_names(db, objects) == {str(path): "reviewer"}
        assert picker_archived_paths(db, objects) == set()
    finally:
        db.close()


# glibc's strftime("%Y") does not pad a year below 1000 to four digits: "999-05-01…"
# and "1-01-01…" are no ISO-8601, and every reader of the JSON choked on them (helpers
# 120, 121). The range ends are the years a stamp can parse to.
@pytest.mark.parametrize(
    "stamp",
    [
        "0001-01-01T00:00:00.000Z",
        "0999-05-01T10:00:00.250Z",
        "1969-12-31T23:59:59.999Z",
        "9999-12-31T23:59:59.000Z",
    ],
)
def test_times_are_iso_8601_in_every_year(tmp_path: Path, stamp: str) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/tmp/sessiondex-years")
    s.user("what year is it", timestamp=stamp)
    s.assistant("ok", timestamp=stamp)
    s.write()
    with Index(tmp_path / "i.db", [tree.root]) as index:
        (obj,) = index.list(scope="all")
    assert obj["created_at"] == obj["last_activity"] == stamp
    runner = CliRunner()
    base = ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
    shown = runner.invoke(cli, [*base, "show", s.session_id, "--format", "text"])
    assert shown.exit_code == 0 and f"{stamp[:10]} {stamp[11:19]}" in shown.stdout


@pytest.mark.parametrize(
    ("filters", "says"),
    [
        ([], "No sessions in this scope (try --scope repo or --scope all).\n"),
        (["--since", "1d"], "No sessions in this scope (try --scope all).\n"),
        (["--branch", "main"], "No sessions in this scope.\n"),
    ],
    ids=["repo-has-some", "only-all-has-a-recent-one", "none-anywhere"],
)
def test_an_empty_list_suggests_a_wider_scope_only_when_it_holds_a_match(
    tmp_path: Path, filters: list[str], says: str
) -> None:
    """Helper 206: ``list --since 1d`` in a quiet worktree said "try --scope repo or
    --scope all" though neither held a session that recent: a wider scope is suggested
    only when the same filters find a session there."""
    from tests.builders import git_repo_with_worktree

    repo, worktree = git_repo_with_worktree(tmp_path)
    tree = ConfigTree(tmp_path / "claude")
    for cwd, age_days in ((repo, 10), ("/w/elsewhere", 0)):
        when = datetime.now(timezone.utc) - timedelta(days=age_days, minutes=5)
        start = when.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        s = tree.session(cwd=str(cwd), git_branch="feature", start=start)
        s.user("a session")
        s.write(mtime=when.timestamp())
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")]
        + ["list", "--scope", "worktree", "--cwd", str(worktree), *filters],
    )
    assert result.exit_code == 0 and result.stderr == says


def test_an_id_width_reads_indexes_not_the_sessions_rows(tmp_path: Path) -> None:
    """The IDs and the names an ID prefix is compared with are read from two indexes
    (m018): the table's rows, each with its stored object, were 60-200 ms of every
    ``list``/``search``/``resolve`` table at 20,000 sessions, and ``SELECT DISTINCT
    session_id`` read them in session ID order, a lookup of a wide row for each."""
    from sessiondex.indexer.db import open_db
    from sessiondex.indexer.refresh import refresh
    from sessiondex.query.idprefix import prefix_width
    from tests.helpers_index import statements

    tree = ConfigTree(tmp_path / "claude")
    for n, title in enumerate(["deadbee0", "a longer name", None]):
        s = tree.session(cwd="/w/a", session_id=f"deadbee{n}-0000-4000-8000-000000000000")
        s.user(f"session {n}")
        if title:
            s.meta("custom-title", customTitle=title)
        s.write(mtime=T0 + n)
    db = open_db(tmp_path / "i.db")
    try:
        refresh(db, [tree.root])
        with statements(db.conn) as asked:
            # a name that reads as the 8-character prefix of the IDs: one more character
            assert prefix_width(db, ["deadbee0-0000-4000-8000-000000000000"], [tree.root]) == 9
        reads = [sql for sql in asked if "FROM sessions" in sql]
        assert len(reads) == 2, reads
        for sql in reads:
            plan = [row[3] for row in db.conn.execute("EXPLAIN QUERY PLAN " + sql)]
            assert all(
                "USING COVERING INDEX sessions_id_width" in step
                or "USING INDEX sessions_id_like_names" in step
                for step in plan
            ), (sql, plan)
    finally:
        db.close()


@pytest.mark.parametrize(
    ("filters", "says"),
    [
        (["--branch", "nosuch"], "No sessions in this scope match --branch nosuch.\n"),
        (
            ["--branch", "feat x", "--since", "1h"],
            "No sessions in this scope match --branch 'feat x' --since 1h.\n",
        ),
        (["--since", "1h"], "No sessions in this scope match --since 1h (try --scope all).\n"),
        # nothing here at all, filters or not: the scope is what is empty
        (
            ["--branch", "main", "--cwd", "/w/empty"],
            "No sessions in this scope (try --scope all).\n",
        ),
    ],
    ids=["branch", "quoted-branch-and-since", "since-and-wider", "empty-scope"],
)
def test_an_empty_list_names_the_filters_that_left_nothing(
    tmp_path: Path, filters: list[str], says: str
) -> None:
    """Helper 608: ``list --branch nosuch`` in a directory with sessions said "No
    sessions in this scope.", as if the directory had none; it names the filters that
    left nothing when the scope holds sessions without them."""
    tree = ConfigTree(tmp_path / "claude")
    old = datetime.now(timezone.utc) - timedelta(days=3)
    for cwd, start in (("/w/app", old), ("/w/other", datetime.now(timezone.utc))):
        s = tree.session(cwd=cwd, git_branch="main", start=start.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
        s.user("a session")
        s.write()
    cwd = [] if "--cwd" in filters else ["--cwd", "/w/app"]
    result = CliRunner().invoke(
        cli,
        ["--config-dir", str(tree.root), "--db", str(tmp_path / "i.db")] + ["list", *cwd, *filters],
    )
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr == says
