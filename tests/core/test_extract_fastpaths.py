"""extraction's faster forms say exactly what the plain forms they replaced say, on any text or tree.

Each fast path looks for characters through UTF-8 bytes or behind one literal character, or for
elements with lxml's iterator instead of XPath; the plain form stays beside it (or here) as its definition.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from w3lib.html import strip_html5_whitespace

from synapsecrawl.extract.html import (
    _NOISE,
    _NOSNIPPET,
    _RELATIVE_PATH,
    _directory,
    _fragmentless,
    _resolve,
    _resolve_in,
    _without_noise,
    parse_tree,
)
from synapsecrawl.extract.sniff import _CONTROL, _controls
from synapsecrawl.extract.visible import (
    _ENDS,
    _SKIP,
    _STARTS,
    _THREADS,
    BREAK,
    _CommentThread,
    _link_chars,
    _marked,
    _Text,
    _walk,
    may_hide,
)

# Every character the fast paths treat apart (C0, DEL, C1, BREAK, the white space str.split knows, a lone
# surrogate as a decoder's surrogateescape leaves it), beside ordinary text in several scripts.
_EDGES = [chr(c) for c in (*range(0x21), *range(0x7F, 0xA1))]
_EDGES += ["\u1680", "\u2000", "\u200b", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\ufeff", "\udc80"]
_EDGES += [BREAK, "\ufdd1", "\ufffd", "\u00c2", "\u0100", "a", "Z", "-", "é", "ж", "字", "\U0001f600"]
TEXT = st.text(alphabet=st.one_of(st.sampled_from(_EDGES), st.characters(codec="utf-8")), max_size=80)


@given(TEXT)
def test_control_characters_are_counted_as_the_character_class_counts_them(text: str) -> None:
    assert _controls(text) == len(_CONTROL.findall(text))


@given(TEXT)
def test_noise_is_removed_as_the_character_class_removes_it(text: str) -> None:
    assert _without_noise(text) == (_NOISE.sub("", text), _NOISE.sub("", text).encode("utf-8", "surrogatepass"))


@given(st.lists(st.booleans(), min_size=len("data-nosnippet"), max_size=len("data-nosnippet")), TEXT, TEXT)
def test_the_nosnippet_attribute_is_found_in_any_ascii_case(upper: list[bool], before: str, after: str) -> None:
    """SNA-SNIPPET: the look in the text before the tree never misses the attribute's name, however it is cased."""
    name = "".join(c.upper() if up else c for c, up in zip("data-nosnippet", upper, strict=True))
    assert _NOSNIPPET.search(f"{before}<div {name}>{after}")
    assert bool(_NOSNIPPET.search(before)) == bool(re.search("-nosnippet", before, re.IGNORECASE | re.ASCII))


_OPENINGS = ["<main>", "<div role='main'>", "<section role='main'>", "<article>", "<div>", "<section role='Main'>"]
_OPENINGS += [
    "<p role='main'>",
    "<div role='navigation'>",
    "<nav>",
    "x",
    "</div>",
    "</main>",
    "</article>",
    "</section>",
]


@given(st.lists(st.sampled_from(_OPENINGS), max_size=12))
def test_the_marked_elements_are_those_the_xpath_names(pieces: list[str]) -> None:
    """The page's marked main element is looked for in one pass of lxml's iterator; it finds what the XPath
    ``//main | //div[@role='main'] | //section[@role='main']`` finds, or else ``//article``, in document order."""
    root, _ = parse_tree(f"<html><body>{''.join(pieces)}</body></html>")
    assert root is not None
    marked = etree.XPath("//main | //div[@role='main'] | //section[@role='main']")(root)
    assert _marked(root) == (marked or etree.XPath("//article")(root))


def _plain_walk(element: etree._Element, text: _Text, left_out: frozenset[etree._Element] = frozenset()) -> str:
    """visible._walk as it was before it took the text of an element that holds nothing it acts on whole."""
    parts = text.parts
    walker = etree.iterwalk(element, events=("start", "end"))
    for event, node in walker:
        tag = node.tag if isinstance(node.tag, str) else ""
        if event == "end":
            if tag in _ENDS:
                text.end(tag)
            if node is not element and (tail := node.tail):
                (text.add if text.pre or text.item else parts.append)(tail)
        elif not tag or tag in _SKIP or node.get("hidden") is not None or node in left_out:
            walker.skip_subtree()
        else:
            if tag in _STARTS:
                names = f"{node.get('id', '')} {node.get('class', '')}" if tag in _THREADS else ""
                text.start(tag, first_cell=node.getprevious() is None, names=names)
            if inner := node.text:
                (text.add if text.pre or text.item else parts.append)(inner)
    paragraphs = (" ".join(p.split()) for p in "".join(parts).split(BREAK))
    return "\n\n".join(p for p in paragraphs if p)


# Tags the walk acts on or skips, beside inline ones it only takes the text of (and one lxml knows nothing of).
_TAGS = ["p", "div", "li", "ul", "pre", "td", "br", "script", "span", "a", "em", "my-widget"]
_ATTRIBUTES = ["", "", " hidden", " class='comments'", " aria-hidden=true"]
_WORDS = ["word", " ", "  ", "\n", "\r\n", "\t", "x\ny", "- ", "\u00a0", "é", "字"]


