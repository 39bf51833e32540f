"""Retries and holds: what becomes of a URL after its answer or its failed fetch.

Shaped like Scrapy's retry middleware, over the decision ``middlewares.backoff``
made at download time. A failed URL comes back as a copy: at once into the
paused slot, or, for a wait of its own (SereneReader's 30 s / 1 min / 2 min),
through the event loop's ``call_later`` and ``engine.crawl``, the spider kept
open meanwhile. Every retry is first written to the store as a deferred hold,
released when the URL is answered, so a crawl that stops early loses nothing.
A feed is not retried: its answers go to the feed spider's ``FeedHolds``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.utils.misc import load_object

from middlewares.backoff import Judged, is_feed, is_side_fetch
from middlewares.engine.backoffstate import BackoffState
from middlewares.engine.exceptions import RetryScheduled, SiteLeft
from middlewares.engine.logformat import secs, when
from middlewares.engine.seam import engine_of
from middlewares.feedholds import FeedHolds
from synapsecrawl.crawl.meta import JUDGED, drop_per_download
from synapsecrawl.pacing.backoff import Decision, SiteHistory, decide

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["BackoffRetryMiddleware"]

logger = logging.getLogger(__name__)


class BackoffRetryMiddleware:
    """Retries, holds and releases URLs as the backoff decisions say; feeds keep their own curve."""

    def __init__(
        self, crawler: Crawler, book: BackoffState, transient: tuple[type[BaseException], ...], feeds: FeedHolds
    ) -> None:
        self._crawler = crawler
        self._book = book
        self._runtime = book.runtime
        self._policy = book.runtime.profile.backoff
        self._transient = transient
        self._feeds = feeds
        self._later: dict[Request, asyncio.TimerHandle] = {}
        crawler.signals.connect(self._idle, signal=signals.spider_idle)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        transient = tuple(
            load_object(name) if isinstance(name, str) else name
            for name in crawler.settings.getlist("RETRY_EXCEPTIONS")
        )
        book = BackoffState.of(crawler)
        return cls(crawler, book, transient, FeedHolds(crawler, clock=book.clock.wall))

    async def process_response(self, request: Request, response: Response) -> Request | Response:
        judged: Judged | None = request.meta.pop(JUDGED, None)
        if judged is None:
            return response
        if is_side_fetch(request):
            return response
        if is_feed(request):
            await self._feeds.refreshed(request, judged.site, response.status, response.headers.get(b"Retry-After"))
            return response
        return await self._settle(request, judged.decision, judged.site, answered=True) or response

    async def process_exception(self, request: Request, exception: Exception) -> Request | None:
        site = self._runtime.site(request.url)
        if isinstance(exception, SiteLeft):
            if not is_side_fetch(request) and not is_feed(request):  # a feed keeps its own delay
                await self._book.hold(request, site, kind="deferred", until=exception.until, reason=exception.reason)
                self._book.stat("backoff/deferred")
                self._runtime.summary.skip(site, "paused", request.url)
            return None
        if is_feed(request) and not isinstance(exception, IgnoreRequest) and not (request.meta.get("dont_backoff")):
            await self._feeds.refreshed(request, site, None, None, why=type(exception).__name__)
            return None
        if (
            isinstance(exception, IgnoreRequest)
            or not isinstance(exception, self._transient)
            or request.meta.get("dont_backoff")
            or is_side_fetch(request)
        ):
            return None
        decision = decide(
            self._policy,
            self._book.histories.get(site, SiteHistory()),
            status=None,
            retries=int(request.meta.get("backoff_retries", 0)),
            now=self._book.clock.wall(),
            max_wait=self._book.max_wait,
        )
        if decision.reason == "no answer":
            decision = replace(decision, reason=type(exception).__name__)
        return await self._settle(request, decision, site)

    async def _settle(
        self, request: Request, decision: Decision, site: str, *, answered: bool = False
    ) -> Request | None:
        """The URL's part of a decision: a retry (returned or scheduled), a hold, or a release.

        A deferred answer goes no further (it is no page); a failed fetch's exception does.
        """
        if decision.retry_in is not None and not request.meta.get("dont_retry"):
            return await self._retry(request, decision, site, decision.retry_in)
        if decision.hold <= 0:
            await self._book.release(request)
            return None
        until = self._book.clock.wall() + decision.hold
        request.meta["dont_retry"] = True  # ours to retry, and we are done with it for this crawl
        await self._book.hold(request, site, kind=decision.hold_kind, until=until, reason=decision.reason)
        if decision.hold_kind == "gone":
            self._book.stat(f"backoff/remembered/{decision.reason}")
            logger.info(
                "backoff: %s answered %s: not fetched again before %s", request.url, decision.reason, when(until)
            )
            return None
        self._book.stat("backoff/deferred")
        if decision.gave_up:
            self._book.stat("backoff/gave_up")
        if answered or not request.meta.get("summary_counts_failure"):  # else the spider's errback counts it by kind
            self._runtime.summary.skip(site, "error" if decision.gave_up else "paused", request.url)
        what = "giving up this crawl" if decision.gave_up else "no retry in this crawl"
        logger.info("backoff: %s for %s (%s): deferred until %s", what, request.url, decision.reason, when(until))
        if answered:
            raise IgnoreRequest(f"{request.url} answered {decision.reason}: deferred until {when(until)}")
        return None

    async def _retry(self, request: Request, decision: Decision, site: str, delay: float) -> Request:
        retries = int(request.meta.get("backoff_retries", 0)) + 1
        meta = drop_per_download(request.meta)  # one download's notes do not follow a request into its retry
        meta["backoff_retries"] = retries
        retry = request.replace(meta=meta, dont_filter=True)
        # written first, so a crawl that stops before the retry still has the URL
        until = self._book.clock.wall() + delay
        await self._book.hold(retry, site, kind="deferred", until=until, reason=decision.reason)
        self._book.stat(f"backoff/retry/{decision.reason}")
        logger.info(
            "backoff: retrying %s in %s (%s; retry %d of %d)",
            request.url,
            secs(delay),
            decision.reason,
            retries,
            self._policy.retries,
        )
        if delay <= decision.site_wait:
            return retry  # the paused slot holds it
        self._later[retry] = asyncio.get_running_loop().call_later(delay, self._reinject, retry)
        raise RetryScheduled(f"{request.url}: retried in {secs(delay)}")

    def _reinject(self, request: Request) -> None:
        if self._later.pop(request, None) is None:
            return
        engine = engine_of(self._crawler)
        if engine is None or engine.spider is None:
            return  # closed meanwhile: the deferred hold in the store keeps the URL
        engine.crawl(request)

    def _idle(self, **_: Any) -> None:
        if self._later:
            raise DontCloseSpider(f"{len(self._later)} retries are waiting")

    def _closed(self, **_: Any) -> None:
        for handle in self._later.values():
            handle.cancel()  # each has a deferred hold in the store
        self._later.clear()
