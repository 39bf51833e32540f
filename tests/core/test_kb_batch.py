"""BatchWriter (synapsecrawl.kb.batch): pages written in batches, acknowledged only once committed."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest

from synapsecrawl.errors import StoreError
from synapsecrawl.kb.batch import BatchWriter
from synapsecrawl.kb.sqlite import SQLiteStore
from tests.helpers import indexed_search, record


def test_a_record_is_acknowledged_only_once_its_batch_is_committed(tmp_path: Path) -> None:
    """A submitted page's future stays pending while its batch is being written, and is done
    only after the transaction committed: then a second connection to the file sees the page."""
    store = SQLiteStore(tmp_path / "kb.sqlite3")
    entered, release = threading.Event(), threading.Event()

    def write(pages: list) -> None:
        entered.set()
        assert release.wait(10)
        store.put_pages(pages)

    writer = BatchWriter(write, max_items=1, max_wait=0)
    done = writer.submit(record("http://a.test/1", "kettle"))
    assert entered.wait(10)
    assert not done.done()
    release.set()
    done.result(timeout=10)
    reader = SQLiteStore(tmp_path / "kb.sqlite3")
    assert reader.get_page("docs", "http://a.test/1") is not None
    writer.close()
    reader.close()
    store.close()


def test_records_arriving_together_share_one_transaction(tmp_path: Path) -> None:
    """Records submitted within max_wait of the first go out in batches of at most
    max_items, one write (one transaction) each, and all of them are stored."""
    store = SQLiteStore(tmp_path / "kb.sqlite3")
    sizes: list[int] = []

    def write(pages: list) -> None:
        sizes.append(len(pages))
        store.put_pages(pages)

    writer = BatchWriter(write, max_items=10, max_wait=30)  # a batch goes out when full, long before 30 s
    futures = [writer.submit(record(f"http://a.test/{i}", f"kettle {i}")) for i in range(25)]
    for future in futures[:20]:
        future.result(timeout=10)
    writer.close()  # the last 5: committed on close, without waiting out max_wait
    assert all(future.done() and future.exception() is None for future in futures)
    assert sizes == [10, 10, 5] and writer.batches == 3
    assert len(list(store.pages("docs"))) == 25
    store.close()


def test_a_refused_record_fails_alone_and_its_batch_is_kept(tmp_path: Path) -> None:
    """Bad input loses nothing: when a batch's transaction fails, its records are written
    again one by one, so only the refused one fails (its submitter is told why) and the rest are stored."""
    store = SQLiteStore(tmp_path / "kb.sqlite3")
    writer = BatchWriter(store.put_pages, max_items=3, max_wait=30)
    good = [writer.submit(record(f"http://a.test/{i}", f"kettle {i}")) for i in (1, 2)]
    bad = writer.submit(replace(record("http://a.test/bad", "kettle"), kb=cast(str, None)))  # kb is NOT NULL
    with pytest.raises(StoreError):
        bad.result(timeout=10)
    for future in good:
        future.result(timeout=10)
    writer.close()
    assert [url for _, url in store.page_urls()] == ["http://a.test/1", "http://a.test/2"]
    store.close()


def test_a_closed_writer_refuses_records() -> None:
    """A record submitted after close would never be written: it is refused at once."""
    writer: BatchWriter[int] = BatchWriter(lambda batch: None)
    writer.close()
    with pytest.raises(RuntimeError):
        writer.submit(1)


def _made_by_older_code(tmp_path: Path, script: str) -> Path:
    """A KB file as older code left it: made by today's, then ``script`` run on it."""
    path = tmp_path / "kb.sqlite3"
    SQLiteStore(path).close()
    with closing(sqlite3.connect(path)) as old:
        old.executescript(script)
    return path


