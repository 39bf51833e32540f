"""The feed spider's refresh holds: a failed refresh delays the next by the feed curve (SER-FEED-BACKOFF).

A feed is not retried in the crawl. Each failed refresh holds its URL in the
store for the feed curve's delay (15 min doubling to a day under SereneReader;
at least Retry-After on a 429), and a good answer (2xx, 304) releases it. The
feed spider skips a feed still held; the retry middleware reports each answer
and failure here, as it sees them (before redirects, so a 304 is still a 304).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from middlewares.engine.logformat import when
from middlewares.engine.runtime import Runtime
from synapsecrawl.kb.records import UrlHold
from synapsecrawl.pacing.backoff import feed_retry_delay

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["FeedHolds"]

logger = logging.getLogger(__name__)


class FeedHolds:
    """Reads and writes the store's holds on feed URLs, for one crawl."""

    def __init__(self, crawler: Crawler, clock: Callable[[], float] = time.time) -> None:
        self._crawler = crawler
        self._runtime = Runtime.of(crawler)
        self._clock = clock

    async def held(self, url: str) -> UrlHold | None:
        """The hold that keeps feed ``url`` from being refreshed now, if any."""
        hold = await self._runtime.kb.url_hold(self._runtime.profile.name, url)
        return hold if hold is not None and hold.until > self._clock() else None

    async def refreshed(
        self, request: Request, site: str, status: int | None, retry_after: bytes | None, why: str = ""
    ) -> None:
        """A refresh's outcome: ``status`` of its answer, or ``None`` and ``why`` it failed."""
        url = (request.meta.get("redirect_urls") or [request.url])[0]  # the feed as subscribed
        kb, profile = self._runtime.kb, self._runtime.profile.name
        if status is not None and (200 <= status < 300 or status == 304):
            await kb.release(profile, url)
            return
        if status is not None and 300 <= status < 400:
            return  # a redirect: the answer at its end is judged
        previous = await kb.url_hold(profile, url)
        failures = (previous.failures if previous is not None else 0) + 1
        now = self._clock()
        policy = self._runtime.profile.backoff
        delay = feed_retry_delay(policy, failures, status=status, retry_after=retry_after, now=now)
        reason = f"feed {status if status is not None else why}"
        hold = UrlHold(url, "deferred", now + delay, reason, site, self._runtime.target.kb or "", failures, now)
        await kb.hold(profile, hold)
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value("backoff/feed_delayed")
        logger.info(
            "backoff: feed %s failed (%s; %d failed refreshes in a row): next refresh not before %s",
            url,
            reason.removeprefix("feed "),
            failures,
            when(now + delay),
        )
