"""Backoff in the crawl: pauses, retries and holds, applied without stalling other sites.

A thin adapter over ``synapsecrawl.pacing.backoff``. Each answer is judged the moment
it is downloaded (the ``response_downloaded`` signal, before the site's slot
looks at its queue again), so a pause reaches the pacer and the live slot
before the next request to that site can start; other sites' slots never
notice. A site whose pause is longer than the crawl may wait is left: its
queued and later requests are refused and recorded as deferred in the store.
A failed URL comes back as a copy: at once into the paused slot, or, for a
wait of its own (SereneReader's 30 s / 1 min / 2 min), through the event
loop's ``call_later`` and ``engine.crawl``, the spider kept open meanwhile.
Every retry is first written to the store as a deferred hold, released when
the URL is answered, so a crawl that stops early loses nothing.

``BackoffGateMiddleware`` runs first (before robots.txt): what the store
remembers from earlier crawls keeps a request off the network.

A feed (``RequestKind.FEED``) is not retried in the crawl: each failed refresh holds
its URL in the store for the feed curve's delay (15 min doubling to a day
under SereneReader; at least Retry-After on a 429), and a good answer (2xx,
304) releases it (SER-FEED-BACKOFF). The feed spider skips a held feed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from time import monotonic
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.utils.misc import load_object

from middlewares.runtime import Runtime
from synapsecrawl.kb.records import SiteState, UrlHold
from synapsecrawl.pacing.backoff import Decision, SiteHistory, decide, feed_retry_delay, slow_spacing
from synapsecrawl.requestkind import kind_of

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["BackoffGateMiddleware", "BackoffMiddleware", "RetryScheduled", "SiteLeft", "UrlHeld", "left_elsewhere"]

logger = logging.getLogger(__name__)

_ATTR = "_synapsecrawl_backoff"
# Per-download notes that must not follow a request into its retry.
_STALE_META = frozenset({"gate_refused_type", "size_truncated", "download_latency", "backoff_judged"})


def _is_side_fetch(request: Request) -> bool:
    """robots.txt, tdmrep.json, ...: heeds a site's pauses, but its answer is no page's outcome."""
    return kind_of(request.meta).rules.backoff == "side"


def _is_feed(request: Request) -> bool:
    return kind_of(request.meta).rules.backoff == "feed"


class SiteLeft(IgnoreRequest):
    """The request's site is paused past what this crawl waits: deferred to a later crawl."""

    def __init__(self, url: str, site: str, until: float, reason: str) -> None:
        super().__init__(f"{site} is paused until {_when(until)} ({reason}): {url} deferred")
        self.site, self.until, self.reason = site, until, reason


class UrlHeld(IgnoreRequest):
    """The URL itself is held (a remembered failure, a deferred retry not yet due)."""


class RetryScheduled(IgnoreRequest):
    """This attempt is over; a copy of the request comes back after a wait (its callbacks with it)."""


def _when(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="seconds")


