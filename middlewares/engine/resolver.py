"""Name resolution for the crawl: IP literals as they are, HOST_RESOLVE, then the system's, then the guard.

Installed as Scrapy's ``TWISTED_DNS_RESOLVER``: every connection the crawler
opens resolves here, so a name that resolves to a private address is refused
after resolution and on every redirect hop (netguard decides). Twisted drops
the reason of a refused lookup on its way up ("no results for hostname
lookup"), so the resolver keeps it: ``refusal(host)`` tells the adapters why.
Scrapy builds the resolver once per process, with the process and not a
crawler, so what it knows is the process's.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer
from twisted.internet.error import DNSLookupError

from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.netguard import HostMap, forbidden_reason

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scrapy.crawler import Crawler
    from twisted.internet.base import ReactorBase
    from twisted.internet.defer import Deferred

__all__ = ["AddressRefused", "GuardedResolver", "refusal"]

logger = logging.getLogger(__name__)


class AddressRefused(DNSLookupError):
    """The name resolved to an address a crawl may not connect to."""


class GuardedResolver(CachingThreadedResolver):
    """Static map, then system DNS; refuses private addresses unless allowed."""

    installed: ClassVar[GuardedResolver | None] = None  # the process's, once Scrapy installs it

    def __init__(
        self, reactor: ReactorBase, cache_size: int, timeout: float, *, host_map: HostMap, allow_private: bool
    ) -> None:
        super().__init__(reactor, cache_size, timeout)
        self.host_map = host_map
        self.allow_private = allow_private
        self.refused: dict[str, str] = {}  # lower-cased name -> why its address was refused
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler, reactor: ReactorBase) -> GuardedResolver:
        settings, net = crawler.settings, Runtime.of(crawler).config.net
        return cls(
            reactor,
            settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0,
            settings.getfloat("DNS_TIMEOUT"),
            host_map=net.host_map,
            allow_private=net.allow_private,
        )

    def install_on_reactor(self) -> None:
        super().install_on_reactor()
        GuardedResolver.installed = self

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        # An IP literal is its own address; the system's gethostbyname() knows no IPv6, so `[::1]` failed
        # as "no results for hostname lookup". Twisted then connects to it as IPv6 or IPv4 by its form.
        mapped = name if _is_ip(name) else self.host_map.lookup(name)
        resolved: Deferred[str] = defer.succeed(mapped) if mapped else super().getHostByName(name, timeout)
        return resolved.addCallback(self._guard, name)

    def _guard(self, address: Any, name: str) -> Any:
        reason = None if self.allow_private else forbidden_reason(str(address))
        if reason:
            message = f"{name} resolves to {address}, a {reason} (set ALLOW_PRIVATE_ADDRESSES to allow)"
            self.refused[name.lower()] = message
            if name.lower() not in self._logged:  # Twisted drops this message on its way up: say it here, once
                self._logged.add(name.lower())
                logger.warning("refused %s", message)
            raise AddressRefused(message)
        self.refused.pop(name.lower(), None)  # it resolves elsewhere now: a later failure is not a refusal
        return address


def refusal(host: str) -> str | None:
    """Why the resolver refused ``host``'s address when it last looked it up, or None."""
    resolver = GuardedResolver.installed
    return resolver.refused.get(host.lower()) if resolver is not None else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
