"""HTML and plain-text responses → Page (synapsecrawl.extract.html, .text)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trafilatura
from hypothesis import given, settings
from hypothesis import strategies as st

from synapsecrawl.extract.html import MAX_TRAFILATURA_ELEMENTS, parse_html
from synapsecrawl.extract.page import Directives, Link, Page
from synapsecrawl.extract.text import parse_text

PAGES = Path(__file__).parent.parent / "data" / "pages"
URL = "https://news.example/section/page.html"
TOKENS = ("SnagaBot",)
LONG = (
    "This paragraph is long enough for main-text extraction to treat it as content, "
    "because it talks at some length about the subject of the page. "
)


def _page(body: str | bytes, **kwargs: object) -> Page:
    data = body.encode("utf-8") if isinstance(body, str) else body
    return parse_html(data, URL, tokens=TOKENS, **kwargs)  # type: ignore[arg-type]


def _doc(head: str = "", body: str = "") -> str:
    return f"<!DOCTYPE html><html><head><meta charset='utf-8'>{head}</head><body>{body}</body></html>"


# --- decoding


@pytest.mark.parametrize(
    ("name", "title", "phrase"),
    [
        ("pl-windows-1250.html", "Zażółć gęślą jaźń \u2013 Łódź", "Gdańsk leży nad morzem"),
        ("ja-shift_jis.html", "東京の天気", "東京と大阪は大きな都市です"),
        ("fr-latin1-undeclared.html", "Crème brûlée à Besançon", "c'était l'été dernier à Besançon"),
    ],
)
def test_legacy_encodings_decode(name: str, title: str, phrase: str) -> None:
    """SYN-DOCS: windows-1250 and Shift_JIS pages declared in <meta>, and latin-1
    with no declaration at all, decode to the right characters."""
    page = _page((PAGES / name).read_bytes())
    assert page.title == title
    assert phrase in page.text
    assert "\ufffd" not in page.text


@pytest.mark.parametrize(
    ("body", "encoding", "expected"),
    [
        ("<meta charset='utf-8'><title>Łódź</title>".encode("cp1250"), "windows-1250", "Łódź"),
        (b"\xef\xbb\xbf<meta charset='latin-1'><title>\xc5\x81\xc3\xb3d\xc5\xba</title>", None, "Łódź"),
        (b"<title>Gr\xfc\xdfe aus M\xfcnchen</title>", "iso-8859-1", "Grüße aus München"),
        (b"<title>caf\xc3\xa9</title>", "no-such-charset", "café"),
    ],
)
def test_encoding_precedence(body: bytes, encoding: str | None, expected: str) -> None:
    """SYN-DOCS: the HTTP charset beats <meta charset>; a BOM beats both (WHATWG
    sniffing); an unknown HTTP charset falls back to detection."""
    assert _page(body, encoding=encoding).title == expected


def test_utf8_cut_by_the_size_cap_stays_utf8() -> None:
    """SYN-DOCS: a UTF-8 body cut inside a character (the size cap) is still UTF-8."""
    body = _doc("<title>Zażółć gęślą jaźń</title>", f"<p>{LONG} ąę</p>").encode("utf-8")
    cut = body[: body.index("ąę".encode()) + 1]
    assert _page(cut).title == "Zażółć gęślą jaźń"


# --- text


def test_boilerplate_is_left_out_of_text() -> None:
    """SYN-DOCS: the KB gets the article, not navigation, header, sidebar, footer or scripts."""
    page = _page((PAGES / "boilerplate.html").read_bytes())
    assert "approved the new bicycle network" in page.text
    assert "fear the loss of parking spaces" in page.text
    for marker in ("NAV-TEXT", "HEADER-TEXT", "FOOTER-TEXT", "SIDEBAR-TEXT", "SCRIPT-TEXT", "COOKIE-TEXT"):
        assert marker not in page.text


def test_text_is_plain_paragraphs_separated_by_blank_lines() -> None:
    """SYN-DOCS: one paragraph per block, whitespace collapsed, blank line between."""
    page = _page(_doc(body=f"<article><h1>Heading</h1><p>{LONG}</p><p>Second\n   para\tgraph {LONG}</p></article>"))
    paragraphs = page.text.split("\n\n")
    assert paragraphs[0] == "Heading"
    assert paragraphs[2].startswith("Second para graph ")
    assert all(p == " ".join(p.split()) for p in paragraphs)


def test_tables_become_rows_of_cells() -> None:
    """SYN-DOCS: a table row is one paragraph, cells joined with " | ", no markdown rules."""
    rows = "".join(f"<tr><td>Row {i}</td><td>{i * 3}</td></tr>" for i in range(5))
    page = _page(
        _doc(body=f"<article><p>{LONG}</p><table><tr><th>Name</th><th>Value</th></tr>{rows}</table></article>")
    )
    assert "Name | Value" in page.text.split("\n\n")
    assert "Row 4 | 12" in page.text.split("\n\n")
    assert "---" not in page.text


def test_broken_markup_is_tolerated() -> None:
    """SYN-DOCS: unclosed and stray tags, bad entities and an open comment still yield text and links."""
    page = _page((PAGES / "broken.html").read_bytes())
    assert "First paragraph is never closed" in page.text
    assert "Second paragraph has bold and italic text" in page.text
    assert "cell one | cell two" in page.text
    assert page.links == (Link("https://news.example/next?a=1&b=2", text="next page"),)
    assert page.problems == ()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("<p>Hi</p>", "Hi"),
        ("<nav>Menu</nav><p>Only this</p><footer>Foot</footer><script>x=1</script>", "Only this"),
    ],
)
def test_tiny_pages_keep_their_text(body: str, expected: str) -> None:
    """SYN-DOCS: a page too small for boilerplate detection keeps its visible text."""
    assert _page(_doc(body=body)).text == expected


def test_visible_text_fallback_skips_chrome(monkeypatch: pytest.MonkeyPatch) -> None:
    """SYN-DOCS: when trafilatura finds nothing, <body> text is used without
    script, style, nav, header, footer, noscript, template or hidden parts."""
    monkeypatch.setattr(trafilatura, "extract", lambda *a, **k: None)
    body = (
        "<header>H</header><nav>N</nav><div>One<br>Two</div><script>S</script><style>s</style>"
        "<noscript>NS</noscript><template>T</template><p hidden>HID</p><table><tr><td>a</td><td>b</td></tr></table>"
        "<p>Tail <b>bold</b> end</p><footer>F</footer>"
    )
    assert _page(_doc(body=body)).text == "One\n\nTwo\n\na | b\n\nTail bold end"


def test_extractor_failure_becomes_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    """SYN-DOCS: an exception inside trafilatura is a listed problem, and visible text is kept."""

    def explode(*args: object, **kwargs: object) -> str:
        raise RecursionError("too deep")

    monkeypatch.setattr(trafilatura, "extract", explode)
    page = _page(_doc(body="<p>Still here</p>"))
    assert page.text == "Still here"
    assert page.problems == ("html: main-text extraction failed (RecursionError)",)


def test_huge_table_page_extracts() -> None:
    """SYN-DOCS: a 2 MB page holding a 20,000-row table extracts without error."""
    rows = "".join(
        f"<tr><td>row {i}</td><td>value {i * 7}</td><td>a longer description text in cell {i:05d}</td><td>ok</td></tr>"
        for i in range(20_000)
    )
    body = _doc("<title>Big table</title>", f"<h1>Big</h1><p>{LONG}</p><table>{rows}</table>").encode()
    assert len(body) > 2_000_000
    page = _page(body)
    assert page.title == "Big table"
    assert "row 19999 | value 139993 | a longer description text in cell 19999 | ok" in page.text
    assert page.problems == ()


def test_large_trees_skip_trafilatura(monkeypatch: pytest.MonkeyPatch) -> None:
    """SYN-DOCS: past MAX_TRAFILATURA_ELEMENTS the plain walk is used, so time stays bounded."""
    called: list[bool] = []
    monkeypatch.setattr(trafilatura, "extract", lambda *a, **k: called.append(True))
    items = "<span>x</span>" * MAX_TRAFILATURA_ELEMENTS
    assert _page(_doc(body=f"<p>{items}</p>")).text.startswith("xxx")
    assert called == []


@pytest.mark.parametrize("body", [b"", b"   \n\t", b"\x00\x00"])
def test_empty_documents(body: bytes) -> None:
    """SYN-DOCS: an empty response is a Page with a problem, not an exception."""
    page = _page(body)
    assert page.text == ""
    assert page.problems in (("html: empty document",), ("html: no text",))


def test_control_characters_are_removed() -> None:
    """SYN-DOCS: stored text holds no NUL or other control characters."""
    page = _page(_doc("<title>a\x00b\x07c</title>", "<p>x\x00y\x1bz</p>"))
    assert page.title == "abc"
    assert page.text == "xyz"


# --- metadata


@pytest.mark.parametrize(
    ("head", "body", "title"),
    [
        ("<title> The  title </title><meta property='og:title' content='OG'>", "<h1>H1</h1>", "The title"),
        ("<meta property='og:title' content='OG title'>", "<h1>H1</h1>", "OG title"),
        ("", "<h1>First <em>heading</em></h1><h1>Second</h1>", "First heading"),
        ("", "<svg><title>Icon</title></svg><h1>Real</h1>", "Real"),
        ("<title>  </title>", "<p>no title at all</p>", ""),
    ],
)
def test_title_fallbacks(head: str, body: str, title: str) -> None:
    """SYN-MODES: the title is <title>, else og:title, else the first h1 (SVG titles ignored)."""
    assert _page(_doc(head, body)).title == title


def test_metadata_fields() -> None:
    """SER-OGIMAGE: og:image, canonical, description, language and date are read and made absolute."""
    page = _page((PAGES / "boilerplate.html").read_bytes())
    assert page.og_image == "https://news.example/images/bikes.jpg"
    assert page.canonical == "https://news.example/2024/03/bike-lanes"
    assert page.description == "The council approved a new bicycle network."
    assert page.language == "en-GB"
    assert page.published == "2024-03-05T08:00:00Z"
    assert page.content_type == "text/html"


@pytest.mark.parametrize(
    ("head", "body", "expected"),
    [
        ("<meta property='og:image' content='//cdn.example/a.png'>", "", "https://cdn.example/a.png"),
        ("<base href='/assets/'><meta property='og:image' content='b.png'>", "", "https://news.example/assets/b.png"),
        ("<meta property='og:image:url' content='https://x.example/c.png'>", "", "https://x.example/c.png"),
        ("<meta name='og:image' content='d.png'>", "", "https://news.example/section/d.png"),
        ("<meta property='og:image' content='javascript:alert(1)'>", "", ""),
        ("", "<img src='e.png'>", ""),
    ],
)
def test_og_image(head: str, body: str, expected: str) -> None:
    """SER-OGIMAGE: og:image is read and made absolute against <base>/the URL; no guessing from <img>."""
    assert _page(_doc(head, body)).og_image == expected


@pytest.mark.parametrize(
    ("head", "body", "expected"),
    [
        ("<meta property='article:published_time' content='2024-01-02'>", "", "2024-01-02"),
        (
            (
                "<script type='application/ld+json'>"
                '{"@graph": [{"@type": "WebSite"}, {"@type": "NewsArticle", "datePublished": "2023-05-06T07:08:09Z"}]}'
                "</script>"
            ),
            "",
            "2023-05-06T07:08:09Z",
        ),
        ("<script type='application/ld+json'>{broken json</script>", "", ""),
        ("", "<time itemprop='datePublished' datetime='2022-02-02'>Feb 2</time>", "2022-02-02"),
    ],
)
def test_published(head: str, body: str, expected: str) -> None:
    """SYN-MODES: the publication date comes from article:published_time, JSON-LD or microdata."""
    assert _page(_doc(head, body)).published == expected


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [("lang='pl-PL'", "pl-PL"), ("xml:lang='de'", "de"), ("lang=''", ""), ("lang='not a language!'", "")],
)
def test_language(attributes: str, expected: str) -> None:
    """SYN-MODES: the language is <html lang> (or xml:lang) when it looks like a language tag."""
    assert _page(f"<html {attributes}><body><p>x</p></body></html>").language == expected


# --- links


def test_links_resolved_filtered_and_deduplicated() -> None:
    """SNA-NOFOLLOW: links are absolute (against <base>), without fragments or
    non-HTTP schemes, rel tokens lowercased, first occurrence kept, in order."""
    body = (
        "<a href='/a#top'> First\n anchor </a>"
        "<a href='b' rel='NoFollow UGC'>B</a>"
        "<a href='/a'>duplicate</a>"
        "<a href='javascript:void(0)'>js</a><a href='mailto:x@example.com'>m</a>"
        "<a href='tel:+4412345'>t</a><a href='data:text/html,hi'>d</a>"
        "<a href='#only-fragment'>self</a><a href=''>empty</a><a>no href</a>"
        "<a href='  https://other.example/p?q=1  '>spaced</a>"
        "<a href='http://[::1'>bad</a>"
        "<map><area href='/map' alt='Map area'></map>"
        "<a href='https://other.example/ünï cödé'>idn</a>"
        "<a href='/s' rel='sponsored'>ad</a>"
    )
    page = _page(_doc("<base href='https://base.example/dir/'>", body))
    assert page.links == (
        Link("https://base.example/a", text="First anchor"),
        Link("https://base.example/dir/b", rel=frozenset({"nofollow", "ugc"}), text="B"),
        Link("https://base.example/dir/", text="self"),
        Link("https://other.example/p?q=1", text="spaced"),
        Link("https://base.example/map", text="Map area"),
        Link("https://other.example/%C3%BCn%C3%AF%20c%C3%B6d%C3%A9", text="idn"),
        Link("https://base.example/s", rel=frozenset({"sponsored"}), text="ad"),
    )
    assert [link.nofollow for link in page.links] == [False, True, False, False, False, False, True]


def test_links_resolve_against_the_url_without_base() -> None:
    """SNA-NOFOLLOW: without <base>, relative links resolve against the page URL."""
    page = _page(_doc(body="<a href='../up'>u</a><a href='same'>s</a>"))
    assert [link.url for link in page.links] == ["https://news.example/up", "https://news.example/section/same"]


# --- directives and snippets


@pytest.mark.parametrize(
    ("head", "headers", "tokens", "expected"),
    [
        ("<meta name='robots' content='noindex'>", (), TOKENS, Directives(noindex=True)),
        ("<meta name='SNAGABOT' content='nofollow'>", (), TOKENS, Directives(nofollow=True)),
        ("<meta name='googlebot' content='noindex'>", (), TOKENS, Directives()),
        ("", ("snagabot: noindex",), TOKENS, Directives(noindex=True)),
        ("", ("googlebot: noindex",), TOKENS, Directives()),
        ("<meta name='YottaSearch' content='none'>", (), ("YottaBot-SearchBot", "YottaSearch"), Directives(True, True)),
        (
            "<meta name='robots' content='max-snippet:120'>",
            ("nosnippet",),
            TOKENS,
            Directives(nosnippet=True, max_snippet=0),
        ),
    ],
)
def test_directives_from_meta_and_header(
    head: str, headers: tuple[str, ...], tokens: tuple[str, ...], expected: Directives
) -> None:
    """ALL-NOINDEX, SNA-TOKEN, YOT-TOKEN, YOT-DIRECTIVES: robots meta, our own meta
    name and X-Robots-Tag (plain or scoped to us) apply; googlebot's do not."""
    page = parse_html(_doc(head, "<p>x</p>").encode(), URL, tokens=tokens, x_robots_tag=headers)
    assert page.directives == expected


