"""Several crawler processes (machines) crawling one site together keep its limits only when they
share a pacer through Redis (PACING_REDIS_URL); measured from the site's server log."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REDIS_URL, ROOT, _bin, gaps, write_urls
from tests.site.server import Hit, Reply, TestServer

pytestmark = pytest.mark.e2e

NO_ROBOTS = Reply("", status=404)
SLOW = 11.0  # a page answers after two spacings, so a third start would find two in flight


def _start(tmp_path: Path, name: str, urls: list[str], settings: dict[str, str]) -> subprocess.Popen[bytes]:
    """``scrapy crawl page`` as one machine would run it, not waited for."""
    out = tmp_path / name
    out.mkdir()
    merged = {
        "HOST_RESOLVE": "*.test=127.0.0.1",
        "ALLOW_PRIVATE_ADDRESSES": "True",
        "KB_URI": f"sqlite:///{out / 'kb.sqlite3'}",
        "LOG_LEVEL": "INFO",
        "LOG_FILE": str(out / "crawl.log"),
        **settings,
    }
    cmd = [_bin("scrapy"), "crawl", "page", "-a", f"urls_file={write_urls(out / 'urls.txt', urls)}"]
    for key, value in merged.items():
        cmd += ["-s", f"{key}={value}"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _in_flight(hits: list[Hit]) -> int:
    """The most requests the server had in flight at once."""
    return max(sum(1 for other in hits if other.start <= hit.start < other.end) for hit in hits)


def test_two_machines_keep_one_sites_limits_only_through_redis(
    server: TestServer, host: str, signing_key: Path, redis_prefix: str, tmp_path: Path
) -> None:
    """OMN-SITE, OMN-FETCH: two `scrapy crawl` processes started at once, one crawling a.SITE and
    the other b.SITE (one registrable domain), sharing Redis: every request to the site from both
    (robots.txt and tdmrep.json per host included) arrives at least 5 s after the one before, and
    never more than 2 are in flight. The same two processes without Redis, on another site, collide:
    gaps under 5 s and more than 2 in flight; so the log measures what Redis changes."""
    shared, alone = f"shared-{host}", f"alone-{host}"
    omni = {"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key)}
    with_redis = {**omni, "PACING_REDIS_URL": REDIS_URL, "PACING_REDIS_PREFIX": redis_prefix}
    runs = []
    for site, settings in ((shared, with_redis), (alone, omni)):
        for machine in ("a", "b"):
            name = f"{machine}.{site}"
            server.add(
                name,
                {
                    "/robots.txt": NO_ROBOTS,
                    "/.well-known/tdmrep.json": NO_ROBOTS,
                    "*": Reply("<title>slow page</title>", delay=SLOW),
                },
            )
            urls = [server.url(name, f"/p{i}.html") for i in range(2)]
            runs.append((name, _start(tmp_path, name, urls, settings)))
    for name, proc in runs:
        assert proc.wait(timeout=240) == 0, (tmp_path / name / "crawl.log").read_text()[-3000:]

    hits = sorted(server.log(f"a.{shared}") + server.log(f"b.{shared}"), key=lambda h: h.start)
    assert sorted((h.host, h.path) for h in hits) == sorted(
        (f"{m}.{shared}", path)
        for m in "ab"
        for path in ("/robots.txt", "/.well-known/tdmrep.json", "/p0.html", "/p1.html")
    )
    assert all(gap >= 5.0 for gap in gaps(hits)), gaps(hits)
    assert _in_flight(hits) == 2

    apart = sorted(server.log(f"a.{alone}") + server.log(f"b.{alone}"), key=lambda h: h.start)
    assert len(apart) == 8
    assert min(gaps(apart)) < 5.0, gaps(apart)
    assert _in_flight(apart) > 2


def test_a_redis_that_does_not_answer_stops_the_crawl_before_any_request(server: TestServer, host: str, crawl) -> None:
    """OMN-SITE (fail toward politeness): with PACING_REDIS_URL naming a Redis that does not answer,
    the crawl does not start (without the shared pacer the limits would hold for this machine only):
    one line naming the setting, exit non-zero, the server sees nothing."""
    server.add(host, {"/robots.txt": NO_ROBOTS, "*": Reply("<title>page</title>")})
    run = crawl(
        "page", args={"url": server.url(host, "/a.html")}, settings={"PACING_REDIS_URL": "redis://127.0.0.1:1/0"}
    )
    assert run.returncode != 0
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("synapsecrawl: PACING_REDIS_URL 'redis://127.0.0.1:1/0'")
    assert server.log(host) == []
