"""``scrapy crawl web -a url=START | -a seeds=PATH [-a sites=PATH] [-a kb=NAME] [-a max_pages=N]``: the web crawl.

Links are followed across sites, within the profile's depth cap and the web crawl's budgets; every judgement is the
core's (``synapsecrawl.web``): the frontier canonicalises each link, cuts traps, holds each registrable domain to
its budget and ranks what waits. This spider keeps at most ``WINDOW`` requests of a site in Scrapy's scheduler or
downloader at a time (so the frontier's order, not Scrapy's, decides what a site gets next, and a site that is due
never waits behind another's backlog: ``PacedPriorityQueue`` hands out any due site) and releases the next when one
leaves the downloader (not when its page has been read and stored, which can take seconds when the process is busy
and would leave a site idle while it is due). Released requests are ordinary page requests: the address guard, the
removal list (SNA-NEVER, YOT-REMOVAL), robots.txt, pacing, backoff, size caps and signing hold for each discovered
site as for a site crawl. A page whose main text is a near-duplicate of one stored in this crawl is not stored and
its links are not followed; it is counted as a duplicate of the first. Who may run it is the profile's ``[web]
crawl`` (``synapsecrawl.web.request``). Meta keys: ``web_site`` (the pacing site a request was released for,
removed when it is answered), with ``depth`` as every spider.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.python.failure import Failure

from middlewares.engine.runtime import Runtime
from spiders.base import SynapseSpider
from synapsecrawl.crawl.meta import WEB_SITE
from synapsecrawl.errors import ConfigError
from synapsecrawl.kb.removals import RemovalList
from synapsecrawl.web.budgets import domain_of
from synapsecrawl.web.frontier import CUT_REASONS, WebFrontier
from synapsecrawl.web.neardup import NearDuplicates, fingerprint
from synapsecrawl.web.request import WebRequest
from synapsecrawl.web.shared import BUDGET, TRAP, Link, SharedNearDuplicates, SharedWebGate

__all__ = ["SharedWebSpider", "WebSpider"]

logger = logging.getLogger(__name__)

WINDOW = 1  # requests of one site in Scrapy's scheduler or downloader at once: the next is released as one leaves
_EXPECTED_LINKS = 20  # URLs a crawl comes to know per page it may fetch, to size the seen-set


class WebSpider(SynapseSpider):
    name = "web"

    sites: RemovalList | None
    frontier: WebFrontier
    copies: NearDuplicates | SharedNearDuplicates
    _queued: Counter[str]
    _settled: bool

    sites_by_value: ClassVar[bool] = True  # Mercator's front queues: the most valuable due site is asked next

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> WebSpider:
        runtime = Runtime.of(crawler)
        request = WebRequest.from_args(runtime.profile, **kwargs)  # refused before any request (the CLI checks first)
        forwarded = {k: v for k, v in kwargs.items() if k not in {"seeds", "sites", "urls_file"}}
        if kwargs.get("seeds") or kwargs.get("urls_file"):
            forwarded["urls_file"] = kwargs.get("seeds") or kwargs["urls_file"]
        spider = super().from_crawler(crawler, *args, **forwarded)
        assert isinstance(spider, WebSpider)
        spider.prepare(request.sites)
        crawler.signals.connect(spider._on_idle, signal=signals.spider_idle)
        crawler.signals.connect(spider._left_downloader, signal=signals.request_left_downloader)
        return spider

    def listed(self, request: scrapy.Request, url: str) -> bool:
        """A redirect stays within ``-a sites`` (``crawl add --sites``) as a link does: a list kept by the
        frontier's judgement of links alone would let a listed page redirect anywhere."""
        return self.sites is None or self.sites.matches(url)

    def prepare(self, sites: RemovalList | None) -> None:
        """The frontier and near-duplicate index of this crawl (its runtime and limits set)."""
        policy = self.runtime.profile.web
        self.sites = sites
        self.frontier = WebFrontier(
            policy,
            site=self.runtime.site,
            depth_cap=self.limits.depth,
            schemes=self.runtime.profile.schemes,
            expected=(self.limits.pages or 10_000) * _EXPECTED_LINKS,
            allowed=sites.matches if sites is not None else None,
        )
        self.copies = NearDuplicates(policy.near_duplicate_bits)
        self._queued = Counter()
        self._settled = False

    def owns(self, url: str) -> bool:
        """Every page of the crawl's KB belongs to its source (within ``-a sites``): a web crawl stores what it
        discovers, so its re-read asks for each stored page whose own revisit time has come, linked or not."""
        return self.sites is None or self.sites.matches(url)

    @property
    def backlog(self) -> int:
        """URLs waiting in the frontier (the base's re-read of stored pages waits until there are none)."""
        return len(self.frontier)

    async def start(self) -> AsyncIterator[Any]:
        for url in self.crawl.urls:
            self._offer(url, None, 0)
        for request in self._release_all():
            yield request

    def _offer(self, url: str, source: str | None, depth: int) -> None:
        offer = self.frontier.offer(url, source=source, depth=depth)
        if offer.verdict in CUT_REASONS:
            self.runtime.summary.skip(self.runtime.site(offer.url), offer.verdict, offer.url)
            logger.debug("not followed (%s: %s): %s", offer.verdict, offer.reason, offer.url)

    def _offer_all(self, urls: list[str] | tuple[str, ...], source: str, depth: int) -> None:
        """Offer a page's links, then release the sites they gave work to (a site found now starts now,
        not when the crawl next falls idle)."""
        for url in urls:
            self._offer(url, source, depth)
        assert self.crawler.engine is not None
        for site in self.frontier.woken():
            for released in self._release(site):
                self.crawler.engine.crawl(released)

    def _limit_reached(self) -> bool:
        """Whether the page limit refused a request (PageBudgetMiddleware): nothing more is released."""
        return bool(self.crawler.stats and self.crawler.stats.get_value("budget/over_limit"))

    def _release(self, site: str) -> Iterator[scrapy.Request]:
        if self._limit_reached():
            return
        while self._queued[site] < WINDOW and (entry := self.frontier.release(site)) is not None:
            self._queued[site] += 1
            yield self.page_request(
                entry.url,
                meta={"depth": entry.depth, WEB_SITE: site},
                priority=self.frontier.rank(entry),
                dont_filter=True,  # the frontier's seen-set judged it: Scrapy's own filter would hold every URL again
            )

    def site_value(self, site: str, queued: float) -> float:
        """The better of ``site``'s request in the queue (its rank when released) and the best page the site
        has waiting now, ranked with the in-links found since: a site whose released page ranked low would
        otherwise wait behind better ranked sites while its own pages gained in-links."""
        best = self.frontier.best_rank(site)
        return queued if best is None else max(queued, float(best))

    def _release_all(self) -> Iterator[scrapy.Request]:
        self.frontier.woken()  # every site is looked at
        for site in self.frontier.sites_waiting():
            yield from self._release(site)

    def _left_downloader(self, request: scrapy.Request, **_: Any) -> None:
        self._answered(request)

    def _answered(self, request: scrapy.Request | None) -> None:
        """One of a site's released requests got its answer (or none): release the site's next. Called when it
        leaves the downloader, and from the callback and errback for a request answered without reaching it
        (a middleware's refusal); its ``web_site`` is taken out of its meta, so it is counted once."""
        site = request.meta.pop(WEB_SITE, None) if request is not None else None
        if site is None:
            return
        self._queued[site] = max(0, self._queued[site] - 1)
        assert self.crawler.engine is not None
        for released in self._release(site):
            self.crawler.engine.crawl(released)

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        try:
            page = await self.read(response)
            depth = int(response.meta.get("depth", 0))
            item = await self.keep(response, page)
            if item is not None and page is not None and self._duplicate(response.url, page.text):
                return
            if item is not None:
                item["depth"] = depth
                yield item
            if page is not None and depth < self.limits.depth:
                self._offer_all(self.followable(page), response.url, depth + 1)
        finally:
            self._answered(response.request)

    def _duplicate(self, url: str, text: str) -> bool:
        """Whether ``text`` is a near-duplicate of a page this crawl stored: then it is counted, not stored."""
        value = fingerprint(text)
        if value is None:
            return False
        original = self.copies.original(value)
        if original is None or original == url:
            self.copies.add(value, url)
            return False
        self.runtime.summary.skip(self.runtime.site(url), "duplicate", url)
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("web/duplicates")
        logger.info("not stored, a near-duplicate of %s: %s", original, url)
        return True

    def page_failed(self, failure: Failure) -> Failure | list[scrapy.Request] | None:
        """As every spider's, and the failed request's site gets its next URL."""
        try:
            return super().page_failed(failure)
        finally:
            self._answered(getattr(failure, "request", None))

    def follow_stored(self, request: scrapy.Request, outlinks: tuple[str, ...]) -> list[scrapy.Request]:
        """An unchanged page's stored links go to the frontier, as a read page's would."""
        depth = int(request.meta.get("depth", 0))
        if depth < self.limits.depth:
            self._offer_all(outlinks, request.url, depth + 1)
        return []

    def _on_idle(self, **_: Any) -> None:
        """Nothing in flight: release every site's next URLs; when none is left, count what the budgets held."""
        self._queued.clear()
        released = list(self._release_all())
        assert self.crawler.engine is not None and self.crawler.stats is not None
        for request in released:
            self.crawler.engine.crawl(request)
        if released or self._settled:
            return
        self._settled = True
        for site, url in self.frontier.parked():
            self.runtime.summary.skip(site, "budget", url)
        for site, count in self.frontier.pending_counts().items():  # left when the page limit was reached
            self.runtime.summary.skipped[site]["limit"] += count  # counted, not journalled URL by URL
        stats = self.crawler.stats
        stats.set_value("web/sites_known", len(self.frontier.sites_known))
        stats.set_value("web/sites_waiting", len(self.frontier.sites_waiting()))
        for reason, count in sorted(self.frontier.cuts.items()):
            stats.set_value(f"web/cut/{reason}", count)
        parked = sum(1 for _ in self.frontier.parked())
        cuts = self.frontier.cuts + Counter({"budget": parked})
        logger.info(
            "web crawl: %d sites known; cut: %s; seen-set %s (%d URLs)",
            len(self.frontier.sites_known),
            ", ".join(f"{reason} {n}" for reason, n in sorted(cuts.items()) if n) or "nothing",
            "exact" if self.frontier.seen.exact else f"a Bloom filter of {self.frontier.seen.bloom_bytes()} bytes",
            self.frontier.seen.count,
        )
        for domain, admitted, budget in self.frontier.spent():
            logger.info("web crawl budget: %s: %d of %d pages", domain, admitted, budget)