def test_data_nosnippet_is_left_out_of_snippet_text() -> None:
    """SNA-SNIPPET: data-nosnippet parts are in text (searchable) but not in snippet_text."""
    page = _page((PAGES / "nosnippet.html").read_bytes())
    assert "NOSNIPPET-BLOCK" in page.text
    assert "NOSNIPPET-SPAN" in page.text
    assert "NOSNIPPET" not in page.snippet_text
    assert "boils a litre of water" in page.snippet_text
    assert "The handle stays cool, and the is fair" in page.snippet_text
    assert not page.directives.nosnippet


@pytest.mark.parametrize("spelling", ["DATA-NOSNIPPET", "Data-NoSnippet", "data-no\x00snippet", "data-nosnippet=''"])
def test_data_nosnippet_is_honoured_however_its_name_is_written(spelling: str) -> None:
    """SNA-SNIPPET: the attribute is looked for in the page's text before the tree is searched for it; any
    ASCII case, and a name a control character splits (removed before parsing), still keep the part out."""
    page = _page(_doc(body=f"<p>{LONG}</p><div {spelling}><p>SECRET-PART of the page.</p></div>"))
    assert "SECRET-PART" in page.text and "SECRET-PART" not in page.snippet_text
    assert page.snippet_text and not page.directives.nosnippet


