"""RequestLogExtension: what each signal adds to the request log, and REPORT_ENABLED."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scrapy import Request, Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, TextResponse
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from middlewares.engine.requestlog import RequestLogExtension
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.crawl.requestlog import LOG_NAME


def extension(tmp_path: Path, **settings: object) -> RequestLogExtension:
    crawler = get_crawler(
        Spider, settings_dict={"REPORT_DIR": str(tmp_path), "KB_URI": f"sqlite:///{tmp_path}/kb", **settings}
    )
    crawler.spider = Spider("t")
    crawler.stats = MemoryStatsCollector(crawler)
    return build_from_crawler(RequestLogExtension, crawler)


def test_report_enabled_off_leaves_it_out(tmp_path: Path) -> None:
    """REPORT_ENABLED: False switches the extension off (Scrapy logs it as disabled), no files written."""
    with pytest.raises(NotConfigured):
        extension(tmp_path, REPORT_ENABLED=False)
    assert list(tmp_path.iterdir()) == []


def test_each_signal_lands_in_the_log(tmp_path: Path) -> None:
    """An answered request is logged with its status, bytes and Retry-After; a request that left
    the downloader unanswered is logged with no status, and an unanswered robots.txt also as a robots
    read judged as the profile judges it (SYN-ROBOTS-5XX: unreachable, nothing allowed); a Crawl-delay
    read from robots.txt is the site's; the report is written when the spider closes."""
    ext = extension(tmp_path)
    send = ext._crawler.signals.send_catch_log
    robots_ok = Request("http://a.test/robots.txt", meta={KIND: RequestKind.ROBOTS})
    page = Request("http://a.test/busy", meta={"download_latency": 0.01})
    lost_robots = Request("http://b.test/robots.txt", meta={KIND: RequestKind.ROBOTS})
    busy = TextResponse(page.url, status=503, headers={"Retry-After": "7"}, body=b"busy", request=page)
    robots_body = TextResponse(robots_ok.url, body=b"User-agent: *\nCrawl-delay: 4\n", request=robots_ok)
    for request, response in ((robots_ok, robots_body), (page, busy), (lost_robots, None)):
        send(signals.request_reached_downloader, request=request, spider=None)
        if response is not None:
            send(signals.response_downloaded, response=response, request=request, spider=None)
        send(signals.request_left_downloader, request=request, spider=None)
        if response is not None:
            send(signals.response_received, response=response, request=request, spider=None)
    ext._runtime.summary.skip("a.test", "noindex", "http://a.test/n")
    send(
        signals.response_received,
        response=HtmlResponse("http://a.test/p", body=b""),
        request=Request("http://a.test/p"),
        spider=None,
    )  # a page's answer is not a robots read
    send(signals.spider_closed, spider=ext._crawler.spider, reason="finished")
    lines = [json.loads(line) for line in (ext.directory / LOG_NAME).read_text().splitlines()]
    requests = [
        (e["url"], e["kind"], e["status"], e["bytes"], e["retry_after"]) for e in lines if e["event"] == "request"
    ]
    assert requests == [
        ("http://a.test/robots.txt", "robots", 200, 29, ""),
        ("http://a.test/busy", "page", 503, 4, "7"),
        ("http://b.test/robots.txt", "robots", None, 0, ""),
    ]
    robots = {
        e["url"]: (e["status"], e["outcome"], e["allows_all"], e["crawl_delay"])
        for e in lines
        if e["event"] == "robots"
    }
    assert robots == {
        "http://a.test/robots.txt": (200, "parsed", True, 4.0),
        "http://b.test/robots.txt": (None, "unreachable", False, None),
    }
    assert [(e["reason"], e["url"]) for e in lines if e["event"] == "skip"] == [("noindex", "http://a.test/n")]
    sites = {e["site"]: e["crawl_delay"] for e in lines if e["event"] == "site"}
    assert sites == {"a.test": 4.0, "b.test": None}
    report = json.loads((ext.directory / "report.json").read_text())
    assert report["crawl"]["finish_reason"] == "finished" and report["totals"]["requests"] == 3
    assert (ext.directory / "index.html").is_file()


def test_an_unwritable_report_dir_is_one_line_and_the_crawl_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Bad input: a REPORT_DIR that cannot be made (a file is in the way) switches the report off for
    this crawl with one error line naming it; the crawl itself is not stopped."""
    blocker = tmp_path / "reports"
    blocker.write_text("a file, not a directory")
    with pytest.raises(NotConfigured):
        extension(blocker)
    [record] = [r for r in caplog.records if r.name == "middlewares.engine.requestlog"]
    assert record.levelname == "ERROR" and str(blocker) in record.getMessage()
    assert "\n" not in record.getMessage()
