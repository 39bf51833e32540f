"""A crawl's spider starts its extraction workers as it opens, not at its first page."""

from __future__ import annotations

from pathlib import Path

from scrapy import signals

from middlewares.engine.runtime import Runtime
from spiders.page import PageSpider
from tests.adapters.crawlers import crawler_for


async def test_the_extraction_workers_start_as_the_spider_opens(tmp_path: Path) -> None:
    """The first worker starts while robots.txt is fetched: the first pages do not wait for it (Reader.warm)."""
    crawler = crawler_for(tmp_path, EXTRACT_PROCESSES="1")
    spider = PageSpider.from_crawler(crawler, url="http://a.test/", kb="kb1")
    reader = Runtime.of(crawler).reader
    try:
        assert reader._warming is None
        crawler.signals.send_catch_log(signals.spider_opened, spider=spider)
        assert reader._warming is not None
        await reader._warming
        assert reader._workers[0] is not None and not reader._workers[0].lost
    finally:
        reader.close()


async def test_crawling_in_process_starts_no_worker(tmp_path: Path) -> None:
    crawler = crawler_for(tmp_path, EXTRACT_PROCESSES="0")
    spider = PageSpider.from_crawler(crawler, url="http://a.test/", kb="kb1")
    crawler.signals.send_catch_log(signals.spider_opened, spider=spider)
    assert Runtime.of(crawler).reader._warming is None
