"""Unusable URLs from the outside: a redirect to a Location that cannot be requested,
a link, sitemap <loc>, feed entry link or robots.txt Sitemap: line with port 99999, a start URL or urls_file
line that cannot be requested, and a sitemap entry with an unreadable lastmod. Each is one line; the rest of
its document is kept; a bad start URL stops the crawl before any request with exit status 2."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import pytest

from tests.helpers import CrawlRun, write_urls
from tests.site import pages
from tests.site.pages import FAST
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e

ROBOTS = Reply("", status=404)
LOCATIONS = {"/r-js": "javascript:alert(1)", "/r-v6": "http://[::1/", "/r-port": "http://{host}:99999/x"}


page = partial(pages.page, say="{title} words.", main=False)


def redirects(host: str) -> dict[str, Reply]:
    return {
        path: Reply("", status=302, headers={"Location": target.format(host=host)})
        for path, target in LOCATIONS.items()
    }


def lines_naming(run: CrawlRun, url: str) -> list[str]:
    """Log lines naming ``url`` exactly (not as the prefix of a longer URL), but the closing line that
    names the source's first URL."""
    pattern = re.compile(re.escape(url) + r"(?![\w/.-])")
    return [line for line in run.stderr.splitlines() if pattern.search(line) and "next re-read due" not in line]


def summary(run: CrawlRun) -> str:
    [line] = [line for line in run.stderr.splitlines() if "crawl summary:" in line]
    return line


def assert_clean(run: CrawlRun) -> None:
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr and " ERROR: " not in run.stderr, run.stderr[-3000:]


@pytest.mark.parametrize(
    ("spider", "url"),
    [("page", "http://{host}:99999/"), ("page", "http://[::1/"), ("sitemap", "http://{host}:99999/sitemap.xml")],
)
def test_an_unusable_start_url_is_one_line_and_exit_status_2(
    server: TestServer, host: str, crawl, spider: str, url: str
) -> None:
    """CONTRACT (one-line error): -a url= with port 99999 or an invalid IPv6 literal stops the
    crawl before it starts: one line naming the URL and why, exit status 2, no request."""
    server.add(host, {"/robots.txt": ROBOTS})
    url = url.format(host=host)
    run = crawl(spider, args={"url": url}, settings=FAST)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 2, run.stderr[-3000:]
    assert lines == [lines[0]] and lines[0].startswith(f"synapsecrawl: url {url!r} is not a usable URL: "), lines
    assert server.log(host) == []


