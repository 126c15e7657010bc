"""``sessiondex store delete DSN ARG`` and ``store deleted DSN`` against a real PostgreSQL.

Deleting a session from the team store, and seeing what was deleted, took SQL (or an
Agent SDK script). ``store delete`` reads ARG as ``--db DSN`` reads it and deletes
through ``PostgresSessionStore.delete`` (the tombstone that keeps push from sending it
again); ``store deleted`` lists the tombstones.
"""

from __future__ import annotations

import getpass
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sessiondex.cli.main import cli
from sessiondex.store.messages import no_team_store
from tests.builders import ConfigTree, SessionWriter
from tests.pgserver import database_url, require_database, truncate
from tests.test_store_push import build_session, push, query, sdk_delete, stored_keys

SHOP = "/home/dev/shop"
# Two sessions of one project whose IDs share their first 8 hex digits.
TWINS = ("5eed5eed-0000-4000-8000-000000000001", "5eed5eed-0000-4000-8000-000000000002")


@pytest.fixture
def pg_dsn() -> str:
    dsn = require_database()
    truncate(dsn)
    return dsn


@pytest.fixture
def main(tmp_path: Path) -> SessionWriter:
    """A session with a subagent in the shop, one in the blog, both pushed; and the
    twins, in the shop too."""
    tree = ConfigTree(tmp_path / "claude")
    main = build_session(tree, SHOP, "Auth refactor")
    agent = main.subagent(agent_id="a1b2", tool_use_id="toolu_x")
    agent.user("explore the auth module")
    agent.assistant("Found it in auth/session.py")
    main.write(mtime=1_790_000_000)
    build_session(tree, "/home/dev/blog", "RSS feed").write(mtime=1_790_000_100)
    for n, sid in enumerate(TWINS):
        twin = tree.session(cwd=SHOP, session_id=sid)
        twin.user(f"twin {n}")
        twin.assistant("ok")
        twin.write(mtime=1_790_000_200 + n)
    return main


def store(*args: str, answer: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["store", *args], input=answer)


def tombstones(dsn: str) -> list[tuple[Any, ...]]:
    return query(
        dsn,
        "SELECT project_key, session_id, subpath, deleted_by_user, deleted_by_host"
        " FROM deleted_sessions ORDER BY 1, 2, 3",
    )


@pytest.mark.parametrize(
    ("typed", "cwd"),
    [
        (lambda sid: sid, None),  # a whole ID, from anywhere
        (str.upper, None),  # in any case
        (lambda sid: sid[:8], SHOP),  # 8 hex digits, among the repository's sessions
        (lambda sid: "Auth refactor", SHOP),  # its name, as show takes it
    ],
    ids=["id", "upper", "prefix", "name"],
)
def test_store_delete_takes_arg_as_the_team_store_reads_it(
    main: SessionWriter, pg_dsn: str, typed: Any, cwd: str | None
) -> None:
    push(main.tree.root, pg_dsn)
    url, sid, pk = database_url(pg_dsn), main.session_id, main.project_dir.name
    before = stored_keys(pg_dsn)
    result = store("delete", url, typed(sid), "--yes", *(["--cwd", cwd] if cwd else []))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"Deleted session {sid} (project {pk}) from the team store; push will not send it"
        f" again (push --resend-deleted {sid} would)"
    ]
    # the session and its subagent go; the other sessions stay
    assert stored_keys(pg_dsn) == [k for k in before if k[0] != sid]
    # through PostgresSessionStore.delete: the tombstone says who
    assert tombstones(pg_dsn) == [(pk, sid, "", getpass.getuser(), socket.gethostname())]
    assert push(main.tree.root, pg_dsn)["deleted_in_store"] == 2


