"""HTML responses → Page: metadata, main text, links and robots directives.

The document is decoded once (BOM, HTTP charset, <meta charset>, then a guess:
WHATWG's order, via w3lib) and parsed once with lxml. Main text comes from
trafilatura; when it finds nothing, or the tree is too large or too deeply
nested for it to finish quickly, the visible text of <body> is used instead. A page
that marks its main content (one ``<main>``, ``role="main"`` or ``<article>``) is
read from that element without trafilatura (``extract.visible``).
What is examined is bounded (``extract.bounds``: attributes of one element, links)
and each bound a page meets is named in ``Page.bounded``. Text is plain, one
paragraph per block (heading, paragraph, list item, table row), paragraphs
separated by a blank line. Elements carrying ``data-nosnippet`` (honoured on
any element, not only span/div/section) are left out of ``snippet_text``.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from copy import deepcopy
from functools import lru_cache
from urllib.parse import urljoin, urlparse

import lxml.html  # type: ignore[import-untyped,unused-ignore]
from lxml import etree
from w3lib.encoding import html_to_unicode
from w3lib.html import strip_html5_whitespace
from w3lib.url import safe_url_string

from synapsecrawl.extract.bounds import MAX_ATTRIBUTES, MAX_LINKS, cap_attributes
from synapsecrawl.extract.directives import parse_directives
from synapsecrawl.extract.page import Directives, Labels, Link, Page
from synapsecrawl.extract.sniff import unreadable_share
from synapsecrawl.extract.text import detect_encoding
from synapsecrawl.extract.visible import BREAK, main_text, may_hide, visible_text
from synapsecrawl.urls import url_problem

__all__ = [
    "MAX_TRAFILATURA_DEPTHS",
    "MAX_TRAFILATURA_ELEMENTS",
    "Labeller",
    "jsonld_documents",
    "parse_html",
    "parse_tree",
]

# Reads a page's labels from its parsed tree: the labels, and the bounds the labelling met.
Labeller = Callable[[lxml.html.HtmlElement, str], tuple[Labels, tuple[str, ...]]]

MAX_TRAFILATURA_ELEMENTS = 30_000  # trafilatura needs 2-3 s here; larger trees get the plain walk
# trafilatura walks each table's and list's descendants again (and justext each paragraph's
# ancestors): its cost is the sum of the elements' depths, 6 s for 2,048 nested tables (4 M).
# A 30,000-element page averaging depth 33 is within; real pages average 10 to 25.
MAX_TRAFILATURA_DEPTHS = 1_000_000
_MAX_FIELD_CHARS = 1_000
_MAX_ANCHOR_CHARS = 500
_MAX_JSONLD_CHARS = 1_000_000
_MAX_JSONLD_NODES = 10_000
# "-nosnippet" in any ASCII case (HTML attribute names are ASCII case-insensitive), led by its one literal character:
# the search skips to each "-" in C, where re.IGNORECASE tries every position.
_NOSNIPPET = re.compile("-[nN][oO][sS][nN][iI][pP][pP][eE][tT]")
_NOSNIPPET_ELEMENTS = etree.XPath("//*[@data-nosnippet]")
_NOISE = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f{BREAK}]")
# _NOISE's characters as UTF-8 bytes (one byte each under 0x80, and BREAK's three): a page holds none of them as a
# rule, and bytes.translate finds that faster than the search; then nothing is removed.
_NOISE_BYTES = bytes(sorted({*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F}))
_BREAK_UTF8 = BREAK.encode()
_TABLE_RULE = re.compile(r"\|?(?:\s*:?-{3,}:?\s*\|)+\s*")
_URI_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;=%]+")  # RFC 3986 §2: nothing to escape
_LANGUAGE = re.compile(r"[A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*")
# site chrome trafilatura's recall mode would otherwise keep on short pages
_PRUNE = [
    "//nav",
    "//*[@hidden]",
    "//header[not(ancestor::article or ancestor::main)]",
    "//footer[not(ancestor::article or ancestor::main)]",
]
_QUIET = ("trafilatura", "htmldate", "courlan", "justext", "readability")


class _Drop(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


@lru_cache(maxsize=8)
def _loggers(prefixes: tuple[str, ...], modules: int) -> list[logging.Logger]:
    """The loggers of the modules under ``prefixes``, found again only when a module was imported."""
    del modules  # the cache key: a new import may bring a new logger
    return [logging.getLogger(n) for n in list(sys.modules) if n.split(".")[0] in prefixes]


@contextmanager
def _silenced(prefixes: Sequence[str]) -> Iterator[None]:
    """Mute the named libraries' loggers (filters do not inherit, so each one)."""
    loggers = _loggers(tuple(prefixes), len(sys.modules))
    drop = _Drop()
    for logger in loggers:
        logger.addFilter(drop)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(drop)


