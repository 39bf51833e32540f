"""RobotsMiddleware: what each profile makes of robots.txt answers, how long a copy holds, and the site.

robots.txt goes out through ``engine.download_async``, the middleware's only seam: ``SideFetches``
answers it from a table (a status and a body, or the exception the download raised) and notes each
fetch. Time is the middleware's ``clock`` (unix seconds), moved by the test.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.misc import build_from_crawler
from twisted.internet.testing import MemoryReactor

from middlewares.engine.downloader import PacedDownloader
from middlewares.engine.resolver import GuardedResolver
from middlewares.engine.runtime import Runtime
from middlewares.robots import RobotsMiddleware
from synapsecrawl.crawl.kinds import KIND, RequestKind, kind_of
from synapsecrawl.crawl.meta import BEFORE_ROBOTS, LEASE, PACING_GRANTED, ROBOTS_TOOK_START, TURN
from synapsecrawl.crawl.netguard import parse_host_resolve
from synapsecrawl.kb.records import PageRecord, utcnow
from synapsecrawl.pacing.keys import site_keys
from synapsecrawl.shared.entries import Entry
from synapsecrawl.shared.frontier import SharedFrontier
from tests.adapters.crawlers import SideFetches, crawler_for, opened_store
from tests.helpers import REDIS_URL

DAY = 86400.0
ALLOW_ALL = (200, b"User-agent: *\nAllow: /\n")


class Clock:
    """Unix seconds that move only when the test says."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class Robots:
    def __init__(
        self,
        tmp_path: Path,
        answers: dict[str, tuple[int, bytes] | BaseException],
        profile: str = "synapsebot",
        **settings: object,
    ) -> None:
        self.crawler = crawler_for(tmp_path, BOT_PROFILE=profile, **settings)
        self.site = SideFetches(answers).install(self.crawler)
        self.mw = build_from_crawler(RobotsMiddleware, self.crawler)
        self.clock = Clock()
        self.mw.clock = self.clock
        self.runtime = Runtime.of(self.crawler)

    async def allows(self, url: str, **meta: object) -> bool:
        request = Request(url, meta=meta)
        try:
            await self.mw.process_request(request)
        except IgnoreRequest:
            return False
        return True

    def fetched(self) -> list[str]:
        return self.site.urls()

    def stat(self, key: str) -> object:
        return self.crawler.stats.get_value(key)  # type: ignore[union-attr]


@pytest.fixture
def signing(signing_key: Path) -> dict[str, str]:
    return {"SIGNING_KEY": str(signing_key)}


async def test_the_fetch_is_a_robots_request_with_the_profiles_agent(tmp_path: Path) -> None:
    """YOT-UA, ALL-RFC9309: robots.txt goes with the profile's robots.txt User-Agent, asks for every
    status (its own judge), follows up to 5 redirects, reads one byte past 500 KiB, ahead of pages."""
    robots = Robots(tmp_path, {"https://docs.test/robots.txt": ALLOW_ALL}, "yottabot")
    assert await robots.allows("https://docs.test/a")
    [fetch] = robots.site.asked
    assert b"robots.txt;" in fetch.headers[b"User-Agent"]
    assert (
        kind_of(fetch.meta) is RequestKind.ROBOTS and fetch.meta["handle_httpstatus_all"] and fetch.meta["dont_retry"]
    )
    assert fetch.meta["redirect_ttl"] == 5 and fetch.meta["size_limit_bytes"] == 524288 + 1
    assert fetch.priority > 0