def test_store_delete_of_an_ambiguous_prefix_lists_the_candidates(
    main: SessionWriter, pg_dsn: str
) -> None:
    push(main.tree.root, pg_dsn)
    before = stored_keys(pg_dsn)
    result = store("delete", database_url(pg_dsn), "5EED5EED", "--yes", "--cwd", SHOP)
    assert result.exit_code == 3, result.output
    assert result.stderr.startswith("Error: 2 sessions start with '5eed5eed'")
    assert all(sid in result.stdout for sid in TWINS)
    assert (stored_keys(pg_dsn), tombstones(pg_dsn)) == (before, [])


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        (
            "00000000-0000-4000-8000-000000000000",
            "No conversation found with session ID: 00000000-0000-4000-8000-000000000000",
        ),
        # a prefix of another repository's session: its whole ID is a paste away
        ("5eed5eed", "Error: No session of this repository starts with '5eed5eed'"),
        ("no such session", "Error: No session matches 'no such session'."),
    ],
)
def test_store_delete_of_no_session_deletes_nothing(
    main: SessionWriter, pg_dsn: str, arg: str, message: str
) -> None:
    push(main.tree.root, pg_dsn)
    before = stored_keys(pg_dsn)
    result = store("delete", database_url(pg_dsn), arg, "--yes", "--cwd", "/home/dev/blog")
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[0].startswith(message)
    assert (stored_keys(pg_dsn), tombstones(pg_dsn)) == (before, [])


@pytest.mark.parametrize(
    ("terminal", "answer", "code", "said", "deleted"),
    [
        (False, None, 1, "Error: refusing to delete without confirmation: pass --yes", False),
        (True, "n\n", 1, "Error: aborted: nothing deleted", False),
        (True, "y\n", 0, "Deleted session", True),
    ],
    ids=["no-terminal", "no", "yes"],
)
def test_store_delete_asks_first(
    main: SessionWriter,
    pg_dsn: str,
    monkeypatch: pytest.MonkeyPatch,
    terminal: bool,
    answer: str | None,
    code: int,
    said: str,
    deleted: bool,
) -> None:
    """As the local ``delete``: a question on a terminal, --yes without one."""
    from sessiondex.cli import mutate_cmds

    monkeypatch.setattr(mutate_cmds, "_stdin_is_terminal", lambda: terminal)
    push(main.tree.root, pg_dsn)
    result = store("delete", database_url(pg_dsn), main.session_id, answer=answer)
    assert result.exit_code == code, result.output
    assert said in result.output
    if terminal:
        assert f"Delete session 'Auth refactor' ({main.session_id}" in result.stderr
    assert (main.session_id in {k[0] for k in stored_keys(pg_dsn)}) is not deleted
    assert len(tombstones(pg_dsn)) == int(deleted)