@st.composite
def _fragments(draw: st.DrawFn, tags: list[str], attributes: list[str], words: list[str], depth: int = 0) -> str:
    """Markup up to four elements deep: ``tags`` with one of ``attributes`` each, and ``words`` between them."""
    pieces = []
    for _ in range(draw(st.integers(0, 4))):
        if depth < 4 and draw(st.booleans()):
            tag, attribute = draw(st.sampled_from(tags)), draw(st.sampled_from(attributes))
            pieces.append(f"<{tag}{attribute}>{draw(_fragments(tags, attributes, words, depth + 1))}</{tag}>")
        else:
            pieces.append(draw(st.sampled_from(words)))
    return "".join(pieces)


@settings(max_examples=500)
@given(_fragments(_TAGS, _ATTRIBUTES, _WORDS), st.booleans(), st.booleans())
def test_the_walk_reads_what_the_plain_walk_reads(fragment: str, main: bool, threads: bool) -> None:
    """Text taken whole from an element that holds nothing the walk acts on is the text the walk into it read, in
    list items, preformatted text and table cells, around hidden elements and comment threads."""
    source = f"<html><body><div>{fragment}</div></body></html>"
    root, _ = parse_tree(source)
    assert root is not None
    body = root.find("body")
    lists = frozenset(body.iter("ul"))  # left out as main_text leaves out link lists

    def read(walk: Callable[..., str], **hint: bool) -> str | type[_CommentThread]:
        try:
            return walk(body, _Text(main, threads=threads), lists, **hint)
        except _CommentThread:
            return _CommentThread

    plain = read(_plain_walk)
    assert read(_walk) == plain
    assert read(_walk, hides=may_hide(source.encode())) == plain


_SEPARATORS = [" ", "\t", "\n", "\f", "\r", "/", " / ", "  "]
_NAMES = ["hidden", "HIDDEN", "Hidden", "hidden=''", 'hidden=""', "hidden=hidden", "data-hidden", "aria-hidden=true"]
_NAMES += ["type=hidden", "type='hidden'", "x='y'", 'x="y"', "x=y", "hidden=x", "hiddenx"]


@settings(max_examples=500)
@given(st.lists(st.tuples(st.sampled_from(_SEPARATORS), st.sampled_from(_NAMES)), max_size=5), st.booleans())
def test_no_element_has_the_hidden_attribute_where_the_source_says_none_may(
    attributes: list[tuple[str, str]], glued: bool
) -> None:
    """may_hide answers yes wherever libxml2 gives an element the hidden attribute, however it is written."""
    # glued: an attribute straight after a quoted value, with no white space between (the tokenizer allows it)
    written, previous = "", ""
    for separator, name in attributes:
        written += ("" if glued and previous.endswith(("'", '"')) else separator) + name
        previous = name
    source = f"<html><body><div{written}>text</div></body></html>"
    root, _ = parse_tree(source)
    assert root is not None
    if any(element.get("hidden") is not None for element in root.iter()):
        assert may_hide(source.encode())


_LINK_TAGS = ["a", "a", "p", "span", "ul", "li", "div"]


@given(_fragments(_LINK_TAGS, [""], ["x", "yy", " ", "字"]))
def test_link_text_is_measured_as_the_xpath_measures_it(fragment: str) -> None:
    """Each outermost link's text taken whole counts what ".//a//text()" counts, links inside links too."""
    root, _ = parse_tree(f"<html><body><main>{fragment}</main></body></html>")
    assert root is not None
    main = root.find(".//main")
    assert _link_chars(main) == sum(map(len, etree.XPath(".//a//text()")(main)))


# URL pieces that urllib reads apart: every delimiter, dot segments, what urlsplit strips or removes, ports, params.
_URL_BITS = [
    *"/?#:;@=&.%",
    ". #",
    " #",
    "\f",
    "..",
    "./",
    "../",
    "//",
    "\t",
    "\n",
    "\r",
    "\x00",
    "\x1f",
    " ",
    "\x7f",
    "é",
    "%2F",
]
_URL_BITS += ["a", "b", "x.html", "http", "https", "HTTP", "javascript", "mailto", ":80", ":99999", "[::1]", "~u"]
URL_TEXT = st.lists(st.sampled_from(_URL_BITS), max_size=8).map("".join)
BASES = st.builds(
    "{}://{}{}".format,
    st.sampled_from(["http", "https", "HTTP"]),
    st.sampled_from(["site-0.test", "a.test:8080", "u:p@b.test", "[::1]"]),
    URL_TEXT,
)


@settings(max_examples=600)
@given(BASES, URL_TEXT, st.sampled_from(["utf-8", "latin-1", "cp1251"]))
def test_a_relative_path_href_resolves_against_its_base_directory_as_against_the_base(
    base: str, href: str, encoding: str
) -> None:
    """Hrefs are resolved once a worker for each (directory of the page, href); that is what urljoin gives."""
    directory = _directory(base)
    stripped = strip_html5_whitespace(_fragmentless(href))
    if directory is None or not _RELATIVE_PATH.match(stripped):
        return
    assert _resolve_in(directory, stripped, encoding) == _resolve(base, href, encoding)


def test_the_directory_of_a_base_and_what_is_a_relative_path_href() -> None:
    assert _directory("https://Docs.test:8443/3/library/os.html;p?q=1#f") == "https://Docs.test:8443/3/library/"
    assert _directory("http://site-0.test") == "http://site-0.test/"
    assert _directory("http://[::1") is None
    relative = ["os.html", "../library/os.html#os.path", "_static/x.png", "a?x=b:c", "..", "x#y:z"]
    other = ["/os.html", "//evil.test/", "?q", "#top", ";p", "mailto:x@y.test", "\x01//evil.test", " x", ""]
    assert [bool(_RELATIVE_PATH.match(href)) for href in relative + other] == [True] * 6 + [False] * 9
