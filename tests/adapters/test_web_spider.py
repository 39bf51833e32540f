"""The web spider on a real crawler (no reactor): its released requests pass the same middlewares as a site
crawl's, the window per site, and the refusals it shares with the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
import scrapy
from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from middlewares.netguard import NetGuardMiddleware
from middlewares.removals import RemovalListMiddleware
from spiders.web import WINDOW, WebSpider
from synapsecrawl.crawl.kinds import RequestKind, kind_of
from synapsecrawl.errors import ConfigError
from tests.adapters.crawlers import project


def _spider(tmp_path: Path, settings: dict[str, object] | None = None, **args: str) -> WebSpider:
    crawler = get_crawler(
        WebSpider,
        settings_dict=project(
            **{"KB_URI": f"sqlite:///{tmp_path}/kb.sqlite3", "BOT_PROFILE": "snagabot", **(settings or {})}
        ),
    )
    spider = WebSpider.from_crawler(crawler, **args)
    crawler.spider = spider
    return spider


def test_a_discovered_link_to_a_private_address_is_refused_by_the_address_guard(tmp_path: Path) -> None:
    """Address guard (ALLOW_PRIVATE_ADDRESSES off): a link a page leads to a private, loopback or link-local
    address becomes an ordinary page request, which the guard refuses before any connection."""
    spider = _spider(tmp_path, url="http://seed.example/")
    for link in ("http://10.1.2.3/admin", "http://127.0.0.1:8080/", "http://169.254.169.254/latest/"):
        spider._offer(link, "http://seed.example/", 1)
    released = [r for site in ("10.1.2.3", "127.0.0.1", "169.254.169.254") for r in spider._release(site)]
    assert len(released) == 3
    guard = build_from_crawler(NetGuardMiddleware, spider.crawler)
    for request in released:
        assert kind_of(request.meta) is RequestKind.PAGE
        with pytest.raises(IgnoreRequest, match="ALLOW_PRIVATE_ADDRESSES is off"):
            guard.process_request(request)


def test_a_discovered_link_on_the_never_list_is_refused(tmp_path: Path) -> None:
    """SNA-NEVER, YOT-REMOVAL: a link to a domain on the operator's list is released like any page and
    refused by the removal-list middleware, never fetched."""
    listed = tmp_path / "never.txt"
    listed.write_text("never.example\n")
    spider = _spider(tmp_path, {"REMOVAL_LIST": str(listed)}, url="http://seed.example/")
    spider._offer("http://www.never.example/page", "http://seed.example/", 1)
    [request] = list(spider._release("www.never.example"))
    with pytest.raises(IgnoreRequest, match="removal list"):
        build_from_crawler(RemovalListMiddleware, spider.crawler).process_request(request)


def test_a_site_has_at_most_a_window_of_requests_in_the_scheduler(tmp_path: Path) -> None:
    """A site gets WINDOW requests at once; the frontier keeps the rest in its own order, so a late, better
    linked URL still goes before earlier ones."""
    spider = _spider(tmp_path, url="http://seed.example/")
    for i in range(5):
        spider._offer(f"http://big.example/{i}", "http://big.example/", 1)
    first = list(spider._release("big.example"))
    assert [r.url for r in first] == [f"http://big.example/{i}" for i in range(WINDOW)]
    assert list(spider._release("big.example")) == []
    spider._offer("http://big.example/4", "http://other.example/", 1)
    spider._queued["big.example"] -= 1
    assert [r.url for r in spider._release("big.example")] == ["http://big.example/4"]


def test_refusing_profiles_and_a_missing_allow_list_stop_the_spider(tmp_path: Path) -> None:
    """SYN-MODES, SER-NOCRAWL: the spider refuses as the command line does, when built by another runner;
    yottabot without -a sites is refused, with it only the listed sites are followed."""
    with pytest.raises(ConfigError, match="does not wander the web"):
        _spider(tmp_path, {"BOT_PROFILE": "synapsebot"}, url="http://seed.example/")
    with pytest.raises(ConfigError, match="reviewed list of sites"):
        _spider(tmp_path, {"BOT_PROFILE": "yottabot"}, url="https://docs.example/")
    sites = tmp_path / "sites.txt"
    sites.write_text("docs.example\n")
    spider = _spider(tmp_path, {"BOT_PROFILE": "yottabot"}, url="https://docs.example/", sites=str(sites))
    spider._offer("https://api.docs.example/", "https://docs.example/", 1)
    spider._offer("https://elsewhere.example/", "https://docs.example/", 1)
    assert spider.frontier.sites_waiting() == ["api.docs.example"]
    assert spider.frontier.cuts["scope"] == 1


def test_nothing_more_is_released_once_the_page_limit_refused_a_request(tmp_path: Path) -> None:
    """SYN-LIMITS: once the page limit has refused a request, the frontier releases nothing more (its pending
    URLs are not sent through the middlewares one by one only to be refused)."""
    spider = _spider(tmp_path, url="http://seed.example/")
    for i in range(5):
        spider._offer(f"http://big.example/{i}", "http://other.example/", 1)
    assert spider.crawler.stats is not None
    spider.crawler.stats.inc_value("budget/over_limit")
    assert list(spider._release("big.example")) == []
    assert spider.frontier.pending_counts() == {"big.example": 5}


class _Engine:
    """Collects what the spider hands the engine (the engine itself runs only in a reactor)."""

    def __init__(self) -> None:
        self.crawled: list[scrapy.Request] = []

    def crawl(self, request: scrapy.Request) -> None:
        self.crawled.append(request)


def test_a_sites_next_request_is_released_when_one_leaves_the_downloader_counted_once(tmp_path: Path) -> None:
    """SNA-RATE: a site's next URL is released as soon as its request leaves the downloader (Scrapy's
    request_left_downloader), not once its page has been read and stored; the callback or errback that follows
    releases nothing more, so the site never has two requests out at once."""
    spider = _spider(tmp_path, url="http://seed.example/")
    for i in range(3):
        spider._offer(f"http://big.example/{i}", "http://other.example/", 1)
    [first] = list(spider._release("big.example"))
    assert list(spider._release("big.example")) == []  # the window is full
    engine = _Engine()
    spider.crawler.engine = engine  # type: ignore[assignment]
    spider.crawler.signals.send_catch_log(signals.request_left_downloader, request=first, spider=spider)
    assert [r.url for r in engine.crawled] == ["http://big.example/1"]
    spider._answered(first)  # the callback's turn, after the downloader's
    assert len(engine.crawled) == 1
    assert spider._queued["big.example"] == WINDOW


def test_a_site_is_worth_its_best_waiting_page_once_that_outranks_its_released_request(tmp_path: Path) -> None:
    """The web crawl's queue values a due site by the better of its released request's rank and the best
    page it has waiting now: in-links found after a request was released still count for its site."""
    spider = _spider(tmp_path, url="http://seed.example/")
    spider._offer("http://big.example/0", "http://a.example/", 1)
    spider._offer("http://big.example/1", "http://big.example/", 1)
    [request] = list(spider._release("big.example"))
    assert request.url == "http://big.example/0"
    queued = float(request.priority)
    assert spider.runtime.target.site_value == spider.site_value
    assert spider.site_value("big.example", queued) == queued  # what waits ranks lower
    for n in range(8):
        spider._offer("http://big.example/1", f"http://l{n}.example/", 1)
    assert spider.site_value("big.example", queued) > queued
    assert spider.site_value("empty.example", queued) == queued


def test_a_redirect_off_the_allow_list_is_refused_like_a_link(tmp_path: Path) -> None:
    """SNA-NEVER, YOT-REDIRECT: a web crawl's allow-list (-a sites) holds for redirects as for links: under
    SnagaBot, whose redirects may cross sites, a listed page that redirects to an unlisted site is not
    followed (one count, never requested); a redirect to another listed site is."""
    from scrapy.http import Response

    from middlewares.redirects import ScopedRedirectMiddleware

    sites = tmp_path / "sites.txt"
    sites.write_text("docs.example\nhttps://blog.example/posts/\n")
    spider = _spider(tmp_path, url="https://docs.example/", sites=str(sites))
    redirects = build_from_crawler(ScopedRedirectMiddleware, spider.crawler)
    request = scrapy.Request("https://docs.example/moved")

    def moved(location: str) -> Response:
        return Response(request.url, status=301, headers={"Location": location}, request=request)

    hop = redirects.process_response(request, moved("https://blog.example/posts/1"))
    assert isinstance(hop, scrapy.Request) and hop.url == "https://blog.example/posts/1"
    with pytest.raises(IgnoreRequest, match="not on the crawl's list of sites"):
        redirects.process_response(request, moved("https://blog.example/about"))
    with pytest.raises(IgnoreRequest, match="not on the crawl's list of sites"):
        redirects.process_response(request, moved("https://elsewhere.example/"))
    assert spider.crawler.stats.get_value("redirect/refused/scope") == 2  # type: ignore[union-attr]
