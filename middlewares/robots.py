"""robots.txt for every request: fetched once per origin, judged per profile.

A thin adapter over ``synapsecrawl.rules.robots`` (RFC 9309 matching) and
``synapsecrawl.rules.robots_policy`` (what 4xx/5xx mean, how long a copy holds).
Copies are kept in the KB (``runtime.kb``); a copy read anew removes the stored
pages it disallows (``middlewares.removals``).
Concurrent requests to one origin share one fetch; the fetch itself goes
through the downloader (same User-Agent rules, same pacer slot). In a shared
crawl, a page whose lease holds its site's start before the site's robots.txt
was read (meta ``pacing_granted`` ``before_robots``) gives that start to the
fetch, the lease being its lock, and goes back to the frontier.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.httpobj import urlparse_cached

from middlewares.engine.resolver import refusal
from middlewares.engine.runtime import Runtime
from middlewares.engine.seam import paced_downloader
from middlewares.removals import Removals
from synapsecrawl.crawl.kinds import KIND, RequestKind, kind_of
from synapsecrawl.crawl.meta import BEFORE_ROBOTS, LEASE, PACING_GRANTED, ROBOTS_TOOK_START, drop_per_download
from synapsecrawl.kb.records import RobotsCopy
from synapsecrawl.kb.removals import unreadable_since
from synapsecrawl.pacing.clock import site_crawl_delay
from synapsecrawl.pacing.keys import grant_lease
from synapsecrawl.rules.robots_policy import RobotsOutcome, is_fresh, judge_fetch
from synapsecrawl.urls import origin_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

__all__ = ["RobotsMiddleware"]

logger = logging.getLogger(__name__)

_TOO_MANY_REDIRECTS = 310  # judged as a 3xx: unavailable


class RobotsMiddleware:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._profile = runtime.profile
        self._outcomes: dict[str, tuple[float, asyncio.Future[RobotsOutcome]]] = {}
        self._sites: dict[str, dict[str, float | None]] = {}  # site -> origins asked -> Crawl-delay (None: none)
        self.clock: Callable[[], float] = time.time  # unix seconds; tests pass a fake clock

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsMiddleware:
        return cls(crawler, Runtime.of(crawler))

    async def process_request(self, request: Request) -> Request | None:
        if kind_of(request.meta).rules.robots == "self" or request.meta.get("dont_obey_robotstxt"):
            return None
        outcome = await self.outcome_for(request.url, holding=request)
        if outcome.rules.allows(request.url):
            outcome = await self._failed_elsewhere(request) or outcome
        if not outcome.rules.allows(request.url) and not self._feed_exempt(request, outcome):
            assert self._crawler.stats is not None
            site = self._runtime.site(request.url)
            refused = refusal(urlparse_cached(request).hostname or "")
            if refused:  # robots.txt was unreachable because the address guard refused the host
                self._crawler.stats.inc_value("netguard/address")
                self._runtime.summary.skip(site, "address", request.url)
                raise IgnoreRequest(f"refused {request.url}: {refused}")
            reason = "disallowed" if outcome.kind == "parsed" else f"robots.txt {outcome.kind}"
            self._crawler.stats.inc_value("robots/disallowed")
            if kind_of(request.meta).rules.summarised:  # a page's script is not a page left out
                self._runtime.summary.skip(site, "robots", request.url)
            request.meta["robots_disallowed"] = True
            request.meta["robots_outcome"] = outcome.kind  # only "parsed" rules remove a stored page
            raise IgnoreRequest(f"robots.txt ({reason}) forbids {request.url}")
        if request.meta.pop(ROBOTS_TOOK_START, None):  # its lease ends as it goes back, with robots.txt's arrival
            assert self._crawler.stats is not None
            self._crawler.stats.inc_value("pacing/requeued")
            return request.replace(dont_filter=True, meta=drop_per_download(request.meta))
        if request.meta.get(PACING_GRANTED) == BEFORE_ROBOTS:  # robots.txt known here already: its start was
            await self._free_grant(request)  # booked without the Crawl-delay, so the request asks for its own
        return None

    async def _failed_elsewhere(self, request: Request) -> RobotsOutcome | None:
        """The failed robots.txt of another host of ``url``'s site, if the profile stops a site for it.

        OMN-ROBOTS: a robots.txt answering 5xx or nothing makes "the whole site" disallowed, and a site
        is the registrable domain with all its hostnames; for a profile whose site is one host, the other
        origin is that host's other scheme. A failed copy is asked again once stale ("until it answers").
        """
        url = request.url
        origin = origin_of(url)
        for other in sorted(self._sites.get(self._runtime.site(url), {}).keys() - {origin}):
            known = self._outcomes.get(other)
            if known is None:
                continue
            if not known[1].done():  # being asked now (a site may have two requests in flight): wait for it
                await self._free_grant(request)
                await asyncio.wait([known[1]])
            elif not known[1].result().failed:
                continue
            outcome = await self.outcome_for(other + "/", holding=request)
            if outcome.failed and not outcome.rules.allows("/"):
                return outcome
        return None

    def _feed_exempt(self, request: Request, outcome: RobotsOutcome) -> bool:
        """SER-ROBOTS-FEEDS: a feed (``RequestKind.FEED``) is fetched for its subscriber, like Google's
        Feedfetcher, so under a profile saying so only a group naming the bot can disallow it."""
        if not (kind_of(request.meta).rules.robots == "own_group" and self._profile.robots.feeds_own_group_only):
            return False
        if outcome.kind != "parsed" or outcome.rules.matched_group not in ("*", ""):
            return False
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value("robots/feed_exempt")
        logger.info(
            "robots.txt: the * group disallows feed %s, which heeds only %s's own group",
            request.url,
            self._profile.token,
        )
        return True

    async def outcome_for(self, url: str, holding: Request | None = None) -> RobotsOutcome:
        """The robots outcome for ``url``'s origin, fetching it when no fresh copy exists. ``holding``: the
        request that waits for it, whose start a shared frontier lease may hold (freed before the wait)."""
        origin = origin_of(url)
        now = self.clock()
        known = self._outcomes.get(origin)
        if known is not None:
            fetched_at, future = known
            if not future.done():
                await self._free_grant(holding)
                return await future
            outcome = future.result()
            if is_fresh(
                self._profile.robots,
                fetched_at=fetched_at,
                failed=outcome.failed,
                now=now,
                crawl_started_at=self._runtime.started_at,
            ):
                return outcome
        future = asyncio.get_running_loop().create_future()
        self._outcomes[origin] = (now, future)
        site = self._runtime.site(url)
        origins = self._sites.setdefault(site, {})
        origins.setdefault(origin, None)
        try:
            fetched_at, outcome = await self._load(origin, now, holding)
        except BaseException as exc:  # keep waiters from hanging, then let it rise
            future.set_exception(exc)
            future.exception()  # mark retrieved
            del self._outcomes[origin]
            raise
        self._outcomes[origin] = (fetched_at, future)
        future.set_result(outcome)
        origins[origin] = outcome.rules.crawl_delay  # a site of many hosts is paced as one (site_crawl_delay)
        self._set_crawl_delay(site, site_crawl_delay(origins.values()), holding)
        return outcome

    def _set_crawl_delay(self, site: str, crawl_delay: float | None, holding: Request | None) -> None:
        """The site's Crawl-delay for the pacer; in Redis with the end of the lease whose start its robots.txt
        took (one round trip less, and no other start there is granted before it)."""
        shared, downloader = self._runtime.shared_pacer, paced_downloader(self._crawler)
        lease = holding.meta.get(LEASE) if holding is not None and holding.meta.get(ROBOTS_TOOK_START) else None
        if shared is None or downloader is None or not isinstance(lease, list) or len(lease) != 2:
            self._runtime.pacer.set_crawl_delay(site, crawl_delay)
            return
        downloader.note_crawl_delay(f"{lease[0]}\t{lease[1]}", shared.note_crawl_delay(site, crawl_delay))

    async def _load(self, origin: str, now: float, holding: Request | None) -> tuple[float, RobotsOutcome]:
        shared = self._runtime.shared_crawl
        if shared is None:
            return await self._load_copy(origin, now, stored=not self._profile.robots.once_per_crawl)
        # A shared crawl: one worker fetches a site's robots.txt, the others wait and read its copy from
        # the KB (fresh from the crawl's start, so "once per crawl" holds across workers).
        # A copy already there is read without the lock (two Redis round trips a site and worker less).
        known = await self._stored_copy(origin, time.time())
        if known is not None:
            return known
        lease = _first_grant(holding)
        if lease is not None:
            # The site's one lease out, granted before its robots.txt was read (synapsecrawl.shared.frontier):
            # no other worker's lease fetches it meanwhile, so the lease is the lock, and its start is the fetch's.
            return await self._load_copy(origin, time.time(), stored=False, lease=lease)
        await self._free_grant(holding)
        async with shared.robots_lock(self._profile.name, origin, self._runtime.config.lease_seconds):
            return await self._load_copy(origin, time.time(), stored=True)

    async def _free_grant(self, request: Request | None) -> None:
        """Give back the site's start that ``request``'s frontier lease holds (PACING_GRANTED), or the place it
        still holds once its robots.txt fetch took that start (ROBOTS_TOOK_START), before it waits for a
        robots.txt fetch: that fetch needs the site's one place. The request then asks for its own."""
        if request is None:
            return
        if not (request.meta.pop(PACING_GRANTED, None) or request.meta.get(ROBOTS_TOOK_START)):
            return
        pacer, lease = self._runtime.shared_pacer, request.meta.get(LEASE)
        if pacer is not None and isinstance(lease, list) and len(lease) == 2:
            await pacer.release(self._runtime.site(request.url), grant_lease(str(lease[1])))

    async def _stored_copy(self, origin: str, now: float) -> tuple[float, RobotsOutcome] | None:
        copy = await self._runtime.kb.robots_copy(self._profile.name, origin)
        if copy is None:
            return None
        outcome = judge_fetch(self._profile.robots, self._profile.tokens, copy.status, copy.body)
        if not is_fresh(
            self._profile.robots,
            fetched_at=copy.fetched_at,
            failed=outcome.failed,
            now=now,
            crawl_started_at=self._runtime.started_at,
        ):
            return None
        return copy.fetched_at, outcome

    async def _load_copy(
        self, origin: str, now: float, *, stored: bool, lease: list[str] | None = None
    ) -> tuple[float, RobotsOutcome]:
        if stored:
            known = await self._stored_copy(origin, now)
            if known is not None:
                return known
        status, body = await self._fetch(origin, lease)
        outcome = judge_fetch(self._profile.robots, self._profile.tokens, status, body)
        if outcome.kind == "parsed":  # YOT-ROBOTS, SYN-REMOVE: stored pages it disallows leave the KB at once
            await Removals.of(self._crawler).disallowed(origin, outcome.rules)
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value(f"robots/{outcome.kind}")
        if outcome.kind != "parsed":
            verdict = "nothing fetched from it" if not outcome.rules.allows("/") else "everything allowed"
            logger.warning("robots.txt of %s: %s (%s): %s", origin, outcome.kind, status or "no answer", verdict)
        fetched_at = self.clock()
        unreadable = outcome.kind != "parsed" and not outcome.rules.allows("/")
        since = 0.0
        if unreadable:  # YOT-STALE: an unreadable site keeps its pages for a bounded time
            since = unreadable_since(
                await self._runtime.kb.robots_copy(self._profile.name, origin), unreadable=True, now=fetched_at
            )
            await Removals.of(self._crawler).unreadable(
                origin,
                since,
                now=fetched_at,
                bound=self._profile.robots.stale_after,
                next_look=self._runtime.config.operations.reread_interval,
            )
        await self._runtime.kb.put_robots(self._profile.name, RobotsCopy(origin, status, body, fetched_at, since))
        return fetched_at, outcome

    async def _fetch(self, origin: str, lease: list[str] | None = None) -> tuple[int, bytes]:
        """robots.txt of ``origin``, through the downloader; under a page's frontier ``lease`` that holds its
        site's start (``_first_grant``), sent without asking the pacer, its arrival ending that lease."""
        granted = {} if lease is None else {LEASE: lease, PACING_GRANTED: True}
        request = Request(
            f"{origin}/robots.txt",
            callback=NO_CALLBACK,
            headers={"User-Agent": self._profile.robots_user_agent},
            meta={
                KIND: RequestKind.ROBOTS.value,
                "dont_retry": True,
                "handle_httpstatus_all": True,
                "redirect_ttl": self._profile.robots.max_redirects,  # RFC 9309 §2.3.1.2
                # one byte past the parse limit, so parse_robots sees whether the limit cuts a line (§2.5)
                "size_limit_bytes": self._profile.robots.max_bytes + 1,
                **granted,
            },
            priority=1000,
        )
        assert self._crawler.engine is not None
        try:
            response = await self._crawler.engine.download_async(request)
        except IgnoreRequest as exc:
            if "redirect" in str(exc).lower():  # more than 5 redirects: unavailable, §2.3.1.2
                return _TOO_MANY_REDIRECTS, b""
            logger.info("robots.txt of %s refused: %s", origin, exc)
            return 0, b""
        except Exception as exc:  # noqa: BLE001 - refused, timed out, DNS: RFC 9309 §2.3.1.4 "unreachable"
            logger.info("robots.txt of %s unreachable: %s", origin, exc)
            return 0, b""
        return response.status, response.body


def _first_grant(request: Request | None) -> list[str] | None:
    """The frontier lease of ``request`` if it holds its site's start granted before the site's robots.txt was
    read (``BEFORE_ROBOTS``): taken from it for the robots.txt fetch, and the request marked to go back."""
    lease = request.meta.get(LEASE) if request is not None else None
    if request is None or request.meta.get(PACING_GRANTED) != BEFORE_ROBOTS or not isinstance(lease, list):
        return None
    del request.meta[PACING_GRANTED]
    request.meta[ROBOTS_TOOK_START] = True
    return [str(part) for part in lease]
