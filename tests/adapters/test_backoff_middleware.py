"""BackoffGateMiddleware, BackoffMiddleware and BackoffRetryMiddleware: pauses, clamps, 403 streaks,
404 memory, retries, holds.

Each answer goes in as the crawl delivers it (the response_downloaded signal, then process_response
through backoff (655) and its retries (650), in the crawl's order) with real Request and Response
objects; what comes out is read where the crawl reads it: the pacer's pause, the store's site state and
URL holds, stats and the summary. Most tests run on the real clocks and check a wait between bounds
taken on each side of the call; those on a fake clock (BackoffState's ``Clock``) check it exactly.
"""

from __future__ import annotations

import time
from pathlib import Path
from time import monotonic

import pytest
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, DownloadTimeoutError, IgnoreRequest
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler

from middlewares.backoff import BackoffGateMiddleware, BackoffMiddleware, BackoffState, Clock
from middlewares.engine.exceptions import RetryScheduled, SiteLeft, UrlHeld
from middlewares.engine.runtime import Runtime
from middlewares.retry import BackoffRetryMiddleware
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.errors import ConfigError
from synapsecrawl.kb.records import SiteState, UrlHold
from tests.adapters.crawlers import SideFetches, crawler_for, opened_store

FEED = {KIND: RequestKind.FEED}


class _Chain:
    """Backoff (655) and its retries (650) as the downloader chains them: requests up, answers down."""

    def __init__(self, backoff: BackoffMiddleware, retry: BackoffRetryMiddleware) -> None:
        self.backoff, self.retry = backoff, retry

    def process_request(self, request: Request) -> None:
        self.backoff.process_request(request)

    async def process_response(self, request: Request, response: Response) -> Request | Response:
        passed = await self.backoff.process_response(request, response)
        return await self.retry.process_response(request, passed)

    async def process_exception(self, request: Request, exception: Exception) -> Request | None:
        return await self.retry.process_exception(request, exception)


class Crawl:
    """One crawl's backoff: the gate, the middlewares, and the state they share (on ``clock``, if given)."""

    def __init__(self, crawler: Crawler, clock: Clock | None = None) -> None:
        self.crawler = crawler
        self.engine = SideFetches().install(crawler)
        self.state = BackoffState.of(crawler, clock)
        self.gate = build_from_crawler(BackoffGateMiddleware, crawler)
        self.retry = build_from_crawler(BackoffRetryMiddleware, crawler)
        self.mw = _Chain(build_from_crawler(BackoffMiddleware, crawler), self.retry)
        self.runtime = Runtime.of(crawler)
        self.profile = self.runtime.profile.name

    def downloaded(
        self, url: str, status: int, retry_after: str | None = None, **meta: object
    ) -> tuple[Request, Response]:
        """The answer as the downloader signals it, judged there (before process_response)."""
        request = Request(url, meta=meta)
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        response = Response(url, status=status, headers=headers, request=request)
        self.crawler.signals.send_catch_log(
            signals.response_downloaded, response=response, request=request, spider=None
        )
        return request, response

    async def answered(
        self, url: str, status: int, retry_after: str | None = None, **meta: object
    ) -> Request | Response:
        request, response = self.downloaded(url, status, retry_after, **meta)
        return await self.mw.process_response(request, response)

    def paused_for(self, site: str, before: float, after: float) -> tuple[float, float]:
        """The pacer's pause of ``site`` as seconds after ``before`` and after ``after`` (monotonic)."""
        until = self.runtime.pacer.paused_until(site)
        return until - after, until - before

    def hold(self, url: str) -> UrlHold | None:
        return opened_store(self.runtime).get_url_hold(self.profile, url)

    def site_state(self, site: str) -> SiteState | None:
        return opened_store(self.runtime).get_site_state(self.profile, site)

    def stat(self, key: str) -> object:
        return self.crawler.stats.get_value(key)  # type: ignore[union-attr]


@pytest.fixture
def signing(signing_key: Path) -> dict[str, str]:
    return {"SIGNING_KEY": str(signing_key)}


def crawl(tmp_path: Path, profile: str = "synapsebot", **settings: object) -> Crawl:
    return Crawl(crawler_for(tmp_path, BOT_PROFILE=profile, **settings))


