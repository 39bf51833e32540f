"""Labels, not text (OMN-LABELS): the kind of a page and the context of each of its links.

A page is a ``blog_post``, ``news_article``, ``tutorial``, ``documentation``,
``product_page`` or ``other``. Evidence is weighed, strongest first: what the
page says it is (schema.org types in JSON-LD or microdata, ``og:type``), where
it lives (its URL path), and what it is made of (prices and carts, bylines and
datelines, comments, step headings, API signatures). The kind with the most
weight wins; below ``MIN_WEIGHT`` a page is ``other``.

A link is an ``advertisement`` (``rel="sponsored"``, an ad container: class or
id words such as ad, ads, advert, sponsor, promo; ad-server URLs; a container
labelled "Advertisement"), a ``citation`` (inside references or footnotes, or
set in running text), or ``navigation`` (menus, headers, footers, asides,
breadcrumbs, pagination, tag lists, and any link standing alone in a list of
links). Only http(s) links leaving the page are labelled; in-page anchors are not.

Labelling never raises on content and keeps no text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import lxml.html  # type: ignore[import-untyped,unused-ignore]
from lxml import etree
from w3lib.encoding import html_to_unicode

from synapsecrawl.extract.html import jsonld_documents

__all__ = [
    "LABELLING_PROFILES",
    "LINK_CONTEXTS",
    "MIN_WEIGHT",
    "PAGE_KINDS",
    "LinkLabel",
    "PageLabel",
    "label_html",
    "label_links",
    "label_page",
    "parse_document",
]

LABELLING_PROFILES = frozenset({"omniscientebot"})  # OMN-LABELS
PAGE_KINDS = ("blog_post", "news_article", "tutorial", "documentation", "product_page", "other")
LINK_CONTEXTS = ("citation", "navigation", "advertisement")
MIN_WEIGHT = 3
_ARTICLE = "article"  # evidence for blog_post and news_article alike
_TIE_ORDER = ("product_page", "tutorial", "documentation", "blog_post", "news_article", "other")
_MAX_NODES = 2_000

_SCHEMA_TYPES: dict[str, tuple[str, int]] = {
    "blogposting": ("blog_post", 6),
    "blog": ("blog_post", 4),
    "newsarticle": ("news_article", 6),
    "reportagenewsarticle": ("news_article", 6),
    "analysisnewsarticle": ("news_article", 6),
    "opinionnewsarticle": ("news_article", 6),
    "backgroundnewsarticle": ("news_article", 6),
    "reviewnewsarticle": ("news_article", 6),
    "liveblogposting": ("news_article", 5),
    "howto": ("tutorial", 6),
    "course": ("tutorial", 4),
    "learningresource": ("tutorial", 3),
    "techarticle": ("documentation", 3),
    "apireference": ("documentation", 6),
    "softwaresourcecode": ("documentation", 2),
    "product": ("product_page", 6),
    "productgroup": ("product_page", 6),
    "productmodel": ("product_page", 6),
    "individualproduct": ("product_page", 6),
    "article": (_ARTICLE, 3),
    "aboutpage": ("other", 5),
    "contactpage": ("other", 5),
    "searchresultspage": ("other", 5),
    "profilepage": ("other", 4),
    "checkoutpage": ("other", 5),
    "collectionpage": ("other", 3),
    "faqpage": ("other", 3),
    "qapage": ("other", 4),
    "discussionforumposting": ("other", 4),
    "event": ("other", 3),
    "recipe": ("other", 3),
}
_OG_TYPES: dict[str, tuple[str, int]] = {
    "article": (_ARTICLE, 2),
    "blog": ("blog_post", 2),
    "product": ("product_page", 4),
    "og:product": ("product_page", 4),
    "product.item": ("product_page", 4),
    "product.group": ("product_page", 4),
    "profile": ("other", 2),
    "book": ("other", 2),
}
_PATH_WORDS: dict[str, tuple[str, int]] = {
    "blog": ("blog_post", 3), "blogs": ("blog_post", 3), "post": ("blog_post", 1), "posts": ("blog_post", 2),
    "weblog": ("blog_post", 3),
    "news": ("news_article", 3), "story": ("news_article", 1), "stories": ("news_article", 1),
    "world": ("news_article", 1), "politics": ("news_article", 2), "business": ("news_article", 1),
    "docs": ("documentation", 3), "doc": ("documentation", 3), "documentation": ("documentation", 3),
    "reference": ("documentation", 3), "api": ("documentation", 2), "manual": ("documentation", 3),
    "library": ("documentation", 1), "man": ("documentation", 2), "handbook": ("documentation", 2),
    "tutorial": ("tutorial", 4), "tutorials": ("tutorial", 4), "howto": ("tutorial", 3), "how-to": ("tutorial", 3),
    "learn": ("tutorial", 2), "getting-started": ("tutorial", 2), "guides": ("tutorial", 1),
    "product": ("product_page", 3), "products": ("product_page", 3), "p": ("product_page", 1),
    "dp": ("product_page", 3), "item": ("product_page", 2), "shop": ("product_page", 2),
    "store": ("product_page", 1),
    "about": ("other", 2), "contact": ("other", 3), "login": ("other", 3), "search": ("other", 2),
    "forum": ("other", 2), "questions": ("other", 1), "careers": ("other", 2), "privacy": ("other", 2),
}  # fmt: skip
_HOST_WORDS = {"blog": ("blog_post", 2), "news": ("news_article", 2), "docs": ("documentation", 3),
               "shop": ("product_page", 2), "store": ("product_page", 2), "learn": ("tutorial", 1)}
_DATE_PATH = re.compile(r"/(?:19|20)\d\d/(?:0?[1-9]|1[0-2])(?:/|$)")

_CART = re.compile(
    r"\b(?:add to (?:cart|basket|bag)|buy now|in den warenkorb|ajouter au panier|dodaj do koszyka)\b", re.IGNORECASE
)
_STOCK = re.compile(r"\b(?:in stock|out of stock|free shipping|ships in|sku)\b", re.IGNORECASE)
_PRICE = re.compile(r"(?:[$€£¥]\s?\d[\d.,]*|\d[\d.,]*\s?(?:€|zł|USD|EUR|GBP|PLN))")
_BYLINE = re.compile(r"^\s*(?:by|von|par|por)\s+[A-ZÀ-Ž]", re.MULTILINE)
_NEWS_WORDS = re.compile(
    r"\b(?:reporting by|editing by|\(AP\)|\(Reuters\)|Associated Press|correspondent|told reporters|"
    r"said in a statement|breaking news|updated \d|last updated)\b",
    re.IGNORECASE,
)
_BLOG_WORDS = re.compile(
    r"\b(?:posted (?:by|on|in)|leave a (?:comment|reply)|\d+ comments?|filed under|tagged|subscribe to my|"
    r"my (?:thoughts|journey|experience)|i (?:think|wrote|built|decided|learned))\b",
    re.IGNORECASE,
)
_TUTORIAL_TITLE = re.compile(
    r"^(?:how to|how do i|tutorial|getting started|step[- ]by[- ]step|a beginner'?s guide|beginner'?s guide|"
    r"learn(?:ing)? |build(?:ing)? (?:a|an|your)|create (?:a|an|your)|introduction to|part \d)|tutorial\b",
    re.IGNORECASE,
)
_TUTORIAL_WORDS = re.compile(
    r"\b(?:in this (?:tutorial|guide|lesson|walkthrough)|this tutorial|step[- ]by[- ]step|"
    r"you(?:'ll| will) (?:learn|build|create)|walk you through|follow along)\b",
    re.IGNORECASE,
)
_TUTORIAL_HEADINGS = re.compile(
    r"^(?:step \d+|prerequisites|what you(?:'ll| will) (?:learn|need|build)|before you begin|next steps|"
    r"conclusion|requirements|set ?up|introduction)\b",
    re.IGNORECASE,
)
_DOC_HEADINGS = re.compile(
    r"^(?:parameters|arguments|returns?|return value|raises|exceptions|attributes|methods|properties|"
    r"syntax|signature|see also|options|synopsis|description|examples?|api reference|configuration|usage|"
    r"deprecated|since version|type|default)\b",
    re.IGNORECASE,
)
_REFERENCE_HEADING = re.compile(
    r"\b(?:references?|sources?|citations?|bibliography|further reading|external links|notes|works cited|"
    r"specifications?|standards?)\b",
    re.IGNORECASE,
)
_AD_LABEL = re.compile(
    r"^\s*(?:advertisement|advertising|sponsored(?: content| links?| by)?|promoted|ad|ads|anzeige|publicit[ée]|"
    r"reklama|partner content|paid (?:post|content))\s*$",
    re.IGNORECASE,
)
_AD_HOSTS = re.compile(
    r"(?:^|\.)(?:doubleclick\.net|googleadservices\.com|googlesyndication\.com|adnxs\.com|taboola\.com|"
    r"outbrain\.com|criteo\.com|amazon-adsystem\.com|adsrvr\.org|adform\.net|media\.net|revcontent\.com)$"
)
_AD_URL = re.compile(
    r"[?&]utm_medium=(?:cpc|ppc|paid|display|banner|sponsored|affiliate)\b|/aclk\?|/adclick|/ads?/click", re.IGNORECASE
)

_WORDS = re.compile(r"[a-z0-9]+")
_PROSE_WORDS = re.compile(r"[^\W\d_]{2,}")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_AD_TOKENS = frozenset({
    "ad", "ads", "advert", "adverts", "advertisement", "advertisements", "advertising", "adsbygoogle",
    "adslot", "adunit", "adbox", "adcontainer", "adwrapper", "sponsor", "sponsors", "sponsored", "promo",
    "promos", "promoted", "promotion", "dfp", "taboola", "outbrain", "affiliate",
})  # fmt: skip
_NAV_TOKENS = frozenset({
    "nav", "navbar", "navigation", "menu", "menubar", "breadcrumb", "breadcrumbs", "crumbs", "pagination",
    "pager", "paging", "sidebar", "toc", "footer", "header", "masthead", "topbar", "toolbar", "subnav",
    "related", "share", "sharing", "social", "tags", "tag", "categories", "category", "skip", "byline",
    "author", "meta", "postmeta", "widget", "prev", "next", "previous", "dropdown",
})  # fmt: skip
_CITE_TOKENS = frozenset({
    "references", "reflist", "footnotes", "footnote", "citations", "citation", "cite",
    "sources", "bibliography", "endnotes", "refs",
})  # fmt: skip
_NAV_TAGS = frozenset({"nav", "header", "footer", "aside", "menu"})
_NAV_ROLES = frozenset({"navigation", "banner", "contentinfo", "menu", "menubar", "complementary", "tablist"})
_NAV_RELS = frozenset({"next", "prev", "previous", "tag", "author", "home", "category", "bookmark", "up"})
_PROSE = frozenset({"p", "blockquote", "figcaption", "dd", "td", "th"})
_CONTEXT_RANK = {"navigation": 0, "citation": 1, "advertisement": 2}  # a URL met twice keeps its strongest
_BLOCKS = frozenset({"p", "li", "dd", "dt", "td", "th", "blockquote", "figcaption", "div", "section", "article",
                     "main", "body", "h1", "h2", "h3", "h4", "h5", "h6", "ol", "ul", "dl", "table", "figure"})
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


@dataclass(frozen=True)
class PageLabel:
    """A page's kind and the evidence that decided it (e.g. ``schema:NewsArticle``)."""

    kind: str
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class LinkLabel:
    """An outgoing link and its context on the page."""

    url: str
    context: str


