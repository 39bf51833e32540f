"""Backoff: what to do when a server says "slow down" or fails.

One decision per response (or failed fetch): pause the whole site until a
time, retry this URL after a wait, leave the site to the next crawl, or hold
the URL (a remembered 404, a deferred retry). The curves are data, a
profile's ``BackoffPolicy``; this module turns them, the site's recent
history and one response into a ``Decision``. Applying it (the pacer, the
store, Scrapy) is the adapter's part.

Time is passed in: ``now`` is unix seconds (``time.time()``), because a
Retry-After may be an HTTP date (RFC 9110 §10.2.3); every wait in a decision
is seconds from ``now``. Randomness (jitter) is passed in too.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from email.utils import parsedate_tz
from typing import Literal

from synapsecrawl.profiles import BackoffPolicy

__all__ = [
    "Decision",
    "HoldKind",
    "SiteHistory",
    "absent_pause",
    "decide",
    "feed_retry_delay",
    "parse_retry_after",
    "slow_spacing",
]

HoldKind = Literal["gone", "deferred"]

# Past this a stated wait is no longer a number anyone meant; the profile's cap applies.
_HUGE = 10.0**12
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_PERMANENT = frozenset({404, 410})


def parse_retry_after(value: str | bytes | None, now: float) -> float | None:
    """Seconds to wait that a Retry-After header asks for, or None when it says nothing usable.

    RFC 9110 §10.2.3: ``delay-seconds`` or an ``HTTP-date`` (IMF-fixdate, or the
    obsolete RFC 850 and asctime forms of §5.6.7). A date in the past means 0.
    Leniently, a decimal number of seconds is read too. Negative numbers, empty
    and unparsable values are None (treated as absent); never raises.
    """
    text = (value.decode("latin-1") if isinstance(value, bytes) else value or "").strip()
    if _NUMBER.fullmatch(text):
        return min(float(text), _HUGE)
    # "-5", "5s", "1e9", "": neither delay-seconds nor a date (each date form starts with a day name)
    parts = parsedate_tz(text) if text[:1].isalpha() else None
    if parts is None:
        return None
    try:
        # datetime() refuses a day 32 that parsedate_tz lets through
        when = datetime(*parts[:6], tzinfo=UTC).timestamp() - (parts[9] or 0)
    except (ValueError, OverflowError):
        return None
    return min(max(0.0, when - now), _HUGE)


def slow_spacing(factor: float, latency: float | None, cap: float) -> float:
    """The spacing a slow answer asks for: ``factor`` times its response time, at most ``cap`` (SNA-SLOW).

    0.0 when the profile promises nothing (factor 0) or the latency is unknown.
    """
    if not factor or latency is None or not math.isfinite(latency) or latency <= 0:
        return 0.0
    return min(factor * latency, cap)


@dataclass(frozen=True)
class SiteHistory:
    """What a site said lately; the store keeps it across crawls."""

    slow_streak: int = 0  # pauses in a row (429/503 or a Retry-After), for doubling
    forbidden_streak: int = 0  # 403 answers in a row


@dataclass(frozen=True)
class Decision:
    """What to do after one response or failed fetch. A default Decision does nothing."""

    reason: str = ""  # "429", "503", "retry-after", "403", "500", "404", an exception name
    site_wait: float = 0.0  # hold the whole site this long (0: no pause)
    leave_site: bool = False  # the pause is longer than a crawl may wait: leave the site to the next crawl
    retry_in: float | None = None  # fetch this URL again after this long, in this crawl
    hold: float = 0.0  # do not fetch this URL for this long (0: no hold)
    hold_kind: HoldKind = "deferred"  # "gone": remembered failure; "deferred": fetch it after the hold
    gave_up: bool = False  # this URL's retries are spent
    stated: float | None = None  # the Retry-After as read, before clamping
    history: SiteHistory = field(default_factory=SiteHistory)


def absent_pause(policy: BackoffPolicy, streak: int, rand: Callable[[], float] = random.random) -> float:
    """The pause for the ``streak``-th slow-down in a row when no Retry-After was stated.

    ``absent_first`` times ``absent_factor`` per repeat, up to ``absent_max``,
    then ± ``jitter`` of it (``rand()`` in [0, 1)). 0.0 when the policy pauses
    nothing without a Retry-After.
    """
    if policy.absent_first <= 0:
        return 0.0
    doublings = min(max(streak - 1, 0), 64)  # past 64 any curve has long reached its max
    base = min(policy.absent_first * policy.absent_factor**doublings, policy.absent_max)
    if policy.jitter:
        base *= 1 + policy.jitter * (2 * rand() - 1)
    return base


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def _is_temporary(status: int | None) -> bool:
    return status is None or status == 408 or 500 <= status < 600


def _judge_site(
    policy: BackoffPolicy,
    history: SiteHistory,
    status: int | None,
    stated: float | None,
    rand: Callable[[], float],
) -> tuple[str, float, SiteHistory]:
    """The site's part of a decision: (reason, pause, updated history)."""
    slow = status in policy.slow_statuses
    signal = slow or (policy.any_retry_after and stated is not None and status is not None)
    slow_streak, forbidden = history.slow_streak, history.forbidden_streak
    if signal:
        slow_streak += 1
    elif status is not None and status < 400:
        slow_streak = 0
    if status == 403:
        forbidden += 1
    elif status is not None:
        forbidden = 0
    reason, pause = "", 0.0
    if signal:
        reason = str(status) if slow else "retry-after"
        if stated is not None:
            pause = _clamp(stated, policy.retry_after_min, policy.retry_after_max)
        else:
            pause = absent_pause(policy, slow_streak, rand)
    if policy.forbidden_streak and forbidden >= policy.forbidden_streak:
        reason = reason or "403"
        pause = max(pause, policy.forbidden_pause)
        forbidden = 0
    return reason, pause, SiteHistory(slow_streak=slow_streak, forbidden_streak=forbidden)


