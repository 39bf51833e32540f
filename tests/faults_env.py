"""Real faults for the knowledge base: a PostgreSQL cluster a test owns, and a small filesystem.

``PrivateCluster`` runs Debian's ``initdb``/``pg_ctl`` in a temporary directory on a port of its own, so a
test can stop, kill and restart *its* server without touching the one other tests share. ``small_disk``
mounts a tmpfs of a few hundred KiB (root only). Either skips with the reason where the machine cannot.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["PrivateCluster", "pages_in_sqlite", "private_cluster", "small_disk", "urls_in_postgres"]


def _pg_bin() -> Path | None:
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    return versions[-1].parent if versions else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateCluster:
    """A PostgreSQL server of one test's own: ``uri``, ``stop()``, ``kill()``, ``start()``."""

    def __init__(self) -> None:
        bindir = _pg_bin()
        if bindir is None:
            pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql")
        self._bin = bindir
        # Its own temporary directory, not pytest's: that one is private to root, and the server runs as postgres.
        root = self._root = Path(tempfile.mkdtemp(prefix="synapsecrawl-pg-"))
        root.chmod(0o755)
        self._data = root / "pgdata"
        self._run = root / "pgrun"
        self.port = _free_port()
        self._user: list[str] = []
        if os.geteuid() == 0:  # initdb refuses root: the cluster belongs to the postgres user
            if shutil.which("runuser") is None:
                pytest.skip("running as root without runuser: cannot start a PostgreSQL cluster")
            self._user = ["runuser", "-u", "postgres", "--"]
        for path in (root, self._data, self._run):
            path.mkdir(exist_ok=True)
            if self._user:
                shutil.chown(path, "postgres", "postgres")
        self._pg("initdb", "-D", str(self._data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        self.uri = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _pg(self, program: str, *args: str) -> None:
        command = [*self._user, str(self._bin / program), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stderr.strip() or done.stdout.strip()}")

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = f"-p {self.port} -k {self._run} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._pg("pg_ctl", "-D", str(self._data), "-o", options, "-l", str(self._data / "log"), "-w", "start")

    def stop(self) -> None:
        """A clean, fast shutdown: sessions are ended (as an operator's restart does)."""
        self._pg("pg_ctl", "-D", str(self._data), "-m", "fast", "-w", "stop")

    def kill(self) -> None:
        """The server dies at once (SIGKILL of the postmaster and its children); the next start recovers."""
        pid_file = self._data / "postmaster.pid"
        if not pid_file.exists():
            return
        pid = int(pid_file.read_text().split()[0])
        subprocess.run(["pkill", "-KILL", "-P", str(pid)], check=False)
        os.kill(pid, 9)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)

    def close(self) -> None:
        """Stop the server if it runs; delete its files."""
        try:
            if (self._data / "postmaster.pid").exists():
                self._pg("pg_ctl", "-D", str(self._data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self._root, ignore_errors=True)


@contextmanager
def small_disk(root: Path, size_kib: int) -> Iterator[Path]:
    """A tmpfs of ``size_kib`` KiB mounted under ``root`` for the test, unmounted after it."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small filesystem needs root and mount(8)")
    where = root / "small-disk"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@contextmanager
def private_cluster() -> Iterator[PrivateCluster]:
    """A started ``PrivateCluster``, stopped and deleted after."""
    own = PrivateCluster()
    own.start()
    try:
        yield own
    finally:
        own.close()


def urls_in_postgres(uri: str) -> set[str]:
    """The URLs of the pages the PostgreSQL KB at ``uri`` holds (none while it cannot be reached)."""
    import psycopg

    try:
        with psycopg.connect(uri, connect_timeout=2) as conn:
            return {row[0] for row in conn.execute("SELECT url FROM pages")}
    except psycopg.Error:
        return set()


def pages_in_sqlite(path: Path) -> int:
    """How many pages the SQLite KB at ``path`` holds, read-only (0 before it exists)."""
    import sqlite3

    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT count(*) FROM pages").fetchone()[0])
    except sqlite3.Error:  # not made yet
        return 0
