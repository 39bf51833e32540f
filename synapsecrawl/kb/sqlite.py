"""The SQLite knowledge base (the default), in WAL mode; searched through its index (synapsecrawl.search.index).

One write connection per store, guarded by a lock, so the crawler's pipeline
can call it from a worker thread (``asyncio.to_thread``) while the CLI reads the
same file from another process. Reads take a connection of a small pool
(``READERS`` kept idle), so concurrent searches do not wait for each other.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from synapsecrawl.errors import StoreError, StoreUnavailable
from synapsecrawl.kb import changes
from synapsecrawl.kb import sqlite_content as content
from synapsecrawl.kb.marker import APPLICATION_ID, META_TABLE, SCHEMA_VERSION, Found, judge, meta_rows
from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.revisit import REVISIT_COLUMNS, RevisitRule
from synapsecrawl.kb.rows import PAGE_COLUMNS, SharedTables

__all__ = ["READERS", "SQLiteStore"]

READERS = 8  # read connections kept open between reads; more are opened while more threads read at once

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
    depth INTEGER,
    outlinks TEXT NOT NULL DEFAULT '',
    UNIQUE (kb, url)
);
CREATE INDEX IF NOT EXISTS pages_kb_fetched ON pages (kb, fetched_at);
CREATE TABLE IF NOT EXISTS robots_cache (
    profile TEXT NOT NULL,
    origin TEXT NOT NULL,
    status INTEGER NOT NULL,
    body BLOB NOT NULL,
    fetched_at REAL NOT NULL,
    unreadable_since REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (profile, origin)
);
"""

# Backoff state (synapsecrawl.pacing.backoff): site pauses and streaks, URL holds. Unix seconds.
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
    ("depth", "INTEGER"),
    ("outlinks", "TEXT NOT NULL DEFAULT ''"),
    *REVISIT_COLUMNS,
)
_ADDED_SOURCE_COLUMNS = (("run_started", "REAL NOT NULL DEFAULT 0"),)
# The pages of a KB in due order, and those with no due in fetch order (kb.rows.SharedTables.earliest_due); the
# rowid is every index's last column.
_DUE_INDEX = "CREATE INDEX IF NOT EXISTS pages_kb_due ON pages (kb, revisit_due, fetched_at)"
# Site icons found by the feed spider (synapsecrawl.extract.feeds, SER-ICON). Unix seconds.
_ICONS_SCHEMA = """
CREATE TABLE IF NOT EXISTS site_icons (
    origin TEXT PRIMARY KEY,
    url TEXT NOT NULL DEFAULT '',
    content_type TEXT NOT NULL DEFAULT '',
    fetched_at REAL NOT NULL DEFAULT 0
);
"""

