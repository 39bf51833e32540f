"""Per-site pacing: how far apart request starts to one site must be.

The spacing of a site is the larger of the crawl's delay (profile default,
operator setting) and the site's Crawl-delay, capped at the profile's
Crawl-delay cap (ALL-CD). Pauses (429/503, Retry-After) hold a site until a
time. Time is passed in (seconds from ``time.monotonic()``), never read here.

``SiteClock`` books starts; ``PacingState`` is the small interface a shared
(Redis-backed) implementation provides for a deployment of many machines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["PacingState", "SiteClock", "reached_server_by", "spacing_for"]


def spacing_for(delay: float, crawl_delay: float | None, cap: float) -> float:
    """The seconds between request starts to a site (ALL-CD).

    Crawl-delay replaces the default spacing when longer, up to ``cap``; a
    shorter one never speeds us up.
    """
    if crawl_delay is None or math.isnan(crawl_delay) or crawl_delay <= 0:
        return delay
    return max(delay, min(crawl_delay, cap))


def reached_server_by(dispatched: float, answered: float, spacing: float) -> float:
    """When, at the latest, a request counts as having reached the server.

    The site owner's log shows arrivals, not our starts: a request that had to
    open a connection (a TLS handshake, a slow network) arrives late, and the
    next one on the warm connection arrives early, closer than the spacing.
    Counting the next gap from the answer closes that hole; the cap keeps a
    slow server from stretching every gap by its whole response time.
    """
    return min(answered, dispatched + min(0.25 * spacing, 1.0))


class PacingState(Protocol):
    """Where per-site spacing and pauses live (this process, or Redis)."""

    def spacing(self, site: str) -> float: ...
    def set_crawl_delay(self, site: str, crawl_delay: float | None) -> float: ...
    def pause(self, site: str, until: float) -> None: ...
    def paused_until(self, site: str) -> float: ...
    def reserve(self, site: str, now: float) -> float: ...


@dataclass
class SiteClock:
    """Spaces the starts of requests to each site, in this process."""

    delay: float
    crawl_delay_cap: float
    _spacing: dict[str, float] = field(default_factory=dict)
    _paused: dict[str, float] = field(default_factory=dict)
    _next_start: dict[str, float] = field(default_factory=dict)
    _slow: dict[str, float] = field(default_factory=dict)

    def spacing(self, site: str) -> float:
        """Seconds between starts for ``site``."""
        return max(self._spacing.get(site, self.delay), self._slow.get(site, 0.0))

    def set_crawl_delay(self, site: str, crawl_delay: float | None) -> float:
        """Record the site's Crawl-delay; return the spacing that now applies."""
        spacing = spacing_for(self.delay, crawl_delay, self.crawl_delay_cap)
        self._spacing[site] = spacing
        return spacing

    def set_spacing(self, site: str, spacing: float) -> None:
        """Lengthen the site's spacing to ``spacing`` while it answers slowly (SNA-SLOW).

        Kept apart from the Crawl-delay spacing, which it never shortens; a
        later, smaller value (the server sped up) lets the spacing come back.
        """
        self._slow[site] = spacing

    def pause(self, site: str, until: float) -> None:
        """Hold ``site`` until ``until``; a longer pause already set stands."""
        self._paused[site] = max(until, self._paused.get(site, 0.0))

    def paused_until(self, site: str) -> float:
        """When ``site`` may be asked again (0.0 when it is not paused)."""
        return self._paused.get(site, 0.0)

    def reserve(self, site: str, now: float) -> float:
        """Book the next start for ``site``; return the seconds to wait before it."""
        start = max(now, self._next_start.get(site, now), self._paused.get(site, 0.0))
        self._next_start[site] = start + self.spacing(site)
        return start - now
