"""A source's next due on a large KB: every page's due read (before) against its first owned page (after).

    python -m bench.kbwrite_dues                       # 200,000 pages, SQLite and PostgreSQL
    python -m bench.kbwrite_dues --pages 1000000 --backends sqlite

Fills a new KB with pages of 100 hosts whose due times spread over 30 days (a web KB's rows; no text, which
neither read touches), then finds three sources' next due both ways: ``page_dues`` and the minimum over
the pages the source owns (what middlewares/engine/sources.py did), and ``earliest_due`` (what it does).
The sources: a web crawl's, owning every page; a site crawl's, owning one host (1 %); a page crawl's,
owning 3 URLs. Reported: wall ms of each (the best of three; an upper bound on a shared machine) and the
pages each asked its ``owns`` about. PostgreSQL is ``SYNAPSECRAWL_TEST_POSTGRES``, in a schema of its own.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from bench.pgwrite import drop_schema, schema_uri
from synapsecrawl.kb import open_store
from synapsecrawl.kb.store import Store

__all__ = ["main"]

_KB = "web"
_HOSTS = 100
_START = datetime(2026, 12, 1, tzinfo=UTC)
_SPREAD = 30 * 86400.0


def _rows(pages: int) -> list[tuple[str, str, str, float]]:
    """(kb, url, fetched_at, revisit_due) of ``pages`` pages, their due times spread evenly and shuffled."""
    step, fetched = _SPREAD / pages, _START.isoformat()
    due = _START.timestamp()
    return [
        (_KB, f"http://host{n % _HOSTS}.test/page/{n}", fetched, due + (n * 7919 % pages) * step) for n in range(pages)
    ]


def _fill_sqlite(path: Path, pages: int) -> str:
    uri = f"sqlite:///{path}"
    open_store(uri).close()
    with closing(sqlite3.connect(path)) as db, db:
        db.executemany("INSERT INTO pages (kb, url, fetched_at, revisit_due) VALUES (?, ?, ?, ?)", _rows(pages))
        db.execute("ANALYZE")
    return uri


def _fill_postgres(uri: str, pages: int) -> None:
    import psycopg

    open_store(uri).close()
    with psycopg.connect(uri, autocommit=True) as conn:
        with conn.cursor() as cursor, cursor.copy("COPY pages (kb, url, fetched_at, revisit_due) FROM STDIN") as copy:
            for row in _rows(pages):
                copy.write_row(row)
        conn.execute("ANALYZE pages")


def _best(work: Callable[[], object]) -> tuple[float, object]:
    times, result = [], None
    for _ in range(3):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return min(times) * 1000, result


class _Asked:
    """A source's ``owns``, counting the pages it is asked about."""

    def __init__(self, owns: Callable[[str], bool]) -> None:
        self.owns, self.count = owns, 0

    def __call__(self, url: str) -> bool:
        self.count += 1
        return self.owns(url)


def _measure(store: Store, label: str) -> None:
    sources: dict[str, Callable[[str], bool]] = {
        "web (all pages)": lambda url: True,
        "site (1 host)": lambda url: url.startswith("http://host7.test/"),
        "page (3 URLs)": {f"http://host{n % _HOSTS}.test/page/{n}" for n in (11, 2222, 33333)}.__contains__,
    }
    for name, owns in sources.items():
        before_ms, old = _best(
            lambda owns=owns: min(  # type: ignore[misc]
                (due for url, due in store.page_dues(_KB, 7 * 86400).items() if owns(url)), default=None
            )
        )
        asked = _Asked(owns)
        after_ms, new = _best(lambda asked=asked: store.earliest_due(_KB, 7 * 86400, asked))  # type: ignore[misc]
        assert old == new, (name, old, new)
        print(f"  {label:<10} {name:<16} page_dues {before_ms:9.1f} ms   earliest_due {after_ms:8.2f} ms"
              f"   pages asked about {asked.count // 3:,}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=200_000)
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args()
    print(f"A source's next due, a KB of {args.pages:,} pages on {_HOSTS} hosts")
    for backend in args.backends.split(","):
        if backend == "sqlite":
            with tempfile.TemporaryDirectory(prefix="bench-dues-") as tmp:
                store = open_store(_fill_sqlite(Path(tmp) / "kb.sqlite3", args.pages))
                try:
                    _measure(store, "SQLite")
                finally:
                    store.close()
        else:
            name, uri = schema_uri("dues")
            try:
                _fill_postgres(uri, args.pages)
                store = open_store(uri)
                try:
                    _measure(store, "PostgreSQL")
                finally:
                    store.close()
            finally:
                drop_schema(name)


if __name__ == "__main__":
    main()
