"""middlewares.failures: Twisted's and Scrapy's download errors in the crawl summary's kinds."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.exceptions import DownloadFailedError, DownloadTimeoutError, ResponseDataLossError
from twisted.internet.error import ConnectionDone, ConnectionRefusedError, DNSLookupError
from twisted.python.failure import Failure
from twisted.web._newclient import ParseError, ResponseFailed, ResponseNeverReceived
from twisted.web.http import _DataLoss

from middlewares.failures import describe
from synapsecrawl.crawl.summary import FAIL_KINDS


def wrapped(outer: Exception, inner: Exception) -> Exception:
    outer.__cause__ = inner
    return outer


@pytest.mark.parametrize(
    ("exc", "kind", "words"),
    [
        (DownloadTimeoutError("Getting x took longer than 1.0 seconds."), "timeout", "DOWNLOAD_TIMEOUT"),
        (
            wrapped(
                DownloadFailedError(), ResponseFailed([Failure(ParseError("non-integer status code", b"HTTP/1.1 2OO"))])
            ),
            "malformed",
            "malformed answer (non-integer status code: 'HTTP/1.1 2OO')",
        ),
        (
            wrapped(DownloadFailedError(), ResponseFailed([Failure(KeyError(b"gzip"))])),
            "malformed",
            "unknown Transfer-Encoding b'gzip'",
        ),
        (wrapped(ResponseDataLossError(), ResponseFailed([Failure(_DataLoss())])), "cut-short", "cut short"),
        (
            wrapped(DownloadFailedError(), ResponseNeverReceived([Failure(ConnectionDone())])),
            "closed",
            "no complete HTTP answer",
        ),
        (ConnectionRefusedError(), "refused", "connection refused"),
        (DNSLookupError("nowhere.test"), "dns", "does not resolve"),
        (ValueError("Missing scheme in request url: javascript:x"), "other", "Missing scheme"),
    ],
)
def test_describe_names_the_kind_and_the_reason(exc: Exception, kind: str, words: str) -> None:
    """Each failure is one of FAIL_KINDS with a one-line reason; a ValueError a middleware
    raised itself is "other", not a malformed answer."""
    failure = Failure(exc)
    failure.request = Request("http://h.test/", meta={"download_timeout": 1.0})  # type: ignore[attr-defined]
    found, reason = describe(failure)
    assert (found, "\n" in reason) == (kind, False) and kind in FAIL_KINDS
    assert words in reason, reason
