"""URL identity: canonical form, origin, and what a "site" is for a profile.

A site is a host (SynapseBot, SnagaBot, SereneReader, YottaBot) or a
registrable domain with all its hostnames (OmniscienteBot, OMN-SITE), the
latter from the Public Suffix List as shipped by ``publicsuffixlist``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList
from w3lib.url import canonicalize_url, safe_url_string

__all__ = ["canonical", "host_of", "is_usable", "origin_of", "registrable_domain", "site_of", "url_problem"]


# A site's navigation links recur on every one of its pages: each distinct URL is worked out once
# (pure functions of the string; 16,384 entries are a few MB at most).
_SEEN_URLS = 16_384


# A URL w3lib's canonical form leaves as it is: http(s), a host of lower-case ASCII labels, a port without a leading
# zero up to 65535, a path of unreserved characters and no dot segment, no query, params or fragment. The links of
# most pages are so (a page's links come resolved and made safe), and canonicalize_url is pure Python, run for
# each link the crawler's loop stores or follows; tests/core/test_bad_urls.py holds the two forms equal.
_ALREADY_CANONICAL = re.compile(
    r"https?://[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::(?P<port>[1-9][0-9]{0,4}))?(?:/(?!\.\.?(?:/|\Z))[A-Za-z0-9._~-]*)+",
    re.ASCII,
)


_PORTS = 65_535


@lru_cache(maxsize=_SEEN_URLS)
def canonical(url: str) -> str:
    """w3lib's canonical form without the fragment: one page, one key."""
    if (already := _ALREADY_CANONICAL.fullmatch(url)) and int(already["port"] or 0) <= _PORTS:
        return url
    return canonicalize_url(url, keep_fragments=False)


@lru_cache(maxsize=_SEEN_URLS)
def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be requested, in a few words; None when it can.

    Usable: an absolute http(s) URL with a host and a port in 1-65535 that
    w3lib can make safe and canonical, as every Request and KB key needs.
    Called wherever a URL from outside (a page, sitemap, feed, robots.txt,
    redirect or spider argument) becomes a request, so one bad URL is skipped
    and never takes its document down with it.
    """
    try:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https"):
            return f"not an http(s) URL ({parts.scheme or 'no'} scheme)"
        if not parts.hostname:
            return "no host"
        port = parts.port
        if port == 0:
            return "port 0"
        if any(ch.isspace() for ch in parts.netloc):
            return "white space in the host"
        if not url.isascii():  # only then can w3lib's encoding fail where urlsplit did not (a hypothesis property)
            canonicalize_url(safe_url_string(url))
    except ValueError as exc:  # "Port out of range 0-65535", "Invalid IPv6 URL", "'zz' does not appear to be ..."
        return str(exc).lower().splitlines()[0][:100] if str(exc) else "unreadable"
    return None


def is_usable(url: str) -> bool:
    """Whether ``url`` can be requested (``url_problem`` finds nothing wrong)."""
    return url_problem(url) is None


def host_of(url: str) -> str:
    """The lowercased host name of ``url`` ('' when there is none)."""
    try:
        return (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return ""


def origin_of(url: str) -> str:
    """scheme://host[:port], ports kept only when not the scheme's default.

    robots.txt applies per scheme, host and port (RFC 9309 §2.3).
    """
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    default = {"http": 80, "https": 443}.get(parts.scheme)
    if port is not None and port != default:
        host = f"{host}:{port}"
    return f"{parts.scheme}://{host}"


@lru_cache(maxsize=1)
def _public_suffixes() -> PublicSuffixList:
    """The Public Suffix List, read on first use: building it takes a noticeable part of a start, which a profile
    whose site is the host (all but OmniscienteBot) never needs to pay at start."""
    return PublicSuffixList()


@lru_cache(maxsize=65536)
def registrable_domain(host: str) -> str:
    """example.co.uk for www.a.example.co.uk; the host itself for IPs and bare suffixes."""
    if not host or host.replace(".", "").isdigit() or ":" in host:
        return host
    return _public_suffixes().privatesuffix(host) or host


def site_of(url: str, kind: Literal["host", "registrable_domain"]) -> str:
    """The key that per-site limits are counted under."""
    host = host_of(url)
    return registrable_domain(host) if kind == "registrable_domain" else host
