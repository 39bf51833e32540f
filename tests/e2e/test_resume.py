"""An interrupted crawl finishes when run again (SYN-MODES, SYN-REREAD).

A site crawl killed half-way left its stored pages in the KB and nothing else:
the run after it continues the same run of the source, reaching every page
without asking again for those already stored (their stored links lead on),
and the source counts as crawled only once a run has finished.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from synapsecrawl.crawl.jobdir import MARK
from synapsecrawl.kb import open_store
from synapsecrawl.kb.reread import RETRY_AFTER_FAILURE, RUNNING
from tests.faults_env import pages_in_sqlite
from tests.helpers import ROOT, bin_path
from tests.site.pages import FAST, ROBOTS_ALL
from tests.site.server import TestServer
from tests.site.sites import Site, page, site_pages

pytestmark = pytest.mark.e2e


def scrapy_command(spider: str, args: dict[str, str], kb_uri: str, extra: dict[str, str]) -> list[str]:
    settings = {
        "HOST_RESOLVE": "*.test=127.0.0.1",
        "ALLOW_PRIVATE_ADDRESSES": "True",
        "KB_URI": kb_uri,
        "LOG_LEVEL": "INFO",
        **FAST,
        **extra,
    }
    command = [bin_path("scrapy"), "crawl", spider]
    for key, value in args.items():
        command += ["-a", f"{key}={value}"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    return command


@pytest.mark.parametrize("jobdir", [False, True], ids=["kb", "jobdir"])
def test_a_site_crawl_killed_half_way_finishes_when_run_again(
    server: TestServer, host: str, crawl, tmp_path: Path, jobdir: bool
) -> None:
    """SYN-MODES, SYN-REREAD, the operator's path: a 61-page site with ETags, its crawl killed
    with SIGKILL (its process group) once 29 pages are stored, then `scrapy crawl site` again, with or
    without a JOBDIR (whose job state a kill leaves stale). Every page ends up in the KB; no page stored by
    the first run is asked for again by the second, which continues the same run of the source (its stored
    links lead on); no page is answered 200 twice across the two runs;
    the source is recorded as crawled only after the second run (after the first it is running, due again
    within the hour). With JOBDIR the site has 251 pages, so that
    the killed run's request fingerprints outgrow their file buffer and reach requests.seen."""
    extra = {"JOBDIR": str(tmp_path / "job")} if jobdir else {}
    pages = site_pages(10, 25) if jobdir else site_pages()
    kb_path = tmp_path / "kb.sqlite3"
    uri = f"sqlite:///{kb_path}"
    site = Site(gate_after=29, pages=pages)
    site.serve(server, host)
    start = server.url(host, "/")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    log = (tmp_path / "killed.log").open("w")
    proc = subprocess.Popen(
        scrapy_command("site", {"url": start}, uri, extra),
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while pages_in_sqlite(kb_path) < 29 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pages_in_sqlite(kb_path) == 29, (tmp_path / "killed.log").read_text()[-3000:]
        assert proc.poll() is None, "the crawl ended before it was killed"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        log.close()
        site.released.set()
    assert proc.returncode == -signal.SIGKILL
    first = list(site.answers)
    assert [status for _, status in first] == [200] * 29
    with closing(open_store(uri)) as store:
        stored_first = {page.url for page in store.pages()}
        assert len(stored_first) == 29
        [held] = store.sources()  # recorded as running: a killed crawl is no crawl of its source, due again soon
    assert held.last_crawl == 0 and held.outcome == RUNNING and held.next_due <= time.time() + RETRY_AFTER_FAILURE

    site.gate_after = None
    second = crawl("site", args={"url": start}, settings={**FAST, **extra}, kb_uri=uri)
    assert second.returncode == 0, second.stderr[-3000:]
    again = site.answers[len(first) :]
    with closing(open_store(uri)) as store:
        urls = {page.url for page in store.pages()}
        [source] = store.sources()
    assert urls == {server.url(host, path) for path in pages}
    # the run already has them: not asked for again, not even as a 304; their stored links lead on
    assert not {path for path, _ in again} & {urlsplit(u).path for u in stored_first}
    oks = [path for path, status in site.answers if status == 200]
    assert len(oks) == len(set(oks)) == len(pages)  # every page read once, over the two runs
    assert source.last_crawl > 0 and source.outcome == "finished"
    if jobdir:
        assert "JOBDIR" in second.stderr and "job state is dropped" in second.stderr
        assert not (tmp_path / "job" / MARK).exists()  # closed: Scrapy's state is good for a next run


def test_a_304_leads_to_the_stored_links_in_postgres(server: TestServer, host: str, crawl, postgres_uri: str) -> None:
    """SYN-MODES, SYN-REREAD on PostgreSQL: a site crawl stopped at its page budget keeps each
    stored page's links; the next crawl's 304 for the start page and for the section it had read leads to
    the pages never reached, within depth and scope: an out-of-scope link stays unfollowed, a page deeper
    than `depth` is not requested."""
    routes = {
        "/docs/": ["/docs/a/", "/docs/b.html", "/elsewhere.html"],
        "/docs/a/": ["/docs/a/deep.html"],
        "/docs/a/deep.html": ["/docs/a/deeper.html"],
        "/docs/b.html": [],
        "/docs/a/deeper.html": [],
        "/elsewhere.html": [],
    }
    site = Site()
    server.add(
        host,
        {
            "/robots.txt": ROBOTS_ALL,
            **{path: site.route(path, page(path, links=links)) for path, links in routes.items()},
        },
    )
    start = server.url(host, "/docs/")
    first = crawl("site", args={"url": start, "max_pages": "2", "depth": "2"}, settings=FAST, kb_uri=postgres_uri)
    assert first.returncode == 0, first.stderr[-3000:]
    assert site.answers == [("/docs/", 200), ("/docs/a/", 200)]
    with closing(open_store(postgres_uri)) as store:
        kept = {page.url: page.outlinks for page in store.pages()}
    assert kept[start] == tuple(server.url(host, p) for p in routes["/docs/"])

    second = crawl("site", args={"url": start, "depth": "2"}, settings=FAST, kb_uri=postgres_uri)
    assert second.returncode == 0, second.stderr[-3000:]
    assert sorted(site.answers[2:]) == sorted(
        [("/docs/", 304), ("/docs/a/", 304), ("/docs/b.html", 200), ("/docs/a/deep.html", 200)]
    )
    with closing(open_store(postgres_uri)) as store:
        assert {urlsplit(p.url).path for p in store.pages()} == {
            "/docs/",
            "/docs/a/",
            "/docs/b.html",
            "/docs/a/deep.html",
        }
