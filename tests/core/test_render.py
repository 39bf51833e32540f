"""What JS rendering renders, what a rendering page may fetch, and how long it may run (ALL-NOJS opt-in)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.crawl.kinds import RequestKind
from synapsecrawl.crawl.render import PageRender, RenderBudget, RenderConfig, should_render
from synapsecrawl.errors import ConfigError
from synapsecrawl.urls import site_of

PAGE = "https://www.example.com/docs/a.html"


def _page(limit: int = 20, kind: str = "host") -> PageRender:
    return PageRender(site_of(PAGE, kind), lambda url: site_of(url, kind), limit)  # type: ignore[arg-type]


def _served(page: PageRender) -> PageRender:
    assert (
        page.judge(PAGE, method="GET", resource_type="document", navigation=True, main_frame=True).action == "document"
    )
    return page


@pytest.mark.parametrize(("url", "method", "resource_type", "expected"), [
    ("https://www.example.com/app.js", "GET", "script", ("fetch", "script")),
    ("https://www.example.com/api/x.json", "GET", "fetch", ("fetch", "fetch")),
    ("https://www.example.com/api/x.json", "GET", "xhr", ("fetch", "xhr")),
    ("http://www.example.com/app.js", "GET", "script", ("fetch", "script")),  # same host, as pacing counts it
    ("https://www.example.com/api/x", "POST", "fetch", ("refuse", "method")),
    ("https://www.example.com/logo.png", "GET", "image", ("refuse", "image")),
    ("https://www.example.com/site.css", "GET", "stylesheet", ("refuse", "stylesheet")),
    ("https://www.example.com/f.woff2", "GET", "font", ("refuse", "font")),
    ("https://www.example.com/v.mp4", "GET", "media", ("refuse", "media")),
    ("https://www.example.com/stream", "GET", "eventsource", ("refuse", "eventsource")),
    ("https://www.example.com/beacon", "GET", "ping", ("refuse", "ping")),
    ("https://www.example.com/x", "GET", "", ("refuse", "other")),
    ("https://cdn.example.com/app.js", "GET", "script", ("refuse", "cross-site")),
    ("https://cdn.example.net/app.js", "GET", "script", ("refuse", "cross-site")),
    ("ftp://www.example.com/app.js", "GET", "script", ("refuse", "scheme")),
    ("data:text/javascript,1", "GET", "script", ("refuse", "scheme")),
])  # fmt: skip
def test_subresources_judged(url: str, method: str, resource_type: str, expected: tuple[str, str]) -> None:
    """ALL-NOJS opt-in: only same-site scripts and fetch/XHR GETs are fetched; images, fonts, media,
    stylesheets, other sites, other methods and schemes are refused."""
    verdict = _served(_page()).judge(url, method=method, resource_type=resource_type, navigation=False, main_frame=True)
    assert tuple(verdict) == expected


def test_site_follows_the_profile_grouping() -> None:
    """OMN-SITE: under a registrable-domain grouping, another host of the same domain is the same site."""
    page = _served(_page(kind="registrable_domain"))
    verdict = page.judge(
        "https://cdn.example.com/app.js", method="GET", resource_type="script", navigation=False, main_frame=True
    )
    assert verdict.action == "fetch"


def test_only_the_first_main_frame_navigation_is_the_document() -> None:
    """ALL-NOJS: no forms, no links followed: every navigation after the page's own (a form
    submitted, location changed, a frame) is answered so the browser stays where it is."""
    page = _page()
    assert page.judge(PAGE, method="GET", resource_type="document", navigation=True, main_frame=False).action == "stay"
    _served(page)
    for method in ("POST", "GET"):
        again = page.judge(PAGE, method=method, resource_type="document", navigation=True, main_frame=True)
        assert tuple(again) == ("stay", "navigation")


def test_subresources_capped_per_page() -> None:
    """ALL-NOJS opt-in: at most the cap of subresources per page; refused ones do not count."""
    page = _served(_page(limit=2))

    def judge(url: str, kind: str = "script") -> str:
        return page.judge(url, method="GET", resource_type=kind, navigation=False, main_frame=True).action

    assert judge("https://www.example.com/logo.png", "image") == "refuse"
    assert [judge(f"https://www.example.com/{n}.js") for n in range(3)] == ["fetch", "fetch", "refuse"]
    assert page.fetched == 2
    assert (
        _served(_page(limit=0))
        .judge("https://www.example.com/a.js", method="GET", resource_type="script", navigation=False, main_frame=True)
        .reason
        == "limit"
    )


@pytest.mark.parametrize(("mode", "kind", "status", "content_type", "body", "expected"), [
    ("page", RequestKind.PAGE, 200, "text/html; charset=utf-8", b"<html>", True),
    ("site", RequestKind.PAGE, 200, "application/xhtml+xml", b"<html>", True),
    ("sitemap", RequestKind.PAGE, 200, "TEXT/HTML", b"", True),
    ("page", RequestKind.PAGE, 200, "", b"  <!DOCTYPE html><html>", True),  # no Content-Type: sniffed
    ("page", RequestKind.PAGE, 200, "", b"<?xml version='1.0'?><urlset>", False),
    ("page", RequestKind.PAGE, 200, "application/pdf", b"%PDF-1.7", False),
    ("page", RequestKind.PAGE, 200, "text/plain", b"<html>", False),
    ("page", RequestKind.PAGE, 404, "text/html", b"<html>", False),
    ("page", RequestKind.PAGE, 304, "text/html", b"", False),
    ("feed", RequestKind.PAGE, 200, "text/html", b"<html>", False),
    ("ondemand", RequestKind.PAGE, 200, "text/html", b"<html>", False),
    ("page", RequestKind.ROBOTS, 200, "text/html", b"<html>", False),
    ("sitemap", RequestKind.SITEMAP, 200, "text/html", b"<html>", False),
    ("page", RequestKind.TDMREP, 200, "text/html", b"<html>", False),
    ("page", RequestKind.SUBRESOURCE, 200, "text/html", b"<html>", False),
    ("page", RequestKind.FEED, 200, "text/html", b"<html>", False),
])  # fmt: skip
def test_what_is_rendered(
    mode: str, kind: RequestKind, status: int, content_type: str, body: bytes, expected: bool
) -> None:
    """ALL-NOJS opt-in: only an HTML 200 of a page, site or sitemap crawl is rendered; robots.txt,
    sitemaps, feeds, PDFs and a page's own subresources never are."""
    assert should_render(mode, kind, status, content_type, body) is expected


