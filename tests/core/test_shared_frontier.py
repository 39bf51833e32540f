"""The shared frontier's Redis scripts, against the real test Redis."""

from __future__ import annotations

import pickle
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from synapsecrawl.crawl.kinds import KIND, RequestKind, kind_of
from synapsecrawl.pacing.keys import partition_of
from synapsecrawl.pacing.redisclient import sync_redis
from synapsecrawl.pacing.shared import RedisPacing
from synapsecrawl.shared.entries import BadEntry, Entry
from synapsecrawl.shared.frontier import SharedFrontier
from tests.helpers import PickleExploit


@pytest.fixture
def frontier(redis_prefix: str, redis_url: str) -> Iterator[SharedFrontier]:
    f = SharedFrontier(
        redis_url,
        "core",
        prefix=f"{redis_prefix}:frontier",
        pacer_prefix=f"{redis_prefix}:pacing",
        lease_seconds=30.0,
        delay=0.5,
    )
    yield f
    f.close()


def test_a_pickled_entry_written_by_anyone_is_refused_not_unpickled(frontier: SharedFrontier, tmp_path: Path) -> None:
    """Serialization JSON, never pickle: a pickle whose loading would run code (os.mkdir), put in
    a site's stream as anyone who can write to Redis could, is leased like any entry but read as JSON
    only: BadEntry, and the code never ran (no directory)."""
    marker = tmp_path / "pwned"
    payload = pickle.dumps(PickleExploit(marker))
    assert not marker.exists()
    frontier.add_raw("evil.test", payload)
    lease, _, _ = frontier.lease("w1")
    assert lease is not None and lease.data == payload
    with pytest.raises(BadEntry):
        Entry.from_json(lease.data)
    for bad in (
        b'{"v":1,"u":"file:///etc/passwd","s":"x"}',
        b'{"v":1,"u":"http://a/","s":"x","cb":"os.system"}',
        b'{"v":1,"u":"http://a/","s":"x","p":"x"}',
        b"[1,2]",
        b"\x80\x04K\x01.",
    ):
        with pytest.raises(BadEntry):
            Entry.from_json(bad)
    assert not marker.exists()


def test_an_entry_round_trips_as_json() -> None:
    """What the frontier holds is the request's own fields, JSON, read back unchanged, its kind
    included."""
    entry = Entry(
        url="https://a.test/x?q=1",
        source="s1",
        callback="parse_feed",
        errback="feed_failed",
        headers=(("Accept", "application/rss+xml"),),
        meta={"depth": 2, KIND: RequestKind.FEED, "redirect_urls": ["u"]},
        priority=-2,
        dont_filter=True,
    )
    read = Entry.from_json(entry.to_json().encode())
    assert read == entry and kind_of(read.meta) is RequestKind.FEED  # a str enum travels as its value


def test_the_duplicate_filter_keeps_one_request_per_canonical_url(frontier: SharedFrontier) -> None:
    """Duplicate filter in Redis: the same page added twice, or with a #fragment or another host
    case, is queued once across all adders; a dont_filter copy goes in."""
    first = frontier.add([("a.test", Entry("http://a.test/p", "s"))])
    again = frontier.add([("a.test", Entry("http://A.test/p#top", "s")), ("a.test", Entry("http://a.test/p", "s"))])
    forced = frontier.add([("a.test", Entry("http://a.test/p", "s", dont_filter=True))])
    assert (first, again, forced) == (1, 0, 1)


def test_a_site_is_leased_in_pacing_order_and_not_while_its_downloads_are_in_flight(
    frontier: SharedFrontier, redis_prefix: str, redis_url: str
) -> None:
    """Requests handed out in pacing order, never waiting in one worker's memory: once a site's
    Crawl-delay is known, its second request is not leased to any worker within a spacing of its first,
    nor while the shared pacer counts the site's one allowed download in flight (concurrency 1), nor
    before the pacer's next start once that download is given back; another site's request is leased
    meanwhile."""
    import asyncio

    frontier.add([("a.test", Entry(f"http://a.test/{n}", "s")) for n in range(2)])
    frontier.add([("b.test", Entry("http://b.test/0", "s"))])
    one, _, _ = frontier.lease("w1")
    two, _, _ = frontier.lease("w2")
    assert one is not None and two is not None  # a.test's and b.test's, in their partitions' order
    first, other = sorted((one, two), key=lambda lease: lease.site)
    assert (first.site, other.site) == ("a.test", "b.test")
    assert frontier.lease("w2")[0] is None  # within a spacing (0.5 s) of a.test's lease
    pacer = RedisPacing(
        redis_url, delay=2.0, crawl_delay_cap=30.0, concurrency=1, lease_seconds=30.0, prefix=f"{redis_prefix}:pacing"
    )

    async def download() -> None:
        pacer.set_crawl_delay("a.test", None)  # its robots.txt read, as before any download
        turn = await pacer.acquire("a.test")
        assert turn.lease is not None
        await asyncio.sleep(0.6)
        assert frontier.lease("w2")[0] is None  # a spacing on, but a.test's download is in flight
        await pacer.release("a.test", turn.lease)
        await pacer.aclose()

    asyncio.run(download())
    assert frontier.lease("w2")[0] is None  # given back, but the pacer's next start (2 s) has not come
    time.sleep(2.0)
    second, _, _ = frontier.lease("w2")
    assert second is not None and second.site == "a.test"


