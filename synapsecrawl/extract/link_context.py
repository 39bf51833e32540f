"""The context of each link of a page (OMN-LABELS): ``citation``, ``navigation`` or ``advertisement``.

A link is an ``advertisement`` (``rel="sponsored"``, an ad container: class or id words such as
ad, ads, advert, sponsor, promo; ad-server URLs; a container labelled "Advertisement"), a
``citation`` (inside references or footnotes, or set in running text), or ``navigation`` (menus,
headers, footers, asides, breadcrumbs, pagination, tag lists, and any link standing alone in a
list of links). Only http(s) links leaving the page are labelled; in-page anchors are not.

The work is linear in the page: what an element says about the links inside it (an ad
container, a menu, a reference list, its text's length) is worked out once per element and
remembered, never again for each link it holds; and at most ``MAX_LINKS`` anchors are examined.
``LinkLabelling.examined`` counts the elements looked at, so tests can hold the bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import lxml.html  # type: ignore[import-untyped,unused-ignore]

from synapsecrawl.extract.bounds import MAX_LINKS

__all__ = ["LINK_CONTEXTS", "LinkLabel", "LinkLabelling", "link_labelling"]

LINK_CONTEXTS = ("citation", "navigation", "advertisement")

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
_BLOCKS = frozenset(
    {
        "p",
        "li",
        "dd",
        "dt",
        "td",
        "th",
        "blockquote",
        "figcaption",
        "div",
        "section",
        "article",
        "main",
        "body",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "ol",
        "ul",
        "dl",
        "table",
        "figure",
    }
)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_HEADING_BREAKS = frozenset({"p", "ul", "ol", "div", "table", "pre"})
_NO_VERDICT = "none"  # an element that says nothing about its links: ask its parent


@dataclass(frozen=True)
class LinkLabel:
    """An outgoing link and its context on the page."""

    url: str
    context: str


@dataclass(frozen=True)
class LinkLabelling:
    """A page's link labels, the elements examined for them, and the bounds met (one phrase each)."""

    labels: tuple[LinkLabel, ...]
    examined: int
    bounded: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Length:
    """``len(" ".join(s.split()))`` of a string, in a form two strings' lengths add up in."""

    chars: int = 0  # characters that are not whitespace
    words: int = 0
    starts_in_word: bool = False
    ends_in_word: bool = False
    empty: bool = True

    @classmethod
    def of(cls, text: str | None) -> _Length:
        if not text:
            return _EMPTY
        words = text.split()
        return _Length(sum(map(len, words)), len(words), not text[0].isspace(), not text[-1].isspace(), False)

    def __add__(self, other: _Length) -> _Length:
        if other.empty:
            return self
        if self.empty:
            return other
        joined = 1 if self.ends_in_word and other.starts_in_word else 0  # "foo" + "bar" is one word
        return _Length(
            self.chars + other.chars, self.words + other.words - joined, self.starts_in_word, other.ends_in_word, False
        )

    @property
    def value(self) -> int:
        return self.chars + max(0, self.words - 1)


_EMPTY = _Length()


def _tokens(element: lxml.html.HtmlElement) -> set[str]:
    raw = f"{element.get('class') or ''} {element.get('id') or ''}"
    return set(_WORDS.findall(_CAMEL.sub(" ", raw).lower()))


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
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        host = ""
    return bool(_AD_HOSTS.search(host) or _AD_URL.search(url))


def _is_ad_attribute(name: str) -> bool:
    return name == "data-ad" or name.startswith(("data-ad-", "data-ad_", "data-google-query-id"))


def _is_content_root(element: lxml.html.HtmlElement) -> bool:
    return (
        element.tag in ("main", "article") or element.get("role") == "main" or element.get("itemprop") == "articleBody"
    )


def _tag(element: lxml.html.HtmlElement) -> str:
    return element.tag if isinstance(element.tag, str) else ""


