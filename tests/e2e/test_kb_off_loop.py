"""A crawl sends no SQL from the reactor's thread: every store call of a crawl goes through the KB gateway.

A store call on the event loop holds every site's next request for a round trip to PostgreSQL. The crawl
runs as its own process (not a fork of the test's zygote) with tests/sqlcount first on PYTHONPATH, which
counts psycopg's statements by thread.
"""

from __future__ import annotations

from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.helpers import ROOT, SQL_COUNTER, sql_counts, write_urls
from tests.site.pages import ROBOTS_ALL, page
from tests.site.server import Reply, TestServer


def _unchanged(reply: Reply, etag: str) -> Callable[[BaseHTTPRequestHandler], Reply]:
    def route(handler: BaseHTTPRequestHandler) -> Reply:
        if handler.headers.get("If-None-Match") == etag:
            return Reply(b"", status=304, headers={"ETag": etag})
        return reply

    return route


def _site(*, second: bool) -> dict[str, object]:
    routes: dict[str, object] = {"/robots.txt": ROBOTS_ALL}
    for n in range(6):
        etag = f'"p{n}"'
        if second and n % 3 == 0:  # now says noindex: the page leaves the KB
            routes[f"/p{n}.html"] = page(f"Page {n}", head='<meta name="robots" content="noindex">')
        else:
            routes[f"/p{n}.html"] = _unchanged(page(f"Page {n}", headers={"ETag": etag}), etag)
    return routes


def test_a_crawl_and_its_reread_send_no_sql_from_the_reactors_thread(
    server: TestServer, host: str, crawl, postgres_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SYN-RATE, SYN-REREAD, SYN-REMOVE: into a PostgreSQL KB, a first crawl stores six pages and a re-read finds
    two now noindex (removed) and four unchanged (304, verified); neither crawl sends one SQL statement
    from the reactor's thread once the store is open: the reads, writes, verifications and removals
    all ran on the gateway's threads (which did send statements)."""
    counts = tmp_path / "sql"
    counts.mkdir()
    monkeypatch.setenv("SYNAPSECRAWL_TEST_SPAWN", "1")  # a fresh process, so that sitecustomize loads
    monkeypatch.setenv("PYTHONPATH", f"{SQL_COUNTER}:{ROOT}")
    monkeypatch.setenv("SQL_COUNTS_DIR", str(counts))
    urls = write_urls(tmp_path / "urls.txt", [server.url(host, f"/p{n}.html") for n in range(6)])
    for second in (False, True):
        server.add(host, _site(second=second))  # type: ignore[arg-type]
        run = crawl("page", args={"urls_file": urls}, kb_uri=postgres_uri, settings={"DOWNLOAD_DELAY": "0.1"})
        assert run.returncode == 0, run.stderr[-3000:]
        sql = sql_counts(counts)
        assert sql["loop"] == 0, sql
        assert sql["other"] > 0, sql  # the counter saw the crawl's statements
    pages = {str(p["url"]).rsplit("/", 1)[1] for p in run.kb()}
    assert pages == {"p1.html", "p2.html", "p4.html", "p5.html"}
