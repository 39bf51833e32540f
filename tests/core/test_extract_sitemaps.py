"""Reading sitemaps (synapsecrawl.extract.sitemaps): formats, caps, order and hostile input."""

from __future__ import annotations

import gzip
import resource
import time
import zlib
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synapsecrawl.extract.sitemaps import (
    MAX_ENTRIES,
    MAX_SITEMAP_BYTES,
    SitemapEntry,
    decompress,
    order_entries,
    parse_lastmod,
    parse_sitemap,
)

DATA = Path(__file__).parent.parent / "data" / "sitemaps"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*entries: tuple[str, str | None], ns: str = NS) -> bytes:
    items = "".join(
        f"<url><loc>{loc}</loc>{f'<lastmod>{lastmod}</lastmod>' if lastmod else ''}<priority>0.5</priority></url>"
        for loc, lastmod in entries
    )
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {ns}>{items}</urlset>'.encode()


def test_urlset_entries_with_lastmod() -> None:
    """sitemaps.org: <url><loc> with an optional <lastmod> (W3C datetime); other tags ignored."""
    sitemap = parse_sitemap(urlset(("https://h.test/a", "2024-03-01"), ("https://h.test/b", None)))
    assert sitemap.kind == "urlset"
    assert sitemap.entries == (
        SitemapEntry("https://h.test/a", datetime(2024, 3, 1, tzinfo=UTC)),
        SitemapEntry("https://h.test/b"),
    )
    assert sitemap.problems == () and sitemap.invalid == 0


def test_sitemap_index_lists_sitemaps() -> None:
    """sitemaps.org: a <sitemapindex> of <sitemap><loc> is an index, whatever its namespace prefix."""
    body = (
        b'<?xml version="1.0"?><sm:sitemapindex xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sm:sitemap><sm:loc> https://h.test/s1.xml.gz </sm:loc><sm:lastmod>2024-01-01</sm:lastmod></sm:sitemap>"
        b"<sm:sitemap><sm:loc>https://h.test/s2.xml</sm:loc></sm:sitemap></sm:sitemapindex>"
    )
    sitemap = parse_sitemap(body)
    assert sitemap.kind == "index"
    assert [e.url for e in sitemap.entries] == ["https://h.test/s1.xml.gz", "https://h.test/s2.xml"]


def test_no_namespace_and_the_old_google_namespace_are_read() -> None:
    """Sitemaps in the wild: no namespace, or Google's 0.84 one, still read."""
    for ns in ("", 'xmlns="http://www.google.com/schemas/sitemap/0.84"'):
        assert [e.url for e in parse_sitemap(urlset(("https://h.test/a", None), ns=ns)).entries] == ["https://h.test/a"]


def test_text_sitemap_one_url_a_line() -> None:
    """sitemaps.org text format: UTF-8, one URL a line; blank lines ignored, other lines counted."""
    sitemap = parse_sitemap(b"\xef\xbb\xbfhttps://h.test/a\r\n\r\nhttps://h.test/b\nnot a url\n/relative\n")
    assert sitemap.kind == "text"
    assert [e.url for e in sitemap.entries] == ["https://h.test/a", "https://h.test/b"]
    assert sitemap.invalid == 2


@pytest.mark.parametrize("compress", [gzip.compress, lambda b: gzip.compress(b[:40]) + gzip.compress(b[40:])])
def test_gzipped_sitemaps_are_read_by_their_magic_bytes(compress) -> None:  # type: ignore[no-untyped-def]
    """sitemaps.org: a sitemap may be gzipped; one or several gzip members."""
    body = urlset(("https://h.test/a", None))
    assert [e.url for e in parse_sitemap(compress(body)).entries] == ["https://h.test/a"]


