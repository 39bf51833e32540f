"""One bad URL never loses the document it is in: ``urls.url_problem`` says whether a
URL can be requested, and every parser that makes URLs (links, sitemap <loc>s, feed entries, start URLs)
skips the bad one and keeps the rest; an unreadable <lastmod> is no lastmod."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from w3lib.url import canonicalize_url, safe_url_string

from synapsecrawl.crawl.request import CrawlRequest
from synapsecrawl.errors import ArgumentError
from synapsecrawl.extract.feeds import parse_feed
from synapsecrawl.extract.html import parse_html
from synapsecrawl.extract.sitemaps import order_entries, parse_lastmod, parse_sitemap
from synapsecrawl.urls import _ALREADY_CANONICAL, canonical, is_usable, url_problem

BAD = [
    "http://h.test:99999/",
    "http://[::1/",
    "http://h.test:abc/",
    "http://[zz]/",
    "http://h.test:0/",
    "javascript:alert(1)",
    "http:///x",
    "ftp://h.test/a",
    "",
]


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://h.test:99999/", "port out of range"),
        ("http://[::1/", "invalid ipv6 url"),
        ("http://h.test:abc/", "port could not be cast"),
        ("http://[zz]/", "does not appear to be an ipv4 or ipv6 address"),
        ("http://h.test:0/", "port 0"),
        ("javascript:alert(1)", "not an http(s) URL (javascript scheme)"),
        ("http:///x", "no host"),
        ("http://h test/", "white space in the host"),
        ("http://h.test/ok", None),
        ("https://[::1]:8080/a?b=c", None),
        ("HTTP://H.test:65535/", None),
        ("http://bücher.test/straße", None),
    ],
)
def test_url_problem_names_what_makes_a_url_unusable(url: str, problem: str | None) -> None:
    """A port out of range, an invalid IPv6 literal, a non-http scheme or no host makes a URL
    unusable, with a reason in a few words; a good URL (IDN and IPv6 included) has no problem."""
    found = url_problem(url)
    assert (found is None) if problem is None else (found is not None and problem in found), found
    assert is_usable(url) == (problem is None)


@settings(max_examples=500)
@given(
    st.one_of(
        st.text(max_size=60), st.builds(lambda h, p: f"http://{h}{p}", st.text(max_size=20), st.text(max_size=20))
    )
)
def test_url_problem_never_raises_and_a_usable_url_never_makes_w3lib_raise(url: str) -> None:
    """url_problem never raises on any text, and a URL it passes is one that w3lib can make
    safe and canonical (what every Request and KB key needs), so a usable URL never raises later."""
    if url_problem(url) is None:
        canonical(safe_url_string(url))
        canonical(url)


_LABELS = st.sampled_from(["a", "site-0", "Z", "0", "-x", "xn--zz", "a_b", "é", "a" * 64, ""])
_PORTS = st.sampled_from(["", ":80", ":080", ":0", ":8080", ":9999", ":65535", ":99999", ":"])
_SEGMENTS = st.sampled_from(["", "a", "x.html", ".", "..", ".x", "..x", "%41", "%2f", "~u", "a;p", "é", "a b", "A-Z_"])
_ENDS = st.sampled_from(["", "?q=1", "#f", "?", "#"])


@settings(max_examples=1000)
@given(
    st.sampled_from(["http://", "https://", "HTTP://", "ftp://"]),
    st.lists(_LABELS, min_size=1, max_size=3).map(".".join),
    _PORTS,
    st.lists(_SEGMENTS, max_size=4).map(lambda segments: "".join("/" + s for s in segments)),
    _ENDS,
)
def test_a_url_taken_as_already_canonical_is_what_w3lib_makes_of_it(
    scheme: str, host: str, port: str, path: str, end: str
) -> None:
    """canonical() skips w3lib for URLs it would leave as they are; for those, that is w3lib's answer."""
    url = f"{scheme}{host}{port}{path}{end}"
    try:
        expected = canonicalize_url(url, keep_fragments=False)
    except ValueError as error:  # port 99999: canonical() raises as w3lib does, never takes it as it is
        with pytest.raises(type(error)):
            canonical(url)
        return
    assert canonical(url) == expected
    if _ALREADY_CANONICAL.fullmatch(url):
        assert expected == url


