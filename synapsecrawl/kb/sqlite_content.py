"""What the SQLite knowledge base keeps beside each page to serve it: passages and labels.

``passages`` holds each page cut into passages (``search.split_passages``), indexed with FTS5, rewritten and deleted
with the page; ``search`` gives ``search.rank_results`` FTS5's BM25 of each candidate's title, text, passages and
side-by-side query words. ``page_labels`` and ``link_labels`` hold OmniscienteBot's labels and TDM policy
(OMN-LABELS, OMN-FETCH), no text. Functions here take a connection; the caller holds its lock and its transaction.
More: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import sqlite3
from typing import Any

from synapsecrawl.kb.records import SearchHit
from synapsecrawl.kb.rows import HIT_COLUMNS, PAGE_CANDIDATES, PASSAGE_CANDIDATES, search_hit
from synapsecrawl.kb.search import (
    HIT_CLOSE,
    HIT_OPEN,
    PageRank,
    phrase_pairs,
    rank_results,
    same_passages,
    search_terms,
    shortlist,
    split_passages,
)

__all__ = ["SCHEMA", "backfill_passages", "search", "write_passages"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS passages (
    id INTEGER PRIMARY KEY,
    page_id INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    UNIQUE (page_id, ordinal)
);
CREATE VIRTUAL TABLE IF NOT EXISTS passages_fts USING fts5(
    text, content='passages', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
DROP TRIGGER IF EXISTS passages_ai;
CREATE TRIGGER IF NOT EXISTS passages_ad AFTER DELETE ON passages BEGIN
    INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
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

PAGE_WEIGHTS = (5.0, 1.0)  # bm25 weights of pages_fts (title, text)


def _fts_query(query: str) -> str:
    # Each word quoted, so user text never reaches FTS5's query syntax.
    return " OR ".join(f'"{term}"' for term in search_terms(query))


def write_passages(db: sqlite3.Connection, kb: str, url: str, text: str, title: str = "") -> None:
    """Replace the passages of page (kb, url) with those cut from ``text`` (``title``: the page's)."""
    row = db.execute("SELECT id FROM pages WHERE kb=? AND url=?", (kb, url)).fetchone()
    if row is None:
        return
    page_id = row[0]
    passages = split_passages(text, title)
    if same_passages(db.execute("SELECT ordinal, text FROM passages WHERE page_id=?", (page_id,)), passages):
        return  # a page read again unchanged: its passages and their index stand
    db.execute("DELETE FROM passages WHERE page_id=?", (page_id,))
    db.executemany(
        "INSERT INTO passages (page_id, ordinal, text) VALUES (?, ?, ?)",
        [(page_id, ordinal, passage) for ordinal, passage in enumerate(passages)],
    )
    # Indexed in one statement, not by a trigger per passage row (the CPU it saves:
    # docs/benchmarks.md). Every writer of passages goes through here; a delete is still a trigger. Older
    # code opening the file meanwhile recreates the row trigger: then it indexes, as indexing twice corrupts FTS5.
    if db.execute("SELECT 1 FROM sqlite_master WHERE type='trigger' AND name='passages_ai'").fetchone() is None:
        db.execute("INSERT INTO passages_fts(rowid, text) SELECT id, text FROM passages WHERE page_id=?", (page_id,))


def backfill_passages(db: sqlite3.Connection) -> None:
    """Cut the passages of every stored page (a KB written before passages existed)."""
    rows = db.execute("SELECT kb, url, snippet_text, text, title FROM pages").fetchall()
    for kb, url, snippet_text, text, title in rows:
        write_passages(db, kb, url, snippet_text or text, title)


def _phrase_query(terms: list[str]) -> str:
    return " OR ".join(f'"{a} {b}"' for a, b in phrase_pairs(terms))


def search(db: sqlite3.Connection, query: str, kb: str | None, limit: int) -> list[SearchHit]:
    """Pages for ``query``, best first, each with its best passages (ranked by ``search.rank_results``)."""
    terms = search_terms(query)
    match = _fts_query(query)
    if not match or limit <= 0:
        return []
    where = " AND pages.kb = ?" if kb is not None else ""
    scope: tuple[Any, ...] = (kb,) if kb is not None else ()
    pages = [  # bm25 is smaller-is-better: negated
        PageRank(page_id, url, -title, -text)
        for page_id, url, title, text in db.execute(
            "SELECT pages.id, pages.url, bm25(pages_fts, 1, 0), bm25(pages_fts, 0, 1) FROM pages_fts "  # noqa: S608
            f"JOIN pages ON pages.id = pages_fts.rowid WHERE pages_fts MATCH ?{where} "
            f"ORDER BY bm25(pages_fts, {PAGE_WEIGHTS[0]}, {PAGE_WEIGHTS[1]}) LIMIT ?",
            (match, *scope, PAGE_CANDIDATES),
        )
    ]
    pages = shortlist(pages, limit)
    among = f" AND passages.page_id IN ({', '.join(str(page.page_id) for page in pages)})" if pages else ""
    ranked = rank_results(
        pages,
        _passages(db, match, where + among, scope),
        _passages(db, _phrase_query(terms), where + among, scope),
        terms,
        limit,
    )
    return [
        search_hit(
            db.execute(f"SELECT {HIT_COLUMNS} FROM pages WHERE id=?", (page_id,)).fetchone(),  # noqa: S608
            score,
            best,
            lambda rowids: _highlight(db, match, rowids),
        )
        for page_id, score, best in ranked
    ]


def _passages(
    db: sqlite3.Connection, match: str, where: str, scope: tuple[Any, ...]
) -> list[tuple[int, int, int, float]]:
    """(page id, ordinal, passage id, rank) of the passages matching ``match``, best first."""
    if not match:
        return []
    return [
        (page_id, ordinal, rowid, -rank)
        for page_id, ordinal, rowid, rank in db.execute(
            "SELECT passages.page_id, passages.ordinal, passages.id, bm25(passages_fts) AS rank FROM passages_fts "  # noqa: S608
            "JOIN passages ON passages.id = passages_fts.rowid JOIN pages ON pages.id = passages.page_id "
            f"WHERE passages_fts MATCH ?{where} ORDER BY rank LIMIT ?",
            (match, *scope, PASSAGE_CANDIDATES),
        )
    ]


def _highlight(db: sqlite3.Connection, match: str, rowids: list[int]) -> dict[int, str]:
    marks = ", ".join("?" * len(rowids))
    return dict(
        db.execute(
            f"SELECT rowid, highlight(passages_fts, 0, ?, ?) FROM passages_fts "  # noqa: S608
            f"WHERE passages_fts MATCH ? AND rowid IN ({marks})",
            (HIT_OPEN, HIT_CLOSE, match, *rowids),
        ).fetchall()
    )
