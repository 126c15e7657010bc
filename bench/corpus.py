"""Deterministic generator of realistic Claude Code config dirs, for the benchmarks.

``python -m bench.corpus --out DIR --sessions N --projects P --size-mb M --seed S``
writes ``DIR/projects/<key>/<uuid>.jsonl`` (plus subagent folders and a few files the
indexer must ignore) and ``DIR/manifest.jsonl``, one line per session file with the
values an index should derive from it. The expected values come from the generator's
own bookkeeping, never from parsing what it wrote, so they can check the indexer.

Why it is built the way it is:

* **Deterministic.** Every session draws from its own ``random.Random`` seeded with
  ``(seed, index)``, timestamps come from a fixed ``--now``, and mtimes are set with
  ``os.utime`` in nanoseconds (distinct per file), so the same arguments give
  byte-identical trees with identical mtimes, whatever the machine.
* **Fast and small.** Tool outputs, which dominate the bytes as in real transcripts, are
  slices of a few MiB of pre-built pseudo-random text; nothing is generated word by word
  per record. Files are streamed through one buffered handle at a time, so memory stays
  flat at ``--scale 10`` (20,000 sessions, ~4 GB).
* **Realistic shape** (bench/README.md): Zipf-like sessions per
  project, log-normal file sizes (median ~55 KiB, p90 ~430 KiB, p99 a few MiB, a few
  files of 10+ MiB), the CLI's envelope fields and record types, the metadata block the
  CLI re-appends every ~32 KiB, titles and tags set deep inside big files, PR links for
  every forge, sidechains, subagents, empty and metadata-only files, ``-p``/SDK and
  ``/loop`` sessions, hashed long project keys and git worktrees.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import os
import random
import shutil
import statistics
import sys
import time
import unicodedata
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from bench import vocab
from sessiondex.transcripts.keys import project_key_for_canonical

VERSION = "2.1.332"
DEFAULT_NOW = datetime(2026, 11, 29, tzinfo=timezone.utc)
SPREAD_DAYS = 90
KIB = 1024
MIB = 1024 * 1024
REAPPEND_EVERY = 32 * KIB
HEAD_TAIL = 64 * KIB
MODELS = ["claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"]

# Fractions of the sessions per kind (at least one of each once there are >= 10 sessions).
# Close to the SDK reference's corpus A: 14 empty, 22 sidechains, 16 metadata-only in 2,000.
KIND_SHARES: dict[str, float] = {
    "empty": 0.007,
    "sidechain": 0.011,
    "metadata-only": 0.008,
    "sdk": 0.06,
    "loop": 0.015,
    "desktop": 0.02,
}
KINDS = ["normal", *KIND_SHARES]

# Size shape of normal sessions: log-normal with this median; sigma is solved so the
# total matches --size-mb (sigma ~1.6 gives p90 ~430 KiB and p99 ~2.3 MiB at 55 KiB).
MEDIAN_SIZE = 55 * KIB
# Two corpus profiles (bench/README.md): tool output most of the bytes (the default), or
# prompts and assistant prose about a third of them, over a large Zipf vocabulary.
PROFILES = ("tool-heavy", "text-heavy")
DUMPS = orjson.dumps
NL = orjson.OPT_APPEND_NEWLINE


# --------------------------------------------------------------------------- text


@functools.cache
def text_bank(seed: int, profile: str) -> TextBank:
    """The seed's buffers, built once per process: they depend on the seed and profile
    alone, are only ever sliced, and cost 0.35 s (tool-heavy) to 0.8 s (text-heavy) to
    build, which each of the test suite's 23 small corpora paid again."""
    return TextBank(seed, profile=profile)


