"""The shared pacer against the real local Redis: grants, in-flight places, leases and pauses that
hold for every machine of a deployment, on the Redis server's clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from synapsecrawl.pacing.keys import site_keys
from synapsecrawl.pacing.redisclient import sync_redis
from synapsecrawl.pacing.shared import RedisPacing, Turn

SITE = "example.test"
Machine = Callable[..., RedisPacing]


@pytest.fixture
async def machine(redis_prefix: str, redis_url: str) -> AsyncIterator[Machine]:
    """Builds pacers sharing one deployment's keys, each like one machine; closes them after the test."""
    made: list[RedisPacing] = []

    def make(
        *,
        delay: float = 100.0,
        concurrency: int = 2,
        lease_seconds: float = 60.0,
        clock: Callable[[], float] = lambda: 0.0,
        url: str = redis_url,
    ) -> RedisPacing:
        pacer = RedisPacing(
            url,
            delay=delay,
            crawl_delay_cap=3600.0,
            concurrency=concurrency,
            lease_seconds=lease_seconds,
            prefix=redis_prefix,
            clock=clock,
        )
        made.append(pacer)
        return pacer

    yield make
    for pacer in made:
        await pacer.aclose()


def _state(url: str, prefix: str, site: str = SITE) -> dict[str, float]:
    client = sync_redis(url)
    try:
        return {k.decode(): float(v) for k, v in client.hgetall(site_keys(prefix, site)[0]).items()}
    finally:
        client.close()


def _redis_now(url: str) -> float:
    client = sync_redis(url)
    try:
        seconds, micros = client.time()
        return seconds + micros / 1e6
    finally:
        client.close()


def _due_now(url: str, prefix: str, site: str = SITE) -> None:
    """Make the site's next start due (as if its spacing had passed), without waiting it out."""
    client = sync_redis(url)
    try:
        client.hdel(site_keys(prefix, site)[0], "next")
    finally:
        client.close()


def _last_start_back(url: str, prefix: str, seconds: float, site: str = SITE) -> None:
    """Move the site's last start ``seconds`` into the past, as if they had gone by since."""
    client = sync_redis(url)
    try:
        client.hincrbyfloat(site_keys(prefix, site)[0], "last", -seconds)
    finally:
        client.close()


async def _sent(pacer: RedisPacing, turn: Turn, site: str = SITE) -> None:
    assert turn.lease is not None
    await pacer.sent(site, turn.lease)


async def test_starts_are_spaced_on_the_redis_clock_across_machines(
    machine: Machine, redis_prefix: str, redis_url: str
) -> None:
    """OMN-SITE: a start granted to one machine books the site's next start one spacing later on the
    Redis server's clock, so another machine, whose own clock reads something else entirely, is told
    to wait that spacing; no burst."""
    a, b = machine(clock=lambda: 1_000_000.0), machine(clock=lambda: 3.0)
    first = await a.acquire(SITE)
    assert first.granted and first.wait == 0.0
    booked = _state(redis_url, redis_prefix)["next"] - _redis_now(redis_url)
    assert 99.0 < booked <= 100.0 + 0.05 + 0.005
    second = await b.acquire(SITE)
    assert not second.granted
    assert 99.0 < second.wait <= booked
    assert not (await a.acquire(SITE)).granted
    assert (await b.acquire("other.test")).granted  # other sites don't wait


async def test_at_most_the_concurrency_limit_is_in_flight(machine: Machine, redis_prefix: str, redis_url: str) -> None:
    """OMN-SITE: at most 2 requests to a site are in flight across machines; a released place is
    taken again, and a full site is asked again after a short poll, not a spacing."""
    a, b = machine(concurrency=2), machine(concurrency=2)
    held = [await a.acquire(SITE)]
    await _sent(a, held[0])
    _due_now(redis_url, redis_prefix)
    held.append(await b.acquire(SITE))
    assert all(turn.granted for turn in held)
    await _sent(b, held[1])
    _due_now(redis_url, redis_prefix)
    full = await a.acquire(SITE)
    assert not full.granted and 0.0 < full.wait <= a.poll_seconds
    assert held[1].lease is not None
    await b.release(SITE, held[1].lease)
    assert (await a.acquire(SITE)).granted


async def test_a_dead_machines_lease_expires(machine: Machine, redis_prefix: str, redis_url: str) -> None:
    """OMN-SITE: a machine that dies holding a place does not hold it forever: its lease expires and
    another machine may start; a live lease keeps the place."""
    live = machine(concurrency=1, lease_seconds=60.0)
    assert (await live.acquire(SITE)).granted
    _due_now(redis_url, redis_prefix)
    assert not (await machine(concurrency=1).acquire(SITE)).granted
    dead_site = "dead.test"
    dead = machine(concurrency=1, lease_seconds=0.0)  # its lease is over as soon as it is granted
    assert (await dead.acquire(dead_site)).granted
    _due_now(redis_url, redis_prefix, dead_site)
    assert (await machine(concurrency=1).acquire(dead_site)).granted


