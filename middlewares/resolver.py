"""Name resolution for the crawl: HOST_RESOLVE first, then the system's, then the guard.

Installed as Scrapy's ``TWISTED_DNS_RESOLVER``: every connection the crawler
opens resolves here, so a name that resolves to a private address is refused
after resolution and on every redirect hop (netguard decides).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer
from twisted.internet.error import DNSLookupError

from middlewares.runtime import Runtime
from synapsecrawl.netguard import HostMap, forbidden_reason, parse_host_resolve

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.crawler import Crawler
    from twisted.internet.base import ReactorBase
    from twisted.internet.defer import Deferred

__all__ = ["AddressRefused", "GuardedResolver"]

logger = logging.getLogger(__name__)


class AddressRefused(DNSLookupError):
    """The name resolved to an address a crawl may not connect to."""


class GuardedResolver(CachingThreadedResolver):
    """Static map, then system DNS; refuses private addresses unless allowed."""

    def __init__(self, reactor: ReactorBase, cache_size: int, timeout: float, *,
                 host_map: HostMap, allow_private: bool, refused: dict[str, str] | None = None) -> None:
        super().__init__(reactor, cache_size, timeout)
        self.host_map = host_map
        self.allow_private = allow_private
        self.refused = refused if refused is not None else {}

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> GuardedResolver:
        settings = crawler.settings
        return cls(
            reactor,
            settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0,
            settings.getfloat("DNS_TIMEOUT"),
            host_map=parse_host_resolve(settings.get("HOST_RESOLVE") or ""),
            allow_private=settings.getbool("ALLOW_PRIVATE_ADDRESSES"),
            refused=Runtime.of(crawler).refused_hosts,
        )

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        mapped = self.host_map.lookup(name)
        resolved: Deferred[str] = defer.succeed(mapped) if mapped else super().getHostByName(name, timeout)
        return resolved.addCallback(self._guard, name)

    def _guard(self, address: Any, name: str) -> Any:
        reason = None if self.allow_private else forbidden_reason(str(address))
        if reason:
            message = f"{name} resolves to {address}, a {reason} (set ALLOW_PRIVATE_ADDRESSES to allow)"
            if name.lower() not in self.refused:  # Twisted drops this message on its way up: say it here, once
                self.refused[name.lower()] = message
                logger.warning("refused %s", message)
            raise AddressRefused(message)
        return address
