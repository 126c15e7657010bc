"""from-pr: a PR column, sessions that only mention the PR, GitHub's owner/repo#123
shorthand, exit 1 when nothing is found, and the same default scope as list and search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from tests.builders import ConfigTree, copy_fixtures, git, git_repo_with_worktree

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NAMES = json.loads((FIXTURES / "scenarios.json").read_text())["names"]
SHOP_WT = "/home/dev/shop-wt/feature-x"


def _run(tmp_path: Path, root: Path, *args: str):
    return CliRunner().invoke(
        cli, ["--config-dir", str(root), "--db", str(tmp_path / "i.db"), *args]
    )


@pytest.mark.parametrize(
    ("args", "code", "rows"),
    [
        (["from-pr", "7"], 0, 1),
        (["from-pr", "#7"], 0, 1),
        (["from-pr", "8"], 1, 0),
        (["from-pr", "acme/app#7"], 0, 1),
        (["from-pr", "acme/app#8"], 1, 0),
        (["from-pr", "https://github.com/acme/app/pull/7"], 0, 1),
        (["from-pr", "https://github.com/acme/app/pull/8"], 1, 0),
        (["from-pr"], 0, 1),
    ],
)
def test_exit_status_like_grep(tmp_path: Path, args: list[str], code: int, rows: int) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("the capybara module")
    s.pr_link(number=7, url="https://github.com/acme/app/pull/7", repository="acme/app")
    s.write()
    result = _run(tmp_path, tree.root, *args, "--scope", "all", "--json")
    assert result.exit_code == code, result.output
    assert len(json.loads(result.stdout)) == rows  # json prints [] when empty


@pytest.mark.parametrize(
    "number",
    [
        "0",
        "3.0",
        "²",  # str.isdigit() says yes, int() says no
        "٣",  # an Arabic-Indic 3: PR numbers are ASCII digits, as in URLs
        "9223372036854775808",  # one past SQLite's INTEGER
        "99999999999999999999999",
    ],
)
def test_a_number_that_is_no_pr_number_is_one_line(tmp_path: Path, number: str) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("hello")
    s.write()
    result = _run(tmp_path, tree.root, "from-pr", number, "--scope", "all")
    assert result.exit_code == 2  # bad input: a usage error, as a bad --since is
    assert result.stderr == (
        f"Error: Invalid value for 'PR': not a PR number, URL or owner/repo#number: {number!r}\n"
    )


def test_the_largest_pr_number_is_a_number(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("hello")
    s.write()
    result = _run(tmp_path, tree.root, "from-pr", "9223372036854775807", "--scope", "all")
    assert result.exit_code == 1 and "No session" in result.stderr


def test_no_link_at_all_is_exit_1(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user("no PR here")
    s.write()
    result = _run(tmp_path, tree.root, "from-pr", "--scope", "all")
    assert result.exit_code == 1 and result.stderr == "No session in this scope has a PR link.\n"


def test_help_documents_exit_status_and_default_scope() -> None:
    text = " ".join(CliRunner().invoke(cli, ["from-pr", "--help"]).output.split())
    assert "Exit status" in text and "[default: repo]" in text


@pytest.mark.parametrize(
    "ref", ["acme/shop#12", "Acme/Shop#12", "https://github.com/acme/shop/pull/12"]
)
def test_shorthand_finds_what_the_url_finds(tmp_path: Path, ref: str) -> None:
    root = copy_fixtures(tmp_path)
    result = _run(tmp_path, root, "from-pr", ref, "--json")
    assert result.exit_code == 0, result.output
    assert [r["session_id"] for r in json.loads(result.stdout)] == [
        NAMES["wt-feature"],
        NAMES["shop-auth"],
    ]


def test_from_pr_table_has_a_pr_column(tmp_path: Path) -> None:
    root = copy_fixtures(tmp_path)
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, "from-pr", "--scope", "all"])
    assert result.exit_code == 0
    header, *rows = result.stdout.splitlines()
    assert header.split()[-1] == "pr"
    joined = "\n".join(rows)
    for label in ("acme/shop#14, acme/shop#12", "acme/marketing/blog!12", "web/blog#7"):
        assert label in joined


@pytest.mark.parametrize(
    "ref", ["15", "#15", "acme/shop#15", "https://github.com/acme/shop/pull/15"]
)
def test_from_pr_lists_sessions_that_only_mention_the_pr(tmp_path: Path, ref: str) -> None:
    root = copy_fixtures(tmp_path)
    base = ["--config-dir", str(root), "--db", str(tmp_path / "i.db")]
    result = CliRunner().invoke(cli, [*base, "from-pr", ref, "--cwd", SHOP_WT])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("No session is linked to ") and lines[0].endswith("; mentioned in:")
    assert NAMES["wt-mention"][:8] in lines[2] and lines[2].endswith("acme/shop#15")
    as_json = CliRunner().invoke(cli, [*base, "from-pr", ref, "--cwd", SHOP_WT, "--json"])
    assert [r["session_id"] for r in json.loads(as_json.stdout)] == [NAMES["wt-mention"]]


def _linked(tree: ConfigTree, cwd: str, number: int, text: str = "opened it"):
    s = tree.session(cwd=cwd)
    s.user(text)
    s.pr_link(
        number=number, url=f"https://github.com/acme/app/pull/{number}", repository="acme/app"
    )
    s.write()
    return s


def test_from_pr_lists_links_then_mentions(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    linked = _linked(tree, "/w/app", 5)
    mention = tree.session(cwd="/w/app")
    mention.user("see https://github.com/acme/app/pull/5 for context")
    mention.write()
    result = _run(tmp_path, tree.root, "from-pr", "5", "--cwd", "/w/app")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert linked.session_id[:8] in lines[1] and lines[1].endswith("acme/app#5")
    assert lines[3] == "Mentioned in (no pr-link record):"
    assert mention.session_id[:8] in lines[5]


def test_a_number_looks_in_every_worktree_of_the_repository_by_default(tmp_path: Path) -> None:
    """spec/semantics.md: a number matches "in the current repository's scope (all
    worktrees)", as Claude Code's --from-pr does; list and search keep worktree."""
    for command, default in (("list", "worktree"), ("search", "worktree"), ("from-pr", "repo")):
        text = CliRunner().invoke(cli, [command, "--help"]).output
        assert f"[default: {default}]" in " ".join(text.split()), command
    repo, worktree = git_repo_with_worktree(tmp_path)
    tree = ConfigTree(tmp_path / "claude")
    here = _linked(tree, str(repo), 1)
    sibling = _linked(tree, str(worktree), 1)
    _linked(tree, "/w/elsewhere", 1)
    result = _run(tmp_path, tree.root, "from-pr", "1", "--cwd", str(repo), "--json")
    assert sorted(r["session_id"] for r in json.loads(result.stdout)) == sorted(
        [here.session_id, sibling.session_id]
    )
    narrow = ("--scope", "worktree", "--json")
    result = _run(tmp_path, tree.root, "from-pr", "1", "--cwd", str(repo), *narrow)
    assert [r["session_id"] for r in json.loads(result.stdout)] == [here.session_id]
    result = _run(tmp_path, tree.root, "from-pr", "2", "--cwd", str(repo))
    assert result.exit_code == 1 and result.stderr == "No session is linked to PR #2.\n"
    result = _run(tmp_path, tree.root, "from-pr", "1", "--cwd", "/w/c")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == "3 sessions in other projects: --scope all"


