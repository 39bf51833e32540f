"""FeedHolds on a real crawler and a real SQLite store: the feed spider's refresh holds (SER-FEED-BACKOFF).

Each refresh's outcome goes in as the retry middleware reports it (``refreshed``: the answer's status,
or none and why it failed); what comes out is read where the crawl reads it: the store's URL hold, the
backoff/feed_delayed stat, and ``held`` as the feed spider's start asks it. The clock is a fake one
(unix seconds), so every hold's end is checked exactly. The profile is SereneReader, the feed reader
(its feed curve: 15 min, doubling, up to a day).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Request
from scrapy.crawler import Crawler

from middlewares.engine.runtime import Runtime
from middlewares.feedholds import FeedHolds
from spiders.feed import FeedSpider
from synapsecrawl.kb.records import UrlHold
from tests.adapters.crawlers import crawler_for, opened_store

FEED = "http://a.test/feed.xml"
NOW = 1_800_000_000.0
MINUTES = 60.0


class FakeClock:
    """Unix seconds that move only when a test moves them."""

    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _crawler(tmp_path: Path, signing_key: Path) -> Crawler:
    return crawler_for(tmp_path, BOT_PROFILE="serenereader", SIGNING_KEY=str(signing_key))


def _stored(crawler: Crawler, url: str = FEED) -> UrlHold | None:
    runtime = Runtime.of(crawler)
    return opened_store(runtime).get_url_hold(runtime.profile.name, url)


async def test_a_failed_refresh_holds_the_feed_for_15_minutes(tmp_path: Path, signing_key: Path) -> None:
    """SER-FEED-BACKOFF: the first failed refresh (a 503) holds the feed 15 min in the store, under its
    site and KB, counted in backoff/feed_delayed; the spider's ``held`` sees the hold."""
    crawler, clock = _crawler(tmp_path, signing_key), FakeClock()
    holds = FeedHolds(crawler, clock=clock)
    await holds.refreshed(Request(FEED), "a.test", 503, None)
    hold = _stored(crawler)
    assert hold is not None
    assert (hold.kind, hold.until, hold.reason, hold.site, hold.kb, hold.failures, hold.recorded_at) == (
        "deferred",
        NOW + 15 * MINUTES,
        "feed 503",
        "a.test",
        "kb1",
        1,
        NOW,
    )
    assert await holds.held(FEED) == hold
    assert crawler.stats is not None
    assert crawler.stats.get_value("backoff/feed_delayed") == 1


async def test_each_failure_in_a_row_doubles_the_hold_up_to_a_day(tmp_path: Path, signing_key: Path) -> None:
    """SER-FEED-BACKOFF: 15, 30, 60 min ... for failed refreshes in a row (a network failure counts like a
    5xx, its reason the one given), never more than a day."""
    crawler, clock = _crawler(tmp_path, signing_key), FakeClock()
    holds = FeedHolds(crawler, clock=clock)
    seen = []
    for _ in range(9):
        await holds.refreshed(Request(FEED), "a.test", None, None, why="connection refused")
        hold = _stored(crawler)
        assert hold is not None
        seen.append(hold.until - clock.now)
        clock.now = hold.until  # the next refresh comes once the hold is over
    assert seen == [15 * MINUTES * 2**n for n in range(7)] + [24 * 60 * MINUTES] * 2
    assert hold.reason == "feed connection refused"
    assert hold.failures == 9


@pytest.mark.parametrize(("retry_after", "minutes"), [(b"3600", 60.0), (b"60", 15.0), (None, 15.0)])
async def test_a_429_holds_the_feed_at_least_its_retry_after(
    tmp_path: Path, signing_key: Path, retry_after: bytes | None, minutes: float
) -> None:
    """SER-FEED-BACKOFF: on a 429 the hold lasts the feed curve's delay or the stated Retry-After,
    whichever is longer."""
    crawler = _crawler(tmp_path, signing_key)
    await FeedHolds(crawler, clock=FakeClock()).refreshed(Request(FEED), "a.test", 429, retry_after)
    hold = _stored(crawler)
    assert hold is not None
    assert hold.until == NOW + minutes * MINUTES


@pytest.mark.parametrize("status", [200, 204, 304])
async def test_a_good_answer_releases_the_feed(tmp_path: Path, signing_key: Path, status: int) -> None:
    """SER-FEED-BACKOFF: a 2xx or a 304 after failures removes the hold, so the next failure starts the
    curve again at 15 min."""
    crawler, clock = _crawler(tmp_path, signing_key), FakeClock()
    holds = FeedHolds(crawler, clock=clock)
    for _ in range(3):
        await holds.refreshed(Request(FEED), "a.test", 500, None)
    await holds.refreshed(Request(FEED), "a.test", status, None)
    assert _stored(crawler) is None
    assert await holds.held(FEED) is None
    await holds.refreshed(Request(FEED), "a.test", 500, None)
    hold = _stored(crawler)
    assert hold is not None
    assert (hold.failures, hold.until) == (1, NOW + 15 * MINUTES)


async def test_a_redirect_is_not_judged_and_the_hold_is_on_the_feed_as_subscribed(
    tmp_path: Path, signing_key: Path
) -> None:
    """A 3xx neither holds nor releases (the answer at its end is judged); a failure at the end of a
    redirect holds the URL the feed was subscribed under (the first of redirect_urls)."""
    crawler = _crawler(tmp_path, signing_key)
    holds = FeedHolds(crawler, clock=FakeClock())
    await holds.refreshed(Request(FEED), "a.test", 301, None)
    assert _stored(crawler) is None
    await holds.refreshed(Request(FEED), "a.test", 500, None)
    await holds.refreshed(Request(FEED), "a.test", 302, None)
    assert _stored(crawler) is not None
    moved = Request("http://b.test/new.xml", meta={"redirect_urls": ["http://c.test/old.xml", FEED]})
    await holds.refreshed(moved, "c.test", 502, None)
    assert _stored(crawler, "http://c.test/old.xml") is not None
    assert _stored(crawler, "http://b.test/new.xml") is None


async def test_a_hold_over_holds_nothing(tmp_path: Path, signing_key: Path) -> None:
    """``held`` answers a hold only while its end is ahead: once the clock reaches it, the feed is refreshed."""
    crawler, clock = _crawler(tmp_path, signing_key), FakeClock()
    holds = FeedHolds(crawler, clock=clock)
    await holds.refreshed(Request(FEED), "a.test", 500, None)
    clock.now += 15 * MINUTES - 1
    assert await holds.held(FEED) is not None
    clock.now += 1
    assert await holds.held(FEED) is None
    assert _stored(crawler) is not None  # kept: its failure count carries on to the next failure


async def test_a_held_feed_is_skipped_at_start(tmp_path: Path, signing_key: Path) -> None:
    """SER-FEED-BACKOFF: the feed spider's start yields no request for a feed still held, and counts it
    as skipped (paused) in the summary; a feed not held is asked."""
    crawler = _crawler(tmp_path, signing_key)
    other = "http://b.test/feed.xml"
    urls = tmp_path / "feeds.txt"
    urls.write_text(f"{FEED}\n{other}\n")
    spider = FeedSpider.from_crawler(crawler, urls_file=str(urls), kb="kb1")
    await FeedHolds(crawler).refreshed(Request(FEED), "a.test", 500, None)  # held from now (real clock)
    asked = [request.url async for request in spider.start()]
    assert asked == [other]
    assert Runtime.of(crawler).summary.skipped["a.test"]["paused"] == 1
