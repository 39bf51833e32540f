"""A shared crawl when a worker or Redis fails: a worker killed with SIGKILL loses nothing, and
Redis gone for a minute costs nothing but the wait. Asserted from the test server's log and the KB."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest

from bench.redisserver import free_port, redis_server
from tests.e2e.sharedcrawl import SharedCrawl, fetched, stored_pages
from tests.helpers import gaps, write_urls
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e

NO_ROBOTS = Reply("", status=404)


def test_a_worker_killed_mid_crawl_loses_nothing_its_leases_go_back_and_are_fetched_once_more_at_most(
    server: TestServer, host: str, shared: SharedCrawl, tmp_path: Path
) -> None:
    """Failure: SIGKILL: 3 workers on 3 sites x 10 slow pages (0.8 s an answer); one is killed
    with SIGKILL once the server has seen 6 pages. The others finish the crawl: every URL answered
    200 at least once; a URL fetched twice is one the killed worker held at the kill, so at most 3
    of them (one per site: concurrency 1), each fetched again only after its lease expired
    (timeout 5 s + 15 s); robots.txt once per site; the KB holds every page once."""
    sites = [f"k{i}.{host}" for i in range(3)]
    for site in sites:
        server.add(site, {"/robots.txt": NO_ROBOTS, "*": Reply("<title>slow</title><p>slow page text</p>", delay=0.8)})
    urls = [server.url(site, f"/p{n}.html") for site in sites for n in range(10)]
    assert shared.add("--urls-file", write_urls(tmp_path / "urls.txt", urls), "--mode", "page").returncode == 0
    shared.settings["DOWNLOAD_TIMEOUT"] = "5"
    victim, *_ = shared.start(3)
    deadline = time.monotonic() + 120
    while sum(1 for s in sites for h in server.log(s) if h.path != "/robots.txt") < 6:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    victim.kill()
    killed_at = time.monotonic()
    victim.wait(timeout=30)
    shared.wait()
    hits = [hit for site in sites for hit in server.log(site)]
    counts = fetched(hits)
    assert {(s, "/robots.txt") for s in sites} <= set(counts)
    assert all(counts[(s, "/robots.txt")] == 1 for s in sites)
    pages = {key: n for key, n in counts.items() if key[1] != "/robots.txt"}
    assert set(pages) == {(s, f"/p{n}.html") for s in sites for n in range(10)}
    twice = [key for key, n in pages.items() if n > 1]
    assert all(pages[key] == 2 for key in twice) and len(twice) <= 3, twice
    for key in twice:
        first, second = [h for h in hits if (h.host, h.path) == key]
        assert first.start <= killed_at <= second.start
        assert second.start - killed_at >= 5.0  # not before the lease could expire (20 s after its last renewal)
    assert sorted(str(row["url"]) for row in stored_pages(shared)) == sorted(urls)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_worker_stopped_with_ctrl_c_ends_its_leases_at_once_every_url_fetched_once(
    server: TestServer, host: str, shared: SharedCrawl, tmp_path: Path, sig: signal.Signals
) -> None:
    """A worker stopped: Ctrl-C, SIGTERM: 2 workers on 3 sites x 8 pages; once the server has seen
    6 pages one worker gets SIGINT (or SIGTERM) and shuts down as Scrapy does, finishing what it had
    started. Once it has exited it holds no lease (every one acknowledged or put back, none left to
    expire in 45 s), the other worker finishes the crawl with every URL fetched exactly once, all of it
    before the stopped worker's leases would have expired, and the KB holds every page."""
    sites = [f"c{i}.{host}" for i in range(3)]
    for site in sites:
        server.add(site, {"/robots.txt": NO_ROBOTS, "*": Reply("<title>p</title><p>page text</p>", delay=0.5)})
    urls = [server.url(site, f"/p{n}.html") for site in sites for n in range(8)]
    assert shared.add("--urls-file", write_urls(tmp_path / "urls.txt", urls), "--mode", "page").returncode == 0
    shared.settings["DOWNLOAD_TIMEOUT"] = "30"  # a lease of 45 s
    stopped, _ = shared.start(2)
    deadline = time.monotonic() + 120
    while sum(1 for s in sites for h in server.log(s) if h.path != "/robots.txt") < 6:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    stopped.send_signal(sig)
    signalled = time.monotonic()
    assert stopped.wait(timeout=60) == 0, shared.log(0)[-3000:]
    joined = re.search(r"worker (\S+) joins crawl", shared.log(0))
    assert joined is not None
    rows = [row for row in shared.status() if row.get("worker") == joined.group(1)]
    assert len(rows) == 1 and rows[0]["in_flight"] == 0, rows  # nothing left to expire
    shared.wait(timeout=240)
    hits = [hit for site in sites for hit in server.log(site)]
    assert fetched(hits) == {(s, p): 1 for s in sites for p in ["/robots.txt", *(f"/p{n}.html" for n in range(8))]}
    assert max(hit.start for hit in hits) < signalled + 45.0  # nobody waited for a lease to expire
    assert sorted(str(row["url"]) for row in stored_pages(shared)) == sorted(urls)


