"""The pacing gate: a request whose site is not due goes back to the frontier.

The frontier (``middlewares.engine.scheduler``) hands a site out a short lead
before it is due; on the way through the middlewares the site may stop being
due (the first page, once robots.txt has given a Crawl-delay; a pause). Then
the request goes back to the frontier instead of waiting in the downloader's
slot, where it would hold one of the ``CONCURRENT_REQUESTS`` global slots.
"""

from __future__ import annotations

from time import monotonic
from typing import TYPE_CHECKING

from middlewares.engine.downloader import PacedDownloader
from middlewares.engine.scheduler import LEAD_SECONDS, TURN, engine_of

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["PacingGateMiddleware"]


class PacingGateMiddleware:
    """Sends a request whose site is not due back to the frontier instead of letting it wait in a slot.

    Only requests the frontier handed out come back (side fetches such as
    robots.txt are awaited by their caller); each goes back once per turn,
    flagged ``dont_filter`` so the duplicate filter lets it in again.
    """

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PacingGateMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> Request | None:
        if not request.meta.get(TURN):
            return None
        engine = engine_of(self._crawler)
        downloader = engine.downloader if engine is not None else None
        if not isinstance(downloader, PacedDownloader):
            return None
        due = downloader.due(downloader.get_slot_key(request), ignoring=1, request=request)
        if due is None or due <= monotonic() + 2 * LEAD_SECONDS:
            return None
        assert self._crawler.stats is not None
        self._crawler.stats.inc_value("pacing/requeued")
        meta = {key: value for key, value in request.meta.items() if key != TURN}
        return request.replace(dont_filter=True, meta=meta)
