"""Search through the ranked index on ~10,800 pages of real documentation: latency over HTTP, the floor, quality.

    apt-get install -y python3.11-doc postgresql-doc-15 python-django-doc python-scipy-doc python-pandas-doc
    python -m bench.search_index                          # SQLite and PostgreSQL, every figure
    python -m bench.search_index --backends sqlite --rounds 1 --limit-pages 1500   # a quick look
    python -m bench.search_index --copies 10 --keep --fill-only   # fill 100,000 pages once, while busy
    python -m bench.search_index --copies 10 --keep               # measure them later, on a quiet machine

The pages are Debian's packaged HTML docs of Python 3.11, PostgreSQL 15, Django, SciPy and pandas
(every page but the generated indexes and search pages), read once by a plain lxml reader (the main
element's text, a paragraph per block element) and kept in ``--workdir`` as JSON lines, then written to
the KB through the store API, 100 pages a transaction, as a crawl's batches are. Not the crawler's own
extraction (``extract.html``): it costs about 74 ms of CPU a page, an hour for these pages on a 2-core
machine shared with other work; what is measured here is search, not extraction.

Measured, in one run, per back-end:

- ``floor``: tantivy's own ranked top-10 for the query's words (a pure disjunction over title and
  text, ``count=False``), in this process: what no search of ours can beat;
- ``index``: ``SearchIndex.search`` (both stages, snippets, the store's rows), in this process;
- ``http-1`` and ``http-8``: GET /api/search against ``synapsecrawl serve`` from 1 and from 8 threads,
  each keeping its connection alive (as httpx and the MCP SDK do); again against ``serve --workers 2``;

and quality, MRR@10 and recall@10 on both question sets (bench/data/search_questions.jsonl, the Python
docs, answers under python/; bench/data/search_questions_other.jsonl, the other four) for the index
and a plain BM25 (bm25s, title + text, with and without a stemmer). The store's own search it was measured
against until the KB's full-text tables were dropped is gone (its figures: docs/search.md).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.common import ROOT, machine
from bench.search_eval import Question, _drop_schema, _fresh_schema, bm25, evaluate, load_questions
from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import PageRecord

__all__ = ["DOC_SETS", "main"]

DOC_SETS = {
    "python": Path("/usr/share/doc/python3.11/html"),
    "postgresql": Path("/usr/share/doc/postgresql-doc-15/html"),
    "django": Path("/usr/share/doc/python-django-doc/html"),
    "scipy": Path("/usr/share/doc/python-scipy-doc/html"),
    "pandas": Path("/usr/share/doc/python-pandas-doc/html"),
}
KB = "docs"
OTHER_QUESTIONS = ROOT / "bench" / "data" / "search_questions_other.jsonl"
_SKIPPED = re.compile(r"(^|/)(genindex.*|search|py-modindex|bookindex)\.html$")
_WHEN = datetime(2026, 12, 1, tzinfo=UTC)
_SYNAPSECRAWL = str(Path(sys.executable).parent / "synapsecrawl")


_BLOCKS = frozenset({
    "p", "li", "pre", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "caption", "blockquote", "div",
    "section", "table", "tr", "dl", "ul", "ol",
})  # fmt: skip
_DROPPED = frozenset(["script", "style", "nav", "header", "footer", "noscript", "form"])


def _parse(item: tuple[str, str]) -> dict[str, Any] | None:
    """Title and text of one HTML file: the main element's text, blank lines between blocks."""
    from lxml import html

    url, path = item
    try:
        tree = html.fromstring(Path(path).read_bytes())
    except (ValueError, OSError):
        return None
    title = " ".join(" ".join(tree.xpath("//title//text()")).split())
    main = next(
        (
            found[0]
            for xpath in ('//*[@role="main"]', '//div[@class="body"]', "//main", "//article", "//body")
            if (found := tree.xpath(xpath))
        ),
        tree,
    )
    parts: list[str] = []

    def walk(element: Any) -> None:
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag not in _DROPPED:
            block = tag in _BLOCKS
            parts.append("\n\n" if block else "")
            parts.append(element.text or "")
            for child in element:
                walk(child)
            parts.append("\n\n" if block else "")
        parts.append(element.tail or "")

    walk(main)
    paragraphs = [" ".join(block.split()) for block in "".join(parts).split("\n\n")]
    text = "\n\n".join(p for p in paragraphs if p)
    return {"url": url, "title": title, "text": text, "snippet_text": ""} if text else None


