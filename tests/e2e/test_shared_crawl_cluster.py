"""A shared crawl on a Redis Cluster of its own whose shard is restarted mid-crawl (its append-only file kept)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from redis.crc import key_slot

from synapsecrawl.pacing.keys import partition_of, partition_tag
from tests.e2e.sharedcrawl import SharedCrawl, fetched, stored_pages
from tests.helpers import gaps, write_urls
from tests.redis_cluster import local_cluster
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e


def _busiest_node(ports: list[int], sites: list[str], slots: list[list[int]]) -> int:
    """The index of the master serving the partitions of most of ``sites`` (``slots``: CLUSTER SLOTS rows)."""
    served = [0] * len(ports)
    for site in sites:
        slot = key_slot(partition_tag(partition_of(site)).encode())
        for start, end, port in slots:
            if start <= slot <= end:
                served[ports.index(port)] += 1
    return max(range(len(ports)), key=lambda i: served[i])


def test_a_shard_restarted_mid_crawl_loses_nothing_every_page_fetched_once(
    server: TestServer, host: str, postgres_schema_uri: str, tmp_path: Path
) -> None:
    """Failure, on a 3-master Redis Cluster (appendonly, appendfsync always): 2 workers on 6 sites x 6 pages;
    once the server has seen 8 pages, the master serving most of the sites' partitions is stopped (SIGTERM:
    its AOF complete) for 3 s and started again on its files. The crawl finishes: every page fetched exactly once
    (nothing lost, nothing asked twice), no site's gap under 1 s, the PostgreSQL KB holds every page."""
    with local_cluster(tmp_path / "cluster") as cluster:
        crawl = SharedCrawl(
            name="shard",
            prefix="shard",
            kb_uri=postgres_schema_uri,
            tmp=tmp_path,
            redis_url=cluster.url,
            settings={"DOWNLOAD_TIMEOUT": "5"},
        )
        try:
            sites = [f"r{i}.{host}" for i in range(6)]
            for site in sites:
                server.add(
                    site, {"/robots.txt": Reply("", status=404), "*": Reply("<title>p</title><p>text</p>", delay=0.3)}
                )
            urls = [server.url(site, f"/p{n}.html") for site in sites for n in range(6)]
            assert crawl.add("--urls-file", write_urls(tmp_path / "urls.txt", urls), "--mode", "page").returncode == 0
            first = cluster.nodes()[0]
            slots = [[int(row[0]), int(row[1]), int(row[2][1])] for row in first.execute_command("CLUSTER", "SLOTS")]
            first.close()
            busiest = _busiest_node(cluster.ports, sites, slots)
            crawl.start(2)
            deadline = time.monotonic() + 120
            while sum(1 for s in sites for h in server.log(s) if h.path != "/robots.txt") < 8:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            cluster.restart(busiest, down_for=3.0)
            seen = sum(1 for s in sites for h in server.log(s) if h.path != "/robots.txt")
            assert seen < len(urls)  # the crawl was still going when the shard came back
            crawl.wait(timeout=300)
            hits = [hit for site in sites for hit in server.log(site)]
            assert fetched(hits) == {
                (s, p): 1 for s in sites for p in ["/robots.txt", *(f"/p{n}.html" for n in range(6))]
            }
            for site in sites:
                assert all(gap >= 1.0 for gap in gaps(server.log(site)))
            assert sorted(str(row["url"]) for row in stored_pages(crawl)) == sorted(urls)
        finally:
            crawl.stop()
