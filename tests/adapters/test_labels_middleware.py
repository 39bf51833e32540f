"""OMN-LABELS: the labels middleware parses nothing; it copies the labels the extraction
worker read (``response.meta["page_labels"]``) and adds the TDM reservation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request
from scrapy.http import HtmlResponse

from middlewares.labels import LabelsMiddleware
from synapsecrawl.extract.page import Labels
from tests.hostile import attributes

URL = "https://a.test/page"


async def _items(*items: dict[str, Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


def _run(response: HtmlResponse) -> list[Any]:
    async def collect() -> list[Any]:
        return [entry async for entry in LabelsMiddleware().process_spider_output(response, _items({"url": URL}))]

    return asyncio.run(collect())


def test_the_worker_labels_are_copied_and_the_meta_tag_decides_the_reservation() -> None:
    """OMN-LABELS, OMN-FETCH: the kind, the link contexts and the tdm meta tag the worker read are the
    item's; the body is never parsed here (a body of 200,000 attributes costs nothing)."""
    request = Request(
        URL,
        meta={"page_labels": Labels("news_article", (("https://b.test/", "citation"),), (("tdm-reservation", "1"),))},
    )
    response = HtmlResponse(URL, body=attributes(200_000), request=request, headers={"tdm-reservation": "0"})
    [item] = _run(response)
    assert item["page_kind"] == "news_article"
    assert item["link_contexts"] == [{"url": "https://b.test/", "context": "citation"}]
    assert (item["tdm_reservation"], item["tdm_source"]) == (1, "meta")


def test_a_response_without_worker_labels_is_other_with_its_header_reservation() -> None:
    """OMN-LABELS: an item whose page no worker labelled is kind other, no links; a header still reserves."""
    response = HtmlResponse(URL, body=b"<html></html>", request=Request(URL), headers={"tdm-reservation": "1"})
    [item] = _run(response)
    assert (item["page_kind"], item["link_contexts"], item["tdm_reservation"]) == ("other", [], 1)
