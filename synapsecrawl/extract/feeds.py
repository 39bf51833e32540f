"""Feeds: what a feed document holds, what an article page's preview is, where a site's icon may be.

``parse_feed`` reads RSS 0.9x/1.0/2.0 and Atom with feedparser, and JSON Feed
1.x itself, from bytes; it never raises on content: a document that is no feed
comes back with ``kind == ""`` and a problem named. Entries carry their link,
title, plain text (HTML stripped), publication time (ISO 8601, UTC), and an
image: an ``image/*`` enclosure, ``media:content`` / ``media:thumbnail``, else
the first ``<img>`` of the content. Every URL is made absolute against the
feed's URL (or its ``xml:base``); one that is not http(s) is dropped.

``read_og_image`` reads a page's ``og:image`` (The Open Graph protocol),
``icon_candidates`` lists the icons to try in order (SER-ICON). Nothing here
fetches anything.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from lxml import etree
from w3lib.encoding import html_to_unicode

from synapsecrawl.extract.html import _absolute, _parse_tree, _visible_text
from synapsecrawl.extract.text import detect_encoding
from synapsecrawl.urls import origin_of

__all__ = [
    "ENTRY_TYPE_SUFFIX",
    "ICON_PATHS",
    "Feed",
    "FeedEntry",
    "icon_candidates",
    "is_image_type",
    "parse_feed",
    "read_og_image",
]

ICON_PATHS = ("/favicon.ico", "/apple-touch-icon.png", "/apple-touch-icon-precomposed.png")  # SER-ICON order
ENTRY_TYPE_SUFFIX = ";type=entry"  # RFC 5023 §12.1's Atom entry parameter, used for every kind of feed
_MEDIA_TYPES = {"rss": "application/rss+xml", "atom": "application/atom+xml", "json": "application/feed+json"}
_MAX_FIELD_CHARS = 1_000
_OG_IMAGE = ("og:image", "og:image:url", "og:image:secure_url")
# A feed served as text/html or with a charset its XML declaration contradicts reads fine.
_RSS1 = "{http://purl.org/rss/1.0/}"


@dataclass(frozen=True)
class FeedEntry:
    """One entry of a feed, as the feed states it."""

    link: str
    title: str = ""
    text: str = ""
    published: str = ""  # ISO 8601, UTC; "" when the entry gives no date
    image: str = ""  # "" when the entry carries no image


@dataclass(frozen=True)
class Feed:
    """A feed document: its own facts and its entries (in document order)."""

    url: str
    kind: str = ""  # "rss", "atom", "json"; "" when the document is no feed
    title: str = ""
    link: str = ""  # the site the feed belongs to
    description: str = ""
    language: str = ""
    icon: str = ""  # the icon (else the logo or RSS image) the feed declares
    entries: tuple[FeedEntry, ...] = ()
    skipped: int = 0  # entries without a usable http(s) link
    problems: tuple[str, ...] = ()

    @property
    def media_type(self) -> str:
        """The media type of this kind of feed ("" when the document is no feed)."""
        return _MEDIA_TYPES.get(self.kind, "")


def _harmless() -> tuple[type[Exception], ...]:
    """feedparser's notes that are no fault of the feed (a text/plain type, an encoding it overrode)."""
    import feedparser

    return (feedparser.NonXMLContentType, feedparser.CharacterEncodingOverride)


def is_image_type(content_type: str) -> bool:
    """Whether a Content-Type names an image."""
    return content_type.split(";", 1)[0].strip().lower().startswith("image/")


def icon_candidates(site_url: str, declared: str = "") -> tuple[str, ...]:
    """The icons of ``site_url``'s origin to try, in order: the declared one, then the usual paths (SER-ICON)."""
    origin = origin_of(site_url)
    return tuple(dict.fromkeys([u for u in (declared, *(origin + path for path in ICON_PATHS)) if u]))


def _squash(value: object, limit: int = _MAX_FIELD_CHARS) -> str:
    return " ".join(str(value or "").split())[:limit]


def _html_text(value: str) -> str:
    """Plain text of an HTML fragment: paragraphs kept, scripts and markup gone."""
    root = _parse_tree(value) if value.strip() else None
    return _visible_text(root) if root is not None else ""


