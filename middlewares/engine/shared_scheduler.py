"""The scheduler of a shared crawl: requests in and out of ``synapsecrawl.shared.frontier``.

``scrapy crawl worker`` sets ``SCHEDULER`` to ``SharedScheduler``: a request goes to Redis as a JSON ``Entry``,
``next_request`` leases one of a due site across all workers, and the worker spider acknowledges it once its answer
is handed on. A request whose meta cannot travel as JSON (which keys travel: ``synapsecrawl.crawl.meta``) stays in a
small local queue. Redis that stops answering is one warning line and a retry every second; leases are renewed by a
heartbeat. More: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from collections import deque
from contextlib import suppress
from functools import partial
from time import monotonic
from typing import TYPE_CHECKING, Any, cast

from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import CallLaterResult, call_later

from middlewares.engine.backoffstate import left_elsewhere
from middlewares.engine.exceptions import SiteLeft
from middlewares.engine.runtime import Runtime
from middlewares.engine.seam import paced_downloader, wake_engine
from synapsecrawl.crawl.meta import (
    BEFORE_ROBOTS,
    LEAD_SECONDS,
    LEASE,
    LEFT_OUT_OF_ENTRY,
    META,
    ORIGIN,
    PACING_GRANTED,
    TURN,
)
from synapsecrawl.shared.entries import BadEntry, Entry, FrontierUnreachable, Lease, is_plain_json

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

    from synapsecrawl.shared.frontier import End, SharedFrontier

__all__ = ["LEASE", "ORIGIN", "SharedScheduler", "plain_meta", "worker_name"]

logger = logging.getLogger(__name__)

_IDLE_ASK = 1.0  # seconds between asks when nothing is pending (another worker's links may come)
# Until its first lease, and for at most _FIRST_ASK_FOR seconds after it opens, a worker asks this often: workers
# started together find nothing while the one that leased a source's start is queueing its first requests.
_FIRST_ASK = 0.25
_FIRST_ASK_FOR = 10.0
# The longest sleep until the next site Redis says is due: work another worker adds for a new site is seen
# this late here (the adding worker itself asks at once).
_LONGEST_SLEEP = 5.0
# A finished lease is acknowledged with this worker's next lease (one round trip for both), or after this
# long when no lease is asked for meanwhile.
_ACK_WITHIN = 0.5
_RETRY_DOWN = 1.0  # seconds between asks while Redis does not answer


def worker_name() -> str:
    """This worker's name in the crawl: host, process id and a random part (a restarted worker is new)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


