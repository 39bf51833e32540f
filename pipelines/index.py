"""Writes each kept page into the knowledge base at KB_URI, through the crawl's KB gateway (``runtime.kb``).

Pages are written in batches, one transaction each (synapsecrawl.kb.batch):
up to ``KB_BATCH_PAGES`` pages, or what came within ``KB_BATCH_SECONDS`` of the
first. A page is counted as stored (``kb/stored``), and its item passed on, only
once its batch is committed: a crawl killed meanwhile loses at most that batch,
none of which was counted, and a run again fetches those pages again. While the
KB cannot take pages they wait, or go to the journal (``kb/journalled``); one
neither stored nor journalled is counted ``kb/lost`` and the crawl exits 1.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem

from middlewares.engine.kb import KbGone
from middlewares.engine.runtime import Runtime
from synapsecrawl.kb.indexing import labels_from_item, record_from_item
from synapsecrawl.kb.outage import LOST_STAT

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
        # Our spiders' items are dicts of plain values: ItemAdapter.asdict() would walk every link of the
        # page asking whether it is an item, on the event loop; other item types still do.
        fields = dict(item) if type(item) is dict else ItemAdapter(item).asdict()
        record = record_from_item(fields)
        labels = labels_from_item(fields)  # OmniscienteBot's labels and TDM policy (middlewares.labels)
        stats = self._crawler.stats
        assert stats is not None
        try:
            # done once its batch is committed, or journalled while the KB cannot take it (KB_JOURNAL_DIR)
            handed = time.monotonic()
            kept = await self._runtime.kb.keep(record, labels)
            self._runtime.timer("kb_write", time.monotonic() - handed)
        except (KbGone, OSError) as exc:  # no KB and no journal: a page the site paid for, lost
            stats.inc_value(LOST_STAT)
            raise DropItem(f"lost, neither stored nor journalled ({exc or 'the KB stayed unavailable'})") from None
        if kept == "journalled":
            stats.inc_value("kb/journalled")
            return item
        stats.inc_value("kb/stored")
        self._runtime.summary.store(record.site, record.url)
        return item
