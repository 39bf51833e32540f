"""URL identity: canonical form, origin, and what a "site" is for a profile.

A site is a host (SynapseBot, SnagaBot, SereneReader, YottaBot) or a
registrable domain with all its hostnames (OmniscienteBot, OMN-SITE), the
latter from the Public Suffix List as shipped by ``publicsuffixlist``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList
from w3lib.url import canonicalize_url

__all__ = ["canonical", "host_of", "origin_of", "registrable_domain", "site_of"]

_PSL = PublicSuffixList()


def canonical(url: str) -> str:
    """w3lib's canonical form without the fragment: one page, one key."""
    return canonicalize_url(url, keep_fragments=False)


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


@lru_cache(maxsize=65536)
def registrable_domain(host: str) -> str:
    """example.co.uk for www.a.example.co.uk; the host itself for IPs and bare suffixes."""
    if not host or host.replace(".", "").isdigit() or ":" in host:
        return host
    return _PSL.privatesuffix(host) or host


def site_of(url: str, kind: Literal["host", "registrable_domain"]) -> str:
    """The key that per-site limits are counted under."""
    host = host_of(url)
    return registrable_domain(host) if kind == "registrable_domain" else host
