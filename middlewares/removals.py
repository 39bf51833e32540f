"""The one path by which a page leaves the knowledge base: the caller says why, this deletes, logs and counts.

``Removals.of(crawler)`` deletes through ``runtime.kb`` (off the event loop),
logs one line, ``removed from the knowledge base (WHY): URL``, and counts one
stat, ``reread/removed/REASON``; ``REASONS`` names them: noindex (a 200's or a
304's), 404, 410, moved (301/308), robots (per request and per fetch of
robots.txt), listed (``REMOVAL_LIST``). Which pages qualify is the core's
(synapsecrawl.kb.removals, synapsecrawl.kb.reread); the deciders are the page
spider, ``RereadMiddleware``, ``RobotsMiddleware`` and ``RemovalListMiddleware``,
which deletes the listed pages at spider open and refuses every request to them
(YOT-REMOVAL, SNA-NEVER).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured

from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.kinds import kind_of
from synapsecrawl.kb.removals import RemovalList, disallowed_pages, listed_prefixes, stale
from synapsecrawl.urls import origin_of

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from synapsecrawl.rules.robots import RobotsRules

__all__ = ["REASONS", "Reason", "RemovalListMiddleware", "Removals"]

logger = logging.getLogger(__name__)

Reason = Literal["noindex", "404", "410", "moved", "robots", "listed", "unreadable"]
REASONS: tuple[Reason, ...] = ("noindex", "404", "410", "moved", "robots", "listed", "unreadable")
_ATTR = "_synapsecrawl_removals"


class Removals:
    """Deletes stored pages for a reason, one log line and one ``reread/removed/REASON`` count each."""

    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self._crawler = crawler
        self._runtime = runtime

    @classmethod
    def of(cls, crawler: Crawler) -> Removals:
        """The crawl's removals, made on first use."""
        removals: Removals | None = getattr(crawler, _ATTR, None)
        if removals is None:
            removals = cls(crawler, Runtime.of(crawler))
            setattr(crawler, _ATTR, removals)
        return removals

    async def remove(self, kb: str, url: str, reason: Reason, why: str) -> bool:
        """Delete ``url``'s copy in ``kb`` because ``why``; whether there was one to delete."""
        if reason not in REASONS:
            raise ValueError(f"a removal needs one of {', '.join(REASONS)}, not {reason!r}")
        if not await self._runtime.kb.delete(kb, url):
            return False
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value(f"reread/removed/{reason}")
        logger.info("removed from the knowledge base (%s): %s", why, url)
        return True

    async def remove_all(self, pages: Iterable[tuple[str, str]], reason: Reason, why: str) -> int:
        """Delete each (kb, url) of ``pages``; how many were there."""
        removed = 0
        for kb, url in pages:
            removed += await self.remove(kb, url, reason, why)
        return removed

    async def disallowed(self, origin: str, rules: RobotsRules) -> int:
        """Delete the stored pages of ``origin``, in every KB, that its robots.txt ``rules`` now disallow."""
        doomed = disallowed_pages(await self._runtime.kb.page_urls(prefix=origin), origin, rules)
        removed = await self.remove_all(doomed, "robots", "robots.txt now disallows it")
        if removed:
            logger.info("robots.txt of %s disallows %d stored pages: removed from the knowledge base", origin, removed)
        return removed

    async def unreadable(self, origin: str, since: float, *, now: float, bound: float, next_look: float) -> int:
        """After a failed read of ``origin``'s robots.txt (unreadable since ``since``): one line saying so, and
        once ``stale`` its stored pages leave every KB (YOT-STALE); none under a profile without a bound."""
        if bound <= 0.0:
            return 0
        stored = [(kb, url) for kb, url in await self._runtime.kb.page_urls(prefix=origin) if origin_of(url) == origin]
        days = (now - since) / 86400.0
        if not stale(since, now=now, bound=bound, next_look=next_look):
            logger.warning(
                "robots.txt of %s unreadable, last read %.0f days ago: its %d stored pages stay until %.0f days",
                origin,
                days,
                len(stored),
                bound / 86400.0,
            )
            return 0
        removed = await self.remove_all(stored, "unreadable", f"robots.txt unreadable for {days:.0f} days")
        logger.warning(
            "robots.txt of %s unreadable, last read %.0f days ago: its %d stored pages removed from the knowledge base",
            origin,
            days,
            removed,
        )
        return removed

    async def listed(self, removals: RemovalList) -> int:
        """Delete the stored pages, in every KB, that the removal list names."""
        prefixes = listed_prefixes(removals)
        candidates: list[tuple[str, str]] = []
        for prefix in prefixes if prefixes is not None else ("",):  # a domain's subdomains: no prefix; all
            candidates += await self._runtime.kb.page_urls(prefix=prefix)
        pages = [(kb, url) for kb, url in dict.fromkeys(candidates) if removals.matches(url)]
        return await self.remove_all(pages, "listed", "on the removal list")


class RemovalListMiddleware:
    def __init__(self, crawler: Crawler, runtime: Runtime, removals: RemovalList, path: str) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._removals = removals
        self._path = path
        crawler.signals.connect(self._remove_listed, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RemovalListMiddleware:
        operations = Runtime.of(crawler).config.operations
        path, removals = operations.removal_list, operations.removals
        if removals is None:
            raise NotConfigured("no REMOVAL_LIST set")
        if removals.invalid:
            logger.warning(
                "REMOVAL_LIST %s: %d lines are neither a domain nor an http(s) URL prefix: skipped",
                path,
                removals.invalid,
            )
        return cls(crawler, Runtime.of(crawler), removals, str(path))

    async def _remove_listed(self, **_: Any) -> None:
        removed = await Removals.of(self._crawler).listed(self._removals)
        if removed:
            logger.info("REMOVAL_LIST %s: %d stored pages deleted", self._path, removed)

    def process_request(self, request: Request) -> None:
        if self._removals.matches(request.url):
            assert self._crawler.stats is not None
            self._crawler.stats.inc_value("removals/refused")
            if kind_of(request.meta).rules.summarised:
                self._runtime.summary.skip(self._runtime.site(request.url), "never", request.url)
            raise IgnoreRequest(f"on the removal list, never fetched: {request.url}")
