"""What each request kind means to the middlewares that ask its row: budget, type gate,
summary, reread. Each test names the kinds it expects, so a changed row in the table shows here."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http import Headers, Response
from scrapy.utils.misc import build_from_crawler

from middlewares.budget import PageBudgetMiddleware
from middlewares.engine.runtime import Runtime
from middlewares.engine.summary import SummaryExtension
from middlewares.reread import RereadMiddleware
from middlewares.sizelimit import ResponseGateMiddleware
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.kb.records import PageRecord, utcnow
from tests.adapters.crawlers import crawler_for, opened_store

K = RequestKind
SIDE_FETCHES = {K.ROBOTS, K.TDMREP, K.SUBRESOURCE}  # no page: not budgeted, not in the summary


def kinded(kind: RequestKind, url: str = "http://a.test/x", **meta: object) -> Request:
    return Request(url, meta={KIND: kind, **meta})


@pytest.mark.parametrize("kind", list(K))
async def test_only_pages_and_what_a_crawl_reads_spend_the_page_budget(tmp_path: Path, kind: RequestKind) -> None:
    """SYN-LIMITS, OMN-FETCH: with the limit spent, a page, sitemap, feed, article or icon is refused;
    robots.txt, tdmrep.json and a render subresource are still fetched."""
    crawler = crawler_for(tmp_path, CLOSESPIDER_PAGECOUNT=1)
    mw = build_from_crawler(PageBudgetMiddleware, crawler)
    await mw.process_request(Request("http://a.test/first"))
    if kind in SIDE_FETCHES:
        await mw.process_request(kinded(kind))
    else:
        with pytest.raises(IgnoreRequest, match="page limit 1"):
            await mw.process_request(kinded(kind))
    assert mw.remaining == 0


@pytest.mark.parametrize("kind", list(K))
def test_the_type_gate_refuses_a_foreign_type_only_for_pages_articles_and_icons(
    tmp_path: Path, kind: RequestKind
) -> None:
    """SNA-HTML: a Content-Type the profile does not read stops a page, an article or an icon at its
    headers (skipped as "type"); robots.txt, tdmrep.json, sitemaps, feeds and subresources are read
    whatever their type."""
    crawler = crawler_for(tmp_path)
    mw = build_from_crawler(ResponseGateMiddleware, crawler)
    request = kinded(kind)
    results = crawler.signals.send_catch_log(
        signals.headers_received,
        headers=Headers({"Content-Type": "application/zip"}),
        body_length=10,
        request=request,
        spider=None,
        dont_log=StopDownload,
    )
    stopped = any(getattr(result, "check", lambda _: False)(StopDownload) for _, result in results)
    response = Response(request.url, body=b"PK", headers={"Content-Type": "application/zip"}, request=request)
    gated = {K.PAGE, K.ARTICLE, K.ICON}
    assert stopped is (kind in gated)
    if kind in gated:
        with pytest.raises(IgnoreRequest, match="does not read application/zip"):
            mw.process_response(request, response)
        assert Runtime.of(crawler).summary.skipped["a.test"]["type"] == 1
    else:
        assert mw.process_response(request, response) is response


@pytest.mark.parametrize("kind", list(K))
def test_the_summary_counts_pages_not_side_fetches(tmp_path: Path, kind: RequestKind) -> None:
    """Crawl summary: an answer counts as fetched, and one cut at its size cap as truncated, unless it
    is a side fetch (robots.txt, tdmrep.json, a render subresource)."""
    crawler = crawler_for(tmp_path)
    build_from_crawler(SummaryExtension, crawler)
    gate = build_from_crawler(ResponseGateMiddleware, crawler)
    request = kinded(kind, size_limit_bytes=4)
    response = Response(request.url, body=b"0123456789", request=request)
    crawler.signals.send_catch_log(signals.response_received, response=response, request=request, spider=None)
    assert "truncated" in gate.process_response(request, response).flags
    summary = Runtime.of(crawler).summary
    counted = 0 if kind in SIDE_FETCHES else 1
    assert summary.fetched.get("a.test", 0) == counted
    assert summary.stats().get("summary/truncated", 0) == counted


@pytest.mark.parametrize("kind", list(K))
async def test_only_pages_sitemaps_and_feeds_are_asked_again_conditionally(tmp_path: Path, kind: RequestKind) -> None:
    """SYN-REREAD, SER-COND: a stored URL asked again as a page, sitemap or feed carries its copy's
    validators; robots.txt, tdmrep.json, an article, an icon and a subresource never do."""
    crawler = crawler_for(tmp_path)
    mw = build_from_crawler(RereadMiddleware, crawler)
    url = "http://a.test/x"
    record = PageRecord("kb1", url, "X", "text", "text/html", 200, utcnow(), etag='"v1"')
    opened_store(crawler).put_page(record)
    request = kinded(kind, url)
    await mw.process_request(request)
    assert (request.headers.get(b"If-None-Match") == b'"v1"') is (kind in {K.PAGE, K.SITEMAP, K.FEED})
