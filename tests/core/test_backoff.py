"""The backoff core: every profile's curve, with time and randomness passed in."""

from __future__ import annotations

from email.utils import formatdate
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.kb.records import SiteState, UrlHold
from synapsecrawl.kb.sqlite import SQLiteStore
from synapsecrawl.pacing.backoff import (
    Decision,
    SiteHistory,
    absent_pause,
    decide,
    feed_retry_delay,
    parse_retry_after,
    slow_spacing,
)
from synapsecrawl.pacing.clock import SiteClock
from synapsecrawl.profiles import BackoffPolicy, load_profile

NOW = 1_750_000_000.0  # a fixed "now" in unix seconds
HOUR, DAY = 3600.0, 86400.0

SYNAPSE = load_profile("synapsebot").backoff
SNAGA = load_profile("snagabot").backoff
SERENE = load_profile("serenereader").backoff
OMNI = load_profile("omniscientebot").backoff
YOTTA = load_profile("yottabot").backoff


def fresh() -> SiteHistory:
    return SiteHistory()


# Retry-After (RFC 9110 §10.2.3)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("3", 3.0),
        ("0", 0.0),
        (" 120 ", 120.0),
        (b"7200", 7200.0),
        ("1.5", 1.5),  # not delay-seconds, but read leniently
        (formatdate(NOW + 90, usegmt=True), 90.0),  # IMF-fixdate
        ("Sun, 06 Nov 1994 08:49:37 GMT", 0.0),  # a date in the past: no wait
        ("Sunday, 06-Nov-94 08:49:37 GMT", 0.0),  # obsolete RFC 850 form
        ("Sun Nov  6 08:49:37 1994", 0.0),  # obsolete asctime form
        ("99999999999999999999999", 1e12),  # huge: capped, the profile's maximum applies later
    ],
)
def test_retry_after_reads_seconds_and_http_dates(value: str | bytes, seconds: float) -> None:
    """SNA-429, the design card's 429/503 backoff: Retry-After is delay-seconds or an HTTP-date
    in any of its three forms."""
    assert parse_retry_after(value, NOW) == pytest.approx(seconds)


def test_retry_after_date_in_each_form_gives_the_same_wait() -> None:
    """RFC 9110 §5.6.7: IMF-fixdate, RFC 850 and asctime name the same instant."""
    now = 784111777.0 - 30  # 30 s before Sun, 06 Nov 1994 08:49:37 GMT
    forms = ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"]
    assert [parse_retry_after(form, now) for form in forms] == [30.0, 30.0, 30.0]


@pytest.mark.parametrize(
    "value",
    [None, "", "   ", "-5", "+5", "5s", "1e9", "soon", "Mon, 32 Nov 2094 08:49:37 GMT", "3, 4", "0x10", "∞"],
)
def test_retry_after_nonsense_is_absent(value: str | None) -> None:
    """SNA-429, OMN-PAUSE, YOT-429: a value that is neither seconds nor a date counts as no Retry-After."""
    assert parse_retry_after(value, NOW) is None


@given(st.one_of(st.text(), st.binary()))
def test_retry_after_never_raises(value: str | bytes) -> None:
    """Parsers never raise on content: any header value is a wait in [0, 1e12] or None."""
    seconds = parse_retry_after(value, NOW)
    assert seconds is None or 0.0 <= seconds <= 1e12


# The pause when no Retry-After is stated


def test_omnisciente_absent_pause_doubles_from_5_min_to_24_h() -> None:
    """OMN-PAUSE: without Retry-After the pause starts at 5 minutes and doubles each time, up to 24 hours."""
    pauses = [absent_pause(OMNI, n) for n in range(1, 12)]
    assert pauses == [300, 600, 1200, 2400, 4800, 9600, 19200, 38400, 76800, DAY, DAY]
    assert absent_pause(OMNI, 10_000) == DAY


def test_yotta_absent_pause_is_five_minutes_every_time() -> None:
    """YOT-429: five minutes when Retry-After is absent, however often it repeats."""
    assert {absent_pause(YOTTA, n) for n in range(1, 20)} == {300.0}