def test_urls_taken_as_already_canonical() -> None:
    taken = ["http://site-0.test:39369/articles/3.html", "https://docs.test:8443/3/library/os.html", "http://a.test/"]
    not_taken = ["http://a.test", "http://A.test/", "http://a.test/./x", "http://a.test/x/..", "http://a.test/?q"]
    not_taken += ["http://a.test:080/", "http://a.test/%7e", "http://[::1]/", "http://a.test/x;p", "http://a.test/é"]
    assert [bool(_ALREADY_CANONICAL.fullmatch(url)) for url in taken + not_taken] == [True] * 3 + [False] * 10
    assert [canonical(url) for url in not_taken[:4]] == [
        "http://a.test/",
        "http://a.test/",
        "http://a.test/x",
        "http://a.test/",
    ]


def test_a_bad_link_is_skipped_and_named_and_the_page_keeps_its_other_links() -> None:
    """A link with port 99999 or an invalid IPv6 literal is left out of the page's links and
    named in one problem phrase; the page's good links and text stay."""
    body = (
        b'<html><head><title>T</title></head><body><p>Words here.</p><a href="http://h.test:99999/">bad</a>'
        b'<a href="/ok">ok</a><a href="http://[::1/">v6</a><a href="/after">after</a></body></html>'
    )
    page = parse_html(body, "http://h.test/", tokens=["synapsebot"])
    assert [link.url for link in page.links] == ["http://h.test/ok", "http://h.test/after"]
    assert page.text and page.title == "T"
    [problem] = page.problems
    assert "2 links without a usable URL skipped" in problem and "port out of range" in problem


def test_a_repeated_href_is_read_as_if_each_were_resolved_alone() -> None:
    """Hrefs are resolved once each, and that changes nothing read: a bad href repeated counts each
    time, a repeated good one keeps its first text, and "#..." hrefs (one key) all lead back to the page."""
    body = (
        b'<html><head><title>T</title></head><body><p>Words here.</p><a href="http://h.test:99999/">bad</a>'
        b'<a href="/ok">first</a><a href="#a">top</a><a href="http://h.test:99999/">bad again</a>'
        b'<a href="/ok">second</a><a href="#b">b</a><a href="/ok#x">third</a><a href="/ok#y">fourth</a>'
        b'<a href="http://h.test:99999/#a">bad, a</a><a href="http://h.test:99999/#b">bad, b</a></body></html>'
    )
    page = parse_html(body, "http://h.test/p?q=1#frag", tokens=["synapsebot"])
    assert [(link.url, link.text) for link in page.links] == [
        ("http://h.test/ok", "first"),
        ("http://h.test/p?q=1", "top"),
    ]
    [problem] = page.problems
    assert "4 links without a usable URL skipped" in problem


def test_a_bad_loc_is_counted_and_the_sitemap_keeps_its_other_entries() -> None:
    """A <loc> with port 99999 is counted as invalid; the sitemap's /ok entry is kept."""
    body = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://h.test:99999/x</loc></url>'
        b"<url><loc>http://h.test/ok</loc></url><url><loc>http://[::1/</loc></url></urlset>"
    )
    sitemap = parse_sitemap(body)
    assert [e.url for e in sitemap.entries] == ["http://h.test/ok"] and sitemap.invalid == 2


def test_a_bad_entry_link_is_skipped_and_the_feed_keeps_its_good_entries() -> None:
    """An RSS item whose link has port 99999 is skipped (counted); the good items are kept."""
    items = "".join(
        f"<item><title>{t}</title><link>{link}</link><description>{t} text</description></item>"
        for t, link in [("One", "http://h.test/1"), ("Bad", "http://h.test:99999/2"), ("Three", "http://h.test/3")]
    )
    body = f'<?xml version="1.0"?><rss version="2.0"><channel><title>F</title>{items}</channel></rss>'.encode()
    feed = parse_feed(body, "http://h.test/feed.xml", content_type="application/rss+xml")
    assert [e.link for e in feed.entries] == ["http://h.test/1", "http://h.test/3"] and feed.skipped == 1