async def test_a_503_with_retry_after_pauses_the_site_and_retries_in_the_paused_slot(tmp_path: Path) -> None:
    """Backoff (SynapseBot, SNA-429 alike): 503 with Retry-After 120 pauses the site 120 s in the pacer
    and the store (reason stated); the URL comes back at once as a retry (the paused slot holds it),
    with a deferred hold written first so a stopped crawl keeps it."""
    c = crawl(tmp_path)
    t0, m0 = time.time(), monotonic()
    retry = await c.answered("http://a.test/busy", 503, "120", download_latency=0.2, size_truncated=True)
    t1, m1 = time.time(), monotonic()
    low, high = c.paused_for("a.test", m0, m1)
    assert low <= 120 <= high
    assert c.stat("backoff/paused/503") == 1
    state = c.site_state("a.test")
    assert state is not None and t0 + 120 <= state.paused_until <= t1 + 120
    assert state.pause_reason == "503, Retry-After 120 s" and state.slow_streak == 1
    assert isinstance(retry, Request) and retry.url == "http://a.test/busy" and retry.dont_filter
    assert retry.meta["backoff_retries"] == 1
    assert not {"download_latency", "size_truncated", "backoff_judged"} & set(retry.meta)  # not the retry's
    hold = c.hold("http://a.test/busy")
    assert hold is not None and hold.kind == "deferred" and hold.reason == "503"


async def test_a_429_without_retry_after_follows_the_profiles_absent_curve(tmp_path: Path) -> None:
    """Backoff (SynapseBot): a 429 with no Retry-After pauses 30 s ±25 % jitter, the next one in a row
    60 s ±25 % (doubling)."""
    c = crawl(tmp_path)
    m0 = monotonic()
    c.downloaded("http://a.test/1", 429)
    low, high = c.paused_for("a.test", m0, monotonic())
    assert high >= 22.5 and low <= 37.5
    m0 = monotonic()
    c.downloaded("http://a.test/2", 429)
    low, high = c.paused_for("a.test", m0, monotonic())
    assert high >= 45.0 and low <= 75.0
    assert c.stat("backoff/paused/429") == 2


@pytest.mark.parametrize(("stated", "paused"), [("5", 60.0), ("3000", 3000.0), (None, 300.0)])
async def test_yottabot_clamps_retry_after_to_a_minute_at_least(
    tmp_path: Path, stated: str | None, paused: float
) -> None:
    """YOT-429: Retry-After clamped to [1 min, 1 day]; 5 min when absent."""
    c = crawl(tmp_path, "yottabot")
    m0 = monotonic()
    c.downloaded("https://docs.test/a", 429, stated)
    low, high = c.paused_for("docs.test", m0, monotonic())
    assert low <= paused <= high


async def test_a_pause_longer_than_the_crawl_waits_leaves_the_site(tmp_path: Path) -> None:
    """SNA-429, YOT-429: a site asking for more than the crawl waits (an hour) is left: its queued
    requests are dropped from the downloader, later ones refused by the gate as SiteLeft, and the
    answered URL is deferred to a later crawl (a hold in the store, the request ignored)."""
    c = crawl(tmp_path, "snagabot")
    with pytest.raises(IgnoreRequest, match="deferred until"):
        await c.answered("http://a.test/busy", 503, "7200")
    assert c.stat("backoff/left/503") == 1
    [(site, why)] = c.engine.downloader.dropped
    assert site == "a.test" and isinstance(why(Request("http://a.test/queued")), SiteLeft)
    with pytest.raises(SiteLeft, match=r"a\.test is paused until"):
        await c.gate.process_request(Request("http://a.test/next"))
    hold = c.hold("http://a.test/busy")
    assert hold is not None and hold.kind == "deferred"
    assert Runtime.of(c.crawler).summary.skipped["a.test"]["paused"] == 1
    await c.gate.process_request(Request("http://b.test/"))  # other sites go on


async def test_a_request_refused_as_site_left_is_deferred_not_lost(tmp_path: Path) -> None:
    """SNA-429: a request the left site's queue gave up (SiteLeft) is held in the store until the
    site's pause ends, for the next crawl."""
    c = crawl(tmp_path, "snagabot")
    until = time.time() + 7200
    request = Request("http://a.test/queued")
    assert await c.mw.process_exception(request, SiteLeft(request.url, "a.test", until, "503")) is None
    hold = c.hold(request.url)
    assert hold is not None and (hold.kind, hold.until, hold.reason) == ("deferred", until, "503")
    assert c.stat("backoff/deferred") == 1


