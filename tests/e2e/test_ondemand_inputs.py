"""On-demand answers to what an agent may send (SNA-ONDEMAND: "same rules as the crawl"):
a URL longer than the crawl follows, and names that resolve to a loopback address under the default
address guard. Seen from the agent's side (the HTTP answer) and the server's (its log)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.ondemand import Fetcher, run_ondemand
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e

ROBOTS = Reply("User-agent: *\nDisallow: /private/\n", headers={"Content-Type": "text/plain"})
PAGE = Reply("<html><head><title>Here</title></head><body><p>A page.</p></body></html>")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fetcher]:
    """`scrapy crawl ondemand` with the default address guard (ALLOW_PRIVATE_ADDRESSES off)."""
    with run_ondemand(tmp_path_factory.mktemp("guarded"), {"ALLOW_PRIVATE_ADDRESSES": "False"}) as running:
        yield running


@pytest.fixture(scope="module")
def fetcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fetcher]:
    """`scrapy crawl ondemand` as the test site needs it (loopback allowed)."""
    with run_ondemand(tmp_path_factory.mktemp("open")) as running:
        yield running


def test_a_url_longer_than_the_crawl_follows_is_a_400_before_any_request(
    fetcher: Fetcher, server: TestServer, host: str
) -> None:
    """SNA-ONDEMAND: the crawl drops a URL longer than URLLENGTH_LIMIT (2083), so an ask for
    a 10 KB URL is answered 400 bad_url at once, and the site sees no request, not even robots.txt; a
    URL within the limit on the same host is still fetched."""
    server.add(host, {"/robots.txt": ROBOTS, "*": PAGE})
    status, body = fetcher.post(server.url(host, "/" + "a" * 10_000))
    assert (status, body["error"]["code"]) == (400, "bad_url"), body
    assert "URLLENGTH_LIMIT" in body["error"]["message"] and len(body["error"]["message"]) < 200
    assert server.log(host) == []
    status, body = fetcher.post(server.url(host, "/" + "a" * 1_000))
    assert status == 200 and body["title"] == "Here", body


@pytest.mark.parametrize("form", ["localhost", "2130706433", "0x7f000001", "127.1", "mapped", "127.0.0.1"])
def test_a_name_that_resolves_to_loopback_is_address_refused_and_never_reached(
    guarded: Fetcher, server: TestServer, host: str, form: str
) -> None:
    """SNA-ONDEMAND, the address guard: under the default guard, a host that is a loopback
    address in another spelling (decimal, hex, short form), a name that resolves to it (localhost, a
    HOST_RESOLVE name), or the literal address is answered `403 address_refused`, the documented code,
    not `503 robots_unavailable` ("try later"), asked once or twice; nothing reaches the server."""
    name = host if form == "mapped" else form  # run_ondemand maps *.test to 127.0.0.1
    server.add(name, {"/robots.txt": ROBOTS, "/a.html": PAGE})
    for _ in range(2):
        status, body = guarded.post(server.url(name, "/a.html"))
        assert (status, body["error"]["code"]) == (403, "address_refused"), body
        assert "loopback" in body["error"]["message"], body
    assert server.log(name) == []
