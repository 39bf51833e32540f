"""Reads of a KB run side by side: a pool of read connections, no lock around a read.

Each test runs on SQLite and on PostgreSQL (a fresh schema, ``postgres_schema_uri``).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from synapsecrawl.kb import open_store
from synapsecrawl.kb.sqlite import SQLiteStore
from synapsecrawl.kb.store import Store
from tests.helpers import indexed_search, record


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    uri = (
        f"sqlite:///{tmp_path / 'kb.sqlite3'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("postgres_schema_uri"))
    )
    opened = open_store(uri)
    yield opened
    opened.close()


def test_two_threads_read_at_once(store: Store) -> None:
    """A search does not wait for another to end; two threads are inside a read transaction
    together (both reach a barrier from within one; behind one locked connection the second never
    could), and each reads the KB."""
    store.put_page(record("https://a.test/kettle", "The kettle boils water.", title="Kettle"))
    barrier = threading.Barrier(2, timeout=30)
    seen: list[int] = []
    failures: list[BaseException] = []

    def read() -> None:
        try:
            with store._reading() as db:  # type: ignore[attr-defined]
                barrier.wait()
                seen.append(len(db.execute("SELECT url FROM pages").fetchall()))
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures and seen == [1, 1]
    assert [hit.url for hit in indexed_search(store, "kettle")] == ["https://a.test/kettle"]


def test_listing_the_kbs_reads_no_page_text(tmp_path: Path) -> None:
    """`kbs()` (list_kbs) finds each KB's count and last fetch in an index that holds both (the (kb,
    fetched_at) one, or the (kb, revisit_due, fetched_at) one as SQLite chooses), never reading a page's row
    with its text."""
    store = SQLiteStore(tmp_path / "kb.sqlite3")
    try:
        store.put_page(record("https://a.test/", "words " * 1000, title="A"))
        assert [(name, count) for name, count, _ in store.kbs()] == [("docs", 1)]
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "kb.sqlite3") as db:
        plan = " ".join(
            str(row[-1])
            for row in db.execute(
                "EXPLAIN QUERY PLAN SELECT kb, COUNT(*), MAX(fetched_at) FROM pages GROUP BY kb ORDER BY kb"
            )
        )
    assert re.search(r"COVERING INDEX pages_kb_(fetched|due)\b", plan), plan
