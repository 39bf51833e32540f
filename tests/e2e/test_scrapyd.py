"""Scrapyd for real: deploy the project with scrapyd-deploy, run crawls as Scrapyd jobs, recrawl through it.

Scrapyd 1.6 lives in its own virtualenv (it pins ``setuptools<81``), built once
and reused while the requirements stay the same (``.venv-scrapyd`` in the
repository, or ``SYNAPSECRAWL_SCRAPYD_VENV``). Scrapyd and scrapyd-client come
from PyPI; the project's dependencies are the test run's own, on the path through
a ``.pth`` file, as an operator's Scrapyd has them installed beside it, and the
project itself reaches Scrapyd only as the egg scrapyd-deploy sends. Installing
those dependencies a second time from PyPI took minutes of a fresh checkout's
first run. The tests are skipped only when that virtualenv cannot be built.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.rereads import TEST_HOSTS, cron, html, make_due, since, sources, validated
from tests.e2e.scrapyd_env import TEST_SETTINGS, job_log, schedule, wait_finished
from tests.helpers import synapsecrawl
from tests.site.pages import ROBOTS_ALL
from tests.site.server import TestServer

# The first test of a fresh checkout builds the Scrapyd virtualenv inside its setup (pip, far longer on a loaded
# machine than on a quiet one): more than the suite's 300 s per test, to be sure.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_scrapyd_job_crawls_the_test_site_into_the_kb(
    deployed: str, server: TestServer, host: str, tmp_path: Path
) -> None:
    """CARD-USE: the project deployed to Scrapyd with scrapyd-deploy runs a site crawl scheduled through
    schedule.json, with the operator's settings, into the knowledge base."""
    server.add(host, {
        "/robots.txt": ROBOTS_ALL,
        "/": validated(html("Home", links=("/a.html",)), etag='"h"'),
        "/a.html": validated(html("Apple"), etag='"a"'),
    })  # fmt: skip
    uri = f"sqlite:///{tmp_path / 'kb.sqlite3'}"
    job = schedule(deployed, "site", {**TEST_SETTINGS, "KB_URI": uri}, {"url": server.url(host, "/"), "kb": "docs"})
    wait_finished(deployed, job)
    log = job_log(deployed, "site", job)
    assert "log_count/ERROR" not in log, log[-3000:]
    assert "crawl summary: fetched 2, stored 2" in log
    listed = synapsecrawl("kb", "list", "--uri", uri, "--format", "jsonl")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert sorted((r["url"], r["kb"]) for r in rows) == [
        (server.url(host, "/"), "docs"),
        (server.url(host, "/a.html"), "docs"),
    ]
    [source] = sources(uri)
    assert source.mode == "site" and source.outcome == "finished"


def test_recrawl_schedules_due_sources_on_scrapyd(
    deployed: str, server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """CARD-USE, SYN-REREAD: `recrawl --scrapyd URL` run as cron runs it hands each due source to Scrapyd as
    a job; the job re-reads the source with conditional requests, and the next run does not schedule it again."""
    server.add(host, {"/robots.txt": ROBOTS_ALL, "/p.html": validated(html("Page"), etag='"p1"')})
    first = crawl("page", args={"url": server.url(host, "/p.html"), "kb": "docs"}, settings={"DOWNLOAD_DELAY": "0.1"})
    assert first.returncode == 0, first.stderr[-3000:]
    make_due(first.kb_uri)
    mark = len(server.log(host))

    scheduled = subprocess.run(
        cron("--uri", first.kb_uri, "--scrapyd", deployed, *TEST_HOSTS),
        cwd="/",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert scheduled.returncode == 0, scheduled.stdout + scheduled.stderr
    [line] = scheduled.stdout.splitlines()
    assert line.startswith("scheduled ") and " Scrapyd job " in line
    job = line.rsplit(" ", 1)[1]
    again = subprocess.run(
        cron("--uri", first.kb_uri, "--scrapyd", deployed),
        cwd="/",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert again.returncode == 0 and again.stdout.startswith("not due "), again.stdout + again.stderr
    wait_finished(deployed, job)
    [hit] = [h for h in since(server, host, mark) if h.path == "/p.html"]
    assert hit.header("If-None-Match") == '"p1"'
    [row] = first.kb()
    assert row["verified_at"] is not None
    [source] = sources(first.kb_uri)
    assert source.outcome == "finished" and source.next_due > time.time() + 6.9 * 86400