async def test_omniscientebot_pauses_on_any_retry_after(tmp_path: Path, signing: dict[str, str]) -> None:
    """OMN-PAUSE: any Retry-After header, even on a 200, pauses the whole site at least that long;
    the page itself goes on to the spider."""
    c = crawl(tmp_path, "omniscientebot", **signing)
    m0 = monotonic()
    request, response = c.downloaded("http://www.example.com/", 200, "90")
    low, high = c.paused_for("example.com", m0, monotonic())  # the registrable domain (OMN-SITE)
    assert low <= 90 <= high
    assert c.stat("backoff/paused/retry-after") == 1
    assert await c.mw.process_response(request, response) is response


async def test_omniscientebot_doubles_from_five_minutes_without_retry_after(
    tmp_path: Path, signing: dict[str, str]
) -> None:
    """OMN-PAUSE: a 429 without Retry-After pauses 5 min, the next in a row 10 min."""
    c = crawl(tmp_path, "omniscientebot", **signing)
    for expected in (300.0, 600.0):
        m0 = monotonic()
        c.downloaded("http://example.com/x", 429)
        low, high = c.paused_for("example.com", m0, monotonic())
        assert low <= expected <= high


async def test_three_403s_in_a_row_pause_omniscientebot_for_a_day(tmp_path: Path, signing: dict[str, str]) -> None:
    """OMN-PAUSE: "repeated 403" is three in a row: the site pauses 24 h, past what a crawl waits, so
    it is left to a later crawl; a 403 streak broken by another answer starts again."""
    c = crawl(tmp_path, "omniscientebot", **signing)
    for status in (403, 403, 200, 403, 403):
        c.downloaded("http://example.com/p", status)
    assert c.stat("backoff/left/403") is None
    t0 = time.time()
    response = await c.answered("http://example.com/p", 403)
    assert isinstance(response, Response) and response.status == 403  # the page's outcome is the spider's
    assert c.stat("backoff/left/403") == 1
    with pytest.raises(SiteLeft, match="403 answers in a row"):
        await c.gate.process_request(Request("http://www.example.com/"))
    state = c.site_state("example.com")
    assert state is not None and state.paused_until >= t0 + 86400 and state.forbidden_streak == 0


async def test_side_fetches_are_no_pages_outcome(tmp_path: Path, signing: dict[str, str]) -> None:
    """OMN-PAUSE, OMN-FETCH: robots.txt and tdmrep.json answers heed and set pauses (a 503 pauses the
    site) but never count in a 403 streak and are not retried or held."""
    c = crawl(tmp_path, "omniscientebot", **signing)
    for kind in (RequestKind.ROBOTS, RequestKind.TDMREP, RequestKind.SUBRESOURCE):
        c.downloaded("http://example.com/robots.txt", 403, **{KIND: kind})
    c.downloaded("http://example.com/page", 403)
    assert c.stat("backoff/left/403") is None
    request, response = c.downloaded("http://example.com/robots.txt", 503, "60", **{KIND: RequestKind.ROBOTS})
    assert c.stat("backoff/paused/503") == 1
    assert await c.mw.process_response(request, response) is response
    assert c.hold("http://example.com/robots.txt") is None


async def test_dont_backoff_is_neither_judged_nor_gated(tmp_path: Path) -> None:
    """Backoff: a request marked dont_backoff (the on-demand fetch's own checks) is not judged."""
    c = crawl(tmp_path, "snagabot")
    request, response = c.downloaded("http://a.test/", 503, "7200", dont_backoff=True)
    assert await c.mw.process_response(request, response) is response
    assert c.stat("backoff/paused/503") is None and c.stat("backoff/left/503") is None
    assert c.runtime.pacer.paused_until("a.test") <= monotonic()
    await c.gate.process_request(Request("http://a.test/", meta={"dont_backoff": True}))


async def test_serenereader_remembers_a_404_for_30_days(tmp_path: Path, signing: dict[str, str]) -> None:
    """SER-ERRORS: an article's 404 is held as "gone" for 30 days; the next crawl's gate does not fetch it
    (counted, skipped as an error); a hold that is due lets the URL through and is released once answered."""
    c = crawl(tmp_path, "serenereader", **signing)
    t0 = time.time()
    request, response = c.downloaded("http://blog.test/gone", 404)
    assert await c.mw.process_response(request, response) is response  # the spider sees the 404
    hold = c.hold("http://blog.test/gone")
    assert hold is not None and hold.kind == "gone" and hold.until >= t0 + 30 * 86400
    assert c.stat("backoff/remembered/404") == 1
    later = crawl(tmp_path, "serenereader", **signing)  # the next crawl, same store
    with pytest.raises(UrlHeld, match="held until"):
        await later.gate.process_request(Request("http://blog.test/gone"))
    assert later.stat("backoff/skipped/gone") == 1
    assert later.runtime.summary.skipped["blog.test"]["error"] == 1


