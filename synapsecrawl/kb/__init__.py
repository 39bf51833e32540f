"""The knowledge base: ``open_store(KB_URI)`` opens one, SQLite by default, PostgreSQL at scale.

``store`` holds the ``Store`` Protocol, ``records`` what is stored; ``sqlite`` and ``postgres``
import only those, never this module, so the package has no import cycle (``open_store``
imports the back-ends lazily, when a URI names one).
"""

from __future__ import annotations

from pathlib import Path

from synapsecrawl.errors import ConfigError
from synapsecrawl.kb.store import Store

__all__ = ["DEFAULT_KB_URI", "open_store"]

DEFAULT_KB_URI = "sqlite:///.synapsecrawl/kb.sqlite3"


def open_store(uri: str) -> Store:
    """Open the knowledge base at ``uri`` (``sqlite:///PATH`` or ``postgresql://...``).

    ``sqlite:///kb.db`` is relative to the working directory and
    ``sqlite:////var/kb.db`` absolute, as in SQLAlchemy.
    """
    if uri.startswith("sqlite:///"):
        from synapsecrawl.kb.sqlite import SQLiteStore

        return SQLiteStore(Path(uri.removeprefix("sqlite:///")))
    if uri.startswith(("postgresql://", "postgres://")):
        from synapsecrawl.kb.postgres import PostgresStore

        return PostgresStore(uri)
    raise ConfigError(f"KB_URI {uri!r} must start with sqlite:/// or postgresql://")
