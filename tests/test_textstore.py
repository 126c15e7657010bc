"""Message text stored compressed (indexer/textstore.py, m007): every kind of text comes
back as it went in, snippets and ranking are what an uncompressed FTS5 table gives,
deletes and rewrites leave no stale hits, every connection that reads text has the
function, an index of the previous schema is rebuilt, and the text takes less room."""

from __future__ import annotations

import collections
import random
import shutil
import sqlite3
import zlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import sqlite_utils

import sessiondex
from sessiondex.indexer import prefetch, schema
from sessiondex.indexer.db import open_db
from sessiondex.indexer.ingest import _message_rows
from sessiondex.indexer.meta import set_meta
from sessiondex.indexer.parse import parse_tail
from sessiondex.indexer.refresh import refresh
from sessiondex.indexer.shape import DERIVATION_VERSION, FTS_TOKENIZER
from sessiondex.indexer.text import fts_text
from sessiondex.indexer.textstore import (
    COMPRESS_MIN_BYTES,
    FUNCTION,
    ZSTD,
    Packer,
    current_dictionary,
    decode,
    dictionary_id,
    encode,
    frame_dictionary_id,
    packer,
    store_dictionary,
    train,
)
from sessiondex.transcripts.discover import iter_transcripts
from tests.builders import ConfigTree
from tests.helpers_index import check_fts_integrity, index_snapshot, rebuilt_snapshot

PROSE = (
    "The parser reads each line, folds the session state and hands the message text to "
    "the index; the writer stores it compressed and FTS5 tokenizes it once. "
)
_rng = random.Random(7)
RANDOM_WORDS = " ".join(
    "".join(_rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(_rng.randint(3, 12)))
    for _ in range(300)
)

