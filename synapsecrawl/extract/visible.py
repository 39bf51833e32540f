"""The visible text of an element, and the main text of a page that marks its main content.

``visible_text`` reads what a reader sees of an element: without scripts,
styles, navigation and other chrome, one paragraph per block. It is the
fallback for pages trafilatura cannot read, and with ``main=True`` the reader
of a page's marked main element (``main_text``): list items start with
"- " and each line of preformatted text is a paragraph, as in trafilatura's own text.

Why by hand: trafilatura (2.3) reads a page by pruning and comparing whole
copies of the tree, even when the page says where its content is. A page
with one ``<main>`` (or ``role="main"``), or else one ``<article>``, has said
it; one walk over that element costs far less (docs/benchmarks.md). trafilatura stays the
reader of every other page, and of a marked element that looks like a link
list or holds a comment thread, which its boilerplate removal handles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain

import lxml.html  # type: ignore[import-untyped,unused-ignore]
from lxml import etree

__all__ = ["BREAK", "main_text", "may_hide", "visible_text"]

BREAK = "\ufdd0"  # a noncharacter: never meaningful in a page, removed from input before parsing
_SKIP = frozenset({
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "head", "title",
    "svg", "math", "iframe", "object", "embed", "select", "button",
})  # fmt: skip
_BLOCK = frozenset({
    "address", "article", "blockquote", "br", "caption", "dd", "details", "dialog", "div", "dl", "dt",
    "fieldset", "figcaption", "figure", "form", "h1", "h2", "h3", "h4", "h5", "h6", "hgroup", "hr",
    "legend", "li", "main", "ol", "p", "pre", "section", "summary", "table", "tbody", "tfoot", "thead",
    "tr", "ul",
})  # fmt: skip
# A marked element read as it is only while it reads as content: at most this share of its text in links
# (the quality set's marked pages have 1-6 %), and no comment thread (trafilatura leaves comments out).
_MAX_LINK_SHARE = 0.3
# ... unless it is too short for trafilatura to judge: under its MIN_EXTRACTED_SIZE (250 characters) trafilatura
# falls back to writing each text node as a line, so a sentence with three links came out as seven paragraphs
# ("Three chapters:", "watering", ",", ...). Read as it is, it is the sentence the page wrote.
_SHORT_CHARS = 250
_THREADS = frozenset({"div", "section", "ol", "ul", "article"})  # containers a comment thread is held in
_STARTS = _BLOCK | _THREADS | {"td", "th", "li", "pre"}  # the tags whose start _Text.start acts on
_ENDS = _BLOCK | _SKIP | {"td", "th", "pre"}  # ... whose end _Text.end acts on (li is a block)
_THREAD_NAMES = ("comment", "disqus")  # in an id or class (not a highlighter's <span class="hljs-comment">)
# What the walk does more with than take its text: the tags it acts on or skips, and nodes that are no element.
_ACTED = (*sorted(_STARTS | _ENDS | _SKIP), etree.Comment, etree.ProcessingInstruction, etree.Entity)
_HIDDEN = etree.XPath(".//*[@hidden]")  # tests every element: asked only when the source may hold one
# The hidden attribute's name as may_hide looks for it in a page's lowered bytes: any control byte counts as white
# space around it, which only answers yes more often.
_HIDDEN_NAME = re.compile(rb"hidden(?=[\x00-\x20/=>]|\Z)")
_BEFORE_NAME = frozenset({*range(0x21), *b"/'\""})
_MIN_CHARS = 1  # an empty marked element (filled in by a script) is left to trafilatura
# Measured in libxml2, not in Python loops.
_TEXT_LENGTH = etree.XPath("string-length(string(.))")
# A marked element that is mostly links because it holds a table of contents (the chapter pages of Sphinx docs) is
# read without its link lists, as trafilatura mostly reads it, at the cost of one walk rather than trafilatura's.
_LISTS = etree.XPath(".//ul[not(ancestor::ul or ancestor::ol)] | .//ol[not(ancestor::ul or ancestor::ol)]")
_LINK_LIST_SHARE = 0.8  # of a list's text in links (Sphinx's toctrees: 0.90-0.94; content lists seen: < 0.6)


class _CommentThread(Exception):
    """The marked element holds a comment thread: it is left to trafilatura."""


def visible_text(element: lxml.html.HtmlElement, *, main: bool = False, hides: bool = True) -> str:
    """Text of ``element`` without scripts, navigation and chrome, one paragraph per block.

    With ``main``, list items start with "- ", a table cell's blocks run on in its row, and
    each line of a ``<pre>`` is a paragraph, the way trafilatura writes them, so a page reads
    alike whichever of the two read it. ``hides=False`` says no element carries the ``hidden``
    attribute (the page's source has none: ``may_hide``), which spares looking for one.
    """
    return _walk(element, _Text(main), hides=hides)


def may_hide(source: bytes) -> bool:
    """Whether an element parsed from the UTF-8 ``source`` may carry the ``hidden`` attribute.

    An attribute's name follows white space, "/" or a quoted value's closing quote, and is followed by white space,
    "=", "/", ">" or the end, in any ASCII case: where "hidden" stands so nowhere, no element has it. A word
    "hidden" in the text answers yes too, which only costs the look (``_HIDDEN``) that a no spares. Looked for in
    bytes lowered in C behind the literal name: a case-blind search tries every position.
    """
    lowered = source.lower()
    return any(at and lowered[at - 1] in _BEFORE_NAME for at in map(re.Match.start, _HIDDEN_NAME.finditer(lowered)))


def _holders(element: lxml.html.HtmlElement, hides: bool) -> set[lxml.html.HtmlElement]:
    """The elements under ``element`` (and itself) that hold something the walk acts on: an element it starts, ends or
    skips, a node that is no element, or with ``hides``, an element with the ``hidden`` attribute.

    lxml's iterator picks those out in C; each marks its ancestors, and a mark already made stops the climb, so the
    cost is about one step an element picked.
    """
    holders: set[lxml.html.HtmlElement] = set()
    acted: Iterable[lxml.html.HtmlElement] = element.iterdescendants(*_ACTED)
    if hides:
        acted = chain(acted, _HIDDEN(element))
    for node in acted:
        parent = node.getparent()
        while parent not in holders:
            holders.add(parent)
            if parent is element:
                break
            parent = parent.getparent()
    return holders


def _walk(
    element: lxml.html.HtmlElement,
    text: _Text,
    left_out: frozenset[lxml.html.HtmlElement] = frozenset(),
    *,
    hides: bool = True,
) -> str:
    # Runs for every element of a page, thousands on a Python docs page, most of them inline (a, span, code):
    # those cost no call into _Text, which acts only on the tags it names.
    # An element that holds nothing the walk acts on (a paragraph of links and code, a highlighted <pre>) has its
    # text taken whole by libxml2 and is not walked into: the text is the one its pieces would have added, as
    # _Text.add's line marks are made a character at a time. Not while a list item's "- " waits for its first
    # text, which goes before the first piece that is not white space.
    parts = text.parts
    holders = _holders(element, hides)
    walker = etree.iterwalk(element, events=("start", "end"))
    for event, node in walker:
        tag = node.tag
        if not isinstance(tag, str):
            tag = ""
        if event == "end":
            if tag in _ENDS:
                text.end(tag)
            if node is not element and (tail := node.tail):
                (text.add if text.pre or text.item else parts.append)(tail)
        elif not tag or tag in _SKIP or (hides and node.get("hidden") is not None) or (left_out and node in left_out):
            walker.skip_subtree()
        else:
            if tag in _STARTS:
                names = f"{node.get('id', '')} {node.get('class', '')}" if tag in _THREADS else ""
                text.start(tag, first_cell=node.getprevious() is None, names=names)
            if node in holders or text.item or not len(node):
                inner = node.text
            else:
                walker.skip_subtree()
                inner = etree.tostring(node, method="text", encoding=str, with_tail=False)
            if inner:
                (text.add if text.pre or text.item else parts.append)(inner)
    paragraphs = (" ".join(p.split()) for p in "".join(parts).split(BREAK))
    return "\n\n".join(p for p in paragraphs if p)


class _Text:
    """The text of a walk, as it is written: blocks apart, and with ``main``, trafilatura's marks."""

    def __init__(self, main: bool, *, threads: bool = False) -> None:
        self.parts: list[str] = []
        self._main = main
        self._threads = threads  # raise _CommentThread at a comment thread's container
        self.pre = self._cell = 0  # depth inside <pre>, inside a table cell
        self.item = False  # a list item's "- " waits for its first text

    def start(self, tag: str, *, first_cell: bool, names: str = "") -> None:
        if self._threads and tag in _THREADS and any(name in names for name in _THREAD_NAMES):
            raise _CommentThread
        if tag in ("td", "th"):
            if not first_cell:
                self.parts.append(" | ")
            self._cell += self._main
        if tag in _BLOCK:
            self._block()
        if self._main and tag == "li":
            self.item = True
        if self._main and tag == "pre":
            self.pre += 1

    def end(self, tag: str) -> None:
        if tag in _BLOCK or tag in _SKIP:
            self._block()
        if tag == "li":  # an item with no text of its own: its "- " is not the next paragraph's
            self.item = False
        if self._main and tag == "pre":
            self.pre -= 1
        if self._main and tag in ("td", "th"):
            self._cell -= 1

    def add(self, text: str | None) -> None:
        if not text:
            return
        if self.pre:  # a line of code is a block of its own, as in trafilatura's text
            text = text.replace("\r", "\n").replace("\n", BREAK)
        if self.item and not text.isspace():
            self.parts.append("- ")
            self.item = False
        self.parts.append(text)

    def _block(self) -> None:
        self.parts.append(" " if self._cell else BREAK)


def main_text(
    root: lxml.html.HtmlElement, *, hides: bool = True, candidates: Iterable[lxml.html.HtmlElement] | None = None
) -> str | None:
    """The text of the element the page marks as its main content, read as ``visible_text(main=True)``.

    The element is one ``<main>``, or ``<div>`` or ``<section>`` with ``role="main"``, or
    else one ``<article>``; not hidden nor inside chrome. ``None`` when the page marks none, or
    more than one, or one that is empty, mostly links (unless shorter than trafilatura can judge) or holds a
    comment thread: trafilatura reads those pages. An element that is mostly links only for the lists of
    links it holds (a table of contents) is read without those lists. ``hides`` as for ``visible_text``;
    ``candidates``: the tree's main, div, section and article elements in document order, when the caller
    has them from a walk of its own (``extract.html``), so the tree is not walked again for them.
    """
    found = _marked(root, candidates)
    if len(found) != 1:
        return None
    [element] = found
    for node in (element, *element.iterancestors()):
        tag = node.tag if isinstance(node.tag, str) else ""
        if tag in _SKIP or node.get("hidden") is not None:
            return None
    length = whole = int(_TEXT_LENGTH(element))
    links = _link_chars(element)
    left_out: frozenset[lxml.html.HtmlElement] = frozenset()
    if links > _MAX_LINK_SHARE * length:
        left_out, list_length, list_links = _link_lists(element)
        length, links = length - list_length, links - list_links
    if length < _MIN_CHARS or (links > _MAX_LINK_SHARE * length and whole >= _SHORT_CHARS):
        return None
    try:
        return _walk(element, _Text(True, threads=True), left_out, hides=hides) or None
    except _CommentThread:
        return None


def _marked(
    root: lxml.html.HtmlElement, candidates: Iterable[lxml.html.HtmlElement] | None = None
) -> list[lxml.html.HtmlElement]:
    """The ``<main>``, ``<div role="main">`` and ``<section role="main">`` elements, in document order; if there are
    none, the ``<article>`` elements.

    One pass over the tree in lxml's C iterator, which hands Python only the elements of those four names: the
    XPath ``//main | //div[@role='main'] | //section[@role='main']`` took longer,
    as libxml2 builds the node set of ``//`` for each branch. role="main" is looked for
    where pages put it: an attribute test on every element costs as much as reading the page.
    """
    marked, articles = [], []
    for element in root.iter("main", "div", "section", "article") if candidates is None else candidates:
        tag = element.tag
        if tag == "main" or (tag != "article" and element.get("role") == "main"):
            marked.append(element)
        elif tag == "article" and not marked:
            articles.append(element)
    return marked or articles


def _link_chars(element: lxml.html.HtmlElement) -> int:
    """How many characters of ``element``'s text are in its links (the text nodes under an ``<a>`` in it).

    Each outermost link's text is taken whole by libxml2, and the links inside it are not walked again: linear in
    the page, where libxml2 evaluates ".//a//text()" by merging each link's node set into the result, O(links²).
    """
    total = 0
    walker = etree.iterwalk(element, events=("start",), tag="a")
    for _, link in walker:
        if link is not element:
            total += len(etree.tostring(link, method="text", encoding=str, with_tail=False))
            walker.skip_subtree()
    return total


def _link_lists(element: lxml.html.HtmlElement) -> tuple[frozenset[lxml.html.HtmlElement], int, int]:
    """The outermost lists in ``element`` whose text is mostly the text of their links, with the length of their
    text and of their links' text.

    Only outermost lists are measured: they hold disjoint parts of the page, so the measure stays linear in its
    size however deep lists are nested (a list inside one that is kept is read as it is).
    """
    found, total, linked = set(), 0, 0
    for each in _LISTS(element):
        length = int(_TEXT_LENGTH(each))
        links = _link_chars(each) if length else 0
        if length and links >= _LINK_LIST_SHARE * length:
            found.add(each)
            total, linked = total + length, linked + links
    return frozenset(found), total, linked
