"""The source a crawl reads, kept in the KB: held while it runs, re-read at idle, recorded when it closes.

``SourceExtension`` (EXTENSIONS) acts on signals, as Scrapy's own extensions do,
for the spider in ``runtime.target.source`` (none, and it is off: an on-demand
crawl, or a shared crawl's worker, which records its sources with ``record_sources``):
spider_opened and every ``HOLD_RENEWAL`` after, the source is recorded RUNNING,
so a killed crawl is due again soon (SYN-REREAD); request_scheduled notes each
URL asked for; at the first spider_idle the source's stored and deferred pages
the crawl has not reached are requested (SYN-REREAD), under a revisit rule that adapts only
those whose own due time has come (``synapsecrawl.kb.revisit``); spider_closed records the
source and when it is due again (``REREAD_DAYS``, or its first page's due time under such a
rule); engine_stopped marks a ``JOBDIR`` closed. Every store call goes through ``runtime.kb``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, NotConfigured

from middlewares.engine.kb import KbGone
from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.jobdir import mark_closed
from synapsecrawl.kb.reread import FINISHED_REASONS, HOLD_RENEWAL, RUNNING, record_crawl, run_start, source_id
from synapsecrawl.kb.revisit import source_due
from synapsecrawl.urls import canonical

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from synapsecrawl.crawl.request import CrawlRequest
    from synapsecrawl.kb.records import Source
    from synapsecrawl.kb.store import Store
    from synapsecrawl.profiles import Limits

__all__ = ["SourceExtension", "SourceSpider", "record_sources"]

logger = logging.getLogger(__name__)


class SourceSpider(Protocol):
    """What the extension reads of a spider whose source is recorded (spiders.base.SynapseSpider)."""

    name: str
    crawl: CrawlRequest
    limits: Limits
    requested: set[str]  # canonical URLs the crawl asked for, or will not re-read on purpose

    def owns(self, url: str) -> bool: ...
    def page_request(self, url: str, *, meta: dict[str, Any] | None = None) -> Request: ...
    def revisit_ready(self) -> bool: ...


def _ident(spider: SourceSpider, runtime: Runtime) -> str:
    profile = runtime.profile
    return source_id(spider.name, spider.crawl.urls, spider.crawl.kb, profile.name, profile.deployment)


def _record(spider: SourceSpider, runtime: Runtime, store: Store, reason: str, run_started: float = 0.0) -> Source:
    """The source ``spider`` reads, as a crawl of it ending (or running) for ``reason`` leaves it."""
    profile = runtime.profile
    return record_crawl(
        store.get_source(_ident(spider, runtime)),
        mode=spider.name,
        urls=spider.crawl.urls,
        kb=spider.crawl.kb,
        profile=profile.name,
        deployment=profile.deployment,
        depth=spider.crawl.depth,
        max_pages=spider.crawl.max_pages,
        interval=runtime.config.operations.reread_interval,
        reason=reason,
        now=time.time(),
        run_started=run_started,
    )


async def record_sources(runtime: Runtime, spiders: Sequence[SourceSpider], reason: str) -> list[Source]:
    """Record the source each of ``spiders`` read and when it is due again (SYN-REREAD), in one turn of
    the KB's thread; a URL deferred by a long Retry-After brings the next run forward, so it is not lost."""

    def record(store: Store) -> list[tuple[SourceSpider, Source]]:
        recorded = []
        deferred = store.url_holds(runtime.profile.name, "deferred")
        for spider in spiders:
            try:
                source = _record(spider, runtime, store, reason, _begun(runtime))
                source = _by_pages(source, spider, runtime, store, reason)
                waits = [hold.until for hold in deferred if hold.kb == spider.crawl.kb and spider.owns(hold.url)]
                if waits and min(waits) < source.next_due:
                    source = replace(source, next_due=max(min(waits), time.time()))
                store.put_source(source)
            except Exception:  # one source's record must not hide the others
                logger.exception("crawl: recording the source of %s %s failed", spider.name, spider.crawl.urls[:1])
                continue
            recorded.append((spider, source))
        return recorded

    recorded = await runtime.kb.write(record)
    for spider, source in recorded:
        logger.info(
            "source %s (%s %s, kb %s): next re-read due %s",
            source.id,
            spider.name,
            spider.crawl.urls[0],
            spider.crawl.kb,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(source.next_due)),
        )
    return [source for _, source in recorded]


def _by_pages(source: Source, spider: SourceSpider, runtime: Runtime, store: Store, reason: str) -> Source:
    """A source whose crawl ran its course is due again when its first stored page is (kb.revisit), under a
    rule that adapts; a fixed rule keeps the source's interval."""
    rule = runtime.kb.revisit
    if rule is None or not rule.adaptive or reason not in FINISHED_REASONS:
        return source
    earliest = store.earliest_due(spider.crawl.kb, rule.first, spider.owns)  # read in due order up to it
    return replace(source, next_due=source_due(earliest, now=time.time(), rule=rule, interval=source.interval))


def _begun(runtime: Runtime) -> float:
    """When the source's current run began, once known (0.0 before, or when its record failed)."""
    begun = runtime.run_begun
    return begun.result() if begun is not None and begun.done() else 0.0


def _started_or_zero(done: asyncio.Future[Any]) -> float:
    return 0.0 if done.cancelled() or done.exception() is not None else float(done.result())