TEXTS = {
    "empty": "",
    "one char": "x",
    "short": "fix the flaky test",
    "threshold - 1 bytes": "a" * (COMPRESS_MIN_BYTES - 1),
    "threshold bytes": "a" * COMPRESS_MIN_BYTES,
    "threshold + 1 bytes": "a" * (COMPRESS_MIN_BYTES + 1),
    "threshold bytes, multibyte": "é" * (COMPRESS_MIN_BYTES // 2),
    "long prose": PROSE * 200,
    "CJK": "数据库迁移脚本需要重构，请检查性能问题。" * 40,
    "Japanese": "キャッシュの無効化処理をリファクタリングしてください。" * 30,
    "emoji": "deploy 🚀 done ✅ 👍🏽 family 👨‍👩‍👧 flags 🇫🇷 " * 30,
    "control characters (no NUL)": "".join(chr(c) for c in range(1, 32)) * 20 + "\x7f\x85\u2028",
    "random words (barely compressible)": RANDOM_WORDS,
    "mixed": "Привет, world! " + PROSE + " 修复 测试 " + "🙂" * 50,
}


@pytest.mark.parametrize("text", list(TEXTS.values()), ids=list(TEXTS))
def test_every_kind_of_text_round_trips(text: str) -> None:
    body = encode(text)
    assert decode(body) == text
    if len(text.encode()) < COMPRESS_MIN_BYTES:
        assert body == text  # stored as it is
    if isinstance(body, bytes):
        assert body[0] == ZSTD and len(body) < len(text.encode())


def _prose(rng: random.Random, n_bytes: int) -> list[str]:
    """Message-like texts over a small vocabulary, ``n_bytes`` of them in all."""
    words = PROSE.split() + [f"word{n}" for n in range(400)] + RANDOM_WORDS.split()
    texts, total = [], 0
    while total < n_bytes:
        text = " ".join(rng.choice(words) for _ in range(rng.randint(30, 600)))
        texts.append(text)
        total += len(text)
    return texts


@pytest.fixture(scope="module")
def dictionary() -> bytes:
    trained = train(_prose(random.Random(5), 1_300_000))
    assert trained is not None
    return trained


@pytest.mark.parametrize("text", list(TEXTS.values()), ids=list(TEXTS))
def test_every_kind_of_text_round_trips_with_a_dictionary(text: str, dictionary: bytes) -> None:
    body = Packer(dictionary).encode(text)
    assert decode(body, dictionary) == text
    if isinstance(body, bytes):  # the frame names its dictionary: without it, no text
        assert decode(body) == ""


def test_a_dictionary_stores_message_text_in_fewer_bytes(dictionary: bytes) -> None:
    texts = _prose(random.Random(6), 300_000)
    plain = sum(len(encode(t)) for t in texts)
    trained = sum(len(Packer(dictionary).encode(t)) for t in texts)
    assert trained < plain * 0.9, (trained, plain)


def test_too_little_text_trains_no_dictionary() -> None:
    assert train(_prose(random.Random(8), 200_000)) is None
    assert train([]) is None


def test_bodies_of_the_previous_codec_still_read() -> None:
    """m007 stored raw deflate behind marker 0x01."""
    packer_ = zlib.compressobj(1, zlib.DEFLATED, -15)
    body = b"\x01" + packer_.compress(PROSE.encode() * 3) + packer_.flush()
    assert decode(body) == PROSE * 3


@pytest.mark.parametrize("text", list(TEXTS.values()), ids=list(TEXTS))
def test_every_kind_of_text_round_trips_through_sqlite(text: str) -> None:
    """The body as SQLite stores it (TEXT or BLOB) and read back by the SQL function."""
    conn = sqlite3.connect(":memory:")
    sessiondex.prepare_connection(conn)
    conn.execute("CREATE TABLE t (body BLOB)")
    conn.execute("INSERT INTO t VALUES (?)", [encode(text)])
    kind, back = conn.execute(f"SELECT typeof(body), {FUNCTION}(body) FROM t").fetchone()
    assert back == text
    assert kind == ("text" if len(text.encode()) < COMPRESS_MIN_BYTES else kind)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x01",
        b"\x01not deflate",
        b"\x02",
        b"\x02not a frame",
        encode(PROSE * 4)[:-6],  # type: ignore[index]
        b"\x09unknown marker",
        b"\x01" + b"\xff" * 40,
    ],
    ids=[
        "empty blob",
        "marker only",
        "bad stream",
        "zstd marker only",
        "bad frame",
        "truncated frame",
        "unknown marker",
        "garbage",
    ],
)
def test_a_damaged_body_reads_as_empty_not_as_an_error(body: bytes) -> None:
    assert decode(body) == ""


def test_null_and_numbers_pass_through() -> None:
    assert decode(None) is None
    assert decode(12) == "12"


def _tree(tmp_path: Path) -> ConfigTree:
    tree = ConfigTree(tmp_path / "claude")
    for n, (name, text) in enumerate(TEXTS.items()):
        s = tree.session(cwd=f"/work/p{n % 3}")
        s.user(f"prompt {n} about {name}: {text}" if text else f"prompt {n}")
        s.assistant(text or "ok")
        s.assistant(PROSE * (n + 1) + f" marker{n} parser")
        s.write()
    return tree


def _index(tmp_path: Path, tree: ConfigTree, name: str = "i.db") -> sqlite_utils.Database:
    db = open_db(tmp_path / name)
    refresh(db, [tree.root])
    return db


