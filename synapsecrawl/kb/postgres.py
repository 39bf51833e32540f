"""The PostgreSQL knowledge base: the same Store as SQLite, for many crawlers and large KBs.

Tables mirror ``synapsecrawl.kb.sqlite`` and ``synapsecrawl.kb.sqlite_content`` and are created on open; the methods
that read and write them alike are ``kb.rows``'s. Search goes through the index beside the KB
(``synapsecrawl.search.index``), as for SQLite. One write connection per store, guarded by a lock; reads take a
connection of a small pool (``READERS``). More: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql

from synapsecrawl.errors import StoreError, StoreUnavailable
from synapsecrawl.kb import changes
from synapsecrawl.kb.marker import META_TABLE, SCHEMA_VERSION, Found, judge, meta_rows
from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.revisit import REVISIT_COLUMNS, RevisitRule
from synapsecrawl.kb.rows import PAGE_COLUMNS, SharedTables

__all__ = ["READERS", "PostgresStore", "redact_uri"]

READERS = 8  # read connections kept open between reads; more are opened while more threads read at once

# Keys compare and sort byte-wise (COLLATE "C"), as in SQLite, whatever the database's locale.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    id BIGSERIAL PRIMARY KEY,
    kb TEXT COLLATE "C" NOT NULL,
    url TEXT COLLATE "C" NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL DEFAULT '',
    snippet_text TEXT NOT NULL DEFAULT '',
    content_type TEXT NOT NULL DEFAULT '',
    status INTEGER NOT NULL DEFAULT 200,
    fetched_at TIMESTAMPTZ NOT NULL,
    verified_at TIMESTAMPTZ,
    etag TEXT NOT NULL DEFAULT '',
    last_modified TEXT NOT NULL DEFAULT '',
    nosnippet BOOLEAN NOT NULL DEFAULT FALSE,
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
CREATE TABLE IF NOT EXISTS page_labels (
    kb TEXT COLLATE "C" NOT NULL,
    url TEXT COLLATE "C" NOT NULL,
    kind TEXT NOT NULL,
    tdm_reservation INTEGER,
    tdm_policy TEXT NOT NULL DEFAULT '',
    tdm_source TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (kb, url)
);
CREATE TABLE IF NOT EXISTS link_labels (
    kb TEXT COLLATE "C" NOT NULL,
    url TEXT COLLATE "C" NOT NULL,
    ordinal INTEGER NOT NULL,
    target TEXT NOT NULL,
    context TEXT NOT NULL,
    PRIMARY KEY (kb, url, ordinal)
);
CREATE TABLE IF NOT EXISTS robots_cache (
    profile TEXT COLLATE "C" NOT NULL,
    origin TEXT COLLATE "C" NOT NULL,
    status INTEGER NOT NULL,
    body BYTEA NOT NULL,
    fetched_at DOUBLE PRECISION NOT NULL,
    unreadable_since DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (profile, origin)
);
CREATE TABLE IF NOT EXISTS backoff_sites (
    profile TEXT COLLATE "C" NOT NULL,
    site TEXT COLLATE "C" NOT NULL,
    paused_until DOUBLE PRECISION NOT NULL DEFAULT 0,
    pause_reason TEXT NOT NULL DEFAULT '',
    slow_streak INTEGER NOT NULL DEFAULT 0,
    forbidden_streak INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (profile, site)
);
CREATE TABLE IF NOT EXISTS backoff_urls (
    profile TEXT COLLATE "C" NOT NULL,
    url TEXT COLLATE "C" NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    until DOUBLE PRECISION NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    site TEXT NOT NULL DEFAULT '',
    kb TEXT NOT NULL DEFAULT '',
    failures INTEGER NOT NULL DEFAULT 0,
    recorded_at DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (profile, url)
);
CREATE TABLE IF NOT EXISTS site_icons (
    origin TEXT COLLATE "C" PRIMARY KEY,
    url TEXT NOT NULL DEFAULT '',
    content_type TEXT NOT NULL DEFAULT '',
    fetched_at DOUBLE PRECISION NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS sources (
    id TEXT COLLATE "C" PRIMARY KEY,
    mode TEXT NOT NULL,
    urls TEXT[] NOT NULL,
    kb TEXT COLLATE "C" NOT NULL,
    profile TEXT NOT NULL,
    deployment TEXT NOT NULL,
    depth TEXT NOT NULL DEFAULT '',
    max_pages TEXT NOT NULL DEFAULT '',
    interval DOUBLE PRECISION NOT NULL,
    added_at DOUBLE PRECISION NOT NULL DEFAULT 0,
    last_crawl DOUBLE PRECISION NOT NULL DEFAULT 0,
    next_due DOUBLE PRECISION NOT NULL DEFAULT 0,
    outcome TEXT NOT NULL DEFAULT '',
    run_started DOUBLE PRECISION NOT NULL DEFAULT 0
);
"""

