"""Address guard, static resolution, URL identity and sites."""

from __future__ import annotations

import pytest

from synapsecrawl.crawl.netguard import forbidden_reason, parse_host_resolve
from synapsecrawl.crawl.request import CrawlRequest, taking_turns
from synapsecrawl.crawl.scope import SiteScope
from synapsecrawl.errors import ConfigError
from synapsecrawl.urls import canonical, origin_of, registrable_domain, site_of


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback address"),
        ("::1", "loopback address"),
        ("10.1.2.3", "private address"),
        ("192.168.0.10", "private address"),
        ("172.16.5.4", "private address"),
        ("169.254.169.254", "cloud metadata address"),
        ("169.254.1.1", "link-local address"),
        ("fe80::1", "link-local address"),
        ("fd00:ec2::254", "cloud metadata address"),
        ("::ffff:127.0.0.1", "loopback address"),
        ("100.64.0.1", "shared address space"),
        ("0.0.0.0", "unspecified address"),
        ("224.0.0.1", "multicast address"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
        ("example.com", None),
    ],
)
def test_forbidden_addresses(address: str, reason: str | None) -> None:
    """Address guard (CONTRACT ALLOW_PRIVATE_ADDRESSES): loopback, private, link-local, shared,
    multicast and cloud-metadata addresses are refused; public ones and names pass here."""
    assert forbidden_reason(address) == reason


def test_host_resolve_exact_then_longest_wildcard() -> None:
    """CONTRACT HOST_RESOLVE: like curl --resolve, with `*.` wildcards, longest suffix first."""
    hosts = parse_host_resolve("a.example.test=127.0.0.2, *.test=127.0.0.1, *.example.test=127.0.0.3")
    assert hosts.lookup("a.example.test") == "127.0.0.2"
    assert hosts.lookup("B.Example.Test.") == "127.0.0.3"
    assert hosts.lookup("other.test") == "127.0.0.1"
    assert hosts.lookup("test") is None and hosts.lookup("example.com") is None
    assert parse_host_resolve("").lookup("x.test") is None


@pytest.mark.parametrize("spec", ["x.test", "x.test=", "=127.0.0.1", "x.test=not-an-ip"])
def test_host_resolve_errors_name_the_entry(spec: str) -> None:
    """A bad HOST_RESOLVE entry is one line naming it."""
    with pytest.raises(ConfigError, match="HOST_RESOLVE entry"):
        parse_host_resolve(spec)


def test_sites_and_origins() -> None:
    """OMN-SITE: a registrable domain with all its hostnames is one site; YOT-ROBOTS: robots.txt
    is per scheme, host and port."""
    assert registrable_domain("a.b.example.co.uk") == "example.co.uk"
    assert site_of("https://www.Example.com/x", "registrable_domain") == "example.com"
    assert site_of("https://blog.example.com/x", "registrable_domain") == "example.com"
    assert site_of("https://blog.example.com/x", "host") == "blog.example.com"
    assert site_of("http://127.0.0.1:8080/", "registrable_domain") == "127.0.0.1"
    assert origin_of("HTTPS://Example.com:443/a?b") == "https://example.com"
    assert origin_of("http://example.com:8080/a") == "http://example.com:8080"
    assert origin_of("http://[::1]:81/") == "http://[::1]:81"


def test_canonical_urls_drop_fragments_and_sort_queries() -> None:
    """A page is fetched once per crawl: fragments dropped, query order normalised."""
    assert canonical("http://a.test/p?b=2&a=1#top") == canonical("http://a.test/p?a=1&b=2")


def test_site_scope_keeps_host_and_start_path() -> None:
    """SYN-SCOPE: a site crawl stays on the start host under the start path's directory."""
    scope = SiteScope.from_start("https://docs.test/guide/intro.html")
    assert scope.contains("https://docs.test/guide/ch1/x.html")
    assert not scope.contains("https://docs.test/blog/x.html")
    assert not scope.contains("https://other.test/guide/x.html")
    assert not scope.contains("http://docs.test/guide/x.html")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give exactly one of -a url=URL or -a urls_file=PATH"),
        ({"url": "ftp://x.test/"}, "url 'ftp://x.test/' is not an http(s) URL"),
        ({"url": "http://x.test/", "kb": "a b"}, "kb 'a b' may hold only letters"),
        ({"url": "http://x.test/", "colour": "red"}, "unknown spider argument(s): colour"),
        ({"urls_file": "/nonexistent/urls.txt"}, "urls_file /nonexistent/urls.txt"),
    ],
)
def test_crawl_request_errors(kwargs: dict[str, str], message: str) -> None:
    """CONTRACT spider arguments: wrong ones are one line, before any request."""
    with pytest.raises(ConfigError) as error:
        CrawlRequest.from_args(**kwargs)
    assert message in str(error.value)


def test_crawl_request_reads_urls_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """CONTRACT: urls_file holds one URL a line; blanks and # comments skipped; duplicates once."""
    path = tmp_path / "urls.txt"
    path.write_text("# list\nhttp://a.test/1\n\nhttp://a.test/2\nhttp://a.test/1\n")
    request = CrawlRequest.from_args(urls_file=str(path), kb="docs", _job="abc")
    assert request.urls == ("http://a.test/1", "http://a.test/2") and request.kb == "docs"


def test_start_urls_take_turns_by_site_each_sites_own_in_order() -> None:
    """A list written site by site starts every site at once; no site's own URLs change order."""
    urls = [
        "http://a.test/1",
        "http://a.test/2",
        "http://a.test/3",
        "http://b.test/1",
        "http://c.test/1",
        "http://b.test/2",
    ]
    turns = list(taking_turns(urls, lambda url: url.split("/")[2]))
    assert turns == [
        "http://a.test/1", "http://b.test/1", "http://c.test/1", "http://a.test/2", "http://b.test/2", "http://a.test/3",
    ]  # fmt: skip
    assert list(taking_turns([], str)) == []