# Sources a KB user added, re-read on a schedule (synapsecrawl.kb.reread). URLs one a line; unix seconds.
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
    outcome TEXT NOT NULL DEFAULT '',
    run_started REAL NOT NULL DEFAULT 0
);
"""


# What a KB made before kept and nothing reads now, dropped on open: the full-text tables (FTS5) and their
# triggers (schema version 1), and the passages table with the trigger that deleted its rows (version 2).
_FULL_TEXT = ("pages_fts", "passages_fts")
_UNREAD_TABLES = (*_FULL_TEXT, "passages")
_UNREAD_TRIGGERS = ("pages_ai", "pages_ad", "pages_au", "passages_ai", "passages_ad", *content.UNREAD_TRIGGERS)

# Knowing our KB (kb.marker): every table our schemas create, and those older versions made (FTS5's with their
# shadow tables).
_OURS = (
    frozenset(
        re.findall(
            r"CREATE TABLE IF NOT EXISTS (\w+)",
            _SCHEMA + _ICONS_SCHEMA + _BACKOFF_SCHEMA + _SOURCES_SCHEMA + content.SCHEMA + changes.SQLITE_SCHEMA,
        )
    )
    | {f"{name}{shadow}" for name in _FULL_TEXT for shadow in ("", "_data", "_idx", "_content", "_docsize", "_config")}
    | {"passages"}
)
_REQUIRED = frozenset({"pages", "robots_cache"})


def _found(path: Path) -> Found:
    """What the file holds, read through a read-only connection (nothing of it can change)."""
    if not path.exists() or path.stat().st_size == 0:
        return Found(frozenset())
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
        tables = frozenset(
            name
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master"
                " WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite~_%' ESCAPE '~'"
            )
        )
        version = None
        if META_TABLE in tables:
            held = dict(db.execute(f"SELECT key, value FROM {META_TABLE}").fetchall())  # noqa: S608
            version = int(held["schema_version"]) if str(held.get("schema_version", "")).isdigit() else 0
        return Found(
            tables,
            frozenset(row[1] for row in db.execute("PRAGMA table_info(pages)")),
            db.execute("PRAGMA application_id").fetchone()[0],
            version,
        )


def _use_wal(db: sqlite3.Connection) -> None:
    """Switch a file to WAL. Crawls opening one new file at once can each hold a read lock while one
    switches, and SQLite answers that "database is locked" at once, without its busy timeout: try again."""
    for attempt in range(100):
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == 99:
                raise
            time.sleep(0.05)


def _mark(db: sqlite3.Connection) -> None:
    """Mark the file as our KB: SQLite's application id, and the meta table's rows."""
    db.execute("BEGIN IMMEDIATE")
    db.execute(f"CREATE TABLE IF NOT EXISTS {META_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.executemany(f"INSERT OR REPLACE INTO {META_TABLE} (key, value) VALUES (?, ?)", meta_rows())  # noqa: S608
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("COMMIT")


def _drop_unread(db: sqlite3.Connection, found: Found) -> None:
    """Drop what a KB made by an older version keeps and nothing reads (``_UNREAD_TABLES``, ``_UNREAD_TRIGGERS``),
    and mark it as this version's (which an older one refuses to open: version 1 would search tables that no
    longer follow the pages, version 2 write passages into a table that is gone). Under the write lock, each
    DROP ... IF EXISTS, since two crawls may open one old file at once."""
    names = (*_UNREAD_TABLES, *_UNREAD_TRIGGERS)
    marks = ", ".join("?" * len(names))

    def held() -> bool:
        return db.execute(f"SELECT 1 FROM sqlite_master WHERE name IN ({marks})", names).fetchone() is not None  # noqa: S608

    older = found.schema_version is not None and found.schema_version < SCHEMA_VERSION
    if not held() and not older:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        for trigger in _UNREAD_TRIGGERS:
            db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        for table in _UNREAD_TABLES:
            db.execute(f"DROP TABLE IF EXISTS {table}")
        if db.execute("SELECT 1 FROM sqlite_master WHERE name=?", (META_TABLE,)).fetchone():
            db.executemany(f"INSERT OR REPLACE INTO {META_TABLE} (key, value) VALUES (?, ?)", meta_rows())  # noqa: S608
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _add_columns(db: sqlite3.Connection, table: str, columns: Iterable[tuple[str, str]]) -> None:
    """Add the ``columns`` a KB made by an older version lacks; under the write lock, looking again once it is
    held, since two crawls opening one new file at once would otherwise both add a column (and one fail)."""
    wanted = list(columns)

    def missing() -> list[tuple[str, str]]:
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        return [(column, declaration) for column, declaration in wanted if column not in present]

    if not missing():
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        for column, declaration in missing():
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class SQLiteStore(SharedTables):
    """A knowledge base in one SQLite file (the tables and methods both back-ends share: kb.rows)."""

    _MARK = "?"

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            found = _found(path)
            state = judge(found, where=str(path), ours=_OURS, required=_REQUIRED)  # before any write
            self._db = sqlite3.connect(path, check_same_thread=False, timeout=30, isolation_level=None)
            _use_wal(self._db)
            self._db.execute("PRAGMA synchronous=NORMAL")
            if state == "new":  # marked first: a crawl opening it meanwhile knows it as ours, not half-made
                _mark(self._db)
            self._db.executescript(_SCHEMA)
            _add_columns(self._db, "pages", _ADDED_PAGE_COLUMNS)
            self._db.execute(_DUE_INDEX)  # after the revisit columns, which a KB made before lacks
            # a KB made before YOT-STALE
            _add_columns(self._db, "robots_cache", (("unreadable_since", "REAL NOT NULL DEFAULT 0"),))
            self._db.executescript(_ICONS_SCHEMA)
            self._db.executescript(_BACKOFF_SCHEMA)
            self._db.executescript(_SOURCES_SCHEMA)
            _add_columns(self._db, "sources", _ADDED_SOURCE_COLUMNS)
            self._db.executescript(changes.SQLITE_SCHEMA)  # what the search index follows (search.index)
            self._db.executescript(content.SCHEMA)  # labels (kb.content), and the trigger that deletes them
            _drop_unread(self._db, found)  # after: a page's labels go with it at every moment
            if state == "adopt":
                _mark(self._db)
            # Reads go through a connection of their own: in WAL they see the last commit and never wait for
            # a write, where one connection would make the crawl's lookups (a page's stored validators before
            # its request goes out) wait out each KB batch's transaction.
            # A pool of them, no lock around a read: searches run side by side.
            self._readers = [self._read_connection()]
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open knowledge base {self.path}: {exc}") from None
        self._lock = threading.Lock()
        self._pool_lock = threading.Lock()
        self._closed = False

    def _read_connection(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """The connection, locked; SQLite errors become StoreError."""
        try:
            with self._lock:
                yield self._db
        except sqlite3.Error as exc:
            raise _store_error(self.path, exc) from None

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A read connection of the pool, this thread's alone while it reads, in one read transaction
        (one snapshot for all its statements)."""
        try:
            with self._pool_lock:
                if self._closed:
                    raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
                reader = self._readers.pop() if self._readers else None
            reader = reader or self._read_connection()
            try:
                reader.execute("BEGIN")
                try:
                    yield reader
                finally:
                    reader.execute("COMMIT")
            finally:
                with self._pool_lock:
                    kept = not self._closed and len(self._readers) < READERS
                    if kept:
                        self._readers.append(reader)
                if not kept:
                    reader.close()
        except sqlite3.Error as exc:
            raise _store_error(self.path, exc) from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """The connection, locked, inside one write transaction; a failure rolls it back."""
        with self._connection() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # SQLite rolls back by itself on some errors (a full disk, SQLITE_FULL)
                    db.execute("ROLLBACK")
                raise

    def _held(self, value: Any) -> Any:
        """Times as ISO 8601 text, flags as 0/1."""
        if isinstance(value, datetime):
            return value.isoformat()
        return int(value) if isinstance(value, bool) else value

    def _urls_held(self, urls: tuple[str, ...]) -> str:
        return "\n".join(urls)

    def _urls_read(self, held: str) -> tuple[str, ...]:
        return tuple(u for u in held.split("\n") if u)

    def put_page(self, page: PageRecord, revisit: RevisitRule | None = None) -> None:
        """Insert or replace the page (kb, url) in one transaction."""
        self.put_pages([page], revisit)

    def put_pages(self, pages: Sequence[PageRecord], revisit: RevisitRule | None = None) -> None:
        """Insert or replace each page, all in one transaction (a page whose title and texts are unchanged
        leaves no row in the search change log: kb.changes)."""
        upsert = self._upsert_sql("pages", PAGE_COLUMNS, ("kb", "url"))
        with self._transaction() as db:
            for page in self._revisited(db, pages, revisit):  # timed by the rule (kb.revisit)
                db.execute(upsert, self._page_values(page))

    def delete_page(self, kb: str, url: str) -> bool:
        """Remove a page (a trigger removes its labels); True when there was one."""
        return self._delete("pages", {"kb": kb, "url": url})

    def page_urls(self, kb: str | None = None, prefix: str = "") -> list[tuple[str, str]]:
        """(kb, url) of the stored pages, of one KB or all, whose URL starts with ``prefix``."""
        sql = "SELECT kb, url FROM pages WHERE substr(url, 1, ?) = ?"
        params: tuple[Any, ...] = (len(prefix), prefix)
        if kb is not None:
            sql += " AND kb=?"
            params += (kb,)
        return [(row[0], row[1]) for row in self._rows(sql + " ORDER BY kb, url", params)]

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()
        with self._pool_lock:
            self._closed = True
            readers, self._readers = self._readers, []
        for reader in readers:
            reader.close()


# SQLite's primary result codes for a KB that cannot take a write now (https://sqlite.org/rescode.html)
_UNAVAILABLE = {5: "busy", 6: "busy", 8: "read-only", 10: "unreachable", 13: "full", 14: "unreachable"}


def _store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """``exc`` as one line naming the KB: ``StoreUnavailable`` when the same write may succeed later."""
    reason = _UNAVAILABLE.get(getattr(exc, "sqlite_errorcode", 0) & 0xFF)
    if reason is None:
        return StoreError(f"knowledge base {path}: {exc}")
    if reason == "full":
        free = shutil.disk_usage(path.parent).free
        return StoreUnavailable(
            f"knowledge base {path}: the disk is full ({free // 1024} KiB free on its filesystem); "
            "free some space or give KB_URI a larger disk",
            "full",
        )
    if reason == "busy":  # another process holds the write lock past the timeout: as unreachable, for now
        reason = "unreachable"
    return StoreUnavailable(f"knowledge base {path}: {exc}", reason)
