"""Extraction alone: CPU ms a page for ``read_document``, and where it goes.

    python -m bench.extraction                         # 200 bench.sim pages, then the Python docs
    python -m bench.extraction --cprofile --top 25     # and the functions that cost the most

The pages are bench.sim's generated pages (10-100 KB) and, when python3.11-doc is installed, every
page of /usr/share/doc/python3.11/html/library, read in-process as the extraction worker reads them
(no scrubbing, no labels unless ``--label``), so the figure is the worker's CPU without the crawl.
Each set is read once to warm up (imports, caches), then timed with process CPU time.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from pathlib import Path

from bench.sim import _Pages, make_hosts
from synapsecrawl.extract.read import read_document

__all__ = ["main"]

DOCS = Path("/usr/share/doc/python3.11/html/library")


def _sim(count: int) -> list[tuple[str, bytes]]:
    specs = make_hosts(max(1, count // 10), 10, [0.2])
    made = _Pages(8, 10, [h.name for h in specs])
    return [(f"http://{h.name}/articles/{n}.html", made.page(h, n)) for h in specs for n in range(10)][:count]


def _docs(count: int) -> list[tuple[str, bytes]]:
    paths = sorted(DOCS.glob("*.html"))[:count] if DOCS.is_dir() else []
    return [(f"http://docs.test/library/{p.name}", p.read_bytes()) for p in paths]


def _read_all(pages: list[tuple[str, bytes]], label: bool) -> None:
    for url, body in pages:
        read_document(body, url, content_type="text/html; charset=utf-8", tokens=("synapsebot",), label=label)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sim", type=int, default=200, help="bench.sim pages (default 200)")
    parser.add_argument("--docs", type=int, default=400, help="Python docs library pages, at most (default 400)")
    parser.add_argument("--label", action="store_true", help="read OMN-LABELS too")
    parser.add_argument("--cprofile", action="store_true")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    for name, pages in (("bench.sim", _sim(args.sim)), ("python docs", _docs(args.docs))):
        if not pages:
            continue
        _read_all(pages, args.label)
        profile = cProfile.Profile() if args.cprofile else None
        start = time.process_time()
        if profile is not None:
            profile.enable()
        _read_all(pages, args.label)
        if profile is not None:
            profile.disable()
        spent = time.process_time() - start
        kb = sum(len(b) for _, b in pages) / len(pages) / 1024
        print(f"{name}: {len(pages)} pages of {kb:.0f} KB on average, {spent / len(pages) * 1000:.1f} ms CPU a page")
        if profile is not None:
            pstats.Stats(profile).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