@pytest.mark.parametrize(
    ("loc", "usable"),
    [
        ("https://h.test/a?b=c&amp;d=e", True),
        ("http://[::1]:8080/x", True),
        ("/relative/path", False),
        ("ftp://h.test/a", False),
        ("javascript:alert(1)", False),
        ("https://", False),
        ("https://h.test/a b", False),
        ("https://h.test/" + "x" * 2050, False),  # sitemaps.org: less than 2,048 characters
        ("", False),
    ],
)
def test_only_absolute_http_urls_are_entries(loc: str, usable: bool) -> None:
    """sitemaps.org: <loc> is an absolute URL; anything else is counted as invalid, not kept."""
    sitemap = parse_sitemap(urlset((loc, None)))
    assert len(sitemap.entries) == int(usable) and sitemap.invalid == int(not usable)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2024", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-07", datetime(2024, 7, 1, tzinfo=UTC)),
        ("2024-07-16", datetime(2024, 7, 16, tzinfo=UTC)),
        ("2024-07-16T19:20+01:00", datetime(2024, 7, 16, 18, 20, tzinfo=UTC)),
        ("2024-07-16T19:20:30.45Z", datetime(2024, 7, 16, 19, 20, 30, tzinfo=UTC)),
        ("2024-07-16T19:20:30-0530", datetime(2024, 7, 17, 0, 50, 30, tzinfo=UTC)),
        ("2024-07-16 19:20:30", datetime(2024, 7, 16, 19, 20, 30, tzinfo=UTC)),  # no zone: UTC
        ("  2024-07-16  ", datetime(2024, 7, 16, tzinfo=UTC)),
        ("2024-13-01", None),
        ("2024-02-30", None),
        ("yesterday", None),
        ("", None),
    ],
)
def test_lastmod_w3c_datetimes(value: str, expected: datetime | None) -> None:
    """sitemaps.org: <lastmod> in W3C Datetime, date alone allowed; anything else is no date."""
    assert parse_lastmod(value) == expected


def test_entries_newest_lastmod_first_then_document_order() -> None:
    """Priorities: entries with a lastmod, newest first (ties in document order), then
    the entries without one in document order."""
    day = datetime(2024, 1, 1, tzinfo=UTC)
    entries = [
        SitemapEntry("u1"), SitemapEntry("o1", day), SitemapEntry("n1", day + timedelta(days=9)),
        SitemapEntry("u2"), SitemapEntry("o2", day), SitemapEntry("z", day.astimezone(timezone(timedelta(hours=5)))),
    ]  # fmt: skip
    assert [e.url for e in order_entries(entries)] == ["n1", "o1", "o2", "z", "u1", "u2"]


def test_more_than_fifty_thousand_entries_reads_the_first_fifty_thousand() -> None:
    """sitemaps.org: at most 50,000 URLs a sitemap; past that the rest is left, with a problem
    phrase, and reading 50,000 stays quick."""
    body = urlset(*((f"https://h.test/p{i}", "2024-01-02") for i in range(MAX_ENTRIES + 5)))
    started = time.process_time()
    sitemap = parse_sitemap(body)
    assert time.process_time() - started < 10  # a benchmark bound, not a timing test: ~1 s measured
    assert len(sitemap.entries) == MAX_ENTRIES
    assert sitemap.entries[-1].url == f"https://h.test/p{MAX_ENTRIES - 1}"
    assert sitemap.problems == (f"more than {MAX_ENTRIES} entries: read the first {MAX_ENTRIES}",)


