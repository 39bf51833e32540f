"""#17: extraction's faster forms say exactly what the plain forms they replaced say, on any text or tree.

Each fast path looks for characters through UTF-8 bytes or behind one literal character, or for
elements with lxml's iterator instead of XPath; the plain form stays beside it (or here) as its definition.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from synapsecrawl.extract.html import _NOISE, _NOSNIPPET, _without_noise, parse_tree
from synapsecrawl.extract.sniff import _CONTROL, _controls
from synapsecrawl.extract.visible import BREAK, _marked

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
    assert _without_noise(text) == _NOISE.sub("", text)


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
