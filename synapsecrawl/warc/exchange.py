"""One HTTP exchange as the crawl saw it on the wire, in plain values, ready to be written as WARC.

A Scrapy adapter (``middlewares.engine.warc``) fills an ``Exchange`` from a request and its raw
answer (before decompression); nothing here knows Scrapy. ``request_block`` and ``response_head``
rebuild the HTTP/1.1 message heads: the request's from the headers the download handler was
given plus the Host header it adds (RFC 9112 §3.2), the response's from the status and headers
received. A body that came chunked is stored de-chunked, so its Transfer-Encoding header is kept
as ``X-Crawler-Transfer-Encoding`` (Common Crawl's convention) and replay tools do not de-chunk it
again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from http import HTTPStatus
from urllib.parse import urlsplit

__all__ = ["Exchange", "Revisit", "host_header", "request_line", "response_headers", "status_line"]

_Headers = tuple[tuple[str, str], ...]

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Revisit:
    """A 304's reference to the capture it confirms (WARC 1.1 §6.7.3, profile server-not-modified)."""

    target_uri: str
    date: datetime | None  # when the confirmed copy was fetched; None if not known


@dataclass(frozen=True)
class Exchange:
    """A request as sent and the answer as received (the body as it came, content coding and all)."""

    url: str
    method: str
    request_headers: _Headers
    status: int
    response_headers: _Headers
    body: bytes
    date: datetime  # when the answer arrived, UTC
    protocol: str = "HTTP/1.1"
    ip_address: str = ""
    truncated: str = ""  # WARC-Truncated's reason ("length": a size cap stopped the download), "" if whole
    revisit: Revisit | None = None  # set for a 304 that confirms a stored copy
    extra: _Headers = field(default=())  # further WARC header fields of the response record


def host_header(url: str) -> str:
    """The Host header a client sends for ``url``: host, and the port unless it is the scheme's default."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # an IPv6 literal (RFC 3986 §3.2.2)
    port = parts.port
    if port is not None and port != _DEFAULT_PORTS.get(parts.scheme):
        return f"{host}:{port}"
    return host


def request_line(method: str, url: str) -> str:
    """The request line of ``method url`` in origin form (RFC 9112 §3.2.1)."""
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return f"{method} {target} HTTP/1.1"


def status_line(status: int) -> str:
    """``"200 OK"``: the status and its standard reason phrase (the received phrase is not kept by the client)."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} Unknown"


def response_headers(headers: _Headers) -> list[tuple[str, str]]:
    """The answer's headers as stored: a Transfer-Encoding renamed, since the stored body is de-chunked."""
    return [
        ("X-Crawler-Transfer-Encoding" if name.lower() == "transfer-encoding" else name, value)
        for name, value in headers
    ]