async def test_parsed_rules_decide_and_a_disallowed_page_is_marked(tmp_path: Path) -> None:
    """ALL-RFC9309: the group naming the bot decides; a disallowed request is refused (counted, skipped
    as "robots", marked so a re-read removes its copy: robots_outcome "parsed")."""
    body = b"User-agent: *\nDisallow: /\n\nUser-agent: SynapseBot\nDisallow: /private/\n"
    robots = Robots(tmp_path, {"http://a.test/robots.txt": (200, body)})
    assert await robots.allows("http://a.test/public")
    request = Request("http://a.test/private/x")
    with pytest.raises(IgnoreRequest, match=r"robots\.txt \(disallowed\) forbids"):
        await robots.mw.process_request(request)
    assert request.meta["robots_disallowed"] and request.meta["robots_outcome"] == "parsed"
    assert robots.stat("robots/disallowed") == 1 and robots.stat("robots/parsed") == 1
    assert robots.runtime.summary.skipped["a.test"]["robots"] == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 429])
async def test_synapsebot_reads_any_4xx_as_allow_all(tmp_path: Path, status: int) -> None:
    """SYN-ROBOTS-4XX: robots.txt answering any 4xx allows everything."""
    robots = Robots(tmp_path, {"http://a.test/robots.txt": (status, b"")})
    assert await robots.allows("http://a.test/page")
    assert robots.stat("robots/unavailable") == 1


@pytest.mark.parametrize(
    "answer", [(500, b""), (503, b""), ConnectionRefusedError("refused"), TimeoutError("timed out")]
)
async def test_synapsebot_stops_a_site_whose_robots_txt_fails(
    tmp_path: Path, answer: tuple[int, bytes] | BaseException
) -> None:
    """SYN-ROBOTS-5XX: robots.txt answering 5xx, or not answering, stops the site: nothing fetched;
    the refusal says why, and a re-read keeps stored pages (robots_outcome is not "parsed")."""
    robots = Robots(tmp_path, {"http://a.test/robots.txt": answer})
    request = Request("http://a.test/page")
    with pytest.raises(IgnoreRequest, match=r"robots\.txt unreachable"):
        await robots.mw.process_request(request)
    assert request.meta["robots_outcome"] == "unreachable"


async def test_serenereader_takes_a_server_error_as_permission(tmp_path: Path, signing: dict[str, str]) -> None:
    """SER-ROBOTS-5XX: robots.txt unavailable through a server error counts as permission."""
    robots = Robots(tmp_path, {"http://blog.test/robots.txt": (503, b"")}, "serenereader", **signing)
    assert await robots.allows("http://blog.test/post")


@pytest.mark.parametrize(("status", "allowed"), [(404, True), (410, True), (401, False), (403, False), (500, False)])
async def test_yottabot_crawls_only_after_a_404_or_410(tmp_path: Path, status: int, allowed: bool) -> None:
    """YOT-ROBOTS: 404/410 mean crawl everything; any other error means don't crawl the site."""
    robots = Robots(tmp_path, {"https://docs.test/robots.txt": (status, b"")}, "yottabot")
    assert await robots.allows("https://docs.test/page") is allowed


async def test_synapsebot_reads_robots_txt_once_per_crawl(tmp_path: Path) -> None:
    """SYN-ROBOTS-ONCE: one fetch per site per crawl, however long the crawl runs and however many
    requests come, concurrent ones included; the next crawl reads it again."""
    answers: dict[str, tuple[int, bytes] | BaseException] = {"http://a.test/robots.txt": ALLOW_ALL}
    robots = Robots(tmp_path, answers)
    assert all(await asyncio.gather(*(robots.allows(f"http://a.test/{n}") for n in range(3))))
    robots.clock.now += 3 * DAY
    assert await robots.allows("http://a.test/later")
    assert robots.fetched() == ["http://a.test/robots.txt"]
    next_crawl = Robots(tmp_path, answers)
    assert await next_crawl.allows("http://a.test/again")
    assert next_crawl.fetched() == ["http://a.test/robots.txt"]


