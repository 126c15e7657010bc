"""What each page shows, worked out from :class:`sessiondex.Index` answers.

These functions run on the Index's worker thread (:mod:`sessiondex.web.state`) and
return plain template contexts; the page handlers in :mod:`sessiondex.web.plugin` only
render them. Filters and facets of the home page are computed over the session objects
``Index.list`` returns (a few thousand dicts, milliseconds), so the page shows exactly
the sessions, titles and order the CLI's ``list --scope all`` shows.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from sessiondex.render.conversation import conversation_key, reads_the_same
from sessiondex.render.sizes import human_size
from sessiondex.transcripts.pr_urls import parse_pr_ref, pr_identity
from sessiondex.web.conversation import LAYOUTS, layout, mark_snippet, render_page

if TYPE_CHECKING:
    from sessiondex.index import Index

# Snippet markers: control characters, escaped around, then turned into <mark>.
MARK_START, MARK_END = "\x02", "\x03"
HOME_LIMIT = 100
MAX_LIMIT = 2000
SEARCH_LIMIT = 50
FACET_SIZE = 12
HOME_FILTERS = ("project", "branch", "tag", "pr", "since")
DATE_BUCKETS = (("1d", "last 24 hours", 1), ("7d", "last 7 days", 7), ("30d", "last 30 days", 30))


class PageNotFound(Exception):
    """The page's subject does not exist: a 404 with this message."""


class BadRequest(Exception):
    """A parameter the page cannot take: a 400 with this message (as Datasette's own
    pages answer a ``?_sort=`` they cannot take), and a link to where the asker may
    have meant to go."""

    def __init__(self, message: str, link: tuple[str, str] | None = None) -> None:
        super().__init__(message)
        self.link = link  # (url, label)


# ----------------------------------------------------------------- shared bits
def relative_time(iso: str | None, now: float) -> str:
    """``5m ago``, ``3h ago``, ``12d ago`` from an ISO time (UTC, ``Z``)."""
    if not iso:
        return ""
    from datetime import datetime

    try:
        then = datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return iso
    seconds = max(0, int(now - then))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return "just now"


def stamp(iso: str | None) -> str:
    """``2026-11-01 10:00Z``: the ISO time, to the minute."""
    if not iso:
        return ""
    return iso.replace("T", " ")[:16] + "Z"


def project_label(session: Mapping[str, Any]) -> str:
    cwd = session.get("cwd")
    if cwd:
        name = str(cwd).rstrip("/").rsplit("/", 1)[-1]
        return name or str(cwd)
    return str(session.get("project_key") or "")


def pr_label(link: Mapping[str, Any]) -> str:
    repository = link.get("repository") or link.get("host") or ""
    return f"{repository}#{link.get('number')}"


def session_url(session: Mapping[str, Any], *, project: bool = False, **params: str) -> str:
    """The session page; ``project`` pins the project when the ID is not unique."""
    query = dict(params)
    if project:
        query = {"project": str(session["project_key"]), **query}
    url = "/session/" + quote(str(session["session_id"]), safe="")
    return url + ("?" + urlencode(query) if query else "")


def _branches(session: Mapping[str, Any]) -> list[str]:
    branches = list(session.get("branches") or [])
    if not branches and session.get("git_branch"):
        branches = [session["git_branch"]]
    return branches


@dataclass
class Row:
    """One session as a line of the home page or a search result."""

    title: str
    url: str
    session_id: str
    project: str
    cwd: str
    branch: str
    branches: list[str]
    last_activity: str
    last_activity_ago: str
    size: str
    messages: int
    tag: str
    is_fork: bool
    prs: list[dict[str, str]]
    snippet: str = ""  # HTML: escaped, hits in <mark>
    how: str = ""  # for a PR lookup: "linked" or "mentioned"


def to_row(session: Mapping[str, Any], now: float, url: str) -> Row:
    branches = _branches(session)
    return Row(
        title=str(session.get("title") or session["session_id"]),
        url=url,
        session_id=str(session["session_id"]),
        project=project_label(session),
        cwd=str(session.get("cwd") or session.get("project_key") or ""),
        branch=branches[-1] if branches else "",
        branches=branches,
        last_activity=stamp(session.get("last_activity")),
        last_activity_ago=relative_time(session.get("last_activity"), now),
        size=human_size(int(session.get("file_size") or 0)),
        messages=int(session.get("message_count") or 0),
        tag=str(session.get("tag") or ""),
        is_fork=bool(session.get("forked_from")),
        prs=[
            {
                "label": pr_label(p),
                "url": str(p["url"]),
                "filter": "/?" + urlencode({"pr": p["url"]}),
            }
            for p in session.get("pr_links") or []
        ],
    )