class _Page:
    """One page's elements, each judged once; ``examined`` counts the judgements."""

    def __init__(self) -> None:
        self.examined = 0
        self._ad: dict[lxml.html.HtmlElement, bool] = {}
        self._marked: dict[lxml.html.HtmlElement, str | None] = {}
        self._heading: dict[lxml.html.HtmlElement, str] = {}
        self._length: dict[lxml.html.HtmlElement, tuple[_Length, int]] = {}

    # -- what the markup around a link says -------------------------------------------

    def _own_ad(self, element: lxml.html.HtmlElement, *, anchor: bool) -> bool | None:
        """True: an ad container; False: body/html, nothing above counts; None: ask the parent."""
        self.examined += 1
        if element.tag in ("body", "html"):
            return False
        if element.tag == "ins" or _tokens(element) & _AD_TOKENS or any(map(_is_ad_attribute, element.attrib)):
            return True
        if not anchor and self._labelled_as_ad(element):
            return True
        return None

    def _labelled_as_ad(self, element: lxml.html.HtmlElement) -> bool:
        """A container marked for readers as an ad: aria-label, or a short caption of its own."""
        label = f"{element.get('aria-label') or ''} {element.get('title') or ''}".lower()
        if "advert" in label or "sponsor" in label:
            return True
        for child in element.iterchildren():
            self.examined += 1
            if (
                isinstance(child.tag, str)
                and child.tag not in ("a", "img")
                and len(child) == 0
                and _AD_LABEL.match(child.text or "")
            ):
                return True
        return bool(_AD_LABEL.match(element.text or ""))

    def _within(
        self, start: lxml.html.HtmlElement | None, memo: dict[lxml.html.HtmlElement, object], judge: object
    ) -> object:
        """The first verdict from ``start`` up (``judge(e)``: None to ask the parent), remembered for each element."""
        path: list[lxml.html.HtmlElement] = []
        verdict: object = None
        element = start
        while element is not None:
            if element in memo:
                verdict = memo[element]
                break
            own = judge(element)  # type: ignore[operator]
            path.append(element)
            if own is not None:
                verdict = own
                break
            element = element.getparent()
        for seen in path:
            memo[seen] = verdict
        return verdict

    def is_advertisement(self, anchor: lxml.html.HtmlElement, url: str) -> bool:
        if "sponsored" in (anchor.get("rel") or "").lower().split() or _is_ad_url(url):
            return True
        own = self._own_ad(anchor, anchor=True)
        if own is not None:
            return own
        above = self._within(
            anchor.getparent(),
            self._ad,  # type: ignore[arg-type]
            lambda element: self._own_ad(element, anchor=False),
        )
        return bool(above)

    def _own_mark(self, element: lxml.html.HtmlElement) -> str | None:
        self.examined += 1
        if element.tag in ("body", "html") or _is_content_root(element):
            return _NO_VERDICT  # wrappers around the main content say nothing about one link in it
        tokens = _tokens(element)
        if tokens & _CITE_TOKENS or element.tag == "cite":
            return "citation"
        if element.tag in ("ol", "ul", "dl", "table") and _REFERENCE_HEADING.search(self._preceding_heading(element)):
            return "citation"
        if element.tag in _NAV_TAGS or (element.get("role") or "").lower() in _NAV_ROLES or tokens & _NAV_TOKENS:
            return "navigation"
        return None

    def marked_context(self, anchor: lxml.html.HtmlElement) -> str | None:
        """What the markup around the link says: references (citation) or page furniture (navigation)."""
        verdict = self._within(anchor, self._marked, self._own_mark)  # type: ignore[arg-type]
        return None if verdict in (None, _NO_VERDICT) else str(verdict)

    def _preceding_heading(self, element: lxml.html.HtmlElement) -> str:
        """The text of the heading right before ``element``, past anything but a paragraph, list, div, table or pre."""
        path: list[lxml.html.HtmlElement] = []
        found = ""
        for previous in element.itersiblings(preceding=True):
            self.examined += 1
            tag = _tag(previous)
            if tag in _HEADINGS:
                found = " ".join(previous.text_content().split())
                break
            if tag in _HEADING_BREAKS:
                break
            if previous in self._heading:  # passed over by an element after it: the same heading
                found = self._heading[previous]
                break
            path.append(previous)
        for seen in [element, *path]:  # a sibling passed over has the same heading before it
            self._heading[seen] = found
        return found

    # -- running text -----------------------------------------------------------------------

    def _measure(self, block: lxml.html.HtmlElement) -> tuple[_Length, int]:
        """The length of ``block``'s text (as ``_text``) and of the text of the links in it, each element once."""
        if block in self._length:
            return self._length[block]
        stack: list[tuple[lxml.html.HtmlElement, bool]] = [(block, False)]
        while stack:
            element, children_done = stack.pop()
            if children_done:
                total = _Length.of(element.text if _tag(element) else None)
                linked = 0
                for child in element.iterchildren():
                    length, child_linked = self._length[child]
                    total = total + length + _Length.of(child.tail)
                    linked += child_linked
                if _tag(element) == "a":
                    linked += total.value
                self._length[element] = (total, linked)
                continue
            if element in self._length:
                continue
            self.examined += 1
            stack.append((element, True))
            stack.extend((child, False) for child in element.iterchildren() if child not in self._length)
        return self._length[block]

    def in_prose(self, anchor: lxml.html.HtmlElement) -> bool:
        """Whether the link is set in running text: words next to it, in a block holding more words than links."""
        if _adjacent_words(anchor) < 1:
            return False
        block = next((e for e in anchor.iterancestors() if e.tag in _BLOCKS or e.tag in _PROSE), None)
        if block is None:
            return False
        length, linked = self._measure(block)
        own = length.value
        prose = own - linked
        if block.tag in _PROSE:
            return prose >= 20
        if block.tag in ("li", "dt"):
            return prose >= 30
        return prose >= 40 and linked <= own / 2

    def context(self, anchor: lxml.html.HtmlElement, url: str) -> str:
        if self.is_advertisement(anchor, url):
            return "advertisement"
        marked = self.marked_context(anchor)
        if marked is not None:
            return marked
        if set((anchor.get("rel") or "").lower().split()) & _NAV_RELS:
            return "navigation"
        return "citation" if self.in_prose(anchor) else "navigation"


