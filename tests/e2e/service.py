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

__all__ = ["Service", "kb_search", "serve"]

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
