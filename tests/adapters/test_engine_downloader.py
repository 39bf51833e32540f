"""PacedDownloader on a real crawler and a fake clock: spacing, pauses, Crawl-delay, slow servers, concurrency.

The downloader is Scrapy's, keyed by site and paced by the crawl's pacer. Its slots are real and the
clock is passed in, so each due time is checked exactly; nothing is downloaded (the concurrency test's
one middleware answers for the network, when the test lets it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.test import get_crawler

from middlewares.engine.downloader import PacedDownloader
from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.meta import LEASE, PACING_GRANTED
from synapsecrawl.pacing.clock import gap, next_start
from synapsecrawl.pacing.keys import site_keys
from tests.adapters.crawlers import Held, live_slot
from tests.helpers import REDIS_URL

_SIGNING = ("omniscientebot", "serenereader")  # profiles that sign every request need a key


class FakeClock:
    """Monotonic seconds that move only when a test moves them."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def downloader_for(profile: str, signing_key: Path, clock: FakeClock, **settings: Any) -> PacedDownloader:
    signs = {"SIGNING_KEY": str(signing_key)} if profile in _SIGNING else {}
    crawler: Crawler = get_crawler(settings_dict={"BOT_PROFILE": profile, **signs, **settings})
    crawler.stats = MemoryStatsCollector(crawler)
    downloader = PacedDownloader(crawler, clock=clock)
    await downloader.handlers._close()  # nothing is downloaded here
    return downloader


async def test_a_sites_next_start_is_its_spacing_and_margin_after_the_last(signing_key: Path) -> None:
    """OMN-SITE: under OmniscienteBot every host of a registrable domain is one site, one request every
    5 s (plus the margin), at most two at once, no jitter; a site that has not started is due at once."""
    clock = FakeClock()
    downloader = await downloader_for("omniscientebot", signing_key, clock)
    assert downloader.due("example.com") == 0.0
    site, slot = live_slot(downloader, Request("https://www.example.com/a"))
    assert site == downloader.get_slot_key(Request("https://blog.example.com/b")) == "example.com"
    assert (slot.delay, slot.jitter, slot.concurrency) == (gap(5.0), 0.0, 2)
    slot.lastseen = clock.now  # a request started
    assert downloader.due(site) == next_start(clock.now, 5.0) == clock.now + gap(5.0)


async def test_a_pause_holds_the_live_slot_until_it_ends(signing_key: Path) -> None:
    """OMN-PAUSE: a pause set while the site's slot is live moves its last start so the slot's own timer
    waits the pause out; the site is due when the pause ends, not earlier. A pause already over holds nothing."""
    clock = FakeClock()
    downloader = await downloader_for("synapsebot", signing_key, clock)
    pacer = Runtime.of(downloader.crawler).pacer
    site, slot = live_slot(downloader, Request("http://a.test/"))
    slot.lastseen = clock.now
    pacer.pause(site, until=clock.now + 30.0)
    downloader.refresh(site)
    assert slot.lastseen == clock.now + 30.0 - slot.delay
    assert downloader.due(site) == clock.now + 30.0
    assert downloader.due("b.test") == 0.0  # other sites never notice
    clock.now += 100.0
    before = slot.lastseen
    downloader.refresh(site)
    assert slot.lastseen == before


@pytest.mark.parametrize(
    ("profile", "stated", "spacing"), [("synapsebot", 2.5, 2.5), ("synapsebot", 100.0, 30.0), ("synapsebot", 0.5, 1.0)]
)
async def test_the_crawl_delay_reaches_the_live_slot_within_the_profiles_cap(
    signing_key: Path, profile: str, stated: float, spacing: float
) -> None:
    """ALL-CD, SYN-CD: a Crawl-delay read once the slot is live spaces its next start, longer than the
    crawl's delay only, capped at the profile's 30 s."""
    clock = FakeClock()
    downloader = await downloader_for(profile, signing_key, clock)
    pacer = Runtime.of(downloader.crawler).pacer
    site, slot = live_slot(downloader, Request("http://a.test/"))
    slot.lastseen = clock.now
    pacer.set_crawl_delay(site, stated)
    downloader.refresh(site)
    assert slot.delay == gap(spacing)
    assert downloader.due(site) == clock.now + gap(spacing)