def _adjacent_words(anchor: lxml.html.HtmlElement) -> int:
    """Words written right before and after the link, in the same run of text."""
    previous = anchor.getprevious()
    parent = anchor.getparent()
    before = (
        (previous.tail if previous is not None and previous.tag != "br" else None)
        if previous is not None
        else (parent.text if parent is not None else None)
    )
    return len(_PROSE_WORDS.findall(before or "")) + len(_PROSE_WORDS.findall(anchor.tail or ""))


def link_labelling(root: lxml.html.HtmlElement, url: str) -> LinkLabelling:
    """Each distinct outgoing http(s) link of the page, in page order, with its context; the first
    ``MAX_LINKS`` anchors are examined."""
    base = next((b.get("href") for b in root.iter("base") if b.get("href")), None)
    try:
        base_url = urljoin(url, base) if base else url
    except ValueError:
        base_url = url
    here = url.split("#", 1)[0]
    page = _Page()
    labels: dict[str, LinkLabel] = {}
    bounded: tuple[str, ...] = ()
    targets: dict[str | None, str] = {}  # each distinct href resolved once: pages repeat theirs
    for examined, anchor in enumerate(root.iter("a", "area")):
        if examined == MAX_LINKS:
            bounded = (f"link labels: only the first {MAX_LINKS:,} links labelled",)
            break
        href = anchor.get("href")
        if (target := targets.get(href)) is None:
            target = targets[href] = _absolute(base_url, href)
        if not target or target == here:
            continue
        context = page.context(anchor, target)
        known = labels.get(target)
        if known is None or _CONTEXT_RANK[context] > _CONTEXT_RANK[known.context]:
            labels[target] = LinkLabel(target, context)
    return LinkLabelling(tuple(labels.values()), page.examined, bounded)
