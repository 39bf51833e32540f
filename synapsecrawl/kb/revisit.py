"""When a stored page is due again: an interval per page that follows how often it changes.

Bounded multiplicative adaptation (as StormCrawler's AdaptiveScheduler and Nutch's AdaptiveFetchSchedule):
a page found changed comes back in half its interval, one found unchanged (a 304, or the same title and
text) in 1.5 times it, always within the rule's bounds; a page never stored before starts at the profile's
re-read interval (``REREAD_DAYS`` or ``reread_days``). Why not Cho and Garcia-Molina's estimators: they need
each page's history of visits and changes, which the KB does not keep, and on a page visited a few times
they are no better than this; this needs only the last interval, converges to about the page's change
interval, and its bounds keep a page that changes on every visit from being fetched more than daily.

The rule is the profile's (``rule_of``): a profile that crawls the web adapts within its ``[web] revisit``
``min_days`` and ``max_days``; one that does not (SynapseBot, SereneReader) keeps its fixed re-read
interval, its bounds both that interval, because its page promises a re-read on that schedule
(SYN-REREAD: every 7 days; SereneReader's feeds daily), not one that stretches to a month.

The KB keeps each page's ``revisit_interval``, ``revisit_due`` (unix seconds) and ``revisit_outcome``
("new", "changed", "unchanged"), written with the page in one transaction (``kb.rows``). A page stored
before those columns has none: it is due its profile's interval after its last fetch or 304 (``due_of``),
and its next fetch adapts from that interval. Times are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Protocol

from synapsecrawl.kb.records import PageRecord

__all__ = [
    "DAY",
    "LENGTHEN",
    "REVISIT_COLUMNS",
    "SHORTEN",
    "Outcome",
    "Revisit",
    "RevisitRule",
    "due_of",
    "last_seen",
    "next_revisit",
    "outcome_of",
    "revisited",
    "rule_of",
    "source_due",
]

DAY = 86400.0
SHORTEN = 0.5
LENGTHEN = 1.5

Outcome = Literal["new", "changed", "unchanged"]

# The pages table's columns for it, added to a KB on open (an older KB's pages hold NULL: ``due_of``); one
# declaration both back-ends read as a float (SQLite: REAL affinity).
REVISIT_COLUMNS = (
    ("revisit_interval", "DOUBLE PRECISION"),
    ("revisit_due", "DOUBLE PRECISION"),
    ("revisit_outcome", "TEXT"),
)


class _WebBounds(Protocol):
    """What ``rule_of`` reads of a profile's web policy (``synapsecrawl.profiles.WebPolicy``)."""

    @property
    def crawl(self) -> str: ...
    @property
    def revisit_min_days(self) -> float: ...
    @property
    def revisit_max_days(self) -> float: ...


@dataclass(frozen=True)
class RevisitRule:
    """A page's first interval and the bounds of every later one, in seconds."""

    first: float
    low: float
    high: float

    @classmethod
    def fixed(cls, interval: float) -> RevisitRule:
        """One interval for every page, changed or not."""
        return cls(interval, interval, interval)

    @property
    def adaptive(self) -> bool:
        """Whether a page's interval follows its changes (else every page keeps ``first``)."""
        return self.low < self.high


def rule_of(web: _WebBounds, first: float) -> RevisitRule:
    """The rule of a profile whose web policy is ``web`` and whose re-read interval is ``first`` seconds."""
    if web.crawl == "refused":
        return RevisitRule.fixed(first)
    return RevisitRule(first, web.revisit_min_days * DAY, web.revisit_max_days * DAY)


@dataclass(frozen=True)
class Revisit:
    """A page's interval (seconds) and when it is next due (epoch seconds)."""

    interval: float
    due: float


def next_revisit(rule: RevisitRule, outcome: Outcome, *, now: float, interval: float | None) -> Revisit:
    """The page's next interval after a fetch at ``now`` with ``outcome``; ``interval`` is its last one (None
    for a page that has none: a new one, or one stored before the KB kept intervals, which starts from
    ``rule.first``)."""
    base = rule.first if interval is None else interval
    if outcome == "new":
        chosen = rule.first
    elif outcome == "changed":
        chosen = base * SHORTEN
    else:
        chosen = base * LENGTHEN
    chosen = min(rule.high, max(rule.low, chosen))
    return Revisit(chosen, now + chosen)


def outcome_of(stored: tuple[str, str] | None, page: PageRecord) -> Outcome:
    """What a fetch found, from the stored copy's (title, text) before ``page`` replaces it."""
    if stored is None:
        return "new"
    return "unchanged" if stored == (page.title, page.text) else "changed"


def last_seen(page: PageRecord) -> float:
    """When the copy was last fetched or confirmed by a 304, unix seconds."""
    times = [page.fetched_at.timestamp()]
    if page.verified_at is not None:
        times.append(page.verified_at.timestamp())
    return max(times)


def revisited(
    page: PageRecord, stored: tuple[str, str] | None, interval: float | None, rule: RevisitRule
) -> PageRecord:
    """``page`` with its next interval, due time and outcome, from the stored copy it replaces (its
    (title, text) and interval; None when there is none): timed from the page's own fetch."""
    outcome = outcome_of(stored, page)
    revisit = next_revisit(rule, outcome, now=last_seen(page), interval=interval)
    return replace(page, revisit_interval=revisit.interval, revisit_due=revisit.due, revisit_outcome=outcome)


def due_of(page: PageRecord, first: float) -> float:
    """When a stored page is due again: its own due time, or, stored before the KB kept one, ``first``
    seconds (its profile's re-read interval) after its last fetch or 304."""
    if page.revisit_due is not None:
        return page.revisit_due
    return last_seen(page) + first


def source_due(earliest: float | None, *, now: float, rule: RevisitRule, interval: float) -> float:
    """When a source whose crawl ran its course at ``now`` is due again, from the earliest due time of its
    stored pages (None: it stored none, and waits its ``interval``): never sooner than ``rule.low``, so a
    page that failed is not asked for again within the hour, every hour. A fixed rule keeps ``interval``."""
    if not rule.adaptive or earliest is None:
        return now + interval
    return max(now + rule.low, earliest)
