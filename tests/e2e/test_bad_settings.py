"""Settings an operator mistypes: each is one line naming the setting, before Scrapy starts,
with the exit status of every other refusal, and the site sees nothing."""

from __future__ import annotations

import pytest

from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("LOG_LEVEL=LOUDEST", "LOG_LEVEL 'LOUDEST' is not a log level"),
        ("REREAD_DAYS=0", "REREAD_DAYS '0' must be a number above 0"),
        ("REREAD_DAYS=nan", "REREAD_DAYS 'nan' must be a number above 0"),
        ("DOWNLOAD_TIMEOUT=-5", "DOWNLOAD_TIMEOUT '-5' must be a number above 0"),
        ("DOWNLOAD_TIMEOUT=nan", "DOWNLOAD_TIMEOUT 'nan' must be a number above 0"),
        ("DOWNLOAD_TIMEOUT=0", "DOWNLOAD_TIMEOUT '0' must be a number above 0"),
        ("DOWNLOAD_DELAY=inf", "DOWNLOAD_DELAY 'inf' must be a number >= 0"),
        # Scrapy's own and ours that Scrapy reads: a negative, nan or inf is misread or a traceback there
        ("CONCURRENT_REQUESTS=-1", "CONCURRENT_REQUESTS '-1' must be a number >= 0"),
        ("CONCURRENT_REQUESTS=nan", "CONCURRENT_REQUESTS 'nan' must be a number >= 0"),
        ("CONCURRENT_REQUESTS=inf", "CONCURRENT_REQUESTS 'inf' must be a number >= 0"),
        # Scrapy reads it with getint, int("1.5"): a ValueError traceback before
        ("CONCURRENT_REQUESTS=1.5", "CONCURRENT_REQUESTS '1.5' must be a whole number"),
        ("RETRY_TIMES=nan", "RETRY_TIMES 'nan' must be a number >= 0"),
        ("DOWNLOAD_MAXSIZE=-5", "DOWNLOAD_MAXSIZE '-5' must be a number >= 0"),
        ("DNS_TIMEOUT=-1", "DNS_TIMEOUT '-1' must be a number >= 0"),
        ("BACKOFF_MAX_WAIT=-1", "BACKOFF_MAX_WAIT '-1' must be a number >= 0"),
        ("BACKOFF_MAX_WAIT=nan", "BACKOFF_MAX_WAIT 'nan' must be a number >= 0"),
        ("ONDEMAND_WAIT=nan", "ONDEMAND_WAIT 'nan' must be a number >= 0"),
        ("JS_MAX_PAGES=nan", "JS_MAX_PAGES 'nan' must be a finite number"),
    ],
)
def test_a_bad_number_or_log_level_is_one_line_before_any_request(
    server: TestServer, host: str, crawl, setting: str, message: str
) -> None:
    """CONTRACT (one-line error): an unknown LOG_LEVEL, REREAD_DAYS=0 (the README says above
    0), a DOWNLOAD_TIMEOUT that is not a positive number (told so, not "beyond the cap"), and a negative,
    nan or inf given to any numeric setting stop `scrapy crawl` before Scrapy starts: exit status 1 as
    every refusal, exactly one line on stderr naming the setting, and no request reaches the site."""
    server.add(host, {"/robots.txt": Reply("", status=404), "/a.html": Reply("<title>A</title><p>A.</p>")})
    name, value = setting.split("=", 1)
    run = crawl("page", args={"url": server.url(host, "/a.html")}, settings={name: value})
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 1, run.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith(f"synapsecrawl: {message}"), run.stderr[-3000:]
    assert server.log(host) == []


def test_a_negative_priority_and_a_known_log_level_still_crawl(server: TestServer, host: str, crawl) -> None:
    """The checks leave good values alone: a negative DEPTH_PRIORITY (breadth-first), a known
    log level, a fractional REREAD_DAYS and DOWNLOAD_TIMEOUT crawl as before."""
    server.add(host, {"/robots.txt": Reply("", status=404), "/a.html": Reply("<title>A</title><p>A.</p>")})
    run = crawl(
        "page",
        args={"url": server.url(host, "/a.html")},
        settings={"DEPTH_PRIORITY": "-1", "LOG_LEVEL": "WARNING", "REREAD_DAYS": "0.5", "DOWNLOAD_TIMEOUT": "7.5"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert [h.path for h in server.log(host)] == ["/robots.txt", "/a.html"]