async def test_a_copy_holds_a_day_under_omniscientebot(tmp_path: Path, signing: dict[str, str]) -> None:
    """OMN-ROBOTS: each fetch is checked against a cached copy at most 24 h old: a later request within
    the day uses the copy, one after it fetches again."""
    robots = Robots(tmp_path, {"http://example.com/robots.txt": ALLOW_ALL}, "omniscientebot", **signing)
    assert await robots.allows("http://example.com/1")
    robots.clock.now += DAY - 60
    assert await robots.allows("http://example.com/2")
    assert len(robots.fetched()) == 1
    robots.clock.now += 120
    assert await robots.allows("http://example.com/3")
    assert len(robots.fetched()) == 2


async def test_a_fresh_stored_copy_serves_the_next_crawl(tmp_path: Path) -> None:
    """SNA-ROBOTS: robots.txt re-read every day: a crawl started within the day of the last read uses
    the stored copy, without a fetch."""
    disallow_x = (200, b"User-agent: *\nDisallow: /x\n")
    answers: dict[str, tuple[int, bytes] | BaseException] = {"http://a.test/robots.txt": disallow_x}
    first = Robots(tmp_path, answers, "snagabot")
    assert await first.allows("http://a.test/page")
    second = Robots(tmp_path, answers, "snagabot")
    assert await second.allows("http://a.test/page") and not await second.allows("http://a.test/x")
    assert second.fetched() == []


async def test_a_failed_robots_txt_is_asked_again_until_it_answers(tmp_path: Path) -> None:
    """SNA-ROBOTS: after a 5xx nothing is fetched from the host "until it can be read": the failure is
    asked again once stale (10 min), not kept for the day; the good answer lets pages through."""
    answers: dict[str, tuple[int, bytes] | BaseException] = {"http://a.test/robots.txt": (503, b"")}
    robots = Robots(tmp_path, answers, "snagabot")
    assert not await robots.allows("http://a.test/page")
    robots.clock.now += 60
    assert not await robots.allows("http://a.test/page")
    assert len(robots.fetched()) == 1
    answers["http://a.test/robots.txt"] = ALLOW_ALL
    robots.clock.now += 600
    assert await robots.allows("http://a.test/page")
    assert len(robots.fetched()) == 2


async def test_omniscientebot_stops_the_whole_site_when_one_hosts_robots_txt_fails(
    tmp_path: Path, signing: dict[str, str]
) -> None:
    """OMN-ROBOTS, OMN-SITE: 5xx or unreachable makes the whole site (registrable domain, all hosts)
    disallowed "until it answers again": a host whose own robots.txt allows everything is refused while
    another's fails, and let through once that one answers."""
    answers: dict[str, tuple[int, bytes] | BaseException] = {
        "http://www.example.com/robots.txt": (503, b""),
        "http://shop.example.com/robots.txt": ALLOW_ALL,
    }
    robots = Robots(tmp_path, answers, "omniscientebot", **signing)
    assert not await robots.allows("http://www.example.com/")
    assert not await robots.allows("http://shop.example.com/item")
    assert await robots.allows("http://other.example.org/")  # another site: its own 404 allows all
    answers["http://www.example.com/robots.txt"] = ALLOW_ALL
    robots.clock.now += 600  # the failure is stale: asked again, and it answers
    assert await robots.allows("http://shop.example.com/item")


async def test_snagabot_stops_a_hosts_other_scheme_when_one_fails(tmp_path: Path) -> None:
    """SNA-ROBOTS: for a profile whose site is a host, the other origin of the site is that host's
    other scheme: http's failed robots.txt holds https too."""
    robots = Robots(
        tmp_path, {"http://a.test/robots.txt": (500, b""), "https://a.test/robots.txt": ALLOW_ALL}, "snagabot"
    )
    assert not await robots.allows("http://a.test/")
    assert not await robots.allows("https://a.test/")
    assert await robots.allows("https://b.test/")  # another host: its own 404 allows all


