"""Search worth citing: pages cut into passages, and the passages a result shows.

``split_passages`` cuts a page's text into passages of about a paragraph, each indexed on its own, so a result names
the passage that answers and links to it (WICG Text Fragments). What a result shows follows the page's own rules
(SNA-SNIPPET: nosnippet, max-snippet, data-nosnippet), at most ``DEFAULT_SNIPPET_CHARS`` without a limit, query
words marked ``MARK_OPEN``/``MARK_CLOSE``. ``rank_results`` ranks for both back-ends: each kind of rank scaled by
its best, weighted by ``RANK_WEIGHTS``. The rules in full: docs/search.md and docs/architecture.md, "Inside the
larger modules".
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from urllib.parse import quote

__all__ = [
    "DEFAULT_SNIPPET_CHARS",
    "HIT_CLOSE",
    "HIT_OPEN",
    "MARK_CLOSE",
    "MARK_OPEN",
    "RANK_WEIGHTS",
    "RERANK_PAGES",
    "SEPARATOR",
    "PageRank",
    "ShownPassage",
    "address_share",
    "address_words",
    "compose_snippet",
    "make_snippet",
    "phrase_pairs",
    "query_terms",
    "rank_results",
    "search_terms",
    "snippet_limit",
    "split_passages",
    "text_fragment",
]

DEFAULT_SNIPPET_CHARS = 240
MARK_OPEN, MARK_CLOSE = "«", "»"
SEPARATOR = " … "
ELLIPSIS = "…"
HIT_OPEN = "\x02"
HIT_CLOSE = "\x03"
MAX_PASSAGES_SHOWN = 2
PASSAGE_MIN_CHARS = 160  # a shorter passage takes in the next paragraph
PASSAGE_MAX_CHARS = 900  # a longer paragraph is cut at sentence ends
_SECOND_PASSAGE_MIN_CHARS = 60  # room worth showing a second passage in
_FRAGMENT_WORDS = 4

_WORD = re.compile(r"\w+", re.UNICODE)
# English function words: matched everywhere, they rank nothing and highlight noise.
_STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "in", "is",
    "it", "its", "my", "of", "on", "or", "so", "that", "the", "this", "to", "was", "what", "when", "where",
    "which", "who", "why", "with", "you", "your",
})  # fmt: skip
_SENTENCE_END = re.compile(r"(?<=[.!?…。])\s+")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_WORD_END = re.compile(r"(?<=\S)\s")  # a space just after a word: where a window may end
_HEADING_END = (".", ":", ";", ",", "!", "?", "…")


def query_terms(query: str) -> list[str]:
    """The lowercased words of a query."""
    return [w.lower() for w in _WORD.findall(query)]


def search_terms(query: str) -> list[str]:
    """The words of a query worth matching: without function words, unless there is nothing else."""
    terms = list(dict.fromkeys(query_terms(query)))
    return [t for t in terms if t not in _STOPWORDS] or terms


# -- ranking ------------------------------------------------------------------

# Weights of the ranks a score adds, each divided by its best among the candidates.
RANK_WEIGHTS = {"text": 1.0, "title": 0.5, "passage": 0.5, "phrase": 0.25, "address": 0.25}
RERANK_PAGES = 100  # pages the first stage gives the second, whose passages are ranked (search.index)
_PASSAGES_PER_HIT = 2
_PASSAGE_CANDIDATES_PER_PAGE = 8


@dataclass(frozen=True)
class PageRank:
    """A candidate page and its engine's ranks (larger-is-better) of its title and its text; ``address``, the
    share of query words its address names when the engine has it (else it is read from ``url``)."""

    page_id: int
    url: str
    title: float
    text: float
    address: float | None = None


def phrase_pairs(terms: Sequence[str]) -> list[tuple[str, str]]:
    """The query words side by side, in the query's order: what phrase proximity looks for."""
    return list(pairwise(terms))


def address_words(url: str) -> set[str]:
    """The lowercased words of the last segment of ``url``'s path, its extension dropped."""
    path = url.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    last = path.rsplit("/", 1)[-1]
    return {w.lower() for w in _WORD.findall(re.sub(r"\.(html?|php|aspx?|md|txt|pdf)$", "", last, flags=re.IGNORECASE))}


def address_share(url: str, words: set[str]) -> float:
    """The share of the query ``words`` that ``url``'s address names (a word, or its first five letters)."""
    named = address_words(url)
    return sum(1 for t in words if t in named or any(_matches(w, {t}) for w in named)) / max(1, len(words))


def _scaled(values: dict[int, float]) -> dict[int, float]:
    top = max(values.values(), default=0.0)
    return {key: value / top for key, value in values.items()} if top > 0 else {}


