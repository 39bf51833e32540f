"""The spiders' errbacks: a failed sitemap or feed fetch becomes one warning line with a short reason.

``SitemapSpider.sitemap_failed`` and ``FeedSpider.feed_failed`` (through ``spiders.feed._why``) get
real Twisted ``Failure`` objects, as Scrapy's errbacks do: an HttpError says the status it answered,
an IgnoreRequest (robots.txt, a hold, the scope) its own message, anything else the reason
``middlewares.failures.describe`` gives a failed download. Neither errback reads its spider, so
they are called on the class with no spider built; the line is read from the log.
"""

from __future__ import annotations

import logging
from typing import Any, cast

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet.error import ConnectionRefusedError, DNSLookupError
from twisted.python.failure import Failure

from middlewares.engine.exceptions import Unchanged
from spiders.feed import FeedSpider, _why
from spiders.sitemap import SitemapSpider

URL = "http://a.test/feed.xml"
NO_SPIDER = cast(Any, None)  # the errbacks read only the failure


def _failure(exc: BaseException, request: Request | None = None) -> Failure:
    failure = Failure(exc)
    if request is not None:
        failure.request = request  # type: ignore[attr-defined]  # as Scrapy sets it before an errback
    return failure


def _http_error(status: int) -> HttpError:
    response = Response(URL, status=status, request=Request(URL))
    return HttpError(response, "Ignoring non-200 response")


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (_http_error(503), "it answered 503"),
        (_http_error(404), "it answered 404"),
        (IgnoreRequest("Forbidden by robots.txt"), "Forbidden by robots.txt"),
        (ConnectionRefusedError(), "connection refused"),
        (DNSLookupError("a.test"), "the name does not resolve"),
        (RuntimeError("boom"), "boom"),
    ],
)
def test_why_a_feed_was_not_read_is_one_short_reason(exc: BaseException, reason: str) -> None:
    """An HttpError gives "it answered N", an IgnoreRequest its message, any other failure describe()'s reason."""
    assert _why(_failure(exc)) == reason


def test_a_failed_feed_logs_one_warning_naming_the_feed_as_subscribed(caplog: pytest.LogCaptureFixture) -> None:
    """The line names the feed's own URL (meta feed_url, the URL as subscribed) rather than where it redirected."""
    request = Request("http://b.test/moved.xml", meta={"feed_url": URL})
    with caplog.at_level(logging.INFO, logger="spiders.feed"):
        FeedSpider.feed_failed(NO_SPIDER, _failure(_http_error(500), request))
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, f"feed {URL} not read: it answered 500")
    ]


def test_an_unchanged_feed_is_no_failure(caplog: pytest.LogCaptureFixture) -> None:
    """A 304 (Unchanged) is said as an info line that nothing is new, not as a feed that was not read."""
    with caplog.at_level(logging.INFO, logger="spiders.feed"):
        FeedSpider.feed_failed(NO_SPIDER, _failure(Unchanged("304"), Request(URL)))
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, f"feed {URL} unchanged since its last read (304): nothing new")
    ]


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (_http_error(410), "it answered 410"),
        (IgnoreRequest("Forbidden by robots.txt"), "Forbidden by robots.txt"),
        (ConnectionRefusedError(), "connection refused"),
        (ValueError("bad gzip"), "bad gzip"),  # a bare ValueError is no malformed answer (describe)
    ],
)
def test_a_failed_sitemap_logs_one_warning_with_its_reason(
    caplog: pytest.LogCaptureFixture, exc: BaseException, reason: str
) -> None:
    """The same reasons as a feed's: "it answered N", the IgnoreRequest's message, or describe()'s reason."""
    sitemap = "http://a.test/sitemap.xml"
    with caplog.at_level(logging.INFO, logger="spiders.sitemap"):
        SitemapSpider.sitemap_failed(NO_SPIDER, _failure(exc, Request(sitemap)))
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, f"sitemap {sitemap} not read: {reason}")
    ]


def test_a_sitemap_failure_without_its_request_still_logs_one_line(caplog: pytest.LogCaptureFixture) -> None:
    """A failure that carries no request (raised before Scrapy attached one) names the sitemap "?"."""
    with caplog.at_level(logging.INFO, logger="spiders.sitemap"):
        SitemapSpider.sitemap_failed(NO_SPIDER, _failure(IgnoreRequest("out of scope")))
    assert [r.getMessage() for r in caplog.records] == ["sitemap ? not read: out of scope"]