def test_the_library_from_pr_defaults_to_the_repository_too(tmp_path: Path) -> None:
    from sessiondex import Index

    repo, worktree = git_repo_with_worktree(tmp_path)
    tree = ConfigTree(tmp_path / "claude")
    here = _linked(tree, str(repo), 3)
    sibling = _linked(tree, str(worktree), 3)
    with Index(config_dirs=[tree.root], db=tmp_path / "i.db") as index:
        found = {s["session_id"] for s in index.from_pr("3", cwd=str(repo))}
        assert found == {here.session_id, sibling.session_id}
        narrow = index.from_pr("3", cwd=str(repo), scope="worktree")
        assert [s["session_id"] for s in narrow] == [here.session_id]


@pytest.mark.parametrize("ref", ["5", "acme/app#5", "https://github.com/acme/app/pull/5"])
def test_json_rows_say_link_or_mention(tmp_path: Path, ref: str) -> None:
    """In JSON a mention must not pass for a link: links come first, and each row's
    ``pr_links`` and ``pr_mentions`` say which it is. The objects have exactly the keys
    of the CLI contract (only ``search`` and ``resolve`` add ``matched_by``)."""
    from sessiondex.query.sessions import SESSION_FIELDS

    tree = ConfigTree(tmp_path / "claude")
    linked = _linked(tree, "/w/app", 5)
    mention = tree.session(cwd="/w/app")
    mention.user("see https://github.com/acme/app/pull/5 for context")
    mention.write()
    result = _run(tmp_path, tree.root, "from-pr", ref, "--cwd", "/w/app", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [list(r) for r in rows] == [list(SESSION_FIELDS)] * 2
    url = "https://github.com/acme/app/pull/5"
    assert [
        (r["session_id"], [p["url"] for p in r["pr_links"]], [p["url"] for p in r["pr_mentions"]])
        for r in rows
    ] == [(linked.session_id, [url], []), (mention.session_id, [], [url])]


def _pr_4_found(tmp_path: Path, repo: Path, link: str) -> bool:
    """Whether ``from-pr 4`` in ``repo`` finds the one session linked to ``link`` (exit 0
    and it), or finds nothing (exit 1)."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=str(repo))
    s.user("open the PR")
    s.pr_link(number=4, url=link, repository="ignored/by/parsing")
    s.write()
    result = _run(tmp_path, tree.root, "from-pr", "4", "--cwd", str(repo), "--json")
    outcome = (result.exit_code, len(json.loads(result.stdout)))
    assert outcome in ((0, 1), (1, 0)), outcome
    return outcome == (0, 1)


@pytest.mark.parametrize(
    ("origin", "link", "found"),
    [
        # Bitbucket Server: clone over HTTP (scm/…) or SSH (another port) vs the web path
        ("https://bb.corp.example:7990/scm/prj/r.git",
         "https://bb.corp.example:7990/projects/PRJ/repos/r/pull-requests/4", True),
        ("ssh://git@bb.corp.example:7999/prj/r.git",
         "https://bb.corp.example:7990/projects/PRJ/repos/r/pull-requests/4", True),
        # Gerrit: the git host and its -review host
        ("https://android.googlesource.com/platform/build",
         "https://android-review.googlesource.com/c/platform/build/+/4", True),
        # Gerrit's authenticated HTTP path (/a/…) is the same project; a project whose
        # name starts with a/ is still itself
        ("https://review.example.org/a/infra/tools",
         "https://review.example.org/c/infra/tools/+/4", True),
        ("https://review.example.org/a/a/tools",
         "https://review.example.org/c/a/tools/+/4", True),
        ("https://review.example.org/a/tools",
         "https://review.example.org/c/a/tools/+/4", True),
        ("https://review.example.org/a/infra/tools",
         "https://review.example.org/c/infra/other/+/4", False),
        # on GitHub an owner named a is an owner
        ("https://github.com/a/shop.git", "https://github.com/shop/x/pull/4", False),
        # an SSH alias from ~/.ssh/config names no real host: the paths decide
        ("git@github-work:acme/shop.git", "https://github.com/acme/shop/pull/4", True),
        ("git@github-work:acme/shop.git", "https://github.com/acme/other/pull/4", False),
        ("git@github.com:acme/shop.git", "https://github.com/acme/other/pull/4", False),
        ("git@github.com:Acme/Shop.git", "https://github.com/acme/shop/pull/4", True),
        ("https://gitlab.com/g/sub/p.git", "https://gitlab.com/g/sub/p/-/merge_requests/4", True),
        ("https://gitlab.com/g/sub/p.git", "https://gitlab.example.com/g/sub/p/-/merge_requests/4",
         False),
        # the Bitbucket and Gerrit forms are those forges' only: on GitLab, other projects
        ("git@gitlab.com:acme/shop.git", "https://gitlab.com/scm/acme/shop/-/merge_requests/4",
         False),
        ("git@gitlab.com:acme/shop.git",
         "https://gitlab.com/projects/acme/repos/shop/-/merge_requests/4", False),
        ("https://code-review.example.com/acme/shop.git",
         "https://code.example.com/acme/shop/pull/4", False),
        # www. on a public forge is the forge (links and remotes alike)
        ("https://www.github.com/acme/shop.git", "https://github.com/acme/shop/pull/4", True),
        ("git@www.github.com:acme/shop.git", "https://www.github.com/acme/shop/pull/4", True),
        ("https://github.com/acme/shop", "https://WWW.github.com/acme/shop/pull/4", True),
        ("https://www.gitlab.com/g/p.git", "https://gitlab.com/g/p/-/merge_requests/4", True),
    ],
)  # fmt: skip
def test_a_number_matches_the_prs_of_the_origin_whatever_its_url_form(
    tmp_path: Path, origin: str, link: str, found: bool
) -> None:
    repo, _ = git_repo_with_worktree(tmp_path)
    git("remote", "add", "origin", origin, cwd=repo)
    assert _pr_4_found(tmp_path, repo, link) == found


# A clone of a fork: the PRs opened from it live in the repository it was forked from
# (``gh pr create`` targets the upstream remote), so each remote names "this repository".
FORK_REMOTES = {"origin": "git@github.com:me/shop.git", "upstream": "https://github.com/acme/shop"}


@pytest.mark.parametrize(
    ("remotes", "link", "found"),
    [
        pytest.param(FORK_REMOTES, "https://github.com/acme/shop/pull/4", True, id="upstream PR"),
        pytest.param(FORK_REMOTES, "https://github.com/me/shop/pull/4", True, id="fork's own PR"),
        pytest.param(FORK_REMOTES, "https://github.com/else/where/pull/4", False, id="another"),
        pytest.param(
            {"upstream": "https://github.com/acme/shop.git"},
            "https://github.com/acme/shop/pull/4",
            True,
            id="no origin, one remote",
        ),
        pytest.param(
            {"upstream": "https://github.com/acme/shop.git"},
            "https://github.com/else/where/pull/4",
            False,
            id="no origin, another repository",
        ),
        pytest.param(
            {"origin": "https://github.com/me/shop", "github": "git@github.com:acme/shop"},
            "https://github.com/acme/shop/pull/4",
            True,
            id="a remote named github",
        ),
    ],
)
def test_a_number_matches_the_prs_of_every_remote_of_the_repository(
    tmp_path: Path, remotes: dict[str, str], link: str, found: bool
) -> None:
    """Only ``origin`` was asked: in the clone of a fork (origin ``me/shop``, upstream
    ``acme/shop``), ``from-pr 4`` said "No session is linked to PR #4" for the session
    that opened ``acme/shop#4`` right there, while ``from-pr`` without a number listed
    it. A PR of any remote of the repository is one of its PRs; a PR of a repository no
    remote names is still left out, and a repository without an origin still filters."""
    repo, _ = git_repo_with_worktree(tmp_path)
    for name, url in remotes.items():
        git("remote", "add", name, url, cwd=repo)
    assert _pr_4_found(tmp_path, repo, link) == found


@pytest.fixture(scope="module")
def pr_world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The world below, built and indexed once: its tests only read."""
    base = tmp_path_factory.mktemp("pr-world")
    ids = _pr_world(base)
    assert _run(base, base / "claude", "index").exit_code == 0
    return base, ids


def _pr_world(tmp_path: Path) -> dict[str, str]:
    """Sessions linked to one PR that the listing rules tell apart: hidden, run by
    ``claude -p``, a sidechain file, another branch, and quiet for a year."""
    import time

    tree = ConfigTree(tmp_path / "claude")
    url = "https://github.com/acme/app/pull/7"
    recent = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 3600))
    kinds = {
        "plain": {"start": recent},
        "hidden": {"start": recent},
        "print-mode": {"start": recent, "entrypoint": "sdk-cli"},
        "sidechain": {"start": recent, "is_sidechain": True},
        "other-branch": {"start": recent, "git_branch": "feature/x"},
        "old": {"start": "2025-01-02T09:00:00.000Z"},
    }
    ids = {}
    for name, options in kinds.items():
        s = tree.session(cwd=f"/w/{name}", **options)  # type: ignore[arg-type]
        s.user(f"the {name} session")
        s.assistant("on it")
        s.pr_link(number=7, url=url, repository="acme/app")
        if name == "hidden":
            s.meta("tag", tag="__hidden")
        s.write()
        ids[s.session_id] = name
    return ids


