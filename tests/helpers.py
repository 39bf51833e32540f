"""Helpers shared by test modules: a PDF maker, and the knowledge base a crawl wrote."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from synapsecrawl.kb.sqlite import SQLiteStore
from tests.conftest import CrawlRun

__all__ = ["make_pdf", "store_of"]


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