class TextBank:
    """Pre-built text buffers; every piece of bulk text in the corpus is a slice of one.

    Slicing a few MiB buffer at a seeded offset costs nothing per byte in Python, which
    is what makes 400 MiB in seconds possible; the Zipf weighting of the words keeps
    search hit counts plausible (early words everywhere, late words less often).
    """

    def __init__(self, seed: int, output_size: int = 4 * MIB, profile: str = "tool-heavy") -> None:
        rng = random.Random(f"sessiondex-bench-text:{seed}")
        words = vocab.GENERAL
        cum = list(itertools.accumulate(1.0 / (r + 1) ** 1.05 for r in range(len(words))))
        self.output = self._build_output(rng, words, cum, output_size)
        self.prose = self._build_prose(rng, words, cum, 512 * KIB)
        self.i18n = {
            lang: text * (64 * KIB // len(text.encode()) + 2)
            for lang, text in vocab.PROSE_I18N.items()
        }
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        self.b64 = "".join(rng.choices(alphabet, k=256 * KIB))
        self.text_heavy = profile == "text-heavy"
        if self.text_heavy:
            # Its own stream: the tool-heavy buffers above stay byte-identical.
            self.prose = self._build_rich_prose(
                random.Random(f"sessiondex-bench-rich:{seed}"), 4 * MIB
            )

    @staticmethod
    def _build_rich_prose(rng: random.Random, size: int) -> str:
        """Design-discussion prose over tens of thousands of Zipf-weighted words, with
        identifiers, paths, numbers, versions and now and then a commit hash."""
        words = vocab.large_vocabulary(rng, 40_000)
        cum = list(itertools.accumulate(1.0 / (r + 1) ** 1.0 for r in range(len(words))))
        picks = rng.choices(words, cum_weights=cum, k=size // 6)
        parts = vocab.IDENT_PARTS
        out: list[str] = []
        total = 0
        i = 0
        while total < size:
            n = rng.randint(6, 24)
            if i + n >= len(picks):
                i = 0
            sentence = picks[i : i + n]
            i += n
            for _ in range(rng.choice((0, 0, 1, 1, 2))):
                r = rng.random()
                a, b = rng.choice(parts), rng.choice(parts)
                if r < 0.3:
                    token = f"{a}_{b}" if rng.random() < 0.5 else f"{a}{b.title()}"
                elif r < 0.5:
                    token = f"src/{a}/{b}.{rng.choice(vocab.FILE_EXTS)}:{rng.randint(1, 900)}"
                elif r < 0.75:
                    token = str(rng.choice((rng.randint(0, 100), rng.randint(100, 99_999))))
                elif r < 0.85:
                    token = f"v{rng.randint(0, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}"
                elif r < 0.95:
                    token = f"{a}.{b}()"
                else:
                    token = f"{rng.getrandbits(160):040x}"
                sentence.insert(rng.randrange(len(sentence) + 1), token)
            text = " ".join(sentence)
            text = text[:1].upper() + text[1:] + rng.choice(".....?:")
            if rng.random() < 0.12:
                text += "\n\n"
            out.append(text)
            total += len(text) + 1
        return " ".join(out)

    @staticmethod
    def _build_prose(rng: random.Random, words: list[str], cum: list[float], size: int) -> str:
        picks = rng.choices(words, cum_weights=cum, k=size // 6)
        out: list[str] = []
        i = 0
        while i < len(picks):
            n = rng.randint(6, 22)
            sentence = " ".join(picks[i : i + n])
            out.append(sentence[:1].upper() + sentence[1:] + ".")
            i += n
        return " ".join(out)

    @staticmethod
    def _build_output(rng: random.Random, words: list[str], cum: list[float], size: int) -> str:
        """Log lines, code, test results, grep hits and paths, like Bash/Read/Grep output."""
        picks = rng.choices(words, cum_weights=cum, k=size // 7)
        parts = vocab.IDENT_PARTS
        exts = vocab.FILE_EXTS
        levels = vocab.LOG_LEVELS
        lines: list[str] = []
        total = 0
        w = 0
        nwords = len(picks)
        while total < size:
            kind = rng.random()
            n = rng.randint(3, 12)
            if w + n >= nwords:
                w = 0
            text = " ".join(picks[w : w + n])
            w += n
            a, b, c = rng.choice(parts), rng.choice(parts), rng.choice(parts)
            if kind < 0.25:
                line = (
                    f"2026-{rng.randint(8, 11):02d}-{rng.randint(1, 28):02d}T"
                    f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
                    f".{rng.randint(0, 999):03d}Z {rng.choice(levels)} {a}.{b}: {text}"
                )
            elif kind < 0.55:
                indent = " " * (4 * rng.randint(0, 3))
                form = rng.random()
                if form < 0.3:
                    line = f"{indent}def {a}_{b}(self, {c}: str, {b}_{c}: int = {rng.randint(0, 99)}) -> None:"
                elif form < 0.6:
                    line = f"{indent}{a}_{b} = self.{c}.{b}({a}, timeout={rng.randint(1, 60)})  # {text}"
                elif form < 0.8:
                    line = f"{indent}const {a}{b.title()} = await {c}.{b}({a}Id);"
                else:
                    line = f'{indent}if err := {a}.{b}({c}); err != nil {{ return fmt.Errorf("{text}: %w", err) }}'
            elif kind < 0.7:
                status = "PASSED" if rng.random() < 0.9 else "FAILED"
                line = f"tests/test_{a}_{b}.py::test_{c}_{b} {status} [{rng.randint(1, 100):3d}%]"
            elif kind < 0.85:
                line = f"src/{a}/{b}_{c}.{rng.choice(exts)}:{rng.randint(1, 900)}:    {text}"
            else:
                line = f"# {text}"
            lines.append(line)
            total += len(line) + 1
        return "\n".join(lines) + "\n"

    @staticmethod
    def take(buf: str, rng: random.Random, n: int) -> str:
        """``n`` characters of ``buf`` from a seeded offset, starting on a word boundary."""
        if n <= 0:
            return ""
        if n >= len(buf) - 64:
            reps = n // len(buf) + 1
            return (buf * reps)[:n]
        start = rng.randrange(0, len(buf) - n - 32)
        space = buf.find(" ", start, start + 32)
        if space >= 0:
            start = space + 1
        return buf[start : start + n]


# --------------------------------------------------------------------------- plan


@dataclass
class Remote:
    """Where a project's PRs live: provider as the CLI classifies it, host, repo path."""

    provider: str
    host: str
    repository: str

    def pr_url(self, number: int) -> str:
        if self.provider == "gitlab":
            return f"https://{self.host}/{self.repository}/-/merge_requests/{number}"
        if self.provider == "bitbucket":  # Cloud (ws/repo) and Server (projects/P/repos/r)
            return f"https://{self.host}/{self.repository}/pull-requests/{number}"
        return f"https://{self.host}/{self.repository}/pull/{number}"


@dataclass
class Project:
    """One project dir. ``alt_cwd`` is a second cwd with the same (lossy) key."""

    key: str
    cwd: str
    remote: Remote | None
    default_branch: str | None
    worktree_branch: str | None = None
    alt_cwd: str | None = None


@dataclass
class SessionPlan:
    """Everything decided before writing: lets sessions be written in any order."""

    index: int
    session_id: str
    project: int
    kind: str
    target: int
    start_ms: int
    topic: str
    planted: list[tuple[str, str]] = field(default_factory=list)


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _zipf_counts(total: int, buckets: int, s: float = 1.1) -> list[int]:
    """Split ``total`` over ``buckets`` by 1/r^s, largest remainder, at least one each."""
    if buckets <= 0:
        return []
    weights = [1.0 / (r + 1) ** s for r in range(buckets)]
    wsum = sum(weights)
    spare = total - buckets
    if spare < 0:
        return [1] * total + [0] * (buckets - total)
    raw = [spare * w / wsum for w in weights]
    counts = [1 + int(x) for x in raw]
    order = sorted(range(buckets), key=lambda i: raw[i] - int(raw[i]), reverse=True)
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


def _make_projects(rng: random.Random, n: int) -> list[Project]:
    """Project cwds of every shape the key rule has to handle.

    Includes worktree pairs (``/repo`` and ``/repo-wt/feat``), two paths whose sanitized
    form exceeds 200 characters (hashed keys), accented and Cyrillic directories, a
    non-git scratch dir and one lossy-key collision (``web-app`` vs ``web/app``).
    """
    names = list(vocab.REPO_NAMES)
    rng.shuffle(names)
    providers = [
        ("github", "github.com"),
        ("github", "github.com"),
        ("github", "github.com"),
        ("github-enterprise", "github.acme-corp.com"),
        ("gitlab", "gitlab.com"),
        ("gitlab", "gitlab.internal.example.org"),
        ("bitbucket", "bitbucket.org"),
        ("bitbucket", "bitbucket.acme.internal"),
    ]
    long_a = "/home/dev/work/clients/" + "/".join(
        [
            "northwind-traders-international",
            "platform-engineering-division",
            "shared-infrastructure-services",
            "kubernetes-cluster-provisioning",
            "terraform-modules-and-helm-charts",
            "environment-overrides-production",
        ]
    )
    long_b = "/Users/sam/Documents/Équipe-données/" + "/".join(
        [
            "analyse-prédictive-des-ventes-régionales",
            "pipelines-de-transformation-nocturnes",
            "expérimentations-modèles-de-classification",
            "rapports-trimestriels-consolidés-v2",
            "annexes-méthodologiques",
        ]
    )
    # (slot at 50 projects, cwd, branch); slots scale with n, at most n // 3 specials.
    specials: list[tuple[int, str, str | None]] = [
        (1, long_a, "main"),
        (3, "/home/dev/src/web-app", "main"),  # + alt cwd /home/dev/src/web/app: same key
        (5, long_b, "main"),
        (9, "/home/dev/Projets/café-crème", "main"),
        (14, "/home/dev/src/🚀-launch", "main"),  # emoji: two dashes in the CLI's key
        (20, "/home/dev/проекты/бухгалтерия", "main"),
        (24, "/tmp/scratch", None),  # not a git repository: no gitBranch at all
        (30, "/home/dev/src/my_project.v2", "master"),
    ][: max(1, n // 3)]
    projects: list[Project] = []
    keys: set[str] = set()

    def add(
        cwd: str, remote: Remote | None, branch: str | None, wt: str | None = None
    ) -> Project | None:
        key = project_key_for_canonical(unicodedata.normalize("NFC", cwd))
        if key in keys or len(projects) >= n:
            return None
        keys.add(key)
        proj = Project(key=key, cwd=cwd, remote=remote, default_branch=branch, worktree_branch=wt)
        projects.append(proj)
        return proj

    def remote_for(name: str) -> Remote:
        provider, host = rng.choice(providers)
        owner = rng.choice(vocab.OWNERS)
        if provider == "gitlab":
            repo = f"{owner}/{rng.choice(['backend', 'platform', 'tools'])}/{name}"
            if rng.random() < 0.5:
                repo = f"{owner}/{rng.choice(['eu', 'core'])}/{rng.choice(['svc', 'libs'])}/{name}"
        elif provider == "bitbucket" and host != "bitbucket.org":
            repo = f"projects/{owner.upper().replace('-', '')}/repos/{name}"
        else:
            repo = f"{owner}/{name}"
        return Remote(provider, host, repo)

    i = 0
    while len(projects) < n:
        name = names[i % len(names)] + ("" if i < len(names) else f"-{i // len(names)}")
        i += 1
        if specials and len(projects) >= round(specials[0][0] * n / 50):
            _, cwd, branch = specials.pop(0)
            proj = add(cwd, remote_for(name) if branch else None, branch)
            if proj is not None and cwd.endswith("/web-app"):
                proj.alt_cwd = "/home/dev/src/web/app"
            continue
        base = rng.choice(["/home/dev/src", "/home/dev/src", "/Users/sam/code", "/work"])
        remote = remote_for(name)
        branch = "main" if rng.random() < 0.85 else "master"
        add(f"{base}/{name}", remote, branch)
        # Worktrees of the same repository: same remote, own branch, own project dir.
        if rng.random() < 0.25 and len(projects) < n:
            feat = rng.choice(["feat-login", "fix-timeout", "refactor-cache", "spike-search"])
            add(f"{base}/{name}-wt/{feat}", remote, None, wt=feat.replace("-", "/", 1))
    return projects


def _solve_sigma(n: int, median: float, budget: float) -> float:
    """Sigma of a log-normal whose ``n`` stratified quantiles sum to ``budget``."""
    zs = [statistics.NormalDist().inv_cdf((i + 0.5) / n) for i in range(n)]
    lo, hi = 0.05, 2.4
    for _ in range(40):
        mid = (lo + hi) / 2
        total = sum(median * math.exp(mid * z) for z in zs)
        if total > budget:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def _normal_sizes(n: int, budget: float) -> list[int]:
    """Sizes of the normal sessions: stratified log-normal quantiles, then exact rescale.

    Stratified quantiles (not random draws) keep p50/p90/p99 stable across seeds; the
    largest files are pushed to >= 10 MiB when the budget is large enough to afford it.
    """
    if n <= 0:
        return []
    median = min(MEDIAN_SIZE, budget / n * 0.6)
    sigma = _solve_sigma(n, median, budget)
    zs = [statistics.NormalDist().inv_cdf((i + 0.5) / n) for i in range(n)]
    sizes = [median * math.exp(sigma * z) for z in zs]
    if budget >= 200 * MIB:
        for j, big in enumerate((14.5, 12.0, 10.5)):
            k = n - 1 - j
            if k >= 0 and sizes[k] < big * MIB:
                sizes[k] = big * MIB
    scale = budget / sum(sizes)
    return [max(600, int(s * scale)) for s in sizes]


def _plan(
    sessions: int, projects: list[Project], budget: float, seed: int, now_ms: int
) -> list[SessionPlan]:
    rng = random.Random(f"sessiondex-bench-plan:{seed}")
    kinds: list[str] = []
    for kind, share in KIND_SHARES.items():
        k = round(sessions * share)
        if sessions >= 10:
            k = max(1, k)
        kinds += [kind] * k
    kinds += ["normal"] * (sessions - len(kinds))
    kinds = kinds[:sessions]
    rng.shuffle(kinds)

    # Sizes per kind; the fixed-shape kinds first, normal/desktop share the rest.
    small: dict[int, int] = {}
    for i, kind in enumerate(kinds):
        if kind == "empty":
            small[i] = 0
        elif kind == "metadata-only":
            small[i] = rng.randint(300, 1500)
        elif kind == "sdk":
            small[i] = int(min(400 * KIB, 12 * KIB * math.exp(rng.gauss(0, 0.9))))
        elif kind == "loop":
            small[i] = int(min(2 * MIB, 40 * KIB * math.exp(rng.gauss(0, 1.0))))
        elif kind == "sidechain":
            small[i] = int(min(1 * MIB, 30 * KIB * math.exp(rng.gauss(0, 1.0))))
    big_idx = [i for i, k in enumerate(kinds) if k in ("normal", "desktop")]
    rest = max(budget - sum(small.values()), len(big_idx) * 2 * KIB)
    sizes = _normal_sizes(len(big_idx), rest)
    rng.shuffle(sizes)
    targets = [0] * sessions
    for i, s in small.items():
        targets[i] = s
    for i, s in zip(big_idx, sizes):
        targets[i] = s

    counts = _zipf_counts(sessions, len(projects))
    owners = [p for p, c in enumerate(counts) for _ in range(c)]
    rng.shuffle(owners)
    topic_weights = list(itertools.accumulate(1.0 / (r + 1) for r in range(len(vocab.TOPIC_ORDER))))
    span = SPREAD_DAYS * 86_400_000
    plans = []
    for i in range(sessions):
        age = rng.random() ** 1.3 * span  # more recent sessions than old ones
        # Start early enough that the session (roughly 1 s per 2 KiB, capped) ends before now.
        duration = min(targets[i] // 2 + 60_000, 6 * 3_600_000)
        start = now_ms - int(age) - duration - 86_400_000
        topic = rng.choices(vocab.TOPIC_ORDER, cum_weights=topic_weights)[0]
        plans.append(SessionPlan(i, _uuid(rng), owners[i], kinds[i], targets[i], start, topic))

    # Planted rare words: a known set of sessions, in a known place.
    eligible = [p for p in plans if p.kind in ("normal", "desktop", "sdk", "loop")]
    places = ["user", "assistant", "tool_result"]
    for w, (word, base) in enumerate(vocab.PLANTED):
        k = min(len(eligible), max(1, round(base * sessions / 2000)))
        for j, p in enumerate(rng.sample(eligible, k)):
            p.planted.append((word, places[(j + w) % 3]))
    return plans


# --------------------------------------------------------------------------- writing


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def _last_prompt_value(text: str) -> str:
    """The CLI's ``lastPrompt``: newlines to spaces, cut to 200 chars plus an ellipsis."""
    flat = text.replace("\n", " ")
    return flat if len(flat) <= 200 else flat[:200].rstrip() + "…"


class Transcript:
    """Writes one JSONL transcript and keeps the bookkeeping the manifest needs."""

    def __init__(
        self,
        path: Path,
        rng: random.Random,
        bank: TextBank,
        *,
        session_id: str,
        cwd: str,
        branch: str | None,
        entrypoint: str,
        start_ms: int,
        lang: str,
        topic: str,
        sidechain: bool = False,
        agent_id: str | None = None,
        slug: str | None = None,
    ) -> None:
        self.fh = open(path, "wb", buffering=1 << 20)  # noqa: SIM115 (closed in close())
        self.rng = rng
        self.bank = bank
        self.sid = session_id
        self.cwd = cwd
        self.branch = branch
        self.entrypoint = entrypoint
        self.now = start_ms
        self.lang = lang
        self.topic = topic
        self.sidechain = sidechain
        self.agent_id = agent_id
        self.slug = slug
        self.model = rng.choice(MODELS)
        self.parent: str | None = None
        self.written = 0
        self.since_block = 0
        self.message_count = 0
        self.chain_records = 0
        self.compact_summaries = 0
        self.branches: list[str] = [branch] if branch else []
        self.first_ts: str | None = None
        self.last_ts: str | None = None
        # Metadata the CLI knows about and re-appends.
        self.last_prompt: str | None = None
        self.last_prompt_leaf: str | None = None
        self.custom_title: str | None = None
        self.ai_title: str | None = None
        self.tag: str | None = None
        self.pr_links: list[dict[str, Any]] = []
        self.permission_mode = "default"

    # -- low level

    def emit(self, rec: dict[str, Any]) -> None:
        data = DUMPS(rec, option=NL)
        self.fh.write(data)
        self.written += len(data)
        self.since_block += len(data)

    def tick(self, lo: int = 200, hi: int = 4000) -> str:
        self.now += self.rng.randint(lo, hi)
        ts = _iso(self.now)
        if self.first_ts is None:
            self.first_ts = ts
        self.last_ts = ts
        return ts

    def stamp(self) -> str:
        """Timestamp of a metadata record that carries one (counts for created/last activity)."""
        ts = _iso(self.now)
        if self.first_ts is None:
            self.first_ts = ts
        self.last_ts = ts
        return ts

    def set_branch(self, branch: str | None) -> None:
        self.branch = branch
        if branch and branch not in self.branches:
            self.branches.append(branch)

    def chain(
        self, type_: str, body: dict[str, Any], *, meta: bool = False, count: bool = True
    ) -> str:
        """Write a chain record with the CLI's envelope; returns its uuid."""
        u = _uuid(self.rng)
        rec: dict[str, Any] = {"parentUuid": self.parent, "isSidechain": self.sidechain}
        if self.agent_id:
            rec["agentId"] = self.agent_id
        rec["userType"] = "external"
        rec["cwd"] = self.cwd
        rec["sessionId"] = self.sid
        rec["version"] = VERSION
        if self.branch:
            rec["gitBranch"] = self.branch
        if self.slug:
            rec["slug"] = self.slug
        rec["entrypoint"] = self.entrypoint
        rec["type"] = type_
        if meta:
            rec["isMeta"] = True
        rec.update(body)
        rec["uuid"] = u
        rec["timestamp"] = self.tick()
        self.emit(rec)
        self.parent = u
        self.chain_records += 1
        if type_ in ("user", "assistant") and not meta and not self.sidechain and count:
            self.message_count += 1
        return u

    # -- chain records

    def user_text(self, text: str, *, meta: bool = False, prompt: bool = True) -> str:
        body: dict[str, Any] = {"message": {"role": "user", "content": text}}
        if not meta:
            body["promptId"] = _uuid(self.rng)
        u = self.chain("user", body, meta=meta)
        if prompt and not meta:
            self.last_prompt = _last_prompt_value(text)
            self.last_prompt_leaf = u
        return u

    def assistant_blocks(self, blocks: list[dict[str, Any]], stop: str | None) -> list[str]:
        """One API response, written one line per content block sharing ``message.id``."""
        msg_id = f"msg_01{self.rng.getrandbits(96):024x}"
        req_id = f"req_011C{self.rng.getrandbits(80):020x}"
        usage = {
            "input_tokens": self.rng.randint(3, 900),
            "cache_creation_input_tokens": self.rng.randint(0, 30000),
            "cache_read_input_tokens": self.rng.randint(0, 180000),
            "output_tokens": self.rng.randint(20, 4000),
            "service_tier": "standard",
        }
        uuids = []
        for block in blocks:
            message = {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": [block],
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": usage,
            }
            uuids.append(self.chain("assistant", {"message": message, "requestId": req_id}))
        return uuids

    def tool_result(
        self, tool_use_id: str, source: str, content: str, result: dict[str, Any]
    ) -> None:
        self.parent = source
        body = {
            "message": {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": tool_use_id,
                        "type": "tool_result",
                        "content": content,
                        "is_error": False,
                    }
                ],
            },
            "toolUseResult": result,
            "sourceToolAssistantUUID": source,
        }
        self.chain("user", body)

    def progress(self, tool_use_id: str, command: str) -> None:
        self.chain(
            "progress",
            {
                "data": {
                    "type": "hook_progress",
                    "hookEvent": "PreToolUse",
                    "hookName": "PreToolUse:Bash",
                    "command": command,
                },
                "parentToolUseID": tool_use_id,
                "toolUseID": tool_use_id,
            },
        )

    def system(self, subtype: str, extra: dict[str, Any]) -> str:
        body = {
            "subtype": subtype,
            "content": extra.pop("content", ""),
            "level": "info",
            "isMeta": False,
        }
        body.update(extra)
        return self.chain("system", body)

    # -- metadata records

    def meta(self, rec: dict[str, Any]) -> None:
        self.emit(rec)

    def file_history_snapshot(self, message_id: str) -> None:
        files = {
            f"src/{self.rng.choice(vocab.IDENT_PARTS)}.py": {
                "backupFileName": f"{self.rng.getrandbits(64):016x}@v1",
                "version": 1,
                "backupTime": _iso(self.now),
            }
        }
        self.meta(
            {
                "type": "file-history-snapshot",
                "messageId": message_id,
                "snapshot": {
                    "messageId": message_id,
                    "trackedFileBackups": files,
                    "timestamp": _iso(self.now),
                },
                "isSnapshotUpdate": False,
            }
        )

    def metadata_block(self, *, with_pr: bool = True) -> None:
        """The CLI's re-append: current values of the metadata it holds in memory."""
        if self.last_prompt is not None:
            self.meta(
                {
                    "type": "last-prompt",
                    "lastPrompt": self.last_prompt,
                    "leafUuid": self.last_prompt_leaf,
                    "sessionId": self.sid,
                }
            )
        if self.custom_title is not None:
            self.meta(
                {"type": "custom-title", "customTitle": self.custom_title, "sessionId": self.sid}
            )
        if self.ai_title is not None:
            self.meta({"type": "ai-title", "aiTitle": self.ai_title, "sessionId": self.sid})
        if self.tag:
            self.meta({"type": "tag", "tag": self.tag, "sessionId": self.sid})
        self.meta(
            {
                "type": "permission-mode",
                "permissionMode": self.permission_mode,
                "sessionId": self.sid,
            }
        )
        if with_pr and self.pr_links:
            self.emit_pr_link(self.pr_links[-1])
        self.since_block = 0

    def emit_pr_link(self, link: dict[str, Any]) -> None:
        self.meta(
            {
                "type": "pr-link",
                "sessionId": self.sid,
                "prNumber": link["number"],
                "prUrl": link["url"],
                "prRepository": link["repository"],
                "timestamp": self.stamp(),
            }
        )

    def close(self) -> None:
        self.fh.close()


class SessionBuilder:
    """Composes a whole session (turns, events, metadata) on top of a Transcript."""

    def __init__(
        self,
        plan: SessionPlan,
        project: Project,
        bank: TextBank,
        root: Path,
        now_ms: int,
        seed: int,
    ) -> None:
        self.plan = plan
        self.project = project
        self.bank = bank
        self.root = root
        self.now_ms = now_ms
        self.rng = random.Random(f"sessiondex-bench-session:{seed}:{plan.index}")
        self.t: Transcript | None = None
        self.pr_mentions: list[str] = []
        self.subagents: list[dict[str, Any]] = []
        self.first_prompt: str | None = None
        self.first_command: str | None = None
        self.summary: str | None = None
        self.deep: list[str] = []
        self.deep_title: str | None = None
        self.deep_tag: str | None = None
        self.session_cwd = project.cwd
        self.next_event_at = plan.target
        self.truncated = False
        self.files: list[Path] = []

    # -- text helpers

    def fill(self, template: str) -> str:
        rng = self.rng
        topic_words = vocab.TOPICS[self.plan.topic]
        return template.format(
            t=rng.choice(topic_words),
            c=rng.choice(vocab.IDENT_PARTS),
            w=rng.choice(vocab.IDENT_PARTS),
            f=f"src/{rng.choice(vocab.IDENT_PARTS)}/{rng.choice(vocab.IDENT_PARTS)}.{rng.choice(vocab.FILE_EXTS[:6])}",
        )

    def prompt_text(self, lang: str) -> str:
        pool = vocab.PROMPTS_I18N.get(lang) or vocab.PROMPTS_EN
        text = self.fill(self.rng.choice(pool))
        if self.rng.random() < 0.2 and self.plan.target > 24 * KIB:
            text += "\n\n" + TextBank.take(self.bank.output, self.rng, self.rng.randint(100, 1500))
        if self.bank.text_heavy:
            text += self.rich_paste()
        return text

    def rich_paste(self) -> str:
        """Text-heavy profile: a long prompt (context, a design question), sometimes a
        pasted log, now and then a hash or a base64 blob of 200-2,000 characters."""
        rng = self.rng
        left = self.plan.target
        text = "\n\n" + TextBank.take(
            self.bank.prose, rng, min(max(200, left // 10), rng.randint(300, 4000))
        )
        r = rng.random()
        if r < 0.04:
            text += "\n\n" + TextBank.take(self.bank.b64, rng, rng.randint(200, 2000))
        elif r < 0.10:
            text += f"\n\ncommit {rng.getrandbits(160):040x} sha256:{rng.getrandbits(256):064x}"
        elif r < 0.25:
            text += "\n\n" + TextBank.take(self.bank.output, rng, rng.randint(200, 2500))
        return text

    def prose(self, n: int, lang: str) -> str:
        buf = self.bank.i18n.get(lang) or self.bank.prose
        text = TextBank.take(buf, self.rng, n)
        words = self.rng.sample(vocab.TOPICS[self.plan.topic], 2)
        return f"{text} ({words[0]}, {words[1]})"

    def title(self, lang: str) -> str:
        pool = vocab.TITLES_I18N.get(lang) if lang != "en" else None
        return self.fill(self.rng.choice(pool or vocab.TITLES_EN))

    # -- turns

    def tool_call(
        self, t: Transcript, out_size: int, plant: str | None
    ) -> tuple[dict[str, Any], str, dict[str, Any]]:
        """(tool_use block, result text, toolUseResult) for one realistic tool call."""
        rng = self.rng
        tid = f"toolu_01{rng.getrandbits(88):022x}"
        path = f"{t.cwd}/src/{rng.choice(vocab.IDENT_PARTS)}/{rng.choice(vocab.IDENT_PARTS)}.{rng.choice(vocab.FILE_EXTS)}"
        out = TextBank.take(self.bank.output, rng, out_size)
        if plant:
            cut = out.find("\n", len(out) // 2)
            cut = len(out) if cut < 0 else cut
            out = f"{out[:cut]}\nnote: {plant} checked\n{out[cut:]}"
        r = rng.random()
        if r < 0.4 or plant:
            cmd = rng.choice(
                [
                    "pytest -x -q",
                    "npm test",
                    "cargo test",
                    "go test ./...",
                    "git log --oneline -20",
                    "make lint",
                    "rg -n TODO src",
                ]
            )
            block = {
                "type": "tool_use",
                "id": tid,
                "name": "Bash",
                "input": {"command": cmd, "description": "Run " + cmd.split()[0]},
            }
            return block, out, {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        if r < 0.7:
            block = {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": path}}
            n = out.count("\n") + 1
            return (
                block,
                out,
                {
                    "type": "text",
                    "file": {
                        "filePath": path,
                        "content": out,
                        "numLines": n,
                        "startLine": 1,
                        "totalLines": n,
                    },
                },
            )
        if r < 0.82:
            pattern = rng.choice(vocab.IDENT_PARTS)
            block = {
                "type": "tool_use",
                "id": tid,
                "name": "Grep",
                "input": {"pattern": pattern, "path": "src", "output_mode": "content"},
            }
            return (
                block,
                out,
                {
                    "mode": "content",
                    "numFiles": rng.randint(1, 30),
                    "filenames": [],
                    "content": out,
                    "numLines": out.count("\n"),
                },
            )
        if r < 0.94:
            old = TextBank.take(self.bank.output, rng, rng.randint(40, 400))
            new = TextBank.take(self.bank.output, rng, rng.randint(40, 400))
            block = {
                "type": "tool_use",
                "id": tid,
                "name": "Edit",
                "input": {"file_path": path, "old_string": old, "new_string": new},
            }
            msg = f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{out[: max(200, len(out) // 3)]}"
            return (
                block,
                msg,
                {
                    "filePath": path,
                    "oldString": old,
                    "newString": new,
                    "originalFile": out,
                    "userModified": False,
                    "replaceAll": False,
                },
            )
        names = [
            f"src/{rng.choice(vocab.IDENT_PARTS)}/{rng.choice(vocab.IDENT_PARTS)}.py"
            for _ in range(rng.randint(3, 30))
        ]
        block = {"type": "tool_use", "id": tid, "name": "Glob", "input": {"pattern": "**/*.py"}}
        return (
            block,
            "\n".join(names),
            {
                "filenames": names,
                "durationMs": rng.randint(2, 90),
                "numFiles": len(names),
                "truncated": False,
            },
        )

    def out_size(self, t: Transcript) -> int:
        target = self.plan.target
        median = min(max(target / 45, 400), 12_000)
        if self.bank.text_heavy:
            median *= 0.15  # prose, not tool output, takes the rest of the budget
        size = int(median * math.exp(self.rng.gauss(0, 1.0)))
        size = min(size, 400 * KIB, int(target * 0.3))
        remaining = target - t.written
        # Do not jump far past the next scheduled event (a deep title must stay deep).
        to_event = max(2 * KIB, self.next_event_at - t.written)
        return max(60, min(size, int(remaining * 0.45), to_event))

    def turn(
        self, t: Transcript, prompt: str, *, plants: list[tuple[str, str]], steps: int | None = None
    ) -> None:
        """A user prompt, then assistant responses with tool calls, then a final answer."""
        rng = self.rng
        lang = t.lang
        u_plants = [w for w, where in plants if where == "user"]
        a_plants = [w for w, where in plants if where == "assistant"]
        r_plants = [w for w, where in plants if where == "tool_result"]
        if u_plants:
            prompt = prompt + " " + " ".join(u_plants)
        snapshot_id = _uuid(rng)
        if not t.sidechain:  # sidechain files start with their isSidechain record
            t.file_history_snapshot(snapshot_id)
        if rng.random() < 0.1:
            t.chain(
                "attachment",
                {"attachment": {"type": "todo_reminder", "content": [], "itemCount": 0}},
            )
        t.user_text(prompt)
        if self.first_prompt is None:
            self.first_prompt = prompt
        left = self.plan.target - t.written
        if steps is None:
            # Small sessions are quick questions: few or no tool calls, short answers.
            steps = (
                0 if left < 6 * KIB else 1 if left < 16 * KIB else rng.choice([1, 1, 2, 2, 3, 4, 6])
            )
        if r_plants:
            steps = max(steps, 1)
        prose_cap = max(120, min(1800, left // 6))
        k = 1
        if self.bank.text_heavy:
            k = 5  # long explanations and design discussion
            prose_cap = max(120, min(8000, left // 3))
        for step in range(steps):
            if (
                step
                and (self.plan.target - t.written < 4 * KIB or t.written >= self.next_event_at)
                and not r_plants
            ):
                break  # near the target or an event: wrap up rather than overshoot
            blocks: list[dict[str, Any]] = []
            if rng.random() < 0.5:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": self.prose(min(prose_cap, k * rng.randint(150, 1500)), lang),
                        "signature": TextBank.take(self.bank.b64, rng, rng.randint(200, 600)),
                    }
                )
            if rng.random() < 0.6:
                blocks.append(
                    {
                        "type": "text",
                        "text": self.prose(min(prose_cap, k * rng.randint(60, 400)), lang),
                    }
                )
            calls = []
            for _ in range(rng.choice([1, 1, 1, 2, 3]) if left >= 16 * KIB else 1):
                plant = r_plants.pop() if r_plants else None
                calls.append(self.tool_call(t, self.out_size(t), plant))
            if rng.random() < 0.03:
                calls.append(self.mcp_call(t))
            blocks += [c[0] for c in calls]
            uuids = t.assistant_blocks(blocks, "tool_use")
            for (block, content, result), source in zip(calls, uuids[-len(calls) :]):
                if block["name"] == "Bash" and rng.random() < 0.3:
                    t.progress(block["id"], block["input"]["command"])
                t.tool_result(block["id"], source, content, result)
        final = self.prose(min(prose_cap, k * rng.randint(200, 1800)), lang)
        if a_plants:
            final = final + " " + " ".join(a_plants) + "."
        t.assistant_blocks([{"type": "text", "text": final}], "end_turn")
        if rng.random() < 0.15:
            t.system(
                "turn_duration",
                {"durationMs": rng.randint(2000, 600000), "messageCount": steps * 2 + 2},
            )

    def mcp_call(self, t: Transcript) -> tuple[dict[str, Any], str, dict[str, Any]]:
        """A tool input carrying ``summary``/``gitBranch`` keys: they are *not* metadata."""
        tid = f"toolu_01{self.rng.getrandbits(88):022x}"
        inp = {
            "title": self.title("en"),
            "summary": "Decoy summary inside a tool input",
            "gitBranch": "decoy/tool-input-branch",
        }
        block = {"type": "tool_use", "id": tid, "name": "mcp__linear__create_issue", "input": inp}
        text = f"Created issue ENG-{self.rng.randint(100, 9999)}"
        return block, text, {"content": [{"type": "text", "text": text}]}

    # -- events

    def pr_event(self, t: Transcript) -> None:
        """``gh pr create`` (or the forge's equivalent) printing a URL, then a pr-link."""
        remote = self.project.remote
        assert remote is not None
        number = self.rng.randint(1, 4800)
        url = remote.pr_url(number)
        cmd = {"gitlab": "glab mr create --fill", "bitbucket": "git push -u origin HEAD"}.get(
            remote.provider, "gh pr create --fill"
        )
        tid = f"toolu_01{self.rng.getrandbits(88):022x}"
        block = {
            "type": "tool_use",
            "id": tid,
            "name": "Bash",
            "input": {"command": cmd, "description": "Open the pull request"},
        }
        source = t.assistant_blocks([block], "tool_use")[0]
        out = f"Creating pull request for {t.branch or 'HEAD'} into main\n\n{url}\n"
        t.tool_result(
            tid, source, out, {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        )
        link = {
            "url": url,
            "number": number,
            "repository": remote.repository,
            "provider": remote.provider,
        }
        if all(link["url"] != x["url"] for x in t.pr_links):
            t.pr_links.append(link)
        t.emit_pr_link(link)
        t.assistant_blocks([{"type": "text", "text": f"Opened {url}"}], "end_turn")

    def resume(self, t: Transcript) -> None:
        """Exit (metadata block), a gap of hours, then the CLI's re-emission on resume."""
        t.metadata_block()
        t.now += self.rng.randint(1, 8) * 3_600_000
        for link in t.pr_links:
            t.emit_pr_link(link)
        t.meta({"type": "permission-mode", "permissionMode": t.permission_mode, "sessionId": t.sid})

    def compact(self, t: Transcript) -> None:
        """A compact boundary (parentUuid null) and the summary user record after it."""
        prev = t.parent
        t.parent = None
        t.system(
            "compact_boundary",
            {
                "content": "Conversation compacted",
                "compactMetadata": {
                    "trigger": "auto",
                    "preTokens": self.rng.randint(120000, 190000),
                },
                "logicalParentUuid": prev,
            },
        )
        text = (
            "This session is being continued from a previous conversation that ran out of context. Summary:\n"
            + self.prose(800, t.lang)
        )
        t.chain(
            "user",
            {
                "message": {"role": "user", "content": text},
                "isCompactSummary": True,
                "isVisibleInTranscriptOnly": True,
            },
        )
        t.compact_summaries += 1

    # -- session kinds

    def open(
        self,
        path: Path,
        *,
        entrypoint: str,
        lang: str,
        sidechain: bool = False,
        agent_id: str | None = None,
        session_id: str | None = None,
        cwd: str | None = None,
    ) -> Transcript:
        proj = self.project
        branch = proj.worktree_branch or proj.default_branch
        if proj.default_branch and not proj.worktree_branch and self.rng.random() < 0.35:
            branch = f"{self.rng.choice(['feat', 'fix', 'chore'])}/{self.plan.topic}-{self.rng.choice(vocab.IDENT_PARTS)}"
        slug = "-".join(
            self.rng.sample(
                [
                    "quiet",
                    "brave",
                    "tumbling",
                    "amber",
                    "silver",
                    "humming",
                    "lucky",
                    "kettle",
                    "otter",
                    "comet",
                    "lantern",
                    "maple",
                ],
                3,
            )
        )
        self.files.append(path)
        return Transcript(
            path,
            self.rng,
            self.bank,
            session_id=session_id or self.plan.session_id,
            cwd=cwd or self.session_cwd,
            branch=branch,
            entrypoint=entrypoint,
            start_ms=self.plan.start_ms,
            lang=lang,
            topic=self.plan.topic,
            sidechain=sidechain,
            agent_id=agent_id,
            slug=None if sidechain else slug,
        )

    def build(self) -> dict[str, Any]:
        plan = self.plan
        rng = self.rng
        proj_dir = self.root / "projects" / self.project.key
        proj_dir.mkdir(parents=True, exist_ok=True)
        path = proj_dir / f"{plan.session_id}.jsonl"
        self.session_cwd = (
            self.project.alt_cwd
            if self.project.alt_cwd and rng.random() < 0.4
            else self.project.cwd
        )
        lang = "en"
        if rng.random() < 0.15:
            lang = rng.choice(list(vocab.PROMPTS_I18N))
        entrypoint = "cli"
        t: Transcript | None = None
        if plan.kind == "empty":
            path.write_bytes(b"")
            self.files.append(path)
        elif plan.kind == "metadata-only":
            t = self.open(path, entrypoint="cli", lang=lang)
            t.meta(
                {
                    "type": "permission-mode",
                    "permissionMode": "default",
                    "sessionId": plan.session_id,
                }
            )
            t.file_history_snapshot(_uuid(rng))
            while t.written < plan.target - 200:
                t.meta(
                    {
                        "type": "queue-operation",
                        "operation": "enqueue",
                        "timestamp": t.stamp(),
                        "sessionId": plan.session_id,
                        "content": self.prompt_text(lang)[:120],
                    }
                )
            t.meta({"type": "last-prompt", "leafUuid": None, "sessionId": plan.session_id})
            t.branches = []
        elif plan.kind == "sidechain":
            t = self.open(
                path,
                entrypoint="cli",
                lang=lang,
                sidechain=True,
                agent_id=f"a{rng.getrandbits(64):016x}",
            )
            self.conversation(t, sidechain=True)
        else:
            entrypoint = {
                "sdk": rng.choice(["sdk-cli", "sdk-cli", "sdk-py", "sdk-ts"]),
                "desktop": rng.choice(
                    ["claude-desktop", "claude-desktop", "claude-desktop-3p", "local-agent"]
                ),
                "loop": "cli",
            }.get(plan.kind, "cli" if rng.random() < 0.9 else "claude-vscode")
            t = self.open(path, entrypoint=entrypoint, lang=lang)
            self.conversation(t)
        if t is not None:
            t.close()
        return self.finish(path, t, entrypoint)

    def conversation(self, t: Transcript, sidechain: bool = False) -> None:
        """Preamble, scheduled events between turns, and the exit metadata block."""
        plan, rng, proj = self.plan, self.rng, self.project
        kind = plan.kind
        interactive = kind in ("normal", "desktop", "loop")
        if interactive and rng.random() < 0.05:
            # Legacy compaction summaries at the head (older CLI versions wrote these).
            for _ in range(rng.randint(1, 3)):
                self.summary = self.title(t.lang)
                t.meta({"type": "summary", "summary": self.summary, "leafUuid": _uuid(rng)})
        if not sidechain:
            t.meta({"type": "permission-mode", "permissionMode": "default", "sessionId": t.sid})

        events: list[tuple[float, str]] = []
        big = plan.target >= 256 * KIB
        if interactive and not sidechain:
            if rng.random() < 0.85:
                events.append((rng.uniform(0.02, 0.2), "ai_title"))
                if rng.random() < 0.15:
                    events.append((rng.uniform(0.5, 0.9), "ai_title"))
            deep_title = big and rng.random() < 0.06
            if deep_title:
                events.append((0.5, "deep_title"))
            elif rng.random() < 0.3:
                events.append((rng.uniform(0.05, 0.7), "custom_title"))
                if rng.random() < 0.2:
                    events.append((rng.uniform(0.7, 0.95), "custom_title"))
            if big and not deep_title and rng.random() < 0.05:
                events.append((0.55, "deep_tag"))
            elif rng.random() < 0.1:
                events.append((rng.uniform(0.1, 0.6), "tag"))
                if rng.random() < 0.35:
                    events.append((rng.uniform(0.6, 0.95), "tag_clear"))
            if proj.remote is not None and rng.random() < 0.14:
                at = rng.uniform(0.2, 0.5)
                events.append((at, "pr"))
                if rng.random() < 0.15:
                    events.append((at + 0.05, "pr"))
                for k in range(rng.randint(1, 2)):
                    events.append((at + 0.1 + 0.2 * k, "resume"))
            elif rng.random() < 0.1:
                events.append((rng.uniform(0.2, 0.9), "resume"))
            if proj.default_branch and not proj.worktree_branch and rng.random() < 0.15:
                events.append((rng.uniform(0.1, 0.8), "branch"))
            if rng.random() < 0.05:
                events.append((rng.uniform(0.1, 0.9), "pr_mention"))
            if plan.target >= 1536 * KIB:
                events.append((0.6, "compact"))
            if rng.random() < 0.15:
                events.append((rng.uniform(0.1, 0.9), "subagent"))
        elif kind == "sdk" and rng.random() < 0.1:
            events.append((0.5, "custom_title"))
        plants = list(plan.planted)
        events.sort()

        # Preamble: /clear caveat, a leading slash command, a loop command, or a paste.
        if kind == "loop":
            t.user_text(
                "<command-message>loop</command-message>\n<command-name>/loop</command-name>\n<command-args>5m check the CI status and fix failures</command-args>",
                prompt=False,
            )
            self.first_command = "/loop"
            t.user_text(
                "Run this every 5 minutes: check the CI status and fix failures.", meta=True
            )
        elif interactive and not sidechain and rng.random() < 0.1:
            t.user_text(
                "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.</local-command-caveat>",
                meta=True,
            )
            t.user_text(
                "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>",
                prompt=False,
            )
            t.user_text("<local-command-stdout></local-command-stdout>", prompt=False)
            self.first_command = "/clear"
        elif interactive and not sidechain and rng.random() < 0.06:
            t.user_text(
                f"<command-message>review</command-message>\n<command-name>/review</command-name>\n<command-args>{self.fill('{c} {w}')}</command-args>",
                prompt=False,
            )
            self.first_command = "/review"
            t.user_text(
                "Review the current changes for bugs, risky patterns and missing tests.", meta=True
            )

        first = self.prompt_text(t.lang)
        if interactive and rng.random() < 0.01 and plan.target > 200 * KIB:
            first += "\n" + TextBank.take(
                self.bank.output, rng, 70 * KIB
            )  # a paste beyond the 64 KiB head
        if kind == "loop":
            first = None
        n_turns = 0
        while True:
            while events and (events[0][0] * plan.target <= t.written or t.written >= plan.target):
                self.event(t, events.pop(0)[1])
            if t.written + min(2 * KIB, plan.target // 20) >= plan.target and n_turns > 0:
                break
            self.next_event_at = int(events[0][0] * plan.target) if events else plan.target
            turn_plants = []
            if plants and (
                rng.random() < 0.3
                or t.written > plan.target * 0.6
                or n_turns == 0
                and plan.target < 8 * KIB
            ):
                turn_plants = [plants.pop()]
            if kind == "loop" and not turn_plants:
                if n_turns > 0:  # the first run follows the /loop command directly
                    t.user_text(f"<tick>{_iso(t.now)}</tick>", prompt=False)
                    t.user_text("check the CI status and fix failures", meta=True)
                self.loop_turn(t)
            else:
                prompt = first if first is not None else self.prompt_text(t.lang)
                first = None
                steps = 1 if kind == "sdk" and rng.random() < 0.5 else None
                self.turn(t, prompt, plants=turn_plants, steps=steps)
            n_turns += 1
            if kind == "sdk" and n_turns >= 3 and t.written >= plan.target * 0.5:
                break
            if t.since_block >= REAPPEND_EVERY and not sidechain:
                t.metadata_block(with_pr=True)
        for _, ev in events:
            self.event(t, ev)
        while plants:
            self.turn(t, self.prompt_text(t.lang), plants=[plants.pop()], steps=1)
        if not sidechain:
            t.metadata_block()  # at exit
        if kind == "normal" and rng.random() < 0.006:
            # A crash mid-write: the last line is cut short (no trailing newline).
            partial = DUMPS(
                {
                    "parentUuid": t.parent,
                    "isSidechain": False,
                    "type": "assistant",
                    "message": {"content": [{"type": "text", "text": self.prose(400, "en")}]},
                }
            )
            t.fh.write(partial[: len(partial) // 2])
            t.written += len(partial) // 2
            self.truncated = True

    def loop_turn(self, t: Transcript) -> None:
        rng = self.rng
        block, content, result = self.tool_call(t, self.out_size(t), None)
        source = t.assistant_blocks([block], "tool_use")[0]
        t.tool_result(block["id"], source, content, result)
        text = f"CI is {'green' if rng.random() < 0.7 else 'red: one job failed'}. " + self.prose(
            rng.randint(80, 300), t.lang
        )
        t.assistant_blocks([{"type": "text", "text": text}], "end_turn")

    def event(self, t: Transcript, ev: str) -> None:
        rng = self.rng
        sid = t.sid
        if ev == "ai_title":
            t.ai_title = self.title(t.lang)
            t.meta({"type": "ai-title", "aiTitle": t.ai_title, "sessionId": sid})
        elif ev == "custom_title":
            t.custom_title = (
                self.fill(rng.choice(vocab.CUSTOM_TITLES)) if t.lang == "en" else self.title(t.lang)
            )
            t.meta({"type": "custom-title", "customTitle": t.custom_title, "sessionId": sid})
        elif ev == "deep_title":
            # Written by another process (SDK rename_session): the CLI never re-appends it,
            # so it stays more than 64 KiB from both ends of the file.
            title = "Deep rename " + self.fill("{t} {c}")
            self.deep.append("custom_title")
            self.deep_title = title
            t.meta({"type": "custom-title", "customTitle": title, "sessionId": sid})
        elif ev == "tag":
            t.tag = rng.choice(vocab.TAGS)
            t.meta({"type": "tag", "tag": t.tag, "sessionId": sid})
        elif ev == "tag_clear":
            t.tag = ""
            t.meta({"type": "tag", "tag": "", "sessionId": sid})
        elif ev == "deep_tag":
            self.deep.append("tag")
            self.deep_tag = "deep-" + rng.choice(vocab.TAGS)
            t.meta({"type": "tag", "tag": self.deep_tag, "sessionId": sid})
        elif ev == "pr":
            self.pr_event(t)
        elif ev == "resume":
            self.resume(t)
        elif ev == "branch":
            new = f"{rng.choice(['feat', 'fix'])}/{self.plan.topic}-{rng.choice(vocab.IDENT_PARTS)}"
            tid = f"toolu_01{rng.getrandbits(88):022x}"
            block = {
                "type": "tool_use",
                "id": tid,
                "name": "Bash",
                "input": {"command": f"git checkout -b {new}", "description": "Create a branch"},
            }
            source = t.assistant_blocks([block], "tool_use")[0]
            out = f"Switched to a new branch '{new}'\n"
            t.tool_result(
                tid,
                source,
                out,
                {"stdout": out, "stderr": "", "interrupted": False, "isImage": False},
            )
            t.set_branch(new)
            t.assistant_blocks([{"type": "text", "text": f"Now on `{new}`."}], "end_turn")
        elif ev == "pr_mention":
            owner = rng.choice(vocab.OWNERS)
            url = f"https://github.com/{owner}/upstream-lib/pull/{rng.randint(1, 900)}"
            if all(url != x["url"] for x in t.pr_links) and url not in self.pr_mentions:
                self.pr_mentions.append(url)
            t.assistant_blocks(
                [
                    {
                        "type": "text",
                        "text": f"The upstream fix is in {url}; we can pin to it until it is released.",
                    }
                ],
                "end_turn",
            )
        elif ev == "compact":
            self.compact(t)
        elif ev == "subagent":
            self.subagent(t)

    def subagent(self, t: Transcript) -> None:
        """A Task call whose transcript lives in ``<sid>/subagents/`` with a .meta.json."""
        rng = self.rng
        agent_id = f"a{rng.getrandbits(64):016x}"
        tid = f"toolu_01{rng.getrandbits(88):022x}"
        desc = self.fill("Investigate {c} {w}")
        block = {
            "type": "tool_use",
            "id": tid,
            "name": "Task",
            "input": {
                "description": desc,
                "prompt": self.prompt_text("en"),
                "subagent_type": "general-purpose",
            },
        }
        source = t.assistant_blocks([block], "tool_use")[0]
        sub_dir = self.root / "projects" / self.project.key / t.sid / "subagents"
        if rng.random() < 0.2:
            sub_dir = sub_dir / "workflows" / f"wf-{rng.getrandbits(32):08x}"
        sub_dir.mkdir(parents=True, exist_ok=True)
        sub_path = sub_dir / f"agent-{agent_id}.jsonl"
        sub = Transcript(
            sub_path,
            rng,
            self.bank,
            session_id=t.sid,
            cwd=t.cwd,
            branch=t.branch,
            entrypoint=t.entrypoint,
            start_ms=t.now,
            lang="en",
            topic=self.plan.topic,
            sidechain=True,
            agent_id=agent_id,
        )
        sub_target = rng.randint(4 * KIB, 60 * KIB)
        sub.user_text(block["input"]["prompt"])
        while sub.written < sub_target:
            b, content, result = self.tool_call(sub, rng.randint(300, 6000), None)
            src = sub.assistant_blocks([b], "tool_use")[0]
            sub.tool_result(b["id"], src, content, result)
        answer = self.prose(600, "en")
        sub.assistant_blocks([{"type": "text", "text": answer}], "end_turn")
        sub.close()
        meta_path = sub_dir / f"agent-{agent_id}.meta.json"
        meta_path.write_bytes(
            DUMPS({"agentType": "general-purpose", "toolUseId": tid, "description": desc})
        )
        self.files += [sub_path, meta_path]
        t.now = max(t.now, sub.now)
        t.tool_result(
            tid,
            source,
            answer,
            {
                "status": "completed",
                "agentId": agent_id,
                "content": [{"type": "text", "text": answer}],
                "totalDurationMs": rng.randint(5000, 300000),
                "totalTokens": rng.randint(2000, 80000),
                "totalToolUseCount": rng.randint(1, 30),
            },
        )
        self.subagents.append(
            {
                "agent_id": agent_id,
                "path": str(sub_path.relative_to(self.root)),
                "size": sub.written,
            }
        )

    def finish(self, path: Path, t: Transcript | None, entrypoint: str) -> dict[str, Any]:
        plan, proj = self.plan, self.project
        custom = ai = tag = None
        branches: list[str] = []
        git_branch = None
        pr_links: list[dict[str, Any]] = []
        message_count = 0
        created = last = None
        cwd = None
        if t is not None:
            custom = self.deep_title or t.custom_title
            ai = t.ai_title
            tag = self.deep_tag or t.tag or None
            branches = t.branches
            git_branch = branches and t.branch or None
            pr_links = t.pr_links
            message_count = t.message_count
            created, last = t.first_ts, t.last_ts
            cwd = t.cwd if t.chain_records else None
        kind = plan.kind
        first_prompt = self.first_prompt
        if first_prompt is None and self.first_command:
            first_prompt = self.first_command
        return {
            "session_id": plan.session_id,
            "project_key": proj.key,
            "cwd": cwd,
            "path": str(path.relative_to(self.root)),
            "kind": kind,
            "entrypoint": entrypoint if t is not None and kind not in ("metadata-only",) else None,
            "is_sidechain": kind == "sidechain",
            "custom_title": custom,
            "ai_title": ai,
            "summary": self.summary,
            "tag": tag,
            "last_prompt": t.last_prompt if t is not None and kind != "sidechain" else None,
            "first_prompt": first_prompt
            if kind not in ("sidechain", "metadata-only", "empty")
            else None,
            "first_command": self.first_command,
            "branches": branches,
            "git_branch": git_branch,
            "pr_links": pr_links,
            "pr_mentions": self.pr_mentions,
            "planted": [{"word": w, "where": where} for w, where in plan.planted],
            "topic": plan.topic if kind not in ("empty", "metadata-only") else None,
            "language": t.lang if t is not None and kind != "metadata-only" else None,
            "message_count": message_count,
            "compact_summaries": t.compact_summaries if t is not None else 0,
            "deep": self.deep,
            "truncated": self.truncated,
            "subagents": self.subagents,
            "created_at": created,
            "last_activity": last,
            "size": path.stat().st_size,
        }


# --------------------------------------------------------------------------- driver


def _noise_files(root: Path, projects: list[Project], rng: random.Random) -> list[Path]:
    """Files the indexer must ignore: a top-level ``agent-*.jsonl``, a superseded copy,
    a non-UUID stem and a directory named like a transcript."""
    out: list[Path] = []
    for proj in projects[:2]:
        d = root / "projects" / proj.key
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"agent-{rng.getrandbits(32):08x}.jsonl"
        p.write_bytes(
            DUMPS(
                {
                    "type": "user",
                    "isSidechain": True,
                    "message": {"role": "user", "content": "legacy agent file"},
                },
                option=NL,
            )
        )
        out.append(p)
        q = d / f"{_uuid(rng)}.jsonl.superseded-{rng.getrandbits(32):08x}"
        q.write_bytes(b"")
        out.append(q)
        r = d / "notes.jsonl"
        r.write_bytes(DUMPS({"type": "summary", "summary": "not a session"}, option=NL))
        out.append(r)
    d = root / "projects" / projects[0].key / f"{_uuid(rng)}.jsonl"
    d.mkdir(parents=True, exist_ok=True)
    out.append(d)  # a directory: utime works on it too
    return out


def generate(
    out: Path,
    sessions: int = 2000,
    projects: int = 50,
    size_mb: float = 400.0,
    seed: int = 1,
    scale: int = 1,
    now: datetime = DEFAULT_NOW,
    *,
    overwrite: bool = False,
    profile: str = "tool-heavy",
) -> Path:
    """Write the corpus under ``out`` and return the path of its ``manifest.jsonl``.

    ``scale`` multiplies the session count and the total size (not the project count).
    Refuses to write into an existing ``projects/`` unless ``overwrite`` (which removes
    only ``out/projects`` and ``out/manifest.jsonl``): stale files would break determinism.
    """
    out = Path(out)
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (one of {', '.join(PROFILES)})")
    sessions *= scale
    budget = size_mb * scale * MIB
    if sessions < 1 or projects < 1:
        raise ValueError("need at least one session and one project")
    projects = min(projects, sessions)
    if (out / "projects").exists():
        if not overwrite:
            raise FileExistsError(f"{out / 'projects'} exists (use --overwrite)")
        shutil.rmtree(out / "projects")
        (out / "manifest.jsonl").unlink(missing_ok=True)
    (out / "projects").mkdir(parents=True, exist_ok=True)
    now_ms = int(now.timestamp() * 1000)
    rng = random.Random(f"sessiondex-bench-projects:{seed}")
    project_list = _make_projects(rng, projects)
    plans = _plan(sessions, project_list, budget, seed, now_ms)
    bank = text_bank(seed, profile)

    mtimes: list[tuple[Path, int]] = []
    serial = itertools.count()
    manifest_path = out / "manifest.jsonl"
    with open(manifest_path, "wb") as mf:
        for plan in plans:
            builder = SessionBuilder(plan, project_list[plan.project], bank, out, now_ms, seed)
            row = builder.build()
            mf.write(DUMPS(row, option=NL))
            end_ms = min(_end_ms(row, plan), now_ms - 60_000)
            for f in builder.files:
                # Distinct nanosecond mtimes: the ms of the last write plus a unique serial.
                mtimes.append((f, end_ms * 1_000_000 + next(serial) % 1_000_000))
    for f in _noise_files(out, project_list, rng):
        mtimes.append((f, (now_ms - 86_400_000) * 1_000_000 + next(serial) % 1_000_000))
    latest: dict[Path, int] = {}
    for f, ns in mtimes:
        os.utime(f, ns=(ns, ns))
        d = f.parent
        while d != out:
            latest[d] = max(latest.get(d, 0), ns)
            d = d.parent
    for d, ns in sorted(latest.items(), key=lambda kv: -len(kv[0].parts)):
        os.utime(d, ns=(ns, ns))
    os.utime(manifest_path, ns=(now_ms * 1_000_000,) * 2)
    return manifest_path


def _end_ms(row: dict[str, Any], plan: SessionPlan) -> int:
    last = row.get("last_activity")
    if not last:
        return plan.start_ms
    dt = datetime.strptime(last, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000) + 250


def _stats(manifest: Path) -> dict[str, Any]:
    """Size percentiles and kind counts of a generated corpus (for the README and runs)."""
    rows = [orjson.loads(line) for line in manifest.read_bytes().splitlines()]
    sizes = sorted(r["size"] for r in rows)

    def pct(p: float) -> int:
        return sizes[min(len(sizes) - 1, int(p * len(sizes)))]

    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    sub = sum(s["size"] for r in rows for s in r["subagents"])
    per_project: dict[str, int] = {}
    for r in rows:
        per_project[r["project_key"]] = per_project.get(r["project_key"], 0) + 1
    return {
        "sessions": len(rows),
        "projects": len(per_project),
        "sessions_per_project": [min(per_project.values()), max(per_project.values())],
        "main_bytes": sum(sizes),
        "subagent_bytes": sub,
        "p50": pct(0.5),
        "p90": pct(0.9),
        "p99": pct(0.99),
        "max": sizes[-1],
        "over_10mib": sum(1 for s in sizes if s >= 10 * MIB),
        "kinds": kinds,
        "with_pr_links": sum(1 for r in rows if r["pr_links"]),
        "with_custom_title": sum(1 for r in rows if r["custom_title"]),
        "with_tag": sum(1 for r in rows if r["tag"]),
        "deep": sum(1 for r in rows if r["deep"]),
        "truncated": sum(1 for r in rows if r["truncated"]),
        "with_subagents": sum(1 for r in rows if r["subagents"]),
    }


def _parse_now(text: str) -> datetime:
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.corpus", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--out",
        required=True,
        type=Path,
        help="config dir to create (gets projects/ and manifest.jsonl)",
    )
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--projects", type=int, default=50)
    ap.add_argument("--size-mb", type=float, default=400.0, help="total MiB of main transcripts")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=int, default=1, help="multiply sessions and size (10 → ~4 GB)")
    ap.add_argument(
        "--now",
        type=_parse_now,
        default=DEFAULT_NOW,
        help="reference time, ISO (default 2026-11-29T00:00:00Z)",
    )
    ap.add_argument("--overwrite", action="store_true", help="replace an existing out/projects")
    ap.add_argument(
        "--profile",
        choices=PROFILES,
        default="tool-heavy",
        help="tool output most of the bytes (default), or prose about a third of them",
    )
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    manifest = generate(
        args.out,
        args.sessions,
        args.projects,
        args.size_mb,
        args.seed,
        args.scale,
        args.now,
        overwrite=args.overwrite,
        profile=args.profile,
    )
    elapsed = time.perf_counter() - t0
    stats = _stats(manifest)
    stats["seconds"] = round(elapsed, 2)
    sys.stdout.write(orjson.dumps(stats, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