async def test_a_pause_by_one_machine_holds_all(machine: Machine) -> None:
    """OMN-PAUSE: a pause set by one machine (on its own clock) holds the whole site on every
    machine, translated to each one's clock; a shorter pause later does not shorten it."""
    a, b = machine(delay=5.0, clock=lambda: 1_000.0), machine(delay=5.0, clock=lambda: 7.0)
    a.pause(SITE, 1_030.0)
    a.pause(SITE, 1_010.0)
    turn = await b.acquire(SITE)
    assert not turn.granted and 29.0 < turn.wait <= 30.0
    assert 36.0 < b.paused_until(SITE) <= 37.0
    assert a.paused_until(SITE) == pytest.approx(1_030.0, abs=0.5)


async def test_a_crawl_delay_learned_by_one_machine_applies_to_all(machine: Machine) -> None:
    """ALL-CD, OMN-SITE: the spacing one machine learns from robots.txt paces the other machines'
    grants, and they learn it on their next turn."""
    a, b = machine(delay=5.0), machine(delay=5.0)
    assert a.set_crawl_delay(SITE, 40.0) == 40.0
    assert (await b.acquire(SITE)).granted
    assert b.spacing(SITE) == 40.0
    turn = await a.acquire(SITE)
    assert not turn.granted and 39.0 < turn.wait <= 40.5


async def test_an_answer_moves_the_next_start_past_its_arrival(
    machine: Machine, redis_prefix: str, redis_url: str
) -> None:
    """OMN-SITE: the site owner's log shows arrivals: a request that reached the server late (a slow
    connection) pushes the next start to a spacing after its arrival, never earlier."""
    a = machine(delay=100.0)
    turn = await a.acquire(SITE)
    assert turn.lease is not None
    booked = _state(redis_url, redis_prefix)["next"]
    await a.release(SITE, turn.lease, arrived_ago=0.0)
    assert _state(redis_url, redis_prefix)["next"] > booked
    await a.release(SITE, "gone", arrived_ago=1_000.0)  # long ago: the later booking stands
    assert _state(redis_url, redis_prefix)["next"] > booked


async def test_unreachable_redis_means_not_yet(machine: Machine) -> None:
    """OMN-SITE (fail toward politeness): when Redis does not answer, no request starts; the site is
    asked again after at least its spacing."""
    pacer = machine(delay=5.0, url="redis://127.0.0.1:1/0")
    assert await pacer.acquire(SITE) == Turn(None, 5.0)
    pacer.pause(SITE, 30.0)  # kept locally
    assert pacer.paused_until(SITE) == 30.0
    assert pacer.failures == 2  # the turn and the pause, counted for the crawl's stats


async def test_a_crawl_delay_learned_after_a_start_pushes_the_next_start_for_every_machine(
    machine: Machine, redis_prefix: str, redis_url: str
) -> None:
    """ALL-CD, OMN-SITE: robots.txt is fetched at the profile's spacing (1 s here), and its
    Crawl-delay: 20 is learned once it has answered; another machine, which has no local record of
    that fetch, must not be granted the site's next start 1 s after it but 20 s after it."""
    a, b = machine(delay=1.0), machine(delay=1.0)
    turn = await a.acquire(SITE)  # robots.txt
    assert turn.lease is not None
    await a.release(SITE, turn.lease, arrived_ago=0.0)
    a.set_crawl_delay(SITE, 20.0)
    _ = redis_prefix
    later = await b.acquire(SITE)
    assert not later.granted and later.wait > 18.0


async def test_a_feeds_first_add_skips_the_crawl_delay_on_every_machine_and_its_refresh_waits_it(
    machine: Machine, redis_prefix: str, redis_url: str
) -> None:
    """SER-ROBOTS-FEEDS (shared pacer): after the site's robots.txt start and its Crawl-delay of
    600 s learned, a start that skips the Crawl-delay (a feed's first add) is granted at once on another
    machine (the crawl's delay, 0 s here, has passed), while an ordinary start is told to wait the
    Crawl-delay; after the first add the next start (a refresh) waits the full Crawl-delay from it."""
    a, b = machine(delay=0.0, concurrency=1), machine(delay=0.0, concurrency=1)
    robots = await a.acquire(SITE)
    assert robots.lease is not None
    await a.sent(SITE, robots.lease)
    a.set_crawl_delay(SITE, 600.0)
    await a.release(SITE, robots.lease)
    _last_start_back(redis_url, redis_prefix, 1.0)  # the crawl's delay and its 5 ms margin have passed since robots.txt
    refused = await b.acquire(SITE)
    assert not refused.granted and 590.0 < refused.wait <= 600.0 * 1.01 + 0.005
    first_add = await b.acquire(SITE, skip_crawl_delay=True)
    assert first_add.granted
    assert first_add.lease is not None
    await b.release(SITE, first_add.lease)
    refresh = await a.acquire(SITE)
    assert not refresh.granted and 590.0 < refresh.wait <= 600.0 * 1.01 + 0.005
    assert (
        _state(redis_url, redis_prefix)["next"] - _redis_now(redis_url) > 590.0
    )  # booked from the first add, full Crawl-delay


