"""The seam into Scrapy: every private member our engine adapters override, call or read, pinned.

``middlewares/engine/downloader.py``, ``middlewares/engine/scheduler.py`` and ``middlewares/engine/seam.py``
(the engine accessors every other adapter imports) are the only files that touch Scrapy's private members. Scrapy may change those in any release, so each one's signature (or,
for an attribute, its presence) is compared here with the one the adapters were written against: a
Scrapy upgrade that moves one fails here, in one line naming it, before any crawl runs slower or
ruder. When one fails, read the new Scrapy's code for that member, adapt the adapter, then this pin.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from scrapy import Request, pqueues, signals
from scrapy.core.downloader import Downloader, Slot
from scrapy.core.engine import ExecutionEngine, _Slot
from scrapy.core.scraper import Scraper
from scrapy.core.scraper import Slot as ScraperSlot
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils import defer
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.reactor import CallLaterOnce
from scrapy.utils.test import get_crawler

from middlewares.engine.downloader import PacedDownloader
from middlewares.engine.runtime import Runtime
from middlewares.engine.scheduler import PacedPriorityQueue
from middlewares.engine.seam import engine_of, engine_scheduler, paced_downloader, scraper_done
from synapsecrawl.pacing.clock import gap

_PINNED: list[tuple[str, Any, str]] = [
    # called by the adapter tests (tests/adapters/crawlers.py: live_slot), as Scrapy's _enqueue_request does
    (
        "Downloader._get_slot",
        Downloader._get_slot,
        "(self, request: 'Request', spider: 'Spider | None' = None) -> 'tuple[str, Slot]'",
    ),
    # overridden by PacedDownloader
    ("Downloader._download", Downloader._download, "(self, slot: 'Slot', request: 'Request') -> 'Response'"),
    ("Downloader._process_queue", Downloader._process_queue, "(self, slot: 'Slot') -> 'None'"),
    # called by PacedDownloader
    ("Downloader._latercall", Downloader._latercall, "(self, slot: 'Slot') -> 'None'"),
    (
        "Downloader._wait_for_download",
        Downloader._wait_for_download,
        "(self, slot: 'Slot', request: 'Request', queue_dfd: 'Deferred[Response]') -> 'None'",
    ),
    ("scrapy.utils.defer._schedule_coro", defer._schedule_coro, "(coro: 'Coroutine[Any, Any, Any]') -> 'None'"),
    # called by PacedPriorityQueue
    ("scrapy.pqueues._path_safe", pqueues._path_safe, "(text: 'str') -> 'str'"),
    (
        "scrapy.core.engine._Slot.__init__",
        _Slot.__init__,
        "(self, close_if_idle: 'bool', nextcall: 'CallLaterOnce[None]', scheduler: 'BaseScheduler') -> 'None'",
    ),
    ("CallLaterOnce.schedule", CallLaterOnce.schedule, "(self, delay: 'float' = 0) -> 'None'"),
    # the public members the adapters subclass, whose shape the private ones rely on
    ("Downloader.__init__", Downloader.__init__, "(self, crawler: 'Crawler')"),
    (
        "Slot.__init__",
        Slot.__init__,
        "(self, concurrency: 'int', delay: 'float', jitter: 'float | None' = None, randomize_delay: 'bool | None' = None) -> 'None'",
    ),
    ("Slot.download_delay", Slot.download_delay, "(self) -> 'float'"),
    ("Slot.free_transfer_slots", Slot.free_transfer_slots, "(self) -> 'int'"),
    (
        "DownloaderAwarePriorityQueue.__init__",
        pqueues.DownloaderAwarePriorityQueue.__init__,
        (
            "(self, crawler: 'Crawler', downstream_queue_cls: 'type[QueueProtocol]', key: 'str', "
            "slot_startprios: 'dict[str, Iterable[int]] | None' = None, *, "
            "start_queue_cls: 'type[QueueProtocol] | None' = None)"
        ),
    ),
]


@pytest.mark.parametrize(("name", "member", "expected"), _PINNED, ids=[name for name, _, _ in _PINNED])
def test_a_private_scrapy_member_keeps_the_signature_the_adapters_use(name: str, member: Any, expected: str) -> None:
    """The engine adapters' seam: each Scrapy member they override or call has the signature they were
    written against (Scrapy 2.19)."""
    assert str(inspect.signature(member)) == expected, f"{name} changed: adapt middlewares/engine/ to it"


def test_the_slot_attributes_the_downloader_reads_and_writes_exist() -> None:
    """The engine adapters' seam: a downloader Slot still carries the state PacedDownloader paces with."""
    slot = Slot(1, 0.0)
    for attribute in ("lastseen", "delay", "jitter", "concurrency", "queue", "latercall", "transferring"):
        assert hasattr(slot, attribute), f"Slot.{attribute} is gone: adapt middlewares/engine/downloader.py"


def test_the_engine_still_keeps_its_slot_where_the_frontier_wakes_it() -> None:
    """The engine adapters' seam: the engine holds its _Slot (whose nextcall the frontier schedules) in
    ``_slot``, and the downloader the ``slots`` the pacer refreshes."""
    engine = ExecutionEngine(get_crawler(), lambda spider: None)
    assert hasattr(engine, "_slot"), "ExecutionEngine._slot is gone: adapt middlewares/engine/scheduler.py"
    assert isinstance(engine.downloader.slots, dict)


