"""RenderMiddleware: JS rendering is the operator's opt-in, and only a fetched HTML page is rendered.

No browser runs here: JS_CHROMIUM points at an executable that is never started, and where a render
is attempted the download handler is a stand-in that fails as a broken browser would.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from playwright.async_api import Error as PlaywrightError
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler

from middlewares.engine.addon import render_settings
from middlewares.render import RenderMiddleware, refuse
from synapsecrawl.crawl.config import CrawlConfig
from synapsecrawl.crawl.kinds import KIND, RequestKind
from tests.adapters.crawlers import crawler_for, project

BROWSER = shutil.which("true") or "/bin/true"


class _BrokenBrowser:
    """The download handler of a browser that fails to start."""

    def __init__(self) -> None:
        self.asked: list[Request] = []

    async def download_request_async(self, request: Request) -> Response:
        self.asked.append(request)
        raise PlaywrightError("Browser closed.\nmore lines")


def rendering(tmp_path: Path, name: str = "page") -> tuple[RenderMiddleware, _BrokenBrowser, object]:
    crawler = crawler_for(tmp_path, name=name, JS_RENDERING=True, JS_CHROMIUM=BROWSER)
    browser = _BrokenBrowser()
    crawler.engine = SimpleNamespace(downloader=SimpleNamespace(handlers=browser))  # type: ignore[assignment]
    return build_from_crawler(RenderMiddleware, crawler), browser, crawler.stats


def page(
    url: str = "http://a.test/app", status: int = 200, content_type: str = "text/html", **meta: object
) -> tuple[Request, Response]:
    request = Request(url, meta=meta)
    body = b"<!doctype html><html><body><div id=app></div></body></html>"
    return request, HtmlResponse(url, status=status, body=body, headers={"Content-Type": content_type}, request=request)


def test_rendering_is_off_by_default(tmp_path: Path) -> None:
    """ALL-NOJS: no profile runs JavaScript: the middleware is off and no browser handler is set."""
    with pytest.raises(NotConfigured, match="JS_RENDERING is off"):
        build_from_crawler(RenderMiddleware, crawler_for(tmp_path))
    assert render_settings(CrawlConfig.from_settings(project()).render, {}) == {}


def test_the_opt_in_installs_the_browser_handler_and_fetches_nothing_itself() -> None:
    """ALL-NOJS opt-in: JS_RENDERING=True routes http(s) through scrapy-playwright with one context;
    the browser's own requests are refused (every request goes through the crawler)."""
    # what the add-on sets (a test crawler's reactorless DOWNLOAD_HANDLERS would outrank it here)
    config = CrawlConfig.from_settings({"JS_RENDERING": True, "JS_CHROMIUM": BROWSER})
    settings = render_settings(config.render, {})
    handlers = settings["DOWNLOAD_HANDLERS"]
    assert handlers["http"] == handlers["https"] == "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
    assert settings["PLAYWRIGHT_MAX_CONTEXTS"] == 1
    assert settings["PLAYWRIGHT_ABORT_REQUEST"] == "middlewares.render.refuse"
    assert refuse(object()) is True  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "status", "content_type", "meta"),
    [
        ("feed", 200, "text/html", {}),  # a feed crawl renders nothing
        ("page", 404, "text/html", {}),  # only a 200
        ("page", 200, "application/pdf", {}),  # only HTML
        ("page", 200, "text/html", {KIND: RequestKind.ROBOTS}),  # side fetches are no pages
        ("site", 200, "text/html", {KIND: RequestKind.SUBRESOURCE}),
    ],
)
async def test_only_a_pages_html_200_is_rendered(
    tmp_path: Path, name: str, status: int, content_type: str, meta: dict[str, object]
) -> None:
    """ALL-NOJS opt-in: what is not an HTML 200 of a page, site or sitemap crawl goes on as fetched,
    without the browser."""
    mw, browser, _ = rendering(tmp_path, name)
    request, response = page(status=status, content_type=content_type, **meta)
    assert await mw.process_response(request, response) is response
    assert browser.asked == []


async def test_a_browser_failure_reads_the_page_as_fetched(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """ALL-NOJS opt-in, bad input: when the browser fails the page is read as fetched, counted, with
    one warning line naming the first line of the error."""
    mw, browser, stats = rendering(tmp_path)
    request, response = page()
    assert await mw.process_response(request, response) is response
    [render] = browser.asked
    assert render.meta["playwright"] is True and render.url == request.url
    assert stats.get_value("render/failed") == 1  # type: ignore[attr-defined]
    [line] = [r.getMessage() for r in caplog.records if r.name == "middlewares.render"]
    assert line == "not rendered (Browser closed.), read as fetched: http://a.test/app"
