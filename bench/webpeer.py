"""The web crawl's peer: a stock Scrapy broad crawl, as Scrapy's "Broad Crawls" page tells a user to write one.

Run by ``bench.webcrawl`` with ``scrapy runspider bench/webpeer.py -a seeds=FILE`` outside the project (none of
synapsecrawl's settings apply), with the settings of ``BROAD_CRAWL`` below. It follows every link to a ``*.test``
host (the same URL filter as ours: the generated web is all there) and stores each page it parses as an item in
a JSON-lines feed, which the bench reads as it reads our KB. ``LoopbackResolver`` (bench.stock) only sends the
``*.test`` names to 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["BROAD_CRAWL", "BroadSpider"]

# Scrapy's "Broad Crawls" page (docs.scrapy.org, topics/broad-crawls), setting by setting. AJAXCRAWL_ENABLED is not
# here: Scrapy 2.19 removed the AjaxCrawlMiddleware it turned on. DEPTH_LIMIT is our SnagaBot's default depth, so
# both crawls stop at the same number of hops from a seed.
BROAD_CRAWL = {
    "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    "CONCURRENT_REQUESTS": "100",
    "REACTOR_THREADPOOL_MAXSIZE": "20",
    "LOG_LEVEL": "INFO",
    "COOKIES_ENABLED": "False",
    "RETRY_ENABLED": "False",
    "DOWNLOAD_TIMEOUT": "15",
    "REDIRECT_ENABLED": "False",
    "DEPTH_PRIORITY": "1",  # crawl in BFO order
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    "ROBOTSTXT_OBEY": "True",
    "DEPTH_LIMIT": "5",
    "TWISTED_DNS_RESOLVER": "bench.stock.LoopbackResolver",
    "TELNETCONSOLE_ENABLED": "False",
}


class BroadSpider(CrawlSpider):
    name = "broad"
    # allow_domains would compare the host with its port (the generated web's links carry one): a pattern instead
    rules = (Rule(LinkExtractor(allow=r"^https?://[^/?#]+\.test(:\d+)?(/|$)"), callback="parse_page", follow=True),)

    def __init__(self, seeds: str = "", **kwargs: Any) -> None:
        self.start_urls = Path(seeds).read_text().split()
        super().__init__(**kwargs)

    def parse_start_url(self, response: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        yield from self.parse_page(response)

    def parse_page(self, response: Any) -> Iterator[dict[str, Any]]:
        yield {"url": response.url, "title": response.css("title::text").get(), "bytes": len(response.body)}