@given(st.text(max_size=40), st.binary(max_size=64), st.integers(100, 599))
def test_should_render_never_raises(content_type: str, body: bytes, status: int) -> None:
    """Any Content-Type and body is judged, never raised on."""
    assert isinstance(should_render("page", RequestKind.PAGE, status, content_type, body), bool)


def test_config_defaults_off() -> None:
    """ALL-NOJS: rendering is off unless the operator turns it on."""
    config = RenderConfig.from_settings({})
    assert config == RenderConfig()
    assert not config.enabled and config.max_subresources == 20


def test_config_reads_the_operator_values(tmp_path: Path) -> None:
    """JS_* settings as Scrapy passes them (strings from -s) are read once."""
    chromium = tmp_path / "chromium"
    chromium.write_text("#!/bin/sh\n")
    chromium.chmod(0o755)
    config = RenderConfig.from_settings(
        {
            "JS_RENDERING": "True",
            "JS_CHROMIUM": str(chromium),
            "JS_MAX_SUBRESOURCES": "5",
            "JS_MAX_PAGES": "2",
            "JS_RENDER_TIMEOUT": "2.5",
        }
    )
    assert config == RenderConfig(True, str(chromium), 5, 2, 2.5)


@pytest.mark.parametrize(("settings", "message"), [
    ({"JS_RENDERING": "maybe"}, "JS_RENDERING 'maybe' is neither True nor False"),
    ({"JS_RENDERING": True, "JS_CHROMIUM": "/nonexistent/chromium"},
     "JS_RENDERING is on but JS_CHROMIUM /nonexistent/chromium is not an executable"),
    ({"JS_MAX_SUBRESOURCES": "many"}, "JS_MAX_SUBRESOURCES 'many' is not a number"),
    ({"JS_MAX_SUBRESOURCES": -1}, "JS_MAX_SUBRESOURCES -1 is outside 0 to 1000"),
    ({"JS_MAX_PAGES": 0}, "JS_MAX_PAGES 0 is outside 1 to 64"),
    ({"JS_RENDER_TIMEOUT": 0}, "JS_RENDER_TIMEOUT 0 is outside 1 to 600"),
])  # fmt: skip
def test_bad_settings_are_one_line_errors(settings: dict[str, object], message: str) -> None:
    """Bad input: a bad JS_* value is a one-line ConfigError naming the setting."""
    with pytest.raises(ConfigError) as error:
        RenderConfig.from_settings(settings)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_a_missing_chromium_is_fine_while_rendering_is_off() -> None:
    """ALL-NOJS: with rendering off no browser is needed."""
    assert not RenderConfig.from_settings({"JS_CHROMIUM": "/nonexistent/chromium"}).enabled


@pytest.mark.parametrize(("as_root", "sandbox"), [(True, False), (False, True)])
def test_launch_options(as_root: bool, sandbox: bool) -> None:
    """Chromium keeps its sandbox unless it runs as root, which it refuses; it resolves no host itself."""
    options = RenderConfig(chromium="/usr/bin/chromium").launch_options(as_root=as_root)
    assert options["executable_path"] == "/usr/bin/chromium" and options["headless"] is True
    assert options["chromium_sandbox"] is sandbox
    assert "--host-resolver-rules=MAP * ~NOTFOUND" in options["args"]


def test_budget_counts_only_the_page_own_time() -> None:
    """A page's scripts get JS_RENDER_TIMEOUT of their own time; waiting on fetches (its site's
    Crawl-delay) is not counted, overlapping fetches once."""
    budget = RenderBudget(5.0)
    assert budget.remaining(90.0) == 5.0  # the browser starting, a tab opening: not the page's time
    budget.start(100.0)
    assert budget.remaining(101.0) == pytest.approx(4.0)
    budget.fetch_started(101.0)
    assert budget.remaining(130.0) == pytest.approx(4.0)  # waiting on its site's turn
    budget.fetch_started(102.0)
    budget.fetch_ended(131.0)
    assert budget.remaining(132.0) == pytest.approx(4.0)  # one fetch still pending
    budget.fetch_ended(133.0)
    assert budget.remaining(135.0) == pytest.approx(2.0)
    assert budget.remaining(200.0) == 0.0
