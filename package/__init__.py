"""sessiondex: a live SQLite FTS5 index of Claude Code's session transcripts.

The repository's top-level folders are this package's subpackages
(``sessiondex.transcripts`` ← ``transcripts/`` …); this folder holds only the package's
own modules, and is not named ``sessiondex`` so a checkout never shadows the installed
package.
"""

from __future__ import annotations
