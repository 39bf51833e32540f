"""Logs the crawl summary at the end of every crawl and copies it into stats."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals

from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.kinds import kind_of

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["SummaryExtension"]

logger = logging.getLogger(__name__)


class SummaryExtension:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self._crawler = crawler
        self._runtime = runtime
        crawler.signals.connect(self._response_received, signal=signals.response_received)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SummaryExtension:
        return cls(crawler, Runtime.of(crawler))

    def _response_received(self, response: Response, request: Request, **_: Any) -> None:
        if kind_of(request.meta).rules.summarised:
            self._runtime.summary.fetch(self._runtime.site(request.url))

    def _spider_closed(self, **_: Any) -> None:
        assert self._crawler.stats is not None
        for key, value in self._runtime.summary.stats().items():
            self._crawler.stats.set_value(key, value)
        for line in self._runtime.summary.lines():
            logger.info("%s", line)
        self._runtime.close()
