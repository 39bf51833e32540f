"""Why a download failed, in the crawl summary's words: the one place Twisted's errors are translated.

``describe`` unwraps the ``Failure`` a download's errback gets (Scrapy's errors, Twisted's ``ResponseFailed`` and
the reasons inside it) into one of ``synapsecrawl.crawl.summary.FAIL_KINDS`` and a few words for the one log line;
it reads the request's ``download_timeout`` meta. ``quiet_dataloss_hint`` drops Scrapy's second line at a body cut
short, which advises what we refuse on purpose. Which error is which kind: docs/architecture.md, "Inside the larger
modules".
"""

from __future__ import annotations

import logging
from ssl import SSLError

from scrapy import exceptions as scrapy_errors
from twisted.internet import error as net
from twisted.python.failure import Failure
from twisted.web._newclient import ParseError, ResponseFailed, ResponseNeverReceived
from twisted.web.http import _DataLoss, _MalformedChunkedDataError

__all__ = ["describe", "quiet_dataloss_hint"]


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc``, what caused it, and the reasons inside Twisted's wrappers, outermost first."""
    out: list[BaseException] = []
    todo = [exc]
    while todo and len(out) < 20:
        current = todo.pop(0)
        if any(current is seen for seen in out):
            continue
        out.append(current)
        if current.__cause__ is not None:
            todo.append(current.__cause__)
        for reason in getattr(current, "reasons", None) or ():
            inner = reason.value if isinstance(reason, Failure) else reason
            if isinstance(inner, BaseException):
                todo.append(inner)
    return out


def _detail(exc: BaseException) -> str:
    if isinstance(exc, ParseError) and len(exc.args) >= 2:
        data = exc.args[1]
        shown = data[:60].decode("latin-1") if isinstance(data, bytes) else str(data)[:60]
        return f"{exc.args[0]}: {shown!r}"
    if isinstance(exc, KeyError):
        return f"unknown Transfer-Encoding {exc.args[0]!r}" if exc.args else "unknown Transfer-Encoding"
    text = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
    return text


_CUT = "the body was cut short (the connection ended before its end)"
_RULES: tuple[tuple[tuple[type[BaseException], ...], str, str], ...] = (  # first match wins
    ((scrapy_errors.DownloadTimeoutError, net.TimeoutError, TimeoutError), "timeout", ""),
    ((scrapy_errors.DownloadConnectionRefusedError, net.ConnectionRefusedError), "refused", "connection refused"),
    ((scrapy_errors.CannotResolveHostError, net.DNSLookupError), "dns", "the name does not resolve"),
    ((net.SSLError, SSLError), "tls", "TLS failed ({})"),
    ((_MalformedChunkedDataError,), "malformed", "malformed body ({})"),
    ((ParseError, ValueError, KeyError), "malformed", "malformed answer ({})"),
    ((scrapy_errors.ResponseDataLossError, _DataLoss), "cut-short", _CUT),
    (
        (ResponseNeverReceived, net.ConnectionDone, net.ConnectionLost),
        "closed",
        "no complete HTTP answer before the connection closed",
    ),
    ((ResponseFailed,), "cut-short", _CUT),
)


def describe(failure: Failure | BaseException) -> tuple[str, str]:
    """(kind, reason) of a failed download."""
    value = failure.value if isinstance(failure, Failure) else failure  # a Failure is a BaseException too
    exc = value if isinstance(value, BaseException) else Exception("no exception")
    chain = _chain(exc)
    for kinds, kind, reason in _RULES:
        hit = next((e for e in chain if isinstance(e, kinds)), None)
        if hit is None or (hit is exc and kind == "malformed"):
            continue  # a ValueError of a middleware's own is no malformed answer
        if kind == "timeout":
            request = getattr(failure, "request", None)
            seconds = request.meta.get("download_timeout") if request is not None else None
            within = f"within {seconds:g} s " if isinstance(seconds, int | float) else ""
            return kind, f"no full answer {within}(DOWNLOAD_TIMEOUT)"
        return kind, reason.format(_detail(hit))
    return "other", _detail(exc)


class _DataLossHint(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Got data loss in ")


_HINT = _DataLossHint()


def quiet_dataloss_hint() -> None:
    """Keep Scrapy's data-loss hint out of the log (idempotent): ``spiders.base.page_failed`` says it."""
    logging.getLogger("scrapy.core.downloader.handlers.http11").addFilter(_HINT)
