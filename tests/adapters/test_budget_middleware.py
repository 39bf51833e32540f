"""PageBudgetMiddleware: pages count once toward the limit; robots.txt and side fetches never do."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.misc import build_from_crawler

from middlewares.budget import PageBudgetMiddleware
from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.kinds import KIND, RequestKind
from tests.adapters.crawlers import crawler_for


async def test_pages_past_the_operators_limit_are_dropped_before_the_network(tmp_path: Path) -> None:
    """SYN-LIMITS: with CLOSESPIDER_PAGECOUNT 2 the third page is refused, counted in stats and in the
    summary as "limit"; the two before it pass."""
    crawler = crawler_for(tmp_path, CLOSESPIDER_PAGECOUNT=2)
    mw = build_from_crawler(PageBudgetMiddleware, crawler)
    assert (mw.limit, mw.remaining) == (2, 2)
    await mw.process_request(Request("http://a.test/1"))
    await mw.process_request(Request("http://a.test/2"))
    assert mw.remaining == 0
    with pytest.raises(IgnoreRequest, match="page limit 2"):
        await mw.process_request(Request("http://a.test/3"))
    assert crawler.stats.get_value("budget/over_limit") == 1  # type: ignore[union-attr]
    assert Runtime.of(crawler).summary.skipped["a.test"]["limit"] == 1


async def test_robots_txt_and_side_fetches_are_not_pages(tmp_path: Path) -> None:
    """SYN-LIMITS, OMN-FETCH: robots.txt, tdmrep.json and render subresources (their kinds) and
    requests already counted spend nothing, even past the limit."""
    mw = build_from_crawler(PageBudgetMiddleware, crawler_for(tmp_path, CLOSESPIDER_PAGECOUNT=1))
    await mw.process_request(Request("http://a.test/page"))
    await mw.process_request(Request("http://a.test/robots.txt", meta={KIND: RequestKind.ROBOTS}))
    await mw.process_request(Request("http://a.test/.well-known/tdmrep.json", meta={KIND: RequestKind.TDMREP}))
    await mw.process_request(Request("http://a.test/app.js", meta={KIND: RequestKind.SUBRESOURCE}))
    await mw.process_request(Request("http://a.test/page", meta={"budget_counted": True}))
    assert mw.remaining == 0


async def test_a_page_counts_once_across_its_redirects_and_retries(tmp_path: Path) -> None:
    """SYN-LIMITS: a redirect hop or retry carries budget_counted from its first pass, so a page that
    redirects twice spends one page, not three."""
    mw = build_from_crawler(PageBudgetMiddleware, crawler_for(tmp_path, CLOSESPIDER_PAGECOUNT=2))
    first = Request("http://a.test/old")
    await mw.process_request(first)
    assert first.meta["budget_counted"] is True
    for hop in ("http://a.test/mid", "http://a.test/new"):
        await mw.process_request(first.replace(url=hop))
    assert mw.remaining == 1


async def test_the_spiders_own_lower_limit_wins(tmp_path: Path) -> None:
    """SYN-LIMITS: a KB user's -a max_pages (spider.limits) is the crawl's limit."""
    crawler = crawler_for(tmp_path, limits=SimpleNamespace(pages=1))
    mw = build_from_crawler(PageBudgetMiddleware, crawler)
    assert mw.limit == 1
    await mw.process_request(Request("http://a.test/1"))
    with pytest.raises(IgnoreRequest):
        await mw.process_request(Request("http://a.test/2"))


def test_the_profiles_default_limit_applies_when_nobody_sets_one(tmp_path: Path) -> None:
    """SYN-LIMITS: without a setting, SynapseBot's crawl may fetch 500 pages."""
    mw = build_from_crawler(PageBudgetMiddleware, crawler_for(tmp_path))
    assert (mw.limit, mw.remaining) == (500, 500)
