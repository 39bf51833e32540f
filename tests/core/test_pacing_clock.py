"""The per-site pacer, with time passed in."""

from __future__ import annotations

import math

import pytest

from synapsecrawl.pacing.clock import (
    MARGIN,
    SiteClock,
    gap,
    next_start,
    reached_server_by,
    site_crawl_delay,
    spacing_for,
)


@pytest.mark.parametrize(
    ("delay", "crawl_delay", "cap", "expected"),
    [
        (1.0, None, 30.0, 1.0),
        (1.0, 2.5, 30.0, 2.5),  # decimals, longer: replaces the default spacing
        (1.0, 0.5, 30.0, 1.0),  # shorter never speeds us up
        (1.0, 100.0, 30.0, 30.0),  # capped
        (5.0, 10.0, 86400.0, 10.0),
        (1.0, math.nan, 30.0, 1.0),
        (1.0, -3.0, 30.0, 1.0),
        (1.0, 0.0, 30.0, 1.0),
    ],
)
def test_spacing_is_the_longer_of_delay_and_capped_crawl_delay(
    delay: float, crawl_delay: float | None, cap: float, expected: float
) -> None:
    """ALL-CD, SYN-CD, YOT-RATE: Crawl-delay replaces the default spacing when longer, up to the cap."""
    assert spacing_for(delay, crawl_delay, cap) == expected


def test_second_request_waits_out_the_interval_and_its_margin() -> None:
    """SYN-RATE: a site's next request starts a spacing plus the margin after its last start; a site
    with no start yet may start at once."""
    clock = SiteClock(delay=1.0, crawl_delay_cap=30.0)
    assert next_start(None, clock.spacing("a.test")) == 0.0
    assert next_start(0.0, clock.spacing("a.test")) == pytest.approx(1.0 + 0.01 + 0.005)
    assert next_start(10.0, 20.0) == pytest.approx(10.0 + 20.0 + 0.05 + 0.005)  # the proportional part is capped


@pytest.mark.parametrize("spacing", [0.0, 0.1, 1.0, 5.0, 30.0, 3600.0])
def test_the_gap_is_the_spacing_plus_one_margin(spacing: float) -> None:
    """ALL-CD: each gap carries a small margin over the spacing, never less than MARGIN.seconds and
    never more than MARGIN.cap + MARGIN.seconds."""
    extra = gap(spacing) - spacing
    assert MARGIN.seconds <= extra <= MARGIN.cap + MARGIN.seconds + 1e-12


@pytest.mark.parametrize(
    ("stated", "expected"),
    [([], None), ([None], None), ([None, 2.0], 2.0), ([1.0, 5.0, None, 3.0], 5.0)],
)
def test_a_sites_crawl_delay_is_the_longest_its_hosts_state(stated: list[float | None], expected: float | None) -> None:
    """OMN-CD, OMN-SITE: a site of many hosts is paced as one: the longest Crawl-delay among its hosts holds,
    and a host without one does not undo another's."""
    assert site_crawl_delay(stated) == expected


def test_crawl_delay_and_pause_hold_only_their_site() -> None:
    """ALL-CD, OMN-PAUSE: a site's Crawl-delay and pause apply to that site alone."""
    clock = SiteClock(delay=1.0, crawl_delay_cap=30.0)
    assert clock.set_crawl_delay("a.test", 2.5) == 2.5
    assert clock.spacing("a.test") == 2.5 and clock.spacing("b.test") == 1.0
    clock.pause("a.test", until=100.0)
    clock.pause("a.test", until=50.0)  # a shorter pause does not cut a longer one
    assert clock.paused_until("a.test") == 100.0 and clock.paused_until("b.test") == 0.0
    assert next_start(9.0, clock.spacing("a.test"), clock.paused_until("a.test")) == 100.0
    assert next_start(9.0, clock.spacing("b.test"), clock.paused_until("b.test")) == pytest.approx(10.015)


def test_spacing_without_crawl_delay_keeps_the_delay_and_a_slow_servers_spacing() -> None:
    """SER-ROBOTS-FEEDS: a request the Crawl-delay does not hold (a feed's first add) is
    still spaced by the crawl's delay and by a slow server's spacing (SNA-SLOW), never by the Crawl-delay."""
    clock = SiteClock(delay=1.0, crawl_delay_cap=60.0)
    clock.set_crawl_delay("a.test", 20.0)
    assert clock.spacing("a.test") == 20.0
    assert clock.spacing_without_crawl_delay("a.test") == 1.0
    clock.set_spacing("a.test", 7.0)
    assert clock.spacing_without_crawl_delay("a.test") == 7.0
    assert clock.spacing_without_crawl_delay("b.test") == 1.0


def test_slow_server_spacing_never_drops_below_the_delay() -> None:
    """SNA-SLOW: a longer spacing can be set for a slow site, never a shorter one."""
    clock = SiteClock(delay=1.0, crawl_delay_cap=30.0)
    clock.set_spacing("a.test", 0.2)
    assert clock.spacing("a.test") == 1.0
    clock.set_spacing("a.test", 7.0)
    assert clock.spacing("a.test") == 7.0


@pytest.mark.parametrize(
    ("dispatched", "answered", "spacing", "expected"),
    [
        (10.0, 10.03, 1.0, 10.03),  # a quick answer: count from it (covers a TLS handshake)
        (10.0, 13.0, 1.0, 10.25),  # a slow server stretches a gap by at most a quarter spacing
        (10.0, 30.0, 2.0, 10.5),
        (10.0, 30.0, 20.0, 11.0),  # and never by more than a second
    ],
)
def test_a_request_counts_as_arrived_by_its_answer_within_a_bound(
    dispatched: float, answered: float, spacing: float, expected: float
) -> None:
    """SYN-RATE, ALL-CD: gaps are measured as the server sees arrivals, not as we send."""
    assert reached_server_by(dispatched, answered, spacing) == pytest.approx(expected)
