"""Crawlers for adapter tests: built from settings, no reactor, no network.

``crawler_for`` gives a crawler whose KB is a SQLite file under the test's
``tmp_path``, with stats and the ``runtime.target`` a spider would set
(``kb``, ``scopes``, ``limits``); ``addon_crawler`` one with no KB and its
add-ons applied. ``Held`` stands in for the network in a downloader. ``SideFetches`` stands in for the one
engine call side fetches make (``engine.download_async``): the middlewares
have no other seam for robots.txt and tdmrep.json, so it answers from a table
and notes what was asked.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from scrapy import Request, signals
from scrapy.core.downloader import Downloader, Slot
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.test import get_crawler

from middlewares.engine.downloader import PacedDownloader
from middlewares.engine.runtime import CrawlTarget, Runtime
from synapsecrawl import settings as project_settings
from synapsecrawl.kb import open_store
from synapsecrawl.kb.store import Store

__all__ = ["Held", "SideFetches", "addon_crawler", "crawler_for", "live_slot", "opened_store", "project"]


def project(**overrides: object) -> dict[str, Any]:
    """The project's settings (so the profile add-on runs) with ``overrides``."""
    values = {name: value for name, value in vars(project_settings).items() if name.isupper()}
    values.update(overrides)
    return values


def crawler_for(
    tmp_path: Path,
    *,
    kb: str | None = "kb1",
    scopes: tuple[Any, ...] = (),
    limits: Any = None,
    name: str = "site",
    **settings: object,
) -> Crawler:
    """A crawler under the project's settings and ``settings``, its KB in ``tmp_path``, its runtime's target
    what a spider of mode ``name`` would publish (``kb``, ``scopes``, ``limits``)."""
    crawler = get_crawler(settings_dict=project(KB_URI=f"sqlite:///{tmp_path}/kb.sqlite3", **settings))
    crawler.stats = MemoryStatsCollector(crawler)
    crawler.spider = SimpleNamespace(name=name)  # type: ignore[assignment]
    Runtime.of(crawler).target = CrawlTarget(name=name, kb=kb, limits=limits, scopes=scopes)
    return crawler


def addon_crawler(**overrides: object) -> Crawler:
    """A crawler under the project's settings and ``overrides``, its add-ons applied; no KB, so no report."""
    crawler = get_crawler(settings_dict=project(**{"REPORT_ENABLED": False, **overrides}))
    crawler._apply_settings()
    return crawler


class Held:
    """A downloader middleware standing in for the network: each request waits until the test answers it."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[None]] = {}

    async def process_request(self, request: Request) -> Response:
        self.waiting[request.url] = asyncio.get_running_loop().create_future()
        await self.waiting[request.url]
        return Response(request.url, request=request)

    def answer(self, url: str) -> None:
        self.waiting[url].set_result(None)


def opened_store(of: Crawler | Runtime) -> Store:
    """The crawl's KB opened beside its gateway (``runtime.kb``), for a test to fill and read; one per crawl."""
    runtime = of if isinstance(of, Runtime) else Runtime.of(of)
    store: Store | None = getattr(runtime, "_test_store", None)
    if store is None:
        store = open_store(runtime.kb_uri)
        runtime._test_store = store  # type: ignore[attr-defined]
    return store


def live_slot(downloader: Downloader, request: Request) -> tuple[str, Slot]:
    """``request``'s slot as Scrapy's downloader has it once the request reached it: found or made
    (``_get_slot``, pinned in test_engine_seam.py), then ``request_reached_downloader`` sent, on which
    PacedDownloader paces the slot. ``request`` itself is left as it was."""
    key, slot = downloader._get_slot(request)
    reached = request.replace(meta={**request.meta, downloader.DOWNLOAD_SLOT: key})
    downloader.crawler.signals.send_catch_log(signals.request_reached_downloader, request=reached, spider=None)
    return key, slot


@dataclass
class _Downloader(PacedDownloader):
    """A PacedDownloader (so ``middlewares.engine.seam.paced_downloader`` finds it) that notes what it is
    asked to drop and refresh, and holds no slot: every site is due at once. Built without Scrapy's
    ``Downloader.__init__``, which would build the middlewares and handlers."""

    dropped: list[tuple[str, Any]] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)

    def due(self, site: str, ignoring: int = 0, request: Request | None = None) -> float | None:
        return 0.0

    def get_slot_key(self, request: Request) -> str:
        return urlparse_cached(request).hostname or ""

    def drop_queued(self, site: str, why: Any) -> None:
        self.dropped.append((site, why))

    def refresh(self, site: str) -> None:
        self.refreshed.append(site)


@dataclass
class SideFetches:
    """The engine's ``download_async`` for side fetches: answers by URL, (status, body) or an exception."""

    answers: dict[str, tuple[int, bytes] | BaseException] = field(default_factory=dict)
    asked: list[Request] = field(default_factory=list)
    downloader: _Downloader = field(default_factory=_Downloader)
    spider: object = True

    async def download_async(self, request: Request) -> Response:
        self.asked.append(request)
        answer = self.answers.get(request.url, (404, b""))
        if isinstance(answer, BaseException):
            raise answer
        status, body = answer
        return Response(request.url, status=status, body=body, request=request)

    def urls(self) -> list[str]:
        return [request.url for request in self.asked]

    def install(self, crawler: Crawler) -> SideFetches:
        crawler.engine = self  # type: ignore[assignment]
        return self
