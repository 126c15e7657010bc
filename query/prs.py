"""Sessions linked to (or mentioning) a pull request: ``search <PR>`` and ``from-pr``.

A session is *linked* to a PR by a ``pr-link`` record (what Claude Code shows in the
picker), and only *mentions* it when the URL merely appears in its text (e.g. printed by
``gh pr create`` in a session Claude Code did not link). Both are answers: links first,
then mentions, each group kept apart so a front end can say which is which.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sessiondex.query.dialect import dialect_of
from sessiondex.query.filters import Filters
from sessiondex.query.scopes import git_remote_repositories, resolve_cwd
from sessiondex.query.sessions import select_rows, to_objects
from sessiondex.transcripts.pr_urls import PullRequest, parse_pr_ref
from sessiondex.transcripts.pr_urls import parse_pr_number as parse_pr_number  # re-exported
from sessiondex.transcripts.reader import without_lone_surrogates
from sessiondex.transcripts.remotes import same_repository

if TYPE_CHECKING:
    from sqlite_utils import Database

PR_TABLES = ("pr_links", "pr_mentions")


@dataclass
class PrAnswer:
    """What ``from-pr`` found: ``linked`` sessions, then those that only ``mentioned``
    the PR; ``elsewhere`` (scope → count) says how many linked or mentioning sessions
    wider scopes hold when this one has none."""

    linked: list[dict[str, Any]]
    mentioned: list[dict[str, Any]]
    pr: PullRequest | None = None
    number: int | None = None
    elsewhere: dict[str, int] = field(default_factory=dict)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.linked + self.mentioned


def pr_label(pr: dict[str, Any] | PullRequest) -> str:
    """``acme/shop#12`` (GitLab: ``group/project!7``): a PR as people write it."""
    data = pr.as_dict() if isinstance(pr, PullRequest) else pr
    mark = "!" if data.get("provider") == "gitlab" else "#"
    return f"{data.get('repository') or data.get('host') or ''}{mark}{data.get('number')}"


def _url_clause(db: Database, table: str, pr: PullRequest) -> tuple[str, list[Any]]:
    """``url`` equal to the PR's normalized URL; any case on GitHub, whose owner and
    repository names are case-insensitive (``Acme/Shop#12`` is ``acme/shop#12``)."""
    same = dialect_of(db).nocase_eq("url") if pr.provider == "github" else "url = ?"
    return f"SELECT session_rowid FROM {table} WHERE {same}", [pr.url]


