"""When a stored page is fetched again: an interval per page that follows how often it changes.

Bounded multiplicative adaptation (as StormCrawler's AdaptiveScheduler and Nutch's AdaptiveFetchSchedule):
a page found changed comes back in half the interval, one found unchanged (a 304, or the same text) in
1.5 times it, always within ``revisit_min_days`` and ``revisit_max_days`` (``WebPolicy``). Why not Cho and
Garcia-Molina's estimators: they need each page's history of visits and changes, which the KB does not
keep, and on a page visited a few times they are no better than this; this needs only the last interval,
converges to about the page's change interval, and its bounds keep a page that changes on every visit from
being fetched more than daily. A page never seen before starts at the profile's re-read interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from synapsecrawl.profiles import WebPolicy

__all__ = ["DAY", "LENGTHEN", "SHORTEN", "Revisit", "next_revisit"]

DAY = 86400.0
SHORTEN = 0.5
LENGTHEN = 1.5

_Outcome = Literal["changed", "unchanged", "new"]


@dataclass(frozen=True)
class Revisit:
    """A page's interval (seconds) and when it is next due (epoch seconds)."""

    interval: float
    due: float


def next_revisit(policy: WebPolicy, outcome: _Outcome, *, now: float, interval: float | None, first: float) -> Revisit:
    """The page's next interval after a fetch at ``now`` with ``outcome``; ``interval`` is its last one (None
    for a page never revisited, which starts at ``first``, the profile's re-read interval)."""
    low, high = policy.revisit_min_days * DAY, policy.revisit_max_days * DAY
    if outcome == "new" or interval is None:
        chosen = first
    elif outcome == "changed":
        chosen = interval * SHORTEN
    else:
        chosen = interval * LENGTHEN
    chosen = min(high, max(low, chosen))
    return Revisit(chosen, now + chosen)
