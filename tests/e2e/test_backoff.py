"""Backoff as a site owner sees it: pauses, retries and holds, measured from the server log and the store.

Short Retry-After values keep the crawls quick; the long curves (hours, days)
are covered with an injected clock in tests/core/test_backoff.py. Two crawls
that share one KB_URI show what outlives a crawl.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from email.utils import formatdate
from functools import partial
from pathlib import Path

import pytest

from tests.helpers import gaps, pages_due, store_of, write_urls
from tests.site.pages import WORDS, page, status
from tests.site.server import Hit, Reply, TestServer

pytestmark = pytest.mark.e2e


html = partial(page, say=WORDS)


def first_then(first: Callable[[], Reply] | Reply, then: Reply) -> Callable[[object], Reply]:
    """A route that answers ``first`` once, then ``then``."""
    calls = itertools.count()

    def route(_: object) -> Reply:
        if next(calls) == 0:
            return first() if callable(first) else first
        return then

    return route


def pages(hits: list[Hit]) -> list[Hit]:
    return [h for h in hits if h.path not in ("/robots.txt", "/.well-known/tdmrep.json")]  # OMN-FETCH: not pages


@pytest.mark.parametrize("form", ["seconds", "http-date"])
def test_retry_after_is_waited_before_the_next_request(
    form: str, server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-429 (seconds, SnagaBot) and the design card's 429/503 backoff (HTTP date, SynapseBot): after a
    503 with Retry-After the host hears nothing until that time has passed, the page is then retried
    once and stored, and the pause is in the log and the stats."""
    if form == "seconds":
        profile, wait, first = "snagabot", 3.0, status(503, {"Retry-After": "3"})
    else:  # a date 4 s ahead, to the whole second: at least 3 s
        profile, wait = "synapsebot", 3.0

        def first() -> Reply:
            return status(503, {"Retry-After": formatdate(time.time() + 4, usegmt=True)})

    server.add(host, {"/a.html": first_then(first, html("Alpha")), "/b.html": html("Beta")})
    urls = [server.url(host, "/a.html"), server.url(host, "/b.html")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings={"BOT_PROFILE": profile})
    assert run.returncode == 0, run.stderr[-3000:]

    hits = server.log(host)
    assert [h.path for h in hits].count("/a.html") == 2
    refused = next(i for i, h in enumerate(hits) if h.path == "/a.html")
    after = hits[refused + 1]
    assert after.start - hits[refused].start >= wait, after.start - hits[refused].start
    assert sorted(p["url"] for p in run.kb()) == sorted(urls)
    assert f"backoff: pausing {host} for" in run.stderr
    assert "'backoff/paused/503': 1" in run.stderr
    assert "'backoff/retry/503': 1" in run.stderr
    with store_of(run) as store:
        assert store.url_holds(profile) == []  # the retry's hold was released once it was answered


