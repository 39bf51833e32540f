"""Removals and RemovalListMiddleware (middlewares.removals): the one path by which a page leaves the KB.

Each test fills a real SQLite KB under tmp_path, asks for a removal through the adapter on a real crawler,
and reads the KB, the stats and the log lines afterwards.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.misc import build_from_crawler

from middlewares.removals import REASONS, RemovalListMiddleware, Removals
from synapsecrawl.kb.records import PageRecord, utcnow
from synapsecrawl.rules.robots import parse_robots
from tests.adapters.crawlers import crawler_for, opened_store

URL = "http://docs.test/guide"


def _page(kb: str, url: str) -> PageRecord:
    return PageRecord(kb, url, "Guide", "text", "text/html", 200, utcnow())


def _removed_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("removed from the knowledge base")]


@pytest.mark.parametrize("reason", REASONS)
async def test_each_reason_is_one_deletion_one_line_one_stat(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, reason: str
) -> None:
    """SYN-REMOVE: whatever decided it (noindex, 404, 410, a move, robots.txt, the removal list), a page
    leaves the KB through one path: deleted, one line "removed from the knowledge base (WHY): URL", one
    count in reread/removed/REASON. A page already gone is neither logged nor counted again."""
    crawler = crawler_for(tmp_path)
    opened_store(crawler).put_page(_page("kb1", URL))
    removals = Removals.of(crawler)
    assert Removals.of(crawler) is removals  # one per crawl
    with caplog.at_level(logging.INFO, logger="middlewares.removals"):
        assert await removals.remove("kb1", URL, reason, f"because {reason}")  # type: ignore[arg-type]
        assert not await removals.remove("kb1", URL, reason, f"because {reason}")  # type: ignore[arg-type]
    assert opened_store(crawler).get_page("kb1", URL) is None
    assert _removed_lines(caplog) == [f"removed from the knowledge base (because {reason}): {URL}"]
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert {k: v for k, v in stats.items() if k.startswith("reread/removed/")} == {f"reread/removed/{reason}": 1}


async def test_a_removal_without_a_known_reason_is_refused(tmp_path: Path) -> None:
    """SYN-REMOVE: a removal must say which of the known reasons it is; anything else is a clear error."""
    crawler = crawler_for(tmp_path)
    with pytest.raises(ValueError, match="a removal needs one of noindex, 404"):
        await Removals.of(crawler).remove("kb1", URL, "stale", "it looked old")  # type: ignore[arg-type]


async def test_a_read_robots_txt_removes_that_origins_disallowed_pages_in_every_kb(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """YOT-ROBOTS: reading a robots.txt that disallows stored pages removes them at once from every KB,
    each one line and one reread/removed/robots, plus the origin's one summary line; pages of other
    origins (another port, another scheme) and the pages it allows stay."""
    crawler = crawler_for(tmp_path)
    store = opened_store(crawler)
    urls = [
        "https://h.test/blog/a",
        "https://h.test/docs/b",
        "https://h.test:8443/blog/c",
        "http://h.test/blog/d",
        "https://h.testing/blog/e",
    ]
    for kb in ("one", "two"):
        for url in urls:
            store.put_page(_page(kb, url))
    rules = parse_robots(b"User-agent: *\nDisallow: /blog/\n").rules_for(("YottaBot-SearchBot",))
    with caplog.at_level(logging.INFO, logger="middlewares.removals"):
        assert await Removals.of(crawler).disallowed("https://h.test", rules) == 2
    assert len(store.page_urls()) == 8 and store.get_page("one", "https://h.test/blog/a") is None
    assert store.get_page("two", "https://h.test/blog/a") is None
    assert crawler.stats.get_value("reread/removed/robots") == 2  # type: ignore[union-attr]
    assert len(_removed_lines(caplog)) == 2
    assert "robots.txt of https://h.test disallows 2 stored pages: removed from the knowledge base" in caplog.text


def test_no_removal_list_switches_it_off(tmp_path: Path) -> None:
    """YOT-REMOVAL: without REMOVAL_LIST the middleware is off (NotConfigured)."""
    with pytest.raises(NotConfigured):
        build_from_crawler(RemovalListMiddleware, crawler_for(tmp_path))


@pytest.mark.parametrize(
    "listing",
    [
        # a domain: its subdomains too, which no URL prefix holds (the whole KB is read, off the loop)
        "never.test\nhttp://docs.test/private/\nnot a domain or url\n",
        # URL prefixes only: the KB is asked for those prefixes (http and https), no more
        "http://docs.test/private/\nhttp://www.never.test/\n",
    ],
)
async def test_the_removal_list_deletes_listed_pages_and_refuses_them(tmp_path: Path, listing: str) -> None:
    """YOT-REMOVAL, SNA-NEVER: listed pages leave the KB when the crawl opens (under either scheme, a
    listing holds for http and https), counted as reread/removed/listed; no request to them goes out,
    robots.txt included; unlisted pages stay; a line that is neither a domain nor a URL prefix is skipped,
    not fatal."""
    path = tmp_path / "removals.txt"
    path.write_text(listing)
    crawler = crawler_for(tmp_path, REMOVAL_LIST=str(path))
    mw = build_from_crawler(RemovalListMiddleware, crawler)
    store = opened_store(crawler)
    for url in ("http://docs.test/private/a", "https://docs.test/private/c", "http://www.never.test/x", URL):
        store.put_page(_page("kb1", url))
    await crawler.signals.send_catch_log_async(signals.spider_opened, spider=None)
    assert [url for _, url in store.page_urls()] == [URL]
    for url in ("http://www.never.test/robots.txt", "http://docs.test/private/b"):
        with pytest.raises(IgnoreRequest, match="removal list"):
            mw.process_request(Request(url))
    mw.process_request(Request(URL))
    assert crawler.stats.get_value("reread/removed/listed") == 3  # type: ignore[union-attr]
