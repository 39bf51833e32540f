"""Build the crawl report of a synthetic 2,000-site crawl; print its build time and sizes.

    python -m bench.crawl_report [--sites 2000] [--requests 25] [--out DIR]

Each site gets a robots.txt read (some with a Crawl-delay), ``--requests`` page
requests on average (a few sites a hundred times that), a 503 with Retry-After
now and then, skips of every kind and stores. The hot path (appending events)
is timed on its own: that is what a crawl pays per request.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from synapsecrawl.crawl.requestlog import (
    LOG_NAME,
    RequestEvent,
    RequestLog,
    RobotsEvent,
    SiteEvent,
    SkipEvent,
    StoreEvent,
)
from synapsecrawl.report import build_report, write_stats

__all__ = ["main"]

_REASONS = ("robots", "noindex", "type", "size", "scope")


def _fill(log: RequestLog, sites: int, per_site: int, rng: random.Random) -> int:
    count = 0
    for n in range(sites):
        site = f"site-{n:04d}.example"
        crawl_delay = rng.choice((None, None, 2.0, 5.0))
        spacing = max(1.0, crawl_delay or 0.0)
        log.append(RobotsEvent(site, f"https://{site}/robots.txt", 0.0, 200, "parsed", True, crawl_delay))
        t = 0.5
        pages = per_site * 100 if n % 500 == 0 else rng.randint(1, 2 * per_site)
        for i in range(pages):
            url = f"https://{site}/page/{i}.html"
            status = 503 if rng.random() < 0.01 else 200
            log.append(
                RequestEvent(
                    site,
                    url,
                    "page",
                    t,
                    rng.uniform(0.01, 0.5),
                    status,
                    rng.randint(2_000, 80_000),
                    "30" if status == 503 else "",
                )
            )
            if status == 200 and rng.random() < 0.1:
                log.append(SkipEvent(site, url, rng.choice(_REASONS), t + 0.2))
            elif status == 200:
                log.append(StoreEvent(site, url, t + 0.3))
            t += spacing + rng.uniform(0.0, 0.2) + (30.0 if status == 503 else 0.0)
            count += 1
        log.append(SiteEvent(site, spacing, crawl_delay))
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=25, help="page requests per site, on average")
    parser.add_argument("--out", help="keep the report here (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(args.out or scratch)
        log = RequestLog(directory / LOG_NAME)
        began = time.perf_counter()
        requests = _fill(log, args.sites, args.requests, random.Random(18))
        appended = time.perf_counter() - began
        log.close()
        write_stats(
            directory,
            {"crawl_id": "bench", "profile": "synapsebot", "delay": 1.0, "crawl_delay_cap": 30.0},
            {"summary/fetched": requests},
        )
        began = time.perf_counter()
        index = build_report(directory)
        built = time.perf_counter() - began
        pages = sorted((directory / "sites").glob("*.html"), key=lambda p: p.stat().st_size)
        total = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
        print(f"{args.sites} sites, {requests} requests")
        print(f"hot path: {appended / requests * 1e6:.2f} µs per request appended (events written in batches)")
        print(f"build: {built:.2f} s")
        print(
            f"index.html: {index.stat().st_size / 1e6:.2f} MB; largest site page: "
            f"{pages[-1].stat().st_size / 1e6:.2f} MB ({pages[-1].name}); median site page: "
            f"{pages[len(pages) // 2].stat().st_size / 1e3:.0f} kB"
        )
        print(
            f"report.json: {(directory / 'report.json').stat().st_size / 1e6:.2f} MB; "
            f"requests.jsonl: {(directory / LOG_NAME).stat().st_size / 1e6:.2f} MB; all files: {total / 1e6:.1f} MB"
        )


if __name__ == "__main__":
    main()
