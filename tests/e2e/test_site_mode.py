"""Site mode (``scrapy crawl site``): scope, depth and page limits, link rules, documents,
redirects and the crawl summary, measured from the server's log and the KB."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path

import pytest

from tests.helpers import gaps, make_pdf, write_urls
from tests.site.pages import FAST, TEXT, page
from tests.site.server import Hit, Reply, TestServer

html = partial(page, h1=True, listed=True)


def paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits if h.path != "/robots.txt"]


def chain(server: TestServer, host: str, length: int) -> None:
    """/docs/d0.html links to d1 ... up to d{length}: page dN is N links deep. Off-path and
    off-host links hang from the start page."""
    routes = {f"/docs/d{n}.html": html(f"Depth {n}", links=[f"d{n + 1}.html"]) for n in range(length)}
    routes["/docs/d0.html"] = html("Depth 0", links=["d1.html", "/blog/post.html", f"http://elsewhere-{host}/x.html"])
    server.add(host, {"/robots.txt": Reply("", status=404), **routes, "/blog/post.html": html("Blog")})
    server.add(f"elsewhere-{host}", {"/x.html": html("Elsewhere")})


def test_site_crawl_goes_three_links_deep_on_its_host_and_path(server: TestServer, host: str, crawl) -> None:
    """SYN-LIMITS, SYN-SCOPE: by default pages 3 links deep are fetched and stored, the page
    4 deep is never requested; a link outside the start path (/blog/) or to another host is
    never requested; each page is fetched once."""
    chain(server, host, 6)
    run = crawl("site", args={"url": server.url(host, "/docs/d0.html")}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    assert paths(server.log(host)) == ["/docs/d0.html", "/docs/d1.html", "/docs/d2.html", "/docs/d3.html"]
    assert server.log(f"elsewhere-{host}") == []
    assert sorted(str(p["title"]) for p in run.kb()) == ["Depth 0", "Depth 1", "Depth 2", "Depth 3"]


def test_operator_may_raise_depth_to_five_and_a_user_may_lower_it(server: TestServer, host: str, crawl) -> None:
    """SYN-LIMITS: a self-hosted operator's DEPTH_LIMIT=5 reaches pages 4 and 5 links deep and no
    deeper; a KB user's -a depth=1 under it stops after the first level."""
    chain(server, host, 7)
    run = crawl("site", args={"url": server.url(host, "/docs/d0.html")}, settings={**FAST, "DEPTH_LIMIT": "5"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert paths(server.log(host)) == [f"/docs/d{n}.html" for n in range(6)]
    lowered = f"low-{host}"
    chain(server, lowered, 4)
    run = crawl(
        "site", args={"url": server.url(lowered, "/docs/d0.html"), "depth": "1"}, settings={**FAST, "DEPTH_LIMIT": "5"}
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert paths(server.log(lowered)) == ["/docs/d0.html", "/docs/d1.html"]


@pytest.mark.parametrize(
    ("settings", "args", "message"),
    [
        ({"DEPTH_LIMIT": "6"}, {}, "DEPTH_LIMIT 6 is beyond synapsebot (self-hosted)'s cap 5"),
        ({"DEPTH_LIMIT": "5"}, {"depth": "6"}, "-a depth=6 cannot raise the depth limit 5"),
    ],
)
def test_depth_beyond_the_cap_is_refused_before_any_request(
    server: TestServer, host: str, crawl, settings: dict[str, str], args: dict[str, str], message: str
) -> None:
    """SYN-LIMITS: DEPTH_LIMIT=6 (the self-hosted cap is 5) or an -a depth above the operator's
    limit stops a site crawl at start-up: non-zero exit, one line naming the setting and the
    cap, and the server sees no request at all."""
    chain(server, host, 2)
    run = crawl("site", args={"url": server.url(host, "/docs/d0.html"), **args}, settings=settings)
    assert run.returncode != 0
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], run.stderr[-2000:]
    assert server.log(host) == []


def test_breadth_first_keeps_the_nearest_pages_under_a_page_limit(server: TestServer, host: str, crawl) -> None:
    """SYN-LIMITS (priorities): with -a max_pages=5 the start page and its four direct links are
    fetched, and none of the pages two links deep, although the first link leads to them at once."""
    routes = {"/": html("Start", links=[f"/a{i}.html" for i in range(4)])}
    for i in range(4):
        routes[f"/a{i}.html"] = html(f"A{i}", links=[f"/b{i}{j}.html" for j in range(3)])
        routes |= {f"/b{i}{j}.html": html(f"B{i}{j}") for j in range(3)}
    server.add(host, {"/robots.txt": Reply("", status=404), **routes})
    run = crawl("site", args={"url": server.url(host, "/"), "max_pages": "5"}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = paths(server.log(host))
    assert seen[0] == "/" and sorted(seen[1:]) == ["/a0.html", "/a1.html", "/a2.html", "/a3.html"]
    assert len(run.kb()) == 5
    assert re.search(r"skipped \d+ \(limit 12\)", run.stderr), run.stderr[-2000:]


def test_a_crawl_stops_at_five_hundred_pages(server: TestServer, host: str, crawl) -> None:
    """SYN-LIMITS: a hub linking to 560 pages yields exactly 500 page requests (robots.txt not
    counted), all stored; the other 61 are skipped for the limit. (The one slow test: ~60 s at
    ten requests a second.)"""
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nAllow: /\n", headers=TEXT),
        "/": html("Hub", links=[f"/p{i}.html" for i in range(560)]),
        "*": html("Leaf"),
    })  # fmt: skip
    run = crawl("site", args={"url": server.url(host, "/")}, settings=FAST, timeout=280)
    assert run.returncode == 0, run.stderr[-3000:]
    hits = server.log(host)
    assert [h.path for h in hits].count("/robots.txt") == 1
    assert len(paths(hits)) == 500 and paths(hits)[:3] == ["/", "/p0.html", "/p1.html"]
    assert len(run.kb()) == 500
    assert "crawl summary: fetched 500, stored 500, skipped 61 (limit 61)" in run.stderr


NOFOLLOW_SITE = {
    "/robots.txt": Reply("", status=404),
    "/": html(
        "Start",
        links=[
            "/meta.html",
            "/header.html",
            "/other-bot.html",
            "/rel-nofollow.html",
            "/rel-ugc.html",
            "/rel-sponsored.html",
            "/rel-plain.html",
        ],
        rels={
            "/rel-nofollow.html": "nofollow",
            "/rel-ugc.html": "ugc noopener",
            "/rel-sponsored.html": "Sponsored",
            "/rel-plain.html": "noopener",
        },
    ),
    "/meta.html": html("Meta nofollow", links=["/from-meta.html"], head='<meta name="robots" content="nofollow">'),
    "/header.html": html("Header nofollow", links=["/from-header.html"], headers={"X-Robots-Tag": "nofollow"}),
    "/other-bot.html": html("Other bot", links=["/from-other-bot.html"], headers={"X-Robots-Tag": "googlebot: none"}),
    "*": html("Leaf"),
}


@pytest.mark.parametrize(
    ("profile", "follows_rel"),
    [("synapsebot", True), ("snagabot", False)],
)
def test_nofollow_from_meta_header_and_rel_per_profile(
    server: TestServer, host: str, crawl, profile: str, follows_rel: bool
) -> None:
    """ALL-NOINDEX, SNA-NOFOLLOW, YOT-DIRECTIVES: nofollow in a robots <meta> or an X-Robots-Tag
    header stops a page's links under every profile (a header for googlebot does not); links
    marked rel nofollow, ugc or sponsored are followed by SynapseBot (its page promises no
    such rule) and not by SnagaBot, which never requests them."""
    server.add(host, NOFOLLOW_SITE)
    settings = FAST if profile == "synapsebot" else {"BOT_PROFILE": profile}
    run = crawl("site", args={"url": server.url(host, "/")}, settings=settings)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = set(paths(server.log(host)))
    assert {"/", "/meta.html", "/header.html", "/other-bot.html", "/from-other-bot.html", "/rel-plain.html"} <= seen
    assert not seen & {"/from-meta.html", "/from-header.html"}
    rel = {"/rel-nofollow.html", "/rel-ugc.html", "/rel-sponsored.html"}
    assert (rel <= seen) if follows_rel else not (rel & seen)


def test_synapsebot_stores_linked_pdfs_and_text_with_their_text(server: TestServer, host: str, crawl) -> None:
    """SYN-DOCS: a PDF and a plain-text document linked from an in-scope page are fetched and
    stored with their extracted text; an image is abandoned at its headers (type skip)."""
    server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/docs/": html("Docs", links=["report.pdf", "notes.txt", "logo.png"]),
        "/docs/report.pdf": Reply(make_pdf([["Quarterly figures for the knowledge base"]]),
                                  headers={"Content-Type": "application/pdf"}),
        "/docs/notes.txt": Reply("Plain notes about crawling.\n", headers={"Content-Type": "text/plain; charset=utf-8"}),
        "/docs/logo.png": Reply(b"\x89PNG\r\n\x1a\n" + b"\x00" * 200_000, headers={"Content-Type": "image/png"},
                                chunk_delay=0.02),
    })  # fmt: skip
    run = crawl("site", args={"url": server.url(host, "/docs/")}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    stored = {str(p["url"]).rsplit("/", 1)[1]: p for p in run.kb()}
    assert set(stored) == {"", "report.pdf", "notes.txt"}
    assert "Quarterly figures for the knowledge base" in str(stored["report.pdf"]["text"])
    assert str(stored["report.pdf"]["content_type"]) == "application/pdf"
    assert "Plain notes about crawling." in str(stored["notes.txt"]["text"])
    logo = next(h for h in server.log(host) if h.path == "/docs/logo.png")
    assert logo.bytes_sent < 100_000
    assert "type 1" in run.stderr


def test_snagabot_abandons_a_pdf_at_its_headers_and_never_stores_it(server: TestServer, host: str, crawl) -> None:
    """SNA-HTML: SnagaBot requests a linked PDF but abandons the download as soon as the headers
    show application/pdf: the server gets to send a small part of its 1.6 MB, and the PDF is
    neither stored nor exported."""
    size = 1_600_000
    body = make_pdf([["Never stored"]]) + b"%" * size
    server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/": html("Home", links=["/paper.pdf"]),
        "/paper.pdf": Reply(body, headers={"Content-Type": "application/pdf"}, chunk_delay=0.01),
    })  # fmt: skip
    run = crawl("site", args={"url": server.url(host, "/")}, settings={"BOT_PROFILE": "snagabot"})
    assert run.returncode == 0, run.stderr[-3000:]
    pdf = next(h for h in server.log(host) if h.path == "/paper.pdf")
    assert pdf.bytes_sent < len(body) // 10, pdf.bytes_sent
    assert [str(p["url"]) for p in run.kb()] == [server.url(host, "/")]
    assert [i["url"] for i in run.items()] == [server.url(host, "/")]
    assert "type 1" in run.stderr


