"""``scrapy crawl worker -a crawl=NAME [-a stay=1]``: one worker of a crawl shared by many machines.

Every worker points at one Redis (``PACING_REDIS_URL``) and one PostgreSQL KB (``KB_URI``). The worker that leases a
source's start entry runs that mode's spider's ``start``; every request goes back to the shared frontier
(``middlewares.engine.shared_scheduler``), and the mode's spider reads each answer. A source's page limit is counted
in Redis (``take_page``). A lease ends once its answer is read and handed on, so a killed worker loses nothing. It
stops when no worker has anything pending or in flight, or waits on with ``-a stay=1``. More: docs/operations.md,
"One crawl shared by many workers", and docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import replace
from time import monotonic
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.http import Response
from twisted.python.failure import Failure

from middlewares.engine.exceptions import RetryScheduled, caught
from middlewares.engine.runtime import CrawlTarget, Runtime
from middlewares.engine.seam import engine_scheduler, scraper_done
from middlewares.engine.shared_scheduler import SharedScheduler, plain_meta, worker_name
from middlewares.engine.sources import record_sources
from spiders.base import SynapseSpider
from spiders.feed import FeedSpider
from spiders.page import PageSpider
from spiders.site import SiteSpider
from spiders.sitemap import SitemapSpider
from spiders.web import SharedWebSpider
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.crawl.meta import LEASE, ORIGIN
from synapsecrawl.crawl.request import CrawlRequest, WorkerRequest
from synapsecrawl.errors import ConfigError
from synapsecrawl.kb.removals import RemovalList
from synapsecrawl.shared.entries import BadEntry, Entry, FrontierUnreachable, Lease, Source, web_root

if TYPE_CHECKING:
    from synapsecrawl.shared.frontier import SharedFrontier

__all__ = ["WorkerSpider"]

logger = logging.getLogger(__name__)

_ALLOWANCE = 16  # pages of a source counted in one round trip while its limit is far
_START_BATCH = 200  # a source's start hands its requests to Redis this many at a time
START = "start"  # the callback of a source's start entry: run its mode's start()
# What an entry may name: the modes' callbacks and errbacks, nothing else of a spider.
_CALLBACKS = frozenset({START, "parse", "parse_sitemap", "parse_feed", "parse_article", "parse_icon"})
_ERRBACKS = frozenset({"", "page_failed", "sitemap_failed", "feed_failed", "article_failed", "icon_failed"})


class SharedSitemapSpider(SitemapSpider):
    """A sitemap's entries go to the shared frontier at once, as many as the source's pages left across
    workers (no backlog held in one worker's memory); what the limit leaves out counts as skipped."""

    name = ""  # not a spider of its own for Scrapy's loader (``scrapy crawl sitemap`` stays SitemapSpider)

    def _release(self) -> Any:
        worker = self.worker
        limit = int(self.limits.pages)
        spent = worker.pages_spent(self.source_id) if limit else 0
        count = len(self.backlog) if not limit else max(0, min(limit - spent, len(self.backlog)))
        for _ in range(count):
            yield scrapy.Request(
                self.backlog.popleft(), callback=self.parse, meta={KIND: RequestKind.PAGE.value, "depth_reset": True}
            )
        for url in self.backlog:
            self.runtime.summary.skip(self.runtime.site(url), "limit")
        self.backlog.clear()

    source_id: str
    worker: WorkerSpider


_MODES: dict[str, type[SynapseSpider]] = {
    "page": PageSpider,
    "site": SiteSpider,
    "sitemap": SharedSitemapSpider,
    "feed": FeedSpider,
    "web": SharedWebSpider,
}


class WorkerSpider(scrapy.Spider):
    name = "worker"
    # Scrapy declares custom_settings an instance attribute, so not a ClassVar here
    custom_settings = {"SCHEDULER": "middlewares.engine.shared_scheduler.SharedScheduler"}  # noqa: RUF012

    frontier: SharedFrontier
    runtime: Runtime
    worker: str

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> WorkerSpider:
        arguments = WorkerRequest.from_args(**kwargs)
        spider: WorkerSpider = super().from_crawler(crawler, *args)
        runtime = Runtime.of(crawler)
        pacer = runtime.shared_pacer
        if pacer is None:
            raise ConfigError("a shared crawl needs PACING_REDIS_URL (its frontier and pacer live in one Redis)")
        config = runtime.config
        spider.runtime = runtime
        spider.worker = worker_name()
        from synapsecrawl.shared.frontier import SharedFrontier  # Redis: imported by a worker only, not by every crawl

        spider.frontier = SharedFrontier(
            pacer.url,
            arguments.crawl,
            prefix=config.shared.frontier_prefix,
            pacer_prefix=pacer.prefix,
            concurrency=runtime.profile.concurrency,
            lease_seconds=config.lease_seconds,  # outlives the longest download, then frees a dead worker's
            delay=runtime.limits.delay,
            grant=runtime.profile.concurrency == 1,  # a lease holds its site's one place: the pacer's grant
        )
        try:
            runtime.started_at = spider.frontier.started_at()  # robots.txt fetched in this crawl: fresh
        except FrontierUnreachable as error:
            raise ConfigError(f"PACING_REDIS_URL {pacer.url!r} does not answer: {error}") from None
        runtime.shared_crawl = spider.frontier
        pacer.report_outages = False  # the scheduler says in one line that Redis does not answer, and when it does
        spider.limits = replace(runtime.limits, pages=0)  # each source's limit is counted in Redis
        runtime.target = CrawlTarget(
            name=spider.name,
            limits=spider.limits,
            take_page=spider.take_page,
            kb_of=spider.kb_of,
            listed=spider.listed,
        )
        spider.stay = arguments.stay
        spider._delegates = {}
        spider._ids = {}
        spider._drained_once = 0.0
        spider._tasks = set()
        spider._allowance = {}
        spider._room = {}
        crawler.signals.connect(spider._idle, signal=signals.spider_idle)
        logger.info(
            "worker %s joins crawl %s (lease %.0f s)", spider.worker, arguments.crawl, spider.frontier.lease_seconds
        )
        return spider

    stay: bool
    limits: Any
    _delegates: dict[str, SynapseSpider]
    _ids: dict[int, str]
    _drained_once: float
    _tasks: set[asyncio.Future[None]]
    _allowance: dict[str, int]  # source -> pages counted in Redis, not fetched yet
    _room: dict[str, int]  # source -> pages its limit had left at the last count

    async def start(self) -> AsyncIterator[Any]:
        return
        yield  # the work comes from the shared frontier

    # Sources: one spider of the source's mode, built once per worker.

    def delegate(self, source_id: str) -> SynapseSpider:
        spider = self._delegates.get(source_id)
        if spider is not None:
            return spider
        source = self.frontier.sources().get(source_id)
        if source is None:
            raise BadEntry(f"no source {source_id!r} in this crawl")
        spider = self._build(source)
        self._delegates[source_id] = spider
        self._ids[id(spider)] = source_id
        return spider

    def _build(self, source: Source) -> SynapseSpider:
        cls = _MODES[source.mode]
        spider = cls.__new__(cls)
        scrapy.Spider.__init__(spider, name=source.mode)  # the mode's name: its source is recorded under it
        spider.crawler, spider.settings = self.crawler, self.crawler.settings  # no signals: the worker's
        args = {k: v for k, v in (("depth", source.depth), ("max_pages", source.max_pages)) if v is not None}
        try:
            spider.crawl = CrawlRequest(source.urls, source.kb, source.depth, source.max_pages)
            spider.limits = self.runtime.config.limits_for(args)
        except ConfigError as error:
            raise BadEntry(f"source {source.id}: {error}") from None
        spider.runtime = self.runtime
        spider.requested = set()  # never re-read at one worker's idle: no source of the worker's target
        if isinstance(spider, SitemapSpider):
            spider.backlog = deque()
        if isinstance(spider, SharedSitemapSpider):
            spider.source_id, spider.worker = source.id, self
        if isinstance(spider, SharedWebSpider):  # the web crawl's seen-set and budgets are the crawl's, in Redis
            try:
                from synapsecrawl.pacing.redisclient import sync_redis  # a web source's own client

                client = sync_redis(self.frontier.url)
                sites = RemovalList.parse("\n".join(source.sites)) if source.sites is not None else None
                spider.prepare_shared(client, web_root(self.frontier.root), self.frontier.root, self.entry_for, sites)
            except ConfigError as error:
                raise BadEntry(f"source {source.id}: {error}") from None
        if isinstance(spider, FeedSpider):
            spider.prepare(self.crawler)
        return spider

    def kb_of(self, request: scrapy.Request) -> str | None:
        """The KB of the source a request was made for (its re-read asks that KB for a stored copy)."""
        source = (request.meta.get(ORIGIN) or {}).get("src")
        try:
            return self.delegate(str(source)).crawl.kb if source else None
        except BadEntry:
            return None

    def listed(self, request: scrapy.Request, url: str) -> bool:
        """Within the allow-list of the source ``request`` was made for (``crawl add --sites``), if any."""
        source = (request.meta.get(ORIGIN) or {}).get("src")
        try:
            return self.delegate(str(source)).listed(request, url) if source else True
        except BadEntry:
            return True  # a request of no known source has no list to keep to

    # Requests to and from the frontier.

    def entry_for(self, request: scrapy.Request) -> Entry | None:
        """``request`` as a frontier entry, or None when it cannot travel as JSON (kept in this worker)."""
        meta = plain_meta(request.meta)
        if meta is None:
            return None
        callback, errback = request.callback, request.errback
        if getattr(callback, "__self__", None) is self:
            origin = request.meta.get(ORIGIN) or {}
            source, cb, eb = origin.get("src"), origin.get("cb"), origin.get("eb", "")
        else:
            owner = getattr(callback, "__self__", None)
            source = self._ids.get(id(owner))
            cb = getattr(callback, "__name__", None)
            eb = getattr(errback, "__name__", "") if errback is not None else ""
            if errback is not None and getattr(errback, "__self__", None) is not owner:
                return None
        if not source or cb not in _CALLBACKS or eb not in _ERRBACKS:
            return None
        headers = tuple(
            (k.decode("latin-1"), v.decode("latin-1")) for k, values in request.headers.items() for v in values
        )
        return Entry(
            url=request.url,
            source=source,
            callback=cb,
            errback=eb,
            method=request.method,
            headers=headers,
            body=request.body,
            meta=meta,
            priority=request.priority,
            dont_filter=request.dont_filter,
        )

    def request_for(self, entry: Entry, lease: Lease) -> scrapy.Request | None:
        """The request of a leased entry (None for a start entry, run here); ``BadEntry`` if not ours."""
        if entry.callback not in _CALLBACKS or entry.errback not in _ERRBACKS:
            raise BadEntry(f"callback {entry.callback!r} is not one a shared crawl runs")
        delegate = self.delegate(entry.source)
        if entry.callback == START:
            self._spawn(self._start_source(delegate, lease))
            return None
        meta = dict(entry.meta)
        meta[ORIGIN] = {"src": entry.source, "cb": entry.callback, "eb": entry.errback}
        meta[LEASE] = [lease.site, lease.id]
        return scrapy.Request(
            entry.url,
            callback=self._dispatch,
            errback=self._dispatch_failed,
            method=entry.method,
            headers=list(entry.headers) or None,
            body=entry.body or None,
            meta=meta,
            priority=entry.priority,
            dont_filter=True,
        )

    async def _start_source(self, delegate: SynapseSpider, lease: Lease) -> None:
        scheduler = self._scheduler()
        count = 0
        try:
            async for request in delegate.start():
                scheduler.enqueue_request(request)
                count += 1
                if count % _START_BATCH == 0:  # leased by this worker and the others while the rest is read
                    scheduler.flush()
                    await asyncio.sleep(0)
        except Exception:  # one source's start failing must not stop the worker
            logger.exception("crawl: the start of source %s failed", self._ids.get(id(delegate)))
        logger.info(
            "crawl: source %s (%s %s) started: %d requests queued",
            self._ids.get(id(delegate)),
            delegate.name,
            delegate.crawl.urls[0],
            count,
        )
        fake = scrapy.Request("data:,", meta={LEASE: [lease.site, lease.id]})
        scheduler.done(fake)

    def _scheduler(self) -> SharedScheduler:
        scheduler = engine_scheduler(self.crawler)
        assert isinstance(scheduler, SharedScheduler)
        return scheduler

    # Answers: the source's own callbacks, then the lease ends.

    def _target(self, request: scrapy.Request, which: str) -> Any:
        origin = request.meta.get(ORIGIN) or {}
        name = origin.get(which) or ""
        if not name:
            return None
        return getattr(self.delegate(str(origin.get("src"))), name)

    async def _dispatch(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        request = response.request
        assert request is not None
        try:
            async for output in _outputs(self._target(request, "cb")(response)):
                yield output
        finally:
            self._finish_later(request)

    async def _dispatch_failed(self, failure: Failure) -> AsyncIterator[Any]:
        request = failure.request  # type: ignore[attr-defined]
        try:
            errback = self._target(request, "eb")
            if errback is not None:
                async for output in _outputs(errback(failure)):
                    yield output
        finally:
            if not caught(failure, RetryScheduled):  # the retry comes back with the same lease, ended then
                self._finish_later(request)

    def _finish_later(self, request: scrapy.Request) -> None:
        self._scheduler().answered(request)
        self._spawn(self._finish(request))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)  # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(self._tasks.discard)

    async def _finish(self, request: scrapy.Request) -> None:
        """End the lease once the scraper is done with the request: its items written, its links queued."""
        await scraper_done(self.crawler, request)
        self._scheduler().done(request)

    # The source's page limit, across workers.

    async def take_page(self, request: scrapy.Request) -> bool | None:
        """Count one page against its source's limit in Redis: True if it may be fetched, None if unlimited."""
        origin = request.meta.get(ORIGIN) or {}
        delegate = self._delegates.get(str(origin.get("src")))
        limit = int(delegate.limits.pages) if delegate is not None else 0
        if not limit:
            return None
        source = str(origin.get("src"))
        if self._allowance.get(source, 0) > 0:
            self._allowance[source] -= 1
            return True
        warned = False
        while True:
            try:
                # Counted a few at a time while the limit is far (one round trip per page was the largest
                # share of a page's Redis calls); one at a time near it, so no worker holds pages another
                # could fetch. What this worker counted and did not fetch is given back when it stops.
                wanted = max(1, min(_ALLOWANCE, self._room.get(source, 0) // (4 * _ALLOWANCE)))
                taken, spent = self.frontier.take_pages(source, limit, wanted)
                self._room[source] = limit - spent
                if taken > 1:
                    self._allowance[source] = self._allowance.get(source, 0) + taken - 1
                return taken > 0
            except FrontierUnreachable as error:
                if not warned:
                    logger.warning("frontier: Redis does not answer (%s): %s waits to be counted", error, request.url)
                    warned = True
                await asyncio.sleep(1.0)

    def pages_spent(self, source: str) -> int:
        try:
            return self.frontier.pages_spent(source)
        except FrontierUnreachable:
            return 0  # the budget middleware still refuses what is over the limit

    # The end.

    def _idle(self, **_: Any) -> None:
        if self.stay:
            raise DontCloseSpider("waiting for new work (-a stay=1)")
        try:
            drained = self.frontier.drained()
        except FrontierUnreachable:
            raise DontCloseSpider("Redis does not answer") from None
        if drained and self._refill_web():
            drained = False
        if not drained:
            self._drained_once = 0.0
            raise DontCloseSpider("other workers still hold requests of the crawl")
        now = monotonic()
        if not self._drained_once or now - self._drained_once < 1.0:
            self._drained_once = self._drained_once or now
            raise DontCloseSpider("drained once: checking again")

    def _refill_web(self) -> int:
        """URLs a web source kept waiting for a site whose stream ran dry with no page of it answered (a lease
        ended without its page read): queued now, so the crawl is not drained while they wait."""
        import redis  # as the web sources' own clients

        moved = 0
        for spider in self._delegates.values():
            if isinstance(spider, SharedWebSpider):
                try:
                    moved += spider.refill_all()
                except redis.RedisError as error:  # Redis gone: the drained check already said so, or will
                    logger.warning("web crawl: waiting URLs not looked at (%s)", error)
        return moved

    async def closed(self, reason: str) -> None:
        """Record each source this worker read, for ``recrawl`` (SYN-REREAD)."""
        for source, count in self._allowance.items():
            if count > 0:
                try:
                    self.frontier.untake_pages(source, count)
                except FrontierUnreachable as error:
                    logger.warning("frontier: %d pages of source %s counted, not fetched (%s)", count, source, error)
        self._allowance.clear()
        await record_sources(self.runtime, list(self._delegates.values()), reason)


async def _outputs(result: Any) -> AsyncIterator[Any]:
    """Whatever a Scrapy callback returned, as one async iterator."""
    if inspect.isawaitable(result):
        result = await result
    if result is None or isinstance(result, Failure):
        return  # an errback handing the failure on (a refused request): its middleware has said why, as in Scrapy
    if hasattr(result, "__aiter__"):
        async for output in result:
            yield output
        return
    for output in result:
        yield output
