"""Reading WARC and WET files back: each capture's address, date, status, headers and decoded body.

Ours (WARC_DIR) and Common Crawl's read alike: a ``response`` record is a capture, its body
de-chunked and decoded of its Content-Encoding by warcio (Common Crawl stores bodies decoded, the
original codings renamed ``X-Crawler-*``, which leaves nothing to decode); a WET ``conversion`` record
is a capture of plain text without headers; a ``revisit`` record is yielded for what it confirms.
``warcinfo`` records give the profile that wrote the file (``synapsecrawl-profile``). Requests,
metadata and other records are passed over. A file that stops being WARC, or whose digests fail (a file
cut short), raises ``MalformedWarc`` with one line naming the file and the offset; the captures before
it have been yielded.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from synapsecrawl.errors import SynapseError

__all__ = ["Capture", "MalformedWarc", "read_captures", "warc_files"]

_KINDS = {"response", "revisit", "conversion"}


class MalformedWarc(SynapseError):
    """A file, or a record in it, that is not WARC as ISO 28500 writes it."""


@dataclass(frozen=True)
class Capture:
    """One capture of a URL: what the site answered (or, for WET, the text Common Crawl made of it)."""

    url: str
    date: datetime  # WARC-Date, UTC
    kind: str  # "response", "revisit" or "conversion" (WET)
    status: int  # 200 for a WET conversion
    headers: tuple[tuple[str, str], ...]  # the HTTP answer's headers; none for WET
    body: bytes  # without transfer or content coding
    truncated: str = ""  # WARC-Truncated
    profile: str = ""  # the profile named by the file's warcinfo, "" if none
    undecodable: bool = False  # its Content-Encoding did not decode: no body

    def header(self, name: str) -> str:
        """The first value of header ``name`` (any case), or ""."""
        lowered = name.lower()
        return next((value for key, value in self.headers if key.lower() == lowered), "")

    def header_values(self, name: str) -> list[str]:
        lowered = name.lower()
        return [value for key, value in self.headers if key.lower() == lowered]


def warc_files(paths: list[Path]) -> list[Path]:
    """The finished WARC and WET files among ``paths``: a file as given, a directory's sorted by name
    (ours sort by the time they were opened), each once, in that order."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            under = [p for p in path.rglob("*") if p.is_file() and p.name.endswith((".warc", ".warc.gz", ".wet.gz"))]
            found += sorted(under, key=lambda p: (p.name, str(p)))
        else:
            found.append(path)
    return list(dict.fromkeys(found))


def _date(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except ValueError:
        raise MalformedWarc(f"WARC-Date {text!r} is not a date") from None


def _fields(body: bytes) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in body.decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields.setdefault(name.strip(), value.strip())
    return fields


def read_captures(path: Path) -> Iterator[Capture]:
    """The captures in the WARC or WET file at ``path``, in file order; ``MalformedWarc`` where it breaks."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, after the generator is done
    except OSError as error:
        raise MalformedWarc(f"{path}: {error.strerror or error}") from None
    # Digests checked as records are read: a file cut short or damaged breaks off where it fails.
    records: Any = ArchiveIterator(handle, check_digests="raise")
    profile = ""
    offset = 0
    try:
        while True:
            try:
                record = next(records)
            except StopIteration:
                break
            except (ArchiveLoadFailed, zlib.error, EOFError, OSError, ValueError) as error:
                reason = " ".join(str(error).split())[:160] or type(error).__name__
                raise MalformedWarc(f"{path}: not WARC after offset {offset}: {reason}") from None
            if record.format != "warc":
                raise MalformedWarc(f"{path}: not WARC after offset {offset}: an {record.format} record")
            offset = records.offset
            kind = record.rec_type
            if kind == "warcinfo":
                profile = _fields(record.content_stream().read()).get("synapsecrawl-profile", profile)
                continue
            url = record.rec_headers.get_header("WARC-Target-URI") or ""
            if kind not in _KINDS or not url.startswith(("http://", "https://")):
                continue
            try:
                capture = _capture(record, kind, url, profile)
            except (ArchiveLoadFailed, zlib.error, EOFError, OSError, ValueError, MalformedWarc) as error:
                reason = " ".join(str(error).split())[:160] or type(error).__name__
                raise MalformedWarc(f"{path}: record at offset {offset} ({url}) does not read: {reason}") from None
            if capture is not None:
                yield capture
    finally:
        handle.close()
    if path.name.endswith(".gz") and not _gzip_complete(path):
        raise MalformedWarc(f"{path}: cut short after offset {offset}: its last gzip member does not end")


def _gzip_complete(path: Path) -> bool:
    """Whether the gzip members of ``path`` all end: warcio stops quietly at a file cut short."""
    member = zlib.decompressobj(16 + zlib.MAX_WBITS)
    fed = False
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                while chunk:
                    member.decompress(chunk)
                    fed = True
                    if not member.eof:
                        break
                    chunk = member.unused_data
                    member, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False
    except zlib.error:
        return False
    return not fed


def _capture(record: Any, kind: str, url: str, profile: str) -> Capture | None:
    date = _date(record.rec_headers.get_header("WARC-Date") or "")
    truncated = record.rec_headers.get_header("WARC-Truncated") or ""
    if kind == "conversion":
        return Capture(url, date, kind, 200, (), record.content_stream().read(), truncated, profile)
    http = record.http_headers
    if http is None:
        return None
    status = int(http.get_statuscode() or 0)
    headers = tuple((str(name), str(value)) for name, value in http.headers)
    body = b"" if kind == "revisit" else _body(record)
    if body is None:
        return Capture(url, date, kind, status, headers, b"", truncated, profile, undecodable=True)
    return Capture(url, date, kind, status, headers, body, truncated, profile)


def _body(record: Any) -> bytes | None:
    """The payload without transfer or content coding; None when its Content-Encoding does not decode.

    warcio gives what inflates of a coding cut short by a size cap, and a body that is not the gzip it
    claims as it is; other codecs raise their own errors (brotli even an AttributeError), so any error is
    a body that does not decode: that capture is skipped, the file is read on.
    """
    try:
        return bytes(record.content_stream().read())
    except Exception:  # noqa: BLE001 - a codec's error on the site's bytes, whichever codec
        return None
