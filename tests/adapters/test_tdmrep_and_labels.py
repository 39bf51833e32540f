"""TdmRepMiddleware and LabelsMiddleware: OmniscienteBot's tdmrep.json, read once per origin, and labels.

tdmrep.json goes out through ``engine.download_async`` (``SideFetches`` answers it from a table);
labels are added to the items a real HtmlResponse yields, as the spider middleware chain hands them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from middlewares.labels import LabelsMiddleware
from middlewares.tdmrep import TdmRepMiddleware
from synapsecrawl.crawl.kinds import KIND, RequestKind, kind_of
from synapsecrawl.extract.read import read_document
from synapsecrawl.rules.tdmrep import MAX_TDMREP_BYTES, TdmRep, parse_tdmrep
from tests.adapters.crawlers import SideFetches, crawler_for

TDMREP = "http://example.com/.well-known/tdmrep.json"
RESERVED = json.dumps(
    [
        {"location": "/news/*", "tdm-reservation": 1, "tdm-policy": "https://example.com/policy"},
        {"location": "/*", "tdm-reservation": 0},
        {"location": 7},
    ]
).encode()


@pytest.fixture
def omni(tmp_path: Path, signing_key: Path) -> dict[str, object]:
    return {"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(signing_key)}


def tdmrep(
    tmp_path: Path, settings: dict[str, object], answers: dict[str, tuple[int, bytes] | BaseException]
) -> tuple[TdmRepMiddleware, SideFetches, Any]:
    crawler = crawler_for(tmp_path, **settings)
    site = SideFetches(answers).install(crawler)
    return build_from_crawler(TdmRepMiddleware, crawler), site, crawler.stats


@pytest.mark.parametrize("profile", ["synapsebot", "snagabot", "yottabot"])
def test_only_omniscientebot_reads_tdmrep_json(tmp_path: Path, profile: str) -> None:
    """OMN-FETCH: tdmrep.json is OmniscienteBot's; the other profiles never fetch it (NotConfigured)."""
    with pytest.raises(NotConfigured):
        build_from_crawler(TdmRepMiddleware, crawler_for(tmp_path, BOT_PROFILE=profile))


async def test_the_first_pages_of_an_origin_share_one_fetch(tmp_path: Path, omni: dict[str, object]) -> None:
    """OMN-FETCH: an origin's tdmrep.json is read once per crawl before its first page, concurrent first
    pages waiting on the same fetch; each page carries the parsed file; the entry that is no rule is
    counted as skipped."""
    mw, site, stats = tdmrep(tmp_path, omni, {TDMREP: (200, RESERVED)})
    pages = [Request(f"http://example.com/news/{n}") for n in range(3)]
    await asyncio.gather(*(mw.process_request(page) for page in pages))
    await mw.process_request(Request("http://example.com/about"))
    assert site.urls() == [TDMREP]
    found: TdmRep = pages[0].meta["tdmrep_file"]
    assert found.found and found.skipped == 1
    assert found.declaration_for("http://example.com/news/1").reservation == 1
    assert found.declaration_for("http://example.com/about").reservation == 0
    assert stats.get_value("tdmrep/read") == 1


async def test_the_fetch_is_a_site_file_not_a_page(tmp_path: Path, omni: dict[str, object]) -> None:
    """OMN-FETCH: tdmrep.json goes through the downloader like a page (robots.txt, pacer, backoff,
    signing) but is not counted toward the page budget, is read whatever its type, capped, not retried."""
    mw, site, _ = tdmrep(tmp_path, omni, {TDMREP: (200, b"[]")})
    await mw.process_request(Request("http://example.com/"))
    [fetch] = site.asked
    assert kind_of(fetch.meta) is RequestKind.TDMREP
    assert not RequestKind.TDMREP.rules.budget and not RequestKind.TDMREP.rules.type_gated
    assert fetch.meta["dont_retry"] and fetch.meta["size_limit_bytes"] == MAX_TDMREP_BYTES


@pytest.mark.parametrize(
    ("answer", "stat"),
    [
        ((404, b""), "tdmrep/absent"),
        ((200, b"{not json"), "tdmrep/invalid"),
        (IgnoreRequest("robots.txt forbids"), "tdmrep/refused"),
        (ConnectionRefusedError(), "tdmrep/unreachable"),
    ],
)
async def test_no_usable_file_means_no_reservation(
    tmp_path: Path, omni: dict[str, object], answer: tuple[int, bytes] | BaseException, stat: str
) -> None:
    """OMN-FETCH (TDMRep): a missing, invalid, refused or failed file means no file: the page goes on
    with an empty policy, the outcome counted."""
    mw, _, stats = tdmrep(tmp_path, omni, {TDMREP: answer})
    page = Request("http://example.com/")
    await mw.process_request(page)
    assert page.meta["tdmrep_file"] == TdmRep()
    assert stats.get_value(stat) == 1