def _first_img(value: str, base: str) -> str:
    root = _parse_tree(value) if "<img" in value.lower() else None
    if root is None:
        return ""
    for img in root.iter("img"):
        if img.get("width") == "1" or img.get("height") == "1":
            continue  # a tracking pixel, no preview
        url = _absolute(base, img.get("src"))
        if url:
            return url
    return ""


def _iso(parsed: Any) -> str:
    if not isinstance(parsed, time.struct_time):
        return ""
    try:
        return datetime(*parsed[:6], tzinfo=UTC).isoformat()
    except (ValueError, OverflowError):
        return ""


def _iso_text(value: object) -> str:
    try:
        when = datetime.fromisoformat(str(value))  # Python 3.11 reads "Z"
    except ValueError:
        return ""
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC).isoformat()


def _detail_text(detail: Mapping[str, Any] | None, fallback: object = "") -> str:
    value = str((detail or {}).get("value", fallback) or "")
    kind = str((detail or {}).get("type", "") or "")
    return _html_text(value) if "html" in kind or "<" in value else " ".join(value.split())


def _rss_atom_image(entry: Mapping[str, Any], base: str, html: Iterable[str]) -> str:
    candidates: list[str] = []
    for link in entry.get("links") or ():
        if link.get("rel") == "enclosure" and is_image_type(str(link.get("type") or "")):
            candidates.append(str(link.get("href") or ""))
    for media in entry.get("media_content") or ():
        if media.get("medium") == "image" or is_image_type(str(media.get("type") or "")):
            candidates.append(str(media.get("url") or ""))
    candidates.extend(str(t.get("url") or "") for t in entry.get("media_thumbnail") or ())
    for url in candidates:
        absolute = _absolute(base, url)
        if absolute:
            return absolute
    for fragment in html:
        found = _first_img(fragment, base)
        if found:
            return found
    return ""


def _rss_atom_entry(entry: Mapping[str, Any], base: str) -> FeedEntry | None:
    link = _absolute(base, str(entry.get("link") or ""))
    if not link and str(entry.get("id") or "").startswith(("http://", "https://")):
        link = _absolute(base, str(entry.get("id")))  # RSS guid isPermaLink, Atom id as a URL
    if not link:
        return None
    contents = [c for c in entry.get("content") or () if c.get("value")]
    body = max(contents, key=lambda c: len(str(c.get("value")))) if contents else entry.get("summary_detail")
    html = [str(c.get("value") or "") for c in contents] + [str(entry.get("summary") or "")]
    return FeedEntry(
        link=link,
        title=_squash(_detail_text(entry.get("title_detail"), entry.get("title"))),
        text=_detail_text(body, entry.get("summary")),
        published=_iso(entry.get("published_parsed") or entry.get("updated_parsed")),
        image=_rss_atom_image(entry, base, html),
    )


