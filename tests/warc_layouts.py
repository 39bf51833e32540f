"""WARC and WET files written as Common Crawl writes them, for the import tests (no network needed)."""

from __future__ import annotations

import gzip
import io
from datetime import UTC, datetime
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

__all__ = ["MARCH", "cc_page", "cc_warc", "cc_wet"]

CC_INFO = {
    "software": "Apache Nutch 1.19 (modified, https://github.com/commoncrawl/nutch/)",
    "format": "WARC File Format 1.1",
    "isPartOf": "CC-MAIN-2026-08",
    "operator": "Common Crawl Admin (info@commoncrawl.org)",
    "publisher": "Common Crawl",
}
MARCH = datetime(2026, 3, 1, 8, 30, 0, tzinfo=UTC)


def cc_page(title: str, words: str, head: str = "") -> bytes:
    return f"<html><head><title>{title}</title>{head}</head><body><main><p>{words}</p></main></body></html>".encode()


def cc_warc(path: Path, pages: list[tuple[str, bytes]] | list[tuple[str, bytes, dict[str, str]]],
            when: datetime = MARCH) -> Path:  # fmt: skip
    """A WARC as Common Crawl writes it: warcinfo, then request, response and metadata records per page, the
    response's body stored decoded with its original coding and length renamed X-Crawler-*."""
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True, warc_version="1.1")
        info = writer.create_warcinfo_record(path.name, CC_INFO)
        writer.write_record(info)
        info_id = info.rec_headers.get_header("WARC-Record-ID")
        for entry in pages:
            url, body = entry[0], entry[1]
            extra = entry[2] if len(entry) > 2 else {}  # type: ignore[misc]
            date = when.strftime("%Y-%m-%dT%H:%M:%SZ")
            common = {"WARC-Date": date, "WARC-Warcinfo-ID": info_id, "WARC-IP-Address": "192.0.2.7"}
            head = StatusAndHeaders(
                "200 OK",
                [
                    ("Date", "Sun, 01 Mar 2026 08:30:00 GMT"),
                    ("Content-Type", "text/html; charset=UTF-8"),
                    ("X-Crawler-Content-Encoding", "gzip"),
                    ("X-Crawler-Content-Length", str(len(gzip.compress(body)))),
                    ("Content-Length", str(len(body))),
                    *extra.items(),
                ],
                protocol="HTTP/1.1",
            )
            response = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), length=len(body), http_headers=head,
                warc_headers_dict=common | {"WARC-Identified-Payload-Type": "text/html"},
            )  # fmt: skip
            ask = StatusAndHeaders(f"GET {url.split('/', 3)[3:] and '/' + url.split('/', 3)[3]} HTTP/1.1",
                                   [("User-Agent", "CCBot/2.0 (https://commoncrawl.org/faq/)")], is_http_request=True)  # fmt: skip
            concurrent = common | {"WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID")}
            writer.write_record(
                writer.create_warc_record(url, "request", http_headers=ask, warc_headers_dict=concurrent)
            )
            writer.write_record(response)
            meta = b"fetchTimeMs: 113\r\ncharset-detected: UTF-8\r\n"
            writer.write_record(writer.create_warc_record(
                url, "metadata", payload=io.BytesIO(meta), length=len(meta), warc_content_type="application/warc-fields",
                warc_headers_dict=concurrent,
            ))  # fmt: skip
    return path


def cc_wet(path: Path, texts: list[tuple[str, str]]) -> Path:
    """A WET file as Common Crawl writes it: warcinfo, then one text/plain conversion record per page."""
    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True, warc_version="1.0")
        writer.write_record(writer.create_warcinfo_record(path.name, CC_INFO))
        for url, text in texts:
            body = text.encode()
            fields = {"WARC-Date": "2026-03-01T08:30:00Z", "WARC-Identified-Content-Language": "eng",
                      "WARC-Refers-To": "<urn:uuid:1b4c9b0e-0000-4000-8000-000000000001>"}  # fmt: skip
            writer.write_record(writer.create_warc_record(
                url, "conversion", payload=io.BytesIO(body), length=len(body), warc_content_type="text/plain",
                warc_headers_dict=fields,
            ))  # fmt: skip
    return path