def test_the_view_gives_back_every_text_as_indexed(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    db = _index(tmp_path, tree)
    stored = {r[0] for r in db.execute("SELECT text FROM message_text")}
    for text in TEXTS.values():
        if text:
            assert fts_text(text) in stored
    kinds = {r[0] for r in db.execute("SELECT DISTINCT typeof(body) FROM messages")}
    assert kinds == {"text", "blob"}
    check_fts_integrity(db)


QUERIES = ["parser", "compressed", "marker3", '"writer stores"', "数 据", "flaky", "pars*", "world"]


def test_snippets_and_ranking_equal_an_uncompressed_fts_table(tmp_path: Path) -> None:
    """The reference: an FTS5 table holding the same texts as plain content."""
    db = _index(tmp_path, _tree(tmp_path))
    db.execute(f"CREATE VIRTUAL TABLE temp.plain USING fts5(text, tokenize='{FTS_TOKENIZER}')")
    db.execute("INSERT INTO temp.plain(rowid, text) SELECT id, text FROM message_text")
    for query in QUERIES:
        match = fts_text(query)
        for table in ("messages_fts", "plain"):
            assert db.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", [match])
        ours, plain = (
            db.execute(
                f"SELECT rowid, snippet({t}, 0, '[', ']', '…', 12), highlight({t}, 0, '<', '>'),"
                f" round(rank, 6) FROM {t} WHERE {t} MATCH ? ORDER BY rank, rowid",
                [match],
            ).fetchall()
            for t in ("messages_fts", "plain")
        )
        assert ours == plain, query
        assert ours, query


def test_search_answers_equal_after_a_rebuild(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    index = sessiondex.Index(tmp_path / "i.db", [tree.root])
    first = {q: index.search(q, scope="all") for q in QUERIES}
    index.refresh(rebuild=True)
    assert {q: index.search(q, scope="all") for q in QUERIES} == first
    assert any("[marker3]" in hit["snippet"] for hit in first["marker3"])
    index.close()


def test_deleting_or_rewriting_a_file_leaves_no_stale_hits(tmp_path: Path) -> None:
    tree = ConfigTree(tmp_path / "claude")
    gone = tree.session(cwd="/work/a")
    gone.user("the vanishingword prompt " + PROSE * 5)
    gone.assistant(PROSE * 10 + " vanishingword again")
    gone_path = gone.write()
    kept = tree.session(cwd="/work/b")
    kept.user("the rewrittenword prompt " + PROSE * 5)
    kept_path = kept.write()
    db = _index(tmp_path, tree)

    def hits(word: str) -> int:
        return int(
            db.execute(
                "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", [word]
            ).fetchone()[0]
        )

    assert hits("vanishingword") == 2 and hits("rewrittenword") == 1
    gone_path.unlink()
    again = tree.session(cwd="/work/b", session_id=kept.session_id)
    again.user("a replacementword prompt " + PROSE * 5)
    kept_path.unlink()
    again.write()
    refresh(db, [tree.root])
    assert hits("vanishingword") == 0 and hits("rewrittenword") == 0
    assert hits("replacementword") == 1
    check_fts_integrity(db)
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "r.db")


@pytest.mark.parametrize("with_dictionary", [False, True], ids=["no dictionary", "dictionary"])
def test_the_parsing_process_and_the_writer_store_the_same_bodies(
    tmp_path: Path, dictionary: bytes, with_dictionary: bool
) -> None:
    """Texts compressed by the parser (cold build, parser ahead) or by the writer are the
    same rows: both use the index's dictionary."""
    tree = _tree(tmp_path)
    db = open_db(tmp_path / "i.db")
    used = dictionary if with_dictionary else None
    if used:
        store_dictionary(db.conn, used)
    assert current_dictionary(db.conn) == used
    for tf in iter_transcripts(tree.root):
        with open(tf.path, "rb") as stream:
            plain = parse_tail(stream, tf.size, 0, None, set(), set(), False)
            packed = parse_tail(
                stream, tf.size, 0, None, set(), set(), False, encoder=packer(used).encode
            )
        assert packed.encoded and not plain.encoded
        assert _message_rows(db, 1, 2, plain) == _message_rows(db, 1, 2, packed)


def test_a_prefetched_file_is_compressed_in_the_parser_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    tf = next(t for t in iter_transcripts(tree.root) if t.size > 2000)
    monkeypatch.setattr(prefetch, "_encode_texts", SimpleNamespace(value=1))
    item = prefetch.parse_new_file(tf, False)
    assert item.parsed is not None and item.parsed.encoded
    assert any(isinstance(m[3], bytes) for m in item.parsed.messages)
    monkeypatch.setattr(prefetch, "_encode_texts", SimpleNamespace(value=0))
    item = prefetch.parse_new_file(tf, False)
    assert item.parsed is not None and not item.parsed.encoded
    assert all(isinstance(m[3], str) for m in item.parsed.messages)


def test_the_parsing_process_compresses_against_the_dictionary_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dictionary: bytes
) -> None:
    """The dictionary the parsing worker keeps (``Prefetcher(..., dictionary)`` hands
    it to the worker's initializer) is what its bodies are compressed against."""

    tree = _tree(tmp_path)
    tf = next(t for t in iter_transcripts(tree.root) if t.size > 2000)
    monkeypatch.setattr(prefetch, "_encode_texts", SimpleNamespace(value=1))
    monkeypatch.setattr(prefetch, "_dictionary", dictionary)
    item = prefetch.parse_new_file(tf, False)
    assert item.parsed is not None and item.parsed.encoded
    frames = [m[3] for m in item.parsed.messages if isinstance(m[3], bytes)]
    assert frames
    assert {frame_dictionary_id(f[1:]) for f in frames} == {dictionary_id(dictionary)}
    assert all(decode(f, dictionary) for f in frames)