@pytest.mark.parametrize(
    "command",
    [
        ["from-pr", "https://github.com/acme/app/pull/7"],
        ["from-pr", "acme/app#7"],
        ["search", "https://github.com/acme/app/pull/7"],
        ["search", "acme/app#7"],
    ],
    ids=["from-pr-url", "from-pr-shorthand", "search-url", "search-shorthand"],
)
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ([], {"plain", "other-branch", "old"}),
        (["--include-hidden"], {"plain", "other-branch", "old", "hidden"}),
        (["--all-kinds"], {"plain", "other-branch", "old", "hidden", "print-mode", "sidechain"}),
        (["--branch", "feature/x"], {"other-branch"}),
        (["--since", "30d"], {"plain", "other-branch"}),
    ],
    ids=["default", "include-hidden", "all-kinds", "branch", "since"],
)
def test_a_pr_url_widens_the_scope_and_keeps_every_other_filter(
    pr_world: tuple[Path, dict[str, str]],
    command: list[str],
    options: list[str],
    expected: set[str],
) -> None:
    """A URL names one PR, so it is looked up in every project; the hidden, ``-p`` and
    sidechain sessions stayed in and ``--branch`` / ``--since`` were dropped, while a PR
    number obeyed them all."""
    base, ids = pr_world
    result = _run(base, base / "claude", *command, *options, "--json")
    assert result.exit_code == 0, result.output
    assert {ids[r["session_id"]] for r in json.loads(result.stdout)} == expected