def _secs(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


def _why(decision: Decision) -> str:
    if decision.reason == "403":
        return "403 answers in a row"
    if decision.stated is None:
        return f"{decision.reason}, no Retry-After"
    said = f"{decision.reason}, Retry-After {_secs(decision.stated)}"
    return said if abs(decision.stated - decision.site_wait) < 0.5 else f"{said} taken as {_secs(decision.site_wait)}"


@dataclass
class _Judged:
    """A response's decision, made at download time, finished in process_response."""

    decision: Decision
    site: str
    changed: bool


@dataclass
class _Book:
    """The crawl's backoff state, shared by the gate and the middleware."""

    crawler: Crawler
    runtime: Runtime
    max_wait: float
    histories: dict[str, SiteHistory] = field(default_factory=dict)
    paused_until: dict[str, tuple[float, str]] = field(default_factory=dict)  # unix seconds, reason
    left: dict[str, tuple[float, str]] = field(default_factory=dict)
    loading: dict[str, asyncio.Future[None]] = field(default_factory=dict)
    _holds: asyncio.Future[dict[str, UrlHold]] | None = None

    @classmethod
    def of(cls, crawler: Crawler) -> _Book:
        book: _Book | None = getattr(crawler, _ATTR, None)
        if book is None:
            runtime = Runtime.of(crawler)
            policy_wait = runtime.profile.backoff.max_wait
            try:
                asked = crawler.settings.getfloat("BACKOFF_MAX_WAIT", 0.0)
            except ValueError:  # fail toward politeness: wait as long as the profile says
                logger.warning(
                    "BACKOFF_MAX_WAIT %r is not a number: using %s's %s",
                    crawler.settings.get("BACKOFF_MAX_WAIT"),
                    runtime.profile.name,
                    policy_wait,
                )
                asked = 0.0
            if asked > policy_wait:
                logger.warning(
                    "BACKOFF_MAX_WAIT %s is above %s's %s: using %s",
                    asked,
                    runtime.profile.name,
                    policy_wait,
                    policy_wait,
                )
            book = cls(crawler, runtime, min(asked, policy_wait) if asked > 0 else policy_wait)
            setattr(crawler, _ATTR, book)
        return book

    def stat(self, key: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key)

    def refresh(self, site: str) -> None:
        downloader = self.crawler.engine.downloader if self.crawler.engine else None
        if hasattr(downloader, "refresh"):
            downloader.refresh(site)

    async def hold_for(self, url: str) -> UrlHold | None:
        """The hold an earlier crawl left on ``url``, read from the store once per crawl.

        One read, not one per request: a thread hop per request let requests
        overtake each other (sitemap lastmod order, breadth-first order).
        """
        if self._holds is None:
            store, profile = self.runtime.store(), self.runtime.profile.name
            self._holds = asyncio.ensure_future(
                asyncio.to_thread(lambda: {hold.url: hold for hold in store.url_holds(profile)})
            )
        holds = self._holds.result() if self._holds.done() else await self._holds
        return holds.get(url)

    async def load(self, site: str) -> None:
        """Read what the store remembers of ``site``, once per crawl."""
        if site not in self.loading:
            self.loading[site] = asyncio.ensure_future(self._load(site))
        await self.loading[site]

    async def _load(self, site: str) -> None:
        profile = self.runtime.profile.name
        state = await asyncio.to_thread(self.runtime.store().get_site_state, profile, site)
        if state is None:
            return
        self.histories.setdefault(site, SiteHistory(state.slow_streak, state.forbidden_streak))
        if self.runtime.shared_pacer is not None:  # every machine counts from what the store remembers
            self.runtime.shared_pacer.seed_streaks(site, state.slow_streak, state.forbidden_streak)
        remaining = state.paused_until - time.time()
        if remaining <= 0:
            return
        self.paused_until[site] = (state.paused_until, state.pause_reason)
        if remaining > self.max_wait:
            self.left[site] = (state.paused_until, state.pause_reason)
            self.stat("backoff/left/earlier_crawl")
            logger.info(
                "backoff: %s is paused until %s by an earlier crawl (%s): not touched in this crawl",
                site,
                _when(state.paused_until),
                state.pause_reason,
            )
            return
        self.runtime.pacer.pause(site, monotonic() + remaining)
        self.refresh(site)
        logger.info(
            "backoff: %s is paused until %s by an earlier crawl (%s): waiting %s",
            site,
            _when(state.paused_until),
            state.pause_reason,
            _secs(remaining),
        )

    def refuse_if_left(self, request: Request, site: str) -> None:
        if site in self.left:
            until, reason = self.left[site]
            raise SiteLeft(request.url, site, until, reason)

    async def save_site(self, site: str) -> None:
        until, reason = self.paused_until.get(site, (0.0, ""))
        history = self.histories.get(site, SiteHistory())
        state = SiteState(site, until, reason, history.slow_streak, history.forbidden_streak)
        await asyncio.to_thread(self.runtime.store().put_site_state, self.runtime.profile.name, state)

    async def hold(self, request: Request, site: str, *, kind: str, until: float, reason: str) -> None:
        kb = getattr(getattr(self.crawler.spider, "crawl", None), "kb", "")
        hold = UrlHold(
            request.url,
            "gone" if kind == "gone" else "deferred",
            until,
            reason,
            site,
            str(kb),
            int(request.meta.get("backoff_retries", 0)),
            time.time(),
        )
        await asyncio.to_thread(self.runtime.store().put_url_hold, self.runtime.profile.name, hold)

    async def release(self, request: Request) -> None:
        if request.meta.get("backoff_held") or request.meta.get("backoff_retries"):
            await asyncio.to_thread(self.runtime.store().delete_url_hold, self.runtime.profile.name, request.url)


def left_elsewhere(crawler: Crawler, site: str, until: float, reason: str) -> None:
    """Another worker of a shared crawl left ``site`` (paused past what the crawl waits): defer it here too."""
    _Book.of(crawler).left.setdefault(site, (until, reason))


class BackoffGateMiddleware:
    """Keeps requests off sites and URLs that earlier answers put on hold."""

    def __init__(self, book: _Book) -> None:
        self._book = book
        self._runtime = book.runtime

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BackoffGateMiddleware:
        return cls(_Book.of(crawler))

    async def process_request(self, request: Request) -> None:
        if request.meta.get("dont_backoff"):
            return
        site = self._runtime.site(request.url)
        await self._book.load(site)
        self._book.refuse_if_left(request, site)
        if _is_side_fetch(request) or request.meta.get("backoff_retries"):
            return
        hold = await self._book.hold_for(request.url)
        if hold is None:
            return
        if hold.until <= time.time():
            request.meta["backoff_held"] = True  # due: fetch it, and release the hold once answered
            return
        self._book.stat(f"backoff/skipped/{hold.kind}")
        self._runtime.summary.skip(site, "error" if hold.kind == "gone" else "paused", request.url)
        logger.info(
            "backoff: not fetching %s before %s (%s %s)", request.url, _when(hold.until), hold.kind, hold.reason
        )
        raise UrlHeld(f"{request.url} is held until {_when(hold.until)} ({hold.kind} {hold.reason})")


class BackoffMiddleware:
    """Judges every answer, pauses sites, retries and holds URLs."""

    def __init__(self, crawler: Crawler, book: _Book, transient: tuple[type[BaseException], ...]) -> None:
        self._crawler = crawler
        self._book = book
        self._runtime = book.runtime
        self._policy = book.runtime.profile.backoff
        self._transient = transient
        self._later: dict[Request, asyncio.TimerHandle] = {}
        crawler.signals.connect(self._judge, signal=signals.response_downloaded)
        crawler.signals.connect(self._idle, signal=signals.spider_idle)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BackoffMiddleware:
        transient = tuple(
            load_object(name) if isinstance(name, str) else name
            for name in crawler.settings.getlist("RETRY_EXCEPTIONS")
        )
        return cls(crawler, _Book.of(crawler), transient)

    def process_request(self, request: Request) -> None:
        # A request that passed the gate before its site was left (e.g. waiting on robots.txt).
        if not request.meta.get("dont_backoff"):
            self._book.refuse_if_left(request, self._runtime.site(request.url))

    def _judge(self, response: Response, request: Request, **_: Any) -> None:
        """Decide at download time, so a pause holds the slot before its next start."""
        if request.meta.get("dont_backoff"):
            return
        site = self._runtime.site(request.url)
        self._pace_slow(site, request.meta.get("download_latency"))
        retry_after = response.headers.get(b"Retry-After")
        if _is_side_fetch(request) and retry_after is None and response.status not in self._policy.slow_statuses:
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
            now=time.time(),
            max_wait=self._book.max_wait,
        )
        self._book.histories[site] = decision.history
        changed = decision.history != history or decision.site_wait > 0
        request.meta["backoff_judged"] = _Judged(decision, site, changed)
        if decision.site_wait > 0:
            self._pause(site, decision)

    def _shared_history(self, site: str, status: int, retry_after: bytes | None) -> SiteHistory | None:
        """With a shared pacer, the site's streaks as all machines counted them before this answer (#16:
        403s in a row on different machines are one streak)."""
        pacer = self._runtime.shared_pacer
        if pacer is None:
            return None
        signal = status in self._policy.slow_statuses or bool(self._policy.any_retry_after and retry_after)
        counted = pacer.streaks(site, signal=signal, status=status, forbidden_limit=self._policy.forbidden_streak)
        return SiteHistory(*counted) if counted is not None else None

    def _pace_slow(self, site: str, latency: float | None) -> None:
        profile = self._runtime.profile
        if not profile.slow_factor:
            return
        # The whole download_latency counts, our own loop's lag included: taking an estimate of that lag
        # off could make a gap shorter than ten times what the site owner measured (fail toward politeness).
        spacing = slow_spacing(profile.slow_factor, latency, profile.crawl_delay_cap)
        before = self._runtime.pacer.spacing(site)
        self._runtime.pacer.set_spacing(site, spacing)
        self._book.refresh(site)
        after = self._runtime.pacer.spacing(site)
        if after > before * 1.1:
            self._book.stat("backoff/slow")
            logger.info(
                "backoff: %s answered in %s: %s between its requests now", site, _secs(latency or 0), _secs(after)
            )

    def _pause(self, site: str, decision: Decision) -> None:
        until = time.time() + decision.site_wait
        known, _ = self._book.paused_until.get(site, (0.0, ""))
        if until > known:
            self._book.paused_until[site] = (until, _why(decision))
        if not decision.leave_site:
            self._runtime.pacer.pause(site, monotonic() + decision.site_wait)
            self._book.refresh(site)
            self._book.stat(f"backoff/paused/{decision.reason}")
            logger.info(
                "backoff: pausing %s for %s until %s (%s)",
                site,
                _secs(decision.site_wait),
                _when(until),
                _why(decision),
            )
            return
        if site not in self._book.left:
            self._book.left[site] = (until, _why(decision))
            if self._runtime.shared_crawl is not None:  # every worker defers the site's requests (#16)
                self._leave_shared(site, until, _why(decision))
            self._book.stat(f"backoff/left/{decision.reason}")
            logger.info(
                "backoff: leaving %s to a later crawl: paused until %s (%s), longer than the %s this crawl waits",
                site,
                _when(until),
                _why(decision),
                _secs(self._book.max_wait),
            )
        left_until, reason = self._book.left[site]
        downloader = self._crawler.engine.downloader if self._crawler.engine else None
        if hasattr(downloader, "drop_queued"):
            downloader.drop_queued(site, lambda queued: SiteLeft(queued.url, site, left_until, reason))

    def _leave_shared(self, site: str, until: float, reason: str) -> None:
        from synapsecrawl.crawl.frontier import FrontierUnreachable

        assert self._runtime.shared_crawl is not None
        try:
            self._runtime.shared_crawl.leave(site, until, reason)
        except FrontierUnreachable as error:  # the shared pause still holds the site on every worker
            logger.warning("backoff: could not tell the other workers to leave %s (%s)", site, error)

    async def process_response(self, request: Request, response: Response) -> Request | Response:
        judged: _Judged | None = request.meta.pop("backoff_judged", None)
        if judged is None:
            return response
        if judged.changed:
            await self._book.save_site(judged.site)
        if _is_side_fetch(request):
            return response
        if _is_feed(request):
            await self._feed_refreshed(request, judged.site, response.status, response.headers.get(b"Retry-After"))
            return response
        return await self._settle(request, judged.decision, judged.site, answered=True) or response

    async def process_exception(self, request: Request, exception: Exception) -> Request | None:
        site = self._runtime.site(request.url)
        if isinstance(exception, SiteLeft):
            if not _is_side_fetch(request) and not _is_feed(request):  # a feed keeps its own delay
                await self._book.hold(request, site, kind="deferred", until=exception.until, reason=exception.reason)
                self._book.stat("backoff/deferred")
                self._runtime.summary.skip(site, "paused", request.url)
            return None
        if _is_feed(request) and not isinstance(exception, IgnoreRequest) and not (request.meta.get("dont_backoff")):
            await self._feed_refreshed(request, site, None, None, why=type(exception).__name__)
            return None
        if (
            isinstance(exception, IgnoreRequest)
            or not isinstance(exception, self._transient)
            or request.meta.get("dont_backoff")
            or _is_side_fetch(request)
        ):
            return None
        decision = decide(
            self._policy,
            self._book.histories.get(site, SiteHistory()),
            status=None,
            retries=int(request.meta.get("backoff_retries", 0)),
            now=time.time(),
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
        until = time.time() + decision.hold
        request.meta["dont_retry"] = True  # ours to retry, and we are done with it for this crawl
        await self._book.hold(request, site, kind=decision.hold_kind, until=until, reason=decision.reason)
        if decision.hold_kind == "gone":
            self._book.stat(f"backoff/remembered/{decision.reason}")
            logger.info(
                "backoff: %s answered %s: not fetched again before %s", request.url, decision.reason, _when(until)
            )
            return None
        self._book.stat("backoff/deferred")
        if decision.gave_up:
            self._book.stat("backoff/gave_up")
        if answered or not request.meta.get("summary_counts_failure"):  # else the spider's errback counts it by kind
            self._runtime.summary.skip(site, "error" if decision.gave_up else "paused", request.url)
        what = "giving up this crawl" if decision.gave_up else "no retry in this crawl"
        logger.info("backoff: %s for %s (%s): deferred until %s", what, request.url, decision.reason, _when(until))
        if answered:
            raise IgnoreRequest(f"{request.url} answered {decision.reason}: deferred until {_when(until)}")
        return None

    async def _retry(self, request: Request, decision: Decision, site: str, delay: float) -> Request:
        retries = int(request.meta.get("backoff_retries", 0)) + 1
        meta = {k: v for k, v in request.meta.items() if k not in _STALE_META}
        meta["backoff_retries"] = retries
        retry = request.replace(meta=meta, dont_filter=True)
        # written first, so a crawl that stops before the retry still has the URL
        await self._book.hold(retry, site, kind="deferred", until=time.time() + delay, reason=decision.reason)
        self._book.stat(f"backoff/retry/{decision.reason}")
        logger.info(
            "backoff: retrying %s in %s (%s; retry %d of %d)",
            request.url,
            _secs(delay),
            decision.reason,
            retries,
            self._policy.retries,
        )
        if delay <= decision.site_wait:
            return retry  # the paused slot holds it
        self._later[retry] = asyncio.get_running_loop().call_later(delay, self._reinject, retry)
        raise RetryScheduled(f"{request.url}: retried in {_secs(delay)}")

    async def _feed_refreshed(
        self, request: Request, site: str, status: int | None, retry_after: bytes | None, why: str = ""
    ) -> None:
        """SER-FEED-BACKOFF: a failed refresh holds the feed for the feed curve; a good answer releases it."""
        url = (request.meta.get("redirect_urls") or [request.url])[0]  # the feed as subscribed
        store, profile = self._runtime.store(), self._runtime.profile.name
        if status is not None and (200 <= status < 300 or status == 304):
            await asyncio.to_thread(store.delete_url_hold, profile, url)
            return
        if status is not None and 300 <= status < 400:
            return  # a redirect: the answer at its end is judged
        previous = await asyncio.to_thread(store.get_url_hold, profile, url)
        failures = (previous.failures if previous is not None else 0) + 1
        now = time.time()
        delay = feed_retry_delay(self._policy, failures, status=status, retry_after=retry_after, now=now)
        reason = f"feed {status if status is not None else why}"
        kb = str(getattr(getattr(self._crawler.spider, "crawl", None), "kb", ""))
        hold = UrlHold(url, "deferred", now + delay, reason, site, kb, failures, now)
        await asyncio.to_thread(store.put_url_hold, profile, hold)
        self._book.stat("backoff/feed_delayed")
        logger.info(
            "backoff: feed %s failed (%s; %d failed refreshes in a row): next refresh not before %s",
            url,
            reason.removeprefix("feed "),
            failures,
            _when(now + delay),
        )

    def _reinject(self, request: Request) -> None:
        if self._later.pop(request, None) is None:
            return
        engine = self._crawler.engine
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
