"""The page limit of a crawl (SYN-LIMITS): pages fetched, robots.txt not counted.

Scrapy's CLOSESPIDER_PAGECOUNT counts every response, robots.txt included,
and lets in-flight requests overshoot; here a page is counted when robots.txt
has let it through, once across its redirects and retries, and any request
past the limit is dropped before it reaches the network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.kinds import kind_of

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["PageBudgetMiddleware"]


class PageBudgetMiddleware:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._spent = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageBudgetMiddleware:
        return cls(crawler, Runtime.of(crawler))

    @property
    def limit(self) -> int:
        """Pages this crawl may fetch: the spider's (-a max_pages) or the operator's."""
        return int(self._runtime.target_limits.pages)

    @property
    def remaining(self) -> int | None:
        """Pages this crawl may still fetch; None when it has no limit."""
        return max(0, self.limit - self._spent) if self.limit else None

    async def process_request(self, request: Request) -> None:
        if not kind_of(request.meta).rules.budget or request.meta.get("budget_counted"):
            return
        take_page = self._runtime.target.take_page  # a shared crawl counts in Redis
        allowed = await take_page(request) if take_page is not None else None
        if allowed is not None:
            if not allowed:
                self._refuse(request, "its source's")
            request.meta["budget_counted"] = True
            return
        if self.limit and self._spent >= self.limit:
            self._refuse(request, str(self.limit))
        self._spent += 1
        request.meta["budget_counted"] = True

    def _refuse(self, request: Request, limit: str) -> None:
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value("budget/over_limit")
        self._runtime.summary.skip(self._runtime.site(request.url), "limit", request.url)
        raise IgnoreRequest(f"page limit {limit} reached: {request.url}")
