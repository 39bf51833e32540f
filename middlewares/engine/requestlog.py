"""Keeps the crawl's request log and writes its report when the crawl ends (REPORT_ENABLED).

Signals only, so no middleware order is involved: a request is on the wire
from the downloader handing it to a download handler (its start is the
answer's arrival minus Scrapy's ``download_latency``) to
``request_left_downloader``. Skips and stores come from the crawl summary's
journal, robots.txt reads from ``response_received`` judged as the robots
middleware judges them. Each handler appends to a list; ``RequestLog``
writes batches from its own thread.
"""

from __future__ import annotations

import logging
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.kinds import RequestKind, kind_of
from synapsecrawl.crawl.requestlog import (
    LOG_NAME,
    RequestEvent,
    RequestLog,
    RobotsEvent,
    SiteEvent,
    SkipEvent,
    StoreEvent,
)
from synapsecrawl.report import build_report, crawl_meta, default_report_dir, write_stats
from synapsecrawl.rules.robots_policy import judge_fetch

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["RequestLogExtension"]

logger = logging.getLogger(__name__)


def _kind(request: Request) -> str:
    return kind_of(request.meta).rules.logged_as


def _is_robots(request: Request) -> bool:
    return kind_of(request.meta) is RequestKind.ROBOTS


class RequestLogExtension:
    def __init__(self, crawler: Crawler, runtime: Runtime, directory: Path) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._t0 = time.monotonic()
        self._started_at = datetime.now(UTC)
        self.crawl_id = f"{self._started_at:%Y%m%dT%H%M%SZ}-{os.getpid()}"
        self.directory = directory / self.crawl_id
        self._log = RequestLog(self.directory / LOG_NAME)
        self._reached: dict[int, float] = {}  # id(request) -> when the downloader took it
        self._answered: dict[int, Response] = {}
        self._sites: set[str] = set()
        self._crawl_delays: dict[str, dict[str, float | None]] = {}  # site -> robots.txt URL -> its Crawl-delay
        runtime.summary.journal = self._journal
        for handler, signal in (
            (self._request_reached, signals.request_reached_downloader),
            (self._response_downloaded, signals.response_downloaded),
            (self._request_left, signals.request_left_downloader),
            (self._response_received, signals.response_received),
            (self._spider_closed, signals.spider_closed),
        ):
            crawler.signals.connect(handler, signal=signal)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RequestLogExtension:
        runtime = Runtime.of(crawler)
        if not runtime.config.kb.report:
            raise NotConfigured("REPORT_ENABLED is off")
        directory = runtime.config.kb.report_dir or default_report_dir(runtime.kb_uri)
        try:
            return cls(crawler, runtime, Path(directory))
        except OSError as exc:  # the crawl goes on without its report
            logger.error("REPORT_DIR %s: %s: no crawl report this time", directory, exc.strerror or exc)
            raise NotConfigured(f"REPORT_DIR {directory} is not writable") from None

    def _now(self) -> float:
        return time.monotonic() - self._t0

    def _journal(self, what: str, site: str, reason: str, url: str) -> None:
        if what == "store":
            self._log.append(StoreEvent(site, url, self._now()))
        else:
            self._log.append(SkipEvent(site, url, reason, self._now()))

    def _request_reached(self, request: Request, **_: Any) -> None:
        self._reached[id(request)] = self._now()

    def _response_downloaded(self, response: Response, request: Request, **_: Any) -> None:
        self._answered[id(request)] = response

    def _request_left(self, request: Request, **_: Any) -> None:
        now = self._now()
        self._sites.add(self._runtime.site(request.url))
        reached = self._reached.pop(id(request), now)
        response = self._answered.pop(id(request), None)
        if response is None:
            self._log.append(
                RequestEvent(self._runtime.site(request.url), request.url, _kind(request), reached, now - reached, None)
            )
            if _is_robots(request):
                self._robots(request, reached, None, b"")
            return
        latency = float(request.meta.get("download_latency") or 0.0)
        start = max(reached, now - latency)
        retry_after = (response.headers.get(b"Retry-After") or b"").decode("latin-1")
        self._log.append(
            RequestEvent(
                self._runtime.site(request.url),
                request.url,
                _kind(request),
                start,
                now - start,
                response.status,
                len(response.body),
                retry_after,
            )
        )

    def _response_received(self, response: Response, request: Request, **_: Any) -> None:
        if _is_robots(request):  # decoded by now, as the robots middleware reads it
            self._robots(request, self._now(), response.status, response.body)

    def _robots(self, request: Request, at: float, status: int | None, body: bytes) -> None:
        profile = self._runtime.profile
        outcome = judge_fetch(profile.robots, profile.tokens, status, body)
        site = self._runtime.site(request.url)
        self._crawl_delays.setdefault(site, {})[request.url] = outcome.rules.crawl_delay
        self._log.append(
            RobotsEvent(
                site, request.url, at, status, outcome.kind, outcome.rules.allows("/"), outcome.rules.crawl_delay
            )
        )

    def _spider_closed(self, spider: Spider, reason: str, **_: Any) -> None:
        summary = self._runtime.summary
        for site in sorted(self._sites | set(summary.fetched) | set(summary.skipped) | set(summary.stored)):
            # the longest Crawl-delay among the site's origins holds, as the robots middleware paces it
            stated = [d for d in self._crawl_delays.get(site, {}).values() if d is not None]
            self._log.append(SiteEvent(site, self._runtime.pacer.spacing(site), max(stated) if stated else None))
        try:
            self._log.close()
        except OSError as exc:
            logger.error("crawl report: request log %s not written in full: %s", self._log.path, exc.strerror or exc)
        assert self._crawler.stats is not None
        stats = {**self._crawler.stats.get_stats(), **self._runtime.summary.stats()}
        meta = crawl_meta(
            crawl_id=self.crawl_id,
            spider=spider.name,
            profile=self._runtime.profile,
            delay=self._runtime.limits.delay,
            started_at=self._started_at,
            finished_at=datetime.now(UTC),
            finish_reason=reason,
            kb_uri=self._runtime.kb_uri,
        )
        try:
            write_stats(self.directory, meta, stats)
            written = build_report(self.directory)
        except OSError as exc:
            logger.error("crawl report not written to %s: %s", self.directory, exc)
            return
        logger.info("crawl report: %s", written)
