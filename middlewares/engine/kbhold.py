"""Holds the crawl while its knowledge base cannot take what it fetches (KB_OUTAGE_SECONDS).

The KB gateway (``runtime.kb``) finds the outage and probes the KB; this extension is what the crawl
does about it: no new request starts (Scrapy's engine is paused; what is in flight finishes and its
pages wait), one line when the outage begins and one when it ends, and past ``KB_OUTAGE_SECONDS`` the
spider closes with ``kb_unavailable`` (exit status 75) once its waiting pages are journalled.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals

from middlewares.engine.runtime import Runtime
from synapsecrawl.kb.outage import CLOSE_REASON

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from synapsecrawl.errors import StoreUnavailable

__all__ = ["KbHoldExtension"]

logger = logging.getLogger(__name__)


class KbHoldExtension:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._closing: asyncio.Future[Any] | None = None
        runtime.kb.listener = self
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> KbHoldExtension:
        return cls(crawler, Runtime.of(crawler))

    def _stat(self, key: str, value: float | None = None) -> None:
        stats = self._crawler.stats
        assert stats is not None
        if value is None:
            stats.inc_value(key)
        else:
            stats.set_value(key, value)

    def kb_down(self, error: StoreUnavailable) -> None:
        limit = self._runtime.config.kb.outage_seconds
        logger.warning(
            "the knowledge base cannot take pages (%s): %s; no request starts until it can, for up to %g s",
            error.reason,
            error,
            limit,
        )
        self._stat("kb/outages")
        self._stat("kb/held", self._runtime.kb.held)
        if self._crawler.engine is not None:
            self._crawler.engine.pause()

    def kb_up(self, lasted: float) -> None:
        logger.info("the knowledge base takes pages again after %.1f s: crawling goes on", lasted)
        self._stat("kb/held", 0)
        if self._crawler.engine is not None:
            self._crawler.engine.unpause()

    def kb_gone(self) -> None:
        kb = self._runtime.config.kb
        logger.error(
            "the knowledge base stayed unavailable for more than %g s (KB_OUTAGE_SECONDS): the crawl ends; "
            "the pages it holds go to the journal in %s, which the next crawl into this KB writes first",
            kb.outage_seconds,
            kb.journal_dir,
        )
        engine = self._crawler.engine
        if engine is not None and self._closing is None:
            engine.unpause()  # what is in flight ends, and the engine can close
            self._closing = asyncio.ensure_future(engine.close_spider_async(reason=CLOSE_REASON))

    def kb_replayed(self, pages: int) -> None:
        """Called from the KB's thread once an earlier crawl's journal is written."""
        logger.info("wrote %d pages an earlier crawl journalled while the knowledge base could not take them", pages)
        self._stat("kb/replayed", pages)

    def _closed(self, **_: Any) -> None:
        journalled = self._runtime.kb.journalled
        if journalled:
            self._stat("kb/journalled_total", journalled)
            logger.warning("%d pages wait in the journal for the knowledge base", journalled)
