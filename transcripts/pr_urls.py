"""The one parser and normaliser for pull/merge-request URLs.

Every place that turns text into a PR link goes through here: the indexer (``pr-link``
records, and URLs mentioned in tool output and messages), ``search`` (a pasted URL
becomes a PR lookup) and ``from-pr``. One parser means one normalised form, so a URL
stored by the indexer and the same URL pasted by a user compare equal as strings.

Accepted shapes (docs/pull-requests.md#accepted-shapes), on any host:

========================  ==========================================================
GitHub / GH Enterprise    ``<host>/<owner>/<repo>/pull/<n>``
GitLab (any depth)        ``<host>/<group>[/<subgroup>…]/<project>/-/merge_requests/<n>``
Bitbucket Cloud           ``<host>/<workspace>/<repo>/pull-requests/<n>``
Bitbucket Server / DC     ``<host>/projects/<P>/repos/<r>/pull-requests/<n>``
Gerrit                    ``<host>/c/<project path>/+/<n>``
========================  ==========================================================

A user may also type GitHub's shorthand ``owner/repo#123`` wherever a URL is accepted
(``search``, ``from-pr``): :func:`parse_pr_ref` reads it as
``https://github.com/owner/repo/pull/123``, the URL it stands for on GitHub.

Normalised form: ``https://`` + lower-cased host (credentials before it dropped, as a
``git push`` over HTTPS prints them: ``https://x-access-token:…@github.com/…``; the port
kept unless it is one of the web's defaults, 443 or 80; ``www.`` dropped from
github.com, gitlab.com and bitbucket.org, which redirect it) + the canonical path
above, with no trailing slash, sub-page (``/files``, ``/diffs``, patch sets…), query or
fragment. Path case is kept, because forges treat owner/repo case inconsistently and the
URL Claude Code recorded keeps it.

``provider`` is ``github`` (GitHub Enterprise too: the CLI contract has no separate
value), ``gitlab``, ``bitbucket`` (Cloud and Server) or ``gerrit``. ``gerrit`` is an
extension of the JSON contract (docs/pull-requests.md#json-shape), which lists only the first three; Claude Code
links Gerrit change URLs printed by ``git push``, so the index must be able to hold them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

__all__ = [
    "PullRequest",
    "canonical_host",
    "parse_pr_url",
    "parse_pr_ref",
    "find_pr_urls",
    "MAX_URL_LENGTH",
]

#: Claude Code refuses to record a PR URL longer than this (docs/pull-requests.md#where-pr-data-comes-from).
MAX_URL_LENGTH = 2048

# Anything above this is not something a user pasted; refusing early keeps every call
# cheap whatever the input.
_MAX_PASTE_LENGTH = 8192

# SQLite INTEGER is signed 64-bit; a larger "number" could not be stored or compared.
_MAX_NUMBER = 2**63 - 1

# A DNS label: letters/digits, inner hyphens, at most 63 characters.
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = rf"(?:{_LABEL}\.)*{_LABEL}(?::[0-9]{{1,5}})?"
# An owner/repo/group segment: ``[A-Za-z0-9_.][\w.-]*``, never ``.`` or ``..``. Every
# segment is followed by ``/`` in all shapes, which the look-ahead relies on. A segment
# never starts with ``-`` or contains ``+``, so GitLab's ``/-/`` and Gerrit's ``/+/``
# cannot be swallowed by a path.
_SEG = r"(?!\.\.?/)[A-Za-z0-9_.][A-Za-z0-9_.-]*"
# Up to 20 digits and then no more word characters: ``/pull/12abc`` and ``/pull/new``
# are not PRs, and the digit cap keeps ``int()`` away from huge strings.
_NUM = r"[0-9]{1,20}(?![A-Za-z0-9_-])"

# The order of the alternatives matters for ambiguous paths: GitLab and Gerrit take
# multi-segment paths and, being greedy, settle on the *last* ``/-/merge_requests/N`` or
# ``/+/N``; the fixed-depth shapes come after. This also makes normalisation
# idempotent: no normalised URL of one provider can be read as another's.
_PR_PATTERN = rf"""
    (?:
        (?<![A-Za-z0-9+.-])(?P<scheme>(?i:https?)://)   # scheme, not glued to a word
        (?:[^\s/?\#@\[\]]{{1,256}}@)?                      # credentials (never kept)
      | (?<![A-Za-z0-9_.@/-])                           # or a bare host at a boundary
    )
    (?P<host>{_HOST})
    /
    (?:
        (?P<gl_path>{_SEG}(?:/{_SEG})+)/-/merge_requests/(?P<gl_n>{_NUM})
      | c/(?P<ge_path>{_SEG}(?:/{_SEG})*)/\+/(?P<ge_n>{_NUM})
      | projects/(?P<bbs_proj>{_SEG})/repos/(?P<bbs_repo>{_SEG})/pull-requests/(?P<bbs_n>{_NUM})
      | (?P<bb_ws>{_SEG})/(?P<bb_repo>{_SEG})/pull-requests/(?P<bb_n>{_NUM})
      | (?P<gh_owner>{_SEG})/(?P<gh_repo>{_SEG})/pull/(?P<gh_n>{_NUM})
    )
    """

# What may follow the number in a pasted URL: a sub-page (``/files``, ``/diff``,
# ``/commits/<sha>``, a Gerrit patch set ``/3``…), then an optional query and fragment.
_PASTE_TAIL_PATTERN = r"(?:/[^\s?#]*)?(?:\?[^\s#]*)?(?:#\S*)?\Z"

# Wrappers people paste around a URL, and punctuation a sentence leaves after it.
_LEADING_JUNK = "<([{\"'`"
_TRAILING_JUNK = ">)]}\"'`.,;:!?"

# Substrings at least one of which every PR URL contains; checked before the regex so
# large tool outputs without any PR cost one or two ``in`` scans.


# The public forges answer on www. too and send it to their one host: a link written
# either way is one PR (``from-pr``, de-duplication, the origin remote it belongs to).
FORGE_HOST_ALIASES = {
    "www.github.com": "github.com",
    "www.gitlab.com": "gitlab.com",
    "www.bitbucket.org": "bitbucket.org",
}


def canonical_host(host: str) -> str:
    """A host in lower case, and a public forge's ``www.`` alias as the forge's own host:
    one rule for PR links and for the remotes they are matched against
    (``transcripts/remotes.py``)."""
    lowered = host.lower()
    return FORGE_HOST_ALIASES.get(lowered, lowered)


# Characters a URL spells %-encoded: as given, they end an href or a Markdown autolink.
_NOT_IN_URLS = frozenset('"<>\\^`{|}')


def unknown_forge_link(url: str, number: int) -> tuple[str, str] | None:
    """The normalised URL and host of a ``pr-link`` record's ``prUrl`` that
    :func:`parse_pr_url` does not know (a forge it cannot parse, kept rather than lost),
    when the text is a web URL at all: ``http(s)``, a dotted host, and no whitespace,
    control or format character (a newline, an escape, a bidi override) nor one a URL
    spells %-encoded. None: no link (``urlsplit`` alone would drop a newline and accept
    the rest). Normalised as a known forge's URL is, as far as a path we cannot read
    allows: ``https://``, the host in lower case without credentials or a default port,
    the path without a trailing slash, and no query or fragment when the PR's
    ``number`` is a segment of the path (else they hold it, and stay)."""
    if not is_link_text(url) or any(ch in _NOT_IN_URLS for ch in url):
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or "." not in host:
        return None
    host = canonical_host(_without_default_port(host if port is None else f"{host}:{port}"))
    path = parts.path.rstrip("/")
    if str(number) not in path.split("/"):
        # The PR's number is not a segment of the path, so the query or fragment holds
        # it (a Gerrit of old: /#/c/12345/; Phabricator: /D?id=7): kept, or every PR of
        # that forge would be one URL.
        tail = (f"?{parts.query}" if parts.query else "") + (
            f"#{parts.fragment.rstrip('/')}" if parts.fragment else ""
        )
        return f"https://{host}{path}{tail}", host
    return f"https://{host}{path}", host


def is_link_text(url: str) -> bool:
    """Whether a ``prUrl`` may be a link at all: no whitespace, control or format
    character, whatever the forge (its parser takes what comes before them)."""
    return bool(url) and not any(ch.isspace() or not ch.isprintable() for ch in url)


def pr_identity(url: str, provider: str | None) -> str:
    """The key two normalized PR URLs share when they name the same PR: the URL, in
    lower case on GitHub, whose owner and repository names ignore case
    (``Acme/Shop/pull/12`` is ``acme/shop/pull/12``; ``query/prs.py`` looks them up so)."""
    return url.lower() if provider == "github" else url


@dataclass(frozen=True)
class PullRequest:
    """One pull/merge request, identified by its normalised URL.

    ``repository`` is the path between the host and the PR segment (``owner/repo``,
    ``group/sub/project``, ``workspace/repo``, ``projects/PROJ/repos/repo`` for Bitbucket
    Server), the value Claude Code stores as ``prRepository`` (docs/pull-requests.md#normalized-form);
    for Gerrit, the project path between ``/c/`` and ``/+/``.
    """

    url: str
    number: int
    repository: str
    host: str
    provider: str

    def as_dict(self) -> dict[str, object]:
        """The ``pr_links`` / ``pr_mentions`` object of the JSON output (docs/pull-requests.md#json-shape)."""
        return {
            "url": self.url,
            "number": self.number,
            "repository": self.repository,
            "host": self.host,
            "provider": self.provider,
        }


def _without_default_port(host: str) -> str:
    """``host:443`` and ``host:80`` are ``host``: the web's default ports, written out.
    The normalised form drops the ``http``/``https`` difference, so which default a
    port is cannot depend on the scheme pasted (``http://h:80``, ``h:80`` and
    ``https://h:80`` name one PR). Any other port names another server and stays."""
    name, colon, port = host.rpartition(":")
    if colon and int(port) in (80, 443):
        return name
    return host


def _build(match: re.Match[str]) -> PullRequest | None:
    """Turn a regex match into a normalised :class:`PullRequest`, or ``None``.

    Checks the regex cannot express: a bare (scheme-less) host needs a dot, so words
    and relative paths such as ``src/o/r/pull/1`` are not taken for hosts; the number
    must be positive and fit SQLite; the URL must respect Claude Code's length cap.
    """
    host = match["host"].lower()
    if match["scheme"] is None and "." not in host:
        return None
    host = canonical_host(_without_default_port(host))
    if match["gl_n"] is not None:
        provider, repository, digits = "gitlab", match["gl_path"], match["gl_n"]
        path = f"{repository}/-/merge_requests/"
    elif match["ge_n"] is not None:
        provider, repository, digits = "gerrit", match["ge_path"], match["ge_n"]
        path = f"c/{repository}/+/"
    elif match["bbs_n"] is not None:
        provider, digits = "bitbucket", match["bbs_n"]
        repository = f"projects/{match['bbs_proj']}/repos/{match['bbs_repo']}"
        path = f"{repository}/pull-requests/"
    elif match["bb_n"] is not None:
        provider, digits = "bitbucket", match["bb_n"]
        repository = f"{match['bb_ws']}/{match['bb_repo']}"
        path = f"{repository}/pull-requests/"
    else:
        provider, digits = "github", match["gh_n"]
        repository = f"{match['gh_owner']}/{match['gh_repo']}"
        path = f"{repository}/pull/"
    number = int(digits)
    if not 0 < number <= _MAX_NUMBER:
        return None
    url = f"https://{host}/{path}{number}"
    if len(url) > MAX_URL_LENGTH:
        return None
    return PullRequest(url=url, number=number, repository=repository, host=host, provider=provider)


def parse_pr_url(text: str) -> PullRequest | None:
    """A URL a user pasted (the whole string) → the normalised PR, else ``None``.

    Tolerates what copy-paste brings along: surrounding whitespace, ``<…>``, quotes or
    brackets, a trailing ``.``/``,``/``)``, no scheme or ``http``, an upper-case host,
    and anything after the number that stays on the same page (``/files``, ``/diff``,
    ``/commits``, ``/changes``, ``/overview``, ``?query``, ``#fragment``). Anything else
    around the URL makes it not a URL but a search query, so it returns ``None``.
    Never raises, whatever ``text`` is.
    """
    if not isinstance(text, str) or len(text) > _MAX_PASTE_LENGTH:
        return None
    candidate = text.strip()
    while True:
        stripped = candidate.lstrip(_LEADING_JUNK).rstrip(_TRAILING_JUNK).strip()
        if stripped == candidate:
            break
        candidate = stripped
    if "/" not in candidate:  # every shape has a path
        return None
    match = _pr_re().match(candidate)
    if match is None or _paste_tail_re().match(candidate, match.end()) is None:
        return None
    return _build(match)


# GitHub's ``owner/repo#123``: an owner is letters, digits and inner hyphens; a repository
# name also takes ``.`` and ``_`` (never ``.`` or ``..`` alone).
_SHORTHAND_PATTERN = (
    r"(?P<owner>[A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/(?P<repo>(?!\.\.?#)[A-Za-z0-9_.-]{1,100})"
    r"#(?P<n>[0-9]{1,20})\Z"
)


@cache
def _pr_re() -> re.Pattern[str]:
    """The patterns are compiled on first use: ~3 ms of every process's start-up
    otherwise, which a search for plain words never needs."""
    return re.compile(_PR_PATTERN, re.VERBOSE | re.ASCII)


@cache
def _paste_tail_re() -> re.Pattern[str]:
    return re.compile(_PASTE_TAIL_PATTERN)


@cache
def _shorthand_re() -> re.Pattern[str]:
    return re.compile(_SHORTHAND_PATTERN, re.ASCII)


def parse_pr_ref(text: str) -> PullRequest | None:
    """What a user typed to name one PR: a URL (:func:`parse_pr_url`) or GitHub's
    ``owner/repo#123`` shorthand (surrounding whitespace and quotes tolerated), else
    ``None``. The shorthand means github.com, as it does on GitHub; never raises."""
    found = parse_pr_url(text)
    if found is not None or not isinstance(text, str) or len(text) > _MAX_PASTE_LENGTH:
        return found
    if "#" not in text or "/" not in text:
        return None
    match = _shorthand_re().match(text.strip().strip("\"'`"))
    if match is None:
        return None
    number = int(match["n"])
    if not 0 < number <= _MAX_NUMBER:
        return None
    repository = f"{match['owner']}/{match['repo']}"
    return PullRequest(
        url=f"https://github.com/{repository}/pull/{number}",
        number=number,
        repository=repository,
        host="github.com",
        provider="github",
    )


def parse_pr_number(text: str) -> int | None:
    """``12`` or ``#12`` → 12 (a PR number given alone), else ``None``: ASCII digits, as
    in a URL, and within the bounds a URL's number has (SQLite's INTEGER)."""
    value = text.strip().removeprefix("#")
    if not (value.isascii() and value.isdigit()):
        return None
    number = int(value)
    return number if 0 < number <= _MAX_NUMBER else None


def find_pr_urls(text: str) -> list[PullRequest]:
    """Every PR/MR URL inside free text, normalised, de-duplicated, first-seen order.

    Meant for tool output and message bodies, which can be megabytes: a cheap substring
    test skips texts with no PR marker at all, and the single precompiled regex only
    starts a match at a word boundary. A URL followed by ``.``, ``)``, ``,`` or a
    markdown ``](`` is still found; ``…/pull/new/branch`` (a ``git push`` hint) is not.
    """
    if not isinstance(text, str) or not (
        "/pull" in text or "merge_requests/" in text or ("+" in text and "/+/" in text)
    ):
        # Every shape's path holds one of these. Three scans, not one per marker:
        # "/pull" covers /pull/ and /pull-requests/, and the slow three-character "/+/"
        # scan runs only after a one-character search finds a "+". Most of a cold
        # build's text is tool output without any: this test is what it pays.
        return []
    found: list[PullRequest] = []
    seen: set[str] = set()
    for match in _pr_re().finditer(text):
        pr = _build(match)
        if pr is not None and pr.url not in seen:
            seen.add(pr.url)
            found.append(pr)
    return found
