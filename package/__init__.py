"""sessiondex: a live SQLite FTS5 index of Claude Code's session transcripts.

``sessiondex.Index`` is the entry point (open, refresh, list, search, resolve, show,
rename, tag, fork, delete). The SDK-style functions (``list_sessions``,
``get_session_info``, ``get_session_messages``, ``rename_session``, ``fork_session`` …)
and their types have ``claude_agent_sdk``'s names, signatures and exceptions, so
``from claude_agent_sdk import X`` becomes ``from sessiondex import X``.

The repository's top-level folders are this package's subpackages
(``sessiondex.transcripts`` ← ``transcripts/`` …); this folder holds only the package's
own modules, and is not named ``sessiondex`` so a checkout never shadows the installed
package. Names are imported on first use: ``sessiondex search`` must not pay for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from sessiondex.index import Index, prepare_connection
    from sessiondex.indexer.db import IndexFromNewer, NotAnIndex
    from sessiondex.query.resolve import Ambiguous, NotFound, Resolution
    from sessiondex.sdk import (
        ForkSessionResult,
        SDKSessionInfo,
        SessionMessage,
        delete_session,
        fork_session,
        get_session_info,
        get_session_messages,
        get_subagent_messages,
        list_sessions,
        list_subagents,
        rename_session,
        tag_session,
    )

# public name → the module that defines it
_EXPORTS = {
    "Index": "sessiondex.index",
    "prepare_connection": "sessiondex.index",
    # ``Index(db=…)`` given a path that is no index (a directory, a transcript, another
    # program's database): a ValueError a caller may want to tell apart.
    "NotAnIndex": "sessiondex.indexer.db",
    # An index a newer sessiondex derived or migrated (one line, a RuntimeError): the
    # readers given it as ``db=`` raise it, ``Index`` on it too; the SDK functions on
    # the default index answer from the transcripts instead.
    "IndexFromNewer": "sessiondex.indexer.db",
    "NotFound": "sessiondex.query.resolve",
    "Ambiguous": "sessiondex.query.resolve",
    "Resolution": "sessiondex.query.resolve",
    "SDKSessionInfo": "sessiondex.sdk",
    "SessionMessage": "sessiondex.sdk",
    "list_sessions": "sessiondex.sdk",
    "get_session_info": "sessiondex.sdk",
    "get_session_messages": "sessiondex.sdk",
    "list_subagents": "sessiondex.sdk",
    "get_subagent_messages": "sessiondex.sdk",
    "ForkSessionResult": "sessiondex.sdk",
    "rename_session": "sessiondex.sdk",
    "tag_session": "sessiondex.sdk",
    "delete_session": "sessiondex.sdk",
    "fork_session": "sessiondex.sdk",
}

__all__ = [
    "Ambiguous",
    "ForkSessionResult",
    "Index",
    "IndexFromNewer",
    "NotAnIndex",
    "NotFound",
    "Resolution",
    "SDKSessionInfo",
    "SessionMessage",
    "delete_session",
    "fork_session",
    "get_session_info",
    "get_session_messages",
    "get_subagent_messages",
    "list_sessions",
    "list_subagents",
    "prepare_connection",
    "rename_session",
    "tag_session",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sessiondex' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
