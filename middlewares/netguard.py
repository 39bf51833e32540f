"""Refuses what a profile never fetches before it reaches the network.

Schemes outside the profile (YottaBot: HTTPS only, YOT-HTTPS), methods other
than GET (OMN-FETCH), and URLs whose host is a literal private address unless
``ALLOW_PRIVATE_ADDRESSES``. Names are judged after resolution by
``middlewares.engine.resolver``; its refusals are logged here once per host.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import CannotResolveHostError, IgnoreRequest
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.error import DNSLookupError

from middlewares.engine.resolver import AddressRefused, refusal
from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.netguard import forbidden_reason

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from synapsecrawl.profiles import Profile

__all__ = ["NetGuardMiddleware"]

logger = logging.getLogger(__name__)


class NetGuardMiddleware:
    def __init__(self, crawler: Crawler, runtime: Runtime, allow_private: bool) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._profile: Profile = runtime.profile
        self._allow_private = allow_private
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NetGuardMiddleware:
        runtime = Runtime.of(crawler)
        return cls(crawler, runtime, runtime.config.net.allow_private)

    def _refuse(self, request: Request, reason: str, stat: str) -> IgnoreRequest:
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value(f"netguard/{stat}")
        site = self._runtime.site(request.url)
        self._runtime.summary.skip(site, stat, request.url)
        if f"{site} {stat}" not in self._logged:  # one line per site and reason
            self._logged.add(f"{site} {stat}")
            logger.warning("refused %s: %s", request.url, reason)
        return IgnoreRequest(f"{reason}: {request.url}")

    def process_request(self, request: Request) -> None:
        url = urlparse_cached(request)
        if url.scheme not in self._profile.schemes:
            raise self._refuse(request, f"{self._profile.name} does not fetch {url.scheme}: URLs", "scheme")
        if request.method != "GET":
            raise self._refuse(request, f"{self._profile.name} sends only GET", "scheme")
        reason = None if self._allow_private else forbidden_reason(url.hostname or "")
        if reason:
            raise self._refuse(request, f"{url.hostname} is a {reason} (ALLOW_PRIVATE_ADDRESSES is off)", "address")

    def process_exception(self, request: Request, exception: Exception) -> None:
        # Twisted turns the resolver's AddressRefused into a plain lookup failure: ask the resolver why
        lookup_failed = isinstance(exception, DNSLookupError | CannotResolveHostError)
        reason = refusal(urlparse_cached(request).hostname or "") if lookup_failed else None
        if isinstance(exception, AddressRefused) or reason:
            raise self._refuse(request, reason or str(exception), "address")
