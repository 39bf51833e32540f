"""SourceExtension (middlewares.engine.sources): the source a crawl reads, held, re-read at idle, recorded.

A real SiteSpider built by its from_crawler publishes runtime.target; the extension is built after it, as
Scrapy builds extensions after the spider, and driven by the crawler's real signals. The KB is a real SQLite
file under tmp_path.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.utils.misc import build_from_crawler

from middlewares.engine.runtime import Runtime
from middlewares.engine.sources import SourceExtension
from spiders.ondemand import OndemandSpider
from spiders.site import SiteSpider
from synapsecrawl.crawl.jobdir import MARK, mark_running
from synapsecrawl.kb.records import PageRecord, utcnow
from synapsecrawl.kb.reread import RUNNING
from tests.adapters.crawlers import crawler_for, opened_store

START = "http://docs.test/guide/"


def _site(tmp_path: Path, **settings: object) -> tuple[Crawler, SiteSpider, SourceExtension]:
    crawler = crawler_for(tmp_path, kb=None, **settings)
    spider = SiteSpider.from_crawler(crawler, url=START, kb="kb1")
    assert isinstance(spider, SiteSpider)
    crawler.spider = spider
    return crawler, spider, build_from_crawler(SourceExtension, crawler)


async def _settled() -> None:
    """Let the extension's spawned store calls reach the KB's thread."""
    for _ in range(3):
        await asyncio.sleep(0)


async def test_the_source_is_held_running_at_open_and_recorded_at_close(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SYN-REREAD: once the crawl opens its source is recorded RUNNING (a killed crawl is due again soon);
    when it closes, the source is recorded with the close reason and when it is due again, in one line."""
    crawler, spider, _ = _site(tmp_path)
    runtime = Runtime.of(crawler)
    assert runtime.target.source is spider and runtime.target.kb == "kb1"
    await crawler.signals.send_catch_log_async(signals.spider_opened, spider=spider)
    assert runtime.run_begun is not None
    await asyncio.wait_for(runtime.run_begun, 10)  # the RUNNING record is written
    [running] = await runtime.kb.read(lambda store: store.sources("kb1"))
    assert running.outcome == RUNNING and running.urls == (START,) and running.mode == "site"
    with caplog.at_level(logging.INFO, logger="middlewares.engine.sources"):
        await crawler.signals.send_catch_log_async(signals.spider_closed, spider=spider, reason="finished")
    [closed] = opened_store(crawler).sources("kb1")
    assert closed.id == running.id and closed.outcome == "finished" and closed.next_due > closed.last_crawl > 0
    assert f"source {closed.id} (site {START}, kb kb1): next re-read due" in caplog.text


async def test_at_idle_the_sources_unreached_stored_pages_are_read_again_at_their_depth(tmp_path: Path) -> None:
    """SYN-REREAD: at the first idle the source's stored pages this crawl has not asked for are requested,
    at the depth a site crawl found them (a page of unknown depth at the limit: none of its links are
    followed); pages of other scopes and pages the crawl reached are not; the crawl stays open while the
    KB is asked, and a later idle asks nothing again."""
    crawler, spider, extension = _site(tmp_path)
    store = opened_store(crawler)
    for url, depth in ((START, 0), (START + "a", 1), (START + "b", None), ("http://docs.test/other/c", 1)):
        store.put_page(PageRecord("kb1", url, "t", "text", "text/html", 200, utcnow(), depth=depth))
    crawled: list[Request] = []
    crawler.engine = SimpleNamespace(crawl=crawled.append)  # type: ignore[assignment]
    crawler.signals.send_catch_log(signals.request_scheduled, request=Request(START), spider=spider)
    [(_, first)] = [
        r for r in crawler.signals.send_catch_log(signals.spider_idle, spider=spider) if r[0] == extension._idle
    ]
    assert first.check(DontCloseSpider)  # type: ignore[union-attr]
    await extension._revisit  # type: ignore[misc]
    assert [(r.url, r.meta["depth"]) for r in crawled] == [(START + "a", 1), (START + "b", spider.limits.depth)]
    assert crawler.stats.get_value("reread/revisited") == 2  # type: ignore[union-attr]
    crawler.signals.send_catch_log(signals.spider_idle, spider=spider)
    assert len(crawled) == 2