def test_pages_are_written_once_also_in_a_kb_made_by_older_code(tmp_path: Path) -> None:
    """#38: a KB file made by older code has a passages table with a trigger per passage row (into the FTS5
    table passages_fts, since dropped); opened again both are dropped, so writing, rewriting and deleting a
    page touches no passage, and search (through the index) answers from the pages."""
    path = _made_by_older_code(
        tmp_path,
        "CREATE TABLE passages (id INTEGER PRIMARY KEY, page_id INTEGER NOT NULL, ordinal INTEGER NOT NULL, "
        "text TEXT NOT NULL, UNIQUE (page_id, ordinal)); "
        "CREATE TRIGGER passages_ai AFTER INSERT ON passages BEGIN "
        "INSERT INTO passages_fts(rowid, text) VALUES (new.id, new.text); END;",
    )
    store = SQLiteStore(path)
    store.put_pages([record(f"http://a.test/{i}", f"Kettle {i} boils.\n\nTeapot {i} pours.") for i in range(5)])
    store.put_page(record("http://a.test/1", "Samovar one steams.\n\nNothing else."))
    assert store.delete_page("docs", "http://a.test/2")
    store.close()
    with closing(sqlite3.connect(path)) as db:
        left = db.execute("SELECT name FROM sqlite_master WHERE name IN ('passages_ai', 'passages')").fetchall()
    assert left == []
    reopened = SQLiteStore(path)
    assert [hit.url for hit in indexed_search(reopened, "samovar")] == ["http://a.test/1"]
    assert sorted(hit.url for hit in indexed_search(reopened, "teapot")) == [f"http://a.test/{i}" for i in (0, 3, 4)]
    reopened.close()


def _written(path: Path) -> tuple[list[tuple[int, str, str, str]], int]:
    """(id, url, title, text) of the pages, and the rows of the search change log (what the index re-reads)."""
    with closing(sqlite3.connect(path)) as db:
        pages = list(db.execute("SELECT id, url, title, text FROM pages ORDER BY id"))
        return pages, db.execute("SELECT count(*) FROM search_changes").fetchone()[0]


def test_a_page_written_again_unchanged_is_not_indexed_again_also_in_a_kb_made_by_older_code(tmp_path: Path) -> None:
    """SYN-REREAD: a page is indexed again only when its title or text changed. A KB file made by older code
    has a trigger that re-indexed every write (into pages_fts, since dropped); opened again it is gone. Pages
    written unchanged keep their rows and leave nothing for the index to re-read; changed and deleted ones are
    re-read."""
    path = _made_by_older_code(
        tmp_path,
        "CREATE TRIGGER pages_au AFTER UPDATE ON pages BEGIN "
        "INSERT INTO pages_fts(pages_fts, rowid, title, text) VALUES ('delete', old.id, old.title, old.text); "
        "INSERT INTO pages_fts(rowid, title, text) VALUES (new.id, new.title, new.text); END;",
    )
    store = SQLiteStore(path)
    pages = [record(f"http://a.test/{i}", f"Kettle {i} boils.\n\nTeapot {i} pours.") for i in range(4)]
    store.put_pages(pages)
    rows, logged = _written(path)
    store.put_pages([replace(page, etag='"again"') for page in pages])  # a re-read: the same text
    assert _written(path) == (rows, logged)
    assert all(store.get_page("docs", page.url).etag == '"again"' for page in pages)  # type: ignore[union-attr]
    store.put_page(replace(pages[1], text="Samovar one steams."))
    assert store.delete_page("docs", "http://a.test/2")
    assert _written(path)[1] == logged + 3  # the changed page under its old and its new key, the deleted one
    store.close()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT 1 FROM sqlite_master WHERE name='pages_au'").fetchone() is None
    reopened = SQLiteStore(path)
    assert [hit.url for hit in indexed_search(reopened, "samovar")] == ["http://a.test/1"]
    assert sorted(hit.url for hit in indexed_search(reopened, "teapot")) == ["http://a.test/0", "http://a.test/3"]
    reopened.close()


def test_calls_run_on_the_writer_thread_in_order_with_the_records(tmp_path: Path) -> None:
    """One KB gateway per crawl: a call commits the batch gathered before it, then runs, on the writer's
    one thread, so a write never overtakes a record submitted before it."""
    store = SQLiteStore(tmp_path / "kb.sqlite3")
    order: list[str] = []

    def write(pages: list) -> None:
        order.append(f"batch of {len(pages)}")
        store.put_pages(pages)

    writer = BatchWriter(write, max_items=10, max_wait=30)
    first = writer.submit(record("http://a.test/1", "one"))
    second = writer.submit(record("http://a.test/2", "two"))
    deleted = writer.call(lambda: (order.append("delete"), store.delete_page("docs", "http://a.test/1"))[1])
    assert deleted.result(timeout=10) is True and first.done() and second.done()
    thread = writer.call(threading.current_thread).result(timeout=10)
    assert thread is writer.thread and thread is not threading.current_thread()
    writer.close()
    assert order == ["batch of 2", "delete"]
    store.close()
