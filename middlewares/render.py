"""JS rendering (ALL-NOJS opt-in): a fetched HTML page, run in headless Chromium through scrapy-playwright.

Rendering happens in ``process_response``, once the page's own answer has
come through every other middleware, not in the download handler: a request
in the handler holds its site's download slot, so a subresource fetched
through the crawler would wait behind the page that waits for it (a site's
concurrency is 1 in most profiles). Here the slot is free, the page's request
still counts as in flight (the queue hands out no other page of the site),
and each subresource takes its own turn: the Crawl-delay holds between
documents and subresources alike. ``synapsecrawl.crawl.render`` judges every
request the page makes; scrapy-playwright (``DOWNLOAD_HANDLERS``, set by the
profile add-on's ``render_settings``) runs the browser and returns the DOM.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from dataclasses import dataclass
from time import monotonic
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK

from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.kinds import KIND, RequestKind, kind_of
from synapsecrawl.crawl.meta import RENDER_STATE as _STATE
from synapsecrawl.crawl.render import PageRender, RenderBudget, RenderConfig, should_render

if TYPE_CHECKING:
    from playwright.async_api import Page, Route, WebSocketRoute
    from playwright.async_api import Request as BrowserRequest
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["RenderMiddleware", "refuse"]

logger = logging.getLogger(__name__)

_CONTEXT = "synapsecrawl-render"
_READ_SECONDS = 5.0  # once the budget is spent: to read the DOM, or to close a stuck page
_OPEN_SECONDS = 60.0  # to start the browser (once) and open a tab, before the page's own time starts
# Not handed to the browser: the body is already decoded and sized, and cookies are never kept.
_DROPPED_HEADERS = {
    b"set-cookie",
    b"set-cookie2",
    b"content-encoding",
    b"content-length",
    b"transfer-encoding",
    b"connection",
    b"keep-alive",
}


def refuse(request: BrowserRequest) -> bool:
    """scrapy-playwright's PLAYWRIGHT_ABORT_REQUEST: the browser fetches nothing itself."""
    return True


@dataclass
class _State:
    page: PageRender
    budget: RenderBudget
    response: Response  # the page as fetched: what its navigation is answered with


# Playwright is imported only once rendering is on: a crawl without JS_RENDERING (the default) does not
# pay its import at every start.
def _playwright_error() -> type[Exception]:
    from playwright.async_api import Error

    return Error


def _page_method(method: Any, *args: Any) -> Any:
    from scrapy_playwright.page import PageMethod

    return PageMethod(method, *args)


