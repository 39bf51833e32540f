"""Per-site pacing: how far apart request starts to one site must be.

The spacing of a site is the larger of the crawl's delay (profile default,
operator setting) and the site's Crawl-delay, capped at the profile's
Crawl-delay cap (ALL-CD). Pauses (429/503, Retry-After) hold a site until a
time. Time is passed in (seconds from ``time.monotonic()``), never read here.

``SiteClock`` holds each site's spacing and pause; ``PacingState`` is the
interface a shared (Redis-backed) one provides for many machines.
``next_start`` is the one decision: the spacing with ``MARGIN``, from the last
start, after any pause. ``SiteTurns`` orders the sites with work by when each
may start (Mercator's back-queue heap). Slow-server spacing (SNA-SLOW) and the
site-wide Crawl-delay over a site's hosts (OMN-CD) are decided here too.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import count
from typing import NamedTuple, Protocol

__all__ = [
    "MARGIN",
    "LagMeter",
    "Margin",
    "PacingState",
    "SiteClock",
    "SiteTurns",
    "gap",
    "next_start",
    "reached_server_by",
    "site_crawl_delay",
    "slow_spacing",
    "spacing_for",
]


class Margin(NamedTuple):
    """What each gap carries beyond the spacing: ``min(spacing * ratio, cap) + seconds``."""

    ratio: float
    cap: float
    seconds: float


# The server sees arrivals, not our starts: a fresh connection's set-up can delay one request's arrival
# but not the next one's, so each gap carries a small margin (measured on loopback: a few ms). The one
# margin: this process's slots and the shared (Redis) pacer's script both take it from here.
MARGIN = Margin(ratio=0.01, cap=0.05, seconds=0.005)


def gap(spacing: float, margin: Margin = MARGIN) -> float:
    """The seconds kept between two starts to a site whose spacing is ``spacing``."""
    return spacing + min(spacing * margin.ratio, margin.cap) + margin.seconds


def next_start(last_start: float | None, spacing: float, paused_until: float = 0.0) -> float:
    """When a site's next request may start: a gap after its last start (``None``: none yet), and not in a pause."""
    if last_start is None:
        return paused_until
    return max(paused_until, last_start + gap(spacing))


def spacing_for(delay: float, crawl_delay: float | None, cap: float) -> float:
    """The seconds between request starts to a site (ALL-CD).

    Crawl-delay replaces the default spacing when longer, up to ``cap``; a
    shorter one never speeds us up.
    """
    if crawl_delay is None or math.isnan(crawl_delay) or crawl_delay <= 0:
        return delay
    return max(delay, min(crawl_delay, cap))


def site_crawl_delay(stated: Iterable[float | None]) -> float | None:
    """The Crawl-delay of a site served by many hosts, each with its own robots.txt (OMN-CD, OMN-SITE).

    The site is paced as one, so the longest stated delay holds: a host without
    one does not undo another's. ``None`` when no host states one.
    """
    delays = [delay for delay in stated if delay is not None]
    return max(delays) if delays else None


def slow_spacing(factor: float, latency: float | None, cap: float) -> float:
    """The spacing a slow answer asks for: ``factor`` times its response time, at most ``cap`` (SNA-SLOW).

    0.0 when the profile promises nothing (factor 0) or the latency is unknown.
    """
    if not factor or latency is None or not math.isfinite(latency) or latency <= 0:
        return 0.0
    return min(factor * latency, cap)


def reached_server_by(dispatched: float, answered: float, spacing: float, loop_lag: float = 0.0) -> float:
    """When, at the latest, a request counts as having reached the server.

    The site owner's log shows arrivals, not our starts: a request that had to
    open a connection (a TLS handshake, a slow network) arrives late, and the
    next one on the warm connection arrives early, closer than the spacing.
    Counting the next gap from the answer closes that hole; the cap keeps a
    slow server from stretching every gap by its whole response time. A busy
    event loop sends late too: ``loop_lag`` (how long our own loop may have
    held the request back) widens the cap, so a crawl that falls behind its
    CPU counts from the answer.
    """
    return min(answered, dispatched + max(0.0, loop_lag) + min(0.25 * spacing, 1.0))


