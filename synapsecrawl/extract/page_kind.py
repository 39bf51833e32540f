"""Labels, not text (OMN-LABELS): the kind of a page and the context of each of its links.

A page is a ``blog_post``, ``news_article``, ``tutorial``, ``documentation``, ``product_page`` or ``other``:
evidence (``extract.page_cues``: what the page says it is, its URL path, what it is made of) is weighed, and the
kind with the most weight wins, ``other`` below ``MIN_WEIGHT``. A link's context is
``synapsecrawl.extract.link_context``'s. OmniscienteBot labels a page in the worker that reads it
(``read_document``). Labelling never raises on content and keeps no text. More: docs/architecture.md, "Inside the
larger modules".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from urllib.parse import urlsplit

import lxml.html  # type: ignore[import-untyped,unused-ignore]
from lxml import etree
from w3lib.encoding import html_to_unicode

from synapsecrawl.extract.html import jsonld_documents, parse_tree
from synapsecrawl.extract.link_context import LINK_CONTEXTS, LinkLabel, link_labelling
from synapsecrawl.extract.page_cues import (
    ARTICLE,
    BLOG_WORDS,
    BYLINE,
    CART,
    DATE_PATH,
    DOC_HEADINGS,
    HOST_WORDS,
    NEWS_WORDS,
    OG_TYPES,
    PATH_WORDS,
    PRICE,
    SCHEMA_TYPES,
    STOCK,
    TUTORIAL_HEADINGS,
    TUTORIAL_TITLE,
    TUTORIAL_WORDS,
)

__all__ = [
    "LINK_CONTEXTS",
    "MIN_WEIGHT",
    "PAGE_KINDS",
    "LinkLabel",
    "PageLabel",
    "label_html",
    "label_links",
    "label_page",
    "label_url",
    "parse_document",
]

PAGE_KINDS = ("blog_post", "news_article", "tutorial", "documentation", "product_page", "other")
MIN_WEIGHT = 3
_TIE_ORDER = ("product_page", "tutorial", "documentation", "blog_post", "news_article", "other")
_MAX_NODES = 2_000

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# headings read for their words: the first 1,000, each up to 300 characters from at most 2,000 nodes
_MAX_HEADINGS = 1_000
_HEADING_CHARS = 300
_HEADING_NODES = 2_000


@dataclass(frozen=True)
class PageLabel:
    """A page's kind and the evidence that decided it (e.g. ``schema:NewsArticle``)."""

    kind: str
    evidence: tuple[str, ...] = ()


def parse_document(body: bytes, *, encoding: str | None = None) -> lxml.html.HtmlElement | None:
    """The HTML tree of ``body`` (``encoding``: the HTTP charset, if any); None when empty."""
    header = f"text/html; charset={encoding}" if encoding else "text/html"
    try:
        _, text = html_to_unicode(header, body)
    except (ValueError, LookupError):
        return None
    return parse_tree(text.encode("utf-8", "replace").decode("utf-8"))[0]


def _text(element: lxml.html.HtmlElement) -> str:
    try:
        return " ".join(element.text_content().split())
    except ValueError:
        return ""


def _short_text(element: lxml.html.HtmlElement, chars: int = _HEADING_CHARS) -> str:
    """The start of ``_text(element)``, read from at most ``_HEADING_NODES`` of its nodes (headings
    nested in headings would make reading each heading's whole text quadratic)."""
    parts: list[str] = []
    size = 0
    for seen, (event, node) in enumerate(etree.iterwalk(element, events=("start", "end"))):
        if seen >= _HEADING_NODES or size > chars:
            break
        piece = (
            (node.text if isinstance(node.tag, str) else None)
            if event == "start"
            else (node.tail if node is not element else None)
        )
        if piece:
            parts.append(piece)
            size += len(piece)
    return " ".join("".join(parts).split())[:chars]


# -- page kinds -----------------------------------------------------------------


def _schema_types(root: lxml.html.HtmlElement) -> Iterator[str]:
    """The schema.org types a page declares for itself: JSON-LD top level, @graph, mainEntity; microdata."""
    for data in jsonld_documents(root):
        nodes = data if isinstance(data, list) else [data]
        queue = list(nodes[:_MAX_NODES])
        for node in queue[:_MAX_NODES]:
            if not isinstance(node, dict):
                continue
            graph = node.get("@graph")
            if isinstance(graph, list):
                queue.extend(graph[:_MAX_NODES])
            main = node.get("mainEntity")
            if isinstance(main, dict):
                queue.append(main)
            kinds = node.get("@type")
            for kind in kinds if isinstance(kinds, list) else [kinds]:
                if isinstance(kind, str):
                    yield kind.rsplit("/", 1)[-1].rsplit(":", 1)[-1].lower()
    for element in root.xpath("//*[@itemscope and @itemtype and not(ancestor::*[@itemscope])]")[:_MAX_NODES]:
        for itemtype in (element.get("itemtype") or "").split():
            yield itemtype.rstrip("/").rsplit("/", 1)[-1].lower()


