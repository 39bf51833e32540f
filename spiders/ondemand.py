"""``scrapy crawl ondemand [-a kb=NAME] [-s ONDEMAND_PORT=8765]``: fetch pages agents ask for (SNA-ONDEMAND).

A crawl that never ends by itself: it serves POST /api/web_fetch and the MCP
tool web_fetch (``synapsecrawl.search.ondemand``) from inside the running
crawler, so each page asked for is one ``scrapy.Request`` through the same
middlewares (robots.txt, pacing, address guard, type gate, size cap at the
profile's ``ondemand_size_bytes``, backoff, signing) and the same pipeline
into the KB. A stored copy younger than the profile's ``ondemand_min_refetch``
is answered without a request. Ctrl-C (SIGINT) or SIGTERM stops it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet.error import TimeoutError as TwistedTimeoutError
from twisted.python.failure import Failure

from middlewares.engine.exceptions import Unchanged
from spiders.base import SynapseSpider
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.crawl.ondemand import (
    FetchError,
    RecentFetches,
    check_arguments,
    check_fetch_url,
    check_serving,
    is_fresh,
    page_address,
    shape_page,
)
from synapsecrawl.crawl.request import CrawlRequest
from synapsecrawl.kb.indexing import record_from_item
from synapsecrawl.kb.records import PageRecord, utcnow
from synapsecrawl.profiles import Limits
from synapsecrawl.search.api import SearchService

if TYPE_CHECKING:
    from synapsecrawl.search.ondemand import OndemandServer

__all__ = ["OndemandSpider"]

logger = logging.getLogger(__name__)


class OndemandSpider(SynapseSpider):
    name = "ondemand"
    records_source = False  # no source to hold or re-read: pages come as agents ask for them

    server: OndemandServer
    recent: RecentFetches
    wait_seconds: float
    url_limit: int
    _pending: dict[int, tuple[str, asyncio.Future[dict[str, Any]]]]
    _inflight: dict[str, asyncio.Future[dict[str, Any]]]
    _serving: bool

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> OndemandSpider:
        from synapsecrawl.search.ondemand import OndemandServer  # the MCP SDK: loaded only by this spider

        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, OndemandSpider)
        profile, serving = spider.runtime.profile, spider.runtime.config.serving
        host = serving.host
        port = check_serving(profile, host, serving.port)
        search = SearchService(spider.runtime.kb_uri, profile)  # search what the agents' fetches stored
        spider.server = OndemandServer(
            spider.web_fetch, host=host, port=port, name=f"{profile.token} web_fetch", search=search
        )
        spider.recent = RecentFetches(profile.ondemand_min_refetch)
        spider.wait_seconds = serving.wait
        spider.url_limit = crawler.settings.getint("URLLENGTH_LIMIT")
        spider._pending, spider._inflight, spider._serving = {}, {}, False
        spider._keys = itertools.count()
        spider._tasks = set()
        crawler.signals.connect(spider._stay_open, signal=signals.spider_idle)
        crawler.signals.connect(spider._scraped, signal=signals.item_scraped)
        crawler.signals.connect(spider._dropped, signal=signals.item_dropped)
        crawler.signals.connect(spider._item_error, signal=signals.item_error)
        crawler.signals.connect(spider._spider_error, signal=signals.spider_error)
        crawler.signals.connect(spider._stop_serving, signal=signals.spider_closed)
        return spider

    _keys: Iterator[int]
    _tasks: set[asyncio.Future[None]]

    def read_arguments(self, kwargs: dict[str, Any]) -> tuple[CrawlRequest, Limits]:
        """No start URLs, only the KB the agents' pages go to (``-a kb``); the operator's limits."""
        return CrawlRequest((), check_arguments(**kwargs)), self.runtime.limits

    async def start(self) -> AsyncIterator[Any]:
        await self.server.start()
        self._serving = True
        return
        yield

    # -- serving -----------------------------------------------------------------

    async def web_fetch(self, url: object) -> dict[str, Any]:
        """The page at ``url`` as an agent sees it; raises FetchError."""
        asked = check_fetch_url(url, self.url_limit)
        if not self._serving:
            raise FetchError("unavailable", "the on-demand fetcher is shutting down")
        profile = self.runtime.profile
        target = page_address(asked)  # `a#x`, `a#y` and `HTTP://A` are one page, fetched once
        remembered = self.recent.recall(target, time.monotonic())
        if isinstance(remembered, FetchError):
            raise remembered
        for candidate in dict.fromkeys(u for u in (remembered, target, asked) if u):
            record = await self.runtime.kb.page(self.crawl.kb, candidate)
            if record is not None and is_fresh(record, utcnow(), profile.ondemand_min_refetch):
                self._stat("ondemand/from_index")
                return self._shape(record, asked, from_index=True)
        future = self._inflight.get(target) or self._schedule(target)
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), timeout=self.wait_seconds)
        except TimeoutError:
            raise FetchError("timeout", f"no answer for {asked} within {self.wait_seconds:g} s") from None
        return {**answer, "requested_url": asked}

    def _schedule(self, url: str) -> asyncio.Future[dict[str, Any]]:
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # an answer nobody waits for is fine
        key = next(self._keys)
        self._pending[key] = (url, future)
        self._inflight[url] = future
        assert self.crawler.engine is not None
        self._stat("ondemand/requested")
        self.crawler.engine.crawl(
            scrapy.Request(
                url,
                callback=self._parse_page,
                errback=self._failed,
                dont_filter=True,
                # no immediate retry: a page is fetched again no sooner than ondemand_min_refetch (SNA-ONDEMAND)
                meta={
                    KIND: RequestKind.PAGE.value,
                    "depth": 0,
                    "ondemand_key": key,
                    "size_limit_bytes": self.runtime.profile.ondemand_size_bytes,
                    "max_retry_times": 0,
                },
            )
        )
        return future

    def _finish(self, key: object, outcome: dict[str, Any] | FetchError, stored_url: str = "") -> None:
        if not isinstance(key, int) or key not in self._pending:
            return
        url, future = self._pending.pop(key)
        if self._inflight.get(url) is future:
            del self._inflight[url]
        self.recent.note(url, outcome if isinstance(outcome, FetchError) else stored_url, time.monotonic())
        if future.done():
            return
        if isinstance(outcome, FetchError):
            self._stat(f"ondemand/error/{outcome.code}")
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    def _shape(
        self, record: PageRecord, asked: str, *, from_index: bool, truncated: bool | None = None
    ) -> dict[str, Any]:
        return shape_page(
            record,
            requested_url=asked,
            from_index=from_index,
            truncated=truncated,
            scrub_description=self.runtime.profile.scrub_personal_data,
        )

    def _stat(self, key: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key)

    # -- the crawl's answers -----------------------------------------------------

    async def _parse_page(self, response: Response) -> AsyncIterator[Any]:
        page = await self.read(response)
        kept = await self.keep(response, page)
        items = [kept] if kept is not None else []
        if page is None:
            self._finish(
                response.meta.get("ondemand_key"),
                FetchError("unreadable", f"the page could not be read: {response.url}"),
            )
        elif not items:
            self._finish(
                response.meta.get("ondemand_key"),
                FetchError("noindex", f"the page asks not to be indexed (noindex): {response.url}"),
            )
        for item in items:
            yield item

    def _scraped(self, item: Any, response: Response | None = None, **_: Any) -> None:
        if response is None:
            return
        key = response.meta.get("ondemand_key")
        pending = self._pending.get(key) if isinstance(key, int) else None
        if pending is None:
            return
        record = record_from_item(item)
        shaped = self._shape(record, pending[0], from_index=False, truncated="truncated" in response.flags)
        self._finish(key, shaped, stored_url=record.url)

    def _dropped(
        self, item: Any, response: Response | None = None, exception: Exception | None = None, **_: Any
    ) -> None:
        if response is not None:
            self._finish(response.meta.get("ondemand_key"), FetchError("refused", f"not kept: {exception}"))

    def _item_error(
        self, item: Any, response: Response | None = None, failure: Failure | None = None, **_: Any
    ) -> None:
        if response is not None:
            self._finish(response.meta.get("ondemand_key"), FetchError("unavailable", "the page could not be stored"))

    def _spider_error(self, failure: Failure, response: Response | None = None, **_: Any) -> None:
        if response is not None:
            self._finish(response.meta.get("ondemand_key"), FetchError("unavailable", "the page could not be read"))

    def _failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        if request is None:
            return
        key = request.meta.get("ondemand_key")
        pending = self._pending.get(key) if isinstance(key, int) else None
        exc = failure.value or Exception("failed")
        if pending is not None and isinstance(exc, Unchanged):  # a 304: the stored copy is current, now verified
            task = asyncio.ensure_future(self._finish_unchanged(key, pending[0], request, exc))
            self._tasks.add(task)  # held until done: the loop keeps only weak references to tasks
            task.add_done_callback(self._tasks.discard)
            return
        self._finish(key, _fetch_error(request, exc))

    async def _finish_unchanged(self, key: int, asked: str, request: scrapy.Request, exc: BaseException) -> None:
        record = await self.runtime.kb.page(self.crawl.kb, request.url)
        if record is not None:
            self._finish(key, self._shape(record, asked, from_index=True), stored_url=record.url)
            return
        self._finish(key, _fetch_error(request, exc))

    def _stay_open(self) -> None:
        if self._serving:
            raise DontCloseSpider("serving on-demand fetches")

    async def _stop_serving(self) -> None:
        self._serving = False
        for key in list(self._pending):
            self._finish(key, FetchError("unavailable", "the on-demand fetcher stopped"))
        await self.server.stop()

    def closed(self, reason: str) -> None:
        """Nothing to record: on-demand pages belong to no source that is re-read."""
        logger.info("on-demand fetcher stopped (%s)", reason)


def _fetch_error(request: scrapy.Request, exc: BaseException) -> FetchError:
    """The FetchError a crawl failure of ``request`` means for the agent who asked."""
    message = str(exc) or type(exc).__name__
    meta = request.meta
    if isinstance(exc, HttpError):
        message = f"{request.url} answered {exc.response.status}"
    elif isinstance(exc, TwistedTimeoutError | TimeoutError):
        message = f"{request.url} did not answer in time"
    codes = (
        # robots.txt unreadable (not "parsed"): SNA-ROBOTS, nothing is fetched until it can be read
        (meta.get("robots_disallowed") and meta.get("robots_outcome") == "parsed", "robots_disallowed"),
        (meta.get("robots_disallowed"), "robots_unavailable"),
        (meta.get("gate_refused_type"), "type_refused"),
        (meta.get("reread_noindex"), "noindex"),  # a 304 whose X-Robots-Tag now says noindex
        ("ALLOW_PRIVATE_ADDRESSES" in message, "address_refused"),
        (isinstance(exc, HttpError), "http_status"),
        (isinstance(exc, IgnoreRequest), "refused"),
        (isinstance(exc, TwistedTimeoutError | TimeoutError), "timeout"),
    )
    code = next((code for matched, code in codes if matched), "unreachable")
    return FetchError(code, message if code != "unreachable" else f"{request.url}: {message}")
