"""Backoff in the crawl: what answers say about their site, applied without stalling other sites.

A thin adapter over ``synapsecrawl.pacing.backoff``. ``BackoffGateMiddleware`` runs
first (before robots.txt): what the store remembers from earlier crawls keeps a
request off the network. ``BackoffMiddleware`` judges each answer the moment it
is downloaded (the ``response_downloaded`` signal, before the site's slot looks
at its queue again), so a pause reaches the pacer and the live slot before the
next request to that site starts; a site paused past what the crawl waits is
left. What becomes of the URL itself (a retry, a hold) is ``middlewares.retry``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals

from middlewares.engine.backoffstate import BackoffState, Clock
from middlewares.engine.exceptions import SiteLeft, UrlHeld
from middlewares.engine.logformat import secs, when
from middlewares.engine.seam import paced_downloader
from synapsecrawl.crawl.kinds import kind_of
from synapsecrawl.crawl.meta import JUDGED
from synapsecrawl.pacing.backoff import Decision, SiteHistory, decide
from synapsecrawl.shared.entries import FrontierUnreachable

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = [
    "BackoffGateMiddleware",
    "BackoffMiddleware",
    "BackoffState",
    "Clock",
    "Judged",
    "is_feed",
    "is_side_fetch",
]

logger = logging.getLogger(__name__)


def is_side_fetch(request: Request) -> bool:
    """robots.txt, tdmrep.json, ...: heeds a site's pauses, but its answer is no page's outcome
    (not retried, held or counted in a 403 streak)."""
    return kind_of(request.meta).rules.backoff == "side"


def is_feed(request: Request) -> bool:
    """A feed refresh: its failures hold the feed for the feed curve instead of a retry (middlewares.retry)."""
    return kind_of(request.meta).rules.backoff == "feed"


@dataclass
class Judged:
    """A response's decision, made at download time, settled in middlewares.retry."""

    decision: Decision
    site: str
    changed: bool


def _why(decision: Decision) -> str:
    if decision.reason == "403":
        return "403 answers in a row"
    if decision.stated is None:
        return f"{decision.reason}, no Retry-After"
    said = f"{decision.reason}, Retry-After {secs(decision.stated)}"
    return said if abs(decision.stated - decision.site_wait) < 0.5 else f"{said} taken as {secs(decision.site_wait)}"


class BackoffGateMiddleware:
    """Keeps requests off sites and URLs that earlier answers put on hold."""

    def __init__(self, book: BackoffState) -> None:
        self._book = book
        self._runtime = book.runtime

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(BackoffState.of(crawler))

    async def process_request(self, request: Request) -> None:
        if request.meta.get("dont_backoff"):
            return
        site = self._runtime.site(request.url)
        await self._book.load(site)
        self._book.refuse_if_left(request, site)
        if is_side_fetch(request) or request.meta.get("backoff_retries"):
            return
        hold = await self._book.hold_for(request.url)
        if hold is None:
            return
        if hold.until <= self._book.clock.wall():
            request.meta["backoff_held"] = True  # due: fetch it, and release the hold once answered
            return
        self._book.stat(f"backoff/skipped/{hold.kind}")
        self._runtime.summary.skip(site, "error" if hold.kind == "gone" else "paused", request.url)
        logger.info("backoff: not fetching %s before %s (%s %s)", request.url, when(hold.until), hold.kind, hold.reason)
        raise UrlHeld(f"{request.url} is held until {when(hold.until)} ({hold.kind} {hold.reason})")


class BackoffMiddleware:
    """Judges every answer, pauses sites and leaves those paused past the crawl's wait."""

    def __init__(self, crawler: Crawler, book: BackoffState) -> None:
        self._crawler = crawler
        self._book = book
        self._runtime = book.runtime
        self._policy = book.runtime.profile.backoff
        crawler.signals.connect(self._judge, signal=signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, BackoffState.of(crawler))

    def process_request(self, request: Request) -> None:
        # A request that passed the gate before its site was left (e.g. waiting on robots.txt).
        if not request.meta.get("dont_backoff"):
            self._book.refuse_if_left(request, self._runtime.site(request.url))

    async def process_response(self, request: Request, response: Response) -> Response:
        judged: Judged | None = request.meta.get(JUDGED)
        if judged is not None and judged.changed:
            await self._book.save_site(judged.site)
        return response

    def _judge(self, response: Response, request: Request, **_: Any) -> None:
        """Decide at download time, so a pause holds the slot before its next start."""
        if request.meta.get("dont_backoff"):
            return
        site = self._runtime.site(request.url)
        retry_after = response.headers.get(b"Retry-After")
        if is_side_fetch(request) and retry_after is None and response.status not in self._policy.slow_statuses:
            return
        history = self._shared_history(site, response.status, retry_after) or self._book.histories.get(
            site, SiteHistory()
        )
        decision = decide(
            self._policy,
            history,
            status=response.status,
            retry_after=retry_after,
            retries=int(request.meta.get("backoff_retries", 0)),
            now=self._book.clock.wall(),
            max_wait=self._book.max_wait,
        )
        self._book.histories[site] = decision.history
        changed = decision.history != history or decision.site_wait > 0
        request.meta[JUDGED] = Judged(decision, site, changed)
        if decision.site_wait > 0:
            self._pause(site, decision)

    def _shared_history(self, site: str, status: int, retry_after: bytes | None) -> SiteHistory | None:
        """With a shared pacer, the site's streaks as all machines counted them before this answer (403s
        in a row on different machines are one streak)."""
        pacer = self._runtime.shared_pacer
        if pacer is None:
            return None
        signal = status in self._policy.slow_statuses or bool(self._policy.any_retry_after and retry_after)
        counted = pacer.streaks(site, signal=signal, status=status, forbidden_limit=self._policy.forbidden_streak)
        return SiteHistory(*counted) if counted is not None else None

    def _pause(self, site: str, decision: Decision) -> None:
        until = self._book.clock.wall() + decision.site_wait
        known, _ = self._book.paused_until.get(site, (0.0, ""))
        if until > known:
            self._book.paused_until[site] = (until, _why(decision))
        if not decision.leave_site:
            self._runtime.pacer.pause(site, self._book.clock.monotonic() + decision.site_wait)
            self._book.refresh(site)
            self._book.stat(f"backoff/paused/{decision.reason}")
            logger.info(
                "backoff: pausing %s for %s until %s (%s)",
                site,
                secs(decision.site_wait),
                when(until),
                _why(decision),
            )
            return
        if site not in self._book.left:
            self._book.left[site] = (until, _why(decision))
            if self._runtime.shared_crawl is not None:  # every worker defers the site's requests
                self._leave_shared(site, until, _why(decision))
            self._book.stat(f"backoff/left/{decision.reason}")
            logger.info(
                "backoff: leaving %s to a later crawl: paused until %s (%s), longer than the %s this crawl waits",
                site,
                when(until),
                _why(decision),
                secs(self._book.max_wait),
            )
        left_until, reason = self._book.left[site]
        downloader = paced_downloader(self._crawler)
        if downloader is not None:
            downloader.drop_queued(site, lambda queued: SiteLeft(queued.url, site, left_until, reason))

    def _leave_shared(self, site: str, until: float, reason: str) -> None:
        assert self._runtime.shared_crawl is not None
        try:
            self._runtime.shared_crawl.leave(site, until, reason)
        except FrontierUnreachable as error:  # the shared pause still holds the site on every worker
            logger.warning("backoff: could not tell the other workers to leave %s (%s)", site, error)
