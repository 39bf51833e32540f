"""One crawl's shared core objects, built once from the crawler's settings.

Every adapter reaches the configuration, the profile, the pacer, the summary
and the knowledge base through ``Runtime.of(crawler)`` so all of them agree on
one view of the crawl: ``runtime.config`` is the one reading of the settings,
``runtime.kb`` (middlewares.engine.kb) the one door to the store at ``KB_URI``,
off the event loop; ``runtime.target`` what the running spider crawls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.settings import default_settings

from middlewares.engine.kb import CrawlKb
from synapsecrawl.crawl.config import CrawlConfig
from synapsecrawl.crawl.summary import CrawlSummary
from synapsecrawl.extract.pool import Reader
from synapsecrawl.kb import open_store
from synapsecrawl.kb.journal import Journal, journal_path
from synapsecrawl.kb.store import Store
from synapsecrawl.pacing.clock import PacingState, SiteClock
from synapsecrawl.profiles import Limits, Profile
from synapsecrawl.urls import site_of

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from scrapy import Request
    from scrapy.crawler import Crawler

    from middlewares.engine.sources import SourceSpider
    from synapsecrawl.crawl.scope import SiteScope
    from synapsecrawl.pacing.shared import RedisPacing
    from synapsecrawl.shared.frontier import SharedFrontier

__all__ = ["CrawlTarget", "Runtime"]

_ATTR = "_synapsecrawl_runtime"


@dataclass(frozen=True)
class CrawlTarget:
    """What the running spider crawls, as the middlewares read it (set by the spider in ``from_crawler``).

    ``kb`` is None when the crawl writes to no one KB (a shared crawl's worker: each source its own);
    ``scopes`` None when the mode keeps to no scope (a redirect anywhere the profile allows);
    ``take_page`` counts a page against a limit kept elsewhere (a shared crawl's, in Redis);
    ``source`` the spider whose source is recorded (None: an on-demand crawl, a shared crawl's worker);
    ``kb_of`` a shared crawl worker's KB of each request (its source's);
    ``listed`` whether a redirect of a request to a URL stays within the crawl's allow-list of sites.
    """

    name: str = ""
    kb: str | None = None
    limits: Limits | None = None  # None: the operator's (runtime.limits)
    scopes: tuple[SiteScope, ...] | None = None
    take_page: Callable[[Request], Awaitable[bool | None]] | None = None
    source: SourceSpider | None = None  # whose source middlewares.engine.sources holds, re-reads, records
    by_value: bool = False  # of the sites due, the queue hands out the one whose next request ranks highest
    site_value: Callable[[str, float], float] | None = None  # (site, its next request's priority) -> its value now
    kb_of: Callable[[Request], str | None] | None = None  # with no one ``kb``: the KB a request's page goes to
    listed: Callable[[Request, str], bool] | None = None  # (request, redirect target) -> within the allow-list?


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
    timer: Callable[[str, float], None] = field(default=lambda kind, seconds: None)  # METRICS_PORT's histograms
    target: CrawlTarget = field(default_factory=CrawlTarget)  # the spider's (spiders.base.SynapseSpider)
    # when the run of the source this crawl continues began (middlewares.engine.sources): what the KB holds
    # from that run is not asked for again (kb.reread.run_start); None without a source
    run_begun: asyncio.Future[float] | None = None
    kb: CrawlKb = field(init=False)
    _opened: Store | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        kb = self.config.kb
        self.kb = CrawlKb(
            self._store,
            batch_pages=kb.batch_pages,
            batch_seconds=kb.batch_seconds,
            journal=Journal(journal_path(Path(kb.journal_dir), kb.uri)),
            outage_seconds=kb.outage_seconds,
            buffer_pages=kb.buffer_pages,
            revisit=self.config.operations.revisit,
        )

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

    @property
    def target_limits(self) -> Limits:
        """The limits of what the spider crawls: its -a arguments' where it gave some, else the operator's."""
        return self.target.limits or self.limits

    def site(self, url: str) -> str:
        """The site ``url`` counts toward."""
        return site_of(url, self.profile.site)

    def _store(self) -> Store:
        """The knowledge base, opened by ``kb`` on its thread at its first call."""
        if self._opened is None:
            self._opened = open_store(self.kb_uri)
        return self._opened

    def close(self) -> None:
        """Stop the extraction workers; commit what the KB was asked and close the store if it was opened."""
        self.reader.close()
        self.kb.close()
        self._opened = None


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
