"""OMN-LABELS, OMN-FETCH: each kept page's kind, its links' contexts and its TDM policy.

A spider middleware, so the spiders stay as they are: every item a response
yields gets the labels of that response (``synapsecrawl.labels``) and the TDM
reservation that applies to it (``synapsecrawl.tdmrep``: the origin's
tdmrep.json from ``middlewares.tdmrep``, then the ``tdm-reservation`` and
``tdm-policy`` headers, then the meta tags). ``pipelines.index`` stores them.
Labels only: no text leaves this middleware.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter, is_item
from scrapy.exceptions import NotConfigured
from w3lib.encoding import http_content_type_encoding

from middlewares.runtime import Runtime
from synapsecrawl.indexing import label_fields
from synapsecrawl.labels import LABELLING_PROFILES, label_links, label_page, parse_document
from synapsecrawl.tdmrep import HEADER, META, TdmDeclaration, TdmRep, declare, read_pairs

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["LabelsMiddleware"]


def _labels(body: bytes, url: str, encoding: str | None, tdm: TdmDeclaration) -> dict[str, Any]:
    root = parse_document(body, encoding=encoding)
    if root is None:
        return label_fields("other", (), tdm)
    meta = read_pairs(((m.get("name") or "", m.get("content") or "") for m in root.iter("meta")), META)
    links = [(link.url, link.context) for link in label_links(root, url)]
    return label_fields(label_page(root, url).kind, links, declare(tdm, meta))


class LabelsMiddleware:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LabelsMiddleware:
        profile = Runtime.of(crawler).profile
        if profile.name not in LABELLING_PROFILES:
            raise NotConfigured(f"{profile.name} does not label pages")
        return cls()

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        fields: dict[str, Any] | None = None
        async for entry in result:
            if is_item(entry) and ItemAdapter(entry).get("url") == response.url:
                if fields is None:
                    fields = await asyncio.to_thread(self._fields, response)
                adapter = ItemAdapter(entry)
                for key, value in fields.items():
                    adapter[key] = value
            yield entry

    @staticmethod
    def _fields(response: Response) -> dict[str, Any]:
        tdm_file: TdmRep = response.meta.get("tdmrep_file") or TdmRep()
        headers = ((k.decode("latin-1"), v.decode("latin-1")) for k, values in response.headers.items() for v in values)
        tdm = declare(tdm_file.declaration_for(response.url), read_pairs(headers, HEADER))
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        return _labels(response.body, response.url, http_content_type_encoding(content_type), tdm)
