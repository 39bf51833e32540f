"""The crawl's one door to its knowledge base: every store call awaited, writes in order, off the event loop.

``CrawlKb`` (``runtime.kb``) writes on the ``BatchWriter``'s thread (``KB_BATCH_PAGES``, ``KB_BATCH_SECONDS``) in
the order asked, and reads on one reader thread; adapters never hold a ``Store``. The store (``KB_URI``) opens at
the first call, replaying what an earlier crawl journalled. A KB that cannot take a call is an outage: calls wait,
pages past ``KB_BUFFER_PAGES`` go to the journal (``KB_JOURNAL_DIR``), and past ``KB_OUTAGE_SECONDS`` the crawl
ends. More: docs/operations.md, "When the knowledge base fails", and docs/architecture.md, "Inside the larger
modules".
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Literal, Protocol, TypeVar

from synapsecrawl.errors import StoreUnavailable
from synapsecrawl.kb.batch import BatchWriter
from synapsecrawl.kb.journal import Journal
from synapsecrawl.kb.outage import Outage
from synapsecrawl.kb.records import (
    LabelRecord,
    PageRecord,
    RobotsCopy,
    SiteIcon,
    SiteState,
    Source,
    UrlHold,
    utcnow,
)
from synapsecrawl.kb.revisit import RevisitRule
from synapsecrawl.kb.store import Store

__all__ = ["CrawlKb", "KbGone", "OutageListener"]

logger = logging.getLogger(__name__)

_R = TypeVar("_R")
Kept = Literal["stored", "journalled"]


class KbGone(Exception):
    """The KB stayed unavailable past KB_OUTAGE_SECONDS: the crawl is ending."""


class _Spilled(Exception):
    """A page that would wait past KB_BUFFER_PAGES: it goes to the journal instead."""


class OutageListener(Protocol):
    """Who holds the crawl while its KB cannot take what it fetches (middlewares.engine.kbhold)."""

    def kb_down(self, error: StoreUnavailable) -> None: ...
    def kb_up(self, lasted: float) -> None: ...
    def kb_gone(self) -> None: ...
    def kb_replayed(self, pages: int) -> None: ...


class CrawlKb:
    """Async, ordered access to one crawl's store, on one thread."""

    def __init__(
        self,
        opener: Callable[[], Store],
        *,
        batch_pages: int = 8,
        batch_seconds: float = 0.25,
        journal: Journal | None = None,
        outage_seconds: float = 300.0,
        buffer_pages: int = 256,
        revisit: RevisitRule | None = None,
    ) -> None:
        self._opener = opener
        self.revisit = revisit  # times every page this crawl writes (synapsecrawl.kb.revisit)
        self._batch_pages = batch_pages
        self._batch_seconds = batch_seconds
        self._store: Store | None = None
        self._writer: BatchWriter[PageRecord] | None = None
        self._reader: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._journal = journal
        self._buffer_pages = buffer_pages
        self.outage = Outage(limit=outage_seconds)
        self.listener: OutageListener | None = None
        self._back: asyncio.Event | None = None  # set while the KB takes calls; made on the loop at first need
        self._gone = False
        self.held = 0  # pages waiting for the KB in memory
        self.journalled = 0
        self._opening = threading.Lock()

    # -- the thread --------------------------------------------------------------

    def _on_thread(self) -> BatchWriter[PageRecord]:
        with self._lock:
            if self._writer is None:
                self._writer = BatchWriter(
                    lambda pages: self._opened().put_pages(pages, self.revisit),
                    max_items=self._batch_pages,
                    max_wait=self._batch_seconds,
                    name="kb-writer",
                )
            return self._writer

    def _reading(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._reader is None:
                self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-reader")
            return self._reader

    def _opened(self) -> Store:
        """The store, opened on first use (on the thread of the first call); what a crawl journalled first."""
        with self._opening:
            if self._store is None:
                store = self._opener()
                if self._journal is not None:
                    replayed = self._journal.replay(lambda entries: _put_held(store, entries, self.revisit))
                    if replayed and self.listener is not None:
                        self.listener.kb_replayed(replayed)
                self._store = store
            return self._store

    async def _through_outages(self, call: Callable[[], Future[_R]], spill: Callable[[], bool] | None = None) -> _R:
        """``call()``'s result, waiting out any outage of the KB (raises ``KbGone`` once it lasts too long).

        ``spill()`` true when the call would wait: raise ``_Spilled`` instead (its page goes to the journal)."""
        while True:
            if self._gone:
                raise KbGone
            back = self._event()
            if not back.is_set():
                if spill is not None and spill():
                    raise _Spilled
                await back.wait()  # another call probes the KB
                continue
            try:
                return await asyncio.wrap_future(call())
            except StoreUnavailable as error:
                if back.is_set():
                    return await self._probe(call, error)
                # an outage another call began meanwhile: wait for its word

    async def _probe(self, call: Callable[[], Future[_R]], error: StoreUnavailable) -> _R:
        """Become the one call that tries the KB again, at growing intervals, until it answers or too long."""
        back = self._event()
        back.clear()
        if self.outage.failed(time.monotonic(), error.reason) and self.listener is not None:
            self.listener.kb_down(error)
        while True:
            if self.outage.overdue(time.monotonic()):
                self._gone = True
                back.set()  # the waiting calls see the end: pages are journalled, the rest raise KbGone
                if self.listener is not None:
                    self.listener.kb_gone()
                raise KbGone
            await asyncio.sleep(self.outage.probe_in(time.monotonic()))
            try:
                result = await asyncio.wrap_future(call())
            except StoreUnavailable as again:
                self.outage.failed(time.monotonic(), again.reason)
                continue
            lasted = self.outage.recovered(time.monotonic())
            back.set()
            if lasted is not None and self.listener is not None:
                self.listener.kb_up(lasted)
            return result

    def _event(self) -> asyncio.Event:
        if self._back is None:
            self._back = asyncio.Event()
            self._back.set()
        return self._back

    async def read(self, fn: Callable[[Store], _R]) -> _R:
        """``fn(store)``, a read, on the KB's reader thread."""
        return await self._through_outages(lambda: self._reading().submit(lambda: fn(self._opened())))

    async def write(self, fn: Callable[[Store], _R]) -> _R:
        """``fn(store)``, a write, on the KB's writer thread after every write asked for before it."""
        return await self._through_outages(lambda: self._on_thread().call(lambda: fn(self._opened())))

    @property
    def thread(self) -> threading.Thread:
        """The thread every write of this crawl runs on."""
        return self._on_thread().thread

    def threads(self) -> set[str]:
        """The names of the threads this gateway's calls run on (the writer's and the reader's)."""
        names = {self.thread.name}
        names.add(self._reading().submit(lambda: threading.current_thread().name).result())
        return names

    # -- pages -------------------------------------------------------------------

    async def keep(self, page: PageRecord, labels: LabelRecord | None = None) -> Kept:
        """Store ``page`` (and its labels) in the batch being gathered: ``"stored"`` once its batch is committed.

        While the KB cannot take it the page waits, in memory up to ``KB_BUFFER_PAGES`` pages and in the
        journal past them or once the crawl stops waiting: then ``"journalled"``, written by the next crawl.
        """
        if self._gone:
            return self._to_journal(page, labels)
        self.held += 1
        try:
            await self._through_outages(
                lambda: self._on_thread().submit(page), spill=lambda: self.held > self._buffer_pages
            )
            if labels is not None:
                await self.labels(labels)
        except (KbGone, _Spilled):
            return self._to_journal(page, labels)
        finally:
            self.held -= 1
        return "stored"

    def _to_journal(self, page: PageRecord, labels: LabelRecord | None) -> Kept:
        if self._journal is None:
            raise KbGone
        self._journal.append([(page, labels)])  # an OSError here is a page lost: the pipeline counts it
        self.journalled += 1
        return "journalled"

    async def page(self, kb: str, url: str) -> PageRecord | None:
        return await self.read(lambda store: store.get_page(kb, url))

    async def pages_known(self, kb: str, urls: Sequence[str]) -> list[bool]:
        """Whether each of ``urls`` is stored in ``kb``, in one trip to the thread."""
        return await self.read(lambda store: [store.get_page(kb, url) is not None for url in urls])

    async def holds_pages_under(self, kb: str, prefix: str) -> bool:
        return await self.read(lambda store: store.holds_pages_under(kb, prefix))

    async def page_urls(self, kb: str | None = None, prefix: str = "") -> list[tuple[str, str]]:
        """(kb, url) of the stored pages whose URL starts with ``prefix``: a query, not a scan."""
        return await self.read(lambda store: store.page_urls(kb, prefix))

    async def page_depths(self, kb: str) -> dict[str, int | None]:
        return await self.read(lambda store: store.page_depths(kb))

    async def page_dues(self, kb: str, first: float) -> dict[str, float]:
        """URL -> when each stored page of ``kb`` is due again (synapsecrawl.kb.revisit.due_of)."""
        return await self.read(lambda store: store.page_dues(kb, first))

    async def labels(self, labels: LabelRecord) -> None:
        await self.write(lambda store: store.put_labels(labels))

    async def verify(self, kb: str, url: str, etag: str, last_modified: str) -> tuple[str, ...]:
        """Mark the stored copy verified now, its validators freshened where given; its stored outlinks."""

        def verify(store: Store) -> tuple[str, ...]:
            stored = store.get_page(kb, url)
            if stored is None:
                return ()
            fresh = replace(
                stored,
                verified_at=utcnow(),
                etag=etag or stored.etag,
                last_modified=last_modified or stored.last_modified,
            )
            store.put_pages([fresh], self.revisit)  # the same text: its interval lengthens
            return stored.outlinks

        return await self.write(verify)

    async def delete(self, kb: str, url: str) -> bool:
        """Delete one stored page; whether it was there. For ``middlewares.removals`` alone, which says why."""
        return await self.write(lambda store: store.delete_page(kb, url))

    # -- robots.txt, backoff, holds, icons, sources -------------------------------

    async def robots_copy(self, profile: str, origin: str) -> RobotsCopy | None:
        return await self.read(lambda store: store.get_robots(profile, origin))

    async def put_robots(self, profile: str, copy: RobotsCopy) -> None:
        await self.write(lambda store: store.put_robots(profile, copy))

    async def site_state(self, profile: str, site: str) -> SiteState | None:
        return await self.read(lambda store: store.get_site_state(profile, site))

    async def put_site_state(self, profile: str, state: SiteState) -> None:
        await self.write(lambda store: store.put_site_state(profile, state))

    async def url_hold(self, profile: str, url: str) -> UrlHold | None:
        return await self.read(lambda store: store.get_url_hold(profile, url))

    async def url_holds(self, profile: str, kind: str | None = None) -> list[UrlHold]:
        return await self.read(lambda store: store.url_holds(profile, kind))

    async def hold(self, profile: str, hold: UrlHold) -> None:
        await self.write(lambda store: store.put_url_hold(profile, hold))

    async def release(self, profile: str, url: str) -> bool:
        return await self.write(lambda store: store.delete_url_hold(profile, url))

    async def site_icon(self, origin: str) -> SiteIcon | None:
        return await self.read(lambda store: store.get_site_icon(origin))

    async def put_site_icon(self, icon: SiteIcon) -> None:
        await self.write(lambda store: store.put_site_icon(icon))

    async def source(self, ident: str, update: Callable[[Source | None], Source]) -> Source:
        """Write ``update(stored)`` for source ``ident``, read and written in one turn of the thread."""

        def record(store: Store) -> Source:
            source = update(store.get_source(ident))
            store.put_source(source)
            return source

        return await self.write(record)

    # -- the end -----------------------------------------------------------------

    def close(self) -> None:
        """Commit and run what was asked for, then close the store (a later call opens it again)."""
        with self._lock:
            writer, self._writer = self._writer, None
            reader, self._reader = self._reader, None
        if reader is not None:
            reader.shutdown(wait=True)
        if writer is not None:
            writer.close()
        if self._store is not None:
            self._store.close()
            self._store = None


def _put_held(
    store: Store, entries: Sequence[tuple[PageRecord, LabelRecord | None]], revisit: RevisitRule | None
) -> None:
    store.put_pages([page for page, _ in entries], revisit)
    for _, labels in entries:
        if labels is not None:
            store.put_labels(labels)