class RenderMiddleware:
    def __init__(self, crawler: Crawler, runtime: Runtime, config: RenderConfig) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._config = config
        self._tabs = asyncio.Semaphore(config.max_pages)  # waiting for a tab is not the page's time

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        runtime = Runtime.of(crawler)
        if not runtime.config.render.enabled:
            raise NotConfigured("JS_RENDERING is off (ALL-NOJS)")
        return cls(crawler, runtime, runtime.config.render)

    def _stat(self, key: str) -> None:
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value(key)

    async def process_response(self, request: Request, response: Response) -> Response:
        mode = self._runtime.target.name
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        if not should_render(mode, kind_of(request.meta), response.status, content_type, response.body[:64]):
            return response
        try:
            async with self._tabs:
                text = await self._render(response)
        except Exception as exc:  # noqa: BLE001 - any browser failure: the page is read as fetched
            self._stat("render/failed")
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            logger.warning("not rendered (%s), read as fetched: %s", reason, response.url)
            return response
        self._stat("render/pages")
        cap = int(request.meta.get("size_limit_bytes") or self._runtime.profile.size_bytes)
        body = text.encode("utf-8")
        if len(body) > cap:
            self._stat("render/truncated")
            body = body[:cap]
        kind = content_type.split(";", 1)[0].strip() or "text/html"
        headers = response.headers.copy()
        headers.pop(b"Content-Length", None)
        headers[b"Content-Type"] = f"{kind}; charset=utf-8"
        return response.replace(body=body, headers=headers, flags=[*response.flags, "rendered"])

    async def _render(self, response: Response) -> str:
        state = _State(
            PageRender(self._runtime.site(response.url), self._runtime.site, self._config.max_subresources),
            RenderBudget(self._config.timeout),
            response,
        )
        render = Request(
            response.url,
            dont_filter=True,
            meta={
                KIND: RequestKind.PAGE.value,  # straight to the download handler: the page's own answer went through
                "playwright": True,
                "playwright_context": _CONTEXT,
                "playwright_context_kwargs": {
                    "service_workers": "block",
                    "accept_downloads": False,
                    "user_agent": self._runtime.config.user_agent,
                },
                "playwright_include_page": True,  # closed here, also when the watchdog gives up
                "playwright_page_init_callback": self._install_routes,
                "playwright_page_goto_kwargs": {"wait_until": "load", "timeout": 0},  # the watchdog times it
                "playwright_page_methods": [_page_method(self._settle, state.budget)],
                _STATE: state,
            },
        )
        assert self._crawler.engine is not None
        task = asyncio.ensure_future(self._crawler.engine.downloader.handlers.download_request_async(render))
        try:
            return await self._watch(task, state.budget)
        finally:
            task.cancel()
            page = render.meta.get("playwright_page")
            if page is not None:
                with suppress(_playwright_error(), TimeoutError):
                    await asyncio.wait_for(page.close(), _READ_SECONDS)

    async def _watch(self, task: asyncio.Future[Response], budget: RenderBudget) -> str:
        """The rendered DOM, unless the page's own time runs out first (a script that never
        yields, a DOM that never settles) or no tab opens."""
        opened_by = monotonic() + _OPEN_SECONDS
        while not task.done():
            if budget.started is None:  # looked at again shortly: the page's time starts with its tab
                left, look = opened_by - monotonic(), 0.25
            else:
                left, look = budget.remaining(monotonic()), float("inf")
            if left > 0:
                await asyncio.wait({task}, timeout=min(left, look))
                continue
            await asyncio.wait({task}, timeout=_READ_SECONDS)  # time is up: a last chance to read the DOM
            if not task.done():
                self._stat("render/timeout")
                if budget.started is None:
                    raise TimeoutError(f"Chromium opened no tab in {_OPEN_SECONDS:g} s")
                raise TimeoutError(f"scripts ran past JS_RENDER_TIMEOUT {self._config.timeout:g} s")
        return task.result().text

    async def _install_routes(self, page: Page, request: Request) -> None:
        state: _State = request.meta[_STATE]
        state.budget.start(monotonic())

        async def route(route: Route, browser_request: BrowserRequest) -> None:
            await self._answer(state, route, browser_request)

        async def close_socket(socket: WebSocketRoute) -> None:
            self._stat("render/refused/websocket")
            await socket.close()

        await page.route("**/*", route)
        await page.route_web_socket("**/*", close_socket)

    async def _answer(self, state: _State, route: Route, browser_request: BrowserRequest) -> None:
        try:
            main_frame = browser_request.frame.parent_frame is None
        except _playwright_error():  # a worker's request: no frame
            main_frame = False
        verdict = state.page.judge(
            browser_request.url,
            method=browser_request.method,
            resource_type=browser_request.resource_type,
            navigation=browser_request.is_navigation_request(),
            main_frame=main_frame,
        )
        with suppress(_playwright_error()):  # the page may have closed meanwhile
            if verdict.action == "document":
                await self._fulfill(route, state.response)
            elif verdict.action == "refuse":
                self._stat(f"render/refused/{verdict.reason}")
                await route.abort("blockedbyclient")
            elif verdict.action == "stay":
                self._stat(f"render/refused/{verdict.reason}")
                await route.fulfill(status=204)
            else:
                answer = await self._fetch(state.budget, browser_request)
                await (self._fulfill(route, answer) if answer is not None else route.abort("blockedbyclient"))

    async def _fetch(self, budget: RenderBudget, browser_request: BrowserRequest) -> Response | None:
        """The subresource, fetched through the crawler's downloader middlewares; ``None`` if refused or failed."""
        accept = browser_request.headers.get("accept") or "*/*"
        request = Request(
            browser_request.url,
            callback=NO_CALLBACK,
            dont_filter=True,
            headers={"Accept": accept},
            meta={KIND: RequestKind.SUBRESOURCE.value, "dont_retry": True, "dont_redirect": True},
        )
        assert self._crawler.engine is not None
        budget.fetch_started(monotonic())
        try:
            answer = await self._crawler.engine.download_async(request)
        except IgnoreRequest as exc:  # robots.txt, a paused site, the address guard
            self._stat("render/subresource/refused")
            logger.info("subresource not fetched: %s", exc)
            return None
        except Exception as exc:  # noqa: BLE001 - a failed subresource fails in the page, as in a browser
            self._stat("render/subresource/failed")
            logger.info("subresource %s failed: %s", browser_request.url, exc)
            return None
        finally:
            budget.fetch_ended(monotonic())
        self._stat("render/subresource/fetched")
        return answer

    @staticmethod
    async def _fulfill(route: Route, response: Response) -> None:
        headers = {
            key.decode("latin-1"): b", ".join(values).decode("latin-1")
            for key, values in response.headers.items()
            if key.lower() not in _DROPPED_HEADERS
        }
        await route.fulfill(status=response.status, headers=headers, body=response.body)

    @staticmethod
    async def _settle(page: Page, budget: RenderBudget) -> None:
        """Let the page's fetches finish ("networkidle") while its budget lasts."""
        while (left := budget.remaining(monotonic())) > 0:
            try:
                await page.wait_for_load_state("networkidle", timeout=left * 1000)
                return
            except _playwright_error():  # timed out: waits for the site may have added time
                continue
