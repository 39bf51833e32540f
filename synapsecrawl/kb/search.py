"""Snippets for search results: the best passage, within the page's own limits.

``nosnippet`` means no text at all (SNA-SNIPPET); ``max-snippet:N`` at most N
characters; text under ``data-nosnippet`` never reaches ``snippet_text``.
"""

from __future__ import annotations

import re

__all__ = ["DEFAULT_SNIPPET_CHARS", "make_snippet", "query_terms"]

DEFAULT_SNIPPET_CHARS = 240
_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(query: str) -> list[str]:
    """The lowercased words of a query."""
    return [w.lower() for w in _WORD.findall(query)]


def _passages(text: str) -> list[str]:
    parts = [p.strip() for p in re.split(r"\n\s*\n", text)]
    return [p for p in parts if p] or ([text.strip()] if text.strip() else [])


def _matches(word: str, terms: set[str]) -> bool:
    # The index stems (porter); a shared stem-length prefix is close enough to pick a passage.
    return word in terms or any(len(t) >= 4 and word[:5] == t[:5] for t in terms)


def make_snippet(text: str, query: str, *, nosnippet: bool, max_snippet: int | None) -> str:
    """The passage of ``text`` that best answers ``query``, trimmed to the limit."""
    if nosnippet or max_snippet == 0:
        return ""
    limit = DEFAULT_SNIPPET_CHARS if max_snippet is None or max_snippet < 0 else max_snippet
    limit = min(limit, DEFAULT_SNIPPET_CHARS)
    terms = set(query_terms(query))
    passages = _passages(text)
    if not passages:
        return ""

    def score(passage: str) -> int:
        return sum(1 for w in _WORD.findall(passage.lower()) if _matches(w, terms))

    best = max(passages, key=score)
    words = best.lower()
    first = min((words.find(t[:5]) for t in terms if t[:5] and t[:5] in words), default=0)
    start = max(0, first - limit // 3)
    if start:
        space = best.find(" ", start)
        start = space + 1 if 0 <= space < first else start
    piece = " ".join(best[start:].split())
    if len(piece) <= limit:
        return piece
    cut = piece[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit // 2 else cut
