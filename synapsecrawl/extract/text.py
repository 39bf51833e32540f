"""text/plain responses → Page, and the byte decoding the HTML parser shares.

Decoding follows the WHATWG encoding sniffing order: a byte-order mark, then
the charset the server declared, then a guess. The guess keeps UTF-8 when the
bytes are UTF-8 (a body cut short by the size cap included), else asks
charset_normalizer, preferring windows-1252, the web's default legacy
encoding, whenever it reads about as well as the best guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import charset_normalizer
from w3lib.encoding import read_bom, resolve_encoding, to_unicode

from synapsecrawl.extract.directives import parse_directives
from synapsecrawl.extract.page import Page
from synapsecrawl.extract.sniff import unreadable_share

__all__ = ["clean_text", "decode", "detect_encoding", "parse_text"]

MAX_TITLE_CHARS = 200
_SNIFF_BYTES = 65_536
_WESTERN = frozenset({"cp1252", "latin_1", "iso8859_1", "iso8859_15"})
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufdd0]")
_BLANK_LINES = re.compile(r"\n[ \t\f\v\r\u00a0]*\n\s*")


def detect_encoding(body: bytes) -> str:
    """Guess the encoding of undeclared bytes (Python codec name)."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start < len(body) - 3:
            return _guess_legacy(body[:_SNIFF_BYTES])
    return "utf-8"


def _guess_legacy(sample: bytes) -> str:
    matches = charset_normalizer.from_bytes(sample)
    best = matches.best()
    if best is None:
        return "cp1252"
    for match in matches:
        if match.encoding in _WESTERN and match.chaos <= best.chaos + 0.1:
            return "cp1252"
    return str(best.encoding)


def decode(body: bytes, encoding: str | None = None) -> tuple[str, str]:
    """Decode `body`: BOM, else the declared `encoding`, else a guess.

    Returns (codec name, text); undecodable bytes become U+FFFD.
    """
    bom_encoding, bom = read_bom(body)
    if bom_encoding is not None and bom is not None:
        return bom_encoding, to_unicode(body[len(bom) :], bom_encoding)
    declared = resolve_encoding(encoding) if encoding else None
    codec = declared or detect_encoding(body)
    return codec, to_unicode(body, codec)


def clean_text(text: str) -> str:
    """Drop control characters and collapse whitespace inside each line-run.

    Paragraphs are runs of text separated by blank lines; the result keeps
    one blank line between paragraphs and none inside them.
    """
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    paragraphs = (" ".join(part.split()) for part in _BLANK_LINES.split(text))
    return "\n\n".join(p for p in paragraphs if p)


def _first_line(text: str) -> str:
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if line:
            return line[:MAX_TITLE_CHARS].rstrip()
    return ""


def parse_text(
    body: bytes,
    url: str,
    *,
    tokens: Sequence[str],
    x_robots_tag: Sequence[str] = (),
    encoding: str | None = None,
) -> Page:
    """Read a text/plain response; the title is its first non-empty line."""
    _, raw = decode(body, encoding)
    not_text = unreadable_share(raw)
    if not_text:
        return Page(
            url=url, content_type="text/plain", directives=parse_directives((), x_robots_tag, tokens), not_text=not_text
        )
    raw = _CONTROL.sub("", raw)
    text = clean_text(raw)
    return Page(
        url=url,
        content_type="text/plain",
        title=_first_line(raw),
        text=text,
        directives=parse_directives((), x_robots_tag, tokens),
        problems=() if text else ("text: empty",),
    )
