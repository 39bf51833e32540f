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
from synapsecrawl.kb.revisit import DAY, RevisitRule
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
        "put_pages",  # the 304's copy, timed by the crawl's revisit rule
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


class _Listener:
    """What the crawl is told of the KB's outages (the real one is middlewares.engine.kbhold)."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def kb_down(self, error: Any) -> None:
        self.said.append(f"down {error.reason}")

    def kb_up(self, lasted: float) -> None:
        self.said.append("up")

    def kb_gone(self) -> None:
        self.said.append("gone")

    def kb_replayed(self, pages: int) -> None:
        self.said.append(f"replayed {pages}")


async def test_a_full_disk_holds_pages_then_journals_past_the_buffer_and_writes_the_rest_when_room_is_made(
    tmp_path: Path,
) -> None:
    """SYN-MODES (what is fetched is kept): on a KB whose disk is full, the first page that fails makes
    one outage (told once) and probes; the next pages wait in memory up to KB_BUFFER_PAGES and the rest go
    to the journal; once room is made the waiting pages are stored and the outage is told over; the next
    gateway on the same KB writes the journal first."""
    import shutil

    from synapsecrawl.kb.journal import Journal, journal_path
    from tests.faults_env import small_disk

    with small_disk(tmp_path, 4096) as disk:
        journal = Journal(journal_path(tmp_path / "journal", "kb"))
        listener = _Listener()
        kb = CrawlKb(lambda: SQLiteStore(disk / "kb.sqlite3"), journal=journal, buffer_pages=2, batch_pages=1)
        kb.listener = listener
        await kb.keep(record("https://a.test/first", "kept before the disk filled"))
        ballast = disk / "ballast"
        ballast.write_bytes(b"\0" * shutil.disk_usage(disk).free)
        pages = [record(f"https://a.test/{n}", f"page {n} " + "words " * 2000) for n in range(5)]
        keeps = [asyncio.ensure_future(kb.keep(page)) for page in pages]
        await asyncio.sleep(1.0)
        assert listener.said == ["down full"] and kb.held == 2
        assert [keep.result() for keep in keeps if keep.done()] == ["journalled"] * 3
        ballast.unlink()
        assert await asyncio.wait_for(asyncio.gather(*[k for k in keeps if not k.done()]), 30) == ["stored"] * 2
        assert listener.said == ["down full", "up"]
        kb.close()
        again = CrawlKb(lambda: SQLiteStore(disk / "kb.sqlite3"), journal=journal)
        again.listener = listener
        assert len(await again.page_urls("docs")) == 6
        assert listener.said[-1] == "replayed 3"
        again.close()


async def test_an_outage_past_its_limit_journals_every_waiting_page_and_raises_for_the_rest(tmp_path: Path) -> None:
    """Past KB_OUTAGE_SECONDS the gateway stops waiting: every waiting page is journalled, other calls
    raise KbGone, and the crawl is told once (it closes as kb_unavailable)."""
    import shutil

    from middlewares.engine.kb import KbGone
    from synapsecrawl.kb.journal import Journal, journal_path
    from tests.faults_env import small_disk

    with small_disk(tmp_path, 4096) as disk:
        journal = Journal(journal_path(tmp_path / "journal", "kb"))
        listener = _Listener()
        kb = CrawlKb(lambda: SQLiteStore(disk / "kb.sqlite3"), journal=journal, outage_seconds=1.0, batch_pages=1)
        kb.listener = listener
        await kb.keep(record("https://a.test/first", "kept"))
        (disk / "ballast").write_bytes(b"\0" * shutil.disk_usage(disk).free)
        kept = await asyncio.wait_for(
            asyncio.gather(*(kb.keep(record(f"https://a.test/{n}", "words " * 2000)) for n in range(3))), 30
        )
        assert kept == ["journalled"] * 3 and listener.said == ["down full", "gone"]
        try:
            await kb.page("docs", "https://a.test/first")
        except KbGone:
            pass
        else:
            raise AssertionError("a call after the KB is gone must raise KbGone")
        assert len(list(journal.entries())) == 3
        kb.close()


async def test_the_crawls_writes_time_each_page_by_its_revisit_rule(tmp_path: Path) -> None:
    """A kept page is timed by the crawl's rule in its batch's transaction (new: the re-read interval), and a
    304's verification lengthens its interval (the same text); each on the gateway's writer thread."""
    rule = RevisitRule(7 * DAY, DAY, 30 * DAY)
    kb, _ = _gateway(tmp_path, revisit=rule)
    await kb.keep(record("http://a.test/1", "kettle", kb="kb1"))
    page = await kb.page("kb1", "http://a.test/1")
    assert page is not None and (page.revisit_outcome, page.revisit_interval) == ("new", 7 * DAY)
    await kb.verify("kb1", "http://a.test/1", '"v2"', "")
    page = await kb.page("kb1", "http://a.test/1")
    assert page is not None and page.verified_at is not None
    assert (page.revisit_outcome, page.revisit_interval) == ("unchanged", 10.5 * DAY)
    assert page.revisit_due == page.verified_at.timestamp() + 10.5 * DAY
    assert await kb.page_dues("kb1", rule.first) == {"http://a.test/1": page.revisit_due}
    kb.close()