def test_snippet_text_empty_means_same_as_text() -> None:
    """SNA-SNIPPET: without data-nosnippet, snippet_text is "" (same as text)."""
    assert _page((PAGES / "boilerplate.html").read_bytes()).snippet_text == ""


def test_all_nosnippet_page_gets_nosnippet() -> None:
    """SNA-SNIPPET: when everything is data-nosnippet, no text may be shown: nosnippet is set."""
    page = _page(_doc(body=f"<div data-nosnippet><p>{LONG}</p></div>"))
    assert page.text
    assert page.directives == Directives(nosnippet=True, max_snippet=0)


# --- properties

_FRAGMENTS = st.sampled_from([
    "<p>", "</p>", "<div data-nosnippet>", "</div>", "<a href='/x#y' rel='NOFOLLOW'>", "</a>",
    "<meta name='robots' content='noindex'>", "<title>", "</title>", "<table><tr><td>", "<br>",
    "<script>", "</script>", "<!--", "-->", "&amp;", "&#0;", "<base href='::'>", "<html lang='x'>",
    "<meta charset='shift_jis'>", "<svg><title>", "<?xml version='1.0' encoding='latin-1'?>", "\x00", "\ufdd0",
])  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000))
def test_arbitrary_bytes_never_raise_and_are_deterministic(body: bytes) -> None:
    """SYN-DOCS: any bytes give a Page, and the same Page twice."""
    first = _page(body)
    assert first == _page(body)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_FRAGMENTS | st.text(max_size=30), max_size=40).map("".join), st.sampled_from([None, "utf-8", "cp1250"])
)
def test_html_soup_never_raises_and_is_deterministic(soup: str, encoding: str | None) -> None:
    """SYN-DOCS: tag soup in any declared encoding gives the same clean Page twice."""
    body = soup.encode("utf-8", "surrogatepass")
    first = _page(body, encoding=encoding)
    assert first == _page(body, encoding=encoding)
    assert "\x00" not in first.text and "\ufdd0" not in first.text
    assert "\n\n\n" not in first.text


