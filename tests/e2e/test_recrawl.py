"""`synapsecrawl recrawl` as cron runs it: bare environment, working directory /, no terminal."""

from __future__ import annotations

import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.e2e.rereads import TEST_HOSTS, cron, html, make_due, run_cron, since, sources, validated
from tests.site.pages import HTML, ROBOTS_ALL
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e


def test_recrawl_from_cron_rereads_due_sources_only(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """CARD-USE, SYN-REREAD: a site crawl is recorded as a source due again in 7 days; a recrawl started as
    cron starts it (no terminal, bare environment, working directory /) leaves a source that is not due alone,
    re-reads a due one with conditional requests, prints one line per source, exits 0 and sets the next
    re-read 7 days on."""
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/": validated(html("Home", links=("/a.html",)), etag='"h"'),
        "/a.html": validated(html("Apple"), etag='"a"'),
    })  # fmt: skip
    first = crawl(
        "site", args={"url": server.url(host, "/"), "kb": "docs", "depth": "2"}, settings={"DOWNLOAD_DELAY": "0.1"}
    )
    assert first.returncode == 0, first.stderr[-3000:]
    [source] = sources(first.kb_uri)
    assert (source.mode, source.urls, source.kb, source.depth, source.profile) == (
        "site",
        (server.url(host, "/"),),
        "docs",
        "2",
        "synapsebot",
    )
    assert source.next_due - source.last_crawl == pytest.approx(7 * 86400)
    mark = len(server.log(host))

    idle = run_cron("--uri", first.kb_uri, *TEST_HOSTS)
    assert idle.returncode == 0, idle.stderr
    [line] = idle.stdout.splitlines()
    assert line.startswith(f"not due   {source.id} site {server.url(host, '/')} kb=docs synapsebot: next due ")
    assert len(server.log(host)) == mark

    make_due(first.kb_uri)
    done = run_cron("--uri", first.kb_uri, *TEST_HOSTS, "--set", "DOWNLOAD_DELAY=0.1")
    assert done.returncode == 0, done.stdout + done.stderr
    [line] = done.stdout.splitlines()
    assert line.startswith(f"crawled   {source.id} site ") and "finished, next due" in line
    hits = since(server, host, mark)
    assert sorted((h.path, h.header("If-None-Match")) for h in hits) == [
        ("/", '"h"'),
        ("/a.html", '"a"'),
        ("/robots.txt", None),
    ]
    assert all(row["verified_at"] for row in first.kb())
    [after] = sources(first.kb_uri)
    assert after.next_due > time.time() + 6.9 * 86400 and after.last_crawl > source.last_crawl
    log = Path(first.kb_uri.removeprefix("sqlite:///") + ".recrawl") / "logs" / f"{source.id}.log"
    assert "crawl summary" in log.read_text()


def test_overlapping_recrawl_is_refused_by_the_lock(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """CARD-USE: while one recrawl is crawling, a second one started on the same KB crawls nothing and exits
    75 (try again later) with one line; the first finishes and each page is read once."""
    reached, released = threading.Event(), threading.Event()

    def slow(handler: BaseHTTPRequestHandler) -> Reply:
        reached.set()  # the first recrawl is crawling: it holds the page until the second has run
        released.wait(60)
        return Reply(html("Slow"), headers=HTML)

    server.add(host, {"/robots.txt": ROBOTS_ALL, "/slow.html": Reply(html("Slow"), headers=HTML)})
    first = crawl("page", args={"url": server.url(host, "/slow.html")})
    assert first.returncode == 0, first.stderr[-3000:]
    make_due(first.kb_uri)
    server.add(host, {"/slow.html": slow})
    mark = len(server.log(host))

    with subprocess.Popen(
        cron("--uri", first.kb_uri, *TEST_HOSTS),
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as running:
        try:
            assert reached.wait(60), "the first recrawl never reached the page"
            second = run_cron("--uri", first.kb_uri, *TEST_HOSTS)
            released.set()
            out, err = running.communicate(timeout=120)
        finally:
            released.set()
            if running.poll() is None:
                running.kill()
    assert second.returncode == 75
    assert second.stdout == ""
    [refusal] = second.stderr.splitlines()
    assert refusal.startswith("synapsecrawl: another recrawl holds ") and refusal.endswith(": not starting a second")
    assert running.returncode == 0, out + err
    assert out.startswith("crawled ")
    assert [h.path for h in since(server, host, mark) if h.path != "/robots.txt"] == ["/slow.html"]


def test_a_crawl_that_cannot_start_fails_the_run_and_is_retried_soon(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """CARD-USE: when a due source's crawl is refused (here a DOWNLOAD_DELAY below the profile's floor),
    recrawl says so on its line, exits 1, and the source is due again within the hour, not in a week."""
    server.add(host, {"/robots.txt": ROBOTS_ALL, "/p.html": Reply(html("Page"), headers=HTML)})
    first = crawl("page", args={"url": server.url(host, "/p.html")})
    assert first.returncode == 0, first.stderr[-3000:]
    make_due(first.kb_uri)
    mark = len(server.log(host))
    failed = run_cron("--uri", first.kb_uri, *TEST_HOSTS, "--set", "DOWNLOAD_DELAY=0.01")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    [line] = failed.stdout.splitlines()
    assert line.startswith("failed    ") and line.endswith(
        "exit 1: synapsecrawl: DOWNLOAD_DELAY 0.01 is below synapsebot (self-hosted)'s floor 0.1 s"
    )
    assert len(server.log(host)) == mark
    [source] = sources(first.kb_uri)
    assert time.time() < source.next_due <= time.time() + 3600
    assert source.outcome == "failed: exit 1"


def test_recrawl_without_a_kb_says_so_and_creates_nothing(tmp_path: Path) -> None:
    """CARD-USE: under cron a wrong --uri is one line and exit 1, not a new empty knowledge base."""
    missing = tmp_path / "nowhere" / "kb.sqlite3"
    run = run_cron("--uri", f"sqlite:///{missing}")
    assert run.returncode == 1
    assert run.stderr == f"synapsecrawl: no knowledge base at {missing}: give its --uri\n"
    assert not missing.parent.exists()
