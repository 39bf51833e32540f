"""Redirects that keep to the crawl's scope and the profile's rule.

Replaces Scrapy's RedirectMiddleware (order 600) with a subclass whose hops are judged by
``synapsecrawl.crawl.scope.redirect_refusal`` (SYN-SCOPE; YOT-REDIRECT: same site, at most ``REDIRECT_MAX_TIMES``,
which the profile add-on sets) and kept to a web crawl's allow-list of sites (``CrawlTarget.listed``); robots.txt
fetches follow theirs up to the profile's limit (RFC 9309 §2.3.1.2). A Location that cannot be requested is one
line and a skip. Meta keys it reads: ``dont_redirect``, ``redirect_urls``, ``handle_httpstatus_list``,
``handle_httpstatus_all``. More: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy import Request
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import IgnoreRequest
from w3lib.url import safe_url_string

from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.kinds import RequestKind, kind_of
from synapsecrawl.crawl.scope import redirect_refusal
from synapsecrawl.urls import url_problem

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["ScopedRedirectMiddleware"]

logger = logging.getLogger(__name__)


class ScopedRedirectMiddleware(RedirectMiddleware):
    _runtime: Runtime

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        middleware = super().from_crawler(crawler)
        middleware._runtime = Runtime.of(crawler)
        return middleware

    def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        robots_txt = kind_of(request.meta) is RequestKind.ROBOTS
        if robots_txt and request.meta.get("handle_httpstatus_all") and not request.meta.get("dont_redirect"):
            request.meta["handle_httpstatus_all"] = False  # only while Scrapy decides: follow robots.txt hops
            try:
                result = self._follow(request, response)
            finally:
                request.meta["handle_httpstatus_all"] = True
            if isinstance(result, Request):
                result.meta["handle_httpstatus_all"] = True
            return result
        self._refuse_unusable(request, response)
        result = self._follow(request, response)
        if not isinstance(result, Request) or robots_txt:
            return result
        chain_start = (result.meta.get("redirect_urls") or [request.url])[0]
        scopes = self._runtime.target.scopes or ()
        reason = redirect_refusal(self._runtime.profile.redirect_scope, chain_start, result.url, scopes)
        listed = self._runtime.target.listed
        if reason is None and listed is not None and not listed(request, result.url):
            reason = "not on the crawl's list of sites"
        if reason is None:
            return result
        self._skip(request, "scope", f"redirect from {request.url} to {result.url} not followed: {reason}")
        raise IgnoreRequest(f"redirect to {result.url} not followed: {reason}")

    def _refuse_unusable(self, request: Request, response: Response) -> None:
        """A redirect whose Location cannot be requested: one line, the page skipped (IgnoreRequest)."""
        location = response.headers.get(b"Location")
        if (
            location is None
            or response.status not in (301, 302, 303, 307, 308)
            or request.meta.get("dont_redirect")
            or request.meta.get("handle_httpstatus_all")
            or response.status in request.meta.get("handle_httpstatus_list", ())
        ):
            return  # Scrapy would not follow it either
        shown = location.decode("latin-1")[:200]
        try:
            target = response.urljoin(safe_url_string(location))
        except ValueError as exc:
            problem: str | None = str(exc).lower() or "unreadable"
        else:
            problem = url_problem(target)
        if problem is None:
            return
        reason = "scheme" if problem.startswith("not an http(s) URL") else "error"
        self._skip(request, reason, f"redirect from {request.url} to {shown!r} not followed: {problem}")
        raise IgnoreRequest(f"redirect to {shown!r} not followed: {problem}")

    def _follow(self, request: Request, response: Response) -> Request | Response:
        try:
            return super().process_response(request, response)
        except IgnoreRequest:  # "max redirections reached"
            self._skip(
                request,
                "error",
                f"gave up on {request.url} after {self.max_redirect_times} redirects "
                f"in a row ({self._runtime.profile.name}'s limit)",
            )
            raise

    def _skip(self, request: Request, reason: str, message: str) -> None:
        """Count a redirect not followed, and log it in one line."""
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(f"redirect/refused/{reason}")
        if kind_of(request.meta).rules.summarised:
            self._runtime.summary.skip(self._runtime.site(request.url), reason, request.url)
        logger.info("%s", message)
