"""Ranking quality of `kb search` on documentation nobody here wrote: the Python 3.11 docs.

    apt-get install -y python3.11-doc        # Debian's HTML docs, /usr/share/doc/python3.11/html
    python -m bench.search_eval               # crawl, then evaluate on SQLite and PostgreSQL
    python -m bench.search_eval --reuse       # evaluate again on the pages crawled last time

The docs are served on loopback (http.server) and crawled as a user crawls them
(``scrapy crawl page``, SynapseBot, every page but the generated indexes and the
search page). Each back-end's KB is then filled with the crawled pages through
the store API (``put_page``), so the passages are cut by the code under test.
The questions (bench/data/search_questions.jsonl) name their answer pages; each
names the docs' own index entry (genindex-all.html) that points there, and that
is checked before anything is measured.

Reported: MRR@10 and recall@10, per kind of question (``index``: the index
term; ``natural``: a question in words), for our search on each back-end and a
plain BM25 (the bm25s library over title + page text, same pages), with and
without a stemmer. ``passage`` is, of the questions whose answer page ranks
first, the share whose first shown passage names the index entry's identifier.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.common import ROOT, scrapy_bin
from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.store import Store

__all__ = ["Question", "evaluate", "load_questions", "main"]

DOCS = Path("/usr/share/doc/python3.11/html")
QUESTIONS = ROOT / "bench" / "data" / "search_questions.jsonl"
KB = "pydocs"
K = 10
_SKIPPED = re.compile(r"^(genindex.*|search)\.html$")
_MARKS = re.compile("[«»]")


class Question(dict[str, Any]):
    """One line of the question set: kind, query, answers (paths), index_entry."""

    @property
    def identifier(self) -> str:
        """The name the index entry gives (``removeprefix`` of "removeprefix() (str method)")."""
        name = str(self["index_entry"]).split(" (")[0].removesuffix("()")
        return name.split(".")[-1].strip("'")


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    return [Question(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def check_questions(questions: list[Question], docs: Path) -> None:
    """Each question's index entry points at one of its answer pages in the docs' own index."""
    from parsel import Selector

    index = Selector(text=(docs / "genindex-all.html").read_text(encoding="utf-8"))
    entries: dict[str, set[str]] = {}
    for li in index.css("table.indextable li"):
        own = "".join(li.xpath("./text()").getall()).strip() or "".join(li.xpath("./a[1]//text()").getall()).strip()
        pages = {href.split("#")[0] for href in li.xpath("./a/@href").getall()}
        parent = li.xpath("../../self::li")
        names = [own]
        if parent:
            above = (
                "".join(parent.xpath("./text()").getall()).strip()
                or "".join(parent.xpath("./a[1]//text()").getall()).strip()
            )
            names.append(f"{above.split(' (')[0]} {own}")
        for name in names:
            entries.setdefault(name, set()).update(pages)
    wrong = [q["query"] for q in questions if not entries.get(q["index_entry"], set()) & set(q["answers"])]
    if wrong:
        raise SystemExit(f"search_eval: the docs' index does not point these questions at their answers: {wrong}")


@contextlib.contextmanager
def serve_docs(docs: Path) -> Iterator[str]:
    """The docs on a loopback port: the base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(docs)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def doc_pages(docs: Path) -> list[str]:
    """The pages crawled: every HTML page but the generated indexes and the search page."""
    return sorted(
        str(p.relative_to(docs))
        for p in docs.rglob("*.html")
        if not _SKIPPED.match(p.name) and not p.relative_to(docs).parts[0].startswith("_")
    )


def crawl_docs(docs: Path, kb_uri: str, workdir: Path) -> float:
    """`scrapy crawl page` of the docs into ``kb_uri``; the seconds it took."""
    with serve_docs(docs) as base:
        urls = workdir / "urls.txt"
        urls.write_text("".join(f"{base}{path}\n" for path in doc_pages(docs)))
        cmd = [
            scrapy_bin(),
            "crawl",
            "page",
            "-a",
            f"urls_file={urls}",
            "-a",
            f"kb={KB}",
            "-s",
            f"KB_URI={kb_uri}",
            "-s",
            "ALLOW_PRIVATE_ADDRESSES=True",
            "-s",
            "DOWNLOAD_DELAY=0.1",
            "-s",
            "LOG_LEVEL=WARNING",
        ]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SystemExit(f"search_eval: the crawl failed: {proc.stderr[-2000:]}")
        return time.monotonic() - started


def crawled_pages(kb_uri: str) -> list[PageRecord]:
    store = open_store(kb_uri)
    try:
        return list(store.pages(KB))
    finally:
        store.close()


def fill(store: Store, pages: list[PageRecord]) -> None:
    for page in pages:
        store.put_page(page)


def _path(url: str) -> str:
    return re.sub(r"^https?://[^/]+/", "", url).split("#")[0]