def _meta(root: lxml.html.HtmlElement) -> dict[str, str]:
    values: dict[str, str] = {}
    for meta in root.iter("meta"):
        for attr in ("property", "name"):
            key = (meta.get(attr) or "").strip().lower()
            if key and meta.get("content") is not None:
                values.setdefault(key, (meta.get("content") or "").strip())
    return values


class _Weights:
    def __init__(self) -> None:
        self.score: Counter[str] = Counter()
        self.evidence: list[str] = []

    def add(self, kind: str, weight: int, why: str) -> None:
        if kind == ARTICLE:
            self.score["blog_post"] += weight
            self.score["news_article"] += weight
        else:
            self.score[kind] += weight
        self.evidence.append(why)

    def add_found(self, kind: str, found: int, why: str) -> None:
        """Weigh ``found`` cue phrases: 1 more than found, at most 3; none weighs nothing."""
        if found:
            self.add(kind, min(3, 1 + found), f"{why}:{found}")

    def add_headings(self, kind: str, found: int, why: str) -> None:
        """Weigh ``found`` telling headings: two or three weigh 2, four or more 3; fewer weigh nothing."""
        if found >= 2:
            self.add(kind, 2 if found < 4 else 3, f"{why}:{found}")

    def decide(self) -> PageLabel:
        if not self.score:
            return PageLabel("other", tuple(self.evidence))
        best = max(self.score.values())
        if best < MIN_WEIGHT:
            return PageLabel("other", tuple(self.evidence))
        kind = next(k for k in _TIE_ORDER if self.score.get(k, 0) == best)
        return PageLabel(kind, tuple(self.evidence))


def _from_declarations(root: lxml.html.HtmlElement, meta: dict[str, str], weights: _Weights) -> None:
    for schema in dict.fromkeys(_schema_types(root)):
        if schema in SCHEMA_TYPES:
            weights.add(*SCHEMA_TYPES[schema], f"schema:{schema}")
    og = meta.get("og:type", "").lower()
    if og in OG_TYPES:
        weights.add(*OG_TYPES[og], f"og:{og}")
    if "product:price:amount" in meta or "og:price:amount" in meta:
        weights.add("product_page", 3, "meta:price")
    if "news_keywords" in meta or "article:section" in meta:
        weights.add("news_article", 2, "meta:news")
    if "article:published_time" in meta:
        weights.add(ARTICLE, 1, "meta:published")


def _from_url(url: str, weights: _Weights) -> None:
    parts = urlsplit(url)
    host = (parts.hostname or "").split(".")
    if host and host[0] in HOST_WORDS:
        weights.add(*HOST_WORDS[host[0]], f"host:{host[0]}")
    if "readthedocs" in (parts.hostname or ""):
        weights.add("documentation", 3, "host:readthedocs")
    for word in dict.fromkeys(w for w in parts.path.lower().split("/") if w):
        if word in PATH_WORDS:
            weights.add(*PATH_WORDS[word], f"path:{word}")
        elif word.startswith(("tutorial", "how-to-")):
            weights.add("tutorial", 3, "path:tutorial*")
    if DATE_PATH.search(parts.path):
        weights.add(ARTICLE, 2, "path:date")


