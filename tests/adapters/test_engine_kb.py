"""CrawlKb (middlewares.engine.kb): every store call of a crawl awaited off the loop, writes in order on one thread.

The store is a real SQLite file under tmp_path, subclassed only to note which thread each call ran on
and in what order the calls reached it.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from middlewares.engine.kb import CrawlKb
from synapsecrawl.kb.records import SiteIcon, UrlHold
from synapsecrawl.kb.sqlite import SQLiteStore
from tests.helpers import record


class NotingStore(SQLiteStore):
    """A real SQLite store that notes each call's name and thread."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.calls: list[tuple[str, threading.Thread]] = []

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if callable(value) and not name.startswith("_") and name != "close":

            def noted(*args: Any, **kwargs: Any) -> Any:
                super(NotingStore, self).__getattribute__("calls").append((name, threading.current_thread()))
                return value(*args, **kwargs)

            return noted
        return value


def _gateway(tmp_path: Path, **kw: Any) -> tuple[CrawlKb, list[NotingStore]]:
    opened: list[NotingStore] = []

    def opener() -> NotingStore:
        opened.append(NotingStore(tmp_path / "kb.sqlite3"))
        return opened[-1]

    return CrawlKb(opener, **kw), opened


async def test_every_call_runs_on_the_gateways_threads_never_the_loops(tmp_path: Path) -> None:
    """One KB gateway per crawl: every write runs on the gateway's writer thread and every read on its
    reader thread, in the order asked; neither is the event loop's thread, which only awaits."""
    kb, opened = _gateway(tmp_path, batch_pages=2, batch_seconds=0.05)
    loop_thread = threading.current_thread()
    await kb.keep(record("http://a.test/1", "kettle", kb="kb1"))
    assert await kb.page("kb1", "http://a.test/1") is not None
    await kb.hold("synapsebot", UrlHold("http://a.test/2", "deferred", 1.0, "500", "a.test", "kb1"))
    assert await kb.url_holds("synapsebot") != []
    await kb.put_site_icon(SiteIcon("http://a.test", "http://a.test/favicon.ico", "image/x-icon", 1.0))
    assert await kb.verify("kb1", "http://a.test/1", '"v2"', "") == ()
    assert await kb.delete("kb1", "http://a.test/1")
    [store] = opened
    names = [name for name, _ in store.calls]
    assert names == [
        "put_pages",
        "get_page",
        "put_url_hold",
        "url_holds",
        "put_site_icon",
        "get_page",
        "put_page",
        "put_pages",  # put_page's own
        "delete_page",
    ]
    writes = {"put_pages", "put_url_hold", "put_site_icon", "put_page", "delete_page"}
    assert {thread for name, thread in store.calls if name in writes} == {kb.thread}
    [reader] = {thread for _, thread in (store.calls[1], store.calls[3])}  # page(), url_holds()
    assert reader.name.startswith("kb-reader") and reader is not kb.thread
    assert store.calls[5] == ("get_page", kb.thread)  # verify() reads and writes in one turn of the writer
    assert loop_thread not in {thread for _, thread in store.calls}
    kb.close()


async def test_writes_reach_the_store_in_the_order_they_were_asked(tmp_path: Path) -> None:
    """One KB gateway per crawl: a page kept and then deleted stays deleted, though the keep waits in a
    batch gathered for seconds: the delete commits that batch first. A read asked meanwhile does not
    wait for the batch (it sees what was committed), so pages still share one transaction."""
    kb, opened = _gateway(tmp_path, batch_pages=3, batch_seconds=30)
    first = asyncio.ensure_future(kb.keep(record("http://a.test/1", "one", kb="kb1")))
    second = asyncio.ensure_future(kb.keep(record("http://a.test/2", "two", kb="kb1")))
    await asyncio.sleep(0)
    assert await kb.page("kb1", "http://a.test/1") is None  # a read: the batch is still gathering
    assert not first.done()
    assert await kb.delete("kb1", "http://a.test/1")  # a write: the batch is committed first
    await asyncio.gather(first, second)
    assert await kb.page_urls("kb1") == [("kb1", "http://a.test/2")]
    [store] = opened
    assert [name for name, _ in store.calls] == ["get_page", "put_pages", "delete_page", "page_urls"]
    kb.close()


async def test_close_commits_what_was_asked_and_a_later_call_opens_the_store_again(tmp_path: Path) -> None:
    """One KB gateway per crawl: close commits the batch still gathering, closes the store and stops
    the thread; a call after it opens the store again on a new thread."""
    kb, opened = _gateway(tmp_path, batch_pages=10, batch_seconds=30)
    kept = asyncio.ensure_future(kb.keep(record("http://a.test/1", "one", kb="kb1")))
    await asyncio.sleep(0)
    thread = kb.thread
    kb.close()
    await kept
    assert not thread.is_alive()
    assert await kb.page("kb1", "http://a.test/1") is not None
    assert len(opened) == 2 and kb.thread is not thread
    kb.close()


async def test_a_failed_call_raises_in_its_caller_and_the_next_one_runs(tmp_path: Path) -> None:
    """One KB gateway per crawl: a store call that raises is told to the coroutine that awaited it; the
    gateway's thread goes on with the next."""
    kb, _ = _gateway(tmp_path)

    def broken(store: Any) -> None:
        raise ValueError("no such thing")

    try:
        await kb.write(broken)
    except ValueError as exc:
        assert str(exc) == "no such thing"
    else:
        raise AssertionError("the failure was not told")
    assert await kb.page("kb1", "http://a.test/1") is None
    kb.close()
