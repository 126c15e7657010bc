"""``show --uuids`` prints the handle ``fork --up-to`` takes, which accepts a unique
prefix; ``show <path>`` names the session its records belong to (issue 16 item 3)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiondex.cli.main import cli
from sessiondex.transcripts.fork import build_fork
from tests.builders import ConfigTree, one_session

CWD = "/w/app"


def _tree(base: Path) -> tuple[ConfigTree, Any]:
    tree = ConfigTree(base / "claude")
    s = tree.session(cwd=CWD)
    s.user("first question")
    # One response written as three entries (text, tool call) plus its result.
    turn = s.assistant("looking", tool_uses=[("Bash", {"command": "ls"})])
    s.tool_result(turn.tool_use_ids[0], "a.txt")
    s.assistant("there is a.txt")
    s.user("second question")
    s.assistant("second answer")
    s.meta("custom-title", customTitle="Uuid session")
    s.write(mtime=1_790_000_000)
    return tree, s


def _run(tree: ConfigTree, base: Path, *args: str) -> Any:
    return CliRunner().invoke(
        cli, ["--config-dir", str(tree.root), "--db", str(base / "i.db"), *args, "--cwd", CWD]
    )


def test_fork_from_a_short_uuid_that_show_prints(tmp_path: Path) -> None:
    tree, s = _tree(tmp_path)
    shown = _run(tree, tmp_path, "show", s.session_id, "--uuids")
    assert shown.exit_code == 0, shown.output
    heads = re.findall(r"^(user|assistant)  \S+ \S+  ([0-9a-f]{8})$", shown.stdout, re.M)
    assert [role for role, _ in heads] == ["user", "assistant", "assistant", "user", "assistant"]
    plain = _run(tree, tmp_path, "show", s.session_id)
    assert not re.search(r"Z  [0-9a-f]{8}$", plain.stdout, re.M)  # only when asked
    md = _run(tree, tmp_path, "show", s.session_id, "--uuids", "--format", "md").stdout
    assert f"· `{heads[0][1]}`" in md

    # The first response's handle is its last entry: the fork keeps the whole message.
    short = heads[1][1]
    records = [r for r in s.records if r.get("type") in ("user", "assistant")]
    full = next(r["uuid"] for r in records if r["uuid"].startswith(short))
    assert records[1]["uuid"] != full and records[2]["uuid"] == full
    forked = _run(tree, tmp_path, "fork", s.session_id, "--up-to", short.upper(), "--json")
    assert forked.exit_code == 0, forked.output
    new = json.loads(forked.stdout)[0]
    copied = [json.loads(line) for line in Path(new["file_path"]).read_text().splitlines()]
    cut = [r["forkedFrom"]["messageUuid"] for r in copied if "forkedFrom" in r]
    assert cut == [r["uuid"] for r in records[:3]]
    as_json = _run(tree, tmp_path, "show", s.session_id, "--format", "json").stdout
    assert full in {m["uuid"] for m in json.loads(as_json)}  # json has the full ones


@pytest.mark.parametrize(
    ("up_to", "error"),
    [
        ("abcd", None),  # unique prefix
        ("ABCD", None),  # any case
        ("abc", "too short a prefix: give at least 4"),  # shorter than 4: never a prefix
        ("xyz", "not found"),  # short, and no UUID starts with it either
        ("ab12", "ambiguous"),
        ("ffff", "not found"),
    ],
)
def test_up_to_takes_a_unique_prefix(up_to: str, error: str | None) -> None:
    from sessiondex.transcripts.fork import NothingToFork

    def entry(uuid: str, parent: str | None) -> dict[str, Any]:
        return {"type": "user", "uuid": uuid, "parentUuid": parent, "message": {}}

    ids = [
        "abcd0000-0000-4000-8000-000000000001",
        "ab120000-0000-4000-8000-000000000002",
        "ab12ffff-0000-4000-8000-000000000003",
    ]
    records = [entry(ids[0], None), entry(ids[1], ids[0]), entry(ids[2], ids[1])]
    if error is None:
        fork = build_fork(records, source_id="s", new_id="n", up_to=up_to)
        assert [r.get("forkedFrom", {}).get("messageUuid") for r in fork][:1] == [ids[0]]
        assert sum(1 for r in fork if r.get("type") == "user") == 1
    else:
        with pytest.raises(NothingToFork, match=error):
            build_fork(records, source_id="s", new_id="n", up_to=up_to)


def test_show_of_a_copied_transcript_names_the_session_inside(tmp_path: Path) -> None:
    tree, s = _tree(tmp_path)
    copy = tmp_path / "backup.jsonl"
    shutil.copy(s.path, copy)
    result = _run(tree, tmp_path, "show", str(copy))
    assert result.exit_code == 0, result.output
    assert f"session: {s.session_id}" in result.stdout
    assert "session: backup" not in result.stdout
    resolved = one_session(_run(tree, tmp_path, "resolve", str(copy), "--json").stdout)
    assert resolved["session_id"] == s.session_id and resolved["file_path"] == str(copy)


@pytest.mark.parametrize(
    ("uuids", "handles"),
    [
        # distinct in their first 8: 8 each
        (["abcd0000-1", "abcd1111-2"], ["abcd0000", "abcd1111"]),
        # the same first 9 (the dash too): one more than they share
        (
            ["abcdef12-0aaa-4", "abcdef12-1bbb-4", "99999999-0"],
            ["abcdef12-0", "abcdef12-1", "99999999"],
        ),
        # any case is the same prefix to fork --up-to
        (["ABCDEF12-0aaa", "abcdef12-0abb"], ["ABCDEF12-0aa", "abcdef12-0ab"]),
        # one is a prefix of the other: the short one whole (an exact match wins)
        (["abcdef12", "abcdef12-9"], ["abcdef12", "abcdef12-"]),
        # they differ only in case: whole (fork matches a whole UUID exactly)
        (["abcdef12-X", "abcdef12-x"], ["abcdef12-X", "abcdef12-x"]),
        # a handle would begin or end with a space, which fork strips: whole
        (["eeeeeee 1", "eeeeeeeZ2", " leading-space"], ["eeeeeee 1", "eeeeeeeZ", " leading-space"]),
        ([], []),
    ],
)
def test_handles_grow_until_unique(uuids: list[str], handles: list[str]) -> None:
    from sessiondex.transcripts.fork import short_handles

    assert [short_handles(uuids)[u] for u in uuids] == handles


def test_show_prints_longer_handles_where_two_share_eight(tmp_path: Path) -> None:
    """Two messages of one session whose UUIDs start alike: a handle of 8 would be
    ambiguous to fork --up-to, so show prints as many characters as tell them apart."""
    tree = ConfigTree(tmp_path / "claude")
    s = tree.session(cwd=CWD)
    first = s.user("first question", uuid="c0ffee00-1111-4000-8000-000000000001")
    s.assistant("first answer", uuid="7a7a7a7a-0000-4000-8000-000000000002")
    s.user("second question", uuid="c0ffee00-2222-4000-8000-000000000003")
    s.assistant("second answer")
    s.write(mtime=1_790_000_000)
    shown = _run(tree, tmp_path, "show", s.session_id, "--uuids")
    assert shown.exit_code == 0, shown.output
    heads = re.findall(r"^(?:user|assistant)  \S+ \S+  (\S+)$", shown.stdout, re.M)
    assert heads[:3] == ["c0ffee00-1", "7a7a7a7a", "c0ffee00-2"]
    md = _run(tree, tmp_path, "show", s.session_id, "--uuids", "--format", "md").stdout
    assert "· `c0ffee00-2`" in md
    forked = _run(tree, tmp_path, "fork", s.session_id, "--up-to", heads[0], "--json")
    assert forked.exit_code == 0, forked.output
    copied = Path(json.loads(forked.stdout)[0]["file_path"]).read_text().splitlines()
    cut = [json.loads(line)["forkedFrom"]["messageUuid"] for line in copied if "forkedFrom" in line]
    assert cut == [first]