# --- plain text


def test_plain_text_title_and_paragraphs() -> None:
    """SYN-DOCS: a text/plain page's title is its first non-empty line; hard-wrapped
    lines join into paragraphs separated by blank lines."""
    body = b"\n\n   Release notes 2.0   \n\nFixed the parser.\nIt no longer\n  crashes.\r\n\r\nThanks!\n"
    page = parse_text(body, URL, tokens=TOKENS)
    assert page.title == "Release notes 2.0"
    assert page.text == "Release notes 2.0\n\nFixed the parser. It no longer crashes.\n\nThanks!"
    assert page.content_type == "text/plain"


@pytest.mark.parametrize(
    ("body", "encoding", "title"),
    [
        ("Zażółć gęślą jaźń".encode("cp1250"), "windows-1250", "Zażółć gęślą jaźń"),
        (
            "Crème brûlée à Besançon, où l'été est chaud.".encode("latin-1"),
            None,
            "Crème brûlée à Besançon, où l'été est chaud.",
        ),
        ("\ufeffBOM first".encode("utf-8"), "latin-1", "BOM first"),
        (b"x" * 500, None, "x" * 200),
        (b"", None, ""),
    ],
)
def test_plain_text_decoding_and_title_cap(body: bytes, encoding: str | None, title: str) -> None:
    """SYN-DOCS: text/plain decodes by BOM, HTTP charset, then detection; titles are at most 200 characters."""
    assert parse_text(body, URL, tokens=TOKENS, encoding=encoding).title == title


def test_plain_text_directives_and_empty_problem() -> None:
    """ALL-NOINDEX: X-Robots-Tag applies to text/plain too; an empty body is a listed problem."""
    page = parse_text(b"  \n ", URL, tokens=TOKENS, x_robots_tag=["SnagaBot: noindex"])
    assert page.directives.noindex
    assert page.problems == ("text: empty",)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=2000), st.sampled_from([None, "utf-8", "shift_jis", "bogus"]))
def test_plain_text_never_raises_and_is_deterministic(body: bytes, encoding: str | None) -> None:
    """SYN-DOCS: any bytes give the same text/plain Page twice, title within its cap."""
    first = parse_text(body, URL, tokens=TOKENS, encoding=encoding)
    assert first == parse_text(body, URL, tokens=TOKENS, encoding=encoding)
    assert len(first.title) <= 200