@pytest.mark.parametrize(("draw", "expected"), [(0.0, 22.5), (0.5, 30.0), (0.999999, 37.5)])
def test_synapse_absent_pause_has_bounded_jitter(draw: float, expected: float) -> None:
    """Design card 429/503 backoff (SynapseBot): exponential backoff with jitter: the first pause is 30 s ± 25 %."""
    assert absent_pause(SYNAPSE, 1, rand=lambda: draw) == pytest.approx(expected, abs=1e-3)


@given(st.integers(min_value=1, max_value=200), st.floats(min_value=0.0, max_value=0.999999))
def test_synapse_jitter_stays_within_a_quarter_of_the_curve(streak: int, draw: float) -> None:
    """Design card 429/503 backoff (SynapseBot): each pause is the doubling curve (30 s to 1 h)
    within ±25 %, never outside."""
    base = min(30.0 * 2 ** min(streak - 1, 64), HOUR)
    assert 0.75 * base <= absent_pause(SYNAPSE, streak, rand=lambda: draw) <= 1.25 * base


def test_serene_pauses_nothing_without_retry_after() -> None:
    """SER-PAGE-429: without Retry-After a 429/503 is the page's temporary error, not a site pause."""
    assert absent_pause(SERENE, 1) == 0.0


# SnagaBot (SNA-429)


def test_snaga_waits_a_stated_retry_after_then_retries() -> None:
    """SNA-429: a 503 with Retry-After: 3 pauses the host 3 s and the URL is retried after it."""
    d = decide(SNAGA, fresh(), status=503, retry_after="3", now=NOW)
    assert (d.site_wait, d.retry_in, d.leave_site, d.hold) == (3.0, 3.0, False, 0.0)
    assert d.reason == "503"
    assert d.history.slow_streak == 1


def test_snaga_waits_up_to_an_hour_in_the_crawl() -> None:
    """SNA-429: exactly an hour is waited; it is not "more than an hour"."""
    d = decide(SNAGA, fresh(), status=429, retry_after="3600", now=NOW)
    assert (d.site_wait, d.leave_site, d.retry_in) == (HOUR, False, HOUR)


@pytest.mark.parametrize("asked", ["3601", "7200", formatdate(NOW + 2 * HOUR, usegmt=True)])
def test_snaga_leaves_a_host_asking_more_than_an_hour(asked: str) -> None:
    """SNA-429: a host asking for more than an hour is left alone for the rest of the crawl;
    the URL is deferred, not retried, until the time the host asked for."""
    d = decide(SNAGA, fresh(), status=503, retry_after=asked, now=NOW)
    assert d.leave_site
    assert d.retry_in is None
    assert d.hold == pytest.approx(d.site_wait)
    assert d.site_wait > HOUR


def test_snaga_caps_a_nonsense_wait_at_a_day() -> None:
    """SNA-429: a Retry-After of centuries leaves the host, and the pause kept is a day."""
    d = decide(SNAGA, fresh(), status=503, retry_after="9" * 30, now=NOW)
    assert d.leave_site
    assert d.site_wait == DAY


def test_snaga_gives_up_a_url_after_its_retries() -> None:
    """SNA-429: a URL answered 503 again after three retries is deferred until the pause ends."""
    d = decide(SNAGA, SiteHistory(slow_streak=3), status=503, retry_after="5", retries=3, now=NOW)
    assert d.retry_in is None
    assert d.gave_up
    assert (d.hold, d.hold_kind) == (5.0, "deferred")


def test_snaga_ignores_retry_after_on_a_normal_answer() -> None:
    """SNA-429 speaks of 429 and 503 only: a 200 with Retry-After does not pause SnagaBot."""
    d = decide(SNAGA, fresh(), status=200, retry_after="30", now=NOW)
    assert d == Decision(stated=30.0)


# SNA-SLOW


@pytest.mark.parametrize(
    ("latency", "spacing"), [(0.3, 3.0), (0.05, 0.5), (None, 0.0), (0.0, 0.0), (float("nan"), 0.0), (1000.0, HOUR)]
)
def test_slow_server_spacing_is_ten_times_its_response_time(latency: float | None, spacing: float) -> None:
    """SNA-SLOW: the wait between requests becomes ten times the server's response time (capped)."""
    assert slow_spacing(10.0, latency, HOUR) == pytest.approx(spacing)
    assert slow_spacing(0.0, latency, HOUR) == 0.0