class SourceExtension:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._revisit: asyncio.Future[None] | None = None
        self._held_at = -HOLD_RENEWAL  # time.monotonic() of the last renewal of the source's RUNNING record
        self._tasks: set[asyncio.Future[Any]] = set()
        crawler.signals.connect(self._opened, signal=signals.spider_opened)
        crawler.signals.connect(self._scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(self._idle, signal=signals.spider_idle)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)
        crawler.signals.connect(self._jobdir_closed, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SourceExtension:
        runtime = Runtime.of(crawler)
        if runtime.target.source is None:  # the spider, built before the extensions, has said so
            raise NotConfigured("the spider records no source (an on-demand crawl, a shared crawl's worker)")
        return cls(crawler, runtime)

    @property
    def _spider(self) -> SourceSpider | None:
        return self._runtime.target.source

    def _opened(self, **_: Any) -> None:
        spider = self._spider
        if spider is not None:
            # Before any request: whether this crawl continues an unfinished run of its source
            begun = self._runtime.run_begun = asyncio.get_running_loop().create_future()
            runtime = self._runtime

            def begin(store: Store) -> float:
                started = run_start(store.get_source(_ident(spider, runtime)), time.time())
                store.put_source(_record(spider, runtime, store, RUNNING, started))
                return started

            self._held_at = time.monotonic()
            task = self._spawn(runtime.kb.write(begin))
            task.add_done_callback(lambda done: begun.set_result(_started_or_zero(done)))

    def _scheduled(self, request: Request, **_: Any) -> None:
        spider = self._spider
        if spider is not None:
            spider.requested.add(canonical(request.url))
            self._hold()

    def _idle(self, **_: Any) -> None:
        spider = self._spider
        if spider is None:
            return
        self._hold()
        if not spider.revisit_ready():  # the sitemap spider releases its backlog first
            return
        if self._revisit is None:
            self._revisit = self._spawn(self._revisit_stored(spider))
        if not self._revisit.done():
            raise DontCloseSpider("looking up the source's stored pages")

    def _hold(self) -> None:
        """Record the source as RUNNING, renewed every few minutes while the crawl runs: if the crawl is killed
        (and never closes), the source is due again within the hour, not after its interval (SYN-REREAD)."""
        spider = self._spider
        if spider is None or time.monotonic() - self._held_at < HOLD_RENEWAL:
            return
        self._held_at = time.monotonic()
        runtime = self._runtime
        started = _begun(runtime)
        self._spawn(runtime.kb.write(lambda store: store.put_source(_record(spider, runtime, store, RUNNING, started))))

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
        task: asyncio.Future[Any] = asyncio.ensure_future(work)
        self._tasks.add(task)  # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled() or task.exception() is None or isinstance(task.exception(), KbGone):
            return  # the KB stayed down: its own line said so, and the source is not recorded as finished
        logger.error("crawl: a source's record or re-read failed: %s", task.exception())

    async def _revisit_stored(self, spider: SourceSpider) -> None:
        """Request the source's stored pages this crawl has not reached, and its deferred ones now due."""
        runtime = self._runtime
        depths = await runtime.kb.page_depths(spider.crawl.kb)
        holds = await runtime.kb.url_holds(runtime.profile.name, "deferred")
        stored = [url for url in sorted(depths) if spider.owns(url)]
        rule = runtime.kb.revisit
        if rule is not None and rule.adaptive:  # only the pages whose own due time has come (kb.revisit)
            dues = await runtime.kb.page_dues(spider.crawl.kb, rule.first)
            now = time.time()
            waiting = {url for url in stored if dues.get(url, now) > now}
            for url in waiting:
                spider.requested.add(canonical(url))
            stored = [url for url in stored if url not in waiting]
        # URLs an earlier crawl deferred (a long Retry-After) are picked up once their wait is over.
        now = time.time()
        deferred = [h.url for h in holds if h.kb == spider.crawl.kb and h.until <= now and spider.owns(h.url)]
        unreached = [url for url in dict.fromkeys(stored + deferred) if canonical(url) not in spider.requested]
        if not unreached:
            return
        logger.info("re-reading %d stored or deferred pages of this source not reached by this crawl", len(unreached))
        assert self._crawler.engine is not None and self._crawler.stats is not None
        self._crawler.stats.set_value("reread/revisited", len(unreached))
        self._crawler.stats.set_value("backoff/deferred_picked_up", len([u for u in deferred if u in unreached]))
        for url in unreached:
            # At the depth a site crawl found it, so a changed page's new links are followed (SYN-REREAD: a
            # new page appears only on a page that changed); of unknown depth, none of its links are.
            depth = depths.get(url)
            meta = {"depth": spider.limits.depth if depth is None else depth}
            self._crawler.engine.crawl(spider.page_request(url, meta=meta))

    async def _closed(self, reason: str, **_: Any) -> None:
        """Record the source this crawl read and when it is due again (SYN-REREAD)."""
        spider = self._spider
        if spider is None:
            return
        stats = self._crawler.stats.get_stats() if self._crawler.stats else {}
        removed = sum(v for k, v in stats.items() if k.startswith("reread/removed/"))
        unchanged, not_due = stats.get("reread/unchanged", 0), stats.get("reread/not_due", 0)
        if unchanged or removed or not_due:
            waiting = f", {not_due} not due yet (not asked for)" if not_due else ""
            logger.info("re-read: %d pages unchanged (304), %d removed%s", unchanged, removed, waiting)
        try:
            await record_sources(self._runtime, [spider], reason)
        except KbGone:  # left RUNNING: the next crawl continues this run (kb.reread.run_start)
            logger.warning("source not recorded: the knowledge base stayed unavailable")

    def _jobdir_closed(self, **_: Any) -> None:
        """Scrapy has saved the job state in JOBDIR, whatever the close reason: a next run may trust it."""
        jobdir = self._crawler.settings.get("JOBDIR")
        if jobdir:
            mark_closed(Path(jobdir))
