"""The set of URLs a web crawl already knows, in bounded memory.

Small crawls keep an exact set of 8-byte URL hashes (a collision among 100 M URLs has a chance of about
one in four thousand). Past ``seen_exact_max`` URLs (``WebPolicy``) the set becomes a Bloom filter of the
same hashes (``rbloom``, a Rust Bloom filter: writing one by hand would be slower and no smaller), sized for
``expected`` URLs at ``seen_false_positive``: about 1.8 bytes a URL at 0.1 %. A false positive means a
URL never seen is taken for seen and not fetched: a page missed, never a page fetched twice, which is the
reading that asks less of a site. Past ``expected`` the rate rises; ``false_positive_rate`` says by how much.
"""

from __future__ import annotations

import hashlib
import math

from rbloom import Bloom

from synapsecrawl.profiles import WebPolicy

__all__ = ["SeenSet", "url_key"]


def url_key(url: str) -> int:
    """The 8-byte hash a URL is known by."""
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "big")


def _spread(key: int) -> int:
    """A key spread to the 128-bit signed integer rbloom derives its bit positions from."""
    return int.from_bytes(hashlib.blake2b(key.to_bytes(8, "big"), digest_size=16).digest(), "big", signed=True)


class SeenSet:
    """``add`` says whether a URL is new; exact up to ``exact_max`` URLs, then a Bloom filter."""

    def __init__(self, policy: WebPolicy, expected: int) -> None:
        self._exact_max = policy.seen_exact_max
        self._rate = policy.seen_false_positive
        self.expected = max(expected, policy.seen_exact_max * 2)
        self._exact: set[int] | None = set()
        self._bloom: Bloom | None = None
        self.count = 0

    @property
    def exact(self) -> bool:
        """Whether the set is still exact."""
        return self._exact is not None

    def _to_bloom(self) -> None:
        assert self._exact is not None
        self._bloom = Bloom(self.expected, self._rate, _spread)
        self._bloom.update(self._exact)
        self._exact = None

    def add(self, url: str) -> bool:
        """Record ``url`` (canonical); True when it was not known (or, past the exact part, probably not)."""
        key = url_key(url)
        if self._exact is not None:
            if key in self._exact:
                return False
            self._exact.add(key)
            self.count += 1
            if self.count > self._exact_max:
                self._to_bloom()
            return True
        assert self._bloom is not None
        if key in self._bloom:
            return False
        self._bloom.add(key)
        self.count += 1
        return True

    def __contains__(self, url: str) -> bool:
        key = url_key(url)
        if self._exact is not None:
            return key in self._exact
        assert self._bloom is not None
        return key in self._bloom

    def bloom_bytes(self) -> int:
        """The Bloom filter's size in bytes (0 while the set is exact)."""
        return 0 if self._bloom is None else self._bloom.size_in_bits // 8

    def false_positive_rate(self) -> float:
        """The filter's false-positive rate at its present count (0 while exact): ``(1 - e^(-kn/m))^k``."""
        if self._bloom is None:
            return 0.0
        bits = self._bloom.size_in_bits
        hashes = max(1, round(bits / self.expected * math.log(2)))
        return float((1 - math.exp(-hashes * self.count / bits)) ** hashes)
