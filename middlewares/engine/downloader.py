"""The downloader, keyed by site and paced by ``synapsecrawl.pacing``: one of the two seams into Scrapy.

Every request is keyed by its site, and its slot is brought up to date with the pacer on Scrapy's public
``request_reached_downloader`` signal; a pause moves the slot's last start forward. The private members it uses are
pinned by ``tests/adapters/test_engine_seam.py``. Middlewares that act as a request goes on the wire define
``process_send(request)``. It tells the queue when each site is due, spaces a slow server's requests (SNA-SLOW) and
measures its own loop's lag. Meta keys it reads: ``pacing_skip_crawl_delay`` (SER-ROBOTS-FEEDS), ``dont_backoff``,
``download_latency``. More: docs/architecture.md, "Life of a request" and "Inside the larger modules".
"""

from __future__ import annotations

import asyncio
import logging
import time
from time import monotonic
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.core.downloader import Downloader, Slot
from scrapy.utils.asyncio import CallLaterResult, call_later
from scrapy.utils.defer import _schedule_coro

from middlewares.engine.logformat import secs
from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.meta import LEASE, PACING_GRANTED, SKIP_CRAWL_DELAY
from synapsecrawl.crawl.meta import PACING_LEASE as _LEASE
from synapsecrawl.pacing.clock import LagMeter, gap, next_start, reached_server_by, slow_spacing

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.internet.defer import Deferred

__all__ = ["PacedDownloader"]

logger = logging.getLogger(__name__)

# The loop-lag probe's period; a request may leave a few loop turns after its
# dispatch (the download coroutine starts, the transport flushes).
_TICK_SECONDS = 0.02
_TURNS_TO_SEND = 3