def _squash(value: str | None, limit: int = _MAX_FIELD_CHARS) -> str:
    return " ".join((value or "").split())[:limit]


def _absolute(base: str, href: str | None, encoding: str = "utf-8") -> str:
    """`href` made absolute, fragment dropped; "" unless a usable http(s) URL (``urls.url_problem``)."""
    return _resolve(base, href, encoding)[0]


def _resolve(base: str, href: str | None, encoding: str = "utf-8") -> tuple[str, str | None]:
    """(`_absolute`'s URL, why an http(s) `href` is unusable or None): port 99999 costs one link, not the page's."""
    href = strip_html5_whitespace(href or "")
    if not href:
        return "", None
    try:
        url = urljoin(base, href).split("#", 1)[0]
        if not url[:8].lower().startswith(("http://", "https://")):
            return "", None
        url = url if _URI_CHARS.fullmatch(url) else safe_url_string(url, encoding=encoding)
    except (ValueError, LookupError) as exc:  # "http://[::1" is no URL; an odd page codec
        return "", str(exc).lower()[:100] or "unreadable"
    problem = url_problem(url)
    return ("", problem) if problem else (url, None)


# A relative-path href ("os.html", "../library/os.html#os.path", "_static/x.png"): urljoin takes only the base's
# scheme, host and directory from the base then (RFC 3986 §5.2.2, and urllib's code: the last segment of the base's
# path is dropped, its params, query and fragment unused), so pages of one directory share what such an href
# resolves to. A first character urlsplit strips (C0 controls, space) or that starts another kind of reference
# ("/", "?", "#", ";") is not one of these; neither is an href with a ":" before its path ends (a scheme may lead).
_RELATIVE_PATH = re.compile(r"[A-Za-z0-9._~\-][^:/?#]*(?:[/?#]|\Z)")
# Worked out once a worker process for each (directory, href): a docs site's navigation repeats on every page of a
# directory, and urljoin is pure Python.
_RESOLVED = 16_384


def _directory(base: str) -> str | None:
    """What of ``base`` a relative-path href resolves against: its scheme, host and path up to the last "/"."""
    try:
        parts = urlparse(base)
    except ValueError:
        return None
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}{parts.path[: parts.path.rfind('/') + 1] or '/'}"


def _fragmentless(href: str) -> str:
    """``href`` with what follows its "#" cut, the "#" kept: it resolves to the same URL, fragment dropped (white
    space before the "#" stays inside, where stripping the href's ends leaves it)."""
    return href.split("#", 1)[0] + "#" if "#" in href else href


@lru_cache(maxsize=_RESOLVED)
def _resolve_in(directory: str, href: str, encoding: str) -> tuple[str, str | None]:
    return _resolve(directory, href, encoding)


# Every element an HtmlElement, chosen in C: lxml.html's own lookup is a Python call for each element lxml hands to
# Python (every node of a walk), to give forms and inputs classes of
# their own that nothing here or in trafilatura uses.
_CLASSES = etree.ElementDefaultClassLookup(
    element=lxml.html.HtmlElement,
    comment=lxml.html.HtmlComment,
    pi=lxml.html.HtmlProcessingInstruction,
    entity=lxml.html.HtmlEntity,
)


def parse_tree(text: str, encoded: bytes | None = None) -> tuple[lxml.html.HtmlElement | None, int]:
    """The lxml tree of decoded ``text`` (None when empty), and how many attributes past the cap were cut.

    Attributes beyond ``MAX_ATTRIBUTES`` on one element are cut before libxml2 sees them (bounds.py).
    ``encoded``: ``text``'s UTF-8, when the caller has it (``_without_noise``), not made again.
    """
    text, dropped = cap_attributes(text)
    if dropped or encoded is None:
        encoded = text.encode("utf-8")
    parser = lxml.html.HTMLParser(
        encoding="utf-8",
        huge_tree=True,
        remove_comments=True,
        remove_pis=True,
        no_network=True,
        collect_ids=False,
    )
    parser.set_element_class_lookup(_CLASSES)
    try:
        root = lxml.html.document_fromstring(encoded, parser=parser)
    except etree.ParserError:  # "Document is empty"
        return None, dropped
    return (root if isinstance(root, lxml.html.HtmlElement) else None), dropped