async def test_a_due_hold_is_fetched_and_released_once_answered(tmp_path: Path, signing: dict[str, str]) -> None:
    """SER-ERRORS: a deferred URL whose hold has passed is fetched again; a good answer releases it."""
    c = crawl(tmp_path, "serenereader", **signing)
    url = "http://blog.test/back"
    opened_store(c.runtime).put_url_hold(c.profile, UrlHold(url, "deferred", time.time() - 1, "500", "blog.test"))
    request = Request(url)
    await c.gate.process_request(request)
    assert request.meta["backoff_held"] is True
    response = Response(url, status=200, request=request)
    c.crawler.signals.send_catch_log(signals.response_downloaded, response=response, request=request, spider=None)
    assert await c.mw.process_response(request, response) is response
    assert c.hold(url) is None


async def test_serenereader_retries_a_500_after_30_seconds_and_keeps_the_spider_open(
    tmp_path: Path, signing: dict[str, str]
) -> None:
    """SER-ERRORS: a 500 is retried after about 30 s through the event loop (RetryScheduled ends this
    attempt), with a deferred hold written first; while a retry waits the spider is kept open, and
    closing cancels it (the hold keeps the URL)."""
    c = crawl(tmp_path, "serenereader", **signing)
    t0 = time.time()
    with pytest.raises(RetryScheduled, match="retried in 30 s"):
        await c.answered("http://blog.test/flaky", 500)
    hold = c.hold("http://blog.test/flaky")
    assert hold is not None and hold.kind == "deferred" and t0 + 30 <= hold.until <= time.time() + 30
    assert c.stat("backoff/retry/500") == 1
    [(_, idle)] = c.crawler.signals.send_catch_log(signals.spider_idle, spider=None)
    assert idle.check(DontCloseSpider)  # type: ignore[union-attr]
    c.crawler.signals.send_catch_log(signals.spider_closed, spider=None, reason="finished")
    assert c.crawler.signals.send_catch_log(signals.spider_idle, spider=None) == [(c.retry._idle, None)]


async def test_serenereader_gives_up_after_three_retries_and_skips_an_hour(
    tmp_path: Path, signing: dict[str, str]
) -> None:
    """SER-ERRORS: after the third retry a temporary error holds the page for at least an hour; this
    crawl is done with it (ignored, skipped as an error)."""
    c = crawl(tmp_path, "serenereader", **signing)
    t0 = time.time()
    with pytest.raises(IgnoreRequest, match="deferred until"):
        await c.answered("http://blog.test/flaky", 502, backoff_retries=3)
    hold = c.hold("http://blog.test/flaky")
    assert hold is not None and hold.until >= t0 + 3600
    assert c.stat("backoff/gave_up") == 1
    assert c.runtime.summary.skipped["blog.test"]["error"] == 1


async def test_serenereader_retries_a_429_without_retry_after_on_its_own_curve(
    tmp_path: Path, signing: dict[str, str]
) -> None:
    """SER-PAGE-429: a 429 without Retry-After is the page's error only (no site pause): retried after
    the second delay (1 min) on its second retry."""
    c = crawl(tmp_path, "serenereader", **signing)
    with pytest.raises(RetryScheduled, match="retried in 60 s"):
        await c.answered("http://blog.test/p", 429, backoff_retries=1)
    assert c.stat("backoff/paused/429") is None
    c.crawler.signals.send_catch_log(signals.spider_closed, spider=None, reason="finished")


async def test_a_timeout_is_retried_only_where_the_profile_owns_temporary_errors(
    tmp_path: Path, signing: dict[str, str]
) -> None:
    """SER-ERRORS: under SereneReader a timeout is retried by backoff (reason: the exception's name);
    under SynapseBot Scrapy's RetryMiddleware owns it and backoff does nothing."""
    synapse = crawl(tmp_path / "a")
    assert await synapse.mw.process_exception(Request("http://a.test/"), DownloadTimeoutError()) is None
    assert synapse.hold("http://a.test/") is None
    serene = crawl(tmp_path / "b", "serenereader", **signing)
    with pytest.raises(RetryScheduled):
        await serene.mw.process_exception(Request("http://blog.test/slow"), DownloadTimeoutError())
    assert serene.stat("backoff/retry/DownloadTimeoutError") == 1
    serene.crawler.signals.send_catch_log(signals.spider_closed, spider=None, reason="finished")


