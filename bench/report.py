"""Run every benchmark and write docs/benchmarks.md with its plots.

    python -m bench.report                  # everything (about 25 minutes on 2 cores)
    python -m bench.report --only politeness,memory
    python -m bench.report --from-results   # rewrite the document from bench/results/*.json

Figures go to bench/results/ (JSON) and docs/ (benchmarks.md, PNG plots). The
hand-written analysis (before/after, bottlenecks) is bench/findings.md,
included as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from bench.common import ROOT, machine, projected

__all__ = ["SUITE", "main"]

RESULTS = ROOT / "bench" / "results"
DOCS = ROOT / "docs"

# (hosts, pages, delays, slow, failing). Where politeness is the bound, the sites together ask
# for 10-17 pages/s, under what the pipeline digests on 2 cores; the 20 x 25 at 0.2 s (100
# pages/s) and 2,000 sites whose one page falls due within seconds of each other are bound by it.
SUITE: list[tuple[int, int, list[float], int, int]] = [
    (20, 25, [0.2], 0, 0),
    (20, 25, [2.0], 0, 0),
    (200, 5, [20.0], 0, 0),
    (2000, 4, [120.0], 0, 0),
    (2000, 1, [180.0], 0, 0),
    (30, 8, [2.0, 4.0, 6.0], 3, 2),
]


def _name(hosts: int, pages: int, delays: list[float], slow: int, failing: int) -> str:
    tag = "-".join(f"{d:g}" for d in delays)
    return f"politeness-{hosts}x{pages}-d{tag}" + (f"-s{slow}f{failing}" if slow or failing else "")


def _save(name: str, data: Any) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=1))


def _load(prefix: str) -> list[Any]:
    return [json.loads(p.read_text()) for p in sorted(RESULTS.glob(f"{prefix}*.json"))]


def run_all(only: set[str]) -> None:
    if "politeness" in only:
        from bench.politeness import print_result, run_politeness

        for hosts, pages, delays, slow, failing in SUITE:
            result = run_politeness(hosts, pages, delays, slow=slow, failing=failing)
            print_result(result)
            sys.stdout.flush()
            _save(_name(hosts, pages, delays, slow, failing), result)
    if "throughput" in only:
        from bench.throughput import print_result as print_throughput
        from bench.throughput import run_throughput

        for profile, hosts, pages, delay in (("synapsebot", 500, 1, 0.1), ("snagabot", 500, 2, 1.0)):
            for cprofile in (False, True):
                result = run_throughput(profile, hosts, pages, delay, cprofile=cprofile)
                print_throughput(result)
                sys.stdout.flush()
                _save(f"throughput-{profile}{'-cprofile' if cprofile else ''}", result)
    if "memory" in only:
        from bench.memory import print_result as print_memory
        from bench.memory import run_memory

        # the project's queues at 100k and 1M; Scrapy's own in-memory queue and the disk queue at 100k
        variants = [
            (100_000, "compact", []),
            (1_000_000, "compact", []),
            (100_000, "objects", ["SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue"]),
            (100_000, "disk", ["JOBDIR="]),
        ]
        for size, label, extra in variants:
            result = run_memory(size, disk=label == "disk", label=label, extra=[e for e in extra if e != "JOBDIR="])
            print_memory(result)
            sys.stdout.flush()
            _save(f"memory-{size}-{label}", result)


def _politeness_table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        (
            "| hosts x pages | Crawl-delay | crawler | ideal s | makespan s | efficiency "
            "| gap / concurrency violations | smallest gap / spacing | pages | CPU s | CPU ms/page | load |"
        ),
        "|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        delays = ", ".join(f"{d:g}" for d in r["delays"]) + " s"
        faults = "".join(f", {r[k]} {k}" for k in ("slow", "failing") if r[k])
        for run in r["runs"]:
            finished = not run.get("killed", run["pages_ok"] < run["expected_pages"])
            makespan = (
                f"{run['makespan']:.1f}"
                if finished
                else (f"> {run['makespan']:.0f} (stopped; ~{projected(run):.0f} projected)")
            )
            lines.append(
                f"| {r['hosts']} x {r['pages']}{faults} | {delays} | {run['crawler']} | {run['ideal']:.1f} "
                f"| {makespan} | {run['efficiency'] if finished else run['ideal'] / projected(run):.2f} "
                f"| {run['gap_violations']} / {run['concurrency_violations']} | {run['min_gap_ratio']:.3f} "
                f"| {run['pages_ok']}/{run['expected_pages']} | {run['cpu']:.1f} "
                f"| {1000 * run['cpu'] / max(1, run['pages_ok']):.0f} | {run['load']:.1f} |"
            )
    return lines


def write_docs() -> None:
    from bench.plots import plot_efficiency, plot_progress, plot_timeline

    politeness = _load("politeness-")
    throughput = _load("throughput-")
    memory = _load("memory-")
    if politeness:
        plot_efficiency(politeness, DOCS / "bench-efficiency.png")
        by_name = {_name(r["hosts"], r["pages"], r["delays"], r["slow"], r["failing"]): r for r in politeness}
        timeline = by_name.get("politeness-20x25-d2") or politeness[0]
        plot_timeline(timeline, DOCS / "bench-timeline.png")
        largest = max(politeness, key=lambda r: (r["hosts"], r["pages"]))
        plot_progress(largest, DOCS / "bench-progress.png")
    info = (politeness or throughput or memory or [{"machine": machine()}])[0]["machine"]
    out = [
        "# Benchmarks",
        "",
        "Generated by `python -m bench.report`; the analysis at the end is `bench/findings.md`.",
        "Every figure below comes from the server's own log or from the crawler process as the OS saw it.",
        "",
        "## Machine",
        "",
        f"- {info['cpus']} CPUs ({info['cpu']}), {info['ram']} RAM, {info['os']}",
        f"- Python {info['python']}, Scrapy {info['scrapy']}",
        (
            "- The machine is shared: other jobs ran during these runs. Each row gives the 1-minute load average "
            "when it ended; on 2 cores, a load above 2 means the crawler did not have a core to itself."
        ),
        "",
        "## How to run",
        "",
        "```",
        "pip install -e '.[bench]'                                   # matplotlib, for the plots",
        "python -m bench.sim --capacity                              # the simulated web alone",
        "python -m bench.politeness --hosts 20 --pages 25 --delay 2   # one politeness run, ours and stock",
        "python -m bench.politeness --hosts 30 --pages 8 --delays 2,4,6 --slow 3 --failing 2",
        "python -m bench.politeness --hosts 20 --pages 25 --delay 0.2 --docs --repeat 3   # Python docs pages",
        "python -m bench.politeness --hosts 20 --pages 25 --delay 0.2 --docs --repeat 3 --keep-kb   # re-reads",
        "python -m bench.throughput [--profile snagabot] [--cprofile]",
        "python -m bench.memory [--sizes 100000,1000000]",
        "python -m bench.kbwrite [--revisit]                          # the KB write alone, CPU ms a page",
        "python -m bench.pgwrite [--writers 1,4]                     # PostgreSQL KB under 1-8 writers",
        "python -m bench.scaleout --adds-up                          # 1-16 workers of one shared crawl",
        "python -m bench.redismemory                                 # Redis bytes a site and a URL",
        "python -m bench.extraction [--cprofile]                      # extraction alone, CPU ms a page",
        "python -m bench.report                                      # all of it, and this document",
        "```",
        "",
        (
            "The simulated web (`bench/sim.py`) is one asyncio server on 127.0.0.1 with a virtual host per site "
            "(`*.test`, resolved with `HOST_RESOLVE`), generated HTML pages of 10-100 KB (log-uniform, mean about "
            "38 KB; navigation, article text, links) and a robots.txt with each host's Crawl-delay. Ours is "
            "`scrapy crawl page -a urls_file=...` (synapsebot self-hosted up to its 500-page cap, else snagabot, whose "
            "DOWNLOAD_DELAY floor is 1 s), with the KB in a temporary directory. Stock is `bench/stock.py`, a plain "
            "`scrapy.Spider` run outside the project with `DOWNLOAD_DELAY` = the largest Crawl-delay, "
            "`CONCURRENT_REQUESTS_PER_DOMAIN=1`, `ROBOTSTXT_OBEY=True` and otherwise Scrapy's defaults; it does no "
            "extraction and writes no KB, so it spends far less CPU per page than ours."
        ),
        "",
        (
            "Ideal makespan: every host paced exactly and all in parallel, the largest (requests - 1) x spacing over "
            "hosts (robots.txt counts toward the pace, so P pages take P x d). Makespan: first to last request "
            "arrival at the server. A gap violation is two consecutive arrivals at one host closer than its "
            "Crawl-delay; a concurrency violation is an arrival while that host already had a request in flight."
        ),
        "",
    ]
    if politeness:
        out += [
            "## Politeness efficiency",
            "",
            *_politeness_table(politeness),
            "",
            "![efficiency against hosts](bench-efficiency.png)",
            "",
            "![per-host request timeline](bench-timeline.png)",
            "",
            "![pages over time at the largest scale](bench-progress.png)",
            "",
        ]
    if throughput:
        out += [
            "## Throughput of the full pipeline",
            "",
            "| profile | hosts x pages | pages/s | CPU ms/page | peak RSS MB | cProfile | load |",
            "|---|---|---:|---:|---:|---|---:|",
        ]
        for t in throughput:
            out.append(
                f"| {t['profile']} | {t['hosts']} x {t['pages']} | {t['pages_per_s']:.1f} "
                f"| {1000 * t['cpu_per_page']:.0f} | {t['max_rss_mb']:.0f} | {'yes' if 'areas' in t else 'no'} "
                f"| {t['load']:.1f} |"
            )
        for t in throughput:
            if "areas" not in t:
                continue
            total = t["areas"][-1][1]
            out += [
                "",
                (
                    f"Where the main thread's time goes, {t['profile']} (cProfile, cumulative; profiling slows "
                    "the crawl, so read the shares, not the seconds; extraction and privacy scrubbing run in "
                    "worker processes and the KB write in worker threads, outside this profile, though the "
                    "CPU column above counts them):"
                ),
                "",
                "| part | seconds | share |",
                "|---|---:|---:|",
            ]
            out += [f"| {label} | {sec:.1f} | {sec / total:.0%} |" for label, sec in t["areas"]]
        out.append("")
    if memory:
        out += [
            "## Frontier memory",
            "",
            "| pending requests | queues | peak RSS MB | RSS when full MB | bytes per request | time to fill s |",
            "|---:|---|---:|---:|---:|---:|",
        ]
        for m in memory:
            out.append(
                f"| {m['held']:,} | {m['queues']} | {m['peak_rss_mb']:.0f} | {m['rss_at_full_mb']:.0f} "
                f"| {m['bytes_per_request']:.0f} | {m['wall']:.0f} |"
            )
        out.append("")
    findings = ROOT / "bench" / "findings.md"
    if findings.exists():
        out += [findings.read_text().rstrip(), ""]
    (DOCS / "benchmarks.md").write_text("\n".join(out))
    print(f"wrote {DOCS / 'benchmarks.md'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="politeness,throughput,memory")
    parser.add_argument("--from-results", action="store_true", help="only rewrite the document")
    args = parser.parse_args()
    os.chdir(ROOT)
    if not args.from_results:
        run_all(set(args.only.split(",")))
    write_docs()


if __name__ == "__main__":
    main()
