"""Sitemaps: the bytes of a sitemap, sitemap index or text sitemap into entries.

Follows the sitemaps.org protocol: an XML ``<urlset>`` of ``<url><loc>`` (and
``<lastmod>``, a W3C datetime), an XML ``<sitemapindex>`` of ``<sitemap><loc>``,
or a UTF-8 text file of one URL a line; any of them gzipped. The protocol
caps a sitemap at 50,000 URLs and 50 MB uncompressed, and so does the parser:
past either cap it reads what fits and says so.

Nothing here raises on content. XML is read with entity expansion, DTD
loading and network access off and libxml2's size limits on (no
``huge_tree``), so a billion-laughs or external-entity document is inert;
a broken document yields the entries before the break and a problem phrase.
Which entries a crawl fetches (host, robots.txt, page limit) is the caller's.
"""

from __future__ import annotations

import io
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Literal

from lxml import etree

from synapsecrawl.urls import url_problem

__all__ = [
    "MAX_ENTRIES",
    "MAX_SITEMAP_BYTES",
    "Sitemap",
    "SitemapEntry",
    "decompress",
    "order_entries",
    "parse_lastmod",
    "parse_sitemap",
]

MAX_ENTRIES = 50_000  # sitemaps.org: "no more than 50,000 URLs"
MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # sitemaps.org: "no larger than 50MB (52,428,800 bytes)"
_MAX_URL_CHARS = 2048  # sitemaps.org: <loc> "must be less than 2,048 characters"

_KINDS: dict[str, Literal["urlset", "index"]] = {"urlset": "urlset", "sitemapindex": "index"}
_ITEM = {"urlset": "url", "sitemapindex": "sitemap"}
_URL = re.compile(  # an absolute http(s) URL with a host and no whitespace
    r"https?://(?:[^/?#@\s]*@)?(?:\[[0-9a-f:.]+\]|[^/?#@:\[\]\s]+)(?::\d*)?(?:[/?#]\S*)?", re.IGNORECASE
)
_LEADING = re.compile(rb"(?:\xef\xbb\xbf)?\s*")
_LASTMOD = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?\s*(Z|z|[+-]\d{2}:?\d{2})?)?)?)?"
)


@dataclass(frozen=True)
class SitemapEntry:
    """One ``<loc>`` (or text line), with its ``<lastmod>`` when valid."""

    url: str
    lastmod: datetime | None = None


@dataclass(frozen=True)
class Sitemap:
    """What a sitemap lists: pages (``urlset``, ``text``) or sitemaps (``index``)."""

    kind: Literal["urlset", "index", "text", "none"]
    entries: tuple[SitemapEntry, ...] = ()
    invalid: int = 0  # entries without a usable absolute http(s) URL
    problems: tuple[str, ...] = ()  # short phrases: what could not be read


def decompress(body: bytes, max_bytes: int = MAX_SITEMAP_BYTES) -> tuple[bytes, str | None]:
    """``body`` gunzipped when it is gzip (by its magic bytes), at most ``max_bytes``.

    Returns the bytes and a problem phrase (None when all was read): a bomb
    stops at the cap, a corrupt stream keeps what inflated before the damage.
    """
    if not body.startswith(b"\x1f\x8b"):
        if len(body) > max_bytes:
            return body[:max_bytes], f"larger than {max_bytes} bytes: read the first {max_bytes}"
        return body, None
    out = bytearray()
    data = body
    try:
        while data:
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            while data and not inflater.eof:
                out += inflater.decompress(data, max_bytes + 1 - len(out))
                if len(out) > max_bytes:
                    del out[max_bytes:]
                    return bytes(out), (f"larger than {max_bytes} bytes once decompressed: read the first {max_bytes}")
                data = inflater.unconsumed_tail
            data = inflater.unused_data.lstrip(b"\x00")  # a next gzip member, or padding
            if data and not data.startswith(b"\x1f\x8b"):
                break  # trailing garbage after the last member: ignored, as gzip(1) does
    except zlib.error as exc:
        return bytes(out), f"gzip data corrupt ({exc}): read what inflated before it"
    return bytes(out), None


def parse_lastmod(value: str) -> datetime | None:
    """A W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, with time and zone) as UTC; None when invalid.

    A time without a zone is taken as UTC. An unreadable one (a zone of +99:99, a 25th hour) is no
    lastmod: its entry is kept, ordered with the entries that have none.
    """
    match = _LASTMOD.fullmatch(value.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second, zone = match.groups()
    tz = UTC
    try:
        if zone and zone not in ("Z", "z"):
            sign = -1 if zone[0] == "-" else 1
            digits = zone[1:].replace(":", "")
            tz = timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))  # +99:99 raises
        stamp = datetime(
            int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0), int(second or 0), tzinfo=tz
        )
        return stamp.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def order_entries(entries: Iterable[SitemapEntry]) -> list[SitemapEntry]:
    """Newest ``lastmod`` first, then the entries without one; ties keep document order."""
    return sorted(entries, key=lambda e: (e.lastmod is None, -e.lastmod.timestamp() if e.lastmod else 0.0))


