"""ScopedRedirectMiddleware: each hop judged against the chain's start, the scope and the profile's limit."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler

from middlewares.engine.runtime import Runtime
from middlewares.redirects import ScopedRedirectMiddleware
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.crawl.scope import SiteScope
from tests.adapters.crawlers import crawler_for


def redirects(tmp_path: Path, **kwargs: object) -> ScopedRedirectMiddleware:
    return build_from_crawler(ScopedRedirectMiddleware, crawler_for(tmp_path, **kwargs))  # type: ignore[arg-type]


def moved(request: Request, location: str, status: int = 301) -> Response:
    return Response(request.url, status=status, headers={"Location": location}, request=request)


def test_synapsebot_follows_a_hop_on_its_host(tmp_path: Path) -> None:
    """SYN-SCOPE: a redirect within the start host is followed, as Scrapy builds it (redirect_urls)."""
    mw = redirects(tmp_path)
    request = Request("http://docs.test/a")
    hop = mw.process_response(request, moved(request, "/b"))
    assert isinstance(hop, Request) and hop.url == "http://docs.test/b"
    assert hop.meta["redirect_urls"] == ["http://docs.test/a"]


def test_synapsebot_does_not_follow_a_hop_off_its_host(tmp_path: Path) -> None:
    """SYN-SCOPE: a hop to another host is refused: counted, skipped as "scope", never requested."""
    crawler = crawler_for(tmp_path)
    mw = build_from_crawler(ScopedRedirectMiddleware, crawler)
    request = Request("http://docs.test/a")
    with pytest.raises(IgnoreRequest, match="not followed"):
        mw.process_response(request, moved(request, "http://elsewhere.test/a"))
    assert crawler.stats.get_value("redirect/refused/scope") == 1  # type: ignore[union-attr]
    assert Runtime.of(crawler).summary.skipped["docs.test"]["scope"] == 1


def test_a_site_crawl_stays_under_its_start_path(tmp_path: Path) -> None:
    """SYN-SCOPE: a spider's scopes (a site crawl's start path) bound its redirects too."""
    mw = redirects(tmp_path, scopes=(SiteScope.from_start("http://docs.test/guide/"),))
    request = Request("http://docs.test/guide/a")
    assert isinstance(mw.process_response(request, moved(request, "/guide/b")), Request)
    with pytest.raises(IgnoreRequest):
        mw.process_response(request, moved(request, "/blog/"))


@pytest.mark.parametrize(
    ("target", "followed"), [("https://other.example.org/x", False), ("https://www.example.com/y", True)]
)
def test_yottabot_follows_only_within_the_same_site(tmp_path: Path, target: str, followed: bool) -> None:
    """YOT-REDIRECT: a hop within the same site (the registrable domain, as the web's "same site") is
    followed; a hop to another site is not."""
    mw = redirects(tmp_path, BOT_PROFILE="yottabot")
    request = Request("https://docs.example.com/a")
    if followed:
        assert isinstance(mw.process_response(request, moved(request, target)), Request)
    else:
        with pytest.raises(IgnoreRequest):
            mw.process_response(request, moved(request, target))


def test_scope_is_judged_from_the_start_of_the_chain(tmp_path: Path) -> None:
    """SYN-SCOPE: a chain judged hop by hop from its first URL, so a detour cannot walk the crawl off
    its host one step at a time."""
    mw = redirects(tmp_path, scopes=(SiteScope.from_start("http://docs.test/guide/"),))
    request = Request("http://docs.test/guide/a", meta={"redirect_urls": ["http://docs.test/guide/start"]})
    with pytest.raises(IgnoreRequest):
        mw.process_response(request, moved(request, "/elsewhere"))


def test_the_sixth_redirect_in_a_row_is_not_followed(tmp_path: Path) -> None:
    """YOT-REDIRECT, ALL-RFC9309: at most 5 in a row (the add-on sets REDIRECT_MAX_TIMES from the
    profile); the sixth gives up with one line, skipped as "error"."""
    crawler = crawler_for(tmp_path, BOT_PROFILE="yottabot")
    mw = build_from_crawler(ScopedRedirectMiddleware, crawler)
    request = Request("https://docs.example.com/0")
    for n in range(1, 6):
        request = mw.process_response(request, moved(request, f"/{n}"))  # type: ignore[assignment]
        assert isinstance(request, Request)
    with pytest.raises(IgnoreRequest):
        mw.process_response(request, moved(request, "/6"))
    assert crawler.stats.get_value("redirect/refused/error") == 1  # type: ignore[union-attr]


def test_a_redirect_without_a_location_is_the_answer_itself(tmp_path: Path) -> None:
    """A 3xx with no Location header is not a redirect Scrapy can follow: the answer goes on as is."""
    mw = redirects(tmp_path)
    request = Request("http://docs.test/a")
    bare = Response(request.url, status=302, request=request)
    assert mw.process_response(request, bare) is bare


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("javascript:alert(1)", "scheme"),
        ("ftp://docs.test/file", "scheme"),
        ("http://[::1/", "error"),
        ("http://docs.test:99999/x", "error"),
    ],
)
def test_a_redirect_to_an_unusable_location_skips_the_page_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, location: str, reason: str
) -> None:
    """CONTRACT (one-line error): a redirect to a Location that cannot be requested (another
    scheme, an invalid IPv6 literal, port 99999) is one line naming the page and the Location; the page is
    skipped (IgnoreRequest, no traceback) and counted, as "scheme" or "error"."""
    crawler = crawler_for(tmp_path)
    mw = build_from_crawler(ScopedRedirectMiddleware, crawler)
    request = Request("http://docs.test/a")
    with (
        caplog.at_level(logging.INFO, logger="middlewares.redirects"),
        pytest.raises(IgnoreRequest, match="not followed"),
    ):
        mw.process_response(request, moved(request, location))
    lines = [r.getMessage() for r in caplog.records if r.name == "middlewares.redirects"]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert lines[0].startswith(f"redirect from {request.url} to {location!r} not followed: "), lines
    assert crawler.stats.get_value(f"redirect/refused/{reason}") == 1  # type: ignore[union-attr]
    assert Runtime.of(crawler).summary.skipped["docs.test"][reason] == 1


def test_robots_txt_follows_its_redirects_anywhere(tmp_path: Path) -> None:
    """ALL-RFC9309 §2.3.1.2: robots.txt, which asks for every status, follows its hops even off the
    host and off the scope; the hop still asks for every status."""
    mw = redirects(tmp_path)
    request = Request("http://docs.test/robots.txt", meta={KIND: RequestKind.ROBOTS, "handle_httpstatus_all": True})
    hop = mw.process_response(request, moved(request, "http://cdn.test/robots.txt"))
    assert isinstance(hop, Request) and hop.url == "http://cdn.test/robots.txt"
    assert hop.meta["handle_httpstatus_all"] is True and request.meta["handle_httpstatus_all"] is True


def test_dont_redirect_keeps_the_answer(tmp_path: Path) -> None:
    """A request marked dont_redirect (a render subresource, ...) gets its 3xx as is."""
    mw = redirects(tmp_path)
    request = Request("http://docs.test/a", meta={"dont_redirect": True})
    answer = moved(request, "/b")
    assert mw.process_response(request, answer) is answer
