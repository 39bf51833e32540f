"""The search service's decisions: what a search may ask, what a result shows, which KB answers.

``synapsecrawl serve`` and the on-demand fetcher's server both answer through a ``SearchService``: a search is
checked into ``SearchArgs``, run through the KB's ranked index (``synapsecrawl.search.index``) and shaped by
``hit_json``, as ``kb search`` prints it. The KB is opened on first use and again after a failure, so a KB that
cannot be opened, like an index not yet built, is one ``unavailable`` answer (HTTP 503). Failures are
``FetchError``s, the on-demand fetch's. With ``searchers=N`` the searches run in a pool of N search processes,
one search at a time each, so every search goes to whichever is free and none shares another's GIL; the serving
process keeps the index in step with the KB. More: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from synapsecrawl.crawl.ondemand import FetchError, check_fetch_url, page_address, shape_page
from synapsecrawl.errors import ConfigError, StoreError
from synapsecrawl.kb import open_store
from synapsecrawl.kb.records import PageRecord, SearchHit
from synapsecrawl.kb.store import Store
from synapsecrawl.profiles import Profile
from synapsecrawl.search.index import Follower, SearchIndex, index_path

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_OFFSET",
    "MAX_QUERY_CHARS",
    "SearchArgs",
    "SearchService",
    "check_bind",
    "check_search_args",
    "hit_json",
    "is_loopback",
    "json_body",
]

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_OFFSET = 950  # offset + limit stays within 1,000: the most pages a search ranks (its first stage)
MAX_QUERY_CHARS = 500
_PARAMETERS = ("query", "kb", "limit", "offset")
_KB_NAME = re.compile(r"^[\w.-]{1,100}$")
_WORD = re.compile(r"\w")
_HIT_FIELDS = fields(SearchHit)
_POOL_START_SECONDS = 120.0  # spawning a search process imports the index's libraries and opens the KB


@dataclass(frozen=True)
class SearchArgs:
    """A search as checked: the query, one KB or all (None), and the page of results wanted."""

    query: str
    kb: str | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0


def _bad(message: str) -> FetchError:
    return FetchError("bad_request", message)


def _count(name: str, value: object, default: int, top: int, bottom: int) -> int:
    if value is None or value == "":
        return default
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool):
        raise _bad(f"{name} must be a whole number from {bottom} to {top}, not {value!r}")
    if not bottom <= value <= top:
        raise _bad(f"{name} must be from {bottom} to {top}, not {value}")
    return value


def check_search_args(params: Mapping[str, object]) -> SearchArgs:
    """The search ``params`` ask for (from a query string or a JSON body); raises FetchError("bad_request")."""
    unknown = sorted(set(params) - set(_PARAMETERS))
    if unknown:
        raise _bad(f"unknown parameter {unknown[0]!r}: search takes {', '.join(_PARAMETERS)}")
    query = params.get("query")
    if not isinstance(query, str) or not query.strip():
        raise _bad('give a query: {"query": "words to search for"} or ?query=words')
    query = " ".join(query.split())
    if len(query) > MAX_QUERY_CHARS:
        raise _bad(f"query is {len(query)} characters long; at most {MAX_QUERY_CHARS}")
    if not _WORD.search(query):
        raise _bad(f"query {query!r} has no word to search for")
    kb = params.get("kb")
    if kb is not None and kb != "" and (not isinstance(kb, str) or not _KB_NAME.match(kb)):
        raise _bad(f"kb {kb!r} is not a knowledge base name (letters, digits, '.', '_' and '-')")
    return SearchArgs(
        query=query,
        kb=kb or None,
        limit=_count("limit", params.get("limit"), DEFAULT_LIMIT, MAX_LIMIT, 1),
        offset=_count("offset", params.get("offset"), 0, MAX_OFFSET, 0),
    )


def hit_json(hit: SearchHit) -> dict[str, Any]:
    """A result as ``kb search`` prints it and the service answers it: never a page's full text."""
    # Field by field: dataclasses.asdict deep-copies every value, about 0.3 ms a result.
    shown = {field.name: getattr(hit, field.name) for field in _HIT_FIELDS}
    shown["passages"] = [{"passage": p.passage, "text": p.text, "anchor": p.anchor} for p in hit.passages]
    shown["fetched_at"] = hit.fetched_at.isoformat() if hit.fetched_at else None
    return shown


