"""The frontier: which request goes to the downloader next, and how pending requests are held.

``PacedPriorityQueue`` (Scrapy's ``SCHEDULER_PRIORITY_QUEUE``) hands a request
to the engine only when its site is due and has nothing in flight, so requests
wait for their site's turn here, not in the downloader; ``PacingGateMiddleware``
sends back a request whose site stopped being due on its way (the first page,
once robots.txt has been fetched; a pause). Otherwise every waiting request
holds one of the ``CONCURRENT_REQUESTS`` global slots, and a crawl of many
sites runs at CONCURRENT_REQUESTS / spacing requests a second however many
sites are due; and requests parked in slots all start when their timers fire,
whether or not the crawl can digest their answers (docs/benchmarks.md).

``CompactFifoQueue`` (``SCHEDULER_MEMORY_QUEUE``) keeps each pending request
as a small pickle instead of a live ``Request``, so a 1M-URL frontier fits in
a few hundred MB.
"""

from __future__ import annotations

import pickle
import zlib
from collections import deque
from contextlib import suppress
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any

from scrapy.pqueues import DownloaderAwarePriorityQueue, _path_safe
from scrapy.utils.asyncio import CallLaterResult, call_later
from scrapy.utils.request import request_from_dict

from middlewares.pacing import PacedDownloader
from synapsecrawl.pacing.clock import SiteTurns

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.pqueues import QueueProtocol

__all__ = ["CompactFifoQueue", "PacedPriorityQueue", "PacingGateMiddleware"]

# A site is handed out this long before it is due: the request's way through
# the middlewares (robots.txt check, backoff gate) then overlaps the wait, and
# the slot's own timer still decides the start.
_LEAD_SECONDS = 0.05
_TURN = "pacing_turn"  # meta: handed out by PacedPriorityQueue (so it may go back to it)


class PacedPriorityQueue(DownloaderAwarePriorityQueue):
    """The frontier: one queue per site, handed out in the order the sites fall due.

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
            raise TypeError("PacedPriorityQueue needs DOWNLOADER = 'middlewares.pacing.PacedDownloader'")
        self._downloader = downloader
        self._turns = SiteTurns()
        self._count = sum(len(queue) for queue in self.pqueues.values())
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
        if site not in self._turns:
            due = self._downloader.due(site)
            if due is not None:
                self._turns.add(site, due)

    def pop(self) -> Request | None:
        now = monotonic()
        site = self._turns.take(now + _LEAD_SECONDS, self._downloader.due)
        if site is None:
            self._wake_at_next_due()
            return None
        queue = self.pqueues[site]
        request = queue.pop()
        if request is not None:
            self._count -= 1
            request.meta[_TURN] = True
        if len(queue) == 0:
            self._drop(site)
        else:
            self._turns.add(site, now)  # judged again once this request is in flight
        return request

    def peek(self) -> Request | None:
        due = self._turns.next_due()
        if due is None or due > monotonic() + _LEAD_SECONDS:
            return None
        for site, queue in self.pqueues.items():
            if site in self._turns and self._downloader.due(site) is not None:
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
            due = self._downloader.due(site)
            if due is not None:
                self._turns.add(site, due)

    def _drop(self, site: str) -> None:
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
        self._wake = call_later(max(0.0, due - _LEAD_SECONDS - monotonic()), self._woken)

    def _woken(self) -> None:
        self._wake, self._wake_at = None, float("inf")
        slot = getattr(self.crawler.engine, "_slot", None)  # the engine's own "look at the scheduler again"
        if slot is not None:
            slot.nextcall.schedule()


class PacingGateMiddleware:
    """Sends a request whose site is not due back to the frontier instead of letting it wait in a slot.

    Only requests the frontier handed out come back (side fetches such as
    robots.txt are awaited by their caller); each goes back once per turn,
    flagged ``dont_filter`` so the duplicate filter lets it in again.
    """

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PacingGateMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> Request | None:
        if not request.meta.get(_TURN):
            return None
        downloader = self._crawler.engine.downloader if self._crawler.engine else None
        if not isinstance(downloader, PacedDownloader):
            return None
        due = downloader.due(downloader.get_slot_key(request), ignoring=1, request=request)
        if due is None or due <= monotonic() + 2 * _LEAD_SECONDS:
            return None
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value("pacing/requeued")
        meta = {key: value for key, value in request.meta.items() if key != _TURN}
        return request.replace(dont_filter=True, meta=meta)


# What Request.to_dict() holds for a plain GET; a pending request keeps only what differs.
_DEFAULTS: dict[str, Any] = {
    "callback": None,
    "errback": None,
    "method": "GET",
    "headers": {},
    "body": b"",
    "cookies": {},
    "meta": {},
    "encoding": "utf-8",
    "priority": 0,
    "dont_filter": False,
    "flags": [],
    "cb_kwargs": {},
}


class CompactFifoQueue:
    """A FIFO of requests kept as small compressed pickles rather than live ``Request`` objects.

    A live request costs about 2.5 KB (its headers, meta, flags, bound
    callback, and the parse caches that hang on it); its ``to_dict()`` without
    default values pickles to 150-250 bytes, and deflated against the queue's
    first pickle (a queue holds one site, so URLs and headers share most
    bytes) to a few dozen. A request that cannot be pickled (a callback that
    is not a spider method) is kept as it is.
    """

    def __init__(self, spider: Spider | None) -> None:
        self._spider = spider
        self._items: deque[bytes | Request] = deque()
        self._zdict: bytes | None = None  # the first pickle: what later ones are deflated against

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> CompactFifoQueue:
        return cls(crawler.spider)

    def push(self, request: Request) -> None:
        try:
            fields = request.to_dict(spider=self._spider)
            kept = {key: value for key, value in fields.items() if key not in _DEFAULTS or value != _DEFAULTS[key]}
            raw = pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)
        except (ValueError, TypeError, AttributeError, pickle.PicklingError):
            self._items.append(request)
            return
        if self._zdict is None:
            self._zdict = raw
        deflate = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, self._zdict)
        self._items.append(deflate.compress(raw) + deflate.flush())

    def pop(self) -> Request | None:
        return self._unpack(self._items.popleft()) if self._items else None

    def peek(self) -> Request | None:
        return self._unpack(self._items[0]) if self._items else None

    def close(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def _unpack(self, item: bytes | Request) -> Request:
        if not isinstance(item, bytes):
            return item
        assert self._zdict is not None
        raw = zlib.decompressobj(-15, self._zdict).decompress(item)
        return request_from_dict(pickle.loads(raw), spider=self._spider)  # noqa: S301 - our own pickles
