"""How long a search may be when it comes from a server's client: one limit, defined
here, for the MCP server's ``search_sessions`` and the web view's ``q``.

A search costs about one lookup per distinct word: 15,000 words (120 KB in one URL)
held the web view's one index thread for 2.6 s on a 5-session index, and every other
page waited behind it. A person types a few words, a model a sentence or a URL; 1,000
characters is far above both and keeps the worst case well under a second. The
command line and the library take any length: what they run is their own user's to
wait for. This module imports nothing, so the MCP server's start-up does not load the
search code to read it.
"""

from __future__ import annotations

#: The longest search, in characters (code points, after surrounding spaces go), that
#: a server front end runs.
MAX_QUERY_CHARS = 1000


def too_long(query: str) -> str | None:
    """What to tell a client whose search is over :data:`MAX_QUERY_CHARS` (None when it
    is not): its length and the limit, so the asker knows what to shorten."""
    if len(query) <= MAX_QUERY_CHARS:
        return None
    return (
        f"The search is {len(query):,} characters long; a search takes at most"
        f" {MAX_QUERY_CHARS:,} characters."
    )


__all__ = ["MAX_QUERY_CHARS", "too_long"]