def test_a_connection_of_ones_own_needs_the_function(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    _index(tmp_path, tree).close()
    plain = sqlite3.connect(tmp_path / "i.db")
    with pytest.raises(sqlite3.OperationalError, match=f"no such function: {FUNCTION}"):
        plain.execute("SELECT text FROM message_text").fetchall()
    with pytest.raises(sqlite3.OperationalError, match="SQL logic error"):  # FTS5's words
        plain.execute(
            "SELECT snippet(messages_fts, 0, '[', ']', '…', 8) FROM messages_fts"
            " WHERE messages_fts MATCH 'parser'"
        ).fetchall()
    sessiondex.prepare_connection(plain)
    assert plain.execute(
        "SELECT snippet(messages_fts, 0, '[', ']', '…', 8) FROM messages_fts"
        " WHERE messages_fts MATCH 'parser'"
    ).fetchall()
    # ... and Index registers it on a connection it is given.
    given = sqlite3.connect(tmp_path / "i.db")
    index = sessiondex.Index(given, [tree.root], refresh=False)
    assert index.search("marker3", scope="all")
    assert given.execute("SELECT count(text) FROM message_text").fetchone()[0] > 0


def test_an_index_of_the_previous_schema_is_rebuilt_on_open(tmp_path: Path) -> None:
    """m006 + DERIVATION_VERSION 6: plain ``messages.text`` and FTS content ``messages``."""
    tree = _tree(tmp_path)
    path = tmp_path / "old.db"
    old = sqlite_utils.Database(path)
    schema.migrations.apply(old, stop_before="m007_compressed_message_text")
    old.execute(
        "INSERT INTO messages (session_rowid, file_id, uuid, type, ts_ms, text, line_offset)"
        " VALUES (1, 1, 'u', 'user', 0, 'a stale oldschemaword message', 0)"
    )
    set_meta(old, "derivation_version", str(DERIVATION_VERSION - 1))
    old.conn.commit()
    old.close()
    db = open_db(path)
    columns = {c[1] for c in db.execute("PRAGMA table_info(messages)")}
    assert "body" in columns and "text" not in columns
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
    refresh(db, [tree.root])
    assert db.execute(
        "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'oldschemaword'"
    ).fetchone() == (0,)
    assert db.execute(
        "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'marker3'"
    ).fetchone() == (1,)
    check_fts_integrity(db)
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "new.db")


