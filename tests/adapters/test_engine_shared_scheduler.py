"""SharedScheduler on a real crawler and the real test Redis: requests in and out of the shared frontier.

The frontier is a real ``SharedFrontier`` under a key prefix of the test's own (``redis_prefix``, its
keys deleted after); the spider is a stand-in with what the scheduler reads of the worker spider
(``frontier``, ``worker``, ``runtime``, ``entry_for``, ``request_for``), turning requests into JSON
entries and back as ``spiders.worker`` does, in short. What comes out is read where a crawl reads it:
the request ``next_request`` gives, the frontier's counts per site (pending, in flight, done), the log.
The timers the scheduler sets (flush, wake, heartbeat) are cancelled by ``close``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from time import monotonic
from types import SimpleNamespace

import pytest
from scrapy import Request
from scrapy.crawler import Crawler

from bench.redisserver import free_port, redis_server
from middlewares.engine.runtime import Runtime
from middlewares.engine.shared_scheduler import _FIRST_ASK, _IDLE_ASK, SharedScheduler, plain_meta
from synapsecrawl.crawl.meta import BEFORE_ROBOTS, LEASE, PACING_GRANTED, TURN
from synapsecrawl.shared.entries import BadEntry, Entry, Lease
from synapsecrawl.shared.frontier import SharedFrontier
from tests.adapters.crawlers import crawler_for
from tests.conftest import REDIS_URL

SITE = "a.test"


class _Worker:
    """The worker spider as the scheduler sees it: entries to JSON and back, callbacks by name."""

    def __init__(self, crawler: Crawler, frontier: SharedFrontier) -> None:
        self.frontier, self.worker, self.runtime = frontier, "w1", Runtime.of(crawler)

    def entry_for(self, request: Request) -> Entry | None:
        meta = plain_meta(request.meta)
        return None if meta is None else Entry(url=request.url, source="s1", meta=meta, dont_filter=request.dont_filter)

    def request_for(self, entry: Entry, lease: Lease) -> Request:
        if entry.callback != "parse":
            raise BadEntry(f"callback {entry.callback!r} is not one a shared crawl runs")
        return Request(entry.url, meta={**entry.meta, LEASE: [lease.site, lease.id]}, dont_filter=True)


@pytest.fixture
async def scheduler(tmp_path: Path, redis_prefix: str) -> AsyncIterator[SharedScheduler]:
    crawler = crawler_for(tmp_path, BOT_PROFILE="synapsebot")
    crawler.engine = SimpleNamespace(downloader=None, _slot=None)  # type: ignore[assignment]  # no pacing, nothing to wake
    frontier = SharedFrontier(
        REDIS_URL,
        "adapters",
        prefix=f"{redis_prefix}:frontier",
        pacer_prefix=f"{redis_prefix}:pacing",
        lease_seconds=30.0,
        delay=0.0,
    )
    scheduler = SharedScheduler.from_crawler(crawler)
    scheduler.open(_Worker(crawler, frontier))  # type: ignore[arg-type]
    yield scheduler
    scheduler.close("finished")
    frontier.close()


def _counts(scheduler: SharedScheduler, site: str = SITE) -> tuple[int, int, int]:
    assert scheduler.frontier is not None
    return scheduler.frontier.status().sites.get(site, (0, 0, 0))


async def test_a_request_goes_through_the_shared_frontier_and_back(scheduler: SharedScheduler) -> None:
    """An enqueued request goes to Redis as JSON (its transient meta left out) and comes back out
    of next_request as a request of the same URL and meta, holding a lease (in flight) and flagged as a
    frontier's turn, so the pacing gate may send it back."""
    assert scheduler.enqueue_request(Request(f"http://{SITE}/p", meta={"depth": 2, "download_slot": "x"}))
    request = scheduler.next_request()
    assert request is not None
    assert request.url == f"http://{SITE}/p"
    assert request.meta["depth"] == 2 and "download_slot" not in request.meta
    assert request.meta[TURN] is True
    assert len(scheduler.held) == 1
    assert _counts(scheduler) == (0, 1, 0)


