"""SummaryExtension: pages counted as they arrive, side fetches not; the summary into stats at close."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scrapy import Request, signals
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler

from middlewares.engine.runtime import Runtime
from middlewares.engine.summary import SummaryExtension
from synapsecrawl.crawl.kinds import KIND, RequestKind
from tests.adapters.crawlers import crawler_for


def answer(url: str, **meta: object) -> tuple[Response, Request]:
    request = Request(url, meta=meta)
    return Response(url, request=request), request


def test_only_pages_are_counted_as_fetched(tmp_path: Path) -> None:
    """Crawl summary: a page's answer counts as fetched for its site; robots.txt, tdmrep.json and a
    render subresource are side fetches and do not."""
    crawler = crawler_for(tmp_path)
    build_from_crawler(SummaryExtension, crawler)
    for response, request in (
        answer("http://a.test/"),
        answer("http://a.test/2"),
        answer("http://b.test/"),
        answer("http://a.test/robots.txt", **{KIND: RequestKind.ROBOTS}),
        answer("http://a.test/.well-known/tdmrep.json", **{KIND: RequestKind.TDMREP}),
        answer("http://a.test/app.js", **{KIND: RequestKind.SUBRESOURCE}),
    ):
        crawler.signals.send_catch_log(signals.response_received, response=response, request=request, spider=None)
    assert dict(Runtime.of(crawler).summary.fetched) == {"a.test": 2, "b.test": 1}


def test_the_summary_lands_in_stats_and_the_log_when_the_spider_closes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Crawl summary: at close the counters become summary/* stats, one line for the crawl and one
    per site is logged, and the runtime is closed (its KB thread, store and workers)."""
    crawler = crawler_for(tmp_path)
    build_from_crawler(SummaryExtension, crawler)
    runtime = Runtime.of(crawler)
    thread = runtime.kb.thread  # the KB's thread started, so closing it shows
    runtime.summary.fetch("a.test")
    runtime.summary.skip("a.test", "robots", "http://a.test/private")
    with caplog.at_level(logging.INFO, logger="middlewares.engine.summary"):
        crawler.signals.send_catch_log(signals.spider_closed, spider=None, reason="finished")
    stats = crawler.stats.get_stats()  # type: ignore[union-attr]
    assert stats["summary/fetched"] == 1 and stats["summary/skipped/robots"] == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "middlewares.engine.summary"]
    assert lines[0].startswith("crawl summary: fetched 1, stored 0, skipped 1 (robots 1)")
    assert lines[1].strip().startswith("a.test: fetched 1")
    assert not thread.is_alive()  # the KB committed what it was asked, closed its store and stopped