def test_jobdir_is_marked_closed_when_the_engine_stops(tmp_path: Path) -> None:
    """Resuming (JOBDIR): whatever the close reason, once the engine stopped Scrapy has saved the job state in
    JOBDIR, and the mark saying a crawl is using it is removed, so a next run trusts it."""
    jobdir = tmp_path / "job"
    mark_running(jobdir, 12345)
    crawler, _, _ = _site(tmp_path, JOBDIR=str(jobdir))
    crawler.signals.send_catch_log(signals.engine_stopped)
    assert not (jobdir / MARK).exists()


def test_a_spider_that_records_no_source_switches_it_off(tmp_path: Path) -> None:
    """SNA-ONDEMAND: an on-demand crawl has no source to hold, re-read or record: its spider says so with
    one class attribute, calling the base's from_crawler as every spider does, and the extension is off."""
    crawler = crawler_for(tmp_path, kb=None, BOT_PROFILE="snagabot")
    spider = OndemandSpider.from_crawler(crawler, kb="agents")
    assert Runtime.of(crawler).target.source is None and Runtime.of(crawler).target.kb == "agents"
    assert spider.crawl.kb == "agents"
    with pytest.raises(NotConfigured):
        build_from_crawler(SourceExtension, crawler)


async def test_under_a_web_crawlers_profile_only_the_due_stored_pages_are_read_again(tmp_path: Path) -> None:
    """YOT-COND: under a profile whose revisit rule adapts, the idle re-read asks only for the source's
    stored pages whose own due time has come (a page stored before the KB kept due times is due its
    re-read interval after its fetch); the others wait, not asked for at all."""
    crawler, spider, extension = _site(tmp_path, BOT_PROFILE="snagabot")
    store = opened_store(crawler)
    rule = Runtime.of(crawler).kb.revisit
    assert rule is not None and rule.adaptive
    now = utcnow()
    long_ago = now - timedelta(days=40)
    pages = {
        START + "due": PageRecord("kb1", START + "due", "t", "x", "text/html", 200, long_ago, depth=1),
        START + "fresh": PageRecord("kb1", START + "fresh", "t", "x", "text/html", 200, now, depth=1),
    }
    store.put_pages(list(pages.values()), rule)
    store.put_page(PageRecord("kb1", START + "old", "t", "x", "text/html", 200, long_ago, depth=1))  # no due time
    crawled: list[Request] = []
    crawler.engine = SimpleNamespace(crawl=crawled.append)  # type: ignore[assignment]
    crawler.signals.send_catch_log(signals.spider_idle, spider=spider)
    await extension._revisit  # type: ignore[misc]
    assert sorted(r.url for r in crawled) == [START + "due", START + "old"]


async def test_under_a_web_crawlers_profile_the_source_is_due_when_its_first_page_is(tmp_path: Path) -> None:
    """A source whose crawl ran its course is due again when its earliest stored page is (here in 20 days,
    past the 7-day re-read interval), never sooner than the profile's 1-day floor; under SynapseBot's fixed
    rule it stays due 7 days after the crawl (SYN-REREAD)."""
    for profile, expected_days in (("snagabot", 20.0), ("synapsebot", 7.0)):
        crawler, spider, _ = _site(tmp_path / profile, BOT_PROFILE=profile)
        store = opened_store(crawler)
        in_20_days = utcnow().timestamp() + 20 * 86400
        store.put_page(
            PageRecord("kb1", START, "t", "x", "text/html", 200, utcnow(), revisit_interval=1.0, revisit_due=in_20_days)
        )
        await crawler.signals.send_catch_log_async(signals.spider_closed, spider=spider, reason="finished")
        [source] = store.sources("kb1")
        assert source.next_due - source.last_crawl == pytest.approx(expected_days * 86400, abs=60)
