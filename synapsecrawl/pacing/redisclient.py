"""One Redis or a Redis Cluster behind one URL: the server says which, and the client follows.

A URL names a node; ``INFO cluster`` tells whether it is a Cluster node (``cluster_enabled:1``), and then
redis-py's ``RedisCluster`` (sync or asyncio) routes each command and script to the node of its key's slot.
No setting says which: the same ``PACING_REDIS_URL`` works for both. ``run_scripts`` sends several script
calls in one pipeline (one round trip on one Redis, one per node on a Cluster), loading a script a node has
not seen (a shard restarted) and running that call again. A sync Cluster client gives up on a node that
does not answer after ``CLUSTER_RETRIES`` quick tries: its calls run on the reactor thread, and the crawl
asks again a second later on its own. Reads no setting and no meta key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from functools import lru_cache
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import NoScriptError
from redis.retry import Retry

__all__ = [
    "ASYNC_CONNECTIONS",
    "CLUSTER_BACKOFF_CAP",
    "CLUSTER_RETRIES",
    "Call",
    "async_redis",
    "cluster_retry",
    "gated",
    "is_cluster",
    "run_scripts",
    "sync_redis",
]

_TIMEOUTS: dict[str, Any] = {"socket_timeout": 5.0, "socket_connect_timeout": 5.0}

# redis-py's RedisCluster retries a command that met a node down (refused, timed out) ten times, up to a second
# apart, refreshing its slot map in between: a sync call held the reactor thread, and with it every download of
# the worker, for seconds per call. The frontier, the pacer and the web crawl's seen-set already treat a call
# that fails as Redis down and ask again a second later, so two quick tries are enough to ride out a dropped
# connection; a node that refuses a connection then costs well under a second. A connection that does not open
# within a second is a node down too (the kernel's first SYN retry is at one second).
CLUSTER_RETRIES = 2
CLUSTER_BACKOFF_CAP = 0.25
_CLUSTER_SYNC: dict[str, Any] = {"socket_timeout": 5.0, "socket_connect_timeout": 1.0}

# redis-py's asyncio pool (8.x) refuses a command when 100 connections are in use ("Too many connections")
# instead of waiting for one. A worker's downloader asks for many sites' turns at once (a grant, a send and a
# release for each download): a shared crawl of hundreds of sites ran into it, each refused grant held its site a
# second and each refused send held its site until the lease expired (docs/benchmarks.md,
# scale-out). A blocking pool lets a call wait for a free connection; one
# that waits past the timeout is an unreachable Redis, as before.
ASYNC_CONNECTIONS = 32

# A script call: the registered script, its KEYS (the first names the slot it runs on) and its ARGV.
Call = tuple[Any, Sequence[Any], Sequence[Any]]


@lru_cache(maxsize=32)
def _cluster_known(url: str) -> bool:
    client = redis.Redis.from_url(url, **_TIMEOUTS)
    try:
        return int(client.info("cluster").get("cluster_enabled", 0)) == 1
    finally:
        client.close()


def is_cluster(url: str) -> bool:
    """Whether the Redis at ``url`` is a Cluster node; False when it does not answer (asked again next time)."""
    try:
        return _cluster_known(url)
    except redis.RedisError:
        return False


def cluster_retry() -> Retry:
    """How a sync Cluster client retries a call that met a node down: ``CLUSTER_RETRIES`` times, at most
    ``CLUSTER_BACKOFF_CAP`` seconds apart (a fresh object per client: redis-py's backoff state is per client)."""
    return Retry(ExponentialWithJitterBackoff(cap=CLUSTER_BACKOFF_CAP, base=0.01), CLUSTER_RETRIES)


def sync_redis(url: str) -> Any:
    """A client of the Redis or Redis Cluster at ``url`` (``redis.Redis`` or ``redis.cluster.RedisCluster``).
    One Redis that does not answer fails a call at once; a Cluster client tries ``cluster_retry()``'s few times."""
    if is_cluster(url):
        return redis.cluster.RedisCluster.from_url(url, retry=cluster_retry(), **_CLUSTER_SYNC)
    return redis.Redis.from_url(url, **_TIMEOUTS)


def async_redis(url: str) -> Any:
    """An asyncio client of the Redis or Redis Cluster at ``url``; on one Redis, its calls wait for one of
    ``ASYNC_CONNECTIONS`` connections (a Cluster client opens connections per node as they are needed)."""
    if is_cluster(url):
        return redis.asyncio.cluster.RedisCluster.from_url(url, **_TIMEOUTS)
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        url, max_connections=ASYNC_CONNECTIONS, timeout=5.0, **_TIMEOUTS
    )
    return redis.asyncio.Redis.from_pool(pool)


def gated(script: Callable[..., Awaitable[Any]], gate: asyncio.Semaphore) -> Callable[..., Awaitable[Any]]:
    """``script`` (an asyncio client's) called by at most the ``gate``'s count at once: redis-py's asyncio
    Cluster client, unlike the blocking pool above, refuses a call past a node's connections
    (``MaxConnectionsError``, read as Redis down) instead of waiting for one."""

    async def call(**kwargs: Any) -> Any:
        async with gate:
            return await script(**kwargs)

    return call


def run_scripts(client: Any, calls: Sequence[Call], *, raise_errors: bool = True) -> list[Any]:
    """Run ``calls`` in one pipeline (not a transaction: each script is atomic on its own slot); their
    replies in order. A call refused for a script its node does not hold is run again once it is loaded.
    Any other error is raised (``redis.RedisError``) after every call has been sent, or with ``raise_errors``
    False left in its call's place. A Cluster node down fails the whole pipeline in redis-py 8.2, not only that
    node's calls: every place then holds the error, though calls to the other nodes may have run, so a caller
    takes each such call as not known to have happened (a lease it did not hear of lapses; an ack is sent
    again)."""
    if len(calls) == 1 and raise_errors:
        script, keys, args = calls[0]
        return [script(keys=keys, args=args)]
    pipe = client.pipeline(transaction=False)
    for script, keys, args in calls:
        pipe.evalsha(script.sha, len(keys), *keys, *args)
    try:
        replies = list(pipe.execute(raise_on_error=False))
    except redis.RedisError as error:  # the pipeline as a whole (a Cluster it could not map)
        if raise_errors:
            raise
        return [error] * len(calls)
    for i, reply in enumerate(replies):
        if isinstance(reply, NoScriptError):
            script, keys, args = calls[i]
            try:
                replies[i] = script(keys=keys, args=args)  # loads it on that node, then runs it
            except redis.RedisError as error:
                replies[i] = error
    for reply in replies:
        if raise_errors and isinstance(reply, Exception):
            raise reply
    return replies
