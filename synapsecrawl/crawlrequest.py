"""What a KB user asked a crawl to do, from spider arguments (``-a``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from synapsecrawl.errors import ConfigError

__all__ = ["CrawlRequest"]

_KB_NAME = re.compile(r"^[\w.-]{1,100}$")


def _check_url(url: str, argument: str) -> str:
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{argument} {url!r} is not an http(s) URL")
    return url


@dataclass(frozen=True)
class CrawlRequest:
    """Start URLs, knowledge base and the limits a KB user typed (strings, as given)."""

    urls: tuple[str, ...]
    kb: str
    depth: str | None = None
    max_pages: str | None = None

    @classmethod
    def from_args(cls, *, url: str | None = None, urls_file: str | None = None, kb: str | None = None,
                  depth: str | None = None, max_pages: str | None = None, **unknown: object) -> CrawlRequest:
        """Validate ``-a`` arguments; raises ConfigError with a one-line message."""
        unknown.pop("_job", None)  # Scrapyd passes its job id as a spider argument
        if unknown:
            raise ConfigError(f"unknown spider argument(s): {', '.join(sorted(unknown))}")
        if bool(url) == bool(urls_file):
            raise ConfigError("give exactly one of -a url=URL or -a urls_file=PATH")
        if url:
            urls = [_check_url(url, "url")]
        else:
            path = Path(str(urls_file))
            try:
                lines = path.read_text("utf-8", errors="replace").splitlines()
            except OSError as exc:
                raise ConfigError(f"urls_file {path}: {exc.strerror or exc}") from None
            urls = [_check_url(line, f"urls_file {path}:") for line in lines
                    if line.strip() and not line.lstrip().startswith("#")]
            if not urls:
                raise ConfigError(f"urls_file {path} holds no URL")
        name = kb or "default"
        if not _KB_NAME.match(name):
            raise ConfigError(f"kb {name!r} may hold only letters, digits, '.', '_' and '-'")
        return cls(tuple(dict.fromkeys(urls)), name, depth, max_pages)
