"""The PostgreSQL knowledge base: the same Store as SQLite, for many crawlers and large KBs.

Tables mirror ``synapsecrawl.kb.sqlite`` and ``synapsecrawl.kb.content``
(pages, passages, labels, robots.txt copies, backoff state, sources, site
icons) and are created on open. Search uses a stored ``tsvector`` per page (title weight A,
text B, the ``english`` configuration: Snowball stems, like FTS5's Porter)
and per passage, ranked with ``ts_rank_cd``; snippets come from the same pure
functions as SQLite's (``synapsecrawl.kb.search``), with the query words
marked by ``ts_headline``, so both back-ends show the same kind of result.

One connection per store, guarded by a lock, as SQLite's: the pipeline calls
it from worker threads. Page times are ``timestamptz`` read back in UTC;
robots.txt, backoff and source times are unix seconds (double precision).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.rows import dict_row

from synapsecrawl.errors import StoreError
from synapsecrawl.kb.search import HIT_CLOSE, HIT_OPEN, compose_snippet, search_terms, split_passages
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

__all__ = ["PostgresStore", "redact_uri"]

# Keys compare and sort byte-wise (COLLATE "C"), as in SQLite, whatever the database's locale.
# A tsvector holds at most 1 MB: the page-level vector reads the first 400,000 characters of the
# text; passages index all of it.
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
    fts TSVECTOR GENERATED ALWAYS AS (
        setweight(to_tsvector('english'::regconfig, title), 'A')
        || setweight(to_tsvector('english'::regconfig, left(text, 400000)), 'B')
    ) STORED,
    UNIQUE (kb, url)
);
CREATE TABLE IF NOT EXISTS passages (
    id BIGSERIAL PRIMARY KEY,
    page_id BIGINT NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    fts TSVECTOR GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED,
    UNIQUE (page_id, ordinal)
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
    outcome TEXT NOT NULL DEFAULT ''
);
"""

# CREATE INDEX locks its table against writes even when the index exists: created only when missing.
_INDEXES = {
    "pages_fts_idx": "CREATE INDEX pages_fts_idx ON pages USING GIN (fts)",
    "passages_fts_idx": "CREATE INDEX passages_fts_idx ON passages USING GIN (fts)",
}

_PAGE_COLUMNS = (
    "kb", "url", "title", "text", "snippet_text", "content_type", "status", "fetched_at", "verified_at", "etag",
    "last_modified", "nosnippet", "max_snippet", "site", "language", "description", "image", "published", "feed",
)  # fmt: skip
# Columns added to pages since the first schema, added to an older database on open.
_ADDED_PAGE_COLUMNS = ("image", "published", "feed")
_PAGE_SELECT = ", ".join(_PAGE_COLUMNS)
_SOURCE_COLUMNS = (
    "id, mode, urls, kb, profile, deployment, depth, max_pages, interval, added_at, last_crawl, next_due, outcome"
)
_HOLD_COLUMNS = "url, kind, until, reason, site, kb, failures, recorded_at"

# ts_rank_cd weights {D, C, B, A}: a title word counts five times a text word, as SQLite's bm25(5, 1).
_PAGE_WEIGHTS = "{0.04, 0.04, 0.2, 1.0}"
_RANK_NORMALIZATION = 1  # divided by 1 + log(length): long pages don't win by repetition alone
_PAGE_CANDIDATES = 1000
_PASSAGE_CANDIDATES = 3000
_PASSAGES_PER_HIT = 2
_HEADLINE = f"HighlightAll=true, StartSel={HIT_OPEN}, StopSel={HIT_CLOSE}"
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


def _text(value: Any) -> Any:
    """A string PostgreSQL can hold: text values cannot contain NUL (SQLite's can)."""
    return value.replace("\x00", "") if isinstance(value, str) else value


def _record(row: dict[str, Any]) -> PageRecord:
    return PageRecord(**{name: row[name] for name in _PAGE_COLUMNS})


def _source(row: tuple[Any, ...]) -> Source:
    return Source(row[0], row[1], tuple(row[2]), *row[3:])