def json_body(content: object) -> bytes:
    """``content`` as the API's JSON body, byte for byte what Starlette's JSONResponse renders."""
    return json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``); a name that is not is taken as reachable."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str) -> None:
    """Refuse, in one line, to serve beyond this machine without a bearer token."""
    if not host:
        raise ConfigError("serve --host is empty")
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"serve --host {host} is reachable from other machines: set SEARCH_TOKEN to a bearer "
            "token agents must send, or bind 127.0.0.1"
        )


class SearchService:
    """Searches and stored copies of one knowledge base URI, as a result may show them."""

    def __init__(
        self,
        uri: str,
        profile: Profile,
        opener: Callable[[str], Store] = open_store,
        *,
        follow: bool = True,
        searchers: int = 0,
    ) -> None:
        self.uri = uri
        self.profile = profile
        self._opener = opener
        self._follow = follow
        self._searchers = searchers  # 0: search in this process
        self._pool: ProcessPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self._store: Store | None = None
        self._index: SearchIndex | None = None
        self._follower: Follower | None = None
        self._lock = threading.Lock()

    def _open(self) -> Store:
        with self._lock:
            if self._store is None:
                try:
                    self._store = self._opener(self.uri)
                except StoreError as exc:
                    raise FetchError("unavailable", str(exc)) from None
                self._index = SearchIndex(self._store, index_path(self.uri))
                if self._follow:
                    self._index.catch_up_once()  # built or caught up before the first answer, when this one keeps it
                    self._follower = Follower(self._index).start()
            return self._store

    def prepare(self) -> None:
        """Open the KB and bring its index up to date now, not on the first request (one that cannot be
        opened is left for the requests to report); with ``searchers``, start the search processes and wait
        until each has opened the KB too. Raises SynapseError if they cannot start."""
        with contextlib.suppress(FetchError):
            self._open()
        if self._searchers:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = self._start_pool()

    def searcher_pids(self) -> list[int]:
        """The search processes' pids (none without ``searchers`` or before ``prepare``)."""
        pool = self._pool
        processes = getattr(pool, "_processes", None) or {}
        return sorted(processes)

    def _start_pool(self) -> ProcessPoolExecutor:
        """N search processes, each with its own read-only service, all started and warm.

        Spawned, not forked: this process has threads (the follower's) and database connections. Processes
        start on demand, one a submitted call while none is idle, so N calls start N; the barrier holds each
        one's start until all have opened the KB, so none takes a second call before the others exist.
        """
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        from synapsecrawl.errors import SynapseError

        context = multiprocessing.get_context("spawn")
        started = context.Barrier(self._searchers + 1)
        pool = ProcessPoolExecutor(
            max_workers=self._searchers,
            mp_context=context,
            initializer=_searcher_start,
            initargs=(self.uri, self.profile, os.getpid(), started),
        )
        calls = [pool.submit(os.getpid) for _ in range(self._searchers)]
        try:
            started.wait(_POOL_START_SECONDS)
            for call in calls:
                call.result(_POOL_START_SECONDS)
        except (threading.BrokenBarrierError, TimeoutError, BrokenProcessPool, OSError) as exc:
            pool.shutdown(wait=False, cancel_futures=True)
            raise SynapseError(
                f"serve: the search processes did not start: {type(exc).__name__} {exc}".strip()
            ) from None
        return pool

    def _pooled(self, work: Callable[[SearchArgs], Any], args: SearchArgs) -> Any:
        """``work(args)`` in the first free search process; a pool broken by a process's death (killed,
        out of memory) is replaced and the search asked once more, then answered ``unavailable``."""
        from concurrent.futures.process import BrokenProcessPool

        self._open()  # this process keeps the index: opened (and built or caught up) before a search reads it
        for attempt in range(2):
            with self._pool_lock:
                if self._pool is None:
                    self._pool = self._start_pool()
                pool = self._pool
            try:
                return pool.submit(work, args).result()
            except BrokenProcessPool:
                with self._pool_lock:
                    if self._pool is pool:
                        self._pool = None
                pool.shutdown(wait=False, cancel_futures=True)
                if attempt:
                    break
        raise FetchError("unavailable", "a search process ended while searching; search again")

    def _search(self, store: Store, args: SearchArgs) -> Any:
        index = self._index
        hits = index.search(args.query, args.kb, limit=args.offset + args.limit) if index is not None else None
        if hits is None:  # not a store failure: the store stays open, and the follower builds the index
            raise FetchError(
                "unavailable",
                "the search index of this knowledge base is being built (or cannot be read: the service's "
                "log says why); search again soon",
            )
        return hits

    def _drop(self) -> tuple[Store | None, SearchIndex | None, Follower | None]:
        """Forget the store and its index (the caller holds the lock and closes what it gets)."""
        dropped = (self._store, self._index, self._follower)
        self._store, self._index, self._follower = None, None, None
        return dropped

    def _call(self, work: Callable[[Store], Any]) -> Any:
        """``work`` on the store; a store failure is ``unavailable`` and the store is opened anew next time."""
        store = self._open()
        try:
            return work(store)
        except StoreError as exc:
            with self._lock:
                dropped = self._drop() if self._store is store else (store, None, None)
            _close(*dropped)
            raise FetchError("unavailable", str(exc)) from None

    def search(self, args: SearchArgs) -> dict[str, Any]:
        """The results for ``args``, best first; raises FetchError (unknown_kb, unavailable)."""
        if self._searchers:
            result: dict[str, Any] = self._pooled(_searcher_search, args)
            return result
        hits = self._call(lambda store: self._search(store, args))
        if not hits and args.kb is not None and args.kb not in self._names():
            raise FetchError("unknown_kb", f"no knowledge base named {args.kb!r} here (list_kbs names them)")
        return {
            "query": args.query,
            "kb": args.kb,
            "offset": args.offset,
            "results": [hit_json(hit) for hit in hits[args.offset :]],
        }

    def search_body(self, args: SearchArgs) -> bytes:
        """``search(args)`` as the JSON body /api/search answers, encoded where the search ran: a search
        process sends the server bytes, not a tree of objects to unpickle and encode again."""
        if self._searchers:
            body: bytes = self._pooled(_searcher_search_body, args)
            return body
        return json_body(self.search(args))

    def _names(self) -> set[str]:
        return {name for name, _, _ in self._call(lambda store: store.kbs())}

    def list_kbs(self) -> dict[str, Any]:
        """The knowledge bases that hold pages: name, page count, last fetch."""
        rows = self._call(lambda store: store.kbs())
        return {
            "kbs": [{"name": name, "pages": count, "last_fetched_at": last.isoformat()} for name, count, last in rows]
        }

    def fetch(self, url: object, kb: str | None = None) -> dict[str, Any]:
        """The stored copy of ``url`` as a result may show it (``ondemand.shape_page``); raises FetchError."""
        asked = check_fetch_url(url)
        if kb is not None and not _KB_NAME.match(kb):
            raise _bad(f"kb {kb!r} is not a knowledge base name (letters, digits, '.', '_' and '-')")
        names = [kb] if kb else sorted(self._names())
        candidates = list(dict.fromkeys((asked, page_address(asked))))

        def first_copy(store: Store) -> PageRecord | None:
            found = (store.get_page(name, url) for name in names for url in candidates)
            return next((record for record in found if record is not None), None)

        record: PageRecord | None = self._call(first_copy)
        if record is not None:
            shown = shape_page(
                record, requested_url=asked, from_index=True, scrub_description=self.profile.scrub_personal_data
            )
            return {"kb": record.kb, **shown}
        raise FetchError("not_found", f"no stored copy of {asked} (search finds what the knowledge base holds)")

    def close(self) -> None:
        """Stop the search processes, stop following the KB, and close its index and the store, if open."""
        with self._pool_lock:
            pool, self._pool, self._searchers = self._pool, None, 0
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            dropped = self._drop()
        _close(*dropped)


_searcher: dict[str, SearchService] = {}  # in a search process: its own service, under "service"


def _searcher_start(uri: str, profile: Profile, parent: int, started: Any) -> None:
    """A search process's start: tied to the server's life, deaf to the terminal's Ctrl-C (the server ends
    it), its KB opened read-only (the server keeps the index) before it says it is ready."""
    import signal

    from synapsecrawl.extract.lifeline import die_with_parent

    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    service = _searcher["service"] = SearchService(uri, profile, follow=False)
    service.prepare()
    started.wait(_POOL_START_SECONDS)


def _searcher_search(args: SearchArgs) -> dict[str, Any]:
    return _searcher["service"].search(args)


def _searcher_search_body(args: SearchArgs) -> bytes:
    return _searcher["service"].search_body(args)


def _close(store: Store | None, index: SearchIndex | None, follower: Follower | None) -> None:
    if follower is not None:
        follower.stop()
    if index is not None:
        index.close()
    if store is not None:
        store.close()
