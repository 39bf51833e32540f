"""JS rendering (ALL-NOJS): an operator opt-in, off unless ``JS_RENDERING`` is set.

Decides which fetched answers are rendered, what a rendering page may fetch,
and how long its scripts may run. The page's HTML is fetched like any other
page; rendering then runs it in headless Chromium, which has no network of
its own. Every request the page makes is judged here: the first navigation is
served from the answer already fetched; scripts and fetch/XHR GETs to the
page's own site are fetched through the crawler, so robots.txt, pacing,
backoff, the size cap and signing hold for them as for any request, up to a
cap per page; everything else (images, fonts, media, stylesheets, frames,
other sites, other methods, a second navigation such as a submitted form) is
refused (a navigation is answered "204 No Content", which keeps the page as
it is). Cookies are never sent: the crawler builds each request itself.
Time is passed in (seconds from ``time.monotonic()``), never read here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from synapsecrawl.crawl.kinds import RequestKind
from synapsecrawl.errors import ConfigError
from synapsecrawl.numbers import read_flag, read_number

__all__ = [
    "FETCHED_TYPES", "RENDERED_MODES", "PageRender", "RenderBudget", "RenderConfig", "Verdict", "should_render",
]  # fmt: skip

RENDERED_MODES = frozenset({"page", "site", "sitemap"})
FETCHED_TYPES = frozenset({"script", "xhr", "fetch"})  # Playwright's resource types
_HTML_TYPES = ("text/html", "application/xhtml+xml")


def _flag(settings: Mapping[str, Any], name: str) -> bool:
    return read_flag(name, settings.get(name), words=True)  # JS_* are read by synapsecrawl only


def _number(settings: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    value = settings.get(name)
    if value is None or value == "":
        return default
    number = read_number(name, value, signed=True)
    if not low <= number <= high:
        raise ConfigError(f"{name} {number:g} is outside {low:g} to {high:g}")
    return number


@dataclass(frozen=True)
class RenderConfig:
    """The JS_* settings, read once."""

    enabled: bool = False
    chromium: str = "/usr/bin/chromium"
    max_subresources: int = 20  # scripts and fetch/XHR fetched per page
    max_pages: int = 4  # pages rendering at once
    timeout: float = 15.0  # seconds of a page's own time; waits for its site's turn are not counted

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> RenderConfig:
        """Read and check the JS_* settings; ``ConfigError`` names the setting in one line."""
        enabled = _flag(settings, "JS_RENDERING")
        chromium = str(settings.get("JS_CHROMIUM") or cls.chromium)
        if enabled and not (os.path.isfile(chromium) and os.access(chromium, os.X_OK)):
            raise ConfigError(
                f"JS_RENDERING is on but JS_CHROMIUM {chromium} is not an executable: "
                "install Chromium (Debian: apt-get install chromium) or point JS_CHROMIUM at it"
            )
        return cls(
            enabled=enabled,
            chromium=chromium,
            max_subresources=int(_number(settings, "JS_MAX_SUBRESOURCES", cls.max_subresources, 0, 1000)),
            max_pages=int(_number(settings, "JS_MAX_PAGES", cls.max_pages, 1, 64)),
            timeout=_number(settings, "JS_RENDER_TIMEOUT", cls.timeout, 1, 600),
        )

    def launch_options(self, *, as_root: bool) -> dict[str, Any]:
        """Playwright's ``launch()`` arguments for the configured Chromium.

        Chromium refuses its sandbox to root (crbug.com/638180), so only then
        does it run without one. Every host name and address resolves to
        nothing: the browser reaches no server itself, whatever a page asks.
        """
        return {
            "executable_path": self.chromium,
            "headless": True,
            "chromium_sandbox": not as_root,
            "args": ["--host-resolver-rules=MAP * ~NOTFOUND"],
        }


def should_render(mode: str, kind: RequestKind, status: int, content_type: str, body_start: bytes) -> bool:
    """Whether a fetched answer is a page to render: an HTML 200 of a page, site or sitemap crawl."""
    if mode not in RENDERED_MODES or status != 200 or not kind.rules.rendered:
        return False
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type:
        return media_type in _HTML_TYPES
    start = body_start.lstrip()[:15].lower()  # no Content-Type: sniff (WHATWG MIME Sniffing §7.1)
    return start.startswith((b"<!doctype html", b"<html"))


class Verdict(NamedTuple):
    """What to do with one request of a rendering page, and why."""

    action: Literal["document", "fetch", "refuse", "stay"]
    reason: str  # the resource type, or why it was refused


@dataclass
class PageRender:
    """The requests of one rendering page: judged in the order the browser makes them."""

    site: str  # the page's site, as pacing counts it
    site_of: Callable[[str], str]
    limit: int
    fetched: int = 0
    document_served: bool = False

    def judge(self, url: str, *, method: str, resource_type: str, navigation: bool, main_frame: bool) -> Verdict:
        """Serve the page's own document once; fetch same-site scripts and fetch/XHR GETs up to the limit."""
        if navigation:
            if main_frame and not self.document_served:
                self.document_served = True
                return Verdict("document", "document")
            # A form submitted, a link followed, a frame: answered 204 No Content, so the browser
            # keeps the page as it is (an aborted navigation would show an error page instead).
            return Verdict("stay", "navigation")
        refused = self._refusal(url, method, resource_type)
        if refused:
            return Verdict("refuse", refused)
        self.fetched += 1
        return Verdict("fetch", resource_type)

    def _refusal(self, url: str, method: str, resource_type: str) -> str | None:
        if method.upper() != "GET":
            return "method"
        if not url.lower().startswith(("http://", "https://")):
            return "scheme"
        if resource_type not in FETCHED_TYPES:
            return resource_type or "other"
        if self.site_of(url) != self.site:
            return "cross-site"
        return "limit" if self.fetched >= self.limit else None


@dataclass
class RenderBudget:
    """How long a page's scripts may run: ``seconds`` of the page's own time.

    Time spent waiting on a fetch (the site's Crawl-delay, the download) is not
    counted: a page whose scripts wait out a polite crawl is slow, not stuck.
    """

    seconds: float
    started: float | None = None  # when the page's tab opened; the browser's start is not the page's
    _pending: int = 0
    _waited: float = 0.0
    _waiting_since: float = field(default=0.0)

    def start(self, now: float) -> None:
        self.started = now

    def fetch_started(self, now: float) -> None:
        if self._pending == 0:
            self._waiting_since = now
        self._pending += 1

    def fetch_ended(self, now: float) -> None:
        self._pending -= 1
        if self._pending == 0:
            self._waited += now - self._waiting_since

    def remaining(self, now: float) -> float:
        """Seconds left at ``now`` (never below 0); all of them before the page started."""
        if self.started is None:
            return self.seconds
        waited = self._waited + (now - self._waiting_since if self._pending else 0.0)
        return max(0.0, self.seconds - (now - self.started - waited))
