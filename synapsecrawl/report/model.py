"""A crawl report's data: the request log and the crawl's stats, grouped per site.

``crawl_data`` returns plain JSON-ready dicts (the report's ``report.json``);
the HTML pages are drawn from exactly this data. Times are seconds since the
crawl started; a gap is the time between two successive request starts to
one site, what the site's own log would show.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from itertools import pairwise
from typing import Any

from synapsecrawl.crawl.requestlog import Event, RequestEvent, RobotsEvent, SiteEvent, SkipEvent, StoreEvent

__all__ = ["PAUSE_STATUSES", "crawl_data", "site_data"]

_TRUNCATED = "truncated"  # kept, but cut at the size cap (ALL-SIZE): told apart from the skips
PAUSE_STATUSES = frozenset({403, 429, 503})  # a server asking us to slow down or stop (backoff's statuses)


def _rounded(seconds: float) -> float:
    return round(seconds, 4)


def _is_pause(request: RequestEvent) -> bool:
    """A 403/429/503, or a Retry-After on any other non-2xx answer (OMN-PAUSE's "any Retry-After")."""
    status = request.status
    return status in PAUSE_STATUSES or (bool(request.retry_after) and status is not None and status >= 300)


def site_data(site: str, events: list[Event], profile_spacing: float) -> dict[str, Any]:
    """One site's requests, gaps, pauses, robots.txt reads, stores and skips."""
    requests = sorted((e for e in events if isinstance(e, RequestEvent)), key=lambda e: e.start)
    robots = sorted((e for e in events if isinstance(e, RobotsEvent)), key=lambda e: e.start)
    paced = next((e for e in events if isinstance(e, SiteEvent)), None)
    skipped: dict[str, list[str]] = defaultdict(list)
    stored: list[str] = []
    for event in events:
        if isinstance(event, SkipEvent):
            skipped[event.reason].append(event.url)
        elif isinstance(event, StoreEvent):
            stored.append(event.url)
    gaps = [
        {"start": _rounded(b.start), "gap": _rounded(b.start - a.start), "url": b.url} for a, b in pairwise(requests)
    ]
    pauses = [
        {"start": _rounded(r.start), "status": r.status, "retry_after": r.retry_after, "url": r.url}
        for r in requests
        if _is_pause(r)
    ]
    stated = [r.crawl_delay for r in robots if r.crawl_delay is not None]
    crawl_delay = paced.crawl_delay if paced is not None else (max(stated) if stated else None)
    return {
        "site": site,
        "profile_spacing": profile_spacing,
        "spacing": paced.spacing if paced is not None else profile_spacing,
        "crawl_delay": crawl_delay,
        "requests": [
            {
                "url": r.url,
                "kind": r.kind,
                "start": _rounded(r.start),
                "duration": _rounded(r.duration),
                "status": r.status,
                "bytes": r.bytes,
                "retry_after": r.retry_after,
            }
            for r in requests
        ],
        "gaps": gaps,
        "min_gap": _rounded(min(b.start - a.start for a, b in pairwise(requests))) if gaps else None,
        "pauses": pauses,
        "robots": [
            {
                "url": r.url,
                "start": _rounded(r.start),
                "status": r.status,
                "outcome": r.outcome,
                "allows_all": r.allows_all,
                "crawl_delay": r.crawl_delay,
            }
            for r in robots
        ],
        "stored": stored,
        "skipped": dict(sorted(skipped.items())),
        "totals": {
            "requests": len(requests),
            "pages": sum(1 for r in requests if r.kind == "page"),
            "bytes": sum(r.bytes for r in requests),
            "errors": sum(1 for r in requests if r.status is None or (r.status >= 500 and not _is_pause(r))),
            "pauses": len(pauses),
            "stored": len(stored),
            "skipped": sum(len(urls) for reason, urls in skipped.items() if reason != _TRUNCATED),
            "truncated": len(skipped.get(_TRUNCATED, [])),
        },
    }


def crawl_data(
    meta: dict[str, Any], stats: dict[str, Any], events: Iterable[Event], bad_lines: int = 0
) -> dict[str, Any]:
    """The whole report: the crawl's facts, its totals, and every site, busiest first."""
    by_site: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        by_site[event.site].append(event)
    spacing = float(meta.get("delay") or 0.0)
    sites = [site_data(site, site_events, spacing) for site, site_events in by_site.items()]
    sites.sort(key=lambda s: (-s["totals"]["requests"], s["site"]))
    keys = ("requests", "pages", "bytes", "errors", "pauses", "stored", "skipped", "truncated")
    totals: dict[str, Any] = {key: sum(s["totals"][key] for s in sites) for key in keys}
    totals["sites"] = len(sites)
    reasons: dict[str, int] = defaultdict(int)
    for site in sites:
        for reason, urls in site["skipped"].items():
            reasons[reason] += len(urls)
    totals["skipped_by_reason"] = dict(sorted(reasons.items()))
    return {"crawl": meta, "stats": stats, "totals": totals, "unreadable_log_lines": bad_lines, "sites": sites}
