"""From an extracted Page to what the knowledge base keeps (and what is exported).

The item is a plain dict so ``-O out.jsonl`` exports it as it is; the KB
record is built from the same dict, so export and KB never disagree.
SnagaBot's text is scrubbed of e-mail addresses and phone numbers here, once,
before it is either exported or stored (SNA-PRIVACY).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from synapsecrawl.extract.page import Page
from synapsecrawl.kb.records import LabelRecord, PageRecord, utcnow
from synapsecrawl.profiles import Profile
from synapsecrawl.rules.tdmrep import TdmDeclaration

__all__ = ["label_fields", "labels_from_item", "make_item", "record_from_item"]


def make_item(
    page: Page,
    *,
    kb: str,
    profile: Profile,
    site: str,
    status: int,
    etag: str = "",
    last_modified: str = "",
    fetched_at: datetime | None = None,
) -> dict[str, Any]:
    """The item a crawl yields for a page it keeps."""
    text, snippet_text, title, description = page.text, page.snippet_text, page.title, page.description
    if profile.scrub_personal_data:
        from synapsecrawl.extract.privacy import scrub

        title, description = scrub(title), scrub(description)  # shown with every result, stored as text is
        if not page.scrubbed:
            text = scrub(text)
            snippet_text = scrub(snippet_text) if snippet_text else ""
    return {
        "url": page.url,
        "kb": kb,
        "title": title,
        "text": text,
        "content_type": page.content_type,
        "status": status,
        "fetched_at": (fetched_at or utcnow()).isoformat(),
        "etag": etag,
        "last_modified": last_modified,
        "snippet_text": snippet_text,
        "nosnippet": page.directives.nosnippet,
        "max_snippet": page.directives.max_snippet,
        "language": page.language,
        "description": description,
        "site": site,
        "image": page.og_image,
        "published": page.published,
    }


def record_from_item(item: Mapping[str, Any]) -> PageRecord:
    """The KB record for an item made by ``make_item``."""
    return PageRecord(
        kb=str(item["kb"]),
        url=str(item["url"]),
        title=str(item.get("title") or ""),
        text=str(item.get("text") or ""),
        content_type=str(item.get("content_type") or ""),
        status=int(item.get("status") or 200),
        fetched_at=datetime.fromisoformat(str(item["fetched_at"])),
        etag=str(item.get("etag") or ""),
        last_modified=str(item.get("last_modified") or ""),
        snippet_text=str(item.get("snippet_text") or ""),
        nosnippet=bool(item.get("nosnippet")),
        max_snippet=item.get("max_snippet"),
        site=str(item.get("site") or ""),
        language=str(item.get("language") or ""),
        description=str(item.get("description") or ""),
        image=str(item.get("image") or ""),
        published=str(item.get("published") or ""),
        feed=str(item.get("feed") or ""),
        depth=None if item.get("depth") is None else int(item["depth"]),
        outlinks=tuple(str(url) for url in item.get("outlinks") or ()),
    )


def label_fields(kind: str, links: Iterable[tuple[str, str]], tdm: TdmDeclaration) -> dict[str, Any]:
    """The item fields of OmniscienteBot's labels (OMN-LABELS) and TDM policy (OMN-FETCH): no text."""
    return {
        "page_kind": kind,
        "link_contexts": [{"url": url, "context": context} for url, context in links],
        "tdm_reservation": tdm.reservation,
        "tdm_policy": tdm.policy,
        "tdm_source": tdm.source,
    }


def labels_from_item(item: Mapping[str, Any]) -> LabelRecord | None:
    """The KB labels of an item carrying ``label_fields``; None for an unlabelled item."""
    if not item.get("page_kind"):
        return None
    links = tuple((str(link["url"]), str(link["context"])) for link in item.get("link_contexts") or ())
    reservation = item.get("tdm_reservation")
    return LabelRecord(
        kb=str(item["kb"]),
        url=str(item["url"]),
        kind=str(item["page_kind"]),
        links=links,
        tdm_reservation=int(reservation) if reservation in (0, 1) else None,
        tdm_policy=str(item.get("tdm_policy") or ""),
        tdm_source=str(item.get("tdm_source") or ""),
    )
