"""`synapsecrawl serve` and `synapsecrawl kb search` run as an operator runs them, for the tests that search."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import zygote
from tests.conftest import _bin, synapsecrawl
from tests.helpers import listening

__all__ = ["Service", "bytes_read", "kb_search", "search_processes", "serve"]

_LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


@dataclass
class Service:
    """A running `synapsecrawl serve` and where it listens."""

    proc: zygote.Forked | subprocess.Popen[bytes]
    base: str
    log: Path

    def call(
        self, path: str, *, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]]:
        request = urllib.request.Request(
            f"{self.base}{path}",
            data=body,
            method="POST" if body is not None else "GET",
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            with error:
                return error.code, json.loads(error.read())

    def search(self, **params: object) -> tuple[int, dict[str, Any]]:
        return self.call(f"/api/search?{urllib.parse.urlencode(params)}")


@contextmanager
def serve(tmp: Path, uri: str, *args: str, env: dict[str, str] | None = None) -> Iterator[Service]:
    """`synapsecrawl serve --uri URI --port 0`; stopped with SIGINT, as Ctrl-C would."""
    log = tmp / f"serve-{time.monotonic_ns()}.log"
    environment = {k: v for k, v in os.environ.items() if k not in ("SEARCH_TOKEN", "BOT_PROFILE")}
    with log.open("wb") as out:
        proc = zygote.popen(
            [_bin("synapsecrawl"), "serve", "--uri", uri, "--port", "0", *args],
            cwd=tmp,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**environment, **(env or {})},
        )
    with listening(proc, log, _LISTENING, within=60) as address:
        yield Service(proc, address, log)


def kb_search(uri: str, query: str, *extra: str) -> list[dict[str, Any]]:
    out = synapsecrawl("kb", "search", query, "--uri", uri, "--format", "jsonl", *extra)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def search_processes(server: int) -> list[int]:
    """The pids of the search processes `serve --workers N` (N > 1) started (its children that multiprocessing
    spawned, not its resource tracker), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if parent == server and b"spawn_main" in command:
            found.append(int(stat.parent.name))
    return sorted(found)


def bytes_read(pid: int) -> int:
    """The bytes process ``pid`` has read through read(2) and the like (/proc/PID/io's rchar): a search process
    reads each search it is given from its pipe, and nothing while idle."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError(f"no rchar in /proc/{pid}/io")
