"""Helpers of the re-read and recrawl tests: pages that answer 304 to their validators, the server's log
since a point, and `synapsecrawl recrawl` as cron runs it against a KB whose sources are made due."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from http.server import BaseHTTPRequestHandler

from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import Source
from tests.helpers import bin_path
from tests.site import pages
from tests.site.pages import HTML
from tests.site.server import Hit, Reply, TestServer

__all__ = ["ABOUT", "TEST_HOSTS", "cron", "html", "make_due", "run_cron", "since", "sources", "validated"]

ABOUT = " is a page about {lower} with enough words to be read as text."
html = partial(pages.html, say="{title}" + ABOUT)

TEST_HOSTS = ("--set", "HOST_RESOLVE=*.test=127.0.0.1", "--set", "ALLOW_PRIVATE_ADDRESSES=True")


def validated(body: str, *, etag: str = "", last_modified: str = "") -> Callable[[BaseHTTPRequestHandler], Reply]:
    """A route that answers 304 when the request carries its current validator, as RFC 9110 §13.1 says."""

    def route(handler: BaseHTTPRequestHandler) -> Reply:
        headers = dict(HTML)
        if etag:
            headers["ETag"] = etag
        if last_modified:
            headers["Last-Modified"] = last_modified
        if etag and handler.headers.get("If-None-Match") == etag:
            return Reply(b"", status=304, headers={"ETag": etag})
        if not etag and last_modified and handler.headers.get("If-Modified-Since") == last_modified:
            return Reply(b"", status=304, headers={"Last-Modified": last_modified})
        return Reply(body, headers=headers)

    return route


def since(server: TestServer, host: str, start: int) -> list[Hit]:
    return server.log(host)[start:]


def cron(*args: str) -> list[str]:
    """The command line a crontab entry runs: `env -i` leaves PATH alone, as cron's minimal environment."""
    return ["env", "-i", "PATH=/usr/bin:/bin", bin_path("synapsecrawl"), "recrawl", *args]


def run_cron(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cron(*args), cwd="/", stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, check=False
    )


def sources(uri: str) -> list[Source]:
    store = open_store(uri)
    try:
        return store.sources()
    finally:
        store.close()


def make_due(uri: str) -> None:
    """A week passes: every source of the KB is due."""
    store = open_store(uri)
    for source in store.sources():
        store.put_source(replace(source, next_due=time.time() - 1))
    store.close()