def sessions_for_pr(
    db: Database, pr: PullRequest, filters: Filters
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Sessions linked to ``pr``, newest first, and those that only mention it; each
    object says which (``matched_by``). One PR is the same PR wherever the session ran,
    so the scope is every project; the other filters hold as for any listing (branch,
    since, hidden and non-interactive sessions, archives, config dirs)."""
    where, where_params = replace(filters, scope="all", limit=None).where(db)
    found: list[list[dict[str, Any]]] = []
    seen: set[int] = set()
    for table in PR_TABLES:
        sql, params = _url_clause(db, table, pr)
        rows = [
            r
            for r in select_rows(db, f"s.id IN ({sql}) AND {where}", [*params, *where_params])
            if r["id"] not in seen
        ]
        seen.update(r["id"] for r in rows)
        found.append(rows)
    return _marked(to_objects(db, found[0]), to_objects(db, found[1]))


def _marked(
    linked: list[dict[str, Any]], mentioned: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The objects with ``matched_by``: ``pr-link`` or ``pr-mention`` (what ``search``
    says of a PR lookup), so a JSON reader can tell a link from a mention."""
    for kind, group in (("pr-link", linked), ("pr-mention", mentioned)):
        for obj in group:
            obj["matched_by"] = kind
    return linked, mentioned


def sessions_for_url(
    db: Database, url: str, *, include_mentions: bool = True, include_archived: bool = False
) -> list[dict[str, Any]]:
    """Sessions with a ``pr-link`` to the PR at ``url`` (or ``owner/repo#N``), then
    (with ``include_mentions``) those that only mention it."""
    pr = parse_pr_ref(url)
    if pr is None:
        raise ValueError(f"not a pull/merge request URL: {url}")
    linked, mentioned = sessions_for_pr(
        db, pr, Filters(scope="all", include_archived=include_archived)
    )
    return linked + mentioned if include_mentions else linked


def _number_rows(
    db: Database, number: int | None, filters: Filters, tables: tuple[str, ...]
) -> list[list[dict[str, Any]]]:
    """Per table, the rows in scope that hold PR ``number`` (any PR when None), a
    session listed once (in the first table that has it)."""
    where, params = filters.where(db)
    out: list[list[dict[str, Any]]] = []
    seen: set[int] = set()
    remotes = git_remote_repositories(resolve_cwd(filters.cwd)) if number is not None else ()
    for table in tables:
        link = f"SELECT 1 FROM {table} p WHERE p.session_rowid = s.id"
        link_params: list[Any] = []
        if number is not None:
            link += " AND p.number = ?"
            link_params.append(number)
        # Claude Code compares the number alone, so PR #12 of another repository
        # matches too; when the cwd's remotes name repositories we keep only their PRs
        # (every remote: a fork's clone opens its PRs upstream;
        # transcripts.remotes.same_repository: ports, Gerrit review hosts, Bitbucket
        # Server paths and SSH aliases as one repository).
        if remotes:
            owners = sorted(
                {
                    rowid
                    for rowid, host, repository, provider in db.execute(
                        f"SELECT p.session_rowid, p.host, p.repository, p.provider FROM {table} p"
                        " WHERE p.number = ?",
                        [number],
                    )
                    if any(same_repository(r, host, repository, provider) for r in remotes)
                }
            )
            link += f" AND p.session_rowid IN ({', '.join('?' for _ in owners) or 'NULL'})"
            link_params.extend(owners)
        rows = select_rows(
            db, f"{where} AND EXISTS ({link})", params + link_params, limit=filters.limit
        )
        rows = [r for r in rows if r["id"] not in seen]
        seen.update(r["id"] for r in rows)
        out.append(rows)
    return out


class NotAPullRequest(ValueError):
    """A PR argument that is no PR number, URL or ``owner/repo#N``: bad input (the CLI's
    usage error), not a PR that nothing links."""


def pr_argument(pr: str) -> PullRequest | int:
    """What a PR argument names: one PR (a URL or ``owner/repo#N``) or a number.
    Raises :class:`NotAPullRequest` for anything else."""
    ref = parse_pr_ref(pr)
    if ref is not None:
        return ref
    number = parse_pr_number(pr)
    if number is None:
        raise NotAPullRequest(f"not a PR number, URL or owner/repo#number: {pr!r}")
    return number


def find_pr(db: Database, pr: str | None, filters: Filters, *, elsewhere: bool = False) -> PrAnswer:
    """Sessions for a PR number (in scope, and in the cwd's remote repository when
    known), a URL or ``owner/repo#N`` (in every project: a URL names one PR), links then
    mentions; with no PR, every session in scope that has a link. ``elsewhere``: when
    nothing is found for a number, count what the wider scopes hold."""
    if pr is None:
        (rows,) = _number_rows(db, None, filters, ("pr_links",))
        return PrAnswer(*_marked(to_objects(db, rows), []))
    number = pr_argument(without_lone_surrogates(pr))
    if isinstance(number, PullRequest):
        linked, mentioned = sessions_for_pr(db, number, filters)
        return _limited(PrAnswer(linked, mentioned, pr=number), filters.limit)
    linked_rows, mentioned_rows = _number_rows(db, number, filters, PR_TABLES)
    linked, mentioned = _marked(to_objects(db, linked_rows), to_objects(db, mentioned_rows))
    answer = PrAnswer(linked, mentioned, number=number)
    if elsewhere and not answer.rows:
        answer.elsewhere = _elsewhere(db, number, filters)
    return _limited(answer, filters.limit)


def _limited(answer: PrAnswer, limit: int | None) -> PrAnswer:
    """At most ``limit`` rows in all, links first."""
    if limit:
        answer.linked = answer.linked[:limit]
        answer.mentioned = answer.mentioned[: max(0, limit - len(answer.linked))]
    return answer


def _elsewhere(db: Database, number: int, filters: Filters) -> dict[str, int]:
    """Scope → sessions linked to or mentioning PR ``number`` in wider scopes."""
    counts: dict[str, int] = {}
    wider = ("repo", "all") if filters.scope == "worktree" else ("all",)
    for scope in wider if filters.scope != "all" else ():
        groups = _number_rows(db, number, replace(filters, scope=scope, limit=None), PR_TABLES)
        counts[scope] = sum(len(g) for g in groups)
    return counts


def from_pr(db: Database, pr: str | None, filters: Filters) -> list[dict[str, Any]]:
    """:func:`find_pr` as one list: linked sessions, then those that only mention it."""
    return find_pr(db, pr, filters).rows
