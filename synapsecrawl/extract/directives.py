"""Robots directives from <meta> tags and X-Robots-Tag headers, for one bot.

Follows Google's "Robots meta tag, data-nosnippet, and X-Robots-Tag
specifications": a meta tag named ``robots`` or named after one of our tokens
applies; in an X-Robots-Tag header a ``token:`` scope applies to the directives
after it, up to the next scope, and each header value starts unscoped.
Everything that applies is merged most-restrictively. Unknown directives are
ignored and counted nowhere: a site owner's typo must not stop a crawl.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from synapsecrawl.extract.page import Directives

__all__ = ["parse_directives"]

# Directives whose value follows a colon; anything else before a colon is a bot scope.
_VALUED = frozenset({"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"})
_SCOPE = re.compile(r"[a-z][a-z0-9_.\-]*")


class _Merge:
    """Most-restrictive accumulator."""

    def __init__(self) -> None:
        self.noindex = False
        self.nofollow = False
        self.nosnippet = False
        self.max_snippet: int | None = None

    def apply(self, name: str, value: str | None) -> None:
        if name in ("noindex", "none"):
            self.noindex = True
        if name in ("nofollow", "none"):
            self.nofollow = True
        if name == "nosnippet":
            self.nosnippet = True
        if name == "max-snippet" and value is not None:
            self._limit(value)

    def _limit(self, value: str) -> None:
        try:
            limit = int(value.strip())
        except ValueError:
            return
        if limit < 0:  # -1: no limit
            return
        if limit == 0:
            self.nosnippet = True
        self.max_snippet = limit if self.max_snippet is None else min(self.max_snippet, limit)

    def result(self) -> Directives:
        max_snippet = 0 if self.nosnippet else self.max_snippet
        return Directives(self.noindex, self.nofollow, self.nosnippet, max_snippet)


def _split(item: str) -> tuple[str, str | None]:
    name, colon, value = item.partition(":")
    return name.strip().lower(), (value.strip() if colon else None)


def _apply_meta(merge: _Merge, content: str) -> None:
    for item in content.split(","):
        name, value = _split(item)
        merge.apply(name, value)


def _apply_header(merge: _Merge, header: str, tokens: frozenset[str]) -> None:
    applies = True
    for item in header.split(","):
        name, value = _split(item)
        if value is not None and name not in _VALUED and _SCOPE.fullmatch(name):
            applies = name in tokens
            if not value:
                continue
            name, value = _split(value)
        if applies:
            merge.apply(name, value)


def parse_directives(
    meta: Mapping[str, str] | Iterable[tuple[str, str]],
    x_robots_tag: Sequence[str],
    tokens: Sequence[str],
) -> Directives:
    """Merge the directives addressed to us or to all robots.

    `meta` holds (name, content) pairs of <meta> tags; names other than
    ``robots`` and our `tokens` are skipped. `x_robots_tag` holds raw header
    values. Tokens match case-insensitively. ``nosnippet`` and
    ``max-snippet:0`` both give ``max_snippet == 0``.
    """
    wanted = frozenset(t.strip().lower() for t in tokens if t.strip())
    merge = _Merge()
    pairs = meta.items() if isinstance(meta, Mapping) else meta
    for name, content in pairs:
        if not isinstance(name, str) or not isinstance(content, str):
            continue
        key = name.strip().lower()
        if key == "robots" or key in wanted:
            _apply_meta(merge, content)
    for header in x_robots_tag:
        if isinstance(header, str):
            _apply_header(merge, header, wanted)
    return merge.result()
