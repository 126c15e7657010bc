"""The only code that changes transcripts: appends and deletes.

Appends follow the rules Claude Code and the SDK rely on, minus the SDK's bug: the file
must already exist (never created), must end in ``\\n`` before we write (else the SDK
would glue our record onto a half line, corrupting both; we add the newline first), and
the record is one line written with one ``write`` on an ``O_APPEND`` descriptor, so a
concurrent writer's line is never interleaved with ours.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson

from sessiondex.transcripts.discover import MAIN, TranscriptFile, describe_path


class WriteRefused(Exception):
    """A mutation we will not perform; the message says why, in one line."""


def owned_transcript(path: Path, roots: list[Path]) -> TranscriptFile:
    """The main transcript at ``path`` if it sits inside a configured ``projects/`` dir
    (no symlink on the way), else :class:`WriteRefused`."""
    described = describe_path(path, roots)
    if described is None or described.kind != MAIN:
        raise WriteRefused(f"{path} is not a session transcript inside a configured projects/ dir")
    return described


def append_record(path: Path, record: dict[str, Any], roots: list[Path]) -> None:
    """Append one record as one line to an existing transcript."""
    owned_transcript(path, roots)
    line = orjson.dumps(record) + b"\n"
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise WriteRefused(f"{path} no longer exists") from None
    except OSError as exc:
        raise WriteRefused(f"cannot write {path}: {exc.strerror}") from None
    try:
        size = os.fstat(fd).st_size
        if size > 0:
            last = os.pread(fd, 1, size - 1)
            if last != b"\n":
                line = b"\n" + line
        written = os.write(fd, line)
        if written != len(line):
            raise WriteRefused(f"short write to {path} ({written} of {len(line)} bytes)")
    except OSError as exc:
        raise WriteRefused(f"cannot write {path}: {exc.strerror}") from None
    finally:
        os.close(fd)


def delete_session_files(path: Path, roots: list[Path]) -> list[Path]:
    """Remove a main transcript and its ``<id>/`` folder; returns what was removed.

    Only ``<uuid>.jsonl`` and ``<uuid>/`` inside a configured ``projects/`` dir are ever
    removed; a symlinked folder is unlinked, never followed.
    """
    tf = owned_transcript(path, roots)
    removed: list[Path] = []
    try:
        os.unlink(tf.path)
    except FileNotFoundError:
        raise WriteRefused(f"{tf.path} no longer exists") from None
    except OSError as exc:
        raise WriteRefused(f"cannot delete {tf.path}: {exc.strerror}") from None
    removed.append(tf.path)
    folder = tf.path.with_suffix("")
    if folder.is_symlink():
        folder.unlink()
        removed.append(folder)
    elif folder.is_dir():
        try:
            shutil.rmtree(folder)  # rmtree never follows symlinks inside the tree
        except OSError as exc:
            raise WriteRefused(f"deleted {tf.path} but not all of {folder}: {exc}") from None
        removed.append(folder)
    return removed