def test_text_heavy_history_stores_its_text_in_fewer_bytes(tmp_path: Path) -> None:
    """No timing: the stored bodies of a prose-heavy tree are well under the text."""
    tree = ConfigTree(tmp_path / "claude")
    rng = random.Random(3)
    words = PROSE.split() + [f"word{n}" for n in range(400)]
    for n in range(20):
        s = tree.session(cwd=f"/work/p{n % 4}")
        for _ in range(10):
            s.user(" ".join(rng.choice(words) for _ in range(rng.randint(20, 200))))
            s.assistant(" ".join(rng.choice(words) for _ in range(rng.randint(100, 1500))))
        s.write()
    db = _index(tmp_path, tree)
    stored, text = db.execute(
        "SELECT sum(length(CAST(m.body AS BLOB))), sum(length(CAST(t.text AS BLOB)))"
        " FROM messages m JOIN message_text t ON t.id = m.id"
    ).fetchone()
    assert stored < text * 0.6, (stored, text)


def _wordy_tree(tmp_path: Path, sessions: int, seed: int) -> ConfigTree:
    tree = ConfigTree(tmp_path / "claude")
    rng = random.Random(seed)
    for n in range(sessions):
        s = tree.session(cwd=f"/work/p{n % 4}")
        for text in _prose(rng, 12_000):
            s.user(text[:400])
            s.assistant(text + f" planted{n}")
        s.write()
    return tree


def test_a_cold_build_trains_a_dictionary_and_every_writer_uses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold build (the parsing process, bulk FTS) trains the index's dictionary on a
    sample of its new files while the parser starts; every body, whoever compressed it
    and whether before or after the dictionary, reads back; a connection
    opened before the dictionary existed finds it; later appends use it; a rebuild
    trains a new one and forgets the old."""
    import sessiondex.indexer.refresh as refresh_module
    import sessiondex.indexer.textstore as textstore

    monkeypatch.setattr(refresh_module, "PREFETCH_MIN_BYTES", 1)
    monkeypatch.setattr(textstore, "MIN_SAMPLE_BYTES", 100_000)
    tree = _wordy_tree(tmp_path, 30, seed=11)
    path = tmp_path / "i.db"
    open_db(path).close()  # the index exists, with no dictionary yet
    early = sqlite3.connect(path)
    sessiondex.prepare_connection(early)
    assert early.execute("SELECT count(*) FROM text_dicts").fetchone() == (0,)
    db = open_db(path)
    refresh(db, [tree.root])
    (trained,) = db.execute("SELECT zstd_id FROM text_dicts").fetchone()
    frames = [
        bytes(b)[1:] for (b,) in db.execute("SELECT body FROM messages WHERE typeof(body) = 'blob'")
    ]
    assert frames
    named = {frame_dictionary_id(f) for f in frames}
    # the files handed to the parser before the dictionary was trained may be without
    assert trained in named and named <= {0, trained}
    assert all(t for (t,) in db.execute("SELECT text FROM message_text"))
    assert dictionary_id(current_dictionary(db.conn) or b"") == trained
    check_fts_integrity(db)
    (hits,) = early.execute(
        "SELECT count(*) FROM message_text WHERE text LIKE '%planted7'"
    ).fetchone()
    assert hits > 1
    # an append goes through the writer: compressed against the same dictionary
    s = tree.session(cwd="/work/p9")
    s.user("a late prompt " + PROSE * 8 + " lateword")
    s.write()
    refresh(db, [tree.root])
    (late,) = db.execute(
        "SELECT m.body FROM messages m JOIN message_text t ON t.id = m.id"
        " WHERE t.text LIKE '%lateword'"
    ).fetchone()
    assert frame_dictionary_id(bytes(late)[1:]) == trained
    assert sessiondex.Index(path, [tree.root], refresh=False).search("lateword", scope="all")
    # a rebuild starts over: one dictionary, every body readable, same answers
    before = index_snapshot(db)
    refresh(db, [tree.root], rebuild=True)
    assert db.execute("SELECT count(*) FROM text_dicts").fetchone() == (1,)
    assert index_snapshot(db) == before
    check_fts_integrity(db)
    early.close()
    db.close()


def test_an_index_grown_by_small_refreshes_trains_its_dictionary_once_it_has_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No cold build ever happened (each refresh below the prefetch threshold): once the
    index holds enough text, a refresh trains the dictionary from the stored messages;
    the bodies written before it still read, new ones use it, and the answers equal a
    rebuild's."""
    import sessiondex.indexer.textstore as textstore

    monkeypatch.setattr(textstore, "MIN_SAMPLE_BYTES", 150_000)
    tree = ConfigTree(tmp_path / "claude")
    rng = random.Random(21)
    db = open_db(tmp_path / "i.db")
    trained_after = None
    for n in range(40):
        s = tree.session(cwd=f"/work/p{n % 3}")
        for text in _prose(rng, 8_000):
            s.user(text + f" step{n}")
        s.write()
        refresh(db, [tree.root])
        if trained_after is None and current_dictionary(db.conn) is not None:
            trained_after = n
    assert trained_after is not None and 0 < trained_after < 39
    (dict_id,) = db.execute("SELECT zstd_id FROM text_dicts").fetchone()
    named = {
        frame_dictionary_id(bytes(b)[1:])
        for (b,) in db.execute("SELECT body FROM messages WHERE typeof(body) = 'blob'")
    }
    assert named == {0, dict_id}  # the early bodies without, the later ones with it
    for n in (0, trained_after, 39):
        assert sessiondex.Index(tmp_path / "i.db", [tree.root], refresh=False).search(
            f"step{n}", scope="all"
        ), n
    check_fts_integrity(db)
    assert index_snapshot(db) == rebuilt_snapshot([tree.root], tmp_path / "new.db")