def rank_results(
    pages: Iterable[PageRank],
    passages: Iterable[tuple[int, int, int, float]],
    phrases: Iterable[tuple[int, int, int, float]],
    terms: Sequence[str],
    limit: int,
) -> list[tuple[int, float, list[tuple[int, int]]]]:
    """The ``limit`` best pages as (page id, score, [(ordinal, passage id), ...] shown), best first.

    ``passages`` rank passages holding any query word, ``phrases`` those holding two
    query words side by side, each as (page id, ordinal, passage id, rank), best first.
    """
    candidates = {page.page_id: page for page in pages}
    title = _scaled({key: page.title for key, page in candidates.items()})
    text = _scaled({key: page.text for key, page in candidates.items()})
    by_passage: dict[int, dict[int, list[float]]] = defaultdict(dict)  # page -> passage id -> [ordinal, rank, phrase]
    best: dict[str, dict[int, float]] = {"passage": {}, "phrase": {}}
    for kind, ranked in (("passage", passages), ("phrase", phrases)):
        column = 1 if kind == "passage" else 2
        for page_id, ordinal, passage_id, rank in ranked:
            if page_id not in candidates or rank <= 0:
                continue
            best[kind].setdefault(page_id, rank)
            held = by_passage[page_id]
            if passage_id in held or len(held) < _PASSAGE_CANDIDATES_PER_PAGE:
                row = held.setdefault(passage_id, [float(ordinal), 0.0, 0.0])
                row[column] = max(row[column], rank)
    passage, phrase = _scaled(best["passage"]), _scaled(best["phrase"])
    top_passage, top_phrase = max(best["passage"].values(), default=1.0), max(best["phrase"].values(), default=1.0)
    words = set(terms)
    score: dict[int, float] = {}
    for key, page in candidates.items():
        address = page.address if page.address is not None else address_share(page.url, words)
        score[key] = (
            RANK_WEIGHTS["text"] * text.get(key, 0.0)
            + RANK_WEIGHTS["title"] * title.get(key, 0.0)
            + RANK_WEIGHTS["passage"] * passage.get(key, 0.0)
            + RANK_WEIGHTS["phrase"] * phrase.get(key, 0.0)
            + RANK_WEIGHTS["address"] * address
        )
    chosen = sorted(score, key=lambda key: (-score[key], key))[:limit]
    phrase_share = RANK_WEIGHTS["phrase"] / RANK_WEIGHTS["passage"]
    results = []
    for key in chosen:
        held = by_passage.get(key, {})
        order = sorted(
            held,
            key=lambda pid: (-(held[pid][1] / top_passage + phrase_share * held[pid][2] / top_phrase), held[pid][0]),
        )
        results.append((key, score[key], [(int(held[pid][0]), pid) for pid in order[:_PASSAGES_PER_HIT]]))
    return results


# -- cutting a page into passages --------------------------------------------


def _sentences(paragraph: str, limit: int) -> list[str]:
    """``paragraph`` cut at sentence ends (or, failing that, spaces) into pieces of at most ``limit``."""
    if len(paragraph) <= limit:
        return [paragraph] if paragraph else []  # its sentences joined again, as its spaces are single
    pieces: list[str] = []
    current = ""
    for whole in _SENTENCE_END.split(paragraph):
        sentence = whole
        while len(sentence) > limit:
            cut = sentence.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence[:cut].rstrip())
            sentence = sentence[cut:].lstrip()
        if current and len(current) + 1 + len(sentence) > limit:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        pieces.append(current)
    return [p for p in pieces if p]


def _is_heading(paragraph: str) -> bool:
    return len(paragraph) <= 80 and not paragraph.endswith(_HEADING_END) and len(paragraph.split()) <= 10


def _squashed(block: str) -> str:
    """``block`` without control characters, its white space runs one space, stripped.

    Extraction writes its paragraphs so already: such a block (printable, so its only white space is " ", with no two
    in a row and none at its ends) is kept as it is, where splitting it into words and joining them took much of
    the cut's time.
    """
    if block.isprintable() and "  " not in block and block[:1] != " " and block[-1:] != " ":
        return block
    return " ".join(_CONTROL.sub(" ", block).split())


