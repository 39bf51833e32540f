"""The seam into Scrapy: every private member our two engine adapters override or call, pinned.

``middlewares/engine/downloader.py`` and ``middlewares/engine/scheduler.py`` are the only files that
touch Scrapy's private members. Scrapy may change those in any release, so each one's signature (or,
for an attribute, its presence) is compared here with the one the adapters were written against: a
Scrapy upgrade that moves one fails here, in one line naming it, before any crawl runs slower or
ruder. When one fails, read the new Scrapy's code for that member, adapt the adapter, then this pin.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from scrapy import pqueues
from scrapy.core.downloader import Downloader, Slot
from scrapy.core.engine import ExecutionEngine, _Slot
from scrapy.utils import defer
from scrapy.utils.reactor import CallLaterOnce
from scrapy.utils.test import get_crawler

from middlewares.engine.downloader import PacedDownloader
from middlewares.engine.scheduler import PacedPriorityQueue

_PINNED: list[tuple[str, Any, str]] = [
    # overridden by PacedDownloader
    (
        "Downloader._get_slot",
        Downloader._get_slot,
        "(self, request: 'Request', spider: 'Spider | None' = None) -> 'tuple[str, Slot]'",
    ),
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
        (PacedDownloader, Downloader, ("_get_slot", "_download", "_process_queue", "fetch", "get_slot_key")),
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
