"""Where a web crawl lost the top 1 %: which most-linked pages it did not fetch, and on which hosts (#39).

    python -m bench.webcrawl --fetches 5000 --no-stock --keep /tmp/run     # keep the server's log
    python -m bench.webmissed /tmp/run                                      # then read it

Reads the server's log a ``bench.webcrawl --keep DIR`` run left (the same ``--seed/--hosts/--pages``), takes the
crawler's first ``--fetches`` page requests, and says of the top 1 % (by in-links, as the bench judges):
how many were fetched, how many missed were never linked from a fetched page (not discovered) or were
known and not chosen, and, host by host, how many top pages each of the hosts that hold most of them gave
against how many requests the host got, and the seconds between them. A host with many top pages and few
fetches in a long run is one the order left idle; its gaps say whether politeness (Crawl-delay) or the
order held it.
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter, defaultdict
from itertools import pairwise
from pathlib import Path

from bench.webgen import Host, Web, read_log

__all__ = ["main"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("keep", type=Path, help="the directory a bench.webcrawl --keep run wrote")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--pages", type=int, default=200_000)
    parser.add_argument("--fetches", type=int, default=5000)
    parser.add_argument("--agent", default="SnagaBot", help="the crawler's user-agent token (stock: Scrapy/)")
    parser.add_argument("--top-hosts", type=int, default=12)
    args = parser.parse_args()
    web = Web(args.seed, args.hosts, args.pages)
    links, _ = web.in_links()
    good = [p for h in web.hosts if not h.disallow_all for p in range(h.start, h.start + h.pages)]
    good.sort(key=lambda p: (-links[p], p))
    top = set(good[: max(1, len(good) // 100)])
    lines = sorted((x for x in read_log(args.keep / "web.log") if args.agent in x.user_agent), key=lambda x: x.start)
    pages = [x for x in lines if x.path != "/robots.txt"][: args.fetches]
    if not pages:
        raise SystemExit(f"bench: no page request from {args.agent} in {args.keep / 'web.log'}")
    fetched: list[tuple[Host, int, float]] = []
    for line in pages:
        host = web.by_name.get(line.host)
        n = web.page_of(host, line.path) if host is not None else None
        if host is not None and n is not None:
            fetched.append((host, n, line.start))
    got = {host.start + n for host, n, _ in fetched}
    known: set[int] = set()
    for host, n, _ in fetched:
        known.update(web.hosts[h].start + m for h, m in web.links(host, n))
    missed = top - got
    span = pages[-1].start - pages[0].start
    print(
        f"{args.agent}: {len(pages)} fetches over {span:.0f} s; top 1 %: {len(top & got)} of {len(top)} fetched; "
        f"missed {len(missed)}: {len(missed - known)} never linked from a fetched page, {len(missed & known)} "
        f"known and not chosen ({sum(1 for p in missed if p == web.host_of(p).start)} of them front pages)"
    )
    times: dict[int, list[float]] = defaultdict(list)
    for host, _, start in fetched:
        times[host.index].append(start)
    holding = Counter(web.host_of(p).index for p in top)
    print("host                  top pages  fetched  top fetched  Crawl-delay  median gap (s)")
    for index, count in holding.most_common(args.top_hosts):
        host = web.hosts[index]
        mine = [host.start + n for h, n, _ in fetched if h.index == index]
        gaps = [b - a for a, b in pairwise(times[index])]
        median = f"{statistics.median(gaps):.1f}" if gaps else "-"
        delay = f"{host.crawl_delay:g}" if host.crawl_delay else "-"
        print(
            f"{host.name:<21} {count:9d}  {len(mine):7d}  {len(top.intersection(mine)):11d}  {delay:>11}  {median:>14}"
        )


if __name__ == "__main__":
    main()
