"""How a crawl failure of an asked-for page reaches the agent: one FetchError code per cause."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet.error import ConnectionRefusedError, TimeoutError

from spiders.ondemand import _fetch_error

URL = "https://a.test/page"


@pytest.mark.parametrize(("meta", "exc", "code"), [
    ({"robots_disallowed": True, "robots_outcome": "parsed"}, IgnoreRequest("robots.txt forbids"), "robots_disallowed"),
    ({"robots_disallowed": True, "robots_outcome": "unreachable"}, IgnoreRequest("unreadable"), "robots_unavailable"),
    ({"gate_refused_type": "application/pdf"}, IgnoreRequest("snagabot does not read"), "type_refused"),
    ({}, IgnoreRequest("a.test is a loopback address (ALLOW_PRIVATE_ADDRESSES is off): x"), "address_refused"),
    ({}, IgnoreRequest("on the removal list, never fetched"), "refused"),
    ({}, TimeoutError(), "timeout"),
    ({}, ConnectionRefusedError(), "unreachable"),
])  # fmt: skip
def test_each_failure_has_its_code(meta: dict[str, object], exc: Exception, code: str) -> None:
    """SNA-ONDEMAND: robots.txt, the type gate, the address guard, other refusals, timeouts and network
    failures each come back to the agent as their own error code with the crawl's message."""
    error = _fetch_error(Request(URL, meta=meta), exc)
    assert error.code == code
    assert error.message


def test_an_http_error_names_the_status() -> None:
    """SNA-ONDEMAND: a page that answers an error status is reported with that status."""
    response = HtmlResponse(URL, status=500, body=b"")
    error = _fetch_error(Request(URL), HttpError(response, "Ignoring non-200 response"))
    assert error.code == "http_status" and error.message == f"{URL} answered 500"
