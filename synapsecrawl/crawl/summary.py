"""The crawl summary: what was fetched, stored, skipped and failed, and why, per site.

A failed URL is one whose download got no usable answer (a timeout, a
connection closed or reset, an answer that is not HTTP, a body cut short);
it is counted under one of FAIL_KINDS.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["FAIL_KINDS", "SKIP_REASONS", "CrawlSummary"]

SKIP_REASONS = (
    "robots", "noindex", "scope", "type", "size", "limit", "scheme",
    "address", "paused", "error", "never", "duplicate", "binary",
    "trap", "budget",  # the web crawl's frontier (synapsecrawl.web)
)  # fmt: skip
FAIL_KINDS = (
    "timeout",  # no full answer within DOWNLOAD_TIMEOUT (a stall, a slow drip)
    "closed",  # the connection closed or was reset before any answer
    "malformed",  # the answer is not HTTP/1.x as RFC 9112 frames it (status line, Content-Length, chunks)
    "cut-short",  # the body ended before its Content-Length or last chunk
    "refused",  # nothing listens on the port
    "dns",  # the name does not resolve
    "tls",  # the TLS handshake failed
    "other",
)  # fmt: skip


@dataclass
class CrawlSummary:
    """Counters kept during one crawl; ``lines()`` renders them for the log."""

    fetched: Counter[str] = field(default_factory=Counter)
    stored: Counter[str] = field(default_factory=Counter)
    truncated: Counter[str] = field(default_factory=Counter)
    bounded: Counter[str] = field(default_factory=Counter)
    skipped: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    # told of each store and skip as (what, site, reason, url): the crawl report's request log listens here
    journal: Callable[[str, str, str, str], None] | None = None
    failed: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def fetch(self, site: str) -> None:
        """A page (not robots.txt) came back from ``site``."""
        self.fetched[site] += 1

    def store(self, site: str, url: str = "") -> None:
        """A page of ``site`` went into the knowledge base."""
        self.stored[site] += 1
        if self.journal is not None:
            self.journal("store", site, "", url)

    def truncate(self, site: str, url: str = "") -> None:
        """A page of ``site`` was read only up to the size cap; what came before it is kept (ALL-SIZE)."""
        self.truncated[site] += 1
        if self.journal is not None:
            self.journal("skip", site, "truncated", url)

    def bound(self, site: str) -> None:
        """A page of ``site`` was read only within extraction's bounds (extract.bounds); what they hold is kept."""
        self.bounded[site] += 1

    def skip(self, site: str, reason: str, url: str = "") -> None:
        """A URL of ``site`` was left out for ``reason`` (one of SKIP_REASONS)."""
        self.skipped[site][reason] += 1
        if self.journal is not None:
            self.journal("skip", site, reason, url)

    def fail(self, site: str, kind: str) -> None:
        """A URL of ``site`` got no usable answer, of ``kind`` (one of FAIL_KINDS)."""
        self.failed[site][kind] += 1

    def stats(self) -> dict[str, int]:
        """Flat counters for Scrapy's stats, as paths."""
        out = {"summary/fetched": sum(self.fetched.values()), "summary/stored": sum(self.stored.values())}
        if self.truncated:
            out["summary/truncated"] = sum(self.truncated.values())
        if self.bounded:
            out["summary/bounded"] = sum(self.bounded.values())
        for counts in self.skipped.values():
            for reason, n in counts.items():
                out[f"summary/skipped/{reason}"] = out.get(f"summary/skipped/{reason}", 0) + n
        for counts in self.failed.values():
            for kind, n in counts.items():
                out[f"summary/failed/{kind}"] = out.get(f"summary/failed/{kind}", 0) + n
        return out

    def lines(self) -> list[str]:
        """One line for the crawl, then one per site, sites in name order."""
        totals = self.stats()
        skipped = ", ".join(
            f"{k.rsplit('/', 1)[1]} {v}" for k, v in sorted(totals.items()) if k.startswith("summary/skipped/")
        )
        failed = ", ".join(
            f"{k.rsplit('/', 1)[1]} {v}" for k, v in sorted(totals.items()) if k.startswith("summary/failed/")
        )
        out = [
            f"crawl summary: fetched {totals['summary/fetched']}, stored {totals['summary/stored']}, "
            + (f"truncated {totals['summary/truncated']}, " if self.truncated else "")
            + (f"failed {sum(v for k, v in totals.items() if 'failed/' in k)} ({failed}), " if failed else "")
            + (f"bounded {totals['summary/bounded']}, " if self.bounded else "")
            + f"skipped {sum(v for k, v in totals.items() if 'skipped' in k)}"
            + (f" ({skipped})" if skipped else "")
        ]
        sites = set(self.fetched) | set(self.stored) | set(self.skipped) | set(self.failed) | set(self.bounded)
        for site in sorted(sites):
            reasons = ", ".join(f"{r} {n}" for r, n in sorted(self.skipped[site].items()))
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.failed[site].items()))
            out.append(
                f"  {site}: fetched {self.fetched[site]}, stored {self.stored[site]}"
                + (f", truncated {self.truncated[site]}" if self.truncated[site] else "")
                + (f", failed {kinds}" if kinds else "")
                + (f", bounded {self.bounded[site]}" if self.bounded[site] else "")
                + (f", skipped {reasons}" if reasons else "")
            )
        return out
