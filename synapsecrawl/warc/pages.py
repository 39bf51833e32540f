"""A stored capture to what the knowledge base keeps, under a profile's rules, as a crawl would keep it.

``judge`` (``not_read``, ``read_document``, ``verdict_of``; split so the reading can run in worker
processes) reads one capture with today's extraction (``read_document``: the directives, the profile's
privacy scrub, OmniscienteBot's labels) and decides as a crawl's spider and pipeline do: a type the
profile does not read, binary bytes, an unreadable body or an answer other than 2xx is skipped; a
noindex (X-Robots-Tag in the stored headers, robots meta in the HTML) is said so, for the caller to
keep out or delete; anything else becomes the ``PageRecord`` (and ``LabelRecord``) a crawl would
store, fetched at the capture's date. ``TdmFiles`` remembers the tdmrep.json captures met so far, by
origin, so a page's TDM policy reads as it did in the crawl (robots.txt and tdmrep.json precede an
origin's pages in a crawl's files). Nothing here opens a KB or a file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from w3lib.encoding import http_content_type_encoding

from synapsecrawl.extract.page import Page
from synapsecrawl.extract.read import read_document
from synapsecrawl.kb.indexing import label_fields, labels_from_item, make_item, record_from_item
from synapsecrawl.kb.records import LabelRecord, PageRecord
from synapsecrawl.profiles import Profile
from synapsecrawl.rules.tdmrep import HEADER, META, TdmRep, declare, parse_tdmrep, read_pairs
from synapsecrawl.urls import canonical, origin_of, site_of
from synapsecrawl.warc.captures import Capture

__all__ = ["TdmFiles", "Verdict", "judge", "not_read", "reading", "verdict_of"]

_TDMREP_PATH = "/.well-known/tdmrep.json"

_Action = Literal["store", "noindex", "skip"]


@dataclass(frozen=True)
class Verdict:
    """What to do with one capture: store ``record`` (and ``labels``), keep a noindex out, or skip it."""

    action: _Action
    reason: str = ""  # why skipped: "status", "type", "binary", "unreadable", "revisit"
    record: PageRecord | None = None
    labels: LabelRecord | None = None


@dataclass
class TdmFiles:
    """The tdmrep.json of each origin, as the captures met so far give it (OMN-FETCH)."""

    files: dict[str, TdmRep] = field(default_factory=dict)

    def note(self, capture: Capture) -> bool:
        """Remember ``capture`` if it is an origin's tdmrep.json; whether it was one."""
        if not capture.url.endswith(_TDMREP_PATH) or capture.kind != "response":
            return False
        ok = 200 <= capture.status < 300
        self.files[origin_of(capture.url)] = parse_tdmrep(capture.body) if ok else TdmRep()
        return True

    def for_url(self, url: str) -> TdmRep:
        return self.files.get(origin_of(url)) or TdmRep()


def reading(capture: Capture, profile: Profile) -> dict[str, Any]:
    """The arguments ``read_document`` (or ``Reader.read``) takes for ``capture`` under ``profile``."""
    content_type = _content_type(capture)
    return {
        "content_type": content_type,
        "tokens": profile.tokens,
        "x_robots_tag": capture.header_values("X-Robots-Tag"),
        "encoding": http_content_type_encoding(content_type),
        "scrub_personal_data": profile.scrub_personal_data,
        "label": profile.labels,
    }


def not_read(capture: Capture, profile: Profile) -> str:
    """Why ``capture`` is not read at all ("" if it is): a crawl would not have read it either."""
    if capture.kind == "revisit":
        return "revisit"
    if not 200 <= capture.status < 300:
        return "status"
    if capture.undecodable:
        return "encoding"  # as the crawl's decoding middleware drops it
    content_type = _content_type(capture)
    if content_type and not profile.accepts_type(content_type):
        return "type"  # the crawl's type gate stops it at its headers
    return ""


def verdict_of(
    page: Page, capture: Capture, *, profile: Profile, kb: str, tdm: TdmRep | None = None, validators: bool = True
) -> Verdict:
    """What a crawl under ``profile`` keeps of ``capture`` read as ``page``, in knowledge base ``kb``.

    ``tdm``: the tdmrep.json of the capture's origin. ``validators``: keep the answer's ETag and
    Last-Modified, so a re-read may answer 304 (a capture of our own); an imported capture keeps none,
    so our own next fetch of it is a full one that replaces it.
    """
    if page.directives.noindex:
        return Verdict("noindex")
    unkept = _not_kept(page, profile)
    if unkept:
        return Verdict("skip", unkept)
    item = make_item(
        page,
        kb=kb,
        profile=profile,
        site=site_of(capture.url, profile.site),
        status=capture.status,
        etag=capture.header("ETag") if validators else "",
        last_modified=capture.header("Last-Modified") if validators else "",
        fetched_at=capture.date.replace(microsecond=0),
    ) | {"outlinks": _followable(page, profile)}
    if profile.labels:
        item |= _labels(page, capture, tdm or TdmRep())
    return Verdict("store", record=record_from_item(item), labels=labels_from_item(item))


def judge(
    capture: Capture, *, profile: Profile, kb: str, tdm: TdmRep | None = None, validators: bool = True
) -> Verdict:
    """``not_read``, ``read_document`` in this process and ``verdict_of``, in one call."""
    unread = not_read(capture, profile)
    if unread:
        return Verdict("skip", unread)
    page = read_document(capture.body, capture.url, **reading(capture, profile))
    return verdict_of(page, capture, profile=profile, kb=kb, tdm=tdm, validators=validators)


def _content_type(capture: Capture) -> str:
    return capture.header("Content-Type") if capture.kind == "response" else "text/plain"


def _not_kept(page: Page, profile: Profile) -> str:
    """Why a read ``page`` is not kept ("" if it is), as ``spiders.base`` judges it."""
    if page.not_text:
        return "binary"
    if not profile.accepts_type(page.content_type):
        return "type"
    if page.problems and not page.text:
        return "unreadable"
    return ""


def _followable(page: Page, profile: Profile) -> list[str]:
    """The links a crawl may follow from ``page``, as ``spiders.base`` keeps them (ALL-NOINDEX, SNA-NOFOLLOW)."""
    if page.directives.nofollow:
        return []
    skip_rel = not profile.follow_rel_nofollow
    return list(dict.fromkeys(canonical(link.url) for link in page.links if not (skip_rel and link.nofollow)))


def _labels(page: Page, capture: Capture, tdm: TdmRep) -> dict[str, object]:
    """OMN-LABELS and OMN-FETCH as ``middlewares.labels`` gives them: tdmrep.json, then headers, then meta."""
    declared = declare(tdm.declaration_for(capture.url), read_pairs(capture.headers, HEADER))
    if page.labels is None:
        return label_fields("other", (), declared)
    return label_fields(page.labels.kind, page.labels.links, declare(declared, read_pairs(page.labels.tdm_meta, META)))