# The elements parse_html reads, by the group each is read in: the tree is walked once for all of them (``_elements``).
_GROUPS = {
    "meta": "meta", "base": "base", "title": "title", "h1": "h1", "link": "link", "script": "script", "time": "time",
    "a": "links", "area": "links", "main": "marked", "div": "marked", "section": "marked", "article": "marked",
}  # fmt: skip
_Elements = dict[str, list[lxml.html.HtmlElement]]


def _elements(root: lxml.html.HtmlElement) -> _Elements:
    """The elements of ``root``'s tree that parse_html reads, by group, each group in document order.

    One walk for all: lxml's iterator walks the whole tree at each call, even for a first match alone (it
    looks ahead for the next one), and a page was walked six times, for its metas, title, <link>s, scripts,
    marked element and links.
    A tag the document does not use costs nothing in a walk (libxml2's dictionary does not hold it).
    """
    found: _Elements = {group: [] for group in _GROUPS.values()}
    for element in root.iter(*_GROUPS):
        found[_GROUPS[element.tag]].append(element)
    return found


class _Head:
    """The <meta>, <link> and <base> facts of one document."""

    def __init__(self, found: _Elements, url: str) -> None:
        self.pairs: list[tuple[str, str]] = []
        self.values: dict[str, str] = {}
        for meta in found["meta"]:
            content = meta.get("content")
            if content is None:
                continue
            for attr in ("name", "property", "itemprop", "http-equiv"):
                key = (meta.get(attr) or "").strip().lower()
                if key:
                    self.values.setdefault(key, content.strip())
            if meta.get("name"):
                self.pairs.append((meta.get("name", ""), content))
        self.base = url
        for base in found["base"]:
            if base.get("href"):
                self.base = _absolute(url, base.get("href")) or url
                break

    def first(self, *keys: str) -> str:
        for key in keys:
            if self.values.get(key):
                return self.values[key]
        return ""


def _title(found: _Elements, head: _Head) -> str:
    for title in found["title"]:
        if next(title.iterancestors("svg"), None) is None and _squash(title.text_content()):
            return _squash(title.text_content())
    if head.first("og:title"):
        return _squash(head.first("og:title"))
    for h1 in found["h1"]:
        if _squash(h1.text_content()):
            return _squash(h1.text_content())
    return ""


def _language(root: lxml.html.HtmlElement, head: _Head) -> str:
    for value in (root.get("lang"), root.get("xml:lang"), head.first("content-language")):
        candidate = (value or "").split(",")[0].strip()
        if _LANGUAGE.fullmatch(candidate):
            return candidate
    return ""


def _canonical(found: _Elements, base: str) -> str:
    for link in found["link"]:
        if "canonical" in (link.get("rel") or "").lower().split():
            return _absolute(base, link.get("href"))
    return ""


def jsonld_documents(root: lxml.html.HtmlElement) -> Iterator[object]:
    """The parsed JSON-LD blocks of a page; oversized or broken ones are skipped."""
    return _jsonld(root.iter("script"))


def _jsonld(scripts: Iterable[lxml.html.HtmlElement]) -> Iterator[object]:
    """``jsonld_documents`` of the page's ``scripts``."""
    for script in scripts:
        if (script.get("type") or "").strip().lower() != "application/ld+json":
            continue
        source = script.text or ""
        if len(source) > _MAX_JSONLD_CHARS:
            continue
        try:
            yield json.loads(source)
        except (ValueError, RecursionError):
            continue


def _jsonld_published(found: _Elements) -> str:
    for document in _jsonld(found["script"]):
        stack: list[object] = [document]
        for _ in range(_MAX_JSONLD_NODES):
            if not stack:
                break
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("datePublished"), str):
                    return str(node["datePublished"])
                stack.extend(reversed(list(node.values())))
            elif isinstance(node, list):
                stack.extend(reversed(node))
    return ""


def _published(found: _Elements, head: _Head) -> str:
    published = head.first("article:published_time", "datepublished") or _jsonld_published(found)
    if not published:
        for time in found["time"]:
            if (time.get("itemprop") or "").lower() == "datepublished" and time.get("datetime"):
                published = time.get("datetime", "")
                break
    return _squash(published, 64)


