"""The local queue: a request handed out only when its site is due; one of the two seams into Scrapy.

``PacedPriorityQueue`` (Scrapy's ``SCHEDULER_PRIORITY_QUEUE``) hands a request
to the engine only when its site is due and has nothing in flight, so requests
wait for their site's turn here, not in the downloader, where each would hold
one of the ``CONCURRENT_REQUESTS`` global slots (docs/benchmarks.md).
It calls Scrapy's private ``scrapy.pqueues._path_safe``, and wakes the engine
through ``middlewares.engine.seam``; ``tests/adapters/test_engine_seam.py`` pins both.
Meta keys: writes ``pacing_turn`` (synapsecrawl.crawl.meta.TURN).
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING

from scrapy.pqueues import DownloaderAwarePriorityQueue, _path_safe
from scrapy.utils.asyncio import CallLaterResult, call_later

from middlewares.engine.downloader import PacedDownloader
from middlewares.engine.runtime import Runtime
from middlewares.engine.seam import wake_engine
from synapsecrawl.crawl.meta import LEAD_SECONDS, SKIP_CRAWL_DELAY, TURN
from synapsecrawl.pacing.clock import SiteTurns

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.pqueues import QueueProtocol

__all__ = ["PacedPriorityQueue"]


class PacedPriorityQueue(DownloaderAwarePriorityQueue):
    """The queue: one queue per site, handed out in the order the sites fall due.

    ``pop`` returns a request only if its site is due (within a short lead)
    and has nothing in flight; otherwise ``None``, with the engine woken when
    the next site falls due. A site comes back into turn when its last request
    leaves the downloader. Needs ``PacedDownloader``.
    """

    def __init__(
        self,
        crawler: Crawler,
        downstream_queue_cls: type[QueueProtocol],
        key: str,
        slot_startprios: dict[str, Iterable[int]] | None = None,
        *,
        start_queue_cls: type[QueueProtocol] | None = None,
    ) -> None:
        super().__init__(crawler, downstream_queue_cls, key, slot_startprios, start_queue_cls=start_queue_cls)
        assert crawler.engine is not None
        downloader = crawler.engine.downloader
        if not isinstance(downloader, PacedDownloader):
            raise TypeError("PacedPriorityQueue needs DOWNLOADER = 'middlewares.engine.downloader.PacedDownloader'")
        self._downloader = downloader
        self._by_value = Runtime.of(crawler).target.by_value  # a web crawl: its sites in order of value
        self._turns = SiteTurns()
        self._count = sum(len(queue) for queue in self.pqueues.values())
        # site -> its pending requests its Crawl-delay does not hold (SER-ROBOTS-FEEDS: feeds first added);
        # a resumed queue counts none, so its first adds wait the Crawl-delay (the polite reading)
        self._skipping: dict[str, int] = {}
        self._wake: CallLaterResult | None = None
        self._wake_at = float("inf")
        for site in self.pqueues:
            self._turns.add(site, 0.0)
        downloader.watch(self._site_left)

    def push(self, request: Request) -> None:
        site = self._downloader.get_slot_key(request)
        queue = self.pqueues.get(site)
        if queue is None:
            queue = self.pqueues[site] = self.pqfactory(site)
        queue.push(request)
        self._count += 1
        if request.meta.get(SKIP_CRAWL_DELAY):
            self._skipping[site] = self._skipping.get(site, 0) + 1
        if site not in self._turns:
            due = self._due(site)
            if due is not None:
                self._turns.add(site, due)

    def pop(self) -> Request | None:
        now = monotonic()
        site = self._turns.take(now + LEAD_SECONDS, self._due, self._value if self._by_value else None)
        if site is None:
            self._wake_at_next_due()
            return None
        queue = self.pqueues[site]
        request = queue.pop()
        if request is not None:
            self._count -= 1
            request.meta[TURN] = True
            if request.meta.get(SKIP_CRAWL_DELAY) and self._skipping.get(site):
                self._skipping[site] -= 1
        if len(queue) == 0:
            self._drop(site)
        else:
            self._turns.add(site, now)  # judged again once this request is in flight
        return request

    def peek(self) -> Request | None:
        due = self._turns.next_due()
        if due is None or due > monotonic() + LEAD_SECONDS:
            return None
        for site, queue in self.pqueues.items():
            if site in self._turns and self._due(site) is not None:
                return queue.peek()
        return None

    def close(self) -> dict[str, list[int]]:
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        return super().close()

    def __len__(self) -> int:
        return self._count

    def _site_left(self, site: str) -> None:
        if site in self.pqueues and site not in self._turns:
            due = self._due(site)
            if due is not None:
                self._turns.add(site, due)
                # Scrapy's engine looks at its scheduler again only once a response's items are done (the KB
                # acknowledges a page when its batch commits, up to half a second later), so the site's turn
                # must wake it: without this its next request waited for some other page's items.
                self._wake_at_next_due()

    def _value(self, site: str) -> float:
        """The priority of ``site``'s next request (Scrapy's queue keys by the priority negated)."""
        curprio = getattr(self.pqueues[site], "curprio", None) if site in self.pqueues else None
        return -float(curprio) if curprio is not None else float("-inf")

    def _due(self, site: str) -> float | None:
        """When ``site`` may hand out its next request: each feed's first add is due without the site's
        Crawl-delay, not only the first of them (SER-ROBOTS-FEEDS), so a site holding such requests is
        judged by the one it would hand out next."""
        head = None
        if self._skipping.get(site):
            with suppress(NotImplementedError):  # a queue that cannot peek: the Crawl-delay holds (polite)
                head = self.pqueues[site].peek()
        return self._downloader.due(site, request=head)

    def _drop(self, site: str) -> None:
        self._skipping.pop(site, None)
        self.pqueues.pop(site).close()
        self._turns.discard(site)
        if self.key:
            with suppress(OSError):  # reclaim the site's directory, as Scrapy's queue does
                Path(self.key, _path_safe(site)).rmdir()

    def _wake_at_next_due(self) -> None:
        due = self._turns.next_due()
        if due is None or due >= self._wake_at:
            return
        if self._wake is not None:
            self._wake.cancel()
        self._wake_at = due
        self._wake = call_later(max(0.0, due - LEAD_SECONDS - monotonic()), self._woken)

    def _woken(self) -> None:
        self._wake, self._wake_at = None, float("inf")
        wake_engine(self.crawler)
