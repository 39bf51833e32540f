"""The hostile corpus of tests/data/hostile: its cases, the large ones generated here.

``cases()`` lists each case of ``cases.json`` with its body made: a page of 200,000 attributes is
2.6 MB, so it is written out by ``make`` at test time, never kept in the repository.
"""

from __future__ import annotations

import gzip
import io
import json
import random
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CORPUS", "Case", "aside_links", "attributes", "cases", "headless_gzip", "nested_tables"]

CORPUS = Path(__file__).resolve().parent / "data" / "hostile"


def attributes(count: int) -> bytes:
    """One well-formed <div> with ``count`` attributes, text inside it and after it."""
    names = " ".join(f'a{i}="v"' for i in range(count))
    return (
        f"<html><head><title>Many attributes</title></head><body><div {names}>Body text here.</div>"
        "<p>Good paragraph.</p></body></html>"
    ).encode()


def aside_links(count: int) -> bytes:
    """``count`` links to another site inside one <aside>, after a paragraph of main text."""
    links = "".join(f'<a href="https://elsewhere.test/l{i}">link {i}</a> ' for i in range(count))
    return (
        f"<html><head><title>Aside</title></head><body><p>Main text of the page.</p><aside>{links}</aside>"
        "</body></html>"
    ).encode()


def nested_tables(count: int) -> bytes:
    """``count`` tables, each in the cell of the one before."""
    return (
        b"<html><head><title>Nested</title></head><body><p>Before the tables.</p>"
        + b"<table><tr><td>" * count
        + b"Deep cell</body></html>"
    )


def many_links(count: int) -> bytes:
    """An index page of ``count`` distinct links to another site."""
    links = "".join(f'<a href="https://elsewhere.test/p{i}">p{i}</a> ' for i in range(count))
    return f"<html><head><title>Index</title></head><body><p>An index.</p>{links}</body></html>".encode()


def gzip_twice() -> bytes:
    """An HTML page gzipped twice: served under one Content-Encoding: gzip, it is still gzip after one inflation."""
    return gzip.compress(gzip.compress(b"<html><body><p>Compressed twice.</p></body></html>" * 40, mtime=0), mtime=0)


def zip_archive() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("notes.txt", "Notes in an archive. " * 200)
    return out.getvalue()


def headless_gzip() -> bytes:
    """Compressed bytes whose first bytes name no format (a gzip stream without its 10-byte header)."""
    return gzip.compress(random.Random(14).randbytes(16_384), compresslevel=1, mtime=0)[10:]


_MAKERS = {
    "attributes": attributes,
    "aside_links": aside_links,
    "nested_tables": nested_tables,
    "many_links": many_links,
}
_FIXED = {"gzip_twice": gzip_twice, "zip": zip_archive, "headless_gzip": headless_gzip}


@dataclass(frozen=True)
class Case:
    """One hostile page: where it is served, its body and headers, and what a crawl does with it."""

    path: str
    body: bytes
    headers: dict[str, str]
    expect: str  # "bounded" or "binary"
    text: str = ""  # a phrase the stored text holds (bounded cases)


def cases() -> list[Case]:
    out = []
    for raw in json.loads((CORPUS / "cases.json").read_text())["cases"]:
        if "file" in raw:
            body = (CORPUS / raw["file"]).read_bytes()
        elif raw["make"] in _MAKERS:
            body = _MAKERS[raw["make"]](raw["count"])
        else:
            body = _FIXED[raw["make"]]()
        headers = {"Content-Type": raw.get("content_type", "text/html; charset=utf-8")}
        if not headers["Content-Type"]:
            headers = {}
        if raw.get("content_encoding"):
            headers["Content-Encoding"] = raw["content_encoding"]
        out.append(Case(raw["path"], body, headers, raw["expect"], raw.get("text", "")))
    return out
