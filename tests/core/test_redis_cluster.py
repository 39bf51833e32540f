"""The shared crawl's keys on a real 3-master Redis Cluster: spread over every master, each partition's on one
slot, the client chosen from the server, and a crawl laid out before partitions refused in one line."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import redis
import redis.cluster
from redis.backoff import ExponentialWithJitterBackoff
from redis.crc import key_slot

from synapsecrawl.errors import ConfigError
from synapsecrawl.pacing.keys import PARTITIONS, partition_of
from synapsecrawl.pacing.redisclient import (
    CLUSTER_BACKOFF_CAP,
    CLUSTER_RETRIES,
    cluster_retry,
    is_cluster,
    sync_redis,
)
from synapsecrawl.pacing.shared import RedisPacing
from synapsecrawl.shared.entries import Entry
from synapsecrawl.shared.frontier import SharedFrontier
from tests.helpers import REDIS_URL, synapsecrawl
from tests.redis_cluster import LocalCluster, local_cluster


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


def test_a_master_down_fails_a_sync_call_after_a_few_quick_tries_and_the_client_goes_on_once_it_is_back(
    tmp_path: Path,
) -> None:
    """A sync Cluster client's call runs on the reactor thread: with a master stopped, a call to a key of
    its slots (a plain command, a script) raises ``redis.ConnectionError`` after ``CLUSTER_RETRIES`` tries
    at most ``CLUSTER_BACKOFF_CAP`` apart (not redis-py's ten, up to a second apart), calls to the other
    masters are answered meanwhile, and once the master is back the same client reads what it held."""
    with local_cluster(tmp_path) as cluster:
        client = sync_redis(cluster.url)
        try:
            assert client.retry == cluster_retry()
            assert client.retry.get_retries() == CLUSTER_RETRIES == 2
            assert ExponentialWithJitterBackoff(cap=CLUSTER_BACKOFF_CAP, base=0.01) == client.retry._backoff
            assert client.nodes_manager.connection_kwargs["socket_connect_timeout"] <= 1.0
            keys: dict[int, str] = {}
            for i in range(1000):
                keys.setdefault(client.get_node_from_key(f"down-{i}").port, f"down-{i}")
            assert sorted(keys) == sorted(cluster.ports)
            for key in keys.values():
                client.set(key, key)
            script = client.register_script("return redis.call('GET', KEYS[1])")
            down, up = keys[cluster.ports[1]], keys[cluster.ports[0]]
            cluster.stop_node(1)
            tries = _Counting(client)
            with pytest.raises(redis.ConnectionError):
                client.get(down)
            assert tries.count == 1 + CLUSTER_RETRIES
            with pytest.raises(redis.ConnectionError):
                script(keys=[down])
            assert client.get(up) == up.encode()
            cluster.start_node(1)
            assert client.get(down) == down.encode()
            assert script(keys=[down]) == down.encode()
        finally:
            client.close()


class _Counting:
    """Counts the tries of a Cluster client's calls: each try asks the client which node serves the slot."""

    def __init__(self, client: redis.cluster.RedisCluster) -> None:
        self.count = 0
        resolve = client._determine_nodes

        def counted(*args: object, **kwargs: object) -> object:
            self.count += 1
            return resolve(*args, **kwargs)

        client._determine_nodes = counted  # type: ignore[method-assign]
