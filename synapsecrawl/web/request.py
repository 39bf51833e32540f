"""``scrapy crawl web`` arguments: seeds, the allow-list of sites, and whether the profile crawls the web at all.

``-a url=URL`` or ``-a seeds=PATH`` (one URL a line; ``urls_file``, as a re-read passes it, is the same) give
the seeds; ``-a sites=PATH`` an
allow-list read like the removal list (a domain covers its subdomains; a URL prefix covers what starts with
it); ``kb``, ``depth`` and ``max_pages`` as every crawl. The profile's ``[web] crawl`` decides: "refused"
stops the crawl before any request with the profile's one-line ``refusal`` (SYN-MODES, SER-NOCRAWL);
"allow-list" needs ``-a sites`` (YottaBot crawls a reviewed list). Errors are ``ConfigError`` or
``ArgumentError``, one line each.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from synapsecrawl.crawl.request import CrawlRequest
from synapsecrawl.errors import ArgumentError, ConfigError
from synapsecrawl.kb.removals import RemovalList
from synapsecrawl.profiles import Profile, load_profile

__all__ = ["WebRequest", "refuse_web"]


def _renamed(exc: ConfigError) -> str:
    return (
        str(exc).replace("-a url=URL or -a urls_file=PATH", "-a url=URL or -a seeds=PATH").replace("urls_file", "seeds")
    )


def refuse_web(profile_name: str) -> None:
    """ConfigError with the profile's one-line refusal when ``profile_name`` does not crawl the web; checked
    before any other setting, so the refusal is the reason given (not, say, a missing signing key). A name
    that is no profile is left to the settings' own check."""
    try:
        profile = load_profile(profile_name)
    except ConfigError:
        return
    if profile.web.crawl == "refused":
        raise ConfigError(f"scrapy crawl web: {profile.web.refusal}")


@dataclass(frozen=True)
class WebRequest:
    """The seeds and limits of a web crawl (``crawl``) and the sites it may reach (None: any)."""

    crawl: CrawlRequest
    sites: RemovalList | None

    @classmethod
    def from_args(
        cls,
        profile: Profile,
        *,
        url: str | None = None,
        seeds: str | None = None,
        sites: str | None = None,
        **rest: str,
    ) -> WebRequest:
        """Check the profile may crawl the web, then the arguments; raises ConfigError or ArgumentError."""
        web = profile.web
        if web.crawl == "refused":
            raise ConfigError(f"scrapy crawl web: {web.refusal}")
        if web.crawl == "allow-list" and not sites:
            who = profile.name
            raise ConfigError(f"scrapy crawl web: {who} crawls only a reviewed list of sites: give -a sites=PATH")
        urls_file = rest.pop("urls_file", None)  # what `synapsecrawl recrawl` passes for a source of many seeds
        if seeds and urls_file:
            raise ConfigError("give one of -a seeds=PATH or -a urls_file=PATH")
        try:
            crawl = CrawlRequest.from_args(url=url, urls_file=seeds or urls_file, **rest)
        except ArgumentError as exc:
            raise ArgumentError(_renamed(exc)) from None
        except ConfigError as exc:
            raise ConfigError(_renamed(exc)) from None
        allowed = None
        if sites:
            try:
                text = Path(sites).read_text("utf-8", errors="replace")
            except OSError as exc:
                raise ConfigError(f"sites {sites}: {exc.strerror or exc}") from None
            allowed = RemovalList.parse(text)
            if not allowed:
                raise ConfigError(f"sites {sites} names no domain or URL prefix")
        return cls(crawl, allowed)
