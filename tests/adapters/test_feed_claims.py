"""The feed spider's entry claims on real crawlers: an article shared by two feeds is fetched once.

Two feeds that carry the same new entry, without an image, are answered at the same moment: both
answers are parsed together (``asyncio.gather`` over ``parse_feed``), against a real SQLite KB whose
look-ups are slowed the way a loaded machine slows them, so each read finds the entry new before the
other has taken it. What comes out is counted where the crawl sends it: the article requests the
spiders yield. Under a shared Redis (``PACING_REDIS_URL``) the two feeds are read by two crawlers, as
two machines would read them.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import scrapy
from scrapy.http import TextResponse
from scrapy.utils.test import get_crawler

from middlewares.engine.runtime import Runtime
from spiders.feed import FeedSpider
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import PageRecord
from tests.adapters.crawlers import project
from tests.helpers import REDIS_URL

ARTICLE = "http://news.test/posts/shared"
FEEDS = ("http://one.test/feed.xml", "http://two.test/feed.xml")


class _LoadedStore:
    """The real store, its page look-ups slowed as on a loaded machine (the KB answers late)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def get_page(self, kb: str, url: str) -> PageRecord | None:
        time.sleep(0.2)
        page: PageRecord | None = self._store.get_page(kb, url)
        return page

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _spider(tmp_path: Path, signing_key: Path, **settings: object) -> FeedSpider:
    crawler = get_crawler(
        FeedSpider,
        settings_dict=project(
            KB_URI=f"sqlite:///{tmp_path}/kb.sqlite3",
            BOT_PROFILE="serenereader",
            SIGNING_KEY=str(signing_key),
            **settings,
        ),
    )
    spider = FeedSpider.from_crawler(crawler, url=FEEDS[0], kb="kb1")
    runtime = Runtime.of(crawler)
    runtime.kb._opener = lambda: _LoadedStore(open_store(runtime.kb_uri))
    return spider


def _answer(feed_url: str) -> TextResponse:
    body = (
        '<rss version="2.0"><channel><title>Feed</title><link>http://news.test/</link>'
        f"<item><title>Shared</title><link>{ARTICLE}</link><description>Text</description></item>"
        "</channel></rss>"
    )
    request = scrapy.Request(feed_url, meta={"feed_url": feed_url, "feed_first_add": False})
    return TextResponse(feed_url, body=body.encode(), headers={"Content-Type": "application/rss+xml"}, request=request)


async def _read(spider: FeedSpider, feed_url: str) -> list[Any]:
    return [result async for result in spider.parse_feed(_answer(feed_url))]


def _article_fetches(results: list[Any]) -> list[str]:
    return [r.url for r in results if isinstance(r, scrapy.Request) and r.meta.get(KIND) == RequestKind.ARTICLE.value]


@pytest.mark.parametrize("shared", [False, True], ids=["local-pacer", "redis-pacer"])
async def test_an_article_in_two_feeds_read_together_is_fetched_once(
    shared: bool, tmp_path: Path, signing_key: Path, request: pytest.FixtureRequest
) -> None:
    """SER-OGIMAGE: "we fetch the article page once". Two feeds of one crawl, answered at
    the same moment, both carry a new imageless entry: only one of them takes it, so one request for the
    article page goes out, and the other feed's read stores nothing of it. Same for a crawl whose pacer
    is shared through Redis."""
    settings = (
        {"PACING_REDIS_URL": REDIS_URL, "PACING_REDIS_PREFIX": request.getfixturevalue("redis_prefix")}
        if shared
        else {}
    )
    spider = _spider(tmp_path, signing_key, **settings)
    try:
        reads = await asyncio.gather(*(_read(spider, url) for url in FEEDS))
    finally:
        spider.closed("finished")
    assert _article_fetches([r for read in reads for r in read]) == [ARTICLE]
    assert sorted(len(_article_fetches(read)) for read in reads) == [0, 1]


async def test_an_article_in_two_feeds_read_together_by_two_machines_is_fetched_once(
    tmp_path: Path, signing_key: Path, redis_prefix: str
) -> None:
    """SER-OGIMAGE: two machines sharing a Redis (PACING_REDIS_URL) read two feeds that carry
    the same new imageless entry at the same moment, into one KB: the entry is a claim in Redis that only
    one of them wins, so the article page is requested once across both."""
    shared = {"PACING_REDIS_URL": REDIS_URL, "PACING_REDIS_PREFIX": redis_prefix}
    machines = [_spider(tmp_path, signing_key, **shared) for _ in FEEDS]
    try:
        reads = await asyncio.gather(*(_read(spider, url) for spider, url in zip(machines, FEEDS, strict=True)))
    finally:
        for spider in machines:
            spider.closed("finished")
    assert _article_fetches([r for read in reads for r in read]) == [ARTICLE]
