"""``scrapy crawl site -a url=START [-a depth=N] [-a max_pages=N]``: a site from its start address.

Breadth-first (settings: DEPTH_PRIORITY and FIFO queues), so a limited crawl
keeps the pages nearest the start. Links leave scope (SYN-SCOPE), depth
(SYN-LIMITS) and ``nofollow`` (ALL-NOINDEX, SNA-NOFOLLOW) decide what is followed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response

from spiders.base import SynapseSpider
from synapsecrawl.scope import SiteScope
from synapsecrawl.urls import canonical

__all__ = ["SiteSpider"]


class SiteSpider(SynapseSpider):
    name = "site"

    def scopes(self) -> list[SiteScope]:
        """One scope per start URL."""
        return [SiteScope.from_start(url) for url in self.crawl.urls]

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        site = self.runtime.site(response.url)
        scopes = self.scopes()
        if not any(scope.contains(response.url) for scope in scopes):
            self.runtime.summary.skip(site, "scope")  # redirected out of scope
            return
        page = self.read(response)
        yield from self.keep(response, page)
        depth = int(response.meta.get("depth", 0))
        if page.directives.nofollow or depth >= self.limits.depth:
            return
        seen: set[str] = set()
        for link in page.links:
            if link.nofollow and not self.runtime.profile.follow_rel_nofollow:
                continue
            url = canonical(link.url)
            if url in seen:
                continue
            seen.add(url)
            if not any(scope.contains(url) for scope in scopes):
                self.runtime.summary.skip(self.runtime.site(url), "scope")
                continue
            yield scrapy.Request(url, callback=self.parse)
