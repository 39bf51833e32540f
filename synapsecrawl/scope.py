"""Which links a site crawl follows: same host, under the start address's path.

SYN-SCOPE: the start path is the path up to and including its last ``/``, so
``https://h/docs/intro.html`` scopes the crawl to ``https://h/docs/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from synapsecrawl.urls import host_of

__all__ = ["SiteScope"]


@dataclass(frozen=True)
class SiteScope:
    """The host and path prefix a site crawl keeps to."""

    scheme: str
    host: str
    port: int | None
    prefix: str

    @classmethod
    def from_start(cls, url: str) -> SiteScope:
        """The scope of a crawl starting at ``url``."""
        parts = urlsplit(url)
        path = parts.path or "/"
        return cls(parts.scheme, host_of(url), parts.port, path[: path.rfind("/") + 1])

    def contains(self, url: str) -> bool:
        """Whether ``url`` is on the start host (same scheme and port) under the prefix."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return False
        return (
            parts.scheme == self.scheme
            and host_of(url) == self.host
            and port == self.port
            and (parts.path or "/").startswith(self.prefix)
        )