def test_bodies_the_parser_compressed_bring_their_dictionary_along(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dictionary: bytes
) -> None:
    """A rebuild in another process can empty ``text_dicts`` between two commit groups
    of a cold build whose parsing process holds the old dictionary: each file it writes
    stores that dictionary again, in its own transaction, so its bodies stay readable."""
    from sessiondex.indexer.refresh import ingest_prefetched
    from sessiondex.indexer.stats import RefreshStats

    tree = _tree(tmp_path)
    db = open_db(tmp_path / "i.db")
    assert current_dictionary(db.conn) is None  # emptied (or never trained)
    monkeypatch.setattr(prefetch, "_encode_texts", SimpleNamespace(value=1))
    monkeypatch.setattr(prefetch, "_dictionary", dictionary)
    for tf in iter_transcripts(tree.root):
        ingest_prefetched(db, prefetch.parse_new_file(tf, False), RefreshStats(), False, dictionary)
    assert current_dictionary(db.conn) == dictionary
    texts = {t for (t,) in db.execute("SELECT text FROM message_text")}
    assert "" not in texts and any("marker3" in t for t in texts)
    check_fts_integrity(db)


def test_a_dictionary_given_late_reaches_the_parser_after_the_files_already_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dictionary: bytes
) -> None:
    """``Prefetcher.use_dictionary`` while the parser works: the files already handed to
    it are compressed without the dictionary, every later one with it (one worker takes
    its tasks in order), and all of them read back."""
    from sessiondex.transcripts.discover import iter_found

    class AlwaysCompress(prefetch.Prefetcher):
        def _start_pool(self, dictionary: bytes | None) -> Any:
            pool = super()._start_pool(dictionary)
            self._encode_texts.value = 1
            self._encode_texts = SimpleNamespace(value=1)  # take()'s hints stop here
            return pool

        def _parse_while_waiting(self, head: Any) -> None:
            pass  # every file to the parser: its compression is what is looked at

    tree = _tree(tmp_path)
    files = sorted(iter_found(tree.root, skipped=collections.Counter()), key=lambda f: f.path)
    assert len(files) >= 8
    monkeypatch.setattr(prefetch.Prefetcher, "WINDOW", 3)
    parser = AlwaysCompress(files, False)
    try:
        # Sent before the dictionary: the window's 3 files, or more when the parser had
        # finished a batch while the constructor was still filling it (a quiet machine).
        sent = len(parser._futures)
        parser.use_dictionary(dictionary)
        items = [parser.take(found.file()) for found in files]
    finally:
        parser.close()
    assert 3 <= sent < len(files)
    named = []
    for item in items:
        assert item.parsed is not None and item.parsed.encoded
        frames = [m[3] for m in item.parsed.messages if isinstance(m[3], bytes)]
        assert all(decode(f, dictionary) for f in frames)
        named.append({frame_dictionary_id(f[1:]) for f in frames})
    assert named == [{0}] * sent + [{dictionary_id(dictionary)}] * (len(files) - sent)