# CREATE INDEX locks its table against writes even when the index exists: created only when missing.
_INDEXES = {
    "pages_kb_fetched_idx": "CREATE INDEX pages_kb_fetched_idx ON pages (kb, fetched_at)",
    # the pages of a KB in due order, and those with no due in fetch order (kb.rows.SharedTables.earliest_due)
    "pages_kb_due_idx": "CREATE INDEX pages_kb_due_idx ON pages (kb, revisit_due, fetched_at, id)",
}

# Columns added since the first schema: (name, declaration), added to an older database on open.
_ADDED_PAGE_COLUMNS = (
    ("image", "TEXT NOT NULL DEFAULT ''"),
    ("published", "TEXT NOT NULL DEFAULT ''"),
    ("feed", "TEXT NOT NULL DEFAULT ''"),
    ("depth", "INTEGER"),
    ("outlinks", "TEXT NOT NULL DEFAULT ''"),
    *REVISIT_COLUMNS,
)
_ADDED_SOURCE_COLUMNS = (("run_started", "DOUBLE PRECISION NOT NULL DEFAULT 0"),)
_ADDED_ROBOTS_COLUMNS = (("unreadable_since", "DOUBLE PRECISION NOT NULL DEFAULT 0"),)  # a KB made before YOT-STALE

# A page's columns as PostgreSQL types, for the arrays a batch's upsert reads its rows from (text unless named)
_PAGE_TYPES = {
    "status": "integer",
    "fetched_at": "timestamptz",
    "verified_at": "timestamptz",
    "nosnippet": "boolean",
    "max_snippet": "integer",
    "depth": "integer",
    **{column: kind.lower() for column, kind in REVISIT_COLUMNS},
}
# A batch's rows, one array a column; what follows (ON CONFLICT ...) is the one upsert's of kb.rows
_UPSERT_PAGES = (
    f"INSERT INTO pages ({', '.join(PAGE_COLUMNS)}) SELECT * FROM unnest("  # noqa: S608 (fixed names)
    + ", ".join(f"%s::{_PAGE_TYPES.get(column, 'text')}[]" for column in PAGE_COLUMNS)
    + ")"
)

_SCHEMA_LOCK = 0x5E_C4_A7  # advisory lock: one process creates the tables at a time


def redact_uri(uri: str) -> str:
    """``uri`` without its password (in the user part or a ``password`` parameter)."""
    parts = urlsplit(uri)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, hosts = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{hosts}"
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split("\n", 1)[0].split())
    return text or type(exc).__name__


_Conn = psycopg.Connection[tuple[Any, ...]]


def _begin(conn: _Conn | None, connect: Callable[[], _Conn], stack: ExitStack) -> _Conn:
    """``conn`` (or a new connection, if it is gone) with a transaction begun on it, ended by ``stack``.

    An idle connection the server dropped (a restart, a failover) is found broken only when it is next used:
    its BEGIN fails, and the transaction begins again on a new connection, so nobody sees the restart.
    """
    if conn is not None and not conn.closed and not conn.broken:
        try:
            stack.enter_context(conn.transaction())
        except psycopg.OperationalError:
            if not conn.broken:
                raise
            conn.close()
        else:
            return conn
    conn = connect()
    stack.enter_context(conn.transaction())
    return conn


