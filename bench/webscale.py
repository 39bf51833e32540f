"""The shared web crawl with 1, 2 and 4 workers: pages per second, and Redis round trips per page (#39).

    python -m bench.webscale                                     # 1, 2 and 4 workers, 8 requests each, pages 1 s late
    python -m bench.webscale --workers 1,2,4 --concurrency 8 --latency 1 --warmup 20 --seconds 45
    python -m bench.webscale --out bench/results/webscale.json

The generated web of ``bench.webgen`` (2,000 hosts, 200,000 pages and its traps by default) is served with every
page answered ``--latency`` seconds late (robots.txt at once), as ``bench.scaleout --latency`` does for a list
crawl: with each worker allowed ``--concurrency`` requests in flight (``CONCURRENT_REQUESTS``) and 2,000 hosts
to spread them over, a worker's concurrency and the server's latency are the bound (``concurrency / latency``
pages a second a worker), not the sites' spacing. For each worker count: a fresh redis-server of the bench's
own (no other client in its counts), a fresh PostgreSQL schema as the KB, the ten seeds added with
``synapsecrawl crawl add --mode web``, and N ``scrapy crawl worker -a crawl=bench`` (SnagaBot) started at once,
stopped with SIGINT at the end of the window. Measured over a window of ``--seconds`` that opens ``--warmup``
seconds after the first page request reached the server (the workers' start-up, the seeds and the first
sites' robots.txt left out):

- pages/s: page requests (robots.txt not counted) that arrived at the server in the window, over its length;
  requests/s counts robots.txt too (each new site's first request, answered at once);
- Redis round trips per page: the calls clients made in the window (``INFO commandstats``: EVALSHA/EVAL, MULTI
  pipelines, the few plain commands; what a script runs inside Redis is no round trip) over those pages, and
  per request (robots.txt counted: while many sites are new, robots.txt is most of what is fetched);
  Redis CPU per page likewise (``INFO cpu``);
- over the whole run: gap and concurrency violations per host (SnagaBot's 1 s, or the Crawl-delay when longer),
  the share of fetches in traps, pages fetched twice, and the share of the 1 % most linked good pages
  (``bench.webcrawl``'s top 1 %) fetched in the run's first ``--top-after`` page fetches.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import judge, machine, scrapy_bin, shared_worker_settings
from bench.pgwrite import drop_schema, schema_uri
from bench.redisserver import free_port, redis_server
from bench.scaleout import _redis_cpu, _round_trips, start_workers
from bench.sim import Hit
from bench.webcrawl import _spacing, _start_server, _violations_by_site, _workdir, top_fetched, top_pages
from bench.webgen import TRAP_KINDS, Web, read_log

__all__ = ["main", "run_webscale"]

_SEEDS = 10
_AGENT = "SnagaBot"


def _stop(procs: list[subprocess.Popen[bytes]], grace: float = 60.0) -> list[int]:
    """SIGINT each worker (Scrapy's graceful stop), then SIGKILL whatever has not ended after ``grace``."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + grace
    codes = []
    for proc in procs:
        try:
            codes.append(proc.wait(timeout=max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(proc.wait())
    return codes


def _first_fetch(log: Path, offset: int, deadline: float) -> float:
    """When the first page request of this run reached the server (the workers' start-up left out)."""
    while time.monotonic() < deadline:
        pages = [x for x in read_log(log, offset) if _AGENT in x.user_agent and x.path != "/robots.txt"]
        if pages:
            return min(x.start for x in pages)
        time.sleep(0.5)
    raise SystemExit("bench: no worker fetched a page within 300 s")


def _one(
    web: Web,
    seeds: Path,
    log: Path,
    tmp: Path,
    workers: int,
    *,
    concurrency: int,
    latency: float,
    seconds: float,
    warmup: float,
    top: set[int],
    top_after: int,
) -> dict[str, Any]:
    port = free_port()
    data = tmp / f"redis-{workers}"
    data.mkdir()
    redis_proc = redis_server(port, data)
    schema, kb_uri = schema_uri()
    url = f"redis://127.0.0.1:{port}/0"
    offset = log.stat().st_size
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    try:
        synapsecrawl = str(Path(scrapy_bin()).parent / "synapsecrawl")
        add = [synapsecrawl, "crawl", "add", "--crawl", "bench", "--redis", url, "--urls-file", str(seeds)]
        added = subprocess.run([*add, "--mode", "web"], capture_output=True, text=True, check=False, env=env)
        assert added.returncode == 0, added.stderr
        settings = shared_worker_settings(url, kb_uri, concurrency)
        started = time.monotonic()
        procs, logs = start_workers(workers, settings, tmp, env)
        first = _first_fetch(log, offset, deadline=started + 300)
        time.sleep(max(0.0, first + warmup - time.monotonic()))
        window_start, trips_before, cpu_before = time.monotonic(), _round_trips([port]), _redis_cpu([port])
        time.sleep(max(0.0, window_start + seconds - time.monotonic()))
        window_end, trips_after, cpu_after = time.monotonic(), _round_trips([port]), _redis_cpu([port])
        codes = _stop(procs)
        time.sleep(max(0.5, 1.5 * latency))  # the server's last answers
    finally:
        redis_proc.terminate()
        redis_proc.wait(timeout=30)
        drop_schema(schema)
    lines = [line for line in read_log(log, offset) if _AGENT in line.user_agent]
    pages = [line for line in lines if line.path != "/robots.txt"]
    in_window = [line for line in pages if window_start <= line.start < window_end]
    robots_in_window = sum(1 for x in lines if x.path == "/robots.txt" and window_start <= x.start < window_end)
    hits = [Hit(x.host, x.path, x.start, x.end, x.concurrent, x.status, x.bytes_sent) for x in lines]
    spacing = {hit.host: _spacing(web, hit.host) for hit in hits}
    figures = judge(hits, spacing, limit=1)
    kinds = Counter(web.kind(line.host, line.path) for line in pages)
    traps = sum(kinds[kind] for kind in TRAP_KINDS)
    span = window_end - window_start
    count = len(in_window)
    first_pages = sorted(pages, key=lambda line: line.start)[:top_after]
    return {
        "workers": workers,
        "concurrency": concurrency,
        "exit_codes": codes,
        "window": [round(window_start - started, 1), round(window_end - started, 1)],
        "start_seconds": round(first - started, 1),
        "pages_in_window": count,
        "pages_per_second": round(count / span, 2) if span > 0 else 0.0,
        "pages_per_second_per_worker": round(count / span / workers, 2) if span > 0 else 0.0,
        "robots_in_window": robots_in_window,
        "requests_per_second": round((count + robots_in_window) / span, 2) if span > 0 else 0.0,
        "redis_round_trips": trips_after - trips_before,
        "round_trips_per_page": round((trips_after - trips_before) / max(1, count), 2),
        "round_trips_per_request": round((trips_after - trips_before) / max(1, count + robots_in_window), 2),
        "redis_cpu_ms_per_page": round(1000 * (cpu_after - cpu_before) / max(1, count), 3),
        "fetches": len(pages),
        "robots_fetches": len(lines) - len(pages),
        "hosts": len({line.host for line in pages}),
        "trap_share": round(traps / max(1, len(pages)), 4),
        "top1_fetches": len(first_pages),
        "top1_fetched": top_fetched(web, first_pages, top),
        "top1_share": round(top_fetched(web, first_pages, top) / max(1, len(top)), 4),
        "repeated_fetches": sum(n - 1 for n in Counter((x.host, x.path) for x in pages).values() if n > 1),
        "gap_violations": figures.gap_violations,
        "concurrency_violations": figures.concurrency_violations,
        "sites_with_violations": len(_violations_by_site(hits, spacing)),
        "errors": sum(path.read_text(errors="replace").count(" ERROR: ") for path in logs if path.exists()),
        "load": round(os.getloadavg()[0], 2),
    }


def run_webscale(
    *,
    seed: int,
    hosts: int,
    pages: int,
    workers: list[int],
    concurrency: int,
    latency: float,
    seconds: float,
    warmup: float,
    top_after: int = 500,
    keep: Path | None = None,
) -> dict[str, Any]:
    web = Web(seed, hosts, pages)
    _, top, _ = top_pages(web, *web.in_links())
    result: dict[str, Any] = {
        "seed": seed,
        "hosts": hosts,
        "pages": pages,
        "concurrency": concurrency,
        "latency": latency,
        "seconds": seconds,
        "warmup": warmup,
        "top1_size": len(top),
        "top_after": top_after,
        "machine": machine(),
        "runs": [],
    }
    web_args = ["--seed", str(seed), "--hosts", str(hosts), "--pages", str(pages), "--latency", str(latency)]
    with tempfile.TemporaryDirectory(prefix="bench-webscale-") as tmpdir:
        tmp = _workdir(Path(tmpdir), keep)
        log = tmp / "web.log"
        server, port = _start_server(web_args, log)
        try:
            seeds = tmp / "seeds.txt"
            seeds.write_text("".join(f"http://{h}:{port}{p}\n" for h, p in web.seeds(_SEEDS)))
            for count in workers:
                run = _one(
                    web,
                    seeds,
                    log,
                    tmp,
                    count,
                    concurrency=concurrency,
                    latency=latency,
                    seconds=seconds,
                    warmup=warmup,
                    top=top,
                    top_after=top_after,
                )
                result["runs"].append(run)
                print(json.dumps(run), flush=True)
        finally:
            server.terminate()
            server.wait(timeout=30)
    base = result["runs"][0]["pages_per_second"] if result["runs"] else 0.0
    for run in result["runs"]:
        run["speedup"] = round(run["pages_per_second"] / base, 2) if base else 0.0
    return result


def print_result(result: dict[str, Any]) -> None:
    print(
        f"\nshared web crawl: {result['hosts']} hosts, {result['pages']} pages, pages answered after "
        f"{result['latency']:g} s, CONCURRENT_REQUESTS {result['concurrency']} a worker, {result['seconds']:g} s "
        f"measured from {result['warmup']:g} s after the first fetch ({result['machine'].get('cpus', '?')} CPUs)"
    )
    print(
        "workers  pages/s  bound  per worker  speedup  requests/s  round trips/page  /request  Redis CPU ms/page  "
        "traps  violations  repeated  errors  load  top 1 % after N fetches"
    )
    for run in result["runs"]:
        bound = run["workers"] * result["concurrency"] / result["latency"] if result["latency"] else 0.0
        print(
            f"{run['workers']:7d}  {run['pages_per_second']:7.1f}  {bound:5.0f}  "
            f"{run['pages_per_second_per_worker']:10.1f}  "
            f"{run['speedup']:7.2f}  {run['requests_per_second']:10.1f}  {run['round_trips_per_page']:16.2f}  "
            f"{run['round_trips_per_request']:8.2f}  "
            f"{run['redis_cpu_ms_per_page']:17.3f}  "
            f"{run['trap_share']:5.1%}  {run['gap_violations'] + run['concurrency_violations']:10d}  "
            f"{run['repeated_fetches']:8d}  {run['errors']:6d}  {run['load']:4.1f}  "
            f"{run['top1_fetched']}/{result['top1_size']} ({run['top1_share']:.1%}) after {run['top1_fetches']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--hosts", type=int, default=2000, help="good hosts (traps come on top)")
    parser.add_argument("--pages", type=int, default=200_000, help="good pages")
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--concurrency", type=int, default=8, help="CONCURRENT_REQUESTS per worker")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds before each page is answered")
    parser.add_argument("--seconds", type=float, default=45.0, help="the measured window of each worker count")
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds after the first fetch left out")
    parser.add_argument("--top-after", type=int, default=500, help="the top-1 %% share after this many fetches")
    parser.add_argument("--keep", type=Path, help="keep the server's and the workers' logs in this directory")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    if args.warmup < 0 or args.seconds <= 0:
        parser.error("--warmup takes seconds >= 0, --seconds more than 0")
    try:
        result = run_webscale(
            seed=args.seed,
            hosts=args.hosts,
            pages=args.pages,
            workers=[int(w) for w in args.workers.split(",")],
            concurrency=args.concurrency,
            latency=args.latency,
            seconds=args.seconds,
            warmup=args.warmup,
            top_after=args.top_after,
            keep=args.keep,
        )
    except ValueError as exc:
        raise SystemExit(f"bench: {exc}") from None
    print_result(result)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
