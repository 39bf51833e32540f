"""Writing exchanges as gzipped WARC 1.1 files: rotated by size, named per process, from a thread of its own.

Each file opens with a ``warcinfo`` record naming the profile and its user agent; each exchange is a
``response`` record and its ``request`` record (WARC-Concurrent-To), or for a 304 that confirms a stored
copy a ``revisit`` record of profile server-not-modified referring to it (WARC 1.1 §6.7.3). Each record
is its own gzip member (WARC 1.1 Annex D), so a reader can seek to any record. A body cut short by a size
cap carries ``WARC-Truncated``. A file is written as ``NAME.warc.gz.open`` and renamed to ``NAME.warc.gz``
once closed, so a reader never sees a half-written file as finished; the next record goes to a new file
once a file reaches ``max_size`` bytes (WARC_MAX_SIZE). Names follow the IIPC's
Prefix-Timestamp-Serial-Crawlhost pattern with the process id added, so the workers of a shared crawl,
on one machine or many, never write to the same file. ``ThreadedWarcWriter`` does the writing (gzip,
digests, disk) in a thread, so the event loop that keeps the crawl's pacing exact only queues values.
"""

from __future__ import annotations

import io
import logging
import os
import queue
import socket
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from synapsecrawl.warc.exchange import (
    Exchange,
    host_header,
    request_line,
    response_headers,
    status_line,
)