def _create_schema(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
    """Create what is missing, one process at a time; ALTER and CREATE INDEX (which lock a table) only if needed."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        conn.execute(_SCHEMA)
        present = {row[0] for row in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'pages'::regclass AND NOT attisdropped")}
        for column in _ADDED_PAGE_COLUMNS:
            if column not in present:
                conn.execute(f"ALTER TABLE pages ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")
        for name, create in _INDEXES.items():
            if conn.execute("SELECT to_regclass(%s)", (name,)).fetchone() == (None,):
                conn.execute(create)


class PostgresStore:
    """A knowledge base in a PostgreSQL database (the tables of the URI's first schema)."""

    def __init__(self, uri: str) -> None:
        self.uri = redact_uri(uri)
        self._dsn = uri
        self._lock = threading.Lock()
        try:
            self._conn = self._connect()
        except psycopg.Error as exc:
            raise StoreError(f"cannot open knowledge base {self.uri}: {_one_line(exc)}") from None
        try:
            _create_schema(self._conn)
        except psycopg.Error as exc:
            self._conn.close()
            raise StoreError(f"cannot open knowledge base {self.uri}: {_one_line(exc)}") from None

    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        conn = psycopg.connect(self._dsn, autocommit=True, connect_timeout=10, application_name="synapsecrawl")
        try:
            conn.execute("SET TIME ZONE 'UTC'")
            conn.execute("SET client_min_messages = warning")
        except psycopg.Error:
            conn.close()
            raise
        return conn

    @contextmanager
    def _db(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """The connection, locked (reopened if the server dropped it); errors become StoreError."""
        try:
            with self._lock:
                if self._conn.closed or self._conn.broken:
                    self._conn = self._connect()
                yield self._conn
        except psycopg.Error as exc:
            raise StoreError(f"knowledge base {self.uri}: {_one_line(exc)}") from None

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """The connection, locked, inside one transaction; a failure rolls it back."""
        with self._db() as conn, conn.transaction():
            yield conn

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._db() as conn:
            return conn.execute(sql, params).fetchall()

    def _count(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        with self._db() as conn:
            return conn.execute(sql, params).rowcount

    # -- pages ----------------------------------------------------------------

    def put_page(self, page: PageRecord) -> None:
        """Insert or replace the page (kb, url) and its passages in one transaction."""
        values = tuple(_text(getattr(page, name)) for name in _PAGE_COLUMNS)
        updates = ", ".join(f"{c}=excluded.{c}" for c in _PAGE_COLUMNS[2:])
        upsert = (
            f"INSERT INTO pages ({_PAGE_SELECT}) VALUES ({', '.join(['%s'] * len(values))}) "  # noqa: S608 (fixed names)
            f"ON CONFLICT (kb, url) DO UPDATE SET {updates} RETURNING id"
        )
        passages = split_passages(page.snippet_text or page.text, page.title)
        with self._transaction() as conn:
            row = conn.execute(upsert, values).fetchone()
            assert row is not None
            conn.execute("DELETE FROM passages WHERE page_id=%s", (row[0],))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO passages (page_id, ordinal, text) VALUES (%s, %s, %s)",
                    [(row[0], ordinal, text) for ordinal, text in enumerate(passages)],
                )

    def get_page(self, kb: str, url: str) -> PageRecord | None:
        """The stored page, or None."""
        with self._db() as conn, conn.cursor(row_factory=dict_row) as cur:
            row = cur.execute(f"SELECT {_PAGE_SELECT} FROM pages WHERE kb=%s AND url=%s", (kb, url)).fetchone()  # noqa: S608
        return _record(row) if row else None

    def delete_page(self, kb: str, url: str) -> bool:
        """Remove a page with its passages and labels; True when there was one."""
        with self._transaction() as conn:
            conn.execute("DELETE FROM page_labels WHERE kb=%s AND url=%s", (kb, url))
            conn.execute("DELETE FROM link_labels WHERE kb=%s AND url=%s", (kb, url))
            return conn.execute("DELETE FROM pages WHERE kb=%s AND url=%s", (kb, url)).rowcount > 0

    def pages(self, kb: str | None = None) -> Iterator[PageRecord]:
        """Stored pages in URL order, of one KB or all."""
        sql = f"SELECT {_PAGE_SELECT} FROM pages"  # noqa: S608 (fixed names)
        params: tuple[Any, ...] = ()
        if kb is not None:
            sql += " WHERE kb=%s"
            params = (kb,)
        with self._db() as conn, conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(sql + " ORDER BY kb, url", params).fetchall()
        return (_record(row) for row in rows)

    def page_urls(self, kb: str | None = None, prefix: str = "") -> list[tuple[str, str]]:
        """(kb, url) of the stored pages, of one KB or all, whose URL starts with ``prefix``."""
        sql = "SELECT kb, url FROM pages WHERE starts_with(url, %s)"
        params: tuple[Any, ...] = (prefix,)
        if kb is not None:
            sql += " AND kb=%s"
            params += (kb,)
        return [(row[0], row[1]) for row in self._rows(sql + " ORDER BY kb, url", params)]

    # -- search ---------------------------------------------------------------

    def search(self, query: str, kb: str | None = None, limit: int = 10) -> list[SearchHit]:
        """Pages for ``query``, best first, each with its best passages (as ``kb.content.search``)."""
        terms = search_terms(query)
        if not terms or limit <= 0:
            return []
        with self._db() as conn:
            return self._search(conn, terms, kb, limit)

    def _search(
        self, conn: psycopg.Connection[tuple[Any, ...]], terms: list[str], kb: str | None, limit: int
    ) -> list[SearchHit]:
        either = " || ".join(["plainto_tsquery('english', %s)"] * len(terms))  # each word, any of them
        tsquery = conn.execute(f"SELECT ({either})::text", tuple(terms)).fetchone()
        if tsquery is None or not tsquery[0]:
            return []  # only words the configuration ignores
        match = str(tsquery[0])
        where = " AND pages.kb = %s" if kb is not None else ""
        scope: tuple[Any, ...] = (kb,) if kb is not None else ()
        score: dict[int, float] = defaultdict(float)
        for page_id, rank in conn.execute(
            f"SELECT id, ts_rank_cd(%s::float4[], fts, %s::tsquery, {_RANK_NORMALIZATION}) AS rank FROM pages "  # noqa: S608
            f"WHERE fts @@ %s::tsquery{where} ORDER BY rank DESC, id LIMIT %s",
            (_PAGE_WEIGHTS, match, match, *scope, _PAGE_CANDIDATES),
        ):
            score[page_id] += rank
        best: dict[int, list[tuple[int, int]]] = defaultdict(list)  # page -> (ordinal, passage id)
        for page_id, ordinal, passage_id, rank in conn.execute(
            "SELECT passages.page_id, passages.ordinal, passages.id, "  # noqa: S608
            f"ts_rank_cd(passages.fts, %s::tsquery, {_RANK_NORMALIZATION}) AS rank FROM passages "
            "JOIN pages ON pages.id = passages.page_id "
            f"WHERE passages.fts @@ %s::tsquery{where} ORDER BY rank DESC, passages.id LIMIT %s",
            (match, match, *scope, _PASSAGE_CANDIDATES),
        ):
            if len(best[page_id]) < _PASSAGES_PER_HIT:
                if not best[page_id]:
                    score[page_id] += rank
                best[page_id].append((ordinal, passage_id))
        chosen = sorted(score, key=lambda page_id: (-score[page_id], page_id))[:limit]
        return [self._hit(conn, page_id, score[page_id], best.get(page_id, []), match) for page_id in chosen]

    @staticmethod
    def _hit(
        conn: psycopg.Connection[tuple[Any, ...]], page_id: int, score: float, passages: list[tuple[int, int]],
        match: str,
    ) -> SearchHit:
        page = conn.execute(
            "SELECT url, kb, title, nosnippet, max_snippet FROM pages WHERE id=%s", (page_id,)
        ).fetchone()
        assert page is not None
        url, kb, title, nosnippet, max_snippet = page
        marked: dict[int, str] = {}
        if passages and not nosnippet:
            marked = dict(
                conn.execute(
                    "SELECT id, ts_headline('english', text, %s::tsquery, %s) FROM passages WHERE id = ANY(%s)",
                    (match, _HEADLINE, [passage_id for _, passage_id in passages]),
                ).fetchall()
            )
        snippet, shown = compose_snippet(
            url,
            [(ordinal, marked[passage_id]) for ordinal, passage_id in passages if passage_id in marked],
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

    # -- labels ---------------------------------------------------------------

    def put_labels(self, labels: LabelRecord) -> None:
        """Replace a page's labels (OMN-LABELS) and TDM policy (OMN-FETCH)."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO page_labels (kb, url, kind, tdm_reservation, tdm_policy, tdm_source) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (kb, url) DO UPDATE SET kind=excluded.kind, "
                "tdm_reservation=excluded.tdm_reservation, tdm_policy=excluded.tdm_policy, "
                "tdm_source=excluded.tdm_source",
                tuple(map(_text, (labels.kb, labels.url, labels.kind, labels.tdm_reservation, labels.tdm_policy,
                                  labels.tdm_source))),
            )
            conn.execute("DELETE FROM link_labels WHERE kb=%s AND url=%s", (labels.kb, labels.url))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO link_labels (kb, url, ordinal, target, context) VALUES (%s, %s, %s, %s, %s)",
                    [tuple(map(_text, (labels.kb, labels.url, n, target, context)))
                     for n, (target, context) in enumerate(labels.links)],
                )

    def get_labels(self, kb: str, url: str) -> LabelRecord | None:
        """A page's labels, or None."""
        with self._db() as conn:
            row = conn.execute(
                "SELECT kind, tdm_reservation, tdm_policy, tdm_source FROM page_labels WHERE kb=%s AND url=%s",
                (kb, url),
            ).fetchone()
            if row is None:
                return None
            links = conn.execute(
                "SELECT target, context FROM link_labels WHERE kb=%s AND url=%s ORDER BY ordinal", (kb, url)
            ).fetchall()
        return LabelRecord(kb, url, row[0], tuple((t, c) for t, c in links), row[1], row[2], row[3])

    # -- robots.txt copies and backoff state ----------------------------------

    def get_robots(self, profile: str, origin: str) -> RobotsCopy | None:
        """The stored robots.txt outcome for ``origin`` under ``profile``."""
        rows = self._rows(
            "SELECT origin, status, body, fetched_at FROM robots_cache WHERE profile=%s AND origin=%s",
            (profile, origin),
        )
        return RobotsCopy(rows[0][0], rows[0][1], bytes(rows[0][2]), rows[0][3]) if rows else None

    def put_robots(self, profile: str, copy: RobotsCopy) -> None:
        """Keep a robots.txt outcome for reuse within the profile's cache age."""
        self._count(
            "INSERT INTO robots_cache (profile, origin, status, body, fetched_at) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (profile, origin) DO UPDATE SET status=excluded.status, body=excluded.body, "
            "fetched_at=excluded.fetched_at",
            (profile, copy.origin, copy.status, copy.body, copy.fetched_at),
        )

    def get_site_state(self, profile: str, site: str) -> SiteState | None:
        """What ``profile`` remembers of ``site``, or None."""
        rows = self._rows(
            "SELECT site, paused_until, pause_reason, slow_streak, forbidden_streak FROM backoff_sites "
            "WHERE profile=%s AND site=%s",
            (profile, site),
        )
        return SiteState(*rows[0]) if rows else None

    def put_site_state(self, profile: str, state: SiteState) -> None:
        """Keep a site's pause and streaks."""
        self._count(
            "INSERT INTO backoff_sites (profile, site, paused_until, pause_reason, slow_streak, forbidden_streak) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (profile, site) DO UPDATE SET "
            "paused_until=excluded.paused_until, pause_reason=excluded.pause_reason, "
            "slow_streak=excluded.slow_streak, forbidden_streak=excluded.forbidden_streak",
            (profile, state.site, state.paused_until, state.pause_reason, state.slow_streak, state.forbidden_streak),
        )

    def get_url_hold(self, profile: str, url: str) -> UrlHold | None:
        """The hold on ``url`` under ``profile``, or None."""
        rows = self._rows(
            f"SELECT {_HOLD_COLUMNS} FROM backoff_urls WHERE profile=%s AND url=%s",  # noqa: S608 (fixed names)
            (profile, url),
        )
        return UrlHold(*rows[0]) if rows else None

    def put_url_hold(self, profile: str, hold: UrlHold) -> None:
        """Hold a URL (replacing an earlier hold on it)."""
        self._count(
            f"INSERT INTO backoff_urls (profile, {_HOLD_COLUMNS}) "  # noqa: S608 (fixed names)
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (profile, url) DO UPDATE SET "
            "kind=excluded.kind, until=excluded.until, reason=excluded.reason, site=excluded.site, "
            "kb=excluded.kb, failures=excluded.failures, recorded_at=excluded.recorded_at",
            (profile, hold.url, hold.kind, hold.until, hold.reason, hold.site, hold.kb, hold.failures,
             hold.recorded_at),
        )

    def delete_url_hold(self, profile: str, url: str) -> bool:
        """Release a URL; True when it was held."""
        return self._count("DELETE FROM backoff_urls WHERE profile=%s AND url=%s", (profile, url)) > 0

    def url_holds(self, profile: str, kind: str | None = None) -> list[UrlHold]:
        """The held URLs of ``profile`` (of one kind, or all), earliest ``until`` first."""
        sql = f"SELECT {_HOLD_COLUMNS} FROM backoff_urls WHERE profile=%s"  # noqa: S608 (fixed names)
        params: tuple[Any, ...] = (profile,)
        if kind is not None:
            sql += " AND kind=%s"
            params += (kind,)
        return [UrlHold(*row) for row in self._rows(sql + " ORDER BY until, url", params)]

    # -- sources --------------------------------------------------------------

    def put_source(self, source: Source) -> None:
        """Record a source (replacing the one with its id)."""
        updates = ", ".join(f"{c.strip()}=excluded.{c.strip()}" for c in _SOURCE_COLUMNS.split(",")[1:])
        self._count(
            f"INSERT INTO sources ({_SOURCE_COLUMNS}) VALUES ({', '.join(['%s'] * 13)}) "  # noqa: S608 (fixed names)
            f"ON CONFLICT (id) DO UPDATE SET {updates}",
            (source.id, source.mode, list(source.urls), source.kb, source.profile, source.deployment,
             source.depth, source.max_pages, source.interval, source.added_at, source.last_crawl,
             source.next_due, source.outcome),
        )

    def get_source(self, source_id: str) -> Source | None:
        """The source with ``source_id``, or None."""
        rows = self._rows(f"SELECT {_SOURCE_COLUMNS} FROM sources WHERE id=%s", (source_id,))  # noqa: S608
        return _source(rows[0]) if rows else None

    def sources(self, kb: str | None = None) -> list[Source]:
        """The sources of one KB or all, earliest due first."""
        sql = f"SELECT {_SOURCE_COLUMNS} FROM sources"  # noqa: S608 (fixed names)
        params: tuple[Any, ...] = ()
        if kb is not None:
            sql += " WHERE kb=%s"
            params = (kb,)
        return [_source(row) for row in self._rows(sql + " ORDER BY next_due, id", params)]

    def delete_source(self, source_id: str) -> bool:
        """Forget a source (its pages stay); True when there was one."""
        return self._count("DELETE FROM sources WHERE id=%s", (source_id,)) > 0

    # -- site icons (SER-ICON) -------------------------------------------------

    def put_site_icon(self, icon: SiteIcon) -> None:
        """Record the icon found for a site (replacing an earlier one)."""
        self._count(
            "INSERT INTO site_icons (origin, url, content_type, fetched_at) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (origin) DO UPDATE SET url=excluded.url, content_type=excluded.content_type, "
            "fetched_at=excluded.fetched_at",
            (icon.origin, icon.url, icon.content_type, icon.fetched_at),
        )

    def get_site_icon(self, origin: str) -> SiteIcon | None:
        """The icon recorded for ``origin``, or None."""
        rows = self._rows("SELECT origin, url, content_type, fetched_at FROM site_icons WHERE origin=%s", (origin,))
        return SiteIcon(*rows[0]) if rows else None

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()
