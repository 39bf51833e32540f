"""A running `scrapy crawl ondemand` for the e2e tests, as an operator runs it, and a client of its JSON API."""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import zygote
from tests.helpers import ROOT, bin_path, listening, synapsecrawl

__all__ = ["Fetcher", "run_ondemand"]

_LISTENING = re.compile(r"on-demand fetch listening on (http://127\.0\.0\.1:\d+)")


@dataclass
class Fetcher:
    """A running `scrapy crawl ondemand` and where it listens."""

    proc: zygote.Forked | subprocess.Popen[bytes]
    base: str
    kb_uri: str
    log: Path

    def post(self, url: object, *, raw: bytes | None = None) -> tuple[int, dict[str, Any]]:
        data = raw if raw is not None else json.dumps({"url": url}).encode()
        request = urllib.request.Request(
            f"{self.base}/api/web_fetch", data=data, method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=90) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            with error:
                return error.code, json.loads(error.read())

    def search(self, **params: str) -> tuple[int, dict[str, Any]]:
        """GET /api/search with ``params``: the search the on-demand server also serves."""
        try:
            with urllib.request.urlopen(
                f"{self.base}/api/search?{urllib.parse.urlencode(params)}", timeout=60
            ) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            with error:
                return error.code, json.loads(error.read())

    def kb(self) -> list[dict[str, Any]]:
        """The agents' KB, as `synapsecrawl kb list` prints it."""
        out = synapsecrawl("kb", "list", "--uri", self.kb_uri, "--kb", "agents", "--format", "jsonl")
        assert out.returncode == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines()]


@contextmanager
def run_ondemand(tmp: Path, extra: dict[str, str] | None = None) -> Iterator[Fetcher]:
    """`scrapy crawl ondemand` under snagabot on a free port; stopped with SIGINT, as Ctrl-C would."""
    kb_uri = f"sqlite:///{tmp / 'kb.sqlite3'}"
    log = tmp / "crawl.log"
    settings = {
        "BOT_PROFILE": "snagabot",
        "ONDEMAND_PORT": "0",
        "HOST_RESOLVE": "*.test=127.0.0.1",
        "ALLOW_PRIVATE_ADDRESSES": "True",
        "KB_URI": kb_uri,
        "LOG_LEVEL": "INFO",
        **(extra or {}),
    }
    cmd = [bin_path("scrapy"), "crawl", "ondemand", "-a", "kb=agents"]
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    with log.open("wb") as out:
        proc = zygote.popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    # a loaded machine (the suite on xdist) starts slowly
    with listening(proc, log, _LISTENING, within=90) as address:
        yield Fetcher(proc, address, kb_uri, log)