def test_a_crawl_without_values_hands_its_sites_out_in_pacing_order(frontier: SharedFrontier, redis_url: str) -> None:
    """A shared crawl of named pages (no web crawl's values) hands its due sites out as before the web
    crawl's workbench: the one due longest first, whatever their names, and no value or workbench key is
    written. (The three sites are of one registrable domain, so of one partition: across partitions a worker
    asks them in turn.)"""
    sites = ("c.x.test", "a.x.test", "b.x.test")
    for site in sites:
        frontier.add([(site, Entry(f"http://{site}/{n}", "s")) for n in range(2)])
    leased = []
    while (lease := frontier.lease("w1")[0]) is not None:
        leased.append(lease.site)
        frontier.ack("w1", [lease])
    assert leased == list(sites) * 2  # an acknowledged lease makes its site due again
    root = frontier._root(partition_of(sites[0]))
    client = sync_redis(redis_url)
    try:
        assert not client.exists(f"{root}:bench") and not client.exists(f"{root}:value")
    finally:
        client.close()


def test_a_lease_not_renewed_goes_back_to_the_frontier_and_a_renewed_one_does_not(
    redis_prefix: str, redis_url: str
) -> None:
    """Leases: a request leased by a worker that stops renewing (killed) is put back once its
    lease expires and leased again by another worker; a lease its worker's heartbeat renews stays."""
    f = SharedFrontier(
        redis_url,
        "core",
        prefix=f"{redis_prefix}:frontier",
        pacer_prefix=f"{redis_prefix}:pacing",
        lease_seconds=1.0,
        delay=0.0,
    )
    f.add([("a.test", Entry("http://a.test/dead", "s")), ("b.test", Entry("http://b.test/alive", "s"))])
    dead, _, _ = f.lease("dead-worker")
    alive, _, _ = f.lease("live-worker")
    assert dead is not None and alive is not None
    for _ in range(4):
        time.sleep(0.4)
        assert f.heartbeat("live-worker", [alive]) == 1
    again, _, reclaimed = f.lease("other")
    assert reclaimed == 1
    assert again is not None and Entry.from_json(again.data).url == Entry.from_json(dead.data).url
    assert f.lease("other")[0] is None  # the live worker's lease was not taken
    status = f.status()
    assert status.workers["other"][0] == 1 and status.workers["live-worker"][0] == 1
    f.ack("live-worker", [alive])
    f.ack("other", [again])
    assert f.drained()
    f.close()


def test_a_site_whose_crawl_delay_is_unknown_has_one_lease_out_until_it_ends_or_expires(
    redis_prefix: str, redis_url: str
) -> None:
    """Requests handed out in pacing order, never waiting in one worker's memory: until a site's
    robots.txt is read (the shared pacer knows no Crawl-delay for it), at most one of its requests is
    leased, on any worker, though its spacing has passed, while other sites' are leased meanwhile; its
    next is leasable once that lease is acknowledged, or once a lease never acknowledged nor renewed (a
    killed worker) expires, so no site is stuck. Once its Crawl-delay is known, the pacer decides."""
    f = SharedFrontier(
        redis_url,
        "core",
        prefix=f"{redis_prefix}:frontier",
        pacer_prefix=f"{redis_prefix}:pacing",
        lease_seconds=1.0,
        delay=0.0,
    )
    f.add([("a.test", Entry(f"http://a.test/{n}", "s")) for n in range(4)])
    f.add([("b.test", Entry("http://b.test/0", "s"))])
    one, _, _ = f.lease("w1")
    two, _, _ = f.lease("w2")
    assert one is not None and two is not None  # a.test's and b.test's, in their partitions' order
    first, other = sorted((one, two), key=lambda lease: lease.site)
    assert (first.site, other.site) == ("a.test", "b.test")
    assert f.lease("w2")[0] is None  # a.test's spacing (0 s) has passed, but one lease of it is out
    assert f.lease("w2", acks=[other])[0] is None  # b.test done; a.test still has its one lease out
    f.ack("w1", [first])
    second, _, _ = f.lease("w2")
    assert second is not None and Entry.from_json(second.data).url == "http://a.test/1"
    assert f.lease("w3")[0] is None
    time.sleep(1.2)  # w2 killed: its lease neither acknowledged nor renewed, past its expiry
    third, _, reclaimed = f.lease("w3")
    assert reclaimed == 1
    assert third is not None and Entry.from_json(third.data).url == "http://a.test/2"
    pacer = RedisPacing(
        redis_url, delay=0.0, crawl_delay_cap=30.0, concurrency=1, lease_seconds=30.0, prefix=f"{redis_prefix}:pacing"
    )
    pacer.set_crawl_delay("a.test", None)  # robots.txt read: the pacer's spacing and downloads in flight decide
    fourth, _, _ = f.lease("w4")
    assert fourth is not None and Entry.from_json(fourth.data).url == "http://a.test/3"
    assert f.status().sites["a.test"] == (1, 2, 1)  # a.test/1 pending again, /2 and /3 out, /0 done
    f.close()


