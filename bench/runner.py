"""The benchmark runner: every figure of the performance goals (bench/README.md) in one run, fast *and* right.

``python -m bench [--corpus DIR] [--out results.json] [--runs 5] [--scale-check] [--quick]``

Machines here are shared and noisy, so each figure is a ratio against a baseline measured
in the same run on the same corpus: ours and the baseline are timed alternately (a
warm-up pair first, then ``--runs`` pairs), and the table shows the median of each with
the min–max beside it. Timed work runs in this process except where a process is the
thing measured (the CLI, ``rg``) or where memory must be isolated (the peak RSS of a cold
build runs in a child process, read from ``resource``).

Speed alone proves nothing: the answers are checked against the corpus generator's
``manifest.jsonl`` (titles, tags, branches, PR links, planted search words) and each check
prints PASS or FAIL. The exit status is 1 when a check fails; unmet goals are reported in
the table, not as a failure of the run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from bench.corpus import PROFILES

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "bench" / "out" / "results.json"
DEFAULT_CORPUS = {"sessions": 2000, "projects": 50, "size_mb": 400.0, "seed": 1}
QUICK_CORPUS = {"sessions": 60, "projects": 5, "size_mb": 4.0, "seed": 1}
DEFAULT_WORD = "thornwhistle"  # planted: 100 sessions of 2,000, in a known place each
PICKER_LIMIT = 50  # a screenful: the query size whose latency should not grow with the corpus
SCALE = 10
# Free space the 10x check needs beyond an already generated corpus: the index and its WAL
# (goal: at most a quarter of the corpus) with a margin for the file system.
INDEX_SHARE = 0.4

# Row names, in table order. Fixed so a reader (and the smoke test) can rely on them.
COLD = "cold full index"
REFRESH = "no-change refresh"
LIST = "list --scope all (library)"
LIST_DECODED = "list --scope all, decoded afresh (library)"
INFO = "get_session_info"
SEARCH_LIB = "search WORD (library)"
SEARCH_CLI = "search WORD (CLI process)"
READ_CLI = "reading command, nothing changed (CLI process)"
WATCH = "append -> visible under watch"
RSS = "peak RSS of a cold build"
SIZE = "index size / corpus size"
GROW_LIST = "10x corpus: list latency growth"
GROW_SEARCH = "10x corpus: search latency growth"
GROW_RSS = "10x corpus: peak RSS of a cold build"
ROW_NAMES = (
    COLD,
    REFRESH,
    LIST,
    LIST_DECODED,
    INFO,
    SEARCH_LIB,
    SEARCH_CLI,
    READ_CLI,
    WATCH,
    RSS,
    SIZE,
    GROW_LIST,
    GROW_SEARCH,
    GROW_RSS,
)


# ----------------------------------------------------------------- results
@dataclass
class Timing:
    """Seconds per run: the median is the figure, min and max show the spread."""

    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def text(self) -> str:
        if len(self.samples) == 1:
            return _ms(self.median)
        return f"{_ms(self.median)} ({_ms(min(self.samples))}–{_ms(max(self.samples))})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "median_s": self.median,
            "min_s": min(self.samples),
            "max_s": max(self.samples),
            "samples_s": self.samples,
        }


@dataclass
class Row:
    figure: str
    ours: str = "not measured"
    baseline: str = "—"
    ratio: float | None = None
    goal: str = "—"
    met: bool | None = None  # None: no goal, or nothing measured
    note: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def compare(self, limit: float) -> None:
        """Set ``met`` from ``ratio`` against an upper bound."""
        self.met = self.ratio is not None and self.ratio <= limit


@dataclass
class Check:
    name: str
    passed: bool
    detail: str = ""


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    if ms >= 100:
        return f"{ms:,.0f} ms"
    if ms >= 10:
        return f"{ms:.1f} ms"
    return f"{ms:.2f} ms"


def _mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:,.1f} MB"


def paired(
    ours: Callable[[], Any], baseline: Callable[[], Any], runs: int, warmup: int
) -> tuple[Timing, Timing]:
    """Time ``ours`` and ``baseline`` alternately, so a burst of load from a neighbour
    falls on both sides of the ratio rather than on one."""
    a: list[float] = []
    b: list[float] = []
    for i in range(warmup + runs):
        for fn, out in ((ours, a), (baseline, b)):
            started = time.perf_counter()
            fn()
            elapsed = time.perf_counter() - started
            if i >= warmup:
                out.append(elapsed)
    return Timing(a), Timing(b)


def timed(fn: Callable[[], Any], runs: int, warmup: int) -> Timing:
    samples = []
    for i in range(warmup + runs):
        started = time.perf_counter()
        fn()
        if i >= warmup:
            samples.append(time.perf_counter() - started)
    return Timing(samples)


# ----------------------------------------------------------------- the corpus
def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sessiondex-bench"


def ensure_corpus(
    params: dict[str, Any], scale: int = 1, log: Callable[[str], None] = print
) -> Path:
    """The generated corpus for ``params`` in the cache dir, generated once.

    Generation is deterministic, so a corpus with its manifest in place is reused; one
    without (an interrupted run) is generated again over the partial tree.
    """
    from bench.corpus import generate

    profile = params.get("profile", "tool-heavy")
    name = (
        f"corpus-n{params['sessions']}-p{params['projects']}-m{params['size_mb']:g}"
        f"-s{params['seed']}-x{scale}"
    ) + ("" if profile == "tool-heavy" else f"-{profile}")
    out = cache_dir() / name
    if (out / "manifest.jsonl").is_file():
        return out
    log(f"generating the corpus into {out} ...")
    out.parent.mkdir(parents=True, exist_ok=True)
    generate(
        out,
        sessions=params["sessions"],
        projects=params["projects"],
        size_mb=params["size_mb"],
        seed=params["seed"],
        scale=scale,
        overwrite=True,
        profile=profile,
    )
    return out


def ensure_bytecode() -> int:
    """Compile sessiondex's modules to bytecode, as ``pip install`` does for a regular
    install, and return how many files were (re)written.

    The processes the bench times (the CLI, the picker's start-up, the MCP server) would
    otherwise compile every module of ours that has no ``.pyc`` yet, on every start, in
    an editable install run with ``PYTHONDONTWRITEBYTECODE`` set (this project's CI
    machines set it): ~35 ms per process, which a user's installed copy never pays."""
    import compileall
    import io

    import sessiondex

    package = Path(sessiondex.__file__).parent  # as imported: an editable install links files
    with contextlib.redirect_stdout(io.StringIO()) as listing:
        compileall.compile_dir(str(package), quiet=0)
    return listing.getvalue().count("Compiling ")


def jsonl_files(root: Path) -> list[Path]:
    """Every regular ``*.jsonl`` file under ``root/projects`` (what rg and the floor read)."""
    found = []
    for dirpath, _dirs, names in os.walk(root / "projects"):
        for name in names:
            if name.endswith(".jsonl"):
                found.append(Path(dirpath) / name)
    return found


def corpus_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in jsonl_files(root))


