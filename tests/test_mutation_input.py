"""Names and tags: one validation for rename, tag and fork --title; a leading ``#`` is
not part of a tag; a change that changes nothing writes nothing and says so."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sessiondex.transcripts.tags import clean_label, clean_tag
from tests.test_mutations import CWD, World, last_line

# Input that leaves nothing visible: refused alike by rename, tag and fork --title.
INVISIBLE = [
    "",
    "   ",
    " \t\n ",
    "\u200b",  # zero-width space
    "\u200b\u200d\ufeff",  # zero-width joiner, BOM
    "\u202e",  # right-to-left override alone
    "\u3000",  # ideographic space
    "\u3164",  # Hangul filler: a letter that draws nothing
    "\u2800",  # braille blank
    "\x07\x1b",  # control characters only
    "\ufe0f",  # a variation selector alone: a mark that only picks another's glyph
    " \u034f\U000e0100 ",  # the combining grapheme joiner, a supplementary selector
    "\u180b\u17b4",  # a Mongolian variation selector, a Khmer inherent vowel
]


@pytest.fixture
def world(tmp_path):
    w = World(tmp_path)
    assert w.run("index").exit_code == 0
    return w


@pytest.mark.parametrize("value", INVISIBLE)
@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["rename", "Alpha"], "Error: the new name is empty"),
        (["tag", "Alpha"], "Error: the tag is empty"),
        (["fork", "Alpha", "--title"], "Error: the fork's title is empty"),
    ],
)
def test_one_validation_for_names_and_tags(
    world: World, value: str, command: list[str], message: str
) -> None:
    """Nothing visible is no name (exit 1), except that an option given a blank value
    is the usage error every option's blank value is (exit 2: an unset variable,
    ``--title "$NAME"``); NAME and TAG are arguments, not options."""
    before = world.snapshot()
    result = world.run(*command, value, "--cwd", CWD)
    if command[-1] == "--title" and not value.strip():
        assert result.exit_code == 2, result.output
        message = "Error: Invalid value for '--title': it is empty (is a variable unset?)"
    else:
        assert result.exit_code == 1, result.output
    assert result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1
    assert world.snapshot() == before


@pytest.mark.parametrize(
    ("raw", "name", "tag"),
    [
        ("  Beta ☕ ", "Beta ☕", "Beta ☕"),
        ("a\u200bb", "ab", "ab"),
        ("\u202eevil", "evil", "evil"),
        ("#hash", "#hash", "hash"),  # the picker shows #TAG: "#hash" meant the tag "hash"
        ("## two", "## two", "two"),
        ("c#", "c#", "c#"),
        ("#", "#", ""),
        ("\u2800x", "\u2800x", "\u2800x"),  # a blank beside a letter: something to show
    ],
)
def test_clean_label_and_clean_tag(raw: str, name: str, tag: str) -> None:
    assert clean_label(raw) == name
    assert clean_tag(raw) == tag


def test_a_hash_is_not_stored_in_the_tag(world: World) -> None:
    sid = world.ids["alpha"]
    result = world.run("tag", sid, "#hash", "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"Tagged {sid} #hash\n"
    assert last_line(world.paths["alpha"]) == {"type": "tag", "tag": "hash", "sessionId": sid}


@pytest.mark.parametrize(
    ("setup", "command", "message"),
    [
        ([], ["untag"], "is already untagged; nothing written"),
        ([["tag", "x"]], ["tag", "x"], "is already tagged #x; nothing written"),
        ([["tag", "x"]], ["tag", "#x"], "is already tagged #x; nothing written"),
        ([["tag", "x"], ["untag"]], ["untag"], "is already untagged; nothing written"),
        ([], ["rename", "Alpha"], "is already named 'Alpha'; nothing written"),
        ([], ["rename", " Alpha\u200b "], "is already named 'Alpha'; nothing written"),
    ],
)
def test_a_change_that_changes_nothing_writes_nothing(
    world: World, setup: list[list[str]], command: list[str], message: str
) -> None:
    sid = world.ids["alpha"]
    for step in setup:
        assert world.run(step[0], sid, *step[1:], "--cwd", CWD).exit_code == 0
    before = world.snapshot()
    result = world.run(command[0], sid, *command[1:], "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{sid} {message}\n"
    assert world.snapshot() == before  # not one byte, not one mtime
    as_json = world.run(command[0], sid, *command[1:], "--cwd", CWD, "--json")
    assert as_json.exit_code == 0 and message in as_json.stderr
    assert world.snapshot() == before


def test_a_real_change_still_writes(world: World) -> None:
    sid = world.ids["alpha"]
    assert world.run("tag", sid, "x", "--cwd", CWD).stdout == f"Tagged {sid} #x\n"
    assert world.run("tag", sid, "y", "--cwd", CWD).stdout == f"Tagged {sid} #y\n"
    assert world.run("untag", sid, "--cwd", CWD).stdout == f"Cleared the tag of {sid}\n"
    assert last_line(world.paths["alpha"]) == {"type": "tag", "tag": "", "sessionId": sid}


def test_the_sdk_style_writers_keep_the_sdks_rules(world: World) -> None:
    """What a person types is cleaned (user_name/user_tag) and no-ops are skipped by the
    CLI only: the library's defaults write what claude_agent_sdk writes, every time."""
    from sessiondex.actions.mutations import check_name, check_tag, untag, user_name, user_tag
    from sessiondex.indexer.db import open_db

    assert (check_tag("#hash"), user_tag("#hash")) == ("#hash", "hash")
    assert (check_name("a\u200bb "), user_name("a\u200bb ")) == ("a\u200bb", "ab")
    sid = world.ids["alpha"]
    before = world.paths["alpha"].read_bytes()
    db = open_db(world.db)
    try:
        result = untag(db, sid, cwd=CWD, roots=[world.tree.root])  # already untagged
    finally:
        db.close()
    assert result.written
    assert world.paths["alpha"].read_bytes() == (
        before + f'{{"type":"tag","tag":"","sessionId":"{sid}"}}\n'.encode()
    )


