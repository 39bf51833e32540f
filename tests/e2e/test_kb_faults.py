"""A crawl whose knowledge base fails: it stops fetching what it cannot keep, loses nothing, comes back.

Real faults: a PostgreSQL cluster each test starts, stops and starts again for itself (the shared one
is untouched), and a tmpfs the test mounts for a SQLite KB (skipped with the reason where it cannot).
Asserted from the site's side (what the server answered, and when) and from the KB.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from contextlib import closing
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from synapsecrawl.kb import open_store
from synapsecrawl.kb.outage import EXIT_TEMPFAIL
from tests.faults_env import PrivateCluster, pages_in_sqlite, small_disk, urls_in_postgres
from tests.site.server import TestServer
from tests.site.sites import Site, site_pages

pytestmark = pytest.mark.e2e

SLOW = {"DOWNLOAD_DELAY": "0.2"}


_stored = urls_in_postgres


class _Outage(threading.Thread):
    """Stops the cluster once the KB holds ``after`` pages; starts it again ``down`` seconds later (never,
    for ``down=None``). ``stopped``/``started``: wall-clock times, for the server's log."""

    def __init__(self, cluster: PrivateCluster, after: int, down: float | None) -> None:
        super().__init__(daemon=True)
        self.cluster, self.after, self.down = cluster, after, down
        self.stopped = self.started = 0.0
        self.done = threading.Event()

    def run(self) -> None:
        deadline = time.monotonic() + 120
        while len(_stored(self.cluster.uri)) < self.after and time.monotonic() < deadline:
            time.sleep(0.05)
        self.cluster.stop()
        self.stopped = time.time()
        if self.down is not None:
            time.sleep(self.down)
            self.cluster.start()
            self.started = time.time()
        self.done.set()


def _oks(site: Site) -> list[str]:
    return [path for path, status in site.answers if status == 200]


def test_postgres_stopped_mid_crawl_holds_the_crawl_and_loses_no_page(
    server: TestServer, host: str, crawl, private_postgres: PrivateCluster
) -> None:
    """SYN-MODES (what is fetched is kept): PostgreSQL stopped for 6 s in the middle of a 61-page site
    crawl. The crawl stops starting requests once it knows (the site sees at most the few that were on
    their way), says so in one line and that the KB is back in another, and goes on by itself: every page
    the site served is in the KB, none was asked for twice, no traceback, exit status 0."""
    site = Site()
    site.serve(server, host)
    outage = _Outage(private_postgres, after=12, down=6.0)
    outage.start()
    run = crawl("site", args={"url": server.url(host, "/")}, settings=SLOW, kb_uri=private_postgres.uri)
    assert outage.done.wait(30)
    assert run.returncode == 0, run.stderr[-3000:]
    oks = _oks(site)
    assert len(oks) == len(set(oks)) == len(site.pages)
    assert {urlsplit(url).path for url in _stored(private_postgres.uri)} == set(site.pages)
    arrivals = [hit.arrived_at for hit in server.log(host) if hit.path != "/robots.txt"]
    during = [t for t in arrivals if outage.stopped <= t < outage.started]
    assert len(during) <= 4, f"{len(during)} requests while the KB was down (6 s at 0.2 s: about 30 unheld)"
    assert run.stderr.count("cannot take pages") == 1 and run.stderr.count("takes pages again") == 1
    assert "Traceback" not in run.stderr


def test_postgres_down_past_the_limit_ends_the_crawl_75_and_the_next_run_finishes_it(
    server: TestServer, host: str, crawl, private_postgres: PrivateCluster, tmp_path: Path
) -> None:
    """A KB down longer than KB_OUTAGE_SECONDS ends the crawl with exit status 75 (a temporary failure),
    every page it fetched written or journalled, its source not recorded as finished; run again once the KB
    is back, the crawl writes the journal first and goes on where it stopped: every page in the KB, none
    asked for twice over the two runs (not even as a 304)."""
    site = Site()
    site.serve(server, host)
    outage = _Outage(private_postgres, after=12, down=None)
    outage.start()
    settings = {**SLOW, "KB_OUTAGE_SECONDS": "3", "KB_JOURNAL_DIR": str(tmp_path / "journal")}
    first = crawl("site", args={"url": server.url(host, "/")}, settings=settings, kb_uri=private_postgres.uri)
    assert first.returncode == EXIT_TEMPFAIL, first.stderr[-3000:]
    assert "Traceback" not in first.stderr
    served_first = set(_oks(site))
    private_postgres.start()
    held = served_first - {urlsplit(url).path for url in _stored(private_postgres.uri)}
    assert held, "the outage began before every page was stored"
    assert sum(len(p.read_text().splitlines()) for p in (tmp_path / "journal").glob("*.jsonl")) == len(held)
    with closing(open_store(private_postgres.uri)) as store:
        [source] = store.sources()
    assert source.last_crawl == 0

    second = crawl("site", args={"url": server.url(host, "/")}, settings=settings, kb_uri=private_postgres.uri)
    assert second.returncode == 0, second.stderr[-3000:]
    asked = [path for path, _ in site.answers]
    assert sorted(asked) == sorted(site.pages)  # each page once over both runs: no 200 twice, no 304
    assert {urlsplit(url).path for url in _stored(private_postgres.uri)} == set(site.pages)
    assert not list((tmp_path / "journal").glob("*.jsonl"))


def test_a_sqlite_kb_on_a_full_disk_stops_the_crawl_whole_and_the_next_run_goes_on(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """A SQLite KB whose disk fills mid-crawl: one line names the KB and what it needs, no page's text
    reaches the log, crawling stops (exit 75 after KB_OUTAGE_SECONDS), the KB passes integrity_check and
    the held pages are journalled elsewhere; with room made, the next run finishes: every page stored,
    none asked for twice."""
    site = Site(pages=site_pages(6, 9))
    site.serve(server, host)
    with small_disk(tmp_path, 8192) as disk:  # room for the KB and its WAL once the ballast is gone
        kb_path = disk / "kb.sqlite3"
        ballast = disk / "ballast"
        uri = f"sqlite:///{kb_path}"
        settings = {**SLOW, "KB_OUTAGE_SECONDS": "3", "KB_JOURNAL_DIR": str(tmp_path / "journal")}

        def fill() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if kb_path.exists() and pages_in_sqlite(kb_path) >= 10:
                    ballast.write_bytes(b"\0" * shutil.disk_usage(disk).free)
                    return
                time.sleep(0.05)

        filler = threading.Thread(target=fill, daemon=True)
        filler.start()
        first = crawl("site", args={"url": server.url(host, "/")}, settings=settings, kb_uri=uri)
        filler.join(10)
        assert first.returncode == EXIT_TEMPFAIL, first.stderr[-3000:]
        full_lines = [line for line in first.stderr.splitlines() if "disk is full" in line]
        assert full_lines and str(kb_path) in full_lines[0]
        assert "enough words to be read as text" not in first.stderr  # no page's text in any line
        assert "Traceback" not in first.stderr
        with sqlite3.connect(kb_path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        ballast.unlink()
        second = crawl("site", args={"url": server.url(host, "/")}, settings=settings, kb_uri=uri)
        assert second.returncode == 0, second.stderr[-3000:]
        assert pages_in_sqlite(kb_path) == len(site.pages)
    asked = [path for path, _ in site.answers]
    assert sorted(asked) == sorted(site.pages)
