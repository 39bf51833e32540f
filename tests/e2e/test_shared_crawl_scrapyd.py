"""Scrapyd running the workers of a shared crawl, as an operator would deploy them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import REDIS_URL, synapsecrawl, write_urls
from tests.e2e.scrapyd_env import TEST_SETTINGS, job_log, schedule, wait_finished
from tests.e2e.sharedcrawl import SharedCrawl, fetched, page
from tests.site.server import Reply, TestServer

# The first test of a fresh checkout may build the Scrapyd virtualenv inside its setup (tests/e2e/test_scrapyd.py).
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]


def test_two_scrapyd_worker_jobs_share_one_crawl(
    deployed: str,
    server: TestServer,
    host: str,
    redis_prefix: str,
    postgres_schema_uri: str,
    tmp_path: Path,
) -> None:
    """Scrapyd running N workers; CARD-USE: a URL list added to a shared crawl, and 2 worker jobs
    of the project deployed with scrapyd-deploy, scheduled through schedule.json (as `recrawl --crawl
    NAME --scrapyd URL --workers 2` does): both join the crawl, each page is fetched once, the
    PostgreSQL KB holds every page, neither job logs an error."""
    sites = [f"j{i}.{host}" for i in range(3)]
    for site in sites:
        server.add(site, {"/robots.txt": Reply("", status=404), "*": Reply("<title>t</title><p>job page</p>")})
    urls = [server.url(site, f"/p{n}.html") for site in sites for n in range(4)]
    name, prefix = host.replace(".", "-"), f"{redis_prefix}:frontier"
    added = synapsecrawl(
        "crawl",
        "add",
        "--crawl",
        name,
        "--redis",
        REDIS_URL,
        "--prefix",
        prefix,
        "--urls-file",
        write_urls(tmp_path / "urls.txt", urls),
        "--mode",
        "page",
    )
    assert added.returncode == 0, added.stderr
    settings = {
        **TEST_SETTINGS,
        "KB_URI": postgres_schema_uri,
        "PACING_REDIS_URL": REDIS_URL,
        "PACING_REDIS_PREFIX": redis_prefix,
        "FRONTIER_REDIS_PREFIX": prefix,
    }
    settings.pop("DOWNLOAD_DELAY")
    jobs = [schedule(deployed, "worker", settings, {"crawl": name}) for _ in range(2)]
    for job in jobs:
        wait_finished(deployed, job, timeout=240)
    logs = [job_log(deployed, "worker", job) for job in jobs]
    for log in logs:
        assert "log_count/ERROR" not in log, log[-3000:]
        assert f"joins crawl {name}" in log
    hits = [hit for site in sites for hit in server.log(site) if hit.path != "/robots.txt"]
    assert fetched(hits) == {(site, f"/p{n}.html"): 1 for site in sites for n in range(4)}
    listed = synapsecrawl("kb", "list", "--uri", postgres_schema_uri, "--format", "jsonl")
    assert sorted(json.loads(line)["url"] for line in listed.stdout.splitlines()) == sorted(urls)


def test_recrawl_with_scrapyd_schedules_n_workers_that_read_the_shared_source_again(
    deployed: str,
    server: TestServer,
    host: str,
    shared: SharedCrawl,
) -> None:
    """A source crawled shared is re-read by recrawl shared; Scrapyd running N workers; SYN-REREAD:
    a site crawled by 2 local workers is recorded in the KB; once it is due, `synapsecrawl recrawl --crawl
    NAME --scrapyd URL --workers 2` queues it in the shared crawl again (a new round) and schedules 2
    worker jobs on the real Scrapyd; both join the crawl, and between them every page is fetched once
    more (twice in all, once a round), with no error in either job's log."""
    from tests.e2e.rereads import make_due

    site = f"sched.{host}"
    server.add(
        site, {"/robots.txt": Reply("", status=404), "/": page("start", ("/a.html", "/b.html")), "*": page("leaf")}
    )
    assert shared.add("--url", server.url(site, "/"), "--mode", "site").returncode == 0
    shared.start(2)
    shared.wait()
    make_due(shared.kb_uri)
    settings = {**TEST_SETTINGS, "PACING_REDIS_PREFIX": shared.prefix, "EXTRACT_PROCESSES": "0"}
    settings.pop("DOWNLOAD_DELAY")
    out = shared.recrawl(
        "--scrapyd",
        deployed,
        "--workers",
        "2",
        *(arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "new round" in out.stdout, out.stdout
    jobs = re.findall(r"worker of shared crawl: Scrapyd job (\S+)", out.stdout)
    assert len(jobs) == 2, out.stdout
    for job in jobs:
        wait_finished(deployed, job, timeout=240)
    for job in jobs:
        log = job_log(deployed, "worker", job)
        assert "log_count/ERROR" not in log, log[-3000:]
        assert f"joins crawl {shared.name}" in log
    pages = fetched([hit for hit in server.log(site) if hit.path != "/robots.txt"])
    assert pages == {(site, path): 2 for path in ("/", "/a.html", "/b.html")}
