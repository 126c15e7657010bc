"""Which config dirs hold transcripts.

Order: ``--config-dir`` (repeatable), else ``$CLAUDE_CONFIG_DIR`` (non-empty; a comma
list is accepted, as ccusage does, so several machines' copies can share one index), else
``~/.claude``. Paths are kept as given (absolute, NFC), not realpath'd: the SDK does the
same, and a root's identity in the index must not change when a symlink moves.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path


def _normalize(path: str) -> Path:
    return Path(unicodedata.normalize("NFC", os.path.abspath(os.path.expanduser(path))))


def config_dirs(
    explicit: Iterable[str] | None = None, environ: Mapping[str, str] | None = None
) -> list[Path]:
    """The config dirs to index, de-duplicated, in the order given."""
    env = os.environ if environ is None else environ
    given = [d for d in (explicit or []) if d]
    if not given:
        raw = env.get("CLAUDE_CONFIG_DIR", "")
        given = [part.strip() for part in raw.split(",") if part.strip()]
    if not given:
        given = [str(Path(env.get("HOME") or Path.home()) / ".claude")]
    out: list[Path] = []
    for item in given:
        path = _normalize(item)
        if path not in out:
            out.append(path)
    return out


def projects_dir(config_dir: Path) -> Path:
    return config_dir / "projects"


def resolve_cwd(cwd: str | None) -> str:
    """The directory a question is asked from: ``cwd`` made absolute, else the process's."""
    return os.path.abspath(cwd) if cwd else os.getcwd()