def split_passages(text: str, title: str = "") -> list[str]:
    """The passages of a page's text, in order; paragraphs inside one are joined by a newline.

    Paragraphs are the blank-line separated blocks extraction writes. A
    passage shorter than ``PASSAGE_MIN_CHARS`` takes in the next paragraph
    (so a heading stays with what it heads), and none grows past
    ``PASSAGE_MAX_CHARS``. A first heading the page ``title`` contains is
    left out, since a result shows the title already, unless it is all the
    page says: a result always shows a passage (YOT-RESULTS).
    """
    paragraphs = [p for p in map(_squashed, re.split(r"\n\s*\n", text)) if p]
    if (
        len(paragraphs) > 1
        and _is_heading(paragraphs[0])
        and paragraphs[0].casefold() in " ".join(title.split()).casefold()
    ):
        paragraphs = paragraphs[1:]  # the <h1>, and the <title> says it too ("Page — Site")
    pieces: list[str] = []
    for paragraph in paragraphs:  # most fit whole: no call for them
        if len(paragraph) <= PASSAGE_MAX_CHARS:
            pieces.append(paragraph)
        else:
            pieces.extend(_sentences(paragraph, PASSAGE_MAX_CHARS))
    passages: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        full = size >= PASSAGE_MIN_CHARS or (size >= PASSAGE_MIN_CHARS // 2 and _is_heading(piece))
        if current and (full or size + 1 + len(piece) > PASSAGE_MAX_CHARS):
            passages.append("\n".join(current))
            current, size = [], 0
        current.append(piece)
        size += len(piece) + (1 if size else 0)
    if current:
        passages.append("\n".join(current))
    return passages


# -- what a result shows ------------------------------------------------------


@dataclass(frozen=True)
class ShownPassage:
    """One passage as a result shows it: ordinal in the page, text with « » marks, link to it."""

    passage: int
    text: str
    anchor: str


@dataclass(frozen=True)
class _Marked:
    """A passage's plain text and where the query words are in it."""

    plain: str  # paragraphs separated by "\n"
    hits: tuple[tuple[int, int], ...]

    @classmethod
    def parse(cls, marked: str) -> _Marked:
        plain: list[str] = []
        hits: list[tuple[int, int]] = []
        length = 0
        start: int | None = None
        for part in re.split(f"([{HIT_OPEN}{HIT_CLOSE}])", marked):
            if part == HIT_OPEN:
                start = length
            elif part == HIT_CLOSE:
                if start is not None and length > start:
                    hits.append((start, length))
                start = None
            else:
                plain.append(part)
                length += len(part)
        return cls("".join(plain), tuple(hits))

    def render(self, a: int, b: int, *, marks: bool = True) -> str:
        """Text ``[a, b)`` for display: one line, marks around whole hits, ellipses at cuts."""
        out: list[str] = [ELLIPSIS] if a > 0 else []
        pos = a
        for start, end in self.hits if marks else ():
            if start >= a and end <= b:
                out += [self.plain[pos:start], MARK_OPEN, self.plain[start:end], MARK_CLOSE]
                pos = end
        out.append(self.plain[pos:b])
        if b < len(self.plain):
            out.append(ELLIPSIS)
        return "".join(out).replace("\n", " ")


def _window_start(marked: _Marked, limit: int) -> int:
    """Where a window of about ``limit`` characters should start: a little before the first hit."""
    if not marked.hits or len(marked.plain) <= limit:
        return 0
    first = marked.hits[0][0]
    lead = min(limit // 4, 60)
    if first <= lead:
        return 0
    start = first - lead
    while start < first and not marked.plain[start - 1].isspace():
        start += 1  # to the start of a word
    return start


def _window(marked: _Marked, limit: int) -> tuple[str, int, int]:
    """The longest display of ``marked`` within ``limit`` characters, cut at spaces; and its span."""
    plain = marked.plain
    if limit <= 0 or not plain:
        return "", 0, 0
    a = _window_start(marked, limit)
    whole = marked.render(a, len(plain))
    if len(whole) <= limit:
        return whole, a, len(plain)
    ends = [found.start() for found in _WORD_END.finditer(plain, a + 1)]
    # render(a, b)'s length, counted rather than rendered: the text, an ellipsis at each cut, and the two marks
    # of each hit wholly inside (hits are in order and apart, so those from ``first`` on that end by b).
    first = bisect_left([start for start, _ in marked.hits], a)
    stops = [end for _, end in marked.hits]
    fixed = (len(ELLIPSIS) if a > 0 else 0) - a

    def length(b: int) -> int:
        inside = max(0, bisect_right(stops, b) - first)
        return fixed + b + inside * (len(MARK_OPEN) + len(MARK_CLOSE)) + (len(ELLIPSIS) if b < len(plain) else 0)

    lo, hi, best = 0, len(ends) - 1, -1
    while lo <= hi:  # render length grows with the end, so the best end is found by bisection
        mid = (lo + hi) // 2
        if length(ends[mid]) <= limit:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    if best >= 0:
        return marked.render(a, ends[best]), a, ends[best]
    piece = plain[a : a + limit].replace("\n", " ")  # not one whole word fits: plain characters
    return piece, a, a + len(piece)


def _fragment_words(text: str, *, last: bool) -> str:
    words = text.split()
    chosen = words[-_FRAGMENT_WORDS:] if last else words[:_FRAGMENT_WORDS]
    return " ".join(chosen)


def _encode_fragment_part(text: str) -> str:
    return quote(text, safe="").replace("-", "%2D")  # "-" and "," are syntax in a text directive


def text_fragment(url: str, shown: str) -> str:
    """A link to ``url`` that scrolls to and highlights ``shown`` (paragraphs split on "\\n").

    ``#:~:text=start,end`` (WICG Text Fragments): the first words of the
    first paragraph shown to the last words of the last one. Text a site did
    not write (``[email]``, ``[phone]`` left by scrubbing) cannot be found on
    the page, so such a passage gets a plain link.
    """
    lines = [line for line in shown.split("\n") if line.split()]
    if not lines:
        return url
    start = _fragment_words(lines[0], last=False)
    end = _fragment_words(lines[-1], last=True)
    if len(lines) == 1 and len(lines[0].split()) <= 2 * _FRAGMENT_WORDS:
        start, end = lines[0].strip(), ""
    if "[email]" in start + end or "[phone]" in start + end:
        return url
    directive = _encode_fragment_part(start) + ("," + _encode_fragment_part(end) if end else "")
    return f"{url}{':~:' if '#' in url else '#:~:'}text={directive}"


def snippet_limit(*, nosnippet: bool, max_snippet: int | None, budget: int = DEFAULT_SNIPPET_CHARS) -> int:
    """Characters a result may show: 0 under nosnippet, else the smaller of max-snippet and the budget."""
    if nosnippet or max_snippet == 0:
        return 0
    if max_snippet is None or max_snippet < 0:
        return budget
    return min(max_snippet, budget)


def compose_snippet(
    url: str,
    passages: Sequence[tuple[int, str]],
    *,
    nosnippet: bool,
    max_snippet: int | None,
    budget: int = DEFAULT_SNIPPET_CHARS,
) -> tuple[str, tuple[ShownPassage, ...]]:
    """The snippet and shown passages of one result.

    ``passages`` are (ordinal, text) best first, the query words marked with
    ``HIT_OPEN``/``HIT_CLOSE``. At most ``MAX_PASSAGES_SHOWN`` are shown, joined
    by ``SEPARATOR``; the whole snippet, marks included, fits the limit.
    """
    remaining = snippet_limit(nosnippet=nosnippet, max_snippet=max_snippet, budget=budget)
    shown: list[ShownPassage] = []
    for ordinal, text in passages[:MAX_PASSAGES_SHOWN]:
        if shown:
            remaining -= len(SEPARATOR)
            if remaining < _SECOND_PASSAGE_MIN_CHARS:
                break
        marked = _Marked.parse(text)
        display, a, b = _window(marked, remaining + (len(ELLIPSIS) if shown else 0))
        if shown and display.startswith(ELLIPSIS):
            display = display[len(ELLIPSIS) :]  # the separator already says text was left out
        if not display.strip() or len(display) > remaining:
            break
        shown.append(ShownPassage(ordinal, display, text_fragment(url, marked.plain[a:b])))
        remaining -= len(display)
    return SEPARATOR.join(p.text for p in shown), tuple(shown)


# -- a snippet without the index ------------------------------------------------


def _matches(word: str, terms: set[str]) -> bool:
    # The index stems (Porter); without it a shared five-letter prefix is close enough.
    return word in terms or any(len(t) >= 4 and word[:5] == t[:5] for t in terms)


def _mark_words(passage: str, terms: set[str]) -> tuple[str, int]:
    count = 0

    def mark(match: re.Match[str]) -> str:
        nonlocal count
        if not _matches(match.group().lower(), terms):
            return match.group()
        count += 1
        return f"{HIT_OPEN}{match.group()}{HIT_CLOSE}"

    return _WORD.sub(mark, passage), count


def make_snippet(text: str, query: str, *, nosnippet: bool, max_snippet: int | None) -> str:
    """The snippet of ``text`` for ``query``, found without the index (same rules and marks)."""
    terms = set(search_terms(query))
    scored = []
    for ordinal, passage in enumerate(split_passages(text)):
        marked, count = _mark_words(passage, terms)
        scored.append((-count, ordinal, marked))
    scored.sort()
    snippet, _ = compose_snippet("", [(o, m) for _, o, m in scored], nosnippet=nosnippet, max_snippet=max_snippet)
    return snippet