class SharedWebSpider(WebSpider):
    """The web crawl as a source of a shared crawl (``synapsecrawl crawl add --mode web``), one per worker.

    Each worker screens a page's links (scheme, the source's allow-list, depth, a trap's path shape:
    ``WebFrontier.screen``); the seen-set, the trap counts, the budgets per registrable domain (parked links
    included), each site's waiting URLs in value order, the cut counts and the near-duplicates are the
    crawl's, in Redis (``synapsecrawl.web.shared``), so they hold across workers. Admitted links are kept by
    the same Lua step that marks them seen, and a site's frontier stream is refilled with its best waiting
    URLs as its pages are answered; every site takes its turn there across workers. Built by
    ``spiders.worker`` (``prepare_shared``); not a spider of its own.
    """

    name = ""  # not a spider of its own for Scrapy's loader
    gate: SharedWebGate
    _entry_for: Any
    _refilled_for: str | None

    def prepare_shared(
        self, client: Any, root: str, frontier: str, entry_for: Any, sites: RemovalList | None = None
    ) -> None:
        """Set up this source's web crawl against the shared crawl's Redis ``client``: its keys under ``root``,
        admitted links queued in the frontier at ``frontier`` as ``entry_for`` (the worker's) makes them, every
        discovered URL held to the allow-list ``sites`` (``crawl add --sites``) when there is one."""
        web = self.runtime.profile.web
        if web.crawl == "refused":
            raise ConfigError(f"scrapy crawl web: {web.refusal}")
        if web.crawl == "allow-list" and sites is None:
            raise ConfigError(
                f"{self.runtime.profile.name} crawls only a reviewed list of sites: add the source with --sites PATH"
            )
        self.prepare(sites)
        self.gate = SharedWebGate(
            client,
            root,
            web,
            expected=(self.limits.pages or 10_000) * _EXPECTED_LINKS,
            frontier=frontier,
            window=self.runtime.profile.concurrency + 1,  # one queued behind each download the site may have
        )
        self._entry_for = entry_for
        self._refilled_for = None
        self.copies = SharedNearDuplicates(client, root, web.near_duplicate_bits)

    async def start(self) -> AsyncIterator[Any]:
        self._admitted([(url, None, 0) for url in self.crawl.urls])  # queued in the shared frontier
        return
        yield

    def _admitted(self, links: list[tuple[str, str | None, int]], refill: str = "") -> None:
        """Screen ``links`` here, then judge and keep them in Redis in one step (a worker killed after it
        has lost nothing: what it marked seen is kept), refilling the site ``refill`` in the same step."""
        cuts: Counter[str] = Counter()
        candidates: list[tuple[str, int, str | None]] = []
        for url, source, depth in links:
            offer = self.frontier.screen(url, depth)
            if offer.verdict in CUT_REASONS:
                cuts[offer.verdict] += 1
                self.runtime.summary.skip(self.runtime.site(offer.url), offer.verdict, offer.url)
            else:
                candidates.append((offer.url, depth, source))
        self.gate.count(cuts)
        unique = list({url: (url, depth, source) for url, depth, source in candidates}.values())
        batch = []
        for url, depth, source in unique:
            entry = self._entry_for(self.page_request(url, meta={"depth": depth}, dont_filter=True))
            site = self.runtime.site(url)
            linker = None if source is None else domain_of(source)
            data = entry.to_json() if entry is not None else ""
            batch.append(Link(url, domain_of(url), linker, depth, site, data))
        if not batch:
            if refill:
                self.gate.refill([refill])
            return
        verdicts = self.gate.admit(batch, refill=refill)
        for link, verdict in zip(batch, verdicts, strict=True):
            if verdict in (BUDGET, TRAP):
                self.runtime.summary.skip(link.site, "budget" if verdict == BUDGET else "trap", link.url)

    def _offer_all(self, urls: list[str] | tuple[str, ...], source: str, depth: int) -> None:
        """A page's links, judged in the step that refills its site (no second round trip at its answer)."""
        self._admitted([(url, source, depth) for url in urls], refill=self.runtime.site(source))
        self._refilled_for = source

    def _answered(self, request: scrapy.Request | None) -> None:
        """One of a site's pages is answered: its site's stream gets its best waiting URLs (done already if
        the page's links were just judged), and so does the site a redirect to it came from (its lease ended
        when the redirect was queued, with no page of that site answered)."""
        if request is None:
            return
        sites = {self.runtime.site(url) for url in (*request.meta.get("redirect_urls", ()), request.url)}
        if self._refilled_for == request.url:
            self._refilled_for = None
            sites.discard(self.runtime.site(request.url))
        if sites:
            self.gate.refill(sorted(sites))

    def refill_all(self) -> int:
        """Queue what waits for sites whose streams ran dry without a page answered (the worker, when the
        crawl looks drained)."""
        return self.gate.refill_all()

    def _duplicate(self, url: str, text: str) -> bool:
        duplicate = super()._duplicate(url, text)
        if duplicate:
            self.gate.count(Counter({"duplicate": 1}))
        return duplicate