def test_slow_spacing_lengthens_but_never_shortens_the_crawl_delay() -> None:
    """SNA-SLOW, ALL-CD: a slow answer stretches the spacing; once fast again, the Crawl-delay stands."""
    clock = SiteClock(delay=1.0, crawl_delay_cap=HOUR)
    clock.set_crawl_delay("a.test", 2.0)
    clock.set_spacing("a.test", 3.0)
    assert clock.spacing("a.test") == 3.0
    clock.set_spacing("a.test", 0.5)
    assert clock.spacing("a.test") == 2.0
    clock.set_crawl_delay("a.test", 1.5)
    assert clock.spacing("a.test") == 1.5
    assert clock.spacing("b.test") == 1.0


# OmniscienteBot (OMN-PAUSE)


def test_omnisciente_pauses_on_503_for_retry_after() -> None:
    """OMN-PAUSE: a 503 pauses the whole site at least as long as Retry-After says."""
    d = decide(OMNI, fresh(), status=503, retry_after="7", now=NOW)
    assert (d.site_wait, d.retry_in, d.leave_site) == (7.0, 7.0, False)


def test_omnisciente_pauses_on_any_retry_after() -> None:
    """OMN-PAUSE: a Retry-After on any answer, even a 200, pauses the site; the page itself stands."""
    d = decide(OMNI, fresh(), status=200, retry_after="20", now=NOW)
    assert (d.site_wait, d.reason, d.retry_in, d.hold) == (20.0, "retry-after", None, 0.0)
    assert d.history.slow_streak == 1


def test_omnisciente_doubles_across_repeats_and_leaves_past_an_hour() -> None:
    """OMN-PAUSE: 5, 10, 20, 40 min in a row are waited; the fifth (80 min) leaves the site to a later crawl."""
    history = fresh()
    waits = []
    for _ in range(5):
        d = decide(OMNI, history, status=429, now=NOW)
        history = d.history
        waits.append((d.site_wait, d.leave_site))
    assert waits == [(300, False), (600, False), (1200, False), (2400, False), (4800, True)]


def test_omnisciente_streak_resets_on_a_normal_answer() -> None:
    """OMN-PAUSE: the doubling counts pauses in a row; a 200 in between starts again at 5 minutes."""
    d = decide(OMNI, SiteHistory(slow_streak=4), status=200, now=NOW)
    assert d.history.slow_streak == 0
    assert decide(OMNI, d.history, status=503, now=NOW).site_wait == 300


def test_omnisciente_three_403_in_a_row_pause_the_site_24_h() -> None:
    """OMN-PAUSE: repeated 403 (three in a row) pause the site for 24 hours, past what a crawl waits."""
    history = fresh()
    seen = []
    for _ in range(3):
        d = decide(OMNI, history, status=403, now=NOW)
        history = d.history
        seen.append((d.site_wait, d.leave_site))
    assert seen == [(0.0, False), (0.0, False), (DAY, True)]
    assert d.reason == "403"
    assert d.history.forbidden_streak == 0  # counted afresh after the pause


def test_omnisciente_403_streak_is_broken_by_another_answer() -> None:
    """OMN-PAUSE: 403, 200, 403, 403 is not three in a row."""
    history = fresh()
    for status in (403, 200, 403, 403):
        d = decide(OMNI, history, status=status, now=NOW)
        history = d.history
    assert d.site_wait == 0.0
    assert history.forbidden_streak == 2
    # no answer at all (a timeout) neither breaks nor extends it
    assert decide(OMNI, history, status=None, now=NOW).history.forbidden_streak == 2


def test_omnisciente_caps_a_nonsense_retry_after_at_30_days() -> None:
    """OMN-PAUSE: at least Retry-After, but a value of centuries is nonsense and is capped."""
    assert decide(OMNI, fresh(), status=503, retry_after="9" * 20, now=NOW).site_wait == 30 * DAY


# YottaBot-SearchBot (YOT-429)


