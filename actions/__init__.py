"""Writes: the records Claude Code reads (rename, tag, fork, delete) and cleanup's
deletions, each followed at once by the index."""