def _rss1_image(body: bytes) -> str:
    """RSS 1.0's channel image (<image><url>, a child of rdf:RDF), which feedparser 6 drops; "" when none."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True, load_dtd=False)
    try:
        root = etree.fromstring(body, parser)
    except etree.XMLSyntaxError:  # recover=True still refuses a document with no element at all
        return ""
    return "" if root is None else (root.findtext(f"{_RSS1}image/{_RSS1}url") or "").strip()


def _parse_rss_atom(body: bytes, url: str, content_type: str) -> Feed:
    try:
        headers = {"content-location": url, "content-type": content_type or "application/xml"}
        import feedparser  # here, not at the top: only feed crawls pay its import at start

        parsed = feedparser.parse(body, response_headers=headers)
    # feedparser is third-party code run on hostile input; like page.py: never raise on content
    except Exception as error:  # noqa: BLE001
        return Feed(url, problems=(f"feed: unreadable ({type(error).__name__})",))
    version = str(parsed.get("version") or "")
    meta = parsed.get("feed") or {}
    if not version and not parsed.get("entries"):
        reason = None if isinstance(parsed.get("bozo_exception"), _harmless()) else parsed.get("bozo_exception")
        why = f"not RSS, Atom or JSON Feed ({_squash(reason, 120)})" if reason else "not RSS, Atom or JSON Feed"
        return Feed(url, problems=(f"feed: {why}",))
    base = url
    entries, skipped = [], 0
    for raw in parsed.get("entries") or ():
        entry = _rss_atom_entry(raw, str((raw.get("title_detail") or {}).get("base") or base))
        if entry is None:
            skipped += 1
        else:
            entries.append(entry)
    image = meta.get("image") or {}
    problems = []
    if parsed.get("bozo") and not isinstance(parsed.get("bozo_exception"), _harmless()):
        problems.append(f"feed: not well-formed, read leniently ({_squash(parsed.get('bozo_exception'), 120)})")
    return Feed(
        url=url,
        kind="atom" if version.startswith("atom") else "rss",
        title=_squash(_detail_text(meta.get("title_detail"), meta.get("title"))),
        link=_absolute(base, str(meta.get("link") or "")),
        description=_detail_text(meta.get("subtitle_detail"), meta.get("subtitle")),
        language=_squash(meta.get("language"), 35),
        icon=next(
            (
                u
                for u in (
                    _absolute(base, str(v or ""))
                    for v in (
                        meta.get("icon"),
                        meta.get("logo"),
                        image.get("href") if isinstance(image, Mapping) else "",
                        _rss1_image(body) if version == "rss10" else "",
                    )
                )
                if u
            ),
            "",
        ),
        entries=tuple(entries),
        skipped=skipped,
        problems=tuple(problems),
    )


def _json_item(item: object, base: str) -> FeedEntry | None:
    if not isinstance(item, dict):
        return None
    link = _absolute(base, str(item.get("url") or item.get("external_url") or ""))
    if not link:
        return None
    html = str(item.get("content_html") or "")
    text = _html_text(html) if html else " ".join(str(item.get("content_text") or item.get("summary") or "").split())
    image = _absolute(base, str(item.get("image") or item.get("banner_image") or "")) or _first_img(html, base)
    return FeedEntry(
        link=link,
        title=_squash(item.get("title")),
        text=text,
        published=_iso_text(item.get("date_published") or item.get("date_modified") or ""),
        image=image,
    )


def _parse_json(body: bytes, url: str) -> Feed | None:
    """A JSON Feed (jsonfeed.org 1.0/1.1), or None when the body is no JSON Feed."""
    try:
        data = json.loads(body.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or "jsonfeed.org/version/" not in str(data.get("version", "")):
        return None
    base = url
    entries, skipped = [], 0
    items = data.get("items")
    for item in items if isinstance(items, list) else ():
        entry = _json_item(item, base)
        if entry is None:
            skipped += 1
        else:
            entries.append(entry)
    return Feed(
        url=url,
        kind="json",
        title=_squash(data.get("title")),
        link=_absolute(base, str(data.get("home_page_url") or "")),
        description=" ".join(str(data.get("description") or "").split()),
        language=_squash(data.get("language"), 35),
        icon=_absolute(base, str(data.get("icon") or data.get("favicon") or "")),
        entries=tuple(entries),
        skipped=skipped,
    )


def parse_feed(body: bytes, url: str, *, content_type: str = "") -> Feed:
    """Read a feed document fetched from ``url``. Never raises on content."""
    head = body[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith((b"{", b"[")):
        found = _parse_json(body, url)
        return found if found is not None else Feed(url, problems=("feed: JSON, but no JSON Feed",))
    return _parse_rss_atom(body, url, content_type)


def read_og_image(body: bytes, url: str, *, content_type: str = "") -> str:
    """The absolute ``og:image`` of an HTML page ("" when it has none). Never raises on content."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media and media not in ("text/html", "application/xhtml+xml"):
        return ""
    _, text = html_to_unicode(content_type or "text/html", body, auto_detect_fun=detect_encoding)
    root = _parse_tree(text.replace("\x00", ""))
    if root is None:
        return ""
    base = url
    for element in root.iter("base"):
        if element.get("href"):
            base = _absolute(url, element.get("href")) or url
            break
    found: dict[str, str] = {}
    for meta in root.iter("meta"):
        key = (meta.get("property") or meta.get("name") or "").strip().lower()
        if key in _OG_IMAGE and key not in found and (meta.get("content") or "").strip():
            found[key] = meta.get("content", "")
    for key in _OG_IMAGE:
        image = _absolute(base, found.get(key))
        if image:
            return image
    return ""
