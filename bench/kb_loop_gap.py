"""How late a site's request starts against its due time while the crawl writes a PostgreSQL KB.

A store call made on the event loop holds every site's next request for a round
trip to PostgreSQL. Several hosts of a few pages each are crawled twice with
``scrapy crawl page`` (all URLs given, so each request is due one
``DOWNLOAD_DELAY`` after its host's previous one) into a fresh PostgreSQL
database: the first crawl stores every page, the second finds a third of them
now noindex (each leaves the KB) and the rest unchanged (304s, each copy
marked verified). From the test server's log, per host, a request's lateness is
its start minus (the previous start + the delay). Printed per crawl: requests,
the largest lateness, its 95th percentile and median, in milliseconds.

    .venv/bin/python -m bench.kb_loop_gap [--hosts 6] [--pages 20] [--delay 0.25] [--pg postgresql://...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import uuid
from collections import defaultdict
from contextlib import closing
from itertools import pairwise
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from bench.common import ROOT, run_process, scrapy_bin
from tests.site.server import Hit, Reply, TestServer

POSTGRES_ADMIN_URI = os.environ.get("SYNAPSECRAWL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
ROBOTS = Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"})
LAST_MODIFIED = "Mon, 02 Mar 2026 09:00:00 GMT"


def _page(host: int, number: int, *, noindex: bool) -> str:
    head = '<meta name="robots" content="noindex">' if noindex else ""
    words = " ".join(f"word{(host * 31 + number * 7 + i) % 997}" for i in range(300))
    return f"<html><head><title>Page {number}</title>{head}</head><body><main><p>{words}</p></main></body></html>"


def _routes(host: int, pages: int, *, second: bool) -> dict[str, Reply]:
    routes: dict[str, Reply] = {"/robots.txt": ROBOTS}
    for number in range(pages):
        etag = f'"h{host}p{number}"'
        headers = {"Content-Type": "text/html; charset=utf-8", "ETag": etag, "Last-Modified": LAST_MODIFIED}
        noindex = second and number % 3 == 0
        routes[f"/p{number}.html"] = Reply(_page(host, number, noindex=noindex), headers=headers)
    return routes


def _conditional(server: TestServer, host: str) -> None:
    """Answer 304 to a request that sends the page's own ETag (an unchanged page), as a real server would."""
    routes = server.routes[host]
    for path, reply in list(routes.items()):
        if not isinstance(reply, Reply) or "ETag" not in reply.headers:
            continue

        def route(handler, reply=reply):  # type: ignore[no-untyped-def]
            if handler.headers.get("If-None-Match") == reply.headers["ETag"] and b"noindex" not in _bytes(reply):
                return Reply(b"", status=304, headers={"ETag": reply.headers["ETag"]})
            return reply

        routes[path] = route  # type: ignore[assignment]


def _bytes(reply: Reply) -> bytes:
    return reply.body if isinstance(reply.body, bytes) else reply.body.encode()


def lateness(hits: list[Hit], delay: float) -> list[float]:
    """Per host, each request's start minus its due time (the previous start + ``delay``), in seconds."""
    by_host: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits:
        by_host[hit.host].append(hit)
    late = []
    for host_hits in by_host.values():
        host_hits.sort(key=lambda h: h.start)
        late += [b.start - (a.start + delay) for a, b in pairwise(host_hits)]
    return late


def _database() -> tuple[str, str]:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:12]}"
    with closing(psycopg.connect(POSTGRES_ADMIN_URI, autocommit=True)) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return name, urlunsplit(urlsplit(POSTGRES_ADMIN_URI)._replace(path=f"/{name}"))


def _drop(name: str) -> None:
    import psycopg

    with closing(psycopg.connect(POSTGRES_ADMIN_URI, autocommit=True)) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=6)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--pg", default="", help="a PostgreSQL KB_URI to use (default: a fresh database, dropped)")
    args = parser.parse_args()
    name, uri = ("", args.pg) if args.pg else _database()
    server = TestServer().start()
    hosts = [f"gap{i}.test" for i in range(args.hosts)]
    results = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            urls = Path(tmp) / "urls.txt"
            urls.write_text("\n".join(server.url(h, f"/p{n}.html") for n in range(args.pages) for h in hosts) + "\n")
            for round_name, second in (("first crawl", False), ("re-read, a third now noindex", True)):
                for index, host in enumerate(hosts):
                    server.add(host, _routes(index, args.pages, second=second))
                    if second:
                        _conditional(server, host)
                mark = len(server.log())
                run = run_process(
                    [
                        scrapy_bin(),
                        "crawl",
                        "page",
                        "-a",
                        f"urls_file={urls}",
                        "-s",
                        f"KB_URI={uri}",
                        "-s",
                        "HOST_RESOLVE=*.test=127.0.0.1",
                        "-s",
                        "ALLOW_PRIVATE_ADDRESSES=True",
                        "-s",
                        f"DOWNLOAD_DELAY={args.delay}",
                        "-s",
                        f"REPORT_DIR={tmp}/reports",
                        "-s",
                        "LOG_LEVEL=INFO",
                    ],
                    cwd=ROOT,
                    timeout=300,
                )
                server.settle()
                if run.returncode != 0:
                    raise SystemExit(f"{round_name}: the crawl failed ({run.returncode}):\n{run.log[-3000:]}")
                hits = [h for h in server.log()[mark:] if h.host in hosts]
                late = sorted(lateness(hits, args.delay))
                results[round_name] = {
                    "requests": len(hits),
                    "kb_stored": run.stat("kb/stored"),
                    "removed_noindex": run.stat("reread/removed/noindex"),
                    "unchanged_304": run.stat("reread/unchanged"),
                    "max_late_ms": round(1000 * late[-1], 1) if late else 0.0,
                    "p95_late_ms": round(1000 * late[int(0.95 * (len(late) - 1))], 1) if late else 0.0,
                    "median_late_ms": round(1000 * statistics.median(late), 1) if late else 0.0,
                    "wall_s": round(run.wall, 1),
                }
    finally:
        server.stop()
        if name:
            _drop(name)
    print(json.dumps({"hosts": args.hosts, "pages": args.pages, "delay_s": args.delay, "runs": results}, indent=2))


if __name__ == "__main__":
    main()
