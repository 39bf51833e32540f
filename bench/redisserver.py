"""A redis-server of a caller's own on a free loopback port: bench/scaleout.py and the shared crawl's
failure tests (tests/e2e/test_shared_crawl_failures.py) each start one, never the shared 6379, so their
counts (INFO commandstats) hold no other client's commands and stopping it stops no one else's Redis.

``durable`` turns on the append-only file with an fsync per write, so a server stopped with SIGTERM and
started again on the same directory has every write (the "Redis gone for a minute" test); without it
nothing is persisted (the benchmark). ``redis_cluster`` starts three such servers in cluster mode and joins
them as a 3-master Redis Cluster (``redis-cli --cluster create``), for the benchmark's ``--cluster``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis

from tests.redis_cluster import cluster_port

__all__ = ["free_port", "redis_cluster", "redis_server"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 just now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_server(
    port: int, data: Path, *, durable: bool = False, wait: float = 20.0, cluster: bool = False
) -> subprocess.Popen[bytes]:
    """Start redis-server on ``port`` with its files in ``data`` (a Cluster node with ``cluster``); return once
    it answers PING."""
    persistence = ["--appendonly", "yes", "--appendfsync", "always"] if durable else ["--appendonly", "no"]
    node = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"] if cluster else []
    proc = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(data),
            "--save",
            "",
            *persistence,
            *node,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    deadline = time.monotonic() + wait
    try:
        while True:
            try:
                client.ping()
                return proc
            except redis.RedisError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    proc.kill()
                    raise RuntimeError(f"redis-server on port {port} did not start") from None
                time.sleep(0.05)
    finally:
        client.close()


def redis_cluster(data: Path, masters: int = 3, wait: float = 30.0) -> tuple[list[int], list[subprocess.Popen[bytes]]]:
    """Start ``masters`` cluster-mode redis-servers under ``data`` and join them as one Cluster (no replicas);
    return (their ports, their processes) once it says cluster_state:ok. Each port's bus port (+10000) is free."""
    ports: list[int] = []
    while len(ports) < masters:
        port = cluster_port()
        if port not in ports:
            ports.append(port)
    procs = []
    for port in ports:
        (data / str(port)).mkdir(parents=True)
        procs.append(redis_server(port, data / str(port), cluster=True))
    subprocess.run(
        [
            str(shutil.which("redis-cli")),
            "--cluster",
            "create",
            *(f"127.0.0.1:{port}" for port in ports),
            "--cluster-replicas",
            "0",
            "--cluster-yes",
        ],
        capture_output=True,
        check=True,
        timeout=60,
    )
    deadline = time.monotonic() + wait
    for port in ports:
        client = redis.Redis(port=port)
        try:
            while client.cluster("info").get("cluster_state") != "ok":
                if time.monotonic() > deadline:
                    raise RuntimeError("the benchmark's Redis Cluster did not reach cluster_state:ok")
                time.sleep(0.1)
        finally:
            client.close()
    return ports, procs
