"""The knowledge base interface: what a crawl keeps, and what it remembers.

``Store`` is the Protocol both back-ends implement (SQLite by default,
PostgreSQL at scale); ``open_store(uri)`` picks one from ``KB_URI``. Times at
this edge are UTC-aware datetimes stored as ISO 8601 text; robots.txt copies
carry a unix timestamp so their age can be judged against a profile's limit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol

from synapsecrawl.errors import ConfigError
from synapsecrawl.kb.search import ShownPassage

__all__ = [
    "DEFAULT_KB_URI",
    "LabelRecord",
    "PageRecord",
    "RobotsCopy",
    "SearchHit",
    "SiteIcon",
    "SiteIcons",
    "SiteState",
    "Source",
    "Store",
    "UrlHold",
    "open_store",
    "utcnow",
]

DEFAULT_KB_URI = "sqlite:///.synapsecrawl/kb.sqlite3"


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


class SiteIcons(Protocol):
    """Site icons, kept by a store that can (SQLite so far; synapsecrawl.extract.feeds)."""

    def put_site_icon(self, icon: SiteIcon) -> None: ...
    def get_site_icon(self, origin: str) -> SiteIcon | None: ...


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


class Store(Protocol):
    """What the crawler and the CLI need from a knowledge base."""

    def put_page(self, page: PageRecord) -> None: ...
    def put_pages(self, pages: Sequence[PageRecord]) -> None: ...  # all in one transaction (#17)
    def get_page(self, kb: str, url: str) -> PageRecord | None: ...
    def delete_page(self, kb: str, url: str) -> bool: ...
    def pages(self, kb: str | None = None) -> Iterator[PageRecord]: ...
    def kbs(self) -> list[tuple[str, int, datetime]]: ...
    def search(self, query: str, kb: str | None = None, limit: int = 10) -> list[SearchHit]: ...
    def put_labels(self, labels: LabelRecord) -> None: ...
    def get_labels(self, kb: str, url: str) -> LabelRecord | None: ...
    def get_robots(self, profile: str, origin: str) -> RobotsCopy | None: ...
    def put_robots(self, profile: str, copy: RobotsCopy) -> None: ...
    # Backoff state that outlives a crawl (synapsecrawl.pacing.backoff), per profile.
    def get_site_state(self, profile: str, site: str) -> SiteState | None: ...
    def put_site_state(self, profile: str, state: SiteState) -> None: ...
    def get_url_hold(self, profile: str, url: str) -> UrlHold | None: ...
    def put_url_hold(self, profile: str, hold: UrlHold) -> None: ...
    def delete_url_hold(self, profile: str, url: str) -> bool: ...
    def url_holds(self, profile: str, kind: str | None = None) -> list[UrlHold]: ...
    # Re-reads and removals (synapsecrawl.kb.reread, synapsecrawl.rules.removals).
    def page_urls(self, kb: str | None = None, prefix: str = "") -> list[tuple[str, str]]: ...
    def page_depths(self, kb: str) -> dict[str, int | None]: ...
    def put_source(self, source: Source) -> None: ...
    def get_source(self, source_id: str) -> Source | None: ...
    def sources(self, kb: str | None = None) -> list[Source]: ...
    def delete_source(self, source_id: str) -> bool: ...
    def close(self) -> None: ...


def open_store(uri: str) -> Store:
    """Open the knowledge base at ``uri`` (``sqlite:///PATH`` or ``postgresql://...``).

    ``sqlite:///kb.db`` is relative to the working directory and
    ``sqlite:////var/kb.db`` absolute, as in SQLAlchemy.
    """
    if uri.startswith("sqlite:///"):
        from synapsecrawl.kb.sqlite import SQLiteStore

        return SQLiteStore(Path(uri.removeprefix("sqlite:///")))
    if uri.startswith(("postgresql://", "postgres://")):
        from synapsecrawl.kb.postgres import PostgresStore

        return PostgresStore(uri)
    raise ConfigError(f"KB_URI {uri!r} must start with sqlite:/// or postgresql://")