async def test_robots_txt_and_the_file_itself_do_not_wait_for_it(tmp_path: Path, omni: dict[str, object]) -> None:
    """OMN-FETCH: robots.txt and the tdmrep.json request are not held behind a tdmrep.json fetch."""
    mw, site, _ = tdmrep(tmp_path, omni, {})
    await mw.process_request(Request("http://example.com/robots.txt", meta={KIND: RequestKind.ROBOTS}))
    await mw.process_request(Request(TDMREP, meta={KIND: RequestKind.TDMREP}))
    assert site.asked == []


PAGE = b"""<html><head><title>How to bake</title><meta name="tdm-reservation" content="1">
<script type="application/ld+json">{"@type": "BlogPosting"}</script></head>
<body><article><h1>How to bake</h1><p>Bread.</p><a href="/other">other</a></article></body></html>"""
NO_META = PAGE.replace(b'<meta name="tdm-reservation" content="1">', b"")


def read_as_the_spider_does(url: str, body: bytes, **meta: Any) -> Request:
    """The request of ``url`` with ``page_labels`` as spiders/base.py sets them: the Page.labels that the
    extraction worker's ``read_document(label=True)`` read from ``body``."""
    page = read_document(
        body, url, content_type="text/html; charset=utf-8", tokens=("omniscientebot",), encoding="utf-8", label=True
    )
    assert page.labels is not None
    return Request(url, meta={**meta, "page_labels": page.labels})


async def labelled(mw: LabelsMiddleware, response: HtmlResponse, items: list[Any]) -> list[Any]:
    async def output() -> AsyncIterator[Any]:
        for item in items:
            yield item

    return [entry async for entry in mw.process_spider_output(response, output())]


@pytest.mark.parametrize("profile", ["synapsebot", "snagabot", "yottabot"])
def test_only_omniscientebot_labels_pages(tmp_path: Path, profile: str) -> None:
    """OMN-LABELS: labels are OmniscienteBot's; the other profiles leave items as they are."""
    with pytest.raises(NotConfigured):
        build_from_crawler(LabelsMiddleware, crawler_for(tmp_path, BOT_PROFILE=profile))


async def test_a_pages_item_gets_its_kind_link_contexts_and_tdm_policy(tmp_path: Path, omni: dict[str, object]) -> None:
    """OMN-LABELS, OMN-FETCH: the item of the page that was fetched gets its kind, each link's context
    and its TDM reservation (the header's 0 supersedes the file's rule); labels only, no text added; a
    request and another URL's item pass untouched. The labels are the worker's."""
    mw = build_from_crawler(LabelsMiddleware, crawler_for(tmp_path, **omni))
    request = read_as_the_spider_does("http://example.com/post", NO_META, tdmrep_file=parse_tdmrep(RESERVED))
    response = HtmlResponse(
        request.url,
        body=NO_META,
        headers={"tdm-reservation": "0", "Content-Type": "text/html; charset=utf-8"},
        request=request,
    )
    follow = Request("http://example.com/other")
    mine, other = {"url": request.url}, {"url": "http://example.com/else"}
    out = await labelled(mw, response, [mine, follow, other])
    assert out[1] is follow and other == {"url": "http://example.com/else"}
    assert mine["page_kind"] == "blog_post"  # its JSON-LD says BlogPosting
    assert mine["link_contexts"] and mine["link_contexts"][0]["url"] == "http://example.com/other"
    assert (mine["tdm_reservation"], mine["tdm_source"]) == (0, "header")
    assert set(mine) == {"url", "page_kind", "link_contexts", "tdm_reservation", "tdm_policy", "tdm_source"}


@pytest.mark.parametrize(
    ("body", "headers", "declared"),
    [
        (PAGE, {"tdm-reservation": "0"}, (1, "meta")),  # the meta tag supersedes the header
        (NO_META, {}, (1, "file")),  # /news/*: the file's first matching rule
    ],
)
async def test_a_later_declaration_supersedes_an_earlier(
    tmp_path: Path, omni: dict[str, object], body: bytes, headers: dict[str, str], declared: tuple[int, str]
) -> None:
    """OMN-FETCH (TDMRep "Processing priority"): tdmrep.json, then the header, then the meta tag (which the
    worker read)."""
    mw = build_from_crawler(LabelsMiddleware, crawler_for(tmp_path, **omni))
    request = read_as_the_spider_does("http://example.com/news/post", body, tdmrep_file=parse_tdmrep(RESERVED))
    response = HtmlResponse(request.url, body=body, headers=headers, encoding="utf-8", request=request)
    item = {"url": response.url}
    await labelled(mw, response, [item])
    assert (item["tdm_reservation"], item["tdm_source"]) == declared


async def test_a_body_that_is_no_document_is_labelled_other(tmp_path: Path, omni: dict[str, object]) -> None:
    """OMN-LABELS, bad input: an empty body, read by the worker, is kind "other" with no links, not an error."""
    mw = build_from_crawler(LabelsMiddleware, crawler_for(tmp_path, **omni))
    response = HtmlResponse(
        "http://example.com/empty",
        body=b"",
        encoding="utf-8",
        request=read_as_the_spider_does("http://example.com/empty", b""),
    )
    item = {"url": response.url}
    await labelled(mw, response, [item])
    assert item["page_kind"] == "other" and item["link_contexts"] == []
