"""The guarded resolver: IP literals as they are, and why a refused name was refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from twisted.python.failure import Failure

from middlewares.engine.resolver import AddressRefused, GuardedResolver, refusal
from synapsecrawl.crawl.netguard import parse_host_resolve


@pytest.fixture
def installed() -> Iterator[None]:
    before = GuardedResolver.installed
    yield
    GuardedResolver.installed = before


def resolve(resolver: GuardedResolver, name: str) -> object:
    results: list[object] = []
    resolver.getHostByName(name).addBoth(results.append)  # literals and mapped names answer at once
    (result,) = results
    return result.value if isinstance(result, Failure) else result


def make(allow_private: bool, spec: str = "") -> GuardedResolver:
    # no reactor: literals and mapped names never reach the threaded lookup that would need one
    return GuardedResolver(
        None,
        0,
        5.0,
        host_map=parse_host_resolve(spec),  # type: ignore[arg-type]
        allow_private=allow_private,
    )


@pytest.mark.parametrize("literal", ["::1", "127.0.0.1", "fe80::1"])
def test_an_ip_literal_is_its_own_address(literal: str) -> None:
    """An IPv6 literal is not looked up by name (gethostbyname knows no IPv6: "no results for
    hostname lookup: ::1"); with ALLOW_PRIVATE_ADDRESSES it resolves to itself, as IPv4 literals do."""
    assert resolve(make(allow_private=True), literal) == literal


def test_a_refused_name_keeps_its_reason_until_it_resolves_elsewhere(installed: None) -> None:
    """The address guard: a name refused at resolution is refused with its reason, which
    `refusal(host)` gives the adapters (Twisted drops it on its way up); once the name resolves to an
    allowed address the reason is gone, so a later failure is not called a refusal."""
    resolver = make(allow_private=False, spec="kb.test=127.0.0.1,ok.test=93.184.216.34")
    GuardedResolver.installed = resolver  # what install_on_reactor() does beside installing it
    error = resolve(resolver, "KB.test")
    assert isinstance(error, AddressRefused) and "loopback" in str(error)
    assert (
        refusal("kb.test") == "KB.test resolves to 127.0.0.1, a loopback address (set ALLOW_PRIVATE_ADDRESSES to allow)"
    )
    assert isinstance(resolve(resolver, "::1"), AddressRefused)
    assert refusal("ok.test") is None and resolve(resolver, "ok.test") == "93.184.216.34"
    resolver.host_map = parse_host_resolve("kb.test=93.184.216.34")
    assert resolve(resolver, "kb.test") == "93.184.216.34"
    assert refusal("kb.test") is None


def test_a_page_whose_name_is_refused_at_resolution_is_an_address_refusal(installed: None) -> None:
    """The address guard: a page request (robots.txt already judged) whose name the resolver
    refused comes back from the download as a plain lookup failure; the guard middleware turns it into
    the address refusal with the resolver's reason, which on-demand answers as `address_refused`."""
    from scrapy import Request
    from scrapy.exceptions import CannotResolveHostError, IgnoreRequest
    from scrapy.utils.misc import build_from_crawler

    from middlewares.netguard import NetGuardMiddleware
    from spiders.ondemand import _fetch_error
    from tests.adapters.crawlers import addon_crawler

    resolver = make(allow_private=False, spec="rebound.test=10.0.0.7")
    GuardedResolver.installed = resolver
    assert isinstance(resolve(resolver, "rebound.test"), AddressRefused)
    crawler = addon_crawler(BOT_PROFILE="snagabot")
    guard = build_from_crawler(NetGuardMiddleware, crawler)
    request = Request("http://rebound.test/page")
    with pytest.raises(IgnoreRequest) as caught:
        guard.process_exception(request, CannotResolveHostError("no results for hostname lookup: rebound.test"))
    assert "10.0.0.7, a private address" in str(caught.value)
    assert _fetch_error(request, caught.value).code == "address_refused"
    assert guard.process_exception(Request("http://other.test/"), CannotResolveHostError("x")) is None
