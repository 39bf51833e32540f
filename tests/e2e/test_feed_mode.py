"""Feed mode as a site owner and a reader see it: what is fetched, in what order, what the KB keeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from synapsecrawl.kb.records import SiteState
from synapsecrawl.urls import origin_of
from tests.helpers import REDIS_URL, CrawlRun, gaps, store_of, write_urls
from tests.site.pages import NO_ROBOTS, feed, page
from tests.site.server import Hit, Reply, TestServer

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def article(title: str, og_image: str = "") -> Reply:
    meta = f'<meta property="og:image" content="{og_image}">' if og_image else ""
    return Reply(
        f"<html><head><title>{title}</title>{meta}</head><body><p>{title}</p>"
        f'<a href="/elsewhere">more</a></body></html>'
    )


def image() -> Reply:
    return Reply(PNG, headers={"Content-Type": "image/png"})


def text(body: str, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(body, status=status, headers={"Content-Type": "text/plain", **(headers or {})})


def conditional(reply: Reply, etag: str = "", last_modified: str = "") -> Callable[[object], Reply]:
    """A route answering 304 to a request whose validator matches, else ``reply`` with the validators."""
    headers = {
        **reply.headers,
        **({"ETag": etag} if etag else {}),
        **({"Last-Modified": last_modified} if last_modified else {}),
    }

    def route(handler: object) -> Reply:
        sent = handler.headers  # type: ignore[attr-defined]
        if (etag and sent.get("If-None-Match") == etag) or (
            last_modified and sent.get("If-Modified-Since") == last_modified
        ):
            return Reply(b"", status=304, headers={k: v for k, v in headers.items() if k != "Content-Type"})
        return replace(reply, headers=headers)

    return route


def paths(hits: list[Hit]) -> list[str]:
    return [h.path for h in hits]


def serene(signing_key: Path) -> dict[str, str]:
    return {"BOT_PROFILE": "serenereader", "SIGNING_KEY": str(signing_key)}


def test_rss_entries_og_image_once_declared_icon_and_a_304_on_the_next_refresh(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SER-FEEDS, SER-OGIMAGE, SER-NOCRAWL, SER-ICON, SER-COND, SER-SIGN: the feed's entries are stored
    (title, text without markup, published, image); the entry without an image has its article page
    fetched once for its og:image, and the article's link is never followed; the icon the feed declares
    is fetched and recorded, the fallbacks are not. The second refresh sends If-None-Match, gets a 304,
    fetches nothing else and stores nothing new. Every request is signed."""
    server.add(host, {
        "/robots.txt": text("User-agent: *\nAllow: /\n"),
        "/feed.xml": conditional(feed("rss2.xml"), etag='"v1"'),
        "/posts/compost": article("Compost", og_image="/img/compost.jpg"),
        "/posts/tomatoes": article("Tomatoes"),
        "/logo.png": image(),
    })  # fmt: skip
    feed_url = server.url(host, "/feed.xml")
    first = crawl("feed", args={"url": feed_url, "kb": "garden"}, settings=serene(signing_key))
    assert first.returncode == 0, first.stderr[-3000:]
    assert sorted(paths(server.log(host))) == ["/feed.xml", "/logo.png", "/posts/compost", "/robots.txt"]
    assert all(h.header("Signature") and h.header("Signature-Input") for h in server.log(host))
    stored = {row["url"]: row for row in first.kb("garden")}
    tomatoes, compost = server.url(host, "/posts/tomatoes"), server.url(host, "/posts/compost")
    assert set(stored) == {feed_url, tomatoes, compost}
    assert stored[feed_url]["content_type"] == "application/rss+xml" and stored[feed_url]["etag"] == '"v1"'
    assert stored[feed_url]["title"] == "Quiet Garden"
    assert stored[tomatoes]["title"] == "Tomatoes in July"
    assert stored[tomatoes]["text"] == "The tomatoes ripen early."
    assert stored[tomatoes]["content_type"] == "application/rss+xml;type=entry"
    assert stored[tomatoes]["published"] == "2024-07-02T06:30:00+00:00"
    assert stored[tomatoes]["image"] == server.url(host, "/img/tomatoes.jpg")
    assert stored[tomatoes]["feed"] == feed_url
    assert stored[compost]["image"] == server.url(host, "/img/compost.jpg")
    assert stored[compost]["text"] == "Turn the heap every week."
    assert sorted(i["url"] for i in first.items()) == sorted(stored)
    with store_of(first) as store:
        icon = store.get_site_icon(f"http://{host}:{server.port}")
    assert icon is not None and (icon.url, icon.content_type) == (server.url(host, "/logo.png"), "image/png")

    second = crawl("feed", args={"url": feed_url, "kb": "garden"}, settings=serene(signing_key))
    assert second.returncode == 0, second.stderr[-3000:]
    again = server.log(host)[4:]
    assert paths(again) == ["/feed.xml"]  # robots.txt kept a day, icon known, articles not asked again
    assert again[0].header("If-None-Match") == '"v1"' and again[0].bytes_sent == 0
    assert f"feed {feed_url} unchanged since its last read (304)" in second.stderr
    assert {row["url"]: row["fetched_at"] for row in second.kb("garden")} == {
        url: row["fetched_at"] for url, row in stored.items()
    }
    assert second.items() == []


