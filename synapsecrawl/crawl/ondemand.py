"""Fetching a page an agent asked for (SNA-ONDEMAND): when to fetch, and what to answer.

A page asked for is fetched through the crawl's own machinery (robots.txt,
pacing, address guard, type gate, size cap), and only when no copy of it is
fresh: a stored copy younger than the profile's ``ondemand_min_refetch`` (or
an outcome remembered from an earlier ask) is answered without a request.

What an agent gets is what a search result shows, for one page (SNA-PRIVACY,
SNA-SNIPPET): its URL, title, description and opening passages within the
snippet budget, never its full text; the text is already scrubbed of personal
data when stored. Failures are ``FetchError``s with a stable ``code``. Time
is passed in (seconds, any one clock per ``RecentFetches``), never read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from w3lib.url import safe_url_string

from synapsecrawl.errors import ConfigError
from synapsecrawl.kb.records import PageRecord
from synapsecrawl.kb.search import compose_snippet, split_passages
from synapsecrawl.numbers import read_port
from synapsecrawl.profiles import Profile

__all__ = [
    "REMEMBERED_CODES",
    "FetchError",
    "RecentFetches",
    "check_arguments",
    "check_fetch_url",
    "check_serving",
    "http_status",
    "is_fresh",
    "page_address",
    "shape_page",
]

_KB_NAME = re.compile(r"^[\w.-]{1,100}$")
_STATUS = {
    "bad_request": 400,
    "bad_url": 400,
    "robots_disallowed": 403,
    "robots_unavailable": 503,
    "address_refused": 403,
    "refused": 403,
    "type_refused": 415,
    "noindex": 404,
    "unreadable": 502,
    "http_status": 502,
    "unreachable": 502,
    "timeout": 504,
    "unavailable": 503,
    # the search service's (synapsecrawl.search.api)
    "unknown_kb": 404,
    "not_found": 404,
    "unauthorized": 401,
    "bad_host": 403,
}
# Outcomes of a request that reached the site: asked again, they are answered from memory.
REMEMBERED_CODES = frozenset({"type_refused", "noindex", "http_status"})


class FetchError(Exception):
    """Why a page asked for is not answered; ``code`` is one of ``http_status``'s keys."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __reduce__(self) -> tuple[type[FetchError], tuple[str, str]]:
        # Exception pickles its args (the message alone); a search process sends its errors to the server whole.
        return (FetchError, (self.code, self.message))

    def as_json(self) -> dict[str, Any]:
        """The error as the API returns it."""
        return {"error": {"code": self.code, "message": self.message}}


def http_status(code: str) -> int:
    """The HTTP status POST /api/web_fetch answers a ``FetchError`` code with."""
    return _STATUS.get(code, 500)


def check_fetch_url(url: object, max_length: int = 0) -> str:
    """The URL an agent asked for, stripped; raises FetchError("bad_url") for anything but http(s) with a
    host, or longer, as it would be requested, than ``max_length`` (Scrapy's URLLENGTH_LIMIT; 0: no limit)."""
    if not isinstance(url, str) or not url.strip():
        raise FetchError("bad_url", 'give the page as {"url": "https://..."}')
    url = url.strip()
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (a bad port raises here)
    except ValueError:
        raise FetchError("bad_url", f"not a valid URL: {url!r}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise FetchError("bad_url", f"not an http(s) URL: {url!r}")
    length = len(page_address(url))
    if 0 < max_length < length:  # the crawl drops such a URL (UrlLengthMiddleware): so does an ask
        raise FetchError(
            "bad_url", f"the URL is {length} characters long, over the limit of {max_length} (URLLENGTH_LIMIT)"
        )
    return url


def page_address(url: str) -> str:
    """The page ``url`` names, as one key: the fragment dropped (never sent), scheme and host lowercased
    (RFC 3986 §6.2.2.1), an empty path made ``/``, and escaped as the request will be."""
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    netloc = f"{userinfo}{at}{hostport.lower()}"
    return safe_url_string(urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, "")))


def check_arguments(*, kb: str | None = None, **unknown: object) -> str:
    """The KB on-demand pages go to, from ``-a`` arguments; raises ConfigError with a one-line message."""
    unknown.pop("_job", None)  # Scrapyd passes its job id as a spider argument
    if unknown:
        raise ConfigError(f"ondemand takes only -a kb=NAME, not: {', '.join(sorted(unknown))}")
    name = kb or "default"
    if not _KB_NAME.match(name):
        raise ConfigError(f"kb {name!r} may hold only letters, digits, '.', '_' and '-'")
    return name


def check_serving(profile: Profile, host: object, port: object) -> int:
    """The port to listen on; raises ConfigError with a one-line reason for a profile or port that cannot serve."""
    if not profile.ondemand:
        raise ConfigError(
            f"BOT_PROFILE {profile.name} does not fetch on demand (only a profile whose page "
            "promises it, snagabot, does)"
        )
    if not host:
        raise ConfigError("ONDEMAND_HOST is empty")
    return read_port("ONDEMAND_PORT", port)


def is_fresh(record: PageRecord, now: datetime, min_refetch: float) -> bool:
    """Whether ``record`` was fetched (or confirmed by a 304) less than ``min_refetch`` seconds before ``now``."""
    last = max(t for t in (record.fetched_at, record.verified_at) if t is not None)
    return now - last < timedelta(seconds=min_refetch)


@dataclass
class RecentFetches:
    """What each asked-for URL led to, kept ``min_refetch`` seconds: the stored URL, or a FetchError."""

    min_refetch: float
    _seen: dict[str, tuple[float, str | FetchError]] = field(default_factory=dict)

    def note(self, url: str, outcome: str | FetchError, now: float) -> None:
        """Remember a fetch of ``url``; only outcomes of a request the site answered are kept."""
        if isinstance(outcome, FetchError) and outcome.code not in REMEMBERED_CODES:
            return
        self._seen[url] = (now, outcome)
        for old in [u for u, (t, _) in self._seen.items() if now - t >= self.min_refetch]:
            del self._seen[old]

    def recall(self, url: str, now: float) -> str | FetchError | None:
        """The outcome of a fetch of ``url`` less than ``min_refetch`` seconds ago, or None."""
        seen = self._seen.get(url)
        if seen is None or now - seen[0] >= self.min_refetch:
            return None
        return seen[1]


def shape_page(
    record: PageRecord,
    *,
    requested_url: str,
    from_index: bool,
    truncated: bool | None = None,
    scrub_description: bool = False,
) -> dict[str, Any]:
    """What an agent sees of a stored page: a search result's view of it, never its full text."""
    passages = list(enumerate(split_passages(record.snippet_text or record.text, record.title)))
    snippet, shown = compose_snippet(record.url, passages, nosnippet=record.nosnippet, max_snippet=record.max_snippet)
    description = "" if record.nosnippet or record.max_snippet == 0 else record.description
    if scrub_description and description:
        from synapsecrawl.extract.privacy import scrub

        description = scrub(description)
    if record.max_snippet is not None and record.max_snippet > 0:
        description = description[: record.max_snippet]
    return {
        "url": record.url,
        "requested_url": requested_url,
        "title": record.title,
        "description": description,
        "snippet": snippet,
        "passages": [{"passage": p.passage, "text": p.text, "anchor": p.anchor} for p in shown],
        "content_type": record.content_type,
        "status": record.status,
        "language": record.language,
        "fetched_at": record.fetched_at.isoformat(),
        "from_index": from_index,
        "truncated": truncated,
    }