def read_manifest(root: Path) -> list[dict[str, Any]]:
    with open(root / "manifest.jsonl", "rb") as f:
        return [orjson.loads(line) for line in f if line.strip()]


def bare_parse(files: list[Path]) -> int:
    """The floor of a cold build: read every file and ``orjson.loads`` every line."""
    loads, error = orjson.loads, orjson.JSONDecodeError
    lines = 0
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        for line in data.split(b"\n"):
            if line:
                lines += 1
                try:
                    loads(line)
                except error:
                    pass  # a truncated last line: the reader skips it too
    return lines


# ----------------------------------------------------------------- helpers
def db_bytes(db_path: Path) -> int:
    return sum(p.stat().st_size for p in (db_path, Path(f"{db_path}-wal")) if p.exists())


def remove_db(db_path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_path}{suffix}").unlink(missing_ok=True)


_BUILD_CHILD = """
import json, resource, sys, time
from pathlib import Path
from sessiondex.indexer.db import open_db
from sessiondex.indexer.refresh import refresh
started = time.perf_counter()
db = open_db(sys.argv[1])
stats = refresh(db, [Path(p) for p in sys.argv[2:]])
db.close()
try:  # this process's own peak (Linux); see build_in_child for why not ru_maxrss
    with open("/proc/self/status") as status:
        hwm = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
except (OSError, StopIteration, ValueError):
    hwm = None
print(json.dumps({"seconds": time.perf_counter() - started, "sessions": stats.sessions,
                  "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "vmhwm_kib": hwm}))
"""