def _bomb(inflated: int, block: bytes = b" ") -> bytes:
    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    chunk = block * ((1 << 20) // len(block))
    return b"".join(deflate.compress(chunk) for _ in range(inflated >> 20)) + deflate.flush()


def test_gzip_bomb_stops_at_the_cap_with_bounded_memory() -> None:
    """sitemaps.org: 50 MB uncompressed at most. A 200 MB bomb (200 KB on the wire) inflates
    no further than the cap, and memory grows by about two copies of it, not 200 MB."""
    bomb = _bomb(200 << 20)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    data, problem = decompress(bomb)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert len(data) == MAX_SITEMAP_BYTES
    assert problem == f"larger than {MAX_SITEMAP_BYTES} bytes once decompressed: read the first {MAX_SITEMAP_BYTES}"
    assert grown_kib < 160 * 1024
    del data
    sitemap = parse_sitemap(bomb)
    assert sitemap.entries == () and sitemap.problems[0] == problem


def test_a_bomb_of_entries_yields_what_fits_under_the_caps() -> None:
    """A gzip stream inflating to far more than 50 MB of valid entries is read to the caps."""
    entry = b"<url><loc>https://h.test/p</loc></url>" * 1000
    bomb = gzip.compress(b"<urlset>" + entry * 2000 + b"</urlset>")  # 76 MB of entries
    sitemap = parse_sitemap(bomb, max_entries=1000)
    assert len(sitemap.entries) == 1000
    assert sitemap.problems[0].startswith("larger than")


def test_corrupt_and_truncated_gzip_keep_what_inflated() -> None:
    """A damaged gzip stream is a problem phrase, never an exception; entries before the damage stay."""
    body = gzip.compress(urlset(*((f"https://h.test/p{i}", None) for i in range(200))))
    sitemap = parse_sitemap(body[: len(body) // 2])
    assert 0 < len(sitemap.entries) < 200 and sitemap.problems
    damaged = body[:20] + bytes(b ^ 0xFF for b in body[20:60]) + body[60:]
    assert parse_sitemap(damaged).problems


def test_billion_laughs_is_not_expanded() -> None:
    """Entity expansion is off: the billion-laughs sitemap yields no entry, not even the text
    before its entity (`/p/&lol9;` must not become `/p/`, as libxml2 >= 2.14 leaves it), and is
    reported."""
    sitemap = parse_sitemap((DATA / "billion-laughs.xml").read_bytes())
    assert sitemap.entries == ()
    assert sitemap.problems and "entity expansion limit" in sitemap.problems[0]


def test_external_entities_are_neither_read_nor_fetched() -> None:
    """No file and no network is read for an entity (XXE): a <loc> holding one is invalid."""
    sitemap = parse_sitemap((DATA / "xxe.xml").read_bytes())
    assert [e.url for e in sitemap.entries] == ["http://HOST/p/ok"]
    assert sitemap.invalid == 2
    assert "root:" not in repr(sitemap)


@pytest.mark.parametrize(
    ("body", "kind", "problem"),
    [
        (b"", "none", "empty"),
        (b"   \n\t ", "none", "empty"),
        (b"<html><body><p>Soft 404</p></body></html>", "none", "not a sitemap (root element <html>)"),
        (
            b"<rss><channel><item><link>https://h.test/a</link></item></channel></rss>",
            "none",
            "not a sitemap (root element <rss>)",
        ),
        (b"\x00\x01\x02 binary", "none", "not a sitemap (no line is a URL)"),
        (b"<urlset><url><loc>https://h.test/a</loc></url><url><loc>https://h.te", "urlset", "malformed XML"),
        (b"<", "none", "not a sitemap"),
    ],
)
def test_malformed_input_is_a_problem_phrase(body: bytes, kind: str, problem: str) -> None:
    """A malformed or foreign document never raises: its kind and one phrase say what it was."""
    sitemap = parse_sitemap(body)
    assert sitemap.kind == kind
    assert sitemap.problems[0].startswith(problem)


def test_truncated_xml_keeps_the_entries_before_the_break() -> None:
    """A sitemap cut short (a size cap, a dropped connection) keeps the entries read before the break."""
    body = urlset(("https://h.test/a", None), ("https://h.test/b", None))
    sitemap = parse_sitemap(body[: body.index(b"https://h.test/b") - 5])
    assert [e.url for e in sitemap.entries] == ["https://h.test/a"]
    assert sitemap.problems[0].startswith("malformed XML")


def test_utf16_sitemap_is_read() -> None:
    """XML declares its encoding; a UTF-16 sitemap with a BOM is read like any other."""
    body = urlset(("https://h.test/é", None)).decode().replace('encoding="UTF-8"', 'encoding="UTF-16"')
    assert [e.url for e in parse_sitemap(body.encode("utf-16")).entries] == ["https://h.test/é"]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_parse_never_raises_on_bytes(body: bytes) -> None:
    """A parser never raises on content (Protego, w3lib)."""
    sitemap = parse_sitemap(body)
    assert sitemap.kind in ("urlset", "index", "text", "none")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["https://h.test/a", "https://h.test/b", "x", "http://[::1]/"]),
            st.one_of(st.none(), st.sampled_from(["2024", "2024-05-06T07:08Z", "bad"])),
        ),
        max_size=20,
    )
)
def test_reading_is_idempotent_on_its_own_output(entries: list[tuple[str, str | None]]) -> None:
    """Writing the entries read back as a sitemap reads the same entries (w3lib's idempotence)."""
    first = parse_sitemap(urlset(*entries))
    second = parse_sitemap(urlset(*((e.url, e.lastmod.isoformat() if e.lastmod else None) for e in first.entries)))
    assert second.entries == first.entries


@given(st.text(max_size=40))
def test_lastmod_never_raises(value: str) -> None:
    """Any <lastmod> text is a UTC datetime or None."""
    stamp = parse_lastmod(value)
    assert stamp is None or stamp.tzinfo == UTC
