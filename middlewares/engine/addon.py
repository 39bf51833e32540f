"""The profile add-on: turns BOT_PROFILE into the Scrapy settings it implies.

Runs before the settings freeze, so every way of starting a crawl (the
``crawl`` command, Scrapyd, ``get_crawler`` in tests) runs under the same
profile. Values the operator set (priority ``project`` or higher) win where
the profile allows; the crawl's one configuration (``Runtime.of(crawler).config``,
synapsecrawl.crawl.config) has already refused those beyond a cap. Scrapy builds
add-ons with ``from_crawler`` (2.10+), after the spider. With JS_RENDERING on,
``render_settings`` adds scrapy-playwright's settings (reads synapsecrawl.crawl.render's RenderConfig).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from middlewares.engine.runtime import Runtime

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from synapsecrawl.crawl.render import RenderConfig

__all__ = ["ProfileAddon", "render_settings"]

# Off (REMOTE_CONTROL_ENABLED=False in the project's settings) and taken out of Scrapy's base extensions,
# so it is not even imported: its module imports aiohttp and builds two TLS contexts at
# every crawl's start. EXTENSIONS = {...: None} would not do: Scrapy imports every key of EXTENSIONS.
_REMOTE_CONTROL = "scrapy.extensions.remote_control.RemoteControl"
_HANDLER = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"


class ProfileAddon:
    """Applies the profile's identity, pacing, limits and safety settings."""

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProfileAddon:
        return cls(crawler)

    def update_settings(self, settings: BaseSettings) -> None:
        config = Runtime.of(self._crawler).config
        profile, limits = config.profile, config.limits
        prio = "addon"
        settings.set("USER_AGENT", config.user_agent, priority=prio)
        headers = dict(settings.getdict("DEFAULT_REQUEST_HEADERS"))
        headers["Accept"] = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,*/*;q=0.5"
        if profile.from_header:
            headers["From"] = profile.from_header  # OMN-UA
        settings.set("DEFAULT_REQUEST_HEADERS", headers, priority=prio)
        # DOWNLOAD_DELAY and its jitter are left alone: PacedDownloader._pace owns each slot's delay, jitter and
        # concurrency. CONCURRENT_REQUESTS_PER_DOMAIN is also Scrapy's HTTP handler's pool of connections per
        # host, so it is set to what a slot may have in flight.
        settings.set("CONCURRENT_REQUESTS_PER_DOMAIN", profile.concurrency, priority=prio)
        settings.set("DEPTH_LIMIT", limits.depth, priority=prio)
        settings.set("DOWNLOAD_TIMEOUT", config.timeout, priority=prio)
        settings.set("REDIRECT_MAX_TIMES", profile.redirect_max, priority=prio)
        # Our ResponseGateMiddleware truncates at the profile's cap; Scrapy's own
        # limit would drop the whole response instead, so it only guards
        # decompression (set per request there).
        settings.set("DOWNLOAD_MAXSIZE", 0, priority=prio)
        settings.set("DOWNLOAD_WARNSIZE", 0, priority=prio)
        base = {path: order for path, order in settings.getdict("EXTENSIONS_BASE").items() if path != _REMOTE_CONTROL}
        settings.set("EXTENSIONS_BASE", base, priority=prio)
        # ALL-NOJS: only when JS_RENDERING is on
        for name, value in render_settings(config.render, settings.getdict("DOWNLOAD_HANDLERS")).items():
            settings.set(name, value, priority=prio)


def render_settings(config: RenderConfig, download_handlers: dict[str, Any]) -> dict[str, Any]:
    """The Scrapy settings JS rendering needs (over Scrapy's ``download_handlers``); none when JS_RENDERING is off."""
    if not config.enabled:
        return {}
    return {
        "DOWNLOAD_HANDLERS": {**download_handlers, "http": _HANDLER, "https": _HANDLER},
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": config.launch_options(as_root=os.geteuid() == 0),
        "PLAYWRIGHT_MAX_CONTEXTS": 1,
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": config.max_pages,
        # Our route answers every request first; should one ever reach scrapy-playwright's own, it is refused.
        "PLAYWRIGHT_ABORT_REQUEST": "middlewares.render.refuse",
    }