def test_a_urls_file_of_only_unusable_lines_is_one_line_and_exit_status_2(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """A urls_file whose every line is unusable stops the crawl before it starts: one line
    naming the file, how many lines and the first one's reason, exit status 2, no request."""
    server.add(host, {"/robots.txt": ROBOTS})
    urls = write_urls(tmp_path / "urls.txt", [f"http://{host}:99999/a", "http://[::1/"])
    run = crawl("page", args={"urls_file": urls}, settings=FAST)
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 2, run.stderr[-3000:]
    expected = (
        f"synapsecrawl: urls_file {urls} holds no usable URL (2 lines, the first: urls_file {urls} "
        f"line 1: 'http://{host}:99999/a' is not a usable URL: port out of range 0-65535)"
    )
    assert lines == [expected], lines
    assert server.log(host) == []


def test_unusable_redirects_and_a_bad_urls_file_line_in_page_mode(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """In page mode, a redirect to javascript:, to an invalid IPv6 literal and to port
    99999 is one line each naming the page and the Location, counted as skipped (scheme, error); a
    urls_file line with port 99999 is one warning naming the file and line, and the other lines are
    crawled; the good page is stored; no traceback."""
    server.add(host, {"/robots.txt": ROBOTS, **redirects(host), "/good.html": page("Good")})
    bad_line = f"http://{host}:99999/typo"
    urls = write_urls(
        tmp_path / "urls.txt", [bad_line, *(server.url(host, p) for p in LOCATIONS), server.url(host, "/good.html")]
    )
    run = crawl("page", args={"urls_file": urls}, settings=FAST)
    assert_clean(run)
    [skipped] = lines_naming(run, bad_line)
    assert " WARNING: " in skipped and f"urls_file {urls} line 1: " in skipped and "port out of range" in skipped
    for path in LOCATIONS:
        [line] = lines_naming(run, server.url(host, path))
        assert f"redirect from {server.url(host, path)} to " in line and " not followed: " in line, line
    assert [row["url"] for row in run.kb()] == [server.url(host, "/good.html")]
    assert "error 2" in summary(run) and "scheme 1" in summary(run), summary(run)


def test_unusable_redirects_and_links_in_site_mode_keep_the_other_links(server: TestServer, host: str, crawl) -> None:
    """In site mode, a page linking to three unusable redirects, a link with port 99999
    and a good page: each redirect is one line, the bad link is named in one line for its page, and the
    good linked page is still fetched and stored (the page's other links are not lost)."""
    bad_link = f"http://{host}:99999/bad-link"
    server.add(
        host,
        {
            "/robots.txt": ROBOTS,
            **redirects(host),
            "/": page("Start", links=(*LOCATIONS, bad_link, "/after.html")),
            "/after.html": page("After"),
        },
    )
    run = crawl("site", args={"url": server.url(host, "/")}, settings=FAST)
    assert_clean(run)
    for path in LOCATIONS:
        [line] = lines_naming(run, server.url(host, path))
        assert " not followed: " in line, line
    [named] = [line for line in run.stderr.splitlines() if bad_link in line]
    assert "links without a usable URL skipped" in named and "port out of range" in named
    assert {row["url"] for row in run.kb()} == {server.url(host, "/"), server.url(host, "/after.html")}
    assert "/after.html" in [hit.path for hit in server.log(host)]


def test_bad_sitemap_urls_and_a_bad_lastmod_keep_the_other_entries(server: TestServer, host: str, crawl) -> None:
    """robots.txt lists a sitemap at port 99999, then a good one; the good one lists a
    <loc> at port 99999, /ok and ten pages, one with lastmod +99:99. The bad Sitemap: line is one warning;
    the good sitemap is read; the bad <loc> is counted; /ok and all ten pages are fetched and stored."""
    pages = [f"/p{i}.html" for i in range(10)]
    locs = [
        (f"http://{host}:99999/x", "2024-01-01"),
        (server.url(host, "/ok.html"), ""),
        *(
            (server.url(host, p), "2024-01-01T00:00:00+99:99" if i == 3 else f"2024-01-{i + 1:02d}")
            for i, p in enumerate(pages)
        ),
    ]
    body = (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>{loc}</loc>{f'<lastmod>{mod}</lastmod>' if mod else ''}</url>" for loc, mod in locs)
        + "</urlset>"
    )
    bad_sitemap = f"http://{host}:99999/sitemap.xml"
    robots = f"User-agent: *\nAllow: /\nSitemap: {bad_sitemap}\nSitemap: {server.url(host, '/sitemap.xml')}\n"
    server.add(
        host,
        {
            "/robots.txt": Reply(robots, headers={"Content-Type": "text/plain"}),
            "/sitemap.xml": Reply(body, headers={"Content-Type": "application/xml"}),
            "/ok.html": page("OK"),
            **{p: page(p) for p in pages},
        },
    )
    run = crawl("sitemap", args={"url": server.url(host, "/robots.txt")}, settings=FAST)
    assert_clean(run)
    [line] = [line for line in run.stderr.splitlines() if bad_sitemap in line]
    assert " WARNING: " in line and "skipped: port out of range" in line, line
    assert "1 entries without a usable URL" in run.stderr
    assert {row["url"] for row in run.kb()} == {server.url(host, p) for p in ["/ok.html", *pages]}


def test_a_bad_feed_entry_link_keeps_the_good_entries(server: TestServer, host: str, crawl) -> None:
    """A feed with an entry whose link has port 99999 between two good entries stores the two
    good entries; the bad one is counted in the feed's line; no traceback."""
    items = "".join(
        f"<item><title>{t}</title><link>{link}</link><description>{t} text</description></item>"
        for t, link in [
            ("One", server.url(host, "/1")),
            ("Bad", f"http://{host}:99999/2"),
            ("Three", server.url(host, "/3")),
        ]
    )
    feed = f'<?xml version="1.0"?><rss version="2.0"><channel><title>F</title>{items}</channel></rss>'
    server.add(host, {"/robots.txt": ROBOTS, "/feed.xml": Reply(feed, headers={"Content-Type": "application/rss+xml"})})
    run = crawl("feed", args={"url": server.url(host, "/feed.xml")}, settings=FAST)
    assert_clean(run)
    urls = {row["url"] for row in run.kb()}
    assert {server.url(host, "/1"), server.url(host, "/3")} <= urls and f"http://{host}:99999/2" not in urls
    assert "1 without a link skipped" in run.stderr
