"""Writes each kept page into the knowledge base at KB_URI."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter

from middlewares.runtime import Runtime
from synapsecrawl.indexing import labels_from_item, record_from_item

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["IndexPipeline"]


class IndexPipeline:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self._crawler = crawler
        self._runtime = runtime

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> IndexPipeline:
        return cls(crawler, Runtime.of(crawler))

    async def process_item(self, item: Any) -> Any:
        fields = ItemAdapter(item).asdict()
        record = record_from_item(fields)
        store = self._runtime.store()
        await asyncio.to_thread(store.put_page, record)
        labels = labels_from_item(fields)  # OmniscienteBot's labels and TDM policy (middlewares.labels)
        if labels is not None:
            await asyncio.to_thread(store.put_labels, labels)
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value("kb/stored")
        self._runtime.summary.store(record.site, record.url)
        return item
