"""Pages fetched while the knowledge base could not take them, kept on disk until it can.

A crawl whose KB stays unavailable past its in-memory buffer appends the pages it still holds here, one
JSON object a line, flushed and fsynced before it counts them as kept; the next crawl into the same KB
writes them first (``replay``) and only then truncates the file. A torn last line (a crash mid-append) is
skipped: its page was never counted as kept, so the site is asked for it again. One file per KB in
KB_JOURNAL_DIR, named after a digest of the KB's URI.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from synapsecrawl.kb.records import LabelRecord, PageRecord

__all__ = ["Held", "Journal", "journal_path"]

Held = tuple[PageRecord, LabelRecord | None]  # a page and OmniscienteBot's labels of it, if any

logger = logging.getLogger(__name__)

_TIMES = {"fetched_at", "verified_at"}
_TUPLES = {"outlinks"}
_FIELDS = {field.name for field in fields(PageRecord)}


def journal_path(directory: Path, kb_uri: str) -> Path:
    """Where the pages held for the KB at ``kb_uri`` are journalled, in ``directory``."""
    digest = hashlib.sha256(kb_uri.encode()).hexdigest()[:16]
    return directory / f"{digest}.jsonl"


def _line(held: Held) -> str:
    page, labels = held
    row: dict[str, Any] = asdict(page)
    for name in _TIMES:
        value = row[name]
        row[name] = value.isoformat() if isinstance(value, datetime) else value
    entry = {"page": row, "labels": None if labels is None else asdict(labels)}
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


def _held(line: str) -> Held:
    entry = json.loads(line)
    values = {name: value for name, value in entry["page"].items() if name in _FIELDS}
    for name in _TIMES:
        if values.get(name):
            values[name] = datetime.fromisoformat(values[name])
    for name in _TUPLES:
        values[name] = tuple(values.get(name) or ())
    labels = entry.get("labels")
    if labels is not None:
        labels = LabelRecord(**{**labels, "links": tuple(tuple(link) for link in labels.get("links") or ())})
    return PageRecord(**values), labels


class Journal:
    """An append-only file of pages waiting for their KB."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, entries: Sequence[Held]) -> None:
        """Write ``entries`` durably (flushed and fsynced) before returning; raises OSError when it cannot."""
        if not entries:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = "".join(_line(held) + "\n" for held in entries).encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)

    def entries(self) -> Iterator[Held]:
        """The journalled pages, oldest first; a line that does not parse (a torn append) is skipped."""
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                try:
                    yield _held(line)
                except (ValueError, TypeError, KeyError):
                    logger.warning("journal %s: line %d is torn or unreadable, skipped", self.path, number)

    def replay(self, write: Callable[[Sequence[Held]], None], *, batch: int = 64) -> int:
        """Write every journalled page with ``write`` (one call a batch), then empty the journal; the count.

        A failing ``write`` raises and leaves the journal whole: the next run replays it again (a page
        written twice is the same upsert)."""
        count = 0
        for chunk in _chunks(self.entries(), batch):
            write(chunk)
            count += len(chunk)
        if self.path.exists():
            self.path.unlink()
        return count


def _chunks(entries: Iterable[Held], size: int) -> Iterator[list[Held]]:
    chunk: list[Held] = []
    for held in entries:
        chunk.append(held)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