async def test_a_start_granted_but_not_yet_sent_holds_every_other_start(
    machine: Machine, redis_prefix: str, redis_url: str
) -> None:
    """OMN-SITE: a machine starved of CPU between its grant and its send would put its request on the
    wire late, closer than the spacing to the next machine's punctual one. So until it says it has sent,
    no other start is granted, even once the spacing has passed and a place is free (asked again after
    a short poll); its send books the next start a spacing after the send, not after the grant."""
    a, b = machine(delay=100.0, concurrency=2), machine(delay=100.0, concurrency=2)
    turn = await a.acquire(SITE)
    assert turn.lease is not None
    granted_next = _state(redis_url, redis_prefix)["next"]
    _due_now(redis_url, redis_prefix)  # as if the spacing had passed with the request still unsent
    held = await b.acquire(SITE)
    assert not held.granted and 0.0 < held.wait <= b.poll_seconds
    assert (await b.acquire("other.test")).granted  # other sites don't wait
    before = _redis_now(redis_url)
    await a.sent(SITE, turn.lease)
    state = _state(redis_url, redis_prefix)
    assert state["next"] >= before + 100.0 > granted_next - 100.0
    assert state["last"] >= before
    after = await b.acquire(SITE)
    asked = _redis_now(redis_url)  # a busy machine may pass seconds between the send and this ask
    assert not after.granted and state["next"] - asked <= after.wait <= 100.0 + 0.05 + 0.005


async def test_a_grant_given_back_unsent_or_left_by_a_dead_machine_holds_nothing(
    machine: Machine, redis_prefix: str, redis_url: str
) -> None:
    """OMN-SITE: a grant whose request was never sent (dropped before the wire) is given back and holds
    no other start; one whose machine died before sending expires with its lease."""
    a = machine(concurrency=2)
    turn = await a.acquire(SITE)
    assert turn.lease is not None
    await a.release(SITE, turn.lease)
    _due_now(redis_url, redis_prefix)
    assert (await machine(concurrency=2).acquire(SITE)).granted
    dead_site = "dead.test"
    assert (await machine(concurrency=2, lease_seconds=0.0).acquire(dead_site)).granted
    _due_now(redis_url, redis_prefix, dead_site)
    assert (await machine(concurrency=2).acquire(dead_site)).granted


async def test_a_send_said_after_its_answer_still_books_the_next_start_from_now(
    machine: Machine, redis_prefix: str, redis_url: str
) -> None:
    """OMN-SITE (fail toward politeness): a send told after its lease was given back (a request that
    failed at once) still moves the site's next start a spacing past it, never earlier."""
    a = machine(delay=100.0)
    turn = await a.acquire(SITE)
    assert turn.lease is not None
    await a.release(SITE, turn.lease)
    _due_now(redis_url, redis_prefix)
    before = _redis_now(redis_url)
    await a.sent(SITE, turn.lease)
    assert _state(redis_url, redis_prefix)["next"] >= before + 100.0


async def test_a_burst_of_turns_past_the_connection_pools_size_is_granted_not_refused(
    machine: Machine, caplog: pytest.LogCaptureFixture
) -> None:
    """OMN-SITE, OMN-RESPECT: a worker's downloader asks for many sites' turns at once (a grant, a send, a
    release for each of its downloads, 400 sites in the scale-out benchmark). redis-py's asyncio pool refused the
    101st connection in use ("Too many connections"), which the pacer reads as Redis down: each such site
    was held a second, and one whose send failed stayed held until its lease expired. A burst waits for a
    free connection instead."""
    pacer = machine(delay=1.0)
    sites = [f"site-{n}.test" for n in range(300)]
    turns = await asyncio.gather(*(pacer.acquire(site) for site in sites))
    assert all(turn.granted for turn in turns)
    await asyncio.gather(*(pacer.sent(site, str(turn.lease)) for site, turn in zip(sites, turns, strict=True)))
    await asyncio.gather(*(pacer.release(site, str(turn.lease)) for site, turn in zip(sites, turns, strict=True)))
    assert "failed for" not in caplog.text  # no send or release of the burst met a refusal either
