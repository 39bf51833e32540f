"""Every request meta key the crawler writes or reads, in one table: does it belong to one download, may it travel?

``META`` has a row per key, ours and the ones Scrapy and scrapy-playwright define that we set or read.
``per_download``: it describes one download (its slot, its timing, a decision about its answer), so a
retry or a request sent back to the queue drops it, and a shared crawl never sends it to Redis.
``travels``: its value is plain JSON, so a shared crawl may send it to Redis with its request; a request
carrying a key that does not travel stays in its worker. ``in_entry``: the shared frontier's entry
carries it in a field of its own, so it is left out of the meta sent. ``PER_DOWNLOAD`` and
``LEFT_OUT_OF_ENTRY`` are derived from the table; tests/core/test_meta.py checks that every literal
meta key in the code is a row. The request kind's key is ``kinds.KIND``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from synapsecrawl.crawl.kinds import KIND

__all__ = [
    "BEFORE_ROBOTS",
    "JUDGED",
    "LEAD_SECONDS",
    "LEASE",
    "LEFT_OUT_OF_ENTRY",
    "META",
    "ORIGIN",
    "PACING_GRANTED",
    "PACING_LEASE",
    "PER_DOWNLOAD",
    "RENDER_STATE",
    "ROBOTS_TOOK_START",
    "SKIP_CRAWL_DELAY",
    "TURN",
    "WEB_SITE",
    "MetaKey",
    "drop_per_download",
]

# A site is handed out this long before it is due: the request's way through the middlewares
# (robots.txt check, backoff gate) then overlaps the wait, and the slot's own timer still decides the start.
# Kept here, beside TURN, because both queues (the local one and the shared crawl's) and the gate use it.
LEAD_SECONDS = 0.05

TURN = "pacing_turn"  # handed out by a queue when its site was due, so the pacing gate may send it back
PACING_LEASE = "pacing_lease"  # the start the shared pacer granted (PACING_REDIS_URL), given back on the answer
PACING_GRANTED = "pacing_granted"  # the shared frontier's lease holds the pacer's start: the downloader does not ask
# PACING_GRANTED's value for a start granted before the site's robots.txt was read: the robots.txt fetch takes it
BEFORE_ROBOTS = "before_robots"
ROBOTS_TOOK_START = "robots_took_start"  # its start went to its site's robots.txt: it goes back to the frontier
SKIP_CRAWL_DELAY = "pacing_skip_crawl_delay"  # the site's Crawl-delay does not hold it (a feed's first add)
JUDGED = "backoff_judged"  # the answer's backoff decision, made at download time, settled by the retry middleware
LEASE = "frontier_lease"  # [site, stream id] of the shared frontier's lease the request holds
ORIGIN = "frontier"  # {"src", "cb", "eb"}: the source and callbacks a shared crawl's request was queued with
RENDER_STATE = "render_state"  # what a rendered page's init callback needs
WEB_SITE = "web_site"  # the pacing site a web crawl released the request for, until answered (spiders.web)


@dataclass(frozen=True)
class MetaKey:
    """What one meta key is, for retries, the pacing gate and a shared crawl's Redis."""

    per_download: bool
    travels: bool
    owner: Literal["synapsecrawl", "scrapy", "scrapy-playwright"] = "synapsecrawl"
    in_entry: bool = False


_OURS = MetaKey(per_download=False, travels=True)
_OURS_LOCAL = MetaKey(per_download=False, travels=False)  # an object or a tuple: not JSON
_DOWNLOAD = MetaKey(per_download=True, travels=True)
_SCRAPY = MetaKey(per_download=False, travels=True, owner="scrapy")
_PLAYWRIGHT = MetaKey(per_download=False, travels=True, owner="scrapy-playwright")