def test_snagabot_leaves_a_host_asking_more_than_an_hour_and_so_does_the_next_crawl(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-429: a host whose Retry-After asks for more than an hour is left alone for the rest of the
    crawl: none of its other pages is requested, the crawl ends at once, and its URLs are deferred in the
    store (not lost). The pause outlives the crawl: the next crawl with the same KB does not touch the
    host, says so in the log, and counts its pages as skipped ("paused"); other hosts are crawled."""
    other = f"other.{host}"
    # the pages are asked in no set order: each answers so, and the first one asked decides
    server.add(host, {p: status(503, {"Retry-After": "7200"}) for p in ("/a.html", "/b.html", "/c.html")})
    server.add(other, {"/x.html": html("X")})
    urls = [server.url(host, p) for p in ("/a.html", "/b.html", "/c.html")] + [server.url(other, "/x.html")]
    urls_file = write_urls(tmp_path / "urls.txt", urls)
    settings = {"BOT_PROFILE": "snagabot"}

    started = time.time()
    first = crawl("page", args={"urls_file": urls_file}, settings=settings, timeout=60)
    assert first.returncode == 0, first.stderr[-3000:]
    asked = [h.path for h in server.log(host)]
    assert asked[0] == "/robots.txt"
    assert len(asked) == 2
    assert [p["url"] for p in first.kb()] == [server.url(other, "/x.html")]
    assert f"backoff: leaving {host} to a later crawl" in first.stderr
    assert "'backoff/left/503': 1" in first.stderr
    with store_of(first) as store:
        holds = {h.url: h for h in store.url_holds("snagabot", "deferred")}
        state = store.get_site_state("snagabot", host)
    assert set(holds) == set(urls[:3])
    assert all(7190 <= h.until - started <= 7200 + (time.time() - started) for h in holds.values())
    assert state is not None
    assert 7190 <= state.paused_until - started <= 7200 + (time.time() - started)

    pages_due(first.kb_uri)  # the other host's stored page is due again: it is asked for
    second = crawl("page", args={"urls_file": urls_file}, settings=settings, timeout=60)
    assert second.returncode == 0, second.stderr[-3000:]
    assert [h.path for h in server.log(host)] == asked  # nothing new
    assert [h.path for h in server.log(other)].count("/x.html") == 2
    assert f"backoff: {host} is paused until" in second.stderr
    assert "by an earlier crawl" in second.stderr
    assert "paused 3" in second.stderr  # the summary's skip reason, one per page of the host


def test_a_paused_site_costs_other_sites_nothing(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """SNA-429, SNA-RATE: while one host waits out a 5 s Retry-After, another host's pages keep
    coming at its own spacing (1 s); the paused host hears nothing until its pause ends."""
    slow, fast = f"slow.{host}", f"fast.{host}"
    server.add(slow, {"/s.html": first_then(status(429, {"Retry-After": "5"}), html("S"))})
    server.add(fast, {f"/f{i}.html": html(f"F{i}") for i in range(5)})
    urls = [server.url(slow, "/s.html")] + [server.url(fast, f"/f{i}.html") for i in range(5)]
    run = crawl(
        "page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings={"BOT_PROFILE": "snagabot"}
    )
    assert run.returncode == 0, run.stderr[-3000:]

    slow_pages = pages(server.log(slow))
    refused, retried = slow_pages
    assert retried.start - refused.start >= 5.0
    fast_hits = server.log(fast)
    during = [h for h in fast_hits if refused.start < h.start < retried.start]
    assert during, [h.start - refused.start for h in fast_hits]  # not held behind the paused host
    assert all(g >= 1.0 for g in gaps(fast_hits)), gaps(fast_hits)
    assert len(run.kb()) == 6


def test_snagabot_spaces_a_slow_server_ten_times_its_response_time(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-SLOW: pages that take 0.3 s to answer are asked at least 3 s apart (ten times the
    response time), not at the 1 s spacing."""
    server.add(host, {f"/p{i}.html": Reply(html(f"P{i}").body, delay=0.3) for i in range(3)})
    urls = [server.url(host, f"/p{i}.html") for i in range(3)]
    run = crawl(
        "page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings={"BOT_PROFILE": "snagabot"}
    )
    assert run.returncode == 0, run.stderr[-3000:]
    page_gaps = gaps(pages(server.log(host)))
    assert len(page_gaps) == 2
    assert all(g >= 3.0 for g in page_gaps), page_gaps
    assert f"backoff: {host} answered in" in run.stderr


def test_omniscientebot_pauses_every_host_of_the_registrable_domain(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-PAUSE, OMN-SITE: a 503 with Retry-After: 7 on one host of a site (a.<site>, b.<site>)
    pauses the other too: no request to either host starts within 7 s of it, longer than the 5 s
    spacing; the refused page is then retried and both pages are stored."""
    a, b = f"a.{host}", f"b.{host}"
    # whichever page is asked first (their order is not set) answers 503; the other host comes after
    route = first_then(status(503, {"Retry-After": "7"}), html("Page"))
    server.add(a, {"/p.html": route})
    server.add(b, {"/p.html": route})
    urls = [server.url(a, "/p.html"), server.url(b, "/p.html")]
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "urls.txt", urls)},
        settings={"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key)},
    )
    assert run.returncode == 0, run.stderr[-3000:]

    hits = sorted(server.log(a) + server.log(b), key=lambda h: h.start)
    refused = next(h for h in hits if h.path == "/p.html")
    later = [h for h in hits if h.start > refused.start]
    assert {h.host for h in later} == {a, b}  # both hosts were asked again, and
    assert all(h.start - refused.start >= 7.0 for h in later), [h.start - refused.start for h in later]
    assert all(g >= 5.0 for g in gaps(hits)), gaps(hits)
    assert f"backoff: pausing {host} for 7.0 s" in run.stderr
    assert sorted(p["url"] for p in run.kb()) == sorted(urls)


def test_omniscientebot_three_403_in_a_row_pause_the_site_for_a_day(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """OMN-PAUSE: three 403 answers in a row pause the site for 24 hours: its fourth page is not asked
    but deferred, and the next crawl with the same KB does not touch the site at all."""
    server.add(host, {f"/p{i}.html": status(403) for i in range(4)})
    urls = [server.url(host, f"/p{i}.html") for i in range(4)]
    urls_file = write_urls(tmp_path / "urls.txt", urls)
    settings = {"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key)}
    started = time.time()
    first = crawl("page", args={"urls_file": urls_file}, settings=settings)
    assert first.returncode == 0, first.stderr[-3000:]
    asked = [server.url(host, h.path) for h in pages(server.log(host))]
    assert len(asked) == 3
    assert "403 answers in a row" in first.stderr
    with store_of(first) as store:
        state = store.get_site_state("omniscientebot", host)
        deferred = [h.url for h in store.url_holds("omniscientebot", "deferred")]
    assert state is not None
    assert 86390 <= state.paused_until - started <= 86400 + (time.time() - started)
    assert deferred == sorted(set(urls) - set(asked))

    seen = len(server.log(host))
    second = crawl("page", args={"urls_file": urls_file}, settings=settings)
    assert second.returncode == 0, second.stderr[-3000:]
    assert len(server.log(host)) == seen
    assert f"backoff: {host} is paused until" in second.stderr


def test_yottabot_raises_a_short_retry_after_to_one_minute(
    tls_server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """YOT-429: a Retry-After of 1 s is taken as the one-minute floor. With a crawl that may wait
    only 10 s (BACKOFF_MAX_WAIT), the site is left and the page deferred a minute in the store."""
    tls_server.add(host, {p: status(429, {"Retry-After": "1"}) for p in ("/a.html", "/b.html")})
    urls = [tls_server.url(host, "/a.html"), tls_server.url(host, "/b.html")]
    started = time.time()
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "urls.txt", urls)},
        settings={"BOT_PROFILE": "yottabot", "BACKOFF_MAX_WAIT": "10"},
        timeout=60,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(pages(tls_server.log(host))) == 1
    assert "Retry-After 1.0 s taken as 60 s" in run.stderr
    with store_of(run) as store:
        holds = {h.url: h for h in store.url_holds("yottabot", "deferred")}
    assert set(holds) == set(urls)
    assert all(59 <= h.until - started <= 60 + (time.time() - started) for h in holds.values())


def test_serenereader_retries_a_500_after_30_s_and_remembers_a_404(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """SER-ERRORS: a page answering 500 is retried after about 30 s (not sooner, the crawl staying
    open meanwhile) and stored; a 404 is remembered 30 days, so the next crawl does not ask for it."""
    server.add(host, {"/flaky.html": first_then(status(500), html("Flaky")), "/gone.html": status(404)})
    urls = [server.url(host, "/gone.html"), server.url(host, "/flaky.html")]
    urls_file = write_urls(tmp_path / "urls.txt", urls)
    settings = {"BOT_PROFILE": "serenereader", "SIGNING_KEY": str(signing_key)}
    started = time.time()
    first = crawl("page", args={"urls_file": urls_file}, settings=settings)
    assert first.returncode == 0, first.stderr[-3000:]
    flaky = [h for h in server.log(host) if h.path == "/flaky.html"]
    assert len(flaky) == 2
    assert flaky[1].start - flaky[0].start >= 30.0
    assert [p["url"] for p in first.kb()] == [urls[1]]
    with store_of(first) as store:
        holds = store.url_holds("serenereader")
    assert [(h.url, h.kind, h.reason) for h in holds] == [(urls[0], "gone", "404")]
    assert 30 * 86400 - 10 <= holds[0].until - started <= 30 * 86400 + (time.time() - started)

    second = crawl("page", args={"urls_file": urls_file}, settings=settings)
    assert second.returncode == 0, second.stderr[-3000:]
    assert [h.path for h in server.log(host)].count("/gone.html") == 1
    assert f"not fetching {urls[0]} before" in second.stderr
