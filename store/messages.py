"""How a team store that cannot be read is named to the user, in one wording.

Both the query layer (``query/teamdb.py``, reading through ``--db DSN``) and the store's
own commands (``store/schema.py``: ``store deleted``, ``store delete``) say it; they may
not import each other, and each said it in words of its own."""

from __future__ import annotations


def no_team_store() -> str:
    """The database holds no sessiondex team store."""
    return (
        "no sessiondex team store in this database: `sessiondex store init DSN`"
        " (or `sessiondex push --to DSN`) creates it"
    )


def schema_too_old(version: int | None, needed: int, reader: str = "sessiondex") -> str:
    """The store's schema is below what ``reader`` (this sessiondex, a command) reads."""
    return (
        f"the team store's schema is at version {version}, older than this {reader}"
        f" reads ({needed}): `sessiondex store init DSN` (or a push) upgrades it"
    )


def schema_too_new(version: int, known: int) -> str:
    """A newer sessiondex migrated the store: its tables may differ from what is read."""
    return (
        f"the team store's schema is at version {version}, newer than this sessiondex"
        f" knows ({known}): upgrade sessiondex"
    )
