"""Git remote URLs as one repository identity: the same repository, however cloned.

The team store identifies a repository by its ``origin`` remote, not by a path (paths
differ per machine), so the URL ``push`` stores and the URL a query compares it with
must be spelled the same: ``git@github.com:Acme/Shop.git``,
``https://user:token@github.com/Acme/Shop`` and ``ssh://git@github.com/Acme/Shop.git``
are all ``github.com/acme/shop``. One normalizer, used by both sides.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from sessiondex.transcripts.pr_urls import canonical_host

if TYPE_CHECKING:
    import subprocess

# git answers these in milliseconds; a hung git (a network filesystem) must not hang us.
GIT_TIMEOUT_SECONDS = 5


def git_run(cwd: str, *args: str) -> subprocess.CompletedProcess[str] | None:
    """``git ARGS`` run in ``cwd`` (its output captured as text, at most
    :data:`GIT_TIMEOUT_SECONDS`), or None when git could not be run or hung."""
    import subprocess  # here: most commands never run git, and the import is ~7 ms

    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def git(cwd: str, *args: str) -> str | None:
    """stdout of ``git ARGS`` in ``cwd``, or None when git is missing, fails or hangs."""
    result = git_run(cwd, *args)
    return result.stdout if result is not None and result.returncode == 0 else None


def origin_of(cwd: str) -> str | None:
    """The normalized ``origin`` remote of the repository at ``cwd`` on this machine
    (:func:`normalize_remote`), None outside a repository or without an origin."""
    if not os.path.isdir(cwd):
        return None
    return normalize_remote(git(cwd, "remote", "get-url", "origin"))


def without_credentials(url: str) -> str:
    """A remote URL without user and password (``https://x:TOKEN@github.com/o/r``)."""
    if "://" not in url:
        return url.split("@", 1)[-1] if "@" in url.split(":", 1)[0] else url
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=host))


def parse_remote(url: str) -> tuple[str, str] | None:
    """``(host, owner/repo)`` of a remote URL (``.git``, credentials, query and fragment
    dropped, host in lower case), or None for a local path or anything without a host."""
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        scheme, rest = url.split("://", 1)
        if scheme.lower() == "file":
            return None
        netloc, _, path = rest.partition("/")
        host = netloc.rsplit("@", 1)[-1].split(":", 1)[0]
        # A query or fragment names no repository, and may carry a token (?private_token=).
        path = path.split("?", 1)[0].split("#", 1)[0]
    elif ":" in url and "/" not in url.split(":", 1)[0]:  # scp-like: git@host:owner/repo
        before, _, path = url.partition(":")
        host = before.rsplit("@", 1)[-1]
    else:
        return None
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return (canonical_host(host), path) if host and path else None


_BITBUCKET_SERVER_WEB = re.compile(r"projects/([^/]+)/repos/([^/]+)")


def _host(host: str) -> str:
    return canonical_host(host.split(":", 1)[0])


def same_repository(
    remote: tuple[str, str], host: str | None, repository: str | None, provider: str | None
) -> bool:
    """Whether a PR link (``host``, ``repository``, ``provider`` as parsed from its URL)
    belongs to the ``remote`` (:func:`parse_remote`'s pair), case aside.

    Ports are dropped (a Bitbucket Server's web UI and its SSH clone use different
    ones). For a Bitbucket link, its web path ``projects/P/repos/r`` and a clone path
    ``scm/p/r`` both read ``p/r``; for a Gerrit link, its review host
    (``android-review.googlesource.com``) is the git host (``android.googlesource.com``),
    and a clone path under ``/a/`` (Gerrit's authenticated HTTP) is the project's.
    Only for those forges: on GitLab, ``scm/…`` or ``projects/…/repos/…`` are other
    projects. A remote host without a dot is an SSH alias (``git@github-work:acme/shop``,
    from ~/.ssh/config): then the paths alone decide."""
    if not host or not repository:
        return False
    want_host, want_path = _host(remote[0]), remote[1].lower().strip("/")
    have_host, have_path = _host(host), repository.lower().strip("/")
    if provider == "bitbucket":
        web = _BITBUCKET_SERVER_WEB.fullmatch(have_path)
        if web:
            have_path = f"{web[1]}/{web[2]}"
            if want_path.startswith("scm/"):
                want_path = want_path[len("scm/") :]
    elif provider == "gerrit":
        first, dot, rest = have_host.partition(".")
        if first.endswith("-review") and dot:
            have_host = first[: -len("-review")] + "." + rest
        # Gerrit serves authenticated HTTP clones under /a/: /a/infra/tools is the
        # project infra/tools (and a project named a/… still matches as spelled).
        if want_path != have_path and want_path.startswith("a/"):
            want_path = want_path[len("a/") :]
    if want_path != have_path:
        return False
    return "." not in want_host or want_host == have_host


def normalize_remote(url: str | None) -> str | None:
    """The stored, compared form of a remote: ``host/owner/repo`` in lower case (hosts
    and, on the forges people use, owner and repository names are case-insensitive);
    a remote without a host (a local path) as given, without a trailing ``/`` or
    ``.git``. None for an empty URL."""
    if not url or not url.strip():
        return None
    parsed = parse_remote(url)
    if parsed is not None:
        return f"{parsed[0]}/{parsed[1]}".lower()
    text = without_credentials(url.strip()).rstrip("/")
    return text[:-4] if text.endswith(".git") else text
