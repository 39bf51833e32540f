"""Scope of a crawl and of its redirects (synapsecrawl.crawl.scope)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.crawl import scope as scope_module
from synapsecrawl.crawl.scope import SiteScope, in_any, redirect_refusal


@pytest.mark.parametrize(
    ("start", "url", "inside"),
    [
        ("https://h.test/docs/intro.html", "https://h.test/docs/", True),
        ("https://h.test/docs/intro.html", "https://h.test/docs/a/b.pdf", True),
        ("https://h.test/docs/intro.html", "https://h.test/docs", False),  # the prefix ends in '/'
        ("https://h.test/docs/intro.html", "https://h.test/docsearch/", False),
        ("https://h.test/docs/intro.html", "https://h.test/blog/", False),
        ("https://h.test/docs/", "https://H.TEST/docs/x", True),  # host names ignore case
        ("https://h.test/docs/", "https://h.test:443/docs/x", True),  # the default port, written out
        ("https://h.test/docs/", "https://h.test:8443/docs/x", False),
        ("https://h.test/docs/", "http://h.test/docs/x", False),  # no downgrade to http
        ("http://h.test/docs/", "https://h.test/docs/x", True),  # the https upgrade of an http start
        ("http://h.test:8080/docs/", "https://h.test/docs/x", False),  # ...on default ports only
        ("https://h.test/docs/", "https://www.h.test/docs/x", False),  # another host
        ("https://h.test/docs/", "https://h.test.evil/docs/x", False),
        ("https://h.test", "https://h.test/anything", True),  # no path: the whole host
        ("https://h.test/docs/", "https://h.test:99999/docs/", False),  # an invalid port
        ("https://h.test/docs/", "mailto:someone@h.test", False),
    ],
)
def test_site_scope_is_the_start_host_under_the_start_path(start: str, url: str, inside: bool) -> None:
    """SYN-SCOPE: a site crawl stays on the starting host, under the start address's path up to
    its last '/'; an http start admits its https upgrade on the default ports."""
    assert SiteScope.from_start(start).contains(url) is inside


def test_whole_host_scope_keeps_every_path_of_one_host() -> None:
    """SYN-SCOPE: a sitemap's pages must be on the sitemap's own host, any path."""
    scope = SiteScope.whole_host("https://h.test/maps/sitemap.xml")
    assert scope.contains("https://h.test/")
    assert scope.contains("https://h.test/blog/post")
    assert not scope.contains("https://cdn.h.test/blog/post")
    assert in_any([scope, SiteScope.whole_host("https://cdn.h.test/")], "https://cdn.h.test/x")


@pytest.mark.parametrize(
    ("rule", "start", "target", "refused"),
    [
        ("host", "https://a.h.test/x", "https://a.h.test/y", None),
        ("host", "https://a.h.test/x", "http://a.h.test/y", None),  # the scheme is not the host rule's
        ("host", "https://a.h.test/x", "https://b.h.test/y", "off the host a.h.test"),
        # YOT-REDIRECT: a site is a registrable domain with all its hostnames
        ("site", "https://a.h.test/x", "https://www.h.test/y", None),
        ("site", "https://docs.example.co.uk/x", "https://www.example.co.uk/y", None),
        ("site", "https://docs.example.co.uk/x", "https://other.co.uk/y", "off the site example.co.uk"),
        ("site", "https://a.h.test/x", "https://other.test/y", "off the site h.test"),
        ("site", "https://alice.github.io/x", "https://bob.github.io/y", "off the site alice.github.io"),
        ("any", "https://a.h.test/x", "https://elsewhere.test/y", None),
    ],
)
def test_redirect_rule_judged_against_the_start_of_the_chain(
    rule: scope_module.RedirectRule, start: str, target: str, refused: str | None
) -> None:
    """YOT-REDIRECT, SYN-SCOPE: "host" keeps a chain of redirects on its first host, "site" on its
    registrable domain (a PSL private suffix such as github.io separates sites), "any" anywhere."""
    assert redirect_refusal(rule, start, target) == refused


def test_a_crawl_scope_comes_before_the_profile_rule() -> None:
    """SYN-SCOPE: in a site crawl a redirect out of the start path is refused even where the
    profile's rule (here "any") would follow it; one inside is followed."""
    scopes = (SiteScope.from_start("https://h.test/docs/"),)
    assert (
        redirect_refusal("any", "https://h.test/docs/a", "https://h.test/blog/", scopes) == "out of the crawl's scope"
    )
    assert redirect_refusal("any", "https://h.test/docs/a", "https://h.test/docs/b", scopes) is None
    assert redirect_refusal("site", "https://h.test/docs/a", "https://www.h.test/docs/b", scopes) == (
        "out of the crawl's scope"
    )


@given(st.text(max_size=80), st.text(max_size=80))
def test_scope_never_raises_on_odd_urls(start: str, url: str) -> None:
    """SYN-SCOPE: any string as a start or a candidate is judged, never an exception."""
    scope = SiteScope.from_start(start)
    assert scope.contains(url) in (True, False)
    assert isinstance(redirect_refusal("site", start, url, (scope,)), str | None)
