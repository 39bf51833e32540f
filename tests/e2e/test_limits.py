"""Limits from the outside: a raised cap stops the crawl before any request; a lowered one is obeyed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import gaps
from tests.site.server import Reply, TestServer


def site(server: TestServer, host: str) -> None:
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers={"Content-Type": "text/plain"}),
        "*": Reply("<html><head><title>t</title></head><body><p>page</p></body></html>"),
    })  # fmt: skip


@pytest.mark.parametrize(
    ("settings", "args", "message"),
    [
        ({"DOWNLOAD_DELAY": "0.05"}, {}, "DOWNLOAD_DELAY 0.05 is below synapsebot (self-hosted)'s floor 0.1 s"),
        ({"DEPTH_LIMIT": "6"}, {}, "DEPTH_LIMIT 6 is beyond synapsebot (self-hosted)'s cap 5"),
        ({"BOT_DEPLOYMENT": "cloud", "DEPTH_LIMIT": "4"}, {}, "DEPTH_LIMIT 4 is beyond synapsebot (cloud)'s cap 3"),
        (
            {"BOT_DEPLOYMENT": "cloud", "DOWNLOAD_DELAY": "0.5"},
            {},
            "DOWNLOAD_DELAY 0.5 is below synapsebot (cloud)'s floor 1",
        ),
        (
            {"CLOSESPIDER_PAGECOUNT": "501"},
            {},
            "CLOSESPIDER_PAGECOUNT 501 is beyond synapsebot (self-hosted)'s cap 500",
        ),
        (
            {"BOT_PROFILE": "yottabot", "DOWNLOAD_DELAY": "0.5"},
            {},
            "DOWNLOAD_DELAY 0.5 is below yottabot (yotta)'s floor 1",
        ),
        ({"DOWNLOAD_TIMEOUT": "120"}, {}, "DOWNLOAD_TIMEOUT 120 is beyond synapsebot's cap 60 s"),
        ({}, {"max_pages": "501"}, "-a max_pages=501 must be between 1 and the page limit 500"),
        ({"BOT_PROFILE": "nosuchbot"}, {}, "BOT_PROFILE 'nosuchbot' is not one of"),
        ({"BOT_PROFILE": "omniscientebot"}, {}, "omniscientebot signs every request (Web Bot Auth): set SIGNING_KEY"),
        ({"HOST_RESOLVE": "*.test=localhost"}, {}, "HOST_RESOLVE entry '*.test=localhost' is not NAME=IP"),
    ],
)
def test_value_beyond_a_cap_is_refused_before_any_request(
    server: TestServer, host: str, crawl, settings: dict[str, str], args: dict[str, str], message: str
) -> None:
    """SYN-LIMITS, SYN-RATE, YOT-RATE, ALL-TIMEOUT (CONTRACT: caps): a setting or argument past
    the profile's hard cap exits non-zero with one line naming it and the cap; the server sees nothing."""
    site(server, host)
    merged = {"HOST_RESOLVE": "*.test=127.0.0.1", **settings}
    run = crawl("page", args={"url": server.url(host, "/a.html"), **args}, settings=merged)
    assert run.returncode != 0
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert lines == [f"synapsecrawl: {lines[0].removeprefix('synapsecrawl: ')}"]
    assert message in lines[0]
    assert server.log(host) == []


def test_argument_above_the_limit_cannot_raise_it(server: TestServer, host: str, crawl) -> None:
    """SYN-LIMITS: a KB user's -a depth above the operator's limit is refused, not obeyed."""
    site(server, host)
    run = crawl("site", args={"url": server.url(host, "/"), "depth": "5"})
    assert run.returncode != 0
    assert "-a depth=5 cannot raise the depth limit 3" in run.stderr
    assert server.log(host) == []


def test_operator_may_lower_the_spacing_to_the_self_hosted_floor(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-LIMITS: a self-hosted operator may go up to 10 requests a second (DOWNLOAD_DELAY=0.1),
    and the pacer then keeps every gap at 0.1 s or more."""
    site(server, host)
    urls = tmp_path / "urls.txt"
    urls.write_text("\n".join(server.url(host, f"/p{i}.html") for i in range(6)))
    run = crawl("page", args={"urls_file": str(urls)}, settings={"DOWNLOAD_DELAY": "0.1"})
    assert run.returncode == 0, run.stderr[-2000:]
    hits = server.log(host)
    assert len(hits) == 7
    assert all(g >= 0.1 for g in gaps(hits)), gaps(hits)
    assert sum(gaps(hits)) < 6 * 1.0  # really faster than the default one a second
    assert len(run.kb()) == 6


def test_a_page_cut_at_the_size_cap_is_counted_in_the_summary(server: TestServer, host: str, crawl) -> None:
    """ALL-SIZE, SNA-SIZE: a page past SnagaBot's 2 MB cap is read up to the cap and kept, and the
    crawl summary in the log counts it as truncated, for the crawl and for its site."""
    paragraph = "<p>" + "word " * 200 + "</p>\n"
    body = "<html><head><title>Long</title></head><body>" + paragraph * 2500 + "</body></html>"
    assert len(body) > 2_000_000
    server.add(host, {"/robots.txt": Reply("", status=404), "/long.html": Reply(body)})
    run = crawl("page", args={"url": server.url(host, "/long.html")}, settings={"BOT_PROFILE": "snagabot"})
    assert run.returncode == 0, run.stderr[-3000:]
    [page] = run.kb()
    assert page["title"] == "Long" and len(str(page["text"])) < 2_000_000
    assert "crawl summary: fetched 1, stored 1, truncated 1, skipped 0" in run.stderr, run.stderr[-2000:]
    assert f"{host}: fetched 1, stored 1, truncated 1\n" in run.stderr


def test_backoff_max_wait_beyond_the_profiles_is_refused_before_any_request(
    server: TestServer, host: str, crawl
) -> None:
    """CONTRACT (caps: refused, never clamped): a BACKOFF_MAX_WAIT above the profile's wait on a paused
    site (synapsebot: 10 min) stops `scrapy crawl` with exit status 1 and one line naming the setting and
    the cap, as a DOWNLOAD_DELAY under the floor does; the server sees nothing."""
    site(server, host)
    settings = {"HOST_RESOLVE": "*.test=127.0.0.1", "BACKOFF_MAX_WAIT": "3600"}
    run = crawl("page", args={"url": server.url(host, "/a.html")}, settings=settings)
    assert run.returncode == 1, run.stderr[-3000:]
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert lines == ["synapsecrawl: BACKOFF_MAX_WAIT 3600 is beyond synapsebot's cap 600 s"]
    assert server.log(host) == []
