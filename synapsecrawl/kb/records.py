"""What a knowledge base keeps: the records the stores write and read, as frozen dataclasses.

Shared by both back-ends (``sqlite``, ``postgres``) and their row helpers, which is why they live
apart from ``store`` (the Protocol) and ``synapsecrawl.kb`` (``open_store``): no back-end imports the
module that imports it. Times are UTC-aware datetimes (``fetched_at``) or unix seconds where a
profile's limit is judged against them (robots.txt copies, backoff state, sources).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from synapsecrawl.kb.search import ShownPassage

__all__ = [
    "LabelRecord",
    "PageRecord",
    "RobotsCopy",
    "SearchHit",
    "SiteIcon",
    "SiteState",
    "Source",
    "UrlHold",
    "utcnow",
]


def utcnow() -> datetime:
    """Now, UTC-aware, to the second."""
    return datetime.now(UTC).replace(microsecond=0)


@dataclass(frozen=True)
class PageRecord:
    """One stored page of one knowledge base."""

    kb: str
    url: str
    title: str
    text: str
    content_type: str
    status: int
    fetched_at: datetime
    etag: str = ""
    last_modified: str = ""
    snippet_text: str = ""  # text shown in snippets ("" = same as text)
    nosnippet: bool = False
    max_snippet: int | None = None
    site: str = ""
    language: str = ""
    description: str = ""
    verified_at: datetime | None = None  # last 304 that confirmed this copy
    image: str = ""  # preview image: og:image, or a feed entry's own image (SER-OGIMAGE)
    published: str = ""  # ISO 8601 as the page or feed entry states it; "" when unknown
    feed: str = ""  # for a feed entry, the URL of the feed it came from
    depth: int | None = None  # the link depth a site crawl found it at (a re-read follows its links from there)
    outlinks: tuple[str, ...] = ()  # the links it lets a crawl follow, so a 304 still leads to them
    # When it is fetched again (synapsecrawl.kb.revisit): seconds, unix seconds, and what its last fetch found
    # ("new", "changed", "unchanged"); None and "" for a page stored before the KB kept them.
    revisit_interval: float | None = None
    revisit_due: float | None = None
    revisit_outcome: str = ""


@dataclass(frozen=True)
class SearchHit:
    """One search result: never a page's full text."""

    url: str
    kb: str
    title: str
    snippet: str
    score: float
    passage: int | None = None  # ordinal of the passage that answers (kb.search)
    anchor: str = ""  # link to that passage: URL#:~:text=... (or the URL under nosnippet)
    passages: tuple[ShownPassage, ...] = ()  # the passages shown in ``snippet``, best first
    fetched_at: datetime | None = None  # when the copy the result shows was fetched


@dataclass(frozen=True)
class LabelRecord:
    """OmniscienteBot's labels of one page, never its text (OMN-LABELS), and its TDM policy (OMN-FETCH)."""

    kb: str
    url: str
    kind: str  # synapsecrawl.extract.page_kind.PAGE_KINDS
    links: tuple[tuple[str, str], ...] = ()  # (target URL, context) in page order
    tdm_reservation: int | None = None  # 1 reserved, 0 not reserved, None unset (W3C TDMRep)
    tdm_policy: str = ""
    tdm_source: str = ""  # "file", "header", "meta" or "" (synapsecrawl.rules.tdmrep)


@dataclass(frozen=True)
class RobotsCopy:
    """A robots.txt fetch outcome as stored: status 0 means unreachable."""

    origin: str
    status: int
    body: bytes
    fetched_at: float  # unix seconds
    # While robots.txt cannot be read: the last time it was (the earliest its site may have been closed
    # to us), unix seconds; 0.0 while it can be read (YOT-STALE, synapsecrawl.kb.removals).
    unreadable_since: float = 0.0


@dataclass(frozen=True)
class SiteState:
    """What a profile remembers of a site across crawls (synapsecrawl.pacing.backoff)."""

    site: str
    paused_until: float = 0.0  # unix seconds; not touched before then
    pause_reason: str = ""
    slow_streak: int = 0  # pauses in a row, for doubling
    forbidden_streak: int = 0  # 403 answers in a row


@dataclass(frozen=True)
class UrlHold:
    """A URL not to fetch before ``until``: a remembered failure, or a deferred retry."""

    url: str
    kind: Literal["gone", "deferred"]  # gone: e.g. a 404 remembered; deferred: fetch it after ``until``
    until: float  # unix seconds
    reason: str
    site: str = ""
    kb: str = ""
    failures: int = 0
    recorded_at: float = 0.0  # unix seconds


@dataclass(frozen=True)
class SiteIcon:
    """The icon found for a site (SER-ICON); ``url`` "" means none of the candidates answered with one."""

    origin: str
    url: str
    content_type: str
    fetched_at: float  # unix seconds


@dataclass(frozen=True)
class Source:
    """What a KB user added, re-read on a schedule (SYN-REREAD; synapsecrawl.kb.reread)."""

    id: str
    mode: str  # the spider: page, site, sitemap, feed
    urls: tuple[str, ...]
    kb: str
    profile: str
    deployment: str
    depth: str = ""  # as the KB user gave it ("" = the profile's)
    max_pages: str = ""
    interval: float = 7 * 86400.0  # seconds between re-reads
    added_at: float = 0.0  # unix seconds
    last_crawl: float = 0.0  # when its last crawl ended (0 = never)
    next_due: float = 0.0
    outcome: str = ""  # how the last crawl ended, or that one was scheduled
    run_started: float = 0.0  # when its current run began; a run is open (resumable) while after last_crawl
