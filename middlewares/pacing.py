"""The downloader, keyed by site and paced by ``synapsecrawl.pacing``.

Scrapy's downloader already spaces request starts per slot without holding
anything else back; what it lacks is our notion of a site (a registrable
domain for OmniscienteBot), spacing that follows each site's Crawl-delay, no
jitter, and pauses. Every request is keyed by its site, and its slot is
brought up to date with the pacer just before it queues. A pause moves the
slot's last start forward, so the slot's own timer holds the site without a
middleware sleeping on a global slot.
"""

from __future__ import annotations

from time import monotonic
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.core.downloader import Downloader, Slot

from middlewares.runtime import Runtime
from synapsecrawl.pacing import reached_server_by

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["PacedDownloader"]

# The server sees arrivals, not our starts: a fresh connection's set-up can
# delay one request's arrival but not the next one's, so each gap carries a
# small margin (measured on loopback: a few ms).
_MARGIN_RATIO = 0.01
_MARGIN_SECONDS = 0.005


class PacedDownloader(Downloader):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self._runtime = Runtime.of(crawler)
        # sent before the slot looks at its queue again, so the next start sees it
        crawler.signals.connect(self._response_downloaded, signal=signals.response_downloaded)

    def _response_downloaded(self, response: Response, request: Request, **_: Any) -> None:
        key = request.meta.get(self.DOWNLOAD_SLOT, "")
        slot, latency = self.slots.get(key), request.meta.get("download_latency")
        if slot is None or latency is None:
            return
        now = monotonic()
        arrived = reached_server_by(now - latency, now, self._runtime.pacer.spacing(key))
        slot.lastseen = max(slot.lastseen, arrived)

    def get_slot_key(self, request: Request) -> str:
        return self._runtime.site(request.url)

    def _get_slot(self, request: Request, spider: Spider | None = None) -> tuple[str, Slot]:
        key, slot = super()._get_slot(request)
        self._pace(key, slot)
        return key, slot

    def refresh(self, site: str) -> None:
        """Apply the pacer's spacing and pause to ``site``'s live slot, if it has one.

        A pause or a longer spacing set while requests already wait in the slot
        reaches them too: the slot's timer checks ``lastseen`` and ``delay`` again.
        """
        slot = self.slots.get(site)
        if slot is not None:
            self._pace(site, slot)

    def drop_queued(self, site: str, error: Callable[[Request], Exception]) -> int:
        """Fail the requests waiting in ``site``'s slot (none of them sent yet) with ``error(request)``."""
        slot = self.slots.get(site)
        if slot is None:
            return 0
        queued = list(slot.queue)
        slot.queue.clear()
        for request, deferred in queued:
            deferred.errback(error(request))
        return len(queued)

    def _pace(self, key: str, slot: Slot) -> None:
        pacer = self._runtime.pacer
        spacing = pacer.spacing(key)
        slot.delay = spacing + min(spacing * _MARGIN_RATIO, 0.05) + _MARGIN_SECONDS
        slot.jitter = 0.0
        slot.concurrency = self._runtime.profile.concurrency
        paused_until = pacer.paused_until(key)
        if paused_until > monotonic():
            slot.lastseen = max(slot.lastseen, paused_until - slot.delay)
