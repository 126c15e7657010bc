"""Table-driven tests for the single PR/MR URL parser (transcripts/pr_urls.py).

The tables are the contract: every variant a user can paste for each forge must land on
one normalised URL, and everything that only looks like a PR must be refused.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiondex.transcripts.pr_urls import (
    MAX_URL_LENGTH,
    PullRequest,
    find_pr_urls,
    parse_pr_ref,
    parse_pr_url,
)

GH = PullRequest(
    "https://github.com/octo/hello-world/pull/42", 42, "octo/hello-world", "github.com", "github"
)
GHE = PullRequest(
    "https://ghe.corp.example:8443/Team/Repo.js/pull/7",
    7,
    "Team/Repo.js",
    "ghe.corp.example:8443",
    "github",
)
GL = PullRequest(
    "https://gitlab.example.com/grp/sub/proj/-/merge_requests/5",
    5,
    "grp/sub/proj",
    "gitlab.example.com",
    "gitlab",
)
GL2 = PullRequest(
    "https://gitlab.com/g/p/-/merge_requests/1234", 1234, "g/p", "gitlab.com", "gitlab"
)
BB = PullRequest(
    "https://bitbucket.org/ws/my_repo/pull-requests/3",
    3,
    "ws/my_repo",
    "bitbucket.org",
    "bitbucket",
)
BBS = PullRequest(
    "https://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88",
    88,
    "projects/PROJ/repos/svc",
    "git.corp.example:7990",
    "bitbucket",
)
GERRIT = PullRequest(
    "https://go-review.googlesource.com/c/go/+/512345",
    512345,
    "go",
    "go-review.googlesource.com",
    "gerrit",
)
GERRIT_DEEP = PullRequest(
    "https://review.example.org/c/platform/tools/build/+/99",
    99,
    "platform/tools/build",
    "review.example.org",
    "gerrit",
)

PASTED: list[tuple[str, PullRequest]] = [
    # --- GitHub
    ("https://github.com/octo/hello-world/pull/42", GH),
    ("http://github.com/octo/hello-world/pull/42", GH),
    ("github.com/octo/hello-world/pull/42", GH),
    ("https://github.com/octo/hello-world/pull/42/", GH),
    ("https://github.com/octo/hello-world/pull/42/files", GH),
    ("https://github.com/octo/hello-world/pull/42/files/", GH),
    ("https://github.com/octo/hello-world/pull/42/commits", GH),
    ("https://github.com/octo/hello-world/pull/42/commits/0123abcd", GH),
    ("https://github.com/octo/hello-world/pull/42/checks", GH),
    ("https://github.com/octo/hello-world/pull/42#discussion_r123456", GH),
    ("https://github.com/octo/hello-world/pull/42/files#diff-abc123R10", GH),
    ("https://github.com/octo/hello-world/pull/42?notification_referrer_id=x&w=1", GH),
    ("HTTPS://GitHub.COM/octo/hello-world/pull/42", GH),
    ("https://github.com/octo/hello-world/pull/0042", GH),
    ("  https://github.com/octo/hello-world/pull/42\n", GH),
    ("<https://github.com/octo/hello-world/pull/42>", GH),
    ('"https://github.com/octo/hello-world/pull/42"', GH),
    ("'github.com/octo/hello-world/pull/42'", GH),
    ("`https://github.com/octo/hello-world/pull/42`", GH),
    ("(https://github.com/octo/hello-world/pull/42).", GH),
    ("https://github.com/octo/hello-world/pull/42.", GH),
    ("https://github.com/octo/hello-world/pull/42,", GH),
    ("https://www.github.com/octo/hello-world/pull/42", GH),  # GitHub redirects www.
    ("WWW.GitHub.com/octo/hello-world/pull/42/files", GH),
    # --- GitHub Enterprise (any other host, port kept, path case kept)
    ("https://ghe.corp.example:8443/Team/Repo.js/pull/7", GHE),
    ("http://GHE.Corp.Example:8443/Team/Repo.js/pull/7/", GHE),
    ("ghe.corp.example:8443/Team/Repo.js/pull/7/files", GHE),
    ("https://ghe.corp.example:8443/Team/Repo.js/pull/7#issuecomment-1", GHE),
    # --- credentials in the URL (a token in a git remote) are never part of the PR
    (
        "https://x-access-token:ghs_16C7e42F292c6912E7710c838347Ae178B4a@github.com/octo/hello-world/pull/42",
        GH,
    ),
    ("https://oauth2:glpat-AbCdEf123456@gitlab.example.com/grp/sub/proj/-/merge_requests/5", GL),
    ("https://ann@github.com/octo/hello-world/pull/42/files", GH),
    # --- a port that is the scheme's default, written out, is the same server
    ("https://github.com:443/octo/hello-world/pull/42", GH),
    ("https://www.GitHub.com:443/octo/hello-world/pull/42/files", GH),
    ("http://github.com:80/octo/hello-world/pull/42", GH),
    ("github.com:443/octo/hello-world/pull/42", GH),
    ("https://gitlab.example.com:443/grp/sub/proj/-/merge_requests/5", GL),
    # --- GitLab
    ("https://gitlab.example.com/grp/sub/proj/-/merge_requests/5", GL),
    ("http://gitlab.example.com/grp/sub/proj/-/merge_requests/5", GL),
    ("gitlab.example.com/grp/sub/proj/-/merge_requests/5", GL),
    ("https://gitlab.example.com/grp/sub/proj/-/merge_requests/5/", GL),
    ("https://gitlab.example.com/grp/sub/proj/-/merge_requests/5/diffs", GL),
    ("https://gitlab.example.com/grp/sub/proj/-/merge_requests/5/diff", GL),
    ("https://gitlab.example.com/grp/sub/proj/-/merge_requests/5/commits", GL),
    ("https://gitlab.example.com/grp/sub/proj/-/merge_requests/5/pipelines", GL),
    ("https://gitlab.example.com/grp/sub/proj/-/merge_requests/5#note_998877", GL),
    ("https://gitlab.example.com/grp/sub/proj/-/merge_requests/5?tab=overview", GL),
    ("https://GITLAB.Example.com/grp/sub/proj/-/merge_requests/005", GL),
    ("<gitlab.example.com/grp/sub/proj/-/merge_requests/5>", GL),
    ("https://gitlab.com/g/p/-/merge_requests/1234", GL2),
    ("gitlab.com/g/p/-/merge_requests/1234/diffs?diff_id=5#abc", GL2),
    ("https://www.gitlab.com/g/p/-/merge_requests/1234", GL2),
    # --- Bitbucket Cloud
    ("https://bitbucket.org/ws/my_repo/pull-requests/3", BB),
    ("http://bitbucket.org/ws/my_repo/pull-requests/3", BB),
    ("bitbucket.org/ws/my_repo/pull-requests/3", BB),
    ("https://bitbucket.org/ws/my_repo/pull-requests/3/", BB),
    ("https://bitbucket.org/ws/my_repo/pull-requests/3/diff", BB),
    ("https://bitbucket.org/ws/my_repo/pull-requests/3/commits", BB),
    ("https://bitbucket.org/ws/my_repo/pull-requests/3/overview", BB),
    ("https://bitbucket.org/ws/my_repo/pull-requests/3#comment-123", BB),
    ("https://bitbucket.org/ws/my_repo/pull-requests/3?w=1", BB),
    ("https://BitBucket.ORG/ws/my_repo/pull-requests/3", BB),
    ("https://www.bitbucket.org/ws/my_repo/pull-requests/3", BB),
    # --- Bitbucket Server / Data Center
    ("https://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88", BBS),
    ("http://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88", BBS),
    ("git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88", BBS),
    ("https://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88/", BBS),
    ("https://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88/overview", BBS),
    ("https://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88/diff", BBS),
    ("https://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88/commits", BBS),
    ("https://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88#c1", BBS),
    ("https://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88?at=x", BBS),
    ("https://GIT.CORP.EXAMPLE:7990/projects/PROJ/repos/svc/pull-requests/88", BBS),
    # --- Gerrit
    ("https://go-review.googlesource.com/c/go/+/512345", GERRIT),
    ("http://go-review.googlesource.com/c/go/+/512345", GERRIT),
    ("go-review.googlesource.com/c/go/+/512345", GERRIT),
    ("https://go-review.googlesource.com/c/go/+/512345/", GERRIT),
    ("https://go-review.googlesource.com/c/go/+/512345/3", GERRIT),
    ("https://go-review.googlesource.com/c/go/+/512345/3/src/net/http/server.go", GERRIT),
    ("https://go-review.googlesource.com/c/go/+/512345#message-abc", GERRIT),
    ("https://go-review.googlesource.com/c/go/+/512345?tab=comments", GERRIT),
    ("https://Go-Review.GoogleSource.com/c/go/+/512345", GERRIT),
    ("https://review.example.org/c/platform/tools/build/+/99", GERRIT_DEEP),
    ("review.example.org/c/platform/tools/build/+/99/1..2", GERRIT_DEEP),
]


@pytest.mark.parametrize(("text", "expected"), PASTED)
def test_parse_pasted_variants(text: str, expected: PullRequest) -> None:
    pr = parse_pr_url(text)
    assert pr == expected
    assert pr is not None
    assert pr.as_dict() == {
        "url": expected.url,
        "number": expected.number,
        "repository": expected.repository,
        "host": expected.host,
        "provider": expected.provider,
    }
    # The normalised form is a fixed point.
    assert parse_pr_url(pr.url) == pr


def test_every_provider_has_at_least_eight_variants() -> None:
    counts: dict[str, int] = {}
    for _, pr in PASTED:
        counts[pr.provider] = counts.get(pr.provider, 0) + 1
    assert set(counts) == {"github", "gitlab", "bitbucket", "gerrit"}
    assert all(n >= 8 for n in counts.values()), counts


NOT_PRS = [
    "",
    "   ",
    "fix the login bug",
    "42",
    "#42",
    "PR #42",
    "https://github.com/o/r/issues/5",
    "https://github.com/o/pull/5",
    "https://github.com/pull/5",
    "github.com/o/r/pull/abc",
    "https://github.com/o/r/pull/",
    "https://github.com/o/r/pull/0",
    "https://github.com/o/r/pull/000",
    "https://github.com/o/r/pull/-3",
    "https://github.com/o/r/pull/12abc",
    "https://github.com/o/r/pull/new/feature-branch",
    "https://github.com/o/r/pulls",
    "https://github.com/o/r/pull/5 and more words",
    "see https://github.com/o/r/pull/5",
    "https://github.com/./r/pull/5",
    "https://github.com/o/../pull/5",
    "https://github.com/-o/r/pull/5",
    "https://github.com/o/r/tree/main/pull/5",
    "https://-bad-.com/o/r/pull/5",
    "https://exa mple.com/o/r/pull/5",
    "https:///o/r/pull/5",
    "ftp://github.com/o/r/pull/5",
    "src/o/r/pull/5",
    "localhost/o/r/pull/5",
    "https://github.com/o/r/pull/" + "9" * 25,
    "https://github.com/o/r/pull/99999999999999999999",
    "https://gitlab.com/g/p/merge_requests/5",
    "https://gitlab.com/p/-/merge_requests/5",
    "https://gitlab.com/g/p/-/merge_requests/new",
    "https://gitlab.com/g/p/-/issues/5",
    "https://bitbucket.org/ws/repo/pull-requests/new?source=feat",
    "https://bitbucket.org/repo/pull-requests/3",
    "https://git.corp/projects/PROJ/repos/pull-requests/3",
    "https://review.example.org/c/+/99",
    "https://review.example.org/c/proj/+/abc",
    "https://review.example.org/q/status:open",
    "https://github.com/o/r/pull/5\nhttps://github.com/o/r/pull/6",
    "a" * 100_000,
    "https://github.com/o/r/pull/5" + "/x" * 10_000,
]


@pytest.mark.parametrize("text", NOT_PRS)
def test_non_prs_are_refused(text: str) -> None:
    assert parse_pr_url(text) is None


@pytest.mark.parametrize(
    ("text", "host"),
    [
        # Only the web's defaults go, whatever the scheme pasted: the normal form drops
        # the http/https difference, so a port cannot depend on it.
        ("https://ghe.corp.example:80/Team/Repo.js/pull/7", "ghe.corp.example"),
        ("http://ghe.corp.example:80/Team/Repo.js/pull/7", "ghe.corp.example"),
        ("ghe.corp.example:80/Team/Repo.js/pull/7", "ghe.corp.example"),
        ("http://ghe.corp.example:443/Team/Repo.js/pull/7", "ghe.corp.example"),
        ("HTTPS://GHE.corp.example:443/Team/Repo.js/pull/7", "ghe.corp.example"),
        # These name other servers.
        ("http://ghe.corp.example:8080/Team/Repo.js/pull/7", "ghe.corp.example:8080"),
        ("https://ghe.corp.example:4430/Team/Repo.js/pull/7", "ghe.corp.example:4430"),
        ("ghe.corp.example:8443/Team/Repo.js/pull/7", "ghe.corp.example:8443"),
    ],
)
def test_ports_default_or_kept(text: str, host: str) -> None:
    pr = parse_pr_url(text)
    assert pr is not None and pr.host == host
    assert pr.url == f"https://{host}/Team/Repo.js/pull/7"
    assert find_pr_urls(f"opened {text} for review") == [pr]


def test_url_length_cap() -> None:
    long_group = "/".join(["g" * 60] * 40)  # a GitLab path over 2048 chars
    url = f"https://gitlab.com/{long_group}/p/-/merge_requests/1"
    assert len(url) > MAX_URL_LENGTH
    assert parse_pr_url(url) is None
    assert find_pr_urls(url) == []


# ---------------------------------------------------------------------------
# find_pr_urls on realistic output

GH_PR_CREATE = """\
Creating pull request for feat/login into main in octo/hello-world

