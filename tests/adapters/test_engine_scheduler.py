"""The compact in-memory frontier queue: requests come back as they went in; when a site is due."""

from __future__ import annotations

import asyncio
from pathlib import Path
from time import monotonic

import pytest
import scrapy
from scrapy.utils.test import get_crawler

from middlewares.engine.downloader import PacedDownloader
from middlewares.engine.queues import CompactFifoQueue
from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.meta import SKIP_CRAWL_DELAY
from tests.adapters.crawlers import live_slot


class _Spider(scrapy.Spider):
    name = "t"

    def parse(self, response: object) -> None:
        pass

    def failed(self, failure: object) -> None:
        pass


def test_pending_requests_come_back_whole_and_in_order() -> None:
    """A request held as a compressed pickle comes back with its URL, callbacks, meta, headers, priority."""
    spider = _Spider()
    queue = CompactFifoQueue(spider)
    sent = [
        scrapy.Request(
            f"http://a.test/{n}.html",
            callback=spider.parse,
            errback=spider.failed,
            priority=-1,
            meta={"depth": 1},
            headers={"Referer": "http://a.test/"},
        )
        for n in range(3)
    ]
    sent.append(scrapy.Request("http://a.test/post", method="POST", body=b"q=1", dont_filter=True, flags=["x"]))
    for request in sent:
        queue.push(request)
    assert len(queue) == 4
    assert queue.peek().url == "http://a.test/0.html"  # type: ignore[union-attr]
    back = [queue.pop() for _ in range(4)]
    assert queue.pop() is None and len(queue) == 0
    for before, after in zip(sent, back, strict=True):
        assert after is not None
        assert (after.url, after.method, after.body, after.priority, after.dont_filter, after.flags) == (
            before.url,
            before.method,
            before.body,
            before.priority,
            before.dont_filter,
            before.flags,
        )
        assert after.meta == before.meta
        assert after.headers.get("Referer") == before.headers.get("Referer")
        assert after.callback == before.callback and after.errback == before.errback


def test_a_request_that_cannot_be_pickled_is_kept_as_it_is() -> None:
    """A callback that is not a spider method cannot be named in a pickle: the request itself waits."""
    queue = CompactFifoQueue(_Spider())
    request = scrapy.Request("http://a.test/", callback=lambda response: None)
    queue.push(request)
    assert queue.pop() is request


async def test_a_first_add_is_due_without_the_crawl_delay_but_not_without_a_pause(signing_key: Path) -> None:
    """SER-ROBOTS-FEEDS: a request flagged pacing_skip_crawl_delay (a feed's first add) is due
    right after robots.txt, where the site's other requests wait its Crawl-delay (20 s); a pause holds it
    like any other request."""
    crawler = get_crawler(settings_dict={"BOT_PROFILE": "serenereader", "SIGNING_KEY": str(signing_key)})
    downloader = PacedDownloader(crawler)
    await downloader.handlers._close()  # nothing is downloaded here
    pacer = Runtime.of(crawler).pacer
    first_add = scrapy.Request("http://feeds.test/feed.xml", meta={SKIP_CRAWL_DELAY: True})
    refresh = scrapy.Request("http://feeds.test/other.xml")
    site, slot = live_slot(downloader, refresh)
    pacer.set_crawl_delay(site, 20.0)
    downloader.refresh(site)
    slot.lastseen = sent = monotonic()  # robots.txt has just left
    assert downloader.due(site, request=refresh) == pytest.approx(sent + 20.0, abs=0.3)
    assert downloader.due(site) == downloader.due(site, request=refresh)
    assert downloader.due(site, request=first_add) == 0.0  # it waits the crawl's 1 s in its slot
    pacer.pause(site, until=sent + 300.0)
    assert downloader.due(site, request=first_add) == sent + 300.0


