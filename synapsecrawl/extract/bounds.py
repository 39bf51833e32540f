"""How much of one page extraction examines: caps that keep its cost linear in the page's size.

A page may be written to make a parser's work grow faster than its size. Each cap here names
what it bounds and why the number; a page that meets one is still read, with what lies within
the bound, and says so in ``Page.bounded`` (one phrase a bound) so the crawl logs one line and
counts it in its summary.

- ``MAX_ATTRIBUTES`` per element: libxml2's HTML parser (2.14) looks each attribute up among the
  ones before it on the same element, so one ``<div>`` with n attributes costs n²/2 comparisons
  (200,000 attributes: minutes), and trafilatura parses the page twice more. lxml has no option to
  stop it, so the attributes past the cap are cut from the text before it is parsed (``cap_attributes``).
  Real markup stays far below it: a few dozen attributes on the busiest framework elements.
- ``MAX_LINKS`` examined per page, for its links and their labels (OMN-LABELS): a sitemap may list
  50,000 URLs, a page that links more than 10,000 places is an index no crawl reads whole.
"""

from __future__ import annotations

import re

__all__ = ["MAX_ATTRIBUTES", "MAX_LINKS", "cap_attributes"]

MAX_ATTRIBUTES = 256
MAX_LINKS = 10_000

# A start tag as the HTML tokenizer reads it (WHATWG HTML §13.2.5.6-§13.2.5.39): ASCII whitespace
# only, "/" between attributes, a name up to whitespace, "/", ">" or "=", a value quoted or up to
# whitespace or ">"; a quoted value needs no whitespace after it. Written here because no parser
# offers to stop at a count; atomic groups keep the match linear.
_WS = "\t\n\f\r "
_NAME = f"[^{_WS}/>][^{_WS}/>=]*+"
_VALUE = f"\"[^\"]*+\"|'[^']*+'|[^{_WS}>]*+"
_ATTRIBUTE = f"(?>[{_WS}/]*+{_NAME}(?:[{_WS}]*+=[{_WS}]*+(?:{_VALUE}))?+)"
# An overfull start tag, or else an element whose text the tokenizer reads as text (§13.1.2: raw
# text and escapable raw text), passed over whole up to its end tag or the end: what a script or a
# title holds is never cut.
_RAW = "script|style|textarea|title|xmp|iframe|noembed|noframes"
_SCAN = re.compile(
    f"(<[A-Za-z][^{_WS}/>]*+{_ATTRIBUTE}{{{MAX_ATTRIBUTES}}})({_ATTRIBUTE}++)"
    f"|<(?P<raw>{_RAW})(?=[{_WS}/>])(?>{_ATTRIBUTE}*+)[{_WS}/]*+>.*?(?:</(?P=raw)|\\Z)",
    re.IGNORECASE | re.DOTALL | re.ASCII,  # ASCII: with Unicode case folding, [A-Za-z] would take U+212A (Kelvin)
)  # and "script" spelt with U+017F (long s) would pass for a script: the HTML tokenizer reads neither (§13.2.5.6)
_ONE = re.compile(_ATTRIBUTE)
# The first branch of _SCAN without the rest: a page where it matches nowhere, in raw text or out, has nothing to
# cut. Looked for first, as the scan that also passes over raw text costs several times as much.
_OVERFULL = re.compile(f"<[A-Za-z][^{_WS}/>]*+{_ATTRIBUTE}{{{MAX_ATTRIBUTES}}}", re.ASCII)


def cap_attributes(text: str) -> tuple[str, int]:
    """``text`` with each start tag's attributes past ``MAX_ATTRIBUTES`` removed, and how many were."""
    if _OVERFULL.search(text) is None:
        return text, 0
    return _cap(text)


def _cap(text: str) -> tuple[str, int]:
    dropped = 0

    def keep_head(match: re.Match[str]) -> str:
        nonlocal dropped
        if match.group(2) is None:
            return match.group(0)
        dropped += sum(1 for _ in _ONE.finditer(match.group(2)))
        return match.group(1)

    return _SCAN.sub(keep_head, text), dropped
