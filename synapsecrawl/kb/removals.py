"""What leaves a knowledge base without a page being asked: an operator's list, and robots.txt.

``read_removal_list`` reads the removal list (REMOVAL_LIST; YOT-REMOVAL, SNA-NEVER) into a ``RemovalList``: a domain
or a URL prefix a line, ``#`` comments, bad lines counted in ``invalid``, never raising. ``disallowed_pages`` picks
the stored pages a robots.txt now disallows (YOT-ROBOTS, SYN-REMOVE); ``stale`` says when an unreadable robots.txt's
pages go (the profile's ``[robots] stale_after``, YOT-STALE). Times are unix seconds, passed in;
``middlewares.removals`` deletes. The rules: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from synapsecrawl.errors import ConfigError
from synapsecrawl.kb.records import RobotsCopy
from synapsecrawl.rules.robots import RobotsRules
from synapsecrawl.urls import origin_of

__all__ = [
    "RemovalList",
    "disallowed_pages",
    "disallowed_urls",
    "listed_prefixes",
    "read_removal_list",
    "stale",
    "unreadable_since",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


def _host(name: str) -> str | None:
    name = name.strip().rstrip(".").lower().removeprefix("*.").lstrip(".")
    try:
        host = name.encode("idna").decode("ascii")
    except UnicodeError:
        return None
    return host if _HOST.fullmatch(host) else None


def _key(url: str) -> str | None:
    """host[:port]/path?query: a URL without its scheme, default ports dropped."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").rstrip(".").lower()
    if parts.scheme.lower() not in _DEFAULT_PORTS or not host:
        return None
    if port is not None and port != _DEFAULT_PORTS[parts.scheme.lower()]:
        host = f"{host}:{port}"
    return host + (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


@dataclass(frozen=True)
class RemovalList:
    """Domains and URL prefixes whose pages are deleted and never fetched."""

    domains: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    invalid: int = 0  # lines that were neither a domain nor an http(s) URL

    @classmethod
    def parse(cls, text: str) -> RemovalList:
        """Read the list's text (never raises)."""
        domains: set[str] = set()
        prefixes: list[str] = []
        invalid = 0
        for raw in text.splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if "://" in line:
                key = _key(line)
            else:
                key = _host(line)
                if key is not None:
                    domains.add(key)
                    continue
            if key is None:
                invalid += 1
            else:
                prefixes.append(key)
        return cls(frozenset(domains), tuple(dict.fromkeys(prefixes)), invalid)

    def __bool__(self) -> bool:
        return bool(self.domains or self.prefixes)

    def matches(self, url: str) -> bool:
        """Whether ``url`` is on the list."""
        key = _key(url)
        if key is None:
            return False
        host = urlsplit(url.strip()).hostname or ""
        host = host.rstrip(".").lower()
        labels = host.split(".")
        if any(".".join(labels[i:]) in self.domains for i in range(len(labels))):
            return True
        return any(key.startswith(prefix) for prefix in self.prefixes)


def read_removal_list(path: str | Path) -> RemovalList:
    """The removal list in the file at ``path``; ConfigError when it cannot be read."""
    try:
        text = Path(path).read_text("utf-8", errors="replace")
    except OSError as exc:
        raise ConfigError(f"REMOVAL_LIST {path}: {exc.strerror or exc}") from None
    return RemovalList.parse(text)


def disallowed_urls(rules: RobotsRules, urls: Iterable[str]) -> list[str]:
    """The ``urls`` that ``rules`` disallow, in the order given."""
    return [url for url in urls if not rules.allows(url)]


def disallowed_pages(stored: Iterable[tuple[str, str]], origin: str, rules: RobotsRules) -> list[tuple[str, str]]:
    """The (kb, url) of ``stored`` that belong to ``origin`` and that its robots.txt ``rules`` disallow."""
    mine = [(kb, url) for kb, url in stored if origin_of(url) == origin]
    doomed = set(disallowed_urls(rules, [url for _, url in mine]))
    return [(kb, url) for kb, url in mine if url in doomed]


def listed_prefixes(removals: RemovalList) -> tuple[str, ...] | None:
    """URL prefixes that hold every stored page ``removals`` names (http and https of each listed prefix);
    None when it lists a domain, whose subdomains no prefix holds."""
    if removals.domains:
        return None
    return tuple(f"{scheme}://{key}" for key in removals.prefixes for scheme in ("http", "https"))


def unreadable_since(previous: RobotsCopy | None, *, unreadable: bool, now: float) -> float:
    """The ``unreadable_since`` to store with a robots.txt read at ``now`` (YOT-STALE).

    0.0 when it was read. Unreadable: the last time it was read (the previous copy's date, when that
    copy was a read), else the date the previous copy already carried; a previous failure stored
    without one counts from its own date, and no previous copy at all from ``now``.
    """
    if not unreadable:
        return 0.0
    if previous is None:
        return now
    if previous.unreadable_since > 0.0:
        return min(previous.unreadable_since, now)
    return min(previous.fetched_at, now)


def stale(since: float, *, now: float, bound: float, next_look: float) -> bool:
    """Whether a site unreadable since ``since`` must lose its pages at ``now``: at most ``bound``
    seconds after ``since``, and the next read of its robots.txt comes ``next_look`` seconds later.
    Never when ``bound`` is 0 (the profile keeps them) or the site is readable (``since`` 0)."""
    if bound <= 0.0 or since <= 0.0:
        return False
    return now + max(next_look, 0.0) >= since + bound
