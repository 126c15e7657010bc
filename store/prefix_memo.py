"""What ``push`` last learnt of each transcript's bytes, so that an unchanged file is
skipped without being read.

``push`` skips a file the store holds whole when the fingerprint of its bytes
(``indexer/parse.py``: windows and a CRC-32 of every byte) equals the one stored with
its push state. Taking that fingerprint reads the whole file: a push with nothing to
send read every transcript once, ~0.2 s for 400 MB in the page cache and far more
from disk. The store's push state cannot say more (it keeps no ``ctime``, and a
newer column would be a schema migration every team member's sessiondex must know).

So each machine keeps, beside its index in the cache dir, a memo: file path → the
``stat`` it had and the fingerprint its bytes had then. A file whose ``stat`` is the
same now, by the refresh's own rule (``indexer.shape.stat_settled``: size, mtime,
inode, device and change time, and not racily so), still has those bytes, so that
fingerprint is compared with the store's without reading. Anything else — no memo, a
damaged one, another stat — reads the file as before. The memo is disposable: losing
it costs one read of each file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from sessiondex.indexer.shape import stat_settled
from sessiondex.transcripts.discover import TranscriptFile

# Bumped when an entry's shape changes: an older memo is then ignored, never misread.
MEMO_VERSION = 1


def default_memo_path(environ: dict[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/sessiondex/push-prefixes.json`` (``~/.cache``)."""
    env = os.environ if environ is None else environ
    cache = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "sessiondex" / "push-prefixes.json"


class PrefixMemo:
    """Path → ``(size, mtime_ns, inode, device, checked_ns, ctime_ns, fingerprint)``.

    ``checked_ns`` is a time taken before the ``stat``, so that ``stat_settled`` can
    tell a file written within its racy window (then it is read)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, list[Any]] = {}
        self._changed = False
        if path is None:
            return
        try:
            data = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return  # none yet, or damaged: every file is read once
        if isinstance(data, dict) and data.get("version") == MEMO_VERSION:
            entries = data.get("files")
            if isinstance(entries, dict):
                self.entries = {
                    k: v for k, v in entries.items() if isinstance(v, list) and _sound(v)
                }

    def fingerprint(self, tf: TranscriptFile) -> str | None:
        """The fingerprint of ``tf``'s first ``tf.size`` bytes when its stat (taken at
        discovery) proves them unchanged since it was learnt; else None."""
        entry = self.entries.get(str(tf.path))
        if entry is None or entry[0] != tf.size:
            return None
        if not stat_settled(entry, tf.size, tf.mtime_ns, tf.inode, tf.device, tf.ctime_ns):
            return None
        return str(entry[6])

    def learn(self, tf: TranscriptFile, checked_ns: int, fingerprint: str) -> None:
        """``fingerprint`` is that of the first ``tf.size`` bytes of the file, read after
        the stat ``tf`` holds was taken, which was after ``checked_ns``."""
        self.entries[str(tf.path)] = [
            tf.size,
            tf.mtime_ns,
            tf.inode,
            tf.device,
            checked_ns,
            tf.ctime_ns,
            fingerprint,
        ]
        self._changed = True

    def forget_others(self, roots: list[Path], seen: set[str]) -> None:
        """Forget the files of ``roots`` that a push looking at every one of their files
        did not see (deleted, moved): the memo does not grow with the history of files."""
        prefixes = tuple(os.path.join(str(root), "projects", "") for root in roots)
        gone = [p for p in self.entries if p.startswith(prefixes) and p not in seen]
        for path in gone:
            del self.entries[path]
        self._changed = self._changed or bool(gone)

    def save(self) -> None:
        """Write the memo in place of the old one (a temporary file moved over it: a
        reader never sees half of it). A memo that cannot be written is only a cost."""
        if self.path is None or not self._changed:
            return
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(orjson.dumps({"version": MEMO_VERSION, "files": self.entries}))
            os.replace(temporary, self.path)
        except OSError:
            try:
                temporary.unlink(missing_ok=True)
            except OSError:
                pass


def _sound(entry: list[Any]) -> bool:
    """An entry of the shape :meth:`PrefixMemo.learn` writes (a hand-edited or damaged
    one is dropped, never trusted)."""
    return (
        len(entry) == 7
        and all(type(v) is int for v in entry[:5])
        and (entry[5] is None or type(entry[5]) is int)
        and type(entry[6]) is str
        and ":" in entry[6]
    )
