"""OMN-FETCH: an origin's /.well-known/tdmrep.json, read once per crawl before its first page.

A thin adapter over ``synapsecrawl.rules.tdmrep``. The file is fetched as a normal
request through the downloader, so robots.txt, the pacer, backoff and signing
apply to it as to a page (a disallowed or failed fetch means no file). It is
not a page: it never reaches a spider callback, is never stored, is not
counted against the page budget (like robots.txt), and is read whatever its
Content-Type, up to ``MAX_TDMREP_BYTES``. The first page of each origin waits
for it; the parsed file rides on each page's ``meta["tdmrep_file"]`` to
``middlewares.labels``, which records the policy per page.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK

from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.kinds import KIND, RequestKind, kind_of
from synapsecrawl.rules.tdmrep import MAX_TDMREP_BYTES, TdmRep, parse_tdmrep
from synapsecrawl.urls import origin_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["TdmRepMiddleware"]

logger = logging.getLogger(__name__)

TDMREP_PATH = "/.well-known/tdmrep.json"


class TdmRepMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._files: dict[str, asyncio.Future[TdmRep]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TdmRepMiddleware:
        profile = Runtime.of(crawler).profile
        if not profile.tdmrep:
            raise NotConfigured(f"{profile.name} does not read tdmrep.json")
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        if not kind_of(request.meta).rules.tdmrep:
            return
        origin = origin_of(request.url)
        if origin not in self._files:  # concurrent first pages share one fetch
            self._files[origin] = asyncio.ensure_future(self._fetch(origin))
        request.meta["tdmrep_file"] = await asyncio.shield(self._files[origin])

    async def _fetch(self, origin: str) -> TdmRep:
        request = Request(
            origin + TDMREP_PATH,
            callback=NO_CALLBACK,
            meta={
                KIND: RequestKind.TDMREP.value,
                "dont_retry": True,
                "size_limit_bytes": MAX_TDMREP_BYTES,
            },
            priority=900,
        )
        assert self._crawler.engine is not None and self._crawler.stats is not None
        try:
            response = await self._crawler.engine.download_async(request)
        except IgnoreRequest as exc:  # robots.txt, a paused site, the address guard
            logger.info("tdmrep.json of %s not fetched: %s", origin, exc)
            self._crawler.stats.inc_value("tdmrep/refused")
            return TdmRep()
        except Exception as exc:  # noqa: BLE001 - TDMRep: failing to provide the file means no file
            logger.info("tdmrep.json of %s unreachable: %s", origin, exc)
            self._crawler.stats.inc_value("tdmrep/unreachable")
            return TdmRep()
        if not 200 <= response.status < 300:
            self._crawler.stats.inc_value("tdmrep/absent")
            return TdmRep()
        found = parse_tdmrep(response.body)
        self._crawler.stats.inc_value("tdmrep/read" if found.found else "tdmrep/invalid")
        if found.skipped:
            logger.info("tdmrep.json of %s: %d entries skipped", origin, found.skipped)
        return found