def doc_pages(workdir: Path, limit: int | None) -> list[PageRecord]:
    """The pages of every doc set, extracted once (two processes) and cached in ``workdir``."""
    cache = workdir / "docs-pages.jsonl"
    if not cache.exists():
        files = [
            (f"http://docs.test/{name}/{path.relative_to(root).as_posix()}", str(path))
            for name, root in DOC_SETS.items()
            for path in sorted(root.rglob("*.html"))
            if not _SKIPPED.search(path.relative_to(root).as_posix())
        ]
        if not files:
            raise SystemExit("search_index: no docs found; install the packages named in the module docstring")
        started = time.perf_counter()
        rows = [row for row in map(_parse, files) if row is not None]
        workdir.mkdir(parents=True, exist_ok=True)
        cache.write_text("".join(json.dumps(row) + "\n" for row in rows))
        took = time.perf_counter() - started
        print(f"extracted {len(rows)} of {len(files)} pages in {took:.0f} s", file=sys.stderr)
    pages = [
        PageRecord(KB, row["url"], row["title"], row["text"], "text/html", 200, _WHEN, snippet_text=row["snippet_text"])
        for row in map(json.loads, cache.read_text().splitlines())
    ]
    return pages[:limit] if limit else pages


def questions() -> dict[str, list[Question]]:
    """Both sets, the first's answers under python/ as the pages here are."""
    python = load_questions()
    for question in python:
        question["answers"] = [f"python/{answer}" for answer in question["answers"]]
    return {"python": python, "other": load_questions(OTHER_QUESTIONS)}


def _figures(latencies: list[float], wall: float | None = None) -> dict[str, float]:
    ordered = sorted(latencies)
    figures = {
        "queries": len(ordered),
        "p50_ms": round(1000 * statistics.median(ordered), 2),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 2),
    }
    if wall:
        figures["queries_per_s"] = round(len(ordered) / wall, 1)
    return figures


def _timed(run: Callable[[str], object], queries: list[str]) -> dict[str, float]:
    for query in queries[:5]:
        run(query)  # warm
    latencies = []
    started, cpu = time.perf_counter(), time.process_time()
    for query in queries:
        t = time.perf_counter()
        run(query)
        latencies.append(time.perf_counter() - t)
    figures = _figures(latencies, time.perf_counter() - started)
    cpu_ms = round(1000 * (time.process_time() - cpu) / len(queries), 2)
    return {**figures, "cpu_ms_per_query": cpu_ms, "load_1min": round(os.getloadavg()[0], 1)}


def floor(index: Any) -> Callable[[str], object]:
    """tantivy's own top-10 of the query's words over title and text: no second stage, no store."""
    from tantivy import Occur, Query

    from synapsecrawl.kb.search import search_terms
    from synapsecrawl.search import index as module

    searcher = index._reader().pages.searcher()

    def run(query: str) -> object:
        terms = {stem for word in search_terms(query) for stem in module._stems(word)}
        fields = ("title", "body")
        clauses = [(Occur.Should, Query.term_query(module.SCHEMA, f, term)) for term in terms for f in fields]
        return searcher.search(Query.boolean_query(clauses), 10, count=False).hits

    return run