def test_a_lease_acknowledges_the_last_ones_and_says_when_the_next_site_is_due(frontier: SharedFrontier) -> None:
    """Round trips: one lease call acknowledges the worker's finished leases (counted done, not
    pending, not in flight) and says how long until the next site falls due, so the worker sleeps until
    then instead of asking again."""
    assert frontier.lease("w1") == (None, -1.0, 0)  # every partition asked once: none has anything pending
    frontier.add([("a.test", Entry("http://a.test/1", "s")), ("a.test", Entry("http://a.test/2", "s"))])
    first, hint, _ = frontier.lease("w1")
    assert first is not None
    assert hint == 0.5  # a.test's second page: a spacing (0.5 s) after the first's lease, same Redis time
    time.sleep(hint + 0.05)
    second, hint, _ = frontier.lease("w1", acks=[first])
    assert second is not None and Entry.from_json(second.data).url == "http://a.test/2"
    assert hint == -1  # nothing else pending
    assert frontier.status().sites["a.test"] == (0, 1, 1)
    assert frontier.status().workers["w1"][:2] == (1, 1)
    assert frontier.lease("w1", acks=[second]) == (None, -1.0, 0)
    assert frontier.drained()


def test_redis_down_is_frontier_unreachable() -> None:
    """Redis unreachable: every frontier call that cannot reach Redis raises one exception the
    scheduler turns into one line and a wait."""
    from synapsecrawl.shared.entries import FrontierUnreachable

    f = SharedFrontier("redis://127.0.0.1:1/0", "core")
    with pytest.raises(FrontierUnreachable):
        f.lease("w")
    with pytest.raises(FrontierUnreachable):
        f.add([("a.test", Entry("http://a.test/", "s"))])
    f.close()


_unused = redis


