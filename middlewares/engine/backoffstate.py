"""Backoff's state for one crawl, shared by the gate, the judge, the retries and a shared crawl's scheduler.

What the store remembers of each site (its pause, its streaks) is read once per
crawl, and what this crawl learns is written back, so a later crawl starts where
this one stopped. The clocks are passed in (``Clock``: unix seconds for the
store, monotonic for the pacer), so adapter tests check every wait exactly.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Self

from middlewares.engine.exceptions import SiteLeft
from middlewares.engine.logformat import secs, when
from middlewares.engine.runtime import Runtime
from middlewares.engine.seam import paced_downloader
from synapsecrawl.kb.records import SiteState, UrlHold
from synapsecrawl.pacing.backoff import SiteHistory

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["BackoffState", "Clock", "left_elsewhere"]

logger = logging.getLogger("middlewares.backoff")  # one logger for backoff's lines, whichever file writes them

_ATTR = "_synapsecrawl_backoff"


@dataclass(frozen=True)
class Clock:
    """The clocks backoff reads: unix seconds (the store's pauses and holds), monotonic (the pacer's)."""

    wall: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic


@dataclass
class BackoffState:
    """The crawl's backoff state, shared by the gate, the judge and the retries; ``clock`` is injectable."""

    crawler: Crawler
    runtime: Runtime
    max_wait: float
    clock: Clock = field(default_factory=Clock)
    histories: dict[str, SiteHistory] = field(default_factory=dict)
    paused_until: dict[str, tuple[float, str]] = field(default_factory=dict)  # unix seconds, reason
    left: dict[str, tuple[float, str]] = field(default_factory=dict)
    loading: dict[str, asyncio.Future[None]] = field(default_factory=dict)
    _holds: asyncio.Future[dict[str, UrlHold]] | None = None

    @classmethod
    def of(cls, crawler: Crawler, clock: Clock | None = None) -> Self:
        """The crawl's state, made on first use (with ``clock``, if given, else the real clocks)."""
        book: Self | None = getattr(crawler, _ATTR, None)
        if book is None:
            runtime = Runtime.of(crawler)
            # BACKOFF_MAX_WAIT over the profile's is refused by the config, never clamped here
            book = cls(crawler, runtime, runtime.config.backoff_max_wait, clock or Clock())
            setattr(crawler, _ATTR, book)
        return book

    def stat(self, key: str) -> None:
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value(key)

    def refresh(self, site: str) -> None:
        downloader = paced_downloader(self.crawler)
        if downloader is not None:  # a pause or spacing reaches the live slot
            downloader.refresh(site)

    async def hold_for(self, url: str) -> UrlHold | None:
        """The hold an earlier crawl left on ``url``, read from the store once per crawl.

        One read, not one per request: a thread hop per request let requests
        overtake each other (sitemap lastmod order, breadth-first order).
        """
        if self._holds is None:
            self._holds = asyncio.ensure_future(self._read_holds())
        holds = self._holds.result() if self._holds.done() else await self._holds
        return holds.get(url)

    async def _read_holds(self) -> dict[str, UrlHold]:
        return {hold.url: hold for hold in await self.runtime.kb.url_holds(self.runtime.profile.name)}

    async def load(self, site: str) -> None:
        """Read what the store remembers of ``site``, once per crawl."""
        if site not in self.loading:
            self.loading[site] = asyncio.ensure_future(self._load(site))
        await self.loading[site]

    async def _load(self, site: str) -> None:
        profile = self.runtime.profile.name
        state = await self.runtime.kb.site_state(profile, site)
        if state is None:
            return
        self.histories.setdefault(site, SiteHistory(state.slow_streak, state.forbidden_streak))
        if self.runtime.shared_pacer is not None:  # every machine counts from what the store remembers
            self.runtime.shared_pacer.seed_streaks(site, state.slow_streak, state.forbidden_streak)
        remaining = state.paused_until - self.clock.wall()
        if remaining <= 0:
            return
        self.paused_until[site] = (state.paused_until, state.pause_reason)
        if remaining > self.max_wait:
            self.left[site] = (state.paused_until, state.pause_reason)
            self.stat("backoff/left/earlier_crawl")
            logger.info(
                "backoff: %s is paused until %s by an earlier crawl (%s): not touched in this crawl",
                site,
                when(state.paused_until),
                state.pause_reason,
            )
            return
        self.runtime.pacer.pause(site, self.clock.monotonic() + remaining)
        self.refresh(site)
        logger.info(
            "backoff: %s is paused until %s by an earlier crawl (%s): waiting %s",
            site,
            when(state.paused_until),
            state.pause_reason,
            secs(remaining),
        )

    def refuse_if_left(self, request: Request, site: str) -> None:
        if site in self.left:
            until, reason = self.left[site]
            raise SiteLeft(request.url, site, until, reason)

    async def save_site(self, site: str) -> None:
        until, reason = self.paused_until.get(site, (0.0, ""))
        history = self.histories.get(site, SiteHistory())
        state = SiteState(site, until, reason, history.slow_streak, history.forbidden_streak)
        await self.runtime.kb.put_site_state(self.runtime.profile.name, state)

    async def hold(self, request: Request, site: str, *, kind: str, until: float, reason: str) -> None:
        kb = self.runtime.target.kb or ""
        hold = UrlHold(
            request.url,
            "gone" if kind == "gone" else "deferred",
            until,
            reason,
            site,
            str(kb),
            int(request.meta.get("backoff_retries", 0)),
            self.clock.wall(),
        )
        await self.runtime.kb.hold(self.runtime.profile.name, hold)

    async def release(self, request: Request) -> None:
        if request.meta.get("backoff_held") or request.meta.get("backoff_retries"):
            await self.runtime.kb.release(self.runtime.profile.name, request.url)


def left_elsewhere(crawler: Crawler, site: str, until: float, reason: str) -> None:
    """Another worker of a shared crawl left ``site`` (paused past what the crawl waits): defer it here too."""
    BackoffState.of(crawler).left.setdefault(site, (until, reason))
