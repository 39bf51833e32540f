"""How the crawl's log lines say things: pages by URL (LOG_FORMATTER), durations and times.

Scrapy's own formatter puts the whole item into the line it logs for an item scraped (DEBUG), dropped
or failing in a pipeline: a page's text, tens of KB, in the log. ``PageLogFormatter`` names the page
instead. ``secs`` and ``when`` are how every line of ours (backoff, retries, refusals, the pacer's
slow-server line) says a duration and a moment, so they read alike whichever file writes them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from scrapy.logformatter import LogFormatter, LogFormatterResult

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.http import Response
    from twisted.python.failure import Failure

__all__ = ["PageLogFormatter", "secs", "when"]


def secs(seconds: float) -> str:
    """A duration for a log line: one decimal under ten seconds, whole seconds above."""
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


def when(unix: float) -> str:
    """``unix`` seconds as an ISO 8601 UTC time, to the second, for log lines and refusals."""
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="seconds")


def _named(item: Any) -> str:
    url = item.get("url") if isinstance(item, Mapping) else getattr(item, "url", None)
    return str(url) if url else f"an item of type {type(item).__name__}"


def _args(result: LogFormatterResult) -> dict[str, Any]:
    args = result["args"]
    return dict(args) if isinstance(args, Mapping) else {}


class PageLogFormatter(LogFormatter):
    def scraped(self, item: Any, response: Response | Failure | None, spider: Spider) -> LogFormatterResult:
        result = super().scraped(item, response, spider)
        return {**result, "msg": "Scraped from %(src)s: %(item)s", "args": {**_args(result), "item": _named(item)}}

    def dropped(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        result = super().dropped(item, exception, response, spider)
        return {**result, "msg": "Dropped: %(exception)s: %(item)s", "args": {**_args(result), "item": _named(item)}}

    def item_error(
        self, item: Any, exception: BaseException, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult:
        return {"level": logging.ERROR, "msg": "Error processing %(item)s", "args": {"item": _named(item)}}
