"""Extraction's work on one page is bounded and linear, and binary bytes are no text.

No timing is asserted: the tests hold the work counters and the bounds the code reports.
"""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

import lxml.html
import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.crawl.summary import CrawlSummary
from synapsecrawl.extract.bounds import MAX_ATTRIBUTES, MAX_LINKS, _cap, cap_attributes
from synapsecrawl.extract.html import parse_html, parse_tree
from synapsecrawl.extract.link_context import _Length, link_labelling
from synapsecrawl.extract.page_kind import label_html, parse_document
from synapsecrawl.extract.read import read_document
from synapsecrawl.extract.sniff import binary_signature, unreadable_share
from tests.helpers import make_pdf
from tests.hostile import headless_gzip

DATA = Path(__file__).resolve().parent.parent / "data"
TOKENS = ("synapsebot",)
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8


def many_attributes(count: int, spelling: str = 'a{i}="v"') -> bytes:
    attributes = " ".join(spelling.format(i=i) for i in range(count))
    return (
        f"<html><head><title>Many attributes</title></head><body><div {attributes}>Body text here.</div>"
        "<p>Good paragraph.</p></body></html>"
    ).encode()


def links_in_one_aside(count: int) -> bytes:
    links = "".join(f'<a href="https://elsewhere.test/l{i}">link {i}</a> ' for i in range(count))
    return f"<html><body><p>Main text of the page.</p><aside>{links}</aside></body></html>".encode()


def most_attributes(root: lxml.html.HtmlElement) -> int:
    return max(len(element.attrib) for element in root.iter())


def test_a_div_with_200000_attributes_is_read_within_the_attribute_bound() -> None:
    """One well-formed <div> with 200,000 attributes (2.6 MB) is read: the first
    MAX_ATTRIBUTES of them reach the parser, the rest are cut and reported as a bound met, and the
    page's text (in the div and after it) is all there."""
    body = many_attributes(200_000)
    page = parse_html(body, "https://a.test/", tokens=TOKENS)
    assert "Body text here." in page.text and "Good paragraph." in page.text
    assert page.title == "Many attributes"
    assert page.bounded == (f"attributes: {200_000 - MAX_ATTRIBUTES:,} past {MAX_ATTRIBUTES} on one element not read",)
    root, dropped = parse_tree(body.decode())
    assert root is not None and dropped == 200_000 - MAX_ATTRIBUTES
    assert most_attributes(root) == MAX_ATTRIBUTES


