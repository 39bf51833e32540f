"""Re-reads: what a stored copy asks of its server, what the answer does to it, and when a source is due.

A stored page's validators go out as a conditional request (RFC 9110 §13.1):
``If-None-Match`` with its ETag, else ``If-Modified-Since`` with its
Last-Modified exactly as the server sent it (§13.1.3), never both (SYN-REREAD,
YOT-COND, SER-COND). A 304 keeps the copy and marks it verified; a 2xx
replaces it; 404 and 410 remove it (SYN-REMOVE); any other answer or none at
all keeps it.

A source is what a KB user added (mode, URLs, KB, limits). Its crawl records
when it ended; it is due again ``interval`` seconds later (the profile's
``reread_days``, or the operator's ``REREAD_DAYS``). Times are unix seconds,
passed in.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from synapsecrawl.kb.records import Source
from synapsecrawl.numbers import read_number

__all__ = [
    "DAY",
    "FINISHED_REASONS",
    "HOLD_RENEWAL",
    "REMOVING_STATUSES",
    "RETRY_AFTER_FAILURE",
    "RUNNING",
    "Effect",
    "Plan",
    "after_failure",
    "claim",
    "conditional_headers",
    "effect_of",
    "fetched_in_run",
    "is_due",
    "plan",
    "record_crawl",
    "reread_interval",
    "run_start",
    "source_id",
]

DAY = 86400.0
REMOVING_STATUSES = frozenset({404, 410})  # SYN-REMOVE: gone, and said so
RETRY_AFTER_FAILURE = 3600.0  # a crawl that did not finish, or did not start, is tried again an hour later
RUNNING = "running"  # the outcome a crawl records while it runs, renewed every HOLD_RENEWAL seconds
HOLD_RENEWAL = 600.0
# Scrapy's close reasons of a crawl that ran its course: its frontier ran out, or its page budget did. Any
# other (shutdown, cancelled, closespider_timeout, memusage_exceeded, ...) left pages unread.
FINISHED_REASONS = frozenset({"finished", "closespider_pagecount"})

Effect = Literal["unchanged", "replace", "remove", "keep"]


def conditional_headers(etag: str, last_modified: str) -> dict[str, str]:
    """The validator headers for a stored copy: If-None-Match, else If-Modified-Since."""
    if etag.strip():
        return {"If-None-Match": etag.strip()}
    if last_modified.strip():
        return {"If-Modified-Since": last_modified.strip()}
    return {}


def effect_of(status: int) -> Effect:
    """What an answer with ``status`` does to a stored copy of the page."""
    if status == 304:
        return "unchanged"
    if status in REMOVING_STATUSES:
        return "remove"
    if 200 <= status < 300:
        return "replace"
    return "keep"  # 5xx, 429, 403, ...: a failure never removes a page


def source_id(mode: str, urls: Sequence[str], kb: str, profile: str, deployment: str) -> str:
    """A stable id for a source: the same request in the same KB under the same profile."""
    key = json.dumps([mode, list(urls), kb, profile, deployment], separators=(",", ":"))
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def reread_interval(setting: object, profile_days: float) -> float:
    """Seconds between re-reads: ``REREAD_DAYS`` when the operator set it, else the profile's."""
    if setting in (None, ""):
        return profile_days * DAY
    return read_number("REREAD_DAYS", setting, positive=True) * DAY


def record_crawl(
    previous: Source | None,
    *,
    mode: str,
    urls: Sequence[str],
    kb: str,
    profile: str,
    deployment: str,
    depth: str | None,
    max_pages: str | None,
    interval: float,
    reason: str,
    now: float,
    run_started: float = 0.0,
) -> Source:
    """The source after a crawl of it closed for ``reason`` (Scrapy's finish reason) at ``now``.

    A crawl that ran its course (its frontier done, or its page budget spent)
    is recorded as the last crawl and sets the next re-read ``interval`` later;
    one that closed for any other reason is not a last crawl, and is retried
    sooner. A crawl records ``RUNNING`` as it starts and renews it while it
    runs: a crawl killed outright is then due again within the hour, and one
    still running is not due.
    """
    ident = source_id(mode, urls, kb, profile, deployment)
    base = previous or Source(
        id=ident, mode=mode, urls=tuple(urls), kb=kb, profile=profile, deployment=deployment, added_at=now
    )
    source = replace(base, depth=depth or "", max_pages=max_pages or "", interval=interval, outcome=reason)
    if run_started:
        source = replace(source, run_started=run_started)
    if reason not in FINISHED_REASONS:
        return replace(source, next_due=now + min(RETRY_AFTER_FAILURE, interval))
    return replace(source, last_crawl=now, next_due=now + interval)


def run_start(previous: Source | None, now: float) -> float:
    """When the run of its source that a crawl starting at ``now`` belongs to began.

    A run that never finished (killed, stopped, its KB down: its start is after the last finished crawl)
    goes on, so what it already fetched is not asked for again; otherwise the crawl starts a new run,
    a re-read, which asks for every page again (conditionally).
    """
    if previous is not None and previous.run_started > previous.last_crawl:
        return previous.run_started
    return now


def fetched_in_run(fetched_at: float, verified_at: float | None, run_started: float) -> bool:
    """Whether a stored copy fetched (or confirmed by a 304) at these unix times came in the run that began
    at ``run_started``: stored times are whole seconds, so the run's own second counts."""
    return max(fetched_at, verified_at or 0.0) >= math.floor(run_started)


def is_due(source: Source, now: float) -> bool:
    """Whether ``source`` should be re-read at ``now``."""
    return now >= source.next_due


def claim(source: Source, now: float, outcome: str) -> Source:
    """``source`` as started at ``now``: not due again before its interval, whatever becomes of the crawl."""
    return replace(source, next_due=now + source.interval, outcome=outcome)


def after_failure(source: Source, now: float, outcome: str) -> Source:
    """``source`` after its crawl could not run: tried again within the hour."""
    return replace(source, next_due=now + min(RETRY_AFTER_FAILURE, source.interval), outcome=outcome)


@dataclass(frozen=True)
class Plan:
    """The sources to re-read now, and those that wait, each earliest due first."""

    due: tuple[Source, ...]
    waiting: tuple[Source, ...]


def plan(sources: Sequence[Source], now: float) -> Plan:
    """Split ``sources`` into those due at ``now`` and those not yet due."""
    ordered = sorted(sources, key=lambda s: (s.next_due, s.id))
    return Plan(tuple(s for s in ordered if is_due(s, now)), tuple(s for s in ordered if not is_due(s, now)))