def _tree_cpu(root: int) -> float:
    """CPU seconds (user and system) used so far by process ``root`` and its children (from /proc)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat.parent.name) == root or int(fields[1]) == root:  # fields[1]: the parent's pid
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _search_cpu(root: int) -> dict[int, float]:
    """CPU seconds used so far by each process of ``root`` that runs searches: its spawned search processes
    (``serve --workers N``, N > 1), or else ``root`` and the workers it forked (the SO_REUSEPORT model)."""
    tick = os.sysconf("SC_CLK_TCK")
    spawned: dict[int, float] = {}
    forked: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        pid, cpu = int(stat.parent.name), (int(fields[11]) + int(fields[12])) / tick
        if pid == root or (int(fields[1]) == root and b"resource_tracker" not in command):
            forked[pid] = cpu
        if int(fields[1]) == root and b"spawn_main" in command:
            spawned[pid] = cpu
    return spawned or forked


def bench_http(uri: str, queries: list[str], clients: int, workdir: Path, workers: int = 1) -> dict[str, Any]:
    """GET /api/search from ``clients`` threads, each on one kept-alive connection, all queries split among
    them, against ``serve --workers WORKERS``; also the service's CPU time per query (all its processes),
    a figure the machine's other load inflates less than latency, and the busiest searching process's share
    of the searching processes' CPU (1/WORKERS when balanced)."""
    log = workdir / f"serve-{clients}-{workers}.log"
    env = {k: v for k, v in os.environ.items() if k != "SEARCH_TOKEN"}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [_SYNAPSECRAWL, "serve", "--uri", uri, "--port", "0", "--workers", str(workers)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=workdir,
        )
    try:
        deadline = time.monotonic() + 1800
        while not (found := re.search(r"listening on http://([\d.]+):(\d+)", log.read_text())):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"search_index: serve did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)
        host, port = found.group(1), int(found.group(2))
        latencies: list[float] = []
        lock = threading.Lock()

        def client(share: list[str]) -> None:
            conn = http.client.HTTPConnection(host, port, timeout=120)
            mine = []
            for n, query in enumerate(share):
                t = time.perf_counter()
                conn.request("GET", f"/api/search?{urllib.parse.urlencode({'query': query, 'kb': KB})}")
                response = conn.getresponse()
                json.loads(response.read())
                if response.status != 200:
                    raise SystemExit(f"search_index: {response.status} for {query!r}")
                if n >= 2:  # the first two warm the connection and the caches
                    mine.append(time.perf_counter() - t)
            conn.close()
            with lock:
                latencies.extend(mine)

        shares = [queries[n::clients] + queries[:2] for n in range(clients)]
        threads = [threading.Thread(target=client, args=(share,)) for share in shares]
        cpu, searching = _tree_cpu(proc.pid), _search_cpu(proc.pid)
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall, cpu = time.perf_counter() - started, _tree_cpu(proc.pid) - cpu
        spent = {pid: used - searching.get(pid, 0.0) for pid, used in _search_cpu(proc.pid).items()}
        return {
            **_figures(latencies, wall),
            "server_cpu_ms_per_query": round(1000 * cpu / len(latencies), 2),
            "search_process_cpu_s": sorted((round(used, 2) for used in spent.values()), reverse=True),
            "busiest_search_process_share": round(max(spent.values()) / (sum(spent.values()) or 1.0), 2),
            "load_1min": round(os.getloadavg()[0], 1),
            "clients": clients,
            "workers": workers,
        }
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)


def quality(index: Any, pages: list[PageRecord], sets: dict[str, list[Question]]) -> dict[str, Any]:
    def through_index(query: str) -> list[tuple[str, str]]:
        return [(h.url, h.passages[0].text if h.passages else "") for h in index.search(query, KB, limit=10) or []]

    systems = {
        "index": through_index,
        "bm25s": bm25(pages, stem=False),
        "bm25s+stemmer": bm25(pages, stem=True),
    }
    report: dict[str, Any] = {}
    for name, rank in systems.items():
        for set_name, asked in sets.items():
            figures = evaluate(asked, rank)
            report[f"{name} / {set_name}"] = {k: v for k, v in figures.items() if k != "misses"} | {
                "misses": figures["misses"][:40]
            }
            print(
                f"quality {name:<22} {set_name:<7} MRR@10 {figures['all']['mrr@10']:.3f} "
                f"recall@10 {figures['all']['recall@10']:.3f}",
                flush=True,
            )
    return report