async def test_a_failed_feed_refresh_delays_the_next_from_15_minutes_doubling(
    tmp_path: Path, signing: dict[str, str]
) -> None:
    """SER-FEED-BACKOFF: a feed is not retried in the crawl; each failed refresh holds it 15 min, then
    30 min; a 304 releases it."""
    c = crawl(tmp_path, "serenereader", **signing)
    url = "http://blog.test/feed.xml"
    for delay, failures in ((900, 1), (1800, 2)):
        t0 = time.time()
        request, response = c.downloaded(url, 500, **FEED)
        assert await c.mw.process_response(request, response) is response
        hold = c.hold(url)
        assert hold is not None and hold.failures == failures and t0 + delay <= hold.until <= time.time() + delay
        assert hold.reason == "feed 500"
    await c.answered(url, 304, **FEED)
    assert c.hold(url) is None


async def test_a_feeds_429_waits_at_least_retry_after(tmp_path: Path, signing: dict[str, str]) -> None:
    """SER-FEED-BACKOFF: on 429 the feed waits at least Retry-After (here past its 15 min)."""
    c = crawl(tmp_path, "serenereader", **signing)
    t0 = time.time()
    await c.answered("http://blog.test/feed.xml", 429, "5000", **FEED)
    hold = c.hold("http://blog.test/feed.xml")
    assert hold is not None and hold.until >= t0 + 5000


async def test_a_feed_that_does_not_answer_is_held_too(tmp_path: Path, signing: dict[str, str]) -> None:
    """SER-FEED-BACKOFF: a refresh with no answer (a timeout) counts as failed; the hold is under the
    feed's subscribed address, even after a redirect."""
    c = crawl(tmp_path, "serenereader", **signing)
    request = Request("http://blog.test/feed/", meta={**FEED, "redirect_urls": ["http://blog.test/feed"]})
    assert await c.mw.process_exception(request, DownloadTimeoutError()) is None
    hold = c.hold("http://blog.test/feed")
    assert hold is not None and hold.reason == "feed DownloadTimeoutError"


async def test_an_earlier_crawls_pause_is_waited_out_or_leaves_the_site(tmp_path: Path) -> None:
    """Backoff across crawls: a site paused by an earlier crawl is held in the pacer for what is left
    of its pause when that fits the crawl's wait; a longer pause leaves it untouched (SiteLeft)."""
    c = crawl(tmp_path)
    store = opened_store(c.runtime)
    store.put_site_state(c.profile, SiteState("near.test", time.time() + 100, "503"))
    store.put_site_state(c.profile, SiteState("far.test", time.time() + 100_000, "503"))
    await c.gate.process_request(Request("http://near.test/"))
    assert 0 < c.runtime.pacer.paused_until("near.test") - monotonic() <= 100
    with pytest.raises(SiteLeft):
        await c.gate.process_request(Request("http://far.test/"))
    assert c.stat("backoff/left/earlier_crawl") == 1


async def test_backoff_max_wait_lowers_the_profiles_wait(tmp_path: Path) -> None:
    """Backoff: BACKOFF_MAX_WAIT below SynapseBot's 10 min leaves a site asking 500 s (paused, without it)."""
    c = crawl(tmp_path, BACKOFF_MAX_WAIT=100)
    c.downloaded("http://a.test/", 503, "500")
    assert c.stat("backoff/left/503") == 1
    (tmp_path / "profile").mkdir()
    d = crawl(tmp_path / "profile")
    d.downloaded("http://a.test/", 503, "500")
    assert d.stat("backoff/paused/503") == 1


@pytest.mark.parametrize(
    ("max_wait", "message"),
    [
        (10**6, "BACKOFF_MAX_WAIT 1e+06 is beyond synapsebot's cap 600 s"),
        ("soon", "BACKOFF_MAX_WAIT 'soon' is not a number"),
    ],
)
def test_backoff_max_wait_over_the_profiles_is_refused_not_clamped(
    tmp_path: Path, max_wait: object, message: str
) -> None:
    """Backoff, CONTRACT (refuse, never clamp): BACKOFF_MAX_WAIT above the profile's max_wait, or not a
    number, stops the crawler being built with one line, as DOWNLOAD_DELAY under its floor does."""
    with pytest.raises(ConfigError) as refused:
        crawl(tmp_path, BACKOFF_MAX_WAIT=max_wait)
    assert str(refused.value).startswith(message)


