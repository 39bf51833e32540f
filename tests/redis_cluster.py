"""A real 3-master Redis Cluster on loopback for tests: redis-server in cluster mode on free ports under a
temporary directory, joined by ``redis-cli --cluster create``, with append-only files so a node restarted
(``restart``) comes back with its data. Skipped with the reason only where redis-server or redis-cli is absent.
"""

from __future__ import annotations

import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

__all__ = ["LocalCluster", "cluster_port", "local_cluster"]

# Node ports 20000-22767, so their bus ports are 30000-32767.
_LOWEST, _SPAN = 20000, 2768


def cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too, both below the kernel's ephemeral range
    (32768 and up): a port taken from that range by binding port 0 may be one that another test's server (a
    PostgreSQL cluster being restarted on its own port) has just let go of for a moment, and a node that took it
    made that restart fail."""
    while True:
        port = random.randrange(_LOWEST, _LOWEST + _SPAN)
        with socket.socket() as sock, socket.socket() as bus:
            try:
                sock.bind(("127.0.0.1", port))
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


@dataclass
class LocalCluster:
    """Three masters under ``root``; ``url`` names the first (a client finds the others through it)."""

    root: Path
    ports: list[int] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def _spawn(self, index: int) -> subprocess.Popen[bytes]:
        port, home = self.ports[index], self.root / f"node-{index}"
        home.mkdir(parents=True, exist_ok=True)
        return subprocess.Popen(
            [
                str(shutil.which("redis-server")),
                "--port", str(port), "--bind", "127.0.0.1", "--dir", str(home),
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "30000",  # a node restarted within it is not failed over
                "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                "--logfile", str(home / "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip

    def _answers(self, index: int) -> bool:
        client = redis.Redis(port=self.ports[index], socket_connect_timeout=1)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def start(self) -> LocalCluster:
        while len(set(self.ports)) < 3:
            self.ports = [cluster_port() for _ in range(3)]
        self.procs = [self._spawn(i) for i in range(3)]
        self._wait(lambda: all(self._answers(i) for i in range(3)), "the nodes did not start")
        created = subprocess.run(
            [str(shutil.which("redis-cli")), "--cluster", "create"]
            + [f"127.0.0.1:{port}" for port in self.ports]
            + ["--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert created.returncode == 0, created.stdout + created.stderr
        self._wait(self.ok, "the cluster did not reach cluster_state:ok")
        return self

    def ok(self) -> bool:
        """Every node answers and says cluster_state:ok."""
        for port in self.ports:
            client = redis.Redis(port=port, socket_connect_timeout=1)
            try:
                if client.cluster("info").get("cluster_state") != "ok":
                    return False
            except redis.RedisError:
                return False
            finally:
                client.close()
        return True

    def nodes(self) -> list[redis.Redis]:
        """A plain client of each master (close them)."""
        return [redis.Redis(port=port) for port in self.ports]

    def restart(self, index: int, down_for: float = 0.0) -> None:
        """Stop node ``index`` with SIGTERM (it writes its AOF), and ``down_for`` seconds later start it again
        on its files."""
        self.stop_node(index)
        time.sleep(down_for)
        self.start_node(index)

    def stop_node(self, index: int) -> None:
        """Stop node ``index`` with SIGTERM (it writes its AOF); its slots have no other master meanwhile."""
        proc = self.procs[index]
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    def start_node(self, index: int) -> None:
        """Start node ``index`` again on its files; return once the cluster says ok."""
        self.procs[index] = self._spawn(index)
        self._wait(self.ok, f"node {index} did not come back")

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def _wait(self, check: object, what: str, within: float = 60.0) -> None:
        deadline = time.monotonic() + within
        while not check():  # type: ignore[operator]
            if time.monotonic() > deadline:
                self.stop()
                logs = "".join(p.read_text(errors="replace")[-1500:] for p in self.root.glob("node-*/redis.log"))
                pytest.fail(f"Redis Cluster: {what}\n{logs}")
            time.sleep(0.1)


@contextmanager
def local_cluster(root: Path) -> Iterator[LocalCluster]:
    """A started 3-master cluster under ``root``, stopped at the end; skipped where redis-server is absent."""
    missing = [name for name in ("redis-server", "redis-cli") if shutil.which(name) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not on PATH: no Redis Cluster to test against")
    cluster = LocalCluster(root).start()
    try:
        yield cluster
    finally:
        cluster.stop()