async def test_a_slow_answer_spaces_the_site_ten_times_its_response_time(signing_key: Path) -> None:
    """SNA-SLOW: an answer that took 0.5 s spaces the site's next requests 5 s apart, in the pacer and
    the live slot; a fast answer later lets the spacing come back to the crawl's delay. An answer to a
    request that opts out of backoff (dont_backoff) changes nothing."""
    clock = FakeClock()
    downloader = await downloader_for("snagabot", signing_key, clock)
    pacer = Runtime.of(downloader.crawler).pacer
    site, slot = live_slot(downloader, Request("http://slow.test/"))

    def answered(latency: float, **meta: Any) -> None:
        request = Request("http://slow.test/", meta={"download_latency": latency, **meta})
        response = Response(request.url, request=request)
        downloader.crawler.signals.send_catch_log(signals.response_downloaded, response=response, request=request)

    answered(0.5)
    assert pacer.spacing(site) == pytest.approx(5.0) and slot.delay == pytest.approx(gap(5.0))
    assert downloader.crawler.stats.get_value("backoff/slow") == 1  # type: ignore[union-attr]
    answered(0.05)
    assert pacer.spacing(site) == 1.0 and slot.delay == gap(1.0)
    answered(2.0, dont_backoff=True)
    assert pacer.spacing(site) == 1.0


@pytest.mark.parametrize(("latency", "counted_from"), [(0.2, 0.0), (3.0, -2.0)])
async def test_the_next_gap_counts_from_when_the_request_reached_the_server(
    signing_key: Path, latency: float, counted_from: float
) -> None:
    """SYN-RATE: the site owner's log shows arrivals, so the next gap counts from the answer, but at most
    a quarter of the spacing (a second at most) after the request left: a slow server does not stretch
    every gap by its whole response time."""
    clock = FakeClock()
    downloader = await downloader_for("omniscientebot", signing_key, clock)
    site, slot = live_slot(downloader, Request("https://www.example.com/"))
    request = Request("https://www.example.com/", meta={"download_latency": latency, "download_slot": site})
    response = Response(request.url, request=request)
    downloader.crawler.signals.send_catch_log(signals.response_downloaded, response=response, request=request)
    assert slot.lastseen == pytest.approx(clock.now + counted_from)


async def test_a_site_with_all_it_may_have_in_flight_is_not_due_until_one_leaves(signing_key: Path) -> None:
    """OMN-SITE: two requests at most per site in flight (robots.txt's included); while both are in the
    downloader the site is not due; when one leaves it is, and the frontier hears when the last has left."""
    clock = FakeClock()
    settings = {"DOWNLOADER_MIDDLEWARES_BASE": {}, "DOWNLOADER_MIDDLEWARES": {"tests.adapters.crawlers.Held": 1}}
    downloader = await downloader_for("omniscientebot", signing_key, clock, **settings)
    [held] = downloader.middleware.middlewares
    assert isinstance(held, Held)
    left: list[str] = []
    downloader.watch(left.append)
    first = downloader.fetch(Request("https://www.example.com/1"))
    second = downloader.fetch(Request("https://blog.example.com/2"))
    while len(held.waiting) < 2:
        await asyncio.sleep(0)
    assert downloader.due("example.com") is None
    assert downloader.due("example.com", ignoring=1) is not None  # the one asking is not counted
    held.answer("https://www.example.com/1")
    await maybe_deferred_to_future(first)
    assert downloader.due("example.com") is not None and left == []
    held.answer("https://blog.example.com/2")
    await maybe_deferred_to_future(second)
    assert left == ["example.com"]