def test_atom_new_entries_only_icon_fallback_order_and_if_modified_since(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SER-FEEDS, SER-ICON, SER-OGIMAGE, SER-COND: an Atom feed's entries are stored, the image of one
    taken from its content; the other's article has no og:image and is stored without one. With no icon
    declared, /favicon.ico (404), /apple-touch-icon.png (not an image) and
    /apple-touch-icon-precomposed.png are tried in that order, the last recorded. An entry already in
    the KB is not stored again; the next refresh sends If-Modified-Since."""
    modified = "Wed, 03 Jul 2024 10:00:00 GMT"
    server.add(host, {
        "/robots.txt": text("", status=404),
        "/atom.xml": conditional(feed("atom.xml", "application/atom+xml"), last_modified=modified),
        "/wpisy/kompost": article("Kompost"),
        "/favicon.ico": text("no icon", status=404),
        "/apple-touch-icon.png": Reply("<html><body>soft 404</body></html>"),
        "/apple-touch-icon-precomposed.png": image(),
    })  # fmt: skip
    feed_url = server.url(host, "/atom.xml")
    pomidory, kompost = server.url(host, "/wpisy/pomidory"), server.url(host, "/wpisy/kompost")
    first = crawl("feed", args={"url": feed_url}, settings=serene(signing_key))
    assert first.returncode == 0, first.stderr[-3000:]
    hits = paths(server.log(host))
    icons = [p for p in hits if p not in ("/robots.txt", "/atom.xml", "/wpisy/kompost")]
    assert icons == ["/favicon.ico", "/apple-touch-icon.png", "/apple-touch-icon-precomposed.png"]
    assert "/wpisy/pomidory" not in hits
    stored = {row["url"]: row for row in first.kb()}
    assert set(stored) == {feed_url, pomidory, kompost}
    assert stored[pomidory]["title"] == "Pomidory w lipcu"
    assert stored[pomidory]["image"] == server.url(host, "/img/pomidory.png")  # against the feed's URL
    assert stored[pomidory]["published"] == "2024-07-02T06:30:00+00:00"
    assert stored[pomidory]["content_type"] == "application/atom+xml;type=entry"
    assert stored[kompost]["image"] == "" and stored[kompost]["text"] == "Przerzucaj co tydzień."
    with store_of(first) as store:
        icon = store.get_site_icon(f"http://{host}:{server.port}")
        assert icon is not None and icon.url == server.url(host, "/apple-touch-icon-precomposed.png")
        store.delete_page("default", feed_url)  # the feed's copy gone: read in full, its entries known
    second = crawl("feed", args={"url": feed_url}, settings=serene(signing_key))
    assert second.returncode == 0, second.stderr[-3000:]
    assert paths(server.log(host)[len(hits) :]) == ["/atom.xml"]
    assert f"feed {feed_url}: 2 entries, 0 new" in second.stderr
    third = crawl("feed", args={"url": feed_url}, settings=serene(signing_key))
    assert third.returncode == 0, third.stderr[-3000:]
    last = server.log(host)[-1]
    assert last.path == "/atom.xml" and last.header("If-Modified-Since") == modified and last.bytes_sent == 0


def test_star_group_does_not_stop_a_feed_but_stops_its_article_pages(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SER-ROBOTS-FEEDS, SER-ROBOTS-PAGES: under `User-agent: * / Disallow: /` the feed is still fetched
    and its entries stored, but the article page under the same rule is not requested (the entry is
    stored without a preview); the icon looked for when the feed is first added skips robots.txt."""
    server.add(host, {
        "/robots.txt": text("User-agent: *\nDisallow: /\n"),
        "/feed.xml": feed("rss2.xml"),
        "/posts/compost": article("Compost", og_image="/img/compost.jpg"),
        "/logo.png": image(),
    })  # fmt: skip
    feed_url = server.url(host, "/feed.xml")
    run = crawl("feed", args={"url": feed_url}, settings=serene(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]
    assert sorted(paths(server.log(host))) == ["/feed.xml", "/logo.png", "/robots.txt"]
    stored = {row["url"]: row for row in run.kb()}
    assert stored[server.url(host, "/posts/compost")]["image"] == ""
    assert len(stored) == 3


def test_serenereader_group_stops_a_feed_even_when_first_added(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SER-ROBOTS-FEEDS: a `User-agent: SereneReader` group disallowing the feed's path is obeyed on the
    first add: neither the feed nor an icon is requested, nothing is stored, one line says why."""
    server.add(host, {
        "/robots.txt": text("User-agent: *\nAllow: /\n\nUser-agent: SereneReader\nDisallow: /feed\n"),
        "/feed.xml": feed("rss2.xml"),
        "/logo.png": image(),
    })  # fmt: skip
    feed_url = server.url(host, "/feed.xml")
    run = crawl("feed", args={"url": feed_url}, settings=serene(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]
    assert paths(server.log(host)) == ["/robots.txt"]
    assert run.kb() == []
    assert [line for line in run.stderr.splitlines() if f"feed {feed_url} not read" in line] != []


def test_robots_server_error_allows_feeds_and_article_pages(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SER-ROBOTS-5XX: robots.txt answering 500 counts as permission: the feed and the article page
    are fetched."""
    server.add(host, {
        "/robots.txt": text("oops", status=500),
        "/feed.xml": feed("rss2.xml"),
        "/posts/compost": article("Compost", og_image="/img/compost.jpg"),
        "/logo.png": image(),
    })  # fmt: skip
    run = crawl("feed", args={"url": server.url(host, "/feed.xml")}, settings=serene(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]
    assert {"/feed.xml", "/posts/compost"} <= set(paths(server.log(host)))
    assert {row["url"]: row["image"] for row in run.kb()}[server.url(host, "/posts/compost")] == server.url(
        host, "/img/compost.jpg"
    )


def test_crawl_delay_spaces_article_pages(server: TestServer, host: str, crawl, signing_key: Path) -> None:
    """SER-ROBOTS-PAGES, SER-ROBOTS-FEEDS: the SereneReader group's Crawl-delay spaces every request to
    the site, article pages included."""
    items = "".join(f"<item><title>Post {n}</title><link>/p/{n}</link></item>" for n in range(3))
    server.add(host, {
        "/robots.txt": text("User-agent: SereneReader\nCrawl-delay: 2\n"),
        "/feed.xml": Reply(f'<rss version="2.0"><channel><title>T</title><image><url>/i.png</url></image>{items}'
                           "</channel></rss>", headers={"Content-Type": "application/rss+xml"}),
        **{f"/p/{n}": article(f"Post {n}", og_image=f"/og/{n}.png") for n in range(3)},
        "/i.png": image(),
    })  # fmt: skip
    run = crawl("feed", args={"url": server.url(host, "/feed.xml")}, settings=serene(signing_key))
    assert run.returncode == 0, run.stderr[-3000:]
    hits = [h for h in server.log(host) if h.path != "/robots.txt"]
    assert sorted(paths(hits)) == ["/feed.xml", "/i.png", "/p/0", "/p/1", "/p/2"]
    assert min(gaps(hits)) >= 2.0 - 0.05
    assert sorted(str(row["image"]) for row in run.kb() if "/p/" in str(row["url"])) == [
        server.url(host, f"/og/{n}.png") for n in range(3)
    ]


def test_a_first_add_does_not_wait_the_crawl_delay_and_a_refresh_does(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SER-ROBOTS-FEEDS: "Crawl-delay applies to scheduled feed fetches ...; the first-add
    fetch ... [doesn't] wait for it". With `Crawl-delay: 20` for SereneReader, a feed the KB does not
    hold yet is asked for less than 20 s after robots.txt (the reader who subscribes gets it at once);
    the next request, the site's icon, still waits 20 s after it. A refresh of the same feed, once its
    robots.txt copy has aged (stored two days ago), is asked 20 s or more after robots.txt."""
    server.add(host, {
        "/robots.txt": text("User-agent: SereneReader\nCrawl-delay: 20\n"),
        "/feed.xml": Reply('<rss version="2.0"><channel><title>T</title><image><url>/i.png</url></image>'
                           '<item><title>Post</title><link>/p/1</link><enclosure url="/p/1.png" type="image/png"/>'
                           "</item></channel></rss>", headers={"Content-Type": "application/rss+xml"}),
        "/i.png": image(),
    })  # fmt: skip
    feed_url = server.url(host, "/feed.xml")
    first = crawl("feed", args={"url": feed_url}, settings=serene(signing_key))
    assert first.returncode == 0, first.stderr[-3000:]
    hits = server.log(host)
    assert paths(hits) == ["/robots.txt", "/feed.xml", "/i.png"]
    assert hits[1].start - hits[0].start < 20.0, gaps(hits)
    assert hits[2].start - hits[1].start >= 20.0, gaps(hits)
    assert {row["url"] for row in first.kb()} == {feed_url, server.url(host, "/p/1")}

    with store_of(first) as store:
        copy = store.get_robots("serenereader", origin_of(feed_url))
        assert copy is not None
        store.put_robots("serenereader", replace(copy, fetched_at=time.time() - 2 * 86400))
    seen = len(hits)
    again = crawl("feed", args={"url": feed_url}, settings=serene(signing_key))
    assert again.returncode == 0, again.stderr[-3000:]
    refresh = server.log(host)[seen:]
    assert paths(refresh) == ["/robots.txt", "/feed.xml"]
    assert refresh[1].start - refresh[0].start >= 20.0, gaps(refresh)


@pytest.mark.parametrize("shared", [False, True], ids=["local-pacer", "redis-pacer"])
def test_every_first_add_of_one_site_skips_the_crawl_delay(
    shared: bool,
    server: TestServer,
    host: str,
    crawl,
    signing_key: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    """SER-ROBOTS-FEEDS: two feeds of one host, neither fetched before, crawled together under
    `Crawl-delay: 10` for SereneReader: the site's log shows each feed asked less than 10 s after the
    request before it, the second at least the profile's own second after the first; the next request
    (the site's icon) waits the full Crawl-delay. Same with the shared (Redis) pacer."""
    feed_xml = (
        '<rss version="2.0"><channel><title>T</title><image><url>/i.png</url></image>'
        '<item><title>Post</title><link>/p/{n}</link><enclosure url="/p/{n}.png" type="image/png"/></item>'
        "</channel></rss>"
    )
    server.add(host, {
        "/robots.txt": text("User-agent: SereneReader\nCrawl-delay: 10\n"),
        **{f"/feed{n}.xml": Reply(feed_xml.format(n=n), headers={"Content-Type": "application/rss+xml"})
           for n in (1, 2)},
        "/i.png": image(),
    })  # fmt: skip
    settings = serene(signing_key)
    if shared:
        prefix = request.getfixturevalue("redis_prefix")
        settings |= {"PACING_REDIS_URL": REDIS_URL, "PACING_REDIS_PREFIX": prefix}
    feeds = [server.url(host, f"/feed{n}.xml") for n in (1, 2)]
    run = crawl("feed", args={"urls_file": write_urls(tmp_path / "feeds.txt", feeds)}, settings=settings)
    assert run.returncode == 0, run.stderr[-3000:]
    hits = server.log(host)
    assert paths(hits) == ["/robots.txt", "/feed1.xml", "/feed2.xml", "/i.png"]
    assert hits[1].start - hits[0].start < 10.0, gaps(hits)
    assert 1.0 - 0.05 <= hits[2].start - hits[1].start < 10.0, gaps(hits)  # before the fix: 10 s and more
    assert hits[3].start - hits[2].start >= 10.0, gaps(hits)


def test_a_broken_feed_is_one_line_and_the_other_feeds_are_read(
    server: TestServer, host: str, crawl, signing_key: Path, tmp_path: Path
) -> None:
    """SER-FEEDS: a document that is no feed is one warning line naming it; the crawl goes on and the
    other feed's entries are stored."""
    server.add(host, {
        "/robots.txt": text("", status=404),
        "/broken.xml": feed("not-a-feed.html", "text/html"),
        "/good.json": feed("feed.json", "application/feed+json"),
        "/icon-512.png": image(),
    })  # fmt: skip
    broken, good = server.url(host, "/broken.xml"), server.url(host, "/good.json")
    run = crawl(
        "feed", args={"urls_file": write_urls(tmp_path / "feeds.txt", [broken, good])}, settings=serene(signing_key)
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [line for line in run.stderr.splitlines() if broken in line and "WARNING" in line]
    assert len(lines) == 1 and "not read: feed: not RSS, Atom or JSON Feed" in lines[0]
    urls = {row["url"] for row in run.kb()}
    assert urls == {good, server.url(host, "/j/1"), server.url(host, "/j/2")}


def test_failed_refresh_holds_the_feed_15_minutes_and_429_waits_retry_after(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SER-FEED-BACKOFF: a refresh answered 500 is not retried in the crawl; the next refresh is due 15
    min later, and a crawl before then does not ask; the next failure, a 429 with Retry-After 7200 s,
    waits at least that and counts as the second in a row; a good refresh clears the delay. (The
    doubling to 30 min after a second 500 is tests/adapters/test_backoff_middleware.py's, on the
    same middleware: one crawl fewer here.)"""
    back = Reply(
        '<rss version="2.0"><channel><title>Back</title><item><title>Back again</title><link>/back</link>'
        '<enclosure url="/back.png" type="image/png"/></item></channel></rss>',
        headers={"Content-Type": "application/rss+xml"},
    )
    answers = iter([text("down", 500), text("slow", 429, {"Retry-After": "7200"}), back])
    server.add(host, {"/robots.txt": text("", status=404), "/feed.xml": lambda _: next(answers)})
    feed_url = server.url(host, "/feed.xml")

    def refresh(*, elapse: bool = True) -> tuple[CrawlRun, int, float, int]:
        """Crawl once: (the run, feed requests it made, the hold's delay from the start, failures in a row)."""
        before = paths(server.log(host)).count("/feed.xml")
        started = time.time()
        run = crawl("feed", args={"url": feed_url}, settings=serene(signing_key))
        assert run.returncode == 0, run.stderr[-3000:]
        fetched = paths(server.log(host)).count("/feed.xml") - before
        with store_of(run) as store:
            hold = store.get_url_hold("serenereader", feed_url)
            if hold is None:
                return run, fetched, 0.0, 0
            if elapse:  # as if the wait were over (a 429's Retry-After also paused the site)
                store.put_url_hold("serenereader", replace(hold, until=time.time() - 1))
                store.put_site_state("serenereader", SiteState(host))
        return run, fetched, hold.until - started, hold.failures

    _, fetched, delay, failures = refresh(elapse=False)
    assert fetched == 1 and 900 - 5 <= delay <= 900 + 60 and failures == 1
    held, fetched, _, failures = refresh()
    assert fetched == 0 and failures == 1
    assert f"feed {feed_url}: next refresh not before" in held.stderr
    _, fetched, delay, failures = refresh()
    assert fetched == 1 and 7200 - 5 <= delay <= 7200 + 60 and failures == 2
    good, fetched, delay, failures = refresh()
    assert (fetched, delay, failures) == (1, 0.0, 0)
    assert {row["title"] for row in good.kb()} == {"Back", "Back again"}


def test_other_profiles_read_feeds_without_previews_and_obey_the_star_group(
    server: TestServer, host: str, crawl, tmp_path: Path
) -> None:
    """SYN-MODES, ALL-RFC9309, SER-FEED-BACKOFF: under SynapseBot a feed's entries are stored from the feed
    alone (no article page, no icon); its `*` group still stops a feed (the Feedfetcher exception is
    SereneReader's); a feed that never answers is a failed refresh, delayed 15 min."""
    blocked = f"blocked-{host}"
    server.add(host, {
        "/robots.txt": text("", status=404),
        "/feed.xml": feed("rss2.xml", "text/xml"),
        "/silent.xml": Reply(drop=True),
    })  # fmt: skip
    server.add(blocked, {"/robots.txt": text("User-agent: *\nDisallow: /\n"), "/feed.xml": feed("rss2.xml")})
    urls = [server.url(host, "/feed.xml"), server.url(host, "/silent.xml"), server.url(blocked, "/feed.xml")]
    started = time.time()
    run = crawl(
        "feed", args={"urls_file": write_urls(tmp_path / "feeds.txt", urls)}, settings={"DOWNLOAD_DELAY": "0.1"}
    )
    assert run.returncode == 0, run.stderr[-3000:]
    # Twisted's connection pool itself sends a request again once when a reused connection drops
    assert sorted(set(paths(server.log(host)))) == ["/feed.xml", "/robots.txt", "/silent.xml"]
    assert paths(server.log(blocked)) == ["/robots.txt"]
    stored = {row["url"]: row for row in run.kb()}
    assert set(stored) == {urls[0], server.url(host, "/posts/tomatoes"), server.url(host, "/posts/compost")}
    assert stored[server.url(host, "/posts/compost")]["image"] == ""
    with store_of(run) as store:
        hold = store.get_url_hold("synapsebot", urls[1])
        assert store.get_site_icon(f"http://{host}:{server.port}") is None
    assert hold is not None and hold.failures == 1 and 900 - 5 <= hold.until - started <= 900 + 60


# The page an outside audit served: a heading and one paragraph.
titled = partial(page, h1=True, say="{title} is a page of the audit site.")


def test_serenereader_refresh_of_a_moved_feed_is_conditional(
    server: TestServer, host: str, crawl, signing_key: Path
) -> None:
    """SER-COND: "When the server returns an ETag ... the next request carries If-None-Match - an
    unchanged feed then costs only a 304". A subscribed feed address that redirects (WordPress's
    /feed to /feed/, http to https, a moved feed) is the usual case: the feed answers with an ETag, so
    the next refresh's request to the feed carries it and gets a 304 with no body."""
    rss = (
        '<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Moved garden</title>'
        "<link>/</link><image><url>/logo.png</url><title>Moved garden</title><link>/</link></image>"
        "<item><title>Beans</title><link>/posts/beans</link>"
        '<enclosure url="/img/beans.png" type="image/png" length="64"/></item></channel></rss>'
    )
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
        "/story/1": titled("Frost comes early", head='<meta property="og:image" content="/img/frost.jpg">'),
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
