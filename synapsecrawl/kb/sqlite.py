"""The SQLite knowledge base (the default): WAL, FTS5 with BM25 ranking.

One connection per store, guarded by a lock, so the crawler's pipeline can
call it from a worker thread (``asyncio.to_thread``) while the CLI reads the
same file from another process.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from synapsecrawl.errors import StoreError
from synapsecrawl.kb.search import make_snippet, query_terms
from synapsecrawl.kb.store import PageRecord, RobotsCopy, SearchHit, SiteState, UrlHold

__all__ = ["SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    id INTEGER PRIMARY KEY,
    kb TEXT NOT NULL,
    url TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL DEFAULT '',
    snippet_text TEXT NOT NULL DEFAULT '',
    content_type TEXT NOT NULL DEFAULT '',
    status INTEGER NOT NULL DEFAULT 200,
    fetched_at TEXT NOT NULL,
    verified_at TEXT,
    etag TEXT NOT NULL DEFAULT '',
    last_modified TEXT NOT NULL DEFAULT '',
    nosnippet INTEGER NOT NULL DEFAULT 0,
    max_snippet INTEGER,
    site TEXT NOT NULL DEFAULT '',
    language TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    UNIQUE (kb, url)
);
CREATE VIRTUAL TABLE IF NOT EXISTS pages_fts USING fts5(
    title, text, content='pages', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS pages_ai AFTER INSERT ON pages BEGIN
    INSERT INTO pages_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
END;
CREATE TRIGGER IF NOT EXISTS pages_ad AFTER DELETE ON pages BEGIN
    INSERT INTO pages_fts(pages_fts, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
END;
CREATE TRIGGER IF NOT EXISTS pages_au AFTER UPDATE ON pages BEGIN
    INSERT INTO pages_fts(pages_fts, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
    INSERT INTO pages_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
END;
CREATE TABLE IF NOT EXISTS robots_cache (
    profile TEXT NOT NULL,
    origin TEXT NOT NULL,
    status INTEGER NOT NULL,
    body BLOB NOT NULL,
    fetched_at REAL NOT NULL,
    PRIMARY KEY (profile, origin)
);
"""

# Backoff state (synapsecrawl.backoff): site pauses and streaks, URL holds. Unix seconds.
_BACKOFF_SCHEMA = """
CREATE TABLE IF NOT EXISTS backoff_sites (
    profile TEXT NOT NULL,
    site TEXT NOT NULL,
    paused_until REAL NOT NULL DEFAULT 0,
    pause_reason TEXT NOT NULL DEFAULT '',
    slow_streak INTEGER NOT NULL DEFAULT 0,
    forbidden_streak INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (profile, site)
);
CREATE TABLE IF NOT EXISTS backoff_urls (
    profile TEXT NOT NULL,
    url TEXT NOT NULL,
    kind TEXT NOT NULL,
    until REAL NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    site TEXT NOT NULL DEFAULT '',
    kb TEXT NOT NULL DEFAULT '',
    failures INTEGER NOT NULL DEFAULT 0,
    recorded_at REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (profile, url)
);
"""

_PAGE_COLUMNS = (
    "kb, url, title, text, snippet_text, content_type, status, fetched_at, verified_at, etag,"
    " last_modified, nosnippet, max_snippet, site, language, description"
)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _record(row: sqlite3.Row) -> PageRecord:
    verified = row["verified_at"]
    return PageRecord(
        kb=row["kb"],
        url=row["url"],
        title=row["title"],
        text=row["text"],
        snippet_text=row["snippet_text"],
        content_type=row["content_type"],
        status=row["status"],
        fetched_at=datetime.fromisoformat(row["fetched_at"]),
        verified_at=datetime.fromisoformat(verified) if verified else None,
        etag=row["etag"],
        last_modified=row["last_modified"],
        nosnippet=bool(row["nosnippet"]),
        max_snippet=row["max_snippet"],
        site=row["site"],
        language=row["language"],
        description=row["description"],
    )


def _fts_query(query: str) -> str:
    # Each word quoted, so user text never reaches FTS5's query syntax.
    return " OR ".join(f'"{term}"' for term in query_terms(query))