async def test_the_longest_crawl_delay_among_a_sites_hosts_holds(tmp_path: Path, signing: dict[str, str]) -> None:
    """OMN-CD, OMN-SITE: the site is paced as one; a host without a Crawl-delay does not undo another's."""
    robots = Robots(
        tmp_path,
        {
            "http://www.example.com/robots.txt": (200, b"User-agent: *\nCrawl-delay: 12.5\n"),
            "http://shop.example.com/robots.txt": ALLOW_ALL,
        },
        "omniscientebot",
        **signing,
    )
    assert await robots.allows("http://www.example.com/")
    assert await robots.allows("http://shop.example.com/")
    assert robots.runtime.pacer.spacing("example.com") == pytest.approx(12.5)


async def test_more_than_five_redirects_is_unavailable(tmp_path: Path) -> None:
    """ALL-RFC9309 §2.3.1.2: past 5 redirects robots.txt is "unavailable": SynapseBot allows all (as a
    4xx), YottaBot does not crawl (only 404/410 allow)."""
    gave_up = IgnoreRequest("max redirections reached")
    synapse = Robots(tmp_path / "s", {"http://a.test/robots.txt": gave_up})
    assert await synapse.allows("http://a.test/")
    yotta = Robots(tmp_path / "y", {"https://a.test/robots.txt": gave_up}, "yottabot")
    assert not await yotta.allows("https://a.test/")


async def test_a_refused_address_is_named_not_blamed_on_robots_txt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Address guard: when robots.txt was unreachable because the resolver refused the host, the page
    is refused as an address (stat and summary), with the resolver's reason."""
    robots = Robots(tmp_path, {"http://inside.test/robots.txt": IgnoreRequest("refused")})
    resolver = GuardedResolver(MemoryReactor(), 0, 1.0, host_map=parse_host_resolve(""), allow_private=False)
    resolver.refused["inside.test"] = "inside.test resolves to 10.0.0.1, a private address"
    monkeypatch.setattr(GuardedResolver, "installed", resolver)  # as Scrapy installs the process's resolver
    with pytest.raises(IgnoreRequest, match=r"resolves to 10\.0\.0\.1"):
        await robots.mw.process_request(Request("http://inside.test/"))
    assert robots.stat("netguard/address") == 1 and robots.stat("robots/disallowed") is None
    assert robots.runtime.summary.skipped["inside.test"]["address"] == 1


async def test_serenereader_feeds_heed_only_its_own_group(tmp_path: Path, signing: dict[str, str]) -> None:
    """SER-ROBOTS-FEEDS: a `*` Disallow does not apply to a feed URL (counted as exempt), still applies
    to an article; a SereneReader group disallowing the feed path does."""
    star = Robots(
        tmp_path / "a",
        {"http://blog.test/robots.txt": (200, b"User-agent: *\nDisallow: /\n")},
        "serenereader",
        **signing,
    )
    assert await star.allows("http://blog.test/feed.xml", **{KIND: RequestKind.FEED})
    assert not await star.allows("http://blog.test/article")
    assert star.stat("robots/feed_exempt") == 1
    own = Robots(
        tmp_path / "b",
        {"http://blog.test/robots.txt": (200, b"User-agent: SereneReader\nDisallow: /feed\n")},
        "serenereader",
        **signing,
    )
    assert not await own.allows("http://blog.test/feed.xml", **{KIND: RequestKind.FEED})


async def test_a_read_robots_txt_removes_the_pages_it_now_disallows(tmp_path: Path) -> None:
    """YOT-ROBOTS, SYN-REMOVE: reading a file that disallows stored pages removes them at once; the
    pages it allows stay."""
    robots = Robots(tmp_path, {"https://docs.test/robots.txt": (200, b"User-agent: *\nDisallow: /old/\n")}, "yottabot")
    store = opened_store(robots.runtime)
    for url in ("https://docs.test/old/a", "https://docs.test/new/b"):
        store.put_page(PageRecord("kb1", url, "t", "text", "text/html", 200, utcnow()))
    assert await robots.allows("https://docs.test/new/c")
    assert [url for _, url in store.page_urls()] == ["https://docs.test/new/b"]