async def test_a_shorter_pause_never_cuts_a_longer_one(tmp_path: Path) -> None:
    """Fail toward politeness: a 503 asking 10 s while a 300 s pause holds leaves the 300 s standing, in
    the pacer and in the store."""
    c = crawl(tmp_path)
    m0 = monotonic()
    await c.answered("http://a.test/1", 503, "300")
    await c.answered("http://a.test/2", 503, "10")
    low, high = c.paused_for("a.test", m0, monotonic())
    assert low <= 300 <= high
    state = c.site_state("a.test")
    assert state is not None and state.pause_reason == "503, Retry-After 300 s"


async def test_the_stored_reason_says_how_a_clamped_retry_after_was_taken(tmp_path: Path) -> None:
    """YOT-429: the site's pause reason names the stated Retry-After and the clamped wait used, for the
    operator reading the KB's site state."""
    c = crawl(tmp_path, "yottabot")
    await c.answered("https://docs.test/a", 429, "5")
    state = c.site_state("docs.test")
    assert state is not None and state.pause_reason == "429, Retry-After 5.0 s taken as 60 s"


class _Clocks:
    """Fake wall and monotonic clocks, moved together by ``advance``."""

    def __init__(self, wall: float = 1_800_000_000.0, mono: float = 5_000.0) -> None:
        self.wall, self.mono = wall, mono

    def clock(self) -> Clock:
        return Clock(wall=lambda: self.wall, monotonic=lambda: self.mono)

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds


def crawl_at(tmp_path: Path, clocks: _Clocks, profile: str = "synapsebot", **settings: object) -> Crawl:
    return Crawl(crawler_for(tmp_path, BOT_PROFILE=profile, **settings), clocks.clock())


async def test_on_a_fake_clock_retry_after_pauses_exactly_as_long_in_the_pacer_and_the_store(tmp_path: Path) -> None:
    """SNA-429 alike (SynapseBot): a 503 with Retry-After 120 pauses the site exactly 120 s, on the pacer's
    monotonic clock and in the store's unix time, and its retry's deferred hold is due at the same moment."""
    clocks = _Clocks()
    c = crawl_at(tmp_path, clocks)
    retry = await c.answered("http://a.test/busy", 503, "120")
    assert isinstance(retry, Request)
    assert c.runtime.pacer.paused_until("a.test") == clocks.mono + 120
    state = c.site_state("a.test")
    assert state is not None and state.paused_until == clocks.wall + 120
    hold = c.hold("http://a.test/busy")
    assert hold is not None and hold.until == clocks.wall + 120 and hold.recorded_at == clocks.wall


async def test_on_a_fake_clock_an_earlier_crawls_pause_is_held_for_exactly_what_is_left(tmp_path: Path) -> None:
    """Backoff across crawls: a site an earlier crawl paused until 100 s from now is held in the pacer for
    exactly those 100 s; once the pause is over, the next crawl does not hold it at all."""
    clocks = _Clocks()
    c = crawl_at(tmp_path, clocks)
    opened_store(c.runtime).put_site_state(c.profile, SiteState("near.test", clocks.wall + 100, "503"))
    await c.gate.process_request(Request("http://near.test/"))
    assert c.runtime.pacer.paused_until("near.test") == clocks.mono + 100
    clocks.advance(100)
    later = crawl_at(tmp_path, clocks)
    await later.gate.process_request(Request("http://near.test/"))
    assert later.runtime.pacer.paused_until("near.test") == 0.0


async def test_on_a_fake_clock_a_held_url_passes_the_gate_the_moment_its_hold_ends(
    tmp_path: Path, signing: dict[str, str]
) -> None:
    """SER-ERRORS: a URL held until a time is refused by the gate a second before it and let through (to
    be released once answered) at it."""
    clocks = _Clocks()
    c = crawl_at(tmp_path, clocks, "serenereader", **signing)
    url = "http://blog.test/flaky"
    opened_store(c.runtime).put_url_hold(c.profile, UrlHold(url, "deferred", clocks.wall + 1, "500", "blog.test"))
    with pytest.raises(UrlHeld):
        await c.gate.process_request(Request(url))
    clocks.advance(1)
    later = crawl_at(tmp_path, clocks, "serenereader", **signing)
    request = Request(url)
    await later.gate.process_request(request)
    assert request.meta["backoff_held"] is True