# Names kept as typed (no NFKC): each must resolve when typed again, as Claude Code
# compares names, and read the same in the SDK.
TYPED_NAMES = [
    "Family 👨\u200d👩\u200d👧",  # one emoji, joined
    "ｶﾀｶﾅ notes",  # halfwidth katakana
    "①② plan",
    "ﬁx the ﬂaky test",  # ligatures
    "می\u200cخواهم",  # Persian: the zero-width non-joiner is part of the word
    "👍🏽 ok",  # a skin-tone modifier
    "❤\ufe0f release",  # a variation selector
]


@pytest.mark.parametrize("typed", TYPED_NAMES)
def test_a_name_is_stored_as_typed_and_resolves_typed_again(world: World, typed: str) -> None:
    result = world.run("rename", "Alpha", typed, "--cwd", CWD)
    assert result.exit_code == 0, result.output
    assert last_line(world.paths["alpha"])["customTitle"] == typed
    found = world.run("resolve", typed, "--cwd", CWD, "--json")
    assert found.exit_code == 0, found.output
    assert world.resolve(typed)["custom_title"] == typed


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("\u202eevil", "evil"),  # bidi override
        ("a\u200bb", "ab"),  # zero-width space
        ("\ufeffname", "name"),  # BOM
        ("flag\U000e0067\U000e0062", "flag"),  # tag characters (invisible text)
        ("pua\ue000", "pua"),  # private use
        # control characters are spaces: the name shown is the name that resolves
        ("tab\tand, comma", "tab and, comma"),
        ("two\nlines", "two lines"),
        ("esc\x1b[31mred", "esc [31mred"),
        ("line\u2028sep", "line sep"),  # the line and paragraph separators too
        ("para\u2029sep", "para sep"),
    ],
)
def test_a_name_loses_what_hides_or_reorders_text(world: World, raw: str, stored: str) -> None:
    assert world.run("rename", "Alpha", raw, "--cwd", CWD).exit_code == 0
    assert last_line(world.paths["alpha"])["customTitle"] == stored
    # Typed again with the hidden character, or as shown, it still finds the session.
    assert world.run("resolve", raw, "--cwd", CWD, "--json").exit_code == 0
    assert world.run("resolve", stored, "--cwd", CWD, "--json").exit_code == 0


