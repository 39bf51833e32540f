"""NetGuardMiddleware and GuardedResolver: schemes, methods and private addresses refused (HOST_RESOLVE)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.misc import build_from_crawler
from twisted.internet.testing import MemoryReactor
from twisted.python.failure import Failure

from middlewares.engine.resolver import AddressRefused, GuardedResolver
from middlewares.engine.runtime import Runtime
from middlewares.netguard import NetGuardMiddleware
from synapsecrawl.crawl.netguard import parse_host_resolve
from tests.adapters.crawlers import crawler_for


def guard(tmp_path: Path, **settings: object) -> NetGuardMiddleware:
    return build_from_crawler(NetGuardMiddleware, crawler_for(tmp_path, **settings))


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://10.1.2.3/x",
        "http://[::1]/",
        "http://192.168.0.9/",
        "http://169.254.169.254/latest/meta-data/",
    ],
)
def test_a_literal_private_address_is_refused(tmp_path: Path, url: str) -> None:
    """Address guard: a URL whose host is a loopback, private or link-local literal never leaves."""
    with pytest.raises(IgnoreRequest, match="ALLOW_PRIVATE_ADDRESSES is off"):
        guard(tmp_path).process_request(Request(url))


def test_allow_private_addresses_lets_them_through(tmp_path: Path) -> None:
    """Address guard: ALLOW_PRIVATE_ADDRESSES=True (a self-hosted operator's network) allows them."""
    assert guard(tmp_path, ALLOW_PRIVATE_ADDRESSES=True).process_request(Request("http://127.0.0.1/")) is None


def test_a_public_name_passes_the_literal_check(tmp_path: Path) -> None:
    """Address guard: a name is judged after resolution (the resolver), not here."""
    assert guard(tmp_path).process_request(Request("http://docs.example.com/")) is None


def test_yottabot_fetches_only_https(tmp_path: Path) -> None:
    """YOT-HTTPS: an http: URL is refused under YottaBot, counted as a scheme refusal and skipped in the
    summary; https: passes."""
    crawler = crawler_for(tmp_path, BOT_PROFILE="yottabot")
    mw = build_from_crawler(NetGuardMiddleware, crawler)
    with pytest.raises(IgnoreRequest, match="does not fetch http: URLs"):
        mw.process_request(Request("http://docs.test/"))
    assert mw.process_request(Request("https://docs.example.com/")) is None
    assert crawler.stats.get_value("netguard/scheme") == 1  # type: ignore[union-attr]
    assert Runtime.of(crawler).summary.skipped["docs.test"]["scheme"] == 1


def test_only_get_leaves(tmp_path: Path) -> None:
    """OMN-FETCH: a POST (or any other method) is refused."""
    with pytest.raises(IgnoreRequest, match="sends only GET"):
        guard(tmp_path).process_request(Request("http://a.example.com/", method="POST"))


def test_refusals_are_logged_once_per_site_and_reason(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Bad input gets one clear line: ten refused URLs of one site and reason log one warning."""
    mw = guard(tmp_path)
    with caplog.at_level(logging.WARNING, logger="middlewares.netguard"):
        for n in range(10):
            with pytest.raises(IgnoreRequest):
                mw.process_request(Request(f"http://10.0.0.1/{n}"))
    assert len([r for r in caplog.records if r.name == "middlewares.netguard"]) == 1


def test_a_resolver_refusal_becomes_an_ignored_request(tmp_path: Path) -> None:
    """Address guard: a name the resolver refused (AddressRefused on connect) ends as an address skip."""
    crawler = crawler_for(tmp_path)
    mw = build_from_crawler(NetGuardMiddleware, crawler)
    with pytest.raises(IgnoreRequest, match="resolves to"):
        mw.process_exception(Request("http://inside.example.com/"), AddressRefused("inside.example.com resolves to"))
    assert Runtime.of(crawler).summary.skipped["inside.example.com"]["address"] == 1
    assert mw.process_exception(Request("http://a.example.com/"), TimeoutError()) is None


def resolve(resolver: GuardedResolver, name: str) -> object:
    results: list[object] = []
    resolver.getHostByName(name).addBoth(results.append)
    [result] = results  # a mapped name resolves at once, without the reactor
    return result


def test_host_resolve_maps_names_and_the_guard_refuses_a_private_answer(tmp_path: Path) -> None:
    """HOST_RESOLVE: a mapped name resolves to its address; a private answer is refused after
    resolution (one warning, remembered by the resolver for robots.txt's message)."""
    crawler = crawler_for(tmp_path, HOST_RESOLVE="*.test=127.0.0.1,pub.example=93.184.215.14")
    resolver = GuardedResolver.from_crawler(crawler, MemoryReactor())
    assert resolve(resolver, "pub.example") == "93.184.215.14"
    refused = resolve(resolver, "docs.test")
    assert isinstance(refused, Failure) and refused.check(AddressRefused)
    assert "docs.test resolves to 127.0.0.1" in resolver.refused["docs.test"]


def test_allow_private_addresses_lets_a_mapped_loopback_name_resolve(tmp_path: Path) -> None:
    """HOST_RESOLVE with ALLOW_PRIVATE_ADDRESSES: the test setup itself, *.test to loopback, resolves."""
    crawler = crawler_for(tmp_path, HOST_RESOLVE="*.test=127.0.0.1", ALLOW_PRIVATE_ADDRESSES=True)
    resolver = GuardedResolver.from_crawler(crawler, MemoryReactor())
    assert resolve(resolver, "a.b.test") == "127.0.0.1"
    assert resolver.refused == {}


def test_a_system_answer_is_guarded_too() -> None:
    """Address guard: whatever the system resolver answers passes the same check (a public address
    passes, a private one is refused)."""
    resolver = GuardedResolver(MemoryReactor(), 0, 1.0, host_map=parse_host_resolve(""), allow_private=False)
    assert resolver._guard("93.184.215.14", "pub.example") == "93.184.215.14"
    with pytest.raises(AddressRefused, match="a private"):
        resolver._guard("192.168.1.1", "router.example")