def test_store_deleted_lists_the_tombstones_newest_first(
    main: SessionWriter, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the table whole, whatever runs the test
    url, pk = database_url(pg_dsn), main.project_dir.name
    empty = {fmt: store("deleted", url, "--format", fmt) for fmt in ("table", "json", "csv")}
    assert [r.exit_code for r in empty.values()] == [0, 0, 0]
    assert empty["table"].stdout == ""
    assert empty["table"].stderr == "No session has been deleted from the team store.\n"
    assert json.loads(empty["json"].stdout) == []
    assert empty["csv"].stdout.splitlines() == [
        "session_id,project_key,subpath,deleted_at,deleted_by_user,deleted_by_host"
    ]

    push(main.tree.root, pg_dsn)
    sdk_delete(pg_dsn, pk, main.session_id, "subagents/agent-a1b2")  # a subagent alone
    assert store("delete", url, TWINS[0], "--yes").exit_code == 0
    query(pg_dsn, "UPDATE deleted_sessions SET deleted_at = deleted_at - interval '1 day'"
          " WHERE subpath <> ''")  # fmt: skip
    # a tombstone written without a user or host (an SQL delete, a process without them)
    query(
        pg_dsn,
        "INSERT INTO deleted_sessions (project_key, session_id, deleted_at)"
        " VALUES ('-old', 'old-id', '2026-01-02T03:04:05.678Z')",
    )
    result = store("deleted", url, "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    me = (getpass.getuser(), socket.gethostname())
    assert [
        (
            r["session_id"],
            r["project_key"],
            r["subpath"],
            r["deleted_by_user"],
            r["deleted_by_host"],
        )
        for r in rows
    ] == [
        (TWINS[0], pk, "", *me),
        (main.session_id, pk, "subagents/agent-a1b2", *me),
        ("old-id", "-old", "", None, None),
    ]
    assert rows[2]["deleted_at"] == "2026-01-02T03:04:05.678Z"
    lines = [
        json.loads(line) for line in store("deleted", url, "--format", "jsonl").stdout.splitlines()
    ]
    assert lines == rows
    table = store("deleted", url).stdout.splitlines()
    assert table[0].split() == ["deleted", "session", "project", "by"]
    assert table[1].split()[2:] == [TWINS[0], pk, "@".join(me)]
    assert table[2].split()[2:] == [main.session_id, "subagents/agent-a1b2", pk, "@".join(me)]
    assert table[3].split() == ["2026-01-02", "03:04Z", "old-id", "-old"]


def test_store_commands_fail_in_one_line(pg_dsn: str, tmp_path: Path) -> None:
    """A bad DSN, a server down (its password hidden), a database without a store, a
    store too old for tombstones (read, not migrated: `store init` is said)."""
    down = "postgresql://u:hunter2@127.0.0.1:1/none?connect_timeout=2"
    empty = database_url(require_database("store cli: no store"))
    url = database_url(pg_dsn)
    push(build_tree(tmp_path), pg_dsn)
    query(
        pg_dsn, "DROP TABLE deleted_sessions; DELETE FROM sessiondex_migrations WHERE version >= 8"
    )
    try:
        cases = [
            (["delete", "sessions.db", "3f2a9c1e", "--yes"], 2, "postgresql://"),
            (["deleted", "sessions.db"], 2, "postgresql://"),
            (["delete", down, "3f2a9c1e", "--yes"], 1, "Error: team store postgresql://u:***@"),
            (["deleted", down], 1, "Error: team store postgresql://u:***@"),
            (["deleted", empty], 1, "no sessiondex team store in this database"),
            (
                ["delete", empty, "3f2a9c1e", "--yes"],
                1,
                "no sessiondex team store in this database",
            ),
            (["deleted", url], 1, "`sessiondex store init DSN` (or a push) upgrades it"),
            (["delete", url, "3f2a9c1e", "--yes"], 1, "`sessiondex store init DSN`"),
        ]
        for args, code, message in cases:
            result = store(*args)
            assert result.exit_code == code, (args, result.output)
            assert message in result.stderr, (args, result.output)
            assert len(result.stderr.splitlines()) == 1 if code == 1 else True, result.stderr
            assert "Traceback" not in result.output and "hunter2" not in result.output
        assert query(pg_dsn, "SELECT max(version) FROM sessiondex_migrations") == [(7,)]
        # Reading through --db says the same as the store's own commands: one wording
        # (store/messages.py), each with the command that creates or upgrades the store.
        for args in (["store", "deleted", empty], ["--db", empty, "search", "x"]):
            result = CliRunner().invoke(cli, args)
            assert result.exit_code == 1, (args, result.output)
            line = result.stderr.strip()
            assert "\n" not in line and line.endswith(f": {no_team_store()}"), (args, line)
    finally:
        assert store("init", url).exit_code == 0


def build_tree(tmp_path: Path) -> Path:
    tree = ConfigTree(tmp_path / "claude")
    build_session(tree, SHOP, "Auth refactor").write()
    return tree.root


# A session copied into a second project (the same ID in the shop and the blog), and a
# session whose transcript holds a title and nothing else (metadata-only).
COPIED = "c0b1ed00-0000-4000-8000-000000000003"
BARE = "ba2eba2e-0000-4000-8000-000000000004"
BLOG = "/home/dev/blog"


@pytest.fixture
def odd(main: SessionWriter) -> dict[str, str]:
    """What the reading rules never resolve by ID (semantics §3): ``COPIED``, held by two
    projects, and ``BARE``, a session without a message; their project keys."""
    tree = main.tree
    for n, cwd in enumerate((SHOP, BLOG)):
        copy = tree.session(cwd=cwd, session_id=COPIED)
        copy.user("set up the feed cache")
        copy.assistant(f"done ({cwd})")
        copy.meta("custom-title", customTitle=f"Feed cache {n}")
        copy.write(mtime=1_790_000_300 + n)
    bare = tree.session(cwd=SHOP, session_id=BARE)
    bare.meta("custom-title", customTitle="Only a title")
    bare.write(mtime=1_790_000_400)
    return {"shop": tree.project_dir(SHOP).name, "blog": tree.project_dir(BLOG).name}


def test_store_delete_of_a_deleted_session_says_so(main: SessionWriter, pg_dsn: str) -> None:
    """A session deleted already is not 'not found': when, where and by whom, and where
    the tombstones are listed; exit 1 (not found), nothing deleted again."""
    push(main.tree.root, pg_dsn)
    url, sid, pk = database_url(pg_dsn), main.session_id, main.project_dir.name
    assert store("delete", url, sid, "--yes").exit_code == 0
    query(pg_dsn, "UPDATE deleted_sessions SET deleted_at = '2026-11-30T09:15:42Z'")
    before = (stored_keys(pg_dsn), tombstones(pg_dsn))
    me = f"{getpass.getuser()}@{socket.gethostname()}"
    said = (
        f"Error: session {sid} was deleted from the team store on 2026-11-30 09:15Z"
        f" (project {pk}, by {me}); `sessiondex store deleted DSN` lists what was deleted"
    )
    for typed, cwd in ((sid, None), (sid.upper(), None), (sid[:8], SHOP), (sid[:13], SHOP)):
        result = store("delete", url, typed, "--yes", *(["--cwd", cwd] if cwd else []))
        assert result.exit_code == 1, (typed, result.output)
        assert result.stderr.splitlines() == [said], typed
        assert result.stdout == ""
    assert (stored_keys(pg_dsn), tombstones(pg_dsn)) == before
    # a tombstone written without a user or host says no one
    query(pg_dsn, "UPDATE deleted_sessions SET deleted_by_user = NULL, deleted_by_host = NULL")
    result = store("delete", url, sid, "--yes")
    assert result.stderr == said.replace(f", by {me}", "") + "\n"
    # a subagent's tombstone alone is no deleted session: the session is deleted
    sdk_delete(pg_dsn, pk, TWINS[0], "subagents/agent-none")
    result = store("delete", url, TWINS[0], "--yes")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("arg", "options", "code", "deleted"),
    [
        # a whole ID names a session without a message too
        (BARE, [], 0, [("shop", BARE)]),
        (BARE.upper(), [], 0, [("shop", BARE)]),
        # a whole ID held by two projects: which one, or both, said
        (COPIED, [], 3, []),
        (COPIED, ["--project", "blog"], 0, [("blog", COPIED)]),
        (COPIED, ["--project", BLOG], 0, [("blog", COPIED)]),
        (
            COPIED,
            ["--project", "shop", "--project", "blog"],
            0,
            [("shop", COPIED), ("blog", COPIED)],
        ),
        (COPIED, ["--all-copies"], 0, [("blog", COPIED), ("shop", COPIED)]),  # newest first
        (COPIED, ["--project", "/home/dev/nowhere"], 1, []),
        # names and prefixes keep the reading rules: a session without a message is
        # never named; a prefix names the copy of this repository
        ("Only a title", [], 1, []),
        (COPIED[:8], [], 0, [("shop", COPIED)]),
    ],
    ids=[
        "bare",
        "bare-upper",
        "copied",
        "copied-project-key",
        "copied-project-dir",
        "copied-both-projects",
        "copied-all",
        "copied-no-such-project",
        "bare-by-name",
        "copied-prefix",
    ],
)
def test_store_delete_names_every_stored_copy_of_a_whole_id(
    main: SessionWriter,
    odd: dict[str, str],
    pg_dsn: str,
    arg: str,
    options: list[str],
    code: int,
    deleted: list[tuple[str, str]],
) -> None:
    push(main.tree.root, pg_dsn)
    url = database_url(pg_dsn)
    options = [odd.get(o, o) for o in options]
    before = query(pg_dsn, "SELECT project_key, session_id FROM sessions ORDER BY 1, 2")
    result = store("delete", url, arg, "--yes", "--cwd", SHOP, *options)
    assert result.exit_code == code, result.output
    gone = [(odd[p], sid) for p, sid in deleted]
    after = query(pg_dsn, "SELECT project_key, session_id FROM sessions ORDER BY 1, 2")
    assert after == [k for k in before if k not in gone]
    assert [t[:3] for t in tombstones(pg_dsn)] == sorted((pk, sid, "") for pk, sid in gone)
    if code == 0:
        assert result.stdout.splitlines() == [
            f"Deleted session {sid} (project {pk}) from the team store; push will not send it"
            f" again (push --resend-deleted {sid} would)"
            for pk, sid in gone
        ]
    if code == 3:  # the copies, each with its project; the options that choose
        assert result.stderr.splitlines() == [
            f"Error: session {COPIED} is in 2 projects of the team store"
            f" ({odd['blog']}, {odd['shop']}): say which with --project KEY (or DIR),"
            " or --all-copies (candidates below, newest first)"
        ]
        assert "Feed cache 1" in result.stdout and "Feed cache 0" in result.stdout
        # the project column shows the directory, which --project takes too
        assert SHOP in result.stdout and BLOG in result.stdout
    if arg == COPIED and code == 1:
        assert result.stderr.splitlines() == [
            f"Error: --project /home/dev/nowhere: session {COPIED} is in the team store in"
            f" projects {odd['blog']}, {odd['shop']} only"
        ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["Auth refactor", "--project", "x"], "--project and --all-copies choose among"),
        (["Auth refactor", "--all-copies"], "--project and --all-copies choose among"),
        ([COPIED, "--all-copies", "--project", "x"], "--all-copies and --project"),
    ],
)
def test_store_delete_copy_options_are_for_a_whole_id(
    main: SessionWriter, odd: dict[str, str], pg_dsn: str, args: list[str], message: str
) -> None:
    push(main.tree.root, pg_dsn)
    before = stored_keys(pg_dsn)
    result = store("delete", database_url(pg_dsn), *args, "--yes", "--cwd", SHOP)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert (stored_keys(pg_dsn), tombstones(pg_dsn)) == (before, [])


