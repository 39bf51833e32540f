"""OMN-LABELS, OMN-FETCH: each kept page's kind, its links' contexts and its TDM policy.

A spider middleware: every item a response yields gets the labels of that
response and the TDM reservation that applies to it (``synapsecrawl.rules.tdmrep``:
the origin's tdmrep.json from ``middlewares.tdmrep``, then the ``tdm-reservation``
and ``tdm-policy`` headers, then the meta tags). ``pipelines.index`` stores them.
Labels only: no text leaves this middleware.

The labels and the meta tags are read where the page is read, in an extraction
worker under its time guard (``read_document(label=True)``); the spider
leaves them in ``response.meta["page_labels"]``. Nothing is parsed here, on the
crawler's threads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter, is_item
from scrapy.exceptions import NotConfigured

from middlewares.engine.runtime import Runtime
from synapsecrawl.extract.page import Labels
from synapsecrawl.kb.indexing import label_fields
from synapsecrawl.rules.tdmrep import HEADER, META, TdmDeclaration, TdmRep, declare, read_pairs

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["LabelsMiddleware"]


def _labels(labels: Labels | None, tdm: TdmDeclaration) -> dict[str, Any]:
    if labels is None:  # a page not read by the spider's reader: nothing known of it
        return label_fields("other", (), tdm)
    return label_fields(labels.kind, labels.links, declare(tdm, read_pairs(labels.tdm_meta, META)))


class LabelsMiddleware:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LabelsMiddleware:
        profile = Runtime.of(crawler).profile
        if not profile.labels:
            raise NotConfigured(f"{profile.name} does not label pages")
        return cls()

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        fields: dict[str, Any] | None = None
        async for entry in result:
            if is_item(entry) and ItemAdapter(entry).get("url") == response.url:
                if fields is None:
                    fields = self._fields(response)
                adapter = ItemAdapter(entry)
                for key, value in fields.items():
                    adapter[key] = value
            yield entry

    @staticmethod
    def _fields(response: Response) -> dict[str, Any]:
        tdm_file: TdmRep = response.meta.get("tdmrep_file") or TdmRep()
        headers = ((k.decode("latin-1"), v.decode("latin-1")) for k, values in response.headers.items() for v in values)
        tdm = declare(tdm_file.declaration_for(response.url), read_pairs(headers, HEADER))
        return _labels(response.meta.get("page_labels"), tdm)
