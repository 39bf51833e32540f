"""Which URLs a crawl may reach: by a link, a sitemap entry or a redirect.

SYN-SCOPE: a site crawl keeps to its start host, under the start path (the
path up to and including its last ``/``, so ``https://h/docs/intro.html``
scopes the crawl to ``https://h/docs/``); a sitemap's pages keep to the
sitemap's host. A scope holds one origin; an ``http`` start also admits the
same host over ``https`` on the default ports, the upgrade sites redirect to.

Redirects (``redirect_refusal``) obey the crawl's scope first, then the
profile's rule, judged against the URL that began the redirect chain:
``host`` stays on its host, ``site`` on its registrable domain (the web's
"same site", YOT-REDIRECT), ``any`` anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from synapsecrawl.urls import host_of, registrable_domain

__all__ = ["RedirectRule", "SiteScope", "in_any", "redirect_refusal"]

RedirectRule = Literal["host", "site", "any"]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _scheme_port(url: str) -> tuple[str, int | None] | None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # "http://[::1", "http://h:99999"
        return None
    return parts.scheme.lower(), port or _DEFAULT_PORTS.get(parts.scheme.lower())


def _path(url: str) -> str:
    try:
        return urlsplit(url).path or "/"
    except ValueError:
        return "/"


@dataclass(frozen=True)
class SiteScope:
    """The host and path prefix a crawl keeps to."""

    scheme: str
    host: str
    port: int | None  # the effective port: the scheme's default when none is written
    prefix: str

    @classmethod
    def from_start(cls, url: str) -> SiteScope:
        """The scope of a site crawl starting at ``url``: its host, under its path."""
        path = _path(url)
        scheme, port = _scheme_port(url) or ("", None)
        return cls(scheme, host_of(url), port, path[: path.rfind("/") + 1])

    @classmethod
    def whole_host(cls, url: str) -> SiteScope:
        """Every path on ``url``'s host (a sitemap's pages)."""
        scheme, port = _scheme_port(url) or ("", None)
        return cls(scheme, host_of(url), port, "/")

    def contains(self, url: str) -> bool:
        """Whether ``url`` is on the scope's host and origin (or its https upgrade), under the prefix."""
        origin = _scheme_port(url)
        if origin is None or not self.host or host_of(url) != self.host:
            return False
        upgrade = self.scheme == "http" and self.port == 80 and origin == ("https", 443)
        if origin != (self.scheme, self.port) and not upgrade:
            return False
        return _path(url).startswith(self.prefix)


def in_any(scopes: Sequence[SiteScope], url: str) -> bool:
    """Whether any of ``scopes`` contains ``url``."""
    return any(scope.contains(url) for scope in scopes)


def redirect_refusal(
    rule: RedirectRule,
    chain_start: str,
    target: str,
    scopes: Sequence[SiteScope] = (),
) -> str | None:
    """Why a redirect to ``target`` is refused, or None when it may be followed.

    ``chain_start`` is the URL first requested in this chain of redirects;
    ``scopes`` are the crawl's (empty when the mode has none, as page mode).
    """
    if scopes and not in_any(scopes, target):
        return "out of the crawl's scope"
    start_host, target_host = host_of(chain_start), host_of(target)
    if rule == "host" and target_host != start_host:
        return f"off the host {start_host}"
    if rule == "site" and registrable_domain(target_host) != registrable_domain(start_host):
        return f"off the site {registrable_domain(start_host)}"
    return None
