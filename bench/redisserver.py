"""A redis-server of a caller's own on a free loopback port: bench/scaleout.py and the shared crawl's
failure tests (tests/e2e/test_shared_crawl_failures.py) each start one, never the shared 6379, so their
counts (INFO commandstats) hold no other client's commands and stopping it stops no one else's Redis.

``durable`` turns on the append-only file with an fsync per write, so a server stopped with SIGTERM and
started again on the same directory has every write (the "Redis gone for a minute" test); without it
nothing is persisted (the benchmark).
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import redis

__all__ = ["free_port", "redis_server"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 just now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_server(port: int, data: Path, *, durable: bool = False, wait: float = 20.0) -> subprocess.Popen[bytes]:
    """Start redis-server on ``port`` with its files in ``data``; return once it answers PING."""
    persistence = ["--appendonly", "yes", "--appendfsync", "always"] if durable else ["--appendonly", "no"]
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data), "--save", "", *persistence],
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
