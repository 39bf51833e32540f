"""The web crawl against a stock Scrapy broad crawl, on a generated web, after the same number of fetches.

    python -m bench.webcrawl --fetches 5000                                  # 2,000 hosts, 200,000 pages
    python -m bench.webcrawl --hosts 200 --pages 20000 --fetches 1000        # the smoke check, a few minutes
    python -m bench.webcrawl --fetches 5000 --out bench/results/webcrawl.json

One run: ``bench.webgen`` serves the web in a process of its own and logs every request; the crawlers run one
after the other from the same seeds (ten front pages; the first, a portal, links every trap): ours, ``scrapy crawl web``
as SnagaBot (skipped, with a line saying so, on a tree without the ``web`` spider), then the peer,
``bench/webpeer.py``, a CrawlSpider with Scrapy's "Broad Crawls" settings. Each is stopped (SIGINT) once the
server has logged ``--fetches`` of its page requests (a few more arrive while it stops) or at ``--time-limit``,
and judged over its first ``--fetches`` page requests as the server saw them (robots.txt not counted), so both
are compared after the same number of fetches:

- top 1 %: the share of the 1 % most-linked good pages (in-links from the generator) fetched; the JSON also
  has the share of the 1 % linked from the most distinct registrable domains;
- traps: the share of fetches spent in the calendar, session ids, facets, path loop, link farm and mirror;
- duplicates: pages fetched whose text another fetched URL already served; stored: the same over our KB's
  pages (the peer's feed for the peer), over the whole run;
- violations, per host: gaps under SnagaBot's spacing (1 s, or the Crawl-delay when longer), requests while
  another was in flight, and gaps under a Crawl-delay the host states; disallowed: robots.txt-disallowed fetches;
- pages per second: fetches over the time from the first to the last of them.

The figures are printed as a table and written as JSON to ``--out`` (default: a new temporary directory).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.common import ROOT, Run, judge, machine, run_process, scrapy_bin
from bench.sim import Hit
from bench.webgen import TRAP_KINDS, LogLine, Web, read_log
from bench.webpeer import BROAD_CRAWL

__all__ = ["main", "run_webcrawl", "top_fetched", "top_pages"]

_SEEDS = 10
_OURS_AGENT = "SnagaBot"
_SNAGABOT_SPACING = 1.0  # SnagaBot's delay floor (snagabot.toml): no host sees two requests closer than this


def _has_web_spider() -> bool:
    listed = subprocess.run([scrapy_bin(), "list"], cwd=ROOT, capture_output=True, text=True, check=False)
    return "web" in listed.stdout.split()


def _start_server(web_args: list[str], log: Path) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.webgen", "serve", *web_args, "--log", str(log)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("port "):
        proc.kill()
        raise SystemExit("bench: the generated web did not start")
    return proc, int(line.split()[1])


class _Enough:
    """Whether the server has logged ``fetches`` page requests (robots.txt not counted) from ``agent`` yet."""

    def __init__(self, log: Path, agent: str, fetches: int) -> None:
        self._file = log.open("rb")
        self._file.seek(0, os.SEEK_END)
        self._agent = agent.encode()
        self._fetches = fetches
        self._seen = 0
        self._rest = b""

    def __call__(self) -> bool:
        chunk = self._rest + self._file.read()
        lines = chunk.split(b"\n")
        self._rest = lines.pop()
        self._seen += sum(1 for line in lines if self._agent in line and b"\t/robots.txt\t" not in line)
        return self._seen >= self._fetches

    def close(self) -> None:
        self._file.close()


def _ours(seeds: Path, tmp: Path, cap: int, limit: float, enough: _Enough) -> Run:
    cmd = [scrapy_bin(), "crawl", "web", "-a", f"seeds={seeds}"]
    settings = {
        "BOT_PROFILE": "snagabot",
        "HOST_RESOLVE": "*.test=127.0.0.1",
        "ALLOW_PRIVATE_ADDRESSES": "True",
        "KB_URI": f"sqlite:///{tmp / 'kb.sqlite'}",
        "CLOSESPIDER_PAGECOUNT": str(cap),
        "CLOSESPIDER_TIMEOUT": f"{limit:g}",
        "LOG_LEVEL": "INFO",
    }
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    return run_process(cmd, cwd=ROOT, timeout=limit + 120, enough=enough)


def _peer(seeds: Path, tmp: Path, cap: int, limit: float, enough: _Enough) -> Run:
    cmd = [scrapy_bin(), "runspider", str(ROOT / "bench" / "webpeer.py"), "-a", f"seeds={seeds}"]
    settings = {
        **BROAD_CRAWL,
        "CLOSESPIDER_PAGECOUNT": str(cap),
        "CLOSESPIDER_TIMEOUT": f"{limit:g}",
        "FEEDS": json.dumps({str(tmp / "peer.jsonl"): {"format": "jsonlines"}}),
    }
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    # outside the project: no scrapy.cfg, so none of synapsecrawl's settings apply
    return run_process(cmd, cwd=tmp, env={"PYTHONPATH": str(ROOT)}, timeout=limit + 120, enough=enough)


def _stored_ours(kb: Path) -> list[str]:
    """The URLs of the pages our KB stores as searchable (rows marked as duplicates of another left out)."""
    if not kb.exists():
        return []
    with sqlite3.connect(kb) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(pages)")]
        marks = [c for c in columns if "dup" in c.lower() or c.lower() in ("canonical", "canonical_of")]
        where = " AND ".join(f"COALESCE({c}, '') IN ('', 0)" for c in marks) or "1"
        return [row[0] for row in db.execute(f"SELECT url FROM pages WHERE {where}")]  # noqa: S608 - names from PRAGMA


def _stored_peer(feed: Path) -> list[str]:
    if not feed.exists():
        return []
    return [json.loads(line)["url"] for line in feed.read_text().splitlines() if line.strip()]


def _duplicates(web: Web, urls: list[tuple[str, str]]) -> int:
    """How many of ``urls`` (host, target) serve a text an earlier one already served."""
    keys = [web.content_key(host, target) for host, target in urls]
    return len(keys) - len(set(keys))


def _split(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return (parts.hostname or "", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))


def _spacing(web: Web, host: str) -> float:
    spec = web.by_name.get(host)
    return max(_SNAGABOT_SPACING, spec.crawl_delay or 0.0) if spec is not None else _SNAGABOT_SPACING


def top_pages(web: Web, links: Any, domains: Any) -> tuple[list[int], set[int], set[int]]:
    """The good pages by in-links, most first; the 1 % most linked; the same 1 % ranked by distinct linking
    registrable domains (a farm inside one domain earns nothing)."""
    good = [page for host in web.hosts if not host.disallow_all for page in range(host.start, host.start + host.pages)]
    good.sort(key=lambda page: (-links[page], page))
    top = set(good[: max(1, len(good) // 100)])
    top_domains = set(sorted(good, key=lambda page: (-domains[page], -links[page], page))[: len(top)])
    return good, top, top_domains


def top_fetched(web: Web, pages: list[LogLine], top: set[int]) -> int:
    """How many of ``top`` the page requests ``pages`` fetched (answered 200)."""
    fetched = {
        web.by_name[line.host].start + n
        for line in pages
        if line.status == 200
        and line.host in web.by_name
        and (n := web.page_of(web.by_name[line.host], line.path)) is not None
    }
    return len(fetched & top)


def _figures(
    web: Web,
    lines: list[LogLine],
    *,
    fetches: int,
    top: set[int],
    stored: list[str],
    run: Run,
    top_domains: set[int] | None = None,
) -> dict[str, Any]:
    lines = sorted(lines, key=lambda line: line.start)
    pages = [line for line in lines if line.path != "/robots.txt"][:fetches]
    if not pages:
        return {"fetches": 0, "returncode": run.returncode, "wall": run.wall}
    cut = pages[-1].start
    window = [line for line in lines if line.start <= cut]
    kinds = Counter(web.kind(line.host, line.path) for line in pages)
    fetched_good = {
        web.by_name[line.host].start + n
        for line in pages
        if line.status == 200
        and line.host in web.by_name
        and (n := web.page_of(web.by_name[line.host], line.path)) is not None
    }
    fetched_top = fetched_good & top
    by_domains = top_domains or set()
    hits = [Hit(x.host, x.path, x.start, x.end, x.concurrent, x.status, x.bytes_sent) for x in window]
    spacing = {hit.host: _spacing(web, hit.host) for hit in hits}
    figures = judge(hits, spacing, limit=1)
    bad_sites = _violations_by_site(hits, spacing)
    delayed = [hit for hit in hits if (spec := web.by_name.get(hit.host)) is not None and spec.crawl_delay]
    delay_figures = judge(delayed, {h.host: web.by_name[h.host].crawl_delay or 0.0 for h in delayed}, limit=1)
    ok = [(line.host, line.path) for line in pages if line.status == 200]
    span = pages[-1].start - pages[0].start
    traps = sum(kinds[kind] for kind in TRAP_KINDS)
    return {
        "fetches": len(pages),
        "answered_200": len(ok),
        "robots_fetches": sum(1 for line in window if line.path == "/robots.txt"),
        "top1_fetched": len(fetched_top),
        "top1_size": len(top),
        "top1_share": len(fetched_top) / len(top),
        "top1_domains_share": len(fetched_good & by_domains) / len(by_domains) if by_domains else 0.0,
        "trap_fetches": traps,
        "trap_share": traps / len(pages),
        "by_kind": dict(kinds),
        "hosts_reached": len({line.host for line in pages}),
        "good_hosts_reached": len({line.host for line in pages if line.host in web.by_name}),
        "domains_reached": len({web.by_name[line.host].domain for line in pages if line.host in web.by_name}),
        "duplicates_fetched": _duplicates(web, ok),
        "stored": len(stored),
        "duplicates_stored": _duplicates(web, [_split(url) for url in stored]),
        "disallowed_fetches": sum(1 for line in pages if web.disallowed(line.host, line.path)),
        "gap_violations": figures.gap_violations,
        "concurrency_violations": figures.concurrency_violations,
        "sites_with_violations": len(bad_sites),
        "worst_sites": bad_sites.most_common(10),
        "sites_fetched": len(spacing),
        "crawl_delay_violations": delay_figures.gap_violations,
        "min_gap_ratio": figures.min_gap_ratio,
        "violation_examples": figures.examples[:5],
        "pages_per_second": len(pages) / span if span > 0 else 0.0,
        "span": span,
        "wall": run.wall,
        "cpu": run.cpu,
        "max_rss_mb": run.max_rss_mb,
        "returncode": run.returncode,
        "killed": run.killed,
        "load": os.getloadavg()[0],
    }


def _violations_by_site(hits: list[Hit], spacing: dict[str, float]) -> Counter[str]:
    """Per host: gaps under its spacing plus arrivals while another request to it was in flight."""
    by_host: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits:
        by_host[hit.host].append(hit)
    bad: Counter[str] = Counter()
    for host, host_hits in by_host.items():
        host_hits.sort(key=lambda h: h.start)
        gaps = sum(1 for a, b in pairwise(host_hits) if b.start - a.start < spacing[host])
        if count := gaps + sum(1 for h in host_hits if h.concurrent > 1):
            bad[host] = count
    return bad


def _workdir(tmp: Path, keep: Path | None) -> Path:
    """Where a run writes its log, seeds and KB: ``keep`` when given (made if missing), else ``tmp``."""
    if keep is None:
        return tmp
    keep.mkdir(parents=True, exist_ok=True)
    return keep


def run_webcrawl(
    *,
    seed: int,
    hosts: int,
    pages: int,
    fetches: int,
    limit: float,
    ours: bool = True,
    peer: bool = True,
    keep: Path | None = None,
) -> dict[str, Any]:
    web_args = ["--seed", str(seed), "--hosts", str(hosts), "--pages", str(pages)]
    # Each crawler is stopped (SIGINT, Scrapy's graceful stop) once the server logged --fetches of its page requests,
    # and judged over its first --fetches. CLOSESPIDER_PAGECOUNT is the backstop; it counts robots.txt answers too
    # (one a host at most), hence twice --fetches.
    cap = 2 * fetches + 100
    result: dict[str, Any] = {
        "seed": seed,
        "hosts": hosts,
        "pages": pages,
        "fetches": fetches,
        "time_limit": limit,
        "machine": machine(),
        "crawlers": {},
        "skipped": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-webcrawl-") as tmpdir:
        tmp = _workdir(Path(tmpdir), keep)
        log = tmp / "web.log"
        started = time.process_time()
        web = Web(seed, hosts, pages)  # a bad size fails here, before the server starts
        server, port = _start_server(web_args, log)
        try:
            links, domains = web.in_links()
            good, top, top_domains = top_pages(web, links, domains)
            result["web"] = {
                "hosts": len(web.hosts),
                "domains": len({h.domain for h in web.hosts}),
                "pages": web.pages,
                "links": sum(links),
                "trap_hosts": len(web.trap_hosts),
                "top1_min_in_links": links[good[len(top) - 1]],
                "max_in_links": max(links),
                "max_linking_domains": max(domains),
                "build_cpu": time.process_time() - started,
            }
            seeds = tmp / "seeds.txt"
            seeds.write_text("".join(f"http://{h}:{port}{p}\n" for h, p in web.seeds(_SEEDS)))
            crawls: list[tuple[str, str, Any]] = []
            if ours:
                if _has_web_spider():
                    crawls.append(("synapsecrawl", _OURS_AGENT, lambda stop: _ours(seeds, tmp, cap, limit, stop)))
                else:
                    reason = "no `web` spider on this tree: ours not run"
                    result["skipped"]["synapsecrawl"] = reason
                    print(f"bench: {reason}", flush=True)
            if peer:
                crawls.append(("stock scrapy", "Scrapy/", lambda stop: _peer(seeds, tmp, cap, limit, stop)))
            for label, token, crawl in crawls:
                offset = log.stat().st_size
                print(f"bench: running {label} ...", flush=True)
                enough = _Enough(log, token, fetches)
                try:
                    run = crawl(enough)
                finally:
                    enough.close()
                time.sleep(0.2)  # the server's last lines
                lines = [line for line in read_log(log, offset) if token in line.user_agent]
                if run.returncode != 0 and not run.killed:
                    print(run.log[-3000:])
                ours_run = label == "synapsecrawl"
                stored = _stored_ours(tmp / "kb.sqlite") if ours_run else _stored_peer(tmp / "peer.jsonl")
                result["crawlers"][label] = _figures(
                    web, lines, fetches=fetches, top=top, stored=stored, run=run, top_domains=top_domains
                )
        finally:
            server.terminate()
            server.wait(timeout=30)
    crawlers = result["crawlers"]
    if "synapsecrawl" in crawlers and "stock scrapy" in crawlers and crawlers["stock scrapy"].get("top1_share"):
        result["top1_ratio"] = crawlers["synapsecrawl"].get("top1_share", 0.0) / crawlers["stock scrapy"]["top1_share"]
    return result


def print_result(result: dict[str, Any]) -> None:
    web = result["web"]
    print(
        f"\ngenerated web: {web['hosts']} hosts on {web['domains']} registrable domains, {web['pages']} pages, "
        f"{web['links']} links, {web['trap_hosts']} trap hosts; top 1% = pages with >= {web['top1_min_in_links']} "
        f"in-links; judged after {result['fetches']} fetches; load {os.getloadavg()[0]:.1f} on "
        f"{result['machine']['cpus']} CPUs"
    )
    print(
        f"{'crawler':<13} {'fetches':>7} {'top 1%':>13} {'traps':>6} {'dup fetch':>9} {'dup stored':>10} "
        f"{'gap viol':>8} {'conc viol':>9} {'sites viol':>11} {'Crawl-delay':>11} {'disallowed':>10} "
        f"{'hosts':>5} {'pages/s':>7}"
    )
    for label, f in result["crawlers"].items():
        if not f.get("fetches"):
            print(f"{label:<13} no fetches (exit {f['returncode']})")
            continue
        print(
            f"{label:<13} {f['fetches']:7d} {f['top1_fetched']:>5}/{f['top1_size']:<4} {f['top1_share']:>3.0%}"
            f"{f['trap_share']:6.1%} {f['duplicates_fetched']:9d} {f['duplicates_stored']:10d} "
            f"{f['gap_violations']:8d} {f['concurrency_violations']:9d} "
            f"{f['sites_with_violations']:>5}/{f['sites_fetched']:<5} {f['crawl_delay_violations']:11d} "
            f"{f['disallowed_fetches']:10d} {f['hosts_reached']:5d} {f['pages_per_second']:7.1f}"
        )
    for label, f in result["crawlers"].items():
        if f.get("by_kind"):
            kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(f["by_kind"].items(), key=lambda x: -x[1]))
            print(f"  {label} fetches by kind: {kinds}")
    for label, reason in result["skipped"].items():
        print(f"  {label}: skipped, {reason}")
    if "top1_ratio" in result:
        print(f"top 1% share, ours / stock: {result['top1_ratio']:.2f}x (goal >= 2)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--hosts", type=int, default=2000, help="good hosts (traps come on top)")
    parser.add_argument("--pages", type=int, default=200_000, help="good pages")
    parser.add_argument("--fetches", type=int, default=5000, help="page fetches each crawler is judged over")
    parser.add_argument(
        "--time-limit", type=float, default=0, help="seconds each crawler may run (default: 0.15 s a fetch, >= 150)"
    )
    parser.add_argument("--no-ours", action="store_true", help="run the stock peer only")
    parser.add_argument("--no-stock", action="store_true", help="run ours only")
    parser.add_argument("--keep", type=Path, help="keep the server's log, the seeds and the KB in this directory")
    parser.add_argument("--out", type=Path, help="write the JSON here (default: a new temporary directory)")
    args = parser.parse_args()
    if args.fetches < 1:
        parser.error("--fetches takes a whole number of pages, at least 1")
    try:
        result = run_webcrawl(
            seed=args.seed,
            hosts=args.hosts,
            pages=args.pages,
            fetches=args.fetches,
            limit=args.time_limit or max(150.0, 0.15 * args.fetches),
            ours=not args.no_ours,
            peer=not args.no_stock,
            keep=args.keep,
        )
    except ValueError as exc:
        raise SystemExit(f"bench: {exc}") from None
    print_result(result)
    out = args.out or Path(tempfile.mkdtemp(prefix="webcrawl-")) / "webcrawl.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"figures written to {out}")


if __name__ == "__main__":
    main()
