"""The index's shape as plain constants, importable without sqlite-utils.

Reading commands open the index read-only and never import sqlite-utils (its import is
most of a query process's start-up); they need these names to check that the index on
disk is current. ``indexer/schema.py`` builds the tables from the same constants, and a
test checks ``MIGRATION_NAMES`` against the registered migrations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Bump when a derivation rule changes (what a row holds), not the table shape.
# 4: message line offsets (m004); 5: entrypoint window (m006); 6: long tokens cut
# (text.py); 7: message text stored compressed (m007, textstore.py); 8: Zstandard
# against a trained dictionary (m009); 9: a pr-link whose prUrl is no web address is no
# link (derive.pr_link_from_record); 10: a line with invalid UTF-8 is repaired and kept
# (transcripts/reader.py), a timestamp with no UTC year is unparseable, not fatal;
# 11: a quiet file's whole last record without "\n" is read (parse.parse_tail quiet);
# 12: a GitHub mention that is a link in another case is no mention (pr_urls.pr_identity);
# 13: a pr-link prUrl with whitespace, a control or format character is no link;
# 14: a cwd with a control character is quoted $'…' in resume_command (objects.shell_quote);
# 15: the same for C1, format and separator characters, and pr-link URLs of known forges
# 16: a title or PR link glued onto a bad line is read (reader.glued_record), and a tag
# record without a string tag clears the tag, as the SDK reads them; 17: pr_mentions in
# number and URL order (objects._build_many), whatever order the files were read in;
# 18: www.github.com (gitlab.com, bitbucket.org) links are the forge's own host's;
# 19: a new session's pr_mentions in number and URL order too (objects.build_object);
# 20: one GitHub PR linked or mentioned in two cases is listed once (objects._one_per_pr);
# 21: Thai, Lao, Myanmar and Khmer are spaced one token per character, as CJK (text.py);
# 22: team, daemon and continued-in sessions are folded (derive.py; m012);
# 23: an empty summary or lastPrompt in the last such record clears it (derive.py);
# 24: the snippet markers U+FDD0 and U+FDD1 are stored as U+FFFD (text.fts_text)
# 25: a PR URL's default port written out (:443, or :80 over http) is dropped (pr_urls.py)
# 26: long tokens are cut where unicode61 cuts tokens, not at Python's \w (text.py)
# 27: a PR URL's credentials (https://user:token@host/…) are dropped (pr_urls.py)
# 28: a line neither JSON nor UTF-8 counts as malformed-json, not invalid-utf8 (reader.py)
# 29: CJK ideographs beyond the BMP are one token each, as the BMP's (text.py)
# 30: :80 and :443 are dropped from a PR URL whatever the scheme pasted (pr_urls.py)
# 31: an empty <command-name> is no command fallback for first_prompt (records.py)
# 32: a year below 1000 is written with four digits in ISO times (objects.py iso_ms)
# 33: an unknown forge's pr-link URL is normalized; its prNumber must be positive (derive.py)
# 34: an unknown forge's query or fragment stays when it holds the PR number (pr_urls.py)
# 35: head_entrypoint, the first entrypoint only when its line is in the head window (m016)
# 36: a record glued onto a bad line gives only its type's own fields (reader.GLUED_FIELDS):
# no entrypoint, branch or timestamp of a line Claude Code's window test skips
# 37: the whole metadata record a bad line starts with, before a record glued onto it
# (reader.glued_records), and a tag glued onto a line that starts with a tag
# 38: a recorded cwd that is no absolute path gets no cd in resume_command (objects.absolute_cwd)
# 39: an invisible character inside a word (soft hyphen, zero width space) is dropped (text.py)
# 40: only those in the BMP (text.py _INVISIBLE): a tag or a supplement selector stays
# 41: every metadata record glued onto a bad line is read, N as two, spaced JSON too
# (reader._glued_chain), not only the last one
# 42: a zero width non-joiner stays a word boundary (text.py _INVISIBLE: Persian spelling)
DERIVATION_VERSION = 42

FTS_TOKENIZER = "unicode61 remove_diacritics 2"

# Session metadata columns indexed by ``session_search_fts``, in this order. The bm25
# weights in query/search.py follow it.
SESSION_FTS_COLUMNS = (
    "custom_title",
    "ai_title",
    "agent_name",
    "tag",
    "branches_text",
    "pr_text",
    "summary",
    "first_prompt",
    "last_prompt",
)

# One more column of ``session_search_fts``, computed by the view rather than kept in
# ``sessions``: the title the picker shows a session that has neither a custom nor an
# AI title (made from its summary or a prompt), NULL for the others. Claude Code's
# picker filters that title as letters are typed (query/search.py title_prefix_search).
# From these ``sessions`` columns, by ``indexer.objects.untitled_title``.
SHOWN_TITLE_COLUMN = "shown_title"
SHOWN_TITLE_SOURCES = (
    "custom_title",
    "ai_title",
    "summary",
    "last_prompt",
    "first_prompt",
    "prompt_fallback",
)

# The columns one or two typed letters filter (query/search.py title_prefix_search):
# the names, the tag, the branches and the title shown, in ``session_search_fts``'s
# order (FTS5 breaks a tie between columns' snippets to the lower one). They are
# indexed again, alone, by ``session_title_fts`` with a prefix index of one and two
# characters (``TITLE_FTS_PREFIX``, indexer/schema.py ``build_title_search``): a letter
# typed over ``session_search_fts`` made FTS5 merge the doclist of every word starting
# with it, the long prompts' too, once to filter and once more for the snippets (~18 ms
# each for "s" at 20,000 text-heavy sessions); the prefix index holds that one doclist
# ready (~2 ms), for ~0.3 MB at 2,000 sessions where a prefix index on
# ``session_search_fts`` itself would add ~2.6 MB (its long prompts).
TITLE_FTS_COLUMNS = (
    "custom_title",
    "ai_title",
    "agent_name",
    "tag",
    "branches_text",
    SHOWN_TITLE_COLUMN,
)
TITLE_FTS_PREFIX = "1 2"
FTS_TABLES = ("messages_fts", "session_search_fts", "session_title_fts")

MIGRATION_SET = "sessiondex"
MIGRATION_NAMES = (
    "m001_initial",
    "m002_session_object",
    "m003_activity_order_index",
    "m004_message_offsets",
    "m005_fork_origin_index",
    "m006_entrypoint_window",
    "m007_compressed_message_text",
    "m008_session_search_view",
    "m009_text_dictionaries",
    "m010_sessions_by_project_and_cwd",
    "m011_shown_title",
    "m012_hidden_kinds",
    "m013_files_ctime",
    "m014_picker_archive",
    "m015_no_directory_in_metadata_search",
    "m016_head_entrypoint",
    "m017_title_prefix_index",
    "m018_session_id_width_indexes",
    "m019_session_aliases",
)
#: The fewest characters of a session ID that resolve as a prefix of one, and that a
#: table shows (query/idprefix.py).
MIN_ID_PREFIX = 8
#: A session's name that may read as an ID prefix: one word of MIN_ID_PREFIX characters
#: or more. The condition of a partial index (m018), which SQLite uses for a query
#: only when its WHERE repeats this condition.
ID_LIKE_NAME_SQL = (
    f"length(coalesce(custom_title, ai_title)) >= {MIN_ID_PREFIX}"
    " AND trim(coalesce(custom_title, ai_title)) NOT LIKE '% %'"
)
# Every table and view the migrations leave, FTS5's shadow tables included
# (tests/test_reliability_faults.py checks the list against a new index). With the
# migrations all recorded, one missing is damage (a table dropped by hand, a tool's
# mistake): the index is rebuilt, as for a malformed file (indexer/db.py).
SCHEMA_OBJECTS = frozenset(
    {
        "branches",
        "files",
        "messages",
        "meta",
        "pr_links",
        "pr_mentions",
        "sessions",
        "session_aliases",
        "text_dicts",
        "message_text",
        "session_search",
        *(
            f"{fts}{shadow}"
            for fts in FTS_TABLES
            for shadow in ("", "_config", "_data", "_docsize", "_idx")
        ),
    }
)

# File systems stamp mtimes with a coarse clock: a file rewritten within the same tick
# as our read keeps its size and mtime. Like git's "racy clean" check, a file whose
# mtime was that close to our stat is verified by fingerprint next time instead of
# being trusted (costs two small reads, only for files written in the last moments).
# Here because a reading command checks one session's file against it too.
RACY_WINDOW_NS = 2_000_000_000
# An mtime this far ahead of the clock was set, not written (``touch -d``, a copy that
# kept a skewed machine's times): a write now would move it back to now, which the next
# look sees. Taken as quiet, or such a file was re-read by every reading command forever.
FUTURE_SETTLED_NS = 3600 * 1_000_000_000


def alias_stamp(st: Any) -> tuple[int, int, int, int]:
    """What tells that a ``.session-aliases`` (an ``os.stat_result``) changed since the
    refresh read it (``session_aliases``: the refresh and the freshness check compare
    it). Its ctime too: a ``chmod`` that makes an unreadable one readable changes it."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def stat_settled(
    stored: Sequence[Any],
    size: int,
    mtime_ns: int,
    inode: int,
    device: int,
    ctime_ns: int | None,
) -> bool:
    """Whether a transcript can be skipped without opening it: its ``files`` row
    (``stored`` = size, mtime_ns, inode, device, checked_ns, ctime_ns) has the same size,
    mtime, inode, device and change time as the ``lstat`` now, and was taken long enough
    after the file's last write to prove it (not "racily" clean: see ``RACY_WINDOW_NS``).

    The change time moves on every write, also one whose mtime was then set back
    (``touch -r``, ``cp -p`` over the file in place), and on a ``chmod``: then the file
    is opened and its fingerprint decides. A row without one (written before it was
    kept) is compared without it.

    The one skip rule of the refresh, the watcher's catch-up, and the checks before a
    reading command (``indexer/freshness.py``, ``Index`` for one session)."""
    return (
        (stored[0], stored[1], stored[2], stored[3]) == (size, mtime_ns, inode, device)
        and (stored[5] is None or ctime_ns is None or stored[5] == ctime_ns)
        and settled_at(stored[1], stored[4])
    )


def stat_unchanged(stored: Any, now: Any) -> bool:
    """:func:`stat_settled` of a ``files`` row (a mapping of its columns) against a
    file's stat now (``now``: a ``TranscriptFile`` or anything with its ``size``,
    ``mtime_ns``, ``inode``, ``device`` and ``ctime_ns``): the refresh's skip and the
    cleanup plan's "the index holds this file as it is" (query/cleanup.py)."""
    return stat_settled(
        (
            stored["size"],
            stored["mtime_ns"],
            stored["inode"],
            stored["device"],
            stored["checked_ns"],
            stored.get("ctime_ns"),
        ),
        now.size,
        now.mtime_ns,
        now.inode,
        now.device,
        now.ctime_ns,
    )


def settled_at(mtime_ns: int, checked_ns: int) -> bool:
    """Whether a file last written at ``mtime_ns`` had been quiet long enough when looked
    at (``checked_ns``) for what was seen to be final: its stat (not racily clean), and a
    last line without ``\n`` that is a whole record (a write that died before its
    newline, read as a record: ``indexer/parse.py``)."""
    return mtime_ns < checked_ns - RACY_WINDOW_NS or mtime_ns > checked_ns + FUTURE_SETTLED_NS