@pytest.mark.parametrize(
    ("asked", "wait"),
    [("1", 60.0), ("0", 60.0), ("59", 60.0), ("60", 60.0), ("120", 120.0), ("86400", DAY), ("864000", DAY),
     (None, 300.0), ("garbage", 300.0)],
)  # fmt: skip
def test_yotta_clamps_retry_after_to_a_minute_and_a_day(asked: str | None, wait: float) -> None:
    """YOT-429: Retry-After clamped to [1 min, 1 day]; five minutes when there is none."""
    d = decide(YOTTA, fresh(), status=429, retry_after=asked, now=NOW)
    assert d.site_wait == wait


def test_yotta_floor_exceeding_the_crawl_wait_defers() -> None:
    """YOT-429: with a crawl that waits at most 10 s, a 60 s floor leaves the site; the URL is deferred 60 s."""
    d = decide(YOTTA, fresh(), status=503, retry_after="1", now=NOW, max_wait=10)
    assert d.leave_site
    assert (d.site_wait, d.hold, d.hold_kind, d.stated) == (60.0, 60.0, "deferred", 1.0)


def test_max_wait_only_lowers_the_profile_value() -> None:
    """An operator's BACKOFF_MAX_WAIT can make a crawl wait less, never more than the profile."""
    assert not decide(YOTTA, fresh(), status=503, retry_after="1800", now=NOW).leave_site
    assert not decide(YOTTA, fresh(), status=503, retry_after="1800", now=NOW, max_wait=10 * HOUR).leave_site
    assert decide(YOTTA, fresh(), status=503, retry_after="7200", now=NOW, max_wait=10 * HOUR).leave_site


# SereneReader (SER-ERRORS, SER-PAGE-429, SER-FEED-BACKOFF)


@pytest.mark.parametrize("status", [500, 502, 504, 408, None])
def test_serene_retries_a_temporary_error_after_30_s_1_min_2_min_then_skips_an_hour(status: int | None) -> None:
    """SER-ERRORS: a timeout or a 500 is retried at most three times, after about 30 s, 1 min and 2 min,
    then the page is skipped for at least an hour."""
    steps = [decide(SERENE, fresh(), status=status, retries=n, now=NOW) for n in range(4)]
    assert [d.retry_in for d in steps] == [30.0, 60.0, 120.0, None]
    assert all(d.site_wait == 0.0 and not d.leave_site for d in steps)
    last = steps[-1]
    assert last.gave_up
    assert (last.hold, last.hold_kind) == (HOUR, "deferred")
    assert last.hold >= HOUR


@pytest.mark.parametrize("status", [429, 503])
def test_serene_treats_429_and_503_as_temporary_then_waits_7_days(status: int) -> None:
    """SER-PAGE-429: 429/503 is retried like a temporary error (three times over ~3.5 min); after that,
    without Retry-After, the page waits seven days."""
    steps = [decide(SERENE, fresh(), status=status, retries=n, now=NOW) for n in range(4)]
    assert [d.retry_in for d in steps] == [30.0, 60.0, 120.0, None]
    assert sum(d.retry_in or 0 for d in steps) == 210.0  # about three and a half minutes
    assert steps[-1].hold == 7 * DAY
    assert steps[-1].gave_up


@pytest.mark.parametrize(
    ("asked", "hold"), [("3", 3.0), (str(3 * 86400), 3 * DAY), (str(30 * 86400), 7 * DAY), ("9" * 40, 7 * DAY)]
)
def test_serene_after_retries_waits_retry_after_up_to_7_days(asked: str, hold: float) -> None:
    """SER-PAGE-429: after the retries, wait as long as Retry-After says, at most seven days."""
    d = decide(SERENE, fresh(), status=429, retry_after=asked, retries=3, now=NOW)
    assert d.hold == hold


def test_serene_retry_waits_at_least_a_short_retry_after() -> None:
    """SER-PAGE-429: a Retry-After shorter than the retry's own wait never brings the retry forward;
    it also holds the host that long."""
    d = decide(SERENE, fresh(), status=503, retry_after="10", now=NOW)
    assert (d.retry_in, d.site_wait) == (30.0, 10.0)
    d = decide(SERENE, fresh(), status=503, retry_after="90", retries=0, now=NOW)
    assert d.retry_in == 90.0


