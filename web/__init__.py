"""``sessiondex serve``: the history in a web page, as a Datasette plugin.

Datasette gives the plain table views, SQL and canned queries over the index; this
plugin adds the pages a person starts from — recent sessions with facets, search, and a
session's conversation — answered through :class:`sessiondex.Index` (the same list,
search and conversation as the CLI; no SQL here). Everything is read-only: Datasette
opens the index ``mode=ro`` (not ``immutable``, so it sees each refresh), and only the
Index writes, when it refreshes.

Needs the ``web`` extra (``pip install 'sessiondex[web]'``); nothing else in sessiondex
imports this package but the CLI's ``serve``, which takes :mod:`.hosts` (no Datasette)
for its loopback rule.
"""