@dataclass
class LagMeter:
    """How late the event loop has lately been: a maximum that halves every ``half_life`` seconds.

    Fed with how late a periodic timer fired; a crawl whose callbacks hog the
    loop (extraction) sends requests and reads answers that much late.
    """

    half_life: float = 0.5
    _lag: float = 0.0
    _at: float = 0.0

    def record(self, late: float, now: float) -> None:
        """A timer due ``late`` seconds ago fired at ``now``."""
        self._lag = max(late, self.value(now))
        self._at = now

    def value(self, now: float) -> float:
        """The recent lag at ``now``, in seconds."""
        if self._lag <= 0.0:
            return 0.0
        return self._lag * math.exp(-math.log(2.0) * max(0.0, now - self._at) / self.half_life)


class PacingState(Protocol):
    """Where per-site spacing and pauses live (this process, or Redis)."""

    def spacing(self, site: str) -> float: ...
    def spacing_without_crawl_delay(self, site: str) -> float: ...
    def set_crawl_delay(self, site: str, crawl_delay: float | None) -> float: ...
    def set_spacing(self, site: str, spacing: float) -> None: ...
    def pause(self, site: str, until: float) -> None: ...
    def paused_until(self, site: str) -> float: ...


@dataclass
class SiteClock:
    """Spaces the starts of requests to each site, in this process."""

    delay: float
    crawl_delay_cap: float
    _spacing: dict[str, float] = field(default_factory=dict)
    _paused: dict[str, float] = field(default_factory=dict)
    _slow: dict[str, float] = field(default_factory=dict)

    def spacing(self, site: str) -> float:
        """Seconds between starts for ``site``."""
        return max(self._spacing.get(site, self.delay), self._slow.get(site, 0.0))

    def spacing_without_crawl_delay(self, site: str) -> float:
        """Seconds between starts for ``site`` for a request its Crawl-delay does not hold (SER-ROBOTS-FEEDS:
        a feed's first add); the crawl's delay and a slow server's spacing still do."""
        return max(self.delay, self._slow.get(site, 0.0))

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


@dataclass
class SiteTurns:
    """The sites that have requests waiting, in the order they may start again.

    Each site is held once, keyed by the time it was due when added. Keys go
    stale (a pause, a later answer), so ``take`` asks ``due_of`` for each
    candidate's real due time: later than the key puts it back, ``None``
    (busy: a request of it is in flight) drops it until ``add`` brings it back.
    """

    _heap: list[tuple[float, int, str]] = field(default_factory=list)
    _held: dict[str, int] = field(default_factory=dict)  # site -> the order number of its live heap entry
    _order: count[int] = field(default_factory=count)
    _ready: list[tuple[float, int, str]] = field(default_factory=list)  # due sites, most valuable first

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, site: object) -> bool:
        return site in self._held

    def add(self, site: str, due: float) -> None:
        """Hold ``site`` (it has requests waiting), due at ``due``; a site already held keeps its place."""
        if site not in self._held:
            self._push(site, due)

    def take(
        self, now: float, due_of: Callable[[str], float | None], value_of: Callable[[str], float] | None = None
    ) -> str | None:
        """The first site due by ``now``, released from the heap; ``None`` when no site is due yet.

        With ``value_of``, of all the sites due by ``now`` the most valuable one (Mercator's front queues:
        which site is asked next is a matter of value, when it may be asked a matter of politeness).
        """
        while self._heap and self._heap[0][0] <= now:
            _, order, site = heapq.heappop(self._heap)
            if self._held.get(site) != order:
                continue  # discarded, or re-added since
            due = due_of(site)
            if due is not None and due > now:
                self._push(site, due)
                continue
            if due is None:
                del self._held[site]
                continue
            if value_of is None:
                del self._held[site]
                return site
            heapq.heappush(self._ready, (-value_of(site), order, site))
        while self._ready:
            _, order, site = heapq.heappop(self._ready)
            if self._held.get(site) != order:
                continue
            due = due_of(site)
            if due is not None and due > now:
                self._push(site, due)
                continue
            del self._held[site]
            if due is not None:
                return site
        return None

    def discard(self, site: str) -> None:
        """Stop holding ``site`` (its queue is empty); its heap entry is skipped when it comes up."""
        self._held.pop(site, None)

    def next_due(self) -> float | None:
        """The earliest key in the heap (a lower bound of the next due time), ``None`` when empty."""
        while self._ready and self._held.get(self._ready[0][2]) != self._ready[0][1]:
            heapq.heappop(self._ready)
        if self._ready:
            return float("-inf")  # a site found due and waiting for its value's turn
        while self._heap and self._held.get(self._heap[0][2]) != self._heap[0][1]:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def _push(self, site: str, due: float) -> None:
        order = next(self._order)
        self._held[site] = order
        heapq.heappush(self._heap, (due, order, site))
