"""The ranked index beside a knowledge base: search's first stage, kept in step with the store.

A search takes the top pages from a pruned tantivy index (BM25, block-max WAND, ``count=False``) and ranks only
those candidates with ``kb.search.rank_results`` (title, address, passage and phrase signals from the same index); the
results' rows are read from the store, which stays the truth, in one query. One process at a time (a lock on
``<index>.lock``) follows the store's change log (``kb.changes``, ``Follower``), commits about every second and
records in the KB how far it applied the log, so applied rows can be deleted; an index that cannot be trusted is
rebuilt into a fresh directory and swapped in. Where: beside a SQLite KB, under ``.synapsecrawl/search-index/`` for
PostgreSQL, or in ``SEARCH_INDEX_DIR`` (environment). More: docs/search.md, "The index", and docs/architecture.md,
"Inside the larger modules".
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import logging
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import tantivy
from tantivy import Occur, Query

from synapsecrawl.errors import StoreError
from synapsecrawl.kb.records import PageRecord, SearchHit
from synapsecrawl.kb.rows import search_hit
from synapsecrawl.kb.search import (
    HIT_CLOSE,
    HIT_OPEN,
    RERANK_PAGES,
    PageRank,
    address_words,
    phrase_pairs,
    rank_results,
    search_terms,
    split_passages,
)
from synapsecrawl.kb.store import Store

__all__ = [
    "COMMIT_SECONDS",
    "GAP_SECONDS",
    "PARTS",
    "SCHEMA",
    "TITLE_BOOST",
    "VERSION",
    "Follower",
    "IndexBusy",
    "IndexUnavailable",
    "SearchIndex",
    "index_path",
    "search_kb",
]

logger = logging.getLogger(__name__)

COMMIT_SECONDS = 0.5  # the follower looks for changes this often and commits what it applied
VERSION = 5  # of the index's schema and analysis; another is rebuilt
GAP_SECONDS = 30.0  # a missing seq (a PostgreSQL transaction still open, or rolled back) is waited for this long
TITLE_BOOST = 5.0  # the title's weight against the text's in the first stage (as the KB's FTS5 search weighed them)
_BATCH = 2000  # changes read at once
_PASSAGES_PER_PAGE = 4  # passage candidates per candidate page (as good as 8 on both question sets: docs/benchmarks.md)
_WRITER_HEAP = 64_000_000
_ANALYZER = "synapse_en"
_WORDS = re.compile(r"([^\W_]+)")  # the simple tokenizer's words: runs of letters and digits
_SEP = "\x1f"


class IndexBusy(StoreError):
    """Another process holds the index's writer role."""


class IndexUnavailable(StoreError):
    """No index can be read yet: another process is building it, or it cannot be built here (logged)."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"search index {path} is being built (or cannot be read: a warning above says why); search again soon"
        )


class _Changes(Protocol):
    """What the index reads of a store beyond the Store Protocol: the change log, the results' rows (kb.rows)."""

    def search_changes(self, after: int, limit: int) -> list[tuple[int, str, str]]: ...
    def last_search_change(self) -> int: ...
    def hit_rows(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], tuple[Any, ...]]: ...
    def trim_search_changes(self, follower: str, seq: int, now: float) -> int: ...
    def search_changes_trimmed(self) -> int: ...


def index_path(uri: str) -> Path:
    """Where the index of KB ``uri`` lives (``SEARCH_INDEX_DIR``, else beside it or under .synapsecrawl/)."""
    named = os.environ.get("SEARCH_INDEX_DIR", "").strip()
    if uri.startswith("sqlite:///") and not named:
        return Path(f"{uri.removeprefix('sqlite:///')}.search-index")
    from synapsecrawl.kb.postgres import redact_uri  # psycopg: imported only where a PostgreSQL KB is named

    digest = hashlib.sha256(redact_uri(uri).encode()).hexdigest()[:16]
    return Path(named or ".synapsecrawl/search-index") / digest


def _analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


_ANALYSIS = _analyzer()