def _links(
    anchors: list[lxml.html.HtmlElement], base: str, encoding: str, unusable: list[str], bounded: list[str]
) -> tuple[Link, ...]:
    """The page's http(s) links, once each, the first MAX_LINKS examined; an unusable one is skipped and
    described in ``unusable``.

    Each distinct href is resolved once: a page repeats its hrefs (a docs page links the same
    few dozen places, and itself by "#..." hundreds of times), and resolving is a pure function of the
    base and the href, so the cache changes nothing but the cost. Hrefs that differ only after their
    "#" share a key ("x.html#" for "x.html#len" and "x.html#abs"): the fragment is cut from what they
    resolve to, and nothing after the "#" can make resolving fail. An empty href keeps its own key
    (it is no link; "#top" is this page).
    """
    seen: dict[str, Link] = {}
    resolved: dict[str, tuple[str, str | None]] = {}
    directory = _directory(base)
    for examined, anchor in enumerate(anchors):
        if examined == MAX_LINKS:
            bounded.append(f"links: only the first {MAX_LINKS:,} read")
            break
        href = anchor.get("href") or ""
        key = _fragmentless(href)
        if (known := resolved.get(key)) is None:
            stripped = strip_html5_whitespace(key)
            if directory is not None and _RELATIVE_PATH.match(stripped):
                known = _resolve_in(directory, stripped, encoding)
            else:
                known = _resolve(base, href, encoding)
            resolved[key] = known
        url, problem = known
        if problem is not None:
            unusable.append(f"{_squash(anchor.get('href'), 100)!r}: {problem}")
        if not url or url in seen:
            continue
        label = anchor.get("alt") if anchor.tag == "area" else anchor.text_content()
        rel = frozenset((anchor.get("rel") or "").lower().split())
        seen[url] = Link(url=url, rel=rel, text=_squash(label, _MAX_ANCHOR_CHARS))
    return tuple(seen.values())


def _visible_text(root: lxml.html.HtmlElement, *, hides: bool = True) -> str:
    """Text of <body> without scripts, navigation and chrome, one paragraph per block (``hides``: visible_text's)."""
    body = root.find("body")
    return "" if body is None else visible_text(body, hides=hides)


def _from_trafilatura(output: str) -> str:
    paragraphs = []
    for raw in output.splitlines():
        if _TABLE_RULE.fullmatch(raw):
            continue
        line = raw.strip()
        if line.startswith("|"):
            line = " | ".join(cell.strip() for cell in line.strip("|").split("|"))
        line = " ".join(line.split())
        if line:
            paragraphs.append(line)
    return "\n\n".join(paragraphs)


def _fits_trafilatura(root: lxml.html.HtmlElement) -> bool:
    """Whether the tree is small and shallow enough for trafilatura (one walk, stopped past the bounds)."""
    depth = elements = depths = 0
    for event, _ in etree.iterwalk(root, events=("start", "end")):
        if event == "end":
            depth -= 1
            continue
        depth += 1
        elements += 1
        depths += depth
        if elements > MAX_TRAFILATURA_ELEMENTS or depths > MAX_TRAFILATURA_DEPTHS:
            return False
    return True


def _main_text(
    root: lxml.html.HtmlElement,
    url: str,
    problems: list[str],
    bounded: list[str],
    *,
    hides: bool = True,
    candidates: list[lxml.html.HtmlElement] | None = None,
) -> str:
    """The page's main text; ``candidates``: its main, div, section and article elements, when the caller has them."""
    # the page says where its content is: read that, not the whole page
    marked = main_text(root, hides=hides, candidates=candidates)
    if marked is not None:
        return marked
    if not _fits_trafilatura(root):
        bounded.append("main text: too many or too deeply nested elements for trafilatura; all visible text read")
    else:
        # Imported here, not with this module: the crawler's process imports it (for its helpers) but reads no page,
        # and trafilatura with its dependencies would weigh on every crawl's start; the extraction workers' fork
        # server imports it ahead (extract.pool._PRELOAD).
        import trafilatura

        try:
            with _silenced(_QUIET):
                output = trafilatura.extract(
                    root,
                    url=url,
                    favor_recall=True,
                    include_tables=True,
                    include_comments=False,
                    output_format="txt",
                    prune_xpath=_PRUNE,
                )
        # trafilatura is third-party code run on hostile input; page.py: never raise on content
        except Exception as error:  # noqa: BLE001
            problems.append(f"html: main-text extraction failed ({type(error).__name__})")
            output = None
        if output:
            text = _from_trafilatura(output)
            if text:
                return text
    return _visible_text(root, hides=hides)


