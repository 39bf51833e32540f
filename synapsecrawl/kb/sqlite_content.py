"""What the SQLite knowledge base keeps beside each page: passages and labels.

``passages`` holds each page cut into passages (``search.split_passages``), rewritten and deleted with the page.
``page_labels`` and ``link_labels`` hold OmniscienteBot's labels and TDM policy (OMN-LABELS, OMN-FETCH), no text.
Functions here take a connection; the caller holds its lock and its transaction. Search reads none of it: it goes
through the index beside the KB (synapsecrawl.search.index). More: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import sqlite3

from synapsecrawl.kb.search import same_passages, split_passages

__all__ = ["SCHEMA", "backfill_passages", "write_passages"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS passages (
    id INTEGER PRIMARY KEY,
    page_id INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    UNIQUE (page_id, ordinal)
);
CREATE TABLE IF NOT EXISTS page_labels (
    kb TEXT NOT NULL,
    url TEXT NOT NULL,
    kind TEXT NOT NULL,
    tdm_reservation INTEGER,
    tdm_policy TEXT NOT NULL DEFAULT '',
    tdm_source TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (kb, url)
);
CREATE TABLE IF NOT EXISTS link_labels (
    kb TEXT NOT NULL,
    url TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    target TEXT NOT NULL,
    context TEXT NOT NULL,
    PRIMARY KEY (kb, url, ordinal)
);
CREATE TRIGGER IF NOT EXISTS pages_content_ad AFTER DELETE ON pages BEGIN
    DELETE FROM passages WHERE page_id = old.id;
    DELETE FROM page_labels WHERE kb = old.kb AND url = old.url;
    DELETE FROM link_labels WHERE kb = old.kb AND url = old.url;
END;
"""


def write_passages(db: sqlite3.Connection, kb: str, url: str, text: str, title: str = "") -> None:
    """Replace the passages of page (kb, url) with those cut from ``text`` (``title``: the page's)."""
    row = db.execute("SELECT id FROM pages WHERE kb=? AND url=?", (kb, url)).fetchone()
    if row is None:
        return
    page_id = row[0]
    passages = split_passages(text, title)
    if same_passages(db.execute("SELECT ordinal, text FROM passages WHERE page_id=?", (page_id,)), passages):
        return  # a page read again unchanged: its passages stand
    db.execute("DELETE FROM passages WHERE page_id=?", (page_id,))
    db.executemany(
        "INSERT INTO passages (page_id, ordinal, text) VALUES (?, ?, ?)",
        [(page_id, ordinal, passage) for ordinal, passage in enumerate(passages)],
    )


def backfill_passages(db: sqlite3.Connection) -> None:
    """Cut the passages of every stored page (a KB written before passages existed)."""
    rows = db.execute("SELECT kb, url, snippet_text, text, title FROM pages").fetchall()
    for kb, url, snippet_text, text, title in rows:
        write_passages(db, kb, url, snippet_text or text, title)
