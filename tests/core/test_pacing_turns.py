"""The frontier's site order, the event-loop lag meter, and arrival bounds under lag, time passed in."""

from __future__ import annotations

import pytest

from synapsecrawl.pacing.clock import LagMeter, SiteTurns, reached_server_by


def test_sites_come_out_in_the_order_they_fall_due() -> None:
    """SYN-RATE, ALL-CD: a site is handed out only once due; the earliest due first."""
    turns = SiteTurns()
    turns.add("b.test", 2.0)
    turns.add("a.test", 1.0)
    assert turns.take(0.5, lambda site: {"a.test": 1.0, "b.test": 2.0}[site]) is None
    assert turns.next_due() == 1.0
    assert turns.take(2.5, lambda site: 0.0) == "a.test"
    assert turns.take(2.5, lambda site: 0.0) == "b.test"
    assert len(turns) == 0 and turns.next_due() is None


def test_a_site_whose_due_time_moved_goes_back_in_line() -> None:
    """OMN-PAUSE, SNA-SLOW: a pause or a longer spacing set after the site was queued holds it."""
    turns = SiteTurns()
    turns.add("a.test", 0.0)
    assert turns.take(1.0, lambda site: 5.0) is None
    assert "a.test" in turns and turns.next_due() == 5.0
    assert turns.take(5.0, lambda site: 5.0) == "a.test"


def test_a_busy_site_is_dropped_until_added_again() -> None:
    """SYN-RATE: a site with its request in flight is not handed out; it returns when added back."""
    turns = SiteTurns()
    turns.add("a.test", 0.0)
    assert turns.take(1.0, lambda site: None) is None
    assert "a.test" not in turns
    turns.add("a.test", 0.5)
    assert turns.take(1.0, lambda site: 0.5) == "a.test"


def test_a_site_is_held_once_and_a_discarded_one_never_comes_out() -> None:
    """A site added twice keeps its first place; a discarded site's stale entry is skipped."""
    turns = SiteTurns()
    turns.add("a.test", 1.0)
    turns.add("a.test", 0.0)
    assert turns.take(0.5, lambda site: 0.0) is None
    turns.discard("a.test")
    assert turns.take(9.0, lambda site: 0.0) is None
    turns.add("a.test", 3.0)
    assert turns.take(9.0, lambda site: 0.0) == "a.test"
    assert turns.take(9.0, lambda site: 0.0) is None


def test_the_lag_meter_keeps_a_recent_maximum_that_fades() -> None:
    """A busy event loop is remembered for a while, then forgotten (half-life)."""
    meter = LagMeter(half_life=0.5)
    assert meter.value(0.0) == 0.0
    meter.record(0.4, now=10.0)
    meter.record(0.01, now=10.02)
    assert meter.value(10.02) == pytest.approx(0.4 * 0.5 ** (0.02 / 0.5))
    assert meter.value(10.52) == pytest.approx(0.2, rel=0.05)
    assert meter.value(20.0) < 0.001


@pytest.mark.parametrize(
    ("dispatched", "answered", "spacing", "lag", "expected"),
    [
        (10.0, 13.0, 1.0, 0.0, 10.25),  # an idle loop: a slow server stretches a gap by a quarter spacing at most
        (10.0, 13.0, 1.0, 0.5, 10.75),  # a lagging loop may have sent late: the bound widens by the lag
        (10.0, 10.6, 1.0, 2.0, 10.6),  # and never past the answer, which came after the arrival
    ],
)
def test_loop_lag_widens_the_arrival_bound(
    dispatched: float, answered: float, spacing: float, lag: float, expected: float
) -> None:
    """SYN-RATE, ALL-CD: a request our own busy loop held back still counts from when it could have arrived."""
    assert reached_server_by(dispatched, answered, spacing, loop_lag=lag) == pytest.approx(expected)


def test_of_the_sites_due_the_most_valuable_goes_first_and_a_site_not_due_waits_whatever_its_value() -> None:
    """OMN-SITE, SNA-RATE (the web crawl, Mercator's front queues): with values, the queue hands out the
    most valuable of the sites due by now; a more valuable site that is not due yet still waits its turn
    (politeness decides when, value only which), and a site dropped meanwhile is not handed out."""
    turns = SiteTurns()
    due = {"a.test": 0.0, "b.test": 0.0, "c.test": 0.0, "d.test": 50.0}
    value = {"a.test": 1.0, "b.test": 9.0, "c.test": 5.0, "d.test": 100.0}
    for site, at in due.items():
        turns.add(site, at)
    taken = [turns.take(10.0, due.get, value.get) for _ in range(3)]
    assert taken == ["b.test", "c.test", "a.test"]
    assert turns.take(10.0, due.get, value.get) is None and turns.next_due() == 50.0
    assert turns.take(50.0, due.get, value.get) == "d.test"
    for site in ("a.test", "b.test"):
        turns.add(site, 60.0)
    due.update({"a.test": 60.0, "b.test": 60.0})
    assert turns.take(60.0, due.get, value.get) == "b.test"
    turns.discard("a.test")
    assert turns.take(60.0, due.get, value.get) is None