@pytest.mark.parametrize(
    ("stored", "typed"),
    [
        ("Café menu", "Cafe\u0301 menu"),  # stored composed, typed decomposed (macOS)
        ("Cafe\u0301 menu", "Café menu"),  # the other way round
        ("Café menu", "CAFE\u0301 MENU"),
    ],
    ids=["nfd-typed", "nfd-stored", "nfd-any-case"],
)
def test_a_name_composed_otherwise_still_finds_the_session(
    world: World, stored: str, typed: str
) -> None:
    """The error said "No session matches 'Café menu'. Did you mean: Café menu?"."""
    assert world.run("rename", "Alpha", stored, "--cwd", CWD).exit_code == 0
    found = world.run("resolve", typed, "--cwd", CWD, "--json")
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)[0]["custom_title"] == stored


@pytest.mark.parametrize(
    ("title", "stored"),
    [
        ("\u200b", None),  # nothing visible: refused
        ("  ", None),
        ("\u202eevil", "evil"),  # bidi override
        ("a\u200bb", "ab"),
    ],
)
def test_index_fork_names_the_fork_as_rename_would(
    world: World, title: str, stored: str | None
) -> None:
    """``Index.fork(title=…)`` only refused a blank title, so a fork could be named with
    an invisible character or a bidi override that rename and ``fork --title`` strip."""
    from sessiondex import Index
    from sessiondex.actions.mutations import MutationError

    with Index(db=world.db, config_dirs=[world.tree.root]) as index:
        if stored is None:
            with pytest.raises(MutationError, match="the fork's title is empty"):
                index.fork(world.ids["source"], title=title, cwd=CWD)
            return
        result = index.fork(world.ids["source"], title=title, cwd=CWD)
    assert result.session is not None and result.session["custom_title"] == stored


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda ix, sid: ix.rename(sid, 5, cwd=CWD), "the new name must be a string, not int"),
        (lambda ix, sid: ix.tag(sid, ["x"], cwd=CWD), "the tag must be a string, not list"),
        (lambda ix, sid: ix.fork(sid, title=b"x", cwd=CWD), "title must be a string, not bytes"),
    ],
    ids=["rename", "tag", "fork"],
)
def test_a_name_or_tag_that_is_no_string_is_said_to_be_so(
    world: World, call: Any, message: str
) -> None:
    """It was "empty (after removing invisible characters)"."""
    from sessiondex import Index
    from sessiondex.actions.mutations import MutationError

    with Index(db=world.db, config_dirs=[world.tree.root]) as index:
        with pytest.raises(MutationError, match=message.replace("(", r"\(")):
            call(index, world.ids["alpha"])


# A session reference that holds no visible character (helper 112): it names nothing, and
# above all not the sessions that have no name, which it cleaned down to ("" == "").
@pytest.mark.parametrize("ref", [v for v in INVISIBLE if v.strip()])
@pytest.mark.parametrize("command", [["resolve"], ["show"], ["tag", "@REF", "oops"]])
def test_an_invisible_reference_names_no_session(
    tmp_path: Any, ref: str, command: list[str]
) -> None:
    w = World(tmp_path)
    unnamed = w.tree.session(CWD)
    unnamed.user("a session nobody named")
    unnamed.assistant("ok")
    unnamed.write()
    assert w.run("index").exit_code == 0
    before = w.snapshot()
    argv = [ref if a == "@REF" else a for a in command]
    if "@REF" not in command:
        argv.append(ref)
    result = w.run(*argv, "--cwd", CWD)
    assert result.exit_code == 1, result.output
    assert unnamed.session_id not in result.output
    assert w.snapshot() == before