def evaluate(questions: list[Question], rank: Callable[[str], list[tuple[str, str]]]) -> dict[str, Any]:
    """MRR@10, recall@10 and the answering-passage share, per kind and in all.

    ``rank(query)`` gives the top results as (URL, first passage shown; "" when none is shown).
    """
    rows: dict[str, list[tuple[float, bool, bool | None]]] = {}
    misses = []
    for question in questions:
        results = rank(question["query"])[:K]
        position = next((n for n, (url, _) in enumerate(results, 1) if _path(url) in question["answers"]), 0)
        passage: bool | None = None
        if position == 1 and results[0][1]:
            passage = question.identifier.lower() in _MARKS.sub("", results[0][1]).lower()
        for kind in (question["kind"], "all"):
            rows.setdefault(kind, []).append((1 / position if position else 0.0, position > 0, passage))
        if position != 1:
            misses.append(
                {"query": question["query"], "rank": position or None, "top": [_path(url) for url, _ in results[:3]]}
            )
    figures: dict[str, Any] = {}
    for kind, values in rows.items():
        judged = [p for _, _, p in values if p is not None]
        figures[kind] = {
            "questions": len(values),
            "mrr@10": round(sum(v for v, _, _ in values) / len(values), 3),
            "recall@10": round(sum(1 for _, hit, _ in values if hit) / len(values), 3),
            "passage": round(sum(judged) / len(judged), 3) if judged else None,
        }
    figures["misses"] = misses
    return figures


def ours(store: Store, uri: str) -> Callable[[str], list[tuple[str, str]]]:
    """Our search, through the KB's index (built or caught up first), as ``serve`` and ``kb search`` answer."""
    from synapsecrawl.search.index import SearchIndex, index_path

    index = SearchIndex(store, index_path(uri))
    index.catch_up_once()

    def rank(query: str) -> list[tuple[str, str]]:
        hits = index.search(query, KB, limit=K) or []
        return [(hit.url, hit.passages[0].text if hit.passages else "") for hit in hits]

    return rank


def bm25(pages: list[PageRecord], *, stem: bool) -> Callable[[str], list[tuple[str, str]]]:
    """Plain BM25 (bm25s, its default Lucene variant, k1 1.5, b 0.75) over title + text, English stopwords."""
    import bm25s

    stemmer = None
    if stem:
        import Stemmer

        stemmer = Stemmer.Stemmer("english").stemWords
    corpus = [f"{page.title}\n{page.text}" for page in pages]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)

    def rank(query: str) -> list[tuple[str, str]]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        found, _ = retriever.retrieve(tokens, k=min(K, len(pages)), show_progress=False)
        return [(pages[int(i)].url, "") for i in found[0]]

    return rank


def _table(results: dict[str, dict[str, Any]]) -> str:
    lines = [f"{'system':<28} {'kind':<8} {'n':>3} {'MRR@10':>7} {'R@10':>6} {'passage':>8}"]
    for system, figures in results.items():
        for kind in ("index", "natural", "all"):
            f = figures[kind]
            passage = "" if f["passage"] is None else f"{f['passage']:.3f}"
            lines.append(
                f"{system:<28} {kind:<8} {f['questions']:>3} {f['mrr@10']:>7.3f} {f['recall@10']:>6.3f} {passage:>8}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "synapsecrawl-search-eval")
    parser.add_argument("--reuse", action="store_true", help="use the pages crawled last time")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument(
        "--postgres", default=os.environ.get("SYNAPSECRAWL_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
    )
    parser.add_argument("--misses", action="store_true", help="print the questions not answered first")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    if not (args.docs / "genindex-all.html").exists():
        raise SystemExit(f"search_eval: no Python docs at {args.docs} (apt-get install -y python3.11-doc)")
    questions = load_questions()
    check_questions(questions, args.docs)
    args.workdir.mkdir(parents=True, exist_ok=True)
    crawl_uri = f"sqlite:///{args.workdir / 'crawl.sqlite3'}"
    if not args.reuse:
        (args.workdir / "crawl.sqlite3").unlink(missing_ok=True)
        seconds = crawl_docs(args.docs, crawl_uri, args.workdir)
        print(f"crawled {len(doc_pages(args.docs))} pages in {seconds:.0f} s", file=sys.stderr)
    pages = crawled_pages(crawl_uri)
    results: dict[str, dict[str, Any]] = {}
    for backend in args.backends.split(","):
        if backend == "sqlite":
            path = args.workdir / "eval.sqlite3"
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            uri = f"sqlite:///{path}"
        else:
            uri = _fresh_schema(args.postgres)
        store = open_store(uri)
        try:
            fill(store, pages)
            results[f"ours ({backend})"] = evaluate(questions, ours(store, uri))
        finally:
            store.close()
            if backend != "sqlite":
                _drop_schema(args.postgres)
    results["bm25s (no stemmer)"] = evaluate(questions, bm25(pages, stem=False))
    results["bm25s (Snowball stemmer)"] = evaluate(questions, bm25(pages, stem=True))
    print(f"{len(pages)} pages, {len(questions)} questions")
    print(_table(results))
    if args.misses:
        for system, figures in results.items():
            print(f"\n{system}: not first")
            for miss in figures["misses"]:
                print(f"  {miss['rank']!s:>4}  {miss['query']!r}  top: {', '.join(miss['top'])}")
    if args.json:
        args.json.write_text(json.dumps({"pages": len(pages), "results": results}, indent=1) + "\n")
    return 0


_SCHEMA = "search_eval"


def _fresh_schema(admin_uri: str, keep: bool = False) -> str:
    """A schema of the benchmark's own at ``admin_uri``, emptied first unless ``keep``."""
    import psycopg

    with psycopg.connect(admin_uri, autocommit=True) as conn:
        if not keep:
            conn.execute(f"DROP SCHEMA IF EXISTS {_SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {_SCHEMA}")
    sep = "&" if "?" in admin_uri else "?"
    return f"{admin_uri}{sep}options=-csearch_path%3D{_SCHEMA}"


def _drop_schema(admin_uri: str) -> None:
    import psycopg

    with psycopg.connect(admin_uri, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {_SCHEMA} CASCADE")


if __name__ == "__main__":
    sys.exit(main())
