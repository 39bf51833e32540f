"""Search latency and throughput on a 10,000-page knowledge base: queries/s, p50 and p95.

    python -m bench.search_eval                 # first: crawls the Python 3.11 docs (499 pages)
    python -m bench.search_latency              # SQLite and PostgreSQL, the index and the HTTP service
    python -m bench.search_latency --pages 10000 --clients 4 --backends sqlite

The KB is the crawled docs replicated under other hosts (``http://copyN.docs.test/...``)
up to ``--pages``, written through the store API. The queries are the 75 of
bench/data/search_questions.jsonl, in order, round after round. Measured:

- ``index``: ``SearchIndex.search(query, kb, limit=10)`` in this process, one at a time (the index built
  first; ``store`` in reports made before the KB's own full-text search was dropped);
- ``http``: GET /api/search against ``synapsecrawl serve`` (a subprocess on
  loopback), from ``--clients`` threads at once, each waiting for its answer.

Latencies are wall-clock per query; queries/s is queries over the wall time of the run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common import machine
from bench.search_eval import KB, _drop_schema, _fresh_schema, crawled_pages, load_questions
from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.store import Store

__all__ = ["main"]


def replicate(pages: list[PageRecord], count: int) -> list[PageRecord]:
    """``count`` pages: copies of ``pages`` under hosts copy0.docs.test, copy1.docs.test, ..."""
    out: list[PageRecord] = []
    copy = 0
    while len(out) < count:
        for page in pages:
            path = re.sub(r"^https?://[^/]+/", "", page.url)
            out.append(replace(page, url=f"http://copy{copy}.docs.test/{path}"))
            if len(out) == count:
                break
        copy += 1
    return out


def _figures(latencies: list[float], wall: float) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "queries": len(ordered),
        "queries_per_s": round(len(ordered) / wall, 1),
        "p50_ms": round(1000 * statistics.median(ordered), 1),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1),
        "max_ms": round(1000 * ordered[-1], 1),
    }


def bench_index(store: Store, uri: str, queries: list[str], rounds: int) -> dict[str, float]:
    from synapsecrawl.search.index import SearchIndex, index_path

    index = SearchIndex(store, index_path(uri))
    try:
        index.catch_up_once()
        for query in queries[:5]:
            index.search(query, KB)  # warm the caches
        latencies = []
        started = time.perf_counter()
        for _ in range(rounds):
            for query in queries:
                t = time.perf_counter()
                index.search(query, KB, limit=10)
                latencies.append(time.perf_counter() - t)
        return _figures(latencies, time.perf_counter() - started)
    finally:
        index.close()


def bench_http(uri: str, queries: list[str], rounds: int, clients: int, workdir: Path) -> dict[str, float]:
    log = workdir / "serve.log"
    env = {k: v for k, v in os.environ.items() if k != "SEARCH_TOKEN"}
    synapsecrawl = str(Path(sys.executable).parent / "synapsecrawl")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [synapsecrawl, "serve", "--uri", uri, "--port", "0"], stdout=out, stderr=subprocess.STDOUT, env=env
        )
    try:
        deadline = time.monotonic() + 60
        while not (found := re.search(r"listening on (http://\S+)", log.read_text())):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"search_latency: serve did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        base = found.group(1)

        def ask(query: str) -> float:
            t = time.perf_counter()
            url = f"{base}/api/search?{urllib.parse.urlencode({'query': query, 'kb': KB})}"
            with urllib.request.urlopen(url, timeout=120) as response:
                json.loads(response.read())
            return time.perf_counter() - t

        for query in queries[:5]:
            ask(query)
        work = [q for _ in range(rounds) for q in queries]
        latencies: list[float] = []
        lock = threading.Lock()

        def client(share: list[str]) -> None:
            mine = [ask(query) for query in share]
            with lock:
                latencies.extend(mine)

        threads = [threading.Thread(target=client, args=(work[n::clients],)) for n in range(clients)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        figures = _figures(latencies, time.perf_counter() - started)
        return {**figures, "clients": clients}
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "synapsecrawl-search-eval")
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument(
        "--postgres", default=os.environ.get("SYNAPSECRAWL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="reuse the SQLite KB of a run of the same size")
    args = parser.parse_args(argv)
    crawl = args.workdir / "crawl.sqlite3"
    if not crawl.exists():
        raise SystemExit("search_latency: run python -m bench.search_eval first (it crawls the docs)")
    pages = replicate(crawled_pages(f"sqlite:///{crawl}"), args.pages)
    queries = [q["query"] for q in load_questions()]
    report: dict[str, Any] = {"machine": machine(), "pages": len(pages), "queries": len(queries), "results": {}}
    for backend in args.backends.split(","):
        if backend == "sqlite":
            path = args.workdir / f"latency-{args.pages}.sqlite3"
            kept = args.keep and path.exists()
            for suffix in ("", "-wal", "-shm") if not kept else ():
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            uri = f"sqlite:///{path}"
        else:
            kept = False
            uri = _fresh_schema(args.postgres)
        try:
            store = open_store(uri)
            started = time.perf_counter()
            for page in pages if not kept else ():
                store.put_page(page)
            filled = time.perf_counter() - started
            print(f"{backend}: {len(pages)} pages written in {filled:.0f} s", file=sys.stderr, flush=True)
            figures = {"fill_s": round(filled), "index": bench_index(store, uri, queries, args.rounds)}
            store.close()
            figures["http"] = bench_http(uri, queries, args.rounds, args.clients, args.workdir)
            report["results"][backend] = figures
            print(f"{backend}: index {figures['index']}  http {figures['http']}", flush=True)
        finally:
            if backend != "sqlite":
                _drop_schema(args.postgres)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