def test_a_sample_that_trains_nothing_is_not_tried_at_every_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Training from the index reads up to 4 MB of text: when it gives no dictionary,
    the next refreshes that add messages do not read and train again until the index
    holds twice the text it held then."""
    import sessiondex.indexer.refresh as refresh_module
    import sessiondex.indexer.textstore as textstore

    monkeypatch.setattr(textstore, "MIN_SAMPLE_BYTES", 8_000)
    calls: list[int] = []

    def untrainable(texts: Any) -> None:
        calls.append(len(list(texts)))
        return None

    monkeypatch.setattr(refresh_module, "train", untrainable)
    tree = ConfigTree(tmp_path / "claude")
    rng = random.Random(2)
    db = open_db(tmp_path / "i.db")
    tried: list[bool] = []
    stored: list[int] = []
    for _ in range(16):
        s = tree.session(cwd="/work/p")
        for text in _prose(rng, 4_000):
            s.user(text)
        s.write()
        before = len(calls)
        refresh(db, [tree.root])
        tried.append(len(calls) > before)
        stored.append(db.execute("SELECT sum(length(body)) FROM messages").fetchone()[0])
    expected, failed_at = [], 0
    for size in stored:
        due = size >= 8_000 and not (failed_at and size < 2 * failed_at)
        expected.append(due)
        failed_at = size if due else failed_at
    assert tried == expected, (tried, stored)
    assert sum(tried) >= 2 and sum(tried) < sum(size >= 8_000 for size in stored)
    assert current_dictionary(db.conn) is None


def test_threads_building_their_own_indexes_at_once(tmp_path: Path) -> None:
    """An Index belongs to its thread, so two threads may each build their own index at
    the same time. They shared one zstandard compressor (cached for the process), which
    compresses outside the GIL and is not thread-safe: the process died of SIGSEGV.
    Run in a child process, so a crash fails this test rather than the test run."""
    import subprocess
    import sys

    from bench.corpus import generate

    corpora = [tmp_path / f"corpus{n}" for n in (1, 2)]
    # One corpus generated (~0.9 s of CPU each, whatever the size), copied for the other
    # thread: two copies of the same tree crashed the unfixed build as often (16 of 16
    # runs with one cache of compressors for the process, as two corpora did).
    generate(corpora[0], sessions=30, projects=3, size_mb=6, seed=20, profile="text-heavy")
    shutil.copytree(corpora[0], corpora[1])
    script = """
import sys, threading
from sessiondex import Index

def build(corpus, db):
    with Index(db, [corpus]) as index:
        index.refresh()

args = sys.argv[1:]
threads = [threading.Thread(target=build, args=(args[i], args[i + 2])) for i in (0, 1)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""
    dbs = [tmp_path / "one.db", tmp_path / "two.db"]
    for _ in range(3):  # the crash needed the two compressions to overlap
        for db in dbs:
            for leftover in tmp_path.glob(db.name + "*"):
                leftover.unlink()
        done = subprocess.run(
            [sys.executable, "-c", script, *map(str, corpora), *map(str, dbs)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    for corpus, db in zip(corpora, dbs):  # what each thread wrote reads back whole
        with sessiondex.Index(db, [corpus], refresh=False) as index:
            assert index.search("the", scope="all", limit=5)
        conn = sqlite3.connect(db)
        sessiondex.prepare_connection(conn)
        texts = [row[0] for row in conn.execute("SELECT text FROM message_text")]
        conn.close()
        assert texts and all(isinstance(t, str) for t in texts) and any(len(t) > 500 for t in texts)