def _urls(sessions: Iterable[Mapping[str, Any]]) -> Callable[..., str]:
    """A session's page URL (with ``params``), its project pinned when its ID is not
    unique here."""
    counts = Counter(s["session_id"] for s in sessions)
    return lambda s, **params: session_url(s, project=counts[s["session_id"]] > 1, **params)


def _with_params(url: str, **params: str | None) -> str:
    """``url`` with ``params`` added (those that are None left out)."""
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return url + (("&" if "?" in url else "?") + query if query else "")


def _limit(args: Mapping[str, str], default: int) -> int:
    try:
        return max(1, min(MAX_LIMIT, int(args.get("limit") or default)))
    except ValueError:
        return default


# ----------------------------------------------------------------- home
@dataclass
class FacetValue:
    label: str
    count: int
    url: str
    title: str = ""
    selected: bool = False


@dataclass
class Facet:
    name: str
    title: str
    values: list[FacetValue] = field(default_factory=list)
    more: int = 0  # values not shown
    more_url: str = ""  # the same page with every value of this facet shown


def _with(args: Mapping[str, str], **changes: str | None) -> str:
    query = {k: v for k, v in args.items() if k in HOME_FILTERS and v}
    for key, value in changes.items():
        if value is None:
            query.pop(key, None)
        else:
            query[key] = value
    return "/" + ("?" + urlencode(query) if query else "")


def _matches(session: Mapping[str, Any], chosen: Mapping[str, str]) -> bool:
    if "project" in chosen and session.get("project_key") != chosen["project"]:
        return False
    if "tag" in chosen and (session.get("tag") or "") != chosen["tag"]:
        return False
    if "pr" not in chosen:
        return True
    return any(
        pr_identity(str(p.get("url")), p.get("provider")) == chosen["pr"]
        or p.get("url") == chosen["pr"]
        for p in session.get("pr_links") or []
    )


def _facet(
    name: str,
    title: str,
    counts: Counter[str],
    labels: Mapping[str, tuple[str, str]],
    args: Mapping[str, str],
) -> Facet:
    facet = Facet(name, title)
    chosen = args.get(name)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], labels.get(kv[0], (kv[0], ""))[0]))
    shown = ranked if args.get("more") == name else ranked[:FACET_SIZE]
    for value, count in shown:
        label, hover = labels.get(value, (value, ""))
        facet.values.append(
            FacetValue(
                label=label,
                count=count,
                url=_with(args, **{name: None if value == chosen else value}),
                title=hover,
                selected=value == chosen,
            )
        )
    facet.more = len(ranked) - len(shown)
    if facet.more:
        query = _with(args)
        facet.more_url = query + ("&" if "?" in query else "?") + urlencode({"more": name})
    return facet


