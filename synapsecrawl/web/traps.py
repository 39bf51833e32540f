"""A discovered URL's canonical form, and whether it has the shape of a crawler trap.

``web_canonical`` is the project's canonical form (``synapsecrawl.urls.canonical``: w3lib's, no fragment)
with session-id parameters removed (``;jsessionid=`` path parameters and query parameters such as
``PHPSESSID``, ``sid``), so one page under many session URLs is counted once. ``TrapGuard`` judges a URL by
its shape and by what the crawl has already seen of its site: a path segment repeated ``repeated_segments``
times (relative links that nest forever), more than ``variants_per_path`` distinct sort/filter-like queries
under one path (ten times that for other queries), more than ``calendar_pages`` distinct date-bearing URLs
on one site (an endless calendar). Read from the profile's ``[web]`` table (``WebPolicy``). Its memory is
bounded: a path's query variants are counted only up to the cap, as 8-byte hashes. A shared crawl counts the
same ``marks`` in Redis, across workers (``synapsecrawl.web.shared``).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from synapsecrawl.profiles import WebPolicy
from synapsecrawl.urls import canonical, host_of

__all__ = ["SESSION_PARAMETERS", "TrapGuard", "TrapMarks", "web_canonical"]

# Parameter names that carry a session, never a page (Heritrix's and StormCrawler's normalisers strip these too),
# compared in lower case: w3lib's url_query_cleaner compares names case-sensitively, and sites spell them both ways.
SESSION_PARAMETERS = frozenset(
    {"jsessionid", "phpsessid", "aspsessionid", "sid", "sessionid", "session_id", "session", "cfid", "cftoken", "sess"}
)
_PATH_SESSION = re.compile(r";(?:jsessionid|phpsessid|sid|sessionid)=[^/?#]*", re.IGNORECASE)
# Sort, filter and view parameters: each value multiplies a listing's URLs without adding a page.
_FACETS = re.compile(r"sort|order|filter|facet|view|dir|limit|per_?page|page_?size|layout|display|color|price|size")
# A date in a path segment or a parameter: 2024/05/17, 2024-05, 20240517, or year/month/day/date parameters.
_DATE_PATH = re.compile(
    r"(?:^|/)(?:19|20)\d\d(?:[-/_](?:0?[1-9]|1[0-2]))(?:[-/_]\d\d?)?(?:/|$)|(?:^|/)(?:19|20)\d{6}(?:/|$)"
)
_DATE_PARAMS = frozenset({"date", "day", "month", "year", "week", "cal", "calendar", "time", "from", "to"})
_DATE_VALUE = re.compile(r"^(?:19|20)\d\d(?:[-/]?\d\d?){0,2}$")
_MAX_SEGMENTS = 24  # deeper paths are nesting, not a site's structure


def _is_session(name: str) -> bool:
    lowered = name.lower()
    return lowered in SESSION_PARAMETERS or lowered.startswith("aspsessionid")


def web_canonical(url: str) -> str:
    """``url`` in the project's canonical form, its session-id parameters removed."""
    url = canonical(url)
    parts = urlsplit(url)
    path = _PATH_SESSION.sub("", parts.path)
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if not _is_session(k)]
        if len(kept) != len(pairs):
            query = urlencode(kept)
    if path == parts.path and query == parts.query:
        return url
    return urlunsplit((parts.scheme, parts.netloc, path, query, ""))


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def _dated(path: str, pairs: list[tuple[str, str]]) -> bool:
    if _DATE_PATH.search(path):
        return True
    return any(k.lower() in _DATE_PARAMS and _DATE_VALUE.match(v) for k, v in pairs)


@dataclass(frozen=True)
class TrapMarks:
    """What a URL adds to its site's trap counts: a date-bearing URL's digest under its host (``dated``), and
    a URL with a query its query's digest (``variant``) under its host and path (``path_key``, a digest),
    of which ``cap`` may be seen. Digests are 63-bit, so Redis keeps a host's dated ones as an intset."""

    host: str
    path: str
    dated: int | None
    path_key: str | None
    variant: int | None
    cap: int
    faceted: bool


class TrapGuard:
    """Remembers, per site and per path, what the crawl was offered; ``judge`` names a trap or returns None.

    ``shape`` is what a URL alone shows; ``marks`` what it adds to the counts, which a shared crawl keeps in
    Redis (``synapsecrawl.web.shared``) so that a trap's counts hold across workers."""

    def __init__(self, policy: WebPolicy) -> None:
        self._policy = policy
        self._variants: dict[tuple[str, str], set[int]] = {}
        self._calendar: dict[str, set[int]] = {}

    def shape(self, url: str) -> str | None:
        """Why ``url`` (canonical) is a trap by its path alone (nesting), or None."""
        segments = [s for s in urlsplit(url).path.split("/") if s]
        if len(segments) > _MAX_SEGMENTS:
            return f"a path of {len(segments)} segments"
        if segments:
            segment, times = Counter(segments).most_common(1)[0]
            if times >= self._policy.repeated_segments:
                return f"the path segment {segment[:40]!r} repeated {times} times"
        return None

    def marks(self, url: str) -> TrapMarks:
        """What ``url`` (canonical) adds to its site's counts of dated URLs and of query variants."""
        parts = urlsplit(url)
        host = host_of(url)
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        dated = _digest(url) >> 1 if _dated(parts.path, pairs) else None
        faceted = any(_FACETS.search(k.lower()) for k, _ in pairs)
        cap = self._policy.variants_per_path * (1 if faceted else 10)
        if not pairs:
            return TrapMarks(host, parts.path, dated, None, None, cap, faceted)
        path_key = f"{_digest(host + ' ' + parts.path):016x}"
        return TrapMarks(host, parts.path, dated, path_key, _digest(parts.query) >> 1, cap, faceted)

    def calendar_reason(self) -> str:
        return f"more than {self._policy.calendar_pages} date-bearing URLs on the site (a calendar)"

    @staticmethod
    def variants_reason(marks: TrapMarks) -> str:
        kind = "sort/filter " if marks.faceted else ""
        return f"more than {marks.cap} {kind}query variants of {marks.path[:60]}"

    def judge(self, url: str) -> str | None:
        """Why ``url`` (canonical) is a trap, in a few words; None when it is not. A URL judged once is
        judged the same again (its hash is remembered), so a page linked twice is not cut the second time."""
        shape = self.shape(url)
        if shape is not None:
            return shape
        marks = self.marks(url)
        if marks.dated is not None:
            seen = self._calendar.setdefault(marks.host, set())
            if marks.dated not in seen:
                if len(seen) >= self._policy.calendar_pages:
                    return self.calendar_reason()
                seen.add(marks.dated)
        if marks.variant is not None:
            variants = self._variants.setdefault((marks.host, marks.path), set())
            if marks.variant not in variants:
                if len(variants) >= marks.cap:
                    return self.variants_reason(marks)
                variants.add(marks.variant)
        return None
