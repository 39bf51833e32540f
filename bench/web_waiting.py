"""The shared web crawl's waiting and parked pages in Redis: bytes per page, measured, against a frontier entry.

    python -m bench.web_waiting                                   # 200 sites x 100 pages, Redis on localhost
    python -m bench.web_waiting --sites 1000 --pages 100 --redis redis://127.0.0.1:6379/0

Three runs through ``synapsecrawl.web.shared.SharedWebGate`` and a real ``SharedFrontier`` under a key
prefix of its own (deleted after):

- every page admitted (a budget larger than the pages): each site has ``window`` (2) pages in the
  frontier's stream and the rest waiting by value;
- the same with every page in the stream (a window larger than the pages: the first-in-first-out layout
  before the value order), the peer;
- a budget of 60 a domain (10 + 10 for each of 5 linking domains): each domain keeps its parked best (40).

And the trap counts: bytes a path with a query (its variants) and a host with dated URLs (a calendar).
Links come in batches of one page's worth (50), from 5 linking domains so that pages carry votes. Bytes are
Redis's MEMORY USAGE summed over the keys of each kind; "per page" divides by the pages each kind holds.
Prints one line per figure; docs/benchmarks.md keeps them.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator

import redis

from synapsecrawl.pacing.keys import PARTITIONS
from synapsecrawl.profiles import WebPolicy
from synapsecrawl.shared.entries import Entry, partition_root, web_root
from synapsecrawl.shared.frontier import SharedFrontier
from synapsecrawl.web.shared import Link, SharedWebGate

__all__ = ["main"]

_BATCH = 50


def _links(sites: int, pages: int) -> Iterator[list[Link]]:
    batch: list[Link] = []
    for i in range(pages):
        for s in range(sites):
            site = f"site{s}.example"
            url = f"https://{site}/articles/{i}/page.html"
            data = Entry(url=url, source="0123456789abcdef", meta={"depth": 1 + i % 3}).to_json()
            batch.append(Link(url, site, f"linker{(i + s) % 5}.example", 1 + i % 3, site, data))
            if len(batch) == _BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


def _bytes(client: redis.Redis, pattern: str) -> tuple[int, int]:
    """(keys, bytes by MEMORY USAGE) of the keys matching ``pattern``."""
    keys = list(client.scan_iter(match=pattern, count=1000))
    return len(keys), sum(int(client.memory_usage(key, samples=0) or 0) for key in keys)


def run(url: str, sites: int, pages: int, *, budget: int, window: int = 2) -> dict[str, float]:
    client = redis.Redis.from_url(url)
    prefix = f"bench:webwait:{os.getpid()}:{budget}"
    frontier = SharedFrontier(url, "bench", prefix=prefix)
    policy = WebPolicy(crawl="open", budget_base=budget, budget_per_linking_domain=10)
    try:
        gate = SharedWebGate(
            client,
            web_root(frontier.root),
            policy,
            expected=sites * pages * 20,
            frontier=frontier.root,
            window=window,
        )
        calls = 0
        started = time.perf_counter()
        for batch in _links(sites, pages):
            gate.admit(batch)
            calls += 1
        seconds = time.perf_counter() - started
        root = gate.root
        parts = [partition_root(root, n) for n in range(PARTITIONS)]  # every key is in a site's partition
        waiting = sum(int(v) for part in parts for v in client.hvals(f"{part}:waiting"))
        parked = sum(int(v) for part in parts for v in client.hvals(f"{part}:parked"))
        queued = sum(
            int(v) for n in range(PARTITIONS) for v in client.hvals(f"{partition_root(frontier.root, n)}:queued")
        )
        _, streams = _bytes(client, f"{frontier.root}:{{p*}}:q:*")
        _, z = _bytes(client, f"{root}:{{p*}}:z:*")
        _, p = _bytes(client, f"{root}:{{p*}}:p:*")
        _, d = _bytes(client, f"{root}:{{p*}}:d:*")
        _, u = _bytes(client, f"{root}:{{p*}}:u:*")
        kept = waiting + parked
        return {
            "links": sites * pages,
            "waiting": waiting,
            "parked": parked,
            "queued": queued,
            "bytes_per_kept": (z + p + d + u) / kept if kept else 0.0,
            "bytes_per_queued": streams / queued if queued else 0.0,
            "links_per_second": sites * pages / seconds,
            "round_trips_per_link": calls / (sites * pages),
        }
    finally:
        for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            client.delete(key)
        frontier.close()
        client.close()


def trap_counts(url: str, hosts: int, paths: int) -> tuple[float, float]:
    """(bytes a path with a query, bytes a host with dated URLs) of the shared trap counts: ``paths`` paths a
    host with 3 query variants each, and 20 dated URLs a host, admitted through the gate."""
    client = redis.Redis.from_url(url)
    prefix = f"bench:webwait:{os.getpid()}:traps"
    policy = WebPolicy(crawl="open", budget_base=10_000)
    try:
        gate = SharedWebGate(client, f"{prefix}:web", policy, expected=hosts * paths * 20)
        batch: list[Link] = []
        for h in range(hosts):
            site = f"host{h}.example"
            for i in range(paths):
                batch += [Link(f"https://{site}/list{i}?sort={v}", site, None) for v in range(3)]
            batch += [Link(f"https://{site}/2026/01/{d:02d}/", site, None) for d in range(1, 21)]
            gate.admit(batch)
            batch = []
        _, variants = _bytes(client, f"{prefix}:web:{{p*}}:tv:*")
        _, calendars = _bytes(client, f"{prefix}:web:{{p*}}:tc:*")
        return variants / (hosts * paths), calendars / hosts
    finally:
        for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            client.delete(key)
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--pages", type=int, default=100)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    runs = (
        ("all admitted, a window of 2: the rest waiting by value", 10_000, 2),
        ("all admitted, every page in the frontier's stream (first in, first out, as before)", 10_000, 10**9),
        ("budget 60 (10 + 10 for each of 5 linkers): the rest parked", 10, 2),
    )
    for label, budget, window in runs:
        figures = run(args.redis, args.sites, args.pages, budget=budget, window=window)
        print(
            f"{label}: {figures['links']:,} links, {figures['waiting']:,} waiting, {figures['parked']:,} parked, "
            f"{figures['queued']:,} in the frontier's streams; {figures['bytes_per_kept']:.0f} bytes a waiting or "
            f"parked page (sorted set, entry, fields), {figures['bytes_per_queued']:.0f} bytes a stream entry; "
            f"{figures['links_per_second']:,.0f} links a second, {figures['round_trips_per_link']:.3f} round "
            "trips a link"
        )
    per_path, per_host = trap_counts(args.redis, args.sites, 50)
    print(
        f"trap counts ({args.sites} hosts x 50 paths with 3 query variants, 20 dated URLs a host): "
        f"{per_path:.0f} bytes a path with a query, {per_host:.0f} bytes a host's dated URLs"
    )
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
