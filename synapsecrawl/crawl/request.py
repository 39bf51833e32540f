"""What a KB user asked a crawl to do, from spider arguments (``-a``).

A start URL that cannot be requested (``synapsecrawl.urls.url_problem``) is an
``ArgumentError``: ``-a url=`` stops the crawl. A urls_file line that cannot be
requested is skipped and named in ``skipped`` (one line each for the operator),
so one typo does not cost the other lines; a file with no usable line stops it.
``WorkerRequest`` is a shared crawl's worker's arguments (``-a crawl``, ``-a stay``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from synapsecrawl.errors import ArgumentError, ConfigError
from synapsecrawl.numbers import read_flag
from synapsecrawl.shared.entries import check_crawl_name
from synapsecrawl.urls import url_problem

__all__ = ["CrawlRequest", "WorkerRequest", "taking_turns"]

_KB_NAME = re.compile(r"^[\w.-]{1,100}$")


def taking_turns(urls: Iterable[str], site: Callable[[str], str]) -> Iterator[str]:
    """``urls`` with the sites taking turns: each site's first URL, then each one's second, ...; each site's own
    in the order given.

    Scrapy's engine takes one start request a turn of its loop, so a list written site by site showed the last
    site its first request only after every other site's pages had been taken in. Pacing is per site, so no site
    sees its own requests sooner or in another order.
    """
    queues: dict[str, deque[str]] = {}
    for url in urls:
        queues.setdefault(site(url), deque()).append(url)
    while queues:
        for key in list(queues):
            queue = queues[key]
            yield queue.popleft()
            if not queue:
                del queues[key]


def _check_url(url: str, argument: str) -> str:
    url = url.strip()
    problem = url_problem(url)
    if problem is None:
        return url
    if problem.startswith("not an http(s) URL") or problem == "no host":
        raise ArgumentError(f"{argument} {url!r} is not an http(s) URL")
    raise ArgumentError(f"{argument} {url!r} is not a usable URL: {problem}")


@dataclass(frozen=True)
class CrawlRequest:
    """Start URLs, knowledge base and the limits a KB user typed (strings, as given)."""

    urls: tuple[str, ...]
    kb: str
    depth: str | None = None
    max_pages: str | None = None
    skipped: tuple[str, ...] = ()  # urls_file lines left out, one message each

    @classmethod
    def from_args(
        cls,
        *,
        url: str | None = None,
        urls_file: str | None = None,
        kb: str | None = None,
        depth: str | None = None,
        max_pages: str | None = None,
        **unknown: object,
    ) -> CrawlRequest:
        """Validate ``-a`` arguments; raises ConfigError with a one-line message."""
        unknown.pop("_job", None)  # Scrapyd passes its job id as a spider argument
        if unknown:
            raise ConfigError(f"unknown spider argument(s): {', '.join(sorted(unknown))}")
        if bool(url) == bool(urls_file):
            raise ConfigError("give exactly one of -a url=URL or -a urls_file=PATH")
        skipped: list[str] = []
        if url:
            urls = [_check_url(url, "url")]
        else:
            path = Path(str(urls_file))
            try:
                lines = path.read_text("utf-8", errors="replace").splitlines()
            except OSError as exc:
                raise ConfigError(f"urls_file {path}: {exc.strerror or exc}") from None
            urls = []
            for number, line in enumerate(lines, 1):
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                try:
                    urls.append(_check_url(line, f"urls_file {path} line {number}:"))
                except ArgumentError as exc:
                    skipped.append(f"{exc}: skipped")
            if not urls:
                if skipped:
                    raise ArgumentError(
                        f"urls_file {path} holds no usable URL ({len(skipped)} lines, "
                        f"the first: {skipped[0].removesuffix(': skipped')})"
                    )
                raise ConfigError(f"urls_file {path} holds no URL")
        name = kb or "default"
        if not _KB_NAME.match(name):
            raise ConfigError(f"kb {name!r} may hold only letters, digits, '.', '_' and '-'")
        return cls(tuple(dict.fromkeys(urls)), name, depth, max_pages, tuple(skipped))


@dataclass(frozen=True)
class WorkerRequest:
    """``scrapy crawl worker``'s arguments: the shared crawl it joins, and whether it stays for new work once
    the crawl is drained (a worker under Scrapyd). Checked once, the same way by the ``crawl`` command
    before Scrapy starts and by the worker spider (a run without the command, a test's ``get_crawler``)."""

    crawl: str
    stay: bool = False

    @classmethod
    def from_args(cls, *, crawl: object = None, stay: object = None, **unknown: object) -> WorkerRequest:
        """Validate ``-a`` arguments; raises ConfigError with a one-line message."""
        unknown.pop("_job", None)  # Scrapyd passes its job id as a spider argument
        if unknown:
            raise ConfigError(f"unknown spider argument(s): {', '.join(sorted(unknown))} (worker takes crawl, stay)")
        if not crawl:
            raise ConfigError("the worker joins a shared crawl: give -a crawl=NAME")
        return cls(crawl=check_crawl_name(str(crawl)), stay=read_flag("stay", stay, words=True))