class SQLiteStore:
    """A knowledge base in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            self._db.executescript(_BACKOFF_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open knowledge base {path}: {exc}") from None
        self._lock = threading.Lock()

    def _run(self, sql: str, params: tuple[Any, ...] = ()) -> sqlite3.Cursor:
        try:
            with self._lock:
                return self._db.execute(sql, params)
        except sqlite3.Error as exc:
            raise StoreError(f"knowledge base {self.path}: {exc}") from None

    def put_page(self, page: PageRecord) -> None:
        """Insert or replace the page (kb, url) in one transaction."""
        values = (
            page.kb, page.url, page.title, page.text, page.snippet_text, page.content_type,
            page.status, _iso(page.fetched_at), _iso(page.verified_at), page.etag,
            page.last_modified, int(page.nosnippet), page.max_snippet, page.site,
            page.language, page.description,
        )  # fmt: skip
        placeholders = ", ".join("?" * len(values))
        updates = ", ".join(f"{c.strip()}=excluded.{c.strip()}" for c in _PAGE_COLUMNS.split(",")[2:])
        self._run(
            f"INSERT INTO pages ({_PAGE_COLUMNS}) VALUES ({placeholders}) "  # noqa: S608 (fixed names)
            f"ON CONFLICT (kb, url) DO UPDATE SET {updates}",
            values,
        )

    def get_page(self, kb: str, url: str) -> PageRecord | None:
        """The stored page, or None."""
        row = self._run("SELECT * FROM pages WHERE kb=? AND url=?", (kb, url)).fetchone()
        return _record(row) if row else None

    def delete_page(self, kb: str, url: str) -> bool:
        """Remove a page; True when there was one."""
        return self._run("DELETE FROM pages WHERE kb=? AND url=?", (kb, url)).rowcount > 0

    def pages(self, kb: str | None = None) -> Iterator[PageRecord]:
        """Stored pages in URL order, of one KB or all."""
        if kb is None:
            rows = self._run("SELECT * FROM pages ORDER BY kb, url").fetchall()
        else:
            rows = self._run("SELECT * FROM pages WHERE kb=? ORDER BY url", (kb,)).fetchall()
        return (_record(row) for row in rows)

    def search(self, query: str, kb: str | None = None, limit: int = 10) -> list[SearchHit]:
        """BM25-ranked pages for ``query``, best first, each with a snippet."""
        match = _fts_query(query)
        if not match:
            return []
        sql = (
            "SELECT pages.*, bm25(pages_fts, 5.0, 1.0) AS rank FROM pages_fts "
            "JOIN pages ON pages.id = pages_fts.rowid WHERE pages_fts MATCH ?"
        )
        params: tuple[Any, ...] = (match,)
        if kb is not None:
            sql += " AND pages.kb = ?"
            params += (kb,)
        rows = self._run(sql + " ORDER BY rank LIMIT ?", (*params, limit)).fetchall()
        return [
            SearchHit(
                url=row["url"],
                kb=row["kb"],
                title=row["title"],
                snippet=make_snippet(
                    row["snippet_text"] or row["text"],
                    query,
                    nosnippet=bool(row["nosnippet"]),
                    max_snippet=row["max_snippet"],
                ),
                score=float(f"{-float(row['rank']):.6g}"),
            )
            for row in rows
        ]

    def get_robots(self, profile: str, origin: str) -> RobotsCopy | None:
        """The stored robots.txt outcome for ``origin`` under ``profile``."""
        row = self._run(
            "SELECT origin, status, body, fetched_at FROM robots_cache WHERE profile=? AND origin=?",
            (profile, origin),
        ).fetchone()
        return RobotsCopy(row[0], row[1], bytes(row[2]), row[3]) if row else None

    def put_robots(self, profile: str, copy: RobotsCopy) -> None:
        """Keep a robots.txt outcome for reuse within the profile's cache age."""
        self._run(
            "INSERT OR REPLACE INTO robots_cache (profile, origin, status, body, fetched_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (profile, copy.origin, copy.status, copy.body, copy.fetched_at),
        )

    def get_site_state(self, profile: str, site: str) -> SiteState | None:
        """What ``profile`` remembers of ``site``, or None."""
        row = self._run(
            "SELECT site, paused_until, pause_reason, slow_streak, forbidden_streak FROM backoff_sites "
            "WHERE profile=? AND site=?",
            (profile, site),
        ).fetchone()
        return SiteState(row[0], row[1], row[2], row[3], row[4]) if row else None

    def put_site_state(self, profile: str, state: SiteState) -> None:
        """Keep a site's pause and streaks."""
        self._run(
            "INSERT OR REPLACE INTO backoff_sites (profile, site, paused_until, pause_reason, slow_streak, "
            "forbidden_streak) VALUES (?, ?, ?, ?, ?, ?)",
            (profile, state.site, state.paused_until, state.pause_reason, state.slow_streak,
             state.forbidden_streak),
        )

    def get_url_hold(self, profile: str, url: str) -> UrlHold | None:
        """The hold on ``url`` under ``profile``, or None."""
        row = self._run(
            "SELECT url, kind, until, reason, site, kb, failures, recorded_at FROM backoff_urls "
            "WHERE profile=? AND url=?",
            (profile, url),
        ).fetchone()
        return UrlHold(*row) if row else None

    def put_url_hold(self, profile: str, hold: UrlHold) -> None:
        """Hold a URL (replacing an earlier hold on it)."""
        self._run(
            "INSERT OR REPLACE INTO backoff_urls (profile, url, kind, until, reason, site, kb, failures, "
            "recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (profile, hold.url, hold.kind, hold.until, hold.reason, hold.site, hold.kb, hold.failures,
             hold.recorded_at),
        )

    def delete_url_hold(self, profile: str, url: str) -> bool:
        """Release a URL; True when it was held."""
        return self._run("DELETE FROM backoff_urls WHERE profile=? AND url=?", (profile, url)).rowcount > 0

    def url_holds(self, profile: str, kind: str | None = None) -> list[UrlHold]:
        """The held URLs of ``profile`` (of one kind, or all), earliest ``until`` first."""
        sql = "SELECT url, kind, until, reason, site, kb, failures, recorded_at FROM backoff_urls WHERE profile=?"
        params: tuple[Any, ...] = (profile,)
        if kind is not None:
            sql += " AND kind=?"
            params += (kind,)
        return [UrlHold(*row) for row in self._run(sql + " ORDER BY until, url", params).fetchall()]

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()