@pytest.mark.parametrize(
    ("links", "text", "expected_links", "expected_mentions"),
    [
        (
            ["https://github.com/Org/Repo/pull/3", "https://github.com/org/repo/pull/3"],
            "",
            ["https://github.com/Org/Repo/pull/3"],
            [],
        ),
        (
            [],
            "see github.com/ACME/app/pull/9 and https://github.com/acme/app/pull/9",
            [],
            ["https://github.com/ACME/app/pull/9"],
        ),
        (  # GitLab paths keep their case: two merge requests as far as we can tell
            ["https://gitlab.com/Grp/app/-/merge_requests/4", "https://gitlab.com/grp/app/-/merge_requests/4"],
            "",
            ["https://gitlab.com/Grp/app/-/merge_requests/4", "https://gitlab.com/grp/app/-/merge_requests/4"],
            [],
        ),
    ],
    ids=["github-links", "github-mentions", "gitlab-links"],
)  # fmt: skip
def test_one_github_pr_in_two_cases_is_listed_once(
    tmp_path: Path,
    links: list[str],
    text: str,
    expected_links: list[str],
    expected_mentions: list[str],
) -> None:
    """GitHub owner and repository names ignore case, and from-pr already looked links
    up so; the session object listed such a PR twice (``Org/Repo#3, org/repo#3``)."""
    from sessiondex.transcripts.pr_urls import parse_pr_url

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/app")
    s.user(text or "the capybara module")
    for url in links:
        pr = parse_pr_url(url)
        assert pr is not None
        s.pr_link(number=pr.number, url=url, repository=str(pr.repository))
    s.write()
    result = _run(tmp_path, tree.root, "list", "--scope", "all", "--json")
    (obj,) = json.loads(result.stdout)
    assert [link["url"] for link in obj["pr_links"]] == expected_links
    assert [m["url"] for m in obj["pr_mentions"]] == expected_mentions


def test_a_link_recorded_with_credentials_is_the_pr_without_them(tmp_path: Path) -> None:
    """A ``git push`` over HTTPS with a token prints the URL with it; the link is that
    PR, found by its URL written any way, and the token is kept nowhere in the answer."""
    token = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/shop")
    s.user("push the branch and open the PR")
    s.pr_link(
        number=19,
        url=f"https://x-access-token:{token}@github.com/acme/shop/pull/19",
        repository="acme/shop",
    )
    s.write()
    for args in (
        ["from-pr", "https://github.com/acme/shop/pull/19", "--scope", "all", "--json"],
        ["from-pr", f"https://x-access-token:{token}@github.com/acme/shop/pull/19", "--json"],
        ["search", "https://github.com/acme/shop/pull/19/files", "--scope", "all", "--json"],
    ):
        result = _run(tmp_path, tree.root, *args, "--cwd", "/w/shop")
        assert result.exit_code == 0, (args, result.output)
        [row] = json.loads(result.stdout)
        assert row["session_id"] == s.session_id and token not in result.stdout
        assert [p["url"] for p in row["pr_links"]] == ["https://github.com/acme/shop/pull/19"]