def home(index: Index, args: Mapping[str, str], now: float | None = None) -> dict[str, Any]:
    """Recent sessions of every project, newest activity first, narrowed by the chosen
    project / branch / tag / PR / date, with a facet of counts for each."""
    now = time.time() if now is None else now
    chosen = {k: args[k] for k in HOME_FILTERS if args.get(k)}
    if "pr" in chosen:
        # Any spelling of the PR, as /search takes it (owner/repo#N, a pasted URL with
        # /files or a fragment): the facet's links give the normalized URL.
        pr = parse_pr_ref(chosen["pr"])
        if pr is not None:
            chosen["pr"] = pr_identity(pr.url, pr.provider)
    error = None
    try:
        sessions = index.list(scope="all", since=chosen.get("since"), branch=chosen.get("branch"))
    except ValueError as exc:  # an unreadable since=
        error = str(exc)
        chosen.pop("since")
        sessions = index.list(scope="all", branch=chosen.get("branch"))
    selected = [s for s in sessions if _matches(s, chosen)]
    projects: Counter[str] = Counter()
    project_labels: dict[str, tuple[str, str]] = {}
    branches: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    prs: Counter[str] = Counter()
    pr_labels: dict[str, tuple[str, str]] = {}
    for session in selected:
        key = str(session["project_key"])
        projects[key] += 1
        project_labels.setdefault(key, (project_label(session), str(session.get("cwd") or key)))
        branches.update(set(_branches(session)))
        if session.get("tag"):
            tags[str(session["tag"])] += 1
        for link in session.get("pr_links") or []:
            prs[link["url"]] += 1
            pr_labels.setdefault(link["url"], (pr_label(link), link["url"]))
    args = {**args, **chosen}
    if "since" not in chosen:
        args.pop("since", None)
    facets = [
        _facet("project", "Project", projects, project_labels, args),
        _facet("branch", "Branch", branches, {}, args),
        _facet("tag", "Tag", tags, {}, args),
        _facet("pr", "Pull request", prs, pr_labels, args),
    ]
    dates = Facet("since", "Last activity")
    for value, label, days in DATE_BUCKETS:
        cutoff = now - days * 86400
        count = sum(1 for s in selected if _epoch(s.get("last_activity")) >= cutoff)
        is_chosen = chosen.get("since") == value
        dates.values.append(
            FacetValue(label, count, _with(args, since=None if is_chosen else value), "", is_chosen)
        )
    if chosen.get("since") and chosen["since"] not in {v for v, _, _ in DATE_BUCKETS}:
        dates.values.append(
            FacetValue(f"since {chosen['since']}", len(selected), _with(args, since=None), "", True)
        )
    limit = _limit(args, HOME_LIMIT)
    url_of = _urls(sessions)
    rows = [to_row(s, now, url_of(s)) for s in selected[:limit]]
    return {
        "rows": rows,
        "total": len(selected),
        "all_total": len(sessions),
        "facets": [dates, *facets],
        "chosen": [
            {
                "name": k,
                "value": _chosen_label(k, v, project_labels, pr_labels),
                "remove": _with(args, **{k: None}),
            }
            for k, v in chosen.items()
        ],
        "more_url": _with(args, limit=str(min(MAX_LIMIT, limit * 5)))
        if len(selected) > limit
        else None,
        "error": error,
    }


def _chosen_label(
    name: str,
    value: str,
    projects: Mapping[str, tuple[str, str]],
    prs: Mapping[str, tuple[str, str]],
) -> str:
    if name == "project":
        return projects.get(value, (value, ""))[0]
    if name == "pr":
        return prs.get(value, (value, ""))[0]
    return value


def _epoch(iso: str | None) -> float:
    if not iso:
        return 0.0
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


# ----------------------------------------------------------------- search
def _query_arg(args: Mapping[str, str], back: tuple[str, str]) -> str:
    """``?q=``, stripped; one over the servers' length limit is a :class:`BadRequest`
    (linking to ``back``), raised before any search runs: a long one held the index's
    one thread for seconds (:mod:`sessiondex.query.limits`)."""
    from sessiondex.query.limits import too_long

    query = (args.get("q") or "").strip()
    problem = too_long(query)
    if problem is not None:
        raise BadRequest(problem, back)
    return query


def search(index: Index, args: Mapping[str, str], now: float | None = None) -> dict[str, Any]:
    """Ranked results of ``Index.search`` (the CLI's search: same query handling and
    order), each linked to its best message; a PR URL or ``owner/repo#N`` lists the
    sessions linked to that PR. A ``q`` over the length limit: :class:`BadRequest`."""
    now = time.time() if now is None else now
    query = _query_arg(args, ("/search", "a new search"))
    raw = args.get("raw") in ("1", "on", "true")
    limit = _limit(args, SEARCH_LIMIT)
    out: dict[str, Any] = {"q": query, "raw": raw, "rows": [], "mode": "empty", "error": None}
    if not query:
        return out
    from sessiondex.query.search import FUZZY, PARTIAL

    try:
        # One more than shown: whether a "Show more" link has anything to show.
        outcome = index.search_outcome(
            query, raw=raw, scope="all", limit=limit + 1, markers=(MARK_START, MARK_END)
        )
    except ValueError as exc:  # a --raw query FTS5 cannot parse
        out["error"] = str(exc)
        out["mode"] = "error"
        return out
    found = outcome.rows[:limit]
    if len(outcome.rows) > limit and limit < MAX_LIMIT:
        more = {"q": query, **({"raw": "1"} if raw else {}), "limit": min(MAX_LIMIT, limit * 5)}
        out["more_url"] = "/search?" + urlencode(more)
    url_of = _urls(found)
    if found and all(s.get("matched_by") in ("pr-link", "pr-mention") for s in found):
        # A PR URL or owner/repo#N: linked sessions, then the ones that mention it.
        out["mode"] = "pr"
        how = {"pr-link": "linked", "pr-mention": "mentioned"}
        out["rows"] = [_with_how(to_row(s, now, url_of(s)), how[s["matched_by"]]) for s in found]
        return out
    hits = index.message_hits(query, [s["file_path"] for s in found], raw=raw)
    rows = []
    for session in found:
        best = hits.get(session["file_path"], [])
        # at= opens the page of a long session that holds the message, #msg- scrolls to it
        url = _with_params(
            url_of(session),
            q=query,
            raw="1" if raw else None,
            at=best[0] if best else None,
        )
        if best:
            url += "#msg-" + best[0]
        row = to_row(session, now, url)
        row.snippet = mark_snippet(str(session.get("snippet") or ""), MARK_START, MARK_END)
        rows.append(row)
    out["rows"] = rows
    out["mode"] = {FUZZY: "fuzzy", PARTIAL: "partial"}.get(outcome.kind, "text")
    out["words"] = outcome.words
    return out