async def test_yottabot_removes_an_unreadable_hosts_pages_before_30_days_pass(tmp_path: Path) -> None:
    """YOT-STALE: on a fake clock, a host whose robots.txt stops answering keeps its stored pages while the
    next weekly re-read still comes within 30 days of the last good read, each failed read storing that
    date; at the read after which it would not (23 days on), they are removed; another host's stay."""
    answers: dict[str, tuple[int, bytes] | BaseException] = {"https://docs.test/robots.txt": ALLOW_ALL}
    robots = Robots(tmp_path, answers, "yottabot")
    store = opened_store(robots.runtime)
    for url in ("https://docs.test/a", "https://docs.test/b", "https://other.test/c"):
        store.put_page(PageRecord("kb1", url, "t", "text", "text/html", 200, utcnow()))
    assert await robots.allows("https://docs.test/a")
    read_at = robots.clock.now
    copy = store.get_robots("yottabot", "https://docs.test")
    assert copy is not None and copy.unreadable_since == 0.0
    answers["https://docs.test/robots.txt"] = TimeoutError("no answer")  # its addresses blocked
    robots.clock.now += 2 * DAY
    assert not await robots.allows("https://docs.test/a")
    copy = store.get_robots("yottabot", "https://docs.test")
    assert copy is not None and copy.status == 0 and copy.unreadable_since == read_at
    assert len(store.page_urls()) == 3
    robots.clock.now = read_at + 22 * DAY  # the next re-read, a week on, still comes within 30 days
    assert not await robots.allows("https://docs.test/a")
    assert len(store.page_urls()) == 3
    robots.clock.now = read_at + 23 * DAY
    assert not await robots.allows("https://docs.test/a")
    assert [url for _, url in store.page_urls()] == ["https://other.test/c"]
    assert store.get_robots("yottabot", "https://docs.test").unreadable_since == read_at  # type: ignore[union-attr]


async def test_robots_txt_itself_and_opted_out_requests_are_not_judged(tmp_path: Path) -> None:
    """ALL-RFC9309: the robots.txt request is not judged by itself; dont_obey_robotstxt skips the check."""
    robots = Robots(tmp_path, {"http://a.test/robots.txt": (503, b"")})
    assert await robots.allows("http://a.test/robots.txt", **{KIND: RequestKind.ROBOTS})
    assert await robots.allows("http://a.test/x", dont_obey_robotstxt=True)
    assert robots.fetched() == []


def _shared(robots: Robots, redis_prefix: str) -> SharedFrontier:
    """The worker spider's part: the crawl's frontier in the test Redis, leases holding the pacer's start."""
    frontier = SharedFrontier(
        REDIS_URL,
        "robots",
        prefix=f"{redis_prefix}:frontier",
        pacer_prefix=f"{redis_prefix}:snagabot",
        lease_seconds=30.0,
        grant=True,
    )
    robots.runtime.shared_crawl = frontier
    return frontier