# SQLSTATE classes and codes of a server that cannot take a write now (PostgreSQL's Appendix A)
_FULL_CLASS = "53"  # insufficient resources: disk_full 53100, out_of_memory 53200, too_many_connections 53300
_READ_ONLY = "25006"  # read_only_sql_transaction: a standby, or default_transaction_read_only
_UNREACHABLE_CLASSES = ("08", "57P")  # connection exceptions; admin_shutdown, crash_shutdown, cannot_connect_now


def _store_error(uri: str, exc: psycopg.Error, conn: _Conn | None) -> StoreError:
    """``exc`` as one line naming the KB: ``StoreUnavailable`` when the same write may succeed later."""
    line = f"knowledge base {uri}: {_one_line(exc)}"
    state = exc.sqlstate or ""
    if state.startswith(_FULL_CLASS):
        return StoreUnavailable(line, "full" if state == "53100" else "unreachable")
    if state == _READ_ONLY:
        return StoreUnavailable(line, "read-only")
    dropped = conn is None or conn.closed or conn.broken
    if state.startswith(_UNREACHABLE_CLASSES) or (isinstance(exc, psycopg.OperationalError) and dropped):
        return StoreUnavailable(line, "unreachable")
    return StoreError(line)


def _create_schema(conn: psycopg.Connection[tuple[Any, ...]], where: str) -> None:
    """Create what is missing, one process at a time; ALTER and CREATE INDEX (which lock a table) only if needed.
    A schema that is not our KB (kb.marker) is refused before anything is written to it."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        state = judge(_found(conn), where=where, ours=_OURS, required=("pages", "robots_cache"))
        conn.execute(_SCHEMA)
        if state != "ours":
            conn.execute(
                f'CREATE TABLE IF NOT EXISTS {META_TABLE} (key TEXT COLLATE "C" PRIMARY KEY, value TEXT NOT NULL)'
            )
            with conn.cursor() as cursor:
                cursor.executemany(
                    f"INSERT INTO {META_TABLE} (key, value) VALUES (%s, %s) "  # noqa: S608
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    meta_rows(),
                )
        for table, added in (
            ("pages", _ADDED_PAGE_COLUMNS),
            ("sources", _ADDED_SOURCE_COLUMNS),
            ("robots_cache", _ADDED_ROBOTS_COLUMNS),
        ):
            # ALTER TABLE locks the table even when the column exists: altered only when one is missing.
            present = {
                row[0]
                for row in conn.execute(
                    "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND NOT attisdropped", (table,)
                )
            }
            for column, declaration in added:
                if column not in present:
                    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        _drop_unread(conn)
        for name, create in _INDEXES.items():
            if conn.execute("SELECT to_regclass(%s)", (name,)).fetchone() == (None,):
                conn.execute(create)
        conn.execute(changes.POSTGRES_SCHEMA)  # what the search index follows (search.index)
        if not conn.execute(
            "SELECT 1 FROM pg_trigger WHERE tgrelid = 'pages'::regclass AND tgname = 'search_changes_note'"
        ).fetchone():
            conn.execute(changes.POSTGRES_TRIGGER)


def _drop_unread(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
    """Drop what a KB made by an older version keeps and nothing reads: the tsvector columns (and so their GIN
    indexes, schema version 1) and the passages table (version 2); and mark it as this version's, which an older
    one refuses to open (version 1 would search columns no longer there, version 2 write passages into a table
    that is gone). Catalogue changes, not rewrites of the tables; under the schema's advisory lock."""
    held = conn.execute(
        "SELECT 1 FROM pg_class WHERE relname = 'passages' AND relnamespace = to_regnamespace(current_schema()) "
        "UNION ALL SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = 'pages' AND column_name = 'fts'"
    ).fetchone()
    version = conn.execute(f"SELECT value FROM {META_TABLE} WHERE key = 'schema_version'").fetchone()  # noqa: S608
    if held is None and version is not None and version[0] == str(SCHEMA_VERSION):
        return
    conn.execute("ALTER TABLE pages DROP COLUMN IF EXISTS fts")  # its index goes with it
    schema = sql.Identifier(str(conn.execute("SELECT current_schema()").fetchone()[0]))  # type: ignore[index]
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}.passages").format(schema))  # not another schema's of the path
    with conn.cursor() as cursor:
        cursor.executemany(
            f"INSERT INTO {META_TABLE} (key, value) VALUES (%s, %s) "  # noqa: S608
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            meta_rows(),
        )


