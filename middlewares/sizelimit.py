"""Reading no more than a profile allows: the type gate and the size cap.

ALL-SIZE: a response is read up to the cap and no further; the download stops
there (``StopDownload(fail=False)``) and the page is processed truncated; the
crawl summary counts it as truncated.
SNA-HTML / YOT-HTTPS: a type the profile does not read is abandoned as soon
as the headers show it, before the body is transferred.
"""

from __future__ import annotations

import logging
import zlib
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest, StopDownload

from middlewares.engine.runtime import Runtime
from synapsecrawl.crawl.kinds import RequestKind, kind_of

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.http.headers import Headers

__all__ = ["ContentDecodingMiddleware", "DecompressionGuardMiddleware", "ResponseGateMiddleware"]

logger = logging.getLogger(__name__)

# A truncated gzip stream of N bytes may inflate to many times N; past this
# ratio it is treated as a bomb and dropped by Scrapy's HttpCompressionMiddleware.
_INFLATE_RATIO = 20


class ResponseGateMiddleware:
    def __init__(self, crawler: Crawler, runtime: Runtime) -> None:
        self._crawler = crawler
        self._runtime = runtime
        self._profile = runtime.profile
        self._received: dict[int, int] = {}
        crawler.signals.connect(self._headers_received, signal=signals.headers_received)
        crawler.signals.connect(self._bytes_received, signal=signals.bytes_received)
        # sent for every request that reached a slot, however it ended: the count never outlives it
        crawler.signals.connect(self._forget, signal=signals.request_left_downloader)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ResponseGateMiddleware:
        return cls(crawler, Runtime.of(crawler))

    def cap_for(self, request: Request) -> int:
        """The bytes this request may read."""
        return int(request.meta.get("size_limit_bytes") or self._profile.size_bytes)

    def _headers_received(self, headers: Headers, body_length: int, request: Request, **_: Any) -> None:
        # A redirect hop copies its meta: a type refused on the 3xx in front of this answer is no verdict on it.
        request.meta.pop("gate_refused_type", None)
        if not kind_of(request.meta).rules.type_gated:
            return
        raw = headers.get(b"Content-Type") or b""
        content_type = raw.decode("latin-1").strip()
        # A missing Content-Type is sniffed later; a stated foreign one stops here.
        if content_type and not self._profile.accepts_type(content_type):
            request.meta["gate_refused_type"] = content_type.split(";", 1)[0].strip().lower()
            raise StopDownload(fail=False)

    def _bytes_received(self, data: bytes, request: Request, **_: Any) -> None:
        key = id(request)
        received = self._received.get(key, 0) + len(data)
        self._received[key] = received
        if received >= self.cap_for(request):
            request.meta["size_truncated"] = True
            raise StopDownload(fail=False)

    def _forget(self, request: Request, **_: Any) -> None:
        self._received.pop(id(request), None)

    def process_response(self, request: Request, response: Response) -> Response:
        refused = request.meta.get("gate_refused_type")
        if refused:
            assert self._crawler.stats is not None
            self._crawler.stats.inc_value("gate/type_refused")
            self._runtime.summary.skip(self._runtime.site(request.url), "type", request.url)
            raise IgnoreRequest(f"{self._profile.name} does not read {refused}: {request.url}")
        cap = self.cap_for(request)
        if len(response.body) > cap or request.meta.get("size_truncated"):
            assert self._crawler.stats is not None
            self._crawler.stats.inc_value("gate/truncated")
            if kind_of(request.meta).rules.summarised:
                self._runtime.summary.truncate(self._runtime.site(request.url), request.url)
            logger.info("read %s only up to %d bytes (%s's cap)", request.url, cap, self._profile.name)
            return response.replace(body=response.body[:cap], flags=[*response.flags, "truncated"])
        return response


class DecompressionGuardMiddleware:
    """Bounds what Scrapy's HttpCompressionMiddleware may inflate, per request."""

    def __init__(self, runtime: Runtime) -> None:
        self._profile = runtime.profile

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DecompressionGuardMiddleware:
        return cls(Runtime.of(crawler))

    def process_response(self, request: Request, response: Response) -> Response:
        cap = int(request.meta.get("size_limit_bytes") or self._profile.size_bytes)
        if kind_of(request.meta) is RequestKind.ROBOTS:
            return _inflate_head(response, cap)
        inflated = request.meta.get("decompressed_limit_bytes")  # a sitemap's own cap (sitemaps.org: 50 MB)
        request.meta["download_maxsize"] = int(inflated or max(cap * _INFLATE_RATIO, 16 * 1024 * 1024))
        return response


def _inflate_head(response: Response, cap: int) -> Response:
    """A gzip or deflate robots.txt inflated only up to ``cap`` bytes, marked truncated if it goes on.

    RFC 9309 §2.5 parses a robots.txt up to a limit however long it is, and ALL-RFC9309 promises the
    first 500 KiB. Scrapy's HttpCompressionMiddleware inflates a body whole or drops it past
    DOWNLOAD_MAXSIZE, so a 20 MB robots.txt sent as 60 KB of gzip counted as unreachable and shut the
    site out. zlib's ``max_length`` bounds both the output and the work; other encodings are left to
    Scrapy.
    """
    encodings = [part.strip().lower() for part in (response.headers.get(b"Content-Encoding") or b"").split(b",")]
    if encodings not in ([b"gzip"], [b"x-gzip"], [b"deflate"]):
        return response
    attempts = [zlib.MAX_WBITS, -zlib.MAX_WBITS] if encodings == [b"deflate"] else [16 + zlib.MAX_WBITS]
    for wbits in attempts:  # "deflate" is zlib-wrapped by the RFC, raw from some servers
        try:
            body = zlib.decompressobj(wbits).decompress(response.body, cap + 1)
            break
        except zlib.error:
            continue
    else:
        return response  # not what it says it is: Scrapy's middleware reports it
    headers = response.headers.copy()
    del headers[b"Content-Encoding"]
    flags = [*response.flags, "truncated"] if len(body) > cap else response.flags
    return response.replace(body=body[:cap], headers=headers, flags=flags)


class ContentDecodingMiddleware(HttpCompressionMiddleware):
    """Scrapy's HttpCompressionMiddleware, with a body its Content-Encoding does not decode dropped in one line.

    Scrapy's lets the codec's error through, and the crawl log shows it as a traceback per page.
    """

    def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        try:
            return super().process_response(request, response)
        except IgnoreRequest:
            raise
        # RFC 9110 §8.4: a body that is not in the coding it names; gzip, zlib, brotli and zstd each raise their own.
        except Exception as error:  # noqa: BLE001
            coding = (response.headers.get(b"Content-Encoding") or b"").decode("latin-1")
            logger.warning(
                "%s: not read: its Content-Encoding %s does not decode (%s)", response.url, coding, type(error).__name__
            )
            raise IgnoreRequest(f"{response.url}: Content-Encoding {coding} does not decode") from None
