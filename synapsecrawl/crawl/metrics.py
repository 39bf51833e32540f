"""A crawl's figures as Prometheus metric families, read from its stats when scraped.

Nothing is counted twice: the crawl already keeps its counts in Scrapy's stats (and its summary, copied
into them); ``families`` names them for Prometheus at scrape time. Stats with a trailing label (a status,
a failure kind, a removal reason) become one family with that label; every other number is exported
as ``synapsecrawl_stat{name=...}`` so nothing a crawl counts is out of sight. Durations (KB writes, Redis
calls) are prometheus_client histograms of the adapter, middlewares.engine.metrics (METRICS_PORT).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["BUCKETS", "Family", "families"]

# (stat prefix, family, type, help, label): one family per counted thing, labelled by the stat's last part
_LABELLED = (
    ("downloader/response_status_count/", "synapsecrawl_responses_total", "counter", "Answers by status", "status"),
    ("summary/failed/", "synapsecrawl_failures_total", "counter", "Downloads with no usable answer", "kind"),
    ("summary/skipped/", "synapsecrawl_skipped_total", "counter", "Pages not kept, by reason", "reason"),
    ("reread/removed/", "synapsecrawl_removed_total", "counter", "Pages removed from the KB, by reason", "reason"),
    ("backoff/", "synapsecrawl_backoff_total", "counter", "Backoff events (pauses, holds, retries)", "event"),
)
_NAMED = {
    "downloader/request_count": ("synapsecrawl_requests_total", "counter", "Requests sent"),
    "downloader/response_count": ("synapsecrawl_fetched_total", "counter", "Answers received"),
    "kb/stored": ("synapsecrawl_stored_total", "counter", "Pages committed to the KB"),
    "kb/held": ("synapsecrawl_held_pages", "gauge", "Pages fetched and waiting for the KB"),
    "frontier/depth": ("synapsecrawl_frontier_depth", "gauge", "URLs waiting in the shared frontier"),
}
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True)
class Family:
    """One metric family: its samples as (labels, value)."""

    name: str
    kind: str  # "counter", "gauge" or "histogram"
    help: str
    samples: tuple[tuple[tuple[tuple[str, str], ...], float], ...]


def families(stats: Mapping[str, object]) -> list[Family]:
    """The metric families of a crawl's ``stats`` (numbers only; times and texts are not figures)."""
    numbers = {k: float(v) for k, v in stats.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    out: list[Family] = []
    taken: set[str] = set()
    for prefix, name, kind, text, label in _LABELLED:
        samples = tuple(
            (((label, key[len(prefix) :]),), value) for key, value in sorted(numbers.items()) if key.startswith(prefix)
        )
        taken.update(key for key in numbers if key.startswith(prefix))
        if samples:
            out.append(Family(name, kind, text, samples))
    for key, (name, kind, text) in _NAMED.items():
        if key in numbers:
            out.append(Family(name, kind, text, (((), numbers[key]),)))
            taken.add(key)
    rest = tuple(((("name", key),), value) for key, value in sorted(numbers.items()) if key not in taken)
    if rest:
        out.append(Family("synapsecrawl_stat", "gauge", "Every other figure of the crawl's stats", rest))
    return out
