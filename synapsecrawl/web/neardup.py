"""Near-duplicate pages: a 64-bit SimHash of a page's main text (Charikar; Manku, Jain and Das Sarma, 2007).

``fingerprint`` hashes the text's distinct word 3-shingles (lower case, words of letters and digits) with the
``simhash`` library; two texts within ``near_duplicate_bits`` differing bits (``WebPolicy``, 3 as in Manku
et al. for 64 bits) are one page. ``NearDuplicates`` keeps the first URL stored with each fingerprint in the
library's block index (k + 1 blocks: two fingerprints within k bits agree on one block, so a lookup reads
one bucket per block) and answers, for a new page, the URL it duplicates. A text too short to judge (fewer
than ``MIN_WORDS`` words) is never a duplicate: short error pages and stubs look alike without being copies.
``simhash`` (and numpy, which it imports) is imported when a web crawl first hashes or indexes a page: every
``scrapy crawl`` loads this module through the spider loader, and most never crawl the web.
"""

from __future__ import annotations

import logging
import re

__all__ = ["MIN_WORDS", "NearDuplicates", "fingerprint"]

MIN_WORDS = 20
_WORD = re.compile(r"\w+")

# The library logs every lookup at DEBUG and large buckets at WARNING with bucket contents: not page text, but
# nothing an operator reads either.
logging.getLogger("simhash").setLevel(logging.ERROR)


def fingerprint(text: str) -> int | None:
    """The SimHash of ``text``'s word 3-shingles; None when it has fewer than ``MIN_WORDS`` words."""
    words = _WORD.findall(text.lower())
    if len(words) < MIN_WORDS:
        return None
    # Each distinct shingle once: counted, the shingles of a menu or footer repeated on every page of a site
    # (its link list) would outweigh the text that differs.
    shingles = list(dict.fromkeys(" ".join(words[i : i + 3]) for i in range(len(words) - 2)))
    from simhash import Simhash

    return int(Simhash(shingles).value)


class NearDuplicates:
    """The URL first stored under each fingerprint, found again within ``bits`` differing bits."""

    def __init__(self, bits: int) -> None:
        from simhash import SimhashIndex

        self._bits = bits
        self._index = SimhashIndex([], k=bits)
        self._urls: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._urls)

    def original(self, value: int) -> str | None:
        """The URL stored earlier whose text is within ``bits`` of ``value``, or None."""
        from simhash import Simhash

        found = self._index.get_near_dups(Simhash(value))
        if not found:
            return None
        return self._urls[min(found, key=int)]  # the first stored, whatever order the buckets hold

    def add(self, value: int, url: str) -> None:
        """Record ``url``'s text as stored, under ``value``."""
        from simhash import Simhash

        key = str(len(self._urls))
        self._urls[key] = url
        self._index.add(key, Simhash(value))
