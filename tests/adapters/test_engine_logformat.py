"""middlewares.engine.logformat: Scrapy's item log lines name the page, never its text."""

from __future__ import annotations

import logging

from scrapy import Spider
from scrapy.exceptions import DropItem
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from middlewares.engine.logformat import PageLogFormatter
from synapsecrawl import settings as project_settings

TEXT = "the whole text of a page, which must never reach a log line " * 400


def _line(result: dict) -> str:  # type: ignore[type-arg]
    return str(result["msg"] % result["args"])


def test_the_project_uses_the_page_log_formatter() -> None:
    """LOG_FORMATTER is ours in the project's settings."""
    assert project_settings.LOG_FORMATTER == "middlewares.engine.logformat.PageLogFormatter"


def test_an_item_scraped_dropped_or_failing_is_named_by_its_url_without_its_text() -> None:
    """An item scraped (DEBUG), dropped, or failing in a pipeline is one line with its URL (SNA-PRIVACY:
    stored text is never shown in full, and a log is shown to operators)."""
    crawler = get_crawler(Spider)
    spider = Spider("site")
    spider.crawler = crawler
    formatter = build_from_crawler(PageLogFormatter, crawler)
    item = {"url": "https://a.test/page", "kb": "docs", "title": "A page", "text": TEXT}
    response = HtmlResponse("https://a.test/page", body=TEXT.encode())
    lines = {
        "scraped": formatter.scraped(item, response, spider),
        "dropped": formatter.dropped(item, DropItem("kept out"), response, spider),
        "error": formatter.item_error(item, ValueError("boom"), response, spider),
    }
    for name, result in lines.items():
        line = _line(result)
        assert "https://a.test/page" in line and "must never reach" not in line and "\n" not in line, name
    assert lines["error"]["level"] == logging.ERROR
    assert "kept out" in _line(lines["dropped"])
    assert "an item of type object" in _line(formatter.item_error(object(), ValueError("x"), None, spider))
