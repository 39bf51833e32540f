"""JS rendering, an operator opt-in (ALL-NOJS): off, no script is fetched or run; on, a page's
same-site scripts and fetches go through the crawler like any request, seen from the site's log."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import gaps, write_urls
from tests.site.server import Reply, TestServer


@pytest.fixture
def chromium() -> None:
    """Rendering needs Debian's Chromium (JS_CHROMIUM's default): skipped without it, failed in CI."""
    if not os.access("/usr/bin/chromium", os.X_OK):
        reason = "no /usr/bin/chromium (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


_HTML = {"Content-Type": "text/html; charset=utf-8"}
_JS = {"Content-Type": "application/javascript"}
ROBOTS = Reply("User-agent: *\nCrawl-delay: 2\nDisallow: /private/\n", headers={"Content-Type": "text/plain"})

APP_JS = """
var main = document.getElementById("main");
main.insertAdjacentHTML("beforeend", "<p>Quokka lanterns glow in the rendered page.</p>");
main.insertAdjacentHTML("beforeend", '<p><a href="/two.html">the second page</a></p>');
document.cookie = "seen=1; path=/";
fetch("/api/more.json").then(function (r) { return r.json(); }).then(function (d) {
  main.insertAdjacentHTML("beforeend", "<p>" + d.text + "</p>");
  document.getElementById("form").submit();
});
"""


def _app(server: TestServer, host: str, other: str) -> None:
    """A page whose words and links are written by its script; around it, what must never be fetched."""
    server.add(other, {"/cdn.js": Reply("document.title = 'cross-site ran';", headers=_JS)})
    server.add(host, {
        "/robots.txt": ROBOTS,
        "/app.html": Reply(
            "<!doctype html><html><head><title>App</title>"
            '<link rel="stylesheet" href="/style.css"><script src="/app.js" defer></script>'
            f'<script src="/private/track.js"></script><script src="{server.url(other, "/cdn.js")}"></script>'
            '</head><body><main id="main"><p>Static words only.</p></main><img src="/logo.png" alt="">'
            '<form id="form" action="/submit" method="post"><input name="q" value="x"></form></body></html>',
            headers={**_HTML, "Set-Cookie": "session=abc; Path=/"},
        ),
        "/app.js": Reply(APP_JS, headers=_JS),
        "/api/more.json": Reply('{"text": "Numbats arrive by fetch."}', headers={"Content-Type": "application/json"}),
        "/private/track.js": Reply("document.title = 'tracked';", headers=_JS),
        "/two.html": Reply('<html><head><title>Two</title><script src="/two.js" defer></script></head>'
                           '<body><main id="main"><p>Second page.</p></main></body></html>', headers=_HTML),
        "/two.js": Reply('document.getElementById("main").insertAdjacentHTML("beforeend", "<p>Wombat echo.</p>");',
                         headers=_JS),
        "/style.css": Reply("p { color: red }", headers={"Content-Type": "text/css"}),
        "/logo.png": Reply(b"\x89PNG\r\n", headers={"Content-Type": "image/png"}),
    })  # fmt: skip


def _texts(run) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {str(row["url"]).rsplit("/", 1)[-1]: str(row["text"]) for row in run.kb()}


def test_scripts_are_neither_fetched_nor_run_by_default(server: TestServer, host: str, crawl, tmp_path: Path) -> None:
    """ALL-NOJS: without JS_RENDERING a page is read as served: its script is never requested and
    the words it would write are not in the KB."""
    _app(server, host, f"other-{host}")
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", [server.url(host, "/app.html")])})
    assert run.returncode == 0, run.stderr[-3000:]
    assert [h.path for h in server.log(host)] == ["/robots.txt", "/app.html"]
    text = _texts(run)["app.html"]
    assert "Static words only." in text and "Quokka" not in text


def test_rendering_fetches_only_same_site_scripts_through_the_crawler(
    server: TestServer, host: str, crawl, chromium: None
) -> None:
    """ALL-NOJS opt-in, SYN-ROBOTS, ALL-CD, SYN-RATE: with JS_RENDERING the words and links a page's
    script writes are crawled. Its same-site script and fetch are requested with our User-Agent and
    each waits the Crawl-delay, like the pages (the first page waits 4 s for them, past its 3 s of
    JS_RENDER_TIMEOUT: waiting for the site is not its time); a script robots.txt disallows, a
    script on another site, the stylesheet, the image and the form are never requested; no
    Cookie is ever sent."""
    other = f"other-{host}"
    _app(server, host, other)
    run = crawl(
        "site", args={"url": server.url(host, "/app.html")}, settings={"JS_RENDERING": "True", "JS_RENDER_TIMEOUT": "3"}
    )
    assert run.returncode == 0, run.stderr[-3000:]
    texts = _texts(run)
    assert "Quokka lanterns glow" in texts["app.html"] and "Numbats arrive by fetch." in texts["app.html"]
    assert "Wombat echo." in texts["two.html"]  # found through the link the script wrote
    hits = server.log(host)
    assert sorted(h.path for h in hits) == sorted(
        ["/robots.txt", "/app.html", "/app.js", "/api/more.json", "/two.html", "/two.js"]
    )
    assert server.log(other) == []
    assert all("SynapseBot" in (h.header("User-Agent") or "") for h in hits)
    assert all(h.header("Cookie") is None and h.method == "GET" for h in hits)
    assert min(gaps(hits)) >= 2.0, gaps(hits)
    assert "crawl summary: fetched 2, stored 2" in run.stderr  # a page's scripts are not pages


def test_a_script_that_never_ends_leaves_the_page_as_served(
    server: TestServer, host: str, crawl, tmp_path: Path, chromium: None
) -> None:
    """ALL-NOJS opt-in: a page whose script never yields is given up after JS_RENDER_TIMEOUT and
    read as served; the crawl goes on to its next page."""
    server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/spin.html": Reply("<html><head><title>Spin</title></head><body><p>Served words.</p>"
                            "<script>while (true) {}</script></body></html>", headers=_HTML),
        "/fine.html": Reply("<html><head><title>Fine</title></head><body><p>Fine words.</p></body></html>",
                            headers=_HTML),
    })  # fmt: skip
    urls = [server.url(host, "/spin.html"), server.url(host, "/fine.html")]
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "u.txt", urls)},
        settings={"JS_RENDERING": "True", "JS_RENDER_TIMEOUT": "2"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    texts = _texts(run)
    assert "Served words." in texts["spin.html"] and "Fine words." in texts["fine.html"]
    assert "not rendered (scripts ran past JS_RENDER_TIMEOUT 2 s)" in run.stderr


def test_an_unusable_rendering_setting_is_one_line_before_any_request(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """ALL-NOJS: switching rendering on without a browser stops the crawl in one line, nothing fetched."""
    run = crawl(
        "page",
        args={"urls_file": write_urls(tmp_path / "u.txt", [server.url(host, "/app.html")])},
        settings={"JS_RENDERING": "True", "JS_CHROMIUM": str(tmp_path / "no-chromium")},
    )
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1].startswith("synapsecrawl: JS_RENDERING is on but JS_CHROMIUM")
    assert "Traceback" not in run.stderr
    assert server.log(host) == []
