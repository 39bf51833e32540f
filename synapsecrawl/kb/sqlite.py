"""The SQLite knowledge base (the default): WAL, FTS5 with BM25 ranking.

One connection per store, guarded by a lock, so the crawler's pipeline can
call it from a worker thread (``asyncio.to_thread``) while the CLI reads the
same file from another process.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from synapsecrawl.errors import StoreError
from synapsecrawl.kb import content
from synapsecrawl.kb.store import (
    LabelRecord,
    PageRecord,
    RobotsCopy,
    SearchHit,
    SiteIcon,
    SiteState,
    Source,
    UrlHold,
)

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
    image TEXT NOT NULL DEFAULT '',
    published TEXT NOT NULL DEFAULT '',
    feed TEXT NOT NULL DEFAULT '',
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

# Columns added since the first schema: (name, declaration), added to an older file on open.
_ADDED_PAGE_COLUMNS = (
    ("image", "TEXT NOT NULL DEFAULT ''"),
    ("published", "TEXT NOT NULL DEFAULT ''"),
    ("feed", "TEXT NOT NULL DEFAULT ''"),
)
# Site icons found by the feed spider (synapsecrawl.feeds, SER-ICON). Unix seconds.
_ICONS_SCHEMA = """
CREATE TABLE IF NOT EXISTS site_icons (
    origin TEXT PRIMARY KEY,
    url TEXT NOT NULL DEFAULT '',
    content_type TEXT NOT NULL DEFAULT '',
    fetched_at REAL NOT NULL DEFAULT 0
);
"""

# Sources a KB user added, re-read on a schedule (synapsecrawl.reread). URLs one a line; unix seconds.
_SOURCES_SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
    id TEXT PRIMARY KEY,
    mode TEXT NOT NULL,
    urls TEXT NOT NULL,
    kb TEXT NOT NULL,
    profile TEXT NOT NULL,
    deployment TEXT NOT NULL,
    depth TEXT NOT NULL DEFAULT '',
    max_pages TEXT NOT NULL DEFAULT '',
    interval REAL NOT NULL,
    added_at REAL NOT NULL DEFAULT 0,
    last_crawl REAL NOT NULL DEFAULT 0,
    next_due REAL NOT NULL DEFAULT 0,
    outcome TEXT NOT NULL DEFAULT ''
);
"""
_SOURCE_COLUMNS = (
    "id, mode, urls, kb, profile, deployment, depth, max_pages, interval, added_at, last_crawl, next_due, outcome"
)

_PAGE_COLUMNS = (
    "kb, url, title, text, snippet_text, content_type, status, fetched_at, verified_at, etag,"
    " last_modified, nosnippet, max_snippet, site, language, description, image, published, feed"
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
        image=row["image"],
        published=row["published"],
        feed=row["feed"],
    )