def decide(
    policy: BackoffPolicy,
    history: SiteHistory,
    *,
    status: int | None,
    retry_after: str | bytes | None = None,
    retries: int = 0,
    now: float,
    max_wait: float | None = None,
    rand: Callable[[], float] = random.random,
) -> Decision:
    """Judge one answer from a site.

    ``status`` is None when no answer came (timeout, refused connection);
    ``retries`` is how often this URL was already retried in this crawl;
    ``max_wait`` lowers the policy's ``max_wait`` (an operator's choice).

    A 429/503 (or, under ``any_retry_after``, a Retry-After on any answer)
    pauses the site: the stated Retry-After clamped to the policy's bounds,
    else the absent curve. ``forbidden_streak`` 403s in a row pause it for
    ``forbidden_pause``. A pause longer than the crawl may wait leaves the site
    to the next crawl. The failed URL is retried after the pause (and its own
    ``retry_delays``) up to ``retries`` times, then held; 404/410 are held as
    "gone" for ``gone_memory``. Timeouts and 5xx are judged only when the
    policy owns ``temporary_errors``.
    """
    limit = policy.max_wait if max_wait is None else min(max_wait, policy.max_wait)
    stated = parse_retry_after(retry_after, now)
    reason, pause, history = _judge_site(policy, history, status, stated, rand)
    site = Decision(reason=reason, site_wait=pause, leave_site=pause > limit, stated=stated, history=history)
    slow = status in policy.slow_statuses
    if not slow and not (policy.temporary_errors and _is_temporary(status)):
        if status in _PERMANENT and policy.gone_memory > 0:
            return replace(site, reason=str(status), hold=policy.gone_memory, hold_kind="gone")
        return site
    # This URL failed: retry it in this crawl, or hold it for the next.
    site = replace(site, reason=reason or (str(status) if status is not None else "no answer"))
    if not slow:
        last_hold = policy.temporary_hold
    elif stated is not None:
        last_hold = _clamp(stated, policy.retry_after_min, policy.retry_after_max)
    else:
        last_hold = policy.slow_hold or pause
    if site.leave_site:
        return replace(site, hold=max(pause, last_hold))
    if retries >= policy.retries:
        return replace(site, hold=max(pause, last_hold), gave_up=True)
    own = policy.retry_delays[min(retries, len(policy.retry_delays) - 1)] if policy.retry_delays else 0.0
    retry_in = max(own, pause)
    if retry_in > limit:
        return replace(site, hold=max(retry_in, last_hold))
    return replace(site, retry_in=retry_in)


def feed_retry_delay(
    policy: BackoffPolicy,
    failures: int,
    *,
    status: int | None = None,
    retry_after: str | bytes | None = None,
    now: float,
) -> float:
    """How long after its ``failures``-th failed refresh in a row a feed is asked again (SER-FEED-BACKOFF).

    ``feed_first``, doubling (``feed_factor``) per failure up to ``feed_max``;
    after a 429, at least the stated Retry-After (up to ``retry_after_max``).
    0.0 after no failure: the feed's own schedule applies.
    """
    if failures <= 0:
        return 0.0
    doublings = min(failures - 1, 64)
    delay = min(policy.feed_first * policy.feed_factor**doublings, policy.feed_max)
    if status == 429:
        stated = parse_retry_after(retry_after, now)
        if stated is not None:
            delay = max(delay, min(stated, policy.retry_after_max))
    return delay