def test_a_lease_holds_the_pacers_start_until_it_ends_with_its_arrival_and_slow_spacing(
    redis_prefix: str, redis_url: str
) -> None:
    """One round trip a page (OMN-SITE, SYN-RATE, SNA-SLOW): with ``grant``, a lease of a site whose
    Crawl-delay is known holds the shared pacer's start as well: the pacer grants no other start at the site
    while it is out (its downloader need not ask), the site's next page is not leased though its spacing has
    passed, and a lease renewed by its worker's heartbeat keeps the start past the lease's first expiry.
    Its end (the acknowledgement in the next lease call) frees the place and books the next start a
    spacing after the request reached the server, the slow spacing its answer measured included. A site
    whose Crawl-delay is not known yet has its one lease granted too, saying so (no spacing): its start is
    its robots.txt fetch's (the lease is that fetch's lock), the pacer grants no other start there, and the
    Crawl-delay that robots.txt gave is told with the lease's end, in the same step."""
    import asyncio

    f = SharedFrontier(
        redis_url,
        "core",
        prefix=f"{redis_prefix}:frontier",
        pacer_prefix=f"{redis_prefix}:pacing",
        lease_seconds=1.0,
        delay=0.2,
        grant=True,
    )
    pacer = RedisPacing(
        redis_url, delay=0.2, crawl_delay_cap=30.0, concurrency=1, lease_seconds=30.0, prefix=f"{redis_prefix}:pacing"
    )

    loop = asyncio.new_event_loop()  # one loop: the pacer's asyncio client is bound to it

    def turn(site: str) -> tuple[bool, float]:
        got = loop.run_until_complete(pacer.acquire(site))
        if got.lease is not None:
            loop.run_until_complete(pacer.release(site, got.lease))
        return got.granted, got.wait

    f.add([("a.test", Entry(f"http://a.test/{n}", "s")) for n in range(2)])
    f.add([("new.test", Entry("http://new.test/0", "s"))])
    pacer.set_crawl_delay("a.test", None)  # its robots.txt read
    one, _, _ = f.lease("w1")
    two, _, _ = f.lease("w1")
    assert one is not None and two is not None  # a.test's and new.test's, in their partitions' order
    first, fresh = sorted((one, two), key=lambda lease: lease.site)
    assert first is not None and first.site == "a.test" and first.granted
    assert fresh is not None and fresh.site == "new.test" and fresh.granted and fresh.spacing is None
    assert first.spacing is not None
    for _ in range(3):  # past the lease's 1 s, renewed by the heartbeat
        time.sleep(0.4)
        assert f.heartbeat("w1", [first, fresh]) == 2
        assert turn("a.test")[0] is False  # the place is the lease's
        assert turn("new.test")[0] is False  # its robots.txt's start, the lease's too
        assert f.lease("w2")[0] is None  # a.test's spacing passed, its one place held
    second, _, _ = f.lease("w2", acks=[], ends={})
    assert second is None
    # new.test done, its robots.txt just answered under the lease's start: its Crawl-delay (2 s) told with the end
    assert f.ack("w1", [fresh], {fresh.member: (0.0, 0.0, 2.0)}) == 1
    granted, wait = turn("new.test")
    assert not granted and 1.8 < wait <= 2.5 and pacer.spacing("new.test") == 2.0
    assert f.ack("w1", [first], {first.member: (0.0, 1.5, -1.0)}) == 1  # reached the server just now; 1.5 s slow
    granted, wait = turn("a.test")
    assert not granted and 1.3 < wait <= 1.6  # the slow spacing from its arrival
    assert f.lease("w2")[0] is None
    time.sleep(wait + 0.1)
    second, _, _ = f.lease("w2")
    assert second is not None and second.granted and Entry.from_json(second.data).url == "http://a.test/1"
    assert f.give_back("w2", [second]) == 1  # a worker stopping: the start is freed with the lease
    assert f.status().sites["a.test"][:2] == (1, 0)  # its entry pending again, none in flight: its place free
    loop.run_until_complete(pacer.aclose())
    loop.close()
    f.close()


def test_pages_counted_in_a_block_never_pass_the_limit_and_those_not_fetched_are_given_back(
    frontier: SharedFrontier,
) -> None:
    """SYN-LIMITS across workers, one round trip for many pages: a block of pages counted against a
    source's limit in one call is cut at the limit (what is over is not counted), a call past it counts
    none, one page at a time still works, and pages a stopping worker counted but never fetched are given
    back for the others."""
    assert frontier.take_pages("s1", 20, 16) == (16, 16)
    assert frontier.take_pages("s1", 20, 16) == (4, 20)  # cut at the limit
    assert frontier.take_pages("s1", 20, 16) == (0, 20)
    assert not frontier.take_page("s1", 20)
    frontier.untake_pages("s1", 3)  # a worker stopping with 3 counted, not fetched
    assert frontier.pages_spent("s1") == 17
    assert frontier.take_page("s1", 20) and frontier.pages_spent("s1") == 18
    assert frontier.take_pages("other", 5, 16) == (5, 5)  # each source its own limit


def test_one_lease_acknowledges_leases_of_every_partition_and_the_heartbeat_renews_them_all(
    frontier: SharedFrontier,
) -> None:
    """Round trips with partitions: a worker's finished leases of sites in different partitions are all
    acknowledged by its next lease (in one script on one Redis, in one pipeline on a Cluster), and its
    heartbeat renews leases of every partition it holds; nothing is left in flight or pending."""
    sites = [f"part-{i}.test" for i in range(6)]
    assert len({partition_of(site) for site in sites}) >= 3
    frontier.add([(site, Entry(f"http://{site}/", "s")) for site in sites])
    held = []
    while (lease := frontier.lease("w1")[0]) is not None:
        held.append(lease)
    assert sorted(lease.site for lease in held) == sorted(sites)
    assert frontier.heartbeat("w1", held) == len(sites)
    assert frontier.lease("w1", acks=held)[0] is None
    status = frontier.status()
    assert all(status.sites[site] == (0, 0, 1) for site in sites)
    assert status.workers["w1"][:2] == (0, len(sites))
    assert frontier.drained()
