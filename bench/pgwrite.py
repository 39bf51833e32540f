"""PostgreSQL under N writers: pages a second into one KB, and the server's CPU and bytes per page.

    python -m bench.pgwrite                                  # 1, 2, 4, 8 writers, 400 pages each, batches of 8
    python -m bench.pgwrite --writers 1,4 --out bench/results/pgwrite-after.json

Each writer is a process as a crawl worker's KB gateway is: one ``PostgresStore``
and the ``BatchWriter`` thread of middlewares/engine/kb.py, batches of
``KB_BATCH_PAGES`` (8). It submits its pages back to back (bench.sim's generated
pages, read by ``read_document``, about 33 KB of text and 60 passages each, new
URLs for every writer), so the figure is the KB's ceiling, not a crawl's pace.
All writers start at once (a barrier) into a fresh schema of the shared server
(``SYNAPSECRAWL_TEST_POSTGRES``).

Reported per run: pages a second (all pages over first start to last finish),
the server's CPU per page (each writer's backend process, ``/proc/<pid>/stat``
user + system, read before and after by the writer itself, from
``pg_backend_pid()``: other clients of the shared server are not in it; the
walwriter and checkpointer are not either), the writers' own CPU per page, and
bytes per page (``pg_total_relation_size`` of the schema's tables and indexes).
The KB keeps no full-text columns since the search index answers every search; reports made before hold a
``fts`` key (``--without-fts`` then left its two tsvector columns empty).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import queue
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common import machine
from bench.kbwrite import sim_pages
from synapsecrawl.kb.batch import BatchWriter
from synapsecrawl.kb.postgres import PostgresStore
from synapsecrawl.kb.records import PageRecord

__all__ = ["main", "run_pgwrite"]

POSTGRES = os.environ.get("SYNAPSECRAWL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
_TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (``/proc/<pid>/stat``; 0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime: fields 14 and 15 of stat(5)


def schema_uri(tag: str = "bench") -> tuple[str, str]:
    """A new schema of the benchmark's own and a KB URI whose tables go there."""
    import psycopg

    name = f"{tag}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA "{name}"')
    sep = "&" if "?" in POSTGRES else "?"
    return name, f"{POSTGRES}{sep}options=-csearch_path%3D{name}"


def drop_schema(name: str) -> None:
    import psycopg

    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def schema_bytes(name: str) -> int:
    """Bytes on disk of the schema's tables with their indexes and TOAST."""
    import psycopg

    with psycopg.connect(POSTGRES, autocommit=True) as admin:
        row = admin.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
            (name,),
        ).fetchone()
    return int(row[0]) if row else 0


def _writer(
    uri: str, pages: list[PageRecord], batch: int, barrier: Any, out: Any
) -> None:  # pragma: no cover - a child process
    store = PostgresStore(uri)
    backend = int(store._conn.execute("SELECT pg_backend_pid()").fetchone()[0])  # type: ignore[index]
    writer: BatchWriter[PageRecord] = BatchWriter(store.put_pages, max_items=batch, max_wait=0.25)
    barrier.wait()
    started, cpu, pg = time.monotonic(), time.process_time(), proc_cpu(backend)
    for done in [writer.submit(page) for page in pages]:
        done.result()
    ended = time.monotonic()
    out.put(
        {
            "started": started,
            "ended": ended,
            "client_cpu": time.process_time() - cpu,
            "pg_cpu": proc_cpu(backend) - pg,
            "batches": writer.batches,
        }
    )
    writer.close()
    store.close()


def _one(pool: list[PageRecord], writers: int, per_writer: int, batch: int) -> dict[str, Any]:
    schema, uri = schema_uri()
    try:
        PostgresStore(uri).close()  # the tables, made once before the writers start
        ctx = multiprocessing.get_context("fork")
        barrier, out = ctx.Barrier(writers), ctx.Queue()
        procs = []
        for w in range(writers):
            pages = [
                replace(pool[(w * per_writer + n) % len(pool)], url=f"http://writer-{w}.test/articles/{n}.html")
                for n in range(per_writer)
            ]
            procs.append(ctx.Process(target=_writer, args=(uri, pages, batch, barrier, out)))
        for proc in procs:
            proc.start()
        results: list[dict[str, Any]] = []
        while len(results) < writers:
            try:
                results.append(out.get(timeout=1.0))
            except queue.Empty:
                if any(proc.exitcode not in (None, 0) for proc in procs):
                    raise RuntimeError("a writer failed (its traceback is above)") from None
        for proc in procs:
            proc.join()
        size = schema_bytes(schema)
    finally:
        drop_schema(schema)
    pages_total = writers * per_writer
    span = max(r["ended"] for r in results) - min(r["started"] for r in results)
    return {
        "writers": writers,
        "pages": pages_total,
        "batch": batch,
        "seconds": round(span, 2),
        "pages_per_second": round(pages_total / span, 1),
        "pg_cpu_ms_per_page": round(1000 * sum(r["pg_cpu"] for r in results) / pages_total, 2),
        "client_cpu_ms_per_page": round(1000 * sum(r["client_cpu"] for r in results) / pages_total, 2),
        "transactions": sum(r["batches"] for r in results),
        "bytes_per_page": round(size / pages_total),
        "exit_codes": [proc.exitcode for proc in procs],
        "load": round(os.getloadavg()[0], 2),
    }


def run_pgwrite(writers: list[int], per_writer: int, batch: int, *, pool: int = 100) -> dict[str, Any]:
    pages = sim_pages(max(1, pool // 20), 20)
    result: dict[str, Any] = {
        "per_writer": per_writer,
        "batch": batch,
        "text_chars_per_page": round(sum(len(p.text) for p in pages) / len(pages)),
        "machine": machine(),
        "runs": [],
    }
    for count in writers:
        run = _one(pages, count, per_writer, batch)
        result["runs"].append(run)
        print(json.dumps(run), flush=True)
    return result


def print_result(result: dict[str, Any]) -> None:
    print(
        f"\nPostgreSQL KB write: {result['per_writer']} pages a writer, batches of {result['batch']}, "
        f"{result['text_chars_per_page']} chars of text a page ({result['machine'].get('cpus', '?')} CPUs)"
    )
    print("writers  pages/s  PG CPU ms/page  writer CPU ms/page  bytes/page  transactions  load")
    for run in result["runs"]:
        print(
            f"{run['writers']:7d}  {run['pages_per_second']:7.1f}  {run['pg_cpu_ms_per_page']:14.2f}  "
            f"{run['client_cpu_ms_per_page']:18.2f}  {run['bytes_per_page']:10d}  {run['transactions']:12d}  "
            f"{run['load']:4.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", default="1,2,4,8")
    parser.add_argument("--pages", type=int, default=400, help="pages each writer writes")
    parser.add_argument("--batch", type=int, default=8, help="pages a transaction at most (KB_BATCH_PAGES)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    result = run_pgwrite([int(w) for w in args.writers.split(",")], args.pages, args.batch)
    print_result(result)
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