def test_serene_retry_after_beyond_the_crawl_defers_the_page() -> None:
    """SER-PAGE-429: a Retry-After longer than the crawl waits is not cut short by a retry: the page
    (and the host) wait for it in a later run."""
    d = decide(SERENE, fresh(), status=429, retry_after="3600", now=NOW)
    assert d.retry_in is None
    assert d.leave_site
    assert (d.hold, d.hold_kind) == (HOUR, "deferred")


@pytest.mark.parametrize("status", [404, 410])
def test_serene_remembers_a_permanent_error_30_days(status: int) -> None:
    """SER-ERRORS: a permanent error (404) is remembered 30 days."""
    d = decide(SERENE, fresh(), status=status, now=NOW)
    assert (d.hold, d.hold_kind, d.retry_in, d.site_wait) == (30 * DAY, "gone", None, 0.0)


@pytest.mark.parametrize("profile", ["synapsebot", "snagabot", "omniscientebot", "yottabot"])
def test_other_profiles_leave_5xx_and_timeouts_to_scrapy_and_forget_404(profile: str) -> None:
    """Only SereneReader owns temporary errors and remembers 404s; the others' 500s and timeouts go
    to Scrapy's RetryMiddleware, and a 404 leaves nothing behind."""
    policy = load_profile(profile).backoff
    for status in (500, 502, None, 404):
        d = decide(policy, fresh(), status=status, now=NOW)
        assert (d.retry_in, d.hold, d.site_wait) == (None, 0.0, 0.0)


def test_serene_feed_refresh_delay_doubles_from_15_min_to_a_day() -> None:
    """SER-FEED-BACKOFF: each failed refresh delays the next, from 15 min doubling up to one day."""
    delays = [feed_retry_delay(SERENE, n, now=NOW) for n in range(10)]
    assert delays == [0.0, 900, 1800, 3600, 7200, 14400, 28800, 57600, DAY, DAY]
    assert feed_retry_delay(SERENE, 10**6, now=NOW) == DAY


def test_serene_feed_429_waits_at_least_retry_after() -> None:
    """SER-FEED-BACKOFF: on a 429 the next refresh also waits at least Retry-After (up to 7 days)."""
    assert feed_retry_delay(SERENE, 1, status=429, retry_after="7200", now=NOW) == 7200
    assert feed_retry_delay(SERENE, 1, status=429, retry_after="60", now=NOW) == 900
    assert feed_retry_delay(
        SERENE, 1, status=429, retry_after=formatdate(NOW + 2 * DAY, usegmt=True), now=NOW
    ) == pytest.approx(2 * DAY)
    assert feed_retry_delay(SERENE, 1, status=429, retry_after="9" * 20, now=NOW) == 7 * DAY
    assert feed_retry_delay(SERENE, 1, status=500, retry_after="7200", now=NOW) == 900


# SynapseBot (no stated promise: a careful operator's defaults)


def test_synapse_honours_an_http_date() -> None:
    """Design card 429/503 backoff (SynapseBot): Retry-After as an HTTP date is honoured to the second."""
    d = decide(SYNAPSE, fresh(), status=503, retry_after=formatdate(NOW + 45, usegmt=True), now=NOW)
    assert (d.site_wait, d.retry_in, d.leave_site) == (45.0, 45.0, False)


def test_synapse_leaves_a_site_asking_more_than_10_minutes() -> None:
    """Design card 429/503 backoff (SynapseBot): a site asking for longer than a crawl should wait
    (10 min) is left to the next crawl."""
    assert not decide(SYNAPSE, fresh(), status=429, retry_after="600", now=NOW).leave_site
    d = decide(SYNAPSE, fresh(), status=429, retry_after="601", now=NOW)
    assert d.leave_site
    assert d.hold == 601.0