def _usable(url: str) -> str | None:
    url = url.strip()
    if len(url) >= _MAX_URL_CHARS or not _URL.fullmatch(url) or url_problem(url) is not None:
        return None  # counted in Sitemap.invalid; the other entries are read on (port 99999)
    return url


def _localname(element: etree._Element | None) -> str:
    tag = element.tag if element is not None else None
    if not isinstance(tag, str):
        return ""  # comments, processing instructions, entities
    return tag.rsplit("}", 1)[-1].lower()


def _child_text(element: etree._Element, name: str) -> str:
    child = element.find(name)
    if child is None or len(child):  # absent, or an unexpanded entity or markup inside
        return ""
    return (child.text or "").strip()


def _entry(element: etree._Element) -> SitemapEntry | None:
    url = _usable(_child_text(element, "{*}loc"))
    return None if url is None else SitemapEntry(url, parse_lastmod(_child_text(element, "{*}lastmod")))


def _parse_xml(data: bytes, max_entries: int) -> Sitemap:
    entries: list[SitemapEntry] = []
    problems: list[str] = []
    invalid = 0
    root = ""
    events = etree.iterparse(
        io.BytesIO(data), events=("end",), tag=("{*}url", "{*}sitemap"), resolve_entities=False,
        no_network=True, load_dtd=False, huge_tree=False, recover=True, remove_comments=True, remove_pis=True,
    )  # fmt: skip
    try:
        for _, element in events:
            parent = element.getparent()
            if parent is None or parent.getparent() is not None:
                continue  # the root itself, or an element nested deeper than an entry
            root = root or _localname(parent)
            if root not in _KINDS:
                break
            if _localname(element) != _ITEM[root]:
                continue
            if stop := _stop_reason(events, entries, max_entries):
                problems.append(stop)
                break
            entry = _entry(element)
            if entry is None:
                invalid += 1
            else:
                entries.append(entry)
            element.clear()  # keep memory flat on 50,000 entries
            while element.getprevious() is not None:
                del parent[0]
    except etree.LxmlError as exc:
        problems.append(f"malformed XML ({_first_line(exc)}): kept {len(entries)} entries read before it")
    else:
        errors = [e for e in events.error_log if e.level >= etree.ErrorLevels.ERROR]
        if errors:
            problems.append(f"malformed XML ({errors[0].message[:200]}): kept {len(entries)} entries read")
    root = root or _localname(events.root)  # events.root is set once the whole document was read
    if root not in _KINDS:
        return Sitemap("none", problems=(f"not a sitemap (root element <{root or '?'}>)", *problems))
    return Sitemap(_KINDS[root], tuple(entries), invalid, tuple(problems))


def _stop_reason(events: etree.iterparse, entries: list[SitemapEntry], max_entries: int) -> str:
    """Why to read no further entries, or "" to go on."""
    log = events.error_log
    if log and any(error.type_name == "ERR_RESOURCE_LIMIT" for error in log):
        # libxml2 >= 2.14 stops an entity bomb part-way and keeps the text before the entity
        # (`http://h/p/&lol9;` reads as `http://h/p/`): no entry of such a document is trusted.
        entries.clear()
        return "entity expansion limit hit: no entry of it is read"
    if len(entries) >= max_entries:
        return f"more than {max_entries} entries: read the first {max_entries}"
    return ""


def _first_line(exc: Exception) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def _parse_text(data: bytes, max_entries: int) -> Sitemap:
    entries: list[SitemapEntry] = []
    problems: list[str] = []
    invalid = 0
    for line in data.decode("utf-8-sig", errors="replace").splitlines():
        if not line.strip():
            continue
        if len(entries) >= max_entries:
            problems.append(f"more than {max_entries} entries: read the first {max_entries}")
            break
        url = _usable(line)
        if url is None:
            invalid += 1
        else:
            entries.append(SitemapEntry(url))
    if invalid and not entries:
        problems.append("not a sitemap (no line is a URL)")
        return Sitemap("none", invalid=invalid, problems=tuple(problems))
    return Sitemap("text", tuple(entries), invalid, tuple(problems))


def parse_sitemap(body: bytes, *, max_bytes: int = MAX_SITEMAP_BYTES, max_entries: int = MAX_ENTRIES) -> Sitemap:
    """Read a sitemap, sitemap index or text sitemap, gzipped or not; never raises on content."""
    data, problem = decompress(body, max_bytes)
    leading = _LEADING.match(data)
    start = leading.end() if leading else 0
    head = data[start : start + 4]
    if not head:
        sitemap = Sitemap("none", problems=("empty",))
    elif head.startswith((b"<", b"\xff\xfe", b"\xfe\xff")):  # UTF-16 XML starts with its BOM
        sitemap = _parse_xml(data, max_entries)
    else:
        sitemap = _parse_text(data, max_entries)
    if problem is None:
        return sitemap
    return Sitemap(sitemap.kind, sitemap.entries, sitemap.invalid, (problem, *sitemap.problems))