@pytest.mark.parametrize(
    ("adapter", "base", "names"),
    [
        (PacedDownloader, Downloader, ("_download", "_process_queue", "fetch", "get_slot_key")),
        (PacedPriorityQueue, pqueues.DownloaderAwarePriorityQueue, ("push", "pop", "peek", "close", "__len__")),
    ],
)
def test_each_override_takes_the_arguments_of_the_member_it_replaces(
    adapter: type, base: type, names: tuple[str, ...]
) -> None:
    """The engine adapters' seam: an override accepts every parameter Scrapy's own member does, so
    Scrapy's callers keep working through it."""
    for name in names:
        ours, theirs = inspect.signature(getattr(adapter, name)), inspect.signature(getattr(base, name))
        assert list(ours.parameters) == list(theirs.parameters), f"{adapter.__name__}.{name} differs from Scrapy's"


async def _engine(crawler: Crawler) -> ExecutionEngine:
    """An engine for ``crawler``, set on it as the crawl does; its download handlers closed (nothing is sent)."""
    engine = ExecutionEngine(crawler, lambda spider: None)
    await engine.downloader.handlers._close()
    crawler.engine = engine
    return engine


async def test_the_crawler_keeps_its_engine_where_engine_of_reads_it() -> None:
    """The seam: ``Crawler._engine`` is ``None`` before the crawl makes an engine (``Crawler.engine`` would
    raise), and ``engine_of`` reads the engine from it once there is one, with its public ``scheduler``."""
    crawler = get_crawler()
    assert crawler._engine is None and engine_of(crawler) is None
    assert paced_downloader(crawler) is None
    engine = await _engine(crawler)
    assert engine_of(crawler) is crawler._engine is engine
    assert engine.scheduler is None  # public since Scrapy 2.19; set once the spider opens
    assert paced_downloader(crawler) is None  # Scrapy's own downloader: no site slots to ask


async def test_paced_downloader_finds_the_engines_paced_downloader() -> None:
    """The seam: under the project's DOWNLOADER, ``paced_downloader`` returns the engine's downloader."""
    crawler = get_crawler(settings_dict={"DOWNLOADER": "middlewares.engine.downloader.PacedDownloader"})
    await _engine(crawler)
    assert isinstance(paced_downloader(crawler), PacedDownloader)
    assert paced_downloader(crawler) is crawler.engine.downloader


async def test_engine_scheduler_is_the_opened_engines_scheduler() -> None:
    """The seam: the scheduler is read from the engine's slot (its ``_Slot.scheduler``, behind the
    public ``ExecutionEngine.scheduler``)."""
    crawler = get_crawler()
    engine = await _engine(crawler)
    scheduler = object()
    engine._slot = _Slot(close_if_idle=True, nextcall=CallLaterOnce(lambda: None), scheduler=scheduler)  # type: ignore[arg-type]
    assert engine_scheduler(crawler) is scheduler


async def test_scraper_done_waits_while_the_scraper_holds_the_request() -> None:
    """The seam: Scrapy's scraper keeps the requests whose answers it is processing in ``slot.active``
    (``scrapy.core.scraper.Slot``); ``scraper_done`` returns once the request has left it."""
    crawler = get_crawler()
    engine = await _engine(crawler)
    assert isinstance(engine.scraper, Scraper) and engine.scraper.slot is None
    request = Request("http://a.test/")
    await scraper_done(crawler, request)  # no slot yet: nothing to wait for
    engine.scraper.slot = ScraperSlot()
    engine.scraper.slot.active.add(request)
    waiting = asyncio.ensure_future(scraper_done(crawler, request))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    engine.scraper.slot.active.discard(request)
    await asyncio.wait_for(waiting, 5.0)


class _Recording(PacedDownloader):
    """Notes each slot's delay, jitter and concurrency when the slot looks at its queue; sends nothing."""

    seen: list[tuple[float, float, int]]

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.seen = []

    def _process_queue(self, slot: Slot) -> None:
        self.seen.append((slot.delay, slot.jitter, slot.concurrency))
        super()._process_queue(slot)

    async def _download(self, slot: Slot, request: Request) -> Response:
        return Response(request.url, request=request)


async def test_a_new_slot_is_paced_before_it_looks_at_its_queue() -> None:
    """The seam, OMN-SITE: Scrapy sends ``request_reached_downloader`` after it finds or makes the request's
    slot and before the slot looks at its queue, so the slot's first look already has the pacer's delay,
    no jitter and the profile's concurrency (Scrapy's defaults would be DOWNLOAD_DELAY 0, jitter 0.5, 8)."""
    crawler = get_crawler(
        settings_dict={"BOT_PROFILE": "snagabot", "DOWNLOADER_MIDDLEWARES_BASE": {}, "DOWNLOAD_SLOTS": {}}
    )
    downloader = _Recording(crawler)
    await downloader.handlers._close()
    reached: list[str] = []

    def note(request: Request, **_: Any) -> None:
        reached.append(request.url)

    crawler.signals.connect(note, signals.request_reached_downloader)  # held weakly: kept by this name
    await maybe_deferred_to_future(downloader.fetch(Request("http://a.test/")))
    runtime = Runtime.of(crawler)
    assert reached == ["http://a.test/"]
    assert downloader.seen[0] == (gap(runtime.pacer.spacing("a.test")), 0.0, runtime.profile.concurrency)
    downloader.close()
