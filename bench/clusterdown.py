"""What one sync Redis call costs a worker while a Redis Cluster master is down.

    python -m bench.clusterdown [--calls 3]

A 3-master Cluster of its own (``tests.redis_cluster``), one master stopped (SIGTERM): each call to a key of
that master's slots, a plain GET, a script and a pipeline of one script call per master (``run_scripts``), is
timed with the client a worker makes (``sync_redis``) and with redis-py's defaults (``RedisCluster`` with only
the timeouts), then once more of each after the master is back. Such calls run on the worker's reactor thread:
while one waits, none of the worker's downloads moves. Wall times on a shared machine are upper bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
import redis.cluster

from synapsecrawl.pacing.redisclient import _TIMEOUTS, run_scripts, sync_redis
from tests.redis_cluster import LocalCluster

__all__ = ["main", "run_clusterdown"]


def _timed(call: Any) -> tuple[float, str]:
    started = time.monotonic()
    try:
        reply = call()
        outcome = "errors " + str(sum(isinstance(r, Exception) for r in reply)) if isinstance(reply, list) else "ok"
    except redis.RedisError as error:
        outcome = type(error).__name__
    return round(time.monotonic() - started, 3), outcome


def run_clusterdown(calls: int) -> dict[str, Any]:
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="bench-clusterdown-"))).start()
    result: dict[str, Any] = {"load": os.getloadavg()[0], "down": {}, "back": {}}
    try:
        clients = {
            "worker (sync_redis)": sync_redis(cluster.url),
            "redis-py defaults": redis.cluster.RedisCluster.from_url(cluster.url, **_TIMEOUTS),
        }
        probe = clients["worker (sync_redis)"]
        keys: dict[int, str] = {}
        for i in range(1000):
            keys.setdefault(probe.get_node_from_key(f"down-{i}").port, f"down-{i}")
        for key in keys.values():
            probe.set(key, key)
        down = keys[cluster.ports[1]]
        cluster.stop_node(1)
        for phase in ("down", "back"):
            if phase == "back":
                cluster.start_node(1)
            for name, client in clients.items():
                script = client.register_script("return redis.call('GET', KEYS[1])")
                kinds = {
                    "get": lambda c=client: c.get(down),
                    "script": lambda s=script: s(keys=[down]),
                    "pipeline, a call per master": lambda c=client, s=script: run_scripts(
                        c, [(s, [key], []) for key in keys.values()], raise_errors=False
                    ),
                }
                result[phase][name] = {
                    kind: [_timed(call) for _ in range(calls if phase == "down" else 1)] for kind, call in kinds.items()
                }
        for client in clients.values():
            client.close()
    finally:
        cluster.stop()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3, help="calls of each kind while the master is down")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    result = run_clusterdown(args.calls)
    print(json.dumps(result, indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