def _with_how(row: Row, how: str) -> Row:
    row.how = how
    return row


# ----------------------------------------------------------------- session
def _find(
    index: Index, arg: str, project: str | None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]]]:
    """``(session, candidates, every session)``: the session the URL names, or the
    sessions it could be when its ID is in several projects."""
    from sessiondex import Ambiguous, NotFound
    from sessiondex.query.resolve import is_id_prefix

    everything = index.list(scope="all", all_kinds=True)
    if project is None:
        try:
            return index.resolve(arg).session, [], everything
        except (NotFound, Ambiguous):
            pass
    # A page has no directory to scope an ID prefix to: it names one session of any
    # project, as a whole ID does.
    prefix = is_id_prefix(arg)
    candidates = [
        s
        for s in everything
        if (s["session_id"] == arg or (prefix and s["session_id"].lower().startswith(arg.lower())))
        and (project is None or s["project_key"] == project)
    ]
    if len(candidates) == 1:
        return candidates[0], [], everything
    return None, candidates, everything


def _page_arg(args: Mapping[str, str], first_page: str) -> int | None:
    """``?page=``: a page number from 1; the range is checked once the pages are known."""
    value = args.get("page") or ""
    if not value:
        return None
    # Not int(): it takes " 2", "2_0" and non-ASCII digits too.
    if not re.fullmatch(r"[0-9]{1,9}", value) or int(value) < 1:
        raise BadRequest(
            f"?page= takes a page number from 1, not {value!r}.", (first_page, "its first page")
        )
    return int(value)


def session(
    index: Index, arg: str, args: Mapping[str, str], now: float | None = None
) -> dict[str, Any]:
    """A session's metadata and the conversation to read (see :func:`render_session`),
    with the messages matching ``q`` to mark; raises :class:`PageNotFound` or
    :class:`BadRequest`."""
    now = time.time() if now is None else now
    found, candidates, everything = _find(index, arg, args.get("project") or None)
    if found is None:
        if not candidates:
            raise PageNotFound(f"No session {arg}")
        return {
            "choose": [to_row(s, now, session_url(s, project=True)) for s in candidates],
            "session_id": arg,
        }
    url_of = _urls(everything)
    page = _page_arg(args, url_of(found))
    query = _query_arg(args, (url_of(found), "the session without the search"))
    from sessiondex import NotFound

    # A session shown before and unchanged since is not read again (see Layouts).
    key = conversation_key(found)
    kept = LAYOUTS.get(str(found["file_path"]), key)
    if kept is None:  # appended to since (a session being watched): read on from there
        kept = LAYOUTS.grow(str(found["file_path"]), key)
    conversation = kept.conv if kept is not None else None
    if conversation is None:
        try:
            conversation = index.conversation(str(found["file_path"]))
        except OSError as exc:
            raise PageNotFound(
                f"The transcript of {arg} cannot be read: {exc.strerror or exc}"
            ) from None
        except NotFound:  # deleted (or replaced by a folder) since the index listed it
            raise PageNotFound(f"No session {arg}: its transcript is gone") from None
        copy = conversation.archive is not None or conversation.path != Path(found["file_path"])
        if copy or not reads_the_same(conversation):
            key = None  # read from a copy (an archive, the team store's), or being written
    raw = args.get("raw") in ("1", "on", "true")
    hits: list[str] = []
    if query:
        try:
            # Every hit: the page counts them all and links to those on other pages.
            hits = index.message_hits(query, [str(found["file_path"])], raw=raw, every=True).get(
                str(found["file_path"]), []
            )
        except ValueError:
            hits = []
    origin = None
    forked = found.get("forked_from") or None
    if forked:
        parent = next((s for s in everything if s["session_id"] == forked.get("session_id")), None)
        # at= opens the page of the parent that holds the fork point.
        point = forked.get("message_uuid") or None
        at = {"at": point} if point else {}
        origin = {
            "title": parent["title"] if parent else forked.get("session_id"),
            "url": (
                url_of(parent, **at)
                if parent
                else session_url({"session_id": forked["session_id"]}, **at)
            )
            + (f"#msg-{point}" if point else ""),
        }
    forks = [
        to_row(s, now, url_of(s))
        for s in everything
        if (s.get("forked_from") or {}).get("session_id") == found["session_id"]
    ]
    return {
        "session": found,
        "row": to_row(found, now, url_of(found)),
        "created": stamp(found.get("created_at")),
        "origin": origin,
        "forks": forks,
        "q": query,
        "raw": raw,
        "hits": len(hits),
        # rendered by render_session, off the index's thread
        "conversation": conversation,
        "layout": kept,
        "layout_key": key,
        "hit_uuids": hits,
        "page": page,
        "at": (args.get("at") or "").strip() or None,
    }


