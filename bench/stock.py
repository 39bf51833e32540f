"""The baseline: a plain Scrapy spider, as a Scrapy user would write it, over a list of URLs.

Run with ``scrapy runspider bench/stock.py`` outside the project (so none of
synapsecrawl's settings apply), with the closest stock settings to polite
crawling: ``DOWNLOAD_DELAY`` = the Crawl-delay, ``CONCURRENT_REQUESTS_PER_DOMAIN=1``,
``ROBOTSTXT_OBEY=True``. ``LoopbackResolver`` only sends the simulated ``*.test``
names to 127.0.0.1; it changes nothing about pacing.

Without ``extract`` it reads each page's title the way a plain Scrapy user
would (``response.css("title::text")``): the CPU-per-page benchmark's "stock spider that only
reads titles". With ``extract=1`` it runs synapsecrawl's extraction on every page.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from twisted.internet.defer import Deferred

__all__ = ["LoopbackResolver", "StockSpider"]


class LoopbackResolver(CachingThreadedResolver):
    """Resolves ``*.test`` to 127.0.0.1, other names as usual."""

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        if name.endswith(".test"):
            return defer.succeed("127.0.0.1")
        return super().getHostByName(name, timeout)


class StockSpider(scrapy.Spider):
    name = "stock"

    def __init__(self, urls_file: str = "", extract: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = Path(urls_file).read_text().split()
        self.extract = bool(extract)  # do synapsecrawl's extraction too, to weigh pacing apart from CPU

    async def start(self) -> AsyncIterator[Any]:
        for url in self.urls:
            yield scrapy.Request(url)

    def parse(self, response: Any, **kwargs: Any) -> Any:
        if self.extract:
            from synapsecrawl.extract.read import read_document

            page = read_document(
                response.body,
                response.url,
                content_type="text/html; charset=utf-8",
                tokens=("scrapy",),
                encoding="utf-8",
            )
            yield {"url": response.url, "title": page.title, "chars": len(page.text)}
            return
        yield {"url": response.url, "title": response.css("title::text").get(), "bytes": len(response.body)}
