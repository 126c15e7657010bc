"""A conversation as people read it: its live branch, as text, Markdown, HTML or JSON."""