@pytest.mark.parametrize("url", ["http://host.test:99999/", "http://[::1/"])
def test_an_unusable_start_url_is_an_argument_error(url: str) -> None:
    """-a url= with port 99999 or an invalid IPv6 literal is an ArgumentError (exit status 2)
    with one line naming the URL and why, not a ValueError from deep inside."""
    with pytest.raises(ArgumentError) as error:
        CrawlRequest.from_args(url=url)
    assert str(error.value).startswith(f"url {url!r} is not a usable URL: ") and "\n" not in str(error.value)


def test_a_bad_urls_file_line_is_skipped_and_the_others_are_kept(tmp_path: Path) -> None:
    """A urls_file line that cannot be requested is skipped with one message naming the file,
    the line and why; the other lines are crawled. A file of only bad lines is an ArgumentError."""
    path = tmp_path / "urls.txt"
    path.write_text("http://a.test/1\nhttp://a.test:99999/2\nhttp://[::1/\nhttp://a.test/3\n")
    request = CrawlRequest.from_args(urls_file=str(path))
    assert request.urls == ("http://a.test/1", "http://a.test/3")
    assert request.skipped == (
        f"urls_file {path} line 2: 'http://a.test:99999/2' is not a usable URL: port out of range 0-65535: skipped",
        f"urls_file {path} line 3: 'http://[::1/' is not a usable URL: invalid ipv6 url: skipped",
    )
    path.write_text("http://a.test:99999/2\n# a comment\nhttp://[::1/\n")
    with pytest.raises(ArgumentError, match=r"holds no usable URL \(2 lines, the first: .*line 1"):
        CrawlRequest.from_args(urls_file=str(path))


@pytest.mark.parametrize(
    "value",
    [
        "2024-01-01T00:00:00+99:99",
        "2024-01-01T00:00+24:00",
        "2024-01-01T00:00-9999",
        "2024-01-01T25:00Z",
        "0000-01-01",
        "9999-12-31T23:59:59-23:59",
    ],
)
def test_an_unreadable_lastmod_is_no_lastmod(value: str) -> None:
    """A <lastmod> with a zone past ±23:59 or an hour past 23 is absent (None), not a
    ValueError; a date past datetime's range too."""
    assert parse_lastmod(value) is None


def test_a_bad_lastmod_keeps_its_sitemap() -> None:
    """A sitemap of 10 entries, one with lastmod +99:99, keeps all 10, the bad one ordered
    with the entries that have no lastmod."""
    locs = [
        (f"http://h.test/{i}", "2024-01-01T00:00:00+99:99" if i == 3 else f"2024-01-{i + 1:02d}") for i in range(10)
    ]
    body = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>{loc}</loc><lastmod>{mod}</lastmod></url>" for loc, mod in locs)
        + "</urlset>"
    ).encode()
    sitemap = parse_sitemap(body)
    assert len(sitemap.entries) == 10 and sitemap.invalid == 0
    assert order_entries(sitemap.entries)[-1].url == "http://h.test/3"


_ZONED = st.from_regex(r"\A\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?([Zz]|[+-]\d{2}:?\d{2})?\Z")


@settings(max_examples=500)
@given(st.one_of(_ZONED, st.from_regex(r"\A\d{4}(-\d{2}(-\d{2})?)?\Z"), st.text(max_size=40)))
def test_parse_lastmod_never_raises(value: str) -> None:
    """Any lastmod string, W3C-shaped with any digits (zones like +99:99, hour 99) or not, is
    a UTC datetime or None, never an exception."""
    stamp = parse_lastmod(value)
    assert stamp is None or stamp.tzinfo == UTC


@settings(max_examples=100)
@given(st.lists(_ZONED, min_size=1, max_size=10))
def test_a_sitemap_keeps_every_entry_whatever_its_lastmod(values: list[str]) -> None:
    """A sitemap keeps every entry whatever its lastmod text; parsing never raises."""
    body = (
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        + "".join(f"<url><loc>http://h.test/{i}</loc><lastmod>{v}</lastmod></url>" for i, v in enumerate(values))
        + "</urlset>"
    ).encode()
    assert len(order_entries(parse_sitemap(body).entries)) == len(values)
