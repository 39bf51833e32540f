"""What resuming a killed site crawl costs, against crawling the site afresh (SYN-MODES, SYN-REREAD).

A site of ``1 + S + S*P`` pages (an index, S sections, P pages of about 20 KB
under each, every one with an ETag) is crawled with ``scrapy crawl site``:

- fresh: once, into an empty knowledge base;
- resumed: into another KB, killed with SIGKILL (its process group) once half
  the pages are stored, then run again as it was: the pages the KB holds cost
  a 304 each and their stored links lead on to the pages never reached;
- resumed with JOBDIR: the same, both runs with ``-s JOBDIR=DIR``, to show
  what Scrapy's job state adds after a kill -9 (it is saved on a clean stop only).

Printed per run: requests the server saw (robots.txt apart), 200s, 304s,
the body bytes it sent, and the pages the KB held after; then the resumed
run's requests and bytes as shares of a fresh crawl's.

    .venv/bin/python -m bench.resume [--sections 10] [--per-section 20] [--page-kb 20]
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from bench.common import OUTSIDE_CHECKOUT
from tests.site.server import Hit, Reply, TestServer

HOST = "resume-bench.test"


def _page(title: str, links: list[str], size: int) -> str:
    words = " ".join(f"word{(len(title) * 7 + i) % 997}" for i in range(size // 8))
    anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
    return (
        f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1><p>{words}</p>{anchors}"
        "</main></body></html>"
    )


def _route(body: str, etag: str) -> Callable[[BaseHTTPRequestHandler], Reply]:
    def route(handler: BaseHTTPRequestHandler) -> Reply:
        if handler.headers.get("If-None-Match") == etag:
            return Reply(b"", status=304, headers={"ETag": etag})
        return Reply(body, headers={"Content-Type": "text/html; charset=utf-8", "ETag": etag})

    return route


def _command(server: TestServer, kb: Path, jobdir: Path | None) -> list[str]:
    scrapy = Path(sys.executable).parent / "scrapy"
    command = [
        str(scrapy if scrapy.exists() else "scrapy"),
        "crawl",
        "site",
        "-a",
        f"url={server.url(HOST, '/')}",
        "-s",
        f"KB_URI=sqlite:///{kb}",
        "-s",
        "HOST_RESOLVE=*.test=127.0.0.1",
        "-s",
        "ALLOW_PRIVATE_ADDRESSES=True",
        "-s",
        "DOWNLOAD_DELAY=0.1",
        "-s",
        "LOG_LEVEL=INFO",
    ]
    return command + (["-s", f"JOBDIR={jobdir}"] if jobdir else [])


def _stored(kb: Path) -> int:
    try:
        with sqlite3.connect(f"file:{kb}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT count(*) FROM pages").fetchone()[0])
    except sqlite3.Error:
        return 0


def _run(server: TestServer, kb: Path, jobdir: Path | None, kill_at: int | None = None) -> list[Hit]:
    """One crawl; with ``kill_at``, SIGKILLed once the KB holds that many pages. The server's hits of it."""
    mark = len(server.log(HOST))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    with subprocess.Popen(
        _command(server, kb, jobdir),
        cwd=kb.parent,
        env={**env, **OUTSIDE_CHECKOUT},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    ) as proc:
        if kill_at is not None:
            while proc.poll() is None and _stored(kb) < kill_at:
                time.sleep(0.05)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        if proc.wait(1800) not in (0, -signal.SIGKILL):
            raise SystemExit(f"bench.resume: a crawl failed (exit {proc.returncode})")
    return [hit for hit in server.log(HOST)[mark:] if hit.path != "/robots.txt"]


def _row(name: str, hits: list[Hit], kb: Path) -> tuple[str, int, int, int, int, int]:
    not_modified = sum(1 for h in hits if h.bytes_sent == 0)
    return name, len(hits), len(hits) - not_modified, not_modified, sum(h.bytes_sent for h in hits), _stored(kb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", type=int, default=10)
    parser.add_argument("--per-section", type=int, default=20)
    parser.add_argument("--page-kb", type=int, default=20, help="size of each page, in KB")
    opts = parser.parse_args()
    size = opts.page_kb * 1024
    pages = {"/": [f"/s{s}/" for s in range(opts.sections)]}
    for s in range(opts.sections):
        pages[f"/s{s}/"] = [f"/s{s}/p{p}.html" for p in range(opts.per_section)]
        pages.update({f"/s{s}/p{p}.html": [] for p in range(opts.per_section)})
    server = TestServer().start()
    rows = []
    try:
        server.add(
            HOST,
            {
                "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
                **{path: _route(_page(path, links, size), f'"{n}"') for n, (path, links) in enumerate(pages.items())},
            },
        )
        half = len(pages) // 2
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            rows.append(_row("fresh crawl", _run(server, base / "fresh.sqlite3", None), base / "fresh.sqlite3"))
            kb = base / "resumed.sqlite3"
            rows.append(_row(f"killed at {half} stored", _run(server, kb, None, kill_at=half), kb))
            rows.append(_row("resumed (KB)", _run(server, kb, None), kb))
            kb, job = base / "jobdir.sqlite3", base / "job"
            rows.append(_row(f"killed at {half} (JOBDIR)", _run(server, kb, job, kill_at=half), kb))
            rows.append(_row("resumed (JOBDIR)", _run(server, kb, job), kb))
    finally:
        server.stop()
    print(f"site: {len(pages)} pages of ~{opts.page_kb} KB, each with an ETag")
    print(f"{'run':<24} {'requests':>8} {'200s':>6} {'304s':>6} {'body bytes':>12} {'stored after':>13}")
    for name, requests, ok, not_modified, body, stored in rows:
        print(f"{name:<24} {requests:>8} {ok:>6} {not_modified:>6} {body:>12,} {stored:>13}")
    fresh, resumed = rows[0], rows[2]
    print(f"resumed run / fresh crawl: requests {resumed[1] / fresh[1]:.0%}, body bytes {resumed[4] / fresh[4]:.0%}")
    both = rows[1][1] + resumed[1], rows[1][4] + resumed[4]
    print(f"killed + resumed / fresh crawl: requests {both[0] / fresh[1]:.0%}, body bytes {both[1] / fresh[4]:.0%}")


if __name__ == "__main__":
    main()
