"""What every synapsecrawl spider shares: arguments in, Page out, item or links.

Spiders turn their ``-a`` strings into one ``CrawlRequest`` and the limits
that apply, read each response with ``synapsecrawl.extract``, and yield an
item for a page the KB keeps. Scope (which links a mode follows) is theirs.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import Response
from w3lib.encoding import http_content_type_encoding

from middlewares.addon import operator_settings
from middlewares.runtime import Runtime
from synapsecrawl.config import check_config
from synapsecrawl.crawlrequest import CrawlRequest
from synapsecrawl.extract.page import Page
from synapsecrawl.extract.read import read_document
from synapsecrawl.indexing import make_item
from synapsecrawl.profiles import Limits

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
        spider.limits = check_config(operator_settings(crawler.settings), kwargs).limits
        spider.runtime = Runtime.of(crawler)
        return spider

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{k: v for k, v in kwargs.items() if k not in {"url", "depth"}})

    async def start(self) -> AsyncIterator[Any]:
        for url in self.crawl.urls:
            yield scrapy.Request(url, callback=self.parse, meta={"depth": 0})

    def read(self, response: Response) -> Page:
        """The Page in ``response`` (never raises on content)."""
        profile = self.runtime.profile
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        return read_document(
            response.body,
            response.url,
            content_type=content_type,
            tokens=profile.tokens,
            x_robots_tag=[v.decode("latin-1") for v in response.headers.getlist(b"X-Robots-Tag")],
            encoding=http_content_type_encoding(content_type),
        )

    def keep(self, response: Response, page: Page) -> Iterator[dict[str, Any]]:
        """Yield the item for ``page`` unless its directives keep it out (ALL-NOINDEX)."""
        site = self.runtime.site(response.url)
        for problem in page.problems:
            logger.warning("%s: %s", response.url, problem)
        if page.directives.noindex:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("directives/noindex")
            self.runtime.summary.skip(site, "noindex")
            logger.info("not indexed (noindex): %s", response.url)
            return
        yield make_item(
            page,
            kb=self.crawl.kb,
            profile=self.runtime.profile,
            site=site,
            status=response.status,
            etag=(response.headers.get(b"ETag") or b"").decode("latin-1"),
            last_modified=(response.headers.get(b"Last-Modified") or b"").decode("latin-1"),
        )

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        yield from self.keep(response, self.read(response))
