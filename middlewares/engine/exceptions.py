"""The crawl's refusals: every ``IgnoreRequest`` subclass the middlewares raise and the spiders check.

A refusal ends one attempt at a request without an error: Scrapy calls its
errback with it and logs nothing. Spiders tell the kinds apart to count them
(a deferred page, a 304, a retry still to come). The tree, as httpx draws its:

    scrapy.exceptions.IgnoreRequest
    ├── SiteLeft         the site is paused past what this crawl waits: deferred to a later crawl
    ├── UrlHeld          the URL itself is held (a remembered failure, a retry not yet due)
    ├── RetryScheduled   this attempt is over; a copy comes back after a wait
    └── Unchanged        the server answered 304: the stored copy is current
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from scrapy.exceptions import IgnoreRequest

from middlewares.engine.logformat import when

if TYPE_CHECKING:
    from twisted.python.failure import Failure

__all__ = ["RetryScheduled", "SiteLeft", "Unchanged", "UrlHeld", "caught"]

_E = TypeVar("_E", bound=BaseException)


def caught(failure: Failure, kind: type[_E]) -> _E | None:
    """The failure's exception if it is a ``kind``, else ``None``: Twisted's ``Failure.check``, typed,
    so an errback can read the exception's own fields (an HttpError's response) under mypy strict."""
    value = failure.value
    return value if isinstance(value, kind) else None


class SiteLeft(IgnoreRequest):
    """The request's site is paused past what this crawl waits: deferred to a later crawl."""

    def __init__(self, url: str, site: str, until: float, reason: str) -> None:
        super().__init__(f"{site} is paused until {when(until)} ({reason}): {url} deferred")
        self.site, self.until, self.reason = site, until, reason


class UrlHeld(IgnoreRequest):
    """The URL itself is held (a remembered failure, a deferred retry not yet due)."""


class RetryScheduled(IgnoreRequest):
    """This attempt is over; a copy of the request comes back after a wait (its callbacks with it)."""


class Unchanged(IgnoreRequest):
    """The server answered 304: the stored copy is current, and marked verified."""
