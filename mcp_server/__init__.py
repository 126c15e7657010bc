"""``sessiondex mcp``: the session history as a Model Context Protocol server.

Claude Code (or any MCP client) gets tools to search, list, resolve and read past
sessions, find the sessions behind a PR and, with ``--allow-writes``, rename and tag
them; and a ``session://{id}`` resource with a session's Markdown. Everything goes
through :class:`sessiondex.Index`, as fresh for each answer as each CLI command is (a
file-system watcher of its own tells when the transcripts must be checked; see
``service.py``).

``service.py`` holds the answers (protocol-free, bounded, every failure one sentence);
``server.py`` maps them onto the official ``mcp`` SDK (an optional dependency:
``pip install 'sessiondex[mcp]'``). The folder is not named ``mcp/`` so that it never
shadows the SDK's own ``mcp`` package.
"""