def test_store_delete_names_the_copies_of_an_sdk_apps_own_id(pg_dsn: str) -> None:
    """An Agent SDK app may key a session by an ID of its own (not a UUID), in two
    projects: that ID, typed in any case, names both copies as a UUID does; deleted,
    it says so, from both projects."""
    import asyncio

    from sessiondex.store.sdk_store import PostgresSessionStore

    job, keys = "Nightly-Feed-Job", ("-srv-feeds-a", "-srv-feeds-b")

    async def append() -> None:
        async with PostgresSessionStore(pg_dsn) as team:
            for n, key in enumerate(keys):
                prompt = {"role": "user", "content": f"refresh the feeds ({n})"}
                entry = {"type": "user", "uuid": f"u{n}", "sessionId": job, "message": prompt}
                await team.append({"project_key": key, "session_id": job}, [entry])

    asyncio.run(append())
    url = database_url(pg_dsn)
    listed = store("delete", url, job.lower(), "--yes")
    assert listed.exit_code == 3, listed.output
    assert listed.stderr.startswith(f"Error: session {job} is in 2 projects of the team store")
    assert tombstones(pg_dsn) == []
    assert store("delete", url, job, "--yes", "--all-copies").exit_code == 0
    assert [t[:3] for t in tombstones(pg_dsn)] == [(key, job, "") for key in keys]
    again = store("delete", url, job, "--yes")
    assert again.exit_code == 1, again.output
    assert again.stderr.startswith(f"Error: session {job} was deleted from the team store (")
    assert all(f"project {key}, on " in again.stderr for key in keys)