async def test_flush_queues_in_redis_at_once_what_waits_to_go(scheduler: SharedScheduler) -> None:
    """Enqueued requests wait for the loop's next turn to go to Redis together; ``flush`` (a long start, every
    batch) sends them at once, so this worker and the others lease from them while the rest of the start is
    read."""
    for n in range(3):
        scheduler.enqueue_request(Request(f"http://{SITE}/{n}"))
    assert _counts(scheduler) == (0, 0, 0)
    scheduler.flush()
    assert _counts(scheduler) == (3, 0, 0)
    assert not scheduler.has_pending_requests()
    assert scheduler.next_request() is not None


async def test_a_worker_with_no_lease_yet_asks_again_soon_then_at_the_usual_pace(scheduler: SharedScheduler) -> None:
    """Workers started together find nothing while one of them queues a source's start: until its first lease
    a worker, and its frontier for a partition found empty, ask again after ``_FIRST_ASK``; once a lease came,
    after the usual second (no more round trips than before for the rest of the crawl)."""
    frontier = scheduler.frontier
    assert frontier is not None
    assert scheduler.next_request() is None
    assert frontier.empty_ask == _FIRST_ASK < _IDLE_ASK
    assert scheduler._quiet_until - monotonic() <= _FIRST_ASK
    scheduler._quiet_until = 0.0  # as the wake timer does, without waiting for it
    frontier._due = [0.0] * len(frontier._due)  # every partition due, as _FIRST_ASK later
    scheduler.enqueue_request(Request(f"http://{SITE}/p"))
    scheduler.flush()
    assert scheduler.next_request() is not None
    assert frontier.empty_ask == _IDLE_ASK
    assert scheduler.next_request() is None
    assert scheduler._quiet_until - monotonic() > _FIRST_ASK


async def test_a_done_request_acks_its_lease_once(scheduler: SharedScheduler) -> None:
    """Once its answer is read and handed on (``done``), the lease is acknowledged: the site counts
    it done, nothing in flight; a second ``done`` for the same request acknowledges nothing more."""
    scheduler.enqueue_request(Request(f"http://{SITE}/p"))
    request = scheduler.next_request()
    assert request is not None
    scheduler.done(request)
    scheduler.done(request)
    assert not scheduler.held
    scheduler._ack_pending()  # what the ack timer does half a second later
    assert _counts(scheduler) == (0, 0, 1)
    assert not scheduler.has_pending_requests()