__all__ = [
    "DEFAULT_MAX_SIZE",
    "NOT_MODIFIED_PROFILE",
    "OPEN_SUFFIX",
    "RotatingWarcFiles",
    "ThreadedWarcWriter",
    "WarcInfo",
    "warc_date",
    "warc_file_name",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_SIZE = 1_000_000_000  # the IIPC's customary 1 GB
NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
OPEN_SUFFIX = ".open"
_WARC_VERSION = "1.1"


@dataclass(frozen=True)
class WarcInfo:
    """What each file's ``warcinfo`` record says of the crawl that wrote it."""

    profile: str
    user_agent: str
    software: str
    robots: str = "obey"
    description: str = ""

    def fields(self) -> dict[str, str]:
        """The record's fields (application/warc-fields), in the order written."""
        fields = {
            "software": self.software,
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            "hostname": socket.gethostname(),
            "http-header-user-agent": self.user_agent,
            "robots": self.robots,
            "synapsecrawl-profile": self.profile,
        }
        if self.description:
            fields["description"] = self.description
        return fields


def warc_date(when: datetime) -> str:
    """``when`` as a WARC 1.1 date (W3C-ISO8601, UTC, microseconds when it has them)."""
    when = when.astimezone(UTC)
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{when.microsecond:06d}Z" if when.microsecond else f"{text}Z"


def warc_file_name(prefix: str, when: datetime, serial: int, pid: int, host: str) -> str:
    """``prefix-YYYYmmddHHMMSSfff-00000-pid~host.warc.gz``: unique per process, sorting by time."""
    stamp = when.astimezone(UTC).strftime("%Y%m%d%H%M%S") + f"{when.microsecond // 1000:03d}"
    safe_host = "".join(c if c.isalnum() or c in ".-" else "-" for c in host) or "localhost"
    return f"{prefix}-{stamp}-{serial:05d}-{pid}~{safe_host}.warc.gz"


class RotatingWarcFiles:
    """Writes exchanges into ``directory``, a new file (with its warcinfo) each ``max_size`` bytes. One thread."""

    def __init__(self, directory: Path, info: WarcInfo, *, prefix: str, max_size: int = DEFAULT_MAX_SIZE) -> None:
        self._directory = directory
        self._info = info
        self._prefix = prefix
        self._max_size = max_size
        self._serial = 0
        self._handle: IO[bytes] | None = None
        self._path: Path | None = None
        self._writer: Any = None
        self.finished: list[Path] = []  # the files closed so far, in order
        self.records = 0

    def write(self, exchange: Exchange) -> None:
        """Write ``exchange``'s records, opening a file first if none is open, rotating after if it is full."""
        writer = self._open()
        build = self._response if exchange.revisit is None else self._revisit
        response = build(writer, exchange)
        request = self._request(writer, exchange, response.rec_headers.get_header("WARC-Record-ID"))
        writer.write_record(response)
        writer.write_record(request)
        self.records += 2
        assert self._handle is not None
        if self._handle.tell() >= self._max_size:
            self.close()

    def close(self) -> None:
        """Close the open file, if any, and give it its finished name."""
        if self._handle is None or self._path is None:
            return
        self._handle.close()
        finished = self._path.with_name(self._path.name.removesuffix(OPEN_SUFFIX))
        os.replace(self._path, finished)
        self.finished.append(finished)
        self._handle = self._path = self._writer = None

    def _open(self) -> Any:
        if self._writer is not None:
            return self._writer
        self._directory.mkdir(parents=True, exist_ok=True)
        name = warc_file_name(self._prefix, datetime.now(UTC), self._serial, os.getpid(), socket.gethostname())
        self._serial += 1
        self._path = self._directory / (name + OPEN_SUFFIX)
        self._handle = open(self._path, "xb")  # noqa: SIM115 - held open across records; closed in close()
        self._writer = WARCWriter(self._handle, gzip=True, warc_version=_WARC_VERSION)
        self._writer.write_record(self._writer.create_warcinfo_record(name, self._info.fields()))
        self.records += 1
        return self._writer

    @staticmethod
    def _response(writer: Any, exchange: Exchange) -> Any:
        head = StatusAndHeaders(
            status_line(exchange.status), response_headers(exchange.response_headers), protocol=exchange.protocol
        )
        return writer.create_warc_record(
            exchange.url,
            "response",
            payload=io.BytesIO(exchange.body),
            length=len(exchange.body),
            http_headers=head,
            warc_headers_dict=_warc_fields(exchange),
        )

    @staticmethod
    def _revisit(writer: Any, exchange: Exchange) -> Any:
        assert exchange.revisit is not None
        head = StatusAndHeaders(
            status_line(exchange.status), response_headers(exchange.response_headers), protocol=exchange.protocol
        )
        fields = _warc_fields(exchange)
        fields["WARC-Profile"] = NOT_MODIFIED_PROFILE
        fields["WARC-Refers-To-Target-URI"] = exchange.revisit.target_uri
        if exchange.revisit.date is not None:
            fields["WARC-Refers-To-Date"] = warc_date(exchange.revisit.date)
        # A revisit's block is the 304's head only; no payload digest: the confirmed payload is not at hand.
        return writer.create_warc_record(exchange.url, "revisit", http_headers=head, warc_headers_dict=fields)

    @staticmethod
    def _request(writer: Any, exchange: Exchange, concurrent_to: str) -> Any:
        headers = list(exchange.request_headers)
        if not any(name.lower() == "host" for name, _ in headers):
            headers.append(("Host", host_header(exchange.url)))  # what the download handler adds last
        line = request_line(exchange.method, exchange.url)
        head = StatusAndHeaders(line, headers, is_http_request=True)
        fields = {"WARC-Date": warc_date(exchange.date), "WARC-Concurrent-To": concurrent_to}
        return writer.create_warc_record(exchange.url, "request", http_headers=head, warc_headers_dict=fields)


def _warc_fields(exchange: Exchange) -> dict[str, str]:
    fields = {"WARC-Date": warc_date(exchange.date)}
    if exchange.ip_address:
        fields["WARC-IP-Address"] = exchange.ip_address
    if exchange.truncated:
        fields["WARC-Truncated"] = exchange.truncated
    fields.update(exchange.extra)
    return fields


_STOP = object()


class ThreadedWarcWriter:
    """``RotatingWarcFiles`` behind a queue: ``submit`` from the event loop, the writing in a thread.

    A write that fails (a full disk) stops the writing: the error is kept in ``error`` and logged once,
    and what was submitted after it is counted in ``dropped``; the crawl itself goes on.
    """

    def __init__(self, files: RotatingWarcFiles) -> None:
        self._files = files
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self.error: str = ""
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="warc-writer", daemon=True)
        self._thread.start()

    @property
    def files(self) -> RotatingWarcFiles:
        return self._files

    def submit(self, exchange: Exchange) -> None:
        """Queue ``exchange`` for writing; returns at once."""
        self._queue.put(exchange)

    def close(self) -> None:
        """Write what is queued, close the open file and end the thread (blocks until done)."""
        self._queue.put(_STOP)
        self._thread.join()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                break
            if self.error:
                self.dropped += 1
                continue
            assert isinstance(item, Exchange)
            try:
                self._files.write(item)
            except OSError as error:
                self.error = f"{error.filename or ''}: {error.strerror or error}".lstrip(": ")
                self.dropped += 1
                logger.error("WARC writing stopped: %s", self.error)
        try:
            self._files.close()
        except OSError as error:
            self.error = self.error or str(error)
            logger.error("WARC file not closed: %s", error)
