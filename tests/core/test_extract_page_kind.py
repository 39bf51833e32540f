"""Labels, not text (OMN-LABELS): page kinds and link contexts, measured on a labelled set."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urljoin

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from synapsecrawl.extract.page_kind import LINK_CONTEXTS, PAGE_KINDS, LinkLabel, label_html, label_links, parse_document

DATA = Path(__file__).resolve().parent.parent / "data" / "labels"
EXPECT = re.compile(rb'\s+data-expect="[a-z]+"')
STRENGTH = {"navigation": 0, "citation": 1, "advertisement": 2}


def labelled_set() -> list[tuple[str, str, str, dict[str, str]]]:
    """(file, url, kind, {link: context}) for each page; a link met twice keeps its strongest context."""
    pages = json.loads((DATA / "expectations.json").read_text())["pages"]
    out = []
    for name, page in sorted(pages.items()):
        root = parse_document((DATA / name).read_bytes())
        assert root is not None
        links: dict[str, str] = {}
        for anchor in root.iter("a", "area"):
            context = anchor.get("data-expect")
            target = urljoin(page["url"], anchor.get("href") or "").split("#", 1)[0]
            here = target == page["url"].split("#", 1)[0]
            if context and not here and STRENGTH[context] >= STRENGTH.get(links.get(target, ""), -1):
                links[target] = context
        out.append((name, page["url"], page["kind"], links))
    return out


def scores(pairs: Sequence[tuple[str, str]], names: Sequence[str]) -> dict[str, tuple[float, float, int]]:
    """Per label: precision, recall, support, from (expected, got) pairs."""
    table = {}
    for name in names:
        tp = sum(1 for e, g in pairs if e == g == name)
        fp = sum(1 for e, g in pairs if g == name != e)
        fn = sum(1 for e, g in pairs if e == name != g)
        table[name] = (tp / (tp + fp) if tp + fp else 0.0, tp / (tp + fn) if tp + fn else 0.0, tp + fn)
    return table


def measure(subset: str) -> tuple[dict[str, tuple[float, float, int]], dict[str, tuple[float, float, int]]]:
    kinds: list[tuple[str, str]] = []
    contexts: list[tuple[str, str]] = []
    for name, url, kind, expected in labelled_set():
        if (subset == "held-out") != name.startswith("heldout-") and subset != "all":
            continue
        page, links = label_html(EXPECT.sub(b"", (DATA / name).read_bytes()), url)  # the answers removed
        kinds.append((kind, page.kind))
        got = {link.url: link.context for link in links}
        assert set(got) == set(expected), (name, set(got) ^ set(expected))
        contexts += [(context, got[link]) for link, context in expected.items()]
    return scores(kinds, PAGE_KINDS), scores(contexts, LINK_CONTEXTS)


def report(title: str, table: dict[str, tuple[float, float, int]]) -> None:
    print(f"\n{title}")
    for name, (precision, recall, support) in table.items():
        print(f"  {name:14} precision {precision:.2f}  recall {recall:.2f}  (n={support})")


def test_the_labelled_set_is_varied() -> None:
    """The set has at least 30 pages, at least five of each kind, and links of every context."""
    pages = labelled_set()
    assert len(pages) >= 30
    kinds = [kind for _, _, kind, _ in pages]
    assert all(kinds.count(kind) >= 5 for kind in PAGE_KINDS)
    contexts = [c for *_, links in pages for c in links.values()]
    assert all(contexts.count(c) >= 15 for c in LINK_CONTEXTS)


# Floors: what the labeller measured on this fixed set (49 pages, 369 links) when it was written,
# rounded down. The held-out pages (heldout-*) were written after the labeller was frozen.
KIND_FLOOR = {
    "blog_post": (1.0, 0.75),
    "news_article": (0.85, 1.0),
    "tutorial": (1.0, 1.0),
    "documentation": (1.0, 1.0),
    "product_page": (1.0, 1.0),
    "other": (0.9, 1.0),
}
CONTEXT_FLOOR = {"citation": (1.0, 0.95), "navigation": (0.98, 1.0), "advertisement": (1.0, 1.0)}
HELD_OUT_FLOOR = {
    "kind_accuracy": 10 / 12,
    "citation": (1.0, 0.85),
    "navigation": (0.95, 1.0),
    "advertisement": (1.0, 1.0),
}


def test_precision_and_recall_per_label() -> None:
    """OMN-LABELS: on the labelled set (the expected labels stripped before labelling), each page
    kind and link context reaches the precision and recall measured when the labeller was written.
    The figures are printed (pytest -s)."""
    kinds, contexts = measure("all")
    report("page kinds, all pages", kinds)
    report("link contexts, all pages", contexts)
    for name, (precision, recall) in KIND_FLOOR.items():
        assert kinds[name][0] >= precision and kinds[name][1] >= recall, (name, kinds[name])
    for name, (precision, recall) in CONTEXT_FLOOR.items():
        assert contexts[name][0] >= precision and contexts[name][1] >= recall, (name, contexts[name])


def test_precision_and_recall_on_held_out_pages() -> None:
    """OMN-LABELS: on the twelve pages written after the labeller was frozen, at least 10 kinds
    are right, and link contexts keep their measured precision and recall. Printed (pytest -s)."""
    kinds, contexts = measure("held-out")
    report("page kinds, held-out pages", kinds)
    report("link contexts, held-out pages", contexts)
    right = sum(recall * support for _, recall, support in kinds.values())
    assert right / sum(support for *_, support in kinds.values()) >= HELD_OUT_FLOOR["kind_accuracy"] - 1e-9
    for name in LINK_CONTEXTS:
        precision, recall = HELD_OUT_FLOOR[name]  # type: ignore[misc]
        assert contexts[name][0] >= precision and contexts[name][1] >= recall, (name, contexts[name])


def links_of(html: str, url: str = "https://a.test/page") -> dict[str, str]:
    root = parse_document(html.encode())
    assert root is not None
    return {link.url: link.context for link in label_links(root, url)}


@pytest.mark.parametrize(
    ("html", "context"),
    [
        ('<p>Read <a href="https://x.test/" rel="sponsored">this</a> now.</p>', "advertisement"),
        ('<div class="adContainer"><a href="https://x.test/">Buy</a></div>', "advertisement"),
        ('<div id="ad-slot-2"><a href="https://x.test/">Buy</a></div>', "advertisement"),
        ('<div data-ad-client="ca-1"><a href="https://x.test/">Buy</a></div>', "advertisement"),
        ('<div><span>Advertisement</span><a href="https://x.test/">Buy</a></div>', "advertisement"),
        ('<p>See <a href="https://ad.doubleclick.net/clk;1">deal</a> today.</p>', "advertisement"),
        ('<nav><a href="https://x.test/">Home</a></nav>', "navigation"),
        (
            '<footer><p>Made by people who like <a href="https://x.test/">our company</a> a lot.</p></footer>',
            "navigation",
        ),
        ('<div class="breadcrumbs"><a href="https://x.test/">Docs</a></div>', "navigation"),
        ('<ul><li><a href="https://x.test/">Only a link</a></li></ul>', "navigation"),
        ('<p>The method follows <a href="https://x.test/">RFC 9309</a> closely, as the authors note.</p>', "citation"),
        ('<ol class="references"><li><a href="https://x.test/">Source</a></li></ol>', "citation"),
        ('<h2>Sources</h2><ul><li><a href="https://x.test/">A report</a></li></ul>', "citation"),
        (
            '<blockquote><p>Quoted words from <a href="https://x.test/">the paper</a>, at length here.</p></blockquote>',
            "citation",
        ),
        (
            (
                '<article class="post tag-news category-nav"><p>As <a href="https://x.test/">the study</a> found, '
                "sleep matters.</p></article>"
            ),
            "citation",
        ),
    ],
)
def test_link_context_rules(html: str, context: str) -> None:
    """OMN-LABELS: rel=sponsored, ad containers (class/id words, data-ad attributes, an
    "Advertisement" caption, ad-server URLs) are advertisements; nav/header/footer/aside,
    breadcrumbs and links standing alone in a list are navigation; links set in running text,
    in references or under a "Sources" heading are citations; an article's own class words
    (WordPress's tag-*, category-*) say nothing about the links inside it."""
    assert list(links_of(f"<html><body>{html}</body></html>").values()) == [context]


def test_only_outgoing_http_links_are_labelled_once_each() -> None:
    """In-page anchors, the page itself, mailto: and javascript: links are not labelled; a URL
    linked twice is labelled once, with its strongest context; relative links resolve against <base>."""
    html = """<html><head><base href="https://a.test/docs/"></head><body>
      <nav><a href="#top">Top</a><a href="https://a.test/page">Self</a><a href="mailto:x@a.test">Mail</a>
      <a href="javascript:void(0)">JS</a><a href="guide.html">Guide</a></nav>
      <p>As the <a href="guide.html">guide explains in detail</a>, everything is configurable.</p></body></html>"""
    assert links_of(html) == {"https://a.test/docs/guide.html": "citation"}


def test_labels_carry_no_text() -> None:
    """OMN-LABELS: labels, not text: a link label is a URL and a context, a page label a kind and
    the names of the evidence that decided it."""
    page, links = label_html((DATA / "news-bbc-like.html").read_bytes(), "https://news.test/a")
    assert page.kind in PAGE_KINDS and all(isinstance(link, LinkLabel) for link in links)
    assert all(re.fullmatch(r"[a-z-]+:[\w:*./-]+", why) for why in page.evidence), page.evidence
    assert {link.context for link in links} <= set(LINK_CONTEXTS)


@settings(max_examples=50)
@given(st.binary(max_size=2000))
def test_labelling_never_raises(body: bytes) -> None:
    """label_html never raises on content: anything is some kind, with labelled links."""
    page, links = label_html(body, "https://a.test/x")
    assert page.kind in PAGE_KINDS and all(link.context in LINK_CONTEXTS for link in links)


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"<",
        b"\x00\x00",
        b"<html><body><a href='http://[::1'>x</a></body></html>",
        b'<script type="application/ld+json">{"@type": [1, {"a": null}]}</script>',
    ],
)
def test_broken_pages_are_labelled(body: bytes) -> None:
    """Empty, binary and malformed pages (bad JSON-LD, bad URLs) get a kind, never an error."""
    page, _ = label_html(body, "https://a.test/x")
    assert page.kind in PAGE_KINDS