def _main(root: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    for xpath in ("//main", "//article", "//*[@role='main']", "//body"):
        found = root.xpath(xpath)
        if found:
            return found[0]  # type: ignore[no-any-return]
    return root


def _shop_cues(root: lxml.html.HtmlElement, text: str, weights: _Weights) -> None:
    buttons = " ".join(_text(b) for b in root.xpath("//button|//input[@type='submit']|//a[contains(@class,'btn')]"))
    if CART.search(buttons) or CART.search(text) or root.xpath("//form[contains(@action,'cart')]"):
        weights.add("product_page", 3, "content:cart")
    prices = root.xpath("//*[@itemprop='price' or contains(@class,'price')]")
    if prices or (PRICE.search(text) and STOCK.search(text)):
        weights.add("product_page", 2, "content:price")


def _teaching_cues(root: lxml.html.HtmlElement, main: lxml.html.HtmlElement, weights: _Weights) -> None:
    headings = [_short_text(h) for h in islice(main.iter(*_HEADINGS), _MAX_HEADINGS)]
    title = next((_short_text(t) for t in root.iter("title")), "")
    h1 = next((_short_text(h) for h in root.iter("h1")), "")
    if TUTORIAL_TITLE.search(h1) or TUTORIAL_TITLE.search(title):
        weights.add("tutorial", 3, "title:tutorial")
    weights.add_found("tutorial", len(TUTORIAL_WORDS.findall(_text(main)[:20_000])), "content:tutorial")
    weights.add_headings("tutorial", sum(1 for h in headings if TUTORIAL_HEADINGS.search(h)), "headings:steps")
    weights.add_headings("documentation", sum(1 for h in headings if DOC_HEADINGS.search(h)), "headings:reference")
    if main.xpath(".//dl[contains(@class,'function') or contains(@class,'class') or contains(@class,'method')]"):
        weights.add("documentation", 3, "content:api-signature")
    if len(main.xpath(".//pre|.//code")) >= 3:
        weights.add("documentation", 1, "content:code")
        weights.add("tutorial", 1, "content:code")
    if root.xpath(
        "//nav//*[contains(@class,'toc') or contains(@class,'sidebar')]|//*[contains(@class,'sphinx')]"
        "|//*[contains(@class,'docs')]|//*[contains(@class,'md-nav')]"
    ):
        weights.add("documentation", 2, "markup:docs-nav")


def _writing_cues(root: lxml.html.HtmlElement, main: lxml.html.HtmlElement, text: str, weights: _Weights) -> None:
    weights.add_found("news_article", len(NEWS_WORDS.findall(text)), "content:news")
    if root.xpath("//*[contains(@class,'dateline')]|//*[contains(@class,'byline')]"):
        weights.add("news_article", 1, "markup:byline")
    if BYLINE.search(main.text_content()[:3000] if len(main) else ""):
        weights.add(ARTICLE, 1, "content:byline")
    weights.add_found("blog_post", len(BLOG_WORDS.findall(text)), "content:blog")
    if root.xpath("//*[@id='comments' or @id='respond' or contains(@class,'comments')]"):
        weights.add("blog_post", 2, "markup:comments")


def _shape_cues(root: lxml.html.HtmlElement, main: lxml.html.HtmlElement, weights: _Weights) -> None:
    listed = main.xpath(".//article[not(ancestor::aside)]")
    for heading in islice(main.iter("h2", "h3"), _MAX_HEADINGS):  # a heading that is all one link
        if (
            heading is not main
            and (link := heading.find("a")) is not None
            and _short_text(heading) == _short_text(link)
        ):
            listed.append(heading)
    if len(listed) >= 3 and len({id(e.getparent()) for e in listed}) < len(listed):
        weights.add("other", 3, f"markup:listing:{len(listed)}")  # an index of posts is not a post
    if root.xpath("//form[.//input[@type='password']]"):
        weights.add("other", 3, "markup:login")


def label_url(url: str) -> PageLabel:
    """The kind of a page that is no HTML (a PDF, plain text), from its address alone."""
    weights = _Weights()
    _from_url(url, weights)
    return weights.decide()


def label_page(root: lxml.html.HtmlElement, url: str) -> PageLabel:
    """The kind of the page at ``url`` whose tree is ``root``."""
    weights = _Weights()
    _from_declarations(root, _meta(root), weights)
    _from_url(url, weights)
    body = root.find("body")
    text = _text(body)[:20_000] if body is not None else ""
    main = _main(root)
    _shop_cues(root, text, weights)
    _teaching_cues(root, main, weights)
    _writing_cues(root, main, text, weights)
    _shape_cues(root, main, weights)
    return weights.decide()


# -- both -------------------------------------------------------------------------


def label_links(root: lxml.html.HtmlElement, url: str) -> list[LinkLabel]:
    """Each distinct outgoing http(s) link of the page, in page order, with its context (``linkcontext``)."""
    return list(link_labelling(root, url).labels)


def label_html(body: bytes, url: str, *, encoding: str | None = None) -> tuple[PageLabel, tuple[LinkLabel, ...]]:
    """The page's kind and its links' contexts, from the response body."""
    root = parse_document(body, encoding=encoding)
    if root is None:
        return PageLabel("other", ("empty",)), ()
    return label_page(root, url), link_labelling(root, url).labels