async def test_a_bad_entry_is_dropped_with_one_line(
    scheduler: SharedScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    """JSON, never pickle: an entry that is not ours (not JSON, a callback no shared crawl runs) is
    refused with one warning line each, its lease acknowledged so no worker takes it again, and the
    next good entry is handed out in the same call."""
    assert scheduler.frontier is not None
    scheduler.frontier.add_raw(SITE, b"\x80\x04K\x01.")
    scheduler.frontier.add([(SITE, Entry(url=f"http://{SITE}/x", source="s1", callback="os.system"))])
    scheduler.frontier.add([(SITE, Entry(url=f"http://{SITE}/good", source="s1"))])
    with caplog.at_level(logging.WARNING, logger="middlewares.engine.shared_scheduler"):
        request = scheduler.next_request()
    assert request is not None and request.url == f"http://{SITE}/good"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert all(line.startswith(f"frontier: refused an entry of {SITE} that is not ours") for line in lines)
    assert _counts(scheduler) == (0, 1, 2)


async def test_close_gives_back_the_leases_still_held(
    scheduler: SharedScheduler, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker stopping with leases not yet answered puts them back for the others at once (pending
    again, nothing in flight), and says how many; an answered one is acknowledged instead (no second fetch)."""
    sites = ("a.test", "b.test", "c.test")  # one lease out per site at a time
    for site in sites:
        scheduler.enqueue_request(Request(f"http://{site}/p"))
    taken = {}
    for _ in sites:
        request = scheduler.next_request()
        assert request is not None
        taken[request.meta[LEASE][0]] = request
    assert [_counts(scheduler, site) for site in sites] == [(0, 1, 0)] * 3
    scheduler.answered(taken["a.test"])
    with caplog.at_level(logging.INFO, logger="middlewares.engine.shared_scheduler"):
        scheduler.close("shutdown")
    assert not scheduler.held
    assert [_counts(scheduler, site) for site in sites] == [(0, 0, 1), (1, 0, 0), (1, 0, 0)]
    assert "frontier: 2 requests this worker held put back for the others" in [r.getMessage() for r in caplog.records]


async def test_a_request_whose_meta_cannot_travel_stays_local(scheduler: SharedScheduler) -> None:
    """A request whose meta is no JSON (a feed entry's live state) stays in this worker's local queue and
    is handed out here first, never sent to Redis; the lease it came with ends."""
    scheduler.enqueue_request(Request(f"http://{SITE}/p"))
    leased = scheduler.next_request()
    assert leased is not None
    local = Request(f"http://{SITE}/entry", meta={"state": object(), LEASE: leased.meta[LEASE]})
    scheduler.enqueue_request(local)
    assert not scheduler.held and len(scheduler) == 1
    assert scheduler.next_request() is local
    scheduler._ack_pending()
    assert _counts(scheduler) == (0, 0, 1)


async def test_a_frontier_redis_that_stops_answering_loses_nothing_and_is_used_again_once_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis unreachable: on a redis-server of the test's own, stopped and started again. While it does
    not answer, a queued request stays in this worker (counted as pending, so the crawl does not end), no
    request comes out, and the outage is said once however many tries fail; once it answers, the request goes
    in, comes out with its lease, and the return is said once."""
    port = free_port()
    data = tmp_path / "redis"
    data.mkdir()
    server = redis_server(port, data, durable=True)
    crawler = crawler_for(tmp_path, BOT_PROFILE="synapsebot")
    crawler.engine = SimpleNamespace(downloader=None, _slot=None)  # type: ignore[assignment]  # no pacing, nothing to wake
    frontier = SharedFrontier(
        f"redis://127.0.0.1:{port}/0",
        "adapters",
        prefix="t:frontier",
        pacer_prefix="t:pacing",
        lease_seconds=30.0,
        delay=0.0,
    )
    scheduler = SharedScheduler.from_crawler(crawler)
    scheduler.open(_Worker(crawler, frontier))  # type: ignore[arg-type]
    try:
        server.terminate()
        server.wait(10)
        with caplog.at_level(logging.INFO, logger="middlewares.engine.shared_scheduler"):
            scheduler.enqueue_request(Request(f"http://{SITE}/p"))
            assert scheduler.next_request() is None
            scheduler._heartbeat()
            assert scheduler.next_request() is None
            assert len(scheduler) == 1 and scheduler.has_pending_requests()
            server = redis_server(port, data, durable=True)
            request = scheduler.next_request()
        assert request is not None and request.url == f"http://{SITE}/p" and LEASE in request.meta
        assert _counts(scheduler) == (0, 1, 0) and len(scheduler) == 0
        said = [record.getMessage() for record in caplog.records]
        assert sum("does not answer" in line and "nothing is lost" in line for line in said) == 1, said
        assert sum("answers again" in line for line in said) == 1, said
    finally:
        scheduler.close("finished")
        frontier.close()
        server.terminate()
        server.wait(10)


async def test_a_lease_that_holds_its_sites_start_says_whether_robots_txt_was_read_first(
    scheduler: SharedScheduler, redis_prefix: str
) -> None:
    """OMN-SITE: a lease that holds its site's start (one download a site) marks its request so the downloader
    sends it without asking the pacer; before the site's robots.txt was read (no Crawl-delay in Redis) the mark
    says so, for the robots.txt fetch to take that start; once the Crawl-delay is in Redis, the page's own."""
    from synapsecrawl.pacing.shared import RedisPacing

    assert scheduler.frontier is not None
    scheduler.frontier.grant = True
    scheduler.enqueue_request(Request(f"http://{SITE}/p"))
    first = scheduler.next_request()
    assert first is not None and first.meta[PACING_GRANTED] == BEFORE_ROBOTS
    pacer = RedisPacing(
        REDIS_URL, delay=0.0, crawl_delay_cap=30.0, concurrency=1, lease_seconds=30.0, prefix=f"{redis_prefix}:pacing"
    )
    pacer.set_crawl_delay(SITE, None)  # its robots.txt read
    await pacer.aclose()
    scheduler.done(first)
    scheduler._ack_pending()
    scheduler.enqueue_request(Request(f"http://{SITE}/q"))
    scheduler._flush()
    second = None
    for _ in range(50):  # the site's next start, a margin after the first's
        scheduler._quiet_until = 0.0
        second = scheduler.next_request()
        if second is not None:
            break
        await asyncio.sleep(0.01)
    assert second is not None and second.meta[PACING_GRANTED] is True