def parse_document(body: bytes, *, encoding: str | None = None) -> lxml.html.HtmlElement | None:
    """The HTML tree of ``body`` (``encoding``: the HTTP charset, if any); None when empty."""
    header = f"text/html; charset={encoding}" if encoding else "text/html"
    try:
        _, text = html_to_unicode(header, body)
        parser = lxml.html.HTMLParser(encoding="utf-8", huge_tree=True, remove_comments=True, no_network=True)
        root = lxml.html.document_fromstring(text.encode("utf-8", "replace"), parser=parser)
    except (etree.ParserError, ValueError, LookupError):
        return None
    return root if isinstance(root, lxml.html.HtmlElement) else None


def _tokens(element: lxml.html.HtmlElement) -> set[str]:
    raw = f"{element.get('class') or ''} {element.get('id') or ''}"
    return set(_WORDS.findall(_CAMEL.sub(" ", raw).lower()))


def _text(element: lxml.html.HtmlElement) -> str:
    try:
        return " ".join(element.text_content().split())
    except ValueError:
        return ""


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
        if kind == _ARTICLE:
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
        if schema in _SCHEMA_TYPES:
            weights.add(*_SCHEMA_TYPES[schema], f"schema:{schema}")
    og = meta.get("og:type", "").lower()
    if og in _OG_TYPES:
        weights.add(*_OG_TYPES[og], f"og:{og}")
    if "product:price:amount" in meta or "og:price:amount" in meta:
        weights.add("product_page", 3, "meta:price")
    if "news_keywords" in meta or "article:section" in meta:
        weights.add("news_article", 2, "meta:news")
    if "article:published_time" in meta:
        weights.add(_ARTICLE, 1, "meta:published")


