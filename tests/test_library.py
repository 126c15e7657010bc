"""``sessiondex`` as a library: one import package, and ``sessiondex.Index`` as the entry
point every front end goes through (list, search, resolve, show, writes; ``db=`` as a
path or an open connection)."""

from __future__ import annotations

import importlib
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import sqlite_utils

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import sessiondex
from sessiondex import Index, NotFound
from sessiondex.indexer.db import open_db
from tests.builders import ConfigTree

REPO = Path(__file__).resolve().parent.parent
CWD = "/home/dev/shop"
OTHER = "/home/dev/blog"


@pytest.fixture
def tree(tmp_path: Path) -> ConfigTree:
    tree = ConfigTree(tmp_path / "claude")
    auth = tree.session(cwd=CWD, git_branch="feat/auth")
    auth.user("the websocket login drops after a minute")
    auth.assistant("The heartbeat interval is longer than the proxy timeout.")
    auth.meta("custom-title", customTitle="Auth refactor")
    auth.write(mtime=1_790_000_300)
    blog = tree.session(cwd=OTHER)
    blog.user("draft the release notes for 2.0")
    blog.assistant("Here is a first draft.")
    blog.write(mtime=1_790_000_100)
    return tree


def _db_variants(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "index.db"
    return {
        "str path": str(path),
        "Path": path,
        "sqlite3 connection": sqlite3.connect(path),
        "sqlite-utils Database": sqlite_utils.Database(path),
        "in-memory connection": sqlite3.connect(":memory:"),
    }


@pytest.mark.parametrize(
    "kind",
    ["str path", "Path", "sqlite3 connection", "sqlite-utils Database", "in-memory connection"],
)
def test_db_accepts_a_path_or_an_open_connection(
    tree: ConfigTree, tmp_path: Path, kind: str
) -> None:
    db = _db_variants(tmp_path)[kind]
    with Index(db, [tree.root]) as index:
        titles = [s["title"] for s in index.list(scope="all")]
        assert titles == ["Auth refactor", "draft the release notes for 2.0"]
    if not isinstance(db, (str, Path)):
        # A connection passed in is the caller's: still open after the Index closed.
        conn = db.conn if isinstance(db, sqlite_utils.Database) else db
        assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2


def test_answers_list_search_resolve_show(tree: ConfigTree, tmp_path: Path) -> None:
    with Index(tmp_path / "index.db", [tree.root]) as index:
        hits = index.search("heartbeat", scope="all")
        assert [h["title"] for h in hits] == ["Auth refactor"]
        found = index.resolve("auth REFACTOR", cwd=CWD)
        assert found.matched_by == "name"
        assert found.session["git_branch"] == "feat/auth"
        text = index.show(found.session["session_id"], format="md", cwd=CWD)
        assert "websocket login drops" in text and "heartbeat interval" in text
        assert index.list(cwd=OTHER)[0]["cwd"] == OTHER
        with pytest.raises(NotFound):
            index.resolve("no such session", cwd=CWD)
        for fmt in ("text", "md", "html", "json"):
            assert index.show(found.session["session_id"], format=fmt, cwd=CWD)
        with pytest.raises(ValueError, match="unknown format 'bogus'"):  # was the text view
            index.show(found.session["session_id"], format="bogus", cwd=CWD)


def test_writes_are_seen_by_the_next_read(tree: ConfigTree, tmp_path: Path) -> None:
    with Index(tmp_path / "index.db", [tree.root]) as index:
        session_id = index.resolve("Auth refactor", cwd=CWD).session["session_id"]
        index.rename(session_id, "Websocket heartbeat", cwd=CWD)
        index.tag(session_id, "keep", cwd=CWD)
        assert index.resolve("websocket heartbeat", cwd=CWD).session["tag"] == "keep"
    with Index(tmp_path / "index.db", [tree.root], refresh=False) as index:
        assert index.list(cwd=CWD)[0]["title"] == "Websocket heartbeat"


def test_refresh_false_answers_from_the_index_as_it_is(tree: ConfigTree, tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    with Index(db, [tree.root]) as index:
        assert len(index.list(scope="all")) == 2
    late = tree.session(cwd=CWD)
    late.user("a session written after the last refresh")
    late.write(mtime=1_790_000_900)
    with Index(db, [tree.root], refresh=False) as index:
        assert len(index.list(scope="all")) == 2
    with Index(db, [tree.root]) as index:
        assert len(index.list(scope="all")) == 3


def test_sdk_functions_take_a_db_path(tree: ConfigTree, tmp_path: Path) -> None:
    # list_sessions(db="/path") used to crash with AttributeError.
    db = str(tmp_path / "index.db")
    infos = sessiondex.list_sessions(db=db, config_dir=tree.root)
    assert [i.summary for i in infos] == ["Auth refactor", "draft the release notes for 2.0"]
    info = sessiondex.get_session_info(infos[0].session_id, db=db, config_dir=tree.root)
    assert info is not None and info.git_branch == "feat/auth"


def test_a_wrong_db_type_is_a_type_error(tree: ConfigTree) -> None:
    with pytest.raises(TypeError, match="db must be"):
        Index(42, [tree.root])  # type: ignore[arg-type]


def test_public_names_are_exported() -> None:
    for name in sessiondex.__all__:
        assert getattr(sessiondex, name) is not None
    assert set(sessiondex.__all__) == set(sessiondex._EXPORTS)
    with pytest.raises(AttributeError):
        sessiondex.no_such_name  # noqa: B018


def test_importing_the_package_stays_light() -> None:
    # Every command imports `sessiondex` first: its re-exports must load nothing heavy.
    code = "import sys, sessiondex; print(sorted(m for m in ('sqlite_utils', 'watchdog', 'rapidfuzz', 'sessiondex.index', 'sessiondex.sdk') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_index_opened_by_open_db_is_the_same_index(tree: ConfigTree, tmp_path: Path) -> None:
    db = open_db(tmp_path / "index.db")
    try:
        with Index(db, [tree.root]) as index:
            assert len(index.list(scope="all")) == 2
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2
    finally:
        db.close()


def test_the_wheel_holds_one_top_level_package(tmp_path: Path) -> None:
    """`pip install .` must put only `sessiondex` (and its dist-info) in site-packages: a
    bare `cli` or `query` package would collide with any other of those names."""
    pytest.importorskip("setuptools")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {result.stderr.strip().splitlines()[-1:]}")
    (wheel,) = tmp_path.glob("sessiondex-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"sessiondex"}
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in (
        "index.py",
        "sdk.py",
        "py.typed",
        "cli/main.py",
        "indexer/refresh.py",
        "query/search.py",
        "actions/mutations.py",
        "render/conversation.py",
        "transcripts/retention.py",
    ):
        assert f"sessiondex/{module}" in names


def test_installed_beside_unrelated_cli_and_query_packages(tmp_path: Path) -> None:
    """Another distribution's top-level `cli` and `query` packages do not shadow ours."""
    pytest.importorskip("setuptools")
    for name in ("cli", "query", "indexer", "transcripts"):
        (tmp_path / "elsewhere" / name).mkdir(parents=True)
        (tmp_path / "elsewhere" / name / "__init__.py").write_text("BROKEN = True\n")
    code = (
        "import sys; sys.path.insert(0, {!r})\n"
        "import cli, query\n"
        "assert cli.BROKEN and query.BROKEN\n"
        "from sessiondex.cli.main import cli as command\n"
        "from sessiondex.query.search import search\n"
        "print(command.name)\n"
    ).format(str(tmp_path / "elsewhere"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "cli"


# Modules a reading command with nothing to refresh must not import: each costs every
# start several ms (sqlite-utils with its plugin loading most of all), and the front
# ends' extras are not even installed by a plain `pip install sessiondex`.
_NOT_AT_STARTUP = (
    "logging",
    "tempfile",
    "subprocess",
    "shutil",  # bz2 and lzma with it, for the terminal's width (output.terminal_columns)
    "watchdog",
    "datasette",
    "textual",
    "mcp",
    "psycopg",
    "rapidfuzz",
    "sessiondex.query.prs",  # a search for a PR's URL only
    "sessiondex.query.teamdb",  # --db names the team store (store.dsn's rule says so)
    "signal",  # Ctrl-C is noted through _signal, the module signal wraps (cli/app.py)
    "sessiondex.query.resolve",  # a table's ID width is query.idprefix's
    "sessiondex.indexer.derive",  # ... and reading a transcript is resolve's
)
# ... and, in the bench's `--no-refresh search --json`, what only the freshness check
# needs (a table's ID width and list's expiry warning still import discover).
_NOT_WITHOUT_REFRESH = ("sessiondex.transcripts.discover",)
# ... and in list and search: the cleanup plan (stats counts with it; list's expiry
# warning is query.expiry's).
_NOT_IN_A_LISTING = ("sessiondex.query.cleanup",)
# As the console script runs it (pyproject.toml [project.scripts]).
_LOADED = (
    "import sys; sys.argv = ['sessiondex', *sys.argv[1:]]\n"
    "from sessiondex.cli.entry import run\n"
    "try:\n"
    "    run()\n"
    "finally:\n"
    "    print('SQLITE_UTILS', 'sqlite_utils' in sys.modules, file=sys.stderr)\n"
    f"    print('STARTUP', sorted(m for m in {_NOT_AT_STARTUP!r}"
    " if m in sys.modules), file=sys.stderr)\n"
    f"    print('NO_REFRESH', sorted(m for m in {_NOT_WITHOUT_REFRESH!r}"
    " if m in sys.modules), file=sys.stderr)\n"
    f"    print('LISTING', sorted(m for m in {_NOT_IN_A_LISTING!r}"
    " if m in sys.modules), file=sys.stderr)\n"
    "    from sessiondex.indexer import db\n"
    "    from sessiondex.query import filters\n"
    "    from sessiondex.store import dsn\n"
    "    from sessiondex.indexer import text\n"
    "    from sessiondex.transcripts import keys, reader, tags\n"
    "    lazy = (db._not_a_path, filters._relative_re, reader._json_grammar_tokens,"
    " tags._strip_re, dsn._keyword_password, dsn._userinfo_password, text.cjk_runs)\n"
    "    print('PATTERNS', [f.__name__ for f in lazy if f.cache_info().currsize],"
    " file=sys.stderr)\n"
    "    lazy = (keys._uuid_re, keys._project_dir_name_re)\n"
    "    print('KEY_PATTERNS', [f.__name__ for f in lazy if f.cache_info().currsize],"
    " file=sys.stderr)\n"
)


def test_a_reading_command_with_nothing_changed_skips_the_writer(tmp_path: Path) -> None:
    """Nothing changed since the last refresh: the command answers from a read-only
    handle, without sqlite-utils (nor the standard modules only some commands need,
    each several ms of every start); a changed transcript is still refreshed first."""
    tree = ConfigTree(tmp_path / "claude")
    first = tree.session(cwd="/work/app")
    # CJK in the session's metadata: a hit's title and first prompt are spaced as
    # indexed without compiling the CJK class (indexer/text.py _space_cjk)
    first.user("the zebrafish parser 修复测试")
    first.write(mtime=1_700_000_000)
    base = [sys.executable, "-c", _LOADED, "--config-dir", str(tree.root)]
    base += ["--db", str(tmp_path / "index.db")]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], capture_output=True, text=True, timeout=120)

    assert run("index").returncode == 0
    for args in (
        ["list", "--scope", "all"],
        ["search", "zebrafish", "--scope", "all"],
        ["search", "zebrafish", "--scope", "all", "--json"],
        ["stats"],
        ["--no-refresh", "search", "zebrafish", "--scope", "all", "--json"],
    ):
        done = run(*args)
        assert done.returncode == 0, done.stderr
        assert "SQLITE_UTILS False" in done.stderr, args
        assert "STARTUP []" in done.stderr, (args, done.stderr[-300:])
        if args[0] == "--no-refresh":
            assert "NO_REFRESH []" in done.stderr, (args, done.stderr[-300:])
            # the session-ID and project-dir patterns are discover's (~0.2 ms)
            assert "KEY_PATTERNS []" in done.stderr, (args, done.stderr[-300:])
        if "stats" not in args:
            assert "LISTING []" in done.stderr, (args, done.stderr[-300:])
        # compiled on first use, and none of them is used here (~1 ms of start-up)
        assert "PATTERNS []" in done.stderr, (args, done.stderr[-300:])
    assert first.session_id in run("search", "zebrafish", "--scope", "all", "--json").stdout
    second = tree.session(cwd="/work/app")
    second.user("a new zebrafish question")
    second.write(mtime=1_700_000_100)
    done = run("search", "zebrafish", "--scope", "all", "--json")
    assert second.session_id in done.stdout and "SQLITE_UTILS True" in done.stderr
    first.user("grown with quokka")
    first.append(mtime=1_700_000_200)
    assert first.session_id in run("search", "quokka", "--scope", "all", "--json").stdout
    second.path.unlink()  # a vanished transcript is forgotten before the answer too
    done = run("search", "zebrafish", "--scope", "all", "--json")
    assert first.session_id in done.stdout and second.session_id not in done.stdout


# Where the collector stands at the first import of click, and at the command's first
# sqlite3.connect (an audit hook sees both); then whether start-up's objects were frozen.
_COLLECTOR = (
    "import gc, sys\n"
    "def seen(event, args):\n"
    "    if (event == 'import' and args[0] == 'click') or event == 'sqlite3.connect':\n"
    "        print('GC', event, gc.isenabled(), file=sys.stderr)\n"
    "sys.addaudithook(seen)\n"
    "if sys.argv[1] == 'off':\n"
    "    gc.disable()\n"
    "sys.argv = ['sessiondex', *sys.argv[2:]]\n"
    "from sessiondex.cli.entry import run\n"
    "try:\n"
    "    run()\n"
    "finally:\n"
    "    print('FROZEN', gc.get_freeze_count() > 0, file=sys.stderr)\n"
)


@pytest.mark.parametrize(
    ("collector", "expected"),
    [
        ("on", ["GC import False", "GC sqlite3.connect True", "FROZEN True"]),
        # a program that runs the entry with the collector off keeps it off
        ("off", ["GC import False", "GC sqlite3.connect False", "FROZEN False"]),
    ],
)
def test_the_console_script_pauses_the_collector_only_while_it_starts(
    tree: ConfigTree, tmp_path: Path, collector: str, expected: list[str]
) -> None:
    """Start-up (click and the command group) is imported with the cyclic collector off,
    ~6 ms of every command; the command itself runs with it on, as before (a cold
    build, ``watch`` and ``serve`` make garbage), the start-up's objects frozen."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["sessiondex"] == "sessiondex.cli.entry:run"
    argv = ["--config-dir", str(tree.root), "--db", str(tmp_path / "index.db")]
    done = subprocess.run(
        [sys.executable, "-c", _COLLECTOR, collector, *argv, "list", "--scope", "all"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Auth refactor" in done.stdout
    seen = [
        line.replace("import click", "import")
        for line in done.stderr.splitlines()
        if line.startswith(("GC ", "FROZEN "))
    ]
    connects = {line for line in seen if "sqlite3.connect" in line}
    assert (seen[0], connects, seen[-1]) == (expected[0], {expected[1]}, expected[2])


# The extras a plain `pip install sessiondex` does not bring (pyproject.toml).
OPTIONAL = ("psycopg", "psycopg_pool", "textual", "mcp", "datasette", "playwright")


@pytest.mark.parametrize(
    "args",
    [
        ["index"],
        ["list", "--scope", "all"],
        ["search", "heartbeat", "--scope", "all"],
        ["resolve", "Auth refactor", "--cwd", CWD],
        ["show", "Auth refactor", "--cwd", CWD],
        ["stats"],
        ["config"],
    ],
)
def test_core_commands_need_no_optional_extra(
    tree: ConfigTree, tmp_path: Path, args: list[str]
) -> None:
    """A plain install has none of the front ends' extras: the core commands must not
    import them (the team store's psycopg once broke every command this way)."""
    blocker = (
        "import sys\n"
        f"for name in {OPTIONAL!r}:\n"
        "    sys.modules[name] = None  # import raises ModuleNotFoundError\n"
        "from sessiondex.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    argv = ["--config-dir", str(tree.root), "--db", str(tmp_path / "index.db"), *args]
    result = subprocess.run(
        [sys.executable, "-c", blocker, *argv], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


# What a person typed, through any front end (the picker's Ctrl+R / Ctrl+T, the MCP
# server's rename_session / tag_session): the CLI's rules, which Index applies.
REFUSED = {
    "rename: only a zero-width space": ("rename", "   \u200b "),
    "rename: only bidi controls": ("rename", "\u202e\u2066"),
    "tag: only a zero-width space": ("tag", "\u200b"),
}


@pytest.mark.parametrize(("action", "value"), REFUSED.values(), ids=list(REFUSED))
def test_index_refuses_a_name_or_tag_with_nothing_visible(
    tree: ConfigTree, tmp_path: Path, action: str, value: str
) -> None:
    from sessiondex.actions.mutations import MutationError

    with Index(tmp_path / "index.db", [tree.root]) as index:
        (auth,) = [s for s in index.list(scope="all") if s["custom_title"] == "Auth refactor"]
        path = Path(auth["file_path"])
        before = path.read_bytes()
        with pytest.raises(MutationError):
            getattr(index, action)(auth["session_id"], value, cwd=CWD)
        assert path.read_bytes() == before


def test_index_rename_removes_bidi_controls(tree: ConfigTree, tmp_path: Path) -> None:
    with Index(tmp_path / "index.db", [tree.root]) as index:
        (auth,) = [s for s in index.list(scope="all") if s["custom_title"] == "Auth refactor"]
        result = index.rename(auth["session_id"], "Checkout validation  \u202e", cwd=CWD)
        assert result.written and result.session is not None
        assert result.session["custom_title"] == "Checkout validation"


@pytest.mark.parametrize(
    ("call", "args"),
    [
        ("rename", ("Auth refactor",)),
        ("tag", ("keep",)),  # after the tag below: the same tag again
        ("untag", ()),  # on a session without a tag
    ],
)
def test_index_writes_nothing_when_nothing_changes(
    tree: ConfigTree, tmp_path: Path, call: str, args: tuple[str, ...]
) -> None:
    with Index(tmp_path / "index.db", [tree.root]) as index:
        (auth,) = [s for s in index.list(scope="all") if s["custom_title"] == "Auth refactor"]
        session_id, path = auth["session_id"], Path(auth["file_path"])
        if call == "tag":
            assert index.tag(session_id, "keep", cwd=CWD).written
        stat = path.stat()
        before = path.read_bytes()
        result = getattr(index, call)(session_id, *args, cwd=CWD)
        assert not result.written
        assert path.read_bytes() == before  # no duplicate record
        assert path.stat().st_mtime_ns == stat.st_mtime_ns  # Claude Code's retention clock


def test_a_new_index_writes_to_a_session_named_by_its_title(
    tree: ConfigTree, tmp_path: Path
) -> None:
    # No read first: the write brings the index up to date before resolving the name.
    with Index(tmp_path / "index.db", [tree.root]) as index:
        result = index.tag("Auth refactor", "keep", cwd=CWD)
        assert result.written and result.session is not None
        assert result.session["tag"] == "keep"


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("text_factory", bytes),
        ("row_factory", lambda cursor, row: dict(zip([d[0] for d in cursor.description], row))),
    ],
)
def test_a_connection_with_other_factories_is_refused_plainly(
    tree: ConfigTree, setting: str, value: Any
) -> None:
    # It was "table _sqlite_migrations already exists" or a KeyError 0, half-way through.
    conn = sqlite3.connect(":memory:")
    setattr(conn, setting, value)
    with pytest.raises(ValueError, match=setting):
        Index(conn, [tree.root])
    conn.row_factory = sqlite3.Row  # indexes as a tuple: fine
    conn.text_factory = str
    with Index(conn, [tree.root]) as index:
        assert len(index.list(scope="all")) == 2


def test_an_index_answers_only_for_its_config_dirs(tmp_path: Path) -> None:
    """Every front end (picker, MCP, web view) asks through Index: rows another config
    dir left in a shared index file never answer."""
    from tests.test_cli_config_dirs import _root_world

    one, two, first, second = _root_world(tmp_path)
    db = tmp_path / "shared.db"
    with Index(db, [one.root]) as index:
        assert [s["session_id"] for s in index.list(scope="all")] == [first]
    with Index(db, [two.root], refresh=False) as index:  # only A's rows in the file
        with pytest.raises(NotFound):
            index.resolve(first, cwd="/w/app")
        with pytest.raises(NotFound):
            index.resolve(first[:8], cwd="/w/app")
    with Index(db, [two.root]) as index:
        assert [s["session_id"] for s in index.list(scope="all")] == [second]
        assert [s["session_id"] for s in index.search("capybara", scope="all")] == [second]
        assert [s["session_id"] for s in index.list_order(scope="all")] == [second]
        assert [s["session_id"] for s in index.from_pr("7", scope="all")] == [second]
        assert index.continue_session(cwd="/w/app")["session_id"] == second
        with pytest.raises(NotFound):
            index.resolve(first, cwd="/w/app")


# Text that reached a program through JSON: "\ud800" decodes to a lone surrogate, which
# SQLite, orjson and UTF-8 output refuse. No input may crash an answer.
LONE = "heartbeat \ud800"


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda ix: [h["title"] for h in ix.search(LONE, scope="all")], ["Auth refactor"]),
        (
            lambda ix: [h["title"] for h in ix.search(LONE, scope="all", raw=True)],
            ["Auth refactor"],
        ),
        (lambda ix: ix.search("\udc80", scope="all"), []),
        (lambda ix: ix.from_pr("\ud800", scope="all"), ValueError),  # not a PR: said so
        (lambda ix: ix.resolve("Auth \ud800", cwd=CWD), NotFound),
        (
            lambda ix: ix.rename("Auth refactor", "Auth \ud800 v2", cwd=CWD).session["title"],
            "Auth \ufffd v2",
        ),  # fmt: skip
        (lambda ix: ix.tag("Auth refactor", "t\udc80", cwd=CWD).session["tag"], "t\ufffd"),
    ],
)
def test_a_lone_surrogate_never_crashes_an_answer(
    tree: ConfigTree, tmp_path: Path, call: Any, expected: Any
) -> None:
    with Index(tmp_path / "index.db", [tree.root]) as index:
        if expected in (NotFound, ValueError):
            with pytest.raises(expected):
                call(index)
        else:
            assert call(index) == expected


@pytest.mark.parametrize("collector_on", [True, False])
def test_a_listing_leaves_the_garbage_collector_as_it_found_it(
    tree: ConfigTree, tmp_path: Path, collector_on: bool
) -> None:
    """Decoding a listing pauses Python's cyclic collector (query.sessions); a caller's
    own choice, on or off, is what it finds after every answer, even a failed one."""
    import gc

    was = gc.isenabled()
    try:
        (gc.enable if collector_on else gc.disable)()
        with Index(tmp_path / "index.db", [tree.root]) as index:
            assert len(index.list(scope="all")) == 2
            assert gc.isenabled() is collector_on
            index.search("heartbeat", scope="all")
            assert gc.isenabled() is collector_on
    finally:
        (gc.enable if was else gc.disable)()


def test_every_connection_gets_the_larger_page_cache(tree: ConfigTree, tmp_path: Path) -> None:
    """A long-lived front end asks again and again; with SQLite's 2 MiB default each
    listing of a large history read its pages from the OS once more."""
    from sessiondex.indexer.db import CACHE_KIB

    with Index(tmp_path / "index.db", [tree.root]) as index:
        index.list(scope="all")  # builds: answers from the writer
        assert index.writable().execute("PRAGMA cache_size").fetchone()[0] == -CACHE_KIB
    with Index(tmp_path / "index.db", [tree.root]) as index:
        index.list(scope="all")  # nothing changed: a read-only handle of its own
        reader = index.reader()
        assert reader is not index._writer
        assert reader.execute("PRAGMA cache_size").fetchone()[0] == -CACHE_KIB


def test_a_directory_as_db_is_a_clear_error(tree: ConfigTree, tmp_path: Path) -> None:
    """It raised sqlite3's "unable to open database file" after a note saying the index
    was "not brought up to date … answering from it as it is"."""
    from sessiondex.indexer.db import NotAnIndex

    notes: list[str] = []
    with pytest.raises(NotAnIndex, match="is a directory"):
        Index(tmp_path, [tree.root], notice=notes.append).list()
    assert notes == []


@pytest.mark.parametrize("name", ["NotFound", "Ambiguous", "NotAnIndex", "Resolution"])
def test_the_exceptions_the_readme_names_are_importable_from_the_package(name: str) -> None:
    """Helper h508: the README says ``Index(db=<a directory>)`` raises ``NotAnIndex``,
    but ``from sessiondex import NotAnIndex`` failed; it lived in
    ``sessiondex.indexer.db`` only, so a caller could catch it only by an internal
    path."""
    assert name in sessiondex.__all__
    module = importlib.import_module("sessiondex")
    assert getattr(module, name).__name__ == name


def test_a_directory_as_db_raises_the_exported_not_an_index(
    tree: ConfigTree, tmp_path: Path
) -> None:
    with pytest.raises(sessiondex.NotAnIndex, match="is a directory"):
        Index(tmp_path, [tree.root]).list()


def test_a_connection_inside_a_transaction_is_refused_plainly(
    tree: ConfigTree, tmp_path: Path
) -> None:
    """It was sqlite3's "Safety level may not be changed inside a transaction"."""
    conn = sqlite3.connect(tmp_path / "index.db")
    conn.execute("CREATE TABLE mine (x)")
    conn.execute("INSERT INTO mine VALUES (1)")
    assert conn.in_transaction
    with pytest.raises(ValueError, match="transaction open"):
        Index(conn, [tree.root])
    conn.commit()
    with Index(conn, [tree.root]) as index:
        assert len(index.list(scope="all")) == 2
        # one opened afterwards: a refresh inside it would be undone by its rollback
        conn.execute("INSERT INTO mine VALUES (2)")
        with pytest.raises(ValueError, match="transaction open"):
            index.refresh()
        conn.rollback()
        assert index.refresh().files_seen >= 2


@pytest.mark.parametrize(
    ("write", "seen"),
    [
        (lambda index, sid: index.tag(sid, "kept", cwd=CWD), lambda s: s["tag"] == "kept"),
        (
            lambda index, sid: index.rename(sid, "Renamed here", cwd=CWD),
            lambda s: s["title"] == "Renamed here",
        ),
    ],
)
def test_interrupt_never_stops_a_write_that_changed_the_transcript(
    tree: ConfigTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: Any, seen: Any
) -> None:
    """``interrupt()`` from another thread landed inside ``tag``: the call raised
    "interrupted" with the record already appended and the index still saying the old
    tag. While a write runs it now does nothing."""
    from sessiondex.actions import mutations

    with Index(tmp_path / "index.db", [tree.root]) as index:
        sid = index.resolve("Auth refactor", cwd=CWD).session["session_id"]
        index.list(scope="all")  # the reading handle is the writer now
        conn = index.reader().conn
        appended = mutations.append_record

        steps: list[int] = []

        def interrupt_mid_statement() -> int:
            steps.append(1)
            if len(steps) == 50:  # inside a statement, as another thread's call lands
                conn.set_progress_handler(None, 0)
                index.interrupt()
            return 0

        def append_then_interrupt(*args: Any, **kwargs: Any) -> Any:
            result = appended(*args, **kwargs)
            # the index following the transcript is interrupted, mid-statement
            conn.set_progress_handler(interrupt_mid_statement, 1)
            return result

        monkeypatch.setattr(mutations, "append_record", append_then_interrupt)
        write(index, sid)
    with Index(tmp_path / "index.db", [tree.root], refresh=False) as index:
        assert seen(index.resolve(sid, cwd=CWD).session)


@pytest.mark.parametrize("as_given", [str, Path])
def test_one_config_dir_given_alone_is_that_dir(
    tree: ConfigTree, tmp_path: Path, as_given: Any
) -> None:
    """``Index(db, "/path/.claude")`` made a config dir of every character of the path
    and listed nothing; a ``Path`` was a TypeError. One dir, as ``config_dir=`` of the
    SDK-style functions takes it."""
    with Index(tmp_path / "index.db", as_given(tree.root)) as index:
        assert index.roots == [tree.root]
        assert len(index.list(scope="all")) == 2


@pytest.mark.parametrize(
    "given", ["", "   ", b"/tmp/bad\xff", ["/tmp/ok", ""], "/tmp/bad\udcff", [], ()]
)
def test_a_config_dir_that_names_nothing_is_refused(tmp_path: Path, given: Any) -> None:
    """``Index(db, "")`` answered (and wrote) for ~/.claude, the user's real history, as
    an unset variable would on the command line, where ``--config-dir ""`` is refused;
    undecodable bytes crashed the first answer deep in the freshness check. An empty
    list (a filter that kept nothing) meant ~/.claude too; ``None`` is the default."""
    with pytest.raises(ValueError, match="empty|UTF-8"):
        Index(tmp_path / "index.db", given)


def test_a_listing_resolves_each_config_dirs_spelling_once(
    tree: ConfigTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume line of a session outside ~/.claude names its config dir as Claude
    Code can be pointed at it (claude_spelling: a realpath, four lstat calls). It was
    worked out for every session listed: two thirds of ``list --scope all``'s time on
    the bench's 1,800 sessions. Once per config dir."""
    from sessiondex.query import sessions

    for n in range(5):
        s = tree.session(cwd=f"/home/dev/p{n}")
        s.user(f"question {n}")
        s.write()
    calls: list[str] = []
    spelling = sessions.claude_spelling

    def counted(root: Any) -> Any:
        calls.append(str(root))
        return spelling(root)

    monkeypatch.setattr(sessions, "claude_spelling", counted)
    with Index(tmp_path / "index.db", [tree.root]) as index:
        listed = index.list(scope="all")
    assert len(listed) == 7 and all(o["resume_command"] for o in listed)
    assert calls == [str(tree.root)]


# -------------------------------------------------------- a repeated listing (ListingMemo)
def _rename_elsewhere(index: Index, db: Any, tmp_path: Path, tree: ConfigTree) -> None:
    """Another program (its own connection) renames the session."""
    with Index(tmp_path / "index.db", [tree.root], refresh=False) as other:
        other.rename("Auth refactor", "Renamed elsewhere", cwd=CWD)


def _rename_here(index: Index, db: Any, tmp_path: Path, tree: ConfigTree) -> None:
    """The same Index renames it (its writer is another connection than its reader)."""
    index.rename("Auth refactor", "Renamed elsewhere", cwd=CWD)


def _update_through_given_connection(
    index: Index, db: Any, tmp_path: Path, tree: ConfigTree
) -> None:
    """The caller writes through the connection it gave: no other connection commits,
    so SQLite's data_version stays; the connection's own change count moves."""
    row = db.execute("SELECT id, object_json FROM sessions WHERE custom_title IS NOT NULL")
    rowid, raw = row.fetchone()
    changed = raw.replace('"Auth refactor"', '"Renamed elsewhere"')
    db.execute("UPDATE sessions SET object_json = ? WHERE id = ?", [changed, rowid])
    db.conn.commit()


@pytest.mark.parametrize(
    "change", [_rename_elsewhere, _rename_here, _update_through_given_connection]
)
def test_a_repeated_listing_sees_every_change_to_the_index(
    tree: ConfigTree, tmp_path: Path, change: Any
) -> None:
    """An Index answers a listing again from the objects it decoded last time only while
    nothing changed; every way a row can change is seen by the very next listing."""
    db = sqlite_utils.Database(tmp_path / "index.db")
    with Index(db, [tree.root]) as index:
        before = index.list(scope="all")
        assert index.list(scope="all") == before  # answered again, unchanged
        change(index, db, tmp_path, tree)
        assert [s["title"] for s in index.list(scope="all")] == [
            "Renamed elsewhere",
            "draft the release notes for 2.0",
        ]


def test_a_repeated_listing_is_the_callers_to_change(tmp_path: Path) -> None:
    """Each answer is the caller's own, down to the dicts inside ``pr_links``: changing
    one changes nothing in the next."""
    tree = ConfigTree(tmp_path / "claude")
    session = tree.session(cwd=CWD, git_branch="feat/pr")
    session.user("open the pull request")
    session.pr_link(number=7, url="https://github.com/acme/shop/pull/7", repository="acme/shop")
    session.write(mtime=1_790_000_100)
    fork = tree.session(cwd=CWD)
    fork.user(
        "open the pull request", forkedFrom={"sessionId": session.session_id, "messageUuid": "m"}
    )
    fork.write(mtime=1_790_000_000)
    with Index(tmp_path / "index.db", [tree.root]) as index:
        first = index.list(scope="all")
        pristine = [dict(first[0], pr_links=[dict(p) for p in first[0]["pr_links"]])]
        first[0]["title"] = "scribbled"
        first[0]["branches"].append("scribbled")
        first[0]["pr_links"][0]["number"] = 0
        first[0]["pr_mentions"].append({"url": "scribbled"})
        second = index.list(scope="all")
        fork = next(o for o in index.list(scope="all", all_kinds=True) if o["forked_from"])
        fork["forked_from"]["session_id"] = "scribbled"
        again = next(o for o in index.list(scope="all", all_kinds=True) if o["forked_from"])
        assert again["forked_from"]["session_id"] == session.session_id
        assert second[0]["pr_links"][0]["number"] == 7
        assert second[0]["branches"] == ["feat/pr"] and second[0]["pr_mentions"] == []
        assert second[0] == dict(pristine[0], branches=["feat/pr"], pr_mentions=[])
        assert second[0] is not index.list(scope="all")[0]


def test_a_repeated_listing_follows_home_and_the_config_dirs_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume line depends on more than the index: on ``HOME`` (is this config dir
    the default ~/.claude?) and on how Claude Code can be pointed at the config dir."""
    from sessiondex.query import sessions

    tree = ConfigTree(tmp_path / ".claude")
    session = tree.session(cwd=CWD)
    session.user("fix the flaky checkout test")
    session.write()
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    with Index(tmp_path / "index.db", [tree.root]) as index:
        line = index.list(scope="all")[0]["resume_command"]
        assert "CLAUDE_CONFIG_DIR=" in line
        monkeypatch.setenv("HOME", str(tmp_path))  # now it is ~/.claude
        assert "CLAUDE_CONFIG_DIR=" not in index.list(scope="all")[0]["resume_command"]
        monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
        assert index.list(scope="all")[0]["resume_command"] == line
        monkeypatch.setattr(sessions, "claude_spelling", lambda root: None)
        assert index.list(scope="all")[0]["resume_command"] is None


def test_a_repeated_listing_inside_a_rolled_back_transaction(
    tree: ConfigTree, tmp_path: Path
) -> None:
    """Rows a caller's transaction changed and then rolled back: the connection's
    change count does not go back, so a listing inside a transaction is never kept."""
    conn = sqlite3.connect(tmp_path / "index.db")
    with Index(conn, [tree.root]) as index:
        before = index.list(scope="all")
        conn.execute("UPDATE sessions SET archived = 1")
        assert index.list(scope="all") == []
        conn.rollback()
        assert index.list(scope="all") == before


def test_a_connection_handed_in_is_asked_again_each_time(tree: ConfigTree, tmp_path: Path) -> None:
    """A backup loaded into the connection the caller gave moves neither SQLite's
    data_version nor the connection's change count: a kept listing went stale. An
    Index keeps listings only over connections it opened itself."""
    disk = sqlite3.connect(tmp_path / "index.db")
    with Index(disk, [tree.root]) as index:
        index.list(scope="all")
    memory = sqlite3.connect(":memory:")
    disk.backup(memory)
    with Index(memory, [tree.root], refresh=False) as index:
        assert "Auth refactor" in [s["title"] for s in index.list(scope="all")]
        disk.execute(
            "UPDATE sessions SET object_json = replace(object_json, 'Auth refactor', 'Reloaded')"
        )
        disk.commit()
        disk.backup(memory)
        assert "Reloaded" in [s["title"] for s in index.list(scope="all")]


def test_an_immutable_handle_gives_no_change_stamp(tree: ConfigTree, tmp_path: Path) -> None:
    """A file opened ``immutable=1`` (a read-only folder with no -shm) does not see
    another writer's commits, so its listings are never kept."""
    from sessiondex.indexer.db import ReadOnlyIndex
    from sessiondex.query.dialect import dialect_of

    with Index(tmp_path / "index.db", [tree.root]) as index:
        index.list(scope="all")
    uri = f"file:{tmp_path / 'index.db'}?mode=ro&immutable=1"
    handle = ReadOnlyIndex(sqlite3.connect(uri, uri=True), immutable=True)
    try:
        assert dialect_of(handle).change_stamp(handle) is None
        plain = ReadOnlyIndex(sqlite3.connect(tmp_path / "index.db"))
        assert dialect_of(plain).change_stamp(plain) is not None
        plain.close()
    finally:
        handle.close()


@pytest.mark.parametrize("via", ["cli --no-refresh", "Index(refresh=False)"])
def test_a_read_of_one_session_reads_an_outside_write_without_a_refresh(
    tree: ConfigTree, tmp_path: Path, via: str
) -> None:
    """semantics §5: a read of one session checks that session's file before answering
    (read your own writes, and the SDK's). --no-refresh (refresh=False) skips the pass
    over every file, not that check: a title the SDK appended a moment ago was missed."""
    import json

    from click.testing import CliRunner

    from sessiondex.cli.main import cli

    db = tmp_path / "index.db"
    with Index(db, [tree.root]) as index:
        found = index.resolve("Auth refactor", cwd=CWD)
    sid, path = found.session["session_id"], Path(found.session["file_path"])
    with open(path, "ab") as file:  # what the SDK's rename_session appends
        file.write(
            json.dumps(
                {"type": "custom-title", "customTitle": "Renamed by SDK", "sessionId": sid}
            ).encode()
            + b"\n"
        )
    if via.startswith("cli"):
        argv = ["--config-dir", str(tree.root), "--db", str(db), "--no-refresh"]
        result = CliRunner().invoke(cli, [*argv, "resolve", sid, "--cwd", CWD, "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)[0]["custom_title"] == "Renamed by SDK"
    else:
        with Index(db, [tree.root], refresh=False) as index:
            assert index.resolve(sid, cwd=CWD).session["custom_title"] == "Renamed by SDK"
            # the listing is answered from the index as it is: no pass over every file
            late = tree.session(cwd=CWD)
            late.user("a session written after the last refresh")
            late.write()
            assert len(index.list(scope="all")) == 2


@pytest.mark.parametrize("refresh", [True, False])
def test_a_read_of_one_session_without_refresh_looks_only_at_known_copies(
    tree: ConfigTree, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refresh: bool
) -> None:
    """A copy not indexed yet is looked for in every project dir (a stat each): 0.15 s
    for --no-refresh resolve on 20,000 project dirs. --no-refresh checks the copies the
    index knows, and nothing more."""
    from sessiondex import index as index_module

    db = tmp_path / "index.db"
    with Index(db, [tree.root]) as index:
        sid = index.resolve("Auth refactor", cwd=CWD).session["session_id"]
    listed: list[str] = []
    real = index_module.os.scandir

    def counted(path: Any) -> Any:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(index_module.os, "scandir", counted)
    with Index(db, [tree.root], refresh=refresh) as index:
        index.sync_session(sid)
    assert bool(listed) is refresh


def test_a_long_lived_index_sees_a_worktree_added_and_a_branch_switched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Git facts were cached for the life of the process: an MCP server started before
    ``git worktree add`` never listed that worktree's sessions, and ``current_branch``
    kept the branch checked out at start. They are kept a moment only."""
    from sessiondex.query import scopes
    from tests.builders import git, git_repo_with_worktree

    monkeypatch.setattr(scopes, "GIT_FACTS_SECONDS", 0.0)
    repo, worktree = git_repo_with_worktree(tmp_path / "src")
    tree = ConfigTree(tmp_path / "claude")
    first = tree.session(cwd=str(repo), git_branch="main")
    first.user("work on main")
    first.write(mtime=1_790_000_000)
    with Index(tmp_path / "index.db", [tree.root]) as index:
        assert len(index.list(cwd=str(repo), scope="repo")) == 1
        late = tmp_path / "src" / "app-late"
        git("worktree", "add", "-q", str(late), "-b", "late", cwd=repo)
        s = tree.session(cwd=str(late), git_branch="late")
        s.user("work in a worktree added later")
        s.write(mtime=1_790_000_100)
        index.renew()
        titles = [r["title"] for r in index.list(cwd=str(repo), scope="repo")]
        assert "work in a worktree added later" in titles
        other = tree.session(cwd=str(worktree), git_branch="feature2")
        other.user("work on the second feature branch")
        other.write(mtime=1_790_000_200)
        index.renew()
        git("checkout", "-q", "-b", "feature2", cwd=worktree)
        mine = index.list(cwd=str(worktree), current_branch=True)
        assert [r["title"] for r in mine] == ["work on the second feature branch"]


@pytest.mark.parametrize("what", ["a new name", "a new session"])
def test_a_lookup_behind_a_watcher_sees_what_was_just_written(tmp_path: Path, what: str) -> None:
    """Helper 94, 10 of 10 through ``Index``: while ``watch`` ran, a name the SDK had
    just written was "not found" (suggesting the old one) and ``continue`` returned the
    previous session, for the ~100 ms of the watcher's debounce. A read trusts a live
    watcher; a name lookup that finds nothing, and ``continue``, now look first."""
    from sessiondex.indexer.lock import WatcherLock

    tree = ConfigTree(tmp_path / "claude")
    old = tree.session(cwd="/w/app", session_id="11111111-2222-4333-8444-555555555555")
    old.user("hello")
    old.meta("custom-title", customTitle="old name")
    old.write(mtime=1_800_000_000)
    db = tmp_path / "index.db"
    Index(db, tree.root).refresh()
    with WatcherLock(db):  # a live watcher, as far as any reader can tell
        if what == "a new name":
            old.meta("custom-title", customTitle="fresh name")
            old.append(mtime=1_800_000_100)
        else:
            new = tree.session(cwd="/w/app", session_id="22222222-2222-4333-8444-555555555555")
            new.user("a session begun a moment ago")
            new.write(mtime=1_800_000_100)
        with Index(db, tree.root) as index:
            if what == "a new name":
                found = index.resolve("fresh name", cwd="/w/app")
                assert found.session["session_id"] == old.session_id
            else:
                chosen = index.continue_session(cwd="/w/app")
                assert chosen["session_id"] == new.session_id


def test_a_read_that_cannot_list_a_folder_says_so(tmp_path: Path, monkeypatch) -> None:
    """Helper 93: with a project folder that cannot be listed (modes left wrong by a
    restore), ``index`` warned and ``list`` said nothing, its answer lacking the
    folder's new sessions. A read's refresh now says so in one note. EACCES is
    simulated: the suite may run as root."""
    import os

    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd="/w/denied")
    s.user("hello")
    s.write(mtime=1_800_000_000)
    db = tmp_path / "index.db"
    Index(db, tree.root).refresh()
    s.user("a later prompt")
    s.append(mtime=1_800_000_100)  # something to refresh
    denied = str(s.path.parent)
    real_scandir = os.scandir

    def deny(target):  # type: ignore[no-untyped-def]
        if os.fspath(target) == denied:
            raise PermissionError(13, "Permission denied", denied)
        return real_scandir(target)

    monkeypatch.setattr(os, "scandir", deny)
    notes: list[str] = []
    with Index(db, tree.root, notice=notes.append) as index:
        assert [row["session_id"] for row in index.list(scope="all")] == [s.session_id]
    assert notes == [
        f"note: {denied}: cannot list it (Permission denied); what the index holds from"
        " it is kept (`sessiondex index` lists what it skipped)"
    ]
