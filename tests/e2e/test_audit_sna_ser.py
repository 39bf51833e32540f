"""An outside audit of SnagaBot's and SereneReader's promises on edge cases real sites produce:
a redirect or a file that states no type or a wrong one, directives for several bots in one header,
a feed that moved, and an RSS 1.0 feed. Measured from the server's log and the KB."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

from tests.helpers import make_pdf, store_of, synapsecrawl, write_urls
from tests.site.pages import NO_ROBOTS, page
from tests.site.server import Hit, Reply, TestServer

SNAGA = {"BOT_PROFILE": "snagabot"}
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


html = partial(page, h1=True, say="{title} is a page of the audit site.")


def image() -> Reply:
    return Reply(PNG, headers={"Content-Type": "image/png"})


def paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


def serene(signing_key: Path) -> dict[str, str]:
    return {"BOT_PROFILE": "serenereader", "SIGNING_KEY": str(signing_key)}


def conditional(reply: Reply, etag: str) -> Callable[[object], Reply]:
    """A route answering 304 to a request carrying ``etag`` in If-None-Match, else ``reply`` with it."""
    headers = {**reply.headers, "ETag": etag}

    def route(handler: object) -> Reply:
        if handler.headers.get("If-None-Match") == etag:  # type: ignore[attr-defined]
            return Reply(b"", status=304, headers={"ETag": etag})
        return replace(reply, headers=headers)

    return route


def test_snagabot_skips_a_pdf_and_an_image_served_without_a_content_type(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-HTML: "HTML pages it allows. Other files (PDFs, images, video) are skipped". A server that
    sends a PDF and a PNG with no Content-Type at all (a file without an extension on a misconfigured
    server) gives no type to judge at the headers; once the bytes show a PDF or an image, neither is
    stored nor exported. The HTML page next to them is."""
    pdf = make_pdf([["Quarterly report: revenue grew in every region."]], title="Quarterly report")
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/page.html": html("Audit page"),
        "/download/report": Reply(pdf, headers={}),
        "/download/photo": Reply(PNG + b"\x00" * 4096, headers={}),
    })  # fmt: skip
    urls = [server.url(host, p) for p in ("/page.html", "/download/report", "/download/photo")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings=SNAGA)
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(paths(server.log(host))) == ["/download/photo", "/download/report", "/page.html", "/robots.txt"]
    assert [row["url"] for row in run.kb()] == [urls[0]]
    assert [item["url"] for item in run.items()] == [urls[0]]