https://github.com/octo/hello-world/pull/42
"""

GLAB_MR_CREATE = """\
Creating merge request for feat into main in grp/sub/proj

!5 Add login (feat)
 https://gitlab.example.com/grp/sub/proj/-/merge_requests/5
"""

GITLAB_PUSH = """\
Enumerating objects: 5, done.
remote:
remote: View merge request for x:
remote:   https://gitlab.example.com/g/p/-/merge_requests/5
remote:
To gitlab.example.com:g/p.git
   1a2b3c4..5d6e7f8  x -> x
"""

GITLAB_PUSH_NEW = """\
remote: To create a merge request for feat, visit:
remote:   https://gitlab.com/g/p/-/merge_requests/new?merge_request%5Bsource_branch%5D=feat
"""

GITHUB_PUSH_NEW = """\
remote: Create a pull request for 'feat' on GitHub by visiting:
remote:      https://github.com/octo/hello-world/pull/new/feat
To github.com:octo/hello-world.git
 * [new branch]      feat -> feat
"""

GERRIT_PUSH = """\
remote: SUCCESS
remote:
remote:   https://go-review.googlesource.com/c/go/+/512345 net/http: fix it [NEW]
remote:
To https://go.googlesource.com/go
 * [new reference]   HEAD -> refs/for/master
