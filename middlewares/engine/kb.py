"""The crawl's one door to its knowledge base: every store call awaited, writes in order, off the event loop.

``CrawlKb`` (``runtime.kb``) runs every write on one thread, the ``BatchWriter``'s
(synapsecrawl.kb.batch): kept pages go out in batches of ``KB_BATCH_PAGES`` or
what came within ``KB_BATCH_SECONDS``; every other write first commits the batch
being gathered, so writes reach the store in the order they were asked for.
Reads run in order on one reader thread, on the store's read connection, and see
what is committed: a request's look-up never waits behind another's commit. The
store (``KB_URI``) is opened at the first call and closed by ``close``. Adapters
never hold a ``Store``: a call on the loop would delay every site's next request.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TypeVar

from synapsecrawl.kb.batch import BatchWriter
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
from synapsecrawl.kb.store import Store

__all__ = ["CrawlKb"]

_R = TypeVar("_R")


class CrawlKb:
    """Async, ordered access to one crawl's store, on one thread."""

    def __init__(self, opener: Callable[[], Store], *, batch_pages: int = 8, batch_seconds: float = 0.25) -> None:
        self._opener = opener
        self._batch_pages = batch_pages
        self._batch_seconds = batch_seconds
        self._store: Store | None = None
        self._writer: BatchWriter[PageRecord] | None = None
        self._reader: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._opening = threading.Lock()

    # -- the thread --------------------------------------------------------------

    def _on_thread(self) -> BatchWriter[PageRecord]:
        with self._lock:
            if self._writer is None:
                self._writer = BatchWriter(
                    lambda pages: self._opened().put_pages(pages),
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
        """The store, opened on first use (on the thread of the first call)."""
        with self._opening:
            if self._store is None:
                self._store = self._opener()
            return self._store

    async def read(self, fn: Callable[[Store], _R]) -> _R:
        """``fn(store)``, a read, on the KB's reader thread."""
        return await asyncio.wrap_future(self._reading().submit(lambda: fn(self._opened())))

    async def write(self, fn: Callable[[Store], _R]) -> _R:
        """``fn(store)``, a write, on the KB's writer thread after every write asked for before it."""
        return await asyncio.wrap_future(self._on_thread().call(lambda: fn(self._opened())))

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

    async def keep(self, page: PageRecord) -> None:
        """Store ``page`` in the batch being gathered; returns once its batch is committed."""
        await asyncio.wrap_future(self._on_thread().submit(page))

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
            store.put_page(fresh)
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
