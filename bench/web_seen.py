"""The web crawl's seen-set and frontier: bytes per URL, measured, and the Bloom filter's false-positive rate.

    python -m bench.web_seen                          # 1M URLs inserted; the filter sized for 10M read off
    python -m bench.web_seen --sizes 100000           # a quick check
    python -m bench.web_seen --sizes 1000000,10000000 # 10M inserted too (minutes of CPU)
    python -m bench.web_seen --redis redis://127.0.0.1:6379/0 --sizes 1000000   # the shared filter in Redis

For each size N: the exact set (8-byte URL hashes in a Python set, ``synapsecrawl.web.seen``) measured with
tracemalloc; the Bloom filter (rbloom) sized for N at 0.1 % and 1 %, its bytes from its bit count, N URLs
inserted and 100,000 never-inserted URLs probed for the measured false-positive rate; and, at the smallest
size, the whole ``WebFrontier`` (seen-set, pending entries, heaps, budgets) per pending URL, by tracemalloc.
With ``--redis``, the shared Bloom filter (``synapsecrawl.web.redis_seen``) instead, filled in batches
of 500 URLs (one round trip each), its bytes from Redis's MEMORY USAGE, under a key deleted after.
Prints one line per figure; docs/benchmarks.md keeps them.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

from synapsecrawl.profiles import WebPolicy
from synapsecrawl.urls import host_of
from synapsecrawl.web.frontier import WebFrontier
from synapsecrawl.web.redis_seen import RedisBloom, bloom_shape
from synapsecrawl.web.seen import SeenSet, url_key

__all__ = ["main"]

_PROBES = 100_000


def _url(i: int) -> str:
    return f"https://site{i % 50_000}.example/articles/{i}/page.html"


def exact_bytes(n: int) -> float:
    """Bytes per URL of the exact set of 8-byte hashes, as tracemalloc sees it."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    keys = {url_key(_url(i)) for i in range(n)}
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(keys) == n
    return used / n


def bloom(n: int, rate: float, *, insert: bool) -> tuple[float, float | None, float]:
    """(bytes per URL, measured false-positive rate or None, seconds per insert) of a filter for ``n`` URLs."""
    seen = SeenSet(WebPolicy(seen_exact_max=0, seen_false_positive=rate), expected=n)
    seen.add(_url(0))  # past exact_max: the set is a Bloom filter from its first URL
    size = seen.bloom_bytes() / n
    if not insert:
        return size, None, 0.0
    start = time.perf_counter()
    for i in range(1, n):
        seen.add(_url(i))
    per_add = (time.perf_counter() - start) / n
    false = sum(f"https://other.example/{i}" in seen for i in range(_PROBES))
    return size, false / _PROBES, per_add


def frontier_bytes(n: int) -> float:
    """Bytes per pending URL of a whole WebFrontier holding ``n`` (1,000 sites, budgets large enough)."""
    policy = WebPolicy(crawl="open", budget_base=n, budget_max=n, seen_exact_max=n * 2)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    frontier = WebFrontier(policy, site=host_of, depth_cap=5, schemes=frozenset({"https"}), expected=n)
    for i in range(n):
        url = f"https://s{i % 1000}.site{i % 1000 // 2}.example/a/{i}"  # 1,000 hosts on 500 domains
        frontier.offer(url, source="https://seed.example/", depth=1)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert len(frontier) == n, len(frontier)
    return used / n


def redis_bloom(url: str, n: int, rate: float) -> None:
    """Fill a Redis Bloom filter for ``n`` URLs and print its bytes per URL, round trips and false positives."""
    import redis

    client = redis.Redis.from_url(url)
    key = f"bench:web_seen:{time.time_ns()}"
    try:
        bloom = RedisBloom(client, key, expected=n, false_positive=rate)
        batch, trips, start = 500, 0, time.perf_counter()
        for first in range(0, n, batch):
            bloom.add([_url(i) for i in range(first, min(n, first + batch))])
            trips += 1
        seconds = time.perf_counter() - start
        false = sum(bloom.contains([f"https://other.example/{i}" for i in range(_PROBES)]))
        used = int(client.memory_usage(key) or 0)
        print(
            f"Redis Bloom {rate:.1%}, {n:,} URLs: {used / n:.2f} bytes/URL (MEMORY USAGE {used:,}), "
            f"{trips / n:.4f} round trips/URL, false positives {false / _PROBES:.4%}, {seconds / n * 1e6:.1f} us/URL; "
            f"sized for 10,000,000: {bloom_shape(10_000_000, rate)[0] / 8 / 1e7:.2f} bytes/URL"
        )
    finally:
        client.delete(key)
        client.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000", help="URL counts to insert, comma-separated")
    parser.add_argument("--redis", default="", help="a Redis URL: measure the shared filter there instead")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.redis:
        for n in sizes:
            redis_bloom(args.redis, n, 0.001)
        return
    for n in sizes:
        print(f"exact set, {n:,} URLs: {exact_bytes(n):.1f} bytes/URL")
        for rate in (0.001, 0.01):
            size, false, per_add = bloom(n, rate, insert=True)
            print(
                f"Bloom {rate:.1%}, {n:,} URLs inserted: {size:.2f} bytes/URL, "
                f"false positives {false:.4%} of {_PROBES:,} probes, {per_add * 1e6:.1f} us/add"
            )
    if 10_000_000 not in sizes:
        for rate in (0.001, 0.01):
            size, _, _ = bloom(10_000_000, rate, insert=False)
            print(f"Bloom {rate:.1%}, sized for 10,000,000 URLs (not inserted): {size:.2f} bytes/URL")
    smallest = min(sizes[0], 200_000)
    print(f"WebFrontier, {smallest:,} pending URLs: {frontier_bytes(smallest):.0f} bytes/URL")


if __name__ == "__main__":
    main()
