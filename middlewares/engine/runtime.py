"""One crawl's shared core objects, built once from the crawler's settings.

Every adapter reaches the configuration, the profile, the pacer, the summary
and the store through ``Runtime.of(crawler)`` so all of them agree on one view
of the crawl: ``runtime.config`` is the one reading of the settings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from scrapy.settings import default_settings

from synapsecrawl.crawl.config import CrawlConfig
from synapsecrawl.crawl.summary import CrawlSummary
from synapsecrawl.extract.pool import Reader
from synapsecrawl.kb import open_store
from synapsecrawl.kb.store import Store
from synapsecrawl.pacing.clock import PacingState, SiteClock
from synapsecrawl.profiles import Limits, Profile
from synapsecrawl.urls import site_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from synapsecrawl.crawl.frontier import SharedFrontier
    from synapsecrawl.pacing.shared import RedisPacing

__all__ = ["Runtime"]

_ATTR = "_synapsecrawl_runtime"


@dataclass
class Runtime:
    """The configuration, profile, pacer, summary and store of one crawl."""

    config: CrawlConfig
    profile: Profile
    pacer: PacingState
    kb_uri: str
    limits: Limits  # the operator's; a spider's -a arguments may lower them (spider.limits)
    shared_pacer: RedisPacing | None = None  # the pacer itself when PACING_REDIS_URL shares it between machines
    reader: Reader = field(default_factory=lambda: Reader(0))  # extraction, in worker processes (EXTRACT_PROCESSES)
    summary: CrawlSummary = field(default_factory=CrawlSummary)
    started_at: float = field(default_factory=time.time)
    shared_crawl: SharedFrontier | None = None  # set by the worker spider of a shared crawl (spiders.worker)
    _store: Store | None = None

    @classmethod
    def of(cls, crawler: Crawler) -> Runtime:
        """The crawl's runtime, made on first use."""
        runtime: Runtime | None = getattr(crawler, _ATTR, None)
        if runtime is None:
            # Read from what the operator set, not from the add-on's derived
            # settings: a spider is built before add-ons have run.
            config = CrawlConfig.from_settings(crawler.settings, defaults=vars(default_settings))
            shared = _shared_pacer(config)
            runtime = cls(
                config=config,
                profile=config.profile,
                pacer=shared if shared is not None else SiteClock(config.limits.delay, config.profile.crawl_delay_cap),
                shared_pacer=shared,
                kb_uri=config.kb.uri,
                limits=config.limits,
                reader=Reader(config.extract_processes),
            )
            setattr(crawler, _ATTR, runtime)
        return runtime

    def site(self, url: str) -> str:
        """The site ``url`` counts toward."""
        return site_of(url, self.profile.site)

    def store(self) -> Store:
        """The knowledge base, opened on first use."""
        if self._store is None:
            self._store = open_store(self.kb_uri)
        return self._store

    def close(self) -> None:
        """Stop the extraction workers; close the store if it was opened."""
        self.reader.close()
        if self._store is not None:
            self._store.close()
            self._store = None


def _shared_pacer(config: CrawlConfig) -> RedisPacing | None:
    """The pacer shared through Redis (PACING_REDIS_URL), or ``None`` when pacing is this process's own."""
    profile, limits, url, prefix = config.profile, config.limits, config.shared.redis_url, config.shared.pacing_prefix
    if not url:
        return None
    from synapsecrawl.pacing.shared import RedisPacing  # a Redis client is imported only by a crawl that uses one

    return RedisPacing(
        url,
        delay=limits.delay,
        crawl_delay_cap=profile.crawl_delay_cap,
        concurrency=profile.concurrency,
        lease_seconds=config.lease_seconds,  # outlives the longest download, then frees a dead machine's place
        prefix=f"{prefix}:{profile.name}",
    )