@pytest.mark.parametrize("spelling", [
    'a{i}="v"', "a{i}='x>y'", "a{i}=v", "a{i}", 'a{i}="1"b{i}=2', "/a{i}", 'a"{i}=">"', "=a{i}=v", "<a{i}",
    'a{i} = "spaced"', "a{i}=\t'tab'",
])  # fmt: skip
def test_no_spelling_of_attributes_gets_past_the_cap(spelling: str) -> None:
    """However the attributes are written (quoted values holding '>', no space after a
    quoted value, '/' or '<' or '=' in names, spaces around '='), the parser never sees more than
    MAX_ATTRIBUTES on one element, and a tag within the cap is left as it was."""
    root, dropped = parse_tree(many_attributes(MAX_ATTRIBUTES * 2, spelling).decode())
    assert root is not None and dropped > 0
    assert most_attributes(root) <= MAX_ATTRIBUTES
    within = many_attributes(MAX_ATTRIBUTES // 4, spelling).decode()
    assert cap_attributes(within) == (within, 0)


@given(st.lists(st.sampled_from(["a", "b", "=", '"', "'", "/", ">", "<", " ", "\t", "\n", "x", "&", "é"]), max_size=60))
def test_the_cut_agrees_with_the_parser_on_any_tag(chars: list[str]) -> None:
    """For any tag text, repeated past the cap, libxml2 sees at most MAX_ATTRIBUTES on one
    element after the cut (the cut reads attributes as the HTML tokenizer does, or more strictly)."""
    tag = "".join(chars)
    text = f"<html><body><div {tag * (MAX_ATTRIBUTES + 8)} z>text</div></body></html>"
    root, _ = parse_tree(text)
    if root is not None:
        assert most_attributes(root) <= MAX_ATTRIBUTES


@given(
    st.lists(st.sampled_from(["a", "=", '"', "'", "/", ">", "<", " ", "x", "<script>", "</script>"]), max_size=12),
    st.integers(MAX_ATTRIBUTES - 2, MAX_ATTRIBUTES + 2),
)
def test_looking_for_an_overfull_tag_first_changes_no_cut(chars: list[str], count: int) -> None:
    """A text in which no start tag holds MAX_ATTRIBUTES attributes is returned as it is without the
    whole scan; any text, overfull or near it, inside raw text or out, is cut exactly as the whole scan cuts it."""
    tag = "".join(chars)
    text = f"<html><body><div {tag * count} z>text</div><script>'<p {' q' * count}'</script></body></html>"
    assert cap_attributes(text) == _cap(text)


@pytest.mark.parametrize("letter", ["\u212a", "\u0130", "\u0131", "\u017f"])  # Kelvin, dotted I, dotless i, long s
def test_a_letter_that_folds_to_ascii_starts_no_tag_and_no_raw_text(letter: str) -> None:
    """The HTML tokenizer starts a tag only at an ASCII letter, so "<K..." (Kelvin sign) is text,
    as libxml2 reads it, and "<script>" spelt with a long s hides no overfull tag after it from the cut."""
    words = " ".join(f"a{i}" for i in range(MAX_ATTRIBUTES + 44))
    text = f"<{letter}b {words}>x"
    assert cap_attributes(text) == _cap(text) == (text, 0)
    hiding = f"<p><{letter}cript></p><div {words}>x</div>"
    root, dropped = parse_tree(hiding)
    assert dropped == 44 and root is not None and most_attributes(root) <= MAX_ATTRIBUTES


def test_ordinary_pages_are_not_touched_by_the_bounds() -> None:
    """The pages of the test corpora meet no bound: the cut changes nothing, nothing is reported."""
    for path in sorted(DATA.glob("**/*.html")):
        text = path.read_bytes().decode("utf-8", "replace")
        assert cap_attributes(text) == (text, 0), path
        assert parse_html(path.read_bytes(), "https://a.test/", tokens=TOKENS).bounded == (), path


def test_a_deeply_nested_page_is_read_without_trafilatura_and_says_so() -> None:
    """600 nested tables (trafilatura's cost is the sum of the elements' depths) are
    read by the plain walk instead, the text is there, and the bound is reported."""
    body = b"<html><body><p>Before the tables.</p>" + b"<table><tr><td>" * 600 + b"Deep cell</body></html>"
    page = parse_html(body, "https://a.test/", tokens=TOKENS)
    assert "Before the tables." in page.text and "Deep cell" in page.text
    assert any(b.startswith("main text:") for b in page.bounded)


def test_links_examined_are_capped() -> None:
    """A page of 12,000 distinct links yields the first MAX_LINKS, and says so."""
    anchors = "".join(f'<a href="/p{i}">p{i}</a> ' for i in range(12_000))
    page = parse_html(f"<html><body><p>Index.</p>{anchors}</body></html>".encode(), "https://a.test/", tokens=TOKENS)
    assert len(page.links) == MAX_LINKS
    assert page.links[-1].url == f"https://a.test/p{MAX_LINKS - 1}"
    assert f"links: only the first {MAX_LINKS:,} read" in page.bounded


@pytest.mark.parametrize("count", [5_000, 20_000])
def test_link_contexts_in_one_aside_cost_a_few_looks_per_element(count: int) -> None:
    """OMN-LABELS: links in one <aside> are all navigation, and the labeller looks at
    each element a bounded number of times (it used to look at every child of the aside for every
    link: quadratic). 20,000 links meet MAX_LINKS: the first 10,000 are labelled and the bound reported."""
    root = parse_document(links_in_one_aside(count))
    assert root is not None
    elements = sum(1 for _ in root.iter())
    labelling = link_labelling(root, "https://a.test/")
    assert len(labelling.labels) == min(count, MAX_LINKS)
    assert {label.context for label in labelling.labels} == {"navigation"}
    assert labelling.examined <= 4 * elements
    expected = f"link labels: only the first {MAX_LINKS:,} links labelled"
    assert labelling.bounded == (() if count <= MAX_LINKS else (expected,))


def test_link_contexts_in_running_text_are_measured_once_per_element() -> None:
    """OMN-LABELS: 3,000 links set in one long paragraph are citations, and the
    paragraph's text is measured once, not once per link."""
    words = "".join(f'Some words before <a href="https://x.test/{i}">source {i}</a> and after. ' for i in range(3_000))
    root = parse_document(f"<html><body><p>{words}</p></body></html>".encode())
    assert root is not None
    labelling = link_labelling(root, "https://a.test/")
    assert {label.context for label in labelling.labels} == {"citation"}
    assert labelling.examined <= 4 * sum(1 for _ in root.iter())


@given(st.lists(st.text(alphabet=" \t\nab\u00a0c", max_size=8), max_size=6))
def test_text_lengths_add_up_as_the_joined_text_measures(pieces: list[str]) -> None:
    """The labeller's additive text length equals len(" ".join(text.split())) of the
    joined pieces, so measuring each element once gives the same labels as measuring each block."""
    total = _Length.of(None)
    for piece in pieces:
        total = total + _Length.of(piece)
    assert total.value == len(" ".join("".join(pieces).split()))


def test_labels_read_in_the_worker_are_those_of_the_labeller() -> None:
    """OMN-LABELS: read_document(label=True) labels each page of the labels corpus as
    label_html does (same kind, same links and contexts), from the tree extraction parses."""
    for path in sorted((DATA / "labels").glob("*.html")):
        url = f"https://site.test/{path.stem.replace('-', '/')}"
        page = read_document(path.read_bytes(), url, content_type="text/html", tokens=TOKENS, label=True)
        kind, links = label_html(path.read_bytes(), url)
        assert page.labels is not None, path
        assert page.labels.kind == kind.kind, path
        assert page.labels.links == tuple((link.url, link.context) for link in links), path


def test_labels_carry_the_tdm_meta_tags_and_a_pdf_is_labelled_by_its_address() -> None:
    """OMN-LABELS, OMN-FETCH: the worker hands the tdm-* meta tags over for the TDM reservation; a
    PDF under /docs/ is documentation by its address, as before."""
    html = (
        b'<html><head><meta name="TDM-Reservation" content="1"><meta name="x" content="y"></head><body>t</body></html>'
    )
    page = read_document(html, "https://a.test/", content_type="text/html", tokens=TOKENS, label=True)
    assert page.labels is not None and page.labels.tdm_meta == (("TDM-Reservation", "1"),)
    pdf = read_document(
        make_pdf([["Manual text."]]),
        "https://a.test/docs/manual.pdf",
        content_type="application/pdf",
        tokens=TOKENS,
        label=True,
    )
    assert pdf.labels is not None and pdf.labels.kind == "documentation"
    assert read_document(html, "https://a.test/", content_type="text/html", tokens=TOKENS).labels is None


@pytest.mark.parametrize(("body", "content_type", "says"), [
    (PNG, "text/html", "the body is a PNG image, sent as text/html"),
    (gzip.compress(gzip.compress(b"<html><body><p>Twice.</p></body></html>" * 50, mtime=0), mtime=0), "text/html; charset=utf-8",
     "the body is gzip data, sent as text/html"),
    (zlib.compress(b"plain words " * 200), "text/plain", "the body is zlib data, sent as text/plain"),
    (PNG, "", "the body is a PNG image, sent untyped"),
    (make_pdf([["A PDF."]]), "text/html", "the body is a PDF document, sent as text/html"),
    (b"GIF89a" + bytes(range(256)) * 4, "image/gif", "the body is a GIF image, sent as image/gif"),
], ids=["png-as-html", "gzip-twice", "zlib-as-text", "png-untyped", "pdf-as-html", "gif"])  # fmt: skip
def test_binary_bytes_are_no_text(body: bytes, content_type: str, says: str) -> None:
    """A PNG sent as HTML, gzip inside gzip, zlib sent as text, a PDF sent as HTML: what
    the first bytes are is said, and no text is read from them."""
    page = read_document(body, "https://a.test/x", content_type=content_type, tokens=TOKENS, label=True)
    assert page.not_text == says
    assert (page.text, page.title, page.links, page.labels) == ("", "", (), None)


@pytest.mark.parametrize("content_type", ["text/html", "text/html; charset=utf-8", "text/plain", ""])
def test_bytes_without_a_signature_that_read_as_controls_are_no_text(content_type: str) -> None:
    """Compressed bytes whose first bytes name no format (a stream cut at its header)
    decode to about one control character in nine: refused, with the share said."""
    body = headless_gzip()
    assert binary_signature(body) == ""
    page = read_document(body, "https://a.test/x", content_type=content_type, tokens=TOKENS)
    assert re.fullmatch(r"\d+% of its characters are control characters", page.not_text), page.not_text
    assert page.text == ""


def test_a_page_in_the_wrong_charset_is_still_text() -> None:
    """A Latin-1 page declared UTF-8 has replacement characters, not binary bytes: it is read."""
    body = ("<html><body><p>" + "Le café était fermé à l'été. " * 100 + "</p></body></html>").encode("latin-1")
    page = read_document(body, "https://a.test/x", content_type="text/html; charset=utf-8", tokens=TOKENS)
    assert page.not_text == "" and "caf" in page.text
    assert binary_signature(b"BM is a word") == "" and binary_signature(b"ID3 tags explained") == ""
    assert unreadable_share("a\x00b") == ""


def test_the_summary_counts_bounded_pages_and_binary_ones() -> None:
    """A page read within bounds is counted as bounded (and may be stored); a binary
    one is skipped for reason binary."""
    summary = CrawlSummary()
    summary.fetch("a.test")
    summary.fetch("a.test")
    summary.store("a.test")
    summary.bound("a.test")
    summary.skip("a.test", "binary")
    assert summary.stats()["summary/bounded"] == 1
    assert summary.stats()["summary/skipped/binary"] == 1
    assert summary.lines() == [
        "crawl summary: fetched 2, stored 1, bounded 1, skipped 1 (binary 1)",
        "  a.test: fetched 2, stored 1, bounded 1, skipped binary 1",
    ]


def test_what_a_script_or_a_title_holds_is_never_cut() -> None:
    """Text the tokenizer reads as text (a script, a style, a title) is passed over whole,
    however many attribute-like words follow a '<' in it; the overfull <div> after it is still cut."""
    words = " ".join(f"w{i}" for i in range(MAX_ATTRIBUTES * 2))
    text = (
        f"<html><head><title>Less <than {words}</title><script>var s = '<div {words}';</SCRIPT></head>"
        f"<body><div {words}>Body.</div></body></html>"
    )
    out, dropped = cap_attributes(text)
    assert dropped == MAX_ATTRIBUTES
    assert f"<title>Less <than {words}</title>" in out and f"var s = '<div {words}';" in out


def test_a_log_in_terminal_colours_is_text() -> None:
    """Escape sequences of terminal colours in a text/plain log are text, not binary bytes."""
    log = "".join(f"\x1b[32mINFO\x1b[0m step {i} done\n\x1b[31mERR\x1b[0m x\n" for i in range(200)).encode()
    page = read_document(log, "https://a.test/ci.log", content_type="text/plain", tokens=TOKENS)
    assert page.not_text == "" and "step 199 done" in page.text
