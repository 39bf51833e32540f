"""What every synapsecrawl spider shares: arguments in, Page out, item or links.

Spiders turn their ``-a`` strings into one ``CrawlRequest`` and the limits
that apply, read each response with ``synapsecrawl.extract``, and yield an
item for a page the KB keeps. Scope (which links a mode follows) is theirs.

Every crawl is also a re-read of its source (SYN-REREAD): once the crawl
falls idle, the stored pages of the source it has not reached are requested
too, at the link depth a site crawl found them (a changed page's new links are
followed; a page of unknown depth has none followed), so a page no longer
linked is still checked and a page added to the site is found; a page now
marked noindex leaves the KB (SYN-REMOVE, YOT-DIRECTIVES). Each stored page
keeps the links it lets a crawl follow, so a page answering 304 still leads a
site crawl on (``page_failed``): a crawl killed half-way finishes when run again.
When the crawl closes, the source is recorded with the time its next re-read
is due, as a last crawl only if it ran its course (``reread.record_crawl``). Validators and the other removals are
``middlewares.reread``'s.

Every page request has ``page_failed`` as its errback: a download that got no
usable answer is one line naming the URL and the reason, counted in the
summary by kind (``middlewares.failures``), and a stored copy stays as it is
(SYN-REMOVE: only 404/410, noindex or a new Disallow remove a page).

One file because it is the one base class of every spider, with the re-read and failure handling
each crawl ends with.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from twisted.python.failure import Failure
from w3lib.encoding import http_content_type_encoding

from middlewares.engine.runtime import Runtime
from middlewares.exceptions import Unchanged, caught
from middlewares.failures import describe, quiet_dataloss_hint
from synapsecrawl.crawl.jobdir import mark_closed
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.crawl.request import CrawlRequest, taking_turns
from synapsecrawl.crawl.scope import in_any
from synapsecrawl.extract.page import Page
from synapsecrawl.kb.indexing import make_item
from synapsecrawl.kb.records import Source
from synapsecrawl.kb.reread import HOLD_RENEWAL, RUNNING, record_crawl, source_id
from synapsecrawl.profiles import Limits
from synapsecrawl.urls import canonical

__all__ = ["SynapseSpider"]

logger = logging.getLogger(__name__)


class SynapseSpider(scrapy.Spider):
    """Base of the page, site, sitemap and feed spiders."""

    crawl: CrawlRequest
    limits: Limits
    runtime: Runtime

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SynapseSpider:
        spider: SynapseSpider = super().from_crawler(crawler, *args, **kwargs)
        spider.crawl = CrawlRequest.from_args(**kwargs)
        for skipped in spider.crawl.skipped:
            logger.warning("%s", skipped)
        spider.runtime = Runtime.of(crawler)
        spider.limits = spider.runtime.config.limits_for(kwargs)
        quiet_dataloss_hint()
        spider._requested = set()
        spider._revisited = False
        crawler.signals.connect(spider._note_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(spider._revisit_stored, signal=signals.spider_idle)
        spider._held_at = -HOLD_RENEWAL
        for signal in (signals.spider_opened, signals.request_scheduled, signals.spider_idle):
            crawler.signals.connect(spider._hold_source, signal=signal)
        crawler.signals.connect(spider._jobdir_closed, signal=signals.engine_stopped)
        crawler.signals.connect(spider._warm_reader, signal=signals.spider_opened)
        return spider

    def _warm_reader(self, **_: Any) -> None:
        self.runtime.reader.warm()  # the extraction workers start while robots.txt is fetched (#17)

    _requested: set[str]
    _revisited: bool
    _held_at: float  # time.monotonic() of the last renewal of the source's RUNNING record

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{k: v for k, v in kwargs.items() if k not in {"url", "depth"}})

    async def start(self) -> AsyncIterator[Any]:
        for url in taking_turns(self.crawl.urls, self.runtime.site):
            yield self.page_request(url, meta={"depth": 0})

    def page_request(self, url: str, *, meta: dict[str, Any] | None = None, **kwargs: Any) -> scrapy.Request:
        """A request for the page at ``url``, read by ``parse``, its failure one line (``page_failed``)."""
        return scrapy.Request(
            url,
            callback=self.parse,
            errback=self.page_failed,
            # summary_counts_failure: the backoff leaves a failed download's count to page_failed
            meta={KIND: RequestKind.PAGE.value, **(meta or {}), "summary_counts_failure": True},
            **kwargs,
        )

    def page_failed(self, failure: Failure) -> Failure | list[scrapy.Request] | None:
        """A stored page that answered 304 (``Unchanged``) leads on through its stored links, as its body
        would have (``follow_stored``); a download with no usable answer is one line and a count by kind;
        nothing stored changes."""
        if caught(failure, Unchanged):
            unchanged: scrapy.Request = failure.request  # type: ignore[attr-defined]
            return self.follow_stored(unchanged, tuple(unchanged.meta.get("reread_outlinks") or ()))
        if caught(failure, IgnoreRequest):
            return failure  # refused or answered 4xx/5xx: the middleware that decided said so, as before
        request = getattr(failure, "request", None)
        url = request.url if request is not None else "?"
        kind, reason = describe(failure)
        self.runtime.summary.fail(self.runtime.site(url), kind)  # in the stats as summary/failed/KIND
        logger.warning("not fetched: %s: %s", url, reason)
        return None

    async def read(self, response: Response) -> Page | None:
        """The Page in ``response`` (never raises on content), read in a worker process (EXTRACT_PROCESSES).

        None when its worker died or hung on it: logged, counted as an error, and the stored page is kept.
        """
        profile = self.runtime.profile
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        page = await self.runtime.reader.read(
            response.body,
            response.url,
            content_type=content_type,
            tokens=profile.tokens,
            x_robots_tag=[v.decode("latin-1") for v in response.headers.getlist(b"X-Robots-Tag")],
            encoding=http_content_type_encoding(content_type),
            scrub_personal_data=profile.scrub_personal_data,
            label=profile.labels,  # OMN-LABELS, read in the worker under its guard
        )
        if page is None:
            self.runtime.summary.skip(self.runtime.site(response.url), "error", response.url)
        elif page.labels is not None:
            response.meta["page_labels"] = page.labels  # for middlewares.labels
        return page

    def keep(self, response: Response, page: Page | None) -> Iterator[dict[str, Any]]:
        """Yield the item for ``page`` unless its directives keep it out (ALL-NOINDEX) or it was not read."""
        if page is None:
            return
        site = self.runtime.site(response.url)
        for problem in page.problems:
            logger.warning("%s: %s", response.url, problem)
        if page.bounded:
            # What lies within the bounds is kept; the rest of a page written to exhaust a parser is not read (#14).
            self.runtime.summary.bound(site)
            logger.warning("%s: read only within bounds: %s", response.url, "; ".join(page.bounded))
        if page.not_text and not page.directives.noindex:
            # Binary bytes are no text (#14): nothing is stored, and a stored copy stays (SYN-REMOVE: a failure).
            self.runtime.summary.skip(site, "binary", response.url)
            logger.warning("%s: not stored, no text: %s", response.url, page.not_text)
            return
        if not self.runtime.profile.accepts_type(page.content_type):
            # No Content-Type to judge at the headers (the gate's part): what the bytes show is judged here
            # (SNA-HTML, YOT-HTTPS, OMN-FETCH).
            self.runtime.summary.skip(site, "type", response.url)
            logger.info(
                "not kept (%s, sniffed; %s does not read it): %s",
                page.content_type,
                self.runtime.profile.name,
                response.url,
            )
            return
        if page.directives.noindex:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("directives/noindex")
            self.runtime.summary.skip(site, "noindex", response.url)
            logger.info("not indexed (noindex): %s", response.url)
            if self.runtime.store().delete_page(self.crawl.kb, response.url):
                self.crawler.stats.inc_value("reread/removed/noindex")
                logger.info("removed from the knowledge base (now noindex): %s", response.url)
            return
        if page.problems and not page.text:
            # SYN-REMOVE: only 404/410, noindex or a new Disallow remove a page; a copy that cannot be read
            # (cut short, locked, garbage) is a failure like a 5xx, so the stored text stays.
            stored = self.runtime.store().get_page(self.crawl.kb, page.url)
            if stored is not None and stored.text:
                self.runtime.summary.skip(site, "error", response.url)
                logger.info("stored copy kept (this one has no readable text): %s", response.url)
                return
        yield make_item(
            page,
            kb=self.crawl.kb,
            profile=self.runtime.profile,
            site=site,
            status=response.status,
            etag=(response.headers.get(b"ETag") or b"").decode("latin-1"),
            last_modified=(response.headers.get(b"Last-Modified") or b"").decode("latin-1"),
        ) | {"outlinks": self.followable(page)}

    def followable(self, page: Page) -> list[str]:
        """The links ``page`` lets a crawl follow, canonical, in page order: none under nofollow, and no
        rel=nofollow link unless the profile follows them (ALL-NOINDEX, SNA-NOFOLLOW). Scope and depth are
        the following crawl's to judge."""
        if page.directives.nofollow:
            return []
        skip_rel = not self.runtime.profile.follow_rel_nofollow
        return list(dict.fromkeys(canonical(link.url) for link in page.links if not (skip_rel and link.nofollow)))

    def follow_stored(self, request: scrapy.Request, outlinks: tuple[str, ...]) -> list[scrapy.Request]:
        """The requests an unchanged page's stored ``outlinks`` lead to: none, but in a site crawl."""
        return []

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        for item in self.keep(response, await self.read(response)):
            yield item

    def owns(self, url: str) -> bool:
        """Whether a stored page at ``url`` belongs to this crawl's source: in its scope, or one of its URLs."""
        scopes = getattr(self, "scopes", None)
        if scopes is not None:
            return in_any(scopes, url)
        return url in self.crawl.urls

    def _note_scheduled(self, request: scrapy.Request, **_: Any) -> None:
        self._requested.add(canonical(request.url))

    def _revisit_stored(self, **_: Any) -> None:
        """At the first idle with nothing left of the crawl's own, request the source's unreached stored pages."""
        if self._revisited or getattr(self, "backlog", None):  # the sitemap spider releases its backlog first
            return
        self._revisited = True
        store = self.runtime.store()
        depths = store.page_depths(self.crawl.kb)
        stored = [url for url in sorted(depths) if self.owns(url)]
        # URLs an earlier crawl deferred (a long Retry-After) are picked up once their wait is over.
        now = time.time()
        deferred = [
            hold.url
            for hold in store.url_holds(self.runtime.profile.name, "deferred")
            if hold.kb == self.crawl.kb and hold.until <= now and self.owns(hold.url)
        ]
        unreached = [url for url in dict.fromkeys(stored + deferred) if canonical(url) not in self._requested]
        if not unreached:
            return
        logger.info("re-reading %d stored or deferred pages of this source not reached by this crawl", len(unreached))
        assert self.crawler.engine is not None and self.crawler.stats is not None
        self.crawler.stats.set_value("reread/revisited", len(unreached))
        self.crawler.stats.set_value("backoff/deferred_picked_up", len([u for u in deferred if u in unreached]))
        for url in unreached:
            # At the depth a site crawl found it, so a changed page's new links are followed (SYN-REREAD: a
            # new page appears only on a page that changed); of unknown depth, none of its links are.
            depth = depths.get(url)
            meta = {"depth": self.limits.depth if depth is None else depth}
            self.crawler.engine.crawl(self.page_request(url, meta=meta))

    def _jobdir_closed(self, **_: Any) -> None:
        """Scrapy has saved the job state in JOBDIR, whatever the close reason: a next run may trust it."""
        jobdir = self.crawler.settings.get("JOBDIR")
        if jobdir:
            mark_closed(Path(jobdir))

    def _record(self, reason: str) -> Source:
        """The source this crawl reads, as a crawl of it ending (or running) for ``reason`` leaves it."""
        profile = self.runtime.profile
        interval = self.runtime.config.operations.reread_interval
        ident = source_id(self.name, self.crawl.urls, self.crawl.kb, profile.name, profile.deployment)
        return record_crawl(
            self.runtime.store().get_source(ident),
            mode=self.name,
            urls=self.crawl.urls,
            kb=self.crawl.kb,
            profile=profile.name,
            deployment=profile.deployment,
            depth=self.crawl.depth,
            max_pages=self.crawl.max_pages,
            interval=interval,
            reason=reason,
            now=time.time(),
        )

    def _hold_source(self, **_: Any) -> None:
        """Record the source as RUNNING, renewed every few minutes while the crawl runs: if the crawl is killed
        (and never closes), the source is due again within the hour, not after its interval (SYN-REREAD)."""
        if time.monotonic() - self._held_at < HOLD_RENEWAL:
            return
        self._held_at = time.monotonic()
        self.runtime.store().put_source(self._record(RUNNING))

    def closed(self, reason: str) -> None:
        """Record the source this crawl read and when it is due again (SYN-REREAD)."""
        profile = self.runtime.profile
        store = self.runtime.store()
        source = self._record(reason)
        # A URL deferred by a long Retry-After brings the next run forward, so it is not lost (#4).
        waits = [
            hold.until
            for hold in store.url_holds(profile.name, "deferred")
            if hold.kb == self.crawl.kb and self.owns(hold.url)
        ]
        if waits and min(waits) < source.next_due:
            source = replace(source, next_due=max(min(waits), time.time()))
        store.put_source(source)
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        removed = sum(v for k, v in stats.items() if k.startswith("reread/removed/"))
        if stats.get("reread/unchanged") or removed:
            logger.info("re-read: %d pages unchanged (304), %d removed", stats.get("reread/unchanged", 0), removed)
        logger.info(
            "source %s (%s %s, kb %s): next re-read due %s",
            source.id,
            self.name,
            self.crawl.urls[0],
            self.crawl.kb,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(source.next_due)),
        )
