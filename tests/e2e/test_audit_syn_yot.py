"""Audit of SynapseBot's and YottaBot-SearchBot's promises against edge cases site owners meet:
realistic robots.txt files, redirects across hosts and schemes, directive variants, and re-reads
answered 304."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.helpers import gaps, synapsecrawl, write_urls
from tests.site.pages import FAST, HTML, TEXT, page
from tests.site.server import Hit, Reply, TestServer

pytestmark = pytest.mark.e2e

YOTTA = {"BOT_PROFILE": "yottabot"}


html = partial(page, say="{title} is a page with enough words to be read as text.")


def pages(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits if h.path != "/robots.txt"]


def test_a_304_that_now_carries_noindex_removes_the_page(server: TestServer, host: str, crawl) -> None:
    """SYN-REMOVE, SYN-REREAD, YOT-DIRECTIVES: a site owner adds `X-Robots-Tag: noindex` in the server
    configuration (nginx's add_header also applies to 304s) without touching the file, so the ETag is
    unchanged and the re-read is answered 304 carrying the header. A 304's header fields update the
    stored response (RFC 9111 §4.3.4): the page "now carries noindex" and leaves the KB. A 304 without
    the header keeps its page."""
    etag = '"v1"'

    def route(noindex: bool) -> Callable[[BaseHTTPRequestHandler], Reply]:
        def answer(handler: BaseHTTPRequestHandler) -> Reply:
            headers = {**HTML, "ETag": etag, **({"X-Robots-Tag": "noindex"} if noindex else {})}
            if handler.headers.get("If-None-Match") == etag:
                return Reply(b"", status=304, headers={k: v for k, v in headers.items() if k != "Content-Type"})
            return html("Hidden later" if noindex else "Kept", headers=headers)

        return answer

    server.add(host, {"/robots.txt": Reply("", status=404),
                      "/hidden.html": route(False), "/kept.html": route(False)})
    start = server.url(host, "/")
    server.add(host, {"/": html("Home", links=("/hidden.html", "/kept.html"))})
    first = crawl("site", args={"url": start}, settings=FAST)
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(first.kb()) == 3
    mark = len(server.log(host))

    server.add(host, {"/hidden.html": route(True)})
    second = crawl("site", args={"url": start}, settings=FAST)
    assert second.returncode == 0, second.stderr[-3000:]
    [hidden] = [h for h in server.log(host)[mark:] if h.path == "/hidden.html"]
    assert hidden.header("If-None-Match") == etag and hidden.bytes_sent == 0  # it was answered 304
    assert sorted(str(p["url"]) for p in second.kb()) == [start, server.url(host, "/kept.html")]


def test_synapsebot_reads_a_robots_txt_as_site_owners_write_it(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-ROBOTS-ONCE, ALL-RFC9309 (SynapseBot: "the longest matching rule wins, Allow wins a tie,
    * and $ work, the User-Agent is matched by its product token, ignoring case"): a file with
    comments, CRLF line ends, mixed-case keys, a Googlebot group, a * group and a SynapseBot group
    written in capitals with a version and a trailing comment. Only SynapseBot's group applies (so
    /wp-admin/ is fetched, and `robots check` gives no Crawl-delay: the * group's 20 s is not ours);
    inside it an Allow deeper than a Disallow wins, an equal-length Allow wins the tie, `*.json$` blocks /feed.json but not
    /feed.json?page=2, and `/*?replytocom=` blocks a comment link."""
    robots = (
        "# robots.txt for a WordPress site\r\n"
        "User-agent: Googlebot\r\nDisallow: /nogoogle/\r\n\r\n"
        "User-Agent: *          # everyone else\r\n"
        "Disallow: /wp-admin/\r\nAllow: /wp-admin/admin-ajax.php\r\nCrawl-delay: 20\r\n\r\n"
        "USER-AGENT: SYNAPSEBOT/1.0   # the knowledge-base crawler\r\n"
        "disallow: /private/\r\n"
        "ALLOW: /private/press/\r\n"
        "Disallow: /tie\r\nAllow: /tie\r\n"
        "Disallow: /*.json$\r\n"
        "Disallow: /*?replytocom=\r\n"
        "\r\nSitemap: https://example.test/sitemap.xml\r\n"
    )
    allowed = ["/wp-admin/options.php", "/nogoogle/a.html", "/private/press/kit.html", "/tie.html",
               "/feed.json?page=2", "/post.html"]
    refused = ["/private/notes.html", "/feed.json", "/post.html?replytocom=12"]
    server.add(host, {"/robots.txt": Reply(robots, headers=TEXT), "*": html("Any page")})
    urls = [server.url(host, p) for p in allowed + refused]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    hits = server.log(host)
    assert [h.path for h in hits].count("/robots.txt") == 1
    assert sorted(pages(hits)) == sorted(allowed)
    robots_file = tmp_path / "robots.txt"
    robots_file.write_text(robots, newline="")
    delay = synapsecrawl("robots", "check", "--robots", str(robots_file), "--agent", "SynapseBot", "--crawl-delay")
    assert delay.stdout.strip() == "none", delay.stdout + delay.stderr


def test_yottabot_redirects_within_the_site_heed_the_target_hosts_robots_and_https(
    tls_server: TestServer, server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """YOT-REDIRECT, YOT-ROBOTS, YOT-HTTPS, YOT-RATE: a redirect from a.SITE to www.SITE is within the
    site, but robots.txt applies per host, so www.SITE's robots.txt is read (with the robots.txt
    User-Agent) and the page it disallows is never requested; a redirect to an allowed page there is
    followed and stored under its final URL. A redirect from HTTPS down to plain HTTP on the same host
    is not followed (the HTTP URL is never requested). Requests to each host are a second apart or more."""
    site = host
    www = f"www.{site}"
    tls_server.add(f"a.{site}", {
        "/robots.txt": Reply("", status=404),
        "/old-private": Reply("", status=301, headers={"Location": tls_server.url(www, "/private/secret.html")}),
        "/old-public": Reply("", status=301, headers={"Location": tls_server.url(www, "/docs/page.html")}),
        "/downgrade": Reply("", status=302, headers={"Location": server.url(f"a.{site}", "/plain.html")}),
    })  # fmt: skip
    tls_server.add(www, {
        "/robots.txt": Reply("User-agent: yottabot-searchbot\nDisallow: /private/\n", headers=TEXT),
        "/private/secret.html": html("Secret"),
        "/docs/page.html": html("Public docs"),
    })  # fmt: skip
    server.add(f"a.{site}", {"/robots.txt": Reply("", status=404), "/plain.html": html("Plain HTTP")})
    urls = [tls_server.url(f"a.{site}", p) for p in ("/old-private", "/old-public", "/downgrade")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=YOTTA)
    assert run.returncode == 0, run.stderr[-3000:]
    www_hits = tls_server.log(www)
    assert www_hits and www_hits[0].path == "/robots.txt"
    assert "robots.txt;" in str(www_hits[0].header("User-Agent"))
    assert pages(www_hits) == ["/docs/page.html"]
    assert server.log(f"a.{site}") == []
    assert [str(p["url"]) for p in run.kb()] == [tls_server.url(www, "/docs/page.html")]
    for hits in (tls_server.log(f"a.{site}"), www_hits):
        assert all(gap >= 1.0 for gap in gaps(hits)), gaps(hits)


def test_yottabot_directive_variants_in_headers_meta_and_rel(tls_server: TestServer, host: str, crawl) -> None:
    """YOT-DIRECTIVES, YOT-TOKEN, YOT-HTTPS: in a site crawl, a plain-text page (which has no <meta>)
    kept out by `X-Robots-Tag: YottaSearch: noindex` (the earlier name, scoped); an HTML page whose
    header scopes `none` to YottaBot-SearchBot after a googlebot directive is neither kept nor
    followed; `<META NAME="YOTTABOT-SEARCHBOT" CONTENT="NOINDEX">` in capitals keeps a page out but
    its links are followed; `googlebot: noindex` alone keeps nothing out; a link whose rel holds
    nofollow among other values is never requested."""
    tls_server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/": html("Start", links=("/notes.txt", "/none.html", "/caps.html", "/google.html", "/sponsored.html"),
                  rels={"/sponsored.html": "noopener NoFollow"}),
        "/notes.txt": Reply("Notes kept out by a header.\n", headers={**TEXT, "X-Robots-Tag": "YottaSearch: noindex"}),
        "/none.html": html("None", links=("/from-none.html",),
                           headers={"X-Robots-Tag": "googlebot: nofollow, YottaBot-SearchBot: none"}),
        "/caps.html": html("Caps", links=("/from-caps.html",), head='<META NAME="YOTTABOT-SEARCHBOT" CONTENT="NOINDEX">'),
        "/google.html": html("Google only", headers={"X-Robots-Tag": "googlebot: noindex"}),
        "*": html("Leaf"),
    })  # fmt: skip
    run = crawl("site", args={"url": tls_server.url(host, "/")}, settings=YOTTA)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = set(pages(tls_server.log(host)))
    assert seen == {"/", "/notes.txt", "/none.html", "/caps.html", "/google.html", "/from-caps.html"}, seen
    assert sorted(str(p["title"]) for p in run.kb()) == ["Google only", "Leaf", "Start"]


def test_a_site_crawl_started_without_a_trailing_slash_stays_under_that_path(server: TestServer, host: str,
                                                                              crawl) -> None:
    """SYN-SCOPE: "a site crawl stays on the starting host, under the starting address's path". A KB user
    adds https://h/docs, as people type it; the server redirects it to /docs/ as servers do for a
    directory. Pages under /docs/ are crawled; /blog/ and /shop/ are not under /docs and are never
    requested."""
    server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/docs": Reply("", status=301, headers={"Location": "/docs/"}),
        "/docs/": html("Docs", links=("guide.html", "/blog/news.html", "/shop/cart.html")),
        "/docs/guide.html": html("Guide"),
        "/blog/news.html": html("News"),
        "/shop/cart.html": html("Cart"),
    })  # fmt: skip
    run = crawl("site", args={"url": server.url(host, "/docs")}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(pages(server.log(host))) == ["/docs", "/docs/", "/docs/guide.html"]
    assert sorted(str(p["title"]) for p in run.kb()) == ["Docs", "Guide"]
