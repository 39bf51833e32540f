"""WARC: what a capture costs on disk, how fast the writer thread writes, and `kb reextract` pages per second.

    python -m bench.warc_reextract [--sim 200] [--docs 300] [--profile synapsebot] [--caps]

The pages are bench.sim's generated pages (10-100 KB) and, when python3.11-doc is installed, the
pages of /usr/share/doc/python3.11/html/library. Each set is written twice through the crawl's writer
(``RotatingWarcFiles``, one request and one response record a page, headers as a crawl sends and
receives them): once with the bodies as a server sends them gzipped (Content-Encoding: gzip, the usual
case) and once uncompressed. Printed per set: the pages' average size, WARC bytes a page both ways,
pages a second written, pages a second re-extracted by ``synapsecrawl.warc.load`` (what
``kb reextract --warc`` runs) into a fresh SQLite knowledge base, wall time, read in this process and in
one worker process a core (``--processes auto``, the default; their start-up included), and pages a
second read by warcio alone (the share of the reading, against the extraction). ``--caps``: the WARC
bytes of one HTML page as large as each profile's size cap.
"""

from __future__ import annotations

import argparse
import gzip
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.extraction import _docs, _sim
from synapsecrawl.extract.pool import extract_processes
from synapsecrawl.kb import open_store
from synapsecrawl.profiles import load_profile
from synapsecrawl.warc.captures import read_captures
from synapsecrawl.warc.exchange import Exchange
from synapsecrawl.warc.load import load
from synapsecrawl.warc.writer import RotatingWarcFiles, WarcInfo

__all__ = ["main"]

_ASKED = (
    ("User-Agent", "Mozilla/5.0 (compatible; SynapseBot/1.0; +https://synapsecrawl.example/bot/)"),
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
    ("Accept-Language", "en"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
)


def _exchanges(pages: list[tuple[str, bytes]], packed: bool) -> list[Exchange]:
    now = datetime.now(UTC)
    made = []
    for url, body in pages:
        sent = gzip.compress(body) if packed else body
        headers = [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(sent)))]
        headers += [("Content-Encoding", "gzip")] if packed else []
        headers += [("ETag", f'"{hash(body) & 0xFFFFFFFF:x}"'), ("Date", "Sun, 06 Dec 2026 06:00:00 GMT")]
        made.append(Exchange(url, "GET", _ASKED, 200, tuple(headers), sent, now))
    return made


def _write(directory: Path, exchanges: list[Exchange]) -> tuple[float, int]:
    files = RotatingWarcFiles(directory, WarcInfo("synapsebot", _ASKED[0][1], "bench"), prefix="bench")
    start = time.perf_counter()
    for exchange in exchanges:
        files.write(exchange)
    files.close()
    return time.perf_counter() - start, sum(p.stat().st_size for p in files.finished)


def _at_caps(pages: list[tuple[str, bytes]]) -> None:
    """WARC bytes of one page of HTML text as large as each profile's size cap (the docs pages end to end)."""
    text = b"".join(body for _, body in pages)
    for name in ("serenereader", "snagabot", "synapsebot", "yottabot", "omniscientebot"):
        cap = load_profile(name).size_bytes
        body = (text * (cap // len(text) + 1))[:cap]  # repeats only past the corpus's own length
        with tempfile.TemporaryDirectory() as tmp:
            _, size = _write(Path(tmp), _exchanges([("http://caps.test/page.html", body)], packed=False))
        repeated = " (the corpus repeated)" if cap > len(text) else ""
        print(f"  {name}: a {cap / 1e6:g} MB page of HTML text{repeated}: {size / 1e6:.2f} MB of WARC")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sim", type=int, default=200, help="bench.sim pages (default 200)")
    parser.add_argument("--docs", type=int, default=300, help="Python docs library pages, at most (default 300)")
    parser.add_argument("--profile", default="synapsebot", help="the profile re-extraction reads under")
    parser.add_argument("--caps", action="store_true", help="and one page at each profile's size cap")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    profile = load_profile(args.profile)
    for name, pages in (("bench.sim", _sim(args.sim)), ("python docs", _docs(args.docs))):
        if not pages:
            continue
        size = sum(len(b) for _, b in pages) / len(pages)
        count = len(pages)
        with tempfile.TemporaryDirectory() as tmp:
            plain_time, plain_bytes = _write(Path(tmp) / "plain", _exchanges(pages, packed=False))
            packed_time, packed_bytes = _write(Path(tmp) / "gzip", _exchanges(pages, packed=True))
            start = time.perf_counter()
            read = sum(1 for path in sorted((Path(tmp) / "gzip").iterdir()) for _ in read_captures(path))
            reading = time.perf_counter() - start
            store = open_store(f"sqlite:///{Path(tmp) / 'kb.sqlite3'}")
            rates = []
            for processes in (0, extract_processes("auto")):
                start = time.perf_counter()
                report = load(sorted((Path(tmp) / "gzip").iterdir()), store, kb=f"bench{processes}",
                              profile_for=lambda _: profile, mode="reextract", processes=processes)  # fmt: skip
                rates.append((processes, report.stored, count / (time.perf_counter() - start)))
            store.close()
        print(
            f"{name}: {count} pages of {size / 1024:.1f} KB on average;"
            f" WARC {packed_bytes / count / 1024:.1f} KB a page sent gzipped,"
            f" {plain_bytes / count / 1024:.1f} KB sent uncompressed; written at"
            f" {count / packed_time:.0f} pages/s (gzipped) and {count / plain_time:.0f} pages/s (uncompressed)"
        )
        said = ", ".join(f"{rate:.1f} pages/s with {n or 'no'} worker processes ({n_kept} stored)"
                         for n, n_kept, rate in rates)  # fmt: skip
        print(f"  kb reextract ({args.profile}) of {count}: {said}")
        print(f"  reading the {read} captures alone (warcio): {read / reading:.0f} pages/s")
    if args.caps:
        _at_caps(_docs(1000) or _sim(1000))


if __name__ == "__main__":
    main()
