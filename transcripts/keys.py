"""Project keys and session IDs: the rules that turn user input into file names.

Both rules live here and nowhere else. ``project_key`` copies Claude Code's CLI (not the
Python SDK, which counts code points and so disagrees on emoji paths), and every path
built from user input goes through :func:`validate_session_id` first, so no ``../``,
absolute path or NUL can leave ``projects/``.
"""

from __future__ import annotations

import os
import re
import unicodedata
from functools import cache

MAX_SANITIZED_LENGTH = 200
# The length of every session ID (8-4-4-4-12 hex digits): what a name must have before
# the pattern is worth trying (discovery tests it on every entry of a project dir).
SESSION_ID_LENGTH = 36


# Both patterns compiled on first use (~0.1 ms each at import, in every command; a
# search with --no-refresh never uses them).
@cache
def _uuid_re() -> re.Pattern[str]:
    # JavaScript-style: ``\Z`` rather than ``$`` so a trailing newline is *not* accepted
    # (the SDK's ``$`` lets ``"<uuid>\n"`` through; docs/project-keys.md#session-ids).
    # Either case spelled out: the same strings as ``[0-9a-f]`` with IGNORECASE (no other
    # character folds to a hex digit), matched in half the time; discovery tries it on
    # every name of a project dir, 20,000 times in the check before a reading command.
    return re.compile(
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z"
    )


@cache
def _project_dir_name_re() -> re.Pattern[str]:
    return re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


_WINDOWS_DEVICE_NAMES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)] + [f"lpt{i}" for i in range(10)]
)


def is_session_id(text: object) -> bool:
    """True when ``text`` is a strict 8-4-4-4-12 hex UUID (either case, nothing around it)."""
    return isinstance(text, str) and _uuid_re().match(text) is not None


def validate_session_id(text: object) -> str:
    """Return ``text`` if it is a session ID, else raise ``ValueError``.

    Used by every code path that turns user input into ``<id>.jsonl``.
    """
    if not is_session_id(text):
        raise ValueError(f"Invalid session ID: {text!r}")
    assert isinstance(text, str)
    return text


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]


def _java_hash_base36(text: str) -> str:
    """``abs(String.hashCode())`` in lowercase base 36, over UTF-16 code units."""
    h = 0
    for unit in _utf16_units(text):
        h = (h * 31 + unit) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 0x100000000
    n = abs(h)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def sanitize_path(path: str) -> str:
    """Every UTF-16 code unit outside ``[A-Za-z0-9]`` becomes ``-`` (an emoji: two)."""
    out = []
    for unit in _utf16_units(path):
        ch = chr(unit) if unit < 0xD800 or unit > 0xDFFF else "-"
        out.append(ch if ch.isascii() and ch.isalnum() else "-")
    return "".join(out)


def canonical_directory(path: str | os.PathLike[str]) -> str:
    """realpath then NFC, as the CLI does; realpath failures fall back to NFC alone."""
    text = os.fspath(path)
    try:
        text = os.path.realpath(text)
    except OSError:
        pass
    return unicodedata.normalize("NFC", text)


def project_key_for_canonical(canonical: str) -> str:
    """The project-dir name for an already canonical path."""
    sanitized = sanitize_path(canonical)
    if len(sanitized) <= MAX_SANITIZED_LENGTH:
        return sanitized
    return f"{sanitized[:MAX_SANITIZED_LENGTH]}-{_java_hash_base36(canonical)}"


def project_key(path: str | os.PathLike[str]) -> str:
    """Claude Code's project-dir name for a working directory.

    Example: ``/home/user/my_project.v2`` → ``-home-user-my-project-v2``.
    """
    return project_key_for_canonical(canonical_directory(path))


def project_dir_name_override(environ: dict[str, str] | None = None) -> str | None:
    """``CLAUDE_CODE_PROJECT_DIR_NAME`` when Claude Code would honour it, else None.

    Honoured only with a non-empty ``CLAUDE_CONFIG_DIR``, a value matching
    ``^[A-Za-z0-9_-]{1,64}$`` and not a Windows device name; otherwise silently ignored.
    """
    env = os.environ if environ is None else environ
    value = env.get("CLAUDE_CODE_PROJECT_DIR_NAME")
    if not value or not env.get("CLAUDE_CONFIG_DIR"):
        return None
    if not _project_dir_name_re().match(value) or value.lower() in _WINDOWS_DEVICE_NAMES:
        return None
    return value


def project_keys_for_directory(
    path: str | os.PathLike[str], environ: dict[str, str] | None = None
) -> list[str]:
    """Every project-dir name Claude Code would look in for ``path``, override first."""
    keys = []
    override = project_dir_name_override(environ)
    if override:
        keys.append(override)
    key = project_key(path)
    if key not in keys:
        keys.append(key)
    return keys


def project_keys_named(value: str) -> list[str]:
    """The project keys a ``--project`` value may name: a directory (the sessions started
    there, named as Claude Code names their folder; it need not exist any more) or,
    without a ``/``, a project folder's own name too (``push``, ``store delete``)."""
    return ([value] if "/" not in value else []) + [
        k for k in project_keys_for_directory(value) if k != value
    ]