def _source(row: sqlite3.Row) -> Source:
    return Source(row["id"], row["mode"], tuple(u for u in row["urls"].split("\n") if u), row["kb"],
                  row["profile"], row["deployment"], row["depth"], row["max_pages"], row["interval"],
                  row["added_at"], row["last_crawl"], row["next_due"], row["outcome"])


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
            present = {row[1] for row in self._db.execute("PRAGMA table_info(pages)")}
            for column, declaration in _ADDED_PAGE_COLUMNS:
                if column not in present:
                    self._db.execute(f"ALTER TABLE pages ADD COLUMN {column} {declaration}")
            self._db.executescript(_ICONS_SCHEMA)
            self._db.executescript(_BACKOFF_SCHEMA)
            self._db.executescript(_SOURCES_SCHEMA)
            cut = self._db.execute("SELECT 1 FROM sqlite_master WHERE name='passages'").fetchone()
            self._db.executescript(content.SCHEMA)  # passages and labels (kb.content)
            if not cut:
                self._db.execute("BEGIN IMMEDIATE")
                content.backfill_passages(self._db)
                self._db.execute("COMMIT")
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
            page.language, page.description, page.image, page.published, page.feed,
        )  # fmt: skip
        placeholders = ", ".join("?" * len(values))
        updates = ", ".join(f"{c.strip()}=excluded.{c.strip()}" for c in _PAGE_COLUMNS.split(",")[2:])
        upsert = (
            f"INSERT INTO pages ({_PAGE_COLUMNS}) VALUES ({placeholders}) "  # noqa: S608 (fixed names)
            f"ON CONFLICT (kb, url) DO UPDATE SET {updates}"
        )
        with self._transaction() as db:  # the page and its passages together (kb.content)
            db.execute(upsert, values)
            content.write_passages(db, page.kb, page.url, page.snippet_text or page.text, page.title)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection, locked, inside one write transaction; a failure rolls it back."""
        try:
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"knowledge base {self.path}: {exc}") from None

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
        """Pages for ``query``, best first, each with its best passages (kb.content)."""
        try:
            with self._lock:
                return content.search(self._db, query, kb, limit)
        except sqlite3.Error as exc:
            raise StoreError(f"knowledge base {self.path}: {exc}") from None

    def put_labels(self, labels: LabelRecord) -> None:
        """Replace a page's labels (OMN-LABELS) and TDM policy (OMN-FETCH)."""
        with self._transaction() as db:
            content.put_labels(db, labels)

    def get_labels(self, kb: str, url: str) -> LabelRecord | None:
        """A page's labels, or None."""
        try:
            with self._lock:
                return content.get_labels(self._db, kb, url)
        except sqlite3.Error as exc:
            raise StoreError(f"knowledge base {self.path}: {exc}") from None

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

    def page_urls(self, kb: str | None = None, prefix: str = "") -> list[tuple[str, str]]:
        """(kb, url) of the stored pages, of one KB or all, whose URL starts with ``prefix``."""
        sql = "SELECT kb, url FROM pages WHERE substr(url, 1, ?) = ?"
        params: tuple[Any, ...] = (len(prefix), prefix)
        if kb is not None:
            sql += " AND kb=?"
            params += (kb,)
        return [(row[0], row[1]) for row in self._run(sql + " ORDER BY kb, url", params).fetchall()]

    def put_source(self, source: Source) -> None:
        """Record a source (replacing the one with its id)."""
        self._run(
            f"INSERT OR REPLACE INTO sources ({_SOURCE_COLUMNS}) "  # noqa: S608 (fixed names)
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (source.id, source.mode, "\n".join(source.urls), source.kb, source.profile, source.deployment,
             source.depth, source.max_pages, source.interval, source.added_at, source.last_crawl,
             source.next_due, source.outcome),
        )

    def get_source(self, source_id: str) -> Source | None:
        """The source with ``source_id``, or None."""
        row = self._run(f"SELECT {_SOURCE_COLUMNS} FROM sources WHERE id=?", (source_id,)).fetchone()  # noqa: S608
        return _source(row) if row else None

    def sources(self, kb: str | None = None) -> list[Source]:
        """The sources of one KB or all, earliest due first."""
        sql = f"SELECT {_SOURCE_COLUMNS} FROM sources"  # noqa: S608 (fixed names)
        params: tuple[Any, ...] = ()
        if kb is not None:
            sql += " WHERE kb=?"
            params = (kb,)
        return [_source(row) for row in self._run(sql + " ORDER BY next_due, id", params).fetchall()]

    def delete_source(self, source_id: str) -> bool:
        """Forget a source (its pages stay); True when there was one."""
        return self._run("DELETE FROM sources WHERE id=?", (source_id,)).rowcount > 0

    def put_site_icon(self, icon: SiteIcon) -> None:
        """Record the icon found for a site (replacing an earlier one)."""
        self._run(
            "INSERT OR REPLACE INTO site_icons (origin, url, content_type, fetched_at) VALUES (?, ?, ?, ?)",
            (icon.origin, icon.url, icon.content_type, icon.fetched_at),
        )

    def get_site_icon(self, origin: str) -> SiteIcon | None:
        """The icon recorded for ``origin``, or None."""
        row = self._run("SELECT origin, url, content_type, fetched_at FROM site_icons WHERE origin=?",
                        (origin,)).fetchone()
        return SiteIcon(*row) if row else None

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()