def test_redis_gone_for_a_minute_mid_crawl_workers_say_so_once_wait_and_go_on_losing_nothing(
    server: TestServer, host: str, postgres_schema_uri: str, tmp_path: Path
) -> None:
    """Failure: Redis unreachable for a minute: 2 workers on 3 sites x 8 pages, on a redis-server
    of the test's own with appendonly; once the server has seen 6 pages the Redis is stopped for 60 s
    and started again from its AOF. Each worker says so in one warning line and one line when Redis
    is back, and the crawl goes on: every page fetched exactly once (what was in flight finished
    meanwhile and was acknowledged once Redis answered), no site's gap under 1 s, the KB holds all."""
    port, data = free_port(), tmp_path / "redis"
    data.mkdir()
    redis_proc = redis_server(port, data, durable=True)
    crawl = SharedCrawl(
        name="outage",
        prefix="outage",
        kb_uri=postgres_schema_uri,
        tmp=tmp_path,
        redis_url=f"redis://127.0.0.1:{port}/0",
        settings={"DOWNLOAD_TIMEOUT": "5"},
    )
    try:
        sites = [f"o{i}.{host}" for i in range(3)]
        for site in sites:
            server.add(site, {"/robots.txt": NO_ROBOTS, "*": Reply("<title>p</title><p>page text</p>", delay=0.3)})
        urls = [server.url(site, f"/p{n}.html") for site in sites for n in range(8)]
        assert crawl.add("--urls-file", write_urls(tmp_path / "urls.txt", urls), "--mode", "page").returncode == 0
        crawl.start(2)
        deadline = time.monotonic() + 120
        while sum(1 for s in sites for h in server.log(s) if h.path != "/robots.txt") < 6:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        redis_proc.terminate()  # SHUTDOWN: the AOF is complete (appendfsync always)
        redis_proc.wait(timeout=30)
        time.sleep(60)
        redis_proc = redis_server(port, data, durable=True)
        crawl.wait(timeout=300)
        hits = [hit for site in sites for hit in server.log(site)]
        assert fetched(hits) == {(s, p): 1 for s in sites for p in ["/robots.txt", *(f"/p{n}.html" for n in range(8))]}
        for site in sites:
            assert all(gap >= 1.0 for gap in gaps(server.log(site)))
        assert sorted(str(row["url"]) for row in stored_pages(crawl)) == sorted(urls)
        for index in range(2):
            log = crawl.log(index)
            down = [line for line in log.splitlines() if "WARNING" in line and "does not answer" in line]
            back = [line for line in log.splitlines() if "answers again" in line]
            assert len(down) == 1 and len(back) == 1, log[-3000:]
    finally:
        crawl.stop()
        redis_proc.terminate()
        redis_proc.wait(timeout=30)