"""

BITBUCKET_PUSH = """\
remote: Create pull request for feat:
remote:   https://bitbucket.org/ws/my_repo/pull-requests/new?source=feat&t=1
"""

FIND_CASES: list[tuple[str, list[str]]] = [
    (GH_PR_CREATE, ["https://github.com/octo/hello-world/pull/42"]),
    (GLAB_MR_CREATE, ["https://gitlab.example.com/grp/sub/proj/-/merge_requests/5"]),
    (GITLAB_PUSH, ["https://gitlab.example.com/g/p/-/merge_requests/5"]),
    (GITLAB_PUSH_NEW, []),
    (GITHUB_PUSH_NEW, []),
    (GERRIT_PUSH, ["https://go-review.googlesource.com/c/go/+/512345"]),
    (BITBUCKET_PUSH, []),
    (
        "Opened [#12](https://github.com/o/r/pull/12) for review.",
        ["https://github.com/o/r/pull/12"],
    ),
    ("See https://github.com/o/r/pull/12.", ["https://github.com/o/r/pull/12"]),
    (
        "remote: https://oauth2:glpat-AbCdEf123456@gitlab.example.com/g/p/-/merge_requests/7",
        ["https://gitlab.example.com/g/p/-/merge_requests/7"],
    ),
    # An address before a host is no credential: the host is not glued to a scheme.
    ("mail ann@github.com/o/r/pull/3 now", []),
    ("(see https://github.com/o/r/pull/12)", ["https://github.com/o/r/pull/12"]),
    (
        "PRs: https://github.com/o/r/pull/1, https://github.com/o/r/pull/2; done",
        [
            "https://github.com/o/r/pull/1",
            "https://github.com/o/r/pull/2",
        ],
    ),
    (
        "https://github.com/o/r/pull/3 then http://GitHub.com/o/r/pull/3/files and "
        "github.com/o/r/pull/003#x again, then https://github.com/o/r/pull/2",
        ["https://github.com/o/r/pull/3", "https://github.com/o/r/pull/2"],
    ),
    (
        "mixed: <https://bitbucket.org/ws/my_repo/pull-requests/3> and "
        "'https://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88/overview' and "
        '"gitlab.com/g/p/-/merge_requests/1234"',
        [
            "https://bitbucket.org/ws/my_repo/pull-requests/3",
            "https://git.corp.example:7990/projects/PROJ/repos/svc/pull-requests/88",
            "https://gitlab.com/g/p/-/merge_requests/1234",
        ],
    ),
    ('{"url":"https://github.com/o/r/pull/77"}', ["https://github.com/o/r/pull/77"]),
    ("URL:https://github.com/o/r/pull/5", ["https://github.com/o/r/pull/5"]),
    ("https://github.com/o/r/issues/5 and https://github.com/o/r/pull/12abc", []),
    ("see src/o/r/pull/5 and foo/github.com/o/r/pull/6", []),
    ("no pull requests here at all", []),
    ("", []),
]


@pytest.mark.parametrize(("text", "expected"), FIND_CASES)
def test_find_pr_urls(text: str, expected: list[str]) -> None:
    found = find_pr_urls(text)
    assert [pr.url for pr in found] == expected
    for pr in found:
        assert parse_pr_url(pr.url) == pr


def test_find_last_link_for_gh_pr_create_is_last_element() -> None:
    text = GH_PR_CREATE + "\nAlso related: https://github.com/octo/other/pull/9\n"
    assert find_pr_urls(text)[-1].url == "https://github.com/octo/other/pull/9"


# A hang guard, not a speed goal (those live in bench/): a pattern that backtracks on
# long slash runs takes hours here, a linear one well under a second.
@pytest.mark.timeout(60)
def test_find_does_not_backtrack_on_large_text() -> None:
    noise = "lorem ipsum dolor sit amet /usr/lib/python3/site-packages/foo.py:12 " * 2000
    big = (noise + "https://github.com/o/r/pull/1 ") * 50  # ~6.8 MB with one URL
    plain = noise * 50  # no marker at all: pre-check only
    slashes = ("a.b/" + "x/" * 5000 + " merge_requests/ ") * 20
    assert [pr.number for pr in find_pr_urls(big)] == [1]
    assert find_pr_urls(plain) == []
    assert find_pr_urls(slashes) == []


# ---------------------------------------------------------------------------
# Properties


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_parse_never_raises(text: str) -> None:
    result = parse_pr_url(text)
    assert result is None or isinstance(result, PullRequest)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_find_never_raises(text: str) -> None:
    assert all(isinstance(pr, PullRequest) for pr in find_pr_urls(text))


@settings(max_examples=300)
@given(
    st.lists(
        st.sampled_from(
            [
                "https://github.com/o/r/pull/",
                "/-/merge_requests/",
                "/+/",
                "pull-requests/",
                "/c/",
                "/",
            ]
        )
        | st.text(max_size=8),
        max_size=12,
    ).map("".join)
)
def test_never_raises_on_marker_soup(text: str) -> None:
    parse_pr_url(text)
    find_pr_urls(text)


_label = st.from_regex(r"\A[a-zA-Z0-9]([a-zA-Z0-9-]{0,8}[a-zA-Z0-9])?\Z")
_host = st.tuples(
    st.lists(_label, min_size=1, max_size=3),
    st.sampled_from(["com", "org", "example", "io"]),
    st.none() | st.sampled_from([80, 443, 8080]) | st.integers(min_value=1, max_value=65535),
).map(lambda t: ".".join([*t[0], t[1]]) + ("" if t[2] is None else f":{t[2]}"))
_seg = st.from_regex(r"\A[A-Za-z0-9_.][A-Za-z0-9_.-]{0,10}\Z").filter(
    lambda s: s not in (".", "..")
)
_number = st.integers(min_value=1, max_value=10**12)


@st.composite
def _pr_urls(draw: st.DrawFn) -> tuple[str, str, int]:
    host = draw(_host)
    number = draw(_number)
    kind = draw(st.sampled_from(["github", "gitlab", "bitbucket", "bitbucket-server", "gerrit"]))
    if kind == "github":
        path = f"{draw(_seg)}/{draw(_seg)}/pull/{number}"
    elif kind == "gitlab":
        path = (
            "/".join(draw(st.lists(_seg, min_size=2, max_size=4))) + f"/-/merge_requests/{number}"
        )
    elif kind == "bitbucket":
        path = f"{draw(_seg)}/{draw(_seg)}/pull-requests/{number}"
    elif kind == "bitbucket-server":
        path = f"projects/{draw(_seg)}/repos/{draw(_seg)}/pull-requests/{number}"
    else:
        path = "c/" + "/".join(draw(st.lists(_seg, min_size=1, max_size=3))) + f"/+/{number}"
    provider = "bitbucket" if kind == "bitbucket-server" else kind
    return f"https://{host}/{path}", provider, number


@settings(max_examples=250)
@given(
    _pr_urls(),
    st.sampled_from(["", "/", "/files", "/diff", "#frag", "?q=1", "/commits#x"]),
    st.sampled_from(["https://", "http://", "", "HTTPS://"]),
    st.booleans(),
)
def test_generated_prs_normalise_idempotently(
    generated: tuple[str, str, int], suffix: str, scheme: str, upper_host: bool
) -> None:
    url, provider, number = generated
    pr = parse_pr_url(url)
    assert pr is not None, url
    rest = url[len("https://") :]
    host, _, path = rest.partition("/")
    name, _, port = host.lower().partition(":")
    expected_host = name if port in ("", "80", "443") else f"{name}:{port}"
    assert pr.url == f"https://{expected_host}/{path}"
    assert (pr.provider, pr.number, pr.host) == (provider, number, expected_host)
    assert parse_pr_url(pr.url) == pr
    # Every pasted variant of it lands on the same PR, and so does finding it in text.
    variant = scheme + (host.upper() if upper_host else host) + "/" + path + suffix
    assert parse_pr_url(variant) == pr
    assert find_pr_urls(f"see {variant}. and ({url})") == [pr]


# ---- GitHub's owner/repo#123 shorthand, wherever a URL is accepted -----------------------


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("acme/shop#12", "https://github.com/acme/shop/pull/12"),
        (" 'acme/shop.js#3' ", "https://github.com/acme/shop.js/pull/3"),
        ("my-org/my_repo#7", "https://github.com/my-org/my_repo/pull/7"),
        ("https://github.com/acme/shop/pull/12/files", "https://github.com/acme/shop/pull/12"),
        ("acme/shop#0", None),
        ("acme/shop #12", None),
        ("acme/..#1", None),
        ("-acme/shop#1", None),
        ("acme/shop#12x", None),
        ("shop#12", None),
        ("#12", None),
    ],
)
def test_pr_shorthand_parser(text: str, url: str | None) -> None:
    pr = parse_pr_ref(text)
    assert (pr.url if pr else None) == url


def test_plain_words_never_compile_the_pr_patterns() -> None:
    """Every search asks whether its query is a PR; for plain words the answer needs no
    regular expression (compiling them is ~3 ms of a search process's start-up)."""
    import subprocess
    import sys

    code = (
        "from sessiondex.transcripts import pr_urls as p\n"
        "for q in ('auth refactor', 'fix #12', 'a/b', 'error handling', ''):\n"
        "    assert p.parse_pr_ref(q) is None\n"
        "print(p._pr_re.cache_info().currsize, p._shorthand_re.cache_info().currsize)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # 'a/b' has a path: the URL pattern is compiled for it; nothing has both "/" and "#"
    assert out.stdout.split() == ["1", "0"]