def _from_url(url: str, weights: _Weights) -> None:
    parts = urlsplit(url)
    host = (parts.hostname or "").split(".")
    if host and host[0] in _HOST_WORDS:
        weights.add(*_HOST_WORDS[host[0]], f"host:{host[0]}")
    if "readthedocs" in (parts.hostname or ""):
        weights.add("documentation", 3, "host:readthedocs")
    for word in dict.fromkeys(w for w in parts.path.lower().split("/") if w):
        if word in _PATH_WORDS:
            weights.add(*_PATH_WORDS[word], f"path:{word}")
        elif word.startswith(("tutorial", "how-to-")):
            weights.add("tutorial", 3, "path:tutorial*")
    if _DATE_PATH.search(parts.path):
        weights.add(_ARTICLE, 2, "path:date")


def _main(root: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    for xpath in ("//main", "//article", "//*[@role='main']", "//body"):
        found = root.xpath(xpath)
        if found:
            return found[0]  # type: ignore[no-any-return]
    return root


def _shop_cues(root: lxml.html.HtmlElement, text: str, weights: _Weights) -> None:
    buttons = " ".join(_text(b) for b in root.xpath("//button|//input[@type='submit']|//a[contains(@class,'btn')]"))
    if _CART.search(buttons) or _CART.search(text) or root.xpath("//form[contains(@action,'cart')]"):
        weights.add("product_page", 3, "content:cart")
    prices = root.xpath("//*[@itemprop='price' or contains(@class,'price')]")
    if prices or (_PRICE.search(text) and _STOCK.search(text)):
        weights.add("product_page", 2, "content:price")


def _teaching_cues(root: lxml.html.HtmlElement, main: lxml.html.HtmlElement, weights: _Weights) -> None:
    headings = [_text(h) for h in main.iter(*_HEADINGS)]
    title = next((_text(t) for t in root.iter("title")), "")
    h1 = next((_text(h) for h in root.iter("h1")), "")
    if _TUTORIAL_TITLE.search(h1) or _TUTORIAL_TITLE.search(title):
        weights.add("tutorial", 3, "title:tutorial")
    weights.add_found("tutorial", len(_TUTORIAL_WORDS.findall(_text(main)[:20_000])), "content:tutorial")
    weights.add_headings("tutorial", sum(1 for h in headings if _TUTORIAL_HEADINGS.search(h)), "headings:steps")
    weights.add_headings("documentation", sum(1 for h in headings if _DOC_HEADINGS.search(h)), "headings:reference")
    if main.xpath(".//dl[contains(@class,'function') or contains(@class,'class') or contains(@class,'method')]"):
        weights.add("documentation", 3, "content:api-signature")
    if len(main.xpath(".//pre|.//code")) >= 3:
        weights.add("documentation", 1, "content:code")
        weights.add("tutorial", 1, "content:code")
    if root.xpath("//nav//*[contains(@class,'toc') or contains(@class,'sidebar')]|//*[contains(@class,'sphinx')]"
                  "|//*[contains(@class,'docs')]|//*[contains(@class,'md-nav')]"):
        weights.add("documentation", 2, "markup:docs-nav")


def _writing_cues(root: lxml.html.HtmlElement, main: lxml.html.HtmlElement, text: str, weights: _Weights) -> None:
    weights.add_found("news_article", len(_NEWS_WORDS.findall(text)), "content:news")
    if root.xpath("//*[contains(@class,'dateline')]|//*[contains(@class,'byline')]"):
        weights.add("news_article", 1, "markup:byline")
    if _BYLINE.search(main.text_content()[:3000] if len(main) else ""):
        weights.add(_ARTICLE, 1, "content:byline")
    weights.add_found("blog_post", len(_BLOG_WORDS.findall(text)), "content:blog")
    if root.xpath("//*[@id='comments' or @id='respond' or contains(@class,'comments')]"):
        weights.add("blog_post", 2, "markup:comments")


def _shape_cues(root: lxml.html.HtmlElement, main: lxml.html.HtmlElement, weights: _Weights) -> None:
    listed = main.xpath(".//article[not(ancestor::aside)]|.//h2[a and normalize-space(.)=normalize-space(a)]"
                        "|.//h3[a and normalize-space(.)=normalize-space(a)]")
    if len(listed) >= 3 and len({id(e.getparent()) for e in listed}) < len(listed):
        weights.add("other", 3, f"markup:listing:{len(listed)}")  # an index of posts is not a post
    if root.xpath("//form[.//input[@type='password']]"):
        weights.add("other", 3, "markup:login")


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


# -- link contexts ----------------------------------------------------------------


def _absolute(base: str, href: str | None) -> str:
    href = (href or "").strip()
    if not href or href.startswith("#"):
        return ""
    try:
        url = urljoin(base, href).split("#", 1)[0]
    except ValueError:
        return ""
    return url if url[:8].lower().startswith(("http://", "https://")) else ""


def _is_ad_url(url: str) -> bool:
    return bool(_AD_HOSTS.search(urlsplit(url).hostname or "") or _AD_URL.search(url))


def _is_ad_attribute(name: str) -> bool:
    return name == "data-ad" or name.startswith(("data-ad-", "data-ad_", "data-google-query-id"))


def _labelled_as_ad(element: lxml.html.HtmlElement) -> bool:
    """A container marked for readers as an ad: aria-label, or a short caption of its own."""
    label = f"{element.get('aria-label') or ''} {element.get('title') or ''}".lower()
    if "advert" in label or "sponsor" in label:
        return True
    for child in element.iterchildren():
        if isinstance(child.tag, str) and child.tag not in ("a", "img") and len(child) == 0 and _AD_LABEL.match(
                child.text or ""):
            return True
    return bool(_AD_LABEL.match(element.text or ""))


def _is_content_root(element: lxml.html.HtmlElement) -> bool:
    return element.tag in ("main", "article") or element.get("role") == "main" or element.get(
        "itemprop") == "articleBody"


def _preceding_heading(element: lxml.html.HtmlElement) -> str:
    for previous in element.itersiblings(preceding=True):
        if isinstance(previous.tag, str) and previous.tag in _HEADINGS:
            return _text(previous)
        if isinstance(previous.tag, str) and previous.tag in ("p", "ul", "ol", "div", "table", "pre"):
            break
    return ""


def _is_advertisement(anchor: lxml.html.HtmlElement, url: str, chain: list[lxml.html.HtmlElement]) -> bool:
    if "sponsored" in (anchor.get("rel") or "").lower().split() or _is_ad_url(url):
        return True
    for element in chain:
        if element.tag in ("body", "html"):
            return False
        if element.tag == "ins" or _tokens(element) & _AD_TOKENS or any(map(_is_ad_attribute, element.attrib)):
            return True
        if element is not anchor and _labelled_as_ad(element):
            return True
    return False


def _marked_context(chain: list[lxml.html.HtmlElement]) -> str | None:
    """What the markup around the link says: references (citation) or page furniture (navigation)."""
    for element in chain:
        if element.tag in ("body", "html") or _is_content_root(element):
            return None  # wrappers around the main content say nothing about one link in it
        tokens = _tokens(element)
        if tokens & _CITE_TOKENS or element.tag == "cite":
            return "citation"
        if element.tag in ("ol", "ul", "dl", "table") and _REFERENCE_HEADING.search(_preceding_heading(element)):
            return "citation"
        if element.tag in _NAV_TAGS or (element.get("role") or "").lower() in _NAV_ROLES or tokens & _NAV_TOKENS:
            return "navigation"
    return None


def _context(anchor: lxml.html.HtmlElement, url: str) -> str:
    chain = [anchor, *anchor.iterancestors()]
    if _is_advertisement(anchor, url, chain):
        return "advertisement"
    marked = _marked_context(chain)
    if marked is not None:
        return marked
    if set((anchor.get("rel") or "").lower().split()) & _NAV_RELS:
        return "navigation"
    return "citation" if _in_prose(anchor) else "navigation"


def _adjacent_words(anchor: lxml.html.HtmlElement) -> int:
    """Words written right before and after the link, in the same run of text."""
    previous = anchor.getprevious()
    parent = anchor.getparent()
    before = (previous.tail if previous is not None and previous.tag != "br" else None) if previous is not None else (
        parent.text if parent is not None else None)
    return len(_PROSE_WORDS.findall(before or "")) + len(_PROSE_WORDS.findall(anchor.tail or ""))


def _in_prose(anchor: lxml.html.HtmlElement) -> bool:
    """Whether the link is set in running text: words next to it, in a block holding more words than links."""
    if _adjacent_words(anchor) < 1:
        return False
    block = next((e for e in anchor.iterancestors() if e.tag in _BLOCKS or e.tag in _PROSE), None)
    if block is None:
        return False
    own = len(_text(block))
    linked = sum(len(_text(a)) for a in block.iter("a"))
    prose = own - linked
    if block.tag in _PROSE:
        return prose >= 20
    if block.tag in ("li", "dt"):
        return prose >= 30
    return prose >= 40 and linked <= own / 2


def label_links(root: lxml.html.HtmlElement, url: str) -> list[LinkLabel]:
    """Each distinct outgoing http(s) link of the page, in page order, with its context."""
    base = next((b.get("href") for b in root.iter("base") if b.get("href")), None)
    base_url = urljoin(url, base) if base else url
    here = url.split("#", 1)[0]
    labels: dict[str, LinkLabel] = {}
    for anchor in root.iter("a", "area"):
        target = _absolute(base_url, anchor.get("href"))
        if not target or target == here:
            continue
        context = _context(anchor, target)
        known = labels.get(target)
        if known is None or _CONTEXT_RANK[context] > _CONTEXT_RANK[known.context]:
            labels[target] = LinkLabel(target, context)
    return list(labels.values())


def label_html(body: bytes, url: str, *, encoding: str | None = None) -> tuple[PageLabel, tuple[LinkLabel, ...]]:
    """The page's kind and its links' contexts, from the response body."""
    root = parse_document(body, encoding=encoding)
    if root is None:
        return PageLabel("other", ("empty",)), ()
    return label_page(root, url), tuple(label_links(root, url))
