"""The seen-set in Redis: a Bloom filter in one Redis string, set and read by one Lua script (SETBIT).

For a crawl shared by many workers, the URLs known must be one set on one Redis, and at 100 M URLs a SET of
URL fingerprints (about 88 bytes each) does not fit where a Bloom filter does: sized for ``expected`` URLs at
``false_positive``, ``m = -n ln p / (ln 2)^2`` bits (1.8 bytes a URL at 0.1 %: 180 MB for 100 M), with
``k = m/n ln 2`` bit positions per URL. Positions come from the URL's 16-byte BLAKE2b by double hashing
(Kirsch and Mitzenmacher), computed by the worker; the script sets them and answers, for each URL of a batch,
whether any bit was clear (the URL is new), atomically and in one round trip a batch. Redis 8's ``BF.*``
would do the same where the module is loaded; SETBIT works on every Redis (as scrapy-redis-bloomfilter
does). A Redis string holds at most 2^32 bits: a filter that needs more is refused, not silently worse.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

from synapsecrawl.errors import ConfigError

__all__ = ["MAX_BITS", "RedisBloom", "bloom_shape"]

MAX_BITS = 2**32  # a Redis string's largest size, 512 MB

# ARGV: k, then k bit positions for each URL. Returns one 0/1 per URL: 1 when it was new (a bit was clear).
_ADD = """
local k = tonumber(ARGV[1])
local out = {}
for i = 0, (#ARGV - 1) / k - 1 do
  local new = 0
  for j = 1, k do
    if redis.call('SETBIT', KEYS[1], ARGV[1 + i * k + j], 1) == 0 then new = 1 end
  end
  out[i + 1] = new
end
return out
"""

# ARGV: k, then k bit positions for each URL. Returns one 0/1 per URL: 1 when every bit is set (probably seen).
_HAS = """
local k = tonumber(ARGV[1])
local out = {}
for i = 0, (#ARGV - 1) / k - 1 do
  local all = 1
  for j = 1, k do
    if redis.call('GETBIT', KEYS[1], ARGV[1 + i * k + j]) == 0 then all = 0 break end
  end
  out[i + 1] = all
end
return out
"""


def bloom_shape(expected: int, false_positive: float) -> tuple[int, int]:
    """(bits, hashes) of a Bloom filter for ``expected`` items at ``false_positive``; ConfigError past MAX_BITS."""
    bits = math.ceil(-max(expected, 1) * math.log(false_positive) / math.log(2) ** 2)
    if bits > MAX_BITS:
        need = f"a seen-set for {expected:,} URLs at {false_positive:g} needs {bits:,} bits"
        raise ConfigError(f"{need}, more than one Redis string holds")
    return bits, max(1, round(bits / max(expected, 1) * math.log(2)))


class RedisBloom:
    """A Bloom filter at ``key`` in the Redis of ``client`` (a ``redis.Redis``), shared by every worker."""

    def __init__(self, client: Any, key: str, *, expected: int, false_positive: float) -> None:
        self._client = client
        self.key = key
        self.bits, self.hashes = bloom_shape(expected, false_positive)
        self._add = client.register_script(_ADD)
        self._has = client.register_script(_HAS)

    def positions(self, url: str) -> list[int]:
        """The ``hashes`` bit positions of ``url`` (canonical)."""
        digest = hashlib.blake2b(url.encode(), digest_size=16).digest()
        first, second = int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:], "big") | 1
        return [(first + i * second) % self.bits for i in range(self.hashes)]

    def _args(self, urls: Sequence[str]) -> list[int]:
        args = [self.hashes]
        for url in urls:
            args.extend(self.positions(url))
        return args

    def add(self, urls: Sequence[str]) -> list[bool]:
        """Record ``urls``; for each, True when it was new (one round trip for the batch)."""
        if not urls:
            return []
        return [bool(flag) for flag in self._add(keys=[self.key], args=self._args(urls))]

    def contains(self, urls: Sequence[str]) -> list[bool]:
        """For each of ``urls``, whether it is (probably) known, without recording it."""
        if not urls:
            return []
        return [bool(flag) for flag in self._has(keys=[self.key], args=self._args(urls))]
