"""The KB write alone: CPU ms a page for SQLite, one transaction a page against batches.

    python -m bench.kbwrite                    # 400 bench.sim pages, batches of 1 (put_page) and 64
    python -m bench.kbwrite --batches 1,8,64
    python -m bench.kbwrite --revisit          # + a re-read's rewrite, without and with the revisit rule

The pages are bench.sim's generated pages (about 33 KB of text each), read by
``read_document`` as the extraction worker reads them, then written in-process,
so the figure is the writer thread's CPU without the crawl around it (the KB keeps no full-text
tables since the search index answers every search: ``--parts``, which left them out, went with them),
and the file's bytes a page once closed (its write-ahead log checkpointed into it).
``--revisit`` times a re-read's
write (every page written again, its text unchanged) without and with SnagaBot's revisit rule,
which reads the copies it replaces in the same transaction (synapsecrawl.kb.revisit).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.sim import _Pages, make_hosts
from synapsecrawl.extract.read import read_document
from synapsecrawl.kb.records import PageRecord, utcnow
from synapsecrawl.kb.revisit import DAY, RevisitRule, rule_of
from synapsecrawl.kb.sqlite import SQLiteStore
from synapsecrawl.profiles import load_profile

__all__ = ["main", "sim_pages"]


def sim_pages(hosts: int, per_host: int) -> list[PageRecord]:
    """bench.sim's generated pages as the extraction worker reads them, ready for a store."""
    specs = make_hosts(hosts, per_host, [0.2])
    made = _Pages(8, per_host, [h.name for h in specs])
    pages = []
    for host in specs:
        for n in range(per_host):
            url = f"http://{host.name}/articles/{n}.html"
            doc = read_document(
                made.page(host, n),
                url,
                content_type="text/html; charset=utf-8",
                tokens=("synapsebot",),
                encoding="utf-8",
            )
            pages.append(
                PageRecord(
                    kb="bench",
                    url=url,
                    title=doc.title,
                    text=doc.text,
                    snippet_text=doc.snippet_text,
                    content_type="text/html",
                    status=200,
                    fetched_at=utcnow(),
                    site=host.name,
                )
            )
    return pages


def _write(pages: list[PageRecord], batch: int, *, revisit: RevisitRule | None = None, again: bool = False) -> float:
    """CPU seconds a page to write ``pages`` in batches of ``batch`` into a new KB (``again``: into one that
    holds them already, the write timed being the second), timed by ``revisit`` when given."""
    with tempfile.TemporaryDirectory(prefix="bench-kb-") as tmp:
        store = SQLiteStore(Path(tmp) / "kb.sqlite3")
        try:
            if again:
                store.put_pages(pages, revisit)
            started = time.process_time()
            for at in range(0, len(pages), batch):
                store.put_pages(pages[at : at + batch], revisit)
            return (time.process_time() - started) / len(pages)
        finally:
            store.close()


def _bytes(pages: list[PageRecord]) -> float:
    """Bytes a page of a new KB file holding ``pages``, once closed (the last connection's close checkpoints
    the write-ahead log into the file and removes it)."""
    with tempfile.TemporaryDirectory(prefix="bench-kb-") as tmp:
        path = Path(tmp) / "kb.sqlite3"
        store = SQLiteStore(path)
        store.put_pages(pages)
        store.close()
        return path.stat().st_size / len(pages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=20, help="per host")
    parser.add_argument("--batches", default="1,64")
    parser.add_argument("--revisit", action="store_true")
    args = parser.parse_args()
    pages = sim_pages(args.hosts, args.pages)
    chars = sum(len(p.text) for p in pages) / len(pages)
    print(f"KB write (SQLite), {len(pages)} pages of {chars:.0f} chars of text")
    for batch in (int(b) for b in args.batches.split(",")):
        print(f"  batches of {batch:3d}: {_write(pages, batch) * 1000:5.2f} ms CPU/page")
    print(f"  file: {_bytes(pages):,.0f} bytes/page")
    if args.revisit:
        rule = rule_of(load_profile("snagabot").web, 7 * DAY)
        for batch in (int(b) for b in args.batches.split(",")):
            plain = min(_write(pages, batch, again=True) for _ in range(3))
            timed = min(_write(pages, batch, again=True, revisit=rule) for _ in range(3))
            print(
                f"  re-read, batches of {batch:3d}: {plain * 1000:5.2f} ms CPU/page, with the revisit rule"
                f" {timed * 1000:5.2f} ({timed / plain:.2f}x)"
            )


if __name__ == "__main__":
    main()
