"""Choosing the reader for a response: HTML, plain text or PDF, by type, then by sniffing.

Binary bytes are no text, whatever type they came under (``extract.sniff``): such a page comes
back with ``not_text`` saying what the bytes are, and nothing of it is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from synapsecrawl.extract.page import Labels, Page
from synapsecrawl.extract.sniff import binary_signature

if TYPE_CHECKING:
    import lxml.html  # type: ignore[import-untyped,unused-ignore]

__all__ = ["media_type", "read_document"]


def media_type(content_type: str, body: bytes) -> str:
    """The lowercased media type, sniffed from the first bytes when none was sent."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media and media != "application/octet-stream":
        return media
    head = body[:512].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "application/pdf"
    if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head or b"<head" in head:
        return "text/html"
    return "text/plain"


def read_document(
    body: bytes,
    url: str,
    *,
    content_type: str,
    tokens: Sequence[str],
    x_robots_tag: Sequence[str] = (),
    encoding: str | None = None,
    scrub_personal_data: bool = False,
    label: bool = False,
) -> Page:
    """Extract a Page from any readable response; never raises on content.

    With ``scrub_personal_data``, its text comes back scrubbed (a profile's privacy promise), and
    with ``label`` it carries its OMN-LABELS (``Page.labels``), so the work is done where the
    reading is (a worker process, under its time guard), not on the crawl's event loop.
    """
    page = _read(
        body, url, content_type=content_type, tokens=tokens, x_robots_tag=x_robots_tag, encoding=encoding, label=label
    )
    if label and page.labels is None and not page.not_text:
        from synapsecrawl.extract.page_kind import label_url

        page = replace(page, labels=Labels(label_url(url).kind))  # no HTML: what its address says
    if not scrub_personal_data:
        return page
    from synapsecrawl.extract.privacy import scrub

    return replace(
        page, text=scrub(page.text), snippet_text=scrub(page.snippet_text) if page.snippet_text else "", scrubbed=True
    )


def _read(
    body: bytes,
    url: str,
    *,
    content_type: str,
    tokens: Sequence[str],
    x_robots_tag: Sequence[str],
    encoding: str | None,
    label: bool,
) -> Page:
    media = media_type(content_type, body)
    signature = binary_signature(body)
    if signature and media != "application/pdf":
        from synapsecrawl.extract.directives import parse_directives

        sent = f"sent as {content_type.split(';', 1)[0].strip().lower()}" if content_type.strip() else "sent untyped"
        return Page(
            url=url,
            content_type=media,
            directives=parse_directives((), x_robots_tag, tokens),
            not_text=f"the body is {signature}, {sent}",
        )
    if media == "application/pdf":
        from synapsecrawl.extract.pdf import parse_pdf

        return parse_pdf(body, url, tokens=tokens, x_robots_tag=x_robots_tag)
    if media == "text/plain":
        from synapsecrawl.extract.text import parse_text

        return parse_text(body, url, tokens=tokens, x_robots_tag=x_robots_tag, encoding=encoding)
    from synapsecrawl.extract.html import parse_html

    return parse_html(
        body,
        url,
        tokens=tokens,
        x_robots_tag=x_robots_tag,
        encoding=encoding,
        content_type=media,
        labeller=_labels if label else None,
    )


def _labels(root: lxml.html.HtmlElement, url: str) -> tuple[Labels, tuple[str, ...]]:
    """OMN-LABELS of the page, and the bounds the labelling met (parse_html calls it with the page's tree)."""
    from synapsecrawl.extract.link_context import link_labelling
    from synapsecrawl.extract.page_kind import label_page  # labels reads JSON-LD with this module

    links = link_labelling(root, url)
    tdm = tuple(
        (name, content)
        for meta in root.iter("meta")
        if (name := (meta.get("name") or "")).strip().lower().startswith("tdm-")
        and (content := meta.get("content")) is not None
    )
    kind = label_page(root, url).kind
    return Labels(kind, tuple((link.url, link.context) for link in links.labels), tdm), links.bounded
