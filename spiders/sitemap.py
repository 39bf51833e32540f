"""``scrapy crawl sitemap -a url=URL [-a kb=NAME]``: the pages a sitemap lists.

URL is a sitemap, a sitemap index or a robots.txt with ``Sitemap:`` lines (``synapsecrawl.extract.sitemaps`` reads
them). Sitemaps and pages keep to its host (SYN-SCOPE), each fetched like a page, entries newest ``lastmod`` first,
released no faster than the page limit can take them (``PageBudgetMiddleware.remaining``). Meta keys it sets and
reads: ``sitemap_nesting``, ``size_limit_bytes``, ``decompressed_limit_bytes``. More: docs/crawling.md, "Sitemap
crawls", and docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Iterator
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from middlewares.budget import PageBudgetMiddleware
from middlewares.engine.exceptions import caught
from middlewares.failures import describe
from middlewares.robots import RobotsMiddleware
from spiders.base import SynapseSpider
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.crawl.scope import SiteScope, in_any
from synapsecrawl.extract.sitemaps import MAX_SITEMAP_BYTES, SitemapEntry, order_entries, parse_sitemap
from synapsecrawl.rules.robots import parse_robots
from synapsecrawl.urls import canonical, origin_of, url_problem

__all__ = ["SitemapSpider"]

logger = logging.getLogger(__name__)

MAX_NESTING = 3  # robots.txt -> index -> sitemap, and one more for an index listed in an index


class SitemapSpider(SynapseSpider):
    name = "sitemap"

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SitemapSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        assert isinstance(spider, SitemapSpider)
        spider.backlog = deque()
        crawler.signals.connect(spider.release_on_idle, signal=signals.spider_idle)
        return spider

    backlog: deque[str]
    _backlog_at_idle = False  # whether this idle found entries in the backlog (release_on_idle runs first)

    def target_scopes(self) -> tuple[SiteScope, ...]:
        return self.scopes

    def revisit_ready(self) -> bool:
        """The source's stored pages are re-read once an idle finds the backlog released."""
        return not self._backlog_at_idle

    @cached_property
    def scopes(self) -> tuple[SiteScope, ...]:
        """The host of each URL given: sitemaps, their pages and redirects keep to it."""
        return tuple(SiteScope.whole_host(url) for url in self.crawl.urls)

    async def start(self) -> AsyncIterator[Any]:
        for url in self.crawl.urls:
            if urlsplit(url).path == "/robots.txt":
                for listed in await self._listed_in_robots(url):
                    yield self._sitemap_request(listed, nesting=1)
            else:
                yield self._sitemap_request(url, nesting=0)

    async def _listed_in_robots(self, url: str) -> list[str]:
        """The ``Sitemap:`` URLs of robots.txt at ``url``, read as the robots middleware read it."""
        robots = self.crawler.get_downloader_middleware(RobotsMiddleware)
        origin = origin_of(url)
        if robots is not None:
            outcome = await robots.outcome_for(url)
            copy = await self.runtime.kb.robots_copy(self.runtime.profile.name, origin)
            status, body = outcome.status, copy.body if copy is not None else b""
        else:  # the robots middleware switched off: fetch it here
            assert self.crawler.engine is not None
            request = scrapy.Request(
                url, callback=NO_CALLBACK, meta={KIND: RequestKind.ROBOTS.value, "dont_retry": True}
            )
            response = await self.crawler.engine.download_async(request)
            status, body = response.status, response.body
        if not 200 <= status < 300:
            logger.warning("sitemap %s: robots.txt answered %s, so no Sitemap: lines to read", url, status or "nothing")
            return []
        listed = list(parse_robots(body).sitemaps)
        if not listed:
            logger.warning("sitemap %s: robots.txt has no Sitemap: lines", url)
        return self._on_host(url, [SitemapEntry(u) for u in listed], "sitemaps")

    def _sitemap_request(self, url: str, *, nesting: int) -> scrapy.Request:
        return scrapy.Request(
            url,
            callback=self.parse_sitemap,
            errback=self.sitemap_failed,
            meta={
                KIND: RequestKind.SITEMAP.value,  # XML, text or gzip: read here, not by the page type gate
                "sitemap_nesting": nesting,
                "depth_reset": True,  # sitemap nesting is not link depth
                "size_limit_bytes": MAX_SITEMAP_BYTES,
                "decompressed_limit_bytes": MAX_SITEMAP_BYTES,
            },
        )

    def _on_host(self, sitemap_url: str, entries: list[SitemapEntry], what: str) -> list[str]:
        """The canonical URLs of ``entries`` on the crawl's host; the others are counted and logged."""
        kept, away = [], 0
        for entry in order_entries(entries):
            problem = url_problem(entry.url)  # a robots.txt Sitemap: line; <loc>s are checked as they are parsed
            if problem is not None:
                logger.warning("sitemap %s: %s %r skipped: %s", sitemap_url, what[:-1], entry.url[:200], problem)
                continue
            url = canonical(entry.url)
            if in_any(self.scopes, url):
                kept.append(url)
            else:
                away += 1
                self.runtime.summary.skip(self.runtime.site(url), "scope", url)
        if away:
            logger.warning("sitemap %s: %d %s on other hosts not fetched", sitemap_url, away, what)
        return kept

    async def parse_sitemap(self, response: Response, **kwargs: Any) -> AsyncIterator[scrapy.Request]:
        sitemap = await asyncio.to_thread(parse_sitemap, response.body)  # 50,000 entries: a second or two
        truncated = "truncated" in response.flags
        problems = [*(["cut at the size cap"] if truncated else []), *sitemap.problems]
        if sitemap.invalid:
            problems.append(f"{sitemap.invalid} entries without a usable URL")
        if problems:
            logger.warning("sitemap %s: %s", response.url, "; ".join(problems))
        nesting = int(response.meta.get("sitemap_nesting", 0))
        if sitemap.kind == "index":
            if nesting >= MAX_NESTING:
                logger.warning("sitemap %s: index nested too deep (%d levels): not read", response.url, nesting)
                return
            for url in self._on_host(response.url, list(sitemap.entries), "sitemaps"):
                yield self._sitemap_request(url, nesting=nesting + 1)
            return
        self.backlog.extend(self._on_host(response.url, list(sitemap.entries), "pages"))
        for request in self._release():
            yield request

    def _release(self) -> Iterator[scrapy.Request]:
        """Page requests from the backlog, as many as the page limit can still take."""
        budget = self.crawler.get_downloader_middleware(PageBudgetMiddleware)
        remaining = budget.remaining if budget is not None else None
        count = len(self.backlog) if remaining is None else min(remaining, len(self.backlog))
        for _ in range(count):
            yield self.page_request(self.backlog.popleft(), meta={"depth_reset": True})

    def release_on_idle(self) -> None:
        """Top up from the backlog when all else is done; count what the limit leaves out."""
        assert self.crawler.engine is not None
        self._backlog_at_idle = bool(self.backlog)
        released = 0
        for request in self._release():
            self.crawler.engine.crawl(request)
            released += 1
        if released:
            raise DontCloseSpider
        for url in self.backlog:
            self.runtime.summary.skip(self.runtime.site(url), "limit", url)
        if self.backlog:
            logger.info("page limit reached: %d sitemap entries not fetched", len(self.backlog))
        self.backlog.clear()

    def sitemap_failed(self, failure: Failure) -> None:
        request = getattr(failure, "request", None)
        url = request.url if request is not None else "?"
        if error := caught(failure, HttpError):
            reason = f"it answered {error.response.status}"
        elif caught(failure, IgnoreRequest):
            reason = failure.getErrorMessage()
        else:
            reason = describe(failure)[1]
        logger.warning("sitemap %s not read: %s", url, reason)