# Every table our schema creates, and the one older versions made (kb.marker).
_OURS = frozenset(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", _SCHEMA + changes.POSTGRES_SCHEMA)) | {"passages"}


def _found(conn: psycopg.Connection[tuple[Any, ...]]) -> Found:
    """What the schema the KB's tables go to (the search_path's first) holds, read only."""
    tables = frozenset(
        name
        for (name,) in conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = to_regnamespace(current_schema()) "
            "AND relkind IN ('r', 'p', 'v', 'm', 'f')"
        )
    )
    columns = frozenset(
        name
        for (name,) in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'pages'"
        )
    )
    if META_TABLE not in tables:
        return Found(tables, columns)
    held = dict(conn.execute(f"SELECT key, value FROM {META_TABLE}").fetchall())  # noqa: S608
    number = {k: int(v) if str(v).lstrip("-").isdigit() else 0 for k, v in held.items()}
    return Found(tables, columns, number.get("application_id", 0), number.get("schema_version", 0))


class PostgresStore(SharedTables):
    """A knowledge base in a PostgreSQL database (the tables of the URI's first schema)."""

    _MARK = "%s"

    def __init__(self, uri: str) -> None:
        self.uri = redact_uri(uri)
        self._dsn = uri
        self._lock = threading.Lock()
        # Reads through a connection of their own, opened on first use: they see the last commit and do not
        # wait behind a KB batch's transaction on the other (as in kb.sqlite).
        self._pool_lock = threading.Lock()
        self._readers: list[psycopg.Connection[tuple[Any, ...]]] = []
        self._closed = False
        try:
            self._conn = self._connect()
        except psycopg.OperationalError as exc:  # the server cannot be reached: as any write that fails so
            raise StoreUnavailable(f"cannot open knowledge base {self.uri}: {_one_line(exc)}", "unreachable") from None
        except psycopg.Error as exc:
            raise StoreError(f"cannot open knowledge base {self.uri}: {_one_line(exc)}") from None
        try:
            _create_schema(self._conn, self.uri)
        except psycopg.Error as exc:
            self._conn.close()
            raise StoreError(f"cannot open knowledge base {self.uri}: {_one_line(exc)}") from None
        except StoreError:
            self._conn.close()
            raise

    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        # "synapsecrawl" in pg_stat_activity unless the URI names its workers apart (application_name=...);
        # psycopg leaves out a keyword given as None
        named = "application_name" in psycopg.conninfo.conninfo_to_dict(self._dsn)
        conn = psycopg.connect(
            self._dsn, autocommit=True, connect_timeout=10, application_name=None if named else "synapsecrawl"
        )
        try:
            conn.execute("SET TIME ZONE 'UTC'")
            conn.execute("SET client_min_messages = warning")
        except psycopg.Error:
            conn.close()
            raise
        return conn

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """The connection, locked, for one statement: in a transaction of its own, so that its BEGIN finds a
        connection the server dropped (a restart) and opens it again before the statement runs."""
        with self._transaction() as conn:
            yield conn

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """The connection, locked, inside one transaction; a failure rolls it back."""
        with self._lock:
            try:
                with ExitStack() as transaction:
                    self._conn = _begin(self._conn, self._connect, transaction)
                    yield self._conn
            except psycopg.Error as exc:
                raise _store_error(self.uri, exc, self._conn) from None

    @contextmanager
    def _reading(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """A read connection of the pool, this thread's alone while it reads, in one transaction (one
        snapshot); one the server dropped (a restart) is found at its BEGIN and replaced."""
        reader: psycopg.Connection[tuple[Any, ...]] | None = None
        try:
            with self._pool_lock:
                if self._closed:
                    raise psycopg.InterfaceError("the knowledge base is closed")
                reader = self._readers.pop() if self._readers else None
            try:
                with ExitStack() as transaction:
                    reader = _begin(reader, self._connect, transaction)
                    yield reader
            finally:
                with self._pool_lock:
                    kept = (
                        reader is not None
                        and not self._closed
                        and len(self._readers) < READERS
                        and not (reader.broken or reader.closed)
                    )
                    if kept:
                        assert reader is not None
                        self._readers.append(reader)
                if not kept and reader is not None:
                    reader.close()
        except psycopg.Error as exc:
            raise _store_error(self.uri, exc, reader) from None

    def _held(self, value: Any) -> Any:
        """A string PostgreSQL can hold: text values cannot contain NUL (SQLite's can)."""
        return value.replace("\x00", "") if isinstance(value, str) else value

    def _urls_held(self, urls: tuple[str, ...]) -> list[str]:
        return list(urls)

    def _urls_read(self, held: list[str]) -> tuple[str, ...]:
        return tuple(held)

    # -- pages ----------------------------------------------------------------

    def put_page(self, page: PageRecord, revisit: RevisitRule | None = None) -> None:
        """Insert or replace the page (kb, url) in one transaction."""
        self.put_pages([page], revisit)

    def put_pages(self, pages: Sequence[PageRecord], revisit: RevisitRule | None = None) -> None:
        """Insert or replace each page, all in one transaction.

        One statement a batch whatever its size (two with a revisit rule), its text the same every time (so
        psycopg prepares it after a few runs): the pages in one upsert from arrays. One a page cost the
        writer more CPU and, across a network, a round trip each (docs/scale.md). Rows go in (kb, url) order,
        so two writers' batches that share a page lock it in the same order and never deadlock. A page whose
        title and texts are unchanged leaves no row in the search change log (kb.changes).
        """
        if not pages:
            return
        upsert = self._upsert_sql("pages", PAGE_COLUMNS, ("kb", "url"))
        upsert = _UPSERT_PAGES + upsert[upsert.index(" ON CONFLICT") :]
        with self._transaction() as conn:
            timed = self._revisited(conn, pages, revisit)  # timed by the rule (kb.revisit)
            latest = {(page.kb, page.url): page for page in timed}  # one statement cannot upsert a row twice
            batch = [latest[key] for key in sorted(latest, key=lambda key: (key[0] or "", key[1] or ""))]
            columns = [list(column) for column in zip(*map(self._page_values, batch), strict=True)]
            conn.execute(upsert, columns)

    def delete_page(self, kb: str, url: str) -> bool:
        """Remove a page with its labels; True when there was one."""
        with self._transaction() as conn:
            conn.execute("DELETE FROM page_labels WHERE kb=%s AND url=%s", (kb, url))
            conn.execute("DELETE FROM link_labels WHERE kb=%s AND url=%s", (kb, url))
            return conn.execute("DELETE FROM pages WHERE kb=%s AND url=%s", (kb, url)).rowcount > 0

    def page_urls(self, kb: str | None = None, prefix: str = "") -> list[tuple[str, str]]:
        """(kb, url) of the stored pages, of one KB or all, whose URL starts with ``prefix``."""
        sql = "SELECT kb, url FROM pages WHERE starts_with(url, %s)"
        params: tuple[Any, ...] = (prefix,)
        if kb is not None:
            sql += " AND kb=%s"
            params += (kb,)
        return [(row[0], row[1]) for row in self._rows(sql + " ORDER BY kb, url", params)]

    def close(self) -> None:
        """Close the connections."""
        with self._lock:
            self._conn.close()
        with self._pool_lock:
            self._closed = True
            readers, self._readers = self._readers, []
        for reader in readers:
            reader.close()