def test_store_delete_all_copies_is_all_or_nothing(
    main: SessionWriter, odd: dict[str, str], pg_dsn: str
) -> None:
    """``--all-copies`` deletes the copies in one transaction: when the store refuses one
    copy (here a trigger on the shop's row; a lock timeout or a dropped connection does
    the same), the copies before it are not gone either, and no tombstone is left.
    Before, each copy went in a transaction of its own: the blog's copy (the newest,
    deleted first) was gone for good and the shop's was still there."""
    push(main.tree.root, pg_dsn)
    url = database_url(pg_dsn)
    before = (stored_keys(pg_dsn), tombstones(pg_dsn))
    query(
        pg_dsn,
        "CREATE FUNCTION refuse_shop_copy() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN IF OLD.project_key = %s THEN RAISE EXCEPTION 'refusing the shop copy';"
        " END IF; RETURN OLD; END $$".replace("%s", f"'{odd['shop']}'"),
    )
    query(
        pg_dsn,
        "CREATE TRIGGER refuse_shop_copy BEFORE DELETE ON sessions"
        " FOR EACH ROW EXECUTE FUNCTION refuse_shop_copy()",
    )
    try:
        result = store("delete", url, COPIED, "--yes", "--all-copies")
    finally:
        query(pg_dsn, "DROP TRIGGER refuse_shop_copy ON sessions")
        query(pg_dsn, "DROP FUNCTION refuse_shop_copy()")
    assert (stored_keys(pg_dsn), tombstones(pg_dsn)) == before
    assert result.exit_code == 1, result.output
    assert "refusing the shop copy" in result.stderr
    assert "no copy was deleted" in result.stderr
    assert result.stdout == ""
    # and once the store takes them, both go, each said
    result = store("delete", url, COPIED, "--yes", "--all-copies")
    assert result.exit_code == 0, result.output
    assert [t[:2] for t in tombstones(pg_dsn)] == sorted((odd[p], COPIED) for p in ("shop", "blog"))
