"""One crawl shared by several worker processes through Redis, its KB in PostgreSQL (#16).

Everything is asserted from the outside: what the test server saw (every URL
once, per-site gaps and concurrency across workers) and what the KB holds.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from tests.conftest import gaps, write_urls
from tests.e2e.sharedcrawl import SharedCrawl, fetched
from tests.site.server import Hit, Reply, TestServer

pytestmark = pytest.mark.e2e

NO_ROBOTS = Reply("", status=404)


def _page(title: str, links: tuple[str, ...] = ()) -> Reply:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return Reply(f"<html><head><title>{title}</title></head><body><p>{title} has words to read.</p>"
                 f"{anchors}</body></html>")


def _in_flight(hits: list[Hit]) -> int:
    return max((sum(1 for other in hits if other.start <= hit.start < other.end) for hit in hits), default=0)


@pytest.fixture
def shared(redis_prefix: str, postgres_schema_uri: str, tmp_path: Path, host: str):  # type: ignore[no-untyped-def]
    crawl = SharedCrawl(name=host.replace(".", "-"), prefix=redis_prefix, kb_uri=postgres_schema_uri, tmp=tmp_path)
    try:
        yield crawl
    finally:
        crawl.stop()


def test_three_workers_fetch_a_url_list_once_each_with_every_sites_gaps_held(
    server: TestServer, host: str, shared: SharedCrawl, tmp_path: Path
) -> None:
    """#16 (frontier and duplicate filter in Redis; SYN-RATE across machines): a URL list over 4 sites
    (6 pages each, one listed twice) added once and crawled by 3 workers: the server sees every page
    exactly once and each robots.txt once (not once per worker), gaps of at least 1 s between
    requests to one site whichever worker sent them, never two in flight at a site; the PostgreSQL KB
    holds every page once; `crawl status` shows the crawl drained, the pages done spread over more
    than one worker."""
    sites = [f"s{i}.{host}" for i in range(4)]
    for site in sites:
        server.add(site, {"/robots.txt": NO_ROBOTS, "*": _page(f"page of {site}")})
    urls = [server.url(site, f"/p{n}.html") for site in sites for n in range(6)]
    out = shared.add("--urls-file", write_urls(tmp_path / "urls.txt", [*urls, urls[0]]), "--mode", "page")
    assert out.returncode == 0, out.stderr
    shared.start(3)
    shared.wait()

    hits = [hit for site in sites for hit in server.log(site)]
    counts = fetched(hits)
    assert counts == {(site, path): 1 for site in sites for path in ["/robots.txt"] + [f"/p{n}.html" for n in range(6)]}
    for site in sites:
        site_hits = server.log(site)
        assert all(gap >= 1.0 for gap in gaps(site_hits)), (site, gaps(site_hits))
        assert _in_flight(site_hits) == 1
    stored = sorted(str(row["url"]) for row in _kb(shared))
    assert stored == sorted(urls)
    status = shared.status()
    total = status[-1]
    assert total["drained"] is True and total["done"] == len(urls)
    workers = [row for row in status if "worker" in row]
    assert sum(int(row["done"]) for row in workers) >= len(urls)
    assert len([row for row in workers if int(row["done"]) > 0]) >= 2


def _kb(shared: SharedCrawl) -> list[dict[str, object]]:
    import json

    from tests.conftest import synapsecrawl

    out = synapsecrawl("kb", "list", "--uri", shared.kb_uri, "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


_unused = (itertools, time)