def render_session(context: dict[str, Any]) -> dict[str, Any]:
    """The session page's conversation as HTML, from what :func:`session` found: one
    page of it (``?page=``; else the page holding the message ``?at=`` names, as a
    search result or a fork's origin link does; else, with ``?q=``, the page of the
    first hit; else the first), with the links to the other pages and hits.

    This part reads the transcript (a session of 15,000 messages: ~0.5 s the first
    time, then only the page shown, ~0.06 s; see Layouts) and needs no index, so the
    web view runs it off the index's one thread, where it held every other page back.
    Raises :class:`PageNotFound` when the transcript went meanwhile,
    :class:`BadRequest` for a page past the last."""
    out = dict(context)
    conversation, hits = out.pop("conversation"), out.pop("hit_uuids")
    lay, key = out.pop("layout"), out.pop("layout_key")
    session_id = out["session"]["session_id"]
    try:
        if lay is None:
            lay = layout(conversation)
            LAYOUTS.keep(str(out["session"]["file_path"]), key, lay)
        hit_pages = lay.in_order(hits)
        at, page = out["at"], out["page"]
        if page is not None and page > lay.pages:
            raise BadRequest(
                f"Session {session_id} has {lay.pages} page{'' if lay.pages == 1 else 's'}"
                f" of conversation: there is no page {page}.",
                (_with_params(out["row"].url, page=str(lay.pages)), "its last page"),
            )
        at_page = lay.page_of(at) if at else None
        out["at_missing"] = bool(at) and page is None and at_page is None
        if page is None:
            page = at_page or (hit_pages[0][1] if hit_pages else 1)
        rendered = render_page(lay, page, hits)
    except OSError as exc:
        raise PageNotFound(
            f"The transcript of {session_id} cannot be read: {exc.strerror or exc}"
        ) from None
    base = out["row"].url
    search = {"q": out["q"] or None, "raw": "1" if out["q"] and out["raw"] else None}

    def to_page(number: int) -> str:
        # page= always, even page 1: with q= and no page=, the first hit's page is shown
        return _with_params(base, **search, page=str(number))

    def to_hit(uuid: str) -> str:
        return _with_params(base, **search, at=uuid) + "#msg-" + uuid

    turns = lay.turn_range(page)
    out["pager"] = (
        {
            "page": page,
            "pages": lay.pages,
            "first": to_page(1) if page > 1 else None,
            "previous": to_page(page - 1) if page > 1 else None,
            "next": to_page(page + 1) if page < lay.pages else None,
            "last": to_page(lay.pages) if page < lay.pages else None,
            "turns": f"{turns.start + 1}–{turns.stop}" if turns else "",
            "total": lay.turns,
        }
        if lay.pages > 1
        else None
    )
    before = [(u, p) for u, p in hit_pages if p < page]
    after = [(u, p) for u, p in hit_pages if p > page]
    # Hits are counted by entry, as the index counts them (``hits``): a response written
    # one line per block is one message on the page, holding as many hits as lines.
    out["shown_hits"] = len(hit_pages)
    out["page_hits"] = sum(1 for _, on in hit_pages if on == page)
    out["first_hit"] = rendered.shown_hits[0] if rendered.shown_hits else None
    out["previous_hit"] = {"url": to_hit(before[-1][0]), "page": before[-1][1]} if before else None
    out["next_hit"] = {"url": to_hit(after[0][0]), "page": after[0][1]} if after else None
    out["clear_url"] = _with_params(base, page=str(page) if page > 1 else None)
    out["conversation_html"] = rendered.html
    return out
