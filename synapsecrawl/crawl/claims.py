"""Claims: a piece of work that only one reader may take, in this process or across machines.

Two feeds read at the same moment can both find that an article is new, and
each would fetch it for its preview; SER-OGIMAGE promises the article page is
fetched once. So taking an entry is a claim that only one can win: ``claim``
says yes once per key. ``LocalClaims`` holds them in this process (feeds are
parsed in threads, so the check and the mark are one step under a lock);
``RedisClaims`` is a Redis ``SET NX`` with an expiry, for a crawl that shares a
Redis (``PACING_REDIS_URL``, under ``PACING_REDIS_PREFIX``), so machines
reading the same feeds take each entry once. A claim lasts ``CLAIM_SECONDS``:
the entry is stored long before, and a machine that died holding one frees
it for a later refresh. A Redis that does not answer wins nothing (the entry
waits for the next refresh rather than risk a second fetch).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import redis

__all__ = ["CLAIM_SECONDS", "LocalClaims", "RedisClaims", "shared_claims"]

logger = logging.getLogger(__name__)

CLAIM_SECONDS = 86_400  # a day: longer than any entry takes to settle (retries, Crawl-delay waits)


@dataclass
class LocalClaims:
    """This process's claims, safe to call from several threads at once."""

    _taken: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def claim(self, key: str) -> bool:
        """True for the first caller with ``key``; False for every later one."""
        with self._lock:
            if key in self._taken:
                return False
            self._taken.add(key)
            return True


@dataclass
class RedisClaims:
    """Claims shared by every machine on one Redis."""

    url: str
    prefix: str
    seconds: int = CLAIM_SECONDS
    _client: redis.Redis = field(init=False)
    _errors: tuple[type[Exception], ...] = field(init=False, default=())
    _warned: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        import redis  # a Redis client is imported only by a crawl that shares one

        from synapsecrawl.pacing.redisclient import sync_redis

        self._client = sync_redis(self.url)
        self._errors = (redis.RedisError,)

    def claim(self, key: str) -> bool:
        """True when this machine is the first to claim ``key`` within ``seconds``."""
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()  # keys of bounded length
        try:
            return bool(self._client.set(f"{self.prefix}:claim:{digest}", 1, nx=True, ex=self.seconds))
        except self._errors as error:
            if not self._warned:
                self._warned = True
                logger.warning("claims: Redis at %s failed (%s): entries wait for a later refresh", self.url, error)
            return False

    def close(self) -> None:
        """Close the connection."""
        self._client.close()


def shared_claims(redis_url: str, prefix: str) -> RedisClaims | None:
    """Claims shared through ``redis_url`` under ``prefix``; ``None`` when the crawl shares no Redis."""
    return RedisClaims(redis_url, prefix) if redis_url else None