def bench_backend(uri: str, pages: list[PageRecord], sets: dict[str, list[Question]], args: Any) -> dict[str, Any]:
    """Fill a KB at ``uri``, build its index and measure it (in this process, then over HTTP)."""
    from synapsecrawl.search.index import SearchIndex, index_path

    asked = [q["query"] for q in sets["python"] + sets["other"]]
    figures: dict[str, Any] = {}
    store = open_store(uri)
    held = sum(count for kb, count, _ in store.kbs() if kb == KB)
    started = time.perf_counter()
    if held != len(pages):  # --keep finds the KB of an earlier run full, or it is filled now
        for n in range(0, len(pages), 100):
            store.put_pages(pages[n : n + 100])
    figures["fill_s"] = round(time.perf_counter() - started, 1)
    index = SearchIndex(store, index_path(uri))
    started = time.perf_counter()
    index.catch_up_once()
    figures["index_build_s"] = round(time.perf_counter() - started, 1)
    print(f"filled in {figures['fill_s']} s, indexed in {figures['index_build_s']} s", flush=True)
    if args.fill_only:
        index.close()
        store.close()
        return figures
    figures["floor"] = _timed(floor(index), asked * args.rounds)
    figures["index"] = _timed(lambda q: index.search(q, KB, limit=10), asked * args.rounds)
    print(f"floor {figures['floor']}\n  index {figures['index']}", flush=True)
    if uri.startswith("sqlite") and not args.skip_quality:
        figures["quality"] = quality(index, pages, sets)
    index.close()
    store.close()
    for workers in (1, 2):
        for clients in (1, 8):
            name = f"http-{clients}" + (f"-workers-{workers}" if workers > 1 else "")
            figures[name] = bench_http(uri, asked * args.rounds, clients, args.workdir, workers)
            print(f"http {clients} client(s), {workers} worker(s): {figures[name]}", flush=True)
    one, eight, eight_two = figures["http-1"], figures["http-8"], figures["http-8-workers-2"]
    figures["ratios"] = {
        "http-1 p50 / floor p50": round(one["p50_ms"] / figures["floor"]["p50_ms"], 1),
        "http-8 q/s / http-1 q/s": round(eight["queries_per_s"] / one["queries_per_s"], 2),
        "http-8 (2 workers) q/s / http-1 q/s": round(eight_two["queries_per_s"] / one["queries_per_s"], 2),
    }
    print(f"ratios {figures['ratios']}", flush=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "synapsecrawl-search-index")
    parser.add_argument("--limit-pages", type=int, default=None, help="only the first N pages (a quick look)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of all the questions, over HTTP")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument(
        "--copies", type=int, default=1, help="the pages N times, under hosts copyK.docs.test (latency at scale)"
    )
    parser.add_argument(
        "--postgres", default=os.environ.get("SYNAPSECRAWL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the KBs and indexes for the next run with --keep, which measures them without refilling",
    )
    parser.add_argument("--fill-only", action="store_true", help="fill and index, measure nothing (with --keep)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    if not args.keep:
        shutil.rmtree(args.workdir / "indexes", ignore_errors=True)  # each run builds its indexes anew
    os.environ["SEARCH_INDEX_DIR"] = str(args.workdir / "indexes")
    pages = doc_pages(args.workdir, args.limit_pages)
    pages += [
        replace(page, url=page.url.replace("//docs.test/", f"//copy{n}.docs.test/"))
        for n in range(1, args.copies)
        for page in pages
    ]
    args.skip_quality = args.skip_quality or args.copies > 1  # copies would answer as the page does
    sets = questions()
    report: dict[str, Any] = {"machine": machine(), "pages": len(pages), "results": {}}
    print(f"{len(pages)} pages, {sum(map(len, sets.values()))} questions", flush=True)
    for backend in args.backends.split(","):
        print(f"-- {backend}", flush=True)
        if backend == "sqlite":
            path = args.workdir / f"kb-{len(pages)}.sqlite3"
            for suffix in ("", "-wal", "-shm") if not args.keep else ():
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            report["results"][backend] = bench_backend(f"sqlite:///{path}", pages, sets, args)
        else:
            try:
                uri = _fresh_schema(args.postgres, keep=args.keep)
                report["results"][backend] = bench_backend(uri, pages, sets, args)
            finally:
                if not args.keep:
                    _drop_schema(args.postgres)
        if args.json:
            args.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
