"""Helpers shared by test modules: running the commands, a finished crawl, request gaps, a PDF maker, the
knowledge base a crawl wrote, store-level pages (the docsite's), another application's database and a pickle
that runs code. Fixtures stay in conftest.py; no test module imports from another."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from synapsecrawl.kb.marker import META_TABLE
from synapsecrawl.kb.records import PageRecord, SearchHit
from synapsecrawl.kb.sqlite import SQLiteStore
from synapsecrawl.kb.store import Store
from tests import zygote

__all__ = [
    "OTHER_APP",
    "POSTGRES_ADMIN_URI",
    "REDIS_URL",
    "ROOT",
    "SQL_COUNTER",
    "WHEN",
    "CrawlRun",
    "PickleExploit",
    "bin_path",
    "docsite_records",
    "gaps",
    "listening",
    "make_pdf",
    "other_app",
    "record",
    "sha256",
    "sql_counts",
    "store_of",
    "strip_marker",
    "synapsecrawl",
    "wait_for",
    "write_urls",
]

ROOT = Path(__file__).resolve().parent.parent
POSTGRES_ADMIN_URI = os.environ.get("SYNAPSECRAWL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("SYNAPSECRAWL_TEST_REDIS", "redis://127.0.0.1:6379/0")
SQL_COUNTER = Path(__file__).resolve().parent / "sqlcount"  # first on PYTHONPATH, with SQL_COUNTS_DIR set


def sql_counts(folder: Path) -> dict[str, int]:
    """The SQL statements counted by tests/sqlcount in ``folder``, added up (and the files removed)."""
    counts = {"open": 0, "loop": 0, "other": 0}
    for each in folder.glob("*.json"):
        for key, value in json.loads(each.read_text()).items():
            counts[key] += value
        each.unlink()
    return counts


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


def kb_uri_of(store: Store) -> str:
    """The KB_URI of an open store (a PostgreSQL one's without its password: enough to name its index)."""
    return f"sqlite:///{store.path}" if isinstance(store, SQLiteStore) else str(getattr(store, "uri", ""))


def indexed_search(store: Store, query: str, kb: str | None = None, limit: int = 10) -> list[SearchHit]:
    """``query`` through the search index of ``store``'s KB, caught up first, as ``kb search`` runs it: the
    only search a KB has. The index goes under SEARCH_INDEX_DIR (the session's temporary directory)."""
    from synapsecrawl.search.index import search_kb

    return search_kb(store, kb_uri_of(store), query, kb, limit)


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


DOCSITE = ROOT / "tests" / "data" / "docsite"


@functools.cache
def docsite_records() -> tuple[PageRecord, ...]:
    """The 16 pages of the test documentation site, extracted once."""
    from synapsecrawl.extract.html import parse_html

    records = []
    for path in sorted(DOCSITE.glob("*.html")):
        url = f"http://docs.test/{path.name}"
        parsed = parse_html(path.read_bytes(), url, tokens=("SynapseBot",))
        records.append(record(url, parsed.text, title=parsed.title, snippet_text=parsed.snippet_text))
    return tuple(records)


# Another application's database: its own `pages`, a trigger, an index, and rows of its own.
OTHER_APP = """
CREATE TABLE pages (id INTEGER PRIMARY KEY, slug TEXT UNIQUE NOT NULL, body TEXT NOT NULL);
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE audit (page INTEGER, action TEXT);
CREATE TRIGGER pages_audit AFTER DELETE ON pages BEGIN INSERT INTO audit VALUES (old.id, 'delete'); END;
INSERT INTO pages (slug, body) VALUES ('home', 'Welcome'), ('about', 'About us');
INSERT INTO users (name) VALUES ('ada');
"""


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, to show it was left untouched."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def other_app(path: Path, script: str = OTHER_APP) -> Path:
    """A SQLite file at ``path`` written by ``script``: another application's database."""
    with sqlite3.connect(path) as db:
        db.executescript(script)
    db.close()
    return path


def strip_marker(path: Path) -> None:
    """Make a KB of the current code into what main wrote before markers: same tables, no marker."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA application_id = 0")
        db.execute(f"DROP TABLE IF EXISTS {META_TABLE}")
    db.close()


class PickleExploit:
    """Pickled, it makes the directory ``path`` when loaded: what anyone who can write to Redis could put there."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Callable[[str], None], tuple[str]]:
        return (os.mkdir, (str(self.path),))


@contextmanager
def listening(proc: Any, log: Path, pattern: re.Pattern[str], *, within: float) -> Iterator[str]:
    """The address a service started as ``proc`` (a Popen or a zygote fork) says it listens on (``pattern``'s first group, read from
    ``log`` within ``within`` seconds); afterwards the service is stopped with SIGINT, as Ctrl-C would, and
    must exit 0 without a traceback."""
    try:
        deadline = time.monotonic() + within
        while not (found := pattern.search(log.read_text(errors="replace"))):
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"{proc.args!r} did not listen within {within:g} s"
            time.sleep(0.05)
        yield found.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            returncode = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
    text = log.read_text(errors="replace")
    assert returncode == 0, text[-3000:]
    assert "Traceback" not in text, text[-3000:]
