"""IPv6 literal URLs (`http://[::1]:PORT/`) work wherever IPv4 literals do, in the crawl and on demand,
against the test server listening on ::1."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.e2e.ondemand import run_ondemand
from tests.site import pages
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e

ROBOTS = Reply("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"})


page = partial(pages.page, say="{title} text.", main=False)


@pytest.mark.parametrize("named", [False, True])
def test_a_crawl_of_an_ipv6_literal_is_fetched_after_its_robots_txt(
    server6: TestServer, crawl, host: str, named: bool
) -> None:
    """ALL-RFC9309: with ALLOW_PRIVATE_ADDRESSES, `scrapy crawl page -a url=http://[::1]:PORT/`
    fetches robots.txt, then the page, and keeps it (it failed as a DNS lookup of "::1"); so does a name
    HOST_RESOLVE maps to the IPv6 literal ::1."""
    name = host if named else "[::1]"
    path = f"/crawl-{host}.html"
    server6.add(name, {"/robots.txt": ROBOTS, path: page("Six")})
    run = crawl(
        "page", args={"url": server6.url(name, path)}, settings={"DOWNLOAD_DELAY": "0.1", "HOST_RESOLVE": f"{host}=::1"}
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert [h.path for h in server6.log(name) if h.path in ("/robots.txt", path)][-2:] == ["/robots.txt", path]
    assert [(p["url"], p["title"]) for p in run.kb()] == [(server6.url(name, path), "Six")]
    assert "DNS lookup failed" not in run.stderr


def test_an_ipv6_literal_asked_on_demand_is_fetched(server6: TestServer, tmp_path: Path) -> None:
    """SNA-ONDEMAND: with ALLOW_PRIVATE_ADDRESSES, an agent asking for http://[::1]:PORT/... gets
    the page (200) after the site's robots.txt; a path it disallows is refused and never requested."""
    server6.add("[::1]", {"/robots.txt": ROBOTS, "/ask.html": page("Asked")})
    with run_ondemand(tmp_path) as fetcher:
        status, body = fetcher.post(server6.url("[::1]", "/ask.html"))
        assert status == 200 and body["title"] == "Asked", body
        status, body = fetcher.post(server6.url("[::1]", "/private/no.html"))
        assert (status, body["error"]["code"]) == (403, "robots_disallowed"), body
    paths = [h.path for h in server6.log("[::1]")]
    assert "/ask.html" in paths and "/private/no.html" not in paths
