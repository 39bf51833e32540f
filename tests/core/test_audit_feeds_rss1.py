"""RSS 1.0 (RDF) feeds: the image the channel declares is the feed's icon."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.feeds import parse_feed

RDF = b"""<?xml version="1.0" encoding="utf-8"?>
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
    feed = parse_feed(RDF % b"/topics/logo.png", "http://news.test/index.rdf")
    assert (feed.kind, feed.icon, [e.link for e in feed.entries]) == (
        "rss", "http://news.test/topics/logo.png", ["http://news.test/1"])
    assert parse_feed(RDF.replace(b"<url>%s</url>", b""), "http://news.test/index.rdf").icon == ""


def test_rss_1_0_image_entities_are_not_expanded() -> None:
    """SER-FEEDS: an entity in the image URL is not expanded (no entity bomb); the feed still reads."""
    bomb = RDF.replace(b"<rdf:RDF", b'<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]><rdf:RDF')
    feed = parse_feed(bomb % b"&b;", "http://news.test/index.rdf")
    assert len(feed.icon) < 200 and feed.entries


@given(st.binary(max_size=300))
def test_rss_1_0_any_tail_never_raises(tail: bytes) -> None:
    """SER-FEEDS: any bytes after an RSS 1.0 start give a Feed, never an exception."""
    assert parse_feed(RDF[:400] + tail, "http://news.test/index.rdf").url == "http://news.test/index.rdf"
