"""The request log of one crawl: every request, robots.txt read, skip and store, as JSON lines.

A crawl appends events to a list on the event loop and ``RequestLog`` writes them in batches from one worker thread;
times are seconds since the crawl started. The crawl report (``synapsecrawl.report``) is built from this log and the
crawl's stats. A file beside the KB rather than a KB table: an append-only record of one crawl, read back whole by
one reader. Reading never raises on content: a line that is not an event is counted in ``LogRead.bad_lines``. More:
docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "LOG_NAME",
    "STATS_NAME",
    "Event",
    "LogRead",
    "RequestEvent",
    "RequestLog",
    "RobotsEvent",
    "SiteEvent",
    "SkipEvent",
    "StoreEvent",
    "read_events",
]

LOG_NAME = "requests.jsonl"
STATS_NAME = "stats.json"


@dataclass(frozen=True)
class RequestEvent:
    """One request that went on the wire: when it started, how long it took, what came back."""

    site: str
    url: str
    kind: str
    start: float
    duration: float
    status: int | None  # None: no answer (refused, timed out, dropped)
    bytes: int = 0  # body bytes as received (before decoding)
    retry_after: str = ""  # the Retry-After header as sent
    event: Literal["request"] = "request"


@dataclass(frozen=True)
class RobotsEvent:
    """A robots.txt read: what it answered and what that means under the profile."""

    site: str
    url: str
    start: float
    status: int | None
    outcome: str  # "parsed", "unavailable" (allow all / per profile), "unreachable"
    allows_all: bool
    crawl_delay: float | None  # from the group that applies, as stated
    event: Literal["robots"] = "robots"


@dataclass(frozen=True)
class SkipEvent:
    """A URL left out, and why (one of ``synapsecrawl.crawl.summary.SKIP_REASONS``)."""

    site: str
    url: str
    reason: str
    at: float
    event: Literal["skip"] = "skip"


@dataclass(frozen=True)
class StoreEvent:
    """A page kept in the knowledge base."""

    site: str
    url: str
    at: float
    event: Literal["store"] = "store"


@dataclass(frozen=True)
class SiteEvent:
    """A site's pacing as the crawl ended: the spacing it ran under and the Crawl-delay it used."""

    site: str
    spacing: float
    crawl_delay: float | None
    event: Literal["site"] = "site"


Event = RequestEvent | RobotsEvent | SkipEvent | StoreEvent | SiteEvent
_TYPES: dict[str, type[Any]] = {
    "request": RequestEvent, "robots": RobotsEvent, "skip": SkipEvent, "store": StoreEvent, "site": SiteEvent,
}  # fmt: skip


@dataclass
class RequestLog:
    """Appends events to ``path`` in batches of ``batch`` from one writer thread."""

    path: Path
    batch: int = 500
    _pending: list[Event] = field(default_factory=list)
    _writer: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(1, "requestlog"))
    _writes: list[Future[None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("", "utf-8")

    def append(self, event: Event) -> None:
        """Keep ``event``; hand a full batch to the writer thread."""
        self._pending.append(event)
        if len(self._pending) >= self.batch:
            self.flush()

    def flush(self) -> None:
        """Hand what is pending to the writer thread, without waiting for it."""
        with self._lock:  # an append from another thread never falls between the swap's two halves
            batch, self._pending = self._pending, []
        if not batch:
            return
        self._writes = [f for f in self._writes if not f.done()]
        self._writes.append(self._writer.submit(self._write, batch))

    def close(self) -> None:
        """Write everything still pending and wait for it; a write that failed raises its ``OSError`` here."""
        self.flush()
        self._writer.shutdown(wait=True)
        for write in self._writes:
            write.result()

    def _write(self, batch: list[Event]) -> None:
        lines = "".join(json.dumps(asdict(e), separators=(",", ":")) + "\n" for e in batch)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(lines)


@dataclass
class LogRead:
    """The events of a log, and how many lines could not be read."""

    events: list[Event]
    bad_lines: int = 0


def _event(raw: object) -> Event | None:
    if not isinstance(raw, dict):
        return None
    kind = _TYPES.get(str(raw.get("event")))
    if kind is None:
        return None
    try:
        event: Event = kind(**raw)
    except TypeError:
        return None
    return event


def read_events(lines: Iterable[str]) -> LogRead:
    """Parse a log's lines; unreadable ones are counted, never raised."""
    read = LogRead([])
    for line in _nonblank(lines):
        try:
            event = _event(json.loads(line))
        except ValueError:
            event = None
        if event is None:
            read.bad_lines += 1
        else:
            read.events.append(event)
    return read


def _nonblank(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        if line.strip():
            yield line
