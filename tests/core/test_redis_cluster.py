"""The shared crawl's keys on a real 3-master Redis Cluster: spread over every master, each partition's on one
slot, the client chosen from the server, and a crawl laid out before partitions refused in one line."""

from __future__ import annotations

import asyncio
import re

import pytest
import redis
from redis.crc import key_slot

from synapsecrawl.errors import ConfigError
from synapsecrawl.pacing.keys import PARTITIONS, partition_of
from synapsecrawl.pacing.redisclient import is_cluster, sync_redis
from synapsecrawl.pacing.shared import RedisPacing
from synapsecrawl.shared.entries import Entry
from synapsecrawl.shared.frontier import SharedFrontier
from tests.helpers import REDIS_URL, synapsecrawl
from tests.redis_cluster import LocalCluster


def test_the_client_follows_the_server(redis_cluster: LocalCluster) -> None:
    """One setting for both: a URL naming a Cluster node gets a Cluster client (INFO cluster says
    cluster_enabled:1), one naming a plain Redis a plain client, and a Redis that does not answer is not
    taken for a Cluster (nor remembered as one)."""
    assert is_cluster(redis_cluster.url) and not is_cluster(REDIS_URL)
    assert not is_cluster("redis://127.0.0.1:1/0")
    client = sync_redis(redis_cluster.url)
    assert isinstance(client, redis.cluster.RedisCluster)
    client.close()


def test_a_crawls_keys_are_spread_over_all_three_masters_and_each_partitions_are_on_one_slot(
    redis_cluster: LocalCluster, redis_prefix: str
) -> None:
    """OMN-SITE on a Cluster: a crawl of 64 sites (their pages queued, leased with the pacer's grant,
    acknowledged; Crawl-delays set by the pacer) puts keys on each of the 3 masters, and every key of a
    partition, the frontier's and the pacer's alike, hashes to that partition's one slot (CLUSTER KEYSLOT),
    so the lease script that touches both stays atomic there."""
    sites = [f"spread-{i}.test" for i in range(64)]
    frontier = SharedFrontier(
        redis_cluster.url,
        "spread",
        prefix=f"{redis_prefix}:frontier",
        pacer_prefix=f"{redis_prefix}:pacing",
        delay=0.0,
        grant=True,
    )
    pacer = RedisPacing(
        redis_cluster.url, delay=0.0, crawl_delay_cap=30.0, concurrency=1, lease_seconds=30.0,
        prefix=f"{redis_prefix}:pacing",
    )  # fmt: skip
    try:
        frontier.started_at()
        assert frontier.add([(site, Entry(f"http://{site}/{n}", "s")) for site in sites for n in range(2)]) == 128
        for site in sites:
            pacer.set_crawl_delay(site, None)
        leases = []
        while (got := frontier.lease("w1")[0]) is not None:
            leases.append(got)
        assert {lease.site for lease in leases} == set(sites) and all(lease.granted for lease in leases)
        frontier.ack("w1", leases[:10])
        assert frontier.status().sites[leases[0].site][2] == 1
    finally:
        asyncio.run(pacer.aclose())
        frontier.close()
    tagged = re.compile(r"\{(p\d+)\}")
    per_node = []
    for node in redis_cluster.nodes():
        keys = [key.decode() for key in node.scan_iter(match=f"{redis_prefix}:*", count=1000)]
        node.close()
        per_node.append(len(keys))
        for key in keys:
            found = tagged.search(key)
            if found is None:  # a crawl-wide key (sources, budget, meta): one key, any slot
                assert key.rsplit(":", 1)[-1] in {"sources", "budget", "meta"}, key
                continue
            assert key_slot(key.encode()) == key_slot(f"{{{found.group(1)}}}".encode()), key
    assert all(count > 0 for count in per_node), per_node
    assert {partition_of(site) for site in sites} == set(range(PARTITIONS))


def test_a_crawl_laid_out_before_partitions_is_refused_in_one_line(redis_url: str, redis_prefix: str) -> None:
    """A crawl made by an older synapsecrawl (its ready order one key, not one a partition) is not resumed
    and misread: a worker's start (``started_at``) and ``crawl add`` refuse it with one line that says what
    to do, on one Redis and on a Cluster."""
    client = sync_redis(redis_url)
    client.zadd(f"{redis_prefix}:frontier:old:ready", {"a.test": 0})
    client.close()
    frontier = SharedFrontier(redis_url, "old", prefix=f"{redis_prefix}:frontier")
    with pytest.raises(ConfigError, match="made by another synapsecrawl version"):
        frontier.started_at()
    frontier.close()
    out = synapsecrawl(
        "crawl", "add", "--crawl", "old", "--redis", redis_url, "--prefix", f"{redis_prefix}:frontier",
        "--url", "http://a.test/", "--mode", "page",
    )  # fmt: skip
    assert out.returncode != 0
    assert len(out.stderr.strip().splitlines()) == 1 and "crawl again under a new name" in out.stderr, out.stderr
