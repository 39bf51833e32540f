"""The scheduler's memory queue: pending requests kept as small pickles.

``CompactFifoQueue`` (``SCHEDULER_MEMORY_QUEUE``) keeps each pending request
as a small compressed pickle instead of a live ``Request``, so a 1M-URL
queue fits in a few hundred MB (docs/benchmarks.md). It uses only
Scrapy's public request (de)serialisation.
"""

from __future__ import annotations

import pickle
import zlib
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy.utils.request import request_from_dict

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

__all__ = ["CompactFifoQueue"]


# What Request.to_dict() holds for a plain GET; a pending request keeps only what differs.
_DEFAULTS: dict[str, Any] = {
    "callback": None,
    "errback": None,
    "method": "GET",
    "headers": {},
    "body": b"",
    "cookies": {},
    "meta": {},
    "encoding": "utf-8",
    "priority": 0,
    "dont_filter": False,
    "flags": [],
    "cb_kwargs": {},
}


class CompactFifoQueue:
    """A FIFO of requests kept as small compressed pickles rather than live ``Request`` objects.

    A live request carries its headers, meta, flags, bound callback and the parse caches that hang on it; its
    ``to_dict()`` without default values pickles to a fraction of that, and deflated against the queue's first
    pickle (a queue holds one site, so URLs and headers share most bytes) to a fraction of the pickle (sizes:
    docs/benchmarks.md, "The frontier's memory"). A request that cannot be pickled (a callback that is not a
    spider method) is kept as it is.
    """

    def __init__(self, spider: Spider | None) -> None:
        self._spider = spider
        self._items: deque[bytes | Request] = deque()
        self._zdict: bytes | None = None  # the first pickle: what later ones are deflated against

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> CompactFifoQueue:
        return cls(crawler.spider)

    def push(self, request: Request) -> None:
        try:
            fields = request.to_dict(spider=self._spider)
            kept = {key: value for key, value in fields.items() if key not in _DEFAULTS or value != _DEFAULTS[key]}
            raw = pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)
        except (ValueError, TypeError, AttributeError, pickle.PicklingError):
            self._items.append(request)
            return
        if self._zdict is None:
            self._zdict = raw
        deflate = zlib.compressobj(6, zlib.DEFLATED, -15, 9, zlib.Z_DEFAULT_STRATEGY, self._zdict)
        self._items.append(deflate.compress(raw) + deflate.flush())

    def pop(self) -> Request | None:
        return self._unpack(self._items.popleft()) if self._items else None

    def peek(self) -> Request | None:
        return self._unpack(self._items[0]) if self._items else None

    def close(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def _unpack(self, item: bytes | Request) -> Request:
        if not isinstance(item, bytes):
            return item
        assert self._zdict is not None
        raw = zlib.decompressobj(-15, self._zdict).decompress(item)
        return request_from_dict(pickle.loads(raw), spider=self._spider)  # noqa: S301 - our own pickles
