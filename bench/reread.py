"""What a re-read of an unchanged site costs, as a fraction of its first crawl (SYN-REREAD, YOT-COND).

A 500-page site (an index linking 499 pages of about 20 KB, each with an ETag
and a Last-Modified) is crawled twice into one knowledge base with
``scrapy crawl site``, as a user runs it. The second crawl sends each page's
stored validators and the server answers 304 with no body. Printed per round:
requests, 304s, the body bytes the server sent, and Scrapy's own byte counts
(``downloader/response_bytes`` and ``downloader/request_bytes``, headers
included). The figure is the re-read's response bytes as a share of the first
crawl's; the goal is under 2 %.

    .venv/bin/python -m bench.reread [--pages 500] [--page-kb 20]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from bench.common import OUTSIDE_CHECKOUT
from tests.site.server import Reply, TestServer

HOST = "reread-bench.test"
LAST_MODIFIED = "Mon, 02 Mar 2026 09:00:00 GMT"
GOAL = 0.02


def _page(number: int, size: int) -> str:
    words = " ".join(f"word{(number * 7 + i) % 997}" for i in range(size // 8))
    return (
        f"<html><head><title>Page {number}</title></head><body><main><h1>Page {number}</h1>"
        f"<p>{words}</p></main></body></html>"
    )


def _route(body: str, etag: str):  # type: ignore[no-untyped-def]
    def route(handler: BaseHTTPRequestHandler) -> Reply:
        if handler.headers.get("If-None-Match") == etag:
            return Reply(b"", status=304, headers={"ETag": etag, "Last-Modified": LAST_MODIFIED})
        return Reply(
            body, headers={"Content-Type": "text/html; charset=utf-8", "ETag": etag, "Last-Modified": LAST_MODIFIED}
        )

    return route


def _stat(log: str, name: str) -> int:
    found = re.search(rf"'{re.escape(name)}': (\d+)", log)
    return int(found.group(1)) if found else 0


def _crawl(server: TestServer, kb_uri: str, cwd: Path) -> str:
    scrapy = Path(sys.executable).parent / "scrapy"
    command = [
        str(scrapy if scrapy.exists() else "scrapy"),
        "crawl",
        "site",
        "-a",
        f"url={server.url(HOST, '/')}",
        "-a",
        "depth=1",
        "-s",
        f"KB_URI={kb_uri}",
        "-s",
        "HOST_RESOLVE=*.test=127.0.0.1",
        "-s",
        "ALLOW_PRIVATE_ADDRESSES=True",
        "-s",
        "DOWNLOAD_DELAY=0.1",
        "-s",
        "LOG_LEVEL=INFO",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    env.update(OUTSIDE_CHECKOUT)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench.reread: the crawl failed: {done.stderr[-2000:]}")
    return done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=500, help="pages of the site, index included")
    parser.add_argument("--page-kb", type=int, default=20, help="size of each page, in KB")
    opts = parser.parse_args()
    server = TestServer().start()
    try:
        links = "".join(f'<a href="/p/{n}.html">page {n}</a> ' for n in range(1, opts.pages))
        routes = {
            "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
            "/": _route(f"<html><head><title>Index</title></head><body>{links}</body></html>", '"index"'),
        }
        for n in range(1, opts.pages):
            routes[f"/p/{n}.html"] = _route(_page(n, opts.page_kb * 1024), f'"p{n}"')
        server.add(HOST, routes)
        with tempfile.TemporaryDirectory() as tmp:
            kb_uri = f"sqlite:///{Path(tmp) / 'kb.sqlite3'}"
            rounds = []
            for name in ("first crawl", "re-read"):
                mark = len(server.log(HOST))
                log = _crawl(server, kb_uri, Path(tmp))
                hits = [h for h in server.log(HOST)[mark:] if h.path != "/robots.txt"]
                rounds.append(
                    (
                        name,
                        len(hits),
                        _stat(log, "downloader/response_status_count/304"),
                        sum(h.bytes_sent for h in hits),
                        _stat(log, "downloader/response_bytes"),
                        _stat(log, "downloader/request_bytes"),
                        _stat(log, "kb/stored"),
                    )
                )
    finally:
        server.stop()
    print(f"{'round':<12} {'pages':>6} {'304s':>6} {'body bytes':>12} {'response bytes':>15} {'request bytes':>14}")
    for name, pages, not_modified, body, response, request, _ in rounds:
        print(f"{name:<12} {pages:>6} {not_modified:>6} {body:>12,} {response:>15,} {request:>14,}")
    (_, _, _, body1, resp1, req1, stored), (_, _, _, body2, resp2, req2, _) = rounds
    share = resp2 / resp1
    print(f"pages stored by the first crawl: {stored}")
    verdict = "met" if share < GOAL else "missed"
    print(f"re-read response bytes / first crawl: {share:.2%} (goal < {GOAL:.0%}: {verdict})")
    print(f"re-read bytes both ways / first crawl: {(resp2 + req2) / (resp1 + req1):.2%}")
    print(f"re-read body bytes / first crawl: {body2 / max(body1, 1):.2%}")


if __name__ == "__main__":
    main()
