"""Which config dirs hold transcripts.

First match wins:

1. ``--config-dir`` (repeatable): every dir given (``~`` expanded, for
   ``--config-dir=~/x`` where the shell does not expand it);
2. ``$CLAUDE_CONFIG_DIR``, when non-empty: **one** path, exactly as Claude Code reads
   it. A comma is part of the path (``/data/claude,old`` is one directory: Claude Code
   would write there) and ``~`` is not expanded (Claude Code and the SDK do not);
3. ``$SESSIONDEX_CONFIG_DIRS``: several dirs separated by ``os.pathsep`` (``:`` on
   POSIX), for copies from several machines indexed into one database;
4. ``~/.claude``.

Claude Code's own variable comes before ours so that the SDK-style functions, which
honour ``CLAUDE_CONFIG_DIR`` as the SDK does, answer for the same dir as the SDK.
Paths are kept as given (absolute, NFC), not realpath'd: the SDK does the same, and a
root's identity in the index must not change when a symlink moves. Two spellings of one
directory (a symlink beside its target) still count once, as the first given.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sessiondex.transcripts.fspath import absolute, process_cwd

#: Where the config dirs came from (:attr:`ConfigDirs.source`).
SOURCE_OPTION = "--config-dir"
SOURCE_CLAUDE_ENV = "CLAUDE_CONFIG_DIR"
SOURCE_SESSIONDEX_ENV = "SESSIONDEX_CONFIG_DIRS"
SOURCE_DEFAULT = "default"


def _normalize(path: str, *, expand_user: bool = True, nfc: bool = False) -> Path:
    """A config dir as named: absolute, ``~`` expanded for our own settings, and in NFC
    only where Claude Code puts it so (``CLAUDE_CONFIG_DIR``, ``~/.claude``). A folder
    named with ``--config-dir`` is the folder named: on Linux a decomposed ``é`` and a
    composed one are two folders, and NFC read (and wrote to) the other one."""
    if expand_user:
        path = os.path.expanduser(path)
    text = absolute(path)
    return Path(unicodedata.normalize("NFC", text) if nfc else text)


@dataclass(frozen=True)
class ConfigDirs:
    """The config dirs to index and the setting that named them: a dir the user named
    that does not exist is a mistake worth an error, the default one is not."""

    dirs: list[Path]
    source: str

    @property
    def is_default(self) -> bool:
        return self.source == SOURCE_DEFAULT


def find_config_dirs(
    explicit: Iterable[str] | None = None, environ: Mapping[str, str] | None = None
) -> ConfigDirs:
    """The config dirs by the order in the module docstring, de-duplicated, in order."""
    env = os.environ if environ is None else environ
    given = [d for d in (explicit or []) if d]
    source, expand = SOURCE_OPTION, True
    if not given and env.get("CLAUDE_CONFIG_DIR"):
        given, source, expand = [env["CLAUDE_CONFIG_DIR"]], SOURCE_CLAUDE_ENV, False
    if not given:
        given = [p for p in env.get("SESSIONDEX_CONFIG_DIRS", "").split(os.pathsep) if p.strip()]
        source = SOURCE_SESSIONDEX_ENV
    if not given:
        given = [str(default_config_dir(env))]
        source = SOURCE_DEFAULT
    out: list[Path] = []
    seen: set[str] = set()
    for item in given:
        path = _normalize(item, expand_user=expand, nfc=source == SOURCE_CLAUDE_ENV)
        # One directory reached by two spellings (a symlink, `..`) is indexed once, under
        # the first: twice, every session would be listed twice and an ID be ambiguous.
        # Its projects/ decides: two config dirs whose projects/ is one dir (a link to
        # the same disk) hold the same transcripts.
        real = os.path.realpath(os.path.join(path, "projects"))
        if real not in seen:
            seen.add(real)
            out.append(path)
    return ConfigDirs(out, source)


def claude_spelling(config_dir: str | os.PathLike[str]) -> str | None:
    """The ``CLAUDE_CONFIG_DIR`` that points Claude Code at ``config_dir``, or None when
    none does. It puts the value in NFC, so a folder named otherwise (a decomposed
    ``é``, which Linux keeps apart from the composed one) is reached only through its
    real path when that is in NFC (a decomposed link to a plain folder)."""
    for text in (os.fspath(config_dir), os.path.realpath(config_dir)):
        if unicodedata.normalize("NFC", text) == text:
            return text
    return None


def unreachable_reason(config_dir: str | os.PathLike[str] | None) -> str | None:
    """Why a session of ``config_dir`` cannot be resumed, or None when Claude Code can be
    pointed at it (see :func:`claude_spelling`); None for no config dir too."""
    if not config_dir or claude_spelling(config_dir) is not None:
        return None
    return (
        f"Claude Code puts CLAUDE_CONFIG_DIR in NFC, so no value of it reaches"
        f" {os.fspath(config_dir)} (its path is not in NFC): rename the folder in NFC to"
        " resume its sessions"
    )


def default_config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``~/.claude`` for the user's ``HOME``: where Claude Code looks when
    ``CLAUDE_CONFIG_DIR`` is not set (a session elsewhere needs it set to be resumed)."""
    env = os.environ if environ is None else environ
    return _normalize(str(Path(env.get("HOME") or Path.home()) / ".claude"), nfc=True)


def plain_claude_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The config dir a resume line may leave unsaid: ``~/.claude``, unless the
    environment exports ``CLAUDE_CONFIG_DIR`` naming another dir. A resume line is pasted
    into the shell it was printed in; with the variable set there, a bare ``claude``
    opens that dir, and a session of ``~/.claude`` needs ``CLAUDE_CONFIG_DIR`` set back.
    None: every config dir needs it named."""
    env = os.environ if environ is None else environ
    default = default_config_dir(env)
    exported = env.get("CLAUDE_CONFIG_DIR")
    if exported and _normalize(exported, expand_user=False, nfc=True) != default:
        return None
    return default


def config_dirs(
    explicit: Iterable[str] | None = None, environ: Mapping[str, str] | None = None
) -> list[Path]:
    """The config dirs to index, de-duplicated, in the order given."""
    return find_config_dirs(explicit, environ).dirs


def projects_dir(config_dir: Path) -> Path:
    return config_dir / "projects"


def resolve_cwd(cwd: str | None) -> str:
    """The directory a question is asked from: ``cwd`` made absolute, else the process's."""
    return absolute(cwd) if cwd else process_cwd()
