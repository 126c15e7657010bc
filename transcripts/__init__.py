"""The source of truth: Claude Code's transcript files.

Everything here reads ``<config>/projects/**`` without changing a byte or an mtime,
except the explicit appends, forks and deletes in :mod:`transcripts.write`.
"""

# What a session archive is named: ``<session id>.tar.gz`` (transcripts/archive.py). Here,
# not in transcripts.discover (which re-exports it): every listing tells an archived
# session by its path (query.sessions.is_archived), and importing discover for it was
# ~1 ms of each list and search.
ARCHIVE_SUFFIX = ".tar.gz"