class SharedScheduler(BaseScheduler):
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.spider: Any = None
        self.frontier: SharedFrontier | None = None
        self.worker = ""
        self.held: dict[str, Lease] = {}  # member -> lease this worker holds
        self._answered: set[str] = set()  # held leases whose answer is read, ended once the scraper is done
        self._out: deque[tuple[str, Entry, Lease | None]] = deque()  # to queue in Redis
        self._acks: list[Lease] = []  # done, to acknowledge once what they queued is in Redis
        self._local: deque[Request] = deque()
        self._quiet_until = 0.0
        self._eager_until = 0.0  # until then (0: over), no lease yet: asks every _FIRST_ASK
        self._empty_ask = _IDLE_ASK  # the frontier's own, given back once the first lease came
        self._down_since: float | None = None
        self._sweep_after = 0.0
        self._left_seen = 0
        self._wake: CallLaterResult | None = None
        self._wake_at = 0.0
        self._beat: CallLaterResult | None = None
        self._flushing: CallLaterResult | None = None
        self._acking: CallLaterResult | None = None
        self.beat_seconds = 5.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SharedScheduler:
        return cls(crawler)

    def open(self, spider: Spider) -> None:
        self.spider = spider
        frontier = getattr(spider, "frontier", None)
        from synapsecrawl.shared.frontier import SharedFrontier  # Redis: a worker's only (spiders.worker imports us)

        if not isinstance(frontier, SharedFrontier):
            raise TypeError("SharedScheduler needs the worker spider (scrapy crawl worker -a crawl=NAME)")
        self.frontier = frontier
        self.worker = str(getattr(spider, "worker", ""))  # a WorkerSpider's, checked through its frontier
        self.beat_seconds = max(0.5, min(5.0, frontier.lease_seconds / 3))
        self._empty_ask, frontier.empty_ask = frontier.empty_ask, _FIRST_ASK
        self._eager_until = monotonic() + _FIRST_ASK_FOR
        self._heartbeat()

    def close(self, reason: str) -> None:
        for handle in (self._wake, self._beat, self._flushing, self._acking):
            if handle is not None:
                handle.cancel()
        self._flush()
        # The scraper is closed by now: an answered lease is done, whatever its ending task had reached.
        for member in self._answered & set(self.held):
            self._acks.append(self.held.pop(member))
        # Stopped before these were done (Ctrl-C, a shutdown): back to the frontier now, not after they expire.
        left = list(self.held.values())
        self._ack_pending()
        if left and self.frontier is not None:
            try:
                given = self.frontier.give_back(self.worker, left, self._ends(left))
                logger.info("frontier: %d requests this worker held put back for the others", given)
            except FrontierUnreachable as error:
                logger.warning(
                    "frontier: Redis did not answer at close (%s): %d leases expire on their own", error, len(left)
                )
        self.held.clear()

    def has_pending_requests(self) -> bool:
        return bool(self._local or self._out or self._acks)

    def __len__(self) -> int:
        return len(self._local) + len(self._out)

    # In.

    def enqueue_request(self, request: Request) -> bool:
        assert self.spider is not None
        ending = None
        request.meta.pop(PACING_GRANTED, None)  # its lease, and the start it held, end here: it asks anew
        member = _member(request.meta.get(LEASE))
        entry = self.spider.entry_for(request)
        if entry is None:  # cannot travel as JSON: kept here; the lease it came with is over
            if member is not None and member in self.held:
                self.done(request)
            self._local.append(request)
            self._nudge()
            return True
        if member is not None:
            ending = self.held.pop(member, None)
        site = self.spider.runtime.site(request.url)
        self._out.append((site, entry, ending))
        self._quiet_until = 0.0
        if self._flushing is None:
            self._flushing = call_later(0, self._flush_soon)
        return True

    def flush(self) -> None:
        """Queue in Redis now what waits to go, and have the engine ask for a lease (a long start hands its
        requests on in batches, not all once it is read)."""
        if self._flushing is not None:
            self._flushing.cancel()
        self._flush_soon()

    def _flush_soon(self) -> None:
        self._flushing = None
        self._flush()
        self._nudge()

    def _flush(self) -> bool:
        """Queue what waits to go to Redis; False if Redis did not take it (kept for the next try)."""
        if self.frontier is None:
            return False
        while self._out:
            batch: list[tuple[str, Entry]] = []
            ending = None
            while self._out and len(batch) < 200:
                site, entry, lease = self._out[0]
                if lease is not None:
                    if batch:
                        break
                    ending = lease
                    batch.append((site, entry))
                    self._out.popleft()
                    break
                batch.append((site, entry))
                self._out.popleft()
            try:
                ends = self._ends([ending] if ending is not None else [])
                self.frontier.add(batch, worker=self.worker, ending=ending, ends=ends)
                self._ended(ends)
            except FrontierUnreachable as error:
                for site, entry in reversed(batch):
                    self._out.appendleft((site, entry, ending))
                    ending = None
                self._down(error)
                return False
            self._up()
        return True

    # Out.

    def next_request(self) -> Request | None:
        request = self._next_local()
        if request is not None:
            return request
        now = monotonic()
        if now < self._quiet_until or self.frontier is None:
            return None
        if not self._flush():  # what a request queued goes in before its lease ends
            self._wake_in(_RETRY_DOWN)
            return None
        for _ in range(16):
            # Not the first call after an outage: other workers' leases may look expired until they renew.
            lease = self._lease(sweep=self._down_since is None and now >= self._sweep_after)
            if lease is None:
                return None
            try:
                entry = Entry.from_json(lease.data)
                request = cast("Request | None", self.spider.request_for(entry, lease))  # the WorkerSpider's
            except BadEntry as error:
                logger.warning("frontier: refused an entry of %s that is not ours (%s): dropped", lease.site, error)
                self._try_ack([lease])
                continue
            self.held[lease.member] = lease
            pacer = Runtime.of(self.crawler).shared_pacer
            if lease.spacing is not None and pacer is not None:
                pacer.heard_crawl_delay(lease.site, lease.spacing)
            if lease.left is not None:  # another worker left the site: this one defers it too
                left_elsewhere(self.crawler, lease.site, *lease.left)
            if request is not None:
                # As the local frontier's: the pacing gate sends it back here (its lease ended, a new entry
                # queued) when its site stopped being due on its way (its robots.txt just fetched, a
                # Crawl-delay to wait), instead of it holding one of CONCURRENT_REQUESTS in a slot.
                request.meta[TURN] = True
                if lease.granted:  # the lease holds the pacer's start: its downloader does not ask Redis
                    request.meta[PACING_GRANTED] = True if lease.spacing is not None else BEFORE_ROBOTS
                return request
            # a source's start, run by the spider: it ends the lease itself
        return None

    def _lease(self, *, sweep: bool) -> Lease | None:
        """One lease from Redis, or None (nothing due: woken when the next site is; Redis down: in a second)."""
        assert self.frontier is not None
        acks, self._acks = self._acks, []  # acknowledged in the same step
        try:
            asked = time.monotonic()
            ends = self._ends(acks)
            lease, hint, reclaimed = self.frontier.lease(self.worker, sweep=sweep, acks=acks, ends=ends)
            self._ended(ends)
            Runtime.of(self.crawler).timer("redis", time.monotonic() - asked)
        except FrontierUnreachable as error:
            self._acks = acks + self._acks
            self._down(error)
            self._wake_in(_RETRY_DOWN)
            return None
        self._up()
        if self.frontier.left_count > self._left_seen:
            self._learn_left()
        if reclaimed:
            logger.info("frontier: %d requests of stopped workers put back in the frontier", reclaimed)
        if self._eager_until and (lease is not None or monotonic() >= self._eager_until):
            self._eager_until = 0.0
            self.frontier.empty_ask = self._empty_ask
        if lease is None or hint > 0:  # nothing due (after this lease): asked again when the next site is
            idle = _FIRST_ASK if self._eager_until else _IDLE_ASK
            wait = idle if hint < 0 else min(max(hint, 0.01), _LONGEST_SLEEP)
            self._quiet_until = monotonic() + wait
            self._wake_in(wait)
        return lease

    def _learn_left(self) -> None:
        """Another worker left sites to a later crawl (paused past what the crawl waits): this worker defers
        them too, the requests of theirs waiting in its downloader included, before their turn comes."""
        assert self.frontier is not None
        try:
            left = self.frontier.left()
        except FrontierUnreachable as error:
            self._down(error)
            return
        self._left_seen = len(left)
        downloader = paced_downloader(self.crawler)
        for site, (until, reason) in left.items():
            left_elsewhere(self.crawler, site, until, reason)
            if downloader is not None:
                downloader.drop_queued(site, partial(_left, site=site, until=until, reason=reason))

    def _next_local(self) -> Request | None:
        downloader = paced_downloader(self.crawler)
        for _ in range(len(self._local)):
            request = self._local.popleft()
            site = self.spider.runtime.site(request.url)
            when = downloader.due(site) if downloader is not None else 0.0
            if when is not None and when <= monotonic() + LEAD_SECONDS:
                return request
            self._local.append(request)
        if self._local:
            self._wake_in(0.25)
        return None

    # Done.

    def answered(self, request: Request) -> None:
        """``request``'s answer (or failure) is read; ``done`` follows once what it yielded is handed on.
        A worker stopping in between acknowledges the lease rather than giving it back (no second fetch)."""
        member = _member(request.meta.get(LEASE))
        if member is not None and member in self.held:
            self._answered.add(member)

    def done(self, request: Request) -> None:
        """``request``'s answer is read and what it yielded handed on: its lease ends."""
        member = _member(request.meta.get(LEASE))
        if member is not None:
            self._answered.discard(member)
        lease = self.held.pop(member, None) if member is not None else None
        if lease is None:
            return
        self._acks.append(lease)
        if self._acking is None:
            self._acking = call_later(_ACK_WITHIN, self._ack_due)

    def _ack_due(self) -> None:
        self._acking = None
        self._ack_pending()

    def _ack_pending(self) -> None:
        if not self._acks or not self._flush():  # what a request queued goes in before its lease ends
            return
        acks, self._acks = self._acks, []
        if not self._try_ack(acks):
            self._acks = acks + self._acks

    def _try_ack(self, leases: list[Lease]) -> bool:
        assert self.frontier is not None
        try:
            ends = self._ends(leases)
            self.frontier.ack(self.worker, leases, ends)
            self._ended(ends)
        except FrontierUnreachable as error:
            self._down(error)
            return False
        self._up()
        return True

    def _ends(self, leases: Iterable[Lease]) -> dict[str, End]:
        """How the requests of these leases that held the pacer's start ended (the downloader measured it)."""
        downloader = paced_downloader(self.crawler)
        if downloader is None:
            return {}
        return {lease.member: downloader.lease_end(lease.member) for lease in leases if lease.granted}

    def _ended(self, ends: dict[str, End]) -> None:
        downloader = paced_downloader(self.crawler)
        if downloader is not None and ends:
            downloader.forget(ends)

    # Liveness.

    def _heartbeat(self) -> None:
        self._beat = call_later(self.beat_seconds, self._heartbeat)
        if self.frontier is None:
            return
        self._flush()
        self._ack_pending()
        try:
            self.frontier.heartbeat(self.worker, [*self.held.values(), *self._acks])
        except FrontierUnreachable as error:
            self._down(error)
            return
        self._up()

    def _down(self, error: FrontierUnreachable) -> None:
        if self._down_since is None:
            self._down_since = monotonic()
            assert self.frontier is not None
            logger.warning(
                "frontier: Redis at %s does not answer (%s): waiting for it; %d requests held here, nothing is lost",
                self.frontier.url,
                str(error).splitlines()[0][:200],
                len(self.held),
            )

    def _up(self) -> None:
        if self._down_since is None:
            return
        assert self.frontier is not None
        logger.warning(
            "frontier: Redis at %s answers again after %.0f s: going on",
            self.frontier.url,
            monotonic() - self._down_since,
        )
        self._down_since = None
        # Other workers' leases may look expired now: give them two heartbeats to renew before sweeping.
        self._sweep_after = monotonic() + 2 * self.beat_seconds + 1.0
        with suppress(FrontierUnreachable):
            self.frontier.heartbeat(self.worker, [*self.held.values(), *self._acks])

    def _wake_in(self, seconds: float) -> None:
        """Look at the frontier again in ``seconds``, or sooner if already due to."""
        at = monotonic() + seconds
        if self._wake is not None:
            if self._wake_at <= at:
                return
            self._wake.cancel()
        self._wake_at = at
        self._wake = call_later(seconds, self._woken)

    def _woken(self) -> None:
        self._wake = None
        self._nudge()

    def _nudge(self) -> None:
        wake_engine(self.crawler)

    def wait_idle(self) -> asyncio.Future[None] | None:
        return None


def _left(queued: Request, *, site: str, until: float, reason: str) -> Exception:
    return SiteLeft(queued.url, site, until, reason)


def _member(value: Any) -> str | None:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return f"{value[0]}\t{value[1]}"
    return None


def plain_meta(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The meta to send with a request, or None when some of it cannot travel as JSON (the table in
    synapsecrawl.crawl.meta says which keys are left out and which never travel)."""
    kept: dict[str, Any] = {}
    for key, value in meta.items():
        if key in LEFT_OUT_OF_ENTRY or key.startswith("_"):
            continue
        row = META.get(key)
        if (row is not None and not row.travels) or not is_plain_json(value):
            return None
        kept[key] = value
    return kept
