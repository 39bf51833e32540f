"""The fixed quality set: what extraction reads of real pages stays what it was.

Every page of tests/data/docsite (the Python-docs-like test site), tests/data/pages (charsets,
boilerplate, broken markup, nosnippet) and tests/data/quality (long real pages, gzipped and filed under
the URL they were served at: Python 3.11 docs, Node.js, a man page, DocBook, an API index, bench.sim) is
read as the extraction worker reads it (``read_document``, with OMN-LABELS), and its title, text, snippet
text, links, link labels and robots directives are compared with tests/data/extract_quality.json, written
from the code as it was before extraction was made faster, and rewritten once since, when pages that mark
their main content came to be read from that element (docs/benchmarks.md, "the marked main element",
lists every text that changed and why). A change in what is extracted fails here and shows
the difference; when it is meant, rewrite the file with SYNAPSECRAWL_WRITE_QUALITY=1 (without -n: one
process writes it) and say in the commit why the text changed.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from synapsecrawl.extract.read import read_document

DATA = Path(__file__).resolve().parent.parent / "data"
EXPECTED = DATA / "extract_quality.json"
QUALITY = DATA / "quality"
PAGES = sorted([*DATA.glob("docsite/*.html"), *DATA.glob("pages/*.html"), *QUALITY.rglob("*.html.gz")])


def _key(path: Path) -> str:
    if path.is_relative_to(QUALITY):
        return path.relative_to(QUALITY).as_posix().removesuffix(".gz")
    return f"{path.parent.name}/{path.name}"


def _url(path: Path) -> str:
    if path.is_relative_to(QUALITY):
        key = _key(path)
        return f"{'http' if key.split('/', 1)[0].endswith('.test') else 'https'}://{key}"
    return f"http://{path.parent.name}.test/{path.name}"


def _read(path: Path) -> dict[str, Any]:
    body = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    page = read_document(body, _url(path), content_type="text/html", tokens=("SynapseBot",), label=True)
    return {
        "title": page.title,
        "text": page.text,
        "snippet_text": page.snippet_text,
        "links": [[link.url, sorted(link.rel), link.text] for link in page.links],
        "labels": {"kind": page.labels.kind, "links": [list(pair) for pair in page.labels.links]}
        if page.labels
        else None,
        "directives": asdict(page.directives),
    }


def test_the_quality_set_is_there() -> None:
    """The set holds the 16 docsite pages, the 6 odd pages and the 10 long ones, each with
    an expectation."""
    assert len(PAGES) == 32
    if not os.environ.get("SYNAPSECRAWL_WRITE_QUALITY"):
        assert sorted(json.loads(EXPECTED.read_text("utf-8"))) == sorted(_key(p) for p in PAGES)


@pytest.mark.parametrize("path", PAGES, ids=_key)
def test_extraction_of_the_quality_set_is_unchanged(path: Path) -> None:
    """Title, text, snippet text, links, their labels and directives of each page are those recorded."""
    got = _read(path)
    if os.environ.get("SYNAPSECRAWL_WRITE_QUALITY"):
        held = json.loads(EXPECTED.read_text("utf-8")) if EXPECTED.exists() else {}
        held[_key(path)] = got
        EXPECTED.write_text(json.dumps(held, indent=1, sort_keys=True, ensure_ascii=False) + "\n", "utf-8")
        return
    expected = json.loads(EXPECTED.read_text("utf-8"))[_key(path)]
    for field in ("title", "directives", "links", "labels", "snippet_text", "text"):
        assert got[field] == expected[field], f"{_key(path)}: {field} changed"
