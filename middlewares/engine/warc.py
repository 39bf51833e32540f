"""WARC_DIR: every request as sent and every answer as received, written as WARC (``synapsecrawl.warc``).

An extension on ``response_downloaded``, the one signal that sees each answer raw (before the
decoding middleware at 590 inflates it) together with its request as it went on the wire: signing
happens at send (``PacedDownloader`` calls ``process_send``), so the Web Bot Auth headers are on the
request by then. Robots.txt, tdmrep.json, sitemaps, feeds, redirect hops and error pages pass the
same downloader and are written too; a page rendered by a browser (JS_RENDERING) is not downloaded
here and is not written. A 304 to a re-read (``reread_url``, with the stored copy's fetch time in
``reread_fetched_at``, from ``middlewares.reread``) is a revisit record; a body a size cap stopped
(``size_truncated``) is marked ``WARC-Truncated: length``. Only values are queued here: gzip,
digests and disk are the writer thread's, off the event loop that keeps the pacing exact.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from middlewares.engine.runtime import Runtime
from synapsecrawl.warc.exchange import Exchange, Revisit

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.http.headers import Headers

    from synapsecrawl.warc.writer import ThreadedWarcWriter

__all__ = ["WarcExtension"]

logger = logging.getLogger(__name__)


def _pairs(headers: Headers) -> tuple[tuple[str, str], ...]:
    return tuple(
        (name.decode("latin-1"), value.decode("latin-1")) for name, values in headers.items() for value in values
    )


class WarcExtension:
    def __init__(self, crawler: Crawler, writer: ThreadedWarcWriter) -> None:
        self._crawler = crawler
        self._writer = writer
        crawler.signals.connect(self._downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._closed, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcExtension:
        config = Runtime.of(crawler).config
        if not config.warc.directory:
            raise NotConfigured("no WARC_DIR: no WARC written")
        from synapsecrawl.warc.writer import RotatingWarcFiles, ThreadedWarcWriter, WarcInfo  # warcio: WARC_DIR only

        profile = config.profile
        info = WarcInfo(
            profile=profile.name,
            user_agent=config.user_agent,
            software=f"synapsecrawl/{version('synapsecrawl')} warcio/{version('warcio')}",
            description=f"{profile.token} crawl ({profile.name} profile)",
        )
        files = RotatingWarcFiles(
            Path(config.warc.directory), info, prefix=f"synapsecrawl-{profile.name}", max_size=config.warc.max_size
        )
        return cls(crawler, ThreadedWarcWriter(files))

    def _downloaded(self, response: Response, request: Request, **_: Any) -> None:
        revisit = None
        if response.status == 304 and request.meta.get("reread_url") == request.url:
            fetched = request.meta.get("reread_fetched_at")
            revisit = Revisit(request.url, datetime.fromisoformat(fetched) if fetched else None)
        truncated = ""
        if request.meta.get("size_truncated"):
            truncated = "length"
        elif "download_stopped" in response.flags:  # the type gate abandoned it at its headers
            truncated = "unspecified"
        self._writer.submit(
            Exchange(
                url=response.url,
                method=request.method,
                request_headers=_pairs(request.headers),
                status=response.status,
                response_headers=_pairs(response.headers),
                body=response.body,
                date=datetime.now(UTC),
                protocol=response.protocol or "HTTP/1.1",
                ip_address=str(response.ip_address or ""),
                truncated=truncated,
                revisit=revisit,
            )
        )

    def _closed(self) -> None:
        self._writer.close()  # the crawl is over: nothing left to pace
        files = self._writer.files
        assert self._crawler.stats is not None
        self._crawler.stats.set_value("warc/records", files.records)
        self._crawler.stats.set_value("warc/files", len(files.finished))
        if self._writer.dropped:
            self._crawler.stats.set_value("warc/dropped", self._writer.dropped)
        logger.info("WARC: %d records in %d files", files.records, len(files.finished))
