"""Redis memory of a shared crawl's frontier: bytes per site and per queued URL.

    python -m bench.redismemory                          # 500 and 2,000 sites x 1 and 10 URLs
    python -m bench.redismemory --sites 1000,4000 --urls 1,20 --out bench/results/redismemory.json

For each (sites, URLs a site) a fresh redis-server of the benchmark's own
(bench.redisserver, nothing persisted) takes ``synapsecrawl crawl add --mode
page`` of that many 60-byte URLs; ``used_memory`` (``INFO memory``) is read
before and after. A least-squares fit of bytes = a x sites + b x URLs over the
runs gives what a site costs (its stream, pacer and due-order entries) apart
from what a URL costs (its stream entry and its seen-set member). This is the
frontier at rest, before any worker leases from it; bench.scaleout reports the
bytes per URL left once the crawl is done.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.common import scrapy_bin
from bench.redisserver import free_port, redis_server

__all__ = ["main", "run_redismemory"]


def _used(port: int) -> int:
    import redis

    client = redis.Redis(port=port)
    used = int(client.info("memory")["used_memory"])
    client.close()
    return used


def _one(tmp: Path, sites: int, per_site: int) -> dict[str, Any]:
    urls = tmp / f"urls-{sites}-{per_site}.txt"
    urls.write_text(
        "".join(
            f"https://site-{s:06d}.example/articles/{n:04d}/page.html\n" for s in range(sites) for n in range(per_site)
        )
    )
    port = free_port()
    data = tmp / f"redis-{port}"
    data.mkdir()
    proc = redis_server(port, data)
    try:
        empty = _used(port)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
        cli = str(Path(scrapy_bin()).parent / "synapsecrawl")
        url = f"redis://127.0.0.1:{port}/0"
        added = subprocess.run(
            [cli, "crawl", "add", "--crawl", "bench", "--redis", url, "--urls-file", str(urls), "--mode", "page"],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        assert added.returncode == 0, added.stderr
        used = _used(port) - empty
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"sites": sites, "urls": sites * per_site, "bytes": used, "bytes_per_url": round(used / (sites * per_site))}


def _fit(runs: list[dict[str, Any]]) -> tuple[float, float]:
    """Least squares of bytes = a x sites + b x URLs (no constant: an empty crawl holds nothing)."""
    ss = sum(r["sites"] ** 2 for r in runs)
    su = sum(r["sites"] * r["urls"] for r in runs)
    uu = sum(r["urls"] ** 2 for r in runs)
    sb = sum(r["sites"] * r["bytes"] for r in runs)
    ub = sum(r["urls"] * r["bytes"] for r in runs)
    det = ss * uu - su * su
    return (sb * uu - ub * su) / det, (ub * ss - sb * su) / det


def run_redismemory(sites: list[int], per_site: list[int]) -> dict[str, Any]:
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-redismemory-") as tmpdir:
        for count in sites:
            for urls in per_site:
                run = _one(Path(tmpdir), count, urls)
                runs.append(run)
                print(json.dumps(run), flush=True)
    per_site_bytes, per_url_bytes = _fit(runs)
    return {
        "runs": runs,
        "bytes_per_site": round(per_site_bytes),
        "bytes_per_url": round(per_url_bytes),
        "load": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sites", default="500,2000")
    parser.add_argument("--urls", default="1,10", help="URLs a site")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    result = run_redismemory([int(s) for s in args.sites.split(",")], [int(u) for u in args.urls.split(",")])
    print(f"\nRedis frontier at rest: {result['bytes_per_site']} bytes a site + {result['bytes_per_url']} bytes a URL")
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
