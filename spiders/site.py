"""``scrapy crawl site -a url=START [-a depth=N] [-a max_pages=N]``: a site from its start address.

Breadth-first (settings: DEPTH_PRIORITY and FIFO queues), so a limited crawl
keeps the pages nearest the start. Scope (SYN-SCOPE, ``synapsecrawl.crawl.scope``),
depth (SYN-LIMITS) and ``nofollow`` (ALL-NOINDEX, SNA-NOFOLLOW) decide which
links are followed; redirects keep to the same ``scopes``
(``middlewares.redirects``). Documents linked in scope are requested like
pages; the type gate abandons what the profile does not read (SNA-HTML).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response

from spiders.base import SynapseSpider
from synapsecrawl.crawl.scope import SiteScope, in_any

__all__ = ["SiteSpider"]

logger = logging.getLogger(__name__)


class SiteSpider(SynapseSpider):
    name = "site"

    @cached_property
    def scopes(self) -> tuple[SiteScope, ...]:
        """One scope per start URL."""
        return tuple(SiteScope.from_start(url) for url in self.crawl.urls)

    def target_scopes(self) -> tuple[SiteScope, ...]:
        return self.scopes

    @cached_property
    def _left_out(self) -> set[str]:
        return set()  # out-of-scope URLs already counted, so each counts once per crawl

    def _adopt_directory(self, response: Response) -> None:
        """A start URL its server redirects to the same URL plus "/" names a directory: the crawl keeps
        under it (SYN-SCOPE, "under the starting address's path"), not under its parent."""
        hops = response.meta.get("redirect_urls") or ()
        if not hops or hops[0] not in self.crawl.urls:
            return
        start, final = urlsplit(hops[0]), urlsplit(response.url)
        if final.path != start.path + "/" or final.query or final.netloc.lower() != start.netloc.lower():
            return
        index = self.crawl.urls.index(hops[0])
        scopes = list(self.scopes)
        scopes[index] = SiteScope.from_start(response.url)
        self.__dict__["scopes"] = tuple(scopes)  # the cached_property's value
        self.publish()  # redirects keep to the new scope too
        logger.info("start %s is the directory %s: the crawl keeps under it", hops[0], response.url)

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        if not response.meta.get("depth"):
            self._adopt_directory(response)
        if not in_any(self.scopes, response.url):  # only if a redirect check was switched off
            self.runtime.summary.skip(self.runtime.site(response.url), "scope", response.url)
            return
        page = await self.read(response)
        depth = int(response.meta.get("depth", 0))
        item = await self.keep(response, page)
        if item is not None:
            item["depth"] = depth  # a re-read reads it again from here (middlewares.engine.sources)
            yield item
        if page is None or depth >= self.limits.depth:
            return
        for url in self.followable(page):
            if in_any(self.scopes, url):
                yield self.page_request(url)
            elif url not in self._left_out:
                self._left_out.add(url)
                self.runtime.summary.skip(self.runtime.site(url), "scope", url)

    def follow_stored(self, request: scrapy.Request, outlinks: tuple[str, ...]) -> list[scrapy.Request]:
        """An unchanged page's stored links, as ``parse`` follows a read page's: within depth and scope
        (SYN-LIMITS, SYN-SCOPE). Its errback bypasses the spider middlewares, so depth and the breadth-first
        priority (DEPTH_PRIORITY, as Scrapy's DepthMiddleware sets it) are set here."""
        depth = int(request.meta.get("depth", 0))
        if depth >= self.limits.depth:
            return []
        priority = -(depth + 1) * self.settings.getint("DEPTH_PRIORITY")
        return [
            self.page_request(url, priority=priority, meta={"depth": depth + 1})
            for url in outlinks
            if in_any(self.scopes, url)
        ]
