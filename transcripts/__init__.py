"""The source of truth: Claude Code's transcript files.

Everything here reads ``<config>/projects/**`` without changing a byte or an mtime,
except the explicit appends, forks and deletes in :mod:`transcripts.write`.
"""