class PacedDownloader(Downloader):
    """Scrapy's downloader with one slot per site, paced by the crawl's pacer (``Runtime.pacer``)."""

    def __init__(self, crawler: Crawler, clock: Callable[[], float] = monotonic) -> None:
        self._runtime = Runtime.of(crawler)
        self._clock = clock
        # Before the middlewares connect theirs (super().__init__ builds them): a slow answer lengthens the
        # site's spacing before backoff judges it, so a pause it sets is counted against the longer spacing.
        crawler.signals.connect(self._pace_slow, signal=signals.response_downloaded)
        super().__init__(crawler)
        self._on_send = [mw.process_send for mw in self.middleware.middlewares if hasattr(mw, "process_send")]
        self._in_flight: dict[str, int] = {}  # site -> its requests inside fetch() (robots.txt included)
        self._watchers: list[Callable[[str], None]] = []
        self._lag = LagMeter()
        self._tick_due = 0.0
        self._ticker: CallLaterResult | None = None
        # sent before the slot looks at its queue again, so the next start sees it
        crawler.signals.connect(self._response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self._start_ticking, signal=signals.engine_started)
        crawler.signals.connect(self._stop_ticking, signal=signals.engine_stopped)
        self._shared = self._runtime.shared_pacer
        self._asking: set[str] = set()  # sites whose turn is being asked of Redis
        self._shared_closed = False
        self._releasing: dict[str, set[asyncio.Task[None]]] = {}  # site -> its sends and answers being told Redis
        self._sent_at: dict[str, float] = {}  # pacer lease -> when its request went out (one a site: no `sent`)
        # A shared frontier lease that holds the pacer's start (PACING_GRANTED): when its request reached the
        # server (None: no answer), the slow spacing its answer asks for and the Crawl-delay spacing its site's
        # robots.txt, fetched under it, gave (note_crawl_delay), told Redis as the lease ends.
        self._ends: dict[str, tuple[float | None, float, float]] = {}
        if self._shared is not None:
            crawler.signals.connect(self._release_answered, signal=signals.response_downloaded)
            crawler.signals.connect(self._close_shared, signal=signals.engine_stopped)

    def loop_lag(self) -> float:
        """How late this process's event loop runs now or ran lately, in seconds."""
        now = self._clock()
        overdue = now - self._tick_due if self._ticker is not None else 0.0
        return max(self._lag.value(now), overdue)

    def _start_ticking(self) -> None:
        self._tick_due = self._clock() + _TICK_SECONDS
        self._ticker = call_later(_TICK_SECONDS, self._tick)

    def _tick(self) -> None:
        now = self._clock()
        self._lag.record(now - self._tick_due, now)
        self._tick_due = now + _TICK_SECONDS
        self._ticker = call_later(_TICK_SECONDS, self._tick)

    def _stop_ticking(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None

    def close(self) -> None:
        self._stop_ticking()
        super().close()

    def fetch(self, request: Request, spider: Spider | None = None) -> Deferred[Response | Request]:
        site = self.get_slot_key(request)
        self._in_flight[site] = self._in_flight.get(site, 0) + 1

        def left(result: Any) -> Any:
            if self._in_flight[site] <= 1:
                del self._in_flight[site]
                for watcher in self._watchers:
                    watcher(site)
            else:
                self._in_flight[site] -= 1
            return result

        deferred: Deferred[Response | Request] = super().fetch(request)  # spider: deprecated, never passed
        deferred.addBoth(left)
        return deferred

    def watch(self, watcher: Callable[[str], None]) -> None:
        """Call ``watcher(site)`` whenever ``site`` has no request left in the downloader."""
        self._watchers.append(watcher)

    def due(self, site: str, ignoring: int = 0, request: Request | None = None) -> float | None:
        """When ``site`` may start its next request (monotonic), or ``None`` while it has all it may have in flight.

        ``ignoring`` requests of it in flight are not counted (the one asking). For a ``request`` that
        skips the Crawl-delay only a pause counts: it waits out the crawl's delay (a second or so) in
        its slot, not in the queue, which holds sites to their Crawl-delay.
        """
        if self._in_flight.get(site, 0) - ignoring >= self._runtime.profile.concurrency:
            return None
        pacer = self._runtime.pacer
        paused_until = pacer.paused_until(site)
        if request is not None and self._skips_crawl_delay(request):
            return paused_until
        slot = self.slots.get(site)
        if slot is None:
            return next_start(None, pacer.spacing(site), paused_until)
        # a slot not yet brought down to a shorter spacing still holds the longer one
        return max(next_start(slot.lastseen, pacer.spacing(site), paused_until), slot.lastseen + slot.delay)

    def _pace_slow(self, response: Response, request: Request, **_: Any) -> None:
        """SNA-SLOW: a site that answers slowly gets its requests spaced by a multiple of its response time."""
        profile = self._runtime.profile
        if not profile.slow_factor or request.meta.get("dont_backoff"):
            return
        # The whole download_latency counts, our own loop's lag included: taking an estimate of that lag
        # off could make a gap shorter than ten times what the site owner measured (fail toward politeness).
        latency = request.meta.get("download_latency")
        site, pacer = self._runtime.site(request.url), self._runtime.pacer
        before = pacer.spacing(site)
        spacing = slow_spacing(profile.slow_factor, latency, profile.crawl_delay_cap)
        member = self._granted(request)
        if member is not None and self._shared is not None:  # told Redis with the lease's end, not now
            self._shared.note_spacing(site, spacing)
            arrived, _slow, crawl = self._ends.get(member, (None, 0.0, -1.0))
            self._ends[member] = (arrived, spacing, crawl)
        else:
            pacer.set_spacing(site, spacing)
        self.refresh(site)
        after = pacer.spacing(site)
        if after > before * 1.1:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("backoff/slow")
            logger.info(
                "backoff: %s answered in %s: %s between its requests now", site, secs(latency or 0), secs(after)
            )

    def _response_downloaded(self, response: Response, request: Request, **_: Any) -> None:
        key = request.meta.get(self.DOWNLOAD_SLOT, "")
        slot, latency = self.slots.get(key), request.meta.get("download_latency")
        if slot is None or latency is None:
            return
        now = self._clock()
        lag = _TURNS_TO_SEND * self.loop_lag()
        arrived = reached_server_by(now - latency, now, self._runtime.pacer.spacing(key), loop_lag=lag)
        slot.lastseen = max(slot.lastseen, arrived)
        self._arrived(request, arrived)

    async def _download(self, slot: Slot, request: Request) -> Response:
        for on_send in self._on_send:  # may raise IgnoreRequest: then nothing is sent
            on_send(request)
        dispatched = self._clock()
        lease = request.meta.get(_LEASE)
        if lease is not None:
            if self._runtime.profile.concurrency > 1:
                self._say_sent(request.meta.get(self.DOWNLOAD_SLOT, ""), lease)
            else:  # its place holds the site until the release, which says when it went out: no `sent` call
                self._sent_at[lease] = dispatched
        try:
            return await super()._download(slot, request)
        except Exception:
            # No answer (a dropped connection, a timeout): the request may still have reached
            # the server, late; count the gap from when it failed, within the same bound.
            now = self._clock()
            key = request.meta.get(self.DOWNLOAD_SLOT, "")
            arrived = reached_server_by(
                dispatched, now, self._runtime.pacer.spacing(key), loop_lag=_TURNS_TO_SEND * self.loop_lag()
            )
            slot.lastseen = max(slot.lastseen, arrived)
            self._arrived(request, arrived)
            raise

    def get_slot_key(self, request: Request) -> str:
        return self._runtime.site(request.url)

    def _reached(self, request: Request, **_: Any) -> None:
        """Bring the request's slot up to date with the pacer, after Scrapy found (or made) it and before the
        slot looks at its queue: Scrapy sends ``request_reached_downloader`` between the two, as AutoThrottle
        relies on. ``_pace`` is the one owner of the slot's delay, jitter and concurrency."""
        key = str(request.meta.get(self.DOWNLOAD_SLOT, ""))
        slot = self.slots.get(key)
        if slot is not None:
            self._pace(key, slot)

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

    def _skips_crawl_delay(self, request: Request) -> bool:
        return bool(request.meta.get(SKIP_CRAWL_DELAY))

    def _delay_for(self, key: str, *, crawl_delay: bool = True) -> float:
        pacer = self._runtime.pacer
        spacing = pacer.spacing(key) if crawl_delay else pacer.spacing_without_crawl_delay(key)
        return gap(spacing)

    def _pace(self, key: str, slot: Slot) -> None:
        pacer = self._runtime.pacer
        slot.delay = self._delay_for(key)
        slot.jitter = 0.0
        slot.concurrency = self._runtime.profile.concurrency
        paused_until = pacer.paused_until(key)
        if paused_until > self._clock():
            slot.lastseen = max(slot.lastseen, paused_until - slot.delay)

    # Shared pacing (PACING_REDIS_URL): Redis grants each start, for all machines at once (OMN-SITE).

    def _process_queue(self, slot: Slot) -> None:
        if self._shared is None:
            self._process_local_queue(slot)
            return
        if slot.latercall or not slot.queue or slot.free_transfer_slots() <= 0:
            return
        head = slot.queue[0][0]
        key = head.meta[self.DOWNLOAD_SLOT]
        if key in self._asking:
            return
        skips = self._skips_crawl_delay(head)
        delay = self._delay_for(key, crawl_delay=False) if skips else slot.download_delay()
        penalty = delay - self._clock() + slot.lastseen
        if penalty > 0:  # this process's own spacing first: no need to ask Redis before it
            slot.latercall = call_later(penalty, self._latercall, slot)
            return
        if self._granted(head) is not None:  # its frontier lease holds the start: no need to ask
            slot.lastseen = self._clock()
            request, queue_dfd = slot.queue.popleft()
            _schedule_coro(self._wait_for_download(slot, request, queue_dfd))
            self._process_queue(slot)
            return
        self._asking.add(key)
        _schedule_coro(self._ask(key, slot, skips))

    def _process_local_queue(self, slot: Slot) -> None:
        """This process's own pacing (no PACING_REDIS_URL)."""
        head = slot.queue[0][0] if slot.queue else None
        if head is None or not self._skips_crawl_delay(head):
            super()._process_queue(slot)
            return
        key = head.meta[self.DOWNLOAD_SLOT]
        if self._runtime.pacer.paused_until(key) > self._clock():
            super()._process_queue(slot)  # a pause holds it, Crawl-delay and all: the polite reading
            return
        spaced, slot.delay = slot.delay, self._delay_for(key, crawl_delay=False)
        try:
            super()._process_queue(slot)
        finally:
            slot.delay = spaced

    async def _ask(self, key: str, slot: Slot, skips: bool = False) -> None:
        assert self._shared is not None
        try:
            await asyncio.gather(*self._releasing.get(key, ()))  # a send or an answer moves the next start first
            asked = time.monotonic()
            turn = await self._shared.acquire(key, skip_crawl_delay=skips)
            self._runtime.timer("redis", time.monotonic() - asked)
        finally:
            self._asking.discard(key)
        self._pace(key, slot)  # a pause or spacing another machine set
        if turn.lease is None:
            slot.lastseen = max(slot.lastseen, self._clock() + turn.wait - slot.delay)  # due() sees the wait
            if slot.latercall is None:
                slot.latercall = call_later(turn.wait, self._latercall, slot)
            return
        if not slot.queue or slot.free_transfer_slots() <= 0:  # dropped or taken meanwhile
            self._release(key, turn.lease, None)
            return
        slot.lastseen = self._clock()
        request, queue_dfd = slot.queue.popleft()
        request.meta[_LEASE] = turn.lease
        _schedule_coro(self._leased(key, slot, request, queue_dfd))
        self._process_queue(slot)

    async def _leased(self, key: str, slot: Slot, request: Request, queue_dfd: Deferred[Response]) -> None:
        try:
            await self._wait_for_download(slot, request, queue_dfd)
        finally:
            lease = request.meta.pop(_LEASE, None)
            if lease is not None:  # no answer (refused, timed out): the place is free, the spacing stands
                sent = self._sent_at.pop(lease, None)
                ago = None
                if sent is not None:  # from when it may have reached the server, at the latest
                    now, lag = self._clock(), _TURNS_TO_SEND * self.loop_lag()
                    ago = now - reached_server_by(sent, now, self._runtime.pacer.spacing(key), loop_lag=lag)
                self._release(key, lease, ago)

    def _granted(self, request: Request) -> str | None:
        """The shared frontier lease (its member) that holds ``request``'s start, if one does: a lease holds its
        own site's start only (a robots.txt fetched under it may be redirected to another site)."""
        lease = request.meta.get(LEASE)
        if not request.meta.get(PACING_GRANTED) or not isinstance(lease, list) or len(lease) != 2:
            return None
        if lease[0] != self.get_slot_key(request):
            return None
        return f"{lease[0]}\t{lease[1]}"

    def _arrived(self, request: Request, arrived: float) -> None:
        member = self._granted(request)
        if member is not None:
            _, slow, crawl = self._ends.get(member, (None, 0.0, -1.0))
            self._ends[member] = (arrived, slow, crawl)

    def note_crawl_delay(self, member: str, spacing: float) -> None:
        """The Crawl-delay spacing of the site whose robots.txt went out under frontier lease ``member``'s start:
        told Redis as that lease ends, in the same round trip, before another start there is granted."""
        arrived, slow, _ = self._ends.get(member, (None, 0.0, -1.0))
        self._ends[member] = (arrived, slow, spacing)

    def lease_end(self, member: str) -> tuple[float, float, float]:
        """How the request of frontier lease ``member`` ended, for the lease's end in Redis: seconds since it
        reached the server (-1: unknown), the slow spacing its answer asks for (0: none) and the Crawl-delay
        spacing noted (-1: none). Kept until ``forget``: a lease's end that Redis did not take is told again
        with the next try."""
        arrived, slow, crawl = self._ends.get(member, (None, 0.0, -1.0))
        return (-1.0 if arrived is None else max(0.0, self._clock() - arrived)), slow, crawl

    def forget(self, members: Iterable[str]) -> None:
        """These leases' ends are in Redis."""
        for member in members:
            self._ends.pop(member, None)

    def _release_answered(self, response: Response, request: Request, **_: Any) -> None:
        lease = request.meta.pop(_LEASE, None)
        if lease is None or self._shared is None:
            return
        self._sent_at.pop(lease, None)
        key, latency = request.meta.get(self.DOWNLOAD_SLOT, ""), request.meta.get("download_latency")
        ago = None
        if latency is not None:
            now = self._clock()
            lag = _TURNS_TO_SEND * self.loop_lag()
            ago = now - reached_server_by(now - latency, now, self._shared.spacing(key), loop_lag=lag)
        self._release(key, lease, ago)

    def _say_sent(self, key: str, lease: str) -> None:
        """Tell Redis the lease's request has gone out, ``_TURNS_TO_SEND`` loop turns after its dispatch.

        Counted in turns of this loop, not in seconds, so a process starved of CPU after its grant or
        its dispatch still says it after the transport has flushed: Redis's clock then reads no
        earlier than the send, and the next start, for every machine, is a spacing after it. On
        loopback, over fresh and reused connections alike, each request's bytes left before its mark.
        A send that needs longer than the turns (a name lookup, a TLS handshake) can still
        arrive after its mark, as it could arrive after its grant before; its answer moves the next
        start past its arrival (``_release_answered``).
        """
        loop = asyncio.get_running_loop()

        def turn(left: int) -> None:
            if left:
                loop.call_soon(turn, left - 1)
                return
            if self._shared is None or self._shared_closed:  # the crawl ended first: the lease expires
                return
            self._track(key, asyncio.ensure_future(self._shared.sent(key, lease)))

        loop.call_soon(turn, _TURNS_TO_SEND - 1)

    def _release(self, key: str, lease: str, arrived_ago: float | None) -> None:
        assert self._shared is not None
        self._track(key, asyncio.ensure_future(self._shared.release(key, lease, arrived_ago)))

    def _track(self, key: str, task: asyncio.Task[None]) -> None:
        """Hold ``task`` (a Redis write about ``key``'s starts) until done: the site's next ask waits for it."""
        pending = self._releasing.setdefault(key, set())
        pending.add(task)

        def done(_: asyncio.Task[None]) -> None:
            pending.discard(task)
            if not pending and self._releasing.get(key) is pending:
                del self._releasing[key]

        task.add_done_callback(done)

    async def _close_shared(self) -> None:
        assert self._shared is not None
        self._shared_closed = True
        await asyncio.gather(*(task for pending in list(self._releasing.values()) for task in pending))
        if self._shared.failures and self.crawler.stats is not None:
            # A shared crawl says Redis outages once, through its frontier; calls of the pacer alone that
            # failed (each held its site) show here, in the stats every crawl ends with.
            self.crawler.stats.set_value("pacing/redis_failures", self._shared.failures)
        await self._shared.aclose()