def _without_noise(text: str) -> tuple[str, bytes]:
    """``text`` without control characters but tab, newline and carriage return, nor BREAK; and its UTF-8.

    Encoded once for the look, the parser and ``may_hide``. A lone surrogate (no decoder here makes one) is
    encoded as one, where ``parse_tree``'s own encoding would have raised: libxml2 reads it as any bad UTF-8.
    """
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded.translate(None, _NOISE_BYTES)) == len(encoded) and _BREAK_UTF8 not in encoded:
        return text, encoded
    text = _NOISE.sub("", text)
    return text, text.encode("utf-8", "surrogatepass")


def _without_nosnippet(root: lxml.html.HtmlElement, parsed: str) -> lxml.html.HtmlElement | None:
    """A copy of the tree ``parsed`` was read into, without data-nosnippet elements; None if there are none.

    The attribute's name stands in the parsed text, in some ASCII case, wherever an element carries it: looked
    for there first, as asking libxml2 tests every element.
    """
    if not _NOSNIPPET.search(parsed) or not _NOSNIPPET_ELEMENTS(root):
        return None
    copy = deepcopy(root)
    for element in _NOSNIPPET_ELEMENTS(copy):
        if element.getparent() is None:
            element.clear()
        else:
            element.drop_tree()
    return copy


def parse_html(
    body: bytes,
    url: str,
    *,
    tokens: Sequence[str],
    x_robots_tag: Sequence[str] = (),
    encoding: str | None = None,
    content_type: str = "text/html",
    labeller: Labeller | None = None,
) -> Page:
    """Read an HTML response. Never raises on content: problems are listed instead.

    `encoding` is the charset from the HTTP Content-Type, if any; `tokens` are
    the bot's product token and aliases, for directives addressed to it.
    When every part of the main text is data-nosnippet, the page is marked
    ``nosnippet`` (an empty ``snippet_text`` would mean "same as text").
    With a ``labeller`` (``read_document`` passes OMN-LABELS'), the page carries its labels, read from the same tree.
    """
    media_type = content_type.split(";", 1)[0].strip().lower() or "text/html"
    header = f"{media_type}; charset={encoding}" if encoding else content_type
    codec, decoded = html_to_unicode(header, body, auto_detect_fun=detect_encoding)
    not_text = unreadable_share(decoded)
    parsed, encoded = ("", b"") if not_text else _without_noise(decoded)
    root, dropped = parse_tree(parsed, encoded) if parsed else (None, 0)
    if root is None:
        return Page(
            url=url,
            content_type=media_type,
            directives=parse_directives((), x_robots_tag, tokens),
            problems=() if not_text else ("html: empty document",),
            not_text=not_text,
        )
    bounded = [f"attributes: {dropped:,} past {MAX_ATTRIBUTES} on one element not read"] if dropped else []
    labels = labeller(root, url) if labeller else None  # before the tree is handed to trafilatura
    if labels is not None:
        bounded.extend(labels[1])
    found = _elements(root)
    head = _Head(found, url)
    directives = parse_directives(head.pairs, x_robots_tag, tokens)
    problems: list[str] = []
    hides = may_hide(encoded)
    text = _main_text(root, url, problems, bounded, hides=hides, candidates=found["marked"])
    snippet_text = ""
    trimmed = _without_nosnippet(root, parsed)
    if trimmed is not None:
        snippet_text = _main_text(trimmed, url, problems, [], hides=hides)
        if snippet_text == text:
            snippet_text = ""
        elif not snippet_text and text:
            directives = Directives(directives.noindex, directives.nofollow, True, 0)
    if not text:
        problems.append("html: no text")
    unusable: list[str] = []
    links = _links(found["links"], head.base, codec, unusable, bounded)
    if unusable:
        problems.append(f"html: {len(unusable)} links without a usable URL skipped (the first {unusable[0]})")
    return Page(
        url=url,
        content_type=media_type,
        title=_title(found, head),
        text=text,
        description=_squash(head.first("description", "og:description")),
        language=_language(root, head),
        canonical=_canonical(found, head.base),
        og_image=_absolute(head.base, head.first("og:image", "og:image:url", "og:image:secure_url")),
        published=_published(found, head),
        links=links,
        directives=directives,
        snippet_text=snippet_text,
        problems=tuple(dict.fromkeys(problems)),
        bounded=tuple(dict.fromkeys(bounded)),
        labels=None if labels is None else labels[0],
    )


def _parse_tree(text: str) -> lxml.html.HtmlElement | None:
    """``parse_tree``'s tree alone (feeds reads entry HTML with it)."""
    return parse_tree(text)[0]