def test_synapse_backs_off_exponentially_without_retry_after() -> None:
    """Design card 429/503 backoff (SynapseBot): without Retry-After, 30 s doubling per repeat
    (±25 %), leaving past 10 minutes."""
    history = fresh()
    waits = []
    for _ in range(6):
        d = decide(SYNAPSE, history, status=503, now=NOW, rand=lambda: 0.5)
        history = d.history
        waits.append((d.site_wait, d.leave_site))
    assert waits == [(30, False), (60, False), (120, False), (240, False), (480, False), (960, True)]


# Profiles as data


def test_profile_curves_match_the_bot_pages() -> None:
    """SNA-429, OMN-PAUSE, YOT-429, SER-ERRORS, SER-PAGE-429, SER-FEED-BACKOFF: the numbers in the
    profiles are the numbers the bot pages promise."""
    assert SNAGA.max_wait == HOUR
    assert (OMNI.absent_first, OMNI.absent_factor, OMNI.absent_max, OMNI.any_retry_after) == (300, 2, DAY, True)
    assert (OMNI.forbidden_streak, OMNI.forbidden_pause) == (3, DAY)
    assert (YOTTA.retry_after_min, YOTTA.retry_after_max, YOTTA.absent_first, YOTTA.absent_max) == (60, DAY, 300, 300)
    assert (SERENE.retries, SERENE.retry_delays, SERENE.temporary_hold) == (3, (30, 60, 120), HOUR)
    assert (SERENE.gone_memory, SERENE.slow_hold, SERENE.retry_after_max) == (30 * DAY, 7 * DAY, 7 * DAY)
    assert (SERENE.feed_first, SERENE.feed_factor, SERENE.feed_max) == (900, 2, DAY)
    assert SERENE.max_wait >= sum(SERENE.retry_delays[-1:])  # its retries wait within the crawl
    assert (SYNAPSE.max_wait, SYNAPSE.jitter) == (600, 0.25)
    assert all(p.slow_statuses == {429, 503} for p in (SYNAPSE, SNAGA, SERENE, OMNI, YOTTA))
    assert BackoffPolicy().retries == 3


# What outlives a crawl: the store


def test_store_keeps_site_pauses_streaks_and_url_holds(tmp_path: Path) -> None:
    """OMN-PAUSE, SER-ERRORS, SNA-429: a site's pause and streaks, and a URL's hold (a 404 remembered,
    a deferred retry), are kept per profile and read back by the next crawl from the same file."""
    path = tmp_path / "kb.sqlite3"
    store = SQLiteStore(path)
    store.put_site_state("omniscientebot", SiteState("example.com", NOW + DAY, "403 answers in a row", 0, 0))
    store.put_site_state("omniscientebot", SiteState("example.org", 0.0, "", 2, 1))
    store.put_url_hold("serenereader", UrlHold("https://a.test/x", "gone", NOW + 30 * DAY, "404", "a.test", "news"))
    store.put_url_hold("serenereader", UrlHold("https://a.test/y", "deferred", NOW + HOUR, "500", "a.test"))
    store.put_url_hold(
        "serenereader", UrlHold("https://a.test/y", "deferred", NOW + 2 * HOUR, "500", "a.test", failures=3)
    )
    store.close()

    store = SQLiteStore(path)
    try:
        assert store.get_site_state("omniscientebot", "example.com") == SiteState(
            "example.com", NOW + DAY, "403 answers in a row", 0, 0
        )
        assert store.get_site_state("omniscientebot", "example.org") == SiteState("example.org", 0.0, "", 2, 1)
        assert store.get_site_state("snagabot", "example.com") is None  # each profile keeps its own
        assert [h.url for h in store.url_holds("serenereader")] == ["https://a.test/y", "https://a.test/x"]
        assert [h.url for h in store.url_holds("serenereader", "gone")] == ["https://a.test/x"]
        held = store.get_url_hold("serenereader", "https://a.test/y")
        assert held is not None
        assert (held.until, held.failures) == (NOW + 2 * HOUR, 3)  # replaced, not duplicated
        assert store.delete_url_hold("serenereader", "https://a.test/y")
        assert not store.delete_url_hold("serenereader", "https://a.test/y")
        assert store.get_url_hold("serenereader", "https://a.test/y") is None
        assert store.url_holds("yottabot") == []
    finally:
        store.close()