async def test_a_site_whose_request_left_wakes_the_engine_when_it_falls_due() -> None:
    """SYN-RATE: Scrapy's engine looks at its frontier again only once a response's items are done,
    and the KB acknowledges a page up to half a second after its download; so when a site's request
    leaves the downloader, the frontier sets its own wake for when the site falls due, and the next
    request goes out on time instead of with some other page's items."""
    from scrapy.core.engine import ExecutionEngine
    from scrapy.squeues import FifoMemoryQueue
    from scrapy.utils.defer import maybe_deferred_to_future

    from middlewares.engine.scheduler import PacedPriorityQueue
    from tests.adapters.crawlers import Held

    settings = {
        "BOT_PROFILE": "synapsebot",
        "DOWNLOADER": "middlewares.engine.downloader.PacedDownloader",
        "DOWNLOADER_MIDDLEWARES_BASE": {},
        "DOWNLOADER_MIDDLEWARES": {"tests.adapters.crawlers.Held": 1},
    }
    crawler = get_crawler(settings_dict=settings)
    crawler.engine = ExecutionEngine(crawler, lambda spider: None)
    downloader = crawler.engine.downloader
    assert isinstance(downloader, PacedDownloader)
    await downloader.handlers._close()  # nothing is downloaded here
    [held] = downloader.middleware.middlewares
    assert isinstance(held, Held)
    frontier = PacedPriorityQueue(crawler, FifoMemoryQueue, "")
    try:
        for path in ("/1", "/2"):
            frontier.push(scrapy.Request(f"http://a.test{path}"))
        first = frontier.pop()
        assert first is not None
        fetched = downloader.fetch(first)
        while not held.waiting:
            await asyncio.sleep(0)
        assert frontier.pop() is None  # its one request is in flight: not due
        assert frontier._wake is None  # nothing to wake for while it is
        held.answer(first.url)
        await maybe_deferred_to_future(fetched)
        due = downloader.due("a.test")
        assert due is not None
        assert frontier._wake is not None and frontier._wake_at == due
    finally:
        frontier.close()


class _HeldWire:
    """Stands in for the network behind the downloader's slots: each request handed over waits until the
    test answers it."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[None]] = {}

    async def download_request_async(self, request: scrapy.Request) -> scrapy.http.Response:
        self.waiting[request.url] = asyncio.get_running_loop().create_future()
        await self.waiting[request.url]
        return scrapy.http.Response(request.url, request=request)

    def answer(self, url: str) -> None:
        self.waiting[url].set_result(None)


@pytest.mark.parametrize("shared", [False, True], ids=["local-pacer", "redis-pacer"])
async def test_every_first_add_of_a_site_skips_its_crawl_delay_and_a_refresh_waits_it(
    shared: bool, signing_key: Path, request: pytest.FixtureRequest
) -> None:
    """SER-ROBOTS-FEEDS: two feeds of one host, neither fetched before, each skip the
    site's Crawl-delay (20 s): the second goes out once the first is answered, the profile's own spacing
    (1 s) after it, not 20 s later; a scheduled refresh of the same host, after them, is still held by
    the frontier until the Crawl-delay has passed. Same under the shared (Redis) pacer."""
    from scrapy.core.engine import ExecutionEngine
    from scrapy.squeues import FifoMemoryQueue
    from scrapy.utils.defer import maybe_deferred_to_future

    from middlewares.engine.scheduler import PacedPriorityQueue
    from tests.helpers import REDIS_URL

    settings: dict[str, object] = {
        "BOT_PROFILE": "serenereader",
        "SIGNING_KEY": str(signing_key),
        "DOWNLOADER": "middlewares.engine.downloader.PacedDownloader",
        "DOWNLOADER_MIDDLEWARES_BASE": {},
    }
    if shared:
        settings |= {"PACING_REDIS_URL": REDIS_URL, "PACING_REDIS_PREFIX": request.getfixturevalue("redis_prefix")}
    crawler = get_crawler(settings_dict=settings)
    crawler.engine = ExecutionEngine(crawler, lambda spider: None)
    downloader = crawler.engine.downloader
    assert isinstance(downloader, PacedDownloader)
    await downloader.handlers._close()  # nothing is downloaded here
    held = _HeldWire()
    downloader.handlers = held  # type: ignore[assignment]
    Runtime.of(crawler).pacer.set_crawl_delay("feeds.test", 20.0)  # as the site's robots.txt said
    frontier = PacedPriorityQueue(crawler, FifoMemoryQueue, "")
    firsts = [f"http://feeds.test/{n}.xml" for n in (1, 2)]
    try:
        for url in firsts:
            frontier.push(scrapy.Request(url, meta={SKIP_CRAWL_DELAY: True}))
        frontier.push(scrapy.Request("http://feeds.test/subscribed.xml"))  # a refresh
        sent: list[float] = []
        for url in firsts:
            popped = frontier.pop()  # before the fix: None for the second, its site due 20 s after the first
            assert popped is not None and popped.url == url
            fetched = downloader.fetch(popped)
            async with asyncio.timeout(10.0):  # well under the 20 s Crawl-delay
                while url not in held.waiting:
                    await asyncio.sleep(0.01)
            sent.append(monotonic())
            held.answer(url)
            await maybe_deferred_to_future(fetched)
        assert sent[1] - sent[0] >= 1.0 - 0.05  # the profile's own spacing still holds between them
        assert frontier.pop() is None  # the refresh waits for the Crawl-delay
        due = downloader.due("feeds.test")
        assert due is not None and due >= sent[1] + 20.0 - 0.1
    finally:
        frontier.close()
        if shared:
            await downloader._close_shared()
