"""The pacing gate: a request whose site is not due goes back to the queue.

The queue (``middlewares.engine.scheduler``) hands a site out a short lead
before it is due; on the way through the middlewares the site may stop being
due (the first page, once robots.txt has given a Crawl-delay; a pause). Then
the request goes back to the queue instead of waiting in the downloader's
slot, where it would hold one of the ``CONCURRENT_REQUESTS`` global slots.
Meta keys: reads ``pacing_turn`` and ``pacing_granted`` (a start Redis granted with the frontier's lease
goes through); the copy sent back leaves out every key of one download (synapsecrawl.crawl.meta.PER_DOWNLOAD).
"""

from __future__ import annotations

from time import monotonic
from typing import TYPE_CHECKING

from middlewares.engine.seam import paced_downloader
from synapsecrawl.crawl.meta import LEAD_SECONDS, PACING_GRANTED, TURN, drop_per_download

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["PacingGateMiddleware"]


class PacingGateMiddleware:
    """Sends a request whose site is not due back to the queue instead of letting it wait in a slot.

    Only requests the queue handed out come back (side fetches such as
    robots.txt are awaited by their caller); each goes back once per turn,
    flagged ``dont_filter`` so the duplicate filter lets it in again.
    """

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PacingGateMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> Request | None:
        if not request.meta.get(TURN) or request.meta.get(PACING_GRANTED):
            return None  # a shared frontier lease that holds the pacer's start: Redis booked it for now
        downloader = paced_downloader(self._crawler)
        if downloader is None:
            return None
        due = downloader.due(downloader.get_slot_key(request), ignoring=1, request=request)
        if due is None or due <= monotonic() + 2 * LEAD_SECONDS:
            return None
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value("pacing/requeued")
        return request.replace(dont_filter=True, meta=drop_per_download(request.meta))