def test_yottabot_reads_https_html_and_plain_text_only(
    tls_server: TestServer, server: TestServer, host: str, crawl
) -> None:
    """YOT-HTTPS: under YottaBot an HTTPS site crawl stores HTML and text/plain pages, abandons
    a PDF at its headers (not stored), and never requests a plain-HTTP link."""
    tls_server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/": html("Yotta home", links=["/readme.txt", "/paper.pdf", server.url(host, "/plain.html")]),
        "/readme.txt": Reply("Read me, in plain text.\n", headers=TEXT),
        "/paper.pdf": Reply(make_pdf([["No"]]) + b"%" * 600_000, headers={"Content-Type": "application/pdf"},
                            chunk_delay=0.01),
    })  # fmt: skip
    server.add(host, {"/plain.html": html("Plain HTTP")})
    run = crawl("site", args={"url": tls_server.url(host, "/")}, settings={"BOT_PROFILE": "yottabot"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(str(p["url"]) for p in run.kb()) == [tls_server.url(host, "/"), tls_server.url(host, "/readme.txt")]
    pdf = next(h for h in tls_server.log(host) if h.path == "/paper.pdf")
    assert pdf.bytes_sent < 300_000
    assert server.log(host) == []


def test_site_crawl_redirects_stay_in_scope(server: TestServer, host: str, crawl) -> None:
    """SYN-SCOPE (redirects): a redirect inside the start path is followed and the page stored
    under its final URL; one to another host or out of the start path is not followed (the
    target is never requested), logged and counted as a scope skip. robots.txt itself follows
    its redirect (ALL-RFC9309: up to 5), and the rules it leads to apply."""
    other = f"other-{host}"
    server.add(host, {
        "/robots.txt": Reply("", status=301, headers={"Location": "/rules.txt"}),
        "/rules.txt": Reply("User-agent: *\nDisallow: /docs/private\n", headers=TEXT),
        "/docs/": html("Docs", links=["moved", "away", "up", "private.html"]),
        "/docs/moved": Reply("", status=301, headers={"Location": "/docs/new.html"}),
        "/docs/new.html": html("New home"),
        "/docs/away": Reply("", status=302, headers={"Location": server.url(other, "/docs/x.html")}),
        "/docs/up": Reply("", status=301, headers={"Location": "/outside.html"}),
        "/outside.html": html("Outside"),
        "/docs/private.html": html("Private"),
    })  # fmt: skip
    server.add(other, {"/docs/x.html": html("Other host")})
    run = crawl("site", args={"url": server.url(host, "/docs/")}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = [h.path for h in server.log(host)]
    assert seen[:2] == ["/robots.txt", "/rules.txt"]
    assert sorted(seen[2:]) == ["/docs/", "/docs/away", "/docs/moved", "/docs/new.html", "/docs/up"]
    assert server.log(other) == []
    assert sorted(str(p["url"]) for p in run.kb()) == [server.url(host, "/docs/"), server.url(host, "/docs/new.html")]
    refusals = [line for line in run.stderr.splitlines() if "not followed" in line]
    assert len(refusals) == 2 and all("out of the crawl's scope" in line for line in refusals), refusals
    assert f"{host}: fetched 2, stored 2, skipped robots 1, scope 2" in run.stderr


def test_yottabot_follows_redirects_within_the_site_at_most_five_in_a_row(
    tls_server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """YOT-REDIRECT: "follows redirects only within the same site, at most five in a row".
    Reading chosen: a site is a registrable domain with all its hostnames (the web's
    "same site"; the profile already says "host" where it means a host), so a redirect from
    a.H to www.H is followed, one to another registrable domain is not (never requested).
    Five redirects in a row reach their page; a sixth is not followed."""
    site = host
    other = f"elsewhere-{host}"
    hops = {f"/c{n}": Reply("", status=302, headers={"Location": f"/c{n + 1}"}) for n in range(5)}
    hops |= {f"/d{n}": Reply("", status=302, headers={"Location": f"/d{n + 1}"}) for n in range(6)}
    robots = {"/robots.txt": Reply("", status=404)}
    tls_server.add(
        f"a.{site}",
        {**robots, "/hop": Reply("", status=301, headers={"Location": tls_server.url(f"www.{site}", "/landed.html")})},
    )
    tls_server.add(f"www.{site}", {**robots, "/landed.html": html("Landed")})
    tls_server.add(
        f"off.{site}", {**robots, "/off": Reply("", status=301, headers={"Location": tls_server.url(other, "/x.html")})}
    )
    tls_server.add(other, {**robots, "/x.html": html("Other site")})
    tls_server.add(f"c.{site}", {**robots, **hops, "/c5": html("Five hops")})
    tls_server.add(f"d.{site}", {**robots, **hops, "/d6": html("Six hops")})
    urls = [
        tls_server.url(f"a.{site}", "/hop"),
        tls_server.url(f"off.{site}", "/off"),
        tls_server.url(f"c.{site}", "/c0"),
        tls_server.url(f"d.{site}", "/d0"),
    ]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings={"BOT_PROFILE": "yottabot"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert paths(tls_server.log(f"www.{site}")) == ["/landed.html"]
    assert tls_server.log(other) == []
    assert paths(tls_server.log(f"c.{site}")) == [f"/c{n}" for n in range(6)]
    assert paths(tls_server.log(f"d.{site}")) == [f"/d{n}" for n in range(6)]
    assert sorted(str(p["title"]) for p in run.kb()) == ["Five hops", "Landed"]
    assert "not followed: off the site" in run.stderr
    assert "after 5 redirects in a row" in run.stderr


def test_crawl_summary_counts_fetched_stored_and_skipped_by_reason_per_site(
    server: TestServer, host: str, crawl
) -> None:
    """Crawl summary (SYN-SCOPE, ALL-NOINDEX, SYN-LIMITS, SYN-DOCS): at the end of the
    crawl the log gives pages fetched and stored and the pages skipped by reason (robots,
    noindex, scope, type, limit), in total and per site."""
    server.add(host, {
        "/robots.txt": Reply("User-agent: *\nDisallow: /secret\n", headers=TEXT),
        "/": html("Home", links=["/secret.html", "/hidden.html", "/img.png", "http://away-elsewhere.test/",
                           "/p1.html", "/p2.html", "/p3.html"]),
        "/hidden.html": html("Hidden", head='<meta name="robots" content="noindex">'),
        "/img.png": Reply(b"\x89PNG" + b"\x00" * 100, headers={"Content-Type": "image/png"}),
        "*": html("Page"),
    })  # fmt: skip
    run = crawl("site", args={"url": server.url(host, "/"), "max_pages": "4"}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    assert paths(server.log(host)) == ["/", "/hidden.html", "/img.png", "/p1.html"]
    assert (
        "crawl summary: fetched 3, stored 2, skipped 6 (limit 2, noindex 1, robots 1, scope 1, type 1)" in run.stderr
    ), run.stderr[-2000:]
    assert f"{host}: fetched 3, stored 2, skipped limit 2, noindex 1, robots 1, type 1" in run.stderr
    assert "away-elsewhere.test: fetched 0, stored 0, skipped scope 1" in run.stderr


# A page whose links are inline anchors, not a list.
inline = partial(page, say="{title} is a page with enough words to be read as text.")


YOTTA = {"BOT_PROFILE": "yottabot"}


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
        "/private/secret.html": inline("Secret"),
        "/docs/page.html": inline("Public docs"),
    })  # fmt: skip
    server.add(f"a.{site}", {"/robots.txt": Reply("", status=404), "/plain.html": inline("Plain HTTP")})
    urls = [tls_server.url(f"a.{site}", p) for p in ("/old-private", "/old-public", "/downgrade")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "u.txt", urls)}, settings=YOTTA)
    assert run.returncode == 0, run.stderr[-3000:]
    www_hits = tls_server.log(www)
    assert www_hits and www_hits[0].path == "/robots.txt"
    assert "robots.txt;" in str(www_hits[0].header("User-Agent"))
    assert paths(www_hits) == ["/docs/page.html"]
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
        "/": inline("Start", links=("/notes.txt", "/none.html", "/caps.html", "/google.html", "/sponsored.html"),
                  rels={"/sponsored.html": "noopener NoFollow"}),
        "/notes.txt": Reply("Notes kept out by a header.\n", headers={**TEXT, "X-Robots-Tag": "YottaSearch: noindex"}),
        "/none.html": inline("None", links=("/from-none.html",),
                           headers={"X-Robots-Tag": "googlebot: nofollow, YottaBot-SearchBot: none"}),
        "/caps.html": inline("Caps", links=("/from-caps.html",), head='<META NAME="YOTTABOT-SEARCHBOT" CONTENT="NOINDEX">'),
        "/google.html": inline("Google only", headers={"X-Robots-Tag": "googlebot: noindex"}),
        "*": inline("Leaf"),
    })  # fmt: skip
    run = crawl("site", args={"url": tls_server.url(host, "/")}, settings=YOTTA)
    assert run.returncode == 0, run.stderr[-3000:]
    seen = set(paths(tls_server.log(host)))
    assert seen == {"/", "/notes.txt", "/none.html", "/caps.html", "/google.html", "/from-caps.html"}, seen
    assert sorted(str(p["title"]) for p in run.kb()) == ["Google only", "Leaf", "Start"]


def test_a_site_crawl_started_without_a_trailing_slash_stays_under_that_path(
    server: TestServer, host: str, crawl
) -> None:
    """SYN-SCOPE: "a site crawl stays on the starting host, under the starting address's path". A KB user
    adds https://h/docs, as people type it; the server redirects it to /docs/ as servers do for a
    directory. Pages under /docs/ are crawled; /blog/ and /shop/ are not under /docs and are never
    requested."""
    server.add(host, {
        "/robots.txt": Reply("", status=404),
        "/docs": Reply("", status=301, headers={"Location": "/docs/"}),
        "/docs/": inline("Docs", links=("guide.html", "/blog/news.html", "/shop/cart.html")),
        "/docs/guide.html": inline("Guide"),
        "/blog/news.html": inline("News"),
        "/shop/cart.html": inline("Cart"),
    })  # fmt: skip
    run = crawl("site", args={"url": server.url(host, "/docs")}, settings=FAST)
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(paths(server.log(host))) == ["/docs", "/docs/", "/docs/guide.html"]
    assert sorted(str(p["title"]) for p in run.kb()) == ["Docs", "Guide"]
