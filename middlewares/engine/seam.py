"""Every reach into Scrapy's engine that Scrapy offers no public way to make, in one place.

``engine_of`` (``Crawler._engine``), ``wake_engine`` (the engine's ``_slot.nextcall``),
``engine_scheduler`` (its scheduler), ``scraper_done`` (the scraper's ``slot.active``) and
``paced_downloader`` (the running ``PacedDownloader``, or ``None`` under another downloader).
Adapters import these instead of touching the engine; ``tests/adapters/test_engine_seam.py`` pins
each member they read, as it pins the private members ``engine/downloader.py`` overrides and
``engine/scheduler.py`` calls, so a Scrapy upgrade that moves one fails there first.
Reads no setting and no meta key.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from middlewares.engine.downloader import PacedDownloader

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.core.engine import ExecutionEngine
    from scrapy.core.scheduler import BaseScheduler
    from scrapy.crawler import Crawler

__all__ = ["SCRAPER_POLL_SECONDS", "engine_of", "engine_scheduler", "paced_downloader", "scraper_done", "wake_engine"]

# How often scraper_done looks again: Scrapy sends no signal when its scraper is done with a response
# (item_scraped and its kin are per item; a response may yield none, and its links go to the scheduler
# without one), so the scraper's own set of the responses it is processing is looked at.
SCRAPER_POLL_SECONDS = 0.02


def engine_of(crawler: Crawler) -> ExecutionEngine | None:
    """The crawler's engine, or ``None`` before the crawl has made one: ``Crawler.engine`` raises until then,
    and Scrapy's own docs point code that may run earlier at ``Crawler._engine``."""
    return crawler._engine


def wake_engine(crawler: Crawler) -> None:
    """Have the engine look at its scheduler again now (its own ``_slot.nextcall``), as it does after a
    download: a scheduler whose next request falls due later has no public way to say so."""
    engine = engine_of(crawler)
    slot = engine._slot if engine is not None else None
    if slot is not None:
        slot.nextcall.schedule()


def engine_scheduler(crawler: Crawler) -> BaseScheduler:
    """The running engine's scheduler (Scrapy 2.19's public ``ExecutionEngine.scheduler``)."""
    engine = engine_of(crawler)
    scheduler = engine.scheduler if engine is not None else None
    assert scheduler is not None, "the engine has no scheduler before the spider opens"
    return scheduler


def paced_downloader(crawler: Crawler) -> PacedDownloader | None:
    """The running engine's ``PacedDownloader``; ``None`` before the engine exists or under another
    DOWNLOADER (a test's plain one), where there is no site slot to refresh, drop or ask."""
    engine = engine_of(crawler)
    downloader = engine.downloader if engine is not None else None
    return downloader if isinstance(downloader, PacedDownloader) else None


async def scraper_done(crawler: Crawler, request: Request) -> None:
    """Return once Scrapy's scraper is done with ``request``'s answer: its callback's output handed on
    (items through the pipelines, requests to the scheduler). At once if there is no scraper."""
    engine = engine_of(crawler)
    scraper = engine.scraper if engine is not None else None
    while scraper is not None and scraper.slot is not None and request in scraper.slot.active:
        await asyncio.sleep(SCRAPER_POLL_SECONDS)
