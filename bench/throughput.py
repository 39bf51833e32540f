"""Throughput of the full pipeline when politeness is not the bound: pages/s, CPU s/page, where time goes.

    python -m bench.throughput                       # synapsebot: 500 hosts x 1 page, Crawl-delay 0.1
    python -m bench.throughput --profile snagabot --hosts 1000 --pages 2
    python -m bench.throughput --cprofile            # and where the main thread's time goes

Many hosts with a short Crawl-delay ask for far more pages a second than the
crawler can take, so the crawl runs at the speed of the pipeline: download,
robots.txt, extraction (trafilatura), the KB write (SQLite). Pages/s is
pages over the time from the first to the last request; CPU s/page is the
crawler process's user + system time over the pages (start-up included).
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import OUTSIDE_CHECKOUT, judge, machine, run_process, scrapy_bin
from bench.sim import SimWeb, make_hosts

__all__ = ["main", "run_throughput"]

# Where the main thread's time goes: (label, file, function); a function's cumulative time, recursion counted once.
_AREAS = [
    # Extraction and privacy scrubbing run in worker processes (synapsecrawl/extract/pool.py): what the main
    # thread spends on them is handing pages over and taking the results back.
    ("handing pages to the extraction workers (Reader.read)", "synapsecrawl/extract/pool.py", "read"),
    ("item to record", "synapsecrawl/kb/indexing.py", "make_item"),
    ("robots.txt middleware", "middlewares/robots.py", "process_request"),
    ("backoff gate middleware", "middlewares/backoff.py", "process_request"),
    ("HTTP/1.1 download handler", "scrapy/core/downloader/handlers/http11.py", "download_request"),
    ("scheduler next_request", "scrapy/core/scheduler.py", "next_request"),
    ("scheduler enqueue_request", "scrapy/core/scheduler.py", "enqueue_request"),
    ("event loop: waiting in epoll", "~", "<method 'poll' of 'select.epoll' objects>"),
]


def _areas(profile_path: Path) -> list[tuple[str, float]]:
    stats = pstats.Stats(str(profile_path))
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    found = []
    for label, path, name in _AREAS:
        found.append(
            (
                label,
                sum(ct for (file, _, func), (_, _, _, ct, _) in raw.items() if file.endswith(path) and func == name),
            )
        )
    found.append(("everything on the main thread", max(ct for (_, _, _, ct, _) in raw.values())))
    return found


def _top(profile_path: Path, count: int = 15) -> list[tuple[str, float, float]]:
    stats = pstats.Stats(str(profile_path))
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    rows = sorted(
        ((f"{Path(file).name}:{line}({func})", tt, ct) for (file, line, func), (_, _, tt, ct, _) in raw.items()),
        key=lambda r: -r[1],
    )
    return rows[:count]


def run_throughput(
    profile: str, hosts: int, pages: int, delay: float, *, cprofile: bool = False, extra: list[str] | None = None
) -> dict[str, Any]:
    specs = make_hosts(hosts, pages, [delay])
    spacing = {h.name: delay for h in specs}
    with SimWeb(specs) as web, tempfile.TemporaryDirectory(prefix="bench-") as tmpdir:
        tmp = Path(tmpdir)
        urls_file = tmp / "urls.txt"
        urls_file.write_text("\n".join(web.page_urls()) + "\n")
        prof = tmp / "crawl.prof"
        cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), scrapy_bin()] if cprofile else [scrapy_bin()]
        cmd += ["crawl", "page", "-a", f"urls_file={urls_file}"]
        floor = 0.1 if profile == "synapsebot" else 1.0
        for item in [
            "HOST_RESOLVE=*.test=127.0.0.1",
            "ALLOW_PRIVATE_ADDRESSES=True",
            f"KB_URI=sqlite:///{tmp / 'kb.sqlite3'}",
            f"BOT_PROFILE={profile}",
            f"DOWNLOAD_DELAY={floor:g}",
            "LOG_LEVEL=INFO",
            *(extra or []),
        ]:
            cmd += ["-s", item]
        run = run_process(cmd, cwd=tmp, env=OUTSIDE_CHECKOUT)
        figures = judge(web.log(), spacing)
        if run.returncode != 0:
            print(run.log[-3000:])
        result: dict[str, Any] = {
            "profile": profile,
            "hosts": hosts,
            "pages": pages,
            "delay": delay,
            "extra": extra or [],
            "machine": machine(),
            "load": os.getloadavg()[0],
            "pages_ok": figures.pages_ok,
            "requests": figures.requests,
            "makespan": figures.makespan,
            "pages_per_s": figures.pages_ok / figures.makespan if figures.makespan else 0.0,
            "cpu": run.cpu,
            "cpu_per_page": run.cpu / max(1, figures.pages_ok),
            "wall": run.wall,
            "max_rss_mb": run.max_rss_mb,
            "stored": run.stat("kb/stored"),
            "gap_violations": figures.gap_violations,
            "concurrency_violations": figures.concurrency_violations,
        }
        if cprofile and prof.exists():
            result["areas"] = _areas(prof)
            result["top"] = _top(prof)
    return result


def print_result(result: dict[str, Any]) -> None:
    print(
        f"throughput, {result['profile']}: {result['hosts']} hosts x {result['pages']} pages, "
        f"Crawl-delay {result['delay']:g} s (load {result['load']:.1f})"
    )
    print(
        f"  pages: {result['pages_ok']} fetched, {result['stored']} stored; {result['pages_per_s']:.1f} pages/s "
        f"over {result['makespan']:.1f} s; CPU {result['cpu']:.1f} s = {result['cpu_per_page'] * 1000:.1f} ms/page; "
        f"peak RSS {result['max_rss_mb']:.0f} MB; violations {result['gap_violations']} gap, "
        f"{result['concurrency_violations']} concurrency"
    )
    if "areas" in result:
        total = result["areas"][-1][1]
        print("  where the main thread's time goes (cProfile, cumulative):")
        for label, seconds in result["areas"]:
            print(f"    {label:<58} {seconds:7.2f} s {seconds / total:6.1%}")
        print("  top functions by own time:")
        for name, tottime, cumtime in result["top"]:
            print(f"    {name:<70} {tottime:6.2f} s (cum {cumtime:6.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="synapsebot", choices=["synapsebot", "snagabot"])
    parser.add_argument("--hosts", type=int, default=0, help="default: 500 (synapsebot), 1000 (snagabot)")
    parser.add_argument("--pages", type=int, default=0, help="per host; default: 1 (synapsebot), 2 (snagabot)")
    parser.add_argument("--cprofile", action="store_true", help="profile the crawl (slows it down)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    synapse = args.profile == "synapsebot"
    hosts = args.hosts or (500 if synapse else 1000)
    pages = args.pages or (1 if synapse else 2)
    result = run_throughput(args.profile, hosts, pages, 0.1 if synapse else 1.0, cprofile=args.cprofile, extra=args.set)
    print_result(result)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
