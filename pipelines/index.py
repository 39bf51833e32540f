"""Writes each kept page into the knowledge base at KB_URI.

Pages are written in batches, one transaction each (synapsecrawl.kb.batch, #17):
up to ``KB_BATCH_PAGES`` pages, or what came within ``KB_BATCH_SECONDS`` of the
first. A page is counted as stored, and its item passed on, only once its batch
is committed: a crawl killed meanwhile loses at most that batch, none of which
was counted, and a run again fetches those pages again.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter

from middlewares.engine.runtime import Runtime
from synapsecrawl.kb.batch import BatchWriter
from synapsecrawl.kb.indexing import labels_from_item, record_from_item

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from synapsecrawl.kb.records import PageRecord

__all__ = ["IndexPipeline"]


class IndexPipeline:
    def __init__(
        self, crawler: Crawler, runtime: Runtime, *, batch_pages: int = 8, batch_seconds: float = 0.25
    ) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._batch_pages = batch_pages
        self._batch_seconds = batch_seconds
        self._writer: BatchWriter[PageRecord] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IndexPipeline:
        runtime = Runtime.of(crawler)
        kb = runtime.config.kb
        return cls(crawler, runtime, batch_pages=kb.batch_pages, batch_seconds=kb.batch_seconds)

    def _pages(self) -> BatchWriter[PageRecord]:
        if self._writer is None:
            self._writer = BatchWriter(
                self._runtime.store().put_pages,
                max_items=self._batch_pages,
                max_wait=self._batch_seconds,
                name="kb-writer",
            )
        return self._writer

    async def process_item(self, item: Any) -> Any:
        # Our spiders' items are dicts of plain values: ItemAdapter.asdict() would walk every link of the
        # page asking whether it is an item (1 ms a page on the event loop, #17); other item types still do.
        fields = dict(item) if type(item) is dict else ItemAdapter(item).asdict()
        record = record_from_item(fields)
        store = self._runtime.store()
        await asyncio.wrap_future(self._pages().submit(record))  # done once its batch is committed
        labels = labels_from_item(fields)  # OmniscienteBot's labels and TDM policy (middlewares.labels)
        if labels is not None:
            await asyncio.to_thread(store.put_labels, labels)
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value("kb/stored")
        self._runtime.summary.store(record.site, record.url)
        return item

    def close_spider(self) -> None:
        """Commit what is still queued (before the store closes, on spider_closed)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
