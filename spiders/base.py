"""What every synapsecrawl spider shares: arguments in, Page out, item or links.

Spiders turn their ``-a`` strings into one ``CrawlRequest`` and the limits that
apply, publish them as ``runtime.target`` (what the middlewares read), read each
response with ``synapsecrawl.extract`` in worker processes, and yield an item for
a page the KB keeps; a page now marked noindex leaves the KB (SYN-REMOVE,
YOT-DIRECTIVES, through ``middlewares.removals``). Scope is each mode's. The
source's lifecycle (held, re-read at idle, recorded at close) is
``middlewares.engine.sources``'s; a spider opts out with ``records_source``.
Every page request has ``page_failed`` as its errback: one line and a count by kind.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from twisted.python.failure import Failure
from w3lib.encoding import http_content_type_encoding

from middlewares.engine.exceptions import Unchanged, caught
from middlewares.engine.runtime import CrawlTarget, Runtime
from middlewares.failures import describe, quiet_dataloss_hint
from middlewares.removals import Removals
from synapsecrawl.crawl.kinds import KIND, RequestKind
from synapsecrawl.crawl.request import CrawlRequest, taking_turns
from synapsecrawl.crawl.scope import SiteScope, in_any
from synapsecrawl.extract.page import Page
from synapsecrawl.kb.indexing import make_item
from synapsecrawl.profiles import Limits
from synapsecrawl.urls import canonical

__all__ = ["SynapseSpider"]

logger = logging.getLogger(__name__)


class SynapseSpider(scrapy.Spider):
    """Base of the page, site, sitemap and feed spiders."""

    crawl: CrawlRequest
    limits: Limits
    runtime: Runtime
    requested: set[str]  # canonical URLs asked for (middlewares.engine.sources), or left out of its re-read
    records_source: ClassVar[bool] = True  # whether the crawl's source is held, re-read and recorded

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SynapseSpider:
        spider: SynapseSpider = super().from_crawler(crawler, *args, **kwargs)
        spider.runtime = Runtime.of(crawler)
        spider.crawl, spider.limits = spider.read_arguments(kwargs)
        quiet_dataloss_hint()
        spider.requested = set()
        spider.publish()
        crawler.signals.connect(spider._warm_reader, signal=signals.spider_opened)
        return spider

    def read_arguments(self, kwargs: dict[str, Any]) -> tuple[CrawlRequest, Limits]:
        """The crawl the ``-a`` arguments ask for and its limits (ConfigError, one line, when they are wrong)."""
        crawl = CrawlRequest.from_args(**kwargs)
        for skipped in crawl.skipped:
            logger.warning("%s", skipped)
        return crawl, self.runtime.config.limits_for(kwargs)

    sites_by_value: ClassVar[bool] = False  # a web crawl: of the due sites, the best next page goes first

    def publish(self) -> None:
        """Set ``runtime.target``: what this spider crawls, as the middlewares and extensions read it."""
        self.runtime.target = CrawlTarget(
            name=self.name,
            kb=self.crawl.kb,
            limits=self.limits,
            scopes=self.target_scopes(),
            source=self if self.records_source else None,
            by_value=self.sites_by_value,
            site_value=self.site_value if self.sites_by_value else None,
            listed=self.listed,
        )

    def listed(self, request: scrapy.Request, url: str) -> bool:
        """Whether ``url``, where ``request`` was redirected, is within the crawl's allow-list (none here)."""
        return True

    def site_value(self, site: str, queued: float) -> float:
        """How much ``site`` is worth asking now, its next request in the queue having priority ``queued``."""
        return queued

    def target_scopes(self) -> tuple[SiteScope, ...] | None:
        """The scopes a redirect must keep to and a stored page belongs by; None: the mode has none."""
        return None

    def revisit_ready(self) -> bool:
        """Whether the crawl's own work is done, so its unreached stored pages may be re-read."""
        return True

    def _warm_reader(self, **_: Any) -> None:
        self.runtime.reader.warm()  # the extraction workers start while robots.txt is fetched

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{k: v for k, v in kwargs.items() if k not in {"url", "depth"}})

    async def start(self) -> AsyncIterator[Any]:
        for url in taking_turns(self.crawl.urls, self.runtime.site):
            yield self.page_request(url, meta={"depth": 0})

    def page_request(self, url: str, *, meta: dict[str, Any] | None = None, **kwargs: Any) -> scrapy.Request:
        """A request for the page at ``url``, read by ``parse``, its failure one line (``page_failed``)."""
        return scrapy.Request(
            url,
            callback=self.parse,
            errback=self.page_failed,
            # summary_counts_failure: the backoff leaves a failed download's count to page_failed
            meta={KIND: RequestKind.PAGE.value, **(meta or {}), "summary_counts_failure": True},
            **kwargs,
        )

    def page_failed(self, failure: Failure) -> Failure | list[scrapy.Request] | None:
        """A stored page that answered 304 (``Unchanged``) leads on through its stored links, as its body
        would have (``follow_stored``); a download with no usable answer is one line and a count by kind;
        nothing stored changes."""
        if caught(failure, Unchanged):
            unchanged: scrapy.Request = failure.request  # type: ignore[attr-defined]
            return self.follow_stored(unchanged, tuple(unchanged.meta.get("reread_outlinks") or ()))
        if caught(failure, IgnoreRequest):
            return failure  # refused or answered 4xx/5xx: the middleware that decided said so, as before
        request = getattr(failure, "request", None)
        url = request.url if request is not None else "?"
        kind, reason = describe(failure)
        self.runtime.summary.fail(self.runtime.site(url), kind)  # in the stats as summary/failed/KIND
        logger.warning("not fetched: %s: %s", url, reason)
        return None

    async def read(self, response: Response) -> Page | None:
        """The Page in ``response`` (never raises on content), read in a worker process (EXTRACT_PROCESSES).

        None when its worker died or hung on it: logged, counted as an error, and the stored page is kept.
        """
        profile = self.runtime.profile
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        page = await self.runtime.reader.read(
            response.body,
            response.url,
            content_type=content_type,
            tokens=profile.tokens,
            x_robots_tag=[v.decode("latin-1") for v in response.headers.getlist(b"X-Robots-Tag")],
            encoding=http_content_type_encoding(content_type),
            scrub_personal_data=profile.scrub_personal_data,
            label=profile.labels,  # OMN-LABELS, read in the worker under its guard
        )
        if page is None:
            self.runtime.summary.skip(self.runtime.site(response.url), "error", response.url)
        elif page.labels is not None:
            response.meta["page_labels"] = page.labels  # for middlewares.labels
        return page

    async def keep(self, response: Response, page: Page | None) -> dict[str, Any] | None:
        """The item for ``page``; None when its directives keep it out (ALL-NOINDEX) or it was not read."""
        if page is None:
            return None
        site = self.runtime.site(response.url)
        for problem in page.problems:
            logger.warning("%s: %s", response.url, problem)
        if page.bounded:
            # What lies within the bounds is kept; the rest of a page written to exhaust a parser is not read.
            self.runtime.summary.bound(site)
            logger.warning("%s: read only within bounds: %s", response.url, "; ".join(page.bounded))
        if page.not_text and not page.directives.noindex:
            # Binary bytes are no text: nothing is stored, and a stored copy stays (SYN-REMOVE: a failure).
            self.runtime.summary.skip(site, "binary", response.url)
            logger.warning("%s: not stored, no text: %s", response.url, page.not_text)
            return None
        if not self.runtime.profile.accepts_type(page.content_type):
            # No Content-Type to judge at the headers (the gate's part): what the bytes show is judged here
            # (SNA-HTML, YOT-HTTPS, OMN-FETCH).
            self.runtime.summary.skip(site, "type", response.url)
            logger.info(
                "not kept (%s, sniffed; %s does not read it): %s",
                page.content_type,
                self.runtime.profile.name,
                response.url,
            )
            return None
        if page.directives.noindex:
            assert self.crawler.stats is not None
            self.crawler.stats.inc_value("directives/noindex")
            self.runtime.summary.skip(site, "noindex", response.url)
            logger.info("not indexed (noindex): %s", response.url)
            await Removals.of(self.crawler).remove(self.crawl.kb, response.url, "noindex", "now noindex")
            return None
        if page.problems and not page.text:
            # SYN-REMOVE: only 404/410, noindex or a new Disallow remove a page; a copy that cannot be read
            # (cut short, locked, garbage) is a failure like a 5xx, so the stored text stays.
            stored = await self.runtime.kb.page(self.crawl.kb, page.url)
            if stored is not None and stored.text:
                self.runtime.summary.skip(site, "error", response.url)
                logger.info("stored copy kept (this one has no readable text): %s", response.url)
                return None
        return make_item(
            page,
            kb=self.crawl.kb,
            profile=self.runtime.profile,
            site=site,
            status=response.status,
            etag=(response.headers.get(b"ETag") or b"").decode("latin-1"),
            last_modified=(response.headers.get(b"Last-Modified") or b"").decode("latin-1"),
        ) | {"outlinks": self.followable(page)}

    def followable(self, page: Page) -> list[str]:
        """The links ``page`` lets a crawl follow, canonical, in page order: none under nofollow, and no
        rel=nofollow link unless the profile follows them (ALL-NOINDEX, SNA-NOFOLLOW). Scope and depth are
        the following crawl's to judge."""
        if page.directives.nofollow:
            return []
        skip_rel = not self.runtime.profile.follow_rel_nofollow
        return list(dict.fromkeys(canonical(link.url) for link in page.links if not (skip_rel and link.nofollow)))

    def follow_stored(self, request: scrapy.Request, outlinks: tuple[str, ...]) -> list[scrapy.Request]:
        """The requests an unchanged page's stored ``outlinks`` lead to: none, but in a site crawl."""
        return []

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        item = await self.keep(response, await self.read(response))
        if item is not None:
            yield item

    def owns(self, url: str) -> bool:
        """Whether a stored page at ``url`` belongs to this crawl's source: in its scope, or one of its URLs."""
        scopes = self.target_scopes()
        if scopes is not None:
            return in_any(scopes, url)
        return url in self.crawl.urls
