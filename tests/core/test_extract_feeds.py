"""synapsecrawl.extract.feeds: feed documents, og:image and icon candidates, without a network."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synapsecrawl.extract.feeds import (
    ENTRY_TYPE_SUFFIX,
    Feed,
    FeedEntry,
    icon_candidates,
    is_image_type,
    parse_feed,
    read_og_image,
)
from synapsecrawl.pacing.backoff import feed_retry_delay
from synapsecrawl.profiles import load_profile

FEEDS = Path(__file__).resolve().parent.parent / "data" / "feeds"
BASE = "http://garden.test/feeds/main.xml"


def read(name: str, url: str = BASE, content_type: str = "") -> Feed:
    return parse_feed((FEEDS / name).read_bytes(), url, content_type=content_type)


def test_rss2_entries_text_dates_images_and_the_declared_image():
    """SER-FEEDS, SER-ICON: RSS 2.0 entries carry absolute links, text without markup or scripts, the
    date in UTC, an image/* enclosure as their image; the channel's <image> is the declared icon."""
    feed = read("rss2.xml", content_type="application/rss+xml")
    assert (feed.kind, feed.media_type, feed.title, feed.language) == (
        "rss",
        "application/rss+xml",
        "Quiet Garden",
        "en",
    )
    assert feed.link == "http://garden.test/" and feed.icon == "http://garden.test/logo.png"
    assert feed.description == "Notes from a quiet garden."
    assert feed.entries == (
        FeedEntry(
            "http://garden.test/posts/tomatoes",
            "Tomatoes in July",
            "The tomatoes ripen early.",
            "2024-07-02T06:30:00+00:00",
            "http://garden.test/img/tomatoes.jpg",
        ),
        FeedEntry("http://garden.test/posts/compost", "Compost basics", "Turn the heap every week."),
    )
    assert feed.problems == ()


def test_atom_entries_prefer_content_and_take_an_img_from_it():
    """SER-FEEDS: Atom content wins over the summary, an HTML title is made plain, an <img> in the content
    is the entry's image (resolved against the feed's URL); <summary> alone is the text otherwise."""
    feed = read("atom.xml", content_type="application/atom+xml")
    assert (feed.kind, feed.media_type, feed.title, feed.language) == (
        "atom",
        "application/atom+xml",
        "Cichy ogród",
        "pl",
    )
    first, second = feed.entries
    assert (first.title, first.text, first.image) == (
        "Pomidory w lipcu",
        "Dojrzewają wcześnie.",
        "http://garden.test/feeds/img/pomidory.png",
    )
    assert first.published == "2024-07-02T06:30:00+00:00"
    assert (second.link, second.text, second.image, second.published) == (
        "http://garden.test/wpisy/kompost",
        "Przerzucaj co tydzień.",
        "",
        "2024-07-03T10:00:00+00:00",
    )


@pytest.mark.parametrize(("name", "kind", "links"), [
    ("rss1.rdf", "rss", ["http://example.test/one"]),
    ("rss091.xml", "rss", ["http://old.test/news"]),
    ("feed.json", "json", ["http://garden.test/j/1", "http://garden.test/j/2"]),
])  # fmt: skip
def test_other_kinds_of_feed(name: str, kind: str, links: list[str]):
    """SER-FEEDS: RSS 1.0 (RDF), RSS 0.91 and JSON Feed 1.1 are read; an entry without a link is counted,
    not stored."""
    feed = read(name)
    assert feed.kind == kind and [e.link for e in feed.entries] == links


def test_json_feed_fields():
    """SER-FEEDS, SER-ICON: JSON Feed's image, content_html, date and icon."""
    feed = read("feed.json")
    assert feed.icon == "http://garden.test/icon-512.png" and feed.skipped == 1
    seeds, rain = feed.entries
    assert (seeds.text, seeds.image, seeds.published) == (
        "Sow now.",
        "http://garden.test/j/seeds.png",
        "2024-03-01T09:00:00+00:00",
    )
    assert (rain.text, rain.image) == ("It rained.", "")


@pytest.mark.parametrize(("body", "problem"), [
    ((FEEDS / "not-a-feed.html").read_bytes(), "feed: not RSS, Atom or JSON Feed"),
    (b"", "feed: not RSS, Atom or JSON Feed"),
    (b'{"title": "just JSON"}', "feed: JSON, but no JSON Feed"),
    (b"\x00\xff" * 50, "feed: not RSS, Atom or JSON Feed"),
])  # fmt: skip
def test_a_document_that_is_no_feed_says_so(body: bytes, problem: str):
    """SER-FEEDS: what is no feed comes back empty with one problem named, never an exception."""
    feed = parse_feed(body, BASE)
    assert feed.kind == "" and feed.media_type == "" and feed.entries == ()
    assert feed.problems[0].startswith(problem)


def test_a_truncated_feed_keeps_what_could_be_read():
    """SER-FEEDS: a feed cut short is read leniently and says it was not well-formed."""
    feed = read("truncated.xml")
    assert feed.kind == "rss" and "not well-formed" in feed.problems[0]


def test_media_rss_images_and_tracking_pixels():
    """SER-OGIMAGE: media:content (medium image) and media:thumbnail count as an entry's image; a 1x1
    <img> does not; a data: URL is no image."""
    body = b"""<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel><title>M</title>
      <item><link>/a</link><media:content url="/m.jpg" medium="image"/></item>
      <item><link>/b</link><media:thumbnail url="t.jpg"/></item>
      <item><link>/c</link><description>&lt;img src="/px.gif" width="1" height="1"&gt;</description></item>
      <item><link>/d</link><description>&lt;img src="data:image/png;base64,AAAA"&gt;</description></item>
    </channel></rss>"""
    images = [e.image for e in parse_feed(body, BASE).entries]
    assert images == ["http://garden.test/m.jpg", "http://garden.test/feeds/t.jpg", "", ""]


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=2000))
def test_parse_feed_never_raises(body: bytes):
    """SER-FEEDS: any bytes give a Feed; parsing twice gives the same Feed."""
    assert parse_feed(body, BASE) == parse_feed(body, BASE)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=500))
def test_parse_feed_never_raises_on_feedlike_text(text: str):
    """SER-FEEDS: text inside an RSS item, however odd, never raises."""
    body = f'<rss version="2.0"><channel><item><link>/x</link><description>{text}</description></item></channel></rss>'
    assert isinstance(parse_feed(body.encode("utf-8", "surrogatepass"), BASE), Feed)


@pytest.mark.parametrize(("html", "content_type", "expected"), [
    ('<meta property="og:image" content="/og.png">', "text/html", "http://garden.test/og.png"),
    ('<base href="http://cdn.test/x/"><meta property="og:image" content="og.png">', "", "http://cdn.test/x/og.png"),
    ('<meta property="og:image:secure_url" content="https://s.test/i.png">', "text/html", "https://s.test/i.png"),
    ('<meta name="og:image" content="/n.png">', "text/html; charset=utf-8", "http://garden.test/n.png"),
    ('<meta property="og:image" content="">', "text/html", ""),
    ('<meta property="twitter:image" content="/t.png">', "text/html", ""),
    ('<meta property="og:image" content="/og.png">', "image/png", ""),
    ("", "text/html", ""),
])  # fmt: skip
def test_og_image(html: str, content_type: str, expected: str):
    """SER-OGIMAGE: og:image (or its :url / :secure_url), made absolute against <base> or the page."""
    body = f"<html><head>{html}</head><body></body></html>".encode() if html else b""
    assert read_og_image(body, "http://garden.test/posts/a", content_type=content_type) == expected


def test_icon_candidates_in_order():
    """SER-ICON: the declared icon, then /favicon.ico, /apple-touch-icon.png,
    /apple-touch-icon-precomposed.png of the site's origin, each once."""
    assert icon_candidates("https://garden.test:8443/blog/", "https://cdn.test/i.png") == (
        "https://cdn.test/i.png",
        "https://garden.test:8443/favicon.ico",
        "https://garden.test:8443/apple-touch-icon.png",
        "https://garden.test:8443/apple-touch-icon-precomposed.png",
    )
    assert icon_candidates("http://garden.test/", "http://garden.test/favicon.ico")[:2] == (
        "http://garden.test/favicon.ico",
        "http://garden.test/apple-touch-icon.png",
    )
    assert is_image_type("image/x-icon") and is_image_type("Image/PNG; q=1") and not is_image_type("text/html")


def test_entry_content_type_marks_an_entry():
    """SER-FEEDS: an entry is stored with its feed's media type and RFC 5023's type=entry."""
    assert read("rss2.xml").media_type + ENTRY_TYPE_SUFFIX == "application/rss+xml;type=entry"


def test_feed_refresh_curve_after_failures_in_a_row():
    """SER-FEED-BACKOFF: 15 min, 30 min, 1 h ... up to a day after failed refreshes in a row; after a 429
    at least Retry-After (time passed in)."""
    policy = load_profile("serenereader").backoff
    assert [feed_retry_delay(policy, n, status=500, now=0.0) for n in (1, 2, 3, 7, 8, 40)] == [
        900,
        1800,
        3600,
        57600,
        86400,
        86400,
    ]
    assert feed_retry_delay(policy, 2, status=429, retry_after="7200", now=0.0) == 7200
    assert feed_retry_delay(policy, 2, status=429, retry_after="Thu, 01 Jan 1970 03:00:00 GMT", now=0.0) == 10800


def test_only_serenereader_exempts_feeds_from_the_star_group():
    """SER-ROBOTS-FEEDS: the Feedfetcher exception is SereneReader's alone."""
    names = ("synapsebot", "snagabot", "serenereader", "omniscientebot", "yottabot")
    assert {n for n in names if load_profile(n).robots.feeds_own_group_only} == {"serenereader"}


RSS1_RDF = b"""<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
  <channel rdf:about="http://news.test/"><title>Old News</title><link>http://news.test/</link>
    <description>d</description><image rdf:resource="http://news.test/logo.png"/>
  </channel>
  <image rdf:about="http://news.test/logo.png"><title>Old News</title><url>%s</url>
    <link>http://news.test/</link></image>
  <item rdf:about="http://news.test/1"><title>One</title><link>http://news.test/1</link></item>
</rdf:RDF>"""


def test_rss_1_0_channel_image_is_the_declared_icon() -> None:
    """SER-ICON, SER-FEEDS: RSS 1.0's <image><url> (which feedparser drops) is the declared icon,
    made absolute against the feed's URL; without one the feed declares no icon."""
    feed = parse_feed(RSS1_RDF % b"/topics/logo.png", "http://news.test/index.rdf")
    assert (feed.kind, feed.icon, [e.link for e in feed.entries]) == (
        "rss",
        "http://news.test/topics/logo.png",
        ["http://news.test/1"],
    )
    assert parse_feed(RSS1_RDF.replace(b"<url>%s</url>", b""), "http://news.test/index.rdf").icon == ""


def test_rss_1_0_image_entities_are_not_expanded() -> None:
    """SER-FEEDS: an entity in the image URL is not expanded (no entity bomb); the feed still reads."""
    bomb = RSS1_RDF.replace(
        b"<rdf:RDF", b'<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]><rdf:RDF'
    )
    feed = parse_feed(bomb % b"&b;", "http://news.test/index.rdf")
    assert len(feed.icon) < 200 and feed.entries


@given(st.binary(max_size=300))
def test_rss_1_0_any_tail_never_raises(tail: bytes) -> None:
    """SER-FEEDS: any bytes after an RSS 1.0 start give a Feed, never an exception."""
    assert parse_feed(RSS1_RDF[:400] + tail, "http://news.test/index.rdf").url == "http://news.test/index.rdf"