def test_snagabot_follows_a_redirect_whose_own_body_is_plain_text(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-HTML: the type is judged on the page, not on the redirect in front of it. Many hosts answer a
    301 with a short "Moved Permanently" body typed text/plain (or JSON); the HTML page it leads to is
    fetched and stored like any other."""
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/old": Reply("Moved Permanently. Redirecting to /new.html", status=301,
                      headers={"Content-Type": "text/plain; charset=utf-8", "Location": "/new.html"}),
        "/api-moved": Reply('{"moved": "/other.html"}', status=308,
                            headers={"Content-Type": "application/json", "Location": "/other.html"}),
        "/new.html": html("The new page"),
        "/other.html": html("The other page"),
    })  # fmt: skip
    urls = [server.url(host, "/old"), server.url(host, "/api-moved")]
    run = crawl("page", args={"urls_file": write_urls(tmp_path / "urls.txt", urls)}, settings=SNAGA)
    assert run.returncode == 0, run.stderr[-3000:]
    assert {"/new.html", "/other.html"} <= set(paths(server.log(host)))
    assert sorted(str(row["title"]) for row in run.kb()) == ["The new page", "The other page"]


def test_snagabot_reads_its_own_scope_in_a_header_naming_several_bots(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SNA-TOKEN, SNA-SNIPPET, ALL-NOINDEX: X-Robots-Tag lines naming several crawlers, as a CDN
    writes them: one line "googlebot: noindex, nofollow, snagabot: max-snippet:40" and a second line
    "otherbot: noindex". Only the snagabot part applies: the page is kept and its links followed, and
    a search shows at most 40 characters of it. A second page whose header gives snagabot
    "max-snippet:0" among other bots' rules shows no text at all."""
    body = ("Tide pools hold anemones, crabs and small fish between the rocks. " * 6).strip()
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/pools.html": html("Tide pools", body + ' <a href="/crabs.html">crabs</a>', headers={
            "X-Robots-Tag": "googlebot: noindex, nofollow, snagabot: max-snippet:40",
            "x-robots-tag": "otherbot: noindex",
        }),
        "/crabs.html": html("Tide crabs", "Crabs of the tide pools hide under rocks at low tide.", headers={
            "X-Robots-Tag": "bingbot: max-snippet:-1, snagabot: max-snippet:0, googlebot: index",
        }),
    })  # fmt: skip
    run = crawl("site", args={"url": server.url(host, "/pools.html")}, settings=SNAGA)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "/crabs.html" in paths(server.log(host))  # googlebot's nofollow is not ours
    assert {row["url"] for row in run.kb()} == {server.url(host, "/pools.html"), server.url(host, "/crabs.html")}
    out = synapsecrawl("kb", "search", "tide pools crabs", "--uri", run.kb_uri, "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    results = {str(r["url"]): r for r in (json.loads(line) for line in out.stdout.splitlines())}
    pools, crabs = results[server.url(host, "/pools.html")], results[server.url(host, "/crabs.html")]
    assert 0 < len(str(pools["snippet"])) <= 40, pools["snippet"]
    assert crabs["snippet"] == "" and not crabs.get("passages"), crabs


def test_serenereader_refresh_of_a_moved_feed_is_conditional(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SER-COND: "When the server returns an ETag ... the next request carries If-None-Match - an
    unchanged feed then costs only a 304". A subscribed feed address that redirects (WordPress's
    /feed to /feed/, http to https, a moved feed) is the usual case: the feed answers with an ETag, so
    the next refresh's request to the feed carries it and gets a 304 with no body."""
    rss = ('<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Moved garden</title>'
           "<link>/</link><image><url>/logo.png</url><title>Moved garden</title><link>/</link></image>"
           "<item><title>Beans</title><link>/posts/beans</link>"
           '<enclosure url="/img/beans.png" type="image/png" length="64"/></item></channel></rss>')
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/feed": Reply("", status=301, headers={"Content-Type": "text/html", "Location": "/feed/"}),
        "/feed/": conditional(Reply(rss, headers={"Content-Type": "application/rss+xml"}), etag='"beans-1"'),
        "/logo.png": image(),
    })  # fmt: skip
    feed_url = server.url(host, "/feed")
    first = crawl("feed", args={"url": feed_url}, settings=serene(signing_key))
    assert first.returncode == 0, first.stderr[-3000:]
    assert server.url(host, "/posts/beans") in {row["url"] for row in first.kb()}
    seen = len(server.log(host))

    second = crawl("feed", args={"url": feed_url}, settings=serene(signing_key))
    assert second.returncode == 0, second.stderr[-3000:]
    refresh = [h for h in server.log(host)[seen:] if h.path == "/feed/"]
    assert len(refresh) == 1
    assert refresh[0].header("If-None-Match") == '"beans-1"'
    assert refresh[0].bytes_sent == 0


def test_serenereader_uses_the_image_an_rss_1_0_feed_declares_as_its_icon(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SER-FEEDS, SER-ICON: an RSS 1.0 (RDF) feed, as Slashdot-style sites still publish it, has its
    entries stored, and the image it declares (channel <image rdf:resource>, <image><url>) is the
    site icon fetched and recorded: the fallback paths (/favicon.ico ...) are not asked."""
    base = f"http://{host}:{server.port}"
    rdf = f"""<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
         xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel rdf:about="{base}/">
    <title>Old News</title><link>{base}/</link><description>News for gardeners</description>
    <image rdf:resource="{base}/topics/logo.png"/>
    <items><rdf:Seq><rdf:li rdf:resource="{base}/story/1"/></rdf:Seq></items>
  </channel>
  <image rdf:about="{base}/topics/logo.png">
    <title>Old News</title><url>{base}/topics/logo.png</url><link>{base}/</link>
  </image>
  <item rdf:about="{base}/story/1">
    <title>Frost comes early</title><link>{base}/story/1</link>
    <description>Cover the beds tonight.</description><dc:date>2024-10-02T06:30:00Z</dc:date>
  </item>
</rdf:RDF>"""
    server.add(host, {
        "/robots.txt": NO_ROBOTS,
        "/index.rdf": Reply(rdf, headers={"Content-Type": "application/rdf+xml"}),
        "/story/1": html("Frost comes early", head='<meta property="og:image" content="/img/frost.jpg">'),
        "/topics/logo.png": image(),
        "/favicon.ico": image(),
    })  # fmt: skip
    run = crawl("feed", args={"url": server.url(host, "/index.rdf")}, settings=serene(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]
    stored = {str(row["url"]): row for row in run.kb()}
    assert stored[f"{base}/story/1"]["title"] == "Frost comes early"
    assert stored[f"{base}/story/1"]["image"] == f"{base}/img/frost.jpg"
    asked = paths(server.log(host))
    assert "/topics/logo.png" in asked and "/favicon.ico" not in asked
    with store_of(run) as store:
        icon = store.get_site_icon(base)
    assert icon is not None and icon.url == f"{base}/topics/logo.png"
