"""Knowing a knowledge base of ours from any other database, before anything is written to it.

A KB carries a marker: in SQLite, ``PRAGMA application_id`` set to
``APPLICATION_ID`` (the SQLite file-format field meant for this, header offset
68); in both back-ends, the table ``synapsecrawl_meta`` with our application id
and the schema version. Opening a database, a back-end reads what is there
(``Found``) and ``judge`` decides, before the first write:

- ``"ours"``: marked by us; opened as it is.
- ``"new"``: nothing in it (a new or empty file, an empty schema); made a KB and marked.
- ``"adopt"``: no marker, but only our tables, and at least the ones every
  version made: a KB written before markers existed, marked now so nothing is lost.
- anything else (another application's tables, its application id, a schema
  newer than this code reads) raises StoreError in one line; nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from synapsecrawl.errors import StoreError

__all__ = ["APPLICATION_ID", "META_TABLE", "SCHEMA_VERSION", "Found", "judge", "meta_rows"]

APPLICATION_ID = 0x53434B42  # "SCKB": synapsecrawl knowledge base; a signed 32-bit value, as SQLite keeps it
SCHEMA_VERSION = 3  # 3: no passages table; 2: no full-text tables (the search index answers); 1 had both
META_TABLE = "synapsecrawl_meta"
_PAGE_COLUMNS = frozenset({"kb", "url", "title", "text", "fetched_at"})  # in every version's pages


@dataclass(frozen=True)
class Found:
    """What a database holds, as read before anything is written."""

    tables: frozenset[str]  # tables and views of the KB's schema, without the engine's own
    page_columns: frozenset[str] = frozenset()
    application_id: int = 0  # SQLite's header field, or the meta table's row; 0: none
    schema_version: int | None = None  # the meta table's row, None: no meta table


def meta_rows() -> list[tuple[str, str]]:
    """The rows of ``synapsecrawl_meta`` (key, value) that mark a KB of this version."""
    return [("application_id", str(APPLICATION_ID)), ("schema_version", str(SCHEMA_VERSION))]


def judge(found: Found, *, where: str, ours: Iterable[str], required: Iterable[str]) -> Literal["ours", "new", "adopt"]:
    """Whether ``found`` is our KB, a new one, or one of ours from before markers; raises StoreError otherwise.

    ``ours`` are the back-end's table names (the meta table is added), ``required`` those every
    version created; ``where`` names the database in the message, without a password.
    """
    refused = f"KB_URI {where}"
    if found.application_id not in (0, APPLICATION_ID):
        raise StoreError(
            f"{refused} belongs to another application (application id {found.application_id:#x}): "
            "refused, nothing written; give a new file or an empty database"
        )
    if found.application_id == APPLICATION_ID:
        if (found.schema_version or 0) > SCHEMA_VERSION:
            raise StoreError(
                f"{refused} is a knowledge base of a newer synapsecrawl (schema {found.schema_version}, "
                f"this one reads up to {SCHEMA_VERSION}): refused, nothing written"
            )
        return "ours"
    if not found.tables:
        return "new"
    foreign = sorted(found.tables - {*ours, META_TABLE})
    missing = set(required) - found.tables
    if foreign or missing or not found.page_columns >= _PAGE_COLUMNS:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        held = (
            f"it holds tables that are not ours: {shown}"
            if foreign
            else "its pages table is not ours"
            if not found.page_columns >= _PAGE_COLUMNS
            else f"it lacks {', '.join(sorted(missing))}"
        )
        raise StoreError(
            f"{refused} is not a synapsecrawl knowledge base ({held}): refused, nothing written; "
            "give a new file or an empty database"
        )
    return "adopt"
