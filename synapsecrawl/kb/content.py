"""What the SQLite knowledge base keeps beside each page to serve it: passages and labels.

``passages`` holds each page cut into passages (``search.split_passages``),
indexed with FTS5 like the pages themselves; they are rewritten with the page
and deleted with it (a trigger on ``pages``). ``search`` ranks pages by BM25
over the whole page (title weighted 5, text 1) plus BM25 of the page's best
passage, so a page about the question whose one paragraph answers it comes
first, and the result shows that paragraph.

``page_labels`` and ``link_labels`` hold OmniscienteBot's labels and TDM
policy (OMN-LABELS, OMN-FETCH): a page's kind, each link's context, no text.

Functions here take a connection; the caller holds its lock and its transaction.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from typing import Any

from synapsecrawl.kb.search import HIT_CLOSE, HIT_OPEN, compose_snippet, search_terms, split_passages
from synapsecrawl.kb.store import LabelRecord, SearchHit

__all__ = ["SCHEMA", "backfill_passages", "get_labels", "put_labels", "search", "write_passages"]

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
CREATE TRIGGER IF NOT EXISTS passages_ai AFTER INSERT ON passages BEGIN
    INSERT INTO passages_fts(rowid, text) VALUES (new.id, new.text);
END;
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
_PAGE_CANDIDATES = 1000
_PASSAGE_CANDIDATES = 3000
_PASSAGES_PER_HIT = 2


def _fts_query(query: str) -> str:
    # Each word quoted, so user text never reaches FTS5's query syntax.
    return " OR ".join(f'"{term}"' for term in search_terms(query))


def write_passages(db: sqlite3.Connection, kb: str, url: str, text: str, title: str = "") -> None:
    """Replace the passages of page (kb, url) with those cut from ``text`` (``title``: the page's)."""
    row = db.execute("SELECT id FROM pages WHERE kb=? AND url=?", (kb, url)).fetchone()
    if row is None:
        return
    page_id = row[0]
    db.execute("DELETE FROM passages WHERE page_id=?", (page_id,))
    db.executemany(
        "INSERT INTO passages (page_id, ordinal, text) VALUES (?, ?, ?)",
        [(page_id, ordinal, passage) for ordinal, passage in enumerate(split_passages(text, title))],
    )


def backfill_passages(db: sqlite3.Connection) -> None:
    """Cut the passages of every stored page (a KB written before passages existed)."""
    rows = db.execute("SELECT kb, url, snippet_text, text, title FROM pages").fetchall()
    for kb, url, snippet_text, text, title in rows:
        write_passages(db, kb, url, snippet_text or text, title)


def search(db: sqlite3.Connection, query: str, kb: str | None, limit: int) -> list[SearchHit]:
    """Pages for ``query``, best first, each with its best passages."""
    match = _fts_query(query)
    if not match or limit <= 0:
        return []
    where = " AND pages.kb = ?" if kb is not None else ""
    scope: tuple[Any, ...] = (kb,) if kb is not None else ()
    score: dict[int, float] = defaultdict(float)
    for page_id, rank in db.execute(
        f"SELECT pages.id, bm25(pages_fts, {PAGE_WEIGHTS[0]}, {PAGE_WEIGHTS[1]}) AS rank FROM pages_fts "  # noqa: S608
        f"JOIN pages ON pages.id = pages_fts.rowid WHERE pages_fts MATCH ?{where} ORDER BY rank LIMIT ?",
        (match, *scope, _PAGE_CANDIDATES),
    ):
        score[page_id] -= rank
    best: dict[int, list[tuple[float, int, int]]] = defaultdict(list)  # page -> (rank, ordinal, rowid)
    for page_id, ordinal, rowid, rank in db.execute(
        "SELECT passages.page_id, passages.ordinal, passages.id, bm25(passages_fts) AS rank FROM passages_fts "  # noqa: S608
        "JOIN passages ON passages.id = passages_fts.rowid JOIN pages ON pages.id = passages.page_id "
        f"WHERE passages_fts MATCH ?{where} ORDER BY rank LIMIT ?",
        (match, *scope, _PASSAGE_CANDIDATES),
    ):
        if len(best[page_id]) < _PASSAGES_PER_HIT:
            if not best[page_id]:
                score[page_id] -= rank
            best[page_id].append((rank, ordinal, rowid))
    chosen = sorted(score, key=lambda page_id: (-score[page_id], page_id))[:limit]
    return [_hit(db, page_id, score[page_id], best.get(page_id, []), match) for page_id in chosen]


def _hit(
    db: sqlite3.Connection, page_id: int, score: float, passages: list[tuple[float, int, int]], match: str
) -> SearchHit:
    page = db.execute(
        "SELECT url, kb, title, nosnippet, max_snippet FROM pages WHERE id=?", (page_id,)
    ).fetchone()
    url, kb, title, nosnippet, max_snippet = page
    marked: dict[int, str] = {}
    if passages and not nosnippet:
        rowids = [rowid for _, _, rowid in passages]
        marks = ", ".join("?" * len(rowids))
        marked = dict(
            db.execute(
                f"SELECT rowid, highlight(passages_fts, 0, ?, ?) FROM passages_fts "  # noqa: S608
                f"WHERE passages_fts MATCH ? AND rowid IN ({marks})",
                (HIT_OPEN, HIT_CLOSE, match, *rowids),
            ).fetchall()
        )
    snippet, shown = compose_snippet(
        url,
        [(ordinal, marked[rowid]) for _, ordinal, rowid in passages if rowid in marked],
        nosnippet=bool(nosnippet),
        max_snippet=max_snippet,
    )
    return SearchHit(
        url=url,
        kb=kb,
        title=title,
        snippet=snippet,
        score=float(f"{score:.6g}"),
        passage=shown[0].passage if shown else None,
        anchor=shown[0].anchor if shown else url,
        passages=shown,
    )


def put_labels(db: sqlite3.Connection, record: LabelRecord) -> None:
    """Replace the labels of page (kb, url)."""
    db.execute(
        "INSERT OR REPLACE INTO page_labels (kb, url, kind, tdm_reservation, tdm_policy, tdm_source) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (record.kb, record.url, record.kind, record.tdm_reservation, record.tdm_policy, record.tdm_source),
    )
    db.execute("DELETE FROM link_labels WHERE kb=? AND url=?", (record.kb, record.url))
    db.executemany(
        "INSERT INTO link_labels (kb, url, ordinal, target, context) VALUES (?, ?, ?, ?, ?)",
        [(record.kb, record.url, n, target, context) for n, (target, context) in enumerate(record.links)],
    )


def get_labels(db: sqlite3.Connection, kb: str, url: str) -> LabelRecord | None:
    """The labels of page (kb, url), or None."""
    row = db.execute(
        "SELECT kind, tdm_reservation, tdm_policy, tdm_source FROM page_labels WHERE kb=? AND url=?", (kb, url)
    ).fetchone()
    if row is None:
        return None
    links = db.execute(
        "SELECT target, context FROM link_labels WHERE kb=? AND url=? ORDER BY ordinal", (kb, url)
    ).fetchall()
    return LabelRecord(kb, url, row[0], tuple((t, c) for t, c in links), row[1], row[2], row[3])
