"""What both knowledge-base back-ends share: rows into records, and a search's ranked pages into its results.

SQLite (``kb.sqlite``) and PostgreSQL (``kb.postgres``) keep the same tables
with the same columns. They differ in the placeholder (``?``, ``%s``) and in how a
few values are held (SQLite: ISO 8601 text, 0/1, URLs one a line; PostgreSQL:
timestamptz, boolean, text[], no NUL in text). ``SharedTables`` writes every Store
method whose SQL does not differ, once, over the back-end's connection;
``search_hit`` turns a page the index ranked (``search.index``, its ranks combined
by ``kb.search.rank_results``) and its row into a result.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, closing
from dataclasses import fields, replace
from datetime import datetime
from typing import Any, ClassVar

from synapsecrawl.kb import changes
from synapsecrawl.kb.records import LabelRecord, PageRecord, RobotsCopy, SearchHit, SiteIcon, SiteState, Source, UrlHold
from synapsecrawl.kb.revisit import RevisitRule, revisited
from synapsecrawl.kb.search import compose_snippet

__all__ = [
    "HIT_COLUMNS",
    "PAGE_COLUMNS",
    "SharedTables",
    "page_record",
    "search_hit",
]

PAGE_COLUMNS = (
    "kb", "url", "title", "text", "snippet_text", "content_type", "status", "fetched_at", "verified_at", "etag",
    "last_modified", "nosnippet", "max_snippet", "site", "language", "description", "image", "published", "feed",
    "depth", "outlinks", "revisit_interval", "revisit_due", "revisit_outcome",
)  # fmt: skip
# Kept as stored when a write gives none (a page written by no crawl: an import, a re-extraction).
_KEPT_WHEN_NONE = frozenset({"revisit_interval", "revisit_due", "revisit_outcome"})
HIT_COLUMNS = "url, kb, title, nosnippet, max_snippet, fetched_at"  # what ``search_hit`` reads of a page
_FIRST_READ, _MOST_READ = 64, 4096  # index entries ``earliest_due`` reads first, and at most at a time after


def _columns(record: type) -> tuple[str, ...]:
    """A table's columns are its record's fields, in order."""
    return tuple(field.name for field in fields(record))


def _values(record: Any) -> tuple[Any, ...]:
    return tuple(getattr(record, field.name) for field in fields(record))


def _when(value: str | datetime) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def page_record(row: Sequence[Any]) -> PageRecord:
    """The page in a row of ``PAGE_COLUMNS``, as either back-end holds it."""
    page = dict(zip(PAGE_COLUMNS, row, strict=True))
    page["fetched_at"] = _when(page["fetched_at"])
    page["verified_at"] = _when(page["verified_at"]) if page["verified_at"] else None
    page["nosnippet"] = bool(page["nosnippet"])
    page["outlinks"] = tuple(link for link in (page["outlinks"] or "").split("\n") if link)
    page["revisit_outcome"] = page["revisit_outcome"] or ""
    return PageRecord(**page)


def search_hit(
    page: Sequence[Any] | None,
    score: float,
    passages: list[tuple[int, int]],
    mark: Callable[[list[int]], dict[int, str]],
) -> SearchHit:
    """The result for ``page`` (a row of ``HIT_COLUMNS``); ``mark`` highlights passages by id."""
    assert page is not None
    url, kb, title, nosnippet, max_snippet, fetched_at = page
    marked = mark([passage_id for _, passage_id in passages]) if passages and not nosnippet else {}
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
        fetched_at=_when(fetched_at),
    )


class SharedTables(metaclass=ABCMeta):  # not ABC: zope.interface (under Twisted) breaks getattr on its subclasses
    """The Store methods both back-ends answer with the same SQL, over the back-end's connection."""

    _MARK: ClassVar[str]  # the driver's placeholder

    @abstractmethod
    def _connection(self) -> AbstractContextManager[Any]:
        """The connection, locked; the driver's errors become StoreError."""

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Any]:
        """The connection, locked, inside one transaction."""

    def _reading(self) -> AbstractContextManager[Any]:
        """A connection for reads only, locked, in one read transaction; by default the one connection."""
        return self._connection()

    @abstractmethod
    def _held(self, value: Any) -> Any:
        """``value`` as this database holds it."""

    @abstractmethod
    def _urls_held(self, urls: tuple[str, ...]) -> Any: ...

    @abstractmethod
    def _urls_read(self, held: Any) -> tuple[str, ...]: ...

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._reading() as db:
            return list(db.execute(sql, params).fetchall())

    def _count(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        with self._connection() as db:
            return int(db.execute(sql, params).rowcount)

    def _where(self, where: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
        """A WHERE clause of equal columns and its parameters; a None value matches any."""
        used = {column: value for column, value in where.items() if value is not None}
        clause = " AND ".join(f"{column}={self._MARK}" for column in used)
        return (f" WHERE {clause}" if used else ""), tuple(used.values())

    def _select(self, table: str, columns: Sequence[str], where: dict[str, Any], order: str = "") -> list[Any]:
        clause, params = self._where(where)
        order_by = f" ORDER BY {order}" if order else ""
        return self._rows(f"SELECT {', '.join(columns)} FROM {table}{clause}{order_by}", params)  # noqa: S608

    def _delete(self, table: str, where: dict[str, Any]) -> bool:
        clause, params = self._where(where)
        return self._count(f"DELETE FROM {table}{clause}", params) > 0  # noqa: S608 (fixed names)

    def _upsert_sql(self, table: str, columns: Sequence[str], key: Sequence[str]) -> str:
        def new(column: str) -> str:
            if table == "pages" and column in _KEPT_WHEN_NONE:
                return f"COALESCE(excluded.{column}, {table}.{column})"
            return f"excluded.{column}"

        updates = ", ".join(f"{column}={new(column)}" for column in columns if column not in key)
        return (
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join([self._MARK] * len(columns))}) "  # noqa: S608
            f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
        )

    def _upsert(self, table: str, columns: Sequence[str], key: Sequence[str], values: tuple[Any, ...]) -> None:
        self._count(self._upsert_sql(table, columns, key), values)

    # -- pages and labels ---------------------------------------------------------

    def get_page(self, kb: str, url: str) -> PageRecord | None:
        """The stored page, or None."""
        rows = self._select("pages", PAGE_COLUMNS, {"kb": kb, "url": url})
        return page_record(rows[0]) if rows else None

    def holds_pages_under(self, kb: str, prefix: str) -> bool:
        """Whether knowledge base ``kb`` holds a page whose URL starts with ``prefix``.

        One range of the (kb, url) index: URLs compare byte-wise in both back-ends (PostgreSQL's are
        COLLATE "C"), so those starting with ``prefix`` are the ones from it to the string just past it.
        """
        mark = self._MARK
        if not prefix or ord(prefix[-1]) == 0x10FFFF:  # no string just past it: any page of the KB answers
            return bool(self._rows(f"SELECT 1 FROM pages WHERE kb={mark} LIMIT 1", (kb,)))  # noqa: S608
        past = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        sql = f"SELECT 1 FROM pages WHERE kb={mark} AND url >= {mark} AND url < {mark} LIMIT 1"  # noqa: S608
        return bool(self._rows(sql, (kb, prefix, past)))

    def hit_rows(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], tuple[Any, ...]]:
        """The ``HIT_COLUMNS`` row of each (kb, url) in ``keys`` that the KB holds, by (kb, url): one read for
        a search's results (a lookup of the (kb, url) key per KB), never a page's text."""
        by_kb: dict[str, list[str]] = {}
        for kb, url in keys:
            by_kb.setdefault(kb, []).append(url)
        if not by_kb:
            return {}
        mark = self._MARK
        where = " OR ".join(f"(kb={mark} AND url IN ({', '.join([mark] * len(urls))}))" for urls in by_kb.values())
        params = tuple(value for kb, urls in by_kb.items() for value in (kb, *urls))
        rows = self._rows(f"SELECT {HIT_COLUMNS} FROM pages WHERE {where}", params)  # noqa: S608 (fixed names)
        return {(str(row[1]), str(row[0])): tuple(row) for row in rows}

    def search_changes(self, after: int, limit: int) -> list[tuple[int, str, str]]:
        """(seq, kb, url) of the pages changed after ``after`` in the search change log (kb.changes), in order."""
        mark = self._MARK
        sql = f"SELECT seq, kb, url FROM search_changes WHERE seq > {mark} ORDER BY seq LIMIT {mark}"  # noqa: S608
        return [(int(row[0]), str(row[1]), str(row[2])) for row in self._rows(sql, (after, limit))]

    def trim_search_changes(self, follower: str, seq: int, now: float) -> int:
        """Record that index ``follower`` applied the search change log up to ``seq``, and delete the rows
        every follower heard from in the last ``FOLLOWER_DAYS`` days has applied, the newest of them kept (an
        index checks that the row of its seq is this KB's); the number of rows deleted (kb.changes)."""
        mark = self._MARK
        with self._transaction() as db:
            db.execute(self._upsert_sql(changes.FOLLOWERS, ("name", "seq", "seen"), ("name",)), (follower, seq, now))
            expired = now - changes.FOLLOWER_DAYS * 86400
            sql = f"DELETE FROM search_followers WHERE name <> {mark} AND seen < {mark}"  # noqa: S608 (fixed names)
            db.execute(sql, (changes.TRIMMED, expired))
            sql = f"SELECT MIN(seq) FROM search_followers WHERE name <> {mark}"  # noqa: S608 (fixed names)
            row = db.execute(sql, (changes.TRIMMED,)).fetchone()
            horizon = int(row[0]) if row and row[0] is not None else 0
            sql = f"DELETE FROM search_changes WHERE seq < {mark}"  # noqa: S608 (fixed names)
            deleted = int(db.execute(sql, (horizon,)).rowcount)
            if deleted:
                trimmed = self._trimmed(db)
                db.execute(
                    self._upsert_sql(changes.FOLLOWERS, ("name", "seq", "seen"), ("name",)),
                    (changes.TRIMMED, max(trimmed, horizon), now),
                )
        return deleted

    def search_changes_trimmed(self) -> int:
        """The seq below which rows of the search change log were deleted (0: none ever were)."""
        with self._reading() as db:
            return self._trimmed(db)

    def _trimmed(self, db: Any) -> int:
        sql = f"SELECT seq FROM search_followers WHERE name = {self._MARK}"  # noqa: S608 (fixed names)
        row = db.execute(sql, (changes.TRIMMED,)).fetchone()
        return int(row[0]) if row else 0

    def last_search_change(self) -> int:
        """The seq of the search change log's last row (0 when empty)."""
        rows = self._rows("SELECT COALESCE(MAX(seq), 0) FROM search_changes")
        return int(rows[0][0]) if rows else 0

    def pages(self, kb: str | None = None) -> Iterator[PageRecord]:
        """Stored pages in URL order, of one KB or all."""
        return (page_record(row) for row in self._select("pages", PAGE_COLUMNS, {"kb": kb}, "kb, url"))

    def kbs(self) -> list[tuple[str, int, datetime]]:
        """(name, pages, last fetched_at) of each knowledge base that holds a page, by name."""
        rows = self._rows("SELECT kb, COUNT(*), MAX(fetched_at) FROM pages GROUP BY kb ORDER BY kb")
        return [(row[0], int(row[1]), _when(row[2])) for row in rows]

    def page_depths(self, kb: str) -> dict[str, int | None]:
        """URL -> the link depth a site crawl found it at (None: unknown), of one KB's stored pages."""
        return {row[0]: row[1] for row in self._select("pages", ("url", "depth"), {"kb": kb})}

    def _page_values(self, page: PageRecord) -> tuple[Any, ...]:
        """The row of ``page``; its outlinks one a line in both back-ends (a URL holds no newline); no
        revisit outcome is NULL, so the stored one stays."""
        links = "\n".join(link for link in page.outlinks if "\n" not in link)
        held = {"outlinks": links, "revisit_outcome": page.revisit_outcome or None}
        return tuple(self._held(held[c] if c in held else getattr(page, c)) for c in PAGE_COLUMNS)

    def _revisited(self, db: Any, pages: Sequence[PageRecord], rule: RevisitRule | None) -> list[PageRecord]:
        """``pages`` with their revisit times (kb.revisit), judged against the copies they replace, read in
        the write's own transaction (``db``); as given when there is no rule (a write by no crawl)."""
        if rule is None:
            return list(pages)
        stored: dict[tuple[str, str], tuple[tuple[str, str], float | None]] = {}
        for kb in dict.fromkeys(page.kb for page in pages):  # one query a KB for the batch, not one a page
            urls = list(dict.fromkeys(page.url for page in pages if page.kb == kb))
            marks = ", ".join([self._MARK] * len(urls))
            sql = f"SELECT url, title, text, revisit_interval FROM pages WHERE kb={self._MARK} AND url IN ({marks})"  # noqa: S608
            for url, title, text, interval in db.execute(sql, (kb, *urls)).fetchall():
                stored[(kb, url)] = ((title, text), interval)
        timed = []
        for page in pages:
            key = (page.kb, page.url)
            before = stored.get(key)
            held = replace(page, title=self._held(page.title), text=self._held(page.text))  # as the KB holds it
            held = revisited(held, before[0] if before else None, before[1] if before else None, rule)
            timed.append(held)
            stored[key] = ((held.title, held.text), held.revisit_interval)  # the same page twice in one batch
        return timed

    def page_dues(self, kb: str, first: float) -> dict[str, float]:
        """URL -> when each stored page of ``kb`` is due again (kb.revisit.due_of; ``first``: the profile's
        re-read interval, for a page stored before the KB kept due times)."""
        columns = ("url", "revisit_due", "fetched_at", "verified_at")
        dues = {}
        for url, due, fetched, verified in self._select("pages", columns, {"kb": kb}):
            if due is not None:
                dues[url] = float(due)
                continue
            seen = _when(fetched).timestamp()
            dues[url] = max(seen, _when(verified).timestamp() if verified else seen) + first
        return dues

    def earliest_due(self, kb: str, first: float, owns: Callable[[str], bool]) -> float | None:
        """When the first due of the stored pages of ``kb`` that ``owns`` accepts is due (kb.revisit.due_of;
        ``first``: the profile's re-read interval), None when it accepts none.

        Ownership is the spider's (scopes, an allow-list), not SQL's, so the pages are read in due order off
        the (kb, revisit_due, fetched_at) index, a few first and more at a time after, up to the first one
        ``owns`` accepts: a source that owns most of its KB (a web crawl's) reads a few index entries, not the
        KB. Pages stored before the KB kept due times (no ``revisit_due``) are due ``first`` after their last
        fetch or 304: read in fetch order, up to the first that cannot be due before the earliest found.
        """
        best: float | None = None
        for due, _, _, url in self._walk(kb, "IS NOT NULL", "revisit_due, fetched_at, id", "url"):
            if owns(url):
                best = float(due)
                break
        for fetched, _, url, verified in self._walk(kb, "IS NULL", "fetched_at, id", "url, verified_at"):
            seen = _when(fetched).timestamp()
            if best is not None and seen + first >= best:
                break  # read in fetch order: no later page is due sooner
            if owns(url):
                due = max(seen, _when(verified).timestamp() if verified else seen) + first
                best = due if best is None else min(best, due)
        return best

    def _walk(self, kb: str, due: str, order: str, columns: str) -> Iterator[Sequence[Any]]:
        """The pages of ``kb`` whose revisit_due is ``due`` (SQL: IS NULL, IS NOT NULL), as rows of the
        ``order`` columns then ``columns``, in that order, read a few first and more at a time after (each
        read a range of the (kb, revisit_due, fetched_at) index, after the last row read)."""
        mark, keys = self._MARK, order.split(", ")
        select = f"SELECT {order}, {columns} FROM pages WHERE kb={mark} AND revisit_due {due}"  # noqa: S608
        after = f" AND ({order}) > ({', '.join([mark] * len(keys))})"
        size, last = _FIRST_READ, None
        while True:
            where = select if last is None else select + after
            rows = self._rows(f"{where} ORDER BY {order} LIMIT {mark}", (kb, *(last or ()), size))
            yield from rows
            if len(rows) < size:
                return
            last = tuple(rows[-1][: len(keys)])
            size = min(size * 4, _MOST_READ)

    def put_labels(self, labels: LabelRecord) -> None:
        """Replace a page's labels (OMN-LABELS) and TDM policy (OMN-FETCH)."""
        page = ("kb", "url", "kind", "tdm_reservation", "tdm_policy", "tdm_source")
        links = ("kb", "url", "ordinal", "target", "context")
        clause, key = self._where({"kb": labels.kb, "url": labels.url})
        with self._transaction() as db, closing(db.cursor()) as cursor:
            db.execute(
                self._upsert_sql("page_labels", page, ("kb", "url")),
                tuple(self._held(getattr(labels, column)) for column in page),
            )
            db.execute(f"DELETE FROM link_labels{clause}", key)  # noqa: S608 (fixed names)
            cursor.executemany(
                f"INSERT INTO link_labels ({', '.join(links)}) VALUES ({', '.join([self._MARK] * len(links))})",  # noqa: S608
                [
                    tuple(map(self._held, (labels.kb, labels.url, n, target, context)))
                    for n, (target, context) in enumerate(labels.links)
                ],
            )

    def get_labels(self, kb: str, url: str) -> LabelRecord | None:
        """A page's labels, or None."""
        clause, key = self._where({"kb": kb, "url": url})
        with self._reading() as db:
            row = db.execute(
                f"SELECT kind, tdm_reservation, tdm_policy, tdm_source FROM page_labels{clause}",  # noqa: S608
                key,
            ).fetchone()
            if row is None:
                return None
            links = db.execute(f"SELECT target, context FROM link_labels{clause} ORDER BY ordinal", key).fetchall()  # noqa: S608
        return LabelRecord(kb, url, row[0], tuple((t, c) for t, c in links), row[1], row[2], row[3])

    # -- robots.txt copies and backoff state ----------------------------------------

    def get_robots(self, profile: str, origin: str) -> RobotsCopy | None:
        """The stored robots.txt outcome for ``origin`` under ``profile``."""
        rows = self._select("robots_cache", _columns(RobotsCopy), {"profile": profile, "origin": origin})
        return RobotsCopy(rows[0][0], rows[0][1], bytes(rows[0][2]), *rows[0][3:]) if rows else None

    def put_robots(self, profile: str, copy: RobotsCopy) -> None:
        """Keep a robots.txt outcome for reuse within the profile's cache age."""
        self._upsert(
            "robots_cache", ("profile", *_columns(RobotsCopy)), ("profile", "origin"), (profile, *_values(copy))
        )

    def get_site_state(self, profile: str, site: str) -> SiteState | None:
        """What ``profile`` remembers of ``site``, or None."""
        rows = self._select("backoff_sites", _columns(SiteState), {"profile": profile, "site": site})
        return SiteState(*rows[0]) if rows else None

    def put_site_state(self, profile: str, state: SiteState) -> None:
        """Keep a site's pause and streaks."""
        self._upsert(
            "backoff_sites", ("profile", *_columns(SiteState)), ("profile", "site"), (profile, *_values(state))
        )

    def get_url_hold(self, profile: str, url: str) -> UrlHold | None:
        """The hold on ``url`` under ``profile``, or None."""
        rows = self._select("backoff_urls", _columns(UrlHold), {"profile": profile, "url": url})
        return UrlHold(*rows[0]) if rows else None

    def put_url_hold(self, profile: str, hold: UrlHold) -> None:
        """Hold a URL (replacing an earlier hold on it)."""
        self._upsert("backoff_urls", ("profile", *_columns(UrlHold)), ("profile", "url"), (profile, *_values(hold)))

    def delete_url_hold(self, profile: str, url: str) -> bool:
        """Release a URL; True when it was held."""
        return self._delete("backoff_urls", {"profile": profile, "url": url})

    def url_holds(self, profile: str, kind: str | None = None) -> list[UrlHold]:
        """The held URLs of ``profile`` (of one kind, or all), earliest ``until`` first."""
        rows = self._select("backoff_urls", _columns(UrlHold), {"profile": profile, "kind": kind}, "until, url")
        return [UrlHold(*row) for row in rows]

    # -- sources and site icons -----------------------------------------------------

    def _source(self, row: Sequence[Any]) -> Source:
        return Source(row[0], row[1], self._urls_read(row[2]), *row[3:])

    def put_source(self, source: Source) -> None:
        """Record a source (replacing the one with its id)."""
        values = _values(source)
        self._upsert("sources", _columns(Source), ("id",), (*values[:2], self._urls_held(source.urls), *values[3:]))

    def get_source(self, source_id: str) -> Source | None:
        """The source with ``source_id``, or None."""
        rows = self._select("sources", _columns(Source), {"id": source_id})
        return self._source(rows[0]) if rows else None

    def sources(self, kb: str | None = None) -> list[Source]:
        """The sources of one KB or all, earliest due first."""
        return [self._source(row) for row in self._select("sources", _columns(Source), {"kb": kb}, "next_due, id")]

    def delete_source(self, source_id: str) -> bool:
        """Forget a source (its pages stay); True when there was one."""
        return self._delete("sources", {"id": source_id})

    def put_site_icon(self, icon: SiteIcon) -> None:
        """Record the icon found for a site (SER-ICON), replacing an earlier one."""
        self._upsert("site_icons", _columns(SiteIcon), ("origin",), _values(icon))

    def get_site_icon(self, origin: str) -> SiteIcon | None:
        """The icon recorded for ``origin``, or None."""
        rows = self._select("site_icons", _columns(SiteIcon), {"origin": origin})
        return SiteIcon(*rows[0]) if rows else None
