"""What a PostgreSQL outage mid-crawl costs a site: pages fetched, stored, journalled and lost.

A site of ``1 + S + S*P`` pages is crawled with ``scrapy crawl site`` into a PostgreSQL cluster of the
benchmark's own (tests.faults_env.PrivateCluster). Once a third of the pages are stored the server is
stopped for ``--down`` seconds, then started again. Printed per outage: pages the site served (200s),
requests that arrived while the KB was down and after the crawl had said so (goal 0: only what was in
flight), pages stored, journalled and lost (goal 0), the crawl's exit status, and the seconds from the
KB's return to the next request. An outage longer than KB_OUTAGE_SECONDS ends the crawl (exit 75); the
benchmark then runs it again, as an operator would, which writes the journal and finishes.

    .venv/bin/python -m bench.kb_outage [--down 10,60,600] [--sections 8] [--per-section 12] [--outage-limit 300]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from bench.common import OUTSIDE_CHECKOUT
from bench.resume import HOST, _page, _route
from tests.faults_env import PrivateCluster, urls_in_postgres
from tests.site.server import Reply, TestServer

_SAID_DOWN = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) .*knowledge base cannot take pages", re.MULTILINE)


@dataclass
class Outcome:
    down: float
    served: int  # distinct pages the site answered 200
    during: int  # requests that arrived while the KB was down
    after_said: int  # ...of them, after the crawl had logged the outage (beyond what was in flight)
    stored: int
    journalled: int  # pages in the journal when the first run ended
    lost: int  # served and in neither the KB nor the journal at the end
    exits: tuple[int, ...]
    recovery: float | None  # seconds from the KB's return to the next request


def _command(server: TestServer, uri: str, limit: float) -> list[str]:
    scrapy = Path(sys.executable).parent / "scrapy"
    return [
        str(scrapy if scrapy.exists() else "scrapy"),
        "crawl",
        "site",
        "-a",
        f"url={server.url(HOST, '/')}",
        *("-s", f"KB_URI={uri}", "-s", "HOST_RESOLVE=*.test=127.0.0.1", "-s", "ALLOW_PRIVATE_ADDRESSES=True"),
        *("-s", "DOWNLOAD_DELAY=0.2", "-s", f"KB_OUTAGE_SECONDS={limit:g}", "-s", "LOG_LEVEL=INFO"),
    ]


def _journalled(cwd: Path) -> int:
    return sum(len(path.read_text().splitlines()) for path in (cwd / ".synapsecrawl" / "journal").glob("*.jsonl"))


def _one(down: float, pages: dict[str, list[str]], limit: float) -> Outcome:
    cluster = PrivateCluster()
    server = TestServer().start()
    try:
        cluster.start()
        server.add(
            HOST,
            {
                "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
                **{path: _route(_page(path, links, 8192), f'"{n}"') for n, (path, links) in enumerate(pages.items())},
            },
        )
        with tempfile.TemporaryDirectory() as tmp:
            cwd = Path(tmp)
            log = cwd / "crawl.log"
            env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
            env.update(OUTSIDE_CHECKOUT)  # its journal lands in ``cwd``
            command = _command(server, cluster.uri, limit)
            with log.open("w") as out, subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=out) as proc:
                while proc.poll() is None and len(urls_in_postgres(cluster.uri)) < len(pages) // 3:
                    time.sleep(0.05)
                stopped_at = time.time()
                cluster.stop()
                while proc.poll() is None and time.time() - stopped_at < down:
                    time.sleep(0.1)
                cluster.start()
                back_at = time.time()
                first = proc.wait(3600)
            journalled = _journalled(cwd)
            exits: tuple[int, ...] = (first,)
            if first != 0:  # ended by the outage: run again, as an operator would
                with log.open("a") as out:
                    exits += (
                        subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=out, check=False).returncode,
                    )
            said = [time.mktime(time.strptime(m, "%Y-%m-%d %H:%M:%S")) for m in _SAID_DOWN.findall(log.read_text())]
            hits = [hit for hit in server.log(HOST) if hit.path != "/robots.txt"]
            served = {hit.path for hit in hits if hit.bytes_sent > 0}
            during = [hit for hit in hits if stopped_at <= hit.arrived_at < back_at]
            after_said = [hit for hit in during if said and hit.arrived_at >= min(said) + 1.0]
            later = sorted(hit.arrived_at for hit in hits if hit.arrived_at >= back_at)
            stored = {urlsplit(url).path for url in urls_in_postgres(cluster.uri)}
            lost = served - stored
            return Outcome(
                down=down,
                served=len(served),
                during=len(during),
                after_said=len(after_said),
                stored=len(stored),
                journalled=journalled,
                lost=len(lost),
                exits=exits,
                recovery=(later[0] - back_at) if later else None,
            )
    finally:
        server.stop()
        cluster.close()


def _site(sections: int, per_section: int) -> dict[str, list[str]]:
    pages = {"/": [f"/s{s}/" for s in range(sections)]}
    for s in range(sections):
        pages[f"/s{s}/"] = [f"/s{s}/p{p}.html" for p in range(per_section)]
        pages.update({f"/s{s}/p{p}.html": [] for p in range(per_section)})
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--down", default="10,60,600", help="outage lengths in seconds, comma-separated")
    parser.add_argument("--sections", type=int, default=8)
    parser.add_argument("--per-section", type=int, default=12)
    parser.add_argument("--outage-limit", type=float, default=300.0, help="KB_OUTAGE_SECONDS for the crawl")
    opts = parser.parse_args()
    pages = _site(opts.sections, opts.per_section)
    print(f"site: {len(pages)} pages, DOWNLOAD_DELAY 0.2, KB_OUTAGE_SECONDS {opts.outage_limit:g}")
    head = f"{'down s':>7} {'served':>7} {'during':>7} {'after said':>10} {'stored':>7} {'journalled':>10}"
    print(f"{head} {'lost':>5} {'exits':>8} {'recovery s':>10}")
    for down in (float(value) for value in opts.down.split(",")):
        o = _one(down, pages, opts.outage_limit)
        recovery = "-" if o.recovery is None else f"{o.recovery:.2f}"
        exits = ",".join(str(code) for code in o.exits)
        print(
            f"{o.down:>7g} {o.served:>7} {o.during:>7} {o.after_said:>10} {o.stored:>7} {o.journalled:>10} "
            f"{o.lost:>5} {exits:>8} {recovery:>10}",
            flush=True,
        )


if __name__ == "__main__":
    main()