class _Wire:
    """Stands in for the network under shared pacing: notes, as each request is handed over, the Redis
    server's time and whether Redis still holds the request's grant as unsent."""

    def __init__(self, unsent_key: str) -> None:
        import redis

        self._redis = redis.Redis.from_url(REDIS_URL)
        self._unsent_key = unsent_key
        self.handed: list[tuple[float, int]] = []  # (Redis time, grants still unsent) at each hand-over

    async def download_request_async(self, request: Request) -> Response:
        seconds, micros = self._redis.time()
        self.handed.append((seconds + micros / 1e6, self._redis.zcard(self._unsent_key)))
        return Response(request.url, request=request)

    def close(self) -> None:
        self._redis.close()


async def test_under_shared_pacing_the_send_is_told_redis_after_the_hand_over_and_books_the_next_start(
    signing_key: Path, redis_prefix: str
) -> None:
    """OMN-SITE: a machine says it has sent a granted request only after handing it to the network (its
    grant is still held unsent at the hand-over), and that books the site's next start, for every
    machine, a spacing after the send; nothing is left held once said."""
    import redis

    settings = {
        "DOWNLOADER_MIDDLEWARES_BASE": {},
        "PACING_REDIS_URL": REDIS_URL,
        "PACING_REDIS_PREFIX": redis_prefix,
    }
    downloader = await downloader_for("omniscientebot", signing_key, FakeClock(), **settings)
    keys = site_keys(f"{redis_prefix}:omniscientebot", "example.com")[0].removesuffix(":state")
    wire = _Wire(f"{keys}:unsent")
    downloader.handlers = wire  # type: ignore[assignment]
    try:
        await maybe_deferred_to_future(downloader.fetch(Request("https://www.example.com/")))
        while downloader._releasing:  # the send and the answer being told Redis
            await asyncio.gather(*(task for tasks in list(downloader._releasing.values()) for task in tasks))
        [(handed_at, unsent_then)] = wire.handed
        assert unsent_then == 1
        client = redis.Redis.from_url(REDIS_URL)
        try:
            assert client.zcard(f"{keys}:unsent") == 0
            state = {k.decode(): float(v) for k, v in client.hgetall(f"{keys}:state").items()}
        finally:
            client.close()
        assert state["last"] >= handed_at
        assert state["next"] >= handed_at + gap(5.0)
    finally:
        wire.close()
        await downloader._close_shared()


async def test_the_shared_pacers_failed_calls_are_in_the_crawls_stats(signing_key: Path, redis_prefix: str) -> None:
    """OMN-SITE: each pacer call Redis failed to answer held its site; a shared crawl leaves saying so to its
    frontier, so the count is in the stats the crawl ends with, where a failure of the pacer alone shows."""
    settings = {
        "DOWNLOADER_MIDDLEWARES_BASE": {},
        "PACING_REDIS_URL": "redis://127.0.0.1:1/0",
        "PACING_REDIS_PREFIX": redis_prefix,
    }
    downloader = await downloader_for("omniscientebot", signing_key, FakeClock(), **settings)
    assert downloader._shared is not None
    turn = await downloader._shared.acquire("example.com")
    assert not turn.granted
    await downloader._close_shared()
    assert downloader.crawler.stats is not None
    assert downloader.crawler.stats.get_value("pacing/redis_failures") == 1


async def test_a_frontier_leases_start_holds_for_its_own_sites_requests_only(signing_key: Path) -> None:
    """OMN-SITE: a shared crawl's lease holds its own site's start, so a request carrying it goes out without
    asking the pacer only at that site: robots.txt fetched under it and redirected to another site asks the
    pacer for that site's start."""
    downloader = await downloader_for("snagabot", signing_key, FakeClock())
    meta = {LEASE: ["docs.test", "1-0"], PACING_GRANTED: True}
    assert downloader._granted(Request("https://docs.test/robots.txt", meta=meta)) == "docs.test\t1-0"
    assert downloader._granted(Request("https://cdn.test/robots.txt", meta=meta)) is None