def build_in_child(db_path: Path, roots: list[Path]) -> dict[str, Any]:
    """A cold build in a child process; its peak RSS is the child's ``VmHWM``.

    Not ``ru_maxrss``: Linux folds the high-water mark of the memory a process had
    before ``exec`` into it, and Python starts children with ``vfork``, so a child's
    ``RUSAGE_SELF`` (and the parent's ``RUSAGE_CHILDREN``) is at least the *bench's*
    own RSS at that moment: the second profile of a run read 136-216 MB for a build
    whose own peak was ~78 MB. ``VmHWM`` (``/proc/self/status``) belongs to the process
    image after ``exec``. Where there is no ``/proc`` the child's ``ru_maxrss`` is the
    figure, an upper bound. Both readings are kept in the result.
    """
    remove_db(db_path)
    proc = subprocess.run(
        [sys.executable, "-c", _BUILD_CHILD, str(db_path), *map(str, roots)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"cold build child failed: {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    peak_kib = result.get("vmhwm_kib") or result["maxrss_kib"]  # Linux reports KiB
    result["peak_rss_bytes"] = peak_kib * 1024
    result["rusage_children_kib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return result


@contextlib.contextmanager
def config_env(root: Path) -> Iterator[None]:
    """``CLAUDE_CONFIG_DIR`` pointed at the corpus for the SDK, restored afterwards so the
    child processes (given ``--config-dir``) never see it."""
    old = os.environ.get("CLAUDE_CONFIG_DIR")
    os.environ["CLAUDE_CONFIG_DIR"] = str(root)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("CLAUDE_CONFIG_DIR", None)
        else:
            os.environ["CLAUDE_CONFIG_DIR"] = old


def sdk_module() -> Any | None:
    try:
        import claude_agent_sdk
    except ImportError:
        return None
    return claude_agent_sdk


def sessiondex_command() -> list[str]:
    """The console script users run, next to this interpreter when installed."""
    script = Path(sys.executable).parent / "sessiondex"
    if script.exists():
        return [str(script)]
    found = shutil.which("sessiondex")
    if found:
        return [found]
    return [sys.executable, "-c", "from sessiondex.cli.main import cli; cli()"]


def run_process(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, capture_output=True, cwd=tempfile.gettempdir(), check=False)


# ----------------------------------------------------------------- correctness
_PR_FIELDS = ("url", "number", "provider")
_SAME_FIELDS = (
    "custom_title",
    "tag",
    "branches",
    "git_branch",
    "ai_title",
    "summary",
    "cwd",
    "entrypoint",
    "is_sidechain",
    "message_count",
)
# The generator names GitHub Enterprise links as Claude Code's forge classifier does
# (docs/pull-requests.md); the JSON contract says "GitHub Enterprise is
# `github` on another host", and the spec wins.
_CONTRACT_PROVIDER = {"github-enterprise": "github"}
_PR_REPOSITORY = "pr_links.repository"


def _field_of(obj: dict[str, Any], name: str) -> Any:
    """A session object's value for one check, in the manifest's shape."""
    if name == "pr_links":
        return [{k: p[k] for k in _PR_FIELDS} for p in obj["pr_links"]]
    if name == _PR_REPOSITORY:
        return [p["repository"] for p in obj["pr_links"]]
    if name == "pr_mentions":
        return [p["url"] for p in obj["pr_mentions"]]
    return obj[name]


def _expected(m: dict[str, Any], name: str) -> Any:
    """The manifest's value for one check."""
    if name == "pr_links":
        return [
            {
                "url": p["url"],
                "number": p["number"],
                "provider": _CONTRACT_PROVIDER.get(p["provider"], p["provider"]),
            }
            for p in m["pr_links"]
        ]
    if name == _PR_REPOSITORY:
        # prRepository as the pr-link record carries it: "the path between the host and
        # the PR segment" (docs/pull-requests.md#normalized-form).
        return [p["repository"] for p in m["pr_links"]]
    if name == "pr_mentions":
        # The manifest lists them as the text names them; the index in number, then
        # URL order (indexer.objects.build_object).
        from sessiondex.transcripts.pr_urls import parse_pr_url

        def number(url: str) -> int:
            parsed = parse_pr_url(url)
            return parsed.number if parsed is not None else 0

        return sorted(m[name], key=lambda url: (number(url), url))
    return m[name]


def _first_difference(ours: Any, theirs: Any) -> tuple[Any, Any]:
    """The innermost differing pair of two equal-shaped values (lists of PR dicts are
    long; the table should show the one field that differs)."""
    while True:
        if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
            pairs = [(a, b) for a, b in zip(ours, theirs) if a != b]
        elif isinstance(ours, dict) and isinstance(theirs, dict) and ours.keys() == theirs.keys():
            pairs = [({k: ours[k]}, {k: theirs[k]}) for k in ours if ours[k] != theirs[k]]
            return pairs[0] if len(pairs) == 1 else (ours, theirs)
        else:
            return ours, theirs
        if not pairs:
            return ours, theirs
        ours, theirs = pairs[0]


def search_expectation(manifest: list[dict[str, Any]], word: str) -> set[str]:
    """Sessions whose *message text* holds ``word``: tool output is not indexed unless
    ``index --include-tools``, so a word planted only in a tool result is not a hit."""
    return {
        m["session_id"]
        for m in manifest
        if any(p["word"] == word and p["where"] in ("user", "assistant") for p in m["planted"])
    }


def correctness(
    db: Any,
    manifest: list[dict[str, Any]],
    info_fn: Callable[[str], Any] | None,
    info_id: str | None,
) -> list[Check]:
    from bench.vocab import PLANTED
    from sessiondex.query.filters import Filters
    from sessiondex.query.listing import list_sessions
    from sessiondex.query.search import search

    everything = Filters(scope="all", all_kinds=True, include_archived=True)
    objects = {o["session_id"]: o for o in list_sessions(db, everything)}
    wanted = {m["session_id"]: m for m in manifest}
    checks = []
    missing = sorted(set(wanted) - set(objects))
    extra = sorted(set(objects) - set(wanted))
    checks.append(
        Check(
            "every manifest session is indexed, and nothing else",
            not missing and not extra,
            f"{len(objects)} indexed, {len(wanted)} in manifest"
            + (f"; missing {missing[:3]}" if missing else "")
            + (f"; extra {extra[:3]}" if extra else ""),
        )
    )
    for name in (*_SAME_FIELDS, "pr_links", _PR_REPOSITORY, "pr_mentions"):
        wrong = [
            sid
            for sid, m in wanted.items()
            if sid in objects and _field_of(objects[sid], name) != _expected(m, name)
        ]
        detail = f"{len(wanted) - len(wrong) - len(missing)}/{len(wanted)} equal"
        if wrong:
            sid = wrong[0]
            ours, theirs = _first_difference(
                _field_of(objects[sid], name), _expected(wanted[sid], name)
            )
            detail += (
                f"; e.g. {sid} ({wanted[sid]['kind']}): index {ours!r:.160} != "
                f"manifest {theirs!r:.160}"
            )
        label = "pr_links (url, number, provider)" if name == "pr_links" else name
        checks.append(Check(f"{label} of every session = manifest", not wrong, detail))
    deep = [sid for sid, m in wanted.items() if m["deep"] and sid in objects]
    checks.append(
        Check(
            "titles/tags written deep inside big files are found",
            all(
                objects[s]["custom_title"] == wanted[s]["custom_title"]
                and objects[s]["tag"] == wanted[s]["tag"]
                for s in deep
            ),
            f"{len(deep)} sessions with a deep title or tag",
        )
    )
    for word, _count in PLANTED:
        expected = search_expectation(manifest, word)
        got = {o["session_id"] for o in search(db, word, everything)}
        detail = f"{len(got)} found, {len(expected)} expected"
        if got != expected:
            detail += (
                f"; missing {sorted(expected - got)[:3]}, unexpected {sorted(got - expected)[:3]}"
            )
        checks.append(Check(f"search {word!r} = manifest's sessions", got == expected, detail))
    if info_fn is not None and info_id is not None:
        info = info_fn(info_id)
        m = wanted[info_id]
        ok = (
            info is not None
            and getattr(info, "custom_title", None) == m["custom_title"]
            and getattr(info, "git_branch", None) == m["git_branch"]
        )
        checks.append(
            Check(
                "get_session_info (ours) = manifest (custom_title, git_branch)",
                ok,
                f"session {info_id}",
            )
        )
    return checks


# ----------------------------------------------------------------- the bench
@dataclass
class Options:
    corpus: Path | None = None
    out: Path = DEFAULT_OUT
    runs: int = 5
    warmup: int = 1
    scale_check: bool = False
    quick: bool = False
    word: str = DEFAULT_WORD
    appends: int = 100
    workdir: Path | None = None
    profile: str = "tool-heavy"
    peers: bool = False


class Bench:
    """One run: measures every row, then the checks, and renders them."""

    def __init__(self, opts: Options, log: Callable[[str], None] = print) -> None:
        self.opts = opts
        self.log = log
        self.rows: dict[str, Row] = {name: Row(name) for name in ROW_NAMES}
        self.checks: list[Check] = []
        self.info: dict[str, Any] = {}
        self.rss_1x: int | None = None

    # -- plumbing
    def _guard(self, name: str, fn: Callable[[Row], None]) -> None:
        """One row's failure (a missing tool, a crash) is reported in that row; the other
        rows are still measured."""
        row = self.rows[name]
        self.log(f"measuring: {name}")
        try:
            fn(row)
        except Exception as exc:  # noqa: BLE001 - reported in the table, never hidden
            row.ours, row.met = "error", False
            row.note = f"{type(exc).__name__}: {exc}"[:300]
            self.log(f"  {row.note}")

    def run(self) -> int:
        from sessiondex.indexer.db import open_db
        from sessiondex.transcripts.config import config_dirs

        opts = self.opts
        params = {**(QUICK_CORPUS if opts.quick else DEFAULT_CORPUS), "profile": opts.profile}
        self.root = (
            opts.corpus.resolve()
            if opts.corpus is not None
            else ensure_corpus(params, log=self.log)
        )
        self.roots = config_dirs([str(self.root)])
        self.manifest = read_manifest(self.root)
        self.files = jsonl_files(self.root)
        self.corpus_size = sum(p.stat().st_size for p in self.files)
        self.sdk = sdk_module()
        self.rg = shutil.which("rg")
        self.info = machine_info()
        self.info.update(
            {
                "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "profile": None if opts.corpus else opts.profile,
                "corpus": {
                    "path": str(self.root),
                    "files": len(self.files),
                    "bytes": self.corpus_size,
                    "sessions": len(self.manifest),
                    "params": None if opts.corpus else params,
                },
                "runs": opts.runs,
                "warmup": opts.warmup,
                "word": opts.word,
                "quick": opts.quick,
                "loadavg_start": os.getloadavg(),
                "rg": rg_version(self.rg),
                "claude_agent_sdk": getattr(self.sdk, "__version__", None),
            }
        )
        self.log(
            f"corpus {self.root}: {len(self.manifest)} sessions, {len(self.files)} "
            f".jsonl files, {_mb(self.corpus_size)}; load {os.getloadavg()[0]:.2f}"
        )
        with tempfile.TemporaryDirectory(prefix="sessiondex-bench-", dir=opts.workdir) as scratch:
            self.work = Path(scratch)
            self.db_path = self.work / "index.db"
            bare_parse(self.files)  # warm the page cache before anything is timed
            # First child of this process: RUSAGE_CHILDREN is this build's alone.
            self._guard(RSS, self.measure_rss)
            if not self.db_path.exists():
                open_db(self.db_path).close()
                from sessiondex.indexer.refresh import refresh

                db = open_db(self.db_path)
                refresh(db, self.roots)
                db.close()
            self.db = open_db(self.db_path)
            try:
                self._guard(COLD, self.measure_cold)
                self._guard(REFRESH, self.measure_refresh)
                self._guard(LIST, self.measure_list)
                self._guard(LIST_DECODED, self.measure_list_decoded)
                self._guard(INFO, self.measure_info)
                self._guard(SEARCH_LIB, self.measure_search_lib)
                self._guard(SEARCH_CLI, self.measure_search_cli)
                self._guard(READ_CLI, self.measure_read_cli)
                self._guard(SIZE, self.measure_size)
                self.log("checking answers against manifest.jsonl")
                try:
                    self.checks = correctness(
                        self.db, self.manifest, self._our_info, self._info_session()
                    )
                except Exception as exc:  # noqa: BLE001 - a crash is a failed check
                    self.checks = [
                        Check("correctness checks ran", False, f"{type(exc).__name__}: {exc}")
                    ]
                self._guard(WATCH, self.measure_watch)
                self.measure_scale()
            finally:
                self.db.close()
        self.info["loadavg_end"] = os.getloadavg()
        return 0 if all(c.passed for c in self.checks) else 1

    # -- rows
    def measure_rss(self, row: Row) -> None:
        result = build_in_child(self.db_path, self.roots)
        self.rss_1x = result["peak_rss_bytes"]
        row.ours = _mb(self.rss_1x)
        row.goal = "≤ 200 MB, flat in corpus size"
        row.met = self.rss_1x <= 200e6
        row.note = f"child process, {result['seconds']:.1f} s, {result['sessions']} sessions"
        row.data = result

    def measure_cold(self, row: Row) -> None:
        from sessiondex.indexer.db import open_db
        from sessiondex.indexer.refresh import refresh

        path = self.work / "cold.db"

        def cold() -> None:
            remove_db(path)
            db = open_db(path)
            try:
                refresh(db, self.roots)
            finally:
                db.close()

        ours, base = paired(cold, lambda: bare_parse(self.files), self.opts.runs, self.opts.warmup)
        remove_db(path)
        self._fill(row, ours, base, 3.0, "bare read + orjson.loads")
        row.note = (
            f"floor {self.corpus_size / base.median / 1e6:,.0f} MB/s, ours "
            f"{self.corpus_size / ours.median / 1e6:,.0f} MB/s"
        )

    def measure_refresh(self, row: Row) -> None:
        from sessiondex.indexer.refresh import refresh

        sdk_list = self._sdk_list()
        if sdk_list is None:
            ours = timed(lambda: refresh(self.db, self.roots), self.opts.runs, self.opts.warmup)
            row.ours, row.note = ours.text(), "baseline not measured: claude-agent-sdk missing"
            row.goal, row.data = "≤ 0.1", {"ours": ours.as_dict()}
            return
        stats = refresh(self.db, self.roots)
        if stats.new or stats.grown or stats.rewritten or stats.removed:
            raise RuntimeError(f"the index was not up to date: {stats.as_dict()}")
        ours, base = paired(
            lambda: refresh(self.db, self.roots), sdk_list, self.opts.runs, self.opts.warmup
        )
        self._fill(row, ours, base, 0.1, "SDK list_sessions()")
        row.note = f"SDK lists {len(sdk_list())} sessions; ours stats {stats.files_seen} files"

    def measure_list(self, row: Row) -> None:
        """``Index.list(scope="all")`` as a long-lived program calls it again and again:
        with nothing changed in between, an answer copies the objects the last one
        decoded (query.sessions.ListingMemo); :meth:`measure_list_decoded` is the cost
        of the first listing after a change."""
        from sessiondex import Index

        # The path, not the open handle: an Index keeps listings only over connections
        # it opened itself (one handed in is the caller's to change behind its back).
        index = Index(self.db_path, self.roots, refresh=False)
        ours_fn = lambda: index.list(scope="all")  # noqa: E731
        try:
            self._list_row(row, ours_fn, 0.02)
            listed = len(ours_fn())
        finally:
            index.close()
        row.note = (
            f"{listed} sessions listed (picker kinds), nothing changed since the"
            f" last call; {row.note}"
        )

    def measure_list_decoded(self, row: Row) -> None:
        """The listing with every stored object decoded: what the first call after a
        change costs (and every call of a one-shot process, the CLI's ``list``)."""
        from sessiondex.query.filters import Filters
        from sessiondex.query.listing import list_sessions

        filters = Filters(scope="all")
        self._list_row(row, lambda: list_sessions(self.db, filters), None)
        row.note = f"every stored object decoded, as after a change; {row.note}"

    def _list_row(self, row: Row, ours_fn: Callable[[], Any], limit: float | None) -> None:
        sdk_list = self._sdk_list()
        if sdk_list is None:
            ours = timed(ours_fn, self.opts.runs, self.opts.warmup)
            row.ours, row.goal = ours.text(), f"≤ {limit:g}" if limit is not None else "—"
            row.note, row.data = (
                "baseline not measured: claude-agent-sdk missing",
                {"ours": ours.as_dict()},
            )
            return
        ours, base = paired(ours_fn, sdk_list, self.opts.runs, self.opts.warmup)
        self._fill(row, ours, base, limit, "SDK list_sessions()")
        row.note = f"SDK lists {len(sdk_list())}"

    def _info_session(self) -> str | None:
        """A typical visible session with a custom title (not a deep one the SDK's
        head/tail read would miss): the first such in the manifest."""
        for m in self.manifest:
            if m["kind"] == "normal" and m["custom_title"] and not m["deep"]:
                return str(m["session_id"])
        return None

    def _our_info(self, session_id: str) -> Any:
        """``query.sdk_api.get_session_info`` from the open index (no refresh: the
        refresh's cost is its own row), else ``query.resolve.resolve`` by ID."""
        try:
            from sessiondex.sdk import get_session_info
        except ImportError:
            from sessiondex.query.resolve import resolve

            return resolve(self.db, session_id, roots=self.roots)
        return get_session_info(session_id, db=self.db, config_dir=self.root, refresh=False)

    def measure_info(self, row: Row) -> None:
        sid = self._info_session()
        if sid is None:
            raise RuntimeError("no normal session with a custom title in the manifest")
        ours_fn = lambda: self._our_info(sid)  # noqa: E731
        if self.sdk is None:
            ours = timed(ours_fn, self.opts.runs, self.opts.warmup)
            row.ours, row.note = ours.text(), "baseline not measured: claude-agent-sdk missing"
            row.data = {"ours": ours.as_dict()}
            return

        def sdk_info() -> Any:
            with config_env(self.root):
                return self.sdk.get_session_info(sid)

        ours, base = paired(ours_fn, sdk_info, self.opts.runs, self.opts.warmup)
        self._fill(row, ours, base, None, "SDK get_session_info()")
        found = sdk_info()
        row.note = (
            f"session {sid[:8]}, index lookup without refresh; SDK "
            f"{'found it' if found is not None else 'returned None'}"
        )

    def measure_search_lib(self, row: Row) -> None:
        from sessiondex.query.filters import Filters
        from sessiondex.query.search import search

        filters = Filters(scope="all")
        ours_fn = lambda: search(self.db, self.opts.word, filters)  # noqa: E731
        if self.rg is None:
            ours = timed(ours_fn, self.opts.runs, self.opts.warmup)
            row.ours, row.goal = ours.text(), "≤ 0.1"
            row.note = "baseline not measured: rg not found (run bench/setup.sh)"
            row.data = {"ours": ours.as_dict()}
            return
        rg_fn = self._rg_fn()
        ours, base = paired(ours_fn, rg_fn, self.opts.runs, self.opts.warmup)
        self._fill(row, ours, base, 0.1, f"rg -l -F {self.opts.word} (process)")
        row.note = (
            f"{len(ours_fn())} sessions found; rg lists {len(rg_fn().stdout.splitlines())} files"
        )

    def measure_search_cli(self, row: Row) -> None:
        argv = [
            *sessiondex_command(),
            "--config-dir",
            str(self.root),
            "--db",
            str(self.db_path),
            "--no-refresh",
            "search",
            self.opts.word,
            "--scope",
            "all",
            "--json",
        ]

        def cli() -> None:
            proc = run_process(argv)
            if proc.returncode != 0:
                raise RuntimeError(
                    f"sessiondex search exited {proc.returncode}: "
                    f"{proc.stderr.decode(errors='replace')[-500:]}"
                )

        if self.rg is None:
            ours = timed(cli, self.opts.runs, self.opts.warmup)
            row.ours, row.goal = ours.text(), "≤ 1.5"
            row.note = "baseline not measured: rg not found (run bench/setup.sh)"
            row.data = {"ours": ours.as_dict()}
            return
        ours, base = paired(cli, self._rg_fn(), self.opts.runs, self.opts.warmup)
        self._fill(row, ours, base, 1.5, f"rg -l -F {self.opts.word} (process)")
        started = time.perf_counter()
        run_process([*sessiondex_command(), "--help"])
        row.note = f"start-up alone (sessiondex --help): {_ms(time.perf_counter() - started)}"

    def measure_read_cli(self, row: Row) -> None:
        """``list`` as a user runs it, the whole process: the check that no transcript
        changed (no ``--no-refresh``), a page of the listing and the expiring warning."""
        argv = [
            *sessiondex_command(),
            "--config-dir",
            str(self.root),
            "--db",
            str(self.db_path),
            "list",
            "--scope",
            "all",
            "--limit",
            "50",
            "--json",
        ]

        def cli() -> None:
            proc = run_process(argv)
            if proc.returncode != 0:
                raise RuntimeError(
                    f"sessiondex list exited {proc.returncode}: "
                    f"{proc.stderr.decode(errors='replace')[-500:]}"
                )

        ours = timed(cli, self.opts.runs, self.opts.warmup)
        row.ours, row.goal = ours.text(), "≤ 150 ms"
        row.met = ours.median <= 0.15
        row.data = {"ours": ours.as_dict()}
        row.note = "list --scope all --limit 50, no --no-refresh: the freshness check included"

    def measure_size(self, row: Row) -> None:
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = db_bytes(self.db_path)
        row.ours, row.baseline = _mb(size), _mb(self.corpus_size)
        row.ratio, row.goal = size / self.corpus_size, "≤ 0.25"
        row.compare(0.25)
        row.data = {"index_bytes": size, "corpus_bytes": self.corpus_size}

    def measure_watch(self, row: Row) -> None:
        try:
            from bench.watch_latency import measure_append_latency
        except ImportError:
            row.note = "not measured: bench/watch_latency.py is not there yet"
            return
        appends = 5 if self.opts.quick else self.opts.appends
        result = measure_append_latency(self.root, self.db_path, appends=appends)
        row.ours = f"p95 {result['p95_ms']} ms (p50 {result['p50_ms']}, max {result['max_ms']})"
        row.goal = "p95 ≤ 300 ms"
        row.met = bool(result["met"])
        row.note = (
            f"{result['appends']} appends, {result['timeouts']} timeouts, "
            f"{result['mode']} watcher, {result['observer']} events, debounce "
            f"{result['debounce_ms']} ms"
        )
        row.data = result

    def measure_scale(self) -> None:
        names = (GROW_LIST, GROW_SEARCH, GROW_RSS)
        if not self.opts.scale_check:
            for name in names:
                self.rows[name].ours = "not run (use --scale-check)"
            return
        if self.opts.corpus is not None:
            for name in names:
                self.rows[name].ours = "not run: --scale-check needs the generated corpus"
                self.rows[name].note = "drop --corpus to compare the default corpus with its 10x"
            return
        self.log(f"measuring: {', '.join(names)}")
        params = {
            **(QUICK_CORPUS if self.opts.quick else DEFAULT_CORPUS),
            "profile": self.opts.profile,
        }
        target = cache_dir()
        target.mkdir(parents=True, exist_ok=True)
        need = self.corpus_size * SCALE * INDEX_SHARE
        existing = [
            p
            for p in target.glob(
                f"corpus-n{params['sessions']}-*-x{SCALE}"
                + ("" if self.opts.profile == "tool-heavy" else f"-{self.opts.profile}")
            )
            if (p / "manifest.jsonl").is_file()
        ]
        if not existing:
            need += self.corpus_size * SCALE * 1.05
        free = min(shutil.disk_usage(target).free, shutil.disk_usage(self.work).free)
        if free < need:
            for name in names:
                self.rows[name].ours = (
                    f"skipped: {_mb(free)} free, about {_mb(need)} "
                    "needed for the 10x corpus and its index"
                )
            return
        try:
            from sessiondex.transcripts.config import config_dirs

            big = ensure_corpus(params, scale=SCALE, log=self.log)
            big_roots = config_dirs([str(big)])
            big_db_path = self.work / "index-10x.db"
            built = build_in_child(big_db_path, big_roots)
        except Exception as exc:  # noqa: BLE001 - reported in the rows
            for name in names:
                self.rows[name].ours, self.rows[name].met = "error", False
                self.rows[name].note = f"{type(exc).__name__}: {exc}"[:300]
            return
        rss = self.rows[GROW_RSS]
        rss.ours, rss.goal = _mb(built["peak_rss_bytes"]), "≤ 200 MB (flat)"
        if self.rss_1x is not None:
            rss.baseline = f"{_mb(self.rss_1x)} at 1x"
            rss.ratio = built["peak_rss_bytes"] / self.rss_1x
        rss.met = built["peak_rss_bytes"] <= 200e6
        rss.note = f"cold build of the 10x corpus took {built['seconds']:.1f} s"
        rss.data = built
        self._guard(GROW_LIST, lambda row: self._growth(row, big_db_path, "list"))
        self._guard(GROW_SEARCH, lambda row: self._growth(row, big_db_path, "search"))
        remove_db(big_db_path)

    def _growth(self, row: Row, big_db_path: Path, kind: str) -> None:
        """Latency at 10x ÷ latency at 1x for a screenful of results (the output does not
        grow, so this measures the index); the full answer (10x the rows) is in the note."""
        from sessiondex.indexer.db import open_db
        from sessiondex.query.filters import Filters
        from sessiondex.query.listing import list_sessions
        from sessiondex.query.search import search

        big = open_db(big_db_path)
        try:

            def query(db: Any, limit: int | None) -> Callable[[], Any]:
                filters = Filters(scope="all", limit=limit)
                if kind == "list":
                    return lambda: list_sessions(db, filters)
                return lambda: search(db, self.opts.word, filters)

            small_t, big_t = paired(
                query(self.db, PICKER_LIMIT),
                query(big, PICKER_LIMIT),
                self.opts.runs,
                self.opts.warmup,
            )
            small_all, big_all = paired(
                query(self.db, None), query(big, None), self.opts.runs, self.opts.warmup
            )
        finally:
            big.close()
        row.ours, row.baseline = big_t.text(), f"{small_t.text()} at 1x"
        row.ratio = big_t.median / small_t.median
        row.goal = "≤ 2×"
        row.compare(2.0)
        row.note = (
            f"--limit {PICKER_LIMIT}; without a limit (10x the rows): "
            f"{big_all.text()} vs {small_all.text()}, "
            f"×{big_all.median / small_all.median:.1f}"
        )
        row.data = {
            "limited": {"x1": small_t.as_dict(), "x10": big_t.as_dict()},
            "all": {"x1": small_all.as_dict(), "x10": big_all.as_dict()},
        }

    # -- shared pieces
    def _sdk_list(self) -> Callable[[], list[Any]] | None:
        if self.sdk is None:
            return None

        def sdk_list() -> list[Any]:
            with config_env(self.root):
                return list(self.sdk.list_sessions())

        return sdk_list

    def _rg_fn(self) -> Callable[[], subprocess.CompletedProcess[bytes]]:
        assert self.rg is not None
        argv = [self.rg, "-l", "-F", self.opts.word, str(self.root / "projects")]
        return lambda: run_process(argv)

    def _fill(
        self, row: Row, ours: Timing, base: Timing, limit: float | None, baseline: str
    ) -> None:
        row.ours, row.baseline = ours.text(), f"{base.text()} [{baseline}]"
        row.ratio = ours.median / base.median
        if limit is not None:
            row.goal = f"≤ {limit:g}"
            row.compare(limit)
        row.data = {"ours": ours.as_dict(), "baseline": base.as_dict(), "baseline_name": baseline}

    # -- output
    def table(self) -> str:
        header = ("figure", "ours (median, min–max)", "baseline", "ratio", "goal", "met?")
        lines = [header]
        for row in self.rows.values():
            ratio = (
                "—"
                if row.ratio is None
                else (f"{row.ratio:.3f}" if row.ratio < 0.1 else f"{row.ratio:.2f}")
            )
            met = {True: "yes", False: "NO", None: "—"}[row.met]
            lines.append((row.figure, row.ours, row.baseline, ratio, row.goal, met))
        out = ["| " + " | ".join(cells) + " |" for cells in lines]
        out.insert(1, "|" + "|".join("---" for _ in header) + "|")
        notes = [f"- {row.figure}: {row.note}" for row in self.rows.values() if row.note]
        checks = [f"{'PASS' if c.passed else 'FAIL'}  {c.name}  ({c.detail})" for c in self.checks]
        return "\n".join([*out, "", "Notes:", *notes, "", "Correctness:", *checks])

    def as_json(self) -> dict[str, Any]:
        return {
            **self.info,
            "rows": [asdict(r) for r in self.rows.values()],
            "checks": [asdict(c) for c in self.checks],
            "all_checks_passed": all(c.passed for c in self.checks),
        }


# ----------------------------------------------------------------- machine
def rg_version(rg: str | None) -> str | None:
    if rg is None:
        return None
    proc = subprocess.run([rg, "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.splitlines()[0] if proc.stdout else None


def machine_info() -> dict[str, Any]:
    cpu = None
    mem = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                break
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu or platform.processor(),
        "memory": mem,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
    }


# ----------------------------------------------------------------- CLI
def parse_args(argv: list[str] | None) -> Options:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--corpus",
        type=Path,
        help="a corpus dir from bench.corpus (default: the default corpus, "
        "generated once into ~/.cache/sessiondex-bench)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="where to write the results as JSON (default: bench/out/results.json)",
    )
    ap.add_argument(
        "--runs",
        type=int,
        default=None,
        help="timed runs per figure after one warm-up (default 5; 1 with --quick)",
    )
    ap.add_argument(
        "--scale-check",
        action="store_true",
        help="also generate the 10x corpus (~4.4 GB) and report query growth",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: one run, no warm-up, a small corpus, 5 appends",
    )
    ap.add_argument("--word", default=DEFAULT_WORD, help="the word to search for")
    ap.add_argument("--appends", type=int, default=100, help="appends for the watch row")
    ap.add_argument(
        "--workdir", type=Path, help="where the scratch indexes go (default: the system temp dir)"
    )
    ap.add_argument(
        "--profile",
        choices=(*PROFILES, "both"),
        default="both",
        help="which generated corpus to measure (default both; ignored with --corpus)",
    )
    ap.add_argument(
        "--peers",
        action="store_true",
        help="also run python -m bench.peers: claude-code-log on the same corpora"
        " (bench/setup.sh installs it; ~3 min)",
    )
    args = ap.parse_args(argv)
    runs = args.runs if args.runs is not None else (1 if args.quick else 5)
    if runs < 1:
        ap.error("--runs must be at least 1")
    return Options(
        corpus=args.corpus,
        out=args.out,
        runs=runs,
        warmup=0 if args.quick else 1,
        scale_check=args.scale_check,
        quick=args.quick,
        word=args.word,
        appends=args.appends,
        workdir=args.workdir,
        profile=args.profile,
        peers=args.peers,
    )


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if opts.corpus is not None or opts.profile != "both":
        profiles = [opts.profile if opts.profile != "both" else PROFILES[0]]
    else:
        profiles = list(PROFILES)
    ensure_bytecode()
    status = 0
    results: dict[str, Any] = {}
    for profile in profiles:
        bench = Bench(replace(opts, profile=profile), log=log)
        status = max(status, bench.run())
        if len(profiles) > 1:
            print(f"\n## profile: {profile}\n")
        print(bench.table())
        results[profile] = bench.as_json()
    doc = results[profiles[0]] if len(profiles) == 1 else {"profiles": results}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    print(f"\nwritten: {opts.out}")
    if opts.peers and opts.corpus is None:
        from bench import peers

        print("\n# the peer: claude-code-log\n", flush=True)
        status = max(status, peers.main(["--profile", opts.profile]))
    return status