async def test_a_shared_crawls_lease_granted_before_robots_txt_is_its_fetchs_lock_and_start(
    tmp_path: Path, redis_prefix: str
) -> None:
    """SNA-ROBOTS, OMN-SITE: in a shared crawl, a page whose frontier lease was granted before its site's
    robots.txt was read (its site's one lease out) fetches robots.txt at once, though another worker's
    robots.txt lock is held (the lease is the lock: no other lease of the site is out), carrying the lease
    and its grant, so the downloader sends it without asking the pacer; its arrival and the Crawl-delay it
    gave end the lease in Redis. The page goes back to the frontier with its lease, its start spent, to be
    leased again under the Crawl-delay."""
    import redis

    robots = Robots(
        tmp_path,
        {"http://a.test/robots.txt": (200, b"User-agent: *\nCrawl-delay: 3\n")},
        "snagabot",
        PACING_REDIS_URL=REDIS_URL,
        PACING_REDIS_PREFIX=redis_prefix,
    )
    frontier = _shared(robots, redis_prefix)
    downloader = PacedDownloader(robots.crawler)  # where a lease's end waits for its next call to Redis
    await downloader.handlers._close()  # nothing is downloaded here
    robots.site.downloader = downloader  # type: ignore[assignment]
    client = redis.Redis.from_url(REDIS_URL)
    lock = f"{frontier.root}:robots:snagabot:http://a.test"
    client.set(lock, "another worker's", px=60_000)
    page = Request(
        "http://a.test/page", meta={LEASE: ["a.test", "1-0"], PACING_GRANTED: BEFORE_ROBOTS, TURN: True, "depth": 1}
    )
    try:
        back = await robots.mw.process_request(page)
        assert robots.fetched() == ["http://a.test/robots.txt"]
        fetch = robots.site.asked[0]
        assert fetch.meta[LEASE] == ["a.test", "1-0"] and fetch.meta[PACING_GRANTED] is True
        assert isinstance(back, Request) and back.url == page.url and back.dont_filter
        assert back.meta[LEASE] == ["a.test", "1-0"] and back.meta["depth"] == 1
        assert not {PACING_GRANTED, TURN, ROBOTS_TOOK_START} & set(back.meta)
        assert robots.stat("pacing/requeued") == 1
        assert client.get(lock) == b"another worker's"
        assert robots.runtime.pacer.spacing("a.test") == 3.0  # the Crawl-delay it read, here at once
        assert downloader.lease_end("a.test\t1-0")[2] == 3.0  # and in Redis with the lease's end, not before
        assert not client.hexists(site_keys(f"{redis_prefix}:snagabot", "a.test")[0], "spacing")
        again = Request("http://a.test/other", meta={LEASE: ["a.test", "2-0"], PACING_GRANTED: True, TURN: True})
        assert await robots.mw.process_request(again) is None  # its copy known: a granted page goes on
        assert again.meta[PACING_GRANTED] is True and len(robots.fetched()) == 1
    finally:
        client.close()
        frontier.close()
        assert robots.runtime.shared_pacer is not None
        await robots.runtime.shared_pacer.aclose()


async def test_a_grant_made_before_robots_txt_was_read_is_given_back_when_its_copy_is_known(
    tmp_path: Path, redis_prefix: str
) -> None:
    """OMN-SITE: a page leased with its site's start before its Crawl-delay was in Redis, whose robots.txt
    is known all the same (a copy in the KB), gives that start back before it goes on: the start was booked
    without the Crawl-delay, so the page asks the pacer for its own. Nothing is fetched."""
    import redis

    answers: dict[str, tuple[int, bytes] | BaseException] = {"http://a.test/robots.txt": ALLOW_ALL}
    assert await Robots(tmp_path, answers, "snagabot").allows("http://a.test/first")  # its copy in the KB
    robots = Robots(tmp_path, answers, "snagabot", PACING_REDIS_URL=REDIS_URL, PACING_REDIS_PREFIX=redis_prefix)
    frontier = _shared(robots, redis_prefix)
    frontier.add([("a.test", Entry("http://a.test/page", "s"))])
    lease, _, _ = frontier.lease("w1")
    assert lease is not None and lease.granted and lease.spacing is None
    client = redis.Redis.from_url(REDIS_URL)
    places = site_keys(f"{redis_prefix}:snagabot", "a.test")[1]
    page = Request("http://a.test/page", meta={LEASE: [lease.site, lease.id], PACING_GRANTED: BEFORE_ROBOTS})
    try:
        assert client.zcard(places) == 1  # the lease's grant holds the site's one place
        assert await robots.mw.process_request(page) is None
        assert PACING_GRANTED not in page.meta
        assert client.zcard(places) == 0
        assert robots.fetched() == []
    finally:
        client.close()
        frontier.close()
        assert robots.runtime.shared_pacer is not None
        await robots.runtime.shared_pacer.aclose()
