"""Helpers shared by test modules: running the commands, a finished crawl, request gaps, a PDF maker and the
knowledge base a crawl wrote. Fixtures stay in tests/conftest.py."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.sqlite import SQLiteStore
from tests import zygote

__all__ = [
    "POSTGRES_ADMIN_URI",
    "REDIS_URL",
    "ROOT",
    "WHEN",
    "CrawlRun",
    "bin_path",
    "gaps",
    "make_pdf",
    "record",
    "store_of",
    "synapsecrawl",
    "write_urls",
]

ROOT = Path(__file__).resolve().parent.parent
POSTGRES_ADMIN_URI = os.environ.get("SYNAPSECRAWL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("SYNAPSECRAWL_TEST_REDIS", "redis://127.0.0.1:6379/0")


@dataclass
class CrawlRun:
    """A finished ``scrapy crawl`` and where its KB lives."""

    returncode: int
    stdout: str
    stderr: str
    kb_uri: str
    items_path: Path

    def items(self) -> list[dict[str, object]]:
        """The exported items (``-O``)."""
        if not self.items_path.exists():
            return []
        return [json.loads(line) for line in self.items_path.read_text().splitlines() if line.strip()]

    def kb(self, kb: str | None = None) -> list[dict[str, object]]:
        """``synapsecrawl kb list --format jsonl``, parsed."""
        out = synapsecrawl("kb", "list", "--uri", self.kb_uri, "--format", "jsonl", *(["--kb", kb] if kb else []))
        assert out.returncode == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines()]


def bin_path(name: str) -> str:
    """The path of the command ``name`` installed beside this Python, else on PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name) or name


def synapsecrawl(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    """Run the ``synapsecrawl`` command (a fork of the warm test process, tests/zygote.py)."""
    return zygote.run(
        [bin_path("synapsecrawl"), *args], timeout=120, input=stdin.decode() if stdin is not None else None
    )


def write_urls(path: Path, urls: list[str]) -> str:
    """Write a urls_file (one URL a line) and return its path."""
    path.write_text("\n".join(urls) + "\n")
    return str(path)


def gaps(hits: list) -> list[float]:  # type: ignore[type-arg]
    """Seconds between consecutive request arrivals."""
    return [b.start - a.start for a, b in itertools.pairwise(hits)]


# Hand-written: pypdf (already a dependency) cannot draw text on a page, and a PDF library that can
# (reportlab) would be a test dependency for a few hundred bytes of known text.
def make_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A minimal PDF: one Helvetica line per string, one page per list; an empty list draws a box."""
    objects: list[bytes] = [b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>", b""]
    kids = []
    for lines in pages:
        ops = [b"BT /F1 12 Tf 72 720 Td 16 TL"]
        for line in lines:
            raw = line.encode("cp1252").replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")
            ops.append(b"(" + raw + b") Tj T*")
        stream = b"\n".join([*ops, b"ET"]) if lines else b"0 0 1 rg 72 72 200 200 re f"
        objects.append(b"<< /Length %d >>\nstream\n%b\nendstream" % (len(stream), stream))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 1 0 R >> >>"
            b" /Contents %d 0 R >>" % (len(objects))
        )
        kids.append(len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%b] /Count %d >>" % (b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 2, len(objects))
    if title is not None:
        objects.append(b"<< /Title (" + title.encode("latin-1") + b") /Producer (synapsecrawl tests) >>")
        trailer += b" /Info %d 0 R" % len(objects)
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%b\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


@contextmanager
def store_of(run: CrawlRun) -> Iterator[SQLiteStore]:
    """The SQLite knowledge base ``run`` wrote, open for the test's assertions."""
    store = SQLiteStore(Path(run.kb_uri.removeprefix("sqlite:///")))
    try:
        yield store
    finally:
        store.close()


WHEN = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # the fetch time of store-level test pages


def record(url: str, text: str, **kw: object) -> PageRecord:
    """A stored HTML page of ``url`` (kb "docs" unless given), for tests that fill a store directly."""
    return PageRecord(
        kb=str(kw.pop("kb", "docs")),
        url=url,
        title=str(kw.pop("title", "")),
        text=text,
        content_type="text/html",
        status=200,
        fetched_at=WHEN,
        **kw,
    )  # type: ignore[arg-type]


def pages_due(uri: str) -> None:
    """The days pass until every stored page of the KB at ``uri`` is due again (under a web crawler's
    profile a crawl asks for none sooner: synapsecrawl.kb.revisit)."""
    from synapsecrawl.kb import open_store

    store = open_store(uri)
    try:
        store.put_pages([replace(page, revisit_due=time.time() - 1) for page in store.pages()])
    finally:
        store.close()


def wait_for(check: Callable[[], bool], deadline: float = 30.0) -> bool:
    """Poll ``check`` until it holds or ``deadline`` seconds pass; whether it held."""
    end = time.monotonic() + deadline
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True