META: Mapping[str, MetaKey] = {
    KIND: _OURS,
    # one download's
    TURN: _DOWNLOAD,
    PACING_LEASE: _DOWNLOAD,
    PACING_GRANTED: _DOWNLOAD,
    ROBOTS_TOOK_START: _DOWNLOAD,
    JUDGED: MetaKey(per_download=True, travels=False),
    "gate_refused_type": _DOWNLOAD,  # the type gate refused the answer's Content-Type
    "size_truncated": _DOWNLOAD,  # the answer was cut at its size limit
    "download_slot": MetaKey(per_download=True, travels=True, owner="scrapy"),
    "download_latency": MetaKey(per_download=True, travels=True, owner="scrapy"),
    "download_timeout": MetaKey(per_download=True, travels=True, owner="scrapy"),
    # the shared frontier's, carried by its entry
    LEASE: MetaKey(per_download=False, travels=True, in_entry=True),
    ORIGIN: MetaKey(per_download=False, travels=True, in_entry=True),
    # pacing and backoff
    SKIP_CRAWL_DELAY: _OURS,
    "dont_backoff": _OURS,  # not judged by the backoff (a side fetch that must not pause its site)
    "backoff_retries": _OURS,  # how many times this URL was retried
    "backoff_held": _OURS,  # an earlier crawl's hold on it is due: released once answered
    # robots.txt, re-reads, the budget, the summary
    "robots_disallowed": _OURS,
    "robots_outcome": _OURS,
    "reread_url": _OURS,
    "reread_moved": _OURS,
    "reread_noindex": _OURS,
    "reread_fetched_at": _OURS,  # the stored copy's fetch time (ISO 8601): a 304's WARC revisit refers to it
    "reread_outlinks": _OURS_LOCAL,
    "budget_counted": _OURS,
    "summary_counts_failure": _OURS,
    # sizes
    "size_limit_bytes": _OURS,
    "decompressed_limit_bytes": _OURS,
    # labels, feeds, the on-demand spider
    "tdmrep_file": _OURS_LOCAL,
    "page_labels": _OURS_LOCAL,
    "feed_url": _OURS,
    "feed_first_add": _OURS,
    "feed_entry": _OURS_LOCAL,
    "site_icon": _OURS_LOCAL,
    "ondemand_key": _OURS,
    "sitemap_nesting": _OURS,
    RENDER_STATE: _OURS_LOCAL,
    WEB_SITE: _OURS,
    # Scrapy's own, which we set or read
    "depth": _SCRAPY,
    "depth_reset": _SCRAPY,
    "dont_obey_robotstxt": _SCRAPY,
    "dont_redirect": _SCRAPY,
    "dont_retry": _SCRAPY,
    "max_retry_times": _SCRAPY,
    "download_maxsize": _SCRAPY,
    "handle_httpstatus_all": _SCRAPY,
    "handle_httpstatus_list": _SCRAPY,
    "redirect_urls": _SCRAPY,
    "redirect_reasons": _SCRAPY,
    "redirect_ttl": _SCRAPY,
    # scrapy-playwright's
    "playwright": _PLAYWRIGHT,
    "playwright_context": _PLAYWRIGHT,
    "playwright_context_kwargs": _PLAYWRIGHT,
    "playwright_include_page": _PLAYWRIGHT,
    "playwright_page_goto_kwargs": _PLAYWRIGHT,
    "playwright_page_init_callback": MetaKey(per_download=False, travels=False, owner="scrapy-playwright"),
    "playwright_page_methods": MetaKey(per_download=False, travels=False, owner="scrapy-playwright"),
    "playwright_page": MetaKey(per_download=False, travels=False, owner="scrapy-playwright"),
}

PER_DOWNLOAD: frozenset[str] = frozenset(key for key, row in META.items() if row.per_download)
# Never in the meta a shared crawl sends to Redis: one download's, or carried by the entry itself.
LEFT_OUT_OF_ENTRY: frozenset[str] = frozenset(key for key, row in META.items() if row.per_download or row.in_entry)


def drop_per_download(meta: Mapping[str, object]) -> dict[str, object]:
    """``meta`` without the keys that describe one download: for a retry or a request sent back to its queue."""
    return {key: value for key, value in meta.items() if key not in PER_DOWNLOAD}