@functools.lru_cache(maxsize=200_000)
def _stems(word: str) -> tuple[str, ...]:
    """The index's terms for one word (the analysis the index applies to every field)."""
    return tuple(_ANALYSIS.analyze(word))


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("kind", tokenizer_name="raw", index_option="basic")  # page, passage, meta
    builder.add_text_field("key", tokenizer_name="raw", index_option="basic")  # a page: kb, url
    builder.add_text_field("page", tokenizer_name="raw", index_option="basic")  # a passage: its page's key
    builder.add_text_field("kb", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("url", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("title", tokenizer_name=_ANALYZER, index_option="freq")
    builder.add_text_field("body", tokenizer_name=_ANALYZER, index_option="freq")
    builder.add_text_field("passage", tokenizer_name=_ANALYZER, index_option="position")  # phrases need them
    # A page's address words (kb.search.address_words) and their first five letters: the address signal is a
    # query of the index, not a reading of every candidate's URL.
    builder.add_text_field("addr", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("addr5", tokenizer_name="raw", index_option="basic")
    builder.add_bytes_field("shown", stored=True, indexed=False)  # a passage's text, as stored
    # Read from columns (fast fields) while ranking, not from stored documents: a page's number (its key
    # hashed), its KB's, and a passage's ordinal.
    builder.add_unsigned_field("pid", indexed=True, fast=True)
    builder.add_unsigned_field("kbid", indexed=True, fast=True)
    builder.add_unsigned_field("ordinal", stored=True, fast=True)
    builder.add_unsigned_field("seq", stored=True)  # the meta document: the last change applied
    builder.add_unsigned_field("version", stored=True)
    builder.add_unsigned_field("anchor", stored=True)  # the meta document: which page that last change was
    return builder.build()


SCHEMA = _schema()


def _key(kb: str, url: str) -> str:
    return f"{kb}{_SEP}{url}"


def _number(text: str) -> int:
    """A 63-bit number for ``text`` (a page's key, a KB's name): what the fast fields hold."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big") >> 1  # 63 bits: an int64


PARTS = ("pages", "passages")  # two indexes, so each kind of document has its own BM25 statistics


def _open_index(path: Path, *, create: bool) -> tantivy.Index:
    index = tantivy.Index(SCHEMA, str(path), reuse=True) if create else tantivy.Index.open(str(path))
    index.register_tokenizer(_ANALYZER, _analyzer())
    return index


class _Pair:
    """The pages index and the passages index of one search index (``PARTS``, sub-directories of it).

    Apart because BM25 takes its document count and average field length over every document of an
    index: with the passages beside them, a page's text would be scored against passage-sized lengths.
    """

    def __init__(self, path: Path, *, create: bool) -> None:
        if create:
            for part in PARTS:
                (path / part).mkdir(parents=True, exist_ok=True)
        self.pages, self.passages = (_open_index(path / part, create=create) for part in PARTS)

    def recorded(self) -> tuple[int, int] | None:
        """(seq, anchor) of the part whose last commit recorded the smaller seq, or None when either holds
        no record."""
        records = [_recorded(self.pages), _recorded(self.passages)]
        return None if records[0] is None or records[1] is None else min(records[0], records[1])

    def reload(self) -> None:
        self.pages.reload()
        self.passages.reload()


class _Writers:
    """One writer per part; a change is applied to both and both commit the seq applied."""

    def __init__(self, pair: _Pair) -> None:
        self.pages = pair.pages.writer(_WRITER_HEAP, 1)
        self.passages = pair.passages.writer(_WRITER_HEAP, 1)

    def put(self, kb: str, url: str, page: PageRecord | None) -> None:
        key = _key(kb, url)
        self.pages.delete_documents_by_term("key", key)
        self.passages.delete_documents_by_term("page", key)
        if page is not None:
            self.add(page)

    def add(self, page: PageRecord) -> None:
        first, *passages = _documents(page)
        self.pages.add_document(first)
        for doc in passages:
            self.passages.add_document(doc)

    def delete_kb(self, kb: str) -> None:
        self.pages.delete_documents_by_term("kb", kb)
        self.passages.delete_documents_by_term("kb", kb)

    def commit(self, seq: int, anchor: int) -> None:
        """Commit both parts, each recording ``seq`` and ``anchor`` (the passages first: a crash between
        the two leaves the pages' older seq as the record, and what lies between is applied again)."""
        for writer in (self.passages, self.pages):
            writer.delete_documents_by_term("kind", "meta")
            writer.add_document(_document({"kind": "meta"}, {"seq": seq, "version": VERSION, "anchor": anchor}))
            writer.commit()

    def close(self) -> None:
        for writer in (self.pages, self.passages):
            with contextlib.suppress(Exception):
                writer.wait_merging_threads()  # also releases tantivy's own writer lock


def _recorded(index: tantivy.Index) -> tuple[int, int] | None:
    """The (seq, anchor) the index's last commit recorded, or None when it holds no record of this version."""
    searcher = index.searcher()
    hits = searcher.search(Query.term_query(SCHEMA, "kind", "meta"), 1, count=False).hits
    if not hits:
        return None
    meta = searcher.doc(hits[0][1])
    if meta.get_first("version") != VERSION:
        return None
    seq, anchor = meta.get_first("seq"), meta.get_first("anchor")
    return (int(seq), int(anchor or 0)) if seq is not None else None


def _documents(page: PageRecord) -> list[tantivy.Document]:
    """The page's document, then its passages'."""
    key = _key(page.kb, page.url)
    numbers = {"pid": _number(key), "kbid": _number(page.kb)}
    first = _document({"kind": "page", "key": key, "kb": page.kb, "url": page.url, "title": page.title,
                       "body": page.text}, numbers)  # fmt: skip
    for word in sorted(address_words(page.url)):
        first.add_text("addr", word)
        first.add_text("addr5", word[:5])
    docs = [first]
    for ordinal, text in enumerate(split_passages(page.snippet_text or page.text, page.title)):
        passage: dict[str, str | bytes] = {
            "kind": "passage",
            "page": key,
            "kb": page.kb,
            "passage": text,
            "shown": text.encode(),
        }
        docs.append(_document(passage, {**numbers, "ordinal": ordinal}))
    return docs


def _document(values: dict[str, str | bytes], numbers: dict[str, int]) -> tantivy.Document:
    """A document of ``values`` and unsigned ``numbers`` (given one by one: keyword ints are taken as signed)."""
    doc = tantivy.Document(**values)
    for name, number in numbers.items():
        doc.add_unsigned(name, number)
    return doc


class SearchIndex:
    """The index of one KB: search through it, and (holding the writer role) keep it in step."""

    def __init__(self, store: Store, path: Path) -> None:
        self.store = store
        self.path = path
        self._changes: _Changes = store  # type: ignore[assignment]  # both back-ends answer it (kb.rows)
        self._pair: _Pair | None = None
        self._lockfile: IO[bytes] | None = None
        self._writers: _Writers | None = None
        self._floor = 0  # every change up to it is applied
        self._seen: set[int] = set()  # changes above the floor that are applied
        self._gaps: dict[int, float] = {}  # a missing seq -> when it was first missed
        self._write_lock = threading.Lock()

    # -- the writer role ----------------------------------------------------------

    def try_writer(self) -> bool:
        """Take the writer role if no other process holds it; True when this one holds it."""
        if self._lockfile is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lockfile = Path(f"{self.path}.lock").open("ab")  # noqa: SIM115 - held until close()
        try:
            fcntl.flock(lockfile.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lockfile.close()
            return False
        self._lockfile = lockfile
        return True

    def catch_up(self) -> int:
        """Apply the KB's changes since the last commit and commit (rebuilding a missing, torn or
        stale index first); the number of pages applied. Needs the writer role."""
        if self._lockfile is None:
            raise IndexBusy(f"search index {self.path}: another process keeps it (serve?)")
        with self._write_lock:
            if self._writers is None and not self._open_for_writing():
                self._rebuild()
                return 0
            return self._apply()

    def catch_up_once(self) -> None:
        """Take the writer role if free and catch up (building the index if need be); a failure is logged:
        searches are unavailable until the index can be read."""
        try:
            if self.try_writer():
                self.catch_up()
        except (ValueError, OSError, RuntimeError, StoreError) as exc:
            logger.warning("search index %s cannot be written (%s)", self.path, _line(exc))

    def _open_for_writing(self) -> bool:
        """Open the index and its writers; False when it must be rebuilt (missing, unreadable, stale)."""
        try:
            pair = _Pair(self.path, create=False)
            recorded = pair.recorded()
        except (ValueError, OSError, RuntimeError) as exc:
            if self.path.exists():
                logger.warning("search index %s cannot be read (%s): rebuilding it", self.path, _line(exc))
            return False
        if (
            recorded is None
            or recorded[0] > self._changes.last_search_change()
            or recorded[0] + 1 < self._changes.search_changes_trimmed()  # changes it never applied may be gone
            or self._anchor(recorded[0])
            not in (
                0,
                recorded[1],
            )
        ):
            logger.warning("search index %s does not follow this KB: rebuilding it", self.path)
            return False
        self._pair, self._floor, self._seen, self._gaps = pair, recorded[0], set(), {}
        self._writers = _Writers(pair)
        return True

    def _apply(self) -> int:
        assert self._writers is not None and self._pair is not None
        applied = 0
        while True:
            rows = [row for row in self._changes.search_changes(self._floor, _BATCH) if row[0] not in self._seen]
            if not rows:
                break
            keys = list(dict.fromkeys((kb, url) for _, kb, url in rows))
            for kb, url in keys:
                self._writers.put(kb, url, self.store.get_page(kb, url))
            self._seen.update(seq for seq, _, _ in rows)
            applied += len(keys)
            if len(rows) < _BATCH:
                break
        moved = self._advance()
        if applied or moved:
            self._writers.commit(self._floor, self._anchor(self._floor))
            self._pair.reload()
            self._trim(self._floor)
        return applied

    def _trim(self, seq: int) -> None:
        """Say in the KB that this index has applied the change log up to ``seq`` (committed, or a rebuild's
        start), so the rows every index has applied are deleted (kb.changes)."""
        follower = f"{socket.gethostname()}:{self.path.resolve()}"
        self._changes.trim_search_changes(follower, seq, time.time())

    def _anchor(self, seq: int) -> int:
        """Which page the change ``seq`` was (a number; 0 for none): an index records it with the seq, so one
        that followed another KB with as many changes (a file replaced) is known."""
        rows = self._changes.search_changes(seq - 1, 1) if seq > 0 else []
        return _number(_key(rows[0][1], rows[0][2])) if rows and rows[0][0] == seq else 0

    def _advance(self) -> bool:
        """Move the floor past applied changes, and past a gap missed for ``GAP_SECONDS``."""
        start, now = self._floor, time.monotonic()
        while self._seen:
            following = self._floor + 1
            if following in self._seen:
                self._seen.discard(following)
            elif now - self._gaps.setdefault(following, now) < GAP_SECONDS:
                break
            self._gaps.pop(following, None)
            self._floor = following
        return self._floor != start

    def _rebuild(self) -> None:
        """Build the whole index from the store in a fresh directory, then swap it in."""
        started = time.monotonic()
        seq = self._changes.last_search_change()  # before the pages: changes meanwhile are applied again
        self._trim(seq)  # and kept in the log until this index has applied them
        building = Path(f"{self.path}.building")
        shutil.rmtree(building, ignore_errors=True)  # a build a killed process left
        writers = _Writers(_Pair(building, create=True))
        count = 0
        try:
            for kb, url in self.store.page_urls():
                page = self.store.get_page(kb, url)
                if page is not None:
                    writers.add(page)
                    count += 1
            writers.commit(seq, self._anchor(seq))
        finally:
            writers.close()
        self._close_index()
        old = Path(f"{self.path}.old")
        shutil.rmtree(old, ignore_errors=True)
        if self.path.exists():
            self.path.rename(old)
        building.rename(self.path)
        shutil.rmtree(old, ignore_errors=True)
        logger.info("search index %s: %d pages indexed in %.1f s", self.path, count, time.monotonic() - started)
        if not self._open_for_writing():
            raise StoreError(f"search index {self.path}: cannot be opened after it was rebuilt")
        self._trim(self._floor)

    def rebuild(self, kb: str | None = None) -> int:
        """Rebuild from the store: all of it (a fresh directory, swapped in), or one KB's pages in place.
        The number of pages indexed. Needs the writer role."""
        if self._lockfile is None:
            raise IndexBusy(
                f"search index {self.path} is kept by another process (serve?): stop it, or let it follow the KB"
            )
        with self._write_lock:
            if kb is None or (self._writers is None and not self._open_for_writing()):
                self._rebuild()
                return sum(1 for _ in self.store.page_urls(kb))
            assert self._writers is not None and self._pair is not None
            self._apply()  # the other KBs' changes first; this KB's pages are then indexed anew
            self._writers.delete_kb(kb)
            urls = self.store.page_urls(kb)
            for name, url in urls:
                page = self.store.get_page(name, url)
                if page is not None:
                    self._writers.add(page)
            self._writers.commit(self._floor, self._anchor(self._floor))
            self._pair.reload()
            return len(urls)

    # -- reading ------------------------------------------------------------------

    def _reader(self) -> _Pair | None:
        """The index to search: this process's, or the last commit of the one another process keeps."""
        if self._pair is None:
            try:
                pair = _Pair(self.path, create=False)
                if pair.recorded() is None:
                    return None
            except (ValueError, OSError, RuntimeError):
                return None
            self._pair = pair
        return self._pair

    def search(self, query: str, kb: str | None = None, limit: int = 10) -> list[SearchHit] | None:
        """Pages for ``query``, best first, each with its best passages; None when there is no index to search."""
        pair = self._reader()
        if pair is None:
            return None
        words = search_terms(query)
        terms = list(dict.fromkeys(stem for word in words for stem in _stems(word)))
        if not terms or limit <= 0:
            return []
        try:
            if self._writers is None:
                pair.reload()  # another process commits: see its last commit
            searchers = (pair.pages.searcher(), pair.passages.searcher())
            return _search(searchers, self._changes, words, terms, kb=kb, limit=limit)
        except (ValueError, OSError, RuntimeError) as exc:
            logger.warning("search index %s failed (%s): opening it again", self.path, _line(exc))
            self._pair = None
            return None

    def _close_index(self) -> None:
        if self._writers is not None:
            self._writers.close()
        self._writers = None
        self._pair = None

    def close(self) -> None:
        """Release the writer role and the index (the store is the caller's)."""
        with self._write_lock:
            self._close_index()
            if self._lockfile is not None:
                self._lockfile.close()
                self._lockfile = None


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _should(field: str, terms: Iterable[str], boost: float = 1.0) -> list[tuple[Occur, Query]]:
    clauses = []
    for term in terms:
        query = Query.term_query(SCHEMA, field, term)
        clauses.append((Occur.Should, Query.boost_query(query, boost) if boost != 1.0 else query))
    return clauses


def _named(words: Iterable[str]) -> list[tuple[Occur, Query]]:
    """One clause per query word that scores 1 where the page's address names it (the word, or for a word of
    four letters or more its first five: ``kb.search.address_share``); a page scores the words it names."""
    clauses = []
    for word in words:
        either = [(Occur.Should, Query.term_query(SCHEMA, "addr", word))]
        if len(word) >= 4:
            either.append((Occur.Should, Query.term_query(SCHEMA, "addr5", word[:5])))
        clauses.append((Occur.Should, Query.const_score_query(Query.boolean_query(either), 1.0)))
    return clauses


def _among(within: Query, clauses: list[tuple[Occur, Query]]) -> Query:
    """``clauses`` scored among the documents ``within`` matches (it scores nothing itself)."""
    return Query.boolean_query([(Occur.Must, within), *clauses])


def _hits(searcher: tantivy.Searcher, query: Query, limit: int) -> tuple[list[float], list[Any]]:
    """Scores and addresses of the best ``limit`` documents for ``query`` (pruned: no count)."""
    found = searcher.search(query, limit, count=False).hits
    return [float(score) for score, _ in found], [address for _, address in found]


def _first_stage(
    searcher: tantivy.Searcher, terms: list[str], kb: str | None, want: int
) -> tuple[list[float], list[Any]]:
    """The scores and addresses of the best ``want`` pages by title and text: a pure disjunction, pruned.

    A page's score is ``TITLE_BOOST`` times its title's BM25 plus its text's (the KB's term scores nothing)."""
    either = Query.boolean_query([*_should("title", terms, TITLE_BOOST), *_should("body", terms)])
    scores, found = _hits(searcher, either, want)
    kbid = _number(kb) if kb is not None else 0
    if kb is None or all(n == kbid for n in searcher.fast_field_values("kbid", found)):
        return scores, found  # every one of the best is in the KB asked: they are its best
    in_kb = Query.const_score_query(Query.term_query(SCHEMA, "kbid", kbid), 0.0)
    return _hits(searcher, Query.boolean_query([(Occur.Must, either), (Occur.Must, in_kb)]), want)


def _mark(text: str, matched: dict[str, bool], terms: set[str]) -> str:
    """``text`` with the words the index matches for ``terms`` between HIT_OPEN and HIT_CLOSE (``matched``:
    each word's answer, kept for the search's other passages)."""
    parts = _WORDS.split(text)  # the text between words, a word, the text between, ...
    for n in range(1, len(parts), 2):
        word = parts[n]
        hit = matched.get(word)
        if hit is None:
            hit = matched[word] = not terms.isdisjoint(_stems(word))
        if hit:
            parts[n] = f"{HIT_OPEN}{word}{HIT_CLOSE}"
    return "".join(parts)


def _search(
    searchers: tuple[tantivy.Searcher, tantivy.Searcher],
    store: _Changes,
    words: list[str],
    terms: list[str],
    *,
    kb: str | None,
    limit: int,
) -> list[SearchHit]:
    """The second stage, over the first stage's candidates only: their title ranks and address matches (two
    searches restricted to them), their text ranks (the first stage's score less the title's), their passages'
    and phrases' ranks (two more), all from the index; then one read of the store for the results' rows."""
    searcher, passage_searcher = searchers
    first, found = _first_stage(searcher, terms, kb, max(RERANK_PAGES, limit))
    if not found:
        return []
    pids = [int(pid or 0) for pid in searcher.fast_field_values("pid", found)]
    number = {pid: n for n, pid in enumerate(pids)}
    # The candidates' documents, by one term query per page: a term set query of the same pages cost more
    # (it walks the field's whole term dictionary).
    within = Query.const_score_query(
        Query.boolean_query([(Occur.Should, Query.term_query(SCHEMA, "pid", pid)) for pid in pids]), 0.0
    )

    def by_page(clauses: list[tuple[Occur, Query]]) -> dict[int, float]:
        scores, addresses = _hits(searcher, _among(within, clauses), len(pids))
        owners = searcher.fast_field_values("pid", addresses)
        return {number[int(pid or 0)]: score for pid, score in zip(owners, scores, strict=True)}

    title, named = by_page(_should("title", terms)), by_page(_named(words))
    share = 1.0 / max(1, len(words))
    candidates = [
        PageRank(n, "", title.get(n, 0.0), max(0.0, score - TITLE_BOOST * title.get(n, 0.0)), named.get(n, 0.0) * share)
        for n, score in enumerate(first)
    ]
    addresses: list[Any] = []  # a passage's id in this search -> its address

    def passages(clauses: list[tuple[Occur, Query]]) -> list[tuple[int, int, int, float]]:
        if not clauses:
            return []
        scores, found = _hits(passage_searcher, _among(within, clauses), _PASSAGES_PER_PAGE * len(pids))
        first = len(addresses)
        addresses.extend(found)
        owners = passage_searcher.fast_field_values("pid", found)
        ordinals = passage_searcher.fast_field_values("ordinal", found)
        return [
            (number[int(pid or 0)], int(ordinal or 0), first + n, score)
            for n, (pid, ordinal, score) in enumerate(zip(owners, ordinals, scores, strict=True))
        ]

    phrases = [(Occur.Should, Query.phrase_query(SCHEMA, "passage", [a, b])) for a, b in phrase_pairs(terms) if a != b]
    ranked = rank_results(candidates, passages(_should("passage", terms)), passages(phrases), words, limit + 5)
    wanted, matched = set(terms), dict[str, bool]()

    def shown(ids: list[int]) -> dict[int, str]:
        texts = {i: bytes(passage_searcher.doc(addresses[i]).get_first("shown") or b"").decode() for i in ids}
        return {i: _mark(text, matched, wanted) for i, text in texts.items()}

    keys = {}
    for n, _, _ in ranked:
        doc = searcher.doc(found[n])
        keys[n] = (str(doc.get_first("kb")), str(doc.get_first("url")))
    rows = store.hit_rows(list(keys.values()))  # the store is the truth: a page that left it is not shown
    hits = []
    for n, score, best in ranked:
        row = rows.get(keys[n])
        if row is not None:
            hits.append(search_hit(row, score, best, shown))
        if len(hits) == limit:
            break
    return hits


class Follower:
    """Keeps a SearchIndex in step with its KB: applies and commits changes every ``COMMIT_SECONDS``
    while this process holds the writer role (tries to take it each round otherwise)."""

    def __init__(self, index: SearchIndex, every: float = COMMIT_SECONDS) -> None:
        self.index = index
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="search-index-follower", daemon=True)
        self._failing = False

    def start(self) -> Follower:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.index.try_writer():
                    self.index.catch_up()
                self._failing = False
            except Exception as exc:  # noqa: BLE001 - the KB may be down for a while: said once, tried again
                if not self._failing:
                    logger.warning("search index %s: cannot follow the KB (%s)", self.index.path, _line(exc))
                self._failing = True
            self._stop.wait(self._every)

    def stop(self) -> None:
        """Stop following (the last round ends first)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)


def search_kb(store: Store, uri: str, query: str, kb: str | None = None, limit: int = 10) -> list[SearchHit]:
    """One search through the index of KB ``uri``, caught up first when no other process keeps it (else its
    last commit, at most about a second behind); raises IndexUnavailable when there is no index to read."""
    index = SearchIndex(store, index_path(uri))
    try:
        index.catch_up_once()
        hits = index.search(query, kb, limit)
    finally:
        index.close()
    if hits is None:
        raise IndexUnavailable(index.path)
    return hits
